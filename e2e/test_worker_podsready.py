"""waitForPodsReady end to end: the PodsReady condition on Job Workloads, the not-ready timeout with
requeue backoff and deactivation, and blockAdmission.

The module restarts our server with a Configuration whose waitForPodsReady times out after a few
seconds and blocks admission, and restores the default Configuration afterwards. A pod that never
becomes ready is one whose node selector no kwok node satisfies: it stays Pending.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from e2e.conftest import Kubectl, server_configured
from e2e.helpers import cond, create, gpu_job, wait_for, when, workloads

pytestmark = pytest.mark.local_stack

TIMEOUT_S = 6  # short for the timeout test, long enough for the blockAdmission test to look before it
WAIT_FOR_PODS_READY = f"""\
waitForPodsReady:
  timeout: {TIMEOUT_S}s
  blockAdmission: true
  requeuingStrategy:
    backoffLimitCount: 1
    backoffBaseSeconds: 1
    backoffMaxSeconds: 2
"""


wait_for_pods_ready_config = server_configured(WAIT_FOR_PODS_READY)


def never_ready_job(ns: str, name: str) -> dict[str, Any]:
    job = gpu_job(ns, name=name)
    job["spec"]["template"]["spec"]["nodeSelector"] = {"pykueue.e2e/no-such-node": "true"}
    return job


def workload_of(kubectl: Kubectl, ns: str, job: str) -> dict[str, Any] | None:
    return next((w for w in workloads(kubectl, ns) if w["metadata"]["ownerReferences"][0]["name"] == job), None)


def event_reasons(kubectl: Kubectl, ns: str, name: str) -> list[str]:
    items = kubectl.get("events", "-n", ns, "--field-selector", f"involvedObject.name={name}")["items"]
    return [e["reason"] for e in sorted(items, key=lambda e: e.get("eventTime") or e.get("lastTimestamp") or "")]


def brief(c: dict[str, Any]) -> tuple[str, str, str]:
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


@pytest.mark.usefixtures("quota")
def test_job_whose_pods_become_ready_gets_pods_ready_started(kubectl: Kubectl, namespace: str) -> None:
    started = time.monotonic()
    create(kubectl, gpu_job(namespace, name="ready", run_for="1h"))
    wl = wait_for(
        "PodsReady=True",
        lambda: when(
            workload_of(kubectl, namespace, "ready") or {}, lambda w: cond(w, "PodsReady").get("status") == "True"
        ),
        timeout=30,
    )
    ready = cond(wl, "PodsReady")
    assert brief(ready) == ("True", "Started", "All pods reached readiness and the workload is running")
    assert ready["observedGeneration"] == wl["metadata"]["generation"]
    assert cond(wl, "Admitted")["status"] == "True" and not cond(wl, "Evicted")
    job = kubectl.get("job", "-n", namespace, "ready")
    assert job["spec"]["suspend"] is False and job["status"]["ready"] == 1
    print(f"creation to PodsReady=True: {time.monotonic() - started:.1f}s")


@pytest.mark.usefixtures("quota")
def test_never_ready_job_is_evicted_requeued_and_deactivated_at_the_limit(kubectl: Kubectl, namespace: str) -> None:
    started = time.monotonic()
    create(kubectl, never_ready_job(namespace, "stuck"))
    # The Job reconciler writes PodsReady on its own pass, which may come just after the admission (as upstream's).
    wl = wait_for(
        "admission with PodsReady",
        lambda: when(
            workload_of(kubectl, namespace, "stuck") or {},
            lambda w: cond(w, "Admitted").get("status") == "True" and bool(cond(w, "PodsReady")),
        ),
    )
    name = wl["metadata"]["name"]
    assert brief(cond(wl, "PodsReady")) == ("False", "WaitForStart", "Not all pods are ready or succeeded")

    def get() -> dict[str, Any]:
        return kubectl.get("workload", "-n", namespace, name)

    evicted = wait_for(
        "the PodsReady timeout",
        lambda: when(get(), lambda w: cond(w, "Evicted").get("reason") == "PodsReadyTimeout"),
        timeout=TIMEOUT_S + 10,
    )
    assert brief(cond(evicted, "Evicted")) == (
        "True",
        "PodsReadyTimeout",
        f"Exceeded the PodsReady timeout {namespace}/{name}",
    )
    assert evicted["status"]["requeueState"]["count"] == 1 and evicted["status"]["requeueState"]["requeueAt"]
    # Stopped, parked with Requeued=False, then requeued once the 1 s backoff is over, and admitted again.
    wait_for("the Job to be suspended", lambda: kubectl.get("job", "-n", namespace, "stuck")["spec"]["suspend"] is True)
    wait_for(
        "readmission",
        lambda: when(
            get(), lambda w: cond(w, "Admitted").get("status") == "True" and cond(w, "Evicted").get("status") == "False"
        ),
        timeout=15,
    )
    readmitted = get()
    assert brief(cond(readmitted, "Requeued")) == ("True", "BackoffFinished", "The workload backoff was finished")
    assert readmitted["status"]["requeueState"] == {"count": 1}
    assert brief(cond(readmitted, "Evicted")) == (
        "False",
        "QuotaReserved",
        f"Previously: Exceeded the PodsReady timeout {namespace}/{name}",
    )

    # The second timeout exceeds backoffLimitCount 1: deactivation instead of a second requeue.
    final = wait_for(
        "deactivation",
        lambda: when(get(), lambda w: cond(w, "QuotaReserved").get("reason") == "Deactivated"),
        timeout=TIMEOUT_S + 15,
    )
    message = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    assert final["spec"]["active"] is False
    assert brief(cond(final, "Evicted")) == ("True", "DeactivatedDueToRequeuingLimitExceeded", message)
    assert brief(cond(final, "Requeued")) == ("False", "DeactivatedDueToRequeuingLimitExceeded", message)
    assert brief(cond(final, "QuotaReserved")) == ("False", "Deactivated", "The workload is deactivated")
    assert brief(cond(final, "Admitted")) == ("False", "NoReservation", "The workload has no reservation")
    assert (
        not cond(final, "DeactivationTarget")
        and "requeueState" not in final["status"]
        and "admission" not in final["status"]
    )
    assert kubectl.get("job", "-n", namespace, "stuck")["spec"]["suspend"] is True

    def all_events() -> tuple[list[str], list[str]] | None:
        # Events are sent asynchronously: the Job's second Stopped (the Job reconciler's, once it saw
        # the deactivation) may still be queued when the Workload's eviction event is out.
        wl_events, job_events = event_reasons(kubectl, namespace, name), event_reasons(kubectl, namespace, "stuck")
        done = "EvictedDueToDeactivatedDueToRequeuingLimitExceeded" in wl_events and job_events.count("Stopped") >= 2
        return (wl_events, job_events) if done else None

    reasons, job_events = wait_for("the eviction events and the Job's second Stopped", all_events)
    assert reasons.count("EvictedDueToPodsReadyTimeout") == 1 and reasons.count("QuotaReserved") == 2
    assert job_events.count("Started") == 2 and job_events.count("Stopped") == 2
    print(f"creation to deactivation: {time.monotonic() - started:.1f}s")


@pytest.mark.usefixtures("quota")
def test_block_admission_holds_a_second_job_while_the_first_is_not_ready(kubectl: Kubectl, namespace: str) -> None:
    started = time.monotonic()
    create(kubectl, never_ready_job(namespace, "first"))
    wait_for(
        "the first Job's admission",
        lambda: when(
            workload_of(kubectl, namespace, "first") or {}, lambda w: cond(w, "Admitted").get("status") == "True"
        ),
    )
    create(kubectl, gpu_job(namespace, name="second", run_for="1h"))
    # The Job reconciler writes the held Workload's PodsReady on its own pass (as upstream's).
    second = wait_for(
        "the second Job to be held",
        lambda: when(
            workload_of(kubectl, namespace, "second") or {},
            lambda w: cond(w, "QuotaReserved").get("reason") == "Waiting" and bool(cond(w, "PodsReady")),
        ),
    )
    assert brief(cond(second, "QuotaReserved")) == (
        "False",
        "Waiting",
        "waiting for all admitted workloads to be in PodsReady condition",
    )
    assert brief(cond(second, "PodsReady")) == ("False", "WaitForStart", "Not all pods are ready or succeeded")
    time.sleep(0.5)  # the quota would fit: only the block keeps it out
    held = workload_of(kubectl, namespace, "second") or {}
    assert (
        cond(held, "QuotaReserved")["status"] == "False"
        and kubectl.get("job", "-n", namespace, "second")["spec"]["suspend"] is True
    )
    assert cond(workload_of(kubectl, namespace, "first") or {}, "Admitted")["status"] == "True"
    reasons = wait_for(
        "the Warning event",
        lambda: when(event_reasons(kubectl, namespace, held["metadata"]["name"]), lambda r: "Waiting" in r),
    )
    assert "QuotaReserved" not in reasons
    # The first Job goes away: nothing admitted is unready any more, so the second is admitted and runs.
    kubectl("delete", "job", "-n", namespace, "first", "--wait=false")
    wait_for(
        "the second Job to be ready",
        lambda: when(
            workload_of(kubectl, namespace, "second") or {}, lambda w: cond(w, "PodsReady").get("status") == "True"
        ),
        timeout=30,
    )
    print(f"block admission scenario: {time.monotonic() - started:.1f}s")
