"""kubeflow.org/v2beta1 MPIJob webhook: suspend queued MPIJobs, validate Kueue's labels and
annotations.

Mirrors `pkg/controller/jobs/mpijob/mpijob_webhook.go` (upstream v0.19.2; paths
/mutate-kubeflow-org-v2beta1-mpijob on CREATE and /validate-kubeflow-org-v2beta1-mpijob): the
training-operator kinds' defaulting (`webhook.admission.kubeflow`) plus, with
TopologyAwareScheduling, the pod-index offset of the workers of a launcher that works too
(`runLauncherAsWorker`); validation is `ValidateJobOnCreate` and, with TopologyAwareScheduling,
the checks of the templates' TAS annotations and of the launcher/worker podSet group
(`tas_validation`), sorted by field; on update `ValidateJobOnUpdate` followed by those create
checks of the new object. Not reproduced: the MultiKueue `managedBy` defaulting (MultiKueue is not
implemented).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import kubeflow, queue_warnings
from webhook.admission import tas_validation as tas
from webhook.admission.context import Context
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import kubeflow as kf
from webhook.api import objects as o
from webhook.config import Feature

__all__ = ["GVK", "default", "validate_create", "validate_update", "warnings_create"]

GVK = kf.MPIJOB.framework.gvk


def _offset_workers(obj: dict[str, Any]) -> None:
    """With a launcher that works too and both replica specs set, the workers' pod indexes follow
    the launcher's (`PodIndexOffsetAnnotation` "1"), unless the launcher is in a podSet group,
    which places the two together."""
    specs = kf.replica_specs(obj, kf.MPIJOB)
    launcher, worker = specs.get("Launcher"), specs.get("Worker")
    if launcher is None or worker is None:
        return
    launcher_meta = (launcher.get("template") or {}).get("metadata") or {}
    if c.PODSET_GROUP_NAME in (launcher_meta.get("annotations") or {}):
        return
    template = worker.setdefault("template", {})
    if template.get("metadata") is None:
        template["metadata"] = {}
    if template["metadata"].get("annotations") is None:
        template["metadata"]["annotations"] = {}
    template["metadata"]["annotations"][c.POD_INDEX_OFFSET_ANNOTATION] = "1"


def default(obj: dict[str, Any], ctx: Context) -> None:
    """`MpiJobWebhook.Default`: the base defaults, then the workers' pod-index offset."""
    kubeflow.default(obj, ctx)
    run_launcher_as_worker = bool((obj.get("spec") or {}).get("runLauncherAsWorker"))
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING) and run_launcher_as_worker:
        _offset_workers(obj)


def _sorted(errs: list[f.FieldError]) -> list[f.FieldError]:
    return sorted(errs, key=lambda e: e.path)


def _meta_path(replica_type: str) -> f.Path:
    return f.Path("spec.mpiReplicaSpecs").key(replica_type).child("template", "metadata")


def _validate_topology(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateTopologyRequest`: once the podSets can be built, each one's TAS annotations and
    slice size against its count, then the launcher/worker podSet group; a podSet that cannot be
    built is denied with Go's error."""
    specs = kf.replica_specs(obj, kf.MPIJOB)
    types = kf.ordered_replica_types(obj, kf.MPIJOB)
    annotations = {t: ((specs[t].get("template") or {}).get("metadata") or {}).get("annotations") or {} for t in types}
    build = next((e for t in types if (e := tas.build_error(annotations[t])) is not None), None)
    if build is not None:
        raise jf.FrameworkError(build)
    pod_sets = kf.pod_sets(obj, kf.MPIJOB)
    errs: list[f.FieldError] = []
    for replica_type, ps in zip(types, pod_sets, strict=True):
        errs += tas.validate_pod_set_request(_meta_path(replica_type), annotations[replica_type])
        errs += tas.validate_slice_size_upper_bound(_meta_path(replica_type), annotations[replica_type], ps["count"])
        ps["topologyRequest"] = tas.grouping_request(annotations[replica_type])
    paths = {t.lower(): _meta_path(t).child("annotations") for t in ("Launcher", "Worker")}
    return errs + tas.validate_grouping(pod_sets, paths)


def _validate_common(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCommon`: `ValidateJobOnCreate`, then with TopologyAwareScheduling the TAS checks."""
    errs = jf.validate_job_create(obj, ctx, gvk=GVK)
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        errs += _validate_topology(obj)
    return errs


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateCreate`: `validateCommon`, sorted by field."""
    return _sorted(_validate_common(obj, ctx))


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateUpdate`: `ValidateJobOnUpdate`, then `validateCommon` of the new object (upstream
    sorts only its own copy of the latter, so neither part is reordered)."""
    return [
        *jf.validate_job_update(
            old,
            new,
            ctx,
            old_suspended=kf.is_suspended(old),
            new_suspended=kf.is_suspended(new),
            gvk=GVK,
        ),
        *_validate_common(new, ctx),
    ]


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue the MPIJob names: missing, not selecting its namespace, or too small for it ever."""
    demand = [
        queue_warnings.pod_set_demand(ps["count"], ps["template"].get("spec") or {})
        for ps in kf.pod_sets(obj, kf.MPIJOB)
    ]
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings("MPIJob", namespace, jf.queue_name(obj), demand, ctx)
