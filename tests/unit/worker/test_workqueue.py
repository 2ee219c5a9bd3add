"""The keyed work queue the worker's writers and reconcilers run on: merging, one thread per key,
retries that keep their items, and a clean stop."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence

import pytest

from webhook import kube as k
from webhook.worker.workqueue import Retry, WorkQueue


def wait_until(pred: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_items_added_while_queued_are_merged_in_order() -> None:
    stop = threading.Event()
    seen: list[tuple[str, list[int]]] = []
    q: WorkQueue[int] = WorkQueue("t", lambda key, items: seen.append((key, list(items))), stop=stop)
    for i in range(3):
        q.add("a", i)
    q.add("b", 10)
    q.add("a")  # a bare key adds nothing to the merged items
    q.start()
    wait_until(lambda: len(seen) == 2)
    stop.set()
    assert seen == [("a", [0, 1, 2]), ("b", [10])]


def test_a_key_is_never_handled_by_two_threads_at_once() -> None:
    stop = threading.Event()
    running: set[str] = set()
    overlaps: list[str] = []
    handled: list[int] = []
    lock = threading.Lock()

    def handler(key: str, items: Sequence[int]) -> None:
        with lock:
            if key in running:
                overlaps.append(key)
            running.add(key)
        time.sleep(0.002)
        with lock:
            running.discard(key)
            handled.extend(items)

    q: WorkQueue[int] = WorkQueue("t", handler, workers=4, stop=stop)
    q.start()
    for i in range(300):
        q.add(f"k{i % 3}", i)
        if i % 50 == 0:
            time.sleep(0.01)
    wait_until(lambda: len(handled) == 300)
    stop.set()
    assert overlaps == []
    assert sorted(handled) == list(range(300))


def test_retry_handles_the_key_again_with_its_items() -> None:
    stop = threading.Event()
    calls: list[list[str]] = []

    def handler(key: str, items: Sequence[str]) -> None:
        calls.append(list(items))
        if len(calls) < 3:
            raise Retry(0.01, "conflict")

    q: WorkQueue[str] = WorkQueue("t", handler, stop=stop)
    q.add("a", "write")
    q.start()
    wait_until(lambda: len(calls) == 3)
    stop.set()
    assert calls == [["write"], ["write"], ["write"]]


def test_a_failing_handler_is_retried_and_does_not_stop_the_queue() -> None:
    stop = threading.Event()
    calls: list[str] = []

    def handler(key: str, items: Sequence[str]) -> None:
        calls.append(key)
        if key == "bad" and calls.count("bad") == 1:
            raise ValueError("boom")

    q: WorkQueue[str] = WorkQueue("t", handler, stop=stop)
    q.add("bad", "x")
    q.add("good", "y")
    q.start()
    wait_until(lambda: calls.count("bad") == 2 and "good" in calls)
    stop.set()


def test_stop_ends_the_workers() -> None:
    stop = threading.Event()
    q: WorkQueue[int] = WorkQueue("stopper", lambda key, items: None, workers=2, stop=stop)
    q.start()
    stop.set()
    wait_until(lambda: not any(t.name.startswith("stopper-") for t in threading.enumerate()), timeout=3)


def test_keys_added_first_are_handled_before_the_others_in_arrival_order() -> None:
    stop = threading.Event()
    seen: list[tuple[str, list[int]]] = []
    q: WorkQueue[int] = WorkQueue("t", lambda key, items: seen.append((key, list(items))), stop=stop)
    q.add("pending-a", 1)
    q.add("pending-b", 2)
    q.add("admit-c", 3, first=True)
    q.add("pending-a", 4, first=True)  # merged with the queued item, and now urgent
    q.add("admit-d", 5, first=True)
    q.start()
    wait_until(lambda: len(seen) == 4)
    stop.set()
    assert seen == [("admit-c", [3]), ("pending-a", [1, 4]), ("admit-d", [5]), ("pending-b", [2])]


def test_an_api_error_is_retried_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    calls: list[str] = []

    def handler(key: str, items: Sequence[str]) -> None:
        calls.append(key)
        if len(calls) == 1:
            raise k.ServerError(0, "GET /apis/batch/v1/jobs: connection refused")

    q: WorkQueue[str] = WorkQueue("t", handler, stop=stop)
    q.add("a", "x")
    with caplog.at_level(logging.WARNING, logger="webhook.worker.workqueue"):
        q.start()
        wait_until(lambda: len(calls) == 2)
    stop.set()
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert caplog.records[0].exc_info is None


def test_backlog_counts_queued_and_in_flight_plain_keys_once() -> None:
    """The core loop's back-pressure reads it: keys added without `first` (pending-status writes),
    queued or in flight, each once; urgent keys (admissions, evictions) are not counted."""
    stop = threading.Event()
    release = threading.Event()
    q: WorkQueue[int] = WorkQueue("t", lambda key, items: release.wait(5), workers=1, stop=stop)
    for key in ("a", "b", "c"):
        q.add(key, 1)
    q.add("admit", 1, first=True)
    assert q.backlog() == 3
    q.start()
    wait_until(lambda: "admit" not in q._queued)  # the urgent key is handled first, uncounted
    assert q.backlog() == 3
    release.set()
    wait_until(lambda: q.backlog() == 0)
    release.clear()
    q.add("a", 2)
    wait_until(lambda: "a" not in q._queued)  # in flight
    q.add("a", 3)  # queued again while in flight: still one key
    assert q.backlog() == 1
    release.set()
    wait_until(lambda: q.backlog() == 0)
    stop.set()


def test_delayed_adds_wait_in_one_thread_and_come_due_in_time_order() -> None:
    stop = threading.Event()
    seen: list[str] = []
    q: WorkQueue[int] = WorkQueue("t", lambda key, items: seen.append(key), stop=stop)
    q.start()
    threads = threading.active_count()
    for i in range(500):
        q.add_after(f"later-{i}", 3600.0)  # e.g. a waitForPodsReady recheck per admitted Workload
    q.add_after("second", 0.2)
    q.add_after("first", 0.05)
    wait_until(lambda: len(seen) == 2)
    stop.set()
    assert threading.active_count() <= threads + 1
    assert seen == ["first", "second"]


def test_delayed_items_keep_their_order_ahead_of_later_ones() -> None:
    stop = threading.Event()
    seen: list[list[int]] = []
    q: WorkQueue[int] = WorkQueue("t", lambda key, items: seen.append(list(items)), stop=stop)
    q.add_after("a", 0.05, [1, 2])
    time.sleep(0.3)
    q.add("a", 3)
    q.start()
    wait_until(lambda: len(seen) == 1)
    stop.set()
    assert seen == [[1, 2, 3]]


def test_busy_while_a_key_is_queued_or_handled_not_while_it_waits_out_a_retry() -> None:
    """The core loop's hold on preemption writes reads it: done (or backing off) is not busy."""
    stop = threading.Event()
    release = threading.Event()
    calls: list[str] = []

    def handler(key: str, items: Sequence[int]) -> None:
        calls.append(key)
        release.wait(5)
        if key == "flaky" and calls.count("flaky") == 1:
            raise Retry(60)

    q: WorkQueue[int] = WorkQueue("t", handler, workers=1, stop=stop)
    q.add("flaky", 1, first=True)
    assert q.busy(["flaky", "other"]) and not q.busy(["other"])
    q.start()
    wait_until(lambda: calls == ["flaky"])
    assert q.busy(["flaky"])  # in flight
    release.set()
    wait_until(lambda: not q.busy(["flaky"]))  # its retry waits in the delay heap
    assert calls == ["flaky"]
    stop.set()


def _series(controller: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The worker /metrics samples of `controller`'s queue, as a scrape parses them."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from webhook.metrics import WORKER_REGISTRY

    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(WORKER_REGISTRY).decode())
        for s in family.samples
        if s.name.startswith("workqueue_") and s.labels.get("name") == controller
    }


def _value(controller: str, name: str, **labels: str) -> float | None:
    key = (name, tuple(sorted({"name": controller, "controller": controller, **labels}.items())))
    return _series(controller).get(key)


def test_series_are_controller_runtimes_per_controller() -> None:
    """controller-runtime's seven families (`pkg/internal/metrics/workqueue.go`): labelled `name` and
    `controller` with the controller's name, `priority` on the depth; upstream's buckets. The depth
    appears with the first add, the others with the queue."""
    stop = threading.Event()
    q: WorkQueue[int] = WorkQueue("workloads", lambda key, items: None, stop=stop, controller="wq_series_test")
    assert _series("wq_series_test") == {}  # a queue not started (a standby's) reports nothing
    q.start()
    names = {name for name, _ in _series("wq_series_test")}
    assert names == {
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        *(f"workqueue_{h}_duration_seconds_{part}" for h in ("queue", "work") for part in ("bucket", "sum", "count")),
    }
    from prometheus_client import generate_latest

    from webhook.metrics import WORKER_REGISTRY

    # As Go prints ExponentialBuckets(10e-9, 10, 12): the products are not rounded.
    text = generate_latest(WORKER_REGISTRY).decode()
    bounds = re.findall(r'workqueue_queue_duration_seconds_bucket\{controller="wq_series_test",le="([^"]+)"', text)
    assert bounds == [
        *("1e-08", "1e-07", "1e-06", "9.999999999999999e-06", "9.999999999999999e-05", "0.001", "0.01", "0.1"),
        *("1.0", "10.0", "100.0", "1000.0", "+Inf"),
    ]
    q.add("a")
    wait_until(lambda: _value("wq_series_test", "workqueue_queue_duration_seconds_count") == 1)
    assert _value("wq_series_test", "workqueue_depth", priority="0") == 0
    stop.set()


def test_depth_adds_durations_and_retries_move_with_the_queue() -> None:
    stop = threading.Event()
    release = threading.Event()
    c = "wq_moves_test"
    q: WorkQueue[int] = WorkQueue("t", lambda key, items: release.wait(5), workers=1, stop=stop, controller=c)
    for key in ("a", "b", "c"):
        q.add(key, 1)
    q.add("a", 2)  # merged into the queued key: not an add
    q.start()  # the keys queued before count as added now
    assert _value(c, "workqueue_adds_total") == 3
    wait_until(lambda: _value(c, "workqueue_depth", priority="0") == 2)  # "a" taken, its handler blocked
    q.add("d")
    assert _value(c, "workqueue_depth", priority="0") == 3
    assert _value(c, "workqueue_adds_total") == 4
    time.sleep(0.05)
    assert (_value(c, "workqueue_longest_running_processor_seconds") or 0) >= 0.05
    assert (_value(c, "workqueue_unfinished_work_seconds") or 0) >= 0.05
    assert _value(c, "workqueue_queue_duration_seconds_count") == 1
    release.set()
    wait_until(lambda: _value(c, "workqueue_work_duration_seconds_count") == 4)
    assert _value(c, "workqueue_depth", priority="0") == 0
    assert _value(c, "workqueue_longest_running_processor_seconds") == 0
    q.add_after("e", 0.05)  # a delayed add is a retry, and an add when it falls due
    assert _value(c, "workqueue_retries_total") == 1
    wait_until(lambda: _value(c, "workqueue_adds_total") == 5)
    stop.set()


def test_queues_of_one_controller_add_up() -> None:
    """Our retention queue is part of upstream's workload controller: one set of series for both."""
    stop = threading.Event()
    c = "wq_shared_test"
    release = threading.Event()
    queues = [WorkQueue[int](n, lambda key, items: release.wait(5), stop=stop, controller=c) for n in ("x", "y")]
    for q in queues:
        q.start()
    queues[0].add("a")
    queues[1].add("a")
    queues[1].add("b")
    wait_until(lambda: _value(c, "workqueue_depth", priority="0") == 1)  # one key of each in a handler
    assert _value(c, "workqueue_adds_total") == 3
    time.sleep(0.05)
    unfinished, longest = (
        _value(c, f"workqueue_{n}") or 0 for n in ("unfinished_work_seconds", "longest_running_processor_seconds")
    )
    assert unfinished >= 2 * 0.05 and longest >= 0.05 and unfinished > longest
    release.set()
    stop.set()


class Blocking:
    """A handler that holds every key until released, recording how many ran at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.running: set[str] = set()
        self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, key: str, items: Sequence[int]) -> None:
        with self.lock:
            self.running.add(key)
            self.peak = max(self.peak, len(self.running))
        self.release.wait(5)
        with self.lock:
            self.running.discard(key)


def test_keys_added_first_grow_the_queue_to_max_workers_and_it_shrinks_when_idle() -> None:
    """Admission writes that wait seconds on the API server run side by side up to `max_workers`
    (upstream's goroutine per admission); the extra workers end once there is nothing to do."""
    stop = threading.Event()
    h = Blocking()
    q: WorkQueue[int] = WorkQueue("elastic", h, workers=2, max_workers=6, stop=stop, idle_exit_s=0.2)
    q.start()
    for i in range(10):
        q.add(f"k{i}", i, first=True)
    wait_until(lambda: len(h.running) == 6)
    time.sleep(0.1)
    assert h.peak == 6 and q.workers() == 6  # never past max_workers
    h.release.set()
    wait_until(lambda: q.workers() == 2, timeout=5)
    assert not h.running
    stop.set()


def test_other_keys_never_run_on_more_than_workers_threads() -> None:
    """Pending-status writes keep the pace of upstream's synchronous ones, `workers` at a time, while
    admissions queued behind them run on extra workers at once."""
    stop = threading.Event()
    h = Blocking()
    q: WorkQueue[int] = WorkQueue("paced", h, workers=2, max_workers=6, stop=stop, idle_exit_s=5)
    q.start()
    for i in range(5):
        q.add(f"pending{i}", i)
    wait_until(lambda: len(h.running) == 2)
    for i in range(4):
        q.add(f"admit{i}", i, first=True)
    wait_until(lambda: sum(k.startswith("admit") for k in h.running) == 4)
    time.sleep(0.2)
    assert sum(k.startswith("pending") for k in h.running) == 2
    h.release.set()
    wait_until(lambda: not q._queued and not h.running)
    stop.set()
