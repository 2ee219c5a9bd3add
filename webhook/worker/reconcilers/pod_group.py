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

Deliberate differences from upstream: starting a group is all-or-nothing (upstream patches pods in
parallel and may ungate some before hitting a conflict); map iteration (flavor assignments,
conflict detection) is sorted so the output is deterministic.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from webhook.api import constants as c
from webhook.api import fields
from webhook.api.pod_role import role_hash
from webhook.worker.reconcilers import actions as a

if TYPE_CHECKING:
    from webhook.config import Configuration

__all__ = [
    "Lookups",
    "Options",
    "StopReason",
    "construct_pod_workload",
    "group_name",
    "reconcile_group",
    "reconcile_pod",
    "workload_name",
    "workload_name_for_pod",
]

Obj = Mapping[str, Any]
POD_API = "v1"
WORKLOAD_API = c.V1BETA2
MAX_POD_SETS = 18
DEFAULT_POD_SET = "main"
TERMINATION_TARGET = "TerminationTarget"
_EVENT_LIMIT = 1024
_CONDITION_LIMIT = 32 * 1024
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)

# TODO: move these strings to webhook/api/constants.py (being edited concurrently; kept here meanwhile).
FAST_ADMISSION = "kueue.x-k8s.io/pod-group-fast-admission"
PREBUILT_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/prebuilt-workload-name"
PROVREQ_PREFIX = "provreq.kueue.x-k8s.io/"
UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
PODSET_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"


class Reason(StrEnum):
    """Event reasons (`pkg/controller/jobframework/events.go`, `pod_controller.go`)."""

    CREATED_WORKLOAD = "CreatedWorkload"
    DELETED_WORKLOAD = "DeletedWorkload"
    UPDATED_WORKLOAD = "UpdatedWorkload"
    STARTED = "Started"
    STOPPED = "Stopped"
    FINISHED_WORKLOAD = "FinishedWorkload"
    UPDATED_ADMISSION_CHECK = "UpdatedAdmissionCheck"
    ERR_WORKLOAD_COMPOSE = "ErrWorkloadCompose"
    EXCESS_POD_DELETED = "ExcessPodDeleted"
    OWNER_REFERENCES_ADDED = "OwnerReferencesAdded"
    WORKLOAD_NAME_CONFLICT = "WorkloadNameConflict"
    WORKLOAD_PRIORITY_CLASS_NOT_FOUND = "WorkloadPriorityClassNotFound"


class FinishedReason(StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    OWNER_NOT_FOUND = "OwnerNotFound"
    FAILED_TO_START = "FailedToStart"


class StopReason(StrEnum):
    """`pkg/controller/jobframework/stop_reason.go`; eviction adds `DueTo<EvictedReason>`."""

    WORKLOAD_DELETED = "WorkloadDeleted"
    WORKLOAD_EVICTED = "WorkloadEvicted"
    NO_MATCHING_WORKLOAD = "NoMatchingWorkload"
    NOT_ADMITTED = "NotAdmitted"


WAITING_FOR_REPLACEMENT_PODS = "WaitingForReplacementPods"
PODS_FAILED = "PodsFailed"
MSG_OWNER_NOT_FOUND = "The workload's owner no longer exists"
MSG_NEED_REPLACEMENT = "Some Failed pods need replacement"
MSG_NO_REPLACEMENT = "No pods need replacement"
MSG_WORKLOAD_DELETED = "Workload is deleted"
MSG_NOT_ADMITTED = "Not admitted by cluster queue"
MSG_MISSING_WORKLOAD = "Missing Workload; unable to restore pod templates"
MSG_NO_MATCHING_WORKLOAD = "No matching Workload; restoring pod templates according to existent Workload"
MSG_TOO_MANY_ROLES = f"pod group can't include more than {MAX_POD_SETS} roles"
MSG_LABELS_MISMATCH = "constructing workload: pods have different label values"
MSG_PENDING_OPS = "waiting to observe previous operations on pods"
MSG_NOT_GROUP_WORKLOAD = "a workload with the pod group name already exists but was not created by the pod group framework"


# --- inputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    """Configuration and feature gates that change pod reconciliation (defaults = upstream's)."""

    label_keys_to_copy: frozenset[str] = frozenset()
    manage_jobs_without_queue_name: bool = False
    implicitly_enabled: bool = False
    wait_for_pods_ready: bool = True
    tas: bool = True
    workload_identifier_annotations: bool = True
    validate_group_owner: bool = True
    finish_orphaned_workloads: bool = True
    assign_queue_labels: bool = True
    admission_gated_by: bool = True
    reclaimable_pods: bool = True
    skip_reassignment_for_pod_owned: bool = True
    short_workload_names: bool = False

    @classmethod
    def from_config(cls, cfg: Configuration) -> Options:
        frameworks = set(cfg.integrations.frameworks)
        parents = {"deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"}
        return cls(
            label_keys_to_copy=frozenset(cfg.integrations.label_keys_to_copy),
            manage_jobs_without_queue_name=cfg.manage_jobs_without_queue_name,
            implicitly_enabled="pod" not in frameworks and bool(frameworks & parents),
            wait_for_pods_ready=cfg.wait_for_pods_ready_enabled,
            tas=cfg.feature_enabled("TopologyAwareScheduling"),
            workload_identifier_annotations=cfg.feature_enabled("WorkloadIdentifierAnnotations"),
            validate_group_owner=cfg.feature_enabled("PodIntegrationValidateGroupOwner"),
            finish_orphaned_workloads=cfg.feature_enabled("FinishOrphanedWorkloads"),
            assign_queue_labels=cfg.feature_enabled("AssignQueueLabelsForPods"),
            admission_gated_by=cfg.feature_enabled("AdmissionGatedBy"),
            reclaimable_pods=cfg.feature_enabled("ReclaimablePods"),
            skip_reassignment_for_pod_owned=cfg.feature_enabled("SkipReassignmentForPodOwnedWorkloads"),
            short_workload_names=cfg.feature_enabled("ShortWorkloadNames"),
        )


@dataclass(frozen=True, slots=True)
class Lookups:
    """Cluster-scoped objects read from the worker's caches.

    `resource_flavors`: flavor name → ResourceFlavor `spec`. `workload_priority_classes`: name →
    value. `priority_classes`: name → (value, globalDefault).
    """

    resource_flavors: Mapping[str, Obj] = field(default_factory=dict)
    workload_priority_classes: Mapping[str, int] = field(default_factory=dict)
    priority_classes: Mapping[str, tuple[int, bool]] = field(default_factory=dict)


class _Retry(Exception):
    """A retryable failure: logged, and the key is re-queued."""


class _Unretryable(Exception):
    """Upstream's `UnretryableError`: logged, never retried."""


class _Permanent(Exception):
    """`podset.IsPermanent`: the admission cannot be applied; the Workload fails to start."""


# --- pod accessors --------------------------------------------------------------------------------


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _labels(obj: Obj) -> Mapping[str, str]:
    return _meta(obj).get("labels") or {}


def _annotations(obj: Obj) -> Mapping[str, str]:
    return _meta(obj).get("annotations") or {}


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name") or "")


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _is_terminated(pod: Obj) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


def _has_gate(pod: Obj, gate: str) -> bool:
    return any(g.get("name") == gate for g in (pod.get("spec") or {}).get("schedulingGates") or ())


def _is_gated(pod: Obj) -> bool:
    return _has_gate(pod, c.ADMISSION_GATE)


def _is_suspended(pod: Obj) -> bool:
    return _is_terminated(pod) or _is_gated(pod)


def _deleting(obj: Obj) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def _has_finalizer(obj: Obj, finalizer: str = c.POD_FINALIZER) -> bool:
    return finalizer in (_meta(obj).get("finalizers") or ())


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(value) if value else _EPOCH


def _rfc3339(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ref(pod: Obj) -> a.ObjectRef:
    return a.ObjectRef.of(pod, api_version=POD_API, kind="Pod")


def _wl_ref(wl: Obj) -> a.ObjectRef:
    return a.ObjectRef.of(wl, api_version=WORKLOAD_API, kind="Workload")


def _go_atoi(text: str) -> int:
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def group_name(pod: Obj, opts: Options) -> str:
    """`utilpod.GetPodGroupName`: the annotation wins when WorkloadIdentifierAnnotations is on."""
    if opts.workload_identifier_annotations and _annotations(pod).get(c.POD_GROUP_NAME):
        return _annotations(pod)[c.POD_GROUP_NAME]
    return _labels(pod).get(c.POD_GROUP_NAME, "")


def _total_count(pod: Obj) -> int:
    text = _annotations(pod).get(c.POD_GROUP_TOTAL_COUNT)
    if text is None:
        raise _Retry(f"failed to extract '{c.POD_GROUP_TOTAL_COUNT}' annotation")
    try:
        total = _go_atoi(text)
    except ValueError as exc:
        raise _Retry(str(exc)) from exc
    if total < 1:
        raise _Retry(f"incorrect annotation value '{c.POD_GROUP_TOTAL_COUNT}={text}': group total count should be greater than zero")
    return total


def _pod_role(pod: Obj) -> str:
    """`getRoleHash`: the annotation verbatim when present, else computed from the spec."""
    return _annotations(pod).get(c.ROLE_HASH_ANNOTATION) or role_hash(pod)


def _max_exec_seconds(pod: Obj) -> int | None:
    text = _labels(pod).get(c.MAX_EXEC_TIME_LABEL)
    try:
        value = _go_atoi(text) if text is not None else 0
    except ValueError:
        return None
    return value if 0 < value < 2**31 else None


def _is_runnable_or_succeeded(pod: Obj) -> bool:
    """Active: not Failed, and not deleted before being scheduled."""
    if _deleting(pod) and not (pod.get("spec") or {}).get("nodeName"):
        return False
    return _phase(pod) != "Failed"


def _event(obj: Obj, reason: Reason, message: str, *, warning: bool = False, action: str = "") -> a.Event:
    kind = a.EventType.WARNING if warning else a.EventType.NORMAL
    return a.Event(kind, reason, message[:_EVENT_LIMIT], _ref(obj), action or reason)


def _remove_finalizers(pods: Sequence[Obj]) -> list[a.Action]:
    return [a.RemoveFinalizer(_ref(p)) for p in pods if _has_finalizer(p)]


# --- workload accessors ---------------------------------------------------------------------------


def _condition(wl: Obj, ctype: str) -> Obj | None:
    for cond in (wl.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return cond  # type: ignore[no-any-return]
    return None


def _is_true(wl: Obj, ctype: str) -> bool:
    cond = _condition(wl, ctype)
    return cond is not None and cond.get("status") == "True"


def _is_finished(wl: Obj) -> bool:
    return _is_true(wl, c.WorkloadCondition.FINISHED)


def _is_admitted(wl: Obj) -> bool:
    return _is_true(wl, c.WorkloadCondition.ADMITTED)


def _has_quota_reservation(wl: Obj) -> bool:
    return _is_true(wl, c.WorkloadCondition.QUOTA_RESERVED)


def _controller_of(wl: Obj) -> Obj | None:
    for ref in _meta(wl).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def _cond(ctype: str, status: str, reason: str, message: str, *, now: datetime, wl: Obj) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message[:_CONDITION_LIMIT],
        "lastTransitionTime": _rfc3339(now),
    }
    if _meta(wl).get("generation") is not None:
        out["observedGeneration"] = _meta(wl)["generation"]
    return out


def _finish(wl: Obj, reason: str, message: str, now: datetime) -> list[a.Action]:
    """`workloadfinish.Finish`: no-op on an already finished Workload."""
    if _is_finished(wl):
        return []
    cond = _cond(c.WorkloadCondition.FINISHED, "True", reason, message, now=now, wl=wl)
    return [a.UpdateWorkloadStatus(_wl_ref(wl), (cond,), field_manager="kueue-admission")]


def _finished_event(pod: Obj, wl: Obj) -> a.Event:
    return _event(pod, Reason.FINISHED_WORKLOAD, f"Workload '{_meta(wl).get('namespace')}/{_name(wl)}' is declared finished")


def _remove_wl_finalizer(wl: Obj) -> list[a.Action]:
    return [a.RemoveWorkloadFinalizer(_wl_ref(wl))] if _has_finalizer(wl, c.RESOURCE_IN_USE_FINALIZER) else []


def _finalize_orphan(wl: Obj, opts: Options, now: datetime) -> list[a.Action]:
    """`workload.FinalizeOrphanedWorkload`: finish it when it had a controller, drop the finalizer."""
    out: list[a.Action] = []
    if opts.finish_orphaned_workloads and not _deleting(wl) and _controller_of(wl) is not None:
        out += _finish(wl, FinishedReason.OWNER_NOT_FOUND, MSG_OWNER_NOT_FOUND, now)
    return out + _remove_wl_finalizer(wl)


# --- naming ---------------------------------------------------------------------------------------


def workload_name(owner_name: str, owner_uid: str, *, kind: str, group: str = "", extra: str = "", short: bool = False) -> str:
    """`GenerateWorkloadNameWithExtra`: `<kind>-<owner>` cut to fit, then 5 hex of a SHA-1."""
    prefix = f"{kind.lower()}-{owner_name}"[: (63 if short else 253) - 6]
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode())
    if extra:
        digest.update(f"\n{extra}".encode())
    return f"{prefix}-{digest.hexdigest()[:5]}"


def workload_name_for_pod(pod_name: str, pod_uid: str, *, short: bool = False) -> str:
    return workload_name(pod_name, pod_uid, kind="Pod", short=short)


# --- podSets and Workload construction ------------------------------------------------------------


def _sanitize_env(spec: dict[str, Any]) -> None:
    """`SanitizePodSet`: one env var per name, at its first position, with its last value."""
    for key in ("containers", "initContainers"):
        for ctr in spec.get(key) or ():
            if not ctr.get("env"):
                continue
            merged: dict[str, Any] = {}
            for var in ctr["env"]:
                merged[var.get("name")] = var
            ctr["env"] = list(merged.values())


def _topology_request(pod: Obj, opts: Options) -> dict[str, Any] | None:
    """`NewPodSetTopologyRequest(meta).PodIndexLabel(pod-group-pod-index)`."""
    if not opts.tas:
        return None
    ann = _annotations(pod)
    req: dict[str, Any] = {}
    if REQUIRED_TOPOLOGY in ann:
        req["required"] = ann[REQUIRED_TOPOLOGY]
    elif PREFERRED_TOPOLOGY in ann:
        req["preferred"] = ann[PREFERRED_TOPOLOGY]
    elif UNCONSTRAINED_TOPOLOGY in ann:
        text = ann[UNCONSTRAINED_TOPOLOGY]
        if text not in ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"):
            raise _Retry(f'strconv.ParseBool: parsing "{text}": invalid syntax')
        req["unconstrained"] = text in ("1", "t", "T", "TRUE", "true", "True")
    if SLICE_REQUIRED_TOPOLOGY in ann and SLICE_SIZE in ann:
        try:
            size = _go_atoi(ann[SLICE_SIZE])
        except ValueError as exc:
            raise _Retry(str(exc).replace("Atoi", "ParseInt")) from exc
        req["podSetSliceRequiredTopology"] = ann[SLICE_REQUIRED_TOPOLOGY]
        req["podSetSliceSize"] = size
    req["podIndexLabel"] = c.POD_GROUP_POD_INDEX_LABEL
    if PODSET_GROUP_NAME in ann and ("required" in req or "preferred" in req):
        req["podSetGroupName"] = ann[PODSET_GROUP_NAME]
    return req


def _pod_set(pod: Obj, opts: Options, *, name: str = DEFAULT_POD_SET, count: int = 1) -> dict[str, Any]:
    """`constructPodSet`: the pod's spec only (no metadata), sanitized env."""
    spec = copy.deepcopy(dict(pod.get("spec") or {}))
    _sanitize_env(spec)
    ps: dict[str, Any] = {"name": name, "count": count, "template": {"metadata": {}, "spec": spec}}
    topology = _topology_request(pod, opts)
    if topology is not None:
        ps["topologyRequest"] = topology
    return ps


def _group_pod_sets(pods: Sequence[Obj], opts: Options) -> list[dict[str, Any]]:
    """`constructGroupPodSets`: one podSet per role among active pods, sorted by name."""
    by_role: dict[str, dict[str, Any]] = {}
    for pod in pods:
        if not _is_runnable_or_succeeded(pod):
            continue
        role = _pod_role(pod)
        if role in by_role:
            by_role[role]["count"] += 1
        else:
            by_role[role] = _pod_set(pod, opts, name=role.lower())
    return [by_role[role] for role in sorted(by_role, key=lambda r: r.lower())]


def _fast_pod_sets(pods: Sequence[Obj], total: int, opts: Options) -> list[dict[str, Any]]:
    for pod in pods:
        if _is_runnable_or_succeeded(pod):
            return [_pod_set(pod, opts, name=_pod_role(pod).lower(), count=total)]
    raise _Retry("failed to find a runnable pod in the group")


def _priority(pod: Obj, pod_sets: Sequence[Obj], lookups: Lookups) -> tuple[dict[str, str] | None, int]:
    """`ExtractPriority`: WorkloadPriorityClass label, else the template's PriorityClass, else the default."""
    wpc = _labels(pod).get(c.PRIORITY_CLASS_LABEL, "")
    if wpc:
        if wpc not in lookups.workload_priority_classes:
            event = _event(pod, Reason.WORKLOAD_PRIORITY_CLASS_NOT_FOUND, f'WorkloadPriorityClass "{wpc}" not found', warning=True)
            raise _RetryWith(f'workloadpriorityclasses.kueue.x-k8s.io "{wpc}" not found', [event])
        return {"group": c.GROUP, "kind": "WorkloadPriorityClass", "name": wpc}, lookups.workload_priority_classes[wpc]
    pc = next((ps["template"]["spec"].get("priorityClassName") for ps in pod_sets if ps["template"]["spec"].get("priorityClassName")), "")
    if pc:
        if pc not in lookups.priority_classes:
            raise _Retry(f'priorityclasses.scheduling.k8s.io "{pc}" not found')
        return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pc}, lookups.priority_classes[pc][0]
    defaults = sorted((value, name) for name, (value, is_default) in lookups.priority_classes.items() if is_default)
    if defaults:
        value, name = defaults[0]
        return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}, value
    return None, 0


class _RetryWith(_Retry):
    def __init__(self, message: str, actions: list[a.Action]) -> None:
        super().__init__(message)
        self.actions = actions


def _new_workload(name: str, pod: Obj, pod_sets: list[dict[str, Any]], opts: Options, lookups: Lookups) -> dict[str, Any]:
    """`NewWorkload` + `prepareWorkload`: metadata from the (first) pod, priority resolved."""
    annotations = {k: v for k, v in _annotations(pod).items() if k.startswith(PROVREQ_PREFIX)}
    if opts.admission_gated_by and _annotations(pod).get(c.ADMISSION_GATED_BY):
        annotations[c.ADMISSION_GATED_BY] = _annotations(pod)[c.ADMISSION_GATED_BY]
    spec: dict[str, Any] = {"podSets": pod_sets}
    queue = _labels(pod).get(c.QUEUE_LABEL, "")
    if queue:
        spec["queueName"] = queue
    max_exec = _max_exec_seconds(pod)
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
    ref, priority = _priority(pod, pod_sets, lookups)
    if ref is not None:
        spec["priorityClassRef"] = ref
    spec["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": _meta(pod).get("namespace", ""), "finalizers": [c.RESOURCE_IN_USE_FINALIZER]}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": WORKLOAD_API, "kind": "Workload", "metadata": meta, "spec": spec}


def construct_pod_workload(pod: Obj, opts: Options, lookups: Lookups) -> dict[str, Any]:
    """`ConstructWorkload` for a single pod: `pod-<name>-<hash5>`, controller ownerRef, job-uid."""
    uid = str(_meta(pod).get("uid") or "")
    wl = _new_workload(workload_name_for_pod(_name(pod), uid, short=opts.short_workload_names), pod, [_pod_set(pod, opts)], opts, lookups)
    labels = {k: v for k, v in _labels(pod).items() if k in opts.label_keys_to_copy}
    if not fields.is_label_value(uid):
        labels[c.JOB_UID_LABEL] = uid
    if labels:
        wl["metadata"]["labels"] = labels
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": POD_API, "kind": "Pod", "name": _name(pod), "uid": uid, "controller": True, "blockOwnerDeletion": True}
    ]
    return wl


def _owner_ref(pod: Obj) -> dict[str, Any]:
    return {"apiVersion": POD_API, "kind": "Pod", "name": _name(pod), "uid": _meta(pod).get("uid", "")}


def _with_owners(refs: Sequence[Obj], pods: Sequence[Obj]) -> list[dict[str, Any]]:
    """`controllerutil.SetOwnerReference` per pod: upsert by kind and name, never as controller."""
    out = [dict(r) for r in refs]
    for pod in pods:
        new = _owner_ref(pod)
        for i, ref in enumerate(out):
            if ref.get("kind") == "Pod" and ref.get("apiVersion", "").split("/")[0] in ("v1", "") and ref.get("name") == new["name"]:
                out[i] = {**ref, **new}
                break
        else:
            out.append(new)
    return out


# --- single-pod equivalence -----------------------------------------------------------------------


def _semantic(value: Any) -> Any:
    """Drop nulls and empty collections, as `equality.Semantic.DeepEqual` treats nil == empty."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [], "", False, 0)}
    if isinstance(value, list | tuple):
        return [_semantic(v) for v in value]
    return value


def _same_pod_sets(job: Sequence[Obj], wl: Sequence[Obj], *, ignore_tolerations: bool) -> bool:
    """`equality.ComparePodSetSlices`: count, minCount, containers, initContainers, tolerations."""
    if len(job) != len(wl):
        return False
    for x, y in zip(job, wl, strict=True):
        if x.get("count", 1) != y.get("count", 1) or x.get("minCount", -1) != y.get("minCount", -1):
            return False
        xs, ys = x["template"].get("spec") or {}, y["template"].get("spec") or {}
        keys = ("containers", "initContainers") if ignore_tolerations else ("containers", "initContainers", "tolerations")
        if any(_semantic(xs.get(k)) != _semantic(ys.get(k)) for k in keys):
            return False
    return True


def _running_pod_sets(wl: Obj, lookups: Lookups, opts: Options) -> list[dict[str, Any]] | None:
    """`expectedRunningPodSets`: the spec with the admission merged in, or None."""
    if not _has_quota_reservation(wl):
        return None
    try:
        infos = {info.name: info for info in _pod_set_infos(wl, lookups, opts)}
    except (_Retry, _Permanent):
        return None
    out = copy.deepcopy(list((wl.get("spec") or {}).get("podSets") or ()))
    for ps in out:
        info = infos.get(ps.get("name", ""))
        if info is None:
            return None
        spec = ps["template"].setdefault("spec", {})
        try:
            merged = _merge(_PodSetInfo.of_template(ps["template"]), info)
        except _Permanent:
            return None
        spec["tolerations"] = merged.tolerations
    return out


def _equivalent_single(pod: Obj, wl: Obj, opts: Options, lookups: Lookups) -> bool:
    owner = _controller_of(wl) or {}
    if owner.get("name") != _name(pod):
        return False
    if opts.finish_orphaned_workloads and owner.get("uid") != _meta(pod).get("uid"):
        return False
    if (wl.get("spec") or {}).get("maximumExecutionTimeSeconds") != _max_exec_seconds(pod):
        return False
    job = [_pod_set(pod, opts)]
    ignore = _is_admitted(wl)
    running = _running_pod_sets(wl, lookups, opts)
    wl_sets = (wl.get("spec") or {}).get("podSets") or []
    if running is not None:
        if _same_pod_sets(job, running, ignore_tolerations=ignore):
            return True
        return _is_suspended(pod) and _same_pod_sets(job, wl_sets, ignore_tolerations=ignore)
    return _same_pod_sets(job, wl_sets, ignore_tolerations=ignore)


# --- start: podSet infos and the per-pod patch ----------------------------------------------------


@dataclass(slots=True)
class _PodSetInfo:
    name: str = ""
    count: int = 0
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    scheduling_gates: list[Obj] = field(default_factory=list)

    @classmethod
    def of_template(cls, template: Obj) -> _PodSetInfo:
        spec = template.get("spec") or {}
        return cls(
            annotations=dict(_annotations(template)),
            labels=dict(_labels(template)),
            node_selector=dict(spec.get("nodeSelector") or {}),
            tolerations=list(spec.get("tolerations") or ()),
            scheduling_gates=list(spec.get("schedulingGates") or ()),
        )


def _conflict(base: Mapping[str, str], new: Mapping[str, str], what: str) -> None:
    for key in sorted(base):
        if key in new and base[key] != new[key]:
            raise _Permanent(
                f"invalid admission check PodSetUpdate: conflict for {what}: conflict for key={key}, value1={base[key]}, value2={new[key]}"
            )


def _same_toleration(x: Obj, y: Obj) -> bool:
    """`tolerations.Equal`: key, effect, value and operator (empty operator = Equal)."""
    return all(x.get(k, "") == y.get(k, "") for k in ("key", "effect", "value")) and (x.get("operator") or "Equal") == (
        y.get("operator") or "Equal"
    )


def _merge(base: _PodSetInfo, new: _PodSetInfo) -> _PodSetInfo:
    """`PodSetInfo.Merge`: maps must not disagree; tolerations and gates are appended once."""
    _conflict(base.annotations, new.annotations, "annotations")
    _conflict(base.labels, new.labels, "labels")
    _conflict(base.node_selector, new.node_selector, "nodeSelector")
    out = _PodSetInfo(
        base.name,
        base.count,
        {**base.annotations, **new.annotations},
        {**base.labels, **new.labels},
        {**base.node_selector, **new.node_selector},
        list(base.tolerations),
        list(base.scheduling_gates),
    )
    for tol in new.tolerations:
        if not any(_same_toleration(t, tol) for t in out.tolerations):
            out.tolerations.append(tol)
    for gate in new.scheduling_gates:
        if gate not in out.scheduling_gates:
            out.scheduling_gates.append(gate)
    return out


def _pod_set_infos(wl: Obj, lookups: Lookups, opts: Options) -> list[_PodSetInfo]:
    """`getPodSetsInfoFromStatus`: flavors, queue labels, TAS annotation, admission-check updates."""
    status = wl.get("status") or {}
    assignments = (status.get("admission") or {}).get("podSetAssignments") or []
    pod_sets = (wl.get("spec") or {}).get("podSets") or []
    infos = []
    for i, psa in enumerate(assignments):
        ps = pod_sets[i] if i < len(pod_sets) else {}
        info = _PodSetInfo(name=psa.get("name", ""), count=psa.get("count", ps.get("count", 1)))
        if opts.tas and psa.get("topologyAssignment") is not None:
            req = ps.get("topologyRequest") or {}
            if not any(k in req for k in ("required", "preferred", "unconstrained")):
                info.annotations[UNCONSTRAINED_TOPOLOGY] = "true"
            info.scheduling_gates.append({"name": c.TOPOLOGY_GATE})
        seen: set[str] = set()
        for _, flavor in sorted((psa.get("flavors") or {}).items()):
            if flavor in seen:
                continue
            if flavor not in lookups.resource_flavors:
                raise _Retry(f'resourceflavors.kueue.x-k8s.io "{flavor}" not found')
            rf = lookups.resource_flavors[flavor]
            info.node_selector.update(rf.get("nodeLabels") or {})
            info.tolerations.extend(rf.get("tolerations") or ())
            seen.add(flavor)
        if opts.tas:
            info.annotations[c.WORKLOAD_ANNOTATION] = _name(wl)
        info.labels[c.PODSET_LABEL] = info.name
        if opts.assign_queue_labels:
            info.labels[c.LOCAL_QUEUE_NAME_LABEL] = (wl.get("spec") or {}).get("queueName", "")
            cq = (status.get("admission") or {}).get("clusterQueue", "")
            if not fields.is_dns1123_label(cq):
                info.labels[c.CLUSTER_QUEUE_NAME_LABEL] = cq
        for check in status.get("admissionChecks") or ():
            for update in check.get("podSetUpdates") or ():
                if update.get("name") == info.name:
                    new = _PodSetInfo(
                        annotations=dict(update.get("annotations") or {}),
                        labels=dict(update.get("labels") or {}),
                        node_selector=dict(update.get("nodeSelector") or {}),
                        tolerations=list(update.get("tolerations") or ()),
                    )
                    try:
                        info = _merge(info, new)
                    except _Permanent as exc:
                        raise _Permanent(f'in admission check "{check.get("name")}": {exc}') from exc
                    break
        infos.append(info)
    return infos


def _start_patch(pod: Obj, info: _PodSetInfo) -> a.PatchPod:
    """`prepare`: merge the podSet info into the pod, then lift the admission (and topology) gate."""
    spec = pod.get("spec") or {}
    base = _PodSetInfo.of_template(pod)
    merged = _merge(base, info)
    gates = [g for g in merged.scheduling_gates if g.get("name") != c.ADMISSION_GATE]
    if {"name": c.TOPOLOGY_GATE} not in info.scheduling_gates:
        gates = [g for g in gates if g.get("name") != c.TOPOLOGY_GATE]
    meta: dict[str, Any] = {}
    for key, old, new in (("labels", base.labels, merged.labels), ("annotations", base.annotations, merged.annotations)):
        added = {k: v for k, v in new.items() if old.get(k) != v}
        if added:
            meta[key] = added
    spec_patch: dict[str, Any] = {}
    selector = {k: v for k, v in merged.node_selector.items() if base.node_selector.get(k) != v}
    if selector:
        spec_patch["nodeSelector"] = selector
    if merged.tolerations != list(spec.get("tolerations") or ()):
        spec_patch["tolerations"] = merged.tolerations
    if gates != list(spec.get("schedulingGates") or ()):
        spec_patch["schedulingGates"] = gates
    patch: dict[str, Any] = {}
    if meta:
        patch["metadata"] = meta
    if spec_patch:
        patch["spec"] = spec_patch
    return a.PatchPod(_ref(pod), patch)


def _start(pods: Sequence[Obj], wl: Obj, *, is_group: bool, opts: Options, lookups: Lookups, now: datetime) -> a.Decision:
    """`startJob` + `Pod.Run`: one patch and one `Started` event per gated pod."""
    message = f"Admitted by clusterQueue {((wl.get('status') or {}).get('admission') or {}).get('clusterQueue', '')}"
    try:
        infos = _pod_set_infos(wl, lookups, opts)
        if not is_group and len(infos) != 1:
            raise _Permanent(f"invalid podset infos: expecting 1 pod set got {len(infos)}")
        out: list[a.Action] = []
        for pod in pods:
            if not _is_gated(pod):
                continue
            if is_group:
                role = _pod_role(pod)
                info = next((i for i in infos if i.name == role), None)
                if info is None:
                    raise _Permanent(f"invalid podset infos: podSetInfo with the name '{role}' is not found")
            else:
                info = infos[0]
            out += [_start_patch(pod, info), _event(pod, Reason.STARTED, message)]
    except _Permanent as exc:
        return a.Decision(tuple(_finish(wl, FinishedReason.FAILED_TO_START, str(exc), now)), str(exc))
    except _Retry as exc:
        return a.Decision((), str(exc), retry=True)
    return a.Decision(tuple(out))


# --- stop -----------------------------------------------------------------------------------------


def _stop(pods: Sequence[Obj], *, reason: str, message: str, now: datetime, finalize: Sequence[Obj] = ()) -> list[a.Action]:
    """`Pod.Stop`: mark each live pod TerminationTarget, delete it, and report `Stopped` on it."""
    out: list[a.Action] = []
    for pod in pods:
        if _deleting(pod) or (reason != StopReason.WORKLOAD_DELETED and _is_suspended(pod)):
            continue
        cond = {"type": TERMINATION_TARGET, "status": "True", "lastTransitionTime": _rfc3339(now), "reason": reason, "message": message}
        out += [a.SetPodCondition(_ref(pod), cond), a.DeletePod(_ref(pod)), _event(pod, Reason.STOPPED, message)]
    return out + _remove_finalizers(finalize)


def _eviction_reason(wl: Obj | None) -> str:
    cond = _condition(wl, c.WorkloadCondition.EVICTED) if wl is not None else None
    if cond is not None and cond.get("status") == "True":
        return f"{StopReason.WORKLOAD_EVICTED}DueTo{cond.get('reason', '')}"
    return StopReason.WORKLOAD_EVICTED


# --- pod groups -----------------------------------------------------------------------------------


def _last_active(pod: Obj, now: datetime) -> datetime:
    """`lastActiveTime`: when the pod was declared Failed, or its deletion time, whichever is first."""
    transition = now
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "ContainersReady":
            if cond.get("status") == "False" and cond.get("reason") == "PodFailed":
                transition = _time(cond.get("lastTransitionTime"))
            break
    deletion = _time(_meta(pod).get("deletionTimestamp")) if _deleting(pod) else now
    return min(transition, deletion)


def _sort_active(pods: Sequence[Obj]) -> list[Obj]:
    """Kept first: 1. holding the finalizer, 2. ungated, 3. older; ties by name then uid."""
    return sorted(
        pods,
        key=lambda p: (not _has_finalizer(p), _is_gated(p), _time(_meta(p).get("creationTimestamp")), _name(p), _meta(p).get("uid", "")),
    )


def _sort_inactive(pods: Sequence[Obj], now: datetime) -> list[Obj]:
    """Kept first: 1. holding the finalizer, 2. most recently active, 3. older; ties by name then uid."""
    return sorted(
        pods,
        key=lambda p: (
            not _has_finalizer(p),
            -(_last_active(p, now) - _EPOCH).total_seconds(),
            _time(_meta(p).get("creationTimestamp")),
            _name(p),
            _meta(p).get("uid", ""),
        ),
    )


def _remove_excess(pods: Sequence[Obj]) -> list[a.Action]:
    out: list[a.Action] = []
    for pod in pods:
        out += _remove_finalizers([pod])
        if not _deleting(pod):
            out += [a.DeletePod(_ref(pod)), _event(pod, Reason.EXCESS_POD_DELETED, "Excess pod deleted")]
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
        return self.is_group and _annotations(self.first).get(FAST_ADMISSION) == "true"

    @property
    def serving(self) -> bool:
        return self.is_group and _annotations(self.first).get(c.POD_GROUP_SERVING) == "true"

    def partition(self) -> tuple[list[Obj], list[Obj]]:
        active = [p for p in self.pods if _is_runnable_or_succeeded(p)]
        return active, [p for p in self.pods if not _is_runnable_or_succeeded(p)]

    def pod_sets(self) -> list[dict[str, Any]]:
        if self.fast:
            return _fast_pod_sets(self.pods, _total_count(self.first), self.opts)
        return _group_pod_sets(self.pods, self.opts)

    def suspended(self) -> bool:
        return any(_is_suspended(p) for p in self.pods)

    def active(self, now: datetime) -> bool:
        """`IsActive`: some Running pod whose deletion grace period has not run out (never for one pod)."""
        for pod in self.pods if self.is_group else ():
            if _phase(pod) != "Running":
                continue
            grace = _meta(pod).get("deletionGracePeriodSeconds")
            if _deleting(pod) and grace is not None and now > _time(_meta(pod)["deletionTimestamp"]) + timedelta(seconds=grace):
                continue
            return True
        return False

    def finished(self) -> tuple[str, bool, bool]:
        """(message, success, finished): all pods succeeded, or an unretriable group with nothing running."""
        if not self.is_group:
            pod = self.first
            return str((pod.get("status") or {}).get("message") or ""), _phase(pod) == "Succeeded", _is_terminated(pod)
        if self.serving:
            return "", True, False
        try:
            total = _total_count(self.first)
        except _Retry:
            return "failed to check if pod group is finished", True, False
        succeeded = sum(1 for p in self.pods if _phase(p) == "Succeeded")
        running = any(not _is_terminated(p) for p in self.pods)
        unretriable = any(_annotations(p).get(c.RETRIABLE_IN_GROUP) == "false" for p in self.pods)
        if succeeded == total or (not running and unretriable):
            return f"Pods succeeded: {succeeded}/{total}.", True, True
        return "", True, False

    def pods_ready(self) -> bool:
        if not self.is_group:
            return _pod_ready(self.first)
        try:
            total = _total_count(self.first)
        except _Retry:
            return False
        return len(self.pods) >= total and all(_pod_ready(p) for p in self.pods)

    def reclaimable(self) -> list[dict[str, Any]]:
        counts: dict[str, int] = {}
        if self.serving or not self.is_group:
            return []
        for pod in self.pods:
            if _phase(pod) == "Succeeded":
                role = _pod_role(pod)
                counts[role] = counts.get(role, 0) + 1
        return [{"name": role, "count": n} for role, n in counts.items()]


def _pod_ready(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def _validate_group(group: _Group, active: Sequence[Obj]) -> list[a.Action]:
    """`validatePodGroupMetadata`: index label, enough runnable pods, same queue and total count."""
    first = group.first
    total = _total_count(first)
    index = _labels(first).get(c.POD_GROUP_POD_INDEX_LABEL)
    if index is not None:
        where = f'for Pod "{_meta(first).get("namespace")}/{_name(first)}"'
        if not (index.isascii() and index.isdigit()):
            raise _Retry(f'incorrect label value "{index}" {where}: invalid unsigned integer: strconv.ParseUint: parsing "{index}": invalid syntax')
        if int(index) >= total:
            raise _Retry(f'incorrect label value "{index}" {where}: validation error: value should be less than {total}')
    if not group.fast and len(active) < total:
        message = f"'{group.name}' group has fewer runnable pods than expected"
        raise _UnretryableWith(message, [_event(first, Reason.ERR_WORKLOAD_COMPOSE, message, warning=True)])
    queue = _labels(first).get(c.QUEUE_LABEL, "")
    for pod in group.pods:
        if _phase(pod) == "Failed":
            continue
        other = _labels(pod).get(c.QUEUE_LABEL, "")
        if other != queue:
            raise _Unretryable(f"pods '{_name(first)}' and '{_name(pod)}' has different queue names: {queue}!={other}")
        text = _annotations(pod).get(c.POD_GROUP_TOTAL_COUNT, "")
        try:
            count = _go_atoi(text)
        except ValueError as exc:
            raise _Retry(f"failed to extract '{c.POD_GROUP_TOTAL_COUNT}' annotation from the pod '{_name(pod)}': {exc}") from exc
        if count != total:
            raise _Unretryable(
                f"pods '{_name(first)}' and '{_name(pod)}' has different '{c.POD_GROUP_TOTAL_COUNT}' values: {total}!={count}"
            )
    return []


class _UnretryableWith(_Unretryable):
    def __init__(self, message: str, actions: list[a.Action]) -> None:
        super().__init__(message)
        self.actions = actions


def _construct_group(group: _Group, out: list[a.Action], lookups: Lookups) -> dict[str, Any]:
    """`ConstructComposableWorkload`; finalizer removals and excess deletions go to `out` first."""
    active, inactive = group.partition()
    out += _remove_finalizers(inactive)
    _validate_group(group, active)
    total = _total_count(group.first)
    if len(active) > total:
        ordered = _sort_active(active)
        out += _remove_excess(ordered[total:])
        group.pods = ordered[:total]
    try:
        pod_sets = group.pod_sets()
    except _Unretryable as exc:
        out.append(_event(group.first, Reason.ERR_WORKLOAD_COMPOSE, str(exc), warning=True))
        raise
    if len(pod_sets) > MAX_POD_SETS:
        raise _Unretryable(MSG_TOO_MANY_ROLES)
    wl = _new_workload(group.name, group.first, pod_sets, group.opts, lookups)
    wl["metadata"].setdefault("annotations", {})[c.IS_GROUP_WORKLOAD] = "true"
    wl["metadata"]["ownerReferences"] = _with_owners([], group.pods)
    labels: dict[str, str] = {}
    for pod in group.pods:
        for key in sorted(group.opts.label_keys_to_copy):
            if key in _labels(pod):
                if key in labels and labels[key] != _labels(pod)[key]:
                    raise _Retry(MSG_LABELS_MISMATCH)
                labels[key] = _labels(pod)[key]
    if labels:
        wl["metadata"]["labels"] = labels
    return wl


def _group_equivalent(group: _Group, wl: Obj, job_sets: Sequence[Obj]) -> bool:
    """`equivalentToWorkload`: same name; every current role is in the Workload, in order, fitting."""
    finished = _is_finished(wl)
    wl_sets = (wl.get("spec") or {}).get("podSets") or []
    if _name(wl) != group.name:
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
    if (wl.get("spec") or {}).get("maximumExecutionTimeSeconds") != _max_exec_seconds(group.first):
        return None, [wl], []
    active, inactive = group.partition()
    kept: list[Obj] = []
    excess: list[Obj] = []
    replaced: list[Obj] = []
    absent = 0
    for ps in (wl.get("spec") or {}).get("podSets") or ():
        count = ps.get("count", 1)
        role_active = [p for p in active if _pod_role(p) == ps.get("name")]
        role_inactive = [p for p in inactive if _pod_role(p) == ps.get("name")]
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
    if not kept or not _group_equivalent(group, wl, _group_pod_sets(kept, group.opts)):
        return None, [wl], []
    if not expectations_satisfied:
        raise _Unretryable(MSG_PENDING_OPS)
    group.absent = absent
    group.pods = kept
    out: list[a.Action] = []
    refs = _meta(wl).get("ownerReferences") or []
    owners = _with_owners(refs, kept)
    if len(owners) > len(refs):
        out.append(a.PatchWorkload(_wl_ref(wl), {"metadata": {"ownerReferences": owners, "resourceVersion": _meta(wl).get("resourceVersion")}}))
        out.append(a.Event(a.EventType.NORMAL, Reason.OWNER_REFERENCES_ADDED, f"Added {len(owners) - len(refs)} owner reference(s)", _wl_ref(wl), Reason.OWNER_REFERENCES_ADDED))
    return wl, [], out + _remove_excess(excess) + _remove_finalizers(replaced)


def _replacement_condition(group: _Group, wl: Obj, now: datetime) -> dict[str, Any] | None:
    """`waitingForReplacementPodsCondition`: the new condition when it must be written, else None."""
    current = _condition(wl, WAITING_FOR_REPLACEMENT_PODS)
    waiting = group.absent > 0
    if current is None and not waiting:
        return None
    cond = dict(current or {"type": WAITING_FOR_REPLACEMENT_PODS})
    updated = current is None
    if waiting:
        evicted = _condition(wl, c.WorkloadCondition.EVICTED)
        if evicted is not None and evicted.get("status") == "True":
            for key in ("reason", "message"):
                if cond.get(key) != evicted.get(key):
                    cond[key] = evicted.get(key)
                    updated = True
        elif cond.get("status") != "True":
            cond.update(reason=PODS_FAILED, message=MSG_NEED_REPLACEMENT)
            updated = True
        if cond.get("status") != "True":
            cond["status"] = "True"
            updated = True
    elif cond.get("status") != "False":
        cond.update(status="False", reason=c.WorkloadCondition.PODS_READY, message=MSG_NO_REPLACEMENT)
        updated = True
    if not updated:
        return None
    cond["lastTransitionTime"] = _rfc3339(now)
    if _meta(wl).get("generation") is not None:
        cond["observedGeneration"] = _meta(wl)["generation"]
    return cond


# --- the reconcile recipe (`ReconcileGenericJob`) -------------------------------------------------


def _skip(pod: Obj, opts: Options) -> bool:
    """`Pod.Skip`: not labelled managed, or only implicitly enabled and not suspended by a parent."""
    if _labels(pod).get(c.MANAGED_LABEL) != "true":
        return True
    return opts.implicitly_enabled and not _annotations(pod).get(c.POD_SUSPENDING_PARENT)


def _unmanaged_queue(pod: Obj, opts: Options) -> bool:
    return not opts.manage_jobs_without_queue_name and not _labels(pod).get(c.QUEUE_LABEL)


def _stop_job(job: _Group, wl: Obj | None, reason: str, message: str, now: datetime) -> list[a.Action]:
    """`stopJob` for the composable Pod: eviction reasons carry `DueTo<reason>`."""
    if reason == StopReason.WORKLOAD_EVICTED:
        reason = _eviction_reason(wl)
    finalize = job.all_pods if job.is_group and reason == StopReason.WORKLOAD_DELETED else ()
    return _stop(job.pods, reason=reason, message=message, now=now, finalize=finalize)


def _construct(job: _Group, out: list[a.Action], lookups: Lookups) -> dict[str, Any]:
    if job.is_group:
        return _construct_group(job, out, lookups)
    return construct_pod_workload(job.first, job.opts, lookups)


def _ensure_one(job: _Group, match: Obj | None, to_delete: list[Obj], out: list[a.Action], lookups: Lookups, now: datetime) -> Obj | None:
    """`ensureOneWorkload` after matching: stop a running job without a match, delete, or update."""
    to_update = None
    if match is None and to_delete and job.suspended() and not _has_quota_reservation(to_delete[0]):
        to_update, to_delete = to_delete[0], to_delete[1:]
    if match is None and not job.suspended() and not job.finished()[2]:
        old = to_delete[0] if len(to_delete) == 1 else None
        message = MSG_MISSING_WORKLOAD if old is None else MSG_NO_MATCHING_WORKLOAD
        out += _stop_job(job, old, StopReason.NO_MATCHING_WORKLOAD, message, now)
    deleted = 0
    for wl in to_delete:
        out.append(a.DeleteWorkload(_wl_ref(wl), already_deleting=_deleting(wl)))
        if not _deleting(wl):
            deleted += 1
            out.append(_event(job.first, Reason.DELETED_WORKLOAD, f"Deleted not matching Workload: {_wl_ref(wl).key}"))
    if deleted:
        kind = "no matching workloads" if match is None else "extra workloads"
        raise _Retry(f"{kind}: deleted {len(to_delete)} workloads")
    if to_update is not None:
        new = _construct(job, out, lookups)
        spec: dict[str, Any] = {k: None for k in (to_update.get("spec") or {}) if k != "active"}
        spec.update(new["spec"])
        patch = {"metadata": {"resourceVersion": _meta(to_update).get("resourceVersion")}, "spec": spec}
        out.append(a.PatchWorkload(_wl_ref(to_update), patch))
        out.append(_event(job.first, Reason.UPDATED_WORKLOAD, f"Updated not matching Workload for suspended job: {_wl_ref(to_update).key}"))
        updated = dict(to_update)
        updated["spec"] = {**(to_update.get("spec") or {}), **new["spec"]}
        return updated
    return match


def _pods_ready_condition(job: _Group, wl: Obj, now: datetime) -> dict[str, Any]:
    """`generatePodsReadyCondition`."""
    not_ready = ("False", "WaitForStart", "Not all pods are ready or succeeded")
    recovering = ("False", "WaitForRecovery", "At least one pod has failed, waiting for recovery")
    current = _condition(wl, c.WorkloadCondition.PODS_READY)
    if not _is_admitted(wl):
        status, reason, message = not_ready
    elif job.pods_ready():
        previous = (current or {}).get("reason")
        status, reason, message = "True", "Recovered" if previous in ("WaitForRecovery", "Recovered") else "Started", (
            "All pods reached readiness and the workload is running"
        )
    elif current is None:
        status, reason, message = not_ready
    elif current.get("status") == "True" or current.get("reason") == "WaitForRecovery":
        status, reason, message = recovering
    else:
        status, reason, message = not_ready
    return _cond(c.WorkloadCondition.PODS_READY, status, reason, message, now=now, wl=wl)


def _clear_reservation(wl: Obj, evicted: Obj, opts: Options, now: datetime) -> a.UpdateWorkloadStatus:
    """Release the quota of an evicted Workload whose pods are gone; Requeued True only for some reasons."""
    reason, message = str(evicted.get("reason", "")), str(evicted.get("message", ""))
    requeue = reason in ("Preempted", "NodeFailures")
    owners = _meta(wl).get("ownerReferences") or []
    single_pod_owned = (
        len(owners) == 1
        and _annotations(wl).get(c.IS_GROUP_WORKLOAD) != "true"
        and owners[0].get("kind") == "Pod"
        and owners[0].get("apiVersion") == POD_API
    )
    if opts.skip_reassignment_for_pod_owned and single_pod_owned:
        requeue = False
    conditions = (
        _cond(c.WorkloadCondition.REQUEUED, "True" if requeue else "False", reason, message, now=now, wl=wl),
        _cond(c.WorkloadCondition.QUOTA_RESERVED, "False", "PendingEvaluation", message, now=now, wl=wl),
        _cond(c.WorkloadCondition.ADMITTED, "False", "NoReservation", "The workload has no reservation", now=now, wl=wl),
    )
    return a.UpdateWorkloadStatus(_wl_ref(wl), conditions, clear_admission=True, field_manager="kueue-admission")


def _admission_check_message(wl: Obj) -> str:
    parts = [
        f"{check.get('name')}: {check.get('message')}"
        for check in (wl.get("status") or {}).get("admissionChecks") or ()
        if check.get("state") == "Pending" and check.get("message")
    ]
    return "; ".join(parts)


def _reconcile_job(job: _Group, wl: Obj | None, out: list[a.Action], lookups: Lookups, now: datetime) -> a.Decision | None:
    """Steps b to k of the recipe, once the one matching Workload is known (None = must be created)."""
    opts = job.opts
    if wl is not None and job.is_group:
        cond = _replacement_condition(job, wl, now)
        if cond is not None:
            out.append(a.UpdateWorkloadStatus(_wl_ref(wl), (cond,), field_manager="kueue-pod-controller"))
            return None
    if wl is not None and _is_finished(wl):
        out += _remove_finalizers(job.all_pods)
        out.append(_finished_event(job.first, wl))
        out += _remove_wl_finalizer(wl)
        return None
    if wl is not None and _deleting(wl):
        out += _stop_job(job, wl, StopReason.WORKLOAD_DELETED, MSG_WORKLOAD_DELETED, now)
        out += _remove_wl_finalizer(wl)
        return None
    message, success, finished = job.finished()
    if finished:
        if wl is not None and not _is_finished(wl):
            out += _finish(wl, FinishedReason.SUCCEEDED if success else FinishedReason.FAILED, message, now)
            out.append(_finished_event(job.first, wl))
        out += _remove_finalizers(job.all_pods)
        return None
    if wl is None:
        if job.active(now):
            return None
        new = _construct(job, out, lookups)
        out.append(a.CreateWorkload(new))
        out.append(_event(job.first, Reason.CREATED_WORKLOAD, f"Created Workload: {_meta(new)['namespace']}/{_name(new)}"))
        return None
    if opts.reclaimable_pods:
        sizes = {ps.get("name"): ps.get("count", 1) for ps in (wl.get("spec") or {}).get("podSets") or ()}
        wanted = [{"name": r["name"], "count": min(r["count"], sizes.get(r["name"], r["count"]))} for r in job.reclaimable()]
        have = {r.get("name"): r.get("count") for r in (wl.get("status") or {}).get("reclaimablePods") or ()}
        if {r["name"]: r["count"] for r in wanted} != have:
            out.append(a.UpdateWorkloadStatus(_wl_ref(wl), reclaimable_pods=tuple(wanted), field_manager="kueue-reclaimable-pods"))
            return None
    if opts.wait_for_pods_ready:
        cond = _pods_ready_condition(job, wl, now)
        current = _condition(wl, c.WorkloadCondition.PODS_READY) or {}
        if (current.get("status"), current.get("reason")) != (cond["status"], cond["reason"]):
            out.append(a.UpdateWorkloadStatus(_wl_ref(wl), (cond,), field_manager="kueue-job-controller"))
            return None
    evicted = _condition(wl, c.WorkloadCondition.EVICTED)
    if evicted is not None and evicted.get("status") == "True":
        out += _stop_job(job, wl, StopReason.WORKLOAD_EVICTED, str(evicted.get("message", "")), now)
        if _has_quota_reservation(wl) and not job.active(now):
            out.append(_clear_reservation(wl, evicted, opts, now))
        return None
    if job.suspended():
        if _is_admitted(wl):
            return _start(job.pods, wl, is_group=job.is_group, opts=opts, lookups=lookups, now=now)
        if _has_quota_reservation(wl) and (text := _admission_check_message(wl)):
            out += [_event(pod, Reason.UPDATED_ADMISSION_CHECK, text) for pod in job.pods]
        queue = _labels(job.first).get(c.QUEUE_LABEL, "")
        if not job.serving and (wl.get("spec") or {}).get("queueName", "") != queue:
            out.append(a.PatchWorkload(_wl_ref(wl), {"spec": {"queueName": queue or None}}))
        return None
    if not _is_admitted(wl):
        out += _stop_job(job, wl, StopReason.NOT_ADMITTED, MSG_NOT_ADMITTED, now)
    return None


def _decide(out: list[a.Action], step: Any) -> a.Decision:
    """Run one recipe step, turning our exception kinds into the Decision's error and retry."""
    try:
        started = step()
    except (_RetryWith, _UnretryableWith) as exc:
        return a.Decision((*out, *exc.actions), str(exc), retry=isinstance(exc, _Retry))
    except _Retry as exc:
        return a.Decision(tuple(out), str(exc), retry=True)
    except _Unretryable as exc:
        return a.Decision(tuple(out), str(exc))
    if isinstance(started, a.Decision):
        return a.Decision((*out, *started.actions), started.error, started.retry)
    return a.Decision(tuple(out))


def reconcile_pod(pod: Obj | None, *, workloads: Sequence[Obj], opts: Options, lookups: Lookups, now: datetime) -> a.Decision:
    """One pass for a pod without a group name.

    `pod` is None when it is gone. `workloads` are the Workloads in its namespace whose controller
    owner is a Pod with its name (upstream's owner index). The caller has already checked
    `managedJobsNamespaceSelector` against the namespace.
    """
    if pod is None:
        return a.Decision(tuple(act for wl in workloads for act in _finalize_orphan(wl, opts, now)))
    if group_name(pod, opts):
        return a.Decision((), "event handler error: got a single pod reconcile request for a pod group", retry=True)
    if _skip(pod, opts):
        return a.Decision()
    if _deleting(pod):
        acts = [act for wl in workloads for act in _finalize_orphan(wl, opts, now)]
        return a.Decision((*acts, *_remove_finalizers([pod])))
    if _unmanaged_queue(pod, opts):
        return a.Decision()
    job = _Group("", [pod], [pod], opts, is_group=False)
    out: list[a.Action] = []

    def step() -> a.Decision | None:
        match = None
        to_delete = []
        for wl in workloads:
            if match is None and _equivalent_single(pod, wl, opts, lookups):
                match = wl
            else:
                to_delete.append(wl)
        return _reconcile_job(job, _ensure_one(job, match, to_delete, out, lookups, now), out, lookups, now)

    return _decide(out, step)


def reconcile_group(
    pods: Sequence[Obj],
    *,
    name: str,
    workload: Obj | None,
    opts: Options,
    lookups: Lookups,
    now: datetime,
    expectations_satisfied: bool = True,
) -> a.Decision:
    """One pass for the pod group `name`: every pod of the group in one namespace, and the Workload
    named `name` in that namespace (None if absent).

    `expectations_satisfied` is False while excess/replaced pods this worker removed earlier have
    not been observed gone yet (upstream's `excessPodExpectations`); the worker tracks the UIDs of
    the pods targeted by the RemoveFinalizer/DeletePod actions it ran for this group.
    """
    if not pods:
        if workload is None:
            return a.Decision()
        foreign = _annotations(workload).get(c.IS_GROUP_WORKLOAD) != "true" and _controller_of(workload) is not None
        if opts.validate_group_owner and foreign:
            return a.Decision()
        return a.Decision(tuple(_finalize_orphan(workload, opts, now)))
    ordered = sorted(pods, key=lambda p: (_name(p), _meta(p).get("uid", "")))
    job = _Group(name, list(ordered), list(ordered), opts)
    if _skip(job.first, opts) or _unmanaged_queue(job.first, opts):
        return a.Decision()
    out: list[a.Action] = []

    def step() -> a.Decision | None:
        match: Obj | None = None
        to_delete: list[Obj] = []
        if workload is not None:
            if opts.validate_group_owner and _annotations(workload).get(c.IS_GROUP_WORKLOAD) != "true":
                text = f'A Workload named "{name}" already exists but is not a pod group workload; this pod group cannot be admitted'
                out.append(_event(job.first, Reason.WORKLOAD_NAME_CONFLICT, text, warning=True, action="Admission"))
                out.extend(_remove_finalizers(job.partition()[1]))
                raise _Unretryable(MSG_NOT_GROUP_WORKLOAD)
            match, to_delete, acts = _match_group(job, workload, expectations_satisfied=expectations_satisfied, now=now)
            out.extend(acts)
        return _reconcile_job(job, _ensure_one(job, match, to_delete, out, lookups, now), out, lookups, now)

    return _decide(out, step)
