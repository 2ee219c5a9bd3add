"""apps/v1 Deployment webhook: propagate the queue name to the pod template; its pods are then
admitted one by one as serving pods by the pod integration.

Mirrors `pkg/controller/jobs/deployment/deployment_webhook.go`. Paths /mutate-apps-v1-deployment
(CREATE and UPDATE, so a changed queue name reaches the template and rolls the pods) and
/validate-apps-v1-deployment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission.context import Context
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import integrations
from webhook.api import objects as o

__all__ = ["FRAMEWORK", "GVK", "default", "validate_create", "validate_update", "warnings_create"]

GVK = integrations.DEPLOYMENT.gvk
FRAMEWORK = integrations.DEPLOYMENT.name


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Template pods carry the managed label, the queue name and the priority class (`Webhook.Default`)."""
    if not jf.suspend_pod_template(obj, ctx, FRAMEWORK):
        return
    meta = jf.pod_template_meta(obj)
    if meta.get("labels") is None:
        meta["labels"] = {}
    meta["labels"][c.MANAGED_LABEL] = "true"
    queue = jf.queue_name(obj)
    if queue:
        meta["labels"][c.QUEUE_LABEL] = queue
    priority = o.labels(obj).get(c.PRIORITY_CLASS_LABEL, "")
    if priority:
        meta["labels"][c.PRIORITY_CLASS_LABEL] = priority


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    return jf.validate_serving_create(obj, ctx, gvk=GVK)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """The queue name may change only while no replica is ready, and never to empty."""
    return jf.validate_serving_update(old, new, ctx, gvk=GVK)


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue's warnings for the replicas this object asks for (each pod is its own Workload)."""
    spec = obj.get("spec") or {}
    replicas = spec.get("replicas", 1)
    demand = [queue_warnings.pod_set_demand(1, (spec.get("template") or {}).get("spec") or {})] if replicas else []
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings("Deployment", namespace, jf.queue_name(obj), demand, ctx)
