"""Cost per admission of the admission worker's core thread vs. the number of ClusterQueues (no cluster).

Why: at upstream's large-scale config (10 cohorts x 100 ClusterQueues, 50,000 single-pod Workloads)
`make bench-scale` measured 2.6x our CPU per admission at the baseline (5 x 6), where upstream's
grows 1.1x. This replays both generator configs through what the worker's core thread does
(`webhook/worker/manager.py`, `_core_loop_body`), on a simulated clock, and times each part:

* events: Workloads created, admitted (the Admit write seen back), finished, evicted, fed to the core;
* cycles: `core.schedule(now)`, held as the worker holds them: no cycle while the last cycle's
  pending-status writes or more than MAX_WRITE_BACKLOG writes wait for the client's token bucket
  (QPS 50, minimalkueue's and `bench/minimal_pykueue.py`'s), which bounds the real run;
* status: ClusterQueue and LocalQueue status, published 1 s after a batch of events
  (`QueueStatusPublisher`) for the queues the core reports changed; those writes come back as
  events that wake the core loop (status-only: they do not reach the core);
* gauges: `MetricsReporter.refresh`, as often as the worker runs it (at most once a second, and
  no more than 1/METRICS_REFRESH_SHARE of the time; here simulated time stands for wall time).

Pending-status writes are counted only when the QuotaReserved condition would change, as
`DecisionWriter._set_pending` does. It prints ms of CPU per admission by part, per shape, and the
ratio large-scale/baseline. Upstream's figure for that ratio is 1.1 (issue 36).

    python bench/bench_core_scale.py                      # both shapes, a tenth of their Workloads
    python bench/bench_core_scale.py --shape large-scale --profile /tmp/ls.prof
    python bench/bench_core_scale.py --shape tas          # upstream's TAS config: 640 nodes in 10 racks
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import hashlib
import heapq
import itertools
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from simulate_scale import T0, feed, objects, pending_obj, with_conditions  # noqa: E402

from webhook.config import Configuration  # noqa: E402
from webhook.core.cycle import AdmissionCore, Admit, Pending, Preempt  # noqa: E402
from webhook.worker.manager import (  # noqa: E402
    MAX_WRITE_BACKLOG,
    METRICS_REFRESH_S,
    METRICS_REFRESH_SHARE,
    STATUS_BATCH_S,
    scheduler_config,
)
from webhook.worker.queue_status import QueueStatusPublisher  # noqa: E402
from webhook.worker.reporter import MetricsReporter  # noqa: E402
from webhook.worker.store import Store  # noqa: E402


def _sets(small: tuple[int, int, int], medium: tuple[int, int, int], large: tuple[int, int, int]) -> list[Any]:
    """Workload sets of a generator config: (count, creationIntervalMs, runtimeMs) per class."""
    return [
        {
            "count": n,
            "creationIntervalMs": every,
            "workloads": [{"className": cls, "runtimeMs": runtime, "priority": prio, "request": req}],
        }
        for (n, every, runtime), cls, prio, req in (
            (small, "small", 50, 1),
            (medium, "medium", 100, 5),
            (large, "large", 200, 20),
        )
    ]


def _config(cqs: int, sets: list[Any]) -> dict[str, Any]:
    qs = {
        "className": "cq",
        "count": cqs,
        "nominalQuota": 20,
        "borrowingLimit": 100,
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "workloadsSets": sets,
    }
    return {"cohorts": [{"className": "cohort", "queuesSets": [qs]}]}


RACK = "cloud.provider.com/topology-rack"
TAS_LEVELS = ("cloud.provider.com/topology-block", RACK, "kubernetes.io/hostname")


def _tas_sets() -> list[Any]:
    """The TAS config's Workload sets: per class size, a required, a preferred and a balanced (slice)
    rack constraint; (count, creationIntervalMs, runtimeMs, priority, request, podCount, sliceSize)."""
    sizes = (
        ("small", (120, 120, 110), 100, 200, 50, "500m", 2, 1),
        ("medium", (34, 33, 33), 500, 500, 100, "1250m", 4, 2),
        ("large", (17, 17, 16), 1200, 1000, 200, "2500m", 8, 4),
    )
    return [
        {
            "count": n,
            "creationIntervalMs": every,
            "workloads": [
                {
                    "className": f"{cls}-{constraint}-rack",
                    "runtimeMs": runtime,
                    "priority": prio,
                    "request": 0,  # `objects` reads whole CPUs; the pod's request is `podRequest`
                    "podRequest": req,
                    "podCount": pods,
                    "tasConstraint": constraint,
                    "sliceSize": slice_size,
                }
            ],
        }
        for cls, counts, every, runtime, prio, req, pods, slice_size in sizes
        for n, constraint in zip(counts, ("required", "preferred", "balanced"), strict=True)
    ]


# upstream v0.19.2 test/performance/scheduler/configs/{baseline,large-scale,tas}/generator.yaml:
# (config, cohorts); tas: 1 block x 10 racks x 64 nodes of 96 CPU (`TAS_LEVELS`, `tas_objects`)
SHAPES: dict[str, tuple[dict[str, Any], int]] = {
    "baseline": (_config(6, _sets((350, 100, 200), (100, 500, 500), (50, 1200, 1000))), 5),
    "large-scale": (_config(100, _sets((35, 60, 150), (11, 300, 350), (4, 700, 700))), 10),
    "tas": (_config(6, _tas_sets()), 5),
}


def tas_objects(racks: int = 10, per_rack: int = 64) -> list[tuple[str, dict[str, Any]]]:
    """The TAS generator's Topology, its ResourceFlavor (named as `objects`' flavor) and Ready nodes
    (`topology_generator.go`)."""
    objs: list[tuple[str, dict[str, Any]]] = [
        (
            "topology",
            {"metadata": {"name": "default-topology"}, "spec": {"levels": [{"nodeLabel": lv} for lv in TAS_LEVELS]}},
        ),
        (
            "rf",
            {
                "metadata": {"name": "rf"},
                "spec": {"topologyName": "default-topology", "nodeLabels": {"tas-node-group": "tas"}},
            },
        ),
    ]
    for r in range(racks):
        for n in range(per_rack):
            name = f"node-b0-r{r}-n{n}"
            labels = {"tas-node-group": "tas", TAS_LEVELS[0]: "block-0", RACK: f"rack-{r}", TAS_LEVELS[2]: name}
            status = {
                "allocatable": {"cpu": "96", "memory": "256Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            }
            objs.append(("node", {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": status}))
    return objs


def tas_pod_set(obj: dict[str, Any], wt: dict[str, Any]) -> dict[str, Any]:
    """`obj` with the pod set the TAS generator builds for Workload template `wt` (generator.go)."""
    ps = obj["spec"]["podSets"][0]
    ps["count"] = wt["podCount"]
    ps["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = wt["podRequest"]
    if wt["tasConstraint"] == "required":
        ps["topologyRequest"] = {"required": RACK}
    elif wt["tasConstraint"] == "preferred":
        ps["topologyRequest"] = {"preferred": RACK}
    else:
        ps["topologyRequest"] = {"podSetSliceRequiredTopology": RACK, "podSetSliceSize": wt["sliceSize"]}
    return obj


QPS = 50.0
LATENCY = timedelta(milliseconds=20)  # a write reaching the informers
STEP = timedelta(milliseconds=5)


@dataclass
class Figures:
    admissions: int = 0
    cycles: int = 0
    preemptions: int = 0
    writes: Counter[str] = field(default_factory=Counter)
    cpu: Counter[str] = field(default_factory=Counter)  # seconds per part
    order: list[str] = field(default_factory=list)  # admitted keys, in order
    seconds: float = 0.0  # simulated time measured

    def per_admission_ms(self, part: str) -> float:
        return 1000 * self.cpu[part] / max(1, self.admissions)


class _Writes:
    """The writers' queue as the status publisher sees it: counts, and the keys to echo back."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def add(self, key: str, item: object = None, *, first: bool = False) -> None:
        self.keys.append(key)


class Replay:
    """The worker's core thread on a simulated clock (see the module docstring)."""

    def __init__(self, shape: str, fraction: float) -> None:
        config, cohorts = SHAPES[shape]
        config = copy.deepcopy(config)
        for ws in config["cohorts"][0]["queuesSets"][0]["workloadsSets"]:
            ws["count"] = max(1, round(ws["count"] * fraction))
        self.core = AdmissionCore(scheduler_config(Configuration()))
        self.reporter = MetricsReporter(Configuration())
        objs, self.wls = objects(config, cohorts=cohorts)
        self.templates: dict[str, dict[str, Any]] = {}
        if shape == "tas":
            self.templates = {
                wt["className"]: wt
                for ws in config["cohorts"][0]["queuesSets"][0]["workloadsSets"]
                for wt in ws["workloads"]
            }
            for kind, obj in tas_objects():
                if kind == "topology":
                    self.core.on_topology(obj, T0)
                elif kind == "node":
                    self.core.on_node(obj, T0)
                else:
                    self.core.on_resource_flavor(obj, T0)
            objs = [(kind, obj) for kind, obj in objs if kind != "rf"]
        feed(self.core, objs)
        self.by_key = {f"{w.ns}/{w.name}": w for w in self.wls}
        self.writes = _Writes()
        self.status = QueueStatusPublisher(self.core, Store(), self.writes)  # type: ignore[arg-type]
        self.fig = Figures()
        self.seq = itertools.count()
        # (at, seq, what, key): "seen" (a written status reaches the core), "finish" (the runner)
        self.events: list[tuple[datetime, int, str, str]] = []
        self.bucket = T0  # when the client's token bucket next lets a write through
        self.in_flight: list[datetime] = []  # when each queued write is done
        self.cycle_writes_until = T0  # the last cycle's pending-status writes are done
        self.shown: dict[str, tuple[str, str]] = {}  # QuotaReserved=False (reason, message) written
        self.queue_writes: dict[str, None] = {}
        self.queue_bucket = T0
        self.profiler: cProfile.Profile | None = None

    def _pending(self, w: Any, at: datetime, evicted: bool) -> dict[str, Any]:
        obj = pending_obj(w, at, evicted)
        return tas_pod_set(obj, self.templates[w.cls]) if self.templates else obj

    def _timed(self, part: str, fn: Any, *args: Any) -> tuple[Any, float]:
        """fn(*args) and the CPU seconds it took, counted under `part`."""
        t = time.process_time()
        out = fn(*args)
        took = time.process_time() - t
        self.fig.cpu[part] += took
        return out, took

    def _write(self, now: datetime, kind: str) -> datetime:
        """One write through the client's token bucket; pending-status writes count in the backlog
        (`WorkQueue.backlog`: the writes not queued `first`)."""
        self.bucket = max(self.bucket, now) + timedelta(seconds=1 / QPS)
        if kind == "pending":
            self.in_flight.append(self.bucket)
        self.fig.writes[kind] += 1
        return self.bucket

    def _later(self, at: datetime, what: str, key: str) -> None:
        heapq.heappush(self.events, (at, next(self.seq), what, key))

    def _dispatch(self, result: Any, now: datetime) -> None:
        for d in result.decisions:
            key = str(d.key) if not isinstance(d, Preempt) else ""
            if isinstance(d, Admit):
                w = self.by_key[key]
                conds = [
                    {"type": cv.type, "status": cv.status, "reason": cv.reason, "message": cv.message}
                    for cv in d.conditions
                ]
                w.obj = with_conditions(w.obj, conds)
                w.obj["status"]["admission"] = dict(d.admission)
                self.fig.admissions += 1
                self.fig.order.append(key)
                self._later(self._write(now, "admit") + LATENCY, "admitted", key)
            elif isinstance(d, Preempt):
                for v in d.targets:
                    self.fig.preemptions += 1
                    self._later(self._write(now, "evict") + LATENCY, "evicted", str(v.key))
            elif isinstance(d, Pending):
                shown = (d.conditions[0].reason, d.conditions[0].message)
                if self.shown.get(key) != shown:
                    self.shown[key] = shown
                    self.cycle_writes_until = max(self.cycle_writes_until, self._write(now, "pending"))

    def _event(self, at: datetime, what: str, key: str) -> None:
        w = self.by_key[key]
        if what == "admitted":
            self.core.on_workload(w.obj, at)
            self._later(at + timedelta(milliseconds=w.runtime_ms) + LATENCY, "finish", key)
        elif what == "finish":
            done = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": ""}
            self.core.on_workload(with_conditions(w.obj, [done]), at)
        elif what == "evicted":
            # The finish of the evicted run is dropped; the runner clears the reservation.
            self.events = [e for e in self.events if not (e[3] == key and e[2] == "finish")]
            heapq.heapify(self.events)
            w.obj = self._pending(w, at, True)
            self.shown.pop(key, None)
            self.core.on_workload(w.obj, at)

    def run(self) -> Figures:
        """Replay the whole run: every Workload created, admitted and finished (as bench-scale
        measures whole runs: the start, when every ClusterQueue admits at once, included)."""
        arrivals = sorted(self.wls, key=lambda w: w.created)
        ai, now = 0, T0
        status_due: datetime | None = None
        echoes: list[str] = []
        wake = False
        next_refresh = T0
        if self.profiler is not None:
            self.profiler.enable()
        while ai < len(arrivals) or self.events or self.core.queues.pending:
            batch = bool(echoes)
            t = time.process_time()
            while ai < len(arrivals) and arrivals[ai].created + LATENCY <= now:
                w = arrivals[ai]
                w.obj = self._pending(w, now, False)
                self.core.on_workload(w.obj, now)
                ai, batch = ai + 1, True
            while self.events and self.events[0][0] <= now:
                at, _, what, key = heapq.heappop(self.events)
                self._event(at, what, key)
                batch = True
            self.fig.cpu["events"] += time.process_time() - t
            echoes = []  # our own queue status writes came back: status-only, they wake the loop
            self.in_flight = [at for at in self.in_flight if at > now]
            due = self.core.next_requeue_at()
            # The core loop schedules after each drain that returned something or a due requeue, and
            # retries a held round as soon as the writes drain.
            wake = wake or batch or (due is not None and due <= now)
            if wake and self.cycle_writes_until <= now and len(self.in_flight) < MAX_WRITE_BACKLOG:
                wake = False
                for _ in range(10000):
                    result = self._timed("cycles", self.core.schedule, now)[0]
                    self.fig.cycles += 1
                    self._dispatch(result, now)
                    if not (result.admitted or result.preempted) or self.cycle_writes_until > now:
                        break
            if status_due is None and batch:
                status_due = now + timedelta(seconds=STATUS_BATCH_S)
            if status_due is not None and now >= status_due:
                status_due = None
                self._timed("status", self.status.publish, now)
                # The queue-status writer: its own queue (a key queued twice is written once) and
                # its own token buckets (one per resource, `Kube._bucket`), one thread.
                self.queue_writes.update(dict.fromkeys(self.writes.keys))
                self.writes.keys = []
            if now >= next_refresh:
                took = self._timed("gauges", self.reporter.refresh, self.core)[1]
                next_refresh = now + timedelta(seconds=took + max(METRICS_REFRESH_S, METRICS_REFRESH_SHARE * took))
            while self.queue_writes and self.queue_bucket <= now:
                key = next(iter(self.queue_writes))
                del self.queue_writes[key]
                echoes.append(key)
                self.fig.writes["queue status"] += 1
                self.queue_bucket = max(self.queue_bucket, now) + timedelta(seconds=1 / QPS)
            now += STEP
        if self.profiler is not None:
            self.profiler.disable()
        self.fig.seconds = (now - T0).total_seconds()
        return self.fig


PARTS = ("events", "cycles", "status", "gauges")


def _writes(fig: Figures) -> str:
    return "/".join(str(fig.writes[k]) for k in ("admit", "evict", "pending", "queue status"))


def measure(shape: str, fraction: float, profile: Path | None) -> Figures:
    replay = Replay(shape, fraction)
    if profile is not None:
        replay.profiler = cProfile.Profile()
    fig = replay.run()
    if replay.profiler is not None:
        replay.profiler.dump_stats(profile)
    return fig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", choices=[*SHAPES, "both"], default="both", help="both: baseline and large-scale")
    p.add_argument(
        "--fraction", type=float, default=0.1, help="of each ClusterQueue's Workloads to replay (1: the whole config)"
    )
    p.add_argument("--profile", type=Path, help="cProfile output (with one --shape)")
    args = p.parse_args(argv)
    shapes = ["baseline", "large-scale"] if args.shape == "both" else [args.shape]
    print(
        f"{'shape':>12} {'CQs':>5} {'admitted':>8} {'cycles':>7} {'sim s':>6} {'writes':>24} "
        + " ".join(f"{x:>8}" for x in PARTS)
        + f" {'ms/adm':>8}"
    )
    totals = {}
    for shape in shapes:
        fig = measure(shape, args.fraction, args.profile)
        config, cohorts = SHAPES[shape]
        cqs = cohorts * config["cohorts"][0]["queuesSets"][0]["count"]
        total = sum(fig.per_admission_ms(x) for x in PARTS)
        totals[shape] = total
        print(
            f"{shape:>12} {cqs:>5} {fig.admissions:>8} {fig.cycles:>7} {fig.seconds:>6.0f} {_writes(fig):>24} "
            + " ".join(f"{fig.per_admission_ms(x):>8.3f}" for x in PARTS)
            + f" {total:>8.3f}"
        )
        digest = hashlib.sha256("\n".join(fig.order).encode()).hexdigest()[:12]
        print(f"{'':>12} admission order sha256 {digest} (equal before and after a change that keeps decisions)")
    if {"large-scale", "baseline"} <= totals.keys():
        print(
            f"large-scale/baseline ms per admission: {totals['large-scale'] / totals['baseline']:.2f} (upstream: 1.1)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
