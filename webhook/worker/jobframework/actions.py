"""The writes one reconcile of a job asks for, as typed values, in the order they run.

Upstream's `ReconcileGenericJob` (`pkg/controller/jobframework/reconciler.go`, v0.19.2) plans and
writes in one pass; here the plan is a tuple of these values and an executor carries them out.
Each value names the upstream step it stands for. `name` is the value's stable short name, used
in logs (`decision`, `steps`) and in tests.

Fields shared by every action: `workload` is the Workload the action writes (None for actions on
the job alone), `reason` and `message` the condition or event text it carries.

A composable job (a pod group, `ComposableJob`) starts, stops and finalizes its members itself:
its adapter plans those writes as the pod actions at the end (`PatchPod`, `StopPod`, `DeletePod`,
`RemovePodFinalizer`); a parent of pods (a StatefulSet) writes its pods and Workload with the same
values. `expected` on the last two marks the excess and replaced pods of a group, whose release
the next match waits to observe (upstream's `excessPodExpectations`).

The ConcurrentAdmission variant reconcile (`reconcilers.concurrent_admission.plan`) plans with the
same values where they mean the same write: creating, deleting and finishing Workloads, writing
conditions, releasing a reservation, PodsReady and events. Three are its alone and stay out of
`JobAction`: `SetWorkloadActive`, `AdmitWorkload` and `OpenPreemptionGate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from webhook.api.objects import Obj
from webhook.core.conditions import ConditionValue

__all__ = [
    "AdmitWorkload",
    "AdoptWorkload",
    "ClearReservation",
    "CreateWorkload",
    "DeleteJob",
    "DeletePod",
    "DeleteWorkload",
    "Finalize",
    "FinishWorkload",
    "GateRemoval",
    "JobAction",
    "OpenPreemptionGate",
    "PatchPod",
    "RecordAdmissionChecks",
    "RecordEvent",
    "RemovePodFinalizer",
    "RemoveWorkloadFinalizer",
    "SetPodsReady",
    "SetWorkloadActive",
    "SetWorkloadConditions",
    "StartJob",
    "StopJob",
    "StopPod",
    "SuspendChild",
    "SyncQueueName",
    "UpdateAdmissionGatedBy",
    "UpdatePriority",
    "UpdateReclaimablePods",
    "UpdateWorkloadSpec",
    "expected_uids",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Base:
    name: ClassVar[str]
    workload: Obj | None = None
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finalize(_Base):
    """`finalizeWorkloads` for a job that is gone: maybe finish the orphan, then drop its finalizer."""

    name = "finalize"
    finish: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SuspendChild(_Base):
    """`shouldSuspendChildJob`: a managed job's child is held suspended."""

    name = "suspend_child"


@dataclass(frozen=True, slots=True, kw_only=True)
class StopJob(_Base):
    """`stopJob`: suspend, reset the start time, restore the pod sets from `workload`."""

    name = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteWorkload(_Base):
    """`workload.Delete` of a Workload that does not match the job, or of a ConcurrentAdmission
    variant whose flavor left its ClusterQueue (`message` says so). `event` False: a deletion the
    job does not report (a LeaderWorkerSet's group removed by a scale-down)."""

    name = "delete_workload"
    event: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateWorkloadSpec(_Base):
    """`updateWorkloadToMatchJob` / `ApplyPodSetCounts`: replace the Workload's spec."""

    name = "update_workload"
    spec: Obj


@dataclass(frozen=True, slots=True, kw_only=True)
class AdoptWorkload(_Base):
    """`EnsurePrebuiltWorkloadOwnership` / `EnsureWorkloadOwnedByAllMembers`: `workload` with the
    ownerReferences it must have, and the `labels` and `annotations` it gains."""

    name = "adopt"
    labels: Obj | None = None
    annotations: Obj | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatePriority(_Base):
    """`UpdateWorkloadPriority`: the class the job's label names now (None: no class)."""

    name = "update_priority"
    priority_class_ref: Obj | None
    priority: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateAdmissionGatedBy(_Base):
    """`UpdateAdmissionGatedBy`: the job's `admission-gated-by` value (None removes it)."""

    name = "update_gated_by"
    value: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordEvent(_Base):
    """An Event on `regarding` (None: the object reconciled, a job or a ConcurrentAdmission parent);
    `action` is events.k8s.io's (default: the reason)."""

    name = "event"
    warning: bool = False
    regarding: Obj | None = None
    action: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishWorkload(_Base):
    """`workloadfinish.Finish`: Finished=True with `reason` and `message` (a variant's copied from
    its finished parent)."""

    name = "finish"


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveWorkloadFinalizer(_Base):
    """`workload.RemoveFinalizer` of a finished or deleted Workload."""

    name = "remove_finalizer"


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateWorkload(_Base):
    """`handleJobWithNoWorkload`: create `body` (`workload` stays None: nothing exists yet). A
    ConcurrentAdmission variant's carries the parent's event (`reason`, `message`), recorded once
    the variant is created."""

    name = "create"
    body: Obj


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateReclaimablePods(_Base):
    """`UpdateReclaimablePods`: `status.reclaimablePods` as the job reports it now."""

    name = "update_reclaimable"
    reclaimable_pods: Sequence[Obj]


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPodsReady(_Base):
    """`workload.SyncPodsReadyCondition`: the PodsReady condition computed for the job, or a
    ConcurrentAdmission parent's copied to its admitted variant."""

    name = "pods_ready"
    condition: ConditionValue


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearReservation(_Base):
    """An evicted Workload of a stopped job, or an evicted ConcurrentAdmission variant
    (`clearWorkloadAdmission`): Requeued (`requeue`: True), and the quota reservation released."""

    name = "clear_reservation"
    requeue: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteJob(_Base):
    """`handleWorkloadAfterDeactivatedPolicy`: the retention period is over; the job goes."""

    name = "delete_job"


@dataclass(frozen=True, slots=True, kw_only=True)
class StartJob(_Base):
    """`startJob`: run the job with the pod-set info of its admitted `workload`."""

    name = "start"


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordAdmissionChecks(_Base):
    """`recordAdmissionCheckUpdate`: the Pending checks' messages, as an event on `regarding`
    (None: the job; a composable job's members each get one)."""

    name = "record_admission_checks"
    regarding: Obj | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncQueueName(_Base):
    """`handleQueueNameChange`: the Workload follows the job's queue-name label."""

    name = "sync_queue"
    queue_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetWorkloadConditions(_Base):
    """`CustomWorkloadConditions`: conditions the job keeps on its Workload (a pod group's
    WaitingForReplacementPods; a StatefulSet's hold), or the Evicted=True of a ConcurrentAdmission
    parent (`SetEvictedCondition`); `clear_admission` drops `status.admission` as a
    QuotaReserved=False does."""

    name = "workload_conditions"
    conditions: tuple[Obj, ...]
    clear_admission: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SetWorkloadActive(_Base):
    """`spec.active` of a ConcurrentAdmission variant (`activateWl`, `deactivateWl`), guarded by the
    resourceVersion it was decided on; `reason` and `message` (why) make its event."""

    name = "set_active"
    active: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmitWorkload(_Base):
    """`SetQuotaReservation` with `admission`, then `SetAdmittedCondition` with `reason` and
    `message`: a ConcurrentAdmission parent takes its admitted variant's admission."""

    name = "admit"
    admission: Obj


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenPreemptionGate(_Base):
    """`OpenPreemptionGate`: `gate` of the Workload opens (if its spec lists the gate); `reason` and
    `message` make its event."""

    name = "open_gate"
    gate: str


@dataclass(frozen=True, slots=True)
class GateRemoval:
    """What `kueue_pod_scheduling_gate_removal_seconds` needs once a patch lifting the gate succeeds."""

    cluster_queue: str
    is_group: bool
    admitted_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class PatchPod(_Base):
    """A merge patch of one pod: `Pod.Run` applying the admission and lifting the gate
    (`gate_removal`), or a parent's labels and ungating."""

    name = "patch_pod"
    pod: Obj
    patch: Obj
    gate_removal: GateRemoval | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StopPod(_Base):
    """`Pod.Stop` for one pod: the TerminationTarget `condition` (server-side applied), then the
    delete (skipped when the pod is gone)."""

    name = "stop_pod"
    pod: Obj
    condition: Obj


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletePod(_Base):
    """An excess pod of a group goes (`removeExcessPods`)."""

    name = "delete_pod"
    pod: Obj
    expected: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RemovePodFinalizer(_Base):
    """The pod's `kueue.x-k8s.io/managed` finalizer goes (`finalizePods`, `Finalize`)."""

    name = "remove_pod_finalizer"
    pod: Obj
    expected: bool = False


JobAction = (
    Finalize
    | SuspendChild
    | StopJob
    | DeleteWorkload
    | UpdateWorkloadSpec
    | AdoptWorkload
    | UpdatePriority
    | UpdateAdmissionGatedBy
    | RecordEvent
    | FinishWorkload
    | RemoveWorkloadFinalizer
    | CreateWorkload
    | UpdateReclaimablePods
    | SetPodsReady
    | ClearReservation
    | DeleteJob
    | StartJob
    | RecordAdmissionChecks
    | SyncQueueName
    | SetWorkloadConditions
    | PatchPod
    | StopPod
    | DeletePod
    | RemovePodFinalizer
)
"""Every action a job reconcile may plan."""


def expected_uids(actions: Iterable[JobAction]) -> set[str]:
    """UIDs of the pods a run of `actions` deletes or releases as `expected` (what a group's
    expectations wait to observe)."""
    return {
        str(o_uid)
        for act in actions
        if isinstance(act, DeletePod | RemovePodFinalizer)
        and act.expected
        and (o_uid := (act.pod.get("metadata") or {}).get("uid"))
    }
