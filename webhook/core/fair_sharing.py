"""Fair sharing: dominant resource share (DRS), the admission tournament, preemption target order.

Mirrors `pkg/cache/scheduler/fair_sharing.go`, `pkg/scheduler/fair_sharing_iterator.go` and
`pkg/scheduler/preemption/fairsharing/{ordering,target,least_common_ancestor,strategy}.go`
(upstream commit ff69552e79). Upstream computes shares in float64; here ratios are exact
Fractions (borrowed x 1000 / lendable / weight), so comparisons never depend on rounding, and
`weighted_share` rounds up exactly as `math.Ceil` does for representable values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from webhook.core.resource_node import ClusterQueueNode, CohortNode, QuotaNode, potential_available
from webhook.core.resources import FlavorResource

if TYPE_CHECKING:
    from webhook.core.workload import WorkloadInfo

__all__ = [
    "DRS",
    "MAX_INT64",
    "TargetOrdering",
    "compare_drs",
    "dominant_resource_share",
    "less_than_initial_share",
    "less_than_or_equal_to_final_share",
    "run_tournament",
]

MAX_INT64 = 2**63 - 1


@dataclass(frozen=True, slots=True)
class DRS:
    """A node's dominant resource share; `ratio` is unweighted (x1000)."""

    fair_weight: Fraction = Fraction(1)
    ratio: Fraction = Fraction(0)
    dominant_resource: str = ""
    borrowing: bool = False
    borrowed_frs: tuple[FlavorResource, ...] = ()

    def zero_weight_borrows(self) -> bool:
        return self.fair_weight == 0 and self.ratio != 0

    def precise_share(self) -> Fraction | None:
        """None stands for +Inf (borrowing with weight 0)."""
        if self.ratio == 0:
            return Fraction(0)
        if self.fair_weight == 0:
            return None
        return self.ratio / self.fair_weight

    def weighted_share(self) -> int:
        """status.fairSharing.weightedShare: ceil of the share, MaxInt64 for +Inf."""
        s = self.precise_share()
        if s is None:
            return MAX_INT64
        return -((-s.numerator) // s.denominator)

    def is_borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed_frs)


NEGATIVE_DRS = DRS(ratio=Fraction(-1))


def compare_drs(a: DRS, b: DRS) -> int:
    """-1/0/1; zero-weight borrowers sort after everyone else."""
    az, bz = a.zero_weight_borrows(), b.zero_weight_borrows()
    if az and bz:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if az:
        return 1
    if bz:
        return -1
    sa, sb = a.precise_share(), b.precise_share()
    assert sa is not None and sb is not None
    return (sa > sb) - (sa < sb)


def _lendable(node: QuotaNode) -> dict[str, int]:
    root = node.root()
    out: dict[str, int] = {}
    for fr in root.subtree_quota:
        out[fr.resource] = out.get(fr.resource, 0) + potential_available(node, fr)
    return out


def dominant_resource_share(node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None) -> DRS:
    """DRS of `node` with an optional extra request added to its usage."""
    if node.parent is None:
        return DRS(node.fair_weight)
    borrowed: dict[str, int] = {}
    frs = []
    for fr, quota in node.subtree_quota.items():
        b = (extra.get(fr, 0) if extra else 0) + node.usage.get(fr, 0) - quota
        if b > 0:
            borrowed[fr.resource] = borrowed.get(fr.resource, 0) + b
            frs.append(fr)
    if not borrowed:
        return DRS(node.fair_weight)
    lendable = _lendable(node.parent)
    ratio = Fraction(0)
    dominant = ""
    for res in sorted(borrowed):
        lr = lendable.get(res, 0)
        if lr > 0:
            r = Fraction(borrowed[res] * 1000, lr)
            if r > ratio:
                ratio, dominant = r, res
    return DRS(node.fair_weight, ratio, dominant, True, tuple(sorted(frs)))


def less_than_or_equal_to_final_share(preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    return compare_drs(preemptor_new, target_new) <= 0


def less_than_initial_share(preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    return compare_drs(preemptor_new, target_old) < 0


# -- admission tournament ---------------------------------------------------------------------


def run_tournament(
    root: CohortNode,
    by_cq: Mapping[str, WorkloadInfo],
    usage_of: Callable[[WorkloadInfo], Mapping[FlavorResource, int]],
    add: Callable[[ClusterQueueNode, Mapping[FlavorResource, int]], None],
    remove: Callable[[ClusterQueueNode, Mapping[FlavorResource, int]], None],
) -> str | None:
    """Pick the ClusterQueue whose entry wins the cohort-tree tournament; None if none under root.

    At each cohort, children's candidates compare by: not borrowing on the requested frs first,
    lower DRS of the child node (with the candidate's usage added), higher priority, older
    queue-order timestamp, then ClusterQueue name.
    """
    drs: dict[tuple[str, str], DRS] = {}
    requested: dict[str, Mapping[FlavorResource, int]] = {}
    for cq in root.subtree_cluster_queues():
        wl = by_cq.get(cq.name)
        if wl is None:
            continue
        usage = usage_of(wl)
        requested[cq.name] = usage
        add(cq, usage)
        share = dominant_resource_share(cq)
        for anc in cq.path_to_root():
            drs[(anc.name, cq.name)] = share
            share = dominant_resource_share(anc)
        remove(cq, usage)

    def less(a: str, b: str, parent: str) -> bool:
        da, db = drs[(parent, a)], drs[(parent, b)]
        ba, bb = da.is_borrowing_on(requested[a]), db.is_borrowing_on(requested[b])
        if ba != bb:
            return not ba
        c = compare_drs(da, db)
        if c != 0:
            return c < 0
        wa, wb = by_cq[a], by_cq[b]
        if wa.priority != wb.priority:
            return wa.priority > wb.priority
        if wa.queue_order_timestamp != wb.queue_order_timestamp:
            return wa.queue_order_timestamp < wb.queue_order_timestamp
        return a < b

    def play(cohort: CohortNode) -> str | None:
        candidates = [w for c in sorted(cohort.child_cohorts) if (w := play(cohort.child_cohorts[c])) is not None]
        candidates += [c for c in sorted(cohort.child_cqs) if c in by_cq]
        if not candidates:
            return None
        best = candidates[0]
        for cur in candidates[1:]:
            if less(cur, best, cohort.name):
                best = cur
        return best

    return play(root)


# -- preemption target ordering ---------------------------------------------------------------


@dataclass(slots=True)
class TargetOrdering:
    """Walks the cohort tree by DRS to pick the next ClusterQueue to take a victim from."""

    preemptor_cq: ClusterQueueNode
    candidates: dict[str, list[WorkloadInfo]]
    candidate_key: Callable[[WorkloadInfo], tuple[object, ...]]
    ancestors: set[int] = field(default_factory=set)
    pruned_cqs: set[str] = field(default_factory=set)
    pruned_cohorts: set[str] = field(default_factory=set)

    @classmethod
    def build(
        cls,
        preemptor_cq: ClusterQueueNode,
        candidates: Sequence[WorkloadInfo],
        key: Callable[[WorkloadInfo], tuple[object, ...]],
    ) -> TargetOrdering:
        by_cq: dict[str, list[WorkloadInfo]] = {}
        for c in candidates:
            by_cq.setdefault(c.admission_cluster_queue, []).append(c)
        t = cls(preemptor_cq, by_cq, key)
        t.ancestors = {id(a) for a in preemptor_cq.path_to_root()}
        return t

    def has_workload(self, cq: ClusterQueueNode) -> bool:
        return bool(self.candidates.get(cq.name))

    def pop(self, cq: ClusterQueueNode) -> WorkloadInfo:
        return self.candidates[cq.name].pop(0)

    def drop(self, cq: ClusterQueueNode) -> None:
        self.pruned_cqs.add(cq.name)

    def __iter__(self) -> Iterator[ClusterQueueNode]:
        cq = self.preemptor_cq
        if cq.parent is None:
            while cq.name not in self.pruned_cqs and self.has_workload(cq):
                yield cq
            return
        root = cq.root()
        assert isinstance(root, CohortNode)
        while root.name not in self.pruned_cohorts:
            nxt = self._next(root)
            if nxt is not None:
                yield nxt

    def _next(self, cohort: CohortNode) -> ClusterQueueNode | None:
        best_cq: ClusterQueueNode | None = None
        best_cq_drs = NEGATIVE_DRS
        for name in sorted(cohort.child_cqs):
            cq = cohort.child_cqs[name]
            if name in self.pruned_cqs:
                continue
            d = dominant_resource_share(cq)
            if (not d.borrowing and cq is not self.preemptor_cq) or not self.has_workload(cq):
                self.pruned_cqs.add(name)
                continue
            c = compare_drs(d, best_cq_drs)
            if c == 0 and best_cq is not None:
                if self.candidate_key(self.candidates[name][0]) < self.candidate_key(self.candidates[best_cq.name][0]):
                    best_cq = cq
            elif c > 0 or best_cq is None:
                best_cq, best_cq_drs = cq, d
        best_co: CohortNode | None = None
        best_co_drs = NEGATIVE_DRS
        for name in sorted(cohort.child_cohorts):
            co = cohort.child_cohorts[name]
            if name in self.pruned_cohorts:
                continue
            d = dominant_resource_share(co)
            if not d.borrowing and id(co) not in self.ancestors:
                self.pruned_cohorts.add(name)
            elif compare_drs(d, best_co_drs) >= 0:
                best_co, best_co_drs = co, d
        if best_co is None and best_cq is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        if best_co is not None and (best_cq is None or compare_drs(best_co_drs, best_cq_drs) >= 0):
            return self._next(best_co)
        return best_cq


def almost_lca_shares(preemptor_cq: ClusterQueueNode, target_cq: ClusterQueueNode) -> tuple[QuotaNode, QuotaNode]:
    """The children of the lowest common ancestor on the preemptor's and the target's side."""
    ancestors = {id(a) for a in preemptor_cq.path_to_root()}
    lca: CohortNode | None = None
    for a in target_cq.path_to_root():
        if id(a) in ancestors:
            lca = a
            break
    assert lca is not None, "ClusterQueues in one tree share an ancestor"

    def almost(cq: ClusterQueueNode) -> QuotaNode:
        node: QuotaNode = cq
        for a in cq.path_to_root():
            if a is lca:
                return node
            node = a
        raise AssertionError("lca is an ancestor")

    return almost(preemptor_cq), almost(target_cq)
