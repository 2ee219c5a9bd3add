"""The workload controller's admission-check, waitForPodsReady, backoff and deactivation steps, carried out.

The decisions are `core.admission_checks.workload_step` (pure, `now` passed in, built on
`core.pods_ready.controller_step`); this module only reads the Workload and the ClusterQueue its
LocalQueue routes to from the store, writes the step, emits upstream's event and schedules the next
look at the time the step names (`pkg/controller/core/workload_controller.go` returns
`RequeueAfter`). One reconcile writes at most one step; the watch event of that write brings the next.
"""

from __future__ import annotations

import copy
import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.config import Configuration, Feature
from webhook.core import concurrent_admission as ca
from webhook.core import dra
from webhook.core.admission_checks import reset_on_eviction, workload_step
from webhook.core.model import ClusterQueueSpec, parse_cluster_queue
from webhook.core.pods_ready import Policy, StepKind, WorkloadStep
from webhook.core.workload import parse_time
from webhook.worker import events, preemption_gates, workload_writes
from webhook.worker.status import (
    count_eviction,
    remove_condition,
    reset_cluster_nomination,
    set_condition,
    update_status,
)
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = ["CONTROLLER_NAME", "WorkloadReconciler", "apply_step", "cluster_queue_for", "is_orphaned", "policy"]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "kueue-workload-controller"
# Fires a recheck a little after the deadline, so the clock read then is past it.
_RECHECK_SLACK_S = 0.05


def policy(config: Configuration) -> Policy | None:
    """The enabled waitForPodsReady configuration, None when disabled (`waitForPodsReady` in core.go).

    A recoveryTimeout of 0s disables the recovery timeout; unset it equals the timeout.
    """
    w = config.wait_for_pods_ready
    if w is None:
        return None
    rs = w.requeuing_strategy
    recovery = w.recovery_timeout_s
    return Policy(
        timeout=timedelta(seconds=w.timeout_s),
        recovery_timeout=timedelta(seconds=recovery) if recovery else None,
        backoff_limit_count=rs.backoff_limit_count,
        backoff_base_seconds=rs.backoff_base_seconds,
        backoff_max_seconds=rs.backoff_max_seconds,
        block_admission=w.block_admission,
    )


def apply_step(step: WorkloadStep, status: dict[str, Any], generation: int, now: datetime) -> None:
    """Write `step`'s status changes into `status` (what `evict.Evict`, the condition setters and
    the admission-check sync do); an eviction is counted in `schedulingStats`."""
    for ctype in step.remove_conditions:
        remove_condition(status, ctype)
    for cv in step.conditions:
        set_condition(
            status, {"type": cv.type, "status": cv.status, "reason": cv.reason, "message": cv.message}, now, generation
        )
    if step.set_requeue_state:
        if step.requeue_state is None:
            status.pop("requeueState", None)
        else:
            status["requeueState"] = dict(step.requeue_state)
    if step.kind == StepKind.EVICT:
        count_eviction(status, step.reason, step.underlying_cause)
        reset_cluster_nomination(status)
        if status.get("admissionChecks"):
            status["admissionChecks"] = reset_on_eviction(status["admissionChecks"], now)
    elif step.kind == StepKind.SYNC_CHECKS:
        if step.checks:
            status["admissionChecks"] = [dict(ch) for ch in step.checks]
        else:
            status.pop("admissionChecks", None)
    elif step.kind == StepKind.REQUEUE_AT:
        assert step.requeue_at is not None
        status.setdefault("requeueState", {})["requeueAt"] = step.requeue_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    elif step.kind == StepKind.MAX_EXECUTION_EXCEEDED:
        # The time is used up: a reactivated workload starts counting afresh (`reconcileMaxExecutionTime`).
        status.pop("accumulatedPastExecutionTimeSeconds", None)


def cluster_queue_for(
    store: Store, wl: Mapping[str, Any], *, concurrent_admission: bool = False
) -> ClusterQueueSpec | None:
    """The ClusterQueue the Workload's LocalQueue routes to, if both exist (`ClusterQueueForWorkload`);
    its concurrentAdmissionPolicy is read only with that feature gate on."""
    lq = store.get("localqueues", f"{wl['metadata'].get('namespace')}/{(wl.get('spec') or {}).get('queueName') or ''}")
    if lq is None:
        return None
    cq = store.get("clusterqueues", str((lq.get("spec") or {}).get("clusterQueue") or ""))
    return None if cq is None else parse_cluster_queue(cq, concurrent_admission=concurrent_admission)


def is_orphaned(wl: Mapping[str, Any], *, finish_orphaned: bool) -> bool:
    """No ownerReferences, and being deleted or still labelled with the uid of the Job that owned it
    (`isOrphanedWorkload` in `pkg/controller/core/workload_controller.go`): a Job deleted with
    propagationPolicy=Orphan leaves its Workload so once the garbage collector drops the reference,
    possibly after the Job's own reconciler last saw it."""
    if o.owner_references(wl):
        return False
    return o.is_deleting(wl) or (finish_orphaned and bool(o.labels(wl).get(c.JOB_UID_LABEL)))


class WorkloadReconciler:
    """Runs `workload_step` for one Workload key (`namespace/name`) on a work queue."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        config: Configuration,
        recorder: events.Recorder,
        *,
        stop: threading.Event,
        on_evicted: Callable[[str, str, str, Mapping[str, Any], str], None],
        on_admitted: Callable[[Mapping[str, Any], float, datetime], None] | None = None,
        dra_settings: dra.Settings | None = None,
    ) -> None:
        self.kube = kube
        self.store = store
        self.policy = policy(config)
        self.concurrent_admission = config.feature_enabled(Feature.CONCURRENT_ADMISSION)
        self.orchestrated_preemption = config.feature_enabled(Feature.MULTI_KUEUE_ORCHESTRATED_PREEMPTION)
        self.finish_orphaned = config.feature_enabled(Feature.FINISH_ORPHANED_WORKLOADS)
        self.granular_reasons = config.feature_enabled(Feature.UNADMITTED_WORKLOADS_OBSERVABILITY)
        self.dra = dra_settings
        # Workloads whose unchecked CEL selectors were already logged (`core.dra`): once each.
        self._unchecked_logged: set[str] = set()
        self.events = recorder
        self.on_evicted = on_evicted  # (key, cluster_queue, reason, workload, underlying_cause): eviction metrics
        # (workload, seconds since reservation, now): admission metrics once the last check is Ready
        self.on_admitted = on_admitted
        self.queue: WorkQueue[object] = WorkQueue(
            "workloads", self.reconcile, workers=2, stop=stop, controller="workload_controller"
        )
        self._rechecks: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        self.queue.start()

    def add(self, key: str) -> None:
        self.queue.add(key)

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind == "deviceclasses":
            ern = (obj.get("spec") or {}).get("extendedResourceName")
            for wl in self.store.list("workloads") if ern else ():
                if ern in dra.extended_requests(wl):
                    self.add(object_key(wl))
            return
        if kind == "resourceclaimtemplates":
            # Upstream retries a missing template with backoff; here its arrival (or change) brings
            # the Workloads naming it back.
            meta = obj.get("metadata") or {}
            name = str(meta.get("name") or "")
            for wl in self.store.list("workloads", str(meta.get("namespace") or "")):
                if name in dra.claim_template_names(wl):
                    self.add(object_key(wl))
            return
        if kind != "workloads":
            return
        if etype != "DELETED":
            self.add(object_key(obj))
            return
        with self._lock:  # nothing is rechecked for a Workload that is gone
            self._rechecks.pop(object_key(obj), None)
            self._unchecked_logged.discard(object_key(obj))

    def _recheck(self, key: str, at: datetime, now: datetime) -> None:
        """Look again at `at`; one timer per key and deadline, the earliest kept."""
        with self._lock:
            pending = self._rechecks.get(key)
            if pending is not None and now < pending <= at:
                return
            self._rechecks[key] = at
        self.queue.add_after(key, max(0.0, (at - now).total_seconds()) + _RECHECK_SLACK_S)

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        wl = self.store.get("workloads", key)
        if wl is None:
            return
        now = datetime.now(UTC)
        if is_orphaned(wl, finish_orphaned=self.finish_orphaned):
            self._finalize_orphan(key, wl, now)
            if not self.finish_orphaned or o.is_deleting(wl):
                return
            wl = self.store.get("workloads", key) or wl
        if self.orchestrated_preemption:
            wl = self._sync_preemption_gates(wl, now)
        jitter = random.random()
        cq = cluster_queue_for(self.store, wl, concurrent_admission=self.concurrent_admission)
        if cq is not None and cq.concurrent_admission is not None and not ca.is_variant(wl) and not ca.is_parent(wl):
            self._label_parent(wl)
            return
        devices = self._devices(key, wl)
        step = workload_step(
            wl,
            cq,
            self.policy,
            now,
            jitter=jitter,
            concurrent_admission=self.concurrent_admission,
            devices=devices,
            granular_reasons=self.granular_reasons,
        )
        if step.kind == StepKind.NONE:
            return
        if step.kind == StepKind.RECHECK:
            assert step.recheck_at is not None
            self._recheck(key, step.recheck_at, now)
            return
        reason, detail = (
            (step.reason, step.message)
            if step.reason or not step.conditions
            else (step.conditions[0].reason, step.conditions[0].message)
        )
        log.info(
            "workload controller",
            extra={"object": key, "kind": "Workload", "decision": step.kind.value, "reason": reason, "detail": detail},
        )
        if step.kind == StepKind.SET_INACTIVE:
            self._deactivate(wl)
            return
        applied: list[WorkloadStep] = []

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            # Re-decided on the object being written: a newer copy may no longer call for this step.
            again = workload_step(
                obj,
                cq,
                self.policy,
                now,
                jitter=jitter,
                concurrent_admission=self.concurrent_admission,
                devices=self._devices(key, obj),
                granular_reasons=self.granular_reasons,
            )
            if again.kind != step.kind:
                return
            apply_step(again, status, int((obj.get("metadata") or {}).get("generation") or 0), now)
            applied[:] = [again]

        try:
            written = update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        if written is None or not applied:
            return
        done = applied[0]
        if done.kind in (StepKind.REJECTED, StepKind.ADMITTED, StepKind.MAX_EXECUTION_EXCEEDED):
            self._reported(done, written, now)
        elif done.kind == StepKind.EVICT:
            cq_name = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
            if cq_name:  # upstream reports (event, metrics) only evictions of workloads holding an admission
                self.on_evicted(key, cq_name, done.reason, written, done.underlying_cause)
                self.events.emit(written, "Normal", done.event_reason, done.message, CONTROLLER_NAME)

    def _sync_preemption_gates(self, wl: dict[str, Any], now: datetime) -> dict[str, Any]:
        """`syncPreemptionGateStates` (gate MultiKueueOrchestratedPreemption): each gate of the spec has a
        state, Closed when new; the Workload as written (or as it was when nothing changed)."""
        if not preemption_gates.sync_gate_states(copy.deepcopy(dict(wl.get("status") or {})), wl, now):
            return wl

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            preemption_gates.sync_gate_states(status, obj, now)

        try:
            written = update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        return written or wl

    def _devices(self, key: str, wl: Mapping[str, Any]) -> dra.Outcome | None:
        """The DRA step's findings from the stored ResourceClaimTemplates and DeviceClasses."""
        if self.dra is None or o.is_condition_true(wl, c.WorkloadCondition.QUOTA_RESERVED):
            return None  # holding quota: what status.admission says is what it costs
        backing = dra.extended_backing(self.store.list("deviceclasses")) if self.dra.extended_resources else None
        outcome = dra.resolve(wl, self._claim_template, self.dra, backing)
        if outcome.unchecked_selectors and key not in self._unchecked_logged:
            with self._lock:
                self._unchecked_logged.add(key)
            log.warning(
                "DRA CEL selectors not checked against ResourceSlices",
                extra={"object": key, "kind": "Workload", "requests": list(outcome.unchecked_selectors)},
            )
        return outcome

    def _claim_template(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.store.get("resourceclaimtemplates", f"{namespace}/{name}")

    def _finalize_orphan(self, key: str, wl: Mapping[str, Any], now: datetime) -> None:
        """`workload.FinalizeOrphanedWorkload` with canFinish: finish it unless it is being deleted, then
        drop the resource-in-use finalizer."""
        try:
            if self.finish_orphaned and not o.is_deleting(wl) and not o.is_finished(wl):
                wl = (
                    workload_writes.finish(
                        self.kube, self.store, wl, c.FinishedReason.OWNER_NOT_FOUND, c.MSG_OWNER_NOT_FOUND, now
                    )
                    or wl
                )
                log.info(
                    "workload finished",
                    extra={
                        "object": key,
                        "kind": "Workload",
                        "decision": "Finished",
                        "reason": c.FinishedReason.OWNER_NOT_FOUND,
                    },
                )
            workload_writes.remove_finalizer(self.kube, self.store, wl)
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc

    def _reported(self, step: WorkloadStep, wl: Mapping[str, Any], now: datetime) -> None:
        """Events and metrics of an admission-check or maximum-execution-time step once written."""
        if step.kind == StepKind.REJECTED:
            self.events.emit(wl, "Warning", "AdmissionCheckRejected", step.event, CONTROLLER_NAME)
        elif step.kind == StepKind.MAX_EXECUTION_EXCEEDED:
            self.events.emit(wl, "Warning", str(step.reason), step.event, CONTROLLER_NAME)
        elif step.kind == StepKind.ADMITTED and step.conditions[0].status == "True":
            status = wl.get("status") or {}
            reserved = (
                parse_time(
                    next(
                        (
                            ch.get("lastTransitionTime")
                            for ch in status.get("conditions") or ()
                            if ch.get("type") == c.WorkloadCondition.QUOTA_RESERVED
                        ),
                        None,
                    )
                )
                or now
            )
            waited = max(0.0, (now - reserved).total_seconds())
            cq = str((status.get("admission") or {}).get("clusterQueue") or "")
            self.events.emit(
                wl,
                "Normal",
                "Admitted",
                f"Admitted by ClusterQueue {cq}, wait time since reservation was {waited:.0f}s",
                CONTROLLER_NAME,
            )
            if self.on_admitted is not None:
                self.on_admitted(wl, waited, now)

    def _label_parent(self, wl: Mapping[str, Any]) -> None:
        """A Workload of a ClusterQueue with a concurrentAdmissionPolicy becomes the parent of
        variants (`SetParentVariantLabel`); its next event brings the next step."""
        try:
            workload_writes.patch(
                self.kube, self.store, wl, {"metadata": {"labels": {c.CONCURRENT_ADMISSION_PARENT_LABEL: "true"}}}
            )
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        log.info(
            "concurrent admission parent",
            extra={"object": object_key(wl), "kind": "Workload", "decision": "LabelParent"},
        )

    def _deactivate(self, wl: Mapping[str, Any]) -> None:
        """spec.active=false, guarded by the resourceVersion the decision was taken on."""
        try:
            workload_writes.patch(self.kube, self.store, wl, {"spec": {"active": False}})
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
