"""Placing all pod sets of one workload in one TAS flavor, including repairs of an admitted placement.

Mirrors upstream v0.19.2's `FindTopologyAssignmentsForFlavor` and the node-replacement helpers of
`pkg/cache/scheduler/tas_flavor_snapshot.go` (`findReplacementAssignment`, `requiredReplacementDomain`,
`findIncompleteSliceDomain`, `mergeTopologyAssignments`, `IsTopologyAssignmentStale`), the elastic
scale-up/down of `tas_elastic_workloads.go`, and `TruncateAssignment` of `pkg/util/tas`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from webhook.core.tas.assign import Placer
from webhook.core.tas.tree import Tree, count_in
from webhook.core.tas.types import (
    PODS,
    DomainAssignment,
    DomainUsage,
    Flavor,
    Options,
    PodSetRequest,
    PodSetResult,
    SliceConstraint,
    TopologyAssignment,
    TopologyRequest,
    domain_id,
)

__all__ = [
    "LeafUsage",
    "Replacement",
    "add_assumed_usage",
    "find_topology_assignments",
    "fits",
    "merge_assignments",
    "stale_domain",
    "truncate_assignment",
]

Usage = dict[str, dict[str, int]]


class LeafUsage(dict[str, dict[str, int]]):
    """What TAS pods hold per leaf domain id, one `pods` each included: the sum of `DomainUsage`s,
    kept current by `add` as workloads come and go, so that a placement loads it leaf by leaf
    instead of workload by workload (upstream's TAS cache keeps usage per domain the same way)."""

    def add(self, usages: Iterable[DomainUsage], sign: int = 1) -> None:
        """Add (`sign` 1) or take away (-1) the pods of `usages`; a leaf left with nothing is dropped."""
        for u in usages:
            did = domain_id(u.values)
            into = self.get(did)
            if into is None:
                into = self[did] = {}
            for r, v in u.requests.items():
                into[r] = into.get(r, 0) + sign * v * u.count
            into[PODS] = into.get(PODS, 0) + sign * u.count
            if not any(into.values()):
                del self[did]


@dataclass(frozen=True, slots=True)
class Replacement:
    """An admitted workload lost a node (its status `unhealthyNodes`): replace the pods of the first
    unhealthy node, keeping the rest of each pod set's admitted `assignments` in place.
    `owned_by_single_pod` (a Workload owned by one plain Pod, not a pod group) keeps the assignment
    as is under SkipReassignmentForPodOwnedWorkloads: that pod cannot move."""

    unhealthy_node: str
    assignments: Mapping[str, TopologyAssignment]
    owned_by_single_pod: bool = False


def find_topology_assignments(
    flavor: Flavor,
    pod_sets: Sequence[PodSetRequest],
    *,
    tas_usage: Iterable[DomainUsage] | LeafUsage = (),
    non_tas_usage: Mapping[str, Mapping[str, int]] | None = None,
    assumed_usage: Mapping[str, Mapping[str, int]] | None = None,
    simulate_empty: bool = False,
    replacement: Replacement | None = None,
    options: Options | None = None,
) -> dict[str, PodSetResult]:
    """Place the pod sets of one workload that share a TAS flavor (`FindTopologyAssignmentsForFlavor`).

    `tas_usage` is what admitted TAS workloads hold per domain (summed per leaf: `LeafUsage`), `non_tas_usage` what other scheduled,
    not terminated pods use per node name (their requests plus one `pods` each), `assumed_usage` usage
    per domain id already reserved in this cycle (e.g. by sibling flavors on the same hosts).
    Pod sets of one `group` are placed together (the one-pod set as the leader). Stops at the first
    failure: later pod sets have no entry. `simulate_empty` ignores `tas_usage`, as if every TAS
    workload were preempted. With `replacement`, only the pods of the failed node are placed anew
    (pod sets without an admitted assignment get no entry).
    """
    opts = options or Options()
    placer = Placer(flavor, opts)
    _load_usage(placer.tree, tas_usage, non_tas_usage)

    assumed: Usage = {k: dict(v) for k, v in (assumed_usage or {}).items()}
    groups: dict[str, list[PodSetRequest]] = {}
    for idx, ps in enumerate(pod_sets):
        groups.setdefault(ps.group if ps.group is not None else str(idx), []).append(ps)

    result: dict[str, PodSetResult] = {}
    for members in groups.values():
        if replacement is not None:
            if not _replace(placer, members, replacement, assumed, opts, result):
                return result
            continue
        workers, leader = members[0], members[1] if len(members) > 1 else None
        if leader is not None and leader.count > workers.count:
            workers, leader = leader, workers
        if opts.elastic_workload_slices and (elastic := _elastic(placer, workers, leader, assumed, simulate_empty)):
            result.update(elastic)
            if elastic[workers.name].reason:
                return result
            continue
        assignments, reason = placer.place(workers, leader, assumed, simulate_empty)
        for ps in members:
            result[ps.name] = PodSetResult(assignments.get(ps.name), reason)
        if reason:
            return result
        for ps in members:
            if (ta := assignments.get(ps.name)) is not None:
                add_assumed_usage(assumed, ta, ps.requests)
    return result


def fits(
    flavor: Flavor,
    usage: Iterable[DomainUsage],
    *,
    tas_usage: Iterable[DomainUsage] | LeafUsage = (),
    non_tas_usage: Mapping[str, Mapping[str, int]] | None = None,
) -> bool:
    """Whether the pods of `usage` still fit the leaf domains they name, next to `tas_usage` and
    `non_tas_usage` (`TASFlavorSnapshot.Fits`): a workload placed earlier in a scheduling cycle may
    have taken the room another one was placed in."""
    tree = Placer(flavor, Options()).tree
    _load_usage(tree, tas_usage, non_tas_usage)
    for u in usage:
        leaf = tree.leaves.get(domain_id(u.values))
        if leaf is None:
            return False
        one_pod = dict(u.requests)
        one_pod[PODS] = one_pod.get(PODS, 0) + 1
        if count_in(one_pod, leaf.remaining(False))[0] < u.count:
            return False
    return True


def _load_usage(
    tree: Tree,
    tas_usage: Iterable[DomainUsage] | LeafUsage,
    non_tas_usage: Mapping[str, Mapping[str, int]] | None,
) -> None:
    if not isinstance(tas_usage, LeafUsage):
        summed = LeafUsage()
        summed.add(tas_usage)
        tas_usage = summed
    for leaf_id, usage in tas_usage.items():
        tree.add_tas_usage(leaf_id, usage)
    for node_name, used in (non_tas_usage or {}).items():
        tree.add_non_tas_usage(node_name, used)


def add_assumed_usage(assumed: Usage, ta: TopologyAssignment, requests: Mapping[str, int]) -> None:
    """Reserve in `assumed` what the pods of an assignment take, one `pods` each (`addAssumedUsage`)."""
    for did, used in ta.usage(requests).items():
        into = assumed.setdefault(did, {})
        for r, v in used.items():
            into[r] = into.get(r, 0) + v


# -- helpers on assignments ----------------------------------------------------------------------
def stale_domain(tree: Tree, ta: TopologyAssignment) -> str | None:
    """The first value of a domain of `ta` the flavor no longer has (node deleted or not Ready)
    (`IsTopologyAssignmentStale`)."""
    for d in ta.domains:
        if domain_id(d.values) not in tree.leaves:
            return d.values[0]
    return None


def merge_assignments(tree: Tree, a: TopologyAssignment, b: TopologyAssignment) -> TopologyAssignment:
    """Both assignments' domains in order of their leaves' full level values, counts of the same
    domain added (`mergeTopologyAssignments`)."""

    def order(d: DomainAssignment) -> str:
        return domain_id(tree.per_level[-1][domain_id(d.values)].level_values)

    merged: list[DomainAssignment] = []
    for d in sorted((*a.domains, *b.domains), key=order):
        if merged and merged[-1].values == d.values:
            merged[-1] = DomainAssignment(d.values, merged[-1].count + d.count)
        else:
            merged.append(d)
    return TopologyAssignment(a.levels, tuple(merged))


def truncate_assignment(ta: TopologyAssignment, count: int) -> TopologyAssignment:
    """The first `count` pods of an assignment, in its domain order (`TruncateAssignment`)."""
    out: list[DomainAssignment] = []
    remaining = count
    for d in ta.domains:
        if remaining <= 0:
            break
        out.append(d if d.count <= remaining else DomainAssignment(d.values, remaining))
        remaining -= d.count
    return TopologyAssignment(ta.levels, tuple(out))


# -- node replacement ----------------------------------------------------------------------------
def _replace(
    placer: Placer,
    members: list[PodSetRequest],
    replacement: Replacement,
    assumed: Usage,
    opts: Options,
    result: dict[str, PodSetResult],
) -> bool:
    """Replace the failed node's pods of each pod set of a group; False once one fails."""
    for ps in members:
        existing = replacement.assignments.get(ps.name)
        if existing is None:
            continue
        if opts.skip_reassignment_for_pod_owned and replacement.owned_by_single_pod:
            # The pod cannot move and the Workload cannot outlive it: keep its node.
            result[ps.name] = PodSetResult(existing)
            continue
        new, patch, reason = _find_replacement(placer, ps, existing, replacement.unhealthy_node, assumed)
        result[ps.name] = PodSetResult(new, reason)
        if reason:
            return False
        if patch is not None:
            add_assumed_usage(assumed, patch, ps.requests)
    return True


def _find_replacement(
    placer: Placer, ps: PodSetRequest, existing: TopologyAssignment, unhealthy: str, assumed: Usage
) -> tuple[TopologyAssignment | None, TopologyAssignment | None, str]:
    """The repaired assignment, the part placed anew, or why it failed (`findReplacementAssignment`)."""
    tree = placer.tree
    kept = tuple(d for d in existing.domains if d.values[-1] != unhealthy)
    # Upstream counts the pods of the (last) domain on the failed node.
    missing = next((d.count for d in reversed(existing.domains) if d.values[-1] == unhealthy), 0)
    existing = TopologyAssignment(existing.levels, kept)
    ps = dataclasses.replace(ps, count=missing)
    if (stale := stale_domain(tree, existing)) is not None:
        return (
            None,
            None,
            f"Cannot replace the node, because the existing topologyAssignment is invalid, as it contains the stale domain {stale}",
        )
    required = _required_replacement_domain(placer, ps, existing)
    layers = ps.topology_request.slices if ps.topology_request is not None else ()
    if layers and layers[0].size <= 0:
        return None, None, "slice topology requested, but slice size not provided"
    request = ps
    if layers and required and missing % layers[0].size != 0:
        # Keep only the innermost layer whose size divides the pods to replace (or none).
        layer = next((c for c in reversed(layers) if missing % c.size == 0), None)
        tr = ps.topology_request or TopologyRequest()
        request = dataclasses.replace(ps, topology_request=dataclasses.replace(tr, slices=(layer,) if layer else ()))
    assignments, reason = placer.place(request, None, assumed, False, required)
    if reason:
        return None, None, reason
    patch = assignments.get(ps.name)
    if patch is None or not patch.domains:
        return None, None, f"cannot find replacement assignment for unhealthy node: {unhealthy}"
    return merge_assignments(tree, patch, existing), patch, ""


def _required_replacement_domain(placer: Placer, ps: PodSetRequest, ta: TopologyAssignment) -> str:
    """The domain the replacement must stay in (`requiredReplacementDomain`): the one of an incomplete
    slice, else for a required level the domain at that level of the first kept pod; "" for none."""
    tree = placer.tree
    key = placer.level_key_for(ps)
    if key is None or tree.level_index(key) is None or not ta.domains:
        return ""
    level = tree.level_index(key)
    tr = ps.topology_request
    layers = tr.slices if tr is not None else ()
    if layers and layers[0].size <= 0:
        return ""
    if layers and ps.count % layers[0].size != 0:
        if len(layers) > 1:
            for c in reversed(layers):
                if ps.count % c.size != 0:
                    return _incomplete_slice_domain(tree, ta, ps.count, c)
        return _incomplete_slice_domain(tree, ta, ps.count, layers[0])
    if tr is None or tr.required is None or level is None:
        return ""
    dom = tree.per_level[-1].get(domain_id(ta.domains[0].values))
    if dom is None:
        return ""
    for _ in range(len(tree.levels) - 1 - level):
        if dom.parent is None:
            return ""
        dom = dom.parent
    return dom.id


def _incomplete_slice_domain(tree: Tree, ta: TopologyAssignment, missing: int, layer: SliceConstraint) -> str:
    """The domain at the slice level whose pods plus the missing ones make whole slices
    (`findIncompleteSliceDomain`); upstream scans a map, here the first in assignment order wins."""
    level = tree.level_index(layer.topology)
    if level is None:
        return ""
    pods: dict[str, int] = {}
    for d in ta.domains:
        dom = tree.per_level[-1].get(domain_id(d.values))
        if dom is None:
            continue
        for _ in range(len(tree.levels) - 1 - level):
            if dom.parent is not None:
                dom = dom.parent
        pods[dom.id] = pods.get(dom.id, 0) + d.count
    return next((did for did, n in pods.items() if (n + missing) % layer.size == 0), "")


# -- elastic workload slices -----------------------------------------------------------------------
def _elastic(
    placer: Placer, workers: PodSetRequest, leader: PodSetRequest | None, assumed: Usage, simulate_empty: bool
) -> dict[str, PodSetResult] | None:
    """Keep the pods of the previous slice where they are and place only the new ones, or drop the
    last ones on scale-down (`handleElasticWorkload`); None for a fresh placement."""
    previous = workers.previous_assignment
    if previous is None or stale_domain(placer.tree, previous) is not None:
        return None
    leader_previous = leader.previous_assignment if leader is not None else None
    if leader_previous is not None and stale_domain(placer.tree, leader_previous) is not None:
        return None
    result: dict[str, PodSetResult] = {}
    before = previous.pod_count()
    if workers.count > before:
        add_assumed_usage(assumed, previous, workers.requests)
        placing_leader = leader
        if leader is not None and leader_previous is not None:
            add_assumed_usage(assumed, leader_previous, leader.requests)
            placing_leader = None
        delta = dataclasses.replace(workers, count=workers.count - before, previous_assignment=None)
        assignments, reason = placer.place(delta, placing_leader, assumed, simulate_empty)
        if reason:
            return {workers.name: PodSetResult(None, reason)}
        added = assignments[workers.name]
        result[workers.name] = PodSetResult(merge_assignments(placer.tree, added, previous))
        if leader is not None:
            if leader_previous is not None:
                result[leader.name] = PodSetResult(leader_previous)
            else:
                result[leader.name] = PodSetResult(assignments[leader.name])
                add_assumed_usage(assumed, assignments[leader.name], leader.requests)
        add_assumed_usage(assumed, added, workers.requests)
        return result
    kept = truncate_assignment(previous, workers.count) if workers.count < before else previous
    result[workers.name] = PodSetResult(kept)
    add_assumed_usage(assumed, kept, workers.requests)
    if leader is not None:
        # Upstream reuses the leader's previous assignment here, with or without one.
        result[leader.name] = PodSetResult(leader_previous)
        if leader_previous is not None:
            add_assumed_usage(assumed, leader_previous, leader.requests)
    return result
