"""What the workload controller does to a Workload because of its queues' state (stopPolicy, activity).

Mirrors the queue-related steps of `Reconcile` in `pkg/controller/core/workload_controller.go`
(upstream commit ff69552e79), in upstream's order:

1. Requeued=False/LocalQueueStopped and the LocalQueue exists and is not stopped:
   Requeued=True `LocalQueueRestarted`;
2. Requeued=False/ClusterQueueStopped and the ClusterQueue the LocalQueue points at is not stopped:
   Requeued=True `ClusterQueueRestarted`;
3. pending (no reservation): the queue blocker (`getQueueBlocker`) for a stopped LocalQueue or an
   inactive ClusterQueue, as QuotaReserved=False `Suspended`, unless already set;
4. holding quota (`reconcileOnLocalQueueActiveState`, then `reconcileOnClusterQueueActiveState`):
   an admitted workload is evicted (`LocalQueueStopped` / `ClusterQueueStopped`) only under
   HoldAndDrain and only if not already evicted; a workload that reserved quota but is not admitted
   loses its reservation (QuotaReserved=False `Suspended`) under any stopPolicy but None.

The ClusterQueue of a workload is the one its LocalQueue points at, as in upstream's queue manager,
where a stopped LocalQueue is absent (so its workloads have no ClusterQueue).

Not covered: the Misconfigured outcomes of a missing or terminating LocalQueue/ClusterQueue (the
core cannot tell "deleted" from "not listed yet"), and resetting the reason to PendingEvaluation
once a blocker clears (the next scheduling attempt reports the workload's status anyway).
"""

from __future__ import annotations

from webhook.api import constants
from webhook.api.constants import EvictionReason, PendingReason, RequeuedReason
from webhook.core import conditions
from webhook.core.cache import Cache
from webhook.core.decisions import Evict, QueueBlocked, Requeue, UnsetReservation
from webhook.core.model import StopPolicy
from webhook.core.workload import WorkloadInfo

__all__ = ["QueueStateDecision", "queue_state_decision"]

QueueStateDecision = Requeue | QueueBlocked | Evict | UnsetReservation


def _requeue(wl: WorkloadInfo, cq: str, reason: str, message: str) -> Requeue:
    return Requeue(wl.key, wl.uid, cq, reason, message, (conditions.requeued(reason, message),), wl.generation)


def _evict(wl: WorkloadInfo, cq: str, reason: str, message: str) -> Evict:
    return Evict(wl.key, wl.uid, cq, reason, message, (conditions.evicted(reason, message),), wl.generation)


def _unset(wl: WorkloadInfo, cq: str, reason: str, message: str) -> UnsetReservation:
    return UnsetReservation(
        wl.key, wl.uid, cq, reason, message, conditions.pending_conditions(reason, message), wl.generation
    )


def _requeued_false_by(wl: WorkloadInfo, reason: EvictionReason) -> bool:
    c = wl.conditions.get(constants.WorkloadCondition.REQUEUED)
    return c is not None and c.status == "False" and c.reason == reason


def queue_state_decision(
    wl: WorkloadInfo, cache: Cache, *, reserving: bool, granular_reasons: bool = False
) -> QueueStateDecision | None:
    """The one write the workload controller would make for `wl` now, if any (see module docstring).
    `granular_reasons`: gate UnadmittedWorkloadsObservability (off, a queue blocker's reason is
    `Inadmissible`, upstream's `resolveLegacyUnadmittedQuotaReservedCondition`)."""
    lq = cache.local_queues.get(f"{wl.namespace}/{wl.queue_name}")
    lq_stop = lq.stop_policy if lq is not None else StopPolicy.NONE
    routed = lq is not None and lq_stop == StopPolicy.NONE
    cq_name = lq.cluster_queue if lq is not None and routed else ""
    cq = cache.cluster_queues.get(cq_name) if routed else None
    cq_stop = cq.spec.stop_policy if cq is not None else StopPolicy.NONE

    if routed and _requeued_false_by(wl, EvictionReason.LOCAL_QUEUE_STOPPED):
        return _requeue(wl, cq_name, RequeuedReason.LOCAL_QUEUE_RESTARTED, constants.MSG_LOCAL_QUEUE_RESTARTED)
    if cq is not None and cq_stop == StopPolicy.NONE and _requeued_false_by(wl, EvictionReason.CLUSTER_QUEUE_STOPPED):
        return _requeue(wl, cq_name, RequeuedReason.CLUSTER_QUEUE_RESTARTED, constants.MSG_CLUSTER_QUEUE_RESTARTED)

    if not reserving:
        return _blocker(
            wl, cache, lq_stop=lq_stop, cq_name=cq_name if cq is not None else "", granular_reasons=granular_reasons
        )

    held_in = wl.admission_cluster_queue
    if wl.is_admitted:
        if lq_stop == StopPolicy.HOLD_AND_DRAIN and not wl.is_evicted:
            return _evict(wl, held_in, EvictionReason.LOCAL_QUEUE_STOPPED, constants.MSG_LOCAL_QUEUE_STOPPED)
        if cq_stop == StopPolicy.HOLD_AND_DRAIN and not wl.is_evicted:
            return _evict(wl, held_in, EvictionReason.CLUSTER_QUEUE_STOPPED, constants.MSG_CLUSTER_QUEUE_STOPPED)
        return None
    suspended = PendingReason.SUSPENDED if granular_reasons else constants.INADMISSIBLE_REASON
    if lq is not None and lq_stop != StopPolicy.NONE:
        return _unset(wl, held_in, suspended, f"LocalQueue {wl.queue_name} is stopped")
    if cq is not None and cq_stop != StopPolicy.NONE:
        return _unset(wl, held_in, suspended, f"ClusterQueue {cq_name} is stopped")
    return None


def _blocker(
    wl: WorkloadInfo, cache: Cache, *, lq_stop: StopPolicy, cq_name: str, granular_reasons: bool
) -> QueueBlocked | None:
    """QuotaReserved=False for a pending workload behind a stopped LocalQueue or inactive ClusterQueue."""
    if lq_stop != StopPolicy.NONE:
        message = f"LocalQueue {wl.queue_name} is inactive"
    elif cq_name and not cache.readiness(cq_name).active:
        message = f"ClusterQueue {cq_name} is inactive"
    else:
        return None
    reason = PendingReason.SUSPENDED if granular_reasons else constants.INADMISSIBLE_REASON
    cur = wl.conditions.get(constants.WorkloadCondition.QUOTA_RESERVED)
    if cur is not None and cur.status == "False" and cur.reason == reason and cur.message == message:
        return None
    return QueueBlocked(
        wl.key, wl.uid, cq_name, reason, message, conditions.pending_conditions(reason, message), wl.generation
    )
