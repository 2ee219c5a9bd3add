"""The cohort tree: linking ClusterQueues and Cohorts, implicit cohorts, cycles, tree aggregates.

Mirrors `pkg/cache/hierarchy/{manager,cycle}.go` and `updateCohortTreeResources` /
`accumulateFromChild` in `pkg/cache/scheduler/resource_node.go` (upstream commit ff69552e79).
The tree is rebuilt from names whenever a ClusterQueue or Cohort changes (rare events), which keeps
the incremental and the rebuilt state identical by construction; workload events only move usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from webhook.core.model import CohortSpec
from webhook.core.resource_node import ClusterQueueNode, CohortNode, local_quota
from webhook.core.resources import FlavorResource

__all__ = ["Forest", "build_forest", "update_subtree"]


@dataclass(slots=True)
class Forest:
    """Cohort nodes by name, and the ClusterQueues whose tree has a cycle."""

    cohorts: dict[str, CohortNode]
    cycle_cqs: frozenset[str]
    cycle_cohorts: frozenset[str]


def _in_cycle(name: str, parents: Mapping[str, str]) -> bool:
    seen = set()
    cur = name
    while cur:
        if cur in seen:
            return True
        seen.add(cur)
        cur = parents.get(cur, "")
    return False


def build_forest(cluster_queues: Mapping[str, ClusterQueueNode], cohort_specs: Mapping[str, CohortSpec]) -> Forest:
    """Create cohort nodes (explicit and implicit), link parents and compute subtree aggregates.

    ClusterQueue nodes keep their own usage; cohort usage is derived from the children.
    """
    parents = {name: spec.parent for name, spec in cohort_specs.items() if spec.parent}
    names = (
        set(cohort_specs) | set(parents.values()) | {cq.spec.cohort for cq in cluster_queues.values() if cq.spec.cohort}
    )
    cohorts: dict[str, CohortNode] = {}
    for name in sorted(names):
        spec = cohort_specs.get(name)
        node = CohortNode(name, spec.quotas if spec else {}, spec.fair_weight if spec else Fraction(1))
        node.explicit = spec is not None
        cohorts[name] = node
    cycle = frozenset(n for n in names if _in_cycle(n, parents))
    for name, parent in parents.items():
        # Cycles are not linked, so walking parents always terminates.
        if name not in cycle:
            node, pnode = cohorts[name], cohorts[parent]
            node.parent = pnode
            pnode.child_cohorts[name] = node
    for cq in cluster_queues.values():
        cq.parent = None
        if cq.spec.cohort:
            pnode = cohorts[cq.spec.cohort]
            cq.parent = pnode
            pnode.child_cqs[cq.name] = cq
    cycle_cqs = set()
    for cq in cluster_queues.values():
        cur = cq.spec.cohort
        if cur and (cur in cycle or any(a.name in cycle for a in cq.path_to_root())):
            cycle_cqs.add(cq.name)
    for node in cohorts.values():
        if node.parent is None:
            update_subtree(node)
    return Forest(cohorts, frozenset(cycle_cqs), cycle)


def update_subtree(cohort: CohortNode) -> None:
    """Recompute subtree quota and usage of `cohort` and every cohort below it."""
    quota = {fr: q.nominal for fr, q in cohort.quotas.items()}
    usage: dict[FlavorResource, int] = {}
    for child in cohort.children():
        if isinstance(child, CohortNode):
            update_subtree(child)
        elif isinstance(child, ClusterQueueNode):
            child.subtree_quota = {fr: q.nominal for fr, q in child.quotas.items()}
        for fr, v in child.subtree_quota.items():
            d = v - local_quota(child, fr)
            quota[fr] = quota.get(fr, 0) + d
        for fr, v in child.usage.items():
            d = max(0, v - local_quota(child, fr))
            if d:
                usage[fr] = usage.get(fr, 0) + d
    cohort.subtree_quota = quota
    cohort.usage = usage
