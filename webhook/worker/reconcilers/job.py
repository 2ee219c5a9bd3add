"""batch/v1 Job ⇄ Workload: pure builders and plans, plus the thin I/O that carries them out.

Mirrors, at upstream commit ff69552e79, `pkg/controller/jobframework/reconciler.go`
(`ReconcileGenericJob`, `ensureOneWorkload`, `EquivalentToWorkload`, `UpdateWorkloadPriority`,
`UpdateAdmissionGatedBy`, `handleJobWithNoWorkload`, `startJob`, `stopJob`,
`handleWorkloadAfterDeactivatedPolicy`, `FindAncestorJobManagedByKueue`),
`pkg/controller/jobframework/workload_names.go`, `pkg/controller/jobs/job/job_controller.go`
(`PodSets`, `RunWithPodSetsInfo`, `RestorePodSetsInfo`, `Stop`, `Finished`, `PodsReady`,
`ReclaimablePods`) and `pkg/podset/podset.go` (through `reconcilers.podset`).

`plan` decides one reconcile as an ordered list of steps, in the per-reconcile order of §4.1 (a-k):
find or repair the one matching Workload (§4.4), then the first of finished / being deleted / Job
finished / no Workload / reclaimable pods / PodsReady / evicted / suspended / running. Upstream
often acts twice in one pass (stop the Job, then clear the reservation or create the Workload);
the steps keep that order. `JobReconciler` carries the steps out against the API.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import fields, selector
from webhook.config import Configuration
from webhook.core import pods_ready
from webhook.core.conditions import ConditionValue
from webhook.worker import admission_checks, events, reporter
from webhook.worker.reconcilers import elastic, podset, workload_slices
from webhook.worker.reconcilers.pod_common import _annotations, _deleting, _labels, _meta
from webhook.worker.status import (
    find_condition,
    is_true,
    set_condition,
    unset_quota_reservation,
    update_status,
)
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

__all__ = [
    "JobReconciler",
    "Plan",
    "StartConflict",
    "Step",
    "build_workload",
    "equivalent",
    "finished_condition",
    "job_pods_ready",
    "plan",
    "pod_sets",
    "reclaimable_pods",
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
_MANAGED_OWNERS_CHAIN_LIMIT = 10
_LABEL_VALUE_MAX_LENGTH = 63
CONTROLLER_NAME = "batch/job-kueue-controller"


class StartConflict(Exception):
    """The admission cannot be applied to the Job's template (a permanent error)."""


# == accessors ====================================================================================
def _key(obj: Obj) -> str:
    return f"{_meta(obj).get('namespace', '')}/{_meta(obj).get('name', '')}"


def _controller_of(obj: Obj) -> Obj | None:
    for ref in _meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def is_suspended(job: Obj) -> bool:
    """`Job.IsSuspended`: a Job being stopped (annotation `stopping`) does not count as suspended."""
    return bool((job.get("spec") or {}).get("suspend")) and _annotations(job).get(c.STOPPING_ANNOTATION) != "true"


def _is_active(job: Obj) -> bool:
    return bool((job.get("status") or {}).get("active"))


def _has_quota_reservation(wl: Obj) -> bool:
    return is_true(wl, c.WorkloadCondition.QUOTA_RESERVED)


def _is_admitted(wl: Obj) -> bool:
    return is_true(wl, c.WorkloadCondition.ADMITTED)


def _is_finished(wl: Obj) -> bool:
    return is_true(wl, c.WorkloadCondition.FINISHED)


def owned_workloads(store: Store, ns: str, name: str) -> list[dict[str, Any]]:
    """Workloads with an ownerReference to the batch/v1 Job `name` (upstream's owner index: any
    reference, any UID), by name as the API lists them."""
    out = []
    for wl in store.list("workloads", ns):
        for ref in _meta(wl).get("ownerReferences") or ():
            if ref.get("apiVersion") == JOB_API and ref.get("kind") == "Job" and ref.get("name") == name:
                out.append(wl)
                break
    return sorted(out, key=lambda w: str(w["metadata"]["name"]))


# == pure builders ================================================================================
def workload_name(owner_name: str, owner_uid: str, *, kind: str = "Job", group: str = "batch", extra: str = "") -> str:
    """`<lower(kind)>-<owner>` cut to 247 characters, `-`, then 5 hex of SHA-1(kind, group, name, uid
    [, extra]) (`GenerateWorkloadNameWithExtra`; an elastic Job's slices add its generation)."""
    prefix = f"{kind.lower()}-{owner_name}"[:_MAX_PREFIX]
    text = f"{kind}\n{group}\n{owner_name}\n{owner_uid}" + (f"\n{extra}" if extra else "")
    digest = hashlib.sha1(text.encode()).hexdigest()[:5]
    return f"{prefix}-{digest}"


def _int(value: object, default: int) -> int:
    return default if value is None else int(value)  # type: ignore[call-overload]


def pods_count(job: Obj) -> int:
    spec = job.get("spec") or {}
    parallelism = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))


def min_pods_count(job: Obj) -> int | None:
    """`minPodsCount`: the `job-min-parallelism` annotation, when it parses."""
    raw = _annotations(job).get(c.JOB_MIN_PARALLELISM)
    try:
        return None if raw is None else fields.go_atoi(raw)
    except ValueError:
        return None


def _sync_completions(job: Obj) -> bool:
    """`syncCompletionWithParallelism`: the `job-completions-equal-parallelism` annotation is true."""
    try:
        return fields.go_parse_bool(_annotations(job).get(c.JOB_COMPLETIONS_EQUAL_PARALLELISM, ""))
    except ValueError:
        return False


def max_execution_time_seconds(obj: Obj) -> int | None:
    """`MaximumExecutionTimeSecondsForObject`: the label as a positive int32, else None."""
    raw = _labels(obj).get(c.MAX_EXEC_TIME_LABEL)
    try:
        value = fields.go_atoi(raw) if raw is not None else 0
    except ValueError:
        return None
    return value if 0 < value < 2**31 else None


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
    ps: dict[str, Any] = {"name": "main", "count": pods_count(job), "template": template}
    minimum = min_pods_count(job)
    if partial_admission and minimum is not None:
        ps["minCount"] = minimum
    return [ps]


@dataclass(frozen=True, slots=True)
class Priority:
    value: int = 0
    ref: Mapping[str, str] | None = None


class PriorityClassNotFound(Exception):
    """The class the Job names is missing; `workload_class` when it is a WorkloadPriorityClass."""

    def __init__(self, message: str, *, workload_class: bool) -> None:
        super().__init__(message)
        self.workload_class = workload_class


def resolve_priority(job: Obj, *, wpcs: Mapping[str, int], pcs: Mapping[str, Obj],
                     pod_sets: Sequence[Obj] | None = None) -> Priority:
    """`ExtractPriority`: the WorkloadPriorityClass label, else the podSets' (default: the Job
    template's) PriorityClass, else the lowest global default."""
    name = _labels(job).get(c.PRIORITY_CLASS_LABEL)
    if name:
        if name not in wpcs:
            raise PriorityClassNotFound(f'WorkloadPriorityClass "{name}" not found', workload_class=True)
        return Priority(wpcs[name], {"group": c.GROUP, "kind": "WorkloadPriorityClass", "name": name})
    templates = [ps.get("template") or {} for ps in pod_sets] if pod_sets is not None else [(job.get("spec") or {}).get("template") or {}]
    pc_name = next((str(t["spec"]["priorityClassName"]) for t in templates if (t.get("spec") or {}).get("priorityClassName")), "")
    if pc_name:
        pc = pcs.get(pc_name)
        if pc is None:
            raise PriorityClassNotFound(f'priorityclasses.scheduling.k8s.io "{pc_name}" not found', workload_class=False)
        return Priority(int(pc.get("value") or 0), {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pc_name})
    defaults = sorted((int(p.get("value") or 0), n) for n, p in pcs.items() if p.get("globalDefault"))
    if defaults:
        value, n = defaults[0]
        return Priority(value, {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": n})
    return Priority()


def build_workload(job: Obj, *, config: Configuration, priority: Priority, slices: Sequence[Obj] = ()) -> dict[str, Any]:
    """The Workload for a top-level Job (§4.2). For an elastic Job it is a new slice, named after
    the Job's generation, that replaces the one unfinished slice in `slices` if there is one
    (`newWorkloadName`, `prepareWorkloadSlice`); more than one raises `ValueError`."""
    meta = _meta(job)
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    elastic = workload_slices.is_elastic(job, enabled=config.feature_enabled("ElasticJobsViaWorkloadSlices"))
    wl_name = workload_name(name, uid, extra=str(_generation(job))) if elastic else workload_name(name, uid)
    job_labels, job_annotations = _labels(job), _annotations(job)
    labels = {key: job_labels[key] for key in config.integrations.label_keys_to_copy if key in job_labels}
    if not fields.is_label_value(uid):
        labels[c.JOB_UID_LABEL] = uid
    annotations = {key: v for key, v in job_annotations.items() if key.startswith(c.PROVREQ_ANNOTATION_PREFIX)}
    if config.feature_enabled("AdmissionGatedBy") and job_annotations.get(c.ADMISSION_GATED_BY):
        annotations[c.ADMISSION_GATED_BY] = job_annotations[c.ADMISSION_GATED_BY]
    if elastic:
        annotations.update(_slice_annotations(wl_name, slices))
    wl_meta: dict[str, Any] = {
        "name": wl_name,
        "namespace": meta.get("namespace", ""),
        "finalizers": [c.RESOURCE_IN_USE_FINALIZER],
        "labels": labels,
        "ownerReferences": [_owner_ref(job)],
    }
    if annotations:
        wl_meta["annotations"] = annotations
    spec: dict[str, Any] = {
        "queueName": job_labels.get(c.QUEUE_LABEL, ""),
        "podSets": pod_sets(job, partial_admission=config.feature_enabled("PartialAdmission")),
    }
    max_exec = max_execution_time_seconds(job)
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
    if priority.ref is not None:
        spec["priorityClassRef"] = dict(priority.ref)
    spec["priority"] = priority.value
    return {"apiVersion": c.V1BETA2, "kind": "Workload", "metadata": wl_meta, "spec": spec}


def _slice_annotations(name: str, slices: Sequence[Obj]) -> dict[str, str]:
    """`prepareWorkloadSlice`: marks the Workload elastic; the first slice names the chain after
    itself, a scale-up slice names the slice it replaces and carries the chain's name on."""
    out = {c.ELASTIC_JOB: "true"}
    if not slices:
        out[c.WORKLOAD_SLICE_NAME] = name
        return out
    if len(slices) > 1:
        raise ValueError(f"unexpected workload-slices count: {len(slices)}")
    out[c.WORKLOAD_SLICE_REPLACEMENT_FOR] = _key(slices[0])
    out[c.WORKLOAD_SLICE_NAME] = workload_slices.slice_name(slices[0])
    return out


def _owner_ref(job: Obj) -> dict[str, Any]:
    return {"apiVersion": JOB_API, "kind": "Job", "name": _meta(job).get("name", ""), "uid": _meta(job).get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


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
    return int(status.get("succeeded") or 0) + int(status.get("ready") or 0) + uncounted >= pods_count(job)


def pods_ready_condition(job: Obj, wl: Obj) -> ConditionValue | None:
    """The PodsReady condition to write on the Job's Workload, None when it already has it."""
    current = find_condition(wl, c.WorkloadCondition.PODS_READY)
    want = pods_ready.pods_ready_condition(
        admitted=_is_admitted(wl),
        pods_ready=job_pods_ready(job),
        current=None if current is None else (str(current.get("status", "")), str(current.get("reason", ""))),
    )
    if current is not None and (current.get("status"), current.get("reason")) == (want.status, want.reason):
        return None
    return want


def _flavor_specs(flavors: Mapping[str, Obj]) -> dict[str, Obj]:
    return {name: (rf.get("spec") or {}) for name, rf in flavors.items()}


def start_patch(job: Obj, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool = False, assign_queue_labels: bool = True,
                elastic: bool = False) -> dict[str, Any]:
    """`RunWithPodSetsInfo`: the one merge patch that starts an admitted Job (§4.5), guarded by its
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
    return {"metadata": {"resourceVersion": _meta(job).get("resourceVersion")}, "spec": patch_spec}


def _restore_map(live: Mapping[str, str], original: Mapping[str, str], keep: Sequence[str] = ()) -> dict[str, str | None]:
    want = dict(original)
    for key in keep:
        if key in live:
            want[key] = live[key]
    out: dict[str, str | None] = {key: None for key in live if key not in want}
    out.update({key: v for key, v in want.items() if live.get(key) != v})
    return out


def restore_patch(job: Obj, wl: Obj | None) -> dict[str, Any] | None:
    """`RestorePodSetsInfo` and the end of `Job.Stop` (§4.6 step 3): the template back to the
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
    if c.STOPPING_ANNOTATION in _annotations(job):
        out["metadata"] = {"annotations": {c.STOPPING_ANNOTATION: None}}
    if not out:
        return None
    out.setdefault("metadata", {})["resourceVersion"] = _meta(job).get("resourceVersion")
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


def _same_reclaimable(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    return {r.get("name"): r.get("count") for r in a} == {r.get("name"): r.get("count") for r in b} and len(a) == len(b)


# == the Workload of a Job: equivalence, ancestors, prebuilt ======================================
class _Reads:
    """What a plan reads besides the Job and its Workloads, from the worker's caches, on demand."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @cached_property
    def flavor_specs(self) -> dict[str, Obj]:
        """ResourceFlavor name → spec."""
        return {o["metadata"]["name"]: o.get("spec") or {} for o in self.store.list("resourceflavors")}

    @cached_property
    def wpcs(self) -> dict[str, int]:
        return {o["metadata"]["name"]: int(o.get("value") or 0) for o in self.store.list("workloadpriorityclasses")}

    @cached_property
    def pcs(self) -> dict[str, Obj]:
        return {o["metadata"]["name"]: o for o in self.store.list("priorityclasses")}


def equivalent(job: Obj, wl: Obj, *, config: Configuration, flavors: Mapping[str, Obj]) -> bool:
    """`EquivalentToWorkload` (§4.4): same owner, max execution time and podSets (count, minCount,
    containers, initContainers and, until admitted, tolerations); a Workload holding quota is
    compared as it runs, or as created while the Job is suspended. `flavors`: name → spec."""
    owner = _controller_of(wl) or {}
    if owner.get("name") != _meta(job).get("name"):
        return False
    if config.feature_enabled("FinishOrphanedWorkloads") and (owner.get("uid") or "") != (_meta(job).get("uid") or ""):
        return False
    if (wl.get("spec") or {}).get("maximumExecutionTimeSeconds") != max_execution_time_seconds(job):
        return False
    job_sets = pod_sets(job, partial_admission=config.feature_enabled("PartialAdmission"))
    ignore = _is_admitted(wl)
    wl_sets = (wl.get("spec") or {}).get("podSets") or []
    running = podset.expected_running_pod_sets(wl, flavors, tas=config.feature_enabled("TopologyAwareScheduling"),
                                               assign_queue_labels=config.feature_enabled("AssignQueueLabelsForPods"),
                                               elastic=config.feature_enabled("ElasticJobsViaWorkloadSlices"))
    if running is not None:
        if podset.same_pod_sets(job_sets, running, ignore_tolerations=ignore):
            return True
        return is_suspended(job) and podset.same_pod_sets(job_sets, wl_sets, ignore_tolerations=ignore)
    return podset.same_pod_sets(job_sets, wl_sets, ignore_tolerations=ignore)


class AncestorError(Exception):
    """The owner chain cannot be followed; `too_deep` when it exceeds upstream's limit of 10."""

    def __init__(self, message: str, *, too_deep: bool = False) -> None:
        super().__init__(message)
        self.too_deep = too_deep


MSG_NESTING_TOO_DEEP = f"Terminated search for Kueue-managed Job because ancestor depth exceeded limit of {_MANAGED_OWNERS_CHAIN_LIMIT}"


def find_managed_ancestor(job: Obj, get_job: Callable[[str], Obj | None], config: Configuration) -> Obj | None:
    """`FindAncestorJobManagedByKueue` over batch/v1 Job owners: the top-most owning Job Kueue
    manages (it has a queue name, or manageJobsWithoutQueueName). The walk stops at any other
    owner kind: a Job controlled by another integration's object is left to that integration (see
    `_owned_by_other_integration`), and a CronJob's Job is a top-level Job."""
    ns = _meta(job).get("namespace", "")
    top: Obj | None = None
    current, seen = job, set()
    while True:
        uid = _meta(current).get("uid", "")
        if uid in seen:
            raise AncestorError("cyclic ownership")
        seen.add(uid)
        owner = _controller_of(current)
        if owner is None or (owner.get("apiVersion"), owner.get("kind")) != (JOB_API, "Job"):
            return top
        parent = get_job(f"{ns}/{owner.get('name', '')}")
        if parent is None:
            raise AncestorError(f'workload owner not found\njobs.batch "{owner.get("name", "")}" not found')
        if _meta(parent).get("uid") != owner.get("uid"):
            return top
        if config.manage_jobs_without_queue_name or _labels(parent).get(c.QUEUE_LABEL):
            top = parent
        current = parent
        if len(seen) > _MANAGED_OWNERS_CHAIN_LIMIT:
            raise AncestorError(MSG_NESTING_TOO_DEEP, too_deep=True)


def _owned_by_other_integration(job: Obj) -> bool:
    """The controller owner is not a batch/v1 object: another integration's child Job."""
    owner = _controller_of(job)
    return owner is not None and owner.get("apiVersion") != JOB_API


def prebuilt_workload_name(job: Obj, config: Configuration) -> str:
    """`PrebuiltWorkloadNameFor`: label or annotation `prebuilt-workload-name` (the annotation wins
    with WorkloadIdentifierAnnotations, and is the only place for a name longer than a label value)."""
    annotation = _annotations(job).get(c.PREBUILT_WORKLOAD_LABEL, "")
    if config.feature_enabled("WorkloadIdentifierAnnotations") and annotation:
        return annotation
    return _labels(job).get(c.PREBUILT_WORKLOAD_LABEL, "") or (annotation if len(annotation) > _LABEL_VALUE_MAX_LENGTH else "")


# == the plan =====================================================================================
@dataclass(frozen=True, slots=True)
class Step:
    """One write (and its event) of a reconcile; `action` names the `JobReconciler._do_*` method."""

    action: str  # finalize | suspend_child | stop | delete_workload | update_workload | adopt | update_priority
    #              | update_gated_by | event | finish | remove_finalizer | create | update_reclaimable | pods_ready
    #              | clear_reservation | delete_job | start | record_admission_checks | sync_queue
    workload: Obj | None = None
    reason: str = ""
    message: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Plan:
    """What one reconcile of a Job does: its steps in order, then maybe an error (the key is
    retried) or a later look (`requeue_after` seconds). The first step names the decision."""

    steps: tuple[Step, ...] = ()
    error: str = ""
    requeue_after: float | None = None

    @property
    def action(self) -> str:
        return self.steps[0].action if self.steps else "ignore"

    @property
    def workload(self) -> Obj | None:
        return self.steps[0].workload if self.steps else None

    @property
    def reason(self) -> str:
        return self.steps[0].reason if self.steps else ""

    @property
    def message(self) -> str:
        return self.steps[0].message if self.steps else ""

    @property
    def extra(self) -> Mapping[str, Any]:
        return self.steps[0].extra if self.steps else {}


class _Done(Exception):
    """Ends planning early with an error, after the steps so far."""


class _Planner:
    """`ReconcileGenericJob` for one top-level Job; each method is one numbered phase of §4.1."""

    def __init__(self, job: Obj, config: Configuration, reads: _Reads, now: datetime) -> None:
        self.job = job
        self.config = config
        self.reads = reads
        self.now = now
        self.steps: list[Step] = []
        self.requeue_after: float | None = None
        self.elastic = workload_slices.is_elastic(job, enabled=config.feature_enabled("ElasticJobsViaWorkloadSlices"))
        # Slices this plan finishes; a new slice replaces only what is left unfinished.
        self.finishing: set[str] = set()
        self.workloads: Sequence[Obj] = ()

    def add(self, action: str, wl: Obj | None = None, reason: str = "", message: str = "", **extra: Any) -> None:
        self.steps.append(Step(action, wl, reason, message, extra))

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.add("event", reason=reason, message=message, type="Warning" if warning else "Normal")

    def fail(self, error: str) -> _Done:
        return _Done(error)

    # -- helpers ----------------------------------------------------------------------------------
    def equivalent(self, wl: Obj) -> bool:
        return equivalent(self.job, wl, config=self.config, flavors=self.reads.flavor_specs)

    def stop(self, wl: Obj | None, reason: str, message: str) -> None:
        """`stopJob` → `Job.Stop`, when it would change anything: suspend (the `Stopped` event),
        reset startTime, restore the template."""
        if is_suspended(self.job) and not (self.job.get("status") or {}).get("startTime") and restore_patch(self.job, wl) is None:
            return
        self.add("stop", wl, reason, message)

    def priority(self, pod_sets: Sequence[Obj] | None = None) -> Priority:
        try:
            return resolve_priority(self.job, wpcs=self.reads.wpcs, pcs=self.reads.pcs, pod_sets=pod_sets)
        except PriorityClassNotFound as exc:
            if exc.workload_class:
                self.event(c.JobEventReason.WORKLOAD_PRIORITY_CLASS_NOT_FOUND, str(exc), warning=True)
            raise self.fail(str(exc)) from exc

    # -- a. the one matching Workload (§4.4, §4.12) -------------------------------------------------
    def ensure_one(self, workloads: Sequence[Obj], prebuilt: Obj | None) -> Obj | None:
        self.workloads = workloads
        if prebuilt_workload_name(self.job, self.config):
            return self.prebuilt(prebuilt)
        if self.elastic:
            decision = workload_slices.ensure_slices(pod_sets(self.job, partial_admission=self.config.feature_enabled("PartialAdmission")),
                                                     workloads)
            for old, reason, message in decision.finish:
                self.add("finish", old, reason, message)
                self.finishing.add(_key(old))
            if decision.compatible:
                selected = decision.workload
                if selected is not None and decision.new_counts is not None:
                    selected = self.update_counts(selected, decision.new_counts)
                return self.sync_slice_priority(selected)
        match, to_delete = None, []
        for wl in workloads:
            if match is None and self.equivalent(wl):
                match = wl
            else:
                to_delete.append(wl)
        to_update = None
        if match is None and to_delete and is_suspended(self.job) and not _has_quota_reservation(to_delete[0]):
            to_update, to_delete = to_delete[0], to_delete[1:]
        if match is None and not is_suspended(self.job) and finished_condition(self.job) is None:
            if len(to_delete) == 1:
                self.stop(to_delete[0], c.StopReason.NO_MATCHING_WORKLOAD,
                          c.MSG_NO_MATCHING_WORKLOAD)
            else:
                self.stop(None, c.StopReason.NO_MATCHING_WORKLOAD, c.MSG_MISSING_WORKLOAD)
        for wl in to_delete:
            self.add("delete_workload", wl)
        if any(not _deleting(wl) for wl in to_delete):
            raise self.fail(f"{'no matching workloads' if match is None else 'extra workloads'}: deleted {len(to_delete)} workloads")
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
        self.add("update_workload", wl, spec=spec)
        return {**wl, "spec": spec}

    def sync_slice_priority(self, wl: Obj | None) -> Obj | None:
        """`syncWorkloadSlicePriority`: a priority-class change reaches the slice going on and the
        quota-holding slice it waits behind, so the Job's slices never rank apart."""
        retained = workload_slices.latest_active([w for w in self.workloads if _key(w) not in self.finishing])
        if retained is not None and (wl is None or _key(retained) != _key(wl)):
            self.sync_priority(retained)
        return None if wl is None else self.sync_priority(wl)

    def live_slices(self) -> list[Obj]:
        """The Job's unfinished slices once this plan's finishes land."""
        return [w for w in workload_slices.not_finished(self.workloads) if _key(w) not in self.finishing]

    def prebuilt(self, wl: Obj | None) -> Obj | None:
        if wl is None:
            return None
        owner = _controller_of(wl)
        if owner is not None and (owner.get("uid") or "") != (_meta(self.job).get("uid") or ""):
            return None  # controlled by another object
        if owner is None:
            wl = copy.deepcopy(dict(wl))
            wl["metadata"]["ownerReferences"] = [*(wl["metadata"].get("ownerReferences") or ()), _owner_ref(self.job)]
            uid = str(_meta(self.job).get("uid", ""))
            if not fields.is_label_value(uid):
                wl["metadata"]["labels"] = {**(wl["metadata"].get("labels") or {}), c.JOB_UID_LABEL: uid}
            self.add("adopt", wl)
        if self.elastic and workload_slices.replacement_for(wl) is not None:
            return wl  # a scale-up slice is not compared with the Job until it is synced
        if not self.equivalent(wl):
            self.add("finish", wl, c.FinishedReason.OUT_OF_SYNC, c.MSG_PREBUILT_OUT_OF_SYNC)
            return None
        return wl

    def update_to_match(self, wl: Obj) -> Obj:
        """`updateWorkloadToMatchJob`: the suspended Job's freshly built spec, `active` kept."""
        spec = build_workload(self.job, config=self.config, priority=self.priority())["spec"]
        if "active" in (wl.get("spec") or {}):
            spec["active"] = wl["spec"]["active"]
        self.add("update_workload", wl, spec=spec)
        self.event(c.JobEventReason.UPDATED_WORKLOAD, f"Updated not matching Workload for suspended job: {_key(wl)}")
        return {**wl, "spec": spec}

    def sync_admission_gated_by(self, wl: Obj) -> Obj:
        """`UpdateAdmissionGatedBy`: the Job's `admission-gated-by` annotation, or its removal."""
        if not self.config.feature_enabled("AdmissionGatedBy"):
            return wl
        want = _annotations(self.job).get(c.ADMISSION_GATED_BY, "")
        if _annotations(wl).get(c.ADMISSION_GATED_BY, "") == want:
            return wl
        self.add("update_gated_by", wl, value=want or None)
        self.event(c.JobEventReason.UPDATED_WORKLOAD, f'Updated workload AdmissionGatedBy to "{want}"')
        annotations = {key: v for key, v in _annotations(wl).items() if key != c.ADMISSION_GATED_BY}
        if want:
            annotations[c.ADMISSION_GATED_BY] = want
        return {**wl, "metadata": {**_meta(wl), "annotations": annotations}}

    def sync_priority(self, wl: Obj) -> Obj:
        """`UpdateWorkloadPriority`: a Workload following the `priority-class` label takes the class
        it names now. One priced from a PriorityClass never switches, and one that reserved quota
        without a class cannot be given one."""
        ref = (wl.get("spec") or {}).get("priorityClassRef")
        if ref is None and _has_quota_reservation(wl):
            return wl
        if ref is not None and (ref.get("group"), ref.get("kind")) != (c.GROUP, "WorkloadPriorityClass"):
            return wl
        if (ref or {}).get("name", "") == _labels(self.job).get(c.PRIORITY_CLASS_LABEL, ""):
            return wl
        priority = self.priority((wl.get("spec") or {}).get("podSets") or ())
        new_ref = None if priority.ref is None else dict(priority.ref)
        if wl["spec"].get("priority") == priority.value and ref == new_ref:
            return wl
        self.add("update_priority", wl, priorityClassRef=new_ref, priority=priority.value)
        self.event(c.JobEventReason.UPDATED_WORKLOAD, f"Updated workload priority class: {_key(wl)}")
        return {**wl, "spec": {**wl["spec"], "priorityClassRef": new_ref, "priority": priority.value}}

    # -- b-k ------------------------------------------------------------------------------------------
    def run(self, wl: Obj | None) -> None:
        if wl is not None and _is_finished(wl):
            if c.RESOURCE_IN_USE_FINALIZER in (_meta(wl).get("finalizers") or ()):
                self.add("remove_finalizer", wl)
                self.event(c.JobEventReason.FINISHED_WORKLOAD, f"Workload '{_key(wl)}' is declared finished")
            return
        if wl is not None and _deleting(wl):
            self.stop(wl, c.StopReason.WORKLOAD_DELETED, c.MSG_WORKLOAD_DELETED)
            self.add("remove_finalizer", wl)
            return
        finished = finished_condition(self.job)
        if finished is not None:
            if wl is not None:
                self.add("finish", wl, *finished)
                self.event(c.JobEventReason.FINISHED_WORKLOAD, f"Workload '{_key(wl)}' is declared finished")
            return
        if wl is None:
            self.no_workload()
            return
        if self.config.feature_enabled("ReclaimablePods"):
            wanted = reclaimable_pods(self.job, wl)
            if not _same_reclaimable(wanted, (wl.get("status") or {}).get("reclaimablePods") or ()):
                self.add("update_reclaimable", wl, reclaimablePods=wanted)
                return
        if self.config.wait_for_pods_ready_enabled:
            ready = pods_ready_condition(self.job, wl)
            if ready is not None:
                self.add("pods_ready", wl, ready.reason, ready.message, condition=ready)
                return
        if is_true(wl, c.WorkloadCondition.EVICTED):
            self.evicted(wl)
            return
        if is_suspended(self.job):
            self.suspended(wl)
            return
        if not _is_admitted(wl) and not self.elastic:
            # An elastic Job keeps running while its next slice waits: its new pods stay gated.
            self.stop(wl, c.StopReason.NOT_ADMITTED, c.MSG_NOT_ADMITTED_BY_CLUSTER_QUEUE)

    def no_workload(self) -> None:
        """`handleJobWithNoWorkload`: create it once no pod is active (a prebuilt one is waited for)."""
        prebuilt = prebuilt_workload_name(self.job, self.config)
        if prebuilt:
            self.stop(None, c.StopReason.NO_MATCHING_WORKLOAD, c.MSG_MISSING_PREBUILT_WORKLOAD)
        if _is_active(self.job) and not self.elastic:
            return  # wait until no pod is left; a scaling elastic Job keeps its pods
        if prebuilt:
            raise self.fail("prebuilt workload not found")
        try:
            wl = build_workload(self.job, config=self.config, priority=self.priority(), slices=self.live_slices())
        except ValueError as exc:
            raise self.fail(str(exc)) from exc
        self.add("create", workload=wl)
        self.event(c.JobEventReason.CREATED_WORKLOAD, f"Created Workload: {_key(wl)}")

    def evicted(self, wl: Obj) -> None:
        """Stop the Job, release the quota once no pod is active, and apply the retention policy."""
        cond = find_condition(wl, c.WorkloadCondition.EVICTED) or {}
        reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
        self.stop(wl, c.StopReason.WORKLOAD_EVICTED, message)
        if _has_quota_reservation(wl) and not _is_active(self.job):
            self.add("clear_reservation", wl, reason, message)
        retention = self.config.object_retention_policies.workloads.after_deactivated_by_kueue_s
        active = (wl.get("spec") or {}).get("active", True)
        if retention is None or active or not reason.startswith(f"{c.EvictionReason.DEACTIVATED}DueTo"):
            return
        since = datetime.fromisoformat(str(cond.get("lastTransitionTime"))) if cond.get("lastTransitionTime") else self.now
        left = (since - self.now).total_seconds() + retention
        if left > 0:
            self.requeue_after = left
            return
        self.add("delete_job")
        self.event(c.JobEventReason.DELETED, c.MSG_DEACTIVATION_RETENTION_EXPIRED)

    def suspended(self, wl: Obj) -> None:
        if _is_admitted(wl):
            self.add("start", wl)
            return
        if _has_quota_reservation(wl) and (note := admission_checks.pending_checks_message(wl)):
            self.add("record_admission_checks", wl, message=note)
        queue = _labels(self.job).get(c.QUEUE_LABEL, "")
        if queue != (wl.get("spec") or {}).get("queueName", ""):
            self.add("sync_queue", wl, queueName=queue)


def _plan_child(job: Obj, ancestor_workloads: Sequence[Obj], *, elastic: bool) -> Plan:
    """A Job owned by a managed Job never gets a Workload: it is kept suspended while its ancestor's
    newest unfinished Workload is missing or not admitted (§4.1 step 4). With `elastic` (the child
    or the ancestor is elastic) the newest slice may be a replacement still waiting for quota, so
    only its eviction suspends the child (`shouldSuspendChildJob`)."""
    if finished_condition(job) is not None or is_suspended(job):
        return Plan()
    live = workload_slices.not_finished(ancestor_workloads)
    if live and (not is_true(live[-1], c.WorkloadCondition.EVICTED) if elastic else _is_admitted(live[-1])):
        return Plan()
    return Plan((Step("suspend_child"), Step("event", reason=c.JobEventReason.SUSPENDED, message=c.MSG_CHILD_JOB_SUSPENDED,
                                                extra={"type": "Normal"})))


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
    if job is None or _deleting(job):
        finish = config.feature_enabled("FinishOrphanedWorkloads")
        return Plan(tuple(Step("finalize", wl, extra={"finish": finish and not _deleting(wl) and _controller_of(wl) is not None})
                          for wl in workloads))
    if namespace_labels is None or not selector.matches(config.managed_jobs_namespace_selector, namespace_labels, nil_matches=True):
        return Plan()
    if _owned_by_other_integration(job):
        return Plan()
    try:
        ancestor = find_managed_ancestor(job, lambda key: store.get("jobs", key), config)
    except AncestorError as exc:
        steps = (Step("event", reason=c.JobEventReason.JOB_NESTING_TOO_DEEP, message=str(exc), extra={"type": "Warning"}),) if exc.too_deep else ()
        return Plan(steps, error=str(exc))
    if not _labels(job).get(c.QUEUE_LABEL) and not config.manage_jobs_without_queue_name and ancestor is None:
        return Plan()
    ns = _meta(job).get("namespace", "")
    if ancestor is not None:
        gate = config.feature_enabled("ElasticJobsViaWorkloadSlices")
        elastic = workload_slices.is_elastic(job, enabled=gate) or workload_slices.is_elastic(ancestor, enabled=gate)
        return _plan_child(job, owned_workloads(store, ns, str(_meta(ancestor).get("name", ""))), elastic=elastic)
    planner = _Planner(job, config, _Reads(store), now or datetime.now(UTC))
    name = prebuilt_workload_name(job, config)
    try:
        wl = planner.ensure_one(workloads, store.get("workloads", f"{ns}/{name}") if name else None)
        planner.run(wl)
    except _Done as done:
        return Plan(tuple(planner.steps), error=str(done))
    return Plan(tuple(planner.steps), requeue_after=planner.requeue_after)


# == I/O ==========================================================================================
def _path(kind_plural: str, ns: str, name: str | None = None, api: str = JOB_API) -> str:
    return k.object_path(api, kind_plural, ns, name)


def _generation(obj: Obj) -> int:
    return int(_meta(obj).get("generation") or 0)


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
                 requeue_after: Callable[[str, float], None] | None = None) -> None:
        self.kube = kube
        self.store = store
        self.config = config
        self.events = recorder
        self.on_ready = on_ready  # PodsReady turned True/Started: the ready-wait-time metrics
        self.clock = clock
        self.requeue_after = requeue_after
        self.ungater = elastic.Ungater(kube, clock=clock)

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        ns, name = key.split("/", 1)
        job = self.store.get("jobs", key)
        ns_obj = self.store.get("namespaces", ns)
        ns_labels = None if ns_obj is None else _labels(ns_obj)
        now = self.clock()
        p = plan(job, owned_workloads(self.store, ns, name), namespace_labels=ns_labels, config=self.config, store=self.store, now=now)
        if p.steps:
            log.info("reconciling job", extra={"object": key, "kind": "Job", "decision": p.action,
                                               "steps": ",".join(s.action for s in p.steps)})
        current: Obj | None = job
        for step in p.steps:
            current = getattr(self, f"_do_{step.action}")(key, current, step, now)
            if current is None and job is not None:
                return  # the Job is gone
        if current is not None and not p.error and not is_suspended(current) \
                and workload_slices.is_elastic(current, enabled=self.config.feature_enabled("ElasticJobsViaWorkloadSlices")):
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
        return self.store.get("workloads", _key(wl)) or wl

    def _patch_workload(self, wl: Obj, patch: dict[str, Any]) -> None:
        patch.setdefault("metadata", {})["resourceVersion"] = _meta(self._latest(wl)).get("resourceVersion")
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
        log.info("workload finished", extra={"object": _key(wl), "kind": "Workload", "decision": "Finished", "reason": reason})

    def _remove_finalizer(self, wl: Obj) -> None:
        latest = self._latest(wl)
        fins = list(_meta(latest).get("finalizers") or ())
        if c.RESOURCE_IN_USE_FINALIZER not in fins:
            return
        fins.remove(c.RESOURCE_IN_USE_FINALIZER)
        self._patch_workload(latest, {"metadata": {"finalizers": fins or None}})

    # -- steps: each returns the newest copy of the Job (None: it is gone) ---------------------------
    def _do_event(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        self._emit(job, str(step.extra.get("type", "Normal")), step.reason, step.message)
        return job

    def _do_finalize(self, key: str, job: Obj | None, step: Step, now: datetime) -> Obj | None:
        assert step.workload is not None
        if step.extra.get("finish") and not _is_finished(self._latest(step.workload)):
            self._finish(step.workload, c.FinishedReason.OWNER_NOT_FOUND, c.MSG_OWNER_NOT_FOUND, now)
        self._remove_finalizer(step.workload)
        return job

    def _do_suspend_child(self, key: str, job: Obj, step: Step, now: datetime) -> Obj | None:
        return self._patch_job(key, job, {"metadata": {"resourceVersion": _meta(job).get("resourceVersion")}, "spec": {"suspend": True}})

    def _do_stop(self, key: str, job: Obj, step: Step, now: datetime) -> Obj | None:
        """`Job.Stop`: suspend (with the `stopping` annotation until done), reset startTime so the
        template may change, restore the template; `Stopped` when this suspended the Job."""
        stopped_now = not is_suspended(job)
        current: Obj | None = job
        if stopped_now:
            current = self._patch_job(key, job, {"metadata": {"resourceVersion": _meta(job).get("resourceVersion"),
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

    def _do_delete_workload(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        """`workload.Delete`: drop the finalizer, then delete unless already being deleted."""
        assert step.workload is not None
        self._remove_finalizer(step.workload)
        if _deleting(step.workload):
            return job
        try:
            self.kube.delete(self._wl_path(step.workload))
        except k.NotFound:
            return job
        self.store.delete("workloads", _key(step.workload))
        log.info("deleted workload", extra={"object": _key(step.workload), "kind": "Workload", "job": key, "decision": "DeletedWorkload"})
        self._emit(job, "Normal", c.JobEventReason.DELETED_WORKLOAD, f"Deleted not matching Workload: {_key(step.workload)}")
        return job

    def _do_update_workload(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        assert step.workload is not None
        latest = self._latest(step.workload)
        try:
            self.store.put("workloads", self.kube.replace(self._wl_path(latest), {**latest, "spec": dict(step.extra["spec"])}))
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        return job

    def _do_adopt(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        """`EnsurePrebuiltWorkloadOwnership`: the Job becomes the prebuilt Workload's controller."""
        assert step.workload is not None
        meta = _meta(step.workload)
        patch: dict[str, Any] = {"metadata": {"ownerReferences": list(meta.get("ownerReferences") or ())}}
        if c.JOB_UID_LABEL in (meta.get("labels") or {}):
            patch["metadata"]["labels"] = {c.JOB_UID_LABEL: meta["labels"][c.JOB_UID_LABEL]}
        self._patch_workload(step.workload, patch)
        return job

    def _do_update_priority(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"spec": {"priorityClassRef": step.extra["priorityClassRef"], "priority": step.extra["priority"]}})
        return job

    def _do_update_gated_by(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"metadata": {"annotations": {c.ADMISSION_GATED_BY: step.extra["value"]}}})
        return job

    def _do_finish(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        assert step.workload is not None
        self._finish(step.workload, step.reason, step.message, now)
        return job

    def _do_remove_finalizer(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        assert step.workload is not None
        self._remove_finalizer(step.workload)
        return job

    def _do_create(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        wl = step.extra["workload"]
        try:
            created = self.kube.create(_path("workloads", wl["metadata"]["namespace"], api=c.V1BETA2), wl)
        except k.Conflict as exc:
            raise Retry(0.2, f"workload {_key(wl)} already exists") from exc
        self.store.put("workloads", created)
        reporter.workload_created("Job", job, created)
        log.info("created workload", extra={"object": _key(created), "kind": "Workload", "job": key, "decision": "CreatedWorkload"})
        return job

    def _do_update_reclaimable(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        """Quota of finished pods goes back while the Job runs (the core scales usage down)."""
        assert step.workload is not None
        wanted = [dict(r) for r in step.extra["reclaimablePods"]]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            if wanted:
                status["reclaimablePods"] = wanted
            else:
                status.pop("reclaimablePods", None)

        update_status(self.kube, self.store, "workloads", self._wl_path(step.workload), mutate)
        log.info("updated reclaimable pods", extra={"object": _key(step.workload), "kind": "Workload", "reclaimable_pods": wanted})
        return job

    def _do_pods_ready(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        assert step.workload is not None
        cond: ConditionValue = step.extra["condition"]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            set_condition(status, {"type": cond.type, "status": cond.status, "reason": cond.reason, "message": cond.message}, now, _generation(obj))

        written = update_status(self.kube, self.store, "workloads", self._wl_path(step.workload), mutate)
        # Only the first start is timed; a recovery (`Recovered`) is not.
        if written is not None and cond.status == "True" and cond.reason == c.PodsReadyReason.STARTED and self.on_ready is not None:
            self.on_ready(written, now)
        log.info("pods ready condition", extra={"object": _key(step.workload), "kind": "Workload",
                                                 "decision": "PodsReady", "status": cond.status, "reason": cond.reason})
        return job

    def _do_clear_reservation(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        """The evicted Workload of a stopped Job gives its quota back and is requeued."""
        assert step.workload is not None

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            requeued = "True" if step.reason in (c.EvictionReason.PREEMPTED, c.EvictionReason.NODE_FAILURES) else "False"
            cond = {"type": c.WorkloadCondition.REQUEUED, "status": requeued, "reason": step.reason, "message": step.message}
            set_condition(status, cond, now, _generation(obj))
            unset_quota_reservation(status, c.PendingReason.PENDING_EVALUATION, step.message, now, _generation(obj))

        update_status(self.kube, self.store, "workloads", self._wl_path(step.workload), mutate)
        log.info("reservation cleared", extra={"object": _key(step.workload), "kind": "Workload", "decision": "Requeued", "reason": step.reason})
        return job

    def _do_delete_job(self, key: str, job: Obj, step: Step, now: datetime) -> Obj | None:
        """The deactivation retention period is over: the Job goes, its pods in the background."""
        ns, name = key.split("/", 1)
        try:
            self.kube.delete(_path("jobs", ns, name), body={"propagationPolicy": "Background"})
        except k.NotFound:
            return None
        log.info("deleted job", extra={"object": key, "kind": "Job", "decision": "Deleted"})
        return job  # gone, but the event of the next step still names it

    def _do_start(self, key: str, job: Obj, step: Step, now: datetime) -> Obj | None:
        assert step.workload is not None
        wl = self._latest(step.workload)
        try:
            patch = start_patch(job, wl, {o["metadata"]["name"]: o for o in self.store.list("resourceflavors")},
                                tas=self.config.feature_enabled("TopologyAwareScheduling"),
                                assign_queue_labels=self.config.feature_enabled("AssignQueueLabelsForPods"),
                                elastic=self.config.feature_enabled("ElasticJobsViaWorkloadSlices"))
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

    def _do_record_admission_checks(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        """`recordAdmissionCheckUpdate`: the Pending checks' messages, as a Job event."""
        self._emit(job, "Normal", c.JobEventReason.UPDATED_ADMISSION_CHECK, step.message)
        return job

    def _do_sync_queue(self, key: str, job: Obj, step: Step, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"spec": {"queueName": step.extra["queueName"]}})
        return job
