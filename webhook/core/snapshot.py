"""Per-cycle copy of the cache: usage maps copied, specs and quotas shared.

Mirrors `pkg/cache/scheduler/snapshot.go` and `clusterqueue_snapshot.go` (upstream commit
ff69552e79). The scheduler reads and changes only this copy. Simulations (remove candidates,
add an entry's usage) go through context managers that restore the snapshot on exit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from webhook.core import model, resource_node
from webhook.core.resource_node import ClusterQueueNode, CohortNode
from webhook.core.resources import FlavorResource
from webhook.core.topology import TopologySnapshot
from webhook.core.workload import WorkloadInfo

if TYPE_CHECKING:
    from webhook.core.cache import Cache

__all__ = ["Snapshot", "take_snapshot"]


class Snapshot:
    """The scheduler's private, mutable view of one cycle."""

    __slots__ = ("cluster_queues", "cohorts", "inactive", "namespaces", "resource_flavors", "topology")

    def __init__(
        self,
        cluster_queues: dict[str, ClusterQueueNode],
        cohorts: dict[str, CohortNode],
        resource_flavors: Mapping[str, model.ResourceFlavorSpec],
        inactive: frozenset[str],
        namespaces: Mapping[str, Mapping[str, str]],
        topology: TopologySnapshot | None = None,
    ) -> None:
        self.cluster_queues = cluster_queues
        self.cohorts = cohorts
        self.resource_flavors = resource_flavors
        self.inactive = inactive
        self.namespaces = namespaces
        # TAS flavors' nodes and usage; None without a topology-aware flavor (or the gate off).
        self.topology = topology

    # -- usage moves ---------------------------------------------------------------------------
    def add_usage(self, cq: ClusterQueueNode, usage: Mapping[FlavorResource, int]) -> None:
        for fr, v in usage.items():
            resource_node.add_usage(cq, fr, v)

    def remove_usage(self, cq: ClusterQueueNode, usage: Mapping[FlavorResource, int]) -> None:
        for fr, v in usage.items():
            resource_node.remove_usage(cq, fr, v)

    def remove_workload(self, wl: WorkloadInfo) -> None:
        cq = self.cluster_queues.get(wl.admission_cluster_queue)
        if cq is not None and cq.workloads.pop(wl.key, None) is not None:
            self.remove_usage(cq, wl.usage())
            if self.topology is not None:
                self.topology.remove_workload(wl)

    def add_workload(self, wl: WorkloadInfo) -> None:
        cq = self.cluster_queues.get(wl.admission_cluster_queue)
        if cq is not None and wl.key not in cq.workloads:
            cq.workloads[wl.key] = wl
            self.add_usage(cq, wl.usage())
            if self.topology is not None:
                self.topology.add_workload(wl)

    @contextmanager
    def simulated_removal(self, workloads: Iterable[WorkloadInfo]) -> Iterator[None]:
        """Remove workloads (usage and membership) for the duration of the block."""
        removed = []
        for wl in workloads:
            cq = self.cluster_queues.get(wl.admission_cluster_queue)
            if cq is not None and wl.key in cq.workloads:
                self.remove_workload(wl)
                removed.append(wl)
        try:
            yield
        finally:
            for wl in reversed(removed):
                self.add_workload(wl)

    @contextmanager
    def simulated_usage(
        self, cq: ClusterQueueNode, usage: Mapping[FlavorResource, int], *, remove: bool = False
    ) -> Iterator[None]:
        """Add (or remove) a usage map for the duration of the block."""
        if remove:
            self.remove_usage(cq, usage)
        else:
            self.add_usage(cq, usage)
        try:
            yield
        finally:
            if remove:
                self.add_usage(cq, usage)
            else:
                self.remove_usage(cq, usage)


def _clone_cq(cq: ClusterQueueNode) -> ClusterQueueNode:
    c = ClusterQueueNode.__new__(ClusterQueueNode)
    c.name = cq.name
    c.quotas = cq.quotas
    c.subtree_quota = cq.subtree_quota
    c.usage = dict(cq.usage)
    c.parent = None
    c.fair_weight = cq.fair_weight
    c.spec = cq.spec
    c.workloads = dict(cq.workloads)
    c.allocatable_generation = cq.allocatable_generation
    return c


def take_snapshot(cache: Cache, *, active_only: bool = True) -> Snapshot:
    """Copy the cache for one cycle. Cost is O(nodes + quota-holding workloads), not pending ones.

    ClusterQueues that are not active, or whose cohort tree has a cycle, are left out; inactive
    ones still count in their cohort's aggregates, as upstream. `active_only=False` keeps the
    inactive ones, for a reader whose cache lacks what activity depends on (admission checks,
    topologies) and who learns it from the ClusterQueue's status instead.
    """
    cohorts: dict[str, CohortNode] = {}
    for name, co in cache.forest.cohorts.items():
        c = CohortNode(name, co.quotas, co.fair_weight)
        c.subtree_quota = co.subtree_quota
        c.usage = dict(co.usage)
        c.explicit = co.explicit
        cohorts[name] = c
    for name, co in cache.forest.cohorts.items():
        if co.parent is not None:
            p = cohorts[co.parent.name]
            cohorts[name].parent = p
            p.child_cohorts[name] = cohorts[name]
    cqs: dict[str, ClusterQueueNode] = {}
    for name, node in cache.cluster_queues.items():
        if name in cache.forest.cycle_cqs or (active_only and not cache.readiness(name).active):
            continue
        cq = _clone_cq(node)
        if node.parent is not None:
            parent = cohorts[node.parent.name]
            cq.parent = parent
            parent.child_cqs[name] = cq
        cqs[name] = cq
    topology = cache.topology.snapshot(cache.resource_flavors) if cache.tas else None
    return Snapshot(cqs, cohorts, cache.resource_flavors, cache.forest.cycle_cqs, cache.namespaces, topology)
