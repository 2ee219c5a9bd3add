"""batch/v1 Job webhook: suspend queued Jobs, validate Kueue's labels and annotations.

Mirrors `pkg/controller/jobs/job/job_webhook.go` (upstream v0.19.2; paths /mutate-batch-v1-job
and /validate-batch-v1-job) on top of the shared checks in `jobframework`; with
TopologyAwareScheduling, on create and update, last, the checks of the pod template's TAS
annotations (`tas_validation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission import tas_validation as tas
from webhook.admission.context import Context
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import integrations, jobs
from webhook.api import objects as o
from webhook.config import Feature

__all__ = [
    "DEFAULTABLE_MANAGED_BY",
    "GVK",
    "default",
    "is_suspended",
    "validate_create",
    "validate_update",
    "warnings_create",
]

GVK = integrations.BATCH_JOB.gvk
MIN_PARALLELISM_PATH = jf.ANNOTATIONS.key(c.JOB_MIN_PARALLELISM)
SYNC_COMPLETIONS_PATH = jf.ANNOTATIONS.key(c.JOB_COMPLETIONS_EQUAL_PARALLELISM)
TEMPLATE_META_PATH = f.Path("spec.template.metadata")


#: `managedBy` values a Job's may be defaulted from (`Job.CanDefaultManagedBy`).
DEFAULTABLE_MANAGED_BY = (None, "kubernetes.io/job-controller")


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Default LocalQueue, default WorkloadPriorityClass, suspend, then MultiKueue's managedBy
    (`JobWebhook.Default`)."""
    namespace = obj.get("metadata", {}).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    spec = obj.setdefault("spec", {})
    if jf.should_suspend(obj, ctx, namespace) and not spec.get("suspend"):
        spec["suspend"] = True
    jf.apply_default_for_managed_by(obj, ctx, namespace, defaultable=DEFAULTABLE_MANAGED_BY)
    if jf.is_elastic(obj, ctx):
        pod_spec = spec.setdefault("template", {}).setdefault("spec", {})
        gates = pod_spec.get("schedulingGates") or []
        if not any(g.get("name") == c.ELASTIC_JOB_GATE for g in gates):
            pod_spec["schedulingGates"] = [*gates, {"name": c.ELASTIC_JOB_GATE}]


def is_suspended(job: Mapping[str, Any]) -> bool:
    """Suspended and not in the middle of being stopped by Kueue."""
    annotations = job.get("metadata", {}).get("annotations") or {}
    return bool(job.get("spec", {}).get("suspend")) and annotations.get(c.STOPPING_ANNOTATION) != "true"


def _validate_partial_admission(job: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    errs: list[f.FieldError] = []
    annotations = o.annotations(job)
    if c.JOB_MIN_PARALLELISM not in annotations:
        return errs
    text = annotations[c.JOB_MIN_PARALLELISM]
    try:
        value = f.go_atoi(text)
    except ValueError as exc:
        errs.append(f.invalid(MIN_PARALLELISM_PATH, text, str(exc)))
    else:
        pods = jobs.pods_count(job)
        if value >= pods or value <= 0:
            errs.append(f.invalid(MIN_PARALLELISM_PATH, value, f"should be between 0 and {pods - 1}"))
    if jf.is_elastic(job, ctx):
        errs.append(f.invalid(MIN_PARALLELISM_PATH, text, "partial admission and elastic job cannot be used together"))
    return errs


def _sync_completions(job: Mapping[str, Any]) -> bool:
    try:
        return f.go_parse_bool(o.annotations(job).get(c.JOB_COMPLETIONS_EQUAL_PARALLELISM, ""))
    except ValueError:
        return False


def _validate_sync_completions(job: Mapping[str, Any]) -> list[f.FieldError]:
    errs: list[f.FieldError] = []
    annotations = o.annotations(job)
    if c.JOB_COMPLETIONS_EQUAL_PARALLELISM not in annotations:
        return errs
    text = annotations[c.JOB_COMPLETIONS_EQUAL_PARALLELISM]
    try:
        enabled = f.go_parse_bool(text)
    except ValueError as exc:
        errs.append(f.invalid(SYNC_COMPLETIONS_PATH, text, str(exc)))
        enabled = False
    if enabled:
        spec = job.get("spec", {})
        if spec.get("completionMode") in (None, "NonIndexed"):
            errs.append(f.invalid(SYNC_COMPLETIONS_PATH, text, "should not be enabled for NonIndexed jobs"))
        if spec.get("parallelism", 1) != spec.get("completions", 1):
            errs.append(
                f.invalid(
                    "spec.completions",
                    spec.get("completions"),
                    f"should be equal to parallelism when {c.JOB_COMPLETIONS_EQUAL_PARALLELISM} annotation is true",
                )
            )
    return errs


def _validate_topology(job: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateTopologyRequest`, with TopologyAwareScheduling: the template's TAS annotations;
    only when they pass, an elastic Job's required or preferred topology (unsupported) and the
    slice size against the podSet's count. (Building the podSet cannot fail once the annotations
    pass: the values it parses were just checked.)"""
    if not ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        return []
    template = (job.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    errs = tas.validate_pod_set_request(TEMPLATE_META_PATH, annotations)
    if errs:
        return errs
    if jf.is_elastic(job, ctx):
        # Upstream's path here is `Child("annotations", key)`, a dotted one, unlike its other TAS paths.
        for key, level in ((c.PODSET_REQUIRED_TOPOLOGY, "required"), (c.PODSET_PREFERRED_TOPOLOGY, "preferred")):
            if key in annotations:
                path = TEMPLATE_META_PATH.child("annotations", key)
                return [f.forbidden(path, f"{level} topology is not supported with elastic jobs")]
    return tas.validate_slice_size_upper_bound(TEMPLATE_META_PATH, annotations, jobs.pods_count(job))


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCreate`: `ValidateJobOnCreate`, partial admission, completions = parallelism,
    then the TAS checks."""
    return [
        *jf.validate_job_create(obj, ctx, gvk=GVK),
        *_validate_partial_admission(obj, ctx),
        *_validate_sync_completions(obj),
        *_validate_topology(obj, ctx),
    ]


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateUpdate`: the create checks of the new Job (partial admission only when its
    annotation changed), `ValidateJobOnUpdate`, the partial-admission and completions updates,
    then the TAS checks of the new Job."""
    errs = jf.validate_job_create(new, ctx, gvk=GVK)
    if o.annotations(new).get(c.JOB_MIN_PARALLELISM) != o.annotations(old).get(c.JOB_MIN_PARALLELISM):
        errs += _validate_partial_admission(new, ctx)
    errs += _validate_sync_completions(new)
    errs += jf.validate_job_update(
        old, new, ctx, old_suspended=is_suspended(old), new_suspended=is_suspended(new), gvk=GVK
    )
    if c.JOB_MIN_PARALLELISM in o.annotations(old):
        old_spec, new_spec = old.get("spec", {}), new.get("spec", {})
        if not old_spec.get("suspend") and old_spec.get("parallelism", 1) != new_spec.get("parallelism", 1):
            errs.append(
                f.forbidden(
                    "spec.parallelism", "cannot change when partial admission is enabled and the job is not suspended"
                )
            )
    if (
        is_suspended(old) == is_suspended(new)
        and not is_suspended(new)
        and _sync_completions(old) != _sync_completions(new)
    ):
        errs.append(f.forbidden(SYNC_COMPLETIONS_PATH, "field is immutable while the job is not suspended"))
    return errs + _validate_topology(new, ctx)


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue the Job names: missing, not selecting its namespace, or too small for it ever."""
    meta = obj.get("metadata", {})
    queue = (meta.get("labels") or {}).get(c.QUEUE_LABEL, "")
    pod_spec = obj.get("spec", {}).get("template", {}).get("spec") or {}
    demand = [queue_warnings.pod_set_demand(jobs.pods_count(obj), pod_spec)]
    return queue_warnings.queue_warnings("Job", meta.get("namespace") or ctx.namespace, queue, demand, ctx)
