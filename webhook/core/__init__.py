"""The admission core: pure queueing, quota and scheduling logic over plain data.

Mirrors upstream Kueue's `pkg/scheduler`, `pkg/cache/scheduler`, `pkg/cache/queue` and
`pkg/cache/hierarchy` (commit ff69552e79). No I/O, no clock, no Kubernetes client: the worker feeds
watch events into `AdmissionCore` and turns the returned decisions into API writes. See the module
docstring of `webhook.core.cycle` for the API.
"""

from __future__ import annotations

from webhook.api.constants import PendingReason, PreemptionReason
from webhook.core.cache import Cache, Readiness
from webhook.core.conditions import ConditionValue, RequeueReason
from webhook.core.cycle import AdmissionCore, CycleResult, SchedulerConfig
from webhook.core.decisions import (
    Admit,
    Evict,
    Pending,
    Preempt,
    QueueBlocked,
    Requeue,
    UnsetReservation,
    Victim,
)
from webhook.core.resources import UNLIMITED, FlavorResource
from webhook.core.workload import WorkloadInfo, WorkloadKey, parse_workload

__all__ = [
    "UNLIMITED",
    "AdmissionCore",
    "Admit",
    "Cache",
    "ConditionValue",
    "CycleResult",
    "Evict",
    "FlavorResource",
    "Pending",
    "PendingReason",
    "Preempt",
    "PreemptionReason",
    "QueueBlocked",
    "Readiness",
    "Requeue",
    "RequeueReason",
    "SchedulerConfig",
    "UnsetReservation",
    "Victim",
    "WorkloadInfo",
    "WorkloadKey",
    "parse_workload",
]
