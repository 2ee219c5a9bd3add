"""The pod wiring: reconcile keys, Workload → pod mapping, expectations, and reconcile passes that
carry out the pure reconciler's actions against a fake API."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.metric_samples import bucket_bounds
from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook import metrics
from webhook.api.pod_role import role_hash
from webhook.config import Configuration, Integrations
from webhook.worker import events
from webhook.worker.integrations.pod import adapter as pg
from webhook.worker.integrations.pod import reconciler as pod
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework.plan import Plan
from webhook.worker.jobframework.reconciler import GenericJobReconciler
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

CONFIG = Configuration(integrations=Integrations(frameworks=("batch/job", "pod")), wait_for_pods_ready=None)
POD_PATH = "/api/v1/namespaces/ns/pods"
WL_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
NOW = datetime(2025, 1, 1, tzinfo=UTC)


def make_pod(name: str, *, group: str = "", total: int = 2, uid: str = "") -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/managed": "true"}
    annotations: dict[str, str] = {}
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
        annotations["kueue.x-k8s.io/pod-group-total-count"] = str(total)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid or f"uid-{name}",
            "labels": labels,
            "annotations": annotations,
            "finalizers": ["kueue.x-k8s.io/managed"],
        },
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        },
    }


def namespace(name: str = "ns", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}},
    }


class World:
    def __init__(
        self,
        *objs: tuple[str, dict[str, Any]],
        config: Configuration = CONFIG,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.kube = FakeKube()
        self.store = Store()
        self.rec = pod.PodReconciler(
            self.kube,
            self.store,
            config,
            events.Recorder(None, instance="t", stop=threading.Event()),
            stop=threading.Event(),
            **({"clock": clock} if clock else {}),
        )
        self.store.put("namespaces", namespace())
        self.store.put(
            "resourceflavors",
            {"metadata": {"name": "on-demand"}, "spec": {"nodeLabels": {"instance-type": "on-demand"}}},
        )
        for path, obj in objs:
            self.add(path, obj)

    def add(self, path: str, obj: dict[str, Any]) -> None:
        self.kube.put(f"{path}/{obj['metadata']['name']}", obj)
        stored = self.kube.objects[f"{path}/{obj['metadata']['name']}"]
        kind = path.rsplit("/", 1)[-1]
        self.store.put(kind, copy.deepcopy(stored))
        self.rec.on_event(kind, "ADDED", stored)

    def writes(self) -> list[tuple[str, str]]:
        return [call for call in self.kube.calls if call[0] not in ("GET", "LIST", "WATCH")]


def test_keys_single_pod_and_group() -> None:
    opts = pg.Options.from_config(CONFIG)
    assert pod.pod_key(make_pod("p"), opts) == "ns/p"
    assert pod.pod_key(make_pod("p", group="g"), opts) == "group/ns/g"


@pytest.mark.parametrize(
    ("meta", "keys"),
    [
        pytest.param(
            {"annotations": {"kueue.x-k8s.io/is-group-workload": "true"}}, ["group/ns/wl"], id="group workload"
        ),
        pytest.param(
            {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "controller": True}]},
            ["ns/p"],
            id="controller pod",
        ),
        pytest.param(
            {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": True}]},
            [],
            id="job workload",
        ),
        pytest.param(
            {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]}, [], id="non-controller pod"
        ),
    ],
)
def test_workload_keys(meta: dict[str, Any], keys: list[str]) -> None:
    assert pod.workload_keys({"metadata": {"name": "wl", "namespace": "ns", **meta}}) == keys


def test_single_pod_gets_a_workload_then_is_ungated_on_admission() -> None:
    w = World((POD_PATH, make_pod("p")))
    w.rec.reconcile("ns/p")
    [wl] = w.store.list("workloads")
    assert wl["metadata"]["name"].startswith("pod-p-")
    assert wl["metadata"]["ownerReferences"][0] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p",
        "uid": "uid-p",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert ("POST", WL_PATH) in w.writes()

    admitted = copy.deepcopy(wl)
    admitted["status"] = {
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}
            for t in ("QuotaReserved", "Admitted")
        ],
        "admission": {
            "clusterQueue": "cq-gate",
            "podSetAssignments": [{"name": "main", "count": 1, "flavors": {"cpu": "on-demand"}}],
        },
    }
    w.add(WL_PATH, admitted)
    assert w.rec.queue._queued.keys() >= {"ns/p"}
    gate = {
        "name": "kueue.x-k8s.io/admission",
        "cluster_queue": "cq-gate",
        "is_group": "false",
        "replica_role": "leader",
    }
    before = metrics.WORKER_REGISTRY.get_sample_value("kueue_pod_scheduling_gate_removal_seconds_count", gate) or 0
    w.rec.reconcile("ns/p")
    got = w.kube.objects[f"{POD_PATH}/p"]
    assert got["spec"]["schedulingGates"] == []
    # Timed from the Admitted transition (long ago here): one observation, in the +Inf bucket only.
    assert (
        metrics.WORKER_REGISTRY.get_sample_value("kueue_pod_scheduling_gate_removal_seconds_count", gate) == before + 1
    )
    assert (
        metrics.WORKER_REGISTRY.get_sample_value(
            "kueue_pod_scheduling_gate_removal_seconds_bucket", {**gate, "le": "10.0"}
        )
        == 0
    )
    assert got["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
    assert got["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"


def test_namespace_outside_the_selector_is_left_alone() -> None:
    w = World()
    w.store.put("namespaces", namespace("kube-system"))
    p = make_pod("p")
    p["metadata"]["namespace"] = "kube-system"
    w.add("/api/v1/namespaces/kube-system/pods", p)
    w.rec.reconcile("kube-system/p")
    assert w.writes() == []


def test_group_waits_for_all_its_pods() -> None:
    w = World((POD_PATH, make_pod("a", group="g")))
    assert w.rec.queue._queued.keys() >= {"group/ns/g"}
    w.rec.reconcile("group/ns/g")
    assert w.writes() == [] and w.store.list("workloads") == []
    w.add(POD_PATH, make_pod("b", group="g"))
    w.rec.reconcile("group/ns/g")
    wl = w.store.get("workloads", "ns/g")
    assert wl is not None
    assert wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
    assert wl["spec"]["podSets"][0]["count"] == 2


def test_ungating_a_group_observes_each_pod_from_the_admission() -> None:
    """Both pods of an admitted group are ungated; each lifted gate is one observation of the time since
    Admitted turned True, read after that pod's patch (is_group="true")."""
    clock = [NOW]
    w = World(
        (POD_PATH, make_pod("a", group="g-gate")), (POD_PATH, make_pod("b", group="g-gate")), clock=lambda: clock[0]
    )
    patch = w.kube.patch

    def slow_patch(path: str, body: Any, **kw: Any) -> dict[str, Any]:
        clock[0] += timedelta(seconds=0.2)  # each pod patch takes 200 ms
        return patch(path, body, **kw)

    w.kube.patch = slow_patch  # type: ignore[method-assign]
    w.rec.reconcile("group/ns/g-gate")
    wl = w.store.get("workloads", "ns/g-gate")
    assert wl is not None
    admitted = copy.deepcopy(wl)
    admitted["status"] = {
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}
            for t in ("QuotaReserved", "Admitted")
        ],
        "admission": {
            "clusterQueue": "cq-group-gate",
            "podSetAssignments": [
                {"name": ps["name"], "count": 2, "flavors": {"cpu": "on-demand"}} for ps in wl["spec"]["podSets"]
            ],
        },
    }
    w.add(WL_PATH, admitted)
    clock[0] = NOW + timedelta(seconds=0.1)
    w.rec.reconcile("group/ns/g-gate")
    assert [w.kube.objects[f"{POD_PATH}/{n}"]["spec"]["schedulingGates"] for n in "ab"] == [[], []]
    gate = {
        "name": "kueue.x-k8s.io/admission",
        "cluster_queue": "cq-group-gate",
        "is_group": "true",
        "replica_role": "leader",
    }
    sample = metrics.WORKER_REGISTRY.get_sample_value
    assert sample("kueue_pod_scheduling_gate_removal_seconds_count", gate) == 2
    assert sample("kueue_pod_scheduling_gate_removal_seconds_sum", gate) == pytest.approx(0.3 + 0.5)
    assert sample("kueue_pod_scheduling_gate_removal_seconds_bucket", {**gate, "le": "0.25"}) == 0
    assert sample("kueue_pod_scheduling_gate_removal_seconds_bucket", {**gate, "le": "0.5"}) == 2
    assert bucket_bounds(metrics.POD_SCHEDULING_GATE_REMOVAL, gate) == [
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.25,
        0.5,
        1.0,
        2.5,
        5.0,
        10.0,
    ]


def test_expectations_wait_for_released_pods() -> None:
    exp = pod._Expectations()
    exp.expect("group/ns/g", {"u1", "u2"})
    assert not exp.satisfied("group/ns/g")
    exp.observed("group/ns/g", "u1")
    assert not exp.satisfied("group/ns/g")
    exp.observed("group/ns/g", "u2")
    assert exp.satisfied("group/ns/g")


def test_pod_event_without_finalizer_fulfils_the_expectation() -> None:
    w = World((POD_PATH, make_pod("a", group="g")))
    w.rec.expectations.expect("group/ns/g", {"uid-a"})
    released = make_pod("a", group="g")
    released["metadata"]["finalizers"] = []
    w.rec.on_event("pods", "MODIFIED", released)
    assert w.rec.expectations.satisfied("group/ns/g")


def _admitted_group(w: World, name: str) -> dict[str, Any]:
    """The group Workload `name` as the scheduler leaves it once it reserved quota and admitted it."""
    w.rec.reconcile(f"group/ns/{name}")
    wl = copy.deepcopy(w.kube.objects[f"{WL_PATH}/{name}"])
    wl["status"] = {
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}
            for t in ("QuotaReserved", "Admitted")
        ],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": ps["name"], "count": ps["count"], "flavors": {"cpu": "on-demand"}}
                for ps in wl["spec"]["podSets"]
            ],
        },
    }
    return wl


def test_preempted_group_is_released_once_its_stopped_pods_fail() -> None:
    """Upstream's `Stop` records no expectations (only `removeExcessPods`/`finalizePods` do): deleting the
    running pods of an evicted group must not hold the next pass, which releases the quota as soon as the
    pods are inactive, while they still carry our finalizer (their deletion cannot complete before)."""
    pods = [make_pod(n, group="g") for n in "ab"]
    for p in pods:  # as our pod webhook stamps it, so ungating keeps the role
        p["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] = role_hash(p)
    w = World(*((POD_PATH, p) for p in pods))
    wl = _admitted_group(w, "g")
    w.add(WL_PATH, wl)
    w.rec.reconcile("group/ns/g")
    running = {n: copy.deepcopy(w.kube.objects[f"{POD_PATH}/{n}"]) for n in "ab"}
    for p in running.values():
        assert p["spec"]["schedulingGates"] == []
        p["spec"]["nodeName"] = "node"
        p["status"] = {"phase": "Running"}
        w.add(POD_PATH, p)
    wl = copy.deepcopy(w.kube.objects[f"{WL_PATH}/g"])
    wl["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload",
            "lastTransitionTime": "2025-01-01T00:00:01Z",
        }
    )
    w.add(WL_PATH, wl)

    w.rec.reconcile("group/ns/g")
    assert [call for call in w.writes() if call[0] == "DELETE"] == [("DELETE", f"{POD_PATH}/{n}") for n in "ab"]

    for p in running.values():  # what the kubelet reports; our finalizer keeps them
        p["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:02Z"
        p["status"] = {"phase": "Failed"}
        w.add(POD_PATH, p)
    w.rec.reconcile("group/ns/g")  # WaitingForReplacementPods, then (on that Workload update) the release
    w.rec.reconcile("group/ns/g")
    status = w.kube.objects[f"{WL_PATH}/g"]["status"]
    got = {cd["type"]: (cd["status"], cd["reason"]) for cd in status["conditions"]}
    assert got["WaitingForReplacementPods"] == ("True", "Preempted")
    assert got["QuotaReserved"] == ("False", "PendingEvaluation")
    assert got["Requeued"] == ("True", "Preempted")
    assert got["Admitted"] == ("False", "NoReservation")
    assert "admission" not in status


def _ref(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": uid}}


def test_executor_removes_a_pod_finalizer_and_settles_a_missing_pod() -> None:
    w = World((POD_PATH, make_pod("a")))
    settled: list[tuple[str, str]] = []
    w.rec.executor.settled = lambda key, uid: settled.append((key, uid))
    steps = (
        ja.RemovePodFinalizer(pod=_ref("a", "uid-a"), expected=True),
        ja.RemovePodFinalizer(pod=_ref("gone", "uid-gone"), expected=True),
        ja.RemovePodFinalizer(pod=_ref("other", "uid-other")),
    )
    assert ja.expected_uids(steps) == {"uid-a", "uid-gone"}
    job = w.store.get("pods", "ns/a")
    for step in steps:
        w.rec.executor.execute("group/ns/g", job, step, NOW)
    assert w.kube.objects[f"{POD_PATH}/a"]["metadata"].get("finalizers") is None
    assert settled == [("group/ns/g", "uid-gone")]  # a pod nobody waits for is not reported


class _Fixed:
    """A job source whose every key plans `plan` for `job`."""

    def __init__(self, job: dict[str, Any], plan: Plan) -> None:
        self.job, self.fixed, self.settled_uids = job, plan, list[str]()

    def keys(self, kind: str, etype: str, obj: Any) -> list[str]:
        return []

    def plan(self, key: str, now: datetime) -> tuple[dict[str, Any], Plan]:
        return self.job, self.fixed

    def settled(self, key: str, uid: str) -> None:
        self.settled_uids.append(uid)


def test_a_failed_write_is_retried_and_settles_the_rest() -> None:
    w = World((POD_PATH, make_pod("x")))
    missing = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "missing", "namespace": "ns"},
    }
    source = _Fixed(
        make_pod("x"),
        Plan(
            (
                ja.UpdateWorkloadSpec(workload=missing, spec={}),
                ja.DeletePod(pod=_ref("x", "uid-x"), expected=True),
                ja.DeletePod(pod=_ref("y", "uid-y")),
            )
        ),
    )
    rec = GenericJobReconciler(
        w.kube, w.store, CONFIG, events.Recorder(None, instance="t", stop=threading.Event()), w.rec.integration, source
    )
    with pytest.raises(Retry, match="update_workload") as info:
        rec.reconcile("group/ns/x")
    assert isinstance(info.value.__cause__, k.NotFound)
    assert source.settled_uids == ["uid-x"]
    assert f"{POD_PATH}/x" in w.kube.objects  # nothing after the failed write ran
