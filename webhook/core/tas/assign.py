"""The TAS placement algorithm: where in a flavor's topology the pods of a workload's pod sets go.

Mirrors upstream v0.19.2's `findTopologyAssignment` in `pkg/cache/scheduler/tas_flavor_snapshot.go`,
for one pod set or one leader/workers group (`flavor.py` loops over a workload's pod sets and holds
the repairs of an admitted placement). Two phases:

1. count, for every leaf, how many pods (and a leader, for a pod-set group) fit in its remaining
   capacity, and roll the counts up the tree (`Tree.fill_in_counts`);
2. pick the domains at the requested level (climbing levels for a preferred request, failing for a
   required one), then walk down level by level keeping as few domains as possible: BestFit (the
   tightest domain that still fits the rest) or, for unconstrained pod sets under TASProfileMixed,
   LeastFreeCapacity (the fullest domains first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from webhook.core.tas import balanced, nodes
from webhook.core.tas.tree import Domain, Tree, count_in, lower_domains
from webhook.core.tas.types import (
    PODS,
    DomainAssignment,
    Flavor,
    Options,
    PodSetRequest,
    SliceConstraint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    domain_id,
)

__all__ = ["Params", "Placer", "has_level", "level_key"]

_MAX = 2**31 - 1


@dataclass(slots=True)
class Params:
    """What one run places (`topologyAssignmentParameters`)."""

    count: int
    slice_size: int = 1
    leader_count: int = 0
    requested_level: int = 0
    slice_level: int = 0
    required: bool = False
    unconstrained: bool = False
    slice_size_at_level: dict[int, int] = field(default_factory=dict)
    multi_layer: tuple[SliceConstraint, ...] = ()


def level_key(levels: Sequence[str], tr: TopologyRequest | None) -> str | None:
    """The level a topology request places at (`levelKey`): required, else preferred, else the top
    level for a slice-only request, else the lowest for an unconstrained one."""
    if tr is None:
        return None
    if tr.required is not None:
        return tr.required
    if tr.preferred is not None:
        return tr.preferred
    if _slice_only(tr):
        return levels[0]
    if tr.unconstrained:
        return levels[-1]
    return None


def has_level(levels: Sequence[str], tr: TopologyRequest | None) -> bool:
    """Whether a Topology with `levels` has every level the request names (`HasLevel`), which makes a
    TAS flavor usable for the pod set."""
    key = level_key(levels, tr)
    if key is None or key not in levels:
        return False
    slices = _slices(tr)
    if (slices[0].topology if slices else levels[-1]) not in levels:
        return False
    return all(layer.topology in levels for layer in slices)


def _slices(tr: TopologyRequest | None) -> tuple[SliceConstraint, ...]:
    return tr.slices if tr is not None else ()


def _slice_only(tr: TopologyRequest | None) -> bool:
    return tr is not None and tr.required is None and tr.preferred is None and bool(tr.slices)


# A leaf's pods, limiting resource, leaders, pods beside a leader, slices, slices beside a leader.
LeafCounts = tuple[int, str, int, int, int, int]


def _leaf_counts(
    requests: Mapping[str, int], leader_requests: Mapping[str, int] | None, remaining: dict[str, int], slice_size: int
) -> LeafCounts:
    """How many worker pods fit a leaf's `remaining` (and the limiting resource), whether a leader
    fits, how many workers fit beside it, and those counts in slices of `slice_size` (0: none
    counted on leaves). Consumes `remaining`."""
    pod_count, limiting = count_in(requests, remaining)
    leader_count, with_leader = 0, pod_count
    if leader_requests is not None:
        if count_in(leader_requests, remaining)[0] > 0:
            leader_count = 1
            for r, v in leader_requests.items():
                remaining[r] = remaining.get(r, 0) - v
        with_leader = count_in(requests, remaining)[0]
    if not slice_size:
        return pod_count, limiting, leader_count, with_leader, 0, 0
    return pod_count, limiting, leader_count, with_leader, pod_count // slice_size, with_leader // slice_size


class Placer:
    """One flavor's tree with its usage, placing pod sets one group at a time (`TASFlavorSnapshot`)."""

    def __init__(self, flavor: Flavor, options: Options) -> None:
        self.flavor = flavor
        self.options = options
        tree = flavor.memo.get("tree")
        if tree is None:
            members = [n for n in flavor.nodes if nodes.node_in_flavor(n, flavor.node_labels, flavor.levels)]
            tree = flavor.memo["tree"] = Tree(flavor.levels, members)
        tree.reset_usage()
        self.tree: Tree = tree
        self.stats = nodes.ExclusionStats()

    # -- level keys -------------------------------------------------------------------------------
    def level_key_for(self, ps: PodSetRequest) -> str | None:
        """`levelKeyWithImpliedFallback`: an implied pod set goes to the lowest level."""
        key = level_key(self.tree.levels, ps.topology_request)
        if key is None and ps.implied:
            return self.tree.levels[-1]
        return key

    def _least_free(self, unconstrained: bool) -> bool:
        """LeastFreeCapacity for unconstrained pod sets under TASProfileMixed; BestFit otherwise (KEP-2724)."""
        return unconstrained and self.options.profile_mixed

    # -- one group --------------------------------------------------------------------------------
    def place(
        self,
        workers: PodSetRequest,
        leader: PodSetRequest | None,
        assumed: Mapping[str, Mapping[str, int]],
        simulate_empty: bool,
        required_domain: str = "",
    ) -> tuple[dict[str, TopologyAssignment], str]:
        """`findTopologyAssignment`: the assignments of the workers (and leader) or a reason.
        `required_domain` (a domain id) confines the pods to that domain, to replace a failed node."""
        tree = self.tree
        tr = workers.topology_request
        p = Params(count=workers.count, leader_count=1 if leader is not None else 0)
        constraints = _slices(tr)
        if constraints:
            p.slice_size = constraints[0].size
            if p.slice_size <= 0:
                return {}, "slice topology requested, but slice size not provided"
        p.required = tr is not None and tr.required is not None
        p.unconstrained = (tr is not None and tr.unconstrained) or workers.implied or _slice_only(tr)
        key = self.level_key_for(workers)
        if key is None:
            return {}, "topology level not specified"
        requested = tree.level_index(key)
        if requested is None:
            return {}, f"no requested topology level: {key}"
        p.requested_level = requested
        slice_key = constraints[0].topology if constraints else tree.levels[-1]
        slice_level = tree.level_index(slice_key)
        if slice_level is None:
            return {}, f"no requested topology level for slices: {slice_key}"
        p.slice_level = slice_level
        if p.requested_level > p.slice_level:
            return {}, f"podset slice topology {slice_key} is above the podset topology {key}"
        at_level, reason = self._slice_size_at_level(constraints, p.slice_size, p.slice_level)
        if reason:
            return {}, reason
        p.slice_size_at_level = at_level
        if at_level:
            p.multi_layer = constraints

        self._fill_in_counts(workers, leader, p, assumed, simulate_empty, required_domain)

        fit: list[Domain] = []
        fit_level = 0
        use_balanced = False
        if self.options.balanced_placement and not p.required and not p.unconstrained:
            fit, threshold = balanced.find_best_domains(self, p)
            if threshold > 0:
                fit, fit_level, reason = balanced.apply(self, p, threshold, fit)
                use_balanced = not reason
        if not use_balanced:
            fit_level, fit, reason = self._find_level_with_fit_domains(p.requested_level, p)
            if reason:
                return {}, reason

        fit = self.update_counts_to_minimum(fit, p.count, p.leader_count, p.slice_size, p.unconstrained, True)
        level = fit_level
        last = len(tree.levels) - 1
        while not use_balanced and level < min(last, p.slice_level):
            # Above the slice level: spread greedily over all lower domains of the chosen ones.
            lower = self.sorted_domains(lower_domains(fit), p.unconstrained)
            fit = self.update_counts_to_minimum(lower, p.count, p.leader_count, p.slice_size, p.unconstrained, True)
            level += 1
        while level < last:
            # At or below the slice level: each chosen domain hands its own pods to its children.
            size = p.slice_size
            if level >= p.slice_level:
                size = p.slice_size_at_level.get(level + 1, 1)
            new_fit: list[Domain] = []
            for dom in fit:
                lower = self.sorted_domains(dom.children, p.unconstrained)
                if size > 1:
                    for c in lower:
                        c.slice_count = c.pod_count // size
                        c.slice_count_with_leader = c.pod_count_with_leader // size
                new_fit += self.update_counts_to_minimum(
                    lower, dom.pod_count, dom.leader_count, size, p.unconstrained, size > 1
                )
            fit = new_fit
            level += 1

        out: dict[str, TopologyAssignment] = {}
        if leader is not None:
            leader_domains: list[Domain] = []
            worker_domains: list[Domain] = []
            for dom in fit:
                if dom.leader_count > 0:
                    clone = dom.shallow_clone()
                    clone.pod_count = dom.leader_count
                    leader_domains.append(clone)
                if dom.pod_count > 0:
                    worker_domains.append(dom)
            out[leader.name] = self._build_assignment(leader_domains)
            fit = worker_domains
        out[workers.name] = self._build_assignment(fit)
        return out, ""

    def _slice_size_at_level(
        self, constraints: Sequence[SliceConstraint], slice_size: int, slice_level: int
    ) -> tuple[dict[int, int], str]:
        """Slice size per level for the inner layers of multi-layer constraints (`buildSliceSizeAtLevel`):
        each inner layer is strictly lower than, and divides the size of, the layer above it."""
        out: dict[int, int] = {}
        prev_size, prev_level = slice_size, slice_level
        for layer in constraints[1:]:
            idx = self.tree.level_index(layer.topology)
            if idx is None:
                return {}, f"no requested topology level for additional slice layer: {layer.topology}"
            if idx <= prev_level:
                return (
                    {},
                    f"additional slice layer topology {layer.topology} must be at a lower level than {self.tree.levels[prev_level]}",
                )
            if layer.size == 0 or prev_size % layer.size != 0:
                return {}, f"additional slice layer size {layer.size} must evenly divide parent layer size {prev_size}"
            for lvl in range(prev_level + 1, idx + 1):
                out[lvl] = layer.size
            prev_size, prev_level = layer.size, idx
        return out, ""

    # -- phase 1 ----------------------------------------------------------------------------------
    def _fill_in_counts(
        self,
        workers: PodSetRequest,
        leader: PodSetRequest | None,
        p: Params,
        assumed: Mapping[str, Mapping[str, int]],
        simulate_empty: bool,
        required_domain: str,
    ) -> None:
        tree = self.tree
        self.stats = stats = nodes.ExclusionStats()
        requests = dict(workers.requests)
        requests[PODS] = requests.get(PODS, 0) + 1
        leader_requests: dict[str, int] | None = None
        if leader is not None:
            leader_requests = dict(leader.requests)
            leader_requests[PODS] = leader_requests.get(PODS, 0) + 1
        tolerations = (*workers.tolerations, *self.flavor.tolerations)
        # Only a hostname-level topology knows its nodes: filter them like kube-scheduler would.
        filter_nodes = tree.lowest_is_node and bool(
            tree.any_taints
            or workers.node_selector
            or workers.required_affinity is not None
            or self.options.respect_preferred_affinity
        )
        # Counts per capacity object of leaves nothing is loaded on (most leaves of a large cluster).
        pristine: dict[int, LeafCounts] = {}
        last_capacity: dict[str, int] | None = None
        last_counts: LeafCounts = (0, "", 0, 0, 0, 0)
        # Slices are counted on the leaves only when the slice level is the lowest one.
        leaf_slice_size = p.slice_size if p.slice_level == len(tree.levels) - 1 else 0
        stats.total_nodes = len(tree.leaves)
        filtered = filter_nodes or bool(required_domain)
        for leaf in tree.leaves.values():
            leaf.affinity_score = 0
            if filtered and self._left_out(leaf, workers, tolerations, filter_nodes, required_domain):
                leaf.pod_count = leaf.pod_count_with_leader = leaf.leader_count = 0
                leaf.slice_count = leaf.slice_count_with_leader = 0
                continue
            capacity = leaf.capacity
            if leaf.free is capacity and (simulate_empty or not leaf.tas_usage) and leaf.id not in assumed:
                if capacity is not last_capacity:
                    counts = pristine.get(id(capacity))
                    if counts is None:
                        counts = pristine[id(capacity)] = _leaf_counts(
                            requests, leader_requests, dict(capacity), leaf_slice_size
                        )
                    last_capacity, last_counts = capacity, counts
                counts = last_counts
            else:
                remaining = leaf.remaining(simulate_empty)
                for r, v in assumed.get(leaf.id, {}).items():
                    remaining[r] = remaining.get(r, 0) - v
                counts = _leaf_counts(requests, leader_requests, remaining, leaf_slice_size)
            (
                leaf.pod_count,
                limiting,
                leaf.leader_count,
                leaf.pod_count_with_leader,
                leaf.slice_count,
                leaf.slice_count_with_leader,
            ) = counts
            if leaf.pod_count == 0 and limiting:
                stats.resources[limiting] = stats.resources.get(limiting, 0) + 1
        tree.fill_in_all_counts(p.slice_size, p.slice_level, p.slice_size_at_level, p.leader_count > 0)

    def _left_out(
        self,
        leaf: Domain,
        workers: PodSetRequest,
        tolerations: Sequence[Toleration],
        filter_nodes: bool,
        required_domain: str,
    ) -> bool:
        """Whether the leaf's node is filtered out as kube-scheduler would (untolerated taint, node
        selector, required affinity) or lies outside `required_domain`, counted in `self.stats`;
        scores a kept node's preferred affinity."""
        stats = self.stats
        if filter_nodes and leaf.node is not None:
            taint = nodes.untolerated_taint(leaf.node.taints, tolerations)
            if taint is not None:
                stats.taints[str(taint)] = stats.taints.get(str(taint), 0) + 1
                return True
            if any(leaf.node.labels.get(k) != v for k, v in workers.node_selector.items()):
                stats.node_selector += 1
                return True
            if workers.required_affinity is not None and not nodes.matches_affinity(
                workers.required_affinity, leaf.node
            ):
                stats.affinity += 1
                return True
            if self.options.respect_preferred_affinity:
                leaf.affinity_score = nodes.affinity_score(workers.preferred_affinity, leaf.node)
        if required_domain and not (
            (full := domain_id(leaf.level_values)) == required_domain or full.startswith(required_domain + ",")
        ):
            stats.topology_domain += 1
            return True
        return False

    # -- phase 2 ----------------------------------------------------------------------------------
    def _find_level_with_fit_domains(self, level: int, p: Params) -> tuple[int, list[Domain], str]:
        """The best domains at `level` holding every slice and leader; a preferred request climbs a
        level when no single domain does, an unconstrained one takes several (`findLevelWithFitDomains`)."""
        domains = list(self.tree.per_level[level].values())
        if not domains:
            return 0, [], f"no topology domains at level: {self.tree.levels[level]}"
        ordered = self.sorted_domains_with_leader(domains, p.unconstrained)
        top = ordered[0]
        slice_count = p.count // p.slice_size
        best_fit = not self._least_free(p.unconstrained)
        if best_fit and top.slice_count_with_leader >= slice_count and top.leader_count >= p.leader_count:
            top = self.best_fit_for_slices(ordered, slice_count, p.leader_count)

        def not_fit(fit_count: int, total: int) -> str:
            if p.multi_layer:
                return self._multi_layer_not_fit_message(level, p.count, p.multi_layer)
            return self._not_fit_message(fit_count, total, p.slice_size)

        if self._least_free(p.unconstrained):
            for cand in ordered:
                capacity = cand.slice_count
                if p.leader_count > 0:
                    if cand.leader_count < p.leader_count:
                        continue
                    capacity = cand.slice_count_with_leader
                if capacity >= slice_count:
                    return level, [cand], ""
            if p.required:
                return 0, [], not_fit(ordered[-1].pod_count, slice_count)
        if top.slice_count_with_leader >= slice_count and top.leader_count >= p.leader_count:
            return level, [top], ""
        if p.required:
            if self.options.respect_preferred_affinity:
                # A lower affinity tier may still hold everything: take its tightest domain.
                for i, dom in enumerate(ordered[1:], start=1):
                    if dom.slice_count_with_leader >= slice_count and dom.leader_count >= p.leader_count:
                        return level, [self.best_fit_for_slices(ordered[i:], slice_count, p.leader_count)], ""
            return 0, [], not_fit(top.slice_count, slice_count)
        if level > 0 and not p.unconstrained:
            return self._find_level_with_fit_domains(level - 1, p)

        results: list[Domain] = []
        remaining_slices, remaining_leaders = slice_count, p.leader_count
        # Place the leader first where it costs the fewest workers, then the workers.
        ordered = self.prioritize_leader_domain(ordered, p.count, p.leader_count, p.slice_size, True)
        idx = 0
        while remaining_leaders > 0 and idx < len(ordered) and ordered[idx].leader_count > 0:
            dom = ordered[idx]
            if best_fit and dom.slice_count_with_leader >= remaining_slices:
                dom = self.best_fit_for_slices(ordered[idx:], remaining_slices, remaining_leaders)
            results.append(dom)
            remaining_leaders -= dom.leader_count
            remaining_slices -= dom.slice_count_with_leader
            idx += 1
        if remaining_leaders > 0:
            return 0, [], not_fit(p.leader_count - remaining_leaders, slice_count)
        ordered = self.sorted_domains(ordered[idx:], p.unconstrained)
        for i, dom in enumerate(ordered):
            if remaining_slices <= 0:
                break
            if best_fit and dom.slice_count >= remaining_slices:
                dom = self.best_fit_for_slices(ordered[i:], remaining_slices, 0)
            results.append(dom)
            remaining_slices -= dom.slice_count
        if remaining_slices > 0:
            return 0, [], not_fit(slice_count - remaining_slices, slice_count)
        return level, results, ""

    def sorted_domains_with_leader(self, domains: Iterable[Domain], unconstrained: bool) -> list[Domain]:
        """Leader-capable first, then by slices with a leader (most first, or fewest under
        LeastFreeCapacity), then fewest pods with a leader, then level values (`sortedDomainsWithLeader`)."""
        sign = 1 if self._least_free(unconstrained) else -1
        by_affinity = self.options.respect_preferred_affinity
        return sorted(
            domains,
            key=lambda d: (
                -d.leader_count,
                -d.affinity_score if by_affinity else 0,
                sign * d.slice_count_with_leader,
                d.pod_count_with_leader,
                d.level_values,
            ),
        )

    def sorted_domains(self, domains: Iterable[Domain], unconstrained: bool) -> list[Domain]:
        """By slices (most first for BestFit, fewest for LeastFreeCapacity), then fewest pods, then level
        values (`sortedDomains`)."""
        sign = 1 if self._least_free(unconstrained) else -1
        by_affinity = self.options.respect_preferred_affinity
        return sorted(
            domains,
            key=lambda d: (-d.affinity_score if by_affinity else 0, sign * d.slice_count, d.pod_count, d.level_values),
        )

    def _best_fit_by(
        self, domains: Sequence[Domain], needed: int, count: Callable[[Domain], int], leaders: int
    ) -> Domain:
        """The first domain with the smallest count still >= needed, skipping domains without room
        for the leaders; the first domain when none fits (`findBestFitDomainBy`). With preferred
        affinity, only the domains of the top affinity score compete (`topAffinityTierDomains`)."""
        if self.options.respect_preferred_affinity:
            top = domains[0].affinity_score
            tier = next((i for i, d in enumerate(domains) if d.affinity_score != top), len(domains))
            domains = domains[:tier]
        best, best_count = domains[0], _MAX
        found = False
        for dom in domains:
            if dom.leader_count < leaders:
                continue
            n = count(dom)
            if needed <= n < best_count:
                best, best_count, found = dom, n, True
        return best if found else domains[0]

    def best_fit_for_slices(self, domains: Sequence[Domain], needed: int, leaders: int) -> Domain:
        if leaders > 0:
            return self._best_fit_by(domains, needed, lambda d: d.slice_count_with_leader, leaders)
        return self._best_fit_by(domains, needed, lambda d: d.slice_count, leaders)

    def _best_fit_for_pods(self, domains: Sequence[Domain], needed: int, leaders: int) -> Domain:
        if leaders > 0:
            return self._best_fit_by(domains, needed, lambda d: d.pod_count_with_leader, leaders)
        return self._best_fit_by(domains, needed, lambda d: d.pod_count, leaders)

    @staticmethod
    def prioritize_leader_domain(
        domains: list[Domain], count: int, leader_count: int, slice_size: int, use_slices: bool
    ) -> list[Domain]:
        """Move to the front the first leader-capable domain whose leader costs no more workers than the
        spare capacity of the set (`prioritizeLeaderDomain`), so the descent keeps what phase 1 counted."""
        if leader_count == 0 or len(domains) < 2:
            return domains
        need = count // slice_size if use_slices else count
        available = sum(d.slice_count if use_slices else d.pod_count for d in domains)
        for i, dom in enumerate(domains):
            if dom.leader_count < leader_count:
                continue
            if use_slices:
                penalty = dom.slice_count - dom.slice_count_with_leader
            else:
                penalty = dom.pod_count - dom.pod_count_with_leader
            if available - penalty < need:
                continue
            if i == 0:
                return domains
            return [dom, *domains[:i], *domains[i + 1 :]]
        return domains

    def update_counts_to_minimum(
        self,
        domains: list[Domain],
        count: int,
        leader_count: int,
        slice_size: int,
        unconstrained: bool,
        use_slices: bool,
    ) -> list[Domain]:
        """Take domains in order until `count` pods (or slices) and the leaders are placed, trimming the
        last one to what is left; BestFit swaps in the tightest domain that holds the rest
        (`updateCountsToMinimumGeneric`). Returns the domains used with their counts set to the pods placed."""
        domains = self.prioritize_leader_domain(domains, count, leader_count, slice_size, use_slices)
        best_fit = not self._least_free(unconstrained)
        result: list[Domain] = []
        remaining = count // slice_size if use_slices else count
        remaining_leaders = leader_count
        with_leader_attr = "slice_count_with_leader" if use_slices else "pod_count_with_leader"
        primary_attr = "slice_count" if use_slices else "pod_count"
        factor = slice_size if use_slices else 1
        for i, dom in enumerate(domains):
            if remaining_leaders > 0:
                # `consumeWithLeadersGeneric`
                if best_fit and getattr(dom, with_leader_attr) >= remaining and dom.leader_count >= remaining_leaders:
                    if use_slices:
                        dom = self.best_fit_for_slices(domains[i:], remaining, remaining_leaders)
                    else:
                        dom = self._best_fit_for_pods(domains[i:], remaining, remaining_leaders)
                with_leader = getattr(dom, with_leader_attr)
                if with_leader >= remaining and dom.leader_count >= remaining_leaders:
                    setattr(dom, primary_attr, remaining)
                    dom.leader_count = remaining_leaders
                    dom.pod_count = remaining * factor
                    result.append(dom)
                    return result
                with_leader = min(with_leader, remaining)
                setattr(dom, with_leader_attr, with_leader)
                dom.leader_count = min(dom.leader_count, remaining_leaders)
                setattr(dom, primary_attr, with_leader)
                dom.pod_count = with_leader * factor
                remaining_leaders -= dom.leader_count
                remaining -= with_leader
                result.append(dom)
                continue
            if use_slices:
                if best_fit and dom.slice_count >= remaining:
                    dom = self.best_fit_for_slices(domains[i:], remaining, 0)
                dom.leader_count = 0
                if dom.slice_count >= remaining:
                    dom.pod_count = remaining * slice_size
                    dom.slice_count = remaining
                    result.append(dom)
                    return result
                dom.pod_count = dom.slice_count * slice_size
                remaining -= dom.slice_count
                result.append(dom)
                continue
            if best_fit and dom.pod_count >= remaining:
                dom = self._best_fit_for_pods(domains[i:], remaining, 0)
            dom.leader_count = 0
            if dom.pod_count >= remaining:
                dom.pod_count = remaining
                result.append(dom)
                return result
            remaining -= dom.pod_count
            result.append(dom)
        # Upstream logs "code assumptions violated" and places nothing here.
        return []

    # -- output -----------------------------------------------------------------------------------
    def _build_assignment(self, domains: list[Domain]) -> TopologyAssignment:
        """The domains holding pods, sorted by level values; only the hostname level when the
        topology's lowest level is the node (`buildAssignment`)."""
        tree = self.tree
        start = len(tree.levels) - 1 if tree.lowest_is_node else 0
        return TopologyAssignment(
            levels=tree.levels[start:],
            domains=tuple(
                DomainAssignment(d.level_values[start:], d.pod_count)
                for d in sorted(domains, key=lambda d: d.level_values)
                if d.pod_count != 0
            ),
        )

    def _exclusions_suffix(self) -> str:
        if not self.stats.has_exclusions():
            return ""
        return f". Total nodes: {self.stats.total_nodes}; excluded: {self.stats.format_reasons()}"

    def _topology(self) -> str:
        return nodes.go_quote(self.flavor.topology_name)

    def _not_fit_message(self, fit: int, total: int, slice_size: int) -> str:
        unit = "pod" if slice_size == 1 else "slice"
        if fit == 0:
            msg = f"topology {self._topology()} doesn't allow to fit any of {total} {unit}(s)"
        else:
            msg = f"topology {self._topology()} allows to fit only {fit} out of {total} {unit}(s)"
        return msg + self._exclusions_suffix()

    def _multi_layer_not_fit_message(self, level: int, count: int, constraints: Sequence[SliceConstraint]) -> str:
        """Per layer, how many slices fit in the best domain of `level` (`multiLayerNotFitMessage`)."""
        msg = f"topology {self._topology()} doesn't allow to fit"
        best: Domain | None = None
        for dom in self.tree.per_level[level].values():
            if (
                best is None
                or dom.slice_count > best.slice_count
                or (dom.slice_count == best.slice_count and dom.id < best.id)
            ):
                best = dom
        if best is None:
            return msg
        for c in constraints:
            target = self.tree.level_index(c.topology)
            if target is None:
                continue
            fit = _slices_in_subtree(best, level, target, c.size)
            msg += f"; {fit}/{count // c.size} slice(s) fit on level {c.topology}"
        return msg + self._exclusions_suffix()


def _slices_in_subtree(dom: Domain, level: int, target: int, size: int) -> int:
    if level == target:
        return dom.pod_count // size
    return sum(_slices_in_subtree(c, level + 1, target, size) for c in dom.children)
