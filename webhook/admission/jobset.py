"""jobset.x-k8s.io/v1alpha2 JobSet webhook: suspend queued JobSets, validate Kueue's labels and
annotations.

Mirrors `pkg/controller/jobs/jobset/jobset_webhook.go` (upstream v0.19.2; paths
/mutate-jobset-x-k8s-io-v1alpha2-jobset on CREATE and /validate-jobset-x-k8s-io-v1alpha2-jobset)
on top of the shared checks in `jobframework`. Not mirrored: `ApplyDefaultForManagedBy`, which
sets `spec.managedBy` only for a ClusterQueue with a MultiKueue admission check (MultiKueue is not
implemented), and the TopologyAwareScheduling annotation checks (not for batch/v1 Jobs either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission.context import Context
from webhook.api import fields as f
from webhook.api import integrations, jobset_template
from webhook.api import objects as o

__all__ = ["GVK", "default", "validate_create", "validate_update", "warnings_create"]

GVK = integrations.JOBSET.gvk


def _is_suspended(js: Mapping[str, Any]) -> bool:
    """`JobSet.IsSuspended`: `spec.suspend`."""
    return bool((js.get("spec") or {}).get("suspend"))


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Default LocalQueue, default WorkloadPriorityClass, then suspend (`JobSetWebhook.Default`)."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    if jf.should_suspend(obj, ctx, namespace) and not _is_suspended(obj):
        obj.setdefault("spec", {})["suspend"] = True


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateJobOnCreate`: queue name, prebuilt Workload, maximum execution time, elastic
    (refused for JobSets), admission-gated-by."""
    return jf.validate_job_create(obj, ctx, gvk=GVK)


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
