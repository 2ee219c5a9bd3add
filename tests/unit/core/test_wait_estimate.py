"""Wait estimates from the running workloads' expected ends, replayed in the scheduler's order."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.builders import T0, fq, make_cohort, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core import Admit, ordering
from webhook.core.snapshot import take_snapshot
from webhook.core.wait_estimate import Estimate, RunTimes, estimate_admissions
from webhook.core.workload import WorkloadInfo, WorkloadKey, parse_workload

NOW = T0 + timedelta(seconds=100)


def running(name: str, cpu: str, at: float, cq: str = "cq") -> dict[str, Any]:
    return make_wl(name).request(cpu=cpu).reserve(cq, psa(cpu=("default", cpu)), at=at).obj()


def pending(name: str, cpu: str, *, created: float = 0, priority: int = 0, queue: str = "lq") -> dict[str, Any]:
    return make_wl(name).queue(queue).request(cpu=cpu).created(created).priority(priority).obj()


def estimate(
    objs: list[dict[str, Any]],
    *,
    limits: dict[str, int] | None = None,
    observed: dict[str, list[float]] | None = None,
    budget: int = 20_000,
) -> dict[str, Estimate]:
    """Estimates keyed by workload name, `now` = T0 + 100 s; pending workloads queue in their
    LocalQueue's ClusterQueue (`lq` -> `cq`, `lq-b` -> `cq-b`)."""
    core = make_core(*objs, *QUEUES)
    queues: dict[str, list[WorkloadInfo]] = {}
    for o in objs:
        if o["kind"] == "Workload" and not o["status"].get("admission"):
            wl = parse_workload(o)
            queues.setdefault("cq-b" if wl.queue_name == "lq-b" else "cq", []).append(wl)
    for wls in queues.values():
        wls.sort(key=ordering.queue_key)
    run_times = RunTimes({WorkloadKey(f"ns/{n}"): s for n, s in (limits or {}).items()}, observed or {})
    out = estimate_admissions(take_snapshot(core.cache), queues, run_times, NOW, budget=budget)
    return {key.split("/", 1)[1]: e for key, e in out.items()}


def at(seconds: float) -> Estimate:
    return Estimate(T0 + timedelta(seconds=seconds))


FLAVOR = make_flavor("default").obj()
QUEUES = [make_lq("lq", "ns", "cq"), make_lq("lq-b", "ns", "cq-b")]


def cq(cpu: str = "4", strategy: str = "BestEffortFIFO", name: str = "cq", cohort: str = "") -> dict[str, Any]:
    b = make_cq(name).group(fq("default", cpu=cpu)).strategy(strategy)
    return (b.cohort(cohort) if cohort else b).obj()


def big_then_small(strategy: str) -> list[dict[str, Any]]:
    """Two running of 2 cpu in 4; a pending one of 4 cpu, then one of 2."""
    return [
        FLAVOR,
        cq(strategy=strategy),
        running("r1", "2", at=0),
        running("r2", "2", at=0),
        pending("big", "4", created=1),
        pending("small", "2", created=2),
    ]


@pytest.mark.parametrize(
    ("objs", "limits", "observed", "want"),
    [
        pytest.param(
            [FLAVOR, cq(), pending("p", "2")],
            {},
            {},
            {"p": at(100)},
            id="free quota: admitted now",
        ),
        pytest.param(
            [FLAVOR, cq(), running("r", "4", at=0), pending("p", "2")],
            {"r": 300},
            {},
            {"p": at(300)},
            id="waits for the running workload's maximumExecutionTimeSeconds",
        ),
        pytest.param(
            [FLAVOR, cq(), running("r", "4", at=0), pending("p", "2")],
            {},
            {"cq": [100, 500, 200]},
            {"p": at(200)},
            id="no limit: the median run of finished workloads",
        ),
        pytest.param(
            [FLAVOR, cq(), running("r", "4", at=0), pending("p1", "4", created=1), pending("p2", "4", created=2)],
            {"r": 300, "p1": 600},
            {},
            {"p1": at(300), "p2": at(900)},
            id="the second waits for the first's own run time",
        ),
        pytest.param(
            [FLAVOR, cq(), running("r", "4", at=0), pending("p", "2")],
            {"r": 50},
            {},
            {"p": at(100)},
            id="overdue: expected to end any moment, so now",
        ),
        pytest.param(
            big_then_small("BestEffortFIFO"),
            {"r1": 200, "r2": 400},
            {"cq": [1000]},
            {"small": at(200), "big": at(1200)},
            id="BestEffortFIFO: a smaller one behind goes first when it fits",
        ),
        pytest.param(
            big_then_small("StrictFIFO"),
            {"r1": 200, "r2": 400},
            {"cq": [1000]},
            {"big": at(400), "small": at(1400)},
            id="StrictFIFO: the head blocks the queue",
        ),
        pytest.param(
            [
                FLAVOR,
                cq(),
                running("r", "4", at=0),
                pending("low", "4", created=1),
                pending("hi", "4", created=2, priority=5),
            ],
            {"r": 300},
            {"cq": [100]},
            {"hi": at(300), "low": at(400)},
            id="higher priority first",
        ),
        pytest.param(
            [FLAVOR, cq(), running("r", "4", at=0), pending("p", "2")],
            {},
            {},
            {
                "p": Estimate(
                    None,
                    "it waits for quota held by 1 workload(s) with no maximumExecutionTimeSeconds and no "
                    "finished workloads in their ClusterQueue to learn a run time from (ns/r)",
                )
            },
            id="unknown: a running workload with no limit and no history",
        ),
        pytest.param(
            [FLAVOR, cq(), pending("p", "8")],
            {},
            {},
            {
                "p": Estimate(
                    None,
                    "it does not fit ClusterQueue cq without preemption even once every running workload has ended",
                )
            },
            id="unknown: larger than the ClusterQueue",
        ),
        pytest.param(
            [FLAVOR, cq(), running("r", "4", at=0), pending("p", "2", created=1), pending("q", "2", created=2)],
            {"r": 300},
            {},
            {"p": at(300), "q": at(300)},
            id="two fit at once when the quota frees",
        ),
    ],
)
def test_estimates(
    objs: list[dict[str, Any]], limits: dict[str, int], observed: dict[str, list[float]], want: dict[str, Estimate]
) -> None:
    assert estimate(objs, limits=limits, observed=observed) == want


def test_borrowing_from_the_cohort_frees_with_the_lender_s_workloads() -> None:
    objs = [
        FLAVOR,
        make_cohort("co").obj(),
        cq("2", cohort="co"),
        cq("2", name="cq-b", cohort="co"),
        running("a", "2", at=0),
        running("b", "2", at=0, cq="cq-b"),
        pending("p", "3"),
    ]
    # p needs 3: its own 2 (free at 300) and 1 borrowed from cq-b (free at 500).
    assert estimate(objs, limits={"a": 300, "b": 500}) == {"p": at(500)}


def test_a_stopped_simulation_says_so() -> None:
    objs = [FLAVOR, cq(), running("r", "4", at=0), pending("p", "4", created=1), pending("q", "4", created=2)]
    got = estimate(objs, limits={"r": 300, "p": 100, "q": 100}, budget=1)
    assert got["q"] == Estimate(None, "the simulation stopped at its limit of fit checks before reaching this workload")


def test_the_estimates_match_what_the_core_then_does() -> None:
    """The real scheduler, with each workload finishing at its expected end, admits at the estimated times."""
    limits = {"r1": 150, "r2": 300, "p1": 200, "p2": 100, "p3": 50, "p4": 400}
    objs = [
        FLAVOR,
        cq("4"),
        running("r1", "2", at=0),
        running("r2", "2", at=0),
        pending("p1", "3", created=1),
        pending("p2", "1", created=2),
        pending("p3", "2", created=3, priority=1),
        pending("p4", "4", created=4),
    ]
    want = estimate(objs, limits=limits)
    core = make_core(*objs, *QUEUES, now=NOW)
    ends: dict[str, float] = {"r1": 150, "r2": 300}
    got: dict[str, Estimate] = {}
    t = 100.0
    for _ in range(20):
        for name in [n for n, end in ends.items() if end <= t]:
            core.on_workload_deleted("ns", name, T0 + timedelta(seconds=t))
            del ends[name]
        while decisions := core.schedule(T0 + timedelta(seconds=t)).decisions:  # until no head is left
            for d in [d for d in decisions if isinstance(d, Admit)]:
                name = d.key.split("/", 1)[1]
                got[name] = at(t)
                ends[name] = t + limits[name]
        if len(got) == 4:
            break
        t = min(ends.values())
    assert got == want
