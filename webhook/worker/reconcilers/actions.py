"""What a reconciler asks the worker to do: plain values, executed in order by the I/O layer.

Reconcilers (`pod_group.py`, ...) are pure: they read objects as the API returns them and return a
`ReconcileResult`. The worker's thin I/O layer runs `ReconcileResult.actions` in order, stopping at the first
failed write (the object is then re-queued with backoff, as upstream's reconcile returns the error),
and re-queues with backoff when `ReconcileResult.retry` is set even if every action succeeded.

Action kinds and how to execute them (upstream behaviour in brackets):

    CreateWorkload        POST the Workload body as given (v1beta2). AlreadyExists → retry.
    PatchWorkload         JSON merge patch of the Workload's main resource; send
                          `metadata.resourceVersion` when given (optimistic lock) [c.Update].
    DeleteWorkload        remove the `kueue.x-k8s.io/resource-in-use` finalizer, then DELETE
                          unless `already_deleting` [workload.Delete]. NotFound is success.
    RemoveWorkloadFinalizer  drop one finalizer (JSON patch test+remove or merge patch of the
                          remaining list). NotFound is success.
    UpdateWorkloadStatus  patch the status subresource: upsert each condition by `type` (keep
                          lastTransitionTime when status is unchanged, `apimeta.SetStatusCondition`),
                          set `reclaimablePods` when not None, set `admission: null` when
                          `clear_admission`; field manager as given.
    PatchPod              JSON merge patch of the Pod (labels/annotations/nodeSelector add keys;
                          `tolerations` and `schedulingGates` are full replacement lists).
    SetPodCondition       server-side apply of the pod status condition, field manager `kueue`,
                          force. NotFound → skip the DeletePod that follows for the same pod.
    DeletePod             DELETE the pod (precondition uid when known). NotFound is success.
    RemoveFinalizer       remove one finalizer from a Pod; on Conflict re-read and retry
                          (RemoveFinalizersWithStrictPatch). NotFound is success.
                          On both, `expected` marks the excess and replaced pods of a group,
                          whose release the next match waits to observe [excessPodExpectations];
                          stopping or finalizing a whole group expects nothing [Stop, Finalize].
    Event                 events.k8s.io Event on `object`: type, reason, action, note = message;
                          reporting controller `pod-kueue-controller`.

Every object is named by an `ObjectRef`; `ObjectRef.of(obj)` builds one from an API dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from webhook.api import constants as c

__all__ = [
    "Action",
    "CreateWorkload",
    "DeletePod",
    "DeleteWorkload",
    "Event",
    "EventType",
    "ObjectRef",
    "PatchPod",
    "PatchWorkload",
    "ReconcileResult",
    "RemoveFinalizer",
    "RemoveWorkloadFinalizer",
    "SetPodCondition",
    "UpdateWorkloadStatus",
]


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Enough to address an object and to be the `regarding` of an Event."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any], *, api_version: str = "", kind: str = "") -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(
            api_version=obj.get("apiVersion") or api_version,
            kind=obj.get("kind") or kind,
            namespace=meta.get("namespace") or "",
            name=meta.get("name") or "",
            uid=meta.get("uid") or "",
            resource_version=meta.get("resourceVersion") or "",
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class CreateWorkload:
    workload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PatchWorkload:
    workload: ObjectRef
    patch: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DeleteWorkload:
    workload: ObjectRef
    already_deleting: bool = False


@dataclass(frozen=True, slots=True)
class RemoveWorkloadFinalizer:
    workload: ObjectRef
    finalizer: str = c.RESOURCE_IN_USE_FINALIZER


@dataclass(frozen=True, slots=True)
class UpdateWorkloadStatus:
    workload: ObjectRef
    conditions: tuple[Mapping[str, Any], ...] = ()
    reclaimable_pods: tuple[Mapping[str, Any], ...] | None = None
    clear_admission: bool = False
    field_manager: str = "kueue-pod-controller"


@dataclass(frozen=True, slots=True)
class GateRemoval:
    """What `kueue_pod_scheduling_gate_removal_seconds` needs once a patch lifting the gate succeeds."""

    cluster_queue: str
    is_group: bool
    admitted_at: datetime


@dataclass(frozen=True, slots=True)
class PatchPod:
    pod: ObjectRef
    patch: Mapping[str, Any]
    ungates: GateRemoval | None = None


@dataclass(frozen=True, slots=True)
class SetPodCondition:
    pod: ObjectRef
    condition: Mapping[str, Any]
    field_manager: str = "kueue"


@dataclass(frozen=True, slots=True)
class DeletePod:
    pod: ObjectRef
    expected: bool = False


@dataclass(frozen=True, slots=True)
class RemoveFinalizer:
    pod: ObjectRef
    finalizer: str = c.POD_FINALIZER
    expected: bool = False


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventType
    reason: str
    message: str
    object: ObjectRef
    action: str = ""
    """events.k8s.io `action`; upstream passes the reason except where noted (e.g. `Admission`)."""


Action = (
    CreateWorkload
    | PatchWorkload
    | DeleteWorkload
    | RemoveWorkloadFinalizer
    | UpdateWorkloadStatus
    | PatchPod
    | SetPodCondition
    | DeletePod
    | RemoveFinalizer
    | Event
)


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """The outcome of one reconcile pass.

    `error` is a message for the log. `retry` says whether the key goes back to the queue with
    backoff after the actions ran (upstream returned a retryable error); an unretryable error
    (upstream's `UnretryableError`) is logged only.
    """

    actions: tuple[Action, ...] = ()
    error: str = ""
    retry: bool = False
