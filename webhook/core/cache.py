"""Live quota state, updated by watch events: flavors, ClusterQueues, Cohorts, reserving Workloads.

Mirrors `pkg/cache/scheduler/{cache,clusterqueue}.go` (upstream commit ff69552e79): the cache
holds every Workload that holds quota (QuotaReserved=True, not Finished, active), the cohort tree
with its aggregates, and the readiness of each ClusterQueue (the Active condition). Workload events
move usage through the tree incrementally; ClusterQueue/Cohort events rebuild the tree from names.
Only event handlers (and assume/forget for the scheduler's own decisions) change it.

With ConcurrentAdmission a parent Workload is admitted with its admitted variant's admission; only
the variant holds quota, so a parent is never tracked (`AddOrUpdateWorkload`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api import constants
from webhook.api.constants import ClusterQueueActiveReason as _R
from webhook.core import dra, hierarchy, model, pod_resources, resource_node
from webhook.core.resource_node import ClusterQueueNode
from webhook.core.resources import FlavorResource
from webhook.core.topology import TopologyCache
from webhook.core.workload import WorkloadInfo, WorkloadKey

__all__ = ["Cache", "Readiness"]


@dataclass(frozen=True, slots=True)
class Readiness:
    """A ClusterQueue's cache status (active/pending/terminating) and its Active condition."""

    status: str
    reason: str
    message: str

    @property
    def active(self) -> bool:
        return self.status == "active"


class Cache:
    """The admission worker's live state. Mutable: only event handlers call its mutators."""

    def __init__(self, *, concurrent_admission: bool = False, tas: bool = False) -> None:
        self.concurrent_admission = concurrent_admission  # the feature gate
        self.tas = tas  # the TopologyAwareScheduling gate: a flavor's Topology must exist
        self.topologies: set[str] = set()
        # Topology levels, Nodes, non-TAS pods and TAS usage (`topology`), fed with the gate on.
        self.topology = TopologyCache()
        self.resource_flavors: dict[str, model.ResourceFlavorSpec] = {}
        self.cluster_queues: dict[str, ClusterQueueNode] = {}
        self.cohort_specs: dict[str, model.CohortSpec] = {}
        self.local_queues: dict[str, model.LocalQueueSpec] = {}
        self.namespaces: dict[str, Mapping[str, str]] = {}
        # namespace → name → LimitRange, and per namespace their `pod_resources.summarize`.
        self.limit_ranges: dict[str, dict[str, Mapping[str, Any]]] = {}
        self.limit_summaries: dict[str, pod_resources.Summary] = {}
        # RuntimeClass name → its overhead.podFixed ({} when it has none).
        self.runtime_overheads: dict[str, pod_resources.ResourceList] = {}
        # (namespace, name) → ResourceClaimTemplate (`dra`), fed only with KueueDRAIntegration on.
        self.claim_templates: dict[tuple[str, str], Mapping[str, Any]] = {}
        # DeviceClass name → object, and the extended resources they back (`dra.extended_backing`),
        # fed only with KueueDRAIntegrationExtendedResource on.
        self.device_classes: dict[str, Mapping[str, Any]] = {}
        self.extended_backing: Mapping[str, str] = {}
        self.priority_classes: dict[str, int] = {}
        self.admission_checks: dict[str, bool] = {}
        self.admission_check_controllers: dict[str, str] = {}
        # Every quota-holding workload, including those whose ClusterQueue is not known yet.
        self.reserving: dict[WorkloadKey, WorkloadInfo] = {}
        # The same, by LocalQueue key (`namespace/queueName`): LocalQueue status reads only its own.
        self._reserving_by_lq: dict[str, dict[WorkloadKey, WorkloadInfo]] = {}
        self.forest = hierarchy.build_forest({}, {})
        # readiness per ClusterQueue with the spec it was computed for: LocalQueue status and every
        # admission write ask for it, and it changes only with that spec, a flavor, an admission
        # check or a Topology (whose setters drop this).
        self._readiness: dict[str, tuple[model.ClusterQueueSpec, Readiness]] = {}

    # -- structure events ----------------------------------------------------------------------
    def _rebuild_tree(self) -> None:
        self.forest = hierarchy.build_forest(self.cluster_queues, self.cohort_specs)

    def upsert_resource_flavor(self, obj: Mapping[str, Any]) -> model.ResourceFlavorSpec:
        rf = model.parse_resource_flavor(obj)
        old = self.resource_flavors.get(rf.name)
        self.resource_flavors[rf.name] = rf
        self._readiness.clear()
        if (old.topology_name if old is not None else None) != rf.topology_name:
            self._recount_topology_usage()
        return rf

    def delete_resource_flavor(self, name: str) -> None:
        old = self.resource_flavors.pop(name, None)
        self._readiness.clear()
        if old is not None and old.topology_name is not None:
            self._recount_topology_usage()

    def _recount_topology_usage(self) -> None:
        """Which flavors are topology-aware changed: recount what admitted workloads hold per domain
        (their Workloads may have arrived before the flavor did)."""
        self.topology.usage.clear()
        for wl in self.reserving.values():
            if any(psa.topology_assignment is not None for psa in wl.assignments):
                self.topology.add_workload(wl, self.resource_flavors)

    def upsert_cluster_queue(self, obj: Mapping[str, Any]) -> ClusterQueueNode:
        """Add or replace a ClusterQueue; usage is recounted from its reserving workloads."""
        spec = model.parse_cluster_queue(obj, concurrent_admission=self.concurrent_admission)
        old = self.cluster_queues.get(spec.name)
        node = ClusterQueueNode(spec)
        if old is not None:
            node.allocatable_generation = old.allocatable_generation + (1 if old.spec.quotas != spec.quotas else 0)
        if spec.concurrent_admission is not None:  # parents seen before their ClusterQueue
            for key in [
                k for k, wl in self.reserving.items() if wl.admission_cluster_queue == spec.name and not wl.is_variant
            ]:
                self._unindex(self.reserving.pop(key))
        for wl in self.reserving.values():
            if wl.admission_cluster_queue == spec.name:
                node.workloads[wl.key] = wl
                for fr, v in wl.usage().items():
                    node.usage[fr] = node.usage.get(fr, 0) + v
        self.cluster_queues[spec.name] = node
        self._rebuild_tree()
        return node

    def delete_cluster_queue(self, name: str) -> None:
        if self.cluster_queues.pop(name, None) is not None:
            self._rebuild_tree()

    def upsert_cohort(self, obj: Mapping[str, Any]) -> None:
        spec = model.parse_cohort(obj)
        self.cohort_specs[spec.name] = spec
        self._rebuild_tree()

    def delete_cohort(self, name: str) -> None:
        if self.cohort_specs.pop(name, None) is not None:
            self._rebuild_tree()

    def upsert_local_queue(self, obj: Mapping[str, Any]) -> model.LocalQueueSpec:
        lq = model.parse_local_queue(obj)
        self.local_queues[lq.key] = lq
        return lq

    def delete_local_queue(self, key: str) -> None:
        self.local_queues.pop(key, None)

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        """Record a Namespace's labels (None deletes it)."""
        if labels is None:
            self.namespaces.pop(name, None)
        else:
            self.namespaces[name] = dict(labels)

    def set_limit_range(self, namespace: str, name: str, obj: Mapping[str, Any] | None) -> None:
        """Record a LimitRange (None deletes it) and re-summarize its namespace."""
        ranges = self.limit_ranges.setdefault(namespace, {})
        if obj is None:
            ranges.pop(name, None)
        else:
            ranges[name] = obj
        if not ranges:
            self.limit_ranges.pop(namespace, None)
            self.limit_summaries.pop(namespace, None)
            return
        self.limit_summaries[namespace] = pod_resources.summarize(ranges[n] for n in sorted(ranges))

    def set_runtime_class(self, name: str, obj: Mapping[str, Any] | None) -> None:
        """Record a RuntimeClass's pod overhead (None deletes it)."""
        if obj is None:
            self.runtime_overheads.pop(name, None)
        else:
            self.runtime_overheads[name] = pod_resources.runtime_class_overhead(obj)

    def set_claim_template(self, namespace: str, name: str, obj: Mapping[str, Any] | None) -> None:
        """Record a ResourceClaimTemplate (None deletes it)."""
        if obj is None:
            self.claim_templates.pop((namespace, name), None)
        else:
            self.claim_templates[(namespace, name)] = obj

    def set_device_class(self, name: str, obj: Mapping[str, Any] | None) -> None:
        """Record a DeviceClass (None deletes it) and recompute which extended resources are devices."""
        if obj is None:
            self.device_classes.pop(name, None)
        else:
            self.device_classes[name] = obj
        self.extended_backing = dra.extended_backing(self.device_classes.values())

    def claim_template(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.claim_templates.get((namespace, name))

    def upsert_priority_class(self, obj: Mapping[str, Any]) -> model.WorkloadPriorityClassSpec:
        wpc = model.parse_workload_priority_class(obj)
        self.priority_classes[wpc.name] = wpc.value
        return wpc

    def delete_priority_class(self, name: str) -> None:
        self.priority_classes.pop(name, None)

    def set_admission_check(self, name: str, active: bool | None, controller: str = "") -> None:
        """Record an AdmissionCheck's Active condition and controllerName (active None deletes it)."""
        self._readiness.clear()
        if active is None:
            self.admission_checks.pop(name, None)
            self.admission_check_controllers.pop(name, None)
        else:
            self.admission_checks[name] = active
            self.admission_check_controllers[name] = controller

    def set_topology(self, name: str, levels: tuple[str, ...] | None) -> None:
        """Record a Topology's levels (None: deleted)."""
        self._readiness.clear()
        if levels is not None:
            self.topologies.add(name)
        else:
            self.topologies.discard(name)
        self.topology.set_topology(name, levels)

    # -- workload events -----------------------------------------------------------------------
    def _unindex(self, wl: WorkloadInfo) -> None:
        lq_key = f"{wl.namespace}/{wl.queue_name}"
        in_lq = self._reserving_by_lq.get(lq_key)
        if in_lq is not None:
            in_lq.pop(wl.key, None)
            if not in_lq:
                del self._reserving_by_lq[lq_key]

    def reserving_in_local_queue(self, key: str) -> Iterable[WorkloadInfo]:
        """The quota-holding workloads whose queueName is the LocalQueue `key` (`namespace/name`)."""
        return self._reserving_by_lq.get(key, {}).values()

    def _attach(self, wl: WorkloadInfo) -> None:
        self.reserving[wl.key] = wl
        self._reserving_by_lq.setdefault(f"{wl.namespace}/{wl.queue_name}", {})[wl.key] = wl
        if any(psa.topology_assignment is not None for psa in wl.assignments):
            self.topology.add_workload(wl, self.resource_flavors)
        cq = self.cluster_queues.get(wl.admission_cluster_queue)
        if cq is None:
            return
        cq.workloads[wl.key] = wl
        for fr, v in wl.usage().items():
            resource_node.add_usage(cq, fr, v)

    def _detach(self, key: WorkloadKey) -> WorkloadInfo | None:
        wl = self.reserving.pop(key, None)
        if wl is None:
            return None
        self._unindex(wl)
        if any(psa.topology_assignment is not None for psa in wl.assignments):
            self.topology.remove_workload(key)
        cq = self.cluster_queues.get(wl.admission_cluster_queue)
        if cq is not None and cq.workloads.pop(key, None) is not None:
            for fr, v in wl.usage().items():
                resource_node.remove_usage(cq, fr, v)
            cq.allocatable_generation += 1
        return wl

    def upsert_workload(self, wl: WorkloadInfo) -> tuple[WorkloadInfo | None, bool]:
        """Track `wl` if it holds quota, drop it otherwise. Returns (previous, now_reserving)."""
        old = self._detach(wl.key)
        if wl.counts_toward_usage and not self.is_parent(wl):
            self._attach(wl)
            return old, True
        return old, False

    def delete_workload(self, key: WorkloadKey) -> WorkloadInfo | None:
        return self._detach(key)

    def assume_workload(self, wl: WorkloadInfo) -> None:
        """Count a reservation the scheduler decided before its API write lands."""
        self._detach(wl.key)
        self._attach(wl)

    def forget_workload(self, key: WorkloadKey) -> WorkloadInfo | None:
        """Drop an assumed reservation whose write failed."""
        return self._detach(key)

    def is_parent(self, wl: WorkloadInfo) -> bool:
        """A non-variant admitted to a ClusterQueue with a concurrentAdmissionPolicy
        (`concurrentAdmissionEnabledForWithoutLock` and not `IsVariant`)."""
        cq = self.cluster_queues.get(wl.admission_cluster_queue)
        return cq is not None and cq.spec.concurrent_admission is not None and not wl.is_variant

    def is_reserving(self, key: WorkloadKey) -> bool:
        return key in self.reserving

    # -- readiness -----------------------------------------------------------------------------
    def readiness(self, name: str) -> Readiness:
        """Cache status and Active condition of a ClusterQueue (`ClusterQueueReadiness`)."""
        cq = self.cluster_queues.get(name)
        if cq is None:
            return Readiness("pending", _R.NOT_FOUND, "ClusterQueue not found")
        known = self._readiness.get(name)
        if known is not None and known[0] is cq.spec:
            return known[1]
        readiness = self._compute_readiness(cq.spec)
        self._readiness[name] = (cq.spec, readiness)
        return readiness

    def _compute_readiness(self, spec: model.ClusterQueueSpec) -> Readiness:
        if spec.deleting:
            return Readiness("terminating", _R.TERMINATING, "Can't admit new workloads; clusterQueue is terminating")
        reasons: list[str] = []
        msgs: list[str] = []
        if spec.stop_policy != model.StopPolicy.NONE:
            reasons.append(_R.STOPPED)
            msgs.append("is stopped")
        missing = [f for f in dict.fromkeys(spec.flavor_names()) if f not in self.resource_flavors]
        if missing:
            reasons.append(_R.FLAVOR_NOT_FOUND)
            msgs.append("references missing ResourceFlavor(s): " + ",".join(missing))
        # Upstream keeps the checks in a map and sorts the names it reports.
        missing_ac = sorted({a for a in spec.admission_checks if a not in self.admission_checks})
        if missing_ac:
            reasons.append(_R.ADMISSION_CHECK_NOT_FOUND)
            msgs.append("references missing AdmissionCheck(s): " + ",".join(missing_ac))
        inactive_ac = sorted({a for a in spec.admission_checks if self.admission_checks.get(a) is False})
        if inactive_ac:
            reasons.append(_R.ADMISSION_CHECK_INACTIVE)
            msgs.append("references inactive AdmissionCheck(s): " + ",".join(inactive_ac))
        self._multikueue_constraints(spec, reasons, msgs)
        self._topology_constraints(spec, reasons, msgs)
        if reasons:
            return Readiness("pending", reasons[0], "Can't admit new workloads: " + ", ".join(msgs) + ".")
        return Readiness("active", _R.READY, "Can admit new workloads")

    def _multikueue_constraints(self, spec: model.ClusterQueueSpec, reasons: list[str], msgs: list[str]) -> None:
        """At most one MultiKueue check, applied to every flavor, and none next to a ProvisioningRequest
        check (`updateWithAdmissionChecks`)."""
        by = self.admission_check_controllers
        mk = sorted(a for a in set(spec.admission_checks) if by.get(a) == constants.MULTIKUEUE_CONTROLLER)
        prov = sorted(a for a in set(spec.admission_checks) if by.get(a) == constants.PROVISIONING_REQUEST_CONTROLLER)
        every = frozenset(spec.flavor_names())
        per_flavor = [a for a in mk if spec.admission_check_flavors.get(a, every) != every]
        if len(mk) > 1:
            reasons.append(_R.MULTIPLE_MULTIKUEUE_ADMISSION_CHECKS)
            msgs.append(
                "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: " + ",".join(mk)
            )
        if per_flavor:
            reasons.append(_R.MULTIKUEUE_ADMISSION_CHECK_APPLIED_PER_FLAVOR)
            msgs.append("Cannot specify MultiKueue AdmissionCheck per flavor, found: " + ",".join(per_flavor))
        if mk and prov:
            reasons.append(_R.MULTIKUEUE_WITH_PROVISIONING_REQUEST)
            msgs.append(
                f"Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, found: {','.join(mk)}, {','.join(prov)}"
            )

    def _topology_constraints(self, spec: model.ClusterQueueSpec, reasons: list[str], msgs: list[str]) -> None:
        """Each topology flavor's Topology must exist (`inactiveReason`, `isTASViolated`). Upstream skips
        the check with a MultiKueue admission check (the topology is the worker clusters'), yet still
        names the missing Topologies when the queue is inactive for another reason."""
        if not self.tas:
            return
        missing = [
            (name, rf.topology_name)
            for name in dict.fromkeys(spec.flavor_names())
            if (rf := self.resource_flavors.get(name)) is not None
            and rf.topology_name is not None
            and rf.topology_name not in self.topologies
        ]
        multikueue = any(
            self.admission_check_controllers.get(a) == constants.MULTIKUEUE_CONTROLLER for a in spec.admission_checks
        )
        if not missing or (multikueue and not reasons):
            return
        # Upstream ranges over a map; sorted by flavor here so the message is stable.
        for flavor, topology in sorted(missing):
            reasons.append(_R.TOPOLOGY_NOT_FOUND)
            msgs.append(f"there is no Topology {json.dumps(topology)} for TAS flavor {json.dumps(flavor)}")

    # -- read helpers --------------------------------------------------------------------------
    def cq_usage(self, name: str, *, admitted_only: bool = False) -> dict[FlavorResource, int]:
        """Sum of usage of the ClusterQueue's reserving (or only admitted) workloads; the reserving sum is
        the node's own running total."""
        out: dict[FlavorResource, int] = {}
        cq = self.cluster_queues.get(name)
        if cq is None:
            return out
        if not admitted_only:
            return {fr: v for fr, v in cq.usage.items() if v}
        for wl in cq.workloads.values():
            if not wl.is_admitted:
                continue
            for fr, v in wl.usage().items():
                out[fr] = out.get(fr, 0) + v
        return out

    def workloads_in(self, name: str) -> Iterator[WorkloadInfo]:
        cq = self.cluster_queues.get(name)
        if cq is not None:
            yield from cq.workloads.values()

    def state_fingerprint(self) -> dict[str, Any]:
        """Usage of every node, normalized: used to check rebuilt == incremental state."""
        out: dict[str, Any] = {}
        for name, cq in sorted(self.cluster_queues.items()):
            out["cq/" + name] = (sorted((k, v) for k, v in cq.usage.items() if v), sorted(cq.workloads))
        for name, co in sorted(self.forest.cohorts.items()):
            out["cohort/" + name] = (
                sorted((k, v) for k, v in co.usage.items() if v),
                sorted((k, v) for k, v in co.subtree_quota.items() if v),
            )
        return out
