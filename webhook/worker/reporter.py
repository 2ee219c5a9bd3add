"""Prometheus series of the admission worker: counters from decisions, gauges from the core's state.

Mirrors the call sites of `pkg/metrics/metrics.go` in `pkg/scheduler/scheduler.go` (attempts,
QuotaReserved/Admitted, wait times), `pkg/scheduler/preemption/preemption.go` and
`pkg/workload/evict/evict.go` (preemptions, evictions), and the gauge reporting of
`pkg/cache/queue/manager.go` and `pkg/cache/scheduler/cache.go` (pending, reserving, admitted,
status, quota and usage) at upstream commit ff69552e79. Only the lease holder reports, so
`replica_role` is always `leader`.

Gauges are recomputed from the core after each batch of events (the finished and unadmitted
Workload counts from running totals kept on each Workload event): `refresh` sets every series the
current state calls for and removes the ones it no longer does (a deleted ClusterQueue leaves no
stale series behind). Counters and histograms of a ClusterQueue or LocalQueue go on its delete
event (`cluster_queue_deleted`, `local_queue_deleted`; a LocalQueue's also when it stops), as
upstream's `ClearClusterQueueMetrics` and `ClearLocalQueueMetrics` drop them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prometheus_client import Gauge

from webhook import metrics as m
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api import selector
from webhook.config import Configuration, Feature
from webhook.core import concurrent_admission, fair_sharing
from webhook.core.cycle import AdmissionCore, CycleResult
from webhook.core.decisions import Admit, Evict, Migrate, Pending, Preempt
from webhook.core.resource_node import ClusterQueueNode, CohortNode, QuotaNode
from webhook.core.resources import UNLIMITED, FlavorResource, parse_amount

__all__ = [
    "ROLE",
    "MetricsReporter",
    "WorkloadState",
    "execution_seconds",
    "priority_class",
    "queued_since",
    "workload_created",
    "workload_status",
]

ROLE = "leader"


def _parse_time(text: object) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def queued_since(wl: Mapping[str, Any], default: datetime) -> datetime:
    """Creation, or the last Requeued=True transition if later (`workload.QueuedWaitTime`)."""
    created = _parse_time((wl.get("metadata") or {}).get("creationTimestamp")) or default
    requeued = o.find_condition(wl, c.WorkloadCondition.REQUEUED)
    if requeued is not None and requeued.get("status") == "True":
        at = _parse_time(requeued.get("lastTransitionTime"))
        if at is not None and at > created:
            return at
    return created


def _pods_ready_to_evicted(wl: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds from PodsReady=True to Evicted=True (`workloadsWithPodsReadyToEvictedTime`), or None
    when the pods are not ready. The Evicted transition is the one on `wl` when it is already True
    there (an eviction keeps the time of the first one while the condition stays True), else `now`,
    the time the eviction being written gets."""
    ready = o.find_condition(wl, c.WorkloadCondition.PODS_READY)
    ready_at = (
        _parse_time(ready.get("lastTransitionTime")) if ready is not None and ready.get("status") == "True" else None
    )
    if ready_at is None:
        return None
    evicted = o.find_condition(wl, c.WorkloadCondition.EVICTED)
    evicted_at = (
        _parse_time(evicted.get("lastTransitionTime"))
        if evicted is not None and evicted.get("status") == "True"
        else None
    )
    return max(0.0, ((evicted_at or now) - ready_at).total_seconds())


@dataclass(frozen=True, slots=True)
class WorkloadState:
    """What the update-event metrics need of a Workload's previous version."""

    status: str
    cluster_queue: str

    @classmethod
    def of(cls, wl: Mapping[str, Any]) -> WorkloadState:
        return cls(
            workload_status(wl), str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        )


def workload_status(wl: Mapping[str, Any]) -> str:
    """finished, admitted, quotaReserved or pending (upstream `workload.Status`)."""
    for ctype, name in (
        (c.WorkloadCondition.FINISHED, "finished"),
        (c.WorkloadCondition.ADMITTED, "admitted"),
        (c.WorkloadCondition.QUOTA_RESERVED, "quotaReserved"),
    ):
        if (o.find_condition(wl, ctype) or {}).get("status") == "True":
            return name
    return "pending"


def execution_seconds(wl: Mapping[str, Any]) -> float | None:
    """Admitted → Finished, plus `accumulatedPastExecutionTimeSeconds` (`TotalExecutionTime`)."""
    admitted = o.find_condition(wl, c.WorkloadCondition.ADMITTED) or {}
    finished = o.find_condition(wl, c.WorkloadCondition.FINISHED) or {}
    if admitted.get("status") != "True" or finished.get("status") != "True":
        return None
    start, end = _parse_time(admitted.get("lastTransitionTime")), _parse_time(finished.get("lastTransitionTime"))
    if start is None or end is None:
        return None
    past = int((wl.get("status") or {}).get("accumulatedPastExecutionTimeSeconds") or 0)
    return past + (end - start).total_seconds()


def workload_created(job_kind: str, owner: Mapping[str, Any], wl: Mapping[str, Any]) -> None:
    """`workload_creation_latency_seconds`: owner creation → Workload creation, for owners still at
    generation 1, with the custom labels of the Workload's LocalQueue (`RecordWorkloadCreationLatency`).
    Thread-safe (a histogram only)."""
    if int((owner.get("metadata") or {}).get("generation") or 0) > 1:
        return
    owner_at = _parse_time((owner.get("metadata") or {}).get("creationTimestamp"))
    wl_at = _parse_time((wl.get("metadata") or {}).get("creationTimestamp"))
    if owner_at is not None and wl_at is not None:
        lq_key = f"{(wl.get('metadata') or {}).get('namespace', '')}/{(wl.get('spec') or {}).get('queueName') or ''}"
        m.WORKLOAD_CREATION_LATENCY.labels(job_kind, ROLE, sources={m.LOCAL_QUEUE: lq_key}).observe(
            (wl_at - owner_at).total_seconds()
        )


def priority_class(wl: Mapping[str, Any] | None) -> str:
    """The WorkloadPriorityClass or PriorityClass name of a Workload, or ""."""
    ref = ((wl or {}).get("spec") or {}).get("priorityClassRef") or {}
    return str(ref.get("name") or "")


def _value(resource: str, amount: int) -> float:
    if amount >= UNLIMITED:
        return math.inf
    return amount / 1000 if resource == "cpu" else float(amount)


def _root(node: QuotaNode) -> str:
    root = node.root()
    return root.name if root is not node else ""


# Counters and histograms upstream's `ClearClusterQueueMetrics` deletes with a ClusterQueue (by
# `cluster_queue`; preemptions by `preempting_cluster_queue`), and `ClearLocalQueueMetrics` with a
# LocalQueue (by `name` and `namespace`). Gauges follow `refresh`.
_CLUSTER_QUEUE_SERIES = (
    m.QUOTA_RESERVED_WORKLOADS,
    m.QUOTA_RESERVED_WAIT_TIME,
    m.FINISHED_WORKLOADS_TOTAL,
    m.EXECUTION_TIME,
    m.PODS_READY_TO_EVICTED_TIME,
    m.ADMITTED_WORKLOADS,
    m.ADMISSION_WAIT_TIME,
    m.ADMISSION_CHECKS_WAIT_TIME,
    m.READY_WAIT_TIME,
    m.ADMITTED_UNTIL_READY_WAIT_TIME,
    m.EVICTED_WORKLOADS,
    m.EVICTED_WORKLOADS_ONCE,
    m.PREEMPTION_TARGET_RECOMPUTATIONS,
    m.WORKLOAD_EVICTION_LATENCY,
    m.POD_SCHEDULING_GATE_REMOVAL,
    m.REPLACED_WORKLOAD_SLICES,
)
_LOCAL_QUEUE_SERIES = (
    m.LOCAL_QUEUE_QUOTA_RESERVED_WORKLOADS,
    m.LOCAL_QUEUE_QUOTA_RESERVED_WAIT_TIME,
    m.LOCAL_QUEUE_FINISHED_WORKLOADS_TOTAL,
    m.LOCAL_QUEUE_EXECUTION_TIME,
    m.LOCAL_QUEUE_ADMITTED_WORKLOADS,
    m.LOCAL_QUEUE_ADMISSION_WAIT_TIME,
    m.LOCAL_QUEUE_ADMISSION_CHECKS_WAIT_TIME,
    m.LOCAL_QUEUE_READY_WAIT_TIME,
    m.LOCAL_QUEUE_ADMITTED_UNTIL_READY_WAIT_TIME,
    m.LOCAL_QUEUE_EVICTED_WORKLOADS,
)


_UNSET = object()

# Series of gauge families by every label value (`Family.full`).
_Series = dict[m.Family[Gauge], dict[tuple[str, ...], float]]


@dataclass(frozen=True, slots=True)
class _QueueRows:
    """One queue's gauge series and the pending count they were computed with."""

    pending: int
    series: _Series


def _full(series: Mapping[m.Family[Gauge], Mapping[tuple[str, ...], float]]) -> _Series:
    """Series given by the families' own label values, by every label value."""
    return {
        family: {family.full(*labels, ROLE): v for labels, v in values.items()} for family, values in series.items()
    }


class _GaugeSet:
    """Sets a gauge family to exactly the given series, removing those not given any more. Series
    are kept by every label value, custom ones included, so that a queue whose custom values
    changed loses the series of the old ones. Only series whose value changed are set: with 1,000
    ClusterQueues and LocalQueues (upstream's large-scale config) setting all ~20,000 of them at
    every refresh was most of its cost, where upstream sets a queue's gauges when it changes."""

    def __init__(self, gauge: m.Family[Gauge]) -> None:
        self.gauge = gauge
        self.current: dict[tuple[str, ...], float] = {}

    def replace(self, values: Mapping[tuple[str, ...], float]) -> None:
        """`values` by every label value (`Family.full`)."""
        for labels in self.current.keys() - values.keys():
            self.gauge.remove(*labels)
        current = self.current
        for labels, value in values.items():
            if current.get(labels, _UNSET) != value:  # NaN never equals itself: always set
                self.gauge.metric.labels(*labels).set(value)
        self.current = dict(values)

    def update(self, old: Mapping[tuple[str, ...], float], new: Mapping[tuple[str, ...], float]) -> None:
        """Part of the family moves from `old` to `new` series (one queue's), the rest stays."""
        current = self.current
        for labels in old.keys() - new.keys():
            if current.pop(labels, _UNSET) is not _UNSET:
                self.gauge.remove(*labels)
        for labels, value in new.items():
            if current.get(labels, _UNSET) != value:
                self.gauge.metric.labels(*labels).set(value)
                current[labels] = value


class _QueueSeries:
    """The gauge series of every ClusterQueue (or LocalQueue), kept per queue and computed again
    only for a queue marked `stale` or whose pending count moved; the gauges get what changed."""

    def __init__(self, gauge_set: Callable[[m.Family[Gauge]], _GaugeSet]) -> None:
        self._gauge_set = gauge_set
        self.rows: dict[str, _QueueRows] = {}
        self.stale: set[str] = set()

    def update(self, pending: Mapping[str, int], compute: Callable[[str], _Series]) -> None:
        """The queues in `pending` (their pending counts, cheap to read every time) are all there
        are; `compute` gives one queue's series."""
        for key in self.rows.keys() - pending.keys():
            self._apply(self.rows.pop(key).series, {})
        for key, count in pending.items():
            row = self.rows.get(key)
            if row is None or row.pending != count or key in self.stale:
                series = compute(key)
                self._apply(row.series if row is not None else {}, series)
                self.rows[key] = _QueueRows(count, series)
        self.stale.clear()

    def _apply(self, old: _Series, new: _Series) -> None:
        for family in old.keys() | new.keys():
            self._gauge_set(family).update(old.get(family, {}), new.get(family, {}))


class MetricsReporter:
    """Called from the core thread only (the gauges' bookkeeping is not locked)."""

    def __init__(self, config: Configuration) -> None:
        self.cq_resources = config.metrics.enable_cluster_queue_resources
        self.local_queues = (
            config.feature_enabled(Feature.LOCAL_QUEUE_METRICS) and config.metrics.local_queue_metrics.enable
        )
        # metrics.localQueueMetrics.localQueueSelector: only the LocalQueues it picks report
        # (`ShouldExposeLocalQueueMetrics`); whether each does, by `namespace/name`, from its events.
        self._lq_selector = config.metrics.local_queue_metrics.local_queue_selector
        self._lq_exposed: dict[str, bool] = {}
        # The custom labels' values of ClusterQueues, LocalQueues, Cohorts and Workloads, when the
        # series have custom labels (`webhook.metrics.configure`).
        self.custom = m.custom_labels()
        self.cohorts = config.feature_enabled(Feature.METRICS_FOR_COHORTS)
        self.unadmitted = config.feature_enabled(Feature.UNADMITTED_WORKLOADS_OBSERVABILITY)
        self.concurrent_admission = config.feature_enabled(Feature.CONCURRENT_ADMISSION)
        self._evicted_once: set[tuple[str, str, str]] = set()
        self._preemption_skips: dict[str, int] = {}
        # (cluster_queue, cohort) -> share: the last reported, and those of deleted ClusterQueues, which
        # upstream keeps (its gauge is cleared on a cohort change only, not by ClearClusterQueueMetrics).
        self._cq_shares: dict[tuple[str, ...], float] = {}
        self._deleted_cq_shares: dict[tuple[str, ...], float] = {}
        self._sets: dict[int, _GaugeSet] = {}
        # Each ClusterQueue's and LocalQueue's gauge series, until the core reports it changed.
        self._cq_series = _QueueSeries(self._gauge_set)
        self._lq_series = _QueueSeries(self._gauge_set)
        # Workload key -> (LocalQueue key, reason, cause) it counts under, and the count of each row.
        self._rows: dict[str, tuple[str, str, str]] = {}
        self._totals: dict[tuple[str, str, str], int] = {}

    def _set(self, gauge: m.Family[Gauge], values: Mapping[tuple[str, ...], float]) -> None:
        """Set `gauge` to exactly the series `values` gives by their own label values."""
        self._set_full(gauge, {gauge.full(*labels, ROLE): v for labels, v in values.items()})

    def _set_full(self, gauge: m.Family[Gauge], values: Mapping[tuple[str, ...], float]) -> None:
        self._gauge_set(gauge).replace(values)

    def _gauge_set(self, gauge: m.Family[Gauge]) -> _GaugeSet:
        return self._sets.setdefault(id(gauge), _GaugeSet(gauge))

    # == the objects custom labels and the LocalQueue selector read =================================
    def exposes_local_queue(self, key: str) -> bool:
        """Whether the LocalQueue `namespace/name` reports its series (`ShouldExposeLocalQueueMetrics`):
        with a selector, only a LocalQueue seen and picked by it."""
        if not self.local_queues:
            return False
        return self._lq_selector is None or self._lq_exposed.get(key, False)

    def queue_event(self, kind: str, key: str, obj: Mapping[str, Any] | None) -> None:
        """A ClusterQueue, LocalQueue or Cohort (`kind` as its resource) seen or deleted (None): keep its
        custom label values and whether the selector picks a LocalQueue. Core thread only. As the
        Update handlers of `clusterqueue_controller.go` and `localqueue_controller.go` do, a
        ClusterQueue whose values changed loses its replaced-slices series (its gauges follow
        `refresh`), and a LocalQueue that stops being picked, or whose values changed, loses its
        counters and histograms (`clearLocalQueueMetrics`)."""
        source = {"clusterqueues": m.CLUSTER_QUEUE, "localqueues": m.LOCAL_QUEUE, "cohorts": m.COHORT}[kind]
        changed = False
        if self.custom is not None:
            if obj is None:
                self.custom.delete(source, key)
            else:
                changed = self.custom.store(source, key, o.labels(obj), o.annotations(obj))
        # Its series carry its custom values (and a LocalQueue's, whether the selector picks it).
        if source == m.CLUSTER_QUEUE:
            self._cq_series.stale.add(key)
        elif source == m.LOCAL_QUEUE:
            self._lq_series.stale.add(key)
        if source == m.CLUSTER_QUEUE and changed:
            m.remove_series(m.REPLACED_WORKLOAD_SLICES, {"cluster_queue": key})
        if source != m.LOCAL_QUEUE:
            return
        was = self.exposes_local_queue(key)
        if obj is None:
            self._lq_exposed.pop(key, None)
            return
        self._lq_exposed[key] = selector.matches(self._lq_selector, o.labels(obj), nil_matches=True, validated=True)
        if was and (changed or not self.exposes_local_queue(key)):
            namespace, name = key.split("/", 1)
            self.local_queue_deleted(namespace, name)

    # == queue deletions ============================================================================
    def cluster_queue_deleted(self, name: str) -> None:
        """The ClusterQueue's delete event: its counters and histograms go at once, as upstream's queue
        manager clears them (`DeleteClusterQueue`); its gauges go at the next `refresh`."""
        for metric in _CLUSTER_QUEUE_SERIES:
            m.remove_series(metric, {"cluster_queue": name})
        m.remove_series(m.PREEMPTED_WORKLOADS, {"preempting_cluster_queue": name})
        # Set by `cycle` and kept until the ClusterQueue goes; a recreated one starts without it.
        self._preemption_skips.pop(name, None)
        m.remove_series(m.ADMISSION_CYCLE_PREEMPTION_SKIPS, {"cluster_queue": name})
        self._deleted_cq_shares.update({labels: v for labels, v in self._cq_shares.items() if labels[0] == name})

    def local_queue_deleted(self, namespace: str, name: str) -> None:
        """The LocalQueue's delete event, or its stop: both take it out of upstream's queue manager,
        which then clears its counters and histograms (`Manager.DeleteLocalQueue` →
        `ClearLocalQueueMetrics`); its gauges follow `refresh`."""
        for metric in _LOCAL_QUEUE_SERIES:
            m.remove_series(metric, {"name": name, "namespace": namespace})

    # == decisions ==================================================================================
    def cycle(self, result: CycleResult, seconds: float) -> None:
        """One admission attempt per cycle that looked at heads (`AdmissionAttempt`)."""
        for cq, result_label in result.recomputations:
            m.PREEMPTION_TARGET_RECOMPUTATIONS.labels(cq, result_label, ROLE).inc()
        # Upstream sets the gauge only for ClusterQueues with skips in this cycle; the others keep their value.
        self._preemption_skips.update(result.preemption_skips)
        for cq, count in result.preemption_skips.items():
            m.ADMISSION_CYCLE_PREEMPTION_SKIPS.labels(cq, ROLE).set(count)
        if not any(isinstance(d, Admit | Pending | Preempt) for d in result.decisions):
            return
        outcome = "success" if result.admitted else "inadmissible"
        m.ADMISSION_ATTEMPTS.labels(outcome, ROLE).inc()
        m.ADMISSION_ATTEMPT_DURATION.labels(outcome, ROLE).observe(seconds)

    def admitted(self, d: Admit, wl: Mapping[str, Any] | None, now: datetime) -> None:
        pc = priority_class(wl)
        waited = max(0.0, (now - queued_since(wl or {}, now)).total_seconds())
        cq = d.cluster_queue
        m.QUOTA_RESERVED_WORKLOADS.labels(cq, pc, ROLE).inc()
        m.QUOTA_RESERVED_WAIT_TIME.labels(cq, pc, ROLE).observe(waited)
        lq = self._local_queue(wl)
        if lq is not None:
            m.LOCAL_QUEUE_QUOTA_RESERVED_WORKLOADS.labels(*lq, pc, ROLE).inc()
            m.LOCAL_QUEUE_QUOTA_RESERVED_WAIT_TIME.labels(*lq, pc, ROLE).observe(waited)
        if not any(cv.type == c.WorkloadCondition.ADMITTED and cv.status == "True" for cv in d.conditions):
            return
        m.ADMITTED_WORKLOADS.labels(cq, pc, ROLE).inc()
        m.ADMISSION_WAIT_TIME.labels(cq, pc, ROLE).observe(waited)
        m.ADMISSION_CHECKS_WAIT_TIME.labels(cq, pc, ROLE).observe(0)
        if lq is not None:
            m.LOCAL_QUEUE_ADMITTED_WORKLOADS.labels(*lq, pc, ROLE).inc()
            m.LOCAL_QUEUE_ADMISSION_WAIT_TIME.labels(*lq, pc, ROLE).observe(waited)
            m.LOCAL_QUEUE_ADMISSION_CHECKS_WAIT_TIME.labels(*lq, pc, ROLE).observe(0)

    def admitted_by_checks(
        self, wl: Mapping[str, Any], since_reservation: float, cohorts: Iterable[str], now: datetime
    ) -> None:
        """Admitted=True set by the workload controller once every admission check is Ready: admitted
        totals and wait times, the checks' wait since the reservation, and the ancestor `cohorts`'
        subtree counters. Thread-safe (counters and histograms only)."""
        pc = priority_class(wl)
        cq = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        waited = max(0.0, (now - queued_since(wl, now)).total_seconds())
        m.ADMITTED_WORKLOADS.labels(cq, pc, ROLE).inc()
        m.ADMISSION_WAIT_TIME.labels(cq, pc, ROLE).observe(waited)
        m.ADMISSION_CHECKS_WAIT_TIME.labels(cq, pc, ROLE).observe(since_reservation)
        if self.cohorts:
            for co in cohorts:
                m.COHORT_SUBTREE_ADMITTED_WORKLOADS.labels(co, pc, ROLE).inc()
        lq = self._local_queue(wl)
        if lq is not None:
            m.LOCAL_QUEUE_ADMITTED_WORKLOADS.labels(*lq, pc, ROLE).inc()
            m.LOCAL_QUEUE_ADMISSION_WAIT_TIME.labels(*lq, pc, ROLE).observe(waited)
            m.LOCAL_QUEUE_ADMISSION_CHECKS_WAIT_TIME.labels(*lq, pc, ROLE).observe(since_reservation)

    def pods_ready(self, wl: Mapping[str, Any], ready_at: datetime) -> None:
        """PodsReady turned True/Started: time since queued and since admitted (`reconciler.go` step 5)."""
        status = wl.get("status") or {}
        cq = str((status.get("admission") or {}).get("clusterQueue") or "")
        admitted = o.find_condition(wl, c.WorkloadCondition.ADMITTED)
        admitted_at = _parse_time((admitted or {}).get("lastTransitionTime")) or ready_at
        pc = priority_class(wl)
        queued = max(0.0, (ready_at - queued_since(wl, ready_at)).total_seconds())
        since_admitted = max(0.0, (ready_at - admitted_at).total_seconds())
        m.READY_WAIT_TIME.labels(cq, pc, ROLE).observe(queued)
        m.ADMITTED_UNTIL_READY_WAIT_TIME.labels(cq, pc, ROLE).observe(since_admitted)
        lq = self._local_queue(wl)
        if lq is not None:
            m.LOCAL_QUEUE_READY_WAIT_TIME.labels(*lq, pc, ROLE).observe(queued)
            m.LOCAL_QUEUE_ADMITTED_UNTIL_READY_WAIT_TIME.labels(*lq, pc, ROLE).observe(since_admitted)

    def _local_queue(self, wl: Mapping[str, Any] | None) -> tuple[str, str] | None:
        """(name, namespace) of the Workload's LocalQueue when that reports its series."""
        if not self.local_queues or wl is None:
            return None
        name, namespace = str((wl.get("spec") or {}).get("queueName") or ""), str(wl["metadata"].get("namespace") or "")
        return (name, namespace) if self.exposes_local_queue(f"{namespace}/{name}") else None

    def evicted(
        self,
        key: str,
        cluster_queue: str,
        reason: str,
        wl: Mapping[str, Any] | None,
        underlying_cause: str = "",
        now: datetime | None = None,
    ) -> None:
        pc = priority_class(wl)
        m.EVICTED_WORKLOADS.labels(cluster_queue, reason, underlying_cause, pc, ROLE).inc()
        seconds = _pods_ready_to_evicted(wl, now or datetime.now(UTC)) if wl is not None else None
        if seconds is not None:
            m.PODS_READY_TO_EVICTED_TIME.labels(cluster_queue, reason, underlying_cause, ROLE).observe(seconds)
        once = (key, reason, underlying_cause)
        if once not in self._evicted_once:
            self._evicted_once.add(once)
            m.EVICTED_WORKLOADS_ONCE.labels(cluster_queue, reason, underlying_cause, pc, ROLE).inc()
        lq = self._local_queue(wl)
        if lq is not None:
            m.LOCAL_QUEUE_EVICTED_WORKLOADS.labels(*lq, reason, underlying_cause, pc, ROLE).inc()

    def preempted(
        self, d: Preempt, workloads: Mapping[str, Mapping[str, Any] | None], now: datetime | None = None
    ) -> None:
        for v in d.targets:
            m.PREEMPTED_WORKLOADS.labels(d.cluster_queue, str(v.reason), ROLE).inc()
            self.evicted(str(v.key), v.cluster_queue, c.EvictionReason.PREEMPTED, workloads.get(str(v.key)), now=now)

    def drained(self, d: Evict | Migrate, wl: Mapping[str, Any] | None, now: datetime | None = None) -> None:
        self.evicted(str(d.key), d.cluster_queue, d.reason, wl, now=now)

    # == Workload update events (`workload_controller.go`'s Update handler) ========================
    def workload_updated(self, before: WorkloadState, new: Mapping[str, Any], now: datetime) -> None:
        """Series observed on a Workload's status transition: finished totals and execution time
        on becoming Finished; eviction latency on going back to pending while Evicted=True.
        Called from the informer thread: only counters and histograms, which lock themselves."""
        after = workload_status(new)
        if after == "finished" and before.status != "finished":
            self._finished(new)
        if before.status in ("quotaReserved", "admitted") and after == "pending" and before.cluster_queue:
            evicted = o.find_condition(new, c.WorkloadCondition.EVICTED)
            at = _parse_time((evicted or {}).get("lastTransitionTime"))
            if evicted is not None and evicted.get("status") == "True" and at is not None:
                m.WORKLOAD_EVICTION_LATENCY.labels(
                    before.cluster_queue, str(evicted.get("reason") or ""), ROLE
                ).observe((now - at).total_seconds())

    def _finished(self, wl: Mapping[str, Any]) -> None:
        pc = priority_class(wl)
        cq = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        m.FINISHED_WORKLOADS_TOTAL.labels(cq, pc, ROLE).inc()
        lq = self._local_queue(wl)
        if lq is not None:
            m.LOCAL_QUEUE_FINISHED_WORKLOADS_TOTAL.labels(*lq, pc, ROLE).inc()
        finished = o.find_condition(wl, c.WorkloadCondition.FINISHED) or {}
        if cq and finished.get("reason") == c.FinishedReason.WORKLOAD_SLICE_REPLACED:
            # Upstream counts only the slices its scheduler finishes (`replaceWorkloadSlice`); the Job
            # reconciler finishing one first (`normalizeActiveSlices`) would go uncounted. Counted on
            # the transition, every replaced slice counts once, whichever controller wrote it.
            m.REPLACED_WORKLOAD_SLICES.labels(cq, ROLE).inc()
        seconds = execution_seconds(wl)
        if seconds is not None:
            m.EXECUTION_TIME.labels(cq, pc, ROLE).observe(seconds)
            if lq is not None:
                m.LOCAL_QUEUE_EXECUTION_TIME.labels(*lq, pc, ROLE).observe(seconds)

    # == gauges =====================================================================================
    def refresh(self, core: AdmissionCore) -> None:
        """Every gauge, from the core and the running totals of Workloads (`workload_event`). The
        series of a ClusterQueue or LocalQueue are computed again only when the core reports the
        queue changed (`take_status_changes`) or its pending counts moved, as upstream's cache and
        queue manager set a queue's gauges when it changes: computing all of them for 1,000 queues
        was the core thread's largest cost at upstream's large-scale config (bench_core_scale)."""
        cache, queues = core.cache, core.queues
        changes = core.take_status_changes("gauges")
        for series, changed in (
            (self._cq_series, None if changes is None else changes.cluster_queues),
            (self._lq_series, None if changes is None else changes.local_queues),
        ):
            series.stale.update(series.rows if changed is None else changed)
        counts = {name: queues.pending_in_cluster_queue(name) for name in cache.cluster_queues}
        self._cq_series.update(
            {name: sum(count) for name, count in counts.items()}, lambda name: self._cluster_queue_series(core, name)
        )
        # Inadmissible Workloads requeued move between these two at every quota release in a
        # cohort, without any other series of their ClusterQueue changing: read every time.
        family = m.PENDING_WORKLOADS
        pending: dict[tuple[str, ...], float] = {}
        for name, (active, inadmissible) in counts.items():
            if not cache.readiness(name).active:
                active, inadmissible = 0, active + inadmissible
            pending[family.full(name, "active", ROLE)] = active
            pending[family.full(name, "inadmissible", ROLE)] = inadmissible
        self._set_full(family, pending)
        self._preemption_skips = {cq: n for cq, n in self._preemption_skips.items() if cq in cache.cluster_queues}
        self._set(m.ADMISSION_CYCLE_PREEMPTION_SKIPS, {(cq,): n for cq, n in self._preemption_skips.items()})
        if self.local_queues:
            self._refresh_local_queues(core)
        if self.cohorts:
            self._refresh_cohorts(core)
        self._refresh_workload_counts(core)
        self._refresh_weighted_shares(core)

    def _cluster_queue_series(self, core: AdmissionCore, name: str) -> _Series:
        """The gauges of one ClusterQueue but its pending counts, by every label value."""
        cache = core.cache
        node = cache.cluster_queues[name]
        readiness = cache.readiness(name)
        plain: dict[m.Family[Gauge], dict[tuple[str, ...], float]] = {
            m.RESERVING_ACTIVE_WORKLOADS: {(name,): len(node.workloads)},
            m.CLUSTER_QUEUE_STATUS: {
                (name, st): 1 if readiness.status == st else 0 for st in ("pending", "active", "terminating")
            },
            m.CLUSTER_QUEUE_INFO: {(name, node.parent.name if node.parent else "", _root(node)): 1},
        }
        if self.cq_resources:
            quota: dict[str, dict[tuple[str, ...], float]] = {
                "nominal": {},
                "borrowing": {},
                "lending": {},
                "reservation": {},
                "usage": {},
                "pending": {},
            }
            self._cq_resources(core, name, quota)
            plain[m.CLUSTER_QUEUE_NOMINAL_QUOTA] = quota["nominal"]
            plain[m.CLUSTER_QUEUE_BORROWING_LIMIT] = quota["borrowing"]
            plain[m.CLUSTER_QUEUE_LENDING_LIMIT] = quota["lending"]
            plain[m.CLUSTER_QUEUE_RESOURCE_RESERVATION] = quota["reservation"]
            plain[m.CLUSTER_QUEUE_RESOURCE_USAGE] = quota["usage"]
            plain[m.CLUSTER_QUEUE_RESOURCE_PENDING] = quota["pending"]
        out = _full(plain)
        self._count_admitted(name, node, out.setdefault(m.ADMITTED_ACTIVE_WORKLOADS, {}))
        return out

    def _count_admitted(self, name: str, node: ClusterQueueNode, out: dict[tuple[str, ...], float]) -> None:
        """`admitted_active_workloads` of ClusterQueue `name`, split by the custom labels of its
        admitted Workloads when there are Workload-kind ones (`getLabelValuesFor`); 0 in the series
        without Workload values when it has none admitted."""
        family = m.ADMITTED_ACTIVE_WORKLOADS
        out[family.full(name, ROLE, sources={m.CLUSTER_QUEUE: name})] = 0
        for key, w in node.workloads.items():
            if w.is_admitted:
                labels = family.full(name, ROLE, sources={m.CLUSTER_QUEUE: name, m.WORKLOAD: str(key)})
                out[labels] = out.get(labels, 0) + 1

    # == running totals of Workloads (`AddFinishedWorkload`, `getUnadmittedWorkloadStatus`) ==========
    def workload_event(self, key: str, wl: Mapping[str, Any] | None) -> None:
        """Keep the finished and unadmitted counts as running totals, one row per Workload replaced on
        each of its watch events (None: deleted), as upstream's queue manager counts them on its
        events, instead of walking every Workload at each refresh. Core thread only."""
        if self.custom is not None:
            if wl is None:
                self.custom.delete(m.WORKLOAD, key)
            elif self.custom.store(m.WORKLOAD, key, o.labels(wl), o.annotations(wl)):
                # Relabelled: its ClusterQueue's admitted series carry the Workload's custom values.
                admission = (wl.get("status") or {}).get("admission") or {}
                self._cq_series.stale.add(str(admission.get("clusterQueue") or ""))
        row = None if wl is None else self._count_row(wl)
        old = self._rows.get(key)
        if old == row:
            return
        if old is not None:
            left = self._totals[old] - 1
            if left:
                self._totals[old] = left
            else:
                del self._totals[old]
        if row is None:
            self._rows.pop(key, None)
        else:
            self._rows[key] = row
            self._totals[row] = self._totals.get(row, 0) + 1

    def _count_row(self, wl: Mapping[str, Any]) -> tuple[str, str, str] | None:
        """(LocalQueue key, Admitted reason, QuotaReserved cause) a Workload counts under; reason
        "finished" for a finished one; None when it counts nowhere (admitted, being deleted, a variant)."""
        if self.concurrent_admission and concurrent_admission.is_variant(wl):
            return None  # its parent is the one counted (`AddFinishedWorkload`, `getUnadmittedWorkloadStatus`)
        meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
        lq_key = f"{meta.get('namespace')}/{spec.get('queueName') or ''}"
        status = workload_status(wl)
        if status == "finished":
            return lq_key, "finished", ""
        if status == "admitted" or meta.get("deletionTimestamp"):
            return None
        admitted = o.find_condition(wl, c.WorkloadCondition.ADMITTED)
        reason = str(admitted.get("reason") or "") if admitted is not None else "NoReservation"
        reserved = o.find_condition(wl, c.WorkloadCondition.QUOTA_RESERVED)
        cause = (
            "PendingEvaluation"
            if reserved is None
            else ""
            if reserved.get("status") == "True"
            else str(reserved.get("reason") or "")
        )
        return lq_key, reason, cause

    def _refresh_workload_counts(self, core: AdmissionCore) -> None:
        """Finished Workloads still present, and unadmitted ones by (Admitted reason, QuotaReserved
        reason), counted against their LocalQueue's ClusterQueue (`pkg/cache/queue/manager.go`,
        `unadmitted_workloads.go`), from the running totals. Every ClusterQueue and LocalQueue with a
        LocalQueue gets a finished series, 0 included; unadmitted series exist while their count is positive."""
        cache = core.cache
        # A stopped LocalQueue is out of the queue manager, and so are its Workloads' counts.
        queued = core.queues.local_queues
        lq_finished: dict[tuple[str, ...], float] = {
            (lq.name, lq.namespace): 0 for key, lq in cache.local_queues.items() if key in queued
        }
        exposed = {(lq.name, lq.namespace) for key, lq in cache.local_queues.items() if self.exposes_local_queue(key)}
        cq_finished: dict[tuple[str, ...], float] = {
            (lq.cluster_queue,): 0 for lq in cache.local_queues.values() if lq.cluster_queue in cache.cluster_queues
        }
        unadmitted: dict[tuple[str, ...], float] = {}
        lq_unadmitted: dict[tuple[str, ...], float] = {}
        for (lq_key, reason, cause), count in self._totals.items():
            lq = cache.local_queues.get(lq_key) if lq_key in queued else None
            cq = lq.cluster_queue if lq is not None else ""
            if reason == "finished":
                if lq is not None:
                    lq_finished[(lq.name, lq.namespace)] += count
                    if (cq,) in cq_finished:
                        cq_finished[(cq,)] += count
                continue
            if not cq:
                continue
            unadmitted[(cq, reason, cause)] = unadmitted.get((cq, reason, cause), 0) + count
            if lq is not None:
                labels = (lq.name, lq.namespace, cq, reason, cause)
                lq_unadmitted[labels] = lq_unadmitted.get(labels, 0) + count
        self._set(m.FINISHED_WORKLOADS, cq_finished)
        if self.unadmitted:
            self._set(m.UNADMITTED_WORKLOADS, unadmitted)
        if self.local_queues:
            # Upstream reports the unadmitted counts of every LocalQueue whatever the selector
            # (`unadmitted_workloads.go` asks only `IsEnabled`), unlike all its other LocalQueue
            # series; here the selector picks them all alike.
            self._set(m.LOCAL_QUEUE_FINISHED_WORKLOADS, {k: v for k, v in lq_finished.items() if k in exposed})
            if self.unadmitted:
                self._set(
                    m.LOCAL_QUEUE_UNADMITTED_WORKLOADS, {k: v for k, v in lq_unadmitted.items() if k[:2] in exposed}
                )

    def _refresh_weighted_shares(self, core: AdmissionCore) -> None:
        """With fair sharing: `cluster_queue_weighted_share` (also needs enableClusterQueueResources;
        NaN for +Inf) and `cohort_weighted_share` of every Cohort object (+Inf stays +Inf, as
        upstream's code reports it whatever its help text says)."""
        if not core.config.fair_sharing:
            return
        cache = core.cache
        if self.cq_resources:
            self._cq_shares = {
                (name, node.spec.cohort): _share(node, nan_for_inf=True)
                for name, node in sorted(cache.cluster_queues.items())
            }
            # A recreated ClusterQueue reports afresh; until then a deleted one's last share stays.
            self._deleted_cq_shares = {
                k: v for k, v in self._deleted_cq_shares.items() if k[0] not in cache.cluster_queues
            }
            self._set(m.CLUSTER_QUEUE_WEIGHTED_SHARE, {**self._deleted_cq_shares, **self._cq_shares})
        self._set(
            m.COHORT_WEIGHTED_SHARE,
            {
                (name,): _share(node, nan_for_inf=False)
                for name, node in sorted(cache.forest.cohorts.items())
                if node.explicit
            },
        )

    def _cq_resources(self, core: AdmissionCore, name: str, out: dict[str, dict[tuple[str, ...], float]]) -> None:
        node = core.cache.cluster_queues[name]
        spec = node.spec
        reserved = core.cache.cq_usage(name)
        used = core.cache.cq_usage(name, admitted_only=True)
        for rg in spec.resource_groups:
            for fq in rg.flavors:
                for res in sorted(rg.covered_resources):
                    fr = FlavorResource(fq.name, res)
                    labels = (spec.cohort, name, fq.name, res)
                    q = spec.quotas.get(fr)
                    out["nominal"][labels] = _value(res, q.nominal if q else 0)
                    out["borrowing"][labels] = (
                        math.inf if q is None or q.borrowing_limit is None else _value(res, q.borrowing_limit)
                    )
                    out["lending"][labels] = (
                        math.inf if q is None or q.lending_limit is None else _value(res, q.lending_limit)
                    )
                    out["reservation"][labels] = _value(res, reserved.get(fr, 0))
                    out["usage"][labels] = _value(res, used.get(fr, 0))
        # Every configured resource has a series, 0 when nothing is pending (`UpdateConfiguredResources`).
        pending = dict.fromkeys((r for rg in spec.resource_groups for r in rg.covered_resources), 0)
        pending.update(core.queues.pending_requests_in_cluster_queue(name))
        for res, amount in pending.items():
            out["pending"][(name, res)] = _value(res, amount)

    def _refresh_local_queues(self, core: AdmissionCore) -> None:
        cache = core.cache
        self._lq_series.update(
            {
                key: core.queues.pending_in_local_queue(key)
                for key in cache.local_queues
                if self.exposes_local_queue(key)
            },
            lambda key: self._local_queue_series(core, key),
        )
        if core.afs is not None:
            # Upstream sets it with each sample's status write (`reportAfsUsage`): a LocalQueue
            # appears once first sampled, and shows its pending entry penalties as they come.
            self._set(
                m.LOCAL_QUEUE_ADMISSION_FAIR_SHARING_USAGE,
                {
                    (lq.name, lq.namespace, lq.cluster_queue): core.afs.usage(key)
                    for key, lq in sorted(cache.local_queues.items())
                    if core.afs.status(key) is not None
                },
            )

    @staticmethod
    def _local_queue_series(core: AdmissionCore, key: str) -> _Series:
        """The gauges of one LocalQueue, by every label value."""
        cache = core.cache
        lq = cache.local_queues[key]
        labels = (lq.name, lq.namespace)
        st = core.local_queue_status(lq.namespace, lq.name)
        cq_active = lq.cluster_queue in cache.cluster_queues and cache.readiness(lq.cluster_queue).active
        pending: dict[tuple[str, ...], float] = {}
        reserving: dict[tuple[str, ...], float] = {}
        admitted: dict[tuple[str, ...], float] = {}
        reservation: dict[tuple[str, ...], float] = {}
        usage: dict[tuple[str, ...], float] = {}
        if key in core.queues.local_queues:  # not once stopped: upstream's queue manager drops it
            count = int(st.get("pendingWorkloads") or 0)
            pending[(*labels, "active")] = count if cq_active else 0
            pending[(*labels, "inadmissible")] = 0 if cq_active else count
        if lq.cluster_queue in cache.cluster_queues:
            # Upstream's scheduler cache reports these only for a LocalQueue attached to a live
            # ClusterQueue: `DeleteClusterQueue` clears them (`ClearLocalQueueCacheMetrics`) and
            # `addLocalQueue` reports them again once the ClusterQueue is back.
            reserving[labels] = int(st.get("reservingWorkloads") or 0)
            admitted[labels] = int(st.get("admittedWorkloads") or 0)
        active = next((cond["status"] for cond in st.get("conditions") or () if cond["type"] == "Active"), "Unknown")
        for field, out in (("flavorsReservation", reservation), ("flavorsUsage", usage)):
            for fl in st.get(field) or ():
                for r in fl["resources"]:
                    out[(*labels, fl["name"], r["name"])] = _quantity(r["name"], r["total"])
        return _full(
            {
                m.LOCAL_QUEUE_PENDING_WORKLOADS: pending,
                m.LOCAL_QUEUE_RESERVING_ACTIVE_WORKLOADS: reserving,
                m.LOCAL_QUEUE_ADMITTED_ACTIVE_WORKLOADS: admitted,
                m.LOCAL_QUEUE_STATUS: {
                    (*labels, value): 1 if active == value else 0 for value in ("True", "False", "Unknown")
                },
                m.LOCAL_QUEUE_RESOURCE_RESERVATION: reservation,
                m.LOCAL_QUEUE_RESOURCE_USAGE: usage,
            }
        )

    def _refresh_cohorts(self, core: AdmissionCore) -> None:
        info: dict[tuple[str, ...], float] = {}
        quota: dict[tuple[str, ...], float] = {}
        reservations: dict[tuple[str, ...], float] = {}
        admitted: dict[tuple[str, ...], float] = {}
        for name in sorted(core.cache.forest.cohorts):
            co: CohortNode = core.cache.forest.cohorts[name]
            info[(name, co.parent.name if co.parent else "", _root(co))] = 1
            for fr in sorted(set(co.subtree_quota) | set(co.usage), key=lambda x: (x.flavor, x.resource)):
                quota[(name, fr.flavor, fr.resource)] = _value(fr.resource, co.subtree_quota.get(fr, 0))
                reservations[(name, fr.flavor, fr.resource)] = _value(fr.resource, co.usage.get(fr, 0))
            # Upstream labels this series with the custom labels of whichever ClusterQueue of the
            # subtree last changed, so a Cohort whose ClusterQueues differ in them gets one series
            # per value, each holding the subtree's count at that ClusterQueue's last change. Here
            # each series counts the admitted Workloads of the subtree's ClusterQueues with those values.
            family = m.COHORT_SUBTREE_ADMITTED_ACTIVE_WORKLOADS
            cqs = list(co.subtree_cluster_queues())
            if not cqs:
                admitted[family.full(name, ROLE, sources={})] = 0
            for cq in cqs:
                labels = family.full(name, ROLE, sources={m.CLUSTER_QUEUE: cq.name})
                row = self._cq_series.rows.get(cq.name)  # this refresh's; its admitted series add up
                count = sum(row.series[m.ADMITTED_ACTIVE_WORKLOADS].values()) if row is not None else 0
                admitted[labels] = admitted.get(labels, 0) + count
        self._set(m.COHORT_INFO, info)
        self._set(m.COHORT_SUBTREE_QUOTA, quota)
        self._set(m.COHORT_SUBTREE_RESOURCE_RESERVATIONS, reservations)
        self._set_full(m.COHORT_SUBTREE_ADMITTED_ACTIVE_WORKLOADS, admitted)

    def admitted_in_cohort(self, core: AdmissionCore, d: Admit, wl: Mapping[str, Any] | None) -> None:
        """`cohort_subtree_admitted_workloads_total` for every ancestor cohort of the ClusterQueue."""
        if not self.cohorts:
            return
        node = core.cache.cluster_queues.get(d.cluster_queue)
        if node is None:
            return
        pc = priority_class(wl)
        for co in node.path_to_root():
            m.COHORT_SUBTREE_ADMITTED_WORKLOADS.labels(co.name, pc, ROLE).inc()


def _share(node: QuotaNode, *, nan_for_inf: bool) -> float:
    """`PreciseWeightedShare`: the unrounded share, +Inf for a zero-weight borrower."""
    share = fair_sharing.dominant_resource_share(node).precise_share()
    if share is None:
        return math.nan if nan_for_inf else math.inf
    return float(share)


def _quantity(resource: str, text: str) -> float:
    return _value(resource, parse_amount(resource, text))
