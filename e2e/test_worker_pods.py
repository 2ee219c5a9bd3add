"""Plain Pods and pod groups end to end: gated by the webhook, admitted and ungated by the worker.

The pods are the "Run Plain Pods" examples (`kueue-pod.yaml`, `kueue-pod-group.yaml`). kwok runs
them; it completes only pods owned by a Job, so plain pods stay Running and the tests delete them
to see the Workload released.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from e2e.conftest import Kubectl
from e2e.helpers import cond, usage, wait_for, when, workloads

GATE = "kueue.x-k8s.io/admission"

KUEUE_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "kueue-sleep", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
    "spec": {
        "containers": [
            {
                "name": "sleep",
                "image": "busybox",
                "command": ["sleep"],
                "args": ["3s"],
                "resources": {"requests": {"cpu": "3"}},
            }
        ],
        "restartPolicy": "OnFailure",
    },
}


def group_pod(
    name: str, *, group: str = "sample-group", total: int = 2, text: str = "leader", cpu: str = "3"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/pod-group-name": group},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": str(total)},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "sleep",
                    "image": "busybox",
                    "command": ["sh", "-c", f'echo "hello world from the {text} pod" && sleep 3'],
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
        },
    }


def create_pods(kubectl: Kubectl, ns: str, *pods: dict[str, Any]) -> None:
    items = []
    for pod in pods:
        obj = copy.deepcopy(pod)
        obj["metadata"]["namespace"] = ns
        items.append(obj)
    kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def pod(kubectl: Kubectl, ns: str, name: str) -> dict[str, Any]:
    return kubectl.get("pod", "-n", ns, name)


def is_gated(p: dict[str, Any]) -> bool:
    return any(g["name"] == GATE for g in p["spec"].get("schedulingGates") or ())


def assert_started(p: dict[str, Any], *, podset: str, cluster_queue: str) -> None:
    assert not is_gated(p), p["spec"].get("schedulingGates")
    assert p["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
    assert {"key": "e2e-pods", "operator": "Exists", "effect": "NoSchedule"} in p["spec"]["tolerations"]
    labels = p["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/podset"] == podset
    assert labels["kueue.x-k8s.io/local-queue-name"] == "user-queue"
    assert labels["kueue.x-k8s.io/cluster-queue-name"] == cluster_queue


def test_plain_pod_is_admitted_ungated_runs_and_is_released_when_deleted(
    kubectl: Kubectl, namespace: str, pod_quota: str
) -> None:
    create_pods(kubectl, namespace, KUEUE_POD)
    wl = wait_for(
        "the Workload to be admitted",
        lambda: next((w for w in workloads(kubectl, namespace) if cond(w, "Admitted").get("status") == "True"), None),
    )
    assert wl["metadata"]["name"].startswith("pod-kueue-sleep-")
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    assert wl["spec"]["podSets"][0]["name"] == "main" and wl["spec"]["podSets"][0]["count"] == 1
    running = wait_for(
        "the pod to run on an on-demand node",
        lambda: when(
            pod(kubectl, namespace, "kueue-sleep"), lambda p: (p.get("status") or {}).get("phase") == "Running"
        ),
    )
    assert running["spec"]["nodeName"].startswith("kwok-on-demand-")
    assert_started(running, podset="main", cluster_queue=pod_quota)
    cq = wait_for(
        "CQ usage 3",
        lambda: when(
            kubectl.get("clusterqueue", pod_quota), lambda c: (c.get("status") or {}).get("admittedWorkloads") == 1
        ),
    )
    assert usage(cq) == "3" and usage(cq, "flavorsReservation") == "3"

    kubectl("delete", "pod", "-n", namespace, "kueue-sleep", "--wait=false")
    wait_for("the pod to be gone", lambda: not kubectl.get("pods", "-n", namespace)["items"], timeout=20)

    def released() -> bool:
        left = workloads(kubectl, namespace)
        return not left or all(
            cond(w, "Finished").get("status") == "True"
            and "kueue.x-k8s.io/resource-in-use" not in (w["metadata"].get("finalizers") or ())
            for w in left
        )

    wait_for("the Workload to be finished and released", released, timeout=20)
    wait_for(
        "CQ usage back to 0",
        lambda: when(
            kubectl.get("clusterqueue", pod_quota),
            lambda c: c["status"].get("admittedWorkloads") == 0 and usage(c) == "0",
        ),
    )


def test_pod_group_of_two_is_admitted_and_both_pods_ungated(kubectl: Kubectl, namespace: str, pod_quota: str) -> None:
    create_pods(kubectl, namespace, group_pod("sample-leader"), group_pod("sample-worker", text="worker"))
    wl = wait_for(
        "the group Workload to be admitted",
        lambda: when(
            kubectl("get", "workload", "-n", namespace, "sample-group", "-o", "json", check=False),
            lambda r: r.returncode == 0 and cond(json.loads(r.stdout), "Admitted").get("status") == "True",
        ),
    )
    wl = json.loads(wl.stdout)
    assert wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
    assert sorted(r["name"] for r in wl["metadata"]["ownerReferences"]) == ["sample-leader", "sample-worker"]
    assert not any(r.get("controller") for r in wl["metadata"]["ownerReferences"])
    [ps] = wl["spec"]["podSets"]  # same shape: one role
    assert ps["count"] == 2
    for name in ("sample-leader", "sample-worker"):
        p = wait_for(
            f"{name} to run",
            lambda name=name: when(
                pod(kubectl, namespace, name), lambda q: (q.get("status") or {}).get("phase") == "Running"
            ),
        )
        assert_started(p, podset=ps["name"], cluster_queue=pod_quota)
    cq = wait_for(
        "CQ usage 6",
        lambda: when(
            kubectl.get("clusterqueue", pod_quota), lambda c: (c.get("status") or {}).get("admittedWorkloads") == 1
        ),
    )
    assert usage(cq) == "6"

    # Kueue never recreates group pods and waits for replacements of failed ones; marking the group
    # unretriable before deleting its pods ends it (Finished), which releases finalizers and quota.
    kubectl("annotate", "pods", "-n", namespace, "--all", "kueue.x-k8s.io/retriable-in-group=false")
    kubectl("delete", "pods", "-n", namespace, "--all", "--wait=false")
    wait_for("the pods to be gone", lambda: not kubectl.get("pods", "-n", namespace)["items"], timeout=20)
    wl = kubectl("get", "workload", "-n", namespace, "sample-group", "-o", "json", check=False)
    if wl.returncode == 0:  # not yet collected
        assert cond(json.loads(wl.stdout), "Finished")["message"] == "Pods succeeded: 0/2."
    wait_for(
        "CQ usage back to 0",
        lambda: when(
            kubectl.get("clusterqueue", pod_quota),
            lambda c: c["status"].get("admittedWorkloads") == 0 and usage(c) == "0",
        ),
    )


def test_pod_group_missing_a_pod_stays_gated_until_it_arrives(kubectl: Kubectl, namespace: str, pod_quota: str) -> None:
    create_pods(kubectl, namespace, group_pod("sample-leader"))
    time.sleep(2)  # several reconcile passes
    # The reconciler's event is sent asynchronously; once it is out, the checks below follow at least one pass.
    events = wait_for(
        "the ErrWorkloadCompose event",
        lambda: when(
            kubectl.get("events.events.k8s.io", "-n", namespace)["items"],
            lambda evs: any(e.get("reason") == "ErrWorkloadCompose" for e in evs),
        ),
    )
    assert workloads(kubectl, namespace) == []
    assert is_gated(pod(kubectl, namespace, "sample-leader"))
    assert usage(kubectl.get("clusterqueue", pod_quota)) == "0"
    assert any(
        e.get("reason") == "ErrWorkloadCompose"
        and e.get("note") == "'sample-group' group has fewer runnable pods than expected"
        for e in events
    ), [e.get("reason") for e in events]

    create_pods(kubectl, namespace, group_pod("sample-worker", text="worker"))
    wait_for(
        "both pods ungated",
        lambda: all(not is_gated(pod(kubectl, namespace, n)) for n in ("sample-leader", "sample-worker")),
    )
    wl = kubectl.get("workload", "-n", namespace, "sample-group")
    assert cond(wl, "Admitted").get("status") == "True"


def test_preempted_pod_is_deleted(kubectl: Kubectl, namespace: str, pod_quota: str) -> None:
    kubectl(
        "patch",
        "clusterqueue",
        pod_quota,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}),
    )
    wpc = f"high-{namespace}"
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": wpc},
            "value": 1000,
        }
    )
    try:
        low = copy.deepcopy(KUEUE_POD)
        low["metadata"]["name"] = "low"
        low["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "6"
        create_pods(kubectl, namespace, low)
        wait_for(
            "the low pod to run", lambda: (pod(kubectl, namespace, "low").get("status") or {}).get("phase") == "Running"
        )
        high = copy.deepcopy(low)
        high["metadata"]["name"] = "high"
        high["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = wpc
        create_pods(kubectl, namespace, high)
        wait_for(
            "the low pod to be deleted",
            lambda: kubectl("get", "pod", "-n", namespace, "low", check=False).returncode != 0,
        )
        wait_for(
            "the high pod to run",
            lambda: (pod(kubectl, namespace, "high").get("status") or {}).get("phase") == "Running",
        )
        # The Stopped event is sent asynchronously, after the pod's deletion.
        stopped = wait_for(
            "the low pod's Stopped event",
            lambda: [
                e
                for e in kubectl.get("events.events.k8s.io", "-n", namespace)["items"]
                if e.get("reason") == "Stopped" and e["regarding"]["name"] == "low"
            ],
        )
        assert stopped and stopped[0]["note"].startswith("Preempted to accommodate a workload"), stopped
        # The preempted pod's Workload lost its owner: finished and released (then collected).
        wait_for(
            "the low Workload released",
            lambda: all(
                cond(w, "Finished").get("status") == "True"
                for w in workloads(kubectl, namespace)
                if w["metadata"]["name"].startswith("pod-low-")
            ),
        )
    finally:
        kubectl("delete", "workloadpriorityclass", wpc, "--wait=false", check=False)


def finish_pods(kubectl: Kubectl, ns: str, *names: str) -> None:
    """What a kubelet reports once the containers exit 0 (kwok never completes plain pods)."""
    for name in names:
        kubectl(
            "patch",
            "pod",
            "-n",
            ns,
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"phase":"Succeeded"}}',
        )


def test_higher_priority_pod_group_preempts_the_lower_priority_group(
    kubectl: Kubectl, namespace: str, pod_quota: str
) -> None:
    """Upstream's "should allow to preempt the lower priority group" (test/e2e/singlecluster/baseline/pod_test.go):
    a running group of two 2-CPU pods in a 5-CPU queue gives way to two 1-CPU pods of a higher priority."""
    flavor = f"on-demand-{namespace[4:]}"
    kubectl(
        "patch",
        "clusterqueue",
        pod_quota,
        "--type=merge",
        "-p",
        json.dumps(
            {
                "spec": {
                    "preemption": {"withinClusterQueue": "LowerPriority"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 5}]}],
                        }
                    ],
                }
            }
        ),
    )
    wpc = f"high-{namespace}"
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": wpc},
            "value": 100,
        }
    )

    def group(name: str, cpu: str, **labels: str) -> list[dict[str, Any]]:
        pods = [group_pod(f"{name}-{i}", group=name, cpu=cpu) for i in range(2)]
        for p in pods:
            p["metadata"]["labels"].update(labels)
            p["spec"]["terminationGracePeriodSeconds"] = 1
        return pods

    def ungated(*names: str) -> bool:
        return all(not is_gated(pod(kubectl, namespace, n)) for n in names)

    def gone(*names: str) -> bool:
        return all(kubectl("get", "pod", "-n", namespace, n, check=False).returncode != 0 for n in names)

    low_pods = ("default-priority-group-0", "default-priority-group-1")
    high_pods = ("high-priority-group-0", "high-priority-group-1")
    try:
        create_pods(kubectl, namespace, *group("default-priority-group", "2"))
        wait_for(
            "the default-priority group to run",
            lambda: all((pod(kubectl, namespace, n).get("status") or {}).get("phase") == "Running" for n in low_pods),
        )

        started = time.monotonic()
        create_pods(kubectl, namespace, *group("high-priority-group", "1", **{"kueue.x-k8s.io/priority-class": wpc}))
        wait_for("the high-priority pods ungated", lambda: ungated(*high_pods), timeout=10)  # upstream's util.Timeout
        took = time.monotonic() - started
        # Upstream releases the preempted Workload as soon as its pods are inactive (~0.6 s in its runs).
        assert took < 5, f"the preemptor's pods were ungated {took:.1f}s after creation"

        def requeued() -> dict[str, Any] | None:
            wl = kubectl.get("workload", "-n", namespace, "default-priority-group")
            return wl if cond(wl, "QuotaReserved").get("status") == "False" else None

        wl = wait_for("the default-priority Workload released", requeued, timeout=10)
        evicted, again = cond(wl, "Evicted"), cond(wl, "Requeued")
        assert (evicted.get("status"), evicted.get("reason")) == ("True", "Preempted"), evicted
        assert (again.get("status"), again.get("reason")) == ("True", "Preempted"), again
        assert cond(wl, "Admitted").get("status") == "False"
        assert not (wl.get("status") or {}).get("admission")

        stopped = wait_for(
            "Stopped events on the default-priority pods",
            lambda: when(
                {
                    e["regarding"]["name"]
                    for e in kubectl.get("events.events.k8s.io", "-n", namespace)["items"]
                    if e.get("reason") == "Stopped" and "Preempted" in (e.get("note") or "")
                },
                lambda names: names >= set(low_pods),
            ),
            timeout=45,
        )
        assert stopped >= set(low_pods)
        wait_for(
            "the default-priority pods to fail",
            lambda: all((pod(kubectl, namespace, n).get("status") or {}).get("phase") == "Failed" for n in low_pods),
            timeout=45,
        )

        replacements = [group_pod(f"replacement-for-{n}", group="default-priority-group", cpu="2") for n in low_pods]
        create_pods(kubectl, namespace, *replacements)
        wait_for("the preempted pods to be deleted", lambda: gone(*low_pods), timeout=45)
        assert ungated(*high_pods)

        finish_pods(kubectl, namespace, *high_pods)
        wait_for(
            "the high-priority Workload finished",
            lambda: (
                cond(kubectl.get("workload", "-n", namespace, "high-priority-group"), "Finished").get("status")
                == "True"
            ),
            timeout=90,
        )
        replaced = [r["metadata"]["name"] for r in replacements]
        wait_for("the replacement pods ungated", lambda: ungated(*replaced), timeout=10)
        finish_pods(kubectl, namespace, *replaced)
        wait_for(
            "the default-priority Workload finished",
            lambda: (
                cond(kubectl.get("workload", "-n", namespace, "default-priority-group"), "Finished").get("status")
                == "True"
            ),
            timeout=90,
        )
    finally:
        kubectl("delete", "workloadpriorityclass", wpc, "--wait=false", check=False)
