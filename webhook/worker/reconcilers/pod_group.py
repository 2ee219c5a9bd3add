"""Decide what the worker does for a plain Pod or a pod group: pure functions returning actions.

Mirrors, at upstream commit ff69552e79: `pkg/controller/jobs/pod/pod_controller.go` (the Pod
integration), the pod parts of `pkg/controller/jobframework/reconciler.go` (`ReconcileGenericJob`,
`ensureOneWorkload`, `startJob`, `stopJob`, `generatePodsReadyCondition`), `.../utils.go`
(`NewWorkload`), `.../workload_names.go`, `.../tas.go`, `pkg/podset/podset.go` (`FromAssignment`,
`Merge`), `pkg/util/pod/pod.go` and `pkg/util/equality/podset.go`.

Entry points: `reconcile_pod` (one pod without a group name) and `reconcile_group` (all pods of one
`kueue.x-k8s.io/pod-group-name` in a namespace). Both take objects exactly as the API returns them,
the matching Workloads (v1beta2), the `Lookups` the I/O layer keeps in its caches, and `now`; they
return a `Decision` (see `actions.py`). Nothing here reads the clock or performs I/O.

This module holds the recipe and the group logic (matching, excess and replacement pods,
`WaitingForReplacementPods`); `pod_workload` builds and compares Workloads, `pod_start` starts and
stops pods, `pod_common` holds the shared accessors. Reasons and messages live in `api/constants`.

Deliberate differences from upstream: starting a group is all-or-nothing (upstream patches pods in
parallel and may ungate some before hitting a conflict); map iteration (flavor assignments,
conflict detection) is sorted so the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.fields import go_atoi
from webhook.core import pods_ready
from webhook.worker.reconcilers import actions as a
from webhook.worker.reconcilers.pod_common import (
    EPOCH,
    MAX_POD_SETS,
    POD_API,
    Lookups,
    Obj,
    Options,
    RetryLater,
    Unretryable,
    finalize_orphan,
    finish_workload,
    finished_event,
    group_name,
    group_total_count,
    has_pod_finalizer,
    is_gated,
    is_pod_suspended,
    is_runnable_or_succeeded,
    is_terminated,
    max_exec_seconds,
    new_condition,
    parse_timestamp,
    pod_event,
    pod_phase,
    pod_ref,
    pod_role,
    remove_finalizers,
    remove_workload_finalizer,
    rfc3339,
    workload_ref,
)
from webhook.worker.reconcilers.pod_start import eviction_reason, start_pods, stop_pods
from webhook.worker.reconcilers.pod_workload import (
    RetryWith,
    construct_pod_workload,
    equivalent_single,
    fast_pod_sets,
    group_pod_sets,
    new_workload,
    with_owners,
    workload_name,
    workload_name_for_pod,
)

__all__ = [
    "Lookups",
    "Options",
    "construct_pod_workload",
    "group_name",
    "reconcile_group",
    "reconcile_pod",
    "workload_name",
    "workload_name_for_pod",
]

# --- pod groups -----------------------------------------------------------------------------------


def _last_active(pod: Obj, now: datetime) -> datetime:
    """`lastActiveTime`: when the pod was declared Failed, or its deletion time, whichever is first."""
    transition = now
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "ContainersReady":
            if cond.get("status") == "False" and cond.get("reason") == "PodFailed":
                transition = parse_timestamp(cond.get("lastTransitionTime"))
            break
    deletion = parse_timestamp(o.meta(pod).get("deletionTimestamp")) if o.is_deleting(pod) else now
    return min(transition, deletion)


def _sort_active(pods: Sequence[Obj]) -> list[Obj]:
    """Kept first: 1. holding the finalizer, 2. ungated, 3. older; ties by name then uid."""
    return sorted(
        pods,
        key=lambda p: (not has_pod_finalizer(p), is_gated(p), parse_timestamp(o.meta(p).get("creationTimestamp")), o.name(p), o.meta(p).get("uid", "")),
    )


def _sort_inactive(pods: Sequence[Obj], now: datetime) -> list[Obj]:
    """Kept first: 1. holding the finalizer, 2. most recently active, 3. older; ties by name then uid."""
    return sorted(
        pods,
        key=lambda p: (
            not has_pod_finalizer(p),
            -(_last_active(p, now) - EPOCH).total_seconds(),
            parse_timestamp(o.meta(p).get("creationTimestamp")),
            o.name(p),
            o.meta(p).get("uid", ""),
        ),
    )


def _remove_excess(pods: Sequence[Obj]) -> list[a.Action]:
    """`removeExcessPods`: release and delete, both awaited by the next match of the group."""
    out: list[a.Action] = []
    for pod in pods:
        out += remove_finalizers([pod], expected=True)
        if not o.is_deleting(pod):
            out += [a.DeletePod(pod_ref(pod), expected=True), pod_event(pod, c.JobEventReason.EXCESS_POD_DELETED, c.MSG_EXCESS_POD_DELETED)]
    return out


@dataclass(slots=True)
class _Group:
    """One reconcile's view of a pod group (`Pod` with isGroup in upstream)."""

    name: str
    pods: list[Obj]
    all_pods: list[Obj]
    opts: Options
    is_group: bool = True
    absent: int = 0

    @property
    def first(self) -> Obj:
        return self.all_pods[0]

    @property
    def fast(self) -> bool:
        return self.is_group and o.annotations(self.first).get(c.POD_GROUP_FAST_ADMISSION) == "true"

    @property
    def serving(self) -> bool:
        return self.is_group and o.annotations(self.first).get(c.POD_GROUP_SERVING) == "true"

    def partition(self) -> tuple[list[Obj], list[Obj]]:
        active = [p for p in self.pods if is_runnable_or_succeeded(p)]
        return active, [p for p in self.pods if not is_runnable_or_succeeded(p)]

    def pod_sets(self) -> list[dict[str, Any]]:
        if self.fast:
            return fast_pod_sets(self.pods, group_total_count(self.first), self.opts)
        return group_pod_sets(self.pods, self.opts)

    def suspended(self) -> bool:
        return any(is_pod_suspended(p) for p in self.pods)

    def active(self, now: datetime) -> bool:
        """`IsActive`: some Running pod whose deletion grace period has not run out (never for one pod)."""
        for pod in self.pods if self.is_group else ():
            if pod_phase(pod) != "Running":
                continue
            grace = o.meta(pod).get("deletionGracePeriodSeconds")
            if o.is_deleting(pod) and grace is not None and now > parse_timestamp(o.meta(pod)["deletionTimestamp"]) + timedelta(seconds=grace):
                continue
            return True
        return False

    def finished(self) -> tuple[str, bool, bool]:
        """(message, success, finished): all pods succeeded, or an unretriable group with nothing running."""
        if not self.is_group:
            pod = self.first
            return str((pod.get("status") or {}).get("message") or ""), pod_phase(pod) == "Succeeded", is_terminated(pod)
        if self.serving:
            return "", True, False
        try:
            total = group_total_count(self.first)
        except RetryLater:
            return "failed to check if pod group is finished", True, False
        succeeded = sum(1 for p in self.pods if pod_phase(p) == "Succeeded")
        running = any(not is_terminated(p) for p in self.pods)
        unretriable = any(o.annotations(p).get(c.RETRIABLE_IN_GROUP) == "false" for p in self.pods)
        if succeeded == total or (not running and unretriable):
            return f"Pods succeeded: {succeeded}/{total}.", True, True
        return "", True, False

    def pods_ready(self) -> bool:
        if not self.is_group:
            return _pod_ready(self.first)
        try:
            total = group_total_count(self.first)
        except RetryLater:
            return False
        return len(self.pods) >= total and all(_pod_ready(p) for p in self.pods)

    def reclaimable(self) -> list[dict[str, Any]]:
        counts: dict[str, int] = {}
        if self.serving or not self.is_group:
            return []
        for pod in self.pods:
            if pod_phase(pod) == "Succeeded":
                role = pod_role(pod)
                counts[role] = counts.get(role, 0) + 1
        return [{"name": role, "count": n} for role, n in counts.items()]


def _pod_ready(pod: Obj) -> bool:
    return o.is_condition_true(pod, "Ready")


def _validate_group(group: _Group, active: Sequence[Obj]) -> list[a.Action]:
    """`validatePodGroupMetadata`: index label, enough runnable pods, same queue and total count."""
    first = group.first
    total = group_total_count(first)
    index = o.labels(first).get(c.POD_GROUP_POD_INDEX_LABEL)
    if index is not None:
        where = f'for Pod "{o.meta(first).get("namespace")}/{o.name(first)}"'
        if not (index.isascii() and index.isdigit()):
            raise RetryLater(f'incorrect label value "{index}" {where}: invalid unsigned integer: strconv.ParseUint: parsing "{index}": invalid syntax')
        if int(index) >= total:
            raise RetryLater(f'incorrect label value "{index}" {where}: validation error: value should be less than {total}')
    if not group.fast and len(active) < total:
        message = f"'{group.name}' group has fewer runnable pods than expected"
        raise _UnretryableWith(message, [pod_event(first, c.JobEventReason.ERR_WORKLOAD_COMPOSE, message, warning=True)])
    queue = o.labels(first).get(c.QUEUE_LABEL, "")
    for pod in group.pods:
        if pod_phase(pod) == "Failed":
            continue
        other = o.labels(pod).get(c.QUEUE_LABEL, "")
        if other != queue:
            raise Unretryable(f"pods '{o.name(first)}' and '{o.name(pod)}' has different queue names: {queue}!={other}")
        text = o.annotations(pod).get(c.POD_GROUP_TOTAL_COUNT, "")
        try:
            count = go_atoi(text)
        except ValueError as exc:
            raise RetryLater(f"failed to extract '{c.POD_GROUP_TOTAL_COUNT}' annotation from the pod '{o.name(pod)}': {exc}") from exc
        if count != total:
            raise Unretryable(
                f"pods '{o.name(first)}' and '{o.name(pod)}' has different '{c.POD_GROUP_TOTAL_COUNT}' values: {total}!={count}"
            )
    return []


class _UnretryableWith(Unretryable):
    def __init__(self, message: str, actions: list[a.Action]) -> None:
        super().__init__(message)
        self.actions = actions


def _construct_group(group: _Group, out: list[a.Action], lookups: Lookups) -> dict[str, Any]:
    """`ConstructComposableWorkload`; finalizer removals and excess deletions go to `out` first."""
    active, inactive = group.partition()
    out += remove_finalizers(inactive, expected=True)
    _validate_group(group, active)
    total = group_total_count(group.first)
    if len(active) > total:
        ordered = _sort_active(active)
        out += _remove_excess(ordered[total:])
        group.pods = ordered[:total]
    try:
        pod_sets = group.pod_sets()
    except Unretryable as exc:
        out.append(pod_event(group.first, c.JobEventReason.ERR_WORKLOAD_COMPOSE, str(exc), warning=True))
        raise
    if len(pod_sets) > MAX_POD_SETS:
        raise Unretryable(c.MSG_TOO_MANY_POD_GROUP_ROLES)
    wl = new_workload(group.name, group.first, pod_sets, group.opts, lookups)
    wl["metadata"].setdefault("annotations", {})[c.IS_GROUP_WORKLOAD] = "true"
    wl["metadata"]["ownerReferences"] = with_owners([], group.pods)
    labels: dict[str, str] = {}
    for pod in group.pods:
        for key in sorted(group.opts.label_keys_to_copy):
            if key in o.labels(pod):
                if key in labels and labels[key] != o.labels(pod)[key]:
                    raise RetryLater(c.MSG_POD_GROUP_LABELS_MISMATCH)
                labels[key] = o.labels(pod)[key]
    if labels:
        wl["metadata"]["labels"] = labels
    return wl


def _group_equivalent(group: _Group, wl: Obj, job_sets: Sequence[Obj]) -> bool:
    """`equivalentToWorkload`: same name; every current role is in the Workload, in order, fitting."""
    finished = o.is_finished(wl)
    wl_sets = (wl.get("spec") or {}).get("podSets") or []
    if o.name(wl) != group.name:
        return False
    if not finished and len(wl_sets) < len(job_sets):
        return False
    j = -1
    for ps in job_sets:
        j += 1
        while j < len(wl_sets) and wl_sets[j].get("name") != ps["name"]:
            j += 1
        if j == len(wl_sets):
            return False
        if not finished and wl_sets[j].get("count", 1) < ps["count"]:
            return False
    return True


def _match_group(
    group: _Group, wl: Obj, *, expectations_satisfied: bool, now: datetime
) -> tuple[Obj | None, list[Obj], list[a.Action]]:
    """`FindMatchingWorkloads` for a group: (match, to delete, actions on the kept/dropped pods)."""
    if (wl.get("spec") or {}).get("maximumExecutionTimeSeconds") != max_exec_seconds(group.first):
        return None, [wl], []
    active, inactive = group.partition()
    kept: list[Obj] = []
    excess: list[Obj] = []
    replaced: list[Obj] = []
    absent = 0
    for ps in (wl.get("spec") or {}).get("podSets") or ():
        count = ps.get("count", 1)
        role_active = [p for p in active if pod_role(p) == ps.get("name")]
        role_inactive = [p for p in inactive if pod_role(p) == ps.get("name")]
        if group.fast:
            absent += 1 if count > 0 and not role_active else 0
        else:
            absent += max(0, count - len(role_active))
        extra = len(role_active) - count
        if extra > 0:
            ordered = _sort_active(role_active)
            excess += ordered[-extra:]
            kept += ordered[:-extra]
        else:
            kept += role_active
        releasable = min(len(role_inactive), len(role_inactive) + len(role_active) - count)
        if releasable > 0:
            ordered = _sort_inactive(role_inactive, now)
            replaced += ordered[-releasable:]
            kept += ordered[:-releasable]
        else:
            kept += role_inactive
    if not kept or not _group_equivalent(group, wl, group_pod_sets(kept, group.opts)):
        return None, [wl], []
    if not expectations_satisfied:
        raise Unretryable(c.MSG_PENDING_POD_OPERATIONS)
    group.absent = absent
    group.pods = kept
    out: list[a.Action] = []
    refs = o.meta(wl).get("ownerReferences") or []
    owners = with_owners(refs, kept)
    if len(owners) > len(refs):
        out.append(a.PatchWorkload(workload_ref(wl), {"metadata": {"ownerReferences": owners, "resourceVersion": o.meta(wl).get("resourceVersion")}}))
        out.append(a.Event(a.EventType.NORMAL, c.JobEventReason.OWNER_REFERENCES_ADDED, f"Added {len(owners) - len(refs)} owner reference(s)", workload_ref(wl), c.JobEventReason.OWNER_REFERENCES_ADDED))
    return wl, [], out + _remove_excess(excess) + remove_finalizers(replaced, expected=True)


def _replacement_condition(group: _Group, wl: Obj, now: datetime) -> dict[str, Any] | None:
    """`waitingForReplacementPodsCondition`: the new condition when it must be written, else None."""
    current = o.find_condition(wl, c.WAITING_FOR_REPLACEMENT_PODS)
    waiting = group.absent > 0
    if current is None and not waiting:
        return None
    cond = dict(current or {"type": c.WAITING_FOR_REPLACEMENT_PODS})
    updated = current is None
    if waiting:
        evicted = o.find_condition(wl, c.WorkloadCondition.EVICTED)
        if evicted is not None and evicted.get("status") == "True":
            for key in ("reason", "message"):
                if cond.get(key) != evicted.get(key):
                    cond[key] = evicted.get(key)
                    updated = True
        elif cond.get("status") != "True":
            cond.update(reason=c.PODS_FAILED_REASON, message=c.MSG_PODS_NEED_REPLACEMENT)
            updated = True
        if cond.get("status") != "True":
            cond["status"] = "True"
            updated = True
    elif cond.get("status") != "False":
        cond.update(status="False", reason=c.WorkloadCondition.PODS_READY, message=c.MSG_NO_PODS_NEED_REPLACEMENT)
        updated = True
    if not updated:
        return None
    cond["lastTransitionTime"] = rfc3339(now)
    if o.meta(wl).get("generation") is not None:
        cond["observedGeneration"] = o.meta(wl)["generation"]
    return cond


# --- the reconcile recipe (`ReconcileGenericJob`) -------------------------------------------------


def _skip(pod: Obj, opts: Options) -> bool:
    """`Pod.Skip`: not labelled managed, or only implicitly enabled and not suspended by a parent."""
    if o.labels(pod).get(c.MANAGED_LABEL) != "true":
        return True
    return opts.implicitly_enabled and not o.annotations(pod).get(c.POD_SUSPENDING_PARENT)


def _unmanaged_queue(pod: Obj, opts: Options) -> bool:
    return not opts.manage_jobs_without_queue_name and not o.labels(pod).get(c.QUEUE_LABEL)


def _stop_job(job: _Group, wl: Obj | None, reason: str, message: str, now: datetime) -> list[a.Action]:
    """`stopJob` for the composable Pod: eviction reasons carry `DueTo<reason>`."""
    if reason == c.StopReason.WORKLOAD_EVICTED:
        reason = eviction_reason(wl)
    finalize = job.all_pods if job.is_group and reason == c.StopReason.WORKLOAD_DELETED else ()
    return stop_pods(job.pods, reason=reason, message=message, now=now, finalize=finalize)


def _construct(job: _Group, out: list[a.Action], lookups: Lookups) -> dict[str, Any]:
    if job.is_group:
        return _construct_group(job, out, lookups)
    return construct_pod_workload(job.first, job.opts, lookups)


def _ensure_one(job: _Group, match: Obj | None, to_delete: list[Obj], out: list[a.Action], lookups: Lookups, now: datetime) -> Obj | None:
    """`ensureOneWorkload` after matching: stop a running job without a match, delete, or update."""
    to_update = None
    if match is None and to_delete and job.suspended() and not o.has_quota_reservation(to_delete[0]):
        to_update, to_delete = to_delete[0], to_delete[1:]
    if match is None and not job.suspended() and not job.finished()[2]:
        old = to_delete[0] if len(to_delete) == 1 else None
        message = c.MSG_MISSING_WORKLOAD if old is None else c.MSG_NO_MATCHING_WORKLOAD
        out += _stop_job(job, old, c.StopReason.NO_MATCHING_WORKLOAD, message, now)
    deleted = 0
    for wl in to_delete:
        out.append(a.DeleteWorkload(workload_ref(wl), already_deleting=o.is_deleting(wl)))
        if not o.is_deleting(wl):
            deleted += 1
            out.append(pod_event(job.first, c.JobEventReason.DELETED_WORKLOAD, f"Deleted not matching Workload: {workload_ref(wl).key}"))
    if deleted:
        kind = "no matching workloads" if match is None else "extra workloads"
        raise RetryLater(f"{kind}: deleted {len(to_delete)} workloads")
    if to_update is not None:
        new = _construct(job, out, lookups)
        spec: dict[str, Any] = {k: None for k in (to_update.get("spec") or {}) if k != "active"}
        spec.update(new["spec"])
        patch = {"metadata": {"resourceVersion": o.meta(to_update).get("resourceVersion")}, "spec": spec}
        out.append(a.PatchWorkload(workload_ref(to_update), patch))
        out.append(pod_event(job.first, c.JobEventReason.UPDATED_WORKLOAD, f"Updated not matching Workload for suspended job: {workload_ref(to_update).key}"))
        updated = dict(to_update)
        updated["spec"] = {**(to_update.get("spec") or {}), **new["spec"]}
        return updated
    return match


def _pods_ready_condition(job: _Group, wl: Obj, now: datetime) -> dict[str, Any]:
    """`generatePodsReadyCondition` for this pod or group (the rule itself is `core.pods_ready`)."""
    current = o.find_condition(wl, c.WorkloadCondition.PODS_READY)
    cv = pods_ready.pods_ready_condition(
        admitted=o.is_admitted(wl),
        pods_ready=job.pods_ready(),
        current=None if current is None else (str(current.get("status", "")), str(current.get("reason", ""))),
    )
    return new_condition(cv.type, cv.status, cv.reason, cv.message, now=now, wl=wl)


def _clear_reservation(wl: Obj, evicted: Obj, opts: Options, now: datetime) -> a.UpdateWorkloadStatus:
    """Release the quota of an evicted Workload whose pods are gone; Requeued True only for some reasons."""
    reason, message = str(evicted.get("reason", "")), str(evicted.get("message", ""))
    requeue = reason in (c.EvictionReason.PREEMPTED, c.EvictionReason.NODE_FAILURES)
    owners = o.meta(wl).get("ownerReferences") or []
    single_pod_owned = (
        len(owners) == 1
        and o.annotations(wl).get(c.IS_GROUP_WORKLOAD) != "true"
        and owners[0].get("kind") == "Pod"
        and owners[0].get("apiVersion") == POD_API
    )
    if opts.skip_reassignment_for_pod_owned and single_pod_owned:
        requeue = False
    conditions = (
        new_condition(c.WorkloadCondition.REQUEUED, "True" if requeue else "False", reason, message, now=now, wl=wl),
        new_condition(c.WorkloadCondition.QUOTA_RESERVED, "False", c.PendingReason.PENDING_EVALUATION, message, now=now, wl=wl),
        new_condition(c.WorkloadCondition.ADMITTED, "False", c.AdmittedReason.NO_RESERVATION, c.MSG_NO_RESERVATION, now=now, wl=wl),
    )
    return a.UpdateWorkloadStatus(workload_ref(wl), conditions, clear_admission=True, field_manager="kueue-admission")


def _admission_check_message(wl: Obj) -> str:
    parts = [
        f"{check.get('name')}: {check.get('message')}"
        for check in (wl.get("status") or {}).get("admissionChecks") or ()
        if check.get("state") == "Pending" and check.get("message")
    ]
    return "; ".join(parts)


def _reconcile_job(job: _Group, wl: Obj | None, out: list[a.Action], lookups: Lookups, now: datetime) -> a.ReconcileResult | None:
    """Steps b to k of the recipe, once the one matching Workload is known (None = must be created)."""
    opts = job.opts
    if wl is not None and job.is_group:
        cond = _replacement_condition(job, wl, now)
        if cond is not None:
            out.append(a.UpdateWorkloadStatus(workload_ref(wl), (cond,), field_manager="kueue-pod-controller"))
            return None
    if wl is not None and o.is_finished(wl):
        out += remove_finalizers(job.all_pods)
        out.append(finished_event(job.first, wl))
        out += remove_workload_finalizer(wl)
        return None
    if wl is not None and o.is_deleting(wl):
        out += _stop_job(job, wl, c.StopReason.WORKLOAD_DELETED, c.MSG_WORKLOAD_DELETED, now)
        out += remove_workload_finalizer(wl)
        return None
    message, success, finished = job.finished()
    if finished:
        if wl is not None and not o.is_finished(wl):
            out += finish_workload(wl, c.FinishedReason.SUCCEEDED if success else c.FinishedReason.FAILED, message, now)
            out.append(finished_event(job.first, wl))
        out += remove_finalizers(job.all_pods)
        return None
    if wl is None:
        if job.active(now):
            return None
        new = _construct(job, out, lookups)
        out.append(a.CreateWorkload(new))
        out.append(pod_event(job.first, c.JobEventReason.CREATED_WORKLOAD, f"Created Workload: {o.meta(new)['namespace']}/{o.name(new)}"))
        return None
    if opts.reclaimable_pods:
        sizes = {ps.get("name"): ps.get("count", 1) for ps in (wl.get("spec") or {}).get("podSets") or ()}
        wanted = [{"name": r["name"], "count": min(r["count"], sizes.get(r["name"], r["count"]))} for r in job.reclaimable()]
        have = {r.get("name"): r.get("count") for r in (wl.get("status") or {}).get("reclaimablePods") or ()}
        if {r["name"]: r["count"] for r in wanted} != have:
            out.append(a.UpdateWorkloadStatus(workload_ref(wl), reclaimable_pods=tuple(wanted), field_manager="kueue-reclaimable-pods"))
            return None
    if opts.wait_for_pods_ready:
        cond = _pods_ready_condition(job, wl, now)
        current = o.find_condition(wl, c.WorkloadCondition.PODS_READY) or {}
        if (current.get("status"), current.get("reason")) != (cond["status"], cond["reason"]):
            out.append(a.UpdateWorkloadStatus(workload_ref(wl), (cond,), field_manager="kueue-job-controller"))
            return None
    evicted = o.find_condition(wl, c.WorkloadCondition.EVICTED)
    if evicted is not None and evicted.get("status") == "True":
        out += _stop_job(job, wl, c.StopReason.WORKLOAD_EVICTED, str(evicted.get("message", "")), now)
        if o.has_quota_reservation(wl) and not job.active(now):
            out.append(_clear_reservation(wl, evicted, opts, now))
        return None
    if job.suspended():
        if o.is_admitted(wl):
            return start_pods(job.pods, wl, is_group=job.is_group, opts=opts, lookups=lookups, now=now)
        if o.has_quota_reservation(wl) and (text := _admission_check_message(wl)):
            out += [pod_event(pod, c.JobEventReason.UPDATED_ADMISSION_CHECK, text) for pod in job.pods]
        queue = o.labels(job.first).get(c.QUEUE_LABEL, "")
        if not job.serving and (wl.get("spec") or {}).get("queueName", "") != queue:
            out.append(a.PatchWorkload(workload_ref(wl), {"spec": {"queueName": queue or None}}))
        return None
    if not o.is_admitted(wl):
        out += _stop_job(job, wl, c.StopReason.NOT_ADMITTED, c.MSG_NOT_ADMITTED_BY_CLUSTER_QUEUE, now)
    return None


def _decide(out: list[a.Action], step: Any) -> a.ReconcileResult:
    """Run one recipe step, turning our exception kinds into the Decision's error and retry."""
    try:
        started = step()
    except (RetryWith, _UnretryableWith) as exc:
        return a.ReconcileResult((*out, *exc.actions), str(exc), retry=isinstance(exc, RetryLater))
    except RetryLater as exc:
        return a.ReconcileResult(tuple(out), str(exc), retry=True)
    except Unretryable as exc:
        return a.ReconcileResult(tuple(out), str(exc))
    if isinstance(started, a.ReconcileResult):
        return a.ReconcileResult((*out, *started.actions), started.error, started.retry)
    return a.ReconcileResult(tuple(out))


def reconcile_pod(pod: Obj | None, *, workloads: Sequence[Obj], opts: Options, lookups: Lookups, now: datetime) -> a.ReconcileResult:
    """One pass for a pod without a group name.

    `pod` is None when it is gone. `workloads` are the Workloads in its namespace whose controller
    owner is a Pod with its name (upstream's owner index). The caller has already checked
    `managedJobsNamespaceSelector` against the namespace.
    """
    if pod is None:
        return a.ReconcileResult(tuple(act for wl in workloads for act in finalize_orphan(wl, opts, now)))
    if group_name(pod, opts):
        return a.ReconcileResult((), "event handler error: got a single pod reconcile request for a pod group", retry=True)
    if _skip(pod, opts):
        return a.ReconcileResult()
    if o.is_deleting(pod):
        acts = [act for wl in workloads for act in finalize_orphan(wl, opts, now)]
        return a.ReconcileResult((*acts, *remove_finalizers([pod])))
    if _unmanaged_queue(pod, opts):
        return a.ReconcileResult()
    job = _Group("", [pod], [pod], opts, is_group=False)
    out: list[a.Action] = []

    def step() -> a.ReconcileResult | None:
        match = None
        to_delete = []
        for wl in workloads:
            if match is None and equivalent_single(pod, wl, opts, lookups):
                match = wl
            else:
                to_delete.append(wl)
        return _reconcile_job(job, _ensure_one(job, match, to_delete, out, lookups, now), out, lookups, now)

    return _decide(out, step)


def _owned_by_parent(wl: Obj) -> bool:
    """A group Workload a parent controls (a StatefulSet's, which it keeps on hold at zero replicas and
    the garbage collector deletes with it) outlives its pods. Upstream's pod reconciler would finish it
    as orphaned when its last pod goes (`FinalizeOrphanedWorkload`), yet upstream's own e2e spec "should
    set the workload OnHold on scale-to-zero and clear it on scale-up" needs it re-admitted after the
    scale-up: the e2e behaviour wins here. Once it is being deleted, it is finalized as usual."""
    owner = o.controller_of(wl)
    group = o.annotations(wl).get(c.IS_GROUP_WORKLOAD) == "true"
    return group and owner is not None and owner.get("kind") != "Pod" and not o.is_deleting(wl)


def reconcile_group(
    pods: Sequence[Obj],
    *,
    name: str,
    workload: Obj | None,
    opts: Options,
    lookups: Lookups,
    now: datetime,
    expectations_satisfied: bool = True,
) -> a.ReconcileResult:
    """One pass for the pod group `name`: every pod of the group in one namespace, and the Workload
    named `name` in that namespace (None if absent).

    `expectations_satisfied` is False while excess/replaced pods this worker removed earlier have
    not been observed gone yet (upstream's `excessPodExpectations`); the worker tracks the UIDs of
    the pods of the `expected` RemoveFinalizer/DeletePod actions it ran for this group. Stopping the
    group (e.g. on eviction) deletes pods that keep our finalizer until they are replaced or the
    group finishes, so, as upstream's `Stop`, it expects nothing: waiting for them would hold the
    release of the evicted Workload's quota.
    """
    if not pods:
        if workload is None:
            return a.ReconcileResult()
        foreign = o.annotations(workload).get(c.IS_GROUP_WORKLOAD) != "true" and o.controller_of(workload) is not None
        if opts.validate_group_owner and foreign:
            return a.ReconcileResult()
        if _owned_by_parent(workload):
            return a.ReconcileResult()
        return a.ReconcileResult(tuple(finalize_orphan(workload, opts, now)))
    ordered = sorted(pods, key=lambda p: (o.name(p), o.meta(p).get("uid", "")))
    job = _Group(name, list(ordered), list(ordered), opts)
    if _skip(job.first, opts) or _unmanaged_queue(job.first, opts):
        return a.ReconcileResult()
    out: list[a.Action] = []

    def step() -> a.ReconcileResult | None:
        match: Obj | None = None
        to_delete: list[Obj] = []
        if workload is not None:
            if opts.validate_group_owner and o.annotations(workload).get(c.IS_GROUP_WORKLOAD) != "true":
                text = f'A Workload named "{name}" already exists but is not a pod group workload; this pod group cannot be admitted'
                out.append(pod_event(job.first, c.JobEventReason.WORKLOAD_NAME_CONFLICT, text, warning=True, action="Admission"))
                out.extend(remove_finalizers(job.partition()[1], expected=True))
                raise Unretryable(c.MSG_NOT_A_POD_GROUP_WORKLOAD)
            match, to_delete, acts = _match_group(job, workload, expectations_satisfied=expectations_satisfied, now=now)
            out.extend(acts)
        return _reconcile_job(job, _ensure_one(job, match, to_delete, out, lookups, now), out, lookups, now)

    return _decide(out, step)
