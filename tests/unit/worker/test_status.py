"""`webhook/worker/status.py`'s guarded status update: conflicts are retried after a backoff."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.worker import status
from webhook.worker.store import Store

PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w"


class AlwaysConflicting(FakeKube):
    def patch(self, path: str, body: Any, *, json_patch: bool = False, timeout: float = 30) -> dict[str, Any]:
        self.calls.append(("PATCH", path))
        raise k.Conflict(409, "the object has been modified")


class Recording(FakeKube):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.bodies: list[Any] = []

    def patch(self, path: str, body: Any, *, json_patch: bool = False, timeout: float = 30) -> dict[str, Any]:
        self.bodies.append(body)
        return super().patch(path, body, json_patch=json_patch, timeout=timeout)


def test_only_what_changed_is_sent_guarded_by_the_version_read() -> None:
    spec = {"podSets": [{"name": "main", "count": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}]}
    old = {
        "conditions": [{"type": "QuotaReserved", "status": "False"}],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]},
        "requeueState": {"count": 1},
    }
    kube = Recording({PATH: {"metadata": {"name": "w", "namespace": "ns"}, "spec": spec, "status": old}})
    rv = kube.objects[PATH]["metadata"]["resourceVersion"]

    def mutate(st: dict[str, Any], _: Any) -> None:
        st["conditions"][0]["status"] = "True"
        st["admission"]["clusterQueue"] = "other"
        del st["requeueState"]

    written = status.update_status(kube, Store(), "workloads", PATH, mutate)
    assert kube.bodies == [
        {
            "metadata": {"resourceVersion": rv},
            "status": {
                "conditions": [{"type": "QuotaReserved", "status": "True"}],  # a list goes whole
                "admission": {"clusterQueue": "other"},
                "requeueState": None,
            },
        }
    ]
    assert written is not None and written["spec"] == spec
    assert written["status"] == {
        "conditions": [{"type": "QuotaReserved", "status": "True"}],
        "admission": {"clusterQueue": "other", "podSetAssignments": [{"name": "main"}]},
    }


def test_a_stale_version_is_read_again_and_the_change_made_on_the_newest() -> None:
    kube = FakeKube({PATH: {"metadata": {"name": "w", "namespace": "ns"}, "status": {"a": 1}}})
    store = Store()
    store.put("workloads", kube.get(PATH) or {})
    newer = kube.get(PATH) or {}
    newer["status"]["b"] = 2  # someone else wrote since the store saw it
    kube.put(PATH, newer)

    def mutate(st: dict[str, Any], _: Any) -> None:
        st["c"] = 3

    written = status.update_status(kube, store, "workloads", PATH, mutate)
    assert written is not None and written["status"] == {"a": 1, "b": 2, "c": 3}
    assert [m for m, _ in kube.calls].count("PATCH") == 2  # the stale one conflicted


def test_conflicts_are_retried_after_a_growing_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    kube = AlwaysConflicting({PATH: {"metadata": {"name": "w", "namespace": "ns"}}})
    slept: list[float] = []
    monkeypatch.setattr(status.time, "sleep", slept.append)

    def mutate(st: dict[str, Any], _: Any) -> None:
        st["x"] = 1

    with pytest.raises(k.Conflict):
        status.update_status(kube, Store(), "workloads", PATH, mutate)
    assert [c for c in kube.calls if c[0] == "PATCH"] == [("PATCH", PATH + "/status")] * 5
    assert len(slept) == 4 and all(b >= a for a, b in itertools.pairwise(slept))
    assert 0.005 <= slept[0] <= 0.01 and slept[-1] <= 0.08


def test_evictions_are_counted_per_reason_and_underlying_cause() -> None:
    """`workloadEvictionStateInc`: one row per (reason, underlyingCause), the cause written even when
    empty (the field is required), and True only for the first eviction of its kind."""
    st: dict[str, Any] = {}
    assert status.count_eviction(st, "Preempted") is True
    assert status.count_eviction(st, "PodsReadyTimeout", "WaitForStart") is True
    assert status.count_eviction(st, "Preempted") is False
    assert status.count_eviction(st, "PodsReadyTimeout", "WaitForRecovery") is True
    assert st == {
        "schedulingStats": {
            "evictions": [
                {"reason": "Preempted", "underlyingCause": "", "count": 2},
                {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 1},
                {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForRecovery", "count": 1},
            ]
        }
    }


def test_a_row_written_without_its_cause_counts_as_the_empty_cause() -> None:
    st: dict[str, Any] = {"schedulingStats": {"evictions": [{"reason": "Preempted", "count": 3}]}}
    assert status.count_eviction(st, "Preempted") is False
    assert st["schedulingStats"]["evictions"] == [{"reason": "Preempted", "count": 4}]
