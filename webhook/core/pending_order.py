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

The one difference from upstream: the BestEffortFIFO "sticky" preemptor (a scheduler-private
pin that upstream's leader shows first) is not known here; it is ranked by its own key.
"""

from __future__ import annotations

from collections.abc import Mapping
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

    # -- reads ---------------------------------------------------------------------------------
    def _rank_in_local_queue(self, wl: PendingWorkload) -> int:
        return int(self._by_local_queue[wl.local_queue_key].index(wl.order))

    def cluster_queue_page(self, name: str, *, offset: int, limit: int) -> list[Positioned] | None:
        """Items `offset`..`offset+limit` of the ClusterQueue; None if it does not exist."""
        cq_list = self._by_cluster_queue.get(name)
        if cq_list is None:
            return None
        out = []
        for i, order in enumerate(cq_list.islice(offset, offset + limit)):
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
        return [
            Positioned(self._workloads[order[-1]], int(cq_list.index(order)), offset + i)
            for i, order in enumerate(lq_list.islice(offset, offset + limit))
        ]
