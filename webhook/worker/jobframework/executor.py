"""Carries out a job reconcile's plan: each `jobframework.actions` value, in order, through
`webhook.kube`, reaching the job only through its integration's `GenericJob` adapter.

Each action writes and puts what the API returns into the store, so a later action of the same
pass starts from the newest copy. A conflict ends the pass with `Retry`; a job gone meanwhile
ends it quietly. Mirrors the writes of `ReconcileGenericJob` in
`pkg/controller/jobframework/reconciler.go` (`startJob`, `stopJob`, `finalizeJob`,
`workload.Delete`, `workloadfinish.Finish`, `UpdateReclaimablePods`, `SyncPodsReadyCondition`),
and those of a pod group's `Run`, `Stop`, `removeExcessPods` and `finalizePods` in
`pkg/controller/jobs/pod/pod_controller.go` with `clientutil.RemoveFinalizersWithStrictPatch`
(`pkg/util/client/client.go`), in upstream v0.19.2.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, assert_never

from webhook import kube as k
from webhook import metrics as m
from webhook.api import constants as c
from webhook.api import integrations
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.worker import events, reporter, workload_writes
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.interface import (
    GenericJob,
    JobError,
    JobWithCustomStop,
    JobWithoutCustomStop,
    StartConflict,
)
from webhook.worker.reporter import ROLE
from webhook.worker.status import (
    clear_reservation,
    set_condition,
    set_conditions,
    update_status,
)
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

__all__ = ["Integration", "JobExecutor"]

log = logging.getLogger(__name__)

_ATTEMPTS = 5


def _generation(obj: Obj) -> int:
    return int(o.meta(obj).get("generation") or 0)


@dataclass(frozen=True, slots=True)
class Integration:
    """What the executor needs to know about one kind of job: where it lives, who writes its
    events, and how to see one as a `GenericJob` (`wrap`; None for a kind that is never suspended,
    started or stopped as a whole: a pod group, a StatefulSet)."""

    api_version: str
    kind: str
    resource: str
    """The resource plural, also the store's kind."""
    controller_name: str
    wrap: Callable[[Obj], GenericJob] | None = None

    @classmethod
    def of_family(cls, framework: integrations.Framework, wrap: Callable[[Obj], GenericJob]) -> Integration:
        """A kind of a family sharing one adapter (Kubeflow's, KubeRay's): its row's place, its events
        written by `<framework name>-kueue-controller`."""
        return cls(
            api_version=framework.api_version,
            kind=framework.kind,
            resource=framework.resource,
            controller_name=f"{framework.name}-kueue-controller",
            wrap=wrap,
        )

    def job(self, obj: Obj) -> GenericJob:
        if self.wrap is None:
            raise TypeError(f"{self.kind} is not suspended, started or stopped as one object")
        return self.wrap(obj)


class JobExecutor:
    """Runs one action of a plan for the job `key`; `on_ready` sees Workloads whose PodsReady
    turned True/Started (the ready-wait-time metrics); `settled(key, uid)` hears of every
    `expected` pod whose release no watch event will report (already gone or released)."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        config: Configuration,
        recorder: events.Recorder,
        integration: Integration,
        *,
        on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None,
        settled: Callable[[str, str], None] = lambda key, uid: None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.kube = kube
        self.store = store
        self.config = config
        self.events = recorder
        self.integration = integration
        self.on_ready = on_ready
        self.settled = settled
        self.clock = clock

    def execute(self, key: str, job: Obj | None, action: ja.JobAction, now: datetime) -> Obj | None:
        """Carry out one action; returns the newest copy of the job (None: it is gone)."""
        return self._execute(key, job, action, now)

    # -- helpers ----------------------------------------------------------------------------------
    def _latest(self, wl: Obj) -> Obj:
        """The newest copy of a Workload a step names (an earlier step may have written it)."""
        return self.store.get("workloads", o.key(wl)) or wl

    def _patch_workload(self, wl: Obj, patch: dict[str, Any]) -> None:
        try:
            workload_writes.patch(self.kube, self.store, self._latest(wl), patch)
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        except k.NotFound:
            return

    def _job_path(self, key: str) -> str:
        ns, name = key.split("/", 1)
        return k.object_path(self.integration.api_version, self.integration.resource, ns, name)

    def _patch_job(self, key: str, job: Obj, patch: dict[str, Any], *, status: bool = False) -> Obj | None:
        try:
            out = self.kube.patch(self._job_path(key) + ("/status" if status else ""), patch)
        except k.Conflict as exc:
            raise Retry(0.2, "job changed") from exc
        except k.NotFound:
            return None
        self.store.put(self.integration.resource, out)
        return out

    def _emit(self, job: Obj | None, etype: str, reason: str, message: str, *, action: str = "") -> None:
        if job is not None:
            self.events.emit(job, etype, reason, message, self.integration.controller_name, action=action)

    def _finish(self, wl: Obj, reason: str, message: str, now: datetime) -> None:
        workload_writes.finish(self.kube, self.store, wl, reason, message, now)
        log.info(
            "workload finished",
            extra={"object": o.key(wl), "kind": "Workload", "decision": "Finished", "reason": reason},
        )

    def _remove_finalizer(self, wl: Obj) -> None:
        try:
            workload_writes.remove_finalizer(self.kube, self.store, self._latest(wl))
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc

    # -- actions: each returns the newest copy of the Job (None: it is gone) -------------------------
    def _execute(self, key: str, job: Obj | None, action: ja.JobAction, now: datetime) -> Obj | None:
        """Carry out one action; `job` is None only for `Finalize` of a Job already gone."""
        if isinstance(action, ja.Finalize):
            return self._do_finalize(key, job, action, now)
        assert job is not None, "only Finalize runs without a Job"
        match action:
            case ja.RecordEvent():
                return self._do_event(key, job, action, now)
            case ja.SuspendChild():
                return self._do_suspend_child(key, job, action, now)
            case ja.StopJob():
                return self._do_stop(key, job, action, now)
            case ja.DeleteWorkload():
                return self._do_delete_workload(key, job, action, now)
            case ja.UpdateWorkloadSpec():
                return self._do_update_workload(key, job, action, now)
            case ja.AdoptWorkload():
                return self._do_adopt(key, job, action, now)
            case ja.UpdatePriority():
                return self._do_update_priority(key, job, action, now)
            case ja.UpdateAdmissionGatedBy():
                return self._do_update_gated_by(key, job, action, now)
            case ja.FinishWorkload():
                return self._do_finish(key, job, action, now)
            case ja.RemoveWorkloadFinalizer():
                return self._do_remove_finalizer(key, job, action, now)
            case ja.CreateWorkload():
                return self._do_create(key, job, action, now)
            case ja.UpdateReclaimablePods():
                return self._do_update_reclaimable(key, job, action, now)
            case ja.SetPodsReady():
                return self._do_pods_ready(key, job, action, now)
            case ja.ClearReservation():
                return self._do_clear_reservation(key, job, action, now)
            case ja.DeleteJob():
                return self._do_delete_job(key, job, action, now)
            case ja.StartJob():
                return self._do_start(key, job, action, now)
            case ja.RecordAdmissionChecks():
                return self._do_record_admission_checks(key, job, action, now)
            case ja.SyncQueueName():
                return self._do_sync_queue(key, job, action, now)
            case ja.SetWorkloadConditions():
                return self._do_workload_conditions(key, job, action, now)
            case ja.PatchPod():
                return self._do_patch_pod(key, job, action, now)
            case ja.StopPod():
                return self._do_stop_pod(key, job, action, now)
            case ja.DeletePod():
                return self._do_delete_pod(key, job, action, now)
            case ja.RemovePodFinalizer():
                return self._do_remove_pod_finalizer(key, job, action, now)
        assert_never(action)

    def _do_event(self, key: str, job: Obj, step: ja.RecordEvent, now: datetime) -> Obj:
        regarding = job if step.regarding is None else step.regarding
        self._emit(regarding, "Warning" if step.warning else "Normal", step.reason, step.message, action=step.action)
        return job

    def _do_finalize(self, key: str, job: Obj | None, step: ja.Finalize, now: datetime) -> Obj | None:
        assert step.workload is not None
        if step.finish and not o.is_finished(self._latest(step.workload)):
            self._finish(step.workload, c.FinishedReason.OWNER_NOT_FOUND, c.MSG_OWNER_NOT_FOUND, now)
        self._remove_finalizer(step.workload)
        return job

    def _do_suspend_child(self, key: str, job: Obj, step: ja.SuspendChild, now: datetime) -> Obj | None:
        return self._patch_job(key, job, self.integration.job(job).suspend_patch(stopping=False))

    def _do_stop(self, key: str, job: Obj, step: ja.StopJob, now: datetime) -> Obj | None:
        """`stopJob`: a job without a custom stop is suspended and restored in one patch (none when
        already suspended); otherwise `_custom_stop`. `Stopped` when this suspended the job, or for a
        `JobWithCustomStop` whenever its stop gets through (its blocker: `Retry`)."""
        gj = self.integration.job(job)
        stopped_now = not gj.is_suspended()
        if isinstance(gj, JobWithoutCustomStop):
            current = self._patch_job(key, job, gj.stop_patch(step.workload)) if stopped_now else job
        else:
            current = self._custom_stop(key, job, step, stopped_now=stopped_now)
        if current is None:
            return None
        log.info(
            "stopped job",
            extra={"object": key, "kind": self.integration.kind, "decision": "Stopped", "reason": step.reason},
        )
        if stopped_now or isinstance(gj, JobWithCustomStop):
            self._emit(current, "Normal", c.JobEventReason.STOPPED, step.message)
        return current

    def _custom_stop(self, key: str, job: Obj, step: ja.StopJob, *, stopped_now: bool) -> Obj | None:
        """A job's own `Stop` (the batch/v1 Job's, a `JobWithCustomStop`'s): suspend (marked as
        stopping until done), then the status patch that lets the pod templates change, then, once
        nothing blocks it, restore them from the Workload."""
        wrap = self.integration.job
        current: Obj | None = job
        if stopped_now:
            current = self._patch_job(key, job, wrap(job).suspend_patch(stopping=True))
        status_patch = None if current is None else wrap(current).stop_status_patch()
        if current is not None and status_patch is not None:
            current = self._patch_job(key, current, status_patch, status=True)
        if current is not None and isinstance(custom := wrap(current), JobWithCustomStop):
            blocker = custom.stop_blocker()
            if blocker is not None:
                raise Retry(1.0, blocker)
        restore = None if current is None else wrap(current).restore_pod_sets_info(step.workload)
        if current is not None and restore is not None:
            current = self._patch_job(key, current, restore)
        return current

    def _do_delete_workload(self, key: str, job: Obj, step: ja.DeleteWorkload, now: datetime) -> Obj:
        """`workload.Delete`: drop the finalizer, then delete unless already being deleted."""
        assert step.workload is not None
        self._remove_finalizer(step.workload)
        if o.is_deleting(step.workload):
            return job
        try:
            workload_writes.delete(self.kube, self.store, step.workload)
        except (k.NotFound, k.Conflict):  # gone, or recreated since (the UID precondition failed)
            return job
        log.info(
            "deleted workload",
            extra={"object": o.key(step.workload), "kind": "Workload", "job": key, "decision": "DeletedWorkload"},
        )
        if step.event:
            self._emit(
                job,
                "Normal",
                c.JobEventReason.DELETED_WORKLOAD,
                f"Deleted not matching Workload: {o.key(step.workload)}",
            )
        return job

    def _do_update_workload(self, key: str, job: Obj, step: ja.UpdateWorkloadSpec, now: datetime) -> Obj:
        assert step.workload is not None
        latest = self._latest(step.workload)
        try:
            workload_writes.replace(self.kube, self.store, {**latest, "spec": dict(step.spec)})
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        return job

    def _do_adopt(self, key: str, job: Obj, step: ja.AdoptWorkload, now: datetime) -> Obj:
        """`EnsurePrebuiltWorkloadOwnership`: the Job becomes the prebuilt Workload's controller."""
        assert step.workload is not None
        patch: dict[str, Any] = {
            "metadata": {"ownerReferences": list(o.meta(step.workload).get("ownerReferences") or ())}
        }
        if step.labels:
            patch["metadata"]["labels"] = dict(step.labels)
        if step.annotations:
            patch["metadata"]["annotations"] = dict(step.annotations)
        self._patch_workload(step.workload, patch)
        return job

    def _do_update_priority(self, key: str, job: Obj, step: ja.UpdatePriority, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(
            step.workload, {"spec": {"priorityClassRef": step.priority_class_ref, "priority": step.priority}}
        )
        return job

    def _do_update_gated_by(self, key: str, job: Obj, step: ja.UpdateAdmissionGatedBy, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"metadata": {"annotations": {c.ADMISSION_GATED_BY: step.value}}})
        return job

    def _do_finish(self, key: str, job: Obj, step: ja.FinishWorkload, now: datetime) -> Obj:
        assert step.workload is not None
        self._finish(step.workload, step.reason, step.message, now)
        return job

    def _do_remove_finalizer(self, key: str, job: Obj, step: ja.RemoveWorkloadFinalizer, now: datetime) -> Obj:
        assert step.workload is not None
        self._remove_finalizer(step.workload)
        return job

    def _do_create(self, key: str, job: Obj, step: ja.CreateWorkload, now: datetime) -> Obj:
        wl = step.body
        try:
            created = workload_writes.create(self.kube, self.store, wl)
        except k.Conflict as exc:
            raise Retry(0.2, f"workload {o.key(wl)} already exists") from exc
        if self.config.feature_enabled(Feature.METRIC_FOR_WORKLOAD_CREATION_LATENCY):  # jobframework/utils.go
            reporter.workload_created(self.integration.kind, job, created)
        log.info(
            "created workload",
            extra={"object": o.key(created), "kind": "Workload", "job": key, "decision": "CreatedWorkload"},
        )
        return job

    def _do_update_reclaimable(self, key: str, job: Obj, step: ja.UpdateReclaimablePods, now: datetime) -> Obj:
        """Quota of finished pods goes back while the Job runs (the core scales usage down)."""
        assert step.workload is not None
        wanted = [dict(r) for r in step.reclaimable_pods]

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            if wanted:
                status["reclaimablePods"] = wanted
            else:
                status.pop("reclaimablePods", None)

        update_status(self.kube, self.store, "workloads", workload_writes.path(step.workload), mutate)
        log.info(
            "updated reclaimable pods",
            extra={"object": o.key(step.workload), "kind": "Workload", "reclaimable_pods": wanted},
        )
        return job

    def _do_pods_ready(self, key: str, job: Obj, step: ja.SetPodsReady, now: datetime) -> Obj:
        assert step.workload is not None
        cond = step.condition

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            set_condition(
                status,
                {"type": cond.type, "status": cond.status, "reason": cond.reason, "message": cond.message},
                now,
                _generation(obj),
            )

        written = update_status(self.kube, self.store, "workloads", workload_writes.path(step.workload), mutate)
        # Only the first start is timed; a recovery (`Recovered`) is not.
        if (
            written is not None
            and cond.status == "True"
            and cond.reason == c.PodsReadyReason.STARTED
            and self.on_ready is not None
        ):
            self.on_ready(written, now)
        log.info(
            "pods ready condition",
            extra={
                "object": o.key(step.workload),
                "kind": "Workload",
                "decision": "PodsReady",
                "status": cond.status,
                "reason": cond.reason,
            },
        )
        return job

    def _do_clear_reservation(self, key: str, job: Obj, step: ja.ClearReservation, now: datetime) -> Obj:
        """The evicted Workload of a stopped Job gives its quota back and is requeued."""
        assert step.workload is not None

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            clear_reservation(
                status,
                requeue=step.requeue,
                reason=step.reason,
                message=step.message,
                now=now,
                generation=_generation(obj),
            )

        update_status(self.kube, self.store, "workloads", workload_writes.path(step.workload), mutate)
        log.info(
            "reservation cleared",
            extra={"object": o.key(step.workload), "kind": "Workload", "decision": "Requeued", "reason": step.reason},
        )
        return job

    def _do_delete_job(self, key: str, job: Obj, step: ja.DeleteJob, now: datetime) -> Obj | None:
        """The deactivation retention period is over: the job goes, its pods in the background."""
        path = k.object_path(self.integration.api_version, self.integration.resource, o.namespace(job), o.name(job))
        try:
            self.kube.delete(path, body={"propagationPolicy": "Background", **o.uid_precondition(job)})
        except (k.NotFound, k.Conflict):  # gone, or recreated since (the UID precondition failed)
            return None
        log.info("deleted job", extra={"object": key, "kind": self.integration.kind, "decision": "Deleted"})
        return job  # gone, but the event of the next step still names it

    def _do_start(self, key: str, job: Obj, step: ja.StartJob, now: datetime) -> Obj | None:
        assert step.workload is not None
        wl = self._latest(step.workload)
        try:
            patch = self.integration.job(job).run_with_pod_sets_info(
                wl,
                {rf["metadata"]["name"]: rf for rf in self.store.list("resourceflavors")},
                tas=self.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING),
                assign_queue_labels=self.config.feature_enabled(Feature.ASSIGN_QUEUE_LABELS_FOR_PODS),
                elastic=self.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES),
            )
        except StartConflict as exc:
            self._finish(wl, c.FinishedReason.FAILED_TO_START, str(exc), now)
            return job
        except (podset.FlavorNotFound, JobError) as exc:  # JobError: e.g. a TrainJob's runtime is gone
            raise Retry(1.0, str(exc)) from exc
        out = self._patch_job(key, job, patch)
        if out is None:
            return None
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        log.info(
            "started job",
            extra={"object": key, "kind": self.integration.kind, "decision": "Started", "cluster_queue": cq},
        )
        self._emit(out, "Normal", c.JobEventReason.STARTED, f"Admitted by clusterQueue {cq}")
        return out

    def _do_record_admission_checks(self, key: str, job: Obj, step: ja.RecordAdmissionChecks, now: datetime) -> Obj:
        """`recordAdmissionCheckUpdate`: the Pending checks' messages, as a Job event."""
        regarding = job if step.regarding is None else step.regarding
        self._emit(regarding, "Normal", c.JobEventReason.UPDATED_ADMISSION_CHECK, step.message)
        return job

    def _do_sync_queue(self, key: str, job: Obj, step: ja.SyncQueueName, now: datetime) -> Obj:
        assert step.workload is not None
        self._patch_workload(step.workload, {"spec": {"queueName": step.queue_name or None}})
        return job

    def _do_workload_conditions(self, key: str, job: Obj, step: ja.SetWorkloadConditions, now: datetime) -> Obj:
        assert step.workload is not None

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            set_conditions(status, step.conditions, now, _generation(obj), clear_admission=step.clear_admission)

        update_status(self.kube, self.store, "workloads", workload_writes.path(step.workload), mutate)
        log.info(
            "workload conditions",
            extra={
                "object": o.key(step.workload),
                "kind": "Workload",
                "conditions": ",".join(str(cd.get("type")) for cd in step.conditions),
            },
        )
        return job

    # -- a composable job's pods --------------------------------------------------------------------
    def _do_patch_pod(self, key: str, job: Obj, step: ja.PatchPod, now: datetime) -> Obj:
        if not step.patch:
            return job
        try:
            self.store.put("pods", self.kube.patch(_pod_path(step.pod), dict(step.patch)))
        except k.NotFound:
            return job
        if step.gate_removal is not None:
            # Read the clock once this pod's patch is through, as upstream does per pod of a group;
            # a negative span (clock skew against the API server's transition time) counts as 0.
            g = step.gate_removal
            done = self.clock() if self.clock is not None else now
            m.POD_SCHEDULING_GATE_REMOVAL.labels(
                c.ADMISSION_GATE, g.cluster_queue, "true" if g.is_group else "false", ROLE
            ).observe(max(0.0, (done - g.admitted_at).total_seconds()))
        log.info("started pod", extra={"object": o.key(step.pod), "kind": "Pod", "job": key, "decision": "Started"})
        return job

    def _do_stop_pod(self, key: str, job: Obj, step: ja.StopPod, now: datetime) -> Obj:
        """Server-side apply of the TerminationTarget condition (field manager `kueue`), then the
        delete; a pod gone meanwhile is left alone."""
        meta = o.meta(step.pod)
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
            "status": {"conditions": [dict(step.condition)]},
        }
        try:
            self.kube.request(
                "PATCH",
                _pod_path(step.pod) + "/status",
                body=body,
                content_type="application/apply-patch+yaml",
                query={"fieldManager": "kueue", "force": "true"},
            )
        except k.NotFound:
            return job
        self._delete_pod(step.pod)
        return job

    def _do_delete_pod(self, key: str, job: Obj, step: ja.DeletePod, now: datetime) -> Obj:
        if not self._delete_pod(step.pod) and step.expected:
            self.settled(key, o.uid(step.pod))
        return job

    def _do_remove_pod_finalizer(self, key: str, job: Obj, step: ja.RemovePodFinalizer, now: datetime) -> Obj:
        if not self._remove_pod_finalizer(step.pod) and step.expected:
            self.settled(key, o.uid(step.pod))
        return job

    def _delete_pod(self, pod: Obj) -> bool:
        """DELETE with the uid as precondition; False when it was already gone."""
        try:
            self.kube.delete(_pod_path(pod), body=o.uid_precondition(pod) or None)
        except (k.NotFound, k.Conflict):  # gone, or replaced by a pod of the same name
            return False
        log.info("deleted pod", extra={"object": o.key(pod), "kind": "Pod", "decision": "DeletedPod"})
        return True

    def _remove_pod_finalizer(self, pod: Obj) -> bool:
        """Drop the pod's finalizer with a resourceVersion-guarded merge patch; on Conflict read
        again and retry. False when there was nothing to remove (gone, replaced by a namesake, or
        already released)."""
        uid, path = o.uid(pod), _pod_path(pod)
        obj: Mapping[str, Any] | None = self.store.get("pods", o.key(pod))
        fresh = False
        for _ in range(_ATTEMPTS):
            if obj is None or (uid and o.uid(obj) != uid and not fresh):
                obj, fresh = self.kube.get(path), True
                if obj is None:
                    return False
            if uid and o.uid(obj) != uid:
                return False  # a different pod of the same name now
            finalizers = list(o.meta(obj).get("finalizers") or ())
            if c.POD_FINALIZER not in finalizers:
                return False
            remaining = [f for f in finalizers if f != c.POD_FINALIZER]
            patch = {
                "metadata": {"finalizers": remaining or None, "resourceVersion": o.meta(obj).get("resourceVersion")}
            }
            try:
                out = self.kube.patch(path, patch)
            except k.NotFound:
                return False
            except k.Conflict:
                obj = None
                continue
            if out.get("metadata"):
                self.store.put("pods", out)
            log.info("removed finalizer", extra={"object": o.key(pod), "kind": "Pod", "finalizer": c.POD_FINALIZER})
            return True
        raise k.Conflict(409, f"finalizer of {o.key(pod)}: still conflicting after {_ATTEMPTS} attempts")


def _pod_path(pod: Obj) -> str:
    return k.object_path("v1", "pods", o.namespace(pod), o.name(pod))
