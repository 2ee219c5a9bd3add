"""workload.codeflare.dev/v1beta2 AppWrapper webhook: suspend queued AppWrappers, validate Kueue's
labels and annotations.

Upstream has no webhook file of its own for AppWrappers: `SetupAppWrapperWebhook` in
`pkg/controller/jobs/appwrapper/appwrapper_controller.go` is `jobframework.BaseWebhookFactory`
(`pkg/controller/jobframework/base_webhook.go`, upstream v0.19.2), so this is the base webhook
over `spec.suspend` (paths /mutate-workload-codeflare-dev-v1beta2-appwrapper, CREATE, and
/validate-workload-codeflare-dev-v1beta2-appwrapper). MultiKueue's `managedBy` defaulting is not
done: MultiKueue is not implemented.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission.context import Context
from webhook.api import fields as f
from webhook.api import integrations
from webhook.api import objects as o

__all__ = ["GVK", "default", "is_suspended", "validate_create", "validate_update"]

GVK = integrations.APPWRAPPER.gvk


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Default LocalQueue, default WorkloadPriorityClass, suspend, then MultiKueue's managedBy
    (`BaseWebhook.Default`)."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    spec = obj.setdefault("spec", {})
    if jf.should_suspend(obj, ctx, namespace) and not spec.get("suspend"):
        spec["suspend"] = True
    jf.apply_default_for_managed_by(
        obj, ctx, namespace, defaultable=(None, "workload.codeflare.dev/appwrapper-controller")
    )


def is_suspended(aw: Mapping[str, Any]) -> bool:
    """`AppWrapper.IsSuspended`: `spec.suspend`."""
    return bool((aw.get("spec") or {}).get("suspend"))


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`BaseWebhook.ValidateCreate`: `ValidateJobOnCreate`."""
    return jf.validate_job_create(obj, ctx, gvk=GVK)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`BaseWebhook.ValidateUpdate`: `ValidateJobOnUpdate` (the queue name may change only while
    suspended, and not to empty where a default LocalQueue exists; ...)."""
    return jf.validate_job_update(
        old, new, ctx, old_suspended=is_suspended(old), new_suspended=is_suspended(new), gvk=GVK
    )
