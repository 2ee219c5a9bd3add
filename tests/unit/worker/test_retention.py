"""objectRetentionPolicies.workloads.afterFinished: when a finished Workload is due, and what its deletion does."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.unit.fake_kube import FakeKube
from webhook.worker import events
from webhook.worker import retention as r
from webhook.worker.store import Store

PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl"


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def workload(
    finished_at: datetime | None, *, status: str = "True", finalizers: tuple[str, ...] = (), deleting: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "wl", "namespace": "ns", "uid": "u1", "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = stamp(datetime.now(UTC))
    conds = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "m",
            "lastTransitionTime": stamp(datetime.now(UTC)),
        }
    ]
    if finished_at is not None:
        conds.append(
            {
                "type": "Finished",
                "status": status,
                "reason": "Succeeded",
                "message": "done",
                "lastTransitionTime": stamp(finished_at),
            }
        )
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {"queueName": "lq"},
        "status": {"conditions": conds},
    }


class Events(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.sent: list[tuple[str, str, str, str, str]] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        self.sent.append((obj["metadata"]["name"], etype, reason, note, controller))


class World:
    def __init__(self, wl: dict[str, Any], after_s: float) -> None:
        self.kube = FakeKube({PATH: wl})
        self.store = Store()
        self.store.put("workloads", copy.deepcopy(self.kube.objects[PATH]))
        self.events = Events()
        self.stop = threading.Event()
        self.ret = r.WorkloadRetention(self.kube, self.store, self.events, after_finished_s=after_s, stop=self.stop)

    def writes(self) -> list[tuple[str, str]]:
        return [call for call in self.kube.calls if call[0] != "GET"]


def test_deletion_is_due_after_finished_plus_the_retention() -> None:
    t = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert r.deletion_due(workload(t), 90) == t + timedelta(seconds=90)
    assert r.deletion_due(workload(t), 0) == t


def test_only_a_finished_true_workload_is_ever_due() -> None:
    t = datetime(2025, 1, 2, tzinfo=UTC)
    assert r.deletion_due(workload(None), 0) is None
    assert r.deletion_due(workload(t, status="False"), 0) is None


def test_workload_past_its_retention_loses_the_finalizer_then_is_deleted_with_an_event() -> None:
    w = World(
        workload(datetime.now(UTC) - timedelta(seconds=10), finalizers=("kueue.x-k8s.io/resource-in-use",)), after_s=5
    )
    w.ret.reconcile("ns/wl")
    assert w.writes() == [("PATCH", PATH), ("DELETE", PATH)]
    assert PATH not in w.kube.objects
    assert w.events.sent == [
        ("wl", "Normal", "Deleted", "Deleted finished workload due to elapsed retention", "kueue-workload-controller")
    ]


def test_workload_within_its_retention_is_kept() -> None:
    w = World(workload(datetime.now(UTC) - timedelta(seconds=10)), after_s=3600)
    w.ret.reconcile("ns/wl")
    assert w.writes() == [] and PATH in w.kube.objects and w.events.sent == []


def test_unfinished_workload_is_kept_whatever_the_retention() -> None:
    w = World(workload(None), after_s=0)
    w.ret.reconcile("ns/wl")
    w.ret.on_event("workloads", "MODIFIED", w.store.get("workloads", "ns/wl") or {})
    assert w.writes() == [] and w.events.sent == []


def test_workload_already_being_deleted_only_loses_the_finalizer() -> None:
    w = World(
        workload(
            datetime.now(UTC) - timedelta(seconds=10),
            finalizers=("kueue.x-k8s.io/resource-in-use", "other/keep"),
            deleting=True,
        ),
        after_s=0,
    )
    w.ret.reconcile("ns/wl")
    assert w.writes() == [("PATCH", PATH)]
    assert w.kube.objects[PATH]["metadata"]["finalizers"] == ["other/keep"]
    assert w.events.sent == []


def test_finished_workload_is_deleted_when_its_deadline_comes() -> None:
    finished = datetime.now(UTC).replace(microsecond=0)
    w = World(workload(finished), after_s=1.5)
    w.ret.start()
    try:
        w.ret.on_event("workloads", "ADDED", w.store.get("workloads", "ns/wl") or {})
        assert PATH in w.kube.objects  # not before its time
        deadline = time.monotonic() + 10
        while PATH in w.kube.objects and time.monotonic() < deadline:
            time.sleep(0.05)
        assert PATH not in w.kube.objects
        assert datetime.now(UTC) >= finished + timedelta(seconds=1.5)
    finally:
        w.stop.set()


def test_a_deleted_workload_is_forgotten_before_its_deadline() -> None:
    w = World(workload(datetime.now(UTC)), after_s=0.5)
    w.ret.start()
    try:
        wl = w.store.get("workloads", "ns/wl") or {}
        w.ret.on_event("workloads", "ADDED", wl)
        w.store.delete("workloads", "ns/wl", wl)  # deleted by someone else: the watch's DELETED
        w.ret.on_event("workloads", "DELETED", wl)
        time.sleep(2.0)
        assert w.writes() == []
    finally:
        w.stop.set()
