"""Preemption: choose the minimal set of victims that lets a workload fit.

Mirrors `pkg/scheduler/preemption/{preemption,preemption_oracle}.go`,
`classical/{candidate_generator,hierarchical_preemption}.go` and `common/*.go` (upstream commit
ff69552e79). `get_targets` is pure computation on the snapshot: every simulated removal is undone
before it returns. Issuing the evictions is the worker's job (see `conditions.evicted_by_preemption`).

With admission fair sharing, candidates of one UsageBasedAdmissionFairSharing ClusterQueue are
taken from the LocalQueue with the highest usage first (`CandidatesOrdering`, criterion 2).
Upstream compares usage only between two candidates of the same ClusterQueue, which is not a total
order once a list mixes ClusterQueues (a cycle through priority is possible); here usage ranks a
list only when all its candidates share one ClusterQueue, and each ClusterQueue's own candidates
in fair-sharing preemption. The ClusterQueue picked next there is chosen without it, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum

from webhook.api.constants import PreemptionReason
from webhook.core import fair_sharing, ordering, resource_node
from webhook.core.flavor_assigner import Assignment, PreemptionPossibility, topology_requests
from webhook.core.model import PreemptionPolicy
from webhook.core.resource_node import ClusterQueueNode, CohortNode, QuotaNode
from webhook.core.resources import FlavorResource
from webhook.core.snapshot import Snapshot
from webhook.core.workload import WorkloadInfo

__all__ = ["Oracle", "Preemptor", "Target", "cq_path", "satisfies_policy"]


@dataclass(frozen=True, slots=True)
class Target:
    """A victim, why it is preempted, and the ClusterQueue it holds quota in."""

    workload: WorkloadInfo
    reason: PreemptionReason
    cluster_queue: str


class _Variant(IntEnum):
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4

    def reason(self) -> PreemptionReason:
        if self == _Variant.WITHIN_CQ:
            return PreemptionReason.IN_CLUSTER_QUEUE
        if self == _Variant.RECLAIM_WHILE_BORROWING:
            return PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING
        return PreemptionReason.IN_COHORT_RECLAMATION


def satisfies_policy(
    preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str, buffer: timedelta = timedelta(0)
) -> bool:
    """LowerPriority / LowerOrNewerEqualPriority / Any / Never, on effective priorities; with a
    `buffer` (gate SchedulerTimestampPreemptionBuffer), an equal-priority candidate counts as newer
    only when queued more than that after the preemptor
    (`pkg/scheduler/preemption/common/preemption_policy.go`)."""
    if policy == PreemptionPolicy.LOWER_PRIORITY:
        return candidate.priority < preemptor.priority
    if policy == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        if candidate.priority < preemptor.priority:
            return True
        newer = candidate.queue_order_timestamp - preemptor.queue_order_timestamp
        return candidate.priority == preemptor.priority and newer > buffer
    return policy == PreemptionPolicy.ANY


def cq_path(cq: QuotaNode) -> str:
    """`/root/.../cq`, as used in preemption messages."""
    parts = [cq.name, *(a.name for a in cq.path_to_root())]
    return "/" + "/".join(reversed(parts))


@dataclass(slots=True)
class _Ctx:
    preemptor: WorkloadInfo
    cq: ClusterQueueNode
    snapshot: Snapshot
    frs: set[FlavorResource]
    requests: Mapping[FlavorResource, int]
    # Whether the preemptor's TAS pod sets can be placed in the snapshot as it stands; None without any.
    topology_fits: Callable[[], bool] | None = None


@dataclass(slots=True)
class _Candidate:
    wl: WorkloadInfo
    lca: CohortNode | None
    variant: _Variant


def _fits(ctx: _Ctx, allow_borrowing: bool) -> bool:
    for fr, v in ctx.requests.items():
        if not allow_borrowing and resource_node.borrowing_with(ctx.cq, fr, v):
            return False
        if v > resource_node.available(ctx.cq, fr):
            return False
    return ctx.topology_fits is None or ctx.topology_fits()


def _fill_back(ctx: _Ctx, targets: list[Target], allow_borrowing: bool) -> list[Target]:
    """Put back, newest-but-one first, every victim the workload does not need."""
    for i in range(len(targets) - 2, -1, -1):
        ctx.snapshot.add_workload(targets[i].workload)
        if _fits(ctx, allow_borrowing):
            targets[i] = targets[-1]
            targets.pop()
        else:
            ctx.snapshot.remove_workload(targets[i].workload)
    return targets


def _restore(ctx: _Ctx, targets: Sequence[Target]) -> None:
    for t in targets:
        ctx.snapshot.add_workload(t.workload)


class Preemptor:
    """Finds preemption targets with the classical or the fair-sharing algorithm."""

    __slots__ = ("buffer", "fair_sharing", "lq_usage", "now", "strategies")

    def __init__(
        self,
        *,
        fair_sharing: bool,
        strategies: Sequence[str],
        now: datetime,
        buffer: timedelta = timedelta(0),
        lq_usage: Callable[[WorkloadInfo], float | None] | None = None,
    ) -> None:
        self.fair_sharing = fair_sharing
        self.strategies = tuple(strategies) or ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
        self.now = now
        self.buffer = buffer  # `satisfies_policy`
        # Admission fair sharing: a candidate's LocalQueue usage, None outside an opted-in ClusterQueue.
        self.lq_usage = lq_usage

    def _key(self, cq_name: str, *, by_usage: bool = False) -> Callable[[WorkloadInfo], tuple[object, ...]]:
        now = self.now
        usage_of = self.lq_usage
        if not by_usage or usage_of is None:
            return lambda wl: ordering.candidate_key(wl, cq_name, now)
        return lambda wl: ordering.candidate_key(wl, cq_name, now, lq_usage=usage_of(wl) or 0.0)

    def _sorted(self, candidates: Sequence[_Candidate], cq_name: str) -> list[_Candidate]:
        """A list of candidates in order; LocalQueue usage counts only within one ClusterQueue."""
        one_cq = len({c.wl.admission_cluster_queue for c in candidates}) == 1
        key = self._key(cq_name, by_usage=one_cq)
        return sorted(candidates, key=lambda c: key(c.wl))

    def get_targets(self, wl: WorkloadInfo, assignment: Assignment, snapshot: Snapshot) -> list[Target]:
        """Victims for the whole assignment (every fr that needed preemption)."""
        cq = snapshot.cluster_queues[assignment.cluster_queue]
        ctx = _Ctx(wl, cq, snapshot, assignment.frs_need_preemption(), assignment.total_requests())
        topo = snapshot.topology
        if topo is not None:
            # `workloadFits` places the TAS pod sets too: victims must free the domains they need.
            requests = topology_requests(wl, assignment, cq, snapshot.resource_flavors, topo)
            if requests:
                ctx.topology_fits = lambda: not any(r.reason for r in topo.find(requests)[0].values())
        return self._targets(ctx)

    def _targets(self, ctx: _Ctx) -> list[Target]:
        if self.fair_sharing:
            return self._fair(ctx)
        return self._classical(ctx)

    # -- classical -----------------------------------------------------------------------------
    def _classify(self, ctx: _Ctx, wl: WorkloadInfo, advantage: bool) -> _Variant | None:
        if not wl.uses_any(ctx.frs):
            return None
        pre = ctx.cq.spec.preemption
        same = wl.admission_cluster_queue == ctx.cq.name
        policy = pre.within_cluster_queue if same else pre.reclaim_within_cohort
        if not satisfies_policy(ctx.preemptor, wl, policy, self.buffer):
            return None
        if same:
            return _Variant.WITHIN_CQ
        if advantage:
            return _Variant.HIERARCHICAL_RECLAIM
        bwc = pre.borrow_within_cohort
        if bwc.policy == PreemptionPolicy.NEVER:
            return _Variant.RECLAIM_WITHOUT_BORROWING
        if wl.priority >= ctx.preemptor.priority or (
            bwc.max_priority_threshold is not None and wl.priority > bwc.max_priority_threshold
        ):
            return _Variant.RECLAIM_WITHOUT_BORROWING
        return _Variant.RECLAIM_WHILE_BORROWING

    def _from_cq(
        self, ctx: _Ctx, cq: ClusterQueueNode, lca: CohortNode | None, advantage: bool, out: list[_Candidate]
    ) -> None:
        for wl in cq.workloads.values():
            v = self._classify(ctx, wl, advantage)
            if v is not None:
                out.append(_Candidate(wl, lca, v))

    def _collect_subtree(
        self,
        ctx: _Ctx,
        cohort: CohortNode,
        subtree_root: CohortNode,
        skip: CohortNode | None,
        advantage: bool,
        out: list[_Candidate],
    ) -> None:
        for name in sorted(cohort.child_cohorts):
            child = cohort.child_cohorts[name]
            if child is skip or resource_node.is_within_nominal(child, ctx.frs):
                continue
            self._collect_subtree(ctx, child, subtree_root, skip, advantage, out)
        for name in sorted(cohort.child_cqs):
            cq = cohort.child_cqs[name]
            if cq is ctx.cq or resource_node.is_within_nominal(cq, ctx.frs):
                continue
            self._from_cq(ctx, cq, subtree_root, advantage, out)

    def _valid(self, ctx: _Ctx, c: _Candidate, borrow: bool) -> bool:
        if c.wl.admission_cluster_queue == ctx.cq.name:
            return True
        if borrow and c.variant == _Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        cq = ctx.snapshot.cluster_queues.get(c.wl.admission_cluster_queue)
        if cq is None or resource_node.is_within_nominal(cq, ctx.frs):
            return False
        for node in cq.path_to_root():
            if node is c.lca:
                break
            if resource_node.is_within_nominal(node, ctx.frs):
                return False
        return True

    def _classical(self, ctx: _Ctx) -> list[Target]:
        pre = ctx.cq.spec.preemption
        same: list[_Candidate] = []
        if pre.within_cluster_queue != PreemptionPolicy.NEVER:
            self._from_cq(ctx, ctx.cq, None, False, same)
        hier: list[_Candidate] = []
        prio: list[_Candidate] = []
        if ctx.cq.parent is not None and pre.reclaim_within_cohort != PreemptionPolicy.NEVER:
            advantage, remaining = resource_node.quantities_fit_in_quota(ctx.cq, ctx.requests)
            prev: CohortNode | None = None
            for node in ctx.cq.path_to_root():
                self._collect_subtree(ctx, node, node, prev, advantage, hier if advantage else prio)
                fits, remaining = resource_node.quantities_fit_in_quota(node, remaining)
                advantage = advantage or fits
                prev = node
        lists = [self._sorted(lst, ctx.cq.name) for lst in (hier, prio, same)]
        ordered = [c for lst in lists for c in lst if c.wl.is_evicted] + [
            c for lst in lists for c in lst if not c.wl.is_evicted
        ]
        forbidden = pre.borrow_within_cohort.policy == PreemptionPolicy.NEVER
        under_nominal = all(ctx.cq.quota(fr).nominal > ctx.cq.usage.get(fr, 0) for fr in ctx.frs)
        if (not hier and not prio) or (forbidden and not under_nominal):
            attempts = [True]
        elif forbidden and not hier:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrowing in attempts:
            targets: list[Target] = []
            for c in ordered:
                if not self._valid(ctx, c, borrowing):
                    continue
                ctx.snapshot.remove_workload(c.wl)
                targets.append(Target(c.wl, c.variant.reason(), c.wl.admission_cluster_queue))
                if _fits(ctx, borrowing):
                    targets = _fill_back(ctx, targets, borrowing)
                    _restore(ctx, targets)
                    return targets
            _restore(ctx, targets)
        return []

    # -- fair sharing --------------------------------------------------------------------------
    def _fair_candidates(self, ctx: _Ctx) -> list[WorkloadInfo]:
        pre = ctx.cq.spec.preemption
        out: list[WorkloadInfo] = []
        if pre.within_cluster_queue != PreemptionPolicy.NEVER:
            out += [
                w
                for w in ctx.cq.workloads.values()
                if satisfies_policy(ctx.preemptor, w, pre.within_cluster_queue, self.buffer) and w.uses_any(ctx.frs)
            ]
        if ctx.cq.parent is not None and pre.reclaim_within_cohort != PreemptionPolicy.NEVER:
            root = ctx.cq.root()
            assert isinstance(root, CohortNode)
            for cq in root.subtree_cluster_queues():
                if (
                    cq is ctx.cq
                    or cq.parent is None
                    or not any(resource_node.borrowing_with(cq, fr, 0) for fr in ctx.frs)
                ):
                    continue
                out += [
                    w
                    for w in cq.workloads.values()
                    if satisfies_policy(ctx.preemptor, w, pre.reclaim_within_cohort, self.buffer)
                    and w.uses_any(ctx.frs)
                ]
        return out

    def _fits_fair(self, ctx: _Ctx) -> bool:
        with ctx.snapshot.simulated_usage(ctx.cq, ctx.requests, remove=True):
            return _fits(ctx, True)

    def _shares(self, ctx: _Ctx, target: ClusterQueueNode) -> tuple[fair_sharing.DRS, fair_sharing.DRS]:
        p, t = fair_sharing.almost_lca_shares(ctx.cq, target)
        return fair_sharing.dominant_resource_share(p), fair_sharing.dominant_resource_share(t)

    def _fair(self, ctx: _Ctx) -> list[Target]:
        candidates = self._fair_candidates(ctx)
        if not candidates:
            return []
        key = self._key(ctx.cq.name)
        # Only each ClusterQueue's own order matters from here (`TargetOrdering.build` splits by
        # ClusterQueue, keeping it), so usage may rank the whole list.
        candidates.sort(key=self._key(ctx.cq.name, by_usage=True))
        strategy = (
            fair_sharing.less_than_initial_share
            if self.strategies[0] == "LessThanInitialShare"
            else fair_sharing.less_than_or_equal_to_final_share
        )
        targets: list[Target] = []
        retry: list[WorkloadInfo] = []
        fits = False
        ctx.snapshot.add_usage(ctx.cq, ctx.requests)
        try:
            within_nominal = all(not resource_node.borrowing_with(ctx.cq, fr, 0) for fr in ctx.frs)
            order = fair_sharing.TargetOrdering.build(ctx.cq, candidates, key)
            for cand_cq in order:
                if cand_cq is ctx.cq or within_nominal:
                    wl = order.pop(cand_cq)
                    reason = (
                        PreemptionReason.IN_CLUSTER_QUEUE
                        if cand_cq is ctx.cq
                        else PreemptionReason.IN_COHORT_RECLAMATION
                    )
                    ctx.snapshot.remove_workload(wl)
                    targets.append(Target(wl, reason, cand_cq.name))
                    if self._fits_fair(ctx):
                        fits = True
                        break
                    continue
                preemptor_new, target_old = self._shares(ctx, cand_cq)
                if preemptor_new.zero_weight_borrows() and not target_old.zero_weight_borrows():
                    while order.has_workload(cand_cq):
                        retry.append(order.pop(cand_cq))
                    continue
                while order.has_workload(cand_cq):
                    wl = order.pop(cand_cq)
                    with ctx.snapshot.simulated_usage(cand_cq, wl.usage(), remove=True):
                        _, t = fair_sharing.almost_lca_shares(ctx.cq, cand_cq)
                        target_new = fair_sharing.dominant_resource_share(t)
                    if strategy(preemptor_new, target_old, target_new):
                        ctx.snapshot.remove_workload(wl)
                        targets.append(Target(wl, PreemptionReason.IN_COHORT_FAIR_SHARING, cand_cq.name))
                        if self._fits_fair(ctx):
                            fits = True
                        break
                    retry.append(wl)
                if fits:
                    break
            if not fits and len(self.strategies) > 1:
                order = fair_sharing.TargetOrdering.build(ctx.cq, retry, key)
                for cand_cq in order:
                    preemptor_new, target_old = self._shares(ctx, cand_cq)
                    wl = order.pop(cand_cq)
                    if fair_sharing.less_than_initial_share(preemptor_new, target_old, target_old):
                        ctx.snapshot.remove_workload(wl)
                        targets.append(Target(wl, PreemptionReason.IN_COHORT_FAIR_SHARING, cand_cq.name))
                        if self._fits_fair(ctx):
                            fits = True
                            break
                    order.drop(cand_cq)
        finally:
            ctx.snapshot.remove_usage(ctx.cq, ctx.requests)
        if not fits:
            _restore(ctx, targets)
            return []
        targets = _fill_back(ctx, targets, True)
        _restore(ctx, targets)
        return targets


class Oracle:
    """The flavor assigner's one-method view of preemption (`PreemptionOracle`)."""

    __slots__ = ("preemptor", "snapshot")

    def __init__(self, preemptor: Preemptor, snapshot: Snapshot) -> None:
        self.preemptor = preemptor
        self.snapshot = snapshot

    def simulate_preemption(
        self, cq: ClusterQueueNode, wl: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[PreemptionPossibility, int]:
        ctx = _Ctx(wl, cq, self.snapshot, {fr}, {fr: quantity})
        targets = self.preemptor._targets(ctx)
        if not targets:
            borrow, _ = resource_node.height_of_lowest_subtree_that_fits(cq, fr, quantity)
            return PreemptionPossibility.NO_CANDIDATES, borrow
        with self.snapshot.simulated_removal([t.workload for t in targets]):
            borrow, _ = resource_node.height_of_lowest_subtree_that_fits(cq, fr, quantity)
        if any(t.cluster_queue == cq.name for t in targets):
            return PreemptionPossibility.PREEMPT, borrow
        return PreemptionPossibility.RECLAIM, borrow
