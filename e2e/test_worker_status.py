"""Status the worker keeps on other objects: Cohort status, ClusterQueue usage as finished pods of a
running Job become reclaimable, and Workload `spec.priority` following its WorkloadPriorityClass."""

from __future__ import annotations

import json
from typing import Any

from e2e.conftest import Kubectl
from e2e.helpers import (
    ClusterObjects,
    cluster_queue,
    cond,
    flavor,
    job,
    local_queue,
    submit,
    wait_for,
    wait_workload,
    when,
    workload_of,
)


def reserved(kubectl: Kubectl, cq: str) -> dict[str, Any] | None:
    status = kubectl.get("clusterqueue", cq).get("status") or {}
    usage = status.get("flavorsReservation") or []
    return usage[0]["resources"][0] if usage else None  # type: ignore[no-any-return]


def test_cohort_status_and_borrowed_zero(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> None:
    rf, co, cq = objs.name("rf"), objs.name("co"), objs.name("cq")
    objs.apply(flavor(rf))
    objs.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": co}, "spec": {}})
    objs.apply(cluster_queue(cq, rf, "2", cohort=co))
    # Nothing borrowed: upstream's object still shows borrowed "0" (a Quantity is never omitted).
    assert wait_for("usage published", lambda: reserved(kubectl, cq)) == {"name": "cpu", "total": "0", "borrowed": "0"}
    # The local stack runs without fair sharing: a Cohort's status has no fairSharing.
    assert "fairSharing" not in (kubectl.get("cohort", co).get("status") or {})


def test_reclaimable_pods_release_quota_while_the_job_runs(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    rf, cq = objs.name("rf"), objs.name("cq")
    objs.apply(flavor(rf))
    objs.apply(cluster_queue(cq, rf, "4"))
    objs.apply(local_queue(namespace, "lq", cq))
    j = job(namespace, "reclaim", "lq", run_for="10s")
    j["spec"].update({"parallelism": 3, "completions": 4})
    submit(kubectl, j)
    wait_workload(kubectl, namespace, "reclaim", "Admitted")
    assert wait_for("3 CPUs reserved", lambda: (r := reserved(kubectl, cq)) and r["total"] == "3" and r) is not None
    # The first 3 pods succeed after 10 s; 1 remains for 3 slots, so 2 pods' quota is given back.
    # The Job controller may count the 3 successes over more than one status update, and the Job
    # reconciler follows each (2 succeeded: 1 reclaimable): wait for the count of all three.
    wl = wait_for(
        "reclaimablePods",
        lambda: (
            (w := workload_of(kubectl, namespace, "reclaim"))
            and sum(r.get("count", 0) for r in (w.get("status") or {}).get("reclaimablePods") or ()) >= 2
            and w
        ),
        timeout=60,
    )
    assert wl["status"]["reclaimablePods"] == [{"name": "main", "count": 2}]
    assert (
        wait_for("1 CPU reserved", lambda: (r := reserved(kubectl, cq)) and r["total"] == "1" and r, timeout=10)
        is not None
    )


def test_priority_class_value_change_reaches_the_workload(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    rf, cq, wpc = objs.name("rf"), objs.name("cq"), objs.name("prio")
    objs.apply(flavor(rf))
    objs.apply(cluster_queue(cq, rf, "1"))
    objs.apply(local_queue(namespace, "lq", cq))
    objs.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": wpc},
            "value": 100,
        }
    )
    submit(kubectl, job(namespace, "prio", "lq", labels={"kueue.x-k8s.io/priority-class": wpc}))
    wl = wait_workload(kubectl, namespace, "prio", "Admitted")
    assert wl["spec"]["priority"] == 100
    kubectl("patch", "workloadpriorityclass", wpc, "--type=merge", "-p", json.dumps({"value": 250}))
    wait_for(
        "priority 250",
        lambda: (w := workload_of(kubectl, namespace, "prio")) and w["spec"].get("priority") == 250 and w,
    )


def test_topology_flavor_waits_for_its_topology_then_places_the_job_on_one_host(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    """TopologyNotFound until the flavor's Topology exists (upstream's ClusterQueue Active reason); a Job
    requiring one host is then admitted with a topology assignment naming a host of the flavor, and its
    pods are ungated onto that host."""
    rf, cq, topology = objs.name("rf"), objs.name("cq"), objs.name("topo")
    tas_flavor = flavor(rf)
    tas_flavor["spec"]["topologyName"] = topology
    objs.apply(tas_flavor)
    objs.apply(cluster_queue(cq, rf, "2"))

    def active() -> dict[str, Any]:
        return cond(kubectl.get("clusterqueue", cq), "Active")

    inactive = wait_for("TopologyNotFound", lambda: when(active(), lambda c: c.get("reason") == "TopologyNotFound"))
    assert inactive["message"] == (
        f'Can\'t admit new workloads: there is no Topology "{topology}" for TAS flavor "{rf}".'
    )
    objs.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": topology},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        }
    )
    wait_for("Active", lambda: when(active(), lambda c: c.get("reason") == "Ready"))
    objs.apply(local_queue(namespace, "lq", cq))
    j = job(namespace, "tas", "lq", run_for=None)
    j["spec"]["template"].setdefault("metadata", {})["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"
    }
    submit(kubectl, j)

    def placed() -> dict[str, Any] | None:
        w = workload_of(kubectl, namespace, "tas")
        if not w or cond(w, "Admitted").get("status") != "True":
            return None
        return w

    wl = wait_for("admitted with a topology assignment", placed)
    assert wl["spec"]["podSets"][0]["topologyRequest"]["required"] == "kubernetes.io/hostname"
    assignment = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert assignment["levels"] == ["kubernetes.io/hostname"]
    node_names = {n["metadata"]["name"] for n in kubectl.get("nodes", "-l", "instance-type=on-demand")["items"]}

    def on_one_host() -> set[str] | None:
        pods = kubectl.get("pods", "-n", namespace, "-l", "job-name=tas")["items"]
        hosts = {(p["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname") for p in pods}
        ungated = pods and all(not p["spec"].get("schedulingGates") for p in pods)
        return hosts if ungated and len(hosts) == 1 and hosts <= node_names else None

    wait_for("pods ungated onto the assigned host", on_one_host)
    assert kubectl.get("job", "tas", "-n", namespace)["spec"].get("suspend") is False
