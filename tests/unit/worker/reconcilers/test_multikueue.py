"""The MultiKueue admission check as a user sees it, with a manager and two worker clusters in one
process (`multikueue_fixtures`): the MultiKueueClusters' and the AdmissionCheck's `Active`
conditions, a Job's Workload nominated to both workers, its copies there, admission on one worker,
the Job created there and its status mirrored back, the finish, and the cleanup of remote objects
(`reconcilers.multikueue`, `multikueue.remote`)."""

from __future__ import annotations

import base64
import copy
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.unit.worker.multikueue_fixtures import (
    JOBS,
    JOBSETS,
    KUEUE_NS,
    NOW,
    NS,
    PODS,
    STATEFULSETS,
    WORKLOADS,
    World,
    admission_check,
    cluster,
    condition,
    config,
    job,
    kubeconfig,
    path_of,
    pod,
    pod_workload,
    secret,
    statefulset,
    statefulset_workload,
    wait_for,
    workload,
)
from webhook import kube as k
from webhook import metrics
from webhook.api import constants as c
from webhook.api import multikueue as mk
from webhook.api import objects as o
from webhook.worker.reconcilers.multikueue import CLUSTER_EVENT_SOURCE, WORKLOAD_EVENT_SOURCE
from webhook.worker.workqueue import Retry

WL = f"{NS}/wl"
ORIGIN = {mk.ORIGIN_LABEL: mk.DEFAULT_ORIGIN}


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    yield w
    w.close()


def active(world: World, kind: str, name: str) -> dict[str, object]:
    obj = world.get(kind, name)
    assert obj is not None
    cond = o.find_condition(obj, "Active")
    assert cond is not None
    return {key: cond[key] for key in ("status", "reason", "message")}


def watch_threads(cluster: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(f"mk-{cluster}-")]


def mk_state(world: World) -> dict[str, object]:
    wl = world.get("Workload", "wl", NS)
    assert wl is not None
    return next(s for s in wl["status"]["admissionChecks"] if s["name"] == "ac1")


# == MultiKueueClusters ==============================================================================


def test_a_cluster_with_a_valid_secret_turns_active_and_watches_its_worker(world: World) -> None:
    world.connect("worker1")
    assert active(world, "MultiKueueCluster", "worker1") == {
        "status": "True",
        "reason": "Active",
        "message": "Connected",
    }
    worker = world.workers["worker1"]
    # One list and watch of Workloads and of each adapter's kind (each watches its remote objects).
    assert ("LIST", "/apis/kueue.x-k8s.io/v1beta2/workloads") in worker.calls
    assert ("LIST", "/apis/batch/v1/jobs") in worker.calls
    assert ("LIST", "/api/v1/pods") in worker.calls
    assert ("LIST", "/apis/apps/v1/statefulsets") in worker.calls
    assert ("LIST", "/apis/jobset.x-k8s.io/v1alpha2/jobsets") in worker.calls
    assert wait_for(lambda: sum(call[0] == "WATCH" for call in worker.calls) == 5)
    # Reconciling again with the same kubeconfig keeps the connection.
    world.controller.reconcile_cluster("worker1")
    assert world.built == ["worker1"]


def test_a_missing_secret_gives_bad_kubeconfig_with_upstreams_message(world: World) -> None:
    world.add(cluster("worker1"))
    world.controller.reconcile_cluster("worker1")  # not retried: the Secret's creation brings it back
    assert active(world, "MultiKueueCluster", "worker1") == {
        "status": "False",
        "reason": "BadKubeConfig",
        "message": 'load client config failed: secrets "worker1-secret" not found',
    }
    assert world.built == []


def test_the_secrets_creation_connects_the_cluster(world: World) -> None:
    world.add(cluster("worker1"))
    world.controller.reconcile_cluster("worker1")
    world.add(secret("worker1-secret", "https://worker1.example:6443"))
    assert world.controller.clusters.busy(["worker1"])  # the Secret's event queued its cluster
    world.controller.reconcile_cluster("worker1")
    assert active(world, "MultiKueueCluster", "worker1")["reason"] == "Active"


def test_an_insecure_kubeconfig_is_refused_before_any_client_is_built(world: World) -> None:
    insecure = secret("worker1-secret", "https://worker1.example:6443")
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "w",
        "clusters": [
            {"name": "w", "cluster": {"server": "https://worker1.example:6443", "insecure-skip-tls-verify": True}}
        ],
        "contexts": [{"name": "w", "context": {"cluster": "w", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
    }
    insecure["data"]["kubeconfig"] = base64.b64encode(json.dumps(doc).encode()).decode()
    world.add(insecure, cluster("worker1"))
    with pytest.raises(Retry):  # upstream returns the error: the work queue backs off
        world.controller.reconcile_cluster("worker1")
    assert active(world, "MultiKueueCluster", "worker1") == {
        "status": "False",
        "reason": "InsecureKubeConfig",
        "message": "load client config failed: insecure TLS verification is not allowed for cluster w",
    }
    assert world.built == []


def test_an_unreachable_worker_fails_the_connection_and_backs_off(world: World) -> None:
    world.workers["worker1"].go_down()
    world.connect("worker1")
    cond = active(world, "MultiKueueCluster", "worker1")
    assert (cond["status"], cond["reason"]) == ("False", "ClientConnectionFailed")
    assert "connection refused" in str(cond["message"])
    lists = sum(call[0] == "LIST" for call in world.workers["worker1"].calls)
    world.controller.reconcile_cluster("worker1")  # within the 5 s backoff: no new attempt
    assert world.built == ["worker1"]
    assert sum(call[0] == "LIST" for call in world.workers["worker1"].calls) == lists


def test_a_lost_connection_turns_the_cluster_inactive_until_it_reconnects(world: World) -> None:
    world.connect("worker1")
    remote = world.controller.remotes["worker1"]
    world.workers["worker1"].go_down()
    assert wait_for(lambda: not remote.state.connected)
    assert world.controller.clusters.busy(["worker1"])  # the watch's end queued the cluster
    world.workers["worker1"].down = False
    world.controller.reconcile_cluster("worker1")  # the first retry of a dropped connection is immediate
    assert remote.state.connected
    assert active(world, "MultiKueueCluster", "worker1")["reason"] == "Active"


def test_a_deleted_cluster_stops_its_watches(world: World) -> None:
    world.connect("worker1")
    assert wait_for(lambda: sum(call[0] == "WATCH" for call in world.workers["worker1"].calls) == 5)
    assert len(watch_threads("worker1")) == 5
    del world.manager.objects[k.object_path(c.V1BETA2, "multikueueclusters", None, "worker1")]
    world.sync("MultiKueueCluster", "worker1")
    world.controller.reconcile_cluster("worker1")
    assert "worker1" not in world.controller.remotes
    assert watch_threads("worker1") == []


def test_a_path_location_warns_while_path_validation_is_off(world: World, tmp_path: Path) -> None:
    file = tmp_path / "worker1.kubeconfig"
    file.write_text(kubeconfig("https://worker1.example:6443"))
    obj = cluster("worker1")
    obj["spec"]["clusterSource"]["kubeConfig"] = {"locationType": "Path", "location": str(file)}
    world.add(obj)
    world.controller.reconcile_cluster("worker1")
    assert active(world, "MultiKueueCluster", "worker1")["reason"] == "Active"
    assert world.events.sent == [
        ("worker1", "Warning", "DeprecatedPathUsage", mk.DEPRECATED_PATH_USAGE_MESSAGE, CLUSTER_EVENT_SOURCE)
    ]


# == AdmissionChecks ===============================================================================


def test_the_check_is_active_with_its_clusters_connected(world: World) -> None:
    world.connect("worker1", "worker2")
    world.add(config("config1", ["worker1", "worker2"]), admission_check())
    world.controller.reconcile_check("ac1")
    assert active(world, "AdmissionCheck", "ac1") == {
        "status": "True",
        "reason": "Active",
        "message": "The admission check is active",
    }


def test_the_check_without_usable_clusters_is_inactive(world: World) -> None:
    world.add(config("config1", ["worker1", "worker2"]), admission_check())
    world.controller.reconcile_check("ac1")
    assert active(world, "AdmissionCheck", "ac1") == {
        "status": "False",
        "reason": "NoUsableClusters",
        "message": "Missing clusters: [worker1 worker2]",
    }
    # A cluster turning Active queues the check again.
    world.connect("worker1")
    world.sync("MultiKueueCluster", "worker1")
    assert world.controller.checks.busy(["ac1"])
    world.controller.reconcile_check("ac1")
    assert active(world, "AdmissionCheck", "ac1") == {
        "status": "True",
        "reason": "SomeActiveClusters",
        "message": "Missing clusters: [worker2]",
    }


# == Workloads =====================================================================================


def dispatch(world: World) -> None:
    """Two connected workers, the check, the Job and its Workload with the check Pending."""
    world.connect("worker1", "worker2")
    world.add(config("config1", ["worker1", "worker2"]), admission_check(), job(), workload())
    world.reconcile(WL)


def test_a_pending_workload_is_nominated_to_every_connected_worker_and_copied_there(world: World) -> None:
    dispatch(world)
    wl = world.get("Workload", "wl", NS)
    assert wl is not None
    assert wl["status"]["nominatedClusterNames"] == ["worker1", "worker2"]
    for name in ("worker1", "worker2"):
        remote = world.workers[name].workload()
        assert remote is not None, name
        assert remote["metadata"]["labels"] == ORIGIN  # the job-uid label is dropped
        assert "ownerReferences" not in remote["metadata"]
        assert remote["spec"] == wl["spec"]
        assert world.workers[name].job() is None  # the Job waits for an admission
    assert mk_state(world)["state"] == c.CHECK_STATE_PENDING


def test_the_remote_workloads_events_reach_the_local_workload(world: World) -> None:
    dispatch(world)
    queued: list[tuple[str, float]] = []
    world.controller.workloads.add_after = lambda key, delay, items=(): queued.append((key, delay))  # type: ignore[method-assign]
    remote = copy.deepcopy(world.workers["worker1"].workload())
    assert remote is not None
    remote["status"] = {"conditions": [condition("QuotaReserved", "QuotaReserved")]}
    world.workers["worker1"].put(f"{WORKLOADS}/wl", remote)
    assert wait_for(lambda: (WL, 1.0) in queued, timeout=5)  # batched: 1 s after the event


def counted(name: str, cluster: str) -> float:
    labels = {"cluster_queue": "cq", "cluster": cluster, "replica_role": "leader"}
    return metrics.WORKER_REGISTRY.get_sample_value(f"multikueue_workloads_{name}_total", labels) or 0.0


def test_dispatches_and_admissions_are_counted_per_cluster_queue_and_cluster(world: World) -> None:
    before = {(n, w): counted(n, w) for n in ("dispatched", "admitted") for w in ("worker1", "worker2")}
    dispatch(world)
    admit_on_worker1(world)
    world.reconcile(WL)  # already Ready: not counted again
    after = {(n, w): counted(n, w) - before[(n, w)] for n, w in before}
    assert after == {
        ("dispatched", "worker1"): 1.0,
        ("dispatched", "worker2"): 1.0,
        ("admitted", "worker1"): 1.0,
        ("admitted", "worker2"): 0.0,
    }


def admit_on_worker1(world: World) -> None:
    path = f"{WORKLOADS}/wl"
    remote = copy.deepcopy(world.workers["worker1"].objects[path])
    remote["status"] = {
        "conditions": [
            condition("QuotaReserved", "QuotaReserved"),
            condition("Admitted", "Admitted", "The workload is admitted"),
        ]
    }
    world.workers["worker1"].put(path, remote)
    world.reconcile(WL)


def test_admission_on_one_worker_makes_the_check_ready_and_creates_the_job_there(world: World) -> None:
    dispatch(world)
    admit_on_worker1(world)
    wl = world.get("Workload", "wl", NS)
    assert wl is not None
    state = mk_state(world)
    assert (state["state"], state["message"]) == (c.CHECK_STATE_READY, 'The workload was admitted on "worker1"')
    assert wl["status"]["clusterName"] == "worker1"
    assert "nominatedClusterNames" not in wl["status"]
    assert world.events.sent[-1] == (
        WL,
        "Normal",
        "MultiKueue",
        'The workload was admitted on "worker1"',
        WORKLOAD_EVENT_SOURCE,
    )
    assert world.workers["worker2"].workload() is None  # the other copy is removed
    remote_job = world.workers["worker1"].job()
    assert remote_job is not None
    assert remote_job["metadata"]["labels"] == {c.QUEUE_LABEL: "lq", **ORIGIN}
    assert remote_job["metadata"]["annotations"] == {c.PREBUILT_WORKLOAD_LABEL: "wl"}
    assert "managedBy" not in remote_job["spec"] and "selector" not in remote_job["spec"]
    assert remote_job["spec"]["template"]["metadata"]["labels"] == {"batch.kubernetes.io/job-name": "job"}
    assert world.workers["worker2"].job() is None


def test_the_remote_jobs_status_is_mirrored_back(world: World) -> None:
    dispatch(world)
    admit_on_worker1(world)
    # The manager's Job reconciler starts the local Job once the Workload is admitted.
    local = world.manager.objects[f"{JOBS}/job"]
    local["spec"]["suspend"] = False
    world.sync("Job", "job", NS, api_version="batch/v1")
    remote_job = copy.deepcopy(world.workers["worker1"].job())
    assert remote_job is not None
    remote_job["status"] = {"active": 1, "startTime": "2026-01-01T12:00:05Z", "ready": 0}
    world.workers["worker1"].put(f"{JOBS}/job", remote_job)
    world.reconcile(WL)
    assert world.manager.objects[f"{JOBS}/job"]["status"] == {
        "active": 1,
        "startTime": "2026-01-01T12:00:05Z",
        "ready": 0,
    }


def test_the_mirrored_status_replaces_nested_fields_the_remote_dropped(world: World) -> None:
    """The job controller empties `uncountedTerminatedPods` before it marks a Job Complete; the local status must
    follow it exactly (a merge patch would keep the old UID, and the API server refuses a finished Job with one:
    "must be empty for finished job"). upstream "Should run a job on worker if admitted"."""
    dispatch(world)
    admit_on_worker1(world)
    local = world.manager.objects[f"{JOBS}/job"]
    local["spec"]["suspend"] = False
    world.sync("Job", "job", NS, api_version="batch/v1")
    worker = world.workers["worker1"]
    for status in (
        {"active": 0, "startTime": "2026-01-01T12:00:05Z", "uncountedTerminatedPods": {"succeeded": ["pod-uid"]}},
        {
            "succeeded": 1,
            "startTime": "2026-01-01T12:00:05Z",
            "uncountedTerminatedPods": {},
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    ):
        remote_job = copy.deepcopy(worker.job())
        assert remote_job is not None
        remote_job["status"] = status
        worker.put(f"{JOBS}/job", remote_job)
        world.reconcile(WL)
        assert world.manager.objects[f"{JOBS}/job"]["status"] == status


def test_a_foreign_remote_job_stops_the_sync(world: World) -> None:
    dispatch(world)
    foreign = job()
    foreign["metadata"]["labels"] = {}
    world.workers["worker1"].put(f"{JOBS}/job", foreign)
    with pytest.raises(Retry, match="remote object is not owned by MultiKueue"):
        admit_on_worker1(world)
    assert world.workers["worker1"].job()["metadata"]["labels"] == {}  # type: ignore[index]


def test_a_finished_remote_workload_finishes_the_local_one_and_its_remotes_go(world: World) -> None:
    dispatch(world)
    admit_on_worker1(world)
    path = f"{WORKLOADS}/wl"
    remote = copy.deepcopy(world.workers["worker1"].objects[path])
    remote["status"]["conditions"].append(condition("Finished", "Succeeded", "Job finished successfully"))
    remote["metadata"]["finalizers"] = [c.RESOURCE_IN_USE_FINALIZER]
    world.workers["worker1"].put(path, remote)
    world.reconcile(WL)
    wl = world.get("Workload", "wl", NS)
    assert wl is not None
    finished = o.find_condition(wl, "Finished")
    assert finished is not None
    assert (finished["status"], finished["reason"], finished["message"]) == (
        "True",
        "Succeeded",
        "Job finished successfully",
    )
    world.reconcile(WL)  # the local Workload's own update
    assert world.workers["worker1"].workload() is None
    assert world.workers["worker1"].job() is None
    # The finalizer went first, then the Workload.
    assert [m for m, p in world.workers["worker1"].calls if p == path][-2:] == ["PUT", "DELETE"]


def test_a_deleted_local_workload_removes_its_remote_copies(world: World) -> None:
    dispatch(world)
    assert all(world.workers[name].workload() is not None for name in ("worker1", "worker2"))
    del world.manager.objects[f"{WORKLOADS}/wl"]
    world.sync("Workload", "wl", NS)
    world.reconcile(WL)
    assert world.workers["worker1"].workload() is None
    assert world.workers["worker2"].workload() is None
    calls = [len(world.workers[name].calls) for name in ("worker1", "worker2")]
    world.reconcile(WL)  # forgotten: nothing more to do
    assert [len(world.workers[name].calls) for name in ("worker1", "worker2")] == calls


# == Pods and pod groups (upstream pod_multikueue_adapter_test.go, through the reconciler) ===========


def dispatch_pods(world: World, *pods: dict[str, object]) -> None:
    """Two connected workers, the check, the pods and their one Workload, admitted on worker1."""
    world.connect("worker1", "worker2")
    world.add(config("config1", ["worker1", "worker2"]), admission_check(), *pods)  # type: ignore[arg-type]
    world.add(pod_workload(*(str(p["metadata"]["name"]) for p in pods)))  # type: ignore[index]
    world.reconcile(WL)
    admit_on_worker1(world)


def set_remote_pod_status(world: World, name: str, status: dict[str, object]) -> None:
    remote = copy.deepcopy(world.workers["worker1"].pod(name))
    assert remote is not None
    remote["status"] = status
    world.workers["worker1"].put(f"{PODS}/{name}", remote)


def test_an_admitted_pod_is_copied_to_its_worker_gated_with_the_origin_and_prebuilt_workload(world: World) -> None:
    dispatch_pods(world, pod())
    assert mk_state(world)["state"] == c.CHECK_STATE_READY
    remote = world.workers["worker1"].pod()
    assert remote is not None
    assert remote["metadata"]["labels"] == {c.QUEUE_LABEL: "lq", **ORIGIN}
    assert remote["metadata"]["annotations"] == {c.PREBUILT_WORKLOAD_LABEL: "wl"}
    assert remote["spec"] == pod()["spec"]  # the worker's Kueue lifts the gate
    assert "uid" not in remote["metadata"] and "status" not in remote
    assert world.workers["worker2"].pod() is None


def test_a_gated_manager_pod_keeps_scheduling_gated_until_the_worker_pod_is_scheduled(world: World) -> None:
    """An unschedulable worker pod must not make the manager's gated pod look unschedulable to
    the manager cluster's autoscaler; once scheduled there, its PodScheduled=True shows here."""
    dispatch_pods(world, pod())
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    set_remote_pod_status(world, "pod", {"phase": "Pending", "conditions": [unschedulable]})
    world.reconcile(WL)
    local = world.manager.objects[f"{PODS}/pod"]
    assert local["status"]["phase"] == "Pending"
    assert local["status"]["conditions"] == pod()["status"]["conditions"]
    running = {
        "phase": "Running",
        "podIP": "10.0.0.7",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
    }
    set_remote_pod_status(world, "pod", running)
    world.reconcile(WL)
    local = world.manager.objects[f"{PODS}/pod"]
    assert local["status"] == running
    assert local["spec"]["schedulingGates"] == [{"name": c.ADMISSION_GATE}]  # still gated here


def test_an_unchanged_remote_pod_status_is_not_written_again(world: World) -> None:
    dispatch_pods(world, pod())
    set_remote_pod_status(world, "pod", {"phase": "Running", "podIP": "10.0.0.7", "conditions": []})
    world.reconcile(WL)
    writes = [m for m, p in world.manager.calls if p == f"{PODS}/pod/status"]
    world.reconcile(WL)
    assert [m for m, p in world.manager.calls if p == f"{PODS}/pod/status"] == writes == ["PATCH"]


def test_a_pod_groups_members_are_each_copied_and_each_gets_its_own_status(world: World) -> None:
    members = [pod(f"g-{i}", group="g") for i in range(3)]
    dispatch_pods(world, *members)
    for i in range(3):
        remote = world.workers["worker1"].pod(f"g-{i}")
        assert remote is not None, i
        assert remote["metadata"]["labels"] == {c.QUEUE_LABEL: "lq", c.POD_GROUP_NAME: "g", **ORIGIN}
        assert remote["metadata"]["annotations"] == {c.PREBUILT_WORKLOAD_LABEL: "wl"}
    for i in range(2):
        set_remote_pod_status(world, f"g-{i}", {"phase": "Pending"})
    done = {"phase": "Succeeded", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    set_remote_pod_status(world, "g-2", done)
    world.reconcile(WL)
    statuses = [world.manager.objects[f"{PODS}/g-{i}"]["status"] for i in range(3)]
    assert statuses == [pod()["status"], pod()["status"], done]


def test_a_terminating_manager_pod_gets_no_status_from_its_worker(world: World) -> None:
    dispatch_pods(world, pod())
    local = world.manager.objects[f"{PODS}/pod"]
    local["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    world.sync("Pod", "pod", NS, api_version="v1")
    set_remote_pod_status(world, "pod", {"phase": "Running"})
    world.reconcile(WL)
    assert world.manager.objects[f"{PODS}/pod"]["status"] == pod()["status"]


def test_a_deleted_pod_groups_workload_removes_every_remote_member(world: World) -> None:
    members = [pod(f"g-{i}", group="g") for i in range(3)]
    dispatch_pods(world, *members)
    assert all(world.workers["worker1"].pod(f"g-{i}") is not None for i in range(3))
    for i in range(3):  # the group is being deleted here
        world.manager.objects[f"{PODS}/g-{i}"]["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
        world.sync("Pod", f"g-{i}", NS, api_version="v1")
    del world.manager.objects[f"{WORKLOADS}/wl"]
    world.sync("Workload", "wl", NS)
    world.reconcile(WL)
    assert [world.workers["worker1"].pod(f"g-{i}") for i in range(3)] == [None, None, None]
    assert world.workers["worker1"].workload() is None


def test_a_remote_pods_events_reach_the_workload_it_names(world: World) -> None:
    dispatch_pods(world, pod())
    queued: list[tuple[str, float]] = []
    world.controller.workloads.add_after = lambda key, delay, items=(): queued.append((key, delay))  # type: ignore[method-assign]
    set_remote_pod_status(world, "pod", {"phase": "Running"})
    assert wait_for(lambda: (WL, 1.0) in queued, timeout=5)


def test_a_statefulset_is_copied_once_with_its_managers_uid_and_its_status_stays_local(world: World) -> None:
    world.connect("worker1", "worker2")
    world.add(config("config1", ["worker1", "worker2"]), admission_check(), statefulset(), statefulset_workload())
    world.reconcile(WL)
    admit_on_worker1(world)
    assert mk_state(world)["state"] == c.CHECK_STATE_READY
    remote = world.workers["worker1"].objects[f"{STATEFULSETS}/web"]
    assert remote["metadata"]["labels"] == {c.QUEUE_LABEL: "lq", **ORIGIN}
    assert remote["metadata"]["annotations"] == {
        mk.ORIGIN_UID_ANNOTATION: "sts-uid",
        c.PREBUILT_WORKLOAD_LABEL: "wl",
    }
    assert remote["spec"] == statefulset()["spec"]
    remote = copy.deepcopy(remote)
    remote["status"] = {"replicas": 3, "readyReplicas": 3}
    world.workers["worker1"].put(f"{STATEFULSETS}/web", remote)
    world.reconcile(WL)
    assert world.manager.objects[f"{STATEFULSETS}/web"]["status"] == statefulset()["status"]
    assert not [p for _, p in world.manager.calls if p.startswith(f"{STATEFULSETS}/web/")]
    del world.manager.objects[f"{WORKLOADS}/wl"]
    world.sync("Workload", "wl", NS)
    world.reconcile(WL)
    assert f"{STATEFULSETS}/web" not in world.workers["worker1"].objects


def _remote_pair(world: World, name: str, *, origin: bool = True) -> None:
    """A Workload of our origin on worker1, controlled by a Job there (as the worker's Kueue adopts it)."""
    wl = workload(name)
    wl["metadata"]["labels"] = dict(ORIGIN)
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": f"{name}-job", "uid": "u", "controller": True}
    ]
    world.workers["worker1"].put(f"{WORKLOADS}/{name}", wl)
    remote_job = job(f"{name}-job")
    remote_job["metadata"]["labels"] = dict(ORIGIN) if origin else {}
    world.workers["worker1"].put(f"{JOBS}/{name}-job", remote_job)


def test_the_garbage_collector_deletes_orphaned_remote_workloads_and_their_own_jobs_only(world: World) -> None:
    """upstream `TestRemoteClientGC`: a remote Workload whose manager Workload is gone (or being
    deleted) goes with its Job; one still wanted stays; a Job without our origin is not ours to delete."""
    world.connect("worker1")
    world.add(workload("kept"))
    deleting = workload("deleting")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    world.add(deleting)
    for name in ("kept", "deleting", "orphan"):
        _remote_pair(world, name)
    _remote_pair(world, "foreign", origin=False)
    worker = world.workers["worker1"]
    world.controller.collect_garbage("worker1", worker)  # type: ignore[arg-type]
    assert sorted(p.rsplit("/", 1)[1] for p in worker.objects if p.startswith(f"{WORKLOADS}/")) == ["kept"]
    assert sorted(p.rsplit("/", 1)[1] for p in worker.objects if p.startswith(f"{JOBS}/")) == [
        "foreign-job",
        "kept-job",
    ]


def test_the_garbage_collector_runs_every_gc_interval_on_connected_workers() -> None:
    w = World(gc_interval=timedelta(milliseconds=50))
    try:
        w.connect("worker1")
        _remote_pair(w, "orphan")
        w.controller.start()
        assert wait_for(lambda: w.workers["worker1"].workload("orphan") is None, timeout=5)
    finally:
        w.close()


def _queue(kind: str, name: str, target: str | None = None, **quotas: str) -> dict[str, object]:
    if kind == "LocalQueue":
        return {
            "apiVersion": c.V1BETA2,
            "kind": kind,
            "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterQueue": target},
        }
    resources = [{"name": r.replace("_", "-"), "nominalQuota": q} for r, q in quotas.items()]
    return {
        "apiVersion": c.V1BETA2,
        "kind": kind,
        "metadata": {"name": name, "generation": 1, "resourceVersion": "1"},
        "spec": {
            "resourceGroups": [
                {"coveredResources": [r["name"] for r in resources], "flavors": [{"name": "f", "resources": resources}]}
            ]
        },
    }


def test_an_automated_manager_queue_takes_the_sum_of_its_workers_queues() -> None:
    """Gate MultiKueueManagerQuotaAutomation, `quotaManagement: Automated`: upstream's e2e sums."""
    w = World(quota_automation=True)
    try:
        w.connect("worker1", "worker2")
        for name in ("worker1", "worker2"):
            remote_cq = _queue("ClusterQueue", f"{name}-cq", cpu="1600m", memory="2.5G")
            w.workers[name].put(k.object_path(c.V1BETA2, "clusterqueues", None, f"{name}-cq"), remote_cq)
            remote_lq = _queue("LocalQueue", "lq", f"{name}-cq")
            w.workers[name].put(k.object_path(c.V1BETA2, "localqueues", NS, "lq"), remote_lq)
        automated = config("config1", ["worker1", "worker2"])
        automated["spec"]["quotaManagement"] = "Automated"
        manager_cq = _queue("ClusterQueue", "cq", cpu="0", memory="0")
        manager_cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "ac1"}]}
        w.add(automated, admission_check(), manager_cq, _queue("LocalQueue", "lq", "cq"))
        assert w.controller.cluster_queues.busy(["cq"])
        w.controller.reconcile_cluster_queue("cq")
        got = w.get("ClusterQueue", "cq")
        assert got is not None
        assert got["spec"]["resourceGroups"][0]["flavors"][0]["resources"] == [
            {"name": "cpu", "nominalQuota": "3200m"},
            {"name": "memory", "nominalQuota": "5G"},
        ]
        cond = o.find_condition(got, "MultiKueueManagerQuotaAutomation")
        assert cond is not None
        assert (cond["status"], cond["reason"]) == ("True", "QuotaAutomated")
        # Without the MultiKueue check the condition goes.
        w.manager.objects[path_of(got)]["spec"].pop("admissionChecksStrategy")
        w.sync("ClusterQueue", "cq")
        w.controller.reconcile_cluster_queue("cq")
        assert o.find_condition(w.get("ClusterQueue", "cq") or {}, "MultiKueueManagerQuotaAutomation") is None
    finally:
        w.close()


def _jobset(managed_by: str | None = mk.CONTROLLER_NAME) -> dict[str, object]:
    spec: dict[str, object] = {"suspend": True, "replicatedJobs": [{"name": "w", "replicas": 2, "template": {}}]}
    if managed_by is not None:
        spec["managedBy"] = managed_by
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": NS, "uid": "js-uid", "labels": {c.QUEUE_LABEL: "lq"}},
        "spec": spec,
        "status": {},
    }


def _jobset_workload() -> dict[str, object]:
    wl = workload()
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "js-uid", "controller": True}
    ]
    return wl


def test_a_jobset_is_copied_without_managed_by_and_its_status_comes_back_whole(world: World) -> None:
    """upstream `jobset_multikueue_adapter_test.go`: create, then the remote status copied as is."""
    world.connect("worker1", "worker2")
    world.add(config("config1", ["worker1", "worker2"]), admission_check(), _jobset(), _jobset_workload())
    world.reconcile(WL)
    admit_on_worker1(world)
    remote = world.workers["worker1"].objects[f"{JOBSETS}/js"]
    assert remote["metadata"]["labels"] == {c.QUEUE_LABEL: "lq", **ORIGIN}
    assert remote["metadata"]["annotations"] == {c.PREBUILT_WORKLOAD_LABEL: "wl"}
    assert "managedBy" not in remote["spec"]
    status = {"replicatedJobsStatus": [{"name": "w", "active": 2, "ready": 2}], "terminalState": ""}
    remote = copy.deepcopy(remote)
    remote["status"] = status
    world.workers["worker1"].put(f"{JOBSETS}/js", remote)
    world.reconcile(WL)
    assert world.manager.objects[f"{JOBSETS}/js"]["status"] == status


def test_a_jobset_not_handed_to_multikueue_is_rejected(world: World) -> None:
    world.connect("worker1")
    world.add(config("config1", ["worker1"]), admission_check(), _jobset(None), _jobset_workload())
    world.reconcile(WL)
    state = mk_state(world)
    assert state["state"] == c.CHECK_STATE_REJECTED
    assert str(state["message"]).startswith(
        'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""'
    )


def test_the_incremental_dispatcher_nominates_a_step_at_a_time_and_copies_follow() -> None:
    """`dispatcherName: ...-incremental`, stepSize 1: worker1 first (by config order), the copy only
    there; the round lasts five minutes, then worker2 joins."""
    w = World(dispatcher=mk.DISPATCHER_INCREMENTAL, step_size=1)
    try:
        w.connect("worker1", "worker2")
        w.add(config("config1", ["worker1", "worker2"]), admission_check(), job(), workload())
        assert w.controller.dispatches.busy([WL])
        w.controller.reconcile_dispatch(WL)
        wl = w.get("Workload", "wl", NS)
        assert wl is not None and wl["status"]["nominatedClusterNames"] == ["worker1"]
        w.sync("Workload", "wl", NS)
        w.reconcile(WL)
        assert w.workers["worker1"].workload() is not None
        assert w.workers["worker2"].workload() is None
        w.controller.reconcile_dispatch(WL)  # the round is on: nothing more
        assert (w.get("Workload", "wl", NS) or {})["status"]["nominatedClusterNames"] == ["worker1"]
        w.controller.now = lambda: NOW + timedelta(minutes=6)
        w.controller.reconcile_dispatch(WL)
        assert (w.get("Workload", "wl", NS) or {})["status"]["nominatedClusterNames"] == ["worker1", "worker2"]
        w.sync("Workload", "wl", NS)
        w.reconcile(WL)
        assert w.workers["worker2"].workload() is not None
    finally:
        w.close()


def test_a_job_not_handed_to_multikueue_is_rejected(world: World) -> None:
    world.connect("worker1")
    plain = job()
    del plain["spec"]["managedBy"]
    world.add(config("config1", ["worker1"]), admission_check(), plain, workload())
    world.reconcile(WL)
    state = mk_state(world)
    assert state["state"] == c.CHECK_STATE_REJECTED
    assert state["message"] == (
        'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "", '
        'Previously: "Pending"'
    )
    assert world.workers["worker1"].workload() is None


def test_a_secret_outside_kueues_namespace_is_ignored(world: World) -> None:
    world.add(cluster("worker1"))
    queued: list[str] = []

    def add(key: str, item: object = None, *, first: bool = False) -> None:
        queued.append(key)

    world.controller.clusters.add = add  # type: ignore[method-assign]
    other = secret("worker1-secret", "https://worker1.example:6443")
    other["metadata"]["namespace"] = "default"
    world.add(other)
    assert queued == []
    world.add(secret("worker1-secret", "https://worker1.example:6443"))
    assert queued == ["worker1"] and KUEUE_NS != "default"


def test_with_its_queues_running_a_workload_follows_its_worker_on_its_own(world: World) -> None:
    """The queues and watches at work: after the dispatch, only the workers' changes (their
    watch events, 1 s later) move the local Workload to Ready, then Finished."""
    world.controller.start()
    dispatch(world)
    world.workers["worker1"].put(
        f"{WORKLOADS}/wl",
        {
            **copy.deepcopy(world.workers["worker1"].objects[f"{WORKLOADS}/wl"]),
            "status": {"conditions": [condition("QuotaReserved", "QuotaReserved"), condition("Admitted", "Admitted")]},
        },
    )
    assert wait_for(lambda: mk_state(world)["state"] == c.CHECK_STATE_READY)
    assert wait_for(lambda: world.workers["worker1"].job() is not None)
    assert world.workers["worker2"].workload() is None
    remote = copy.deepcopy(world.workers["worker1"].objects[f"{WORKLOADS}/wl"])
    remote["status"]["conditions"].append(condition("Finished", "Succeeded", "Job finished successfully"))
    world.workers["worker1"].put(f"{WORKLOADS}/wl", remote)
    assert wait_for(lambda: o.is_finished(world.get("Workload", "wl", NS) or {}))
    world.sync("Workload", "wl", NS)  # the manager's informer hands the finished Workload on
    assert wait_for(lambda: world.workers["worker1"].workload() is None and world.workers["worker1"].job() is None)


# == configHandler (upstream workload_test.go TestConfigHandlerUpdate, TestConfigHandlerDelete) ========


def _with_check(name: str, check: str, state: str) -> dict[str, object]:
    wl = workload(name, check_state=state)
    wl["status"]["admissionChecks"][0]["name"] = check
    return wl


@pytest.mark.parametrize(
    ("checks", "workloads", "old", "new", "want"),
    [
        pytest.param(
            [("ac1", "config1")],
            [("wl1", "ac1", c.CHECK_STATE_PENDING)],
            ["cluster1", "cluster2"],
            ["cluster1", "cluster2"],
            [],
            id="clusters unchanged - no workloads queued",
        ),
        pytest.param(
            [("ac1", "config1")],
            [("wl1", "ac1", c.CHECK_STATE_PENDING), ("wl2", "ac1", c.CHECK_STATE_READY)],
            ["cluster1"],
            ["cluster1", "cluster2"],
            ["wl1", "wl2"],
            id="clusters changed - workloads queued",
        ),
        pytest.param(
            [("ac1", "config1"), ("ac2", "other-config")],
            [("wl1", "ac1", c.CHECK_STATE_PENDING), ("wl2", "ac2", c.CHECK_STATE_PENDING)],
            ["cluster1"],
            ["cluster1", "cluster2"],
            ["wl1"],
            id="multiple configs - only affected workloads queued",
        ),
    ],
)
def test_a_configs_clusters_change_queues_its_workloads(
    world: World,
    checks: list[tuple[str, str]],
    workloads: list[tuple[str, str, str]],
    old: list[str],
    new: list[str],
    want: list[str],
) -> None:
    """Upstream `TestConfigHandlerUpdate`, each Workload queued 1 s later (`eventsBatchPeriod`)."""
    queued = _record_workload_queue(world)
    for name, cfg in checks:
        world.store.put("admissionchecks", admission_check(name, cfg))
    for name, check, state in workloads:
        world.store.put("workloads", _with_check(name, check, state))
    world.controller.on_event("multikueueconfigs", "ADDED", config("config1", old))
    world.controller.on_event("multikueueconfigs", "MODIFIED", config("config1", new))
    assert sorted(queued) == [(f"{NS}/{name}", 1.0) for name in want]


def test_a_deleted_config_queues_its_workloads(world: World) -> None:
    """Upstream `TestConfigHandlerDelete`."""
    queued = _record_workload_queue(world)
    world.store.put("admissionchecks", admission_check("ac1", "config1"))
    world.store.put("workloads", _with_check("wl1", "ac1", c.CHECK_STATE_PENDING))
    world.controller.on_event("multikueueconfigs", "DELETED", config("config1", ["cluster1"]))
    assert queued == [(f"{NS}/wl1", 1.0)]


def _record_workload_queue(world: World) -> list[tuple[str, float]]:
    queued: list[tuple[str, float]] = []

    def add_after(key: str, delay: float, items: object = ()) -> None:
        queued.append((key, delay))

    world.controller.workloads.add_after = add_after  # type: ignore[method-assign]
    return queued


def test_a_remote_jobs_events_reach_the_workload_it_names(world: World) -> None:
    """`WorkloadKeysFor` of the batch/v1 adapter: a remote Job's change queues its prebuilt Workload."""
    dispatch(world)
    admit_on_worker1(world)
    queued = _record_workload_queue(world)
    remote_job = copy.deepcopy(world.workers["worker1"].job())
    assert remote_job is not None
    remote_job["status"] = {"active": 1}
    world.workers["worker1"].put(f"{JOBS}/job", remote_job)
    assert wait_for(lambda: (WL, 1.0) in queued, timeout=5)


@pytest.mark.parametrize(
    ("timeout", "want"),
    [
        pytest.param(timedelta(minutes=15), c.CHECK_STATE_READY, id="within workerLostTimeout: it waits"),
        pytest.param(timedelta(0), c.CHECK_STATE_RETRY, id="past workerLostTimeout: retried elsewhere"),
    ],
)
def test_an_admitting_worker_lost_keeps_the_workload_until_the_worker_lost_timeout(
    timeout: timedelta, want: str
) -> None:
    world = World(worker_lost_timeout=timeout)
    try:
        dispatch(world)
        admit_on_worker1(world)
        remote = world.controller.remotes["worker1"]
        world.workers["worker1"].go_down()
        assert wait_for(lambda: not remote.state.connected)
        world.reconcile(WL)
        state = mk_state(world)
        assert state["state"] == want
        if want == c.CHECK_STATE_RETRY:
            assert state["message"] == 'Admitting remote lost, Previously: "Ready"'
    finally:
        world.close()
