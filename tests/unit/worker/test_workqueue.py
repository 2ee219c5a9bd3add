"""The keyed work queue the worker's writers and reconcilers run on: merging, one thread per key,
retries that keep their items, and a clean stop."""

from __future__ import annotations

import logging
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
