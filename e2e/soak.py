"""`make soak`: the long versions of the reliability scenarios, on a fresh local stack; prints figures.

    python e2e/soak.py [--jobs 2000] [--kills 20] [--load 5000] [--outage-jobs 1000] [--pause 330] [--dir .run/soak]
                       [--only load|failover|outages|multikueue] [--load-timeout SECONDS] [--hostile]
                       [--mk-jobs 1000] [--mk-lost-timeout 30] [--mk-timeout SECONDS]

`--only load --hostile` mixes slow, oversized and malformed clients into the load (zero legitimate creates refused).
`--load 10000 --only load` is the memory soak: 10,000 Jobs in flight at once, the worker's peak RSS.
`--only multikueue`: Jobs through a MultiKueue manager and two workers (e2e/multicluster.py) while a worker's
kube-apiserver is killed past `workerLostTimeout` and restarted (e2e/reliability_multikueue.py).

CI runs the same scenarios small (e2e/test_reliability_*.py); this runs them at size and prints
takeover times, samples checked, requests sent and peak memory. Exit status 1 when an invariant broke.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import hostile  # noqa: E402
import reliability as rel  # noqa: E402
import reliability_multikueue as rmk  # noqa: E402
from multicluster import MultiClusterSystem, ours  # noqa: E402
from stack import Stack  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=2000, help="Jobs in the failover run")
    p.add_argument("--kills", type=int, default=20, help="leader SIGKILLs during the failover run")
    p.add_argument("--load", type=int, default=5000, help="Jobs in the load run")
    p.add_argument("--outage-jobs", type=int, default=1000, help="Jobs in the restarts-and-outages run")
    p.add_argument(
        "--pause",
        type=float,
        default=330.0,
        help="seconds the worker stays SIGSTOPped (default: past the 300 s watch timeout)",
    )
    p.add_argument("--dir", default=str(HERE.parent / ".run" / "soak"))
    p.add_argument("--only", choices=("load", "failover", "outages", "multikueue"), help="run this scenario alone")
    p.add_argument("--mk-jobs", type=int, default=1000, help="Jobs through the MultiKueue manager")
    p.add_argument(
        "--mk-lost-timeout",
        type=float,
        default=30.0,
        help="the clusters' multiKueue.workerLostTimeout, in seconds (upstream's default is 15 min)",
    )
    p.add_argument(
        "--mk-timeout", type=float, help="seconds the MultiKueue run may take (default: max(900, 2 s a Job))"
    )
    p.add_argument(
        "--hostile",
        action="store_true",
        help="run slow, oversized and malformed clients against our servers beside the load (e2e/hostile.py)",
    )
    p.add_argument(
        "--load-timeout",
        type=float,
        help="seconds the load run waits for its Jobs to finish (default: max(300, load/2)); "
        "Jobs unfinished then are reported as problems, the peak RSS so far still is",
    )
    args = p.parse_args(argv)
    figures: dict[str, object] = {}
    ok = True
    try:
        if args.only != "multikueue":
            ok &= _single_cluster(args, figures)
        if args.only in (None, "multikueue"):
            ok &= _multikueue(args, figures)
    finally:
        print(json.dumps(figures, indent=1, default=str))
    return 0 if ok else 1


def _single_cluster(args: argparse.Namespace, figures: dict[str, object]) -> bool:
    """Load, failover and outages on one fresh stack."""
    stack = Stack(args.dir)
    stack.up()
    ok = True
    try:
        kube = rel.admin(stack.kubeconfig)
        # Load first (our session server, its worker), then failover (two replicas of our own).
        if args.only in (None, "load"):
            t0 = time.monotonic()
            load = rel.load(
                kube,
                n=args.load,
                server_pid=int(stack.pid_file.read_text()),
                timeout=args.load_timeout or max(300, args.load / 2),
                hostile=hostile.against_stack(stack) if args.hostile else None,
            )
            figures["load"] = {**load, "seconds": round(time.monotonic() - t0, 1)}
            ok &= not load["problems"] and not load["submit_errors"] and not load["violations"]
        if args.only in (None, "failover"):
            ok &= _failover(args, stack, kube, figures)
        if args.only in (None, "outages"):
            ok &= _outages(args, stack, kube, figures)
    finally:
        stack.down()
    return ok


def _multikueue(args: argparse.Namespace, figures: dict[str, object]) -> bool:
    """A lost MultiKueue worker on three fresh clusters."""
    system = MultiClusterSystem(
        Path(args.dir) / "multikueue",
        ours(config=rmk.config(args.mk_lost_timeout), job_pods_run=rmk.POD_RUN_S),
    )
    with system.session():
        mk = rmk.lost_worker(
            system,
            jobs=args.mk_jobs,
            worker_lost_timeout_s=args.mk_lost_timeout,
            timeout=args.mk_timeout or max(900, 2 * args.mk_jobs),
        )
    figures["multikueue"] = mk
    return not (mk["violations"] or mk["problems"] or mk["submit_errors"] or mk["on_both_workers_at_once"])


def _failover(args: argparse.Namespace, stack: Stack, kube: Any, figures: dict[str, object]) -> bool:
    """Jobs with leader kills across two replicas of our own (the session server stopped meanwhile)."""
    stack._stop_server()
    try:
        t0 = time.monotonic()
        fo = rel.failover(
            kube,
            Path(args.dir) / "replicas",
            cert_dir=stack.cert_dir,
            kubeconfig=stack.kubeconfig,
            port=stack.port,
            jobs=args.jobs,
            kills=args.kills,
            lease=15,
            renew=10,
            retry=2,
            cq_cpu=(16, 16, 16),
            timeout=max(300, args.jobs / 2),
        )
    finally:
        stack._start_server(stack.port)
    ts = sorted(fo["takeover_s"])
    figures["failover"] = {
        **{k: v for k, v in fo.items() if k not in ("takeover_s",)},
        "takeover_s": {
            "n": len(ts),
            "min": ts[0] if ts else None,
            "median": ts[len(ts) // 2] if ts else None,
            "max": ts[-1] if ts else None,
        },
        "seconds": round(time.monotonic() - t0, 1),
    }
    return not fo["violations"] and not fo["problems"] and not fo["submit_errors"]


def _outages(args: argparse.Namespace, stack: Stack, kube: Any, figures: dict[str, object]) -> bool:
    """Worker kills, kube-apiserver restarts and a long pause, on one replica of our own."""
    stack._stop_server()
    try:
        t0 = time.monotonic()
        out = rel.outages(
            kube,
            stack.cluster,
            Path(args.dir) / "outages",
            cert_dir=stack.cert_dir,
            kubeconfig=stack.kubeconfig,
            port=stack.port,
            jobs=args.outage_jobs,
            worker_kills=10,
            apiserver_restarts=2,
            pause_s=args.pause,
            lease=15,
            renew=10,
            retry=2,
            timeout=max(600, args.outage_jobs / 2 + args.pause),
        )
    finally:
        stack._start_server(stack.port)
    figures["outages"] = {**out, "seconds": round(time.monotonic() - t0, 1)}
    return not out["violations"] and not out["problems"] and not out["submit_errors"] and not out["tracebacks"]


if __name__ == "__main__":
    sys.exit(main())
