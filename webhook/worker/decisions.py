"""The admission core's decisions as Workload status writes, events and metrics.

Each decision of a scheduling cycle (`core.cycle`: Admit, Preempt, Pending, Evict, Migrate,
UnsetReservation, Requeue, QueueBlocked) becomes one guarded status write queued for the writers
(`writers.StatusWrite`, first in line), with the event and the metrics upstream records for it:
the writes of `pkg/scheduler/scheduler.go` (admit, preempt, pending), `replaceWorkloadSlice` and
the queue-state writes of `pkg/controller/core/workload_controller.go` (stopPolicy, inactive or
missing queues, v0.19.2). Called from the Manager's core thread only; a failed write goes back to
the core as a typed message (`notify`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, assert_never

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.core import conditions
from webhook.core.admission_checks import reset_on_eviction
from webhook.core.conditions import ConditionValue
from webhook.core.cycle import AdmissionCore, CycleResult
from webhook.core.decisions import (
    Admit,
    Evict,
    Migrate,
    Pending,
    Preempt,
    QueueBlocked,
    ReplacedSlice,
    Requeue,
    StatusDecision,
    UnsetReservation,
)
from webhook.worker import events
from webhook.worker import messages as msg
from webhook.worker.reporter import MetricsReporter
from webhook.worker.status import count_eviction, reset_cluster_nomination, set_condition
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import WorkQueue
from webhook.worker.writers import Call, StatusWrite

__all__ = ["ADMISSION_CONTROLLER", "WORKLOAD_CONTROLLER", "DecisionWriter", "QueueRoutes"]

log = logging.getLogger(__name__)

ADMISSION_CONTROLLER = "kueue-admission"
WORKLOAD_CONTROLLER = "kueue-workload-controller"

QueueRoutes = tuple[dict[str, str], dict[str, bool]]
Mutate = Callable[[dict[str, Any], Mapping[str, Any]], None]


def _gen(obj: Mapping[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("generation") or 0)


class DecisionWriter:
    """Turns a cycle's decisions into queued writes. `admitting` holds the Workloads whose Admit
    write is queued or in flight (the Manager's `_feed` skips older events for them until the
    reservation shows)."""

    def __init__(
        self,
        core: AdmissionCore,
        store: Store,
        writes: WorkQueue[StatusWrite | Call],
        recorder: events.Recorder,
        reporter: MetricsReporter,
        notify: Callable[[msg.CoreMessage], None],
    ) -> None:
        self.core = core
        self.store = store
        self.writes = writes
        self.recorder = recorder
        self.reporter = reporter
        self.notify = notify
        self.admitting: set[str] = set()
        # Write keys of the victims' Preempted writes and of the pending reports dispatched since the
        # last cycle's writes were all done (see `cycle_writing`).
        self._cycle_writes: set[str] = set()

    def cycle_writing(self) -> bool:
        """Whether a victim's Preempted write or a pending-status write of the last cycles is still
        queued or in flight. Upstream's cycle ends only after both: it waits for its preemption
        patches (`IssuePreemptions`, behind the admission patches already waiting on the client's
        token bucket) and patches each head it did not admit (`requeueAndUpdate`, synchronously).
        So no later cycle decides before the evictions are written, and an inadmissible requeue that
        comes due meanwhile finds the head in flight and sends it back to the heap
        (`queueInadmissibleCycle >= popCycle`) instead of the next cycle trying the Workload behind
        it; the core loop holds its next cycle the same way."""
        if self._cycle_writes and not self.writes.busy(self._cycle_writes):
            self._cycle_writes.clear()
        return bool(self._cycle_writes)

    def _wl_path(self, key: str) -> str:
        ns, name = key.split("/", 1)
        return k.object_path(c.V1BETA2, "workloads", ns, name)

    def _log_and_write(
        self,
        message: str,
        key: str,
        decision: str,
        fields: Mapping[str, str],
        mutate: Mutate,
        *,
        on_failure: Callable[[], None] | None = None,
        on_success: Callable[[], None] | None = None,
        uid: str = "",
        generation: int = 0,
        first: bool = True,
    ) -> str:
        """Log `decision` on the Workload `key` (`namespace/name`) with `fields`, then queue its
        status write (ahead of the backlog unless `first` is False); the write's key. Every decision
        is logged and written this way, so their log lines and write keys stay alike."""
        log.info(message, extra={"object": key, "kind": "Workload", "decision": decision, **fields})
        write_key = f"workloads/{key}"
        self.writes.add(
            write_key,
            StatusWrite("workloads", self._wl_path(key), mutate, on_failure, on_success, uid, generation),
            first=first,
        )
        return write_key

    def dispatch(self, result: CycleResult, now: datetime) -> None:
        """Queue the writes of every decision of a cycle, in the cycle's order."""
        for d in result.decisions:
            match d:
                case Admit():
                    self._admit(d, now)
                case Preempt():
                    self._preempt(d, now)
                case Pending():
                    self._pending(d, now)
                case Evict():
                    self._evict(d, now)
                case Migrate():
                    self._evict(d, now, controller=ADMISSION_CONTROLLER)
                case UnsetReservation():
                    self._unset_reservation(d, now)
                case Requeue():
                    self._requeue(d, now)
                case QueueBlocked():
                    self._set_pending(
                        str(d.key), d.cluster_queue, d.conditions, now, event=False, decided=(d.uid, d.generation)
                    )
                case _:
                    assert_never(d)

    def _admit(self, d: Admit, now: datetime) -> None:
        admission = dict(d.admission)
        conds = [cv.to_api(now) for cv in d.conditions]
        key = str(d.key)

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            status["admission"] = admission
            # podSetAssignments' resourceUsage supersedes it (upstream's `admissionStatusPatch`).
            status.pop("resourceRequests", None)
            if d.clears_unhealthy_nodes:
                # The failed node is replaced: the recovery field goes (`admit`, TAS second pass).
                status.pop("unhealthyNodes", None)
            for cond in conds:
                set_condition(status, cond, now, _gen(obj))

        def failed() -> None:
            self.notify(msg.AdmissionFailed(key))

        replaced = d.replaces
        succeeded = None if replaced is None else (lambda: self._replace_slice(replaced, key, datetime.now(UTC)))
        self.admitting.add(key)
        self._log_and_write(
            "admitted",
            key,
            "Admit",
            {"cluster_queue": d.cluster_queue},
            mutate,
            on_failure=failed,
            on_success=succeeded,
            uid=d.uid,
            generation=d.generation,
        )
        if d.clears_unhealthy_nodes:
            return  # a repaired placement of a workload already admitted: nothing new to count
        wl = self.store.get("workloads", key)
        self.reporter.admitted(d, wl, now)
        self.reporter.admitted_in_cohort(self.core, d, wl)
        if wl is not None:
            created = (
                datetime.fromisoformat(str(wl["metadata"].get("creationTimestamp", "")).replace("Z", "+00:00"))
                if wl["metadata"].get("creationTimestamp")
                else now
            )
            waited = max(0, int((now - created).total_seconds()))
            self.recorder.emit(
                wl,
                "Normal",
                "QuotaReserved",
                f"Quota reserved in ClusterQueue {d.cluster_queue}, wait time since queued was {waited}s",
                ADMISSION_CONTROLLER,
            )
            if any(cv.type == c.WorkloadCondition.ADMITTED and cv.status == "True" for cv in d.conditions):
                self.recorder.emit(
                    wl,
                    "Normal",
                    "Admitted",
                    f"Admitted by ClusterQueue {d.cluster_queue}, wait time since reservation was 0s",
                    ADMISSION_CONTROLLER,
                )

    def _replace_slice(self, old: ReplacedSlice, new_key: str, now: datetime) -> None:
        """`replaceWorkloadSlice`, once the new slice's admission is written: the old slice is
        finished (its quota leaves the cache with that event) and an event records it; the metric
        counts the Finished transition when the watch reports it (`MetricsReporter.workload_updated`).
        A failed write is left to the Job reconciler, which finishes a replaced slice too."""
        key = str(old.key)
        conds = [cv.to_api(now) for cv in old.conditions]
        wl = self.store.get("workloads", key)
        if wl is None or o.is_condition_true(wl, c.WorkloadCondition.FINISHED):
            return

        finished_here = [False]  # by the last attempt of the write

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            finished_here[0] = (o.find_condition(obj, c.WorkloadCondition.FINISHED) or {}).get("status") != "True"
            if not finished_here[0]:
                return  # finished meanwhile (e.g. by the Job reconciler): nothing to record
            for cond in conds:
                set_condition(status, cond, now, _gen(obj))

        def replaced() -> None:
            if not finished_here[0]:
                return
            self.recorder.emit(
                wl, "Normal", c.FinishedReason.WORKLOAD_SLICE_REPLACED, old.conditions[0].message, ADMISSION_CONTROLLER
            )

        self._log_and_write(
            "workload slice replaced",
            key,
            "Replaced",
            {"replacement": new_key, "cluster_queue": old.cluster_queue},
            mutate,
            on_success=replaced,
            uid=old.uid,
        )

    def _preempt(self, d: Preempt, now: datetime) -> None:
        self.reporter.preempted(d, {str(v.key): self.store.get("workloads", str(v.key)) for v in d.targets}, now)
        for v in d.targets:
            conds = [cv.to_api(now) for cv in v.conditions]

            def mutate(
                status: dict[str, Any], obj: Mapping[str, Any], conds: Sequence[Mapping[str, Any]] = conds
            ) -> None:
                if not o.is_condition_true(obj, c.WorkloadCondition.EVICTED):  # `IssuePreemptions` skips those
                    count_eviction(status, c.EvictionReason.PREEMPTED)
                    reset_cluster_nomination(status)
                for cond in conds:
                    gen = None if cond["type"] == c.WorkloadCondition.PREEMPTED else _gen(obj)
                    set_condition(
                        status, {key: val for key, val in cond.items() if key != "observedGeneration"}, now, gen
                    )

            write_key = self._log_and_write(
                "preempting",
                str(v.key),
                "Preempt",
                {"preemptor": str(d.preemptor_key), "reason": str(v.reason), "cluster_queue": v.cluster_queue},
                mutate,
                on_failure=self._write_failed(str(v.key)),
                uid=v.uid,
                generation=v.generation,
            )
            self._cycle_writes.add(write_key)
            wl = self.store.get("workloads", str(v.key))
            if wl is not None:
                self.recorder.emit(wl, "Normal", "Preempted", v.message, ADMISSION_CONTROLLER)

    # -- queue-state decisions (stopPolicy, activity; `workload_controller.go`) --------------------
    def _write_failed(self, key: str) -> Callable[[], None]:
        def failed() -> None:
            self.notify(msg.WriteFailed(key))

        return failed

    def _write_decision(self, message: str, d: StatusDecision, mutate: Mutate, **fields: str) -> None:
        """`_log_and_write` for an Evict, Migrate, UnsetReservation or Requeue: each is named by its
        type, logs its reason and ClusterQueue, and tells the core when its write fails."""
        key = str(d.key)
        self._log_and_write(
            message,
            key,
            type(d).__name__,
            {"reason": d.reason, **fields, "cluster_queue": d.cluster_queue},
            mutate,
            on_failure=self._write_failed(key),
            uid=d.uid,
            generation=d.generation,
        )

    def _evict(self, d: Evict | Migrate, now: datetime, *, controller: str = WORKLOAD_CONTROLLER) -> None:
        """Evicted=True on an admitted workload of a HoldAndDrain queue, or on a variant whose parent
        migrates; the Job reconciler (the variant controller for a variant) then clears the admission.
        As `prepareForEviction`: checks back to Pending, BlockedOnPreemptionGates off, gates closed."""
        key = str(d.key)
        conds = [cv.to_api(now) for cv in d.conditions]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            for cond in conds:
                set_condition(status, cond, now, _gen(obj))
            count_eviction(status, d.reason)
            reset_cluster_nomination(status)
            if status.get("admissionChecks"):
                status["admissionChecks"] = reset_on_eviction(status["admissionChecks"], now)
            if o.is_condition_true(obj, c.WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES):
                set_condition(
                    status,
                    {
                        "type": c.WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES,
                        "status": "False",
                        "reason": d.reason,
                        "message": d.message,
                    },
                    now,
                    _gen(obj),
                )
            for gate in status.get("preemptionGates") or ():
                gate.update(position="Closed", lastTransitionTime=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
            status.pop("unhealthyNodes", None)  # `resetUnhealthyNodes`

        self._write_decision("evicting", d, mutate)
        wl = self.store.get("workloads", key)
        self.reporter.drained(d, wl, now)
        if wl is not None:
            self.recorder.emit(wl, "Normal", f"EvictedDueTo{d.reason}", d.message, controller)

    def _unset_reservation(self, d: UnsetReservation, now: datetime) -> None:
        conds = [cv.to_api(now) for cv in d.conditions]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            status.pop("admission", None)
            for cond in conds:
                set_condition(status, cond, now, _gen(obj))

        self._write_decision("reservation unset", d, mutate, detail=d.message)

    def _requeue(self, d: Requeue, now: datetime) -> None:
        conds = [cv.to_api(now) for cv in d.conditions]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            for cond in conds:
                set_condition(status, cond, now, _gen(obj))

        self._write_decision("requeued", d, mutate)

    def queue_routes(self) -> QueueRoutes:
        """What `report_queue_blockers` reads from the queues: each LocalQueue's ClusterQueue and
        whether each ClusterQueue is active."""
        cache = self.core.cache
        return (
            {key: lq.cluster_queue for key, lq in cache.local_queues.items()},
            {name: cache.readiness(name).active for name in cache.cluster_queues},
        )

    def report_queue_blockers(self, keys: set[str] | None, now: datetime) -> None:
        """QuotaReserved=False for pending Workloads whose queues block them (the workload
        controller's queue checks, `workload_controller.go`): the scheduler never sees those."""
        cache = self.core.cache
        candidates = (
            self.store.list("workloads")
            if keys is None
            else [w for key in keys if (w := self.store.get("workloads", key))]
        )
        for wl in candidates:
            if o.is_condition_true(wl, c.WorkloadCondition.QUOTA_RESERVED) or o.is_condition_true(
                wl, c.WorkloadCondition.FINISHED
            ):
                continue
            meta, spec = wl["metadata"], wl.get("spec") or {}
            if meta.get("deletionTimestamp") or spec.get("active") is False:
                continue
            lq_name = str(spec.get("queueName") or "")
            lq = cache.local_queues.get(f"{meta['namespace']}/{lq_name}")
            if lq is None:
                reason, message = "Misconfigured", f"LocalQueue {lq_name} doesn't exist"
            elif lq.cluster_queue not in cache.cluster_queues:
                reason, message = "Misconfigured", f"ClusterQueue {lq.cluster_queue} doesn't exist"
            elif not cache.readiness(lq.cluster_queue).active:
                reason, message = "Suspended", f"ClusterQueue {lq.cluster_queue} is inactive"
            else:
                continue
            if not self.core.config.granular_pending_reasons:  # the legacy condition
                reason = c.INADMISSIBLE_REASON
            self._set_pending(
                object_key(wl), lq.cluster_queue if lq else "", conditions.pending_conditions(reason, message), now
            )

    def _pending(self, d: Pending, now: datetime) -> None:
        write_key = self._set_pending(
            str(d.key),
            d.cluster_queue,
            d.conditions,
            now,
            decided=(d.uid, d.generation),
            resource_requests=[dict(r) for r in d.resource_requests],
        )
        if write_key is not None:
            self._cycle_writes.add(write_key)

    def _set_pending(
        self,
        key: str,
        cluster_queue: str,
        pending: Sequence[ConditionValue],
        now: datetime,
        *,
        event: bool = True,
        decided: tuple[str, int] = ("", 0),
        resource_requests: list[dict[str, Any]] | None = None,
    ) -> str | None:
        """Queue the pending status unless the Workload shows it already; the write's key if queued.
        `decided`: the UID and generation the core decided on, when it did; `resource_requests`: the
        `status.resourceRequests` the scheduler reports with it (None: left as it is)."""
        wl = self.store.get("workloads", key)
        if wl is None:
            return None
        current = o.find_condition(wl, c.WorkloadCondition.QUOTA_RESERVED)
        qr = pending[0]
        same_requests = (
            resource_requests is None or (wl.get("status") or {}).get("resourceRequests") == resource_requests
        )
        if (
            current is not None
            and (current.get("status"), current.get("reason"), current.get("message"))
            == (qr.status, qr.reason, qr.message)
            and same_requests
        ):
            return None
        conds = [{"type": cv.type, "status": cv.status, "reason": cv.reason, "message": cv.message} for cv in pending]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            if (o.find_condition(obj, c.WorkloadCondition.QUOTA_RESERVED) or {}).get("status") == "True":
                return  # reserved meanwhile: a stale pending report
            for cond in conds:
                set_condition(status, cond, now, _gen(obj))
            if resource_requests is not None:
                status["resourceRequests"] = resource_requests

        write_key = self._log_and_write(
            "pending",
            key,
            "Pending",
            {"cluster_queue": cluster_queue, "reason": qr.reason, "detail": qr.message},
            mutate,
            uid=decided[0],
            generation=decided[1],
            first=False,
        )
        if event:
            self.recorder.emit(wl, "Warning", qr.reason, qr.message, ADMISSION_CONTROLLER)
        return write_key
