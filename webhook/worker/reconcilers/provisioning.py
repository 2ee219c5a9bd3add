"""The `kueue.x-k8s.io/provisioning-request` admission check controller: reads its caches, carries out
`admissionchecks.provisioning.plan` for each Workload and keeps its AdmissionChecks' `Active` condition.

Mirrors `SetupWithManager` and the I/O of `pkg/controller/admissionchecks/provisioning/controller.go`
(upstream v0.19.2): Workloads are reconciled on their own events, their ProvisioningRequests' (by
ownerReference), their AdmissionChecks' (a check of this controller created, changed or deleted) and
their configs' (a new class, parameters or managed resources); AdmissionChecks of this controller on
their own events and their ProvisioningRequestConfig's. ProvisioningRequests and configs come from the
Manager's informers; PodTemplates are read from the API when needed.

Upstream sets the controller up only where the ProvisioningRequest API is served
(`ServerSupportsProvisioningRequest`): elsewhere no check of this controller becomes Active and its
ClusterQueues stay inactive. Ours does nothing either until the API is served, and asks again every
`PROBE_S` (a cluster-autoscaler may install the CRD later; upstream needs a restart for it).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker import events, workload_writes
from webhook.worker.admissionchecks import provisioning as p
from webhook.worker.status import set_condition, update_status
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = ["CONDITION_MESSAGE_LIMIT", "PROBE_S", "REQUESTS", "ProvisioningController"]

log = logging.getLogger(__name__)

REQUESTS = "provisioningrequests"
CONFIGS = "provisioningrequestconfigs"
CONDITION_MESSAGE_LIMIT = 32 * 1024  # `api.TruncateConditionMessage`
PROBE_S = 30.0  # how often an unserved ProvisioningRequest API is asked about again


def _truncate(message: str) -> str:
    return message if len(message) <= CONDITION_MESSAGE_LIMIT else message[: CONDITION_MESSAGE_LIMIT - 4] + " ..."


class ProvisioningController:
    """Two reconcilers in one (a `Reconciler`): Workloads and AdmissionChecks of this controller."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        recorder: events.Recorder,
        *,
        stop: threading.Event,
        cleanup_on_eviction: bool = True,
        tas: bool = True,
        probe_s: float = PROBE_S,
    ) -> None:
        self.kube = kube
        self.store = store
        self.events = recorder
        self.cleanup_on_eviction = cleanup_on_eviction
        self.tas = tas
        self._lock = threading.Lock()
        self._served = False  # once served, the API stays (a removed CRD shows as failed writes)
        self._next_probe = 0.0
        self.probe_s = probe_s
        self.workloads: WorkQueue[object] = WorkQueue(
            "provisioning-workload", self.reconcile_workload, stop=stop, controller="provisioning_workload"
        )
        self.checks: WorkQueue[object] = WorkQueue(
            "provisioning-admissioncheck", self.reconcile_check, stop=stop, controller="provisioning_admissioncheck"
        )

    def start(self) -> None:
        self.workloads.start()
        self.checks.start()

    # == events ===================================================================================
    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind == "workloads" and etype != "DELETED" and self._concerns(obj):
            self.workloads.add(object_key(obj))
        elif kind == REQUESTS:
            for ref in o.owner_references(obj):
                if ref.get("kind") == "Workload" and ref.get("controller"):
                    self.workloads.add(f"{o.namespace(obj)}/{ref.get('name')}")
        elif kind == "admissionchecks":
            self.checks.add(o.name(obj))
            if (obj.get("spec") or {}).get("controllerName") == p.CONTROLLER_NAME:
                self._workloads_using(o.name(obj))
        elif kind == CONFIGS:
            for ac in self.store.list("admissionchecks"):
                if p.uses_config(ac, o.name(obj)):
                    self.checks.add(o.name(ac))
                    self._workloads_using(o.name(ac))

    def _concerns(self, wl: Mapping[str, Any]) -> bool:
        """A check of this controller, or requests to clean up: other Workloads have nothing to do here."""
        for state in (wl.get("status") or {}).get("admissionChecks") or ():
            ac = self.store.get("admissionchecks", str(state.get("name")))
            if ac is not None and (ac.get("spec") or {}).get("controllerName") == p.CONTROLLER_NAME:
                return True
        return any(p.owned_by(r, o.name(wl)) for r in self.store.list(REQUESTS, o.namespace(wl)))

    def _workloads_using(self, check: str) -> None:
        for wl in self.store.list("workloads"):
            if p.has_check(wl, check):
                self.workloads.add(object_key(wl))

    def served(self) -> bool:
        """The ProvisioningRequest API is served (a LIST of it is not NotFound); asked at most every `probe_s`."""
        with self._lock:
            if self._served:
                return True
            if time.monotonic() < self._next_probe:
                return False
            self._next_probe = time.monotonic() + self.probe_s
        try:
            self.kube.list(k.object_path(p.AUTOSCALING_V1, REQUESTS, None), query={"limit": "1"})
        except k.NotFound:
            log.info("ProvisioningRequest API not served: provisioning-request checks wait for it")
            return False
        with self._lock:
            self._served = True
        return True

    # == AdmissionChecks (`admissioncheck_reconciler.go`) =========================================
    def reconcile_check(self, name: str, _items: Sequence[object] = ()) -> None:
        ac = self.store.get("admissionchecks", name)
        if ac is None or (ac.get("spec") or {}).get("controllerName") != p.CONTROLLER_NAME:
            return
        if not self.served():
            raise Retry(self.probe_s, "ProvisioningRequest API not served")
        cond = p.active_condition(ac, {o.name(cfg): cfg for cfg in self.store.list(CONFIGS)})
        if cond is None:
            return

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            set_condition(status, cond, datetime.now(UTC))

        update_status(
            self.kube, self.store, "admissionchecks", k.object_path(c.V1BETA2, "admissionchecks", None, name), mutate
        )
        log.info(
            "admission check condition", extra={"object": name, "kind": "AdmissionCheck", "status": cond["status"]}
        )

    # == Workloads (`controller.go`) ==============================================================
    def inputs(self, namespace: str) -> p.Inputs:
        return p.Inputs(
            checks={o.name(ac): ac for ac in self.store.list("admissionchecks")},
            configs={o.name(cfg): cfg for cfg in self.store.list(CONFIGS)},
            flavors={o.name(rf): rf.get("spec") or {} for rf in self.store.list("resourceflavors")},
            requests=self.store.list(REQUESTS, namespace),
            cleanup_on_eviction=self.cleanup_on_eviction,
            tas=self.tas,
        )

    def reconcile_workload(self, key: str, _items: Sequence[object] = ()) -> None:
        wl = self.store.get("workloads", key)
        if wl is None or not self.served():
            return  # unserved: its checks are not Active, so no Workload is admitted through them
        plan = p.plan(wl, self.inputs(o.namespace(wl)))
        if plan.states is not None:
            written = self._write_states(wl, plan.states)
            if written is None:
                return  # deleted meanwhile: its requests go with it (ownerReferences)
            wl = written
            for note in plan.events:
                self.events.emit(wl, "Normal", "AdmissionCheckUpdated", events.truncate_note(note), p.EVENT_SOURCE)
        for name in plan.delete:
            self._delete_request(o.namespace(wl), name)
        for step in plan.provision:
            request = self._create(wl, step) if step.create else step.request
            self._adopt_templates(wl, request)
        if plan.error is not None:
            raise plan.error

    def _write_states(self, wl: Obj, states: Mapping[str, Obj]) -> dict[str, Any] | None:
        now = datetime.now(UTC)

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            checks = status.setdefault("admissionChecks", [])
            for state in states.values():
                p.set_check_state(checks, state, now)

        written = update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)
        log.info(
            "admission check states",
            extra={"object": o.key(wl), "kind": "Workload", "checks": {n: s.get("state") for n, s in states.items()}},
        )
        return written

    def _delete_request(self, namespace: str, name: str) -> None:
        with contextlib.suppress(k.NotFound):
            self.kube.delete(k.object_path(p.AUTOSCALING_V1, REQUESTS, namespace, name))
        self.store.delete(REQUESTS, f"{namespace}/{name}")
        log.info("provisioning request deleted", extra={"object": f"{namespace}/{name}", "kind": "ProvisioningRequest"})

    def _create(self, wl: Obj, step: p.Provision) -> Obj:
        """The step's PodTemplates (those missing) and its ProvisioningRequest; a failure is reported on
        the check (message and a FailedCreate event) and raised, so the Workload is retried."""
        namespace = o.namespace(wl)
        for template in step.templates:
            path = k.object_path("v1", "podtemplates", namespace, template.name)
            if self.kube.get(path) is not None:
                continue
            note = f'Error creating PodTemplate "{template.name}": '
            if template.body is None:
                self._report(wl, step, note + template.error)
                raise Retry(1.0, template.error)
            try:
                self.kube.create(k.object_path("v1", "podtemplates", namespace), template.body)
            except k.Conflict:
                raise  # created since the read above: the next attempt finds it
            except k.KubeError as exc:
                self._report(wl, step, note + str(exc))
                raise
        name = o.name(step.request)
        try:
            created = self.kube.create(k.object_path(p.AUTOSCALING_V1, REQUESTS, namespace), step.request)
        except k.KubeError as exc:
            if isinstance(exc, k.Conflict) and self.store.get(REQUESTS, f"{namespace}/{name}") is None:
                # An earlier reconcile created it and the watch has not shown it yet: a message now would
                # outlive the state it describes (it stays on the check, and in every event built from it).
                raise
            self._report(wl, step, f'Error creating ProvisioningRequest "{name}": {exc}')
            raise
        self.store.put(REQUESTS, created)
        self.events.emit(
            wl,
            "Normal",
            "ProvisioningRequestCreated",
            f'Created ProvisioningRequest: "{name}"',
            p.EVENT_SOURCE,
            action="Created",
        )
        log.info("provisioning request created", extra={"object": f"{namespace}/{name}", "kind": "ProvisioningRequest"})
        return created

    def _report(self, wl: Obj, step: p.Provision, message: str) -> None:
        """`handleError`: a Warning event and the message on the check."""
        self.events.emit(
            wl, "Warning", "FailedCreate", events.truncate_note(message), p.EVENT_SOURCE, action="FailedCreate"
        )
        if step.state is None:
            return
        state = {**step.state, "message": _truncate(message)}
        now = datetime.now(UTC)

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            p.set_check_state(status.setdefault("admissionChecks", []), state, now)

        update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)

    def _adopt_templates(self, wl: Obj, request: Obj) -> None:
        """The request's PodTemplates pass from the Workload's control to the request's, so they go with it."""
        namespace = o.namespace(request)
        for ps in (request.get("spec") or {}).get("podSets") or ():
            path = k.object_path("v1", "podtemplates", namespace, str((ps.get("podTemplateRef") or {}).get("name")))
            template = self.kube.get(path)
            if template is None:
                continue
            refs = [dict(r) for r in o.owner_references(template)]
            kept = [r for r in refs if not (r.get("controller") and _refers_to(r, wl, "Workload"))]
            controller = next((r for r in kept if r.get("controller")), None)
            if controller is None:
                kept.append(
                    {
                        "apiVersion": p.AUTOSCALING_V1,
                        "kind": "ProvisioningRequest",
                        "name": o.name(request),
                        "uid": o.uid(request),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                )
            elif not _refers_to(controller, request, "ProvisioningRequest"):
                raise Retry(5.0, f"PodTemplate {namespace}/{o.name(template)} is controlled by another object")
            if kept != refs:
                template.setdefault("metadata", {})["ownerReferences"] = kept
                self.kube.replace(path, template)


def _refers_to(ref: Mapping[str, Any], owner: Obj, kind: str) -> bool:
    uid = o.uid(owner)
    return ref.get("uid") == uid if uid else (ref.get("kind"), ref.get("name")) == (kind, o.name(owner))
