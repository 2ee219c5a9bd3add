"""The harness of upstream's scheduler scenarios (`pkg/scheduler/scheduler_test.go` and the tests
beside it, commit ff69552e79): upstream's flavors, ClusterQueues, LocalQueues and namespaces, its
workload shorthands, one `Case` per row, `run_case` (one `AdmissionCore.schedule` call) and `check`
(upstream's assertions on the cache, the pending reasons, the victims and the heaps afterwards).

Shared by `test_scheduler_upstream`, `test_scheduler_recompute_upstream` and
`test_scheduler_concurrent_admission_upstream`; the flavor-stickiness scenario at the end also feeds
the metrics test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.builders import T0, fq, make_cohort, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.api import constants, quantity
from webhook.core import AdmissionCore
from webhook.core.cycle import CycleResult
from webhook.core.decisions import Admit, Migrate, Pending, Preempt

# Summary of one podSetAssignment: (podSet, {resource: flavor}, {resource: quantity}, count).
PSA = tuple[str, dict[str, str], dict[str, str], int]


def sel(dep: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": "dep", "operator": "In", "values": [dep]}]}


FLAVORS: list[dict[str, Any]] = [
    *(make_flavor(f).obj() for f in ("default", "on-demand", "spot", "model-a")),
    make_flavor("spot-tainted").taint("key", "val").obj(),
    make_flavor("spot-tainted-2").taint("key", "val2").obj(),
]
CLUSTER_QUEUES: list[dict[str, Any]] = [
    make_cq("sales").selector(sel("sales")).strategy("StrictFIFO").group(fq("default", cpu=("50", "0", None))).obj(),
    make_cq("eng-alpha")
    .cohort("eng")
    .selector(sel("eng"))
    .strategy("StrictFIFO")
    .group(fq("on-demand", cpu=("50", "50", None)), fq("spot", cpu=("100", "0", None)))
    .obj(),
    make_cq("eng-beta")
    .cohort("eng")
    .selector(sel("eng"))
    .strategy("StrictFIFO")
    .preemption(within="LowerPriority", reclaim="Any")
    .group(fq("on-demand", cpu=("50", "10", None)), fq("spot", cpu=("0", "100", None)))
    .group(fq("model-a", **{"example.com/gpu": ("20", "0", None)}))
    .obj(),
    make_cq("flavor-nonexistent-cq").strategy("StrictFIFO").group(fq("nonexistent-flavor", cpu="50")).obj(),
    make_cq("lend-a").cohort("lend").selector(sel("lend")).group(fq("default", cpu=("3", None, "2"))).obj(),
    make_cq("lend-b").cohort("lend").selector(sel("lend")).group(fq("default", cpu=("2", None, "2"))).obj(),
]
LOCAL_QUEUES: list[dict[str, Any]] = [
    make_lq("main", "sales", "sales"),
    make_lq("blocked", "sales", "eng-alpha"),
    make_lq("main", "eng-alpha", "eng-alpha"),
    make_lq("main", "eng-beta", "eng-beta"),
    make_lq("flavor-nonexistent-queue", "sales", "flavor-nonexistent-cq"),
    make_lq("cq-nonexistent-queue", "sales", "nonexistent-cq"),
    make_lq("lend-a-queue", "lend", "lend-a"),
    make_lq("lend-b-queue", "lend", "lend-b"),
]
NAMESPACES = {
    "default": {},
    "eng-alpha": {"dep": "eng"},
    "eng-beta": {"dep": "eng"},
    "eng-gamma": {"dep": "eng"},
    "sales": {"dep": "sales"},
    "lend": {"dep": "lend"},
}


# -- workload shorthands ------------------------------------------------------------------------
def wl(
    name: str,
    ns: str,
    queue: str | None = "main",
    prio: int | None = None,
    uid: str | None = None,
    job_uid: str | None = None,
) -> Any:
    """A Workload builder with upstream's defaults (no UID unless given)."""
    b = make_wl(name, ns).uid(uid or "")
    if queue is not None:
        b.queue(queue)
    else:
        b._o["spec"].pop("queueName")
    if prio is not None:
        b.priority(prio)
    if job_uid is not None:
        b.label(constants.JOB_UID_LABEL, job_uid)
    return b


def pending(
    name: str,
    ns: str,
    queue: str = "main",
    prio: int | None = None,
    uid: str | None = None,
    job_uid: str | None = None,
    **req: str,
) -> dict[str, Any]:
    """A pending single-pod workload requesting `req`."""
    return wl(name, ns, queue, prio, uid, job_uid).request(**req).obj()


def reserved(
    name: str,
    ns: str,
    cq: str,
    flavor: str,
    cpu: str,
    prio: int | None = None,
    queue: str | None = None,
    admitted: bool = False,
) -> dict[str, Any]:
    """A single-pod workload holding `cpu` of `flavor` in `cq` (upstream `ReserveQuotaAt`)."""
    return wl(name, ns, queue, prio).request(cpu=cpu).reserve(cq, psa(cpu=(flavor, cpu)), admitted=admitted).obj()


def one(flavor: str, cpu: str, count: int = 1, ps: str = "main") -> tuple[PSA]:
    return ((ps, {"cpu": flavor}, {"cpu": cpu}, count),)


def waiting(msg: str) -> tuple[str, str]:
    return ("WaitingForQuota", "couldn't assign flavors to pod set main: " + msg)


# -- the harness --------------------------------------------------------------------------------
@dataclass
class Case:
    workloads: list[dict[str, Any]]
    objs: list[dict[str, Any]] = field(default_factory=list)
    # Every reservation in the cache after the cycle: key -> (ClusterQueue, podSetAssignments).
    assignments: dict[str, tuple[str, tuple[PSA, ...]]] = field(default_factory=dict)
    # Pending decisions: key -> (QuotaReserved=False reason, message).
    pending: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Preemption victims: key -> (Preempted reason, message or None to skip the message).
    preempted: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    left: dict[str, list[str]] = field(default_factory=dict)
    inadmissible: dict[str, list[str]] = field(default_factory=dict)
    # Admitted condition of the workloads admitted this cycle, when not Admitted=True.
    admitted_condition: dict[str, tuple[str, str]] = field(default_factory=dict)
    admission_error: bool = False
    fair_sharing: bool = False
    # wantSkippedPreemptions where upstream sets it (ClusterQueues with 0 left out).
    skipped_preemptions: dict[str, int] | None = None
    namespaces: Mapping[str, dict[str, str]] = field(default_factory=lambda: NAMESPACES)
    # Feature gate RecomputeAssignmentUponPreemptionTargetsOverlap (off by default in v0.19.2).
    recompute_on_overlap: bool = False
    # Feature gate ConcurrentAdmission (off by default).
    concurrent_admission: bool = False
    # Variants evicted for a flavor migration: key -> (Evicted reason, message).
    migrated: dict[str, tuple[str, str]] = field(default_factory=dict)


def _norm(p: Mapping[str, Any]) -> PSA:
    usage = {r: str(quantity.amount(r, v)) for r, v in p["resourceUsage"].items()}
    return (p["name"], dict(p["flavors"]), usage, p["count"])


def norm_want(ps: tuple[PSA, ...]) -> list[PSA]:
    return [(n, f, {r: str(quantity.amount(r, v)) for r, v in u.items()}, c) for n, f, u, c in ps]


def cache_assignments(core: AdmissionCore) -> dict[str, tuple[str, list[PSA]]]:
    """Every reservation the cache holds, as upstream reads them from its snapshot."""
    out = {}
    for name in core.cache.cluster_queues:
        for w in core.cache.workloads_in(name):
            out[str(w.key)] = (w.admission_cluster_queue, [_norm(a.to_api()) for a in w.assignments])
    return out


def run_case(c: Case) -> tuple[AdmissionCore, CycleResult]:
    core = make_core(
        *FLAVORS,
        *CLUSTER_QUEUES,
        *LOCAL_QUEUES,
        *c.objs,
        *c.workloads,
        namespaces=dict(c.namespaces),
        fair_sharing=c.fair_sharing,
        recompute_on_overlap=c.recompute_on_overlap,
        concurrent_admission=c.concurrent_admission,
    )
    result = core.schedule(T0)
    if c.admission_error:
        for d in result.admitted:
            core.admission_failed(d.key, T0)
    return core, result


def check(core: AdmissionCore, result: CycleResult, c: Case) -> None:
    want_assign = {k: (cq, norm_want(ps)) for k, (cq, ps) in c.assignments.items()}
    assert cache_assignments(core) == want_assign
    if not c.admission_error:
        got_cond = {}
        for d in result.decisions:
            if isinstance(d, Admit):
                conds = {x.type: x for x in d.conditions}
                qr = conds["QuotaReserved"]
                assert (qr.status, qr.reason, qr.message) == (
                    "True",
                    "QuotaReserved",
                    f"Quota reserved in ClusterQueue {d.cluster_queue}",
                )
                adm = conds.get("Admitted")
                got_cond[str(d.key)] = ("True" if adm is None else adm.status, "" if adm is None else adm.reason)
        want_cond = {k: c.admitted_condition.get(k, ("True", "Admitted")) for k in got_cond}
        assert got_cond == want_cond
    got_pending = {str(d.key): (d.reason, d.message) for d in result.decisions if isinstance(d, Pending)}
    assert got_pending == c.pending
    got_victims: dict[str, tuple[str, str | None]] = {}
    for d in result.decisions:
        if isinstance(d, Preempt):
            for v in d.targets:
                ev, pr = v.conditions
                assert (ev.type, ev.status, ev.reason, ev.message) == ("Evicted", "True", "Preempted", pr.message)
                got_victims[str(v.key)] = (pr.reason, pr.message)
    assert {
        k: (r, got_victims[k][1] if m is None and k in got_victims else m) for k, (r, m) in c.preempted.items()
    } == got_victims
    got_migrated = {}
    for d in result.decisions:
        if isinstance(d, Migrate):
            (ev,) = d.conditions
            assert (ev.type, ev.status, ev.reason, ev.message) == ("Evicted", "True", d.reason, d.message)
            got_migrated[str(d.key)] = (d.reason, d.message)
    assert got_migrated == c.migrated
    assert core.queues.dump() == c.left
    assert core.queues.dump_inadmissible() == c.inadmissible


def preempt_msg(uid: str, job_uid: str, why: str, preemptor: str, preemptee: str) -> str:
    return f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {why}; preemptor path: {preemptor}; preemptee path: {preemptee}"


IN_CQ = "prioritization in the ClusterQueue"
RECLAIM = "reclamation within the cohort"


# -- upstream's flavor-stickiness scenario (`scheduler_recompute_preemption_test.go`) ---------------
def preempting_cq(name: str, cohort: str, *flavors: dict[str, Any]) -> dict[str, Any]:
    """A ClusterQueue in `cohort` preempting lower priorities within it and reclaiming any."""
    return make_cq(name).cohort(cohort).preemption(within="LowerPriority", reclaim="Any").group(*flavors).obj()


# cq-1 and cq-2 under cohort root, each with 5 CPU of flavor default and 5 of on-demand.
TWO_FLAVORS: list[dict[str, Any]] = [
    make_cohort("root").obj(),
    *(preempting_cq(n, "root", fq("default", cpu="5"), fq("on-demand", cpu="5")) for n in ("cq-1", "cq-2")),
    make_lq("lq-1", "default", "cq-1"),
    make_lq("lq-2", "default", "cq-2"),
]
# cq-1 holds one workload on each flavor; a high-priority workload waits in each of lq-1 and lq-2.
STICKY = [
    reserved("wl-admitted-default", "default", "cq-1", "default", "10", queue="lq-1", admitted=True),
    reserved("wl-admitted-on-demand", "default", "cq-1", "on-demand", "10", queue="lq-1", admitted=True),
    pending(
        "wl-pending-high-prio-1",
        "default",
        "lq-1",
        prio=11,
        uid="wl-pending-high-prio-1-uid",
        job_uid="job-high-prio-1-uid",
        cpu="10",
    ),
    wl(
        "wl-pending-high-prio-2",
        "default",
        "lq-2",
        prio=10,
        uid="wl-pending-high-prio-2-uid",
        job_uid="job-high-prio-2-uid",
    )
    .request(cpu="10")
    .created(1)
    .obj(),
]
