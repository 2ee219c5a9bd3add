"""Upstream's scheduler unit-test scenarios (`pkg/scheduler/scheduler_test.go`, commit ff69552e79).

Each case of `TestSchedule` becomes one row: the same flavors, ClusterQueues, LocalQueues and
namespaces, the same workloads (pending or already holding quota), one `AdmissionCore.schedule`
call, then upstream's assertions: every reservation in the cache afterwards (`wantAssignments`),
the QuotaReserved=False reason and message of each workload left pending (`wantWorkloads`), the
Evicted/Preempted conditions of victims, and which workloads sit in each ClusterQueue's active
heap (`wantLeft`) or inadmissible set (`wantInadmissibleLeft`). Row ids are upstream's case names.
Upstream runs with UnadmittedWorkloadsObservability both on and off; we follow "on".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import T0, fq, limit_range, make_cohort, make_core, make_cq, make_flavor, make_lq, psa
from tests.unit.core.scheduler_harness import (
    IN_CQ,
    PSA,
    RECLAIM,
    Case,
    cache_assignments,
    check,
    norm_want,
    one,
    pending,
    preempt_msg,
    reserved,
    run_case,
    sel,
    waiting,
    wl,
)
from webhook.core.workload import WorkloadKey


def cqsel(name: str, dep: str = "eng") -> Any:
    return make_cq(name).selector(sel(dep))


SCHEDULE: dict[str, Case] = {}

SCHEDULE["use second flavor when the first has no preemption candidates; WhenCanPreempt: MayStopSearch"] = Case(
    objs=[
        make_cq("other-alpha")
        .preemption(within="LowerPriority")
        .fungibility(when_can_preempt="MayStopSearch")
        .group(fq("on-demand", cpu=("50", "50", None)), fq("spot", cpu=("100", "0", None)))
        .obj(),
        make_lq("other", "eng-alpha", "other-alpha"),
    ],
    workloads=[
        reserved("admitted", "eng-alpha", "other-alpha", "on-demand", "50", queue="other", admitted=True),
        pending("new", "eng-alpha", "other", cpu="20"),
    ],
    assignments={
        "eng-alpha/admitted": ("other-alpha", one("on-demand", "50")),
        "eng-alpha/new": ("other-alpha", one("spot", "20")),
    },
)


def with_checks(obj: dict[str, Any], **states: str) -> dict[str, Any]:
    """Set status.admissionChecks (name -> state) on a Workload object."""
    obj["status"]["admissionChecks"] = [
        {"name": n, "state": st, "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}
        for n, st in states.items()
    ]
    return obj


def podsets(
    name: str,
    ns: str,
    *sets: tuple[str, int, dict[str, str]] | tuple[str, int, dict[str, str], int],
    queue: str | None = "main",
    prio: int | None = None,
    uid: str | None = None,
    job_uid: str | None = None,
    created: float = 0,
) -> dict[str, Any]:
    """A pending workload with podSets (name, count, requests[, minCount])."""
    b = wl(name, ns, queue, prio, uid, job_uid).created(created)
    for ps_name, count, req, *mc in sets:
        b.podset(ps_name, count, mc[0] if mc else None, **req)
    return b.obj()


SCHEDULE["workload fits in single clusterQueue, with check state ready"] = Case(
    workloads=[with_checks(podsets("foo", "sales", ("one", 10, {"cpu": "1"})), check="Ready")],
    assignments={"sales/foo": ("sales", one("default", "10", 10, "one"))},
)
SCHEDULE["skip workload with missing or deleted ClusterQueue (NoFit)"] = Case(
    workloads=[podsets("missing-cq-workload", "sales", ("set", 1, {"cpu": "1"}), queue="non-existent-queue")],
)
SCHEDULE["flavors with mixed misconfiguration and insufficient quota"] = Case(
    objs=[
        make_cq("custom-cq")
        .strategy("StrictFIFO")
        .group(fq("spot-tainted", cpu=("20", "20", None)), fq("on-demand", cpu=("15", "15", None)))
        .obj(),
        make_lq("custom-q", "sales", "custom-cq"),
    ],
    workloads=[
        reserved("existing-on-demand-job", "sales", "custom-cq", "on-demand", "10", queue="custom-q", admitted=True),
        pending("new-job", "sales", "custom-q", cpu="10"),
    ],
    assignments={"sales/existing-on-demand-job": ("custom-cq", one("on-demand", "10"))},
    pending={
        "sales/new-job": waiting(
            "insufficient unused quota for cpu in flavor on-demand, 5 more needed, untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted"
        )
    },
    left={"custom-cq": ["sales/new-job"]},
)
SCHEDULE["flavors with mixed taint mismatch and exceeding limits"] = Case(
    objs=[
        make_cq("custom-cq2")
        .strategy("StrictFIFO")
        .group(fq("spot-tainted", cpu=("20", "20", None)), fq("on-demand", cpu=("5", "5", None)))
        .obj(),
        make_lq("custom-q2", "sales", "custom-cq2"),
    ],
    workloads=[pending("new-job2", "sales", "custom-q2", cpu="10")],
    pending={
        "sales/new-job2": (
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor on-demand, previously considered podsets requests (0) + current podset request (10) > maximum capacity (5), untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted",
        )
    },
    left={"custom-cq2": ["sales/new-job2"]},
)
SCHEDULE["flavors are structurally incompatible"] = Case(
    objs=[
        make_cq("custom-cq3")
        .strategy("StrictFIFO")
        .group(fq("spot-tainted", cpu=("20", "20", None)), fq("spot-tainted-2", cpu=("5", "5", None)))
        .obj(),
        make_lq("custom-q3", "sales", "custom-cq3"),
    ],
    workloads=[pending("new-job3", "sales", "custom-q3", cpu="1")],
    pending={
        "sales/new-job3": (
            "NoMatchingFlavor",
            "couldn't assign flavors to pod set main: untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted, untolerated taint {key val2 NoSchedule <nil>} in flavor spot-tainted-2",
        )
    },
    left={"custom-cq3": ["sales/new-job3"]},
)
SCHEDULE["workload fits in single clusterQueue, with check state pending"] = Case(
    workloads=[with_checks(podsets("foo", "sales", ("one", 10, {"cpu": "1"})), check="Pending")],
    assignments={"sales/foo": ("sales", one("default", "10", 10, "one"))},
    admitted_condition={"sales/foo": ("False", "UnsatisfiedAdmissionChecks")},
)
SCHEDULE["error during admission"] = Case(
    workloads=[podsets("foo", "sales", ("one", 10, {"cpu": "1"}))],
    admission_error=True,
    left={"sales": ["sales/foo"]},
)
SCHEDULE["single clusterQueue full"] = Case(
    workloads=[
        podsets("new", "sales", ("one", 11, {"cpu": "1"})),
        wl("assigned", "sales", None)
        .podset("one", 40, cpu="1")
        .reserve("sales", psa("one", 40, cpu=("default", "40")))
        .obj(),
    ],
    assignments={"sales/assigned": ("sales", one("default", "40", 40, "one"))},
    pending={
        "sales/new": (
            "WaitingForQuota",
            "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor default, 1 more needed",
        )
    },
    left={"sales": ["sales/new"]},
)
SCHEDULE["failed to match clusterQueue selector"] = Case(
    workloads=[podsets("new", "sales", ("one", 1, {"cpu": "1"}), queue="blocked")],
    pending={"sales/new": ("Misconfigured", "workload namespace doesn't match ClusterQueue selector")},
    inadmissible={"eng-alpha": ["sales/new"]},
)
SCHEDULE["admit in different cohorts"] = Case(
    workloads=[
        podsets("new", "sales", ("one", 1, {"cpu": "1"})),
        podsets("new", "eng-alpha", ("one", 51, {"cpu": "1"})),
    ],
    assignments={
        "sales/new": ("sales", one("default", "1", 1, "one")),
        "eng-alpha/new": ("eng-alpha", one("on-demand", "51", 51, "one")),
    },
)
SCHEDULE["admit in same cohort with no borrowing"] = Case(
    workloads=[
        podsets("new", "eng-alpha", ("one", 40, {"cpu": "1"})),
        podsets("new", "eng-beta", ("one", 40, {"cpu": "1"})),
    ],
    assignments={
        "eng-alpha/new": ("eng-alpha", one("on-demand", "40", 40, "one")),
        "eng-beta/new": ("eng-beta", one("on-demand", "40", 40, "one")),
    },
)
SCHEDULE["assign multiple resources and flavors"] = Case(
    workloads=[
        podsets("new", "eng-beta", ("one", 10, {"cpu": "6", "example.com/gpu": "1"}), ("two", 40, {"cpu": "1"}))
    ],
    assignments={
        "eng-beta/new": (
            "eng-beta",
            (
                ("one", {"cpu": "on-demand", "example.com/gpu": "model-a"}, {"cpu": "60", "example.com/gpu": "10"}, 10),
                ("two", {"cpu": "spot"}, {"cpu": "40"}, 40),
            ),
        )
    },
)
SCHEDULE["cannot borrow if cohort was assigned and would result in overadmission"] = Case(
    workloads=[
        podsets("new", "eng-alpha", ("one", 45, {"cpu": "1"})),
        podsets("new", "eng-beta", ("one", 56, {"cpu": "1"})),
    ],
    assignments={"eng-alpha/new": ("eng-alpha", one("on-demand", "45", 45, "one"))},
    pending={"eng-beta/new": ("WaitingForQuota", "Workload no longer fits after processing another workload")},
    left={"eng-beta": ["eng-beta/new"]},
)
SCHEDULE["can borrow if cohort was assigned and will not result in overadmission"] = Case(
    workloads=[
        podsets("new", "eng-alpha", ("one", 45, {"cpu": "1"})),
        podsets("new", "eng-beta", ("one", 55, {"cpu": "1"})),
    ],
    assignments={
        "eng-alpha/new": ("eng-alpha", one("on-demand", "45", 45, "one")),
        "eng-beta/new": ("eng-beta", one("on-demand", "55", 55, "one")),
    },
)
SCHEDULE["can borrow if needs reclaim from cohort in different flavor"] = Case(
    workloads=[
        pending("can-reclaim", "eng-alpha", cpu="100"),
        pending("needs-to-borrow", "eng-beta", cpu="1"),
        reserved("user-on-demand", "eng-beta", "eng-beta", "on-demand", "50"),
        reserved("user-spot", "eng-beta", "eng-beta", "spot", "1"),
    ],
    assignments={
        "eng-beta/user-on-demand": ("eng-beta", one("on-demand", "50")),
        "eng-beta/user-spot": ("eng-beta", one("spot", "1")),
        "eng-beta/needs-to-borrow": ("eng-beta", one("on-demand", "1")),
    },
    pending={
        "eng-alpha/can-reclaim": waiting(
            "insufficient unused quota for cpu in flavor on-demand, 50 more needed, insufficient unused quota for cpu in flavor spot, 1 more needed"
        )
    },
    left={"eng-alpha": ["eng-alpha/can-reclaim"]},
)
SCHEDULE["workload exceeds lending limit when borrow in cohort"] = Case(
    workloads=[reserved("a", "lend", "lend-b", "default", "2"), pending("b", "lend", "lend-b-queue", cpu="3")],
    assignments={"lend/a": ("lend-b", one("default", "2"))},
    pending={"lend/b": waiting("insufficient unused quota for cpu in flavor default, 1 more needed")},
    inadmissible={"lend-b": ["lend/b"]},
)


def _hierarchy(lending: str) -> list[dict[str, Any]]:
    return [
        make_cohort("root").obj(),
        make_cohort("child").parent("root").obj(),
        cqsel("cq-lender").cohort("child").group(fq("on-demand", cpu=("10", None, lending))).obj(),
        cqsel("cq-borrower").cohort("child").group(fq("on-demand", cpu=("5", "10", None))).obj(),
        make_lq("lq-lender", "eng-alpha", "cq-lender"),
        make_lq("lq-borrower", "eng-alpha", "cq-borrower"),
    ]


SCHEDULE["hierarchical cohort respects lending limit when borrowing"] = Case(
    objs=_hierarchy("3"),
    workloads=[
        reserved("wl-existing", "eng-alpha", "cq-borrower", "on-demand", "5"),
        pending("wl-pending", "eng-alpha", "lq-borrower", cpu="4"),
    ],
    assignments={"eng-alpha/wl-existing": ("cq-borrower", one("on-demand", "5"))},
    pending={"eng-alpha/wl-pending": waiting("insufficient unused quota for cpu in flavor on-demand, 1 more needed")},
    inadmissible={"cq-borrower": ["eng-alpha/wl-pending"]},
)
SCHEDULE["hierarchical cohort allows borrowing up to lending limit"] = Case(
    objs=_hierarchy("5"),
    workloads=[
        reserved("wl-existing", "eng-alpha", "cq-borrower", "on-demand", "5"),
        pending("wl-borrowing", "eng-alpha", "lq-borrower", cpu="5"),
    ],
    assignments={
        "eng-alpha/wl-existing": ("cq-borrower", one("on-demand", "5")),
        "eng-alpha/wl-borrowing": ("cq-borrower", one("on-demand", "5")),
    },
)


SCHEDULE["preempt workloads in ClusterQueue and cohort"] = Case(
    workloads=[
        pending("preemptor", "eng-beta", uid="wl-preemptor", job_uid="job-preemptor", cpu="20"),
        reserved("use-all-spot", "eng-alpha", "eng-alpha", "spot", "100"),
        reserved("low-1", "eng-beta", "eng-beta", "on-demand", "30", prio=-1),
        reserved("low-2", "eng-beta", "eng-beta", "on-demand", "10", prio=-2),
        reserved("borrower", "eng-alpha", "eng-alpha", "on-demand", "60"),
    ],
    assignments={
        "eng-alpha/use-all-spot": ("eng-alpha", one("spot", "100")),
        "eng-beta/low-1": ("eng-beta", one("on-demand", "30")),
        "eng-beta/low-2": ("eng-beta", one("on-demand", "10")),
        "eng-alpha/borrower": ("eng-alpha", one("on-demand", "60")),
    },
    pending={
        "eng-beta/preemptor": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 20 more needed, insufficient unused quota for cpu in flavor spot, 20 more needed. Pending the preemption of 2 workload(s)",
        )
    },
    preempted={
        "eng-alpha/borrower": (
            "InCohortReclamation",
            preempt_msg("wl-preemptor", "job-preemptor", RECLAIM, "/eng/eng-beta", "/eng/eng-alpha"),
        ),
        "eng-beta/low-2": (
            "InClusterQueue",
            preempt_msg("wl-preemptor", "job-preemptor", IN_CQ, "/eng/eng-beta", "/eng/eng-beta"),
        ),
    },
    left={"eng-beta": ["eng-beta/preemptor"]},
)
SCHEDULE["multiple CQs need preemption"] = Case(
    objs=[
        make_cq("other-alpha").cohort("other").group(fq("on-demand", cpu=("50", "50", None))).obj(),
        make_cq("other-beta")
        .cohort("other")
        .preemption(within="LowerPriority", reclaim="Any")
        .group(fq("on-demand", cpu=("50", "10", None)))
        .obj(),
        make_lq("other", "eng-alpha", "other-alpha"),
        make_lq("other", "eng-beta", "other-beta"),
    ],
    workloads=[
        pending("preemptor", "eng-beta", "other", prio=-1, uid="wl-preemptor", job_uid="job-preemptor", cpu="1"),
        pending("pending", "eng-alpha", "other", prio=1, cpu="1"),
        reserved("use-all", "eng-alpha", "other-alpha", "on-demand", "100"),
    ],
    assignments={"eng-alpha/use-all": ("other-alpha", one("on-demand", "100"))},
    pending={
        "eng-alpha/pending": waiting("insufficient unused quota for cpu in flavor on-demand, 1 more needed"),
        "eng-beta/preemptor": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 1 more needed. Pending the preemption of 1 workload(s)",
        ),
    },
    preempted={
        "eng-alpha/use-all": (
            "InCohortReclamation",
            preempt_msg("wl-preemptor", "job-preemptor", RECLAIM, "/other/other-beta", "/other/other-alpha"),
        )
    },
    left={"other-beta": ["eng-beta/preemptor"]},
    inadmissible={"other-alpha": ["eng-alpha/pending"]},
)
SCHEDULE["cannot borrow resource not listed in clusterQueue"] = Case(
    workloads=[pending("new", "eng-alpha", **{"example.com/gpu": "1"})],
    pending={
        "eng-alpha/new": (
            "NoMatchingFlavor",
            "couldn't assign flavors to pod set main: resource example.com/gpu unavailable in ClusterQueue",
        )
    },
    left={"eng-alpha": ["eng-alpha/new"]},
)
SCHEDULE["not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor"] = Case(
    workloads=[
        podsets("new", "eng-alpha", ("one", 60, {"cpu": "1"})),
        wl("existing", "eng-beta", None)
        .podset("one", 45, cpu="1")
        .reserve("eng-beta", psa("one", 45, cpu=("on-demand", "45")), admitted=False)
        .obj(),
    ],
    assignments={
        "eng-alpha/new": ("eng-alpha", one("spot", "60", 60, "one")),
        "eng-beta/existing": ("eng-beta", one("on-demand", "45", 45, "one")),
    },
)
SCHEDULE["workload should not fit in nonexistent clusterQueue"] = Case(
    workloads=[pending("foo", "sales", "cq-nonexistent-queue", cpu="1")],
)
SCHEDULE["workload should not fit in clusterQueue with nonexistent flavor"] = Case(
    workloads=[pending("foo", "sales", "flavor-nonexistent-queue", cpu="1")],
    left={"flavor-nonexistent-cq": ["sales/foo"]},
)
SCHEDULE["no overadmission while borrowing"] = Case(
    objs=[
        make_cq("eng-gamma")
        .cohort("eng")
        .preemption(within="LowerPriority", reclaim="Any")
        .group(fq("on-demand", cpu=("50", "10", None)), fq("spot", cpu=("0", "100", None)))
        .obj(),
        make_lq("main", "eng-gamma", "eng-gamma"),
    ],
    workloads=[
        podsets("new", "eng-beta", ("one", 50, {"cpu": "1"}), created=-2),
        podsets("new-alpha", "eng-alpha", ("one", 1, {"cpu": "1"}), created=-1),
        podsets("new-gamma", "eng-gamma", ("one", 50, {"cpu": "1"}), created=0),
        wl("existing", "eng-gamma", None)
        .podset("borrow-on-demand", 51, cpu="1")
        .podset("use-all-spot", 100, cpu="1")
        .reserve(
            "eng-gamma",
            psa("borrow-on-demand", 51, cpu=("on-demand", "51")),
            psa("use-all-spot", 100, cpu=("spot", "100")),
            admitted=False,
        )
        .obj(),
    ],
    assignments={
        "eng-gamma/existing": (
            "eng-gamma",
            (
                ("borrow-on-demand", {"cpu": "on-demand"}, {"cpu": "51"}, 51),
                ("use-all-spot", {"cpu": "spot"}, {"cpu": "100"}, 100),
            ),
        ),
        "eng-beta/new": ("eng-beta", one("on-demand", "50", 50, "one")),
        "eng-alpha/new-alpha": ("eng-alpha", one("on-demand", "1", 1, "one")),
    },
    pending={
        "eng-gamma/new-gamma": (
            "WaitingForQuota",
            "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor on-demand, 41 more needed, insufficient unused quota for cpu in flavor spot, 50 more needed",
        )
    },
    inadmissible={"eng-gamma": ["eng-gamma/new-gamma"]},
    skipped_preemptions={},
)
SCHEDULE["partial admission single variable pod set"] = Case(
    workloads=[podsets("new", "sales", ("one", 50, {"cpu": "2"}, 20))],
    assignments={"sales/new": ("sales", one("default", "50", 25, "one"))},
)
_OLD_GPU = (
    wl("old", "eng-beta", None, prio=-4)
    .podset("one", 10, **{"example.com/gpu": "1"})
    .reserve("eng-beta", psa("one", 10, **{"example.com/gpu": ("model-a", "10")}), admitted=False)
    .obj()
)
for _name, _count in (
    ("partial admission single variable pod set, preempt first", 20),
    ("partial admission single variable pod set, preempt with partial admission", 30),
):
    SCHEDULE[_name] = Case(
        workloads=[
            podsets(
                "new",
                "eng-beta",
                ("one", _count, {"example.com/gpu": "1"}, 10),
                prio=4,
                uid="wl-new",
                job_uid="job-new",
            ),
            _OLD_GPU,
        ],
        assignments={
            "eng-beta/old": ("eng-beta", (("one", {"example.com/gpu": "model-a"}, {"example.com/gpu": "10"}, 10),))
        },
        pending={
            "eng-beta/new": (
                "WaitingForPreemptedWorkloads",
                "couldn't assign flavors to pod set one: insufficient unused quota for example.com/gpu in flavor model-a, 10 more needed. Pending the preemption of 1 workload(s)",
            )
        },
        preempted={
            "eng-beta/old": (
                "InClusterQueue",
                preempt_msg("wl-new", "job-new", IN_CQ, "/eng/eng-beta", "/eng/eng-beta"),
            )
        },
        left={"eng-beta": ["eng-beta/new"]},
    )
SCHEDULE["partial admission multiple variable pod sets"] = Case(
    workloads=[
        podsets(
            "new", "sales", ("one", 20, {"cpu": "1"}), ("two", 30, {"cpu": "1"}, 10), ("three", 15, {"cpu": "1"}, 5)
        )
    ],
    assignments={
        "sales/new": (
            "sales",
            (
                ("one", {"cpu": "default"}, {"cpu": "20"}, 20),
                ("two", {"cpu": "default"}, {"cpu": "20"}, 20),
                ("three", {"cpu": "default"}, {"cpu": "10"}, 10),
            ),
        )
    },
)


def _r1r2_cohort() -> list[dict[str, Any]]:
    """cq1..cq3 in cohort co, each with 10 (+10 borrowable) of r1 and r2 in flavor default."""
    out: list[dict[str, Any]] = []
    for i in (1, 2, 3):
        out.append(
            make_cq(f"cq{i}")
            .cohort("co")
            .preemption(within="LowerPriority", reclaim="Any")
            .group(fq("default", r1=("10", "10", None), r2=("10", "10", None)))
            .obj()
        )
        out.append(make_lq(f"lq{i}", "sales", f"cq{i}"))
    return out


SCHEDULE["two workloads can borrow different resources from the same flavor in the same cycle"] = Case(
    objs=_r1r2_cohort(),
    workloads=[pending("wl1", "sales", "lq1", prio=-1, r1="16"), pending("wl2", "sales", "lq2", prio=-2, r2="16")],
    assignments={
        "sales/wl1": ("cq1", (("main", {"r1": "default"}, {"r1": "16"}, 1),)),
        "sales/wl2": ("cq2", (("main", {"r2": "default"}, {"r2": "16"}, 1),)),
    },
)
SCHEDULE[
    "two workloads can borrow the same resources from the same flavor in the same cycle if fits in the cohort quota"
] = Case(
    objs=_r1r2_cohort(),
    workloads=[pending("wl1", "sales", "lq1", prio=-1, r1="16"), pending("wl2", "sales", "lq2", prio=-2, r1="14")],
    assignments={
        "sales/wl1": ("cq1", (("main", {"r1": "default"}, {"r1": "16"}, 1),)),
        "sales/wl2": ("cq2", (("main", {"r1": "default"}, {"r1": "14"}, 1),)),
    },
)
SCHEDULE[
    "only one workload can borrow one resources from the same flavor in the same cycle if cohort quota cannot fit"
] = Case(
    objs=_r1r2_cohort(),
    workloads=[pending("wl1", "sales", "lq1", prio=-1, r1="16"), pending("wl2", "sales", "lq2", prio=-2, r1="16")],
    assignments={"sales/wl1": ("cq1", (("main", {"r1": "default"}, {"r1": "16"}, 1),))},
    pending={"sales/wl2": ("WaitingForQuota", "Workload no longer fits after processing another workload")},
    left={"cq2": ["sales/wl2"]},
)
SCHEDULE[
    "preemption while borrowing, workload waiting for preemption should not block a borrowing workload in another CQ"
] = Case(
    objs=[
        make_cq("cq_shared").cohort("preemption-while-borrowing").group(fq("default", cpu=("4", "0", None))).obj(),
        make_cq("cq_a")
        .cohort("preemption-while-borrowing")
        .preemption(reclaim="LowerPriority", borrow="LowerPriority")
        .group(fq("default", cpu=("0", "3", None)))
        .obj(),
        make_cq("cq_b")
        .cohort("preemption-while-borrowing")
        .preemption(reclaim="LowerPriority", borrow="LowerPriority")
        .group(fq("default", cpu="0"))
        .obj(),
        make_lq("lq_a", "eng-alpha", "cq_a"),
        make_lq("lq_b", "eng-beta", "cq_b"),
    ],
    workloads=[
        wl("a", "eng-alpha", "lq_a").created(1).request(cpu="3").obj(),
        wl("b", "eng-beta", "lq_b").created(2).request(cpu="1").obj(),
        reserved("admitted_a", "eng-alpha", "cq_a", "default", "2", queue="lq_a"),
    ],
    assignments={"eng-alpha/admitted_a": ("cq_a", one("default", "2")), "eng-beta/b": ("cq_b", one("default", "1"))},
    pending={"eng-alpha/a": waiting("insufficient unused quota for cpu in flavor default, 2 more needed")},
    inadmissible={"cq_a": ["eng-alpha/a"]},
)
SCHEDULE["minimal preemptions when target queue is exhausted"] = Case(
    objs=[
        make_cq("other-alpha")
        .cohort("other")
        .preemption(within="LowerPriority", reclaim="Any")
        .group(fq("on-demand", cpu="2"))
        .obj(),
        make_cq("other-beta").cohort("other").group(fq("on-demand", cpu="2")).obj(),
        make_cq("other-gamma").cohort("other").group(fq("on-demand", cpu="2")).obj(),
        make_lq("other", "eng-alpha", "other-alpha"),
        make_lq("other", "eng-beta", "other-beta"),
        make_lq("other", "eng-gamma", "other-gamma"),
    ],
    workloads=[
        reserved("a1", "eng-alpha", "other-alpha", "on-demand", "1", prio=-2, queue="other"),
        reserved("a2", "eng-alpha", "other-alpha", "on-demand", "1", prio=-2, queue="other"),
        reserved("a3", "eng-alpha", "other-alpha", "on-demand", "1", prio=-1, queue="other"),
        reserved("b1", "eng-beta", "other-beta", "on-demand", "1", prio=0, queue="other"),
        reserved("b2", "eng-beta", "other-beta", "on-demand", "1", prio=0, queue="other"),
        reserved("b3", "eng-beta", "other-beta", "on-demand", "1", prio=0, queue="other"),
        pending("incoming", "eng-alpha", "other", prio=0, uid="wl-incoming", job_uid="job-incoming", cpu="2"),
    ],
    assignments={
        **{f"eng-alpha/a{i}": ("other-alpha", one("on-demand", "1")) for i in (1, 2, 3)},
        **{f"eng-beta/b{i}": ("other-beta", one("on-demand", "1")) for i in (1, 2, 3)},
    },
    pending={
        "eng-alpha/incoming": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 2 more needed. Pending the preemption of 2 workload(s)",
        )
    },
    preempted={
        f"eng-alpha/a{i}": (
            "InClusterQueue",
            preempt_msg("wl-incoming", "job-incoming", IN_CQ, "/other/other-alpha", "/other/other-alpha"),
        )
        for i in (1, 2)
    },
    left={"other-alpha": ["eng-alpha/incoming"]},
)

SCHEDULE["A workload is only eligible to do preemptions if it fits fully within nominal quota"] = Case(
    objs=[
        make_cq("other-alpha")
        .cohort("other")
        .preemption(within="LowerPriority", reclaim="Any")
        .group(fq("on-demand", cpu="2"))
        .obj(),
        make_cq("other-beta").cohort("other").group(fq("on-demand", cpu="2")).obj(),
        make_lq("other", "eng-alpha", "other-alpha"),
        make_lq("other", "eng-beta", "other-beta"),
    ],
    workloads=[
        reserved("a1", "eng-alpha", "other-alpha", "on-demand", "1", prio=-1, queue="other"),
        reserved("b1", "eng-beta", "other-beta", "on-demand", "1", prio=-1, queue="other"),
        pending("incoming", "eng-alpha", "other", prio=1, cpu="3"),
    ],
    assignments={
        "eng-alpha/a1": ("other-alpha", one("on-demand", "1")),
        "eng-beta/b1": ("other-beta", one("on-demand", "1")),
    },
    pending={"eng-alpha/incoming": waiting("insufficient unused quota for cpu in flavor on-demand, 1 more needed")},
    inadmissible={"other-alpha": ["eng-alpha/incoming"]},
)


def _other_pair(alpha_cpu: str, borrow: str = "Never", bank: bool = False) -> list[dict[str, Any]]:
    out = [
        make_cq("other-alpha")
        .cohort("other")
        .preemption(within="LowerPriority", borrow=borrow)
        .group(fq("default", cpu=alpha_cpu))
        .obj(),
        make_cq("other-beta")
        .cohort("other")
        .preemption(within="LowerPriority", borrow=borrow)
        .group(fq("default", cpu="2"))
        .obj(),
        make_lq("other", "eng-alpha", "other-alpha"),
        make_lq("other", "eng-beta", "other-beta"),
    ]
    if bank:
        out.append(make_cq("resource-bank").cohort("other").group(fq("default", cpu="1")).obj())
    return out


SCHEDULE["multiple preemptions without borrowing"] = Case(
    objs=_other_pair("2"),
    workloads=[
        reserved("a1", "eng-alpha", "other-alpha", "default", "2", prio=0, queue="other"),
        reserved("b1", "eng-beta", "other-beta", "default", "2", prio=0, queue="other"),
        pending("preemptor", "eng-alpha", "other", prio=100, uid="wl-preemptor", job_uid="job-preemptor", cpu="2"),
        pending("preemptor", "eng-beta", "other", prio=100, uid="wl-preemptor", job_uid="job-preemptor", cpu="2"),
    ],
    assignments={
        "eng-alpha/a1": ("other-alpha", one("default", "2")),
        "eng-beta/b1": ("other-beta", one("default", "2")),
    },
    pending={
        f"eng-{x}/preemptor": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 2 more needed. Pending the preemption of 1 workload(s)",
        )
        for x in ("alpha", "beta")
    },
    preempted={
        f"eng-{x}/{x[0]}1": (
            "InClusterQueue",
            preempt_msg("wl-preemptor", "job-preemptor", IN_CQ, f"/other/other-{x}", f"/other/other-{x}"),
        )
        for x in ("alpha", "beta")
    },
    left={"other-alpha": ["eng-alpha/preemptor"], "other-beta": ["eng-beta/preemptor"]},
    skipped_preemptions={},
)
SCHEDULE["multiple preemptions preemption possible after earlier workload fits"] = Case(
    objs=_other_pair("1"),
    workloads=[
        reserved("b1", "eng-beta", "other-beta", "default", "2", prio=0, queue="other"),
        pending("fit", "eng-alpha", "other", prio=100, cpu="1"),
        pending("preemptor", "eng-beta", "other", prio=99, uid="wl-preemptor", job_uid="job-preemptor", cpu="2"),
    ],
    assignments={
        "eng-alpha/fit": ("other-alpha", one("default", "1")),
        "eng-beta/b1": ("other-beta", one("default", "2")),
    },
    pending={
        "eng-beta/preemptor": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed. Pending the preemption of 1 workload(s)",
        )
    },
    preempted={
        "eng-beta/b1": (
            "InClusterQueue",
            preempt_msg("wl-preemptor", "job-preemptor", IN_CQ, "/other/other-beta", "/other/other-beta"),
        )
    },
    left={"other-beta": ["eng-beta/preemptor"]},
    skipped_preemptions={},
)
SCHEDULE["multiple preemptions skip preemption when shared limited resource"] = Case(
    objs=_other_pair("2", borrow="LowerPriority", bank=True),
    workloads=[
        reserved("a1", "eng-alpha", "other-alpha", "default", "2", prio=0, queue="other"),
        reserved("b1", "eng-beta", "other-beta", "default", "2", prio=0, queue="other"),
        pending("preemptor", "eng-alpha", "other", prio=100, uid="wl-preemptor", job_uid="job-preemptor", cpu="3"),
        pending("pretending-preemptor", "eng-beta", "other", prio=99, cpu="3"),
    ],
    assignments={
        "eng-alpha/a1": ("other-alpha", one("default", "2")),
        "eng-beta/b1": ("other-beta", one("default", "2")),
    },
    pending={
        "eng-alpha/preemptor": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 2 more needed. Pending the preemption of 1 workload(s)",
        ),
        "eng-beta/pretending-preemptor": (
            "WaitingForQuota",
            "Workload no longer fits after processing another workload",
        ),
    },
    preempted={
        "eng-alpha/a1": (
            "InClusterQueue",
            preempt_msg("wl-preemptor", "job-preemptor", IN_CQ, "/other/other-alpha", "/other/other-alpha"),
        )
    },
    left={"other-alpha": ["eng-alpha/preemptor"], "other-beta": ["eng-beta/pretending-preemptor"]},
    skipped_preemptions={"other-beta": 1},
)
SCHEDULE["not enough resources"] = Case(
    workloads=[podsets("new", "sales", ("one", 1, {"cpu": "100"}))],
    pending={
        "sales/new": (
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set one: insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (100) > maximum capacity (50)",
        )
    },
    left={"sales": ["sales/new"]},
)


def plain_gpu(obj: Any) -> Any:
    """Rename the builders' `nvidia.com/gpu` to upstream's bare `gpu` resource, recursively."""
    if isinstance(obj, dict):
        return {("gpu" if k == "nvidia.com/gpu" else k): plain_gpu(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain_gpu(v) for v in obj]
    return "gpu" if obj == "nvidia.com/gpu" else obj


def gpu_wl(
    name: str,
    ns: str,
    gpu: str,
    prio: int | None = None,
    queue: str = "other",
    reserve: tuple[str, str] | None = None,
    uid: str | None = None,
    created: float = 0,
) -> dict[str, Any]:
    """A one-pod workload requesting `gpu` gpus, optionally holding them (cq, flavor)."""
    b = wl(name, ns, queue, prio, uid, f"job-{name}" if uid else None).created(created).request(gpu=gpu)
    if reserve is not None:
        b.reserve(reserve[0], psa(gpu=(reserve[1], gpu)), admitted=False)
    return plain_gpu(b.obj())


def gpu_one(flavor: str, gpu: str) -> tuple[PSA]:
    return (("main", {"gpu": flavor}, {"gpu": gpu}, 1),)


def _gpu_pair(beta_preempts: bool) -> list[dict[str, Any]]:
    beta = make_cq("other-beta").cohort("other")
    if beta_preempts:
        beta.preemption(within="LowerPriority", reclaim="LowerPriority")
    return [
        plain_gpu(
            make_cq("other-alpha")
            .cohort("other")
            .preemption(within="LowerPriority", reclaim="LowerPriority")
            .group(fq("on-demand", gpu="10"), fq("spot", gpu="10"))
            .obj()
        ),
        plain_gpu(beta.group(fq("on-demand", gpu="0"), fq("spot", gpu="0")).obj()),
        make_lq("other", "eng-alpha", "other-alpha"),
        make_lq("other", "eng-beta", "other-beta"),
    ]


def gpu_preempting(msg: str, n: int = 1) -> tuple[str, str]:
    return (
        "WaitingForPreemptedWorkloads",
        f"couldn't assign flavors to pod set main: {msg}. Pending the preemption of {n} workload(s)",
    )


SCHEDULE["prefer reclamation over cq priority based preemption"] = Case(
    objs=_gpu_pair(beta_preempts=True),
    workloads=[
        gpu_wl("a1", "eng-alpha", "5", 50, reserve=("other-alpha", "on-demand")),
        gpu_wl("b1", "eng-beta", "5", 50, reserve=("other-beta", "spot")),
        gpu_wl("preemptor", "eng-alpha", "6", 100, uid="wl-preemptor"),
    ],
    assignments={
        "eng-alpha/a1": ("other-alpha", gpu_one("on-demand", "5")),
        "eng-beta/b1": ("other-beta", gpu_one("spot", "5")),
    },
    pending={
        "eng-alpha/preemptor": gpu_preempting(
            "insufficient unused quota for gpu in flavor on-demand, 1 more needed, insufficient unused quota for gpu in flavor spot, 1 more needed"
        )
    },
    preempted={
        "eng-beta/b1": (
            "InCohortReclamation",
            preempt_msg("wl-preemptor", "job-preemptor", RECLAIM, "/other/other-alpha", "/other/other-beta"),
        )
    },
    left={"other-alpha": ["eng-alpha/preemptor"]},
)
SCHEDULE["prefer first preemption flavor when second flavor requires both reclaim and cq priority preemption"] = Case(
    objs=_gpu_pair(beta_preempts=False),
    workloads=[
        gpu_wl("a1", "eng-alpha", "5", 50, reserve=("other-alpha", "on-demand")),
        gpu_wl("a2", "eng-alpha", "5", 50, reserve=("other-alpha", "spot")),
        gpu_wl("b1", "eng-beta", "5", 50, reserve=("other-beta", "spot")),
        gpu_wl("preemptor", "eng-alpha", "6", 100, uid="wl-preemptor"),
    ],
    assignments={
        "eng-alpha/a1": ("other-alpha", gpu_one("on-demand", "5")),
        "eng-alpha/a2": ("other-alpha", gpu_one("spot", "5")),
        "eng-beta/b1": ("other-beta", gpu_one("spot", "5")),
    },
    pending={
        "eng-alpha/preemptor": gpu_preempting(
            "insufficient unused quota for gpu in flavor on-demand, 1 more needed, insufficient unused quota for gpu in flavor spot, 6 more needed"
        )
    },
    preempted={
        "eng-alpha/a1": (
            "InClusterQueue",
            preempt_msg("wl-preemptor", "job-preemptor", IN_CQ, "/other/other-alpha", "/other/other-alpha"),
        )
    },
    left={"other-alpha": ["eng-alpha/preemptor"]},
)
SCHEDULE["prefer first preemption flavor when second flavor also requires cq preemption"] = Case(
    objs=_gpu_pair(beta_preempts=False),
    workloads=[
        gpu_wl("a1", "eng-alpha", "6", 50, reserve=("other-alpha", "on-demand")),
        gpu_wl("a2", "eng-alpha", "5", 50, reserve=("other-alpha", "spot")),
        gpu_wl("b1", "eng-beta", "5", 9001, reserve=("other-beta", "spot")),
        gpu_wl("preemptor", "eng-alpha", "5", 100, uid="wl-preemptor"),
    ],
    assignments={
        "eng-alpha/a1": ("other-alpha", gpu_one("on-demand", "6")),
        "eng-alpha/a2": ("other-alpha", gpu_one("spot", "5")),
        "eng-beta/b1": ("other-beta", gpu_one("spot", "5")),
    },
    pending={
        "eng-alpha/preemptor": gpu_preempting(
            "insufficient unused quota for gpu in flavor on-demand, 1 more needed, insufficient unused quota for gpu in flavor spot, 5 more needed"
        )
    },
    preempted={
        "eng-alpha/a1": (
            "InClusterQueue",
            preempt_msg("wl-preemptor", "job-preemptor", IN_CQ, "/other/other-alpha", "/other/other-alpha"),
        )
    },
    left={"other-alpha": ["eng-alpha/preemptor"]},
)
SCHEDULE["workload requiring reclaimation prioritized over wl in another full cq"] = Case(
    objs=[
        plain_gpu(make_cq("CQ1").cohort("other").group(fq("on-demand", gpu="10")).obj()),
        plain_gpu(make_cq("CQ2").cohort("other").preemption(reclaim="Any").group(fq("on-demand", gpu="10")).obj()),
        plain_gpu(make_cq("CQ3").cohort("other").group(fq("on-demand", gpu="0")).obj()),
        make_lq("lq", "eng-alpha", "CQ1"),
        make_lq("lq", "eng-beta", "CQ2"),
        make_lq("lq", "eng-gamma", "CQ3"),
    ],
    workloads=[
        gpu_wl("Admitted-Workload-1", "eng-alpha", "5", queue="lq", reserve=("CQ1", "on-demand")),
        gpu_wl("WL1", "eng-alpha", "10", queue="lq", created=0),
        gpu_wl("WL2", "eng-beta", "10", queue="lq", uid="wl-WL2", created=1),
        gpu_wl("Admitted-Workload-2", "eng-gamma", "5", 0, queue="lq", reserve=("CQ3", "on-demand")),
        gpu_wl("Admitted-Workload-3", "eng-gamma", "5", 1, queue="lq", reserve=("CQ3", "on-demand")),
    ],
    assignments={
        "eng-alpha/Admitted-Workload-1": ("CQ1", gpu_one("on-demand", "5")),
        "eng-gamma/Admitted-Workload-2": ("CQ3", gpu_one("on-demand", "5")),
        "eng-gamma/Admitted-Workload-3": ("CQ3", gpu_one("on-demand", "5")),
    },
    pending={
        "eng-alpha/WL1": waiting("insufficient unused quota for gpu in flavor on-demand, 5 more needed"),
        "eng-beta/WL2": gpu_preempting("insufficient unused quota for gpu in flavor on-demand, 5 more needed"),
    },
    preempted={
        "eng-gamma/Admitted-Workload-2": (
            "InCohortReclamation",
            preempt_msg("wl-WL2", "job-WL2", RECLAIM, "/other/CQ2", "/other/CQ3"),
        )
    },
    left={"CQ2": ["eng-beta/WL2"]},
    inadmissible={"CQ1": ["eng-alpha/WL1"]},
)


def _lending(reclaim: str) -> list[dict[str, Any]]:
    return [
        plain_gpu(
            make_cq("ClusterQueueA").cohort("root").group(fq("on-demand", gpu="2")).preemption(reclaim=reclaim).obj()
        ),
        plain_gpu(make_cq("ClusterQueueB").cohort("root").group(fq("on-demand", gpu="0")).obj()),
        make_lq("lq", "eng-alpha", "ClusterQueueA"),
        make_lq("lq", "eng-beta", "ClusterQueueB"),
    ]


_LENDING_WLS = [
    gpu_wl("a1-admitted", "eng-alpha", "1", queue="lq", reserve=("ClusterQueueA", "on-demand")),
    gpu_wl("a2-pending", "eng-alpha", "2", queue="lq"),
    gpu_wl("b1-pending", "eng-beta", "1", queue="lq"),
]
SCHEDULE["capacity not blocked when lending clusterqueue can reclaim (ReclaimWithinCohort=Any)"] = Case(
    objs=_lending("Any"),
    workloads=_LENDING_WLS,
    assignments={
        "eng-alpha/a1-admitted": ("ClusterQueueA", gpu_one("on-demand", "1")),
        "eng-beta/b1-pending": ("ClusterQueueB", gpu_one("on-demand", "1")),
    },
    pending={"eng-alpha/a2-pending": waiting("insufficient unused quota for gpu in flavor on-demand, 1 more needed")},
    inadmissible={"ClusterQueueA": ["eng-alpha/a2-pending"]},
)
for _policy in ("LowerPriority", "Never"):
    SCHEDULE[
        f"capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort={_policy})"
    ] = Case(
        objs=_lending(_policy),
        workloads=_LENDING_WLS,
        assignments={"eng-alpha/a1-admitted": ("ClusterQueueA", gpu_one("on-demand", "1"))},
        pending={
            "eng-alpha/a2-pending": waiting("insufficient unused quota for gpu in flavor on-demand, 1 more needed"),
            "eng-beta/b1-pending": ("WaitingForQuota", "Workload no longer fits after processing another workload"),
        },
        left={"ClusterQueueB": ["eng-beta/b1-pending"]},
        inadmissible={"ClusterQueueA": ["eng-alpha/a2-pending"]},
    )
SCHEDULE["in a hierarchical cohort, workload borrowing less is scheduled first"] = Case(
    objs=[
        make_cohort("root").obj(),
        make_cohort("guaranteed").group(fq("default", cpu="4")).parent("root").obj(),
        make_cq("guaranteed").cohort("guaranteed").group(fq("default", cpu="0")).obj(),
        make_cq("best-effort").cohort("root").group(fq("default", cpu="0")).obj(),
        make_lq("lq-guaranteed", "eng-alpha", "guaranteed"),
        make_lq("lq-best-effort", "eng-alpha", "best-effort"),
    ],
    workloads=[
        podsets("guaranteed", "eng-alpha", ("one", 1, {"cpu": "4"}), queue="lq-guaranteed", prio=0),
        podsets("best-effort", "eng-alpha", ("one", 1, {"cpu": "4"}), queue="lq-best-effort", prio=3),
    ],
    assignments={"eng-alpha/guaranteed": ("guaranteed", one("default", "4", 1, "one"))},
    pending={"eng-alpha/best-effort": ("WaitingForQuota", "Workload no longer fits after processing another workload")},
    left={"best-effort": ["eng-alpha/best-effort"]},
)
SCHEDULE["don't assign flavor if there are no candidates for preemption"] = Case(
    objs=[
        make_cq("cq1")
        .cohort("cohort")
        .preemption(within="LowerPriority", reclaim="Any", borrow="LowerPriority")
        .fungibility(when_can_borrow="MayStopSearch", when_can_preempt="MayStopSearch")
        .group(fq("on-demand", cpu=("0", "1", None)), fq("spot", cpu=("0", "1", None)))
        .obj(),
        make_cq("cq2").cohort("cohort").group(fq("on-demand", cpu="1"), fq("spot", cpu="1")).obj(),
        make_lq("lq1", "eng-alpha", "cq1"),
        make_lq("lq2", "eng-alpha", "cq2"),
    ],
    workloads=[
        reserved("admitted", "eng-alpha", "cq2", "on-demand", "1", prio=0, queue="lq2", admitted=True),
        pending("new", "eng-alpha", "lq1", prio=100, cpu="1"),
    ],
    assignments={"eng-alpha/new": ("cq1", one("spot", "1")), "eng-alpha/admitted": ("cq2", one("on-demand", "1"))},
)

SCHEDULE["pending admission check with nofit and fit flavors"] = Case(
    workloads=[with_checks(pending("pending-check", "eng-beta", cpu="80"), check="Pending")],
    assignments={"eng-beta/pending-check": ("eng-beta", one("spot", "80"))},
    admitted_condition={"eng-beta/pending-check": ("False", "UnsatisfiedAdmissionChecks")},
)
SCHEDULE["admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor"] = Case(
    objs=[
        make_cq("preempt-attempts-cq")
        .preemption(within="LowerPriority")
        .fungibility(when_can_preempt="TryNextFlavor")
        .group(fq("on-demand", cpu="1"), fq("spot", cpu="1"))
        .obj(),
        make_lq("preempt-attempts-lq", "eng-alpha", "preempt-attempts-cq"),
    ],
    workloads=[
        reserved(
            "blocker",
            "eng-alpha",
            "preempt-attempts-cq",
            "on-demand",
            "1",
            prio=50,
            queue="preempt-attempts-lq",
            admitted=True,
        ),
        pending("test-wl", "eng-alpha", "preempt-attempts-lq", prio=100, cpu="1"),
    ],
    assignments={
        "eng-alpha/test-wl": ("preempt-attempts-cq", one("spot", "1")),
        "eng-alpha/blocker": ("preempt-attempts-cq", one("on-demand", "1")),
    },
)
SCHEDULE["admit workload with zero-quantity request for resource not in ClusterQueue"] = Case(
    workloads=[pending("zero-resource-wl", "sales", cpu="1", **{"example.com/gpu": "0"})],
    assignments={"sales/zero-resource-wl": ("sales", one("default", "1"))},
)
SCHEDULE["preempt when workload requests zero of a resource not defined in ClusterQueue"] = Case(
    objs=[
        make_cq("preempt-zero-gpu-cq").preemption(within="LowerPriority").group(fq("default", cpu="4")).obj(),
        make_lq("preempt-zero-gpu-lq", "sales", "preempt-zero-gpu-cq"),
    ],
    workloads=[
        pending(
            "preemptor",
            "sales",
            "preempt-zero-gpu-lq",
            uid="wl-preemptor",
            job_uid="job-preemptor",
            cpu="2",
            **{"example.com/gpu": "0"},
        ),
        reserved("low-priority", "sales", "preempt-zero-gpu-cq", "default", "4", prio=-1, queue="preempt-zero-gpu-lq"),
    ],
    assignments={"sales/low-priority": ("preempt-zero-gpu-cq", one("default", "4"))},
    pending={
        "sales/preemptor": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 2 more needed. Pending the preemption of 1 workload(s)",
        )
    },
    preempted={
        "sales/low-priority": (
            "InClusterQueue",
            preempt_msg("wl-preemptor", "job-preemptor", IN_CQ, "/preempt-zero-gpu-cq", "/preempt-zero-gpu-cq"),
        )
    },
    left={"preempt-zero-gpu-cq": ["sales/preemptor"]},
)


def _preference_pair(prefix: str, preference: str) -> list[dict[str, Any]]:
    return [
        make_cq(f"{prefix}-cq")
        .cohort(f"{prefix}-cohort")
        .preemption(within="LowerPriority")
        .fungibility(when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor", preference=preference)
        .group(fq("on-demand", cpu=("5", "0", None)), fq("spot", cpu=("0", "5", None)))
        .obj(),
        make_cq(f"{prefix}-lender")
        .cohort(f"{prefix}-cohort")
        .group(fq("on-demand", cpu="0"), fq("spot", cpu="5"))
        .obj(),
        make_lq(f"{prefix}-queue", "default", f"{prefix}-cq"),
    ]


SCHEDULE["PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing in second"] = Case(
    objs=_preference_pair("pob", "PreemptionOverBorrowing"),
    workloads=[
        reserved("low-pob", "default", "pob-cq", "on-demand", "5", prio=-1, queue="pob-queue", admitted=True),
        pending("high-pob", "default", "pob-queue", prio=0, uid="wl-high-pob", job_uid="job-high-pob", cpu="5"),
    ],
    assignments={"default/low-pob": ("pob-cq", one("on-demand", "5"))},
    pending={
        "default/high-pob": (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 5 more needed. Pending the preemption of 1 workload(s)",
        )
    },
    preempted={
        "default/low-pob": (
            "InClusterQueue",
            preempt_msg("wl-high-pob", "job-high-pob", IN_CQ, "/pob-cohort/pob-cq", "/pob-cohort/pob-cq"),
        )
    },
    left={"pob-cq": ["default/high-pob"]},
)
SCHEDULE[
    "PreemptionOverBorrowing preference: select fitting second flavor over first flavor with no preemption candidates"
] = Case(
    objs=[
        make_cohort("nopc-root").group(fq("on-demand", cpu="0"), fq("spot", cpu="5")).obj(),
        make_cohort("nopc-mid").parent("nopc-root").obj(),
        make_cq("nopc-cq")
        .cohort("nopc-mid")
        .preemption(within="LowerPriority")
        .fungibility(
            when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor", preference="PreemptionOverBorrowing"
        )
        .group(fq("on-demand", cpu=("5", "0", None)), fq("spot", cpu="0"))
        .obj(),
        make_cq("nopc-sibling").cohort("nopc-mid").group(fq("on-demand", cpu="5"), fq("spot", cpu="0")).obj(),
        make_lq("nopc-queue", "default", "nopc-cq"),
    ],
    workloads=[
        reserved("admitted-nopc", "default", "nopc-cq", "on-demand", "5", prio=0, queue="nopc-queue", admitted=True),
        pending("pending-nopc", "default", "nopc-queue", prio=0, cpu="5"),
    ],
    assignments={
        "default/admitted-nopc": ("nopc-cq", one("on-demand", "5")),
        "default/pending-nopc": ("nopc-cq", one("spot", "5")),
    },
)
SCHEDULE["BorrowingOverPreemption preference: borrow in second flavor instead of preempting in first"] = Case(
    objs=_preference_pair("bop", "BorrowingOverPreemption"),
    workloads=[
        reserved("low-bop", "default", "bop-cq", "on-demand", "5", prio=-1, queue="bop-queue", admitted=True),
        pending("high-bop", "default", "bop-queue", prio=0, cpu="5"),
    ],
    assignments={
        "default/low-bop": ("bop-cq", one("on-demand", "5")),
        "default/high-bop": ("bop-cq", one("spot", "5")),
    },
)
_OVERFLOW = [make_lq("overflow-queue", "default", "overflow-cq")]
SCHEDULE["prevent integer overflow when sum of requests over podsets exceeds MaxInt64"] = Case(
    objs=[make_cq("overflow-cq").group(fq("default", cpu="10000")).obj(), *_OVERFLOW],
    workloads=[
        podsets(
            "vuln-wl",
            "default",
            ("ps1", 1, {"cpu": "1000000m"}),
            ("ps2", 1, {"cpu": "9223372036854775000m"}),
            queue="overflow-queue",
        )
    ],
    pending={
        "default/vuln-wl": (
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set ps2: insufficient quota for cpu in flavor default, previously considered podsets requests (1k) + current podset request (9223372036854775) > maximum capacity (10k)",
        )
    },
    inadmissible={"overflow-cq": ["default/vuln-wl"]},
)
SCHEDULE["prevent integer overflow in ResourceValue conversion to MilliValue"] = Case(
    objs=[make_cq("overflow-cq").group(fq("default", cpu="10")).obj(), *_OVERFLOW],
    workloads=[podsets("vuln-wl", "default", ("ps1", 1, {"cpu": "9223372036854776"}), queue="overflow-queue")],
    pending={
        "default/vuln-wl": (
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set ps1: insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (9223372036854775807m) > maximum capacity (10)",
        )
    },
    inadmissible={"overflow-cq": ["default/vuln-wl"]},
)


_OVER_LIMIT = podsets("new", "sales", ("one", 1, {"cpu": "200m"}))
_OVER_LIMIT["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "100m"}
SCHEDULE["container resource requests exceed limits"] = Case(
    workloads=[_OVER_LIMIT],
    pending={
        "sales/new": (
            "Misconfigured",
            'resources validation failed: spec.podSets[0].template.spec.containers[0]: Invalid value: ["cpu"]: requests must not exceed its limits',
        )
    },
    left={"sales": ["sales/new"]},
)


SCHEDULE["container does not satisfy limitRange constraints"] = Case(
    workloads=[podsets("new", "sales", ("one", 1, {"cpu": "500m"}))],
    objs=[limit_range("alpha", "sales", max={"cpu": "300m"})],
    pending={
        "sales/new": (
            "Misconfigured",
            "resources didn't satisfy LimitRange constraints: spec.podSets[0].template.spec.containers[0]: "
            'Invalid value: ["cpu"]: requests must not be above the limitRange max',
        )
    },
    left={"sales": ["sales/new"]},
)


def _params(cases: Mapping[str, Case]) -> list[Any]:
    return [pytest.param(c, id=name) for name, c in cases.items()]


@pytest.mark.parametrize("case", _params(SCHEDULE))
def test_schedule(case: Case) -> None:
    core, result = run_case(case)
    check(core, result, case)
    if case.skipped_preemptions is not None:
        assert result.preemption_skips == case.skipped_preemptions


# -- TestLastSchedulingContext: two cycles, with workloads deleted in between ----------------------
def _cohort_cq(name: str, fungibility: str) -> dict[str, Any]:
    return (
        make_cq(name)
        .cohort("cohort")
        .strategy("StrictFIFO")
        .preemption(within="Never", reclaim="LowerPriority")
        .fungibility(when_can_borrow=fungibility, when_can_preempt=fungibility)
        .group(fq("on-demand", cpu=("50", "50", None)), fq("spot", cpu=("100", "0", None)))
        .obj()
    )


COHORT_CQS = [
    _cohort_cq("eng-cohort-alpha", "MayStopSearch"),
    _cohort_cq("eng-cohort-beta", "MayStopSearch"),
    _cohort_cq("eng-cohort-theta", "TryNextFlavor"),
]
LSC_QUEUES = [
    make_lq("main", "default", "eng-alpha"),
    make_lq("main-alpha", "default", "eng-cohort-alpha"),
    make_lq("main-beta", "default", "eng-cohort-beta"),
    make_lq("main-theta", "default", "eng-cohort-theta"),
]


def running(
    name: str, cq: str, flavor: str, cpu: str, prio: int | None = None, queue: str | None = None, at: float = 0
) -> dict[str, Any]:
    """An admitted single-pod workload (upstream `ReserveQuotaAt` + `AdmittedAt(true)`)."""
    return wl(name, "default", queue, prio).request(cpu=cpu).reserve(cq, psa(cpu=(flavor, cpu)), at=at).obj()


@dataclass
class TwoCycles:
    cqs: list[dict[str, Any]]
    workloads: list[dict[str, Any]]
    # First cycle: admitted keys, and Pending decisions (reason, message); victims' Preempted reasons.
    first_admitted: list[str] = field(default_factory=list)
    first_pending: dict[str, tuple[str, str]] = field(default_factory=dict)
    first_preempted: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    # Admitted (Admitted=True) workloads in the cache after the second cycle.
    second: dict[str, tuple[str, tuple[PSA, ...]]] = field(default_factory=dict)


LAST_CONTEXT: dict[str, TwoCycles] = {
    "scheduling on the first flavor is unblocked after some workloads were deleted": TwoCycles(
        cqs=[
            make_cq("eng-alpha")
            .preemption(within="LowerPriority")
            .fungibility(when_can_preempt="MayStopSearch")
            .group(fq("on-demand", cpu=("50", "50", None)), fq("spot", cpu=("10", "0", None)))
            .obj()
        ],
        workloads=[
            running("low-1", "eng-alpha", "on-demand", "50", queue="main"),
            pending("preemptor", "default", cpu="20"),
        ],
        first_pending={
            "default/preemptor": waiting(
                "insufficient quota for cpu in flavor spot, previously considered podsets requests (0) + current podset request (20) > maximum capacity (10), insufficient unused quota for cpu in flavor on-demand, 20 more needed"
            )
        },
        delete=["low-1"],
        second={"default/preemptor": ("eng-alpha", one("on-demand", "20"))},
    ),
    "borrow before next flavor": TwoCycles(
        cqs=COHORT_CQS,
        workloads=[
            running("placeholder", "eng-cohort-alpha", "on-demand", "50"),
            pending("borrower", "default", "main-alpha", cpu="20"),
            pending("workload1", "default", "main-beta", cpu="20"),
        ],
        first_admitted=["default/borrower", "default/workload1"],
        second={
            "default/placeholder": ("eng-cohort-alpha", one("on-demand", "50")),
            "default/workload1": ("eng-cohort-beta", one("on-demand", "20")),
            "default/borrower": ("eng-cohort-alpha", one("on-demand", "20")),
        },
    ),
    "borrow after all flavors": TwoCycles(
        cqs=COHORT_CQS,
        workloads=[
            running("placeholder", "eng-cohort-alpha", "on-demand", "50"),
            running("placeholder1", "eng-cohort-theta", "on-demand", "50"),
            pending("workload", "default", "main-theta", cpu="20"),
        ],
        first_admitted=["default/workload"],
        second={
            "default/placeholder": ("eng-cohort-alpha", one("on-demand", "50")),
            "default/placeholder1": ("eng-cohort-theta", one("on-demand", "50")),
            "default/workload": ("eng-cohort-theta", one("spot", "20")),
        },
    ),
    "when the next flavor is full, but can borrow on first": TwoCycles(
        cqs=COHORT_CQS,
        workloads=[
            running("placeholder", "eng-cohort-alpha", "on-demand", "40"),
            running("placeholder1", "eng-cohort-theta", "on-demand", "40"),
            running("placeholder2", "eng-cohort-theta", "spot", "100"),
            pending("workload", "default", "main-theta", cpu="20"),
        ],
        first_admitted=["default/workload"],
        second={
            "default/placeholder": ("eng-cohort-alpha", one("on-demand", "40")),
            "default/placeholder1": ("eng-cohort-theta", one("on-demand", "40")),
            "default/placeholder2": ("eng-cohort-theta", one("spot", "100")),
            "default/workload": ("eng-cohort-theta", one("on-demand", "20")),
        },
    ),
    "when the next flavor is full, but can preempt on first": TwoCycles(
        cqs=COHORT_CQS,
        workloads=[
            running("placeholder-alpha", "eng-cohort-alpha", "on-demand", "150", prio=-1),
            running("placeholder-theta-spot", "eng-cohort-theta", "spot", "100"),
            pending("new", "default", "main-theta", uid="wl-new", job_uid="job-new", cpu="20"),
        ],
        first_pending={
            "default/new": (
                "WaitingForPreemptedWorkloads",
                "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 20 more needed, insufficient unused quota for cpu in flavor spot, 20 more needed. Pending the preemption of 1 workload(s)",
            )
        },
        first_preempted={
            "default/placeholder-alpha": (
                "InCohortReclamation",
                preempt_msg("wl-new", "job-new", RECLAIM, "/cohort/eng-cohort-theta", "/cohort/eng-cohort-alpha"),
            )
        },
        delete=["placeholder-alpha"],
        second={
            "default/placeholder-theta-spot": ("eng-cohort-theta", one("spot", "100")),
            "default/new": ("eng-cohort-theta", one("on-demand", "20")),
        },
    ),
    "TryNextFlavor, but second flavor is full and can preempt on first": TwoCycles(
        cqs=[
            make_cq("eng-cohort-alpha")
            .cohort("cohort")
            .preemption(within="LowerPriority", reclaim="Any")
            .fungibility(when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor")
            .group(fq("on-demand", cpu=("0", "60", None)), fq("spot", cpu=("30", "30", None)))
            .obj(),
            make_cq("eng-cohort-beta")
            .cohort("cohort")
            .preemption(within="LowerPriority", reclaim="Any")
            .fungibility(when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor")
            .group(fq("on-demand", cpu=("30", "30", None)), fq("spot", cpu=("30", "30", None)))
            .obj(),
            make_cq("eng-cohort-shared").cohort("cohort").group(fq("on-demand", cpu="30")).obj(),
        ],
        workloads=[
            running("alpha1", "eng-cohort-alpha", "on-demand", "22", at=-1),
            running("alpha2", "eng-cohort-alpha", "on-demand", "22"),
            running("alpha3", "eng-cohort-alpha", "spot", "22"),
            running("beta1", "eng-cohort-beta", "spot", "22"),
            pending("new", "default", "main-beta", uid="wl-new", job_uid="job-new", cpu="22"),
        ],
        first_pending={
            "default/new": (
                "WaitingForPreemptedWorkloads",
                "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 6 more needed, insufficient unused quota for cpu in flavor spot, 6 more needed. Pending the preemption of 1 workload(s)",
            )
        },
        first_preempted={
            "default/alpha2": (
                "InCohortReclamation",
                preempt_msg("wl-new", "job-new", RECLAIM, "/cohort/eng-cohort-beta", "/cohort/eng-cohort-alpha"),
            )
        },
        delete=["alpha2"],
        second={
            "default/alpha1": ("eng-cohort-alpha", one("on-demand", "22")),
            "default/alpha3": ("eng-cohort-alpha", one("spot", "22")),
            "default/beta1": ("eng-cohort-beta", one("spot", "22")),
            "default/new": ("eng-cohort-beta", one("on-demand", "22")),
        },
    ),
}


@pytest.mark.parametrize("case", list(LAST_CONTEXT.values()), ids=list(LAST_CONTEXT))
def test_last_scheduling_context(case: TwoCycles) -> None:
    core = make_core(
        make_flavor("on-demand").obj(),
        make_flavor("spot").obj(),
        *case.cqs,
        *LSC_QUEUES,
        *case.workloads,
        namespaces={"default": {}},
    )
    first = core.schedule(T0)
    assert sorted(str(d.key) for d in first.admitted) == case.first_admitted
    assert {str(d.key): (d.reason, d.message) for d in first.pending} == case.first_pending
    assert {str(v.key): (v.reason, v.message) for d in first.preempted for v in d.targets} == case.first_preempted
    for name in case.delete:
        core.on_workload_deleted("default", name, T0)
    core.schedule(T0)
    admitted = {k: v for k, v in cache_assignments(core).items() if core.cache.reserving[WorkloadKey(k)].is_admitted}
    assert admitted == {k: (cq, norm_want(ps)) for k, (cq, ps) in case.second.items()}
