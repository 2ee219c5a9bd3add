"""Cohort webhook: validate fair sharing and resource groups (no defaulting).

Mirrors `pkg/webhooks/cohort_webhook.go` (kubernetes-sigs/kueue at ff69552e79), served at
/validate-kueue-x-k8s-io-v1beta2-cohort. The resource-group rules are ClusterQueue's
(`cluster_queue.validate_resource_groups`), except that limits need a `parentName` and a
lendingLimit may exceed the nominalQuota. Create and update run the same checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import cluster_queue
from webhook.admission.context import Context
from webhook.api import fields as f

__all__ = ["validate_create", "validate_update"]

SPEC = f.Path("spec")


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCohort`: fair sharing first, then resource groups."""
    spec = obj.get("spec") or {}
    errs = cluster_queue.validate_fair_sharing(spec.get("fairSharing"), SPEC.child("fairSharing"))
    errs += cluster_queue.validate_resource_groups(
        list(spec.get("resourceGroups") or []),
        SPEC.child("resourceGroups"),
        has_parent=bool(spec.get("parentName")),
        parent_word="parent",
        enforce_lending_le_nominal=False,
    )
    return errs


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """Upstream ignores the old object: the new one is validated as on create."""
    return validate_create(new, ctx)
