"""Upstream TAS placement scenarios, driven through `find_topology_assignments`.

`TestFindTopologyAssignments` and `TestFindTopologyAssignmentsMultiLayerReplacement` of upstream
v0.19.2's `pkg/cache/scheduler/tas_cache_test.go` are read into `data/tas_find_topology_assignments.json`
by `port_upstream_tas.py` (case ids are the upstream case names; a `workload` with unhealthy nodes
becomes a `Replacement`). As upstream's harness does: a pod set without a topology request is "implied"; running
non-TAS pods (not Succeeded/Failed) use their node's capacity; `priorOwnUsage` is TAS usage of this
flavor, `priorFlavorUsage` usage already reserved on the same hosts by a sibling flavor (hostname
topologies only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from webhook.core.tas import (
    DomainAssignment,
    DomainUsage,
    Flavor,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Options,
    PodSetRequest,
    PodSetResult,
    PreferredTerm,
    Replacement,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    find_topology_assignments,
    from_v1beta2,
    to_v1beta2,
)
from webhook.core.tas.encoding import encode_by_hostname_prefix, hostname_prefix_keys

HOSTNAME = "kubernetes.io/hostname"
_CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "tas_find_topology_assignments.json").read_text()
)

# Upstream's feature gates this engine models, as Options fields; the others it follows at their default.
_GATES = {
    "TASBalancedPlacement": "balanced_placement",
    "TASProfileMixed": "profile_mixed",
    "TASRespectNodeAffinityPreferred": "respect_preferred_affinity",
    "ElasticJobsViaWorkloadSlicesWithTAS": "elastic_workload_slices",
    "SkipReassignmentForPodOwnedWorkloads": "skip_reassignment_for_pod_owned",
}
# On by default, or (ElasticJobsViaWorkloadSlices) only a prerequisite of a gate above.
_NO_EFFECT = {"TASMultiLayerTopology", "ElasticJobsViaWorkloadSlices"}


def _node(d: dict[str, Any]) -> Node:
    return Node(
        name=d["name"],
        labels=d["labels"],
        allocatable=d["allocatable"],
        taints=tuple(Taint(t["key"], t["effect"], t["value"]) for t in d["taints"]),
        ready=d["ready"],
        unschedulable=d["unschedulable"],
    )


def _term(t: dict[str, Any]) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=tuple(
            NodeSelectorRequirement(r["key"], r["operator"], tuple(r["values"])) for r in t.get("match_expressions", [])
        ),
        match_fields=tuple(
            NodeSelectorRequirement(r["key"], r["operator"], tuple(r["values"])) for r in t.get("match_fields", [])
        ),
    )


def _pod_set(d: dict[str, Any]) -> PodSetRequest:
    tr = d["topology_request"]
    affinity = d["required_affinity"]
    return PodSetRequest(
        name=d["name"],
        count=d["count"],
        requests=d["requests"],
        topology_request=TopologyRequest.from_api(tr) if tr is not None else None,
        implied=tr is None,
        group=d["pod_set_group_name"],
        previous_assignment=_ta(d["previous_assignment"]),
        tolerations=tuple(Toleration(**t) for t in d["tolerations"]),
        node_selector=d["node_selector"],
        required_affinity=None if affinity is None else tuple(_term(t) for t in affinity),
        preferred_affinity=tuple(PreferredTerm(t["weight"], _term(t["preference"])) for t in d["preferred_affinity"]),
    )


def _usage(rows: list[dict[str, Any]]) -> list[DomainUsage]:
    return [DomainUsage(tuple(u["values"]), u["requests"], u["count"]) for u in rows]


def _ta(ta: dict[str, Any] | None) -> TopologyAssignment | None:
    if ta is None:
        return None
    return TopologyAssignment(
        tuple(ta["levels"]), tuple(DomainAssignment(tuple(x["values"]), x["count"]) for x in ta["domains"])
    )


def _want(d: dict[str, Any]) -> PodSetResult:
    return PodSetResult(_ta(d["want_assignment"]), d["want_reason"])


def _replacement(r: dict[str, Any] | None) -> Replacement | None:
    if r is None:
        return None
    assignments = {name: ta for name, raw in r["assignments"].items() if (ta := _ta(raw)) is not None}
    return Replacement(r["unhealthy_node"], assignments, r["owned_by_single_pod"])


def _options(gates: dict[str, bool]) -> Options:
    fields: dict[str, bool] = {}
    for gate, on in gates.items():
        if gate in _GATES:
            fields[_GATES[gate]] = on
        elif not (gate in _NO_EFFECT and on):
            pytest.fail(f"case sets feature gate {gate}={on}, which the engine does not model")
    return Options(**fields)


def run_case(case: dict[str, Any]) -> tuple[dict[str, PodSetResult], dict[str, PodSetResult]]:
    levels = tuple(case["levels"])
    flavor = Flavor("default", levels, tuple(_node(n) for n in case["nodes"]), node_labels=case["node_labels"])
    non_tas: dict[str, dict[str, int]] = {}
    for pod in case["pods"]:
        if pod["phase"] in ("Succeeded", "Failed"):
            continue
        used = non_tas.setdefault(pod["node_name"], {})
        for r, v in {**pod["requests"], "pods": 1}.items():
            used[r] = used.get(r, 0) + v
    assumed: dict[str, dict[str, int]] = {}
    if levels[-1] == HOSTNAME:
        for u in _usage(case["priorFlavorUsage"]):
            assumed[",".join(u.values)] = {**{r: v * u.count for r, v in u.requests.items()}, "pods": u.count}
    got = find_topology_assignments(
        flavor,
        [_pod_set(ps) for ps in case["pod_sets"]],
        tas_usage=_usage(case["priorOwnUsage"]),
        non_tas_usage=non_tas,
        assumed_usage=assumed,
        replacement=_replacement(case["replacement"]),
        options=_options(case["feature_gates"]),
    )
    want = {ps["name"]: _want(ps) for ps in case["pod_sets"]}
    return got, want


@pytest.mark.parametrize("case", [c for c in _CASES if "skip" not in c], ids=lambda c: c["name"])
def test_find_topology_assignments(case: dict[str, Any]) -> None:
    got, want = run_case(case)
    assert got == want


_GB200 = "multi-layer topology: mimic a real-world GB200 cluster, with NVL36 arch (2GPUs/node); dc required; aizone slices of 48; rack slices of 16; TASMultiLayerTopology"


def test_not_ported_cases_are_the_known_ones() -> None:
    """The one upstream case the porter cannot read builds its nodes in Go code: written out below."""
    assert {c["name"]: c["skip"] for c in _CASES if "skip" in c} == {_GB200: "function literal"}


def test_multi_layer_gb200_cluster() -> None:
    """Upstream case `_GB200`: 1 dc x 2 aizones x 2 blocks x 2 racks, 18 nodes of 2 GPUs per rack;
    96 pods of 2 GPUs, 48 per aizone and 16 per rack, land on 6 racks."""
    dc, az, block, rack = (
        "cloud.com/datacenter",
        "cloud.com/aizone",
        "cloud.com/topology-block",
        "cloud.com/topology-rack",
    )
    racks = [
        ("aizone0", "block0", "r0"),
        ("aizone0", "block0", "r1"),
        ("aizone0", "block1", "r2"),
        ("aizone0", "block1", "r3"),
    ]
    racks += [
        ("aizone1", "block2", "r4"),
        ("aizone1", "block2", "r5"),
        ("aizone1", "block3", "r6"),
        ("aizone1", "block3", "r7"),
    ]
    nodes = tuple(
        Node(f"{b}-{r}-{a}-n{i}", {dc: "dc0", az: a, block: b, rack: r}, {"nvidia.com/gpu": 2, "pods": 110})
        for a, b, r in racks
        for i in range(18)
    )
    request = TopologyRequest.from_api(
        {
            "required": dc,
            "podsetSliceRequiredTopologyConstraints": [{"topology": az, "size": 48}, {"topology": rack, "size": 16}],
        }
    )
    got = find_topology_assignments(
        Flavor("default", (dc, az, block, rack), nodes), [PodSetRequest("", 96, {"nvidia.com/gpu": 2}, request)]
    )
    chosen = [("aizone0", "block0", "r0"), ("aizone0", "block0", "r1"), ("aizone0", "block1", "r2")]
    chosen += [("aizone1", "block2", "r4"), ("aizone1", "block2", "r5"), ("aizone1", "block3", "r6")]
    want = TopologyAssignment((dc, az, block, rack), tuple(DomainAssignment(("dc0", *v), 16) for v in chosen))
    assert got == {"": PodSetResult(want)}


# -- the v1beta2 encoding: upstream pkg/util/tas/tas_assignment_test.go ------------------------------
_ENCODING: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "tas_assignment_encoding.json").read_text()
)


def _internal(d: dict[str, Any]) -> TopologyAssignment:
    return TopologyAssignment(
        tuple(d["levels"]), tuple(DomainAssignment(tuple(x["values"]), x["count"]) for x in d.get("domains") or [])
    )


def _hostname_assignment(hostnames: list[str], counts: list[int] | None = None) -> TopologyAssignment:
    counts = counts or [1] * len(hostnames)
    return TopologyAssignment(
        (HOSTNAME,), tuple(DomainAssignment((h,), c) for h, c in zip(hostnames, counts, strict=True))
    )


def _prefix_assignment(domain_count: int) -> TopologyAssignment:
    """Upstream's hostnamePrefixAssignment: half the hosts in pool a, half in pool b."""
    half = domain_count // 2
    return _hostname_assignment(
        [f"pool-a-node-{i:05d}" if i < half else f"pool-b-node-{i - half:05d}" for i in range(domain_count)]
    )


@pytest.mark.parametrize(
    "case", [c for c in _ENCODING if c["test"] == "TestV1Beta2FromInternal"], ids=lambda c: c["name"]
)
def test_v1beta2_from_internal_both_ways(case: dict[str, Any]) -> None:
    """TestV1Beta2FromInternal and TestInternalFromV1Beta2 over bothWaysTestCases."""
    assert to_v1beta2(_internal(case["internal"])) == case["v1beta2"]
    assert from_v1beta2(case["v1beta2"]) == _internal(case["internal"])


@pytest.mark.parametrize(
    "case", [c for c in _ENCODING if c["test"] == "TestInternalFromV1Beta2"], ids=lambda c: c["name"]
)
def test_internal_from_v1beta2_one_way(case: dict[str, Any]) -> None:
    """TestInternalFromV1Beta2 over oneWayTestCases: encodings we never produce still decode."""
    assert from_v1beta2(case["v1beta2"]) == _internal(case["internal"])


@pytest.mark.parametrize(
    "case",
    [c for c in _ENCODING if c["test"] == "TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns"],
    ids=lambda c: c["name"],
)
def test_compact_topology_assignment_encoding_with_hostname_prefix_runs(case: dict[str, Any]) -> None:
    assert encode_by_hostname_prefix(_internal(case["internal"])) == case["v1beta2"]
    assert from_v1beta2(case["v1beta2"]) == _internal(case["internal"])


def test_compact_encoding_without_hostname_level() -> None:
    ta = TopologyAssignment(
        ("cloud.example.com/rack",), (DomainAssignment(("rack-a",), 1), DomainAssignment(("rack-b",), 2))
    )
    got = encode_by_hostname_prefix(ta)
    assert len(got["slices"]) == 1
    assert from_v1beta2(got) == ta


@pytest.mark.parametrize(
    ("name", "domain_count", "want_prefix_encoding"),
    [
        ("enabled keeps one-slice hostname-prefix encoding", 1, True),
        ("enabled uses smaller single-slice encoding", 4, False),
        ("enabled uses smaller hostname-prefix encoding", 20, True),
    ],
)
def test_v1beta2_from_internal_hostname_prefix_and_fallback(
    name: str, domain_count: int, want_prefix_encoding: bool
) -> None:
    """TestV1Beta2FromInternal_hostnamePrefixFeatureGateAndFallback (the gate is on by default)."""
    ta = _prefix_assignment(domain_count)
    got = to_v1beta2(ta)
    if want_prefix_encoding:
        assert got == encode_by_hostname_prefix(ta)
    else:
        assert len(got["slices"]) == 1
        assert got != encode_by_hostname_prefix(ta)
    assert from_v1beta2(got) == ta


def test_compact_encoding_preserves_domain_order() -> None:
    ta = _hostname_assignment(
        ["gke-c-pool-a-hash1-aa", "gke-c-pool-b-hash2-cc", "gke-c-pool-a-hash1-bb", "gke-c-pool-b-hash2-dd"],
        [1, 2, 3, 4],
    )
    encoded = encode_by_hostname_prefix(ta)
    assert len(encoded["slices"]) == 4
    assert from_v1beta2(encoded) == ta


def test_v1beta2_from_internal_large_hostname_assignment_with_many_pools() -> None:
    pools, per_pool = 2_000, 100
    ta = _hostname_assignment(
        [f"gke-cluster-pool-{p:04d}-{p:08x}-{n:04x}" for p in range(pools) for n in range(per_pool)]
    )
    got = to_v1beta2(ta)
    assert [s["domainCount"] for s in got["slices"]] == [100_000, 100_000]


@pytest.mark.parametrize(
    ("name", "hostnames", "want"),
    [
        (
            "longest reusable prefixes",
            ["gke-c-pool-a-hash1-aa", "gke-c-pool-a-hash1-bb", "gke-c-pool-b-hash2-cc", "gke-c-pool-b-hash2-dd"],
            ["gke-c-pool-a-hash1-", "gke-c-pool-a-hash1-", "gke-c-pool-b-hash2-", "gke-c-pool-b-hash2-"],
        ),
        ("no reusable prefix", ["node-a", "host-b"], ["", ""]),
        ("no delimiter", ["nodea", "hostb"], None),
    ],
)
def test_reusable_hostname_prefix_keys(name: str, hostnames: list[str], want: list[str] | None) -> None:
    assert hostname_prefix_keys(_hostname_assignment(hostnames).domains) == want


def test_reusable_hostname_prefix_keys_backs_off_to_fit_slice_limit() -> None:
    hosts = [f"a-{'y' if i % 2 else 'x'}-{i:04d}" for i in range(1_001)]
    assert hostname_prefix_keys(_hostname_assignment(hosts).domains) == ["a-"] * 1_001


def test_compact_encoding_falls_back_when_no_prefix_depth_fits_slice_limit() -> None:
    ta = _hostname_assignment([f"{'b-y' if i % 2 else 'a-x'}-{i:04d}" for i in range(1_001)])
    assert hostname_prefix_keys(ta.domains) is None
    got = encode_by_hostname_prefix(ta)
    assert len(got["slices"]) == 1
    assert from_v1beta2(got) == ta
