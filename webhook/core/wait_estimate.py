"""When a pending workload gets quota: the running workloads' expected ends, simulated forward.

Not an upstream API (upstream ask #13159). A workload waits for quota to free up, so the estimate
starts from when each workload holding quota is expected to release it:

* its reservation time plus its `spec.maximumExecutionTimeSeconds` (the worker deactivates it
  then at the latest), else
* its reservation time plus the median of how long recently finished workloads of its
  ClusterQueue held quota (`RunTimes.observed`), else
* unknown: it may hold its quota forever, and what waits for that quota gets no estimate.

Then the admission order is replayed over a copy of the quota tree (`core.snapshot`), with the
core's own pieces: each ClusterQueue's queue in the order given (the pending order the visibility
API ranks by, `ordering.queue_key`), its head found with the flavor assigner (`assign_flavors`;
StrictFIFO stops at a head that does not fit, BestEffortFIFO looks further), heads of one round
in the cycle's classical order (`ordering.entry_key`), each admitted while its requests fit
`resource_node.available` as the cycle's `_fits` checks them. An admitted workload holds its
quota for its own expected run time, so later ones wait for it in turn. Time advances to the next
expected end, and so on.

What it leaves out, and so gets wrong: arrivals after now (a higher-priority one jumps ahead),
preemption (a workload that may preempt is admitted sooner than estimated), partial admission,
topology placement, fair-sharing tournaments and admission checks. Each answer says which basis
it had; no basis gives `Estimate(None, reason)`, never a guess.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from webhook.core import ordering
from webhook.core.flavor_assigner import Mode, PreemptionPossibility, assign_flavors
from webhook.core.model import QueueingStrategy
from webhook.core.resource_node import ClusterQueueNode, QuotaNode, available
from webhook.core.resources import FlavorResource, FRQuantities
from webhook.core.snapshot import Snapshot
from webhook.core.workload import WorkloadInfo, WorkloadKey

__all__ = ["METHOD", "Estimate", "RunTimes", "estimate_admissions"]

METHOD = (
    "simulation: each workload holding quota frees it at its reservation time + maximumExecutionTimeSeconds, "
    "else + the median time recent finished workloads of its ClusterQueue held quota; pending workloads are "
    "admitted in the scheduler's order as their requests fit (no preemption, no new arrivals)"
)

#: Fit checks one simulation may spend; the workloads it does not reach get no estimate.
DEFAULT_BUDGET = 20_000


@dataclass(frozen=True, slots=True)
class Estimate:
    """When a pending workload is expected to get quota; `at` None means unknown, `unknown` says why."""

    at: datetime | None
    unknown: str = ""


@dataclass(frozen=True, slots=True)
class RunTimes:
    """What is known of how long workloads hold quota: their own limit (`spec.maximumExecutionTimeSeconds`
    per workload) and, per ClusterQueue, the seconds recent finished workloads held it."""

    limits: Mapping[WorkloadKey, int] = field(default_factory=dict)
    observed: Mapping[str, Sequence[float]] = field(default_factory=dict)

    def expected(self, key: WorkloadKey, cluster_queue: str) -> float | None:
        """Seconds the workload is expected to hold quota; None without a basis."""
        limit = self.limits.get(key)
        return float(limit) if limit is not None else self.observed_median(cluster_queue)

    def observed_median(self, cluster_queue: str) -> float | None:
        """The median seconds the ClusterQueue's recent finished workloads held quota; None without any."""
        runs = self.observed.get(cluster_queue)
        return statistics.median(runs) if runs else None


class _NoPreemption:
    """Preemption is not simulated: a flavor that would need it does not fit."""

    def simulate_preemption(
        self, cq: ClusterQueueNode, wl: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[PreemptionPossibility, int]:
        return PreemptionPossibility.NO_CANDIDATES, 0


@dataclass(order=True, slots=True)
class _End:
    at: datetime
    seq: int
    cluster_queue: str = field(compare=False)
    usage: FRQuantities = field(compare=False)


class _Simulation:
    """One replay over a snapshot it consumes (usage is moved in place)."""

    def __init__(self, snap: Snapshot, run_times: RunTimes, now: datetime, budget: int) -> None:
        self.snap, self.run_times, self.now, self.budget = snap, run_times, now, budget
        self.ends: list[_End] = []
        self.seq = 0
        # Per cohort-tree root: workloads holding quota there with no known run time.
        self.endless: dict[int, list[WorkloadKey]] = {}
        self.out: dict[WorkloadKey, Estimate] = {}

    def hold(
        self, key: WorkloadKey, cq: ClusterQueueNode, usage: Mapping[FlavorResource, int], start: datetime
    ) -> None:
        seconds = self.run_times.expected(key, cq.name)
        if seconds is None:
            self.endless.setdefault(id(cq.root()), []).append(key)
            return
        self.seq += 1
        at = max(start + timedelta(seconds=seconds), self.now)
        heapq.heappush(self.ends, _End(at, self.seq, cq.name, dict(usage)))

    def head(self, cq: ClusterQueueNode, waiting: list[WorkloadInfo], t: datetime) -> tuple[int, FRQuantities, int]:
        """(index, requests, borrowing) of the first workload that fits now; index -1 when none does."""
        strict = cq.spec.queueing_strategy == QueueingStrategy.STRICT_FIFO
        for i, wl in enumerate(waiting):
            if wl.requeue_at is not None and wl.requeue_at > t:
                continue  # still backing off: not in the heap yet
            if self.budget <= 0:
                return -1, {}, 0
            self.budget -= 1
            a = assign_flavors(wl, cq, self.snap.resource_flavors, _NoPreemption())
            if a.representative_mode() == Mode.FIT:
                return i, a.total_requests(), a.borrowing
            if strict:
                break
        return -1, {}, 0

    def admit(self, names: set[str], waiting: dict[str, list[WorkloadInfo]], t: datetime) -> None:
        """Cycles at time `t` until no head is admitted: one head per ClusterQueue per cycle, in the
        cycle's order, each admitted while it still fits (earlier admissions of the cycle count)."""
        while names:
            heads = []
            for name in sorted(names):
                cq = self.snap.cluster_queues[name]
                i, requests, borrowing = self.head(cq, waiting[name], t)
                if i >= 0:
                    heads.append((ordering.entry_key(waiting[name][i], borrowing), name, i, requests))
            names = set()
            for _, name, i, requests in sorted(heads):
                cq = self.snap.cluster_queues[name]
                if not all(v <= available(cq, fr) for fr, v in requests.items()):
                    continue  # usage only grew since its head was found: it stays waiting
                wl = waiting[name].pop(i)
                self.snap.add_usage(cq, requests)
                self.out[wl.key] = Estimate(t)
                self.hold(wl.key, cq, requests, t)
                names.add(name)

    def unknown_reason(self, cq: ClusterQueueNode) -> str:
        if self.budget <= 0:
            return "the simulation stopped at its limit of fit checks before reaching this workload"
        endless = self.endless.get(id(cq.root()), [])
        if endless:
            shown = ", ".join(sorted(endless)[:3]) + (", …" if len(endless) > 3 else "")
            return (
                f"it waits for quota held by {len(endless)} workload(s) with no maximumExecutionTimeSeconds "
                f"and no finished workloads in their ClusterQueue to learn a run time from ({shown})"
            )
        return f"it does not fit ClusterQueue {cq.name} without preemption even once every running workload has ended"


def _root(node: QuotaNode) -> int:
    return id(node.root())


def estimate_admissions(
    snap: Snapshot,
    queues: Mapping[str, Sequence[WorkloadInfo]],
    run_times: RunTimes,
    now: datetime,
    *,
    budget: int = DEFAULT_BUDGET,
) -> dict[WorkloadKey, Estimate]:
    """An estimate for every workload of `queues` (ClusterQueue name -> its pending workloads in
    queue order). `snap` holds the quota tree and the workloads holding quota now; it is used up.
    A ClusterQueue missing from it gets no estimates (the caller says why)."""
    sim = _Simulation(snap, run_times, now, budget)
    for cq in snap.cluster_queues.values():
        for wl in cq.workloads.values():
            sim.hold(wl.key, cq, wl.usage(), wl.quota_reserved_time or now)
    waiting = {name: list(wls) for name, wls in queues.items() if name in snap.cluster_queues and wls}
    # Wake a ClusterQueue when one of its workloads' backoff ends.
    for name, wls in waiting.items():
        for wl in wls:
            if wl.requeue_at is not None and wl.requeue_at > now:
                sim.seq += 1
                heapq.heappush(sim.ends, _End(wl.requeue_at, sim.seq, name, {}))
    by_root: dict[int, set[str]] = {}
    for name in waiting:
        by_root.setdefault(_root(snap.cluster_queues[name]), set()).add(name)
    t, names = now, set(waiting)
    while True:
        sim.admit(names, waiting, t)
        if not any(waiting.values()) or not sim.ends or sim.budget <= 0:
            break
        t, freed = sim.ends[0].at, set()
        while sim.ends and sim.ends[0].at <= t:
            end = heapq.heappop(sim.ends)
            cq = snap.cluster_queues[end.cluster_queue]
            snap.remove_usage(cq, end.usage)
            freed.add(_root(cq))
        names = {n for r in freed for n in by_root.get(r, ()) if waiting[n]}
    for name, wls in waiting.items():
        cq = snap.cluster_queues[name]
        for wl in wls:
            sim.out[wl.key] = Estimate(None, sim.unknown_reason(cq))
    return sim.out
