"""Spec fields of the API objects that no other test names on its own (README "Object fields")."""

from __future__ import annotations

import pytest

from tests.builders import T0, fq, make_cohort, make_core, make_cq, make_flavor, make_lq, make_wl, psa

ONE = make_flavor("one").obj()
GATE = "example.com/hold"


def test_queue_name_reaches_the_cluster_queue_its_local_queue_names() -> None:
    """Workload `spec.queueName` → LocalQueue `spec.clusterQueue`: each workload is charged to the
    ClusterQueue behind its own LocalQueue; one naming no LocalQueue is never admitted."""
    core = make_core(
        ONE,
        make_cq("cq-a").group(fq("one", cpu="1")).obj(),
        make_cq("cq-b").group(fq("one", cpu="1")).obj(),
        make_lq("lq-a", "ns", "cq-a"),
        make_lq("lq-b", "ns", "cq-b"),
        make_wl("to-a").queue("lq-a").request(cpu="1").obj(),
        make_wl("to-b").queue("lq-b").request(cpu="1").obj(),
        make_wl("nowhere").queue("missing").request(cpu="1").obj(),
    )
    result = core.schedule(T0)
    assert sorted((a.key, a.cluster_queue) for a in result.admitted) == [("ns/to-a", "cq-a"), ("ns/to-b", "cq-b")]
    assert core.cluster_queue_status("cq-a")["reservingWorkloads"] == 1
    assert core.cluster_queue_status("cq-b")["reservingWorkloads"] == 1


@pytest.mark.parametrize(
    ("weight", "share"), [pytest.param("1", 200, id="weight 1"), pytest.param("2", 100, id="weight 2")]
)
def test_a_cohorts_fair_sharing_weight_divides_its_share(weight: str, share: int) -> None:
    """Cohort `spec.fairSharing.weight`: a cohort borrowing from its parent reports its borrowed
    share divided by its weight, as a ClusterQueue's does."""
    core = make_core(
        ONE,
        make_cohort("root").obj(),
        make_cohort("co").parent("root").weight(weight).obj(),
        make_cohort("lender").parent("root").obj(),
        make_cq("cq").cohort("co").group(fq("one", cpu="5")).obj(),
        make_cq("other").cohort("lender").group(fq("one", cpu="5")).obj(),
        make_lq("lq", "ns", "cq"),
        make_wl("a").request(cpu="7").reserve("cq", psa(cpu=("one", "7"))).obj(),
        fair_sharing=True,
    )
    assert core.cohort_status("co")["fairSharing"] == {"weightedShare": share}
    assert core.cohort_status("lender")["fairSharing"] == {"weightedShare": 0}


@pytest.mark.parametrize(
    ("gates", "preempts"),
    [
        pytest.param({"concurrent_admission": True}, False, id="ConcurrentAdmission on: gated"),
        pytest.param({"orchestrated_preemption": True}, False, id="MultiKueueOrchestratedPreemption on: gated"),
        pytest.param({}, True, id="both off: no effect"),
    ],
)
def test_a_closed_preemption_gate_holds_back_preemption_only_with_its_gates(
    gates: dict[str, bool], preempts: bool
) -> None:
    """Workload `spec.preemptionGates`: any closed gate, not only the feature's own, stops a workload
    from preempting while ConcurrentAdmission or MultiKueueOrchestratedPreemption is on, and signals
    BlockedOnPreemptionGates; with both off the scheduler does not look at gates
    (`pkg/scheduler/scheduler.go`; upstream's scheduler_test "block preemptions and signal
    `BlockedOnPreemptionGates` when a preemption gate is present")."""
    low = make_wl("low").priority(0).request(cpu="2").reserve("cq", psa(cpu=("one", "2"))).obj()
    high = make_wl("high").priority(10).request(cpu="2").obj()
    high["spec"]["preemptionGates"] = [{"name": GATE}]
    cq = make_cq("cq").group(fq("one", cpu="2")).preemption(within="LowerPriority").obj()
    lq = make_lq("lq", "ns", "cq")
    result = make_core(ONE, cq, lq, low, high, **gates).schedule(T0)
    assert [v.key for p in result.preempted for v in p.targets] == (["ns/low"] if preempts else [])
    (pending,) = result.pending
    assert pending.reason == ("WaitingForPreemptedWorkloads" if preempts else "AdmissionGated")
    blocked = [cond for cond in pending.conditions if cond.type == "BlockedOnPreemptionGates"]
    assert [(cond.status, cond.reason) for cond in blocked] == ([] if preempts else [("True", "PreemptionGated")])


@pytest.mark.parametrize(
    "low_admitted",
    [
        pytest.param(False, id="fits without preemption"),
        pytest.param(True, id="nothing it may preempt"),
    ],
)
def test_a_gated_workload_needing_no_preemption_is_not_blocked(low_admitted: bool) -> None:
    """Upstream's scheduler_test "do not signal `BlockedOnPreemptionGates` when a preemption gate is
    present, but the workload fits without preemption" / "... had nothing to preempt" (gate
    MultiKueueOrchestratedPreemption): a closed gate matters only when preemption would be needed."""
    objs = []
    if low_admitted:  # same priority: nothing to preempt
        objs.append(make_wl("low").priority(10).request(cpu="2").reserve("cq", psa(cpu=("one", "2"))).obj())
    wl = make_wl("gated").priority(10).request(cpu="2").obj()
    wl["spec"]["preemptionGates"] = [{"name": GATE}]
    cq = make_cq("cq").group(fq("one", cpu="2")).preemption(within="LowerPriority").obj()
    result = make_core(ONE, cq, make_lq("lq", "ns", "cq"), *objs, wl, orchestrated_preemption=True).schedule(T0)
    assert [a.key for a in result.admitted] == ([] if low_admitted else ["ns/gated"])
    for pending in result.pending:
        assert all(cond.type != "BlockedOnPreemptionGates" for cond in pending.conditions)


def test_index_labels_alone_ask_for_no_topology() -> None:
    """Workload `podSets[].topologyRequest.podIndexLabel` and the sub-group fields only shape a
    topology placement (the Job integration sets podIndexLabel on every podSet, as upstream); on
    their own they ask for none, so the podSet is admitted on a plain flavor (`IsExplicitlyRequestingTAS`)."""
    wl = make_wl("indexed").request(cpu="1").obj()
    wl["spec"]["podSets"][0]["topologyRequest"] = {
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
        "subGroupCount": 2,
        "podSetGroupName": "group",
    }
    core = make_core(ONE, make_cq("cq").group(fq("one", cpu="1")).obj(), make_lq("lq", "ns", "cq"), wl, tas=True)
    assert [a.key for a in core.schedule(T0).admitted] == ["ns/indexed"]
