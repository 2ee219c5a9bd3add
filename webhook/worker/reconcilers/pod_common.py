"""Shared vocabulary of the pod reconciler: options, lookups, error kinds and object accessors.

Mirrors, at upstream commit ff69552e79, the small helpers of `pkg/controller/jobs/pod/pod_controller.go`,
`pkg/util/pod/pod.go` and `pkg/workload/workload.go` (`FinalizeOrphanedWorkload`) that every step of
the pod reconciler uses. The `_`-prefixed names are private to the `pod_*` modules of this package
(`pod_workload`, `pod_start`, `pod_group`); nothing outside them imports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.fields import go_atoi
from webhook.api.pod_role import role_hash
from webhook.worker.reconcilers import actions as a
from webhook.worker.reconcilers.podset import PermanentError

if TYPE_CHECKING:
    from webhook.config import Configuration

__all__ = [
    "Lookups",
    "Obj",
    "Options",
    "group_name",
]

Obj = Mapping[str, Any]
POD_API = "v1"
WORKLOAD_API = c.V1BETA2
MAX_POD_SETS = 18
DEFAULT_POD_SET = "main"
_CONDITION_LIMIT = 32 * 1024
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)

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


_Permanent = PermanentError
"""`podset.IsPermanent`: the admission cannot be applied; the Workload fails to start."""


# --- pod accessors --------------------------------------------------------------------------------


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


def _has_finalizer(obj: Obj, finalizer: str = c.POD_FINALIZER) -> bool:
    return finalizer in (o.meta(obj).get("finalizers") or ())


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(value) if value else _EPOCH


def _rfc3339(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ref(pod: Obj) -> a.ObjectRef:
    return a.ObjectRef.of(pod, api_version=POD_API, kind="Pod")


def _wl_ref(wl: Obj) -> a.ObjectRef:
    return a.ObjectRef.of(wl, api_version=WORKLOAD_API, kind="Workload")


def group_name(pod: Obj, opts: Options) -> str:
    """`utilpod.GetPodGroupName`: the annotation wins when WorkloadIdentifierAnnotations is on."""
    if opts.workload_identifier_annotations and o.annotations(pod).get(c.POD_GROUP_NAME):
        return o.annotations(pod)[c.POD_GROUP_NAME]
    return o.labels(pod).get(c.POD_GROUP_NAME, "")


def _total_count(pod: Obj) -> int:
    text = o.annotations(pod).get(c.POD_GROUP_TOTAL_COUNT)
    if text is None:
        raise _Retry(f"failed to extract '{c.POD_GROUP_TOTAL_COUNT}' annotation")
    try:
        total = go_atoi(text)
    except ValueError as exc:
        raise _Retry(str(exc)) from exc
    if total < 1:
        raise _Retry(f"incorrect annotation value '{c.POD_GROUP_TOTAL_COUNT}={text}': group total count should be greater than zero")
    return total


def _pod_role(pod: Obj) -> str:
    """`getRoleHash`: the annotation verbatim when present, else computed from the spec."""
    return o.annotations(pod).get(c.ROLE_HASH_ANNOTATION) or role_hash(pod)


def _max_exec_seconds(pod: Obj) -> int | None:
    text = o.labels(pod).get(c.MAX_EXEC_TIME_LABEL)
    try:
        value = go_atoi(text) if text is not None else 0
    except ValueError:
        return None
    return value if 0 < value < 2**31 else None


def _is_runnable_or_succeeded(pod: Obj) -> bool:
    """Active: not Failed, and not deleted before being scheduled."""
    if o.is_deleting(pod) and not (pod.get("spec") or {}).get("nodeName"):
        return False
    return _phase(pod) != "Failed"


def _event(obj: Obj, reason: c.JobEventReason, message: str, *, warning: bool = False, action: str = "") -> a.Event:
    kind = a.EventType.WARNING if warning else a.EventType.NORMAL
    return a.Event(kind, reason, message, _ref(obj), action or reason)


def _remove_finalizers(pods: Sequence[Obj], *, expected: bool = False) -> list[a.Action]:
    """`expected` for upstream's `finalizePods` (the group waits to observe them), not for `Finalize`."""
    return [a.RemoveFinalizer(_ref(p), expected=expected) for p in pods if _has_finalizer(p)]


# --- workload accessors ---------------------------------------------------------------------------


def _cond(ctype: str, status: str, reason: str, message: str, *, now: datetime, wl: Obj) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message[:_CONDITION_LIMIT],
        "lastTransitionTime": _rfc3339(now),
    }
    if o.meta(wl).get("generation") is not None:
        out["observedGeneration"] = o.meta(wl)["generation"]
    return out


def _finish(wl: Obj, reason: str, message: str, now: datetime) -> list[a.Action]:
    """`workloadfinish.Finish`: no-op on an already finished Workload."""
    if o.is_finished(wl):
        return []
    cond = _cond(c.WorkloadCondition.FINISHED, "True", reason, message, now=now, wl=wl)
    return [a.UpdateWorkloadStatus(_wl_ref(wl), (cond,), field_manager="kueue-admission")]


def _finished_event(pod: Obj, wl: Obj) -> a.Event:
    return _event(pod, c.JobEventReason.FINISHED_WORKLOAD, f"Workload '{o.meta(wl).get('namespace')}/{o.name(wl)}' is declared finished")


def _remove_wl_finalizer(wl: Obj) -> list[a.Action]:
    return [a.RemoveWorkloadFinalizer(_wl_ref(wl))] if _has_finalizer(wl, c.RESOURCE_IN_USE_FINALIZER) else []


def _finalize_orphan(wl: Obj, opts: Options, now: datetime) -> list[a.Action]:
    """`workload.FinalizeOrphanedWorkload`: finish it when it had a controller, drop the finalizer."""
    out: list[a.Action] = []
    if opts.finish_orphaned_workloads and not o.is_deleting(wl) and o.controller_of(wl) is not None:
        out += _finish(wl, c.FinishedReason.OWNER_NOT_FOUND, c.MSG_OWNER_NOT_FOUND, now)
    return out + _remove_wl_finalizer(wl)


