"""batch/v1 Job ⇄ Workload: pure builders and plans, plus the thin I/O that carries them out.

Mirrors `pkg/controller/jobframework/reconciler.go` (`ReconcileGenericJob`, `constructWorkload`,
`startJob`, `stopJob`, `finalizeJob`), `pkg/controller/jobframework/workload_names.go`
(`GetWorkloadNameForOwnerWithGVK`), `pkg/controller/jobs/job/job_controller.go` (`PodSets`,
`RunWithPodSetsInfo`, `RestorePodSetsInfo`, `Finished`) and `pkg/podset/podset.go` at upstream
commit ff69552e79. The order of checks in `plan` is the per-reconcile order of §4.1 (a-k).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import fields, selector
from webhook.config import Configuration
from webhook.core import pods_ready
from webhook.core.conditions import ConditionValue
from webhook.worker import admission_checks, events, reporter
from webhook.worker.status import find_condition, is_true, set_condition, update_status
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

__all__ = [
    "JobReconciler",
    "Plan",
    "StartConflict",
    "build_workload",
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

JOB_API = "batch/v1"
_MAX_PREFIX = 253 - 6
_JOB_CONTROLLER_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")
_DROPPED_TEMPLATE_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid")
CONTROLLER_NAME = "batch/job-kueue-controller"


class StartConflict(Exception):
    """The admission cannot be applied to the Job's template (a permanent error)."""


# == pure builders ================================================================================
def workload_name(owner_name: str, owner_uid: str, *, kind: str = "Job", group: str = "batch") -> str:
    """`<lower(kind)>-<owner>` cut to 247 characters, `-`, then 5 hex of SHA-1(kind, group, name, uid)."""
    prefix = f"{kind.lower()}-{owner_name}"[:_MAX_PREFIX]
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()[:5]
    return f"{prefix}-{digest}"


def _int(value: object, default: int) -> int:
    return default if value is None else int(value)  # type: ignore[call-overload]


def pods_count(job: Mapping[str, Any]) -> int:
    spec = job.get("spec") or {}
    parallelism = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))


def _dedupe_env(containers: list[dict[str, Any]]) -> None:
    for ctr in containers:
        env = ctr.get("env")
        if not env:
            continue
        last: dict[str, dict[str, Any]] = {}
        for e in env:
            last[e.get("name", "")] = e
        ctr["env"] = list(last.values())  # dicts keep first-insertion order, last value


def pod_sets(job: Mapping[str, Any], *, partial_admission: bool = True) -> list[dict[str, Any]]:
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
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(c.JOB_MIN_PARALLELISM)
    if partial_admission and raw is not None:
        with contextlib.suppress(ValueError):
            ps["minCount"] = int(raw)
    return [ps]


@dataclass(frozen=True, slots=True)
class Priority:
    value: int = 0
    ref: Mapping[str, str] | None = None


class PriorityClassNotFound(Exception):
    pass


def resolve_priority(job: Mapping[str, Any], *, wpcs: Mapping[str, int], pcs: Mapping[str, Mapping[str, Any]]) -> Priority:
    """WorkloadPriorityClass label, else the template's PriorityClass, else the lowest global default."""
    name = ((job.get("metadata") or {}).get("labels") or {}).get(c.PRIORITY_CLASS_LABEL)
    if name:
        if name not in wpcs:
            raise PriorityClassNotFound(f'WorkloadPriorityClass "{name}" not found')
        return Priority(wpcs[name], {"group": c.GROUP, "kind": "WorkloadPriorityClass", "name": name})
    pc_name = (((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("priorityClassName")
    if pc_name:
        pc = pcs.get(pc_name)
        if pc is None:
            raise PriorityClassNotFound(f'PriorityClass "{pc_name}" not found')
        return Priority(int(pc.get("value") or 0), {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pc_name})
    defaults = sorted((int(p.get("value") or 0), n) for n, p in pcs.items() if p.get("globalDefault"))
    if defaults:
        value, n = defaults[0]
        return Priority(value, {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": n})
    return Priority()


def build_workload(job: Mapping[str, Any], *, config: Configuration, priority: Priority) -> dict[str, Any]:
    """The Workload for a top-level Job (§4.2)."""
    meta = job.get("metadata") or {}
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    job_labels: Mapping[str, str] = meta.get("labels") or {}
    job_annotations: Mapping[str, str] = meta.get("annotations") or {}
    labels = {key: job_labels[key] for key in config.integrations.label_keys_to_copy if key in job_labels}
    if not fields.is_label_value(uid):
        labels[c.JOB_UID_LABEL] = uid
    annotations = {key: v for key, v in job_annotations.items() if key.startswith("provreq.kueue.x-k8s.io/")}
    if c.ADMISSION_GATED_BY in job_annotations:
        annotations[c.ADMISSION_GATED_BY] = job_annotations[c.ADMISSION_GATED_BY]
    wl_meta: dict[str, Any] = {
        "name": workload_name(name, uid),
        "namespace": meta.get("namespace", ""),
        "finalizers": [c.RESOURCE_IN_USE_FINALIZER],
        "labels": labels,
        "ownerReferences": [{"apiVersion": JOB_API, "kind": "Job", "name": name, "uid": uid,
                             "controller": True, "blockOwnerDeletion": True}],
    }
    if annotations:
        wl_meta["annotations"] = annotations
    spec: dict[str, Any] = {
        "queueName": job_labels.get(c.QUEUE_LABEL, ""),
        "podSets": pod_sets(job, partial_admission=config.feature_enabled("PartialAdmission")),
    }
    max_exec = job_labels.get(c.MAX_EXEC_TIME_LABEL)
    if max_exec and max_exec.isdigit() and 0 < int(max_exec) < 2**31:
        spec["maximumExecutionTimeSeconds"] = int(max_exec)
    if priority.ref is not None:
        spec["priorityClassRef"] = dict(priority.ref)
    spec["priority"] = priority.value
    return {"apiVersion": c.V1BETA2, "kind": "Workload", "metadata": wl_meta, "spec": spec}


def finished_condition(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) for a Job with Complete=True or Failed=True."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Complete":
            return "Succeeded", str(cond.get("message") or "")
        if cond.get("type") == "Failed":
            return "Failed", str(cond.get("message") or "")
    return None


def job_pods_ready(job: Mapping[str, Any]) -> bool:
    """Succeeded, ready and not yet counted succeeded pods reach min(parallelism, completions)."""
    status = job.get("status") or {}
    uncounted = len((status.get("uncountedTerminatedPods") or {}).get("succeeded") or ())
    return int(status.get("succeeded") or 0) + int(status.get("ready") or 0) + uncounted >= pods_count(job)


def pods_ready_condition(job: Mapping[str, Any], wl: Mapping[str, Any]) -> ConditionValue | None:
    """The PodsReady condition to write on the Job's Workload, None when it already has it."""
    current = find_condition(wl, c.WorkloadCondition.PODS_READY)
    want = pods_ready.pods_ready_condition(
        admitted=is_true(wl, c.WorkloadCondition.ADMITTED),
        pods_ready=job_pods_ready(job),
        current=None if current is None else (str(current.get("status", "")), str(current.get("reason", ""))),
    )
    if current is not None and (current.get("status"), current.get("reason")) == (want.status, want.reason):
        return None
    return want


def _merge_map(current: Mapping[str, str], new: Mapping[str, str], what: str) -> dict[str, str]:
    out = dict(current)
    for key, value in new.items():
        if key in out and out[key] != value:
            raise StartConflict(
                f"invalid admission check PodSetUpdate: conflict for {what}: conflict for key={key}, value1={out[key]}, value2={value}"
            )
        out[key] = value
    return out


def start_patch(job: Mapping[str, Any], wl: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The one merge patch that starts an admitted Job (§4.5), guarded by its resourceVersion."""
    admission = (wl.get("status") or {}).get("admission") or {}
    assignments = admission.get("podSetAssignments") or [{}]
    psa = assignments[0]
    wl_spec = wl.get("spec") or {}
    ps = (wl_spec.get("podSets") or [{}])[0]
    node_labels: dict[str, str] = {}
    tolerations: list[Any] = []
    for flavor_name in dict.fromkeys((psa.get("flavors") or {}).values()):
        rf_spec = (flavors.get(flavor_name) or {}).get("spec") or {}
        node_labels.update(rf_spec.get("nodeLabels") or {})
        tolerations.extend(rf_spec.get("tolerations") or ())
    template = (job.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    tspec = template.get("spec") or {}
    pod_labels = {c.PODSET_LABEL: str(ps.get("name") or "main")}
    if wl_spec.get("queueName"):
        pod_labels[c.LOCAL_QUEUE_NAME_LABEL] = str(wl_spec["queueName"])
    cq = str(admission.get("clusterQueue") or "")
    if cq and not fields.is_dns1123_label(cq):
        pod_labels[c.CLUSTER_QUEUE_NAME_LABEL] = cq
    pod_annotations: dict[str, str] = {}
    for check, update in admission_checks.pod_set_updates(wl, str(ps.get("name") or "main")):
        try:  # `PodSetInfo.Merge` of each check's update, then of the result into the template
            pod_annotations = _merge_map(pod_annotations, update.get("annotations") or {}, "annotations")
            pod_labels = _merge_map(pod_labels, update.get("labels") or {}, "labels")
            node_labels = _merge_map(node_labels, update.get("nodeSelector") or {}, "nodeSelector")
        except StartConflict as exc:
            raise StartConflict(f'in admission check "{check}": {exc}') from exc
        tolerations.extend(update.get("tolerations") or ())
    annotations = _merge_map(tmeta.get("annotations") or {}, pod_annotations, "annotations")
    labels = _merge_map(tmeta.get("labels") or {}, pod_labels, "labels")
    node_selector = _merge_map(tspec.get("nodeSelector") or {}, node_labels, "nodeSelector")
    merged_tolerations = list(tspec.get("tolerations") or ())
    for t in tolerations:
        if t not in merged_tolerations:
            merged_tolerations.append(t)
    patch_spec: dict[str, Any] = {"suspend": False}
    tpatch: dict[str, Any] = {"metadata": {"labels": labels}, "spec": {"nodeSelector": node_selector or None}}
    if pod_annotations:
        tpatch["metadata"]["annotations"] = annotations
    if merged_tolerations:
        tpatch["spec"]["tolerations"] = merged_tolerations
    patch_spec["template"] = tpatch
    count = psa.get("count")
    if ps.get("minCount") is not None and count is not None:
        patch_spec["parallelism"] = int(count)
        annotations = (job.get("metadata") or {}).get("annotations") or {}
        if annotations.get(c.JOB_COMPLETIONS_EQUAL_PARALLELISM) == "true":
            patch_spec["completions"] = int(count)
    rv = (job.get("metadata") or {}).get("resourceVersion")
    return {"metadata": {"resourceVersion": rv}, "spec": patch_spec}


def _restore_map(live: Mapping[str, str], original: Mapping[str, str], keep: Sequence[str] = ()) -> dict[str, str | None]:
    want = dict(original)
    for key in keep:
        if key in live:
            want[key] = live[key]
    out: dict[str, str | None] = {key: None for key in live if key not in want}
    out.update({key: v for key, v in want.items() if live.get(key) != v})
    return out


def restore_patch(job: Mapping[str, Any], wl: Mapping[str, Any]) -> dict[str, Any] | None:
    """Merge patch putting the template back to the Workload's podSet (§4.6 step 3), or None."""
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
    job_annotations = (job.get("metadata") or {}).get("annotations") or {}
    out: dict[str, Any] = {}
    tpatch = {key: v for key, v in (("metadata", meta_patch), ("spec", spec_patch)) if v}
    if tpatch:
        out["spec"] = {"template": tpatch}
    if ps.get("minCount") is not None and (job.get("spec") or {}).get("parallelism") != ps.get("count"):
        out.setdefault("spec", {})["parallelism"] = ps.get("count")
    if c.STOPPING_ANNOTATION in job_annotations:
        out["metadata"] = {"annotations": {c.STOPPING_ANNOTATION: None}}
    if not out:
        return None
    out.setdefault("metadata", {})["resourceVersion"] = (job.get("metadata") or {}).get("resourceVersion")
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


# == the plan =====================================================================================
@dataclass(frozen=True, slots=True)
class Plan:
    """What one reconcile of a Job does; `action` is one of the names below."""

    action: str  # ignore | finalize | create | finish | remove_finalizer | update_reclaimable | pods_ready | stop
    #              | clear_reservation | start | record_admission_checks | sync_queue | wait
    workload: Mapping[str, Any] | None = None
    reason: str = ""
    message: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


def _controller_uid(obj: Mapping[str, Any]) -> str:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


def _has_managed_ancestor(job: Mapping[str, Any]) -> bool:
    for ref in (job.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("apiVersion") != JOB_API:
            return True
    return False


def plan(
    job: Mapping[str, Any] | None,
    workloads: Sequence[Mapping[str, Any]],
    *,
    namespace_labels: Mapping[str, str] | None,
    config: Configuration,
) -> Plan:
    """The first matching step of §4.1 for one Job and its owned Workloads."""
    wl = workloads[0] if workloads else None
    if job is None or (job.get("metadata") or {}).get("deletionTimestamp"):
        return Plan("finalize", wl) if wl is not None else Plan("ignore")
    if namespace_labels is None or not selector.matches(config.managed_jobs_namespace_selector, namespace_labels, nil_matches=True):
        return Plan("ignore")
    labels = (job.get("metadata") or {}).get("labels") or {}
    if _has_managed_ancestor(job):
        return Plan("ignore")  # child Jobs of other integrations are not ours to manage here
    if not labels.get(c.QUEUE_LABEL) and not config.manage_jobs_without_queue_name and wl is None:
        return Plan("ignore")
    status = job.get("status") or {}
    suspended = bool((job.get("spec") or {}).get("suspend"))
    if wl is not None:
        if is_true(wl, c.WorkloadCondition.FINISHED):
            if c.RESOURCE_IN_USE_FINALIZER in ((wl.get("metadata") or {}).get("finalizers") or ()):
                return Plan("remove_finalizer", wl)
            return Plan("ignore", wl)
        if (wl.get("metadata") or {}).get("deletionTimestamp"):
            if not suspended:
                return Plan("stop", wl, "WorkloadDeleted", "Workload is deleted")
            return Plan("remove_finalizer", wl)
    finished = finished_condition(job)
    if finished is not None:
        return Plan("finish", wl, finished[0], finished[1]) if wl is not None else Plan("ignore")
    if wl is None:
        if int(status.get("active") or 0) > 0:
            return Plan("wait")
        return Plan("create")
    if config.feature_enabled("ReclaimablePods"):
        wanted = reclaimable_pods(job, wl)
        if not _same_reclaimable(wanted, (wl.get("status") or {}).get("reclaimablePods") or ()):
            return Plan("update_reclaimable", wl, extra={"reclaimablePods": wanted})
    if config.wait_for_pods_ready_enabled:
        cond = pods_ready_condition(job, wl)
        if cond is not None:
            return Plan("pods_ready", wl, cond.reason, cond.message, extra={"condition": cond})
    if is_true(wl, c.WorkloadCondition.EVICTED):
        evicted = find_condition(wl, c.WorkloadCondition.EVICTED) or {}
        if not suspended:
            return Plan("stop", wl, str(evicted.get("reason") or ""), str(evicted.get("message") or ""))
        if int(status.get("active") or 0) == 0 and (wl.get("status") or {}).get("admission"):
            return Plan("clear_reservation", wl, str(evicted.get("reason") or ""), str(evicted.get("message") or ""))
        return Plan("ignore", wl)
    if suspended:
        if is_true(wl, c.WorkloadCondition.ADMITTED):
            return Plan("start", wl)
        if is_true(wl, c.WorkloadCondition.QUOTA_RESERVED) and (note := admission_checks.pending_checks_message(wl)):
            return Plan("record_admission_checks", wl, message=note)
        queue = labels.get(c.QUEUE_LABEL, "")
        if queue and queue != (wl.get("spec") or {}).get("queueName") and not is_true(wl, c.WorkloadCondition.QUOTA_RESERVED):
            return Plan("sync_queue", wl, extra={"queueName": queue})
        return Plan("ignore", wl)
    if not is_true(wl, c.WorkloadCondition.ADMITTED):
        return Plan("stop", wl, "NotAdmitted", "Not admitted by cluster queue")
    return Plan("ignore", wl)


# == I/O ==========================================================================================
def _path(kind_plural: str, ns: str, name: str | None = None, api: str = JOB_API) -> str:
    return k.object_path(api, kind_plural, ns, name)


class JobReconciler:
    """Carries out `plan` for one Job key (`namespace/name`); called from a WorkQueue thread."""

    def __init__(self, kube: k.Kube, store: Store, config: Configuration, recorder: events.Recorder,
                 on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None) -> None:
        self.kube = kube
        self.store = store
        self.config = config
        self.events = recorder
        self.on_ready = on_ready  # PodsReady turned True/Started: the ready-wait-time metrics

    def owned_workloads(self, ns: str, name: str, uid: str | None) -> list[dict[str, Any]]:
        out = []
        for wl in self.store.list("workloads", ns):
            for ref in (wl.get("metadata") or {}).get("ownerReferences") or ():
                if ref.get("controller") and ref.get("kind") == "Job" and ref.get("name") == name and (uid is None or ref.get("uid") == uid):
                    out.append(wl)
        return sorted(out, key=lambda w: (w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        ns, name = key.split("/", 1)
        job = self.store.get("jobs", key)
        uid = None if job is None else str(job["metadata"].get("uid"))
        wls = self.owned_workloads(ns, name, uid)
        ns_obj = self.store.get("namespaces", ns)
        ns_labels = None if ns_obj is None else (ns_obj.get("metadata") or {}).get("labels") or {}
        p = plan(job, wls, namespace_labels=ns_labels, config=self.config)
        if p.action in ("ignore", "wait"):
            return
        now = datetime.now(UTC)
        wl = p.workload
        wl_key = "" if wl is None else f"{ns}/{wl['metadata']['name']}"
        log.info("reconciling job", extra={"object": key, "kind": "Job", "decision": p.action, "workload": wl_key})
        getattr(self, f"_do_{p.action}")(key, job, p, now)

    # -- actions ----------------------------------------------------------------------------------
    def _wl_path(self, wl: Mapping[str, Any]) -> str:
        return _path("workloads", wl["metadata"]["namespace"], wl["metadata"]["name"], c.V1BETA2)

    def _do_create(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        wpcs = {o["metadata"]["name"]: int(o.get("value") or 0) for o in self.store.list("workloadpriorityclasses")}
        pcs = {o["metadata"]["name"]: o for o in self.store.list("priorityclasses")}
        try:
            priority = resolve_priority(job, wpcs=wpcs, pcs=pcs)
        except PriorityClassNotFound as exc:
            self.events.emit(job, "Warning", "WorkloadPriorityClassNotFound", str(exc), CONTROLLER_NAME)
            raise Retry(1.0, str(exc)) from exc
        wl = build_workload(job, config=self.config, priority=priority)
        ns = wl["metadata"]["namespace"]
        try:
            created = self.kube.create(_path("workloads", ns, api=c.V1BETA2), wl)
        except k.Conflict:
            return  # already exists: its watch event brings it to the store
        self.store.put("workloads", created)
        reporter.workload_created("Job", job, created)
        wl_key = f"{ns}/{created['metadata']['name']}"
        log.info("created workload", extra={"object": wl_key, "kind": "Workload", "job": key, "decision": "CreatedWorkload"})
        self.events.emit(job, "Normal", "CreatedWorkload", f"Created Workload: {wl_key}", CONTROLLER_NAME)

    def _do_finish(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        assert p.workload is not None
        self._finish(p.workload, p.reason, p.message, now)
        self.events.emit(job, "Normal", "FinishedWorkload",
                         f"Workload '{p.workload['metadata']['namespace']}/{p.workload['metadata']['name']}' is declared finished",
                         CONTROLLER_NAME)

    def _finish(self, wl: Mapping[str, Any], reason: str, message: str, now: datetime) -> None:
        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            gen = int((obj.get("metadata") or {}).get("generation") or 0)
            set_condition(status, {"type": c.WorkloadCondition.FINISHED, "status": "True", "reason": reason, "message": message}, now, gen)

        update_status(self.kube, self.store, "workloads", self._wl_path(wl), mutate)
        log.info("workload finished", extra={"object": f"{wl['metadata']['namespace']}/{wl['metadata']['name']}",
                                              "kind": "Workload", "decision": "Finished", "reason": reason})

    def _do_finalize(self, key: str, job: Mapping[str, Any] | None, p: Plan, now: datetime) -> None:
        ns, name = key.split("/", 1)
        for wl in self.owned_workloads(ns, name, None):
            if not (wl["metadata"].get("deletionTimestamp")) and not is_true(wl, c.WorkloadCondition.FINISHED):
                self._finish(wl, "OwnerNotFound", "The workload's owner no longer exists", now)
            self._remove_finalizer(wl)

    def _do_remove_finalizer(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        assert p.workload is not None
        self._remove_finalizer(p.workload)

    def _remove_finalizer(self, wl: Mapping[str, Any]) -> None:
        fins = list((wl.get("metadata") or {}).get("finalizers") or ())
        if c.RESOURCE_IN_USE_FINALIZER not in fins:
            return
        fins.remove(c.RESOURCE_IN_USE_FINALIZER)
        patch = {"metadata": {"finalizers": fins or None, "resourceVersion": wl["metadata"].get("resourceVersion")}}
        try:
            out = self.kube.patch(self._wl_path(wl), patch)
            self.store.put("workloads", out)
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc

    def _do_pods_ready(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        assert p.workload is not None
        cond: ConditionValue = p.extra["condition"]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            gen = int((obj.get("metadata") or {}).get("generation") or 0)
            set_condition(status, {"type": cond.type, "status": cond.status, "reason": cond.reason, "message": cond.message}, now, gen)

        written = update_status(self.kube, self.store, "workloads", self._wl_path(p.workload), mutate)
        # Only the first start is timed; a recovery (`Recovered`) is not.
        if written is not None and cond.status == "True" and cond.reason == c.PodsReadyReason.STARTED and self.on_ready is not None:
            self.on_ready(written, now)
        log.info("pods ready condition", extra={"object": f"{key.split('/')[0]}/{p.workload['metadata']['name']}", "kind": "Workload",
                                                 "decision": "PodsReady", "status": cond.status, "reason": cond.reason})

    def _do_stop(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        assert p.workload is not None
        ns, name = key.split("/", 1)
        path = _path("jobs", ns, name)
        try:
            if not (job.get("spec") or {}).get("suspend"):
                job = self.kube.patch(path, {"metadata": {"resourceVersion": job["metadata"]["resourceVersion"],
                                                          "annotations": {c.STOPPING_ANNOTATION: "true"}},
                                             "spec": {"suspend": True}})
            if (job.get("status") or {}).get("startTime"):
                job = self.kube.patch(path + "/status", {"status": {"startTime": None}})
            restore = restore_patch(job, p.workload)
            if restore is not None:
                job = self.kube.patch(path, restore)
            self.store.put("jobs", dict(job))
        except k.Conflict as exc:
            raise Retry(0.2, "job changed") from exc
        except k.NotFound:
            return
        log.info("stopped job", extra={"object": key, "kind": "Job", "decision": "Stopped", "reason": p.reason})
        self.events.emit(job, "Normal", "Stopped", p.message, CONTROLLER_NAME)
        if p.reason == "WorkloadDeleted":
            self._remove_finalizer(p.workload)

    def _do_clear_reservation(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        assert p.workload is not None

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            gen = int((obj.get("metadata") or {}).get("generation") or 0)
            status.pop("admission", None)
            requeued = "True" if p.reason in ("Preempted", "NodeFailures") else "False"
            set_condition(status, {"type": c.WorkloadCondition.REQUEUED, "status": requeued, "reason": p.reason, "message": p.message}, now, gen)
            set_condition(status, {"type": c.WorkloadCondition.QUOTA_RESERVED, "status": "False", "reason": "PendingEvaluation", "message": p.message}, now, gen)
            set_condition(status, {"type": c.WorkloadCondition.ADMITTED, "status": "False", "reason": "NoReservation",
                                   "message": "The workload has no reservation"}, now, gen)

        update_status(self.kube, self.store, "workloads", self._wl_path(p.workload), mutate)
        log.info("reservation cleared", extra={"object": f"{key.split('/')[0]}/{p.workload['metadata']['name']}",
                                               "kind": "Workload", "decision": "Requeued", "reason": p.reason})

    def _do_start(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        assert p.workload is not None
        flavors = {o["metadata"]["name"]: o for o in self.store.list("resourceflavors")}
        try:
            patch = start_patch(job, p.workload, flavors)
        except StartConflict as exc:
            self._finish(p.workload, "FailedToStart", str(exc), now)
            return
        ns, name = key.split("/", 1)
        try:
            out = self.kube.patch(_path("jobs", ns, name), patch)
        except k.Conflict as exc:
            raise Retry(0.2, "job changed") from exc
        except k.NotFound:
            return
        self.store.put("jobs", out)
        cq = ((p.workload.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        log.info("started job", extra={"object": key, "kind": "Job", "decision": "Started", "cluster_queue": cq})
        self.events.emit(out, "Normal", "Started", f"Admitted by clusterQueue {cq}", CONTROLLER_NAME)

    def _do_record_admission_checks(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        """`recordAdmissionCheckUpdate`: the Pending checks' messages, as a Job event."""
        self.events.emit(job, "Normal", c.JobEventReason.UPDATED_ADMISSION_CHECK, p.message, CONTROLLER_NAME)

    def _do_update_reclaimable(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        """Quota of finished pods goes back while the Job runs (the core scales usage down)."""
        assert p.workload is not None
        wanted = [dict(r) for r in p.extra["reclaimablePods"]]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            if wanted:
                status["reclaimablePods"] = wanted
            else:
                status.pop("reclaimablePods", None)

        update_status(self.kube, self.store, "workloads", self._wl_path(p.workload), mutate)
        log.info("updated reclaimable pods", extra={"object": f"{key.split('/')[0]}/{p.workload['metadata']['name']}",
                                                    "kind": "Workload", "reclaimable_pods": wanted})

    def _do_sync_queue(self, key: str, job: Mapping[str, Any], p: Plan, now: datetime) -> None:
        assert p.workload is not None
        patch = {"metadata": {"resourceVersion": p.workload["metadata"].get("resourceVersion")}, "spec": {"queueName": p.extra["queueName"]}}
        try:
            self.store.put("workloads", self.kube.patch(self._wl_path(p.workload), patch))
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        except k.NotFound:
            return
