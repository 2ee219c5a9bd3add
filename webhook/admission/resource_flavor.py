"""ResourceFlavor webhook: add the resource-in-use finalizer, validate node labels, taints, tolerations.

Mirrors `pkg/webhooks/resourceflavor_webhook.go` (kubernetes-sigs/kueue at ff69552e79), served at
/mutate-kueue-x-k8s-io-v1beta2-resourceflavor and /validate-kueue-x-k8s-io-v1beta2-resourceflavor.
Taint and toleration checks are upstream's extracts of `pkg/apis/core/validation`; the remaining
rules (taint effects, toleration operators, topologyName) are CEL in the CRD.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.admission.context import Context
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import objects as o

__all__ = ["default", "validate_create", "validate_tolerations", "validate_update"]

SPEC = f.Path("spec")
TAINT_FIELDS = (
    f.GoField("key", omitempty=False, zero=""),
    f.GoField("value"),
    f.GoField("effect", omitempty=False, zero=""),
    f.GoField("timeAdded"),
)


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Add the `kueue.x-k8s.io/resource-in-use` finalizer (`ResourceFlavorWebhook.Default`)."""
    o.add_finalizer(obj, c.RESOURCE_IN_USE_FINALIZER)


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateResourceFlavor`: node labels, node taints, tolerations."""
    spec = obj.get("spec") or {}
    errs = f.validate_labels(spec.get("nodeLabels"), SPEC.child("nodeLabels"))
    errs += _validate_node_taints(spec.get("nodeTaints") or [], SPEC.child("nodeTaints"))
    errs += validate_tolerations(spec.get("tolerations") or [], SPEC.child("tolerations"))
    return errs


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """Upstream ignores the old object (topologyName immutability is CEL)."""
    return validate_create(new, ctx)


def _validate_node_taints(taints: Sequence[Mapping[str, Any]], path: f.Path) -> list[f.FieldError]:
    """Key and value syntax, and at most one taint per (key, effect)."""
    errs: list[f.FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        taint_path = path.index(i)
        key = taint.get("key", "")
        value = taint.get("value", "")
        errs += f.validate_label_name(key, taint_path.child("key"))
        if msgs := f.is_label_value(value):
            errs.append(f.invalid(taint_path.child("value"), value, ";".join(msgs)))
        pair = (taint.get("effect", ""), key)
        if pair in seen:
            errs.append(
                f.duplicate(taint_path, f.go_json(taint, TAINT_FIELDS), "taints must be unique by key and effect pair")
            )
            continue
        seen.add(pair)
    return errs


def validate_tolerations(tolerations: Sequence[Mapping[str, Any]], path: f.Path) -> list[f.FieldError]:
    """`validateTolerations`: a non-empty key must be a label key (the Workload webhook reuses it)."""
    errs: list[f.FieldError] = []
    for i, toleration in enumerate(tolerations):
        if key := toleration.get("key", ""):
            errs += f.validate_label_name(key, path.index(i).child("key"))
    return errs
