"""The worker feeds Nodes and non-TAS pods to topology-aware admission (issue 31; upstream's
`pkg/controller/tas/{node_controller,non_tas_usage_controller}.go` and the TAS cache)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast

from tests.builders import T0, fq, make_cq, make_flavor, make_lq, make_topology, make_wl
from tests.unit.core.test_tas_admission import HOST, RACK, TOPOLOGY, node, pod
from tests.unit.fake_kube import FakeKube
from webhook import config
from webhook import kube as k
from webhook.core import Admit, Pending
from webhook.worker.manager import Manager

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
NODES_PATH, PODS_PATH = "/api/v1/nodes", "/api/v1/pods"


class Informers:
    """Records subscriptions; a test plays the API server through their handlers."""

    def __init__(self) -> None:
        self.subs: dict[str, tuple[Callable[..., None], Callable[..., None], dict[str, Any] | None]] = {}

    def subscribe(self, path: str, on_list: Any, on_event: Any, **kw: Any) -> None:
        self.subs[path] = (on_list, on_event, kw.get("query"))
        kw.get("on_synced", lambda: None)()


def manager() -> tuple[Manager, Informers]:
    informers = Informers()
    mgr = Manager(
        FakeKube(),
        config.parse(V2),
        identity="test",
        stop=threading.Event(),
        informers=cast(k.SharedInformers, informers),
    )
    return mgr, informers


def feed(mgr: Manager, kind: str, obj: dict[str, Any]) -> None:
    mgr._feed(kind, "ADDED", obj, T0)
    pump(mgr)


def pump(mgr: Manager) -> None:
    for m in mgr._drain(0):
        mgr._apply(m, T0)


def queues(mgr: Manager, flavor: dict[str, Any]) -> None:
    mgr.core.on_namespace("ns", {}, T0)
    feed(mgr, "topologies", TOPOLOGY)
    feed(mgr, "resourceflavors", flavor)
    feed(mgr, "clusterqueues", make_cq("cq").group(fq(flavor["metadata"]["name"], cpu="8")).obj())
    feed(mgr, "localqueues", make_lq("lq", "ns", "cq"))


def rack_workload(pods: int) -> dict[str, Any]:
    return make_wl("wl").queue("lq").podset("main", pods, cpu="1").topology(required=RACK).obj()


def test_nodes_and_pods_are_read_only_once_a_flavor_names_a_topology() -> None:
    mgr, informers = manager()
    queues(mgr, make_flavor("plain").obj())
    assert NODES_PATH not in informers.subs and PODS_PATH not in informers.subs
    feed(mgr, "resourceflavors", make_flavor("tas").topology("default").obj())
    assert informers.subs[NODES_PATH][2] is None
    assert informers.subs[PODS_PATH][2] == {
        "fieldSelector": "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
    }


def test_listed_nodes_and_pods_decide_the_placement() -> None:
    mgr, informers = manager()
    queues(mgr, make_flavor("tas").topology("default").obj())
    nodes_list, _, _ = informers.subs[NODES_PATH]
    pods_list, pods_event, _ = informers.subs[PODS_PATH]
    nodes_list([node("x1", "b1", "r1"), node("x2", "b1", "r1"), node("x3", "b1", "r2")])
    pods_list([pod("busy", "x1", "1")])
    pump(mgr)
    mgr.core.on_workload(rack_workload(2), T0)
    (d,) = [d for d in mgr.core.schedule(T0).decisions if isinstance(d, (Admit, Pending))]
    assert isinstance(d, Pending)
    assert d.message == (
        'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 1 out of 2 pod(s). '
        'Total nodes: 3; excluded: resource "cpu": 1'
    )

    # The busy pod leaves the field selector when it finishes: the watch says DELETED.
    pods_event("DELETED", pod("busy", "x1", "1", phase="Succeeded"))
    pump(mgr)
    # The freed node requeues the inadmissible Workload after the batch period.
    later = T0 + timedelta(seconds=2)
    (d,) = [d for d in mgr.core.schedule(later).decisions if isinstance(d, (Admit, Pending))]
    assert isinstance(d, Admit)
    ta = d.admission["podSetAssignments"][0]["topologyAssignment"]
    assert ta["levels"] == [HOST]
    assert ta["slices"][0]["valuesPerLevel"][0]["individual"]["roots"] == ["1", "2"]


def test_a_relist_forgets_nodes_that_are_gone() -> None:
    mgr, informers = manager()
    queues(mgr, make_flavor("tas").topology("default").obj())
    nodes_list, _, _ = informers.subs[NODES_PATH]
    nodes_list([node("x1", "b1", "r1"), node("x2", "b1", "r1")])
    nodes_list([node("x1", "b1", "r1")])
    pump(mgr)
    mgr.core.on_workload(rack_workload(2), T0)
    (d,) = [d for d in mgr.core.schedule(T0).decisions if isinstance(d, (Admit, Pending))]
    assert isinstance(d, Pending)
    assert "allows to fit only 1 out of 2 pod(s)" in d.message


def test_topology_levels_come_from_the_topology_object() -> None:
    mgr, informers = manager()
    queues(mgr, make_flavor("tas").topology("default").obj())
    feed(mgr, "topologies", make_topology("default", HOST))
    nodes_list, _, _ = informers.subs[NODES_PATH]
    nodes_list([node("x1", "b1", "r1")])
    pump(mgr)
    mgr.core.on_workload(rack_workload(1), T0)
    (d,) = [d for d in mgr.core.schedule(T0).decisions if isinstance(d, (Admit, Pending))]
    assert isinstance(d, Pending)
    assert d.message == 'couldn\'t assign flavors to pod set main: Flavor "tas" does not contain the requested level'
