"""`metav1.LabelSelector`: matching, validation and canonical JSON form.

Mirrors `k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go` (`LabelSelectorAsSelector`),
`k8s.io/apimachinery/pkg/labels/selector.go` (requirement matching) and
`k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go` (`ValidateLabelSelector` with default
options), as used by kubernetes-sigs/kueue at commit ff69552e79.

A selector is the decoded wire form: a mapping with optional `matchLabels` (str -> str) and
`matchExpressions` (list of `{key, operator, values}`). All requirements must hold (logical AND).

Nil selectors differ by caller, so `matches` takes `nil_matches`: Kueue treats a nil
`managedJobsNamespaceSelector` as "every namespace" but a nil ClusterQueue `namespaceSelector` as
"no namespace" (`LabelSelectorAsSelector(nil)` is `labels.Nothing()`). An empty selector `{}` matches
everything in both cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api import fields

__all__ = ["OPERATORS", "canonical", "is_valid", "matches", "validate"]

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
OPERATORS: tuple[str, ...] = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


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


def _requirement_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = expr.get("key", "")
    op = expr.get("operator", "")
    values = _values(expr)
    if op == IN:
        return key in labels and labels[key] in values
    if op == NOT_IN:
        return key not in labels or labels[key] not in values
    if op == EXISTS:
        return key in labels
    if op == DOES_NOT_EXIST:
        return key not in labels
    return False


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
    return all(_requirement_matches(expr, labels) for expr in _match_expressions(selector))


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
