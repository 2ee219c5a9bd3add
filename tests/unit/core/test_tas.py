"""TAS placement cases of our own, where upstream's tables are thin: node filtering details, the
failure message, the request's API form, pod-set groups and the encoded result."""

from __future__ import annotations

from typing import Any

from webhook.core.tas import (
    DomainAssignment,
    DomainUsage,
    Flavor,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSetRequest,
    PodSetResult,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    find_topology_assignments,
    has_level,
    to_v1beta2,
)

HOST = "kubernetes.io/hostname"
BLOCK, RACK = "cloud.com/block", "cloud.com/rack"
LEVELS = (BLOCK, RACK, HOST)


def node(
    name: str,
    block: str = "b1",
    rack: str = "r1",
    cpu: int = 1000,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    ready: bool = True,
    unschedulable: bool = False,
) -> Node:
    all_labels = {BLOCK: block, RACK: rack, HOST: name, **(labels or {})}
    return Node(name, all_labels, {"cpu": cpu, "pods": 10}, taints, ready, unschedulable)


def hosts(*names_counts: tuple[str, int]) -> TopologyAssignment:
    return TopologyAssignment((HOST,), tuple(DomainAssignment((n,), c) for n, c in names_counts))


def place(
    nodes: list[Node], *pod_sets: PodSetRequest, levels: tuple[str, ...] = LEVELS, **kw: Any
) -> dict[str, PodSetResult]:
    return find_topology_assignments(Flavor("t", levels, tuple(nodes)), list(pod_sets), **kw)


def required(level: str) -> TopologyRequest:
    return TopologyRequest(required=level)


def test_tolerations_match_like_the_kube_scheduler() -> None:
    """Exists with no key tolerates every taint; Equal needs the value; a PreferNoSchedule taint never
    excludes; numeric Gt compares the taint's value."""
    nodes = [
        node("a", taints=(Taint("gpu", "NoSchedule", "yes"),)),
        node("b", taints=(Taint("soft", "PreferNoSchedule"),)),
        node("c", taints=(Taint("gen", "NoExecute", "5"),)),
    ]
    ps = PodSetRequest("p", 3, {"cpu": 1000}, TopologyRequest(preferred=BLOCK))
    # Only b takes a pod that tolerates nothing.
    assert place(nodes, ps)["p"].reason == (
        'topology "t" allows to fit only 1 out of 3 pod(s). Total nodes: 3; excluded: '
        'taint "gen=5:NoExecute": 1, taint "gpu=yes:NoSchedule": 1'
    )
    tolerating = PodSetRequest(
        "p",
        3,
        {"cpu": 1000},
        TopologyRequest(preferred=BLOCK),
        tolerations=(Toleration("gpu", "Equal", "yes"), Toleration("gen", "Gt", "4")),
    )
    assert place(nodes, tolerating)["p"] == PodSetResult(hosts(("a", 1), ("b", 1), ("c", 1)))
    assert (
        place(
            nodes,
            PodSetRequest(
                "p", 3, {"cpu": 1000}, TopologyRequest(preferred=BLOCK), tolerations=(Toleration(operator="Exists"),)
            ),
        )["p"].reason
        == ""
    )


def test_required_affinity_and_node_selector_exclusions_are_counted_and_sorted() -> None:
    nodes = [
        node("a", labels={"zone": "z1"}),
        node("b", labels={"zone": "z2"}),
        node("c", labels={"zone": "z1", "gpu": "x"}),
        node("d", cpu=0, labels={"zone": "z1", "gpu": "x"}),
    ]
    ps = PodSetRequest(
        "p",
        2,
        {"cpu": 1000},
        TopologyRequest(preferred=BLOCK),
        node_selector={"zone": "z1"},
        required_affinity=(NodeSelectorTerm((NodeSelectorRequirement("gpu", "Exists"),)),),
    )
    assert place(nodes, ps)["p"].reason == (
        'topology "t" allows to fit only 1 out of 2 pod(s). Total nodes: 4; excluded: '
        'affinity: 1, nodeSelector: 1, resource "cpu": 1'
    )


def test_affinity_by_node_name_and_an_empty_term_list() -> None:
    nodes = [node("a"), node("b")]
    by_name = (NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "NotIn", ("a",)),)),)
    ps = PodSetRequest("p", 1, {"cpu": 1000}, required(HOST), required_affinity=by_name)
    assert place(nodes, ps)["p"] == PodSetResult(hosts(("b", 1)))
    nothing = PodSetRequest("p", 1, {"cpu": 1000}, required(HOST), required_affinity=())
    assert place(nodes, nothing)["p"].reason.endswith("excluded: affinity: 2")


def test_without_a_hostname_level_nodes_are_not_filtered() -> None:
    """Upstream checks taints, selectors and affinity only when the lowest level is the node: a
    rack-level topology counts the capacity of every node of the flavor."""
    nodes = [node("a", taints=(Taint("gpu", "NoSchedule"),)), node("b", labels={"zone": "z9"})]
    ps = PodSetRequest("p", 2, {"cpu": 1000}, required(RACK), node_selector={"zone": "z1"})
    got = place(nodes, ps, levels=(BLOCK, RACK))["p"]
    assert got == PodSetResult(TopologyAssignment((BLOCK, RACK), (DomainAssignment(("b1", "r1"), 2),)))


def test_nodes_outside_the_flavor_or_unusable_are_left_out() -> None:
    nodes = [
        node("a", ready=False),
        node("b", unschedulable=True),
        Node("c", {BLOCK: "b1", HOST: "c"}, {"cpu": 1000, "pods": 10}),  # no rack label
        node("d", labels={"pool": "other"}),
        node("e", labels={"pool": "mine"}),
    ]
    flavor = Flavor("t", LEVELS, tuple(nodes), node_labels={"pool": "mine"})
    got = find_topology_assignments(flavor, [PodSetRequest("p", 2, {"cpu": 1000}, TopologyRequest(preferred=BLOCK))])
    assert got["p"].reason == 'topology "t" allows to fit only 1 out of 2 pod(s)'


def test_simulate_empty_ignores_tas_usage_only() -> None:
    nodes = [node("a", cpu=2000)]
    usage = [DomainUsage(("a",), {"cpu": 1000}, 1)]
    ps = PodSetRequest("p", 2, {"cpu": 500}, required(HOST))
    assert place(nodes, ps, tas_usage=usage)["p"].assignment == hosts(("a", 2))
    big = PodSetRequest("p", 4, {"cpu": 500}, required(HOST))
    assert place(nodes, big, tas_usage=usage)["p"].reason == 'topology "t" allows to fit only 2 out of 4 pod(s)'
    assert place(nodes, big, tas_usage=usage, simulate_empty=True)["p"].assignment == hosts(("a", 4))
    non_tas = {"a": {"cpu": 1000, "pods": 1}}
    assert place(nodes, big, non_tas_usage=non_tas, simulate_empty=True)["p"].reason.startswith(
        'topology "t" allows to fit only 2 out of 4'
    )


def test_topology_request_from_the_api() -> None:
    """The multi-layer list wins over the legacy slice fields; a legacy slice without a size fails."""
    both = TopologyRequest.from_api(
        {
            "required": BLOCK,
            "podSetSliceRequiredTopology": HOST,
            "podSetSliceSize": 3,
            "podsetSliceRequiredTopologyConstraints": [{"topology": RACK, "size": 2}],
        }
    )
    assert [(c.topology, c.size) for c in both.slices] == [(RACK, 2)]
    no_size = TopologyRequest.from_api({"podSetSliceRequiredTopology": RACK})
    assert has_level(LEVELS, no_size)
    got = place([node("a")], PodSetRequest("p", 1, {"cpu": 1}, no_size))
    assert got["p"] == PodSetResult(None, "slice topology requested, but slice size not provided")
    assert not has_level((BLOCK, RACK), TopologyRequest(required=HOST))


def test_a_group_places_the_one_pod_set_as_leader_and_stops_at_the_first_failure() -> None:
    nodes = [node("a", cpu=3000), node("b", "b2", "r2", cpu=1000)]
    workers = PodSetRequest("workers", 2, {"cpu": 1000}, required(BLOCK), group="g")
    leader = PodSetRequest("leader", 1, {"cpu": 1000}, required(BLOCK), group="g")
    late = PodSetRequest("late", 5, {"cpu": 1000}, required(BLOCK))
    after = PodSetRequest("after", 1, {"cpu": 1})
    got = place(nodes, leader, workers, late, after)
    assert got["leader"] == PodSetResult(hosts(("a", 1)))
    assert got["workers"] == PodSetResult(hosts(("a", 2)))
    # The group took all of a: what is left for "late" is b alone.
    assert got["late"] == PodSetResult(
        None, 'topology "t" allows to fit only 1 out of 5 pod(s). Total nodes: 2; excluded: resource "cpu": 1'
    )
    assert "after" not in got


def test_assignment_in_the_workload_status_form() -> None:
    nodes = [node(f"pool-a-{i}", cpu=2000) for i in range(3)] + [node("other", cpu=1000)]
    # BestFit fills pool-a-0 and pool-a-1, then the tightest node holding the last two: pool-a-2.
    got = place(nodes, PodSetRequest("p", 6, {"cpu": 1000}, TopologyRequest(preferred=RACK)))["p"]
    assert got.assignment is not None
    assert to_v1beta2(got.assignment) == {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 3,
                "valuesPerLevel": [{"individual": {"prefix": "pool-a-", "roots": ["0", "1", "2"]}}],
                "podCounts": {"universal": 2},
            }
        ],
    }
