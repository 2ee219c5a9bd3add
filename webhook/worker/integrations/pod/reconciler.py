"""Plain Pods and pod groups in the worker: keys, event mapping and expectations.

The `JobSource` of the generic job reconciler for the pod integration, around the pure
`pod.reconcile_pod` / `reconcile_group`, mirroring at upstream commit ff69552e79
`pkg/controller/jobs/pod/{pod_controller.go,event_handlers.go,indexer.go}` and
`pkg/util/expectations/store.go`:

* only pods labelled `kueue.x-k8s.io/managed=true` are watched (`LABEL_SELECTOR`), so the
  informer holds only what Kueue manages;
* reconcile keys as upstream's: a single pod is `ns/name`, a pod group is `group/<ns>/<name>`
  (upstream's request has namespace `group/<ns>`); Workload events map back to the group when
  annotated `kueue.x-k8s.io/is-group-workload: "true"`, else to their controller Pod;
* expectations: the UIDs of the excess and replaced pods a pass deleted or released must be seen
  gone or without the finalizer before the group is matched again (upstream's
  `excessPodExpectations`); the pods of a stopped group are not awaited, as upstream's `Stop`;
* `managedJobsNamespaceSelector` is checked before a live pod or group is reconciled;
* the plan is carried out by the generic reconciler's `JobExecutor`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import selector
from webhook.api.integrations import POD
from webhook.config import Configuration
from webhook.worker import events
from webhook.worker.integrations.pod import adapter as pg
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.plan import Plan
from webhook.worker.jobframework.reconciler import GenericJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring
from webhook.worker.store import Store, object_key

__all__ = [
    "CONTROLLER_NAME",
    "GROUP_PREFIX",
    "LABEL_SELECTOR",
    "PodReconciler",
    "PodSource",
    "group_key",
    "setup",
    "workload_keys",
]

LABEL_SELECTOR = f"{c.MANAGED_LABEL}=true"
GROUP_PREFIX = "group/"
CONTROLLER_NAME = "pod-kueue-controller"


def group_key(namespace: str, name: str) -> str:
    return f"{GROUP_PREFIX}{namespace}/{name}"


def _split_group(key: str) -> tuple[str, str] | None:
    """(namespace, group) of a group key; None for a single pod's `ns/name`."""
    if not key.startswith(GROUP_PREFIX) or key.count("/") != 2:
        return None
    ns, name = key[len(GROUP_PREFIX) :].split("/", 1)
    return ns, name


def pod_key(pod: Mapping[str, Any], opts: pg.Options) -> str:
    meta = pod.get("metadata") or {}
    group = pg.group_name(pod, opts)
    return group_key(meta.get("namespace", ""), group) if group else object_key(pod)


def workload_keys(wl: Mapping[str, Any]) -> list[str]:
    """`workloadHandler`: the group of a group Workload, else the Pod that controls it."""
    meta = wl.get("metadata") or {}
    ns = str(meta.get("namespace") or "")
    if (meta.get("annotations") or {}).get(c.IS_GROUP_WORKLOAD) == "true":
        return [group_key(ns, str(meta.get("name") or ""))]
    return [
        f"{ns}/{ref.get('name')}"
        for ref in meta.get("ownerReferences") or ()
        if ref.get("controller") and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1"
    ]


class _Expectations:
    """UIDs per key that this worker released and has not yet seen released (`expectations.Store`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uids: dict[str, set[str]] = {}

    def expect(self, key: str, uids: set[str]) -> None:
        if uids:
            with self._lock:
                self._uids.setdefault(key, set()).update(uids)

    def observed(self, key: str, uid: str) -> None:
        with self._lock:
            pending = self._uids.get(key)
            if pending is not None:
                pending.discard(uid)
                if not pending:
                    del self._uids[key]

    def satisfied(self, key: str) -> bool:
        with self._lock:
            return key not in self._uids


class PodSource:
    """The pod integration's keys (a pod, or its group), what one key plans, and the group
    expectations; `on` the informer threads for every event."""

    def __init__(self, store: Store, config: Configuration) -> None:
        self.store = store
        self.config = config
        self.opts = pg.Options.from_config(config)
        self.expectations = _Expectations()
        self._lock = threading.Lock()
        self._groups: dict[str, dict[str, None]] = {}  # group key -> pod keys (ordered set)

    def keys(self, kind: str, etype: str, obj: Mapping[str, Any]) -> Iterable[str]:
        if kind == "pods":
            return (self._on_pod(etype, obj),)
        if kind == "workloads":
            return workload_keys(obj)
        return ()

    def settled(self, key: str, uid: str) -> None:
        self.expectations.observed(key, uid)

    def _on_pod(self, etype: str, pod: Mapping[str, Any]) -> str:
        key = pod_key(pod, self.opts)
        meta = pod.get("metadata") or {}
        if key.startswith(GROUP_PREFIX):
            with self._lock:
                members = self._groups.setdefault(key, {})
                if etype == "DELETED":
                    members.pop(object_key(pod), None)
                    if not members:
                        del self._groups[key]
                else:
                    members[object_key(pod)] = None
            if etype == "DELETED" or c.POD_FINALIZER not in (meta.get("finalizers") or ()):
                self.expectations.observed(key, str(meta.get("uid") or ""))
        return key

    def _namespace_managed(self, ns: str) -> bool:
        ns_obj = self.store.get("namespaces", ns)
        if ns_obj is None:
            return False
        labels = (ns_obj.get("metadata") or {}).get("labels") or {}
        return selector.matches(self.config.managed_jobs_namespace_selector, labels, nil_matches=True)

    def _group_pods(self, key: str, name: str) -> list[dict[str, Any]]:
        with self._lock:
            members = list(self._groups.get(key, ()))
        pods = [p for pk in members if (p := self.store.get("pods", pk)) is not None]
        return [p for p in pods if pg.group_name(p, self.opts) == name]

    def _owned_workloads(self, ns: str, name: str) -> list[dict[str, Any]]:
        out = [
            wl
            for wl in self.store.list("workloads", ns)
            if any(
                ref.get("controller") and ref.get("kind") == "Pod" and ref.get("name") == name
                for ref in (wl.get("metadata") or {}).get("ownerReferences") or ()
            )
        ]
        return sorted(out, key=lambda w: (w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))

    def plan(self, key: str, now: datetime) -> tuple[Mapping[str, Any] | None, Plan]:
        group = _split_group(key)
        if group is not None:
            ns, name = group
            pods = self._group_pods(key, name)
            if pods and not self._namespace_managed(ns):
                return None, Plan()
            p = pg.reconcile_group(
                pods,
                name=name,
                workload=self.store.get("workloads", f"{ns}/{name}"),
                config=self.config,
                store=self.store,
                now=now,
                expectations_satisfied=self.expectations.satisfied(key),
            )
            self.expectations.expect(key, ja.expected_uids(p.steps))
            first = (
                min(pods, key=lambda pod: (pod["metadata"]["name"], pod["metadata"].get("uid", ""))) if pods else None
            )
            return _as_pod(first), p
        ns, name = key.split("/", 1)
        pod = self.store.get("pods", key)
        if pod is not None and not self._namespace_managed(ns):
            return None, Plan()
        return _as_pod(pod), pg.reconcile_pod(
            pod, workloads=self._owned_workloads(ns, name), config=self.config, store=self.store, now=now
        )


def _as_pod(pod: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The job object events name: listed pods lack their apiVersion and kind."""
    return None if pod is None else {**pod, "apiVersion": "v1", "kind": "Pod"}


class PodReconciler(GenericJobReconciler):
    """The pod integration's reconciler: the generic one with the pods' `PodSource`."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        config: Configuration,
        recorder: events.Recorder,
        *,
        stop: threading.Event,
        workers: int = 4,
        on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.pod_source = PodSource(store, config)
        self.opts = self.pod_source.opts
        self.expectations = self.pod_source.expectations
        integration = Integration(
            api_version=POD.api_version, kind=POD.kind, resource=POD.resource, controller_name=CONTROLLER_NAME
        )
        super().__init__(
            kube,
            store,
            config,
            recorder,
            integration,
            self.pod_source,
            on_ready=on_ready,
            clock=clock,
            workers=workers,
            stop=stop,
        )


def setup(ctx: SetupContext) -> Wiring:
    """The pod integration in the worker: only the pods Kueue manages are watched (`LABEL_SELECTOR`)."""
    reconciler = PodReconciler(ctx.kube, ctx.store, ctx.config, ctx.recorder, on_ready=ctx.on_ready, stop=ctx.stop)
    return Wiring(reconciler, watches=(Resource(POD.resource, POD.api_version, LABEL_SELECTOR),))
