"""Preemption scenarios (after upstream preemption_test.go): policies, minimal sets, messages."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core import Pending, Preempt

ONE = make_flavor("one").obj()


def admitted(name: str, cq: str, cpu: str, prio: int = 0, at: float = 0) -> dict[str, Any]:
    return (
        make_wl(name)
        .queue("lq-" + cq)
        .priority(prio)
        .created(at)
        .request(cpu=cpu)
        .reserve(cq, psa(cpu=("one", cpu)), at=at)
        .obj()
    )


def run(*objs: dict[str, Any], incoming: dict[str, Any], fair: bool = False) -> tuple[list[Preempt], list[Pending]]:
    names = sorted({o["metadata"]["name"] for o in objs if o["kind"] == "ClusterQueue"})
    core = make_core(ONE, *objs, *(make_lq("lq-" + n, "ns", n) for n in names), incoming, fair_sharing=fair)
    r = core.schedule(T0)
    return r.preempted, r.pending


def victims(p: list[Preempt]) -> list[tuple[str, str]]:
    return sorted((v.key.split("/")[1], v.reason) for d in p for v in d.targets)


SOLO = make_cq("a").group(fq("one", cpu="3"))


@pytest.mark.parametrize(
    ("objs", "incoming", "want"),
    [
        pytest.param(
            [
                SOLO.preemption(within="LowerPriority").obj(),
                admitted("low", "a", "2", prio=-1),
                admitted("mid", "a", "1", prio=0),
            ],
            make_wl("in").queue("lq-a").priority(1).request(cpu="2").obj(),
            [("low", "InClusterQueue")],
            id="within LowerPriority takes the lowest first",
        ),
        pytest.param(
            [
                SOLO.preemption(within="LowerPriority").obj(),
                admitted("low1", "a", "1", prio=-1),
                admitted("low2", "a", "1", prio=-2),
                admitted("low3", "a", "1", prio=-3),
            ],
            make_wl("in").queue("lq-a").priority(1).request(cpu="2").obj(),
            [("low2", "InClusterQueue"), ("low3", "InClusterQueue")],
            id="minimal set",
        ),
        pytest.param(
            [SOLO.preemption(within="Never").obj(), admitted("low", "a", "3", prio=-1)],
            make_wl("in").queue("lq-a").priority(1).request(cpu="2").obj(),
            [],
            id="within Never",
        ),
        pytest.param(
            [SOLO.preemption(within="LowerPriority").obj(), admitted("eq", "a", "3", prio=0, at=10)],
            make_wl("in").queue("lq-a").request(cpu="2").obj(),
            [],
            id="LowerPriority spares equal priority",
        ),
        pytest.param(
            [SOLO.preemption(within="LowerOrNewerEqualPriority").obj(), admitted("eq", "a", "3", prio=0, at=10)],
            make_wl("in").queue("lq-a").created(5).request(cpu="2").obj(),
            [("eq", "InClusterQueue")],
            id="LowerOrNewerEqualPriority takes newer equal",
        ),
        pytest.param(
            [SOLO.preemption(within="LowerOrNewerEqualPriority").obj(), admitted("eq", "a", "3", prio=0, at=1)],
            make_wl("in").queue("lq-a").created(5).request(cpu="2").obj(),
            [],
            id="LowerOrNewerEqualPriority spares older equal",
        ),
        pytest.param(
            [
                make_cq("a").cohort("co").group(fq("one", cpu="3")).preemption(reclaim="Any").obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
                admitted("borrower", "b", "5", prio=10),
            ],
            make_wl("in").queue("lq-a").request(cpu="2").obj(),
            [("borrower", "InCohortReclamation")],
            id="reclaimWithinCohort Any",
        ),
        pytest.param(
            [
                make_cq("a").cohort("co").group(fq("one", cpu="3")).preemption(reclaim="LowerPriority").obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
                admitted("borrower", "b", "5", prio=10),
            ],
            make_wl("in").queue("lq-a").request(cpu="2").obj(),
            [],
            id="reclaimWithinCohort LowerPriority spares higher",
        ),
        pytest.param(
            [
                make_cq("a").cohort("co").group(fq("one", cpu="3")).preemption(reclaim="Any").obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
                admitted("b1", "b", "3"),
                admitted("a1", "a", "2"),
            ],
            make_wl("in").queue("lq-a").request(cpu="2").obj(),
            [],
            id="no reclaim from a queue within nominal",
        ),
        pytest.param(
            [
                make_cq("a")
                .cohort("co")
                .group(fq("one", cpu="3"))
                .preemption(reclaim="Any", within="LowerPriority", borrow="LowerPriority")
                .obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
                admitted("a1", "a", "3", prio=5),
                admitted("b1", "b", "1", prio=0),
                admitted("b2", "b", "2", prio=0),
            ],
            make_wl("in").queue("lq-a").priority(5).request(cpu="2").obj(),
            [],
            id="borrowWithinCohort needs a borrower",
        ),
        pytest.param(
            [
                make_cq("a")
                .cohort("co")
                .group(fq("one", cpu="3"))
                .preemption(reclaim="LowerPriority", borrow="LowerPriority")
                .obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="1")).obj(),
                make_cq("c").cohort("co").group(fq("one", cpu="2")).obj(),
                admitted("a1", "a", "3", prio=5),
                admitted("b1", "b", "2", prio=0),
                admitted("b2", "b", "1", prio=0, at=5),
            ],
            make_wl("in").queue("lq-a").priority(5).request(cpu="1").obj(),
            [("b2", "InCohortReclaimWhileBorrowing")],
            id="borrowWithinCohort LowerPriority",
        ),
        pytest.param(
            [
                make_cq("a")
                .cohort("co")
                .group(fq("one", cpu="3"))
                .preemption(reclaim="LowerPriority", borrow="LowerPriority", threshold=-1)
                .obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="1")).obj(),
                make_cq("c").cohort("co").group(fq("one", cpu="2")).obj(),
                admitted("a1", "a", "3", prio=5),
                admitted("b1", "b", "2", prio=0),
                admitted("b2", "b", "1", prio=0, at=5),
            ],
            make_wl("in").queue("lq-a").priority(5).request(cpu="1").obj(),
            [],
            id="borrowWithinCohort above maxPriorityThreshold",
        ),
    ],
)
def test_classical_preemption(
    objs: list[dict[str, Any]], incoming: dict[str, Any], want: list[tuple[str, str]]
) -> None:
    preempted, pending = run(*objs, incoming=incoming)
    assert victims(preempted) == want
    (p,) = pending
    if want:
        assert p.reason == "WaitingForPreemptedWorkloads"
        assert p.message.endswith(f". Pending the preemption of {len(want)} workload(s)")
    else:
        assert p.reason == "WaitingForQuota"


def test_preemption_conditions_and_message() -> None:
    preempted, _ = run(
        make_cq("a").cohort("co").group(fq("one", cpu="3")).preemption(reclaim="Any").obj(),
        make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
        admitted("borrower", "b", "5"),
        incoming=make_wl("in")
        .queue("lq-a")
        .uid("u-in")
        .label("kueue.x-k8s.io/job-uid", "job-1")
        .request(cpu="2")
        .obj(),
    )
    (v,) = preempted[0].targets
    msg = "Preempted to accommodate a workload (UID: u-in, JobUID: job-1) due to reclamation within the cohort; preemptor path: /co/a; preemptee path: /co/b"
    assert v.message == msg
    assert [(c.type, c.status, c.reason, c.message) for c in v.conditions] == [
        ("Evicted", "True", "Preempted", msg),
        ("Preempted", "True", "InCohortReclamation", msg),
    ]


def test_victims_not_patched_twice() -> None:
    core = make_core(
        ONE,
        SOLO.preemption(within="LowerPriority").obj(),
        make_lq("lq-a", "ns", "a"),
        admitted("low", "a", "3", prio=-1),
        make_wl("in").queue("lq-a").priority(1).request(cpu="2").obj(),
    )
    assert len(core.schedule(T0).preempted) == 1
    r = core.schedule(T0)
    assert r.preempted == []
    assert r.pending[0].message.endswith("Pending the preemption of 1 workload(s)")


@pytest.mark.parametrize(
    ("objs", "incoming", "want"),
    [
        pytest.param(
            [
                make_cq("a").cohort("co").group(fq("one", cpu="3")).preemption(reclaim="Any").obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
                admitted("b1", "b", "3"),
                admitted("b2", "b", "2", at=1),
                admitted("b3", "b", "1", at=2),
            ],
            make_wl("in").queue("lq-a").request(cpu="2").obj(),
            [("b2", "InCohortReclamation")],
            id="preemptor within nominal reclaims",
        ),
        pytest.param(
            [
                make_cq("a").cohort("co").group(fq("one", cpu="3")).preemption(reclaim="Any").obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
                make_cq("c").cohort("co").group(fq("one", cpu="3")).obj(),
                admitted("a1", "a", "3"),
                admitted("b1", "b", "3"),
                admitted("b2", "b", "3", at=1),
            ],
            make_wl("in").queue("lq-a").request(cpu="1").obj(),
            [("b2", "InCohortFairSharing")],
            id="fair share: heavier borrower loses",
        ),
        pytest.param(
            [
                make_cq("a").cohort("co").group(fq("one", cpu="3")).preemption(reclaim="Any").obj(),
                make_cq("b").cohort("co").group(fq("one", cpu="3")).obj(),
                make_cq("c").cohort("co").group(fq("one", cpu="3")).obj(),
                admitted("a1", "a", "3"),
                admitted("a2", "a", "1"),
                admitted("b1", "b", "3"),
                admitted("b2", "b", "1", at=1),
            ],
            make_wl("in").queue("lq-a").request(cpu="2").obj(),
            [],
            id="fair share: no preemption from an equal borrower",
        ),
    ],
)
def test_fair_preemption(objs: list[dict[str, Any]], incoming: dict[str, Any], want: list[tuple[str, str]]) -> None:
    preempted, _ = run(*objs, incoming=incoming, fair=True)
    assert victims(preempted) == sorted(want)
