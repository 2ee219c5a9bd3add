"""SchedulingEquivalenceHashing: the scheduling hash of a Workload and the queue's bulk moves.

Ported from upstream v0.19.2 `pkg/workload/workload_test.go` (`TestSchedulingHash`) and
`pkg/cache/queue/cluster_queue_test.go` (`TestRecordInadmissibleHash`,
`TestPushOrUpdateRespectsInadmissibleHashes`, `TestQueueInadmissibleWorkloadsClearsHashes`,
`TestRequeueHashTriggerByReason`), driven through the core and its QueueManager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core.conditions import RequeueReason
from webhook.core.queues import QueueManager
from webhook.core.workload import WorkloadKey, parse_workload

ONE = make_flavor("one").obj()
LQ = make_lq("lq", "ns", "cq")


def _hash(obj: dict[str, Any]) -> str:
    return parse_workload(obj).scheduling_hash


@pytest.mark.parametrize(
    ("wl1", "wl2", "same"),
    [
        pytest.param(
            make_wl("wl1", "ns1").request(cpu="2", memory="1Gi").obj(),
            make_wl("wl2", "ns2").queue("other").created(9).request(cpu="2", memory="1Gi").obj(),
            True,
            id="same spec, different identity, queue and creation",
        ),
        pytest.param(
            make_wl("wl1").request(cpu="1").obj(),
            make_wl("wl2").request(cpu="2").obj(),
            False,
            id="different resource requests",
        ),
        pytest.param(
            make_wl("wl1").podset("main", 3, cpu="1").obj(),
            make_wl("wl2").podset("main", 5, cpu="1").obj(),
            False,
            id="different pod counts",
        ),
        pytest.param(
            make_wl("wl1").priority(100).request(cpu="1").obj(),
            make_wl("wl2").priority(200).request(cpu="1").obj(),
            False,
            id="different priorities",
        ),
        pytest.param(
            make_wl("wl1")
            .request(cpu="1")
            .annotation("kueue.x-k8s.io/workload-allowed-resource-flavors", "flavor1")
            .obj(),
            make_wl("wl2")
            .request(cpu="1")
            .annotation("kueue.x-k8s.io/workload-allowed-resource-flavors", "flavor2")
            .obj(),
            False,
            id="different allowed flavors",
        ),
        pytest.param(
            make_wl("wl1").request(cpu="1").node_selector(zone="a").obj(),
            make_wl("wl2").request(cpu="1").node_selector(zone="b").obj(),
            False,
            id="different nodeSelector",
        ),
    ],
)
def test_scheduling_hash(wl1: dict[str, Any], wl2: dict[str, Any], same: bool) -> None:
    h1, h2 = _hash(wl1), _hash(wl2)
    assert len(h1) == 16 and len(h2) == 16
    assert (h1 == h2) is same


def test_reclaimable_pods_change_the_hash() -> None:
    """The effective count (count less reclaimable pods) is part of the shape."""
    wl = make_wl("wl").podset("main", 3, cpu="1").obj()
    reclaimed = make_wl("wl").podset("main", 3, cpu="1").obj()
    reclaimed["status"]["reclaimablePods"] = [{"name": "main", "count": 1}]
    assert _hash(wl) != _hash(reclaimed)
    assert _hash(reclaimed) == _hash(make_wl("other").podset("main", 2, cpu="1").obj())


def _full_core(strategy: str = "BestEffortFIFO", **config: Any) -> Any:
    """A ClusterQueue whose 2 CPUs are held, three equivalent pending Workloads and a different one."""
    running = make_wl("running").request(cpu="2").reserve("cq", psa(cpu=("one", "2"))).obj()
    return make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="2")).strategy(strategy).obj(),
        LQ,
        running,
        *(make_wl(f"a{i}").created(i).request(cpu="1").obj() for i in (1, 2, 3)),
        make_wl("b").created(4).request(cpu="1", memory="1").obj(),
        **config,
    )


def test_no_fit_bulk_moves_the_equivalence_class() -> None:
    core = _full_core()
    assert core.schedule(T0).admitted == []  # a1 is the head, NoFit
    assert core.queues.dump() == {"cq": ["ns/b"]}
    assert core.queues.dump_inadmissible() == {"cq": ["ns/a1", "ns/a2", "ns/a3"]}
    # A new Workload of that class goes straight to inadmissible; one of another class to the heap.
    core.on_workload(make_wl("a4").created(5).request(cpu="1").obj(), T0)
    core.on_workload(make_wl("c").created(6).request(cpu="1", memory="2").obj(), T0)
    assert core.queues.pending_in_cluster_queue("cq") == (2, 4)
    # Quota freed: the requeue clears the moved classes and everything goes back to the heap.
    core.on_workload(make_wl("running").request(cpu="2").reserve("cq", psa(cpu=("one", "2"))).finished().obj(), T0)
    assert core.queues.pending_in_cluster_queue("cq") == (6, 0)
    assert [d.key for d in core.schedule(T0).admitted] == ["ns/a1"]
    core.on_workload(make_wl("a5").created(7).request(cpu="1").obj(), T0)
    assert "ns/a5" in core.queues.dump()["cq"]


def test_deleting_a_pending_workload_forgets_its_class() -> None:
    """`WorkloadReconciler.Delete` requeues the deleted Workload's ClusterQueue whatever its state
    (`QueueAssociatedInadmissibleWorkloadsAfter`): a Workload made again under the same name and spec
    (MultiKueue's copy on a worker, re-dispatched) is evaluated, not parked by its class."""
    core = _full_core()
    core.schedule(T0)
    assert core.queues.dump_inadmissible() == {"cq": ["ns/a1", "ns/a2", "ns/a3"]}
    core.on_workload_deleted("ns", "a1", T0)
    core.on_workload(make_wl("a1").created(8).request(cpu="1").obj(), T0)
    assert "ns/a1" in core.queues.dump()["cq"]


def _finished() -> dict[str, Any]:
    return make_wl("a1").request(cpu="1").finished().obj()


def _deactivated() -> dict[str, Any]:
    obj = make_wl("a1").request(cpu="1").obj()
    obj["spec"]["active"] = False
    return obj


@pytest.mark.parametrize("leaving", [_finished, _deactivated])
def test_a_pending_workload_leaving_the_queue_forgets_its_class(leaving: Callable[[], dict[str, Any]]) -> None:
    """`WorkloadReconciler.Update` requeues the ClusterQueue of a Workload that finishes or is
    deactivated: MultiKueue's pending copy on a worker, finished once the manager removed its Job and
    then made again under the same name and spec, is evaluated, not parked without a status."""
    core = _full_core()
    core.schedule(T0)
    assert core.queues.dump_inadmissible() == {"cq": ["ns/a1", "ns/a2", "ns/a3"]}
    core.on_workload(leaving(), T0)
    core.on_workload_deleted("ns", "a1", T0)
    core.on_workload(make_wl("a1").created(8).request(cpu="1").obj(), T0)
    assert "ns/a1" in core.queues.dump()["cq"]


@pytest.mark.parametrize(
    ("strategy", "config"),
    [
        pytest.param("StrictFIFO", {}, id="StrictFIFO keeps strict order"),
        pytest.param("BestEffortFIFO", {"equivalence_hashing": False}, id="gate off"),
    ],
)
def test_no_bulk_move(strategy: str, config: dict[str, Any]) -> None:
    core = _full_core(strategy, **config)
    core.schedule(T0)
    active, inadmissible = core.queues.pending_in_cluster_queue("cq")
    assert (active, inadmissible) == ((4, 0) if strategy == "StrictFIFO" else (3, 1))


@pytest.mark.parametrize(
    ("reason", "moved"),
    [
        (RequeueReason.NO_FIT, True),
        (RequeueReason.PREEMPTION_NO_CANDIDATES, True),
        (RequeueReason.NAMESPACE_MISMATCH, False),
        (RequeueReason.PREEMPTION_GATED, False),
        (RequeueReason.GENERIC, False),
    ],
)
def test_requeue_reason_decides_the_bulk_move(reason: RequeueReason, moved: bool) -> None:
    core = make_core(ONE, make_cq("cq").group(fq("one", cpu="2")).obj(), LQ)
    queues: QueueManager = core.queues
    for i in (1, 2):
        queues.upsert_workload(parse_workload(make_wl(f"w{i}").created(i).request(cpu="1").obj()), T0)
    (head,) = queues.heads(T0)
    queues.requeue(head.workload.key, "cq", reason, T0)
    assert (WorkloadKey("ns/w2") in queues.dump_inadmissible().get("cq", [])) is moved
    assert (head.workload.scheduling_hash in queues.cluster_queues["cq"].bulk_moved) is moved
