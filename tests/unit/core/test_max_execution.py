"""spec.maximumExecutionTimeSeconds (`core.max_execution`, and its place in `workload_step`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.builders import T0, make_wl, psa
from webhook.core import admission_checks as ac
from webhook.core.max_execution import execution_deadline, max_execution_step
from webhook.core.pods_ready import Policy, StepKind, WorkloadStep
from webhook.core.workload import parse_workload


def admitted(limit: int | None, *, past: int | None = None, at: float = 0, admitted: bool = True) -> dict[str, Any]:
    wl = make_wl("wl").queue("lq").request(cpu="1").reserve("cq", psa(cpu=("a", "1")), admitted=admitted, at=at).obj()
    if limit is not None:
        wl["spec"]["maximumExecutionTimeSeconds"] = limit
    if past is not None:
        wl["status"]["accumulatedPastExecutionTimeSeconds"] = past
    return wl


def step(obj: dict[str, Any], after_s: float) -> WorkloadStep:
    return max_execution_step(obj, parse_workload(obj), T0 + timedelta(seconds=after_s))


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(admitted(None), None, id="no limit"),
        pytest.param(admitted(60, admitted=False), None, id="quota reserved but not admitted"),
        pytest.param(admitted(60, at=10), T0 + timedelta(seconds=70), id="counts from the Admitted transition"),
        pytest.param(admitted(60, past=50, at=10), T0 + timedelta(seconds=20), id="earlier admissions count"),
    ],
)
def test_execution_deadline(obj: dict[str, Any], want: object) -> None:
    assert execution_deadline(obj, parse_workload(obj)) == want


def test_before_the_deadline_it_looks_again_at_the_deadline() -> None:
    assert step(admitted(60), 59) == WorkloadStep(StepKind.RECHECK, recheck_at=T0 + timedelta(seconds=60))


@pytest.mark.parametrize("after_s", [60, 61, 3600], ids=["at the deadline", "just past", "long past"])
def test_at_the_deadline_the_workload_becomes_a_deactivation_target(after_s: float) -> None:
    got = step(admitted(60, past=10), after_s)
    assert got.kind == StepKind.MAX_EXECUTION_EXCEEDED
    assert [(c.type, c.status, c.reason, c.message) for c in got.conditions] == [
        ("DeactivationTarget", "True", "MaximumExecutionTimeExceeded", "exceeding the maximum execution time")
    ]
    assert (got.reason, got.event) == ("MaximumExecutionTimeExceeded", "The maximum execution time (60s) exceeded")


def test_an_inactive_workload_still_holding_quota_is_not_marked_again() -> None:
    """Evicted as deactivated, its Job not yet stopped: Admitted is still True (upstream marks it
    again here, and the stale target then undoes a later reactivation)."""
    wl = admitted(5)
    wl["spec"]["active"] = False
    wl["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "DeactivatedDueToMaximumExecutionTimeExceeded", "message": "m"}
    )
    assert ac.workload_step(wl, None, None, T0 + timedelta(seconds=60)) == WorkloadStep(StepKind.NONE)


def test_an_existing_deactivation_target_is_left_alone() -> None:
    wl = admitted(60)
    wl["status"]["conditions"].append(
        {"type": "DeactivationTarget", "status": "True", "reason": "AdmissionCheck", "message": "m"}
    )
    assert step(wl, 120) == WorkloadStep(StepKind.NONE)


# == in the workload controller's order ==========================================================
def test_workload_step_deactivates_an_admitted_workload_past_its_limit() -> None:
    got = ac.workload_step(admitted(5), None, None, T0 + timedelta(seconds=5))
    assert got.kind == StepKind.MAX_EXECUTION_EXCEEDED


def test_the_deactivation_target_then_sets_spec_active_false_and_evicts_with_the_cause() -> None:
    wl = admitted(5)
    wl["status"]["conditions"].append(
        {
            "type": "DeactivationTarget",
            "status": "True",
            "reason": "MaximumExecutionTimeExceeded",
            "message": "exceeding the maximum execution time",
        }
    )
    assert ac.workload_step(wl, None, None, T0 + timedelta(seconds=6)).kind == StepKind.SET_INACTIVE
    wl["spec"]["active"] = False
    evict = ac.workload_step(wl, None, None, T0 + timedelta(seconds=6))
    assert evict.kind == StepKind.EVICT
    assert [(c.type, c.status, c.reason, c.message) for c in evict.conditions] == [
        (
            "Evicted",
            "True",
            "DeactivatedDueToMaximumExecutionTimeExceeded",
            "The workload is deactivated due to exceeding the maximum execution time",
        )
    ]
    assert evict.remove_conditions == ("DeactivationTarget",)
    assert (evict.reason, evict.underlying_cause, evict.event_reason) == (
        "Deactivated",
        "MaximumExecutionTimeExceeded",
        "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded",
    )


def test_the_earlier_of_the_pods_ready_and_execution_deadlines_is_looked_at() -> None:
    wl = admitted(100)
    wl["status"]["conditions"].append(
        {"type": "PodsReady", "status": "False", "reason": "WaitForStart", "message": "m", "lastTransitionTime": None}
    )
    soon, late = Policy(timeout=timedelta(seconds=30)), Policy(timeout=timedelta(seconds=300))
    assert ac.workload_step(wl, None, soon, T0 + timedelta(seconds=1)).recheck_at == T0 + timedelta(seconds=30)
    assert ac.workload_step(wl, None, late, T0 + timedelta(seconds=1)).recheck_at == T0 + timedelta(seconds=100)
    assert ac.workload_step(wl, None, None, T0 + timedelta(seconds=1)).recheck_at == T0 + timedelta(seconds=100)


def test_a_workload_without_quota_is_not_timed() -> None:
    wl = make_wl("wl").queue("lq").request(cpu="1").obj()
    wl["spec"]["maximumExecutionTimeSeconds"] = 1
    assert ac.workload_step(wl, None, None, T0 + timedelta(days=1)) == WorkloadStep(StepKind.NONE)
