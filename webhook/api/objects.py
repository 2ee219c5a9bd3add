"""Raw Kubernetes objects, read in one place: metadata, owners, conditions, Workload predicates.

Every kind reaches us as a decoded JSON dict; these functions read the optional parts with their
defaults so no caller repeats `obj.get("metadata") or {}`. They mirror the small getters of
`k8s.io/apimachinery/pkg/apis/meta/v1` (`GetControllerOf`, `FindStatusCondition`,
`IsStatusConditionTrue`) and `pkg/workload/workload.go` (`IsAdmitted`, `IsFinished`,
`HasQuotaReservation`) in upstream v0.19.2. The one writer, `add_finalizer`, is the webhooks'
`controllerutil.AddFinalizer`.
"""

# No `from __future__ import annotations` here: it would bind the name `annotations` in this
# module, which is the accessor's name. Nothing below needs postponed annotations.
from collections.abc import Mapping
from typing import Any, TypedDict

from webhook.api.constants import WorkloadCondition

__all__ = [
    "Obj",
    "OwnerReference",
    "add_finalizer",
    "annotations",
    "controller_of",
    "finalizers",
    "find_condition",
    "guarded_patch",
    "has_finalizer",
    "has_quota_reservation",
    "is_admitted",
    "is_condition_true",
    "is_deleting",
    "is_finished",
    "key",
    "labels",
    "meta",
    "name",
    "namespace",
    "owner_references",
    "uid",
    "uid_precondition",
]

Obj = Mapping[str, Any]
"""A decoded Kubernetes object (read-only)."""


class OwnerReference(TypedDict, total=False):
    """`metadata.ownerReferences[*]` as the API serves it."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def guarded_patch(obj: Obj, **sections: Any) -> dict[str, Any]:
    """A merge patch of `sections` (e.g. `spec=...`) that applies only to the version of `obj` read:
    its resourceVersion is the precondition, so a write over a newer copy fails with a conflict."""
    return {"metadata": {"resourceVersion": meta(obj).get("resourceVersion")}, **sections}


def labels(obj: Obj) -> Mapping[str, str]:
    return meta(obj).get("labels") or {}


def annotations(obj: Obj) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def name(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def namespace(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "")


def uid(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def uid_precondition(obj: Obj) -> dict[str, Any]:
    """DeleteOptions deleting `obj` only, not a namesake created since (empty when it has no UID)."""
    return {"preconditions": {"uid": uid(obj)}} if uid(obj) else {}


def key(obj: Obj) -> str:
    """`namespace/name`, the key informers and work queues use."""
    return f"{namespace(obj)}/{name(obj)}"


def finalizers(obj: Obj) -> tuple[str, ...]:
    return tuple(meta(obj).get("finalizers") or ())


def has_finalizer(obj: Obj, finalizer: str) -> bool:
    return finalizer in (meta(obj).get("finalizers") or ())


def add_finalizer(obj: dict[str, Any], finalizer: str) -> None:
    """Append `finalizer` unless the object has it already (a defaulting webhook's patch)."""
    metadata = obj.setdefault("metadata", {})
    finalizers = metadata.get("finalizers") or []
    if finalizer not in finalizers:
        metadata["finalizers"] = [*finalizers, finalizer]


def is_deleting(obj: Obj) -> bool:
    """A deletionTimestamp is set: the object waits only for its finalizers."""
    return bool(meta(obj).get("deletionTimestamp"))


def owner_references(obj: Obj) -> tuple[OwnerReference, ...]:
    return tuple(meta(obj).get("ownerReferences") or ())


def controller_of(obj: Obj) -> OwnerReference | None:
    """The owner reference with `controller: true` (`metav1.GetControllerOf`)."""
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def find_condition(obj: Obj, ctype: str) -> Obj | None:
    """`status.conditions[type=ctype]` (`meta.FindStatusCondition`)."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return cond  # type: ignore[no-any-return]
    return None


def is_condition_true(obj: Obj, ctype: str) -> bool:
    cond = find_condition(obj, ctype)
    return cond is not None and cond.get("status") == "True"


def is_admitted(wl: Obj) -> bool:
    return is_condition_true(wl, WorkloadCondition.ADMITTED)


def is_finished(wl: Obj) -> bool:
    return is_condition_true(wl, WorkloadCondition.FINISHED)


def has_quota_reservation(wl: Obj) -> bool:
    return is_condition_true(wl, WorkloadCondition.QUOTA_RESERVED)
