"""How far wait estimates are from the admissions that follow, replayed in-process with the real core.

    python bench/bench_wait_estimate.py [--seed N] [--workloads N]

A ClusterQueue of 8 cpu gets workloads (1-4 cpu, priorities 0-2; all at once, then a Poisson stream)
whose run times are known to the replay and drawn from 30-150 s; half carry
maximumExecutionTimeSeconds (twice their run time, as users pad limits), the other half rely on the
median of finished runs (the last 20; the replay starts with 20 such runs behind it). A simulated clock moves by one second: finished workloads leave the
`AdmissionCore`, new ones arrive, `schedule` runs until it decides nothing, and every 5 s the
estimator (`core.wait_estimate`, as the visibility API runs it) estimates every pending workload;
`core.estimate_accuracy` scores each admission against the first and latest estimate. Arrivals
after an estimate and padded limits are what makes estimates wrong here; the replay prints p50/p90
of the absolute errors per basis. The local stack's measurement is `e2e/test_wait_estimate.py`.
"""

from __future__ import annotations

import argparse
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook.core import AdmissionCore, SchedulerConfig, ordering
from webhook.core.estimate_accuracy import EstimateLog, percentile
from webhook.core.snapshot import take_snapshot
from webhook.core.wait_estimate import RunTimes, estimate_admissions
from webhook.core.workload import WorkloadInfo, WorkloadKey

T0 = datetime(2026, 1, 1, tzinfo=UTC)
V1B2 = "kueue.x-k8s.io/v1beta2"


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _workload(i: int, cpu: int, priority: int, at: datetime, limit: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "queueName": "lq",
        "priority": priority,
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}},
            }
        ],
    }
    if limit is not None:
        spec["maximumExecutionTimeSeconds"] = limit
    meta = {"name": f"w{i:04d}", "namespace": "ns", "uid": f"uid-{i:04d}", "creationTimestamp": _stamp(at)}
    return {"apiVersion": V1B2, "kind": "Workload", "metadata": meta, "spec": spec, "status": {}}


def _core() -> AdmissionCore:
    core = AdmissionCore(SchedulerConfig())
    core.on_namespace("ns", {"kubernetes.io/metadata.name": "ns"}, T0)
    core.on_resource_flavor({"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": "f"}}, T0)
    quota = [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]
    core.on_cluster_queue(
        {
            "apiVersion": V1B2,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": quota}]},
        },
        T0,
    )
    core.on_local_queue(
        {
            "apiVersion": V1B2,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ns"},
            "spec": {"clusterQueue": "cq"},
        },
        T0,
    )
    return core


def replay(seed: int, count: int, every: float) -> dict[str, dict[str, list[float]]]:
    """Absolute errors in seconds by basis ("limit" | "observed") and estimate ("first" | "latest")."""
    rng = random.Random(seed)
    core, log = _core(), EstimateLog(keep=count)
    arrivals: list[tuple[int, dict[str, Any], int]] = []  # (second, object, run seconds)
    t = 0
    for i in range(count):
        t += int(rng.expovariate(1 / every)) if every else 0
        run = rng.randint(30, 150)
        limit = 2 * run if i % 2 else None
        arrivals.append((t, _workload(i, rng.randint(1, 4), rng.randint(0, 2), T0 + timedelta(seconds=t), limit), run))
    runs = {f"ns/w{i:04d}": run for i, (_, _, run) in enumerate(arrivals)}
    limits = {
        WorkloadKey(f"ns/{obj['metadata']['name']}"): obj["spec"]["maximumExecutionTimeSeconds"]
        for _, obj, _ in arrivals
        if "maximumExecutionTimeSeconds" in obj["spec"]
    }
    pending: dict[WorkloadKey, WorkloadInfo] = {}
    ends: dict[str, int] = {}
    observed = [float(rng.randint(30, 150)) for _ in range(20)]  # the queue's history before the replay
    errors: dict[str, dict[str, list[float]]] = {b: {"first": [], "latest": []} for b in ("limit", "observed")}
    second, nxt = 0, 0
    while nxt < len(arrivals) or pending or ends:
        now = T0 + timedelta(seconds=second)
        for key in [k for k, end in ends.items() if end <= second]:
            core.on_workload_deleted("ns", key.split("/")[1], now)
            observed.append(float(runs[key]))
            del ends[key]
        while nxt < len(arrivals) and arrivals[nxt][0] <= second:
            info = core.on_workload(arrivals[nxt][1], now)
            pending[info.key] = info
            nxt += 1
        if second % 5 == 0 and pending:
            queue = sorted(pending.values(), key=ordering.queue_key)
            run_times = RunTimes(limits, {"cq": tuple(observed[-20:])})
            log.record(estimate_admissions(take_snapshot(core.cache), {"cq": queue}, run_times, now))
        while decisions := core.schedule(now).decisions:
            for d in decisions:
                if type(d).__name__ != "Admit":
                    continue
                pending.pop(d.key, None)
                ends[d.key] = second + runs[d.key]
                scored = log.admitted(d.key, "cq", now)
                if scored is not None:
                    basis = "limit" if d.key in limits else "observed"
                    for which, err in (("first", scored.first_error), ("latest", scored.latest_error)):
                        if err is not None:
                            errors[basis][which].append(abs(err))
        second += 1
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workloads", type=int, default=300)
    args = parser.parse_args()
    # All at once (only run times make estimates wrong; 60 workloads, so the queue is ~20 min
    # long), then a stream at ~85 % load (one every ~30 s: 2.5 cpu for 90 s on average, 8 cpu).
    for title, count, every in (
        ("batch of 60 at once", 60, 0.0),
        (f"stream of {args.workloads}", args.workloads, 30.0),
    ):
        print(title)
        for basis, by in replay(args.seed, count, every).items():
            parts = [
                f"{which} p50 {percentile(e, 50) or 0:.0f} s p90 {percentile(e, 90) or 0:.0f} s (n={len(e)})"
                for which, e in by.items()
            ]
            print(f"  {basis:>8}: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
