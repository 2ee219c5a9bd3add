"""Gate WorkloadPriorityClassDefaulting end to end: upstream's
`test/e2e/sequential/baseline/workloadpriorityclassdefaulting_test.go` (v0.19.2) creates the
`default` WorkloadPriorityClass and, a few milliseconds later, a Job that names none; the Job must be
labelled for `default` and its Workload carry that priority. A Job naming its own class keeps it.

The module restarts our server with the gate on and restores the default Configuration afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from e2e.conftest import Kubectl, server_configured
from e2e.helpers import job, wait_for, workload_of

pytestmark = pytest.mark.local_stack

PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


defaulting = server_configured("featureGates:\n  WorkloadPriorityClassDefaulting: true\n")


def wpc(name: str, value: int) -> str:
    return json.dumps(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
    )


@pytest.fixture
def default_class(kubectl: Kubectl) -> Iterator[None]:
    yield
    kubectl("delete", "workloadpriorityclass", "default", "--ignore-not-found", check=False)


def test_a_job_created_right_after_the_default_class_is_labelled_for_it(
    kubectl: Kubectl, namespace: str, pod_quota: str, default_class: None
) -> None:
    kubectl("create", "-f", "-", input=wpc("default", 100))
    created = json.loads(
        kubectl("create", "-o", "json", "-f", "-", input=json.dumps(job(namespace, "no-wpc", "user-queue"))).stdout
    )
    assert created["metadata"]["labels"].get(PRIORITY_LABEL) == "default"
    wl = wait_for("the Job's Workload", lambda: workload_of(kubectl, namespace, "no-wpc"))
    assert wl["spec"].get("priorityClassRef", {}).get("name") == "default"
    assert wl["spec"].get("priority") == 100


def test_a_job_naming_its_class_keeps_it(kubectl: Kubectl, namespace: str, pod_quota: str, default_class: None) -> None:
    kubectl("create", "-f", "-", input=wpc("default", 100))
    own = job(namespace, "own-wpc", "user-queue", labels={PRIORITY_LABEL: "high"})
    created = json.loads(kubectl("create", "-o", "json", "-f", "-", input=json.dumps(own)).stdout)
    assert created["metadata"]["labels"][PRIORITY_LABEL] == "high"
