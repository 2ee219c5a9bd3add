"""stopPolicy on reserving and pending workloads (after upstream workload_controller_{eviction,requeue}_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core import AdmissionCore, Admit, Evict, QueueBlocked, Requeue, UnsetReservation, WorkloadKey

ONE = make_flavor("one").obj()


def cq(stop: str | None = None) -> dict[str, Any]:
    b = make_cq("cq").group(fq("one", cpu="4"))
    return (b.stop(stop) if stop else b).obj()


def lq(stop: str | None = None) -> dict[str, Any]:
    return make_lq("lq", "ns", "cq", stop=stop)


ADMITTED = make_wl("admitted").request(cpu="1").reserve("cq", psa(cpu=("one", "1"))).obj()
RESERVED = make_wl("reserved").request(cpu="1").reserve("cq", psa(cpu=("one", "1")), admitted=False).obj()
PENDING = make_wl("pending").request(cpu="1").obj()
EVICTED = make_wl("evicted").request(cpu="1").reserve("cq", psa(cpu=("one", "1"))).evicted().obj()


def summary(core: AdmissionCore) -> list[tuple[str, str, str, str]]:
    return [
        (type(d).__name__, d.key.split("/")[1], d.reason, d.message)
        for d in core.schedule(T0).decisions
        if not isinstance(d, Admit)
    ]


@pytest.mark.parametrize(
    ("objs", "want"),
    [
        pytest.param(
            [cq("HoldAndDrain"), lq()],
            [
                ("Evict", "admitted", "ClusterQueueStopped", "The ClusterQueue is stopped"),
                ("QueueBlocked", "pending", "Inadmissible", "ClusterQueue cq is inactive"),
                ("UnsetReservation", "reserved", "Inadmissible", "ClusterQueue cq is stopped"),
            ],
            id="ClusterQueue HoldAndDrain evicts admitted, unreserves the rest",
        ),
        pytest.param(
            [cq("Hold"), lq()],
            [
                ("QueueBlocked", "pending", "Inadmissible", "ClusterQueue cq is inactive"),
                ("UnsetReservation", "reserved", "Inadmissible", "ClusterQueue cq is stopped"),
            ],
            id="ClusterQueue Hold keeps admitted workloads",
        ),
        pytest.param(
            [cq(), lq("HoldAndDrain")],
            [
                ("Evict", "admitted", "LocalQueueStopped", "The LocalQueue is stopped"),
                ("QueueBlocked", "pending", "Inadmissible", "LocalQueue lq is inactive"),
                ("UnsetReservation", "reserved", "Inadmissible", "LocalQueue lq is stopped"),
            ],
            id="LocalQueue HoldAndDrain evicts admitted, unreserves the rest",
        ),
        pytest.param(
            [cq(), lq("Hold")],
            [
                ("QueueBlocked", "pending", "Inadmissible", "LocalQueue lq is inactive"),
                ("UnsetReservation", "reserved", "Inadmissible", "LocalQueue lq is stopped"),
            ],
            id="LocalQueue Hold keeps admitted workloads",
        ),
        pytest.param(
            [cq("HoldAndDrain"), lq("HoldAndDrain")],
            [
                ("Evict", "admitted", "LocalQueueStopped", "The LocalQueue is stopped"),
                ("QueueBlocked", "pending", "Inadmissible", "LocalQueue lq is inactive"),
                ("UnsetReservation", "reserved", "Inadmissible", "LocalQueue lq is stopped"),
            ],
            id="LocalQueue is checked before the ClusterQueue",
        ),
        pytest.param(
            [cq("HoldAndDrain"), lq("Hold")],
            [
                ("QueueBlocked", "pending", "Inadmissible", "LocalQueue lq is inactive"),
                ("UnsetReservation", "reserved", "Inadmissible", "LocalQueue lq is stopped"),
            ],
            id="a stopped LocalQueue routes to no ClusterQueue, so HoldAndDrain there does not evict",
        ),
        pytest.param([cq(), lq()], [], id="running queues need nothing"),
    ],
)
def test_stop_policy(objs: list[dict[str, Any]], want: list[tuple[str, str, str, str]]) -> None:
    core = make_core(ONE, *objs, ADMITTED, RESERVED, PENDING, EVICTED)
    assert summary(core) == want
    assert summary(core) == [], "each decision is reported once per event"


def test_decision_conditions() -> None:
    core = make_core(ONE, cq("HoldAndDrain"), lq(), ADMITTED, RESERVED, PENDING)
    res = core.schedule(T0)
    (ev,) = res.evicted
    assert isinstance(ev, Evict) and ev.cluster_queue == "cq"
    assert [(c.type, c.status, c.reason, c.message) for c in ev.conditions] == [
        ("Evicted", "True", "ClusterQueueStopped", "The ClusterQueue is stopped")
    ]
    (un,) = res.unreserved
    assert isinstance(un, UnsetReservation)
    assert [(c.type, c.status, c.reason, c.message) for c in un.conditions] == [
        ("QuotaReserved", "False", "Inadmissible", "ClusterQueue cq is stopped"),
        ("Admitted", "False", "NoReservation", "The workload has no reservation"),
    ]
    (bl,) = res.blocked
    assert isinstance(bl, QueueBlocked) and bl.conditions[0].message == "ClusterQueue cq is inactive"


def test_stopping_a_running_queue_later() -> None:
    core = make_core(ONE, cq(), lq(), ADMITTED)
    assert summary(core) == []
    core.on_cluster_queue(cq("HoldAndDrain"), T0)
    assert summary(core) == [("Evict", "admitted", "ClusterQueueStopped", "The ClusterQueue is stopped")]
    # The worker's Evicted patch lands: nothing more to do until the job stops.
    core.on_workload(
        make_wl("admitted").request(cpu="1").reserve("cq", psa(cpu=("one", "1"))).evicted("ClusterQueueStopped").obj(),
        T0,
    )
    assert summary(core) == []


def test_failed_write_is_retried() -> None:
    core = make_core(ONE, cq("HoldAndDrain"), lq(), ADMITTED)
    assert [d[0] for d in summary(core)] == ["Evict"]
    assert summary(core) == []
    core.write_failed(WorkloadKey("ns/admitted"))
    assert [d[0] for d in summary(core)] == ["Evict"]


def test_with_unadmitted_workloads_observability_the_reason_is_suspended() -> None:
    """Upstream's granular reason; with the gate off (the default) it is the legacy `Inadmissible`."""
    core = make_core(ONE, cq("Hold"), lq(), RESERVED, PENDING, granular_pending_reasons=True)
    assert summary(core) == [
        ("QueueBlocked", "pending", "Suspended", "ClusterQueue cq is inactive"),
        ("UnsetReservation", "reserved", "Suspended", "ClusterQueue cq is stopped"),
    ]


def test_blocked_status_is_not_rewritten() -> None:
    wl = (
        make_wl("pending")
        .request(cpu="1")
        .condition("QuotaReserved", "False", "Inadmissible", "LocalQueue lq is inactive")
        .obj()
    )
    core = make_core(ONE, cq(), lq("Hold"), wl)
    assert summary(core) == []


@pytest.mark.parametrize(
    ("reason", "stopped", "restarted", "want"),
    [
        pytest.param("ClusterQueueStopped", [cq("HoldAndDrain"), lq()], [cq()], ("ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped"),
                     id="ClusterQueue restarted"),
        pytest.param("LocalQueueStopped", [cq(), lq("HoldAndDrain")], [lq()], ("LocalQueueRestarted", "The LocalQueue was restarted after being stopped"),
                     id="LocalQueue restarted"),
    ],
)  # fmt: skip
def test_restart_requeues(
    reason: str, stopped: list[dict[str, Any]], restarted: list[dict[str, Any]], want: tuple[str, str]
) -> None:
    parked = make_wl("wl").request(cpu="1").condition("Requeued", "False", reason, "stopped")
    core = make_core(ONE, *stopped, parked.obj())
    assert [d[0] for d in summary(core)] == ["QueueBlocked"]
    for o in restarted:
        core.on_cluster_queue(o, T0) if o["kind"] == "ClusterQueue" else core.on_local_queue(o, T0)
    res = core.schedule(T0)
    (rq,) = res.requeued
    assert isinstance(rq, Requeue)
    assert [(c.type, c.status, c.reason, c.message) for c in rq.conditions] == [("Requeued", "True", *want)]
    assert res.admitted == [], "Requeued=False keeps the workload parked until the condition is written"
    core.on_workload(parked.condition("Requeued", "True", *want).obj(), T0)
    assert [d.key for d in core.schedule(T0).admitted] == ["ns/wl"]
