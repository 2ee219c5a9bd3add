"""Kubeflow Trainer TrainJob webhook: suspend queued TrainJobs and give each the runtime patch Kueue
starts it through; validate Kueue's labels and annotations.

Mirrors `pkg/controller/jobs/trainjob/trainjob_webhook.go` (upstream v0.19.2; paths
/mutate-trainer-kubeflow-org-v1alpha1-trainjob, CREATE only, and
/validate-trainer-kubeflow-org-v1alpha1-trainjob) on top of the shared checks in `jobframework`.
Not reproduced: the MultiKueue `managedBy` defaulting (MultiKueue is not implemented) and, as in
the Job webhook, the topology-request checks of TopologyAwareScheduling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission.context import Context
from webhook.api import fields as f
from webhook.api import integrations
from webhook.api import objects as o
from webhook.api.trainjob import KUEUE_RUNTIME_PATCH_MANAGER

__all__ = ["GVK", "default", "validate_create", "validate_update"]

GVK = integrations.TRAINJOB.gvk


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Default LocalQueue and WorkloadPriorityClass, suspend a TrainJob Kueue manages, and add
    Kueue's (empty) runtime patch to every TrainJob, as upstream's `Default` does."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    spec = obj.setdefault("spec", {})
    if jf.should_suspend(obj, ctx, namespace):
        spec["suspend"] = True
    patch = {"manager": KUEUE_RUNTIME_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}
    spec["runtimePatches"] = [*(spec.get("runtimePatches") or ()), patch]


def _suspended(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("spec") or {}).get("suspend"))


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateJobOnCreate`."""
    return jf.validate_job_create(obj, ctx, gvk=GVK)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateJobOnUpdate`, then the create checks on the new object (upstream's order)."""
    return [
        *jf.validate_job_update(old, new, ctx, old_suspended=_suspended(old), new_suspended=_suspended(new), gvk=GVK),
        *validate_create(new, ctx),
    ]
