"""The `kueue.x-k8s.io/provisioning-request` admission check, as plans over plain objects (no I/O).

A Workload holding quota whose ClusterQueue requires a check of this controller gets one
ProvisioningRequest (`autoscaling.x-k8s.io/v1`) per check, named `<workload>-<check>-<attempt>`, with
one PodTemplate `ppt-<request>-<podset>` per (merged) pod set. The request's conditions set the check:
Failed and BookingExpired retry with backoff up to `retryStrategy.backoffLimitCount`, then reject;
CapacityRevoked rejects; Provisioned makes it Ready with podSetUpdates that point the pods at the
request; Accepted carries the Provisioned condition's message (the ETA). Finished Workloads, and
evicted ones with gate CleanupProvisioningRequestsOnEviction, lose their requests.

Mirrors upstream v0.19.2 `pkg/controller/admissionchecks/provisioning/` (`controller.go`,
`provisioning.go`, `admissioncheck_reconciler.go`, `constants.go`) and the config lookups of
`pkg/util/admissioncheck`. `plan` decides everything a Workload reconcile does; the reconciler
(`webhook.worker.reconcilers.provisioning`) reads the inputs from its caches and carries the plan out.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api import quantity
from webhook.api.objects import Obj
from webhook.worker import admission_checks
from webhook.worker.admissionchecks import parameters
from webhook.worker.jobframework import podset

__all__ = [
    "ACCEPTED",
    "AUTOSCALING_V1",
    "BOOKING_EXPIRED",
    "CAPACITY_REVOKED",
    "CHECK_INACTIVE_MESSAGE",
    "CLASS_POD_ANNOTATION",
    "CONFIG_KIND",
    "CONTROLLER_NAME",
    "EVENT_SOURCE",
    "FAILED",
    "NO_REQUEST_NEEDED",
    "PROVISIONED",
    "REQUEST_POD_ANNOTATION",
    "BadParametersRef",
    "ConfigNotFound",
    "InconsistentPodSetAssignments",
    "Inputs",
    "MergedPodSet",
    "Plan",
    "Provision",
    "Template",
    "active_condition",
    "active_or_last",
    "attempt_of",
    "backoff_seconds",
    "config_from_ref",
    "has_check",
    "merge_pod_sets",
    "owned_by",
    "pod_template_name",
    "req_is_needed",
    "request_name",
    "set_check_state",
    "update_check_message",
    "uses_config",
]

CONTROLLER_NAME = c.PROVISIONING_REQUEST_CONTROLLER
EVENT_SOURCE = "kueue-provisioning-request-controller"
AUTOSCALING_V1 = "autoscaling.x-k8s.io/v1"
CONFIG_KIND = "ProvisioningRequestConfig"
CHECK_INACTIVE_MESSAGE = "the check is not active"
NO_REQUEST_NEEDED = "the provisioning request is not needed"

# The ProvisioningRequest conditions the autoscaler sets.
ACCEPTED = "Accepted"
BOOKING_EXPIRED = "BookingExpired"
CAPACITY_REVOKED = "CapacityRevoked"
PROVISIONED = "Provisioned"
FAILED = "Failed"
# What the pods of a provisioned request carry, so the autoscaler lets them consume the capacity.
REQUEST_POD_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_POD_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"

_HASH_LENGTH = 5
_MAX_PREFIX = 252 - _HASH_LENGTH  # 253, the longest object name, less the '-' before the hash
_TEMPLATES_PREFIX = "ppt"
# retryStrategy as the CRD defaults it (backoffLimitCount, backoffBaseSeconds, backoffMaxSeconds).
_DEFAULT_RETRY = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
IDENTICAL_POD_TEMPLATES = "IdenticalPodTemplates"
IDENTICAL_WORKLOAD_SCHEDULING_REQUIREMENTS = "IdenticalWorkloadSchedulingRequirements"


class InconsistentPodSetAssignments(Exception):
    """The admission has no assignment for a pod set that needs capacity (`errInconsistentPodSetAssignments`)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__("inconsistent podSet assignments" + (f": {detail}" if detail else ""))


BadParametersRef = parameters.BadParametersRef
ConfigNotFound = parameters.ConfigNotFound


# == names ============================================================================================


def _limit_name(full: str) -> str:
    """Names longer than the API allows keep their head and get a short hash of the whole name."""
    if len(full) <= _MAX_PREFIX:
        return full
    digest = hashlib.sha1(full.encode(), usedforsecurity=False).hexdigest()
    return f"{full[:_MAX_PREFIX]}-{digest[:_HASH_LENGTH]}"


def request_name(workload: str, check: str, attempt: int) -> str:
    return _limit_name(f"{workload}-{check}-{attempt}")


def pod_template_name(request: str, pod_set: str) -> str:
    return _limit_name(f"{_TEMPLATES_PREFIX}-{request}-{pod_set}")


def _attempt_match(name: str, workload: str, check: str) -> re.Match[str] | None:
    prefix = _limit_name(f"{workload}-{check}-")
    return re.fullmatch(re.escape(prefix) + r"([0-9]+)", name)


def attempt_of(request: Obj, workload: str, check: str) -> int:
    """The attempt a request's name ends with; 1 for a name that does not have one (`getAttempt`)."""
    match = _attempt_match(o.name(request), workload, check)
    return int(match.group(1)) if match else 1


def has_check(wl: Obj, check: str) -> bool:
    """The Workload's status lists the check (the `status.admissionChecks` index)."""
    return any(state.get("name") == check for state in (wl.get("status") or {}).get("admissionChecks") or ())


def owned_by(request: Obj, workload: str) -> bool:
    """Some ownerReference names the Workload (the `metadata.ownedByWorkload` index)."""
    return any(ref.get("name") == workload for ref in o.owner_references(request))


# == configs ==========================================================================================


def config_from_ref(ref: Obj | None, configs: Mapping[str, Obj]) -> Obj:
    """The ProvisioningRequestConfig an AdmissionCheck's parameters name (`ConfigHelper.ConfigFromRef`)."""
    return parameters.config_from_ref(
        ref, configs, kind=CONFIG_KIND, resource="provisioningrequestconfigs.kueue.x-k8s.io"
    )


def uses_config(ac: Obj, config: str) -> bool:
    """An AdmissionCheck of this controller whose valid parameters name `config` (the
    `spec.provisioningRequestConfig` index)."""
    spec = ac.get("spec") or {}
    if spec.get("controllerName") != CONTROLLER_NAME:
        return False
    try:
        config_from_ref(spec.get("parameters"), {config: {}})
    except (BadParametersRef, ConfigNotFound):
        return False
    return True


def active_condition(ac: Obj, configs: Mapping[str, Obj]) -> dict[str, Any] | None:
    """The `Active` condition to set on an AdmissionCheck of this controller; None when its status
    stays (upstream writes only a new status, not a new reason or message)."""
    if (ac.get("spec") or {}).get("controllerName") != CONTROLLER_NAME:
        return None
    new = admission_checks.active_condition(ac)
    try:
        config_from_ref((ac.get("spec") or {}).get("parameters"), configs)
    except (BadParametersRef, ConfigNotFound) as exc:
        new.update(status="False", reason="BadParametersRef", message=str(exc))
    current = o.find_condition(ac, c.ADMISSION_CHECK_ACTIVE) or {}
    return None if current.get("status") == new["status"] else new


def _retry(config: Obj) -> tuple[int, int, int]:
    strategy = (config.get("spec") or {}).get("retryStrategy") or {}
    return tuple(  # type: ignore[return-value]
        int(strategy[key] if strategy.get(key) is not None else default) for key, default in _DEFAULT_RETRY.items()
    )


def backoff_seconds(retry_count: int, base: int, cap: int) -> int:
    """`UpdateAdmissionCheckRequeueState`: the delay before retry `retry_count + 1`, base·2^(n-1)
    capped at `cap` (0: no cap); the first retry waits `base` whatever the cap."""
    delay = base
    for _ in range(retry_count):
        delay *= 2
        if cap and delay > cap:
            return cap
    return delay


# == pod sets =========================================================================================


def _pod_uses(spec: Obj, resources: set[str]) -> bool:
    return any(
        name in resources
        for container in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
        for part in ("requests", "limits")
        for name in ((container.get("resources") or {}).get(part) or {})
    )


def _count(ps: Obj) -> int:
    return int(ps.get("count", 1))


def _assigned_count(psa: Obj, ps: Obj) -> int:
    return int(psa["count"]) if psa.get("count") is not None else _count(ps)


def _managed(config: Obj) -> set[str]:
    return set((config.get("spec") or {}).get("managedResources") or ())


def _assignments(wl: Obj) -> dict[str, Obj]:
    admission = (wl.get("status") or {}).get("admission") or {}
    return {str(psa.get("name")): psa for psa in admission.get("podSetAssignments") or ()}


def _pod_sets(wl: Obj) -> list[Obj]:
    return list((wl.get("spec") or {}).get("podSets") or ())


def req_is_needed(wl: Obj, config: Obj) -> bool:
    """Some admitted pod set with pods uses a managed resource (any resource when none is listed)."""
    assignments, managed = _assignments(wl), _managed(config)
    for ps in _pod_sets(wl):
        template_spec = (ps.get("template") or {}).get("spec") or {}
        if _count(ps) <= 0 or (managed and not _pod_uses(template_spec, managed)):
            continue
        psa = assignments.get(str(ps.get("name")))
        if psa is None:
            raise InconsistentPodSetAssignments(f'missing assignment for PodSet "{ps.get("name")}"')
        if _assigned_count(psa, ps) > 0:
            return True
    return False


@dataclass(slots=True)
class MergedPodSet:
    """A pod set of the request: the first of the pod sets merged into it, and their pods."""

    name: str
    pod_set: Obj
    assignment: Obj
    count: int


def _canonical(value: Any, key: str = "") -> Any:
    """For `equality.Semantic.DeepEqual`: quantities by value, absent and empty alike."""
    if isinstance(value, Mapping):
        if key in ("requests", "limits", "overhead"):
            return {k: quantity.parse(v) for k, v in value.items()}
        out = {k: _canonical(v, k) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _same(a: Any, b: Any) -> bool:
    return bool(_canonical({"v": a}) == _canonical({"v": b}))


def _same_requests(a: Sequence[Obj], b: Sequence[Obj]) -> bool:
    return len(a) == len(b) and all(
        _same((x.get("resources") or {}).get("requests"), (y.get("resources") or {}).get("requests"))
        for x, y in zip(a, b, strict=True)
    )


def _can_merge(a: Obj, b: Obj, policy: str) -> bool:
    ta, tb = a.get("template") or {}, b.get("template") or {}
    if policy == IDENTICAL_POD_TEMPLATES:
        return _same(ta, tb)
    if policy != IDENTICAL_WORKLOAD_SCHEDULING_REQUIREMENTS:
        return False
    sa, sb = ta.get("spec") or {}, tb.get("spec") or {}
    return (
        _same_requests(sa.get("containers") or (), sb.get("containers") or ())
        and _same_requests(sa.get("initContainers") or (), sb.get("initContainers") or ())
        and all(
            _same(sa.get(key), sb.get(key))
            for key in ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims")
        )
    )


def merge_pod_sets(wl: Obj, config_spec: Obj) -> list[MergedPodSet]:
    """The pod sets the request asks capacity for: those with pods that use a managed resource,
    merged by `podSetMergePolicy`; pod sets admitted with no pods are left out."""
    managed = set(config_spec.get("managedResources") or ())
    by_name = {str(ps.get("name")): ps for ps in _pod_sets(wl)}
    assignments = _assignments(wl)
    policy = config_spec.get("podSetMergePolicy")
    merged: list[MergedPodSet] = []
    for name, ps in by_name.items():
        template_spec = (ps.get("template") or {}).get("spec") or {}
        if _count(ps) <= 0 or (managed and not _pod_uses(template_spec, managed)):
            continue
        psa = assignments.get(name)
        if psa is None:
            raise InconsistentPodSetAssignments()
        count = _assigned_count(psa, ps)
        if count <= 0:
            continue
        into = next((m for m in merged if policy and _can_merge(m.pod_set, ps, str(policy))), None)
        if into is not None:
            into.count += count
        else:
            merged.append(MergedPodSet(name, ps, psa, count))
    return merged


def _template(wl: Obj, merged: MergedPodSet, flavors: Mapping[str, Obj], *, tas: bool) -> dict[str, Any]:
    """The pod set's template with its flavors' node labels and tolerations (`podset.FromAssignment`
    + `Merge`) and limits as missing requests (`UseLimitsAsMissingRequestsInPod`); raises
    `podset.FlavorNotFound` or `podset.PermanentError`."""
    template = copy.deepcopy(dict(merged.pod_set.get("template") or {}))
    info = podset.PodSetInfo(name=merged.name, count=merged.count)
    if tas and merged.assignment.get("topologyAssignment") is not None:
        request = merged.pod_set.get("topologyRequest") or {}
        if not any(key in request for key in ("required", "preferred", "unconstrained")):
            info.annotations[c.PODSET_UNCONSTRAINED_TOPOLOGY] = "true"
        info.scheduling_gates.append({"name": c.TOPOLOGY_GATE})
    seen: set[str] = set()
    for _, flavor in sorted((merged.assignment.get("flavors") or {}).items()):
        if flavor in seen:
            continue
        if flavor not in flavors:
            raise podset.FlavorNotFound(f'resourceflavors.kueue.x-k8s.io "{flavor}" not found')
        info.node_selector.update(flavors[flavor].get("nodeLabels") or {})
        info.tolerations.extend(flavors[flavor].get("tolerations") or ())
        seen.add(flavor)
    out = podset.merge(podset.PodSetInfo.of_template(template), info)
    meta, spec = template.setdefault("metadata", {}), template.setdefault("spec", {})
    for target, key, value in (
        (meta, "annotations", out.annotations),
        (meta, "labels", out.labels),
        (spec, "nodeSelector", out.node_selector),
        (spec, "tolerations", out.tolerations),
        (spec, "schedulingGates", out.scheduling_gates),
    ):
        if value:
            target[key] = value
        else:
            target.pop(key, None)
    if not meta:
        template.pop("metadata")
    for res in (
        *(ctr.setdefault("resources", {}) for ctr in spec.get("initContainers") or ()),
        *(ctr.setdefault("resources", {}) for ctr in spec.get("containers") or ()),
        *((spec["resources"],) if spec.get("resources") else ()),
    ):
        limits = res.get("limits") or {}
        if limits:
            res["requests"] = {**limits, **(res.get("requests") or {})}
    return template


# == check states =====================================================================================


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_check_state(checks: list[dict[str, Any]], new: Mapping[str, Any], now: datetime) -> None:
    """`SetAdmissionCheckState`: add the check, or update its state, message, podSetUpdates and
    requeueAfterSeconds; retryCount stays. A new state takes `new`'s lastTransitionTime, `now` when it
    has none (a state copied from the Workload keeps its time, as upstream's does)."""
    for check in checks:
        if check.get("name") != new.get("name"):
            continue
        if check.get("state") != new.get("state"):
            check["state"] = new.get("state")
            check["lastTransitionTime"] = new.get("lastTransitionTime") or _stamp(now)
        for key in ("message", "podSetUpdates", "requeueAfterSeconds"):
            if new.get(key) not in (None, "", []):
                check[key] = copy.deepcopy(new[key])
            else:
                check.pop(key, None)
        return
    added = copy.deepcopy(dict(new))
    added.setdefault("lastTransitionTime", _stamp(now))
    checks.append(added)


def update_check_message(state: dict[str, Any], message: str) -> bool:
    """Set the check's message, empty included: one describing an earlier state of the request would
    mislead, and be appended to the events built from the check. True when it changed."""
    if (state.get("message") or "") == message:
        return False
    state["message"] = message
    return True


def _update_state(state: dict[str, Any], value: str) -> bool:
    if state.get("state") == value:
        return False
    state["state"] = value
    return True


def _condition(request: Obj, ctype: str) -> Obj | None:
    return next(
        (cond for cond in (request.get("status") or {}).get("conditions") or () if cond.get("type") == ctype), None
    )


def _true(request: Obj, ctype: str) -> bool:
    cond = _condition(request, ctype)
    return cond is not None and cond.get("status") == "True"


def _message(request: Obj, ctype: str) -> str:
    return str((_condition(request, ctype) or {}).get("message") or "")


def _pod_set_updates(wl: Obj, request: Obj, config: Obj) -> list[dict[str, Any]]:
    """Every pod set of the request points its pods at it; `podSetUpdates.nodeSelector` of the config
    adds node labels from the request's provisioningClassDetails (missing details are skipped)."""
    ref = {pod_template_name(o.name(request), str(ps.get("name"))): str(ps.get("name")) for ps in _pod_sets(wl)}
    spec = request.get("spec") or {}
    details = (request.get("status") or {}).get("provisioningClassDetails") or {}
    selectors = (config.get("spec") or {}).get("podSetUpdates")
    updates = []
    for ps in spec.get("podSets") or ():
        update: dict[str, Any] = {
            "name": ref.get(str((ps.get("podTemplateRef") or {}).get("name")), ""),
            "annotations": {
                REQUEST_POD_ANNOTATION: o.name(request),
                CLASS_POD_ANNOTATION: str(spec.get("provisioningClassName") or ""),
            },
        }
        if selectors is not None:
            node_selector = {
                str(sel.get("key")): str(details[sel["valueFromProvisioningClassDetail"]])
                for sel in selectors.get("nodeSelector") or ()
                if sel.get("valueFromProvisioningClassDetail") in details
            }
            if node_selector:
                update["nodeSelector"] = node_selector
        updates.append(update)
    return updates


def _is_evicted(wl: Obj) -> bool:
    return o.is_condition_true(wl, c.WorkloadCondition.EVICTED)


def _is_active(wl: Obj) -> bool:
    return (wl.get("spec") or {}).get("active", True) is not False


def _retried(state: dict[str, Any], attempt: int, base: int, cap: int) -> bool:
    """Retry with backoff, only for a request newer than the retries already counted: True then."""
    retries = int(state.get("retryCount") or 0)
    if attempt <= retries:
        return False
    state["state"] = c.CHECK_STATE_RETRY
    state["requeueAfterSeconds"] = backoff_seconds(retries, base, cap)
    return True


def _synced_state(wl: Obj, state: dict[str, Any], request: Obj, config: Obj) -> bool:
    """Move the check after its request's conditions; True when anything changed."""
    name, check = o.name(wl), str(state.get("name"))
    limit, base, cap = _retry(config)
    updated = False
    if _true(request, FAILED):
        attempt = attempt_of(request, name, check)
        if attempt <= limit:
            updated = update_check_message(state, f"Retrying after failure: {_message(request, FAILED)}") or updated
            updated = _retried(state, attempt, base, cap) or updated
        else:
            updated = True
            state.update(state=c.CHECK_STATE_REJECTED, message=_message(request, FAILED))
    elif _true(request, CAPACITY_REVOKED):
        # Rejecting deactivates the Workload: replacement pods would wait forever for the nodes the
        # autoscaler already removed.
        if _is_active(wl) and not o.is_finished(wl):
            updated = _update_state(state, c.CHECK_STATE_REJECTED) or updated
            updated = update_check_message(state, _message(request, CAPACITY_REVOKED)) or updated
    elif _true(request, BOOKING_EXPIRED):
        if not o.is_admitted(wl):
            attempt = attempt_of(request, name, check)
            if attempt <= limit:
                note = f"Retrying after booking expired: {_message(request, BOOKING_EXPIRED)}"
                updated = update_check_message(state, note) or updated
                updated = _retried(state, attempt, base, cap) or updated
            else:
                updated = True
                state.update(state=c.CHECK_STATE_REJECTED, message=_message(request, BOOKING_EXPIRED))
    elif _true(request, PROVISIONED):
        if _update_state(state, c.CHECK_STATE_READY):
            updated = True
            state["podSetUpdates"] = _pod_set_updates(wl, request, config)
            update_check_message(state, _message(request, PROVISIONED))
    elif _true(request, ACCEPTED):
        if _condition(request, PROVISIONED) is not None:  # the ETA the autoscaler gives
            updated = update_check_message(state, _message(request, PROVISIONED)) or updated
            updated = _update_state(state, c.CHECK_STATE_PENDING) or updated
    else:
        # Nothing to report until the autoscaler sets a condition; whatever the previous state left
        # (an error creating the request) no longer holds.
        updated = update_check_message(state, "") or updated
        updated = _update_state(state, c.CHECK_STATE_PENDING) or updated
    return updated


# == the plan =========================================================================================


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a Workload reconcile reads besides the Workload (from the caches)."""

    checks: Mapping[str, Obj]  # AdmissionChecks by name
    configs: Mapping[str, Obj]  # ProvisioningRequestConfigs by name
    flavors: Mapping[str, Obj]  # ResourceFlavor specs by name
    requests: Sequence[Obj]  # the ProvisioningRequests of the Workload's namespace it owns (`owned_by`)
    cleanup_on_eviction: bool = True  # gate CleanupProvisioningRequestsOnEviction
    tas: bool = True  # gate TopologyAwareScheduling


@dataclass(frozen=True, slots=True)
class Template:
    """A PodTemplate the request refers to, created when missing; `error` when it cannot be built."""

    name: str
    body: Obj | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Provision:
    """A check's request: `request` exists, or is the body to create (`create`) with its templates.
    Either way its templates are then handed from the Workload's ownership to the request's."""

    check: str
    state: Obj | None  # the check's state, for reporting a failed create on it
    request: Obj
    create: bool = False
    templates: tuple[Template, ...] = ()


@dataclass(slots=True)
class Plan:
    """In order: write `states` (then the AdmissionCheckUpdated `events`), delete the requests in
    `delete`, carry out `provision`, then fail with `error`."""

    states: dict[str, dict[str, Any]] | None = None
    events: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    provision: list[Provision] = field(default_factory=list)
    error: Exception | None = None


def active_or_last(wl: Obj, configs: Mapping[str, Obj | None], owned: Iterable[Obj]) -> dict[str, Obj]:
    """Per check, its newest request still matching its config (class and parameters), while one is
    needed at all."""
    chosen: dict[str, Obj] = {}
    owned = list(owned)
    name = o.name(wl)
    for check, config in configs.items():
        if config is None or not req_is_needed(wl, config):
            continue
        for request in owned:
            if _attempt_match(o.name(request), name, check) is None or not _synced_with(request, config):
                continue
            current = chosen.get(check)
            if current is None or attempt_of(current, name, check) < attempt_of(request, name, check):
                chosen[check] = request
    return chosen


def _synced_with(request: Obj, config: Obj) -> bool:
    spec, cspec = request.get("spec") or {}, config.get("spec") or {}
    if (spec.get("provisioningClassName") or "") != (cspec.get("provisioningClassName") or ""):
        return False
    params = spec.get("parameters") or {}
    return all(
        key in params and str(params[key]) == str(value) for key, value in (cspec.get("parameters") or {}).items()
    )


def _sync_states(
    wl: Obj, configs: Mapping[str, Obj | None], chosen: Mapping[str, Obj]
) -> tuple[dict[str, dict[str, Any]] | None, list[str]]:
    """The checks' new states and the notes of their state changes; (None, []) when nothing changes."""
    current = {str(s.get("name")): s for s in (wl.get("status") or {}).get("admissionChecks") or ()}
    states: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    updated = False
    for check, config in configs.items():
        state = copy.deepcopy(dict(current[check]))
        if config is None:
            updated = _update_state(state, c.CHECK_STATE_PENDING) or updated
            updated = update_check_message(state, CHECK_INACTIVE_MESSAGE) or updated
        elif not req_is_needed(wl, config):
            if _update_state(state, c.CHECK_STATE_READY):
                updated = True
                state["message"] = NO_REQUEST_NEEDED
                state.pop("podSetUpdates", None)
        else:
            request = chosen.get(check)
            if request is None:
                return None, []  # its request is yet to be created: no check changes this time
            updated = _synced_state(wl, state, request, config) or updated
        old = current[check].get("state")
        if old != state.get("state"):
            note = f"Admission check {check} updated state from {old} to {state.get('state')}"
            notes.append(note + (f" with message: {state['message']}" if state.get("message") else ""))
        states[check] = state
    return (states, notes) if updated else (None, [])


def _controller_ref(owner: Obj, api_version: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": o.name(owner),
        "uid": o.uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _new_request(
    wl: Obj, check: str, attempt: int, config: Obj, flavors: Mapping[str, Obj], *, tas: bool
) -> tuple[dict[str, Any], tuple[Template, ...]]:
    """The request to create for attempt `attempt`, and its PodTemplates; raises
    InconsistentPodSetAssignments."""
    cspec = config.get("spec") or {}
    name, namespace = request_name(o.name(wl), check, attempt), o.namespace(wl)
    parameters = {str(k): str(v) for k, v in (cspec.get("parameters") or {}).items()}
    for key, value in o.annotations(wl).items():
        if key.startswith(c.PROVREQ_ANNOTATION_PREFIX):
            parameters[key.removeprefix(c.PROVREQ_ANNOTATION_PREFIX)] = value
    owner = _controller_ref(wl, c.V1BETA2, "Workload")
    managed = {c.MANAGED_LABEL: "true"}
    templates: list[Template] = []
    pod_sets: list[dict[str, Any]] = []
    for merged in merge_pod_sets(wl, cspec):
        pt_name = pod_template_name(name, merged.name)
        try:
            body: Obj | None = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": pt_name, "namespace": namespace, "labels": managed, "ownerReferences": [owner]},
                "template": _template(wl, merged, flavors, tas=tas),
            }
            error = ""
        except (podset.FlavorNotFound, podset.PermanentError) as exc:
            body, error = None, str(exc)
        templates.append(Template(pt_name, body, error))
        pod_sets.append({"podTemplateRef": {"name": pt_name}, "count": merged.count})
    spec: dict[str, Any] = {"provisioningClassName": str(cspec.get("provisioningClassName") or "")}
    if parameters:
        spec["parameters"] = parameters
    spec["podSets"] = pod_sets
    request = {
        "apiVersion": AUTOSCALING_V1,
        "kind": "ProvisioningRequest",
        "metadata": {"name": name, "namespace": namespace, "labels": managed, "ownerReferences": [owner]},
        "spec": spec,
    }
    return request, tuple(templates)


def _provisions(
    wl: Obj,
    configs: Mapping[str, Obj | None],
    chosen: Mapping[str, Obj],
    states: Mapping[str, Obj],
    inputs: Inputs,
    plan: Plan,
) -> None:
    """`syncOwnedProvisionRequest`: per check needing capacity and not Ready, its request, a new
    attempt after a failure (or an expired booking before admission) the check still waits on."""
    for check, config in configs.items():
        if config is None or not req_is_needed(wl, config):
            continue
        state = states.get(check)
        if state is not None and state.get("state") == c.CHECK_STATE_READY:
            continue
        request = chosen.get(check)
        # A request deleted by a cleanup leaves its retries counted on the check: they name the next one.
        attempt = int(state.get("retryCount") or 0) + 1 if state is not None else 1
        create = request is None
        if (
            request is not None
            and (_true(request, FAILED) or (_true(request, BOOKING_EXPIRED) and not o.is_admitted(wl)))
            and state is not None
            and state.get("state") == c.CHECK_STATE_PENDING
        ):
            attempt, create = attempt_of(request, o.name(wl), check) + 1, True
        if not create:
            assert request is not None
            plan.provision.append(Provision(check, state, request))
            continue
        try:
            body, templates = _new_request(wl, check, attempt, config, inputs.flavors, tas=inputs.tas)
        except InconsistentPodSetAssignments as exc:
            plan.error = exc
            return
        plan.provision.append(Provision(check, state, body, create=True, templates=templates))


def plan(wl: Obj, inputs: Inputs) -> Plan:
    """What one reconcile of the Workload does. Raises BadParametersRef (a check of this controller
    with parameters that cannot name a config) and InconsistentPodSetAssignments before any write."""
    finished, evicted = o.is_finished(wl), _is_evicted(wl)
    if not o.has_quota_reservation(wl) and not finished and not evicted:
        return Plan()
    owned = [r for r in inputs.requests if owned_by(r, o.name(wl))]
    if finished or (evicted and inputs.cleanup_on_eviction):
        return Plan(delete=[o.name(r) for r in owned])
    if evicted:
        return Plan()
    configs: dict[str, Obj | None] = {}
    for state in (wl.get("status") or {}).get("admissionChecks") or ():
        ac = inputs.checks.get(str(state.get("name")))
        if ac is None or (ac.get("spec") or {}).get("controllerName") != CONTROLLER_NAME:
            continue
        try:
            configs[o.name(ac)] = config_from_ref((ac.get("spec") or {}).get("parameters"), inputs.configs)
        except ConfigNotFound:
            configs[o.name(ac)] = None
    chosen = active_or_last(wl, configs, owned)
    states, events = _sync_states(wl, configs, chosen)
    after = {str(s.get("name")): dict(s) for s in (wl.get("status") or {}).get("admissionChecks") or ()}
    after.update(states or {})
    keep = {o.name(r) for r in chosen.values()}
    out = Plan(states=states, events=events, delete=[o.name(r) for r in owned if o.name(r) not in keep])
    _provisions(wl, configs, chosen, after, inputs, out)
    return out
