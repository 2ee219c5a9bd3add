"""Upstream's preemption unit-test scenarios, as table tests.

Ported from `pkg/scheduler/preemption/{preemption_test,preemption_hierarchical_test,
preemption_fair_test}.go`, `common/preemption_policy_test.go` and `fairsharing/ordering_test.go`
(upstream commit ff69552e79): the same queues, admitted workloads, incoming workload and flavor
assignment; the same expected victims, Preempted reasons and Evicted/Preempted condition messages.
Test ids are upstream's case names.

Like upstream, the preemptor is given an explicit flavor assignment (which resources need
preemption in which flavor) instead of running the flavor assigner, and the snapshot must be left
exactly as it was found.

Not ported: cases behind the PriorityBoost and AdmissionFairSharing gates (neither is part of the
core), tests of API-write mechanics (concurrent modification, failed patches: the worker's job),
and tests of log output and of upstream-internal helpers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.builders import (
    T0,
    fq,
    make_cohort,
    make_core,
    make_cq,
    make_flavor,
    make_lq,
    make_wl,
    psa,
)
from webhook.api.constants import JOB_UID_LABEL, PreemptionReason
from webhook.core import conditions, fair_sharing, ordering
from webhook.core.flavor_assigner import Assignment, FlavorAssignment, Mode, PodSetResult
from webhook.core.preemption import Preemptor, Target, cq_path, satisfies_policy
from webhook.core.resources import FlavorResource
from webhook.core.snapshot import Snapshot, take_snapshot
from webhook.core.workload import WorkloadInfo, parse_workload

FLAVORS = [make_flavor(n).obj() for n in ("default", "alpha", "beta", "premium", "cheap")]
P, F = Mode.PREEMPT, Mode.FIT
LP, ANY, NEVER, LONEP = "LowerPriority", "Any", "Never", "LowerOrNewerEqualPriority"

# Reason -> the phrase upstream's expected messages use.
HUMAN = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
    "InCohortFairSharing": "Fair Sharing within the cohort",
}

AssignmentSpec = dict[str, dict[str, tuple[str, Mode]]]


@dataclass(frozen=True)
class V:
    """An expected victim: name, Preempted reason, and the two paths of the message."""

    name: str
    reason: str
    preemptor_path: str
    preemptee_path: str

    def conditions(self) -> list[tuple[str, str, str, str]]:
        msg = (
            "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to "
            f"{HUMAN[self.reason]}; preemptor path: {self.preemptor_path}; preemptee path: {self.preemptee_path}"
        )
        return [("Evicted", "True", "Preempted", msg), ("Preempted", "True", self.reason, msg)]


def adm(
    name: str, cq: str, prio: int = 0, flavor: str = "default", at: float = 0, created: float = 0, **req: str
) -> dict[str, Any]:
    """A workload with quota reserved in `cq` (at T0+`at`), every request on `flavor`."""
    assignment = {"name": "main", "flavors": dict.fromkeys(req, flavor), "resourceUsage": dict(req), "count": 1}
    return make_wl(name).priority(prio).created(created).request(**req).reserve(cq, assignment, at=at).obj()


def unit(name: str, cq: str, prio: int = 0, flavor: str = "default") -> dict[str, Any]:
    """Upstream's `unitWl`: one cpu."""
    return adm(name, cq, prio, flavor, cpu="1")


def incoming(prio: int = 0, created: float = 0, name: str = "in", **req: str) -> dict[str, Any]:
    """The preemptor, with upstream's UID and job UID (used in the messages)."""
    return (
        make_wl(name).uid("wl-in").label(JOB_UID_LABEL, "job-in").priority(prio).created(created).request(**req).obj()
    )


def one(**flavors: tuple[str, Mode]) -> AssignmentSpec:
    """`singlePodSetAssignment`: the podSet `main`."""
    return {"main": dict(flavors)}


def build_assignment(wl: WorkloadInfo, cq: str, spec: AssignmentSpec) -> Assignment:
    a = Assignment(cq)
    requests = wl.pod_set_requests()
    names = [ps.name for ps in wl.pod_sets]
    for ps_name, flavors in spec.items():
        i = names.index(ps_name)
        ps = PodSetResult(
            ps_name,
            wl.pod_sets[i].count,
            dict(requests[i]),
            {r: FlavorAssignment(f, m) for r, (f, m) in flavors.items()},
        )
        a.pod_sets.append(ps)
        for r, (f, _) in flavors.items():
            fr = FlavorResource(f, r)
            a.usage[fr] = a.usage.get(fr, 0) + requests[i].get(r, 0)
    return a


def snapshot_state(snap: Snapshot) -> tuple[dict[str, Any], dict[str, Any]]:
    """Usage (zero entries ignored, as upstream's snapCmpOpts) and members of every node."""
    cqs = {
        n: ({fr: v for fr, v in cq.usage.items() if v}, sorted(cq.workloads)) for n, cq in snap.cluster_queues.items()
    }
    cohorts = {n: {fr: v for fr, v in co.usage.items() if v} for n, co in snap.cohorts.items()}
    return cqs, cohorts


@dataclass
class Run:
    """What `get_targets` found, with what is needed to build the victims' conditions."""

    wl: WorkloadInfo
    cluster_queue: str
    snap: Snapshot
    targets: list[Target]

    def keys(self) -> set[tuple[str, str]]:
        return {(t.workload.name, str(t.reason)) for t in self.targets}

    def victims(self) -> dict[str, list[tuple[str, str, str, str]]]:
        """The Evicted and Preempted conditions each victim gets, built as the cycle issues them."""
        preemptor = self.snap.cluster_queues[self.cluster_queue]
        out = {}
        for t in self.targets:
            msg = conditions.preemption_message(
                self.wl.uid,
                self.wl.job_uid,
                t.reason,
                cq_path(preemptor),
                cq_path(self.snap.cluster_queues[t.cluster_queue]),
            )
            out[t.workload.name] = [
                (c.type, c.status, c.reason, c.message) for c in conditions.evicted_by_preemption(t.reason, msg)
            ]
        return out


def get_targets(
    objs: list[dict[str, Any]],
    wl_obj: dict[str, Any],
    cq: str,
    spec: AssignmentSpec,
    *,
    fair: bool = False,
    strategies: tuple[str, ...] = (),
) -> Run:
    """Build cache and snapshot from `objs`, then ask the preemptor for targets."""
    core = make_core(*FLAVORS, *objs)
    snap = take_snapshot(core.cache)
    before = snapshot_state(snap)
    wl = parse_workload(wl_obj)
    targets = Preemptor(fair_sharing=fair, strategies=strategies, now=T0).get_targets(
        wl, build_assignment(wl, cq, spec), snap
    )
    assert snapshot_state(snap) == before, "the snapshot was modified"
    return Run(wl, cq, snap, targets)


# == TestPreemption (preemption_test.go) ==========================================================


def _default_cqs() -> list[dict[str, Any]]:
    """Upstream's `defaultClusterQueues`."""
    return [
        make_cq("standalone")
        .group(fq("default", cpu="6"))
        .group(fq("alpha", memory="3Gi"), fq("beta", memory="3Gi"))
        .preemption(within=LP)
        .obj(),
        make_cq("c1")
        .cohort("cohort")
        .group(fq("default", cpu=("6", "6", None), memory=("3Gi", "3Gi", None)))
        .preemption(within=LP, reclaim=LP)
        .obj(),
        make_cq("c2")
        .cohort("cohort")
        .group(fq("default", cpu=("6", "6", None), memory=("3Gi", "3Gi", None)))
        .preemption(within=NEVER, reclaim=ANY)
        .obj(),
        make_cq("d1")
        .cohort("cohort-no-limits")
        .group(fq("default", cpu="6", memory="3Gi"))
        .preemption(within=LP, reclaim=LP)
        .obj(),
        make_cq("d2")
        .cohort("cohort-no-limits")
        .group(fq("default", cpu="6", memory="3Gi"))
        .preemption(within=NEVER, reclaim=ANY)
        .obj(),
        make_cq("l1")
        .cohort("legion")
        .group(fq("default", cpu=("6", "12", None), memory=("3Gi", "6Gi", None)))
        .preemption(within=LP, reclaim=LP)
        .obj(),
        make_cq("preventStarvation").group(fq("default", cpu="6")).preemption(within=LONEP).obj(),
        make_cq("a_standard")
        .cohort("with_shared_cq")
        .group(fq("default", cpu=("1", "12", None)))
        .preemption(NEVER, LP, LP, 0)
        .obj(),
        make_cq("b_standard")
        .cohort("with_shared_cq")
        .group(fq("default", cpu=("1", "12", None)))
        .preemption(LP, ANY, LP, 0)
        .obj(),
        make_cq("a_best_effort")
        .cohort("with_shared_cq")
        .group(fq("default", cpu=("1", "12", None)))
        .preemption(NEVER, LP, LP, 0)
        .obj(),
        make_cq("b_best_effort")
        .cohort("with_shared_cq")
        .group(fq("default", cpu=("0", "13", None)))
        .preemption(NEVER, LP, LP, 0)
        .obj(),
        make_cq("shared").cohort("with_shared_cq").group(fq("default", cpu="10")).obj(),
        make_cq("lend1")
        .cohort("cohort-lend")
        .group(fq("default", cpu=("6", None, "4")))
        .preemption(within=LP, reclaim=LP)
        .obj(),
        make_cq("lend2")
        .cohort("cohort-lend")
        .group(fq("default", cpu=("6", None, "2")))
        .preemption(within=LP, reclaim=LP)
        .obj(),
        make_cq("a")
        .cohort("cohort-three")
        .group(fq("default", cpu="2", memory="2"))
        .preemption(within=LP, reclaim=ANY)
        .obj(),
        make_cq("b").cohort("cohort-three").group(fq("default", cpu="2", memory="2")).obj(),
        make_cq("c").cohort("cohort-three").group(fq("default", cpu="2", memory="2")).obj(),
    ]


DEFAULT_CQS = _default_cqs()
CPU_P = one(cpu=("default", P))
CPU_MEM_P = one(cpu=("default", P), memory=("default", P))


def _sa(name: str, reason: str = "InClusterQueue") -> V:
    return V(name, reason, "/standalone", "/standalone")


def _co(name: str, reason: str, src: str, dst: str, cohort: str = "cohort") -> V:
    return V(name, reason, f"/{cohort}/{src}", f"/{cohort}/{dst}")


PREEMPTION_CASES = [
    pytest.param(
        [
            adm("low", "standalone", -1, cpu="2"),
            adm("mid", "standalone", cpu="2"),
            adm("high", "standalone", 1, cpu="2"),
        ],
        incoming(1, cpu="2"),
        "standalone",
        CPU_P,
        [_sa("low")],
        id="preempt lowest priority",
    ),
    pytest.param(
        [
            adm("low", "standalone", -1, cpu="2"),
            adm("mid", "standalone", cpu="2"),
            adm("high", "standalone", 1, cpu="2"),
        ],
        incoming(1, cpu="3"),
        "standalone",
        CPU_P,
        [_sa("low"), _sa("mid")],
        id="preempt multiple",
    ),
    pytest.param(
        [adm("low", "standalone", -1, cpu="3"), adm("mid", "standalone", cpu="3")],
        incoming(-1, cpu="1"),
        "standalone",
        CPU_P,
        [],
        id="no preemption for low priority",
    ),
    pytest.param(
        [adm("low", "standalone", -1, cpu="3"), adm("mid", "standalone", cpu="3")],
        incoming(cpu="4"),
        "standalone",
        CPU_P,
        [],
        id="not enough low priority workloads",
    ),
    pytest.param(
        [
            adm("low", "standalone", -1, cpu="1"),
            adm("mid", "standalone", cpu="1"),
            adm("high", "standalone", 1, cpu="3"),
        ],
        incoming(1, cpu="2"),
        "standalone",
        CPU_P,
        [_sa("low")],
        id="some free quota, preempt low priority",
    ),
    pytest.param(
        [
            adm("low", "standalone", -1, cpu="1"),
            adm("mid", "standalone", cpu="2"),
            adm("high", "standalone", 1, cpu="3"),
        ],
        incoming(1, cpu="2"),
        "standalone",
        CPU_P,
        [_sa("mid")],
        id="minimal set excludes low priority",
    ),
    pytest.param(
        [
            adm("low", "standalone", -1, "alpha", memory="2Gi"),
            adm("mid", "standalone", 0, "beta", memory="1Gi"),
            adm("high", "standalone", 1, "beta", memory="1Gi"),
        ],
        incoming(1, cpu="1", memory="2Gi"),
        "standalone",
        one(cpu=("default", F), memory=("beta", P)),
        [_sa("mid")],
        id="only preempt workloads using the chosen flavor",
    ),
    pytest.param(
        [adm("c1-low", "c1", -1, cpu="3"), adm("c2-mid", "c2", cpu="3"), adm("c2-high", "c2", 1, cpu="6")],
        incoming(1, cpu="3"),
        "c1",
        CPU_P,
        [_co("c2-mid", "InCohortReclamation", "c1", "c2")],
        id="reclaim quota from borrower",
    ),
    pytest.param(
        [
            adm("c1-low", "c1", -1, cpu="3", memory="3Gi"),
            adm("c2-mid", "c2", cpu="3"),
            adm("c2-high", "c2", 1, cpu="6"),
        ],
        incoming(1, cpu="3", memory="0"),
        "c1",
        one(cpu=("default", P), memory=("default", F)),
        [_co("c2-mid", "InCohortReclamation", "c1", "c2")],
        id="reclaim quota if workload requests 0 resources for a resource at nominal quota",
    ),
    pytest.param(
        [adm("c1-high", "c1", 1, cpu="4"), adm("c2-low-1", "c2", -1, cpu="4")],
        incoming(1, cpu="4"),
        "c1",
        CPU_P,
        [],
        id="no workloads borrowing",
    ),
    pytest.param(
        [adm("c1-high", "c1", 1, cpu="4"), adm("c2-low-1", "c2", -1, cpu="4"), adm("c2-low-2", "c2", -1, cpu="4")],
        incoming(1, cpu="4"),
        "c1",
        CPU_P,
        [],
        id="not enough workloads borrowing",
    ),
    pytest.param(
        [adm("c1-low", "c1", -1, cpu="4"), adm("c2-low-1", "c2", -1, cpu="4"), adm("c2-high-2", "c2", 1, cpu="4")],
        incoming(1, cpu="4", memory="5Gi"),
        "c1",
        CPU_MEM_P,
        [_co("c1-low", "InClusterQueue", "c1", "c1")],
        id="preempting locally and borrowing other resources in cohort, without cohort candidates",
    ),
    pytest.param(
        [adm("c1-med", "c1", 0, cpu="4"), adm("c1-low", "c1", -1, cpu="4"), adm("c2-low-1", "c2", -1, cpu="4")],
        incoming(1, cpu="4"),
        "c1",
        CPU_P,
        [_co("c1-low", "InClusterQueue", "c1", "c1")],
        id="preempting locally and borrowing same resource in cohort",
    ),
    pytest.param(
        [adm("d1-med", "d1", 0, cpu="4"), adm("d1-low", "d1", -1, cpu="4"), adm("d2-low-1", "d2", -1, cpu="4")],
        incoming(1, cpu="4"),
        "d1",
        CPU_P,
        [_co("d1-low", "InClusterQueue", "d1", "d1", "cohort-no-limits")],
        id="preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort",
    ),
    pytest.param(
        [
            adm("c1-med", "c1", 0, cpu="4"),
            adm("c2-low-1", "c2", -1, cpu="5"),
            adm("c2-low-2", "c2", -1, cpu="1"),
            adm("c2-low-3", "c2", -1, cpu="1"),
        ],
        incoming(1, cpu="2", memory="5Gi"),
        "c1",
        CPU_MEM_P,
        [_co("c1-med", "InClusterQueue", "c1", "c1")],
        id="preempting locally and borrowing other resources in cohort, with cohort candidates",
    ),
    pytest.param(
        [adm("l1-med", "l1", 0, cpu="4"), adm("l1-low", "l1", -1, cpu="2")],
        incoming(1, cpu="4"),
        "l1",
        CPU_P,
        [_co("l1-med", "InClusterQueue", "l1", "l1", "legion")],
        id="preempting locally and not borrowing same resource in 1-queue cohort",
    ),
    pytest.param(
        [adm("c1", "c1", cpu="2"), adm("c2-1", "c2", cpu="4"), adm("c2-2", "c2", cpu="4")],
        incoming(cpu="4"),
        "c1",
        CPU_P,
        [],
        id="do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority",
    ),
    pytest.param(
        [adm("c1-1", "c1", cpu="4"), adm("c1-2", "c1", 1, cpu="4"), adm("c2", "c2", cpu="2")],
        incoming(cpu="4"),
        "c2",
        CPU_P,
        [_co("c1-1", "InCohortReclamation", "c2", "c1")],
        id="reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny",
    ),
    pytest.param(
        [
            adm("c1-low", "c1", -1, cpu="3"),
            adm("c1-mid", "c1", cpu="2"),
            adm("c2-low", "c2", -1, cpu="3"),
            adm("c2-mid", "c2", cpu="4"),
        ],
        incoming(cpu="4"),
        "c1",
        CPU_P,
        [_co("c1-low", "InClusterQueue", "c1", "c1"), _co("c2-low", "InCohortReclamation", "c1", "c2")],
        id="preempt from all ClusterQueues in cohort",
    ),
    pytest.param(
        [adm("c2-low", "c2", -1, cpu="3")],
        incoming(1, cpu="4"),
        "c2",
        CPU_P,
        [],
        id="can't preempt workloads in ClusterQueue for withinClusterQueue=Never",
    ),
    pytest.param(
        [
            adm("low-alpha", "standalone", -1, "alpha", memory="2Gi"),
            adm("low-beta", "standalone", -1, "beta", memory="2Gi"),
        ],
        make_wl("in")
        .uid("wl-in")
        .label(JOB_UID_LABEL, "job-in")
        .podset("launcher", 1, memory="2Gi")
        .podset("workers", 2, memory="1Gi")
        .obj(),
        "standalone",
        {"launcher": {"memory": ("alpha", P)}, "workers": {"memory": ("beta", P)}},
        [_sa("low-alpha"), _sa("low-beta")],
        id="each podset preempts a different flavor",
    ),
    pytest.param(
        [
            adm("wl1", "preventStarvation", 2, cpu="2"),
            adm("wl2", "preventStarvation", 1, at=1, cpu="2"),
            adm("wl3", "preventStarvation", 1, cpu="2"),
        ],
        make_wl("in")
        .uid("wl-in")
        .label(JOB_UID_LABEL, "job-in")
        .priority(1)
        .created(-15)
        .podset("launcher", 1, cpu="2")
        .obj(),
        "preventStarvation",
        {"launcher": {"cpu": ("default", P)}},
        [V("wl2", "InClusterQueue", "/preventStarvation", "/preventStarvation")],
        id="preempt newer workloads with the same priority",
    ),
    pytest.param(
        [
            adm("a_best_effort_low", "a_best_effort", -1, cpu="10"),
            adm("b_best_effort_low", "b_best_effort", -1, cpu="1"),
        ],
        incoming(cpu="10"),
        "a_standard",
        CPU_P,
        [_co("a_best_effort_low", "InCohortReclaimWhileBorrowing", "a_standard", "a_best_effort", "with_shared_cq")],
        id="use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing",
    ),
    pytest.param(
        [adm("b_standard", "b_standard", 1, cpu="10")],
        incoming(2, cpu="10"),
        "a_standard",
        CPU_P,
        [],
        id="use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above MaxPriorityThreshold, "
        "if borrowing is required even after the preemption",
    ),
    pytest.param(
        [adm("b_standard", "b_standard", 1, cpu="13")],
        incoming(2, cpu="1"),
        "a_standard",
        CPU_P,
        [_co("b_standard", "InCohortReclamation", "a_standard", "b_standard", "with_shared_cq")],
        id="use BorrowWithinCohort; allow preempting a lower-priority workload with priority above MaxPriorityThreshold, "
        "if borrowing is not required after the preemption",
    ),
    pytest.param(
        [adm("a_standard", "a_standard", 1, cpu="13")],
        incoming(2, cpu="1"),
        "a_standard",
        CPU_P,
        [],
        id="use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue",
    ),
    pytest.param(
        [
            adm("a_standard_1", "a_standard", 1, cpu="10"),
            adm("a_standard_2", "a_standard", 1, cpu="1"),
            adm("b_standard_1", "b_standard", 1, cpu="1"),
            adm("b_standard_2", "b_standard", 2, cpu="1"),
        ],
        incoming(3, cpu="1"),
        "b_standard",
        CPU_P,
        [_co("b_standard_1", "InClusterQueue", "b_standard", "b_standard", "with_shared_cq")],
        id="use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal",
    ),
    pytest.param(
        [
            adm("b_standard_high", "b_standard", 2, cpu="10"),
            adm("b_standard_mid", "b_standard", 1, cpu="1"),
            adm("a_best_effort_low", "a_best_effort", -1, cpu="1"),
            adm("a_best_effort_lower", "a_best_effort", -2, cpu="1"),
        ],
        incoming(2, cpu="2"),
        "b_standard",
        CPU_P,
        [
            _co(
                "a_best_effort_lower", "InCohortReclaimWhileBorrowing", "b_standard", "a_best_effort", "with_shared_cq"
            ),
            _co("b_standard_mid", "InClusterQueue", "b_standard", "b_standard", "with_shared_cq"),
        ],
        id="use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold",
    ),
    pytest.param(
        [
            adm("lend1-low", "lend1", -1, cpu="3"),
            adm("lend2-mid", "lend2", cpu="3"),
            adm("lend2-high", "lend2", 1, cpu="4"),
        ],
        incoming(1, cpu="3"),
        "lend1",
        CPU_P,
        [_co("lend2-mid", "InCohortReclamation", "lend1", "lend2", "cohort-lend")],
        id="reclaim quota from lender",
    ),
    pytest.param(
        [
            adm("lend1-low", "lend1", -1, cpu="3"),
            adm("lend1-mid", "lend1", cpu="2"),
            adm("lend2-low", "lend2", -1, cpu="3"),
            adm("lend2-mid", "lend2", cpu="4"),
        ],
        incoming(cpu="4"),
        "lend1",
        CPU_P,
        [
            _co("lend1-low", "InClusterQueue", "lend1", "lend1", "cohort-lend"),
            _co("lend2-low", "InCohortReclamation", "lend1", "lend2", "cohort-lend"),
        ],
        id="preempt from all ClusterQueues in cohort-lend",
    ),
    pytest.param(
        [adm("lend2-low", "lend2", -1, cpu="10")],
        incoming(cpu="9"),
        "lend1",
        CPU_P,
        [],
        id="cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit",
    ),
    pytest.param(
        [
            adm("a1", "a", -2, cpu="1"),
            adm("a2", "a", -2, cpu="1"),
            adm("a3", "a", -1, cpu="1"),
            adm("b1", "b", cpu="1"),
            adm("b2", "b", cpu="1"),
            adm("b3", "b", cpu="1"),
        ],
        incoming(cpu="2"),
        "a",
        CPU_P,
        [_co("a1", "InClusterQueue", "a", "a", "cohort-three"), _co("a2", "InClusterQueue", "a", "a", "cohort-three")],
        id="preemptions from cq when target queue is exhausted for the single requested resource",
    ),
    pytest.param(
        [
            adm("a1", "a", -2, cpu="1", memory="1"),
            adm("a2", "a", -2, cpu="1", memory="1"),
            adm("a3", "a", -1, cpu="1", memory="1"),
            adm("b1", "b", cpu="1", memory="1"),
            adm("b2", "b", cpu="1", memory="1"),
            adm("b3", "b", cpu="1", memory="1"),
        ],
        incoming(cpu="2", memory="2"),
        "a",
        CPU_MEM_P,
        [_co("a1", "InClusterQueue", "a", "a", "cohort-three"), _co("a2", "InClusterQueue", "a", "a", "cohort-three")],
        id="preemptions from cq when target queue is exhausted for two requested resources",
    ),
    pytest.param(
        [
            adm("a1", "a", -2, cpu="1"),
            adm("a2", "a", -2, cpu="1"),
            adm("a3", "a", -1, cpu="1"),
            adm("b1", "b", cpu="1"),
            adm("b2", "b", cpu="1"),
            adm("b3", "b", cpu="1"),
        ],
        incoming(cpu="2", memory="2"),
        "a",
        CPU_MEM_P,
        [_co("a1", "InClusterQueue", "a", "a", "cohort-three"), _co("a2", "InClusterQueue", "a", "a", "cohort-three")],
        id="preemptions from cq when target queue is exhausted for one requested resource, but not the other",
    ),
    pytest.param(
        [
            adm("a1", "a", -1, cpu="1"),
            adm("b1", "b", cpu="1"),
            adm("b2", "b", cpu="1"),
            adm("b3", "b", cpu="1"),
            adm("b4", "b", cpu="1"),
            adm("b5", "b", -1, cpu="1"),
        ],
        incoming(cpu="2"),
        "a",
        CPU_P,
        [
            _co("a1", "InClusterQueue", "a", "a", "cohort-three"),
            _co("b5", "InCohortReclamation", "a", "b", "cohort-three"),
        ],
        id="allow preemption from other cluster queues if target cq is not exhausted for the requested resource",
    ),
    pytest.param(
        [
            make_cq("cq-left").cohort("cohort-left").group(fq("default", cpu="10")).preemption(reclaim=ANY).obj(),
            make_cq("cq-right").cohort("cohort-right").group(fq("default", cpu="0")).obj(),
            make_cohort("cohort-left").parent("root").obj(),
            make_cohort("cohort-right").parent("root").obj(),
            adm("to-be-preempted", "cq-right", cpu="5"),
        ],
        incoming(cpu="8"),
        "cq-left",
        CPU_P,
        [V("to-be-preempted", "InCohortReclamation", "/root/cohort-left/cq-left", "/root/cohort-right/cq-right")],
        id="long range preemption",
    ),
]


def _check(run: Run, want: list[V]) -> None:
    assert run.keys() == {(v.name, v.reason) for v in want}
    assert run.victims() == {v.name: v.conditions() for v in want}


@pytest.mark.parametrize(("objs", "wl", "cq", "spec", "want"), PREEMPTION_CASES)
def test_preemption(
    objs: list[dict[str, Any]], wl: dict[str, Any], cq: str, spec: AssignmentSpec, want: list[V]
) -> None:
    queues = [o for o in objs if o["kind"] in ("ClusterQueue", "Cohort")] or DEFAULT_CQS
    _check(get_targets([*queues, *(o for o in objs if o["kind"] == "Workload")], wl, cq, spec), want)


# == TestHierarchicalPreemptions (preemption_hierarchical_test.go) ================================


def _hq(
    name: str,
    cohort: str | None,
    cpu: str | tuple[str, str | None, str | None] | None = None,
    bwc: bool = False,
    reclaim: str = ANY,
) -> dict[str, Any]:
    """A ClusterQueue of these scenarios: LowerPriority within, `reclaim` in the cohort; with no
    `cpu` the resource group lists the flavor without any quota, as upstream's."""
    b = make_cq(name)
    if cohort:
        b.cohort(cohort)
    b.group(fq("default", cpu=cpu) if cpu is not None else fq("default"))
    return b.preemption(LP, reclaim, LP if bwc else NEVER, 0 if bwc else None).obj()


def _hco(name: str, parent: str | None = None, cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
    b = make_cohort(name)
    if parent:
        b.parent(parent)
    quotas = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if quotas:
        b.group(fq("default", **quotas))
    return b.obj()


def _rc(cpu: str = "2") -> list[dict[str, Any]]:
    """Cohorts r and c (child of r, `cpu` of quota)."""
    return [_hco("r"), _hco("c", "r", cpu)]


def _cq_no_quota(name: str, cohort: str) -> dict[str, Any]:
    return make_cq(name).cohort(cohort).preemption(LP, ANY).obj()


HIER_CASES = [
    pytest.param(
        [*_rc(), _hq("q", "c"), _hq("q_borrowing", "r"), adm("admitted2", "q_borrowing", cpu="2")],
        incoming(cpu="2"),
        "q",
        CPU_P,
        [V("admitted2", "InCohortReclamation", "/r/c/q", "/r/q_borrowing")],
        [],
        id="preempt with hierarchical advantage",
    ),
    pytest.param(
        [
            *_rc(),
            _hq("q_nominal", "r", "2"),
            _hq("q", "c"),
            _hq("q_borrowing", "r"),
            adm("admitted1", "q_nominal", -10, cpu="2"),
            adm("admitted2", "q_borrowing", cpu="2"),
        ],
        incoming(cpu="2"),
        "q",
        CPU_P,
        [V("admitted2", "InCohortReclamation", "/r/c/q", "/r/q_borrowing")],
        [],
        id="avoid queues within nominal quota",
    ),
    pytest.param(
        [
            *_rc(),
            _hq("q", "c"),
            _hq("q_borrowing", "r"),
            adm("admitted1", "q_borrowing", 1, cpu="1"),
            adm("admitted2", "q_borrowing", 2, cpu="1"),
        ],
        incoming(cpu="2"),
        "q",
        CPU_P,
        [
            V("admitted1", "InCohortReclamation", "/r/c/q", "/r/q_borrowing"),
            V("admitted2", "InCohortReclamation", "/r/c/q", "/r/q_borrowing"),
        ],
        [],
        id="preempt multiple with hierarchical advantage",
    ),
    pytest.param(
        [
            *_rc("3"),
            _hq("q", "c", bwc=True),
            _hq("q_same_cohort", "c"),
            adm("admitted_not_preemptible", "q_same_cohort", 1, cpu="1"),
            make_wl("admitted_preemptible").request(cpu="1").reserve("q_same_cohort", psa(cpu=("default", "2"))).obj(),
            adm("admitted_own_queue", "q", -1, cpu="1"),
        ],
        incoming(1, cpu="2"),
        "q",
        CPU_P,
        [
            V("admitted_own_queue", "InClusterQueue", "/r/c/q", "/r/c/q"),
            V("admitted_preemptible", "InCohortReclaimWhileBorrowing", "/r/c/q", "/r/c/q_same_cohort"),
        ],
        [],
        id="preempt in cohort and own CQ",
    ),
    pytest.param(
        [
            *_rc(),
            _hq("q", "c"),
            _hq("q_borrowing", "r"),
            adm("admitted_borrowing", "q_borrowing", 1, cpu="1"),
            adm("admitted_same_queue", "q", -2, cpu="1"),
        ],
        incoming(cpu="1"),
        "q",
        CPU_P,
        [V("admitted_borrowing", "InCohortReclamation", "/r/c/q", "/r/q_borrowing")],
        [],
        id="prefer to preempt hierarchical candidate",
    ),
    pytest.param(
        [
            *_rc(),
            _hq("q", "c", bwc=True),
            _hq("q_nominal", "r", "2"),
            _hq("q_same_cohort", "c"),
            adm("admitted_nominal", "q_nominal", -10, cpu="2"),
            adm("admitted_same_cohort", "q_same_cohort", -1, cpu="2"),
        ],
        incoming(cpu="2"),
        "q",
        CPU_P,
        [V("admitted_same_cohort", "InCohortReclaimWhileBorrowing", "/r/c/q", "/r/c/q_same_cohort")],
        [],
        id="forced to preempt priority candidate",
    ),
    pytest.param(
        [
            *_rc(),
            _hq("q", "c", "4"),
            _hq("q_borrowing", "r"),
            _hq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", 10, cpu="3"),
            adm("admitted_same_cohort", "q_same_cohort", 10, cpu="3"),
        ],
        incoming(cpu="4"),
        "q",
        CPU_P,
        [
            V("admitted_borrowing", "InCohortReclamation", "/r/c/q", "/r/q_borrowing"),
            V("admitted_same_cohort", "InCohortReclamation", "/r/c/q", "/r/c/q_same_cohort"),
        ],
        [],
        id="incoming workload fits in CQ nominal quota",
    ),
    pytest.param(
        [
            _hco("r", cpu="1"),
            _hco("c", "r", "4"),
            _hq("q", "c", bwc=True, reclaim=LP),
            _hq("q_borrowing", "r"),
            _hq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", -1, cpu="2"),
            adm("admitted_same_cohort_preemptible", "q_same_cohort", -1, cpu="1"),
            adm("admitted_borrowing_not_preemptible", "q_borrowing", 1, cpu="2"),
        ],
        incoming(cpu="3"),
        "q",
        CPU_P,
        [
            V("admitted_borrowing", "InCohortReclamation", "/r/c/q", "/r/q_borrowing"),
            V("admitted_same_cohort_preemptible", "InCohortReclaimWhileBorrowing", "/r/c/q", "/r/c/q_same_cohort"),
        ],
        [],
        id="preempt hierarchical and priority candidates",
    ),
    pytest.param(
        [
            _hco("r", cpu="1"),
            _hco("c", "r", "4"),
            _hq("q", "c", bwc=True, reclaim=LP),
            _hq("q_borrowing", "r"),
            _hq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", -1, cpu="2"),
            adm("admitted_same_queue_preemptible", "q", -1, cpu="1"),
            adm("admitted_borrowing_not_preemptible", "q_borrowing", 1, cpu="2"),
        ],
        incoming(cpu="3"),
        "q",
        CPU_P,
        [
            V("admitted_borrowing", "InCohortReclamation", "/r/c/q", "/r/q_borrowing"),
            V("admitted_same_queue_preemptible", "InClusterQueue", "/r/c/q", "/r/c/q"),
        ],
        [],
        id="preempt hierarchical candidates and inside CQ",
    ),
    pytest.param(
        [
            *_rc("3"),
            _hq("q", "c"),
            _hq("q_borrowing", "r"),
            _hq("q_nominal", "r", "2"),
            adm("admitted_borrowing_prio_8", "q_borrowing", 8, cpu="1"),
            adm("admitted_borrowing_prio_9", "q_borrowing", 9, cpu="1"),
            adm("admitted_borrowing_prio_10", "q_borrowing", 9, cpu="1"),
            adm("admitted_nominal", "q_nominal", -2, cpu="2"),
        ],
        incoming(cpu="1"),
        "q",
        CPU_P,
        [V("admitted_borrowing_prio_8", "InCohortReclamation", "/r/c/q", "/r/q_borrowing")],
        [],
        id="reclaim nominal quota from lowest priority workload, excluding non-borrowing",
    ),
    pytest.param(
        [
            *_rc(),
            _hco("c_other", "r", "2"),
            _hq("q_other", "c_other"),
            _hq("q", "c"),
            _hq("q_same_cohort", "c"),
            adm("admitted_other_1", "q_other", -10, cpu="1"),
            adm("admitted_other_2", "q_other", -10, cpu="1"),
            adm("admitted_same_cohort", "q_same_cohort", cpu="2"),
        ],
        incoming(cpu="2"),
        "q",
        CPU_P,
        [],
        [],
        id="infeasible preemption all available workloads in pruned subtrees",
    ),
    pytest.param(
        [
            _hco("r", cpu="3"),
            _hco("c", "r", "4", "4Gi"),
            _hq("q", "c"),
            _hq("q_borrowing", "r"),
            _hq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", cpu="3", memory="1Gi"),
            adm("admitted_same_cohort", "q_same_cohort", -2, cpu="1", memory="3Gi"),
        ],
        incoming(-2, cpu="2", memory="1Gi"),
        "q",
        CPU_MEM_P,
        [V("admitted_borrowing", "InCohortReclamation", "/r/c/q", "/r/q_borrowing")],
        [],
        id="hiearchical preemption with multiple resources",
    ),
    pytest.param(
        [
            *_rc(),
            _hq("q", "c", bwc=True),
            _hq("q_borrowing", "r"),
            _hq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", -10, cpu="1"),
            make_wl("evicted_same_cohort")
            .priority(-1)
            .request(cpu="1")
            .reserve("q_same_cohort", psa(cpu=("default", "1")))
            .evicted()
            .obj(),
        ],
        incoming(cpu="1"),
        "q",
        CPU_P,
        [],
        ["evicted_same_cohort"],
        id="prefer to preempt evicted workloads",
    ),
    pytest.param(
        [
            *_rc(),
            _hq("q", "c", ("3", None, "2")),
            _hq("q_borrowing", "r"),
            adm("admitted_borrowing", "q_borrowing", cpu="4"),
        ],
        incoming(-2, cpu="5"),
        "q",
        CPU_P,
        [V("admitted_borrowing", "InCohortReclamation", "/r/c/q", "/r/q_borrowing")],
        [],
        id="respect lending limits",
    ),
    pytest.param(
        [
            _hco("r"),
            _hco("c11", "r", "4"),
            _hco("c12", "r", "4"),
            _hco("c21", "c11", "4"),
            _hco("c22", "c11", "4"),
            _hco("c23", "c11", "4"),
            _hco("c31", "c21", "4"),
            _hco("c32", "c21", "4"),
            _cq_no_quota("q1", "c12"),
            _cq_no_quota("q2", "c23"),
            _cq_no_quota("q3", "c22"),
            _cq_no_quota("q4", "c32"),
            _cq_no_quota("q5", "c31"),
            adm("admitted_borrowing_1", "q1", -6, cpu="4"),
            adm("admitted_borrowing_2", "q1", -5, cpu="4"),
            adm("admitted_borrowing_3", "q2", -9, cpu="4"),
            adm("admitted_borrowing_4", "q2", -10, cpu="4"),
            adm("admitted_borrowing_5", "q3", -4, cpu="4"),
            adm("admitted_borrowing_6", "q3", -3, cpu="3"),
            adm("admitted_borrowing_7", "q4", 4, cpu="2"),
            adm("admitted_borrowing_8", "q4", 2, cpu="3"),
        ],
        incoming(-2, cpu="7"),
        "q5",
        CPU_P,
        [
            V("admitted_borrowing_1", "InCohortReclamation", "/r/c11/c21/c31/q5", "/r/c12/q1"),
            V("admitted_borrowing_4", "InCohortReclamation", "/r/c11/c21/c31/q5", "/r/c11/c23/q2"),
        ],
        [],
        id="reclaim in complex hierarchy",
    ),
]


@pytest.mark.parametrize(("objs", "wl", "cq", "spec", "want", "in_progress"), HIER_CASES)
def test_hierarchical_preemption(
    objs: list[dict[str, Any]], wl: dict[str, Any], cq: str, spec: AssignmentSpec, want: list[V], in_progress: list[str]
) -> None:
    """`in_progress`: targets already Evicted, which upstream counts without patching them again."""
    run = get_targets(objs, wl, cq, spec)
    assert sorted(t.workload.name for t in run.targets if t.workload.is_evicted) == in_progress
    _check(Run(run.wl, cq, run.snap, [t for t in run.targets if not t.workload.is_evicted]), want)


# == TestFairPreemptions (preemption_fair_test.go) ================================================


def _fq_cq(
    name: str,
    cohort: str | None,
    cpu: str = "3",
    weight: str | None = None,
    within: str = NEVER,
    reclaim: str = NEVER,
    flavors: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    b = make_cq(name)
    if cohort:
        b.cohort(cohort)
    b.group(*(flavors or (fq("default", cpu=cpu),)))
    if weight is not None:
        b.weight(weight)
    return b.preemption(within, reclaim).obj()


def _base_cqs() -> list[dict[str, Any]]:
    """Upstream's `baseCQs`: a, b, c (3 cpu each, borrowWithinCohort below -3) and preemptible."""
    return [
        *(
            make_cq(n).cohort("all").group(fq("default", cpu="3")).preemption(LP, ANY, LP, -3).obj()
            for n in ("a", "b", "c")
        ),
        make_cq("preemptible").cohort("all").group(fq("default", cpu="0")).obj(),
    ]


BASE = _base_cqs()


def _units(cq: str, *names: str, prio: int = 0) -> list[dict[str, Any]]:
    return [unit(n, cq, prio) for n in names]


def _cpu(name: str, cq: str, cpu: str, prio: int = 0) -> dict[str, Any]:
    return adm(name, cq, prio, cpu=cpu)


def _in(name: str, cpu: str = "1", prio: int = 0) -> dict[str, Any]:
    return incoming(prio, name=name, cpu=cpu)


RECLAIM, FAIR, IN_CQ = "InCohortReclamation", "InCohortFairSharing", "InClusterQueue"
A3 = _units("a", "a1", "a2", "a3")


def fair_case(
    queues: list[dict[str, Any]],
    admitted: list[dict[str, Any]],
    wl: dict[str, Any],
    cq: str,
    want: set[tuple[str, str]],
    *,
    id: str,
    strategies: tuple[str, ...] = (),
    flavor: str = "default",
) -> Any:
    """A TestFairPreemptions case: cpu of `wl` needs preemption in `flavor`; empty `strategies`
    means the default pair (LessThanOrEqualToFinalShare, then LessThanInitialShare)."""
    return pytest.param(queues, admitted, wl, cq, want, strategies, flavor, id=id)


FAIR_CASES = [
    fair_case(
        BASE,
        [*A3, *_units("b", "b1", "b2", "b3", "b4", "b5"), unit("c1", "c")],
        _in("c_incoming"),
        "c",
        {("b1", RECLAIM)},
        id="reclaim nominal from user using the most",
    ),
    fair_case(
        BASE,
        [_cpu("a1", "a", "3"), _cpu("a2", "a", "1"), _cpu("b1", "b", "2"), _cpu("b2", "b", "3")],
        make_wl("c_incoming").request(cpu="3").reserve("a", psa(cpu=("default", "3"))).obj(),
        "c",
        {("a1", RECLAIM)},
        id="can reclaim from queue using less, if taking the latest workload from user using the most isn't enough",
    ),
    fair_case(
        BASE,
        [*A3, *_units("b", "b1", "b2", "b3", "b4", "b5"), unit("c1", "c")],
        _in("a_incoming"),
        "a",
        {("b1", FAIR)},
        id="reclaim borrowable quota from user using the most",
    ),
    fair_case(
        BASE,
        [
            _cpu("a1", "a", "0.5"),
            _cpu("a2", "a", "0.5"),
            _cpu("a3", "a", "3"),
            _cpu("b1", "b", "0.5"),
            _cpu("b2", "b", "0.5"),
            _cpu("b3", "b", "3"),
        ],
        _in("c_incoming", "2"),
        "c",
        {("a1", RECLAIM), ("b1", RECLAIM)},
        id="preempt one from each CQ borrowing",
    ),
    fair_case(
        BASE,
        [*A3, *_units("b", "b1", "b2", "b3"), *_units("c", "c1", "c2", "c3")],
        _in("c_incoming"),
        "c",
        set(),
        id="can't preempt when everyone under nominal",
    ),
    fair_case(
        BASE,
        [*A3, *_units("b", "b1", "b2", "b3", "b4", "b5")],
        _in("a_incoming", "2"),
        "a",
        set(),
        id="can't preempt when it would switch the imbalance",
    ),
    fair_case(
        BASE,
        [
            *_units("a", "a1_low", "a2_low", prio=-1),
            *_units("a", "a3", "a4"),
            *_units("b", "b1", "b2", "b3", "b4", "b5"),
        ],
        _in("a_incoming", "2"),
        "a",
        {("a1_low", IN_CQ), ("a2_low", IN_CQ)},
        id="can preempt lower priority workloads from same CQ",
    ),
    fair_case(
        BASE,
        [unit("a_low", "a", -1), *_units("a", "a2", "a3"), *_units("b", "b1", "b2", "b3", "b4", "b5", "b6")],
        _in("a_incoming", "2"),
        "a",
        {("a_low", IN_CQ), ("b1", FAIR)},
        id="can preempt a combination of same CQ and highest user",
    ),
    fair_case(
        BASE,
        [_cpu("b1", "b", "9")],
        _in("a_incoming", "2"),
        "a",
        {("b1", RECLAIM)},
        id="preempt huge workload if there is no other option, as long as the target CQ gets a lower share",
    ),
    fair_case(
        BASE,
        [_cpu("a1", "a", "2"), _cpu("b1", "b", "7")],
        _in("a_incoming", "5"),
        "a",
        set(),
        id="can't preempt huge workload if the incoming is also huge",
    ),
    fair_case(
        BASE,
        [_cpu("b1", "b", "2"), _cpu("b2", "b", "2"), _cpu("b3", "b", "3")],
        _in("a_incoming", "6"),
        "a",
        set(),
        id="can't preempt 2 smaller workloads if the incoming is huge",
    ),
    fair_case(
        BASE,
        [_cpu("a1_low", "a", "2", -1), _cpu("a2_low", "a", "1", -1), _cpu("b1", "b", "3"), _cpu("b2", "b", "3")],
        _in("a_incoming", "4"),
        "a",
        {("a1_low", IN_CQ), ("b1", FAIR)},
        id="preempt from target and others even if over nominal",
    ),
    fair_case(
        BASE,
        [_cpu("b1", "b", "2"), _cpu("b2", "b", "1"), _cpu("b3", "b", "2"), _cpu("c1", "c", "1")],
        _in("a_incoming", "3.5"),
        "a",
        {("b2", FAIR)},
        id="prefer to preempt workloads that don't make the target CQ have the biggest share",
    ),
    fair_case(
        BASE,
        [_cpu("b1", "b", "2"), _cpu("b2", "b", "2.5"), _cpu("c1", "c", "2"), _cpu("c2", "c", "2.5")],
        _in("a_incoming", "3.5"),
        "a",
        {("b1", FAIR), ("c1", FAIR)},
        id="preempt from different cluster queues if the end result has a smaller max share",
    ),
    fair_case(
        BASE,
        [_cpu("a1", "a", "3.5"), _cpu("b2", "b", "2.5"), _cpu("c2", "c", "2.5")],
        _in("b_incoming", "2"),
        "b",
        set(),
        id="scenario above does not flap",
    ),
    fair_case(
        BASE,
        [_cpu("b1", "b", "3"), _cpu("b2", "b", "3"), _cpu("c1", "c", "3")],
        _in("a_incoming", "4"),
        "a",
        set(),
        id="cannot preempt if it would make the candidate CQ go under nominal after preempting one element",
    ),
    fair_case(
        BASE,
        [
            *A3,
            *_units("b", "b1", "b2", "b3"),
            *_units("preemptible", "preemptible1", "preemptible2", "preemptible3", prio=-3),
        ],
        _in("a_incoming", "2"),
        "a",
        set(),
        id="workloads under priority threshold not capriciously preempted",
    ),
    fair_case(
        BASE,
        [_cpu("a1", "a", "3"), _cpu("b_low", "b", "5", 0), _cpu("b_high", "b", "1", 1)],
        _in("a_incoming"),
        "a",
        {("b_low", FAIR)},
        strategies=("LessThanInitialShare",),
        id="preempt lower priority first, even if big",
    ),
    fair_case(
        BASE,
        [_cpu("a1", "a", "3"), _cpu("b_low", "b", "5", 0), _cpu("b_high", "b", "1", 1)],
        _in("a_incoming"),
        "a",
        {("b_high", FAIR)},
        strategies=("LessThanOrEqualToFinalShare",),
        id="preempt workload that doesn't transfer the imbalance, even if high priority",
    ),
    fair_case(
        [
            _fq_cq("a", "all", weight="2", within=LP, reclaim=ANY),
            _fq_cq("b", "all", within=LP, reclaim=ANY),
            _fq_cq("c", "all", within=LP, reclaim=ANY),
        ],
        [*A3, *_units("b", "b1", "b2", "b3", "b4", "b5", "b6")],
        _in("a_incoming", "2"),
        "a",
        {("b1", FAIR), ("b2", FAIR)},
        id="CQ with higher weight can preempt more",
    ),
    fair_case(
        [
            _fq_cq("a", "all", within=LP, reclaim=ANY),
            _fq_cq("b", "all", weight="0", within=LP, reclaim=ANY),
            _fq_cq("c", "all", within=LP, reclaim=ANY),
        ],
        [*A3, *_units("b", "b1", "b2", "b3", "b4", "b5", "b6")],
        _in("a_incoming", "3"),
        "a",
        {("b1", FAIR), ("b2", FAIR), ("b3", FAIR)},
        id="can preempt anything borrowing from CQ with 0 weight",
    ),
    fair_case(
        [_fq_cq("a", "all", within=LP, reclaim=ANY), _fq_cq("b", "all", weight="0", within=LP, reclaim=ANY)],
        [*A3, *_units("b", "b1", "b2", "b3")],
        _in("a_incoming"),
        "a",
        set(),
        id="can't preempt nominal from CQ with 0 weight",
    ),
    fair_case(
        [
            _fq_cq("left-cq", "root", "0", reclaim=ANY),
            _fq_cq("right-cq", "right-cohort", "0", weight="0", reclaim=ANY),
            make_cohort("right-cohort").weight("0").group(fq("default", cpu="1")).parent("root").obj(),
        ],
        [unit("right-1", "right-cq")],
        _in("left-1"),
        "left-cq",
        set(),
        id="can't preempt nominal from Cohort with 0 weight",
    ),
    fair_case(
        [_fq_cq("a", None, "1", within=LP)],
        [unit("a1", "a")],
        _in("a_incoming", prio=1000),
        "a",
        {("a1", IN_CQ)},
        id="can preempt within cluster queue when no cohort",
    ),
    fair_case(
        [
            _fq_cq("a", "LEFT", "1", weight="2", reclaim=ANY),
            _fq_cq("b", "LEFT", "1"),
            _fq_cq("c", "ROOT", "1"),
            _fq_cq("d", "RIGHT", "1"),
            _fq_cq("e", "RIGHT", "1", weight="0.99"),
            make_cohort("ROOT").group(fq("default", cpu="5")).obj(),
            make_cohort("LEFT").weight("2").parent("ROOT").group(fq("default", cpu="5")).obj(),
            make_cohort("RIGHT").parent("ROOT").group(fq("default", cpu="5")).obj(),
        ],
        [unit(f"{q}{i}", q, i) for q in "bcde" for i in range(1, 6)],
        _in("unit", "5"),
        "a",
        {("b1", FAIR), ("b2", FAIR), ("c1", FAIR), ("c2", FAIR), ("e1", FAIR)},
        id="hierarchical preemption",
    ),
    fair_case(
        [
            _fq_cq("a", "ROOT", "5", weight="10", within=LP, reclaim=ANY),
            make_cq("b").cohort("RIGHT").weight("0.1").obj(),
            make_cohort("ROOT").obj(),
            make_cohort("RIGHT").parent("ROOT").weight("0.1").group(fq("default", cpu="1")).obj(),
        ],
        [*_units("a", "a1", "a2", "a3", prio=-1), unit("b1", "b", -1)],
        _in("unit", "5"),
        "a",
        {("a1", IN_CQ), ("a2", IN_CQ), ("a3", IN_CQ)},
        id="borrowing cq in non-borrowing cohort is protected",
    ),
    fair_case(
        [
            _fq_cq("a", "ROOT", "5", weight="10", within=LP, reclaim=LP),
            make_cq("b").cohort("RIGHT").weight("0.1").obj(),
            make_cohort("ROOT").obj(),
            make_cohort("RIGHT").parent("ROOT").weight("0.1").group(fq("default", cpu="3")).obj(),
        ],
        [*_units("a", "a1", "a2", "a3", prio=-1), _cpu("b1", "b", "4", 100)],
        _in("unit", "4"),
        "a",
        {("a1", IN_CQ), ("a2", IN_CQ), ("a3", IN_CQ)},
        id="forced to preempt within clusterqueue because borrowing workload too important",
    ),
    fair_case(
        [
            _fq_cq("a", "AAA", "0", reclaim=ANY),
            _fq_cq("b", "BBB", "0"),
            make_cohort("ROOT").obj(),
            make_cohort("A").parent("ROOT").weight("1.01").obj(),
            make_cohort("AA").parent("A").obj(),
            make_cohort("AAA").parent("AA").obj(),
            make_cohort("B").parent("ROOT").weight("0.99").obj(),
            make_cohort("BB").parent("B").obj(),
            make_cohort("BBB").parent("BB").obj(),
            make_cohort("C").parent("ROOT").obj(),
            make_cohort("CC").parent("C").obj(),
            make_cohort("CCC").parent("CC").obj(),
            make_cohort("CCCC").parent("CCC").group(fq("default", cpu="1")).obj(),
        ],
        [unit("b1", "b")],
        _in("a1"),
        "a",
        {("b1", FAIR)},
        id="deep preemption",
    ),
    fair_case(
        [_fq_cq("a", "ROOT", "1", weight="0.0", reclaim=ANY), _fq_cq("b", "ROOT", "0", weight="1.0")],
        [unit("b1", "b")],
        _in("a1"),
        "a",
        {("b1", RECLAIM)},
        id="cq with zero weight can reclaim nominal quota",
    ),
    fair_case(
        [
            _fq_cq("a", "A", "0", weight="0.0", reclaim=ANY),
            _fq_cq("b", "ROOT", "0", weight="1.0"),
            make_cohort("A").parent("ROOT").weight("0.0").group(fq("default", cpu="1")).obj(),
        ],
        [unit("b1", "b")],
        _in("a1"),
        "a",
        {("b1", FAIR)},
        id="cohort with zero weight can reclaim nominal quota",
    ),
    fair_case(
        [
            make_cq("a")
            .cohort("all")
            .group(fq("premium", cpu="3"), fq("cheap", cpu="0"))
            .preemption(reclaim=ANY)
            .fungibility("MayStopSearch", "MayStopSearch")
            .obj(),
            make_cq("b").cohort("all").group(fq("premium", cpu="0"), fq("cheap", cpu="6")).obj(),
        ],
        [
            unit("a_prem1", "a", flavor="premium"),
            unit("a_prem2", "a", flavor="premium"),
            *(unit(f"a_cheap{i}", "a", flavor="cheap") for i in range(1, 6)),
            unit("b_prem1", "b", flavor="premium"),
        ],
        _in("a_incoming"),
        "a",
        {("b_prem1", RECLAIM)},
        flavor="premium",
        id="nominal first: workload fitting within nominal can preempt despite high aggregate DRS",
    ),
    fair_case(
        [_fq_cq("a", "all", "1", weight="0", reclaim=ANY), _fq_cq("b", "all", "1", weight="1")],
        [unit("a1", "a"), *_units("b", "b1", "b2")],
        _in("a_incoming"),
        "a",
        set(),
        id="zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight",
    ),
    fair_case(
        [
            make_cohort("all").group(fq("default", cpu="3")).obj(),
            _fq_cq("a", "all", "1", weight="0", reclaim=ANY),
            _fq_cq("b", "all", "0", weight="0"),
        ],
        _units("b", "b1", "b2", "b3"),
        _in("a_incoming", "2"),
        "a",
        {("b1", FAIR)},
        id="zero weight borrowing preemptor can preempt from a borrowing CQ which also has zero weight",
    ),
    fair_case(
        [
            make_cohort("all").group(fq("default", cpu="3")).obj(),
            _fq_cq("a", "all", "1", weight="1", reclaim=ANY),
            _fq_cq("b", "all", "0", weight="1"),
        ],
        _units("b", "b1", "b2", "b3"),
        _in("a_incoming", "2"),
        "a",
        {("b1", FAIR)},
        id="non-zero weight borrowing preemptor preempts from a borrowing CQ",
    ),
    fair_case(
        [
            make_cohort("A").parent("ROOT").weight("0").group(fq("default", cpu="1")).obj(),
            _fq_cq("p", "A", "2", weight="1", reclaim=ANY),
            _fq_cq("y", "A", "2", weight="1"),
            _fq_cq("x", "ROOT", "1", weight="1"),
        ],
        [_cpu("p1", "p", "2"), _cpu("y1", "y", "2"), _cpu("y2", "y", "2"), unit("x1", "x"), unit("x2", "x")],
        _in("p_incoming"),
        "p",
        {("y1", FAIR), ("x1", FAIR)},
        id="candidates skipped by the first strategy are still available to the second strategy",
    ),
]


@pytest.mark.parametrize(("queues", "admitted", "wl", "cq", "want", "strategies", "flavor"), FAIR_CASES)
def test_fair_preemption(
    queues: list[dict[str, Any]],
    admitted: list[dict[str, Any]],
    wl: dict[str, Any],
    cq: str,
    want: set[tuple[str, str]],
    strategies: tuple[str, ...],
    flavor: str,
) -> None:
    run = get_targets([*queues, *admitted], wl, cq, one(cpu=(flavor, P)), fair=True, strategies=strategies)
    assert run.keys() == want


@pytest.mark.parametrize(
    "weight",
    ["0", "1"],
    ids=[
        "zero weight preemptor: share is +Inf and the tournament is skipped",
        "non-zero weight preemptor: share is finite so the tournament runs",
    ],
)
def test_fair_preemption_unsatisfiable_tournament(weight: str) -> None:
    """TestFairPreemptionSkipsUnsatisfiableTournament: either way nothing can be preempted."""
    queues = [_fq_cq("a", "all", "1", weight=weight, reclaim=ANY), _fq_cq("b", "all", "1", weight="1")]
    run = get_targets([*queues, unit("a1", "a"), *_units("b", "b1", "b2")], _in("a_incoming"), "a", CPU_P, fair=True)
    assert run.targets == []


# == TestIssuePreemptionsSkipsDuplicate (preemption_test.go), through the scheduling cycle ========


def test_issue_preemptions_skips_duplicate() -> None:
    """The first cycle patches the victim with upstream's conditions; while its eviction is not yet
    observed, the next cycle counts it as preempted again without a second patch.

    Upstream hands the preemptor an explicit Preempt assignment; the cycle runs the flavor assigner,
    so two higher-priority workloads fill the queue to make the incoming workload need preemption.
    """
    cq = make_cq("standalone").group(fq("default", cpu="6")).preemption(within=LP).obj()
    low = (
        make_wl("low")
        .uid("low-uid")
        .priority(-1)
        .request(cpu="2")
        .reserve("standalone", psa(cpu=("default", "2000m")))
        .obj()
    )
    assert get_targets([cq, low], incoming(1, cpu="2"), "standalone", CPU_P).keys() == {("low", "InClusterQueue")}

    fillers = [adm(n, "standalone", 1, cpu="2") for n in ("high1", "high2")]
    core = make_core(*FLAVORS, cq, make_lq("lq", "ns", "standalone"), low, *fillers, incoming(1, cpu="2"))
    (first,) = core.schedule(T0).preempted
    assert [(v.key, v.uid, v.reason) for v in first.targets] == [("ns/low", "low-uid", "InClusterQueue")]
    assert [(c.type, c.status, c.reason, c.message) for c in first.targets[0].conditions] == _sa("low").conditions()
    second = core.schedule(T0)
    assert second.preempted == []
    (pending,) = second.pending
    assert pending.reason == "WaitingForPreemptedWorkloads"
    assert pending.message.endswith("Pending the preemption of 1 workload(s)")


# == TestCandidatesOrdering (preemption_test.go) ==================================================


def _reserved(name: str, cq: str, prio: int = 0, at: float = 0) -> WorkloadInfo:
    return parse_workload(make_wl(name).priority(prio).reserve(cq, psa(), at=at).obj())


@pytest.mark.parametrize(
    ("candidates", "want"),
    [
        pytest.param(
            [_reserved("high", "preemptor", 10), _reserved("low", "preemptor", -10)],
            ["low", "high"],
            id="workloads sorted by priority",
        ),
        pytest.param(
            [
                _reserved("other", "preemptor", 10),
                parse_workload(make_wl("evicted").condition("Evicted", "True").obj()),
            ],
            ["evicted", "other"],
            id="evicted workload first",
        ),
        pytest.param(
            [_reserved("preemptorCq", "preemptor", 10), _reserved("other", "other", 10)],
            ["other", "preemptorCq"],
            id="workload from different CQ first",
        ),
        pytest.param(
            [
                _reserved("older", "preemptor", at=-1),
                _reserved("younger", "preemptor", at=1),
                _reserved("current", "preemptor"),
            ],
            ["younger", "current", "older"],
            id="old workloads last",
        ),
    ],
)
def test_candidates_ordering(candidates: list[WorkloadInfo], want: list[str]) -> None:
    assert [w.name for w in sorted(candidates, key=lambda w: ordering.candidate_key(w, "preemptor", T0))] == want


# == TestSatisfiesPreemptionPolicy (common/preemption_policy_test.go) =============================


def _prio_at(name: str, prio: int, created: float = 0) -> WorkloadInfo:
    return parse_workload(make_wl(name).priority(prio).created(created).obj())


@pytest.mark.parametrize(
    ("preemptor", "candidate", "policy", "want"),
    [
        pytest.param(
            _prio_at("preemptor", 10),
            _prio_at("candidate", 5),
            LP,
            True,
            id="LowerPriority: preemptor has higher priority",
        ),
        pytest.param(
            _prio_at("preemptor", 10),
            _prio_at("candidate", 10),
            LP,
            False,
            id="LowerPriority: preemptor has same priority",
        ),
        pytest.param(
            _prio_at("preemptor", 10),
            _prio_at("candidate", 10),
            LONEP,
            False,
            id="LowerOrNewerEqualPriority: preemptor has same priority, same timestamp",
        ),
        pytest.param(
            _prio_at("preemptor", 10, 60),
            _prio_at("candidate", 10),
            LONEP,
            False,
            id="LowerOrNewerEqualPriority: preemptor has same priority, newer timestamp (within 5min buffer)",
        ),
        pytest.param(
            _prio_at("preemptor", 10),
            _prio_at("candidate", 10, 60),
            LONEP,
            True,
            id="LowerOrNewerEqualPriority: preemptor has same priority, older timestamp (within 5min buffer)",
        ),
        pytest.param(_prio_at("preemptor", 10), _prio_at("candidate", 10, 360), ANY, True, id="PreemptionPolicyAny"),
        pytest.param(
            _prio_at("preemptor", 10), _prio_at("candidate", 10, 360), NEVER, False, id="PreemptionPolicyNever"
        ),
    ],
)
def test_satisfies_preemption_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str, want: bool) -> None:
    assert satisfies_policy(preemptor, candidate, policy) is want


# == TestMakeClusterQueueOrdering (fairsharing/ordering_test.go) ==================================


def _three(cpu_high: tuple[str, ...]) -> list[dict[str, Any]]:
    """preemptor (4 cpu), high and low (2 cpu each) in cohort `all`; `high` holds `cpu_high`."""
    return [
        make_cq("preemptor").cohort("all").group(fq("default", cpu="4")).obj(),
        make_cq("high").cohort("all").group(fq("default", cpu="2")).obj(),
        make_cq("low").cohort("all").group(fq("default", cpu="2")).obj(),
        *(adm(f"h{i}", "high", cpu=c) for i, c in enumerate(cpu_high, 1)),
        adm("l1", "low", cpu="3"),
    ]


_SOLO_PREEMPTOR = make_cq("preemptor").group(fq("default", cpu="4")).obj()


@pytest.mark.parametrize(
    ("objs", "preemptor", "candidate_cqs", "actions", "want"),
    [
        pytest.param(
            [_SOLO_PREEMPTOR, adm("wl1", "preemptor", cpu="1")],
            "preemptor",
            ["preemptor"],
            [],
            ["preemptor"],
            id="no cohort: preemptor CQ yielded for in-CQ preemption; repro for nil pointer panic issue",
        ),
        pytest.param(
            [_SOLO_PREEMPTOR, adm("wl1", "preemptor", cpu="1"), adm("wl2", "preemptor", cpu="1")],
            "preemptor",
            ["preemptor"],
            ["drop"],
            ["preemptor"],
            id="no cohort: DropQueue ends the iteration with candidates remaining",
        ),
        pytest.param(
            [
                make_cq("preemptor").cohort("all").group(fq("default", cpu="4")).obj(),
                make_cq("target").cohort("all").group(fq("default", cpu="5")).obj(),
                adm("t1", "target", cpu="2"),
            ],
            "preemptor",
            ["target"],
            [],
            [],
            id="non-borrowing CQ is pruned even with candidates",
        ),
        pytest.param(
            _three(("5",)),
            "preemptor",
            ["high", "low"],
            [],
            ["high", "low"],
            id="higher DRS CQ returned before lower DRS CQ",
        ),
        pytest.param(
            _three(("3", "2")),
            "preemptor",
            ["high", "low"],
            [],
            ["high", "high", "low"],
            id="CQ with highest DRS returned again while it still has candidates",
        ),
        pytest.param(
            _three(("3", "2")),
            "preemptor",
            ["high", "low"],
            ["drop", "pop"],
            ["high", "low"],
            id="drop queue prevents CQ from being returned again",
        ),
        pytest.param(
            [
                make_cq("preemptor-cq").cohort("root").group(fq("default", cpu="4")).obj(),
                make_cq("left-cq").cohort("left-cohort").group(fq("default", cpu="2")).obj(),
                make_cq("right-cq").cohort("right-cohort").group(fq("default", cpu="2")).obj(),
                make_cohort("root").obj(),
                make_cohort("left-cohort").parent("root").obj(),
                make_cohort("right-cohort").parent("root").obj(),
                adm("lc1", "left-cq", cpu="5"),
                adm("rc1", "right-cq", cpu="3"),
            ],
            "preemptor-cq",
            ["left-cq", "right-cq"],
            [],
            ["left-cq", "right-cq"],
            id="hierarchical cohorts: higher-DRS subtree visited first",
        ),
    ],
)
def test_cluster_queue_ordering(
    objs: list[dict[str, Any]], preemptor: str, candidate_cqs: list[str], actions: list[str], want: list[str]
) -> None:
    """The order in which fair-sharing preemption visits target ClusterQueues; each visit either
    takes the queue's next candidate ("pop", the default) or drops the queue ("drop")."""
    snap = take_snapshot(make_core(*FLAVORS, *objs).cache)
    candidates = [w for cq in candidate_cqs for w in snap.cluster_queues[cq].workloads.values()]
    key = lambda w: ordering.candidate_key(w, preemptor, T0)  # noqa: E731
    order = fair_sharing.TargetOrdering.build(snap.cluster_queues[preemptor], sorted(candidates, key=key), key)
    got: list[str] = []
    for target in order:
        got.append(target.name)
        if len(got) <= len(actions) and actions[len(got) - 1] == "drop":
            order.drop(target)
        else:
            order.pop(target)
        assert len(got) <= 50, "the ordering does not end"
    assert got == want


# == TestPreemptionMessage (preemption_test.go) ===================================================


def test_preemption_message() -> None:
    """Upstream's case with a reason; its three reason-less cases ("due to UNKNOWN") have no
    counterpart here, since every target carries a reason."""
    msg = conditions.preemption_message("uid", "juid", PreemptionReason.IN_CLUSTER_QUEUE, "/a", "/b")
    assert (
        msg
        == "Preempted to accommodate a workload (UID: uid, JobUID: juid) due to prioritization in the ClusterQueue; preemptor path: /a; preemptee path: /b"
    )
