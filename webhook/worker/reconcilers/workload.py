"""The workload controller's waitForPodsReady, backoff and deactivation steps, carried out.

The decisions are `core.pods_ready.controller_step` (pure, `now` passed in); this module only reads
the Workload from the store, writes the step, emits upstream's event and schedules the next look
at the time the step names (`pkg/controller/core/workload_controller.go` returns `RequeueAfter`).
One reconcile writes at most one step; the watch event of that write brings the next.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.config import Configuration
from webhook.core import parse_workload
from webhook.core.pods_ready import Policy, Step, StepKind, controller_step
from webhook.worker import events
from webhook.worker.status import remove_condition, set_condition, update_status
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = ["CONTROLLER_NAME", "WorkloadReconciler", "apply_step", "policy"]

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


def apply_step(step: Step, status: dict[str, Any], generation: int, now: datetime) -> None:
    """Write `step`'s status changes into `status` (what `evict.Evict` and the condition setters do)."""
    for ctype in step.remove_conditions:
        remove_condition(status, ctype)
    for cv in step.conditions:
        set_condition(status, {"type": cv.type, "status": cv.status, "reason": cv.reason, "message": cv.message}, now, generation)
    if step.set_requeue_state:
        if step.requeue_state is None:
            status.pop("requeueState", None)
        else:
            status["requeueState"] = dict(step.requeue_state)
    if step.kind == StepKind.EVICT:
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        for check in status.get("admissionChecks") or ():
            state = check.get("state")
            if state == "Pending":
                continue
            if state == "Retry":
                check["retryCount"] = int(check.get("retryCount") or 0) + 1
            check.update(state="Pending", message=f"Reset to Pending after eviction. Previously: {state}", lastTransitionTime=stamp)


class WorkloadReconciler:
    """Runs `controller_step` for one Workload key (`namespace/name`) on a work queue."""

    def __init__(self, kube: k.Kube, store: Store, config: Configuration, recorder: events.Recorder, *,
                 stop: threading.Event, on_evicted: Callable[[str, str, str, Mapping[str, Any], str], None]) -> None:
        self.kube = kube
        self.store = store
        self.policy = policy(config)
        self.events = recorder
        self.on_evicted = on_evicted  # (key, cluster_queue, reason, workload, underlying_cause): eviction metrics
        self.queue: WorkQueue[object] = WorkQueue("workloads", self.reconcile, workers=2, stop=stop)
        self._rechecks: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        self.queue.start()

    def add(self, key: str) -> None:
        self.queue.add(key)

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
        jitter = random.random()
        step = controller_step(parse_workload(wl), self.policy, now, jitter=jitter)
        if step.kind == StepKind.NONE:
            return
        if step.kind == StepKind.RECHECK:
            assert step.recheck_at is not None
            self._recheck(key, step.recheck_at, now)
            return
        path = k.object_path(c.V1BETA2, "workloads", wl["metadata"]["namespace"], wl["metadata"]["name"])
        log.info("workload controller", extra={"object": key, "kind": "Workload", "decision": step.kind.value,
                                               "reason": step.reason, "detail": step.message})
        if step.kind == StepKind.SET_INACTIVE:
            self._deactivate(path, wl)
            return
        applied: list[Step] = []

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            # Re-decided on the object being written: a newer copy may no longer call for this step.
            again = controller_step(parse_workload(obj), self.policy, now, jitter=jitter)
            if again.kind != step.kind:
                return
            apply_step(again, status, int((obj.get("metadata") or {}).get("generation") or 0), now)
            applied[:] = [again]

        try:
            written = update_status(self.kube, self.store, "workloads", path, mutate)
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        if written is None or not applied or step.kind != StepKind.EVICT:
            return
        cq = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        if cq:  # upstream reports (event, metrics) only evictions of workloads holding an admission
            done = applied[0]
            self.on_evicted(key, cq, done.reason, written, done.underlying_cause)
            self.events.emit(written, "Normal", done.event_reason, done.message, CONTROLLER_NAME)

    def _deactivate(self, path: str, wl: Mapping[str, Any]) -> None:
        """spec.active=false, guarded by the resourceVersion the decision was taken on."""
        patch = {"metadata": {"resourceVersion": wl["metadata"].get("resourceVersion")}, "spec": {"active": False}}
        try:
            self.store.put("workloads", self.kube.patch(path, patch))
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
