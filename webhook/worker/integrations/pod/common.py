"""Shared vocabulary of the pod adapter: options, error kinds and object accessors.

Mirrors, at upstream commit ff69552e79, the small helpers of `pkg/controller/jobs/pod/pod_controller.go`
and `pkg/util/pod/pod.go` that every part of the pod adapter uses (`pod_workload`, `pod_start`,
`pod`). Writes are `jobframework.actions` values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from webhook.api import constants as c
from webhook.api import integrations
from webhook.api import objects as o
from webhook.api.fields import go_atoi
from webhook.api.objects import Obj
from webhook.api.pod_role import role_hash
from webhook.config import Feature
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework.interface import JobError
from webhook.worker.jobframework.plan import keys_to_copy

if TYPE_CHECKING:
    from webhook.config import Configuration

__all__ = [
    "DEFAULT_POD_SET",
    "MAX_POD_SETS",
    "POD_API",
    "WORKLOAD_API",
    "ZERO_TIME",
    "Options",
    "RetryLater",
    "Unretryable",
    "group_name",
    "group_total_count",
    "has_pod_finalizer",
    "is_gated",
    "is_pod_suspended",
    "is_runnable_or_succeeded",
    "is_terminated",
    "new_condition",
    "parse_timestamp",
    "pod_event",
    "pod_phase",
    "pod_ref",
    "pod_role",
    "remove_finalizers",
    "rfc3339",
    "workload_ref",
]

POD_API = "v1"
WORKLOAD_API = c.V1BETA2
MAX_POD_SETS = 18
DEFAULT_POD_SET = "main"
_CONDITION_LIMIT = 32 * 1024
ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)  # Go's zero time.Time (not core.workload.EPOCH, 1970)

# --- inputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    """Configuration and feature gates that change pod reconciliation (defaults = upstream's)."""

    label_keys_to_copy: frozenset[str] = frozenset()
    # With gate CustomMetricLabels, what the Workload-kind custom labels read (`keys_to_copy`).
    annotations_to_copy: frozenset[str] = frozenset()
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
        frameworks = cfg.integrations.frameworks
        label_keys, annotation_keys = keys_to_copy(cfg)
        return cls(
            label_keys_to_copy=label_keys,
            annotations_to_copy=annotation_keys,
            manage_jobs_without_queue_name=cfg.manage_jobs_without_queue_name,
            implicitly_enabled=integrations.POD.name not in frameworks
            and integrations.POD in integrations.enabled(frameworks),
            wait_for_pods_ready=cfg.wait_for_pods_ready_enabled,
            tas=cfg.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING),
            workload_identifier_annotations=cfg.feature_enabled(Feature.WORKLOAD_IDENTIFIER_ANNOTATIONS),
            validate_group_owner=cfg.feature_enabled(Feature.POD_INTEGRATION_VALIDATE_GROUP_OWNER),
            finish_orphaned_workloads=cfg.feature_enabled(Feature.FINISH_ORPHANED_WORKLOADS),
            assign_queue_labels=cfg.feature_enabled(Feature.ASSIGN_QUEUE_LABELS_FOR_PODS),
            admission_gated_by=cfg.feature_enabled(Feature.ADMISSION_GATED_BY),
            reclaimable_pods=cfg.feature_enabled(Feature.RECLAIMABLE_PODS),
            skip_reassignment_for_pod_owned=cfg.feature_enabled(Feature.SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS),
            short_workload_names=cfg.feature_enabled(Feature.SHORT_WORKLOAD_NAMES),
        )


class RetryLater(JobError):
    """A retryable failure: logged, and the key is re-queued."""


class Unretryable(JobError):
    """Upstream's `UnretryableError`: logged, never retried."""

    retry = False


# --- pod accessors --------------------------------------------------------------------------------


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_terminated(pod: Obj) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def _has_gate(pod: Obj, gate: str) -> bool:
    return any(g.get("name") == gate for g in (pod.get("spec") or {}).get("schedulingGates") or ())


def is_gated(pod: Obj) -> bool:
    return _has_gate(pod, c.ADMISSION_GATE)


def is_pod_suspended(pod: Obj) -> bool:
    return is_terminated(pod) or is_gated(pod)


def has_pod_finalizer(obj: Obj, finalizer: str = c.POD_FINALIZER) -> bool:
    return finalizer in (o.meta(obj).get("finalizers") or ())


def parse_timestamp(value: Any) -> datetime:
    return datetime.fromisoformat(value) if value else ZERO_TIME


def rfc3339(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ref(obj: Obj, api_version: str, kind: str) -> dict[str, Any]:
    """Enough of `obj` to address it and to be an Event's `regarding` (listed objects lack their kind)."""
    meta = o.meta(obj)
    return {
        "apiVersion": obj.get("apiVersion") or api_version,
        "kind": obj.get("kind") or kind,
        "metadata": {key: meta.get(key) or "" for key in ("name", "namespace", "uid", "resourceVersion")},
    }


def pod_ref(pod: Obj) -> dict[str, Any]:
    return _ref(pod, POD_API, "Pod")


def workload_ref(wl: Obj) -> dict[str, Any]:
    return _ref(wl, WORKLOAD_API, "Workload")


def group_name(pod: Obj, opts: Options) -> str:
    """`utilpod.GetPodGroupName`: the annotation wins when WorkloadIdentifierAnnotations is on."""
    if opts.workload_identifier_annotations and o.annotations(pod).get(c.POD_GROUP_NAME):
        return o.annotations(pod)[c.POD_GROUP_NAME]
    return o.labels(pod).get(c.POD_GROUP_NAME, "")


def group_total_count(pod: Obj) -> int:
    text = o.annotations(pod).get(c.POD_GROUP_TOTAL_COUNT)
    if text is None:
        raise RetryLater(f"failed to extract '{c.POD_GROUP_TOTAL_COUNT}' annotation")
    try:
        total = go_atoi(text)
    except ValueError as exc:
        raise RetryLater(str(exc)) from exc
    if total < 1:
        raise RetryLater(
            f"incorrect annotation value '{c.POD_GROUP_TOTAL_COUNT}={text}': group total count should be greater than zero"
        )
    return total


def pod_role(pod: Obj) -> str:
    """`getRoleHash`: the annotation verbatim when present, else computed from the spec."""
    return o.annotations(pod).get(c.ROLE_HASH_ANNOTATION) or role_hash(pod)


def is_runnable_or_succeeded(pod: Obj) -> bool:
    """Active: not Failed, and not deleted before being scheduled."""
    if o.is_deleting(pod) and not (pod.get("spec") or {}).get("nodeName"):
        return False
    return pod_phase(pod) != "Failed"


def pod_event(
    obj: Obj, reason: c.JobEventReason, message: str, *, warning: bool = False, action: str = ""
) -> ja.RecordEvent:
    return ja.RecordEvent(reason=reason, message=message, warning=warning, regarding=pod_ref(obj), action=action)


def remove_finalizers(pods: Sequence[Obj], *, expected: bool = False) -> list[ja.JobAction]:
    """`expected` for upstream's `finalizePods` (the group waits to observe them), not for `Finalize`."""
    return [ja.RemovePodFinalizer(pod=pod_ref(p), expected=expected) for p in pods if has_pod_finalizer(p)]


# --- workload accessors ---------------------------------------------------------------------------


def new_condition(ctype: str, status: str, reason: str, message: str, *, now: datetime, wl: Obj) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message[:_CONDITION_LIMIT],
        "lastTransitionTime": rfc3339(now),
    }
    if o.meta(wl).get("generation") is not None:
        out["observedGeneration"] = o.meta(wl)["generation"]
    return out
