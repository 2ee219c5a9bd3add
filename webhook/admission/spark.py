"""The SparkApplication webhook: suspend queued applications, refuse what Kueue cannot account for.

Mirrors `pkg/controller/jobs/sparkapplication/sparkapplication_webhook.go` (upstream v0.19.2, alpha
behind SparkApplicationIntegration), at the row's paths (/mutate-sparkoperator-k8s-io-v1beta2-
sparkapplication on CREATE, /validate-sparkoperator-k8s-io-v1beta2-sparkapplication). A
Kueue-managed application (a queue name, or `manageJobsWithoutQueueName`) must run in cluster mode
and may not allocate executors dynamically: the Workload counts `spec.executor.instances` once, and
an application that grew later would run outside its quota. (Upstream lets an elastic job through
that check, and `ValidateJobOnCreate` then refuses the elastic annotation for this kind, so both
roads end in a denial.) On update, an application Kueue does not manage is not validated
(`ShouldValidateRayOrSparkJobOnUpdate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission import tas_validation as tas
from webhook.admission.context import Context
from webhook.api import fields as f
from webhook.api import integrations, spark
from webhook.api import objects as o
from webhook.config import Feature

__all__ = ["default", "validate_create", "validate_update", "warnings_create"]

_SPEC = f.Path("spec")
_GVK = integrations.SPARK_APPLICATION.gvk


def default(obj: dict[str, Any], ctx: Context) -> None:
    """`Default`: the LocalQueue and WorkloadPriorityClass defaults, then suspend an application Kueue
    manages (`ApplyDefaultForSuspend`). A SparkApplication has no `managedBy`: nothing for MultiKueue."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    if jf.should_suspend(obj, ctx, namespace) and not spark.is_suspended(obj):
        obj.setdefault("spec", {})["suspend"] = True


def _validate_topology(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateTopologyRequest`: the driver's and the executors' TAS annotations (on `spec.driver`
    and `spec.executor`, which become the pods'), and their slice sizes against the podSets' counts.
    A podSet that cannot be built, with no field error, is denied with Go's error."""
    build: str | None = None
    try:
        pod_sets = spark.pod_sets(obj)
    except ValueError as exc:
        pod_sets, build = [], str(exc)
    errs: list[f.FieldError] = []
    for ps in pod_sets:
        path = _SPEC.child(ps["name"])
        annotations = (ps["template"].get("metadata") or {}).get("annotations") or {}
        errs += tas.validate_pod_set_request(path, annotations)
        errs += tas.validate_slice_size_upper_bound(path, annotations, ps["count"])
    if not errs and build is not None:
        raise jf.FrameworkError(build)
    return errs


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCreate`: a managed application's mode and dynamic allocation, then
    `ValidateJobOnCreate`, then with TopologyAwareScheduling the TAS checks."""
    errs: list[f.FieldError] = []
    if ctx.config.manage_jobs_without_queue_name or jf.queue_name(obj):
        spec = obj.get("spec") or {}
        if spec.get("mode") != spark.DEPLOY_MODE_CLUSTER:
            errs.append(
                f.invalid(
                    _SPEC.child("mode"), spec.get("mode", ""), "only Cluster mode is supported for a kueue managed job"
                )
            )
        if not jf.is_elastic(obj, ctx) and spark.dynamic_allocation_enabled(obj):
            errs.append(
                f.invalid(
                    _SPEC.child("dynamicAllocation", "enabled"),
                    True,
                    "a kueue managed job can use dynamicAllocation only when the ElasticJobsViaWorkloadSlices "
                    "feature gate is on and the job is an elastic job",
                )
            )
    errs += jf.validate_job_create(obj, ctx, gvk=_GVK)
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        errs += _validate_topology(obj)
    return errs


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateUpdate`: nothing for an application Kueue neither manages nor managed; else
    `ValidateJobOnUpdate`, then the create checks on the new object."""
    if not jf.should_validate_ray_or_spark_update(old, new, ctx):
        return []
    errs = jf.validate_job_update(
        old,
        new,
        ctx,
        old_suspended=spark.is_suspended(old),
        new_suspended=spark.is_suspended(new),
        gvk=_GVK,
    )
    return errs + validate_create(new, ctx)


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue the application names: missing, not selecting its namespace, or too small for it ever."""
    try:
        sets = spark.pod_sets(obj)
    except ValueError:
        return []  # validation denies it
    demand = [queue_warnings.pod_set_demand(ps["count"], ps["template"].get("spec") or {}) for ps in sets]
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings(
        integrations.SPARK_APPLICATION.kind, namespace, jf.queue_name(obj), demand, ctx
    )
