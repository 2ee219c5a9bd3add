"""The Widget's admission module: what a registry row's `webhook` names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission.context import Context
from webhook.api import fields as f

SEEN_LABEL = "example.com/seen-by-kueue"


def default(obj: dict[str, Any], ctx: Context) -> None:
    obj.setdefault("metadata", {}).setdefault("labels", {})[SEEN_LABEL] = "true"


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    size = (obj.get("spec") or {}).get("size", 0)
    return [f.invalid("spec.size", size, "must be greater than or equal to 0")] if size < 0 else []


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    return validate_create(new, ctx)
