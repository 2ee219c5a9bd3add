"""The ConcurrentAdmission variant controller: the work queue of parent Workloads, the watch events
that fill it, and the writes of one reconcile = `plan.plan` (pure) → actions carried out by the
`VariantExecutor`.

Mirrors `variantReconciler` in `pkg/controller/concurrentadmission/controller.go` (upstream v0.19.2):
`setupWithManager`'s watches (`parentsForClusterQueue`, `clusterQueueFlavorsChanged`), the family
and ClusterQueue `Reconcile` reads, and the writes of its helpers (`createVariants`,
`deleteStaleVariants`, `activateWl`, `deactivateWl`, `clearWorkloadAdmission`, `syncFinished`,
`syncAdmissionStatus`, `openPreemptionGate`), each with the event upstream records.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, assert_never

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.core import concurrent_admission as ca
from webhook.core.model import ClusterQueueSpec, parse_cluster_queue
from webhook.worker import events, preemption_gates, workload_writes
from webhook.worker.jobframework import actions as ja
from webhook.worker.reconcilers.concurrent_admission.plan import VariantAction, plan
from webhook.worker.status import (
    clear_reservation,
    set_condition,
    set_conditions,
    update_status,
)
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "CONTROLLER_NAME",
    "VariantExecutor",
    "VariantReconciler",
    "flavors_changed",
    "parents_for_cluster_queue",
]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "concurrent-admission-controller"
_W = c.WorkloadCondition


def parents_for_cluster_queue(store: Store, cluster_queue: str) -> list[str]:
    """Keys of the parents whose LocalQueue routes to `cluster_queue` (`parentsForClusterQueue`)."""
    routed = {
        object_key(lq)
        for lq in store.list("localqueues")
        if (lq.get("spec") or {}).get("clusterQueue") == cluster_queue
    }
    return sorted(
        object_key(wl)
        for wl in store.list("workloads")
        if ca.is_parent(wl)
        and f"{wl['metadata'].get('namespace')}/{(wl.get('spec') or {}).get('queueName') or ''}" in routed
    )


def flavors_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """The flavor names of some resource group changed (`clusterQueueFlavorsChanged`)."""

    def names(cq: Mapping[str, Any] | None) -> list[list[str]]:
        return [
            [str(f.get("name")) for f in rg.get("flavors") or ()]
            for rg in ((cq or {}).get("spec") or {}).get("resourceGroups") or ()
        ]

    return old is not None and names(old) != names(new)


class VariantReconciler:
    """Carries out `plan` for one parent key (`namespace/name`) on its own work queue."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        recorder: events.Recorder,
        *,
        stop: threading.Event,
        short_names: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.short_names = short_names
        self.clock = clock
        self.executor = VariantExecutor(kube, store, recorder)
        self.queue: WorkQueue[object] = WorkQueue(
            "variants", self.reconcile, workers=2, stop=stop, controller="concurrent-admission-controller"
        )

    def start(self) -> None:
        self.queue.start()

    def add(self, key: str) -> None:
        self.queue.add(key)

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind == "workloads":
            self.on_workload(obj)
        elif kind == "clusterqueues" and etype != "DELETED":
            self.on_cluster_queue(old, obj)

    def on_workload(self, obj: Mapping[str, Any]) -> None:
        """Watch events: a parent queues itself, a variant its parent."""
        meta = obj.get("metadata") or {}
        if ca.is_parent(obj):
            self.add(object_key(obj))
        elif ca.is_variant(obj):
            self.add(f"{meta.get('namespace')}/{ca.parent_name(obj)}")

    def on_cluster_queue(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        if flavors_changed(old, new):
            for key in parents_for_cluster_queue(self.store, str(new["metadata"]["name"])):
                self.add(key)

    def cluster_queue(self, wl: Mapping[str, Any]) -> ClusterQueueSpec | None:
        """The ClusterQueue the parent's LocalQueue routes to, None while either is unknown."""
        lq = self.store.get(
            "localqueues", f"{wl['metadata'].get('namespace')}/{(wl.get('spec') or {}).get('queueName') or ''}"
        )
        cq = self.store.get("clusterqueues", str(((lq or {}).get("spec") or {}).get("clusterQueue") or ""))
        return None if cq is None else parse_cluster_queue(cq, concurrent_admission=True)

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        parent = self.store.get("workloads", key)
        if parent is None or not ca.is_parent(parent):
            return
        uid = parent["metadata"].get("uid")
        variants = [
            wl
            for wl in self.store.list("workloads", parent["metadata"]["namespace"])
            if any(ref.get("uid") == uid for ref in wl["metadata"].get("ownerReferences") or ())
        ]
        cq = self.cluster_queue(parent)
        if cq is None:
            raise Retry(1.0, "ClusterQueue of the parent not found")
        now = self.clock()
        p = plan(parent, variants, cq, now, short_names=self.short_names)
        for action in p.steps:
            try:
                self.executor.execute(parent, action, now)
            except k.Conflict as exc:
                raise Retry(0.2, "workload changed") from exc
        if p.requeue_after is not None:
            self.queue.add_after(key, p.requeue_after.total_seconds())


class VariantExecutor:
    """Runs one action of a variant plan for `parent`, with the log line and the event upstream's
    helper has for it. A write's event follows only a write that went through; a Workload gone
    meanwhile is passed over."""

    def __init__(self, kube: k.Kube, store: Store, recorder: events.Recorder) -> None:
        self.kube = kube
        self.store = store
        self.events = recorder

    def execute(self, parent: Obj, action: VariantAction, now: datetime) -> None:
        match action:
            case ja.CreateWorkload():
                self._do_create(parent, action)
            case ja.DeleteWorkload():
                self._do_delete(parent, action)
            case ja.RecordEvent():
                self._do_event(parent, action)
            case ja.SetWorkloadActive():
                self._do_set_active(parent, action)
            case ja.SetWorkloadConditions():
                self._do_conditions(parent, action, now)
            case ja.ClearReservation():
                self._do_clear_reservation(parent, action, now)
            case ja.FinishWorkload():
                self._do_finish(parent, action, now)
            case ja.SetPodsReady():
                self._do_pods_ready(action, now)
            case ja.AdmitWorkload():
                self._do_admit(parent, action, now)
            case ja.OpenPreemptionGate():
                self._do_open_gate(parent, action, now)
            case _:
                assert_never(action)

    # -- helpers ----------------------------------------------------------------------------------
    def _status(self, wl: Obj, mutate: Callable[[dict[str, Any], Obj], None]) -> dict[str, Any] | None:
        return update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)

    def _emit(self, regarding: Obj, reason: str, message: str) -> None:
        self.events.emit(regarding, "Normal", reason, message, CONTROLLER_NAME)

    def _log(self, message: str, decision: str, wl: Obj, parent: Obj, **extra: Any) -> None:
        """`decision` is the name this controller's log gives the write."""
        log.info(
            message,
            extra={
                "object": object_key(wl),
                "kind": "Workload",
                "parent": object_key(parent),
                "decision": decision,
                **extra,
            },
        )

    # -- actions ----------------------------------------------------------------------------------
    def _do_create(self, parent: Obj, act: ja.CreateWorkload) -> None:
        wl = act.body
        try:
            workload_writes.create(self.kube, self.store, wl)
        except k.Conflict:
            return  # already exists
        self._log("variant created", "create", wl, parent, flavor=ca.variant_flavor(wl))
        self._emit(parent, act.reason, act.message)

    def _do_event(self, parent: Obj, act: ja.RecordEvent) -> None:
        regarding = parent if act.regarding is None else act.regarding
        etype = "Warning" if act.warning else "Normal"
        self.events.emit(regarding, etype, act.reason, act.message, CONTROLLER_NAME, action=act.action)

    def _do_delete(self, parent: Obj, act: ja.DeleteWorkload) -> None:
        wl = _workload(act)
        # A Conflict: the UID precondition failed, the variant was recreated since it was planned.
        with contextlib.suppress(k.NotFound, k.Conflict):
            workload_writes.delete(self.kube, self.store, wl)
        self._log("variant deleted", "delete", wl, parent, detail=act.message)

    def _do_set_active(self, parent: Obj, act: ja.SetWorkloadActive) -> None:
        """spec.active, guarded by the resourceVersion the decision was taken on."""
        wl = _workload(act)
        try:
            workload_writes.patch(self.kube, self.store, wl, {"spec": {"active": act.active}})
        except k.NotFound:
            return
        word = "activated" if act.active else "deactivated"
        self._log(f"variant {word}", "set_active", wl, parent, detail=act.message)
        self._emit(wl, act.reason, f"Variant Workload {word} due to {act.message}")

    def _do_conditions(self, parent: Obj, act: ja.SetWorkloadConditions, now: datetime) -> None:
        """Logged as the parent's eviction: the plan writes conditions for nothing else."""
        wl = _workload(act)
        self._status(
            wl,
            lambda status, obj: set_conditions(
                status, act.conditions, now, _generation(obj), clear_admission=act.clear_admission
            ),
        )
        self._log("parent evicted", "evict", wl, parent, reason=act.reason, detail=act.message)

    def _do_clear_reservation(self, parent: Obj, act: ja.ClearReservation, now: datetime) -> None:
        wl = _workload(act)
        self._status(
            wl,
            lambda status, obj: clear_reservation(
                status,
                requeue=act.requeue,
                reason=act.reason,
                message=act.message,
                now=now,
                generation=_generation(obj),
            ),
        )
        self._log("variant admission cleared", "clear_admission", wl, parent, reason=act.reason)

    def _do_finish(self, parent: Obj, act: ja.FinishWorkload, now: datetime) -> None:
        wl = _workload(act)
        workload_writes.finish(self.kube, self.store, wl, act.reason, act.message, now)
        self._log("variant finished", "finish", wl, parent, reason=act.reason)

    def _do_pods_ready(self, act: ja.SetPodsReady, now: datetime) -> None:
        cond = act.condition
        ready = {"type": cond.type, "status": cond.status, "reason": cond.reason, "message": cond.message}
        self._status(_workload(act), lambda status, obj: set_condition(status, ready, now, _generation(obj)))

    def _do_admit(self, parent: Obj, act: ja.AdmitWorkload, now: datetime) -> None:
        wl = _workload(act)
        self._status(wl, lambda status, obj: _admit(status, act, now, _generation(obj)))
        self._log("parent admitted", "admit_parent", wl, parent, cluster_queue=act.admission.get("clusterQueue", ""))

    def _do_open_gate(self, parent: Obj, act: ja.OpenPreemptionGate, now: datetime) -> None:
        wl = _workload(act)
        if self._status(wl, lambda status, obj: preemption_gates.open_gate(status, obj, act.gate, now)) is None:
            return
        self._log("preemption gate opened", "open_gate", wl, parent)
        self._emit(wl, act.reason, act.message)


def _workload(act: VariantAction) -> Obj:
    """The Workload an action writes; every variant action but a create or an event names one."""
    assert act.workload is not None, f"{act.name} names no Workload"
    return act.workload


def _generation(obj: Obj) -> int:
    return int(o.meta(obj).get("generation") or 0)


def _admit(status: dict[str, Any], act: ja.AdmitWorkload, now: datetime, generation: int) -> None:
    """`SetQuotaReservation` with the variant's admission, then Admitted=True (`SetAdmittedCondition`):
    active Evicted, Preempted and BlockedOnPreemptionGates conditions turn False, "Previously: ..."."""
    status["admission"] = copy.deepcopy(dict(act.admission))
    cq = act.admission.get("clusterQueue", "")
    set_condition(
        status,
        {
            "type": _W.QUOTA_RESERVED,
            "status": "True",
            "reason": c.QUOTA_RESERVED_REASON,
            "message": f"Quota reserved in ClusterQueue {cq}",
        },
        now,
        generation,
    )
    for ctype in (_W.EVICTED, _W.PREEMPTED, _W.BLOCKED_ON_PREEMPTION_GATES):
        prev = o.find_condition({"status": status}, ctype)
        if prev is not None and prev.get("status") == "True":
            set_condition(
                status,
                {
                    "type": ctype,
                    "status": "False",
                    "reason": c.QUOTA_RESERVED_REASON,
                    "message": f"Previously: {prev.get('message', '')}",
                },
                now,
                generation,
            )
    set_condition(
        status, {"type": _W.ADMITTED, "status": "True", "reason": act.reason, "message": act.message}, now, generation
    )
