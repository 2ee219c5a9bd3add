"""The TAS topology ungater and node failure controller as the Manager drives them: which watch
events queue what, expectations across reconciles, and what an eviction for node failures reports.
Upstream's scenarios are in the `*_upstream.py` ports beside this file."""

from __future__ import annotations

import threading
from typing import Any

from tests.unit.fake_kube import FakeKube
from tests.unit.worker.reconcilers.tas_builders import (
    BLOCK,
    HOSTNAME,
    LEVELS,
    MAIN,
    NOW,
    PODSET,
    RACK,
    WL_ANN,
    S,
    make_admission,
    make_node,
    make_pod,
    make_pod_set,
    make_pod_set_assignment,
    make_topology_assignment,
    make_topology_domain_assignment,
    make_workload,
    ts,
)
from webhook import kube as k
from webhook.worker import events, workload_writes
from webhook.worker.reconcilers import tas_node_failure as tnf
from webhook.worker.reconcilers import topology_ungater as tu
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
DEFAULT_GATES = tnf.Gates()


def _workload(levels: list[str], domains: list[tuple[list[str], int]], *, admitted: bool = True) -> dict[str, Any]:
    count = sum(c for _, c in domains)
    ta = make_topology_assignment(levels).domains(*(make_topology_domain_assignment(v, c).obj() for v, c in domains))
    psa = make_pod_set_assignment(MAIN).assignment("cpu", "rf", str(count)).count(count).topology_assignment(ta.obj())
    wl = (
        make_workload("wl", "ns")
        .pod_sets(make_pod_set(MAIN, count).request("cpu", "1").obj())
        .reserve_quota_at(make_admission("cq").pod_sets(psa.obj()).obj(), NOW)
    )
    return wl.admitted_at(admitted, NOW).obj()


def _pod(name: str, *, gated: bool = True) -> dict[str, Any]:
    p = make_pod(name, "ns").uid(f"uid-{name}").annotation(WL_ANN, "wl").annotation(UNCONSTRAINED, "true")
    p = p.label(PODSET, MAIN)
    return (p.topology_scheduling_gate() if gated else p).obj()


def _pod_path(name: str) -> str:
    return k.object_path("v1", "pods", "ns", name)


def _ungater(wl: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[tu.TopologyUngater, FakeKube]:
    kube, store = FakeKube(), Store()
    kube.put(workload_writes.path(wl), wl)
    store.put("workloads", kube.get(workload_writes.path(wl)) or {})
    for pod in pods:
        kube.put(_pod_path(pod["metadata"]["name"]), pod)
    stop = threading.Event()
    stop.set()  # no worker threads: the tests call reconcile themselves
    ungater = tu.TopologyUngater(kube, store, k.SharedInformers(kube, stop), stop=stop, clock=lambda: NOW)
    ungater.on_pod_list([kube.get(_pod_path(p["metadata"]["name"])) or {} for p in pods])
    return ungater, kube


def _patches(kube: FakeKube) -> list[str]:
    return [path for verb, path in kube.calls if verb == "PATCH"]


def test_a_pod_is_not_given_a_second_domain_before_its_first_ungating_is_seen() -> None:
    wl = _workload(LEVELS, [(["b1", "r1"], 1), (["b1", "r2"], 1)])
    ungater, kube = _ungater(wl, [_pod("p1"), _pod("p2")])
    ungater.reconcile("ns/wl")
    assert len(_patches(kube)) == 2
    try:
        ungater.reconcile("ns/wl")  # the watch has not shown the ungated pods yet
        raise AssertionError("a reconcile with unobserved ungates must be retried")
    except Retry as exc:
        assert "pending ungate operations" in str(exc)
    for name in ("p1", "p2"):
        ungater.on_pod_event("MODIFIED", kube.get(_pod_path(name)) or {})
    ungater.reconcile("ns/wl")
    assert len(_patches(kube)) == 2
    selectors = sorted(
        tuple(sorted((kube.get(_pod_path(n)) or {})["spec"]["nodeSelector"].items())) for n in ("p1", "p2")
    )
    assert selectors == [((BLOCK, "b1"), (RACK, "r1")), ((BLOCK, "b1"), (RACK, "r2"))]


def test_a_pod_deleted_before_its_ungating_was_seen_counts_as_observed() -> None:
    wl = _workload(LEVELS, [(["b1", "r1"], 1)])
    ungater, kube = _ungater(wl, [_pod("p1")])
    ungater.reconcile("ns/wl")
    gone = kube.objects.pop(_pod_path("p1"))
    ungater.on_pod_event("DELETED", gone)
    ungater.reconcile("ns/wl")  # not retried: nothing is pending
    assert len(_patches(kube)) == 1


def test_the_ungate_keeps_other_gates_and_node_selectors() -> None:
    pod = _pod("p1")
    pod["spec"]["schedulingGates"].append({"name": "example.com/other"})
    pod["spec"]["nodeSelector"] = {"pool": "a"}
    ungater, kube = _ungater(_workload([HOSTNAME], [(["node-1"], 1)]), [pod])
    ungater.reconcile("ns/wl")
    spec = (kube.get(_pod_path("p1")) or {})["spec"]
    assert spec["schedulingGates"] == [{"name": "example.com/other"}]
    assert spec["nodeSelector"] == {"pool": "a", HOSTNAME: "node-1"}


def test_only_workloads_admitted_by_tas_are_queued() -> None:
    ungater, _ = _ungater(_workload(LEVELS, [(["b1", "r1"], 1)]), [])
    queued: list[str] = []
    ungater.queue.add = lambda key, item=None, *, first=False: queued.append(key)  # type: ignore[method-assign]
    ungater.on_event("workloads", "MODIFIED", _workload(LEVELS, [(["b1", "r1"], 1)], admitted=False), None)
    plain = make_workload("plain", "ns").reserve_quota_at(make_admission("cq").obj(), NOW).admitted_at(True, NOW).obj()
    ungater.on_event("workloads", "MODIFIED", plain, None)
    ungater.on_event("workloads", "MODIFIED", _workload(LEVELS, [(["b1", "r1"], 1)]), None)
    assert queued == ["ns/wl"]


def test_tas_pod_events_queue_their_workload_one_batch_period_later() -> None:
    ungater, _ = _ungater(_workload(LEVELS, [(["b1", "r1"], 1)]), [])
    later: list[tuple[str, float]] = []
    ungater.queue.add_after = lambda key, delay, items=(): later.append((key, delay))  # type: ignore[method-assign]
    ungater.on_pod_event("ADDED", _pod("p1"))
    not_tas = _pod("p2")
    del not_tas["metadata"]["annotations"][UNCONSTRAINED]
    ungater.on_pod_event("ADDED", not_tas)
    assert later == [("ns/wl", tu.UPDATES_BATCH_S)]


# == the node failure controller ===================================================================


class Events(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.seen: list[tuple[str, str, str]] = []

    def emit(self, obj: Any, etype: str, reason: str, note: str, controller: str, *, action: str = "") -> None:
        self.seen.append((etype, reason, note))


def _ready(name: str, status: str = "True", **spec: Any) -> dict[str, Any]:
    node = make_node(name).status_conditions(S(type="Ready", status=status, last_transition_time=NOW)).obj()
    node["spec"].update(spec)
    return node


def _controller(
    objs: list[dict[str, Any]], gates: tnf.Gates = DEFAULT_GATES
) -> tuple[tnf.NodeFailureController, FakeKube, Events, list[tuple[str, str, str]]]:
    kube, store = FakeKube(), Store()
    for wl in objs:
        kube.put(workload_writes.path(wl), wl)
        store.put("workloads", kube.get(workload_writes.path(wl)) or {})
    stop = threading.Event()
    stop.set()
    evicted: list[tuple[str, str, str]] = []
    rec = Events()
    ctl = tnf.NodeFailureController(
        kube,
        store,
        k.SharedInformers(kube, stop),
        rec,
        stop=stop,
        gates=gates,
        on_evicted=lambda key, cq, reason, wl: evicted.append((key, cq, reason)),
        clock=lambda: NOW,
    )
    for wl in store.list("workloads"):
        ctl.on_event("workloads", "ADDED", wl, None)
    return ctl, kube, rec, evicted


def test_node_updates_queue_the_node_only_when_readiness_or_taints_change() -> None:
    ctl, _, _, _ = _controller([])
    queued: list[str] = []
    ctl.queue.add = lambda key, item=None, *, first=False: queued.append(key)  # type: ignore[method-assign]
    ctl.on_node_list([_ready("n1")])
    heartbeat = _ready("n1")
    heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = ts(NOW)
    ctl.on_node_event("MODIFIED", heartbeat)
    ctl.on_node_event("MODIFIED", _ready("n1", "Unknown"))
    ctl.on_node_event("MODIFIED", _ready("n1", "Unknown", taints=[{"key": "k", "effect": "NoExecute"}]))
    ctl.on_node_event("DELETED", _ready("n1", "Unknown"))
    assert queued == ["n1", "n1", "n1", "n1"]

    untainted, _, _, _ = _controller([], tnf.Gates(replace_on_node_taints=False))
    queued.clear()
    untainted.queue.add = lambda key, item=None, *, first=False: queued.append(key)  # type: ignore[method-assign]
    untainted.on_node_list([_ready("n1")])
    untainted.on_node_event("MODIFIED", _ready("n1", taints=[{"key": "k", "effect": "NoExecute"}]))
    assert queued == ["n1"]


def test_pods_left_pending_on_a_node_or_stopping_there_queue_the_node() -> None:
    ctl, _, _, _ = _controller([])
    later: list[tuple[str, float]] = []
    ctl.queue.add_after = lambda key, delay, items=(): later.append((key, delay))  # type: ignore[method-assign]
    pending = _pod("p1", gated=False)
    pending["spec"]["nodeSelector"] = {HOSTNAME: "n1"}
    failed = _pod("p2", gated=False)
    failed["spec"]["nodeName"] = "n2"
    failed["status"] = {"phase": "Failed"}
    running = _pod("p3", gated=False)
    running["spec"]["nodeName"] = "n3"
    for pod in (pending, failed, running):
        ctl.on_pod_event("MODIFIED", pod)
    assert later == [("n1", tnf.RECONCILE_BATCH_S), ("n2", tnf.RECONCILE_BATCH_S)]


def test_a_second_failed_node_evicts_the_workload_with_an_event() -> None:
    wl = _workload([HOSTNAME], [(["n1"], 1), (["n2"], 1)])
    wl["status"]["unhealthyNodes"] = [{"name": "n1"}]
    ctl, kube, rec, evicted = _controller([wl])
    ctl.on_node_list([])  # both nodes are gone
    ctl.reconcile("n2")
    got = kube.get(workload_writes.path(wl)) or {}
    cond = next(c for c in got["status"]["conditions"] if c["type"] == "Evicted")
    message = tnf.MULTIPLE_FAILURES.format("n1, n2")
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "NodeFailures", message)
    assert "unhealthyNodes" not in got["status"]
    assert got["status"]["schedulingStats"]["evictions"] == [
        {"reason": "NodeFailures", "underlyingCause": "", "count": 1}
    ]
    assert rec.seen == [("Normal", "EvictedDueToNodeFailures", message)]
    assert evicted == [("ns/wl", "cq", "NodeFailures")]


def test_workload_events_keep_the_workloads_per_node() -> None:
    """A Workload is looked at for the nodes of its current assignment only, while not evicted."""
    wl = _workload([HOSTNAME], [(["n1"], 1)])
    ctl, kube, _, _ = _controller([wl])
    moved = _workload([HOSTNAME], [(["n2"], 1)])
    ctl.on_event("workloads", "MODIFIED", moved, None)
    ctl.on_node_list([])
    ctl.reconcile("n1")  # gone, but no longer used by the Workload
    assert "unhealthyNodes" not in (kube.get(workload_writes.path(wl)) or {})["status"]
    ctl.reconcile("n2")
    assert (kube.get(workload_writes.path(wl)) or {})["status"]["unhealthyNodes"] == [{"name": "n2"}]


def test_a_recovered_node_leaves_unhealthy_nodes() -> None:
    wl = _workload([HOSTNAME], [(["n1"], 1)])
    wl["status"]["unhealthyNodes"] = [{"name": "n1"}]
    ctl, kube, _, _ = _controller([wl])
    ctl.on_node_list([_ready("n1")])
    ctl.reconcile("n1")
    assert "unhealthyNodes" not in (kube.get(workload_writes.path(wl)) or {})["status"]


def test_a_notready_node_is_marked_once_the_workloads_pod_there_is_gone() -> None:
    wl = _workload([HOSTNAME], [(["n1"], 1)])
    ctl, kube, _, _ = _controller([wl])
    running = _pod("p1", gated=False)
    running["spec"]["nodeName"] = "n1"
    running["status"] = {"phase": "Running"}
    ctl.on_node_list([_ready("n1", "False")])
    ctl.on_pod_list([running])
    ctl.reconcile("n1")
    assert "unhealthyNodes" not in (kube.get(workload_writes.path(wl)) or {})["status"]
    ctl.on_pod_event("DELETED", running)
    ctl.reconcile("n1")
    assert (kube.get(workload_writes.path(wl)) or {})["status"]["unhealthyNodes"] == [{"name": "n1"}]
