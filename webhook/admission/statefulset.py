"""apps/v1 StatefulSet webhook: mark the template's pods as suspended by the StatefulSet, and keep a
managed StatefulSet's pod group stable (replicas change only to and from zero, the pods' shape not at all).

Mirrors `pkg/controller/jobs/statefulset/statefulset_webhook.go` and `statefulset_controller.go`
(`managedByAnotherFramework`). The worker (`webhook/worker/integrations/statefulset.py`) turns the
pods into one pod group. Paths /mutate-apps-v1-statefulset (CREATE and UPDATE) and /validate-apps-v1-statefulset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission.context import Context, LookupError_
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import objects as o
from webhook.api.statefulset import FRAMEWORK, GVK, managed_by_another_framework, replicas, workload_name_for
from webhook.config import Feature

__all__ = ["FRAMEWORK", "GVK", "default", "validate_create", "validate_update", "warnings_create"]

REPLICAS_PATH = f.Path("spec.replicas")
POD_SPEC_PATH = f.Path("spec.template.spec")


def default(obj: dict[str, Any], ctx: Context) -> None:
    if managed_by_another_framework(obj):
        return
    jf.suspend_pod_template(obj, ctx, FRAMEWORK)


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    if managed_by_another_framework(obj):
        return []
    return jf.validate_serving_create(obj, ctx, gvk=GVK)


def _workload_on_hold_or_gone(old: Mapping[str, Any], ctx: Context) -> bool:
    """Scale-up from zero waits until the Workload of the scale-down is deleted or kept on hold."""
    namespace = o.meta(old).get("namespace") or ctx.namespace
    try:
        short = ctx.config.feature_enabled(Feature.SHORT_WORKLOAD_NAMES)
        wl = ctx.lookups.workload(namespace, workload_name_for(old, short=short))
    except LookupError_ as exc:
        raise jf.FrameworkError(str(exc)) from None
    if wl is None:
        return True
    cond = o.find_condition(wl, c.WorkloadCondition.QUOTA_RESERVED)
    return cond is not None and cond.get("status") == "False" and cond.get("reason") == c.ON_HOLD_REASON


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    if managed_by_another_framework(new):
        return []
    errs = jf.validate_serving_update(old, new, ctx, gvk=GVK)
    namespace = o.meta(new).get("namespace") or ctx.namespace
    if not jf.should_suspend(new, ctx, namespace):
        return errs
    new_spec = ((new.get("spec") or {}).get("template") or {}).get("spec") or {}
    old_spec = ((old.get("spec") or {}).get("template") or {}).get("spec") or {}
    errs += jf.validate_immutable_pod_spec_shape(new_spec, old_spec, POD_SPEC_PATH)
    old_n, new_n = replicas(old), replicas(new)
    # Only scaling to and from zero: the pod group's size is its Workload's (upstream TODO #3279).
    if old_n != 0 and new_n != 0 and old_n != new_n:
        errs.append(f.immutable(REPLICAS_PATH, new_n))
    if old_n == 0 and new_n > 0:
        if (new.get("status") or {}).get("replicas"):
            errs.append(f.forbidden(REPLICAS_PATH, "scaling down is still in progress"))
        elif not _workload_on_hold_or_gone(old, ctx):
            errs.append(f.forbidden(REPLICAS_PATH, "workload from previous scale-down is still being deleted"))
    return errs


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue's warnings for the whole group (one Workload of `replicas` pods)."""
    if managed_by_another_framework(obj):
        return []
    spec = obj.get("spec") or {}
    count = replicas(obj)
    demand = [queue_warnings.pod_set_demand(count, (spec.get("template") or {}).get("spec") or {})] if count else []
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings("StatefulSet", namespace, jf.queue_name(obj), demand, ctx)
