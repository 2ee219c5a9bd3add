"""One scheduling cycle over upstream's TestSchedule fixture (pkg/scheduler/scheduler_test.go).

The ClusterQueues, flavors, LocalQueues and namespaces are those of upstream's TestSchedule; each
case adds workloads (pending or holding quota) and checks which workloads got admitted in the cycle,
with which flavors and amounts, and which stayed pending.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core import AdmissionCore


def _eng_selector(dep: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": "dep", "operator": "In", "values": [dep]}]}


FIXTURE: list[dict[str, Any]] = [
    *(make_flavor(f).obj() for f in ("default", "on-demand", "spot", "model-a")),
    make_cq("sales")
    .selector(_eng_selector("sales"))
    .strategy("StrictFIFO")
    .group(fq("default", cpu=("50", "0", None)))
    .obj(),
    make_cq("eng-alpha")
    .cohort("eng")
    .selector(_eng_selector("eng"))
    .strategy("StrictFIFO")
    .group(fq("on-demand", cpu=("50", "50", None)), fq("spot", cpu=("100", "0", None)))
    .obj(),
    make_cq("eng-beta")
    .cohort("eng")
    .selector(_eng_selector("eng"))
    .strategy("StrictFIFO")
    .preemption(within="LowerPriority", reclaim="Any")
    .group(fq("on-demand", cpu=("50", "10", None)), fq("spot", cpu=("0", "100", None)))
    .group(fq("model-a", **{"example.com/gpu": ("20", "0", None)}))
    .obj(),
    make_cq("lend-a").cohort("lend").selector(_eng_selector("lend")).group(fq("default", cpu=("3", None, "2"))).obj(),
    make_cq("lend-b").cohort("lend").selector(_eng_selector("lend")).group(fq("default", cpu=("2", None, "2"))).obj(),
    make_lq("main", "sales", "sales"),
    make_lq("main", "eng-alpha", "eng-alpha"),
    make_lq("main", "eng-beta", "eng-beta"),
    make_lq("lend-a-queue", "lend", "lend-a"),
    make_lq("lend-b-queue", "lend", "lend-b"),
]
NAMESPACES = {
    "default": {},
    "eng-alpha": {"dep": "eng"},
    "eng-beta": {"dep": "eng"},
    "sales": {"dep": "sales"},
    "lend": {"dep": "lend"},
}


def pending(name: str, ns: str, *podsets: tuple[Any, ...], queue: str = "main") -> dict[str, Any]:
    """podsets are (name, count, requests) or (name, count, requests, minCount)."""
    b = make_wl(name, ns).queue(queue)
    for ps_name, count, req, *min_count in podsets:
        b.podset(ps_name, count, *min_count, **req)
    return b.obj()


def one(cpu: str) -> tuple[str, int, dict[str, str]]:
    return ("main", 1, {"cpu": cpu})


def holding(name: str, ns: str, cq: str, flavor: str, cpu: str) -> dict[str, Any]:
    return make_wl(name, ns).request(cpu=cpu).reserve(cq, psa(cpu=(flavor, cpu))).obj()


def run(*workloads: dict[str, Any]) -> tuple[AdmissionCore, dict[str, dict[str, Any]]]:
    core = make_core(*FIXTURE, *workloads, namespaces=NAMESPACES)
    admitted = {d.key: dict(d.admission) for d in core.schedule(T0).admitted}
    return core, admitted


def summary(admission: dict[str, Any]) -> tuple[str, list[tuple[str, dict[str, str], dict[str, str], int]]]:
    return admission["clusterQueue"], [
        (p["name"], p["flavors"], p["resourceUsage"], p["count"]) for p in admission["podSetAssignments"]
    ]


CASES = [
    pytest.param(
        [pending("new", "sales", ("one", 1, {"cpu": "1"})), pending("new", "eng-alpha", ("one", 51, {"cpu": "1"}))],
        {
            "sales/new": ("sales", [("one", {"cpu": "default"}, {"cpu": "1"}, 1)]),
            "eng-alpha/new": ("eng-alpha", [("one", {"cpu": "on-demand"}, {"cpu": "51"}, 51)]),
        },
        [],
        id="admit in different cohorts",
    ),
    pytest.param(
        [pending("new", "eng-alpha", ("one", 40, {"cpu": "1"})), pending("new", "eng-beta", ("one", 40, {"cpu": "1"}))],
        {
            "eng-alpha/new": ("eng-alpha", [("one", {"cpu": "on-demand"}, {"cpu": "40"}, 40)]),
            "eng-beta/new": ("eng-beta", [("one", {"cpu": "on-demand"}, {"cpu": "40"}, 40)]),
        },
        [],
        id="admit in same cohort with no borrowing",
    ),
    pytest.param(
        [pending("new", "eng-beta", ("one", 10, {"cpu": "6", "example.com/gpu": "1"}), ("two", 40, {"cpu": "1"}))],
        {
            "eng-beta/new": (
                "eng-beta",
                [
                    (
                        "one",
                        {"cpu": "on-demand", "example.com/gpu": "model-a"},
                        {"cpu": "60", "example.com/gpu": "10"},
                        10,
                    ),
                    ("two", {"cpu": "spot"}, {"cpu": "40"}, 40),
                ],
            ),
        },
        [],
        id="assign multiple resources and flavors",
    ),
    pytest.param(
        [pending("new", "eng-alpha", ("one", 45, {"cpu": "1"})), pending("new", "eng-beta", ("one", 56, {"cpu": "1"}))],
        {"eng-alpha/new": ("eng-alpha", [("one", {"cpu": "on-demand"}, {"cpu": "45"}, 45)])},
        ["eng-beta/new"],
        id="cannot borrow if cohort was assigned and would result in overadmission",
    ),
    pytest.param(
        [pending("new", "eng-alpha", ("one", 45, {"cpu": "1"})), pending("new", "eng-beta", ("one", 55, {"cpu": "1"}))],
        {
            "eng-alpha/new": ("eng-alpha", [("one", {"cpu": "on-demand"}, {"cpu": "45"}, 45)]),
            "eng-beta/new": ("eng-beta", [("one", {"cpu": "on-demand"}, {"cpu": "55"}, 55)]),
        },
        [],
        id="can borrow if cohort was assigned and will not result in overadmission",
    ),
    pytest.param(
        [
            pending("can-reclaim", "eng-alpha", one("100")),
            pending("needs-to-borrow", "eng-beta", one("1")),
            holding("user-on-demand", "eng-beta", "eng-beta", "on-demand", "50"),
            holding("user-spot", "eng-beta", "eng-beta", "spot", "1"),
        ],
        {"eng-beta/needs-to-borrow": ("eng-beta", [("main", {"cpu": "on-demand"}, {"cpu": "1"}, 1)])},
        ["eng-alpha/can-reclaim"],
        id="can borrow if needs reclaim from cohort in different flavor",
    ),
    pytest.param(
        [holding("a", "lend", "lend-b", "default", "2"), pending("b", "lend", one("3"), queue="lend-b-queue")],
        {},
        ["lend/b"],
        id="workload exceeds lending limit when borrow in cohort",
    ),
    pytest.param(
        [pending("new", "sales", ("one", 50, {"cpu": "2"}, 20))],
        {"sales/new": ("sales", [("one", {"cpu": "default"}, {"cpu": "50"}, 25)])},
        [],
        id="partial admission single variable pod set",
    ),
    pytest.param(
        [
            pending(
                "new", "sales", ("one", 20, {"cpu": "1"}), ("two", 30, {"cpu": "1"}, 10), ("three", 15, {"cpu": "1"}, 5)
            )
        ],
        {
            "sales/new": (
                "sales",
                [
                    ("one", {"cpu": "default"}, {"cpu": "20"}, 20),
                    ("two", {"cpu": "default"}, {"cpu": "20"}, 20),
                    ("three", {"cpu": "default"}, {"cpu": "10"}, 10),
                ],
            )
        },
        [],
        id="partial admission multiple variable pod sets",
    ),
]


@pytest.mark.parametrize(("workloads", "want_admitted", "want_pending"), CASES)
def test_schedule(workloads: list[dict[str, Any]], want_admitted: dict[str, Any], want_pending: list[str]) -> None:
    core, admitted = run(*workloads)
    assert {k: summary(v) for k, v in admitted.items()} == want_admitted
    assert sorted(k for k in want_pending if k in core.queues.pending) == sorted(want_pending)


def test_victims_of_one_cohort_tree_do_not_change_what_fits_in_another() -> None:
    """A cycle's preemptions in cohort `x` leave the fit of heads in cohort `y` as it was: `_fits`
    removes only the victims of the head's own tree (upstream removes all, to the same effect)."""

    def cq(name: str, cohort: str) -> dict[str, Any]:
        b = make_cq(name).cohort(cohort).group(fq("default", cpu="2"))
        return b.preemption(within="LowerPriority", reclaim="Any").obj()

    low = make_wl("low").queue("lq-x1").priority(0).request(cpu="2").reserve("x1", psa(cpu=("default", "2"))).obj()
    taken = make_wl("taken").queue("lq-y1").request(cpu="2").reserve("y1", psa(cpu=("default", "2"))).obj()
    core = make_core(
        make_flavor("default").obj(),
        cq("x1", "x"),
        cq("y1", "y"),
        cq("y2", "y"),
        *(make_lq(f"lq-{n}", "ns", n) for n in ("x1", "y1", "y2")),
        low,
        taken,
    )
    core.on_workload(make_wl("high").queue("lq-x1").priority(10).request(cpu="2").obj(), T0)
    core.on_workload(make_wl("fits").queue("lq-y2").request(cpu="2").obj(), T0)
    core.on_workload(make_wl("over").queue("lq-y1").request(cpu="1").obj(), T0)
    result = core.schedule(T0)
    assert [(p.preemptor_key, [v.key for v in p.targets]) for p in result.preempted] == [("ns/high", ["ns/low"])]
    assert [d.key for d in result.admitted] == ["ns/fits"]
    assert sorted(d.key for d in result.pending) == ["ns/high", "ns/over"]
