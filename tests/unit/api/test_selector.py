"""webhook.api.selector: metav1.LabelSelector matching, validation and canonical form."""

from __future__ import annotations

import pytest

from webhook.api import fields, selector

NS = "kubernetes.io/metadata.name"


@pytest.mark.parametrize(
    ("sel", "labels", "expected"),
    [
        pytest.param({}, {}, True, id="empty selector matches everything"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True, id="matchLabels subset"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "2"}, False, id="matchLabels wrong value"),
        pytest.param({"matchLabels": {"a": "1"}}, {}, False, id="matchLabels missing key"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True,
                     id="In"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False,
                     id="In needs the key"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True,
                     id="NotIn matches a missing key"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False,
                     id="NotIn"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True, id="Exists"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "x"}, False,
                     id="DoesNotExist"),
        pytest.param(
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1"},
            False,
            id="all requirements must hold",
        ),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, {"a": "1"}, False,
                     id="invalid selector matches nothing"),
    ],
)  # fmt: skip
def test_matches(sel, labels, expected):
    assert selector.matches(sel, labels) is expected


def test_nil_selector_semantics_are_chosen_by_the_caller():
    assert selector.matches(None, {"a": "1"}) is False
    assert selector.matches(None, {"a": "1"}, nil_matches=True) is True


def test_default_managed_jobs_selector_excludes_system_namespaces():
    sel = {"matchExpressions": [{"key": NS, "operator": "NotIn", "values": ["kube-system", "kueue-system"]}]}
    assert not selector.matches(sel, {NS: "kube-system"})
    assert not selector.matches(sel, {NS: "kueue-system"})
    assert selector.matches(sel, {NS: "default"})


@pytest.mark.parametrize(
    ("sel", "messages"),
    [
        pytest.param(None, [], id="nil is valid"),
        pytest.param({}, [], id="empty is valid"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            ["s.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"],
            id="In without values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            ["s.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
             "'DoesNotExist'"],
            id="Exists with values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Foo"}]},
            ['s.matchExpressions[0].operator: Invalid value: "Foo": not a valid selector operator'],
            id="unknown operator",
        ),
    ],
)  # fmt: skip
def test_validate(sel, messages):
    assert [str(e) for e in selector.validate(sel, "s")] == messages


def test_validate_bad_key_and_value():
    errs = selector.validate({"matchLabels": {"a b": "c d"}}, "s")
    assert [e.path for e in errs] == ["s.matchLabels", "s.matchLabels"]
    assert all(e.kind is fields.Kind.INVALID for e in errs)
    assert not selector.is_valid({"matchLabels": {"a b": "c"}})


def test_canonical_uses_go_field_order_and_drops_empty_parts():
    sel = {
        "matchExpressions": (
            {"values": ("x",), "operator": "In", "key": "k"},
            {"key": "e", "operator": "Exists"},
        ),
        "matchLabels": {"b": "2", "a": "1"},
    }
    assert selector.canonical(sel) == {
        "matchLabels": {"a": "1", "b": "2"},
        "matchExpressions": [
            {"key": "k", "operator": "In", "values": ["x"]},
            {"key": "e", "operator": "Exists"},
        ],
    }
    assert list(selector.canonical(sel)) == ["matchLabels", "matchExpressions"]
    assert selector.canonical({}) == {}
