"""Admission scenarios end to end: the seed's quick start, cohort borrowing and lending limits,
preemption by WorkloadPriorityClass, StrictFIFO vs BestEffortFIFO, stopPolicy HoldAndDrain, and the
worker's /metrics after an admission. Each test owns uniquely named cluster-scoped objects and
deletes them at the end."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack, metric_sample
from e2e.helpers import (
    ClusterObjects,
    cluster_queue,
    cond,
    flavor,
    is_admitted,
    job,
    local_queue,
    reserved_cpu,
    submit,
    suspended,
    wait_for,
    wait_workload,
    when,
    workload_of,
    workload_priority_class,
)

# == the seed's quick start =========================================================================
QUICK_START = {
    "v1beta1": """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: { name: h100-ondemand }
spec:
  nodeLabels: { "nvidia.com/gpu.product": "NVIDIA-H100-SXM5" }
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: { name: applied-ai-gpu }
spec:
  namespaceSelector: {}
  cohort: gpu-pool
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu", "cpu", "memory"]
    flavors:
    - name: h100-ondemand
      resources:
      - name: nvidia.com/gpu
        nominalQuota: "8"
        borrowingLimit: "8"
      - name: cpu
        nominalQuota: "256"
      - name: memory
        nominalQuota: "2Ti"
  preemption:
    reclaimWithinCohort: LowerPriority
    withinClusterQueue: LowerPriority
""",
    "v1beta2": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: { name: h100-ondemand }
spec:
  nodeLabels: { "nvidia.com/gpu.product": "NVIDIA-H100-SXM5" }
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: { name: applied-ai-gpu }
spec:
  namespaceSelector: {}
  cohortName: gpu-pool
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu", "cpu", "memory"]
    flavors:
    - name: h100-ondemand
      resources:
      - name: nvidia.com/gpu
        nominalQuota: "8"
        borrowingLimit: "8"
      - name: cpu
        nominalQuota: "256"
      - name: memory
        nominalQuota: "2Ti"
  preemption:
    reclaimWithinCohort: LowerPriority
    withinClusterQueue: LowerPriority
""",
}
QUICK_START_QUEUE = """
apiVersion: kueue.x-k8s.io/VERSION
kind: LocalQueue
metadata: { name: applied-ai-gpu, namespace: NAMESPACE }
spec:
  clusterQueue: applied-ai-gpu
"""
QUICK_START_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune-llama-3-8b
  namespace: NAMESPACE
  labels: { "kueue.x-k8s.io/queue-name": "applied-ai-gpu" }
spec:
  parallelism: 4
  completions: 4
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:24.10-py3
        command: ["sleep", "infinity"]
        resources:
          limits: { nvidia.com/gpu: 1, cpu: "16", memory: "128Gi" }
"""
GPU_NODES = ("kwok-gpu-1", "kwok-gpu-2")


@pytest.fixture
def h100_nodes(kubectl: Kubectl) -> Iterator[None]:
    """The seed's flavor selects nvidia.com/gpu.product=NVIDIA-H100-SXM5; give our GPU nodes that label."""
    for node in GPU_NODES:
        kubectl("label", "node", node, "nvidia.com/gpu.product=NVIDIA-H100-SXM5", "--overwrite")
    yield
    for node in GPU_NODES:
        kubectl("label", "node", node, "nvidia.com/gpu.product-", check=False)


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_quick_start_suspended_job_is_admitted_and_completes(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, h100_nodes: None, version: str
) -> None:
    # The seed's names, made unique per run: the two versions must not share a terminating object.
    rename = {
        "h100-ondemand": objs.name("h100-ondemand"),
        "applied-ai-gpu": objs.name("applied-ai-gpu"),
        "gpu-pool": objs.name("gpu-pool"),
    }

    def renamed(text: str) -> str:
        return re.sub("|".join(rename), lambda mt: rename[mt.group(0)], text)

    cq_name = rename["applied-ai-gpu"]
    objs.apply(renamed(QUICK_START[version]))
    kubectl.apply(renamed(QUICK_START_QUEUE.replace("VERSION", version).replace("NAMESPACE", namespace)))
    kubectl.apply(renamed(QUICK_START_JOB.replace("NAMESPACE", namespace)))
    wl = wait_workload(kubectl, namespace, "finetune-llama-3-8b", "Admitted")
    assert cond(wl, "QuotaReserved")["message"] == f"Quota reserved in ClusterQueue {cq_name}"
    psa = wl["status"]["admission"]["podSetAssignments"][0]
    assert psa["count"] == 4
    assert psa["resourceUsage"] == {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "4"}
    wait_for("the Job to run", lambda: not suspended(kubectl, namespace, "finetune-llama-3-8b"))
    pods = wait_for(
        "4 pods bound to H100 nodes",
        lambda: when(
            kubectl.get("pods", "-n", namespace, "-l", "job-name=finetune-llama-3-8b")["items"],
            lambda ps: len([p for p in ps if p["spec"].get("nodeName") in GPU_NODES]) == 4,
        ),
    )
    assert all(p["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-SXM5"} for p in pods)
    wl = wait_workload(kubectl, namespace, "finetune-llama-3-8b", "Finished", timeout=60)
    assert cond(wl, "Finished")["reason"] == "Succeeded"
    cq = wait_for(
        "the quota released",
        lambda: when(kubectl.get("clusterqueue", cq_name), lambda c: c["status"].get("reservingWorkloads") == 0),
    )
    assert cond(cq, "Active")["status"] == "True"


# == cohorts ========================================================================================
def test_borrowing_is_capped_by_borrowing_limit_and_by_the_lenders_lending_limit(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    rf, cohort = objs.name("on-demand"), objs.name("pool")
    team_a, team_b = objs.name("team-a"), objs.name("team-b")
    objs.apply(flavor(rf))
    # team-a: 2 CPUs of its own, may borrow 3 more; team-b lends at most 1 of its 4.
    objs.apply(cluster_queue(team_a, rf, "2", cohort=cohort, borrowing="3"))
    objs.apply(cluster_queue(team_b, rf, "4", cohort=cohort, lending="1"))
    kubectl.apply(local_queue(namespace, "a", team_a))
    submit(kubectl, *(job(namespace, f"a-{i}", "a") for i in range(6)))

    def admitted_count() -> int:
        return sum(is_admitted(kubectl, namespace, f"a-{i}") for i in range(6))

    wait_for("3 admitted (2 nominal + 1 lent)", lambda: admitted_count() == 3)
    time.sleep(1.5)
    assert admitted_count() == 3
    cq = wait_for(
        "team-a status",
        lambda: when(kubectl.get("clusterqueue", team_a), lambda c: c.get("status", {}).get("admittedWorkloads") == 3),
    )
    assert reserved_cpu(cq) == ("3", "1")

    def first_pending() -> dict[str, Any] | None:
        w = next(
            (
                w
                for i in range(6)
                if (w := workload_of(kubectl, namespace, f"a-{i}")) and cond(w, "Admitted").get("status") != "True"
            ),
            None,
        )
        return when(w or {}, lambda w: cond(w, "QuotaReserved").get("status") == "False")

    # The scheduler's Pending write for a waiting Workload is its own, apart from the admissions counted above.
    pending = wait_for("the first waiting Workload's QuotaReserved=False", first_pending)
    assert cond(pending, "QuotaReserved")["reason"] == "Pending"
    assert cond(pending, "QuotaReserved")["message"] == (
        f"couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {rf}, 1 more needed"
    )

    # team-b now lends up to 4: team-a's own borrowingLimit (3) becomes the cap, 5 in all.
    objs.apply(cluster_queue(team_b, rf, "4", cohort=cohort, lending="4"))
    wait_for("5 admitted (2 nominal + borrowingLimit 3)", lambda: admitted_count() == 5)
    time.sleep(1.5)
    assert admitted_count() == 5
    cq = wait_for(
        "team-a status",
        lambda: when(kubectl.get("clusterqueue", team_a), lambda c: c.get("status", {}).get("admittedWorkloads") == 5),
    )
    assert reserved_cpu(cq) == ("5", "3")


# == preemption =====================================================================================
def test_higher_priority_job_preempts_within_the_cluster_queue(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    rf, cq_name = objs.name("on-demand"), objs.name("prio")
    low, high = objs.name("low"), objs.name("high")
    objs.apply(flavor(rf))
    objs.apply(cluster_queue(cq_name, rf, "2", preemption={"withinClusterQueue": "LowerPriority"}))
    for name, value in ((low, 100), (high, 1000)):
        objs.apply(workload_priority_class(name, value))
    kubectl.apply(local_queue(namespace, "q", cq_name))
    original = {"team": "batch"}
    submit(
        kubectl,
        job(namespace, "low", "q", cpu="2", labels={"kueue.x-k8s.io/priority-class": low}, node_selector=original),
    )
    wait_workload(kubectl, namespace, "low", "Admitted")
    wait_for(
        "low to run with the flavor's nodeSelector",
        lambda: (
            kubectl.get("job", "-n", namespace, "low")["spec"]["template"]["spec"].get("nodeSelector")
            == {**original, "instance-type": "on-demand"}
        ),
    )

    submit(kubectl, job(namespace, "high", "q", cpu="2", run_for=None, labels={"kueue.x-k8s.io/priority-class": high}))
    high_wl = wait_for("the high Workload", lambda: workload_of(kubectl, namespace, "high"))
    evicted = wait_workload(kubectl, namespace, "low", "Evicted", reason="Preempted")
    message = (
        f"Preempted to accommodate a workload (UID: {high_wl['metadata']['uid']}, "
        f"JobUID: {kubectl.get('job', '-n', namespace, 'high')['metadata']['uid']}) due to prioritization in the ClusterQueue; "
        f"preemptor path: /{cq_name}; preemptee path: /{cq_name}"
    )
    assert cond(evicted, "Evicted")["message"] == message
    assert cond(evicted, "Preempted") | {"lastTransitionTime": None} == {
        "type": "Preempted",
        "status": "True",
        "reason": "InClusterQueue",
        "message": message,
        "lastTransitionTime": None,
    }
    wait_for(
        "low re-suspended with its template restored",
        lambda: when(
            kubectl.get("job", "-n", namespace, "low"),
            lambda j: (
                j["spec"].get("suspend") is True and j["spec"]["template"]["spec"].get("nodeSelector") == original
            ),
        ),
    )
    requeued = wait_workload(kubectl, namespace, "low", "Requeued", reason="Preempted")
    assert cond(requeued, "Requeued")["message"] == message

    wait_workload(kubectl, namespace, "high", "Admitted")
    wait_workload(kubectl, namespace, "high", "Finished", timeout=60)
    wl = wait_workload(kubectl, namespace, "low", "Admitted", timeout=60)
    assert cond(wl, "Evicted") | {"lastTransitionTime": None} == {
        "type": "Evicted",
        "status": "False",
        "reason": "QuotaReserved",
        "message": f"Previously: {message}",
        "observedGeneration": wl["metadata"]["generation"],
        "lastTransitionTime": None,
    }
    wait_for("low to run again", lambda: not suspended(kubectl, namespace, "low"))


# == queueing strategies ============================================================================
@pytest.mark.parametrize(
    ("strategy", "small_admitted"),
    [
        pytest.param("StrictFIFO", False, id="StrictFIFO blocks behind the head"),
        pytest.param("BestEffortFIFO", True, id="BestEffortFIFO lets the small one pass"),
    ],
)
def test_head_of_line_blocking(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, strategy: str, small_admitted: bool
) -> None:
    rf, cq_name = objs.name("on-demand"), objs.name("fifo")
    objs.apply(flavor(rf))
    objs.apply(cluster_queue(cq_name, rf, "4", strategy=strategy))
    kubectl.apply(local_queue(namespace, "q", cq_name))
    submit(kubectl, job(namespace, "running", "q", cpu="2"))
    wait_workload(kubectl, namespace, "running", "Admitted")
    submit(kubectl, job(namespace, "big", "q", cpu="3"))
    big = wait_workload(kubectl, namespace, "big", "QuotaReserved", "False")
    assert cond(big, "QuotaReserved")["reason"] == "Pending"
    time.sleep(1.1)  # creation timestamps have second resolution: the small Job must be younger
    submit(kubectl, job(namespace, "small", "q", cpu="1"))
    if small_admitted:
        wait_workload(kubectl, namespace, "small", "Admitted")
        assert not is_admitted(kubectl, namespace, "big")
    else:
        wait_for("the small Workload", lambda: workload_of(kubectl, namespace, "small"))
        time.sleep(3)
        assert not is_admitted(kubectl, namespace, "small")
        assert suspended(kubectl, namespace, "small")
        # The ClusterQueue status counting the small Workload is a separate write of the status writer.
        cq = wait_for(
            "the small Workload counted pending",
            lambda: when(
                kubectl.get("clusterqueue", cq_name), lambda c: (c.get("status") or {}).get("pendingWorkloads") == 2
            ),
        )
        assert cq["status"]["pendingWorkloads"] == 2 and cq["status"]["admittedWorkloads"] == 1
        # Once the head fits (the running Job is deleted), both go in order.
        kubectl("delete", "job", "-n", namespace, "running")
        wait_workload(kubectl, namespace, "big", "Admitted")
        wait_workload(kubectl, namespace, "small", "Admitted")


# == stopPolicy =====================================================================================
def test_hold_and_drain_evicts_and_none_readmits(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> None:
    rf, cq_name = objs.name("on-demand"), objs.name("drain")
    objs.apply(flavor(rf))
    cq = cluster_queue(cq_name, rf, "2")
    objs.apply(cq)
    kubectl.apply(local_queue(namespace, "q", cq_name))
    submit(kubectl, job(namespace, "long", "q"))
    wait_workload(kubectl, namespace, "long", "Admitted")
    wait_for("the Job to run", lambda: not suspended(kubectl, namespace, "long"))

    kubectl("patch", "clusterqueue", cq_name, "--type=merge", "-p", '{"spec":{"stopPolicy":"HoldAndDrain"}}')
    wl = wait_workload(kubectl, namespace, "long", "Evicted", reason="ClusterQueueStopped")
    assert cond(wl, "Evicted")["message"] == "The ClusterQueue is stopped"
    wait_for("the Job suspended", lambda: suspended(kubectl, namespace, "long"))
    wl = wait_workload(kubectl, namespace, "long", "Requeued", "False", reason="ClusterQueueStopped")
    assert cond(wl, "Requeued")["message"] == "The ClusterQueue is stopped"
    assert "admission" not in wl["status"]
    stopped = wait_for(
        "Active=False Stopped",
        lambda: when(kubectl.get("clusterqueue", cq_name), lambda c: cond(c, "Active").get("reason") == "Stopped"),
    )
    assert cond(stopped, "Active")["message"] == "Can't admit new workloads: is stopped."
    time.sleep(1)
    assert not is_admitted(kubectl, namespace, "long")

    kubectl("patch", "clusterqueue", cq_name, "--type=merge", "-p", '{"spec":{"stopPolicy":"None"}}')
    wl = wait_workload(kubectl, namespace, "long", "Admitted")
    assert cond(wl, "Requeued") | {"lastTransitionTime": None} == {
        "type": "Requeued",
        "status": "True",
        "reason": "ClusterQueueRestarted",
        "message": "The ClusterQueue was restarted after being stopped",
        "observedGeneration": wl["metadata"]["generation"],
        "lastTransitionTime": None,
    }
    wait_for("the Job to run again", lambda: not suspended(kubectl, namespace, "long"))


# == metrics ========================================================================================


@pytest.mark.local_stack
def test_worker_metrics_after_an_admission(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> None:
    stack = local_stack(kubectl)
    rf, cq_name = objs.name("on-demand"), objs.name("metrics")
    objs.apply(flavor(rf))
    objs.apply(cluster_queue(cq_name, rf, "2"))
    kubectl.apply(local_queue(namespace, "q", cq_name))
    submit(kubectl, job(namespace, "one", "q"), job(namespace, "two", "q", cpu="2"))
    wait_workload(kubectl, namespace, "one", "Admitted")
    wait_workload(kubectl, namespace, "two", "QuotaReserved", "False")

    role = {"replica_role": "leader"}
    # The local stack turns on metrics.enableClusterQueueResources.
    fr = {"cohort": "", "cluster_queue": cq_name, "flavor": rf, "resource": "cpu", **role}

    def scrape() -> str | None:
        text: str = stack.metrics_text()
        # One refresh sets the gauge families one after the other: a scrape may fall in between.
        ok = (
            metric_sample(text, "kueue_pending_workloads", cluster_queue=cq_name, status="inadmissible") == 1
            and metric_sample(text, "kueue_admitted_active_workloads", cluster_queue=cq_name, **role) == 1
            and metric_sample(text, "kueue_reserving_active_workloads", cluster_queue=cq_name, **role) == 1
            and metric_sample(
                text, "kueue_local_queue_admitted_active_workloads", name="q", namespace=namespace, **role
            )
            == 1
            and (
                metric_sample(text, "kueue_cluster_queue_nominal_quota", **fr) is None
                or metric_sample(text, "kueue_cluster_queue_resource_usage", **fr) == 1
            )
        )
        return text if ok else None

    text = wait_for("the gauges to settle", scrape, timeout=15, interval=0.5)
    assert (
        metric_sample(text, "kueue_quota_reserved_workloads_total", cluster_queue=cq_name, priority_class="", **role)
        == 1
    )
    assert metric_sample(text, "kueue_admitted_workloads_total", cluster_queue=cq_name, priority_class="", **role) == 1
    assert metric_sample(text, "kueue_admission_wait_time_seconds_count", cluster_queue=cq_name, **role) == 1
    assert metric_sample(text, "kueue_quota_reserved_wait_time_seconds_count", cluster_queue=cq_name, **role) == 1
    assert metric_sample(text, "kueue_admitted_active_workloads", cluster_queue=cq_name, **role) == 1
    assert metric_sample(text, "kueue_reserving_active_workloads", cluster_queue=cq_name, **role) == 1
    assert metric_sample(text, "kueue_pending_workloads", cluster_queue=cq_name, status="active", **role) == 0
    assert metric_sample(text, "kueue_cluster_queue_status", cluster_queue=cq_name, status="active", **role) == 1
    assert metric_sample(text, "kueue_cluster_queue_status", cluster_queue=cq_name, status="pending", **role) == 0
    assert (metric_sample(text, "kueue_admission_attempts_total", result="success", **role) or 0) >= 1
    assert (metric_sample(text, "kueue_admission_attempts_total", result="inadmissible", **role) or 0) >= 1
    assert (
        metric_sample(text, "kueue_local_queue_admitted_active_workloads", name="q", namespace=namespace, **role) == 1
    )
    if metric_sample(text, "kueue_cluster_queue_nominal_quota", **fr) is not None:
        assert metric_sample(text, "kueue_cluster_queue_nominal_quota", **fr) == 2
        assert metric_sample(text, "kueue_cluster_queue_resource_usage", **fr) == 1
        assert metric_sample(text, "kueue_cluster_queue_borrowing_limit", **fr) == float("inf")
