"""The reconciler every job integration runs: its work queue, the events that queue a job, and
one reconcile = plan (pure) → actions carried out by the `JobExecutor`.

Mirrors `JobReconciler.ReconcileGenericJob`'s outer loop and `SetupWithManager` in
`pkg/controller/jobframework/reconciler.go` (upstream v0.19.2); the integration supplies its
`Integration` (adapter and kind) and its `plan` (the generic `reconciler.plan_*` functions behind
whatever the kind decides first).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from webhook import kube as k
from webhook.api import objects as o
from webhook.config import Configuration, Feature
from webhook.worker import events
from webhook.worker.jobframework.executor import Integration, JobExecutor
from webhook.worker.jobframework.reconciler import Plan, owned_workloads
from webhook.worker.reconcilers import elastic, workload_slices
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = ["GenericJobReconciler", "PlanFunc"]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]


class PlanFunc(Protocol):
    """One reconcile of an integration's job (`obj` None: it is gone)."""

    def __call__(self, obj: Obj | None, workloads: Sequence[Obj], /, *, namespace_labels: Mapping[str, str] | None,
                 config: Configuration, store: Store | None = None, now: datetime | None = None) -> Plan: ...


class GenericJobReconciler:
    """The reconciler of one integration: its work queue, `plan` for one job key
    (`namespace/name`), and the `JobExecutor` carrying the plan's actions out.
    `requeue_after(key, seconds)` asks for a later look (the deactivation retention period;
    default: this reconciler's queue); `on_ready` sees Workloads whose PodsReady turned
    True/Started."""

    def __init__(self, kube: k.Kube, store: Store, config: Configuration, recorder: events.Recorder, integration: Integration,
                 plan: PlanFunc, *, on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 requeue_after: Callable[[str, float], None] | None = None, stop: threading.Event | None = None) -> None:
        self.kube = kube
        self.store = store
        self.config = config
        self.events = recorder
        self.on_ready = on_ready  # PodsReady turned True/Started: the ready-wait-time metrics
        self.clock = clock
        self.integration = integration
        self.plan = plan
        self.queue: WorkQueue[object] = WorkQueue(integration.resource, self.reconcile, workers=4, stop=stop or threading.Event())
        self.requeue_after = requeue_after if requeue_after is not None else self.queue.add_after
        self.ungater = elastic.Ungater(kube, clock=clock)
        self.executor = JobExecutor(kube, store, config, recorder, integration, on_ready=on_ready)

    def start(self) -> None:
        self.queue.start()

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        """A job queues itself; a Workload queues the job that controls it."""
        if kind == self.integration.resource:
            self.queue.add(o.key(obj))
        elif kind == "workloads":
            for ref in o.owner_references(obj):
                if ref.get("controller") and ref.get("kind") == self.integration.kind:
                    self.queue.add(f"{o.namespace(obj)}/{ref.get('name')}")

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        ns, name = key.split("/", 1)
        job = self.store.get(self.integration.resource, key)
        ns_obj = self.store.get("namespaces", ns)
        ns_labels = None if ns_obj is None else o.labels(ns_obj)
        now = self.clock()
        p = self.plan(job, self._owned(ns, name), namespace_labels=ns_labels, config=self.config, store=self.store, now=now)
        if p.steps:
            log.info("reconciling job", extra={"object": key, "kind": self.integration.kind, "decision": p.action,
                                               "steps": ",".join(s.name for s in p.steps)})
        current: Obj | None = job
        for step in p.steps:
            current = self.executor.execute(key, current, step, now)
            if current is None and job is not None:
                return  # the job is gone
        if current is not None and not p.error and not self.integration.wrap(current).is_suspended() \
                and workload_slices.is_elastic(current, enabled=self.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)):
            self.ungater.ungate(current, self._owned(ns, name))
        if p.requeue_after is not None and self.requeue_after is not None:
            self.requeue_after(key, p.requeue_after)
        if p.error:
            raise Retry(0.5, p.error)

    def _owned(self, ns: str, name: str) -> list[dict[str, Any]]:
        return owned_workloads(self.store, ns, name, api_version=self.integration.api_version, kind=self.integration.kind)
