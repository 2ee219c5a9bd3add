"""Lookups for the webhook from a cluster: caches of namespaces, LocalQueues, ClusterQueues,
WorkloadPriorityClasses and AdmissionChecks (their controller, for MultiKueue's `managedBy` default),
and of our Budgets (their status, for submit-time warnings). The server's own username is asked once
at start (a SelfSubjectReview): the submitting-user annotation trusts it (`admission.submitter`).

Each cache is fed by one list+watch thread, so handlers answer from memory; only an owner
object (the ancestor walk), a Workload and a TrainJob's runtime are read from the API on demand,
off the event loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from webhook import kube as k
from webhook.admission.context import LookupError_
from webhook.api import constants as c
from webhook.api import integrations, schema_budget
from webhook.api import trainjob as tj
from webhook.core import model

__all__ = ["ClusterLookups"]

log = logging.getLogger(__name__)

# What readiness waits for: every cache's first list, and this server's own identity.
_REQUIRED = frozenset({"namespaces", "localqueues", "wpcs", "clusterqueues", "admissionchecks", "identity"})


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def _target(lq: Mapping[str, Any]) -> str:
    return str((lq.get("spec") or {}).get("clusterQueue", ""))


def _controller(ac: Mapping[str, Any]) -> str:
    return str((ac.get("spec") or {}).get("controllerName", ""))


class ClusterLookups:
    def __init__(self, kube: k.Kube) -> None:
        self._kube = kube
        self._stop = threading.Event()
        self._namespaces: dict[str, Mapping[str, str]] = {}
        self._local_queues: dict[tuple[str, str], str] = {}  # -> its ClusterQueue
        # Parsed once per watch event, not per admission request (the queue warnings read them).
        self._cluster_queues: dict[str, model.ClusterQueueSpec] = {}
        self._priority_classes: set[str] = set()
        self._check_controllers: dict[str, str] = {}  # AdmissionCheck name -> spec.controllerName
        self._budgets: dict[str, Mapping[str, Any]] = {}
        self._identity = ""
        self._synced: set[str] = set()
        self._threads: list[threading.Thread] = []

    # -- feeding ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._run("namespaces", "/api/v1/namespaces", self._set_namespaces, self._namespace_event)
        self._run("localqueues", "/apis/kueue.x-k8s.io/v1beta2/localqueues", self._set_lqs, self._lq_event)
        self._run("wpcs", "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses", self._set_wpcs, self._wpc_event)
        self._run("clusterqueues", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", self._set_cqs, self._cq_event)
        self._run("admissionchecks", "/apis/kueue.x-k8s.io/v1beta2/admissionchecks", self._set_acs, self._ac_event)
        # Optional: without the Budget CRD there is nothing to warn about (not counted in `synced`).
        t = threading.Thread(
            target=k.informer,
            args=(self._kube, schema_budget.PATH, self._set_budgets, self._budget_event),
            kwargs={"stop": self._stop, "absent_is_empty": True},
            name="lookup-budgets",
            daemon=True,
        )
        t.start()
        self._threads.append(t)
        t = threading.Thread(target=self._ask_identity, name="lookup-identity", daemon=True)
        t.start()
        self._threads.append(t)

    def _ask_identity(self) -> None:
        """Who this server is, until answered: readiness waits for it, so that the worker's Workloads
        (created under the same identity) never lose the user their job carries."""
        while not self._stop.is_set():
            try:
                review = self._kube.create(
                    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                )
            except k.NotFound:  # a server older than Kubernetes 1.28: nobody is trusted
                log.warning("SelfSubjectReview not served: the submitting-user annotation trusts no identity")
                self._synced.add("identity")
                return
            except k.KubeError as exc:
                log.warning("SelfSubjectReview failed; asking again in 2s", extra={"error": str(exc)})
                self._stop.wait(2.0)
                continue
            self._identity = str(((review.get("status") or {}).get("userInfo") or {}).get("username") or "")
            self._synced.add("identity")
            return

    def _run(self, name: str, path: str, on_list: Any, on_event: Any) -> None:
        t = threading.Thread(
            target=k.informer,
            args=(self._kube, path, on_list, on_event),
            kwargs={"stop": self._stop, "on_synced": lambda: self._synced.add(name)},
            name=f"lookup-{name}",
            daemon=True,
        )
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()

    def synced(self) -> bool:
        return self._synced >= _REQUIRED

    def _set_namespaces(self, items: list[dict[str, Any]]) -> None:
        self._namespaces = {_key(o)[1]: (o.get("metadata") or {}).get("labels") or {} for o in items}

    def _namespace_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = _key(obj)[1]
        if kind == "DELETED":
            self._namespaces.pop(name, None)
        else:
            self._namespaces[name] = (obj.get("metadata") or {}).get("labels") or {}

    def _set_lqs(self, items: list[dict[str, Any]]) -> None:
        self._local_queues = {_key(o): _target(o) for o in items}

    def _lq_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._local_queues.pop(_key(obj), None)
        else:
            self._local_queues[_key(obj)] = _target(obj)

    def _set_cqs(self, items: list[dict[str, Any]]) -> None:
        self._cluster_queues = {_key(o)[1]: model.parse_cluster_queue(o) for o in items}

    def _cq_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._cluster_queues.pop(_key(obj)[1], None)
        else:
            self._cluster_queues[_key(obj)[1]] = model.parse_cluster_queue(obj)

    def _set_wpcs(self, items: list[dict[str, Any]]) -> None:
        self._priority_classes = {_key(o)[1] for o in items}

    def _wpc_event(self, kind: str, obj: dict[str, Any]) -> None:
        (self._priority_classes.discard if kind == "DELETED" else self._priority_classes.add)(_key(obj)[1])

    def _set_acs(self, items: list[dict[str, Any]]) -> None:
        self._check_controllers = {_key(o)[1]: _controller(o) for o in items}

    def _ac_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._check_controllers.pop(_key(obj)[1], None)
        else:
            self._check_controllers[_key(obj)[1]] = _controller(obj)

    def _set_budgets(self, items: list[dict[str, Any]]) -> None:
        self._budgets = {_key(o)[1]: o for o in items}

    def _budget_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._budgets.pop(_key(obj)[1], None)
        else:
            self._budgets[_key(obj)[1]] = obj

    # -- Lookups ---------------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        labels = self._namespaces.get(namespace)
        if labels is not None:
            return labels
        try:  # created a moment ago: not in the cache yet
            obj = self._kube.get(f"/api/v1/namespaces/{namespace}")
        except k.KubeError as exc:
            raise LookupError_(str(exc)) from None
        if obj is None:
            raise LookupError_(f'namespaces "{namespace}" not found')
        return (obj.get("metadata") or {}).get("labels") or {}

    def local_queue_exists(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self._local_queues

    def local_queue_cluster_queue(self, namespace: str, name: str) -> str | None:
        return self._local_queues.get((namespace, name))

    def cluster_queue(self, name: str) -> model.ClusterQueueSpec | None:
        return self._cluster_queues.get(name)

    def workload_priority_class_exists(self, name: str) -> bool:
        if name in self._priority_classes:
            return True
        try:  # created a moment before the object that names it: not in the cache yet
            obj = self._kube.get(f"/apis/{c.V1BETA2}/workloadpriorityclasses/{name}", timeout=5)
        except k.KubeError as exc:
            raise LookupError_(str(exc)) from None
        return obj is not None

    def admission_check_controller(self, name: str) -> str | None:
        return self._check_controllers.get(name)

    def get_owner(self, namespace: str, api_version: str, kind: str, name: str) -> Mapping[str, Any] | None:
        plural = integrations.plural(api_version.rpartition("/")[0], kind)
        try:
            return self._kube.get(k.object_path(api_version, plural, namespace, name), timeout=5)
        except k.KubeError as exc:
            raise LookupError_(str(exc)) from None

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.get_owner(namespace, c.V1BETA2, "Workload", name)

    def training_runtime(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        path = k.object_path(integrations.TRAINJOB.api_version, tj.RUNTIME_RESOURCES[kind], namespace, name)
        try:
            return self._kube.get(path, timeout=5)
        except k.KubeError as exc:
            raise LookupError_(str(exc)) from None

    def own_identity(self) -> str:
        return self._identity

    def budgets(self) -> list[Mapping[str, Any]]:
        return list(self._budgets.values())
