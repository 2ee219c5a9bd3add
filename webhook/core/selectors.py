"""Label selectors, node affinity and taint matching over plain values.

Mirrors the parts of `k8s.io/component-helpers` (nodeaffinity, tolerations) and
`k8s.io/apimachinery/pkg/labels` that `pkg/scheduler/flavorassigner/flavorassigner.go`
(`checkFlavorForPodSets`, `flavorSelector`) and `pkg/workload/workload.go` (namespaceSelector)
rely on (upstream commit ff69552e79).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "LabelSelector",
    "Requirement",
    "Taint",
    "Toleration",
    "find_untolerated_taint",
    "matches_flavor_affinity",
    "parse_label_selector",
    "parse_taint",
    "parse_toleration",
]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One matchExpression (label selector or node selector term)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether the labels satisfy this requirement, with the Kubernetes operator semantics."""
        op = self.operator
        present = self.key in labels
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt"):
            if not present or len(self.values) != 1:
                return False
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector; the empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Every matchLabel and every expression must hold."""
        for k, v in self.match_labels:
            if labels.get(k) != v:
                return False
        return all(r.matches(labels) for r in self.match_expressions)


def _requirements(raw: object) -> tuple[Requirement, ...]:
    if not isinstance(raw, list):
        return ()
    out = []
    for e in raw:
        if isinstance(e, dict):
            out.append(Requirement(str(e.get("key", "")), str(e.get("operator", "")), tuple(str(v) for v in e.get("values") or ())))
    return tuple(out)


def parse_label_selector(raw: object) -> LabelSelector | None:
    """None for a missing selector (which, for a ClusterQueue, matches no namespace)."""
    if not isinstance(raw, dict):
        return None
    ml = raw.get("matchLabels") or {}
    return LabelSelector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in ml.items())),
        match_expressions=_requirements(raw.get("matchExpressions")),
    )


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint as a ResourceFlavor declares it."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        # Go prints a corev1.Taint value with %s as its fields in braces; TimeAdded is nil.
        return f"{{{self.key} {self.value} {self.effect} <nil>}}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod or flavor toleration."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Same rules as corev1 `Toleration.ToleratesTaint`."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


def parse_taint(raw: Mapping[str, object]) -> Taint:
    """Taint from its JSON form."""
    return Taint(str(raw.get("key", "")), str(raw.get("value", "") or ""), str(raw.get("effect", "")))


def parse_toleration(raw: Mapping[str, object]) -> Toleration:
    """Toleration from its JSON form."""
    return Toleration(
        str(raw.get("key", "") or ""), str(raw.get("operator", "") or "Equal"), str(raw.get("value", "") or ""), str(raw.get("effect", "") or "")
    )


def find_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """First NoSchedule/NoExecute taint that no toleration covers (PreferNoSchedule is ignored)."""
    for t in taints:
        if t.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tol.tolerates(t) for tol in tolerations):
            return t
    return None


def matches_flavor_affinity(
    node_selector: Mapping[str, str],
    required_terms: Sequence[Sequence[Requirement]],
    flavor_labels: Mapping[str, str],
) -> bool:
    """Pod's nodeSelector and required affinity, restricted to the label keys the flavor defines.

    Keys the flavor does not define are dropped; a term left empty makes the whole affinity match,
    as in upstream `flavorSelector`.
    """
    for k, v in node_selector.items():
        if k in flavor_labels and flavor_labels[k] != v:
            return False
    terms: list[list[Requirement]] = []
    for term in required_terms:
        kept = [r for r in term if r.key in flavor_labels]
        if not kept:
            terms = []
            break
        terms.append(kept)
    if not terms:
        return True
    return any(all(r.matches(flavor_labels) for r in term) for term in terms)
