"""Every job framework Kueue's users queue, end to end, with the real operators running them.

One module-scoped fixture starts the operators (e2e/operators.py, as `make up
INTEGRATIONS=jobset,lws,appwrapper,trainer,training-operator,mpi-operator,kuberay,spark`) beside the
session's stack and restarts our server with their frameworks on; every test shares them. For each kind the
tests check what a user sees: a queued object held while its ClusterQueue is full (suspended; an LWS's pods
gated), admitted once there is room with the flavor's node labels on every pod (and, for Kubeflow's kinds,
on every replica type's template), preempted by a higher-priority Job and admitted again when that Job
goes, finished with its quota given back (an LWS serves: deleting it gives the quota back), and an object
without a queue name left alone. JobSet, LeaderWorkerSet, AppWrapper, TrainJob, and Kubeflow's PyTorchJob,
TFJob, XGBoostJob, PaddleJob, JAXJob (training-operator) and MPIJob (MPI operator) share that table.

KubeRay's RayCluster, K8sJobMode RayJob and RayService: held suspended (KubeRay makes no pod) while the
queue is full, admitted with one podSet per part of the cluster (a RayJob's submitter too) at the right
counts, KubeRay's head and workers then running on the flavor's nodes, preempted (suspended, pods gone)
and admitted again, and the quota given back when the object is deleted: no Ray runs in kwok's pods, so a
RayJob never finishes and a RayService is never Ready here.

SparkApplication: the Spark operator does not run here (spark-submit needs real containers and a Spark image;
kwok's pods run no process), so only its CRD is installed and the test writes the status the operator would;
suspended, admitted (the flavor in each role's node selector), preempted, admitted again and finished.

Pods run on kwok (e2e/kwok-stages.yaml): a Job's pod annotated `pod-complete.stage.kwok.x-k8s.io/delay:
1h` runs until deleted, one running agnhost's `entrypoint-tester` completes after a second, and a
StatefulSet's (an LWS's) pod runs until deleted.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import QUEUE_LABEL, cluster_queue, cond, flavor, job, local_queue, reserved, wait_for, when

pytestmark = pytest.mark.local_stack

INTEGRATIONS = ("jobset", "lws", "appwrapper", "trainer", "training-operator", "mpi-operator", "kuberay", "spark")
ADMISSION_GATE = "kueue.x-k8s.io/admission"
NODE_LABEL = {"instance-type": "on-demand"}  # the two kwok-on-demand-* nodes have it
OWNER = "e2e.pykueue.dev/owner"  # on every pod template this module writes, to find the pods
RUN_LONG = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}  # a Job's pod then runs until deleted
LONG_RUNTIME = "pykueue-e2e-runs-until-deleted"  # a ClusterTrainingRuntime the fixture installs
WAIT = 60.0  # generous for a loaded 2-core machine; the polls return as soon as the state is there
POLL = 0.25


@dataclass
class Integrations:
    """What the module's tests share: the namespaces they made (waited for at the end, while the
    operators that hold their objects' finalizers still run) and the high WorkloadPriorityClass."""

    high_priority: str
    namespaces: list[str] = field(default_factory=list)


def _runtime() -> dict[str, Any]:
    """A one-node ClusterTrainingRuntime whose pods kwok keeps running (upstream's torch-distributed,
    which the harness also installs, has no way to say so: its pods would complete)."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": LONG_RUNTIME},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {
                                    "template": {
                                        "metadata": {"annotations": RUN_LONG},
                                        "spec": {"containers": [{"name": "node", "image": "busybox"}]},
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


@pytest.fixture(scope="module")
def integrations(kubectl: Kubectl) -> Iterator[Integrations]:
    stack = local_stack(kubectl)
    started = time.monotonic()
    try:
        stack.start_integrations(INTEGRATIONS)
    except Exception as exc:
        try:
            stack.stop_integrations()
        finally:
            pytest.fail(f"the operators did not start: {exc}", pytrace=False)
    print(f"operators and server up in {time.monotonic() - started:.0f}s")
    high = f"high-{uuid.uuid4().hex[:6]}"
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": high},
            "value": 1000,
        }
    )
    kubectl.apply(_runtime())
    shared = Integrations(high)
    try:
        yield shared
    finally:
        # Namespace deletion needs the operators (AppWrapper's and KubeRay's finalizers, the CRDs' conversion
        # webhooks).
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            left = kubectl("get", "namespaces", "-o", "name", check=False).stdout.split()
            if not any(f"namespace/{ns}" in left for ns in shared.namespaces):
                break
            time.sleep(0.5)
        kubectl("delete", "workloadpriorityclass", high, "--ignore-not-found", check=False)
        kubectl("delete", "clustertrainingruntime", LONG_RUNTIME, "--ignore-not-found", check=False)
        stack.stop_integrations()


@pytest.fixture
def ns(integrations: Integrations, namespace: str) -> str:
    integrations.namespaces.append(namespace)
    return namespace


@dataclass(frozen=True)
class Queue:
    cluster_queue: str
    flavor: str


@pytest.fixture
def queue(kubectl: Kubectl, ns: str) -> Iterator[Queue]:
    """A ClusterQueue of 1 CPU on a flavor with the on-demand node label, preempting lower priorities
    within itself, and its LocalQueue `lq` in `ns`."""
    s = uuid.uuid4().hex[:6]
    rf, cq = f"int-rf-{s}", f"int-cq-{s}"
    kubectl.apply(flavor(rf))
    kubectl.apply(cluster_queue(cq, rf, "1", preemption={"withinClusterQueue": "LowerPriority"}))
    kubectl.apply(local_queue(ns, "lq", cq))
    wait_for(
        "the ClusterQueue to be active", lambda: cond(kubectl.get("clusterqueue", cq), "Active").get("status") == "True"
    )
    yield Queue(cq, rf)
    kubectl("delete", "jobs", "-n", ns, "--all", "--wait=false", check=False)
    kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
    kubectl("delete", "resourceflavor", rf, "--wait=false", check=False)


# == the four kinds ===================================================================================
def _container(cpu: str, *, finishes: bool) -> dict[str, Any]:
    """`entrypoint-tester` completes after a second on kwok; anything else runs (as long as its pod says)."""
    return {
        "name": "main",
        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
        "args": ["entrypoint-tester"] if finishes else ["pause"],
        "resources": {"requests": {"cpu": cpu}},
    }


def _pod_template(name: str, cpu: str, *, finishes: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {OWNER: name}}
    if not finishes:
        meta["annotations"] = RUN_LONG
    return {
        "metadata": meta,
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [_container(cpu, finishes=finishes)],
        },
    }


def _meta(name: str, ns: str, lq: str | None) -> dict[str, Any]:
    return {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: lq} if lq else {}}


def jobset(name: str, ns: str, lq: str | None, *, finishes: bool = False) -> dict[str, Any]:
    """Two pods of half a CPU in one replicated Job."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _meta(name, ns, lq),
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "backoffLimit": 6,
                            "template": _pod_template(name, "500m", finishes=finishes),
                        }
                    },
                }
            ]
        },
    }


def appwrapper(name: str, ns: str, lq: str | None, *, finishes: bool = False) -> dict[str, Any]:
    """A wrapped batch Job of two pods of half a CPU."""
    wrapped = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{name}-job"},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": 6,
            "template": _pod_template(name, "500m", finishes=finishes),
        },
    }
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": _meta(name, ns, lq),
        "spec": {"components": [{"template": wrapped}]},
    }


def trainjob(name: str, ns: str, lq: str | None, *, finishes: bool = False) -> dict[str, Any]:
    """Two nodes of half a CPU: upstream's torch-distributed runtime with agnhost `entrypoint-tester`
    (as upstream's e2e runs it) when it should finish, else this module's runtime that runs until deleted."""
    trainer: dict[str, Any] = {
        "numNodes": 2,
        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
        "command": ["/agnhost"],
        "args": ["entrypoint-tester"] if finishes else ["pause"],
        "resourcesPerNode": {"requests": {"cpu": "500m"}},
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": _meta(name, ns, lq),
        "spec": {"runtimeRef": {"name": "torch-distributed" if finishes else LONG_RUNTIME}, "trainer": trainer},
    }


def leaderworkerset(name: str, ns: str, lq: str | None, *, finishes: bool = False) -> dict[str, Any]:
    """One group of a leader and a worker, half a CPU each (`finishes` is meaningless: it serves)."""
    del finishes
    template = _pod_template(name, "500m", finishes=False)
    template["spec"]["restartPolicy"] = "Always"
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": _meta(name, ns, lq),
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}},
    }


def _replica(name: str, container: str, *, finishes: bool, replicas: int = 1) -> dict[str, Any]:
    """One replica type of half a CPU per pod, its container named as the operator requires."""
    template = _pod_template(name, "500m", finishes=finishes)
    template["spec"]["containers"][0]["name"] = container
    return {"replicas": replicas, "restartPolicy": "Never", "template": template}


@dataclass(frozen=True)
class Replicas:
    """A Kubeflow kind's replica specs: its API, the field, the default container name the
    training-operator requires, and its replica types (name, pods) in the Workload's podSet order."""

    api_version: str
    kind: str
    field: str
    container: str
    types: tuple[tuple[str, int], ...]

    def build(self, name: str, ns: str, lq: str | None, *, finishes: bool = False) -> dict[str, Any]:
        specs = {t: _replica(name, self.container, finishes=finishes, replicas=n) for t, n in self.types}
        spec: dict[str, Any] = {self.field: specs}
        if self.kind == "MPIJob":
            spec["slotsPerWorker"] = 1
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": _meta(name, ns, lq), "spec": spec}

    def templates(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        return [obj["spec"][self.field][t]["template"] for t, _ in self.types]


KUBEFLOW = {
    r.kind.lower(): r
    for r in (
        Replicas("kubeflow.org/v1", "PyTorchJob", "pytorchReplicaSpecs", "pytorch", (("Master", 1), ("Worker", 1))),
        Replicas("kubeflow.org/v1", "TFJob", "tfReplicaSpecs", "tensorflow", (("Chief", 1), ("Worker", 1))),
        Replicas("kubeflow.org/v1", "XGBoostJob", "xgbReplicaSpecs", "xgboost", (("Master", 1), ("Worker", 1))),
        Replicas("kubeflow.org/v1", "PaddleJob", "paddleReplicaSpecs", "paddle", (("Master", 1), ("Worker", 1))),
        Replicas("kubeflow.org/v1", "JAXJob", "jaxReplicaSpecs", "jax", (("Worker", 2),)),
        Replicas("kubeflow.org/v2beta1", "MPIJob", "mpiReplicaSpecs", "mpi", (("Launcher", 1), ("Worker", 1))),
    )
}


def _condition_true(ctype: str) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: cond(obj, ctype).get("status") == "True"


@dataclass(frozen=True)
class Kind:
    kind: str
    resource: str  # for kubectl
    build: Callable[..., dict[str, Any]]
    succeeded: Callable[[dict[str, Any]], bool]  # what its operator says of it once its pods completed
    serving: bool = False  # an LWS has no suspend: its pods are gated instead, and it never finishes
    suspend_path: tuple[str, ...] = ("spec", "suspend")
    #: its pod templates, one per podSet, each of which must carry the flavor while it runs
    templates: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None

    def pods_selector(self, name: str) -> str:
        # a TrainJob's pods come from its runtime's template, so they are found by the JobSet Trainer
        # makes (named as the TrainJob)
        return f"jobset.sigs.k8s.io/jobset-name={name}" if self.kind == "TrainJob" else f"{OWNER}={name}"

    def suspended(self, obj: dict[str, Any]) -> bool:
        node: Any = obj
        for key in self.suspend_path:
            node = node.get(key) if isinstance(node, dict) else None
        return node is True


KINDS = {
    "jobset": Kind("JobSet", "jobsets.jobset.x-k8s.io", jobset, _condition_true("Completed")),
    "lws": Kind(
        "LeaderWorkerSet", "leaderworkersets.leaderworkerset.x-k8s.io", leaderworkerset, lambda _: False, serving=True
    ),
    "appwrapper": Kind(
        "AppWrapper",
        "appwrappers.workload.codeflare.dev",
        appwrapper,
        lambda obj: (obj.get("status") or {}).get("phase") == "Succeeded",
    ),
    "trainjob": Kind("TrainJob", "trainjobs.trainer.kubeflow.org", trainjob, _condition_true("Complete")),
    **{
        name: Kind(
            r.kind,
            f"{r.kind.lower()}s.kubeflow.org",
            r.build,
            _condition_true("Succeeded"),
            suspend_path=("spec", "runPolicy", "suspend"),
            templates=r.templates,
        )
        for name, r in KUBEFLOW.items()
    },
}
PODS = 2  # every object above has two pods of half a CPU: one CPU, the whole ClusterQueue


# == what a user looks at ============================================================================
def workload_of(kubectl: Kubectl, ns: str, kind: str, name: str) -> dict[str, Any] | None:
    for w in kubectl.get("workloads", "-n", ns)["items"]:
        if any(r["kind"] == kind and r["name"] == name for r in w["metadata"].get("ownerReferences") or ()):
            return w  # type: ignore[no-any-return]
    return None


def wait_workload(kubectl: Kubectl, ns: str, kind: str, name: str, ctype: str, status: str = "True") -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        w = workload_of(kubectl, ns, kind, name)
        return w if w is not None and cond(w, ctype).get("status") == status else None

    return wait_for(f"{kind} {name}'s Workload {ctype}={status}", probe, timeout=WAIT, interval=POLL)


def pods(kubectl: Kubectl, ns: str, k: Kind, name: str) -> list[dict[str, Any]]:
    return kubectl.get("pods", "-n", ns, "-l", k.pods_selector(name))["items"]  # type: ignore[no-any-return]


def gated(pod: dict[str, Any]) -> bool:
    return any(g["name"] == ADMISSION_GATE for g in pod["spec"].get("schedulingGates") or ())


def live(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and pod["status"].get("phase") in ("Pending", "Running")


def held(kubectl: Kubectl, ns: str, k: Kind, name: str) -> bool:
    """Suspended, or for an LWS every pod of its group there and gated; no pod running either way."""
    ps = [p for p in pods(kubectl, ns, k, name) if live(p)]
    if k.serving:
        return len(ps) == PODS and all(gated(p) and not p["spec"].get("nodeName") for p in ps)
    return k.suspended(kubectl.get(k.resource, "-n", ns, name)) and not ps


def started(kubectl: Kubectl, ns: str, k: Kind, name: str) -> bool:
    """Unsuspended (an AppWrapper's `suspend: false` is omitted when its operator writes it back; an LWS has
    nothing to unsuspend: its running pods are the sign)."""
    return k.serving or not k.suspended(kubectl.get(k.resource, "-n", ns, name))


def templates_on_flavor(kubectl: Kubectl, ns: str, k: Kind, name: str) -> None:
    """Every pod template of the object (one per replica type) carries the flavor's node label."""
    if k.templates is not None:
        for template in k.templates(kubectl.get(k.resource, "-n", ns, name)):
            assert NODE_LABEL.items() <= (template["spec"].get("nodeSelector") or {}).items(), template


def running_on_flavor(kubectl: Kubectl, ns: str, k: Kind, name: str) -> list[dict[str, Any]] | None:
    """All its pods Running on an on-demand node with the flavor's node label as nodeSelector, or None."""
    ps = [p for p in pods(kubectl, ns, k, name) if live(p)]
    ok = len(ps) == PODS and all(
        p["status"].get("phase") == "Running"
        and NODE_LABEL.items() <= (p["spec"].get("nodeSelector") or {}).items()
        and p["spec"].get("nodeName", "").startswith("kwok-on-demand-")
        for p in ps
    )
    return ps if ok else None


def create(kubectl: Kubectl, obj: dict[str, Any]) -> None:
    kubectl("create", "-f", "-", input=json.dumps(obj))


def fill_queue(kubectl: Kubectl, ns: str, queue: Queue) -> None:
    """A Job of the default priority takes the ClusterQueue's one CPU."""
    create(kubectl, job(ns, "blocker", "lq", cpu="1"))
    wait_for(
        "the blocker to be admitted",
        lambda: reserved(kubectl, queue.cluster_queue) == (1, "1"),
        timeout=WAIT,
        interval=POLL,
    )


def preempt(kubectl: Kubectl, ns: str, integrations: Integrations) -> None:
    """A Job of the high WorkloadPriorityClass asks for the ClusterQueue's one CPU."""
    create(
        kubectl,
        job(ns, "preemptor", "lq", cpu="1", labels={"kueue.x-k8s.io/priority-class": integrations.high_priority}),
    )


def wait_preemptor_admitted(kubectl: Kubectl, ns: str) -> None:
    wait_for(
        "the preemptor to be admitted",
        lambda: cond(workload_of(kubectl, ns, "Job", "preemptor") or {}, "Admitted").get("status") == "True",
        timeout=WAIT,
        interval=POLL,
    )


# == the tests =========================================================================================
@pytest.mark.parametrize("kind", list(KINDS))
def test_queued_until_room_then_admitted_preempted_and_readmitted(
    kubectl: Kubectl, integrations: Integrations, ns: str, queue: Queue, kind: str
) -> None:
    k = KINDS[kind]
    # 1. The ClusterQueue's one CPU is taken by a Job of the same (default) priority: the object waits.
    fill_queue(kubectl, ns, queue)
    create(kubectl, k.build("victim", ns, "lq"))
    wl = wait_workload(kubectl, ns, k.kind, "victim", "QuotaReserved", "False")
    assert cond(wl, "QuotaReserved")["reason"] == "Pending"
    assert "insufficient unused quota for cpu" in cond(wl, "QuotaReserved")["message"]
    wait_for(
        f"{kind} held while the queue is full", lambda: held(kubectl, ns, k, "victim"), timeout=WAIT, interval=POLL
    )
    time.sleep(1)
    assert held(kubectl, ns, k, "victim"), "it started although its ClusterQueue had no room"
    assert cond(workload_of(kubectl, ns, k.kind, "victim") or {}, "QuotaReserved").get("status") == "False"

    # 2. Room: admitted on the flavor, its pods carry the flavor's node label and run on such a node.
    kubectl("delete", "job", "-n", ns, "blocker", "--wait=false")
    wl = wait_workload(kubectl, ns, k.kind, "victim", "Admitted")
    assert wl["status"]["admission"]["clusterQueue"] == queue.cluster_queue
    assert all(a["flavors"] == {"cpu": queue.flavor} for a in wl["status"]["admission"]["podSetAssignments"])
    first = wait_for(
        f"{kind}'s pods running on the flavor",
        lambda: running_on_flavor(kubectl, ns, k, "victim"),
        timeout=WAIT,
        interval=POLL,
    )
    assert started(kubectl, ns, k, "victim")
    templates_on_flavor(kubectl, ns, k, "victim")

    # 3. A higher-priority Job takes the quota: evicted, held again, its pods gone; admitted again after.
    preempt(kubectl, ns, integrations)
    wl = wait_workload(kubectl, ns, k.kind, "victim", "Evicted")
    assert cond(wl, "Evicted")["reason"] == "Preempted"
    assert cond(wl, "Preempted")["status"] == "True"
    wait_for(f"{kind} held after preemption", lambda: held(kubectl, ns, k, "victim"), timeout=WAIT, interval=POLL)
    first_uids = {p["metadata"]["uid"] for p in first}
    assert not first_uids & {p["metadata"]["uid"] for p in pods(kubectl, ns, k, "victim") if live(p)}
    wait_preemptor_admitted(kubectl, ns)
    wl = workload_of(kubectl, ns, k.kind, "victim") or {}
    assert cond(wl, "QuotaReserved").get("status") == "False"
    kubectl("delete", "job", "-n", ns, "preemptor", "--wait=false")
    wait_workload(kubectl, ns, k.kind, "victim", "Admitted")
    again = wait_for(
        f"{kind} running again", lambda: running_on_flavor(kubectl, ns, k, "victim"), timeout=WAIT, interval=POLL
    )
    assert not first_uids & {p["metadata"]["uid"] for p in again}
    assert started(kubectl, ns, k, "victim")
    wait_for(
        "the quota counted once",
        lambda: reserved(kubectl, queue.cluster_queue) == (1, "1"),
        timeout=WAIT,
        interval=POLL,
    )


@pytest.mark.parametrize("kind", [k for k in KINDS if not KINDS[k].serving])
def test_finishes_and_gives_the_quota_back(kubectl: Kubectl, ns: str, queue: Queue, kind: str) -> None:
    k = KINDS[kind]
    create(kubectl, k.build("done", ns, "lq", finishes=True))
    wl = wait_workload(kubectl, ns, k.kind, "done", "Finished")
    assert cond(wl, "Finished")["reason"] == "Succeeded"
    assert k.succeeded(kubectl.get(k.resource, "-n", ns, "done"))
    wait_for(
        "the ClusterQueue's usage back to zero",
        lambda: reserved(kubectl, queue.cluster_queue) == (0, "0"),
        timeout=WAIT,
        interval=POLL,
    )


def test_leaderworkerset_serves_until_deleted(kubectl: Kubectl, ns: str, queue: Queue) -> None:
    k = KINDS["lws"]
    create(kubectl, k.build("serves", ns, "lq"))
    wl = wait_workload(kubectl, ns, k.kind, "serves", "Admitted")
    wait_for("the group running", lambda: running_on_flavor(kubectl, ns, k, "serves"), timeout=WAIT, interval=POLL)
    wait_for(
        "its quota counted", lambda: reserved(kubectl, queue.cluster_queue) == (1, "1"), timeout=WAIT, interval=POLL
    )
    assert cond(wl, "Finished").get("status") != "True"
    kubectl("delete", k.resource, "-n", ns, "serves", "--wait=false")
    wait_for(
        "its Workload gone", lambda: workload_of(kubectl, ns, k.kind, "serves") is None, timeout=WAIT, interval=POLL
    )
    wait_for(
        "the ClusterQueue's usage back to zero",
        lambda: reserved(kubectl, queue.cluster_queue) == (0, "0"),
        timeout=WAIT,
        interval=POLL,
    )


@pytest.mark.parametrize("kind", list(KINDS))
def test_without_a_queue_name_it_is_left_alone(
    kubectl: Kubectl, integrations: Integrations, ns: str, kind: str
) -> None:
    k = KINDS[kind]
    create(kubectl, k.build("free", ns, None))

    def running() -> list[dict[str, Any]] | None:
        ps = [p for p in pods(kubectl, ns, k, "free") if live(p)]
        return ps if len(ps) == PODS and all(p["status"].get("phase") == "Running" for p in ps) else None

    ps = wait_for(f"the unqueued {kind}'s pods to run", running, timeout=WAIT, interval=POLL)
    assert not any(gated(p) for p in ps)
    if not k.serving:
        assert not k.suspended(kubectl.get(k.resource, "-n", ns, "free"))
    assert kubectl.get("workloads", "-n", ns)["items"] == []


# == KubeRay =============================================================================================
RAY_NODE_TYPE = "ray.io/node-type"  # KubeRay's label on a cluster's head and worker pods (not a submitter's)


def _ray_template(container: str, cpu: str) -> dict[str, Any]:
    return {
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": container, "image": "rayproject/ray:2.56.0", "resources": {"requests": {"cpu": cpu}}}
            ],
        }
    }


def _ray_cluster_spec() -> dict[str, Any]:
    """A head and one worker group `workers` of two replicas, a quarter CPU each."""
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": _ray_template("ray-head", "250m")},
        "workerGroupSpecs": [
            {
                "groupName": "workers",
                "replicas": 2,
                "minReplicas": 0,
                "maxReplicas": 2,
                "rayStartParams": {},
                "template": _ray_template("ray-worker", "250m"),
            }
        ],
    }


def raycluster(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": _meta(name, ns, "lq"),
        "spec": _ray_cluster_spec(),
    }


def rayjob(name: str, ns: str) -> dict[str, Any]:
    """K8sJobMode: its submitter Job's pod (a tenth of a CPU, running until deleted) is a podSet of its own."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": _meta(name, ns, "lq"),
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "submissionMode": "K8sJobMode",
            # kwok completes a Job's pod unless told to run on: the submitter then "finishes" the RayJob
            "submitterPodTemplate": {
                "metadata": {"annotations": RUN_LONG},
                "spec": {"restartPolicy": "Never", **_ray_template("ray-job-submitter", "100m")["spec"]},
            },
            "rayClusterSpec": _ray_cluster_spec(),
        },
    }


def rayservice(name: str, ns: str) -> dict[str, Any]:
    """The same cluster under a RayService (no Serve application: kwok's pods run no Ray to serve one)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": _meta(name, ns, "lq"),
        "spec": {"rayClusterConfig": _ray_cluster_spec()},
    }


@dataclass(frozen=True)
class RayKind:
    kind: str
    resource: str  # for kubectl
    build: Callable[[str, str], dict[str, Any]]
    pod_sets: tuple[tuple[str, int], ...]  # the Workload's (name, count), in order
    cpu: str  # what the Workload reserves
    suspend_path: tuple[str, ...]

    def suspended(self, obj: dict[str, Any]) -> bool:
        node: Any = obj
        for key in self.suspend_path:
            node = node.get(key) if isinstance(node, dict) else None
        return node is True


RAY_KINDS = {
    "raycluster": RayKind(
        "RayCluster", "rayclusters.ray.io", raycluster, (("head", 1), ("workers", 2)), "750m", ("spec", "suspend")
    ),
    "rayjob": RayKind(
        "RayJob",
        "rayjobs.ray.io",
        rayjob,
        (("head", 1), ("workers", 2), ("submitter", 1)),
        "850m",
        ("spec", "suspend"),
    ),
    "rayservice": RayKind(
        "RayService",
        "rayservices.ray.io",
        rayservice,
        (("head", 1), ("workers", 2)),
        "750m",
        ("spec", "rayClusterConfig", "suspend"),
    ),
}


def ray_pods(kubectl: Kubectl, ns: str) -> list[dict[str, Any]]:
    """The live head and worker pods of every Ray cluster in `ns` (a RayJob's cluster is named by KubeRay)."""
    return [p for p in kubectl.get("pods", "-n", ns, "-l", RAY_NODE_TYPE)["items"] if live(p)]


def ray_running(kubectl: Kubectl, ns: str) -> list[dict[str, Any]] | None:
    """KubeRay's head and two workers Running on the flavor's nodes with its node label, or None."""
    ps = ray_pods(kubectl, ns)
    ok = len(ps) == 3 and all(
        p["status"].get("phase") == "Running"
        and NODE_LABEL.items() <= (p["spec"].get("nodeSelector") or {}).items()
        and p["spec"].get("nodeName", "").startswith("kwok-on-demand-")
        for p in ps
    )
    return ps if ok else None


@pytest.mark.parametrize("kind", list(RAY_KINDS))
def test_ray_suspended_until_admitted_preempted_readmitted_and_quota_released_on_delete(
    kubectl: Kubectl, integrations: Integrations, ns: str, queue: Queue, kind: str
) -> None:
    """KubeRay's kinds cannot finish here (no Ray runs in kwok's pods: a RayJob's job never SUCCEEDs, a
    RayService is never Ready), so the last step deletes the object and checks the quota comes back."""
    k = RAY_KINDS[kind]

    def suspended() -> bool:
        return k.suspended(kubectl.get(k.resource, "-n", ns, "ray"))

    # 1. A Job takes the ClusterQueue's CPU: the Ray object waits, suspended, and KubeRay makes no pod.
    fill_queue(kubectl, ns, queue)
    create(kubectl, k.build("ray", ns))
    wl = wait_workload(kubectl, ns, k.kind, "ray", "QuotaReserved", "False")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == list(k.pod_sets)
    assert "insufficient unused quota for cpu" in cond(wl, "QuotaReserved")["message"]
    assert suspended()
    time.sleep(2)
    assert suspended() and not ray_pods(kubectl, ns), "it started without quota"

    # 2. Room: admitted on the flavor with the podSets' counts; KubeRay makes the head and the two
    # workers, which run on the flavor's nodes with its node label.
    kubectl("delete", "job", "-n", ns, "blocker", "--wait=false")
    wl = wait_workload(kubectl, ns, k.kind, "ray", "Admitted")
    assignments = wl["status"]["admission"]["podSetAssignments"]
    assert [(a["name"], a["count"]) for a in assignments] == list(k.pod_sets)
    assert all(a["flavors"] == {"cpu": queue.flavor} for a in assignments)
    assert not suspended()
    ps = wait_for(
        "KubeRay's head and two workers running", lambda: ray_running(kubectl, ns), timeout=WAIT, interval=POLL
    )
    assert sorted(p["metadata"]["labels"][RAY_NODE_TYPE] for p in ps) == ["head", "worker", "worker"]
    assert sorted(p["metadata"]["labels"].get("kueue.x-k8s.io/podset", "") for p in ps) == [
        "head",
        "workers",
        "workers",
    ]
    # (the ClusterQueue's status trails the admission by a few seconds)
    try:
        wait_for(
            "the ClusterQueue's status to count it",
            lambda: reserved(kubectl, queue.cluster_queue) == (1, k.cpu),
            timeout=WAIT,
            interval=POLL,
        )
    except AssertionError as exc:
        wl = workload_of(kubectl, ns, k.kind, "ray") or {}
        raise AssertionError(
            f"{exc}; Workload {wl.get('status')}; {k.kind} {kubectl.get(k.resource, '-n', ns, 'ray').get('status')}"
        ) from exc

    # 3. A higher-priority Job takes the quota: evicted, suspended again, KubeRay's pods gone; admitted again
    # once that Job is deleted, with new pods on the flavor.
    first = {p["metadata"]["uid"] for p in ps}
    preempt(kubectl, ns, integrations)
    wl = wait_workload(kubectl, ns, k.kind, "ray", "Evicted")
    assert cond(wl, "Evicted")["reason"] == "Preempted"
    wait_for(
        f"{k.kind} suspended and its pods gone",
        lambda: suspended() and not ray_pods(kubectl, ns),
        timeout=WAIT,
        interval=POLL,
    )
    wait_preemptor_admitted(kubectl, ns)
    kubectl("delete", "job", "-n", ns, "preemptor", "--wait=false")
    wait_workload(kubectl, ns, k.kind, "ray", "Admitted")
    again = wait_for("KubeRay's pods running again", lambda: ray_running(kubectl, ns), timeout=WAIT, interval=POLL)
    assert not first & {p["metadata"]["uid"] for p in again}
    assert not suspended()

    # 4. Deleted: its Workload goes with it and the quota is free again.
    kubectl("delete", k.resource, "-n", ns, "ray", "--wait=false")
    wait_for("its Workload gone", lambda: workload_of(kubectl, ns, k.kind, "ray") is None, timeout=WAIT, interval=POLL)
    wait_for(
        "the ClusterQueue's usage back to zero",
        lambda: reserved(kubectl, queue.cluster_queue) == (0, "0"),
        timeout=WAIT,
        interval=POLL,
    )


# == SparkApplication ===================================================================================
# The Spark operator does not run here (its spark-submit needs real containers and a Spark image; kwok's pods
# run no process): its CRD is installed, and the test does the operator's part, writing the SparkApplication's status
# as the operator would (RUNNING with its executors, SUSPENDED once suspended, COMPLETED at the end).
SPARK = "sparkapplications.sparkoperator.k8s.io"


def sparkapplication(name: str, ns: str) -> dict[str, Any]:
    """A driver and one executor of half a CPU each (no memory: the module's ClusterQueue has CPU alone)."""
    role = {"coreRequest": "500m", "serviceAccount": "spark"}
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": _meta(name, ns, "lq"),
        "spec": {
            "type": "Scala",
            "mode": "cluster",
            "sparkVersion": "4.0.0",
            "image": "spark:4.0.0",
            "mainClass": "org.apache.spark.examples.SparkPi",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "driver": dict(role),
            "executor": {**role, "instances": 1},
        },
    }


def play_operator(kubectl: Kubectl, ns: str, name: str, state: str, executors: dict[str, str] | None = None) -> None:
    """Write the status the Spark operator would (its status subresource)."""
    status: dict[str, Any] = {"applicationState": {"state": state}, "driverInfo": {}}  # the CRD requires driverInfo
    if executors is not None:
        status["executorState"] = executors
    kubectl(
        "patch", SPARK, name, "-n", ns, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status})
    )


def test_spark_application_suspended_admitted_preempted_readmitted_and_finished(
    kubectl: Kubectl, integrations: Integrations, ns: str, queue: Queue
) -> None:
    def app() -> dict[str, Any]:
        return kubectl.get(SPARK, "-n", ns, "pi")  # type: ignore[no-any-return]

    def selectors() -> list[dict[str, str]]:
        spec = app()["spec"]
        return [spec[role].get("nodeSelector") or {} for role in ("driver", "executor")]

    # 1. A Job takes the ClusterQueue's CPU: the application is suspended by the webhook and waits.
    fill_queue(kubectl, ns, queue)
    create(kubectl, sparkapplication("pi", ns))
    assert app()["spec"]["suspend"] is True
    wl = wait_for(
        "the SparkApplication's Workload pending",
        lambda: when(
            workload_of(kubectl, ns, "SparkApplication", "pi"), lambda w: "conditions" in (w.get("status") or {})
        ),
        timeout=WAIT,
        interval=POLL,
    )
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("driver", 1), ("executor", 1)]
    assert [p["template"]["spec"]["containers"][0] for p in wl["spec"]["podSets"]] == [
        {"name": "spark-kubernetes-driver", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "spark-kubernetes-executor", "resources": {"requests": {"cpu": "500m"}}},
    ]
    assert cond(wl, "QuotaReserved").get("status") == "False"
    assert "insufficient unused quota for cpu" in cond(wl, "QuotaReserved")["message"]

    # 2. Room: admitted; unsuspended with the flavor's node label and the podSet label on each role.
    kubectl("delete", "job", "-n", ns, "blocker", "--wait=false")
    wl = wait_workload(kubectl, ns, "SparkApplication", "pi", "Admitted")
    assert all(a["flavors"] == {"cpu": queue.flavor} for a in wl["status"]["admission"]["podSetAssignments"])
    wait_for("the application started", lambda: app()["spec"].get("suspend") is False, timeout=WAIT, interval=POLL)
    assert selectors() == [NODE_LABEL, NODE_LABEL]
    assert [app()["spec"][r]["labels"]["kueue.x-k8s.io/podset"] for r in ("driver", "executor")] == [
        "driver",
        "executor",
    ]
    play_operator(kubectl, ns, "pi", "RUNNING", {"pi-exec-1": "RUNNING"})
    wait_for(
        "the quota counted", lambda: reserved(kubectl, queue.cluster_queue) == (1, "1"), timeout=WAIT, interval=POLL
    )

    # 3. A higher-priority Job: evicted, suspended with its roles as they were; the operator stops it and
    # the preemptor gets the quota. Deleted, the application is admitted and started again.
    preempt(kubectl, ns, integrations)
    wl = wait_workload(kubectl, ns, "SparkApplication", "pi", "Evicted")
    assert cond(wl, "Evicted")["reason"] == "Preempted"
    wait_for("the application suspended", lambda: app()["spec"].get("suspend") is True, timeout=WAIT, interval=POLL)
    assert selectors() == [{}, {}]
    play_operator(kubectl, ns, "pi", "SUSPENDED", {})
    wait_preemptor_admitted(kubectl, ns)
    kubectl("delete", "job", "-n", ns, "preemptor", "--wait=false")
    wait_workload(kubectl, ns, "SparkApplication", "pi", "Admitted")
    wait_for(
        "the application started again", lambda: app()["spec"].get("suspend") is False, timeout=WAIT, interval=POLL
    )
    assert selectors() == [NODE_LABEL, NODE_LABEL]

    # 4. It runs and completes: the Workload is Finished and the quota free.
    play_operator(kubectl, ns, "pi", "RUNNING", {"pi-exec-2": "RUNNING"})
    play_operator(kubectl, ns, "pi", "COMPLETED", {"pi-exec-2": "COMPLETED"})
    wl = wait_workload(kubectl, ns, "SparkApplication", "pi", "Finished")
    assert cond(wl, "Finished")["reason"] == "Succeeded"
    wait_for(
        "the ClusterQueue's usage back to zero",
        lambda: reserved(kubectl, queue.cluster_queue) == (0, "0"),
        timeout=WAIT,
        interval=POLL,
    )


def test_spark_dynamic_allocation_is_refused(kubectl: Kubectl, integrations: Integrations, ns: str) -> None:
    obj = sparkapplication("dyn", ns)
    obj["spec"]["dynamicAllocation"] = {"enabled": True, "maxExecutors": 4}
    res = kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
    assert res.returncode != 0
    assert (
        "spec.dynamicAllocation.enabled: Invalid value: true: a kueue managed job can use dynamicAllocation only "
        "when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job"
    ) in res.stderr
