"""The writes one reconcile of a job asks for, as typed values, in the order they run.

Upstream's `ReconcileGenericJob` (`pkg/controller/jobframework/reconciler.go`, v0.19.2) plans and
writes in one pass; here the plan is a tuple of these values and an executor carries them out.
Each value names the upstream step it stands for. `name` is the value's stable short name, used
in logs (`decision`, `steps`) and in tests.

Fields shared by every action: `workload` is the Workload the action writes (None for actions on
the job alone), `reason` and `message` the condition or event text it carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from webhook.core.conditions import ConditionValue

__all__ = [
    "AdoptWorkload",
    "ClearReservation",
    "CreateWorkload",
    "DeleteJob",
    "DeleteWorkload",
    "Finalize",
    "FinishWorkload",
    "JobAction",
    "RecordAdmissionChecks",
    "RecordEvent",
    "RemoveWorkloadFinalizer",
    "SetPodsReady",
    "StartJob",
    "StopJob",
    "SuspendChild",
    "SyncQueueName",
    "UpdateAdmissionGatedBy",
    "UpdatePriority",
    "UpdateReclaimablePods",
    "UpdateWorkloadSpec",
]

Obj = Mapping[str, Any]


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
    """`workload.Delete` of a Workload that does not match the job."""

    name = "delete_workload"


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateWorkloadSpec(_Base):
    """`updateWorkloadToMatchJob` / `ApplyPodSetCounts`: replace the Workload's spec."""

    name = "update_workload"
    spec: Obj


@dataclass(frozen=True, slots=True, kw_only=True)
class AdoptWorkload(_Base):
    """`EnsurePrebuiltWorkloadOwnership`: `workload` is the prebuilt one with the job as controller."""

    name = "adopt"


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
    """An Event on the job."""

    name = "event"
    warning: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishWorkload(_Base):
    """`workloadfinish.Finish`: Finished=True with `reason` and `message`."""

    name = "finish"


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveWorkloadFinalizer(_Base):
    """`workload.RemoveFinalizer` of a finished or deleted Workload."""

    name = "remove_finalizer"


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateWorkload(_Base):
    """`handleJobWithNoWorkload`: create `body` (`workload` stays None: nothing exists yet)."""

    name = "create"
    body: Obj


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateReclaimablePods(_Base):
    """`UpdateReclaimablePods`: `status.reclaimablePods` as the job reports it now."""

    name = "update_reclaimable"
    reclaimable_pods: Sequence[Obj]


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPodsReady(_Base):
    """`workload.SyncPodsReadyCondition`: the PodsReady condition computed for the job."""

    name = "pods_ready"
    condition: ConditionValue


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearReservation(_Base):
    """An evicted Workload of a stopped job: Requeued, and the quota reservation released."""

    name = "clear_reservation"


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
    """`recordAdmissionCheckUpdate`: the Pending checks' messages, as an event on the job."""

    name = "record_admission_checks"


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncQueueName(_Base):
    """`handleQueueNameChange`: the Workload follows the job's queue-name label."""

    name = "sync_queue"
    queue_name: str


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
)
"""Every action a job reconcile may plan."""
