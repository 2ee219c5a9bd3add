"""Plain-data inputs and outputs of the TAS placement engine.

Mirrors the shapes upstream's engine reads (`kueue.PodSetTopologyRequest`, `TASPodSetRequests`,
`workload.TopologyDomainRequests`, the scheduling fields of `corev1.Node` and the pod template) and
the internal assignment it returns (`pkg/util/tas.TopologyAssignment`, v0.19.2). Resource amounts are
plain ints, in the units of `webhook.core.resources` (milli-units for cpu, whole units otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HOSTNAME_LABEL",
    "DomainAssignment",
    "DomainUsage",
    "Flavor",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Options",
    "PodSetRequest",
    "PodSetResult",
    "PreferredTerm",
    "SliceConstraint",
    "Taint",
    "Toleration",
    "TopologyAssignment",
    "TopologyRequest",
    "domain_id",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"
PODS = "pods"


def domain_id(values: tuple[str, ...] | list[str]) -> str:
    """A domain's identity within its level, as upstream's `DomainID` (values joined by commas)."""
    return ",".join(values)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def __str__(self) -> str:
        """The text upstream's exclusion stats name the taint by (`Taint.ToString`)."""
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""  # "" means Equal
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One term of a required node affinity; terms are ORed, requirements inside one are ANDed."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    """One `preferredDuringSchedulingIgnoredDuringExecution` term: `weight` counts on a node matching `term`."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class Node:
    """The scheduling view of a Node: upstream drops a node that is not Ready or is unschedulable."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False


@dataclass(frozen=True, slots=True)
class Flavor:
    """A TAS ResourceFlavor with its Topology: `levels` are the Topology's node label keys, top to
    bottom; `node_labels` and `tolerations` are the flavor's `spec.nodeLabels` and `spec.tolerations`;
    `nodes` may hold any nodes: those outside the flavor, not Ready or unschedulable are left out."""

    topology_name: str
    levels: tuple[str, ...]
    nodes: tuple[Node, ...]
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    # What the engine derives from the fields above once (the domain tree, `assign.Placer`): a Flavor
    # is immutable, so it stays valid for the Flavor's life. Not part of its value.
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Options:
    """Upstream's feature gates that change the placement, at their v0.19.2 defaults.

    `profile_mixed` (TASProfileMixed, beta, on): unconstrained pod sets take the domains with the
    least free capacity first instead of BestFit. `balanced_placement` (TASBalancedPlacement, alpha,
    off): preferred pod sets spread evenly over the fewest domains. `respect_preferred_affinity`
    (TASRespectNodeAffinityPreferred, alpha, off): domains whose nodes match more of the pod's
    preferred node affinity weight come first, before capacity. `elastic_workload_slices`
    (ElasticJobsViaWorkloadSlicesWithTAS, alpha, off): a scaled workload slice keeps the pods of
    its `previous_assignment` in place. `skip_reassignment_for_pod_owned`
    (SkipReassignmentForPodOwnedWorkloads, beta, on): a single-Pod workload keeps its failed node."""

    profile_mixed: bool = True
    balanced_placement: bool = False
    respect_preferred_affinity: bool = False
    elastic_workload_slices: bool = False
    skip_reassignment_for_pod_owned: bool = True


@dataclass(frozen=True, slots=True)
class SliceConstraint:
    """One layer of `podsetSliceRequiredTopologyConstraints` (or the legacy slice fields)."""

    topology: str
    size: int


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """`kueue.PodSetTopologyRequest`, with both slice forms folded into `slices` (outermost first);
    its `podSetGroupName` is `PodSetRequest.group`."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slices: tuple[SliceConstraint, ...] = ()
    pod_index_label: str | None = None
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None

    @classmethod
    def from_api(cls, obj: Mapping[str, object]) -> TopologyRequest:
        """Read the Workload's `podSets[].topologyRequest` (v1beta2), as `PodSetSliceRequiredTopologyConstraints`
        does: the multi-layer list wins over the legacy `podSetSliceRequiredTopology`/`podSetSliceSize`."""
        layers = obj.get("podsetSliceRequiredTopologyConstraints") or []
        slices: tuple[SliceConstraint, ...]
        if isinstance(layers, list) and layers:
            slices = tuple(SliceConstraint(str(x.get("topology", "")), int(x.get("size", 0))) for x in layers)
        elif (legacy := obj.get("podSetSliceRequiredTopology")) is not None:
            slices = (SliceConstraint(str(legacy), int(str(obj.get("podSetSliceSize") or 0))),)
        else:
            slices = ()

        def opt(key: str) -> str | None:
            v = obj.get(key)
            return None if v is None else str(v)

        count = obj.get("subGroupCount")
        return cls(
            required=opt("required"),
            preferred=opt("preferred"),
            unconstrained=bool(obj.get("unconstrained") or False),
            slices=slices,
            pod_index_label=opt("podIndexLabel"),
            sub_group_index_label=opt("subGroupIndexLabel"),
            sub_group_count=None if count is None else int(str(count)),
        )


@dataclass(frozen=True, slots=True)
class PodSetRequest:
    """`TASPodSetRequests`: one pod set asking for a placement in one TAS flavor.

    `requests` are one pod's requests (without the `pods` resource, which the engine adds). `implied`
    marks a pod set with no topology request in a TAS-only ClusterQueue: placed unconstrained at the
    lowest level. `group` is the topology request's `podSetGroupName`: the pod sets of a group are
    placed together, the one-pod set as the leader. `node_selector`, `required_affinity` and
    `tolerations` come from the pod template (with admission-check PodSetUpdates already merged).
    """

    name: str
    count: int
    requests: Mapping[str, int]
    topology_request: TopologyRequest | None = None
    implied: bool = False
    group: str | None = None
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[NodeSelectorTerm, ...] | None = None
    preferred_affinity: tuple[PreferredTerm, ...] = ()
    # the assignment of the workload slice this one replaces (elastic jobs)
    previous_assignment: TopologyAssignment | None = None


@dataclass(frozen=True, slots=True)
class DomainUsage:
    """`workload.TopologyDomainRequests`: `count` pods of `requests` placed in the domain `values`."""

    values: tuple[str, ...]
    requests: Mapping[str, int]
    count: int


@dataclass(frozen=True, slots=True)
class DomainAssignment:
    values: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True)
class TopologyAssignment:
    """Upstream's internal assignment (`utiltas.TopologyAssignment`): the domains at `levels`, in
    lexicographic order of their full level values. `webhook.core.tas.encoding.to_v1beta2` gives the
    Workload-status form."""

    levels: tuple[str, ...]
    domains: tuple[DomainAssignment, ...]

    def pod_count(self) -> int:
        return sum(d.count for d in self.domains)

    def usage(self, requests: Mapping[str, int]) -> dict[str, dict[str, int]]:
        """Usage per domain id of pods with `requests` placed by this assignment (`ComputeUsagePerDomain`)."""
        out: dict[str, dict[str, int]] = {}
        for d in self.domains:
            u = {r: v * d.count for r, v in requests.items()}
            u[PODS] = u.get(PODS, 0) + d.count
            out[domain_id(d.values)] = u
        return out


@dataclass(frozen=True, slots=True)
class PodSetResult:
    """Either an assignment or upstream's failure message for one pod set."""

    assignment: TopologyAssignment | None = None
    reason: str = ""
