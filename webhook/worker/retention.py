"""`objectRetentionPolicies.workloads.afterFinished`: a finished Workload is deleted once the retention
has elapsed since its Finished condition turned True.

Mirrors the finished branch of `Reconcile` in `pkg/controller/core/workload_controller.go` (v0.19.2):
the deadline is Finished's `lastTransitionTime` + afterFinished; before it the Workload is looked at
again when it is due, after it Kueue's resource-in-use finalizer is removed (`workload.Delete`:
WorkloadSlices and other paths may finish a Workload without the job finalization that removes it)
and the Workload is deleted unless its deletion is already under way, with a `Deleted` event. The
owning Job stays (only `afterDeactivatedByKueue`, in the job reconciler, deletes Jobs). The gate
`ObjectRetentionPolicies` is GA and locked on in v0.19.2, so an unset afterFinished is the only off
switch. Workloads listed at start are judged the same way, so those already past their retention go
at once. Deadlines wait in the work queue's delay heap (`WorkQueue.add_after`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.core.workload import parse_time
from webhook.worker import events, workload_writes
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = ["CONTROLLER_NAME", "DELETED_MESSAGE", "DELETED_REASON", "WorkloadRetention", "deletion_due"]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "kueue-workload-controller"  # upstream records the event with the workload controller's recorder
DELETED_REASON = "Deleted"
DELETED_MESSAGE = "Deleted finished workload due to elapsed retention"


def deletion_due(wl: Mapping[str, Any], after_finished_s: float) -> datetime | None:
    """When a finished Workload is to be deleted; None while it is not finished (Finished=True)."""
    cond = o.find_condition(wl, c.WorkloadCondition.FINISHED)
    if cond is None or cond.get("status") != "True":
        return None
    # A Finished condition without a time cannot be older than now: it is due at once, as upstream's
    # zero LastTransitionTime would make it.
    since = parse_time(cond.get("lastTransitionTime")) or datetime.min.replace(tzinfo=UTC)
    return since + timedelta(seconds=after_finished_s)


class WorkloadRetention:
    """Deletes finished Workloads `after_finished_s` after they finished (a `Reconciler`)."""

    def __init__(
        self, kube: k.Kube, store: Store, recorder: events.Recorder, *, after_finished_s: float, stop: threading.Event
    ) -> None:
        self.kube = kube
        self.store = store
        self.events = recorder
        self.after_finished_s = after_finished_s
        self.queue: WorkQueue[object] = WorkQueue(
            "retention", self.reconcile, workers=1, stop=stop, controller="workload_controller"
        )
        self._lock = threading.Lock()
        self._due: dict[str, datetime] = {}  # the deadline each waiting Workload is queued for

    def start(self) -> None:
        self.queue.start()

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind != "workloads":
            return
        key = object_key(obj)
        if etype == "DELETED":
            with self._lock:
                self._due.pop(key, None)
            return
        due = deletion_due(obj, self.after_finished_s)
        if due is not None:
            self._schedule(key, due)

    def _schedule(self, key: str, due: datetime) -> None:
        """Look at the Workload when it is due; once per deadline, however many events it gets."""
        with self._lock:
            if self._due.get(key) == due:
                return
            self._due[key] = due
        self.queue.add_after(key, max(0.0, (due - datetime.now(UTC)).total_seconds()))

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        wl = self.store.get("workloads", key)
        if wl is None:
            return
        due = deletion_due(wl, self.after_finished_s)
        if due is None:
            return
        left = (due - datetime.now(UTC)).total_seconds()
        if left > 0:  # the monotonic clock of the delay ran ahead of the wall clock
            self.queue.add_after(key, left)
            return
        try:
            released = workload_writes.remove_finalizer(self.kube, self.store, wl)
            if o.is_deleting(released):
                return  # the finalizer was all that held it
            # The uid guards against deleting a Workload created anew under the same name meanwhile.
            workload_writes.delete(self.kube, self.store, released)
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        log.info(
            "deleted finished workload",
            extra={"object": key, "kind": "Workload", "decision": "Deleted", "retention_s": self.after_finished_s},
        )
        self.events.emit(wl, "Normal", DELETED_REASON, DELETED_MESSAGE, CONTROLLER_NAME)
