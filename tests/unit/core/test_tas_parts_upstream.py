"""Upstream unit tests of the TAS engine's parts: the domain tree, domain ordering, usage helpers and
balanced placement.

Ported from upstream v0.19.2 `pkg/cache/scheduler/tas_flavor_snapshot_test.go`,
`tas_balanced_placement_test.go` and `tas_topology_tree_test.go`. The table-driven ones are read
into `data/` by `port_upstream_tas.py` (case ids are the upstream case names); those whose cases
are built in Go code are written out here, named after the upstream test. Upstream keeps the
per-domain counts in a side array of a snapshot; here they sit on the `Domain`, which these tests
fill in directly as upstream's fill `domainState`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from webhook.core.tas import balanced
from webhook.core.tas.assign import Params, Placer, has_level
from webhook.core.tas.flavor import add_assumed_usage, merge_assignments, stale_domain, truncate_assignment
from webhook.core.tas.tree import Domain, Tree
from webhook.core.tas.types import (
    DomainAssignment,
    Flavor,
    Node,
    Options,
    PodSetRequest,
    TopologyAssignment,
    TopologyRequest,
)

HOSTNAME = "kubernetes.io/hostname"
_DATA = Path(__file__).parent / "data"
_SNAPSHOT: list[dict[str, Any]] = json.loads((_DATA / "tas_flavor_snapshot.json").read_text())
_BALANCED: list[dict[str, Any]] = json.loads((_DATA / "tas_balanced_placement.json").read_text())

_STATE_FIELDS = {
    "podCount": "pod_count",
    "sliceCount": "slice_count",
    "podCountWithLeader": "pod_count_with_leader",
    "sliceCountWithLeader": "slice_count_with_leader",
    "leaderCount": "leader_count",
    "affinityScore": "affinity_score",
}


def _cases(table: list[dict[str, Any]], test: str) -> Any:
    return pytest.mark.parametrize("case", [c for c in table if c["test"] == test], ids=lambda c: c["name"])


def _placer(levels: tuple[str, ...] = (), options: Options | None = None) -> Placer:
    return Placer(Flavor("dummy", levels, ()), options or Options())


def _domain(id: str, level_values: list[str] | tuple[str, ...] = (), **state: int) -> Domain:
    d = Domain(id=id, level_values=tuple(level_values))
    for k, v in state.items():
        setattr(d, _STATE_FIELDS.get(k, k), v)
    return d


def _spec_domain(spec: dict[str, Any]) -> Domain:
    """A `testDomainSpec`: the domain and its `domainState`."""
    d = spec["domain"]
    return _domain(d["id"], d.get("levelValues") or (), **spec.get("state", {}))


def _state(d: Domain) -> dict[str, int]:
    return {go: getattr(d, py) for go, py in _STATE_FIELDS.items() if go != "affinityScore"}


def _want_state(state: dict[str, int]) -> dict[str, int]:
    return {go: state.get(go, 0) for go in _STATE_FIELDS if go != "affinityScore"}


def _assignment(d: dict[str, Any]) -> TopologyAssignment:
    return TopologyAssignment(
        tuple(d.get("Levels") or ()),
        tuple(DomainAssignment(tuple(x["Values"]), x.get("Count", 0)) for x in d.get("Domains") or []),
    )


def _node(d: dict[str, Any]) -> Node:
    return Node(d["name"], d["labels"], d["allocatable"])


# -- tas_flavor_snapshot_test.go ---------------------------------------------------------------------
@_cases(_SNAPSHOT, "TestHasLevel")
def test_has_level(case: dict[str, Any]) -> None:
    raw = case["podSetTopologyRequest"]
    tr = None if raw is None else TopologyRequest.from_api({k[:1].lower() + k[1:]: v for k, v in raw.items()})
    assert has_level(("level-1", "level-2"), tr) == case["want"]


@_cases(_SNAPSHOT, "TestSortedDomainsWithLeader")
def test_sorted_domains_with_leader(case: dict[str, Any]) -> None:
    placer = _placer(
        ("block",), Options(respect_preferred_affinity=case.get("enableTASPreferredSchedulingAffinity", False))
    )
    got = placer.sorted_domains_with_leader([_spec_domain(s) for s in case["domains"]], case["unconstrained"])
    assert [d.id for d in got] == case["wantOrder"]


@_cases(_SNAPSHOT, "TestSortedDomains")
def test_sorted_domains(case: dict[str, Any]) -> None:
    placer = _placer(
        ("block",), Options(respect_preferred_affinity=case.get("enableTASPreferredSchedulingAffinity", False))
    )
    got = placer.sorted_domains([_spec_domain(s) for s in case["domains"]], case["unconstrained"])
    assert [d.id for d in got] == case["wantOrder"]


@pytest.mark.parametrize(
    ("name", "a", "b", "want"),
    [
        (
            "isLowestLevelNode with same-parent sibling domains: ascending by hostname",
            ["b1", "r1", "node-a"],
            ["b1", "r1", "node-b"],
            -1,
        ),
        (
            "isLowestLevelNode with same-parent sibling domains: descending by hostname",
            ["b1", "r1", "node-b"],
            ["b1", "r1", "node-a"],
            1,
        ),
        (
            "isLowestLevelNode with same-parent sibling domains: equal hostname",
            ["b1", "r1", "node-a"],
            ["b1", "r1", "node-a"],
            0,
        ),
        (
            "fallback comparator: multi-level inputs with different parents sorted lexicographically across levels",
            ["b1", "r1", "node-z"],
            ["b1", "r2", "node-a"],
            -1,
        ),
        (
            "fallback comparator: non-hostname levels sorted lexicographically across levels",
            ["b1", "r1"],
            ["b1", "r2"],
            -1,
        ),
    ],
)
def test_compare_domain_level_values(name: str, a: list[str], b: list[str], want: int) -> None:
    """TestCompareDomainLevelValues: with equal counts the level values break the tie, in this order."""
    placer = _placer(("block", "rack", HOSTNAME) if len(a) == 3 else ("block", "rack"))
    first, second = _domain("a", a), _domain("b", b)
    got = placer.sorted_domains([first, second], False)
    if want < 0:
        assert got == [first, second]
    elif want > 0:
        assert got == [second, first]
    else:
        assert first.level_values == second.level_values


@_cases(_SNAPSHOT, "TestCountPodsInAssignment")
def test_count_pods_in_assignment(case: dict[str, Any]) -> None:
    assert _assignment(case["assignment"]).pod_count() == case["want"]


@_cases(_SNAPSHOT, "TestComputeAssumedUsageFromAssignment")
def test_compute_assumed_usage_from_assignment(case: dict[str, Any]) -> None:
    # The test's singlePodRequests, declared outside its table.
    assert _assignment(case["assignment"]).usage({"cpu": 1000, "memory": 1024}) == case["want"]


@_cases(_SNAPSHOT, "TestAddAssumedUsage")
def test_add_assumed_usage(case: dict[str, Any]) -> None:
    assumed = {k: dict(v) for k, v in case["assumedUsage"].items()}
    add_assumed_usage(assumed, _assignment(case["assignment"]), case["tasRequests"]["SinglePodRequests"])
    assert assumed == case["want"]


@_cases(_SNAPSHOT, "TestIsTopologyAssignmentStale")
def test_is_topology_assignment_stale(case: dict[str, Any]) -> None:
    tree = Tree(case["tree"]["levels"], [_node(n) for n in case["tree"]["nodes"]])
    assert stale_domain(tree, _assignment(case["assignment"])) == (case.get("wantStaleDomain") or None)


@_cases(_SNAPSHOT, "TestMergeTopologyAssignments")
def test_merge_topology_assignments(case: dict[str, Any]) -> None:
    nodes = [
        Node("x", {"level-1": "a", "level-2": "b"}, {}),
        Node("y", {"level-1": "a", "level-2": "c"}, {}),
        Node("z", {"level-1": "d", "level-2": "e"}, {}),
        Node("w", {"level-1": "d", "level-2": "f"}, {}),
    ]
    tree = Tree(("level-1", "level-2"), nodes)
    got = merge_assignments(tree, _assignment(case["a"]), _assignment(case["b"]))
    assert got == _assignment(case["want"])


@_cases(_SNAPSHOT, "TestTruncateAssignment")
def test_truncate_assignment(case: dict[str, Any]) -> None:
    assert truncate_assignment(_assignment(case["assignment"]), case["newCount"]) == _assignment(case["want"])


# -- tas_balanced_placement_test.go ------------------------------------------------------------------
@_cases(_BALANCED, "TestSelectOptimalDomainSetToFit")
def test_select_optimal_domain_set_to_fit(case: dict[str, Any]) -> None:
    domains = [_spec_domain(s) for s in case["domains"]]
    got = balanced.select_optimal_domain_set(_placer(), domains, case["workerCount"], case["leaderCount"], 1, True)
    assert sorted(d.id for d in got or []) == sorted(case["want"])


@pytest.mark.parametrize("by_entropy", [False, True], ids=["balanced selection", "entropy-prioritized selection"])
def test_select_optimal_domain_set_to_fit_stable_tie_break(by_entropy: bool) -> None:
    equal = {"podCount": 3, "sliceCount": 3, "podCountWithLeader": 3, "sliceCountWithLeader": 3}
    domains = [
        _domain("leaf-a", ["block-b", "host-a"], **equal),
        _domain("leaf-m", ["block-b", "host-m"], **equal),
        _domain("leaf-z", ["block-a", "host-z"], **equal),
        _domain("leaf-zz", ["block-a", "host-zz"], **equal),
    ]
    got = balanced.select_optimal_domain_set(_placer(), domains, 1, 0, 1, by_entropy)
    assert [d.id for d in got or []] == ["leaf-z"]


def _with_children(d: Domain, *pod_counts: int) -> Domain:
    d.children = [_domain("", podCount=n) for n in pod_counts]
    return d


@pytest.mark.parametrize(
    ("name", "domains", "want"),
    [
        (
            "tie-breaking on level values when capacity and entropy are equal",
            lambda: [
                _with_children(_domain("leaf-a", ["block-b", "host-a"], leaderCount=1, sliceCountWithLeader=5), 2, 2),
                _with_children(_domain("leaf-m", ["block-b", "host-m"], leaderCount=1, sliceCountWithLeader=5), 2, 2),
                _with_children(_domain("leaf-z", ["block-a", "host-z"], leaderCount=1, sliceCountWithLeader=5), 2, 2),
            ],
            ["leaf-z", "leaf-a", "leaf-m"],
        ),
        (
            "capacity overrides entropy, and higher entropy overrides level values",
            lambda: [
                _with_children(_domain("lower-leader", ["a"], leaderCount=0, sliceCountWithLeader=100), 50, 50),
                _with_children(_domain("lower-capacity", ["b"], leaderCount=1, sliceCountWithLeader=4), 2, 2),
                _with_children(_domain("low-entropy", ["c"], leaderCount=1, sliceCountWithLeader=5), 4, 0),
                _with_children(_domain("high-entropy", ["d"], leaderCount=1, sliceCountWithLeader=5), 2, 2),
            ],
            ["high-entropy", "low-entropy", "lower-capacity", "lower-leader"],
        ),
    ],
)
def test_compare_domain_capacity_and_entropy(name: str, domains: Any, want: list[str]) -> None:
    assert [d.id for d in sorted(domains(), key=balanced.capacity_and_entropy_key)] == want


@_cases(_BALANCED, "TestPlaceSlicesOnDomainsBalanced")
def test_place_slices_on_domains_balanced(case: dict[str, Any]) -> None:
    domains = [_spec_domain(s) for s in case["domains"]]
    got, _ = balanced.place_slices_balanced(
        _placer(), domains, case["sliceCount"], case["leaderCount"], case["sliceSize"], case["threshold"]
    )
    assert {d.id: _state(d) for d in got} == {k: _want_state(v) for k, v in case["want"].items()}


def test_place_slices_on_domains_balanced_stable_tie_break() -> None:
    equal = {"podCount": 3, "sliceCount": 3, "podCountWithLeader": 3, "sliceCountWithLeader": 3}
    domains = [_domain("leaf-a", ["block-b", "host-a"], **equal), _domain("leaf-z", ["block-a", "host-z"], **equal)]
    got, reason = balanced.place_slices_balanced(_placer(), domains, 1, 0, 1, 1)
    assert reason == ""
    assert [d.id for d in got] == ["leaf-z"]


def _link(parent: Domain, *children: Domain) -> Domain:
    parent.children = list(children)
    for c in children:
        c.parent = parent
    return parent


def test_prune_domains_below_threshold_keeps_worker_only_domain() -> None:
    """TestPruneDomainsBelowThreshold, "keeps worker only domain"."""
    leader_leaf = _domain(
        "leader-leaf", podCount=6, sliceCount=6, leaderCount=1, podCountWithLeader=5, sliceCountWithLeader=5
    )
    leader_domain = _link(
        _domain("leader-domain", podCount=6, sliceCount=6, leaderCount=1, podCountWithLeader=5, sliceCountWithLeader=5),
        leader_leaf,
    )
    worker_leaf = _domain(
        "worker-only-leaf", podCount=5, sliceCount=5, leaderCount=1, podCountWithLeader=4, sliceCountWithLeader=4
    )
    worker_domain = _link(
        _domain(
            "worker-only-domain", podCount=5, sliceCount=5, leaderCount=1, podCountWithLeader=4, sliceCountWithLeader=4
        ),
        worker_leaf,
    )
    parent = _link(_domain("parent-domain"), leader_domain, worker_domain)

    balanced.prune_below_threshold(_placer(), [parent], 5, 1, 2, 0, True)

    def values(d: Domain) -> tuple[int, ...]:
        return (d.pod_count, d.slice_count, d.pod_count_with_leader, d.slice_count_with_leader, d.leader_count)

    assert values(leader_domain) == (6, 6, 5, 5, 1)
    assert values(parent) == (11, 11, 10, 10, 1)
    assert values(worker_domain) == (5, 5, 0, 0, 0)
    assert values(worker_leaf) == (5, 5, 0, 0, 0)


def test_prune_domains_below_threshold_preserves_affinity_score() -> None:
    pruned = _domain("pruned-leaf", sliceCount=1, affinityScore=100)
    kept = _domain("kept-leaf", podCount=4, sliceCount=4, podCountWithLeader=4, affinityScore=10)
    parent = _link(_domain("parent"), pruned, kept)
    balanced.prune_below_threshold(_placer(), [parent], 2, 1, 1, 0, False)
    assert pruned.affinity_score == 100
    assert parent.affinity_score == 110


@_cases(_BALANCED, "TestFindBestDomainsForBalancedPlacement")
def test_find_best_domains_for_balanced_placement(case: dict[str, Any]) -> None:
    placer = _placer(("block", "rack"))
    by_id: dict[str, Domain] = {}
    for spec in case["domains"]:
        d = _domain(spec["id"], spec["levelValues"], **{k: v for k, v in spec.items() if k in _STATE_FIELDS})
        if not spec.get("parentID"):
            placer.tree.per_level[0][d.id] = d
        else:
            _link(by_id[spec["parentID"]], *by_id[spec["parentID"]].children, d)
            placer.tree.per_level[1][d.id] = d
        by_id[spec["id"]] = d
    raw = case["params"]
    params = Params(
        count=raw["count"],
        slice_size=raw["sliceSize"],
        leader_count=raw["leaderCount"],
        requested_level=raw["requestedLevelIdx"],
        slice_level=raw["sliceLevelIdx"],
    )
    domains, threshold = balanced.find_best_domains(placer, params)
    assert threshold == case["wantThreshold"]
    assert len(domains) == case["wantDomainsCount"]


# -- tas_topology_tree_test.go -----------------------------------------------------------------------
_BLOCK, _RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"


def _tree_node(name: str, block: str, rack: str) -> Node:
    """Upstream's makeTreeTestNode."""
    return Node(
        name,
        {_BLOCK: block, _RACK: rack, HOSTNAME: name},
        {"cpu": 4000, "memory": 16 * 2**30, "pods": 110},
    )


def _dump(tree: Tree) -> dict[tuple[int, str], dict[str, Any]]:
    """Upstream's dumpTopologyTree: per (level, id), the values, links, leaf node and cpu."""
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for level, domains in enumerate(tree.per_level):
        for d in domains.values():
            entry: dict[str, Any] = {"levelValues": list(d.level_values)}
            if d.children:
                entry["children"] = sorted((level + 1, c.id) for c in d.children)
            if d.parent is not None:
                entry["parent"] = (level - 1, d.parent.id)
            else:
                entry["root"] = True
            if d.id in tree.leaves and tree.leaves[d.id] is d:
                entry["leaf"] = True
                entry["cpu"] = d.capacity.get("cpu", 0)
                if d.node is not None:
                    entry["node"] = d.node.name
            out[(level, d.id)] = entry
    return out


def test_new_topology_tree_lowest_level_is_hostname() -> None:
    tree = Tree(
        (_BLOCK, _RACK, HOSTNAME),
        [_tree_node("n1", "b1", "r1"), _tree_node("n2", "b1", "r1"), _tree_node("n3", "b1", "r2")],
    )
    assert _dump(tree) == {
        (0, "b1"): {"levelValues": ["b1"], "children": [(1, "b1,r1"), (1, "b1,r2")], "root": True},
        (1, "b1,r1"): {"levelValues": ["b1", "r1"], "parent": (0, "b1"), "children": [(2, "n1"), (2, "n2")]},
        (1, "b1,r2"): {"levelValues": ["b1", "r2"], "parent": (0, "b1"), "children": [(2, "n3")]},
        (2, "n1"): {"levelValues": ["b1", "r1", "n1"], "parent": (1, "b1,r1"), "leaf": True, "node": "n1", "cpu": 4000},
        (2, "n2"): {"levelValues": ["b1", "r1", "n2"], "parent": (1, "b1,r1"), "leaf": True, "node": "n2", "cpu": 4000},
        (2, "n3"): {"levelValues": ["b1", "r2", "n3"], "parent": (1, "b1,r2"), "leaf": True, "node": "n3", "cpu": 4000},
    }


def test_new_topology_tree_lowest_level_is_not_hostname() -> None:
    tree = Tree(
        (_BLOCK, _RACK), [_tree_node("n1", "b1", "r1"), _tree_node("n2", "b1", "r1"), _tree_node("n3", "b1", "r2")]
    )
    assert _dump(tree) == {
        (0, "b1"): {"levelValues": ["b1"], "children": [(1, "b1,r1"), (1, "b1,r2")], "root": True},
        (1, "b1,r1"): {"levelValues": ["b1", "r1"], "parent": (0, "b1"), "leaf": True, "cpu": 8000},
        (1, "b1,r2"): {"levelValues": ["b1", "r2"], "parent": (0, "b1"), "leaf": True, "cpu": 4000},
    }


def test_new_topology_tree_leaf_and_root_ids_collide() -> None:
    tree = Tree((_BLOCK, HOSTNAME), [_tree_node("b1", "b1", "r1")])
    assert _dump(tree) == {
        (0, "b1"): {"levelValues": ["b1"], "children": [(1, "b1")], "root": True},
        (1, "b1"): {"levelValues": ["b1", "b1"], "parent": (0, "b1"), "leaf": True, "node": "b1", "cpu": 4000},
    }


def test_snapshot_reuse_after_balanced_placement() -> None:
    """TestSnapshotReuseAfterBalancedPlacement: placing twice on one flavor gives the same result,
    the clones of the first balanced run leaving no trace."""
    placer = Placer(
        Flavor("default", (_BLOCK, _RACK, HOSTNAME), (_tree_node("n1", "b1", "r1"), _tree_node("n2", "b1", "r2"))),
        Options(balanced_placement=True),
    )
    workers = PodSetRequest("workers", 6, {"cpu": 1000}, TopologyRequest(preferred=_RACK))
    first = placer.place(workers, None, {}, False)
    second = placer.place(workers, None, {}, False)
    assert first[1] == ""
    assert first == second
