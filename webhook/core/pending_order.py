"""The pending order the visibility API reads: every queued workload of a ClusterQueue, ranked.

Mirrors what upstream's visibility storage reads from the queue manager (`PendingWorkloadsInfo` and
`ClusterQueueFromLocalQueue` in `pkg/cache/queue/manager.go`, `ClusterQueue.Snapshot` in
`pkg/cache/queue/cluster_queue.go`, kueue v0.19.2): the heap, the inadmissible workloads and the one
in flight, together, in the heap's order (`ordering.queue_key`). A workload is there while it may
sit in a queue (`WorkloadInfo.is_admissible_for_queue`) and its LocalQueue exists, is not stopped
and points at a ClusterQueue that exists.

Upstream copies and sorts the whole queue on every request. Here each ClusterQueue and each
LocalQueue keeps its workloads in a sorted list updated per event, so a page of `limit` items at
any offset costs O(limit · log n), whatever the queue's length: positions come from the sorted
lists' ranks, never from walking the queue.

With admission fair sharing, a ClusterQueue that opted in ranks its Workloads by their
LocalQueue's usage first (`buildSnapshotSort`): its order is its LocalQueues' lists taken by
ascending usage, lists of equal usage merged. Positions then cost O(number of LocalQueues) more.

The differences from upstream: the BestEffortFIFO "sticky" preemptor (a scheduler-private pin that
upstream's leader shows first) is not known here; it is ranked by its own key. A LocalQueue's usage
is the one its status shows (`admissionFairSharingStatus`, written at each sample), without the
entry penalties the leader holds in memory until the next sample.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple

from sortedcontainers import SortedList

from webhook.core import ordering
from webhook.core.workload import WorkloadInfo, WorkloadKey, parse_workload

__all__ = ["OrderKey", "OwnerRef", "PendingOrder", "PendingWorkload", "Positioned", "pending_entry", "pending_workload"]

OrderKey = tuple[int, int, timedelta, str, str]


class OwnerRef(NamedTuple):
    """The four fields of an owner reference the API shows (upstream drops controller/blockOwnerDeletion)."""

    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    """What the visibility API shows of one pending workload, and where it sorts."""

    key: WorkloadKey
    namespace: str
    name: str
    local_queue: str
    priority: int
    creation_timestamp: str
    owner_references: tuple[OwnerRef, ...]
    order: OrderKey

    @property
    def local_queue_key(self) -> str:
        return f"{self.namespace}/{self.local_queue}"


class Positioned(NamedTuple):
    """A pending workload and its 0-based ranks in its ClusterQueue and its LocalQueue."""

    workload: PendingWorkload
    in_cluster_queue: int
    in_local_queue: int


def pending_workload(obj: Mapping[str, Any], *, requeue_by_eviction: bool = True) -> PendingWorkload | None:
    """The Workload as a queue entry, or None when it may not sit in a queue (reserved, finished,
    inactive, on hold, gated)."""
    return pending_entry(parse_workload(obj, requeue_by_eviction=requeue_by_eviction), obj)


def pending_entry(info: WorkloadInfo, obj: Mapping[str, Any]) -> PendingWorkload | None:
    """As `pending_workload`, for a Workload already parsed into `info`."""
    if not info.is_admissible_for_queue():
        return None
    meta = obj.get("metadata") or {}
    owners = tuple(
        OwnerRef(
            str(o.get("apiVersion") or ""), str(o.get("kind") or ""), str(o.get("name") or ""), str(o.get("uid") or "")
        )
        for o in meta.get("ownerReferences") or ()
    )
    return PendingWorkload(
        info.key,
        info.namespace,
        info.name,
        info.queue_name,
        info.priority,
        str(meta.get("creationTimestamp") or ""),
        owners,
        ordering.queue_key(info),
    )


class PendingOrder:
    """Queued workloads by LocalQueue and by ClusterQueue, each kept sorted by `OrderKey`.

    Not thread-safe: the owner serialises updates and reads."""

    def __init__(self) -> None:
        self._workloads: dict[WorkloadKey, PendingWorkload] = {}
        # Every LocalQueue key that has workloads, whether the LocalQueue exists or not.
        self._by_local_queue: dict[str, SortedList] = {}
        # Existing, not stopped LocalQueues -> their ClusterQueue.
        self._routes: dict[str, str] = {}
        # Existing ClusterQueues -> the workloads of every LocalQueue routed to them.
        self._by_cluster_queue: dict[str, SortedList] = {}
        # Admission fair sharing: the ClusterQueues ordered by LocalQueue usage, and each
        # LocalQueue's usage (0 when unknown).
        self._fair: set[str] = set()
        self._usage: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._workloads)

    # -- updates -------------------------------------------------------------------------------
    def _cluster_queue_list(self, lq_key: str) -> SortedList | None:
        cq = self._routes.get(lq_key)
        return None if cq is None else self._by_cluster_queue.get(cq)

    def set_workload(self, key: WorkloadKey, wl: PendingWorkload | None) -> None:
        """Queue, requeue or (None) drop one workload."""
        old = self._workloads.pop(key, None)
        if old is not None:
            lq_key = old.local_queue_key
            lq_list = self._by_local_queue[lq_key]
            lq_list.remove(old.order)
            if not lq_list:
                del self._by_local_queue[lq_key]
            cq_list = self._cluster_queue_list(lq_key)
            if cq_list is not None:
                cq_list.remove(old.order)
        if wl is None:
            return
        self._workloads[key] = wl
        lq_key = wl.local_queue_key
        self._by_local_queue.setdefault(lq_key, SortedList()).add(wl.order)
        cq_list = self._cluster_queue_list(lq_key)
        if cq_list is not None:
            cq_list.add(wl.order)

    def set_local_queue(self, key: str, cluster_queue: str | None) -> None:
        """A LocalQueue `ns/name` now routes to `cluster_queue`; None when it is stopped or deleted."""
        if self._routes.get(key) == cluster_queue:
            return
        items = self._by_local_queue.get(key, ())
        old = self._cluster_queue_list(key)
        if old is not None:
            for order in items:
                old.remove(order)
        if cluster_queue is None:
            self._routes.pop(key, None)
            return
        self._routes[key] = cluster_queue
        new = self._by_cluster_queue.get(cluster_queue)
        if new is not None:
            new.update(items)

    def set_cluster_queue(self, name: str, exists: bool) -> None:
        """A ClusterQueue appeared (it collects its LocalQueues' workloads) or was deleted."""
        if not exists:
            self._by_cluster_queue.pop(name, None)
            return
        if name in self._by_cluster_queue:
            return
        merged = SortedList()
        for lq_key, cq in self._routes.items():
            if cq == name:
                merged.update(self._by_local_queue.get(lq_key, ()))
        self._by_cluster_queue[name] = merged

    def set_fair_order(self, cluster_queue: str, fair: bool) -> None:
        """Whether the ClusterQueue ranks by LocalQueue usage (admission fair sharing on, and its
        admissionScope UsageBasedAdmissionFairSharing)."""
        if fair:
            self._fair.add(cluster_queue)
        else:
            self._fair.discard(cluster_queue)

    def set_local_queue_usage(self, key: str, usage: float | None) -> None:
        """A LocalQueue's admission fair sharing usage; None forgets it."""
        if usage is None:
            self._usage.pop(key, None)
        else:
            self._usage[key] = usage

    # -- reads ---------------------------------------------------------------------------------
    def _rank_in_local_queue(self, wl: PendingWorkload) -> int:
        return int(self._by_local_queue[wl.local_queue_key].index(wl.order))

    def _usage_groups(self, cluster_queue: str) -> list[tuple[float, list[SortedList]]]:
        """The ClusterQueue's LocalQueue lists grouped by usage, lowest first."""
        groups: dict[float, list[SortedList]] = {}
        for lq_key in sorted(k for k, cq in self._routes.items() if cq == cluster_queue):
            items = self._by_local_queue.get(lq_key)
            if items:
                groups.setdefault(self._usage.get(lq_key, 0.0), []).append(items)
        return sorted(groups.items(), key=lambda g: g[0])

    def _rank_in_cluster_queue(self, cluster_queue: str, wl: PendingWorkload, cq_list: SortedList) -> int:
        if cluster_queue not in self._fair:
            return int(cq_list.index(wl.order))
        mine = self._usage.get(wl.local_queue_key, 0.0)
        rank = 0
        for usage, lists in self._usage_groups(cluster_queue):
            if usage < mine:
                rank += sum(len(lst) for lst in lists)
            elif usage == mine:
                rank += sum(int(lst.bisect_left(wl.order)) for lst in lists)
        return rank

    def _fair_orders(self, cluster_queue: str, offset: int) -> Iterator[OrderKey]:
        """The ClusterQueue's keys from `offset` on, in admission fair sharing order."""
        for _, lists in self._usage_groups(cluster_queue):
            size = sum(len(lst) for lst in lists)
            if offset >= size:
                offset -= size
                continue
            merged = lists[0] if len(lists) == 1 else heapq.merge(*lists)
            yield from itertools.islice(merged, offset, None)
            offset = 0

    def cluster_queue_page(self, name: str, *, offset: int, limit: int) -> list[Positioned] | None:
        """Items `offset`..`offset+limit` of the ClusterQueue; None if it does not exist."""
        cq_list = self._by_cluster_queue.get(name)
        if cq_list is None:
            return None
        orders = (
            itertools.islice(self._fair_orders(name, offset), limit)
            if name in self._fair
            else cq_list.islice(offset, offset + limit)
        )
        out = []
        for i, order in enumerate(orders):
            wl = self._workloads[order[-1]]
            out.append(Positioned(wl, offset + i, self._rank_in_local_queue(wl)))
        return out

    def local_queue_page(self, key: str, *, offset: int, limit: int) -> list[Positioned] | None:
        """Items `offset`..`offset+limit` of LocalQueue `ns/name`; None if it does not exist (or is
        stopped). Empty while its ClusterQueue does not exist, as upstream answers."""
        cluster_queue = self._routes.get(key)
        if cluster_queue is None:
            return None
        cq_list = self._by_cluster_queue.get(cluster_queue)
        lq_list = self._by_local_queue.get(key)
        if cq_list is None or lq_list is None:
            return []
        out = []
        for i, order in enumerate(lq_list.islice(offset, offset + limit)):
            wl = self._workloads[order[-1]]
            out.append(Positioned(wl, self._rank_in_cluster_queue(cluster_queue, wl, cq_list), offset + i))
        return out
