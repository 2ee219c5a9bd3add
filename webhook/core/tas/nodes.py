"""Which nodes a pod set may land on: flavor membership, taints, node selector, required affinity.

Mirrors upstream v0.19.2's node filtering for TAS: `nodesCache.sync`/`find` and
`utiltas.NodeMatchesFlavor` (which nodes enter a flavor's tree) and the default feasibility checker
(`pkg/cache/scheduler/scheduling_simulator_default.go`: untolerated NoSchedule/NoExecute taint, then
node selector, then required node affinity, each counted in the exclusion stats).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from webhook.core.tas.types import Node, NodeSelectorRequirement, NodeSelectorTerm, PreferredTerm, Taint, Toleration

__all__ = ["ExclusionStats", "affinity_score", "go_quote", "matches_affinity", "node_in_flavor", "untolerated_taint"]

_SCHEDULING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(slots=True)
class ExclusionStats:
    """Why nodes were left out (`tasExclusionStats`); printed after a not-fit message."""

    total_nodes: int = 0
    node_selector: int = 0
    affinity: int = 0
    topology_domain: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)

    def has_exclusions(self) -> bool:
        return bool(self.node_selector or self.affinity or self.taints or self.topology_domain or self.resources)

    def format_reasons(self) -> str:
        """The exclusions, sorted as text, as upstream's `formatReasons` joins them."""
        reasons: list[str] = []
        if self.node_selector:
            reasons.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            reasons.append(f"affinity: {self.affinity}")
        if self.topology_domain:
            reasons.append(f"topologyDomain: {self.topology_domain}")
        reasons += [f"taint {go_quote(t)}: {n}" for t, n in self.taints.items()]
        reasons += [f"resource {go_quote(r)}: {n}" for r, n in self.resources.items()]
        return ", ".join(sorted(reasons))


def go_quote(s: str) -> str:
    """Go's %q for the label-like strings found here (ASCII letters, digits and punctuation)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def node_in_flavor(node: Node, flavor_labels: Mapping[str, str], levels: Sequence[str]) -> bool:
    """A node joins the flavor's tree when Ready, schedulable, carrying the flavor's node labels and
    every level label (`nodesCache.sync` + `NodeMatchesFlavor`)."""
    if not node.ready or node.unschedulable:
        return False
    if any(node.labels.get(k) != v for k, v in flavor_labels.items()):
        return False
    return all(level in node.labels for level in levels)


def _tolerates(tol: Toleration, taint: Taint) -> bool:
    """`Toleration.ToleratesTaint`, with the numeric Gt/Lt operators enabled as upstream calls it."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    op = tol.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return tol.value == taint.value
    if op in ("Gt", "Lt"):
        try:
            taint_v, tol_v = int(taint.value), int(tol.value)
        except ValueError:
            return False
        return taint_v > tol_v if op == "Gt" else taint_v < tol_v
    return False


def untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers (`FindMatchingUntoleratedTaint`)."""
    for taint in taints:
        if taint.effect not in _SCHEDULING_EFFECTS:
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(req.values) != 1:
            return False
        try:
            have, want = int(value), int(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False  # an empty term selects nothing
    if not all(_requirement_matches(r, node.labels.get(r.key)) for r in term.match_expressions):
        return False
    fields = {"metadata.name": node.name}
    return all(_requirement_matches(r, fields.get(r.key)) for r in term.match_fields)


def matches_affinity(terms: Sequence[NodeSelectorTerm], node: Node) -> bool:
    """Required node affinity: any term matching selects the node (`nodeaffinity.NodeSelector.Match`)."""
    return any(_term_matches(t, node) for t in terms)


def affinity_score(terms: Sequence[PreferredTerm], node: Node) -> int:
    """The summed weight of the preferred terms the node matches (`PreferredSchedulingTerms.Score`);
    terms of weight 0 or without requirements count for nothing."""
    return sum(t.weight for t in terms if t.weight and _term_matches(t.term, node))
