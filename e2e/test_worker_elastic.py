"""Elastic Jobs end to end (ElasticJobsViaWorkloadSlices, on by default): a scale-up admits a new
workload slice that replaces the old one with no gap, a scale-down shrinks the one slice in place,
and the `kueue.x-k8s.io/elastic-job` gate is lifted only for admitted pods.

Modelled on upstream v0.19.2 test/e2e/singlecluster/baseline/job_test.go ("should inject flavor
nodeLabels and tolerations into the Job and pods at admission and after scale-up", "keeps the
reserved quota equal to the running pods") on kwok nodes: pods run until the test ends, and a
completed index is a pod whose status the test sets to Succeeded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack, metric_sample
from e2e.helpers import ClusterObjects, cond, local_queue, wait_for, when

ELASTIC = {"kueue.x-k8s.io/elastic-job": "true"}
REPLACES = "kueue.x-k8s.io/workload-slice-replacement-for"
TOLERATION = {"key": "example.com/test-taint", "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture
def cluster(kubectl: Kubectl, namespace: str) -> Iterator[ClusterObjects]:
    o = ClusterObjects(kubectl, namespace)
    yield o
    o.cleanup()


def cluster_queue(name: str, rf: str, **quota: str) -> dict[str, Any]:
    resources = [{"name": r, "nominalQuota": q} for r, q in quota.items()]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": list(quota), "flavors": [{"name": rf, "resources": resources}]}],
        },
    }


def elastic_job(
    ns: str, name: str, *, parallelism: int, completions: int, indexed: bool = False, **requests: str
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "completions": completions,
        "template": {
            "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": requests, "limits": requests},
                    }
                ],
            },
        },
    }
    if indexed:
        spec["completionMode"] = "Indexed"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": "main"},
            "annotations": ELASTIC,
        },
        "spec": spec,
    }


def running_pods(kubectl: Kubectl, ns: str, job: str) -> list[dict[str, Any]]:
    pods = kubectl.get("pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}")["items"]
    return [
        p
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


def reserved_milli_cpu(kubectl: Kubectl, cq: str) -> int:
    total = 0
    for fu in (kubectl.get("clusterqueue", cq).get("status") or {}).get("flavorsReservation") or ():
        for r in fu["resources"]:
            if r["name"] == "cpu":
                text = str(r["total"])
                total += int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)
    return total


def workloads(kubectl: Kubectl, ns: str) -> list[dict[str, Any]]:
    return kubectl.get("workloads", "-n", ns)["items"]  # type: ignore[no-any-return]


def scale(kubectl: Kubectl, ns: str, job: str, parallelism: int) -> None:
    kubectl("patch", "job", "-n", ns, job, "--type=merge", "-p", json.dumps({"spec": {"parallelism": parallelism}}))


@pytest.mark.local_stack
def test_scale_up_admits_a_replacement_slice_and_keeps_flavor_injection(
    kubectl: Kubectl, namespace: str, cluster: ClusterObjects
) -> None:
    stack = local_stack(kubectl)
    rf, cq = cluster.name("on-demand"), cluster.name("elastic")
    cluster.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": rf},
            "spec": {"nodeLabels": {"instance-type": "on-demand"}, "tolerations": [TOLERATION]},
        }
    )
    cluster.apply(cluster_queue(cq, rf, cpu="4", memory="4Gi"))
    kubectl.apply(local_queue(namespace, "main", cq))
    kubectl.apply(
        elastic_job(namespace, "elastic-flavor-injection", parallelism=2, completions=10, cpu="200m", memory="20Mi")
    )
    job = "elastic-flavor-injection"

    [old] = wait_for(
        "the first slice admitted",
        lambda: when(
            workloads(kubectl, namespace), lambda ws: len(ws) == 1 and cond(ws[0], "Admitted").get("status") == "True"
        ),
    )
    assert old["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"] == old["metadata"]["name"]
    started = wait_for(
        "the Job unsuspended with the flavor's node selector",
        lambda: when(
            kubectl.get("job", "-n", namespace, job),
            lambda j: (
                not j["spec"].get("suspend")
                and j["spec"]["template"]["spec"].get("nodeSelector") == {"instance-type": "on-demand"}
            ),
        ),
    )
    assert TOLERATION in started["spec"]["template"]["spec"]["tolerations"]
    pods = wait_for(
        "2 running pods", lambda: when(running_pods(kubectl, namespace, job), lambda ps: len(ps) == 2), timeout=60
    )
    for p in pods:
        assert p["spec"]["nodeSelector"] == {"instance-type": "on-demand"} and TOLERATION in p["spec"]["tolerations"]
        assert not p["spec"].get("schedulingGates")
    assert wait_for("400m reserved", lambda: reserved_milli_cpu(kubectl, cq) == 400)

    scale(kubectl, namespace, job, 3)
    new = wait_for(
        "the replacement slice",
        lambda: next(
            (
                w
                for w in workloads(kubectl, namespace)
                if (w["metadata"].get("annotations") or {}).get(REPLACES) == f"{namespace}/{old['metadata']['name']}"
            ),
            None,
        ),
    )
    assert new["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"] == old["metadata"]["name"]
    wait_for(
        "the replacement admitted",
        lambda: (
            cond(kubectl.get("workload", "-n", namespace, new["metadata"]["name"]), "Admitted").get("status") == "True"
        ),
    )
    finished = wait_for(
        "the old slice finished",
        lambda: when(
            kubectl.get("workload", "-n", namespace, old["metadata"]["name"]),
            lambda w: cond(w, "Finished").get("status") == "True",
        ),
    )
    assert cond(finished, "Finished")["reason"] == "WorkloadSliceReplaced"
    # The old slice's admission is untouched: its quota moved to the replacement without a gap.
    assert finished["status"]["admission"] == old["status"]["admission"]
    pods = wait_for(
        "3 running pods", lambda: when(running_pods(kubectl, namespace, job), lambda ps: len(ps) == 3), timeout=60
    )
    for p in pods:
        assert p["spec"]["nodeSelector"] == {"instance-type": "on-demand"} and TOLERATION in p["spec"]["tolerations"]
    template = kubectl.get("job", "-n", namespace, job)["spec"]["template"]["spec"]
    assert template["nodeSelector"] == {"instance-type": "on-demand"} and TOLERATION in template["tolerations"]
    assert wait_for("600m reserved", lambda: reserved_milli_cpu(kubectl, cq) == 600)
    wait_for(
        "kueue_replaced_workload_slices_total",
        lambda: (
            metric_sample(
                stack.metrics_text(), "kueue_replaced_workload_slices_total", cluster_queue=cq, replica_role="leader"
            )
            == 1
        ),
    )


def test_scale_up_beyond_quota_keeps_new_pods_gated(kubectl: Kubectl, namespace: str, cluster: ClusterObjects) -> None:
    rf, cq = cluster.name("on-demand"), cluster.name("elastic")
    cluster.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": rf},
            "spec": {"nodeLabels": {"instance-type": "on-demand"}},
        }
    )
    cluster.apply(cluster_queue(cq, rf, cpu="1"))
    kubectl.apply(local_queue(namespace, "main", cq))
    kubectl.apply(elastic_job(namespace, "grow", parallelism=2, completions=10, cpu="400m"))
    wait_for(
        "2 running pods", lambda: when(running_pods(kubectl, namespace, "grow"), lambda ps: len(ps) == 2), timeout=60
    )
    [old] = workloads(kubectl, namespace)

    scale(kubectl, namespace, "grow", 3)  # 1200m > 1 CPU: the replacement waits
    new = wait_for(
        "the pending replacement",
        lambda: next(
            (
                w
                for w in workloads(kubectl, namespace)
                if (w["metadata"].get("annotations") or {}).get(REPLACES)
                and cond(w, "QuotaReserved").get("status") == "False"
            ),
            None,
        ),
    )
    assert cond(new, "QuotaReserved")["reason"] == "Pending"
    pods = kubectl.get("pods", "-n", namespace, "-l", "batch.kubernetes.io/job-name=grow")["items"]
    wait_for(
        "a third pod created",
        lambda: len(kubectl.get("pods", "-n", namespace, "-l", "batch.kubernetes.io/job-name=grow")["items"]) == 3,
    )
    pods = kubectl.get("pods", "-n", namespace, "-l", "batch.kubernetes.io/job-name=grow")["items"]
    gated = [p for p in pods if {"name": "kueue.x-k8s.io/elastic-job"} in (p["spec"].get("schedulingGates") or ())]
    assert len(gated) == 1
    current = kubectl.get("workload", "-n", namespace, old["metadata"]["name"])
    assert cond(current, "Admitted")["status"] == "True" and cond(current, "Finished").get("status") != "True"
    assert not kubectl.get("job", "-n", namespace, "grow")["spec"].get("suspend")
    # ClusterQueue status follows Workload changes within the 1 s batch period (upstream's UpdatesBatchPeriod).
    wait_for("the ClusterQueue reserving the 2 running pods", lambda: reserved_milli_cpu(kubectl, cq) == 800)


def test_indexed_scale_down_keeps_the_reservation_equal_to_running_pods(
    kubectl: Kubectl, namespace: str, cluster: ClusterObjects
) -> None:
    rf, cq = cluster.name("default"), cluster.name("elastic")
    cluster.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": rf}})
    cluster.apply(cluster_queue(cq, rf, cpu="2"))
    kubectl.apply(local_queue(namespace, "main", cq))
    job = "elastic-indexed-scale-down"
    kubectl.apply(elastic_job(namespace, job, parallelism=4, completions=4, indexed=True, cpu="200m"))
    wait_for(
        "4 running pods, 800m",
        lambda: len(running_pods(kubectl, namespace, job)) == 4 and reserved_milli_cpu(kubectl, cq) == 800,
        timeout=60,
    )
    [wl] = workloads(kubectl, namespace)

    for pod in running_pods(kubectl, namespace, job):
        if pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] in ("0", "1"):
            kubectl(
                "patch",
                "pod",
                "-n",
                namespace,
                pod["metadata"]["name"],
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps({"status": {"phase": "Succeeded"}}),
            )
    wait_for(
        "2 running pods, 400m",
        lambda: len(running_pods(kubectl, namespace, job)) == 2 and reserved_milli_cpu(kubectl, cq) == 400,
        timeout=60,
    )

    scale(kubectl, namespace, job, 1)
    wait_for(
        "1 running pod, 200m",
        lambda: len(running_pods(kubectl, namespace, job)) == 1 and reserved_milli_cpu(kubectl, cq) == 200,
        timeout=60,
    )
    [after] = workloads(kubectl, namespace)
    assert after["metadata"]["uid"] == wl["metadata"]["uid"]
    assert after["spec"]["podSets"][0]["count"] == 1 and cond(after, "Admitted")["status"] == "True"
