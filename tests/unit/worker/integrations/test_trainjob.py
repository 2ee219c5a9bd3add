"""The TrainJob integration: upstream's `trainjob_controller_test.go` cases (`TestRunWithPodsetsInfo`,
`TestRestorePodSetsInfo`, `TestReconciler`) by behaviour, one reconcile at a time against a fake
API: the Workload created, the patches the TrainJob receives, the events; and the JobSet the
runtime makes, as Kueue reads it."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.api import jobs
from webhook.api import trainjob as tj
from webhook.config import Configuration, Integrations, WaitForPodsReady
from webhook.worker import events
from webhook.worker.integrations import trainjob as t
from webhook.worker.jobframework.interface import JobError, StartConflict
from webhook.worker.manager import Manager
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

NOW = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
API = "trainer.kubeflow.org/v1alpha1"
WL_API = "kueue.x-k8s.io/v1beta2"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
KUEUE = "kueue.x-k8s.io/manager"
Q = "kueue.x-k8s.io/queue-name"
TOL1 = {"key": "t1k", "operator": "Equal", "value": "t1v", "effect": "NoExecute"}
TOL2 = {"key": "t2k", "operator": "Exists", "effect": "NoSchedule"}
TAS_OFF = {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": False}


# --- builders -------------------------------------------------------------------------------------


def replicated_job(
    name: str,
    *,
    replicas: int | None = 1,
    parallelism: int | None = 1,
    completions: int | None = 1,
    labels: Mapping[str, str] | None = None,
    pod_annotations: Mapping[str, str] | None = None,
    containers: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    job_spec: dict[str, Any] = {
        "template": {
            "spec": {"containers": list(containers or [{"name": "c", "image": "pause"}]), "restartPolicy": "Never"}
        }
    }
    if pod_annotations:
        job_spec["template"]["metadata"] = {"annotations": dict(pod_annotations)}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    if completions is not None:
        job_spec["completions"] = completions
    rj: dict[str, Any] = {"name": name, "template": {"spec": job_spec}}
    if labels:
        rj["template"]["metadata"] = {"labels": dict(labels)}
    if replicas is not None:
        rj["replicas"] = replicas
    return rj


def runtime(*jobs: dict[str, Any], name: str = "test", namespace: str = "", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": API,
        "kind": "TrainingRuntime" if namespace else "ClusterTrainingRuntime",
        "metadata": meta,
        "spec": {"template": {"spec": {"replicatedJobs": list(jobs)}}, **spec},
    }


def rj_patch(name: str, **pod: Any) -> dict[str, Any]:
    """A `ReplicatedJobPatch` of the pod template: `annotations`, `labels`, and spec fields."""
    meta = {key: pod.pop(key) for key in ("annotations", "labels") if key in pod}
    return {"name": name, "template": {"spec": {"template": {"metadata": meta, "spec": pod}}}}


def runtime_patch(manager: str = KUEUE, *replicated_jobs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if replicated_jobs:
        spec["replicatedJobs"] = list(replicated_jobs)
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": spec}}}


def trainjob(
    *,
    runtime_name: str = "test",
    kind: str = "ClusterTrainingRuntime",
    suspend: bool = True,
    queue: str = "lq",
    patches: Sequence[dict[str, Any]] | None = None,
    trainer: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "runtimeRef": {"name": runtime_name, "apiGroup": "trainer.kubeflow.org", "kind": kind},
        "suspend": suspend,
        "runtimePatches": list(patches) if patches is not None else [runtime_patch()],
    }
    if trainer is not None:
        spec["trainer"] = trainer
    obj: dict[str, Any] = {
        "apiVersion": API,
        "kind": "TrainJob",
        "metadata": {"name": "trainjob", "namespace": "ns", "uid": "tj-uid", "labels": {Q: queue} if queue else {}},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def admitted(wl: dict[str, Any], *flavors: str, checks: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """`wl` with quota reserved and admitted in ClusterQueue `cq`, each pod set on its flavor."""
    out = copy.deepcopy(wl)
    out["status"] = {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
        ],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": ps["name"], "count": ps["count"], "flavors": {"cpu": flavor}}
                for ps, flavor in zip(out["spec"]["podSets"], flavors, strict=True)
            ],
        },
        "admissionChecks": list(checks),
    }
    return out


def flavor(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": WL_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def kueue_jobs(obj: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    patch = tj.kueue_runtime_patch(obj) or {}
    found: list[dict[str, Any]] | None = (
        ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec", {}).get("replicatedJobs")
    )
    return found


# --- the harness -----------------------------------------------------------------------------------

Event = tuple[str, str, str]  # (type, reason, message)


class _Kube(FakeKube):
    """Optimistic locking on merge patches that carry a resourceVersion, as the API server does."""

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]:
        if method == "PATCH" and isinstance(body, Mapping):
            sent = (body.get("metadata") or {}).get("resourceVersion")
            current = self.objects.get(path)
            if sent is not None and current is not None and sent != current["metadata"]["resourceVersion"]:
                raise k.Conflict(409, "the object has been modified")
        return super().request(method, path, query=query, body=body, content_type=content_type, timeout=timeout)


class _Recorder(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="test", stop=threading.Event())
        self.seen: list[Event] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        assert controller == "trainer.kubeflow.org/trainjob-kueue-controller"
        self.seen.append((etype, reason, note))


@dataclass
class Outcome:
    trainjob: dict[str, Any]
    patches: list[Any]  # the bodies of the TrainJob's PATCH requests, in order
    workloads: list[dict[str, Any]]
    events: list[Event]
    error: str | None


TJ_PATH = k.object_path(API, "trainjobs", "ns", "trainjob")


def reconcile(
    job: dict[str, Any],
    *,
    runtimes: Sequence[dict[str, Any]] = (),
    workloads: Sequence[dict[str, Any]] = (),
    flavors: Sequence[dict[str, Any]] = (flavor("default"),),
    gates: Mapping[str, bool] | None = None,
    manage_without_queue_name: bool = False,
    wait_for_pods_ready: bool = False,
) -> Outcome:
    kube, store, recorder = _Kube(), Store(), _Recorder()
    config = Configuration(
        manage_jobs_without_queue_name=manage_without_queue_name,
        feature_gates=dict(TAS_OFF if gates is None else gates),
        wait_for_pods_ready=WaitForPodsReady() if wait_for_pods_ready else None,
    )
    reconciler = t.TrainJobReconciler(kube, store, config, recorder, clock=lambda: NOW)  # type: ignore[arg-type]

    def add(kind: str, path: str, obj: dict[str, Any]) -> None:
        full = f"{path}/{obj['metadata']['name']}"
        kube.put(full, obj)
        store.put(kind, copy.deepcopy(kube.objects[full]))

    add("namespaces", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    for rf in flavors:
        add("resourceflavors", k.object_path(WL_API, "resourceflavors", None), rf)
    for rt in runtimes:
        ns = rt["metadata"].get("namespace")
        plural = "trainingruntimes" if ns else "clustertrainingruntimes"
        add(plural, k.object_path(API, plural, ns), rt)
    add("trainjobs", k.object_path(API, "trainjobs", "ns"), job)
    for wl in workloads:
        add("workloads", k.object_path(WL_API, "workloads", "ns"), wl)
    kube.calls.clear()
    sent: list[Any] = []
    original_request = kube.request

    def recording(method: str, path: str, **kw: Any) -> dict[str, Any]:
        if method == "PATCH" and path == TJ_PATH:
            sent.append(copy.deepcopy(kw.get("body")))
        return original_request(method, path, **kw)

    kube.request = recording  # type: ignore[method-assign]
    error: str | None = None
    try:
        reconciler.reconcile("ns/trainjob")
    except Retry as exc:
        error = str(exc)
    return Outcome(
        trainjob=copy.deepcopy(kube.objects[TJ_PATH]),
        patches=sent,
        workloads=[copy.deepcopy(o) for p, o in sorted(kube.objects.items()) if "/workloads/" in p],
        events=recorder.seen,
        error=error,
    )


def created_workload(job: dict[str, Any], rt: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The Workload a first reconcile of `job` creates."""
    out = reconcile(job, runtimes=[rt], **kw)
    assert out.error is None, out.error
    [wl] = out.workloads
    return wl


# --- TestReconciler ----------------------------------------------------------------------------------

TRAINER_AND_FOO = runtime(
    replicated_job("node", labels={ANCESTOR: "trainer"}),
    replicated_job("foo"),
)
TAS_INDEX = {
    "podIndexLabel": "batch.kubernetes.io/job-completion-index",
    "subGroupCount": 1,
    "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
}


@pytest.mark.parametrize(
    ("trainer", "counts"),
    [
        pytest.param(None, {"node": 1, "foo": 1}, id="workload is created with the corresponding podsets"),
        pytest.param({"numNodes": 2}, {"node": 2, "foo": 1}, id="podset count for the trainer job is set to .Spec.Trainer.NumNodes"),
    ],
)  # fmt: skip
def test_reconcile_creates_the_workload_with_one_pod_set_per_replicated_job(
    trainer: dict[str, Any] | None, counts: dict[str, int]
) -> None:
    job = trainjob(queue="", trainer=trainer)
    out = reconcile(job, runtimes=[TRAINER_AND_FOO], gates={}, manage_without_queue_name=True)
    assert out.error is None
    [wl] = out.workloads
    assert wl["metadata"]["name"] == jobs.workload_name("trainjob", "tj-uid", kind="TrainJob", group=tj.GROUP)
    assert wl["metadata"]["ownerReferences"] == [
        {
            "apiVersion": API,
            "kind": "TrainJob",
            "name": "trainjob",
            "uid": "tj-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]} == counts
    assert [ps["topologyRequest"] for ps in wl["spec"]["podSets"]] == [TAS_INDEX, TAS_INDEX]
    assert out.events == [("Normal", "CreatedWorkload", "Created Workload: ns/" + wl["metadata"]["name"])]
    assert out.patches == []  # the TrainJob itself is left as it is


def test_pod_sets_take_the_runtime_templates_with_the_patches_and_trainer_overrides() -> None:
    rt = runtime(
        replicated_job(
            "node",
            labels={ANCESTOR: "trainer"},
            containers=[
                {
                    "name": "node",
                    "image": "runtime:1",
                    "env": [{"name": "A", "value": "runtime"}],
                    "ports": [{"containerPort": 29500}],
                    "resources": {"requests": {"cpu": "8"}},
                },
                {"name": "sidecar", "image": "s:1"},
            ],
        ),
        mlPolicy={"numNodes": 3, "torch": {}},
    )
    job = trainjob(
        trainer={
            "image": "mine:2",
            "command": ["/agnhost"],
            "args": ["entrypoint-tester"],
            "env": [{"name": "A", "value": "job"}, {"name": "B", "value": "job"}],
            "resourcesPerNode": {"requests": {"cpu": "500m", "memory": "200Mi"}},
        },
        patches=[
            runtime_patch(
                "example.com/user",
                rj_patch("node", labels={"team": "a"}, tolerations=[TOL1], nodeSelector={"disk": "ssd"}),
            ),
            runtime_patch(),
        ],
    )
    wl = created_workload(job, rt)
    [ps] = wl["spec"]["podSets"]
    assert ps["count"] == 3  # the runtime's numNodes: the TrainJob sets none
    assert "topologyRequest" not in ps
    template = ps["template"]
    assert template["metadata"] == {"labels": {"team": "a"}}
    node, sidecar = template["spec"]["containers"]
    assert node == {
        "name": "node",
        "image": "mine:2",
        "command": ["/agnhost"],
        "args": ["entrypoint-tester"],
        "env": [{"name": "A", "value": "job"}, {"name": "B", "value": "job"}],
        "ports": [{"containerPort": 29500, "protocol": "TCP"}],  # the Workload's schema default
        "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}},
    }
    assert sidecar == {"name": "sidecar", "image": "s:1"}
    assert template["spec"]["tolerations"] == [TOL1] and template["spec"]["nodeSelector"] == {"disk": "ssd"}


def test_a_namespaced_training_runtime_is_read_from_the_trainjobs_namespace() -> None:
    rt = runtime(replicated_job("node", parallelism=4, completions=4), name="mine", namespace="ns")
    wl = created_workload(trainjob(runtime_name="mine", kind="TrainingRuntime"), rt)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("node", 4)]


@pytest.mark.parametrize(
    ("job", "error"),
    [
        pytest.param(trainjob(runtime_name="absent"), "runtime 'absent' not found", id="runtime not found"),
        pytest.param(trainjob(kind="TrainingRuntime"), "runtime 'test' not found", id="a TrainingRuntime is namespaced"),
        pytest.param(
            trainjob(kind="Other"), "unsupported runtime: Other.trainer.kubeflow.org", id="a kind Trainer has no runtime for"
        ),
    ],
)  # fmt: skip
def test_a_trainjob_whose_runtime_cannot_be_read_is_retried_without_a_workload(job: dict[str, Any], error: str) -> None:
    """Upstream's `PodSets` error: the reconcile fails (and is retried); nothing is written, no event."""
    out = reconcile(job, runtimes=[TRAINER_AND_FOO])
    assert out.error == error
    assert out.workloads == [] and out.events == [] and out.patches == []


def test_a_trainjob_without_a_queue_name_is_left_alone() -> None:
    out = reconcile(trainjob(queue=""), runtimes=[TRAINER_AND_FOO])
    assert out.workloads == [] and out.events == [] and out.error is None


# --- TestRunWithPodsetsInfo --------------------------------------------------------------------------

ONE_NODE = runtime(replicated_job("node", labels={ANCESTOR: "trainer"}))


def start(job: dict[str, Any], *flavors_: dict[str, Any], checks: Sequence[dict[str, Any]] = ()) -> Outcome:
    """Reconcile `job` whose Workload is admitted on `flavors_` (one per pod set)."""
    wl = created_workload(job, ONE_NODE)
    names = [f["metadata"]["name"] for f in flavors_]
    return reconcile(job, runtimes=[ONE_NODE], workloads=[admitted(wl, *names, checks=checks)], flavors=flavors_)


def test_start_puts_the_pod_set_info_into_kueues_runtime_patch_and_unsuspends() -> None:
    """ "should add to the TrainJob the config specified in the PodSet info" (the info from the flavor and
    an admission check's pod set update)."""
    check = {
        "name": "check",
        "state": "Ready",
        "podSetUpdates": [
            {"name": "node", "annotations": {"test-annotation": "test"}, "labels": {"test-label": "label"}}
        ],
    }
    out = start(trainjob(), flavor("on-demand", nodeLabels={"disktype": "ssd"}, tolerations=[TOL1]), checks=[check])
    assert out.error is None
    assert out.trainjob["spec"]["suspend"] is False
    assert out.trainjob["spec"]["runtimePatches"] == [
        runtime_patch(
            KUEUE,
            rj_patch(
                "node",
                annotations={"test-annotation": "test"},
                labels={"kueue.x-k8s.io/podset": "node", "test-label": "label"},
                nodeSelector={"disktype": "ssd"},
                tolerations=[TOL1],
            ),
        )
    ]
    [patch] = out.patches  # one write: the patches change together with suspend, as Trainer allows
    assert patch["spec"]["suspend"] is False and "resourceVersion" in patch["metadata"]
    assert out.events == [("Normal", "Started", "Admitted by clusterQueue cq")]


def test_start_keeps_other_managers_patches() -> None:
    """ "should respect user provided RuntimePatches when adding PodSet info config to the trainjob"."""
    user = runtime_patch(
        "example.com/user-manager", rj_patch("node", nodeSelector={"disktype": "sdd"}, tolerations=[TOL1])
    )
    out = start(
        trainjob(patches=[user, runtime_patch()]), flavor("spot", nodeLabels={"gpu": "nvidia"}, tolerations=[TOL2])
    )
    first, kueue = out.trainjob["spec"]["runtimePatches"]
    assert first == user
    assert kueue_jobs(out.trainjob) == [
        rj_patch("node", labels={"kueue.x-k8s.io/podset": "node"}, nodeSelector={"gpu": "nvidia"}, tolerations=[TOL2])
    ]
    assert kueue["manager"] == KUEUE


def test_start_replaces_kueues_earlier_overrides() -> None:
    """ "should replace existing Kueue overrides (idempotency)": a stale entry goes, the admission's comes."""
    stale = runtime_patch(KUEUE, rj_patch("node", annotations={"a": "old"}, nodeSelector={"old-selector": "value"}))
    job = trainjob(patches=[stale])
    wl = created_workload(trainjob(), ONE_NODE)
    out = reconcile(
        job,
        runtimes=[ONE_NODE],
        workloads=[admitted(wl, "new")],
        flavors=[flavor("new", nodeLabels={"new-selector": "value"})],
    )
    assert out.error is None and out.events == [("Normal", "Started", "Admitted by clusterQueue cq")]
    assert kueue_jobs(out.trainjob) == [
        rj_patch("node", labels={"kueue.x-k8s.io/podset": "node"}, nodeSelector={"new-selector": "value"})
    ]


def test_start_without_the_runtime_leaves_the_trainjob_and_retries() -> None:
    """ "should return an error if the trainjob references an unknown training runtime"."""
    wl = created_workload(trainjob(), ONE_NODE)
    job = trainjob(runtime_name="gone")
    out = reconcile(job, runtimes=[ONE_NODE], workloads=[admitted(wl, "default")])
    assert out.error == "runtime 'gone' not found"
    assert out.patches == [] and out.events == []


def test_start_without_kueues_runtime_patch_is_retried() -> None:
    """A TrainJob created without Kueue's webhook has no patch to start through (upstream's error)."""
    wl = created_workload(trainjob(), ONE_NODE)
    out = reconcile(trainjob(patches=[]), runtimes=[ONE_NODE], workloads=[admitted(wl, "default")])
    assert out.error == "kueue runtime patch not found"
    assert out.patches == []


def test_the_adapter_raises_for_a_start_it_cannot_apply() -> None:
    """ "should not modify the TrainJob if the wrong number of PodSet infos is provided": a permanent
    error (the executor finishes the Workload as FailedToStart); a missing Kueue patch is retried."""
    wl = admitted(created_workload(trainjob(), ONE_NODE), "default")
    store = Store()
    store.put("clustertrainingruntimes", copy.deepcopy(ONE_NODE))
    adapter = t.TrainJob(trainjob(patches=[]), store=store)
    with pytest.raises(JobError, match="kueue runtime patch not found"):
        adapter.run_with_pod_sets_info(
            wl, {"default": flavor("default")}, tas=False, assign_queue_labels=False, elastic=False
        )
    wl["status"]["admission"]["podSetAssignments"].append({"name": "x", "count": 1, "flavors": {}})
    with pytest.raises(StartConflict, match="expecting 1 podset, got 2"):
        adapter.run_with_pod_sets_info(
            wl, {"default": flavor("default")}, tas=False, assign_queue_labels=False, elastic=False
        )


# --- TestRestorePodSetsInfo, and stopping ---------------------------------------------------------------

RUNNING_PATCHES = [
    runtime_patch("example.com/user-manager", rj_patch("user-provided-1"), rj_patch("user-provided-2")),
    runtime_patch(KUEUE, rj_patch("node", labels={"kueue.x-k8s.io/podset": "node"}, nodeSelector={"a": "b"})),
]


def test_restore_clears_kueues_replicated_job_patches_only() -> None:
    """ "should clear replicated job patches from the kueue RuntimePatch"."""
    adapter = t.TrainJob(trainjob(patches=RUNNING_PATCHES, suspend=False), store=Store())
    patch = adapter.restore_pod_sets_info(None)
    assert patch is not None
    assert patch["spec"]["runtimePatches"] == [RUNNING_PATCHES[0], runtime_patch(KUEUE)]
    assert t.TrainJob(trainjob(), store=Store()).restore_pod_sets_info(None) is None  # nothing to clear


def evicted(wl: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(wl)
    out["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "ClusterQueueStopped", "message": "The ClusterQueue is stopped"}
    )
    return out


def running(active: int) -> dict[str, Any]:
    status = {
        "jobsStatus": [{"name": "node", "active": active, "ready": active, "succeeded": 0, "failed": 0, "suspended": 0}]
    }
    return trainjob(suspend=False, patches=copy.deepcopy(RUNNING_PATCHES), status=status)


def test_an_evicted_running_trainjob_is_suspended_then_restored_once_its_jobs_stop() -> None:
    """Upstream's `Stop`: suspend, then (an error while child Jobs are active) empty Kueue's patch."""
    wl = evicted(admitted(created_workload(running(0), ONE_NODE), "default"))
    first = reconcile(running(1), runtimes=[ONE_NODE], workloads=[wl])
    assert first.error == "jobs are still active"
    assert first.patches == [
        {"metadata": {"resourceVersion": first.patches[0]["metadata"]["resourceVersion"]}, "spec": {"suspend": True}}
    ]
    assert first.trainjob["spec"]["suspend"] is True and kueue_jobs(first.trainjob)
    assert first.events == []  # stopped only once the templates are restored

    suspended_idle = running(0)
    suspended_idle["spec"]["suspend"] = True
    second = reconcile(suspended_idle, runtimes=[ONE_NODE], workloads=[wl])
    assert second.error is None
    assert kueue_jobs(second.trainjob) is None
    assert second.trainjob["spec"]["runtimePatches"][0] == RUNNING_PATCHES[0]
    assert second.events == [("Normal", "Stopped", "The ClusterQueue is stopped")]
    [after] = second.workloads
    assert "admission" not in after["status"]  # the reservation goes once no child Job is active
    requeued = next(c for c in after["status"]["conditions"] if c["type"] == "Requeued")
    assert requeued["reason"] == "ClusterQueueStopped"


def test_stopping_a_trainjob_without_kueues_patch_fails_as_upstream() -> None:
    wl = evicted(admitted(created_workload(running(0), ONE_NODE), "default"))
    job = running(0)
    job["spec"]["runtimePatches"] = [RUNNING_PATCHES[0]]
    out = reconcile(job, runtimes=[ONE_NODE], workloads=[wl])
    assert out.error == "error restoring info to the trainjob"
    assert out.trainjob["spec"]["suspend"] is True and out.events == []


def test_a_running_trainjob_whose_workload_is_not_admitted_is_stopped() -> None:
    wl = created_workload(running(0), ONE_NODE)
    out = reconcile(running(0), runtimes=[ONE_NODE], workloads=[wl])
    assert out.error is None
    assert out.trainjob["spec"]["suspend"] is True and kueue_jobs(out.trainjob) is None
    assert out.events == [("Normal", "Stopped", "Not admitted by cluster queue")]


# --- finished, active, ready, reclaimable ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("ctype", "reason"),
    [pytest.param("Complete", "Succeeded", id="complete"), pytest.param("Failed", "Failed", id="failed")],
)
def test_a_finished_trainjob_finishes_its_workload(ctype: str, reason: str) -> None:
    wl = admitted(created_workload(running(0), ONE_NODE), "default")
    job = running(0)
    job["status"]["conditions"] = [{"type": ctype, "status": "True", "reason": "X", "message": "done here"}]
    out = reconcile(job, runtimes=[ONE_NODE], workloads=[wl])
    finished = next(c for c in out.workloads[0]["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["reason"], finished["message"]) == (reason, "done here")
    assert ("Normal", "FinishedWorkload", f"Workload 'ns/{wl['metadata']['name']}' is declared finished") in out.events


def _adapter(job: dict[str, Any], rt: dict[str, Any] = TRAINER_AND_FOO) -> t.TrainJob:
    store = Store()
    store.put("clustertrainingruntimes", copy.deepcopy(rt))
    return t.TrainJob(job, store=store)


def _jobs_status(**by_name: tuple[int, int, int]) -> dict[str, Any]:
    return {
        "jobsStatus": [
            {"name": name, "active": a, "ready": r, "succeeded": s, "failed": 0, "suspended": 0}
            for name, (a, r, s) in by_name.items()
        ]
    }


def test_active_ready_and_reclaimable_follow_the_child_jobs() -> None:
    rt = runtime(
        replicated_job("node", labels={ANCESTOR: "trainer"}),
        replicated_job("foo", replicas=2, parallelism=3, completions=3),
    )
    idle = _adapter(trainjob(status=_jobs_status(node=(0, 0, 0), foo=(0, 0, 0))), rt)
    assert not idle.is_active() and not idle.pods_ready() and idle.reclaimable_pods({}) == []
    busy = _adapter(trainjob(status=_jobs_status(node=(1, 1, 0), foo=(1, 1, 1))), rt)
    assert busy.is_active() and busy.pods_ready()  # 1 + 2 replicas: ready and succeeded child Jobs
    assert busy.reclaimable_pods({}) == [{"name": "foo", "count": 3}]  # one succeeded copy of 3 pods
    assert _adapter(trainjob(), rt).reclaimable_pods({}) == []  # no child Job reported yet
    assert not _adapter(trainjob(runtime_name="gone", status=_jobs_status(node=(1, 1, 0)))).pods_ready()


# --- the JobSet the runtime makes -------------------------------------------------------------------------


def spec_of(job: dict[str, Any], rt: dict[str, Any]) -> dict[str, Any]:
    return tj.child_jobset_spec(job, rt)


@pytest.mark.parametrize(
    ("policy", "num_nodes", "counts"),
    [
        pytest.param(None, None, {"node": 5, "launcher": 1}, id="no policy: the trainer's parallelism"),
        pytest.param({"numNodes": 3, "torch": {}}, None, {"node": 3, "launcher": 1}, id="torch: the runtime's numNodes"),
        pytest.param({"numNodes": 3, "torch": {}}, 4, {"node": 4, "launcher": 1}, id="torch: the TrainJob's numNodes"),
        pytest.param({"torch": {}}, None, {"node": 1, "launcher": 1}, id="torch without numNodes: one"),
        pytest.param({"numNodes": 3, "mpi": {}}, 4, {"node": 4, "launcher": 1}, id="mpi: the node job"),
        pytest.param({"numNodes": 3, "mpi": {"runLauncherAsNode": True}}, 4, {"node": 3, "launcher": 1},
                     id="mpi with the launcher as a node"),
        pytest.param({"numNodes": 3, "xgboost": {}}, 2, {"node": 2, "launcher": 1}, id="xgboost"),
        pytest.param(None, 2, {"node": 2, "launcher": 1}, id="plain ML"),
    ],
)  # fmt: skip
def test_counts_follow_the_ml_policy(
    policy: dict[str, Any] | None, num_nodes: int | None, counts: dict[str, int]
) -> None:
    extra: dict[str, Any] = {} if policy is None else {"mlPolicy": policy}
    rt = runtime(
        replicated_job("launcher", parallelism=2, completions=3),
        replicated_job("node", labels={ANCESTOR: "trainer"}, parallelism=5, completions=5),
        **extra,
    )
    spec = spec_of(trainjob(trainer={"numNodes": num_nodes} if num_nodes else None), rt)
    got = {rj["name"]: rj["template"]["spec"]["parallelism"] for rj in spec["replicatedJobs"]}
    # The launcher's parallelism 2 is its count: completions follow it.
    assert got == {**counts, "launcher": 2}
    assert all(rj["template"]["spec"]["completions"] == got[rj["name"]] for rj in spec["replicatedJobs"])


def test_initializers_and_the_trainer_run_one_replica_with_the_trainjobs_settings() -> None:
    rt = runtime(
        replicated_job(
            "dataset-initializer",
            replicas=3,
            labels={ANCESTOR: "dataset-initializer"},
            containers=[{"name": "dataset-initializer", "env": [{"name": "STORAGE_URI", "value": "old"}]}],
        ),
        replicated_job("trainer", replicas=2, labels={ANCESTOR: "trainer"}, containers=[{"name": "node"}]),
        podGroupPolicy={"coscheduling": {}},
    )
    job = trainjob(trainer={"env": [{"name": "X", "value": "1"}]})
    job["spec"]["initializer"] = {
        "dataset": {"storageUri": "hf://data", "env": [{"name": "E", "value": "e"}], "secretRef": {"name": "creds"}}
    }
    dataset, trainer = spec_of(job, rt)["replicatedJobs"]
    assert dataset["replicas"] == 1 and trainer["replicas"] == 1
    assert dataset["template"]["spec"]["template"]["spec"]["containers"] == [
        {
            "name": "dataset-initializer",
            "env": [{"name": "STORAGE_URI", "value": "hf://data"}, {"name": "E", "value": "e"}],
            "envFrom": [{"secretRef": {"name": "creds"}}],
        }
    ]
    assert trainer["template"]["spec"]["template"]["spec"]["containers"] == [
        {"name": "node", "env": [{"name": "X", "value": "1"}]}
    ]
    for rj in (dataset, trainer):  # the coscheduling plugin's pod group
        assert rj["template"]["spec"]["template"]["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "trainjob"}


def test_runtime_patches_merge_strategically_into_the_job_template() -> None:
    template: dict[str, Any] = {
        "metadata": {"labels": {"a": "1"}},
        "spec": {
            "template": {
                "metadata": {"annotations": {"keep": "x", "drop": "y"}},
                "spec": {
                    "containers": [
                        {
                            "name": "node",
                            "env": [{"name": "A", "value": "1"}],
                            "volumeMounts": [{"name": "v", "mountPath": "/a"}],
                        },
                        {"name": "other"},
                    ],
                    "tolerations": [TOL1],
                    "nodeSelector": {"zone": "a"},
                    "schedulingGates": [{"name": "g1"}],
                },
            }
        },
    }
    patch = {
        "metadata": {"labels": {"b": "2"}},
        "spec": {
            "template": {
                "metadata": {"annotations": {"drop": None, "new": "z"}},
                "spec": {
                    "containers": [
                        {"name": "node", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
                         "volumeMounts": [{"name": "w", "mountPath": "/a"}]},
                        {"name": "added"},
                    ],
                    "tolerations": [TOL2],
                    "nodeSelector": {"disk": "ssd"},
                    "schedulingGates": [{"name": "g2"}],
                },
            }
        },
    }  # fmt: skip
    merged = tj.merge_job_template(template, patch)
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}
    pod = merged["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"keep": "x", "new": "z"}
    assert pod["spec"]["containers"] == [
        {
            "name": "node",
            "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
            "volumeMounts": [{"name": "w", "mountPath": "/a"}],
        },
        {"name": "other"},
        {"name": "added"},
    ]
    assert pod["spec"]["tolerations"] == [TOL2]  # atomic: replaced
    assert pod["spec"]["nodeSelector"] == {"zone": "a", "disk": "ssd"}
    assert pod["spec"]["schedulingGates"] == [{"name": "g1"}, {"name": "g2"}]
    assert template["spec"]["template"]["spec"]["tolerations"] == [TOL1]  # the input is left alone


def test_pods_ready_once_every_child_job_is_ready() -> None:
    wl = admitted(created_workload(running(0), ONE_NODE), "default")
    waiting = reconcile(running(0), runtimes=[ONE_NODE], workloads=[wl], wait_for_pods_ready=True)
    ready = reconcile(running(1), runtimes=[ONE_NODE], workloads=[wl], wait_for_pods_ready=True)
    for out, status, reason in ((waiting, "False", "WaitForStart"), (ready, "True", "Started")):
        cond = next(c for c in out.workloads[0]["status"]["conditions"] if c["type"] == "PodsReady")
        assert (cond["status"], cond["reason"]) == (status, reason)


def test_the_worker_follows_trainjobs_and_runtimes_without_waiting_for_trainers_crds() -> None:
    config = Configuration(integrations=Integrations(frameworks=("trainer.kubeflow.org/trainjob",)))
    manager = Manager(FakeKube(), config, identity="t", stop=threading.Event())  # type: ignore[arg-type]
    [wiring] = [w for w in manager.integrations if isinstance(w.reconciler, t.TrainJobReconciler)]
    assert {(r.path, r.optional) for r in wiring.watches} == {
        ("/apis/trainer.kubeflow.org/v1alpha1/trainjobs", True),
        ("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", True),
        ("/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes", True),
    }
