"""The error of past wait estimates: first and latest estimate per workload, scored at admission."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.builders import T0
from webhook.core.estimate_accuracy import Accuracy, EstimateLog, Scored, percentile
from webhook.core.wait_estimate import Estimate
from webhook.core.workload import WorkloadKey

A, B, C = WorkloadKey("ns/a"), WorkloadKey("ns/b"), WorkloadKey("ns/c")


def at(seconds: float) -> Estimate:
    return Estimate(T0 + timedelta(seconds=seconds))


@pytest.mark.parametrize(
    ("values", "q", "want"),
    [
        pytest.param([], 50, None, id="none"),
        pytest.param([7.0], 90, 7.0, id="one"),
        pytest.param([5.0, 1.0, 3.0, 2.0, 4.0], 50, 3.0, id="median of five"),
        pytest.param([float(i) for i in range(1, 11)], 90, 9.0, id="nearest rank p90 of ten"),
    ],
)
def test_percentile(values: list[float], q: float, want: float | None) -> None:
    assert percentile(values, q) == want


def test_first_and_latest_estimates_are_scored_at_admission() -> None:
    log = EstimateLog()
    log.record({A: at(100), B: Estimate(None, "no basis")})
    log.record({A: at(160), B: at(300)})  # later refreshes move the latest only
    assert log.first(A) == at(100)
    assert log.admitted(A, "cq", T0 + timedelta(seconds=150)) == Scored("cq", 50.0, -10.0)
    assert log.admitted(B, "cq", T0 + timedelta(seconds=330)) == Scored("cq", None, 30.0)
    assert log.admitted(C, "cq", T0) is None  # never estimated (e.g. waiting before a restart)
    assert log.admitted(A, "cq", T0) is None  # scored once
    assert log.accuracy("cq") == Accuracy(2, 1, 50.0, 50.0, 10.0, 30.0)
    assert log.accuracy("other") == Accuracy(0, 0, None, None, None, None)


def test_a_forgotten_workload_is_not_scored_and_history_is_bounded() -> None:
    log = EstimateLog(keep=2)
    log.record({A: at(0)})
    log.forget(A)
    assert log.admitted(A, "cq", T0) is None
    for i, key in enumerate([A, B, C]):
        log.record({key: at(0)})
        log.admitted(key, "cq", T0 + timedelta(seconds=10 * (i + 1)))
    assert log.accuracy("cq") == Accuracy(2, 0, 20.0, 30.0, 20.0, 30.0)
