"""The usage page's numbers: resource-hours per team and hour from the UsageRecords."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.core import usage
from webhook.core.usage import Ledger, UsageKey
from webhook.dashboard.usage import usage_view

H = 3600
T = 1_764_000_000 - 1_764_000_000 % H  # an hour boundary


def key(ns: str, lq: str = "lq", cq: str = "cq", resource: str = "cpu", flavor: str = "default") -> UsageKey:
    return UsageKey(cq, "", lq, ns, "", "", flavor, resource)


def record(hour: int, totals: dict[UsageKey, int], *, watermark: int | None = None) -> dict[str, Any]:
    start = T + hour * H
    return usage.to_record(Ledger(start, start + H, start + H if watermark is None else watermark, totals))


# Two hours: team-a used 2 cores for the first whole hour (7200 core-seconds) and 1 core the
# second; team-b half a core-hour in the second, on two flavors; team-b also 2 GPU-hours.
RECORDS = [
    record(0, {key("team-a"): 2000 * H}),
    record(
        1,
        {
            key("team-a", "main"): 1000 * H,
            key("team-b", cq="cq-b"): 250 * H,
            key("team-b", cq="cq-b", flavor="spot"): 250 * H,
            key("team-b", cq="cq-b", resource="nvidia.com/gpu", flavor="h100"): 2 * H,
        },
        watermark=T + H + 1800,
    ),
]


@pytest.mark.parametrize(
    ("by", "resource", "totals"),
    [
        pytest.param("namespace", "cpu", (("team-a", 3.0), ("team-b", 0.5)), id="per namespace, flavors summed"),
        pytest.param(
            "localqueue", "cpu", (("team-a/lq", 2.0), ("team-a/main", 1.0), ("team-b/lq", 0.5)), id="per LocalQueue"
        ),
        pytest.param("clusterqueue", "cpu", (("cq", 3.0), ("cq-b", 0.5)), id="per ClusterQueue"),
        pytest.param("namespace", "nvidia.com/gpu", (("team-b", 2.0),), id="another resource"),
        pytest.param("bogus", "bogus", (("team-a", 3.0), ("team-b", 0.5)), id="unknown choices fall back"),
    ],
)
def test_totals(by: str, resource: str, totals: tuple[tuple[str, float], ...]) -> None:
    view = usage_view(RECORDS, by=by, resource=resource, hours=24, now=T + 2 * H)
    assert view.totals == totals
    assert view.resources == ("cpu", "nvidia.com/gpu")
    assert view.covered == "11-24 16:00 to 11-24 17:30 UTC"
    assert "<svg" in view.chart and "<script" not in view.chart


def test_the_span_counts_whole_hours_back_from_now() -> None:
    view = usage_view(RECORDS, by="namespace", resource="cpu", hours=1, now=T + 2 * H)
    assert view.totals == (("team-a", 1.0), ("team-b", 0.5))
    assert view.unit == "cores"
    empty = usage_view([], by="namespace", resource="", hours=24, now=T)
    assert (empty.totals, empty.chart, empty.covered, empty.resource) == ((), "", "", "cpu")


def test_beyond_the_largest_teams_the_rest_is_one_series() -> None:
    many = [record(0, {key(f"ns-{i:02d}"): (i + 1) * 1000 * H for i in range(12)})]
    view = usage_view(many, by="namespace", resource="cpu", hours=24, now=T + H)
    assert [team for team, _ in view.totals][:2] == ["ns-11", "ns-10"] and len(view.totals) == 12
    assert "others" in view.chart and "ns-00" not in view.chart
