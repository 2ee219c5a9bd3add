"""The admission worker of the lease holder: informers → one core thread → writers and reconcilers.

Threads (all daemons; the process exits when leadership ends):

* one informer per watched kind (`webhook.kube.SharedInformers`, shared with the process's
  visibility server where it follows the same kind): updates the `Store`, forwards the event
  to the core queue and, for Jobs and Workloads, queues the owning Job for reconciling;
* the core thread: the only one touching `AdmissionCore`. It drains the core queue in batches,
  feeds every event, runs `schedule(now)` until a cycle decides nothing new, hands decisions to the
  writers as values and never waits on the network (`pkg/scheduler/scheduler.go` + the event
  handlers of `pkg/controller/core/*`);
* writers (`WorkQueue` keyed by object): status writes merged into one guarded PUT per object;
  the core's decisions become those writes in `decisions`, queue status in `queue_status`, the
  resource-in-use finalizers in `finalizers`;
* one reconciler per enabled integration, each with its own `WorkQueue`, built by the adapter
  module its registry row names (`jobframework.setup`, `webhook.api.integrations`): batch/v1 Jobs
  (`integrations.batchjob`), Pods and pod groups (`integrations.pod.reconciler`, with a pods
  informer limited to `kueue.x-k8s.io/managed=true`), StatefulSets (`integrations.statefulset`,
  with its own StatefulSet and pod informers).
* Workload reconcilers (`WorkQueue` keyed by Workload): admission checks, PodsReady timeouts,
  requeue backoff and deactivation (`reconcilers.workload`).
* Variant reconcilers (`WorkQueue` keyed by parent Workload), with the ConcurrentAdmission gate on:
  `reconcilers.concurrent_admission`.
* failure recovery (`WorkQueue` keyed by pod, its own pod and node informers), with the
  FailureRecoveryPolicy gate on: `reconcilers.failure_recovery`.
* the TAS topology ungater (`WorkQueue` keyed by Workload, its own informer of started pods), with
  the TopologyAwareScheduling gate on: `reconcilers.topology_ungater`; and the TAS node failure
  controller (`WorkQueue` keyed by node, node and pod informers), with TASFailedNodeReplacement on
  too: `reconcilers.tas_node_failure`. Both start with the first ResourceFlavor naming a Topology.
* the `kueue.x-k8s.io/provisioning-request` admission check (a `WorkQueue` keyed by Workload and one
  keyed by AdmissionCheck), idle until the ProvisioningRequest API is served:
  `reconcilers.provisioning`.
* the `kueue.x-k8s.io/multikueue` admission check (`WorkQueue`s keyed by MultiKueueCluster,
  AdmissionCheck and Workload; per connected worker cluster, one informer thread per kind it
  creates there), with gate MultiKueue on: `reconcilers.multikueue`. It follows
  MultiKueueClusters, MultiKueueConfigs and the Secrets of Kueue's namespace.
* Workload retention (one deadline heap and a `WorkQueue`), with
  `objectRetentionPolicies.workloads.afterFinished` set: `retention`.
* usage accounting (one thread): resource-seconds of admitted quota written to UsageRecords at a
  bounded rate, resumed from the newest one on start (ours): `usage`.
* the `pykueue.io/budget` admission check and the Budgets' status (one thread, ours): `budget`.

The scheduler starts only when every informer has listed once, so quota held by existing
Workloads (`status.admission`) is in the cache before anything new is admitted (as upstream's scheduler, a controller-runtime
runnable added in `setupScheduler` of `cmd/kueue/main.go`, starts only after the caches sync).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, assert_never

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import multikueue as mkapi
from webhook.api import objects as o
from webhook.api import schema_budget
from webhook.config import Configuration, Feature
from webhook.core import dra, pod_resources
from webhook.core.cycle import (
    AdmissionCore,
    SchedulerConfig,
)
from webhook.core.quota_resources import QuotaResources
from webhook.core.workload import WorkloadKey
from webhook.visibility.server import admission_fair_sharing_settings
from webhook.worker import admission_checks, events, priority
from webhook.worker import messages as msg
from webhook.worker.admissionchecks import provisioning
from webhook.worker.budget import BUDGETS, BudgetController
from webhook.worker.decisions import ADMISSION_CONTROLLER, DecisionWriter, QueueRoutes
from webhook.worker.finalizers import Finalizers
from webhook.worker.jobframework.setup import Resource, SetupContext, wire
from webhook.worker.queue_status import QueueStatusPublisher
from webhook.worker.reconcilers.base import Reconciler
from webhook.worker.reconcilers.concurrent_admission.reconciler import VariantReconciler
from webhook.worker.reconcilers.failure_recovery import FailureRecovery
from webhook.worker.reconcilers.multikueue import CLUSTER_PROFILES as MK_CLUSTER_PROFILES
from webhook.worker.reconcilers.multikueue import CLUSTERS as MK_CLUSTERS
from webhook.worker.reconcilers.multikueue import CONFIGS as MK_CONFIGS
from webhook.worker.reconcilers.multikueue import MultiKueueController, Settings, adapters_for
from webhook.worker.reconcilers.provisioning import REQUESTS, ProvisioningController
from webhook.worker.reconcilers.tas_node_failure import Gates, NodeFailureController
from webhook.worker.reconcilers.topology_ungater import TopologyUngater
from webhook.worker.reconcilers.workload import WorkloadReconciler
from webhook.worker.reporter import MetricsReporter, WorkloadState
from webhook.worker.retention import WorkloadRetention
from webhook.worker.store import Store, object_key
from webhook.worker.usage import UsageAccountant
from webhook.worker.workqueue import WorkQueue
from webhook.worker.writers import Call, StatusWrite, Writer

__all__ = ["CLAIM_TEMPLATES", "DEVICE_CLASSES", "RESOURCES", "Manager", "dra_settings", "multikueue_resources"]

log = logging.getLogger(__name__)

# The gauges walk every queue: refreshed at most once a second, not after every batch of events
# (the core loop wakes at least once a second), and no more often than keeps the walk under 1/20
# of the core thread's time.
METRICS_REFRESH_S = 1.0
METRICS_REFRESH_SHARE = 20
# Inadmissible Workloads are requeued in batches per cohort tree, 1 s after the first request
# (`requeueBatchPeriod`, pkg/cache/queue/inadmissible_workloads.go); the core loop wakes for them.
# 10 s with gate SchedulerLongRequeueInterval (`requeueLongBatchPeriod`).
REQUEUE_BATCH_S = 1.0
REQUEUE_LONG_BATCH_S = 10.0
# Gate SchedulerTimestampPreemptionBuffer (pkg/scheduler/preemption/common/preemption_policy.go).
TIMESTAMP_PREEMPTION_BUFFER = timedelta(minutes=5)
# Back-pressure: no scheduling cycle starts while the last cycle's own pending-status writes are
# queued or in flight (`DecisionWriter.cycle_writing`), nor while this many pending-status writes of any
# origin (those not queued `first`: admissions, evictions and preemptions are) are. Upstream's scheduler
# patches a Workload's pending status synchronously in its loop (`requeueAndUpdate` →
# `PatchAdmissionStatus`, through the client's token bucket) while its admission patches run
# asynchronously, so it never decides far ahead of what the API shows; ours wrote everything
# asynchronously, ran thousands of cycles ahead of a backlog of writes, and preempted against
# admissions the API had not seen yet (bench-scale: 6x to 50x upstream's evictions;
# bench/simulate_scale.py shows the same core with and without it).
MAX_WRITE_BACKLOG = 4
HELD_RETRY_S = 0.02
# Workload status writers: 4 for pending-status writes, up to 256 for admissions, evictions and
# preemptions (queued `first`). Upstream patches each admission in a goroutine of its own, bounded
# only by the client's token bucket: at large-scale's 50 qps, behind the 3-6 s the API server takes
# through a creation burst, about 250 in flight (its audit log), where four writers carried 2-5 a
# second. Its pending-status patches are synchronous in the scheduling loop: those stay four at a
# time, or cycles run ahead of what the API shows (preemptions of Workloads about to finish).
STATUS_WRITERS = 4
STATUS_WRITERS_MAX = 256
# ClusterQueue, LocalQueue and Cohort status after Workload changes and admissions: upstream's workload
# handlers requeue the queue's status reconcile 1 s after the first change (`AddAfter(...,
# constants.UpdatesBatchPeriod)` in clusterqueue_controller.go and localqueue_controller.go); a change
# of the queues themselves reconciles at once. Recomputing every queue's status after each round was
# 80 % of the core thread in bench-scale.
STATUS_BATCH_S = 1.0
# How often the core thread looks for LocalQueues whose admission fair sharing sample is due. Upstream
# reconciles a LocalQueue again after each status write while an entry penalty is pending; once a
# second bounds those writes (and the samples a long-pending admission check would cause).
AFS_SAMPLE_CHECK_S = 1.0


RESOURCES: tuple[Resource, ...] = (
    Resource("resourceflavors", c.V1BETA2),
    Resource("cohorts", c.V1BETA2),
    Resource("clusterqueues", c.V1BETA2),
    Resource("localqueues", c.V1BETA2),
    Resource("workloadpriorityclasses", c.V1BETA2),
    Resource("admissionchecks", c.V1BETA2),
    # A topology flavor's Topology must exist for its ClusterQueue to be Active (TopologyNotFound).
    Resource("topologies", c.V1BETA2),
    Resource("priorityclasses", "scheduling.k8s.io/v1"),
    Resource("namespaces", "v1"),
    # What admission adds to a Workload's pods: LimitRange defaults, RuntimeClass overhead (`pod_resources`).
    Resource("limitranges", "v1"),
    Resource("runtimeclasses", "node.k8s.io/v1"),
    Resource("workloads", c.V1BETA2),
    # The provisioning-request admission check (`reconcilers.provisioning`): its configs, and the requests
    # it makes, whose API is served only where a cluster-autoscaler with ProvisioningRequests runs.
    Resource("provisioningrequestconfigs", c.V1BETA2),
    Resource(REQUESTS, provisioning.AUTOSCALING_V1, optional=True),
    # Our Budgets (`budget`): optional, an install may predate the CRD.
    Resource(BUDGETS, schema_budget.API_VERSION, optional=True),
)


def multikueue_resources(namespace: str, *, cluster_profiles: bool = False) -> tuple[Resource, ...]:
    """What the MultiKueue admission check follows (gate MultiKueue): its clusters and configs, and
    the Secrets of Kueue's namespace, where `locationType: Secret` kubeconfigs live; with gate
    MultiKueueClusterProfile the ClusterProfiles there too. An install without the MultiKueue CRDs
    (or the ClusterProfile CRD, which upstream then skips), or without the Role that lets us read
    those Secrets, must not hold the scheduler back: they count as empty until served and permitted
    (a warning says so)."""
    profiles = (
        (Resource(MK_CLUSTER_PROFILES, mkapi.CLUSTER_PROFILE_API_VERSION, namespace=namespace, optional=True),)
        if cluster_profiles
        else ()
    )
    return (
        Resource(MK_CLUSTERS, c.V1BETA2, optional=True),
        Resource(MK_CONFIGS, c.V1BETA2, optional=True),
        Resource("secrets", "v1", namespace=namespace, optional=True),
        *profiles,
    )


# Topology-aware scheduling (gate TopologyAwareScheduling): Nodes, and the pods bound to them that
# are not finished (upstream's non-TAS usage cache: its one pod informer, filtered here by the API
# server), go straight to the core's TAS cache, slimmed to what it reads and never stored.
TAS_NODES = "tas-nodes"
TAS_PODS = "tas-pods"
TAS_FEEDS: tuple[tuple[str, str, dict[str, str] | None], ...] = (
    (TAS_NODES, k.object_path("v1", "nodes", None), None),
    (
        TAS_PODS,
        k.object_path("v1", "pods", None),
        {"fieldSelector": "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"},
    ),
)
# What a pending Workload's devices cost (`core.dra`), watched with gate KueueDRAIntegration on.
CLAIM_TEMPLATES = Resource("resourceclaimtemplates", "resource.k8s.io/v1")
# Which extended resources are devices, watched with gate KueueDRAIntegrationExtendedResource on too.
DEVICE_CLASSES = Resource("deviceclasses", "resource.k8s.io/v1")


def _slim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """What `core.topology.parse_node` reads of a Node."""
    meta, spec, st = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    return {
        "metadata": {"name": meta.get("name"), "labels": meta.get("labels") or {}},
        "spec": {"taints": spec.get("taints") or [], "unschedulable": bool(spec.get("unschedulable"))},
        "status": {
            "allocatable": st.get("allocatable") or {},
            # type and status only: kubelet's heartbeats change the times every few seconds and would
            # make every Node look changed (upstream compares conditions the same way,
            # `extractNodeConditionsChange` in pkg/controller/tas/resource_flavor.go)
            "conditions": [
                {"type": "Ready", "status": c.get("status")}
                for c in st.get("conditions") or ()
                if c.get("type") == "Ready"
            ],
        },
    }


def _slim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """What `core.topology.non_tas_pod_usage` reads of a pod: its node, phase, requests, TAS annotations."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    annotations = {a: v for a, v in (meta.get("annotations") or {}).items() if a.startswith("kueue.x-k8s.io/podset-")}

    def containers(key: str) -> list[dict[str, Any]]:
        return [
            {"resources": c.get("resources") or {}, "restartPolicy": c.get("restartPolicy")}
            for c in spec.get(key) or ()
        ]

    return {
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "annotations": annotations},
        "spec": {
            "nodeName": spec.get("nodeName"),
            "containers": containers("containers"),
            "initContainers": containers("initContainers"),
            "overhead": spec.get("overhead") or {},
        },
        "status": {"phase": (pod.get("status") or {}).get("phase")},
    }


def _meta_sans_version(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {key: val for key, val in meta.items() if key not in ("resourceVersion", "managedFields")}


def _subject(message: msg.CoreMessage) -> tuple[str, str | None]:
    """(kind, object) a core message is about, for the log."""
    match message:
        case msg.Watched(kind, _, obj):
            return kind, object_key(obj)
        case msg.Synced():
            return "synced", None
        case msg.AdmissionFailed(key):
            return "admission_failed", key
        case msg.WriteFailed(key):
            return "write_failed", key
    assert_never(message)


def dra_settings(config: Configuration) -> dra.Settings:
    """Gates KueueDRAIntegration, KueueDRARejectWorkloadsWhenDRADisabled and the device class mappings."""
    return dra.Settings(
        enabled=config.feature_enabled(Feature.KUEUE_DRA_INTEGRATION),
        reject_when_disabled=config.feature_enabled(Feature.KUEUE_DRA_REJECT_WORKLOADS_WHEN_DRA_DISABLED),
        mapper=dra.DeviceClassMapper.from_mappings(
            (m.name, m.device_class_names) for m in config.resources.device_class_mappings
        ),
        extended_resources=config.feature_enabled(Feature.KUEUE_DRA_INTEGRATION_EXTENDED_RESOURCE),
    )


def scheduler_config(config: Configuration) -> SchedulerConfig:
    """The admission core's settings from the Configuration and its feature gates."""
    wfpr = config.wait_for_pods_ready
    fs = config.fair_sharing
    gate = config.feature_enabled
    res = config.resources
    scheduler = SchedulerConfig(
        ignore_undeclared_resources=config.ignore_undeclared_resources,
        resources=QuotaResources.from_config(res.exclude_resource_prefixes, res.transformations),
        block_admission=wfpr is not None and wfpr.block_admission,
        requeue_by_eviction=wfpr is None or wfpr.requeuing_strategy.timestamp != "Creation",
        recompute_on_overlap=gate(Feature.RECOMPUTE_ASSIGNMENT_UPON_PREEMPTION_TARGETS_OVERLAP),
        concurrent_admission=gate(Feature.CONCURRENT_ADMISSION),
        orchestrated_preemption=gate(Feature.MULTI_KUEUE_ORCHESTRATED_PREEMPTION),
        elastic_jobs=gate(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES),
        equivalence_hashing=gate(Feature.SCHEDULING_EQUIVALENCE_HASHING),
        requeue_batch_s=REQUEUE_LONG_BATCH_S if gate(Feature.SCHEDULER_LONG_REQUEUE_INTERVAL) else REQUEUE_BATCH_S,
        timestamp_preemption_buffer=(
            TIMESTAMP_PREEMPTION_BUFFER if gate(Feature.SCHEDULER_TIMESTAMP_PREEMPTION_BUFFER) else timedelta(0)
        ),
        granular_pending_reasons=gate(Feature.UNADMITTED_WORKLOADS_OBSERVABILITY),
        dra_settings=dra_settings(config),
        admission_fair_sharing=admission_fair_sharing_settings(config),
        tas=gate(Feature.TOPOLOGY_AWARE_SCHEDULING),
    )
    if not fs:
        return scheduler
    return replace(scheduler, fair_sharing=True, fair_sharing_strategies=fs.preemption_strategies)


class Manager:
    def __init__(
        self,
        kube: k.Kube,
        config: Configuration,
        *,
        identity: str,
        stop: threading.Event,
        holds_lease: Callable[[], bool] = lambda: True,
        informers: k.SharedInformers | None = None,
    ) -> None:
        self.kube = kube
        # Shared with the process's visibility server, which follows some of the same kinds.
        self.informers = informers if informers is not None else k.SharedInformers(kube, stop)
        # Asked before every status write: a paused process must not write decisions taken before
        # a standby took the lease over (`LeaderElector.holds_lease`).
        self.holds_lease = holds_lease
        self.config = config
        self.stop = stop
        self.store = Store()
        self.core = AdmissionCore(scheduler_config(config))
        self.recorder = events.Recorder(kube, instance=identity, stop=stop)
        self.reporter = MetricsReporter(config)
        # The enabled integrations' reconcilers and what they watch (`jobframework.setup`, from the registry).
        self.integrations = wire(
            SetupContext(kube, self.store, config, self.recorder, stop, on_ready=self.reporter.pods_ready)
        )
        # Admission checks, PodsReady timeouts, requeue backoff and deactivation (`workload_controller.go`).
        self.workloads = WorkloadReconciler(
            kube,
            self.store,
            config,
            self.recorder,
            stop=stop,
            on_evicted=self.reporter.evicted,
            on_admitted=self._admitted_by_checks,
            dra_settings=dra_settings(config),
        )
        self._core_q: queue.Queue[msg.CoreMessage] = queue.Queue()
        # ConcurrentAdmission: a parent's variant Workloads (`pkg/controller/concurrentadmission`).
        self.variants = (
            VariantReconciler(
                kube,
                self.store,
                self.recorder,
                stop=stop,
                short_names=config.feature_enabled(Feature.SHORT_WORKLOAD_NAMES),
            )
            if self.core.config.concurrent_admission
            else None
        )
        # objectRetentionPolicies.workloads.afterFinished: finished Workloads deleted (`retention`).
        after_finished = config.object_retention_policies.workloads.after_finished_s
        self.retention = (
            None
            if after_finished is None
            else WorkloadRetention(kube, self.store, self.recorder, after_finished_s=after_finished, stop=stop)
        )
        # FailureRecoveryPolicy: pods stuck terminating on unreachable nodes force-deleted
        # (`pkg/controller/failurerecovery`); it follows pods and nodes itself.
        self.failure_recovery = (
            FailureRecovery(kube, self.recorder, stop=stop)
            if config.feature_enabled(Feature.FAILURE_RECOVERY_POLICY)
            else None
        )
        # The `kueue.x-k8s.io/provisioning-request` admission check; idle until a check names it.
        self.provisioning = ProvisioningController(
            kube,
            self.store,
            self.recorder,
            stop=stop,
            cleanup_on_eviction=config.feature_enabled(Feature.CLEANUP_PROVISIONING_REQUESTS_ON_EVICTION),
            tas=config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING),
        )
        # The `kueue.x-k8s.io/multikueue` admission check (gate MultiKueue, on by default): idle
        # until a MultiKueueCluster or a check of it exists. The workers' clients are fenced as ours:
        # a paused former leader must not write to the workers either.
        self.multikueue = (
            MultiKueueController(
                kube,
                self.store,
                self.recorder,
                settings=Settings.from_config(config),
                adapters=adapters_for(config.integrations.frameworks),
                remote_kube=lambda doc: k.Kube.from_kubeconfig(doc).fenced(holds_lease),
                stop=stop,
            )
            if config.feature_enabled(Feature.MULTI_KUEUE)
            else None
        )
        # TopologyAwareScheduling: pods of TAS-admitted Workloads ungated onto their assigned domains
        # (`pkg/controller/tas/topology_ungater.go`); it follows the started pods itself.
        self.topology_ungater = (
            TopologyUngater(
                kube,
                self.store,
                self.informers,
                stop=stop,
                concurrent_admission=self.core.config.concurrent_admission,
                group_name_annotation=config.feature_enabled(Feature.WORKLOAD_IDENTIFIER_ANNOTATIONS),
            )
            if config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
            else None
        )
        # TASFailedNodeReplacement: Workloads on failed nodes marked for a replacement domain, or evicted
        # (`pkg/controller/tas/node_controller.go`); it follows nodes and the started pods itself.
        self.node_failures = (
            NodeFailureController(
                kube,
                self.store,
                self.informers,
                self.recorder,
                stop=stop,
                gates=Gates(
                    replace_on_pod_termination=config.feature_enabled(Feature.TAS_REPLACE_NODE_ON_POD_TERMINATION),
                    replace_on_node_taints=config.feature_enabled(Feature.TAS_REPLACE_NODE_ON_NODE_TAINTS),
                    not_ready_over_fixed_time=config.feature_enabled(
                        Feature.TAS_REPLACE_NODE_DUE_TO_NOT_READY_OVER_FIXED_TIME
                    ),
                ),
                on_evicted=lambda key, cq, reason, wl: self.reporter.evicted(key, cq, reason, wl),
            )
            if config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
            and config.feature_enabled(Feature.TAS_FAILED_NODE_REPLACEMENT)
            else None
        )
        # Usage accounting: resource-seconds of admitted quota in UsageRecords (`usage`, ours).
        self.usage = UsageAccountant(kube, self.store, stop=stop)
        # The `pykueue.io/budget` admission check and the Budgets' status (`budget`, ours); idle
        # until an AdmissionCheck names it or a Budget exists.
        budgets_path = next(r.path for r in RESOURCES if r.kind == BUDGETS)
        self.budgets = BudgetController(
            kube, self.store, self.usage, stop=stop, served=lambda: self.informers.served(budgets_path)
        )
        settings = self.core.config.dra_settings
        dra_watch = (
            (CLAIM_TEMPLATES, *((DEVICE_CLASSES,) if settings.extended_resources else ())) if settings.enabled else ()
        )
        mk_watch = (
            multikueue_resources(
                config.namespace, cluster_profiles=config.feature_enabled(Feature.MULTI_KUEUE_CLUSTER_PROFILE)
            )
            if self.multikueue is not None
            else ()
        )
        self.resources = (*RESOURCES, *dra_watch, *mk_watch, *(r for w in self.integrations for r in w.watches))
        # Every reconciler sees every watch event and starts once the caches are synced.
        self.reconcilers: tuple[Reconciler, ...] = (
            *(w.reconciler for w in self.integrations),
            self.workloads,
            self.provisioning,
            self.usage,
            self.budgets,  # after `usage`: it reads the reservations `usage` has just seen
            *(
                r
                for r in (self.variants, self.retention, self.topology_ungater, self.node_failures, self.multikueue)
                if r is not None
            ),
        )
        # The TAS controllers follow nodes and started pods: like the core's TAS feeds, only once a
        # ResourceFlavor names a Topology (no TAS-admitted Workload can exist before).
        self.tas_reconcilers = tuple(r for r in (self.topology_ungater, self.node_failures) if r is not None)
        self._reconcilers_started = False
        self.writer = Writer(kube, self.store, holds_lease=holds_lease, stop=stop)
        self.writes: WorkQueue[StatusWrite | Call] = WorkQueue(
            "status", self._write, workers=STATUS_WRITERS, max_workers=STATUS_WRITERS_MAX, stop=stop
        )
        # Queue status has its own writer, as upstream's ClusterQueue, LocalQueue and Cohort controllers
        # have their own work queues: behind a backlog of Workload writes it was not written for minutes.
        self.queue_writes: WorkQueue[StatusWrite | Call] = WorkQueue("queue-status", self._write, workers=1, stop=stop)
        self.queue_status = QueueStatusPublisher(self.core, self.store, self.queue_writes)
        self.finalizers = Finalizers(kube, self.core, self.store, self.writes)
        # The core's decisions as status writes. Its `admitting` (core thread only) holds Workloads
        # whose Admit write is queued or in flight: until an event shows the reservation (or the
        # write fails), any non-reserving event for them is an *older* version, typically our own
        # earlier Pending write landing late; see `_feed`.
        self.decisions = DecisionWriter(
            self.core, self.store, self.writes, self.recorder, self.reporter, self._core_q.put
        )
        self._synced: set[str] = set()
        self._synced_lock = threading.Lock()
        # The TAS feeds start with the first topology-aware ResourceFlavor: no node or pod is read
        # (nor waited for) in a cluster that does not use TAS.
        self.tas_feeds = TAS_FEEDS if self.core.config.tas else ()
        self._tas_started = False
        # (kind, key) → metadata and spec of the ClusterQueue/LocalQueue last fed to the core (core thread only).
        self._fed_queues: dict[tuple[str, str], tuple[dict[str, Any], Any]] = {}
        self._status_now = False  # a queue, flavor, cohort or check changed: publish queue status this round
        self.started_at = 0.0
        self._workload_states: dict[str, WorkloadState] = {}

    # == informers ================================================================================
    def start(self) -> None:
        self.started_at = time.monotonic()
        self.recorder.start()
        self.writes.start()
        self.queue_writes.start()
        threading.Thread(target=self._core_loop, name="core", daemon=True).start()
        for res in self.resources:
            self._inform(res)
        if self.failure_recovery is not None:
            self.failure_recovery.start(self.informers)

    def _inform(self, res: Resource) -> None:
        def on_list(items: list[dict[str, Any]]) -> None:
            gone = self.store.replace(res.kind, items)
            for etype, objs in (("DELETED", gone), ("ADDED", items)):
                for obj in objs:
                    try:
                        self._event(res.kind, etype, obj, store=False)
                    except Exception:  # one object's failure must not keep the others from the core
                        log.exception("event handling failed", extra={"kind": res.kind, "object": object_key(obj)})

        def on_event(etype: str, obj: dict[str, Any]) -> None:
            self._event(res.kind, etype, obj)

        def on_synced() -> None:
            with self._synced_lock:
                self._synced.add(res.kind)
            self._core_q.put(msg.Synced(res.kind))

        query = {"labelSelector": res.label_selector} if res.label_selector else None
        self.informers.subscribe(
            res.path,
            on_list,
            on_event,
            on_synced=on_synced,
            query=query,
            on_invalid=self._set_aside,
            absent_is_empty=res.optional,
        )

    def _start_tas_feeds(self) -> None:
        """Follow Nodes and pods from now on (core thread); scheduling waits for their lists."""
        with self._synced_lock:
            self._tas_started = True
        for kind, path, query in self.tas_feeds:
            self._inform_tas(kind, path, query)
        if self._reconcilers_started:
            for reconciler in self.tas_reconcilers:
                reconciler.start()

    def _inform_tas(self, kind: str, path: str, query: dict[str, str] | None) -> None:
        """Follow Nodes or pods for the core's TAS cache (see `TAS_FEEDS`): slimmed, not stored; a
        relist deletes what is no longer listed. Only this informer's thread touches `known`."""
        slim = _slim_node if kind == TAS_NODES else _slim_pod
        known: set[str] = set()

        def on_list(items: list[dict[str, Any]]) -> None:
            listed = {object_key(obj): obj for obj in items}
            for key in known - listed.keys():
                ns, _, name = key.rpartition("/")
                self._core_q.put(msg.Watched(kind, "DELETED", {"metadata": {"name": name, "namespace": ns}}))
            known.clear()
            for key, obj in listed.items():
                known.add(key)
                self._core_q.put(msg.Watched(kind, "ADDED", slim(obj)))

        def on_event(etype: str, obj: dict[str, Any]) -> None:
            key = object_key(obj)
            if etype == "DELETED":
                known.discard(key)
            else:
                known.add(key)
            self._core_q.put(msg.Watched(kind, etype, slim(obj)))

        def on_synced() -> None:
            with self._synced_lock:
                self._synced.add(kind)
            self._core_q.put(msg.Synced(kind))

        self.informers.subscribe(path, on_list, on_event, on_synced=on_synced, query=query)

    def _set_aside(self, obj: dict[str, Any], field: str, error: str) -> None:
        """An object Go could not decode is absent to us (`kube.informer`): say so on the object, as
        nothing else will tell its owner why it is never admitted."""
        note = f"Ignored for quota until fixed: {field}: {error}"
        self.recorder.emit(obj, "Warning", "InvalidQuantity", note, ADMISSION_CONTROLLER)

    def _event(self, kind: str, etype: str, obj: dict[str, Any], *, store: bool = True) -> None:
        if kind == "workloadpriorityclasses" and etype != "DELETED":
            old = self.store.get(kind, object_key(obj)) if store else None
            # Creation or a new value (relisted classes are re-checked): re-sync its Workloads' spec.priority.
            if (old is None or old.get("value") != obj.get("value")) and self.synced():
                self._sync_priorities(object_key(obj))
        old_queue = (
            self.store.get(kind, object_key(obj))
            if kind in ("clusterqueues", "localqueues") and etype != "DELETED"
            else None
        )
        if store:
            if etype == "DELETED":
                self.store.delete(kind, object_key(obj), obj)
            elif not self.store.put(kind, obj):
                return  # older than what a writer already stored
        if etype != "DELETED":
            self._admission_check_side_effects(kind, obj, old_queue)
        if kind == "workloads":
            self._observe_workload(etype, obj)
        for reconciler in self.reconcilers:
            reconciler.on_event(kind, etype, obj, old_queue)
        if kind != "pods":  # the core never sees pods, only their Workloads
            self._core_q.put(msg.Watched(kind, etype, obj))

    def _observe_workload(self, etype: str, obj: dict[str, Any]) -> None:
        """Report status transitions between two watch events of a Workload (the update handler's
        metrics). The previous state is our own record, not the store: writers put their results
        there before the watch event arrives. Only the workloads informer thread calls this."""
        key = object_key(obj)
        if etype == "DELETED":
            self._workload_states.pop(key, None)
            return
        previous = self._workload_states.get(key)
        self._workload_states[key] = WorkloadState.of(obj)
        if previous is not None:
            self.reporter.workload_updated(previous, obj, datetime.now(UTC))

    def synced(self) -> bool:
        with self._synced_lock:
            return len(self._synced) == len(self.resources) + (len(self.tas_feeds) if self._tas_started else 0)

    def _sync_priorities(self, name: str) -> None:
        """The WorkloadPriorityClass controller's reconcile, run by a writer thread (`priority.py`)."""

        def sync() -> None:
            priority.sync_workload_priorities(self.kube, self.store, name)

        self.writes.add(f"workloadpriorityclasses/{name}", Call(sync))

    # == the core thread ==========================================================================
    def _admission_failed(self, key: str, now: datetime) -> None:
        self.decisions.admitting.discard(key)
        self.core.admission_failed(WorkloadKey(key), now)
        latest = self.store.get("workloads", key)
        if latest is not None:  # events skipped while the write was in flight: requeue the newest copy
            self.core.on_workload(latest, now)

    def _apply(self, message: msg.CoreMessage, now: datetime) -> None:
        match message:
            case msg.Watched(kind, etype, obj):
                self._feed(kind, etype, obj, now)
            case msg.AdmissionFailed(key):
                self._admission_failed(key, now)
            case msg.WriteFailed(key):
                self.core.write_failed(WorkloadKey(key))
            case msg.Synced():
                pass
            case _:
                assert_never(message)

    def _feed(self, kind: str, etype: str, obj: dict[str, Any], now: datetime) -> None:
        core = self.core
        meta = obj.get("metadata") or {}
        name, ns = str(meta.get("name", "")), str(meta.get("namespace", ""))
        deleted = etype == "DELETED"
        if kind in ("resourceflavors", "cohorts", "admissionchecks", "topologies"):
            self._status_now = True
        if kind in ("clusterqueues", "localqueues", "cohorts"):
            # Before the core: the next refresh reports them with these custom values.
            self.reporter.queue_event(kind, f"{ns}/{name}" if ns else name, None if deleted else obj)
        if kind == "resourceflavors":
            core.on_resource_flavor_deleted(name, now) if deleted else core.on_resource_flavor(obj, now)
            if not deleted and (obj.get("spec") or {}).get("topologyName") and not self._tas_started:
                self._start_tas_feeds()
        elif kind == "cohorts":
            core.on_cohort_deleted(name, now) if deleted else core.on_cohort(obj, now)
        elif kind in ("clusterqueues", "localqueues"):
            fed_key, fed = (kind, f"{ns}/{name}"), (_meta_sans_version(meta), obj.get("spec"))
            self._status_now = self._status_now or deleted or self._fed_queues.get(fed_key) != fed
            if deleted:
                self._fed_queues.pop(fed_key, None)
                if kind == "clusterqueues":
                    core.on_cluster_queue_deleted(name, now)
                    self.reporter.cluster_queue_deleted(name)
                else:
                    core.on_local_queue_deleted(ns, name, now)
                    self.reporter.local_queue_deleted(ns, name)
            elif self._fed_queues.get(fed_key) != fed:
                # Status-only updates (mostly our own queue status writes) are skipped: upstream's
                # update handlers requeue nothing unless the spec changed (`UpdateClusterQueue`'s
                # specUpdated, `UpdateLocalQueue`), and re-feeding them re-ran every inadmissible
                # Workload of the queue after each cycle.
                if kind == "clusterqueues":
                    core.on_cluster_queue(obj, now)
                else:
                    queued = fed_key[1] in core.queues.local_queues
                    core.on_local_queue(obj, now)
                    if queued and fed_key[1] not in core.queues.local_queues:
                        # Stopped: upstream's queue manager drops the LocalQueue, and its counters and
                        # histograms with it (`Manager.DeleteLocalQueue` → `ClearLocalQueueMetrics`).
                        self.reporter.local_queue_deleted(ns, name)
                self._fed_queues[fed_key] = fed
        elif kind == "topologies":
            core.on_topology_deleted(name, now) if deleted else core.on_topology(obj, now)
        elif kind == TAS_NODES:
            core.on_node_deleted(name, now) if deleted else core.on_node(obj, now)
        elif kind == TAS_PODS:
            core.on_pod(f"{ns}/{name}", None if deleted else obj, now)
        elif kind == "workloadpriorityclasses":
            core.on_priority_class_deleted(name) if deleted else core.on_priority_class(obj)
        elif kind == "namespaces":
            core.on_namespace(name, None if deleted else dict(meta.get("labels") or {}), now)
        elif kind == "limitranges":
            core.on_limit_range_deleted(ns, name) if deleted else core.on_limit_range(obj)
            self._refeed_pending(self.store.list("workloads", ns), now, cause=f"limitranges/{ns}/{name}")
        elif kind == "runtimeclasses":
            core.on_runtime_class_deleted(name) if deleted else core.on_runtime_class(obj)
            uses = [w for w in self.store.list("workloads") if name in pod_resources.runtime_class_names(w)]
            self._refeed_pending(uses, now, cause=f"runtimeclasses/{name}")
        elif kind == "resourceclaimtemplates":
            core.on_claim_template_deleted(ns, name) if deleted else core.on_claim_template(obj)
            uses = [w for w in self.store.list("workloads", ns) if name in dra.claim_template_names(w)]
            self._refeed_pending(uses, now, cause=f"resourceclaimtemplates/{ns}/{name}")
        elif kind == "deviceclasses":
            # The extended resources backed before and after the change (`deviceClassHandler`).
            before = set(core.cache.extended_backing)
            core.on_device_class_deleted(name) if deleted else core.on_device_class(obj)
            names = before.symmetric_difference(core.cache.extended_backing) | {
                ern for ern, dc in core.cache.extended_backing.items() if dc == name
            }
            uses = [w for w in self.store.list("workloads") if names & dra.extended_requests(w)]
            self._refeed_pending(uses, now, cause=f"deviceclasses/{name}")
        elif kind == "admissionchecks":
            core.on_admission_check(
                name,
                None if deleted else admission_checks.is_active(obj),
                now,
                str((obj.get("spec") or {}).get("controllerName") or ""),
            )
        elif kind == "workloads":
            key = f"{ns}/{name}"
            self.reporter.workload_event(key, None if deleted else obj)
            if deleted or o.is_condition_true(obj, c.WorkloadCondition.QUOTA_RESERVED):
                self.decisions.admitting.discard(key)
            elif key in self.decisions.admitting:
                # The core assumed this reservation and our Admit write has not been seen yet, so this
                # event predates it (e.g. the Pending write of an earlier cycle, or a Job reconciler
                # write, landing after the Admit decision). Feeding it would make the core forget the
                # assumed quota and requeue the Workload; the next cycle would hand that quota to
                # another Workload and, once the Admit write lands, the cohort is over capacity
                # (seen after takeovers, where Finished events free quota in bursts). Upstream's
                # cache likewise keeps an assumed workload until it is admitted or forgotten.
                return
            core.on_workload_deleted(ns, name, now) if deleted else core.on_workload(obj, now)

    def _refeed_pending(self, workloads: Sequence[dict[str, Any]], now: datetime, *, cause: str) -> None:
        """Re-adjust the Workloads not holding quota after a LimitRange, RuntimeClass or
        ResourceClaimTemplate changed what their pods would request (`resourceUpdatesHandler` in `workload_controller.go`); those whose
        Admit write is in flight are left to that write's event (see `_feed`)."""
        fed = 0
        for wl in workloads:
            key = object_key(wl)
            if o.is_condition_true(wl, c.WorkloadCondition.QUOTA_RESERVED) or key in self.decisions.admitting:
                continue
            self.core.on_workload(wl, now)
            fed += 1
        if fed:
            log.info("pending workloads re-adjusted", extra={"object": cause, "workloads": fed})

    def _drain(self, timeout: float) -> list[msg.CoreMessage]:
        batch: list[msg.CoreMessage] = []
        try:
            batch.append(self._core_q.get(timeout=timeout))
            while True:
                batch.append(self._core_q.get_nowait())
        except queue.Empty:
            pass
        return batch

    def _core_loop(self) -> None:
        try:
            self._core_loop_body()
        except Exception:
            # State may be half-applied: end leadership; a fresh process rebuilds from the API.
            log.exception("core loop failed; giving up leadership")
            self.stop.set()

    def _core_loop_body(self) -> None:
        rebuilt = False
        held = False  # the last round skipped scheduling for the write backlog
        next_refresh = 0.0
        last_routes: QueueRoutes | None = None
        fed_synced: set[str] = set()  # kinds whose list reached the core (marker drained after its events)
        status_due: float | None = None  # monotonic time of the next queue status publication
        next_afs_sample = 0.0  # monotonic time admission fair sharing is next checked for due samples
        while not self.stop.is_set():
            due = self.core.next_requeue_at() if rebuilt else None  # applied by schedule(), once scheduling
            wait = 1.0 if due is None else min(1.0, max(0.0, (due - datetime.now(UTC)).total_seconds()))
            if status_due is not None:
                wait = min(wait, max(0.0, status_due - time.monotonic()))
            # Held, a due requeue cannot run before the writes drain (schedule() applies it): waiting
            # `wait` (0 once it is due) would spin the core thread on the backlog.
            batch = self._drain(HELD_RETRY_S if held else wait)
            if held and not batch and self._writes_held() and (status_due is None or status_due > time.monotonic()):
                continue  # nothing new and still held: recomputing queue status and gauges would change nothing
            now = datetime.now(UTC)
            touched: set[str] = set()
            queues_changed = False
            for message in batch:
                try:
                    self._apply(message, now)
                except Exception:
                    kind, subject = _subject(message)
                    log.exception("core rejected an event", extra={"kind": kind, "object": subject})
                match message:
                    case msg.Synced(kind):
                        fed_synced.add(kind)
                        queues_changed = True
                    case msg.Watched("workloads", etype, obj) if etype != "DELETED":
                        touched.add(object_key(obj))
            # `_feed` flags a queue, flavor, cohort, check or topology change that reached the core;
            # our own queue status writes coming back (a thousand a second at upstream's large-scale
            # config) do not, and comparing the routes of every queue after each was a tenth of the
            # core thread's time there (bench_core_scale).
            queues_changed = queues_changed or self._status_now
            # The informers' synced set flips before their last listed events are drained here: schedule
            # only once every list was fed, or a new leader admits before it has seen all reservations.
            with self._synced_lock:
                all_fed = fed_synced >= self._synced
            if not (self.synced() and all_fed):
                continue
            if queues_changed:
                # Our own queue status writes come back as events too: scan every Workload only
                # when what the scan reads from the queues moved.
                routes = self.decisions.queue_routes()
                queues_changed, last_routes = routes != last_routes, routes
            self.decisions.report_queue_blockers(None if queues_changed else touched, now)
            if not rebuilt:
                rebuilt = True
                for wpc in self.store.list("workloadpriorityclasses"):  # the informer's initial creates
                    self._sync_priorities(object_key(wpc))
                for reconciler in self.reconcilers:
                    if self._tas_started or reconciler not in self.tas_reconcilers:
                        reconciler.start()
                self._reconcilers_started = True
                log.info(
                    "caches synced, scheduling",
                    extra={
                        "workloads": len(self.store.list("workloads")),
                        "cluster_queues": len(self.core.cache.cluster_queues),
                        "elapsed_s": round(time.monotonic() - self.started_at, 3),
                    },
                )
            held = False
            for _ in range(10000):
                if self._writes_held():
                    held = True  # retried as soon as the writes drain (short drain timeout below)
                    break
                started = time.monotonic()
                result = self.core.schedule(datetime.now(UTC))
                self.reporter.cycle(result, time.monotonic() - started)
                self.decisions.dispatch(result, now)
                # Each of upstream's cycles snapshots the cache as its event handlers left it: events
                # waiting here (Workloads finished meanwhile) are applied before the next cycle.
                if not (result.admitted or result.preempted) or not self._core_q.empty():
                    break
            if time.monotonic() >= next_afs_sample:
                # The LocalQueue reconcile's sampling timer (`RequeueAfter: usageSamplingInterval`, at
                # once while entry penalties are pending), checked at most once a second: the new
                # `status.fairSharing` goes out with this round's queue status.
                next_afs_sample = time.monotonic() + AFS_SAMPLE_CHECK_S
                if self.core.sample_admission_fair_sharing(datetime.now(UTC)):
                    self._status_now = True
            if self._status_now:
                status_due, self._status_now = time.monotonic(), False
            elif status_due is None and batch:
                status_due = time.monotonic() + STATUS_BATCH_S
            if status_due is not None and time.monotonic() >= status_due:
                # Resource-in-use finalizers go with the queues' status: what they wait for (a queue's
                # last Workload gone, a flavor no longer named) arrives by the same events.
                status_due = None
                self.queue_status.publish(now)
                self.finalizers.release()
            if (started := time.monotonic()) >= next_refresh:
                self.reporter.refresh(self.core)
                took = time.monotonic() - started
                next_refresh = started + took + max(METRICS_REFRESH_S, METRICS_REFRESH_SHARE * took)

    def _writes_held(self) -> bool:
        """No scheduling cycle while the last one's pending reports or preemptions are still being
        written (`DecisionWriter.cycle_writing`), or while pending-status writes are backlogged
        (MAX_WRITE_BACKLOG)."""
        return self.decisions.cycle_writing() or self.writes.backlog() >= MAX_WRITE_BACKLOG

    # == writers, queue status and resource-in-use finalizers (their own modules) =================
    def _write(self, key: str, queued: Sequence[StatusWrite | Call]) -> None:
        self.writer.write(key, queued)

    # == AdmissionChecks (`admissioncheck_controller.go`, the queue handlers of `workload_controller.go`) ==
    def _admission_check_side_effects(self, kind: str, obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
        """The AdmissionCheck's finalizer; Workloads whose required checks a queue change (`old` is
        the queue's previous version) may alter go to the workload controller."""
        if kind == "admissionchecks":
            self.finalizers.sync_check_finalizer(obj, admission_checks.checks_in_use(self.store.list("clusterqueues")))
        elif kind == "clusterqueues" and admission_checks.checks_changed(old, obj):
            for key in admission_checks.workloads_routed_to(self.store, cluster_queue=obj["metadata"]["name"]):
                self.workloads.add(key)
        elif kind == "localqueues" and (
            old is None or (old.get("spec") or {}).get("clusterQueue") != (obj.get("spec") or {}).get("clusterQueue")
        ):
            for key in admission_checks.workloads_routed_to(self.store, local_queue=object_key(obj)):
                self.workloads.add(key)

    def _admitted_by_checks(self, wl: Mapping[str, Any], waited: float, now: datetime) -> None:
        """Admission metrics of a Workload the workload controller admitted once its checks were Ready."""
        cq = self.store.get(
            "clusterqueues", str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        )
        cohorts = []
        parent = str(((cq or {}).get("spec") or {}).get("cohortName") or "")
        while parent and parent not in cohorts:
            cohorts.append(parent)
            parent = str(((self.store.get("cohorts", parent) or {}).get("spec") or {}).get("parentName") or "")
        self.reporter.admitted_by_checks(wl, waited, cohorts, now)
