"""ConcurrentAdmission: which Workloads are parents or variants, and what a variant may use.

Mirrors `pkg/workload/concurrentadmission/concurrentadmission.go`, the preemption-gate helpers of
`pkg/workload/workload.go` (`HasClosedPreemptionGate`) and `pkg/util/csv` at upstream v0.19.2.
A parent is the Workload a Job owns in a ClusterQueue with a `concurrentAdmissionPolicy`; the
variant controller creates one variant per flavor of that ClusterQueue, owned by the parent and
restricted to its flavor by an annotation. The scheduler only ever sees the variants.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api import constants
from webhook.api import objects as o

__all__ = [
    "allowed_flavors",
    "has_closed_preemption_gate",
    "is_parent",
    "is_variant",
    "parent_name",
    "parent_uid",
    "parse_csv",
    "variant_flavor",
]


def parse_csv(text: str) -> list[str]:
    """Comma-separated names, each stripped of surrounding spaces (`csv.Parse`)."""
    if not text.strip():
        return []
    return [part.strip() for part in text.split(",")]


def is_parent(obj: Mapping[str, Any]) -> bool:
    """Labelled as the parent of variants (`IsParent`)."""
    return (o.meta(obj).get("labels") or {}).get(constants.CONCURRENT_ADMISSION_PARENT_LABEL) == "true"


def _parent_ref(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    for ref in o.meta(obj).get("ownerReferences") or ():
        if ref.get("kind") == "Workload" and ref.get("apiVersion") == constants.V1BETA2:
            return ref  # type: ignore[no-any-return]
    return {}


def parent_name(obj: Mapping[str, Any]) -> str:
    """Name of the owning Workload, "" when there is none (`GetParentWorkloadName`)."""
    return str(_parent_ref(obj).get("name") or "")


def parent_uid(obj: Mapping[str, Any]) -> str:
    """UID of the owning Workload (`GetParentWorkloadUID`)."""
    return str(_parent_ref(obj).get("uid") or "")


def is_variant(obj: Mapping[str, Any]) -> bool:
    """Owned by a Workload (`IsVariant`)."""
    return parent_name(obj) != ""


def allowed_flavors(obj: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The flavors the annotation allows, None without the annotation (every flavor allowed)."""
    value = (o.meta(obj).get("annotations") or {}).get(constants.ALLOWED_RESOURCE_FLAVORS_ANNOTATION)
    return None if value is None else tuple(parse_csv(str(value)))


def variant_flavor(obj: Mapping[str, Any]) -> str:
    """A variant's flavor: the first allowed one, "" without any (`GetVariantFlavor`)."""
    flavors = allowed_flavors(obj)
    return flavors[0] if flavors else ""


def has_closed_preemption_gate(obj: Mapping[str, Any]) -> bool:
    """Some gate of spec.preemptionGates is Closed in status, or has no state yet: a gate is
    created closed so a Workload can be created gated atomically (`HasClosedPreemptionGate`)."""
    positions = {str(g.get("name")): g.get("position") for g in (obj.get("status") or {}).get("preemptionGates") or ()}
    for gate in (obj.get("spec") or {}).get("preemptionGates") or ():
        position = positions.get(str(gate.get("name")))
        if position is None or position == "Closed":
            return True
    return False
