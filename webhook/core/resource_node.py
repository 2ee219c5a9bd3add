"""The hierarchical quota algebra: quota, subtree quota and usage per node of a cohort tree.

Mirrors `pkg/cache/scheduler/resource_node.go` and the `FindHeightOfLowestSubtreeThatFits` helper
of `pkg/scheduler/preemption/classical/hierarchical_preemption.go` (upstream commit ff69552e79).
A node is a ClusterQueue or a Cohort. Lending limits carve a "local" part out of each node's
subtree quota; only the rest is visible to the parent. `quotas` and `subtree_quota` are shared
with snapshots and replaced (never mutated) when specs change; `usage` is per copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

from webhook.core.resources import FlavorResource, ResourceQuota

if TYPE_CHECKING:
    from webhook.core.model import ClusterQueueSpec
    from webhook.core.workload import WorkloadInfo, WorkloadKey

__all__ = [
    "ClusterQueueNode",
    "CohortNode",
    "QuotaNode",
    "add_usage",
    "available",
    "borrowing_with",
    "height_of_lowest_subtree_that_fits",
    "is_within_nominal",
    "local_available",
    "potential_available",
    "quantities_fit_in_quota",
    "remove_usage",
]

_NO_QUOTA = ResourceQuota(0)


class QuotaNode:
    """Fields shared by ClusterQueue and Cohort nodes."""

    __slots__ = ("fair_weight", "name", "parent", "quotas", "subtree_quota", "usage")

    def __init__(self, name: str, quotas: Mapping[FlavorResource, ResourceQuota], fair_weight: Fraction) -> None:
        self.name = name
        self.quotas = quotas
        self.subtree_quota: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.parent: CohortNode | None = None
        self.fair_weight = fair_weight

    def quota(self, fr: FlavorResource) -> ResourceQuota:
        return self.quotas.get(fr, _NO_QUOTA)

    def path_to_root(self) -> Iterator[CohortNode]:
        """Ancestors from the parent up to the root."""
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def root(self) -> QuotaNode:
        node: QuotaNode = self
        while node.parent is not None:
            node = node.parent
        return node


class ClusterQueueNode(QuotaNode):
    """A ClusterQueue in the tree, with the workloads holding its quota."""

    __slots__ = ("allocatable_generation", "spec", "workloads")

    def __init__(self, spec: ClusterQueueSpec) -> None:
        super().__init__(spec.name, spec.quotas, spec.fair_weight)
        self.spec = spec
        self.workloads: dict[WorkloadKey, WorkloadInfo] = {}
        self.allocatable_generation = 0
        self.subtree_quota = {fr: q.nominal for fr, q in spec.quotas.items()}


class CohortNode(QuotaNode):
    """A Cohort (explicit or implicit) with its children, kept sorted by name for determinism."""

    __slots__ = ("child_cohorts", "child_cqs", "explicit")

    def __init__(self, name: str, quotas: Mapping[FlavorResource, ResourceQuota], fair_weight: Fraction) -> None:
        super().__init__(name, quotas, fair_weight)
        self.child_cqs: dict[str, ClusterQueueNode] = {}
        self.child_cohorts: dict[str, CohortNode] = {}
        self.explicit = False

    def children(self) -> Iterable[QuotaNode]:
        yield from (self.child_cohorts[k] for k in sorted(self.child_cohorts))
        yield from (self.child_cqs[k] for k in sorted(self.child_cqs))

    def subtree_cluster_queues(self) -> Iterator[ClusterQueueNode]:
        for k in sorted(self.child_cohorts):
            yield from self.child_cohorts[k].subtree_cluster_queues()
        for k in sorted(self.child_cqs):
            yield self.child_cqs[k]

    def height(self) -> int:
        """Leaf cohort of ClusterQueues = 1, +1 per cohort level above."""
        h = 1 if (self.child_cqs or self.child_cohorts) else 0
        for c in self.child_cohorts.values():
            h = max(h, c.height() + 1)
        return h


def local_quota(node: QuotaNode, fr: FlavorResource) -> int:
    """The part of the subtree quota that is never lent to the parent."""
    ll = node.quota(fr).lending_limit
    if ll is None:
        return 0
    return max(0, node.subtree_quota.get(fr, 0) - ll)


def local_available(node: QuotaNode, fr: FlavorResource) -> int:
    return max(0, local_quota(node, fr) - node.usage.get(fr, 0))


def _available(node: QuotaNode, fr: FlavorResource) -> int:
    if node.parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = _available(node.parent, fr)
    bl = node.quota(fr).borrowing_limit
    if bl is not None:
        lq = local_quota(node, fr)
        stored = node.subtree_quota.get(fr, 0) - lq
        used = max(0, node.usage.get(fr, 0) - lq)
        parent_available = min(stored - used + bl, parent_available)
    return local_available(node, fr) + parent_available


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """Unused quota reachable from `node`, borrowing included, never negative."""
    return max(0, _available(node, fr))


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """Largest amount `node` could ever get for `fr`, ignoring usage."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0)
    avail = local_quota(node, fr) + potential_available(node.parent, fr)
    bl = node.quota(fr).borrowing_limit
    if bl is not None:
        avail = min(node.subtree_quota.get(fr, 0) + bl, avail)
    return avail


def add_usage(node: QuotaNode, fr: FlavorResource, val: int) -> None:
    """Add usage; whatever exceeds the node's local quota is stored in the parent."""
    la = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) + val
    if node.parent is not None and val > la:
        add_usage(node.parent, fr, val - la)


def remove_usage(node: QuotaNode, fr: FlavorResource, val: int) -> None:
    """Inverse of add_usage."""
    stored = node.usage.get(fr, 0) - local_quota(node, fr)
    nv = node.usage.get(fr, 0) - val
    if nv:
        node.usage[fr] = nv
    else:
        node.usage.pop(fr, None)
    if stored <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(val, stored))


def borrowing_with(node: QuotaNode, fr: FlavorResource, val: int) -> bool:
    """Whether usage + val would exceed the node's subtree quota (nominal for a ClusterQueue)."""
    return node.subtree_quota.get(fr, 0) < node.usage.get(fr, 0) + val


def is_within_nominal(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    return all(node.subtree_quota.get(fr, 0) >= node.usage.get(fr, 0) for fr in frs)


def quantities_fit_in_quota(
    node: QuotaNode, requests: Mapping[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    """Whether requests fit in the node's subtree quota, and what remains after its local part."""
    fits = True
    remaining: dict[FlavorResource, int] = {}
    for fr, v in requests.items():
        if node.subtree_quota.get(fr, 0) < node.usage.get(fr, 0) + v:
            fits = False
        remaining[fr] = max(0, v - local_available(node, fr))
    return fits, remaining


def height_of_lowest_subtree_that_fits(cq: ClusterQueueNode, fr: FlavorResource, val: int) -> tuple[int, bool]:
    """Borrowing level of `val` and whether quota may be reclaimed lower than the root."""
    if cq.parent is None or not borrowing_with(cq, fr, val):
        return 0, cq.parent is not None
    remaining = val - local_available(cq, fr)
    for node in cq.path_to_root():
        if not borrowing_with(node, fr, remaining):
            return node.height(), node.parent is not None
        remaining -= local_available(node, fr)
    root = cq.root()
    assert isinstance(root, CohortNode)
    return root.height(), False
