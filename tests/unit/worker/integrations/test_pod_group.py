"""Scenarios ported from upstream `pkg/controller/jobs/pod/pod_controller_test.go` and
`pkg/controller/jobframework/workload_names_test.go`, asserting the actions the generic job
reconcile plans for the pod adapter (each action summarised by what it writes to which object)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from webhook.api import jobs
from webhook.config import Configuration
from webhook.worker.integrations.pod import adapter as pg
from webhook.worker.integrations.pod import start as ps
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework.interface import StartConflict
from webhook.worker.store import Store

NOW = datetime(2025, 1, 1, 12, tzinfo=UTC)
NOW_S = "2025-01-01T12:00:00Z"
ROLE = "dc85db45"  # role hash of the base pod (upstream's podUID constant)
CONFIG = Configuration(feature_gates={"WorkloadIdentifierAnnotations": False})
OPTS = pg.Options.from_config(CONFIG)
FLAVORS = pg.Lookups(resource_flavors={"unit-test-flavor": {"nodeLabels": {"kubernetes.io/arch": "arm64"}}})


def store(*objs: tuple[str, dict[str, Any]]) -> Store:
    out = Store()
    out.put(
        "resourceflavors",
        {"metadata": {"name": "unit-test-flavor"}, "spec": {"nodeLabels": {"kubernetes.io/arch": "arm64"}}},
    )
    for kind, obj in objs:
        out.put(kind, obj)
    return out


Summary = tuple[Any, ...]


def summary(act: ja.JobAction) -> Summary:
    """What an action writes, to which object (events without `regarding` name the job: "pod")."""
    wl = "" if act.workload is None else act.workload["metadata"]["name"]
    match act:
        case ja.RecordEvent() | ja.RecordAdmissionChecks():
            warning = isinstance(act, ja.RecordEvent) and act.warning
            reason = "UpdatedAdmissionCheck" if isinstance(act, ja.RecordAdmissionChecks) else act.reason
            target = "pod" if act.regarding is None else act.regarding["metadata"]["name"]
            action = act.action if isinstance(act, ja.RecordEvent) else ""
            return ("event", target, "Warning" if warning else "Normal", reason, act.message, action or reason)
        case ja.FinishWorkload():
            return ("finish", wl, act.reason, act.message)
        case ja.RemovePodFinalizer() | ja.DeletePod():
            return (act.name, act.pod["metadata"]["name"], act.expected)
        case ja.StopPod():
            return (act.name, act.pod["metadata"]["name"], act.condition)
        case ja.PatchPod():
            return (act.name, act.pod["metadata"]["name"], act.patch)
        case ja.CreateWorkload():
            return (act.name, act.body)
        case ja.SyncQueueName():
            return (act.name, wl, act.queue_name)
        case ja.UpdateReclaimablePods():
            return (act.name, wl, list(act.reclaimable_pods))
        case ja.SetWorkloadConditions():
            return (act.name, wl, act.conditions)
        case ja.ClearReservation():
            return (act.name, wl, act.reason, act.message, act.requeue)
        case ja.AdoptWorkload():
            return (act.name, wl, (act.workload or {})["metadata"]["ownerReferences"])
    return (act.name, wl)


def summaries(plan: pg.Plan) -> list[Summary]:
    return [summary(act) for act in plan.steps]


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
        return self.label("kueue.x-k8s.io/pod-group-name", name).annotation(
            "kueue.x-k8s.io/pod-group-total-count", str(total)
        )

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
            "conditions": [
                {"type": "ContainersReady", "status": "False", "reason": "PodFailed", "lastTransitionTime": ts(minutes)}
            ],
        }
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


class Wl:
    def __init__(self, name: str, *, group: bool = False) -> None:
        self.o: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": "ns",
                "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                "generation": 1,
            },
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
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        )
        return self

    def owner(self, name: str, uid: str = "test-uid") -> Wl:
        self.o["metadata"].setdefault("ownerReferences", []).append(
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}
        )
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


def rf(name: str = "pod", *, expected: bool = False) -> Summary:
    return ("remove_pod_finalizer", name, expected)


def delete_pod(name: str, *, expected: bool = False) -> Summary:
    return ("delete_pod", name, expected)


def ev(reason: str, message: str, name: str = "pod", *, warning: bool = False, action: str = "") -> Summary:
    return ("event", name, "Warning" if warning else "Normal", reason, message, action or reason)


def cond(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": NOW_S,
        "observedGeneration": 1,
    }


def finished(wl: str, reason: str, message: str) -> Summary:
    return ("finish", wl, reason, message)


def stop(name: str, reason: str, message: str) -> list[Summary]:
    c = {
        "type": "TerminationTarget",
        "status": "True",
        "lastTransitionTime": NOW_S,
        "reason": reason,
        "message": message,
    }
    return [("stop_pod", name, c), ev("Stopped", message, name)]


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
        pytest.param(
            {"owner_name": "name", "owner_uid": "uid", "kind": "Job", "group": "batch"}, "job-name-ef3a1", id="job"
        ),
        pytest.param(
            {"owner_name": "name", "owner_uid": "uid", "kind": "Job", "group": "batch", "extra": "1"},
            "job-name-2514c",
            id="job with extra",
        ),
        pytest.param(
            {"owner_name": LONG, "owner_uid": "uid", "kind": "Job", "group": "batch", "short": True},
            "job-marketing-campaign-autumn-2024-region-north-america-d-218b8",
            id="long owner, ShortWorkloadNames",
        ),
    ],
)
def test_workload_name(kwargs: dict[str, Any], want: str) -> None:
    assert jobs.workload_name(**kwargs) == want


def test_long_owner_name_is_truncated_to_253() -> None:
    name = jobs.workload_name(LONG, "uid", kind="Job", group="batch")
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
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "pod",
                    "uid": "test-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
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
        [("create", _single_workload_body()), ev("CreatedWorkload", f"Created Workload: ns/{SINGLE_WL}")],
        "",
        id="the workload is created when queue name is set",
    ),
    pytest.param(
        Pod().gated().obj(),
        [
            Wl(SINGLE_WL)
            .pod_set("main", 1, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
            .controller()
            .admitted()
            .obj()
        ],
        [
            (
                "patch_pod",
                "pod",
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
            rf(),
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
            rf(),
        ],
        "",
        id="failed pod finishes its workload as Failed",
    ),
    pytest.param(
        Pod().deleted().obj(),
        [Wl(SINGLE_WL).pod_set("main", 1).controller().obj()],
        [("finalize", SINGLE_WL), rf()],
        "",
        id="deleted pod finishes its workload as OwnerNotFound",
    ),
    pytest.param(
        None,
        [Wl(SINGLE_WL).pod_set("main", 1).controller().obj()],
        [("finalize", SINGLE_WL)],
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
        [
            Wl(SINGLE_WL)
            .pod_set("main", 1)
            .controller()
            .admitted()
            .condition("Evicted", "True", "Preempted", "Preempted by test")
            .obj()
        ],
        [
            *stop("pod", "WorkloadEvictedDueToPreempted", "Preempted by test"),
            ("clear_reservation", SINGLE_WL, "Preempted", "Preempted by test", False),
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
            *stop(
                "pod",
                "NoMatchingWorkload",
                "No matching Workload; restoring pod templates according to existent Workload",
            ),
            ("delete_workload", "unit-test"),
        ],
        "no matching workloads: deleted 1 workloads",
        id="non-matching admitted workload is deleted and pod is finalized",
    ),
    pytest.param(
        Pod().gated().label("kueue.x-k8s.io/queue-name", "test-queue").obj(),
        [
            Wl(SINGLE_WL)
            .pod_set("main", 1, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
            .controller()
            .condition("PodsReady", "False", "WaitForStart")
            .obj()
        ],
        [("sync_queue", SINGLE_WL, "test-queue")],
        "",
        id="when the queue-name changed",
    ),
]


@pytest.mark.parametrize(("pod", "workloads", "want", "error"), SINGLE_CASES)
def test_reconcile_pod(
    pod: dict[str, Any] | None, workloads: list[dict[str, Any]], want: list[Summary], error: str
) -> None:
    got = pg.reconcile_pod(pod, workloads=workloads, config=CONFIG, store=store(), now=NOW)
    assert summaries(got) == want
    assert got.error == error


def test_created_single_workload_uses_upstream_name() -> None:
    got = pg.reconcile_pod(Pod().uid("uid").gated().obj(), workloads=[], config=CONFIG, store=store(), now=NOW)
    create = got.steps[0]
    assert isinstance(create, ja.CreateWorkload)
    assert create.body["metadata"]["name"] == pg.workload_name_for_pod("pod", "uid")


def test_missing_workload_priority_class_warns_and_retries() -> None:
    pod = Pod().gated().label("kueue.x-k8s.io/priority-class", "high").obj()
    got = pg.reconcile_pod(pod, workloads=[], config=CONFIG, store=store(), now=NOW)
    assert got.retry
    assert summaries(got) == [
        ev("WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "high" not found', warning=True)
    ]
    wpc = ("workloadpriorityclasses", {"metadata": {"name": "high"}, "value": 100})
    create = pg.reconcile_pod(pod, workloads=[], config=CONFIG, store=store(wpc), now=NOW).steps[0]
    assert isinstance(create, ja.CreateWorkload)
    spec = create.body["spec"]
    assert spec["priority"] == 100
    assert spec["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}


# --- pod groups -----------------------------------------------------------------------------------


def gp(name: str = "pod", total: int = 2) -> Pod:
    return Pod(name).group("test-group", total)


def _group_workload_body(
    count: int, owners: list[str], *, extra_annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "test-group",
            "namespace": "ns",
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "annotations": {**(extra_annotations or {}), "kueue.x-k8s.io/is-group-workload": "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": n, "uid": "test-uid"} for n in owners],
        },
        "spec": {
            "podSets": [
                {
                    "name": ROLE,
                    "count": count,
                    "template": {"metadata": {}, "spec": Pod().gated().obj()["spec"]},
                    "topologyRequest": {"podIndexLabel": "kueue.x-k8s.io/pod-group-pod-index"},
                }
            ],
            "queueName": "user-queue",
            "priority": 0,
        },
    }


def _started(name: str) -> list[Summary]:
    patch = {
        "metadata": {
            "labels": {
                "kueue.x-k8s.io/podset": ROLE,
                "kueue.x-k8s.io/local-queue-name": "user-queue",
                "kueue.x-k8s.io/cluster-queue-name": "cq",
            },
            "annotations": {"kueue.x-k8s.io/workload": "test-group"},
        },
        "spec": {"nodeSelector": {"kubernetes.io/arch": "arm64"}, "schedulingGates": []},
    }
    return [("patch_pod", name, patch), ev("Started", "Admitted by clusterQueue cq", name)]


def gwl(count: int = 2, owners: tuple[str, ...] = ("pod", "pod2")) -> Wl:
    w = Wl("test-group", group=True).pod_set(ROLE, count)
    for o in owners:
        w.owner(o)
    return w


PROVREQ = "provreq.kueue.x-k8s.io/test-annotation"

GROUP_CASES = [
    pytest.param(
        [
            gp().gated().annotation(PROVREQ, "v").annotation("other/x", "y").obj(),
            gp("pod2").gated().annotation(PROVREQ, "v").obj(),
        ],
        None,
        [
            ("create", _group_workload_body(2, ["pod", "pod2"], extra_annotations={PROVREQ: "v"})),
            ev("CreatedWorkload", "Created Workload: ns/test-group"),
        ],
        "",
        id="workload is composed and created for the pod group",
    ),
    pytest.param(
        [gp(total=3).gated().annotation("kueue.x-k8s.io/pod-group-fast-admission", "true").obj()],
        None,
        [
            (
                "create",
                _group_workload_body(3, ["pod"], extra_annotations={})
                | {"spec": _group_workload_body(3, ["pod"])["spec"]},
            ),
            ev("CreatedWorkload", "Created Workload: ns/test-group"),
        ],
        "",
        id="workload is composed and created for the pod group with fast admission",
    ),
    pytest.param(
        [gp(total=3).gated().obj(), gp("pod2", 3).gated().obj()],
        None,
        [ev("ErrWorkloadCompose", "'test-group' group has fewer runnable pods than expected", warning=True)],
        "'test-group' group has fewer runnable pods than expected",
        id="if there's not enough non-failed pods in the group, workload should not be created",
    ),
    pytest.param(
        [gp().gated().obj(), gp("pod2").gated().label("kueue.x-k8s.io/queue-name", "test-queue").obj()],
        None,
        [],
        "pods 'pod' and 'pod2' has different queue names: user-queue!=test-queue",
        id="workload for pod group with different queue names shouldn't be created",
    ),
    pytest.param(
        [gp().gated().obj(), gp("pod2", 3).gated().obj()],
        None,
        [],
        "pods 'pod' and 'pod2' has different 'kueue.x-k8s.io/pod-group-total-count' values: 2!=3",
        id="different total counts",
    ),
    pytest.param(
        [gp(total=1).gated().created(0).obj(), gp("pod2", 1).gated().created(1).obj()],
        None,
        [
            rf("pod2", expected=True),
            delete_pod("pod2", expected=True),
            ev("ExcessPodDeleted", "Excess pod deleted", "pod2"),
            ("create", _group_workload_body(1, ["pod"])),
            ev("CreatedWorkload", "Created Workload: ns/test-group"),
        ],
        "",
        id="excess pods before wl creation, youngest pods are deleted",
    ),
    pytest.param(
        [gp(total=1).gated().created(1).obj(), gp("pod2", 1).created(2).obj()],
        None,
        [
            rf("pod", expected=True),
            delete_pod("pod", expected=True),
            ev("ExcessPodDeleted", "Excess pod deleted"),
            (
                "create",
                _group_workload_body(1, ["pod2"])
                | {
                    "spec": {
                        **_group_workload_body(1, ["pod2"])["spec"],
                        "podSets": [
                            {
                                "name": ROLE,
                                "count": 1,
                                "template": {"metadata": {}, "spec": Pod().obj()["spec"]},
                                "topologyRequest": {"podIndexLabel": "kueue.x-k8s.io/pod-group-pod-index"},
                            }
                        ],
                    }
                },
            ),
            ev("CreatedWorkload", "Created Workload: ns/test-group", "pod"),
        ],
        "",
        id="delete excess pod that is gated",
    ),
    pytest.param(
        [gp().gated().obj(), gp("pod2").gated().obj()],
        gwl().condition("PodsReady", "False", "WaitForStart").obj(),
        [],
        "",
        id="workload is found for the pod group",
    ),
    pytest.param(
        [gp(total=1).gated().obj()],
        Wl("test-group").pod_set("main", 1).obj(),
        [
            ev(
                "WorkloadNameConflict",
                'A Workload named "test-group" already exists but is not a pod group workload; this pod group cannot be admitted',
                warning=True,
                action="Admission",
            )
        ],
        "a workload with the pod group name already exists but was not created by the pod group framework",
        id="pod group does not adopt a workload that is not a pod group workload",
    ),
    pytest.param(
        [gp().gated().obj(), gp("pod2").gated().obj()],
        gwl().admitted(ROLE, 2).obj(),
        [*_started("pod"), *_started("pod2")],
        "",
        id="scheduling gate is removed for all pods in the group if workload is admitted",
    ),
    pytest.param(
        [gp().phase("Succeeded").obj(), gp("pod2").phase("Succeeded").obj()],
        gwl().admitted(ROLE, 2).obj(),
        [
            finished("test-group", "Succeeded", "Pods succeeded: 2/2."),
            ev("FinishedWorkload", "Workload 'ns/test-group' is declared finished"),
            rf("pod"),
            rf("pod2"),
        ],
        "",
        id="workload is finished if all pods in the group has finished",
    ),
    pytest.param(
        [gp().phase("Succeeded").obj(), gp("pod2").phase("Running").obj()],
        gwl().admitted(ROLE, 2).obj(),
        [("update_reclaimable", "test-group", [{"name": ROLE, "count": 1}])],
        "",
        id="workload is not finished if the pod in the group is running; reclaimable pods updated",
    ),
    pytest.param(
        [
            gp().phase("Succeeded").annotation("kueue.x-k8s.io/pod-group-serving", "true").obj(),
            gp("pod2").phase("Running").obj(),
        ],
        gwl().admitted(ROLE, 2).condition("PodsReady", "False", "WaitForStart").obj(),
        [],
        "",
        id="reclaimablePods field is not updated for a serving pod group",
    ),
    pytest.param(
        [
            gp().phase("Failed").annotation("kueue.x-k8s.io/retriable-in-group", "false").obj(),
            gp("pod2").phase("Succeeded").obj(),
        ],
        gwl().admitted(ROLE, 2).obj(),
        [
            (
                "workload_conditions",
                "test-group",
                (cond("WaitingForReplacementPods", "True", "PodsFailed", "Some Failed pods need replacement"),),
            )
        ],
        "",
        id="failed member makes the workload wait for replacement pods",
    ),
    pytest.param(
        [
            gp().phase("Failed").annotation("kueue.x-k8s.io/retriable-in-group", "false").obj(),
            gp("pod2").phase("Succeeded").obj(),
        ],
        gwl()
        .admitted(ROLE, 2)
        .condition("WaitingForReplacementPods", "True", "PodsFailed", "Some Failed pods need replacement")
        .obj(),
        [
            finished("test-group", "Succeeded", "Pods succeeded: 1/2."),
            ev("FinishedWorkload", "Workload 'ns/test-group' is declared finished"),
            rf("pod"),
            rf("pod2"),
        ],
        "",
        id="pod group is considered finished if there is an unretriable pod and no running pods",
    ),
    pytest.param(
        [gp(total=1).phase("Failed").obj(), gp("pod2", 1).gated().obj()],
        gwl(1)
        .admitted(ROLE, 1)
        .condition("WaitingForReplacementPods", "True", "PodsFailed", "Some Failed pods need replacement")
        .obj(),
        [
            rf("pod", expected=True),
            (
                "workload_conditions",
                "test-group",
                (cond("WaitingForReplacementPods", "False", "PodsReady", "No pods need replacement"),),
            ),
        ],
        "",
        id="failed pod is released and the replacement completes the group",
    ),
    pytest.param(
        [gp(total=1).phase("Failed").no_finalizer().obj(), gp("pod2", 1).gated().obj()],
        gwl(1)
        .admitted(ROLE, 1)
        .condition("WaitingForReplacementPods", "False", "PodsReady", "No pods need replacement")
        .obj(),
        _started("pod2"),
        "",
        id="replacement pod should be started for pod group of size 1",
    ),
    pytest.param(
        [gp().obj(), gp("pod2").obj()],
        gwl().admitted(ROLE, 2).deleting().obj(),
        [
            *stop("pod", "WorkloadDeleted", "Workload is deleted"),
            *stop("pod2", "WorkloadDeleted", "Workload is deleted"),
            rf("pod"),
            rf("pod2"),
            ("remove_finalizer", "test-group"),
        ],
        "",
        id="all pods in group should be removed if workload is deleted",
    ),
    pytest.param(
        [gp().obj(), gp("pod2").deleted().obj()],
        gwl()
        .admitted(ROLE, 2)
        .condition("PodsReady", "False", "WaitForStart")
        .condition("Evicted", "True", "Preempted", "Preempted by test")
        .condition("WaitingForReplacementPods", "True", "Preempted", "Preempted by test")
        .obj(),
        [
            *stop("pod", "WorkloadEvictedDueToPreempted", "Preempted by test"),
            ("clear_reservation", "test-group", "Preempted", "Preempted by test", True),
        ],
        "",
        id="all pods in a group should receive the event about preemption, unless already terminating",
    ),
    pytest.param(
        [],
        gwl().admitted(ROLE, 2).obj(),
        [("finalize", "test-group")],
        "",
        id="pod group workload is finalized when all pods are gone",
    ),
    pytest.param(
        [],
        Wl("test-group").pod_set("main", 1).controller("job").obj(),
        [],
        "",
        id="foreign workload sharing the pod group name is not finalized",
    ),
]


@pytest.mark.parametrize(("pods", "workload", "want", "error"), GROUP_CASES)
def test_reconcile_group(
    pods: list[dict[str, Any]], workload: dict[str, Any] | None, want: list[Summary], error: str
) -> None:
    got = pg.reconcile_group(pods, name="test-group", workload=workload, config=CONFIG, store=store(), now=NOW)
    assert summaries(got) == want
    assert got.error == error


def test_waiting_for_previous_excess_pod_deletions_does_nothing() -> None:
    pods = [gp(total=1).gated().created(0).obj(), gp("pod2", 1).gated().created(1).obj()]
    got = pg.reconcile_group(
        pods,
        name="test-group",
        workload=gwl(1).obj(),
        config=CONFIG,
        store=store(),
        now=NOW,
        expectations_satisfied=False,
    )
    assert got.steps == ()
    assert got.error == "waiting to observe previous operations on pods"
    assert not got.retry


def test_excess_pods_after_admission_and_owner_references() -> None:
    pods = [
        gp(total=1).created(0).obj(),
        gp("pod2", 1).gated().created(1).obj(),
        gp("pod3", 1).gated().created(2).obj(),
    ]
    wl = gwl(1, owners=("pod",)).admitted(ROLE, 1).condition("PodsReady", "True", "Started").obj()
    got = pg.reconcile_group(pods, name="test-group", workload=wl, config=CONFIG, store=store(), now=NOW)
    assert summaries(got) == [
        rf("pod2", expected=True),
        delete_pod("pod2", expected=True),
        ev("ExcessPodDeleted", "Excess pod deleted", "pod2"),
        rf("pod3", expected=True),
        delete_pod("pod3", expected=True),
        ev("ExcessPodDeleted", "Excess pod deleted", "pod3"),
    ]


def test_failed_pods_are_finalized_in_order() -> None:
    """Kept: finalizer holders, then the most recently failed; the rest are released."""
    pods = [
        gp("active", 2).obj(),
        gp("finished-with-finalizer-old", 2).failed_at(-3).obj(),
        gp("finished-with-finalizer-new", 2).failed_at(-1).obj(),
        gp("finished-without-finalizer", 2).failed_at(0).no_finalizer().obj(),
    ]
    wl = gwl(2, owners=tuple(p["metadata"]["name"] for p in pods)).admitted(ROLE, 2)
    wl.condition("PodsReady", "True", "Started").condition(
        "WaitingForReplacementPods", "True", "PodsFailed", "Some Failed pods need replacement"
    )
    got = pg.reconcile_group(pods, name="test-group", workload=wl.obj(), config=CONFIG, store=store(), now=NOW)
    removed = [act.pod["metadata"]["name"] for act in got.steps if isinstance(act, ja.RemovePodFinalizer)]
    assert removed == ["finished-with-finalizer-old"]


def test_start_with_an_unknown_role_fails_to_start() -> None:
    pods = [gp().gated().annotation("kueue.x-k8s.io/role-hash", "other").obj()]
    message = "invalid podset infos: podSetInfo with the name 'other' is not found"
    with pytest.raises(StartConflict, match=message):
        ps.start_pods(pods, gwl().admitted(ROLE, 2).obj(), is_group=True, opts=OPTS, lookups=FLAVORS)


def test_admission_check_pod_set_update_conflict() -> None:
    wl = Wl(SINGLE_WL).pod_set("main", 1).controller().admitted().obj()
    wl["status"]["admissionChecks"] = [
        {
            "name": "prov",
            "state": "Ready",
            "podSetUpdates": [{"name": "main", "labels": {"kueue.x-k8s.io/podset": "x"}}],
        }
    ]
    with pytest.raises(StartConflict) as info:
        ps.start_pods([Pod().gated().obj()], wl, is_group=False, opts=OPTS, lookups=FLAVORS)
    assert str(info.value) == (
        'in admission check "prov": invalid admission check PodSetUpdate: conflict for labels: '
        "conflict for key=kubernetes.io/podset, value1=main, value2=x".replace(
            "kubernetes.io/podset", "kueue.x-k8s.io/podset"
        )
    )


def test_flavor_tolerations_are_added_once_and_cq_label_needs_a_dns_label() -> None:
    tol = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    lookups = pg.Lookups(resource_flavors={"unit-test-flavor": {"tolerations": [tol, dict(tol, operator="")]}})
    pod = Pod().gated().obj()
    pod["spec"]["schedulingGates"].append({"name": "kueue.x-k8s.io/topology"})
    wl = Wl(SINGLE_WL).pod_set("main", 1).controller().admitted(cq="Not_A_Label").obj()
    patch = ps.start_pods([pod], wl, is_group=False, opts=OPTS, lookups=lookups)[0]
    assert isinstance(patch, ja.PatchPod)
    assert patch.patch["spec"] == {"tolerations": [tol], "schedulingGates": []}
    assert "kueue.x-k8s.io/cluster-queue-name" not in patch.patch["metadata"]["labels"]


def _with_check(wl: dict[str, Any], name: str) -> dict[str, Any]:
    wl["status"]["admissionChecks"] = [{"name": name, "state": "Ready", "message": ""}]
    return wl


def test_an_admitted_group_with_a_multikueue_check_stays_gated_here() -> None:
    """`ShouldSkipLocalExecution`: the pods run on the worker MultiKueue chose; starting them here
    as well would run the group twice. Any other check lets the group start."""
    pods = [gp().gated().obj(), gp("pod2").gated().obj()]
    checks = store(
        ("admissionchecks", {"metadata": {"name": "mk"}, "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}}),
        ("admissionchecks", {"metadata": {"name": "prov"}, "spec": {"controllerName": "example.com/other"}}),
    )
    remote = _with_check(gwl().admitted(ROLE, 2).obj(), "mk")
    got = pg.reconcile_group(pods, name="test-group", workload=remote, config=CONFIG, store=checks, now=NOW)
    assert not [s for s in summaries(got) if s[0] == "patch_pod"]
    local = _with_check(gwl().admitted(ROLE, 2).obj(), "prov")
    got = pg.reconcile_group(pods, name="test-group", workload=local, config=CONFIG, store=checks, now=NOW)
    assert summaries(got) == [*_started("pod"), *_started("pod2")]
