"""Queue manager: LocalQueue routing, per-ClusterQueue heaps, inadmissible parking, backoff.

Mirrors `pkg/cache/queue/{manager,cluster_queue,local_queue}.go` (upstream commit ff69552e79).
Per ClusterQueue there is an active heap (lazy deletion, so push/update/delete are O(log n)) and
an `inadmissible` map; at most one workload per ClusterQueue is in flight during a cycle.
Flushing inadmissible workloads back to the heap is requested by the caller (the facade in
`cycle.py` knows the cohort tree); upstream batches those requests for 1 s, which is the worker's
business, not the core's.

With SchedulingEquivalenceHashing (on by default since v0.18), a BestEffortFIFO head that failed
for NoFit or PreemptionNoCandidates takes every Workload of the same scheduling hash out of the heap
with it, and later pushes of that hash go straight to `inadmissible`, until the ClusterQueue's
inadmissible Workloads are next requeued (`handleInadmissibleHash`, `hashToBulkMoveReason` in
`pkg/cache/queue/cluster_queue.go` and `inadmissible_workloads.go`, v0.19.2).

With ConcurrentAdmission, a ClusterQueue with a concurrentAdmissionPolicy never queues its parent
Workloads, only their variants (`IsConcurrentAdmissionParentWithoutLock`, `AddFromLocalQueue`).

With admission fair sharing (`QueueManager.fs_usage` set) a ClusterQueue whose admissionScope is
UsageBasedAdmissionFairSharing pops the Workload of its LocalQueue with the lowest usage first, the
heap order breaking ties (`queueOrderingFunc`). A LocalQueue's usage moves with every admission
(entry penalties) and sample, so that pop reads it afresh and scans the queue's Workloads: O(n) per
pop where upstream re-heapifies the queue, O(n log n), whenever a penalty is pending.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from webhook.core import model, ordering
from webhook.core.conditions import RequeueReason
from webhook.core.workload import WorkloadInfo, WorkloadKey

__all__ = ["Head", "QueueManager"]

_BULK_MOVE_REASONS = frozenset({RequeueReason.NO_FIT, RequeueReason.PREEMPTION_NO_CANDIDATES})
_IMMEDIATE_BEST_EFFORT = frozenset(
    {
        RequeueReason.FAILED_AFTER_NOMINATION,
        RequeueReason.PENDING_PREEMPTION,
        RequeueReason.PENDING_MIGRATION,
        RequeueReason.PREEMPTION_FAILED,
    }
)


@dataclass(frozen=True, slots=True)
class Head:
    """A workload popped for this cycle and the ClusterQueue it was popped from."""

    workload: WorkloadInfo
    cluster_queue: str


@dataclass(slots=True)
class _ClusterQueueQueue:
    spec: model.ClusterQueueSpec
    active: bool = True
    heap: list[tuple[tuple[int, int, object, str, str], WorkloadKey]] = field(default_factory=list)
    in_heap: dict[WorkloadKey, tuple[tuple[int, int, object, str, str], WorkloadInfo]] = field(default_factory=dict)
    inadmissible: dict[WorkloadKey, WorkloadInfo] = field(default_factory=dict)
    inflight: WorkloadKey | None = None
    pop_cycle: int = 0
    queue_inadmissible_cycle: int = -1
    sticky: WorkloadKey | None = None
    # Scheduling hashes bulk-moved to `inadmissible` since the last requeue of inadmissible Workloads.
    bulk_moved: set[str] = field(default_factory=set)

    @property
    def best_effort(self) -> bool:
        return self.spec.queueing_strategy == model.QueueingStrategy.BEST_EFFORT_FIFO

    def bulk_move(self, scheduling_hash: str) -> None:
        """`handleInadmissibleHash`: park every heap Workload of this equivalence class."""
        self.bulk_moved.add(scheduling_hash)
        for key, (_, wl) in list(self.in_heap.items()):
            if wl.scheduling_hash == scheduling_hash:
                del self.in_heap[key]
                self.inadmissible[key] = wl

    def push(self, wl: WorkloadInfo) -> None:
        self.inadmissible.pop(wl.key, None)
        key = ordering.queue_key(
            wl, sticky=self.sticky == wl.key and self.spec.queueing_strategy == model.QueueingStrategy.BEST_EFFORT_FIFO
        )
        old = self.in_heap.get(wl.key)
        self.in_heap[wl.key] = (key, wl)
        if old is None or old[0] != key:
            heapq.heappush(self.heap, (key, wl.key))
            if len(self.heap) > 2 * len(self.in_heap) + 64:
                self.heap = [(k, wk) for wk, (k, _) in self.in_heap.items()]
                heapq.heapify(self.heap)

    def discard(self, key: WorkloadKey) -> None:
        self.in_heap.pop(key, None)
        self.inadmissible.pop(key, None)

    def pop(self) -> WorkloadInfo | None:
        while self.heap:
            key, wk = heapq.heappop(self.heap)
            cur = self.in_heap.get(wk)
            if cur is not None and cur[0] == key:
                del self.in_heap[wk]
                return cur[1]
        return None

    def pop_fair(self, fs_usage: Callable[[str], float]) -> WorkloadInfo | None:
        """The Workload ranked first by (its LocalQueue's usage, heap order); the heap keeps its
        entry, which `pop` skips once it is gone from `in_heap`."""
        if not self.in_heap:
            return None
        usages: dict[str, float] = {}

        def rank(item: tuple[WorkloadKey, tuple[tuple[int, int, object, str, str], WorkloadInfo]]) -> tuple[float, Any]:
            key, wl = item[1]
            lq = f"{wl.namespace}/{wl.queue_name}"
            u = usages.get(lq)
            if u is None:
                u = usages[lq] = fs_usage(lq)
            return u, key

        best, _ = min(self.in_heap.items(), key=rank)
        return self.in_heap.pop(best)[1]

    def pending(self) -> int:
        return len(self.in_heap) + len(self.inadmissible)


@dataclass(slots=True)
class _LocalQueue:
    spec: model.LocalQueueSpec
    items: set[WorkloadKey] = field(default_factory=set)


class QueueManager:
    """All pending (admissible) workloads, routed LocalQueue -> ClusterQueue."""

    def __init__(self, namespaces: Mapping[str, Mapping[str, str]], *, equivalence_hashing: bool = True) -> None:
        self._namespaces = namespaces
        self._equivalence_hashing = equivalence_hashing
        self.cluster_queues: dict[str, _ClusterQueueQueue] = {}
        self.local_queues: dict[str, _LocalQueue] = {}
        # Every admissible workload, routed or not, indexed by its LocalQueue key.
        self.pending: dict[WorkloadKey, WorkloadInfo] = {}
        self._by_queue: dict[str, set[WorkloadKey]] = {}
        self._backoff: list[tuple[datetime, WorkloadKey]] = []
        # The in-flight heads and the ClusterQueue each was popped from, and the ClusterQueue names in
        # the order `heads` visits them (None: to sort again): a head admitted or deleted, and a
        # cycle without heads, must not cost a walk over every ClusterQueue (1,000 in upstream's
        # large-scale config).
        self._inflight: dict[WorkloadKey, str] = {}
        self._names: list[str] | None = None
        # Admission fair sharing: a LocalQueue's (`namespace/name`) usage; None when it is off.
        self.fs_usage: Callable[[str], float] | None = None

    # -- helpers -------------------------------------------------------------------------------
    def _cq_of(self, wl: WorkloadInfo) -> tuple[_LocalQueue | None, _ClusterQueueQueue | None]:
        lq = self.local_queues.get(f"{wl.namespace}/{wl.queue_name}")
        if lq is None:
            return None, None
        return lq, self.cluster_queues.get(lq.spec.cluster_queue)

    def cluster_queue_of(self, wl: WorkloadInfo) -> str | None:
        """The ClusterQueue `wl`'s LocalQueue routes to (None: no such LocalQueue)."""
        lq = self.local_queues.get(f"{wl.namespace}/{wl.queue_name}")
        return None if lq is None else lq.spec.cluster_queue

    def _namespace_matches(self, cq: _ClusterQueueQueue, namespace: str) -> bool:
        sel = cq.spec.namespace_selector
        labels = self._namespaces.get(namespace)
        return sel is not None and labels is not None and sel.matches(labels)

    @staticmethod
    def _is_parent(cq: _ClusterQueueQueue | None, wl: WorkloadInfo) -> bool:
        return cq is not None and cq.spec.concurrent_admission is not None and not wl.is_variant

    def _park(self, cq: _ClusterQueueQueue, wl: WorkloadInfo) -> None:
        cq.in_heap.pop(wl.key, None)
        cq.inadmissible[wl.key] = wl
        if wl.requeue_at is not None:
            heapq.heappush(self._backoff, (wl.requeue_at, wl.key))

    def _push_or_update(self, cq: _ClusterQueueQueue, wl: WorkloadInfo, now: datetime) -> None:
        if cq.inflight == wl.key:
            return
        old = cq.inadmissible.get(wl.key)
        if old is not None and _same_for_queueing(old, wl):
            cq.inadmissible[wl.key] = wl
            return
        if not wl.backoff_expired(now):
            self._park(cq, wl)
            return
        if cq.best_effort and wl.key not in cq.in_heap and wl.scheduling_hash in cq.bulk_moved:
            self._park(cq, wl)  # its equivalence class failed since the last requeue
            return
        cq.push(wl)

    def _remove_from_queues(self, key: WorkloadKey) -> None:
        wl = self.pending.get(key)
        if wl is None:
            return
        lq, cq = self._cq_of(wl)
        if lq is not None:
            lq.items.discard(key)
        if cq is not None:
            cq.discard(key)
            if cq.sticky == key:
                cq.sticky = None

    # -- workload events -----------------------------------------------------------------------
    def upsert_workload(self, wl: WorkloadInfo, now: datetime) -> None:
        """Queue an admissible workload (or drop one that is no longer admissible)."""
        self.delete_workload(wl.key, keep_inflight=True)
        if not wl.is_admissible_for_queue():
            return
        self.pending[wl.key] = wl
        self._by_queue.setdefault(f"{wl.namespace}/{wl.queue_name}", set()).add(wl.key)
        lq, cq = self._cq_of(wl)
        if lq is None or self._is_parent(cq, wl):
            return
        lq.items.add(wl.key)
        if cq is not None:
            self._push_or_update(cq, wl, now)

    def delete_workload(self, key: WorkloadKey, *, keep_inflight: bool = False) -> WorkloadInfo | None:
        wl = self.pending.get(key)
        if wl is None:
            return None
        self._remove_from_queues(key)
        del self.pending[key]
        q = self._by_queue.get(f"{wl.namespace}/{wl.queue_name}")
        if q is not None:
            q.discard(key)
        if not keep_inflight and (name := self._inflight.get(key)) is not None:
            self._clear_inflight(name, key)
        return wl

    def _clear_inflight(self, cluster_queue: str, key: WorkloadKey) -> None:
        """`key` is no longer the in-flight head of `cluster_queue` (if it was)."""
        cq = self.cluster_queues.get(cluster_queue)
        if cq is not None and cq.inflight == key:
            cq.inflight = None
        if self._inflight.get(key) == cluster_queue:
            del self._inflight[key]

    # -- queue events --------------------------------------------------------------------------
    def upsert_cluster_queue(self, spec: model.ClusterQueueSpec, *, active: bool, now: datetime) -> None:
        """Add or update a ClusterQueue; a new one receives every LocalQueue pointing at it."""
        cq = self.cluster_queues.get(spec.name)
        if cq is not None:
            cq.spec = spec
            cq.active = active
            return
        cq = _ClusterQueueQueue(spec, active=active)
        self.cluster_queues[spec.name] = cq
        self._names = None
        for lq in self.local_queues.values():
            if lq.spec.cluster_queue == spec.name:
                for key in sorted(lq.items):
                    if self._is_parent(cq, self.pending[key]):
                        lq.items.discard(key)
                    else:
                        self._push_or_update(cq, self.pending[key], now)

    def set_cluster_queue_active(self, name: str, active: bool) -> None:
        cq = self.cluster_queues.get(name)
        if cq is not None:
            cq.active = active

    def delete_cluster_queue(self, name: str) -> None:
        self.cluster_queues.pop(name, None)
        self._names = None

    def upsert_local_queue(self, spec: model.LocalQueueSpec, now: datetime) -> None:
        """A stopped LocalQueue is removed from the manager; otherwise its workloads are queued."""
        old = self.local_queues.get(spec.key)
        if (
            old is not None
            and old.spec.cluster_queue == spec.cluster_queue
            and spec.stop_policy == model.StopPolicy.NONE
        ):
            old.spec = spec
            return
        self.delete_local_queue(spec.key)
        if spec.stop_policy != model.StopPolicy.NONE:
            return
        lq = _LocalQueue(spec)
        self.local_queues[spec.key] = lq
        cq = self.cluster_queues.get(spec.cluster_queue)
        for key in sorted(self._by_queue.get(spec.key, ())):
            if self._is_parent(cq, self.pending[key]):
                continue
            lq.items.add(key)
            if cq is not None:
                self._push_or_update(cq, self.pending[key], now)

    def delete_local_queue(self, key: str) -> None:
        lq = self.local_queues.pop(key, None)
        if lq is None:
            return
        cq = self.cluster_queues.get(lq.spec.cluster_queue)
        if cq is not None:
            for wk in lq.items:
                cq.discard(wk)

    # -- scheduling ----------------------------------------------------------------------------
    def heads(self, now: datetime) -> list[Head]:
        """Pop one workload from every active ClusterQueue (sorted by name for determinism)."""
        self._expire_backoffs(now)
        out = []
        if self._names is None:
            self._names = sorted(self.cluster_queues)
        for name in self._names:
            cq = self.cluster_queues[name]
            if not cq.in_heap or not cq.active or cq.inflight is not None:
                continue  # nothing to pop (`pop` and `pop_fair` return only what `in_heap` holds)
            wl = cq.pop_fair(self.fs_usage) if self.uses_fair_order(name) and self.fs_usage else cq.pop()
            if wl is None:
                continue
            cq.pop_cycle += 1
            cq.inflight = wl.key
            self._inflight[wl.key] = name
            lq, _ = self._cq_of(wl)
            if lq is not None:
                lq.items.discard(wl.key)
            out.append(Head(wl, name))
        return out

    def uses_fair_order(self, name: str) -> bool:
        """Admission fair sharing is on and the ClusterQueue opted in (`afs.ResourceWeights`)."""
        cq = self.cluster_queues.get(name)
        return (
            self.fs_usage is not None and cq is not None and cq.spec.admission_mode == model.AdmissionMode.USAGE_BASED
        )

    def _expire_backoffs(self, now: datetime) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, key = heapq.heappop(self._backoff)
            wl = self.pending.get(key)
            if wl is None or not wl.backoff_expired(now):
                continue
            _, cq = self._cq_of(wl)
            if cq is not None and key in cq.inadmissible:
                cq.push(wl)

    def requeue(
        self,
        key: WorkloadKey,
        cluster_queue: str,
        reason: RequeueReason,
        now: datetime,
        *,
        untried_flavors: bool = False,
    ) -> None:
        """Put the in-flight head back after a failed attempt (`RequeueIfNotPresent`)."""
        self._clear_inflight(cluster_queue, key)
        wl = self.pending.get(key)
        if wl is None:
            return
        lq, cq = self._cq_of(wl)
        if lq is None or cq is None:
            return
        lq.items.add(key)
        if key in cq.in_heap or key in cq.inadmissible:
            return
        if cq.spec.queueing_strategy == model.QueueingStrategy.STRICT_FIFO:
            immediate = reason != RequeueReason.NAMESPACE_MISMATCH
        else:
            immediate = reason in _IMMEDIATE_BEST_EFFORT
        if wl.backoff_expired(now) and (immediate or cq.queue_inadmissible_cycle >= cq.pop_cycle or untried_flavors):
            cq.push(wl)
            return
        self._park(cq, wl)
        if self._equivalence_hashing and wl.scheduling_hash and reason in _BULK_MOVE_REASONS and cq.best_effort:
            cq.bulk_move(wl.scheduling_hash)

    def admitted(self, key: WorkloadKey, cluster_queue: str) -> None:
        """The in-flight head was assumed admitted: it leaves the pending queues."""
        self._clear_inflight(cluster_queue, key)
        cq = self.cluster_queues.get(cluster_queue)
        if cq is not None and cq.sticky == key:
            cq.sticky = None
        self.delete_workload(key)

    def set_sticky(self, key: WorkloadKey, cluster_queue: str) -> None:
        """Remember a preemptor waiting for its victims; BestEffortFIFO pops it first."""
        cq = self.cluster_queues.get(cluster_queue)
        if cq is not None:
            cq.sticky = key

    def queue_inadmissible(self, cluster_queues: Iterable[str], now: datetime) -> None:
        """Move parked workloads back to the heap (namespace still matching, backoff expired)."""
        for name in cluster_queues:
            cq = self.cluster_queues.get(name)
            if cq is None:
                continue
            cq.queue_inadmissible_cycle = cq.pop_cycle
            cq.bulk_moved.clear()
            matches: dict[str, bool] = {}  # per namespace: the selector is matched once per requeue
            for wl in list(cq.inadmissible.values()):  # the heap orders them: no need to sort
                ok = matches.get(wl.namespace)
                if ok is None:
                    ok = matches[wl.namespace] = self._namespace_matches(cq, wl.namespace)
                if ok and wl.backoff_expired(now):
                    cq.push(wl)

    # -- counts --------------------------------------------------------------------------------
    def pending_in_cluster_queue(self, name: str) -> tuple[int, int]:
        """(active, inadmissible) pending counts; the in-flight head is excluded."""
        cq = self.cluster_queues.get(name)
        if cq is None:
            return 0, 0
        return len(cq.in_heap), len(cq.inadmissible)

    def pending_requests_in_cluster_queue(self, name: str) -> dict[str, int]:
        """Requests summed over the pending workloads, active and inadmissible, by resource (upstream's
        `pendingResourcesTotal`, from each workload's `TotalRequests`: per pod, times the podSet's count
        less its reclaimable pods); no flavor yet, so none per flavor."""
        cq = self.cluster_queues.get(name)
        out: dict[str, int] = {}
        if cq is None:
            return out
        for wl in (*(info for _, info in cq.in_heap.values()), *cq.inadmissible.values()):
            for requests in wl.pod_set_requests():
                for res, amount in requests.items():
                    out[res] = out.get(res, 0) + amount
        return out

    def dump(self) -> dict[str, list[WorkloadKey]]:
        """Keys in each ClusterQueue's active heap, sorted (`Manager.Dump`); empty queues omitted."""
        return {name: sorted(cq.in_heap) for name, cq in sorted(self.cluster_queues.items()) if cq.in_heap}

    def dump_inadmissible(self) -> dict[str, list[WorkloadKey]]:
        """Keys parked as inadmissible per ClusterQueue, sorted (`Manager.DumpInadmissible`)."""
        return {name: sorted(cq.inadmissible) for name, cq in sorted(self.cluster_queues.items()) if cq.inadmissible}

    def pending_in_local_queue(self, key: str) -> int:
        lq = self.local_queues.get(key)
        return 0 if lq is None else len(lq.items)


def _same_for_queueing(old: WorkloadInfo, new: WorkloadInfo) -> bool:
    """Nothing that could change the scheduling outcome differs (stay inadmissible)."""
    return (
        old.generation == new.generation
        and old.pod_sets == new.pod_sets
        and old.priority == new.priority
        and old.reclaimable == new.reclaimable
        and old.conditions.get("Evicted") == new.conditions.get("Evicted")
        and old.conditions.get("Requeued") == new.conditions.get("Requeued")
        and old.requeue_at == new.requeue_at
        and old.closed_preemption_gate == new.closed_preemption_gate
        # A LimitRange change that lifts the refusal retries at once (upstream compares only the
        # adjusted spec, so a removed max waits for the next requeue).
        and old.limit_range_errors == new.limit_range_errors
    )
