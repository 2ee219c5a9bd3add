"""Carry out a reconciler's `Decision`: its action values, in order, through `webhook.kube`.

The I/O half of `actions.py` (whose docstring fixes how each action is executed). The first
failed write stops the run and raises `Retry`, as upstream's reconcile returns the error and
controller-runtime re-queues the key with backoff. Objects the API returns are put into the
`Store`, so the next pass does not act on a copy older than its own write.

Writes mirror, at upstream commit ff69552e79: `client.Create/Patch/Delete` in
`pkg/controller/jobframework/reconciler.go`, `workload.RemoveFinalizer`/`workload.Delete`
(`pkg/workload/workload.go`), `clientutil.RemoveFinalizersWithStrictPatch`
(`pkg/util/client/client.go`) and the server-side apply of `TerminationTarget` in
`pkg/controller/jobs/pod/pod_controller.go` (`Stop`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from webhook import kube as k
from webhook import metrics as m
from webhook.api import constants as c
from webhook.worker import events
from webhook.worker.reconcilers import actions as a
from webhook.worker.reporter import ROLE
from webhook.worker.status import accumulate_admitted_time, set_condition, update_status
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

__all__ = ["CONTROLLER_NAME", "Executor", "expected_uids"]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "pod-kueue-controller"
_ATTEMPTS = 5


def _pod_path(ref: a.ObjectRef) -> str:
    return k.object_path("v1", "pods", ref.namespace, ref.name)


def _wl_path(ref: a.ObjectRef) -> str:
    return k.object_path(c.V1BETA2, "workloads", ref.namespace, ref.name)


class Executor:
    """Runs `Decision.actions` for one reconcile key, telling the caller (its expectations) about
    the `expected` pod releases no watch event will report."""

    def __init__(self, kube: k.Kube, store: Store, recorder: events.Recorder, *,
                 controller: str = CONTROLLER_NAME, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.kube = kube
        self.store = store
        self.events = recorder
        self.controller = controller
        self.clock = clock

    def run(self, key: str, decision: a.ReconcileResult, *, now: datetime,
            settled: Callable[[str], None] = lambda uid: None) -> None:
        """Execute `decision`; `settled(uid)` is told about every expected pod UID whose release no
        watch event will report (already gone, already released, or the run failed before it)."""
        skip_delete: set[str] = set()
        for i, action in enumerate(decision.actions):
            try:
                self._one(action, now, skip_delete, settled)
            except k.KubeError as exc:
                for uid in expected_uids(decision.actions[i:]):
                    settled(uid)
                log.warning("reconcile write failed", extra={"object": key, "action": type(action).__name__,
                                                             "status": exc.status, "error": str(exc)})
                raise Retry(0.2, f"{type(action).__name__}: {exc}") from exc
        if decision.error:
            level = logging.INFO if decision.retry else logging.WARNING
            log.log(level, "reconcile error", extra={"object": key, "error": decision.error, "retry": decision.retry})
        if decision.retry:
            raise Retry(0.5, decision.error)

    # == dispatch =================================================================================
    def _one(self, action: a.Action, now: datetime, skip_delete: set[str], settled: Callable[[str], None]) -> None:
        if isinstance(action, a.CreateWorkload):
            self._create_workload(action)
        elif isinstance(action, a.PatchWorkload):
            self._put("workloads", self.kube.patch(_wl_path(action.workload), dict(action.patch)))
        elif isinstance(action, a.DeleteWorkload):
            self._delete_workload(action)
        elif isinstance(action, a.RemoveWorkloadFinalizer):
            self._remove_finalizer("workloads", _wl_path(action.workload), action.workload, action.finalizer)
        elif isinstance(action, a.UpdateWorkloadStatus):
            self._update_workload_status(action, now)
        elif isinstance(action, a.PatchPod):
            self._patch_pod(action)
        elif isinstance(action, a.SetPodCondition):
            if not self._set_pod_condition(action):
                skip_delete.add(action.pod.key)
        elif isinstance(action, a.DeletePod):
            if (action.pod.key in skip_delete or not self._delete_pod(action)) and action.expected:
                settled(action.pod.uid)
        elif isinstance(action, a.RemoveFinalizer):
            if not self._remove_finalizer("pods", _pod_path(action.pod), action.pod, action.finalizer) and action.expected:
                settled(action.pod.uid)
        elif isinstance(action, a.Event):
            self._event(action)

    def _put(self, kind: str, obj: Mapping[str, Any]) -> None:
        if obj.get("metadata"):
            self.store.put(kind, dict(obj))

    # == Workloads ================================================================================
    def _create_workload(self, action: a.CreateWorkload) -> None:
        meta = action.workload.get("metadata") or {}
        try:
            created = self.kube.create(k.object_path(c.V1BETA2, "workloads", meta.get("namespace")), action.workload)
        except k.Conflict as exc:  # AlreadyExists: the next pass sees it and matches or replaces it
            raise Retry(0.2, "workload already exists") from exc
        self._put("workloads", created)
        log.info("created workload", extra={"object": f"{meta.get('namespace')}/{meta.get('name')}", "kind": "Workload",
                                            "decision": "CreatedWorkload"})

    def _delete_workload(self, action: a.DeleteWorkload) -> None:
        ref = action.workload
        self._remove_finalizer("workloads", _wl_path(ref), ref, c.RESOURCE_IN_USE_FINALIZER)
        if action.already_deleting:
            return
        try:
            self.kube.delete(_wl_path(ref))
        except k.NotFound:
            return
        log.info("deleted workload", extra={"object": ref.key, "kind": "Workload", "decision": "DeletedWorkload"})

    def _update_workload_status(self, action: a.UpdateWorkloadStatus, now: datetime) -> None:
        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            for cond in action.conditions:
                if cond.get("type") == c.WorkloadCondition.ADMITTED and cond.get("status") == "False":
                    accumulate_admitted_time(status, now)
                set_condition(status, cond, now)
            if action.reclaimable_pods is not None:
                status["reclaimablePods"] = [dict(r) for r in action.reclaimable_pods] or None
                if not status["reclaimablePods"]:
                    status.pop("reclaimablePods")
            if action.clear_admission:
                status.pop("admission", None)

        update_status(self.kube, self.store, "workloads", _wl_path(action.workload), mutate)
        types = ",".join(str(cond.get("type")) for cond in action.conditions)
        log.info("workload status updated", extra={"object": action.workload.key, "kind": "Workload",
                                                   "conditions": types, "clear_admission": action.clear_admission})

    # == Pods =====================================================================================
    def _patch_pod(self, action: a.PatchPod) -> None:
        if not action.patch:
            return
        try:
            self._put("pods", self.kube.patch(_pod_path(action.pod), dict(action.patch)))
        except k.NotFound:
            return
        if action.ungates is not None:
            # Read the clock once this pod's patch is through, as upstream does per pod of a group;
            # a negative span (clock skew against the API server's transition time) counts as 0.
            g = action.ungates
            m.POD_SCHEDULING_GATE_REMOVAL.labels(c.ADMISSION_GATE, g.cluster_queue, "true" if g.is_group else "false", ROLE).observe(
                max(0.0, (self.clock() - g.admitted_at).total_seconds()))
        log.info("patched pod", extra={"object": action.pod.key, "kind": "Pod", "decision": "Started"})

    def _set_pod_condition(self, action: a.SetPodCondition) -> bool:
        """Server-side apply of one status condition; False when the pod is gone."""
        ref = action.pod
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ref.name, "namespace": ref.namespace},
                "status": {"conditions": [dict(action.condition)]}}
        try:
            self.kube.request("PATCH", _pod_path(ref) + "/status", body=body, content_type="application/apply-patch+yaml",
                              query={"fieldManager": action.field_manager, "force": "true"})
        except k.NotFound:
            return False
        return True

    def _delete_pod(self, action: a.DeletePod) -> bool:
        """DELETE with the uid as precondition; False when it was already gone."""
        body = {"preconditions": {"uid": action.pod.uid}} if action.pod.uid else None
        try:
            self.kube.delete(_pod_path(action.pod), body=body)
        except (k.NotFound, k.Conflict):  # gone, or replaced by a pod of the same name
            return False
        log.info("deleted pod", extra={"object": action.pod.key, "kind": "Pod", "decision": "DeletedPod"})
        return True

    # == shared ===================================================================================
    def _remove_finalizer(self, kind: str, path: str, ref: a.ObjectRef, finalizer: str) -> bool:
        """Drop `finalizer` with a resourceVersion-guarded merge patch; on Conflict read again and retry.

        False when there was nothing to remove (gone, replaced by a namesake, or already released).
        """
        obj: Mapping[str, Any] | None = self.store.get(kind, ref.key)
        fresh = False
        for _ in range(_ATTEMPTS):
            if obj is None or (ref.uid and (obj.get("metadata") or {}).get("uid") != ref.uid and not fresh):
                obj, fresh = self.kube.get(path), True
                if obj is None:
                    return False
            meta = obj.get("metadata") or {}
            if ref.uid and meta.get("uid") != ref.uid:
                return False  # a different object of the same name now
            finalizers: Sequence[str] = meta.get("finalizers") or ()
            if finalizer not in finalizers:
                return False
            remaining = [f for f in finalizers if f != finalizer]
            patch = {"metadata": {"finalizers": remaining or None, "resourceVersion": meta.get("resourceVersion")}}
            try:
                self._put(kind, self.kube.patch(path, patch))
            except k.NotFound:
                return False
            except k.Conflict:
                obj = None
                continue
            log.info("removed finalizer", extra={"object": ref.key, "kind": ref.kind, "finalizer": finalizer})
            return True
        raise k.Conflict(409, f"finalizer of {ref.key}: still conflicting after {_ATTEMPTS} attempts")

    def _event(self, action: a.Event) -> None:
        ref = action.object
        regarding = {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": {
            "name": ref.name, "namespace": ref.namespace, "uid": ref.uid, "resourceVersion": ref.resource_version}}
        self.events.emit(regarding, str(action.kind), action.reason, action.message, self.controller,
                         action=action.action or action.reason)


def expected_uids(actions: Iterable[a.Action]) -> set[str]:
    """UIDs of the pods a run of `actions` deletes or releases as `expected` (what expectations wait to observe)."""
    return {act.pod.uid for act in actions if isinstance(act, a.DeletePod | a.RemoveFinalizer) and act.expected and act.pod.uid}
