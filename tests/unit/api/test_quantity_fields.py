"""`webhook/api/quantity_fields.py`: every quantity of the CRDs is listed, and bad ones are found."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from webhook.api import schema
from webhook.api import schema_types as t
from webhook.api.quantity import FORMAT_WRONG, SUFFIX
from webhook.api.quantity_fields import FIELDS, first_invalid


def _quantity_paths(node: dict[str, Any], path: str) -> Iterator[str]:
    if node.get("pattern") == t.QUANTITY_PATTERN:
        yield path
    elif node.get("type") == "object":
        for name, sub in (node.get("properties") or {}).items():
            yield from _quantity_paths(sub, f"{path}.{name}" if path else name)
        if isinstance(node.get("additionalProperties"), dict):
            yield from _quantity_paths(node["additionalProperties"], f"{path}.*")
    elif node.get("type") == "array":
        yield from _quantity_paths(node["items"], f"{path}[]")


@pytest.mark.parametrize("definition", schema.crds(), ids=lambda d: d["spec"]["names"]["plural"])
def test_fields_are_the_crds_quantities(definition: dict[str, Any]) -> None:
    plural = definition["spec"]["names"]["plural"]
    in_schema = {
        path
        for version in definition["spec"]["versions"]
        for path in _quantity_paths(version["schema"]["openAPIV3Schema"], "")
    }
    assert set(FIELDS.get(plural, ())) == in_schema


def _workload(requests: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": requests}}
    return {"spec": {"podSets": [{"name": "main", "template": {"spec": {"containers": [container]}}}]}}


def test_the_first_bad_quantity_is_named_with_gos_error() -> None:
    assert first_invalid("workloads", _workload({"cpu": "1", "memory": "1e1.5"})) == (
        "spec.podSets[0].template.spec.containers[0].resources.requests.memory",
        FORMAT_WRONG,
    )
    cq = {"spec": {"resourceGroups": [{"flavors": [{"resources": [{"name": "cpu", "nominalQuota": "1e"}]}]}]}}
    assert first_invalid("clusterqueues", cq) == ("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", SUFFIX)


@pytest.mark.parametrize("value", ["1e999999999", "500m", 3, None, "2Gi"])
def test_decodable_quantities_pass(value: Any) -> None:
    assert first_invalid("workloads", _workload({"cpu": value})) is None


def test_shapes_that_are_not_the_schemas_are_left_to_the_handlers() -> None:
    assert first_invalid("workloads", {"spec": {"podSets": "x"}}) is None
    assert first_invalid("resourceflavors", {"spec": {"nodeLabels": {"a": "1e1.5"}}}) is None
    assert first_invalid("pods", {"spec": {"overhead": {"cpu": "x"}}}) == ("spec.overhead.cpu", FORMAT_WRONG)
