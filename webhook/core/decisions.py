"""What a scheduling cycle decides: the admission core's decision values, one per Workload write.

`AdmissionCore.schedule` (`core.cycle`) returns them in a `CycleResult`; the worker turns each into
a status write (`worker.decisions`). They mirror what `pkg/scheduler/scheduler.go` (admit, preempt,
requeueAndUpdate) and the queue-state steps of `pkg/controller/core/workload_controller.go`
(`core.queue_state`) write, upstream v0.19.2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api.constants import PreemptionReason
from webhook.core.conditions import ConditionValue
from webhook.core.workload import WorkloadKey

__all__ = [
    "Admit",
    "Decision",
    "Evict",
    "Migrate",
    "Pending",
    "Preempt",
    "QueueBlocked",
    "ReplacedSlice",
    "Requeue",
    "StatusDecision",
    "UnsetReservation",
    "Victim",
]


@dataclass(frozen=True, slots=True)
class ReplacedSlice:
    """The workload slice an admitted slice replaces, and the Finished condition it gets."""

    key: WorkloadKey
    uid: str
    cluster_queue: str
    conditions: tuple[ConditionValue, ...]


@dataclass(frozen=True, slots=True)
class Admit:
    key: WorkloadKey
    uid: str
    cluster_queue: str
    admission: Mapping[str, Any]
    conditions: tuple[ConditionValue, ...]
    replaces: ReplacedSlice | None = None
    generation: int = 0  # of the spec decided on: a write onto another one is dropped
    # A node-failure replacement: status.unhealthyNodes is cleared with the new admission.
    clears_unhealthy_nodes: bool = False


@dataclass(frozen=True, slots=True)
class Victim:
    key: WorkloadKey
    uid: str
    cluster_queue: str
    reason: PreemptionReason
    message: str
    conditions: tuple[ConditionValue, ConditionValue]
    generation: int = 0


@dataclass(frozen=True, slots=True)
class Preempt:
    preemptor_key: WorkloadKey
    cluster_queue: str
    targets: tuple[Victim, ...]


@dataclass(frozen=True, slots=True)
class StatusDecision:
    """A decision that only writes conditions on one workload; subclasses say why."""

    key: WorkloadKey
    uid: str
    cluster_queue: str
    reason: str
    message: str
    conditions: tuple[ConditionValue, ...]
    generation: int = 0


@dataclass(frozen=True, slots=True)
class Pending(StatusDecision):
    """Not admitted this cycle: QuotaReserved=False (and Admitted=False) with upstream's reason, and
    `status.resourceRequests`, what each podSet asks of quota (`PropagateResourceRequests`)."""

    resource_requests: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Evict(StatusDecision):
    """Evict an admitted workload because its queue is stopped with HoldAndDrain."""


@dataclass(frozen=True, slots=True)
class Migrate(StatusDecision):
    """Evict an admitted variant because a more preferred sibling fits (`issueMigration`)."""


@dataclass(frozen=True, slots=True)
class UnsetReservation(StatusDecision):
    """Cancel the quota reservation of a not yet admitted workload whose queue is stopped."""


@dataclass(frozen=True, slots=True)
class Requeue(StatusDecision):
    """Set Requeued=True on a workload parked because its queue was stopped, now restarted."""


@dataclass(frozen=True, slots=True)
class QueueBlocked(StatusDecision):
    """A pending workload's queue blocks it (stopped LocalQueue, inactive ClusterQueue)."""


Decision = Admit | Preempt | Pending | Evict | Migrate | UnsetReservation | Requeue | QueueBlocked
