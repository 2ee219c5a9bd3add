"""FailureRecoveryPolicy: pods stuck terminating on an unreachable node are force-deleted
(`reconcilers.failure_recovery`, upstream `pod_termination_controller.go`)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.builders import T0, ts
from tests.unit.fake_kube import FakeKube
from webhook.config import Configuration
from webhook.worker import events
from webhook.worker.reconcilers import failure_recovery as fr

POD_PATH = "/api/v1/namespaces/ns/pods/p"
ANNOTATION = "kueue.x-k8s.io/safe-to-forcefully-delete"
MESSAGE = (
    "Pod forcefully terminated after {grace} grace period due to unreachable node `n1` "
    "(triggered by `kueue.x-k8s.io/safe-to-forcefully-delete` annotation)"
)


def pod(
    *,
    annotated: str | None = "true",
    deleting_at: float | None = 0,
    grace_s: int | None = None,
    phase: str = "Running",
    node: str = "n1",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "pod-uid"}
    if annotated is not None:
        meta["annotations"] = {ANNOTATION: annotated}
    if deleting_at is not None:
        meta["deletionTimestamp"] = ts(deleting_at)
    if grace_s is not None:
        meta["deletionGracePeriodSeconds"] = grace_s
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "False"}]},
    }


def node(name: str = "n1", *, unreachable: bool = True) -> dict[str, Any]:
    taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}] if unreachable else []
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints}}


# == the decision ================================================================================
@pytest.mark.parametrize(
    ("p", "n", "after_s", "want"),
    [
        pytest.param(pod(annotated=None), node(), 120, None, id="not opted in"),
        pytest.param(pod(annotated="yes"), node(), 120, None, id="annotation not 'true'"),
        pytest.param(pod(deleting_at=None), node(), 120, None, id="not being deleted"),
        pytest.param(pod(), node(), 59, fr.Recheck(T0 + timedelta(seconds=60)), id="within the grace period"),
        pytest.param(pod(), node(unreachable=False), 60, None, id="node reachable"),
        pytest.param(pod(), None, 60, None, id="node unknown"),
        pytest.param(pod(), node(), 60, fr.ForceDelete(MESSAGE.format(grace="1m0s"), fail=True), id="grace over"),
        pytest.param(
            pod(grace_s=30),
            node(),
            60,
            fr.ForceDelete(MESSAGE.format(grace="1m30s"), fail=True),
            id="the pod's own grace period counts, in seconds",
        ),
        pytest.param(
            pod(phase="Succeeded"),
            node(),
            60,
            fr.ForceDelete(MESSAGE.format(grace="1m0s"), fail=False),
            id="a terminated pod keeps its phase",
        ),
    ],
)
def test_plan(p: dict[str, Any], n: dict[str, Any] | None, after_s: float, want: object) -> None:
    assert fr.plan(p, n, T0 + timedelta(seconds=after_s)) == want


@pytest.mark.parametrize(("seconds", "want"), [(0, "0s"), (45, "45s"), (60, "1m0s"), (90, "1m30s"), (3605, "1h0m5s")])
def test_go_duration(seconds: int, want: str) -> None:
    assert fr.go_duration(seconds) == want


# == the controller ==============================================================================
class Events(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.seen: list[tuple[str, str, str, str, str]] = []

    def emit(self, obj: Any, etype: str, reason: str, note: str, controller: str, *, action: str = "") -> None:
        self.seen.append((etype, reason, action, note, controller))


def controller(p: dict[str, Any]) -> tuple[fr.FailureRecovery, FakeKube, Events]:
    kube = FakeKube({POD_PATH: p})
    rec = Events()
    ctl = fr.FailureRecovery(kube, rec, stop=threading.Event())
    return ctl, kube, rec


def test_a_pod_stuck_on_an_unreachable_node_is_failed_and_force_deleted() -> None:
    ctl, kube, rec = controller(pod(deleting_at=-120, grace_s=30))
    queued: list[str] = []
    ctl.queue.add = lambda key, item=None, *, first=False: queued.append(key)  # type: ignore[method-assign]
    ctl.on_node_list([node()])
    ctl.on_pod_event("MODIFIED", kube.objects[POD_PATH])
    assert queued == ["ns/p"]
    patched: list[dict[str, Any]] = []
    deleted: list[dict[str, Any]] = []
    real = kube.request

    def request(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if method == "PATCH":
            patched.append(kwargs["body"])
        if method == "DELETE":
            deleted.append(kwargs["body"])
        return real(method, path, **kwargs)

    kube.request = request  # type: ignore[method-assign]
    ctl.reconcile("ns/p")
    message = MESSAGE.format(grace="1m30s")
    assert patched[0]["status"] == {
        "phase": "Failed",
        "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "KueueFailureRecovery", "status": "True", "reason": "KueueForcefullyDeleted", "message": message},
        ],
    }
    assert rec.seen == [
        ("Warning", "KueueForcefullyDeleted", "ForcefulTermination", message, "kueue-pod-termination-controller")
    ]
    assert deleted == [{"gracePeriodSeconds": 0, "preconditions": {"uid": "pod-uid"}}]
    assert POD_PATH not in kube.objects


def test_a_pod_on_a_reachable_node_is_left_until_the_node_becomes_unreachable() -> None:
    ctl, kube, rec = controller(pod(deleting_at=-120))
    queued: list[str] = []
    ctl.queue.add = lambda key, item=None, *, first=False: queued.append(key)  # type: ignore[method-assign]
    ctl.on_node_list([node(unreachable=False), node("n2")])
    ctl.on_pod_list([kube.objects[POD_PATH]])
    ctl.reconcile("ns/p")
    assert [c for c in kube.calls if c[0] != "GET"] == [] and rec.seen == []
    queued.clear()
    ctl.on_node_event("MODIFIED", node("n2"))  # another node, unreachable all along
    ctl.on_node_event("MODIFIED", node(unreachable=False))
    assert queued == []
    ctl.on_node_event("MODIFIED", node())
    assert queued == ["ns/p"]
    ctl.reconcile("ns/p")
    assert POD_PATH not in kube.objects


def test_before_the_grace_period_is_over_the_pod_is_looked_at_again() -> None:
    p = pod()
    p["metadata"]["deletionTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ctl, kube, _ = controller(p)
    later: list[tuple[str, float]] = []
    ctl.queue.add_after = lambda key, delay, items=(): later.append((key, delay))  # type: ignore[method-assign]
    ctl.on_node_list([node()])
    ctl.on_pod_event("MODIFIED", p)
    ctl.reconcile("ns/p")
    [(key, delay)] = later
    assert key == "ns/p" and 58 <= delay <= 61
    assert [c for c in kube.calls if c[0] != "GET"] == []


def test_updates_of_an_eligible_pod_queue_nothing_more() -> None:
    """Only turning eligible queues the pod (upstream's predicate), so our own status patch does not
    bring it back."""
    ctl, _, _ = controller(pod())
    queued: list[str] = []
    ctl.queue.add = lambda key, item=None, *, first=False: queued.append(key)  # type: ignore[method-assign]
    ctl.on_pod_event("ADDED", pod(deleting_at=None))
    ctl.on_pod_event("MODIFIED", pod())
    ctl.on_pod_event("MODIFIED", pod())
    assert queued == ["ns/p"]


def test_the_manager_runs_it_only_with_the_gate_on() -> None:
    from webhook.worker.manager import Manager

    off = Manager(FakeKube(), Configuration(), identity="t", stop=threading.Event())
    on = Manager(
        FakeKube(),
        Configuration(feature_gates={"FailureRecoveryPolicy": True}),
        identity="t",
        stop=threading.Event(),
    )
    assert off.failure_recovery is None
    assert isinstance(on.failure_recovery, fr.FailureRecovery)
