"""The training-operator v1 webhooks (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob): suspend
queued jobs, validate Kueue's labels and annotations.

Upstream has no webhook file for these kinds: each package's `Setup<Kind>Webhook` is
`jobframework.BaseWebhookFactory` (`pkg/controller/jobframework/base_webhook.go`, upstream
v0.19.2) over the shared `KubeflowJob`, so this is the base webhook over `spec.runPolicy.suspend`
for the five kinds, at each row's paths (e.g. /mutate-kubeflow-org-v1-pytorchjob, CREATE, and
/validate-kubeflow-org-v1-pytorchjob); the object's `kind` says which, and with
TopologyAwareScheduling `KubeflowJob.ValidateOnCreate`'s checks of the replica templates
(`tas_validation`). Not reproduced: the MultiKueue `managedBy` defaulting (MultiKueue is not
implemented).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission import tas_validation as tas
from webhook.admission.context import Context
from webhook.api import fields as f
from webhook.api import kubeflow as kf
from webhook.api import objects as o
from webhook.config import Feature

__all__ = ["default", "validate_create", "validate_update", "warnings_create"]


_TRAINING_OPERATOR = "kubeflow.org/training-operator"  # kftraining.KubeflowJobsController
_MPI_OPERATOR = "kubeflow.org/mpi-operator"  # kfmpi.KubeflowJobController


def default(obj: dict[str, Any], ctx: Context) -> None:
    """`BaseWebhook.Default` (the MPIJob webhook's first steps too): default the LocalQueue and
    WorkloadPriorityClass, suspend a job Kueue manages (`ApplyDefaultForSuspend`), then hand it to
    MultiKueue (`ApplyDefaultForManagedBy`, `KubeflowJob`/`MPIJob.CanDefaultManagedBy`)."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    if jf.should_suspend(obj, ctx, namespace) and not kf.is_suspended(obj):
        spec = obj.setdefault("spec", {})
        if spec.get("runPolicy") is None:
            spec["runPolicy"] = {}
        spec["runPolicy"]["suspend"] = True
    own = _MPI_OPERATOR if obj.get("kind") == "MPIJob" else _TRAINING_OPERATOR
    jf.apply_default_for_managed_by(obj, ctx, namespace, defaultable=(None, own), at=("spec", "runPolicy"))


def _validate_topology(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`KubeflowJob.ValidateOnCreate` (and `ValidateOnUpdate`), with TopologyAwareScheduling: each
    replica type's TAS annotations and, when the podSets can be built, its slice size against its
    podSet's count. A podSet that cannot be built with no field error is denied with Go's error."""
    if not ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        return []
    kind = kf.kind_of(obj)
    specs = kf.replica_specs(obj, kind)
    types = kf.ordered_replica_types(obj, kind)
    annotations = [((specs[t].get("template") or {}).get("metadata") or {}).get("annotations") or {} for t in types]
    build = next((e for a in annotations if (e := tas.build_error(a)) is not None), None)
    errs: list[f.FieldError] = []
    for replica_type, ann, ps in zip(types, annotations, kf.pod_sets(obj, kind), strict=True):
        meta_path = f.Path("spec").child(kind.replica_specs_field).key(replica_type).child("template", "metadata")
        errs += tas.validate_pod_set_request(meta_path, ann)
        if build is None:
            errs += tas.validate_slice_size_upper_bound(meta_path, ann, ps["count"])
    if not errs and build is not None:
        raise jf.FrameworkError(build)
    return errs


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`BaseWebhook.ValidateCreate`: `ValidateJobOnCreate` (a JAXJob may not name a prebuilt
    Workload), then the TAS checks of the replica templates."""
    return jf.validate_job_create(obj, ctx, gvk=kf.kind_of(obj).framework.gvk) + _validate_topology(obj, ctx)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`BaseWebhook.ValidateUpdate`: `ValidateJobOnUpdate` (the queue name may change only while
    suspended, and not to empty where a default LocalQueue exists; ...), then the TAS checks of
    the new object's replica templates; not the other create checks."""
    return jf.validate_job_update(
        old,
        new,
        ctx,
        old_suspended=kf.is_suspended(old),
        new_suspended=kf.is_suspended(new),
        gvk=kf.kind_of(new).framework.gvk,
    ) + _validate_topology(new, ctx)


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue the job names: missing, not selecting its namespace, or too small for it ever."""
    kind = kf.kind_of(obj)
    demand = [
        queue_warnings.pod_set_demand(ps["count"], ps["template"].get("spec") or {}) for ps in kf.pod_sets(obj, kind)
    ]
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings(kind.name, namespace, jf.queue_name(obj), demand, ctx)
