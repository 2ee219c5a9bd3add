"""Usage accounting arithmetic: reservations read from Workloads, ledgers advanced from a watermark."""

from __future__ import annotations

import dataclasses
import itertools
import random as rnd
from typing import Any

import pytest

from tests.builders import T0, make_wl, psa, ts
from webhook.core import usage as u

BASE = int(T0.timestamp())
HOUR = 3600


def key(resource: str = "cpu", flavor: str = "on-demand", **dims: str) -> u.UsageKey:
    values = {"cluster_queue": "cq", "cohort": "", "local_queue": "lq", "namespace": "ns", "priority_class": ""}
    values.update({"user": "", **dims})
    return u.UsageKey(flavor=flavor, resource=resource, **values)


def admitted(name: str, at: float, *, cpu: str = "2", finished: float | None = None, **extra: Any) -> dict[str, Any]:
    b = make_wl(name).request(cpu=cpu).reserve("cq", psa(cpu=("on-demand", cpu)), at=at)
    if finished is not None:
        b.condition("Finished", "True", "Succeeded", "done", at=finished)
    obj = b.obj()
    obj["metadata"].update(extra)
    return obj


def holding(uid: str, start: int, end: int | None, **amounts: int) -> u.Holding:
    return u.Holding(
        uid, f"ns/{uid}", BASE + start, None if end is None else BASE + end, {key(r): v for r, v in amounts.items()}
    )


@pytest.mark.parametrize(
    ("wl", "expected"),
    [
        pytest.param(admitted("a", 10), (10, None), id="open from QuotaReserved"),
        pytest.param(admitted("a", 10, finished=70), (10, 70), id="closed at Finished"),
        pytest.param(admitted("a", 10, deletionTimestamp=ts(40)), (10, 40), id="closed at deletionTimestamp"),
        pytest.param(
            admitted("a", 10, finished=70, deletionTimestamp=ts(90)), (10, 70), id="the first of Finished and deletion"
        ),
        pytest.param(make_wl("a").request(cpu="1").obj(), None, id="pending: no reservation"),
        pytest.param(
            make_wl("a").request(cpu="1").condition("QuotaReserved", "False", "Pending", at=5).obj(),
            None,
            id="evicted: reservation released",
        ),
    ],
)
def test_holding_of(wl, expected):
    held = u.holding_of(wl)
    if expected is None:
        assert held is None
        return
    start, end = expected
    assert (held.start - BASE, None if held.end is None else held.end - BASE) == (start, end)
    assert held.uid == "uid-a" and held.workload == "ns/a"


def test_holding_amounts_per_flavor_and_resource_with_the_workloads_dimensions():
    wl = (
        make_wl("a", "team")
        .queue("main")
        .request(cpu="1")
        .reserve(
            "cq",
            psa("main", 2, cpu=("spot", "1500m"), memory=("spot", "2Gi")),
            psa("workers", 4, cpu=("on-demand", "4"), gpu=("h100", "4")),
            at=0,
        )
        .obj()
    )
    wl["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    wl["metadata"]["annotations"] = {"pykueue.io/submitted-by": "alice"}
    held = u.holding_of(wl, cohort="research")
    dims = {"cluster_queue": "cq", "cohort": "research", "local_queue": "main", "namespace": "team"}
    dims |= {"priority_class": "high", "user": "alice"}
    assert held.amounts == {
        u.UsageKey(**dims, flavor="spot", resource="cpu"): 1500,
        u.UsageKey(**dims, flavor="spot", resource="memory"): 2 * 1024**3,
        u.UsageKey(**dims, flavor="on-demand", resource="cpu"): 4000,
        u.UsageKey(**dims, flavor="h100", resource="nvidia.com/gpu"): 4,
    }


def test_user_is_empty_without_the_submitted_by_annotation():
    held = u.holding_of(admitted("a", 0))
    assert {k.user for k in held.amounts} == {""}


def test_released_at_is_the_time_quota_was_given_back():
    evicted = make_wl("a").condition("QuotaReserved", "False", "Preempted", at=33).obj()
    assert u.released_at(evicted) == BASE + 33
    assert u.released_at(admitted("a", 10)) is None


def test_advance_counts_each_second_from_the_watermark_to_until():
    ledger = u.new_ledger(BASE, HOUR)
    held = [holding("a", 10, 70, cpu=2000), holding("b", 30, None, cpu=500)]
    out = u.advance(ledger, held, BASE + 100)
    assert out.watermark == BASE + 100
    assert out.totals == {key(): 2000 * 60 + 500 * 70}
    assert set(out.running) == {"b"}
    # nothing before the watermark again
    again = u.advance(out, held, BASE + 100)
    assert again is out
    later = u.advance(out, held, BASE + 200)
    assert later.totals == {key(): 2000 * 60 + 500 * 170}


def test_a_start_seen_after_the_write_that_passed_it_counts_from_the_start():
    ledger = u.advance(u.new_ledger(BASE, HOUR), [], BASE + 100)
    late = holding("a", 98, None, cpu=1000)  # stamped at 98, seen after the write up to 100
    out = u.advance(ledger, [late], BASE + 110)
    assert out.totals == {key(): 1000 * 12}
    assert set(out.running) == {"a"}
    assert u.advance(out, [late], BASE + 120).totals == {key(): 1000 * 22}


def test_an_end_seen_after_the_write_that_passed_it_gives_back_what_was_counted_past_it():
    ledger = u.advance(u.new_ledger(BASE, HOUR), [holding("a", 10, None, cpu=1000)], BASE + 100)
    out = u.advance(ledger, [holding("a", 10, 97, cpu=1000)], BASE + 110)
    assert out.totals == {key(): 1000 * 87}
    assert out.running == {}
    # a reservation that ended before the watermark and is not running was counted, or had nothing here
    assert u.advance(out, [holding("a", 10, 97, cpu=1000)], BASE + 120).totals == {key(): 1000 * 87}


def test_advance_stops_at_the_period_end():
    ledger = u.new_ledger(BASE, HOUR)
    out = u.advance(ledger, [holding("a", HOUR - 10, None, cpu=1000)], BASE + HOUR + 500)
    assert out.complete and out.watermark == BASE + HOUR
    assert out.totals == {key(): 1000 * 10}
    assert set(out.running) == {"a"}
    nxt = u.new_ledger(out.end, HOUR, carried=out.running)
    assert u.advance(nxt, [holding("a", HOUR - 10, None, cpu=1000)], BASE + HOUR + 500).totals == {key(): 500 * 1000}


def _exact(holdings, until):
    total = 0
    for h in holdings:
        end = until if h.end is None else min(h.end, until)
        total += max(0, end - h.start) * sum(h.amounts.values())
    return total


@pytest.mark.parametrize("seed", range(20))
def test_any_split_of_time_gives_the_same_totals(seed):
    """Advancing in any steps, across period ends, adds what the holdings held, to the second."""
    r = rnd.Random(seed)
    holdings = []
    for i in range(8):
        start = r.randrange(0, 3 * HOUR)
        end = None if r.random() < 0.3 else start + r.randrange(1, 2 * HOUR)
        holdings.append(holding(f"w{i}", start, end, cpu=r.choice([250, 1000, 4000])))
    until = BASE + 4 * HOUR
    cuts = [*sorted(r.sample(range(BASE + 1, until), 12)), until]
    ledgers = [u.new_ledger(BASE, HOUR)]
    for cut in cuts:
        while True:
            ledgers[-1] = u.advance(ledgers[-1], holdings, cut)
            if not (ledgers[-1].complete and ledgers[-1].end < cut):
                break
            ledgers.append(u.new_ledger(ledgers[-1].end, HOUR, carried=ledgers[-1].running))
    counted = sum(v for ledger in ledgers for v in ledger.totals.values())
    assert counted == _exact(holdings, until)


def test_resolve_closes_what_no_workload_shows_at_its_release_or_the_watermark():
    ledger = u.advance(
        u.new_ledger(BASE, HOUR),
        [holding("evicted", 0, None, cpu=1000), holding("deleted", 0, None, cpu=1000), holding("seen", 0, None, cpu=1)],
        BASE + 100,
    )
    observed = [holding("seen", 0, None, cpu=1)]
    resolved = u.resolve(ledger, observed, {"evicted": BASE + 130})
    ends = {h.uid: h.end for h in resolved.holdings}
    assert ends == {"seen": None, "evicted": BASE + 130, "deleted": BASE + 100}
    assert [h.uid for h in resolved.unknown_end] == ["deleted"]
    out = u.advance(ledger, resolved.holdings, BASE + 200)
    assert out.totals[key()] == 1000 * 100 * 2 + 100 + 1000 * 30 + 100


def test_failover_resumes_from_the_persisted_watermark_without_loss_or_double_count():
    """Leader A persists at 100 and counts on in memory to 150 before it dies; B resumes from the record."""
    wls = [admitted("a", 10, finished=120), admitted("b", 50), admitted("c", 130, finished=140)]
    held = [u.holding_of(w) for w in wls]
    a = u.advance(u.new_ledger(BASE, HOUR), held[:2], BASE + 100)
    record = u.to_record(a)
    u.advance(a, held, BASE + 150)  # never persisted
    b = u.from_record(record)
    assert (b.watermark, b.totals, set(b.running)) == (a.watermark, a.totals, {"uid-a", "uid-b"})
    resolved = u.resolve(b, held, {})
    out = u.advance(b, resolved.holdings, BASE + 200)
    assert out.totals == {key(): 2000 * (110 + 150 + 10)}


def test_record_round_trip():
    ledger = u.advance(
        u.new_ledger(BASE, HOUR), [holding("a", 0, 50, cpu=1500), holding("b", 20, None, cpu=250)], BASE + 60
    )
    record = u.to_record(ledger)
    assert record["metadata"]["name"] == "usage-20250101-000000"
    assert record["apiVersion"] == "pykueue.io/v1alpha1"
    assert record["status"]["watermark"] == "2025-01-01T00:01:00Z"
    assert record["status"]["usage"] == [{**key().to_api(), "resourceSeconds": "85"}]
    back = u.from_record(record)
    assert back.totals == ledger.totals and back.watermark == ledger.watermark
    assert {uid: (h.start, dict(h.amounts)) for uid, h in back.running.items()} == {"b": (BASE + 20, {key(): 250})}


def test_from_record_refuses_a_record_without_a_period():
    with pytest.raises(ValueError, match="bad period"):
        u.from_record({"metadata": {"name": "x"}, "spec": {}})


def test_aggregate_by_any_dimensions_over_whole_periods():
    first = u.advance(u.new_ledger(BASE, HOUR), [holding("a", 0, None, cpu=1000)], BASE + HOUR)
    second = u.advance(u.new_ledger(BASE + HOUR, HOUR), [holding("a", 0, None, cpu=1000)], BASE + 2 * HOUR)
    by_ns = u.aggregate([first, second], ["namespace"])
    assert by_ns == {("ns",): {("on-demand", "cpu"): 2 * 1000 * HOUR}}
    assert u.aggregate([first, second], ["clusterQueue"], since=BASE + HOUR) == {
        ("cq",): {("on-demand", "cpu"): 1000 * HOUR}
    }
    assert u.aggregate([first, second], ["clusterQueue"], until=BASE + HOUR) == {
        ("cq",): {("on-demand", "cpu"): 1000 * HOUR}
    }


def test_period_bounds_and_names_are_aligned_to_the_epoch():
    start, end = u.period_bounds(BASE + 5000, HOUR)
    assert (start - BASE, end - BASE) == (HOUR, 2 * HOUR)
    assert u.record_name(start) == "usage-20250101-010000"
    assert list(itertools.islice(u.DIMENSIONS, 2)) == ["clusterQueue", "cohort"]


@pytest.mark.parametrize("seed", range(20))
def test_events_seen_late_still_give_exact_totals(seed):
    """Starts and ends are seen up to 6 s after their time, writes lag the clock by 2 s: corrected."""
    r = rnd.Random(seed)
    truth = []
    for i in range(10):
        start = r.randrange(0, 2 * HOUR)
        end = None if r.random() < 0.3 else start + r.randrange(8, HOUR)
        truth.append((holding(f"w{i}", start, end, cpu=r.choice([250, 1000])), r.randrange(0, 7), r.randrange(0, 7)))
    until = BASE + 3 * HOUR
    ledgers = [u.new_ledger(BASE, HOUR)]
    for now in range(BASE, until + 20, 5):
        seen = []
        for held, start_delay, end_delay in truth:
            if held.start + start_delay > now:
                continue
            ended = held.end is not None and held.end + end_delay <= now
            seen.append(held if ended else dataclasses.replace(held, end=None))
        while True:
            ledgers[-1] = u.advance(ledgers[-1], seen, min(now - 2, until))
            if not (ledgers[-1].complete and ledgers[-1].end < min(now - 2, until)):
                break
            ledgers.append(u.new_ledger(ledgers[-1].end, HOUR, carried=ledgers[-1].running))
    counted = sum(v for ledger in ledgers for v in ledger.totals.values())
    assert counted == _exact([h for h, _, _ in truth], until)
