"""The scheduling cycle, and `AdmissionCore`: the one object the admission worker talks to.

Mirrors `pkg/scheduler/scheduler.go` (`schedule`, `nominate`, `processEntry`, `admit`,
`requeueAndUpdate`) and the event wiring of `pkg/controller/core/*_controller.go` into the cache and
queue manager (upstream commit ff69552e79).

Public API for the worker
-------------------------
``core = AdmissionCore(SchedulerConfig(fair_sharing=...))``, then feed watch events (``now`` is
always passed in; the core never reads the clock):

* ``on_resource_flavor(obj, now)`` / ``on_resource_flavor_deleted(name, now)``
* ``on_cluster_queue(obj, now)`` / ``on_cluster_queue_deleted(name, now)``
* ``on_cohort(obj, now)`` / ``on_cohort_deleted(name, now)``
* ``on_local_queue(obj, now)`` / ``on_local_queue_deleted(namespace, name, now)``
* ``on_workload(obj, now)`` / ``on_workload_deleted(namespace, name, now)``
* ``on_priority_class(obj)`` / ``on_priority_class_deleted(name)`` (recorded only: a Workload's
  priority is its ``spec.priority``. Upstream's WorkloadPriorityClass controller, which the worker
  mirrors, rewrites ``spec.priority`` of every Workload whose ``priorityClassRef`` names the class
  (group ``kueue.x-k8s.io``, kind ``WorkloadPriorityClass``) when the class is created or its value
  changes; the core reacts to those Workload updates)
* ``on_namespace(name, labels, now)`` (labels None = deleted)
* ``on_limit_range(obj)`` / ``on_limit_range_deleted(namespace, name)`` and ``on_runtime_class(obj)`` /
  ``on_runtime_class_deleted(name)``: what admission will add to a Workload's pods (LimitRange
  defaults, RuntimeClass overhead). They apply from the next ``on_workload`` of each Workload: after
  one, re-feed the pending Workloads of that namespace (of that RuntimeClass), as upstream's
  `resourceUpdatesHandler` re-queues them
* ``on_admission_check(name, active, now, controller="")`` (active None = deleted; controller is
  ``spec.controllerName``, which decides the MultiKueue/ProvisioningRequest constraints)
* ``on_topology(obj, now)`` / ``on_topology_deleted(name, now)``, ``on_node(obj, now)`` /
  ``on_node_deleted(name, now)`` and ``on_pod(key, obj, now)`` (obj None = deleted): topology-aware
  scheduling's view of the cluster (`topology`); pods count when bound to a node, not finished and
  not placed by TAS. With no topology-aware ResourceFlavor none of them costs a cycle anything

Objects are the v1beta2 JSON dicts. Events may arrive in any order; rebuilding from a list of
objects gives the same state as the incremental path. Inadmissible workloads are requeued when an
event calls for it: at once by default (as upstream's unit tests run), or, with
``SchedulerConfig.requeue_batch_s`` (the worker: 1 s, upstream's `requeueBatchPeriod`), by the first
``schedule(now)`` at least that long after the first such event for the cohort tree, all further
events for the tree meanwhile folding into it; ``next_requeue_at()`` tells when one is due.

``result = core.schedule(now)`` runs one cycle and returns a ``CycleResult`` whose ``decisions`` are
values, in the order they were taken:

* ``Admit(key, uid, cluster_queue, admission, conditions, replaces)``: server-side-apply
  ``status.admission`` (the exact JSON) and ``conditions``. The reservation is already *assumed* in
  the cache; if the write fails call ``core.admission_failed(key, now)`` (ignore NotFound: the
  delete event follows). ``replaces`` (elastic Jobs) is the workload slice this one replaces: once
  the write succeeded, patch its ``conditions`` (Finished=True, ``WorkloadSliceReplaced``) and emit a
  Normal event with that reason (``kueue_replaced_workload_slices_total`` counts the transition).
* ``Preempt(preemptor_key, cluster_queue, targets)``: for each ``Victim`` patch the Evicted and
  Preempted conditions (``victim.conditions``) on ``victim.key``.
* ``Pending(key, uid, cluster_queue, reason, message, conditions, generation, resource_requests)``:
  patch QuotaReserved=False / Admitted=False with the reason and message, and
  ``status.resourceRequests`` (the podSets' totals as quota charges them), and emit a Warning
  event with the same reason.

Before the heads are popped, each cycle also reports what the workload controller does because of
the queues' state (stopPolicy and activity, see `queue_state.py`); these come first in
``decisions``, sorted by workload key, each at most once per relevant event:

* ``Evict(key, uid, cluster_queue, reason, message, conditions)``: an admitted workload under a
  HoldAndDrain LocalQueue (reason ``LocalQueueStopped``, message ``The LocalQueue is stopped``) or
  ClusterQueue (``ClusterQueueStopped``, ``The ClusterQueue is stopped``). Patch ``conditions``
  (Evicted=True), reset non-Pending admission checks to Pending, emit Normal event
  ``EvictedDueTo<reason>``; ``status.admission`` stays until the job is stopped (the job
  reconciler then sets Requeued=False with the same reason and clears the admission). Hold keeps
  admitted workloads running.
* ``UnsetReservation(key, uid, cluster_queue, reason, message, conditions)``: a workload that
  reserved quota but is not admitted, under any stopPolicy but None (reason ``Suspended``, message
  ``LocalQueue <lq> is stopped`` / ``ClusterQueue <cq> is stopped``). Clear ``status.admission``
  and patch ``conditions`` (QuotaReserved=False, Admitted=False/NoReservation); no event.
* ``Requeue(key, uid, cluster_queue, reason, message, conditions)``: a workload parked with
  Requeued=False because its queue was stopped, once the queue runs again
  (``LocalQueueRestarted`` / ``ClusterQueueRestarted``). Patch ``conditions`` (Requeued=True).
* ``Migrate(key, uid, cluster_queue, reason, message, conditions)`` (ConcurrentAdmission): the
  admitted variant of a parent whose more preferred variant now fits is evicted, reason
  ``FlavorMigration``. Write it like ``Evict``; the variant controller then moves the parent.
* ``QueueBlocked(key, uid, cluster_queue, reason, message, conditions)``: a pending workload behind
  a stopped LocalQueue (``LocalQueue <lq> is inactive``) or an inactive ClusterQueue
  (``ClusterQueue <cq> is inactive``), reason ``Suspended``. Patch ``conditions`` like ``Pending``,
  but emit no event.

If such a write (or a preemption victim's Evicted patch) fails for any reason but NotFound, call
``core.write_failed(key)`` so the core reconsiders the workload next cycle.

Status for the queue-status reconciler: ``core.cluster_queue_status(name)``,
``core.local_queue_status(namespace, name)``, ``core.cohort_status(name)`` (see `status.py`).
With admission fair sharing (``SchedulerConfig.admission_fair_sharing``), call
``core.sample_admission_fair_sharing(now)`` periodically (the LocalQueue reconcile's timer): the
LocalQueues it returns then carry a new ``status.fairSharing`` (`admission_fair_sharing.py`).

The cycle, as a numbered recipe (``schedule``):

0. queue state: decisions the queues' stopPolicy/activity call for (see above);
1. heads: pop one workload from every active ClusterQueue;
2. snapshot: copy usage, share specs;
3. nominate: pre-checks, then flavor assignment (+ preemption targets, partial admission);
4. order: classical (borrowing, priority, timestamp) or the fair-sharing tournament;
5. process each entry: admit / preempt / reserve / skip, adding usage to the snapshot so later
   entries never overcommit;
6. requeue everything not admitted and report its pending status.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from webhook.api import constants
from webhook.api.constants import PendingReason
from webhook.core import (
    admission_fair_sharing,
    conditions,
    dra,
    fair_sharing,
    model,
    ordering,
    pod_resources,
    queue_state,
    resource_node,
    status,
    topology,
)
from webhook.core.admission_checks import has_all_required
from webhook.core.cache import Cache
from webhook.core.conditions import ConditionValue, RequeueReason
from webhook.core.decisions import (
    Admit,
    Decision,
    Evict,
    Migrate,
    Pending,
    Preempt,
    QueueBlocked,
    ReplacedSlice,
    Requeue,
    UnsetReservation,
    Victim,
)
from webhook.core.flavor_assigner import (
    Assignment,
    LastAssignment,
    Mode,
    assign_flavors,
    search_partial,
    topology_requests,
    update_for_topology,
)
from webhook.core.pods_ready import blocks_admission
from webhook.core.preemption import Oracle, Preemptor, Target, cq_path
from webhook.core.queues import Head, QueueManager
from webhook.core.quota_resources import QuotaResources
from webhook.core.resource_node import ClusterQueueNode, CohortNode
from webhook.core.resources import FRQuantities
from webhook.core.snapshot import Snapshot, take_snapshot
from webhook.core.tas import PodSetRequest, Replacement, TopologyAssignment
from webhook.core.topology import TopologySnapshot
from webhook.core.workload import Condition, WorkloadInfo, WorkloadKey, parse_workload

__all__ = ["AdmissionCore", "CycleResult", "QueueStatusChanges", "SchedulerConfig"]


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """The parts of the Kueue Configuration the core reads."""

    fair_sharing: bool = False
    fair_sharing_strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    # resources.quotaCheckStrategy IgnoreUndeclared (gate QuotaCheckStrategy): a resource the
    # ClusterQueue does not declare is left out of the assignment and of every usage, instead of
    # making the Workload inadmissible (`IgnoreUndeclaredResources`, flavorassigner.go).
    ignore_undeclared_resources: bool = False
    # resources.excludeResourcePrefixes and resources.transformations, applied to every Workload's
    # pod requests before quota (`quota_resources`).
    resources: QuotaResources = field(default_factory=QuotaResources)
    # waitForPodsReady.blockAdmission: admit nothing while a workload holding quota is not PodsReady.
    block_admission: bool = False
    # waitForPodsReady.requeuingStrategy.timestamp is `Eviction` (else `Creation`).
    requeue_by_eviction: bool = True
    # Feature gate RecomputeAssignmentUponPreemptionTargetsOverlap: recompute a workload whose
    # preemption targets overlap an earlier one's in the cycle (else it is skipped). Off, as in
    # v0.19.2 (Alpha there; upstream's main, which this module otherwise follows, turned it on for
    # 0.20): on, a second preemptor of the cycle issues its own preemptions where upstream skips it.
    recompute_on_overlap: bool = False
    # Feature gate ConcurrentAdmission: variants keep to their flavor, wait behind closed preemption
    # gates, and migrate their parent to a more preferred flavor.
    concurrent_admission: bool = False
    # Feature gate MultiKueueOrchestratedPreemption: on a worker, a MultiKueue copy waits behind its
    # closed preemption gate until the manager opens it (as ConcurrentAdmission's variants wait).
    orchestrated_preemption: bool = False
    # Feature gate ElasticJobsViaWorkloadSlices: a slice replacing an admitted one takes its quota over.
    elastic_jobs: bool = False
    # Feature gate SchedulingEquivalenceHashing (Beta, on by default since v0.18): see `queues.py`.
    equivalence_hashing: bool = True
    # Seconds an inadmissible-requeue request for a cohort tree waits, gathering later ones (upstream's
    # InadmissibleWorkloadRequeuer: a delaying work queue keyed by root Cohort, or ClusterQueue
    # without one, `requeueBatchPeriod` 1 s in `pkg/cache/queue/inadmissible_workloads.go`); 0: at once.
    requeue_batch_s: float = 0.0
    # Feature gate SchedulerTimestampPreemptionBuffer (off, as in v0.19.2): 5 min, see `satisfies_policy`.
    timestamp_preemption_buffer: timedelta = timedelta(0)
    # Feature gate UnadmittedWorkloadsObservability (Beta, off in v0.19.2): a pending Workload's
    # QuotaReserved=False reason (and its Warning event) is the granular one; off it is `Pending`
    # (`UnadmittedWorkloadReasonWithFallback`, pkg/workload/workload.go).
    granular_pending_reasons: bool = False
    # What ResourceClaimTemplates cost (`dra`): gates KueueDRAIntegration,
    # KueueDRARejectWorkloadsWhenDRADisabled and resources.deviceClassMappings.
    dra_settings: dra.Settings = field(default_factory=dra.Settings)
    # Configuration.admissionFairSharing with gate AdmissionFairSharing on (`afs.Enabled`); None: off.
    admission_fair_sharing: admission_fair_sharing.Settings | None = None
    # Feature gate TopologyAwareScheduling (Beta, on): podSets asking for a topology (or in a
    # ClusterQueue of topology flavors only) are placed in their flavor's Topology (`topology`).
    tas: bool = True


@dataclass(slots=True)
class CycleResult:
    decisions: list[Decision] = field(default_factory=list)
    # Per ClusterQueue: entries with preemption targets skipped because another entry of the cycle
    # took the same resources (`admission_cycle_preemption_skips`).
    preemption_skips: dict[str, int] = field(default_factory=dict)
    # (ClusterQueue, new_targets | deferred_fit | skipped) for each recomputation of overlapping
    # preemption targets (`preemption_target_recomputations_total`).
    recomputations: list[tuple[str, str]] = field(default_factory=list)

    @property
    def admitted(self) -> list[Admit]:
        return [d for d in self.decisions if isinstance(d, Admit)]

    @property
    def preempted(self) -> list[Preempt]:
        return [d for d in self.decisions if isinstance(d, Preempt)]

    @property
    def pending(self) -> list[Pending]:
        return [d for d in self.decisions if isinstance(d, Pending)]

    @property
    def evicted(self) -> list[Evict]:
        return [d for d in self.decisions if isinstance(d, Evict)]

    @property
    def migrated(self) -> list[Migrate]:
        return [d for d in self.decisions if isinstance(d, Migrate)]

    @property
    def unreserved(self) -> list[UnsetReservation]:
        return [d for d in self.decisions if isinstance(d, UnsetReservation)]

    @property
    def requeued(self) -> list[Requeue]:
        return [d for d in self.decisions if isinstance(d, Requeue)]

    @property
    def blocked(self) -> list[QueueBlocked]:
        return [d for d in self.decisions if isinstance(d, QueueBlocked)]


@dataclass(slots=True)
class QueueStatusChanges:
    """ClusterQueue names and LocalQueue keys (`namespace/name`) whose status may have changed."""

    cluster_queues: set[str] = field(default_factory=set)
    local_queues: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Entry:
    wl: WorkloadInfo
    cq_name: str
    assignment: Assignment | None = None
    targets: list[Target] = field(default_factory=list)
    status: str = ""
    message: str = ""
    reason: str = ""
    requeue_reason: RequeueReason = RequeueReason.GENERIC
    keep_last: bool = True
    # The admitted slice this one replaces, when it is a preemption target too (upstream keeps it
    # in the targets until admission, so overlap and fit checks count it).
    replaces: WorkloadInfo | None = None


class AdmissionCore:
    """Cache + queue manager + scheduler: the admission core's single entry point."""

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config or SchedulerConfig()
        self.cache = Cache(concurrent_admission=self.config.concurrent_admission, tas=self.config.tas)
        self.queues = QueueManager(self.cache.namespaces, equivalence_hashing=self.config.equivalence_hashing)
        self.cycle = 0
        self._last: dict[WorkloadKey, LastAssignment] = {}
        self._evicting: set[WorkloadKey] = set()
        # Admitted TAS workloads with a failed node to replace (`NeedsSecondPass`), and the unhealthy
        # nodes each replacement or eviction was decided for, until an event shows the write.
        self._replacing: set[WorkloadKey] = set()
        self._replaced: dict[WorkloadKey, tuple[str, ...]] = {}
        # Workloads whose delayed placement is due (`NeedsSecondPass`): key -> (not before, attempts).
        self._placing: dict[WorkloadKey, tuple[datetime, int]] = {}
        # The pending form of each assumed workload, to requeue it if its Admit write fails.
        self._assumed_from: dict[WorkloadKey, WorkloadInfo] = {}
        # Workloads and queues whose queue-state decisions must be re-evaluated next cycle.
        self._qs_keys: set[WorkloadKey] = set()
        self._qs_cluster_queues: set[str] = set()
        self._qs_local_queues: set[str] = set()
        # Per reader of `take_status_changes`, the queues whose status may have changed since its
        # last call (None: all of them).
        self._status_changes: dict[str, QueueStatusChanges | None] = {}
        # Requeue requests waiting for their batch period: ("cohort" | "cq", root name) -> due time.
        self._requeue_due: dict[tuple[str, str], datetime] = {}
        # Admission fair sharing (`admission_fair_sharing.py`): LocalQueue usage orders opted-in queues.
        self.afs: admission_fair_sharing.Tracker | None = None
        if self.config.admission_fair_sharing is not None:
            self.afs = admission_fair_sharing.Tracker(
                self.cache,
                self.config.admission_fair_sharing,
                ignore_undeclared_resources=self.config.ignore_undeclared_resources,
            )
            self.queues.fs_usage = self.afs.usage

    # == events ===================================================================================
    def _tree_cqs(self, names: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for name in names:
            cq = self.cache.cluster_queues.get(name)
            if cq is None:
                continue
            root = cq.root()
            out.update(c.name for c in root.subtree_cluster_queues()) if isinstance(root, CohortNode) else out.add(name)
        return out

    def _flush(self, names: Iterable[str], now: datetime) -> None:
        """`NotifyRetryInadmissible`: requeue the inadmissible Workloads of these ClusterQueues' trees."""
        if self.config.requeue_batch_s <= 0:
            self.queues.queue_inadmissible(sorted(self._tree_cqs(names)), now)
            return
        due = now + timedelta(seconds=self.config.requeue_batch_s)
        for name in names:
            cq = self.cache.cluster_queues.get(name)
            if cq is not None:
                root = cq.root()
                # An item already waiting keeps its time (`AddAfter` of a delaying queue).
                self._requeue_due.setdefault(
                    ("cohort", root.name) if isinstance(root, CohortNode) else ("cq", name), due
                )

    def next_requeue_at(self) -> datetime | None:
        """When the earliest batched requeue is due (None: none waiting)."""
        return min(self._requeue_due.values(), default=None)

    def _requeue_batched(self, now: datetime) -> None:
        """The requeues whose batch period is over (`workqueueRequeuer.reconcile`), trees resolved now."""
        due = [item for item, at in self._requeue_due.items() if at <= now]
        names: set[str] = set()
        for kind, name in due:
            del self._requeue_due[(kind, name)]
            if kind == "cq":
                names.update(self._tree_cqs([name]))
            elif (cohort := self.cache.forest.cohorts.get(name)) is not None:
                names.update(cq.name for cq in cohort.subtree_cluster_queues())
        if names:
            self.queues.queue_inadmissible(sorted(names), now)

    def _sync_active(self) -> None:
        self._all_status_changed()  # a queue, flavor, check or topology changed: any status may
        for name in self.cache.cluster_queues:
            active = self.cache.readiness(name).active
            q = self.queues.cluster_queues.get(name)
            if q is not None and q.active != active:
                self._qs_cluster_queues.add(name)
            self.queues.set_cluster_queue_active(name, active)

    def on_resource_flavor(self, obj: Mapping[str, Any], now: datetime) -> None:
        rf = self.cache.upsert_resource_flavor(obj)
        self._sync_active()
        self._flush([n for n, cq in self.cache.cluster_queues.items() if rf.name in cq.spec.flavor_names()], now)

    def on_resource_flavor_deleted(self, name: str, now: datetime) -> None:
        self.cache.delete_resource_flavor(name)
        self._sync_active()

    def on_cluster_queue(self, obj: Mapping[str, Any], now: datetime) -> None:
        old = self.cache.cluster_queues.get(str(obj["metadata"]["name"]))
        was_active = old is not None and self.cache.readiness(old.name).active
        node = self.cache.upsert_cluster_queue(obj)
        if (
            old is None
            or old.spec.stop_policy != node.spec.stop_policy
            or was_active != self.cache.readiness(node.name).active
        ):
            self._qs_cluster_queues.add(node.name)
        self.queues.upsert_cluster_queue(node.spec, active=self.cache.readiness(node.name).active, now=now)
        self._sync_active()
        self._flush([node.name], now)

    def on_cluster_queue_deleted(self, name: str, now: datetime) -> None:
        self._all_status_changed()  # its LocalQueues' status too
        self.cache.delete_cluster_queue(name)
        self.queues.delete_cluster_queue(name)

    def on_cohort(self, obj: Mapping[str, Any], now: datetime) -> None:
        self.cache.upsert_cohort(obj)
        self._sync_active()
        self._flush(list(self.cache.cluster_queues), now)

    def on_cohort_deleted(self, name: str, now: datetime) -> None:
        self._all_status_changed()
        self.cache.delete_cohort(name)
        self._flush(list(self.cache.cluster_queues), now)

    def on_local_queue(self, obj: Mapping[str, Any], now: datetime) -> None:
        meta = obj["metadata"]
        old = self.cache.local_queues.get(f"{meta.get('namespace') or ''}/{meta['name']}")
        lq = self.cache.upsert_local_queue(obj)
        self._all_status_changed()
        if old is None or (old.stop_policy, old.cluster_queue) != (lq.stop_policy, lq.cluster_queue):
            self._qs_local_queues.add(lq.key)
        self.queues.upsert_local_queue(lq, now)
        if self.afs is not None:
            self.afs.on_local_queue(lq.key, obj, now)

    def on_local_queue_deleted(self, namespace: str, name: str, now: datetime) -> None:
        self._all_status_changed()
        self.cache.delete_local_queue(f"{namespace}/{name}")
        self.queues.delete_local_queue(f"{namespace}/{name}")
        if self.afs is not None:
            self.afs.on_local_queue_deleted(f"{namespace}/{name}")

    def on_priority_class(self, obj: Mapping[str, Any]) -> None:
        self.cache.upsert_priority_class(obj)

    def on_priority_class_deleted(self, name: str) -> None:
        self.cache.delete_priority_class(name)

    def on_namespace(self, name: str, labels: Mapping[str, str] | None, now: datetime) -> None:
        self.cache.set_namespace(name, labels)
        if labels is not None:
            self._flush(list(self.cache.cluster_queues), now)

    def on_admission_check(self, name: str, active: bool | None, now: datetime, controller: str = "") -> None:
        self.cache.set_admission_check(name, active, controller)
        self._sync_active()
        self._flush([n for n, cq in self.cache.cluster_queues.items() if name in cq.spec.admission_checks], now)

    def on_topology(self, obj: Mapping[str, Any], now: datetime) -> None:
        """A Topology created or changed: ClusterQueues with a flavor naming it may change Active."""
        name = str((obj.get("metadata") or {}).get("name") or "")
        self.cache.set_topology(name, topology.topology_levels(obj))
        self._topology_changed(name, now)

    def on_topology_deleted(self, name: str, now: datetime) -> None:
        self.cache.set_topology(name, None)
        self._topology_changed(name, now)

    def _topology_changed(self, name: str, now: datetime) -> None:
        self._sync_active()
        users = {n for n, rf in self.cache.resource_flavors.items() if rf.topology_name == name}
        self._flush([n for n, cq in self.cache.cluster_queues.items() if users & set(cq.spec.flavor_names())], now)

    def on_node(self, obj: Mapping[str, Any], now: datetime) -> None:
        """A Node added or changed (`tas_nodes_cache.go`); TAS workloads may fit anew, unless nothing the
        scheduler reads changed (`checkNodeSchedulingPropertiesChanged`, pkg/controller/tas/resource_flavor.go)."""
        node = topology.parse_node(obj)
        if self.cache.topology.nodes.get(node.name) == node:
            return
        self.cache.topology.set_node(node.name, node)
        self._flush_tas(now)

    def on_node_deleted(self, name: str, now: datetime) -> None:
        self.cache.topology.set_node(name, None)
        self._flush_tas(now)

    def on_pod(self, key: str, obj: Mapping[str, Any] | None, now: datetime) -> None:
        """A pod's usage outside TAS (`NonTasUsageReconciler`): bound, running, not topology-placed;
        None (deleted) or a pod that no longer counts frees its node."""
        placed = topology.non_tas_pod_usage(obj) if obj is not None else None
        freed = self.cache.topology.set_pod(key, placed)
        if freed:
            self._flush_tas(now)

    def _flush_tas(self, now: datetime) -> None:
        """Requeue the inadmissible Workloads of ClusterQueues with a TAS flavor."""
        tas_flavors = {n for n, rf in self.cache.resource_flavors.items() if rf.topology_name is not None}
        self._flush(
            [n for n, cq in self.cache.cluster_queues.items() if tas_flavors & set(cq.spec.flavor_names())], now
        )

    def on_limit_range(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.cache.set_limit_range(str(meta.get("namespace") or ""), str(meta.get("name") or ""), obj)

    def on_limit_range_deleted(self, namespace: str, name: str) -> None:
        self.cache.set_limit_range(namespace, name, None)

    def on_runtime_class(self, obj: Mapping[str, Any]) -> None:
        self.cache.set_runtime_class(str((obj.get("metadata") or {}).get("name") or ""), obj)

    def on_runtime_class_deleted(self, name: str) -> None:
        self.cache.set_runtime_class(name, None)

    def on_claim_template(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.cache.set_claim_template(str(meta.get("namespace") or ""), str(meta.get("name") or ""), obj)

    def on_claim_template_deleted(self, namespace: str, name: str) -> None:
        self.cache.set_claim_template(namespace, name, None)

    def on_device_class(self, obj: Mapping[str, Any]) -> None:
        self.cache.set_device_class(str((obj.get("metadata") or {}).get("name") or ""), obj)

    def on_device_class_deleted(self, name: str) -> None:
        self.cache.set_device_class(name, None)

    def parse_workload(self, obj: Mapping[str, Any]) -> WorkloadInfo:
        """The Workload as its pods will be created: requests adjusted for its namespace's LimitRanges
        and its RuntimeClasses, and what the LimitRanges refuse recorded (upstream adjusts each
        Workload before queueing it, `workload.AdjustResources` in the queue manager and workload
        controller, and validates the adjusted copy in `nominate`)."""
        ns = str((obj.get("metadata") or {}).get("namespace") or "")
        summary = self.cache.limit_summaries.get(ns, {})
        adjusted = pod_resources.adjust_workload(obj, summary=summary, overheads=self.cache.runtime_overheads)
        devices = self.dra_outcome(obj)
        if not devices.inadmissible and dra.has_dra(obj):
            adjusted = dra.without_own_refusal(adjusted)
        return parse_workload(
            adjusted,
            requeue_by_eviction=self.config.requeue_by_eviction,
            limit_range_errors=pod_resources.limit_range_errors(adjusted, summary),
            dra_requests=devices.requests,
            dra_replaced=devices.replaced,
            dra_error=devices.quota_message,
            resources=self.config.resources,
        )

    def dra_outcome(self, obj: Mapping[str, Any]) -> dra.Outcome:
        """What the Workload's ResourceClaimTemplates cost, from the templates the core was fed. Only
        a Workload waiting for quota is looked at (upstream's `StatusPending` and not on hold): an
        admitted one holds what status.admission says."""
        conds = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or ()}
        reserved = (conds.get(constants.WorkloadCondition.QUOTA_RESERVED) or {}).get("status") == "True"
        finished = (conds.get(constants.WorkloadCondition.FINISHED) or {}).get("status") == "True"
        held = (conds.get(constants.WorkloadCondition.QUOTA_RESERVED) or {}).get("reason") == constants.ON_HOLD_REASON
        if reserved or finished or held:
            return dra.Outcome()
        return dra.resolve(obj, self.cache.claim_template, self.config.dra_settings, self.cache.extended_backing)

    def on_workload(self, obj: Mapping[str, Any], now: datetime) -> WorkloadInfo:
        """A Workload was created or updated (including status changes)."""
        return self.upsert_workload_info(self.parse_workload(obj), now)

    def upsert_workload_info(self, wl: WorkloadInfo, now: datetime) -> WorkloadInfo:
        """As `on_workload`, for an already parsed Workload."""
        queued = self.queues.pending.get(wl.key)
        self._status_touch(queued, wl)
        old, reserving = self.cache.upsert_workload(wl)
        self._status_touch(old)
        if self._replaced.get(wl.key) != wl.unhealthy_nodes:
            self._replaced.pop(wl.key, None)
        if reserving and wl.needs_node_replacement and self.config.tas:
            self._replacing.add(wl.key)
        else:
            self._replacing.discard(wl.key)
        if reserving and wl.needs_delayed_placement and self.config.tas:
            self._placing.setdefault(wl.key, (now, 0))
        else:
            self._placing.pop(wl.key, None)
        if old is not None and (not reserving or old.usage() != wl.usage() or old.priority != wl.priority):
            self._flush([old.admission_cluster_queue], now)
        if wl.is_evicted or not reserving:
            self._evicting.discard(wl.key)
        if reserving or not wl.is_admissible_for_queue():
            self._last.pop(wl.key, None)
        if reserving or old is None:
            self._assumed_from.pop(wl.key, None)
        self.queues.upsert_workload(wl, now)
        # A queued Workload that finishes or is deactivated requeues its ClusterQueue's inadmissible
        # ones, forgetting its failed equivalence classes (`WorkloadReconciler.Update`, Finished or
        # inactive → `QueueAssociatedInadmissibleWorkloadsAfter`): a pending MultiKueue copy finished
        # as an orphan and made again under the same name is evaluated, not parked without a status.
        if queued is not None and (wl.is_finished or not wl.active):
            self._flush_queue_of(queued, now)
        self._qs_keys.add(wl.key)
        if self.afs is not None:
            self.afs.on_workload(wl, now)
        return wl

    def on_workload_deleted(self, namespace: str, name: str, now: datetime) -> None:
        key = WorkloadKey(f"{namespace}/{name}")
        old = self.cache.delete_workload(key)
        pending = self.queues.delete_workload(key)
        self._status_touch(old, pending)
        self._last.pop(key, None)
        self._evicting.discard(key)
        self._assumed_from.pop(key, None)
        self._qs_keys.discard(key)
        self._replacing.discard(key)
        self._replaced.pop(key, None)
        self._placing.pop(key, None)
        if self.afs is not None:
            self.afs.on_workload_deleted(key)
        # Any deleted Workload of a queue requeues that ClusterQueue's inadmissible ones, which also
        # forgets its failed equivalence classes (`WorkloadReconciler.Delete` →
        # `QueueAssociatedInadmissibleWorkloadsAfter`): a newcomer of a deleted pending Workload's class
        # (a MultiKueue copy made again) is evaluated, not parked without a status.
        if old is not None:
            self._flush([old.admission_cluster_queue], now)
        if pending is not None:
            self._flush_queue_of(pending, now)

    def _flush_queue_of(self, wl: WorkloadInfo, now: datetime) -> None:
        """`_flush` the ClusterQueue `wl`'s LocalQueue routes to, if any."""
        if (cq := self.queues.cluster_queue_of(wl)) is not None:
            self._flush([cq], now)

    def admission_failed(self, key: WorkloadKey, now: datetime) -> None:
        """The Admit write failed: drop the assumed reservation and requeue the workload."""
        wl = self.cache.forget_workload(key)
        original = self._assumed_from.pop(key, None)
        self._status_touch(wl, original)
        self._replaced.pop(key, None)
        if self.afs is not None:
            self.afs.admission_failed(key)
        if wl is not None:
            self._flush([wl.admission_cluster_queue], now)
        if original is not None:
            self.queues.upsert_workload(original, now)

    def write_failed(self, key: WorkloadKey) -> None:
        """A queue-state or preemption-victim write on `key` failed: reconsider it next cycle."""
        self._evicting.discard(key)
        self._qs_keys.add(key)

    # == status ===================================================================================
    def _status_touch(self, *workloads: WorkloadInfo | None) -> None:
        """These Workloads were queued, reserved or released: the status of their LocalQueue, of the
        ClusterQueue it points to and of the one they hold quota in may have changed (upstream's
        ClusterQueue and LocalQueue controllers reconcile the queues of each Workload event)."""
        readers = [changes for changes in self._status_changes.values() if changes is not None]
        for wl in workloads if readers else ():
            if wl is None:
                continue
            lq_key = f"{wl.namespace}/{wl.queue_name}"
            lq = self.cache.local_queues.get(lq_key)
            for changes in readers:
                changes.local_queues.add(lq_key)
                if lq is not None:
                    changes.cluster_queues.add(lq.cluster_queue)
                if wl.admission_cluster_queue:
                    changes.cluster_queues.add(wl.admission_cluster_queue)

    def _all_status_changed(self) -> None:
        self._status_changes = dict.fromkeys(self._status_changes)

    def take_status_changes(self, reader: str = "status") -> QueueStatusChanges | None:
        """The ClusterQueues and LocalQueues whose status may differ from what it was at `reader`'s
        last call (None: any may, e.g. after a queue or flavor changed, and on its first call), so
        that publishing status (reader "status") or the gauges ("gauges") costs the queues that
        changed, not all of them. Moves between a ClusterQueue's active and inadmissible Workloads
        are not reported (the status counts both together)."""
        changes = self._status_changes.get(reader)
        self._status_changes[reader] = QueueStatusChanges()
        return changes

    def cluster_queue_status(self, name: str) -> dict[str, Any]:
        return status.cluster_queue_status(self.cache, self.queues, name, fair_sharing=self.config.fair_sharing)

    def local_queue_status(self, namespace: str, name: str) -> dict[str, Any]:
        out = status.local_queue_status(self.cache, self.queues, f"{namespace}/{name}")
        fs = self.afs.status(f"{namespace}/{name}") if self.afs is not None else None
        if out and fs is not None:
            out["fairSharing"] = fs
        return out

    def sample_admission_fair_sharing(self, now: datetime) -> list[str]:
        """Sample the LocalQueues whose admission fair sharing usage is due (the LocalQueue reconcile's
        timer, which the worker runs): their status then carries the new `fairSharing`. Returns their
        keys; [] with admission fair sharing off."""
        sampled = [] if self.afs is None else self.afs.sample(now)
        for changes in self._status_changes.values():
            if changes is not None:
                changes.local_queues.update(sampled)
        return sampled

    def cohort_status(self, name: str) -> dict[str, Any]:
        return status.cohort_status(self.cache, name, fair_sharing=self.config.fair_sharing)

    # == the cycle ================================================================================
    def schedule(self, now: datetime) -> CycleResult:
        """One scheduling cycle (see the module docstring for the recipe)."""
        self.cycle += 1
        result = CycleResult()
        self._requeue_batched(now)
        self._queue_state(result)  # 0
        heads = self.queues.heads(now)  # 1
        replacing = [
            w
            for k in sorted(self._replacing)
            if (w := self.cache.reserving.get(k)) is not None and self._replaced.get(k) != w.unhealthy_nodes
        ]
        placing = [
            w
            for k, (due, _) in sorted(self._placing.items())
            if due <= now and (w := self.cache.reserving.get(k)) is not None and w.needs_delayed_placement
        ]
        if not heads and not replacing and not placing:
            return result
        snap = take_snapshot(self.cache)  # 2
        for w in replacing:
            self._replace_node(w, snap, result, now)
        for w in placing:
            self._place_delayed(w, snap, result, now)
        if not heads:
            return result
        preemptor = Preemptor(
            fair_sharing=self.config.fair_sharing,
            strategies=self.config.fair_sharing_strategies,
            now=now,
            buffer=self.config.timestamp_preemption_buffer,
            lq_usage=self.afs.candidate_usages() if self.afs is not None else None,
        )
        entries, inadmissible = self._nominate(heads, snap, preemptor)  # 3
        preempted: dict[WorkloadKey, WorkloadInfo] = {}
        for e in self._order(entries, snap):  # 4
            self._process(e, snap, preemptor, preempted, result, now)  # 5
        for e in entries + inadmissible:  # 6
            if e.status != "assumed":
                self._requeue_and_report(e, result, now)
        return result

    def _replace_node(self, wl: WorkloadInfo, snap: Snapshot, result: CycleResult, now: datetime) -> None:
        """The second scheduling pass after a node failure: the pods of the first unhealthy node move
        to a node the rest of their placement allows (`findReplacementAssignment`), the admission is
        rewritten and status.unhealthyNodes cleared; with none to be found the workload is evicted
        (TASFailedNodeReplacementFailFast, on), reason NodeFailures."""
        topo = snap.topology
        cq = snap.cluster_queues.get(wl.admission_cluster_queue)
        if topo is None or cq is None:
            return
        failed = set(wl.unhealthy_nodes)
        tas_only = _tas_only(cq, topo)
        pod_sets = {ps.name: ps for ps in wl.pod_sets}
        requests: dict[str, list[PodSetRequest]] = {}
        placed: dict[str, TopologyAssignment] = {}
        for psa in wl.assignments:
            ta, ps = psa.topology_assignment, pod_sets.get(psa.name)
            flavor = next((f for f in sorted(set(psa.flavors.values())) if topo.is_tas(f)), None)
            if ta is None or ps is None or flavor is None or not any(d.values[-1] in failed for d in ta.domains):
                continue
            implied = not ps.requests_tas and tas_only
            requests.setdefault(flavor, []).append(topology.pod_set_request(ps, psa.count, implied=implied))
            placed[psa.name] = ta
        results, _ = topo.find(requests, replacement=Replacement(wl.unhealthy_nodes[0], placed))
        self._replacing.discard(wl.key)
        self._replaced[wl.key] = wl.unhealthy_nodes
        if any(results.get(n) is None or results[n].reason or results[n].assignment is None for n in placed):
            reason = constants.EvictionReason.NODE_FAILURES
            message = "Workload was evicted as there was no replacement for unhealthy node(s): " + ",".join(
                wl.unhealthy_nodes
            )
            self._evicting.add(wl.key)
            result.decisions.append(
                Evict(
                    wl.key,
                    wl.uid,
                    wl.admission_cluster_queue,
                    reason,
                    message,
                    (conditions.evicted(reason, message),),
                    wl.generation,
                )
            )
            return
        assignments = tuple(
            dataclasses.replace(psa, topology_assignment=results[psa.name].assignment) if psa.name in placed else psa
            for psa in wl.assignments
        )
        repaired = dataclasses.replace(wl, assignments=assignments, unhealthy_nodes=())
        topo.remove(wl.key)
        topo.add(wl.key, topology.workload_tas_usage(repaired, topo.is_tas))
        self.cache.assume_workload(repaired)
        self._status_touch(repaired)
        admission = {"clusterQueue": wl.admission_cluster_queue, "podSetAssignments": [p.to_api() for p in assignments]}
        conds: list[ConditionValue] = [conditions.quota_reserved_condition(wl.admission_cluster_queue)]
        if has_all_required(cq.spec, admission, wl.check_states):
            checks = wl.check_states
            conds.append(
                conditions.admitted_condition(
                    bool(checks),
                    all(s == constants.CHECK_STATE_READY for s in checks.values()),
                    any(p.delayed_topology == constants.DELAYED_TOPOLOGY_PENDING for p in assignments),
                )
            )
        result.decisions.append(
            Admit(
                wl.key,
                wl.uid,
                wl.admission_cluster_queue,
                admission,
                tuple(conds),
                None,
                wl.generation,
                clears_unhealthy_nodes=True,
            )
        )

    def _place_delayed(self, wl: WorkloadInfo, snap: Snapshot, result: CycleResult, now: datetime) -> None:
        """The second scheduling pass of a delayed placement (`NeedsSecondPass`, ProvisioningRequest
        checks Ready): place the pending pod sets on their TAS flavors and rewrite the admission with
        the placement, `delayedTopologyRequest: Ready` and Admitted. A placement not found yet is
        tried again later, 1 s then doubling up to a minute (upstream's second-pass backoff)."""
        topo = snap.topology
        cq = snap.cluster_queues.get(wl.admission_cluster_queue)
        if topo is None or cq is None:
            return
        tas_only = _tas_only(cq, topo)
        pod_sets = {ps.name: ps for ps in wl.pod_sets}
        requests: dict[str, list[PodSetRequest]] = {}
        for psa in wl.assignments:
            ps = pod_sets.get(psa.name)
            flavor = next((f for f in sorted(set(psa.flavors.values())) if topo.is_tas(f)), None)
            if psa.delayed_topology != constants.DELAYED_TOPOLOGY_PENDING or ps is None or flavor is None:
                continue
            implied = not ps.requests_tas and tas_only
            requests.setdefault(flavor, []).append(topology.pod_set_request(ps, psa.count, implied=implied))
        results, _ = topo.find(requests)
        pending = [req.name for reqs in requests.values() for req in reqs]
        if not pending or any(results.get(n) is None or results[n].assignment is None for n in pending):
            attempts = self._placing.get(wl.key, (now, 0))[1] + 1
            self._placing[wl.key] = (now + timedelta(seconds=min(2 ** (attempts - 1), 60)), attempts)
            return
        self._placing.pop(wl.key, None)
        assignments = tuple(
            dataclasses.replace(
                psa,
                topology_assignment=results[psa.name].assignment,
                delayed_topology=constants.DELAYED_TOPOLOGY_READY,
            )
            if psa.name in pending
            else psa
            for psa in wl.assignments
        )
        placed = dataclasses.replace(wl, assignments=assignments)
        topo.add(wl.key, topology.workload_tas_usage(placed, topo.is_tas))
        admission = {"clusterQueue": wl.admission_cluster_queue, "podSetAssignments": [p.to_api() for p in assignments]}
        checks = wl.check_states
        admitted = conditions.admitted_condition(
            bool(checks), all(s == constants.CHECK_STATE_READY for s in checks.values())
        )
        placed = _with_condition(placed, admitted, now)
        self.cache.assume_workload(placed)
        self._status_touch(placed)
        conds = (conditions.quota_reserved_condition(wl.admission_cluster_queue), admitted)
        result.decisions.append(
            Admit(wl.key, wl.uid, wl.admission_cluster_queue, admission, conds, None, wl.generation)
        )

    def _queue_state(self, result: CycleResult) -> None:
        """Decisions the queues' state calls for, for workloads touched since the last cycle."""
        keys, self._qs_keys = self._qs_keys, set()
        cqs, self._qs_cluster_queues = self._qs_cluster_queues, set()
        lqs, self._qs_local_queues = self._qs_local_queues, set()
        if cqs or lqs:
            routes = {k: lq.cluster_queue for k, lq in self.cache.local_queues.items()}
            for w in (*self.cache.reserving.values(), *self.queues.pending.values()):
                lq_key = f"{w.namespace}/{w.queue_name}"
                if lq_key in lqs or w.admission_cluster_queue in cqs or routes.get(lq_key) in cqs:
                    keys.add(w.key)
        for key in sorted(keys):
            reserving = key in self.cache.reserving
            wl = self.cache.reserving.get(key) if reserving else self.queues.pending.get(key)
            if wl is None:
                continue
            d = queue_state.queue_state_decision(
                wl, self.cache, reserving=reserving, granular_reasons=self.config.granular_pending_reasons
            )
            if d is not None and not (isinstance(d, Evict) and wl.key in self._evicting):
                result.decisions.append(d)

    def _outdated(self, last: LastAssignment, cq: ClusterQueueNode) -> bool:
        if self.cycle - last.cycle <= 1:
            return False
        return cq.allocatable_generation > last.cq_generation

    def _replaced_slice(self, wl: WorkloadInfo, cq: ClusterQueueNode) -> WorkloadInfo | None:
        """`ReplacedWorkloadSlice`: the admitted slice of the same namespace and ClusterQueue that
        `wl` replaces, if any."""
        if not self.config.elastic_jobs or not wl.replacement_for:
            return None
        old = cq.workloads.get(WorkloadKey(wl.replacement_for))
        return old if old is not None and old.namespace == wl.namespace else None

    def _assign(
        self,
        wl: WorkloadInfo,
        cq: ClusterQueueNode,
        snap: Snapshot,
        preemptor: Preemptor,
        *,
        use_last: bool = True,
        nominated: Mapping[str, Mapping[str, str]] | None = None,
    ) -> tuple[Assignment, list[Target], WorkloadInfo | None]:
        """`getInitialAssignments`: the assignment, its preemption targets and the replaced slice,
        which is reported only with an assignment that fits or has targets (then it is one too)."""
        last = self._last.get(wl.key) if use_last else None
        if last is not None and self._outdated(last, cq):
            last = None
        oracle = Oracle(preemptor, snap)
        replaced = self._replaced_slice(wl, cq)
        kw = {
            "fair_sharing": self.config.fair_sharing,
            "last": last,
            "ignore_undeclared": self.config.ignore_undeclared_resources,
            "nominated": nominated,
            "concurrent_admission": self.config.concurrent_admission,
            "replaces": replaced,
            "tas": self.config.tas,
            "topology": snap.topology,
            "delay_topology": self._delayed_flavors(cq, wl),
        }
        full = assign_flavors(wl, cq, snap.resource_flavors, oracle, **kw)  # type: ignore[arg-type]
        mode = full.representative_mode()
        if mode == Mode.FIT:
            return full, [], replaced
        if mode == Mode.PREEMPT:
            targets = preemptor.get_targets(wl, full, snap)
            self._reserve_topology(wl, cq, full, targets, snap)
            if targets:
                return full, targets, replaced
        if wl.can_be_partially_admitted:

            def fits(counts: list[int]) -> tuple[tuple[Assignment, list[Target]] | None, bool]:
                a = assign_flavors(wl, cq, snap.resource_flavors, oracle, counts=counts, **kw)  # type: ignore[arg-type]
                m = a.representative_mode()
                if m == Mode.FIT:
                    return (a, []), True
                if m == Mode.PREEMPT:
                    t = preemptor.get_targets(wl, a, snap)
                    self._reserve_topology(wl, cq, a, t, snap)
                    if t:
                        return (a, t), True
                return None, False

            found = search_partial(wl, fits)
            if found is not None:
                return (*found, replaced)
        return full, [], None

    def _delayed_flavors(self, cq: ClusterQueueNode, wl: WorkloadInfo) -> frozenset[str]:
        """The flavors whose TAS placement waits (`podSetTopologyRequest`): every one behind a
        MultiKueue check (the worker places the pods), and, on the first pass only, those a
        ProvisioningRequest check covers (placed once its nodes exist)."""
        controllers = self.cache.admission_check_controllers
        spec = cq.spec
        if any(controllers.get(a) == constants.MULTIKUEUE_CONTROLLER for a in spec.admission_checks):
            return frozenset(spec.flavor_names())
        if wl.has_quota_reservation:
            return frozenset()
        every = frozenset(spec.flavor_names())
        return frozenset(
            f
            for a in spec.admission_checks
            if controllers.get(a) == constants.PROVISIONING_REQUEST_CONTROLLER
            for f in spec.admission_check_flavors.get(a, every)
        )

    def _reserve_topology(
        self, wl: WorkloadInfo, cq: ClusterQueueNode, a: Assignment, targets: list[Target], snap: Snapshot
    ) -> None:
        """`updateAssignmentForTAS`: a preempting workload's placement, found with its targets gone, or
        in an empty cluster when it has none, so the domains it waits for are held for it."""
        topo = snap.topology
        if topo is None or (not any(ps.requests_tas for ps in wl.pod_sets) and not _tas_only(cq, topo)):
            return
        requests = topology_requests(wl, a, cq, snap.resource_flavors, topo)
        if targets:
            with snap.simulated_removal([t.workload for t in targets]):
                results, _ = topo.find(requests)
        else:
            results, _ = topo.find(requests, simulate_empty=True)
        update_for_topology(a, wl, requests, results)

    def _record(self, e: _Entry, a: Assignment, targets: list[Target], replaced: WorkloadInfo | None) -> None:
        e.assignment, e.targets, e.replaces, e.message = a, targets, replaced, a.message()
        if a.last_state is not None:
            a.last_state.cycle = self.cycle
            self._last[e.wl.key] = a.last_state

    def _nominate(self, heads: list[Head], snap: Snapshot, preemptor: Preemptor) -> tuple[list[_Entry], list[_Entry]]:
        entries: list[_Entry] = []
        inadmissible: list[_Entry] = []
        for h in heads:
            wl, name = h.workload, h.cluster_queue
            e = _Entry(wl, name)
            cq = snap.cluster_queues.get(name)
            if self.cache.is_reserving(wl.key):
                self.queues.admitted(wl.key, name)
                self._status_touch(wl)
                continue
            if wl.failed_checks:
                e.message, e.reason = "The workload has failed admission checks", PendingReason.PENDING_EVALUATION
            elif name in snap.inactive:
                e.message, e.reason = f"ClusterQueue {name} is inactive", PendingReason.SUSPENDED
            elif cq is None:
                e.message, e.reason = f"ClusterQueue {name} not found", PendingReason.MISCONFIGURED
            elif wl.namespace not in snap.namespaces:
                e.message = f'workload namespace "{wl.namespace}" does not exist: namespaces "{wl.namespace}" not found'
                e.reason = PendingReason.MISCONFIGURED
            elif cq.spec.namespace_selector is None or not cq.spec.namespace_selector.matches(
                snap.namespaces[wl.namespace]
            ):
                e.message, e.reason = (
                    "workload namespace doesn't match ClusterQueue selector",
                    PendingReason.MISCONFIGURED,
                )
                e.requeue_reason = RequeueReason.NAMESPACE_MISMATCH
            elif wl.resource_errors:
                e.message, e.reason = f"resources validation failed: {wl.resource_errors}", PendingReason.MISCONFIGURED
            elif wl.limit_range_errors:
                e.message = f"{pod_resources.LIMIT_RANGE_CONSTRAINTS_MESSAGE}: {wl.limit_range_errors}"
                e.reason = PendingReason.MISCONFIGURED
            else:
                self._record(e, *self._assign(wl, cq, snap, preemptor))
                entries.append(e)
                continue
            inadmissible.append(e)
        return entries, inadmissible

    def _order(self, entries: list[_Entry], snap: Snapshot) -> Iterator[_Entry]:
        if not self.config.fair_sharing:
            yield from sorted(
                entries, key=lambda e: ordering.entry_key(e.wl, e.assignment.borrowing if e.assignment else 0)
            )
            return
        by_cq = {e.cq_name: e for e in entries}
        while by_cq:
            name = min(by_cq)
            cq = snap.cluster_queues[name]
            root = cq.root()
            if isinstance(root, CohortNode):
                wls = {n: x.wl for n, x in by_cq.items()}
                usage = {x.wl.key: x.assignment.total_requests() if x.assignment else {} for x in by_cq.values()}
                won = fair_sharing.run_tournament(root, wls, _usage_lookup(usage), snap.add_usage, snap.remove_usage)
                name = won or name
            yield by_cq.pop(name)

    def _fits(
        self,
        snap: Snapshot,
        cq: ClusterQueueNode,
        a: Assignment,
        preempted: Mapping[WorkloadKey, WorkloadInfo],
        targets: list[WorkloadInfo],
    ) -> tuple[bool, bool]:
        """(fits on quota, fits on TAS) once `preempted` and `targets` are gone (`fits` in
        scheduler.go). Upstream removes every victim of the cycle for every entry; only those of
        `cq`'s cohort tree hold quota that `available` reads, so the others stay unless TAS capacity
        (nodes every tree shares) is checked too: with 1,000 ClusterQueues a cycle has as many
        heads and hundreds of victims, and removing them all for each head was most of the cycle."""
        victims = dict(preempted)
        victims.update((t.key, t) for t in targets)
        if snap.topology is None or not a.tas_usage:
            root = cq.root()
            victims = {
                key: wl
                for key, wl in victims.items()
                if (owner := snap.cluster_queues.get(wl.admission_cluster_queue)) is not None and owner.root() is root
            }
        with snap.simulated_removal(victims.values()):
            if not all(v <= resource_node.available(cq, fr) for fr, v in a.total_requests().items()):
                return False, True
            return True, snap.topology is None or not a.tas_usage or snap.topology.fits(a.tas_usage)

    def _process(
        self,
        e: _Entry,
        snap: Snapshot,
        preemptor: Preemptor,
        preempted: dict[WorkloadKey, WorkloadInfo],
        result: CycleResult,
        now: datetime,
    ) -> None:
        cq = snap.cluster_queues[e.cq_name]
        assert e.assignment is not None
        variant = self.config.concurrent_admission and e.wl.is_variant
        if variant and _admitted_sibling(e.wl, cq, more_favorable=True) is not None:
            e.status, e.message, e.reason = (
                "skipped",
                constants.MSG_MORE_FAVORABLE_VARIANT_ADMITTED,
                PendingReason.PENDING_EVALUATION,
            )
            return
        usage = e.assignment.total_requests()
        overlap = any(t.key in preempted for t in _victims(e))
        recomputed = overlap and self.config.recompute_on_overlap
        if recomputed:
            # Recomputed from the first flavor, but only over the flavors first chosen (flavor stickiness).
            nominated = {ps.name: {res: fa.name for res, fa in ps.flavors.items()} for ps in e.assignment.pod_sets}
            with snap.simulated_removal(list(preempted.values())):
                self._last.pop(e.wl.key, None)
                self._record(e, *self._assign(e.wl, cq, snap, preemptor, use_last=False, nominated=nominated))
            assert e.assignment is not None
            if e.assignment.representative_mode() == Mode.FIT:
                e.assignment.mode_override = Mode.DEFERRED_FIT
            usage = e.assignment.total_requests()
            overlap = any(t.key in preempted for t in _victims(e))
        fits_quota, fits_tas = self._fits(snap, cq, e.assignment, preempted, _victims(e))
        if fits_quota and not fits_tas and not recomputed:
            # TASRecomputeAssignmentWithinSchedulingCycle (Beta, on): an earlier entry of this cycle
            # took the domains; place it again over the flavors first chosen.
            nominated = {ps.name: {res: fa.name for res, fa in ps.flavors.items()} for ps in e.assignment.pod_sets}
            self._last.pop(e.wl.key, None)
            self._record(e, *self._assign(e.wl, cq, snap, preemptor, use_last=False, nominated=nominated))
            assert e.assignment is not None
            usage = e.assignment.total_requests()
            fits_quota, fits_tas = self._fits(snap, cq, e.assignment, preempted, _victims(e))
        fits = fits_quota and fits_tas
        a = e.assignment
        mode = a.representative_mode()
        if recomputed:
            outcome = (
                "deferred_fit"
                if mode == Mode.DEFERRED_FIT
                else "new_targets"
                if e.targets and fits and not overlap
                else "skipped"
            )
            result.recomputations.append((e.cq_name, outcome))
        if mode == Mode.NO_FIT:
            e.requeue_reason, e.reason = RequeueReason.NO_FIT, a.no_fit_reason
            return
        if mode == Mode.PREEMPT and not e.targets:
            e.requeue_reason, e.reason = RequeueReason.PREEMPTION_NO_CANDIDATES, PendingReason.WAITING_FOR_QUOTA
            if cq.spec.preemption.reclaim_within_cohort != model.PreemptionPolicy.ANY:
                snap.add_usage(cq, _to_reserve(a, cq))
                self._add_topology_usage(snap, e.wl.key, a)
            return
        gated = self.config.concurrent_admission or self.config.orchestrated_preemption
        if mode == Mode.PREEMPT and gated and e.wl.closed_preemption_gate:
            e.status, e.message, e.reason = (
                "preemption_gated",
                constants.MSG_PREEMPTION_GATED,
                PendingReason.ADMISSION_GATED,
            )
            e.requeue_reason = RequeueReason.PREEMPTION_GATED
            self._last.pop(e.wl.key, None)
            return
        if mode == Mode.DEFERRED_FIT:
            e.message = "Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete"
            e.reason, e.requeue_reason = PendingReason.WAITING_FOR_PREEMPTED_WORKLOADS, RequeueReason.PENDING_PREEMPTION
            self._last.pop(e.wl.key, None)
            snap.add_usage(cq, usage)
            self._add_topology_usage(snap, e.wl.key, a)
            return
        if overlap:
            e.status, e.message, e.reason = (
                "skipped",
                "Workload has overlapping preemption targets with another workload",
                PendingReason.WAITING_FOR_QUOTA,
            )
            result.preemption_skips[e.cq_name] = result.preemption_skips.get(e.cq_name, 0) + 1
            return
        if not fits:
            e.status, e.message, e.reason = (
                "skipped",
                "Workload no longer fits after processing another workload",
                PendingReason.WAITING_FOR_QUOTA,
            )
            if mode == Mode.PREEMPT:
                result.preemption_skips[e.cq_name] = result.preemption_skips.get(e.cq_name, 0) + 1
            return
        preempted.update((t.key, t) for t in _victims(e))
        snap.add_usage(cq, usage)
        self._add_topology_usage(snap, e.wl.key, a)
        if mode == Mode.PREEMPT:
            e.reason = PendingReason.WAITING_FOR_PREEMPTED_WORKLOADS
            self._issue_preemptions(e, cq, snap, result)
            return
        if self.config.block_admission and blocks_admission(self.cache):
            # Upstream writes this status and then blocks the scheduler until every admitted workload
            # is ready; here the entry goes back to the heap and is retried on the next event.
            e.status, e.message, e.reason = (
                "skipped",
                constants.MSG_WAITING_FOR_PODS_READY,
                PendingReason.WAITING_FOR_PODS_READY,
            )
            return
        if variant and (sibling := _admitted_sibling(e.wl, cq, more_favorable=False)) is not None:
            if not _migration_allowed(e, cq):
                e.reason = PendingReason.PENDING_EVALUATION
                return
            e.reason = PendingReason.WAITING_FOR_PREEMPTED_WORKLOADS
            self._issue_migration(e, sibling, result)
            return
        self._admit(e, cq, result, now)

    @staticmethod
    def _add_topology_usage(snap: Snapshot, key: WorkloadKey, a: Assignment) -> None:
        """Later entries of the cycle must not take the domains this one holds (`AddUsage` of `Usage.TAS`)."""
        if snap.topology is not None and a.tas_usage:
            snap.topology.add(key, a.tas_usage)

    def _issue_preemptions(self, e: _Entry, cq: ClusterQueueNode, snap: Snapshot, result: CycleResult) -> None:
        victims = []
        for t in e.targets:
            if t.workload.is_evicted or t.workload.key in self._evicting:
                continue
            target_cq = snap.cluster_queues.get(t.cluster_queue)
            msg = conditions.preemption_message(
                e.wl.uid, e.wl.job_uid, t.reason, cq_path(cq), cq_path(target_cq) if target_cq else ""
            )
            victims.append(
                Victim(
                    t.workload.key,
                    t.workload.uid,
                    t.cluster_queue,
                    t.reason,
                    msg,
                    conditions.evicted_by_preemption(t.reason, msg),
                    t.workload.generation,
                )
            )
            self._evicting.add(t.workload.key)
        if victims:
            result.decisions.append(Preempt(e.wl.key, e.cq_name, tuple(victims)))
        e.message += f". Pending the preemption of {len(e.targets)} workload(s)"
        e.requeue_reason = RequeueReason.PENDING_PREEMPTION
        self._last.pop(e.wl.key, None)
        self.queues.set_sticky(e.wl.key, e.cq_name)

    def _issue_migration(self, e: _Entry, victim: WorkloadInfo, result: CycleResult) -> None:
        """Evict the admitted, less preferred sibling; `e` waits for it like a preemptor."""
        if not (victim.is_evicted or victim.key in self._evicting):
            msg = constants.MSG_FLAVOR_MIGRATION.format(uid=e.wl.uid)
            reason = constants.EvictionReason.FLAVOR_MIGRATION
            result.decisions.append(
                Migrate(
                    victim.key,
                    victim.uid,
                    victim.admission_cluster_queue,
                    reason,
                    msg,
                    (conditions.evicted(reason, msg),),
                    victim.generation,
                )
            )
            self._evicting.add(victim.key)
        self._last.pop(e.wl.key, None)
        e.requeue_reason = RequeueReason.PENDING_MIGRATION
        e.message += ". Pending the migration of 1 workload(s)"
        self.queues.set_sticky(e.wl.key, e.cq_name)

    def _admit(self, e: _Entry, cq: ClusterQueueNode, result: CycleResult, now: datetime) -> None:
        assert e.assignment is not None
        assignments = e.assignment.pod_set_assignments()
        conds: list[ConditionValue] = [conditions.quota_reserved_condition(e.cq_name)]
        for ctype in (
            constants.WorkloadCondition.EVICTED,
            constants.WorkloadCondition.PREEMPTED,
            constants.WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES,
        ):
            c = e.wl.conditions.get(ctype)
            if c is not None and c.status == "True":
                conds.append(conditions.previously(ctype, c.message))
        assumed = e.wl.with_reservation(e.cq_name, assignments, now)
        admission = {"clusterQueue": e.cq_name, "podSetAssignments": [p.to_api() for p in assignments]}
        # `HasAllRequiredChecks` then `SyncAdmittedCondition`: once every check the assigned flavors
        # require has a state on the workload, Admitted follows whether all states are Ready.
        checks = e.wl.check_states
        if has_all_required(cq.spec, admission, checks):
            adm = conditions.admitted_condition(
                bool(checks),
                all(s == constants.CHECK_STATE_READY for s in checks.values()),
                any(p.delayed_topology == constants.DELAYED_TOPOLOGY_PENDING for p in assignments),
            )
            conds.append(adm)
            assumed = _with_condition(assumed, adm, now)
        self.cache.assume_workload(assumed)
        self._status_touch(assumed)
        if self.afs is not None:
            self.afs.assumed(e.wl, e.cq_name, now)
        self.queues.admitted(e.wl.key, e.cq_name)
        self._last.pop(e.wl.key, None)
        self._assumed_from[e.wl.key] = e.wl
        e.status = "assumed"
        replaces = None
        if e.replaces is not None:
            old = e.replaces
            replaces = ReplacedSlice(
                old.key, old.uid, old.admission_cluster_queue, (conditions.slice_replaced(e.wl.uid, e.wl.job_uid),)
            )
        result.decisions.append(
            Admit(e.wl.key, e.wl.uid, e.cq_name, admission, tuple(conds), replaces, e.wl.generation)
        )

    def _requeue_and_report(self, e: _Entry, result: CycleResult, now: datetime) -> None:
        if e.status and e.requeue_reason == RequeueReason.GENERIC:
            e.requeue_reason = RequeueReason.FAILED_AFTER_NOMINATION
        last = self._last.get(e.wl.key)
        self.queues.requeue(
            e.wl.key, e.cq_name, e.requeue_reason, now, untried_flavors=last is not None and last.has_untried()
        )
        reason = e.reason or PendingReason.PENDING_EVALUATION
        shown = reason
        if not self.config.granular_pending_reasons:
            shown = (
                constants.WAITING_REASON_FALLBACK
                if reason == PendingReason.WAITING_FOR_PODS_READY
                else constants.PENDING_REASON_FALLBACK
            )
        conds: tuple[ConditionValue, ...] = conditions.pending_conditions(shown, e.message)
        if e.status == "preemption_gated":
            conds = (*conds, conditions.blocked_on_preemption_gates(e.message))
        result.decisions.append(
            Pending(
                e.wl.key,
                e.wl.uid,
                e.cq_name,
                reason,
                e.message,
                conds,
                e.wl.generation,
                e.wl.resource_requests_to_api(),
            )
        )


def _admitted_sibling(wl: WorkloadInfo, cq: ClusterQueueNode, *, more_favorable: bool) -> WorkloadInfo | None:
    """An admitted variant of the same parent on a more (or less) preferred flavor, preference being
    the flavor order of the first resource group (`findAdmittedMoreFavorableSibling`,
    `findAdmittedLessFavorableSibling`); workloads are looked at in key order."""
    if not wl.parent_uid or not cq.spec.resource_groups:
        return None
    order = cq.spec.resource_groups[0].flavor_names
    if wl.variant_flavor not in order:
        return None
    mine = order.index(wl.variant_flavor)
    for key in sorted(cq.workloads):
        other = cq.workloads[key]
        if (
            other.uid == wl.uid
            or other.parent_uid != wl.parent_uid
            or not other.is_admitted
            or other.variant_flavor not in order
        ):
            continue
        theirs = order.index(other.variant_flavor)
        if (theirs < mine) if more_favorable else (theirs > mine):
            return other
    return None


def _migration_allowed(e: _Entry, cq: ClusterQueueNode) -> bool:
    """The target flavor is not below the policy's lastAcceptableFlavorName (`isMigrationAllowed`)."""
    policy = cq.spec.concurrent_admission
    if policy is None or policy.last_acceptable_flavor is None:
        return True
    order = cq.spec.resource_groups[0].flavor_names
    last = order.index(policy.last_acceptable_flavor) if policy.last_acceptable_flavor in order else -1
    if order.index(e.wl.variant_flavor) > last:
        e.message = constants.MSG_BELOW_LAST_ACCEPTABLE_FLAVOR
        return False
    return True


def _tas_only(cq: ClusterQueueNode, topo: TopologySnapshot) -> bool:
    """`IsTASOnly`: every flavor of the ClusterQueue is topology-aware."""
    return all(topo.is_tas(fq.name) for rg in cq.spec.resource_groups for fq in rg.flavors)


def _victims(e: _Entry) -> list[WorkloadInfo]:
    """The workloads whose quota `e` counts on: its preemption targets and the slice it replaces."""
    return [t.workload for t in e.targets] + ([e.replaces] if e.replaces is not None else [])


def _usage_lookup(usage: Mapping[WorkloadKey, FRQuantities]) -> Callable[[WorkloadInfo], FRQuantities]:
    def lookup(wl: WorkloadInfo) -> FRQuantities:
        return usage[wl.key]

    return lookup


def _to_reserve(a: Assignment, cq: ClusterQueueNode) -> FRQuantities:
    """Capacity held back for a preemptor without candidates (`quotaResourcesToReserve`)."""
    out: FRQuantities = {}
    for fr, v in a.total_requests().items():
        q = cq.quota(fr)
        used = cq.usage.get(fr, 0)
        if a.borrowing > 0:
            out[fr] = v if q.borrowing_limit is None else min(v, q.nominal + q.borrowing_limit - used)
        else:
            out[fr] = max(0, min(v, q.nominal - used))
    return out


def _with_condition(wl: WorkloadInfo, c: ConditionValue, now: datetime) -> WorkloadInfo:
    conds = dict(wl.conditions)
    conds[c.type] = Condition(c.status, c.reason, c.message, now)
    return dataclasses.replace(wl, conditions=conds)
