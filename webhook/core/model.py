"""Parsed, immutable views of ResourceFlavor, ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass.

Mirrors the fields of `apis/kueue/v1beta2/{resourceflavor,clusterqueue,cohort,localqueue,
workloadpriorityclass}_types.go` that the admission core reads, with API defaults applied, and
`pkg/resources/resourcegroups` (upstream commit ff69552e79). Each object is parsed once from its
v1beta2 JSON; the cache replaces whole objects on update and never mutates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any

from webhook.api import quantity, selector
from webhook.core.resources import FlavorResource, ResourceQuota, parse_amount

__all__ = [
    "AdmissionMode",
    "BorrowWithinCohort",
    "ClusterQueueSpec",
    "CohortSpec",
    "ConcurrentAdmissionPolicy",
    "FlavorFungibility",
    "FlavorQuotas",
    "LocalQueueSpec",
    "MigrationMode",
    "PreemptionPolicy",
    "QueueingStrategy",
    "ResourceFlavorSpec",
    "ResourceGroup",
    "StopPolicy",
    "WorkloadPriorityClassSpec",
    "parse_cluster_queue",
    "parse_cohort",
    "parse_local_queue",
    "parse_resource_flavor",
    "parse_workload_priority_class",
]


class QueueingStrategy(StrEnum):
    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class StopPolicy(StrEnum):
    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


class AdmissionMode(StrEnum):
    """`spec.admissionScope.admissionMode`; NONE when the ClusterQueue has no admissionScope."""

    NONE = ""
    USAGE_BASED = "UsageBasedAdmissionFairSharing"
    NO_ADMISSION_FAIR_SHARING = "NoAdmissionFairSharing"


class MigrationMode(StrEnum):
    TRY_PREFERRED_FLAVORS = "TryPreferredFlavors"
    RETAIN_FIRST_ADMISSION = "RetainFirstAdmission"


@dataclass(frozen=True, slots=True)
class ConcurrentAdmissionPolicy:
    """`spec.concurrentAdmissionPolicy`; an empty mode means TryPreferredFlavors (`migrationMode`)."""

    mode: MigrationMode = MigrationMode.TRY_PREFERRED_FLAVORS
    last_acceptable_flavor: str | None = None


def _parse_concurrent_admission(raw: object) -> ConcurrentAdmissionPolicy | None:
    if not isinstance(raw, dict):
        return None
    migration = raw.get("migration") or {}
    last = (migration.get("constraints") or {}).get("lastAcceptableFlavorName")
    return ConcurrentAdmissionPolicy(
        MigrationMode(migration.get("mode") or MigrationMode.TRY_PREFERRED_FLAVORS), None if last is None else str(last)
    )


class PreemptionPolicy(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    policy: PreemptionPolicy = PreemptionPolicy.NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """Defaults as in the API: whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    quotas: tuple[tuple[str, ResourceQuota], ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]

    @property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.flavors)


def _parse_groups(raw: object) -> tuple[ResourceGroup, ...]:
    groups = []
    for rg in raw if isinstance(raw, list) else ():
        flavors = []
        for fq in rg.get("flavors") or ():
            quotas = []
            for r in fq.get("resources") or ():
                name = str(r["name"])
                bl = r.get("borrowingLimit")
                ll = r.get("lendingLimit")
                quotas.append(
                    (
                        name,
                        ResourceQuota(
                            nominal=parse_amount(name, r.get("nominalQuota", 0)),
                            borrowing_limit=None if bl is None else parse_amount(name, bl),
                            lending_limit=None if ll is None else parse_amount(name, ll),
                        ),
                    )
                )
            flavors.append(FlavorQuotas(str(fq["name"]), tuple(quotas)))
        groups.append(ResourceGroup(tuple(str(r) for r in rg.get("coveredResources") or ()), tuple(flavors)))
    return tuple(groups)


def _quotas(groups: tuple[ResourceGroup, ...]) -> dict[FlavorResource, ResourceQuota]:
    out: dict[FlavorResource, ResourceQuota] = {}
    for rg in groups:
        for fq in rg.flavors:
            for res, q in fq.quotas:
                out[FlavorResource(fq.name, res)] = q
    return out


def _weight(raw: object) -> Fraction:
    if isinstance(raw, dict) and raw.get("weight") is not None:
        return quantity.parse(raw["weight"])
    return Fraction(1)


@dataclass(frozen=True, slots=True)
class ResourceFlavorSpec:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[selector.Taint, ...] = ()
    tolerations: tuple[selector.Toleration, ...] = ()
    topology_name: str | None = None  # spec.topologyName: a topology-aware (TAS) flavor


def parse_resource_flavor(obj: Mapping[str, Any]) -> ResourceFlavorSpec:
    """ResourceFlavor from its JSON object."""
    spec = obj.get("spec") or {}
    return ResourceFlavorSpec(
        name=str(obj["metadata"]["name"]),
        node_labels=dict(spec.get("nodeLabels") or {}),
        node_taints=tuple(selector.parse_taint(t) for t in spec.get("nodeTaints") or ()),
        tolerations=tuple(selector.parse_toleration(t) for t in spec.get("tolerations") or ()),
        topology_name=spec.get("topologyName") or None,
    )


@dataclass(frozen=True, slots=True)
class ClusterQueueSpec:
    """A ClusterQueue with defaults applied; `quotas` is precomputed and shared by snapshots."""

    name: str
    cohort: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    namespace_selector: selector.LabelSelector | None = None
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    preemption: Preemption = Preemption()
    stop_policy: StopPolicy = StopPolicy.NONE
    fair_weight: Fraction = Fraction(1)
    admission_checks: tuple[str, ...] = ()
    # The flavors each admission check applies to (`admissioncheck.NewAdmissionChecks`): its
    # onFlavors, or every flavor of the ClusterQueue when onFlavors is empty.
    admission_check_flavors: Mapping[str, frozenset[str]] = field(default_factory=dict)
    generation: int = 0
    deleting: bool = False
    quotas: Mapping[FlavorResource, ResourceQuota] = field(default_factory=dict)
    resource_to_group: Mapping[str, int] = field(default_factory=dict)
    # Set only with the ConcurrentAdmission feature gate on: its Workloads are parents of variants.
    concurrent_admission: ConcurrentAdmissionPolicy | None = None
    # Admission fair sharing orders this ClusterQueue's LocalQueues by their usage (with the gate on).
    admission_mode: AdmissionMode = AdmissionMode.NONE

    def flavor_names(self) -> tuple[str, ...]:
        """Every flavor named in the resource groups, in spec order."""
        return tuple(f for rg in self.resource_groups for f in rg.flavor_names)


def parse_cluster_queue(obj: Mapping[str, Any], *, concurrent_admission: bool = False) -> ClusterQueueSpec:
    """ClusterQueue from its v1beta2 JSON object; `concurrent_admission` is the feature gate, without
    which the policy is ignored (upstream copies it into its caches only with the gate on)."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    groups = _parse_groups(spec.get("resourceGroups"))
    pre = spec.get("preemption") or {}
    bwc = pre.get("borrowWithinCohort") or {}
    ff = spec.get("flavorFungibility") or {}
    rules = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
    all_flavors = frozenset(f for rg in groups for f in rg.flavor_names)
    return ClusterQueueSpec(
        name=str(meta["name"]),
        cohort=str(spec.get("cohortName") or ""),
        resource_groups=groups,
        queueing_strategy=QueueingStrategy(spec.get("queueingStrategy") or "BestEffortFIFO"),
        namespace_selector=selector.parse_label_selector(spec.get("namespaceSelector")),
        flavor_fungibility=FlavorFungibility(
            when_can_borrow=str(ff.get("whenCanBorrow") or "MayStopSearch"),
            when_can_preempt=str(ff.get("whenCanPreempt") or "TryNextFlavor"),
            preference=ff.get("preference"),
        ),
        preemption=Preemption(
            reclaim_within_cohort=PreemptionPolicy(pre.get("reclaimWithinCohort") or "Never"),
            within_cluster_queue=PreemptionPolicy(pre.get("withinClusterQueue") or "Never"),
            borrow_within_cohort=BorrowWithinCohort(
                PreemptionPolicy(bwc.get("policy") or "Never"), bwc.get("maxPriorityThreshold")
            ),
        ),
        stop_policy=StopPolicy(spec.get("stopPolicy") or "None"),
        fair_weight=_weight(spec.get("fairSharing")),
        admission_checks=tuple(str(a["name"]) for a in rules),
        admission_check_flavors={
            str(a["name"]): frozenset(map(str, a.get("onFlavors") or ())) or all_flavors for a in rules
        },
        generation=int(meta.get("generation") or 0),
        deleting=bool(meta.get("deletionTimestamp")),
        quotas=_quotas(groups),
        resource_to_group={r: i for i, rg in enumerate(groups) for r in rg.covered_resources},
        concurrent_admission=_parse_concurrent_admission(spec.get("concurrentAdmissionPolicy"))
        if concurrent_admission
        else None,
        admission_mode=AdmissionMode((spec.get("admissionScope") or {}).get("admissionMode") or ""),
    )


@dataclass(frozen=True, slots=True)
class CohortSpec:
    name: str
    parent: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: Fraction = Fraction(1)
    quotas: Mapping[FlavorResource, ResourceQuota] = field(default_factory=dict)


def parse_cohort(obj: Mapping[str, Any]) -> CohortSpec:
    """Cohort from its v1beta2 JSON object."""
    spec = obj.get("spec") or {}
    groups = _parse_groups(spec.get("resourceGroups"))
    return CohortSpec(
        name=str(obj["metadata"]["name"]),
        parent=str(spec.get("parentName") or ""),
        resource_groups=groups,
        fair_weight=_weight(spec.get("fairSharing")),
        quotas=_quotas(groups),
    )


@dataclass(frozen=True, slots=True)
class LocalQueueSpec:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: StopPolicy = StopPolicy.NONE
    # spec.fairSharing.weight: admission fair sharing divides the LocalQueue's usage by it.
    fair_weight: Fraction = Fraction(1)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueueSpec:
    """LocalQueue from its v1beta2 JSON object."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    return LocalQueueSpec(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta["name"]),
        cluster_queue=str(spec.get("clusterQueue") or ""),
        stop_policy=StopPolicy(spec.get("stopPolicy") or "None"),
        fair_weight=_weight(spec.get("fairSharing")),
    )


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClassSpec:
    name: str
    value: int


def parse_workload_priority_class(obj: Mapping[str, Any]) -> WorkloadPriorityClassSpec:
    """WorkloadPriorityClass (value is top-level, not under spec)."""
    return WorkloadPriorityClassSpec(str(obj["metadata"]["name"]), int(obj.get("value") or 0))
