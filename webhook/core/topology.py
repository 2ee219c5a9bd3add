"""What topology-aware admission knows of the cluster: Topologies, Nodes, non-TAS pods, TAS usage.

Mirrors upstream v0.19.2's `pkg/cache/scheduler/{tas_cache,tas_flavor,tas_nodes_cache,
tas_non_tas_pod_cache}.go` (the live state watch events update) and the TAS parts of `snapshot.go`
and `clusterqueue_snapshot.go` (`TASFlavorSnapshot`: the per-cycle copy the scheduler places
workloads in, `Fits`, `FindTopologyAssignmentsForWorkload`). Placement itself is `webhook.core.tas`.

Cost stays away from clusters without TAS: nothing here runs unless a ResourceFlavor names a
Topology, and a snapshot builds a flavor's view only when a workload asks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from webhook.api import constants as c
from webhook.api import fields, quantity
from webhook.core import tas
from webhook.core.model import ResourceFlavorSpec
from webhook.core.workload import PodSetInfo, WorkloadInfo, WorkloadKey, pod_requests

__all__ = [
    "TopologyCache",
    "TopologySnapshot",
    "describe_assignment",
    "non_tas_pod_usage",
    "parse_node",
    "pod_set_request",
    "topology_levels",
    "topology_request",
    "workload_tas_usage",
]

# flavor -> workload -> the pods it placed per domain
Usage = dict[str, dict[WorkloadKey, tuple[tas.DomainUsage, ...]]]
WorkloadUsage = dict[str, tuple[tas.DomainUsage, ...]]


def topology_levels(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """A Topology's `spec.levels[].nodeLabel`, top to bottom."""
    return tuple(str(lv.get("nodeLabel") or "") for lv in (obj.get("spec") or {}).get("levels") or ())


def parse_node(obj: Mapping[str, Any]) -> tas.Node:
    """The scheduling view of a Node (`tas_nodes_cache.go` keeps Ready, schedulable nodes)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or ())
    return tas.Node(
        name=str(meta.get("name") or ""),
        labels=dict(meta.get("labels") or {}),
        allocatable={str(r): quantity.amount(str(r), v) for r, v in (st.get("allocatable") or {}).items()},
        taints=tuple(
            tas.Taint(str(t.get("key") or ""), str(t.get("effect") or ""), str(t.get("value") or ""))
            for t in spec.get("taints") or ()
        ),
        ready=ready,
        unschedulable=bool(spec.get("unschedulable")),
    )


_TAS_POD_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)


def topology_request(
    annotations: Mapping[str, str],
    *,
    pod_index_label: str,
    sub_group_index_label: str | None = None,
    sub_group_count: int | None = None,
) -> dict[str, Any]:
    """`NewPodSetTopologyRequest(meta).PodIndexLabel(label).SubGroup(index label, count).Build()`
    (pkg/controller/jobframework/tas.go) from a pod template's annotations, the sub-group only when
    given (a JobSet's replicated Job: its copies); raises ValueError with Go's message for an
    unparsable value. Here, below the worker's integrations and the CLI's dry-run, which both build
    Workloads from pod templates."""
    ann = annotations
    req: dict[str, Any] = {}
    if c.PODSET_REQUIRED_TOPOLOGY in ann:
        req["required"] = ann[c.PODSET_REQUIRED_TOPOLOGY]
    elif c.PODSET_PREFERRED_TOPOLOGY in ann:
        req["preferred"] = ann[c.PODSET_PREFERRED_TOPOLOGY]
    elif c.PODSET_UNCONSTRAINED_TOPOLOGY in ann:
        req["unconstrained"] = fields.go_parse_bool(ann[c.PODSET_UNCONSTRAINED_TOPOLOGY])
    if c.PODSET_SLICE_REQUIRED_TOPOLOGY in ann and c.PODSET_SLICE_SIZE in ann:
        try:
            size = fields.go_atoi(ann[c.PODSET_SLICE_SIZE])
        except ValueError as exc:
            raise ValueError(str(exc).replace("Atoi", "ParseInt")) from exc
        req["podSetSliceRequiredTopology"] = ann[c.PODSET_SLICE_REQUIRED_TOPOLOGY]
        req["podSetSliceSize"] = size
    req["podIndexLabel"] = pod_index_label
    if sub_group_count is not None:
        req["subGroupCount"] = sub_group_count
    if sub_group_index_label is not None:
        req["subGroupIndexLabel"] = sub_group_index_label
    if c.PODSET_GROUP_NAME in ann and ("required" in req or "preferred" in req):
        req["podSetGroupName"] = ann[c.PODSET_GROUP_NAME]
    return req


def describe_assignment(raw: Mapping[str, Any]) -> str:
    """A pod set's `topologyAssignment` in words, for people (explain, dry-run, the dashboard): the
    levels, then each domain's values with its pod count, e.g. `<hostname label>: kind-worker (2 pods),
    kind-worker2 (1 pod)`."""
    ta = tas.from_v1beta2(raw)
    domains = ", ".join(f"{'/'.join(d.values)} ({d.count} pod{'s' if d.count != 1 else ''})" for d in ta.domains)
    return f"{'/'.join(ta.levels)}: {domains}"


def non_tas_pod_usage(pod: Mapping[str, Any]) -> tuple[str, dict[str, int]] | None:
    """(node, usage) a pod takes outside TAS, or None (`belongsToNonTASCache`): bound to a node, not
    Succeeded/Failed, not carrying a topology annotation. Usage is its requests plus one `pods`."""
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    phase = (pod.get("status") or {}).get("phase")
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if not node or phase in ("Succeeded", "Failed") or any(a in annotations for a in _TAS_POD_ANNOTATIONS):
        return None
    usage = pod_requests(pod.get("spec") or {})
    usage["pods"] = usage.get("pods", 0) + 1
    return node, usage


def pod_set_request(ps: PodSetInfo, count: int, *, implied: bool) -> tas.PodSetRequest:
    """The engine's view of a pod set asking for a placement (`TASPodSetRequests`)."""
    return tas.PodSetRequest(
        name=ps.name,
        count=count,
        requests=ps.placement_requests,
        topology_request=ps.topology_request,
        implied=implied,
        group=ps.topology_group,
        tolerations=tuple(tas.Toleration(t.key, t.operator, t.value, t.effect) for t in ps.tolerations),
        node_selector=ps.node_selector,
        required_affinity=tuple(
            tas.NodeSelectorTerm(tuple(tas.NodeSelectorRequirement(r.key, r.operator, r.values) for r in term))
            for term in ps.required_terms
        )
        or None,
    )


def workload_tas_usage(wl: WorkloadInfo, is_tas_flavor: Callable[[str], bool]) -> WorkloadUsage:
    """Per TAS flavor, the pods `wl`'s admission places per domain (`Info.TASUsage`)."""
    out: dict[str, list[tas.DomainUsage]] = {}
    requests = {ps.name: ps.placement_requests for ps in wl.pod_sets}
    for psa in wl.assignments:
        ta = psa.topology_assignment
        if ta is None:
            continue
        flavor = next((f for f in sorted(set(psa.flavors.values())) if is_tas_flavor(f)), None)
        if flavor is None:
            continue
        per_pod = requests.get(psa.name, {})
        out.setdefault(flavor, []).extend(tas.DomainUsage(d.values, per_pod, d.count) for d in ta.domains)
    return {f: tuple(u) for f, u in out.items()}


class TopologyCache:
    """Live TAS state, updated by watch events. Empty and idle in a cluster without TAS."""

    def __init__(self) -> None:
        self.levels: dict[str, tuple[str, ...]] = {}  # Topology name -> node label per level
        self.nodes: dict[str, tas.Node] = {}
        self._pods: dict[str, tuple[str, dict[str, int]]] = {}  # pod key -> (node, usage)
        self.non_tas: dict[str, dict[str, int]] = {}  # node -> summed usage of its non-TAS pods
        self.usage: Usage = {}
        # Flavor objects built from the nodes; dropped whenever nodes or Topologies change.
        self._flavors: dict[str, tas.Flavor] = {}

    # -- events -------------------------------------------------------------------------------
    def set_topology(self, name: str, levels: tuple[str, ...] | None) -> None:
        if levels is None:
            self.levels.pop(name, None)
        else:
            self.levels[name] = levels
        self._flavors.clear()

    def set_node(self, name: str, node: tas.Node | None) -> None:
        if node is None:
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = node
        self._flavors.clear()

    def set_pod(self, key: str, placed: tuple[str, dict[str, int]] | None) -> bool:
        """Record a non-TAS pod's (node, usage), or forget it (None). True when this may free room
        on a node: the pod left it, or asks for less (`updatePodUsage`)."""
        old = self._pods.pop(key, None)
        if old is not None:
            node_usage = self.non_tas[old[0]]
            for r, v in old[1].items():
                node_usage[r] = node_usage.get(r, 0) - v
            if not any(node_usage.values()):
                del self.non_tas[old[0]]
        if placed is not None:
            self._pods[key] = placed
            node_usage = self.non_tas.setdefault(placed[0], {})
            for r, v in placed[1].items():
                node_usage[r] = node_usage.get(r, 0) + v
        if old is None:
            return False
        return placed is None or placed[0] != old[0] or any(placed[1].get(r, 0) < v for r, v in old[1].items())

    def add_workload(self, wl: WorkloadInfo, flavors: Mapping[str, ResourceFlavorSpec]) -> None:
        """Count a quota-holding workload's topology assignments (`TASFlavorCache.addUsage`)."""
        for flavor, usage in workload_tas_usage(wl, lambda f: _is_tas(flavors, f)).items():
            self.usage.setdefault(flavor, {})[wl.key] = usage

    def remove_workload(self, key: WorkloadKey) -> None:
        for per_wl in self.usage.values():
            per_wl.pop(key, None)

    # -- reads --------------------------------------------------------------------------------
    def flavor(self, rf: ResourceFlavorSpec) -> tas.Flavor | None:
        """The engine's view of a TAS flavor; None while its Topology is unknown."""
        if rf.topology_name is None or rf.topology_name not in self.levels:
            return None
        tolerations = tuple(tas.Toleration(t.key, t.operator, t.value, t.effect) for t in rf.tolerations)
        f = self._flavors.get(rf.name)
        if (
            f is None
            or f.topology_name != rf.topology_name
            or f.node_labels != rf.node_labels
            or f.tolerations != tolerations
        ):
            f = tas.Flavor(
                topology_name=rf.topology_name,
                levels=self.levels[rf.topology_name],
                nodes=tuple(self.nodes.values()),
                node_labels=dict(rf.node_labels),
                tolerations=tolerations,
            )
            self._flavors[rf.name] = f
        return f

    def snapshot(self, flavors: Mapping[str, ResourceFlavorSpec]) -> TopologySnapshot | None:
        """The per-cycle copy, or None when no flavor is topology-aware."""
        if not any(rf.topology_name is not None for rf in flavors.values()):
            return None
        return TopologySnapshot(self, flavors)


def _is_tas(flavors: Mapping[str, ResourceFlavorSpec], name: str) -> bool:
    rf = flavors.get(name)
    return rf is not None and rf.topology_name is not None


class TopologySnapshot:
    """One cycle's TAS view (`TASFlavorSnapshot` per flavor): usage copied, nodes shared."""

    __slots__ = ("_cache", "_flavors", "_leaf", "_removed", "usage")

    def __init__(self, cache: TopologyCache, flavors: Mapping[str, ResourceFlavorSpec]) -> None:
        self._cache = cache
        self._flavors = flavors
        self.usage: Usage = {f: dict(per_wl) for f, per_wl in cache.usage.items()}
        # Usage taken out by simulations, to put back.
        self._removed: dict[WorkloadKey, WorkloadUsage] = {}
        # `usage` summed per leaf domain, per flavor: built on a flavor's first placement in the
        # cycle, then kept current by every move below.
        self._leaf: dict[str, tas.LeafUsage] = {}

    def flavor(self, name: str) -> tas.Flavor | None:
        """The TAS flavor `name` with its nodes, None when not topology-aware or its Topology is unknown."""
        rf = self._flavors.get(name)
        return None if rf is None else self._cache.flavor(rf)

    def is_tas(self, name: str) -> bool:
        return _is_tas(self._flavors, name)

    def _by_node(self, name: str) -> bool:
        f = self.flavor(name)
        return f is not None and bool(f.levels) and f.levels[-1] == tas.HOSTNAME_LABEL

    def _tas_usage(self, flavor: str) -> Iterable[tas.DomainUsage] | tas.LeafUsage:
        """What TAS workloads hold in `flavor`'s domains; for a flavor whose lowest level is the node,
        what they hold on those nodes through any such flavor (TASHandleOverlappingFlavors, on)."""
        names = [f for f in self.usage if self._by_node(f)] if self._by_node(flavor) else [flavor]
        if len(names) == 1:
            return self._leaf_usage(names[0])
        return (u for name in names for per_wl in self.usage.get(name, {}).values() for u in per_wl)

    def _leaf_usage(self, flavor: str) -> tas.LeafUsage:
        summed = self._leaf.get(flavor)
        if summed is None:
            summed = self._leaf[flavor] = tas.LeafUsage()
            for per_wl in self.usage.get(flavor, {}).values():
                summed.add(per_wl)
        return summed

    def find(
        self,
        requests: Mapping[str, Sequence[tas.PodSetRequest]],
        *,
        simulate_empty: bool = False,
        replacement: tas.Replacement | None = None,
    ) -> tuple[dict[str, tas.PodSetResult], dict[str, str]]:
        """Place each flavor's pod sets, flavors in name order (`FindTopologyAssignmentsForWorkload`).
        Returns the results by pod set and each pod set's flavor. Flavors whose lowest level is the
        node share what earlier ones placed (TASHandleOverlappingFlavors, on)."""
        results: dict[str, tas.PodSetResult] = {}
        flavor_of: dict[str, str] = {}
        assumed: dict[str, dict[str, int]] = {}
        for name in sorted(requests):
            f = self.flavor(name)
            if f is None:
                continue
            by_node = self._by_node(name)
            out = tas.find_topology_assignments(
                f,
                requests[name],
                tas_usage=self._tas_usage(name),
                non_tas_usage=self._cache.non_tas,
                assumed_usage=assumed if by_node else None,
                simulate_empty=simulate_empty,
                replacement=replacement,
            )
            for ps in requests[name]:
                if ps.name in out:
                    results[ps.name], flavor_of[ps.name] = out[ps.name], name
                    ta = out[ps.name].assignment
                    if by_node and ta is not None:
                        tas.add_assumed_usage(assumed, ta, ps.requests)
        return results, flavor_of

    def fits(self, usage: WorkloadUsage) -> bool:
        """Whether the domains of `usage` still have room (`TASFlavorSnapshot.Fits`)."""
        for name, domains in usage.items():
            f = self.flavor(name)
            if f is None or not tas.fits(
                f, domains, tas_usage=self._tas_usage(name), non_tas_usage=self._cache.non_tas
            ):
                return False
        return True

    # -- usage moves ---------------------------------------------------------------------------
    def add(self, key: WorkloadKey, usage: WorkloadUsage) -> None:
        for flavor, domains in usage.items():
            per_wl = self.usage.setdefault(flavor, {})
            per_wl[key] = per_wl.get(key, ()) + domains
            if (summed := self._leaf.get(flavor)) is not None:
                summed.add(domains)

    def remove(self, key: WorkloadKey) -> None:
        self._take(key)

    def remove_workload(self, wl: WorkloadInfo) -> None:
        if taken := self._take(wl.key):
            self._removed[wl.key] = taken

    def _take(self, key: WorkloadKey) -> WorkloadUsage:
        taken = {f: per_wl.pop(key) for f, per_wl in self.usage.items() if key in per_wl}
        for flavor, domains in taken.items():
            if (summed := self._leaf.get(flavor)) is not None:
                summed.add(domains, -1)
        return taken

    def add_workload(self, wl: WorkloadInfo) -> None:
        taken = self._removed.pop(wl.key, None)
        if taken is None:
            taken = workload_tas_usage(wl, self.is_tas)
        self.add(wl.key, taken)
