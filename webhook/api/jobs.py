"""Job rules the webhook and the worker share: Workload names, the prebuilt Workload name, the
managed-ancestor walk and its limit, and a batch/v1 Job's pod count.

Both sides must read a Job the same way (a name the webhook lets through is the name the worker
looks up), so these live below both. Mirrors `PrebuiltWorkloadNameFor` and
`FindAncestorJobManagedByKueue` in `pkg/controller/jobframework/{utils.go,reconciler.go}`,
`GetPrebuiltWorkloadPath` in `pkg/controller/jobframework/validation.go` and `PodsCount` in
`pkg/controller/jobs/job/job_controller.go` (upstream v0.19.2).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from webhook.api import constants as c
from webhook.api import objects as o

__all__ = [
    "LABEL_VALUE_MAX_LENGTH",
    "MANAGED_OWNERS_CHAIN_LIMIT",
    "MSG_NESTING_TOO_DEEP",
    "AncestorError",
    "find_managed_ancestor",
    "group_kind",
    "pods_count",
    "prebuilt_workload_in_annotation",
    "prebuilt_workload_name",
    "workload_name",
]

LABEL_VALUE_MAX_LENGTH = 63
"""A prebuilt-workload name longer than a label value can only be an annotation."""
MANAGED_OWNERS_CHAIN_LIMIT = 10
MSG_NESTING_TOO_DEEP = (
    f"Terminated search for Kueue-managed Job because ancestor depth exceeded limit of {MANAGED_OWNERS_CHAIN_LIMIT}"
)


def workload_name(
    owner_name: str, owner_uid: str, *, kind: str, group: str = "", extra: str = "", short: bool = False
) -> str:
    """`GenerateWorkloadNameWithExtra` (`jobframework/workload_names.go`): `<kind>-<owner>` cut to fit,
    `-`, then 5 hex of SHA-1(kind, group, name, uid[, extra]); `short` is ShortWorkloadNames (63).
    The one name function of every job kind: the webhook and the worker's reconcilers (a
    StatefulSet's one Workload, a Job's or a Pod's) must agree on it."""
    prefix = f"{kind.lower()}-{owner_name}"[: (63 if short else 253) - 6]
    text = f"{kind}\n{group}\n{owner_name}\n{owner_uid}" + (f"\n{extra}" if extra else "")
    return f"{prefix}-{hashlib.sha1(text.encode()).hexdigest()[:5]}"


def prebuilt_workload_name(obj: o.Obj, *, identifier_annotations: bool) -> str:
    """`PrebuiltWorkloadNameFor`: with WorkloadIdentifierAnnotations the annotation wins over the
    label; without it the label wins, and the annotation counts only when too long for a label."""
    annotation = o.annotations(obj).get(c.PREBUILT_WORKLOAD_LABEL, "")
    if identifier_annotations and annotation:
        return annotation
    label = o.labels(obj).get(c.PREBUILT_WORKLOAD_LABEL, "")
    if label or identifier_annotations:
        return label
    return annotation if len(annotation) > LABEL_VALUE_MAX_LENGTH else ""


def prebuilt_workload_in_annotation(obj: o.Obj, *, identifier_annotations: bool) -> bool:
    """`GetPrebuiltWorkloadPath`: field errors point at the annotation (not the label) when the gate
    is on or the annotation is too long for a label, and it is set."""
    annotation = o.annotations(obj).get(c.PREBUILT_WORKLOAD_LABEL, "")
    return bool(annotation) and (identifier_annotations or len(annotation) > LABEL_VALUE_MAX_LENGTH)


def pods_count(job: o.Obj) -> int:
    """`PodsCount` of a batch/v1 Job: parallelism (default 1), capped by completions."""
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    return count if completions is None else min(count, int(completions))


def group_kind(api_version: str, kind: str) -> tuple[str, str]:
    """(API group, kind) of an apiVersion: `batch/v1` → `batch`, `v1` → the core group ``""``."""
    return (api_version.rpartition("/")[0] if "/" in api_version else "", kind)


class AncestorError(Exception):
    """The owner chain cannot be followed; `too_deep` when it exceeds upstream's limit of 10."""

    def __init__(self, message: str, *, too_deep: bool = False) -> None:
        super().__init__(message)
        self.too_deep = too_deep


def find_managed_ancestor(
    obj: o.Obj,
    *,
    follows: Callable[[o.OwnerReference], bool],
    get_owner: Callable[[o.OwnerReference], o.Obj | None],
    is_managed: Callable[[o.OwnerReference, o.Obj], bool],
) -> o.Obj | None:
    """`FindAncestorJobManagedByKueue`: the top-most controller-owner ancestor Kueue manages.

    The walk climbs while the controller owner is of a kind it `follows` (upstream's known
    owners), GETs each owner (`get_owner`; None is NotFound) and stops at a UID mismatch. Of the
    ancestors seen, the highest one for which `is_managed` holds is returned. A UID seen twice is
    cyclic ownership; more than MANAGED_OWNERS_CHAIN_LIMIT hops is an error.
    """
    top: o.Obj | None = None
    current = obj
    seen: set[str] = set()
    while True:
        current_uid = o.uid(current)
        if current_uid in seen:
            raise AncestorError("cyclic ownership")
        seen.add(current_uid)
        owner = o.controller_of(current)
        if owner is None or not follows(owner):
            return top
        parent = get_owner(owner)
        if parent is None:
            group, kind = group_kind(owner.get("apiVersion", ""), owner.get("kind", ""))
            raise AncestorError(
                f'workload owner not found\n{kind.lower()}s.{group} "{owner.get("name", "")}" not found'
            )
        if o.uid(parent) != owner.get("uid"):
            return top
        if is_managed(owner, parent):
            top = parent
        current = parent
        if len(seen) > MANAGED_OWNERS_CHAIN_LIMIT:
            raise AncestorError(MSG_NESTING_TOO_DEEP, too_deep=True)
