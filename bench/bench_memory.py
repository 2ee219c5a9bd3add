"""Benchmark of the worker's memory (not a test): RSS per 1,000 watched Jobs + Workloads + Pods.

A worker (`Manager`, no API behind it) is fed watch events of realistic objects, as the local
control plane serves them (`bench/data/watched_objects.json`, recorded from `make up`: a finished
and a running Job, their Workloads and pods, managedFields included), renamed per copy, through the
same path as the informers' (`Manager._event`: store, reconcilers' queues, metrics state, the core),
half of them finished. Each variant runs in a fresh process and reports its RSS growth:

* baseline — the cache transform before this benchmark existed (managedFields dropped, nothing else);
* trimmed — `webhook.worker.transform.compact`, what the worker runs.

Prints MB per 1,000 of each kind-triple and the ratio trimmed/baseline, measured in the same run.
Run: python bench/bench_memory.py [--n 10000]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webhook.config import Configuration  # noqa: E402
from webhook.kube import strip_managed_fields  # noqa: E402
from webhook.worker import messages as msg  # noqa: E402
from webhook.worker import store  # noqa: E402
from webhook.worker.manager import Manager  # noqa: E402

OBJECTS = json.loads((ROOT / "bench" / "data" / "watched_objects.json").read_text())
FLAVOR, CQ, LQ = "rel-5569ad", "rel-5569ad-0", "lq-0"


class NoKube:
    """Nothing reaches the API: the reconcilers' queues are never started."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the benchmark makes no API call ({name})")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def copies(kind: str, state: str, i: int) -> bytes:
    """The recorded object of `kind` in `state`, renamed to copy `i`, as the watch would send it."""
    raw = orjson.dumps(OBJECTS[kind][state])
    old_uid = OBJECTS["jobs"][state]["metadata"]["uid"]
    own_uid = OBJECTS[kind][state]["metadata"]["uid"]
    job = b"short" if state == "finished" else b"long"
    raw = raw.replace(own_uid.encode(), f"{i:08x}-{kind[:4]}-4000-8000-{i:012x}".encode())
    raw = raw.replace(old_uid.encode(), f"{i:08x}-jobs-4000-8000-{i:012x}".encode())
    raw = raw.replace(b'"' + job, f'"j{i:06d}'.encode()).replace(b"-" + job, f"-j{i:06d}".encode())
    return raw


def feed(n: int, mode: str) -> dict[str, float]:
    if mode == "baseline":
        store.compact = lambda kind, obj: strip_managed_fields(obj)  # type: ignore[assignment]
    m = Manager(NoKube(), Configuration(), identity="bench", stop=threading.Event())  # type: ignore[arg-type]

    def drain() -> None:
        now = datetime.now(UTC)
        while not m._core_q.empty():
            message = m._core_q.get_nowait()
            if not isinstance(message, msg.Synced):
                m._apply(message, now)

    for kind, obj in (
        ("resourceflavors", {"metadata": {"name": FLAVOR, "resourceVersion": "1"}, "spec": {}}),
        (
            "clusterqueues",
            {
                "metadata": {"name": CQ, "resourceVersion": "1", "generation": 1},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": str(n * 2)}]}],
                        }
                    ],
                },
            },
        ),
        (
            "localqueues",
            {"metadata": {"name": LQ, "namespace": "bench", "resourceVersion": "1"}, "spec": {"clusterQueue": CQ}},
        ),
        ("namespaces", {"metadata": {"name": "bench", "resourceVersion": "1"}}),
    ):
        m._event(kind, "ADDED", obj)
    drain()
    gc.collect()
    before = rss_mb()
    for i in range(n):
        state = "finished" if i % 2 else "running"
        for kind in ("jobs", "workloads", "pods"):
            m._event(kind, "ADDED", orjson.loads(copies(kind, state, i)))
        if i % 500 == 0:
            drain()
    drain()
    gc.collect()
    return {
        "mb_per_1000": (rss_mb() - before) / n * 1000,
        "cached": len(m.store.list("jobs")) + len(m.store.list("workloads")) + len(m.store.list("pods")),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=10000, help="Jobs (each with its Workload and a Pod) fed to the worker")
    p.add_argument("--mode", choices=("baseline", "trimmed"), help=argparse.SUPPRESS)  # one variant, in this process
    args = p.parse_args()
    if args.mode:
        print(json.dumps(feed(args.n, args.mode)))
        return
    out = {}
    for mode in ("baseline", "trimmed"):
        run = subprocess.run(
            [sys.executable, __file__, "--n", str(args.n), "--mode", mode], check=True, capture_output=True, text=True
        )
        out[mode] = json.loads(run.stdout)
        assert out[mode]["cached"] == 3 * args.n, out[mode]
    base, trimmed = out["baseline"]["mb_per_1000"], out["trimmed"]["mb_per_1000"]
    print(f"worker RSS per 1,000 Jobs + Workloads + Pods cached ({args.n:,} each, half finished):")
    print(f"  baseline (managedFields dropped only): {base:6.1f} MB")
    print(f"  trimmed (transform.compact):           {trimmed:6.1f} MB   ratio {trimmed / base:.2f}")


if __name__ == "__main__":
    main()
