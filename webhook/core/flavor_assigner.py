"""Flavor assignment: pick a ResourceFlavor per requested resource of each podSet.

Mirrors `pkg/scheduler/flavorassigner/{flavorassigner,podset_reducer}.go` (upstream commit
ff69552e79) and `tas_flavorassigner.go` (v0.19.2): once the flavors fit on quota, pod sets on
topology-aware flavors are placed in their Topology (`webhook.core.topology`). Modes are ordered (NoFit < Preempt < DeferredFit < Fit); the preemption
oracle is a one-method Protocol, so this module never imports preemption. Messages accumulate the
reasons of every flavor tried and are sorted, so output is deterministic.

A workload slice that replaces an admitted one (elastic Jobs, upstream v0.19.2) keeps the old
slice's flavors and asks only for what it adds: the old slice's quota counts as its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol, TypeVar

from webhook.api import quantity, selector
from webhook.api.constants import DELAYED_TOPOLOGY_PENDING, PendingReason
from webhook.core.model import ResourceFlavorSpec
from webhook.core.resource_node import (
    ClusterQueueNode,
    available,
    height_of_lowest_subtree_that_fits,
    potential_available,
)
from webhook.core.resources import FlavorResource, FRQuantities, format_quantity
from webhook.core.tas import DomainUsage, PodSetRequest, TopologyAssignment, has_level
from webhook.core.topology import TopologySnapshot, WorkloadUsage, pod_set_request
from webhook.core.workload import PodSetAssignment, PodSetInfo, WorkloadInfo

__all__ = [
    "Assignment",
    "FlavorAssignment",
    "LastAssignment",
    "Mode",
    "PodSetResult",
    "PreemptionOracle",
    "PreemptionPossibility",
    "assign_flavors",
    "search_partial",
]


class Mode(IntEnum):
    """Representative assignment mode, compared directly."""

    NO_FIT = 0
    PREEMPT = 1
    DEFERRED_FIT = 2
    FIT = 3


class PreemptionPossibility(IntEnum):
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3


class _PMode(IntEnum):
    """Granular per-flavor mode: noFit < noCandidates < preempt < reclaim < fit."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    def assignment_mode(self) -> Mode:
        if self == _PMode.NO_FIT:
            return Mode.NO_FIT
        return Mode.FIT if self == _PMode.FIT else Mode.PREEMPT


_WORST = (_PMode.NO_FIT, 1 << 62)
_BEST = (_PMode.FIT, 0)

TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
_SEVERITY = {
    TOPOLOGY_PLACEMENT_FAILED: 1,
    PendingReason.WAITING_FOR_QUOTA: 2,
    PendingReason.EXCEEDS_MAX_QUOTA: 3,
    PendingReason.NO_MATCHING_FLAVOR: 4,
}


def _most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


class PreemptionOracle(Protocol):
    """Can preemption make room for `quantity` of `fr`? Returns the possibility and borrow level."""

    def simulate_preemption(
        self, cq: ClusterQueueNode, wl: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[PreemptionPossibility, int]: ...


@dataclass(slots=True)
class FlavorAssignment:
    name: str
    mode: Mode
    tried_flavor_idx: int = 0
    borrow: int = 0


@dataclass(slots=True)
class PodSetResult:
    """The assignment of one podSet: chosen flavors, request totals and the reasons it fell short."""

    name: str
    count: int
    requests: dict[str, int]
    flavors: dict[str, FlavorAssignment] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    # Each flavor tried, with its worst granular mode and most severe no-fit reason over the
    # podSet's resources (upstream `FlavorAssignmentAttempts`); what NoFitReason is drawn from.
    attempts: dict[str, tuple[_PMode, str]] = field(default_factory=dict)
    # Why no topology request could be built for it (upstream `Status.err`); "" when none.
    error: str = ""
    topology_assignment: TopologyAssignment | None = None
    # `delayedTopologyRequest` of its admission: "Pending" when its placement is left to later.
    delayed_topology: str | None = None

    @property
    def fits(self) -> bool:
        return not self.reasons and not self.error

    def representative_mode(self) -> Mode:
        if self.error:
            return Mode.NO_FIT
        if self.fits:
            return Mode.FIT
        if not self.flavors:
            return Mode.NO_FIT
        return min(f.mode for f in self.flavors.values())

    def message(self) -> str:
        return ", ".join(sorted(self.reasons))


@dataclass(slots=True)
class LastAssignment:
    """Scan progress kept between attempts of one workload (`AssignmentClusterQueueState`)."""

    last_tried: list[dict[str, int]]
    cq_generation: int
    cycle: int

    def next_flavor(self, ps_index: int, resource: str) -> int:
        if ps_index >= len(self.last_tried):
            return 0
        idx = self.last_tried[ps_index].get(resource)
        return 0 if idx is None else idx + 1

    def has_untried(self) -> bool:
        return any(v != -1 for ps in self.last_tried for v in ps.values())


@dataclass(slots=True)
class Assignment:
    cluster_queue: str
    pod_sets: list[PodSetResult] = field(default_factory=list)
    borrowing: int = 0
    usage: FRQuantities = field(default_factory=dict)
    last_state: LastAssignment | None = None
    no_fit_reason: str = ""
    mode_override: Mode | None = None
    # Per TAS flavor, the pods its topology assignments place per domain (`Usage.TAS`).
    tas_usage: WorkloadUsage = field(default_factory=dict)

    def representative_mode(self) -> Mode:
        if self.mode_override is not None:
            return self.mode_override
        if not self.pod_sets:
            return Mode.NO_FIT
        return min(ps.representative_mode() for ps in self.pod_sets)

    def message(self) -> str:
        parts = []
        for ps in self.pod_sets:
            if ps.error:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            if not ps.fits:
                parts.append(f"couldn't assign flavors to pod set {ps.name}: {ps.message()}")
        return "; ".join(parts)

    def frs_need_preemption(self) -> set[FlavorResource]:
        return {
            FlavorResource(fa.name, r)
            for ps in self.pod_sets
            for r, fa in ps.flavors.items()
            if fa.mode == Mode.PREEMPT
        }

    def total_requests(self) -> FRQuantities:
        return {fr: v for fr, v in self.usage.items() if v}

    def pod_set_assignments(self) -> tuple[PodSetAssignment, ...]:
        """The podSetAssignments of status.admission (only resources that got a flavor)."""
        return tuple(
            PodSetAssignment(
                ps.name,
                {r: fa.name for r, fa in ps.flavors.items()},
                {r: ps.requests[r] for r in ps.flavors if r in ps.requests},
                ps.count,
                ps.topology_assignment,
                ps.delayed_topology,
            )
            for ps in self.pod_sets
        )

    def to_api(self) -> list[dict[str, Any]]:
        return [psa.to_api() for psa in self.pod_set_assignments()]

    def _append(self, ps: PodSetResult, held: Mapping[str, int]) -> None:
        """Add a podSet's result; its usage leaves out `held`, what a replaced slice already holds."""
        self.pod_sets.append(ps)
        tried: dict[str, int] = {}
        for res, fa in ps.flavors.items():
            self.borrowing = max(self.borrowing, fa.borrow)
            fr = FlavorResource(fa.name, res)
            self.usage[fr] = self.usage.get(fr, 0) + ps.requests.get(res, 0) - held.get(res, 0)
            tried[res] = fa.tried_flavor_idx
        if self.last_state is not None:
            self.last_state.last_tried.append(tried)


def _is_preferred(a: tuple[_PMode, int], b: tuple[_PMode, int], preference: str | None) -> bool:
    if a[0] == _PMode.NO_FIT:
        return False
    if b[0] == _PMode.NO_FIT:
        return True
    a_nc, b_nc = a[0] == _PMode.NO_CANDIDATES, b[0] == _PMode.NO_CANDIDATES
    if a_nc != b_nc:
        return not a_nc
    if preference == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _should_try_next(mode: tuple[_PMode, int], when_can_borrow: str, when_can_preempt: str) -> bool:
    if mode[0] in (_PMode.NO_FIT, _PMode.NO_CANDIDATES):
        return True
    if mode[0] in (_PMode.PREEMPT, _PMode.RECLAIM) and when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] != 0 and when_can_borrow == "TryNextFlavor"


def _tas_mismatch(
    flavor: ResourceFlavorSpec,
    ps: PodSetInfo,
    covered: Iterable[str],
    *,
    tas_only: bool,
    topology: TopologySnapshot | None,
) -> str | None:
    """`checkPodSetAndFlavorMatchForTAS`: a podSet asking for a topology needs a topology flavor
    with the requested level (in a ClusterQueue of topology flavors only, every podSet asks for one
    implicitly and every flavor matches); a topology flavor takes no other podSet."""
    name = json.dumps(flavor.name)
    if ps.requests_tas:
        if flavor.topology_name is None:
            if not any(r in covered for r in ps.placement_requests):
                # None of the pods' own requests is in this group: it only holds quota-only resources
                # (reachable through resources.transformations).
                return None
            return f"Flavor {name} does not support TopologyAwareScheduling"
        info = topology.flavor(flavor.name) if topology is not None else None
        if info is None:
            return f"Flavor {name} information missing in TAS cache"
        if not has_level(info.levels, ps.topology_request):
            return f"Flavor {name} does not contain the requested level"
        return None
    if tas_only:
        return None
    if flavor.topology_name is not None:
        return f"Flavor {name} supports only TopologyAwareScheduling"
    return None


def _check_flavor(
    flavor: ResourceFlavorSpec | None,
    name: str,
    ps: PodSetInfo,
    *,
    tas: bool = False,
    covered: Iterable[str] = (),
    tas_only: bool = False,
    topology: TopologySnapshot | None = None,
) -> str | None:
    """Why the podSet cannot use the flavor at all (missing, topology, untolerated taint, affinity);
    `tas` is the TopologyAwareScheduling gate."""
    if flavor is None:
        return f"flavor {name} not found"
    if tas and (why := _tas_mismatch(flavor, ps, covered, tas_only=tas_only, topology=topology)) is not None:
        return why
    taint = selector.find_untolerated_taint(flavor.node_taints, (*ps.tolerations, *flavor.tolerations))
    if taint is not None:
        return f"untolerated taint {taint} in flavor {name}"
    if not selector.matches_flavor_affinity(ps.node_selector, ps.required_terms, flavor.node_labels):
        return f"flavor {name} doesn't match node affinity"
    return None


class _Assigner:
    __slots__ = (
        "allowed",
        "cq",
        "delay_topology",
        "fair_sharing",
        "flavors",
        "ignore_undeclared",
        "last",
        "nominated",
        "oracle",
        "replaced",
        "tas",
        "tas_only",
        "topology",
        "wl",
    )

    def __init__(
        self,
        wl: WorkloadInfo,
        cq: ClusterQueueNode,
        flavors: Mapping[str, ResourceFlavorSpec],
        oracle: PreemptionOracle,
        *,
        fair_sharing: bool,
        last: LastAssignment | None,
        ignore_undeclared: bool,
        nominated: Mapping[str, Mapping[str, str]] | None = None,
        concurrent_admission: bool = False,
        replaces: WorkloadInfo | None = None,
        tas: bool = False,
        topology: TopologySnapshot | None = None,
        delay_topology: frozenset[str] = frozenset(),
    ) -> None:
        self.wl, self.cq, self.flavors, self.oracle = wl, cq, flavors, oracle
        self.tas = tas
        self.delay_topology = delay_topology
        self.topology = topology if tas else None
        # `isTASOnly`: every flavor of the ClusterQueue is a topology flavor.
        self.tas_only = all(
            (f := flavors.get(fq.name)) is not None and f.topology_name is not None
            for rg in cq.spec.resource_groups
            for fq in rg.flavors
        )
        self.fair_sharing, self.last, self.ignore_undeclared = fair_sharing, last, ignore_undeclared
        self.nominated = nominated
        # With the ConcurrentAdmission gate a variant only tries the flavors its annotation allows.
        self.allowed = (
            frozenset(wl.allowed_flavors) if concurrent_admission and wl.allowed_flavors is not None else None
        )
        # podSet name -> (flavor per resource, quota held per resource) of the replaced slice.
        self.replaced: dict[str, tuple[Mapping[str, str], Mapping[str, int]]] | None = None
        if replaces is not None:
            self.replaced = {
                psa.name: (psa.flavors, held)
                for psa, held in zip(replaces.assignments, replaces.admitted_requests(), strict=True)
            }

    def _can_preempt_while_borrowing(self) -> bool:
        pre = self.cq.spec.preemption
        return pre.borrow_within_cohort.policy != "Never" or (
            self.fair_sharing and pre.reclaim_within_cohort != "Never"
        )

    def _fits_quota(self, fr: FlavorResource, assumed: int, request: int) -> tuple[_PMode, int, str | None, str]:
        cq = self.cq
        avail = available(cq, fr)
        max_capacity = potential_available(cq, fr)
        val = assumed + request
        if val > max_capacity:
            # The request is printed as a plain quantity, even saturated (upstream's ResourceQuantityString);
            # only quota amounts read `<unlimited>`.
            msg = (
                f"insufficient quota for {fr.resource} in flavor {fr.flavor}, previously considered podsets requests "
                f"({format_quantity(fr.resource, assumed)}) + current podset request ({quantity.format_amount(fr.resource, request)}) "
                f"> maximum capacity ({format_quantity(fr.resource, max_capacity)})"
            )
            return _PMode.NO_FIT, 0, msg, PendingReason.EXCEEDS_MAX_QUOTA
        borrow, may_reclaim = height_of_lowest_subtree_that_fits(cq, fr, val)
        if val <= avail:
            return _PMode.FIT, borrow, None, ""
        msg = f"insufficient unused quota for {fr.resource} in flavor {fr.flavor}, {format_quantity(fr.resource, val - avail)} more needed"
        if cq.quota(fr).nominal >= val or may_reclaim or self._can_preempt_while_borrowing():
            possibility, borrow_after = self.oracle.simulate_preemption(cq, self.wl, fr, val)
            return _PMode(int(possibility)), borrow_after, msg, ""
        return _PMode.NO_FIT, borrow, msg, PendingReason.WAITING_FOR_QUOTA

    def _find_flavor(
        self, ps_index: int, ps: PodSetInfo, requests: Mapping[str, int], res: str, assigned: FRQuantities
    ) -> tuple[dict[str, FlavorAssignment] | None, list[str], list[tuple[str, _PMode, str]]]:
        """The best flavor of `res`'s resource group, the reasons others fell short, and every flavor tried."""
        spec = self.cq.spec
        rg_index = spec.resource_to_group.get(res)
        if rg_index is None:
            return None, [f"resource {res} unavailable in ClusterQueue"], []
        rg = spec.resource_groups[rg_index]
        covered = [(r, requests[r]) for r in sorted(requests) if r in rg.covered_resources]
        reasons: list[str] = []
        ff = spec.flavor_fungibility
        best: dict[str, FlavorAssignment] | None = None
        best_mode = _WORST
        attempted = -1
        tried: list[tuple[str, _PMode, str]] = []
        start = self.last.next_flavor(ps_index, res) if self.last is not None else 0
        for idx in range(start, len(rg.flavors)):
            attempted = idx
            fname = rg.flavors[idx].name
            if self.nominated is not None and self.nominated.get(ps.name, {}).get(res) != fname:
                # A recomputation keeps the flavors of the first assignment (`NominationMapping`).
                reasons.append(
                    f"skipping flavor {fname} as it is not found in the nomination mapping for resource {res}"
                )
                continue
            if self.allowed is not None and fname not in self.allowed:
                reasons.append(f"skipping flavor {fname} due to WorkloadAllowedResourceFlavorAnnotation annotation")
                continue
            why = _check_flavor(
                self.flavors.get(fname),
                fname,
                ps,
                tas=self.tas,
                covered=rg.covered_resources,
                tas_only=self.tas_only,
                topology=self.topology,
            )
            if why is not None:
                reasons.append(why)
                tried.append((fname, _PMode.NO_FIT, PendingReason.NO_MATCHING_FLAVOR))
                continue
            assignments: dict[str, FlavorAssignment] = {}
            rep = _BEST
            no_fit_reason = ""
            for rname, val in covered:
                if self.replaced is not None:
                    # A replacement slice stays on the replaced slice's flavor and asks for the delta.
                    old_flavors, old_held = self.replaced.get(ps.name, ({}, {}))
                    original = old_flavors.get(rname, "")
                    if original != fname:
                        reasons.append(
                            f"could not assign {fname} flavor since the original workload is assigned: {original}"
                        )
                        no_fit_reason = _most_severe(no_fit_reason, PendingReason.NO_MATCHING_FLAVOR)
                        rep = _WORST
                    else:
                        val -= old_held.get(rname, 0)
                fr = FlavorResource(fname, rname)
                pmode, borrow, msg, nf = self._fits_quota(fr, assigned.get(fr, 0), val)
                if msg is not None:
                    reasons.append(msg)
                    no_fit_reason = _most_severe(no_fit_reason, nf)
                mode = (pmode, borrow)
                if _is_preferred(rep, mode, ff.preference):
                    rep = mode
                if rep[0] == _PMode.NO_FIT:
                    continue
                assignments[rname] = FlavorAssignment(fname, pmode.assignment_mode(), borrow=borrow)
            tried.append((fname, rep[0], no_fit_reason))
            if not _should_try_next(rep, ff.when_can_borrow, ff.when_can_preempt):
                best, best_mode = assignments, rep
                break
            if _is_preferred(rep, best_mode, ff.preference):
                best, best_mode = assignments, rep
        for fa in (best or {}).values():
            fa.tried_flavor_idx = -1 if attempted == len(rg.flavors) - 1 else attempted
        if best_mode[0] == _PMode.FIT:
            return best, [], tried
        return best, reasons, tried

    def assign(self, counts: Sequence[int] | None) -> Assignment:
        wl, spec = self.wl, self.cq.spec
        a = Assignment(self.cq.name, last_state=LastAssignment([], self.cq.allocatable_generation, 0))
        covers_pods = "pods" in spec.resource_to_group
        for i, (ps, req) in enumerate(zip(wl.pod_sets, wl.pod_set_requests(counts), strict=True)):
            count = counts[i] if counts is not None else ps.count - wl.reclaimable.get(ps.name, 0)
            if covers_pods:
                req["pods"] = count
            result = PodSetResult(ps.name, count, req)
            group: dict[str, FlavorAssignment] | None = {}
            reasons: list[str] = []
            for res in sorted(req):
                qty = req[res]
                if res not in spec.resource_to_group and (qty == 0 or self.ignore_undeclared):
                    continue
                assert group is not None
                if res in group:
                    continue
                found, why, tried = self._find_flavor(i, ps, req, res, a.usage)
                if tried:
                    _merge_attempts(
                        result.attempts, tried, spec.resource_groups[spec.resource_to_group[res]].flavor_names
                    )
                if not found and req:
                    group, reasons = None, why
                    break
                group.update(found or {})
                reasons.extend(why)
            result.flavors = {r: fa for r, fa in (group or {}).items() if r in req}
            result.reasons = reasons
            a._append(result, self.replaced.get(ps.name, ({}, {}))[1] if self.replaced is not None else {})
            # Only a failed resource ends the assignment. Upstream also stops at a podSet left without
            # flavors because every resource it asks for was skipped (zero, or undeclared under
            # IgnoreUndeclared), dropping the later podSets from the admission: a bug not copied.
            if group is None:
                _resolve_no_fit_reason(a, spec.resource_groups)
                return a
        if self.tas and a.representative_mode() != Mode.NO_FIT:
            self._inherit_group_flavors(a)
            self._place(a)
        _resolve_no_fit_reason(a, spec.resource_groups)
        return a

    # -- topology ----------------------------------------------------------------------------------
    def requests_tas(self, ps: PodSetInfo) -> bool:
        """`isTASRequested`: explicitly, or implied by a ClusterQueue of topology flavors only."""
        return ps.requests_tas or self.tas_only

    def topology_requests(self, a: Assignment) -> dict[str, list[PodSetRequest]]:
        """Per TAS flavor, the pod sets to place (`WorkloadsTopologyRequests`); a pod set whose
        request cannot be built gets its error instead."""
        out: dict[str, list[PodSetRequest]] = {}
        results = {r.name: r for r in a.pod_sets}
        for ps in self.wl.pod_sets:
            r = results.get(ps.name)
            if r is None or r.error or r.count == 0 or not self.requests_tas(ps):
                continue
            tas_flavors = sorted({fa.name for fa in r.flavors.values() if self._is_tas(fa.name)})
            if self.topology is None or not any(
                self._is_tas(fq.name) for rg in self.cq.spec.resource_groups for fq in rg.flavors
            ):
                r.error = "workload requires Topology, but there is no TAS cache information"
            elif not tas_flavors:
                r.error = "no TAS flavor assigned"
            elif len(tas_flavors) > 1:
                r.error = f"more than one TAS flavor assigned: {', '.join(tas_flavors)}"
            elif tas_flavors[0] in self.delay_topology:
                # Placed later (`podSetTopologyRequest`): by the MultiKueue worker, or once a
                # ProvisioningRequest's nodes exist.
                r.delayed_topology = DELAYED_TOPOLOGY_PENDING
            else:
                implied = not ps.requests_tas and self.tas_only
                out.setdefault(tas_flavors[0], []).append(pod_set_request(ps, r.count, implied=implied))
        return out

    def _inherit_group_flavors(self, a: Assignment) -> None:
        """A pod set asking for no resource in a topology group (e.g. a LeaderWorkerSet leader) takes
        its group's TAS flavors, to be placed with it (`resolvePodSetFlavors`)."""
        for ps, r in zip(self.wl.pod_sets, a.pod_sets, strict=False):
            if r.requests or r.flavors or ps.topology_group is None:
                continue
            for mate, mr in zip(self.wl.pod_sets, a.pod_sets, strict=False):
                if mate.topology_group == ps.topology_group and mr is not r:
                    r.flavors.update(
                        {
                            res: FlavorAssignment(fa.name, fa.mode)
                            for res, fa in mr.flavors.items()
                            if self._is_tas(fa.name)
                        }
                    )

    def _is_tas(self, name: str) -> bool:
        f = self.flavors.get(name)
        return (
            f is not None
            and f.topology_name is not None
            and (self.topology is not None and self.topology.flavor(name) is not None)
        )

    def _place(self, a: Assignment) -> None:
        """Place the TAS pod sets once quota fits (`assignFlavors`, TAS part): a pod set that does
        not fit makes the assignment Preempt, and NoFit when it would not fit in an empty cluster."""
        requests = self.topology_requests(a)
        if not requests or self.topology is None or a.representative_mode() == Mode.NO_FIT:
            return
        by_name = {r.name: r for r in a.pod_sets}
        if a.representative_mode() == Mode.FIT:
            results, _ = self.topology.find(requests)
            failed = next((n for n, res in results.items() if res.reason), None)
            if failed is not None:
                by_name[failed].reasons.append(results[failed].reason)
                _set_mode(a, by_name[failed], Mode.PREEMPT)
            else:
                update_for_topology(a, self.wl, requests, results)
        if a.representative_mode() == Mode.PREEMPT:
            results, flavor_of = self.topology.find(requests, simulate_empty=True)
            failed = next((n for n, res in results.items() if res.reason), None)
            if failed is not None:
                by_name[failed].attempts[flavor_of[failed]] = (_PMode.NO_FIT, TOPOLOGY_PLACEMENT_FAILED)
                _set_mode(a, by_name[failed], Mode.NO_FIT)
            else:
                for reqs in requests.values():
                    for req in reqs:
                        _set_mode(a, by_name[req.name], Mode.PREEMPT)


def _set_mode(a: Assignment, ps: PodSetResult, mode: Mode) -> None:
    """`Assignment.updateMode`: every flavor of the pod set and the whole assignment take `mode`."""
    for fa in ps.flavors.values():
        fa.mode = mode
    a.mode_override = mode


def update_for_topology(
    a: Assignment,
    wl: WorkloadInfo,
    requests: Mapping[str, Sequence[PodSetRequest]],
    results: Mapping[str, Any],
) -> None:
    """Record the placements found and what they take (`UpdateForTASResult`, `ComputeTASNetUsage`)."""
    by_name = {r.name: r for r in a.pod_sets}
    for flavor, reqs in requests.items():
        for req in reqs:
            res = results.get(req.name)
            if res is None or res.assignment is None:
                continue
            by_name[req.name].topology_assignment = res.assignment
            a.tas_usage[flavor] = a.tas_usage.get(flavor, ()) + tuple(
                DomainUsage(d.values, req.requests, d.count) for d in res.assignment.domains
            )


def topology_requests(
    wl: WorkloadInfo,
    a: Assignment,
    cq: ClusterQueueNode,
    flavors: Mapping[str, ResourceFlavorSpec],
    topology: TopologySnapshot,
) -> dict[str, list[PodSetRequest]]:
    """The pod sets of assignment `a` to place per TAS flavor (`WorkloadsTopologyRequests`)."""
    assigner = _Assigner(
        wl,
        cq,
        flavors,
        _NoOracle(),
        fair_sharing=False,
        last=None,
        ignore_undeclared=False,
        tas=True,
        topology=topology,
    )
    return assigner.topology_requests(a)


class _NoOracle:
    def simulate_preemption(
        self, cq: ClusterQueueNode, wl: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[PreemptionPossibility, int]:
        return PreemptionPossibility.NO_CANDIDATES, 0


def _merge_attempts(
    dst: dict[str, tuple[_PMode, str]], src: Sequence[tuple[str, _PMode, str]], group_flavors: Sequence[str]
) -> None:
    """Fold one resource's scan into the podSet's attempts (`mergeFlavorAttemptsForResource`).

    A flavor of this resource's group that an earlier resource tried but this scan did not reach
    counts as not providing the resource: NoFit, NoMatchingFlavor.
    """
    for fname, pmode, reason in src:
        old = dst.get(fname)
        dst[fname] = (pmode, reason) if old is None else (min(old[0], pmode), _most_severe(old[1], reason))
    present = {fname for fname, _, _ in src}
    for fname in dst:
        if fname in group_flavors and fname not in present:
            dst[fname] = (_PMode.NO_FIT, PendingReason.NO_MATCHING_FLAVOR)


def _resolve_no_fit_reason(a: Assignment, groups: Sequence[Any]) -> None:
    """Least severe reason per resource group, most severe across groups and podSets.

    A flavor listed in several resource groups counts in each of them (`findRGIndicesByFlavor`).
    """
    if a.representative_mode() != Mode.NO_FIT:
        return
    overall = ""
    for ps in a.pod_sets:
        if ps.representative_mode() != Mode.NO_FIT:
            continue
        if not ps.attempts:
            overall = _most_severe(overall, PendingReason.NO_MATCHING_FLAVOR)
            continue
        per_group: dict[int, str] = {}
        for i, fname in enumerate(sorted(ps.attempts)):
            pmode, reason = ps.attempts[fname]
            if pmode != _PMode.NO_FIT:
                continue
            for gi in [gi for gi, rg in enumerate(groups) if fname in rg.flavor_names] or [-1 - i]:
                if gi not in per_group or _SEVERITY.get(reason, 0) < _SEVERITY.get(per_group[gi], 0):
                    per_group[gi] = reason
        ps_reason = ""
        for r in per_group.values():
            ps_reason = _most_severe(ps_reason, r)
        # A podSet that failed on a resource the ClusterQueue does not cover has no failed attempt.
        overall = _most_severe(overall, ps_reason or PendingReason.NO_MATCHING_FLAVOR)
    a.no_fit_reason = overall


def assign_flavors(
    wl: WorkloadInfo,
    cq: ClusterQueueNode,
    flavors: Mapping[str, ResourceFlavorSpec],
    oracle: PreemptionOracle,
    *,
    counts: Sequence[int] | None = None,
    fair_sharing: bool = False,
    last: LastAssignment | None = None,
    ignore_undeclared: bool = False,
    nominated: Mapping[str, Mapping[str, str]] | None = None,
    concurrent_admission: bool = False,
    replaces: WorkloadInfo | None = None,
    tas: bool = False,
    topology: TopologySnapshot | None = None,
    delay_topology: frozenset[str] = frozenset(),
) -> Assignment:
    """Assign flavors to every podSet of `wl` in `cq` (optionally at reduced `counts`); with
    `nominated` (podSet -> resource -> flavor) only those flavors are considered, with
    `concurrent_admission` (the feature gate) only those `wl`'s allowed-flavors annotation lists, and
    with `replaces` (the admitted slice `wl` replaces) only its flavors, usage counting only the growth;
    with `tas` (the TopologyAwareScheduling gate) podSets and flavors are matched for topology and
    placed in the Topologies of `topology`, except on the TAS flavors of `delay_topology`, where the
    placement is left to later (`delayedTopologyRequest: Pending`)."""
    return _Assigner(
        wl,
        cq,
        flavors,
        oracle,
        fair_sharing=fair_sharing,
        last=last,
        ignore_undeclared=ignore_undeclared,
        nominated=nominated,
        concurrent_admission=concurrent_admission,
        replaces=replaces,
        tas=tas,
        topology=topology,
        delay_topology=delay_topology,
    ).assign(counts)


R = TypeVar("R")


def search_partial(wl: WorkloadInfo, fits: Callable[[list[int]], tuple[R | None, bool]]) -> R | None:
    """Largest podSet counts (down to minCount) that `fits`, by binary search (`PodSetReducer`)."""
    full = [ps.count for ps in wl.pod_sets]
    deltas = [ps.count - (ps.min_count if ps.min_count is not None else ps.count) for ps in wl.pod_sets]
    total = sum(deltas)
    if total == 0:
        return None
    last_good = -1
    last_r: R | None = None
    lo, hi = 0, total + 1
    while lo < hi:
        h = (lo + hi) // 2
        counts = [full[i] - d * h // total for i, d in enumerate(deltas)]
        r, ok = fits(counts)
        if ok:
            last_good, last_r = h, r
            hi = h
        else:
            lo = h + 1
    return last_r if lo == last_good else None
