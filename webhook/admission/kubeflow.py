"""The training-operator v1 webhooks (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob): suspend
queued jobs, validate Kueue's labels and annotations.

Upstream has no webhook file for these kinds: each package's `Setup<Kind>Webhook` is
`jobframework.BaseWebhookFactory` (`pkg/controller/jobframework/base_webhook.go`, upstream
v0.19.2) over the shared `KubeflowJob`, so this is the base webhook over `spec.runPolicy.suspend`
for the five kinds, at each row's paths (e.g. /mutate-kubeflow-org-v1-pytorchjob, CREATE, and
/validate-kubeflow-org-v1-pytorchjob); the object's `kind` says which. Not reproduced: the
MultiKueue `managedBy` defaulting (MultiKueue is not implemented) and `KubeflowJob`'s
TopologyAwareScheduling checks of its templates' annotations (`ValidateOnCreate`), as for the
other integrations here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission.context import Context
from webhook.api import fields as f
from webhook.api import kubeflow as kf
from webhook.api import objects as o

__all__ = ["default", "validate_create", "validate_update", "warnings_create"]


def default(obj: dict[str, Any], ctx: Context) -> None:
    """`BaseWebhook.Default` (the MPIJob webhook's first steps too): default the LocalQueue and
    WorkloadPriorityClass, then suspend a job Kueue manages (`ApplyDefaultForSuspend`)."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    if jf.should_suspend(obj, ctx, namespace) and not kf.is_suspended(obj):
        spec = obj.setdefault("spec", {})
        if spec.get("runPolicy") is None:
            spec["runPolicy"] = {}
        spec["runPolicy"]["suspend"] = True


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`BaseWebhook.ValidateCreate`: `ValidateJobOnCreate` (a JAXJob may not name a prebuilt
    Workload)."""
    return jf.validate_job_create(obj, ctx, gvk=kf.kind_of(obj).framework.gvk)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`BaseWebhook.ValidateUpdate`: `ValidateJobOnUpdate` only (the queue name may change only
    while suspended, and not to empty where a default LocalQueue exists; ...)."""
    return jf.validate_job_update(
        old,
        new,
        ctx,
        old_suspended=kf.is_suspended(old),
        new_suspended=kf.is_suspended(new),
        gvk=kf.kind_of(new).framework.gvk,
    )


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue the job names: missing, not selecting its namespace, or too small for it ever."""
    kind = kf.kind_of(obj)
    demand = [
        queue_warnings.pod_set_demand(ps["count"], ps["template"].get("spec") or {}) for ps in kf.pod_sets(obj, kind)
    ]
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings(kind.name, namespace, jf.queue_name(obj), demand, ctx)
