"""Admission checks on a Workload: which checks it needs, and what the workload controller does about
their states, as pure functions of the Workload's JSON, its ClusterQueue and `now`.

External controllers (ProvisioningRequest, MultiKueue, or a user's own, named by the AdmissionCheck's
`spec.controllerName`) set each check's state; core Kueue lists the checks, turns Admitted on once
all are Ready, evicts on Retry and deactivates on Rejected. Mirrors, at upstream commit ff69552e79:

* `pkg/workload/workload.go` `AdmissionChecksForWorkload` / `admissionChecksForAdmission` and
  `pkg/workload/admissionchecks.go` `HasAllRequiredChecks` (`required_checks`);
* `pkg/controller/core/workload_controller.go` `syncAdmissionCheckConditions` (`sync_checks`),
  `buildAdmissionChecksMessage` (`checks_message`), `reconcileCheckBasedEviction`, and the order of
  the steps in `Reconcile` (`workload_step`);
* `pkg/workload/admissionchecks.go` `SyncAdmittedCondition`, `GetMaxRetryTime`,
  `NeedsRequeueAtUpdate` (`admitted_sync`, `requeue_at_update`);
* `pkg/workload/evict/evict.go` `resetChecksOnEviction` (`reset_on_eviction`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from webhook.api import constants
from webhook.api.constants import EvictionReason
from webhook.core import concurrent_admission as ca
from webhook.core import dra
from webhook.core.conditions import ConditionValue, admitted_condition, evicted
from webhook.core.max_execution import max_execution_step
from webhook.core.model import ClusterQueueSpec
from webhook.core.pods_ready import Policy, StepKind, WorkloadStep, controller_step
from webhook.core.workload import WorkloadInfo, parse_time, parse_workload

__all__ = [
    "admitted_sync",
    "assigned_flavors",
    "checks_message",
    "has_all_required",
    "requeue_at_update",
    "required_checks",
    "reset_on_eviction",
    "sync_checks",
    "workload_step",
]

_W = constants.WorkloadCondition


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def assigned_flavors(admission: Mapping[str, Any]) -> frozenset[str]:
    """Every flavor some podSet of `status.admission` got (`findAdmissionFlavors`)."""
    return frozenset(
        str(f) for psa in admission.get("podSetAssignments") or () for f in (psa.get("flavors") or {}).values()
    )


def required_checks(cq: ClusterQueueSpec, admission: Mapping[str, Any] | None) -> frozenset[str]:
    """The checks a Workload must carry: with an admission, those whose flavors meet the assigned
    ones; before that only those that apply to every flavor of the ClusterQueue."""
    if admission:
        flavors = assigned_flavors(admission)
        return frozenset(name for name, on in cq.admission_check_flavors.items() if on & flavors)
    every = frozenset(cq.flavor_names())
    return frozenset(name for name, on in cq.admission_check_flavors.items() if on >= every)


def has_all_required(
    cq: ClusterQueueSpec, admission: Mapping[str, Any], present: Sequence[str] | Mapping[str, Any]
) -> bool:
    """Every check the admission calls for is listed on the Workload (`HasAllRequiredChecks`)."""
    return required_checks(cq, admission) <= set(present)


def sync_checks(
    current: Sequence[Mapping[str, Any]], required: frozenset[str], now: datetime
) -> list[dict[str, Any]] | None:
    """`status.admissionChecks` holding exactly `required` (new ones Pending, sorted by name), or None
    when no write is due. As upstream, a mere reordering is not worth a write."""
    if not required:
        return [] if current else None
    checks = [dict(c) for c in current]
    names = {str(c.get("name")) for c in checks}
    added = False
    for name in sorted(required - names):
        checks.append(
            {"name": name, "state": constants.CHECK_STATE_PENDING, "message": "", "lastTransitionTime": _stamp(now)}
        )
        added = True
    if not added and len(checks) <= len(required):
        return None
    return sorted((c for c in checks if c.get("name") in required), key=lambda c: str(c.get("name")))


def checks_message(checks: Sequence[Mapping[str, Any]], state: str) -> str:
    """`AdmissionCheck(s) in <state> state: "a" (msg); "b"`, sorted by name."""
    parts = []
    for c in sorted(checks, key=lambda c: str(c.get("name"))):
        quoted = json.dumps(str(c.get("name")))
        parts.append(f"{quoted} ({c['message']})" if c.get("message") else quoted)
    noun = "AdmissionChecks" if len(checks) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


def _max_retry_time(checks: Sequence[Mapping[str, Any]]) -> datetime | None:
    """Latest lastTransitionTime + requeueAfterSeconds over the Retry checks (`GetMaxRetryTime`)."""
    latest: datetime | None = None
    for c in checks:
        after, at = c.get("requeueAfterSeconds"), parse_time(c.get("lastTransitionTime"))
        if after is None or at is None or c.get("state") != constants.CHECK_STATE_RETRY:
            continue
        when = at + timedelta(seconds=int(after))
        if latest is None or when > latest:
            latest = when
    return latest


def requeue_at_update(status: Mapping[str, Any], now: datetime) -> datetime | None:
    """The `requeueState.requeueAt` a Retry check's delay calls for, None when nothing changes
    (`NeedsRequeueAtUpdate`: only a future time later than the current one)."""
    target = _max_retry_time(status.get("admissionChecks") or ())
    if target is None or target <= now:
        return None
    state = status.get("requeueState")
    if state is not None:
        current = parse_time(state.get("requeueAt"))
        if current is not None and current >= target:
            return None
    return target


def reset_on_eviction(checks: Sequence[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """Every non-Pending check back to Pending; a Retry one counts the retry. The entry is rebuilt,
    so podSetUpdates and (for non-Retry states) retryCount go (`resetChecksOnEviction`)."""
    out = []
    for c in checks:
        state = c.get("state")
        if state == constants.CHECK_STATE_PENDING:
            out.append(dict(c))
            continue
        new: dict[str, Any] = {
            "name": c.get("name"),
            "state": constants.CHECK_STATE_PENDING,
            "message": constants.MSG_CHECK_RESET.format(state=state),
            "lastTransitionTime": _stamp(now),
        }
        if c.get("requeueAfterSeconds") is not None:
            new["requeueAfterSeconds"] = c["requeueAfterSeconds"]
        if state == constants.CHECK_STATE_RETRY:
            new["retryCount"] = int(c.get("retryCount") or 0) + 1
        out.append(new)
    return out


def admitted_sync(wl: WorkloadInfo) -> ConditionValue | None:
    """The Admitted condition of a Workload holding quota but not admitted, when it must change
    (`SyncAdmittedCondition`): True once every listed check is Ready and no placement is delayed."""
    if not wl.has_quota_reservation or wl.is_admitted:
        return None
    states = wl.check_states.values()
    want = admitted_condition(bool(states), all(s == constants.CHECK_STATE_READY for s in states), wl.topology_pending)
    current = wl.conditions.get(_W.ADMITTED)
    if current is not None and (current.status, current.reason, current.message) == (
        want.status,
        want.reason,
        want.message,
    ):
        return None
    return want


def _checks_step(
    obj: Mapping[str, Any], wl: WorkloadInfo, cq: ClusterQueueSpec | None, now: datetime, *, parent: bool
) -> WorkloadStep | None:
    """`parent`: a ConcurrentAdmission parent, whose checks run on its variants; it only keeps
    Admitted in step with its reservation."""
    status = obj.get("status") or {}
    checks = status.get("admissionChecks") or ()
    if cq is not None and not parent:
        synced = sync_checks(checks, required_checks(cq, status.get("admission")), now)
        if synced is not None:
            return WorkloadStep(StepKind.SYNC_CHECKS, checks=tuple(synced))
    cond = admitted_sync(wl)
    if cond is not None:
        return WorkloadStep(StepKind.ADMITTED, conditions=(cond,))
    if parent or not wl.has_quota_reservation or wl.is_evicted:
        return None
    rejected = [c for c in checks if c.get("state") == constants.CHECK_STATE_REJECTED]
    if rejected:
        message = checks_message(rejected, constants.CHECK_STATE_REJECTED)
        target = ConditionValue(_W.DEACTIVATION_TARGET, "True", EvictionReason.ADMISSION_CHECK, message)
        return WorkloadStep(StepKind.REJECTED, conditions=(target,), event=f"Deactivated due to {message}")
    retry = [c for c in checks if c.get("state") == constants.CHECK_STATE_RETRY]
    if retry:
        message = "Evicted due to " + checks_message(retry, constants.CHECK_STATE_RETRY)
        return WorkloadStep(
            StepKind.EVICT,
            conditions=(evicted(EvictionReason.ADMISSION_CHECK, message),),
            reason=EvictionReason.ADMISSION_CHECK,
            message=message,
            event_reason=f"EvictedDueTo{EvictionReason.ADMISSION_CHECK}",
        )
    return None


def workload_step(
    obj: Mapping[str, Any],
    cq: ClusterQueueSpec | None,
    policy: Policy | None,
    now: datetime,
    *,
    jitter: float = 0.0,
    concurrent_admission: bool = False,
    devices: dra.Outcome | None = None,
    granular_reasons: bool = False,
) -> WorkloadStep:
    """The workload controller's next write, in upstream's `Reconcile` order: nothing for a finished
    Workload; a Retry check's requeue time; deactivation, backoff and reactivation
    (`controller_step`); then, with `cq` the ClusterQueue its LocalQueue routes to (None if
    unknown), the checks list, the Admitted condition and check-based eviction or deactivation;
    last, for a Workload holding quota, the PodsReady timeout and the maximum execution time
    (`core.max_execution`), looked at again at the earlier of their deadlines. With `concurrent_admission`
    (the feature gate) a parent has no checks of its own and a variant no PodsReady timeout: its parent is
    the one timed out. A Workload waiting for quota whose DRA devices cannot be counted (`devices`, from
    `dra.resolve`) is marked Inadmissible right after the requeue time, and nothing else is done for it."""
    wl = parse_workload(obj)
    if wl.is_finished:
        return WorkloadStep(StepKind.NONE)
    at = requeue_at_update(obj.get("status") or {}, now)
    if at is not None:
        return WorkloadStep(StepKind.REQUEUE_AT, requeue_at=at)
    if devices is not None and devices.inadmissible and not wl.has_quota_reservation and not wl.is_on_hold:
        conds = dra.inadmissible_conditions(obj, devices, granular_reasons=granular_reasons)
        return (
            WorkloadStep(StepKind.UPDATE, conditions=conds, message=devices.quota_message)
            if conds
            else WorkloadStep(StepKind.NONE)
        )
    first = controller_step(wl, None, now)
    if first.kind != StepKind.NONE:
        return first
    step = _checks_step(obj, wl, cq, now, parent=concurrent_admission and ca.is_parent(obj))
    if step is not None:
        return step
    last = controller_step(wl, None if concurrent_admission and wl.is_variant else policy, now, jitter=jitter)
    if last.kind not in (StepKind.NONE, StepKind.RECHECK) or not wl.has_quota_reservation:
        return last
    exec_step = max_execution_step(obj, wl, now)
    if exec_step.kind == StepKind.NONE:
        return last
    if exec_step.kind == StepKind.RECHECK and last.recheck_at is not None:
        assert exec_step.recheck_at is not None
        return last if last.recheck_at <= exec_step.recheck_at else exec_step
    return exec_step
