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
    def replace(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        self.calls.append(("PUT", path))
        raise k.Conflict(409, "the object has been modified")


def test_conflicts_are_retried_after_a_growing_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    kube = AlwaysConflicting({PATH: {"metadata": {"name": "w", "namespace": "ns"}}})
    slept: list[float] = []
    monkeypatch.setattr(status.time, "sleep", slept.append)

    def mutate(st: dict[str, Any], _: Any) -> None:
        st["x"] = 1

    with pytest.raises(k.Conflict):
        status.update_status(kube, Store(), "workloads", PATH, mutate)
    assert [c for c in kube.calls if c[0] == "PUT"] == [("PUT", PATH + "/status")] * 5
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
