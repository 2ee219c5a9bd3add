"""The worker's workload controller: config → policy, and a reconcile writing one step."""

from __future__ import annotations

import copy
import dataclasses
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import metrics
from webhook.config import Configuration, RequeuingStrategy, WaitForPodsReady
from webhook.worker import events
from webhook.worker.reconcilers import workload as w
from webhook.worker.reporter import MetricsReporter
from webhook.worker.store import Store

PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl"


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def admitted_workload(admitted_at: datetime) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "generation": 2, "uid": "u"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}],
        },
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": []},
            "admissionChecks": [
                {"name": "check", "state": "Ready", "message": "ok", "lastTransitionTime": stamp(admitted_at)}
            ],
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "m",
                    "lastTransitionTime": stamp(admitted_at),
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "m",
                    "lastTransitionTime": stamp(admitted_at),
                },
                {
                    "type": "PodsReady",
                    "status": "False",
                    "reason": "WaitForStart",
                    "message": "m",
                    "lastTransitionTime": stamp(admitted_at),
                },
            ],
        },
    }


class StatusKube(FakeKube):
    """Writes to the status subresource land on the object."""

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return super().request(method, path.removesuffix("/status"), **kwargs)


class World:
    def __init__(self, obj: dict[str, Any], config: Configuration) -> None:
        self.kube = StatusKube({PATH: obj})
        self.store = Store()
        self.store.put("workloads", copy.deepcopy(self.kube.objects[PATH]))
        self.evicted: list[tuple[str, str, str, str]] = []
        self.rec = w.WorkloadReconciler(
            self.kube,
            self.store,
            config,
            events.Recorder(None, instance="t", stop=threading.Event()),
            stop=threading.Event(),
            on_evicted=lambda key, cq, reason, _wl, cause: self.evicted.append((key, cq, reason, cause)),
        )


def config(timeout_s: float, limit: int | None = None, recovery_s: float | None = None) -> Configuration:
    return Configuration(
        wait_for_pods_ready=WaitForPodsReady(
            timeout_s=timeout_s,
            recovery_timeout_s=recovery_s,
            requeuing_strategy=RequeuingStrategy(backoff_limit_count=limit, backoff_base_seconds=10),
        )
    )


def test_policy_follows_the_configuration() -> None:
    assert w.policy(Configuration(wait_for_pods_ready=None)) is None
    p = w.policy(config(5, limit=3))
    assert p is not None and (p.timeout, p.recovery_timeout, p.backoff_limit_count) == (
        timedelta(seconds=5),
        timedelta(seconds=5),
        3,
    )
    p = w.policy(config(5, recovery_s=0))
    assert p is not None and p.recovery_timeout is None  # 0s disables the recovery timeout


def test_timed_out_workload_is_evicted_with_requeue_state_in_one_write() -> None:
    world = World(admitted_workload(datetime.now(UTC) - timedelta(minutes=5)), config(60))
    before = datetime.now(UTC).replace(microsecond=0)
    world.rec.reconcile("ns/wl")
    status = world.kube.objects[PATH]["status"]
    evicted = next(c for c in status["conditions"] if c["type"] == "Evicted")
    assert (evicted["status"], evicted["reason"], evicted["message"], evicted["observedGeneration"]) == (
        "True",
        "PodsReadyTimeout",
        "Exceeded the PodsReady timeout ns/wl",
        2,
    )
    assert status["requeueState"]["count"] == 1
    requeue_at = datetime.fromisoformat(status["requeueState"]["requeueAt"].replace("Z", "+00:00"))
    assert before + timedelta(seconds=9) <= requeue_at <= before + timedelta(seconds=12)
    assert status["admissionChecks"][0] | {"lastTransitionTime": None} == {
        "name": "check",
        "state": "Pending",
        "message": "Reset to Pending after eviction. Previously: Ready",
        "lastTransitionTime": None,
    }
    assert status["admission"]["clusterQueue"] == "cq"  # eviction keeps the admission until the job stops
    assert world.evicted == [("ns/wl", "cq", "PodsReadyTimeout", "WaitForStart")]
    assert [call[0] for call in world.kube.calls] == ["PATCH"]


def test_limit_reached_sets_the_deactivation_target_then_spec_active_false() -> None:
    obj = admitted_workload(datetime.now(UTC) - timedelta(minutes=5))
    obj["status"]["requeueState"] = {"count": 1}
    world = World(obj, config(60, limit=1))
    world.rec.reconcile("ns/wl")
    target = next(c for c in world.kube.objects[PATH]["status"]["conditions"] if c["type"] == "DeactivationTarget")
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "RequeuingLimitExceeded",
        "exceeding the maximum number of re-queuing retries",
    )
    world.rec.reconcile("ns/wl")
    assert world.kube.objects[PATH]["spec"]["active"] is False
    assert world.evicted == []


def test_not_yet_timed_out_changes_nothing() -> None:
    world = World(admitted_workload(datetime.now(UTC)), config(600))
    world.rec.reconcile("ns/wl")
    assert [call for call in world.kube.calls if call[0] != "GET"] == []


def test_deactivating_a_ready_workload_observes_pods_ready_to_evicted() -> None:
    """spec.active=false on a running workload: the controller writes Evicted=True (Deactivated) and
    reports the eviction with the written object, timed from PodsReady to that Evicted transition."""
    ready_at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    obj = admitted_workload(ready_at - timedelta(minutes=1))
    obj["spec"]["active"] = False
    obj["status"]["admission"]["clusterQueue"] = "deactivate-cq"
    obj["status"]["conditions"][2] = {
        "type": "PodsReady",
        "status": "True",
        "reason": "PodsReady",
        "message": "m",
        "lastTransitionTime": stamp(ready_at),
    }
    world = World(obj, Configuration())
    world.rec.on_evicted = MetricsReporter(Configuration()).evicted
    world.rec.reconcile("ns/wl")
    evicted = next(c for c in world.kube.objects[PATH]["status"]["conditions"] if c["type"] == "Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Deactivated")
    seconds = (datetime.fromisoformat(evicted["lastTransitionTime"].replace("Z", "+00:00")) - ready_at).total_seconds()
    labels = {
        "cluster_queue": "deactivate-cq",
        "reason": "Deactivated",
        "underlying_cause": "",
        "replica_role": "leader",
    }
    assert metrics.WORKER_REGISTRY.get_sample_value("kueue_pods_ready_to_evicted_time_seconds_count", labels) == 1
    assert (
        metrics.WORKER_REGISTRY.get_sample_value("kueue_pods_ready_to_evicted_time_seconds_sum", labels)
        == seconds
        >= 300
    )


# -- ConcurrentAdmission (the gated parts of `workload_controller.go`) ------------------------------
def concurrent_config(gate: bool = True, timeout_s: float = 60) -> Configuration:
    cfg = config(timeout_s)
    return dataclasses.replace(cfg, feature_gates={**cfg.feature_gates, "ConcurrentAdmission": gate})


def with_queues(world: World, *, policy: bool = True) -> World:
    cq: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "spot", "resources": []}]}]},
    }
    if policy:
        cq["spec"]["concurrentAdmissionPolicy"] = {"migration": {"mode": "TryPreferredFlavors"}}
    world.store.put("clusterqueues", cq)
    world.store.put(
        "localqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ns"},
            "spec": {"clusterQueue": "cq"},
        },
    )
    return world


@pytest.mark.parametrize(
    ("gate", "policy", "labelled"),
    [
        pytest.param(True, True, True, id="a Workload of a ClusterQueue with a policy becomes a parent"),
        pytest.param(True, False, False, id="no policy, no label"),
        pytest.param(False, True, False, id="gate off, no label"),
    ],
)
def test_parent_label(gate: bool, policy: bool, labelled: bool) -> None:
    obj = admitted_workload(datetime.now(UTC))
    del obj["status"]
    world = with_queues(World(obj, concurrent_config(gate)), policy=policy)
    world.rec.reconcile("ns/wl")
    labels = world.kube.objects[PATH]["metadata"].get("labels") or {}
    assert (labels.get("kueue.x-k8s.io/concurrent-admission-parent") == "true") is labelled


def test_variant_is_not_labelled_and_has_no_pods_ready_timeout() -> None:
    """A variant's parent is the one timed out (`reconcileNotReadyTimeout`)."""
    obj = admitted_workload(datetime.now(UTC) - timedelta(minutes=5))
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "parent", "uid": "p", "controller": True}
    ]
    world = with_queues(World(obj, concurrent_config()))
    world.rec.reconcile("ns/wl")
    after = world.kube.objects[PATH]
    assert "labels" not in after["metadata"]
    assert not any(c["type"] == "Evicted" for c in after["status"]["conditions"])


def test_parent_gets_no_admission_checks() -> None:
    """`reconcileSyncAdmissionChecks` skips parents: the checks run on the variants."""
    obj = admitted_workload(datetime.now(UTC))
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/concurrent-admission-parent": "true"}
    del obj["status"]["admissionChecks"]
    world = with_queues(World(obj, concurrent_config()))
    world.store.get("clusterqueues", "cq")["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "check"}]}
    world.rec.reconcile("ns/wl")
    assert "admissionChecks" not in world.kube.objects[PATH]["status"]


def orphan(*, deleting: bool = False, owned: bool = False, uid_label: bool = True) -> dict[str, Any]:
    wl = admitted_workload(datetime(2025, 1, 1, tzinfo=UTC))
    meta = wl["metadata"]
    meta["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    meta["resourceVersion"] = "7"
    if uid_label:
        meta["labels"] = {"kueue.x-k8s.io/job-uid": "job-uid"}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    if owned:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "job-uid", "controller": True}
        ]
    return wl


def finished(obj: dict[str, Any]) -> dict[str, Any] | None:
    return next((cnd for cnd in obj.get("status", {}).get("conditions", []) if cnd["type"] == "Finished"), None)


def test_a_workload_its_job_orphaned_is_finished_and_released() -> None:
    """A Job deleted with propagationPolicy=Orphan: the garbage collector drops the Workload's
    ownerReference; the job-uid label still names the Job that owned it."""
    world = World(orphan(), Configuration())
    world.rec.reconcile("ns/wl")
    obj = world.kube.objects[PATH]
    cond = finished(obj)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "OwnerNotFound")
    assert cond["message"] == "The workload's owner no longer exists"
    assert not obj["metadata"].get("finalizers")


def test_a_deleted_workload_without_owner_loses_its_finalizer_without_being_finished() -> None:
    world = World(orphan(deleting=True, uid_label=False), Configuration())
    world.rec.reconcile("ns/wl")
    obj = world.kube.objects[PATH]
    assert not obj["metadata"].get("finalizers")
    assert finished(obj) is None


@pytest.mark.parametrize("wl", [orphan(owned=True), orphan(uid_label=False)], ids=["owned", "never-owned-by-a-job"])
def test_owned_or_standalone_workloads_keep_their_finalizer(wl: dict[str, Any]) -> None:
    world = World(wl, Configuration())
    world.rec.reconcile("ns/wl")
    obj = world.kube.objects[PATH]
    assert obj["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert finished(obj) is None


# -- spec.maximumExecutionTimeSeconds (`reconcileMaxExecutionTime`) and schedulingStats ------------
class Events(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.seen: list[tuple[str, str, str, str]] = []

    def emit(self, obj: Any, etype: str, reason: str, note: str, controller: str, *, action: str = "") -> None:
        self.seen.append((etype, reason, note, controller))


def timed_workload(admitted_at: datetime, limit: int, past: int | None = None) -> dict[str, Any]:
    obj = admitted_workload(admitted_at)
    obj["spec"]["maximumExecutionTimeSeconds"] = limit
    if past is not None:
        obj["status"]["accumulatedPastExecutionTimeSeconds"] = past
    return obj


def test_exceeding_the_maximum_execution_time_deactivates_and_evicts_the_workload() -> None:
    """Three reconciles, as upstream's three: DeactivationTarget (with the Warning event, the
    accumulated time dropped), spec.active=false, then Evicted with the cause, counted in
    schedulingStats and the eviction metrics."""
    world = World(timed_workload(datetime.now(UTC) - timedelta(seconds=15), 10, past=6), Configuration())
    world.rec.events = rec = Events()
    world.rec.reconcile("ns/wl")
    status = world.kube.objects[PATH]["status"]
    target = next(c for c in status["conditions"] if c["type"] == "DeactivationTarget")
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "MaximumExecutionTimeExceeded",
        "exceeding the maximum execution time",
    )
    assert "accumulatedPastExecutionTimeSeconds" not in status
    assert rec.seen == [
        ("Warning", "MaximumExecutionTimeExceeded", "The maximum execution time (10s) exceeded", w.CONTROLLER_NAME)
    ]
    world.rec.reconcile("ns/wl")
    assert world.kube.objects[PATH]["spec"]["active"] is False
    world.rec.reconcile("ns/wl")
    status = world.kube.objects[PATH]["status"]
    evicted = next(c for c in status["conditions"] if c["type"] == "Evicted")
    assert (evicted["status"], evicted["reason"], evicted["message"]) == (
        "True",
        "DeactivatedDueToMaximumExecutionTimeExceeded",
        "The workload is deactivated due to exceeding the maximum execution time",
    )
    assert all(c["type"] != "DeactivationTarget" for c in status["conditions"])
    assert status["schedulingStats"] == {
        "evictions": [{"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded", "count": 1}]
    }
    assert world.evicted == [("ns/wl", "cq", "Deactivated", "MaximumExecutionTimeExceeded")]
    writes = len(world.kube.calls)
    world.rec.reconcile("ns/wl")  # still Admitted until its Job releases the quota: not marked again
    assert world.kube.calls[writes:] == []
    assert rec.seen[-1] == (
        "Normal",
        "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded",
        "The workload is deactivated due to exceeding the maximum execution time",
        w.CONTROLLER_NAME,
    )


def test_before_the_maximum_execution_time_the_reconcile_comes_back_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admitted_at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=2)
    world = World(timed_workload(admitted_at, 30, past=8), Configuration())
    later: list[tuple[str, float]] = []
    monkeypatch.setattr(world.rec.queue, "add_after", lambda key, delay: later.append((key, delay)))
    world.rec.reconcile("ns/wl")
    assert [call for call in world.kube.calls if call[0] != "GET"] == []
    [(key, delay)] = later
    remaining = (admitted_at + timedelta(seconds=22) - datetime.now(UTC)).total_seconds()
    assert key == "ns/wl" and remaining <= delay <= remaining + 0.5


def test_a_pods_ready_timeout_eviction_is_counted_with_its_cause() -> None:
    obj = admitted_workload(datetime.now(UTC) - timedelta(minutes=5))
    obj["status"]["schedulingStats"] = {
        "evictions": [{"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 2}]
    }
    world = World(obj, config(60))
    world.rec.reconcile("ns/wl")
    assert world.kube.objects[PATH]["status"]["schedulingStats"] == {
        "evictions": [{"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 3}]
    }


def test_an_eviction_forgets_the_multikueue_worker() -> None:
    """`resetClusterNomination` (evict.go): a readmitted Workload is dispatched to the workers afresh."""
    obj = admitted_workload(datetime.now(UTC) - timedelta(minutes=5))
    obj["status"]["clusterName"] = "worker1"
    world = World(obj, config(60))
    world.rec.reconcile("ns/wl")
    status = world.kube.objects[PATH]["status"]
    assert any(c["type"] == "Evicted" and c["status"] == "True" for c in status["conditions"])
    assert "clusterName" not in status
