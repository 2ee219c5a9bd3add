"""Topology-aware admission as a user sees it: the Workload's topologyAssignment, or why none fits.

Upstream v0.19.2 behaviour (`pkg/scheduler/flavorassigner/tas_flavorassigner.go`, the TAS parts of
`scheduler.go` and `preemption.go`), through the admission core's public API.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_topology, make_wl, psa
from webhook.core import Admit, Pending
from webhook.core.decisions import Evict

BLOCK, RACK, HOST = "cloud.com/block", "cloud.com/rack", "kubernetes.io/hostname"
TOPOLOGY = make_topology("default", BLOCK, RACK, HOST)
TAS = make_flavor("tas").topology("default").obj()
LQ = make_lq("lq", "ns", "cq")


def node(name: str, block: str, rack: str, cpu: str = "1", *, ready: bool = True, **extra: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {BLOCK: block, RACK: rack, HOST: name, **extra}},
        "status": {
            "allocatable": {"cpu": cpu, "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name: str, node_name: str, cpu: str, phase: str = "Running") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "other"},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": phase},
    }


# Two racks of two one-cpu nodes in block b1.
NODES = (
    node("x1", "b1", "r1"),
    node("x2", "b1", "r1"),
    node("x3", "b1", "r2"),
    node("x4", "b1", "r2"),
)


def rack_job(name: str, pods: int, *, priority: int = 0, **request: str) -> Any:
    wl = make_wl(name).queue("lq").podset("main", pods, cpu="1").topology(**(request or {"required": RACK}))
    return wl.priority(priority)


def only(decisions: list[Any], key: str) -> Any:
    return next(d for d in decisions if getattr(d, "key", None) == key)


def test_a_rack_constrained_job_is_admitted_with_its_topology_assignment() -> None:
    core = make_core(TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *NODES)
    core.on_workload(rack_job("wl", 2).obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(d, Admit)
    assert d.admission["podSetAssignments"] == [
        {
            "name": "main",
            "flavors": {"cpu": "tas"},
            "resourceUsage": {"cpu": "2"},
            "count": 2,
            "topologyAssignment": {
                "levels": [HOST],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [{"individual": {"prefix": "x", "roots": ["1", "2"]}}],
                        "podCounts": {"universal": 1},
                    }
                ],
            },
        }
    ]


def test_a_rack_constrained_job_that_fits_no_rack_gets_upstreams_message() -> None:
    core = make_core(
        TOPOLOGY,
        TAS,
        make_cq("cq").group(fq("tas", cpu="8")).obj(),
        LQ,
        *NODES,
        granular_pending_reasons=True,
    )
    core.on_workload(rack_job("wl", 3).obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(d, Pending)
    assert d.reason == "TopologyPlacementFailed"
    assert d.message == (
        'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 2 out of 3 pod(s)'
    )
    # The QuotaReserved=False condition carries the same message.
    assert [(c.type, c.status, c.message) for c in d.conditions if c.type == "QuotaReserved"] == [
        ("QuotaReserved", "False", d.message)
    ]


def test_two_workloads_of_one_cycle_do_not_take_the_same_rack() -> None:
    cqs = [make_cq(n).cohort("co").group(fq("tas", cpu="4")).obj() for n in ("cq-a", "cq-b")]
    lqs = [make_lq("lq-a", "ns", "cq-a"), make_lq("lq-b", "ns", "cq-b")]
    core = make_core(TOPOLOGY, TAS, *cqs, *lqs, *NODES)
    for name, lq in (("a", "lq-a"), ("b", "lq-b")):
        core.on_workload(make_wl(name).queue(lq).podset("main", 2, cpu="1").topology(required=RACK).obj(), T0)
    admitted = core.schedule(T0).admitted
    assert len(admitted) == 2
    hosts = [a.admission["podSetAssignments"][0]["topologyAssignment"]["slices"][0] for a in admitted]
    roots = sorted(tuple(h["valuesPerLevel"][0]["individual"]["roots"]) for h in hosts)
    assert roots == [("1", "2"), ("3", "4")]


def test_admitted_placements_hold_their_nodes() -> None:
    held = (
        make_wl("old")
        .queue("lq")
        .podset("main", 2, cpu="1")
        .topology(required=RACK)
        .reserve("cq", {**psa("main", 2, cpu=("tas", "2")), "topologyAssignment": _hosts("x1", "x2")})
        .obj()
    )
    core = make_core(TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *NODES, held)
    core.on_workload(rack_job("new", 2).obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/new")
    assert isinstance(d, Admit)
    assert d.admission["podSetAssignments"][0]["topologyAssignment"] == _hosts("x3", "x4")


def test_pods_outside_tas_take_node_capacity() -> None:
    core = make_core(
        TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *NODES, pod("busy", "x3", "500m")
    )
    core.on_workload(rack_job("wl", 2, preferred=RACK).obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(d, Admit)
    assert d.admission["podSetAssignments"][0]["topologyAssignment"] == _hosts("x1", "x2")


def test_a_finished_pod_frees_its_node() -> None:
    core = make_core(
        TOPOLOGY,
        TAS,
        make_cq("cq").group(fq("tas", cpu="8")).obj(),
        LQ,
        node("x1", "b1", "r1"),
        pod("busy", "x1", "1"),
        granular_pending_reasons=True,
    )
    core.on_workload(rack_job("wl", 1).obj(), T0)
    assert isinstance(only(core.schedule(T0).decisions, "ns/wl"), Pending)
    core.on_pod("other/busy", pod("busy", "x1", "1", phase="Succeeded"), T0)
    assert isinstance(only(core.schedule(T0).decisions, "ns/wl"), Admit)


def test_a_tas_only_cluster_queue_places_plain_workloads_on_nodes() -> None:
    core = make_core(TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *NODES)
    core.on_workload(make_wl("wl").queue("lq").podset("main", 3, cpu="1").obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(d, Admit)
    ta = d.admission["podSetAssignments"][0]["topologyAssignment"]
    assert ta["levels"] == [HOST]
    assert sum(s["domainCount"] for s in ta["slices"]) == 3


def test_nodes_not_ready_or_outside_the_flavor_are_not_used() -> None:
    labelled = make_flavor("tas").topology("default").label("pool", "a").obj()
    nodes = (
        node("x1", "b1", "r1", pool="a"),
        node("x2", "b1", "r1", ready=False, pool="a"),
        node("x3", "b1", "r2"),
    )
    core = make_core(TOPOLOGY, labelled, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *nodes)
    core.on_workload(rack_job("wl", 2, preferred=RACK).obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(d, Pending)
    assert "allows to fit only 1 out of 2 pod(s)" in d.message


def test_a_higher_priority_job_preempts_to_free_the_rack_it_needs() -> None:
    cq = make_cq("cq").group(fq("tas", cpu="8")).preemption(within="LowerPriority").obj()
    core = make_core(TOPOLOGY, TAS, cq, LQ, node("x1", "b1", "r1"), node("x2", "b1", "r1"))
    core.on_workload(rack_job("low", 2).obj(), T0)
    assert isinstance(only(core.schedule(T0).decisions, "ns/low"), Admit)
    core.on_workload(rack_job("high", 1, priority=10).obj(), T0)
    result = core.schedule(T0)
    assert [v.key for p in result.preempted for v in p.targets] == ["ns/low"]
    pending = only(result.decisions, "ns/high")
    assert isinstance(pending, Pending)
    assert pending.message.endswith("Pending the preemption of 1 workload(s)")


def test_no_preemption_when_even_an_empty_cluster_has_no_room() -> None:
    cq = make_cq("cq").group(fq("tas", cpu="8")).preemption(within="LowerPriority").obj()
    core = make_core(TOPOLOGY, TAS, cq, LQ, node("x1", "b1", "r1"), node("x2", "b1", "r1"))
    core.on_workload(rack_job("low", 1).obj(), T0)
    core.schedule(T0)
    core.on_workload(rack_job("high", 3, priority=10).obj(), T0)
    result = core.schedule(T0)
    assert result.preempted == []
    assert isinstance(only(result.decisions, "ns/high"), Pending)


def _hosts(*names: str) -> dict[str, Any]:
    """The v1beta2 topologyAssignment of one pod on each of `names` (`x<digit>` hosts)."""
    return {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": len(names),
                "valuesPerLevel": [{"individual": {"prefix": "x", "roots": [n[1:] for n in names]}}],
                "podCounts": {"universal": 1},
            }
        ],
    }


def test_admitted_placements_count_even_when_their_workload_arrives_before_the_flavor() -> None:
    held = (
        make_wl("old")
        .queue("lq")
        .podset("main", 2, cpu="1")
        .topology(required=RACK)
        .reserve("cq", {**psa("main", 2, cpu=("tas", "2")), "topologyAssignment": _hosts("x1", "x2")})
        .obj()
    )
    core = make_core(held, TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *NODES)
    core.on_workload(rack_job("new", 2).obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/new")
    assert isinstance(d, Admit)
    assert d.admission["podSetAssignments"][0]["topologyAssignment"] == _hosts("x3", "x4")


def _failed_node_workload() -> dict[str, Any]:
    """`old` runs on x1 and x2 of rack r1 (rack required); x2 failed."""
    obj = (
        make_wl("old")
        .queue("lq")
        .podset("main", 2, cpu="1")
        .topology(required=RACK)
        .reserve("cq", {**psa("main", 2, cpu=("tas", "2")), "topologyAssignment": _hosts("x1", "x2")})
        .obj()
    )
    obj["status"]["unhealthyNodes"] = [{"name": "x2"}]
    return obj


def test_a_failed_node_is_replaced_within_the_required_rack() -> None:
    nodes = (
        node("x1", "b1", "r1"),
        node("x2", "b1", "r1", ready=False),
        node("x5", "b1", "r1"),
        node("x3", "b1", "r2"),
    )
    core = make_core(TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *nodes, _failed_node_workload())
    (d,) = core.schedule(T0).decisions
    assert isinstance(d, Admit) and d.key == "ns/old" and d.clears_unhealthy_nodes
    assert d.admission["podSetAssignments"][0]["topologyAssignment"] == _hosts("x1", "x5")
    assert core.schedule(T0).decisions == [], "decided once, until the write shows"


def test_a_failed_node_without_replacement_evicts_the_workload() -> None:
    nodes = (node("x1", "b1", "r1"), node("x2", "b1", "r1", ready=False), node("x3", "b1", "r2"))
    core = make_core(TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *nodes, _failed_node_workload())
    (d,) = core.schedule(T0).decisions
    assert isinstance(d, Evict) and d.key == "ns/old"
    assert (d.reason, d.message) == (
        "NodeFailures",
        "Workload was evicted as there was no replacement for unhealthy node(s): x2",
    )
    assert [(c.type, c.status, c.reason) for c in d.conditions] == [("Evicted", "True", "NodeFailures")]


def test_the_replacement_holds_its_node_against_workloads_of_the_same_cycle() -> None:
    nodes = (node("x1", "b1", "r1"), node("x2", "b1", "r1", ready=False), node("x5", "b1", "r1"))
    core = make_core(TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, *nodes, _failed_node_workload())
    core.on_workload(rack_job("new", 1).obj(), T0)
    decisions = core.schedule(T0).decisions
    assert isinstance(only(decisions, "ns/old"), Admit)
    assert isinstance(only(decisions, "ns/new"), Pending)


def test_a_node_heartbeat_does_not_retry_inadmissible_workloads_but_more_room_does() -> None:
    """Upstream requeues TAS workloads only when a Node's scheduling properties change
    (`checkNodeSchedulingPropertiesChanged`); kubelet heartbeats every few seconds must not
    send every waiting workload through another cycle."""
    core = make_core(TOPOLOGY, TAS, make_cq("cq").group(fq("tas", cpu="8")).obj(), LQ, node("x1", "b1", "r1"))
    core.on_workload(rack_job("wl", 2).obj(), T0)
    assert isinstance(only(core.schedule(T0).decisions, "ns/wl"), Pending)
    beat = node("x1", "b1", "r1")
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:10Z"
    core.on_node(beat, T0)
    assert all(getattr(d, "key", None) != "ns/wl" for d in core.schedule(T0).decisions)
    core.on_node(node("x1", "b1", "r1", cpu="2"), T0)
    assert isinstance(only(core.schedule(T0).decisions, "ns/wl"), Admit)


def checked_first_pass(check: str, controller: str, *nodes: dict[str, Any]) -> tuple[Any, dict[str, Any], Admit]:
    """A ClusterQueue of the TAS flavor whose one admission check `check` belongs to `controller`,
    `nodes`, and a two-pod rack job with that check Pending after its first scheduling pass."""
    cq = make_cq("cq").group(fq("tas", cpu="8")).obj()
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": check}]}
    core = make_core(TOPOLOGY, TAS, cq, LQ, *nodes)
    core.on_admission_check(check, True, T0, controller=controller)
    wl = rack_job("wl", 2).obj()
    wl["status"] = {
        "admissionChecks": [
            {"name": check, "state": "Pending", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]
    }
    core.on_workload(wl, T0)
    first = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(first, Admit)
    return core, wl, first


def test_with_a_multikueue_check_the_placement_is_left_to_the_worker() -> None:
    """`podSetTopologyRequest`: the manager reserves quota on its TAS flavor but places nothing (it
    may have no nodes at all); the pod set's `delayedTopologyRequest` is Pending until the worker's
    placement is reported, and the Workload is not Admitted before."""
    _, _, d = checked_first_pass("mk", "kueue.x-k8s.io/multikueue")
    assert d.admission["podSetAssignments"] == [
        {
            "name": "main",
            "flavors": {"cpu": "tas"},
            "resourceUsage": {"cpu": "2"},
            "count": 2,
            "delayedTopologyRequest": "Pending",
        }
    ]
    assert [(c.type, c.status, c.reason) for c in d.conditions] == [
        ("QuotaReserved", "True", "QuotaReserved"),
        ("Admitted", "False", "UnsatisfiedAdmissionChecks"),
    ]


def test_without_a_multikueue_check_the_same_queue_places_on_its_nodes() -> None:
    cq = make_cq("cq").group(fq("tas", cpu="8")).obj()
    core = make_core(TOPOLOGY, TAS, cq, LQ, *NODES)
    core.on_workload(rack_job("wl", 2).obj(), T0)
    d = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(d, Admit)
    assert "delayedTopologyRequest" not in d.admission["podSetAssignments"][0]
    assert "topologyAssignment" in d.admission["podSetAssignments"][0]


def _with_reservation(wl: dict[str, Any], d: Admit, check_state: str) -> dict[str, Any]:
    """The Workload as the API returns it after `d` was written, its check now in `check_state`."""
    out = dict(wl)
    out["status"] = {
        "admission": d.admission,
        "conditions": [c.to_api(T0) for c in d.conditions],
        "admissionChecks": [
            {"name": "prov", "state": check_state, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ],
    }
    return out


def test_behind_a_provisioning_request_the_placement_waits_for_its_nodes_then_a_second_pass_places_it() -> None:
    """`podSetTopologyRequest` on the first pass, `NeedsSecondPass` once the check is Ready: quota is
    reserved without a placement (the nodes the request brings do not exist yet); when the check
    turns Ready the scheduler places the pods and admits, in one write."""
    core, wl, first = checked_first_pass("prov", "kueue.x-k8s.io/provisioning-request", *NODES)
    [psa] = first.admission["podSetAssignments"]
    assert psa["delayedTopologyRequest"] == "Pending" and "topologyAssignment" not in psa
    assert ("Admitted", "False", "UnsatisfiedAdmissionChecks") in [
        (c.type, c.status, c.reason) for c in first.conditions
    ]

    core.on_workload(_with_reservation(wl, first, "Pending"), T0)
    assert not [d for d in core.schedule(T0).decisions if getattr(d, "key", None) == "ns/wl"]  # still waiting

    core.on_workload(_with_reservation(wl, first, "Ready"), T0)
    core.take_status_changes()
    second = only(core.schedule(T0).decisions, "ns/wl")
    assert isinstance(second, Admit)
    [psa] = second.admission["podSetAssignments"]
    assert psa["delayedTopologyRequest"] == "Ready"
    assert psa["topologyAssignment"]["levels"] == [HOST]
    assert [(c.type, c.status, c.reason) for c in second.conditions] == [
        ("QuotaReserved", "True", "QuotaReserved"),
        ("Admitted", "True", "Admitted"),
    ]
    # The assumed placement admits it: the queue status the worker publishes must say so.
    changes = core.take_status_changes()
    assert changes is not None and "cq" in changes.cluster_queues
    assert core.cluster_queue_status("cq")["admittedWorkloads"] == 1


def test_a_delayed_placement_that_does_not_fit_yet_is_tried_again_later() -> None:
    """Fewer free nodes than the provisioned pods need: no admission yet, and another try a second
    later, not every cycle."""
    core, wl, first = checked_first_pass("prov", "kueue.x-k8s.io/provisioning-request", *NODES[:1])
    core.on_workload(_with_reservation(wl, first, "Ready"), T0)
    assert not [d for d in core.schedule(T0).decisions if getattr(d, "key", None) == "ns/wl"]
    core.on_node(node("x2", "b1", "r1"), T0)  # the provisioned node arrives
    assert not [d for d in core.schedule(T0).decisions if getattr(d, "key", None) == "ns/wl"]  # backing off
    later = only(core.schedule(T0 + timedelta(seconds=2)).decisions, "ns/wl")
    assert isinstance(later, Admit)
    assert later.admission["podSetAssignments"][0]["delayedTopologyRequest"] == "Ready"
