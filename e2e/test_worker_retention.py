"""objectRetentionPolicies.workloads.afterFinished end to end: a finished Job's Workload is deleted once the
retention has elapsed, the Job stays; with the option unset the Workload stays.

The second test restarts our server with `afterFinished: 2s` and restores the default Configuration
afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import cond, create, gpu_job, wait_for, workloads

pytestmark = pytest.mark.local_stack

RETENTION_S = 2
RETENTION = f"""\
objectRetentionPolicies:
  workloads:
    afterFinished: {RETENTION_S}s
"""


@pytest.fixture
def retention_config(kubectl: Kubectl) -> Iterator[None]:
    stack = local_stack(kubectl)
    stack.restart_server(RETENTION)
    yield
    stack.restart_server()


def finished_workload(kubectl: Kubectl, ns: str, job: str) -> dict[str, Any]:
    return wait_for(
        "the Job's Workload to finish",
        lambda: next(
            (
                w
                for w in workloads(kubectl, ns)
                if w["metadata"]["ownerReferences"][0]["name"] == job and cond(w, "Finished").get("status") == "True"
            ),
            None,
        ),
        timeout=60,
    )


@pytest.mark.usefixtures("quota")
def test_finished_workload_stays_without_a_retention_policy(kubectl: Kubectl, namespace: str) -> None:
    create(kubectl, gpu_job(namespace, name="kept", run_for="1s"))
    wl = finished_workload(kubectl, namespace, "kept")
    time.sleep(RETENTION_S * 3)
    names = [w["metadata"]["name"] for w in workloads(kubectl, namespace)]
    assert names == [wl["metadata"]["name"]]


@pytest.mark.usefixtures("retention_config", "quota")
def test_finished_workload_is_deleted_after_the_retention_and_its_job_stays(kubectl: Kubectl, namespace: str) -> None:
    create(kubectl, gpu_job(namespace, name="done", run_for="1s"))
    wl = finished_workload(kubectl, namespace, "done")
    name = wl["metadata"]["name"]
    wait_for("the Workload to be deleted", lambda: not workloads(kubectl, namespace), timeout=RETENTION_S + 20)
    gone_at = time.monotonic()
    events = kubectl.get("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}")["items"]
    deleted = [e for e in events if e["reason"] == "Deleted"]
    assert [
        (e["type"], e.get("note") or e.get("message"), e.get("reportingController") or e.get("reportingComponent"))
        for e in deleted
    ] == [("Normal", "Deleted finished workload due to elapsed retention", "kueue-workload-controller")]
    job = kubectl.get("job", "-n", namespace, "done")
    assert cond(job, "Complete").get("status") == "True" and not job["metadata"].get("deletionTimestamp")
    # The finished Job gets no Workload anew.
    time.sleep(3)
    assert workloads(kubectl, namespace) == []
    print(f"Workload deleted {time.monotonic() - gone_at:.1f}s before the check; retention {RETENTION_S}s")
