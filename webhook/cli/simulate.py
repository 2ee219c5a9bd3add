"""What our admission core would do with one workload, on a copy of the cluster's queues: for `explain` and `dry-run`.

Pure: the objects come in as lists of v1beta2 JSON dicts (read by the commands), an `AdmissionCore`
is fed them the way the worker feeds it its watch events, and one or more scheduling cycles run on
that private copy until the core decides about the workload. Nothing is written anywhere. Numbers per
pod set, flavor and resource come from the same quota tree (`resource_node.available`,
`potential_available`), so they agree with the decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from webhook.api import constants, quantity
from webhook.api import objects as o
from webhook.core import ordering, resource_node, topology
from webhook.core.cycle import AdmissionCore, SchedulerConfig
from webhook.core.decisions import Admit, Decision, Pending, Preempt, QueueBlocked
from webhook.core.resources import FlavorResource
from webhook.core.workload import WorkloadInfo, WorkloadKey, parse_workload

__all__ = [
    "ClusterState",
    "Outcome",
    "QuotaRow",
    "build_core",
    "never_fits",
    "quota_rows",
    "simulate",
    "workload_for",
    "workloads_ahead",
]

#: Cycles to run before giving up on a decision (each pops one workload per ClusterQueue).
MAX_CYCLES = 200


@dataclass(slots=True)
class ClusterState:
    """The objects the core needs, as the API returned them."""

    resource_flavors: list[dict[str, Any]] = field(default_factory=list)
    cluster_queues: list[dict[str, Any]] = field(default_factory=list)
    cohorts: list[dict[str, Any]] = field(default_factory=list)
    local_queues: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    admission_checks: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    # Topology-aware flavors place pods on these (read only when some ResourceFlavor names a Topology).
    topologies: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    # What of the server's Configuration the core reads (`explain.server_config`).
    config: SchedulerConfig = field(default_factory=SchedulerConfig)


def build_core(state: ClusterState, now: datetime, *, with_workloads: bool = True) -> AdmissionCore:
    """A core fed every object, as the worker's informers feed it (without workloads: empty quotas)."""
    core = AdmissionCore(state.config)
    for ns in state.namespaces:
        core.on_namespace(o.meta(ns).get("name", ""), o.meta(ns).get("labels") or {}, now)
    for ac in state.admission_checks:
        active = any(
            c.get("type") == "Active" and c.get("status") == "True"
            for c in (ac.get("status") or {}).get("conditions") or []
        )
        core.on_admission_check(
            o.meta(ac).get("name", ""), active, now, (ac.get("spec") or {}).get("controllerName", "")
        )
    for rf in state.resource_flavors:
        core.on_resource_flavor(rf, now)
    for topo in state.topologies:
        core.on_topology(topo, now)
    for node in state.nodes:
        core.on_node(node, now)
    for pod in state.pods:
        meta = o.meta(pod)
        core.on_pod(f"{meta.get('namespace', '')}/{meta.get('name', '')}", pod, now)
    for cohort in state.cohorts:
        core.on_cohort(cohort, now)
    for cq in state.cluster_queues:
        core.on_cluster_queue(cq, now)
    for lq in state.local_queues:
        core.on_local_queue(lq, now)
    if with_workloads:
        for wl in state.workloads:
            core.on_workload(wl, now)
    return core


@dataclass(frozen=True, slots=True)
class Outcome:
    """The core's decision about one workload: admitted, preempting, pending, blocked, or none in time."""

    decision: Decision | None
    cycles: int

    @property
    def admitted(self) -> bool:
        return isinstance(self.decision, Admit)

    @property
    def preempting(self) -> bool:
        return isinstance(self.decision, Preempt)


def _about(decision: Decision, key: WorkloadKey) -> bool:
    if isinstance(decision, Preempt):
        return decision.preemptor_key == key
    return isinstance(decision, Admit | Pending | QueueBlocked) and decision.key == key


def simulate(core: AdmissionCore, key: WorkloadKey, now: datetime, *, max_cycles: int = MAX_CYCLES) -> Outcome:
    """Scheduling cycles on the core until one decides about `key` (its first decision)."""
    for cycle in range(1, max_cycles + 1):
        result = core.schedule(now)
        for decision in result.decisions:
            if _about(decision, key):
                return Outcome(decision, cycle)
        if not result.decisions:
            break
    return Outcome(None, max_cycles)


def workload_for(obj: Mapping[str, Any], *, now: datetime, priority: int = 0) -> dict[str, Any]:
    """The Workload our worker would make for a batch/v1 Job or a v1 Pod (a Workload is returned as is).

    One pod set `main`: a Job's min(parallelism, completions) pods (minCount from the
    `job-min-parallelism` annotation), or a pod group's `pod-group-total-count` pods; its topology
    request from the pod template's annotations, as the worker builds it with TAS on (the default).
    """
    kind, meta = obj.get("kind"), o.meta(obj)
    if kind == "Workload":
        return dict(obj)
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if kind == "Job":
        spec = obj.get("spec") or {}
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        count = parallelism if completions is None else min(parallelism, int(completions))
        template = spec.get("template") or {}
        pod_set: dict[str, Any] = {"name": "main", "count": count, "template": template}
        if constants.JOB_MIN_PARALLELISM in annotations:
            pod_set["minCount"] = int(annotations[constants.JOB_MIN_PARALLELISM])
        pod_set["topologyRequest"] = topology.topology_request(
            o.meta(template).get("annotations") or {}, pod_index_label=constants.JOB_COMPLETION_INDEX_ANNOTATION
        )
    elif kind == "Pod":
        count = int(annotations.get(constants.POD_GROUP_TOTAL_COUNT, "1"))
        pod_set = {
            "name": "main",
            "count": count,
            "template": {"spec": obj.get("spec") or {}},
            "topologyRequest": topology.topology_request(
                annotations, pod_index_label=constants.POD_GROUP_POD_INDEX_LABEL
            ),
        }
    else:
        raise ValueError(f"cannot make a Workload for kind {kind!r}: batch/v1 Job, v1 Pod or Workload")
    name = meta.get("name") or meta.get("generateName", "") + "dry-run"
    return {
        "apiVersion": constants.V1BETA2,
        "kind": "Workload",
        "metadata": {
            "name": f"{str(kind).lower()}-{name}",
            "namespace": meta.get("namespace", "default"),
            "uid": "dry-run",
            "creationTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "spec": {"queueName": labels.get(constants.QUEUE_LABEL, ""), "podSets": [pod_set], "priority": priority},
    }


@dataclass(frozen=True, slots=True)
class QuotaRow:
    """One (pod set, flavor, resource) of the workload against its ClusterQueue, amounts as API quantities."""

    pod_set: str
    flavor: str
    resource: str
    requested: int
    nominal: int
    in_use: int
    borrowable: int
    shortfall: int
    most_ever: int


def quota_rows(core: AdmissionCore, wl: WorkloadInfo, cluster_queue: str) -> list[QuotaRow]:
    """Per pod set, requested resource and each flavor that could carry it: the numbers behind the decision.

    `borrowable` is what the cohort could lend right now beyond the queue's free nominal quota;
    `shortfall` what is missing now; `most_ever` the most this queue could ever get (nominal plus
    what it may borrow, ignoring usage). Sorted by pod set order, then resource, then flavor order.
    """
    node = core.cache.cluster_queues.get(cluster_queue)
    if node is None:
        return []
    rows = []
    for ps in wl.pod_sets:
        for resource in sorted(ps.requests):
            requested = ps.requests[resource] * ps.count
            group = node.spec.resource_to_group.get(resource)
            if group is None:
                continue
            for flavor in node.spec.resource_groups[group].flavor_names:
                fr = FlavorResource(flavor, resource)
                nominal = node.quota(fr).nominal
                used = node.usage.get(fr, 0)
                available = resource_node.available(node, fr)
                rows.append(
                    QuotaRow(
                        ps.name,
                        flavor,
                        resource,
                        requested,
                        nominal,
                        used,
                        max(0, available - max(0, nominal - used)),
                        max(0, requested - available),
                        resource_node.potential_available(node, fr),
                    )
                )
    return rows


def never_fits(rows: Sequence[QuotaRow]) -> list[str]:
    """Why the workload can never be admitted by this queue, one line per pod set and resource; empty if it may.

    A resource never fits when every flavor that could carry it offers less than requested even
    with nothing else running (nominal quota plus what may be borrowed).
    """
    reasons = []
    by_key: dict[tuple[str, str], list[QuotaRow]] = {}
    for row in rows:
        by_key.setdefault((row.pod_set, row.resource), []).append(row)
    for (pod_set, resource), flavors in by_key.items():
        if all(r.requested > r.most_ever for r in flavors):
            best = max(r.most_ever for r in flavors)
            reasons.append(
                f"pod set {pod_set}: {resource} {quantity.format_amount(resource, flavors[0].requested)} "
                f"requested, at most {quantity.format_amount(resource, best)} in any flavor"
            )
    return reasons


def workloads_ahead(
    workloads: Sequence[Mapping[str, Any]],
    target: WorkloadInfo,
    cluster_queue: str,
    queue_of: Mapping[tuple[str, str], str],
) -> list[WorkloadInfo]:
    """Pending workloads of the same ClusterQueue ordered before `target` (priority, then queue time, then UID),
    `queue_of` mapping (namespace, LocalQueue) to its ClusterQueue."""
    mine = ordering.queue_key(target)
    ahead = []
    for obj in workloads:
        wl = parse_workload(obj)
        if wl.key == target.key or wl.has_quota_reservation or not wl.active or wl.is_finished:
            continue
        if queue_of.get((wl.namespace, wl.queue_name)) != cluster_queue:
            continue
        if ordering.queue_key(wl) < mine:
            ahead.append(wl)
    return sorted(ahead, key=ordering.queue_key)
