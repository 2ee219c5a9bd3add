"""The gauge refresh computes a queue's series again only when the core reports the queue changed
or its pending counts moved (`MetricsReporter.refresh`): after every step of a random run of
creations, cycles, admissions landing, finishes and quota changes, the gauges equal those of a
refresh that computes every queue afresh."""

from __future__ import annotations

import copy
import random
from typing import Any

from prometheus_client import generate_latest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl
from webhook import metrics
from webhook.config import Configuration, Metrics
from webhook.core.cycle import Admit
from webhook.worker.reporter import MetricsReporter

CQS = ("a", "b", "c")


def _cq(name: str, cpu: int) -> dict[str, Any]:
    b = make_cq(name).cohort("co").group(fq("default", cpu=str(cpu)))
    return b.preemption(within="LowerPriority", reclaim="Any").obj()


def _gauges() -> list[str]:
    """The gauge lines of the worker registry's exposition, sorted."""
    text = generate_latest(metrics.WORKER_REGISTRY).decode()
    gauges = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE") and line.endswith("gauge")}
    return sorted(line for line in text.splitlines() if line.split("{")[0].split(" ")[0] in gauges)


def test_incremental_refresh_equals_a_full_one() -> None:
    rng = random.Random(7)
    core = make_core(
        make_flavor("default").obj(), *(_cq(n, 3) for n in CQS), *(make_lq(f"lq-{n}", "ns", n) for n in CQS)
    )
    rep = MetricsReporter(Configuration(metrics=Metrics(enable_cluster_queue_resources=True)))
    workloads: dict[str, dict[str, Any]] = {}
    admitted: list[str] = []
    for step in range(120):
        action = rng.choice(("create", "create", "schedule", "finish", "quota"))
        if action == "create":
            name = f"w{step}"
            cq = rng.choice(CQS)
            wl = make_wl(name).queue(f"lq-{cq}").priority(rng.choice((0, 1))).created(step)
            workloads[name] = wl.request(cpu=str(rng.randint(1, 3))).obj()
            core.on_workload(workloads[name], T0)
        elif action == "schedule":
            for d in core.schedule(T0).decisions:
                if isinstance(d, Admit) and rng.random() < 0.7:  # some writes land before the refresh
                    wl = workloads[d.key.split("/")[1]]
                    wl["status"]["admission"] = copy.deepcopy(dict(d.admission))
                    wl["status"]["conditions"] = [
                        {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                        for c in d.conditions
                    ]
                    core.on_workload(wl, T0)
                    admitted.append(d.key.split("/")[1])
        elif action == "finish" and admitted:
            name = admitted.pop(rng.randrange(len(admitted)))
            core.on_workload_deleted("ns", name, T0)
        elif action == "quota":
            core.on_cluster_queue(_cq(rng.choice(CQS), rng.randint(2, 5)), T0)
        rep.refresh(core)
        incremental = _gauges()
        for series in (rep._cq_series, rep._lq_series):
            series.stale.update(series.rows)  # every queue computed afresh
        rep.refresh(core)
        assert incremental == _gauges(), f"step {step} ({action})"
