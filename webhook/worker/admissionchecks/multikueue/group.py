"""What one MultiKueue Workload reconcile does, as a plan over plain objects (no I/O).

The manager keeps one copy of a Workload on each worker cluster of the check's MultiKueueConfig
until one worker admits its copy; then the other copies go, the job is created on that worker, the
check turns Ready with `status.clusterName` set, and the worker's job status is mirrored back until
the remote Workload finishes, which finishes the local one. `plan_group` decides all of that from
the local Workload and the remote Workloads read from the connected workers, as a list of typed
steps (`GroupPlan`) that the reconciler carries out in order.

Mirrors upstream v0.19.2 `pkg/controller/admissionchecks/multikueue/workload.go`: `Reconcile` from
the check lookup on (`GetMultiKueueAdmissionCheck`, the adapter and managed-by rejections,
`updateACS`), `reconcileGroup` steps 1-6 and 8 with `nominateAndSynchronizeWorkers` for the
AllAtOnce and external dispatchers, `syncAdmittingRemoteState`, `cloneForCreate`,
`isRemoteSpecOutOfSync` and `bestMatchByCondition`, plus `workload.PriorityChanged`,
`workload.ShouldSkipClusterNomination` and `api.TruncateConditionMessage`; step 7 (gate
MultiKueueOrchestratedPreemption) with `workloadToOpenPreemptionGate`.
Not planned here: the component workloads of multi-workload adapters (LeaderWorkerSet has no
MultiKueue adapter yet).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook.api import constants as c
from webhook.api import multikueue
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker import preemption_gates
from webhook.worker.jobframework import workload_slices

__all__ = [
    "EVENT_REASON",
    "EVICTED_ON_MANAGER_CLUSTER",
    "SYNC_DEFERRED_REQUEUE",
    "CreateClone",
    "Event",
    "Fail",
    "Finish",
    "GroupContext",
    "GroupPlan",
    "OpenRemotePreemptionGate",
    "Owner",
    "RemoveRemote",
    "ReportAdmitted",
    "RequeueAfter",
    "SetCheck",
    "SetClusterName",
    "SetDelayedTopologyReady",
    "SetNomination",
    "SetRemoteDeactivation",
    "Step",
    "SyncJob",
    "UpdateRemoteSpec",
    "best_match_by_condition",
    "clone_for_create",
    "gate_to_open",
    "multikueue_check",
    "nominate",
    "plan_group",
    "priority_changed",
    "resolve_owner",
    "spec_out_of_sync",
    "truncate_condition_message",
]

EVENT_REASON = "MultiKueue"
"""Reason (and action) of the Events on the local Workload, from `kueue-workload-controller`."""
EVICTED_ON_MANAGER_CLUSTER = "EvictedOnManagerCluster"
"""DeactivationTarget reason set on the admitting remote when the manager evicts (`WorkloadEvictedOnManagerCluster`)."""
SYNC_DEFERRED_REQUEUE = timedelta(seconds=2)
"""`syncDeferredRequeueAfter`: the local job is still suspended, so the remote status waits; look again soon."""

_CONDITION_MESSAGE_LIMIT = 32 * 1024
_NO_REMOTE_CLIENT = "no remote client for nominated cluster"  # admissioncheck.ErrNoRemoteClientForNominatedCluster
_WORKLOAD_PRIORITY_CLASS = (c.GROUP, "WorkloadPriorityClass")
_POD_PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")
_DELAYED_PENDING = "Pending"
_DELAYED_READY = "Ready"
_ZERO_TIME = datetime.min.replace(tzinfo=UTC)


# == steps ============================================================================================


@dataclass(frozen=True, slots=True)
class Event:
    """An Event on the local Workload, reason and action `MultiKueue` (the recorder cuts the
    message to 1024 characters, as `api.TruncateEventMessage`)."""

    type: str
    message: str


@dataclass(frozen=True, slots=True)
class RemoveRemote:
    """Delete the remote job (only if it carries our origin label), then the remote Workload
    `workload` if there is one, after removing its `resource-in-use` finalizer (`RemoveRemoteObjects`)."""

    cluster: str
    workload: Obj | None


@dataclass(frozen=True, slots=True)
class CreateClone:
    """Create `body` on `cluster`; on success count `multikueue_workloads_dispatched_total`."""

    cluster: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class UpdateRemoteSpec:
    """Update the remote Workload in place: `workload` is the remote as read, with its new spec."""

    cluster: str
    workload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SetRemoteDeactivation:
    """Set `DeactivationTarget=True`, `EvictedOnManagerCluster`, `message` on the remote Workload's status."""

    cluster: str
    workload: Obj
    message: str


@dataclass(frozen=True, slots=True)
class OpenRemotePreemptionGate:
    """Open our preemption gate on the remote Workload `workload` (a status update): that worker may
    now preempt for it."""

    cluster: str
    workload: Obj


@dataclass(frozen=True, slots=True)
class SyncJob:
    """Check that the remote job carries our origin (else stop with upstream's
    `remote object is not owned by MultiKueue` error), then create it if missing or mirror its
    status onto the local job, through the adapter; the adapter may report the sync deferred."""

    cluster: str


@dataclass(frozen=True, slots=True)
class SetCheck:
    """Write `check` (name, state, message, lastTransitionTime) into `status.admissionChecks`
    (`SetAdmissionCheckState`: the time moves only with the state), then record `event`."""

    check: dict[str, Any]
    event: Event | None = None


@dataclass(frozen=True, slots=True)
class SetClusterName:
    """Set `status.clusterName` (unset until now)."""

    cluster: str


@dataclass(frozen=True, slots=True)
class SetNomination:
    """Set `status.nominatedClusterNames` (empty: remove it)."""

    clusters: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SetDelayedTopologyReady:
    """Mark the local pod set assignments' pending `delayedTopologyRequest` Ready: the worker placed them."""

    pod_sets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReportAdmitted:
    """Count `multikueue_workloads_admitted_total` for `cluster`: the check just turned Ready."""

    cluster: str


@dataclass(frozen=True, slots=True)
class Finish:
    """Finish the local Workload (Finished=True) with the remote's reason and message (`workloadfinish.Finish`)."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class RequeueAfter:
    """Reconcile again after `after` (None: no requeue); when a `SyncJob` of this plan was
    deferred and `if_deferred` is set, after `if_deferred` instead."""

    after: timedelta | None
    if_deferred: timedelta | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """The reconcile fails with `message` after the steps before it (the work queue backs off)."""

    message: str


Step = (
    RemoveRemote
    | CreateClone
    | UpdateRemoteSpec
    | SetRemoteDeactivation
    | OpenRemotePreemptionGate
    | SyncJob
    | SetCheck
    | SetClusterName
    | SetNomination
    | SetDelayedTopologyReady
    | ReportAdmitted
    | Finish
    | RequeueAfter
    | Fail
)


@dataclass(slots=True)
class GroupPlan:
    """The steps of one reconcile, in the order to carry them out."""

    steps: list[Step] = field(default_factory=list)

    def add(self, step: Step) -> None:
        self.steps.append(step)


# == inputs ===========================================================================================


@dataclass(frozen=True, slots=True)
class Owner:
    """The job behind a Workload, as the adapter lookup found it (`wlReconciler.adapter`)."""

    adapter: str | None
    """The key (`gvk.String()`) of the adapter to use; None: no adapter for this owner."""
    gvk: str | None = None
    """The owner's `gvk.String()`; None: the Workload has no owner at all."""
    name: str = ""


@dataclass(frozen=True, slots=True)
class GroupContext:
    """Everything besides the Workloads that a reconcile decides on."""

    now: datetime
    check: str | None
    """The MultiKueue check in the Workload's status (`multikueue_check`); None: there is none."""
    owner: Owner
    origin: str
    worker_lost_timeout: timedelta
    managed: tuple[bool, str] = (True, "")
    """The adapter's `managed()` answer for the owner; not asked for a deleted Workload. A missing
    owner is the caller's error to report (upstream's GET fails), not an answer here."""
    unavailable: tuple[str, ...] = ()
    """Clusters of the check's config without a connected client, in config order."""
    lost_since: Mapping[str, datetime] = field(default_factory=dict)
    """When each unavailable cluster's connection dropped (`disconnectedSince`); missing: now."""
    dispatcher: str = multikueue.DISPATCHER_ALL_AT_ONCE
    elastic_enabled: bool = False
    """Gate ElasticJobsViaWorkloadSlices."""
    deleted: bool = False
    """The Workload is gone or being deleted (read from the deleted-Workload cache)."""
    orchestrated_preemption: bool = False
    """Gate MultiKueueOrchestratedPreemption."""


# == helpers ==========================================================================================


def _stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time(value: object) -> datetime:
    if not value:
        return _ZERO_TIME
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _status(wl: Obj) -> Obj:
    return wl.get("status") or {}


def _cluster_name(wl: Obj) -> str:
    return str(_status(wl).get("clusterName") or "")


def _nominated(wl: Obj) -> list[str]:
    return list(_status(wl).get("nominatedClusterNames") or ())


def _check_state(wl: Obj, name: str) -> Obj | None:
    for state in _status(wl).get("admissionChecks") or ():
        if state.get("name") == name:
            return state  # type: ignore[no-any-return]
    return None


def truncate_condition_message(message: str) -> str:
    """`api.TruncateConditionMessage`: at most 32 KiB (bytes, as Go counts), a cut one ending in ` ...`."""
    raw = message.encode()
    if len(raw) <= _CONDITION_MESSAGE_LIMIT:
        return message
    return raw[: _CONDITION_MESSAGE_LIMIT - 4].decode(errors="ignore") + " ..."


def multikueue_check(wl: Obj, controllers: Mapping[str, str]) -> Obj | None:
    """`GetMultiKueueAdmissionCheck`: the first of the Workload's checks whose AdmissionCheck
    (`controllers`: check name → `spec.controllerName`) belongs to MultiKueue."""
    for state in _status(wl).get("admissionChecks") or ():
        if controllers.get(str(state.get("name"))) == c.MULTIKUEUE_CONTROLLER:
            return state  # type: ignore[no-any-return]
    return None


def gvk_string(api_version: str, kind: str) -> str:
    """`schema.FromAPIVersionAndKind(...).String()`: `batch/v1, Kind=Job`, `/v1, Kind=Pod`."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def resolve_owner(wl: Obj, adapters: Collection[str]) -> Owner:
    """`wlReconciler.adapter`: the job-owner annotations (multi-owner kinds) when they name an
    adapter, else the controller reference, else the first owner reference."""
    annotations = o.annotations(wl)
    gvk = annotations.get(c.JOB_OWNER_GVK_ANNOTATION)
    job = annotations.get(c.JOB_OWNER_NAME_ANNOTATION)
    if gvk is not None and gvk in adapters and job:
        return Owner(gvk, gvk, job)
    ref = o.controller_of(wl) or next(iter(o.owner_references(wl)), None)
    if ref is None:
        return Owner(None)
    key = gvk_string(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
    return Owner(key if key in adapters else None, key, str(ref.get("name") or ""))


def best_match_by_condition(remotes: Mapping[str, Obj | None], ctype: str) -> tuple[Obj, str] | None:
    """`bestMatchByCondition`: the remote whose condition `ctype` is True with the earliest
    lastTransitionTime; ties go to the first cluster by name (upstream: map order)."""
    best: tuple[Obj, str] | None = None
    for cluster in sorted(remotes):
        remote = remotes[cluster]
        cond = o.find_condition(remote, ctype) if remote is not None else None
        if cond is None or cond.get("status") != "True":
            continue
        if best is None or _time(cond.get("lastTransitionTime")) < _time(best[0].get("lastTransitionTime")):
            best = (cond, cluster)
    return best


def _semantic(value: Any) -> Any:
    """Drop what `equality.Semantic.DeepEqual` does not tell apart from absent: nulls and empty
    lists and maps."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def spec_out_of_sync(local: Obj, remote: Obj) -> bool:
    """`isRemoteSpecOutOfSync`: the specs differ beyond `preemptionGates`, which each side manages."""
    a = {k: v for k, v in (local.get("spec") or {}).items() if k != "preemptionGates"}
    b = {k: v for k, v in (remote.get("spec") or {}).items() if k != "preemptionGates"}
    return bool(_semantic(a) != _semantic(b))


def _priority_class(wl: Obj) -> tuple[str, str] | None:
    ref = (wl.get("spec") or {}).get("priorityClassRef")
    if not ref:
        return None
    return str(ref.get("group") or ""), str(ref.get("kind") or "")


def _priority_class_name(wl: Obj) -> str:
    return str(((wl.get("spec") or {}).get("priorityClassRef") or {}).get("name") or "")


def priority_changed(old: Obj, new: Obj) -> bool:
    """`workload.PriorityChanged`: `new` names another WorkloadPriorityClass, or its priority
    differs; never for Pod priority classes. (The priority boost adds nothing: gate PriorityBoost
    is refused by our configuration.)"""
    if _priority_class(old) == _POD_PRIORITY_CLASS or _priority_class(new) != _WORKLOAD_PRIORITY_CLASS:
        return False
    if _priority_class_name(new) and _priority_class_name(old) != _priority_class_name(new):
        return True
    return int((old.get("spec") or {}).get("priority") or 0) != int((new.get("spec") or {}).get("priority") or 0)


def clone_for_create(local: Obj, origin: str, *, preemption_gated: bool = False) -> dict[str, Any]:
    """`cloneForCreate`: name, namespace, labels (less `job-uid`, plus the origin) and annotations
    of the local Workload (no owners, no finalizers), and a copy of its spec. `preemption_gated` (gate
    MultiKueueOrchestratedPreemption, a nominated copy): the copy's preemption gates are ours alone,
    each side keeps its own."""
    labels = {k: v for k, v in o.labels(local).items() if k != c.JOB_UID_LABEL}
    labels[multikueue.ORIGIN_LABEL] = origin
    meta: dict[str, Any] = {"name": o.name(local), "namespace": o.namespace(local), "labels": labels}
    if o.annotations(local):
        meta["annotations"] = dict(o.annotations(local))
    spec = copy.deepcopy(dict(local.get("spec") or {}))
    if preemption_gated:
        spec["preemptionGates"] = [{"name": multikueue.PREEMPTION_GATE}]
    return {
        "apiVersion": str(local.get("apiVersion") or c.V1BETA2),
        "kind": "Workload",
        "metadata": meta,
        "spec": spec,
    }


def _new_check(acs: Obj, state: str, message: str, now: datetime) -> dict[str, Any]:
    """The check state to write: `acs` (podSetUpdates and all) with a new state, message and time."""
    return {**copy.deepcopy(dict(acs)), "state": state, "message": message, "lastTransitionTime": _stamp(now)}


def _update_check(acs: Obj, state: str, message: str, now: datetime, event: str | None = None) -> SetCheck:
    """`updateACS`: the new state, with the old one appended to the message (truncated), at `now`."""
    text = truncate_condition_message(f"{message}, Previously: {multikueue.go_quote(str(acs.get('state') or ''))}")
    return SetCheck(_new_check(acs, state, text, now), Event(event, text) if event else None)


def _is_elastic(wl: Obj, ctx: GroupContext) -> bool:
    return workload_slices.is_elastic(wl, enabled=ctx.elastic_enabled)


def _pod_set_counts(wl: Obj) -> dict[str, int]:
    return workload_slices.counts((wl.get("spec") or {}).get("podSets") or ())


def _assignments(wl: Obj) -> dict[str, Obj]:
    admission = _status(wl).get("admission") or {}
    return {str(psa.get("name")): psa for psa in admission.get("podSetAssignments") or ()}


def _delayed_topology(local: Obj, remote: Obj) -> tuple[bool, tuple[str, ...]]:
    """`needsDelayedTopologyUpdate` and what `updateDelayedTopologyRequest` changes: the pod sets
    the remote placed whose local assignment has no topology or waits for it (Pending)."""
    mine = _assignments(local)
    needed, pending = False, []
    for name, theirs in _assignments(remote).items():
        psa = mine.get(name)
        if not theirs.get("topologyAssignment") or psa is None:
            continue
        waiting = psa.get("delayedTopologyRequest") == _DELAYED_PENDING
        needed = needed or waiting or not psa.get("topologyAssignment")
        if waiting:
            pending.append(name)
    return needed, tuple(sorted(pending))


# == the plan =========================================================================================


def plan_group(local: Obj, remotes: Mapping[str, Obj | None], ctx: GroupContext) -> GroupPlan:
    """One reconcile of the local Workload `local` (`Reconcile` from the check lookup on).

    `remotes` holds the same-named Workload read from every *connected* cluster of the check's
    config (None: not there); `ctx.unavailable` names the rest."""
    plan = GroupPlan()
    acs = _check_state(local, ctx.check) if ctx.check else None
    if acs is None or acs.get("state") == c.CHECK_STATE_REJECTED:
        return plan
    if ctx.owner.adapter is None:
        message = "No multikueue adapter found"
        if ctx.owner.gvk is not None:
            message += f" for owner kind {multikueue.go_quote(ctx.owner.gvk)}"
        plan.add(_update_check(acs, c.CHECK_STATE_REJECTED, message, ctx.now))
        return plan
    if not ctx.deleted and not ctx.managed[0]:
        message = f"The owner is not managed by Kueue: {ctx.managed[1]}"
        plan.add(_update_check(acs, c.CHECK_STATE_REJECTED, message, ctx.now))
        return plan
    remotes = dict(remotes)
    if ctx.deleted:
        # Copies on unavailable workers are the garbage collector's once they reconnect.
        for cluster in sorted(remotes):
            plan.add(RemoveRemote(cluster, remotes[cluster]))
        return plan
    _reconcile_group(plan, local, remotes, acs, ctx)
    return plan


def _reconcile_group(plan: GroupPlan, local: Obj, remotes: dict[str, Obj | None], acs: Obj, ctx: GroupContext) -> None:
    """`reconcileGroup`, steps 1-8; `remotes` follows the removals as upstream's group does."""
    elastic = _is_elastic(local, ctx)
    finished, reserved = o.is_finished(local), o.has_quota_reservation(local)
    state = acs.get("state")

    # 1. An elastic slice replaced by a newer one, or a scale-up slice still waiting for quota.
    if elastic and (
        (finished and workload_slices.is_replaced(local))
        or (not finished and not reserved and workload_slices.replacement_for(local) is not None)
    ):
        return

    # 2. Nothing should run remotely.
    if finished or not reserved:
        for cluster in sorted(remotes):
            plan.add(RemoveRemote(cluster, remotes[cluster]))
        if ctx.unavailable:
            plan.add(RequeueAfter(ctx.worker_lost_timeout))
        return

    # 3. A remote finished: finish here too, unless it only fell out of sync with its job.
    if found := best_match_by_condition(remotes, c.WorkloadCondition.FINISHED):
        cond, cluster = found
        if cond.get("reason") == c.FinishedReason.OUT_OF_SYNC and not elastic:
            # Patched only while Ready, so a later reconcile never mistakes it for a completion.
            if state == c.CHECK_STATE_READY:
                message = (
                    f"Remote workload on worker cluster {multikueue.go_quote(cluster)} is out of sync with its user job, "
                    "resetting for re-dispatch"
                )
                plan.add(_update_check(acs, c.CHECK_STATE_RETRY, message, ctx.now, event="Warning"))
            return
        plan.add(SyncJob(cluster))
        plan.add(Finish(str(cond.get("reason") or ""), str(cond.get("message") or "")))
        return

    # 4. A remote was evicted.
    if found := best_match_by_condition(remotes, c.WorkloadCondition.EVICTED):
        _, cluster = found
        if o.is_condition_true(local, c.WorkloadCondition.EVICTED):
            plan.add(SyncJob(cluster))
            plan.add(RequeueAfter(None, if_deferred=SYNC_DEFERRED_REQUEUE))
            return
        if state == c.CHECK_STATE_READY:
            message = (
                f"Workload evicted on worker cluster: {multikueue.go_quote(_cluster_name(local))}, "
                f"resetting for re-admission. Previously: {multikueue.go_quote(str(state))}"
            )
            plan.add(SetCheck(_new_check(acs, c.CHECK_STATE_RETRY, message, ctx.now), Event("Normal", message)))
            return

    # 5. Remote copies whose spec drifted: resized elastic slices and new priorities are
    # updated in place, anything else is removed.
    for cluster in sorted(remotes):
        remote = remotes[cluster]
        if remote is None or not spec_out_of_sync(local, remote):
            continue
        if _deactivating_for_manager_eviction(local, remote):
            continue
        spec = copy.deepcopy(dict(remote.get("spec") or {}))
        update = False
        if elastic and workload_slices.scaled_down(_pod_set_counts(remote), _pod_set_counts(local)):
            spec = copy.deepcopy(dict(local.get("spec") or {}))
            update = True
        if priority_changed(local, remote):
            local_spec = local.get("spec") or {}
            for key in ("priorityClassRef", "priority"):
                if key in local_spec:
                    spec[key] = copy.deepcopy(local_spec[key])
                else:
                    spec.pop(key, None)
            update = True
        if update:
            if ctx.orchestrated_preemption:  # the worker manages the remote's gates
                gates = (remote.get("spec") or {}).get("preemptionGates")
                spec.pop("preemptionGates", None)
                if gates is not None:
                    spec["preemptionGates"] = copy.deepcopy(gates)
            plan.add(UpdateRemoteSpec(cluster, {**copy.deepcopy(dict(remote)), "spec": spec}))
            continue
        plan.add(RemoveRemote(cluster, remote))
        remotes[cluster] = None

    # 6. The admitting remote.
    admitted = best_match_by_condition(remotes, c.WorkloadCondition.ADMITTED)
    if admitted is None and state == c.CHECK_STATE_READY:
        _lost_admitting_remote(plan, local, acs, ctx)
        return
    if admitted is not None:
        _converge(plan, local, remotes, acs, admitted[1], ctx)
        return

    # 7. Let one worker preempt for it: the one that asked first, another only 5 minutes later.
    if ctx.orchestrated_preemption:
        to_open, wait = gate_to_open(remotes, ctx.now)
        if to_open is not None:
            plan.add(OpenRemotePreemptionGate(to_open, remotes[to_open] or {}))
        if wait:
            plan.add(RequeueAfter(wait))

    # 8. Nominate workers while the check is Pending and no worker has been chosen.
    if state != c.CHECK_STATE_PENDING or (not elastic and _status(local).get("clusterName") is not None):
        return
    nominate(plan, local, remotes, ctx)


def gate_to_open(remotes: Mapping[str, Obj | None], now: datetime) -> tuple[str | None, timedelta]:
    """`workloadToOpenPreemptionGate`: the worker whose copy signalled the need to preempt first
    (the oldest `BlockedOnPreemptionGates=True`) among those whose gate is still closed, and when to
    look again. While the latest gate opened less than `SINGLE_CLUSTER_PREEMPTION_TIMEOUT_S` ago, none
    (only the wait). Workers are visited by name; the earliest signal wins, the first name on a tie."""
    timeout = timedelta(seconds=multikueue.SINGLE_CLUSTER_PREEMPTION_TIMEOUT_S)
    last_opened: datetime | None = None
    oldest: datetime | None = None
    candidate: str | None = None
    for cluster in sorted(remotes):
        remote = remotes[cluster]
        if remote is None:
            continue
        gate = preemption_gates.gate_state(remote, multikueue.PREEMPTION_GATE)
        if gate is not None and gate.get("position") == preemption_gates.OPEN:
            opened = _time(gate.get("lastTransitionTime"))
            if last_opened is None or opened > last_opened:
                last_opened = opened
            continue
        signal = o.find_condition(remote, c.WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES)
        if signal is None or signal.get("status") != "True":
            continue
        since = _time(signal.get("lastTransitionTime"))
        if oldest is None or since < oldest:
            candidate, oldest = cluster, since
    if candidate is None:
        return None, timedelta(0)
    left = timeout - (now - last_opened) if last_opened is not None else timedelta(0)
    if last_opened is not None and left > timedelta(0):
        return None, left
    return candidate, timeout


def _deactivating_for_manager_eviction(local: Obj, remote: Obj) -> bool:
    """The remote differs only in `active: false`, which its worker sets on our DeactivationTarget (6b) one
    write before it adds Evicted. Upstream reaches step 4 first in practice (remote events wait 1 s); a local
    event or retry in between must not take it for drift, or removing it loses the Job status that lets the
    manager release the quota (upstream multikueue/baseline "Should preempt ... (other workers)")."""
    if not o.is_condition_true(local, c.WorkloadCondition.EVICTED):
        return False
    spec = remote.get("spec") or {}
    if spec.get("active", True) is not False:
        return False

    def without_active(wl: Obj) -> Obj:
        return {"spec": {k: v for k, v in (wl.get("spec") or {}).items() if k != "active"}}

    return not spec_out_of_sync(without_active(local), without_active(remote))


def _lost_admitting_remote(plan: GroupPlan, local: Obj, acs: Obj, ctx: GroupContext) -> None:
    """6a: the check is Ready but no remote is admitted. An unreachable admitting worker gets
    `worker_lost_timeout` from when its connection dropped; anything else retries now."""
    admitting = _cluster_name(local)
    if admitting and admitting in ctx.unavailable:
        remaining = ctx.worker_lost_timeout - (ctx.now - ctx.lost_since.get(admitting, ctx.now))
        if remaining > timedelta(0):
            plan.add(RequeueAfter(remaining))
        else:
            plan.add(_update_check(acs, c.CHECK_STATE_RETRY, "Admitting remote lost", ctx.now))
        return
    if not admitting:
        message = "Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it"
    else:
        message = "Admitting remote no longer exists"
    plan.add(_update_check(acs, c.CHECK_STATE_RETRY, message, ctx.now))


def _converge(
    plan: GroupPlan, local: Obj, remotes: dict[str, Obj | None], acs: Obj, admitting: str, ctx: GroupContext
) -> None:
    """6b: keep only the admitting remote; pass a manager eviction on to it, or sync the job and
    record the admission (`syncAdmittingRemoteState`)."""
    for cluster in sorted(remotes):
        if remotes[cluster] is not None and cluster != admitting:
            plan.add(RemoveRemote(cluster, remotes[cluster]))
            remotes[cluster] = None
    remote = remotes[admitting]
    assert remote is not None  # it is the admitted one
    evicted = o.find_condition(local, c.WorkloadCondition.EVICTED)
    if o.has_quota_reservation(local) and evicted is not None and evicted.get("status") == "True":
        message = truncate_condition_message(f"Evicted on manager: {evicted.get('message') or ''}")
        plan.add(SetRemoteDeactivation(admitting, remote, message))
        return
    plan.add(SyncJob(admitting))
    topology, pending = _delayed_topology(local, remote)
    state = acs.get("state")
    update_check = state not in (c.CHECK_STATE_RETRY, c.CHECK_STATE_REJECTED)
    if update_check and _cluster_name(local) not in ("", admitting):
        plan.add(
            Fail(
                f"attempting to change immutable ClusterName from {multikueue.go_quote(_cluster_name(local))} to {multikueue.go_quote(admitting)}"
            )
        )
        return
    if topology and pending:
        plan.add(SetDelayedTopologyReady(pending))
    if update_check:
        message = f"The workload was admitted on {multikueue.go_quote(admitting)}"
        plan.add(SetCheck(_new_check(acs, c.CHECK_STATE_READY, message, ctx.now), Event("Normal", message)))
        if not _cluster_name(local):
            plan.add(SetClusterName(admitting))
        if _nominated(local):
            plan.add(SetNomination(()))
        if state != c.CHECK_STATE_READY:
            plan.add(ReportAdmitted(admitting))
    plan.add(RequeueAfter(ctx.worker_lost_timeout, if_deferred=SYNC_DEFERRED_REQUEUE))


def _other_checks_ready(local: Obj, check: str | None) -> bool:
    """`allNonMKAdmissionChecksReady`."""
    return all(
        state.get("state") == c.CHECK_STATE_READY
        for state in _status(local).get("admissionChecks") or ()
        if state.get("name") != check
    )


def nominate(plan: GroupPlan, local: Obj, remotes: Mapping[str, Obj | None], ctx: GroupContext) -> None:
    """`nominateAndSynchronizeWorkers` (AllAtOnce and external dispatchers): once every other
    check is Ready, nominate the workers, create the missing copies on them and remove the
    copies elsewhere. AllAtOnce nominates every connected worker (patching only a changed set);
    an elastic slice stays on its cluster; any other dispatcher's nominations are taken as written."""
    if not _other_checks_ready(local, ctx.check):
        return
    if _is_elastic(local, ctx) and _cluster_name(local):
        nominated = [_cluster_name(local)]
    elif ctx.dispatcher == multikueue.DISPATCHER_ALL_AT_ONCE:
        nominated = sorted(remotes)
        if sorted(_nominated(local)) != nominated:
            plan.add(SetNomination(tuple(nominated)))
    else:
        nominated = _nominated(local)
    missing = [f"cluster {name}: {_NO_REMOTE_CLIENT}" for name in nominated if name not in remotes]
    for cluster in sorted(remotes):
        remote = remotes[cluster]
        if cluster in nominated:
            if remote is None:
                gated = ctx.orchestrated_preemption and not (_is_elastic(local, ctx) and _cluster_name(local))
                plan.add(CreateClone(cluster, clone_for_create(local, ctx.origin, preemption_gated=gated)))
        elif remote is not None:
            plan.add(RemoveRemote(cluster, remote))
    if missing:
        plan.add(Fail("\n".join(missing)))
