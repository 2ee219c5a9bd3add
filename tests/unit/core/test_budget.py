"""Budget arithmetic: periods, spend from ledgers and reservations, commitments, and the check's verdict."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import pytest

from webhook.core import budget as b
from webhook.core import usage as u

HOUR = 3600


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def key(resource: str = "cpu", flavor: str = "on-demand", **dims: str) -> u.UsageKey:
    values = {"cluster_queue": "cq", "cohort": "co", "local_queue": "lq", "namespace": "ns", "priority_class": ""}
    values.update({"user": "", **dims})
    return u.UsageKey(flavor=flavor, resource=resource, **values)


def budget_obj(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "clusterQueue": "cq",
        "period": {"every": "PT60S"},
        "limit": {"resourceHours": {"cpu": "1"}},
    }
    base.update(spec)
    return {"metadata": {"name": "team"}, "spec": base}


def held(uid: str, start: int, end: int | None, amounts: dict[u.UsageKey, int]) -> u.Holding:
    return u.Holding(uid, f"ns/{uid}", start, end, amounts)


# == parsing =========================================================================================


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("PT60S", 60, id="seconds"),
        pytest.param("PT1H30M", 5400, id="hours and minutes"),
        pytest.param("P7D", 7 * 86400, id="days"),
        pytest.param("P2W", 14 * 86400, id="weeks"),
        pytest.param("P1DT1S", 86401, id="days and seconds"),
    ],
)
def test_parse_duration(text, seconds):
    assert b.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "P", "PT", "60s", "P1M", "PT0S", "P1DT"])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError, match="duration"):
        b.parse_duration(text)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"cohort": "co"}, "exactly one of clusterQueue, cohort, localQueue, namespace", id="two targets"),
        pytest.param({"period": {}}, "spec.period: exactly one of calendar, every, rolling", id="no period"),
        pytest.param(
            {"period": {"calendar": "Daily"}}, 'spec.period.calendar: Unsupported value: "Daily"', id="bad calendar"
        ),
        pytest.param({"period": {"every": "60s"}}, "spec.period.every: '60s' is not a duration", id="bad duration"),
        pytest.param({"limit": {"cost": "10"}}, "spec.prices: a cost limit needs prices", id="cost without prices"),
        pytest.param(
            {"limit": {"cost": "10", "resourceHours": {"cpu": "1"}}},
            "spec.limit: exactly one of resourceHours, cost",
            id="both limits",
        ),
        pytest.param({"runningWorkloads": "Kill"}, 'spec.runningWorkloads: Unsupported value: "Kill"', id="bad policy"),
    ],
)
def test_parse_budget_refuses(spec, message):
    with pytest.raises(b.BudgetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        b.parse_budget(budget_obj(**spec))


def test_parse_budget_lists_every_problem():
    with pytest.raises(b.BudgetError) as info:
        b.parse_budget(budget_obj(period={}, defaultRuntime="soon"))
    assert str(info.value).count(";") == 1


def test_parse_budget_reads_limits_in_resource_seconds_and_prices():
    parsed = b.parse_budget(
        budget_obj(
            limit={"cost": "12.50"},
            prices=[
                {"flavor": "h100", "resource": "nvidia.com/gpu", "perHour": "3"},
                {"resource": "cpu", "perHour": "0.04"},
            ],
            defaultRuntime="PT1H",
            runningWorkloads="Evict",
        )
    )
    assert parsed.limits == {"cost": Fraction(25, 2)}
    assert parsed.prices == {("h100", "nvidia.com/gpu"): 3, ("*", "cpu"): Fraction(1, 25)}
    assert (parsed.default_runtime, parsed.evict_running) == (3600, True)
    assert b.parse_budget(budget_obj(limit={"resourceHours": {"cpu": "500m", "memory": "2Gi"}})).limits == {
        "cpu": 500 * HOUR,
        "memory": 2 * 1024**3 * HOUR,
    }


# == periods =========================================================================================


@pytest.mark.parametrize(
    ("period", "now", "window"),
    [
        pytest.param(
            {"every": "PT60S"}, "2026-11-28T05:00:30", ("2026-11-28T05:00:00", "2026-11-28T05:01:00"), id="every"
        ),
        pytest.param(
            {"calendar": "Monthly"}, "2026-02-14T10:00:00", ("2026-02-01T00:00:00", "2026-03-01T00:00:00"), id="monthly"
        ),
        pytest.param(
            {"calendar": "Monthly"},
            "2026-12-31T23:59:59",
            ("2026-12-01T00:00:00", "2027-01-01T00:00:00"),
            id="december",
        ),
        pytest.param(
            {"calendar": "Weekly"}, "2026-11-28T05:00:00", ("2026-11-23T00:00:00", "2026-11-30T00:00:00"), id="weekly"
        ),
        pytest.param(
            {"calendar": "Weekly"}, "2026-11-23T00:00:00", ("2026-11-23T00:00:00", "2026-11-30T00:00:00"), id="monday"
        ),
        pytest.param({"rolling": "P1D"}, "2026-11-28T05:00:00", ("2026-11-27T05:00:00", None), id="rolling"),
    ],
)
def test_window(period, now, window):
    start, reset = b.parse_budget(budget_obj(period=period)).period.window(at(now))
    assert (start, reset) == (at(window[0]), None if window[1] is None else at(window[1]))


# == spend ===========================================================================================

T = at("2026-11-28T05:00:00")  # an hour boundary
CPU = {key(): 1000}  # one core


@pytest.mark.parametrize(
    ("ledgers", "holdings", "start", "now", "expected"),
    [
        pytest.param(
            [], [held("a", T + 10, T + 40, CPU)], T, T + 60, 30_000, id="window inside a period: reservations"
        ),
        pytest.param(
            [], [held("a", T - 30, None, CPU)], T, T + 60, 60_000, id="open reservation from the window start"
        ),
        pytest.param(
            [u.Ledger(T, T + HOUR, T + 50, {key(): 40_000})],
            [held("a", T + 20, None, CPU)],
            T,
            T + 60,
            40_000 + 10_000,
            id="a period's totals to its watermark, then reservations",
        ),
        pytest.param(
            [u.Ledger(T - HOUR, T, T, {key(): 9_000_000}), u.Ledger(T, T + HOUR, T + 60, {key(): 60_000})],
            [],
            T,
            T + 60,
            60_000,
            id="periods before the window do not count",
        ),
        pytest.param(
            [u.Ledger(T, T + HOUR, T + HOUR, {key(): 100_000})],
            [held("a", T - 100, T + 50, CPU)],
            T - 30,
            T + HOUR,
            100_000 + 30_000,
            id="rolling window: the part before the first period from reservations",
        ),
        pytest.param(
            [u.Ledger(T, T + HOUR, T + 60, {key(): 60_000, key(cluster_queue="other"): 99_000})],
            [held("b", T, None, {key(cluster_queue="other"): 1000})],
            T,
            T + 60,
            60_000,
            id="rows of other queues do not count",
        ),
    ],
)
def test_spent(ledgers, holdings, start, now, expected):
    bud = b.parse_budget(budget_obj())
    assert b.spent(bud, ledgers, holdings, start, now) == ({"cpu": expected} if expected else {})


@pytest.mark.parametrize(
    ("target", "row", "covered"),
    [
        pytest.param({"clusterQueue": "cq"}, key(), True, id="cluster queue"),
        pytest.param({"clusterQueue": "cq"}, key(cluster_queue="x"), False, id="other cluster queue"),
        pytest.param({"cohort": "co"}, key(cluster_queue="x"), True, id="cohort"),
        pytest.param({"localQueue": {"namespace": "ns", "name": "lq"}}, key(), True, id="local queue"),
        pytest.param({"localQueue": {"namespace": "other", "name": "lq"}}, key(), False, id="same name elsewhere"),
        pytest.param({"namespace": "ns"}, key(), True, id="namespace"),
    ],
)
def test_targets(target, row, covered):
    spec = {"clusterQueue": None, **target}
    bud = b.parse_budget(budget_obj(**spec))
    assert bud.target.covers(row) is covered


def test_cost_charges_priced_flavors_per_hour_of_a_core_or_gib():
    bud = b.parse_budget(
        budget_obj(
            limit={"cost": "100"},
            prices=[
                {"flavor": "h100", "resource": "nvidia.com/gpu", "perHour": "3"},
                {"resource": "memory", "perHour": "0.5"},
            ],
        )
    )
    amounts = {key("nvidia.com/gpu", "h100"): 2, key("memory"): 4 * 1024**3, key("cpu"): 8000}
    assert b.charge(bud, amounts, HOUR) == {"cost": Fraction(2 * 3 + 4 * 0.5)}


def test_committed_counts_what_running_reservations_still_use():
    bud = b.parse_budget(budget_obj(defaultRuntime="PT100S"))
    running = [
        b.Running(held("a", T, None, CPU), 60, T),  # 30 s left at T+30
        b.Running(held("b", T, None, CPU), None, T),  # the default: 70 s left
        b.Running(held("c", T - 200, None, CPU), 60, T - 200),  # over its time: nothing more
        b.Running(held("d", T, T + 10, CPU), 60, T),  # ended
        b.Running(held("e", T - 50, None, CPU), 60, T),  # waited 50 s on a check: runs from admission
    ]
    assert b.committed(bud, running, T + 30) == {"cpu": 130_000}


# == verdicts =========================================================================================


def st(spent: int, committed: int = 0, **spec: Any) -> b.Standing:
    bud = b.parse_budget(budget_obj(**spec))
    start, reset = bud.period.window(T + 30)
    return b.Standing(bud, T + 30, start, reset, {"cpu": Fraction(spent)}, {"cpu": Fraction(committed)})


@pytest.mark.parametrize(
    ("standing", "runtime", "ready", "message"),
    [
        pytest.param(st(0), 60, True, 'budget "team" (ClusterQueue cq): fits, 1 core-hours of cpu left', id="fits"),
        pytest.param(
            st(HOUR * 1000 - 30_000),
            60,
            False,
            'budget "team" (ClusterQueue cq): 0.0083 core-hours of cpu left of 1 core-hours of cpu, this Workload needs '
            "0.0167 core-hours of cpu; resets at 2026-11-28T05:01:00Z",
            id="short: left, limit, need and reset",
        ),
        pytest.param(
            st(HOUR * 1000 - 60_000, 31_000),
            30,
            False,
            None,
            id="committed counts",
        ),
        pytest.param(
            st(HOUR * 1000 - 60_000),
            60,
            True,
            None,
            id="exactly the rest fits",
        ),
        pytest.param(
            st(0),
            None,
            False,
            'budget "team" (ClusterQueue cq): the Workload has no maximumExecutionTimeSeconds and the budget no '
            "defaultRuntime: its cost cannot be known",
            id="no runtime",
        ),
        pytest.param(st(0, defaultRuntime="PT10M"), None, True, None, id="default runtime"),
        pytest.param(
            st(HOUR * 1000, period={"rolling": "P1D"}),
            60,
            False,
            'budget "team" (ClusterQueue cq): 0 core-hours of cpu left of 1 core-hours of cpu, this Workload needs '
            "0.0167 core-hours of cpu; rolling window of P1D: frees as older usage leaves it",
            id="rolling",
        ),
    ],
)
def test_decide(standing, runtime, ready, message):
    verdict = b.decide(standing, CPU, runtime)
    assert verdict.ready is ready
    if message is not None:
        assert verdict.message == message


def test_status_and_percent():
    standing = st(HOUR * 1000 // 2, HOUR * 1000 * 2 // 5)
    assert standing.used_percent() == 90
    assert not standing.exhausted()
    assert b.to_status(standing) == {
        "periodStart": "2026-11-28T05:00:00Z",
        "resetAt": "2026-11-28T05:01:00Z",
        "usedPercent": 90,
        "lines": [
            {
                "resource": "cpu",
                "unit": "core-hours",
                "limit": "1",
                "spent": "0.5",
                "committed": "0.4",
                "remaining": "0.1",
            }
        ],
    }
    assert st(HOUR * 1000).exhausted()
