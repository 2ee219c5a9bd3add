"""The tree of topology domains of one TAS flavor, with the per-run counts the algorithm keeps on it.

Mirrors upstream v0.19.2's `pkg/cache/scheduler/tas_topology_tree.go` (the static tree built from the
flavor's nodes) together with the per-snapshot `domainState`/`leafCapacity` of
`tas_flavor_snapshot.go`. As upstream, the tree is built once per flavor and its nodes and shared by
every placement until they change (`Flavor.memo`, see `assign.Placer`); the per-run counts live on the
domains and each run resets them, and the usage loaded for a run is undone by the next
`reset_usage` (only the leaves it touched: most leaves of a large cluster stay empty).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from webhook.core.tas.types import HOSTNAME_LABEL, Node, domain_id

__all__ = ["Domain", "Tree", "clone_subtree", "count_in", "lower_domains"]


@dataclass(eq=False, slots=True)
class Domain:
    """A topology domain. `id` identifies it within its level: the hostname alone for a leaf of a
    topology whose lowest level is the hostname, else its level values joined by commas.

    The counts are scratch state of one placement run (upstream's `domainState`): first how many
    pods/slices fit, then how many are placed."""

    id: str
    level_values: tuple[str, ...]
    parent: Domain | None = None
    children: list[Domain] = field(default_factory=list)
    # leaf only: the summed allocatable of its nodes and the node's labels (hostname topologies)
    capacity: dict[str, int] = field(default_factory=dict)
    node: Node | None = None
    # capacity minus non-TAS usage; the capacity object itself (shared by leaves of equal capacity)
    # until usage is loaded, then a copy: never written in place while shared
    free: dict[str, int] = field(default_factory=dict)
    tas_usage: Mapping[str, int] = field(default_factory=dict)  # the shared _EMPTY until usage is loaded

    pod_count: int = 0
    slice_count: int = 0
    pod_count_with_leader: int = 0
    slice_count_with_leader: int = 0
    leader_count: int = 0
    # summed weight of the preferred node-affinity terms its nodes match
    affinity_score: int = 0

    def clear_state(self) -> None:
        """Zero the counts; the affinity score stays (it depends on the pod set, not on placement)."""
        self.pod_count = self.slice_count = self.pod_count_with_leader = 0
        self.slice_count_with_leader = self.leader_count = 0

    def shallow_clone(self) -> Domain:
        """A copy sharing parent and children but with its own counts (`shallowCloneWithState`)."""
        return copy.copy(self)

    def remaining(self, simulate_empty: bool) -> dict[str, int]:
        out = dict(self.free)
        if not simulate_empty:
            for r, v in self.tas_usage.items():
                out[r] = out.get(r, 0) - v
        return out


_EMPTY: dict[str, int] = {}  # a leaf's tas_usage before any is loaded; never written


def lower_domains(domains: Iterable[Domain]) -> list[Domain]:
    """The children of all `domains`, in order (`lowerLevelDomains`)."""
    return [c for d in domains for c in d.children]


def clone_subtree(dom: Domain, parent: Domain | None = None) -> Domain:
    """A deep copy of `dom`'s subtree with its own counts, to try a placement without touching the
    originals (`cloneDomain`)."""
    clone = copy.copy(dom)
    clone.parent = parent
    clone.children = [clone_subtree(c, clone) for c in dom.children]
    return clone


def count_in(requests: Mapping[str, int], capacity: Mapping[str, int]) -> tuple[int, str]:
    """How many times `requests` fit in `capacity`, and the most limiting resource (ties by name)
    (`resources.CountInWithLimitingResource`); a negative remainder fits zero times."""
    best: int | None = None
    limiting = ""
    for name, value in requests.items():
        have = capacity.get(name, 0)
        n = 2**31 - 1 if value == 0 else (0 if have < 0 else min(have // value, 2**31 - 1))
        if best is None or n < best or (n == best and name < limiting):
            best, limiting = n, name
    return (best or 0), limiting


class Tree:
    """The domains per level, the roots and the leaves, built from the flavor's nodes (`newTopologyTree`)."""

    def __init__(self, levels: Sequence[str], nodes: Sequence[Node]) -> None:
        self.levels: tuple[str, ...] = tuple(levels)
        self.lowest_is_node = bool(levels) and levels[-1] == HOSTNAME_LABEL
        self.leaves: dict[str, Domain] = {}
        self.node_to_leaf: dict[str, str] = {}
        self.per_level: list[dict[str, Domain]] = [{} for _ in levels]
        for node in nodes:
            self.node_to_leaf[node.name] = self._add_node(node)
        for leaf in self.leaves.values():
            self.per_level[-1][leaf.id] = leaf
            self._link(leaf)
        for level in self.per_level:
            for d in level.values():
                d.children.sort(key=lambda c: c.level_values)
        self.roots = sorted(self.per_level[0].values(), key=lambda d: d.level_values) if levels else []
        # Leaves of equal capacity share one dict, so a run counts how many pods fit it once.
        interned: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
        for leaf in self.leaves.values():
            leaf.capacity = interned.setdefault(tuple(sorted(leaf.capacity.items())), leaf.capacity)
            leaf.free = leaf.capacity
            leaf.tas_usage = _EMPTY
        self._touched: list[Domain] = []
        # Whether any leaf is a node with taints: without any, a run need not check tolerations.
        self.any_taints = any(leaf.node is not None and leaf.node.taints for leaf in self.leaves.values())

    def _add_node(self, node: Node) -> str:
        values = tuple(node.labels.get(k, "") for k in self.levels)
        leaf_id = node.labels.get(HOSTNAME_LABEL, "") if self.lowest_is_node else domain_id(values)
        leaf = self.leaves.get(leaf_id)
        if leaf is None:
            leaf = Domain(id=leaf_id, level_values=values, node=node if self.lowest_is_node else None)
            self.leaves[leaf_id] = leaf
        for r, v in node.allocatable.items():
            leaf.capacity[r] = leaf.capacity.get(r, 0) + v
        return leaf_id

    def _link(self, dom: Domain) -> None:
        if len(dom.level_values) == 1:
            return
        parent_values = dom.level_values[:-1]
        pid = domain_id(parent_values)
        level = self.per_level[len(parent_values) - 1]
        parent = level.get(pid)
        if parent is None:
            parent = Domain(id=pid, level_values=parent_values)
            level[pid] = parent
            self._link(parent)
        dom.parent = parent
        parent.children.append(dom)

    def level_index(self, key: str) -> int | None:
        try:
            return self.levels.index(key)
        except ValueError:
            return None

    # -- usage --------------------------------------------------------------------------------
    def reset_usage(self) -> None:
        """Forget the usage loaded for the previous run."""
        for leaf in self._touched:
            leaf.free = leaf.capacity
            leaf.tas_usage = _EMPTY
        self._touched.clear()

    def add_non_tas_usage(self, node_name: str, usage: Mapping[str, int]) -> None:
        leaf_id = self.node_to_leaf.get(node_name)
        if leaf_id is None:
            return
        leaf = self.leaves[leaf_id]
        if leaf.free is leaf.capacity:
            leaf.free = dict(leaf.capacity)
            self._touched.append(leaf)
        for r, v in usage.items():
            leaf.free[r] = leaf.free.get(r, 0) - v

    def add_tas_usage(self, leaf_id: str, usage: Mapping[str, int]) -> None:
        """Usage of admitted TAS pods; a domain without a leaf (its node gone or not Ready) is skipped."""
        leaf = self.leaves.get(leaf_id)
        if leaf is None:
            return
        if leaf.tas_usage is _EMPTY:
            leaf.tas_usage = usage  # read, never written: the next load replaces it
            self._touched.append(leaf)
            return
        merged = dict(leaf.tas_usage)
        for r, v in usage.items():
            merged[r] = merged.get(r, 0) + v
        leaf.tas_usage = merged

    # -- capacity roll-up -----------------------------------------------------------------------
    def fill_in_counts(
        self,
        dom: Domain,
        slice_size: int,
        slice_level: int,
        level: int,
        slice_size_at_level: Mapping[int, int] | None,
        leader_required: bool,
    ) -> None:
        """Roll the leaves' pod counts up to `dom` (`fillInCountsHelper`): a parent holds its children's
        pods (rounded down to the inner slice size of multi-layer constraints), its slices at the slice
        level, and the capacity left when it also hosts a leader (the child losing the fewest pods)."""
        for child in dom.children:
            self.fill_in_counts(child, slice_size, slice_level, level + 1, slice_size_at_level, leader_required)
        _roll_up(dom, slice_size, level == slice_level, (slice_size_at_level or {}).get(level + 1), leader_required)

    def fill_in_all_counts(
        self, slice_size: int, slice_level: int, slice_size_at_level: Mapping[int, int] | None, leader_required: bool
    ) -> None:
        """`fill_in_counts` for the whole tree, level by level from the leaves up: the same counts
        without a call per domain, which matters at thousands of nodes. The leaves' own counts, their
        slices included, are set by the caller (`Placer._fill_in_counts`)."""
        for level in range(len(self.levels) - 2, -1, -1):
            at_slice, inner = level == slice_level, (slice_size_at_level or {}).get(level + 1)
            for dom in self.per_level[level].values():
                if leader_required:
                    _roll_up(dom, slice_size, at_slice, inner, leader_required)
                else:
                    _roll_up_without_leader(dom, slice_size, at_slice, inner)


def _roll_up_without_leader(dom: Domain, slice_size: int, at_slice_level: bool, inner: int | None) -> None:
    """`_roll_up` of a domain with children when no leader is placed: every count "with leader"
    then equals its plain count (so does every leaf's, see `_leaf_counts`), and no leader counts."""
    pods = slices = affinity = 0
    for child in dom.children:
        pods += child.pod_count if inner is None else child.pod_count // inner * inner
        slices += child.slice_count
        affinity += child.affinity_score
    if at_slice_level:
        slices = pods // slice_size
    dom.pod_count = dom.pod_count_with_leader = pods
    dom.slice_count = dom.slice_count_with_leader = slices
    dom.leader_count = 0
    dom.affinity_score = affinity


def _roll_up(dom: Domain, slice_size: int, at_slice_level: bool, inner: int | None, leader_required: bool) -> None:
    """One domain's counts from its children's (a leaf keeps its own, slices aside)."""
    if not dom.children:
        if at_slice_level:
            dom.slice_count = dom.pod_count // slice_size
            dom.slice_count_with_leader = dom.pod_count_with_leader // slice_size
        return
    pods = slices = leaders = affinity = 0
    contributor = False
    min_pod_diff = min_slice_diff = 2**31 - 1
    for child in dom.children:
        child_pods, child_pods_wl = child.pod_count, child.pod_count_with_leader
        if inner is not None:
            child_pods = child_pods // inner * inner
            child_pods_wl = child_pods_wl // inner * inner
        pods += child_pods
        slices += child.slice_count
        if not leader_required or child.leader_count > 0:
            contributor = True
            if child_pods - child_pods_wl < min_pod_diff:
                min_pod_diff = child_pods - child_pods_wl
            if child.slice_count - child.slice_count_with_leader < min_slice_diff:
                min_slice_diff = child.slice_count - child.slice_count_with_leader
        if child.leader_count > leaders:
            leaders = child.leader_count
        affinity += child.affinity_score
    dom.pod_count = pods
    slices_wl = 0
    if contributor:
        dom.pod_count_with_leader = pods - min_pod_diff
        slices_wl = slices - min_slice_diff
    else:
        dom.pod_count_with_leader = 0
    dom.leader_count = leaders
    dom.affinity_score = affinity
    if at_slice_level:
        slices = dom.pod_count // slice_size
        slices_wl = dom.pod_count_with_leader // slice_size
    dom.slice_count = slices
    dom.slice_count_with_leader = slices_wl
