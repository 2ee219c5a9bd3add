"""The reconciler every job integration runs: its work queue, the events that queue a job, and
one reconcile = plan (pure) → actions carried out by the `JobExecutor`.

Mirrors `JobReconciler.ReconcileGenericJob`'s outer loop and `SetupWithManager` in
`pkg/controller/jobframework/reconciler.go` (upstream v0.19.2); the integration supplies its
`Integration` (adapter and kind) and its `JobSource`: which keys an event queues and what one
reconcile of a key plans (the generic `reconciler.plan_*` functions behind whatever the kind
decides first). `OwnedJobs` is the source of a job that is one object owning its Workloads.
"""

from __future__ import annotations

import abc
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

from webhook import kube as k
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.worker import events
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import elastic, workload_slices
from webhook.worker.jobframework.executor import Integration, JobExecutor
from webhook.worker.jobframework.interface import JobWithPodLabelSelector
from webhook.worker.jobframework.plan import Plan, owned_workloads
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "GenericJobReconciler",
    "JobSource",
    "OwnedJobReconciler",
    "OwnedJobs",
    "PlanFunc",
    "SelfWatchingReconciler",
    "Watch",
    "end_plan",
    "execute_plan",
    "queue_controller",
]

log = logging.getLogger(__name__)


class PlanFunc(Protocol):
    """One reconcile of an integration's job (`obj` None: it is gone)."""

    def __call__(
        self,
        obj: Obj | None,
        workloads: Sequence[Obj],
        /,
        *,
        namespace_labels: Mapping[str, str] | None,
        config: Configuration,
        store: Store | None = None,
        now: datetime | None = None,
    ) -> Plan: ...


class JobSource(Protocol):
    """Where an integration's reconcile keys come from and what one reconcile of a key plans."""

    def keys(self, kind: str, etype: str, obj: Obj) -> Iterable[str]:
        """The keys a watch event of `kind` queues."""
        ...

    def plan(self, key: str, now: datetime) -> tuple[Obj | None, Plan]:
        """The job object as the store holds it (None: gone) and the plan for it."""
        ...

    def settled(self, key: str, uid: str) -> None:
        """An expected pod release of `key` that no watch event will report."""
        ...


class OwnedJobs:
    """The `JobSource` of a job that is one object (key `namespace/name`) owning its Workloads:
    a job queues itself, a Workload queues the job that controls it."""

    def __init__(self, store: Store, config: Configuration, integration: Integration, plan: PlanFunc) -> None:
        self.store = store
        self.config = config
        self.integration = integration
        self.plan_job = plan

    def keys(self, kind: str, etype: str, obj: Obj) -> Iterable[str]:
        if kind == self.integration.resource:
            return (o.key(obj),)
        if kind == "workloads":
            return [
                f"{o.namespace(obj)}/{ref.get('name')}"
                for ref in o.owner_references(obj)
                if ref.get("controller") and ref.get("kind") == self.integration.kind
            ]
        return ()

    def plan(self, key: str, now: datetime) -> tuple[Obj | None, Plan]:
        ns, name = key.split("/", 1)
        job = self.store.get(self.integration.resource, key)
        ns_obj = self.store.get("namespaces", ns)
        ns_labels = None if ns_obj is None else o.labels(ns_obj)
        return job, self.plan_job(
            job, self.owned(ns, name), namespace_labels=ns_labels, config=self.config, store=self.store, now=now
        )

    def settled(self, key: str, uid: str) -> None:
        """A single-object job expects no pod releases."""

    def owned(self, ns: str, name: str) -> list[dict[str, Any]]:
        return owned_workloads(
            self.store, ns, name, api_version=self.integration.api_version, kind=self.integration.kind
        )


def queue_controller(integration: Integration) -> str:
    """The name upstream's controller for this kind has, which its work queue's series carry:
    controller-runtime's default for `For(kind)`, the lowercased kind; the pod integration's is
    `Named("v1_pod")` (`pkg/controller/jobs/pod/pod_controller.go`)."""
    return "v1_pod" if integration.kind == "Pod" and integration.api_version == "v1" else integration.kind.lower()


class GenericJobReconciler:
    """The reconciler of one integration: its work queue, its `JobSource` planning one key, and
    the `JobExecutor` carrying the plan's actions out. `requeue_after(key, seconds)` asks for a
    later look (the deactivation retention period; default: this reconciler's queue); `on_ready`
    sees Workloads whose PodsReady turned True/Started."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        config: Configuration,
        recorder: events.Recorder,
        integration: Integration,
        source: JobSource,
        *,
        on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        workers: int = 4,
        requeue_after: Callable[[str, float], None] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.kube = kube
        self.store = store
        self.config = config
        self.events = recorder
        self.on_ready = on_ready  # PodsReady turned True/Started: the ready-wait-time metrics
        self.clock = clock
        self.integration = integration
        self.source = source
        self.queue: WorkQueue[object] = WorkQueue(
            integration.resource,
            self.reconcile,
            workers=workers,
            stop=stop or threading.Event(),
            controller=queue_controller(integration),
        )
        self.requeue_after = requeue_after if requeue_after is not None else self.queue.add_after
        self.ungater = elastic.Ungater(kube, clock=clock)
        self.executor = JobExecutor(
            kube, store, config, recorder, integration, on_ready=on_ready, settled=source.settled, clock=clock
        )

    def start(self) -> None:
        self.queue.start()

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        for key in self.source.keys(kind, etype, obj):
            self.queue.add(key)

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        now = self.clock()
        job, p = self.source.plan(key, now)
        current = execute_plan(self.executor, key, job, p, now, settled=self.source.settled)
        if current is None and job is not None:
            return  # the job is gone
        # Elastic jobs (workload slices) are single objects: their new pods are ungated here.
        if (
            current is not None
            and not p.error
            and isinstance(self.source, OwnedJobs)
            and workload_slices.is_elastic(
                current, enabled=self.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)
            )
            and not (gj := self.integration.job(current)).is_suspended()
        ):
            selector = gj.pod_label_selector() if isinstance(gj, JobWithPodLabelSelector) else None
            self.ungater.ungate(current, self.source.owned(o.namespace(current), o.name(current)), selector=selector)
        if p.requeue_after is not None and self.requeue_after is not None:
            self.requeue_after(key, p.requeue_after)
        end_plan(key, self.integration.kind, p)


class OwnedJobReconciler(GenericJobReconciler):
    """The reconciler of an integration whose job is one object owning its Workloads (`OwnedJobs`):
    a subclass names its plan and integration (`class R(OwnedJobReconciler, plan=plan,
    integration=INTEGRATION)`, or builds the integration in `job_integration`); `wiring` is its
    adapter's `setup`. All a Job-like integration adds to the framework."""

    _plan: ClassVar[PlanFunc]
    _integration: ClassVar[Integration | None]

    def __init_subclass__(cls, *, plan: PlanFunc, integration: Integration | None = None) -> None:
        super().__init_subclass__()
        cls._plan, cls._integration = plan, integration

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        config: Configuration,
        recorder: events.Recorder,
        on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        requeue_after: Callable[[str, float], None] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        integration = self.job_integration(store, config)
        super().__init__(
            kube,
            store,
            config,
            recorder,
            integration,
            OwnedJobs(store, config, integration, type(self)._plan),
            on_ready=on_ready,
            clock=clock,
            requeue_after=requeue_after,
            stop=stop,
        )

    def job_integration(self, store: Store, config: Configuration) -> Integration:
        """The integration named at subclassing; overridden when it depends on the store or config."""
        if self._integration is None:
            raise TypeError(f"{type(self).__name__} names no integration")
        return self._integration

    @classmethod
    def wiring(cls, ctx: SetupContext, *watches: Resource) -> Wiring:
        """This reconciler in the worker, following `watches`."""
        return Wiring(cls(ctx.kube, ctx.store, ctx.config, ctx.recorder, on_ready=ctx.on_ready, stop=ctx.stop), watches)


@dataclass(frozen=True)
class Watch:
    """One kind a `SelfWatchingReconciler` follows in its own cache: `query` narrows it (a label
    selector); `optional` is an operator's CRD that may be installed later (listed empty until served)."""

    resource: str
    api_version: str
    query: Mapping[str, Any] | None = None
    optional: bool = False


class SelfWatchingReconciler(abc.ABC):
    """The reconciler of an integration whose objects the Manager's store does not hold (pods not yet
    managed, StatefulSets, LeaderWorkerSets): it follows its `watches` in its own cache, reads
    Workloads, namespaces and priority classes from the Manager's `Store`, and queues keys from
    `enqueue`. A subclass names its queue, integration and watches (`class R(SelfWatchingReconciler,
    queue="statefulsets", integration=..., watches=(Watch(...), ...))`) and defines `enqueue`,
    `on_event` (the Manager's events) and `reconcile`."""

    _queue_name: ClassVar[str]
    _integration: ClassVar[Integration]
    _watches: ClassVar[tuple[Watch, ...]]

    def __init_subclass__(cls, *, queue: str, integration: Integration, watches: tuple[Watch, ...]) -> None:
        super().__init_subclass__()
        cls._queue_name, cls._integration, cls._watches = queue, integration, watches

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        config: Configuration,
        recorder: events.Recorder,
        *,
        stop: threading.Event,
        workers: int = 2,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.kube = kube
        self.store = store
        self.cache = Store()
        self.config = config
        self.stop = stop
        self.clock = clock
        self.executor = JobExecutor(kube, store, config, recorder, self._integration, clock=clock)
        self.queue: WorkQueue[object] = WorkQueue(
            self._queue_name, self.reconcile, workers=workers, stop=stop, controller=queue_controller(self._integration)
        )

    def start(self) -> None:
        """One informer thread per watch, then the workers."""
        for watch in self._watches:
            threading.Thread(
                target=self._inform, args=(watch,), name=f"informer-{self._queue_name}-{watch.resource}", daemon=True
            ).start()
        self.queue.start()

    def _inform(self, watch: Watch) -> None:
        kind = watch.resource

        def on_list(items: list[dict[str, Any]]) -> None:
            self.cache.replace(kind, items)
            for obj in items:
                self.enqueue(kind, "ADDED", obj)

        def on_event(etype: str, obj: dict[str, Any]) -> None:
            if etype == "DELETED":
                self.cache.delete(kind, object_key(obj), obj)
            elif not self.cache.put(kind, obj):
                return
            self.enqueue(kind, etype, obj)

        k.informer(
            self.kube,
            k.object_path(watch.api_version, kind, None),
            on_list,
            on_event,
            stop=self.stop,
            query=watch.query,
            absent_is_empty=watch.optional,
        )

    @abc.abstractmethod
    def enqueue(self, kind: str, etype: str, obj: Mapping[str, Any]) -> None:
        """What an event of this reconciler's own informers queues (upstream's handlers); a list
        replays each object as ADDED."""

    @abc.abstractmethod
    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        """What an event of the Manager's store (a Workload) queues."""

    @abc.abstractmethod
    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        """One reconcile of a queued key."""


def execute_plan(
    executor: JobExecutor, key: str, job: Obj | None, plan: Plan, now: datetime, *, settled: Callable[[str, str], None]
) -> Obj | None:
    """Carry `plan` out for `key` in order; returns the newest copy of the job (None: it is gone).
    A failed write ends the pass with `Retry`, telling `settled` of the expected pod releases it
    did not get to (no watch event will report them)."""
    if plan.steps:
        log.info(
            "reconciling job",
            extra={
                "object": key,
                "kind": executor.integration.kind,
                "decision": plan.action,
                "steps": ",".join(s.name for s in plan.steps),
            },
        )
    current = job
    for i, step in enumerate(plan.steps):
        try:
            current = executor.execute(key, current, step, now)
        except (k.KubeError, Retry) as exc:
            for uid in ja.expected_uids(plan.steps[i:]):
                settled(key, uid)
            if isinstance(exc, Retry):
                raise
            log.warning(
                "reconcile write failed",
                extra={"object": key, "action": step.name, "status": exc.status, "error": str(exc)},
            )
            raise Retry(0.2, f"{step.name}: {exc}") from exc
        if current is None and job is not None:
            return None
    return current


def end_plan(key: str, kind: str, plan: Plan) -> None:
    """A plan's error: the key is retried, or (upstream's `UnretryableError`) only logged."""
    if plan.error and plan.retry:
        raise Retry(0.5, plan.error)
    if plan.error:
        log.warning("reconcile error", extra={"object": key, "kind": kind, "error": plan.error, "retry": False})
