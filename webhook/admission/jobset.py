"""jobset.x-k8s.io/v1alpha2 JobSet webhook: suspend queued JobSets, validate Kueue's labels and
annotations.

Mirrors `pkg/controller/jobs/jobset/jobset_webhook.go` (upstream v0.19.2; paths
/mutate-jobset-x-k8s-io-v1alpha2-jobset on CREATE and /validate-jobset-x-k8s-io-v1alpha2-jobset)
on top of the shared checks in `jobframework`; with TopologyAwareScheduling, on create and update,
the checks of each replicated Job's pod-template TAS annotations and of their podSet groups
(`tas_validation`); `ApplyDefaultForManagedBy` hands a JobSet queued to a ClusterQueue with a
MultiKueue admission check to MultiKueue.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission import tas_validation as tas
from webhook.admission.context import Context
from webhook.api import fields as f
from webhook.api import integrations, jobset_template
from webhook.api import objects as o
from webhook.config import Feature

__all__ = ["DEFAULTABLE_MANAGED_BY", "GVK", "default", "validate_create", "validate_update", "warnings_create"]

GVK = integrations.JOBSET.gvk
DEFAULTABLE_MANAGED_BY = (None, "jobset.sigs.k8s.io/jobset-controller")
"""`JobSet.CanDefaultManagedBy`: unset, or the JobSet controller's own name."""
REPLICATED_JOBS_PATH = f.Path("spec.replicatedJobs")


def _is_suspended(js: Mapping[str, Any]) -> bool:
    """`JobSet.IsSuspended`: `spec.suspend`."""
    return bool((js.get("spec") or {}).get("suspend"))


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Default LocalQueue, default WorkloadPriorityClass, suspend, then MultiKueue's managedBy
    (`JobSetWebhook.Default`)."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    if jf.should_suspend(obj, ctx, namespace) and not _is_suspended(obj):
        obj.setdefault("spec", {})["suspend"] = True
    jf.apply_default_for_managed_by(obj, ctx, namespace, defaultable=DEFAULTABLE_MANAGED_BY)


def _template_meta_path(index: int) -> f.Path:
    return REPLICATED_JOBS_PATH.index(index).child("template", "spec", "template", "metadata")


def _validate_topology(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateTopologyRequest`: once every podSet's topology request can be built, each
    replicated Job's TAS annotations and slice size against its podSet's count, then the podSet
    groups; a podSet that cannot be built (the first, in order) is denied with Go's error."""
    spec = obj.get("spec") or {}
    pod_sets = jobset_template.pod_sets(spec)
    annotations = [(ps["template"].get("metadata") or {}).get("annotations") or {} for ps in pod_sets]
    build = next((e for a in annotations if (e := tas.build_error(a)) is not None), None)
    if build is not None:
        raise jf.FrameworkError(build)
    errs: list[f.FieldError] = []
    for i, (ps, ann) in enumerate(zip(pod_sets, annotations, strict=True)):
        errs += tas.validate_pod_set_request(_template_meta_path(i), ann)
        errs += tas.validate_slice_size_upper_bound(_template_meta_path(i), ann, ps["count"])
        ps["name"] = ps["name"].lower()  # `NewPodSetReference`
        ps["topologyRequest"] = tas.grouping_request(ann)
    # `buildPodSetAnnotationsPathByNameMap`: a name repeated keeps its last replicated Job's path.
    paths = {ps["name"]: _template_meta_path(i).child("annotations") for i, ps in enumerate(pod_sets)}
    return errs + tas.validate_grouping(pod_sets, paths)


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCreate`: `ValidateJobOnCreate` (queue name, prebuilt Workload, maximum execution
    time, elastic (refused for JobSets), admission-gated-by), then with TopologyAwareScheduling
    the TAS checks."""
    errs = jf.validate_job_create(obj, ctx, gvk=GVK)
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        errs += _validate_topology(obj)
    return errs


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateJobOnUpdate` (the queue name is immutable while the JobSet runs), then the create
    checks on the new object, in upstream's order."""
    errs = jf.validate_job_update(
        old, new, ctx, old_suspended=_is_suspended(old), new_suspended=_is_suspended(new), gvk=GVK
    )
    return errs + validate_create(new, ctx)


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue the JobSet names: missing, not selecting its namespace, or too small for it ever."""
    demand = [
        queue_warnings.pod_set_demand(ps["count"], ps["template"].get("spec") or {})
        for ps in jobset_template.pod_sets(obj.get("spec") or {})
    ]
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings("JobSet", namespace, jf.queue_name(obj), demand, ctx)
