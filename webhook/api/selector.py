"""Label selectors, node affinity and taints: matching, validation and canonical JSON form.

Mirrors `k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go` (`LabelSelectorAsSelector`),
`k8s.io/apimachinery/pkg/labels/selector.go` (requirement matching),
`k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go` (`ValidateLabelSelector` with default
options) and the parts of `k8s.io/component-helpers` (nodeaffinity, tolerations) that
`pkg/scheduler/flavorassigner/flavorassigner.go` (`checkFlavorForPodSets`, `flavorSelector`) relies
on, as used by kubernetes-sigs/kueue at commit ff69552e79.

Two forms share one requirement implementation (`Requirement.matches`): the webhook matches the
decoded wire form with `matches`; the admission core parses a selector once with
`parse_label_selector` into a frozen `LabelSelector` and matches that on the hot path.

A selector is the decoded wire form: a mapping with optional `matchLabels` (str -> str) and
`matchExpressions` (list of `{key, operator, values}`). All requirements must hold (logical AND).

Nil selectors differ by caller, so `matches` takes `nil_matches`: Kueue treats a nil
`managedJobsNamespaceSelector` as "every namespace" but a nil ClusterQueue `namespaceSelector` as
"no namespace" (`LabelSelectorAsSelector(nil)` is `labels.Nothing()`). An empty selector `{}` matches
everything in both cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.api import fields

__all__ = [
    "OPERATORS",
    "LabelSelector",
    "Requirement",
    "Taint",
    "Toleration",
    "canonical",
    "find_untolerated_taint",
    "is_valid",
    "matches",
    "matches_flavor_affinity",
    "parse_label_selector",
    "parse_requirements",
    "parse_taint",
    "parse_toleration",
    "validate",
]

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
OPERATORS: tuple[str, ...] = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
"""Operators a label selector allows; node selector terms add `Gt` and `Lt`."""


def _match_labels(selector: Mapping[str, Any]) -> Mapping[str, Any]:
    value = selector.get("matchLabels")
    return value if isinstance(value, Mapping) else {}


def _match_expressions(selector: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    value = selector.get("matchExpressions")
    if not isinstance(value, Sequence) or isinstance(value, str):
        return ()
    return [e for e in value if isinstance(e, Mapping)]


def _values(expr: Mapping[str, Any]) -> Sequence[str]:
    values = expr.get("values")
    if not isinstance(values, Sequence) or isinstance(values, str):
        return ()
    return values


@dataclass(frozen=True, slots=True)
class Requirement:
    """One matchExpression of a label selector or a node selector term.

    Node selector terms also allow `Gt`/`Lt`; a label selector that uses them fails validation
    before it is ever matched.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether the labels satisfy this requirement, with the Kubernetes operator semantics."""
        op = self.operator
        present = self.key in labels
        if op == IN:
            return present and labels[self.key] in self.values
        if op == NOT_IN:
            return not present or labels[self.key] not in self.values
        if op == EXISTS:
            return present
        if op == DOES_NOT_EXIST:
            return not present
        if op in (GT, LT):
            if not present or len(self.values) != 1:
                return False
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == GT else have < want
        return False


def _requirement(expr: Mapping[str, Any]) -> Requirement:
    return Requirement(str(expr.get("key", "")), str(expr.get("operator", "")), tuple(str(v) for v in _values(expr)))


def parse_requirements(raw: object) -> tuple[Requirement, ...]:
    """The matchExpressions of a selector or node selector term (malformed entries skipped)."""
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return ()
    return tuple(_requirement(e) for e in raw if isinstance(e, Mapping))


def matches(
    selector: Mapping[str, Any] | None,
    labels: Mapping[str, str],
    *,
    nil_matches: bool = False,
    validated: bool = False,
) -> bool:
    """Whether `labels` satisfy `selector`.

    `nil_matches` decides the answer for a `None` selector (see the module docstring). A selector that
    `validate` rejects matches nothing, like an unconvertible selector upstream; pass `validated=True`
    for one already checked (the Configuration's, on every webhook request) to skip the check.
    """
    if selector is None:
        return nil_matches
    if not validated and not is_valid(selector):
        return False
    for key, value in _match_labels(selector).items():
        if labels.get(key) != value:
            return False
    return all(_requirement(expr).matches(labels) for expr in _match_expressions(selector))


def is_valid(selector: Mapping[str, Any] | None) -> bool:
    return not validate(selector, "")


def validate(selector: Mapping[str, Any] | None, path: str) -> list[fields.FieldError]:
    """`ValidateLabelSelector(selector, LabelSelectorValidationOptions{}, path)`; `None` is valid.

    The rules live in `fields.validate_label_selector`, shared with the object validators.
    """
    return fields.validate_label_selector(selector, fields.Path(path))


def canonical(selector: Mapping[str, Any]) -> dict[str, Any]:
    """Plain-dict form in Go's JSON field order (empty parts omitted), e.g. for error values or patches."""
    out: dict[str, Any] = {}
    labels = _match_labels(selector)
    if labels:
        out["matchLabels"] = {k: labels[k] for k in sorted(labels)}
    exprs = _match_expressions(selector)
    if exprs:
        rendered = []
        for expr in exprs:
            item: dict[str, Any] = {"key": expr.get("key", ""), "operator": expr.get("operator", "")}
            values = _values(expr)
            if values:
                item["values"] = list(values)
            rendered.append(item)
        out["matchExpressions"] = rendered
    return out


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed metav1.LabelSelector; the empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Every matchLabel and every expression must hold."""
        for k, v in self.match_labels:
            if labels.get(k) != v:
                return False
        return all(r.matches(labels) for r in self.match_expressions)


def parse_label_selector(raw: object) -> LabelSelector | None:
    """None for a missing selector (which, for a ClusterQueue, matches no namespace)."""
    if not isinstance(raw, Mapping):
        return None
    return LabelSelector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in _match_labels(raw).items())),
        match_expressions=parse_requirements(raw.get("matchExpressions")),
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
        str(raw.get("key", "") or ""),
        str(raw.get("operator", "") or "Equal"),
        str(raw.get("value", "") or ""),
        str(raw.get("effect", "") or ""),
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
