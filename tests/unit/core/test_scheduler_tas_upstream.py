"""Upstream's TAS scheduler scenarios (`pkg/scheduler/scheduler_tas_test.go`, v0.19.2).

Each case of `TestScheduleForTAS` (and of the preemption and cohort tables) becomes one row: the same
nodes, non-TAS pods, Topologies, flavors, ClusterQueues and workloads (pending, or holding quota with
their topology assignment), one `AdmissionCore.schedule` call, then upstream's assertions: the new
admissions with their topology assignments (`wantNewAssignments`), the QuotaReserved=False reason and
message of each Warning event (`wantEvents`), and the victims of preemption. Row ids are upstream's case
names; upstream runs with UnadmittedWorkloadsObservability on for the reasons it shows.

Not ported (TAS parts not wired yet): the second scheduling pass (ProvisioningRequest delayed
topology, node-failure replacement, `unhealthyNodes`), SchedulerLibraryIntegration (alpha), and
events' own texts beyond the pending message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import T0, make_core, make_cq, make_flavor, make_lq, make_topology, make_wl
from webhook.config.types import ResourceTransformation
from webhook.core.decisions import Admit, Pending, Preempt
from webhook.core.quota_resources import QuotaResources
from webhook.core.tas import from_v1beta2

BLOCK, RACK, HOST = "cloud.com/topology-block", "cloud.provider.com/rack", "kubernetes.io/hostname"

SINGLE = make_topology("tas-single-level", HOST)
TWO = make_topology("tas-two-level", RACK, HOST)
THREE = make_topology("tas-three-level", BLOCK, RACK, HOST)


def tas_flavor(name: str = "tas-default", topology: str = "tas-single-level") -> dict[str, Any]:
    return make_flavor(name).label("tas-node", "true").topology(topology).obj()


DEFAULT = make_flavor("default").obj()
TAS1, TAS2, TAS3 = tas_flavor(), tas_flavor(topology="tas-two-level"), tas_flavor(topology="tas-three-level")


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    pods: str = "10",
    host: str | None = None,
    taints: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    alloc = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("pods", pods)) if v is not None}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"tas-node": "true", HOST: host or name, **(labels or {})}},
        "spec": {"taints": list(taints)},
        "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


SINGLE_NODE = [node("x1")]


def rack_node(
    name: str, block: str, rack: str, host: str, cpu: str = "1", memory: str = "1Gi", pods: str = "10"
) -> Any:
    return node(name, {BLOCK: block, RACK: rack}, host=host, cpu=cpu, memory=memory, pods=pods)


#        b1                   b2
#     /      \             /      \
#    r1       r2          r1       r2
#  /  |  \     |           |        |
# x2  x3  x4  x1          x5       x6
DEFAULT_NODES = [
    rack_node("b1-r1-x1", "b1", "r1", "x1"),
    rack_node("b1-r2-x2", "b1", "r2", "x2"),
    rack_node("b1-r2-x3", "b1", "r2", "x3"),
    rack_node("b1-r2-x4", "b1", "r2", "x4"),
    rack_node("b2-r2-x5", "b2", "r1", "x5"),
    rack_node("b2-r2-x6", "b2", "r2", "x6", cpu="2", memory="4Gi", pods="40"),
]


def pod(name: str, node_name: str, phase: str = "Running", **requests: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "test-ns"},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": phase},
    }


def _quota(resource: str, q: str | tuple[str, str]) -> dict[str, str]:
    """A resource's quota: its nominal quota, or (nominal, borrowingLimit)."""
    if isinstance(q, tuple):
        return {"name": resource, "nominalQuota": q[0], "borrowingLimit": q[1]}
    return {"name": resource, "nominalQuota": q}


def cq(name: str = "tas-main", *groups: Sequence[tuple[str, Mapping[str, Any]]], cohort: str = "", **kw: Any) -> Any:
    b = make_cq(name)
    if cohort:
        b.cohort(cohort)
    for g in groups or ([("tas-default", {"cpu": "50", "memory": "50Gi"})],):
        b.group(*({"name": f, "resources": [_quota(r, q) for r, q in res.items()]} for f, res in g))
    if kw:
        b.preemption(**kw)
    return b.obj()


DEFAULT_CQ = cq()


@dataclass(frozen=True)
class PS:
    """A pod set: count, per-pod requests, topology request."""

    name: str
    count: int
    requests: Mapping[str, str]
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    tolerations: Sequence[dict[str, str]] = ()
    affinity: Sequence[dict[str, Any]] | None = None
    slices: Sequence[tuple[str, int]] = ()
    min_count: int | None = None
    group: str | None = None


def workload(
    name: str,
    *pod_sets: PS,
    queue: str = "tas-main",
    priority: int = 0,
    admitted: Sequence[tuple[str, Mapping[str, tuple[str, str]], Sequence[str], Sequence[tuple[Sequence[str], int]]]]
    | None = None,
    cq_name: str = "tas-main",
    created: float = 0,
    unhealthy: Sequence[str] = (),
) -> dict[str, Any]:
    b = make_wl(name, "default").queue(queue).priority(priority).created(created)
    obj = b.obj()
    obj["spec"]["podSets"] = []
    for ps in pod_sets:
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": dict(ps.requests)}}]}
        if ps.tolerations:
            spec["tolerations"] = list(ps.tolerations)
        if ps.affinity is not None:
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": list(ps.affinity)}]
                    }
                }
            }
        entry: dict[str, Any] = {"name": ps.name, "count": ps.count, "template": {"spec": spec}}
        if ps.min_count is not None:
            entry["minCount"] = ps.min_count
        tr: dict[str, Any] = {}
        if ps.required:
            tr["required"] = ps.required
        if ps.preferred:
            tr["preferred"] = ps.preferred
        if ps.unconstrained:
            tr["unconstrained"] = True
        if ps.group:
            tr["podSetGroupName"] = ps.group
        if ps.slices:
            tr["podsetSliceRequiredTopologyConstraints"] = [{"topology": t, "size": s} for t, s in ps.slices]
        if tr:
            entry["topologyRequest"] = tr
        obj["spec"]["podSets"].append(entry)
    if unhealthy:
        obj["status"]["unhealthyNodes"] = [{"name": n} for n in unhealthy]
    if admitted is not None:
        psas = []
        for ps_name, usage, levels, domains in admitted:
            count = sum(n for _, n in domains)  # upstream's Count: the pods its domains hold
            psas.append(
                {
                    "name": ps_name,
                    "flavors": {r: f for r, (f, _) in usage.items()},
                    "resourceUsage": {r: q for r, (_, q) in usage.items()},
                    "count": count,
                    "topologyAssignment": _encode(levels, domains),
                }
            )
        obj["status"]["admission"] = {"clusterQueue": cq_name, "podSetAssignments": psas}
        t = "1970-01-01T00:00:00Z"
        obj["status"]["conditions"] = [
            {"type": c, "status": "True", "reason": c, "message": "", "lastTransitionTime": t}
            for c in ("QuotaReserved", "Admitted")
        ]
    return obj


def _encode(levels: Sequence[str], domains: Sequence[tuple[Sequence[str], int]]) -> dict[str, Any]:
    return {
        "levels": list(levels),
        "slices": [
            {
                "domainCount": len(domains),
                "valuesPerLevel": [{"individual": {"roots": [d[0][i] for d in domains]}} for i in range(len(levels))],
                "podCounts": {"individual": [d[1] for d in domains]},
            }
        ],
    }


# What a new admission must hold: per pod set, (name, {resource: flavor}, levels or None, domains).
Want = Sequence[tuple[str, Mapping[str, str], Sequence[str] | None, Sequence[tuple[Sequence[str], int]]]]


@dataclass
class Case:
    nodes: Sequence[dict[str, Any]]
    topologies: Sequence[dict[str, Any]]
    flavors: Sequence[dict[str, Any]]
    cluster_queues: Sequence[dict[str, Any]]
    workloads: Sequence[dict[str, Any]]
    pods: Sequence[dict[str, Any]] = ()
    local_queues: Sequence[dict[str, Any]] = (make_lq("tas-main", "default", "tas-main"),)
    # workload key -> what its admission holds
    want_admitted: Mapping[str, Want] = field(default_factory=dict)
    # workload key -> (QuotaReserved=False reason, message) of its Warning event
    # (None: upstream checks the reason only)
    want_pending: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    want_preempted: Sequence[str] = ()
    config: Mapping[str, Any] = field(default_factory=dict)


def run(case: Case) -> None:
    core = make_core(
        *case.topologies,
        *case.flavors,
        *case.nodes,
        *case.pods,
        *case.cluster_queues,
        *case.local_queues,
        namespaces={"default": {}},
        granular_pending_reasons=True,
        **case.config,
    )
    for w in case.workloads:
        core.on_workload(w, T0)
    result = core.schedule(T0)
    admitted: dict[str, Want] = {}
    for d in result.decisions:
        if isinstance(d, Admit):
            got = []
            for p in d.admission["podSetAssignments"]:
                ta = p.get("topologyAssignment")
                decoded = from_v1beta2(ta) if ta is not None else None
                got.append(
                    (
                        p["name"],
                        p["flavors"],
                        list(decoded.levels) if decoded else None,
                        [(list(x.values), x.count) for x in decoded.domains] if decoded else [],
                    )
                )
            admitted[d.key] = got
    want = {
        k: [(n, dict(f), list(lv) if lv else None, [(list(v), c) for v, c in ds]) for n, f, lv, ds in w]
        for k, w in case.want_admitted.items()
    }
    assert admitted == want
    pending = {d.key: (d.reason, d.message) for d in result.decisions if isinstance(d, Pending)}
    for key, (reason, message) in case.want_pending.items():
        got = pending.get(key)
        assert got is not None, key
        assert (got[0], got[1] if message is not None else None) == (reason, message), key
    victims = sorted(v.key for d in result.decisions if isinstance(d, Preempt) for v in d.targets)
    assert victims == sorted(case.want_preempted)


def ps(name: str, count: int, **kw: Any) -> PS:
    requests = kw.pop("requests", {"cpu": "1"})
    return PS(name, count, requests, **kw)


CASES = [
    pytest.param(
        Case(
            nodes=[node("x1", cpu=None, memory="2Gi")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("tiny-memory", ps("one", 1, required=HOST, requests={"memory": "1"}))],
            want_admitted={"default/tiny-memory": [("one", {"memory": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="initial scheduling; one-byte memory request fits on a 2Gi node with vectorized requests disabled",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1, DEFAULT],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "50"})])],
            workloads=[workload("foo", ps("one", 1))],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="workload which does not specify TAS annotation uses the only TAS flavor",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1, DEFAULT],
            cluster_queues=[cq("tas-main", [("default", {"cpu": "50"}), ("tas-default", {"cpu": "50"})])],
            workloads=[workload("foo", ps("one", 1, required=HOST))],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="workload requiring TAS skips the non-TAS flavor",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1, DEFAULT],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "50"}), ("default", {"cpu": "50"})])],
            workloads=[workload("foo", ps("one", 1))],
            want_admitted={"default/foo": [("one", {"cpu": "default"}, None, [])]},
        ),
        id="workload which does not need TAS skips the TAS flavor",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1, DEFAULT],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "50"}), ("default", {"cpu": "50"})])],
            workloads=[
                workload(
                    "foo",
                    ps("launcher", 1, requests={"cpu": "500m"}),
                    ps("worker", 1, requests={"cpu": "500m"}, required=HOST),
                )
            ],
            want_admitted={
                "default/foo": [
                    ("launcher", {"cpu": "default"}, None, []),
                    ("worker", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)]),
                ]
            },
        ),
        id="workload with mixed PodSets (requiring TAS and not)",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 1, required=HOST))],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="workload required TAS gets scheduled",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 1, required="cloud.com/non-existing"))],
            want_pending={
                "default/foo": (
                    "NoMatchingFlavor",
                    'couldn\'t assign flavors to pod set one: Flavor "tas-default" does not contain the requested level',
                )
            },
        ),
        id="workload requests topology level which is not present in topology",
    ),
    pytest.param(
        Case(
            nodes=[
                {
                    **node("x1", cpu="1", memory=None),
                    "metadata": {"name": "x1", "labels": {"tas-node": "true", "cloud.com/custom-level": "x1"}},
                }
            ],
            topologies=[SINGLE, make_topology("tas-custom-topology", "cloud.com/custom-level")],
            flavors=[TAS1, tas_flavor("tas-custom-flavor", "tas-custom-topology")],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "50"}), ("tas-custom-flavor", {"cpu": "50"})])],
            workloads=[workload("foo", ps("one", 1, required="cloud.com/custom-level"))],
            want_admitted={
                "default/foo": [("one", {"cpu": "tas-custom-flavor"}, ["cloud.com/custom-level"], [(["x1"], 1)])]
            },
        ),
        id="workload requests topology level which is only present in second flavor",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 2, required=HOST))],
            want_pending={
                "default/foo": (
                    "TopologyPlacementFailed",
                    'couldn\'t assign flavors to pod set one: topology "tas-single-level" allows to fit only 1 out of 2 pod(s)',
                )
            },
        ),
        id="workload does not get scheduled as it does not fit within the node capacity",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[
                workload("foo", ps("one", 1, required=HOST)),
                workload(
                    "bar-admitted",
                    ps("one", 1, required=HOST),
                    admitted=[("one", {"cpu": ("tas-default", "1")}, [HOST], [(["x1"], 1)])],
                ),
            ],
            want_pending={
                "default/foo": (
                    "WaitingForQuota",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't allow to fit any "
                    'of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1',
                )
            },
        ),
        id="workload does not get scheduled as the node capacity is already used by another TAS workload",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            pods=[pod("test-pending", "x1", "TopologyPlacementFailed", cpu="600m")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 1, required=HOST))],
            want_pending={
                "default/foo": (
                    "TopologyPlacementFailed",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't allow to fit any "
                    'of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1',
                )
            },
        ),
        id="workload does not get scheduled as the node capacity is already used by a non-TAS pod",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", pods="1")],
            pods=[pod("test-pending", "x1", cpu="1", memory="1Gi")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 1, required=HOST))],
            want_pending={
                "default/foo": (
                    "TopologyPlacementFailed",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't allow to fit any "
                    'of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1',
                )
            },
        ),
        id="workload does not get scheduled as node capacity is completely used by non-TAS pod",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[
                workload("foo", ps("one", 1, required=HOST, requests={"cpu": "500m", "memory": "500Mi"})),
                workload(
                    "bar-admitted",
                    ps("one", 1, required=HOST, requests={"cpu": "500m", "memory": "500Mi"}),
                    admitted=[
                        (
                            "one",
                            {"cpu": ("tas-default", "500m"), "memory": ("tas-default", "500Mi")},
                            [HOST],
                            [(["x1"], 1)],
                        )
                    ],
                ),
            ],
            want_admitted={
                "default/foo": [("one", {"cpu": "tas-default", "memory": "tas-default"}, [HOST], [(["x1"], 1)])]
            },
        ),
        id="workload gets admitted next to already admitted workload, multiple resources used",
    ),
    pytest.param(
        Case(
            nodes=[
                node("x1", {RACK: "r1"}, cpu="3", memory=None),
                node("y1", {RACK: "r1"}, cpu="3", memory=None),
            ],
            topologies=[TWO],
            flavors=[TAS2],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "50"})])],
            workloads=[
                workload(
                    "foo",
                    ps("launcher", 1, preferred=HOST),
                    ps("worker", 1, preferred=HOST, requests={"cpu": "7"}),
                )
            ],
            want_pending={
                "default/foo": (
                    "TopologyPlacementFailed",
                    "couldn't assign flavors to pod set worker: topology \"tas-two-level\" doesn't allow to fit any "
                    'of 1 pod(s). Total nodes: 2; excluded: resource "cpu": 2',
                )
            },
        ),
        id="workload with multiple PodSets requesting the same TAS flavor; multiple levels",
    ),
    pytest.param(
        Case(
            nodes=[
                node("x1", {RACK: "r1"}, cpu="8", memory=None),
                node("y1", {RACK: "r1"}, cpu="8", memory=None),
            ],
            topologies=[TWO],
            flavors=[TAS2],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "16"})])],
            workloads=[workload("foo", ps("launcher", 1, required=HOST), ps("worker", 15, preferred=HOST))],
            want_admitted={
                "default/foo": [
                    ("launcher", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)]),
                    ("worker", {"cpu": "tas-default"}, [HOST], [(["x1"], 7), (["y1"], 8)]),
                ]
            },
        ),
        id="scheduling workload with multiple PodSets requesting TAS flavor and will succeed",
    ),
    pytest.param(
        Case(
            nodes=[
                node("x1", {RACK: "r1"}, cpu="8", memory=None),
                node("y1", {RACK: "r1"}, cpu="8", memory=None),
            ],
            topologies=[TWO],
            flavors=[TAS2],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "16"})])],
            workloads=[workload("foo", ps("launcher", 1, required=RACK), ps("worker", 15, required=RACK))],
            want_admitted={
                "default/foo": [
                    ("launcher", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)]),
                    ("worker", {"cpu": "tas-default"}, [HOST], [(["x1"], 7), (["y1"], 8)]),
                ]
            },
        ),
        id="scheduling workload with multiple PodSets requesting higher level topology",
    ),
]

ZERO_CAPACITY_NODES = [
    node("x1", {RACK: "r1"}, cpu="0", memory=None),
    node("x2", {RACK: "r1"}, cpu="1", memory=None),
    node("x3", {RACK: "r1"}, cpu="1", memory=None),
]
CREDITS = QuotaResources.from_config((), [ResourceTransformation("cpu", "Retain", "", {"cpu_credits": "1"})])


def admitted_on(ps_name: str, flavor: str, usage: Mapping[str, str], count: int, *hosts: str) -> Any:
    """A podSetAssignment on `flavor` placing `count` pods spread one... per host listed (or all on one)."""
    domains = [([h], count // len(hosts)) for h in hosts]
    return (ps_name, {r: (flavor, q) for r, q in usage.items()}, [HOST], domains)


CASES += [
    pytest.param(
        Case(
            nodes=[node("y1", cpu="1", memory=None)],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "50"})])],
            workloads=[
                workload("foo", ps("one", 1, preferred=HOST)),
                workload(
                    "bar-admitted",
                    ps("one", 1, required=HOST),
                    admitted=[admitted_on("one", "tas-default", {"cpu": "1"}, 1, "x1")],
                ),
            ],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["y1"], 1)])]},
        ),
        id="scheduling workload when the node for another admitted workload is deleted",
    ),
    pytest.param(
        Case(
            nodes=[
                node("x1", memory=None, taints=[{"key": "example.com/gpu", "value": "present", "effect": "NoSchedule"}])
            ],
            topologies=[SINGLE],
            flavors=[
                {
                    **TAS1,
                    "spec": {**TAS1["spec"], "tolerations": [{"key": "example.com/gpu", "operator": "Exists"}]},
                }
            ],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "50"})])],
            workloads=[workload("foo", ps("one", 1, preferred=HOST))],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="scheduling workload on a tainted node when the toleration is on ResourceFlavor",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", cpu="400m", memory="400Mi"), node("x2", cpu="400m", memory="400Mi")],
            topologies=[SINGLE],
            flavors=[
                tas_flavor("tas-flavor-a"),
                make_flavor("tas-flavor-b")
                .label("tas-node", "true")
                .taint("tas-class", "b")
                .topology("tas-single-level")
                .obj(),
            ],
            cluster_queues=[
                cq(
                    "tas-main",
                    [
                        ("tas-flavor-a", {"cpu": "400m", "memory": "400Mi"}),
                        ("tas-flavor-b", {"cpu": "100m", "memory": "100Mi"}),
                    ],
                )
            ],
            workloads=[
                *(
                    workload(
                        f"primary-admitted-{i}",
                        ps("one", 1, preferred=HOST, requests={"cpu": "200m", "memory": "200Mi"}),
                        admitted=[admitted_on("one", "tas-flavor-a", {"cpu": "200m", "memory": "200Mi"}, 1, "x1")],
                    )
                    for i in (1, 2)
                ),
                workload(
                    "pending-wl",
                    ps(
                        "one",
                        1,
                        preferred=HOST,
                        requests={"cpu": "100m", "memory": "100Mi"},
                        tolerations=[{"key": "tas-class", "operator": "Equal", "value": "b", "effect": "NoSchedule"}],
                    ),
                ),
            ],
            want_admitted={
                "default/pending-wl": [
                    ("one", {"cpu": "tas-flavor-b", "memory": "tas-flavor-b"}, [HOST], [(["x2"], 1)])
                ]
            },
        ),
        id="two ResourceFlavors share nodes: pending workload lands on the fallback flavor when the primary flavor is full",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", cpu="400m", memory="400Mi"), node("x2", cpu="400m", memory="400Mi")],
            topologies=[SINGLE],
            flavors=[
                make_flavor(f"flavor-{c}")
                .label("tas-node", "true")
                .taint("example.com/flavor", c)
                .topology("tas-single-level")
                .obj()
                for c in ("a", "b")
            ],
            cluster_queues=[
                cq(
                    "tas-main",
                    [
                        ("flavor-a", {"cpu": "400m", "memory": "400Mi"}),
                        ("flavor-b", {"cpu": "400m", "memory": "400Mi"}),
                    ],
                )
            ],
            workloads=[
                workload(
                    "multi-podset-wl",
                    *(
                        ps(
                            f"ps-{c}",
                            1,
                            preferred=HOST,
                            requests={"cpu": "300m", "memory": "300Mi"},
                            tolerations=[
                                {"key": "example.com/flavor", "operator": "Equal", "value": c, "effect": "NoSchedule"}
                            ],
                        )
                        for c in ("a", "b")
                    ),
                )
            ],
            want_admitted={
                "default/multi-podset-wl": [
                    ("ps-a", {"cpu": "flavor-a", "memory": "flavor-a"}, [HOST], [(["x1"], 1)]),
                    ("ps-b", {"cpu": "flavor-b", "memory": "flavor-b"}, [HOST], [(["x2"], 1)]),
                ]
            },
        ),
        id="multi-PodSet workload across sibling flavors must not self-overlap on shared node",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 5, required=HOST, min_count=1))],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="TAS workload gets scheduled as trimmed by partial admission",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", cpu="1000m", memory=None, pods="3")],
            pods=[pod("test-running", "x1", cpu="300m")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[
                workload("foo", ps("one", 1, required=HOST, requests={"cpu": "300m"})),
                workload(
                    "bar-admitted",
                    ps("one", 2, required=HOST, requests={"cpu": "150m"}),
                    admitted=[("one", {"cpu": ("tas-default", "150m")}, [HOST], [(["x1"], 2)])],
                ),
            ],
            want_pending={
                "default/foo": (
                    "WaitingForQuota",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't allow to fit any "
                    'of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1',
                )
            },
        ),
        id="workload does not get scheduled as the node capacity (.status.allocatable['pods']) is already used by non-TAS and TAS workloads",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 1, requests={"cpu": "0", "memory": "10Mi"}))],
            want_admitted={
                "default/foo": [("one", {"cpu": "tas-default", "memory": "tas-default"}, [HOST], [(["x1"], 1)])]
            },
        ),
        id="workload with zero value request gets scheduled",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[
                workload(
                    "foo",
                    ps(
                        "one",
                        1,
                        preferred=HOST,
                        affinity=[{"key": "unused-key", "operator": "In", "values": ["value"]}],
                    ),
                )
            ],
            want_pending={
                "default/foo": (
                    "TopologyPlacementFailed",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't allow to fit any "
                    "of 1 pod(s). Total nodes: 1; excluded: affinity: 1",
                )
            },
        ),
        id="does not admit workload when node does not match required affinity",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", {"expected-label": "expected-value"}, pods="10")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[
                workload(
                    "foo",
                    ps(
                        "one",
                        1,
                        preferred=HOST,
                        affinity=[{"key": "expected-label", "operator": "In", "values": ["expected-value"]}],
                    ),
                )
            ],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="admits workload when node matches required affinity",
    ),
    *(
        pytest.param(
            Case(
                nodes=ZERO_CAPACITY_NODES,
                topologies=[TWO],
                flavors=[TAS2],
                cluster_queues=[DEFAULT_CQ],
                workloads=[workload("foo", ps("one", 2, **request))],
                want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x2"], 1), (["x3"], 1)])]},
            ),
            id=f"admits workload when nodes are partially empty; {name}",
        )
        for name, request in (
            ("unconstrained", {"unconstrained": True}),
            ("preferred", {"preferred": RACK}),
            ("required", {"required": RACK}),
        )
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 1, preferred=HOST, requests={"cpu": "1", "example.com/gpu": "0"}))],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="admits workload with zero-quantity request for resource not in ClusterQueue with TAS",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1, make_flavor("credits").obj()],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "1"})], [("credits", {"cpu_credits": "1"})])],
            workloads=[workload("foo", ps("one", 1, required=HOST))],
            want_admitted={
                "default/foo": [("one", {"cpu": "tas-default", "cpu_credits": "credits"}, [HOST], [(["x1"], 1)])]
            },
            config={"resources": CREDITS},
        ),
        id="workload with Resource Transformation (Retain CPU → cpu_credits)",
    ),
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[SINGLE],
            flavors=[TAS1, make_flavor("credits").obj()],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "2"})], [("credits", {"cpu_credits": "1"})])],
            workloads=[workload("foo", ps("one", 1, required=HOST, requests={"cpu": "2"}))],
            want_pending={
                "default/foo": (
                    "ExceedsMaxQuota",
                    "couldn't assign flavors to pod set one: insufficient quota for cpu_credits in flavor credits, "
                    "previously considered podsets requests (0) + current podset request (2) > maximum capacity (1)",
                )
            },
            config={"resources": CREDITS},
        ),
        id="workload with Resource Transformation (Retain CPU → cpu_credits, not enough credits)",
    ),
]

# -- TestScheduleForTASPreemption ------------------------------------------------------------------
PREEMPT_NODE = [node("x1", cpu="5", memory="5Gi")]
PREEMPT_CQ = cq("tas-main", [("tas-default", {"cpu": "50", "memory": "50Gi"})], within="LowerPriority")
NO_CPU_ON_X1 = (
    'topology "tas-single-level" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1'
)


def holder(name: str, priority: int, cpu: str, host: str = "x1") -> dict[str, Any]:
    """An admitted one-pod workload of `cpu` on `host`."""
    return workload(
        name,
        ps("one", 1, required=HOST, requests={"cpu": cpu}),
        priority=priority,
        admitted=[admitted_on("one", "tas-default", {"cpu": cpu}, 1, host)],
    )


CASES += [
    pytest.param(
        Case(
            nodes=PREEMPT_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[PREEMPT_CQ],
            workloads=[
                workload("foo", ps("one", 1, preferred=HOST, requests={"cpu": "2"}), priority=3),
                holder("low-priority-admitted", 1, "5"),
            ],
            want_pending={
                "default/foo": (
                    "WaitingForPreemptedWorkloads",
                    f"couldn't assign flavors to pod set one: {NO_CPU_ON_X1}. Pending the preemption of 1 workload(s)",
                )
            },
            want_preempted=["default/low-priority-admitted"],
        ),
        id="only low priority workload is preempted",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", cpu="5", memory="5Gi", pods="1")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[PREEMPT_CQ],
            workloads=[
                workload("high-priority-waiting", ps("one", 1, preferred=HOST, requests={"cpu": "2"}), priority=3),
                holder("low-priority-admitted", 1, "5"),
            ],
            want_pending={
                "default/high-priority-waiting": (
                    "WaitingForPreemptedWorkloads",
                    f"couldn't assign flavors to pod set one: {NO_CPU_ON_X1}. Pending the preemption of 1 workload(s)",
                )
            },
            want_preempted=["default/low-priority-admitted"],
        ),
        id="With pods count usage pressure on nodes: only low priority workload is preempted",
    ),
    pytest.param(
        Case(
            nodes=PREEMPT_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[PREEMPT_CQ],
            workloads=[
                workload("foo", ps("one", 1, preferred=HOST, requests={"cpu": "2"}), priority=3),
                holder("mid-priority-admitted", 2, "2"),
                holder("low-priority-admitted", 1, "2"),
            ],
            want_pending={
                "default/foo": (
                    "WaitingForPreemptedWorkloads",
                    f"couldn't assign flavors to pod set one: {NO_CPU_ON_X1}. Pending the preemption of 1 workload(s)",
                )
            },
            want_preempted=["default/low-priority-admitted"],
        ),
        id="low priority workload is preempted, mid-priority workload survives",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", cpu="5", memory="5Gi"), node("y1", cpu="5", memory="5Gi")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[PREEMPT_CQ],
            workloads=[
                workload("foo", ps("one", 2, required=HOST), priority=3),
                holder("mid-priority-admitted", 2, "4", "x1"),
                holder("low-priority-admitted", 1, "4", "y1"),
            ],
            want_pending={
                "default/foo": (
                    "WaitingForPreemptedWorkloads",
                    'couldn\'t assign flavors to pod set one: topology "tas-single-level" allows to fit only 1 out of '
                    "2 pod(s). Pending the preemption of 1 workload(s)",
                )
            },
            want_preempted=["default/low-priority-admitted"],
        ),
        id="low priority workload is preempted even though there is enough capacity, but fragmented",
    ),
    pytest.param(
        Case(
            nodes=PREEMPT_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[PREEMPT_CQ],
            workloads=[
                workload("low-priority-which-would-fit", ps("one", 1, required=HOST), priority=1),
                workload("mid-priority-waiting", ps("one", 2, required=HOST), priority=2),
                holder("mid-priority-admitted", 2, "4"),
            ],
            want_pending={
                "default/mid-priority-waiting": (
                    "WaitingForQuota",
                    'couldn\'t assign flavors to pod set one: topology "tas-single-level" allows to fit only 1 out of '
                    "2 pod(s)",
                )
            },
        ),
        id="workload with equal priority awaits for other workloads to complete",
    ),
]

# -- TestScheduleForTASCohorts ---------------------------------------------------------------------
COHORT_NODES = [node("x1", cpu="3", memory="5Gi"), node("y1", cpu="5", memory="3Gi")]
COHORT_CQS = [
    cq(
        "tas-cq-a",
        [("tas-default", {"cpu": "4", "memory": "4Gi"})],
        cohort="tas-cohort-main",
        within="LowerPriority",
        reclaim="Any",
    ),
    cq("tas-cq-b", [("tas-default", {"cpu": "4", "memory": "4Gi"})], cohort="tas-cohort-main", reclaim="Any"),
]
COHORT_LQS = tuple(make_lq(f"tas-lq-{c}", "default", f"tas-cq-{c}") for c in "abc")


def cohort_case(a1: PS, b1: PS, **kw: Any) -> Case:
    return Case(
        nodes=kw.pop("nodes", COHORT_NODES),
        topologies=[SINGLE],
        flavors=[TAS1],
        cluster_queues=kw.pop("cluster_queues", COHORT_CQS),
        local_queues=COHORT_LQS,
        workloads=[
            workload("a1", a1, queue="tas-lq-a", priority=kw.pop("a1_priority", 2), created=kw.pop("a1_created", 0)),
            workload("b1", b1, queue="tas-lq-b", priority=kw.pop("b1_priority", 1), created=kw.pop("b1_created", 0)),
        ],
        **kw,
    )


def on(cq_name: str, usage: Mapping[str, str], *domains: tuple[str, int]) -> Want:
    return [("one", {r: "tas-default" for r in usage}, [HOST], [([h], n) for h, n in domains])]


CASES += [
    pytest.param(
        cohort_case(
            ps("one", 1, required=HOST, requests={"cpu": "8"}),
            ps("one", 1, required=HOST, requests={"cpu": "8"}),
            nodes=[node("node-1", cpu="8", memory=None), node("node-2", cpu="8", memory=None)],
            cluster_queues=[
                cq(f"tas-cq-{c}", [("tas-default", {"cpu": "8"})], cohort="tas-cohort-main") for c in ("a", "b")
            ],
            a1_priority=10,
            b1_priority=5,
            b1_created=60,
            want_admitted={
                "default/a1": on("tas-cq-a", {"cpu": "8"}, ("node-1", 1)),
                "default/b1": on("tas-cq-b", {"cpu": "8"}, ("node-2", 1)),
            },
        ),
        id="two workloads in cohort nominated to the same node; enough capacity to admit both; TASRecomputeAssignmentWithinSchedulingCycle enabled",
    ),
    pytest.param(
        cohort_case(
            ps("one", 1, preferred=HOST, requests={"cpu": "2"}),
            ps("one", 1, preferred=HOST, requests={"cpu": "2"}),
            want_admitted={
                "default/a1": on("tas-cq-a", {"cpu": "2"}, ("x1", 1)),
                "default/b1": on("tas-cq-b", {"cpu": "2"}, ("y1", 1)),
            },
        ),
        id="two workloads considered; both overlapping in the initial flavor assignment; TASRecomputeAssignmentWithinSchedulingCycle enabled",
    ),
    pytest.param(
        cohort_case(
            ps("one", 1, preferred=HOST),
            ps("one", 3, preferred=HOST),
            want_admitted={
                "default/a1": on("tas-cq-a", {"cpu": "1"}, ("x1", 1)),
                "default/b1": on("tas-cq-b", {"cpu": "3"}, ("y1", 3)),
            },
        ),
        id="two small workloads considered; there is only space for one of them on the initial node; TASRecomputeAssignmentWithinSchedulingCycle enabled",
    ),
    pytest.param(
        cohort_case(
            ps("one", 1, preferred=HOST, requests={"cpu": "5"}),
            ps("one", 1, preferred=HOST, requests={"memory": "5"}),
            want_admitted={
                "default/a1": on("tas-cq-a", {"cpu": "5"}, ("y1", 1)),
                "default/b1": on("tas-cq-b", {"memory": "5"}, ("x1", 1)),
            },
        ),
        id="two small workloads considered; both get scheduled on different nodes",
    ),
    pytest.param(
        cohort_case(
            ps("one", 1, preferred=HOST),
            ps("one", 2, preferred=HOST),
            want_admitted={
                "default/a1": on("tas-cq-a", {"cpu": "1"}, ("x1", 1)),
                "default/b1": on("tas-cq-b", {"cpu": "2"}, ("x1", 2)),
            },
        ),
        id="two small workloads considered; both get scheduled on the same node",
    ),
    pytest.param(
        cohort_case(
            ps("one", 5, preferred=HOST),
            ps("one", 5, preferred=HOST),
            want_admitted={"default/a1": on("tas-cq-a", {"cpu": "5"}, ("y1", 5))},
            want_pending={
                "default/b1": ("WaitingForQuota", "Workload no longer fits after processing another workload")
            },
        ),
        id="two workloads considered; there is enough space only for the first",
    ),
]

# -- TestAssignFlavors (flavorassigner_test.go), its TAS case -----------------------------------------
CASES += [
    pytest.param(
        Case(
            nodes=SINGLE_NODE,
            topologies=[make_topology("tas-topo-a", HOST), make_topology("tas-topo-b", HOST)],
            flavors=[
                make_flavor("tas-a").topology("tas-topo-a").obj(),
                make_flavor("tas-b").topology("tas-topo-b").obj(),
            ],
            cluster_queues=[cq("tas-main", [("tas-a", {"cpu": "10"})], [("tas-b", {"memory": "10Mi"})])],
            workloads=[workload("foo", ps("main", 1, required=HOST, requests={"cpu": "1", "memory": "1Mi"}))],
            want_pending={
                "default/foo": (
                    "NoMatchingFlavor",
                    "failed to assign flavors to pod set main: more than one TAS flavor assigned: tas-a, tas-b",
                )
            },
        ),
        id="multiple TAS flavors assigned to different resources in the same PodSet leads to NoFit",
    ),
]

NO_BORROW_CQ_A = {
    "Any": cq(
        "tas-cq-a",
        [("tas-default", {"cpu": ("8", "0"), "memory": ("4Gi", "0")})],
        cohort="tas-cohort-main",
        within="LowerPriority",
        reclaim="Any",
    ),
    "LowerPriority": cq(
        "tas-cq-a",
        [("tas-default", {"cpu": ("8", "0"), "memory": ("4Gi", "0")})],
        cohort="tas-cohort-main",
        within="LowerPriority",
        reclaim="LowerPriority",
    ),
}


def reserving_case(reclaim: str, holder_priority: int) -> Case:
    return Case(
        nodes=[node("y1", cpu="5", memory="3Gi")],
        topologies=[SINGLE],
        flavors=[TAS1],
        cluster_queues=[NO_BORROW_CQ_A[reclaim], COHORT_CQS[1]],
        local_queues=COHORT_LQS,
        workloads=[
            workload(
                "a1-admitted",
                ps("one", 2, required=HOST),
                queue="tas-lq-a",
                priority=holder_priority,
                cq_name="tas-cq-a",
                admitted=[("one", {"cpu": ("tas-default", "2")}, [HOST], [(["y1"], 2)])],
            ),
            workload("a2", ps("one", 4, preferred=HOST), queue="tas-lq-a", priority=2),
            workload("b1", ps("one", 3, preferred=HOST), queue="tas-lq-b", priority=1),
        ],
        want_pending={
            "default/a2": ("WaitingForPreemptedWorkloads" if holder_priority < 2 else "WaitingForQuota", None),
            "default/b1": ("WaitingForQuota", None),
        },
        want_preempted=["default/a1-admitted"] if holder_priority < 2 else [],
    )


CASES += [
    pytest.param(
        reserving_case("Any", 1),
        id="preempting workload with targets reserves capacity so that lower priority workload cannot use it; TASRecomputeAssignmentWithinSchedulingCycle enabled",
    ),
    pytest.param(
        reserving_case("LowerPriority", 2),
        id="preempting workload without targets reserves capacity so that lower priority workload cannot use it; TASRecomputeAssignmentWithinSchedulingCycle enabled",
    ),
    pytest.param(
        Case(
            nodes=COHORT_NODES,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=COHORT_CQS,
            local_queues=COHORT_LQS,
            workloads=[workload("a1", ps("one", 6, preferred=HOST), queue="tas-lq-a")],
            want_admitted={"default/a1": on("tas-cq-a", {"cpu": "6"}, ("x1", 1), ("y1", 5))},
        ),
        id="workload which requires borrowing gets scheduled",
    ),
    pytest.param(
        Case(
            nodes=COHORT_NODES,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=COHORT_CQS,
            local_queues=COHORT_LQS,
            workloads=[
                workload(
                    "a1-admitted",
                    ps("one", 5, required=HOST),
                    queue="tas-lq-a",
                    cq_name="tas-cq-a",
                    admitted=[("one", {"cpu": ("tas-default", "5")}, [HOST], [(["x1"], 5)])],
                ),
                workload("b1", ps("one", 4, preferred=HOST), queue="tas-lq-b"),
            ],
            want_pending={"default/b1": ("WaitingForPreemptedWorkloads", None)},
            want_preempted=["default/a1-admitted"],
        ),
        id="reclaim within cohort; single borrowing workload gets preempted",
    ),
]

MULTI_LAYER = PS("one", 8, {"cpu": "1"}, required=BLOCK, slices=((RACK, 4), (HOST, 2)))

CASES += [
    pytest.param(
        Case(
            nodes=[node("x1", cpu="4", memory="2Gi"), node("x2", cpu="4", memory="2Gi")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("one", 2, preferred=HOST, requests={"cpu": "1", "memory": "1536Mi"}))],
            want_admitted={
                "default/foo": [
                    ("one", {"cpu": "tas-default", "memory": "tas-default"}, [HOST], [(["x1"], 1), (["x2"], 1)])
                ]
            },
        ),
        id="initial scheduling; TAS uses podspec memory for placement",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", {RACK: "r1"}, cpu="3", memory=None)],
            topologies=[TWO],
            flavors=[TAS2],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", ps("launcher", 1, preferred=HOST), ps("worker", 0, preferred=HOST))],
            want_admitted={
                "default/foo": [
                    ("launcher", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)]),
                    ("worker", {"cpu": "tas-default"}, None, []),
                ]
            },
        ),
        id="workload with a PodSet of size zero",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", cpu="2", memory=None, pods="1")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[COHORT_CQS[0]],
            local_queues=COHORT_LQS,
            workloads=[workload("foo", ps("one", 1, required=HOST), ps("two", 1, required=HOST), queue="tas-lq-a")],
            want_pending={"default/foo": ("TopologyPlacementFailed", None)},
        ),
        id="workload with two PodSets exceeds node pods capacity",
    ),
    pytest.param(
        Case(
            nodes=[
                rack_node("b1-r1-x1", "b1", "r1", "x1", cpu="1", memory=None),
                rack_node("b1-r1-x2", "b1", "r1", "x2", cpu="4", memory=None),
                rack_node("b1-r2-x3", "b1", "r2", "x3", cpu="3", memory=None),
                rack_node("b1-r2-x4", "b1", "r2", "x4", cpu="4", memory=None),
            ],
            topologies=[THREE],
            flavors=[TAS3],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", MULTI_LAYER)],
            want_admitted={
                "default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x2"], 4), (["x3"], 2), (["x4"], 2)])]
            },
        ),
        id="multi-layer topology: block required with rack and host slices; workload fits",
    ),
    pytest.param(
        Case(
            nodes=[
                rack_node("b1-r1-x1", "b1", "r1", "x1", cpu="3", memory=None),
                rack_node("b1-r1-x2", "b1", "r1", "x2", cpu="3", memory=None),
            ],
            topologies=[THREE],
            flavors=[TAS3],
            cluster_queues=[DEFAULT_CQ],
            workloads=[workload("foo", PS("one", 6, {"cpu": "1"}, required=BLOCK, slices=((RACK, 6), (HOST, 2))))],
            want_pending={
                "default/foo": (
                    "TopologyPlacementFailed",
                    "couldn't assign flavors to pod set one: topology \"tas-three-level\" doesn't allow to fit; 0/1 "
                    "slice(s) fit on level cloud.provider.com/rack; 2/3 slice(s) fit on level kubernetes.io/hostname",
                )
            },
        ),
        id="multi-layer topology: host slice rounding makes rack slice impossible; NoFit",
    ),
]

# -- TestAssignFlavors_LeaderWorkerSetTASFlavor (flavorassigner_test.go) -----------------------------
GPU_A, GPU_B = "example.com/gpu-a", "example.com/gpu-b"
LWS_NODES = [
    node("x1", {GPU_A: "x"}, cpu=None, memory=None)
    | {
        "status": {
            "allocatable": {GPU_A: "4", GPU_B: "4", "memory": "8Gi", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True"}],
        }
    }
]
LWS_TOPOLOGIES = [make_topology("tas-topo-a", HOST), make_topology("tas-topo-b", HOST)]
LWS_FLAVORS = [make_flavor("tas-a").topology("tas-topo-a").obj(), make_flavor("tas-b").topology("tas-topo-b").obj()]


def lws_ps(name: str, group: str | None, gpu: str | None = None) -> PS:
    return PS(name, 1, {gpu: "1"} if gpu else {}, required=HOST, group=group)


def lws_case(pod_sets: Sequence[PS], groups: Sequence[tuple[str, Mapping[str, str]]], **kw: Any) -> Case:
    return Case(
        nodes=LWS_NODES,
        topologies=LWS_TOPOLOGIES,
        flavors=LWS_FLAVORS,
        cluster_queues=[cq("tas-main", *([g] for g in groups))],
        workloads=[workload("wl", *pod_sets)],
        **kw,
    )


CASES += [
    pytest.param(
        lws_case(
            [lws_ps("leader", "group1"), lws_ps("worker", "group1", GPU_A)],
            [("tas-a", {GPU_A: "4"}), ("tas-b", {"memory": "8Gi"})],
            want_admitted={
                "default/wl": [
                    ("leader", {GPU_A: "tas-a"}, [HOST], [(["x1"], 1)]),
                    ("worker", {GPU_A: "tas-a"}, [HOST], [(["x1"], 1)]),
                ]
            },
        ),
        id="leader without a managed request infers the group's TAS flavor",
    ),
    pytest.param(
        lws_case(
            [lws_ps("leader", None), lws_ps("worker", None, GPU_A)],
            [("tas-a", {GPU_A: "4"})],
            want_pending={
                "default/wl": ("NoMatchingFlavor", "failed to assign flavors to pod set leader: no TAS flavor assigned")
            },
        ),
        id="leader without a group is rejected (ClusterQueue-wide fallback is not supported)",
    ),
    pytest.param(
        lws_case(
            [lws_ps("leader", "group1"), lws_ps("worker-a", "group1", GPU_A), lws_ps("worker-b", "group1", GPU_B)],
            [("tas-a", {GPU_A: "4"}), ("tas-b", {GPU_B: "4"})],
            want_pending={
                "default/wl": (
                    "NoMatchingFlavor",
                    "failed to assign flavors to pod set leader: more than one TAS flavor assigned: tas-a, tas-b",
                )
            },
        ),
        id="peers in the same group resolving to different TAS flavors are rejected",
    ),
    pytest.param(
        lws_case(
            [
                lws_ps("leader1", "group1"),
                lws_ps("worker1", "group1", GPU_A),
                lws_ps("leader2", "group2"),
                lws_ps("worker2", "group2", GPU_B),
            ],
            [("tas-a", {GPU_A: "4"}), ("tas-b", {GPU_B: "4"})],
            want_admitted={
                "default/wl": [
                    ("leader1", {GPU_A: "tas-a"}, [HOST], [(["x1"], 1)]),
                    ("worker1", {GPU_A: "tas-a"}, [HOST], [(["x1"], 1)]),
                    ("leader2", {GPU_B: "tas-b"}, [HOST], [(["x1"], 1)]),
                    ("worker2", {GPU_B: "tas-b"}, [HOST], [(["x1"], 1)]),
                ]
            },
        ),
        id="multiple groups: leaders infer flavors from their own groups",
    ),
]


def in_cq_a(name: str, priority: int, pods: int, host: str) -> dict[str, Any]:
    """An admitted `pods`-pod workload of ClusterQueue tas-cq-a, all on `host`."""
    return workload(
        name,
        ps("one", pods, required=HOST),
        queue="tas-lq-a",
        priority=priority,
        cq_name="tas-cq-a",
        admitted=[("one", {"cpu": ("tas-default", str(pods))}, [HOST], [([host], pods)])],
    )


CASES += [
    pytest.param(
        Case(
            nodes=[node("y1", cpu="5", memory="3Gi")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[NO_BORROW_CQ_A["Any"], COHORT_CQS[1]],
            local_queues=COHORT_LQS,
            workloads=[
                in_cq_a("a1-admitted", 2, 2, "y1"),
                workload("a2", ps("one", 4, preferred=HOST), queue="tas-lq-a", priority=2),
                workload("b1", ps("one", 3, preferred=HOST), queue="tas-lq-b", priority=1),
            ],
            want_admitted={"default/b1": on("tas-cq-b", {"cpu": "3"}, ("y1", 3))},
            want_pending={
                "default/a2": (
                    "WaitingForQuota",
                    'couldn\'t assign flavors to pod set one: topology "tas-single-level" allows to fit only 3 out of '
                    "4 pod(s)",
                )
            },
        ),
        id="preempting workload without targets doesn't reserve capacity when it can always reclaim",
    ),
    pytest.param(
        Case(
            nodes=COHORT_NODES,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=COHORT_CQS,
            local_queues=COHORT_LQS,
            workloads=[
                in_cq_a("a1-admitted", 1, 5, "x1"),
                in_cq_a("a2-admitted", 2, 2, "y1"),
                in_cq_a("a3-admitted", 2, 1, "y1"),
                workload("b1", ps("one", 3, preferred=HOST), queue="tas-lq-b", priority=3),
            ],
            want_pending={"default/b1": ("WaitingForPreemptedWorkloads", None)},
            want_preempted=["default/a1-admitted"],
        ),
        id="reclaim within cohort; single workload is preempted out three candidates",
    ),
]

CASES += [
    pytest.param(
        Case(
            nodes=[node("x1", cpu="5", memory="5Gi"), node("y1", cpu="5", memory="5Gi")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "10", "memory": "10Gi"})], within="LowerPriority")],
            workloads=[
                workload("foo", ps("one", 10, preferred=HOST), priority=3),
                holder("low-priority-admitted", 1, "5", "z1"),
            ],
            want_pending={
                "default/foo": (
                    "WaitingForPreemptedWorkloads",
                    "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor tas-default, "
                    "5 more needed. Pending the preemption of 1 workload(s)",
                )
            },
            want_preempted=["default/low-priority-admitted"],
        ),
        id="workload preempted due to quota is using deleted Node",
    ),
    pytest.param(
        Case(
            nodes=PREEMPT_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[PREEMPT_CQ],
            workloads=[
                workload("foo", ps("one", 1, preferred=HOST, requests={"cpu": "1", "memory": "4Gi"}), priority=3),
                workload(
                    "low-priority-admitted",
                    ps("one", 1, required=HOST, requests={"cpu": "1", "memory": "2Gi"}),
                    priority=1,
                    admitted=[admitted_on("one", "tas-default", {"cpu": "1", "memory": "2Gi"}, 1, "x1")],
                ),
            ],
            want_pending={
                "default/foo": (
                    "WaitingForPreemptedWorkloads",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't allow to fit any "
                    'of 1 pod(s). Total nodes: 1; excluded: resource "memory": 1. Pending the preemption of 1 workload(s)',
                )
            },
            want_preempted=["default/low-priority-admitted"],
        ),
        id="preemption; TAS uses podspec memory for fit",
    ),
    pytest.param(
        Case(
            nodes=COHORT_NODES,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=COHORT_CQS,
            local_queues=COHORT_LQS,
            workloads=[
                workload(
                    "a1-admitted",
                    ps("one", 4, required=HOST),
                    queue="tas-lq-a",
                    priority=3,
                    cq_name="tas-cq-a",
                    admitted=[("one", {"cpu": ("tas-default", "5")}, [HOST], [(["y1"], 5)])],
                ),
                in_cq_a("a2-admitted", 2, 3, "x1"),
                workload(
                    "b1",
                    ps("one", 4, required=HOST, min_count=3, requests={"cpu": "1", "memory": "1"}),
                    queue="tas-lq-b",
                    priority=3,
                ),
            ],
            want_pending={"default/b1": ("WaitingForPreemptedWorkloads", None)},
            want_preempted=["default/a2-admitted"],
        ),
        id="reclaim within cohort; preempting with partial admission",
    ),
]


def toleration(value: str) -> list[dict[str, str]]:
    return [{"key": "example.com/flavor", "operator": "Equal", "value": value, "effect": "NoSchedule"}]


CASES += [
    pytest.param(
        Case(
            nodes=[
                node("node-1", {"tas-flavor": "f1"}, cpu="8", memory=None),
                node("node-2", {"tas-flavor": "f2"}, cpu="8", memory=None),
            ],
            topologies=[SINGLE],
            flavors=[
                make_flavor(f"tas-flavor-{i}").label("tas-flavor", f"f{i}").topology("tas-single-level").obj()
                for i in (1, 2)
            ],
            cluster_queues=[
                cq("tas-cq-a", [("tas-flavor-1", {"cpu": "8"})], cohort="tas-cohort-main"),
                cq(
                    "tas-cq-b",
                    [("tas-flavor-1", {"cpu": "8"}), ("tas-flavor-2", {"cpu": "8"})],
                    cohort="tas-cohort-main",
                ),
            ],
            local_queues=COHORT_LQS,
            workloads=[
                workload("a1", ps("one", 1, required=HOST, requests={"cpu": "8"}), queue="tas-lq-a", priority=10),
                workload(
                    "b1", ps("one", 1, required=HOST, requests={"cpu": "8"}), queue="tas-lq-b", priority=5, created=60
                ),
            ],
            want_admitted={"default/a1": [("one", {"cpu": "tas-flavor-1"}, [HOST], [(["node-1"], 1)])]},
            want_pending={"default/b1": ("WaitingForQuota", None)},
        ),
        id="two flavors in cohort; re-evaluation is sticky and does not switch to second flavor; TASRecomputeAssignmentWithinSchedulingCycle enabled",
    ),
    pytest.param(
        Case(
            nodes=PREEMPT_NODE,
            topologies=[SINGLE],
            flavors=[
                make_flavor(f"flavor-{c}").taint("example.com/flavor", c).topology("tas-single-level").obj()
                for c in "ab"
            ],
            cluster_queues=[
                cq(
                    "tas-main",
                    [("flavor-a", {"cpu": "5", "memory": "5Gi"}), ("flavor-b", {"cpu": "5", "memory": "5Gi"})],
                    within="LowerPriority",
                )
            ],
            workloads=[
                workload(
                    "w3-pending",
                    ps("one", 1, preferred=HOST, requests={"cpu": "2", "memory": "2Gi"}, tolerations=toleration("a")),
                    priority=5,
                ),
                workload(
                    "w1-low-prio-a",
                    ps("one", 1, preferred=HOST, requests={"cpu": "1", "memory": "1Gi"}, tolerations=toleration("a")),
                    priority=1,
                    admitted=[admitted_on("one", "flavor-a", {"cpu": "1", "memory": "1Gi"}, 1, "x1")],
                ),
                workload(
                    "w2-sibling-b",
                    ps("one", 1, preferred=HOST, requests={"cpu": "3", "memory": "3Gi"}, tolerations=toleration("b")),
                    priority=1,
                    admitted=[admitted_on("one", "flavor-b", {"cpu": "3", "memory": "3Gi"}, 1, "x1")],
                ),
            ],
            want_pending={"default/w3-pending": ("WaitingForPreemptedWorkloads", None)},
            want_preempted=["default/w1-low-prio-a"],
        ),
        id="sibling-flavor usage on the shared node forces same-flavor preemption",
    ),
]

CASES += [
    pytest.param(
        Case(
            nodes=PREEMPT_NODE,
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "3", "memory": "3Gi"})], within="LowerPriority")],
            workloads=[
                workload("high-priority", ps("main", 1, requests={"cpu": "3"}), priority=2),
                workload(
                    "low-priority",
                    ps("main", 1, requests={"cpu": "3"}),
                    priority=1,
                    admitted=[("main", {"cpu": ("tas-default", "3")}, [HOST], [(["x1"], 1)])],
                ),
            ],
            want_pending={"default/high-priority": ("WaitingForPreemptedWorkloads", None)},
            want_preempted=["default/low-priority"],
            config={"tas": False},
        ),
        id="TAS disabled, preemption succeeds even with ResourceFlavor topologyName",
    ),
    pytest.param(
        Case(
            nodes=[node("x1", cpu="5", memory="5Gi"), node("y1", cpu="5", memory="5Gi")],
            topologies=[SINGLE],
            flavors=[TAS1],
            cluster_queues=[cq("tas-main", [("tas-default", {"cpu": "10", "memory": "10Gi"})], within="LowerPriority")],
            workloads=[
                workload(
                    "low-cpu",
                    ps("one", 2, required=HOST, requests={"cpu": "3"}),
                    priority=-1000,
                    admitted=[("one", {"cpu": ("tas-default", "6")}, [HOST], [(["x1"], 1), (["y1"], 1)])],
                ),
                workload(
                    "low-mem",
                    ps("one", 2, required=HOST, requests={"cpu": "10m", "memory": "5Gi"}),
                    priority=-1000,
                    admitted=[
                        (
                            "one",
                            {"cpu": ("tas-default", "20m"), "memory": ("tas-default", "10Gi")},
                            [HOST],
                            [(["x1"], 1), (["y1"], 1)],
                        )
                    ],
                ),
                workload("high-priority", ps("one", 1, required=HOST, requests={"cpu": "3", "memory": "5Gi"})),
            ],
            want_pending={"default/high-priority": ("WaitingForPreemptedWorkloads", None)},
            want_preempted=["default/low-cpu", "default/low-mem"],
        ),
        id="preempt in multiple flavors out of which one requires update Fit -> Preempt due to fragmentation",
    ),
]

# -- TestScheduleForTAS, the second pass after a node failure ----------------------------------------
CASES += [
    pytest.param(
        Case(
            nodes=DEFAULT_NODES,
            topologies=[THREE],
            flavors=[TAS3],
            cluster_queues=[DEFAULT_CQ],
            workloads=[
                workload(
                    "foo",
                    ps("one", 1, preferred=HOST),
                    unhealthy=["x0"],
                    admitted=[admitted_on("one", "tas-default", {"cpu": "1"}, 1, "x0")],
                )
            ],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])]},
        ),
        id="workload with unhealthyNode annotation; second pass; baseline scenario",
    ),
    pytest.param(
        Case(
            nodes=DEFAULT_NODES,
            topologies=[THREE],
            flavors=[TAS3],
            cluster_queues=[DEFAULT_CQ],
            workloads=[
                workload(
                    "foo",
                    ps("one", 2, preferred=RACK, requests={"cpu": "500m"}),
                    unhealthy=["x0"],
                    admitted=[("one", {"cpu": ("tas-default", "1")}, [HOST], [(["x0"], 1), (["x1"], 1)])],
                )
            ],
            want_admitted={"default/foo": [("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 2)])]},
        ),
        id="workload with unhealthyNode annotation; second pass; preferred; fit in different rack",
    ),
]


def failed_on_x0(*pod_sets: PS, admitted: Any, want: Want) -> Case:
    """`foo` holds quota with a pod on x0, a node gone and listed unhealthy; `want` its new admission."""
    return Case(
        nodes=DEFAULT_NODES,
        topologies=[THREE],
        flavors=[TAS3],
        cluster_queues=[DEFAULT_CQ],
        workloads=[workload("foo", *pod_sets, unhealthy=["x0"], admitted=admitted)],
        want_admitted={"default/foo": want},
    )


CASES += [
    pytest.param(
        failed_on_x0(
            ps("one", 2, required=RACK),
            admitted=[("one", {"cpu": ("tas-default", "2")}, [HOST], [(["x0"], 1), (["x2"], 1)])],
            want=[("one", {"cpu": "tas-default"}, [HOST], [(["x2"], 1), (["x3"], 1)])],
        ),
        id="workload with unhealthyNode annotation; second pass; required rack; fit",
    ),
    pytest.param(
        failed_on_x0(
            ps("one", 1, required=RACK),
            admitted=[admitted_on("one", "tas-default", {"cpu": "1"}, 1, "x0")],
            want=[("one", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)])],
        ),
        id="workload with unhealthyNode annotation; second pass; required rack for a single node; fit",
    ),
    pytest.param(
        failed_on_x0(
            ps("one", 1, preferred=HOST),
            ps("two", 1, preferred=HOST),
            admitted=[
                admitted_on("one", "tas-default", {"cpu": "1"}, 1, "x0"),
                admitted_on("two", "tas-default", {"cpu": "1"}, 1, "x1"),
            ],
            want=[
                ("one", {"cpu": "tas-default"}, [HOST], [(["x2"], 1)]),
                ("two", {"cpu": "tas-default"}, [HOST], [(["x1"], 1)]),
            ],
        ),
        id="workload with unhealthyNode annotation; second pass; two podsets",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_schedule_for_tas(case: Case) -> None:
    run(case)
