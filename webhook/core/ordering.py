"""Total orders used by the core, each ending in a unique tie-breaker.

Mirrors `pkg/cache/queue/cluster_queue.go` (`queueOrderingFunc`), `pkg/workload/ordering.go`,
`pkg/scheduler/preemption/common/ordering.go` (`CandidatesOrdering`) and `makeClassicalIterator`
in `pkg/scheduler/scheduler.go` (upstream commit ff69552e79).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from webhook.core.workload import EPOCH, WorkloadInfo

__all__ = ["candidate_key", "entry_key", "queue_key"]


def _since_epoch(t: datetime) -> timedelta:
    return t - EPOCH


def queue_key(wl: WorkloadInfo, *, sticky: bool = False) -> tuple[int, int, timedelta, str, str]:
    """Heap order inside one ClusterQueue.

    1. (BestEffortFIFO) the sticky preemptor first; 2. higher priority; 3. older queue-order
    timestamp; 4. lower UID; 5. namespace/name.
    """
    return (0 if sticky else 1, -wl.priority, _since_epoch(wl.queue_order_timestamp), wl.uid, wl.key)


def candidate_key(
    wl: WorkloadInfo, preemptor_cq: str, now: datetime, *, lq_usage: float = 0.0
) -> tuple[bool, bool, float, int, timedelta, str, str]:
    """Preemption candidate order.

    1. already Evicted first; 2. other ClusterQueues before the preemptor's; 3. (admission fair
    sharing) higher LocalQueue usage first, `lq_usage` being 0 where it does not apply; 4. lower
    priority; 5. most recent QuotaReserved transition first (missing means `now`); 6. UID;
    7. namespace/name.
    """
    reserved = wl.quota_reserved_time or now
    return (
        not wl.is_evicted,
        wl.admission_cluster_queue == preemptor_cq,
        -lq_usage,
        wl.priority,
        -_since_epoch(reserved),
        wl.uid,
        wl.key,
    )


def entry_key(wl: WorkloadInfo, borrowing: int) -> tuple[int, int, timedelta, str, str]:
    """Classical order of a cycle's entries.

    1. lower borrowing level (fits within nominal first); 2. higher priority
    (PrioritySortingWithinCohort); 3. older queue-order timestamp; 4. UID; 5. namespace/name.
    """
    return (borrowing, -wl.priority, _since_epoch(wl.queue_order_timestamp), wl.uid, wl.key)
