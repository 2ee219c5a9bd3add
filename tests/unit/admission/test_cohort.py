"""Cohort webhook: scenarios of upstream's pkg/webhooks/cohort_webhook_test.go, exact messages."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.admission import cohort
from webhook.admission.context import Context, StaticLookups
from webhook.api.fields import aggregate
from webhook.config import Configuration

from .reviews import crd_denial

Q0 = "spec.resourceGroups[0].flavors[0].resources[0]"


def ctx() -> Context:
    return Context(config=Configuration(), lookups=StaticLookups())


def quota(name: str, nominal: str, borrowing: str | None = None, lending: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = borrowing
    if lending is not None:
        out["lendingLimit"] = lending
    return out


def make_cohort(*quotas: dict[str, Any], covered: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if quotas:
        names = covered if covered is not None else [q["name"] for q in quotas]
        body["resourceGroups"] = [{"coveredResources": names, "flavors": [{"name": "x86", "resources": list(quotas)}]}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "cohort"},
        "spec": body,
    }


CASES = [
    pytest.param(make_cohort(), "", id="empty cohort"),
    pytest.param(
        make_cohort(quota("cpu", "1", lending="1")),
        f'{Q0}.lendingLimit: Invalid value: "1": must be nil when parent is empty',
        id="flavor quota with lendingLimit and empty parent",
    ),
    pytest.param(
        make_cohort(quota("cpu", "1", borrowing="1")),
        f'{Q0}.borrowingLimit: Invalid value: "1": must be nil when parent is empty',
        id="flavor quota with borrowingLimit and empty parent",
    ),
    pytest.param(
        make_cohort(quota("cpu", "1", borrowing="1", lending="1"), parentName="root"),
        "",
        id="limits are allowed with a parent",
    ),
    pytest.param(
        make_cohort(quota("cpu", "1", lending="5"), parentName="root"),
        "",
        id="lendingLimit may exceed nominalQuota in a cohort",
    ),
    pytest.param(
        make_cohort(quota("cpu", "-1", lending="-2"), parentName="root"),
        f'[{Q0}.nominalQuota: Invalid value: "-1": must be greater than or equal to 0, '
        f'{Q0}.lendingLimit: Invalid value: "-2": must be greater than or equal to 0]',
        id="negative quotas",
    ),
    pytest.param(
        make_cohort(quota("memory", "1Gi"), covered=["cpu"]),
        f'{Q0}.name: Invalid value: "memory": must match the name in coveredResources',
        id="resource names follow coveredResources",
    ),
    pytest.param(
        make_cohort(quota("cpu", "1", lending="1"), fairSharing={"weight": "-1"}),
        '[spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0, '
        f'{Q0}.lendingLimit: Invalid value: "1": must be nil when parent is empty]',
        id="fair sharing is checked before resource groups",
    ),
    pytest.param(
        make_cohort(fairSharing={"weight": "1n"}),
        'spec.fairSharing: Invalid value: "1n": When not 0, weight must be > 10e-9',
        id="fair sharing weight that collapses to zero",
    ),
]


@pytest.mark.parametrize(("obj", "want"), CASES)
def test_validate_create(obj: dict[str, Any], want: str) -> None:
    errors = cohort.validate_create(obj, ctx())
    assert (aggregate(errors) if errors else "") == want


@pytest.mark.parametrize(("obj", "want"), CASES)
def test_validate_create_through_the_app(obj: dict[str, Any], want: str) -> None:
    assert crd_denial("Cohort", obj) == want


@pytest.mark.parametrize(("obj", "want"), CASES)
def test_validate_update_checks_the_new_object(obj: dict[str, Any], want: str) -> None:
    errors = cohort.validate_update(make_cohort(), obj, ctx())
    assert (aggregate(errors) if errors else "") == want


def test_update_ignores_the_old_object() -> None:
    bad = make_cohort(quota("cpu", "1", lending="1"))
    assert cohort.validate_update(bad, make_cohort(), ctx()) == []


def test_no_defaulter() -> None:
    assert not hasattr(cohort, "default")
