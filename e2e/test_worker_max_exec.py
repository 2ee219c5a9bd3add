"""spec.maximumExecutionTimeSeconds end to end: a Job labelled `kueue.x-k8s.io/max-exec-time-seconds`
is deactivated once it has run that long, with upstream's conditions and events, and suspended
(`reconcileMaxExecutionTime` in `pkg/controller/core/workload_controller.go`)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from e2e.conftest import Kubectl
from e2e.helpers import cond, create, gpu_job, wait_for, when, workloads

pytestmark = pytest.mark.local_stack

LIMIT_S = 4
SLACK_S = 10  # reconcile, deactivate, evict and suspend once the limit is reached


def workload_of(kubectl: Kubectl, ns: str, job: str) -> dict[str, Any] | None:
    return next((w for w in workloads(kubectl, ns) if w["metadata"]["ownerReferences"][0]["name"] == job), None)


def brief(c: dict[str, Any]) -> tuple[str, str, str]:
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


@pytest.mark.usefixtures("quota")
def test_job_running_past_its_maximum_execution_time_is_deactivated_and_suspended(
    kubectl: Kubectl, namespace: str
) -> None:
    job = gpu_job(namespace, name="timed", run_for="1h")
    job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = str(LIMIT_S)
    create(kubectl, job)
    wl = wait_for(
        "admission",
        lambda: when(
            workload_of(kubectl, namespace, "timed") or {}, lambda w: cond(w, "Admitted").get("status") == "True"
        ),
    )
    admitted_at = time.monotonic()
    assert wl["spec"]["maximumExecutionTimeSeconds"] == LIMIT_S
    name = wl["metadata"]["name"]

    def get() -> dict[str, Any]:
        return kubectl.get("workload", "-n", namespace, name)

    evicted = wait_for(
        "the deactivation",
        lambda: when(get(), lambda w: cond(w, "Evicted").get("status") == "True"),
        timeout=LIMIT_S + SLACK_S,
    )
    took = time.monotonic() - admitted_at
    assert took >= LIMIT_S - 1, f"deactivated {took:.1f}s after admission, before its {LIMIT_S}s"
    assert brief(cond(evicted, "Evicted")) == (
        "True",
        "DeactivatedDueToMaximumExecutionTimeExceeded",
        "The workload is deactivated due to exceeding the maximum execution time",
    )
    assert evicted["spec"]["active"] is False
    assert not cond(evicted, "DeactivationTarget")
    assert evicted["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded", "count": 1}
    ]
    wait_for(
        "the Job to be suspended",
        lambda: kubectl.get("job", "-n", namespace, "timed")["spec"]["suspend"] is True,
        timeout=SLACK_S,
    )
    wait_for(
        "the quota to be released",
        lambda: when(get(), lambda w: cond(w, "QuotaReserved").get("status") == "False"),
        timeout=SLACK_S,
    )
    notes = {
        e["reason"]: e.get("note") or e.get("message")
        for e in kubectl.get("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}")["items"]
    }
    assert notes["MaximumExecutionTimeExceeded"] == f"The maximum execution time ({LIMIT_S}s) exceeded"
    assert (
        notes["EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded"]
        == "The workload is deactivated due to exceeding the maximum execution time"
    )
    print(f"admission to eviction: {took:.1f}s")
