"""Benchmark of the admission core (not a test): cycle time vs. pending count, and memory.

100 ClusterQueues in 10 cohorts, 3 flavors, mixed sizes and priorities, preemption on
(withinClusterQueue LowerPriority, reclaimWithinCohort Any). For each pending count it runs a fixed
number of cycles, finishing a few admitted workloads between cycles so admissions keep flowing,
and prints admissions/s, mean time per cycle and the growth ratios against the smallest size.
Memory per 1,000 pending workloads is measured with tracemalloc. Run: python bench/bench_core.py
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webhook.core import AdmissionCore, SchedulerConfig

T0 = datetime(2025, 1, 1, tzinfo=UTC)
FLAVORS = ("on-demand", "spot", "reserved")
SIZES = (2000, 5000, 10000, 20000)
CYCLES = 40


def _cq(i: int) -> dict[str, Any]:
    return {
        "kind": "ClusterQueue",
        "metadata": {"name": f"cq-{i}", "generation": 1},
        "spec": {
            "cohortName": f"cohort-{i % 10}",
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": f,
                            "resources": [
                                {"name": "cpu", "nominalQuota": "16"},
                                {"name": "memory", "nominalQuota": "64Gi"},
                            ],
                        }
                        for f in FLAVORS
                    ],
                }
            ],
        },
    }


def _wl(i: int, rng: random.Random) -> dict[str, Any]:
    cpu = rng.choice(("500m", "1", "2", "4", "8"))
    mem = rng.choice(("1Gi", "2Gi", "4Gi", "8Gi"))
    return {
        "kind": "Workload",
        "metadata": {
            "name": f"wl-{i}",
            "namespace": "bench",
            "uid": f"uid-{i:08d}",
            "creationTimestamp": (T0 + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "spec": {
            "queueName": f"lq-{i % 100}",
            "priority": rng.choice((0, 0, 0, 10, 100)),
            "podSets": [
                {
                    "name": "main",
                    "count": rng.choice((1, 1, 2, 4)),
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}
                    },
                }
            ],
        },
    }


def _setup() -> AdmissionCore:
    core = AdmissionCore(SchedulerConfig())
    core.on_namespace("bench", {"kubernetes.io/metadata.name": "bench"}, T0)
    for f in FLAVORS:
        core.on_resource_flavor({"kind": "ResourceFlavor", "metadata": {"name": f}, "spec": {}}, T0)
    for i in range(100):
        core.on_cluster_queue(_cq(i), T0)
        core.on_local_queue(
            {
                "kind": "LocalQueue",
                "metadata": {"name": f"lq-{i}", "namespace": "bench"},
                "spec": {"clusterQueue": f"cq-{i}"},
            },
            T0,
        )
    return core


def run(pending: int) -> tuple[float, float, float]:
    rng = random.Random(pending)
    core = _setup()
    objs = [_wl(i, rng) for i in range(pending)]
    for o in objs:
        core.on_workload(o, T0)
    admitted: list[str] = []
    times = []
    n_admitted = 0
    start = time.perf_counter()
    for c in range(CYCLES):
        now = T0 + timedelta(seconds=c)
        t = time.perf_counter()
        result = core.schedule(now)
        times.append(time.perf_counter() - t)
        for d in result.admitted:
            admitted.append(d.key)
        n_admitted += len(result.admitted)
        # finish the oldest admissions so quota frees up, and add fresh workloads to keep the count
        for key in admitted[:20]:
            ns, name = key.split("/")
            core.on_workload_deleted(ns, name, now)
        del admitted[:20]
        for _ in range(len(result.admitted)):
            core.on_workload(_wl(pending + rng.randrange(10**9), rng), now)
    total = time.perf_counter() - start
    return statistics.mean(times) * 1000, statistics.median(times) * 1000, n_admitted / sum(times) if total else 0.0


def memory_per_1000() -> float:
    rng = random.Random(1)
    core = _setup()
    objs = [_wl(i, rng) for i in range(5000)]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for o in objs:
        core.on_workload(o, T0)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return size / 5 / 1e6


def main() -> None:
    print(
        f"{'pending':>8} {'mean ms/cycle':>14} {'median ms':>10} {'admissions/s':>13} {'cycle-time ratio':>17} {'pending ratio':>14}"
    )
    base = None
    for n in SIZES:
        mean_ms, median_ms, rate = run(n)
        base = base or mean_ms
        print(f"{n:>8} {mean_ms:>14.2f} {median_ms:>10.2f} {rate:>13.0f} {mean_ms / base:>17.2f} {n / SIZES[0]:>14.1f}")
    print(f"memory per 1,000 pending workloads: {memory_per_1000():.2f} MB (tracemalloc)")


if __name__ == "__main__":
    main()
