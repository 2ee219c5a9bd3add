"""Deployments and StatefulSets end to end: queued, admitted, scaled and deleted.

A Deployment's pods are each a serving Workload of the pod integration; a StatefulSet is one pod
group admitted all or nothing, held (quota released) at zero replicas. The pods run agnhost's
`netexec`, which kwok keeps Running and Ready until deleted.
"""

from __future__ import annotations

import json
from typing import Any

from e2e.conftest import Kubectl
from e2e.helpers import cond, usage, wait_for, workloads

Q = "kueue.x-k8s.io/queue-name"


def serving(
    kind: str, name: str, ns: str, *, replicas: int, cpu: str, queue: str | None = "user-queue"
) -> dict[str, Any]:
    labels = {Q: queue} if queue else {}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            **({"serviceName": name} if kind == "StatefulSet" else {}),
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": ["netexec"],
                            "resources": {"requests": {"cpu": cpu}},
                        }
                    ],
                },
            },
        },
    }


def ready(kubectl: Kubectl, kind: str, ns: str, name: str) -> int:
    return int((kubectl.get(kind.lower(), "-n", ns, name).get("status") or {}).get("readyReplicas") or 0)


def scale(kubectl: Kubectl, kind: str, ns: str, name: str, replicas: int) -> None:
    kubectl("patch", kind.lower(), "-n", ns, name, "--type=merge", "-p", json.dumps({"spec": {"replicas": replicas}}))


def admitted(wls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [w for w in wls if cond(w, "Admitted").get("status") == "True"]


def test_deployment_pods_are_admitted_one_by_one_scaled_and_released(
    kubectl: Kubectl,
    namespace: str,
    pod_quota: str,
) -> None:
    kubectl("create", "-f", "-", input=json.dumps(serving("Deployment", "web", namespace, replicas=3, cpu="2")))
    template = kubectl.get("deployment", "-n", namespace, "web")["spec"]["template"]["metadata"]
    assert template["labels"][Q] == "user-queue" and template["labels"]["kueue.x-k8s.io/managed"] == "true"
    wait_for("3 ready replicas", lambda: ready(kubectl, "Deployment", namespace, "web") == 3, timeout=60)
    assert len(admitted(workloads(kubectl, namespace))) == 3
    wait_for("6 CPUs in use", lambda: usage(kubectl.get("clusterqueue", pod_quota)) == "6")
    # Scaling up past the quota: the fourth pod waits, gated, with its Workload pending.
    scale(kubectl, "Deployment", namespace, "web", 5)
    wait_for(
        "5 Workloads, 4 admitted",
        lambda: len(workloads(kubectl, namespace)) == 5 and len(admitted(workloads(kubectl, namespace))) == 4,
        timeout=60,
    )
    assert ready(kubectl, "Deployment", namespace, "web") <= 4
    kubectl("delete", "deployment", "-n", namespace, "web")
    wait_for("the Workloads gone with the pods", lambda: not workloads(kubectl, namespace), timeout=90)
    wait_for("no CPU in use", lambda: usage(kubectl.get("clusterqueue", pod_quota)) == "0", timeout=30)


def test_deployment_without_queue_is_untouched(kubectl: Kubectl, namespace: str, pod_quota: str) -> None:
    kubectl(
        "create", "-f", "-", input=json.dumps(serving("Deployment", "free", namespace, replicas=1, cpu="1", queue=None))
    )
    template = kubectl.get("deployment", "-n", namespace, "free")["spec"]["template"]["metadata"]
    assert "annotations" not in template and template["labels"] == {"app": "free"}
    wait_for("1 ready replica", lambda: ready(kubectl, "Deployment", namespace, "free") == 1, timeout=60)
    assert workloads(kubectl, namespace) == []


def test_statefulset_is_one_group_held_at_zero_and_released_on_delete(
    kubectl: Kubectl,
    namespace: str,
    pod_quota: str,
) -> None:
    # 3 x 3 CPUs cannot fit 8: all or nothing, no pod starts.
    kubectl("create", "-f", "-", input=json.dumps(serving("StatefulSet", "db", namespace, replicas=3, cpu="3")))
    wl = wait_for("the group Workload", lambda: next(iter(workloads(kubectl, namespace)), None))
    assert wl["spec"]["podSets"][0]["count"] == 3
    wait_for(
        "it stays pending",
        lambda: (
            cond(kubectl.get("workload", "-n", namespace, wl["metadata"]["name"]), "QuotaReserved").get("reason")
            not in (None, "PendingEvaluation")
        ),
    )
    assert ready(kubectl, "StatefulSet", namespace, "db") == 0
    kubectl("delete", "statefulset", "-n", namespace, "db")
    wait_for("its Workload gone", lambda: not workloads(kubectl, namespace), timeout=60)
    # 2 x 3 CPUs fit: admitted together, all pods ready.
    kubectl("create", "-f", "-", input=json.dumps(serving("StatefulSet", "db", namespace, replicas=2, cpu="3")))
    wait_for("2 ready replicas", lambda: ready(kubectl, "StatefulSet", namespace, "db") == 2, timeout=90)
    [wl] = workloads(kubectl, namespace)
    assert cond(wl, "Admitted").get("status") == "True"
    # ClusterQueue status follows Workload changes within the 1 s batch period (upstream's UpdatesBatchPeriod).
    wait_for("6 CPUs in use", lambda: usage(kubectl.get("clusterqueue", pod_quota)) == "6")
    # Only to and from zero.
    refused = kubectl(
        "patch", "statefulset", "-n", namespace, "db", "--type=merge", "-p", '{"spec":{"replicas":3}}', check=False
    )
    assert refused.returncode != 0 and "spec.replicas: Invalid value: 3: field is immutable" in refused.stderr
    scale(kubectl, "StatefulSet", namespace, "db", 0)
    wait_for(
        "the Workload on hold",
        lambda: (
            cond(kubectl.get("workload", "-n", namespace, wl["metadata"]["name"]), "QuotaReserved").get("reason")
            == "OnHold"
        ),
        timeout=60,
    )
    wait_for("no CPU in use", lambda: usage(kubectl.get("clusterqueue", pod_quota)) == "0", timeout=30)
    wait_for(
        "the pods gone",
        lambda: int((kubectl.get("statefulset", "-n", namespace, "db").get("status") or {}).get("replicas") or 0) == 0,
        timeout=60,
    )
    scale(kubectl, "StatefulSet", namespace, "db", 2)
    wait_for("2 ready replicas again", lambda: ready(kubectl, "StatefulSet", namespace, "db") == 2, timeout=90)
    assert kubectl.get("workload", "-n", namespace, wl["metadata"]["name"])["metadata"]["uid"] == wl["metadata"]["uid"]
    kubectl("delete", "statefulset", "-n", namespace, "db")
    wait_for("its Workload gone", lambda: not workloads(kubectl, namespace), timeout=90)
    wait_for("no CPU in use", lambda: usage(kubectl.get("clusterqueue", pod_quota)) == "0", timeout=30)
