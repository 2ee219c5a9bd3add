"""The worker's side of AdmissionChecks: the AdmissionCheck finalizer and helpers, the Job started
with the checks' podSetUpdates, and the workload controller's admission-check writes."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook.config import Configuration
from webhook.worker import admission_checks as ac
from webhook.worker import events
from webhook.worker.integrations import batchjob as j
from webhook.worker.reconcilers import workload as w
from webhook.worker.store import Store

FINALIZER = "kueue.x-k8s.io/resource-in-use"
WL_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl"


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# == helpers =======================================================================================
def admission_check(
    *, active: str | None = None, deleting: bool = False, finalizers: tuple[str, ...] = ()
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "prov", "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    obj: dict[str, Any] = {"metadata": meta, "spec": {"controllerName": "example.com/prov"}}
    if active is not None:
        obj["status"] = {"conditions": [{"type": "Active", "status": active, "reason": "r", "message": "m"}]}
    return obj


@pytest.mark.parametrize(("active", "want"), [("True", True), ("False", False), (None, False)])
def test_only_active_true_makes_a_check_active(active: str | None, want: bool) -> None:
    assert ac.is_active(admission_check(active=active)) is want


def test_the_finalizer_is_added_while_the_check_lives_and_released_once_unused() -> None:
    added = ac.finalized(admission_check(), set())
    assert added is not None and added["metadata"]["finalizers"] == [FINALIZER]
    assert ac.finalized(admission_check(finalizers=(FINALIZER,)), set()) is None
    assert (
        ac.finalized(admission_check(deleting=True, finalizers=(FINALIZER,)), {"prov"}) is None
    )  # a ClusterQueue names it
    released = ac.finalized(admission_check(deleting=True, finalizers=("other", FINALIZER)), {"else"})
    assert released is not None and released["metadata"]["finalizers"] == ["other"]


def cq(name: str, checks: list[str], flavors: tuple[str, ...] = ("f",)) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": f, "resources": []} for f in flavors]}
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": n} for n in checks]},
        },
    }


def test_checks_in_use_and_what_changes_them() -> None:
    assert ac.checks_in_use([cq("a", ["x", "y"]), cq("b", ["y"]), {"metadata": {"name": "c"}, "spec": {}}]) == {
        "x",
        "y",
    }
    assert ac.checks_changed(None, cq("a", []))
    assert not ac.checks_changed(cq("a", ["x"]), {**cq("a", ["x"]), "status": {"pendingWorkloads": 3}})
    assert ac.checks_changed(cq("a", ["x"]), cq("a", ["x", "y"]))
    assert ac.checks_changed(
        cq("a", ["x"]), cq("a", ["x"], flavors=("f", "g"))
    )  # a rule without onFlavors covers g now


def test_workloads_routed_to_a_queue() -> None:
    store = Store()
    for ns, name, target in (("a", "lq", "cq1"), ("b", "lq", "cq2"), ("b", "other", "cq1")):
        store.put(
            "localqueues",
            {"metadata": {"namespace": ns, "name": name, "resourceVersion": "1"}, "spec": {"clusterQueue": target}},
        )
    for ns, name, queue in (("a", "w1", "lq"), ("b", "w2", "lq"), ("b", "w3", "other"), ("c", "w4", "lq")):
        store.put(
            "workloads",
            {"metadata": {"namespace": ns, "name": name, "resourceVersion": "1"}, "spec": {"queueName": queue}},
        )
    assert sorted(ac.workloads_routed_to(store, cluster_queue="cq1")) == ["a/w1", "b/w3"]
    assert ac.workloads_routed_to(store, local_queue="b/lq") == ["b/w2"]


# == the Job ======================================================================================
def make_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "job",
            "namespace": "ns",
            "uid": "uid",
            "resourceVersion": "7",
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
        },
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "template": {
                "metadata": {"labels": {"app": "x"}, "annotations": {"keep": "me"}},
                "spec": {"nodeSelector": {"pool": "a"}, "containers": [{"name": "c"}]},
            },
        },
    }


def reserved_workload(job: dict[str, Any], *checks: dict[str, Any], admitted: bool = True) -> dict[str, Any]:
    wl = j.build_workload(job, config=Configuration(), priority=j.Priority())
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "count": 1}],
        },
        "conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True" if admitted else "False"},
            {"type": "PodsReady", "status": "False", "reason": "WaitForStart"},
        ],
        "admissionChecks": list(checks),
    }
    return wl


def test_start_applies_the_checks_pod_set_updates_to_the_template() -> None:
    job = make_job()
    tol = {"key": "prov", "operator": "Exists", "effect": "NoSchedule"}
    wl = reserved_workload(
        job,
        {
            "name": "one",
            "state": "Ready",
            "podSetUpdates": [
                {"name": "other", "labels": {"ignored": "yes"}},
                {
                    "name": "main",
                    "labels": {"l": "1"},
                    "annotations": {"an": "1"},
                    "nodeSelector": {"zone": "z"},
                    "tolerations": [tol],
                },
            ],
        },
        {
            "name": "two",
            "state": "Ready",
            "podSetUpdates": [{"name": "main", "labels": {"l2": "2"}, "tolerations": [tol]}],
        },
    )
    tpl = j.start_patch(job, wl, {"f": {"spec": {"nodeLabels": {"pool": "a"}}}})["spec"]["template"]
    assert tpl["metadata"]["labels"] == {
        "app": "x",
        "kueue.x-k8s.io/podset": "main",
        "kueue.x-k8s.io/local-queue-name": "lq",
        "kueue.x-k8s.io/cluster-queue-name": "cq",
        "l": "1",
        "l2": "2",
    }
    assert tpl["metadata"]["annotations"] == {"keep": "me", "an": "1"}
    assert tpl["spec"]["nodeSelector"] == {"pool": "a", "zone": "z"}
    assert tpl["spec"]["tolerations"] == [tol]


@pytest.mark.parametrize(
    ("updates", "error"),
    [
        pytest.param(
            [{"labels": {"l": "1"}}, {"labels": {"l": "2"}}],
            'in admission check "b": invalid admission check PodSetUpdate: conflict for labels: conflict for key=l, value1=1, value2=2',
            id="two checks disagree",
        ),
        pytest.param(
            [{"nodeSelector": {"pool": "b"}}, {}],
            'in admission check "a": invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=pool, value1=a, value2=b',
            id="a check disagrees with the flavor",
        ),
        pytest.param(
            [{"annotations": {"keep": "other"}}, {}],
            "invalid admission check PodSetUpdate: conflict for annotations: conflict for key=keep, value1=me, value2=other",
            id="a check disagrees with the template",
        ),
    ],
)
def test_conflicting_pod_set_updates_fail_the_start(updates: list[dict[str, Any]], error: str) -> None:
    job = make_job()
    wl = reserved_workload(
        job,
        *(
            {"name": n, "state": "Ready", "podSetUpdates": [{"name": "main", **u}]}
            for n, u in zip("ab", updates, strict=True)
        ),
    )
    with pytest.raises(j.StartConflict) as exc:
        j.start_patch(job, wl, {"f": {"spec": {"nodeLabels": {"pool": "a"}}}})
    assert str(exc.value) == error


def test_a_suspended_job_reports_pending_check_messages_until_admitted() -> None:
    job = make_job()
    checks = [
        {"name": "a", "state": "Pending", "message": "waiting"},
        {"name": "b", "state": "Ready", "message": "ok"},
        {"name": "c", "state": "Pending", "message": "queued"},
        {"name": "d", "state": "Pending", "message": ""},
    ]
    p = j.plan(job, [reserved_workload(job, *checks, admitted=False)], namespace_labels={}, config=Configuration())
    assert (p.action, p.message) == ("record_admission_checks", "a: waiting; c: queued")
    quiet = [{"name": "a", "state": "Pending", "message": ""}]
    assert (
        j.plan(
            job, [reserved_workload(job, *quiet, admitted=False)], namespace_labels={}, config=Configuration()
        ).action
        == "ignore"
    )
    assert j.plan(job, [reserved_workload(job, *checks)], namespace_labels={}, config=Configuration()).action == "start"


# == the workload controller ======================================================================
class StatusKube(FakeKube):
    """Writes to the status subresource land on the object."""

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return super().request(method, path.removesuffix("/status"), **kwargs)


class Recorder(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.seen: list[tuple[str, str, str]] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        self.seen.append((etype, reason, note))


class World:
    def __init__(self, wl: dict[str, Any]) -> None:
        self.kube = StatusKube({WL_PATH: wl})
        self.store = Store()
        self.store.put("workloads", copy.deepcopy(self.kube.objects[WL_PATH]))
        self.store.put(
            "localqueues",
            {"metadata": {"namespace": "ns", "name": "lq", "resourceVersion": "1"}, "spec": {"clusterQueue": "cq"}},
        )
        self.store.put("clusterqueues", {**cq("cq", ["prov"]), "metadata": {"name": "cq", "resourceVersion": "1"}})
        self.events = Recorder()
        self.admitted: list[float] = []
        self.rec = w.WorkloadReconciler(
            self.kube,
            self.store,
            Configuration(wait_for_pods_ready=None),
            self.events,
            stop=threading.Event(),
            on_evicted=lambda *_: None,
            on_admitted=lambda _wl, waited, _now: self.admitted.append(waited),
        )

    @property
    def status(self) -> dict[str, Any]:
        return self.kube.objects[WL_PATH]["status"]  # type: ignore[no-any-return]

    def set_check(self, state: str, message: str = "") -> None:
        obj = copy.deepcopy(self.kube.objects[WL_PATH])
        obj["status"]["admissionChecks"][0].update(state=state, message=message)
        self.kube.put(WL_PATH, obj)
        self.store.put("workloads", copy.deepcopy(self.kube.objects[WL_PATH]))


def workload(reserved_at: datetime) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "generation": 1, "uid": "u"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}],
        },
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}}]},
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "m",
                    "lastTransitionTime": stamp(reserved_at),
                }
            ],
        },
    }


def cond(status: Mapping[str, Any], ctype: str) -> tuple[str, str, str]:
    c = next(c for c in status["conditions"] if c["type"] == ctype)
    return c["status"], c["reason"], c["message"]


def test_reservation_lists_the_check_then_admits_once_it_is_ready() -> None:
    world = World(workload(datetime.now(UTC) - timedelta(seconds=7)))
    world.rec.reconcile("ns/wl")
    [check] = world.status["admissionChecks"]
    assert (check["name"], check["state"], check["message"]) == ("prov", "Pending", "")
    world.store.put("workloads", copy.deepcopy(world.kube.objects[WL_PATH]))
    world.rec.reconcile("ns/wl")
    assert cond(world.status, "Admitted") == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    world.rec.reconcile("ns/wl")  # nothing more to do while the check is Pending
    assert world.events.seen == [] and world.admitted == []

    world.set_check("Ready")
    world.rec.reconcile("ns/wl")
    assert cond(world.status, "Admitted") == ("True", "Admitted", "The workload is admitted")
    [(etype, reason, note)] = world.events.seen
    assert (etype, reason) == ("Normal", "Admitted") and note in (
        f"Admitted by ClusterQueue cq, wait time since reservation was {s}s" for s in (7, 8)
    )
    assert len(world.admitted) == 1 and 7 <= world.admitted[0] < 9


def test_rejected_sets_the_deactivation_target_with_a_warning() -> None:
    world = World(workload(datetime.now(UTC)))
    world.rec.reconcile("ns/wl")
    world.store.put("workloads", copy.deepcopy(world.kube.objects[WL_PATH]))
    world.rec.reconcile("ns/wl")
    world.set_check("Rejected", "no capacity")
    world.rec.reconcile("ns/wl")
    detail = 'AdmissionCheck in Rejected state: "prov" (no capacity)'
    assert cond(world.status, "DeactivationTarget") == ("True", "AdmissionCheck", detail)
    assert world.events.seen == [("Warning", "AdmissionCheckRejected", f"Deactivated due to {detail}")]
    world.rec.reconcile("ns/wl")
    assert world.kube.objects[WL_PATH]["spec"]["active"] is False
