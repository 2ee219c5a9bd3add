"""`spec.maximumExecutionTimeSeconds`: when an admitted Workload has run out of execution time, as a
pure function of the Workload and `now`.

Mirrors `reconcileMaxExecutionTime` in `pkg/controller/core/workload_controller.go` (upstream
v0.19.2). The time a Workload has run is the seconds it was admitted before
(`status.accumulatedPastExecutionTimeSeconds`, added up each time Admitted turns False) plus the
time since its Admitted condition last turned True. Once that reaches the limit the Workload
becomes a DeactivationTarget; the deactivation steps of `core.pods_ready.controller_step` then set
`spec.active=false` and evict it as `DeactivatedDueToMaximumExecutionTimeExceeded`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from webhook.api import constants
from webhook.core.conditions import ConditionValue
from webhook.core.pods_ready import StepKind, WorkloadStep
from webhook.core.workload import WorkloadInfo

__all__ = ["execution_deadline", "max_execution_step"]

_W = constants.WorkloadCondition


def execution_deadline(obj: Mapping[str, Any], wl: WorkloadInfo) -> datetime | None:
    """When the admitted Workload `obj` (parsed as `wl`) exhausts its maximum execution time; None
    without a limit or while not Admitted=True."""
    limit = (obj.get("spec") or {}).get("maximumExecutionTimeSeconds")
    admitted = wl.conditions.get(_W.ADMITTED)
    if limit is None or admitted is None or admitted.status != "True" or admitted.last_transition_time is None:
        return None
    past = int((obj.get("status") or {}).get("accumulatedPastExecutionTimeSeconds") or 0)
    return admitted.last_transition_time + timedelta(seconds=int(limit) - past)


def max_execution_step(obj: Mapping[str, Any], wl: WorkloadInfo, now: datetime) -> WorkloadStep:
    """Look again at the deadline while it is ahead; once reached, mark the Workload a
    DeactivationTarget (MaximumExecutionTimeExceeded), unless it already is one.

    An inactive Workload is left alone. Upstream is not: between the eviction (which removes the
    DeactivationTarget) and its Job releasing the quota, Admitted is still True, so its next reconcile
    marks the already deactivated Workload again, and that stale target deactivates it anew the moment
    a user reactivates it."""
    deadline = execution_deadline(obj, wl)
    if deadline is None or not wl.active:
        return WorkloadStep(StepKind.NONE)
    if now < deadline:
        return WorkloadStep(StepKind.RECHECK, recheck_at=deadline)
    target = wl.conditions.get(_W.DEACTIVATION_TARGET)
    if target is not None and target.status == "True":
        return WorkloadStep(StepKind.NONE)
    limit = int((obj.get("spec") or {})["maximumExecutionTimeSeconds"])
    reason = constants.DeactivationReason.MAXIMUM_EXECUTION_TIME_EXCEEDED
    return WorkloadStep(
        StepKind.MAX_EXECUTION_EXCEEDED,
        conditions=(ConditionValue(_W.DEACTIVATION_TARGET, "True", reason, constants.MSG_MAX_EXECUTION_TIME_EXCEEDED),),
        reason=reason,
        event=constants.MSG_MAX_EXECUTION_TIME_EVENT.format(seconds=limit),
    )
