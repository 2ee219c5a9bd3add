"""Status helpers shared by the writers: SetStatusCondition semantics and guarded status updates.

Mirrors `k8s.io/apimachinery/pkg/api/meta/conditions.go` (`SetStatusCondition`: lastTransitionTime
changes only when the status flips) and the read-modify-write-with-resourceVersion loop that
controller-runtime's `Status().Update` callers use. The write itself is a merge patch of what changed,
carrying the resourceVersion read: as guarded as an update, but without resending the object's spec
and metadata (a Workload's pod templates and managed fields were most of the bytes we sent the API
server at upstream's large-scale config, bench/apiserver_cost.py).
"""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from webhook import kube as k
from webhook.api import objects as o
from webhook.api.constants import (
    MSG_NO_RESERVATION,
    AdmittedReason,
    PendingReason,
    WorkloadCondition,
)
from webhook.worker.store import Store

__all__ = [
    "accumulate_admitted_time",
    "clear_reservation",
    "count_eviction",
    "merge_patch",
    "remove_condition",
    "reset_cluster_nomination",
    "set_condition",
    "set_conditions",
    "unset_quota_reservation",
    "update_status",
]

log = logging.getLogger(__name__)

CONFLICT_BACKOFF_S = 0.01


def _time(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    status: dict[str, Any], cond: Mapping[str, Any], now: datetime, generation: int | None = None
) -> None:
    """Set `cond` (type, status, reason, message[, observedGeneration]) in `status.conditions`."""
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    new = {key: cond[key] for key in ("type", "status", "reason", "message") if key in cond}
    if generation is not None and "observedGeneration" not in cond and cond.get("type") != "Preempted":
        new["observedGeneration"] = generation
    elif "observedGeneration" in cond:
        new["observedGeneration"] = cond["observedGeneration"]
    for i, old in enumerate(conds):
        if old.get("type") == new["type"]:
            same = old.get("status") == new["status"]
            new["lastTransitionTime"] = (
                old.get("lastTransitionTime") if same and old.get("lastTransitionTime") else _time(now)
            )
            conds[i] = new
            return
    new["lastTransitionTime"] = _time(now)
    conds.append(new)


def accumulate_admitted_time(status: dict[str, Any], now: datetime) -> None:
    """Admitted is about to turn False (`SyncAdmittedCondition`): the time since it turned True is
    added to `accumulatedPastExecutionTimeSeconds` (whole seconds, truncated)."""
    admitted = o.find_condition({"status": status}, WorkloadCondition.ADMITTED)
    if admitted is None or admitted.get("status") != "True" or not admitted.get("lastTransitionTime"):
        return
    elapsed = int((now - datetime.fromisoformat(str(admitted["lastTransitionTime"]))).total_seconds())
    status["accumulatedPastExecutionTimeSeconds"] = (
        int(status.get("accumulatedPastExecutionTimeSeconds") or 0) + elapsed
    )


def count_eviction(status: dict[str, Any], reason: str, underlying_cause: str = "") -> bool:
    """One more eviction for (`reason`, `underlying_cause`) in `status.schedulingStats.evictions`
    (`workloadEvictionStateInc` in `pkg/workload/evict/evict.go`, applied on every `Evict`); True
    when it is the first of its kind. Both keys of the list-map are always written, the cause as
    "" when there is none (the field is required)."""
    evictions: list[dict[str, Any]] = status.setdefault("schedulingStats", {}).setdefault("evictions", [])
    for row in evictions:
        if row.get("reason") == reason and (row.get("underlyingCause") or "") == underlying_cause:
            row["count"] = int(row.get("count") or 0) + 1
            return False
    evictions.append({"reason": reason, "underlyingCause": underlying_cause, "count": 1})
    return True


def unset_quota_reservation(status: dict[str, Any], reason: str, message: str, now: datetime, generation: int) -> None:
    """`UnsetQuotaReservationWithCondition`: QuotaReserved=False with `reason`, no admission, and
    Admitted synced to False/NoReservation (`SyncAdmittedCondition`), the time it was True added to
    `accumulatedPastExecutionTimeSeconds`."""
    set_condition(
        status,
        {"type": WorkloadCondition.QUOTA_RESERVED, "status": "False", "reason": reason, "message": message},
        now,
        generation,
    )
    status.pop("admission", None)
    accumulate_admitted_time(status, now)
    set_condition(
        status,
        {
            "type": WorkloadCondition.ADMITTED,
            "status": "False",
            "reason": AdmittedReason.NO_RESERVATION,
            "message": MSG_NO_RESERVATION,
        },
        now,
        generation,
    )


def clear_reservation(
    status: dict[str, Any], *, requeue: bool, reason: str, message: str, now: datetime, generation: int
) -> None:
    """An evicted Workload gives its quota back (`clearWorkloadAdmission`, a stopped job's Workload):
    Requeued (True when `requeue`) with the eviction's `reason`, then the reservation unset."""
    set_condition(
        status,
        {
            "type": WorkloadCondition.REQUEUED,
            "status": "True" if requeue else "False",
            "reason": reason,
            "message": message,
        },
        now,
        generation,
    )
    unset_quota_reservation(status, PendingReason.PENDING_EVALUATION, message, now, generation)


def set_conditions(
    status: dict[str, Any],
    conditions: Iterable[Mapping[str, Any]],
    now: datetime,
    generation: int,
    *,
    clear_admission: bool = False,
) -> None:
    """`conditions` as given, an Admitted=False one after adding up the time Admitted was True;
    `clear_admission` drops `status.admission`, as a QuotaReserved=False does."""
    for cond in conditions:
        if cond.get("type") == WorkloadCondition.ADMITTED and cond.get("status") == "False":
            accumulate_admitted_time(status, now)
        set_condition(status, dict(cond), now, generation)
    if clear_admission:
        status.pop("admission", None)


def reset_cluster_nomination(status: dict[str, Any]) -> None:
    """`resetClusterNomination` (`pkg/workload/evict/evict.go`, part of every eviction): an evicted
    Workload forgets its MultiKueue worker and nominations, so it is dispatched afresh once readmitted."""
    status.pop("clusterName", None)
    status.pop("nominatedClusterNames", None)


def remove_condition(status: dict[str, Any], ctype: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != ctype]


_ABSENT = object()


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns `old` into `new`: changed keys, nested objects by
    their changed keys, removed keys as null, lists whole (a merge patch cannot address an item)."""
    out: dict[str, Any] = {key: None for key in old.keys() - new.keys()}
    for key, value in new.items():
        before = old.get(key, _ABSENT)
        if before == value:
            continue
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            out[key] = merge_patch(before, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def update_status(
    kube: k.Kube,
    store: Store,
    kind: str,
    path: str,
    mutate: Callable[[dict[str, Any], Mapping[str, Any]], None],
    *,
    attempts: int = 5,
) -> dict[str, Any] | None:
    """Apply `mutate(status, obj)` to the newest known object and patch its status subresource
    with what changed (`merge_patch`).

    The patch carries the object's resourceVersion; on Conflict the object is read again, after a
    short backoff, and the mutation re-applied. No request is made when the mutation changes nothing. Returns the
    stored object, or None when it no longer exists.
    """
    key = path.rsplit("/", 1)[-1]
    parts = path.split("/")
    if "namespaces" in parts:
        key = f"{parts[parts.index('namespaces') + 1]}/{key}"
    obj = store.get(kind, key)
    for attempt in range(attempts):
        if attempt:
            # Conflicts mean another writer is busy on this object: back off (10, 20, 40, 80 ms,
            # jittered) rather than re-read and re-PUT at once, as client-go's RetryOnConflict does.
            time.sleep(CONFLICT_BACKOFF_S * 2 ** (attempt - 1) * random.uniform(0.5, 1.0))
        if obj is None:
            obj = kube.get(path)
            if obj is None:
                return None
        before = obj.get("status") or {}
        status = copy.deepcopy(before)
        mutate(status, obj)
        if status == before:
            return obj
        body = {
            "metadata": {"resourceVersion": o.meta(obj).get("resourceVersion")},
            "status": merge_patch(before, status),
        }
        try:
            written = kube.patch(path + "/status", body)
        except k.Conflict:
            obj = None
            continue
        except k.NotFound:
            return None
        store.put(kind, written)
        return written
    raise k.Conflict(409, f"status of {key}: still conflicting after {attempts} attempts")
