"""Upstream's plain-Pod / pod-group reconciler scenarios, run end to end against a fake API.

Ported from upstream (commit ff69552e79) `pkg/controller/jobs/pod/pod_controller_test.go`,
`TestReconciler` and the other non-TAS tests of that file: every case starts from the same pods,
Workloads and cluster objects, runs one reconcile of the pod's (or group's) key through
`PodReconciler` (the generic job reconcile + executor), then compares what a user would see: the pods, the
Workloads and the events. Comparisons follow upstream's options: resourceVersion,
deletionTimestamp of pods and condition lastTransitionTime are ignored, empty collections equal
absent ones, conditions are compared by type. Where upstream's fake client cannot clear
`status.admission` (it ignores the field for the merge-patch variant), the expected Workload has
its admission dropped whenever its QuotaReserved condition is False, which is what a real API
server shows.

The fake API models what upstream's fake client does and these scenarios rely on: DELETE of an
object that still has finalizers only sets `deletionTimestamp`; removing the last finalizer of such
an object deletes it; the pod status is server-side applied by condition type.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.config import Configuration, Integrations, Metrics, MetricsCustomLabel
from webhook.worker import events
from webhook.worker.integrations.pod import adapter as pg
from webhook.worker.integrations.pod import reconciler as pod
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

NOW = datetime.now(UTC).replace(microsecond=0)
ROLE = "dc85db45"  # role hash of the base pod (upstream's `podUID`)
GATE = "kueue.x-k8s.io/admission"
FIN = "kueue.x-k8s.io/managed"
WL_FIN = "kueue.x-k8s.io/resource-in-use"
GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
PROVREQ = "provreq.kueue.x-k8s.io/test-annotation"
POD_PATH = k.object_path("v1", "pods", "ns")
WL_PATH = k.object_path("kueue.x-k8s.io/v1beta2", "workloads", "ns")


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- builders (upstream's testing wrappers, as plain dicts) -----------------------------------------


class P:
    """`testingpod.MakePod("pod", "ns").UID("test-uid").Queue("user-queue").Request(cpu, "1").Image("", nil)`."""

    def __init__(self, name: str = "pod") -> None:
        self.o: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": "test-uid",
                "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                "annotations": {},
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "", "resources": {"requests": {"cpu": "1"}}}],
                "schedulingGates": [],
            },
        }

    def clone(self) -> P:
        out = P()
        out.o = copy.deepcopy(self.o)
        return out

    def name(self, name: str) -> P:
        self.o["metadata"]["name"] = name
        return self

    def uid(self, uid: str) -> P:
        self.o["metadata"]["uid"] = uid
        return self

    def label(self, key: str, value: str) -> P:
        self.o["metadata"]["labels"][key] = value
        return self

    def ann(self, key: str, value: str) -> P:
        self.o["metadata"]["annotations"][key] = value
        return self

    def managed(self) -> P:
        return self.label("kueue.x-k8s.io/managed", "true")

    def queue(self, name: str) -> P:
        return self.label("kueue.x-k8s.io/queue-name", name)

    def fin(self) -> P:
        return self.finalizer(FIN)

    def finalizer(self, name: str) -> P:
        self.o["metadata"].setdefault("finalizers", []).append(name)
        return self

    def mem(self, quantity: str) -> P:
        self.o["spec"]["containers"][0]["resources"]["requests"]["memory"] = quantity
        return self

    def gate(self, name: str = GATE) -> P:
        self.o["spec"]["schedulingGates"].append({"name": name})
        return self

    def group(self, name: str = "test-group", total: int | str = 2) -> P:
        return self.label(GROUP_NAME, name).ann(TOTAL, str(total))

    def serving(self) -> P:
        return self.ann("kueue.x-k8s.io/pod-group-serving", "true")

    def fast(self) -> P:
        return self.ann("kueue.x-k8s.io/pod-group-fast-admission", "true")

    def phase(self, phase: str) -> P:
        self.o.setdefault("status", {})["phase"] = phase
        return self

    def message(self, message: str) -> P:
        self.o.setdefault("status", {})["message"] = message
        return self

    def conds(self, *conds: Mapping[str, Any]) -> P:
        self.o.setdefault("status", {})["conditions"] = [dict(c) for c in conds]
        return self

    def failed_at(self, t: datetime) -> P:
        """Failed, with the ContainersReady=False/PodFailed transition at `t`."""
        return self.phase("Failed").conds(
            {"type": "ContainersReady", "status": "False", "reason": "PodFailed", "lastTransitionTime": ts(t)}
        )

    def target(self, reason: str, message: str) -> P:
        """The `TerminationTarget` condition a stopped pod carries."""
        return self.conds({"type": "TerminationTarget", "status": "True", "reason": reason, "message": message})

    def node_selector(self, key: str, value: str) -> P:
        self.o["spec"].setdefault("nodeSelector", {})[key] = value
        return self

    def started(self, podset: str, wl: str, cq: str = "cq", queue: str = "user-queue") -> P:
        """What ungating with the `unit-test-flavor` (arm64) adds to a pod."""
        return (
            self.node_selector("kubernetes.io/arch", "arm64")
            .label("kueue.x-k8s.io/podset", podset)
            .label("kueue.x-k8s.io/local-queue-name", queue)
            .label("kueue.x-k8s.io/cluster-queue-name", cq)
            .ann("kueue.x-k8s.io/workload", wl)
        )

    def labels_started(self, podset: str = ROLE, cq: str = "cq", queue: str = "user-queue") -> P:
        """The labels ungating adds (no flavor, so no nodeSelector)."""
        return (
            self.label("kueue.x-k8s.io/podset", podset)
            .label("kueue.x-k8s.io/local-queue-name", queue)
            .label("kueue.x-k8s.io/cluster-queue-name", cq)
        )

    def created(self, t: datetime) -> P:
        self.o["metadata"]["creationTimestamp"] = ts(t)
        return self

    def node_name(self, name: str) -> P:
        self.o["spec"]["nodeName"] = name
        return self

    def deleted(self, t: datetime = NOW) -> P:
        self.o["metadata"]["deletionTimestamp"] = ts(t)
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


def ps(
    name: str = "main",
    count: int = 1,
    *,
    cpu: str | None = "1",
    memory: str = "",
    gated: bool = False,
    index: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    """`MakePodSet(name, count)` [`.Request(cpu/memory, ...)`, `.SchedulingGates(admission)`, `.PodIndexLabel(...)`]."""
    requests = {"cpu": cpu} if cpu else {}
    if memory:
        requests["memory"] = memory
    template: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if gated:
        template["schedulingGates"] = [{"name": GATE}]
    template.update(spec)
    out: dict[str, Any] = {"name": name, "count": count, "template": {"spec": template}}
    if index:
        out["topologyRequest"] = {"podIndexLabel": "kueue.x-k8s.io/pod-group-pod-index"}
    return out


def psa(name: str = "main", count: int = 1, flavor: str = "", usage: str = "") -> dict[str, Any]:
    """`MakePodSetAssignment(name)[.Assignment(cpu, flavor, usage)].Count(count)`."""
    out: dict[str, Any] = {"name": name, "count": count}
    if flavor:
        out["flavors"] = {"cpu": flavor}
        out["resourceUsage"] = {"cpu": usage}
    return out


def cond(
    ctype: str, status: str = "True", reason: str = "", message: str = "", *, at: datetime = NOW
) -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": ts(at)}


class W:
    """`utiltestingapi.MakeWorkload(name, "ns")`."""

    def __init__(self, name: str = "unit-test") -> None:
        self.o: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"podSets": [ps(cpu=None)]},
        }

    def clone(self) -> W:
        out = W()
        out.o = copy.deepcopy(self.o)
        return out

    def group(self) -> W:
        return self.ann("kueue.x-k8s.io/is-group-workload", "true")

    def fin(self) -> W:
        self.o["metadata"]["finalizers"] = [WL_FIN]
        return self

    def queue(self, name: str) -> W:
        self.o["spec"]["queueName"] = name
        return self

    def pod_sets(self, *sets: dict[str, Any]) -> W:
        self.o["spec"]["podSets"] = list(sets)
        return self

    def priority(self, value: int) -> W:
        self.o["spec"]["priority"] = value
        return self

    def max_exec(self, seconds: int) -> W:
        self.o["spec"]["maximumExecutionTimeSeconds"] = seconds
        return self

    def active(self, value: bool) -> W:
        self.o["spec"]["active"] = value
        return self

    def _owner(self, name: str, uid: str, controller: bool) -> W:
        ref: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}
        if controller:
            ref.update(controller=True, blockOwnerDeletion=True)
        self.o["metadata"].setdefault("ownerReferences", []).append(ref)
        return self

    def controller(self, name: str = "pod", uid: str = "test-uid") -> W:
        return self._owner(name, uid, True)

    def job_controller(self, name: str, uid: str) -> W:
        self.o["metadata"].setdefault("ownerReferences", []).append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        )
        return self

    def owner(self, name: str = "pod", uid: str = "test-uid") -> W:
        return self._owner(name, uid, False)

    def label(self, key: str, value: str) -> W:
        self.o["metadata"].setdefault("labels", {})[key] = value
        return self

    def ann(self, key: str, value: str) -> W:
        self.o["metadata"].setdefault("annotations", {})[key] = value
        return self

    def status(self) -> dict[str, Any]:
        return self.o.setdefault("status", {})

    def reserve(self, *assignments: dict[str, Any], cq: str = "cq") -> W:
        """`ReserveQuotaAt`: sets the admission and replaces all conditions with QuotaReserved."""
        self.status()["admission"] = {"clusterQueue": cq, "podSetAssignments": list(assignments) or [psa()]}
        self.status()["conditions"] = [
            cond("QuotaReserved", "True", "AdmittedByTest", f"Admitted by ClusterQueue {cq}")
        ]
        return self

    def admitted(self, value: bool = True, at: datetime = NOW) -> W:
        """`AdmittedAt(value, at)`."""
        cq = self.status()["admission"]["clusterQueue"]
        return self.cond(
            cond("Admitted", "True" if value else "False", "ByTest", f"Admitted by ClusterQueue {cq}", at=at)
        )

    def past_admitted(self, seconds: int) -> W:
        self.status()["accumulatedPastExecutionTimeSeconds"] = seconds
        return self

    def finished(self) -> W:
        return self.cond(cond("Finished", "True", "ByTest", "Finished by test"))

    def cond(self, c: dict[str, Any]) -> W:
        conds = self.status().setdefault("conditions", [])
        for i, have in enumerate(conds):
            if have["type"] == c["type"]:
                conds[i] = c
                break
        else:
            conds.append(c)
        return self

    def reclaimable(self, *pods: tuple[str, int]) -> W:
        self.status()["reclaimablePods"] = [{"name": n, "count": c} for n, c in pods]
        return self

    def admission_checks(self, *checks: dict[str, Any]) -> W:
        self.status()["admissionChecks"] = list(checks)
        return self

    def deleting(self) -> W:
        self.o["metadata"]["deletionTimestamp"] = ts(NOW)
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


def flavor(name: str = "unit-test-flavor", **labels: str) -> tuple[str, dict[str, Any]]:
    return "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": labels or {"kubernetes.io/arch": "arm64"}},
    }


Event = tuple[str, str, str, str]  # (object name, type, reason, message)


def normal(name: str, reason: str, message: str) -> Event:
    return (name, "Normal", reason, message)


def warning(name: str, reason: str, message: str) -> Event:
    return (name, "Warning", reason, message)


# --- the fake API -----------------------------------------------------------------------------------


class _Kube(FakeKube):
    """Finalizer-aware deletion and pod status apply, as upstream's fake client behaves."""

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
        if method == "DELETE" and path in self.objects and self.objects[path]["metadata"].get("finalizers"):
            with self._lock:
                self.calls.append((method, path))
                obj = self.objects[path]
                obj["metadata"].setdefault("deletionTimestamp", ts(NOW))
                return copy.deepcopy(obj)
        if method == "PATCH" and content_type == "application/apply-patch+yaml" and path.endswith("/status"):
            with self._lock:
                self.calls.append((method, path))
                target = path.removesuffix("/status")
                if target not in self.objects:
                    raise k.NotFound(404, f"{target} not found")
                conds = self.objects[target].setdefault("status", {}).setdefault("conditions", [])
                for new in body["status"]["conditions"]:
                    conds[:] = [c for c in conds if c.get("type") != new["type"]] + [copy.deepcopy(new)]
                return copy.deepcopy(self.objects[target])
        out = super().request(method, path, query=query, body=body, content_type=content_type, timeout=timeout)
        meta = (self.objects.get(path) or {}).get("metadata") or {}
        if method in ("PATCH", "PUT") and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            with self._lock:
                self.objects.pop(path)
        return out


# --- the scenario -----------------------------------------------------------------------------------


@dataclass
class Case:
    pods: Sequence[dict[str, Any]] = ()
    want_pods: Sequence[dict[str, Any]] | None = None  # None: not compared
    workloads: Sequence[dict[str, Any]] = ()
    want_workloads: Sequence[dict[str, Any]] = ()
    want_events: Sequence[Event] = ()
    want_err: str = ""  # a part of the error the reconcile returns (and is retried on); "" = none
    init: Sequence[tuple[str, dict[str, Any]]] = ()
    gates: Mapping[str, bool] = field(default_factory=lambda: {"WorkloadIdentifierAnnotations": False})
    key: str = ""  # default: the key of the first pod
    expectations: Mapping[str, Sequence[str]] = field(default_factory=dict)
    delete_workloads: bool = False
    label_keys_to_copy: Sequence[str] = ()
    # upstream's WithAnnotationsToCopy: here the keys Workload-kind metrics.customLabels read
    annotations_to_copy: Sequence[str] = ()
    ignore_wl_spec: bool = False  # upstream compares only the metadata/status it cares about


@dataclass
class Outcome:
    pods: list[dict[str, Any]]
    workloads: list[dict[str, Any]]
    events: list[Event]
    error: str


def _drop_empty(value: Any) -> Any:
    """`cmpopts.EquateEmpty` plus Go's zero values for strings: nil, "", {} and [] are absent."""
    if isinstance(value, Mapping):
        out = {key: _drop_empty(v) for key, v in value.items()}
        return {key: v for key, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list | tuple):
        return [_drop_empty(v) for v in value]
    return value


def _norm_pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    out.pop("apiVersion", None)
    out.pop("kind", None)
    for key in ("resourceVersion", "deletionTimestamp"):
        out.get("metadata", {}).pop(key, None)
    for c in (out.get("status") or {}).get("conditions") or ():
        c.pop("lastTransitionTime", None)
    return _drop_empty(out)  # type: ignore[no-any-return]


def _norm_wl(obj: Mapping[str, Any], *, want: bool, ignore_spec: bool) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    out.pop("apiVersion", None)
    out.pop("kind", None)
    out.get("metadata", {}).pop("resourceVersion", None)
    if ignore_spec:
        out.pop("spec", None)
    status = out.get("status") or {}
    conds = sorted(status.get("conditions") or (), key=lambda c: c["type"])
    for c in conds:
        c.pop("lastTransitionTime", None)
        c.pop("observedGeneration", None)
    status["conditions"] = conds
    reserved = next((c for c in conds if c["type"] == "QuotaReserved"), None)
    if want and reserved is not None and reserved["status"] == "False":
        status.pop("admission", None)
    return _drop_empty(out)  # type: ignore[no-any-return]


def run(case: Case) -> Outcome:
    config = Configuration(
        integrations=Integrations(frameworks=("pod",), label_keys_to_copy=tuple(case.label_keys_to_copy)),
        metrics=Metrics(
            custom_labels=tuple(
                MetricsCustomLabel(f"a{i}", source_annotation_key=key, source_kind="Workload", tracked_values=("v",))
                for i, key in enumerate(case.annotations_to_copy)
            )
        ),
        wait_for_pods_ready=None,
        feature_gates=dict(case.gates),
    )
    kube = _Kube()
    store = Store()
    recorder = events.Recorder(None, instance="t", stop=threading.Event())
    rec = pod.PodReconciler(kube, store, config, recorder, stop=threading.Event(), clock=lambda: NOW)
    store.put(
        "namespaces",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "ns", "labels": {"kubernetes.io/metadata.name": "ns"}},
        },
    )
    for kind, obj in case.init:
        store.put(kind, copy.deepcopy(obj))
    for path, objs in ((POD_PATH, case.pods), (WL_PATH, case.workloads)):
        for obj in objs:
            kube.put(f"{path}/{obj['metadata']['name']}", obj)
    if case.delete_workloads:
        for obj in case.workloads:
            kube.delete(f"{WL_PATH}/{obj['metadata']['name']}")
    for kind, path in (("pods", POD_PATH), ("workloads", WL_PATH)):
        for obj_path, obj in list(kube.objects.items()):
            if obj_path.startswith(path + "/"):
                store.put(kind, copy.deepcopy(obj))
                rec.on_event(kind, "ADDED", copy.deepcopy(obj))
    for key, uids in case.expectations.items():
        rec.expectations.expect(key, set(uids))

    # Upstream's reconcile returns no error for unretryable ones, it logs them: only a retry counts.
    errors: list[str] = []
    key = case.key or pod.pod_key(case.pods[0], rec.opts)
    try:
        rec.reconcile(key)
    except Retry as exc:
        errors.append(str(exc))
    got_events = []
    while not recorder._queue.empty():
        ev = recorder._queue.get_nowait()
        got_events.append((ev["regarding"]["name"], ev["type"], ev["reason"], ev["note"]))
    pods = [o for p, o in sorted(kube.objects.items()) if p.startswith(POD_PATH + "/")]
    wls = [o for p, o in sorted(kube.objects.items()) if p.startswith(WL_PATH + "/")]
    return Outcome(pods, wls, got_events, "; ".join(e for e in errors if e))


def check(case: Case) -> None:
    got = run(case)
    if case.want_pods is not None:
        assert [_norm_pod(p) for p in got.pods] == [
            _norm_pod(p) for p in sorted(case.want_pods, key=lambda p: p["metadata"]["name"])
        ]
    ignore = case.ignore_wl_spec
    assert [_norm_wl(w, want=False, ignore_spec=ignore) for w in got.workloads] == [
        _norm_wl(w, want=True, ignore_spec=ignore)
        for w in sorted(case.want_workloads, key=lambda w: w["metadata"]["name"])
    ]
    assert sorted(got.events) == sorted(case.want_events)
    if case.want_err:
        assert case.want_err in got.error
    else:
        assert got.error == ""


def cases(table: Mapping[str, Case]) -> Iterable[Any]:
    return [pytest.param(c, id=name) for name, c in table.items()]


# --- TestReconciler ----------------------------------------------------------------------------------

BASE = P()


def gpod(name: str = "pod", total: int | str = 2, group: str = "test-group") -> P:
    """A managed, finalized pod of a group (upstream's most common pod shape)."""
    return BASE.clone().name(name).managed().fin().group(group, total)


def single_wl_name() -> str:
    return pg.workload_name_for_pod("pod", "test-uid")


RECONCILER: dict[str, Case] = {}
SWL = pg.workload_name_for_pod("pod", "test-uid")
ADMITTED_MAIN = psa("main", 1, "unit-test-flavor", "1")


def gwl(
    count: int = 2,
    *,
    owners: Sequence[str] = ("pod", "pod2"),
    name: str = "test-group",
    gated: bool = True,
    index: bool = True,
    queue: str = "user-queue",
) -> W:
    """The Workload a pod group of `count` base pods gets."""
    w = W(name).group().fin().pod_sets(ps(ROLE, count, gated=gated, index=index)).queue(queue).priority(0)
    for owner in owners:
        w.owner(owner)
    return w


def swl(name: str = "unit-test") -> W:
    """A single pod's Workload as upstream's cases write it."""
    return W(name).fin().pod_sets(ps()).controller()


RECONCILER.update(
    {
        "scheduling gate is removed and node selector is added if workload is admitted": Case(
            init=[flavor()],
            pods=[BASE.clone().managed().fin().gate().obj()],
            want_pods=[BASE.clone().managed().fin().started("main", "unit-test").obj()],
            workloads=[swl().queue("user-queue").reserve(ADMITTED_MAIN).admitted().obj()],
            want_workloads=[swl().queue("user-queue").reserve(ADMITTED_MAIN).admitted().obj()],
            want_events=[normal("pod", "Started", "Admitted by clusterQueue cq")],
        ),
        "non-matching admitted workload is deleted and pod is finalized": Case(
            pods=[BASE.clone().managed().fin().obj()],
            workloads=[W().fin().pod_sets(ps("main", 2)).reserve().controller().admitted().obj()],
            want_err="no matching workloads",
            want_events=[
                normal(
                    "pod", "Stopped", "No matching Workload; restoring pod templates according to existent Workload"
                ),
                normal("pod", "DeletedWorkload", "Deleted not matching Workload: ns/unit-test"),
            ],
        ),
        "the workload is created when queue name is set": Case(
            pods=[BASE.clone().managed().fin().gate().queue("test-queue").obj()],
            want_pods=[BASE.clone().managed().fin().gate().queue("test-queue").obj()],
            want_workloads=[
                W(SWL)
                .fin()
                .pod_sets(ps(gated=True, index=True))
                .queue("test-queue")
                .priority(0)
                .controller()
                .label("kueue.x-k8s.io/job-uid", "test-uid")
                .obj()
            ],
            want_events=[normal("pod", "CreatedWorkload", f"Created Workload: ns/{SWL}")],
        ),
        "when the queue-name changed": Case(
            pods=[BASE.clone().managed().fin().gate().queue("test-queue-changed").obj()],
            want_pods=[BASE.clone().managed().fin().gate().queue("test-queue-changed").obj()],
            workloads=[
                W(SWL)
                .fin()
                .pod_sets(ps(gated=True, index=True))
                .queue("test-queue")
                .priority(0)
                .controller()
                .label("kueue.x-k8s.io/job-uid", "test-uid")
                .obj()
            ],
            want_workloads=[
                W(SWL)
                .fin()
                .pod_sets(ps(gated=True, index=True))
                .queue("test-queue-changed")
                .priority(0)
                .controller()
                .label("kueue.x-k8s.io/job-uid", "test-uid")
                .obj()
            ],
        ),
        "when the queue-name changed in pod-groupr": Case(
            pods=[
                gpod().gate().queue("test-queue-changed").obj(),
                gpod("pod2").gate().queue("test-queue-changed").obj(),
            ],
            want_pods=[
                gpod().gate().queue("test-queue-changed").obj(),
                gpod("pod2").gate().queue("test-queue-changed").obj(),
            ],
            workloads=[gwl(queue="test-queue").ann(PROVREQ, "test-val").obj()],
            want_workloads=[gwl(queue="test-queue-changed").ann(PROVREQ, "test-val").obj()],
        ),
        "when the queue-name changed in serving pod-groupr": Case(
            pods=[
                gpod().gate().queue("test-queue-changed").serving().obj(),
                gpod("pod2").gate().queue("test-queue-changed").serving().obj(),
            ],
            want_pods=[
                gpod().gate().queue("test-queue-changed").serving().obj(),
                gpod("pod2").gate().queue("test-queue-changed").serving().obj(),
            ],
            workloads=[gwl(queue="test-queue").ann(PROVREQ, "test-val").obj()],
            want_workloads=[gwl(queue="test-queue").ann(PROVREQ, "test-val").obj()],
        ),
        "the pod reconciliation is skipped when 'kueue.x-k8s.io/managed' label is not set": Case(
            pods=[BASE.obj()],
            want_pods=[BASE.obj()],
        ),
        "pod is stopped when workload is evicted": Case(
            pods=[BASE.clone().managed().fin().queue("test-queue").obj()],
            want_pods=[
                BASE.clone()
                .managed()
                .fin()
                .queue("test-queue")
                .target("WorkloadEvictedDueToPreempted", "Preempted to accommodate a higher priority Workload")
                .obj()
            ],
            workloads=[
                W("job")
                .fin()
                .pod_sets(ps())
                .queue("test-queue")
                .controller()
                .cond(cond("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload"))
                .obj()
            ],
            want_workloads=[
                W("job")
                .fin()
                .pod_sets(ps())
                .queue("test-queue")
                .controller()
                .cond(cond("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload"))
                .obj()
            ],
            want_events=[normal("pod", "Stopped", "Preempted to accommodate a higher priority Workload")],
        ),
        "pod is finalized when it's succeeded": Case(
            pods=[BASE.clone().managed().fin().phase("Succeeded").message("Job finished successfully").obj()],
            want_pods=[BASE.clone().managed().phase("Succeeded").message("Job finished successfully").obj()],
            workloads=[W().fin().pod_sets(ps()).reserve().admitted().controller().obj()],
            want_workloads=[
                W()
                .fin()
                .pod_sets(ps())
                .reserve()
                .controller()
                .admitted()
                .cond(cond("Finished", "True", "Succeeded", "Job finished successfully"))
                .obj()
            ],
            want_events=[normal("pod", "FinishedWorkload", "Workload 'ns/unit-test' is declared finished")],
        ),
        "workload status condition is added even if the pod is finalized": Case(
            pods=[BASE.clone().managed().phase("Succeeded").message("Job finished successfully").obj()],
            want_pods=[BASE.clone().managed().phase("Succeeded").message("Job finished successfully").obj()],
            workloads=[W().fin().pod_sets(ps()).reserve().controller().admitted().obj()],
            want_workloads=[
                W()
                .fin()
                .pod_sets(ps())
                .reserve()
                .controller()
                .admitted()
                .cond(cond("Finished", "True", "Succeeded", "Job finished successfully"))
                .obj()
            ],
            want_events=[normal("pod", "FinishedWorkload", "Workload 'ns/unit-test' is declared finished")],
        ),
        "pod without scheduling gate is terminated if workload is not admitted": Case(
            pods=[BASE.clone().managed().fin().obj()],
            want_pods=[BASE.clone().managed().fin().target("NotAdmitted", "Not admitted by cluster queue").obj()],
            workloads=[W().fin().controller().pod_sets(ps()).obj()],
            want_workloads=[W().fin().controller().pod_sets(ps()).obj()],
            want_events=[normal("pod", "Stopped", "Not admitted by cluster queue")],
        ),
        "when a workload is created for the pod it has its ProvReq annotations copied": Case(
            pods=[
                BASE.clone()
                .fin()
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .managed()
                .obj()
            ],
            want_pods=[
                BASE.clone()
                .fin()
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .managed()
                .obj()
            ],
            want_workloads=[
                W(SWL).fin().controller().label("kueue.x-k8s.io/job-uid", "test-uid").ann(PROVREQ, "test-val").obj()
            ],
            ignore_wl_spec=True,
            want_events=[normal("pod", "CreatedWorkload", f"Created Workload: ns/{SWL}")],
        ),
        "workload is composed and created for the pod group": Case(
            pods=[
                gpod()
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .obj(),
                gpod("pod2")
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .obj(),
            ],
            want_pods=[
                gpod()
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .obj(),
                gpod("pod2")
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .obj(),
            ],
            want_workloads=[gwl().ann(PROVREQ, "test-val").obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "workload is composed and created for the pod group, WorkloadIdentifierAnnotations enabled": Case(
            gates={"WorkloadIdentifierAnnotations": True},
            pods=[
                BASE.clone().managed().fin().gate().ann(GROUP_NAME, "test-group").ann(TOTAL, "2").obj(),
                BASE.clone().name("pod2").managed().fin().gate().ann(GROUP_NAME, "test-group").ann(TOTAL, "2").obj(),
            ],
            want_pods=[
                BASE.clone().managed().fin().gate().ann(GROUP_NAME, "test-group").ann(TOTAL, "2").obj(),
                BASE.clone().name("pod2").managed().fin().gate().ann(GROUP_NAME, "test-group").ann(TOTAL, "2").obj(),
            ],
            want_workloads=[gwl().obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "workload is composed and created for the pod group with fast admission": Case(
            pods=[
                gpod(total=3)
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .fast()
                .obj()
            ],
            want_pods=[
                gpod(total=3)
                .gate()
                .ann(PROVREQ, "test-val")
                .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
                .fast()
                .obj()
            ],
            want_workloads=[gwl(3, owners=["pod"]).ann(PROVREQ, "test-val").obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "workload is composed and created for the pod group with max exec time": Case(
            pods=[
                gpod().label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
                gpod("pod2").label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
            ],
            want_pods=[
                gpod().label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
                gpod("pod2").label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
            ],
            want_workloads=[gwl().max_exec(10).obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "workload is recreated when max exec time changes": Case(
            pods=[
                gpod().label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
                gpod("pod2").label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
            ],
            want_pods=[
                gpod().label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
                gpod("pod2").label("kueue.x-k8s.io/max-exec-time-seconds", "10").gate().obj(),
            ],
            workloads=[gwl(index=False).max_exec(5).obj()],
            want_workloads=[gwl().max_exec(10).obj()],
            want_events=[
                normal("pod", "UpdatedWorkload", "Updated not matching Workload for suspended job: ns/test-group")
            ],
        ),
        "workload is found for the pod group": Case(
            pods=[gpod().gate().obj(), gpod("pod2").gate().obj()],
            want_pods=[gpod().gate().obj(), gpod("pod2").gate().obj()],
            workloads=[gwl(index=False).obj()],
            want_workloads=[gwl(index=False).obj()],
        ),
        "pod group does not adopt a workload that is not a pod group workload": Case(
            gates={"WorkloadIdentifierAnnotations": False, "PodIntegrationValidateGroupOwner": True},
            pods=[gpod(total=1, group="shared-wl-name").gate().obj()],
            want_pods=[gpod(total=1, group="shared-wl-name").gate().obj()],
            workloads=[W("shared-wl-name").fin().pod_sets(ps()).queue("user-queue").priority(0).obj()],
            want_workloads=[W("shared-wl-name").fin().pod_sets(ps()).queue("user-queue").priority(0).obj()],
            want_events=[
                warning(
                    "pod",
                    "WorkloadNameConflict",
                    'A Workload named "shared-wl-name" already exists but is not a pod group workload; '
                    "this pod group cannot be admitted",
                )
            ],
        ),
        "deleted pods of a group refused adoption of a foreign workload are finalized": Case(
            gates={"WorkloadIdentifierAnnotations": False, "PodIntegrationValidateGroupOwner": True},
            pods=[gpod(total=1, group="shared-wl-name").gate().deleted().obj()],
            want_pods=[],
            workloads=[W("shared-wl-name").fin().pod_sets(ps()).queue("user-queue").priority(0).obj()],
            want_workloads=[W("shared-wl-name").fin().pod_sets(ps()).queue("user-queue").priority(0).obj()],
            want_events=[
                warning(
                    "pod",
                    "WorkloadNameConflict",
                    'A Workload named "shared-wl-name" already exists but is not a pod group workload; '
                    "this pod group cannot be admitted",
                )
            ],
        ),
        "pod group adopts a foreign workload when PodIntegrationValidateGroupOwner is disabled": Case(
            gates={"WorkloadIdentifierAnnotations": False, "PodIntegrationValidateGroupOwner": False},
            pods=[gpod(total=1, group="shared-wl-name").gate().obj()],
            want_pods=[gpod(total=1, group="shared-wl-name").gate().obj()],
            workloads=[W("shared-wl-name").fin().pod_sets(ps()).queue("user-queue").priority(0).obj()],
            want_workloads=[
                W("shared-wl-name")
                .fin()
                .pod_sets(ps(ROLE, 1, gated=True, index=True))
                .queue("user-queue")
                .priority(0)
                .obj()
            ],
            want_events=[
                normal("pod", "UpdatedWorkload", "Updated not matching Workload for suspended job: ns/shared-wl-name")
            ],
        ),
        "scheduling gate is removed for all pods in the group if workload is admitted": Case(
            init=[flavor()],
            pods=[gpod().gate().obj(), gpod("pod2").gate().obj()],
            want_pods=[gpod().started(ROLE, "test-group").obj(), gpod("pod2").started(ROLE, "test-group").obj()],
            workloads=[gwl(gated=False, index=False).reserve(psa(ROLE, 2, "unit-test-flavor", "2")).admitted().obj()],
            want_workloads=[
                gwl(gated=False, index=False).reserve(psa(ROLE, 2, "unit-test-flavor", "2")).admitted().obj()
            ],
            want_events=[
                normal("pod", "Started", "Admitted by clusterQueue cq"),
                normal("pod2", "Started", "Admitted by clusterQueue cq"),
            ],
        ),
    }
)

RESERVED_MAIN = psa()  # `MakePodSetAssignment("main")`: count 1, no flavors
WAITING = cond("WaitingForReplacementPods", "True", "PodsFailed", "Some Failed pods need replacement")
PREEMPTED = cond("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload")


def gw(count: int = 2, *owners: str, name: str = "test-group", queue: str = "user-queue", fin: bool = True) -> W:
    """A group Workload as upstream's cases write it (no gate, no index label, no priority)."""
    w = W(name).group().pod_sets(ps(ROLE, count)).queue(queue)
    if fin:
        w.fin()
    for owner in owners or ("pod", "pod2"):
        w.owner(owner)
    return w


RECONCILER.update(
    {
        "workload is not finished if the pod in the group is running": Case(
            pods=[gpod().phase("Succeeded").obj(), gpod("pod2").obj()],
            want_pods=[gpod().phase("Succeeded").obj(), gpod("pod2").obj()],
            workloads=[gw().reserve(RESERVED_MAIN).admitted().obj()],
            want_workloads=[gw().reserve(RESERVED_MAIN).admitted().reclaimable((ROLE, 1)).obj()],
        ),
        "workload is finished if all pods in the group has finished": Case(
            pods=[gpod().phase("Succeeded").obj(), gpod("pod2").phase("Succeeded").obj()],
            want_pods=[
                BASE.clone().managed().group().phase("Succeeded").obj(),
                BASE.clone().name("pod2").managed().group().phase("Succeeded").obj(),
            ],
            workloads=[gw().reserve(RESERVED_MAIN).admitted().obj()],
            want_workloads=[
                gw()
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(cond("Finished", "True", "Succeeded", "Pods succeeded: 2/2."))
                .obj()
            ],
            want_events=[normal("pod", "FinishedWorkload", "Workload 'ns/test-group' is declared finished")],
        ),
        "workload is not deleted if the pod in group has been deleted after admission": Case(
            pods=[gpod().obj()],
            want_pods=[gpod().obj()],
            workloads=[gw(2, "pod").reserve(RESERVED_MAIN).admitted().cond(WAITING).obj()],
            want_workloads=[gw(2, "pod").reserve(RESERVED_MAIN).admitted().cond(WAITING).obj()],
        ),
        "pod group remains stopped when workload is evicted": Case(
            pods=[gpod().gate().queue("test-queue").obj(), gpod("pod2").gate().queue("test-queue").obj()],
            want_pods=[gpod().gate().queue("test-queue").obj(), gpod("pod2").gate().queue("test-queue").obj()],
            workloads=[gw(queue="test-queue").cond(PREEMPTED).obj()],
            want_workloads=[gw(queue="test-queue").cond(PREEMPTED).obj()],
        ),
        "Pods are finalized even if one of the pods in the finished group is absent": Case(
            pods=[gpod().phase("Succeeded").obj()],
            want_pods=[BASE.clone().managed().group().phase("Succeeded").obj()],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner()
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(cond("Finished", "True", "Succeeded", "Pods succeeded: 1/2. Pods failed: 1/2"))
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner()
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(cond("Finished", "True", "Succeeded", "Pods succeeded: 1/2. Pods failed: 1/2"))
                .cond(WAITING)
                .obj()
            ],
            want_events=[normal("pod", "FinishedWorkload", "Workload 'ns/test-group' is declared finished")],
        ),
        "workload for pod group with different queue names shouldn't be created": Case(
            pods=[gpod().gate().queue("test-queue").obj(), gpod("pod2").gate().queue("new-test-queue").obj()],
            want_pods=[gpod().gate().queue("test-queue").obj(), gpod("pod2").gate().queue("new-test-queue").obj()],
        ),
        "all pods in group should be removed if workload is deleted": Case(
            pods=[gpod().queue("test-queue").obj(), gpod("pod2").queue("test-queue").phase("Succeeded").obj()],
            want_pods=[],
            workloads=[
                W("test-group")
                .group()
                .fin()
                .pod_sets(ps(ROLE, 2))
                .controller("pod")
                .controller("pod2")
                .queue("test-queue")
                .reserve(psa("main", 2, "unit-test-flavor", "2"))
                .admitted()
                .obj()
            ],
            delete_workloads=True,
            want_events=[
                normal("pod", "Stopped", "Workload is deleted"),
                normal("pod2", "Stopped", "Workload is deleted"),
            ],
        ),
        "replacement pod should be started for pod group of size 1": Case(
            pods=[gpod(total=1).phase("Failed").obj(), gpod("pod2", 1).gate().obj()],
            want_pods=[
                gpod(total=1).phase("Failed").obj(),
                gpod("pod2", 1)
                .label("kueue.x-k8s.io/podset", ROLE)
                .label("kueue.x-k8s.io/local-queue-name", "user-queue")
                .label("kueue.x-k8s.io/cluster-queue-name", "cq")
                .ann("kueue.x-k8s.io/workload", "test-group")
                .obj(),
            ],
            workloads=[gw().reserve(psa(ROLE)).admitted().cond(WAITING).obj()],
            want_workloads=[gw().reserve(psa(ROLE)).admitted().cond(WAITING).obj()],
            want_events=[normal("pod2", "Started", "Admitted by clusterQueue cq")],
        ),
        "replacement pod should be started for set of Running, Failed, Succeeded pods": Case(
            pods=[
                gpod(total=3)
                .label("kueue.x-k8s.io/podset", ROLE)
                .label("kueue.x-k8s.io/local-queue-name", "user-queue")
                .label("kueue.x-k8s.io/cluster-queue-name", "cq")
                .phase("Running")
                .obj(),
                gpod("pod2", 3).phase("Failed").obj(),
                gpod("pod3", 3).phase("Succeeded").obj(),
                gpod("replacement", 3).gate().obj(),
            ],
            want_pods=[
                gpod(total=3)
                .label("kueue.x-k8s.io/podset", ROLE)
                .label("kueue.x-k8s.io/local-queue-name", "user-queue")
                .label("kueue.x-k8s.io/cluster-queue-name", "cq")
                .phase("Running")
                .obj(),
                BASE.clone().name("pod2").managed().group(total=3).phase("Failed").obj(),
                gpod("pod3", 3).phase("Succeeded").obj(),
                gpod("replacement", 3)
                .label("kueue.x-k8s.io/podset", ROLE)
                .label("kueue.x-k8s.io/local-queue-name", "user-queue")
                .label("kueue.x-k8s.io/cluster-queue-name", "cq")
                .ann("kueue.x-k8s.io/workload", "test-group")
                .obj(),
            ],
            workloads=[gw(3, "pod", "pod2", "pod3").reserve(psa(ROLE, 3)).admitted().reclaimable((ROLE, 1)).obj()],
            want_workloads=[
                gw(3, "pod", "pod2", "pod3", "replacement")
                .reserve(psa(ROLE, 3))
                .admitted()
                .reclaimable((ROLE, 1))
                .obj()
            ],
            want_events=[
                normal("test-group", "OwnerReferencesAdded", "Added 1 owner reference(s)"),
                normal("replacement", "Started", "Admitted by clusterQueue cq"),
            ],
        ),
        "pod group of size 2 is finished when 2 pods has succeeded and 1 pod has failed": Case(
            pods=[
                gpod().phase("Failed").obj(),
                gpod("pod2").phase("Succeeded").obj(),
                gpod("pod3").phase("Succeeded").obj(),
            ],
            want_pods=[
                BASE.clone().name(n).managed().group().phase(ph).obj()
                for n, ph in (("pod", "Failed"), ("pod2", "Succeeded"), ("pod3", "Succeeded"))
            ],
            workloads=[gw(2, "pod", "pod2", "pod3").reserve(RESERVED_MAIN).admitted().obj()],
            want_workloads=[
                gw(2, "pod", "pod2", "pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(cond("Finished", "True", "Succeeded", "Pods succeeded: 2/2."))
                .obj()
            ],
            want_events=[normal("pod", "FinishedWorkload", "Workload 'ns/test-group' is declared finished")],
        ),
        "wl should not get the quota reservation cleared for a running pod group of size 1": Case(
            pods=[gpod(total=1).phase("Running").deleted().obj()],
            want_pods=[gpod(total=1).phase("Running").deleted().obj()],
            workloads=[
                gw(1, "pod")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(PREEMPTED)
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
            want_workloads=[
                gw(1, "pod")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(PREEMPTED)
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
        ),
        "wl should get the quota reservation cleared for a failed pod group of size 1": Case(
            pods=[gpod(total=1).phase("Failed").deleted().obj()],
            want_pods=[gpod(total=1).phase("Failed").deleted().obj()],
            workloads=[
                gw(1, "pod")
                .reserve(RESERVED_MAIN)
                .admitted(at=NOW - timedelta(seconds=1))
                .cond(PREEMPTED)
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
            want_workloads=[
                gw(1, "pod")
                .reserve(RESERVED_MAIN)
                .past_admitted(1)
                .cond(cond("Admitted", "False", "NoReservation", "The workload has no reservation"))
                .cond(PREEMPTED)
                .cond(cond("QuotaReserved", "False", "PendingEvaluation", PREEMPTED["message"]))
                .cond(cond("Requeued", "True", "Preempted", PREEMPTED["message"]))
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
        ),
        "deleted pods in group should not be finalized if the workload doesn't match": Case(
            pods=[
                gpod().queue("test-queue").node_name("test-node").deleted().obj(),
                gpod("pod2").queue("test-queue").node_name("test-node").deleted().obj(),
            ],
            want_pods=[
                gpod().queue("test-queue").node_name("test-node").deleted().obj(),
                gpod("pod2").queue("test-queue").node_name("test-node").deleted().obj(),
            ],
            workloads=[
                W("test-group")
                .group()
                .fin()
                .pod_sets(ps("incorrect-role-name", 1))
                .queue("test-queue")
                .reserve(psa("main", 2, "unit-test-flavor", "2"))
                .admitted()
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .fin()
                .pod_sets(ps(ROLE, 2, nodeName="test-node", index=True))
                .queue("test-queue")
                .priority(0)
                .owner("pod")
                .owner("pod2")
                .obj()
            ],
            delete_workloads=True,
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "workload is not deleted if all of the pods in the group are deleted": Case(
            pods=[gpod().deleted().obj(), gpod("pod2").deleted().obj()],
            want_pods=[gpod().deleted().obj(), gpod("pod2").deleted().obj()],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
        ),
        "workload is not deleted if one pod role is absent from the cluster": Case(
            pods=[gpod().deleted().obj()],
            want_pods=[gpod().deleted().obj()],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("absent-pod-role", 1), ps(ROLE, 1))
                .queue("user-queue")
                .reserve(RESERVED_MAIN)
                .controller()
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("absent-pod-role", 1), ps(ROLE, 1))
                .queue("user-queue")
                .reserve(RESERVED_MAIN)
                .controller()
                .admitted()
                .cond(WAITING)
                .obj()
            ],
        ),
        "if pod group is finished and wl is deleted, new workload shouldn't be created": Case(
            pods=[gpod().phase("Succeeded").obj(), gpod("pod2").phase("Succeeded").obj()],
            want_pods=[
                BASE.clone().managed().group().phase("Succeeded").obj(),
                BASE.clone().name("pod2").managed().group().phase("Succeeded").obj(),
            ],
        ),
        "if pod in group is scheduling gated and wl is deleted, workload should be recreated": Case(
            pods=[gpod().gate().obj(), gpod("pod2").phase("Succeeded").obj()],
            want_pods=[gpod().gate().obj(), gpod("pod2").phase("Succeeded").obj()],
            want_workloads=[gwl().obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "if there's not enough non-failed pods in the group, workload should not be created": Case(
            pods=[gpod().gate().obj(), gpod("pod2").phase("Failed").obj()],
            want_pods=[gpod().gate().obj(), BASE.clone().name("pod2").managed().group().phase("Failed").obj()],
            want_events=[
                warning("pod", "ErrWorkloadCompose", "'test-group' group has fewer runnable pods than expected")
            ],
        ),
        "pod group is considered finished if there is an unretriable pod and no running pods": Case(
            pods=[
                gpod(total=3).ann("kueue.x-k8s.io/retriable-in-group", "false").phase("Failed").obj(),
                gpod("pod2", 3).phase("Succeeded").obj(),
                gpod("pod3", 3).mem("1Gi").phase("Failed").obj(),
            ],
            want_pods=[
                BASE.clone()
                .managed()
                .group(total=3)
                .ann("kueue.x-k8s.io/retriable-in-group", "false")
                .phase("Failed")
                .obj(),
                BASE.clone().name("pod2").managed().group(total=3).phase("Succeeded").obj(),
                BASE.clone().name("pod3").managed().mem("1Gi").group(total=3).phase("Failed").obj(),
            ],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("a119f908", 1, memory="1Gi"), ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("a119f908", 1, memory="1Gi"), ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .cond(cond("Finished", "True", "Succeeded", "Pods succeeded: 1/3."))
                .obj()
            ],
            want_events=[normal("pod", "FinishedWorkload", "Workload 'ns/test-group' is declared finished")],
        ),
        "reclaimable pods updated for pod group": Case(
            pods=[
                gpod(total=3).phase("Failed").obj(),
                gpod("pod2", 3).phase("Running").obj(),
                gpod("pod3", 3).mem("1Gi").phase("Succeeded").obj(),
            ],
            want_pods=[
                gpod(total=3).phase("Failed").obj(),
                gpod("pod2", 3).phase("Running").obj(),
                gpod("pod3", 3).mem("1Gi").phase("Succeeded").obj(),
            ],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("4ebdd4a6", 1, memory="1Gi"), ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("4ebdd4a6", 1, memory="1Gi"), ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .reclaimable(("4ebdd4a6", 1))
                .obj()
            ],
        ),
        "reclaimablePods field is not updated for a serving pod group": Case(
            pods=[
                gpod(total=3).serving().phase("Failed").obj(),
                gpod("pod2", 3).serving().phase("Running").obj(),
                gpod("pod3", 3).mem("1Gi").serving().phase("Succeeded").obj(),
            ],
            want_pods=[
                gpod(total=3).serving().phase("Failed").obj(),
                gpod("pod2", 3).serving().phase("Running").obj(),
                gpod("pod3", 3).mem("1Gi").serving().phase("Succeeded").obj(),
            ],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("4ebdd4a6", 1, memory="1Gi"), ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("4ebdd4a6", 1, memory="1Gi"), ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
        ),
        "excess pods before wl creation, youngest pods are deleted": Case(
            pods=[
                gpod(total=1).gate().created(NOW).obj(),
                gpod("pod2", 1).gate().created(NOW + timedelta(minutes=1)).obj(),
            ],
            want_pods=[gpod(total=1).gate().created(NOW).obj()],
            want_workloads=[gwl(1, owners=["pod"]).obj()],
            want_events=[
                normal("pod", "CreatedWorkload", "Created Workload: ns/test-group"),
                normal("pod2", "ExcessPodDeleted", "Excess pod deleted"),
            ],
        ),
        "excess pods before admission, youngest pods are deleted": Case(
            pods=[
                gpod().gate().created(NOW).obj(),
                gpod("pod2").gate().created(NOW + timedelta(minutes=1)).obj(),
                gpod("pod3").gate().created(NOW + timedelta(minutes=2)).obj(),
            ],
            want_pods=[gpod().gate().created(NOW).obj(), gpod("pod2").gate().created(NOW + timedelta(minutes=1)).obj()],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2")
                .owner("pod3")
                .obj()
            ],
            want_events=[normal("pod3", "ExcessPodDeleted", "Excess pod deleted")],
        ),
        "excess pods in pod set after admission, youngest pods are deleted": Case(
            pods=[gpod().created(NOW).obj(), gpod("pod2").gate().created(NOW + timedelta(minutes=2)).obj()],
            want_pods=[gpod().created(NOW).obj()],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("aaf269e6", 1), ps(ROLE, 1))
                .queue("user-queue")
                .reserve(RESERVED_MAIN)
                .owner("pod")
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps("aaf269e6", 1), ps(ROLE, 1))
                .queue("user-queue")
                .reserve(RESERVED_MAIN)
                .owner("pod")
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            expectations={"group/ns/another-group": ["pod"]},
            want_events=[normal("pod2", "ExcessPodDeleted", "Excess pod deleted")],
        ),
        "waiting to observe previous deletion of excess pod, no pods are deleted": Case(
            pods=[
                gpod(total=1).created(NOW).obj(),
                gpod("pod2", 1).uid("pod2").gate().created(NOW + timedelta(minutes=1)).obj(),
                gpod("pod3", 1).gate().created(NOW + timedelta(minutes=1)).obj(),
            ],
            want_pods=[
                gpod(total=1).created(NOW).obj(),
                gpod("pod2", 1).uid("pod2").gate().created(NOW + timedelta(minutes=1)).obj(),
                gpod("pod3", 1).gate().created(NOW + timedelta(minutes=1)).obj(),
            ],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 1))
                .queue("user-queue")
                .reserve(RESERVED_MAIN)
                .admitted()
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 1))
                .queue("user-queue")
                .reserve(RESERVED_MAIN)
                .admitted()
                .obj()
            ],
            expectations={"group/ns/test-group": ["pod2"]},
        ),
        "delete excess pod that is gated": Case(
            pods=[
                gpod().created(NOW).obj(),
                gpod("pod2").uid("pod2").created(NOW + timedelta(minutes=1)).obj(),
                gpod("pod3").gate().created(NOW + timedelta(minutes=1)).obj(),
            ],
            want_pods=[gpod().created(NOW).obj(), gpod("pod2").uid("pod2").created(NOW + timedelta(minutes=1)).obj()],
            workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2", "pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .obj()
            ],
            want_workloads=[
                W("test-group")
                .group()
                .pod_sets(ps(ROLE, 2))
                .queue("user-queue")
                .owner("pod")
                .owner("pod2", "pod2")
                .owner("pod3")
                .reserve(RESERVED_MAIN)
                .admitted()
                .obj()
            ],
            want_events=[normal("pod3", "ExcessPodDeleted", "Excess pod deleted")],
        ),
        "deletion of excess pod is blocked by another controller": Case(
            pods=[
                gpod(total=1).gate().created(NOW).obj(),
                BASE.clone()
                .name("pod2")
                .managed()
                .gate()
                .finalizer("kubernetes")
                .group(total=1)
                .created(NOW + timedelta(minutes=1))
                .deleted()
                .obj(),
            ],
            want_pods=[
                gpod(total=1).gate().created(NOW).obj(),
                BASE.clone()
                .name("pod2")
                .managed()
                .gate()
                .finalizer("kubernetes")
                .group(total=1)
                .created(NOW + timedelta(minutes=1))
                .deleted()
                .obj(),
            ],
            want_workloads=[gwl(1, owners=["pod", "pod2"]).obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "deleted pods in incomplete group are finalized": Case(
            pods=[
                BASE.clone().name(n).managed().fin().gate().group("group", 3).phase("Pending").deleted().obj()
                for n in ("p1", "p2")
            ],
            want_pods=[],
            want_events=[warning("p1", "ErrWorkloadCompose", "'group' group has fewer runnable pods than expected")],
        ),
        "finalize workload for non existent pod with FinishOrphanedWorkloads disabled": Case(
            gates={"FinishOrphanedWorkloads": False},
            key="ns/deleted_pod",
            workloads=[W("test-group").group().controller("deleted_pod", "").fin().obj()],
            want_workloads=[W("test-group").group().controller("deleted_pod", "").obj()],
        ),
        "finalize workload for non existent pod with FinishOrphanedWorkloads enabled": Case(
            gates={"FinishOrphanedWorkloads": True},
            key="ns/deleted_pod",
            workloads=[W("test-group").group().controller("deleted_pod", "").fin().obj()],
            want_workloads=[
                W("test-group")
                .group()
                .controller("deleted_pod", "")
                .cond(cond("Finished", "True", "OwnerNotFound", "The workload's owner no longer exists"))
                .obj()
            ],
        ),
        "foreign workload sharing the pod group name is not finalized": Case(
            gates={"PodIntegrationValidateGroupOwner": True, "FinishOrphanedWorkloads": True},
            key="group/ns/test-group",
            workloads=[W("test-group").job_controller("victim-job", "victim-job-uid").fin().obj()],
            want_workloads=[W("test-group").job_controller("victim-job", "victim-job-uid").fin().obj()],
        ),
        "foreign workload sharing the pod group name is finalized when the gate is disabled": Case(
            gates={"PodIntegrationValidateGroupOwner": False, "FinishOrphanedWorkloads": True},
            key="group/ns/test-group",
            workloads=[W("test-group").job_controller("victim-job", "victim-job-uid").fin().obj()],
            want_workloads=[
                W("test-group")
                .job_controller("victim-job", "victim-job-uid")
                .cond(cond("Finished", "True", "OwnerNotFound", "The workload's owner no longer exists"))
                .obj()
            ],
        ),
        "pod group workload is finalized when all pods are gone": Case(
            gates={"PodIntegrationValidateGroupOwner": True, "FinishOrphanedWorkloads": True},
            key="group/ns/test-group",
            workloads=[W("test-group").group().owner("deleted-pod", "deleted-pod-uid").fin().obj()],
            want_workloads=[W("test-group").group().owner("deleted-pod", "deleted-pod-uid").obj()],
        ),
        "prebuilt pod group workload without the group marker is still finalized": Case(
            gates={"PodIntegrationValidateGroupOwner": True, "FinishOrphanedWorkloads": True},
            key="group/ns/test-group",
            workloads=[W("test-group").owner("deleted-pod", "deleted-pod-uid").fin().obj()],
            want_workloads=[W("test-group").owner("deleted-pod", "deleted-pod-uid").obj()],
        ),
        "replacement pods are owning the workload": Case(
            pods=[
                BASE.clone().name("pod1").managed().group().phase("Failed").obj(),
                gpod("pod2").deleted().obj(),
                gpod("replacement-for-pod1").obj(),
            ],
            want_pods=[
                BASE.clone().name("pod1").managed().group().phase("Failed").obj(),
                gpod("pod2").deleted().obj(),
                gpod("replacement-for-pod1").obj(),
            ],
            workloads=[gw(3, "pod1", "pod2", fin=False).reserve(RESERVED_MAIN).admitted().cond(WAITING).obj()],
            want_workloads=[
                gw(3, "pod1", "pod2", "replacement-for-pod1", fin=False)
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_events=[normal("test-group", "OwnerReferencesAdded", "Added 1 owner reference(s)")],
        ),
        "all pods in a group should receive the event about preemption, unless already terminating": Case(
            pods=[gpod("pod1", 3).obj(), gpod("pod2", 3).deleted().obj(), gpod("pod3", 3).obj()],
            want_pods=[
                gpod("pod1", 3).target("WorkloadEvictedDueToPreempted", PREEMPTED["message"]).obj(),
                gpod("pod2", 3).deleted().obj(),
                gpod("pod3", 3).target("WorkloadEvictedDueToPreempted", PREEMPTED["message"]).obj(),
            ],
            workloads=[
                gw(3, "pod1", "pod2", "pod3", fin=False)
                .cond(PREEMPTED)
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
            want_workloads=[
                gw(3, "pod1", "pod2", "pod3", fin=False)
                .cond(PREEMPTED)
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
            want_events=[
                normal("pod1", "Stopped", PREEMPTED["message"]),
                normal("pod3", "Stopped", PREEMPTED["message"]),
            ],
        ),
        "preemption reason should be propagated to termination target": Case(
            pods=[gpod("pod1", 1).obj()],
            want_pods=[
                gpod("pod1", 1)
                .target("WorkloadEvictedDueToPodsReadyTimeout", "Workload evicted due to a PodsReady timeout")
                .obj()
            ],
            workloads=[
                gw(3, "pod1", fin=False)
                .cond(cond("Evicted", "True", "PodsReadyTimeout", "Workload evicted due to a PodsReady timeout"))
                .cond(
                    cond(
                        "WaitingForReplacementPods",
                        "True",
                        "PodsReadyTimeout",
                        "Workload evicted due to a PodsReady timeout",
                    )
                )
                .obj()
            ],
            want_workloads=[
                gw(3, "pod1", fin=False)
                .cond(cond("Evicted", "True", "PodsReadyTimeout", "Workload evicted due to a PodsReady timeout"))
                .cond(
                    cond(
                        "WaitingForReplacementPods",
                        "True",
                        "PodsReadyTimeout",
                        "Workload evicted due to a PodsReady timeout",
                    )
                )
                .obj()
            ],
            want_events=[normal("pod1", "Stopped", "Workload evicted due to a PodsReady timeout")],
        ),
        "the failed pods are finalized in order": Case(
            pods=[
                gpod("active-pod", 4).obj(),
                gpod("finished-with-error", 4).failed_at(NOW - timedelta(minutes=5)).obj(),
                gpod("deleted", 4).failed_at(NOW - timedelta(minutes=3)).deleted(NOW - timedelta(minutes=4)).obj(),
                gpod("finished-with-error2", 4).failed_at(NOW - timedelta(minutes=3)).obj(),
                gpod("replacement1", 4).obj(),
                gpod("replacement2", 4).obj(),
            ],
            want_pods=[
                gpod("active-pod", 4).obj(),
                BASE.clone()
                .name("finished-with-error")
                .managed()
                .group(total=4)
                .failed_at(NOW - timedelta(minutes=5))
                .obj(),
                gpod("finished-with-error2", 4).failed_at(NOW - timedelta(minutes=3)).obj(),
                gpod("replacement1", 4).obj(),
                gpod("replacement2", 4).obj(),
            ],
            workloads=[
                gw(4, "active-pod", "finished-with-error", "deleted", "finished-with-error2", fin=False)
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                gw(
                    4,
                    "active-pod",
                    "finished-with-error",
                    "deleted",
                    "finished-with-error2",
                    "replacement1",
                    "replacement2",
                    fin=False,
                )
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_events=[normal("test-group", "OwnerReferencesAdded", "Added 2 owner reference(s)")],
        ),
        "no failed pods are finalized while waiting for expectations": Case(
            pods=[
                gpod("active-pod").obj(),
                gpod("finished-with-error").failed_at(NOW - timedelta(minutes=5)).obj(),
                gpod("replacement").obj(),
            ],
            want_pods=[
                gpod("active-pod").obj(),
                gpod("finished-with-error").failed_at(NOW - timedelta(minutes=5)).obj(),
                gpod("replacement").obj(),
            ],
            workloads=[gw(2, "active-pod", "finished-with-error", fin=False).reserve(RESERVED_MAIN).admitted().obj()],
            want_workloads=[
                gw(2, "active-pod", "finished-with-error", fin=False).reserve(RESERVED_MAIN).admitted().obj()
            ],
            expectations={"group/ns/test-group": ["some-other-pod"]},
        ),
        "no unnecessary additional failed pods are finalized": Case(
            pods=[
                gpod("finished-with-error").failed_at(NOW - timedelta(minutes=5)).obj(),
                BASE.clone()
                .name("finished-with-error-no-finalizer")
                .managed()
                .group()
                .failed_at(NOW - timedelta(minutes=3))
                .obj(),
                gpod("replacement").obj(),
            ],
            want_pods=[
                gpod("finished-with-error").failed_at(NOW - timedelta(minutes=5)).obj(),
                BASE.clone()
                .name("finished-with-error-no-finalizer")
                .managed()
                .group()
                .failed_at(NOW - timedelta(minutes=3))
                .obj(),
                gpod("replacement").obj(),
            ],
            workloads=[
                gw(4, "finished-with-error", "finished-with-error-no-finalizer", fin=False)
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_workloads=[
                gw(4, "finished-with-error", "finished-with-error-no-finalizer", "replacement", fin=False)
                .reserve(RESERVED_MAIN)
                .admitted()
                .cond(WAITING)
                .obj()
            ],
            want_events=[normal("test-group", "OwnerReferencesAdded", "Added 1 owner reference(s)")],
        ),
        "workload is created with correct labels for a single pod": Case(
            label_keys_to_copy=["toCopyKey", "keyAbsentInThePod"],
            pods=[
                BASE.clone()
                .managed()
                .label("toCopyKey", "toCopyValue")
                .label("dontCopyKey", "dontCopyValue")
                .fin()
                .gate()
                .queue("test-queue")
                .obj()
            ],
            want_workloads=[
                W(SWL)
                .fin()
                .pod_sets(ps(gated=True, index=True))
                .queue("test-queue")
                .priority(0)
                .controller()
                .label("kueue.x-k8s.io/job-uid", "test-uid")
                .label("toCopyKey", "toCopyValue")
                .obj()
            ],
            want_events=[normal("pod", "CreatedWorkload", f"Created Workload: ns/{SWL}")],
        ),
        "workload is created with correct labels for pod group": Case(
            label_keys_to_copy=["toCopyKey1", "toCopyKey2"],
            pods=[
                gpod()
                .label("toCopyKey1", "toCopyValue1")
                .label("dontCopyKey", "dontCopyValue")
                .gate()
                .label("kueue.x-k8s.io/pod-group-pod-index", "0")
                .obj(),
                gpod("pod2")
                .label("toCopyKey1", "toCopyValue1")
                .label("toCopyKey2", "toCopyValue2")
                .label("dontCopyKey", "dontCopyValue")
                .gate()
                .label("kueue.x-k8s.io/pod-group-pod-index", "1")
                .obj(),
            ],
            want_workloads=[gwl().label("toCopyKey1", "toCopyValue1").label("toCopyKey2", "toCopyValue2").obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "reconciler returns error in case pod group pod index is bigger or equal pod group total count": Case(
            pods=[gpod(total=1).gate().label("kueue.x-k8s.io/pod-group-pod-index", "1").obj()],
            want_err="validation error",
        ),
        "reconciler returns error in case pod group pod index is less than 0": Case(
            pods=[gpod(total=1).gate().label("kueue.x-k8s.io/pod-group-pod-index", "-1").obj()],
            want_err="invalid unsigned integer",
        ),
        "reconciler returns error in case of label mismatch in pod group": Case(
            label_keys_to_copy=["toCopyKey1", "toCopyKey2"],
            pods=[
                gpod().label("toCopyKey1", "toCopyValue1").label("dontCopyKey", "dontCopyValue").gate().obj(),
                gpod("pod2")
                .label("toCopyKey1", "otherValue")
                .label("toCopyKey2", "toCopyValue2")
                .label("dontCopyKey", "dontCopyValue")
                .gate()
                .obj(),
            ],
            want_err="constructing workload: pods have different label values",
        ),
        "workload is created with correct annotations for a single pod": Case(
            gates={"WorkloadIdentifierAnnotations": False, "CustomMetricLabels": True},
            annotations_to_copy=["toCopyAnn", "keyAbsentInThePod"],
            pods=[
                BASE.clone()
                .managed()
                .ann("toCopyAnn", "toCopyValue")
                .ann("dontCopyAnn", "dontCopyValue")
                .fin()
                .gate()
                .queue("test-queue")
                .obj()
            ],
            want_workloads=[
                W(SWL)
                .fin()
                .pod_sets(ps(gated=True, index=True))
                .queue("test-queue")
                .priority(0)
                .controller()
                .label("kueue.x-k8s.io/job-uid", "test-uid")
                .ann("toCopyAnn", "toCopyValue")
                .obj()
            ],
            want_events=[normal("pod", "CreatedWorkload", f"Created Workload: ns/{SWL}")],
        ),
        "workload is created with correct annotations for pod group": Case(
            gates={"WorkloadIdentifierAnnotations": False, "CustomMetricLabels": True},
            annotations_to_copy=["toCopyAnn1", "toCopyAnn2"],
            pods=[
                gpod()
                .ann("toCopyAnn1", "toCopyValue1")
                .ann("dontCopyAnn", "dontCopyValue")
                .gate()
                .label("kueue.x-k8s.io/pod-group-pod-index", "0")
                .obj(),
                gpod("pod2")
                .ann("toCopyAnn1", "toCopyValue1")
                .ann("toCopyAnn2", "toCopyValue2")
                .ann("dontCopyAnn", "dontCopyValue")
                .gate()
                .label("kueue.x-k8s.io/pod-group-pod-index", "1")
                .obj(),
            ],
            want_workloads=[gwl().ann("toCopyAnn1", "toCopyValue1").ann("toCopyAnn2", "toCopyValue2").obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "reconciler returns error in case of annotation mismatch in pod group": Case(
            gates={"WorkloadIdentifierAnnotations": False, "CustomMetricLabels": True},
            annotations_to_copy=["toCopyAnn1", "toCopyAnn2"],
            pods=[
                gpod().ann("toCopyAnn1", "toCopyValue1").ann("dontCopyAnn", "dontCopyValue").gate().obj(),
                gpod("pod2")
                .ann("toCopyAnn1", "otherValue")
                .ann("toCopyAnn2", "toCopyValue2")
                .ann("dontCopyAnn", "dontCopyValue")
                .gate()
                .obj(),
            ],
            want_err="constructing workload: pods have different annotation values",
        ),
        "workload is created without annotations for pod group when CustomMetricLabels is disabled": Case(
            gates={"WorkloadIdentifierAnnotations": False, "CustomMetricLabels": False},
            annotations_to_copy=["toCopyAnn1", "toCopyAnn2"],
            pods=[
                gpod()
                .ann("toCopyAnn1", "toCopyValue1")
                .ann("dontCopyAnn", "dontCopyValue")
                .gate()
                .label("kueue.x-k8s.io/pod-group-pod-index", "0")
                .obj(),
                gpod("pod2")
                .ann("toCopyAnn1", "toCopyValue1")
                .ann("toCopyAnn2", "toCopyValue2")
                .ann("dontCopyAnn", "dontCopyValue")
                .gate()
                .label("kueue.x-k8s.io/pod-group-pod-index", "1")
                .obj(),
            ],
            want_workloads=[gwl().obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "annotations mismatch is ignored for pod group when CustomMetricLabels is disabled": Case(
            gates={"WorkloadIdentifierAnnotations": False, "CustomMetricLabels": False},
            annotations_to_copy=["toCopyAnn1", "toCopyAnn2"],
            pods=[
                gpod().ann("toCopyAnn1", "toCopyValue1").ann("dontCopyAnn", "dontCopyValue").gate().obj(),
                gpod("pod2")
                .ann("toCopyAnn1", "otherValue")
                .ann("toCopyAnn2", "toCopyValue2")
                .ann("dontCopyAnn", "dontCopyValue")
                .gate()
                .obj(),
            ],
            want_workloads=[gwl().obj()],
            want_events=[normal("pod", "CreatedWorkload", "Created Workload: ns/test-group")],
        ),
        "admission check message is recorded as event for a single pod": Case(
            pods=[BASE.clone().managed().fin().gate().obj()],
            workloads=[
                W(SWL)
                .fin()
                .active(False)
                .pod_sets(ps(gated=True))
                .queue("user-queue")
                .priority(0)
                .controller()
                .admission_checks(
                    {"name": "acName1", "state": "Pending", "message": "Not admitted."},
                    {"name": "acName2", "state": "Pending", "message": "Test message."},
                )
                .reserve(RESERVED_MAIN)
                .admitted(False)
                .obj()
            ],
            want_workloads=[
                W(SWL)
                .fin()
                .active(False)
                .pod_sets(ps(gated=True))
                .queue("user-queue")
                .priority(0)
                .controller()
                .admission_checks(
                    {"name": "acName1", "state": "Pending", "message": "Not admitted."},
                    {"name": "acName2", "state": "Pending", "message": "Test message."},
                )
                .reserve(RESERVED_MAIN)
                .admitted(False)
                .obj()
            ],
            want_events=[normal("pod", "UpdatedAdmissionCheck", "acName1: Not admitted.; acName2: Test message.")],
        ),
        "admission check message is recorded as event for each pod in the group": Case(
            pods=[gpod("pod1").gate().obj(), gpod("pod2").gate().obj()],
            workloads=[
                gw(2, "pod1", "pod2")
                .active(False)
                .pod_sets(ps(ROLE, 2, gated=True))
                .priority(0)
                .admission_checks(
                    {"name": "acName", "state": "Pending", "message": "Not admitted, ETA: 2024-02-22T10:36:40Z."}
                )
                .reserve(RESERVED_MAIN)
                .admitted(False)
                .obj()
            ],
            want_workloads=[
                gw(2, "pod1", "pod2")
                .active(False)
                .pod_sets(ps(ROLE, 2, gated=True))
                .priority(0)
                .admission_checks(
                    {"name": "acName", "state": "Pending", "message": "Not admitted, ETA: 2024-02-22T10:36:40Z."}
                )
                .reserve(RESERVED_MAIN)
                .admitted(False)
                .obj()
            ],
            want_events=[
                normal("pod1", "UpdatedAdmissionCheck", "acName: Not admitted, ETA: 2024-02-22T10:36:40Z."),
                normal("pod2", "UpdatedAdmissionCheck", "acName: Not admitted, ETA: 2024-02-22T10:36:40Z."),
            ],
        ),
        "deleted unschedulable pods are finalized": Case(
            pods=[
                gpod("pod1").phase("Running").labels_started().created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2")
                .deleted()
                .phase("Pending")
                .created(NOW - timedelta(hours=1))
                .ann("kueue.x-k8s.io/workload", "test-group")
                .obj(),
                gpod("replacement").gate().created(NOW).ann("kueue.x-k8s.io/workload", "test-group").obj(),
            ],
            want_pods=[
                gpod("pod1").phase("Running").labels_started().created(NOW - timedelta(hours=1)).obj(),
                gpod("replacement").labels_started().ann("kueue.x-k8s.io/workload", "test-group").created(NOW).obj(),
            ],
            workloads=[gw(2, "pod1", "pod2").priority(0).reserve(psa(ROLE, 2)).admitted().obj()],
            want_workloads=[gw(2, "pod1", "pod2", "replacement").priority(0).reserve(psa(ROLE, 2)).admitted().obj()],
            want_events=[
                normal("replacement", "Started", "Admitted by clusterQueue cq"),
                normal("test-group", "OwnerReferencesAdded", "Added 1 owner reference(s)"),
            ],
        ),
        "shouldn't set waiting for pods ready condition to true when all pods pending": Case(
            pods=[gpod(n).phase("Pending").created(NOW - timedelta(hours=1)).obj() for n in ("pod1", "pod2")],
            want_pods=[gpod(n).phase("Pending").created(NOW - timedelta(hours=1)).obj() for n in ("pod1", "pod2")],
            workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().obj()],
            want_workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().obj()],
        ),
        "should set waiting for pods ready condition to true when at least one pod failed": Case(
            pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            want_pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().obj()],
            want_workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().cond(WAITING).obj()],
        ),
        "should set waiting for pods ready condition to true when at least one pod deleted": Case(
            pods=[
                gpod("pod1").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").deleted().created(NOW - timedelta(hours=1)).obj(),
            ],
            want_pods=[
                gpod("pod1").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").deleted().created(NOW - timedelta(hours=1)).obj(),
            ],
            workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().obj()],
            want_workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().cond(WAITING).obj()],
        ),
        "should set waiting for pods ready condition to true when workload was evicted": Case(
            pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").deleted().phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            want_pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().cond(PREEMPTED).obj()],
            want_workloads=[
                gw(2, "pod1", "pod2")
                .reserve(psa(ROLE, 2))
                .admitted()
                .cond(PREEMPTED)
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
        ),
        "should update reason and message on waiting for pods ready condition when workload was evicted again": Case(
            pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").deleted().phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            want_pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            workloads=[
                gw(2, "pod1", "pod2")
                .reserve(psa(ROLE, 2))
                .admitted()
                .cond(cond("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout"))
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
            want_workloads=[
                gw(2, "pod1", "pod2")
                .reserve(psa(ROLE, 2))
                .admitted()
                .cond(cond("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout"))
                .cond(cond("WaitingForReplacementPods", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout"))
                .obj()
            ],
        ),
        "shouldn't change waiting for pods ready condition when it's true and workload was readmitted": Case(
            pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            want_pods=[
                gpod("pod1").phase("Failed").created(NOW - timedelta(hours=1)).obj(),
                gpod("pod2").phase("Pending").created(NOW - timedelta(hours=1)).obj(),
            ],
            workloads=[
                gw(2, "pod1", "pod2")
                .reserve(psa(ROLE, 2))
                .admitted()
                .cond(dict(PREEMPTED, status="False"))
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
            want_workloads=[
                gw(2, "pod1", "pod2")
                .reserve(psa(ROLE, 2))
                .admitted()
                .cond(dict(PREEMPTED, status="False"))
                .cond(cond("WaitingForReplacementPods", "True", "Preempted", PREEMPTED["message"]))
                .obj()
            ],
        ),
        "should set waiting for pods ready condition to false when pods was replaced": Case(
            pods=[gpod(n).phase("Pending").created(NOW - timedelta(hours=1)).obj() for n in ("pod1", "pod2")],
            want_pods=[gpod(n).phase("Pending").created(NOW - timedelta(hours=1)).obj() for n in ("pod1", "pod2")],
            workloads=[gw(2, "pod1", "pod2").reserve(psa(ROLE, 2)).admitted().cond(WAITING).obj()],
            want_workloads=[
                gw(2, "pod1", "pod2")
                .reserve(psa(ROLE, 2))
                .admitted()
                .cond(cond("WaitingForReplacementPods", "False", "PodsReady", "No pods need replacement"))
                .obj()
            ],
        ),
    }
)


@pytest.mark.parametrize("case", cases(RECONCILER))
def test_reconciler(case: Case) -> None:
    check(case)
