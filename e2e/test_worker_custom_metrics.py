"""Custom metric labels and the LocalQueue selector end to end: the three specs of upstream's
`test/e2e/sequential/baseline/custom_metrics_test.go` (v0.19.2: labels and annotations the
Workload-kind custom labels read are copied from a single pod and from a pod group, and a pod group
whose pods disagree on such an annotation gets no Workload), and, after upstream's
`sequential/baseline/metrics_test.go`, LocalQueue series only for the LocalQueues
`localQueueSelector` matches, with the custom label of their ClusterQueue and LocalQueue.

The module restarts our server with gate CustomMetricLabels and those options and restores the
default Configuration afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack, metric_sample, server_configured
from e2e.helpers import create, wait_for, workloads

pytestmark = pytest.mark.local_stack

UNTRACKED = "kueue.x-k8s.io/_UNTRACKED_VALUE_"

CONFIG = """\
featureGates:
  CustomMetricLabels: true
integrations:
  labelKeysToCopy: ["toCopyKeyIntegration"]
metrics:
  localQueueMetrics:
    enable: true
    localQueueSelector:
      matchLabels:
        metrics-test: "true"
  customLabels:
  - name: custom_label_key
    sourceLabelKey: toCopyKeyCustom
    sourceKind: Workload
    trackedValues: ["custom_value"]
  - name: custom_annotation_key
    sourceAnnotationKey: toCopyAnnotation
    sourceKind: Workload
    trackedValues: ["annotation_value"]
  - name: team
  - name: owner
    sourceKind: LocalQueue
"""


custom_metrics_config = server_configured(CONFIG)


@pytest.fixture
def queues(kubectl: Kubectl, namespace: str) -> Iterator[str]:
    """ClusterQueue (label team=ml) with 5 CPUs; LocalQueue `queue` (picked by the selector, owner=bob)
    and `other` (not picked)."""
    cq, rf = f"cq-{namespace}", f"on-demand-{namespace}"
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": rf},
            "spec": {"nodeLabels": {"instance-type": "on-demand"}},
        }
    )
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq, "labels": {"team": "ml"}},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": rf, "resources": [{"name": "cpu", "nominalQuota": 5}]}],
                    }
                ],
            },
        }
    )
    for name, labels in (("queue", {"metrics-test": "true", "owner": "bob"}), ("other", {})):
        kubectl.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"clusterQueue": cq},
            }
        )
    yield cq
    kubectl("delete", "pods", "-n", namespace, "--all", "--wait=false", check=False)
    kubectl("delete", "clusterqueue", cq, "--wait=false", "--ignore-not-found", check=False)
    kubectl("delete", "resourceflavor", rf, "--wait=false", "--ignore-not-found", check=False)


def pod(name: str, *, labels: dict[str, str], annotations: dict[str, str], group: str | None = None) -> dict[str, Any]:
    meta_labels = {"kueue.x-k8s.io/queue-name": "queue", **labels}
    meta_annotations = dict(annotations)
    if group:
        meta_labels["kueue.x-k8s.io/pod-group-name"] = group
        meta_annotations["kueue.x-k8s.io/pod-group-total-count"] = "2"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": meta_labels, "annotations": meta_annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "command": ["sleep", "60"], "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


def the_workload(kubectl: Kubectl, ns: str, name: str | None = None) -> dict[str, Any]:
    return wait_for(
        "the Workload",
        lambda: next((w for w in workloads(kubectl, ns) if name is None or w["metadata"]["name"] == name), None),
        timeout=30,
    )


def assert_copied(wl: dict[str, Any]) -> None:
    labels, annotations = wl["metadata"].get("labels") or {}, wl["metadata"].get("annotations") or {}
    assert labels.get("toCopyKeyIntegration") == "integration_value"
    assert labels.get("toCopyKeyCustom") == "custom_value"
    assert "dontCopyKey" not in labels
    assert annotations.get("toCopyAnnotation") == "annotation_value"
    assert "dontCopyAnnotation" not in annotations


@pytest.mark.usefixtures("queues")
def test_labels_and_annotations_are_copied_for_a_single_pod(kubectl: Kubectl, namespace: str) -> None:
    p = pod(
        "test-pod",
        labels={"toCopyKeyIntegration": "integration_value", "toCopyKeyCustom": "custom_value", "dontCopyKey": "x"},
        annotations={"toCopyAnnotation": "annotation_value", "dontCopyAnnotation": "ignored"},
    )
    create(kubectl, {**p, "metadata": {**p["metadata"], "namespace": namespace}})
    assert_copied(the_workload(kubectl, namespace))


@pytest.mark.usefixtures("queues")
def test_labels_and_annotations_are_copied_for_a_pod_group(kubectl: Kubectl, namespace: str) -> None:
    first = pod(
        "test-pod1",
        group="test-group",
        labels={"dontCopyKey": "dontCopyValue"},
        annotations={"toCopyAnnotation": "annotation_value", "dontCopyAnnotation": "ignored1"},
    )
    second = pod(
        "test-pod2",
        group="test-group",
        labels={
            "toCopyKeyIntegration": "integration_value",
            "toCopyKeyCustom": "custom_value",
            "dontCopyKey": "dontCopyAnotherValue",
        },
        annotations={"toCopyAnnotation": "annotation_value", "dontCopyAnnotation": "ignored2"},
    )
    for p in (first, second):
        create(kubectl, {**p, "metadata": {**p["metadata"], "namespace": namespace}})
    assert_copied(the_workload(kubectl, namespace, "test-group"))


@pytest.mark.usefixtures("queues")
def test_no_workload_for_a_pod_group_whose_pods_disagree_on_a_custom_annotation(
    kubectl: Kubectl, namespace: str
) -> None:
    for name, value in (("test-pod1", "annotation_value"), ("test-pod2", "mismatch_value")):
        p = pod(name, group="test-group", labels={}, annotations={"toCopyAnnotation": value})
        create(kubectl, {**p, "metadata": {**p["metadata"], "namespace": namespace}})
    deadline = time.monotonic() + 5  # upstream's ConsistentDuration
    while time.monotonic() < deadline:
        assert workloads(kubectl, namespace) == []
        time.sleep(0.5)


def test_local_queue_series_only_for_the_selected_queue_with_custom_labels(
    kubectl: Kubectl, namespace: str, queues: str
) -> None:
    stack = local_stack(kubectl)
    p = pod("metrics-pod", labels={}, annotations={})
    create(kubectl, {**p, "metadata": {**p["metadata"], "namespace": namespace}})
    picked = {"name": "queue", "namespace": namespace, "custom_owner": "bob"}

    admitted = {
        "cluster_queue": queues,
        "custom_team": "ml",
        "custom_custom_label_key": UNTRACKED,
        "custom_custom_annotation_key": UNTRACKED,
    }

    def scraped() -> str | None:
        """Once the pod's Workload is admitted: the counter moves at reservation, the admitted gauge with
        the next status report after admission (later on a loaded machine)."""
        text = stack.metrics_text()
        reserved = metric_sample(text, "kueue_local_queue_quota_reserved_workloads_total", **picked) == 1
        return text if reserved and metric_sample(text, "kueue_admitted_active_workloads", **admitted) == 1 else None

    text = wait_for("the picked LocalQueue's series", scraped, timeout=30)
    assert metric_sample(text, "kueue_local_queue_status", **picked, active="True") == 1
    assert metric_sample(text, "kueue_local_queue_status", name="other", namespace=namespace) is None
    assert (
        metric_sample(text, "kueue_cluster_queue_status", cluster_queue=queues, status="active", custom_team="ml") == 1
    )
    assert 'custom_custom_label_key=""' in text  # the Workload-kind labels of kueue_admitted_active_workloads

    # The LocalQueue leaves the selector: every series of it goes, its counters too.
    kubectl("label", "localqueue", "queue", "-n", namespace, "metrics-test=false", "--overwrite")

    def gone() -> bool | None:
        text = stack.metrics_text()
        series = ("kueue_local_queue_quota_reserved_workloads_total", "kueue_local_queue_status")
        return all(metric_sample(text, m, name="queue", namespace=namespace) is None for m in series) or None

    wait_for("the LocalQueue's series to go", gone, timeout=30)
