"""The `kueue.x-k8s.io/multikueue` admission check controller: connects to the worker clusters,
keeps the MultiKueueClusters' and the checks' `Active` conditions, and carries out
`admissionchecks.multikueue.group.plan_group` for each Workload with a MultiKueue check.

Three work queues, as upstream's three reconcilers:

* `mk-cluster` (MultiKueueClusters): load the kubeconfig (`kubeconfig.load_client_config`, from the
  Secrets of Kueue's namespace, or its ClusterProfiles with gate MultiKueueClusterProfile), connect or reconnect the `RemoteCluster` with the backoff of
  `connection.ConnectionState`, write `Active` only when its status, reason or message change.
  Queued on the cluster's events, its Secret's or ClusterProfile's, and a lost connection.
* `mk-admissioncheck` (AdmissionChecks of this controller): `checks.active_condition`. Queued on
  the check's events, its MultiKueueConfig's and its clusters' `Active` changes.
* `mk-workload` (Workloads with a MultiKueue check): read the remote copies from the watches of the
  connected clusters of the check's config (`RemoteClient`), plan, and carry the plan out: remote
  creates, updates and deletes, the local check state, `clusterName` and `nominatedClusterNames` in
  one status write, Events, `Finish`, the job sync through the kind's adapter, the requeue. Queued on the Workload's
  events, 1 s after a remote object of it changed, and 1 s after its config's clusters changed. A
  deleted Workload is kept in a cache until its remote copies are removed.

And a garbage collector: every `multiKueue.gcInterval`, each connected worker's Workloads of our
origin whose local Workload is gone are deleted with their jobs (a manager that was down, or lost
a worker, while a Workload was deleted).

Mirrors upstream v0.19.2 `pkg/controller/admissionchecks/multikueue/` (`multikueuecluster.go`
`clustersReconciler`, `admissioncheck.go` `ACReconciler`, `workload.go` `wlReconciler` and
`wlGroup.RemoveRemoteObjects`, `controllers.go`) and `jobframework/utils.go`
(`ValidateRemoteObjectOwnership`, `DeleteRemoteObjectIfOwned`). Not here yet: the incremental
dispatcher's queue and manager quota automation.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from webhook import kube as k
from webhook import metrics
from webhook.api import constants as c
from webhook.api import integrations
from webhook.api import multikueue as mk
from webhook.api import objects as o
from webhook.api.integrations import Framework
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.worker import events, preemption_gates, workload_writes
from webhook.worker.admissionchecks import parameters
from webhook.worker.admissionchecks.multikueue import checks, connection, dispatch, quota
from webhook.worker.admissionchecks.multikueue import group as g
from webhook.worker.admissionchecks.multikueue.kubeconfig import LoadError, load_client_config
from webhook.worker.admissionchecks.provisioning import set_check_state
from webhook.worker.jobframework import workload_slices
from webhook.worker.multikueue.remote import KubeFactory, RemoteClient, RemoteCluster, WatchedKind
from webhook.worker.reporter import ROLE
from webhook.worker.status import set_condition, update_status
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "CLUSTERS",
    "CLUSTER_EVENT_SOURCE",
    "CLUSTER_PROFILES",
    "CONFIGS",
    "QUOTA_RESYNC_S",
    "SECRETS",
    "UPDATES_BATCH_S",
    "WORKLOAD_EVENT_SOURCE",
    "MultiKueueController",
    "Settings",
    "adapters_for",
]

log = logging.getLogger(__name__)

CLUSTERS = "multikueueclusters"
CONFIGS = "multikueueconfigs"
CLUSTER_PROFILES = "clusterprofiles"  # multicluster.x-k8s.io (`mk.CLUSTER_PROFILE_API_VERSION`)
SECRETS = "secrets"
UPDATES_BATCH_S = 1.0
QUOTA_RESYNC_S = 5.0
"""How often an automated manager ClusterQueue re-reads its workers' queues (upstream watches them)."""
"""Remote events and config changes reach a Workload this much later (`constants.UpdatesBatchPeriod`)."""
WORKLOAD_EVENT_SOURCE = "kueue-workload-controller"
CLUSTER_EVENT_SOURCE = "multikueue-cluster"
_NOT_OWNED = "remote object is not owned by MultiKueue"  # jobframework.ErrRemoteObjectNotOwnedByMultiKueue


class _Adapter(Protocol):
    """What this controller uses of `webhook.worker.integrations.multikueue.MultiKueueAdapter`
    (the Manager's layer reaches integrations through the registry only)."""

    @property
    def framework(self) -> Framework: ...

    @property
    def watches_remote(self) -> bool: ...

    @property
    def patch_status(self) -> bool: ...

    def managed(self, local: Obj) -> tuple[bool, str]: ...

    def group(self, local: Obj) -> str | None: ...

    def remote_body(
        self, local: Obj, workload: str, origin: str, *, identifier_annotations: bool
    ) -> dict[str, Any]: ...

    def status_update(self, local: Obj, remote: Obj, *, now: datetime) -> tuple[dict[str, Any] | None, bool]: ...

    def workload_keys(self, remote: Obj, *, identifier_annotations: bool) -> list[str]: ...


def adapters_for(frameworks: Sequence[str]) -> dict[str, _Adapter]:
    """The MultiKueue adapters of the enabled frameworks, by `gvk.String()` (`GetMultiKueueAdapters`)."""
    out: dict[str, _Adapter] = {}
    for framework in integrations.enabled(frameworks):
        if framework.multikueue_adapter is not None:
            module, _, attr = framework.multikueue_adapter.partition(":")
            out[framework.gvk] = getattr(importlib.import_module(module), attr or "ADAPTER")
    return out


@dataclass(frozen=True, slots=True)
class Settings:
    """The Configuration as this controller reads it."""

    namespace: str
    """Kueue's namespace: where `locationType: Secret` kubeconfigs live."""
    origin: str = mk.DEFAULT_ORIGIN
    worker_lost_timeout: timedelta = timedelta(seconds=mk.DEFAULT_WORKER_LOST_TIMEOUT_S)
    dispatcher: str = mk.DISPATCHER_ALL_AT_ONCE
    path_validation: bool = False
    identifier_annotations: bool = True
    elastic: bool = False
    gc_interval: timedelta = timedelta(seconds=mk.DEFAULT_GC_INTERVAL_S)
    """How often remote objects whose local Workload is gone are deleted; zero: never."""
    quota_automation: bool = False
    """Gate MultiKueueManagerQuotaAutomation: `quotaManagement: Automated` configs are acted on."""
    step_size: int = mk.DEFAULT_STEP_SIZE
    """Workers the incremental dispatcher adds per round (its config counts with gate
    MultiKueueIncrementalDispatcherConfig only)."""
    respect_order: bool = True
    """Gate MultiKueueIncrementalDispatcherRespectConfigOrder: nominate in the config's order, not by name."""
    cluster_profile: bool = False
    """Gate MultiKueueClusterProfile: `clusterProfileRef` sources are read from Kueue's namespace."""
    orchestrated_preemption: bool = False
    """Gate MultiKueueOrchestratedPreemption: remote copies carry our preemption gate, opened one
    worker at a time."""

    @classmethod
    def from_config(cls, config: Configuration) -> Settings:
        mkc = config.multi_kueue
        return cls(
            namespace=config.namespace,
            origin=mkc.origin,
            worker_lost_timeout=timedelta(seconds=mkc.worker_lost_timeout_s),
            dispatcher=mkc.dispatcher_name,
            path_validation=config.feature_enabled(Feature.MULTI_KUEUE_KUBE_CONFIG_PATH_VALIDATION),
            identifier_annotations=config.feature_enabled(Feature.WORKLOAD_IDENTIFIER_ANNOTATIONS),
            elastic=config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES),
            gc_interval=timedelta(seconds=mkc.gc_interval_s),
            quota_automation=config.feature_enabled(Feature.MULTI_KUEUE_MANAGER_QUOTA_AUTOMATION),
            step_size=_step_size(config),
            respect_order=config.feature_enabled(Feature.MULTI_KUEUE_INCREMENTAL_DISPATCHER_RESPECT_CONFIG_ORDER),
            cluster_profile=config.feature_enabled(Feature.MULTI_KUEUE_CLUSTER_PROFILE),
            orchestrated_preemption=config.feature_enabled(Feature.MULTI_KUEUE_ORCHESTRATED_PREEMPTION),
        )


def _step_size(config: Configuration) -> int:
    """`IncrementalDispatcherReconciler.stepSize`."""
    idc = config.multi_kueue.incremental_dispatcher_config
    if config.feature_enabled(Feature.MULTI_KUEUE_INCREMENTAL_DISPATCHER_CONFIG) and idc and idc.step_size:
        return idc.step_size
    return mk.DEFAULT_STEP_SIZE


def _read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _stamp(when: float) -> datetime:
    return datetime.fromtimestamp(when, UTC)


class MultiKueueController:
    """Three reconcilers in one (a `Reconciler`): MultiKueueClusters, AdmissionChecks of this
    controller, and their Workloads. `remote_kube` builds a worker's client from its kubeconfig."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        recorder: events.Recorder,
        *,
        settings: Settings,
        adapters: Mapping[str, _Adapter],
        remote_kube: KubeFactory,
        stop: threading.Event,
        read_file: Callable[[str], bytes] = _read_file,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.kube = kube
        self.store = store
        self.events = recorder
        self.settings = settings
        self.adapters = dict(adapters)
        self.remote_kube = remote_kube
        self.read_file = read_file
        self.now = now
        self._lock = threading.Lock()  # held for map operations only
        self.remotes: dict[str, RemoteCluster] = {}
        self._deleted: dict[str, Obj] = {}  # deletedWlCache: Workloads gone while they had a MultiKueue check
        self._generations: dict[str, object] = {}  # MultiKueueCluster name -> generation last seen
        self._configs_seen: dict[str, tuple[str, ...]] = {}  # MultiKueueConfig name -> spec.clusters last seen
        # A connection attempt may wait for its lists a while: other clusters are not held up by it.
        self.clusters: WorkQueue[object] = WorkQueue(
            "mk-cluster", self.reconcile_cluster, workers=4, stop=stop, controller="multikueue_cluster"
        )
        self.checks: WorkQueue[object] = WorkQueue(
            "mk-admissioncheck", self.reconcile_check, stop=stop, controller="multikueue_admissioncheck"
        )
        self.workloads: WorkQueue[object] = WorkQueue(
            "mk-workload", self.reconcile_workload, workers=2, stop=stop, controller="multikueue_workload"
        )
        self.cluster_queues: WorkQueue[object] = WorkQueue(
            "mk-clusterqueue", self.reconcile_cluster_queue, stop=stop, controller="multikueue_clusterqueue"
        )
        self.dispatches: WorkQueue[object] = WorkQueue(
            "mk-dispatcher", self.reconcile_dispatch, stop=stop, controller="multikueue_incremental_dispatcher"
        )
        self._rounds: dict[str, datetime] = {}  # Workload key -> start of its incremental dispatch round
        self._cq_generations: dict[str, object] = {}  # ClusterQueue name -> generation last seen
        self._stop = stop

    def start(self) -> None:
        self.clusters.start()
        self.checks.start()
        self.workloads.start()
        if self.settings.quota_automation:
            self.cluster_queues.start()
        if self.settings.dispatcher == mk.DISPATCHER_INCREMENTAL:
            self.dispatches.start()
        threading.Thread(target=self._stop_remotes_on_exit, name="mk-remotes", daemon=True).start()
        if self.settings.gc_interval > timedelta(0):
            threading.Thread(target=self._collect_garbage_forever, name="mk-gc", daemon=True).start()

    def _stop_remotes_on_exit(self) -> None:
        self._stop.wait()
        for remote in self._take_remotes():
            remote.stop()

    def _take_remotes(self) -> list[RemoteCluster]:
        with self._lock:
            remotes, self.remotes = list(self.remotes.values()), {}
        return remotes

    # == events =====================================================================================
    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        name = o.name(obj)
        if kind == CLUSTERS:
            # Our own status writes come back as updates: only a new generation or a deletion is
            # reconciled again (upstream's Update predicate); the checks follow any `Active` change.
            generation = o.meta(obj).get("generation")
            with self._lock:
                seen = self._generations.get(name)
                self._generations[name] = generation
                if etype == "DELETED":
                    del self._generations[name]
            if etype != "MODIFIED" or seen != generation or o.is_deleting(obj):
                self.clusters.add(name)
            self._queue_checks(checks.checks_using_cluster(self._checks(), self.store.list(CONFIGS), name))
            self._queue_cluster_queues()
        elif kind == SECRETS and o.namespace(obj) == self.settings.namespace:
            for cluster in self.store.list(CLUSTERS):
                ref = (_spec(cluster).get("clusterSource") or {}).get("kubeConfig") or {}
                if (
                    ref.get("locationType", mk.LocationType.SECRET) == mk.LocationType.SECRET
                    and ref.get("location") == name
                ):
                    self.clusters.add(o.name(cluster))
        elif kind == CLUSTER_PROFILES and o.namespace(obj) == self.settings.namespace:
            # `clusterProfileHandler`: the clusters naming this profile.
            for cluster in self.store.list(CLUSTERS):
                if ((_spec(cluster).get("clusterSource") or {}).get("clusterProfileRef") or {}).get("name") == name:
                    self.clusters.add(o.name(cluster))
        elif kind == CONFIGS:
            self._queue_cluster_queues()
            using = checks.checks_using_config(self._checks(), name)
            self._queue_checks(using)
            clusters = tuple(str(cl) for cl in _spec(obj).get("clusters") or ())
            with self._lock:
                before = self._configs_seen.get(name)
                self._configs_seen[name] = clusters
                if etype == "DELETED":
                    self._configs_seen.pop(name, None)
            if etype == "DELETED" or (etype == "MODIFIED" and before is not None and before != clusters):
                self._queue_workloads_using(using)
        elif kind == "admissionchecks" and _spec(obj).get("controllerName") == mk.CONTROLLER_NAME:
            self.checks.add(name)
            self._queue_cluster_queues()
        elif kind == "clusterqueues" and self.settings.quota_automation:
            # Its own writes come back as updates: only a new generation is reconciled again.
            generation = None if etype == "DELETED" else o.meta(obj).get("generation")
            with self._lock:
                seen = self._cq_generations.get(name)
                self._cq_generations[name] = generation
            if etype != "DELETED" and generation != seen:
                self.cluster_queues.add(name)
        elif kind == "localqueues" and self.settings.quota_automation and etype in ("ADDED", "DELETED"):
            self.cluster_queues.add_after(str(_spec(obj).get("clusterQueue") or ""), UPDATES_BATCH_S)
        elif kind == "workloads":
            key = object_key(obj)
            if g.multikueue_check(obj, self._controllers()) is None:
                return
            if etype == "DELETED":
                with self._lock:
                    self._deleted[key] = dict(obj)
            self.workloads.add(key)
            if self.settings.dispatcher == mk.DISPATCHER_INCREMENTAL:
                self.dispatches.add(key)

    def _queue_workloads_using(self, checks_: Sequence[str]) -> None:
        """`configHandler`: a config's clusters changed or it went; its Workloads look again soon."""
        for wl in self.store.list("workloads"):
            if any(state.get("name") in checks_ for state in (wl.get("status") or {}).get("admissionChecks") or ()):
                self.workloads.add_after(object_key(wl), UPDATES_BATCH_S)

    def _checks(self) -> list[dict[str, Any]]:
        return self.store.list("admissionchecks")

    def _controllers(self) -> dict[str, str]:
        return {o.name(ac): str(_spec(ac).get("controllerName") or "") for ac in self._checks()}

    def _queue_checks(self, names: Sequence[str]) -> None:
        for name in names:
            self.checks.add(name)

    def _remote_keys(self, _cluster: str, keys: list[str]) -> None:
        """A remote object changed: its local Workload, if there is one, a moment later."""
        for key in keys:
            if self.store.get("workloads", key) is not None or key in self._deleted:
                self.workloads.add_after(key, UPDATES_BATCH_S)

    def _connection_lost(self, cluster: str) -> None:
        self.clusters.add(cluster)

    # == MultiKueueClusters (`clustersReconciler.Reconcile`) ======================================
    def _remote(self, name: str) -> RemoteCluster:
        with self._lock:
            remote = self.remotes.get(name)
            if remote is None:
                remote = self.remotes[name] = RemoteCluster(
                    name,
                    build=self.remote_kube,
                    origin=self.settings.origin,
                    kinds=self._watched_kinds(),
                    on_keys=self._remote_keys,
                    on_lost=self._connection_lost,
                    clock=lambda: self.now().timestamp(),  # lost-since is compared with the plan's `now`
                )
            return remote

    def _watched_kinds(self) -> list[WatchedKind]:
        kinds = [WatchedKind(k.object_path(c.V1BETA2, "workloads", None), lambda wl: [object_key(wl)])]
        for adapter in self.adapters.values():
            if adapter.watches_remote:
                fw = adapter.framework
                kinds.append(WatchedKind(k.object_path(fw.api_version, fw.resource, None), self._keys_of(adapter)))
        return kinds

    def _keys_of(self, adapter: _Adapter) -> Callable[[Obj], list[str]]:
        def keys(obj: Obj) -> list[str]:
            return adapter.workload_keys(obj, identifier_annotations=self.settings.identifier_annotations)

        return keys

    def reconcile_cluster(self, name: str, _items: Sequence[object] = ()) -> None:
        cluster = self.store.get(CLUSTERS, name)
        ref = (_spec(cluster or {}).get("clusterSource") or {}).get("kubeConfig") or {}
        if (
            cluster is not None
            and ref.get("locationType") == mk.LocationType.PATH
            and not self.settings.path_validation
        ):
            self.events.emit(
                cluster,
                "Warning",
                mk.DEPRECATED_PATH_USAGE_REASON,
                mk.DEPRECATED_PATH_USAGE_MESSAGE,
                CLUSTER_EVENT_SOURCE,
            )
        if cluster is None or o.is_deleting(cluster):
            with self._lock:
                remote = self.remotes.pop(name, None)
            if remote is not None:
                remote.stop()
                log.info("worker cluster removed", extra={"object": name, "kind": "MultiKueueCluster"})
            return
        secrets = {o.name(s): s for s in self.store.list(SECRETS, self.settings.namespace)}
        profiles = (
            {o.name(p): p for p in self.store.list(CLUSTER_PROFILES, self.settings.namespace)}
            if self.settings.cluster_profile
            else None
        )
        loaded = load_client_config(
            cluster,
            secrets,
            path_validation=self.settings.path_validation,
            read_file=self.read_file,
            cluster_profiles=profiles,
        )
        if isinstance(loaded, LoadError):
            with self._lock:
                remote = self.remotes.get(name)
            if remote is not None:
                remote.disconnect()
            self._write_cluster(cluster, connection.cluster_condition(cluster, load_error=loaded))
            if not loaded.not_found:  # a missing Secret comes back with its creation
                raise Retry(1.0, loaded.message)
            return
        requeue, error = self._remote(name).update(loaded)
        if error is not None:
            log.warning("worker cluster connection failed", extra={"object": name, "error": error, "retry_s": requeue})
            self._write_cluster(cluster, connection.cluster_condition(cluster, connection_error=error))
        elif requeue is None:
            self._write_cluster(cluster, connection.cluster_condition(cluster))
        if requeue is not None:
            self.clusters.add_after(name, requeue)

    def _write_cluster(self, cluster: Obj, cond: dict[str, Any]) -> None:
        """`updateStatus`: only a new status, reason or message is written."""
        if not connection.condition_changed(cluster, cond):
            return
        now = self.now()

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            set_condition(status, cond, now)

        update_status(
            self.kube, self.store, CLUSTERS, k.object_path(c.V1BETA2, CLUSTERS, None, o.name(cluster)), mutate
        )
        log.info(
            "worker cluster condition",
            extra={
                "object": o.name(cluster),
                "kind": "MultiKueueCluster",
                "status": cond["status"],
                "reason": cond["reason"],
            },
        )

    # == AdmissionChecks (`ACReconciler.Reconcile`) ================================================
    def reconcile_check(self, name: str, _items: Sequence[object] = ()) -> None:
        ac = self.store.get("admissionchecks", name)
        if ac is None:
            return
        configs = {o.name(cfg): cfg for cfg in self.store.list(CONFIGS)}
        clusters = {o.name(cl): cl for cl in self.store.list(CLUSTERS)}
        cond = checks.active_condition(ac, configs, clusters)
        if cond is None:
            return
        now = self.now()

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            set_condition(status, cond, now)

        update_status(
            self.kube, self.store, "admissionchecks", k.object_path(c.V1BETA2, "admissionchecks", None, name), mutate
        )
        log.info(
            "admission check condition",
            extra={"object": name, "kind": "AdmissionCheck", "status": cond["status"], "reason": cond["reason"]},
        )

    # == the incremental dispatcher (`IncrementalDispatcherReconciler`) =============================
    def reconcile_dispatch(self, key: str, _items: Sequence[object] = ()) -> None:
        """`dispatch.plan_round` for one Workload with a Pending MultiKueue check: nominate the next
        workers once the current round is over."""
        wl: Obj | None = self.store.get("workloads", key)
        if wl is None or o.is_deleting(wl):
            with self._lock:
                self._rounds.pop(key, None)
            return
        acs = g.multikueue_check(wl, self._controllers())
        elastic = workload_slices.is_elastic(wl, enabled=self.settings.elastic)
        if dispatch.skip_nomination(acs, wl, elastic=elastic):
            return
        assert acs is not None
        clusters = self._config_clusters(str(acs.get("name")))
        if clusters is None:
            return
        if o.is_condition_true(wl, c.WorkloadCondition.FINISHED) or not o.has_quota_reservation(wl):
            with self._lock:
                self._rounds.pop(key, None)
            return
        now = self.now()
        with self._lock:
            started = self._rounds.get(key)
        nominated = [str(n) for n in (wl.get("status") or {}).get("nominatedClusterNames") or ()]
        step = dispatch.plan_round(
            nominated,
            clusters,
            step=self.settings.step_size,
            respect_order=self.settings.respect_order,
            started=started,
            now=now,
        )
        if step.error:
            log.warning("incremental dispatch failed", extra={"object": key, "error": step.error})
            raise Retry(dispatch.ROUND_TIMEOUT.total_seconds(), step.error)
        if step.nominate is not None:
            names = list(step.nominate)

            def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
                status["nominatedClusterNames"] = names

            update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)
            with self._lock:
                self._rounds[key] = now
            log.info("workers nominated", extra={"object": key, "clusters": names})
        if step.wait is not None:
            self.dispatches.add_after(key, step.wait.total_seconds())

    # == manager quota automation (`cqReconciler.Reconcile`) =========================================
    def _queue_cluster_queues(self) -> None:
        """A MultiKueue check, config or cluster changed: the queues with a MultiKueue check look
        again, a moment later (`queueEventsForAC` and the handlers that lead to it)."""
        if not self.settings.quota_automation:
            return
        controllers = self._controllers()
        for cq in self.store.list("clusterqueues"):
            if quota.multikueue_check_of(cq, controllers) is not None:
                self.cluster_queues.add_after(o.name(cq), UPDATES_BATCH_S)

    def reconcile_cluster_queue(self, name: str, _items: Sequence[object] = ()) -> None:
        """`quota.plan_quota` for one manager ClusterQueue, read from the store and, for an
        automated one, from its connected workers' LocalQueues and ClusterQueues. Upstream watches
        the workers' queues; here an automated queue reads them again every `QUOTA_RESYNC_S`."""
        cq = self.store.get("clusterqueues", name)
        if cq is None:
            return
        check = quota.multikueue_check_of(cq, self._controllers())
        config: Obj | None = None
        totals: dict[str, str] = {}
        if check is not None:
            ac = self.store.get("admissionchecks", check)
            configs = {o.name(cfg): cfg for cfg in self.store.list(CONFIGS)}
            try:
                config = checks.config_from_ref(_spec(ac or {}).get("parameters"), configs)
            except parameters.ConfigNotFound:
                config = None
            except parameters.BadParametersRef as exc:
                log.info("admission check has no usable config", extra={"object": check, "error": str(exc)})
                return
            if config is not None and _spec(config).get("quotaManagement") == "Automated":
                totals = quota.aggregate(
                    [o.key(lq) for lq in self.store.list("localqueues") if _spec(lq).get("clusterQueue") == name],
                    self._worker_queues([str(cl) for cl in _spec(config).get("clusters") or ()]),
                )
                self.cluster_queues.add_after(name, QUOTA_RESYNC_S)
        plan = quota.plan_quota(cq, check is not None, config, totals)
        path = k.object_path(c.V1BETA2, "clusterqueues", None, name)
        if plan.resources is not None:
            spec = copy.deepcopy(dict(_spec(cq)))
            spec["resourceGroups"][0]["flavors"][0]["resources"] = plan.resources
            cq = self.kube.replace(path, {**cq, "spec": spec})
            self.store.put("clusterqueues", cq)
            log.info("manager quota automated", extra={"object": name, "kind": "ClusterQueue"})
        self._write_quota_condition(cq, path, plan.condition)

    def _worker_queues(self, clusters: Sequence[str]) -> list[quota.WorkerQueues]:
        """The LocalQueues and ClusterQueues of each connected worker of `clusters`."""
        out = []
        for cluster in clusters:
            with self._lock:
                remote = self.remotes.get(cluster)
            client = remote.client if remote is not None else None
            if client is None:
                continue  # not connected: left out of the sum, as upstream
            local_queues, _ = client.list(k.object_path(c.V1BETA2, "localqueues", None))
            cluster_queues, _ = client.list(k.object_path(c.V1BETA2, "clusterqueues", None))
            out.append(quota.WorkerQueues(local_queues, cluster_queues))
        return out

    def _write_quota_condition(self, cq: Obj, path: str, cond: dict[str, Any] | None) -> None:
        """The MultiKueueManagerQuotaAutomation condition, written only when its state changes (or
        removed, `cond` None)."""
        if cond is None and o.find_condition(cq, quota.CONDITION) is None:
            return
        if cond is not None and not connection.condition_changed(cq, cond):
            return
        now = self.now()
        generation = int(o.meta(cq).get("generation") or 0)

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            if cond is None:
                status["conditions"] = [x for x in status.get("conditions") or () if x.get("type") != quota.CONDITION]
            else:
                set_condition(status, cond, now, generation)

        update_status(self.kube, self.store, "clusterqueues", path, mutate)

    # == garbage collection (`remoteClient.runGC`) ==================================================
    def _collect_garbage_forever(self) -> None:
        """`clustersReconciler.runGC`: every `gcInterval`, each connected worker in turn."""
        while not self._stop.wait(self.settings.gc_interval.total_seconds()):
            with self._lock:
                remotes = sorted(self.remotes.items())
            for name, remote in remotes:
                client = remote.client
                if client is None:
                    continue  # disconnected: its objects are collected once it is back
                try:
                    self.collect_garbage(name, client)
                except (k.KubeError, OSError) as exc:
                    log.warning("multikueue garbage collection failed", extra={"cluster": name, "error": str(exc)})

    def collect_garbage(self, cluster: str, kube: RemoteClient) -> None:
        """`remoteClient.runGC`: the worker's Workloads of our origin whose local Workload is gone
        or being deleted are deleted, after their job (through its kind's adapter, if ours)."""
        query = {"labelSelector": f"{mk.ORIGIN_LABEL}={self.settings.origin}"}
        remotes, _ = kube.list(k.object_path(c.V1BETA2, "workloads", None), query=query)
        for remote in remotes:
            local = self.store.get("workloads", o.key(remote))
            if local is not None and not o.is_deleting(local):
                continue
            owner = o.controller_of(remote)
            if owner is not None:
                adapter = self.adapters.get(g.gvk_string(str(owner.get("apiVersion")), str(owner.get("kind"))))
                if adapter is not None:
                    self.delete_remote_job(kube, adapter, o.namespace(remote), str(owner.get("name")))
            with contextlib.suppress(k.NotFound):
                kube.delete(workload_writes.path(remote))
            log.info("orphaned remote workload deleted", extra={"object": o.key(remote), "cluster": cluster})

    def delete_remote_job(self, kube: RemoteClient, adapter: _Adapter, namespace: str, name: str) -> None:
        """`DeleteRemoteObjectIfOwned`: the remote job, or every member of a remote pod group,
        only if it carries our origin."""
        fw = adapter.framework
        remote_job = kube.get(k.object_path(fw.api_version, fw.resource, namespace, name))
        if remote_job is None or o.labels(remote_job).get(mk.ORIGIN_LABEL) != self.settings.origin:
            return
        for member in self.members(adapter, remote_job, deleting=True):
            with contextlib.suppress(k.NotFound):
                kube.delete(
                    k.object_path(fw.api_version, fw.resource, namespace, o.name(member)),
                    body={"propagationPolicy": "Background"},
                )

    def members(self, adapter: _Adapter, obj: Obj, *, deleting: bool = False) -> list[Obj]:
        """`obj` and the rest of its group among the local objects (`listLocalPods`), by name;
        `obj` alone when it has none. Members being deleted count only with `deleting` (their
        remote copies go too)."""
        group = adapter.group(obj)
        if group is None:
            return [obj]
        siblings = self.store.list(adapter.framework.resource, o.namespace(obj))
        found: dict[str, Obj] = {
            o.name(m): m for m in siblings if adapter.group(m) == group and (deleting or not o.is_deleting(m))
        }
        found.setdefault(o.name(obj), obj)
        return [found[name] for name in sorted(found)]

    # == Workloads (`wlReconciler.Reconcile`) =======================================================
    def reconcile_workload(self, key: str, _items: Sequence[object] = ()) -> None:
        wl: Obj | None = self.store.get("workloads", key)
        deleted = wl is None or o.is_deleting(wl)
        if wl is None:
            with self._lock:
                wl = self._deleted.get(key)
            if wl is None:
                return
        acs = g.multikueue_check(wl, self._controllers())
        if acs is None or acs.get("state") == c.CHECK_STATE_REJECTED:
            self._forget(key, deleted)
            return
        owner = g.resolve_owner(wl, self.adapters)
        adapter = self.adapters.get(owner.adapter) if owner.adapter is not None else None
        local_job: Obj | None = None
        managed = (True, "")
        if adapter is not None:
            local_job = self._local_job(adapter, o.namespace(wl), owner.name)
            if local_job is None and not deleted:
                log.info("workload owner not found", extra={"object": key, "owner": owner.name})
                return  # upstream's GET of the owner fails: its deletion takes the Workload with it
            if local_job is not None and not deleted:
                managed = adapter.managed(local_job)
        check_name = str(acs.get("name"))
        clusters = self._config_clusters(check_name)
        if clusters is None:
            return
        remotes: dict[str, Obj | None] = {}
        unavailable: list[str] = []
        lost_since: dict[str, datetime] = {}
        kubes: dict[str, RemoteClient] = {}
        for cluster in clusters:
            with self._lock:
                remote = self.remotes.get(cluster)
            client = remote.client if remote is not None else None
            if remote is None or client is None:
                unavailable.append(cluster)
                since = remote.state.lost_since if remote is not None else None
                if since is not None:
                    lost_since[cluster] = _stamp(since)
                continue
            kubes[cluster] = client
            remotes[cluster] = client.get(workload_writes.path(wl))  # readGroup, from the cluster's watch
        ctx = g.GroupContext(
            now=self.now(),
            check=check_name,
            owner=owner,
            origin=self.settings.origin,
            worker_lost_timeout=self.settings.worker_lost_timeout,
            managed=managed,
            unavailable=tuple(unavailable),
            lost_since=lost_since,
            dispatcher=self.settings.dispatcher,
            elastic_enabled=self.settings.elastic,
            deleted=deleted,
            orchestrated_preemption=self.settings.orchestrated_preemption,
        )
        plan = g.plan_group(wl, remotes, ctx)
        _Run(self, wl, adapter, local_job, owner.name, kubes).run(plan)
        if deleted:
            self._forget(key, deleted)

    def _forget(self, key: str, deleted: bool) -> None:
        if deleted:
            with self._lock:
                self._deleted.pop(key, None)

    def _local_job(self, adapter: _Adapter, namespace: str, name: str) -> Obj | None:
        fw = adapter.framework
        cached = self.store.get(fw.resource, f"{namespace}/{name}")
        if cached is not None:
            return cached
        return self.kube.get(k.object_path(fw.api_version, fw.resource, namespace, name))

    def _config_clusters(self, check: str) -> list[str] | None:
        """The clusters of the check's MultiKueueConfig (`remoteClientsForAC`); None when the check
        or its config is missing (the check is then not Active: nothing was admitted through it)."""
        ac = self.store.get("admissionchecks", check)
        if ac is None:
            return None
        configs = {o.name(cfg): cfg for cfg in self.store.list(CONFIGS)}
        try:
            config = checks.config_from_ref(_spec(ac).get("parameters"), configs)
        except (parameters.BadParametersRef, parameters.ConfigNotFound) as exc:
            log.info("admission check has no usable config", extra={"object": check, "error": str(exc)})
            return None
        return [str(name) for name in _spec(config).get("clusters") or ()]


class _Run:
    """One plan carried out (`reconcileGroup`'s writes): remote steps at once, local status steps
    merged into one write made before the next remote step or at the end (`clusterName` and
    `nominatedClusterNames` must change together: the API refuses both set)."""

    def __init__(
        self,
        ctl: MultiKueueController,
        wl: Obj,
        adapter: _Adapter | None,
        local_job: Obj | None,
        job_name: str,
        kubes: Mapping[str, RemoteClient],
    ) -> None:
        self.ctl = ctl
        self.wl = wl
        self.adapter = adapter
        self.local_job = local_job
        self.job_name = job_name
        self.kubes = kubes
        self.pending: list[Callable[[dict[str, Any]], None]] = []
        self.notes: list[g.Event] = []
        self.deferred = False

    def run(self, plan: g.GroupPlan) -> None:
        requeue: timedelta | None = None
        for step in plan.steps:
            match step:
                case g.SetCheck() | g.SetClusterName() | g.SetNomination() | g.SetDelayedTopologyReady():
                    self._local(step)
                case g.ReportAdmitted(cluster=cluster):
                    metrics.MULTIKUEUE_WORKLOADS_ADMITTED.labels(self._cluster_queue(), cluster, ROLE).inc()
                    log.info("workload admitted on worker", extra={"object": o.key(self.wl), "cluster": cluster})
                case g.RequeueAfter(after=after, if_deferred=if_deferred):
                    requeue = if_deferred if self.deferred and if_deferred is not None else after
                case g.Fail(message=message):
                    self._flush()
                    log.warning("multikueue reconcile failed", extra={"object": o.key(self.wl), "error": message})
                    raise Retry(1.0, message)
                case _:
                    self._flush()
                    self._remote_or_finish(step)
        self._flush()
        if requeue is not None:
            self.ctl.workloads.add_after(o.key(self.wl), requeue.total_seconds())

    # -- local status --------------------------------------------------------------------------------
    def _local(self, step: g.SetCheck | g.SetClusterName | g.SetNomination | g.SetDelayedTopologyReady) -> None:
        now = self.ctl.now()
        match step:
            case g.SetCheck(check=check, event=event):
                self.pending.append(lambda st: set_check_state(st.setdefault("admissionChecks", []), check, now))
                if event is not None:
                    self.notes.append(event)
            case g.SetClusterName(cluster=cluster):
                self.pending.append(lambda st: st.__setitem__("clusterName", cluster))
            case g.SetNomination(clusters=clusters):
                self.pending.append(
                    lambda st: (
                        st.__setitem__("nominatedClusterNames", list(clusters))
                        if clusters
                        else st.pop("nominatedClusterNames", None)
                    )
                )
            case g.SetDelayedTopologyReady(pod_sets=pod_sets):
                self.pending.append(lambda st: _delayed_topology_ready(st, pod_sets))

    def _flush(self) -> None:
        if not self.pending:
            return
        changes, self.pending = self.pending, []
        notes, self.notes = self.notes, []

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            for change in changes:
                change(status)

        written = update_status(self.ctl.kube, self.ctl.store, "workloads", workload_writes.path(self.wl), mutate)
        if written is None:
            return
        self.wl = written
        for note in notes:
            self.ctl.events.emit(
                written, note.type, g.EVENT_REASON, events.truncate_note(note.message), WORKLOAD_EVENT_SOURCE
            )
        log.info("multikueue workload status", extra={"object": o.key(written), "kind": "Workload"})

    # -- remote steps ----------------------------------------------------------------------------------
    def _remote_or_finish(self, step: g.Step) -> None:
        match step:
            case g.RemoveRemote(cluster=cluster, workload=remote):
                self._remove(cluster, remote)
            case g.CreateClone(cluster=cluster, body=body):
                kube = self.kubes[cluster]
                kube.create(k.object_path(c.V1BETA2, "workloads", o.namespace(self.wl)), body)
                metrics.MULTIKUEUE_WORKLOADS_DISPATCHED.labels(self._cluster_queue(), cluster, ROLE).inc()
                log.info("remote workload created", extra={"object": o.key(self.wl), "cluster": cluster})
            case g.UpdateRemoteSpec(cluster=cluster, workload=remote):
                self.kubes[cluster].replace(workload_writes.path(remote), remote)
                log.info("remote workload spec updated", extra={"object": o.key(self.wl), "cluster": cluster})
            case g.SetRemoteDeactivation(cluster=cluster, workload=remote, message=message):
                self._deactivate(cluster, remote, message)
            case g.OpenRemotePreemptionGate(cluster=cluster, workload=remote):
                status = copy.deepcopy(dict(remote.get("status") or {}))
                preemption_gates.open_gate(status, remote, mk.PREEMPTION_GATE, self.ctl.now())
                self.kubes[cluster].replace(workload_writes.path(remote) + "/status", {**remote, "status": status})
                log.info("remote preemption gate opened", extra={"object": o.key(self.wl), "cluster": cluster})
            case g.SyncJob(cluster=cluster):
                self.deferred = self._sync_job(cluster) or self.deferred
            case g.Finish(reason=reason, message=message):
                workload_writes.finish(self.ctl.kube, self.ctl.store, self.wl, reason, message, self.ctl.now())
                log.info("workload finished on worker", extra={"object": o.key(self.wl), "reason": reason})

    def _cluster_queue(self) -> str:
        return str(((self.wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")

    def _job_path(self, namespace: str, name: str | None = None) -> str:
        assert self.adapter is not None
        fw = self.adapter.framework
        return k.object_path(fw.api_version, fw.resource, namespace, name or self.job_name)

    def _owned(self, remote_job: Obj) -> bool:
        """`ValidateRemoteObjectOwnership`: the remote job carries our origin; raises otherwise."""
        origin = self.ctl.settings.origin
        if o.labels(remote_job).get(mk.ORIGIN_LABEL) == origin:
            return True
        raise Retry(
            1.0,
            f"{_NOT_OWNED}: expected {mk.go_quote(mk.ORIGIN_LABEL)}={mk.go_quote(origin)} on "
            f"*v1.PartialObjectMetadata {mk.go_quote(o.key(remote_job))}",
        )

    def _remove(self, cluster: str, remote: Obj | None) -> None:
        """`RemoveRemoteObjects`: the remote job (or each member of a remote pod group) if it is
        ours, then the remote Workload, after its resource-in-use finalizer."""
        kube = self.kubes[cluster]
        if self.adapter is not None and self.job_name:
            self.ctl.delete_remote_job(kube, self.adapter, o.namespace(self.wl), self.job_name)
        if remote is None:
            return
        path = workload_writes.path(remote)
        fins = list(o.finalizers(remote))
        if c.RESOURCE_IN_USE_FINALIZER in fins:
            fins.remove(c.RESOURCE_IN_USE_FINALIZER)
            with contextlib.suppress(k.NotFound):
                kube.replace(path, {**remote, "metadata": {**o.meta(remote), "finalizers": fins}})
        with contextlib.suppress(k.NotFound):
            kube.delete(path)
        log.info("remote workload removed", extra={"object": o.key(self.wl), "cluster": cluster})

    def _deactivate(self, cluster: str, remote: Obj, message: str) -> None:
        now = self.ctl.now()
        status = dict(remote.get("status") or {})
        cond = {
            "type": c.WorkloadCondition.DEACTIVATION_TARGET,
            "status": "True",
            "reason": g.EVICTED_ON_MANAGER_CLUSTER,
            "message": message,
        }
        set_condition(status, cond, now, int(o.meta(remote).get("generation") or 0))
        self.kubes[cluster].replace(workload_writes.path(remote) + "/status", {**remote, "status": status})

    def _sync_job(self, cluster: str) -> bool:
        """`SyncJob` through the adapter, after `ValidateRemoteObjectOwnership`: create the remote
        job (each member of a pod group), or mirror its status onto the local one. True when the
        adapter deferred the sync."""
        if self.adapter is None or self.local_job is None:
            return False
        kube = self.kubes[cluster]
        remote_job = kube.get(self._job_path(o.namespace(self.local_job)))
        if remote_job is not None:
            self._owned(remote_job)
        deferred = False
        for member in self.ctl.members(self.adapter, self.local_job):
            remote = remote_job if o.name(member) == self.job_name else kube.get(self._member_path(member))
            deferred = self._sync_member(cluster, member, remote) or deferred
        return deferred

    def _member_path(self, member: Obj) -> str:
        return self._job_path(o.namespace(member), o.name(member))

    def _sync_member(self, cluster: str, local: Obj, remote: Obj | None) -> bool:
        """`syncLocalPodWithRemote` / the Job's `SyncJob`: create the copy, or write its status here."""
        assert self.adapter is not None
        fw = self.adapter.framework
        namespace = o.namespace(local)
        if remote is None:
            body = self.adapter.remote_body(
                local,
                o.name(self.wl),
                self.ctl.settings.origin,
                identifier_annotations=self.ctl.settings.identifier_annotations,
            )
            try:
                self.kubes[cluster].create(k.object_path(fw.api_version, fw.resource, namespace), body)
            except k.Conflict:
                # There, but not among the watched objects of our origin: a foreign one is refused
                # as upstream's GET before the create would (`ValidateRemoteObjectOwnership`).
                existing = self.kubes[cluster].kube.get(self._member_path(local))
                if existing is None:
                    raise
                self._owned(existing)
                return False
            log.info("remote job created", extra={"object": o.key(local), "cluster": cluster})
            return False
        status, deferred = self.adapter.status_update(local, remote, now=self.ctl.now())
        if status is None:
            return deferred
        path = self._member_path(local) + "/status"
        if self.adapter.patch_status:
            current = local.get("status") or {}
            patch = {field: status.get(field) for field in {*current, *status}}
            written = self.ctl.kube.patch(path, {"status": patch})
        else:
            # The whole status, as upstream's PatchStatus diff sends it: a merge patch of the new status
            # would keep nested keys the remote dropped (a Job's uncountedTerminatedPods UIDs, which the API
            # server refuses beside Complete). Guarded by the resourceVersion; a Conflict retries.
            written = self.ctl.kube.replace(path, {**local, "status": status})
        self.ctl.store.put(fw.resource, written)
        if o.name(local) == self.job_name:
            self.local_job = written
        return deferred


def _delayed_topology_ready(status: dict[str, Any], pod_sets: Sequence[str]) -> None:
    for psa in (status.get("admission") or {}).get("podSetAssignments") or ():
        if psa.get("name") in pod_sets:
            psa["delayedTopologyRequest"] = "Ready"
