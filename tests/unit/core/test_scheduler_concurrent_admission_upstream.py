"""Upstream's ConcurrentAdmission scheduler scenarios (`pkg/scheduler/scheduler_concurrent_admission_test.go`,
v0.19.2), run through the harness of `scheduler_harness`: one cycle, then the reservations,
the pending reasons and messages, the variant evicted for a migration and what is left queued.
Row ids are upstream's case names."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import fq, make_cq, make_flavor, make_lq, make_wl, psa
from tests.unit.core.scheduler_harness import Case, check, one, run_case, sel

PARENT, PARENT_UID = "parent-workload", "parent-uid"
CONCURRENT_CQ = (
    make_cq("concurrent-cq").selector(sel("eng")).group(fq("on-demand", cpu="10"), fq("spot", cpu="10")).obj()
)
OBJS = [make_flavor("reservation").obj(), CONCURRENT_CQ, make_lq("concurrent-queue", "eng-alpha", "concurrent-cq")]
MIN_PREF_OBJS = [
    make_cq("concurrent-cq-with-min-pref")
    .selector(sel("eng"))
    .group(fq("reservation", cpu="10"), fq("on-demand", cpu="10"), fq("spot", cpu="10"))
    .concurrent_admission(last_acceptable="reservation")
    .obj(),
    make_lq("concurrent-queue-new", "eng-alpha", "concurrent-cq-with-min-pref"),
]


def variant(
    name: str, uid: str, flavor: str, queue: str = "concurrent-queue", admitted_in: str | None = None
) -> dict[str, Any]:
    """A 10-CPU variant of PARENT pursuing `flavor`; admitted on it in `admitted_in` when given."""
    b = make_wl(name, "eng-alpha").uid(uid).queue(queue).request(cpu="10").variant_of(PARENT, PARENT_UID, flavor)
    if admitted_in is not None:
        b.reserve(admitted_in, psa(cpu=(flavor, "10")), admitted=True)
    return b.obj()


CASES: dict[str, Case] = {}
CASES["concurrent admission: more favorable variant evicts less favorable sibling"] = Case(
    objs=OBJS,
    workloads=[
        variant("sibling-less-favorable", "sibling-uid", "spot", admitted_in="concurrent-cq"),
        variant("candidate-more-favorable", "candidate-uid", "on-demand"),
    ],
    assignments={"eng-alpha/sibling-less-favorable": ("concurrent-cq", one("spot", "10"))},
    pending={
        "eng-alpha/candidate-more-favorable": (
            "WaitingForPreemptedWorkloads",
            ". Pending the migration of 1 workload(s)",
        )
    },
    migrated={
        "eng-alpha/sibling-less-favorable": (
            "FlavorMigration",
            "Evicted to accommodate a workload (UID: candidate-uid) due to migration to more favorable resource flavor",
        )
    },
    left={"concurrent-cq": ["eng-alpha/candidate-more-favorable"]},
    concurrent_admission=True,
)
CASES["concurrent admission: less favorable variant is skipped when more favorable sibling is admitted"] = Case(
    objs=OBJS,
    workloads=[
        variant("sibling-more-favorable", "sibling-uid", "on-demand", admitted_in="concurrent-cq"),
        variant("candidate-less-favorable", "candidate-uid", "spot"),
    ],
    assignments={"eng-alpha/sibling-more-favorable": ("concurrent-cq", one("on-demand", "10"))},
    pending={
        "eng-alpha/candidate-less-favorable": ("PendingEvaluation", "A more favorable variant is already admitted")
    },
    left={"concurrent-cq": ["eng-alpha/candidate-less-favorable"]},
    concurrent_admission=True,
)
CASES["concurrent admission: migration is stopped when target flavor is below LastAcceptableFlavorName"] = Case(
    objs=[*OBJS, *MIN_PREF_OBJS],
    workloads=[
        variant(
            "sibling-less-favorable",
            "sibling-uid",
            "spot",
            queue="concurrent-queue-new",
            admitted_in="concurrent-cq-with-min-pref",
        ),
        variant("candidate-more-favorable", "candidate-uid", "on-demand", queue="concurrent-queue-new"),
    ],
    assignments={"eng-alpha/sibling-less-favorable": ("concurrent-cq-with-min-pref", one("spot", "10"))},
    pending={
        "eng-alpha/candidate-more-favorable": ("PendingEvaluation", "Target flavor is below LastAcceptableFlavorName")
    },
    left={"concurrent-cq-with-min-pref": ["eng-alpha/candidate-more-favorable"]},
    concurrent_admission=True,
)


@pytest.mark.parametrize("case", [pytest.param(c, id=name) for name, c in CASES.items()])
def test_schedule_concurrent_admission(case: Case) -> None:
    core, result = run_case(case)
    check(core, result, case)
