"""A plain Pod or a pod group as a job of the generic job reconcile: the `PodJob` adapter.

Mirrors `pkg/controller/jobs/pod/pod_controller.go` (upstream v0.19.2; the `Pod` type:
`ComposableJob`, `JobWithReclaimablePods`, `JobWithFinalize`, `JobWithSkip`,
`JobWithCustomWorkloadConditions`, `JobWithCustomQueueNameChange`) with `pkg/util/pod/pod.go`.
The reconcile itself is the generic one (`jobframework.plan`, `ReconcileGenericJob`).

Entry points: `reconcile_pod` (one pod without a group name) and `reconcile_group` (all pods of one
`kueue.x-k8s.io/pod-group-name` in a namespace). Both take objects exactly as the API returns them,
the matching Workloads (v1beta2), the Configuration, the worker's store (read only) and `now`; they
return a `jobframework.plan.Plan`. Nothing here reads the clock or performs I/O.

This module holds the adapter and the group logic (matching, excess and replacement pods,
`WaitingForReplacementPods`, serving mode); `pod_workload` builds and compares Workloads,
`pod_start` starts and stops pods, `pod_common` holds the shared accessors. Reasons and messages
live in `api/constants`.

Deliberate differences from upstream: starting a group is all-or-nothing (upstream patches pods in
parallel and may ungate some before hitting a conflict); map iteration (flavor assignments,
conflict detection) is sorted so the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from webhook.api import constants as c
from webhook.api import jobs
from webhook.api import objects as o
from webhook.api.fields import go_atoi
from webhook.api.objects import Obj
from webhook.config import Configuration
from webhook.worker.integrations.pod.common import (
    MAX_POD_SETS,
    ZERO_TIME,
    Options,
    RetryLater,
    Unretryable,
    group_name,
    group_total_count,
    has_pod_finalizer,
    is_gated,
    is_pod_suspended,
    is_runnable_or_succeeded,
    is_terminated,
    parse_timestamp,
    pod_event,
    pod_phase,
    pod_ref,
    pod_role,
    remove_finalizers,
    rfc3339,
    workload_ref,
)
from webhook.worker.integrations.pod.start import eviction_reason, start_pods, stop_pods
from webhook.worker.integrations.pod.workload import (
    construct_pod_workload,
    equivalent_single,
    fast_pod_sets,
    group_pod_sets,
    new_group_workload,
    with_owners,
    workload_name_for_pod,
)
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework.interface import JobError
from webhook.worker.jobframework.plan import Lookups, Plan, lookups_from
from webhook.worker.store import Store

__all__ = [
    "Lookups",
    "Options",
    "PodJob",
    "construct_pod_workload",
    "group_name",
    "reconcile_group",
    "reconcile_pod",
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
        key=lambda p: (
            not has_pod_finalizer(p),
            is_gated(p),
            parse_timestamp(o.meta(p).get("creationTimestamp")),
            o.name(p),
            o.meta(p).get("uid", ""),
        ),
    )


def _sort_inactive(pods: Sequence[Obj], now: datetime) -> list[Obj]:
    """Kept first: 1. holding the finalizer, 2. most recently active, 3. older; ties by name then uid."""
    return sorted(
        pods,
        key=lambda p: (
            not has_pod_finalizer(p),
            -(_last_active(p, now) - ZERO_TIME).total_seconds(),
            parse_timestamp(o.meta(p).get("creationTimestamp")),
            o.name(p),
            o.meta(p).get("uid", ""),
        ),
    )


def _remove_excess(pods: Sequence[Obj]) -> list[ja.JobAction]:
    """`removeExcessPods`: release and delete, both awaited by the next match of the group."""
    out: list[ja.JobAction] = []
    for pod in pods:
        out += remove_finalizers([pod], expected=True)
        if not o.is_deleting(pod):
            out += [
                ja.DeletePod(pod=pod_ref(pod), expected=True),
                pod_event(pod, c.JobEventReason.EXCESS_POD_DELETED, c.MSG_EXCESS_POD_DELETED),
            ]
    return out


class PodJob:
    """One reconcile's view of a plain Pod or a pod group (upstream's `Pod`, `isGroup`), as a
    `GenericJob` that is also a `ComposableJob`, `JobWithReclaimablePods`, `JobWithFinalize`,
    `JobWithCustomWorkloadConditions` and `JobWithCustomQueueNameChange`. `pods` are the members
    matching keeps (`all_pods`: every pod of the group); `expectations_satisfied` is False while
    released excess or replaced pods have not been observed yet."""

    api_version = "v1"
    kind = "Pod"
    group = ""

    def __init__(
        self,
        name: str,
        pods: list[Obj],
        opts: Options,
        lookups: Lookups,
        now: datetime,
        *,
        is_group: bool = True,
        expectations_satisfied: bool = True,
    ) -> None:
        self.name = name
        self.pods = list(pods)
        self.all_pods = list(pods)
        self.opts = opts
        self.lookups = lookups
        self.now = now
        self.is_group = is_group
        self.expectations_satisfied = expectations_satisfied
        self.absent = 0

    @property
    def first(self) -> Obj:
        return self.all_pods[0]

    @property
    def obj(self) -> Obj:
        """`Object()`: the (first) pod."""
        return self.first

    @property
    def fast(self) -> bool:
        return self.is_group and o.annotations(self.first).get(c.POD_GROUP_FAST_ADMISSION) == "true"

    @property
    def serving(self) -> bool:
        return self.is_group and o.annotations(self.first).get(c.POD_GROUP_SERVING) == "true"

    def partition(self) -> tuple[list[Obj], list[Obj]]:
        active = [p for p in self.pods if is_runnable_or_succeeded(p)]
        return active, [p for p in self.pods if not is_runnable_or_succeeded(p)]

    def pod_sets(self, *, partial_admission: bool = True) -> list[dict[str, Any]]:
        """`PodSets`: one per role (a fast-admitted group: the whole group as one)."""
        if self.fast:
            return fast_pod_sets(self.pods, group_total_count(self.first), self.opts)
        return group_pod_sets(self.pods, self.opts)

    def is_suspended(self) -> bool:
        return any(is_pod_suspended(p) for p in self.pods)

    def is_active(self) -> bool:
        """`IsActive`: some Running pod whose deletion grace period has not run out (never for one pod)."""
        for pod in self.pods if self.is_group else ():
            if pod_phase(pod) != "Running":
                continue
            grace = o.meta(pod).get("deletionGracePeriodSeconds")
            if (
                o.is_deleting(pod)
                and grace is not None
                and self.now > parse_timestamp(o.meta(pod)["deletionTimestamp"]) + timedelta(seconds=grace)
            ):
                continue
            return True
        return False

    def finished(self) -> tuple[str, str] | None:
        """`Finished`: (Succeeded or Failed, message) once done."""
        message, success, finished = self._finished()
        if not finished:
            return None
        return (c.FinishedReason.SUCCEEDED if success else c.FinishedReason.FAILED), message

    def _finished(self) -> tuple[str, bool, bool]:
        """(message, success, finished): all pods succeeded, or an unretriable group with nothing running."""
        if not self.is_group:
            pod = self.first
            return (
                str((pod.get("status") or {}).get("message") or ""),
                pod_phase(pod) == "Succeeded",
                is_terminated(pod),
            )
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

    def reclaimable_pods(self, wl: Obj) -> list[dict[str, Any]]:
        """`ReclaimablePods`: the succeeded pods of each role (none in serving mode)."""
        counts: dict[str, int] = {}
        if self.serving or not self.is_group:
            return []
        for pod in self.pods:
            if pod_phase(pod) == "Succeeded":
                role = pod_role(pod)
                counts[role] = counts.get(role, 0) + 1
        return [{"name": role, "count": n} for role, n in counts.items()]

    # -- GenericJob's template writes: a pod is never suspended or restored in place ---------------
    def suspend_patch(self, *, stopping: bool) -> dict[str, Any]:
        raise NotImplementedError("pods are stopped by PodJob.stop")

    def stop_status_patch(self) -> dict[str, Any] | None:
        raise NotImplementedError("pods are stopped by PodJob.stop")

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Any, *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        raise NotImplementedError("pods are started by PodJob.run")

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        raise NotImplementedError("pods are stopped by PodJob.stop")

    # -- ComposableJob and the optional abilities -------------------------------------------------
    def members(self) -> Sequence[Obj]:
        return self.pods

    def find_matching_workloads(self, workloads: Sequence[Obj]) -> tuple[Obj | None, list[Obj], list[ja.JobAction]]:
        if not self.is_group:
            match, to_delete = None, []
            for wl in workloads:
                if match is None and equivalent_single(self.first, wl, self.opts, self.lookups):
                    match = wl
                else:
                    to_delete.append(wl)
            return match, to_delete, []
        if not workloads:
            return None, [], []
        workload = workloads[0]
        if self.opts.validate_group_owner and o.annotations(workload).get(c.IS_GROUP_WORKLOAD) != "true":
            text = f'A Workload named "{self.name}" already exists but is not a pod group workload; this pod group cannot be admitted'
            raise Unretryable(
                c.MSG_NOT_A_POD_GROUP_WORKLOAD,
                [
                    pod_event(
                        self.first, c.JobEventReason.WORKLOAD_NAME_CONFLICT, text, warning=True, action="Admission"
                    ),
                    *remove_finalizers(self.partition()[1], expected=True),
                ],
            )
        return _match_group(self, workload, expectations_satisfied=self.expectations_satisfied, now=self.now)

    def construct_workload(self) -> tuple[dict[str, Any], list[ja.JobAction]]:
        if not self.is_group:
            return construct_pod_workload(self.first, self.opts, self.lookups), []
        out: list[ja.JobAction] = []
        try:
            return _construct_group(self, out, self.lookups), out
        except JobError as exc:
            exc.actions = (*out, *exc.actions)
            raise

    def prebuilt_workload_name(self) -> str:
        """A group's members may name the Workload their parent builds (a LeaderWorkerSet's): the
        group waits for it, as upstream's `handleJobWithNoWorkload`. A single pod builds its own."""
        if not self.is_group:
            return ""
        return jobs.prebuilt_workload_name(self.first, identifier_annotations=self.opts.workload_identifier_annotations)

    def run(self, wl: Obj) -> list[ja.JobAction]:
        return start_pods(self.pods, wl, is_group=self.is_group, opts=self.opts, lookups=self.lookups)

    def stop(self, wl: Obj | None, reason: str, message: str) -> list[ja.JobAction]:
        """`Pod.Stop` (eviction reasons carry `DueTo<reason>`); a deleted group Workload also
        releases every pod's finalizer."""
        if reason == c.StopReason.WORKLOAD_EVICTED:
            reason = eviction_reason(wl)
        finalize = self.all_pods if self.is_group and reason == c.StopReason.WORKLOAD_DELETED else ()
        return stop_pods(self.pods, reason=reason, message=message, now=self.now, finalize=finalize)

    def finalize(self) -> list[ja.JobAction]:
        """`Finalize`: every pod's finalizer goes."""
        return remove_finalizers(self.all_pods)

    def custom_workload_conditions(self, wl: Obj) -> tuple[Obj, ...]:
        cond = _replacement_condition(self, wl, self.now) if self.is_group else None
        return () if cond is None else (cond,)

    def follows_queue_name(self) -> bool:
        """`CustomQueueNameChange`: a serving group's Workload keeps its queue."""
        return not self.serving


def _pod_ready(pod: Obj) -> bool:
    return o.is_condition_true(pod, "Ready")


def _validate_group(group: PodJob, active: Sequence[Obj]) -> None:
    """`validatePodGroupMetadata`: index label, enough runnable pods, same queue and total count."""
    first = group.first
    total = group_total_count(first)
    index = o.labels(first).get(c.POD_GROUP_POD_INDEX_LABEL)
    if index is not None:
        where = f'for Pod "{o.meta(first).get("namespace")}/{o.name(first)}"'
        if not (index.isascii() and index.isdigit()):
            raise RetryLater(
                f'incorrect label value "{index}" {where}: invalid unsigned integer: strconv.ParseUint: parsing "{index}": invalid syntax'
            )
        if int(index) >= total:
            raise RetryLater(
                f'incorrect label value "{index}" {where}: validation error: value should be less than {total}'
            )
    if not group.fast and len(active) < total:
        message = f"'{group.name}' group has fewer runnable pods than expected"
        raise Unretryable(message, [pod_event(first, c.JobEventReason.ERR_WORKLOAD_COMPOSE, message, warning=True)])
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
            raise RetryLater(
                f"failed to extract '{c.POD_GROUP_TOTAL_COUNT}' annotation from the pod '{o.name(pod)}': {exc}"
            ) from exc
        if count != total:
            raise Unretryable(
                f"pods '{o.name(first)}' and '{o.name(pod)}' has different '{c.POD_GROUP_TOTAL_COUNT}' values: {total}!={count}"
            )


def _construct_group(group: PodJob, out: list[ja.JobAction], lookups: Lookups) -> dict[str, Any]:
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
    wl = new_group_workload(group.name, group.first, pod_sets, group.opts, lookups)
    wl["metadata"]["ownerReferences"] = with_owners([], group.pods)
    labels = _copied(group.pods, o.labels, group.opts.label_keys_to_copy, c.MSG_POD_GROUP_LABELS_MISMATCH)
    if labels:
        wl["metadata"]["labels"] = labels
    annotations = _copied(
        group.pods, o.annotations, group.opts.annotations_to_copy, c.MSG_POD_GROUP_ANNOTATIONS_MISMATCH
    )
    wl["metadata"].setdefault("annotations", {}).update(annotations)
    return wl


def _copied(
    pods: Sequence[Obj], read: Callable[[Obj], Mapping[str, str]], keys: Collection[str], mismatch: str
) -> dict[str, str]:
    """`getByKey`: the values of `keys` the pods carry; a pod without a key leaves it to the others,
    two pods with different values of one key are an error (RetryLater: no Workload until fixed)."""
    out: dict[str, str] = {}
    for pod in pods:
        values = read(pod)
        for key in sorted(keys):
            if key in values:
                if key in out and out[key] != values[key]:
                    raise RetryLater(mismatch)
                out[key] = values[key]
    return out


def _group_equivalent(group: PodJob, wl: Obj, job_sets: Sequence[Obj]) -> bool:
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
    group: PodJob, wl: Obj, *, expectations_satisfied: bool, now: datetime
) -> tuple[Obj | None, list[Obj], list[ja.JobAction]]:
    """`FindMatchingWorkloads` for a group: (match, to delete, actions on the kept/dropped pods)."""
    if (wl.get("spec") or {}).get("maximumExecutionTimeSeconds") != fw.max_execution_time_seconds(group.first):
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
    out: list[ja.JobAction] = []
    refs = o.meta(wl).get("ownerReferences") or []
    owners = with_owners(refs, kept)
    if len(owners) > len(refs):
        # `EnsureWorkloadOwnedByAllMembers`
        out.append(ja.AdoptWorkload(workload={**wl, "metadata": {**o.meta(wl), "ownerReferences": owners}}))
        out.append(
            ja.RecordEvent(
                reason=c.JobEventReason.OWNER_REFERENCES_ADDED,
                message=f"Added {len(owners) - len(refs)} owner reference(s)",
                regarding=workload_ref(wl),
            )
        )
    return wl, [], out + _remove_excess(excess) + remove_finalizers(replaced, expected=True)


def _replacement_condition(group: PodJob, wl: Obj, now: datetime) -> dict[str, Any] | None:
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


# --- the entry points ----------------------------------------------------------------------------


def _skip(pod: Obj, opts: Options) -> bool:
    """`Pod.Skip`: not labelled managed, or only implicitly enabled and not suspended by a parent."""
    if o.labels(pod).get(c.MANAGED_LABEL) != "true":
        return True
    return opts.implicitly_enabled and not o.annotations(pod).get(c.POD_SUSPENDING_PARENT)


def _unmanaged_queue(pod: Obj, opts: Options) -> bool:
    return not opts.manage_jobs_without_queue_name and not o.labels(pod).get(c.QUEUE_LABEL)


def reconcile_pod(
    pod: Obj | None, *, workloads: Sequence[Obj], config: Configuration, store: Store, now: datetime
) -> Plan:
    """One pass for a pod without a group name.

    `pod` is None when it is gone. `workloads` are the Workloads in its namespace whose controller
    owner is a Pod with its name (upstream's owner index). The caller has already checked
    `managedJobsNamespaceSelector` against the namespace.
    """
    opts = Options.from_config(config)
    if pod is None:
        return fw.plan_finalize(workloads, config)
    if group_name(pod, opts):
        return Plan((), "event handler error: got a single pod reconcile request for a pod group")
    if _skip(pod, opts):
        return Plan()
    if o.is_deleting(pod):
        return Plan((*fw.plan_finalize(workloads, config).steps, *remove_finalizers([pod])))
    if _unmanaged_queue(pod, opts):
        return Plan()
    job = PodJob("", [pod], opts, lookups_from(store), now, is_group=False)
    return fw.plan_top_level(job, workloads, config=config, store=store, now=now, lookups=job.lookups)


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
    config: Configuration,
    store: Store,
    now: datetime,
    expectations_satisfied: bool = True,
) -> Plan:
    """One pass for the pod group `name`: every pod of the group in one namespace, and the Workload
    named `name` in that namespace (None if absent).

    `expectations_satisfied` is False while excess/replaced pods this worker removed earlier have
    not been observed gone yet (upstream's `excessPodExpectations`); the worker tracks the UIDs of
    the pods of the `expected` RemovePodFinalizer/DeletePod actions it ran for this group. Stopping
    the group (e.g. on eviction) deletes pods that keep our finalizer until they are replaced or
    the group finishes, so, as upstream's `Stop`, it expects nothing: waiting for them would hold
    the release of the evicted Workload's quota.
    """
    opts = Options.from_config(config)
    if not pods:
        if workload is None:
            return Plan()
        foreign = o.annotations(workload).get(c.IS_GROUP_WORKLOAD) != "true" and o.controller_of(workload) is not None
        if opts.validate_group_owner and foreign:
            return Plan()
        if _owned_by_parent(workload):
            return Plan()
        return fw.plan_finalize([workload], config)
    ordered = sorted(pods, key=lambda p: (o.name(p), o.meta(p).get("uid", "")))
    job = PodJob(name, ordered, opts, lookups_from(store), now, expectations_satisfied=expectations_satisfied)
    if _skip(job.first, opts) or _unmanaged_queue(job.first, opts):
        return Plan()
    return fw.plan_top_level(
        job, [] if workload is None else [workload], config=config, store=store, now=now, lookups=job.lookups
    )
