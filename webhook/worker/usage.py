"""Usage accounting in the cluster: the leader's UsageRecords, written at a bounded rate.

Ours, not upstream's. The arithmetic is `webhook.core.usage`; this module follows Workloads (a
`Reconciler`: every watch event, the informer's initial list included) and writes one
`UsageRecord` (`pykueue.io/v1alpha1`, `webhook.api.schema_usage`) per period.

Why nothing is lost or counted twice across leader failovers, restarts and upgrades:

* a record holds its period's totals up to its `watermark`; each write advances the watermark and
  adds exactly what the Workloads held between the old and the new one, computed from their own
  condition times, never from when this process happened to see an event;
* every write is a PUT under the resourceVersion last read or written, through the fenced client
  (`Kube.fenced`): a deposed leader cannot write, and a write racing another fails with Conflict,
  after which the record is read again and the next write starts from its watermark;
* on start (`start`, after the informers listed every Workload) the newest record is read and
  advanced from its watermark: a Workload that finished, or was deleted with its finalizer still
  on, while no leader ran counts to its Finished time or deletionTimestamp; an evicted one to its
  QuotaReserved=False time, with the amounts kept in the record's `running` list. Periods no
  leader saw are written in order, each completed before the next is created.

Events arrive a moment after the times they carry: the watermark lags the clock by `lag_s`, and a
reservation seen after a write that passed its start or end is corrected on the next write (the
record's `running` list says what was counted: `core.usage.advance`).

What cannot be known is not invented: a reservation open at the watermark whose Workload is gone
(deleted and its finalizer removed) or admitted again by the time a new leader looks ends at the
watermark (a warning names it). Both need the leader to die within `pause_s` of the change, as a
closed reservation brings the next write forward to then. Records are written at most once per
`pause_s` (`settle_s`, longer for a large record: each write sends the whole record, so they are
paced to `WRITE_BYTES_PER_S`), once per `flush_s` while nothing closes, and once per `IDLE_S` while
nothing holds quota.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import orjson

from webhook import kube as k
from webhook import metrics
from webhook.api import objects as o
from webhook.api import quantity
from webhook.core import usage
from webhook.core.workload import parse_time
from webhook.worker.store import Store

__all__ = ["FLUSH_S", "IDLE_S", "LAG_S", "PERIOD_S", "RECORDS", "SETTLE_S", "WRITE_BYTES_PER_S", "UsageAccountant"]

log = logging.getLogger(__name__)

PERIOD_S = 3600  # one UsageRecord per hour: `kubectl kueue usage --since/--until` to the hour
FLUSH_S = 10.0  # how stale the newest record may get while reservations only go on
SETTLE_S = 1.0  # the least time between two writes; a closed reservation is written this soon
# What the records may send the API server on average. At upstream's large-scale config (1,000
# ClusterQueues and LocalQueues, Workloads finishing every second) a record is ~210 KB: written each
# second, the records were two thirds of every byte we sent (bench/apiserver_cost.py); paced, ~7 s.
WRITE_BYTES_PER_S = 32 * 1024
# The watermark stays this far behind the clock: a condition time is stamped before its write, which
# lands (and is watched) a moment later. What arrives later still is corrected (`core.usage.advance`).
LAG_S = 2
# Spelled out so that the RBAC tests find what the worker calls (`webhook.api.schema_usage` names it).
RECORDS = "/apis/pykueue.io/v1alpha1/usagerecords"
IDLE_S = 300  # while nothing holds quota, the watermark is written this often (and at each period end)
_RELOAD_S = 60.0  # between attempts to read the records at start
_CATCH_UP = 24 * 366  # at most this many periods written in one go after a long leaderless spell


class UsageAccountant:
    """Keeps what every Workload holds and writes the UsageRecords (a `Reconciler`)."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        *,
        stop: threading.Event,
        period_s: int = PERIOD_S,
        flush_s: float = FLUSH_S,
        settle_s: float = SETTLE_S,
        lag_s: int = LAG_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.store = store
        self.stop = stop
        self.period_s = period_s
        self.flush_s = flush_s
        self.settle_s = settle_s
        self.lag_s = lag_s
        self.clock = clock
        self._lock = threading.Lock()
        self._current: dict[str, usage.Holding] = {}  # uid → the reservation its Workload shows
        # uid → end of those in `_current` that ended (Finished): once written past their end they are
        # forgotten, so a flush costs the reservations open or recently ended, not every Workload kept.
        self._ended: dict[str, int] = {}
        self._closed: dict[tuple[str, int], usage.Holding] = {}  # ended reservations no Workload shows
        self._released: dict[str, int | None] = {}  # uid → QuotaReserved=False time, for Workloads without one
        self._closing = threading.Event()  # a reservation ended: write soon
        # The periods being written, by start, with the resourceVersion of their record (None: not created).
        self._ledgers: dict[int, tuple[usage.Ledger, str | None]] = {}
        self._archived: dict[usage.UsageKey, int] = {}  # the totals of every older record, for the metric
        self._history: dict[int, usage.Ledger] = {}  # the older records by start, without `running` (budgets)
        self._last_write_bytes = 0

    def pause_s(self) -> float:
        """The least time before the next write: `settle_s`, or the last record's size at `WRITE_BYTES_PER_S`."""
        return max(self.settle_s, self._last_write_bytes / WRITE_BYTES_PER_S)

    # == events (informer threads) ================================================================
    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind != "workloads":
            return
        uid = o.uid(obj)
        now = int(self.clock())
        held = usage.holding_of(obj, cohort=self._cohort(obj))
        if etype == "DELETED" and held is not None and held.end is None:
            gone = parse_time(o.meta(obj).get("deletionTimestamp"))  # absent when it had no finalizer
            held = replace(held, end=max(held.start, int(gone.timestamp()) if gone is not None else now))
        with self._lock:
            prev = self._current.pop(uid, None)
            self._ended.pop(uid, None)
            if prev is not None and (held is None or held.ident != prev.ident):
                self._close(prev, obj, held, now)
            self._released.pop(uid, None)
            if etype == "DELETED":
                if held is not None:
                    self._closed[held.ident] = held
                    self._closing.set()
                return
            if held is None:
                self._released[uid] = usage.released_at(obj)
                return
            self._current[uid] = held
            if held.end is not None:
                self._ended[uid] = held.end
            if prev is not None and prev.end is None and held.end is not None:
                self._closing.set()

    def _close(self, prev: usage.Holding, obj: Mapping[str, Any], held: usage.Holding | None, now: int) -> None:
        """`prev` is no longer what its Workload shows: keep it, ended, until it is written."""
        if prev.end is None:
            # admitted again: the release this watch did not show came before the new reservation
            end = held.start if held is not None else usage.released_at(obj) or now
            prev = replace(prev, end=max(prev.start, end))
        self._closed[prev.ident] = prev
        self._closing.set()

    def _cohort(self, wl: Mapping[str, Any]) -> str:
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
        found = self.store.get("clusterqueues", str(cq)) if cq else None
        return str(((found or {}).get("spec") or {}).get("cohortName") or "")

    # == the writer thread ========================================================================
    def start(self) -> None:
        threading.Thread(target=self._run, name="usage", daemon=True).start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.load()
                metrics.USAGE.use(self.metric_samples)
                break
            except k.KubeError as exc:  # e.g. the CRD not installed yet
                log.warning("usage records not readable yet", extra={"kind": "UsageRecord", "error": str(exc)})
                self.stop.wait(_RELOAD_S)
        while not self.stop.is_set():
            self._closing.clear()
            try:
                self.flush()
            except k.NotLeader:
                return
            except k.KubeError as exc:
                log.warning("usage record write failed", extra={"kind": "UsageRecord", "error": str(exc)})
            pause = self.pause_s()
            self.stop.wait(pause)
            self._closing.wait(max(0.0, self.flush_s - pause))

    def load(self) -> None:
        """Resume from the newest UsageRecord (or, with none yet, from the start of this period)."""
        items, _ = self.kube.list(RECORDS)
        newest: tuple[usage.Ledger, str | None] | None = None
        archived: dict[usage.UsageKey, int] = {}
        history: dict[int, usage.Ledger] = {}
        for item in items:
            try:
                ledger = usage.from_record(item)
            except ValueError as exc:
                log.warning("usage record ignored", extra={"kind": "UsageRecord", "error": str(exc)})
                continue
            if newest is None or ledger.start > newest[0].start:
                if newest is not None:
                    _merge(archived, newest[0].totals)
                    history[newest[0].start] = replace(newest[0], running={})
                newest = (ledger, o.meta(item).get("resourceVersion"))
            else:
                _merge(archived, ledger.totals)
                history[ledger.start] = replace(ledger, running={})
        if newest is None:
            start, _ = usage.period_bounds(int(self.clock()), self.period_s)
            newest = (usage.new_ledger(start, self.period_s), None)
        with self._lock:
            self._ledgers = {newest[0].start: newest}
            self._archived = archived
            self._history = history
        ledger = newest[0]
        log.info(
            "usage accounting resumed",
            extra={"kind": "UsageRecord", "object": usage.record_name(ledger.start), "watermark": ledger.watermark},
        )

    def flush(self) -> None:
        """Advance the periods not yet complete to now, oldest first, one write each; a complete
        newest period is followed by the next, which starts with the reservations it left open."""
        until = int(self.clock()) - self.lag_s
        with self._lock:
            observed = [*self._current.values(), *self._closed.values()]
            released = dict(self._released)
            ledgers = dict(self._ledgers)
        for _ in range(_CATCH_UP):
            pending = [s for s in sorted(ledgers) if not ledgers[s][0].complete]
            if not pending:
                newest = ledgers[max(ledgers)][0]
                following = usage.new_ledger(newest.end, self.period_s, carried=newest.running)
                ledgers[following.start] = (following, None)
                continue
            ledger, rv = ledgers[pending[0]]
            resolved = usage.resolve(ledger, observed, released)
            advanced = usage.advance(ledger, resolved.holdings, until)
            if rv is not None and (advanced is ledger or self._idle(ledger, advanced, until)):
                break
            ledgers[ledger.start] = written = self._write(advanced, rv)
            for held in resolved.unknown_end:
                log.warning(
                    "reservation's end unknown: counted to the watermark",
                    extra={"object": held.workload, "kind": "Workload", "watermark": ledger.watermark},
                )
            if not written[0].complete:
                break  # the current period (or one re-read after a conflict: the next flush goes on)
        self._keep(ledgers)

    def _idle(self, ledger: usage.Ledger, advanced: usage.Ledger, until: int) -> bool:
        """Nothing held and nothing added: the watermark alone moves, which a new leader would
        redo from the Workloads the same way; written once per `IDLE_S` and when the period ends."""
        held = ledger.running or advanced.running or advanced.totals != ledger.totals
        return not held and not advanced.complete and until - ledger.watermark < IDLE_S

    def _write(self, ledger: usage.Ledger, rv: str | None) -> tuple[usage.Ledger, str | None]:
        record = usage.to_record(ledger)
        name = record["metadata"]["name"]
        try:
            if rv is None:
                written = self.kube.create(RECORDS, record)
            else:
                record["metadata"]["resourceVersion"] = rv
                written = self.kube.replace(f"{RECORDS}/{name}", record)
        except k.Conflict:
            # Written meanwhile (created by a former leader, or replaced under us): start from it.
            found = self.kube.get(f"{RECORDS}/{name}")
            if found is None:  # deleted meanwhile: created again, with what it held, by the next write
                return ledger, None
            log.info("usage record re-read after a conflict", extra={"kind": "UsageRecord", "object": name})
            return usage.from_record(found), o.meta(found).get("resourceVersion")
        self._last_write_bytes = len(orjson.dumps(record))
        log.debug("usage record written", extra={"kind": "UsageRecord", "object": name, "watermark": ledger.watermark})
        return ledger, o.meta(written).get("resourceVersion")

    def _keep(self, ledgers: Mapping[int, tuple[usage.Ledger, str | None]]) -> None:
        """Keep the periods not complete and the newest; forget reservations they have all counted."""
        newest = max(ledgers)
        kept = {s: entry for s, entry in ledgers.items() if s == newest or not entry[0].complete}
        done = min(entry[0].watermark for entry in kept.values())
        with self._lock:
            for start, (ledger, _) in ledgers.items():
                if start not in kept:  # written complete: its totals join the older records'
                    _merge(self._archived, ledger.totals)
                    self._history[start] = replace(ledger, running={})
            self._ledgers = kept
            for ident, held in list(self._closed.items()):
                # Kept a period longer than written: a budget's window need not start on a period
                # boundary, and counts its first part from the reservations (`core.budget.spent`).
                if held.end is not None and held.end <= done - self.period_s:
                    del self._closed[ident]
            # Counted whole and in no record's `running`: a later event of the Workload brings it back
            # ended before the watermark, which `usage.advance` skips (its case 3). A finish that
            # arrived while its record was written open is kept: the next write gives back what was
            # counted past it (case 1), which it could not do once the reservation was forgotten.
            open_at_watermark = {uid for ledger, _ in kept.values() for uid in ledger.running}
            for uid, end in list(self._ended.items()):
                if end <= done and uid not in open_at_watermark:
                    del self._ended[uid]
                    del self._current[uid]

    def view(self) -> tuple[list[usage.Ledger], list[usage.Holding]]:
        """Every period's ledger (the newest as counted so far) and every reservation known: what a
        budget's spend is computed from (`core.budget.spent`)."""
        with self._lock:
            ledgers = [*self._history.values(), *(ledger for ledger, _ in self._ledgers.values())]
            holdings = [*self._current.values(), *self._closed.values()]
        return ledgers, holdings

    def totals(self) -> dict[usage.UsageKey, int]:
        """Resource-seconds per row over every record (for `pykueue_usage_resource_seconds_total`)."""
        with self._lock:
            out = dict(self._archived)
            for ledger, _ in self._ledgers.values():
                _merge(out, ledger.totals)
        return out

    def metric_samples(self) -> list[tuple[tuple[str, ...], float]]:
        """`totals` as the metric's label values (no user: not recorded yet) and resource-seconds."""
        out: dict[tuple[str, ...], float] = {}
        for key, value in self.totals().items():
            labels = tuple(v for d, v in zip(usage.DIMENSIONS, key.values(), strict=True) if d != "user")
            per = 1000 if quantity.is_milli_resource(key.resource) else 1
            out[labels] = out.get(labels, 0.0) + value / per
        return sorted(out.items())


def _merge(into: dict[usage.UsageKey, int], totals: Mapping[usage.UsageKey, int]) -> None:
    for key, value in totals.items():
        into[key] = into.get(key, 0) + value
