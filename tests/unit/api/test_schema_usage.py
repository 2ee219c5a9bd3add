"""Tests for webhook/api/schema_usage.py: the UsageRecord CRD of our own group."""

from __future__ import annotations

from tests.unit.api.test_schema import structural_errors, validate
from webhook.api import schema, schema_usage
from webhook.core import usage


def _schema() -> dict:
    return schema_usage.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_group_is_ours_and_the_crd_is_installed_with_kueues():
    crd = schema_usage.crd()
    assert crd["spec"]["group"] == "pykueue.io" != schema.GROUP
    assert crd["metadata"]["name"] == "usagerecords.pykueue.io"
    assert crd["spec"]["scope"] == "Cluster"
    assert crd in schema.crds()
    assert "pykueue.io_usagerecords.yaml" in schema.render_manifests()


def test_schema_is_structural():
    assert structural_errors(_schema()) == []


def test_what_the_leader_writes_validates():
    key = usage.UsageKey("cq", "pool", "lq", "ns", "high", "", "on-demand", "memory")
    held = usage.Holding("u1", "ns/wl", 1_700_000_000, None, {key: 2**30})
    ledger = usage.Ledger(1_700_000_000 - 100, 1_700_003_500, 1_700_000_050, {key: 50 * 2**30}, {"u1": held})
    record = usage.to_record(ledger)
    assert validate(_schema(), record) == []
    assert record["status"]["running"][0]["amounts"] == {"0": "1Gi"}
