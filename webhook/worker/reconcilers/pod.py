"""Plain Pods and pod groups in the worker: keys, event mapping, expectations and the reconcile loop.

The wiring around the pure `pod_group.reconcile_pod` / `reconcile_group`, mirroring at upstream
commit ff69552e79 `pkg/controller/jobs/pod/{pod_controller.go,event_handlers.go,indexer.go}` and
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
* the `Decision` is carried out by `executor.Executor`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import selector
from webhook.config import Configuration
from webhook.worker import events
from webhook.worker.reconcilers import actions as a
from webhook.worker.reconcilers import pod_group as pg
from webhook.worker.reconcilers.executor import Executor, expected_uids
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import WorkQueue

__all__ = ["GROUP_PREFIX", "LABEL_SELECTOR", "PodReconciler", "group_key", "is_enabled", "workload_keys"]

log = logging.getLogger(__name__)

LABEL_SELECTOR = f"{c.MANAGED_LABEL}=true"
GROUP_PREFIX = "group/"


def is_enabled(config: Configuration) -> bool:
    """The pod integration runs when `pod` is a framework, or implicitly for its parent integrations."""
    return "pod" in config.integrations.frameworks or pg.Options.from_config(config).implicitly_enabled


def group_key(namespace: str, name: str) -> str:
    return f"{GROUP_PREFIX}{namespace}/{name}"


def _split_group(key: str) -> tuple[str, str] | None:
    """(namespace, group) of a group key; None for a single pod's `ns/name`."""
    if not key.startswith(GROUP_PREFIX) or key.count("/") != 2:
        return None
    ns, name = key[len(GROUP_PREFIX):].split("/", 1)
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
    return [f"{ns}/{ref.get('name')}" for ref in meta.get("ownerReferences") or ()
            if ref.get("controller") and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1"]


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


class PodReconciler:
    """Owns the `pods` work queue; `on_event` is called by the informer threads for every event."""

    def __init__(self, kube: k.Kube, store: Store, config: Configuration, recorder: events.Recorder, *,
                 stop: threading.Event, workers: int = 4,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        self.opts = pg.Options.from_config(config)
        self.executor = Executor(kube, store, recorder, clock=clock)
        self.expectations = _Expectations()
        self.queue: WorkQueue[object] = WorkQueue("pods", self.reconcile, workers=workers, stop=stop)
        self._lock = threading.Lock()
        self._groups: dict[str, dict[str, None]] = {}  # group key -> pod keys (ordered set)

    def start(self) -> None:
        self.queue.start()

    # == events ===================================================================================
    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind == "pods":
            self.queue.add(self._on_pod(etype, obj))
        elif kind == "workloads":
            for key in workload_keys(obj):
                self.queue.add(key)

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

    # == reconcile ================================================================================
    def _namespace_managed(self, ns: str) -> bool:
        ns_obj = self.store.get("namespaces", ns)
        if ns_obj is None:
            return False
        labels = (ns_obj.get("metadata") or {}).get("labels") or {}
        return selector.matches(self.config.managed_jobs_namespace_selector, labels, nil_matches=True)

    def _lookups(self) -> pg.Lookups:
        return pg.Lookups(
            resource_flavors={o["metadata"]["name"]: o.get("spec") or {} for o in self.store.list("resourceflavors")},
            workload_priority_classes={o["metadata"]["name"]: int(o.get("value") or 0)
                                       for o in self.store.list("workloadpriorityclasses")},
            priority_classes={o["metadata"]["name"]: (int(o.get("value") or 0), bool(o.get("globalDefault")))
                              for o in self.store.list("priorityclasses")},
        )

    def _group_pods(self, key: str, name: str) -> list[dict[str, Any]]:
        with self._lock:
            members = list(self._groups.get(key, ()))
        pods = [p for pk in members if (p := self.store.get("pods", pk)) is not None]
        return [p for p in pods if pg.group_name(p, self.opts) == name]

    def _owned_workloads(self, ns: str, name: str) -> list[dict[str, Any]]:
        out = [wl for wl in self.store.list("workloads", ns)
               if any(ref.get("controller") and ref.get("kind") == "Pod" and ref.get("name") == name
                      for ref in (wl.get("metadata") or {}).get("ownerReferences") or ())]
        return sorted(out, key=lambda w: (w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        now = self.clock()
        group = _split_group(key)
        if group is not None:
            ns, name = group
            pods = self._group_pods(key, name)
            if pods and not self._namespace_managed(ns):
                return
            decision = pg.reconcile_group(pods, name=name, workload=self.store.get("workloads", f"{ns}/{name}"),
                                          opts=self.opts, lookups=self._lookups(), now=now,
                                          expectations_satisfied=self.expectations.satisfied(key))
            self.expectations.expect(key, expected_uids(decision.actions))
        else:
            ns, name = key.split("/", 1)
            pod = self.store.get("pods", key)
            if pod is not None and not self._namespace_managed(ns):
                return
            decision = pg.reconcile_pod(pod, workloads=self._owned_workloads(ns, name), opts=self.opts,
                                        lookups=self._lookups(), now=now)
        if decision.actions:
            log.info("reconciling pods", extra={"object": key, "kind": "Pod", "actions": _summary(decision.actions)})
        self.executor.run(key, decision, now=now, settled=lambda uid: self.expectations.observed(key, uid))


def _summary(actions: Sequence[a.Action]) -> str:
    return ",".join(type(act).__name__ for act in actions)
