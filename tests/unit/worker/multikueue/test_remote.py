"""A worker cluster's client, watches and connection (`webhook.worker.multikueue.remote`), against a
watchable fake API: only our origin's objects are followed, nothing is delivered before every kind
has listed, a failed list fails the attempt with backoff, a dropped watch reports the loss."""

from __future__ import annotations

import threading
from typing import Any

from tests.unit.worker.multikueue_fixtures import WORKLOADS, WatchableKube, kubeconfig, wait_for
from webhook import kube as k
from webhook.api import constants as c
from webhook.api import multikueue as mk
from webhook.worker.admissionchecks.multikueue.kubeconfig import ClientConfig, parse_kubeconfig
from webhook.worker.multikueue.remote import RemoteCluster, WatchedKind

ALL_WORKLOADS = k.object_path(c.V1BETA2, "workloads", None)


def _wl(name: str, origin: str | None) -> dict[str, Any]:
    labels = {mk.ORIGIN_LABEL: origin} if origin else {}
    return {
        "apiVersion": c.V1BETA2,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
    }


def _config(server: str = "https://worker1.example:6443") -> ClientConfig:
    doc = parse_kubeconfig(kubeconfig(server).encode())
    assert not isinstance(doc, str)
    return ClientConfig(doc)


class Harness:
    def __init__(self, worker: WatchableKube) -> None:
        self.worker = worker
        self.keys: list[str] = []
        self.lost: list[str] = []
        self.lock = threading.Lock()
        self.remote = RemoteCluster(
            "worker1",
            build=lambda doc: worker,  # type: ignore[arg-type, return-value]
            origin="multikueue",
            kinds=[WatchedKind(ALL_WORKLOADS, lambda obj: [f"ns/{obj['metadata']['name']}"])],
            on_keys=lambda cluster, keys: self.keys.extend(keys),
            on_lost=self.lost.append,
        )


def test_only_our_origins_objects_are_delivered_once_connected() -> None:
    worker = WatchableKube()
    worker.put(f"{WORKLOADS}/ours", _wl("ours", "multikueue"))
    worker.put(f"{WORKLOADS}/other-manager", _wl("other-manager", "elsewhere"))
    worker.put(f"{WORKLOADS}/local", _wl("local", None))
    h = Harness(worker)
    try:
        assert h.remote.client is None  # a new client starts disconnected
        assert h.remote.update(_config()) == (None, None)
        assert h.remote.client is not None and h.remote.client.kube is worker and h.remote.state.connected
        assert h.keys == ["ns/ours"]
        worker.put(f"{WORKLOADS}/later", _wl("later", "multikueue"))
        worker.put(f"{WORKLOADS}/local2", _wl("local2", None))
        assert wait_for(lambda: h.keys == ["ns/ours", "ns/later"])
    finally:
        h.remote.stop()


def test_a_failed_list_fails_the_attempt_and_backs_off() -> None:
    worker = WatchableKube()
    worker.go_down()
    h = Harness(worker)
    requeue, error = h.remote.update(_config())
    assert requeue == 5.0 and error is not None and "connection refused" in error
    assert h.remote.client is None and h.lost == []  # never connected: nothing was lost
    worker.down = False
    lists = len(worker.calls)
    wait, error = h.remote.update(_config())  # within the backoff: no attempt
    assert error is None and wait is not None and 0 < wait <= 5.0
    assert len(worker.calls) == lists and not h.remote.state.connected


def test_a_dropped_watch_reports_the_loss_once_and_a_new_config_reconnects_at_once() -> None:
    worker = WatchableKube()
    h = Harness(worker)
    try:
        h.remote.update(_config())
        assert wait_for(lambda: ("WATCH", ALL_WORKLOADS) in worker.calls)
        worker.go_down()
        assert wait_for(lambda: h.lost == ["worker1"])
        assert h.remote.client is None and h.remote.state.lost_since is not None
        worker.down = False
        assert h.remote.update(_config("https://worker1.example:7443")) == (None, None)  # changed: no backoff
        assert h.remote.state.connected and h.lost == ["worker1"]
    finally:
        h.remote.stop()
