"""Replay bench-scale's workload stream through the pure admission core, without an API server.

Why: `make bench-scale` shows our worker evicting many times more Workloads than upstream's
minimalkueue on the same generator config. This asks whether the core's decisions produce the
evictions by themselves. One cohort of the generator config (cohorts do not share quota, so each
behaves alike) is replayed on a simulated clock: Workloads are created at the generator's intervals
(`runner/generator/generator.go`), every decision is applied at once or after a simulated write
delay, an admitted Workload finishes after its runtime (the runner's kubelet), and a preempted one
is requeued as the runner completes evictions. Each variant of the scheduler configuration is run
on the same stream; the table gives evictions, admissions and time to admission per class.

    python bench/simulate_scale.py                       # baseline config, one cohort
    python bench/simulate_scale.py --write-qps 10        # admission/eviction writes at 10/s per cohort
"""

from __future__ import annotations

import argparse
import copy
import heapq
import itertools
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webhook.core.cycle import AdmissionCore, Admit, Preempt, SchedulerConfig  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BASELINE = {
    "cohorts": [
        {
            "className": "cohort",
            "count": 1,
            "queuesSets": [
                {
                    "className": "cq",
                    "count": 6,
                    "nominalQuota": 20,
                    "borrowingLimit": 100,
                    "reclaimWithinCohort": "Any",
                    "withinClusterQueue": "LowerPriority",
                    "workloadsSets": [
                        {
                            "count": 350,
                            "creationIntervalMs": 100,
                            "workloads": [{"className": "small", "runtimeMs": 200, "priority": 50, "request": 1}],
                        },
                        {
                            "count": 100,
                            "creationIntervalMs": 500,
                            "workloads": [{"className": "medium", "runtimeMs": 500, "priority": 100, "request": 5}],
                        },
                        {
                            "count": 50,
                            "creationIntervalMs": 1200,
                            "workloads": [{"className": "large", "runtimeMs": 1000, "priority": 200, "request": 20}],
                        },
                    ],
                }
            ],
        }
    ]
}


def _ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Wl:
    name: str
    ns: str
    cls: str
    priority: int
    request: int
    runtime_ms: int
    created: datetime
    evictions: int = 0
    admitted_at: datetime | None = None
    obj: dict[str, Any] = field(default_factory=dict)


def _objects(config: dict[str, Any]) -> tuple[list[tuple[str, dict[str, Any]]], list[Wl]]:
    """The generator's ClusterQueues, LocalQueues and Workloads for the first cohort of `config`."""
    objs: list[tuple[str, dict[str, Any]]] = [("rf", {"metadata": {"name": "rf"}, "spec": {}})]
    wls: list[Wl] = []
    cohort = config["cohorts"][0]
    for qs in cohort["queuesSets"]:
        for qi in range(qs["count"]):
            name = f"{qs['className']}-0-{qi}-{cohort['className']}-0"
            objs.append(
                (
                    "cq",
                    {
                        "metadata": {"name": name, "generation": 1},
                        "spec": {
                            "cohortName": f"{cohort['className']}-0",
                            "namespaceSelector": {},
                            "resourceGroups": [
                                {
                                    "coveredResources": ["cpu"],
                                    "flavors": [
                                        {
                                            "name": "rf",
                                            "resources": [
                                                {
                                                    "name": "cpu",
                                                    "nominalQuota": str(qs["nominalQuota"]),
                                                    "borrowingLimit": str(qs["borrowingLimit"]),
                                                }
                                            ],
                                        }
                                    ],
                                }
                            ],
                            "preemption": {
                                "reclaimWithinCohort": qs["reclaimWithinCohort"],
                                "withinClusterQueue": qs["withinClusterQueue"],
                            },
                        },
                    },
                )
            )
            objs.append(("lq", {"metadata": {"name": name, "namespace": name}, "spec": {"clusterQueue": name}}))
            for si, ws in enumerate(qs["workloadsSets"]):
                for i in range(ws["count"]):
                    for wt in ws["workloads"]:
                        created = T0 + timedelta(milliseconds=ws["creationIntervalMs"] * (i + 1))
                        wls.append(
                            Wl(
                                f"{wt['className']}-{si}-{i}-0",
                                name,
                                wt["className"],
                                int(wt["priority"]),
                                int(wt["request"]),
                                int(wt["runtimeMs"]),
                                created,
                            )
                        )
    return objs, wls


def _pending_obj(w: Wl, at: datetime, evicted: bool) -> dict[str, Any]:
    conds = (
        [
            {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "", "lastTransitionTime": _ts(at)},
            {"type": "Requeued", "status": "True", "reason": "Preempted", "message": "", "lastTransitionTime": _ts(at)},
        ]
        if evicted
        else []
    )
    return {
        "metadata": {
            "name": w.name,
            "namespace": w.ns,
            "uid": f"{w.ns}/{w.name}",
            "generation": 1,
            "creationTimestamp": w.created.isoformat(),
        },
        "spec": {
            "queueName": w.ns,
            "priority": w.priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(w.request)}}}]}
                    },
                }
            ],
        },
        "status": {"conditions": conds},
    }


@dataclass
class Outcome:
    evictions: Counter[str] = field(default_factory=Counter)
    admissions: int = 0
    admit_ms: dict[str, list[float]] = field(default_factory=dict)
    end_s: float = 0.0


def simulate(
    config: dict[str, Any], sched: SchedulerConfig, *, write_qps: float, step_ms: int, backlog: int = 0
) -> Outcome:
    """One replay; `write_qps` > 0 delays admission and eviction writes through one token bucket;
    `backlog` > 0 schedules only while fewer writes than that are waiting to land."""
    core = AdmissionCore(sched)
    objs, wls = _objects(config)
    for kind, obj in objs:
        if kind == "rf":
            core.on_resource_flavor(obj, T0)
        elif kind == "cq":
            core.on_namespace(obj["metadata"]["name"], {"kubernetes.io/metadata.name": obj["metadata"]["name"]}, T0)
            core.on_cluster_queue(obj, T0)
        else:
            core.on_local_queue(obj, T0)
    by_key = {f"{w.ns}/{w.name}": w for w in wls}
    arrivals = sorted(wls, key=lambda w: w.created)
    seq = itertools.count()
    events: list[tuple[datetime, int, str, str]] = []  # (at, seq, what, key): "land-admit", "land-evict", "finish"
    next_write = T0
    out = Outcome()
    now, ai = T0, 0
    step = timedelta(milliseconds=step_ms)

    def write_at(at: datetime) -> datetime:
        nonlocal next_write
        if write_qps <= 0:
            return at
        next_write = max(next_write, at) + timedelta(seconds=1 / write_qps)
        return next_write

    while ai < len(arrivals) or events or core.queues.pending:
        while ai < len(arrivals) and arrivals[ai].created <= now:
            w = arrivals[ai]
            w.obj = _pending_obj(w, now, False)
            core.on_workload(w.obj, now)
            ai += 1
        while events and events[0][0] <= now:
            at, _, what, key = heapq.heappop(events)
            w = by_key[key]
            if what == "finish":
                done = copy.deepcopy(w.obj)
                done["status"]["conditions"].append(
                    {
                        "type": "Finished",
                        "status": "True",
                        "reason": "Succeeded",
                        "message": "",
                        "lastTransitionTime": _ts(at),
                    }
                )
                core.on_workload(done, at)
            elif what == "land-admit":
                core.on_workload(w.obj, at)
                heapq.heappush(events, (at + timedelta(milliseconds=w.runtime_ms), next(seq), "finish", key))
            elif what == "land-evict":
                w.obj = _pending_obj(w, at, True)
                core.on_workload(w.obj, at)
        for _ in range(1000):
            if backlog and sum(1 for e in events if e[2] != "finish") >= backlog:
                break
            result = core.schedule(now)
            for d in result.decisions:
                if isinstance(d, Admit):
                    w = by_key[str(d.key)]
                    obj = copy.deepcopy(w.obj)
                    obj["status"]["admission"] = dict(d.admission)
                    obj["status"]["conditions"] = [
                        c for c in obj["status"]["conditions"] if c["type"] not in ("Evicted",)
                    ] + [
                        {
                            "type": cv.type,
                            "status": cv.status,
                            "reason": cv.reason,
                            "message": cv.message,
                            "lastTransitionTime": _ts(now),
                        }
                        for cv in d.conditions
                    ]
                    w.obj = obj
                    out.admissions += 1
                    if w.admitted_at is None:
                        w.admitted_at = now
                        out.admit_ms.setdefault(w.cls, []).append((now - w.created).total_seconds() * 1000)
                    heapq.heappush(events, (write_at(now), next(seq), "land-admit", str(d.key)))
                elif isinstance(d, Preempt):
                    for v in d.targets:
                        w = by_key[str(v.key)]
                        w.evictions += 1
                        out.evictions[w.cls] += 1
                        # The finish of the evicted run is dropped: the eviction lands first or the
                        # workload had finished (then the core ignores the eviction).
                        events[:] = [e for e in events if not (e[3] == str(v.key) and e[2] == "finish")]
                        heapq.heapify(events)
                        heapq.heappush(events, (write_at(now), next(seq), "land-evict", str(v.key)))
            if not (result.admitted or result.preempted):
                break
        now += step
        if now > T0 + timedelta(hours=2):
            raise RuntimeError("simulation did not finish in 2 simulated hours")
    out.end_s = (now - T0).total_seconds()
    return out


VARIANTS = {
    "upstream defaults (hashing, 1 s requeue batches)": {"equivalence_hashing": True, "requeue_batch_s": 1.0},
    "hashing, requeue at once": {"equivalence_hashing": True, "requeue_batch_s": 0.0},
    "no hashing, 1 s requeue batches": {"equivalence_hashing": False, "requeue_batch_s": 1.0},
    "no hashing, requeue at once (before this branch)": {"equivalence_hashing": False, "requeue_batch_s": 0.0},
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--config", type=Path, help="generator config (default: upstream's baseline); its first cohort is replayed"
    )
    p.add_argument("--write-qps", type=float, default=0.0, help="admission and eviction writes per second (0: instant)")
    p.add_argument("--step-ms", type=int, default=20, help="simulated time between scheduling rounds")
    p.add_argument("--only", choices=list(VARIANTS), help="run one variant")
    p.add_argument("--backlog", type=int, default=0, help="schedule only while fewer writes are waiting (0: always)")
    args = p.parse_args(argv)
    config = yaml.safe_load(args.config.read_text()) if args.config else BASELINE
    print(f"{'variant':<50}{'evictions s/m/l':>18}{'admissions':>12}{'end s':>8}  avg admission s small/medium/large")
    for name, kw in VARIANTS.items():
        if args.only and name != args.only:
            continue
        o = simulate(
            config, SchedulerConfig(**kw), write_qps=args.write_qps, step_ms=args.step_ms, backlog=args.backlog
        )  # type: ignore[arg-type]
        ev = "/".join(str(o.evictions[c]) for c in ("small", "medium", "large"))
        avg = "/".join(
            f"{sum(v) / len(v) / 1000:.1f}" for v in (o.admit_ms.get(c, [0]) for c in ("small", "medium", "large"))
        )
        print(f"{name:<50}{ev:>18}{o.admissions:>12}{o.end_s:>8.0f}  {avg}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
