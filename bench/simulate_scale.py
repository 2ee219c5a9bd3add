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
    python bench/simulate_scale.py --evictions           # every eviction: when, which, by whom, why
    python bench/simulate_scale.py --write-qps 10 --backlog 4 --latency-ms 250 --compare

Objects look like the API's: creation times to the second, random-looking UIDs, conditions set by
type. --latency-ms is the runner's and the informers' delay (the core sees a creation that late,
the runner an admission, the core the runner's Finished or cleared reservation); the core's own
Evicted patch comes back after --echo-ms, the victim evicted but still holding quota.

--compare answers "is a decision different from upstream's on the same state?": before every cycle
that preempts (and every 25th that admits) the state the core sees is recorded; upstream's own
scheduling cycle (e2e/tools/kueue/cyclereplay, built on first use) and a fresh core each run one
cycle on every recorded state, and their admissions and victims are compared. Upstream orders
heads that tie (same borrowing, priority and second) by Go map order, ours by UID, so upstream's
cycle runs --runs times per state (8 times more where ours is not among its decisions).
"""

from __future__ import annotations

import argparse
import copy
import heapq
import itertools
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webhook.core.cycle import AdmissionCore, Admit, CycleResult, Preempt, SchedulerConfig  # noqa: E402

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


def objects(
    config: dict[str, Any], stagger_ms: int = 0, *, cohorts: int = 1
) -> tuple[list[tuple[str, dict[str, Any]]], list[Wl]]:
    """The generator's ClusterQueues, LocalQueues and Workloads for the first `cohorts` cohorts of
    the first cohort set of `config` (the replay's one cohort; `bench_core_scale`: all of them); the
    workloads of the i-th ClusterQueue of a cohort are created i * `stagger_ms` later."""
    objs: list[tuple[str, dict[str, Any]]] = [("rf", {"metadata": {"name": "rf"}, "spec": {}})]
    wls: list[Wl] = []
    cohort = config["cohorts"][0]
    for ci in range(cohorts):
        _cohort_objects(cohort, ci, stagger_ms, objs, wls)
    return objs, wls


def _cohort_objects(
    cohort: dict[str, Any], ci: int, stagger_ms: int, objs: list[tuple[str, dict[str, Any]]], wls: list[Wl]
) -> None:
    for qs in cohort["queuesSets"]:
        for qi in range(qs["count"]):
            name = f"{qs['className']}-0-{qi}-{cohort['className']}-{ci}"
            objs.append(
                (
                    "cq",
                    {
                        "metadata": {"name": name, "generation": 1},
                        "spec": {
                            "cohortName": f"{cohort['className']}-{ci}",
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
                        created = T0 + timedelta(milliseconds=ws["creationIntervalMs"] * (i + 1) + stagger_ms * qi)
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


def with_conditions(obj: dict[str, Any], conds: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of `obj` with `conds` set by type, as the API keeps conditions (a map keyed by type)."""
    out = copy.deepcopy(obj)
    new = {c["type"] for c in conds}
    out["status"]["conditions"] = [c for c in out["status"]["conditions"] if c["type"] not in new] + conds
    return out


def pending_obj(w: Wl, at: datetime, evicted: bool) -> dict[str, Any]:
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
            # As the API server's: a random-looking UID, and creation times to the second (so that heads
            # of different ClusterQueues tie and are ordered by UID, as they are in bench-scale).
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{w.ns}/{w.name}")),
            "generation": 1,
            "creationTimestamp": _ts(w.created),
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


@dataclass(frozen=True)
class Eviction:
    at_s: float
    victim: str
    victim_class: str
    preemptor: str
    preemptor_class: str
    reason: str


@dataclass
class Outcome:
    evictions: Counter[str] = field(default_factory=Counter)
    admissions: int = 0
    admit_ms: dict[str, list[float]] = field(default_factory=dict)
    end_s: float = 0.0
    log: list[Eviction] = field(default_factory=list)


# A hook called before every cycle with (now, objects the core was fed, the cycle's result).
CycleHook = Callable[[datetime, list[tuple[str, dict[str, Any]]], list[dict[str, Any]], CycleResult], None]


def feed(core: AdmissionCore, objs: list[tuple[str, dict[str, Any]]]) -> None:
    for kind, obj in objs:
        if kind == "rf":
            core.on_resource_flavor(obj, T0)
        elif kind == "cq":
            core.on_namespace(obj["metadata"]["name"], {"kubernetes.io/metadata.name": obj["metadata"]["name"]}, T0)
            core.on_cluster_queue(obj, T0)
        else:
            core.on_local_queue(obj, T0)


def simulate(
    config: dict[str, Any],
    sched: SchedulerConfig,
    *,
    write_qps: float,
    step_ms: int,
    backlog: int = 0,
    stagger_ms: int = 0,
    latency_ms: int = 0,
    hold_evictions: bool = False,
    echo_ms: int = 5,
    hook: CycleHook | None = None,
) -> Outcome:
    """One replay; `write_qps` > 0 delays admission and eviction writes through one token bucket;
    `backlog` > 0 schedules only while fewer writes than that are waiting to land; `latency_ms` is
    the time a write takes to reach a watcher: the core sees a creation that late, the runner (the
    kubelet) an admission, and the core the runner's Finished or cleared reservation (the core's own
    Evicted patch comes back after `echo_ms`);
    `hold_evictions` starts no cycle before the eviction patches of the last ones are written."""
    core = AdmissionCore(sched)
    objs, wls = objects(config, stagger_ms)
    feed(core, objs)
    by_key = {f"{w.ns}/{w.name}": w for w in wls}
    live: dict[str, Wl] = {}  # created and not finished: what the core holds
    arrivals = sorted(wls, key=lambda w: w.created)
    seq = itertools.count()
    # (at, seq, what, key): "land-admit", "see-evict", "land-evict", "finish"
    events: list[tuple[datetime, int, str, str]] = []
    next_write = T0
    out = Outcome()
    now, ai = T0, 0
    step = timedelta(milliseconds=step_ms)
    lag = timedelta(milliseconds=latency_ms)
    echo = timedelta(milliseconds=min(echo_ms, latency_ms))
    evicting_until = T0  # when the last eviction patch issued is written

    def write_at(at: datetime) -> datetime:
        nonlocal next_write
        if write_qps <= 0:
            return at
        next_write = max(next_write, at) + timedelta(seconds=1 / write_qps)
        return next_write

    while ai < len(arrivals) or events or core.queues.pending:
        while ai < len(arrivals) and arrivals[ai].created + lag <= now:
            w = arrivals[ai]
            w.obj = pending_obj(w, now, False)
            core.on_workload(w.obj, now)
            live[f"{w.ns}/{w.name}"] = w
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
                live.pop(key, None)
            elif what == "land-admit":
                core.on_workload(w.obj, at)
                # The runner saw the admission `lag` ago; its Finished reaches the core `lag` later.
                heapq.heappush(events, (at + timedelta(milliseconds=w.runtime_ms) + lag, next(seq), "finish", key))
            elif what == "see-evict":
                # The core's own Evicted patch comes back: evicted, still holding quota.
                w.obj = with_conditions(
                    w.obj,
                    [
                        {"type": t, "status": "True", "reason": r, "message": "", "lastTransitionTime": _ts(at)}
                        for t, r in (("Evicted", "Preempted"), ("Preempted", "InCohortReclamation"))
                    ],
                )
                core.on_workload(w.obj, at)
            elif what == "land-evict":
                w.obj = pending_obj(w, at, True)
                core.on_workload(w.obj, at)
        for _ in range(1000):
            if backlog and sum(1 for e in events if e[2] != "finish") >= backlog:
                break
            if hold_evictions and evicting_until > now:
                break
            seen = [w.obj for w in live.values()] if hook else []
            result = core.schedule(now)
            if hook:
                hook(now, objs, seen, result)
            for d in result.decisions:
                if isinstance(d, Admit):
                    w = by_key[str(d.key)]
                    obj = with_conditions(
                        w.obj,
                        [
                            {
                                "type": cv.type,
                                "status": cv.status,
                                "reason": cv.reason,
                                "message": cv.message,
                                "lastTransitionTime": _ts(now),
                            }
                            for cv in d.conditions
                        ],
                    )
                    obj["status"]["admission"] = dict(d.admission)
                    w.obj = obj
                    out.admissions += 1
                    if w.admitted_at is None:
                        w.admitted_at = now
                        out.admit_ms.setdefault(w.cls, []).append((now - w.created).total_seconds() * 1000)
                    heapq.heappush(events, (write_at(now) + lag, next(seq), "land-admit", str(d.key)))
                elif isinstance(d, Preempt):
                    for v in d.targets:
                        w = by_key[str(v.key)]
                        w.evictions += 1
                        out.evictions[w.cls] += 1
                        out.log.append(
                            Eviction(
                                (now - T0).total_seconds(),
                                str(v.key),
                                w.cls,
                                str(d.preemptor_key),
                                by_key[str(d.preemptor_key)].cls,
                                str(v.reason),
                            )
                        )
                        # The finish of the evicted run is dropped: the eviction lands first or the
                        # workload had finished (then the core ignores the eviction).
                        events[:] = [e for e in events if not (e[3] == str(v.key) and e[2] == "finish")]
                        heapq.heapify(events)
                        # The patch is seen `lag` after its write, by the core and the runner; the
                        # runner clears the reservation, which the core sees `lag` later.
                        written = write_at(now)
                        evicting_until = max(evicting_until, written)
                        if lag:
                            heapq.heappush(events, (written + echo, next(seq), "see-evict", str(v.key)))
                        heapq.heappush(events, (written + 2 * lag, next(seq), "land-evict", str(v.key)))
            if not (result.admitted or result.preempted):
                break
        now += step
        if now > T0 + timedelta(hours=2):
            raise RuntimeError("simulation did not finish in 2 simulated hours")
    out.end_s = (now - T0).total_seconds()
    return out


def _decided(result: CycleResult) -> dict[str, Any]:
    """What a cycle decided, in the form cyclereplay prints: admitted keys, victim -> preemptor."""
    return {
        "admitted": sorted(str(d.key) for d in result.admitted),
        "preempted": {str(v.key): str(p.preemptor_key) for p in result.preempted for v in p.targets},
    }


class StateRecorder:
    """Records the state before every cycle that preempted, and before every `every`-th one that
    admitted, with what the simulated core decided on it."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.cycles = 0
        self.states: list[dict[str, Any]] = []
        self.decided: list[dict[str, Any]] = []

    def __call__(
        self, now: datetime, objs: list[tuple[str, dict[str, Any]]], seen: list[dict[str, Any]], result: CycleResult
    ) -> None:
        if not (result.preempted or result.admitted):
            return
        self.cycles += 1
        if not result.preempted and self.cycles % self.every:
            return
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for kind, obj in objs:
            by_kind.setdefault(kind, []).append(obj)
        self.states.append(
            {
                "id": str(len(self.states)),
                "now": now.isoformat(),
                "namespaces": [o["metadata"]["name"] for o in by_kind["cq"]],
                "resourceFlavors": by_kind["rf"],
                "clusterQueues": by_kind["cq"],
                "localQueues": by_kind["lq"],
                "workloads": copy.deepcopy(seen),
            }
        )
        self.decided.append(_decided(result))


def _fresh_cycle(
    sched: SchedulerConfig, objs: list[tuple[str, dict[str, Any]]], state: dict[str, Any]
) -> dict[str, Any]:
    """One cycle of a core built from `state` alone, as cyclereplay builds upstream's."""
    core = AdmissionCore(sched)
    feed(core, objs)
    now = datetime.fromisoformat(state["now"])
    for obj in state["workloads"]:
        core.on_workload(obj, now)
    return _decided(core.schedule(now))


def cyclereplay_binary() -> Path:
    """e2e/tools/kueue/cyclereplay, built (again when its source changed) next to upstream's binaries."""
    module = ROOT / "e2e" / "tools" / "kueue"
    gomod = (module / "go.mod").read_text()
    version = next(ln.split()[-1] for ln in gomod.splitlines() if "sigs.k8s.io/kueue v" in ln)
    cache = Path(
        os.environ.get("PYKUEUE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pykueue"
    )
    out = cache / f"kueue-{version}" / "bin" / "cyclereplay"
    newest = max((module / "cyclereplay" / "main.go").stat().st_mtime, (module / "go.mod").stat().st_mtime)
    if not out.exists() or out.stat().st_mtime < newest:
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"building {out} (the first build compiles upstream's scheduler: minutes)", file=sys.stderr)
        subprocess.run(
            ["go", "build", "-ldflags=-checklinkname=0", "-o", str(out), "./cyclereplay"],
            cwd=module,
            env=dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod"),
            check=True,
        )
    return out


def _upstream_runs(states: list[dict[str, Any]], uid_key: dict[str, str], runs: int) -> dict[str, list[dict[str, Any]]]:
    """The distinct decisions of `runs` upstream cycles on each state, by state id."""
    lines = "".join(json.dumps(st) + "\n" for st in states) * runs
    proc = subprocess.run([str(cyclereplay_binary())], input=lines, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"cyclereplay failed ({proc.returncode}): {proc.stderr.strip()}")
    out: dict[str, list[dict[str, Any]]] = {}
    for ln in proc.stdout.splitlines():
        up = json.loads(ln)
        d = {"admitted": sorted(up["admitted"]), "preempted": {v: uid_key[u] for v, u in up["preempted"].items()}}
        if d not in out.setdefault(up["id"], []):
            out[up["id"]].append(d)
    return out


def compare(rec: StateRecorder, sched: SchedulerConfig, objs: list[tuple[str, dict[str, Any]]], runs: int) -> int:
    """Upstream's cycle (`runs` times: it orders tied heads by Go map order, at random), a fresh core's
    and the simulated core's on every recorded state; returns on how many states the fresh core's
    decision is none of upstream's."""
    uid_key = {
        w["metadata"]["uid"]: f"{w['metadata']['namespace']}/{w['metadata']['name']}"
        for st in rec.states
        for w in st["workloads"]
    }
    upstream = _upstream_runs(rec.states, uid_key, runs)
    differ = history = varied = 0
    for st, ours_sim in zip(rec.states, rec.decided, strict=True):
        fresh = _fresh_cycle(sched, objs, st)
        ups = upstream[st["id"]]
        if fresh not in ups:  # maybe a tie upstream orders our way only now and then: 8 times more runs
            ups += [d for d in _upstream_runs([st], uid_key, runs * 8)[st["id"]] if d not in ups]
        varied += len(ups) > 1
        if fresh not in ups:
            differ += 1
            if differ <= 5:
                print(f"  state {st['id']} at {st['now']}: upstream {ups}\n    ours {fresh}")
        if fresh != ours_sim:
            history += 1
    n, p = len(rec.states), sum(1 for d in rec.decided if d["preempted"])
    print(
        f"  {n} states ({p} where the simulated core preempted), upstream's cycle run {runs} times on each: "
        f"a fresh core decides as one of upstream's runs on {n - differ} (upstream's runs varied, by tie order, "
        f"on {varied}); the simulated core, with its queue's history, decided otherwise than a fresh core on {history}"
    )
    return differ


VARIANTS = {
    "upstream defaults (hashing, 1 s requeue batches)": {"equivalence_hashing": True, "requeue_batch_s": 1.0},
    "hashing, requeue at once": {"equivalence_hashing": True, "requeue_batch_s": 0.0},
    "no hashing, 1 s requeue batches": {"equivalence_hashing": False, "requeue_batch_s": 1.0},
    "no hashing, requeue at once": {"equivalence_hashing": False, "requeue_batch_s": 0.0},
    "upstream defaults + overlap recomputation (main's gate)": {
        "equivalence_hashing": True,
        "requeue_batch_s": 1.0,
        "recompute_on_overlap": True,
    },
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
    p.add_argument("--stagger-ms", type=int, default=0, help="the i-th ClusterQueue's workloads come i * this later")
    p.add_argument("--latency-ms", type=int, default=0, help="time for a write to reach a watcher")
    p.add_argument("--echo-ms", type=int, default=5, help="time for the core's own Evicted patch to come back")
    p.add_argument(
        "--hold-evictions", action="store_true", help="no cycle while eviction patches are unwritten (as the worker)"
    )
    p.add_argument("--evictions", action="store_true", help="list every eviction")
    p.add_argument("--compare", action="store_true", help="run upstream's cycle on the recorded states (needs Go)")
    p.add_argument("--sample", type=int, default=25, help="with --compare: record every n-th admitting cycle")
    p.add_argument("--runs", type=int, default=8, help="with --compare: upstream's cycle runs per state")
    args = p.parse_args(argv)
    config = yaml.safe_load(args.config.read_text()) if args.config else BASELINE
    print(f"{'variant':<56}{'evictions s/m/l':>16}{'admissions':>12}{'end s':>8}  avg admission s small/medium/large")
    differ = 0
    for name, kw in VARIANTS.items():
        if args.only and name != args.only:
            continue
        sched = SchedulerConfig(**kw)  # type: ignore[arg-type]
        rec = StateRecorder(args.sample) if args.compare else None
        o = simulate(
            config,
            sched,
            write_qps=args.write_qps,
            step_ms=args.step_ms,
            backlog=args.backlog,
            stagger_ms=args.stagger_ms,
            latency_ms=args.latency_ms,
            hold_evictions=args.hold_evictions,
            echo_ms=args.echo_ms,
            hook=rec,
        )
        ev = "/".join(str(o.evictions[c]) for c in ("small", "medium", "large"))
        avg = "/".join(
            f"{sum(v) / len(v) / 1000:.1f}" for v in (o.admit_ms.get(c, [0]) for c in ("small", "medium", "large"))
        )
        print(f"{name:<56}{ev:>16}{o.admissions:>12}{o.end_s:>8.0f}  {avg}", flush=True)
        if args.evictions:
            for e in o.log:
                print(
                    f"  {e.at_s:8.2f} s  {e.victim} ({e.victim_class}) by {e.preemptor} ({e.preemptor_class}): {e.reason}"
                )
        if rec is not None:
            differ += compare(rec, sched, objects(config, args.stagger_ms)[0], args.runs)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
