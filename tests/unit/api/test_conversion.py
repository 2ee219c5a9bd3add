"""Tests for webhook/api/conversion.py: one table row per upstream rule, then round-trip properties.

Rule cases mirror apis/kueue/v1beta1/*_conversion_test.go and pkg/util/tas/tas_assignment_test.go
(behaviour, not text). The properties prove, per kind:

* v1beta1 -> v1beta2 -> v1beta1 and v1beta2 -> v1beta1 -> v1beta2 give back the original for every
  object outside the documented lossy fields (the ones upstream drops);
* for any object, lossy fields included, one conversion reaches a fixed point, so a client that reads
  and writes back in the other version never loses anything more.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhook.api import conversion
from webhook.api.conversion import ConversionError, TopologyDomain, convert

V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"
HOSTNAME = "kubernetes.io/hostname"
WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_SOURCE = "scheduling.k8s.io/priorityclass"
WPC_REF = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"}
POD_REF = {"group": "scheduling.k8s.io", "kind": "PriorityClass"}

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def obj(kind: str, version: str, spec: Any = None, status: Any = None, **meta: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": version, "kind": kind, "metadata": {"name": "x", **meta}}
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


def tas_of(workload: dict[str, Any]) -> Any:
    """The first pod set's topologyAssignment of a converted Workload."""
    return workload["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]


def domain(values: list[str], count: int) -> dict[str, Any]:
    return {"values": values, "count": count}


def universal(value: str) -> dict[str, Any]:
    return {"universal": value}


def individual(roots: list[str], prefix: str | None = None, suffix: str | None = None) -> dict[str, Any]:
    ind: dict[str, Any] = {}
    if prefix is not None:
        ind["prefix"] = prefix
    if suffix is not None:
        ind["suffix"] = suffix
    ind["roots"] = roots
    return {"individual": ind}


def slice_(count: int, values: list[dict[str, Any]], pods: int | list[int]) -> dict[str, Any]:
    pod_counts = {"individual": pods} if isinstance(pods, list) else {"universal": pods}
    return {"domainCount": count, "valuesPerLevel": values, "podCounts": pod_counts}


def wl_with_tas(version: str, ta: dict[str, Any]) -> dict[str, Any]:
    return obj(
        "Workload",
        version,
        status={
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "topologyAssignment": ta}],
            }
        },
    )


# --------------------------------------------------------------------------- one row per rule

RULES = [
    # ClusterQueue
    pytest.param(
        obj("ClusterQueue", V1, {"cohort": "team"}),
        obj("ClusterQueue", V2, {"cohortName": "team"}),
        id="cq cohort becomes cohortName",
    ),
    pytest.param(
        obj("ClusterQueue", V1, {"queueingStrategy": "StrictFIFO"}),
        obj("ClusterQueue", V2, {"queueingStrategy": "StrictFIFO"}),
        id="cq without cohort has no cohortName",
    ),
    pytest.param(
        obj("ClusterQueue", V1, {"admissionChecks": ["ac1", "ac2"]}),
        obj(
            "ClusterQueue",
            V2,
            {"admissionChecksStrategy": {"admissionChecks": [{"name": "ac1"}, {"name": "ac2"}]}},
        ),
        id="cq admissionChecks become strategy rules without onFlavors",
    ),
    pytest.param(
        obj(
            "ClusterQueue",
            V1,
            {"admissionChecksStrategy": {"admissionChecks": [{"name": "a", "onFlavors": ["f"]}]}},
        ),
        obj(
            "ClusterQueue",
            V2,
            {"admissionChecksStrategy": {"admissionChecks": [{"name": "a", "onFlavors": ["f"]}]}},
        ),
        id="cq admissionChecksStrategy is kept",
    ),
    pytest.param(
        obj("ClusterQueue", V1, {"admissionChecks": []}),
        obj("ClusterQueue", V2, {}),
        id="cq empty admissionChecks vanish",
    ),
    pytest.param(
        obj(
            "ClusterQueue",
            V1,
            {"flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}},
        ),
        obj(
            "ClusterQueue",
            V2,
            {"flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}},
        ),
        id="cq deprecated fungibility values become MayStopSearch",
    ),
    pytest.param(
        obj(
            "ClusterQueue",
            V1,
            {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "Borrow"}},
        ),
        obj(
            "ClusterQueue",
            V2,
            {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "Borrow"}},
        ),
        id="cq fungibility rewrites only the field's own deprecated value",
    ),
    pytest.param(
        obj(
            "ClusterQueue",
            V1,
            status={
                "pendingWorkloads": 1,
                "pendingWorkloadsStatus": {"clusterQueuePendingWorkload": [], "lastChangeTime": "t"},
                "fairSharing": {"weightedShare": 5, "admissionFairSharingStatus": {"lastUpdate": "t"}},
            },
        ),
        obj("ClusterQueue", V2, status={"pendingWorkloads": 1, "fairSharing": {"weightedShare": 5}}),
        id="cq status drops pendingWorkloadsStatus and admissionFairSharingStatus",
    ),
    pytest.param(
        obj("ClusterQueue", V2, {"cohortName": "team", "concurrentAdmissionPolicy": {"migration": {}}}),
        obj("ClusterQueue", V1, {"cohort": "team"}),
        id="cq to v1beta1 drops concurrentAdmissionPolicy",
    ),
    pytest.param(
        obj("ClusterQueue", V2, {"admissionChecksStrategy": {"admissionChecks": [{"name": "a"}]}}),
        obj("ClusterQueue", V1, {"admissionChecksStrategy": {"admissionChecks": [{"name": "a"}]}}),
        id="cq to v1beta1 keeps the strategy form",
    ),
    # Cohort
    pytest.param(
        obj(
            "Cohort",
            V1,
            {"parentName": "root"},
            {"fairSharing": {"weightedShare": 1, "admissionFairSharingStatus": {}}},
        ),
        obj("Cohort", V2, {"parentName": "root"}, {"fairSharing": {"weightedShare": 1}}),
        id="cohort status drops admissionFairSharingStatus",
    ),
    pytest.param(
        obj("Cohort", V2, {"parentName": "root"}, {"fairSharing": {"weightedShare": 1}}),
        obj("Cohort", V1, {"parentName": "root"}, {"fairSharing": {"weightedShare": 1}}),
        id="cohort to v1beta1 is identity",
    ),
    # LocalQueue
    pytest.param(
        obj(
            "LocalQueue",
            V1,
            status={"flavorUsage": [{"name": "f", "resources": [{"name": "cpu", "total": "1"}]}]},
        ),
        obj(
            "LocalQueue",
            V2,
            status={"flavorsUsage": [{"name": "f", "resources": [{"name": "cpu", "total": "1"}]}]},
        ),
        id="lq flavorUsage becomes flavorsUsage",
    ),
    pytest.param(
        obj(
            "LocalQueue",
            V1,
            status={"flavors": [{"name": "f", "nodeLabels": {"a": "b"}}], "pendingWorkloads": 0},
        ),
        obj("LocalQueue", V2, status={"pendingWorkloads": 0}),
        id="lq status drops flavors",
    ),
    pytest.param(
        obj(
            "LocalQueue",
            V1,
            status={"fairSharing": {"weightedShare": 2, "admissionFairSharingStatus": {"lastUpdate": "t"}}},
        ),
        obj(
            "LocalQueue",
            V2,
            status={"fairSharing": {"weightedShare": 2, "admissionFairSharingStatus": {"lastUpdate": "t"}}},
        ),
        id="lq keeps admissionFairSharingStatus",
    ),
    pytest.param(
        obj("LocalQueue", V2, {"clusterQueue": "cq"}, {"flavorsUsage": []}),
        obj("LocalQueue", V1, {"clusterQueue": "cq"}, {"flavorUsage": []}),
        id="lq to v1beta1 flavorsUsage becomes flavorUsage",
    ),
    # Workload
    pytest.param(
        obj("Workload", V1, {"priorityClassName": "low", "priorityClassSource": WPC_SOURCE, "priority": 1}),
        obj("Workload", V2, {"priorityClassRef": {**WPC_REF, "name": "low"}, "priority": 1}),
        id="wl workload priority class source becomes ref",
    ),
    pytest.param(
        obj("Workload", V1, {"priorityClassName": "low", "priorityClassSource": POD_SOURCE, "priority": 1}),
        obj("Workload", V2, {"priorityClassRef": {**POD_REF, "name": "low"}, "priority": 1}),
        id="wl pod priority class source becomes ref",
    ),
    pytest.param(
        obj("Workload", V1, {"priorityClassName": "low", "priorityClassSource": "", "priority": 1}),
        obj("Workload", V2, {"priority": 1}),
        id="wl priority class name without source is dropped",
    ),
    pytest.param(
        obj("Workload", V2, {"priorityClassRef": {**WPC_REF, "name": "hi"}, "priority": 9}),
        obj("Workload", V1, {"priorityClassName": "hi", "priorityClassSource": WPC_SOURCE, "priority": 9}),
        id="wl to v1beta1 workload priority class ref",
    ),
    pytest.param(
        obj("Workload", V2, {"priorityClassRef": {**POD_REF, "name": "hi"}, "priority": 9}),
        obj("Workload", V1, {"priorityClassName": "hi", "priorityClassSource": POD_SOURCE, "priority": 9}),
        id="wl to v1beta1 pod priority class ref",
    ),
    pytest.param(
        obj(
            "Workload",
            V2,
            {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "PriorityClass", "name": "x"}},
        ),
        obj("Workload", V1, {}),
        id="wl to v1beta1 drops a ref with a mismatched group and kind",
    ),
    pytest.param(
        obj("Workload", V1, status={"accumulatedPastExexcutionTimeSeconds": 0}),
        obj("Workload", V2, status={"accumulatedPastExecutionTimeSeconds": 0}),
        id="wl accumulated execution time typo is fixed, zero kept",
    ),
    pytest.param(
        obj("Workload", V2, status={"accumulatedPastExecutionTimeSeconds": 42}),
        obj("Workload", V1, status={"accumulatedPastExexcutionTimeSeconds": 42}),
        id="wl to v1beta1 accumulated execution time gets the typo back",
    ),
    pytest.param(
        obj(
            "Workload",
            V2,
            {
                "preemptionGates": [{"name": "g"}],
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "topologyRequest": {
                            "required": "rack",
                            "podsetSliceRequiredTopologyConstraints": [{"topology": "rack", "size": 2}],
                        },
                    }
                ],
            },
            {"preemptionGates": [{"name": "g", "position": "Open"}]},
        ),
        obj(
            "Workload",
            V1,
            {"podSets": [{"name": "main", "count": 1, "topologyRequest": {"required": "rack"}}]},
            {},
        ),
        id="wl to v1beta1 drops preemption gates and slice constraints",
    ),
    pytest.param(
        wl_with_tas(V1, {"levels": ["a", "b"], "domains": [domain(["a1", "b1"], 10), domain(["a1", "b2"], 20)]}),
        wl_with_tas(
            V2,
            {
                "levels": ["a", "b"],
                "slices": [slice_(2, [universal("a1"), individual(["1", "2"], prefix="b")], [10, 20])],
            },
        ),
        id="wl tas domains are compacted into one slice",
    ),
    pytest.param(
        wl_with_tas(V1, {"levels": ["a"], "domains": []}),
        wl_with_tas(V2, {"levels": ["a"]}),
        id="wl tas with no domains has no slices",
    ),
    pytest.param(
        wl_with_tas(
            V2,
            {
                "levels": ["a", "b"],
                "slices": [
                    slice_(2, [universal("a1"), individual(["1", "2"], prefix="b")], [10, 20]),
                    slice_(2, [universal("a2"), individual(["first", "second"], suffix="-in-a2")], 1),
                ],
            },
        ),
        wl_with_tas(
            V1,
            {
                "levels": ["a", "b"],
                "domains": [
                    domain(["a1", "b1"], 10),
                    domain(["a1", "b2"], 20),
                    domain(["a2", "first-in-a2"], 1),
                    domain(["a2", "second-in-a2"], 1),
                ],
            },
        ),
        id="wl to v1beta1 tas slices are expanded in order",
    ),
    pytest.param(
        wl_with_tas(V2, {"levels": ["a"]}),
        wl_with_tas(V1, {"levels": ["a"], "domains": []}),
        id="wl to v1beta1 tas without slices has empty domains",
    ),
    # MultiKueueCluster
    pytest.param(
        obj("MultiKueueCluster", V1, {"kubeConfig": {"location": "secret", "locationType": "Secret"}}),
        obj(
            "MultiKueueCluster",
            V2,
            {"clusterSource": {"kubeConfig": {"location": "secret", "locationType": "Secret"}}},
        ),
        id="mkc kubeConfig moves under clusterSource",
    ),
    pytest.param(
        obj(
            "MultiKueueCluster",
            V1,
            {"kubeConfig": {"location": "", "locationType": "Secret"}, "clusterProfileRef": {"name": "p"}},
        ),
        obj("MultiKueueCluster", V2, {"clusterSource": {"clusterProfileRef": {"name": "p"}}}),
        id="mkc kubeConfig without location is not set",
    ),
    pytest.param(
        obj("MultiKueueCluster", V2, {"clusterSource": {"clusterProfileRef": {"name": "p"}}}),
        obj("MultiKueueCluster", V1, {"clusterProfileRef": {"name": "p"}}),
        id="mkc to v1beta1 clusterProfileRef moves out of clusterSource",
    ),
    # kinds whose schemas barely differ
    pytest.param(
        obj("AdmissionCheck", V1, {"controllerName": "c", "retryDelayMinutes": 15}),
        obj("AdmissionCheck", V2, {"controllerName": "c"}),
        id="ac drops retryDelayMinutes",
    ),
    pytest.param(
        obj("MultiKueueConfig", V2, {"clusters": ["a"], "quotaManagement": "Automatic"}),
        obj("MultiKueueConfig", V1, {"clusters": ["a"]}),
        id="mkconfig to v1beta1 drops quotaManagement",
    ),
    pytest.param(
        obj("ResourceFlavor", V1, {"nodeLabels": {"a": "b"}}),
        obj("ResourceFlavor", V2, {"nodeLabels": {"a": "b"}}),
        id="rf is identity",
    ),
    pytest.param(
        obj("WorkloadPriorityClass", V2, value=None),
        obj("WorkloadPriorityClass", V1, value=None),
        id="wpc is identity",
    ),
    pytest.param(
        obj("Topology", V1, {"levels": [{"nodeLabel": "rack"}]}),
        obj("Topology", V2, {"levels": [{"nodeLabel": "rack"}]}),
        id="topology is identity",
    ),
    pytest.param(
        obj("ClusterQueue", V2, {"cohortName": "c"}),
        obj("ClusterQueue", V2, {"cohortName": "c"}),
        id="same version is an unchanged copy",
    ),
]


@pytest.mark.parametrize(("source", "expected"), RULES)
def test_rule(source: dict[str, Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(source)
    assert convert(source, expected["apiVersion"]) == expected
    assert source == before, "the input must not be mutated"


def test_unknown_fields_pass_through() -> None:
    source = obj("ClusterQueue", V1, {"cohort": "c", "xFuture": [1, {"a": None}]}, {"xOther": "v"}, uid="u1")
    got: Any = convert(source, V2)
    assert got == obj("ClusterQueue", V2, {"cohortName": "c", "xFuture": [1, {"a": None}]}, {"xOther": "v"}, uid="u1")
    got["spec"]["xFuture"][1]["a"] = 1
    assert source["spec"]["xFuture"][1]["a"] is None, "the result must share nothing with the input"


def test_tas_hostname_prefix_gate_off_keeps_a_single_slice() -> None:
    hosts = [f"pool-{p}-node-{i:05d}" for p in "ab" for i in range(10)]
    source = wl_with_tas(V1, {"levels": [HOSTNAME], "domains": [domain([h], 1) for h in hosts]})
    on = tas_of(convert(source, V2))
    off = tas_of(convert(source, V2, tas_hostname_prefix_encoding=False))
    assert len(on["slices"]) == 2
    assert off == {
        "levels": [HOSTNAME],
        "slices": [slice_(20, [individual([h[5:] for h in hosts], prefix="pool-")], 1)],
    }


ERRORS = [
    pytest.param(["not", "an", "object"], V2, "expected an object", id="not an object"),
    pytest.param(obj("Pod", V1), V2, "kind 'Pod' is not supported", id="unknown kind"),
    pytest.param({"apiVersion": V1, "metadata": {}}, V2, "kind None is not supported", id="missing kind"),
    pytest.param(
        obj("Workload", "kueue.x-k8s.io/v1alpha1"),
        V2,
        "apiVersion 'kueue.x-k8s.io/v1alpha1'",
        id="unknown source",
    ),
    pytest.param(obj("Workload", V1), "batch/v1", "desiredAPIVersion 'batch/v1'", id="unknown target"),
    pytest.param(obj("Workload", V1, spec=[1]), V2, "spec: expected an object, got a list", id="spec not an object"),
    pytest.param(
        obj("ClusterQueue", V1, {"admissionChecks": "ac"}),
        V2,
        "spec.admissionChecks: expected a list",
        id="checks not a list",
    ),
    pytest.param(
        obj("ClusterQueue", V1, {"admissionChecks": [{"name": "a"}]}),
        V2,
        "spec.admissionChecks[0]: expected a string",
        id="check not a name",
    ),
    pytest.param(
        wl_with_tas(V1, {"levels": ["a", "b"], "domains": [domain(["a1"], 1)]}),
        V2,
        "status.admission.podSetAssignments[0].topologyAssignment.domains[0].values: has 1 values for 2 levels",
        id="tas domain with too few values",
    ),
    pytest.param(
        wl_with_tas(V2, {"levels": ["a"], "slices": [slice_(2, [individual(["x"])], 1)]}),
        V1,
        "slices[0].valuesPerLevel[0].individual.roots: has 1 items, needs 2",
        id="tas slice with too few roots",
    ),
    pytest.param(
        wl_with_tas(V2, {"levels": ["a"], "slices": [{"domainCount": 1, "valuesPerLevel": [{}], "podCounts": {}}]}),
        V1,
        "valuesPerLevel[0]: one of universal or individual is required",
        id="tas level with no values",
    ),
    pytest.param(
        wl_with_tas(
            V2,
            {
                "levels": ["a"],
                "slices": [{"domainCount": 1, "valuesPerLevel": [universal("a")], "podCounts": {}}],
            },
        ),
        V1,
        "slices[0].podCounts.individual: expected a list, got null",
        id="tas slice with no pod counts",
    ),
    pytest.param(
        wl_with_tas(V2, {"levels": ["a", "b"], "slices": [slice_(1, [universal("a")], 1)]}),
        V1,
        "slices[0].valuesPerLevel: has 1 items for 2 levels",
        id="tas slice with too few levels",
    ),
]


@pytest.mark.parametrize(("source", "target", "message"), ERRORS)
def test_error(source: Any, target: str, message: str) -> None:
    with pytest.raises(ConversionError) as info:
        convert(source, target)
    assert message in str(info.value)


# --------------------------------------------------------------------------- TAS encoding (tas_assignment.go)

TAS_ENCODINGS = [
    pytest.param(["a"], [], {"levels": ["a"]}, id="empty"),
    pytest.param(["a"], [(["x"], 3)], {"levels": ["a"], "slices": [slice_(1, [universal("x")], 3)]}, id="one domain"),
    pytest.param(
        ["a"],
        [(["abacacada"], 1), (["abacada"], 1)],
        {"levels": ["a"], "slices": [slice_(2, [individual(["ac", ""], prefix="ab", suffix="acada")], 1)]},
        id="overlapping prefix and suffix shorten the prefix",
    ),
    pytest.param(
        ["a"],
        [(["ababa"], 1), (["aba"], 1)],
        {"levels": ["a"], "slices": [slice_(2, [individual(["ab", ""], suffix="aba")], 1)]},
        id="prefix shortened to nothing is unset",
    ),
    pytest.param(
        ["a"],
        [(["node-a"], 1), (["host-b"], 2)],
        {"levels": ["a"], "slices": [slice_(2, [individual(["node-a", "host-b"])], [1, 2])]},
        id="no common affix",
    ),
    pytest.param(
        ["rack", HOSTNAME],
        [
            (["r1", "pool-a-node-0"], 1),
            (["r1", "pool-a-node-1"], 1),
            (["r2", "pool-b-node-0"], 1),
            (["r2", "pool-b-node-1"], 1),
        ],
        {
            "levels": ["rack", HOSTNAME],
            "slices": [
                slice_(
                    4,
                    [
                        individual(["1", "1", "2", "2"], prefix="r"),
                        individual(["a-node-0", "a-node-1", "b-node-0", "b-node-1"], prefix="pool-"),
                    ],
                    1,
                )
            ],
        },
        id="single slice wins when it serializes smaller",
    ),
    pytest.param(
        ["rack"],
        [(["pool-a-1"], 1), (["pool-a-2"], 1), (["pool-b-1"], 1), (["pool-b-2"], 1)],
        {
            "levels": ["rack"],
            "slices": [slice_(4, [individual(["a-1", "a-2", "b-1", "b-2"], prefix="pool-")], 1)],
        },
        id="prefix runs only for a hostname lowest level",
    ),
]


PREFIX_RUNS = [
    pytest.param(
        [HOSTNAME],
        [
            (["gke-c-pool-a-hash1-aa"], 3),
            (["gke-c-pool-a-hash1-bb"], 3),
            (["gke-c-pool-b-hash2-cc"], 4),
            (["gke-c-pool-b-hash2-dd"], 5),
        ],
        {
            "levels": [HOSTNAME],
            "slices": [
                slice_(2, [individual(["aa", "bb"], prefix="gke-c-pool-a-hash1-")], 3),
                slice_(2, [individual(["cc", "dd"], prefix="gke-c-pool-b-hash2-")], [4, 5]),
            ],
        },
        id="hostname pools become one slice each",
    ),
    pytest.param(
        [HOSTNAME],
        [
            (["aks-np1-1234-vmss000000"], 1),
            (["aks-np1-1234-vmss000001"], 1),
            (["aks-np2-4321-vmss000000"], 2),
            (["aks-np2-4321-vmss000001"], 3),
        ],
        {
            "levels": [HOSTNAME],
            "slices": [
                slice_(2, [individual(["0", "1"], prefix="aks-np1-1234-vmss00000")], 1),
                slice_(2, [individual(["0", "1"], prefix="aks-np2-4321-vmss00000")], [2, 3]),
            ],
        },
        id="slice prefix extends past the pool key",
    ),
]


@pytest.mark.parametrize(("levels", "domains", "expected"), PREFIX_RUNS)
def test_tas_hostname_prefix_runs(
    levels: list[str], domains: list[tuple[list[str], int]], expected: dict[str, Any]
) -> None:
    internal = [TopologyDomain(tuple(values), count) for values, count in domains]
    assert conversion._hostname_prefix_encoding(levels, internal) == expected
    # Four short hostnames serialize smaller as one slice, so the public encoder picks that.
    assert conversion.compact_topology_assignment(levels, internal) == conversion._single_slice_encoding(
        levels, internal
    )


@pytest.mark.parametrize(("levels", "domains", "expected"), TAS_ENCODINGS)
def test_tas_encoding(levels: list[str], domains: list[tuple[list[str], int]], expected: dict[str, Any]) -> None:
    internal = [TopologyDomain(tuple(values), count) for values, count in domains]
    assert conversion.compact_topology_assignment(levels, internal) == expected
    assert conversion.expand_topology_assignment(expected) == internal


def test_tas_prefix_runs_keep_domain_order() -> None:
    hosts = [
        "gke-c-pool-a-hash1-aa",
        "gke-c-pool-b-hash2-cc",
        "gke-c-pool-a-hash1-bb",
        "gke-c-pool-b-hash2-dd",
    ]
    internal = [TopologyDomain((h,), i) for i, h in enumerate(hosts)]
    encoded = conversion.compact_topology_assignment([HOSTNAME], internal)
    assert encoded == conversion.compact_topology_assignment([HOSTNAME], internal, by_hostname_prefix=False)
    assert conversion.expand_topology_assignment(encoded) == internal


def test_tas_prefix_backs_off_to_fit_the_slice_limit() -> None:
    # Alternating a-x-/a-y- keys would need 1001 slices; the shorter key a- fits in one.
    hosts = [f"a-{'xy'[i % 2]}-{i:04d}" for i in range(1001)]
    encoded: Any = conversion.compact_topology_assignment([HOSTNAME], [TopologyDomain((h,), 1) for h in hosts])
    assert [s["domainCount"] for s in encoded["slices"]] == [1001]
    assert encoded["slices"][0]["valuesPerLevel"] == [individual([h[2:] for h in hosts], prefix="a-")]


def test_tas_go_json_size_counts_go_escapes() -> None:
    assert conversion._go_json_size({"a": "<&>"}) == len('{"a":"\\u003c\\u0026\\u003e"}')
    assert conversion._go_json_size(["\u2028é"]) == len('["\\u2028"]') + 2


# --------------------------------------------------------------------------- generators

# Pools rather than regexes: conversion never looks inside a name, and pools keep generation fast.
names = st.sampled_from(["a", "b", "team-a", "pool-1", "x0", "default", "rack-1-b"])
# Prebuilt JSON values (cheaper than st.recursive); convert deep-copies, so sharing them is safe.
json_values = st.sampled_from(
    [None, True, 0, -(2**31), "", "<&>", "\u2028", [], {}, [1, {"k": None}], {"k": ["v", {}]}]
)
# Keys no version of any kind defines, to show that everything else is copied verbatim.
extras = st.dictionaries(st.sampled_from(["xFuture", "xOther"]), json_values, max_size=2)
quantities = st.sampled_from(["0", "1", "500m", "2Gi", "10"])
timestamps = st.sampled_from(["2025-01-01T00:00:00Z", "2026-08-22T19:29:23Z"])
counts = st.integers(0, 2**31 - 1)


def fields(required: dict[str, Any] | None = None, /, **optional: Any) -> st.SearchStrategy[dict[str, Any]]:
    """A dict with each optional key present or absent."""
    return st.fixed_dictionaries(required or {}, optional=optional)


def open_fields(required: dict[str, Any] | None = None, /, **optional: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Like `fields`, plus unknown keys: used where a rule rewrites a neighbouring key."""
    return st.tuples(fields(required, **optional), extras).map(lambda pair: {**pair[1], **pair[0]})


def kueue_object(kind: str, version: str, spec: Any, status: Any) -> st.SearchStrategy[dict[str, Any]]:
    # No rule reads metadata, so a few shapes are enough.
    metadata = st.sampled_from(
        [{"name": "a"}, {"name": "b", "namespace": "ns", "uid": "u"}, {"name": "c", "labels": {"k": "v"}}]
    )
    return st.fixed_dictionaries(
        {"apiVersion": st.just(version), "kind": st.just(kind), "metadata": metadata},
        optional={"spec": spec, "status": status},
    )


_condition = {"type": "Active", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "t"}
conditions = st.sampled_from([[], [_condition], [_condition, {**_condition, "type": "Admitted", "status": "False"}]])
resource_usage = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["cpu", "memory"]), "total": quantities}), max_size=2
)
flavor_usage = st.lists(st.fixed_dictionaries({"name": names, "resources": resource_usage}), max_size=2)
resource_groups = st.lists(
    st.fixed_dictionaries(
        {
            "coveredResources": st.just(["cpu"]),
            "flavors": st.lists(
                st.fixed_dictionaries({"name": names, "resources": st.just([{"name": "cpu", "nominalQuota": "1"}])}),
                min_size=1,
                max_size=2,
            ),
        }
    ),
    max_size=2,
)
fair_sharing = fields(weight=quantities)
stop_policy = st.sampled_from(["None", "Hold", "HoldAndDrain"])
afs_status = fields(
    consumedResources=st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities), lastUpdate=timestamps
)

# ClusterQueue ---------------------------------------------------------------


def cq_spec(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    policies = ["MayStopSearch", "TryNextFlavor"]
    fungibility = open_fields(
        whenCanBorrow=st.sampled_from([*policies, "Borrow"] if lossy and version == V1 else policies),
        whenCanPreempt=st.sampled_from([*policies, "Preempt"] if lossy and version == V1 else policies),
        preference=st.sampled_from(["BorrowingOverPreemption", "PreemptionOverBorrowing"]),
    )
    optional: dict[str, Any] = {
        "cohort" if version == V1 else "cohortName": names,
        "resourceGroups": resource_groups,
        "queueingStrategy": st.sampled_from(["StrictFIFO", "BestEffortFIFO"]),
        "namespaceSelector": st.just({}),
        "flavorFungibility": fungibility,
        "preemption": fields(
            reclaimWithinCohort=st.sampled_from(["Never", "Any"]), withinClusterQueue=st.just("Never")
        ),
        "admissionChecksStrategy": st.fixed_dictionaries(
            {"admissionChecks": st.lists(fields({"name": names}, onFlavors=st.lists(names, max_size=2)), max_size=2)}
        ),
        "stopPolicy": stop_policy,
        "fairSharing": fair_sharing,
        "admissionScope": st.just({"admissionMode": "UsageBasedAdmissionFairSharing"}),
    }
    if lossy and version == V1:
        optional["admissionChecks"] = st.lists(names, max_size=3)
    if lossy and version == V2:
        optional["concurrentAdmissionPolicy"] = st.just({"migration": {"mode": "TryPreferredFlavors"}})
    return open_fields(**optional)


def cq_status(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    fs: dict[str, Any] = {}
    optional: dict[str, Any] = {
        "conditions": conditions,
        "flavorsReservation": flavor_usage,
        "flavorsUsage": flavor_usage,
        "pendingWorkloads": counts,
        "reservingWorkloads": counts,
        "admittedWorkloads": counts,
    }
    if lossy and version == V1:
        fs["admissionFairSharingStatus"] = afs_status
        optional["pendingWorkloadsStatus"] = st.just({"clusterQueuePendingWorkload": [], "lastChangeTime": "t"})
    optional["fairSharing"] = open_fields({"weightedShare": counts}, **fs)
    return open_fields(**optional)


# LocalQueue -----------------------------------------------------------------


def lq_spec(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    return open_fields(clusterQueue=names, stopPolicy=stop_policy, fairSharing=fair_sharing)


def lq_status(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    optional: dict[str, Any] = {
        "conditions": conditions,
        "pendingWorkloads": counts,
        "reservingWorkloads": counts,
        "admittedWorkloads": counts,
        "flavorsReservation": flavor_usage,
        "flavorUsage" if version == V1 else "flavorsUsage": flavor_usage,
        "fairSharing": open_fields({"weightedShare": counts}, admissionFairSharingStatus=afs_status),
    }
    if lossy and version == V1:
        optional["flavors"] = st.lists(
            fields({"name": names}, nodeLabels=st.dictionaries(names, names, max_size=1)), max_size=2
        )
    return open_fields(**optional)


# Cohort ---------------------------------------------------------------------


def cohort_spec(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    return open_fields(parentName=names, resourceGroups=resource_groups, fairSharing=fair_sharing)


def cohort_status(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    fs = {"admissionFairSharingStatus": afs_status} if lossy and version == V1 else {}
    return open_fields(fairSharing=fields({"weightedShare": counts}, **fs))


# MultiKueueCluster ----------------------------------------------------------

location_types = st.sampled_from(["Secret", "Path"])


def mkc_spec(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    kube_config = open_fields({"location": names}, locationType=location_types)
    profile = st.fixed_dictionaries({"name": names})
    if version == V1:
        if lossy:
            kube_config = st.fixed_dictionaries({"location": st.just("")}, optional={"locationType": location_types})
        return open_fields(kubeConfig=kube_config, clusterProfileRef=profile)
    source = st.one_of(
        st.fixed_dictionaries({"kubeConfig": kube_config}),
        st.fixed_dictionaries({"clusterProfileRef": profile}),
    )
    return open_fields({"clusterSource": source})


def mkc_status(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    return open_fields(conditions=conditions)


# Workload -------------------------------------------------------------------

level_keys = st.sampled_from([[HOSTNAME], ["rack"], ["rack", HOSTNAME], ["zone", "rack"], ["zone", "block", HOSTNAME]])
# Hyphen-rich values so that shared prefixes, suffixes and hostname pools all occur.
level_values = st.sampled_from(
    [
        "",
        "a",
        "aba",
        "ababa",
        "x-1",
        "pool-a",
        "gke-pool-a-node-0",
        "gke-pool-a-node-1",
        "gke-pool-b-node-0",
        "gke-pool-b-node-1",
        "gke-pool-b-node-10",
        "pool-a-x-1",
        "rack-1-b",
        "node-",
        "-",
    ]
)


@st.composite
def tas_domains(draw: st.DrawFn) -> tuple[list[str], list[TopologyDomain]]:
    levels = draw(level_keys)
    values = st.lists(level_values, min_size=len(levels), max_size=len(levels)).map(tuple)
    domains = draw(st.lists(st.builds(TopologyDomain, values, st.integers(0, 5)), max_size=8))
    return levels, domains


def v1_topology_assignment() -> st.SearchStrategy[dict[str, Any]]:
    return tas_domains().map(
        lambda ld: {"levels": ld[0], "domains": [{"values": list(d.values), "count": d.count} for d in ld[1]]}
    )


def v2_topology_assignment() -> st.SearchStrategy[dict[str, Any]]:
    """What Kueue writes: the canonical encoding of some domains."""
    return st.tuples(tas_domains(), st.booleans()).map(
        lambda p: conversion.compact_topology_assignment(*p[0], by_hostname_prefix=p[1])
    )


def wl_spec(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    request: dict[str, Any] = {"required": st.just("rack"), "podSetSliceSize": st.integers(1, 4)}
    if lossy and version == V2:
        request["podsetSliceRequiredTopologyConstraints"] = st.just([{"topology": "rack", "size": 2}])
    pod_set = fields(
        {"name": names, "count": st.integers(0, 5), "template": st.just({"spec": {"containers": []}})},
        minCount=st.integers(0, 5),
        topologyRequest=open_fields(**request),
    )
    optional: dict[str, Any] = {
        "podSets": st.lists(pod_set, min_size=1, max_size=2),
        "queueName": names,
        "priority": st.integers(-10, 10),
        "active": st.booleans(),
        "maximumExecutionTimeSeconds": st.integers(1, 100),
    }
    if lossy and version == V2:
        optional["preemptionGates"] = st.lists(st.fixed_dictionaries({"name": names}), max_size=2)
    base = open_fields(**optional)
    if version == V1:
        sources = [WPC_SOURCE, POD_SOURCE, ""] if lossy else [WPC_SOURCE, POD_SOURCE]
        priority = st.one_of(
            st.just({}),
            fields({"priorityClassSource": st.sampled_from(sources)}, priorityClassName=names),
            *([fields({"priorityClassName": names})] if lossy else []),
        )
    else:
        refs = [WPC_REF, POD_REF, {"group": "kueue.x-k8s.io", "kind": "PriorityClass"}] if lossy else [WPC_REF, POD_REF]
        priority = st.one_of(
            st.just({}),
            st.tuples(st.sampled_from(refs), names).map(lambda p: {"priorityClassRef": {**p[0], "name": p[1]}}),
        )
    return st.tuples(base, priority).map(lambda p: {**p[0], **p[1]})


def wl_status(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    ta = v1_topology_assignment() if version == V1 else v2_topology_assignment()
    assignment = open_fields(
        {"name": names},
        flavors=st.dictionaries(st.sampled_from(["cpu", "memory"]), names, max_size=2),
        resourceUsage=st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities, max_size=2),
        count=st.integers(0, 5),
        topologyAssignment=ta,
        delayedTopologyRequest=st.sampled_from(["Pending", "Ready"]),
    )
    optional: dict[str, Any] = {
        "conditions": conditions,
        "admission": open_fields({"clusterQueue": names, "podSetAssignments": st.lists(assignment, max_size=2)}),
        "requeueState": fields(count=counts, requeueAt=timestamps),
        "accumulatedPastExexcutionTimeSeconds" if version == V1 else "accumulatedPastExecutionTimeSeconds": counts,
        "clusterName": names,
    }
    if lossy and version == V2:
        optional["preemptionGates"] = st.lists(fields({"name": names}, position=st.just("Open")), max_size=2)
    return open_fields(**optional)


# Identity kinds -------------------------------------------------------------


def spec_fields(lossy_v1: dict[str, Any], lossy_v2: dict[str, Any]) -> Any:
    def spec(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
        extra = (lossy_v1 if version == V1 else lossy_v2) if lossy else {}
        return open_fields(nodeLabels=st.dictionaries(names, names, max_size=2), **extra)

    return spec


def no_status(version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    return open_fields(conditions=conditions)


KINDS = {
    "Workload": (wl_spec, wl_status),
    "ClusterQueue": (cq_spec, cq_status),
    "LocalQueue": (lq_spec, lq_status),
    "Cohort": (cohort_spec, cohort_status),
    "MultiKueueCluster": (mkc_spec, mkc_status),
    "AdmissionCheck": (spec_fields({"retryDelayMinutes": st.integers(0, 30)}, {}), no_status),
    "MultiKueueConfig": (spec_fields({}, {"quotaManagement": st.just("Automatic")}), no_status),
    "ResourceFlavor": (spec_fields({}, {}), no_status),
    "WorkloadPriorityClass": (spec_fields({}, {}), no_status),
    "Topology": (spec_fields({}, {}), no_status),
    "ProvisioningRequestConfig": (spec_fields({}, {}), no_status),
}


@functools.cache
def objects(kind: str, version: str, *, lossy: bool) -> st.SearchStrategy[dict[str, Any]]:
    spec, status = KINDS[kind]
    return kueue_object(kind, version, spec(version, lossy=lossy), status(version, lossy=lossy))


def other(version: str) -> str:
    return V2 if version == V1 else V1


def test_every_supported_kind_is_generated() -> None:
    assert set(KINDS) == conversion.supported_kinds()


# --------------------------------------------------------------------------- properties

KIND_VERSIONS = [pytest.param(kind, version, id=f"{kind}-{version[-7:]}") for kind in KINDS for version in (V1, V2)]


@pytest.mark.parametrize(("kind", "version"), KIND_VERSIONS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_round_trip(kind: str, version: str, data: st.DataObject) -> None:
    """Lossless outside the documented lossy fields; with them, one conversion reaches a fixed point.

    Both properties share one test so that each example pays hypothesis' overhead once.
    """
    original = data.draw(objects(kind, version, lossy=False), label="lossless")
    before = copy.deepcopy(original)
    converted = convert(original, other(version))
    assert converted["apiVersion"] == other(version)
    assert convert(converted, version) == original
    assert original == before, "the input must not be mutated"

    converted = convert(data.draw(objects(kind, version, lossy=True), label="any"), other(version))
    assert convert(convert(converted, version), other(version)) == converted


@PROPERTY_SETTINGS
@given(tas_domains(), st.booleans())
def test_tas_encoding_round_trips_and_is_valid_v1beta2(
    ld: tuple[list[str], list[TopologyDomain]], by_prefix: bool
) -> None:
    levels, domains = ld
    encoded: Any = conversion.compact_topology_assignment(levels, domains, by_hostname_prefix=by_prefix)
    assert conversion.expand_topology_assignment(encoded) == domains
    # The v1beta2 CEL rules and MaxItems limits hold for what we write.
    for s in encoded.get("slices", []):
        assert s["domainCount"] >= 1
        assert len(s["valuesPerLevel"]) == len(levels)
        assert ("universal" in s["podCounts"]) != ("individual" in s["podCounts"])
        assert len(s["podCounts"].get("individual", [0] * s["domainCount"])) == s["domainCount"]
        for values in s["valuesPerLevel"]:
            assert ("universal" in values) != ("individual" in values)
            ind = values.get("individual", {})
            assert ind.get("prefix", "x") and ind.get("suffix", "x"), "prefix and suffix are unset rather than empty"
            assert len(ind.get("roots", [0] * s["domainCount"])) == s["domainCount"]


@st.composite
def pooled_hostnames(draw: st.DrawFn) -> tuple[list[str], list[TopologyDomain]]:
    """Node pools with long shared prefixes, where the hostname-prefix encoding pays off."""
    pools = draw(
        st.lists(
            st.sampled_from(["gke-prod-pool-a-1f2e3d", "gke-prod-pool-b-9c8b7a", "ip-10-0-1"]),
            min_size=1,
            max_size=3,
        )
    )
    domains = [
        TopologyDomain((f"{pool}-n{i}",), draw(st.integers(1, 2)))
        for pool in pools
        for i in range(draw(st.integers(1, 12)))
    ]
    return [HOSTNAME], domains


@PROPERTY_SETTINGS
@given(pooled_hostnames() | tas_domains(), st.booleans())
def test_canonical_v2_tas_round_trips_exactly(ld: tuple[list[str], list[TopologyDomain]], by_prefix: bool) -> None:
    ta = conversion.compact_topology_assignment(*ld, by_hostname_prefix=by_prefix)
    source = wl_with_tas(V2, ta)
    options = {"tas_hostname_prefix_encoding": by_prefix}
    assert convert(convert(source, V1, **options), V2, **options) == source


def test_pooled_hostnames_do_produce_several_slices() -> None:
    """Guards the generator above: without multi-slice cases the property would prove little."""
    domains = [TopologyDomain((f"gke-prod-pool-{p}-1f2e3d-n{i}",), 1) for p in "ab" for i in range(12)]
    assert len(tas_of(wl_with_tas(V2, conversion.compact_topology_assignment([HOSTNAME], domains)))["slices"]) == 2


@st.composite
def arbitrary_v2_assignments(draw: st.DrawFn) -> dict[str, Any]:
    """Any schema-valid v1beta2 encoding, not only the one Kueue would pick."""
    levels = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    slices = []
    for _ in range(draw(st.integers(0, 3))):
        n = draw(st.integers(1, 4))
        per_level = []
        for _ in levels:
            if draw(st.booleans()):
                per_level.append(universal(draw(level_values)))
            else:
                prefix = draw(st.none() | st.text("ab-", min_size=1, max_size=3))
                suffix = draw(st.none() | st.text("ab-", min_size=1, max_size=3))
                per_level.append(individual(draw(st.lists(level_values, min_size=n, max_size=n)), prefix, suffix))
        pods = draw(st.integers(1, 5) | st.lists(st.integers(1, 5), min_size=n, max_size=n))
        slices.append(slice_(n, per_level, pods))
    return {"levels": levels, "slices": slices} if slices else {"levels": levels}


@PROPERTY_SETTINGS
@given(arbitrary_v2_assignments())
def test_any_v2_tas_encoding_round_trips_to_the_same_domains(ta: dict[str, Any]) -> None:
    source = wl_with_tas(V2, ta)
    back = tas_of(convert(convert(source, V1), V2))
    assert conversion.expand_topology_assignment(back) == conversion.expand_topology_assignment(ta)


def test_exported_names() -> None:
    defined_here = {
        name
        for name, value in vars(conversion).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == conversion.__name__
    }
    assert defined_here <= set(conversion.__all__)
    assert all(hasattr(conversion, name) for name in conversion.__all__)
