"""The one generic job reconcile: from a job (behind `GenericJob`) and its Workloads to a plan of
typed actions (`jobframework.actions`). Pure: it reads the job, its Workloads and the worker's
caches, and writes nothing.

Mirrors `ReconcileGenericJob` and its helpers in `pkg/controller/jobframework/reconciler.go`
(`ensureOneWorkload`, `EquivalentToWorkload`, `UpdateWorkloadPriority`, `UpdateAdmissionGatedBy`,
`handleJobWithNoWorkload`, `stopJob`, `handleWorkloadAfterDeactivatedPolicy`,
`shouldSuspendChildJob`, `ConstructWorkload`, `ExtractPriority`) (upstream v0.19.2); Workload
names are `webhook.api.jobs.workload_name` (`workload_names.go`), which the webhook shares.

The plan follows upstream's order: find or repair the one matching Workload, then the first of
the job's own Workload conditions / finished / being deleted / job finished / no Workload /
reclaimable pods / PodsReady / evicted / suspended / running. Upstream often acts twice in one pass
(stop the job, then clear the reservation or create the Workload); the actions keep that order.
The optional abilities of `jobframework.interface` (a composable pod group matching, building,
starting and stopping itself; finalizing; custom conditions and queue-name handling) are asked
for where upstream asks for them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from webhook import metrics
from webhook.api import constants as c
from webhook.api import fields, integrations, jobs, selector
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.core import pods_ready
from webhook.core.conditions import ConditionValue
from webhook.worker import admission_checks
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import podset, workload_slices
from webhook.worker.jobframework.interface import (
    ComposableJob,
    GenericJob,
    JobError,
    JobWithCustomQueueNameChange,
    JobWithCustomStop,
    JobWithCustomWorkloadConditions,
    JobWithFinalize,
    JobWithoutCustomStop,
    JobWithPriorityClass,
    JobWithReclaimablePods,
    StartConflict,
)
from webhook.worker.store import Store

__all__ = [
    "Lookups",
    "OwnedKindPlan",
    "Plan",
    "Priority",
    "PriorityClassNotFound",
    "build_workload",
    "construct_workload",
    "controlled_by_enabled_integration",
    "controller_ref",
    "equivalent",
    "keys_to_copy",
    "lookups_from",
    "max_execution_time_seconds",
    "new_workload",
    "owned_workloads",
    "plan_always_top_level",
    "plan_child",
    "plan_finalize",
    "plan_top_level",
    "pods_ready_condition",
    "prebuilt_workload_name",
    "resolve_priority",
]


def _generation(obj: Obj) -> int:
    return int(o.meta(obj).get("generation") or 0)


def owned_workloads(store: Store, ns: str, name: str, *, api_version: str, kind: str) -> list[dict[str, Any]]:
    """Workloads with an ownerReference to the job `name` of `api_version`/`kind` (upstream's owner
    index: any reference, any UID), by name as the API lists them."""
    out = []
    for wl in store.list("workloads", ns):
        for ref in o.meta(wl).get("ownerReferences") or ():
            if ref.get("apiVersion") == api_version and ref.get("kind") == kind and ref.get("name") == name:
                out.append(wl)
                break
    return sorted(out, key=lambda w: str(w["metadata"]["name"]))


def max_execution_time_seconds(obj: Obj) -> int | None:
    """`MaximumExecutionTimeSecondsForObject`: the label as a positive int32, else None."""
    raw = o.labels(obj).get(c.MAX_EXEC_TIME_LABEL)
    try:
        value = fields.go_atoi(raw) if raw is not None else 0
    except ValueError:
        return None
    return value if 0 < value < 2**31 else None


@dataclass(frozen=True, slots=True)
class Priority:
    value: int = 0
    ref: Mapping[str, str] | None = None


class PriorityClassNotFound(Exception):
    """The class `name` the Job names is missing; `workload_class` when it is a
    WorkloadPriorityClass. `name` lets an integration word the error its own way (the pod one as
    the API's NotFound)."""

    def __init__(self, message: str, *, name: str, workload_class: bool) -> None:
        super().__init__(message)
        self.name = name
        self.workload_class = workload_class


def resolve_priority(
    job: Obj,
    *,
    wpcs: Mapping[str, int],
    pcs: Mapping[str, Obj],
    pod_sets: Sequence[Obj] | None = None,
    priority_class: str | None = None,
) -> Priority:
    """`ExtractPriority`: the WorkloadPriorityClass label, else the PriorityClass the job names
    (`priority_class`, a `JobWithPriorityClass`'s) or else its podSets' (default: the Job
    template's), else the lowest global default."""
    name = o.labels(job).get(c.PRIORITY_CLASS_LABEL)
    if name:
        if name not in wpcs:
            raise PriorityClassNotFound(f'WorkloadPriorityClass "{name}" not found', name=name, workload_class=True)
        return Priority(wpcs[name], {"group": c.GROUP, "kind": "WorkloadPriorityClass", "name": name})
    templates = (
        [ps.get("template") or {} for ps in pod_sets]
        if pod_sets is not None
        else [(job.get("spec") or {}).get("template") or {}]
    )
    pc_name = (
        priority_class
        if priority_class is not None
        else next(
            (str(t["spec"]["priorityClassName"]) for t in templates if (t.get("spec") or {}).get("priorityClassName")),
            "",
        )
    )
    if pc_name:
        pc = pcs.get(pc_name)
        if pc is None:
            raise PriorityClassNotFound(
                f'priorityclasses.scheduling.k8s.io "{pc_name}" not found', name=pc_name, workload_class=False
            )
        return Priority(
            int(pc.get("value") or 0), {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pc_name}
        )
    defaults = sorted((int(p.get("value") or 0), n) for n, p in pcs.items() if p.get("globalDefault"))
    if defaults:
        value, n = defaults[0]
        return Priority(value, {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": n})
    return Priority()


def new_workload(
    name: str, obj: Obj, pod_sets: list[dict[str, Any]], *, admission_gated_by: bool, priority: Priority
) -> dict[str, Any]:
    """`NewWorkload` with `prepareWorkload`'s AdmissionGatedBy annotation and priority: what the
    Workload of every kind (a Job, a pod, a pod group, a StatefulSet) takes from its object alike:
    name, namespace, the in-use finalizer, the ProvisioningRequest annotations, our submitting-user
    annotation, the queue it names,
    the maximum execution time. Labels and owners differ by kind, so the caller adds them
    (`construct_workload` for a job that controls its Workload alone)."""
    obj_annotations = o.annotations(obj)
    annotations = {key: v for key, v in obj_annotations.items() if key.startswith(c.PROVREQ_ANNOTATION_PREFIX)}
    if admission_gated_by and obj_annotations.get(c.ADMISSION_GATED_BY):
        annotations[c.ADMISSION_GATED_BY] = obj_annotations[c.ADMISSION_GATED_BY]
    if obj_annotations.get(c.SUBMITTED_BY):  # ours: who submitted the job, for usage by user
        annotations[c.SUBMITTED_BY] = obj_annotations[c.SUBMITTED_BY]
    meta: dict[str, Any] = {
        "name": name,
        "namespace": o.meta(obj).get("namespace", ""),
        "finalizers": [c.RESOURCE_IN_USE_FINALIZER],
    }
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"podSets": pod_sets}
    queue = o.labels(obj).get(c.QUEUE_LABEL, "")
    if queue:
        spec["queueName"] = queue
    max_exec = max_execution_time_seconds(obj)
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
    if priority.ref is not None:
        spec["priorityClassRef"] = dict(priority.ref)
    spec["priority"] = priority.value
    return {"apiVersion": c.V1BETA2, "kind": "Workload", "metadata": meta, "spec": spec}


def construct_workload(
    name: str,
    obj: Obj,
    pod_sets: list[dict[str, Any]],
    *,
    api_version: str,
    kind: str,
    label_keys_to_copy: Collection[str],
    admission_gated_by: bool,
    priority: Priority,
    annotations_to_copy: Collection[str] = (),
) -> dict[str, Any]:
    """`ConstructWorkload`: `new_workload` controlled by the job `obj` (of `api_version`/`kind`),
    with its labels of `label_keys_to_copy`, its annotations of `annotations_to_copy` and its UID
    as the job-uid label when that is a valid label value. Upstream's pod controller builds a
    single pod's Workload with it too."""
    wl = new_workload(name, obj, pod_sets, admission_gated_by=admission_gated_by, priority=priority)
    copied = {key: v for key, v in o.annotations(obj).items() if key in annotations_to_copy}
    if copied:
        wl["metadata"].setdefault("annotations", {}).update(copied)
    labels = {key: v for key, v in o.labels(obj).items() if key in label_keys_to_copy}
    uid = o.uid(obj)
    if not fields.is_label_value(uid):
        labels[c.JOB_UID_LABEL] = uid
    if labels:
        wl["metadata"]["labels"] = labels
    wl["metadata"]["ownerReferences"] = [controller_ref(api_version, kind, obj)]
    return wl


def keys_to_copy(config: Configuration) -> tuple[frozenset[str], frozenset[str]]:
    """The label and annotation keys a job's Workload copies from the job: `integrations.labelKeysToCopy`,
    and with gate CustomMetricLabels also those the Workload-kind `metrics.customLabels` read
    (`getLabelsAndAnnotationsToCopy` in `cmd/kueue/main.go`)."""
    labels = frozenset(config.integrations.label_keys_to_copy)
    if not config.feature_enabled(Feature.CUSTOM_METRIC_LABELS):
        return labels, frozenset()
    custom_labels, custom_annotations = metrics.workload_custom_label_sources(config.metrics.custom_labels)
    return labels | custom_labels, custom_annotations


def build_workload(
    gj: GenericJob, *, config: Configuration, priority: Priority, slices: Sequence[Obj] = ()
) -> dict[str, Any]:
    """The Workload for a top-level job (`constructWorkload`, `prepareWorkload` in
    `jobframework/reconciler.go`). For an elastic Job it is a new slice, named after the Job's
    generation, that replaces the one unfinished slice in `slices` if there is one
    (`newWorkloadName`, `prepareWorkloadSlice`); more than one raises `ValueError`."""
    job = gj.obj
    elastic = workload_slices.is_elastic(job, enabled=config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES))
    extra = str(_generation(job)) if elastic else ""
    short = config.feature_enabled(Feature.SHORT_WORKLOAD_NAMES)  # upstream applies it to every kind
    name = jobs.workload_name(o.name(job), o.uid(job), kind=gj.kind, group=gj.group, extra=extra, short=short)
    slice_annotations = _slice_annotations(name, slices) if elastic else {}
    label_keys, annotation_keys = keys_to_copy(config)
    wl = construct_workload(
        name,
        job,
        gj.pod_sets(partial_admission=config.feature_enabled(Feature.PARTIAL_ADMISSION)),
        api_version=gj.api_version,
        kind=gj.kind,
        label_keys_to_copy=label_keys,
        annotations_to_copy=annotation_keys,
        admission_gated_by=config.feature_enabled(Feature.ADMISSION_GATED_BY),
        priority=priority,
    )
    if slice_annotations:
        wl["metadata"].setdefault("annotations", {}).update(slice_annotations)
    # Unlike a single pod's (also `construct_workload`), a job's Workload has always carried both
    # keys, even empty: the API drops an empty labels map but keeps an empty queueName (CEL `has()`).
    wl["metadata"].setdefault("labels", {})
    wl["spec"].setdefault("queueName", "")
    return wl


def _slice_annotations(name: str, slices: Sequence[Obj]) -> dict[str, str]:
    """`prepareWorkloadSlice`: marks the Workload elastic; the first slice names the chain after
    itself, a scale-up slice names the slice it replaces and carries the chain's name on."""
    out = {c.ELASTIC_JOB: "true"}
    if not slices:
        out[c.WORKLOAD_SLICE_NAME] = name
        return out
    if len(slices) > 1:
        raise ValueError(f"unexpected workload-slices count: {len(slices)}")
    out[c.WORKLOAD_SLICE_REPLACEMENT_FOR] = o.key(slices[0])
    out[c.WORKLOAD_SLICE_NAME] = workload_slices.slice_name(slices[0])
    return out


def controller_ref(api_version: str, kind: str, obj: Obj) -> dict[str, Any]:
    """`SetControllerReference`: the ownerReference that makes `obj` (of `api_version`/`kind`) the
    controller of what carries it; `obj`'s foreground deletion waits for that to go."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": o.name(obj),
        "uid": o.uid(obj),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pods_ready_condition(gj: GenericJob, wl: Obj) -> ConditionValue | None:
    """The PodsReady condition to write on the Job's Workload, None when it already has it."""
    current = o.find_condition(wl, c.WorkloadCondition.PODS_READY)
    want = pods_ready.pods_ready_condition(
        admitted=o.is_admitted(wl),
        pods_ready=gj.pods_ready(),
        current=None if current is None else (str(current.get("status", "")), str(current.get("reason", ""))),
    )
    if current is not None and (current.get("status"), current.get("reason")) == (want.status, want.reason):
        return None
    return want


def _same_reclaimable(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    return {r.get("name"): r.get("count") for r in a} == {r.get("name"): r.get("count") for r in b} and len(a) == len(b)


def _limit_to_pod_set_sizes(wl: Obj, reclaimable: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`LimitReclaimablePodsToPodSetSizes`: no podSet gives back more pods than it has."""
    sizes = {ps.get("name"): ps.get("count", 1) for ps in (wl.get("spec") or {}).get("podSets") or ()}
    return [{"name": r["name"], "count": min(r["count"], sizes.get(r["name"], r["count"]))} for r in reclaimable]


def _owned_by_single_pod(wl: Obj) -> bool:
    """`OwnedBySinglePod`: a plain Pod's Workload (not a group's)."""
    owners = o.meta(wl).get("ownerReferences") or []
    return (
        len(owners) == 1
        and o.annotations(wl).get(c.IS_GROUP_WORKLOAD) != "true"
        and owners[0].get("kind") == "Pod"
        and owners[0].get("apiVersion") == "v1"
    )


@dataclass(frozen=True, slots=True)
class Lookups:
    """The cluster-scoped objects a job's reconcile reads besides the job and its Workloads:
    `resource_flavors` name → ResourceFlavor `spec` (equivalence, starting pods),
    `workload_priority_classes` name → value and `priority_classes` name → PriorityClass
    (`resolve_priority`), `admission_check_controllers` name → `spec.controllerName` (whether a
    composable job runs here or on a MultiKueue worker)."""

    resource_flavors: Mapping[str, Obj] = field(default_factory=dict)
    workload_priority_classes: Mapping[str, int] = field(default_factory=dict)
    priority_classes: Mapping[str, Obj] = field(default_factory=dict)
    admission_check_controllers: Mapping[str, str] = field(default_factory=dict)


class _OnFirstRead(Mapping[str, Any]):
    """A map built from the store the first time it is read: most reconciles (a Job already
    admitted and running) read none of the three, and building them all up front copied every
    flavor and priority class on each pass."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build: Callable[[], dict[str, Any]] | None = build
        self._map: dict[str, Any] = {}

    def _built(self) -> dict[str, Any]:
        if self._build is not None:
            self._map, self._build = self._build(), None
        return self._map

    def __getitem__(self, key: str) -> Any:
        return self._built()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


def lookups_from(store: Store) -> Lookups:
    """The `Lookups` as the worker's caches hold them now: the one place every integration (the
    generic plan, pods, StatefulSets) reads them from; each map is built when first read."""
    return Lookups(
        resource_flavors=_OnFirstRead(
            lambda: {rf["metadata"]["name"]: rf.get("spec") or {} for rf in store.list("resourceflavors")}
        ),
        workload_priority_classes=_OnFirstRead(
            lambda: {
                wpc["metadata"]["name"]: int(wpc.get("value") or 0) for wpc in store.list("workloadpriorityclasses")
            }
        ),
        priority_classes=_OnFirstRead(lambda: {pc["metadata"]["name"]: pc for pc in store.list("priorityclasses")}),
        admission_check_controllers=_OnFirstRead(
            lambda: {
                ac["metadata"]["name"]: str((ac.get("spec") or {}).get("controllerName") or "")
                for ac in store.list("admissionchecks")
            }
        ),
    )


def equivalent(gj: GenericJob, wl: Obj, *, config: Configuration, flavors: Mapping[str, Obj]) -> bool:
    """`EquivalentToWorkload` (`jobframework/reconciler.go`): same owner, max execution time and podSets (count, minCount,
    containers, initContainers and, until admitted, tolerations); a Workload holding quota is
    compared as it runs, or as created while the Job is suspended. `flavors`: name → spec."""
    job = gj.obj
    owner = o.controller_of(wl) or {}
    if owner.get("name") != o.meta(job).get("name"):
        return False
    if config.feature_enabled(Feature.FINISH_ORPHANED_WORKLOADS) and (owner.get("uid") or "") != (
        o.meta(job).get("uid") or ""
    ):
        return False
    if (wl.get("spec") or {}).get("maximumExecutionTimeSeconds") != max_execution_time_seconds(job):
        return False
    job_sets = gj.pod_sets(partial_admission=config.feature_enabled(Feature.PARTIAL_ADMISSION))
    ignore = o.is_admitted(wl)
    wl_sets = (wl.get("spec") or {}).get("podSets") or []
    running = podset.expected_running_pod_sets(
        wl,
        flavors,
        tas=config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING),
        assign_queue_labels=config.feature_enabled(Feature.ASSIGN_QUEUE_LABELS_FOR_PODS),
        elastic=config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES),
    )
    if running is not None:
        if podset.same_pod_sets(job_sets, running, ignore_tolerations=ignore):
            return True
        return gj.is_suspended() and podset.same_pod_sets(job_sets, wl_sets, ignore_tolerations=ignore)
    return podset.same_pod_sets(job_sets, wl_sets, ignore_tolerations=ignore)


def prebuilt_workload_name(job: Obj, config: Configuration) -> str:
    """`PrebuiltWorkloadNameFor` (`webhook.api.jobs`), under this Configuration's gates."""
    return jobs.prebuilt_workload_name(
        job, identifier_annotations=config.feature_enabled(Feature.WORKLOAD_IDENTIFIER_ANNOTATIONS)
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """What one reconcile of a Job does: its actions in order, then maybe an error (the key is
    retried unless `retry` is False) or a later look (`requeue_after` seconds). The first action
    names the decision."""

    steps: tuple[ja.JobAction, ...] = ()
    error: str = ""
    requeue_after: float | None = None
    retry: bool = True

    @property
    def action(self) -> str:
        return self.steps[0].name if self.steps else "ignore"

    @property
    def workload(self) -> Obj | None:
        return self.steps[0].workload if self.steps else None

    @property
    def reason(self) -> str:
        return self.steps[0].reason if self.steps else ""

    @property
    def message(self) -> str:
        return self.steps[0].message if self.steps else ""


class _Planner:
    """`ReconcileGenericJob` for one top-level Job; each method is one lettered phase of upstream's
    `ReconcileGenericJob` (`pkg/controller/jobframework/reconciler.go`)."""

    def __init__(self, gj: GenericJob, config: Configuration, lookups: Lookups, now: datetime) -> None:
        self.gj = gj
        self.job = gj.obj
        self.config = config
        self.lookups = lookups
        self.now = now
        self.steps: list[ja.JobAction] = []
        self.requeue_after: float | None = None
        self.elastic = workload_slices.is_elastic(
            gj.obj, enabled=config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)
        )
        # Slices this plan finishes; a new slice replaces only what is left unfinished.
        self.finishing: set[str] = set()
        self.workloads: Sequence[Obj] = ()

    def add(self, action: ja.JobAction) -> None:
        self.steps.append(action)

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.add(ja.RecordEvent(reason=reason, message=message, warning=warning))

    def fail(self, error: str) -> JobError:
        """Ends planning early with `error` (retried), after the steps so far."""
        return JobError(error)

    # -- helpers ----------------------------------------------------------------------------------
    def equivalent(self, wl: Obj) -> bool:
        return equivalent(self.gj, wl, config=self.config, flavors=self.lookups.resource_flavors)

    def stop(self, wl: Obj | None, reason: str, message: str) -> None:
        """`stopJob` → `Job.Stop`, when it would change anything: suspend (the `Stopped` event),
        reset startTime, restore the template. A composable job stops its members itself; a job
        with its own stop (`JobWithCustomStop`) is always asked, as upstream asks it; a job without a
        custom stop (`JobWithoutCustomStop`) is stopped only while it runs."""
        if isinstance(self.gj, ComposableJob):
            self.steps.extend(self.gj.stop(wl, reason, message))
            return
        if isinstance(self.gj, JobWithoutCustomStop):
            if not self.gj.is_suspended():
                self.add(ja.StopJob(workload=wl, reason=reason, message=message))
            return
        if (
            not isinstance(self.gj, JobWithCustomStop)
            and self.gj.is_suspended()
            and not (self.job.get("status") or {}).get("startTime")
            and self.gj.restore_pod_sets_info(wl) is None
        ):
            return
        self.add(ja.StopJob(workload=wl, reason=reason, message=message))

    def priority(self, pod_sets: Sequence[Obj] | None = None) -> Priority:
        try:
            return resolve_priority(
                self.job,
                wpcs=self.lookups.workload_priority_classes,
                pcs=self.lookups.priority_classes,
                pod_sets=pod_sets
                if pod_sets is not None
                else self.gj.pod_sets(partial_admission=self.config.feature_enabled(Feature.PARTIAL_ADMISSION)),
                priority_class=self.gj.priority_class() if isinstance(self.gj, JobWithPriorityClass) else None,
            )
        except PriorityClassNotFound as exc:
            if exc.workload_class:
                self.event(c.JobEventReason.WORKLOAD_PRIORITY_CLASS_NOT_FOUND, str(exc), warning=True)
            raise self.fail(str(exc)) from exc

    # -- a. the one matching Workload (`ensureOneWorkload`, `ensurePrebuiltWorkloadInSync`) ----------
    def ensure_one(self, workloads: Sequence[Obj], prebuilt: Obj | None) -> Obj | None:
        self.workloads = workloads
        # A pod's prebuilt Workload (`EnsureWorkloadOwnedByAllMembers`) is not supported: the pod
        # adapter names its Workload itself, as before the job framework.
        if not isinstance(self.gj, ComposableJob) and prebuilt_workload_name(self.job, self.config):
            return self.prebuilt(prebuilt)
        if self.elastic:
            decision = workload_slices.ensure_slices(
                self.gj.pod_sets(partial_admission=self.config.feature_enabled(Feature.PARTIAL_ADMISSION)), workloads
            )
            for old, reason, message in decision.finish:
                self.add(ja.FinishWorkload(workload=old, reason=reason, message=message))
                self.finishing.add(o.key(old))
            if decision.compatible:
                selected = decision.workload
                if selected is not None and decision.new_counts is not None:
                    selected = self.update_counts(selected, decision.new_counts)
                return self.sync_slice_priority(selected)
        match: Obj | None = None
        to_delete: list[Obj] = []
        if isinstance(self.gj, ComposableJob):
            match, to_delete, writes = self.gj.find_matching_workloads(workloads)
            self.steps.extend(writes)
        else:
            for wl in workloads:
                if match is None and self.equivalent(wl):
                    match = wl
                else:
                    to_delete.append(wl)
        to_update = None
        if match is None and to_delete and self.gj.is_suspended() and not o.has_quota_reservation(to_delete[0]):
            to_update, to_delete = to_delete[0], to_delete[1:]
        if match is None and not self.gj.is_suspended() and self.gj.finished() is None:
            if len(to_delete) == 1:
                self.stop(to_delete[0], c.StopReason.NO_MATCHING_WORKLOAD, c.MSG_NO_MATCHING_WORKLOAD)
            else:
                self.stop(None, c.StopReason.NO_MATCHING_WORKLOAD, c.MSG_MISSING_WORKLOAD)
        for wl in to_delete:
            self.add(ja.DeleteWorkload(workload=wl))
        if any(not o.is_deleting(wl) for wl in to_delete):
            raise self.fail(
                f"{'no matching workloads' if match is None else 'extra workloads'}: deleted {len(to_delete)} workloads"
            )
        if to_update is not None:
            return self.update_to_match(to_update)
        if match is not None:
            match = self.sync_admission_gated_by(match)
            match = self.sync_priority(match)
        return match

    def update_counts(self, wl: Obj, new_counts: Mapping[str, int]) -> Obj:
        """`ApplyPodSetCounts`: the slice takes the Job's podSet counts in place."""
        spec = copy.deepcopy(dict(wl.get("spec") or {}))
        for ps in spec.get("podSets") or ():
            ps["count"] = new_counts.get(ps.get("name", ""), ps.get("count", 1))
        self.add(ja.UpdateWorkloadSpec(workload=wl, spec=spec))
        return {**wl, "spec": spec}

    def sync_slice_priority(self, wl: Obj | None) -> Obj | None:
        """`syncWorkloadSlicePriority`: a priority-class change reaches the slice going on and the
        quota-holding slice it waits behind, so the Job's slices never rank apart."""
        retained = workload_slices.latest_active([w for w in self.workloads if o.key(w) not in self.finishing])
        if retained is not None and (wl is None or o.key(retained) != o.key(wl)):
            self.sync_priority(retained)
        return None if wl is None else self.sync_priority(wl)

    def live_slices(self) -> list[Obj]:
        """The Job's unfinished slices once this plan's finishes land."""
        return [w for w in workload_slices.not_finished(self.workloads) if o.key(w) not in self.finishing]

    def prebuilt(self, wl: Obj | None) -> Obj | None:
        if wl is None:
            return None
        owner = o.controller_of(wl)
        if owner is not None and (owner.get("uid") or "") != (o.meta(self.job).get("uid") or ""):
            return None  # controlled by another object
        if owner is None:
            wl = copy.deepcopy(dict(wl))
            wl["metadata"]["ownerReferences"] = [
                *(wl["metadata"].get("ownerReferences") or ()),
                controller_ref(self.gj.api_version, self.gj.kind, self.job),
            ]
            uid = str(o.meta(self.job).get("uid", ""))
            labels = None if fields.is_label_value(uid) else {c.JOB_UID_LABEL: uid}
            if labels:
                wl["metadata"]["labels"] = {**(wl["metadata"].get("labels") or {}), **labels}
            self.add(ja.AdoptWorkload(workload=wl, labels=labels))
        if self.elastic and workload_slices.replacement_for(wl) is not None:
            return wl  # a scale-up slice is not compared with the Job until it is synced
        if not self.equivalent(wl):
            self.add(
                ja.FinishWorkload(workload=wl, reason=c.FinishedReason.OUT_OF_SYNC, message=c.MSG_PREBUILT_OUT_OF_SYNC)
            )
            return None
        return wl

    def update_to_match(self, wl: Obj) -> Obj:
        """`updateWorkloadToMatchJob`: the suspended Job's freshly built spec, `active` kept."""
        spec = self.construct()["spec"]
        if "active" in (wl.get("spec") or {}):
            spec["active"] = wl["spec"]["active"]
        self.add(ja.UpdateWorkloadSpec(workload=wl, spec=spec))
        self.event(c.JobEventReason.UPDATED_WORKLOAD, f"Updated not matching Workload for suspended job: {o.key(wl)}")
        return {**wl, "spec": spec}

    def sync_admission_gated_by(self, wl: Obj) -> Obj:
        """`UpdateAdmissionGatedBy`: the Job's `admission-gated-by` annotation, or its removal."""
        if not self.config.feature_enabled(Feature.ADMISSION_GATED_BY):
            return wl
        want = o.annotations(self.job).get(c.ADMISSION_GATED_BY, "")
        if o.annotations(wl).get(c.ADMISSION_GATED_BY, "") == want:
            return wl
        self.add(ja.UpdateAdmissionGatedBy(workload=wl, value=want or None))
        self.event(c.JobEventReason.UPDATED_WORKLOAD, f'Updated workload AdmissionGatedBy to "{want}"')
        annotations = {key: v for key, v in o.annotations(wl).items() if key != c.ADMISSION_GATED_BY}
        if want:
            annotations[c.ADMISSION_GATED_BY] = want
        return {**wl, "metadata": {**o.meta(wl), "annotations": annotations}}

    def sync_priority(self, wl: Obj) -> Obj:
        """`UpdateWorkloadPriority`: a Workload following the `priority-class` label takes the class
        it names now. One priced from a PriorityClass never switches, and one that reserved quota
        without a class cannot be given one."""
        ref = (wl.get("spec") or {}).get("priorityClassRef")
        if ref is None and o.has_quota_reservation(wl):
            return wl
        if ref is not None and (ref.get("group"), ref.get("kind")) != (c.GROUP, "WorkloadPriorityClass"):
            return wl
        if (ref or {}).get("name", "") == o.labels(self.job).get(c.PRIORITY_CLASS_LABEL, ""):
            return wl
        priority = self.priority((wl.get("spec") or {}).get("podSets") or ())
        new_ref = None if priority.ref is None else dict(priority.ref)
        if wl["spec"].get("priority") == priority.value and ref == new_ref:
            return wl
        self.add(ja.UpdatePriority(workload=wl, priority_class_ref=new_ref, priority=priority.value))
        self.event(c.JobEventReason.UPDATED_WORKLOAD, f"Updated workload priority class: {o.key(wl)}")
        return {**wl, "spec": {**wl["spec"], "priorityClassRef": new_ref, "priority": priority.value}}

    def construct(self) -> dict[str, Any]:
        """`constructWorkload`: a composable job builds its own (after the writes it needs)."""
        if isinstance(self.gj, ComposableJob):
            wl, writes = self.gj.construct_workload()
            self.steps.extend(writes)
            return wl
        return build_workload(self.gj, config=self.config, priority=self.priority(), slices=self.live_slices())

    def finalize_job(self) -> None:
        """`finalizeJob`."""
        if isinstance(self.gj, JobWithFinalize):
            self.steps.extend(self.gj.finalize())

    # -- b-k ------------------------------------------------------------------------------------------
    def run(self, wl: Obj | None) -> None:
        if wl is not None and isinstance(self.gj, JobWithCustomWorkloadConditions):
            conditions = self.gj.custom_workload_conditions(wl)
            if conditions:
                self.add(ja.SetWorkloadConditions(workload=wl, conditions=conditions))
                return
        if wl is not None and o.is_finished(wl):
            self.finalize_job()
            self.event(c.JobEventReason.FINISHED_WORKLOAD, f"Workload '{o.key(wl)}' is declared finished")
            if c.RESOURCE_IN_USE_FINALIZER in (o.meta(wl).get("finalizers") or ()):
                self.add(ja.RemoveWorkloadFinalizer(workload=wl))
            return
        if wl is not None and o.is_deleting(wl):
            self.stop(wl, c.StopReason.WORKLOAD_DELETED, c.MSG_WORKLOAD_DELETED)
            self.add(ja.RemoveWorkloadFinalizer(workload=wl))
            return
        finished = self.gj.finished()
        if finished is not None:
            if wl is not None:
                self.add(ja.FinishWorkload(workload=wl, reason=finished[0], message=finished[1]))
                self.event(c.JobEventReason.FINISHED_WORKLOAD, f"Workload '{o.key(wl)}' is declared finished")
            self.finalize_job()
            return
        if wl is None:
            self.no_workload()
            return
        if self.config.feature_enabled(Feature.RECLAIMABLE_PODS) and isinstance(self.gj, JobWithReclaimablePods):
            wanted = _limit_to_pod_set_sizes(wl, self.gj.reclaimable_pods(wl))
            if not _same_reclaimable(wanted, (wl.get("status") or {}).get("reclaimablePods") or ()):
                self.add(ja.UpdateReclaimablePods(workload=wl, reclaimable_pods=wanted))
                return
        if self.config.wait_for_pods_ready_enabled:
            ready = pods_ready_condition(self.gj, wl)
            if ready is not None:
                self.add(ja.SetPodsReady(workload=wl, reason=ready.reason, message=ready.message, condition=ready))
                return
        if o.is_condition_true(wl, c.WorkloadCondition.EVICTED):
            self.evicted(wl)
            return
        if self.gj.is_suspended():
            self.suspended(wl)
            return
        if not o.is_admitted(wl) and not self.elastic:
            # An elastic Job keeps running while its next slice waits: its new pods stay gated.
            self.stop(wl, c.StopReason.NOT_ADMITTED, c.MSG_NOT_ADMITTED_BY_CLUSTER_QUEUE)

    def no_workload(self) -> None:
        """`handleJobWithNoWorkload`: create it once no pod is active (a prebuilt one is waited for)."""
        if isinstance(self.gj, ComposableJob):
            prebuilt = self.gj.prebuilt_workload_name()
        else:
            prebuilt = prebuilt_workload_name(self.job, self.config)
        if prebuilt:
            self.stop(None, c.StopReason.NO_MATCHING_WORKLOAD, c.MSG_MISSING_PREBUILT_WORKLOAD)
        if self.gj.is_active() and not self.elastic:
            return  # wait until no pod is left; a scaling elastic Job keeps its pods
        if prebuilt:
            raise self.fail("prebuilt workload not found")
        try:
            wl = self.construct()
        except ValueError as exc:
            raise self.fail(str(exc)) from exc
        self.add(ja.CreateWorkload(body=wl))
        self.event(c.JobEventReason.CREATED_WORKLOAD, f"Created Workload: {o.key(wl)}")

    def evicted(self, wl: Obj) -> None:
        """Stop the Job, release the quota once no pod is active, and apply the retention policy."""
        cond = o.find_condition(wl, c.WorkloadCondition.EVICTED) or {}
        reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
        self.stop(wl, c.StopReason.WORKLOAD_EVICTED, message)
        if o.has_quota_reservation(wl) and not self.gj.is_active():
            # A pod-owned Workload dies with its pod: requeuing it would place nothing.
            requeue = reason in (c.EvictionReason.PREEMPTED, c.EvictionReason.NODE_FAILURES) and not (
                self.config.feature_enabled(Feature.SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS)
                and _owned_by_single_pod(wl)
            )
            self.add(ja.ClearReservation(workload=wl, reason=reason, message=message, requeue=requeue))
        retention = self.config.object_retention_policies.workloads.after_deactivated_by_kueue_s
        active = (wl.get("spec") or {}).get("active", True)
        if retention is None or active or not reason.startswith(f"{c.EvictionReason.DEACTIVATED}DueTo"):
            return
        since = (
            datetime.fromisoformat(str(cond.get("lastTransitionTime"))) if cond.get("lastTransitionTime") else self.now
        )
        left = (since - self.now).total_seconds() + retention
        if left > 0:
            self.requeue_after = left
            return
        self.add(ja.DeleteJob())
        self.event(c.JobEventReason.DELETED, c.MSG_DEACTIVATION_RETENTION_EXPIRED)

    def suspended(self, wl: Obj) -> None:
        if o.is_admitted(wl):
            self.start(wl)
            return
        if o.has_quota_reservation(wl) and (note := admission_checks.pending_checks_message(wl)):
            if isinstance(self.gj, ComposableJob):
                for member in self.gj.members():
                    self.add(ja.RecordAdmissionChecks(workload=wl, message=note, regarding=member))
            else:
                self.add(ja.RecordAdmissionChecks(workload=wl, message=note))
        if isinstance(self.gj, JobWithCustomQueueNameChange) and not self.gj.follows_queue_name():
            return
        queue = o.labels(self.job).get(c.QUEUE_LABEL, "")
        if queue != (wl.get("spec") or {}).get("queueName", ""):
            self.add(ja.SyncQueueName(workload=wl, queue_name=queue))

    def start(self, wl: Obj) -> None:
        """`startJob`: a composable job's members are started by its own pod actions, unless the
        Workload has a MultiKueue check (`ShouldSkipLocalExecution`: the pods run on a worker and
        stay gated here); a start that cannot apply finishes the Workload as FailedToStart."""
        if not isinstance(self.gj, ComposableJob):
            self.add(ja.StartJob(workload=wl))
            return
        if self.config.feature_enabled(Feature.MULTI_KUEUE) and self._has_multikueue_check(wl):
            return
        try:
            self.steps.extend(self.gj.run(wl))
        except StartConflict as exc:
            self.add(ja.FinishWorkload(workload=wl, reason=c.FinishedReason.FAILED_TO_START, message=str(exc)))
            raise _Unretryable(str(exc)) from exc

    def _has_multikueue_check(self, wl: Obj) -> bool:
        """`GetMultiKueueAdmissionCheck` found one: a check of the Workload is MultiKueue's."""
        controllers = self.lookups.admission_check_controllers
        return any(
            controllers.get(str(state.get("name"))) == c.MULTIKUEUE_CONTROLLER
            for state in (wl.get("status") or {}).get("admissionChecks") or ()
        )


class _Unretryable(JobError):
    retry = False


def plan_child(gj: GenericJob, ancestor_workloads: Sequence[Obj], *, elastic: bool) -> Plan:
    """A Job owned by a managed Job never gets a Workload: it is kept suspended while its ancestor's
    newest unfinished Workload is missing or not admitted (`shouldSuspendChildJob` in `jobframework/reconciler.go`). With `elastic` (the child
    or the ancestor is elastic) the newest slice may be a replacement still waiting for quota, so
    only its eviction suspends the child (`shouldSuspendChildJob`)."""
    if gj.finished() is not None or gj.is_suspended():
        return Plan()
    live = workload_slices.not_finished(ancestor_workloads)
    if live and (
        not o.is_condition_true(live[-1], c.WorkloadCondition.EVICTED) if elastic else o.is_admitted(live[-1])
    ):
        return Plan()
    return Plan(
        (ja.SuspendChild(), ja.RecordEvent(reason=c.JobEventReason.SUSPENDED, message=c.MSG_CHILD_JOB_SUSPENDED))
    )


def plan_finalize(workloads: Sequence[Obj], config: Configuration) -> Plan:
    """The job is gone or being deleted (`finalizeWorkloads`): release every Workload it owned,
    finishing the orphans it controlled first when FinishOrphanedWorkloads is on."""
    finish = config.feature_enabled(Feature.FINISH_ORPHANED_WORKLOADS)
    return Plan(
        tuple(
            ja.Finalize(workload=wl, finish=finish and not o.is_deleting(wl) and o.controller_of(wl) is not None)
            for wl in workloads
        )
    )


def plan_top_level(
    gj: GenericJob,
    workloads: Sequence[Obj],
    *,
    config: Configuration,
    store: Store,
    now: datetime,
    lookups: Lookups | None = None,
) -> Plan:
    """`ReconcileGenericJob` for a job no managed ancestor owns. `workloads` are those its
    ownerReferences name (`owned_workloads`); `store` is read for everything else (the prebuilt
    Workload, and the `lookups` unless the adapter has read them already, so both see the same)."""
    planner = _Planner(gj, config, lookups_from(store) if lookups is None else lookups, now)
    name = prebuilt_workload_name(gj.obj, config)
    try:
        wl = planner.ensure_one(workloads, store.get("workloads", f"{o.namespace(gj.obj)}/{name}") if name else None)
        planner.run(wl)
    except JobError as exc:
        return Plan((*planner.steps, *exc.actions), error=str(exc), retry=exc.retry)
    return Plan(tuple(planner.steps), requeue_after=planner.requeue_after)


def controlled_by_enabled_integration(obj: Obj, config: Configuration) -> bool:
    """The job's controller is an object of an enabled integration (a JobSet or a PyTorchJob in
    an AppWrapper, a JobSet of a TrainJob): that integration runs it, so the job's own reconciler
    leaves it alone."""
    owner = o.controller_of(obj)
    if owner is None:
        return False
    gk = jobs.group_kind(owner.get("apiVersion", ""), owner.get("kind", ""))
    return any((f.group, f.kind) == gk for f in integrations.enabled(config.integrations.frameworks))


def plan_always_top_level(
    obj: Obj | None,
    workloads: Sequence[Obj],
    wrap: Callable[[Obj], GenericJob],
    *,
    namespace_labels: Mapping[str, str] | None,
    config: Configuration,
    store: Store,
    now: datetime,
) -> Plan:
    """`ReconcileGenericJob` for a kind that is always top level (a JobSet, an AppWrapper, a
    TrainJob): a deleted job's Workloads are finalized; a job outside `managedJobsNamespaceSelector`,
    or without a queue name unless `manageJobsWithoutQueueName`, is left alone; else `plan_top_level`."""
    if obj is None or o.is_deleting(obj):
        return plan_finalize(workloads, config)
    if namespace_labels is None or not selector.matches(
        config.managed_jobs_namespace_selector, namespace_labels, nil_matches=True
    ):
        return Plan()
    if not o.labels(obj).get(c.QUEUE_LABEL) and not config.manage_jobs_without_queue_name:
        return Plan()
    return plan_top_level(wrap(obj), workloads, config=config, store=store, now=now)


@dataclass(frozen=True, slots=True)
class OwnedKindPlan:
    """The `PlanFunc` of a kind of a family (Kubeflow's replica-spec jobs, KubeRay's kinds): top level
    (`plan_always_top_level`) unless an enabled integration controls the object (a PyTorchJob in an
    AppWrapper, the RayCluster KubeRay makes for a RayJob), which then runs it; nothing at all for
    an object `skip` names (upstream's `JobWithSkip`). `wrap(obj, tas)` sees the object as a
    `GenericJob` (`tas`: the TopologyAwareScheduling gate, for its podSets' topology requests)."""

    wrap: Callable[[Obj, bool], GenericJob]
    skip: Callable[[Obj, Configuration], bool] | None = None

    def __call__(
        self,
        obj: Obj | None,
        workloads: Sequence[Obj],
        /,
        *,
        namespace_labels: Mapping[str, str] | None,
        config: Configuration,
        store: Store | None = None,
        now: datetime | None = None,
    ) -> Plan:
        tas = config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
        if obj is not None and self.skip is not None and self.skip(obj, config):
            return Plan()
        if obj is not None and not o.is_deleting(obj) and controlled_by_enabled_integration(obj, config):
            return Plan()  # the owner's integration runs it
        return plan_always_top_level(
            obj,
            workloads,
            lambda job: self.wrap(job, tas),
            namespace_labels=namespace_labels,
            config=config,
            store=store if store is not None else Store(),
            now=now or datetime.now(UTC),
        )
