"""Topology-aware scheduling (TAS): placing a workload's pods in the domains of a Topology.

Pure computation over plain data, no I/O. Mirrors upstream Kueue v0.19.2:

- `pkg/cache/scheduler/tas_topology_tree.go` -> `tree.py` (the tree of domains built from the nodes);
- `pkg/cache/scheduler/tas_flavor_snapshot.go` -> `assign.py` (capacity per domain, the choice of
  domains: required/preferred/unconstrained levels, slices and multi-layer slices, BestFit and
  LeastFreeCapacity, leader/worker pod-set groups) and `nodes.py` with
  `scheduling_simulator_default.go` (taints, node selector, required node affinity);
- `pkg/cache/scheduler/tas_balanced_placement.go` -> `balanced.py` (behind `Options.balanced_placement`);
- `FindTopologyAssignmentsForFlavor`, node replacement and `tas_elastic_workloads.go` -> `flavor.py`;
- `pkg/util/tas/{tas.go,tas_assignment.go}` -> `types.py` and `encoding.py` (domain ids, the compact
  v1beta2 `topologyAssignment`).

Public API::

    results = find_topology_assignments(flavor, pod_sets, tas_usage=..., non_tas_usage=..., ...)
    for name, r in results.items():
        r.assignment      # TopologyAssignment (levels, domains) or None
        r.reason          # "" or upstream's message, e.g. 'topology "x" allows to fit only 2 out of 4 pod(s)'
    to_v1beta2(r.assignment)  # the `topologyAssignment` of the Workload's PodSetAssignment
    fits(flavor, usage, tas_usage=..., non_tas_usage=...)  # do placed pods still fit their domains
    has_level(levels, topology_request)  # whether a flavor's Topology can serve the request at all

`flavor` is a `Flavor` (topology name and levels, the nodes, the flavor's node labels and
tolerations); `pod_sets` are `PodSetRequest`s of one workload in that flavor (per-pod requests, count,
`TopologyRequest`, tolerations, node selector, node affinity). `replacement=Replacement(...)` repairs
an admitted workload that lost a node. Not covered: the scheduler-library feasibility check
(SchedulerLibraryIntegration, alpha upstream) and the v1beta1 single-slice-only encoding gate.
"""

from webhook.core.tas.assign import has_level
from webhook.core.tas.encoding import from_v1beta2, to_v1beta2
from webhook.core.tas.flavor import LeafUsage, Replacement, add_assumed_usage, find_topology_assignments, fits
from webhook.core.tas.types import (
    HOSTNAME_LABEL,
    DomainAssignment,
    DomainUsage,
    Flavor,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Options,
    PodSetRequest,
    PodSetResult,
    PreferredTerm,
    SliceConstraint,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
)

__all__ = [
    "HOSTNAME_LABEL",
    "DomainAssignment",
    "DomainUsage",
    "Flavor",
    "LeafUsage",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Options",
    "PodSetRequest",
    "PodSetResult",
    "PreferredTerm",
    "Replacement",
    "SliceConstraint",
    "Taint",
    "Toleration",
    "TopologyAssignment",
    "TopologyRequest",
    "add_assumed_usage",
    "find_topology_assignments",
    "fits",
    "from_v1beta2",
    "has_level",
    "to_v1beta2",
]
