"""Concurrent edits by users and admins while Jobs are queued and running: the system shows
upstream's conditions and messages, finalizers hold what is in use, admitted Jobs keep running,
and the worker never needs a restart (no error in its log).

Each test owns uniquely named cluster-scoped objects (`objs`) and deletes them at the end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl
from e2e.helpers import (
    ClusterObjects,
    cluster_queue,
    cond,
    flavor,
    is_admitted,
    job,
    local_queue,
    submit,
    suspended,
    wait_for,
    wait_workload,
    workload_of,
)

FINALIZER = "kueue.x-k8s.io/resource-in-use"


def get(kubectl: Kubectl, *args: str) -> dict[str, Any] | None:
    proc = kubectl("get", *args, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def active(obj: dict[str, Any] | None) -> tuple[str, str, str]:
    c = cond(obj or {}, "Active")
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


def reserved_cpu(cq: dict[str, Any] | None) -> str:
    for fl in ((cq or {}).get("status") or {}).get("flavorsReservation") or ():
        for r in fl.get("resources") or ():
            if r["name"] == "cpu":
                return str(r["total"])
    return ""


def wait_running(kubectl: Kubectl, ns: str, job_name: str) -> None:
    """Admitted, and started: the Job reconciler unsuspends the Job on its own pass after the admission."""
    wait_for(
        f"{job_name}: admitted and running",
        lambda: is_admitted(kubectl, ns, job_name) and not suspended(kubectl, ns, job_name),
    )


def pending_message(kubectl: Kubectl, ns: str, job_name: str) -> str:
    w = workload_of(kubectl, ns, job_name)
    c = cond(w or {}, "QuotaReserved")
    return str(c.get("message", "")) if c.get("status") == "False" else ""


class ServerLog:
    """Error lines our host server/worker logs during one test (local stack only: on another
    cluster the Deployment's logs are not ours to read, and `errors()` is empty)."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.path = kubectl.stack.server_log if kubectl.stack is not None else None
        self.start = self.path.stat().st_size if self.path is not None and self.path.exists() else 0

    def errors(self) -> list[str]:
        if self.path is None:
            return []
        text = self.path.read_bytes()[self.start :].decode(errors="replace")
        return [ln[:300] for ln in text.splitlines() if "Traceback" in ln or '"level":"error"' in ln]


@pytest.fixture(autouse=True)
def server_log(kubectl: Kubectl) -> Iterator[ServerLog]:
    log = ServerLog(kubectl)
    yield log
    assert log.errors() == [], "the server or worker logged errors during the test"


@pytest.fixture
def quota(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> dict[str, str]:
    """One flavor, ClusterQueue `cq` with 2 CPUs and LocalQueue `lq` in the test namespace."""
    names = {"rf": objs.name("edit-rf"), "cq": objs.name("edit-cq"), "lq": "lq"}
    objs.apply(flavor(names["rf"]))
    objs.apply(cluster_queue(names["cq"], names["rf"], "2"))
    objs.apply(local_queue(namespace, "lq", names["cq"]))
    wait_for("ClusterQueue active", lambda: active(get(kubectl, "clusterqueue", names["cq"]))[0] == "True")
    return names


def test_job_relabelled_to_another_queue_while_pending_is_admitted_there(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, quota: dict[str, str]
) -> None:
    empty = objs.name("edit-empty")
    objs.apply(cluster_queue(empty, quota["rf"], "0"))
    objs.apply(local_queue(namespace, "lq-empty", empty))
    submit(kubectl, job(namespace, "mover", "lq-empty"))
    wait_for("pending in the empty queue", lambda: pending_message(kubectl, namespace, "mover"))
    kubectl("label", "job", "-n", namespace, "mover", "kueue.x-k8s.io/queue-name=lq", "--overwrite")
    w = wait_workload(kubectl, namespace, "mover", "Admitted")
    assert w["spec"]["queueName"] == "lq"
    assert w["status"]["admission"]["clusterQueue"] == quota["cq"]
    wait_for("job started", lambda: not suspended(kubectl, namespace, "mover"))


def test_quota_shrunk_below_usage_keeps_running_jobs_and_holds_new_ones(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, quota: dict[str, str]
) -> None:
    submit(kubectl, job(namespace, "run-1", "lq"), job(namespace, "run-2", "lq"))
    for name in ("run-1", "run-2"):
        wait_running(kubectl, namespace, name)
    objs.apply(cluster_queue(quota["cq"], quota["rf"], "1"))  # nominal 2 → 1 under 2 CPUs of usage
    submit(kubectl, job(namespace, "late", "lq"))
    msg = wait_for("late pending", lambda: pending_message(kubectl, namespace, "late"))
    assert msg.startswith("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "), msg
    # Shrinking quota does not evict: both keep running and the status shows usage above nominal.
    assert is_admitted(kubectl, namespace, "run-1") and is_admitted(kubectl, namespace, "run-2")
    assert not suspended(kubectl, namespace, "run-1") and not suspended(kubectl, namespace, "run-2")
    wait_for("reservation 2 shown", lambda: reserved_cpu(get(kubectl, "clusterqueue", quota["cq"])) == "2")
    kubectl("delete", "job", "-n", namespace, "run-1")
    wait_for("reservation 1", lambda: reserved_cpu(get(kubectl, "clusterqueue", quota["cq"])) == "1")
    assert not is_admitted(kubectl, namespace, "late")  # 1 used of 1: still no room
    kubectl("delete", "job", "-n", namespace, "run-2")
    wait_workload(kubectl, namespace, "late", "Admitted")


def test_cluster_queue_deleted_while_in_use_is_held_until_its_jobs_are_gone(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, quota: dict[str, str]
) -> None:
    cq = quota["cq"]
    submit(kubectl, job(namespace, "big", "lq", cpu="2"), job(namespace, "waiting", "lq"))
    wait_running(kubectl, namespace, "big")
    wait_for("waiting pending", lambda: pending_message(kubectl, namespace, "waiting"))
    kubectl("delete", "clusterqueue", cq, "--wait=false")
    obj = wait_for(
        "ClusterQueue terminating",
        lambda: (o := get(kubectl, "clusterqueue", cq)) and active(o)[1] == "Terminating" and o,
    )
    assert obj["metadata"].get("deletionTimestamp") and FINALIZER in obj["metadata"]["finalizers"]
    assert active(obj) == ("False", "Terminating", "Can't admit new workloads; clusterQueue is terminating")
    # The admitted Job keeps running; the pending one is told why it waits.
    assert is_admitted(kubectl, namespace, "big") and not suspended(kubectl, namespace, "big")
    wait_for(
        "pending message names the inactive queue",
        lambda: pending_message(kubectl, namespace, "waiting") == f"ClusterQueue {cq} is inactive",
    )
    kubectl("delete", "job", "-n", namespace, "big")
    wait_for("ClusterQueue gone once nothing is admitted in it", lambda: get(kubectl, "clusterqueue", cq) is None)
    wait_for(
        "pending message names the missing queue",
        lambda: pending_message(kubectl, namespace, "waiting") == f"ClusterQueue {cq} doesn't exist",
    )
    lq = wait_for(
        "LocalQueue inactive",
        lambda: (o := get(kubectl, "localqueue", "-n", namespace, "lq")) and active(o)[0] == "False" and o,
    )
    assert active(lq) == ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    assert not is_admitted(kubectl, namespace, "waiting")
    # Recreated, the queue admits the Job that waited.
    objs.apply(cluster_queue(cq, quota["rf"], "2"))
    wait_workload(kubectl, namespace, "waiting", "Admitted")


def test_local_queue_pointing_at_a_missing_cluster_queue(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, quota: dict[str, str]
) -> None:
    missing = objs.name("edit-missing")
    objs.apply(local_queue(namespace, "lq-missing", missing))
    lq = wait_for(
        "LocalQueue status",
        lambda: (o := get(kubectl, "localqueue", "-n", namespace, "lq-missing")) and active(o)[0] == "False" and o,
    )
    assert active(lq) == ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    submit(kubectl, job(namespace, "lost", "lq-missing"))
    w = wait_workload(kubectl, namespace, "lost", "QuotaReserved", "False", reason="Inadmissible")  # gate off
    assert cond(w, "QuotaReserved")["message"] == f"ClusterQueue {missing} doesn't exist"
    assert suspended(kubectl, namespace, "lost")
    objs.apply(cluster_queue(missing, quota["rf"], "1"))
    wait_workload(kubectl, namespace, "lost", "Admitted")
    wait_for(
        "LocalQueue active", lambda: active(get(kubectl, "localqueue", "-n", namespace, "lq-missing"))[0] == "True"
    )


def test_namespace_relabelled_out_of_the_selector(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> None:
    rf, cq = objs.name("edit-rf"), objs.name("edit-sel")
    objs.apply(flavor(rf))
    spec_cq = cluster_queue(cq, rf, "4")
    spec_cq["spec"]["namespaceSelector"] = {"matchLabels": {"edit-team": "a"}}
    objs.apply(spec_cq)
    objs.apply(local_queue(namespace, "lq", cq))
    kubectl("label", "namespace", namespace, "edit-team=a")
    submit(kubectl, job(namespace, "inside", "lq"))
    wait_running(kubectl, namespace, "inside")
    kubectl("label", "namespace", namespace, "edit-team=b", "--overwrite")
    submit(kubectl, job(namespace, "outside", "lq"))
    w = wait_workload(kubectl, namespace, "outside", "QuotaReserved", "False")
    assert cond(w, "QuotaReserved")["message"] == "workload namespace doesn't match ClusterQueue selector"
    assert is_admitted(kubectl, namespace, "inside") and not suspended(kubectl, namespace, "inside")
    kubectl("label", "namespace", namespace, "edit-team=a", "--overwrite")
    wait_workload(kubectl, namespace, "outside", "Admitted")


def test_resource_flavor_deleted_while_in_use_is_held_by_its_finalizer(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, quota: dict[str, str]
) -> None:
    rf, cq = quota["rf"], quota["cq"]
    submit(kubectl, job(namespace, "on-flavor", "lq"))
    wait_running(kubectl, namespace, "on-flavor")
    kubectl("delete", "resourceflavor", rf, "--wait=false")
    # As upstream: a flavor some ClusterQueue names is kept (finalizer), and the queue stays active.
    obj = wait_for(
        "flavor terminating",
        lambda: (o := get(kubectl, "resourceflavor", rf)) and o["metadata"].get("deletionTimestamp") and o,
    )
    assert FINALIZER in obj["metadata"]["finalizers"]
    assert active(get(kubectl, "clusterqueue", cq))[0] == "True"
    assert is_admitted(kubectl, namespace, "on-flavor") and not suspended(kubectl, namespace, "on-flavor")
    # Once no ClusterQueue names it, the finalizer goes and so does the flavor.
    kubectl("delete", "job", "-n", namespace, "on-flavor")
    kubectl("delete", "clusterqueue", cq)
    wait_for("flavor gone", lambda: get(kubectl, "resourceflavor", rf) is None)
