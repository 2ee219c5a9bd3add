"""WorkloadInfo: a Workload parsed once, with per-podset requests and admitted usage precomputed.

Mirrors `pkg/workload/workload.go` (`Info`, `NewInfo`, `totalRequestsFromPodSets`,
`totalRequestsFromAdmission`, `IsAdmissible`, `HasQuotaReservation`), `pkg/workload/resources.go`
and `pkg/workload/ordering.go` (`GetQueueOrderTimestamp`) at upstream commit ff69552e79.
Everything a scheduling cycle reads is computed here once, so the hot path never touches JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, NewType

import orjson

from webhook.api import constants, quantity, selector
from webhook.api.pod_role import spec_shape
from webhook.core import concurrent_admission
from webhook.core.quota_resources import QuotaResources
from webhook.core.resources import UNLIMITED, FlavorResource, FRQuantities
from webhook.core.tas import TopologyAssignment, TopologyRequest, from_v1beta2, to_v1beta2

__all__ = [
    "EPOCH",
    "Condition",
    "PodSetAssignment",
    "PodSetInfo",
    "WorkloadInfo",
    "WorkloadKey",
    "describe_flavors",
    "parse_time",
    "parse_workload",
    "pod_requests",
]

WorkloadKey = NewType("WorkloadKey", str)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_time(text: object) -> datetime | None:
    """RFC 3339 timestamp as the API serializes it, or None."""
    if not isinstance(text, str) or not text:
        return None
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


class Condition(NamedTuple):
    status: str
    reason: str
    message: str
    last_transition_time: datetime | None


@dataclass(frozen=True, slots=True)
class PodSetInfo:
    """One podSet: per-pod requests and the scheduling constraints flavor matching needs."""

    name: str
    count: int
    min_count: int | None
    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[tuple[selector.Requirement, ...], ...] = ()
    tolerations: tuple[selector.Toleration, ...] = ()
    # `IsExplicitlyRequestingTAS` (pkg/workload/workload.go): its topologyRequest asks for a placement.
    requests_tas: bool = False
    # The topologyRequest (None without one) and its podSetGroupName.
    topology_request: TopologyRequest | None = None
    topology_group: str | None = None
    # One pod's requests as its spec states them, what TAS places on nodes (`NewRequestsFromPodSpec`);
    # None when they equal `requests` (no resource transformation or device cost changed them).
    pod_requests: Mapping[str, int] | None = None

    @property
    def placement_requests(self) -> Mapping[str, int]:
        return self.requests if self.pod_requests is None else self.pod_requests


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    """One entry of status.admission.podSetAssignments, amounts already parsed."""

    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, int]
    count: int
    # Where its pods go, on a topology-aware flavor (None: not placed by topology).
    topology_assignment: TopologyAssignment | None = None
    # `delayedTopologyRequest`: "Pending" while the placement is left to later (a MultiKueue
    # worker places it), "Ready" once done; None when never delayed.
    delayed_topology: str | None = None

    def to_api(self) -> dict[str, Any]:
        """The exact v1beta2 JSON of this podSetAssignment."""
        out: dict[str, Any] = {
            "name": self.name,
            "flavors": dict(sorted(self.flavors.items())),
            "resourceUsage": {r: quantity.format_amount(r, v) for r, v in sorted(self.resource_usage.items())},
            "count": self.count,
        }
        if self.topology_assignment is not None:
            out["topologyAssignment"] = to_v1beta2(self.topology_assignment)
        if self.delayed_topology is not None:
            out["delayedTopologyRequest"] = self.delayed_topology
        return out


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective per-pod requests: max(init) vs sum(containers)+sidecars, plus overhead.

    Limits stand in for missing requests, as `AdjustResources` does before queueing.
    """

    def container(c: Mapping[str, Any]) -> dict[str, int]:
        res = c.get("resources") or {}
        out = {r: quantity.amount(r, v) for r, v in (res.get("limits") or {}).items()}
        out.update({r: quantity.amount(r, v) for r, v in (res.get("requests") or {}).items()})
        return out

    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        for r, v in container(c).items():
            total[r] = total.get(r, 0) + v
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        req = container(c)
        if c.get("restartPolicy") == "Always":
            for r, v in req.items():
                sidecars[r] = sidecars.get(r, 0) + v
            continue
        for r, v in req.items():
            init_max[r] = max(init_max.get(r, 0), v + sidecars.get(r, 0))
    for r, v in sidecars.items():
        total[r] = total.get(r, 0) + v
    for r, v in init_max.items():
        total[r] = max(total.get(r, 0), v)
    for r, v in (spec.get("overhead") or {}).items():
        total[r] = total.get(r, 0) + quantity.amount(r, v)
    # Upstream converts each request to an int64 that saturates instead of overflowing.
    return {r: min(max(0, v), UNLIMITED) for r, v in total.items()}


def _requests_above_limits(path: str, resources: Mapping[str, Any]) -> str | None:
    """`field.Invalid` text for a container whose requests exceed its limits, else None."""
    limits = resources.get("limits") or {}
    names = sorted(
        r
        for r, v in (resources.get("requests") or {}).items()
        if r in limits and quantity.amount(r, v) > quantity.amount(r, limits[r])
    )
    if not names:
        return None
    return f"{path}: Invalid value: [{','.join(json.dumps(n) for n in names)}]: requests must not exceed its limits"


def _resource_errors(pod_sets: Sequence[Mapping[str, Any]]) -> str:
    """Upstream `ValidateResources` over every podSet, joined like `ErrorList.ToAggregate`."""
    errs = []
    for i, ps in enumerate(pod_sets):
        spec = (ps.get("template") or {}).get("spec") or {}
        base = f"spec.podSets[{i}].template.spec"
        for kind in ("initContainers", "containers"):
            for j, c in enumerate(spec.get(kind) or ()):
                e = _requests_above_limits(f"{base}.{kind}[{j}]", c.get("resources") or {})
                if e:
                    errs.append(e)
        e = _requests_above_limits(f"{base}.resources", spec.get("resources") or {})
        if e:
            errs.append(e)
    if not errs:
        return ""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


_TAS_REQUEST_FIELDS = (
    "unconstrained",
    "required",
    "preferred",
    "podSetSliceRequiredTopology",
    "podSetSliceSize",
)


def _requests_tas(request: object) -> bool:
    """A topologyRequest that asks for a placement (upstream `IsExplicitlyRequestingTAS`)."""
    if not isinstance(request, Mapping):
        return False
    return any(request.get(k) is not None for k in _TAS_REQUEST_FIELDS) or bool(
        request.get("podsetSliceRequiredTopologyConstraints")
    )


def _required_terms(spec: Mapping[str, Any]) -> tuple[tuple[selector.Requirement, ...], ...]:
    na = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return tuple(selector.parse_requirements(t.get("matchExpressions")) for t in na.get("nodeSelectorTerms") or ())


@dataclass(frozen=True, slots=True)
class WorkloadInfo:
    """Everything the core knows about a Workload; replaced whole on every update."""

    key: WorkloadKey
    namespace: str
    name: str
    uid: str
    queue_name: str
    priority: int
    creation: datetime
    pod_sets: tuple[PodSetInfo, ...]
    job_uid: str = ""
    priority_class: str = ""
    generation: int = 0
    active: bool = True
    conditions: Mapping[str, Condition] = field(default_factory=dict)
    admission_cluster_queue: str = ""
    assignments: tuple[PodSetAssignment, ...] = ()
    reclaimable: Mapping[str, int] = field(default_factory=dict)
    requeue_at: datetime | None = None
    # status.requeueState.count (0 when unset); None when the Workload has no requeueState at all.
    requeue_count: int | None = None
    admission_gated: bool = False
    failed_checks: bool = False
    # status.admissionChecks: name -> state (Pending, Ready, Retry, Rejected).
    check_states: Mapping[str, str] = field(default_factory=dict)
    # `ValidateResources` errors (requests above limits), aggregated as upstream prints them; "" if valid.
    resource_errors: str = ""
    # `ValidateLimitRange` errors against the namespace's LimitRanges (`pod_resources`); "" if they fit.
    limit_range_errors: str = ""
    # Why its DRA devices cannot be counted (`dra.resolve`); "" when they can. Such a Workload is
    # kept out of the queues, as upstream never hands it to its queue manager.
    dra_error: str = ""
    # waitForPodsReady.requeuingStrategy.timestamp: Eviction (True) or Creation (False).
    requeue_by_eviction: bool = True
    # ConcurrentAdmission: the owning parent Workload's name and UID ("" unless a variant), the
    # flavors the annotation allows (None: all), and whether a preemption gate is still closed.
    parent_name: str = ""
    parent_uid: str = ""
    allowed_flavors: tuple[str, ...] | None = None
    closed_preemption_gate: bool = False
    # `namespace/name` of the workload slice this one replaces (annotation
    # `kueue.x-k8s.io/workload-slice-replacement-for`); "" when it replaces none.
    replacement_for: str = ""
    # status.unhealthyNodes: nodes of its topology assignment that failed (the TAS node failure
    # controller's), the first of which admission replaces (`HasTopologyAssignmentWithUnhealthyNode`).
    unhealthy_nodes: tuple[str, ...] = ()
    # Scheduling equivalence class (`SchedulingHash`): Workloads of one ClusterQueue with the same
    # hash get the same flavor assignment from the same state; "" when not computed.
    scheduling_hash: str = ""
    # `usage()` computed once: a scheduling cycle reads it for every workload it simulates removing.
    _usage_memo: FRQuantities | None = field(default=None, init=False, repr=False, compare=False)

    # -- condition helpers -------------------------------------------------------------------
    def condition_true(self, ctype: str) -> bool:
        c = self.conditions.get(ctype)
        return c is not None and c.status == "True"

    @property
    def has_quota_reservation(self) -> bool:
        return self.condition_true(constants.WorkloadCondition.QUOTA_RESERVED)

    @property
    def is_admitted(self) -> bool:
        return self.condition_true(constants.WorkloadCondition.ADMITTED)

    @property
    def is_finished(self) -> bool:
        return self.condition_true(constants.WorkloadCondition.FINISHED)

    @property
    def topology_pending(self) -> bool:
        """`HasTopologyAssignmentsPending`: a pod set waits for its delayed placement."""
        return any(psa.delayed_topology == constants.DELAYED_TOPOLOGY_PENDING for psa in self.assignments)

    @property
    def is_evicted(self) -> bool:
        return self.condition_true(constants.WorkloadCondition.EVICTED)

    @property
    def pods_ready(self) -> bool:
        return self.condition_true(constants.WorkloadCondition.PODS_READY)

    @property
    def is_variant(self) -> bool:
        return self.parent_name != ""

    @property
    def variant_flavor(self) -> str:
        """The one flavor a variant pursues (`GetVariantFlavor`)."""
        return self.allowed_flavors[0] if self.allowed_flavors else ""

    @property
    def is_on_hold(self) -> bool:
        c = self.conditions.get(constants.WorkloadCondition.QUOTA_RESERVED)
        return c is not None and c.status == "False" and c.reason == constants.ON_HOLD_REASON

    @property
    def counts_toward_usage(self) -> bool:
        """A Workload holds quota iff QuotaReserved=True, not Finished, and active (6.4)."""
        return (
            self.has_quota_reservation and not self.is_finished and self.active and bool(self.admission_cluster_queue)
        )

    @property
    def needs_delayed_placement(self) -> bool:
        """`needsSecondPassForDelayedAssignment` (within `NeedsSecondPass`): it holds quota, every
        check is Ready (a ProvisioningRequest's nodes are there) and a pod set still waits for its
        topology, not yet admitted."""
        if not self.counts_toward_usage or self.is_evicted or self.is_on_hold or self.is_finished:
            return False
        states = self.check_states.values()
        return (
            bool(states)
            and all(s == constants.CHECK_STATE_READY for s in states)
            and self.topology_pending
            and not self.is_admitted
        )

    @property
    def needs_node_replacement(self) -> bool:
        """`needsSecondPassAfterNodeFailure` (within `NeedsSecondPass`): it holds quota and one of
        its topology domains is an unhealthy node."""
        if not self.unhealthy_nodes or not self.counts_toward_usage or self.is_evicted or self.is_on_hold:
            return False
        failed = set(self.unhealthy_nodes)
        return any(
            d.values[-1] in failed
            for psa in self.assignments
            if psa.topology_assignment is not None
            for d in psa.topology_assignment.domains
        )

    def is_admissible_for_queue(self) -> bool:
        """`IsAdmissible`: may sit in a pending queue."""
        return (
            not self.admission_gated
            and not self.dra_error
            and not self.is_finished
            and self.active
            and not self.has_quota_reservation
            and not self.is_on_hold
        )

    def backoff_expired(self, now: datetime) -> bool:
        """Requeued is not False and requeueAt is unset or has passed."""
        c = self.conditions.get(constants.WorkloadCondition.REQUEUED)
        if c is not None and c.status == "False":
            return False
        return self.requeue_at is None or now >= self.requeue_at

    @property
    def queue_order_timestamp(self) -> datetime:
        """Eviction time for AdmissionCheck evictions, and for PodsReadyTimeout evictions unless the
        requeuing strategy says `Creation`; else creation time (`Ordering.GetQueueOrderTimestamp`)."""
        ev = self.conditions.get(constants.WorkloadCondition.EVICTED)
        if ev is None or ev.status != "True" or not ev.last_transition_time:
            return self.creation
        if ev.reason == constants.EvictionReason.ADMISSION_CHECK:
            return ev.last_transition_time
        if ev.reason == constants.EvictionReason.PODS_READY_TIMEOUT and self.requeue_by_eviction:
            return ev.last_transition_time
        return self.creation

    @property
    def quota_reserved_time(self) -> datetime | None:
        c = self.conditions.get(constants.WorkloadCondition.QUOTA_RESERVED)
        if c is None or c.status != "True":
            return None
        return c.last_transition_time

    @property
    def can_be_partially_admitted(self) -> bool:
        return any(ps.min_count is not None and ps.min_count < ps.count for ps in self.pod_sets)

    # -- requests and usage ------------------------------------------------------------------
    def pod_set_requests(self, counts: Sequence[int] | None = None) -> list[dict[str, int]]:
        """Total requests per podSet for `counts` (default: count minus reclaimable pods)."""
        out = []
        for i, ps in enumerate(self.pod_sets):
            n = counts[i] if counts is not None else ps.count - self.reclaimable.get(ps.name, 0)
            out.append({r: min(v * n, UNLIMITED) for r, v in ps.requests.items()})
        return out

    def resource_requests_to_api(self) -> tuple[dict[str, Any], ...]:
        """`status.resourceRequests` of a pending Workload: per podSet, its total requests as quota
        charges them (`PropagateResourceRequests` from `TotalRequests`, pkg/workload/workload.go). A total
        beyond int64 is written saturated, as a quantity the API accepts (not the `<unlimited>` of messages:
        the status write would be refused, and the pending condition with it)."""
        out = []
        for ps, requests in zip(self.pod_sets, self.pod_set_requests(), strict=True):
            entry: dict[str, Any] = {"name": ps.name}
            if requests:
                entry["resources"] = {r: quantity.format_amount(r, v) for r, v in sorted(requests.items())}
            out.append(entry)
        return tuple(out)

    def admitted_requests(self) -> list[dict[str, int]]:
        """Per podSetAssignment, the quota it holds per resource, from status.admission scaled
        down by reclaimablePods.

        As upstream's `totalRequestsFromAdmission`: the pods still needed are the podSet's count
        minus its reclaimable pods; only when that is below the admitted count is the usage scaled,
        per pod first (integer division) and then by the pods still needed. A partially admitted
        podSet keeps its usage until more pods are reclaimable than were left out.
        """
        out = []
        sizes = {ps.name: ps.count for ps in self.pod_sets}
        for psa in self.assignments:
            admitted = psa.count or sizes.get(psa.name, 0)
            size = sizes.get(psa.name, admitted)
            needed = size - min(self.reclaimable.get(psa.name, 0), size)
            held = {}
            for res in psa.flavors:
                v = psa.resource_usage.get(res, 0)
                held[res] = v // admitted * needed if needed < admitted else v
            out.append(held)
        return out

    def usage(self) -> Mapping[FlavorResource, int]:
        """Quota held per flavor and resource (`admitted_requests` summed); read-only, computed once."""
        if self._usage_memo is not None:
            return self._usage_memo
        out: FRQuantities = {}
        for psa, held in zip(self.assignments, self.admitted_requests(), strict=True):
            for res, v in held.items():
                if v:
                    fr = FlavorResource(psa.flavors[res], res)
                    out[fr] = out.get(fr, 0) + v
        object.__setattr__(self, "_usage_memo", out)  # frozen: the memo is not part of the value
        return out

    def uses_any(self, frs: Sequence[FlavorResource] | set[FlavorResource]) -> bool:
        """Whether the admitted podSets use any of `frs` (upstream `WorkloadUsesResources`)."""
        for psa in self.assignments:
            for res, flavor in psa.flavors.items():
                if FlavorResource(flavor, res) in frs:
                    return True
        return False

    def with_reservation(
        self, cluster_queue: str, assignments: tuple[PodSetAssignment, ...], now: datetime
    ) -> WorkloadInfo:
        """The assumed copy after a quota reservation (what the cache counts until the write lands)."""
        conds = dict(self.conditions)
        conds[constants.WorkloadCondition.QUOTA_RESERVED] = Condition(
            "True", constants.QUOTA_RESERVED_REASON, f"Quota reserved in ClusterQueue {cluster_queue}", now
        )
        return dataclasses.replace(
            self, conditions=conds, admission_cluster_queue=cluster_queue, assignments=assignments
        )


def _parse_assignments(raw: object) -> tuple[PodSetAssignment, ...]:
    out = []
    for a in raw if isinstance(raw, list) else ():
        usage = {str(r): quantity.amount(str(r), v) for r, v in (a.get("resourceUsage") or {}).items()}
        ta = a.get("topologyAssignment")
        out.append(
            PodSetAssignment(
                str(a.get("name", "main")),
                dict(a.get("flavors") or {}),
                usage,
                int(a.get("count") or 0),
                from_v1beta2(ta) if isinstance(ta, Mapping) else None,
                str(a["delayedTopologyRequest"]) if a.get("delayedTopologyRequest") else None,
            )
        )
    return tuple(out)


def parse_workload(
    obj: Mapping[str, Any],
    *,
    priority_classes: Mapping[str, int] | None = None,
    requeue_by_eviction: bool = True,
    limit_range_errors: str = "",
    dra_requests: Mapping[str, Mapping[str, int]] | None = None,
    dra_replaced: Mapping[str, frozenset[str]] | None = None,
    dra_error: str = "",
    resources: QuotaResources | None = None,
) -> WorkloadInfo:
    """WorkloadInfo from a v1beta2 Workload JSON object.

    Requests are read as the podSets say; the admission core first adjusts them for LimitRanges
    and RuntimeClasses (`pod_resources.adjust_workload`) and passes what those refuse as
    `limit_range_errors`. `resources` (the Configuration's excluded prefixes and transformations)
    then turns each pod's requests into what quota charges, as upstream's `NewInfo` with
    `WithExcludedResourcePrefixes` and `WithResourceTransformations`. `dra_requests` (per podSet
    name, per pod) are the logical resources its ResourceClaimTemplates and DeviceClass-backed
    extended resources cost (`dra.resolve`), added after that, once the extended resources in
    `dra_replaced` are taken out (upstream's order in `totalRequestsFromPodSets`); `dra_error` says
    why they could not be counted.

    The priority is `spec.priority`, 0 when unset (upstream `priority.Priority`). A
    WorkloadPriorityClass's value reaches a Workload only through `spec.priority`: the job reconciler
    copies it at creation, and upstream's `workloadpriorityclass_controller.go` rewrites it on every
    Workload referencing the class when the class is created or its value changes. The core never
    reads class values itself, so a class change alters nothing until that Workload update arrives.
    `priority_classes` is accepted for compatibility and ignored.
    """
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    pod_sets = []
    for ps in spec.get("podSets") or ():
        pspec = (ps.get("template") or {}).get("spec") or {}
        count = int(ps.get("count", 1))
        mc = ps.get("minCount")
        ps_name = str(ps.get("name") or "main")
        requests = own = pod_requests(pspec)
        if resources:
            requests = dict(resources.apply(requests))
        for r in (dra_replaced or {}).get(ps_name) or ():
            requests.pop(r, None)
        for r, v in ((dra_requests or {}).get(ps_name) or {}).items():
            requests[r] = min(requests.get(r, 0) + v, UNLIMITED)
        tr = ps.get("topologyRequest")
        pod_sets.append(
            PodSetInfo(
                name=ps_name,
                count=count,
                min_count=None if mc is None else int(mc),
                requests=requests,
                node_selector=dict(pspec.get("nodeSelector") or {}),
                required_terms=_required_terms(pspec),
                tolerations=tuple(selector.parse_toleration(t) for t in pspec.get("tolerations") or ()),
                requests_tas=_requests_tas(tr),
                topology_request=TopologyRequest.from_api(tr) if isinstance(tr, Mapping) else None,
                topology_group=str(tr["podSetGroupName"])
                if isinstance(tr, Mapping) and tr.get("podSetGroupName")
                else None,
                pod_requests=None if own == requests else own,
            )
        )
    conds = {
        str(c["type"]): Condition(
            str(c.get("status", "")),
            str(c.get("reason", "")),
            str(c.get("message", "")),
            parse_time(c.get("lastTransitionTime")),
        )
        for c in status.get("conditions") or ()
    }
    ref = spec.get("priorityClassRef") or {}
    prio = spec.get("priority")
    is_wpc = ref.get("group") == constants.GROUP and ref.get("kind") == "WorkloadPriorityClass"
    admission = status.get("admission") or {}
    checks = status.get("admissionChecks") or ()
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    ns = str(meta.get("namespace") or "")
    name = str(meta.get("name") or "")
    reclaimable = {str(r["name"]): int(r.get("count") or 0) for r in status.get("reclaimablePods") or ()}
    allowed = concurrent_admission.allowed_flavors(obj)
    return WorkloadInfo(
        key=WorkloadKey(f"{ns}/{name}"),
        namespace=ns,
        name=name,
        uid=str(meta.get("uid") or ""),
        queue_name=str(spec.get("queueName") or ""),
        priority=int(prio or 0),
        creation=parse_time(meta.get("creationTimestamp")) or EPOCH,
        pod_sets=tuple(pod_sets),
        job_uid=str(labels.get(constants.JOB_UID_LABEL, "")),
        priority_class=str(ref.get("name") or "") if is_wpc else "",
        generation=int(meta.get("generation") or 0),
        active=spec.get("active", True) is not False,
        conditions=conds,
        admission_cluster_queue=str(admission.get("clusterQueue") or ""),
        assignments=_parse_assignments(admission.get("podSetAssignments")),
        reclaimable=reclaimable,
        requeue_at=parse_time((status.get("requeueState") or {}).get("requeueAt")),
        requeue_count=None if status.get("requeueState") is None else int(status["requeueState"].get("count") or 0),
        admission_gated=bool(annotations.get(constants.ADMISSION_GATED_BY)),
        failed_checks=any(c.get("state") in ("Retry", "Rejected") for c in checks),
        check_states={str(c.get("name")): str(c.get("state") or "Pending") for c in checks},
        resource_errors=_resource_errors(spec.get("podSets") or ()),
        limit_range_errors=limit_range_errors,
        dra_error=dra_error,
        requeue_by_eviction=requeue_by_eviction,
        parent_name=concurrent_admission.parent_name(obj),
        parent_uid=concurrent_admission.parent_uid(obj),
        allowed_flavors=allowed,
        closed_preemption_gate=concurrent_admission.has_closed_preemption_gate(obj),
        replacement_for=str(annotations.get(constants.WORKLOAD_SLICE_REPLACEMENT_FOR) or ""),
        unhealthy_nodes=tuple(str(n.get("name") or "") for n in status.get("unhealthyNodes") or ()),
        scheduling_hash=_scheduling_hash(
            spec, int(prio or 0), pod_sets, reclaimable, annotations.get(constants.ALLOWED_RESOURCE_FLAVORS_ANNOTATION)
        ),
    )


def _scheduling_hash(
    spec: Mapping[str, Any],
    priority: int,
    pod_sets: Sequence[PodSetInfo],
    reclaimable: Mapping[str, int],
    allowed_flavors: object,
) -> str:
    """`computeSchedulingHash` (`pkg/workload/workload.go`, v0.19.2): 16 hex digits of SHA-256 over the
    priority and, per podSet, its name, pod spec shape, effective count (less reclaimable pods), total
    requests, minCount and topologyRequest; plus the allowed-flavors annotation when set (upstream adds
    it with ConcurrentAdmission on; without the gate it only splits classes further, which is safe).
    The namespace, LocalQueue and creation time are not part of it: equivalent Workloads of different
    LocalQueues of one ClusterQueue are one class."""
    shapes = []
    for raw, ps in zip(spec.get("podSets") or (), pod_sets, strict=False):
        count = ps.count - reclaimable.get(ps.name, 0)
        shapes.append(
            {
                "count": count,
                "minCount": ps.min_count,
                "name": ps.name,
                "requests": {r: min(v * count, UNLIMITED) for r, v in sorted(ps.requests.items())},
                "spec": spec_shape((raw.get("template") or {}).get("spec") or {}),
                "topologyRequest": raw.get("topologyRequest"),
            }
        )
    shape: dict[str, Any] = {"podSets": shapes, "priority": priority}
    if allowed_flavors is not None:
        shape["allowedFlavors"] = allowed_flavors
    return hashlib.sha256(orjson.dumps(shape, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def describe_flavors(psa: Mapping[str, Any]) -> str:
    """A podSetAssignment's flavors in words, for people (explain, dry-run, the dashboard):
    `cpu on default, memory on default`."""
    return ", ".join(f"{r} on {f}" for r, f in sorted((psa.get("flavors") or {}).items()))
