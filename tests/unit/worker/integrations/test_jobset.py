"""The JobSet integration: upstream's `pkg/controller/jobs/jobset/jobset_controller_test.go` (v0.19.2)
translated, then the generic reconcile's steps as a JobSet sees them, end to end against a fake API.

Upstream's `TestPodsReady`, `TestReclaimablePods`, `TestPodSets`, `TestRestorePodSetsInfo` and
`TestReconciler` keep their case names. The reconcile scenarios after them run one reconcile of
the JobSet's key through `JobSetReconciler` (the pure `plan` and its executor) and compare what a
user sees: the JobSet, its Workloads, the patches sent and the events.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from tests.unit.worker.integrations.job_world import NOW, admit, evict, ts
from webhook import kube as k
from webhook.config import Configuration, Integrations, WaitForPodsReady
from webhook.worker import events
from webhook.worker.integrations import jobset as js
from webhook.worker.jobframework.setup import SetupContext
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

API = "jobset.x-k8s.io/v1alpha2"
WL_API = "kueue.x-k8s.io/v1beta2"
WL_FIN = "kueue.x-k8s.io/resource-in-use"
QUEUE = "kueue.x-k8s.io/queue-name"
PODSET = "kueue.x-k8s.io/podset"
LQ_LABEL = "kueue.x-k8s.io/local-queue-name"
CQ_LABEL = "kueue.x-k8s.io/cluster-queue-name"
INDEX = "batch.kubernetes.io/job-completion-index"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
POD_SPEC = {"restartPolicy": "Never", "containers": [{"name": "test-container", "image": "busybox:latest"}]}


# --- builders (upstream's testingjobset wrappers, as plain dicts) ---------------------------------------


def rj(
    name: str, replicas: int = 1, parallelism: int = 1, completions: int = 1, pod_annotations: Mapping[str, str] = ()
) -> dict[str, Any]:
    """`ReplicatedJobRequirements{Name, Replicas, Parallelism, Completions, PodAnnotations}`."""
    template: dict[str, Any] = {"spec": copy.deepcopy(POD_SPEC)}
    if pod_annotations:
        template["metadata"] = {"annotations": dict(pod_annotations)}
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"parallelism": parallelism, "completions": completions, "template": template}},
    }


class JS:
    """`testingjobset.MakeJobSet(name, ns)`: suspended, no replicatedJobs until given."""

    def __init__(self, name: str = "jobset", ns: str = "ns") -> None:
        self.o: dict[str, Any] = {
            "apiVersion": API,
            "kind": "JobSet",
            "metadata": {"name": name, "namespace": ns, "uid": "js-uid"},
            "spec": {"suspend": True, "replicatedJobs": []},
        }

    def replicated_jobs(self, *rjs: dict[str, Any]) -> JS:
        self.o["spec"]["replicatedJobs"] = list(rjs)
        return self

    def suspend(self, value: bool) -> JS:
        self.o["spec"]["suspend"] = value
        return self

    def label(self, key: str, value: str) -> JS:
        self.o["metadata"].setdefault("labels", {})[key] = value
        return self

    def queue(self, name: str) -> JS:
        return self.label(QUEUE, name)

    def annotations(self, annotations: Mapping[str, str]) -> JS:
        self.o["metadata"]["annotations"] = dict(annotations)
        return self

    def priority_class(self, name: str) -> JS:
        """`PriorityClass(name)`: every replicatedJob's pod template names it."""
        for r in self.o["spec"]["replicatedJobs"]:
            r["template"]["spec"]["template"]["spec"]["priorityClassName"] = name
        return self

    def pod_template(self, i: int) -> dict[str, Any]:
        return self.o["spec"]["replicatedJobs"][i]["template"]["spec"]["template"]  # type: ignore[no-any-return]

    def pod_label(self, i: int, key: str, value: str) -> JS:
        self.pod_template(i).setdefault("metadata", {}).setdefault("labels", {})[key] = value
        return self

    def node_selector(self, i: int, key: str, value: str) -> JS:
        self.pod_template(i)["spec"].setdefault("nodeSelector", {})[key] = value
        return self

    def request(self, i: int, resource: str, value: str) -> JS:
        ctr = self.pod_template(i)["spec"]["containers"][0]
        ctr.setdefault("resources", {}).setdefault("requests", {})[resource] = value
        return self

    def jobs_status(self, *statuses: dict[str, Any]) -> JS:
        self.o.setdefault("status", {})["replicatedJobsStatus"] = list(statuses)
        return self

    def condition(self, ctype: str, message: str, status: str = "True") -> JS:
        self.o.setdefault("status", {}).setdefault("conditions", []).append(
            {"type": ctype, "status": status, "reason": "ByTest", "message": message}
        )
        return self

    def controlled_by(self, api_version: str, kind: str, name: str) -> JS:
        self.o["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": name, "controller": True}
        ]
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


def status(name: str, **counts: int) -> dict[str, Any]:
    """`jobset.ReplicatedJobStatus{Name, Ready, Succeeded, Active, ...}`."""
    return {"name": name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0, **counts}


def two_jobs() -> JS:
    """The JobSet most scenarios start from: queue `foo`, two replicatedJobs of one cpu each."""
    return (
        JS()
        .queue("foo")
        .replicated_jobs(rj("leader", 1, 1, 1), rj("workers", 2, 2, 2))
        .request(0, "cpu", "1")
        .request(1, "cpu", "1")
    )


def podset_of(jobset: JS, i: int, count: int) -> dict[str, Any]:
    r = jobset.o["spec"]["replicatedJobs"][i]
    return {"name": r["name"], "count": count, "template": copy.deepcopy(r["template"]["spec"]["template"])}


def workload(jobset: JS, *, name: str = "wl") -> dict[str, Any]:
    """The Workload the reconciler creates for `two_jobs()` (already created, finalizer on)."""
    return {
        "apiVersion": WL_API,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "finalizers": [WL_FIN],
            "ownerReferences": [
                {
                    "apiVersion": API,
                    "kind": "JobSet",
                    "name": "jobset",
                    "uid": "js-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": "foo",
            "priority": 0,
            "podSets": [podset_of(jobset, 0, 1), podset_of(jobset, 1, 4)],
        },
    }


# --- upstream: TestPodsReady --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jobset", "want"),
    [
        pytest.param(
            JS()
            .replicated_jobs(rj("replicated-job-1", 2), rj("replicated-job-2", 3))
            .jobs_status(status("replicated-job-1", ready=1, succeeded=1), status("replicated-job-2", ready=3))
            .obj(),
            True,
            id="all jobs are ready",
        ),
        pytest.param(
            JS()
            .replicated_jobs(rj("replicated-job-1", 2), rj("replicated-job-2", 3))
            .jobs_status(status("replicated-job-1", ready=1), status("replicated-job-2", ready=1, succeeded=2))
            .obj(),
            False,
            id="not all jobs are ready",
        ),
    ],
)
def test_pods_ready(jobset: dict[str, Any], want: bool) -> None:
    assert js.JobSet(jobset).pods_ready() is want


# --- upstream: TestReclaimablePods --------------------------------------------------------------------

RECLAIM_BASE = JS().replicated_jobs(rj("replicated-job-1", 1, 2, 2), rj("replicated-job-2", 2, 3, 6))


@pytest.mark.parametrize(
    ("statuses", "want"),
    [
        pytest.param(None, [], id="no status"),
        pytest.param((), [], id="empty jobs status"),
        pytest.param(
            (status("replicated-job-1", succeeded=1),), [{"name": "replicated-job-1", "count": 2}], id="single job done"
        ),
        pytest.param(
            (status("replicated-job-2", succeeded=1),),
            [{"name": "replicated-job-2", "count": 3}],
            id="single job partial done",
        ),
        pytest.param(
            (status("replicated-job-1", succeeded=1), status("replicated-job-2", succeeded=2)),
            [{"name": "replicated-job-1", "count": 2}, {"name": "replicated-job-2", "count": 6}],
            id="all done",
        ),
    ],
)
def test_reclaimable_pods(statuses: Sequence[dict[str, Any]] | None, want: list[dict[str, Any]]) -> None:
    jobset = copy.deepcopy(RECLAIM_BASE)
    if statuses is not None:
        jobset.jobs_status(*statuses)
    assert js.JobSet(jobset.obj()).reclaimable_pods({}) == want


def test_more_succeeded_jobs_than_replicas_reclaim_nothing() -> None:
    """Upstream counts a replicatedJob only while `succeeded <= replicas`."""
    jobset = copy.deepcopy(RECLAIM_BASE).jobs_status(status("replicated-job-1", succeeded=2)).obj()
    assert js.reclaimable_pods(jobset) == []


# --- upstream: TestPodSets ----------------------------------------------------------------------------


def _topology(replicas: int, **request: str) -> dict[str, Any]:
    return {**request, "podIndexLabel": INDEX, "subGroupIndexLabel": JOB_INDEX, "subGroupCount": replicas}


@pytest.mark.parametrize(
    ("rjs", "tas", "want"),
    [
        pytest.param((rj("job1", 2, 1, 1), rj("job2", 3, 2, 3)), False, [(2, None), (6, None)], id="no annotations"),
        pytest.param(
            (rj("job1", 2, 1, 1, {REQUIRED: "cloud.com/block"}), rj("job2", 3, 2, 3)),
            True,
            [(2, _topology(2, required="cloud.com/block")), (6, _topology(3))],
            id="with required topology annotation",
        ),
        pytest.param(
            (rj("job1", 2, 1, 1), rj("job2", 3, 2, 3, {PREFERRED: "cloud.com/block"})),
            True,
            [(2, _topology(2)), (6, _topology(3, preferred="cloud.com/block"))],
            id="with preferred topology annotation",
        ),
        pytest.param(
            (
                rj("job1", 2, 1, 1),
                rj("job2", 2, 1, 1, {REQUIRED: "cloud.com/block"}),
                rj("job3", 3, 2, 3, {PREFERRED: "cloud.com/block"}),
            ),
            False,
            [(2, None), (2, None), (6, None)],
            id="without required and preferred topology annotation if TAS is disabled",
        ),
    ],
)
def test_pod_sets(rjs: Sequence[dict[str, Any]], tas: bool, want: list[tuple[int, dict[str, Any] | None]]) -> None:
    """One podSet per replicatedJob, named after it, of replicas times min(parallelism, completions),
    with its pod template unchanged; no minCount (JobSet has no partial admission)."""
    jobset = JS().replicated_jobs(*rjs)
    got = js.JobSet(jobset.obj(), tas=tas).pod_sets(partial_admission=True)
    expected = []
    for i, (count, request) in enumerate(want):
        ps = podset_of(jobset, i, count)
        if request is not None:
            ps["topologyRequest"] = request
        expected.append(ps)
    assert got == expected


# --- upstream: TestRestorePodSetsInfo -----------------------------------------------------------------


def _wl_with_pod_sets(*node_selectors: dict[str, str]) -> dict[str, Any]:
    return {
        "spec": {
            "podSets": [
                {"name": f"ps{i}", "count": 1, "template": {"spec": {"nodeSelector": ns, **POD_SPEC}}}
                for i, ns in enumerate(node_selectors)
            ]
        }
    }


@pytest.mark.parametrize(
    ("wl", "changed"),
    [
        pytest.param(_wl_with_pod_sets({}), False, id="fewer podSetsInfo than replicated jobs is a no-op"),
        pytest.param(_wl_with_pod_sets({}, {}, {}), False, id="more podSetsInfo than replicated jobs is a no-op"),
        pytest.param(
            _wl_with_pod_sets({"restored": "true"}, {"restored": "true"}), True, id="matching length restores pod sets"
        ),
    ],
)
def test_restore_pod_sets_info(wl: dict[str, Any], changed: bool) -> None:
    jobset = JS().replicated_jobs(rj("job1"), rj("job2"))
    patch = js.JobSet(jobset.obj()).restore_pod_sets_info(wl)
    assert (patch is not None) is changed
    if patch is not None:
        selectors = [r["template"]["spec"]["template"]["spec"]["nodeSelector"] for r in patch["spec"]["replicatedJobs"]]
        assert selectors == [{"restored": "true"}, {"restored": "true"}]


# --- the fake API and one reconcile -------------------------------------------------------------------


class _Kube(FakeKube):
    """Optimistic locking on merge patches, merge patches of `…/status`, finalizer-aware deletion;
    every JobSet patch is kept in `job_patches`."""

    def __init__(self) -> None:
        super().__init__()
        self.job_patches: list[dict[str, Any]] = []

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
        target = path.removesuffix("/status")
        if method == "PATCH" and isinstance(body, Mapping):
            if "/jobsets/" in path:
                self.job_patches.append(copy.deepcopy(dict(body)))
            sent = (body.get("metadata") or {}).get("resourceVersion")
            current = self.objects.get(target)
            if sent is not None and current is not None and sent != current["metadata"]["resourceVersion"]:
                raise k.Conflict(409, "the object has been modified")
            if path != target:
                return super().request(method, target, body={"status": body.get("status") or {}})
        if method == "DELETE" and self.objects.get(path, {}).get("metadata", {}).get("finalizers"):
            with self._lock:
                self.objects[path]["metadata"].setdefault("deletionTimestamp", ts(NOW))
                return copy.deepcopy(self.objects[path])
        return super().request(method, path, query=query, body=body, content_type=content_type, timeout=timeout)


class _Recorder(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="test", stop=threading.Event())
        self.seen: list[tuple[str, str, str, str]] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        assert controller == "jobset.x-k8s.io/jobset-kueue-controller"
        meta = obj.get("metadata") or {}
        self.seen.append((f"{meta.get('namespace')}/{meta.get('name')}", etype, reason, note))


@dataclass
class Outcome:
    jobset: dict[str, Any] | None
    workloads: list[dict[str, Any]]
    job_patches: list[dict[str, Any]]
    events: list[tuple[str, str, str, str]]
    error: str | None


@dataclass
class World:
    jobset: dict[str, Any]
    workloads: Sequence[dict[str, Any]] = ()
    classes: Sequence[tuple[str, dict[str, Any]]] = ()
    flavors: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"default": {}})
    config: Configuration = field(
        default_factory=lambda: Configuration(
            wait_for_pods_ready=None, feature_gates={"TopologyAwareScheduling": False}
        )
    )


def reconcile(world: World) -> Outcome:
    kube, store, recorder = _Kube(), Store(), _Recorder()
    reconciler = js.JobSetReconciler(
        kube, store, world.config, recorder, clock=lambda: NOW, requeue_after=lambda *_: None
    )

    def add(kind: str, path: str, obj: dict[str, Any]) -> None:
        full = f"{path}/{obj['metadata']['name']}"
        kube.put(full, obj)
        store.put(kind, copy.deepcopy(kube.objects[full]))

    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"k": "v"}}}
    add("namespaces", "/api/v1/namespaces", ns)
    for name, spec in world.flavors.items():
        flavor = {"apiVersion": WL_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": dict(spec)}
        add("resourceflavors", k.object_path(WL_API, "resourceflavors", None), flavor)
    for kind, obj in world.classes:
        add(kind, k.object_path(obj["apiVersion"], kind, None), obj)
    add("jobsets", k.object_path(API, "jobsets", "ns"), world.jobset)
    for wl in world.workloads:
        add("workloads", k.object_path(WL_API, "workloads", "ns"), wl)
    error = None
    try:
        reconciler.reconcile("ns/jobset")
    except Retry as exc:
        error = str(exc)
    return Outcome(
        jobset=kube.objects.get(k.object_path(API, "jobsets", "ns", "jobset")),
        workloads=[o for p, o in sorted(kube.objects.items()) if "/workloads/" in p],
        job_patches=kube.job_patches,
        events=recorder.seen,
        error=error,
    )


def _spec_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    assert obj is not None
    return obj["spec"]  # type: ignore[no-any-return]


# --- upstream: TestReconciler -------------------------------------------------------------------------

WPC = (
    "workloadpriorityclasses",
    {"apiVersion": WL_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "test-wpc"}, "value": 100},
)
PC = (
    "priorityclasses",
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "test-pc"}, "value": 200},
)
WPC_REF = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "test-wpc"}
PC_REF = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "test-pc"}
PROVREQ = "provreq.kueue.x-k8s.io/test-annotation"
MANAGE_ALL = Configuration(manage_jobs_without_queue_name=True, wait_for_pods_ready=None)  # TAS on, as upstream


@pytest.mark.parametrize(
    ("jobset", "classes", "want_counts", "want_priority", "want_annotations"),
    [
        pytest.param(
            JS()
            .replicated_jobs(rj("replicated-job-1", 1, 1, 1), rj("replicated-job-2", 2, 2, 2))
            .annotations({PROVREQ: "test-val", "invalid-provreq-prefix/test-annotation-2": "test-val-2"}),
            (),
            {"replicated-job-1": 1, "replicated-job-2": 4},
            (0, None),
            {PROVREQ: "test-val"},
            id="workload is created with podsets and a ProvReq annotation",
        ),
        pytest.param(
            JS().replicated_jobs(rj("replicated-job-1")).label("kueue.x-k8s.io/priority-class", "test-wpc"),
            (WPC,),
            {"replicated-job-1": 1},
            (100, WPC_REF),
            None,
            id="workload is created with podsets and workloadPriorityClass",
        ),
        pytest.param(
            JS().replicated_jobs(rj("replicated-job-1")).priority_class("test-pc"),
            (PC,),
            {"replicated-job-1": 1},
            (200, PC_REF),
            None,
            id="workload is created with podsets and PriorityClass",
        ),
        pytest.param(
            JS()
            .replicated_jobs(rj("replicated-job-1"))
            .priority_class("test-pc")
            .label("kueue.x-k8s.io/priority-class", "test-wpc"),
            (PC, WPC),
            {"replicated-job-1": 1},
            (100, WPC_REF),
            None,
            id="workload is created with podsets, workloadPriorityClass and PriorityClass",
        ),
    ],
)
def test_reconciler_creates_the_workload(
    jobset: JS,
    classes: Sequence[tuple[str, dict[str, Any]]],
    want_counts: dict[str, int],
    want_priority: tuple[int, dict[str, str] | None],
    want_annotations: dict[str, str] | None,
) -> None:
    got = reconcile(World(jobset.obj(), classes=classes, config=MANAGE_ALL))
    assert got.error is None
    assert _spec_of(got.jobset) == jobset.obj()["spec"] and got.job_patches == []
    (wl,) = got.workloads
    name = js.workload_name("jobset", "js-uid")
    assert wl["metadata"]["name"] == name
    assert wl["metadata"].get("annotations") == want_annotations
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    assert wl["metadata"]["ownerReferences"][0]["apiVersion"] == API
    assert {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]} == want_counts
    for ps, r in zip(wl["spec"]["podSets"], jobset.obj()["spec"]["replicatedJobs"], strict=True):
        assert ps["topologyRequest"] == _topology(r["replicas"])
        assert "minCount" not in ps
    assert (wl["spec"]["priority"], wl["spec"].get("priorityClassRef")) == want_priority
    assert got.events == [("ns/jobset", "Normal", "CreatedWorkload", f"Created Workload: ns/{name}")]


# --- the generic reconcile, as a JobSet sees it -------------------------------------------------------


def test_a_jobset_without_queue_name_is_left_alone() -> None:
    got = reconcile(World(JS().replicated_jobs(rj("a")).obj()))
    assert (got.workloads, got.job_patches, got.events) == ([], [], [])


def test_a_jobset_run_by_another_enabled_integration_is_left_alone() -> None:
    """A TrainJob's JobSet: the TrainJob's integration owns admission (upstream suspends such a child
    while its ancestor's Workload is not admitted; here the parent integration decides)."""
    jobset = two_jobs().controlled_by("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj").obj()
    config = Configuration(
        integrations=Integrations(frameworks=("jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob")),
        wait_for_pods_ready=None,
        feature_gates={"TopologyAwareScheduling": False},
    )
    got = reconcile(World(jobset, config=config))
    assert (got.workloads, got.job_patches, got.events) == ([], [], [])


def test_a_jobset_whose_owner_integration_is_disabled_gets_its_own_workload() -> None:
    jobset = two_jobs().controlled_by("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj").obj()
    got = reconcile(World(jobset))
    assert [wl["metadata"]["name"] for wl in got.workloads] == [js.workload_name("jobset", "js-uid")]


def test_admitted_workload_starts_the_jobset_with_each_podsets_flavor() -> None:
    """`RunWithPodSetsInfo`: one patch unsuspends the JobSet and merges each podSet's flavor node
    labels, tolerations and queue labels into its replicatedJob's pod template."""
    jobset = two_jobs().node_selector(1, "disk", "ssd")
    tol = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    wl = admit(workload(jobset))
    wl["status"]["admission"]["podSetAssignments"][1]["flavors"] = {"cpu": "spot"}
    flavors = {"default": {"nodeLabels": {"pool": "a"}}, "spot": {"nodeLabels": {"pool": "b"}, "tolerations": [tol]}}
    got = reconcile(World(jobset.obj(), workloads=[wl], flavors=flavors))
    assert got.error is None
    (patch,) = got.job_patches
    assert patch["spec"]["suspend"] is False
    assert patch["metadata"]["resourceVersion"]
    leader, workers = (r["template"]["spec"]["template"] for r in _spec_of(got.jobset)["replicatedJobs"])
    assert _spec_of(got.jobset)["suspend"] is False
    assert leader["metadata"]["labels"] == {PODSET: "leader", LQ_LABEL: "foo", CQ_LABEL: "cq"}
    assert leader["spec"]["nodeSelector"] == {"pool": "a"} and "tolerations" not in leader["spec"]
    assert workers["metadata"]["labels"] == {PODSET: "workers", LQ_LABEL: "foo", CQ_LABEL: "cq"}
    assert workers["spec"]["nodeSelector"] == {"disk": "ssd", "pool": "b"}
    assert workers["spec"]["tolerations"] == [tol]
    assert got.events == [("ns/jobset", "Normal", "Started", "Admitted by clusterQueue cq")]


def test_an_admission_for_other_podsets_fails_to_start() -> None:
    """`BadPodSetsInfoLenError` is permanent: the Workload finishes as FailedToStart."""
    jobset = two_jobs()
    wl = admit(workload(jobset))
    wl["status"]["admission"]["podSetAssignments"].pop()
    got = reconcile(World(jobset.obj(), workloads=[wl]))
    assert got.job_patches == []
    finished = next(x for x in got.workloads[0]["status"]["conditions"] if x["type"] == "Finished")
    assert (finished["status"], finished["reason"], finished["message"]) == (
        "True",
        "FailedToStart",
        "invalid podset infos: expecting 2 podset, got 1",
    )


def test_a_flavor_conflicting_with_the_template_fails_to_start() -> None:
    jobset = two_jobs().node_selector(0, "pool", "z")
    wl = admit(workload(jobset))
    got = reconcile(World(jobset.obj(), workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    finished = next(x for x in got.workloads[0]["status"]["conditions"] if x["type"] == "Finished")
    assert finished["reason"] == "FailedToStart"
    assert finished["message"] == (
        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=pool, value1=z, value2=a"
    )


def started(jobset: JS, wl: dict[str, Any]) -> dict[str, Any]:
    """The JobSet as starting with `wl`'s admission left it (flavor `default` labels pool=a)."""
    obj = jobset.suspend(False).obj()
    for i, ps in enumerate(wl["spec"]["podSets"]):
        template = obj["spec"]["replicatedJobs"][i]["template"]["spec"]["template"]
        template.setdefault("metadata", {})["labels"] = {PODSET: ps["name"], LQ_LABEL: "foo", CQ_LABEL: "cq"}
        template["spec"]["nodeSelector"] = {"pool": "a"}
    return obj


def test_eviction_stops_the_jobset_and_restores_its_templates_in_one_patch() -> None:
    """`stopJob` without a custom stop: suspend and `RestorePodSetsInfo` in one patch, the
    `Stopped` event with the eviction's message; once no Job is active the quota is released."""
    jobset = two_jobs()
    wl = admit(workload(jobset))
    evict(wl)
    running = started(jobset, wl)
    got = reconcile(World(running, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    assert got.error is None
    (patch,) = got.job_patches
    assert patch["spec"]["suspend"] is True
    assert _spec_of(got.jobset) == two_jobs().obj()["spec"]  # suspended, templates as the Workload has them
    assert got.events == [("ns/jobset", "Normal", "Stopped", "Preempted to accommodate a workload")]
    conds = {x["type"]: x for x in got.workloads[0]["status"]["conditions"]}
    assert conds["QuotaReserved"]["status"] == "False"
    assert (conds["Requeued"]["status"], conds["Requeued"]["reason"]) == ("True", "Preempted")


def test_an_evicted_jobset_keeps_its_quota_while_a_job_is_active() -> None:
    jobset = two_jobs()
    wl = admit(workload(jobset))
    evict(wl)
    running = started(jobset, wl)
    running["status"] = {"replicatedJobsStatus": [status("workers", active=1)]}
    got = reconcile(World(running, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    assert len(got.job_patches) == 1 and _spec_of(got.jobset)["suspend"] is True
    conds = {x["type"]: x["status"] for x in got.workloads[0]["status"]["conditions"]}
    assert conds["QuotaReserved"] == "True"


def test_a_suspended_jobset_is_not_stopped_again() -> None:
    """Upstream's `stopJob` leaves a suspended job as it is, even with templates unlike the
    Workload's: no patch, no event."""
    jobset = two_jobs().pod_label(0, "extra", "x")
    wl = workload(two_jobs())
    wl["status"] = {
        "conditions": [{"type": "Evicted", "status": "True", "reason": "Preempted", "message": "m"}],
    }
    got = reconcile(World(jobset.obj(), workloads=[wl]))
    assert (got.job_patches, got.events, got.error) == ([], [], None)


def test_a_running_jobset_without_admission_is_stopped() -> None:
    jobset = two_jobs().suspend(False)
    got = reconcile(World(jobset.obj(), workloads=[workload(two_jobs())]))
    (patch,) = got.job_patches
    assert patch["spec"] == {"suspend": True}
    assert got.events == [("ns/jobset", "Normal", "Stopped", "Not admitted by cluster queue")]


@pytest.mark.parametrize(
    ("condition", "message", "reason"),
    [
        pytest.param("Completed", "jobset completed successfully", "Succeeded", id="Completed: succeeded"),
        pytest.param("Failed", "jobset failed", "Failed", id="Failed: failed"),
    ],
)
def test_finished_jobset_finishes_its_workload(condition: str, message: str, reason: str) -> None:
    jobset = two_jobs()
    wl = admit(workload(jobset))
    done = started(jobset, wl)
    done["status"] = {"conditions": [{"type": condition, "status": "True", "reason": "X", "message": message}]}
    got = reconcile(World(done, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    finished = next(x for x in got.workloads[0]["status"]["conditions"] if x["type"] == "Finished")
    assert (finished["status"], finished["reason"], finished["message"]) == ("True", reason, message)
    assert got.events == [("ns/jobset", "Normal", "FinishedWorkload", "Workload 'ns/wl' is declared finished")]
    assert got.job_patches == []


def test_completed_is_read_before_failed() -> None:
    jobset = two_jobs().condition("Failed", "f").condition("Completed", "c").obj()
    assert js.finished_condition(jobset) == ("Succeeded", "c")
    assert js.finished_condition(two_jobs().condition("Completed", "c", status="False").obj()) is None


def test_succeeded_jobs_give_their_pods_quota_back() -> None:
    jobset = two_jobs()
    wl = admit(workload(jobset))
    running = started(jobset, wl)
    running["status"] = {"replicatedJobsStatus": [status("leader", succeeded=1), status("workers", active=2)]}
    got = reconcile(World(running, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    assert got.workloads[0]["status"]["reclaimablePods"] == [{"name": "leader", "count": 1}]
    assert got.job_patches == []


@pytest.mark.parametrize(
    ("statuses", "want"),
    [
        pytest.param([status("leader", ready=1), status("workers", ready=2)], "True", id="all ready"),
        pytest.param([status("leader", ready=1), status("workers", ready=1)], "False", id="one job not ready"),
    ],
)
def test_pods_ready_condition_counts_ready_jobs(statuses: list[dict[str, Any]], want: str) -> None:
    jobset = two_jobs()
    wl = admit(workload(jobset))
    running = started(jobset, wl)
    running["status"] = {"replicatedJobsStatus": statuses}
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(), feature_gates={"TopologyAwareScheduling": False})
    got = reconcile(World(running, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}, config=config))
    ready = next(x for x in got.workloads[0]["status"]["conditions"] if x["type"] == "PodsReady")
    assert ready["status"] == want


def test_a_changed_replicated_job_replaces_the_unadmitted_workload() -> None:
    """Equivalence compares podSets: a suspended JobSet whose replicas changed gets its Workload's
    spec rebuilt (`updateWorkloadToMatchJob`)."""
    jobset = two_jobs()
    old = workload(jobset)
    jobset.o["spec"]["replicatedJobs"][1]["replicas"] = 3
    got = reconcile(World(jobset.obj(), workloads=[old]))
    assert {ps["name"]: ps["count"] for ps in got.workloads[0]["spec"]["podSets"]} == {"leader": 1, "workers": 6}
    assert got.events == [
        ("ns/jobset", "Normal", "UpdatedWorkload", "Updated not matching Workload for suspended job: ns/wl")
    ]


def test_the_jobset_going_away_releases_its_workload() -> None:
    jobset = two_jobs().obj()
    jobset["metadata"]["deletionTimestamp"] = ts(NOW)
    jobset["metadata"]["finalizers"] = ["x"]
    got = reconcile(World(jobset, workloads=[admit(workload(two_jobs()))]))
    assert got.workloads[0]["metadata"].get("finalizers") in (None, [])


def test_setup_watches_jobsets() -> None:
    wiring = js.setup(
        SetupContext(
            kube=FakeKube(),  # type: ignore[arg-type]
            store=Store(),
            config=Configuration(),
            recorder=_Recorder(),
            stop=threading.Event(),
        )
    )
    assert isinstance(wiring.reconciler, js.JobSetReconciler)
    # The JobSet CRD may not be installed: the worker must not wait for its list.
    assert [(r.kind, r.api_version, r.optional) for r in wiring.watches] == [("jobsets", API, True)]
