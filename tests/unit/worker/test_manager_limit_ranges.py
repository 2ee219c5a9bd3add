"""The worker watches LimitRanges and RuntimeClasses and re-feeds the Workloads they change
(issue 27, finding 8; upstream's `resourceUpdatesHandler` in `workload_controller.go`)."""

from __future__ import annotations

import threading
from typing import Any

from tests.builders import T0, limit_range, make_wl, psa, runtime_class
from tests.unit.fake_kube import FakeKube
from webhook.config import Configuration
from webhook.core.workload import WorkloadKey
from webhook.worker.manager import RESOURCES, Manager


def manager(*workloads: dict[str, Any]) -> Manager:
    mgr = Manager(FakeKube(), Configuration(), identity="test", stop=threading.Event())
    for wl in workloads:
        mgr.store.put("workloads", wl)
        mgr._feed("workloads", "ADDED", wl, T0)
    return mgr


def requests(mgr: Manager, key: str) -> dict[str, int]:
    wl = mgr.core.queues.pending.get(WorkloadKey(key)) or mgr.core.cache.reserving[WorkloadKey(key)]
    return dict(wl.pod_sets[0].requests)


def test_both_kinds_are_watched():
    assert {("limitranges", "v1"), ("runtimeclasses", "node.k8s.io/v1")} <= {(r.kind, r.api_version) for r in RESOURCES}


def test_a_limit_range_re_adjusts_the_pending_workloads_of_its_namespace():
    pending = make_wl("pending", "ns").request().obj()
    elsewhere = make_wl("elsewhere", "other").request().obj()
    reserved = make_wl("reserved", "ns").request().reserve("cq", psa()).obj()
    mgr = manager(pending, elsewhere, reserved)
    assert requests(mgr, "ns/pending") == {}

    lr = limit_range("defaults", "ns", defaultRequest={"cpu": "1"})
    mgr._feed("limitranges", "ADDED", lr, T0)
    assert requests(mgr, "ns/pending") == {"cpu": 1000}
    assert requests(mgr, "other/elsewhere") == {}
    assert requests(mgr, "ns/reserved") == {}, "quota already reserved is what status.admission says"

    mgr._feed("limitranges", "DELETED", lr, T0)
    assert requests(mgr, "ns/pending") == {}


def test_a_runtime_class_re_adjusts_the_workloads_naming_it():
    kata = make_wl("kata", "ns").request().obj()
    kata["spec"]["podSets"][0]["template"]["spec"]["runtimeClassName"] = "kata"
    plain = make_wl("plain", "ns").request().obj()
    mgr = manager(kata, plain)
    mgr._feed("runtimeclasses", "ADDED", runtime_class("kata", {"cpu": "250m"}), T0)
    assert requests(mgr, "ns/kata") == {"cpu": 250}
    assert requests(mgr, "ns/plain") == {}
