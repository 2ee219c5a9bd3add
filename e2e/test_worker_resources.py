"""The Configuration's `resources` section end to end: upstream's
`test/e2e/sequential/baseline/quota_check_strategy_test.go` (v0.19.2), whose two specs create a
ClusterQueue declaring only cpu and Jobs asking for cpu and memory under
`quotaCheckStrategy: IgnoreUndeclared` (metrics.enableClusterQueueResources on, as in our stack),
plus one Job whose extended resource a `transformations` entry charges as cpu.

The module restarts our server with that Configuration and restores the default one afterwards.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack, metric_sample, server_configured
from e2e.helpers import QUEUE_LABEL, cond, wait_for, wait_workload, workload_of

pytestmark = pytest.mark.local_stack

CREDIT = "example.com/credit"
RESOURCES = f"""\
resources:
  quotaCheckStrategy: IgnoreUndeclared
  transformations:
  - input: {CREDIT}
    strategy: Replace
    outputs:
      cpu: 500m
"""


ignore_undeclared = server_configured(RESOURCES)


@pytest.fixture
def cq(kubectl: Kubectl, namespace: str) -> Iterator[str]:
    """Upstream's ClusterQueue: 100 cpu of one flavor, LowerPriority preemption within it; LocalQueue `lq`."""
    s = uuid.uuid4().hex[:6]
    rf, cq = f"test-flavor-{s}", f"test-cq-ignoreundeclared-{s}"
    kubectl.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": rf}})
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": rf, "resources": [{"name": "cpu", "nominalQuota": "100"}]}],
                    }
                ],
            },
        }
    )
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": cq},
        }
    )
    wait_for(
        "the ClusterQueue to be active", lambda: cond(kubectl.get("clusterqueue", cq), "Active").get("status") == "True"
    )
    yield cq
    kubectl("delete", "jobs,workloads", "-n", namespace, "--all", "--wait=false", check=False)
    kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
    kubectl("delete", "resourceflavor", rf, "--wait=false", check=False)


def job(ns: str, name: str, resources: dict[str, str], priority_class: str = "") -> dict[str, Any]:
    """Upstream's `RequestAndLimit` Job: requests equal to limits, one pod running until deleted."""
    labels = {QUEUE_LABEL: "lq"}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": resources, "limits": resources},
                        }
                    ],
                }
            }
        },
    }


def submit(kubectl: Kubectl, obj: dict[str, Any]) -> None:
    kubectl("create", "-f", "-", input=json.dumps(obj))


def usage_of(wl: dict[str, Any]) -> dict[str, str]:
    (psa,) = wl["status"]["admission"]["podSetAssignments"]
    return dict(psa["resourceUsage"])


def test_undeclared_resources_are_ignored_and_not_reported(kubectl: Kubectl, namespace: str, cq: str) -> None:
    """ "should not report metrics for resource usage for undeclared resources"."""
    stack = local_stack(kubectl)
    submit(kubectl, job(namespace, "ignoreundeclared-job", {"cpu": "1", "memory": "1Gi"}))
    wl = wait_workload(kubectl, namespace, "ignoreundeclared-job", "Admitted")
    assert usage_of(wl) == {"cpu": "1"}
    wait_for(
        "cpu usage reported",
        lambda: (
            metric_sample(stack.metrics_text(), "kueue_cluster_queue_resource_usage", cluster_queue=cq, resource="cpu")
            == 1
        ),
    )
    text = stack.metrics_text()
    assert metric_sample(text, "kueue_cluster_queue_resource_usage", cluster_queue=cq, resource="memory") is None
    assert metric_sample(text, "kueue_cluster_queue_resource_reservation", cluster_queue=cq, resource="memory") is None


@pytest.fixture
def priority_classes(kubectl: Kubectl) -> Iterator[tuple[str, str]]:
    s = uuid.uuid4().hex[:6]
    low, high = f"low-{s}", f"high-{s}"
    for name, value in ((low, 10), (high, 1000)):
        kubectl.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    yield low, high
    kubectl("delete", "workloadpriorityclass", low, high, "--wait=false", check=False)


def test_preempts_lower_priority_with_undeclared_resources(
    kubectl: Kubectl, namespace: str, cq: str, priority_classes: tuple[str, str]
) -> None:
    """ "should preempt workloads with undeclared resource that have lower priority"."""
    low, high = priority_classes
    submit(kubectl, job(namespace, "low-job", {"cpu": "100", "memory": "1Gi"}, low))
    wait_workload(kubectl, namespace, "low-job", "Admitted")
    submit(kubectl, job(namespace, "high-job", {"cpu": "100", "memory": "1Gi"}, high))
    wait_workload(kubectl, namespace, "high-job", "Admitted", timeout=60)
    evicted = workload_of(kubectl, namespace, "low-job")
    assert evicted is not None
    assert cond(evicted, "Admitted").get("status") == "False"
    assert cond(evicted, "Preempted").get("status") == "True"


def test_transformation_charges_its_outputs(kubectl: Kubectl, namespace: str, cq: str) -> None:
    """A Job asking for 2 credits and 100m cpu is charged 1100m cpu: each credit is replaced by 500m."""
    submit(kubectl, job(namespace, "credits", {"cpu": "100m", CREDIT: "2"}))
    wl = wait_workload(kubectl, namespace, "credits", "Admitted")
    assert usage_of(wl) == {"cpu": "1100m"}
    wait_for(
        "1100m reserved",
        lambda: (
            kubectl.get("clusterqueue", cq)["status"].get("flavorsReservation", [{}])[0].get("resources")
            == [{"name": "cpu", "total": "1100m", "borrowed": "0"}]
        ),
    )


def test_pending_workload_reports_transformed_requests(kubectl: Kubectl, namespace: str, cq: str) -> None:
    """status.resourceRequests of a Job that does not fit: 250 credits are 125 cpu, over the 100 declared."""
    submit(kubectl, job(namespace, "too-many-credits", {CREDIT: "250"}))
    wait_workload(kubectl, namespace, "too-many-credits", "QuotaReserved", "False", reason="Pending")
    requests = wait_for(
        "status.resourceRequests",
        lambda: (w := workload_of(kubectl, namespace, "too-many-credits")) and w["status"].get("resourceRequests"),
    )
    assert requests == [{"name": "main", "resources": {"cpu": "125"}}]
