"""A keyed work queue: each key is handled by one thread at a time, in arrival order of its items.

Our form of client-go's `workqueue` as controller-runtime uses it: adding a key that is queued
merges the new items into the queued entry; adding a key that is being processed queues it again
for after. A handler that raises `Retry` has the key re-added after the delay (items kept).

Delayed adds wait in one heap served by one thread per queue, as client-go's delaying queue: a
timer thread each would cost every admitted Workload a thread for the whole waitForPodsReady
timeout (30 min by default), thousands of threads and their stacks at scale.

Keys added `first` may be handled by up to `max_workers` threads: the queue grows while they wait
and no worker is idle, and the extra threads, which take only such keys, end after `IDLE_EXIT_S`
without work. The others never have more than `workers`. So the status queue writes admissions,
evictions and preemptions as upstream's scheduler does, each in a goroutine of its own bounded
only by the client's token bucket (behind an API server that answers in seconds, a creation burst,
four writers carried a few writes a second where upstream's carried fifty), while pending-status
writes keep the pace upstream's synchronous ones set for its cycles.

Each queue reports controller-runtime's `workqueue_*` series under its `controller` name
(`webhook.metrics`, after controller-runtime's `pkg/controller/priorityqueue/metrics.go`): an add
counts when the key was not queued yet (a delayed add when it falls due), the queue duration runs
from then until a worker takes the key, the work duration until its handler returns, and every add
with a delay counts as a retry.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from prometheus_client import Counter, Histogram

from webhook import kube as k
from webhook import metrics

__all__ = ["Retry", "WorkQueue"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds a worker beyond the queue's `workers` waits for work before it ends.
IDLE_EXIT_S = 5.0


class Retry(Exception):
    """Handle the key again after `delay` seconds."""

    def __init__(self, delay: float = 1.0, reason: str = "") -> None:
        super().__init__(reason)
        self.delay = delay


@dataclass(frozen=True, slots=True)
class _Series:
    """One queue's counters and histograms (controller-runtime's `defaultQueueMetrics`)."""

    adds: Counter
    retries: Counter
    queue_duration: Histogram
    work_duration: Histogram

    @classmethod
    def of(cls, controller: str) -> _Series:
        labels = (controller, controller)
        return cls(
            adds=metrics.WORKQUEUE_ADDS.labels(*labels),
            retries=metrics.WORKQUEUE_RETRIES.labels(*labels),
            queue_duration=metrics.WORKQUEUE_QUEUE_DURATION.labels(*labels),
            work_duration=metrics.WORKQUEUE_WORK_DURATION.labels(*labels),
        )


class WorkQueue(Generic[T]):
    """`controller` names the queue in its series: the name of the upstream controller whose queue
    it is (`Named(...)`, or the lowercased kind of `For(...)`), `name` when it has none."""

    def __init__(
        self,
        name: str,
        handler: Callable[[str, Sequence[T]], None],
        *,
        workers: int = 1,
        max_workers: int | None = None,
        stop: threading.Event,
        controller: str | None = None,
        idle_exit_s: float = IDLE_EXIT_S,
    ) -> None:
        self.name = name
        self.controller = controller or name
        self._handler = handler
        self._workers = workers
        self._max_workers = max(workers, max_workers or workers)
        self._idle_exit_s = idle_exit_s
        self._threads = 0  # running worker threads, `workers` of them taking any key
        self._idle = 0  # of them, those waiting in `_take`
        self._names = itertools.count()
        self._stop = stop
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # the workers taking any key wait on it
        self._first_cond = threading.Condition(lock)  # the extra workers
        self._queued: OrderedDict[str, list[T]] = OrderedDict()
        self._processing: set[str] = set()
        self._processing_plain: set[str] = set()  # the processing keys that were not queued with `first`
        self._first: dict[str, None] = {}  # queued keys added with first=True, oldest first
        self._retries: dict[str, int] = {}
        self._delay_cond = threading.Condition()
        self._delayed: list[tuple[float, int, str, list[T]]] = []  # (monotonic due, tie-break, key, items)
        self._delay_seq = itertools.count()
        self._delayer: threading.Thread | None = None
        self._added_at: dict[str, float] = {}  # queued key -> when it was queued (monotonic)
        self._started_at: dict[str, float] = {}  # key being handled -> when its handler started
        self._ever_added = False
        self._series: _Series | None = None  # from `start` on, as controller-runtime makes a queue on Start

    def load(self) -> metrics.QueueLoad:
        """The queue's depth and its handlers' running times now, for the scrape."""
        with self._cond:
            now = time.monotonic()
            running = [now - t for t in self._started_at.values()]
            return metrics.QueueLoad(len(self._queued), sum(running), max(running, default=0.0), self._ever_added)

    def _queue(self, key: str) -> list[T]:
        """The queued entry of `key`, made (and counted as an add) when there is none. Under `_cond`."""
        items = self._queued.get(key)
        if items is None:
            items = self._queued[key] = []
            self._added_at[key] = time.monotonic()
            self._ever_added = True
            if self._series is not None:
                self._series.adds.inc()
        return items

    def add(self, key: str, item: T | None = None, *, first: bool = False) -> None:
        """Queue `item` for `key`; `first` puts the key ahead of the keys queued without it (a
        write that must not wait behind a backlog of less urgent ones), in arrival order."""
        with self._cond:
            items = self._queue(key)
            if item is not None:
                items.append(item)
            if first:
                self._first.setdefault(key)
                self._grow()
                self._first_cond.notify()
            self._cond.notify()

    def backlog(self) -> int:
        """Keys queued or being handled that were not added with `first` (those waiting out a retry
        delay are not counted)."""
        with self._cond:
            # `_first` is a subset of `_queued`'s keys and at most `workers` keys are processing: O(workers),
            # not a set difference over thousands of queued keys on every core round.
            plain_queued = len(self._queued) - len(self._first)
            return plain_queued + sum(
                1 for key in self._processing_plain if key not in self._queued or key in self._first
            )

    def busy(self, keys: Iterable[str]) -> bool:
        """Whether any of `keys` is queued or being handled (not one waiting out a retry delay)."""
        with self._cond:
            return any(key in self._queued or key in self._processing for key in keys)

    def add_after(self, key: str, delay: float, items: Sequence[T] = ()) -> None:
        """Queue `key` (its `items` ahead of any queued since) once `delay` seconds have passed."""
        if delay > 0 and self._series is not None:
            self._series.retries.inc()
        with self._delay_cond:
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._delay_seq), key, list(items)))
            if self._delayer is None:
                self._delayer = threading.Thread(target=self._run_delayed, name=f"{self.name}-delayed", daemon=True)
                self._delayer.start()
            self._delay_cond.notify()

    def _run_delayed(self) -> None:
        while not self._stop.is_set():
            with self._delay_cond:
                now = time.monotonic()
                due = []
                while self._delayed and self._delayed[0][0] <= now:
                    due.append(heapq.heappop(self._delayed))
                if not due:
                    self._delay_cond.wait(min(self._delayed[0][0] - now, 0.5) if self._delayed else 0.5)
                    continue
            with self._cond:
                for _, _, key, items in due:
                    self._queue(key)[:0] = items
                self._cond.notify_all()

    def start(self) -> None:
        """Start the workers, and the queue's series: a standby that never starts its queues reports
        none, and the keys queued before count as adds now."""
        with self._cond:
            self._series = _Series.of(self.controller)
            self._series.adds.inc(len(self._queued))
        metrics.WORKQUEUE_GAUGES.track(self)
        with self._cond:
            for _ in range(self._workers):
                self._spawn()
            self._grow()

    def workers(self) -> int:
        """The worker threads running now."""
        with self._cond:
            return self._threads

    def _spawn(self, *, extra: bool = False) -> None:
        """One more worker thread; an `extra` one takes only keys added `first`. Under `_cond`."""
        self._threads += 1
        name = f"{self.name}-{next(self._names)}"
        threading.Thread(target=self._run, args=(extra,), name=name, daemon=True).start()

    def _grow(self) -> None:
        """An extra worker when keys added `first` wait beyond the idle workers (each takes one)
        and the queue, started (it has its series), may grow. Under `_cond`."""
        if self._series is not None and self._threads < self._max_workers and len(self._first) > self._idle:
            self._spawn(extra=True)

    def _take(self, extra: bool) -> tuple[str, list[T]] | None:
        """The next key to handle with its items (an `extra` worker's: one added `first`); None when
        the queue stops or an extra worker found nothing to do for `idle_exit_s`."""
        with self._cond:
            idle_since = time.monotonic()
            while not self._stop.is_set():
                for key in self._first if extra else itertools.chain(self._first, self._queued):
                    if key not in self._processing:
                        items = self._queued.pop(key)
                        now = time.monotonic()
                        added = self._added_at.pop(key, now)
                        if self._series is not None:
                            self._series.queue_duration.observe(now - added)
                        self._started_at[key] = now
                        if key not in self._first:
                            self._processing_plain.add(key)
                        self._first.pop(key, None)
                        self._processing.add(key)
                        return key, items
                if extra and time.monotonic() - idle_since >= self._idle_exit_s:
                    break
                self._idle += 1
                try:
                    (self._first_cond if extra else self._cond).wait(min(0.5, self._idle_exit_s))
                finally:
                    self._idle -= 1
            self._threads -= 1
            return None

    def _done(self, key: str) -> None:
        with self._cond:
            started = self._started_at.pop(key, None)
            if started is not None and self._series is not None:
                self._series.work_duration.observe(time.monotonic() - started)
            self._processing.discard(key)
            self._processing_plain.discard(key)
            self._cond.notify_all()
            if key in self._first:  # added `first` again while it was handled
                self._first_cond.notify()

    def _run(self, extra: bool = False) -> None:
        while (taken := self._take(extra)) is not None:
            key, items = taken
            try:
                self._handler(key, items)
                self._retries.pop(key, None)
            except k.KubeError as exc:
                # The API is unreachable or refused the write (an outage, a conflict): retry
                # quietly; a traceback would only say where the request was made.
                n = self._retries[key] = self._retries.get(key, 0) + 1
                log.warning("handler failed; retrying", extra={"queue": self.name, "object": key, "error": str(exc)})
                self.add_after(key, min(0.1 * (2 ** min(n - 1, 8)), 30.0), items)
            except Retry as exc:
                n = self._retries[key] = self._retries.get(key, 0) + 1
                self.add_after(key, min(exc.delay * (2 ** min(n - 1, 6)), 30.0), items)
            except Exception:
                n = self._retries[key] = self._retries.get(key, 0) + 1
                log.exception("handler failed", extra={"queue": self.name, "object": key})
                self.add_after(key, min(0.1 * (2 ** min(n - 1, 8)), 30.0), items)
            finally:
                self._done(key)
