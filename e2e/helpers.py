"""Helpers the kubectl-driven e2e tests share: wait for a state (`wait_for`, `when`), read a
condition (`cond`) or a Job's Workload, create objects; the Kueue objects of the scenarios (`flavor`,
`cluster_queue`, `local_queue`, `job`, `one_queue`, `ClusterObjects`) and the field guide's GPU
example (`gpu_triad`, `gpu_job`). Their fixtures (`objs`, `quota`, `suffix`, `pod_quota`) are in
conftest.py."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

if TYPE_CHECKING:
    from e2e.conftest import Kubectl

T = TypeVar("T")
EXAMPLES = Path(__file__).resolve().parent / "examples"


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 30, interval: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def when(obj: T, pred: Callable[[T], bool]) -> T | None:
    return obj if pred(obj) else None


def cond(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c["type"] == ctype:
            return c  # type: ignore[no-any-return]
    return {}


def create(kubectl: Kubectl, obj: dict[str, Any]) -> str:
    return kubectl("create", "-f", "-", "-o", "name", input=json.dumps(obj)).stdout.strip().split("/")[-1]


def usage(cq: dict[str, Any], field: str = "flavorsUsage") -> str:
    return str(cq["status"][field][0]["resources"][0]["total"])


def gpu_triad(suffix: str, ns: str, *, flavor: bool = True) -> list[dict[str, Any]]:
    """The example's ResourceFlavor/ClusterQueue/LocalQueue, renamed so tests never share quota."""
    rf, cq, lq = yaml.safe_load_all((EXAMPLES / "gpu-quota.yaml").read_text())
    rf["metadata"]["name"] = f"gpu-nodes-{suffix}"
    cq["metadata"]["name"] = f"research-{suffix}"
    cq["spec"]["namespaceSelector"]["matchLabels"]["kueue.x-k8s.io/queue"] = suffix
    cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] = f"gpu-nodes-{suffix}"
    lq["metadata"].update(name="team-a-gpu", namespace=ns)
    lq["spec"]["clusterQueue"] = f"research-{suffix}"
    return [rf, cq, lq] if flavor else [cq, lq]


def gpu_job(ns: str, *, name: str | None = None, run_for: str | None = None) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((EXAMPLES / "gpu-job.yaml").read_text())
    job["metadata"]["namespace"] = ns
    if name:
        job["metadata"].pop("generateName")
        job["metadata"]["name"] = name
    if run_for:
        job["spec"]["template"].setdefault("metadata", {})["annotations"] = {
            "pod-complete.stage.kwok.x-k8s.io/delay": run_for
        }
    return job


def workloads(kubectl: Kubectl, ns: str) -> list[dict[str, Any]]:
    return kubectl.get("workloads", "-n", ns)["items"]  # type: ignore[no-any-return]


# == the scenarios' Kueue objects ===================================================================
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
RUN_LONG = "1h"


class ClusterObjects:
    """Cluster-scoped objects a test created, deleted (Jobs first, so finalizers can go) at the end."""

    def __init__(self, kubectl: Kubectl, namespace: str) -> None:
        self.kubectl = kubectl
        self.namespace = namespace
        self.objects: list[tuple[str, str]] = []
        self.suffix = uuid.uuid4().hex[:6]

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    def apply(self, obj: dict[str, Any] | str) -> None:
        docs = [obj] if isinstance(obj, dict) else [d for d in yaml.safe_load_all(obj) if d]
        for doc in docs:
            self.kubectl.apply(doc)
            if not doc["metadata"].get("namespace") and doc["kind"] != "Namespace":
                self.objects.append((doc["kind"].lower(), doc["metadata"]["name"]))

    def cleanup(self) -> None:
        self.kubectl("delete", "jobs", "-n", self.namespace, "--all", "--wait=false", check=False)
        for kind, name in reversed(self.objects):
            self.kubectl("delete", kind, name, "--wait=false", "--ignore-not-found", check=False)


def flavor(name: str, instance_type: str = "on-demand") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"instance-type": instance_type}},
    }


def cluster_queue(
    name: str,
    rf: str,
    cpu: str,
    *,
    cohort: str = "",
    borrowing: str | None = None,
    lending: str | None = None,
    strategy: str = "BestEffortFIFO",
    preemption: dict[str, str] | None = None,
) -> dict[str, Any]:
    res: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    if borrowing is not None:
        res["borrowingLimit"] = borrowing
    if lending is not None:
        res["lendingLimit"] = lending
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": strategy,
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": rf, "resources": [res]}]}],
    }
    if cohort:
        spec["cohortName"] = cohort
    if preemption:
        spec["preemption"] = preemption
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def local_queue(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


def job(
    ns: str,
    name: str,
    lq: str,
    *,
    cpu: str = "1",
    run_for: str | None = RUN_LONG,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "60"],
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
        }
    }
    if run_for:
        template["metadata"] = {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": run_for}}
    if node_selector:
        template["spec"]["nodeSelector"] = node_selector
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: lq, **(labels or {})}},
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": template},
    }


def submit(kubectl: Kubectl, *jobs: dict[str, Any]) -> None:
    for j in jobs:  # one at a time: creation order is queue order
        kubectl("create", "-f", "-", input=json.dumps(j))


@contextlib.contextmanager
def one_queue(kubectl: Kubectl, namespace: str, prefix: str, cpu: str) -> Iterator[str]:
    """LocalQueue `lq` in `namespace`, on a ClusterQueue of its own with `cpu` of a flavor of its own;
    the namespace's Jobs and Workloads and the cluster-scoped objects are removed after."""
    s = uuid.uuid4().hex[:6]
    rf, cq = f"{prefix}-rf-{s}", f"{prefix}-cq-{s}"
    cluster_scoped = [flavor(rf), cluster_queue(cq, rf, cpu)]
    for o in [*cluster_scoped, local_queue(namespace, "lq", cq)]:
        kubectl.apply(o)
    try:
        yield namespace
    finally:
        kubectl("delete", "jobs,workloads", "-n", namespace, "--all", "--wait=false", check=False)
        for o in reversed(cluster_scoped):
            name = o["metadata"]["name"]
            kubectl("delete", o["kind"].lower(), name, "--wait=false", "--ignore-not-found", check=False)


def events(kubectl: Kubectl, ns: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the events about object `name` in `ns`, oldest first."""
    items = kubectl.get("events", "-n", ns, "--field-selector", f"involvedObject.name={name}")["items"]
    items.sort(key=lambda e: e.get("eventTime") or e.get("lastTimestamp") or "")
    return [(e.get("type", ""), e.get("reason", ""), e.get("message", "")) for e in items]


def workload_of(kubectl: Kubectl, ns: str, job_name: str) -> dict[str, Any] | None:
    for w in kubectl.get("workloads", "-n", ns)["items"]:
        if any(r.get("name") == job_name for r in w["metadata"].get("ownerReferences") or ()):
            return w  # type: ignore[no-any-return]
    return None


def wait_workload(
    kubectl: Kubectl,
    ns: str,
    job_name: str,
    ctype: str,
    status: str = "True",
    *,
    reason: str | None = None,
    timeout: float = 30,
) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        w = workload_of(kubectl, ns, job_name)
        if w is None:
            return None
        c = cond(w, ctype)
        return w if c.get("status") == status and (reason is None or c.get("reason") == reason) else None

    return wait_for(f"{job_name}: {ctype}={status}" + (f" ({reason})" if reason else ""), probe, timeout=timeout)


def is_admitted(kubectl: Kubectl, ns: str, job_name: str) -> bool:
    w = workload_of(kubectl, ns, job_name)
    return w is not None and cond(w, "Admitted").get("status") == "True"


def suspended(kubectl: Kubectl, ns: str, job_name: str) -> bool:
    return bool(kubectl.get("job", "-n", ns, job_name)["spec"].get("suspend"))


def reserved_cpu(cq: dict[str, Any]) -> tuple[str, str]:
    r = cq["status"]["flavorsReservation"][0]["resources"][0]
    return str(r["total"]), str(r.get("borrowed", "0"))


def reserved(kubectl: Kubectl, cq: str) -> tuple[int, str]:
    """(admitted Workloads, CPU reserved) from the ClusterQueue's status."""
    st = kubectl.get("clusterqueue", cq).get("status") or {}
    cpu = st["flavorsReservation"][0]["resources"][0]["total"] if st.get("flavorsReservation") else "0"
    return st.get("admittedWorkloads", 0), str(cpu)
