"""Kubeflow Trainer TrainJob webhook: suspend queued TrainJobs and give each the runtime patch Kueue
starts it through; validate Kueue's labels and annotations.

Mirrors `pkg/controller/jobs/trainjob/trainjob_webhook.go` (upstream v0.19.2; paths
/mutate-trainer-kubeflow-org-v1alpha1-trainjob, CREATE only, and
/validate-trainer-kubeflow-org-v1alpha1-trainjob) on top of the shared checks in `jobframework`.
With TopologyAwareScheduling, create and update also check the TAS annotations of the pod
templates of the JobSet the TrainJob's runtime makes (`validateTopologyRequest`): the webhook
reads the (Cluster)TrainingRuntime from the API for that (upstream reads its informer cache), so
a TrainJob whose runtime cannot be read is denied, as upstream, with `runtime '<name>' not found`.
Not reproduced: the MultiKueue `managedBy` defaulting (MultiKueue is not implemented).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import tas_validation as tas
from webhook.admission.context import Context, LookupError_
from webhook.api import fields as f
from webhook.api import integrations, jobset_template
from webhook.api import objects as o
from webhook.api import trainjob as tj
from webhook.config import Feature

__all__ = ["GVK", "default", "validate_create", "validate_update"]

GVK = integrations.TRAINJOB.gvk
_ADJUST = (
    '. Adjust either the "TrainJob.spec.runtimePatches" or the "TrainingRuntime.Template" annotations for the '
    "corresponding Job"
)


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Default LocalQueue and WorkloadPriorityClass, MultiKueue's managedBy, suspend a TrainJob Kueue manages, and add
    Kueue's (empty) runtime patch to every TrainJob, as upstream's `Default` does."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    jf.apply_default_for_managed_by(obj, ctx, namespace, defaultable=(None, "trainer.kubeflow.org/trainjob-controller"))
    spec = obj.setdefault("spec", {})
    if jf.should_suspend(obj, ctx, namespace):
        spec["suspend"] = True
    patch = {"manager": tj.KUEUE_RUNTIME_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}
    spec["runtimePatches"] = [*(spec.get("runtimePatches") or ()), patch]


def _suspended(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("spec") or {}).get("suspend"))


def _pod_sets(obj: Mapping[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """The package's `podSets` (no dry-run defaulting): one per replicated Job of the JobSet the
    runtime makes, names lower-cased (`NewPodSetReference`). Raises `FrameworkError` with Go's
    error when the runtime is not supported or cannot be read, or a podSet's topology request
    cannot be built."""
    try:
        kind, namespace, name = tj.runtime_key(obj)
    except tj.RuntimeError_ as exc:
        raise jf.FrameworkError(str(exc)) from None
    try:
        runtime = ctx.lookups.training_runtime(kind, namespace, name)
    except LookupError_:
        runtime = None
    if runtime is None:  # `getChildJobSet`: any failure to read it is this error
        raise jf.FrameworkError(f"runtime '{name}' not found")
    pod_sets = jobset_template.pod_sets(tj.child_jobset_spec(obj, runtime))
    for ps in pod_sets:
        if (build := tas.build_error((ps["template"].get("metadata") or {}).get("annotations") or {})) is not None:
            raise jf.FrameworkError(build)
        ps["name"] = ps["name"].lower()
    return pod_sets


def _validate_topology(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateTopologyRequest`: each podSet's TAS annotations and slice size against its count,
    at `job[<podSet>]`, every message telling where such annotations come from."""
    errs: list[f.FieldError] = []
    for ps in _pod_sets(obj, ctx):
        path = f.Path("job").key(ps["name"])
        annotations = (ps["template"].get("metadata") or {}).get("annotations") or {}
        errs += tas.validate_pod_set_request(path, annotations)
        errs += tas.validate_slice_size_upper_bound(path, annotations, ps["count"])
    return [dataclasses.replace(e, detail=e.detail + _ADJUST) for e in errs]


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCreate`: `ValidateJobOnCreate`, then with TopologyAwareScheduling the TAS checks
    of the runtime's pod templates (a `FrameworkError` there denies the request alone)."""
    errs = jf.validate_job_create(obj, ctx, gvk=GVK)
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        errs += _validate_topology(obj, ctx)
    return errs


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateJobOnUpdate`, then the create checks on the new object (upstream's order)."""
    return [
        *jf.validate_job_update(old, new, ctx, old_suspended=_suspended(old), new_suspended=_suspended(new), gvk=GVK),
        *validate_create(new, ctx),
    ]
