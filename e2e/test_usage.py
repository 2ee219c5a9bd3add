"""Usage accounting (ours): UsageRecord totals equal the Workloads' admission intervals, to the second,
across repeated leader kills (two replicas on one lease, the holder's worker SIGKILLed while Jobs run),
and `kubectl kueue usage` shows them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from e2e import reliability as rel
from e2e.conftest import Kubectl, local_stack
from webhook import kube as k
from webhook.api import quantity
from webhook.core import usage
from webhook.core.workload import parse_time
from webhook.worker.usage import RECORDS

CLI = Path(sys.executable).parent / "kubectl-kueue"
JOBS = 36
KILLS = 3
LEASE, RENEW, RETRY = 4.0, 3.0, 1.0


def _seconds(wl: dict[str, Any], ctype: str) -> int:
    when = parse_time(rel.cond(wl, ctype).get("lastTransitionTime"))
    assert when is not None, f"{wl['metadata']['name']}: no {ctype} time"
    return int(when.timestamp())


def expected_usage(workloads: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(ClusterQueue, LocalQueue) → milli-CPU-seconds: resourceUsage times (Finished - QuotaReserved)."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for wl in workloads:
        admission = wl["status"]["admission"]
        held = _seconds(wl, "Finished") - _seconds(wl, "QuotaReserved")
        for psa in admission["podSetAssignments"]:
            milli = quantity.amount("cpu", psa["resourceUsage"]["cpu"])
            out[(admission["clusterQueue"], wl["spec"]["queueName"])] += milli * held
    return dict(out)


def recorded_usage(kube: k.Kube, namespace: str) -> tuple[dict[tuple[str, str], int], int]:
    """What the UsageRecords hold for `namespace`, and the newest watermark."""
    items, _ = kube.list(RECORDS)
    out: dict[tuple[str, str], int] = defaultdict(int)
    watermark = 0
    for item in items:
        ledger = usage.from_record(item)
        watermark = max(watermark, ledger.watermark)
        for key, value in ledger.totals.items():
            if key.namespace == namespace and key.resource == "cpu":
                out[(key.cluster_queue, key.local_queue)] += value
    return dict(out), watermark


@pytest.mark.local_stack
def test_usage_totals_match_admission_intervals_across_leader_kills(kubectl: Kubectl, tmp_path: Path) -> None:
    stack = local_stack(kubectl)
    kube = rel.admin(stack.kubeconfig)
    stack._stop_server()  # its worker would compete for the lease
    replicas: list[rel.Replica] = []
    ns = ""
    setup = None
    try:
        replicas = [
            rel.Replica.start(
                name,
                tmp_path,
                cert_dir=stack.cert_dir,
                kubeconfig=stack.kubeconfig,
                port=port,
                lease=LEASE,
                renew=RENEW,
                retry=RETRY,
            )
            for name, port in (("replica-a", stack.port), ("replica-b", None))
        ]

        def ours() -> tuple[str, int] | None:
            holder, pid = rel.lease_holder(kube)
            return (holder, pid) if pid is not None and any(pid in r.workers() for r in replicas) else None

        rel.wait_for("a replica's worker to hold the lease", ours, timeout=LEASE * 3 + 20)
        ns = rel.make_namespace(kube)
        setup = rel.make_setup(kube, ns, cq_cpu=(4, 4), borrowing=(None, None))
        queues = list(setup.lqs)
        objs = [
            rel.job(ns, f"usage-{i:03d}", queues[i % 2], cpu=("500m", "1")[i % 2], run=f"{4 + i % 5}s")
            for i in range(JOBS)
        ]
        submitter = threading.Thread(target=rel.submit, args=(kube, ns, objs), daemon=True)
        submitter.start()
        takeovers = []
        for _ in range(KILLS):
            time.sleep(RETRY * 3)
            holder, pid = rel.wait_for("a lease holder", ours, timeout=LEASE * 3 + 20)
            killed = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            rel.wait_for(
                "a new lease holder",
                lambda old=holder: (h := ours()) is not None and h[0] != old,  # type: ignore[misc]
                timeout=LEASE * 3 + 20,
                interval=0.05,
            )
            takeovers.append(round(time.monotonic() - killed, 1))
        submitter.join(timeout=60)
        final = rel.final_check(kube, setup, [o["metadata"]["name"] for o in objs], timeout=240)
        assert final["problems"] == []
        workloads, _ = kube.list(k.object_path(rel.V1B2, "workloads", ns))
        assert len(workloads) == JOBS
        # each Workload reserved quota once: its conditions then describe its one interval
        assert [w["metadata"]["name"] for w in workloads if rel.cond(w, "Evicted")] == []
        expected = expected_usage(workloads)
        last_end = max(_seconds(w, "Finished") for w in workloads)
        recorded, _ = rel.wait_for(
            "the UsageRecords to reach the last Finished time",
            lambda: ((r := recorded_usage(kube, ns))[1] >= last_end and r) or None,
            timeout=60,
            interval=1.0,
        )
        print(f"usage: takeovers {takeovers} s, {sum(expected.values()) / 1000:.0f} cpu-seconds in {JOBS} workloads")
        assert recorded == expected
        # what `kubectl kueue usage` shows for the namespace, per LocalQueue, in core-hours
        proc = subprocess.run(
            [str(CLI), "usage", "--by", "localqueue", "-n", ns, "-o", "json"],
            env={**os.environ, "KUBECONFIG": str(stack.kubeconfig)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        shown = {
            i["localQueue"]: i["resourceHours"] for i in json.loads(proc.stdout)["items"] if i["resource"] == "cpu"
        }
        assert shown == {lq: round(v / 1000 / 3600, 6) for (_, lq), v in expected.items()}
        errors = [e for r in replicas for e in rel.log_errors(r.log)]
        assert errors == []
    finally:
        for r in replicas:
            r.stop()
        if setup is not None:
            setup.cleanup(kube)
        if ns:
            rel.delete_namespace(kube, ns)
        stack._start_server(stack.port)
