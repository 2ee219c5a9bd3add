"""batch/v1 Job: the adapter the generic job reconcile works through, and the writes that carry
a plan out.

`BatchJob` fulfils `jobframework.interface.GenericJob` for a batch/v1 Job (upstream's
`pkg/controller/jobs/job/job_controller.go`: `PodSets`, `RunWithPodSetsInfo`,
`RestorePodSetsInfo`, `Stop`, `Finished`, `PodsReady`, `ReclaimablePods`, with
`pkg/podset/podset.go` through `reconcilers.podset`). `plan` decides what is Job-specific before
the generic reconcile (`jobframework.reconciler`): a Job of another integration is left alone, and
a Job under a managed Job is only held suspended (`FindAncestorJobManagedByKueue`).
`JobReconciler` carries a plan's actions out against the API (upstream v0.19.2).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, assert_never

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import fields, jobs, selector
from webhook.api import objects as o
from webhook.config import Configuration, Feature
from webhook.worker import events, reporter
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import reconciler as fw
from webhook.worker.jobframework.reconciler import (
    Plan,
    Priority,
    PriorityClassNotFound,
    prebuilt_workload_name,
    resolve_priority,
    workload_name,
)
from webhook.worker.reconcilers import elastic, podset, workload_slices
from webhook.worker.status import (
    set_condition,
    unset_quota_reservation,
    update_status,
)
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "BatchJob",
    "JobReconciler",
    "Plan",
    "Priority",
    "PriorityClassNotFound",
    "StartConflict",
    "build_workload",
    "finished_condition",
    "job_pods_ready",
    "owned_workloads",
    "plan",
    "pod_sets",
    "prebuilt_workload_name",
    "reclaimable_pods",
    "resolve_priority",
    "restore_patch",
    "start_patch",
    "workload_name",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
JOB_API = "batch/v1"
_MAX_PREFIX = 253 - 6
_JOB_CONTROLLER_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")
_DROPPED_TEMPLATE_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid")
CONTROLLER_NAME = "batch/job-kueue-controller"


class StartConflict(Exception):
    """The admission cannot be applied to the Job's template (a permanent error)."""


# == accessors ====================================================================================
def is_suspended(job: Obj) -> bool:
    """`Job.IsSuspended`: a Job being stopped (annotation `stopping`) does not count as suspended."""
    return bool((job.get("spec") or {}).get("suspend")) and o.annotations(job).get(c.STOPPING_ANNOTATION) != "true"


def _is_active(job: Obj) -> bool:
    return bool((job.get("status") or {}).get("active"))


# == pure builders ================================================================================
def _int(value: object, default: int) -> int:
    return default if value is None else int(value)  # type: ignore[call-overload]


def min_pods_count(job: Obj) -> int | None:
    """`minPodsCount`: the `job-min-parallelism` annotation, when it parses."""
    raw = o.annotations(job).get(c.JOB_MIN_PARALLELISM)
    try:
        return None if raw is None else fields.go_atoi(raw)
    except ValueError:
        return None


def _sync_completions(job: Obj) -> bool:
    """`syncCompletionWithParallelism`: the `job-completions-equal-parallelism` annotation is true."""
    try:
        return fields.go_parse_bool(o.annotations(job).get(c.JOB_COMPLETIONS_EQUAL_PARALLELISM, ""))
    except ValueError:
        return False


def _dedupe_env(containers: list[dict[str, Any]]) -> None:
    for ctr in containers:
        env = ctr.get("env")
        if not env:
            continue
        last: dict[str, dict[str, Any]] = {}
        for e in env:
            last[e.get("name", "")] = e
        ctr["env"] = list(last.values())  # dicts keep first-insertion order, last value


def pod_sets(job: Obj, *, partial_admission: bool = True) -> list[dict[str, Any]]:
    """The one `main` podSet: count min(parallelism, completions), minCount from the annotation."""
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    meta = template.setdefault("metadata", {})
    labels = {key: v for key, v in (meta.get("labels") or {}).items() if key not in _DROPPED_TEMPLATE_LABELS}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    pspec = template.get("spec") or {}
    _dedupe_env(pspec.get("containers") or [])
    _dedupe_env(pspec.get("initContainers") or [])
    ps: dict[str, Any] = {"name": "main", "count": jobs.pods_count(job), "template": template}
    minimum = min_pods_count(job)
    if partial_admission and minimum is not None:
        ps["minCount"] = minimum
    return [ps]


def finished_condition(job: Obj) -> tuple[str, str] | None:
    """(reason, message) for a Job with Complete=True or Failed=True."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Complete":
            return c.FinishedReason.SUCCEEDED, str(cond.get("message") or "")
        if cond.get("type") == "Failed":
            return c.FinishedReason.FAILED, str(cond.get("message") or "")
    return None


def job_pods_ready(job: Obj) -> bool:
    """Succeeded, ready and not yet counted succeeded pods reach min(parallelism, completions)."""
    status = job.get("status") or {}
    uncounted = len((status.get("uncountedTerminatedPods") or {}).get("succeeded") or ())
    return int(status.get("succeeded") or 0) + int(status.get("ready") or 0) + uncounted >= jobs.pods_count(job)


def _flavor_specs(flavors: Mapping[str, Obj]) -> dict[str, Obj]:
    return {name: (rf.get("spec") or {}) for name, rf in flavors.items()}


def start_patch(job: Obj, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool = False, assign_queue_labels: bool = True,
                elastic: bool = False) -> dict[str, Any]:
    """`RunWithPodSetsInfo`: the one merge patch that starts an admitted Job (`startJob` in `jobframework/reconciler.go`), guarded by its
    resourceVersion. `flavors`: ResourceFlavor name → object; `elastic`: the
    ElasticJobsViaWorkloadSlices gate. Raises `StartConflict` when the admission cannot be applied
    and `podset.FlavorNotFound` when a flavor is not known yet."""
    template = (job.get("spec") or {}).get("template") or {}
    try:
        infos = podset.from_admission(wl, _flavor_specs(flavors), tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic)
        if len(infos) != 1:
            raise podset.PermanentError(f"invalid podset infos: expecting 1 podset, got {len(infos)}")
        base = podset.PodSetInfo.of_template(template)
        merged = podset.merge(base, infos[0], elastic=elastic)
    except podset.PermanentError as exc:
        raise StartConflict(str(exc)) from exc
    tmeta: dict[str, Any] = {"labels": merged.labels}
    if merged.annotations != base.annotations:
        tmeta["annotations"] = merged.annotations
    tspec: dict[str, Any] = {"nodeSelector": merged.node_selector or None}
    if merged.tolerations:
        tspec["tolerations"] = merged.tolerations
    if merged.scheduling_gates != base.scheduling_gates:
        tspec["schedulingGates"] = merged.scheduling_gates
    patch_spec: dict[str, Any] = {"suspend": False, "template": {"metadata": tmeta, "spec": tspec}}
    if min_pods_count(job) is not None:
        patch_spec["parallelism"] = infos[0].count
        if _sync_completions(job):
            patch_spec["completions"] = infos[0].count
    return {"metadata": {"resourceVersion": o.meta(job).get("resourceVersion")}, "spec": patch_spec}


def _restore_map(live: Mapping[str, str], original: Mapping[str, str], keep: Sequence[str] = ()) -> dict[str, str | None]:
    want = dict(original)
    for key in keep:
        if key in live:
            want[key] = live[key]
    out: dict[str, str | None] = {key: None for key in live if key not in want}
    out.update({key: v for key, v in want.items() if live.get(key) != v})
    return out


def restore_patch(job: Obj, wl: Obj | None) -> dict[str, Any] | None:
    """`RestorePodSetsInfo` and the end of `Job.Stop` (the restore step of `stopJob` in `jobframework/reconciler.go`): the template back to the
    Workload's podSet (none: left as it is), partial admission's parallelism back to the podSet
    count, and no `stopping` annotation. None when there is nothing to change."""
    out: dict[str, Any] = {}
    if wl is not None:
        ps = ((wl.get("spec") or {}).get("podSets") or [{}])[0]
        orig = ps.get("template") or {}
        ometa, ospec = orig.get("metadata") or {}, orig.get("spec") or {}
        template = (job.get("spec") or {}).get("template") or {}
        tmeta, tspec = template.get("metadata") or {}, template.get("spec") or {}
        meta_patch: dict[str, Any] = {}
        labels = _restore_map(tmeta.get("labels") or {}, ometa.get("labels") or {}, _JOB_CONTROLLER_LABELS)
        if labels:
            meta_patch["labels"] = labels
        annotations = _restore_map(tmeta.get("annotations") or {}, ometa.get("annotations") or {})
        if annotations:
            meta_patch["annotations"] = annotations
        spec_patch: dict[str, Any] = {}
        node_selector = _restore_map(tspec.get("nodeSelector") or {}, ospec.get("nodeSelector") or {})
        if node_selector:
            spec_patch["nodeSelector"] = node_selector
        for list_field in ("tolerations", "schedulingGates"):
            if (tspec.get(list_field) or []) != (ospec.get(list_field) or []):
                spec_patch[list_field] = ospec.get(list_field) or None
        tpatch = {key: v for key, v in (("metadata", meta_patch), ("spec", spec_patch)) if v}
        if tpatch:
            out["spec"] = {"template": tpatch}
        count = ps.get("count")
        if min_pods_count(job) is not None and (job.get("spec") or {}).get("parallelism") != count:
            out.setdefault("spec", {})["parallelism"] = count
            if _sync_completions(job):
                out["spec"]["completions"] = count
    if c.STOPPING_ANNOTATION in o.annotations(job):
        out["metadata"] = {"annotations": {c.STOPPING_ANNOTATION: None}}
    if not out:
        return None
    out.setdefault("metadata", {})["resourceVersion"] = o.meta(job).get("resourceVersion")
    return out


def _terminal_indexes(completed: str, failed: str, completions: int) -> int:
    """Indexes of an Indexed Job that will not run again (completed or failed), counted once each;
    indexes >= completions and malformed intervals are ignored (upstream `terminalIndexesCount`)."""
    seen: set[int] = set()
    for text in (completed, failed):
        for interval in filter(None, text.split(",")):
            first, sep, last = interval.partition("-")
            try:
                lo, hi = int(first), int(last) if sep else int(first)
            except ValueError:
                continue
            if lo <= hi:
                seen.update(range(lo, min(hi, completions - 1) + 1))
    return len(seen)


def reclaimable_pods(job: Mapping[str, Any], wl: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`status.reclaimablePods` for a running Job (upstream `Job.ReclaimablePods`): once fewer pods
    remain to finish than run in parallel, the spare slots' quota is released. Capped at the
    podSet's count (`LimitReclaimablePodsToPodSetSizes`)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    parallelism = _int(spec.get("parallelism"), 1)
    completions = _int(spec.get("completions"), parallelism)
    terminal = int(status.get("succeeded") or 0)
    if spec.get("completionMode") == "Indexed":
        terminal = _terminal_indexes(str(status.get("completedIndexes") or ""), str(status.get("failedIndexes") or ""), completions)
    remaining = max(completions - terminal, 0)
    if parallelism <= 1 or terminal <= 0 or remaining >= parallelism:
        return []
    sizes = {ps.get("name"): int(ps.get("count") or 0) for ps in (wl.get("spec") or {}).get("podSets") or ()}
    return [{"name": "main", "count": min(parallelism - remaining, sizes.get("main", parallelism - remaining))}]


# == the Workload of a Job: equivalence, ancestors, prebuilt ======================================
def find_managed_ancestor(job: Obj, get_job: Callable[[str], Obj | None], config: Configuration) -> Obj | None:
    """`FindAncestorJobManagedByKueue` over batch/v1 Job owners: the top-most owning Job Kueue
    manages (it has a queue name, or manageJobsWithoutQueueName). The walk stops at any other
    owner kind: a Job controlled by another integration's object is left to that integration (see
    `_owned_by_other_integration`), and a CronJob's Job is a top-level Job."""
    ns = o.namespace(job)
    return jobs.find_managed_ancestor(
        job,
        follows=lambda owner: (owner.get("apiVersion"), owner.get("kind")) == (JOB_API, "Job"),
        get_owner=lambda owner: get_job(f"{ns}/{owner.get('name', '')}"),
        is_managed=lambda _, parent: config.manage_jobs_without_queue_name or bool(o.labels(parent).get(c.QUEUE_LABEL)),
    )


def _owned_by_other_integration(job: Obj) -> bool:
    """The controller owner is not a batch/v1 object: another integration's child Job."""
    owner = o.controller_of(job)
    return owner is not None and owner.get("apiVersion") != JOB_API


# == the plan =====================================================================================
def plan(
    job: Obj | None,
    workloads: Sequence[Obj],
    *,
    namespace_labels: Mapping[str, str] | None,
    config: Configuration,
    store: Store | None = None,
    now: datetime | None = None,
) -> Plan:
    """One reconcile of a Job (`ReconcileGenericJob`). `workloads` are those its ownerReferences
    name (`owned_workloads`); `store` is read for everything else (flavors, priority classes, the
    prebuilt Workload, owning Jobs and their Workloads)."""
    store = store if store is not None else Store()
    if job is None or o.is_deleting(job):
        return fw.plan_finalize(workloads, config)
    if namespace_labels is None or not selector.matches(config.managed_jobs_namespace_selector, namespace_labels, nil_matches=True):
        return Plan()
    if _owned_by_other_integration(job):
        return Plan()
    try:
        ancestor = find_managed_ancestor(job, lambda key: store.get("jobs", key), config)
    except jobs.AncestorError as exc:
        steps = (ja.RecordEvent(reason=c.JobEventReason.JOB_NESTING_TOO_DEEP, message=str(exc), warning=True),) if exc.too_deep else ()
        return Plan(steps, error=str(exc))
    if not o.labels(job).get(c.QUEUE_LABEL) and not config.manage_jobs_without_queue_name and ancestor is None:
        return Plan()
    if ancestor is not None:
        gate = config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)
        elastic = workload_slices.is_elastic(job, enabled=gate) or workload_slices.is_elastic(ancestor, enabled=gate)
        return fw.plan_child(BatchJob(job), owned_workloads(store, o.namespace(job), o.name(ancestor)), elastic=elastic)
    return fw.plan_top_level(BatchJob(job), workloads, config=config, store=store, now=now or datetime.now(UTC))


# == the adapter ==================================================================================
class BatchJob:
    """A batch/v1 Job as a `GenericJob` (with `JobWithReclaimablePods`)."""

    __slots__ = ("obj",)
    api_version = JOB_API
    kind = "Job"
    group = "batch"

    def __init__(self, obj: Obj) -> None:
        self.obj = obj

    def is_suspended(self) -> bool:
        return is_suspended(self.obj)

    def is_active(self) -> bool:
        return _is_active(self.obj)

    def finished(self) -> tuple[str, str] | None:
        return finished_condition(self.obj)

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        return pod_sets(self.obj, partial_admission=partial_admission)

    def pods_ready(self) -> bool:
        return job_pods_ready(self.obj)

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        return restore_patch(self.obj, wl)

    def reclaimable_pods(self, wl: Obj) -> list[dict[str, Any]]:
        return reclaimable_pods(self.obj, wl)


def owned_workloads(store: Store, ns: str, name: str) -> list[dict[str, Any]]:
    """The Workloads the batch/v1 Job `name` owns (`jobframework.reconciler.owned_workloads`)."""
    return fw.owned_workloads(store, ns, name, api_version=JOB_API, kind="Job")


def build_workload(job: Obj, *, config: Configuration, priority: Priority, slices: Sequence[Obj] = ()) -> dict[str, Any]:
    """The Workload for a top-level Job (`jobframework.reconciler.build_workload`)."""
    return fw.build_workload(BatchJob(job), config=config, priority=priority, slices=slices)


# == I/O ==========================================================================================
def _path(kind_plural: str, ns: str, name: str | None = None, api: str = JOB_API) -> str:
    return k.object_path(api, kind_plural, ns, name)


def _generation(obj: Obj) -> int:
    return int(o.meta(obj).get("generation") or 0)


class JobReconciler:
    """Carries out `plan` for one Job key (`namespace/name`); called from a WorkQueue thread.

    Each step writes through `webhook.kube` and puts what the API returns into the store, so a
    later step of the same pass starts from the newest copy. A conflict ends the pass with `Retry`;
    a Job gone meanwhile ends it quietly. `requeue_after(key, seconds)` asks for a later look (the
    deactivation retention period); `on_ready` sees Workloads whose PodsReady turned True/Started.
    """

    def __init__(self, kube: k.Kube, store: Store, config: Configuration, recorder: events.Recorder,
                 on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None, *,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 requeue_after: Callable[[str, float], None] | None = None, stop: threading.Event | None = None) -> None:
        self.kube = kube
        self.store = store
        self.config = config
        self.events = recorder
        self.on_ready = on_ready  # PodsReady turned True/Started: the ready-wait-time metrics
        self.clock = clock
        self.queue: WorkQueue[object] = WorkQueue("jobs", self.reconcile, workers=4, stop=stop or threading.Event())
        self.requeue_after = requeue_after if requeue_after is not None else self.queue.add_after
        self.ungater = elastic.Ungater(kube, clock=clock)

    def start(self) -> None:
        self.queue.start()

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        """A Job queues itself; a Workload queues the Job that controls it."""
        if kind == "jobs":
            self.queue.add(o.key(obj))
        elif kind == "workloads":
            for ref in o.owner_references(obj):
                if ref.get("controller") and ref.get("kind") == "Job":
                    self.queue.add(f"{o.namespace(obj)}/{ref.get('name')}")

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        ns, name = key.split("/", 1)
        job = self.store.get("jobs", key)
        ns_obj = self.store.get("namespaces", ns)
        ns_labels = None if ns_obj is None else o.labels(ns_obj)
        now = self.clock()
        p = plan(job, owned_workloads(self.store, ns, name), namespace_labels=ns_labels, config=self.config, store=self.store, now=now)
        if p.steps:
            log.info("reconciling job", extra={"object": key, "kind": "Job", "decision": p.action,
                                               "steps": ",".join(s.name for s in p.steps)})
        current: Obj | None = job
        for step in p.steps:
            current = self._execute(key, current, step, now)
            if current is None and job is not None:
                return  # the Job is gone
        if current is not None and not p.error and not is_suspended(current) \
                and workload_slices.is_elastic(current, enabled=self.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)):
            self.ungater.ungate(current, owned_workloads(self.store, ns, name))
        if p.requeue_after is not None and self.requeue_after is not None:
            self.requeue_after(key, p.requeue_after)
        if p.error:
            raise Retry(0.5, p.error)

    # -- helpers ----------------------------------------------------------------------------------
    def _wl_path(self, wl: Obj) -> str:
        return _path("workloads", wl["metadata"]["namespace"], wl["metadata"]["name"], c.V1BETA2)

    def _latest(self, wl: Obj) -> Obj:
        """The newest copy of a Workload a step names (an earlier step may have written it)."""
        return self.store.get("workloads", o.key(wl)) or wl

    def _patch_workload(self, wl: Obj, patch: dict[str, Any]) -> None:
        patch.setdefault("metadata", {})["resourceVersion"] = o.meta(self._latest(wl)).get("resourceVersion")
        try:
            self.store.put("workloads", self.kube.patch(self._wl_path(wl), patch))
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        except k.NotFound:
            return

    def _patch_job(self, key: str, job: Obj, patch: dict[str, Any], *, status: bool = False) -> Obj | None:
        ns, name = key.split("/", 1)
        try:
            out = self.kube.patch(_path("jobs", ns, name) + ("/status" if status else ""), patch)
        except k.Conflict as exc:
            raise Retry(0.2, "job changed") from exc
        except k.NotFound:
            return None
        self.store.put("jobs", out)
        return out

    def _emit(self, job: Obj | None, etype: str, reason: str, message: str) -> None:
        if job is not None:
            self.events.emit(job, etype, reason, message, CONTROLLER_NAME)

    def _finish(self, wl: Obj, reason: str, message: str, now: datetime) -> None:
        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            cond = {"type": c.WorkloadCondition.FINISHED, "status": "True", "reason": reason, "message": message}
            set_condition(status, cond, now, _generation(obj))

        update_status(self.kube, self.store, "workloads", self._wl_path(wl), mutate)
        log.info("workload finished", extra={"object": o.key(wl), "kind": "Workload", "decision": "Finished", "reason": reason})

    def _remove_finalizer(self, wl: Obj) -> None:
        latest = self._latest(wl)
        fins = list(o.meta(latest).get("finalizers") or ())
        if c.RESOURCE_IN_USE_FINALIZER not in fins:
            return
        fins.remove(c.RESOURCE_IN_USE_FINALIZER)
        self._patch_workload(latest, {"metadata": {"finalizers": fins or None}})

    # -- actions: each returns the newest copy of the Job (None: it is gone) -------------------------
    def _execute(self, key: str, job: Obj | None, action: ja.JobAction, now: datetime) -> Obj | None:
        """Carry out one action; `job` is None only for `Finalize` of a Job already gone."""
        if isinstance(action, ja.Finalize):
            return self._do_finalize(key, job, action, now)
        assert job is not None, "only Finalize runs without a Job"
        match action:
            case ja.RecordEvent():
                return self._do_event(key, job, action, now)
            case ja.SuspendChild():
                return self._do_suspend_child(key, job, action, now)
            case ja.StopJob():
                return self._do_stop(key, job, action, now)
            case ja.DeleteWorkload():
                return self._do_delete_workload(key, job, action, now)
            case ja.UpdateWorkloadSpec():
                return self._do_update_workload(key, job, action, now)
            case ja.AdoptWorkload():
                return self._do_adopt(key, job, action, now)
            case ja.UpdatePriority():
                return self._do_update_priority(key, job, action, now)
            case ja.UpdateAdmissionGatedBy():
                return self._do_update_gated_by(key, job, action, now)
            case ja.FinishWorkload():
                return self._do_finish(key, job, action, now)
            case ja.RemoveWorkloadFinalizer():
                return self._do_remove_finalizer(key, job, action, now)
            case ja.CreateWorkload():
                return self._do_create(key, job, action, now)
            case ja.UpdateReclaimablePods():
                return self._do_update_reclaimable(key, job, action, now)
            case ja.SetPodsReady():
                return self._do_pods_ready(key, job, action, now)
            case ja.ClearReservation():
                return self._do_clear_reservation(key, job, action, now)
            case ja.DeleteJob():
                return self._do_delete_job(key, job, action, now)
            case ja.StartJob():
                return self._do_start(key, job, action, now)
            case ja.RecordAdmissionChecks():
                return self._do_record_admission_checks(key, job, action, now)
            case ja.SyncQueueName():
                return self._do_sync_queue(key, job, action, now)
        assert_never(action)

    def _do_event(self, key: str, job: Obj, step: ja.RecordEvent, now: datetime) -> Obj:
        self._emit(job, "Warning" if step.warning else "Normal", step.reason, step.message)
        return job

    def _do_finalize(self, key: str, job: Obj | None, step: ja.Finalize, now: datetime) -> Obj | None:
        assert step.workload is not None
        if step.finish and not o.is_finished(self._latest(step.workload)):
            self._finish(step.workload, c.FinishedReason.OWNER_NOT_FOUND, c.MSG_OWNER_NOT_FOUND, now)
        self._remove_finalizer(step.workload)
        return job

    def _do_suspend_child(self, key: str, job: Obj, step: ja.SuspendChild, now: datetime) -> Obj | None:
        return self._patch_job(key, job, {"metadata": {"resourceVersion": o.meta(job).get("resourceVersion")}, "spec": {"suspend": True}})

    def _do_stop(self, key: str, job: Obj, step: ja.StopJob, now: datetime) -> Obj | None:
        """`Job.Stop`: suspend (with the `stopping` annotation until done), reset startTime so the
        template may change, restore the template; `Stopped` when this suspended the Job."""
        stopped_now = not is_suspended(job)
        current: Obj | None = job
        if stopped_now:
            current = self._patch_job(key, job, {"metadata": {"resourceVersion": o.meta(job).get("resourceVersion"),
                                                              "annotations": {c.STOPPING_ANNOTATION: "true"}},
                                                 "spec": {"suspend": True}})
        if current is not None and (current.get("status") or {}).get("startTime"):
            current = self._patch_job(key, current, {"status": {"startTime": None}}, status=True)
        restore = None if current is None else restore_patch(current, step.workload)
        if current is not None and restore is not None:
            current = self._patch_job(key, current, restore)
        if current is None:
            return None
        log.info("stopped job", extra={"object": key, "kind": "Job", "decision": "Stopped", "reason": step.reason})
        if stopped_now:
            self._emit(current, "Normal", c.JobEventReason.STOPPED, step.message)
        return current

    def _do_delete_workload(self, key: str, job: Obj, step: ja.DeleteWorkload, now: datetime) -> Obj:
        """`workload.Delete`: drop the finalizer, then delete unless already being deleted."""
        assert step.workload is not None
        self._remove_finalizer(step.workload)
        if o.is_deleting(step.workload):
            return job
        try:
            self.kube.delete(self._wl_path(step.workload))
        except k.NotFound:
            return job
        self.store.delete("workloads", o.key(step.workload))
        log.info("deleted workload", extra={"object": o.key(step.workload), "kind": "Workload", "job": key, "decision": "DeletedWorkload"})
        self._emit(job, "Normal", c.JobEventReason.DELETED_WORKLOAD, f"Deleted not matching Workload: {o.key(step.workload)}")
        return job

    def _do_update_workload(self, key: str, job: Obj, step: ja.UpdateWorkloadSpec, now: datetime) -> Obj:
        assert step.workload is not None
        latest = self._latest(step.workload)
        try:
            self.store.put("workloads", self.kube.replace(self._wl_path(latest), {**latest, "spec": dict(step.spec)}))
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        return job

    def _do_adopt(self, key: str, job: Obj, step: ja.AdoptWorkload, now: datetime) -> Obj:
        """`EnsurePrebuiltWorkloadOwnership`: the Job becomes the prebuilt Workload's controller."""
        assert step.workload is not None
        meta = o.meta(step.workload)
        patch: dict[str, Any] = {"metadata": {"ownerReferences": list(meta.get("ownerReferences") or ())}}
        if c.JOB_UID_LABEL in (meta.get("labels") or {}):
            patch["metadata"]["labels"] = {c.JOB_UID_LABEL: meta["labels"][c.JOB_UID_LABEL]}
        self._patch_workload(step.workload, patch)
        return job

    def _do_update_priority(self, key: str, job: Obj, step: ja.UpdatePriority, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"spec": {"priorityClassRef": step.priority_class_ref, "priority": step.priority}})
        return job

    def _do_update_gated_by(self, key: str, job: Obj, step: ja.UpdateAdmissionGatedBy, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"metadata": {"annotations": {c.ADMISSION_GATED_BY: step.value}}})
        return job

    def _do_finish(self, key: str, job: Obj, step: ja.FinishWorkload, now: datetime) -> Obj:
        assert step.workload is not None
        self._finish(step.workload, step.reason, step.message, now)
        return job

    def _do_remove_finalizer(self, key: str, job: Obj, step: ja.RemoveWorkloadFinalizer, now: datetime) -> Obj:
        assert step.workload is not None
        self._remove_finalizer(step.workload)
        return job

    def _do_create(self, key: str, job: Obj, step: ja.CreateWorkload, now: datetime) -> Obj:
        wl = step.body
        try:
            created = self.kube.create(_path("workloads", wl["metadata"]["namespace"], api=c.V1BETA2), wl)
        except k.Conflict as exc:
            raise Retry(0.2, f"workload {o.key(wl)} already exists") from exc
        self.store.put("workloads", created)
        reporter.workload_created("Job", job, created)
        log.info("created workload", extra={"object": o.key(created), "kind": "Workload", "job": key, "decision": "CreatedWorkload"})
        return job

    def _do_update_reclaimable(self, key: str, job: Obj, step: ja.UpdateReclaimablePods, now: datetime) -> Obj:
        """Quota of finished pods goes back while the Job runs (the core scales usage down)."""
        assert step.workload is not None
        wanted = [dict(r) for r in step.reclaimable_pods]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            if wanted:
                status["reclaimablePods"] = wanted
            else:
                status.pop("reclaimablePods", None)

        update_status(self.kube, self.store, "workloads", self._wl_path(step.workload), mutate)
        log.info("updated reclaimable pods", extra={"object": o.key(step.workload), "kind": "Workload", "reclaimable_pods": wanted})
        return job

    def _do_pods_ready(self, key: str, job: Obj, step: ja.SetPodsReady, now: datetime) -> Obj:
        assert step.workload is not None
        cond = step.condition

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            set_condition(status, {"type": cond.type, "status": cond.status, "reason": cond.reason, "message": cond.message}, now, _generation(obj))

        written = update_status(self.kube, self.store, "workloads", self._wl_path(step.workload), mutate)
        # Only the first start is timed; a recovery (`Recovered`) is not.
        if written is not None and cond.status == "True" and cond.reason == c.PodsReadyReason.STARTED and self.on_ready is not None:
            self.on_ready(written, now)
        log.info("pods ready condition", extra={"object": o.key(step.workload), "kind": "Workload",
                                                 "decision": "PodsReady", "status": cond.status, "reason": cond.reason})
        return job

    def _do_clear_reservation(self, key: str, job: Obj, step: ja.ClearReservation, now: datetime) -> Obj:
        """The evicted Workload of a stopped Job gives its quota back and is requeued."""
        assert step.workload is not None

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            requeued = "True" if step.reason in (c.EvictionReason.PREEMPTED, c.EvictionReason.NODE_FAILURES) else "False"
            cond = {"type": c.WorkloadCondition.REQUEUED, "status": requeued, "reason": step.reason, "message": step.message}
            set_condition(status, cond, now, _generation(obj))
            unset_quota_reservation(status, c.PendingReason.PENDING_EVALUATION, step.message, now, _generation(obj))

        update_status(self.kube, self.store, "workloads", self._wl_path(step.workload), mutate)
        log.info("reservation cleared", extra={"object": o.key(step.workload), "kind": "Workload", "decision": "Requeued", "reason": step.reason})
        return job

    def _do_delete_job(self, key: str, job: Obj, step: ja.DeleteJob, now: datetime) -> Obj | None:
        """The deactivation retention period is over: the Job goes, its pods in the background."""
        ns, name = key.split("/", 1)
        try:
            self.kube.delete(_path("jobs", ns, name), body={"propagationPolicy": "Background"})
        except k.NotFound:
            return None
        log.info("deleted job", extra={"object": key, "kind": "Job", "decision": "Deleted"})
        return job  # gone, but the event of the next step still names it

    def _do_start(self, key: str, job: Obj, step: ja.StartJob, now: datetime) -> Obj | None:
        assert step.workload is not None
        wl = self._latest(step.workload)
        try:
            patch = start_patch(job, wl, {o["metadata"]["name"]: o for o in self.store.list("resourceflavors")},
                                tas=self.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING),
                                assign_queue_labels=self.config.feature_enabled(Feature.ASSIGN_QUEUE_LABELS_FOR_PODS),
                                elastic=self.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES))
        except StartConflict as exc:
            self._finish(wl, c.FinishedReason.FAILED_TO_START, str(exc), now)
            return job
        except podset.FlavorNotFound as exc:
            raise Retry(1.0, str(exc)) from exc
        out = self._patch_job(key, job, patch)
        if out is None:
            return None
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        log.info("started job", extra={"object": key, "kind": "Job", "decision": "Started", "cluster_queue": cq})
        self._emit(out, "Normal", c.JobEventReason.STARTED, f"Admitted by clusterQueue {cq}")
        return out

    def _do_record_admission_checks(self, key: str, job: Obj, step: ja.RecordAdmissionChecks, now: datetime) -> Obj:
        """`recordAdmissionCheckUpdate`: the Pending checks' messages, as a Job event."""
        self._emit(job, "Normal", c.JobEventReason.UPDATED_ADMISSION_CHECK, step.message)
        return job

    def _do_sync_queue(self, key: str, job: Obj, step: ja.SyncQueueName, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"spec": {"queueName": step.queue_name}})
        return job
