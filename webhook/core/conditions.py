"""Condition reasons and messages the admission core produces, spelled exactly as upstream.

Mirrors the reason constants of `apis/kueue/v1beta2/{workload,clusterqueue}_types.go` and the
condition helpers of `pkg/workload/workload.go` (`SetQuotaReservation`, `UnsetQuotaReservation
WithCondition`, `SyncAdmittedCondition`), `pkg/workload/evict/evict.go` and
`pkg/scheduler/preemption/preemption.go` (`preemptionMessage`) at upstream commit ff69552e79.
The reason and message strings themselves live in `webhook/api/constants.py`; this module builds
conditions from them. `PendingReason` and `PreemptionReason` are re-exported from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from webhook.api import constants
from webhook.api.constants import PendingReason, PreemptionReason

__all__ = [
    "ConditionValue",
    "PendingReason",
    "PreemptionReason",
    "RequeueReason",
    "admitted_condition",
    "blocked_on_preemption_gates",
    "evicted",
    "evicted_by_preemption",
    "pending_conditions",
    "preemption_message",
    "quota_reserved_condition",
    "requeued",
    "slice_replaced",
]

_W = constants.WorkloadCondition

MAX_MESSAGE = 32 * 1024


class RequeueReason(StrEnum):
    """Why an entry goes back to its queue; decides immediate vs. parked requeue."""

    GENERIC = ""
    FAILED_AFTER_NOMINATION = "FailedAfterNomination"
    NAMESPACE_MISMATCH = "NamespaceMismatch"
    PENDING_PREEMPTION = "PendingPreemption"
    PREEMPTION_FAILED = "PreemptionFailed"
    NO_FIT = "NoFit"
    PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"
    PREEMPTION_GATED = "PreemptionGated"
    PENDING_MIGRATION = "PendingMigration"


@dataclass(frozen=True, slots=True)
class ConditionValue:
    """A condition to set on an object; lastTransitionTime is the caller's `now`."""

    type: str
    status: str
    reason: str
    message: str

    def to_api(self, now: datetime, observed_generation: int | None = None) -> dict[str, Any]:
        """The JSON form; upstream omits observedGeneration on Preempted."""
        out: dict[str, Any] = {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message[:MAX_MESSAGE],
            "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if observed_generation is not None and self.type != constants.WorkloadCondition.PREEMPTED:
            out["observedGeneration"] = observed_generation
        return out


def quota_reserved_condition(cluster_queue: str) -> ConditionValue:
    return ConditionValue(
        _W.QUOTA_RESERVED, "True", constants.QUOTA_RESERVED_REASON, f"Quota reserved in ClusterQueue {cluster_queue}"
    )


def admitted_condition(checks_required: bool, checks_ready: bool, topology_pending: bool = False) -> ConditionValue:
    """Admitted after a reservation: True unless some required admission check is not Ready, or
    a pod set's topology is still to be placed (`delayedTopologyRequest: Pending`)
    (`SyncAdmittedCondition`)."""
    if checks_required and not checks_ready:
        return ConditionValue(
            _W.ADMITTED,
            "False",
            constants.AdmittedReason.UNSATISFIED_ADMISSION_CHECKS,
            constants.MSG_UNSATISFIED_CHECKS,
        )
    if topology_pending:
        return ConditionValue(
            _W.ADMITTED,
            "False",
            constants.AdmittedReason.PENDING_DELAYED_TOPOLOGY_REQUESTS,
            constants.MSG_PENDING_DELAYED_TOPOLOGY,
        )
    return ConditionValue(_W.ADMITTED, "True", constants.AdmittedReason.ADMITTED, constants.MSG_WORKLOAD_ADMITTED)


def previously(ctype: str, old_message: str) -> ConditionValue:
    """What a True Evicted/Preempted condition becomes on the next reservation."""
    return ConditionValue(ctype, "False", constants.QUOTA_RESERVED_REASON, f"Previously: {old_message}")


def pending_conditions(reason: str, message: str) -> tuple[ConditionValue, ConditionValue]:
    """QuotaReserved=False with the entry's reason, and Admitted=False/NoReservation."""
    return (
        ConditionValue(_W.QUOTA_RESERVED, "False", reason, message[:MAX_MESSAGE]),
        ConditionValue(_W.ADMITTED, "False", constants.AdmittedReason.NO_RESERVATION, constants.MSG_NO_RESERVATION),
    )


def blocked_on_preemption_gates(message: str) -> ConditionValue:
    """BlockedOnPreemptionGates=True: the workload needs preemption but a gate is closed."""
    return ConditionValue(
        _W.BLOCKED_ON_PREEMPTION_GATES, "True", constants.PREEMPTION_GATED_REASON, message[:MAX_MESSAGE]
    )


def preemption_message(
    preemptor_uid: str, preemptor_job_uid: str, reason: PreemptionReason, preemptor_path: str, preemptee_path: str
) -> str:
    return (
        f"Preempted to accommodate a workload (UID: {preemptor_uid or 'UNKNOWN'}, JobUID: {preemptor_job_uid or 'UNKNOWN'}) "
        f"due to {reason.human}; preemptor path: {preemptor_path or 'UNKNOWN'}; preemptee path: {preemptee_path or 'UNKNOWN'}"
    )


def evicted_by_preemption(reason: PreemptionReason, message: str) -> tuple[ConditionValue, ConditionValue]:
    """The Evicted and Preempted conditions written on a preemption victim."""
    return (
        ConditionValue(_W.EVICTED, "True", constants.EvictionReason.PREEMPTED, message),
        ConditionValue(_W.PREEMPTED, "True", str(reason), message),
    )


def evicted(reason: str, message: str) -> ConditionValue:
    """Evicted=True, as `evict.Evict` writes it."""
    return ConditionValue(_W.EVICTED, "True", reason, message[:MAX_MESSAGE])


def slice_replaced(new_uid: str, new_job_uid: str) -> ConditionValue:
    """Finished=True on a workload slice once the slice replacing it is admitted
    (`Scheduler.replaceWorkloadSlice`)."""
    message = constants.MSG_SLICE_AGGREGATED.format(uid=new_uid, job_uid=new_job_uid)
    return ConditionValue(_W.FINISHED, "True", constants.FinishedReason.WORKLOAD_SLICE_REPLACED, message)


def requeued(reason: str, message: str) -> ConditionValue:
    """Requeued=True, as the workload controller writes it when a stopped queue restarts."""
    return ConditionValue(_W.REQUEUED, "True", reason, message[:MAX_MESSAGE])
