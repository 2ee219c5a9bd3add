"""The LeaderWorkerSet reconciler (upstream's `leaderworkerset_reconciler_test.go` cases, by
behaviour): one reconcile of a LeaderWorkerSet against a fake API server, asserting the Workloads
and pods the API holds afterwards and the events recorded; then its pods through the pod-group
reconcile (queueing, serving)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.api.leaderworkerset import workload_name_for
from webhook.config import Configuration
from webhook.worker import events
from webhook.worker.integrations.leaderworkerset import LeaderWorkerSetReconciler
from webhook.worker.integrations.pod import adapter as pg
from webhook.worker.jobframework import actions as ja
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

NOW = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
WL_API = "kueue.x-k8s.io/v1beta2"
LWS_API = "leaderworkerset.x-k8s.io/v1"
Q = "kueue.x-k8s.io/queue-name"
WPC = "kueue.x-k8s.io/priority-class"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
SERVING = "kueue.x-k8s.io/pod-group-serving"
GROUP = "kueue.x-k8s.io/pod-group-name"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
ROLE = "kueue.x-k8s.io/role-hash"
MANAGED = "kueue.x-k8s.io/managed"
GATE = "kueue.x-k8s.io/admission"
FINALIZER = "kueue.x-k8s.io/managed"
NAME = "leaderworkerset.sigs.k8s.io/name"
INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LEADER_NAME = "leaderworkerset.sigs.k8s.io/leader-name"
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
GVK = "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet"
LABEL_FORM = {"WorkloadIdentifierAnnotations": False}

Event = tuple[str, str, str, str]


def template(
    *, annotations: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "spec": {"containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": "1"}}}]}
    }
    if annotations or labels:
        out["metadata"] = {}
        if annotations:
            out["metadata"]["annotations"] = dict(annotations)
        if labels:
            out["metadata"]["labels"] = dict(labels)
    return out


def lws(
    *,
    replicas: int | None = None,
    size: int | None = None,
    leader: dict[str, Any] | None = None,
    worker: dict[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    status: Mapping[str, Any] | None = None,
    max_surge: int | str | None = None,
) -> dict[str, Any]:
    lwt: dict[str, Any] = {"workerTemplate": worker or template()}
    if leader is not None:
        lwt["leaderTemplate"] = leader
    if size is not None:
        lwt["size"] = size
    spec: dict[str, Any] = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    if max_surge is not None:
        spec["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxSurge": max_surge}}
    meta: dict[str, Any] = {"name": "test-lws", "namespace": "ns", "uid": "test-lws", "labels": dict(labels or {})}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": spec,
        "status": dict(status or {}),
    }


def wl_name(index: int | str, obj: dict[str, Any] | None = None) -> str:
    return workload_name_for(obj or lws(), str(index), short=False)


def workload(
    index: int,
    *,
    queue: str = "",
    owners: Sequence[Mapping[str, Any]] = (),
    reserved: bool = False,
    finalizer: bool = True,
    priority_class: str | None = None,
    priority: int = 0,
    gated_by: str | None = None,
) -> dict[str, Any]:
    annotations = {"kueue.x-k8s.io/is-group-workload": "true"}
    if gated_by is not None:
        annotations["kueue.x-k8s.io/admission-gated-by"] = gated_by
    spec: dict[str, Any] = {"podSets": [{"name": "main", "count": 1, "template": template()}], "priority": priority}
    if queue:
        spec["queueName"] = queue
    if priority_class is not None:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": priority_class}
    status: dict[str, Any] = {}
    if reserved:
        status = {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]},
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
        }
    return {
        "apiVersion": WL_API,
        "kind": "Workload",
        "metadata": {
            "name": wl_name(index),
            "namespace": "ns",
            "uid": f"wl-{index}",
            "finalizers": ["kueue.x-k8s.io/resource-in-use"] if finalizer else [],
            "annotations": annotations,
            "ownerReferences": [
                {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": "test-lws", "uid": "test-lws"},
                *owners,
            ],
        },
        "spec": spec,
        "status": status,
    }


def pod(
    name: str = "pod1",
    *,
    index: str | None = "0",
    gated: bool = True,
    finalizer: bool = False,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    revision: str = "r1",
    phase: str = "Pending",
    deleting: bool = False,
) -> dict[str, Any]:
    all_labels = {NAME: "test-lws", "controller-revision-hash": revision, **(labels or {})}
    if index is not None:
        all_labels[INDEX] = index
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"{name}-uid",
        "labels": all_labels,
        "annotations": {PARENT: FRAMEWORK, SERVING: "true", **(annotations or {})},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "test-sts", "uid": "sts", "controller": True}
        ],
    }
    if finalizer:
        meta["finalizers"] = [FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-05T09:59:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "img"}], "schedulingGates": [{"name": GATE}] if gated else []},
        "status": {"phase": phase},
    }


def sts(*, current: str = "r1", update: str = "r1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "test-sts", "namespace": "ns", "labels": {NAME: "test-lws"}},
        "spec": {"template": {"metadata": {"annotations": {PARENT: FRAMEWORK}}}},
        "status": {"currentRevision": current, "updateRevision": update},
    }


class _Recorder(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="test", stop=threading.Event())
        self.seen: list[Event] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        meta = obj.get("metadata") or {}
        self.seen.append((f"{meta.get('namespace')}/{meta.get('name')}", etype, reason, note))


@dataclass
class Outcome:
    workloads: dict[str, dict[str, Any]]
    pods: dict[str, dict[str, Any]]
    events: list[Event]
    error: str | None = None
    kube: FakeKube = field(default_factory=FakeKube)


def _path(api: str, kind: str, name: str) -> str:
    return k.object_path(api, kind, "ns", name)


def run(
    obj: dict[str, Any] | None,
    *,
    workloads: Sequence[dict[str, Any]] = (),
    pods: Sequence[dict[str, Any]] = (),
    statefulsets: Sequence[dict[str, Any]] = (),
    gates: Mapping[str, bool] | None = None,
    classes: Mapping[str, int] | None = None,
    label_keys_to_copy: Sequence[str] = (),
) -> Outcome:
    kube, store, recorder = FakeKube(), Store(), _Recorder()
    config = Configuration(feature_gates=dict(gates or {}))
    if label_keys_to_copy:
        config = Configuration(
            feature_gates=dict(gates or {}),
            integrations=type(config.integrations)(label_keys_to_copy=tuple(label_keys_to_copy)),
        )
    reconciler = LeaderWorkerSetReconciler(kube, store, config, recorder, stop=threading.Event(), clock=lambda: NOW)
    for name, value in (classes or {}).items():
        store.put("workloadpriorityclasses", {"metadata": {"name": name, "resourceVersion": "1"}, "value": value})
    for wl in workloads:
        path = _path(WL_API, "workloads", wl["metadata"]["name"])
        kube.put(path, wl)
        store.put("workloads", copy.deepcopy(kube.objects[path]))
    for p in pods:
        path = _path("v1", "pods", p["metadata"]["name"])
        kube.put(path, p)
        reconciler.cache.put("pods", copy.deepcopy(kube.objects[path]))
    for s in statefulsets:
        reconciler.cache.put("statefulsets", {**s, "metadata": {**s["metadata"], "resourceVersion": "1"}})
    if obj is not None:
        reconciler.cache.put("leaderworkersets", {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}})
    error = None
    try:
        reconciler.reconcile("ns/test-lws")
    except Retry as exc:
        error = str(exc)
    return Outcome(
        workloads={o["metadata"]["name"]: o for p, o in kube.objects.items() if "/workloads/" in p},
        pods={o["metadata"]["name"]: o for p, o in kube.objects.items() if "/pods/" in p},
        events=recorder.seen,
        error=error,
        kube=kube,
    )


def created(*indexes: int, obj: dict[str, Any] | None = None) -> list[Event]:
    return [("ns/test-lws", "Normal", "CreatedWorkload", f"Created Workload: ns/{wl_name(i, obj)}") for i in indexes]


def pod_sets(wl: Mapping[str, Any]) -> list[tuple[str, int]]:
    return [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]]


# --- the Workloads ------------------------------------------------------------------------------


def test_a_new_set_gets_one_prebuilt_workload() -> None:
    out = run(lws())
    assert out.error is None and out.events == created(0)
    [wl] = out.workloads.values()
    meta = wl["metadata"]
    assert meta["name"] == wl_name(0)
    assert meta["labels"] == {"kueue.x-k8s.io/job-uid": "test-lws"}
    assert meta["annotations"] == {
        "kueue.x-k8s.io/is-group-workload": "true",
        "kueue.x-k8s.io/job-owner-gvk": GVK,
        "kueue.x-k8s.io/job-owner-name": "test-lws",
        "kueue.x-k8s.io/component-workload-index": "0",
    }
    assert meta["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    # An owner, not the controller (`SetOwnerReference`).
    assert meta["ownerReferences"] == [
        {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": "test-lws", "uid": "test-lws"}
    ]
    assert wl["spec"]["priority"] == 0 and "queueName" not in wl["spec"]
    [main] = wl["spec"]["podSets"]
    assert (main["name"], main["count"]) == ("main", 1)
    assert main["template"] == template()
    # Topology-aware scheduling's gate is on by default: the pods are indexed by their worker index.
    assert main["topologyRequest"] == {"podIndexLabel": "leaderworkerset.sigs.k8s.io/worker-index"}


def test_workload_name_is_upstreams() -> None:
    # GetWorkloadName(uid, name, index): `leaderworkerset-<name>-<index>-` + SHA-1 of
    # ("LeaderWorkerSet", "leaderworkerset.x-k8s.io", "<name>-<index>", uid)[:5]
    import hashlib

    digest = hashlib.sha1(b"LeaderWorkerSet\nleaderworkerset.x-k8s.io\ntest-lws-0\ntest-lws").hexdigest()[:5]
    assert wl_name(0) == f"leaderworkerset-test-lws-0-{digest}"


def test_with_a_leader_template_a_leader_and_size_minus_one_workers() -> None:
    out = run(lws(size=3, leader=template(), replicas=2), gates={"TopologyAwareScheduling": True})
    assert out.events == created(0, 1)
    assert sorted(out.workloads) == sorted([wl_name(0), wl_name(1)])
    for index in (0, 1):
        wl = out.workloads[wl_name(index)]
        assert pod_sets(wl) == [("leader", 1), ("worker", 2)]
        assert wl["metadata"]["annotations"]["kueue.x-k8s.io/component-workload-index"] == str(index)
        leader, worker = wl["spec"]["podSets"]
        assert "topologyRequest" not in leader  # nothing to ask for, and the leader has no index
        assert worker["topologyRequest"] == {"podIndexLabel": "leaderworkerset.sigs.k8s.io/worker-index"}


def test_pod_set_templates_keep_their_metadata_but_the_lws_per_pod_keys() -> None:
    meta = {
        "annotations": {"custom-leader-annotation": "leader-value", "leaderworkerset.sigs.k8s.io/template-hash": "1"},
        "labels": {NAME: "test-lws", INDEX: "1"},
    }
    out = run(lws(size=3, leader=template(**meta), worker=template(**meta)))
    leader, worker = out.workloads[wl_name(0)]["spec"]["podSets"]
    for ps in (leader, worker):
        assert ps["template"]["metadata"] == {
            "annotations": {"custom-leader-annotation": "leader-value"},
            "labels": {NAME: "test-lws"},
        }


def test_topology_annotations_become_topology_requests() -> None:
    required = {"kueue.x-k8s.io/podset-required-topology": "cloud.com/block"}
    out = run(lws(size=3, leader=template(annotations=required), worker=template(annotations=required)))
    leader, worker = out.workloads[wl_name(0)]["spec"]["podSets"]
    assert leader["topologyRequest"] == {"required": "cloud.com/block"}
    assert worker["topologyRequest"] == {
        "required": "cloud.com/block",
        "podIndexLabel": "leaderworkerset.sigs.k8s.io/worker-index",
    }
    assert leader["template"]["metadata"]["annotations"] == required


def test_env_duplicates_are_dropped_from_the_pod_sets() -> None:
    worker = template()
    worker["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "A", "value": "3"},
    ]
    out = run(lws(worker=worker))
    [main] = out.workloads[wl_name(0)]["spec"]["podSets"]
    assert main["template"]["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "3"},
        {"name": "B", "value": "2"},
    ]


def test_queue_max_execution_time_and_copied_labels() -> None:
    labels = {Q: "queue", "kueue.x-k8s.io/max-exec-time-seconds": "60", "team": "a", "other": "b"}
    out = run(lws(labels=labels), label_keys_to_copy=["team"])
    wl = out.workloads[wl_name(0)]
    assert wl["spec"]["queueName"] == "queue"
    assert wl["spec"]["maximumExecutionTimeSeconds"] == 60
    assert wl["metadata"]["labels"] == {"team": "a", "kueue.x-k8s.io/job-uid": "test-lws"}


def test_workload_priority_class() -> None:
    out = run(lws(labels={WPC: "high-priority"}), classes={"high-priority": 5000})
    spec = out.workloads[wl_name(0)]["spec"]
    assert spec["priority"] == 5000
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high-priority",
    }


def test_a_missing_priority_class_retries_without_a_workload() -> None:
    out = run(lws(labels={WPC: "missing"}), pods=[pod()])
    assert out.workloads == {} and out.events == []
    assert out.error == 'workloadpriorityclasses.kueue.x-k8s.io "missing" not found'
    assert MANAGED not in out.pods["pod1"]["metadata"]["labels"]  # the pods wait for their Workload


def test_admission_gated_by_reaches_a_new_workload() -> None:
    out = run(lws(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/a,example.com/b"}))
    annotations = out.workloads[wl_name(0)]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/admission-gated-by"] == "example.com/a,example.com/b"


def test_admission_gated_by_is_not_propagated_with_its_gate_off() -> None:
    out = run(
        lws(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/a"}), gates={"AdmissionGatedBy": False}
    )
    assert "kueue.x-k8s.io/admission-gated-by" not in out.workloads[wl_name(0)]["metadata"]["annotations"]


@pytest.mark.parametrize("reserved", [False, True], ids=["pending", "quota reserved"])
def test_a_queue_change_reaches_the_workload(reserved: bool) -> None:
    out = run(lws(labels={Q: "queue"}), workloads=[workload(0, queue="old-queue", reserved=reserved)])
    assert out.workloads[wl_name(0)]["spec"]["queueName"] == "queue"
    assert out.events == []


def test_queue_and_admission_gated_by_change_together() -> None:
    obj = lws(labels={Q: "queue"}, annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/controller1"})
    out = run(obj, workloads=[workload(0, queue="old-queue", reserved=True)])
    wl = out.workloads[wl_name(0)]
    assert wl["spec"]["queueName"] == "queue"
    assert wl["metadata"]["annotations"]["kueue.x-k8s.io/admission-gated-by"] == "example.com/controller1"
    assert out.events == [
        ("ns/test-lws", "Normal", "UpdatedWorkload", 'Updated workload AdmissionGatedBy to "example.com/controller1"')
    ]


def test_a_removed_admission_gate_leaves_the_workload() -> None:
    out = run(lws(), workloads=[workload(0, gated_by="example.com/a")])
    assert "kueue.x-k8s.io/admission-gated-by" not in out.workloads[wl_name(0)]["metadata"]["annotations"]
    assert out.events == [("ns/test-lws", "Normal", "UpdatedWorkload", 'Updated workload AdmissionGatedBy to ""')]


def test_a_new_priority_class_reaches_the_workload() -> None:
    out = run(
        lws(labels={WPC: "high"}),
        workloads=[workload(0, priority_class="low", priority=10)],
        classes={"low": 10, "high": 100},
    )
    spec = out.workloads[wl_name(0)]["spec"]
    assert spec["priority"] == 100 and spec["priorityClassRef"]["name"] == "high"
    assert out.events == [
        ("ns/test-lws", "Normal", "UpdatedWorkload", f"Updated workload priority class: ns/{wl_name(0)}")
    ]


def test_a_workload_that_reserved_quota_without_a_class_gets_none() -> None:
    out = run(lws(labels={WPC: "high"}), workloads=[workload(0, reserved=True)], classes={"high": 100})
    assert "priorityClassRef" not in out.workloads[wl_name(0)]["spec"] and out.events == []


def test_scale_up_creates_the_new_groups_workloads_only() -> None:
    out = run(lws(replicas=3), workloads=[workload(0)])
    assert sorted(out.workloads) == sorted(wl_name(i) for i in range(3))
    assert out.events == created(1, 2)


def test_scale_down_deletes_the_removed_groups_workloads_without_an_event() -> None:
    out = run(lws(replicas=1), workloads=[workload(0), workload(1), workload(2)])
    assert list(out.workloads) == [wl_name(0)]
    assert out.events == []


def test_scale_to_zero_deletes_every_workload() -> None:
    out = run(lws(replicas=0), workloads=[workload(0), workload(1)])
    assert out.workloads == {}


def test_scale_down_with_a_surge_but_no_rolling_update_deletes_the_excess() -> None:
    obj = lws(replicas=1, max_surge=1, status={"replicas": 2, "updatedReplicas": 1})
    out = run(obj, workloads=[workload(0), workload(1)])
    assert list(out.workloads) == [wl_name(0)]


@pytest.mark.parametrize("max_surge", [1, "1"])
def test_a_rolling_update_with_surge_keeps_the_surge_workloads(max_surge: int | str) -> None:
    obj = lws(replicas=2, max_surge=max_surge, status={"replicas": 3, "updatedReplicas": 1})
    out = run(obj, workloads=[workload(0), workload(1), workload(2)])
    assert sorted(out.workloads) == sorted(wl_name(i) for i in range(3))
    assert out.events == []


def test_a_rolling_update_with_surge_creates_the_surge_workload() -> None:
    obj = lws(replicas=2, max_surge=1, status={"replicas": 3, "updatedReplicas": 0})
    out = run(obj, workloads=[workload(0), workload(1)])
    assert out.events == created(2)


def test_a_percentage_surge_counts_as_none() -> None:
    """`IntOrString.IntValue()` of "50%" is 0, so the surge groups are not kept."""
    obj = lws(replicas=2, max_surge="50%", status={"replicas": 3, "updatedReplicas": 1})
    out = run(obj, workloads=[workload(0), workload(1), workload(2)])
    assert sorted(out.workloads) == sorted(wl_name(i) for i in range(2))


def test_a_redundant_workload_is_deleted() -> None:
    pod_owner = {"apiVersion": "v1", "kind": "Pod", "name": "test-pod2", "uid": "test-pod2-uid"}
    out = run(lws(), workloads=[workload(0), workload(1, owners=[pod_owner], finalizer=False)])
    assert list(out.workloads) == [wl_name(0)]


def test_a_workload_of_another_owner_is_not_listed() -> None:
    """The Workloads are those the LeaderWorkerSet owns by UID; a namesake of an old set is not."""
    stale = workload(0)
    stale["metadata"]["ownerReferences"][0]["uid"] = "old-uid"
    out = run(lws(), workloads=[stale])
    assert out.error is not None and "already exists" in out.error


def test_a_multikueue_copy_names_workloads_after_the_original_and_creates_none() -> None:
    obj = lws(
        labels={"kueue.x-k8s.io/multikueue-origin": "manager"},
        annotations={"kueue.x-k8s.io/multikueue-origin-uid": "origin-uid"},
    )
    assert workload_name_for(obj, "0", short=False) == workload_name_for(
        {**obj, "metadata": {**obj["metadata"], "uid": "origin-uid", "labels": {}}}, "0", short=False
    )
    out = run(obj)
    assert out.workloads == {} and out.events == []


# --- the pods -----------------------------------------------------------------------------------


def test_a_pod_joins_its_groups_pod_group() -> None:
    out = run(lws(labels={Q: "queue"}), pods=[pod()], statefulsets=[sts()], gates=LABEL_FORM)
    meta = out.pods["pod1"]["metadata"]
    assert meta["labels"] == {
        NAME: "test-lws",
        INDEX: "0",
        "controller-revision-hash": "r1",
        MANAGED: "true",
        Q: "queue",
        GROUP: wl_name(0),
        PREBUILT: wl_name(0),
    }
    assert meta["annotations"] == {PARENT: FRAMEWORK, SERVING: "true", TOTAL: "1", ROLE: "main"}
    assert out.pods["pod1"]["spec"]["schedulingGates"] == [{"name": GATE}]  # queued until admitted


def test_workload_identifier_annotations_name_the_group_in_annotations() -> None:
    out = run(lws(labels={Q: "queue"}), pods=[pod()], statefulsets=[sts()])
    meta = out.pods["pod1"]["metadata"]
    assert GROUP not in meta["labels"] and PREBUILT not in meta["labels"]
    assert meta["annotations"][GROUP] == meta["annotations"][PREBUILT] == wl_name(0)
    assert meta["labels"][Q] == "queue"


@pytest.mark.parametrize(
    ("annotations", "role"),
    [({}, "leader"), ({LEADER_NAME: "test-lws-0"}, "worker")],
    ids=["leader pod", "worker pod"],
)
def test_with_a_leader_template_pods_take_the_leader_or_worker_role(annotations: dict[str, str], role: str) -> None:
    obj = lws(size=3, leader=template(), labels={Q: "queue"})
    out = run(obj, pods=[pod(annotations=annotations)], statefulsets=[sts()], gates=LABEL_FORM)
    meta = out.pods["pod1"]["metadata"]
    assert meta["annotations"][ROLE] == role and meta["annotations"][TOTAL] == "3"


def test_without_a_leader_template_the_leader_pod_is_main_too() -> None:
    pods = [pod(), pod("pod2", annotations={LEADER_NAME: "pod1"})]
    out = run(lws(size=2, labels={Q: "q"}), pods=pods, statefulsets=[sts()])
    assert {p["metadata"]["annotations"][ROLE] for p in out.pods.values()} == {"main"}


def test_each_pod_joins_the_group_of_its_index() -> None:
    out = run(
        lws(replicas=2, labels={Q: "q"}),
        pods=[pod("a", index="0"), pod("b", index="1")],
        statefulsets=[sts()],
        gates=LABEL_FORM,
    )
    assert out.pods["a"]["metadata"]["labels"][GROUP] == wl_name(0)
    assert out.pods["b"]["metadata"]["labels"][GROUP] == wl_name(1)


def test_a_pod_without_its_group_index_waits() -> None:
    before = pod(index=None, finalizer=True)
    out = run(lws(labels={Q: "q"}), pods=[before], statefulsets=[sts()])
    assert out.pods["pod1"]["metadata"]["labels"] == before["metadata"]["labels"]


def test_a_managed_pod_is_left_as_it_is() -> None:
    before = pod(labels={MANAGED: "true"}, gated=False)
    out = run(lws(labels={Q: "q"}), pods=[before], statefulsets=[sts()])
    assert out.pods["pod1"]["metadata"]["labels"] == before["metadata"]["labels"]


def test_a_gated_adopted_pod_gets_the_queue_name_backfilled() -> None:
    adopted = pod(labels={MANAGED: "true", Q: "old-queue"}, finalizer=True)
    out = run(lws(labels={Q: "queue"}), pods=[adopted], statefulsets=[sts()])
    assert out.pods["pod1"]["metadata"]["labels"][Q] == "queue"


def test_an_ungated_adopted_pod_keeps_its_queue_name() -> None:
    """The pod webhook refuses a queue change on a running pod; it does not need it."""
    adopted = pod(labels={MANAGED: "true"}, gated=False, finalizer=True)
    out = run(lws(labels={Q: "queue"}), pods=[adopted], statefulsets=[sts()])
    assert Q not in out.pods["pod1"]["metadata"]["labels"]


def test_an_ungated_pod_joins_without_the_queue_name() -> None:
    out = run(lws(labels={Q: "queue"}), pods=[pod(gated=False, labels={Q: "queue"})], statefulsets=[sts()])
    labels = out.pods["pod1"]["metadata"]["labels"]
    assert labels[MANAGED] == "true" and labels[Q] == "queue"


def test_when_the_set_is_gone_every_pod_is_released() -> None:
    out = run(None, pods=[pod(finalizer=True)], statefulsets=[sts()])
    released = out.pods["pod1"]
    assert released["spec"]["schedulingGates"] == []
    assert not released["metadata"].get("finalizers")
    assert MANAGED not in released["metadata"]["labels"]


def test_when_the_statefulset_is_gone_its_pods_are_released() -> None:
    out = run(lws(), pods=[pod(finalizer=True)], workloads=[workload(0)])
    assert out.pods["pod1"]["spec"]["schedulingGates"] == []
    assert not out.pods["pod1"]["metadata"].get("finalizers")


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_loses_its_finalizer_but_not_its_workload(phase: str) -> None:
    """Serving: a pod that ends never finishes the group's Workload here; the pod-group reconcile
    replaces it."""
    out = run(
        lws(), pods=[pod(phase=phase, finalizer=True, gated=False)], statefulsets=[sts()], workloads=[workload(0)]
    )
    assert not out.pods["pod1"]["metadata"].get("finalizers")
    assert "Finished" not in str(out.workloads[wl_name(0)]["status"])


def test_a_deleted_pod_loses_its_finalizer() -> None:
    out = run(lws(), pods=[pod(deleting=True, finalizer=True)], statefulsets=[sts()], workloads=[workload(0)])
    assert not out.pods["pod1"]["metadata"].get("finalizers")


def test_a_rolling_update_ungates_and_releases_the_old_revisions_pods() -> None:
    rolling = sts(current="r1", update="r2")
    old = pod("old", revision="r1", finalizer=True, labels={MANAGED: "true"})
    new = pod("new", revision="r2", labels={Q: "q"})
    out = run(lws(labels={Q: "q"}), pods=[old, new], statefulsets=[rolling], workloads=[workload(0, queue="q")])
    assert out.pods["old"]["spec"]["schedulingGates"] == []
    assert not out.pods["old"]["metadata"].get("finalizers")
    assert out.pods["new"]["spec"]["schedulingGates"] == [{"name": GATE}]
    assert out.pods["new"]["metadata"]["labels"][MANAGED] == "true"


def test_the_topology_gate_goes_only_when_the_admission_gate_is_absent() -> None:
    """`Ungate(admission) || Ungate(topology)`: one gate per pass."""
    both = pod(finalizer=True)
    both["spec"]["schedulingGates"].append({"name": "kueue.x-k8s.io/topology"})
    assert run(None, pods=[both]).pods["pod1"]["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    topology_only = pod(gated=False)
    topology_only["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}, {"name": "other"}]
    assert run(None, pods=[topology_only]).pods["pod1"]["spec"]["schedulingGates"] == [{"name": "other"}]


# --- the events that queue a LeaderWorkerSet -----------------------------------------------------


class _Queue:
    def __init__(self) -> None:
        self.added: list[tuple[str, float]] = []

    def add(self, key: str) -> None:
        self.added.append((key, 0.0))

    def add_after(self, key: str, delay: float) -> None:
        self.added.append((key, delay))


def _reconciler(config: Configuration | None = None) -> tuple[LeaderWorkerSetReconciler, _Queue]:
    reconciler = LeaderWorkerSetReconciler(
        FakeKube(), Store(), config or Configuration(), _Recorder(), stop=threading.Event()
    )
    queue = _Queue()
    reconciler.queue = queue  # type: ignore[assignment]
    return reconciler, queue


def test_only_a_managed_set_queues_itself() -> None:
    reconciler, queue = _reconciler()
    reconciler.enqueue("leaderworkersets", "ADDED", lws())
    assert queue.added == []
    reconciler.enqueue("leaderworkersets", "MODIFIED", lws(labels={Q: "q"}))
    assert queue.added == [("ns/test-lws", 0.0)]


def test_manage_jobs_without_queue_name_manages_an_unqueued_set_in_a_selected_namespace() -> None:
    reconciler, queue = _reconciler(
        Configuration(manage_jobs_without_queue_name=True, managed_jobs_namespace_selector=None)
    )
    reconciler.store.put("namespaces", {"metadata": {"name": "ns", "labels": {}, "resourceVersion": "1"}})
    reconciler.enqueue("leaderworkersets", "ADDED", lws())
    assert queue.added == [("ns/test-lws", 0.0)]


def test_its_pods_queue_it_batched() -> None:
    reconciler, queue = _reconciler()
    reconciler.enqueue("pods", "ADDED", pod())
    foreign = pod()
    foreign["metadata"]["annotations"][PARENT] = "statefulset"
    reconciler.enqueue("pods", "MODIFIED", foreign)
    assert queue.added == [("ns/test-lws", 1.0)]


def test_its_statefulsets_queue_it_on_a_revision_change_only() -> None:
    reconciler, queue = _reconciler()
    reconciler.enqueue("statefulsets", "ADDED", sts(current="r1", update="r2"))
    no_revision = sts(current="", update="")
    reconciler.enqueue("statefulsets", "MODIFIED", no_revision)
    assert queue.added == []
    reconciler.enqueue("statefulsets", "MODIFIED", sts(current="r1", update="r2"))
    assert queue.added == [("ns/test-lws", 1.0)]


def test_its_workloads_queue_it_even_when_deleted() -> None:
    reconciler, queue = _reconciler()
    reconciler.on_event("workloads", "DELETED", workload(0))
    reconciler.on_event("jobs", "MODIFIED", workload(1))
    assert queue.added == [("ns/test-lws", 1.0)]


# --- through the pod-group reconcile: queueing and serving ---------------------------------------


def _joined(obj: dict[str, Any], pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods as this reconciler leaves them (labelled into their group)."""
    out = run(obj, pods=pods, statefulsets=[sts()], gates=LABEL_FORM)
    return [out.pods[p["metadata"]["name"]] for p in pods]


def _group_workload(obj: dict[str, Any]) -> dict[str, Any]:
    return run(obj, gates=LABEL_FORM).workloads[wl_name(0)]


def _admit(wl: dict[str, Any]) -> dict[str, Any]:
    wl = copy.deepcopy(wl)
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": ps["name"], "flavors": {"cpu": "default"}, "count": ps["count"]}
                for ps in wl["spec"]["podSets"]
            ],
        },
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
            {"type": "PodsReady", "status": "False", "reason": "WaitForStart"},
        ],
    }
    return wl


def _group_plan(pods: Sequence[dict[str, Any]], wl: dict[str, Any]) -> list[ja.JobAction]:
    """One pod-group reconcile, the Workload already owned by every pod (the pass before adds them)."""
    wl = copy.deepcopy(wl)
    wl["metadata"]["ownerReferences"] += [
        {"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]} for p in pods
    ]
    store = Store()
    store.put("resourceflavors", {"metadata": {"name": "default", "resourceVersion": "1"}, "spec": {}})
    config = Configuration(feature_gates=LABEL_FORM)
    return list(pg.reconcile_group(pods, name=wl_name(0), workload=wl, config=config, store=store, now=NOW).steps)


def _ungated(steps: Sequence[ja.JobAction]) -> set[str]:
    return {
        s.pod["metadata"]["name"]
        for s in steps
        if isinstance(s, ja.PatchPod) and "schedulingGates" in (s.patch.get("spec") or {})
    }


def test_the_group_stays_gated_until_its_workload_is_admitted_then_starts_whole() -> None:
    obj = lws(size=3, leader=template(), labels={Q: "q"})
    pods = _joined(
        obj,
        [
            pod("lws-0"),
            pod("lws-0-1", annotations={LEADER_NAME: "lws-0"}),
            pod("lws-0-2", annotations={LEADER_NAME: "lws-0"}),
        ],
    )
    for p in pods:  # the pod webhook's gate and role hash were there from creation
        p["spec"]["containers"] = [{"name": "c", "image": "img", "resources": {"requests": {"cpu": "1"}}}]
    pending = _group_workload(obj)
    assert _ungated(_group_plan(pods, pending)) == set()
    assert _ungated(_group_plan(pods, _admit(pending))) == {"lws-0", "lws-0-1", "lws-0-2"}


def test_a_group_whose_workload_the_set_has_not_built_yet_waits_for_it() -> None:
    """A surge group's pods can join before the LeaderWorkerSet's reconcile sees its grown status:
    the group must not build a Workload of its own under the prebuilt name (the set's create would
    then fail on it for ever, and the set's other pods never join their groups)."""
    obj = lws(size=2, labels={Q: "q"})
    pods = _joined(obj, [pod("lws-0"), pod("lws-0-1", annotations={LEADER_NAME: "lws-0"})])
    store = Store()
    config = Configuration(feature_gates=LABEL_FORM)
    plan = pg.reconcile_group(pods, name=wl_name(0), workload=None, config=config, store=store, now=NOW)
    assert not [s for s in plan.steps if isinstance(s, ja.CreateWorkload)]
    assert plan.error == "prebuilt workload not found"
    assert _ungated(plan.steps) == set()


def test_a_served_group_whose_pods_completed_is_not_finished() -> None:
    obj = lws(size=2, labels={Q: "q"})
    pods = _joined(obj, [pod("lws-0"), pod("lws-0-1", annotations={LEADER_NAME: "lws-0"})])
    for p in pods:
        p["spec"]["schedulingGates"] = []
        p["status"] = {"phase": "Succeeded"}
    steps = _group_plan(pods, _admit(_group_workload(obj)))
    assert not any(isinstance(s, ja.FinishWorkload) for s in steps)
