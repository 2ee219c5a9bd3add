"""What the webhook alone shows through a real API server (any cluster with us deployed)."""

from __future__ import annotations

import json
from typing import Any

from e2e.conftest import Kubectl


def job(name: str, ns: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
                }
            },
        },
    }


def pod(
    name: str, ns: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}, "annotations": annotations or {}},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]},
    }


def test_job_with_queue_name_is_suspended(kubectl: Kubectl, namespace: str) -> None:
    kubectl.apply(job("queued", namespace, {"kueue.x-k8s.io/queue-name": "user-queue"}))
    got = kubectl.get("job", "-n", namespace, "queued")
    assert got["spec"]["suspend"] is True


def test_job_without_queue_name_runs_to_complete(kubectl: Kubectl, namespace: str) -> None:
    kubectl.apply(job("plain", namespace))
    kubectl("wait", "-n", namespace, "job/plain", "--for=condition=Complete", "--timeout=120s", timeout=150)
    assert kubectl.get("job", "-n", namespace, "plain")["spec"]["suspend"] is False


def test_pod_with_queue_name_is_gated_labelled_and_finalized(kubectl: Kubectl, namespace: str) -> None:
    kubectl.apply(pod("gated", namespace, {"kueue.x-k8s.io/queue-name": "user-queue"}))
    got = kubectl.get("pod", "-n", namespace, "gated")
    assert got["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert "kueue.x-k8s.io/managed" in got["metadata"]["finalizers"]
    assert {"name": "kueue.x-k8s.io/admission"} in got["spec"]["schedulingGates"]
    assert got["status"].get("phase") == "Pending"


def test_pod_in_kube_system_is_untouched(kubectl: Kubectl) -> None:
    name = "e2e-untouched"
    kubectl("delete", "pod", "-n", "kube-system", name, "--ignore-not-found", "--wait=true")
    kubectl.apply(pod(name, "kube-system", {"kueue.x-k8s.io/queue-name": "user-queue"}))
    try:
        got = kubectl.get("pod", "-n", "kube-system", name)
        assert "kueue.x-k8s.io/managed" not in got["metadata"].get("labels", {})
        assert not got["spec"].get("schedulingGates")
        assert not got["metadata"].get("finalizers")
    finally:
        kubectl("delete", "pod", "-n", "kube-system", name, "--wait=false")


def test_invalid_pod_group_is_rejected(kubectl: Kubectl, namespace: str) -> None:
    bad = pod("grouped", namespace, {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/pod-group-name": "g"})
    proc = kubectl.apply(bad, check=False)
    assert proc.returncode != 0
    assert (
        'admission webhook "vpod.kb.io" denied the request: metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: '
        "Required value: both the 'kueue.x-k8s.io/pod-group-total-count' annotation and the "
        "'kueue.x-k8s.io/pod-group-name' label should be set"
    ) in proc.stderr


def test_invalid_cluster_queue_is_rejected(kubectl: Kubectl) -> None:
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "e2e-invalid-cq"},
        "spec": {
            "cohortName": "c",
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "1", "lendingLimit": "2"}]}
                    ],
                }
            ],
        },
    }
    proc = kubectl.apply(cq, check=False)
    assert proc.returncode != 0
    assert (
        'admission webhook "vclusterqueue.kb.io" denied the request: '
        'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": '
        "must be less than or equal to the nominalQuota"
    ) in proc.stderr


def test_workload_v1beta1_reads_back_as_v1beta2(kubectl: Kubectl, namespace: str) -> None:
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "converted", "namespace": namespace},
        "spec": {
            "queueName": "user-queue",
            "priority": 100,
            "priorityClassName": "high",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
        },
    }
    kubectl.apply(wl)
    v2 = kubectl.get("workloads.v1beta2.kueue.x-k8s.io", "-n", namespace, "converted")
    assert v2["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert v2["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    v1 = kubectl.get("workloads.v1beta1.kueue.x-k8s.io", "-n", namespace, "converted")
    assert v1["spec"]["priorityClassName"] == "high"
    assert v1["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"


def test_cluster_queue_v1beta2_reads_back_as_v1beta1(kubectl: Kubectl) -> None:
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "e2e-converted-cq"},
        "spec": {
            "cohortName": "research",
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
                }
            ],
        },
    }
    kubectl.apply(cq)
    try:
        v1 = kubectl.get("clusterqueues.v1beta1.kueue.x-k8s.io", "e2e-converted-cq")
        assert v1["spec"]["cohort"] == "research" and "cohortName" not in v1["spec"]
        v2 = kubectl.get("clusterqueues.v1beta2.kueue.x-k8s.io", "e2e-converted-cq")
        assert v2["spec"]["cohortName"] == "research"
        # Our defaulting webhook put the finalizer on; the CRD schema defaulted the strategy.
        assert "kueue.x-k8s.io/resource-in-use" in v2["metadata"]["finalizers"]
        assert v2["spec"]["queueingStrategy"] == "BestEffortFIFO"
    finally:
        kubectl(
            "patch",
            "clusterqueue",
            "e2e-converted-cq",
            "--type=json",
            "-p",
            json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]),
            check=False,
        )
        kubectl("delete", "clusterqueue", "e2e-converted-cq", "--wait=false", check=False)
