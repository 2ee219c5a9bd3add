"""ResourceFlavor webhook: scenarios of upstream's pkg/webhooks/resourceflavor_webhook_test.go, exact messages."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.admission import resource_flavor
from webhook.admission.context import Context, StaticLookups
from webhook.api.fields import aggregate
from webhook.config import Configuration

from .reviews import crd_defaulted, crd_denial

NAME_PART_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def ctx() -> Context:
    return Context(config=Configuration(), lookups=StaticLookups())


def rf(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "rf"},
        "spec": spec,
    }


CASES = [
    pytest.param(rf(), "", id="empty"),
    pytest.param(
        rf(nodeLabels={"foo": "bar"}, nodeTaints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}]),
        "",
        id="valid",
    ),
    pytest.param(
        rf(nodeLabels={"@abc": "foo"}),
        f'spec.nodeLabels: Invalid value: "@abc": {NAME_PART_REGEX}',
        id="invalid label name",
    ),
    pytest.param(
        rf(nodeLabels={"foo": "@abc"}),
        f'spec.nodeLabels: Invalid value: "@abc": {LABEL_VALUE_REGEX}',
        id="invalid label value",
    ),
    pytest.param(
        rf(nodeLabels={"foo": "a" * 64}),
        f'spec.nodeLabels: Invalid value: "{"a" * 64}": must be no more than 63 bytes',
        id="label value too long",
    ),
    pytest.param(
        rf(nodeLabels={"a/b/c": "x"}),
        "spec.nodeLabels: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', "
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
        "subdomain prefix and '/' (e.g. 'example.com/MyName')",
        id="label key with two slashes",
    ),
    pytest.param(
        rf(nodeLabels={"/x": "y"}),
        'spec.nodeLabels: Invalid value: "/x": prefix part must be non-empty',
        id="label key with empty prefix",
    ),
    pytest.param(
        rf(nodeTaints=[{"key": "@spot", "value": "@true", "effect": "NoSchedule"}]),
        f'[spec.nodeTaints[0].key: Invalid value: "@spot": {NAME_PART_REGEX}, '
        f'spec.nodeTaints[0].value: Invalid value: "@true": {LABEL_VALUE_REGEX}]',
        id="invalid taint key and value",
    ),
    pytest.param(
        rf(nodeTaints=[{"key": "spot", "value": "@" * 64, "effect": "NoSchedule"}]),
        f'spec.nodeTaints[0].value: Invalid value: "{"@" * 64}": must be no more than 63 bytes;{LABEL_VALUE_REGEX}',
        id="taint value messages are joined with a semicolon",
    ),
    pytest.param(
        rf(
            nodeTaints=[
                {"key": "spot", "value": "true", "effect": "NoSchedule"},
                {"key": "spot", "value": "false", "effect": "NoSchedule"},
                {"key": "spot", "value": "true", "effect": "NoExecute"},
            ]
        ),
        'spec.nodeTaints[1]: Duplicate value: {"key":"spot","value":"false","effect":"NoSchedule"}: '
        "taints must be unique by key and effect pair",
        id="taints must be unique by key and effect",
    ),
    pytest.param(
        rf(
            tolerations=[
                {"operator": "Exists"},
                {"key": "@bad", "operator": "Exists", "effect": "NoSchedule"},
            ]
        ),
        f'spec.tolerations[1].key: Invalid value: "@bad": {NAME_PART_REGEX}',
        id="toleration key must be a label name when set",
    ),
]


@pytest.mark.parametrize(("obj", "want"), CASES)
def test_validate_create(obj: dict[str, Any], want: str) -> None:
    errors = resource_flavor.validate_create(obj, ctx())
    assert (aggregate(errors) if errors else "") == want


@pytest.mark.parametrize(("obj", "want"), CASES)
def test_validate_create_through_the_app(obj: dict[str, Any], want: str) -> None:
    assert crd_denial("ResourceFlavor", obj) == want


@pytest.mark.parametrize(("obj", "want"), CASES)
def test_validate_update_checks_the_new_object(obj: dict[str, Any], want: str) -> None:
    errors = resource_flavor.validate_update(rf(), obj, ctx())
    assert (aggregate(errors) if errors else "") == want


@pytest.mark.parametrize(
    ("metadata", "want"),
    [
        pytest.param({"name": "rf"}, ["kueue.x-k8s.io/resource-in-use"], id="adds the finalizer"),
        pytest.param(
            {"name": "rf", "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
            ["kueue.x-k8s.io/resource-in-use"],
            id="keeps a finalizer already there",
        ),
    ],
)
def test_default(metadata: dict[str, Any], want: list[str]) -> None:
    obj = {"metadata": metadata, "spec": {"nodeLabels": {"a": "b"}}}
    resource_flavor.default(obj, ctx())
    assert obj == {"metadata": {**metadata, "finalizers": want}, "spec": {"nodeLabels": {"a": "b"}}}


def test_default_through_the_app_adds_the_finalizer() -> None:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "x"}, "spec": {}}
    assert crd_defaulted("ResourceFlavor", obj)["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
