"""waitForPodsReady: the PodsReady condition, the not-ready timeout, requeue backoff, deactivation and
blockAdmission, as pure functions of a Workload, the configuration and `now`.

Mirrors, at upstream commit ff69552e79:

* `pkg/controller/jobframework/reconciler.go` `generatePodsReadyCondition` (`pods_ready_condition`,
  shared by the Job and Pod integrations);
* `pkg/controller/core/workload_controller.go` `Reconcile` (the deactivation, backoff and
  reactivation steps), `reconcileNotReadyTimeout`, `admittedNotReadyWorkload` and
  `triggerDeactivation` (`controller_step`);
* `pkg/workload/workload.go` `UpdateRequeueState` / `SetRequeueState` and `pkg/util/wait/backoff.go`
  (`backoff`);
* `pkg/cache/scheduler/cache.go` `PodsReadyForAllAdmittedWorkloads` (`blocks_admission`).

Upstream runs each workload-controller step as its own reconcile and write; `controller_step` returns
the first step that applies and the worker writes it; the write's watch event brings the next
step. Two upstream writes are merged into one step: clearing `requeueAt` once the backoff of a
pending workload has passed and setting Requeued=True/BackoffFinished (upstream does the first,
then the second on the next reconcile; the end state is the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from webhook.api import constants
from webhook.api.constants import EvictionReason, PodsReadyReason, RequeuedReason
from webhook.core.cache import Cache
from webhook.core.conditions import MAX_MESSAGE, ConditionValue, pending_conditions
from webhook.core.workload import WorkloadInfo

__all__ = [
    "JITTER",
    "Policy",
    "StepKind",
    "WorkloadStep",
    "backoff",
    "blocks_admission",
    "controller_step",
    "not_ready_deadline",
    "pods_ready_condition",
]

_W = constants.WorkloadCondition
JITTER = 0.0001
"""Upper bound of the jittered extra wait, as a fraction of the backoff (upstream's 0.01%)."""
_LEGACY_NOT_READY = "PodsReady"  # reason of PodsReady=False written by older Kueue versions
_NO_CAP_SECONDS = (2**63 - 1) / 2 / 1e9  # a zero cap: `wait.Backoff` caps at MaxInt64/factor nanoseconds


@dataclass(frozen=True, slots=True)
class Policy:
    """The enabled `waitForPodsReady` configuration, in the shape the controller uses it."""

    timeout: timedelta
    recovery_timeout: timedelta | None = None  # None (or configured 0s): no recovery timeout
    backoff_limit_count: int | None = None  # None: requeue forever
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600
    block_admission: bool = False


# == PodsReady ====================================================================================
def pods_ready_condition(*, admitted: bool, pods_ready: bool, current: tuple[str, str] | None) -> ConditionValue:
    """The PodsReady condition a job integration keeps on its Workload (`generatePodsReadyCondition`).

    `current` is the (status, reason) of the Workload's PodsReady condition, None when absent.
    A workload that is not admitted (pending, or evicted and requeued) is waiting to start.
    """
    waiting = ConditionValue(_W.PODS_READY, "False", PodsReadyReason.WAIT_FOR_START, constants.MSG_PODS_NOT_READY)
    if not admitted:
        return waiting
    status, reason = current if current is not None else ("", "")
    if pods_ready:
        recovered = current is not None and reason in (PodsReadyReason.WAIT_FOR_RECOVERY, PodsReadyReason.RECOVERED)
        return ConditionValue(
            _W.PODS_READY,
            "True",
            PodsReadyReason.RECOVERED if recovered else PodsReadyReason.STARTED,
            constants.MSG_PODS_READY,
        )
    if current is not None and (status == "True" or reason == PodsReadyReason.WAIT_FOR_RECOVERY):
        return ConditionValue(_W.PODS_READY, "False", PodsReadyReason.WAIT_FOR_RECOVERY, constants.MSG_PODS_RECOVERING)
    return waiting


# == timeout and backoff ==========================================================================
@dataclass(frozen=True, slots=True)
class Deadline:
    cause: str  # the eviction's underlying cause: WaitForStart or WaitForRecovery
    at: datetime


def not_ready_deadline(wl: WorkloadInfo, policy: Policy) -> Deadline | None:
    """When an admitted workload without PodsReady=True times out (`admittedNotReadyWorkload`).

    Waiting to start counts from the Admitted transition (`timeout`); waiting for recovery counts
    from the PodsReady=False/WaitForRecovery transition (`recoveryTimeout`, when configured).
    """
    if not wl.is_admitted:
        return None
    ready = wl.conditions.get(_W.PODS_READY)
    if ready is not None and ready.status == "True":
        return None
    if ready is None or ready.reason in (PodsReadyReason.WAIT_FOR_START, _LEGACY_NOT_READY):
        admitted_at = wl.conditions[_W.ADMITTED].last_transition_time
        if admitted_at is None:
            return None
        return Deadline(PodsReadyReason.WAIT_FOR_START, admitted_at + policy.timeout)
    if (
        ready.reason == PodsReadyReason.WAIT_FOR_RECOVERY
        and policy.recovery_timeout is not None
        and ready.last_transition_time
    ):
        return Deadline(PodsReadyReason.WAIT_FOR_RECOVERY, ready.last_transition_time + policy.recovery_timeout)
    return None


def backoff(count: int, *, base_seconds: int, max_seconds: int, jitter: float = 0.0) -> timedelta:
    """The wait before the `count`-th requeue: base·2^(count-1), capped at max, plus up to 0.01%.

    As `wait.Backoff` steps it, the first wait is the base even when it exceeds the cap, and a cap
    of 0 means no cap. `jitter` in [0, 1) picks the extra wait within its 0.01% range.
    """
    duration = float(base_seconds)
    cap = float(max_seconds) if max_seconds > 0 else _NO_CAP_SECONDS
    for _ in range(count - 1):
        duration = min(duration * 2, cap)
        if duration == cap:
            break
    return timedelta(seconds=duration * (1 + JITTER * jitter))


# == the workload controller's steps ==============================================================
class StepKind(Enum):
    NONE = "None"
    RECHECK = "Recheck"  # nothing to do before `recheck_at`
    SET_INACTIVE = "SetInactive"  # spec.active=false (a DeactivationTarget was set)
    DEACTIVATE = "Deactivate"  # DeactivationTarget=True: the requeuing limit is exceeded
    EVICT = "Evict"  # Evicted=True (PodsReadyTimeout, a Retry check, or Deactivated for an inactive workload)
    UPDATE = "Update"  # other condition / requeueState changes (backoff finished, reactivated, ...)
    # admission checks (`core.admission_checks`)
    REQUEUE_AT = "RequeueAt"  # status.requeueState.requeueAt from a Retry check's requeueAfterSeconds
    SYNC_CHECKS = "SyncAdmissionChecks"  # status.admissionChecks replaced by `checks`
    ADMITTED = "SyncAdmitted"  # the Admitted condition; True emits `Admitted`
    REJECTED = "Rejected"  # DeactivationTarget=True, Warning event `AdmissionCheckRejected` (`event`)
    # DeactivationTarget=True, accumulatedPastExecutionTimeSeconds cleared, Warning event
    # `MaximumExecutionTimeExceeded` (`event`) (`core.max_execution`)
    MAX_EXECUTION_EXCEEDED = "MaximumExecutionTimeExceeded"


@dataclass(frozen=True, slots=True)
class WorkloadStep:
    """One write of the workload controller (PodsReady, requeueing, deactivation and admission
    checks alike), or when to look again.

    With `set_requeue_state`, `requeue_state` replaces `status.requeueState` (None removes it).
    An EVICT step also emits the Normal event `event_reason` with the eviction message and counts
    the eviction (`reason`, `underlying_cause`) in the metrics. `checks` is the list a
    SYNC_CHECKS step writes, `requeue_at` a REQUEUE_AT step's time, `event` a REJECTED or
    MAX_EXECUTION_EXCEEDED step's note.
    """

    kind: StepKind
    recheck_at: datetime | None = None
    conditions: tuple[ConditionValue, ...] = ()
    remove_conditions: tuple[str, ...] = ()
    set_requeue_state: bool = False
    requeue_state: Mapping[str, Any] | None = None
    reason: str = ""
    message: str = ""
    underlying_cause: str = ""
    event_reason: str = ""
    checks: tuple[dict[str, Any], ...] = ()
    requeue_at: datetime | None = None
    event: str = ""


_NONE = WorkloadStep(StepKind.NONE)


def _requeue_state(count: int | None, at: datetime | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if count is not None:
        out["count"] = count
    if at is not None:
        out["requeueAt"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


def _inactive_step(wl: WorkloadInfo) -> WorkloadStep:
    """An inactive workload: evicted once (with the DeactivationTarget's cause), requeueState
    cleared, and QuotaReserved=False/Deactivated once it holds no quota."""
    target = wl.conditions.get(_W.DEACTIVATION_TARGET)
    if not wl.is_evicted:
        reason, message, cause = EvictionReason.DEACTIVATED.value, constants.MSG_DEACTIVATED, ""
        if target is not None:
            cause = target.reason
            message = f"{message} due to {target.message}"
            reason = f"{reason}DueTo{cause}"
        return WorkloadStep(
            StepKind.EVICT,
            conditions=(ConditionValue(_W.EVICTED, "True", reason, message[:MAX_MESSAGE]),),
            remove_conditions=(_W.DEACTIVATION_TARGET,) if target is not None else (),
            set_requeue_state=True,
            reason=EvictionReason.DEACTIVATED,
            message=message,
            underlying_cause=cause,
            event_reason=f"EvictedDueTo{reason}",
        )
    if wl.requeue_count is not None:
        return WorkloadStep(
            StepKind.UPDATE,
            remove_conditions=(_W.DEACTIVATION_TARGET,) if target is not None else (),
            set_requeue_state=True,
        )
    qr = wl.conditions.get(_W.QUOTA_RESERVED)
    if not wl.has_quota_reservation and (
        qr is None or (qr.reason, qr.message) != (constants.PendingReason.DEACTIVATED, constants.MSG_DEACTIVATED)
    ):
        return WorkloadStep(
            StepKind.UPDATE,
            conditions=pending_conditions(constants.PendingReason.DEACTIVATED, constants.MSG_DEACTIVATED),
        )
    return _NONE


def _requeued_step(wl: WorkloadInfo, now: datetime) -> WorkloadStep | None:
    """An active workload: the end of its backoff, or its reactivation (Requeued back to True)."""
    requeued = wl.conditions.get(_W.REQUEUED)
    parked = requeued is not None and requeued.status == "False"
    if wl.requeue_at is not None:
        if wl.requeue_at > now:
            return WorkloadStep(StepKind.RECHECK, recheck_at=wl.requeue_at)
        if not wl.has_quota_reservation:
            conds: tuple[ConditionValue, ...] = ()
            if (
                parked
                and requeued is not None
                and requeued.reason in (EvictionReason.PODS_READY_TIMEOUT, EvictionReason.ADMISSION_CHECK)
            ):
                conds = (
                    ConditionValue(
                        _W.REQUEUED, "True", RequeuedReason.BACKOFF_FINISHED, constants.MSG_BACKOFF_FINISHED
                    ),
                )
            return WorkloadStep(
                StepKind.UPDATE,
                conditions=conds,
                set_requeue_state=True,
                requeue_state=_requeue_state(wl.requeue_count, None),
            )
    if not parked or requeued is None:
        return None
    if requeued.reason == EvictionReason.DEACTIVATED:
        return WorkloadStep(
            StepKind.UPDATE,
            conditions=(ConditionValue(_W.REQUEUED, "True", RequeuedReason.REACTIVATED, constants.MSG_REACTIVATED),),
        )
    if requeued.reason in (EvictionReason.PODS_READY_TIMEOUT, EvictionReason.ADMISSION_CHECK):
        return WorkloadStep(
            StepKind.UPDATE,
            conditions=(
                ConditionValue(_W.REQUEUED, "True", RequeuedReason.BACKOFF_FINISHED, constants.MSG_BACKOFF_FINISHED),
            ),
        )
    return None


def _timeout_step(wl: WorkloadInfo, policy: Policy, now: datetime, jitter: float) -> WorkloadStep:
    """`reconcileNotReadyTimeout` for a workload holding quota."""
    if wl.is_evicted:
        return _NONE
    deadline = not_ready_deadline(wl, policy)
    if deadline is None:
        return _NONE
    if now < deadline.at:
        return WorkloadStep(StepKind.RECHECK, recheck_at=deadline.at)
    count = wl.requeue_count or 0
    if policy.backoff_limit_count is not None and count + 1 > policy.backoff_limit_count:
        target = ConditionValue(
            _W.DEACTIVATION_TARGET,
            "True",
            constants.DeactivationReason.REQUEUING_LIMIT_EXCEEDED,
            constants.MSG_REQUEUING_LIMIT_EXCEEDED,
        )
        return WorkloadStep(StepKind.DEACTIVATE, conditions=(target,))
    wait = backoff(
        count + 1, base_seconds=policy.backoff_base_seconds, max_seconds=policy.backoff_max_seconds, jitter=jitter
    )
    # A requeueAt still ahead made this a RECHECK step, so the new one is always the later (`SetRequeueState`).
    requeue_at = now + wait
    message = constants.MSG_PODS_READY_TIMEOUT.format(key=wl.key)
    return WorkloadStep(
        StepKind.EVICT,
        conditions=(ConditionValue(_W.EVICTED, "True", EvictionReason.PODS_READY_TIMEOUT, message),),
        set_requeue_state=True,
        requeue_state=_requeue_state(count + 1, requeue_at),
        reason=EvictionReason.PODS_READY_TIMEOUT,
        message=message,
        underlying_cause=deadline.cause,
        event_reason=f"EvictedDueTo{EvictionReason.PODS_READY_TIMEOUT}",
    )


def controller_step(wl: WorkloadInfo, policy: Policy | None, now: datetime, *, jitter: float = 0.0) -> WorkloadStep:
    """The next thing the workload controller does about deactivation, backoff and PodsReady.

    In upstream's order: a finished workload is left alone; an active one with a DeactivationTarget
    is deactivated (spec.active=false); an inactive one is evicted and its requeueState cleared; an
    active one waiting for its backoff, or parked by an eviction, is requeued once the backoff has
    passed; one holding quota is timed out when its pods are not ready in time (`policy` None:
    waitForPodsReady disabled, no timeout). `jitter` in [0, 1) is the jittered part of a new backoff (drawn by the caller).
    """
    if wl.is_finished:
        return _NONE
    if not wl.active:
        return _inactive_step(wl)
    target = wl.conditions.get(_W.DEACTIVATION_TARGET)
    if target is not None and target.status == "True":
        return WorkloadStep(StepKind.SET_INACTIVE)
    requeued = _requeued_step(wl, now)
    if requeued is not None:
        return requeued
    if wl.has_quota_reservation and policy is not None:
        return _timeout_step(wl, policy, now, jitter)
    return _NONE


# == blockAdmission ===============================================================================
def blocks_admission(cache: Cache) -> bool:
    """Some workload holding quota in a ClusterQueue is not PodsReady=True: with blockAdmission the
    scheduler admits nothing new until that changes (`PodsReadyForAllAdmittedWorkloads`)."""
    return any(not wl.pods_ready for cq in cache.cluster_queues.values() for wl in cq.workloads.values())
