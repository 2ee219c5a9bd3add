"""Queueing, stopPolicy, namespaceSelector, Active conditions, fair-sharing shares and status."""

from __future__ import annotations

import pathlib
import re
from datetime import timedelta
from typing import Any

import pytest

import webhook.core
from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_topology, make_wl, psa
from webhook.core import Admit, Pending, WorkloadKey

ONE = make_flavor("one").obj()
LQ = make_lq("lq", "ns", "cq")


def admitted_names(core: webhook.core.AdmissionCore, cycles: int = 1) -> list[str]:
    out = []
    for _ in range(cycles):
        out += [d.key.split("/")[1] for d in core.schedule(T0).admitted]
    return out


def test_priority_then_creation_order() -> None:
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="1")).obj(),
        LQ,
        make_wl("old").created(1).request(cpu="1").obj(),
        make_wl("new").created(2).request(cpu="1").obj(),
        make_wl("high").created(3).priority(5).request(cpu="1").obj(),
    )
    assert admitted_names(core) == ["high"]


@pytest.mark.parametrize(
    ("strategy", "want"),
    [
        pytest.param("StrictFIFO", [], id="StrictFIFO blocks"),
        pytest.param("BestEffortFIFO", ["small"], id="BestEffortFIFO skips"),
    ],
)
def test_head_of_line(strategy: str, want: list[str]) -> None:
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="2")).strategy(strategy).obj(),
        LQ,
        make_wl("big").created(1).request(cpu="3").obj(),
        make_wl("small").created(2).request(cpu="1").obj(),
    )
    assert admitted_names(core, cycles=3) == want


def test_inadmissible_requeued_when_quota_released() -> None:
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="2")).obj(),
        LQ,
        make_wl("running").request(cpu="2").reserve("cq", psa(cpu=("one", "2"))).obj(),
        make_wl("wl").request(cpu="2").obj(),
    )
    assert admitted_names(core, cycles=2) == []
    assert core.queues.pending_in_cluster_queue("cq") == (0, 1)
    core.on_workload(make_wl("running").request(cpu="2").reserve("cq", psa(cpu=("one", "2"))).finished().obj(), T0)
    assert admitted_names(core) == ["wl"]


def test_backoff_keeps_workload_parked() -> None:
    wl = make_wl("wl").request(cpu="1").obj()
    wl["status"]["requeueState"] = {"count": 1, "requeueAt": "2025-01-01T00:01:00Z"}
    core = make_core(ONE, make_cq("cq").group(fq("one", cpu="2")).obj(), LQ, wl)
    assert admitted_names(core) == []
    assert [d.key for d in core.schedule(T0 + timedelta(minutes=2)).admitted] == ["ns/wl"]


@pytest.mark.parametrize(
    ("cq", "reason", "message"),
    [
        pytest.param(make_cq("cq").group(fq("one", cpu="1")).obj(), "Ready", "Can admit new workloads", id="ready"),
        pytest.param(
            make_cq("cq").group(fq("missing", cpu="1")).obj(),
            "FlavorNotFound",
            "Can't admit new workloads: references missing ResourceFlavor(s): missing.",
            id="flavor not found",
        ),
        pytest.param(
            make_cq("cq").group(fq("one", cpu="1")).stop("Hold").obj(),
            "Stopped",
            "Can't admit new workloads: is stopped.",
            id="stopped",
        ),
        pytest.param(
            make_cq("cq").group(fq("missing", cpu="1")).stop("HoldAndDrain").obj(),
            "Stopped",
            "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): missing.",
            id="stopped and flavor missing",
        ),
    ],
)
def test_cluster_queue_active_condition(cq: dict, reason: str, message: str) -> None:
    core = make_core(ONE, cq, LQ, make_wl("wl").request(cpu="1").obj())
    (cond,) = core.cluster_queue_status("cq")["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True" if reason == "Ready" else "False",
        reason,
        message,
    )
    assert bool(admitted_names(core)) == (reason == "Ready")


def test_local_queue_stopped() -> None:
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="1")).obj(),
        make_lq("lq", "ns", "cq", stop="Hold"),
        make_wl("wl").request(cpu="1").obj(),
    )
    assert admitted_names(core) == []
    st = core.local_queue_status("ns", "lq")
    assert st["conditions"][0]["reason"] == "Stopped" and st["conditions"][0]["message"] == "LocalQueue is stopped"
    core.on_local_queue(make_lq("lq", "ns", "cq"), T0)
    assert admitted_names(core) == ["wl"]


def test_namespace_selector() -> None:
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="1")).selector({"matchLabels": {"team": "a"}}).obj(),
        LQ,
        make_wl("wl").request(cpu="1").obj(),
    )
    (d,) = core.schedule(T0).decisions
    assert isinstance(d, Pending)
    assert (d.reason, d.message) == ("Misconfigured", "workload namespace doesn't match ClusterQueue selector")
    core.on_namespace("ns", {"team": "a"}, T0)
    assert admitted_names(core) == ["wl"]


def test_nil_selector_matches_nothing() -> None:
    core = make_core(
        ONE, make_cq("cq").group(fq("one", cpu="1")).selector(None).obj(), LQ, make_wl("wl").request(cpu="1").obj()
    )
    assert admitted_names(core, cycles=2) == []


def test_cluster_queue_status_usage() -> None:
    core = make_core(
        ONE,
        make_cq("cq").cohort("co").group(fq("one", cpu="2", memory="1Gi")).obj(),
        make_cq("other").cohort("co").group(fq("one", cpu="4", memory="1Gi")).obj(),
        LQ,
        make_wl("a").request(cpu="3").reserve("cq", psa(cpu=("one", "3"))).obj(),
        make_wl("b").request(cpu="500m").reserve("cq", psa(cpu=("one", "500m")), admitted=False).obj(),
        make_wl("c").request(cpu="9").obj(),
    )
    st = core.cluster_queue_status("cq")
    assert st["flavorsReservation"] == [
        {
            "name": "one",
            "resources": [
                {"name": "cpu", "total": "3500m", "borrowed": "1500m"},
                {"name": "memory", "total": "0", "borrowed": "0"},
            ],
        }
    ]
    assert st["flavorsUsage"][0]["resources"][0] == {"name": "cpu", "total": "3", "borrowed": "1"}
    assert (st["pendingWorkloads"], st["reservingWorkloads"], st["admittedWorkloads"]) == (1, 2, 1)


@pytest.mark.parametrize(
    ("weight", "share"),
    [
        pytest.param("1", 200, id="weight 1"),
        pytest.param("2", 100, id="weight 2"),
        pytest.param("0", 2**63 - 1, id="weight 0 borrowing"),
    ],
)
def test_weighted_share(weight: str, share: int) -> None:
    core = make_core(
        ONE,
        make_cq("cq").cohort("co").group(fq("one", cpu="5")).weight(weight).obj(),
        make_cq("other").cohort("co").group(fq("one", cpu="5")).obj(),
        LQ,
        make_wl("a").request(cpu="7").reserve("cq", psa(cpu=("one", "7"))).obj(),
        fair_sharing=True,
    )
    assert core.cluster_queue_status("cq")["fairSharing"] == {"weightedShare": share}
    assert core.cluster_queue_status("other")["fairSharing"] == {"weightedShare": 0}


def test_fair_sharing_tournament_prefers_lower_share() -> None:
    objs = [
        ONE,
        make_cq("a").cohort("co").group(fq("one", cpu="2")).obj(),
        make_cq("b").cohort("co").group(fq("one", cpu="2")).obj(),
        make_cq("c").cohort("co").group(fq("one", cpu="2")).obj(),
        make_lq("lq-a", "ns", "a"),
        make_lq("lq-b", "ns", "b"),
        make_wl("a-run").queue("lq-a").request(cpu="3").reserve("a", psa(cpu=("one", "3"))).obj(),
        make_wl("a-new").queue("lq-a").priority(100).request(cpu="2").obj(),
        make_wl("b-new").queue("lq-b").created(9).request(cpu="2").obj(),
    ]
    r = make_core(*objs, fair_sharing=True).schedule(T0)
    assert [d.key for d in r.admitted] == ["ns/b-new"]


def test_admit_flips_previous_eviction() -> None:
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="1")).obj(),
        LQ,
        make_wl("wl")
        .request(cpu="1")
        .condition("Evicted", "True", "Preempted", "went away")
        .condition("Preempted", "True", "InClusterQueue", "went away")
        .obj(),
    )
    (d,) = core.schedule(T0).decisions
    assert isinstance(d, Admit)
    assert [(c.type, c.status, c.reason, c.message) for c in d.conditions] == [
        ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        ("Evicted", "False", "QuotaReserved", "Previously: went away"),
        ("Preempted", "False", "QuotaReserved", "Previously: went away"),
        ("Admitted", "True", "Admitted", "The workload is admitted"),
    ]


def test_admission_failure_requeues() -> None:
    core = make_core(ONE, make_cq("cq").group(fq("one", cpu="1")).obj(), LQ, make_wl("wl").request(cpu="1").obj())
    (d,) = core.schedule(T0).admitted
    core.admission_failed(d.key, T0)
    assert core.cache.reserving == {}
    assert [x.key for x in core.schedule(T0).admitted] == ["ns/wl"]


def test_exported_members() -> None:
    public = {n for n in dir(webhook.core) if not n.startswith("_") and n not in {"annotations"}}
    modules = {n for n in public if isinstance(getattr(webhook.core, n), type(webhook.core))}
    assert set(webhook.core.__all__) == public - modules


def test_core_is_pure() -> None:
    root = pathlib.Path(webhook.core.__file__).parent
    banned = re.compile(
        r"\b(time\.time|datetime\.now|datetime\.utcnow|asyncio|random|kubernetes|starlette|uvicorn|open\()"
    )
    for path in root.glob("*.py"):
        assert not banned.search(path.read_text()), path


def _wpc(name: str, value: int) -> dict[str, object]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _with_wpc(b, name: str, value: int | None):  # type: ignore[no-untyped-def]
    o = b.obj()
    o["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}
    if value is None:
        o["spec"].pop("priority", None)
    else:
        o["spec"]["priority"] = value
    return o


def test_priority_class_value_change_waits_for_the_workload_update() -> None:
    """Upstream's WPC controller rewrites spec.priority; the core only follows Workload updates."""
    cq = make_cq("cq").group(fq("one", cpu="1")).obj()
    low = _with_wpc(make_wl("low").created(1).request(cpu="1"), "p", 1)
    core = make_core(ONE, cq, LQ, _wpc("p", 1), low, make_wl("other").created(2).priority(5).request(cpu="1").obj())
    core.on_priority_class(_wpc("p", 10))
    assert core.queues.pending[WorkloadKey("ns/low")].priority == 1
    core.on_workload(_with_wpc(make_wl("low").created(1).request(cpu="1"), "p", 10), T0)  # the controller's write
    assert admitted_names(core) == ["low"]


def test_priority_without_spec_priority_is_zero() -> None:
    """`priority.Priority`: nil spec.priority is 0, whatever the class's value."""
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="1")).obj(),
        LQ,
        _wpc("p", 100),
        _with_wpc(make_wl("ref").created(1).request(cpu="1"), "p", None),
        make_wl("other").created(2).priority(1).request(cpu="1").obj(),
    )
    assert core.queues.pending[WorkloadKey("ns/ref")].priority == 0
    assert admitted_names(core) == ["other"]


def test_batched_requeue_waits_for_the_batch_period() -> None:
    """With `requeue_batch_s` (the worker's 1 s, upstream's `requeueBatchPeriod`), freed quota
    requeues the tree's inadmissible Workloads only at the first cycle one period after the first
    request; later requests meanwhile fold into it."""
    running = [make_wl(f"run{i}").request(cpu="1").reserve("cq", psa(cpu=("one", "1"))).obj() for i in (1, 2)]
    core = make_core(
        ONE,
        make_cq("cq").cohort("co").group(fq("one", cpu="2")).obj(),
        LQ,
        *running,
        make_wl("wl").request(cpu="2").obj(),
        requeue_batch_s=1.0,
    )
    core.schedule(T0 + timedelta(seconds=1))  # whatever the set-up requested is done now
    assert admitted_names(core) == [] and core.queues.pending_in_cluster_queue("cq") == (0, 1)
    core.on_workload(make_wl("run1").request(cpu="1").reserve("cq", psa(cpu=("one", "1"))).finished().obj(), T0)
    core.on_workload(
        make_wl("run2").request(cpu="1").reserve("cq", psa(cpu=("one", "1"))).finished().obj(),
        T0 + timedelta(milliseconds=500),
    )
    assert core.next_requeue_at() == T0 + timedelta(seconds=1)
    assert [d.key for d in core.schedule(T0 + timedelta(milliseconds=999)).admitted] == []
    assert core.queues.pending_in_cluster_queue("cq") == (0, 1)
    assert [d.key for d in core.schedule(T0 + timedelta(seconds=1)).admitted] == ["ns/wl"]
    assert core.next_requeue_at() is None


def _active(core: Any) -> tuple[str, str, str]:
    (cond,) = core.cluster_queue_status("cq")["conditions"]
    return cond["status"], cond["reason"], cond["message"]


def test_topology_flavor_without_its_topology_makes_the_queue_inactive() -> None:
    """`inactiveReason` (pkg/cache/scheduler/clusterqueue.go): TopologyNotFound until the Topology exists."""
    tas_flavors = (make_flavor("tas-b").topology("zones").obj(), make_flavor("tas-a").topology("racks").obj())
    cq = make_cq("cq").group(fq("tas-b", cpu="1"), fq("tas-a", cpu="1")).obj()
    core = make_core(*tas_flavors, cq, LQ)
    assert _active(core) == (
        "False",
        "TopologyNotFound",
        'Can\'t admit new workloads: there is no Topology "racks" for TAS flavor "tas-a", there is no Topology '
        '"zones" for TAS flavor "tas-b".',
    )
    core.on_topology(make_topology("racks", "cloud.com/rack"), T0)
    core.on_topology(make_topology("zones", "cloud.com/zone"), T0)
    assert _active(core) == ("True", "Ready", "Can admit new workloads")
    core.on_topology_deleted("zones", T0)
    assert _active(core)[1] == "TopologyNotFound"


def test_topology_not_found_only_with_the_gate() -> None:
    core = make_core(
        make_flavor("tas").topology("racks").obj(), make_cq("cq").group(fq("tas", cpu="1")).obj(), LQ, tas=False
    )
    assert _active(core)[1] == "Ready"


def test_topology_not_found_is_skipped_with_a_multikueue_check() -> None:
    """The topology lives on the worker clusters (`isTASViolated`)."""
    cq = make_cq("cq").group(fq("tas", cpu="1")).obj()
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "mk"}]}
    core = make_core(make_flavor("tas").topology("racks").obj(), cq, LQ)
    core.on_admission_check("mk", True, T0, "example.com/other")
    assert _active(core)[1] == "TopologyNotFound"
    core.on_admission_check("mk", True, T0, "kueue.x-k8s.io/multikueue")
    assert _active(core)[1] == "Ready"
