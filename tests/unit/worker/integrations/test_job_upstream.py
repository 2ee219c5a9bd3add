"""Upstream's batch/v1 Job reconciler scenarios, run end to end against a fake API.

Ported from upstream (commit ff69552e79) `pkg/controller/jobs/job/job_controller_test.go`:
`TestReconciler` and the other non-TAS tests of that file (`TestPodsReady`, `TestPodSetsInfo`,
`TestPodSets`, `TestCleanLabels`, `TestTerminalIndexesCount`, `TestReclaimablePods`). Every
`TestReconciler` case starts from the same Job, Workloads and cluster objects as upstream, runs one
reconcile of the Job's key through `JobReconciler` (the pure `plan` and its executor), then compares
what a user would see: the Job, the Workloads and the events. Case ids are upstream's names.

Comparisons follow upstream's options: the Job's ownerReferences and resourceVersion, the
Workloads' names, ownerReferences (except for prebuilt Workloads) and resourceVersions, and
conditions' lastTransitionTime are ignored; empty collections equal absent ones; conditions are
compared by type. Two differences: the Job's annotations are compared (upstream ignores them; the
`kueue.x-k8s.io/stopping` annotation must be gone after a stop), and where upstream's fake client
cannot clear `status.admission` (its expectation keeps the admission of a Workload whose reservation
the reconcile released), the expected Workload has none, which is what a real API server shows
(`evicted`).

The fake API behaves as upstream's fake client where these scenarios depend on it: a merge patch or
update carrying a stale resourceVersion is a conflict, `…/status` takes merge patches, and DELETE of
an object that still has finalizers only sets its deletionTimestamp.

Left out (TAS, MultiKueue, ElasticJobs/workload slices, ManagedBy, alpha gates): the six elastic
`the workload slice …` / `the admitted slice …` cases, `TestPodSetsInfo/replace stale workload slice
annotation` and the TAS-enabled `TestPodSets` cases.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.api import jobs
from webhook.config import (
    Configuration,
    Integrations,
    Metrics,
    MetricsCustomLabel,
    ObjectRetentionPolicies,
    WaitForPodsReady,
    WorkloadRetentionPolicy,
)
from webhook.worker import events, reporter
from webhook.worker.integrations import batchjob as j
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

NOW = datetime.now(UTC).replace(microsecond=0)
WL_FIN = "kueue.x-k8s.io/resource-in-use"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
PODSET = "kueue.x-k8s.io/podset"
LQ_LABEL = "kueue.x-k8s.io/local-queue-name"
CQ_LABEL = "kueue.x-k8s.io/cluster-queue-name"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
JOB_PATH = k.object_path("batch/v1", "jobs", "ns")
WL_API = "kueue.x-k8s.io/v1beta2"
CQ_100 = "cq" * 50


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def workload_name(name: str, uid: str) -> str:
    return j.workload_name(name, uid)


# --- builders (upstream's testing wrappers, as plain dicts) -----------------------------------------


class J:
    """`testingjob.MakeJob(name, ns)`: suspended, parallelism 1, one container `c`."""

    def __init__(self, name: str = "job", ns: str = "ns") -> None:
        self.o: dict[str, Any] = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "annotations": {}},
            "spec": {
                "parallelism": 1,
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": {},
                        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {}, "limits": {}}}],
                    }
                },
            },
        }

    def clone(self) -> J:
        out = J()
        out.o = copy.deepcopy(self.o)
        return out

    @property
    def name(self) -> str:
        return str(self.o["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.o["metadata"].get("uid", ""))

    def _meta(self, key: str) -> dict[str, Any]:
        return self.o["metadata"].setdefault(key, {})  # type: ignore[no-any-return]

    def _tspec(self) -> dict[str, Any]:
        return self.o["spec"]["template"]["spec"]  # type: ignore[no-any-return]

    def _status(self) -> dict[str, Any]:
        return self.o.setdefault("status", {})  # type: ignore[no-any-return]

    def suspend(self, value: bool) -> J:
        self.o["spec"]["suspend"] = value
        return self

    def parallelism(self, n: int) -> J:
        self.o["spec"]["parallelism"] = n
        return self

    def completions(self, n: int) -> J:
        self.o["spec"]["completions"] = n
        return self

    def indexed(self) -> J:
        self.o["spec"]["completionMode"] = "Indexed"
        return self

    def request(self, resource: str, value: str) -> J:
        self._tspec()["containers"][0]["resources"]["requests"][resource] = value
        return self

    def image(self, image: str) -> J:
        self._tspec()["containers"][0]["image"] = image
        return self

    def label(self, key: str, value: str) -> J:
        self._meta("labels")[key] = value
        return self

    def queue(self, name: str) -> J:
        return self.label("kueue.x-k8s.io/queue-name", name)

    def wpc(self, name: str) -> J:
        return self.label("kueue.x-k8s.io/priority-class", name)

    def prebuilt(self, name: str) -> J:
        return self.label(PREBUILT, name)

    def ann(self, key: str, value: str) -> J:
        self._meta("annotations")[key] = value
        return self

    def uid_(self, uid: str) -> J:
        self.o["metadata"]["uid"] = uid
        return self

    def priority_class(self, name: str) -> J:
        self._tspec()["priorityClassName"] = name
        return self

    def node_selector(self, key: str, value: str) -> J:
        self._tspec().setdefault("nodeSelector", {})[key] = value
        return self

    def toleration(self, tol: Mapping[str, Any]) -> J:
        self._tspec().setdefault("tolerations", []).append(dict(tol))
        return self

    def pod_label(self, key: str, value: str) -> J:
        self.o["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})[key] = value
        return self

    def pod_ann(self, key: str, value: str) -> J:
        self.o["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[key] = value
        return self

    def started(self, cq: str = "cq", queue: str = "foo") -> J:
        """What starting with the `cq` admission (no flavor labels) adds to the template."""
        return self.suspend(False).pod_label(PODSET, "main").pod_label(LQ_LABEL, queue).pod_label(CQ_LABEL, cq)

    def owner(self, name: str) -> J:
        """`OwnerReference(name, Job GVK)`: a controller reference whose UID is the name."""
        self.o["metadata"].setdefault("ownerReferences", []).append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": name,
                "uid": name,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        )
        return self

    def deleted(self, t: datetime = NOW) -> J:
        self.o["metadata"]["deletionTimestamp"] = ts(t)
        return self

    def finalizers(self, *names: str) -> J:
        self.o["metadata"]["finalizers"] = list(names)
        return self

    def start_time(self, t: datetime = NOW) -> J:
        self._status()["startTime"] = ts(t)
        return self

    def active(self, n: int) -> J:
        self._status()["active"] = n
        return self

    def ready(self, n: int) -> J:
        self._status()["ready"] = n
        return self

    def failed(self, n: int) -> J:
        self._status()["failed"] = n
        return self

    def succeeded(self, n: int) -> J:
        self._status()["succeeded"] = n
        return self

    def condition(self, ctype: str, message: str = "") -> J:
        self._status().setdefault("conditions", []).append({"type": ctype, "status": "True", "message": message})
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


def base_job() -> J:
    """`baseJobWrapper`: queue `foo`, parallelism 10, one cpu, image ""."""
    return J().queue("foo").parallelism(10).request("cpu", "1").image("")


def ps(
    count: int = 1, *, name: str = "main", cpu: str | None = "1", min_count: int | None = None, **spec: Any
) -> dict[str, Any]:
    """`MakePodSet(name, count)[.Request(cpu, ...)][.SetMinimumCount(n)]` and template spec fields."""
    template: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu} if cpu else {}}}],
    }
    template.update(spec)
    out: dict[str, Any] = {"name": name, "count": count, "template": {"spec": template}}
    if min_count is not None:
        out["minCount"] = min_count
    return out


def psa(count: int | None = 1, *, name: str = "main", flavors: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`MakePodSetAssignment(name)[.Count(n)]` (count 1 unless given)."""
    out: dict[str, Any] = {"name": name, "flavors": dict(flavors or {}), "resourceUsage": {}}
    if count is not None:
        out["count"] = count
    return out


def cond(
    ctype: str,
    status: str = "True",
    reason: str = "",
    message: str = "",
    *,
    at: datetime | None = None,
    generation: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ctype, "status": status, "reason": reason, "message": message}
    if at is not None:
        out["lastTransitionTime"] = ts(at)
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def check(name: str, state: str = "Ready", message: str = "", **updates: Any) -> dict[str, Any]:
    """An admission check state; `updates` (labels/annotations/nodeSelector) become a `main` PodSetUpdate."""
    out: dict[str, Any] = {"name": name, "state": state, "message": message, "lastTransitionTime": ts(NOW)}
    if updates:
        key = {"labels": "labels", "annotations": "annotations", "node_selector": "nodeSelector"}
        out["podSetUpdates"] = [{"name": "main", **{key[k]: dict(v) for k, v in updates.items()}}]
    return out


class W:
    """`utiltestingapi.MakeWorkload(name, "ns")`: one podSet `main` of one pod."""

    def __init__(self, name: str = "wl", ns: str = "ns") -> None:
        self.o: dict[str, Any] = {
            "apiVersion": WL_API,
            "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"podSets": [ps(1, cpu=None)]},
        }

    def clone(self) -> W:
        out = W()
        out.o = copy.deepcopy(self.o)
        return out

    def _status(self) -> dict[str, Any]:
        return self.o.setdefault("status", {})  # type: ignore[no-any-return]

    def queue(self, name: str) -> W:
        self.o["spec"]["queueName"] = name
        return self

    def fin(self) -> W:
        self.o["metadata"]["finalizers"] = [WL_FIN]
        return self

    def pod_sets(self, *sets: dict[str, Any]) -> W:
        self.o["spec"]["podSets"] = list(sets)
        return self

    def priority(self, value: int) -> W:
        self.o["spec"]["priority"] = value
        return self

    def wpc_ref(self, name: str) -> W:
        self.o["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}
        return self

    def pc_ref(self, name: str) -> W:
        self.o["spec"]["priorityClassRef"] = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}
        return self

    def max_exec(self, seconds: int) -> W:
        self.o["spec"]["maximumExecutionTimeSeconds"] = seconds
        return self

    def active(self, value: bool) -> W:
        self.o["spec"]["active"] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> W:
        self.o["metadata"]["labels"] = dict(labels)
        return self

    def annotations(self, annotations: Mapping[str, str]) -> W:
        self.o["metadata"]["annotations"] = dict(annotations)
        return self

    def generation(self, g: int) -> W:
        self.o["metadata"]["generation"] = g
        return self

    def controller(self, name: str, uid: str) -> W:
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

    def reserve(self, cq: str = "cq", *assignments: dict[str, Any], at: datetime = NOW) -> W:
        """`ReserveQuotaAt`: sets the admission and replaces all conditions with QuotaReserved."""
        self._status()["admission"] = {"clusterQueue": cq, "podSetAssignments": list(assignments) or [psa()]}
        self._status()["conditions"] = [
            cond("QuotaReserved", "True", "AdmittedByTest", f"Admitted by ClusterQueue {cq}", at=at)
        ]
        return self

    def admitted(self, value: bool = True, at: datetime = NOW) -> W:
        """`AdmittedAt(value, at)`."""
        cq = (self._status().get("admission") or {}).get("clusterQueue", "")
        return self.cond(
            cond("Admitted", "True" if value else "False", "ByTest", f"Admitted by ClusterQueue {cq}", at=at)
        )

    def cond(self, new: dict[str, Any]) -> W:
        """`apimeta.SetStatusCondition`: the transition time changes only when the status does."""
        new = {"lastTransitionTime": ts(NOW), **new}
        conds = self._status().setdefault("conditions", [])
        for i, have in enumerate(conds):
            if have["type"] == new["type"]:
                if have["status"] == new["status"]:
                    new["lastTransitionTime"] = have["lastTransitionTime"]
                conds[i] = new
                break
        else:
            conds.append(new)
        return self

    def checks(self, *states: dict[str, Any]) -> W:
        self._status().setdefault("admissionChecks", []).extend(states)
        return self

    def past_admitted(self, seconds: int) -> W:
        self._status()["accumulatedPastExecutionTimeSeconds"] = seconds
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


def base_wl() -> W:
    """`baseWorkloadWrapper`: queue `foo`, finalizer, 10 pods of one cpu, quota reserved in `cq` (count 10)."""
    return W().queue("foo").fin().pod_sets(ps(10)).reserve("cq", psa(10))


def evicted(w: W, reason: str, message: str, *, requeued: bool = False) -> W:
    """What clearing the reservation of an evicted, stopped Job's Workload leaves on it. Upstream's
    expectation keeps `status.admission` (its fake client cannot clear it); the API server clears it."""
    w._status().pop("admission", None)
    return (
        w.cond(cond("Admitted", "False", "NoReservation", "The workload has no reservation"))
        .cond(cond("QuotaReserved", "False", "PendingEvaluation", message))
        .cond(cond("Requeued", "True" if requeued else "False", reason, message))
        .cond(cond("Evicted", "True", reason, message))
    )


TOL1 = {"key": "tolerationkey1", "operator": "Exists", "effect": "NoSchedule"}
TOL2 = {"key": "tolerationkey2", "operator": "Exists", "effect": "NoSchedule"}
AC_LABEL = check("check", labels={"ac-key": "ac-value"})


def wpc(name: str, value: int) -> tuple[str, dict[str, Any]]:
    return "workloadpriorityclasses", {
        "apiVersion": WL_API,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def pc(name: str, value: int) -> tuple[str, dict[str, Any]]:
    return "priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


Event = tuple[str, str, str, str]  # (namespace/name, type, reason, message)


def normal(reason: str, message: str, key: str = "ns/job") -> Event:
    return (key, "Normal", reason, message)


def warning(reason: str, message: str, key: str = "ns/job") -> Event:
    return (key, "Warning", reason, message)


# --- the fake API -----------------------------------------------------------------------------------


class _Kube(FakeKube):
    """Optimistic locking on patches, merge patches of `…/status`, finalizer-aware deletion."""

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
            sent = (body.get("metadata") or {}).get("resourceVersion")
            current = self.objects.get(target)
            if sent is not None and current is not None and sent != current["metadata"]["resourceVersion"]:
                raise k.Conflict(409, "the object has been modified")
            if path != target:
                if current is None:
                    raise k.NotFound(404, f"{target} not found")
                return super().request(
                    method, target, body={"status": body.get("status") or {}}, content_type=content_type
                )
        if method == "DELETE" and self.objects.get(path, {}).get("metadata", {}).get("finalizers"):
            with self._lock:
                self.calls.append((method, path))
                self.objects[path]["metadata"].setdefault("deletionTimestamp", ts(NOW))
                return copy.deepcopy(self.objects[path])
        out = super().request(method, path, query=query, body=body, content_type=content_type, timeout=timeout)
        meta = (self.objects.get(path) or {}).get("metadata") or {}
        if method in ("PATCH", "PUT") and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            with self._lock:
                self.objects.pop(path)
        return out


class _Recorder(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="test", stop=threading.Event())
        self.seen: list[Event] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        meta = obj.get("metadata") or {}
        self.seen.append((f"{meta.get('namespace')}/{meta.get('name')}", etype, reason, events.truncate_note(note)))


# --- the scenario -----------------------------------------------------------------------------------


@dataclass
class Case:
    job: dict[str, Any] | None
    want_job: dict[str, Any] | None = None  # None: the Job is gone after the reconcile
    workloads: Sequence[dict[str, Any]] = ()
    want_workloads: Sequence[dict[str, Any]] = ()
    want_events: Sequence[Event] = ()
    want_err: str | None = None  # None: no error; "": any error; else a part of the error
    key: str = ""  # default: the Job's key
    other_jobs: Sequence[dict[str, Any]] = ()
    classes: Sequence[tuple[str, dict[str, Any]]] = ()
    gates: Mapping[str, bool] = field(
        default_factory=lambda: {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}
    )
    wait_for_pods_ready: bool = False
    manage_without_queue_name: bool = False
    namespace_selector: Mapping[str, Any] | None = None  # None: upstream's nil selector (every namespace)
    label_keys_to_copy: Sequence[str] = ()
    custom_labels: Sequence[MetricsCustomLabel] = ()  # metrics.customLabels
    after_deactivated_by_kueue_s: float | None = None


@dataclass
class Outcome:
    job: dict[str, Any] | None
    workloads: list[dict[str, Any]]
    events: list[Event]
    error: str | None


def _config(case: Case) -> Configuration:
    return Configuration(
        manage_jobs_without_queue_name=case.manage_without_queue_name,
        managed_jobs_namespace_selector=case.namespace_selector,  # type: ignore[arg-type]
        integrations=Integrations(label_keys_to_copy=tuple(case.label_keys_to_copy)),
        metrics=Metrics(custom_labels=tuple(case.custom_labels)),
        wait_for_pods_ready=WaitForPodsReady() if case.wait_for_pods_ready else None,
        object_retention_policies=ObjectRetentionPolicies(
            WorkloadRetentionPolicy(after_deactivated_by_kueue_s=case.after_deactivated_by_kueue_s)
        ),
        feature_gates=dict(case.gates),
    )


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}},
    }


def run(case: Case) -> Outcome:
    kube, store, recorder = _Kube(), Store(), _Recorder()
    requeued: list[tuple[str, float]] = []
    reconciler = j.JobReconciler(
        kube,
        store,
        _config(case),
        recorder,
        clock=lambda: NOW,
        requeue_after=lambda key, delay: requeued.append((key, delay)),
    )

    def add(kind: str, path: str, obj: dict[str, Any]) -> None:
        full = f"{path}/{obj['metadata']['name']}"
        kube.put(full, obj)
        store.put(kind, copy.deepcopy(kube.objects[full]))

    add("namespaces", "/api/v1/namespaces", _namespace("ns"))
    add(
        "namespaces",
        "/api/v1/namespaces",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "labelled-ns", "labels": {"managed-by-kueue": "true"}},
        },
    )
    add(
        "resourceflavors",
        k.object_path(WL_API, "resourceflavors", None),
        {"apiVersion": WL_API, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    )
    for kind, obj in case.classes:
        api = WL_API if kind == "workloadpriorityclasses" else "scheduling.k8s.io/v1"
        add(kind, k.object_path(api, kind, None), obj)
    job = case.job
    for other in case.other_jobs:
        add("jobs", JOB_PATH, other)
    if job is not None:
        add("jobs", k.object_path("batch/v1", "jobs", job["metadata"]["namespace"]), job)
    prebuilt = "" if job is None else (job["metadata"].get("labels") or {}).get(PREBUILT, "")
    for wl in case.workloads:
        wl = copy.deepcopy(wl)
        owners = wl["metadata"].get("ownerReferences") or ()
        if job is not None and not prebuilt and not any(o.get("controller") for o in owners):
            wl["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job["metadata"]["name"],
                    "uid": job["metadata"].get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        add("workloads", k.object_path(WL_API, "workloads", wl["metadata"]["namespace"]), wl)

    key = case.key or f"{job['metadata']['namespace']}/{job['metadata']['name']}" if job is not None else case.key
    error: str | None = None
    try:
        reconciler.reconcile(key)
    except Retry as exc:
        error = str(exc)
    ns, name = key.split("/", 1)
    return Outcome(
        job=copy.deepcopy(kube.objects.get(k.object_path("batch/v1", "jobs", ns, name))),
        workloads=[copy.deepcopy(o) for p, o in sorted(kube.objects.items()) if "/workloads/" in p],
        events=recorder.seen,
        error=error,
    )


def _drop_empty(value: Any) -> Any:
    """`cmpopts.EquateEmpty` plus Go's zero values for strings: nil, "", {} and [] are absent."""
    if isinstance(value, Mapping):
        out = {key: _drop_empty(v) for key, v in value.items()}
        return {key: v for key, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list | tuple):
        return [_drop_empty(v) for v in value]
    return value


def _norm_job(obj: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    out = copy.deepcopy(dict(obj))
    out.pop("apiVersion", None)
    out.pop("kind", None)
    for key in ("resourceVersion", "ownerReferences"):
        out["metadata"].pop(key, None)
    return _drop_empty(out)  # type: ignore[no-any-return]


def _norm_wl(obj: Mapping[str, Any], *, owners: bool) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    out.pop("apiVersion", None)
    out.pop("kind", None)
    for key in ("name", "resourceVersion") if owners else ("name", "resourceVersion", "ownerReferences"):
        out["metadata"].pop(key, None)
    status = out.get("status") or {}
    conds = sorted(status.get("conditions") or (), key=lambda x: x["type"])
    for x in conds:
        x.pop("lastTransitionTime", None)
        if not x.get("observedGeneration"):
            x.pop("observedGeneration", None)
    status["conditions"] = conds
    for state in status.get("admissionChecks") or ():
        state.pop("lastTransitionTime", None)
    return _drop_empty(out)  # type: ignore[no-any-return]


def check_outcome(case: Case, got: Outcome) -> None:
    owners = bool(case.job and (case.job["metadata"].get("labels") or {}).get(PREBUILT))
    assert got.events == list(case.want_events)
    want_wls = sorted(case.want_workloads, key=lambda w: w["metadata"]["name"])
    assert [_norm_wl(w, owners=owners) for w in got.workloads] == [_norm_wl(w, owners=owners) for w in want_wls]
    assert _norm_job(got.job) == _norm_job(case.want_job)
    if case.want_err is None:
        assert got.error is None
    else:
        assert got.error is not None and case.want_err in got.error


# --- TestReconciler ---------------------------------------------------------------------------------

READY_MSG = "All pods reached readiness and the workload is running"
NOT_READY_MSG = "Not all pods are ready or succeeded"
RECOVERY_MSG = "At least one pod has failed, waiting for recovery"
DEACTIVATED = "The workload is deactivated"
BY_KUEUE = "DeactivatedDueToRequeuingLimitExceeded"
OWNER_GONE = cond("Finished", "True", "OwnerNotFound", "The workload's owner no longer exists")
STARTED = normal("Started", "Admitted by clusterQueue cq")


def created(name: str = "job", uid: str = "", ns: str = "ns") -> Event:
    return normal("CreatedWorkload", f"Created Workload: {ns}/{workload_name(name, uid)}", f"{ns}/{name}")


def pods_ready(status: str, reason: str, message: str) -> dict[str, Any]:
    return cond("PodsReady", status, reason, message)


def new_wl(queue: str = "foo", uid: str = "", **labels: str) -> W:
    """The Workload the reconciler creates for `base_job()` (priority 0, job-uid label)."""
    return W("job").fin().pod_sets(ps(10)).queue(queue).priority(0).labels({JOB_UID_LABEL: uid, **labels})


RECONCILER_CASES = [
    pytest.param(
        Case(
            key="ns/deleted_job",
            job=None,
            gates={"FinishOrphanedWorkloads": False},
            workloads=[W().fin().controller("deleted_job", "deleted_job").obj()],
            want_workloads=[W().controller("deleted_job", "deleted_job").obj()],
        ),
        id="job is not found with FinishOrphanedWorkloads disabled",
    ),
    pytest.param(
        Case(
            key="ns/deleted_job",
            job=None,
            gates={"FinishOrphanedWorkloads": True},
            workloads=[W().fin().controller("deleted_job", "deleted_job").obj()],
            want_workloads=[W().controller("deleted_job", "deleted_job").cond(OWNER_GONE).obj()],
        ),
        id="job is not found with FinishOrphanedWorkloads enabled",
    ),
    pytest.param(
        Case(
            gates={"FinishOrphanedWorkloads": False},
            job=base_job().deleted().finalizers(WL_FIN).obj(),
            want_job=base_job().deleted().finalizers(WL_FIN).obj(),
            workloads=[W().fin().controller("job", "").obj()],
            want_workloads=[W().controller("job", "").obj()],
        ),
        id="job is deleted with FinishOrphanedWorkloads disabled",
    ),
    pytest.param(
        Case(
            gates={"FinishOrphanedWorkloads": True},
            job=base_job().deleted().finalizers(WL_FIN).obj(),
            want_job=base_job().deleted().finalizers(WL_FIN).obj(),
            workloads=[W().fin().controller("job", "").obj()],
            want_workloads=[W().controller("job", "").cond(OWNER_GONE).obj()],
        ),
        id="job is deleted with FinishOrphanedWorkloads enabled",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[base_wl().admitted(False).obj()],
            want_workloads=[base_wl().admitted(False).cond(pods_ready("False", "WaitForStart", NOT_READY_MSG)).obj()],
        ),
        id="PodsReady is set to False before Workload is Admitted",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[base_wl().admitted().obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForStart", NOT_READY_MSG)).obj()],
        ),
        id="PodsReady is set to False after Workload is Admitted but not all Pods reached readiness",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().suspend(False).ready(9).active(10).obj(),
            want_job=base_job().suspend(False).ready(9).active(10).obj(),
            workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForStart", NOT_READY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForStart", NOT_READY_MSG)).obj()],
        ),
        id="PodsReady is set to False after Workload is Admitted, some Pods became ready but not all Pods reached readiness",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().ready(10).obj(),
            want_job=base_job().ready(10).obj(),
            workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForStart", NOT_READY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("True", "Started", READY_MSG)).obj()],
        ),
        id="PodsReady is set to True after Workload is Admitted and all Pods reached readiness",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().ready(10).obj(),
            want_job=base_job().ready(10).obj(),
            workloads=[base_wl().admitted().obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("True", "Started", READY_MSG)).obj()],
        ),
        id="PodsReady is set to True after Workload is Admitted and all Pods reached readiness without previous PodsReady condition",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().ready(9).failed(1).obj(),
            want_job=base_job().ready(9).failed(1).obj(),
            workloads=[base_wl().admitted().cond(pods_ready("True", "Started", READY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForRecovery", RECOVERY_MSG)).obj()],
        ),
        id="PodsReady is set to False after Workload is running and one pod failed",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().suspend(False).ready(9).failed(1).obj(),
            want_job=base_job().suspend(False).ready(9).failed(1).obj(),
            workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForRecovery", RECOVERY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForRecovery", RECOVERY_MSG)).obj()],
        ),
        id="PodsReady continues to be False after a pod failed and workload is still recovering",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().ready(10).obj(),
            want_job=base_job().ready(10).obj(),
            workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForRecovery", RECOVERY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("True", "Recovered", READY_MSG)).obj()],
        ),
        id="PodsReady is set to True after failing pod recovered",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[base_wl().admitted().cond(pods_ready("False", "PodsReady", NOT_READY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForStart", NOT_READY_MSG)).obj()],
        ),
        id="PodsReady=False has the new Reason if there was the old one before (pre v0.11.0)",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().ready(10).obj(),
            want_job=base_job().ready(10).obj(),
            workloads=[base_wl().admitted().cond(pods_ready("True", "PodsReady", READY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("True", "Started", READY_MSG)).obj()],
        ),
        id="PodsReady=True has the new Reason if there was the old one before (pre v0.11.0)",
    ),
    pytest.param(
        Case(
            wait_for_pods_ready=True,
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[base_wl().admitted().cond(pods_ready("False", "InvalidReason", NOT_READY_MSG)).obj()],
            want_workloads=[base_wl().admitted().cond(pods_ready("False", "WaitForStart", NOT_READY_MSG)).obj()],
        ),
        id="PodsReady is set to False if there's an invalid Reason (pre v0.11.0)",
    ),
    pytest.param(
        Case(
            gates={"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": False},
            job=base_job().obj(),
            want_job=base_job().suspend(False).pod_label(PODSET, "main").obj(),
            workloads=[base_wl().admitted().obj()],
            want_workloads=[base_wl().admitted().obj()],
            want_events=[STARTED],
        ),
        id="Pod queue labels are not set when AssignQueueLabelsForPods is disabled",
    ),
    pytest.param(
        Case(
            gates={"TopologyAwareScheduling": True, "AssignQueueLabelsForPods": True},
            manage_without_queue_name=True,
            namespace_selector={},
            job=base_job().obj(),
            want_job=base_job()
            .suspend(False)
            .pod_label(PODSET, "main")
            .pod_label(LQ_LABEL, "foo")
            .pod_label(CQ_LABEL, "cq")
            .pod_ann("kueue.x-k8s.io/workload", "wl")
            .obj(),
            workloads=[base_wl().admitted().obj()],
            want_workloads=[base_wl().admitted().obj()],
            want_events=[STARTED],
        ),
        id="PodSet label and Workload annotation are set when Job is starting; TopologyAwareScheduling enabled",
    ),
    pytest.param(
        Case(
            job=base_job().obj(),
            want_job=base_job().suspend(False).pod_label(PODSET, "main").pod_label(LQ_LABEL, "foo").obj(),
            workloads=[W().queue("foo").fin().pod_sets(ps(10)).reserve(CQ_100, psa(10)).admitted().obj()],
            want_workloads=[W().queue("foo").fin().pod_sets(ps(10)).reserve(CQ_100, psa(10)).admitted().obj()],
            want_events=[normal("Started", f"Admitted by clusterQueue {CQ_100}")],
        ),
        id="Pod cluster queue label is not set when cluster queue name is too long",
    ),
    pytest.param(
        Case(
            job=base_job()
            .ann("provreq.kueue.x-k8s.io/test-annotation", "test-val")
            .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
            .uid_("test-uid")
            .obj(),
            want_job=base_job()
            .ann("provreq.kueue.x-k8s.io/test-annotation", "test-val")
            .ann("invalid-provreq-prefix/test-annotation-2", "test-val-2")
            .uid_("test-uid")
            .suspend(True)
            .obj(),
            want_workloads=[
                new_wl(uid="test-uid").annotations({"provreq.kueue.x-k8s.io/test-annotation": "test-val"}).obj()
            ],
            want_events=[created(uid="test-uid")],
        ),
        id="when workload is created, it has its owner ProvReq annotations",
    ),
    pytest.param(
        Case(
            label_keys_to_copy=("toCopyKey", "redundantToCopyKey"),
            job=base_job()
            .label("toCopyKey", "toCopyValue")
            .label("dontCopyKey", "dontCopyValue")
            .uid_("test-uid")
            .obj(),
            want_job=base_job()
            .label("toCopyKey", "toCopyValue")
            .label("dontCopyKey", "dontCopyValue")
            .uid_("test-uid")
            .suspend(True)
            .obj(),
            want_workloads=[new_wl(uid="test-uid", toCopyKey="toCopyValue").obj()],
            want_events=[created(uid="test-uid")],
        ),
        id="when workload is created, it has correct labels set",
    ),
    # cmd/kueue/main.go getLabelsAndAnnotationsToCopy: with gate CustomMetricLabels a Workload also
    # copies what its Workload-kind custom labels read, a label key or an annotation key.
    *(
        pytest.param(
            Case(
                # Upstream's TestReconciler cases that create a Workload turn TopologyAwareScheduling off.
                gates={"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True, "CustomMetricLabels": gate},
                label_keys_to_copy=("toCopyKey",),
                custom_labels=(
                    MetricsCustomLabel("team", source_kind="Workload", tracked_values=("a",)),
                    MetricsCustomLabel(
                        "tier", source_annotation_key="tierAnn", source_kind="Workload", tracked_values=("b",)
                    ),
                    MetricsCustomLabel("cq", source_label_key="cqKey", tracked_values=("c",)),
                ),
                job=base_job()
                .label("toCopyKey", "v1")
                .label("team", "a")
                .label("cqKey", "c")
                .ann("tierAnn", "b")
                .ann("other", "x")
                .uid_("test-uid")
                .obj(),
                want_job=base_job()
                .label("toCopyKey", "v1")
                .label("team", "a")
                .label("cqKey", "c")
                .ann("tierAnn", "b")
                .ann("other", "x")
                .uid_("test-uid")
                .suspend(True)
                .obj(),
                want_workloads=[
                    new_wl(uid="test-uid", toCopyKey="v1", team="a").annotations({"tierAnn": "b"}).obj()
                    if gate
                    else new_wl(uid="test-uid", toCopyKey="v1").obj()
                ],
                want_events=[created(uid="test-uid")],
            ),
            id=f"the workload copies what Workload-kind custom labels read, gate CustomMetricLabels {gate}",
        )
        for gate in (True, False)
    ),
    pytest.param(
        Case(
            job=base_job().obj(),
            want_job=base_job().started().pod_label("ac-key", "ac-value").obj(),
            workloads=[base_wl().admitted().checks(AC_LABEL).obj()],
            want_workloads=[base_wl().admitted().checks(AC_LABEL).obj()],
            want_events=[STARTED],
        ),
        id="when workload is admitted the PodSetUpdates are propagated to job",
    ),
]


def _evicted_running(reason: str, message: str, *, requeued: bool = False, ac: bool = True) -> Case:
    """A running Job whose admitted (1s ago) Workload was evicted: stopped, reservation released."""
    wl = base_wl().admitted(True, NOW - timedelta(seconds=1)).cond(cond("Evicted", "True", reason, message))
    want = evicted(base_wl().past_admitted(1), reason, message, requeued=requeued)
    if ac:
        wl, want = wl.checks(AC_LABEL), want.checks(AC_LABEL)
    return Case(
        job=base_job().suspend(False).obj(),
        want_job=base_job().obj(),
        workloads=[wl.obj()],
        want_workloads=[want.obj()],
        want_events=[normal("Stopped", message)],
    )


def _deactivated(
    *, active: bool, reason: str, retention_s: float, admitted_ago: timedelta, evicted_ago: timedelta, deleted: bool
) -> Case:
    """objectRetentionPolicies.workloads.afterDeactivatedByKueue with a running Job's evicted Workload."""
    wl = (
        base_wl()
        .admitted(True, NOW - admitted_ago)
        .active(active)
        .cond(cond("Evicted", "True", reason, DEACTIVATED, at=NOW - evicted_ago))
        .checks(AC_LABEL)
    )
    want = evicted(
        base_wl().past_admitted(int(admitted_ago.total_seconds())).active(active), reason, DEACTIVATED
    ).checks(AC_LABEL)
    stopped = [normal("Stopped", DEACTIVATED)]
    return Case(
        job=base_job().suspend(False).obj(),
        want_job=None if deleted else base_job().obj(),
        after_deactivated_by_kueue_s=retention_s,
        workloads=[wl.obj()],
        want_workloads=[want.obj()],
        want_events=[*stopped, normal("Deleted", "Deleted job: deactivation retention period expired")]
        if deleted
        else stopped,
    )


def _conflicting_checks(field_name: str) -> Case:
    """Two admission checks set different values for one key: the Workload fails to start."""
    first: dict[str, Any] = {field_name: {"ac-key": "ac-value1"}}
    second: dict[str, Any] = {field_name: {"ac-key": "ac-value2"}}
    checks = (check("check1", **first), check("check2", **second))
    key = {"node_selector": "nodeSelector"}.get(field_name, field_name)
    message = (
        f'in admission check "check2": invalid admission check PodSetUpdate: conflict for {key}: '
        "conflict for key=ac-key, value1=ac-value1, value2=ac-value2"
    )
    return Case(
        job=base_job().obj(),
        want_job=base_job().obj(),
        workloads=[base_wl().admitted().checks(*checks).obj()],
        want_workloads=[
            base_wl().admitted().checks(*checks).cond(cond("Finished", "True", "FailedToStart", message)).obj()
        ],
    )


MATCHING_CHECKS = (
    check(
        "check1",
        labels={"label-key1": "common-value"},
        annotations={"annotation-key1": "common-value", "annotation-key2": "only-in-check1"},
        node_selector={"node-selector-key1": "common-value"},
    ),
    check(
        "check2",
        labels={"label-key1": "common-value"},
        annotations={"annotation-key1": "common-value"},
        node_selector={"node-selector-key1": "common-value", "node-selector-key2": "only-in-check2"},
    ),
)
MANAGE_ALL = {"manage_without_queue_name": True, "namespace_selector": {}}

RECONCILER_CASES += [
    pytest.param(
        Case(
            job=base_job().suspend(False).obj(),
            want_job=base_job().obj(),
            workloads=[
                base_wl()
                .admitted(True, NOW - timedelta(seconds=1))
                .active(False)
                .cond(cond("Evicted", "True", "Deactivated", DEACTIVATED))
                .checks(AC_LABEL)
                .obj()
            ],
            want_workloads=[
                evicted(base_wl().past_admitted(1).active(False), "Deactivated", DEACTIVATED).checks(AC_LABEL).obj()
            ],
            want_events=[normal("Stopped", DEACTIVATED)],
        ),
        id="when workload is evicted due to spec.active field being false, job gets suspended and quota is unset",
    ),
    pytest.param(
        _deactivated(
            active=True,
            reason=BY_KUEUE,
            retention_s=0,
            admitted_ago=timedelta(seconds=1),
            evicted_ago=timedelta(0),
            deleted=False,
        ),
        id="when workload is active after deactivation; objectRetentionPolicies.workloads.afterDeactivatedByKueue=0; should not delete the job",
    ),
    pytest.param(
        _deactivated(
            active=False,
            reason="Deactivated",
            retention_s=0,
            admitted_ago=timedelta(seconds=1),
            evicted_ago=timedelta(0),
            deleted=False,
        ),
        id="when workload is manually deactivated; objectRetentionPolicies.workloads.afterDeactivatedByKueue=0; should not delete the job",
    ),
    pytest.param(
        _deactivated(
            active=False,
            reason=BY_KUEUE,
            retention_s=0,
            admitted_ago=timedelta(seconds=1),
            evicted_ago=timedelta(0),
            deleted=True,
        ),
        id="when workload is deactivated by kueue; objectRetentionPolicies.workloads.afterDeactivatedByKueue=0; should delete the job",
    ),
    pytest.param(
        _deactivated(
            active=False,
            reason=BY_KUEUE,
            retention_s=120,
            admitted_ago=timedelta(minutes=2),
            evicted_ago=timedelta(minutes=1),
            deleted=False,
        ),
        id="when workload is deactivated by kueue; objectRetentionPolicies.workloads.afterDeactivatedByKueue=60; retention period has not expired",
    ),
    pytest.param(
        _deactivated(
            active=False,
            reason=BY_KUEUE,
            retention_s=60,
            admitted_ago=timedelta(minutes=2),
            evicted_ago=timedelta(minutes=1),
            deleted=True,
        ),
        id="when workload is deactivated by kueue; objectRetentionPolicies.workloads.afterDeactivatedByKueue=60; retention period has expired",
    ),
    pytest.param(
        _evicted_running("PodsReadyTimeout", "Exceeded the PodsReady timeout", ac=False),
        id="when workload is evicted due to pods ready timeout, job gets suspended and quota is unset",
    ),
    pytest.param(
        _evicted_running("AdmissionCheck", "At least one admission check is false"),
        id="when workload is evicted due to admission check, job gets suspended",
    ),
    pytest.param(
        _evicted_running("ClusterQueueStopped", "The ClusterQueue is stopped"),
        id="when workload is evicted due to cluster queue stopped, job gets suspended",
    ),
    pytest.param(
        _evicted_running("LocalQueueStopped", "The LocalQueue is stopped"),
        id="when workload is evicted due to local queue stopped, job gets suspended",
    ),
    pytest.param(
        _evicted_running("Preempted", "Preempted", requeued=True),
        id="when workload is evicted due to preemption, job gets suspended",
    ),
    pytest.param(
        Case(
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[
                base_wl()
                .admitted()
                .active(False)
                .cond(cond("Admitted", "False", "NoReservation", "The workload has no reservation"))
                .cond(cond("QuotaReserved", "False", "PendingEvaluation", DEACTIVATED))
                .checks(AC_LABEL)
                .obj()
            ],
            want_workloads=[
                base_wl()
                .admitted()
                .active(False)
                .cond(cond("Admitted", "False", "NoReservation", "The workload has no reservation"))
                .cond(cond("QuotaReserved", "False", "PendingEvaluation", DEACTIVATED))
                .checks(AC_LABEL)
                .obj()
            ],
        ),
        id="when job is initially suspended, the Workload has active=false and it's not admitted, "
        "it should not get an evicted condition, but the job should remain suspended",
    ),
    pytest.param(
        _conflicting_checks("labels"),
        id="when workload is admitted and PodSetUpdates conflict between admission checks on labels, the workload is finished with failure",
    ),
    pytest.param(
        _conflicting_checks("annotations"),
        id="when workload is admitted and PodSetUpdates conflict between admission checks on annotations, the workload is finished with failure",
    ),
    pytest.param(
        _conflicting_checks("node_selector"),
        id="when workload is admitted and PodSetUpdates conflict between admission checks on nodeSelector, the workload is finished with failure",
    ),
    pytest.param(
        Case(
            job=base_job().node_selector("provisioning", "spot").obj(),
            want_job=base_job().node_selector("provisioning", "spot").obj(),
            workloads=[base_wl().admitted().checks(check("check", node_selector={"provisioning": "on-demand"})).obj()],
            want_workloads=[
                base_wl()
                .admitted()
                .checks(check("check", node_selector={"provisioning": "on-demand"}))
                .cond(
                    cond(
                        "Finished",
                        "True",
                        "FailedToStart",
                        "invalid admission check PodSetUpdate: conflict for nodeSelector: "
                        "conflict for key=provisioning, value1=spot, value2=on-demand",
                    )
                )
                .obj()
            ],
        ),
        id="when workload is admitted and PodSetUpdates conflict between admission check nodeSelector and current node selector, "
        "the workload is finished with failure",
    ),
    pytest.param(
        Case(
            job=base_job().obj(),
            want_job=base_job()
            .started()
            .pod_ann("annotation-key1", "common-value")
            .pod_ann("annotation-key2", "only-in-check1")
            .pod_label("label-key1", "common-value")
            .node_selector("node-selector-key1", "common-value")
            .node_selector("node-selector-key2", "only-in-check2")
            .obj(),
            workloads=[base_wl().admitted().checks(*MATCHING_CHECKS).obj()],
            want_workloads=[base_wl().admitted().checks(*MATCHING_CHECKS).obj()],
            want_events=[STARTED],
        ),
        id="when workload is admitted the PodSetUpdates values matching for key",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().obj(),
            want_job=base_job().started().obj(),
            workloads=[base_wl().admitted().obj()],
            want_workloads=[base_wl().admitted().obj()],
            want_events=[STARTED],
        ),
        id="suspended job with matching admitted workload is unsuspended",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[base_wl().pod_sets(ps(5)).admitted().obj()],
            want_err="no matching workloads",
            want_events=[normal("DeletedWorkload", "Deleted not matching Workload: ns/wl")],
        ),
        id="non-matching admitted workload is deleted",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[W("a").fin().pod_sets(ps(5)).priority(0).obj()],
            want_workloads=[W("a").fin().pod_sets(ps(10)).queue("foo").priority(0).obj()],
            want_events=[normal("UpdatedWorkload", "Updated not matching Workload for suspended job: ns/a")],
        ),
        id="non-matching non-admitted workload is updated",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().ann(MIN_PARALLELISM, "5").obj(),
            want_job=base_job().ann(MIN_PARALLELISM, "5").started().parallelism(8).obj(),
            workloads=[W("a").queue("foo").fin().pod_sets(ps(10, min_count=5)).reserve("cq", psa(8)).admitted().obj()],
            want_workloads=[
                W("a").queue("foo").fin().pod_sets(ps(10, min_count=5)).reserve("cq", psa(8)).admitted().obj()
            ],
            want_events=[STARTED],
        ),
        id="suspended job with partial admission and admitted workload is unsuspended",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().ann(MIN_PARALLELISM, "5").suspend(False).obj(),
            want_job=base_job().ann(MIN_PARALLELISM, "5").obj(),
            workloads=[W("a").fin().pod_sets(ps(10, min_count=5)).reserve("cq", psa(8)).admitted().obj()],
            want_err="no matching workloads",
            want_events=[
                normal("Stopped", "No matching Workload; restoring pod templates according to existent Workload"),
                normal("DeletedWorkload", "Deleted not matching Workload: ns/a"),
            ],
        ),
        id="unsuspended job with partial admission and non-matching admitted workload is suspended and workload is deleted",
    ),
]


MISSING = normal("Stopped", "Missing Workload; unable to restore pod templates")
WPC_NOT_FOUND = warning("WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "missing-wpc" not found')
TEST_WPC, HIGH_WPC, TEST_PC = wpc("test-wpc", 100), wpc("test-wpc-high", 200), pc("test-pc", 200)
PARENT = J("parent").uid_("parent").queue("queue").obj()
SUSPENDED_CHILD = normal("Suspended", "Kueue managed child job suspended")
LONG_UID = "long-uid" * 8
GENERATED = workload_name("job", "")


def _queued(uid: str = "test-uid") -> J:
    return base_job().queue("test-queue").uid_(uid)


def _prebuilt_wl(count: int = 10) -> W:
    return (
        W("prebuilt-workload")
        .fin()
        .pod_sets(ps(count, priorityClassName="test-pc"))
        .queue("test-queue")
        .wpc_ref("test-wpc")
        .priority(100)
    )


def _tolerations_wl(toleration: Mapping[str, str], **template_spec: Any) -> W:
    """The Workload `GetWorkloadNameForJob(job, "")` with one toleration in its podSet."""
    return (
        W(GENERATED)
        .fin()
        .queue("foo")
        .labels({JOB_UID_LABEL: ""})
        .priority(0)
        .pod_sets(ps(10, tolerations=[dict(toleration)], **template_spec))
    )


DEFAULT_FLAVOR = psa(10, flavors={"cpu": "default"})
CHANGED_NODE_SELECTOR = {"nodeSelector": {"different node-label": "different value"}}


def _pending_checks(*checks: dict[str, Any]) -> W:
    return (
        base_wl()
        .admitted(False)
        .active(False)
        .queue("foo")
        .cond(cond("QuotaReserved", "True", "Reason"))
        .checks(*checks)
    )


RECONCILER_CASES += [
    pytest.param(
        Case(
            job=_queued().suspend(False).obj(),
            want_job=_queued().obj(),
            want_workloads=[new_wl("test-queue", "test-uid").obj()],
            want_events=[MISSING, created(uid="test-uid")],
        ),
        id="the workload is created when queue name is set",
    ),
    pytest.param(
        Case(
            job=base_job().queue("test-queue-new").uid_("test-uid").obj(),
            want_job=base_job().queue("test-queue-new").uid_("test-uid").obj(),
            workloads=[new_wl("test-queue", "test-uid").obj()],
            want_workloads=[new_wl("test-queue-new", "test-uid").obj()],
        ),
        id="the workload is updated when queue name has changed for suspended job",
    ),
    pytest.param(
        Case(
            gates={},
            classes=[TEST_WPC],
            job=base_job().wpc("missing-wpc").uid_("test-uid").obj(),
            want_job=base_job().wpc("missing-wpc").uid_("test-uid").obj(),
            want_err="",
            want_events=[WPC_NOT_FOUND],
        ),
        id="a warning names the WorkloadPriorityClass that does not exist",
    ),
    pytest.param(
        Case(
            gates={},
            job=base_job().wpc("missing-wpc").uid_("test-uid").obj(),
            want_job=base_job().wpc("missing-wpc").uid_("test-uid").obj(),
            workloads=[new_wl(uid="test-uid").priority(2000).pc_ref("pod-high").obj()],
            want_workloads=[new_wl(uid="test-uid").priority(2000).pc_ref("pod-high").obj()],
        ),
        id="a Pod PriorityClass-backed workload is left alone and reports nothing",
    ),
    pytest.param(
        Case(
            gates={},
            classes=[TEST_WPC],
            job=base_job().wpc("missing-wpc").uid_("test-uid").obj(),
            want_job=base_job().wpc("missing-wpc").uid_("test-uid").obj(),
            workloads=[new_wl(uid="test-uid").priority(100).wpc_ref("test-wpc").obj()],
            want_workloads=[new_wl(uid="test-uid").priority(100).wpc_ref("test-wpc").obj()],
            want_err="",
            want_events=[WPC_NOT_FOUND],
        ),
        id="a warning names the WorkloadPriorityClass the label was changed to",
    ),
    pytest.param(
        Case(
            classes=[TEST_WPC, HIGH_WPC],
            job=base_job().wpc("test-wpc-high").uid_("test-uid").obj(),
            want_job=base_job().wpc("test-wpc-high").uid_("test-uid").obj(),
            workloads=[new_wl(uid="test-uid").priority(100).wpc_ref("test-wpc").obj()],
            want_workloads=[new_wl(uid="test-uid").priority(200).wpc_ref("test-wpc-high").obj()],
            want_events=[normal("UpdatedWorkload", "Updated workload priority class: ns/job")],
        ),
        id="the workload is updated when priority class has changed for suspended job",
    ),
    pytest.param(
        Case(
            classes=[TEST_PC, TEST_WPC],
            job=base_job().priority_class("test-pc").uid_("test-uid").obj(),
            want_job=base_job().priority_class("test-pc").uid_("test-uid").obj(),
            workloads=[
                new_wl(uid="test-uid")
                .pod_sets(ps(10, priorityClassName="test-pc"))
                .priority(200)
                .pc_ref("test-pc")
                .obj()
            ],
            want_workloads=[
                new_wl(uid="test-uid")
                .pod_sets(ps(10, priorityClassName="test-pc"))
                .priority(200)
                .pc_ref("test-pc")
                .obj()
            ],
        ),
        id="shouldn't update workload when priority class no changes",
    ),
    pytest.param(
        Case(
            job=_queued(LONG_UID).suspend(False).obj(),
            want_job=_queued(LONG_UID).obj(),
            want_workloads=[new_wl("test-queue").labels({}).obj()],
            want_events=[MISSING, created(uid=LONG_UID)],
        ),
        id="the workload without uid label is created when job's uid is longer than 63 characters",
    ),
    pytest.param(
        Case(
            job=J().suspend(False).obj(),
            want_job=J().suspend(False).obj(),
        ),
        id="the workload is not created when queue name is not set",
    ),
    pytest.param(
        Case(
            job=base_job().owner("parent").suspend(False).obj(),
            want_job=base_job().owner("parent").obj(),
            other_jobs=[PARENT],
            want_events=[SUSPENDED_CHILD],
        ),
        id="non-standalone job is suspended if its parent workload is not found",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().owner("parent").suspend(False).obj(),
            want_job=base_job().owner("parent").suspend(False).obj(),
            other_jobs=[PARENT],
            workloads=[
                W("unit-test")
                .pod_sets(ps(10, min_count=5))
                .reserve("cq", psa(10))
                .admitted()
                .controller("parent", "parent")
                .obj()
            ],
            want_workloads=[
                W("unit-test")
                .pod_sets(ps(10, min_count=5))
                .reserve("cq", psa(10))
                .admitted()
                .controller("parent", "parent")
                .obj()
            ],
        ),
        id="non-standalone job is not suspended if its parent workload is admitted",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().owner("parent").suspend(False).obj(),
            want_job=base_job().owner("parent").obj(),
            other_jobs=[PARENT],
            workloads=[W("parent-workload").fin().pod_sets(ps(10, min_count=5)).controller("parent", "parent").obj()],
            want_workloads=[
                W("parent-workload").fin().pod_sets(ps(10, min_count=5)).controller("parent", "parent").obj()
            ],
            want_events=[SUSPENDED_CHILD],
        ),
        id="non-standalone job is suspended if its parent workload is found and not admitted",
    ),
    pytest.param(
        Case(
            job=base_job().suspend(False).owner("parent").queue("test-queue").obj(),
            want_job=base_job().suspend(False).owner("parent").queue("test-queue").obj(),
            other_jobs=[PARENT],
            workloads=[
                W("parent-workload")
                .fin()
                .pod_sets(ps(10, min_count=5))
                .reserve("cq", psa(10))
                .controller("parent", "parent")
                .admitted()
                .obj()
            ],
            want_workloads=[
                W("parent-workload")
                .fin()
                .pod_sets(ps(10, min_count=5))
                .reserve("cq", psa(10))
                .controller("parent", "parent")
                .admitted()
                .obj()
            ],
        ),
        id="non-standalone job is not suspended if its parent workload is admitted and queue name is set",
    ),
    pytest.param(
        Case(
            **MANAGE_ALL,  # type: ignore[arg-type]
            job=base_job().suspend(False).parallelism(5).obj(),
            want_job=base_job().suspend(False).parallelism(5).obj(),
            workloads=[
                W("first-workload").fin().pod_sets(ps(5)).reserve("cq").admitted().obj(),
                W("second-workload").fin().pod_sets(ps(10, min_count=5)).obj(),
            ],
            want_workloads=[W("first-workload").fin().pod_sets(ps(5)).reserve("cq").admitted().obj()],
            want_err="extra workloads",
            want_events=[normal("DeletedWorkload", "Deleted not matching Workload: ns/second-workload")],
        ),
        id="checking a second non-matching workload is deleted",
    ),
    pytest.param(
        Case(
            gates={},
            job=base_job().suspend(False).start_time().node_selector("provisioning", "spot").active(10).obj(),
            want_job=base_job().active(10).obj(),
            workloads=[base_wl().admitted().cond(cond("Evicted", "True")).obj()],
            want_workloads=[base_wl().admitted().cond(cond("Evicted", "True")).obj()],
            want_events=[normal("Stopped", "")],
        ),
        id="when workload is evicted, suspend, reset startTime and restore node affinity",
    ),
    pytest.param(
        Case(
            job=base_job().start_time().node_selector("provisioning", "spot").active(10).obj(),
            want_job=base_job().active(10).obj(),
            workloads=[base_wl().admitted().cond(cond("Evicted", "True")).obj()],
            want_workloads=[base_wl().admitted().cond(cond("Evicted", "True")).obj()],
        ),
        id="when workload is evicted but suspended, reset startTime and restore node affinity",
    ),
    pytest.param(
        Case(
            job=base_job().node_selector("provisioning", "spot").active(10).obj(),
            want_job=base_job().active(10).obj(),
            workloads=[base_wl().admitted().cond(cond("Evicted", "True")).obj()],
            want_workloads=[base_wl().admitted().cond(cond("Evicted", "True")).obj()],
        ),
        id="when workload is evicted, suspended and startTime is reset, restore node affinity",
    ),
    pytest.param(
        Case(
            job=base_job().condition("Complete", "Job finished successfully").obj(),
            want_job=base_job().condition("Complete", "Job finished successfully").obj(),
            workloads=[base_wl().admitted().generation(1).obj()],
            want_workloads=[
                base_wl()
                .admitted()
                .cond(cond("Finished", "True", "Succeeded", "Job finished successfully", generation=1))
                .generation(1)
                .obj()
            ],
            want_events=[normal("FinishedWorkload", "Workload 'ns/wl' is declared finished")],
        ),
        id="when job completes, workload is marked as finished",
    ),
    pytest.param(
        Case(
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[
                W("a").fin().pod_sets(ps(10)).cond(cond("QuotaReserved", "False")).cond(cond("Finished", "True")).obj()
            ],
            want_workloads=[
                W("a").pod_sets(ps(10)).cond(cond("QuotaReserved", "False")).cond(cond("Finished", "True")).obj()
            ],
            want_events=[normal("FinishedWorkload", "Workload 'ns/a' is declared finished")],
        ),
        id="when the workload is finished, its finalizer is removed",
    ),
    pytest.param(
        Case(
            classes=[TEST_WPC],
            job=_queued().wpc("test-wpc").suspend(False).obj(),
            want_job=_queued().wpc("test-wpc").obj(),
            want_workloads=[new_wl("test-queue", "test-uid").wpc_ref("test-wpc").priority(100).obj()],
            want_events=[MISSING, created(uid="test-uid")],
        ),
        id="the workload is created when queue name is set, with workloadPriorityClass",
    ),
    pytest.param(
        Case(
            classes=[TEST_PC],
            job=_queued().priority_class("test-pc").suspend(False).obj(),
            want_job=_queued().priority_class("test-pc").obj(),
            want_workloads=[
                new_wl("test-queue", "test-uid")
                .pod_sets(ps(10, priorityClassName="test-pc"))
                .pc_ref("test-pc")
                .priority(200)
                .obj()
            ],
            want_events=[MISSING, created(uid="test-uid")],
        ),
        id="the workload is created when queue name is set, with PriorityClass",
    ),
    pytest.param(
        Case(
            classes=[TEST_PC, TEST_WPC],
            job=_queued().wpc("test-wpc").priority_class("test-pc").suspend(False).obj(),
            want_job=_queued().wpc("test-wpc").priority_class("test-pc").obj(),
            want_workloads=[
                new_wl("test-queue", "test-uid")
                .pod_sets(ps(10, priorityClassName="test-pc"))
                .wpc_ref("test-wpc")
                .priority(100)
                .obj()
            ],
            want_events=[MISSING, created(uid="test-uid")],
        ),
        id="the workload is created when queue name is set, with workloadPriorityClass and PriorityClass",
    ),
    pytest.param(
        Case(
            job=base_job().condition("Complete").obj(),
            want_job=base_job().condition("Complete").obj(),
        ),
        id="the workload shouldn't be recreated for the completed job",
    ),
    pytest.param(
        Case(
            job=base_job().suspend(False).prebuilt("missing-workload").uid_("test-uid").obj(),
            want_job=base_job().prebuilt("missing-workload").uid_("test-uid").obj(),
            want_err="prebuilt workload not found",
            want_events=[normal("Stopped", "missing workload")],
        ),
        id="when the prebuilt workload is missing, no new one is created, the job is suspended and prebuilt workload not found error is returned",
    ),
    pytest.param(
        Case(
            job=base_job().suspend(False).prebuilt("prebuilt-workload").uid_("test-uid").obj(),
            want_job=base_job().prebuilt("prebuilt-workload").uid_("test-uid").obj(),
            workloads=[_prebuilt_wl().obj()],
            want_workloads=[_prebuilt_wl().labels({JOB_UID_LABEL: "test-uid"}).controller("job", "test-uid").obj()],
            want_events=[normal("Stopped", "Not admitted by cluster queue")],
        ),
        id="when the prebuilt workload exists its owner info is updated",
    ),
    pytest.param(
        Case(
            job=base_job().suspend(False).prebuilt("prebuilt-workload").uid_("test-uid").obj(),
            want_job=base_job().prebuilt("prebuilt-workload").uid_("test-uid").obj(),
            workloads=[_prebuilt_wl().controller("other-job", "other-uid").obj()],
            want_workloads=[_prebuilt_wl().controller("other-job", "other-uid").obj()],
            want_err="prebuilt workload not found",
            want_events=[normal("Stopped", "missing workload")],
        ),
        id="when the prebuilt workload is owned by another object",
    ),
    pytest.param(
        Case(
            job=base_job().suspend(False).prebuilt("prebuilt-workload").uid_("test-uid").obj(),
            want_job=base_job().prebuilt("prebuilt-workload").uid_("test-uid").obj(),
            workloads=[_prebuilt_wl(1).obj()],
            want_workloads=[
                _prebuilt_wl(1)
                .labels({JOB_UID_LABEL: "test-uid"})
                .controller("job", "test-uid")
                .cond(cond("Finished", "True", "OutOfSync", "The prebuilt workload is out of sync with its user job"))
                .obj()
            ],
            want_err="prebuilt workload not found",
            want_events=[normal("Stopped", "missing workload")],
        ),
        id="when the prebuilt workload is not equivalent to the job",
    ),
    pytest.param(
        Case(
            job=base_job().toleration(TOL2).node_selector("node-label", "value").obj(),
            want_job=base_job().toleration(TOL2).node_selector("node-label", "value").obj(),
            workloads=[_tolerations_wl(TOL1, **CHANGED_NODE_SELECTOR).obj()],
            want_workloads=[_tolerations_wl(TOL2, nodeSelector={"node-label": "value"}).obj()],
            want_events=[normal("UpdatedWorkload", f"Updated not matching Workload for suspended job: ns/{GENERATED}")],
        ),
        id="the workload is not admitted, tolerations and node selector change",
    ),
    pytest.param(
        Case(
            job=base_job().toleration(TOL2).node_selector("node-label", "value").suspend(False).obj(),
            want_job=base_job().toleration(TOL2).node_selector("node-label", "value").suspend(False).obj(),
            workloads=[_tolerations_wl(TOL1, **CHANGED_NODE_SELECTOR).reserve("cq", DEFAULT_FLAVOR).admitted().obj()],
            want_workloads=[
                _tolerations_wl(TOL1, **CHANGED_NODE_SELECTOR).reserve("cq", DEFAULT_FLAVOR).admitted().obj()
            ],
        ),
        id="the workload is admitted, tolerations and node selector change",
    ),
    pytest.param(
        Case(
            job=base_job().toleration(TOL2).obj(),
            want_job=base_job().toleration(TOL2).obj(),
            workloads=[_tolerations_wl(TOL1).reserve("cq", DEFAULT_FLAVOR).obj()],
            want_err="no matching workloads",
            want_events=[normal("DeletedWorkload", f"Deleted not matching Workload: ns/{GENERATED}")],
        ),
        id="the workload is admitted, job still suspended and tolerations change",
    ),
    pytest.param(
        Case(
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[_pending_checks(check("acName", "Pending", "Not admitted, ETA: 2024-02-22T10:36:40Z.")).obj()],
            want_workloads=[
                _pending_checks(check("acName", "Pending", "Not admitted, ETA: 2024-02-22T10:36:40Z.")).obj()
            ],
            want_events=[normal("UpdatedAdmissionCheck", "acName: Not admitted, ETA: 2024-02-22T10:36:40Z.")],
        ),
        id="admission check message is emitted as event for job",
    ),
    pytest.param(
        Case(
            job=base_job().obj(),
            want_job=base_job().obj(),
            workloads=[
                _pending_checks(
                    check("acName1", "Pending", "Some message."), check("acName2", "Pending", "Another message.")
                ).obj()
            ],
            want_workloads=[
                _pending_checks(
                    check("acName1", "Pending", "Some message."), check("acName2", "Pending", "Another message.")
                ).obj()
            ],
            want_events=[normal("UpdatedAdmissionCheck", "acName1: Some message.; acName2: Another message.")],
        ),
        id="multiple admission check messages are emitted as a single event for job",
    ),
    pytest.param(
        Case(
            job=base_job().label("kueue.x-k8s.io/max-exec-time-seconds", "10").obj(),
            want_job=base_job().label("kueue.x-k8s.io/max-exec-time-seconds", "10").obj(),
            want_workloads=[new_wl().max_exec(10).obj()],
            want_events=[created()],
        ),
        id="the maximum execution time is passed to the created workload",
    ),
    pytest.param(
        Case(
            job=base_job().label("kueue.x-k8s.io/max-exec-time-seconds", "10").obj(),
            want_job=base_job().label("kueue.x-k8s.io/max-exec-time-seconds", "10").obj(),
            workloads=[new_wl().max_exec(5).obj()],
            want_workloads=[new_wl().max_exec(10).obj()],
            want_events=[normal("UpdatedWorkload", "Updated not matching Workload for suspended job: ns/job")],
        ),
        id="the maximum execution time is updated in the workload",
    ),
    pytest.param(
        Case(
            namespace_selector={"matchLabels": {"managed-by-kueue": "true"}},
            job=base_job().queue("test-queue").suspend(False).obj(),
            want_job=base_job().queue("test-queue").suspend(False).obj(),
        ),
        id="job with queue name is not reconciled in unlabelled namespace when AlwaysRespected is enabled",
    ),
    pytest.param(
        Case(
            namespace_selector={"matchLabels": {"managed-by-kueue": "true"}},
            manage_without_queue_name=True,
            job=J("job", "labelled-ns")
            .queue("test-queue")
            .uid_("test-uid")
            .parallelism(10)
            .request("cpu", "1")
            .image("")
            .obj(),
            want_job=J("job", "labelled-ns")
            .queue("test-queue")
            .uid_("test-uid")
            .parallelism(10)
            .request("cpu", "1")
            .image("")
            .obj(),
            want_workloads=[
                W("job", "labelled-ns")
                .fin()
                .queue("test-queue")
                .priority(0)
                .labels({JOB_UID_LABEL: "test-uid"})
                .pod_sets(ps(10))
                .obj()
            ],
            want_events=[created(uid="test-uid", ns="labelled-ns")],
        ),
        id="job with queue name is reconciled in labelled namespace when AlwaysRespected is enabled",
    ),
]


@pytest.mark.parametrize("case", RECONCILER_CASES)
def test_reconciler(case: Case) -> None:
    check_outcome(case, run(case))


# --- TestPodsReady ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "status", "want"),
    [
        pytest.param({"parallelism": 3, "completions": 3}, {}, False, id="parallelism = completions; no progress"),
        pytest.param(
            {"parallelism": 3, "completions": 3},
            {"ready": 1, "succeeded": 1},
            False,
            id="parallelism = completions; not enough progress",
        ),
        pytest.param(
            {"parallelism": 3, "completions": 3},
            {"ready": 3, "succeeded": 0},
            True,
            id="parallelism = completions; all ready",
        ),
        pytest.param(
            {"parallelism": 3, "completions": 3},
            {"ready": 2, "succeeded": 1},
            True,
            id="parallelism = completions; some ready, some succeeded",
        ),
        pytest.param(
            {"parallelism": 3, "completions": 3}, {"succeeded": 3}, True, id="parallelism = completions; all succeeded"
        ),
        pytest.param(
            {"parallelism": 2, "completions": 3},
            {"ready": 2},
            True,
            id="parallelism < completions; reaching parallelism is enough",
        ),
        pytest.param(
            {"parallelism": 3, "completions": 2},
            {"ready": 2},
            True,
            id="parallelism > completions; reaching completions is enough",
        ),
        pytest.param({"parallelism": 3}, {"ready": 2}, False, id="parallelism specified only; not enough progress"),
        pytest.param({"parallelism": 3}, {"ready": 3}, True, id="parallelism specified only; all ready"),
    ],
)
def test_pods_ready(spec: dict[str, Any], status: dict[str, Any], want: bool) -> None:
    assert j.job_pods_ready({"spec": spec, "status": status}) is want


# --- TestPodSetsInfo: what starting applies to the Job and what stopping restores --------------------

T_ORIG = {"key": "orig-t-key", "operator": "Equal", "value": "orig-t-val", "effect": "NoSchedule"}
T_NEW = {"key": "new-t-key", "operator": "Equal", "value": "new-t-val", "effect": "NoSchedule"}


def _admitted_with(
    job: dict[str, Any], *, assignments: Sequence[dict[str, Any]], **template_spec: Any
) -> dict[str, Any]:
    """An admitted Workload whose podSet is the Job's original template (what stopping restores)."""
    count = jobs.pods_count(job)
    wl = W().pod_sets(ps(count, **template_spec)).reserve("cq", *assignments).admitted().obj()
    if not assignments:
        wl["status"]["admission"]["podSetAssignments"] = []
    return wl


@pytest.mark.parametrize(
    ("job", "flavor", "assignments", "template", "want_started", "want_error"),
    [
        pytest.param(
            J().parallelism(1).node_selector("orig-key", "orig-val").toleration(T_ORIG).obj(),
            {"nodeLabels": {"new-key": "new-val"}, "tolerations": [T_NEW]},
            [psa(1, flavors={"cpu": "rf"})],
            {"nodeSelector": {"orig-key": "orig-val"}, "tolerations": [T_ORIG]},
            J()
            .parallelism(1)
            .node_selector("orig-key", "orig-val")
            .node_selector("new-key", "new-val")
            .toleration(T_ORIG)
            .toleration(T_NEW)
            .suspend(False)
            .obj(),
            None,
            id="append",
        ),
        pytest.param(
            J().parallelism(1).node_selector("orig-key", "orig-val").obj(),
            {"nodeLabels": {"orig-key": "new-val"}},
            [psa(1, flavors={"cpu": "rf"})],
            {"nodeSelector": {"orig-key": "orig-val"}},
            None,
            "invalid admission check PodSetUpdate: conflict for nodeSelector",
            id="update",
        ),
        pytest.param(
            J().parallelism(5).ann(MIN_PARALLELISM, "2").obj(),
            {},
            [psa(2)],
            {},
            J().parallelism(2).ann(MIN_PARALLELISM, "2").suspend(False).obj(),
            None,
            id="parallelism",
        ),
        pytest.param(
            J().parallelism(5).ann(MIN_PARALLELISM, "2").obj(),
            {},
            [],
            {},
            None,
            "invalid podset infos: expecting 1 podset, got 0",
            id="noInfoOnRun",
        ),
    ],
)
def test_pod_sets_info(
    job: dict[str, Any],
    flavor: dict[str, Any],
    assignments: list[dict[str, Any]],
    template: dict[str, Any],
    want_started: dict[str, Any] | None,
    want_error: str | None,
) -> None:
    """`RunWithPodSetsInfo` then `RestorePodSetsInfo` + `Suspend`: the Job's spec comes back as it was.
    A start that cannot apply its admission changes nothing (upstream's Job object is not written)."""
    wl = _admitted_with(job, assignments=assignments, **template)
    kube = _Kube()
    path = k.object_path("batch/v1", "jobs", "ns", "job")
    kube.put(path, job)
    flavors = {"rf": {"metadata": {"name": "rf"}, "spec": flavor}}
    if want_error is not None:
        with pytest.raises(j.StartConflict, match=want_error):
            j.start_patch(kube.objects[path], wl, flavors)
        return
    kube.patch(path, j.start_patch(kube.objects[path], wl, flavors))
    started = kube.objects[path]
    assert want_started is not None
    assert _drop_empty(_without_queue_labels(started)["spec"]) == _drop_empty(want_started["spec"])
    restore = j.restore_patch(started, wl)
    assert restore is not None
    kube.patch(path, restore)
    kube.patch(path, {"spec": {"suspend": True}})
    assert _drop_empty(kube.objects[path]["spec"]) == _drop_empty(job["spec"])


def _without_queue_labels(job: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's PodSetInfo in this test carries no podset/queue labels; the admission's do."""
    out = copy.deepcopy(dict(job))
    labels = out["spec"]["template"].get("metadata", {}).get("labels", {})
    for key in (PODSET, LQ_LABEL, CQ_LABEL):
        labels.pop(key, None)
    return out


# --- TestPodSets (TAS disabled) ----------------------------------------------------------------------

SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


def _pod_set(
    count: int, *, annotations: Mapping[str, str] | None = None, min_count: int | None = None
) -> dict[str, Any]:
    """`MakePodSet(main, count).PodSpec(jobTemplate.Spec.Template.Spec)[.Annotations(...)][.SetMinimumCount(n)]`."""
    out: dict[str, Any] = {"name": "main", "count": count, "template": {"spec": J().obj()["spec"]["template"]["spec"]}}
    if annotations:
        out["template"]["metadata"] = {"annotations": dict(annotations)}
    if min_count is not None:
        out["minCount"] = min_count
    return out


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(J().parallelism(3), [_pod_set(3)], id="no partial admission"),
        pytest.param(J().parallelism(3).ann(MIN_PARALLELISM, "2"), [_pod_set(3, min_count=2)], id="partial admission"),
        pytest.param(
            J().parallelism(3).pod_ann(SLICE_REQUIRED, "cloud.com/block").pod_ann(SLICE_SIZE, "1"),
            [_pod_set(3, annotations={SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "1"})],
            id="with slice-only topology if TAS is disabled",
        ),
        pytest.param(
            J().parallelism(3).pod_ann(PREFERRED, "cloud.com/block"),
            [_pod_set(3, annotations={PREFERRED: "cloud.com/block"})],
            id="without preferred topology annotation if TAS is disabled",
        ),
        pytest.param(
            J().parallelism(3).pod_ann(REQUIRED, "cloud.com/block"),
            [_pod_set(3, annotations={REQUIRED: "cloud.com/block"})],
            id="without required topology annotation if TAS is disabled",
        ),
    ],
)
def test_pod_sets(job: J, want: list[dict[str, Any]]) -> None:
    assert _drop_empty(j.pod_sets(job.obj())) == _drop_empty(want)


# --- TestCleanLabels --------------------------------------------------------------------------------


def test_clean_labels() -> None:
    """The Job controller's labels are not copied into the podSet, except `batch.kubernetes.io/job-name`."""
    job = J()
    for key, value in {
        "foo": "bar",
        "batch.kubernetes.io/job-name": "job-name",
        "controller-uid": "uid",
        "batch.kubernetes.io/controller-uid": "uid",
    }.items():
        job.pod_label(key, value)
    assert j.pod_sets(job.obj())[0]["template"]["metadata"]["labels"] == {
        "foo": "bar",
        "batch.kubernetes.io/job-name": "job-name",
    }


# --- TestTerminalIndexesCount, through the reclaimable pods of an Indexed Job --------------------------


@pytest.mark.parametrize(
    ("completed", "failed", "completions", "want"),
    [
        pytest.param("", "", 10, 0, id="empty"),
        pytest.param("0-9", "", 0, 0, id="zero completions"),
        pytest.param("0", "", 10, 1, id="single completed index"),
        pytest.param("", "1", 10, 1, id="single failed index"),
        pytest.param("0-4", "", 10, 5, id="single range"),
        pytest.param("0-4,7,9-11", "", 10, 7, id="mixed intervals"),
        pytest.param("0-2,7", "3-5,8", 10, 8, id="completed and failed indexes"),
        pytest.param("0-4", "3-7", 10, 8, id="overlapping terminal indexes"),
        pytest.param("0-9", "2-3", 10, 10, id="contained failed indexes"),
        pytest.param("0-8", "", 10, 9, id="surviving low indexes"),
        pytest.param("0-14", "", 10, 10, id="all completed within range"),
        pytest.param("5-19", "", 10, 5, id="range straddling the cap"),
        pytest.param("10-19", "", 10, 0, id="all removed (above the cap)"),
        pytest.param("", "5-19", 10, 5, id="failed range straddling the cap"),
        pytest.param("", "10-19", 10, 0, id="all failed removed (above the cap)"),
        pytest.param("", "4", 3, 0, id="stale failed index after scale-down"),
        pytest.param("0-1", "2-19", 5, 5, id="cap applied to completed and failed"),
        pytest.param("0-4", "", 3, 3, id="range capped tighter"),
        pytest.param("3,5,7", "", 10, 3, id="discrete indexes"),
        pytest.param("3,5,12", "", 10, 2, id="discrete indexes partly above"),
        pytest.param("abc,0-2", "", 10, 3, id="malformed interval skipped"),
        pytest.param("0-x,4", "", 10, 1, id="malformed range end skipped"),
    ],
)
def test_terminal_indexes_count(completed: str, failed: str, completions: int, want: int) -> None:
    """With parallelism = completions every terminal index is a reclaimable pod."""
    job = J().indexed().parallelism(completions).completions(completions).suspend(False).obj()
    job["status"] = {"completedIndexes": completed, "failedIndexes": failed}
    wl = W().pod_sets(ps(completions)).obj()
    got = j.reclaimable_pods(job, wl)
    assert (got[0]["count"] if got else 0) == want


# --- TestReclaimablePods ----------------------------------------------------------------------------


def _indexed(
    succeeded: int, failed: int, completed: str, failed_indexes: str, *, backoff_limit_per_index: int = 0
) -> dict[str, Any]:
    job = J().indexed().parallelism(8).completions(8).succeeded(succeeded).failed(failed).obj()
    job["status"]["completedIndexes"] = completed
    if failed_indexes or backoff_limit_per_index:
        job["spec"]["backoffLimitPerIndex"] = backoff_limit_per_index
    if failed_indexes:
        job["status"]["failedIndexes"] = failed_indexes
    return job


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(
            _indexed(4, 0, "0-3", ""), [{"name": "main", "count": 4}], id="indexed Job reclaims its completed indexes"
        ),
        pytest.param(
            _indexed(1, 1, "0", "", backoff_limit_per_index=1),
            [{"name": "main", "count": 1}],
            id="indexed Job holds quota for a retryable failure",
        ),
        pytest.param(
            _indexed(1, 1, "0", "1"),
            [{"name": "main", "count": 2}],
            id="indexed Job reclaims completed and failed indexes",
        ),
        pytest.param(_indexed(4, 0, "", ""), [], id="indexed Job with empty terminal indexes holds quota"),
    ],
)
def test_reclaimable_pods(job: dict[str, Any], want: list[dict[str, Any]]) -> None:
    assert j.reclaimable_pods(job, W().pod_sets(ps(8)).obj()) == want


@pytest.mark.parametrize("gate", [True, False])
def test_workload_creation_latency_is_recorded_only_with_its_gate(gate: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """MetricForWorkloadCreationLatency (`RecordWorkloadCreationLatency`, pkg/controller/jobframework/utils.go):
    off, creating a Workload observes nothing."""
    observed: list[str] = []
    monkeypatch.setattr(reporter, "workload_created", lambda kind, owner, wl: observed.append(kind))
    gates = {"TopologyAwareScheduling": False, "MetricForWorkloadCreationLatency": gate}
    got = run(Case(gates=gates, job=base_job().uid_("test-uid").obj()))
    assert len(got.workloads) == 1
    assert observed == (["Job"] if gate else [])
