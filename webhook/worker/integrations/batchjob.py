"""batch/v1 Job: the adapter the generic job reconcile works through, and the writes that carry
a plan out.

`BatchJob` fulfils `jobframework.interface.GenericJob` for a batch/v1 Job (upstream's
`pkg/controller/jobs/job/job_controller.go`: `PodSets`, `RunWithPodSetsInfo`,
`RestorePodSetsInfo`, `Stop`, `Finished`, `PodsReady`, `ReclaimablePods`, with
`pkg/podset/podset.go` through `jobframework.podset`). `plan` decides what is Job-specific before
the generic reconcile (`jobframework.plan`): a Job of another integration is left alone, and
a Job under a managed Job is only held suspended (`FindAncestorJobManagedByKueue`).
`JobReconciler` carries a plan's actions out against the API (upstream v0.19.2).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import fields, jobs, selector
from webhook.api import objects as o
from webhook.api.integrations import BATCH_JOB
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework import podset, workload_slices
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import StartConflict
from webhook.worker.jobframework.plan import (
    Plan,
    Priority,
    PriorityClassNotFound,
    prebuilt_workload_name,
    resolve_priority,
)
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring
from webhook.worker.store import Store

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
    "setup",
    "start_patch",
    "workload_name",
]

log = logging.getLogger(__name__)

JOB_API = BATCH_JOB.api_version
_JOB_CONTROLLER_LABELS = (
    "controller-uid",
    "job-name",
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
)
_DROPPED_TEMPLATE_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid")
CONTROLLER_NAME = "batch/job-kueue-controller"


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


def pod_sets(job: Obj, *, partial_admission: bool = True, tas: bool = False) -> list[dict[str, Any]]:
    """The one `main` podSet: count min(parallelism, completions), minCount from the annotation, and
    with the TopologyAwareScheduling gate the template's topology request (`Job.PodSets`)."""
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    meta = template.setdefault("metadata", {})
    labels = {key: v for key, v in (meta.get("labels") or {}).items() if key not in _DROPPED_TEMPLATE_LABELS}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    pspec = template.get("spec") or {}
    podset.sanitize_env(pspec)
    ps: dict[str, Any] = {"name": "main", "count": jobs.pods_count(job), "template": template}
    minimum = min_pods_count(job)
    if partial_admission and minimum is not None:
        ps["minCount"] = minimum
    if tas:
        ps["topologyRequest"] = podset.topology_request(
            meta.get("annotations") or {}, pod_index_label=c.JOB_COMPLETION_INDEX_ANNOTATION
        )
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


def start_patch(
    job: Obj,
    wl: Obj,
    flavors: Mapping[str, Obj],
    *,
    tas: bool = False,
    assign_queue_labels: bool = True,
    elastic: bool = False,
) -> dict[str, Any]:
    """`RunWithPodSetsInfo`: the one merge patch that starts an admitted Job (`startJob` in `jobframework/reconciler.go`), guarded by its
    resourceVersion. `flavors`: ResourceFlavor name → object; `elastic`: the
    ElasticJobsViaWorkloadSlices gate. Raises `StartConflict` when the admission cannot be applied
    and `podset.FlavorNotFound` when a flavor is not known yet."""
    template = (job.get("spec") or {}).get("template") or {}
    try:
        infos = podset.from_admission(
            wl, _flavor_specs(flavors), tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic
        )
        if len(infos) != 1:
            raise podset.PermanentError(podset.bad_length(1, len(infos)))
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
    return o.guarded_patch(job, spec=patch_spec)


def _restore_map(
    live: Mapping[str, str], original: Mapping[str, str], keep: Sequence[str] = ()
) -> dict[str, str | None]:
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
        terminal = _terminal_indexes(
            str(status.get("completedIndexes") or ""), str(status.get("failedIndexes") or ""), completions
        )
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
    if namespace_labels is None or not selector.matches(
        config.managed_jobs_namespace_selector, namespace_labels, nil_matches=True
    ):
        return Plan()
    if _owned_by_other_integration(job):
        return Plan()
    try:
        ancestor = find_managed_ancestor(job, lambda key: store.get("jobs", key), config)
    except jobs.AncestorError as exc:
        steps = (
            (ja.RecordEvent(reason=c.JobEventReason.JOB_NESTING_TOO_DEEP, message=str(exc), warning=True),)
            if exc.too_deep
            else ()
        )
        return Plan(steps, error=str(exc))
    if not o.labels(job).get(c.QUEUE_LABEL) and not config.manage_jobs_without_queue_name and ancestor is None:
        return Plan()
    if ancestor is not None:
        gate = config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)
        elastic = workload_slices.is_elastic(job, enabled=gate) or workload_slices.is_elastic(ancestor, enabled=gate)
        return fw.plan_child(BatchJob(job), owned_workloads(store, o.namespace(job), o.name(ancestor)), elastic=elastic)
    gj = BatchJob(job, tas=config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING))
    return fw.plan_top_level(gj, workloads, config=config, store=store, now=now or datetime.now(UTC))


# == the adapter ==================================================================================
class BatchJob:
    """A batch/v1 Job as a `GenericJob` (with `JobWithReclaimablePods`)."""

    __slots__ = ("obj", "tas")
    api_version = JOB_API
    kind = "Job"
    group = "batch"

    def __init__(self, obj: Obj, *, tas: bool = False) -> None:
        self.obj = obj
        self.tas = tas  # the TopologyAwareScheduling gate: podSets carry the template's topology request

    def is_suspended(self) -> bool:
        return is_suspended(self.obj)

    def is_active(self) -> bool:
        return _is_active(self.obj)

    def finished(self) -> tuple[str, str] | None:
        return finished_condition(self.obj)

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        return pod_sets(self.obj, partial_admission=partial_admission, tas=self.tas)

    def pods_ready(self) -> bool:
        return job_pods_ready(self.obj)

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        return restore_patch(self.obj, wl)

    def suspend_patch(self, *, stopping: bool) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": o.meta(self.obj).get("resourceVersion")}
        if stopping:
            meta["annotations"] = {c.STOPPING_ANNOTATION: "true"}
        return {"metadata": meta, "spec": {"suspend": True}}

    def stop_status_patch(self) -> dict[str, Any] | None:
        """`Job.Stop` resets `status.startTime`, or the API refuses template changes."""
        return {"status": {"startTime": None}} if (self.obj.get("status") or {}).get("startTime") else None

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        return start_patch(self.obj, wl, flavors, tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic)

    def reclaimable_pods(self, wl: Obj) -> list[dict[str, Any]]:
        return reclaimable_pods(self.obj, wl)


INTEGRATION = Integration(
    api_version=JOB_API,
    kind=BATCH_JOB.kind,
    resource=BATCH_JOB.resource,
    controller_name=CONTROLLER_NAME,
    wrap=BatchJob,
)
"""batch/v1 Jobs for the generic executor."""


def owned_workloads(store: Store, ns: str, name: str) -> list[dict[str, Any]]:
    """The Workloads the batch/v1 Job `name` owns (`jobframework.plan.owned_workloads`)."""
    return fw.owned_workloads(store, ns, name, api_version=JOB_API, kind="Job")


def build_workload(
    job: Obj, *, config: Configuration, priority: Priority, slices: Sequence[Obj] = ()
) -> dict[str, Any]:
    """The Workload for a top-level Job (`jobframework.plan.build_workload`)."""
    gj = BatchJob(job, tas=config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING))
    return fw.build_workload(gj, config=config, priority=priority, slices=slices)


def workload_name(name: str, uid: str, *, extra: str = "", short: bool = False) -> str:
    """The Workload name of the batch/v1 Job `name` (`webhook.api.jobs.workload_name` with the Job's
    kind and group; `extra`: an elastic Job's generation; `short`: gate ShortWorkloadNames)."""
    return jobs.workload_name(name, uid, kind=BatchJob.kind, group=BatchJob.group, extra=extra, short=short)


# == I/O ==========================================================================================
class JobReconciler(OwnedJobReconciler, plan=plan, integration=INTEGRATION):
    """The batch/v1 Job reconciler: the generic one, planning with this module's `plan`."""


def setup(ctx: SetupContext) -> Wiring:
    """The batch/v1 Job integration in the worker: every Job is watched."""
    return JobReconciler.wiring(ctx, Resource(BATCH_JOB.resource, BATCH_JOB.api_version))
