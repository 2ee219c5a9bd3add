"""`kubectl kueue usage`: UsageRecords summed per dimension, in resource-hours, with prices."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.unit.cli.fake_api import NOW, FakeApi
from webhook.cli import usage as cli_usage
from webhook.cli.api import CliError
from webhook.core import usage

HOUR = 3600
START = int(NOW.timestamp()) - 3 * HOUR  # three complete periods before NOW


def key(cq: str, ns: str, resource: str = "cpu", flavor: str = "on-demand", user: str = "") -> usage.UsageKey:
    return usage.UsageKey(cq, "pool", "main", ns, "", user, flavor, resource)


def record(period: int, totals: dict[usage.UsageKey, int]) -> dict:
    start = START + period * HOUR
    return usage.to_record(usage.Ledger(start, start + HOUR, start + HOUR, totals))


def api() -> FakeApi:
    records = [
        record(0, {key("team-a", "a"): 1000 * 2 * HOUR, key("team-b", "b", user="bob"): 500 * HOUR}),
        record(1, {key("team-a", "a"): 1000 * HOUR, key("team-a", "a", "nvidia.com/gpu", "h100"): 4 * HOUR}),
        record(2, {key("team-a", "a", "memory"): 8 * 1024**3 * HOUR}),
    ]
    out = FakeApi()
    for r in records:
        out.add(r, plural="usagerecords")
    return out


def test_table_by_cluster_queue(run):
    result = run(api(), "usage")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "CLUSTERQUEUE   FLAVOR      RESOURCE         RESOURCE-HOURS   UNIT",
        "team-a         h100        nvidia.com/gpu   4.00             units",
        "team-a         on-demand   cpu              3.00             cores",
        "team-a         on-demand   memory           8.00             GiB",
        "team-b         on-demand   cpu              0.50             cores",
    ]
    assert "Covered: 2025-06-01T09:00:00Z to 2025-06-01T12:00:00Z" in result.err


def test_by_namespace_and_user_in_csv_with_prices(run):
    result = run(
        api(), "usage", "--by", "namespace,user", "-o", "csv", "--price", "h100:nvidia.com/gpu=3", "--price", "cpu=0.05"
    )
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert [(r["namespace"], r["user"], r["resource"], r["resourceHours"], r["cost"]) for r in rows] == [
        ("a", "", "nvidia.com/gpu", "4.0", "12.0"),  # flavor h100 sorts before on-demand
        ("a", "", "cpu", "3.0", "0.15"),
        ("a", "", "memory", "8.0", ""),
        ("b", "bob", "cpu", "0.5", "0.03"),
    ]


def test_since_until_bounds(run):
    result = run(api(), "usage", "--since", "2025-06-01T10:00:00Z", "--until", "2025-06-01T11:00:00Z", "-o", "json")
    items = json.loads(result.out)["items"]
    assert [(i["flavor"], i["resource"], i["resourceHours"]) for i in items] == [
        ("h100", "nvidia.com/gpu", 4.0),
        ("on-demand", "cpu", 1.0),
    ]


def test_namespace_filter(run):
    result = run(api(), "usage", "-n", "b", "-o", "json")
    assert [(i["clusterQueue"], i["resourceHours"]) for i in json.loads(result.out)["items"]] == [("team-b", 0.5)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--by", "planet"], "invalid --by 'planet'", id="unknown dimension"),
        pytest.param(["--since", "yesterday"], "invalid time 'yesterday'", id="bad time"),
        pytest.param(["--price", "gpu"], "invalid --price 'gpu'", id="price without a value"),
    ],
)
def test_errors(run, args, message):
    result = run(api(), "usage", *args)
    assert result.code == 1
    assert message in result.err


def test_parse_price_any_flavor():
    assert cli_usage.parse_price(["*:cpu=1.5", "spot:cpu=0.5", "memory=0.01"]) == {
        ("*", "cpu"): 1.5,
        ("spot", "cpu"): 0.5,
        ("*", "memory"): 0.01,
    }
    with pytest.raises(CliError):
        cli_usage.parse_price(["cpu=-1"])
