"""Scenarios ported from upstream `pkg/controller/jobs/pod/pod_controller_test.go` and
`pkg/controller/jobframework/workload_names_test.go`, asserting the actions the reconciler returns."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from webhook.worker.reconcilers import actions as a
from webhook.worker.reconcilers import pod_group as pg

NOW = datetime(2025, 1, 1, 12, tzinfo=UTC)
NOW_S = "2025-01-01T12:00:00Z"
ROLE = "dc85db45"  # role hash of the base pod (upstream's podUID constant)
OPTS = pg.Options(workload_identifier_annotations=False)
FLAVORS = pg.Lookups(resource_flavors={"unit-test-flavor": {"nodeLabels": {"kubernetes.io/arch": "arm64"}}})


def ts(minutes: int = 0) -> str:
    return (NOW + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Pod:
    def __init__(self, name: str = "pod") -> None:
        self.o: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": "test-uid",
                "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/managed": "true"},
                "annotations": {},
                "finalizers": ["kueue.x-k8s.io/managed"],
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
                "schedulingGates": [],
            },
        }

    def uid(self, uid: str) -> Pod:
        self.o["metadata"]["uid"] = uid
        return self

    def gated(self) -> Pod:
        self.o["spec"]["schedulingGates"].append({"name": "kueue.x-k8s.io/admission"})
        return self

    def label(self, k: str, v: str) -> Pod:
        self.o["metadata"]["labels"][k] = v
        return self

    def unlabel(self, k: str) -> Pod:
        del self.o["metadata"]["labels"][k]
        return self

    def annotation(self, k: str, v: str) -> Pod:
        self.o["metadata"]["annotations"][k] = v
        return self

    def group(self, name: str, total: int) -> Pod:
        return self.label("kueue.x-k8s.io/pod-group-name", name).annotation("kueue.x-k8s.io/pod-group-total-count", str(total))

    def phase(self, phase: str, message: str = "") -> Pod:
        self.o["status"] = {"phase": phase, **({"message": message} if message else {})}
        return self

    def created(self, minutes: int) -> Pod:
        self.o["metadata"]["creationTimestamp"] = ts(minutes)
        return self

    def deleted(self, minutes: int = 0) -> Pod:
        self.o["metadata"]["deletionTimestamp"] = ts(minutes)
        return self

    def no_finalizer(self) -> Pod:
        self.o["metadata"]["finalizers"] = []
        return self

    def node_selector(self, k: str, v: str) -> Pod:
        self.o["spec"].setdefault("nodeSelector", {})[k] = v
        return self

    def failed_at(self, minutes: int) -> Pod:
        self.o["status"] = {
            "phase": "Failed",
            "conditions": [{"type": "ContainersReady", "status": "False", "reason": "PodFailed", "lastTransitionTime": ts(minutes)}],
        }
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


class Wl:
    def __init__(self, name: str, *, group: bool = False) -> None:
        self.o: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "finalizers": ["kueue.x-k8s.io/resource-in-use"], "generation": 1},
            "spec": {"queueName": "user-queue", "podSets": [], "priority": 0},
            "status": {"conditions": []},
        }
        if group:
            self.o["metadata"]["annotations"] = {"kueue.x-k8s.io/is-group-workload": "true"}

    def pod_set(self, name: str, count: int, **spec: Any) -> Wl:
        tmpl = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}], **spec}
        self.o["spec"]["podSets"].append({"name": name, "count": count, "template": {"metadata": {}, "spec": tmpl}})
        return self

    def controller(self, name: str = "pod", uid: str = "test-uid") -> Wl:
        self.o["metadata"].setdefault("ownerReferences", []).append(
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid, "controller": True, "blockOwnerDeletion": True}
        )
        return self

    def owner(self, name: str, uid: str = "test-uid") -> Wl:
        self.o["metadata"].setdefault("ownerReferences", []).append({"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid})
        return self

    def condition(self, ctype: str, status: str = "True", reason: str = "", message: str = "") -> Wl:
        self.o["status"]["conditions"].append({"type": ctype, "status": status, "reason": reason, "message": message})
        return self

    def admitted(self, role: str = "main", count: int | None = None, cq: str = "cq") -> Wl:
        psa: dict[str, Any] = {"name": role, "flavors": {"cpu": "unit-test-flavor"}}
        if count is not None:
            psa["count"] = count
        self.o["status"]["admission"] = {"clusterQueue": cq, "podSetAssignments": [psa]}
        self.condition("QuotaReserved").condition("Admitted")
        return self.condition("PodsReady", "False", "WaitForStart")

    def deleting(self) -> Wl:
        self.o["metadata"]["deletionTimestamp"] = NOW_S
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


def ref(name: str = "pod", uid: str = "test-uid") -> a.ObjectRef:
    return a.ObjectRef("v1", "Pod", "ns", name, uid)


def wl_ref(name: str) -> a.ObjectRef:
    return a.ObjectRef("kueue.x-k8s.io/v1beta2", "Workload", "ns", name)


def ev(reason: str, message: str, name: str = "pod", *, warning: bool = False, action: str = "") -> a.Event:
    return a.Event(a.EventType.WARNING if warning else a.EventType.NORMAL, reason, message, ref(name), action or reason)


def cond(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": NOW_S, "observedGeneration": 1}


def finished(wl: str, reason: str, message: str) -> a.UpdateWorkloadStatus:
    return a.UpdateWorkloadStatus(wl_ref(wl), (cond("Finished", "True", reason, message),), field_manager="kueue-admission")


def stop(name: str, reason: str, message: str) -> list[a.Action]:
    c = {"type": "TerminationTarget", "status": "True", "lastTransitionTime": NOW_S, "reason": reason, "message": message}
    return [a.SetPodCondition(ref(name), c), a.DeletePod(ref(name)), ev("Stopped", message, name)]


# --- naming ---------------------------------------------------------------------------------------

LONG = (
    "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-media-"
    "engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-architect-"
    "validation-checked-approved-by-legal-and-ops-dept"
)


@pytest.mark.parametrize(
    ("kwargs", "want"),
    [
        pytest.param({"owner_name": "name", "owner_uid": "uid", "kind": "Pod"}, "pod-name-73eee", id="pod name/uid"),
        pytest.param({"owner_name": "name", "owner_uid": "uid", "kind": "Job", "group": "batch"}, "job-name-ef3a1", id="job"),
        pytest.param({"owner_name": "name", "owner_uid": "uid", "kind": "Job", "group": "batch", "extra": "1"}, "job-name-2514c", id="job with extra"),
        pytest.param(
            {"owner_name": LONG, "owner_uid": "uid", "kind": "Job", "group": "batch", "short": True},
            "job-marketing-campaign-autumn-2024-region-north-america-d-218b8",
            id="long owner, ShortWorkloadNames",
        ),
    ],
)
def test_workload_name(kwargs: dict[str, Any], want: str) -> None:
    assert pg.workload_name(**kwargs) == want


def test_long_owner_name_is_truncated_to_253() -> None:
    name = pg.workload_name(LONG, "uid", kind="Job", group="batch")
    assert len(name) == 253 and name.endswith("-by-l-218b8")
    assert pg.workload_name_for_pod("name", "uid") == "pod-name-73eee"


# --- single pod -----------------------------------------------------------------------------------


def _single_workload_body() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "pod-pod-" + pg.workload_name_for_pod("pod", "test-uid")[-5:],
            "namespace": "ns",
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "labels": {"kueue.x-k8s.io/job-uid": "test-uid"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pod", "uid": "test-uid", "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"metadata": {}, "spec": Pod().gated().obj()["spec"]},
                    "topologyRequest": {"podIndexLabel": "kueue.x-k8s.io/pod-group-pod-index"},
                }
            ],
            "queueName": "user-queue",
            "priority": 0,
        },
    }


SINGLE_WL = pg.workload_name_for_pod("pod", "test-uid")

SINGLE_CASES = [
    pytest.param(
        Pod().gated().obj(),
        [],
        [a.CreateWorkload(_single_workload_body()), ev("CreatedWorkload", f"Created Workload: ns/{SINGLE_WL}")],
        "",
        id="the workload is created when queue name is set",
    ),
    pytest.param(
        Pod().gated().obj(),
        [Wl(SINGLE_WL).pod_set("main", 1, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}]).controller().admitted().obj()],
        [
            a.PatchPod(
                ref(),
                {
                    "metadata": {
                        "labels": {
                            "kueue.x-k8s.io/podset": "main",
                            "kueue.x-k8s.io/local-queue-name": "user-queue",
                            "kueue.x-k8s.io/cluster-queue-name": "cq",
                        },
                        "annotations": {"kueue.x-k8s.io/workload": SINGLE_WL},
                    },
                    "spec": {"nodeSelector": {"kubernetes.io/arch": "arm64"}, "schedulingGates": []},
                },
            ),
            ev("Started", "Admitted by clusterQueue cq"),
        ],
        "",
        id="scheduling gate is removed and node selector is added if workload is admitted",
    ),
    pytest.param(
        Pod().gated().node_selector("kubernetes.io/arch", "amd64").obj(),
        [Wl(SINGLE_WL).pod_set("main", 1).controller().admitted().obj()],
        [
            finished(
                SINGLE_WL,
                "FailedToStart",
                "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=kubernetes.io/arch, value1=amd64, value2=arm64",
            )
        ],
        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=kubernetes.io/arch, value1=amd64, value2=arm64",
        id="node selector conflict fails the start",
    ),
    pytest.param(
        Pod().phase("Succeeded", "done").obj(),
        [Wl(SINGLE_WL).pod_set("main", 1).controller().admitted().obj()],
        [
            finished(SINGLE_WL, "Succeeded", "done"),
            ev("FinishedWorkload", f"Workload 'ns/{SINGLE_WL}' is declared finished"),
            a.RemoveFinalizer(ref()),
        ],
        "",
        id="pod is finalized when it's succeeded",
    ),
    pytest.param(
        Pod().phase("Failed", "oom").obj(),
        [Wl(SINGLE_WL).pod_set("main", 1).controller().admitted().obj()],
        [
            finished(SINGLE_WL, "Failed", "oom"),
            ev("FinishedWorkload", f"Workload 'ns/{SINGLE_WL}' is declared finished"),
            a.RemoveFinalizer(ref()),
        ],
        "",
        id="failed pod finishes its workload as Failed",
    ),
    pytest.param(
        Pod().deleted().obj(),
        [Wl(SINGLE_WL).pod_set("main", 1).controller().obj()],
        [
            finished(SINGLE_WL, "OwnerNotFound", "The workload's owner no longer exists"),
            a.RemoveWorkloadFinalizer(wl_ref(SINGLE_WL)),
            a.RemoveFinalizer(ref()),
        ],
        "",
        id="deleted pod finishes its workload as OwnerNotFound",
    ),
    pytest.param(
        None,
        [Wl(SINGLE_WL).pod_set("main", 1).controller().obj()],
        [
            finished(SINGLE_WL, "OwnerNotFound", "The workload's owner no longer exists"),
            a.RemoveWorkloadFinalizer(wl_ref(SINGLE_WL)),
        ],
        "",
        id="finalize workload for non existent pod",
    ),
    pytest.param(
        Pod().unlabel("kueue.x-k8s.io/managed").obj(),
        [],
        [],
        "",
        id="the pod reconciliation is skipped when 'kueue.x-k8s.io/managed' label is not set",
    ),
    pytest.param(
        Pod().obj(),
        [Wl(SINGLE_WL).pod_set("main", 1).controller().admitted().condition("Evicted", "True", "Preempted", "Preempted by test").obj()],
        [
            *stop("pod", "WorkloadEvictedDueToPreempted", "Preempted by test"),
            a.UpdateWorkloadStatus(
                wl_ref(SINGLE_WL),
                (
                    cond("Requeued", "False", "Preempted", "Preempted by test"),
                    cond("QuotaReserved", "False", "PendingEvaluation", "Preempted by test"),
                    cond("Admitted", "False", "NoReservation", "The workload has no reservation"),
                ),
                clear_admission=True,
                field_manager="kueue-admission",
            ),
        ],
        "",
        id="pod is stopped when workload is evicted",
    ),
    pytest.param(
        Pod().obj(),
        [Wl(SINGLE_WL).pod_set("main", 1).controller().condition("PodsReady", "False", "WaitForStart").obj()],
        stop("pod", "NotAdmitted", "Not admitted by cluster queue"),
        "",
        id="pod without scheduling gate is terminated if workload is not admitted",
    ),
    pytest.param(
        Pod().obj(),
        [Wl("unit-test").pod_set("main", 2).controller().admitted().obj()],
        [
            *stop("pod", "NoMatchingWorkload", "No matching Workload; restoring pod templates according to existent Workload"),
            a.DeleteWorkload(wl_ref("unit-test")),
            ev("DeletedWorkload", "Deleted not matching Workload: ns/unit-test"),
        ],
        "no matching workloads: deleted 1 workloads",
        id="non-matching admitted workload is deleted and pod is finalized",
    ),
    pytest.param(
        Pod().gated().label("kueue.x-k8s.io/queue-name", "test-queue").obj(),
        [Wl(SINGLE_WL).pod_set("main", 1, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}]).controller().condition("PodsReady", "False", "WaitForStart").obj()],
        [a.PatchWorkload(wl_ref(SINGLE_WL), {"spec": {"queueName": "test-queue"}})],
        "",
        id="when the queue-name changed",
    ),
]


@pytest.mark.parametrize(("pod", "workloads", "want", "error"), SINGLE_CASES)
def test_reconcile_pod(pod: dict[str, Any] | None, workloads: list[dict[str, Any]], want: list[a.Action], error: str) -> None:
    got = pg.reconcile_pod(pod, workloads=workloads, opts=OPTS, lookups=FLAVORS, now=NOW)
    assert list(got.actions) == want
    assert got.error == error


def test_created_single_workload_uses_upstream_name() -> None:
    got = pg.reconcile_pod(Pod().uid("uid").gated().obj(), workloads=[], opts=OPTS, lookups=FLAVORS, now=NOW)
    create = got.actions[0]
    assert isinstance(create, a.CreateWorkload)
    assert create.workload["metadata"]["name"] == pg.workload_name_for_pod("pod", "uid")


def test_missing_workload_priority_class_warns_and_retries() -> None:
    pod = Pod().gated().label("kueue.x-k8s.io/priority-class", "high").obj()
    got = pg.reconcile_pod(pod, workloads=[], opts=OPTS, lookups=FLAVORS, now=NOW)
    assert got.retry
    assert list(got.actions) == [ev("WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "high" not found', warning=True)]
    lookups = pg.Lookups(workload_priority_classes={"high": 100})
    spec = pg.reconcile_pod(pod, workloads=[], opts=OPTS, lookups=lookups, now=NOW).actions[0].workload["spec"]  # type: ignore[union-attr]
    assert spec["priority"] == 100
    assert spec["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
