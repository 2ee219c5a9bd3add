"""The leader's UsageRecords: written from Workload events, resumed by the next leader from the newest."""

from __future__ import annotations

import threading
from typing import Any

import orjson

from tests.builders import T0, make_cq, make_wl, psa, ts
from tests.unit.fake_kube import FakeKube
from webhook.api import schema_usage
from webhook.core import usage as u
from webhook.kube import object_path
from webhook.worker.store import Store
from webhook.worker.usage import IDLE_S, RECORDS, SETTLE_S, WRITE_BYTES_PER_S, UsageAccountant

BASE = int(T0.timestamp())
HOUR = 3600


class Clock:
    def __init__(self, at: int = 0) -> None:
        self.now = BASE + at

    def __call__(self) -> float:
        return float(self.now)

    def at(self, seconds: int) -> None:
        self.now = BASE + seconds


def accountant(kube: FakeKube, clock: Clock, store: Store | None = None) -> UsageAccountant:
    return UsageAccountant(kube, store or Store(), stop=threading.Event(), period_s=HOUR, lag_s=0, clock=clock)


def running(name: str, at: int, cpu: str = "2") -> dict[str, Any]:
    return make_wl(name).request(cpu=cpu).reserve("cq", psa(cpu=("on-demand", cpu)), at=at).obj()


def finished(wl: dict[str, Any], at: int) -> dict[str, Any]:
    out = {**wl, "status": {**wl["status"], "conditions": [*wl["status"]["conditions"]]}}
    out["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "", "lastTransitionTime": ts(at)}
    )
    return out


def evicted(wl: dict[str, Any], at: int) -> dict[str, Any]:
    out = {**wl, "status": {"conditions": []}}
    out["status"]["conditions"] = [
        {"type": "QuotaReserved", "status": "False", "reason": "Preempted", "message": "", "lastTransitionTime": ts(at)}
    ]
    return out


def cpu_seconds(kube: FakeKube) -> dict[str, int]:
    """Record name → milli-CPU-seconds it holds."""
    out = {}
    for path, obj in sorted(kube.objects.items()):
        if path.startswith(RECORDS):
            out[obj["metadata"]["name"]] = sum(u.from_record(obj).totals.values())
    return out


def record(kube: FakeKube, start: int = 0) -> u.Ledger:
    return u.from_record(kube.objects[f"{RECORDS}/{u.record_name(BASE + start)}"])


def test_the_records_path_is_the_crds():
    assert object_path(schema_usage.API_VERSION, schema_usage.PLURAL, None) == RECORDS


def test_a_finished_workload_counts_from_quota_reserved_to_finished():
    kube, clock = FakeKube(), Clock(5)
    acc = accountant(kube, clock)
    wl = running("a", 10)
    acc.on_event("workloads", "ADDED", wl)
    acc.load()
    acc.flush()
    assert record(kube).watermark == BASE + 5
    clock.at(100)
    acc.on_event("workloads", "MODIFIED", finished(wl, 70))
    acc.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 60}
    assert record(kube).running == {}


def test_cohort_comes_from_the_cluster_queue():
    kube, clock, store = FakeKube(), Clock(100), Store()
    store.put("clusterqueues", make_cq("cq").cohort("research").obj())
    acc = accountant(kube, clock, store)
    acc.on_event("workloads", "ADDED", finished(running("a", 10), 20))
    acc.load()
    acc.flush()
    assert {k.cohort for k in record(kube).totals} == {"research"}


def test_a_new_leader_resumes_from_the_watermark():
    """A persists at 50 and dies; what happened afterwards (a finish, an admission) B counts from the objects."""
    kube, clock = FakeKube(), Clock(50)
    a = accountant(kube, clock)
    wl1, wl2 = running("a", 10), running("b", 20, cpu="1")
    for wl in (wl1, wl2):
        a.on_event("workloads", "ADDED", wl)
    a.load()
    a.flush()
    # while no leader runs: a finishes at 80 (on its own Job), c is already admitted (it cannot be, but the
    # record must not care who set the times), and b goes on
    clock.at(200)
    b = accountant(kube, clock)
    for wl in (finished(wl1, 80), wl2, running("c", 150, cpu="4")):
        b.on_event("workloads", "ADDED", wl)
    b.load()
    b.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 70 + 1000 * 180 + 4000 * 50}


def test_an_eviction_no_leader_saw_closes_at_its_release_from_the_records_amounts():
    kube, clock = FakeKube(), Clock(50)
    a = accountant(kube, clock)
    wl = running("a", 10)
    a.on_event("workloads", "ADDED", wl)
    a.load()
    a.flush()
    clock.at(200)
    b = accountant(kube, clock)
    b.on_event("workloads", "ADDED", evicted(wl, 90))  # status.admission is gone with the reservation
    b.load()
    b.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 80}
    assert record(kube).running == {}


def test_deleted_while_no_leader_ran_is_counted_to_the_watermark_only():
    kube, clock = FakeKube(), Clock(50)
    a = accountant(kube, clock)
    a.on_event("workloads", "ADDED", running("a", 10))
    a.load()
    a.flush()
    clock.at(200)
    b = accountant(kube, clock)
    b.load()
    b.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 40}


def test_live_eviction_and_readmission_count_both_reservations():
    kube, clock = FakeKube(), Clock(0)
    acc = accountant(kube, clock)
    wl = running("a", 10)
    acc.on_event("workloads", "ADDED", wl)
    acc.load()
    acc.on_event("workloads", "MODIFIED", evicted(wl, 30))
    again = running("a", 60)
    acc.on_event("workloads", "MODIFIED", again)
    acc.on_event("workloads", "DELETED", {**finished(again, 100), "metadata": {**again["metadata"]}})
    clock.at(300)
    acc.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * (20 + 40)}


def test_deletion_ends_an_open_reservation_at_the_deletion_timestamp():
    kube, clock = FakeKube(), Clock(0)
    acc = accountant(kube, clock)
    wl = running("a", 10)
    acc.on_event("workloads", "ADDED", wl)
    acc.load()
    gone = {**wl, "metadata": {**wl["metadata"], "deletionTimestamp": ts(25)}}
    acc.on_event("workloads", "DELETED", gone)
    clock.at(300)
    acc.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 15}


def test_periods_no_leader_saw_are_written_in_order_each_complete():
    kube, clock = FakeKube(), Clock(HOUR - 100)
    a = accountant(kube, clock)
    wl = running("a", HOUR - 200, cpu="1")
    a.on_event("workloads", "ADDED", wl)
    a.load()
    a.flush()
    clock.at(3 * HOUR + 10)
    b = accountant(kube, clock)
    b.on_event("workloads", "ADDED", finished(wl, 2 * HOUR + 100))
    b.load()
    b.flush()
    assert cpu_seconds(kube) == {
        "usage-20250101-000000": 1000 * 200,
        "usage-20250101-010000": 1000 * HOUR,
        "usage-20250101-020000": 1000 * 100,
        "usage-20250101-030000": 0,
    }
    assert [ledger.complete for ledger in map(u.from_record, _records(kube))] == [True, True, True, False]


def _records(kube: FakeKube) -> list[dict[str, Any]]:
    return [obj for path, obj in sorted(kube.objects.items()) if path.startswith(RECORDS)]


def test_a_conflicting_write_is_read_again_and_not_counted_twice():
    """Two writers on one record (a deposed leader's write raced ours): the loser starts from the winner's."""
    kube, clock = FakeKube(), Clock(0)
    wl = running("a", 0)
    a, b = accountant(kube, clock), accountant(kube, clock)
    for acc in (a, b):
        acc.on_event("workloads", "ADDED", wl)
        acc.load()
    clock.at(100)
    a.flush()  # creates the record up to 100
    b.flush()  # its create conflicts: it reads a's record
    assert b.metric_samples() == [(("cq", "", "lq", "ns", "", "on-demand", "cpu"), 2.0 * 100)]
    clock.at(150)
    b.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 150}


def test_no_records_and_no_crd_yet_start_from_this_period():
    kube, clock = FakeKube(), Clock(HOUR + 30)
    acc = accountant(kube, clock)
    acc.on_event("workloads", "ADDED", running("a", HOUR - 60))
    acc.load()
    acc.flush()
    # what was held before this period is not invented from nothing
    assert cpu_seconds(kube) == {"usage-20250101-010000": 2000 * 30}


def test_writes_are_one_per_flush():
    kube, clock = FakeKube(), Clock(0)
    acc = accountant(kube, clock)
    acc.on_event("workloads", "ADDED", running("a", 0))
    acc.load()
    for t in range(1, 6):
        clock.at(t * 10)
        acc.flush()
    writes = [call for call in kube.calls if call[0] in ("POST", "PUT")]
    assert len(writes) == 5
    clock.at(50)
    acc.flush()  # nothing new: no write
    assert len([call for call in kube.calls if call[0] in ("POST", "PUT")]) == 5


def test_a_large_record_is_written_less_often():
    """Each write sends the whole record: a small one may go every `settle_s`, one of thousands of
    rows (many queues) waits for its size at WRITE_BYTES_PER_S."""
    kube, clock = FakeKube(), Clock(0)
    acc = accountant(kube, clock)
    acc.on_event("workloads", "ADDED", running("a", 0))
    acc.load()
    clock.at(10)
    acc.flush()
    assert acc.pause_s() == SETTLE_S
    for i in range(2000):
        wl = make_wl(f"w{i}").queue(f"lq{i}").request(cpu="1").reserve(f"cq{i}", psa(cpu=("on-demand", "1")), at=10)
        acc.on_event("workloads", "ADDED", wl.obj())
    clock.at(20)
    acc.flush()
    (name,) = [p for p in kube.objects if p.startswith(RECORDS)]
    size = len(orjson.dumps(kube.objects[name]))
    assert size > 2 * WRITE_BYTES_PER_S
    assert 0.9 * size / WRITE_BYTES_PER_S <= acc.pause_s() <= 1.1 * size / WRITE_BYTES_PER_S


def test_the_watermark_lags_the_clock():
    kube, clock = FakeKube(), Clock(100)
    acc = UsageAccountant(kube, Store(), stop=threading.Event(), period_s=HOUR, lag_s=2, clock=clock)
    acc.load()
    acc.flush()
    assert record(kube).watermark == BASE + 98


def test_a_reservation_seen_after_the_write_that_passed_its_start_is_counted_whole():
    kube, clock = FakeKube(), Clock(100)
    acc = accountant(kube, clock)
    acc.load()
    acc.flush()
    acc.on_event("workloads", "ADDED", running("a", 99))  # its admission was stamped at 99
    clock.at(110)
    acc.flush()
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 11}


def test_the_metric_starts_from_every_record_and_counts_on():
    """`pykueue_usage_resource_seconds_total` after a restart: older records, then the newest, then more."""
    kube, clock = FakeKube(), Clock(HOUR - 100)
    a = accountant(kube, clock)
    wl = running("a", HOUR - 200, cpu="1500m")
    a.on_event("workloads", "ADDED", wl)
    a.load()
    clock.at(HOUR + 50)
    a.flush()
    b = accountant(kube, clock)
    b.on_event("workloads", "ADDED", wl)
    b.load()
    labels = ("cq", "", "lq", "ns", "", "on-demand", "cpu")
    assert b.metric_samples() == [(labels, 1.5 * 250)]
    clock.at(HOUR + 60)
    b.flush()
    assert b.metric_samples() == [(labels, 1.5 * 260)]


def test_the_metric_collector_reads_the_leaders_totals():
    from webhook import metrics

    kube, clock = FakeKube(), Clock(100)
    acc = accountant(kube, clock)
    acc.on_event("workloads", "ADDED", finished(running("a", 10), 40))
    acc.load()
    acc.flush()
    metrics.USAGE.use(acc.metric_samples)
    try:
        (family,) = list(metrics.USAGE.collect())
        assert [(s.name, s.labels["cluster_queue"], s.labels["resource"], s.value) for s in family.samples] == [
            ("pykueue_usage_resource_seconds_total", "cq", "cpu", 60.0)
        ]
    finally:
        metrics.USAGE.use(None)


def test_an_idle_cluster_writes_its_watermark_rarely_and_each_period_end():
    kube, clock = FakeKube(), Clock(0)
    acc = accountant(kube, clock)
    acc.load()
    for t in range(10, HOUR + 100, 10):
        clock.at(t)
        acc.flush()
    writes = [call for call in kube.calls if call[0] in ("POST", "PUT")]
    # the create, every IDLE_S, the first period's end, and the next period's create
    assert len(writes) == 1 + (HOUR - 10) // IDLE_S + 1 + 1
    assert record(kube).complete
    acc.on_event("workloads", "ADDED", running("a", HOUR + 100))
    clock.at(HOUR + 110)
    acc.flush()
    assert cpu_seconds(kube)["usage-20250101-010000"] == 2000 * 10


def test_finished_reservations_are_forgotten_once_written_and_never_counted_again():
    """A flush costs what is open or recently ended, not every finished Workload kept in the cluster:
    once a record's watermark passes a finish, the reservation is dropped; the Workload's later events
    (an unrelated status update, its deletion) bring it back ended before the watermark, adding nothing."""
    kube, clock = FakeKube(), Clock(5)
    acc = accountant(kube, clock)
    acc.load()
    wls = [running(f"w{i}", 10) for i in range(50)]
    for wl in wls:
        acc.on_event("workloads", "ADDED", wl)
    clock.at(100)
    for wl in wls:
        acc.on_event("workloads", "MODIFIED", finished(wl, 40))
    acc.flush()
    expected = {"usage-20250101-000000": 50 * 2000 * 30}
    assert cpu_seconds(kube) == expected
    clock.at(200)
    for wl in wls:
        acc.on_event("workloads", "MODIFIED", finished(wl, 40))
    acc.on_event("workloads", "DELETED", finished(wls[0], 40))
    acc.flush()
    assert cpu_seconds(kube) == expected


def test_a_finish_seen_while_its_record_is_written_is_counted_to_the_finish(caplog):
    """Under load a Finished event arrives seconds after its time: during the write whose watermark
    already passed it, which wrote the reservation as still open. It must not be forgotten then:
    the next write gives back what was counted past the finish, with no "end unknown" warning."""

    class SlowKube(FakeKube):
        def __init__(self) -> None:
            super().__init__()
            self.during_write: list[Any] = []

        def replace(self, path: str, body: Any, **kw: Any) -> dict[str, Any]:
            while self.during_write:
                self.during_write.pop()()
            return super().replace(path, body, **kw)

    kube, clock = SlowKube(), Clock(5)
    acc = accountant(kube, clock)
    acc.load()
    wl = running("a", 10)
    acc.on_event("workloads", "ADDED", wl)
    acc.flush()  # creates the record
    clock.at(100)
    kube.during_write.append(lambda: acc.on_event("workloads", "MODIFIED", finished(wl, 40)))
    acc.flush()  # written open up to 100; the finish at 40 arrives meanwhile
    assert list(record(kube).running) == [wl["metadata"]["uid"]]
    clock.at(110)
    with caplog.at_level("WARNING"):
        acc.flush()
    assert [r.getMessage() for r in caplog.records] == []
    assert cpu_seconds(kube) == {"usage-20250101-000000": 2000 * 30}
    assert record(kube).running == {}
