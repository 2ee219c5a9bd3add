"""RayCluster and RayJob end to end, with the real KubeRay operator running them.

One module-scoped fixture starts KubeRay v1.6.2 (e2e/operators.py, as `make up INTEGRATIONS=kuberay`)
beside the session's stack and restarts our server with the ray.io frameworks on. For each kind the
tests check what a user sees: a queued object held (suspended, no pod) while its ClusterQueue is
full; once there is room, admitted with one podSet per part of the cluster and the right counts (a
RayJob's K8sJobMode submitter included), unsuspended, and KubeRay's pods (head and workers) running
on the flavor's nodes; deleted, its Workload goes and the ClusterQueue's usage is back to zero.

Marked `kuberay`: KubeRay's cold build is long (README), so `make test` leaves this module out and
`make e2e-ray` runs it after upstream's extended suite has built KubeRay (.ci/run). kwok runs the
pods (e2e/kwok-stages.yaml): no Ray runs in them, so a RayJob never finishes here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import (
    QUEUE_LABEL,
    cluster_queue,
    cond,
    create,
    flavor,
    job,
    local_queue,
    reserved,
    wait_for,
    wait_workload,
    workload_of,
)

pytestmark = [pytest.mark.local_stack, pytest.mark.kuberay]

NODE_LABEL = {"instance-type": "on-demand"}  # the kwok-on-demand-* nodes have it
NODE_TYPE = "ray.io/node-type"  # KubeRay's label on a cluster's head and worker pods (not a submitter's)
WAIT = 90.0  # generous for a loaded 2-core machine; the polls return as soon as the state is there
POLL = 0.25


@pytest.fixture(scope="module")
def kuberay(kubectl: Kubectl) -> Iterator[list[str]]:
    """KubeRay and our server with its frameworks; the namespaces the tests made, waited for at the end
    while KubeRay (which holds its objects' finalizers) still runs."""
    stack = local_stack(kubectl)
    started = time.monotonic()
    try:
        stack.start_integrations(("kuberay",))
    except Exception as exc:
        try:
            stack.stop_integrations()
        finally:
            pytest.fail(f"KubeRay did not start: {exc}", pytrace=False)
    print(f"KubeRay and server up in {time.monotonic() - started:.0f}s")
    namespaces: list[str] = []
    try:
        yield namespaces
    finally:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            left = kubectl("get", "namespaces", "-o", "name", check=False).stdout.split()
            if not any(f"namespace/{ns}" in left for ns in namespaces):
                break
            time.sleep(0.5)
        stack.stop_integrations()


@pytest.fixture
def ns(kuberay: list[str], namespace: str) -> str:
    kuberay.append(namespace)
    return namespace


@dataclass(frozen=True)
class Queue:
    cluster_queue: str
    flavor: str


@pytest.fixture
def queue(kubectl: Kubectl, ns: str) -> Iterator[Queue]:
    """A ClusterQueue of 2 CPUs on a flavor with the on-demand node label, and its LocalQueue `lq` in `ns`."""
    s = uuid.uuid4().hex[:6]
    rf, cq = f"ray-rf-{s}", f"ray-cq-{s}"
    kubectl.apply(flavor(rf))
    kubectl.apply(cluster_queue(cq, rf, "2"))
    kubectl.apply(local_queue(ns, "lq", cq))
    wait_for(
        "the ClusterQueue to be active", lambda: cond(kubectl.get("clusterqueue", cq), "Active").get("status") == "True"
    )
    yield Queue(cq, rf)
    kubectl("delete", "jobs", "-n", ns, "--all", "--wait=false", check=False)
    kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
    kubectl("delete", "resourceflavor", rf, "--wait=false", check=False)


def _template(container: str, cpu: str) -> dict[str, Any]:
    return {
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": container, "image": "rayproject/ray:2.56.0", "resources": {"requests": {"cpu": cpu}}}
            ],
        }
    }


def cluster_spec() -> dict[str, Any]:
    """A head of half a CPU and one worker group `workers` of two replicas of a quarter CPU: one CPU."""
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": _template("ray-head", "500m")},
        "workerGroupSpecs": [
            {
                "groupName": "workers",
                "replicas": 2,
                "minReplicas": 0,
                "maxReplicas": 2,
                "rayStartParams": {},
                "template": _template("ray-worker", "250m"),
            }
        ],
    }


def raycluster(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: "lq"}},
        "spec": cluster_spec(),
    }


def rayjob(name: str, ns: str) -> dict[str, Any]:
    """K8sJobMode: its submitter Job's pod is a podSet of its own (a tenth of a CPU)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: "lq"}},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "submissionMode": "K8sJobMode",
            "submitterPodTemplate": {
                "spec": {"restartPolicy": "Never", **_template("ray-job-submitter", "100m")["spec"]}
            },
            "rayClusterSpec": cluster_spec(),
        },
    }


@dataclass(frozen=True)
class Kind:
    kind: str
    resource: str  # for kubectl
    pod_sets: tuple[tuple[str, int], ...]  # the Workload's (name, count), in order
    cpu: str  # what the Workload reserves


KINDS = {
    "raycluster": Kind("RayCluster", "rayclusters.ray.io", (("head", 1), ("workers", 2)), "1"),
    "rayjob": Kind("RayJob", "rayjobs.ray.io", (("head", 1), ("workers", 2), ("submitter", 1)), "1100m"),
}
BUILD = {"raycluster": raycluster, "rayjob": rayjob}


def suspended(kubectl: Kubectl, ns: str, k: Kind, name: str) -> bool:
    spec = kubectl.get(k.resource, "-n", ns, name)["spec"]
    return bool(spec.get("suspend"))


def cluster_pods(kubectl: Kubectl, ns: str) -> list[dict[str, Any]]:
    """The live head and worker pods of every Ray cluster in `ns` (a RayJob's cluster is named by KubeRay)."""
    items = kubectl.get("pods", "-n", ns, "-l", NODE_TYPE)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


@pytest.mark.parametrize("kind", list(KINDS))
def test_suspended_until_admitted_then_run_by_kuberay_and_quota_released_on_delete(
    kubectl: Kubectl, ns: str, queue: Queue, kind: str
) -> None:
    k = KINDS[kind]
    # 1. A Job takes both CPUs: the Ray object waits, suspended, and KubeRay makes no pod.
    create(kubectl, job(ns, "blocker", "lq", cpu="2"))
    wait_for(
        "the blocker to be admitted",
        lambda: reserved(kubectl, queue.cluster_queue) == (1, "2"),
        timeout=WAIT,
        interval=POLL,
    )
    create(kubectl, BUILD[kind]("ray", ns))
    wl = wait_workload(kubectl, ns, "ray", "QuotaReserved", "False", timeout=WAIT)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == list(k.pod_sets)
    assert "insufficient unused quota for cpu" in cond(wl, "QuotaReserved")["message"]
    assert suspended(kubectl, ns, k, "ray")
    time.sleep(2)
    assert suspended(kubectl, ns, k, "ray") and not cluster_pods(kubectl, ns), "it started without quota"

    # 2. Room: admitted on the flavor with the pod sets' counts; KubeRay makes the head and the workers,
    # which run on the flavor's nodes with its node label.
    kubectl("delete", "job", "-n", ns, "blocker", "--wait=false")
    wl = wait_workload(kubectl, ns, "ray", "Admitted", timeout=WAIT)
    assignments = wl["status"]["admission"]["podSetAssignments"]
    assert [(a["name"], a["count"]) for a in assignments] == list(k.pod_sets)
    assert all(a["flavors"] == {"cpu": queue.flavor} for a in assignments)
    assert not suspended(kubectl, ns, k, "ray")

    def running() -> list[dict[str, Any]] | None:
        ps = cluster_pods(kubectl, ns)
        ok = len(ps) == 3 and all(
            p["status"].get("phase") == "Running"
            and NODE_LABEL.items() <= (p["spec"].get("nodeSelector") or {}).items()
            and p["spec"].get("nodeName", "").startswith("kwok-on-demand-")
            for p in ps
        )
        return ps if ok else None

    ps = wait_for("KubeRay's head and two workers running", running, timeout=WAIT, interval=POLL)
    types = sorted(p["metadata"]["labels"].get("ray.io/node-type", "") for p in ps)
    assert types == ["head", "worker", "worker"]
    assert all(p["metadata"]["labels"].get("kueue.x-k8s.io/podset") in ("head", "workers") for p in ps)
    assert reserved(kubectl, queue.cluster_queue) == (1, k.cpu)

    # 3. Deleted: its Workload goes with it and the quota is free again.
    kubectl("delete", k.resource, "-n", ns, "ray", "--wait=false")
    wait_for("its Workload gone", lambda: workload_of(kubectl, ns, "ray") is None, timeout=WAIT, interval=POLL)
    wait_for(
        "the ClusterQueue's usage back to zero",
        lambda: reserved(kubectl, queue.cluster_queue) == (0, "0"),
        timeout=WAIT,
        interval=POLL,
    )
