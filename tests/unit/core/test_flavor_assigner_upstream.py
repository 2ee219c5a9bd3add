"""Upstream flavor-assigner scenarios, driven straight through `assign_flavors`.

Ported from upstream `pkg/scheduler/flavorassigner/flavorassigner_test.go` (TestAssignFlavors,
TestReclaimBeforePriorityPreemption, TestDeletedFlavors, TestHierarchical, TestIsPreferred,
TestAssignment_TotalRequestsFor, TestIsNoFitDueToCapacityAndLimits, the quota-only cases of
TestFlavorScanRecordsLastTriedFlavorIdx) and `podset_reducer_test.go` (TestSearch) at commit
ff69552e79, plus TestAssignFlavorsWithAllowedFlavors (v0.19.2, ConcurrentAdmission). Each case builds a cache from objects, snapshots it, adds the case's usage, and runs
the assigner with a scripted preemption oracle (like upstream's testOracle: any flavor-resource
not scripted answers "Preempt, borrow 0"). Case ids are the upstream case names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import fq, make_cohort, make_cq, make_flavor, make_wl
from webhook.core.cache import Cache
from webhook.core.flavor_assigner import (
    Assignment,
    Mode,
    PreemptionPossibility,
    _is_preferred,
    _PMode,
    assign_flavors,
    search_partial,
)
from webhook.core.resource_node import ClusterQueueNode
from webhook.core.resources import FlavorResource, format_quantity, parse_amount
from webhook.core.snapshot import take_snapshot
from webhook.core.workload import WorkloadInfo, parse_workload

FIT, PREEMPT, NO_FIT = Mode.FIT, Mode.PREEMPT, Mode.NO_FIT
NO_CANDIDATES, PREEMPT_P, RECLAIM = (
    PreemptionPossibility.NO_CANDIDATES,
    PreemptionPossibility.PREEMPT,
    PreemptionPossibility.RECLAIM,
)
GPU = "example.com/gpu"
CQ = "test-clusterqueue"
CQ2 = "test-secondary-clusterqueue"

Usage = Mapping[str, Mapping[tuple[str, str], str]]
Sim = Mapping[tuple[str, str], tuple[PreemptionPossibility, int]]


class ScriptedOracle:
    """Answers preemption simulations from a table; unscripted frs can preempt at level 0."""

    def __init__(self, results: Sim) -> None:
        self.results = results

    def simulate_preemption(
        self, cq: ClusterQueueNode, wl: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[PreemptionPossibility, int]:
        return self.results.get((fr.flavor, fr.resource), (PREEMPT_P, 0))


def run(
    wl: dict[str, Any],
    objs: Sequence[dict[str, Any]],
    *,
    cq: str = CQ,
    usage: Usage | None = None,
    sim: Sim | None = None,
    fair_sharing: bool = False,
    counts: Sequence[int] | None = None,
    deleted_flavors: Sequence[str] = (),
    concurrent_admission: bool = False,
) -> Assignment:
    """Assign flavors to `wl` in `cq` of a snapshot built from `objs` plus `usage` per ClusterQueue.

    `deleted_flavors` are known when the snapshot is taken but missing from the flavors the
    assigner sees (upstream TestDeletedFlavors).
    """
    cache = Cache()
    for o in objs:
        if o["kind"] == "ResourceFlavor":
            cache.upsert_resource_flavor(o)
        elif o["kind"] == "ClusterQueue":
            cache.upsert_cluster_queue(o)
        else:
            cache.upsert_cohort(o)
    snap = take_snapshot(cache)
    for name, u in (usage or {}).items():
        snap.add_usage(snap.cluster_queues[name], {FlavorResource(f, r): parse_amount(r, q) for (f, r), q in u.items()})
    flavors = {n: f for n, f in snap.resource_flavors.items() if n not in deleted_flavors}
    return assign_flavors(
        parse_workload(wl),
        snap.cluster_queues[cq],
        flavors,
        ScriptedOracle(sim or {}),
        fair_sharing=fair_sharing,
        counts=counts,
        concurrent_admission=concurrent_admission,
    )


def max_msg(res: str, flavor: str, prev: str, req: str, cap: str) -> str:
    return f"insufficient quota for {res} in flavor {flavor}, previously considered podsets requests ({prev}) + current podset request ({req}) > maximum capacity ({cap})"


def unused_msg(res: str, flavor: str, more: str) -> str:
    return f"insufficient unused quota for {res} in flavor {flavor}, {more} more needed"


TAINT_MSG = "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"


def affinity_msg(flavor: str) -> str:
    return f"flavor {flavor} doesn't match node affinity"


# -- TestAssignFlavors --------------------------------------------------------------------------

FLAVORS = [
    make_flavor("default").obj(),
    make_flavor("one").label("type", "one").obj(),
    make_flavor("two").label("type", "two").obj(),
    make_flavor("b_one").label("b_type", "one").obj(),
    make_flavor("b_two").label("b_type", "two").obj(),
    make_flavor("tainted").taint("instance", "spot").obj(),
    make_flavor("taint_and_toleration").taint("instance", "spot").toleration("instance", "spot").obj(),
    make_flavor("label-x-a").label("x", "a").obj(),
    make_flavor("label-xy-b").label("x", "b").label("y", "k").obj(),
]


@dataclass(frozen=True)
class PS:
    """Expected podSet assignment: flavors as resource -> (flavor, mode, triedFlavorIdx)."""

    name: str
    count: int
    requests: dict[str, str]
    flavors: dict[str, tuple[str, Mode, int]] = field(default_factory=dict)
    status: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    wl: dict[str, Any]
    cq: dict[str, Any]
    mode: Mode
    pod_sets: list[PS]
    usage: dict[tuple[str, str], str]
    others: tuple[dict[str, Any], ...] = ()
    cq_usage: Mapping[tuple[str, str], str] = field(default_factory=dict)
    other_usage: Mapping[tuple[str, str], str] = field(default_factory=dict)
    sim: Sim = field(default_factory=dict)
    borrowing: int = 0
    no_fit_reason: str = ""
    fair_sharing: bool = False


def ps1(count: int = 1, **requests: str) -> dict[str, Any]:
    """A workload with the single podSet `main`."""
    return make_wl("wl").podset("main", count, **requests).obj()


def cpu_cq(*flavors: dict[str, Any]) -> Any:
    return make_cq(CQ).group(*flavors)


def secondary(*flavors: dict[str, Any]) -> dict[str, Any]:
    return make_cq(CQ2).cohort("test-cohort").group(*flavors).obj()


def with_reclaimable(wl: dict[str, Any], name: str, count: int) -> dict[str, Any]:
    wl["status"]["reclaimablePods"] = [{"name": name, "count": count}]
    return wl


def with_pod_spec(wl: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """Set fields of the last podSet's pod spec (affinity terms given whole)."""
    wl["spec"]["podSets"][-1]["template"]["spec"].update(spec)
    return wl


def required_affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def expr(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


PREEMPT_BORROWING = {"reclaim": "LowerPriority", "borrow": "LowerPriority"}


def borrowing_while_preempting_cq(
    when_can_borrow: str, when_can_preempt: str, one: str | tuple[str, str | None, str | None]
) -> dict[str, Any]:
    return (
        make_cq(CQ)
        .preemption(**PREEMPT_BORROWING)
        .fungibility(when_can_borrow, when_can_preempt)
        .group(fq("one", cpu=one), fq("two", cpu="12"))
        .cohort("test-cohort")
        .obj()
    )


def fair_sharing_cq(reclaim: str) -> dict[str, Any]:
    return (
        make_cq(CQ)
        .preemption(reclaim=reclaim)
        .fungibility("MayStopSearch", "MayStopSearch")
        .group(fq("one", cpu="0"), fq("two", cpu="12"))
        .cohort("test-cohort")
        .obj()
    )


ASSIGN_FLAVORS_CASES = [
    pytest.param(
        Case(
            wl=ps1(cpu="1", memory="1Mi"),
            cq=cpu_cq(fq("default", cpu="1", memory="2Mi")).obj(),
            mode=FIT,
            pod_sets=[
                PS(
                    "main",
                    1,
                    {"cpu": "1", "memory": "1Mi"},
                    {"cpu": ("default", FIT, -1), "memory": ("default", FIT, -1)},
                )
            ],
            usage={("default", "cpu"): "1", ("default", "memory"): "1Mi"},
        ),
        id="single flavor, fits",
    ),
    pytest.param(
        Case(
            wl=make_wl("wl").podset("main", 1, cpu="1").toleration("instance", "spot").obj(),
            cq=cpu_cq(fq("tainted", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1"}, {"cpu": ("tainted", FIT, -1)})],
            usage={("tainted", "cpu"): "1"},
        ),
        id="single flavor, fits tainted flavor",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="1"),
            cq=cpu_cq(fq("taint_and_toleration", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1"}, {"cpu": ("taint_and_toleration", FIT, -1)})],
            usage={("taint_and_toleration", "cpu"): "1"},
        ),
        id="single flavor, fits tainted flavor with toleration",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="2"),
            cq=cpu_cq(fq("default", cpu="4")).obj(),
            cq_usage={("default", "cpu"): "3"},
            mode=PREEMPT,
            pod_sets=[
                PS("main", 1, {"cpu": "2"}, {"cpu": ("default", PREEMPT, -1)}, (unused_msg("cpu", "default", "1"),))
            ],
            usage={("default", "cpu"): "2"},
        ),
        id="single flavor, used resources, doesn't fit",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="3", memory="10Mi"),
            cq=cpu_cq(fq("one", cpu="2"), fq("two", cpu="4"))
            .group(fq("b_one", memory="1Gi"), fq("b_two", memory="5Gi"))
            .obj(),
            mode=FIT,
            pod_sets=[
                PS("main", 1, {"cpu": "3", "memory": "10Mi"}, {"cpu": ("two", FIT, -1), "memory": ("b_one", FIT, 0)})
            ],
            usage={("two", "cpu"): "3", ("b_one", "memory"): "10Mi"},
        ),
        id="multiple resource groups, fits",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="3", memory="10Mi"),
            cq=cpu_cq(fq("one", cpu="3")).group(fq("b_one", memory="1Mi")).obj(),
            cq_usage={("one", "cpu"): "1"},
            mode=NO_FIT,
            pod_sets=[
                PS("main", 1, {"cpu": "3", "memory": "10Mi"}, status=(max_msg("memory", "b_one", "0", "10Mi", "1Mi"),))
            ],
            usage={},
            no_fit_reason="ExceedsMaxQuota",
        ),
        id="multiple resource groups, one could fit with preemption, other doesn't fit",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="3", memory="10Mi", **{GPU: "3"}),
            cq=cpu_cq(fq("one", cpu="2", memory="1Gi"), fq("two", cpu="4", memory="15Mi"))
            .group(fq("b_one", **{GPU: "4"}), fq("b_two", **{GPU: "2"}))
            .obj(),
            mode=FIT,
            pod_sets=[
                PS(
                    "main",
                    1,
                    {"cpu": "3", "memory": "10Mi", GPU: "3"},
                    {"cpu": ("two", FIT, -1), "memory": ("two", FIT, -1), GPU: ("b_one", FIT, 0)},
                )
            ],
            usage={("two", "cpu"): "3", ("two", "memory"): "10Mi", ("b_one", GPU): "3"},
        ),
        id="multiple resource groups with multiple resources, fits",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="3", memory="10Mi", **{GPU: "3"}),
            cq=cpu_cq(fq("one", cpu="2", memory="1Gi"), fq("two", cpu="4", memory="15Mi"))
            .group(fq("b_one", **{GPU: "4"}))
            .cohort("test-cohort")
            .obj(),
            cq_usage={("two", "memory"): "10Mi"},
            others=(secondary(fq("b_one", **{GPU: "0"})),),
            other_usage={("b_one", GPU): "2"},
            sim={("two", "memory"): (PREEMPT_P, 1)},
            mode=PREEMPT,
            pod_sets=[
                PS(
                    "main",
                    1,
                    {"cpu": "3", "memory": "10Mi", GPU: "3"},
                    {"cpu": ("two", FIT, -1), "memory": ("two", PREEMPT, -1), GPU: ("b_one", PREEMPT, -1)},
                    (
                        max_msg("cpu", "one", "0", "3", "2"),
                        unused_msg("memory", "two", "5Mi"),
                        unused_msg(GPU, "b_one", "1"),
                    ),
                )
            ],
            borrowing=1,
            usage={("two", "cpu"): "3", ("two", "memory"): "10Mi", ("b_one", GPU): "3"},
        ),
        id="multiple resource groups with multiple resources, fits with different modes",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="3", memory="10Mi"),
            cq=cpu_cq(fq("one", cpu="2", memory="1Gi"), fq("two", cpu="4", memory="5Mi")).obj(),
            mode=NO_FIT,
            pod_sets=[
                PS(
                    "main",
                    1,
                    {"cpu": "3", "memory": "10Mi"},
                    status=(max_msg("cpu", "one", "0", "3", "2"), max_msg("memory", "two", "0", "10Mi", "5Mi")),
                )
            ],
            usage={},
            no_fit_reason="ExceedsMaxQuota",
        ),
        id="multiple resources in a group, doesn't fit",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="3"),
            cq=cpu_cq(fq("tainted", cpu="4"), fq("two", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "3"}, {"cpu": ("two", FIT, -1)})],
            usage={("two", "cpu"): "3"},
        ),
        id="multiple flavors, fits while skipping tainted flavor",
    ),
    pytest.param(
        Case(
            wl=with_pod_spec(
                ps1(cpu="1"),
                nodeSelector={"type": "two", "ignored1": "foo"},
                affinity=required_affinity([expr("ignored2", "bar")]),
            ),
            cq=cpu_cq(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1"}, {"cpu": ("two", FIT, -1)})],
            usage={("two", "cpu"): "1"},
        ),
        id="multiple flavors, fits a node selector",
    ),
    pytest.param(
        Case(
            wl=with_pod_spec(
                ps1(cpu="1", memory="1Mi"),
                nodeSelector={"ignored1": "foo"},
                affinity=required_affinity([expr("type", "two")]),
            ),
            cq=cpu_cq(fq("one", cpu="4", memory="1Gi"), fq("two", cpu="4", memory="1Gi")).obj(),
            mode=FIT,
            pod_sets=[
                PS("main", 1, {"cpu": "1", "memory": "1Mi"}, {"cpu": ("two", FIT, -1), "memory": ("two", FIT, -1)})
            ],
            usage={("two", "cpu"): "1", ("two", "memory"): "1Mi"},
        ),
        id="multiple flavors, fits with node affinity",
    ),
    pytest.param(
        Case(
            wl=with_pod_spec(
                ps1(cpu="1"), affinity=required_affinity([expr("ignored2", "bar")], [expr("cpuType", "two")])
            ),
            cq=cpu_cq(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1"}, {"cpu": ("one", FIT, 0)})],
            usage={("one", "cpu"): "1"},
        ),
        id="multiple flavors, node affinity fits any flavor",
    ),
    pytest.param(
        Case(
            wl=with_pod_spec(ps1(cpu="1"), nodeSelector={"x": "a", "y": "g"}),
            cq=cpu_cq(fq("label-x-a", cpu="4"), fq("label-xy-b", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1"}, {"cpu": ("label-x-a", FIT, 0)})],
            usage={("label-x-a", "cpu"): "1"},
        ),
        id="multiple flavors with different label keys, selector only uses flavor's own keys",
    ),
    pytest.param(
        Case(
            wl=with_pod_spec(ps1(cpu="1"), nodeSelector={"type": "two"}),
            cq=cpu_cq(fq("default", cpu="4"), fq("two", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1"}, {"cpu": ("default", FIT, 0)})],
            usage={("default", "cpu"): "1"},
        ),
        id="labelless flavor in group with labeled flavor, workload uses labeled selector",
    ),
    pytest.param(
        Case(
            wl=with_pod_spec(ps1(cpu="1"), affinity=required_affinity([expr("type", "three")])),
            cq=cpu_cq(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
            mode=NO_FIT,
            pod_sets=[PS("main", 1, {"cpu": "1"}, status=(affinity_msg("one"), affinity_msg("two")))],
            usage={},
            no_fit_reason="NoMatchingFlavor",
        ),
        id="multiple flavors, doesn't fit node affinity",
    ),
    pytest.param(
        Case(
            wl=make_wl("wl").podset("driver", 1, cpu="5").podset("worker", 1, cpu="3").obj(),
            cq=cpu_cq(fq("one", cpu="4"), fq("two", cpu="10")).obj(),
            mode=FIT,
            pod_sets=[
                PS("driver", 1, {"cpu": "5"}, {"cpu": ("two", FIT, -1)}),
                PS("worker", 1, {"cpu": "3"}, {"cpu": ("one", FIT, 0)}),
            ],
            usage={("one", "cpu"): "3", ("two", "cpu"): "5"},
        ),
        id="multiple specs, fit different flavors",
    ),
    pytest.param(
        Case(
            wl=make_wl("wl")
            .podset("driver", 1, cpu="4", memory="1Gi")
            .podset("worker", 1, cpu="6", memory="4Gi")
            .obj(),
            cq=cpu_cq(fq("default", cpu=("2", "98", None), memory="2Gi")).cohort("test-cohort").obj(),
            others=(secondary(fq("default", cpu="198", memory="198Gi")),),
            mode=FIT,
            pod_sets=[
                PS(
                    "driver",
                    1,
                    {"cpu": "4", "memory": "1Gi"},
                    {"cpu": ("default", FIT, -1), "memory": ("default", FIT, -1)},
                ),
                PS(
                    "worker",
                    1,
                    {"cpu": "6", "memory": "4Gi"},
                    {"cpu": ("default", FIT, -1), "memory": ("default", FIT, -1)},
                ),
            ],
            borrowing=1,
            usage={("default", "cpu"): "10", ("default", "memory"): "5Gi"},
        ),
        id="multiple specs, fits borrowing",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="2"),
            cq=cpu_cq(fq("one", cpu="1")).cohort("test-cohort").obj(),
            others=(secondary(fq("one", cpu=("10", None, "0"))),),
            other_usage={("one", "cpu"): "9"},
            mode=NO_FIT,
            pod_sets=[PS("main", 1, {"cpu": "2"}, status=(max_msg("cpu", "one", "0", "2", "1"),))],
            usage={},
            no_fit_reason="ExceedsMaxQuota",
        ),
        id="not enough space to borrow",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="2"),
            cq=cpu_cq(fq("one", cpu=("2", "8", None))).cohort("test-cohort").obj(),
            cq_usage={("one", "cpu"): "9"},
            others=(secondary(fq("one", cpu="98")),),
            other_usage={("one", "cpu"): "9"},
            sim={("one", "cpu"): (PREEMPT_P, 1)},
            mode=PREEMPT,
            pod_sets=[PS("main", 1, {"cpu": "2"}, {"cpu": ("one", PREEMPT, -1)}, (unused_msg("cpu", "one", "1"),))],
            borrowing=1,
            usage={("one", "cpu"): "2"},
        ),
        id="past max, but can preempt in ClusterQueue",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="2"),
            cq=cpu_cq(fq("one", cpu="2")).obj(),
            cq_usage={("one", "cpu"): "1"},
            mode=PREEMPT,
            pod_sets=[PS("main", 1, {"cpu": "2"}, {"cpu": ("one", PREEMPT, -1)}, (unused_msg("cpu", "one", "1"),))],
            usage={("one", "cpu"): "2"},
        ),
        id="past min, but can preempt in ClusterQueue",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="2"),
            cq=cpu_cq(fq("one", cpu="3")).cohort("test-cohort").obj(),
            cq_usage={("one", "cpu"): "2"},
            others=(secondary(fq("one", cpu="7")),),
            other_usage={("one", "cpu"): "8"},
            sim={("one", "cpu"): (PREEMPT_P, 1)},
            mode=PREEMPT,
            pod_sets=[PS("main", 1, {"cpu": "2"}, {"cpu": ("one", PREEMPT, -1)}, (unused_msg("cpu", "one", "2"),))],
            borrowing=1,
            usage={("one", "cpu"): "2"},
        ),
        id="past min, but can preempt in cohort and ClusterQueue",
    ),
    pytest.param(
        Case(
            wl=with_pod_spec(ps1(cpu="2"), nodeSelector={"type": "two"}),
            cq=cpu_cq(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
            cq_usage={("one", "cpu"): "3", ("two", "cpu"): "3"},
            mode=PREEMPT,
            pod_sets=[
                PS(
                    "main",
                    1,
                    {"cpu": "2"},
                    {"cpu": ("two", PREEMPT, -1)},
                    (affinity_msg("one"), unused_msg("cpu", "two", "1")),
                )
            ],
            usage={("two", "cpu"): "2"},
        ),
        id="can only preempt flavors that match affinity",
    ),
    pytest.param(
        Case(
            wl=make_wl("wl")
            .podset("launcher", 1, cpu="2")
            .podset("workers", 10, cpu="1")
            .toleration("instance", "spot")
            .obj(),
            cq=cpu_cq(fq("one", cpu="4"), fq("tainted", cpu="10")).obj(),
            cq_usage={("one", "cpu"): "3", ("tainted", "cpu"): "3"},
            mode=PREEMPT,
            pod_sets=[
                PS(
                    "launcher",
                    1,
                    {"cpu": "2"},
                    {"cpu": ("one", PREEMPT, -1)},
                    (unused_msg("cpu", "one", "1"), TAINT_MSG),
                ),
                PS(
                    "workers",
                    10,
                    {"cpu": "10"},
                    {"cpu": ("tainted", PREEMPT, -1)},
                    (max_msg("cpu", "one", "2", "10", "4"), unused_msg("cpu", "tainted", "3")),
                ),
            ],
            usage={("one", "cpu"): "2", ("tainted", "cpu"): "10"},
        ),
        id="each podset requires preemption on a different flavor",
    ),
    pytest.param(
        Case(
            wl=ps1(**{GPU: "2"}),
            cq=cpu_cq(fq("one", cpu="4")).obj(),
            mode=NO_FIT,
            pod_sets=[PS("main", 1, {GPU: "2"}, status=("resource example.com/gpu unavailable in ClusterQueue",))],
            usage={},
            no_fit_reason="NoMatchingFlavor",
        ),
        id="resource not listed in clusterQueue",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="1", **{GPU: "0"}),
            cq=cpu_cq(fq("default", cpu="4")).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1", GPU: "0"}, {"cpu": ("default", FIT, -1)})],
            usage={("default", "cpu"): "1"},
        ),
        id="zero resource request not in clusterQueue should succeed",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="1", **{GPU: "0"}),
            cq=cpu_cq(fq("default", cpu="4", **{GPU: "4"})).obj(),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "1", GPU: "0"}, {"cpu": ("default", FIT, -1), GPU: ("default", FIT, -1)})],
            usage={("default", "cpu"): "1", ("default", GPU): "0"},
        ),
        id="zero resource request defined in clusterQueue should get flavor assigned",
    ),
    pytest.param(
        Case(
            wl=ps1(3, cpu="1"),
            cq=cpu_cq(fq("default", pods="3", cpu="10")).obj(),
            mode=FIT,
            pod_sets=[
                PS("main", 3, {"cpu": "3", "pods": "3"}, {"cpu": ("default", FIT, -1), "pods": ("default", FIT, -1)})
            ],
            usage={("default", "pods"): "3", ("default", "cpu"): "3"},
        ),
        id="num pods fit",
    ),
    pytest.param(
        Case(
            wl=ps1(3, cpu="1"),
            cq=cpu_cq(fq("default", pods="2", cpu="10")).obj(),
            mode=NO_FIT,
            pod_sets=[PS("main", 3, {"cpu": "3", "pods": "3"}, status=(max_msg("pods", "default", "0", "3", "2"),))],
            usage={},
            no_fit_reason="ExceedsMaxQuota",
        ),
        id="num pods don't fit",
    ),
    pytest.param(
        Case(
            wl=with_reclaimable(ps1(5, cpu="1"), "main", 2),
            cq=cpu_cq(fq("default", pods="3", cpu="10")).obj(),
            mode=FIT,
            pod_sets=[
                PS("main", 3, {"cpu": "3", "pods": "3"}, {"cpu": ("default", FIT, -1), "pods": ("default", FIT, -1)})
            ],
            usage={("default", "pods"): "3", ("default", "cpu"): "3"},
        ),
        id="with reclaimable pods; reclaimablePods on",
    ),
    *(
        pytest.param(
            Case(
                wl=ps1(cpu="9"),
                cq=cpu_cq(fq("one", pods="10", cpu="10"), fq("two", pods="10", cpu="10"))
                .fungibility("MayStopSearch", "MayStopSearch")
                .obj(),
                cq_usage={("one", "cpu"): "2"},
                mode=PREEMPT,
                pod_sets=[
                    PS(
                        "main",
                        1,
                        {"cpu": "9", "pods": "1"},
                        {"cpu": ("one", PREEMPT, 0), "pods": ("one", FIT, 0)},
                        (unused_msg("cpu", "one", "1"),),
                    )
                ],
                usage={("one", "cpu"): "9", ("one", "pods"): "1"},
            ),
            id=name,
        )
        for name in (
            "preempt before try next flavor",
            "preempt before try next flavor; using WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
        )
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="9"),
            cq=cpu_cq(fq("one", pods="10", cpu="10"), fq("two", pods="10", cpu="10")).obj(),
            cq_usage={("one", "cpu"): "2"},
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "9", "pods": "1"}, {"cpu": ("two", FIT, -1), "pods": ("two", FIT, -1)})],
            usage={("two", "cpu"): "9", ("two", "pods"): "1"},
        ),
        id="preempt try next flavor",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="9"),
            cq=cpu_cq(fq("one", pods="10", cpu=("10", "1", None)), fq("two", pods="10", cpu="1"))
            .fungibility("TryNextFlavor", "TryNextFlavor")
            .cohort("test-cohort")
            .obj(),
            cq_usage={("one", "cpu"): "2"},
            others=(secondary(fq("one", cpu="1")),),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "9", "pods": "1"}, {"cpu": ("one", FIT, -1), "pods": ("one", FIT, -1)})],
            borrowing=1,
            usage={("one", "cpu"): "9", ("one", "pods"): "1"},
        ),
        id="borrow try next flavor, found the first flavor",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="9"),
            cq=cpu_cq(fq("one", pods="10", cpu=("10", "1", None)), fq("two", pods="10", cpu="10"))
            .fungibility("TryNextFlavor", "TryNextFlavor")
            .cohort("test-cohort")
            .obj(),
            cq_usage={("one", "cpu"): "2"},
            others=(secondary(fq("one", cpu="1")),),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "9", "pods": "1"}, {"cpu": ("two", FIT, -1), "pods": ("two", FIT, -1)})],
            usage={("two", "cpu"): "9", ("two", "pods"): "1"},
        ),
        id="borrow try next flavor, found the second flavor",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="9"),
            cq=cpu_cq(fq("one", pods="10", cpu=("10", "1", None)), fq("two", pods="10", cpu="10"))
            .cohort("test-cohort")
            .obj(),
            cq_usage={("one", "cpu"): "2"},
            others=(secondary(fq("one", cpu="1")),),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "9", "pods": "1"}, {"cpu": ("one", FIT, 0), "pods": ("one", FIT, 0)})],
            borrowing=1,
            usage={("one", "cpu"): "9", ("one", "pods"): "1"},
        ),
        id="borrow before try next flavor",
    ),
    *(
        pytest.param(
            Case(
                wl=ps1(cpu="12"),
                cq=borrowing_while_preempting_cq("MayStopSearch", "MayStopSearch", one),
                others=(secondary(fq("one", cpu="12")),),
                other_usage={("one", "cpu"): "10"},
                sim={("one", "cpu"): (PREEMPT_P, 1)},
                mode=PREEMPT,
                pod_sets=[
                    PS("main", 1, {"cpu": "12"}, {"cpu": ("one", PREEMPT, 0)}, (unused_msg("cpu", "one", "10"),))
                ],
                borrowing=1,
                usage={("one", "cpu"): "12"},
            ),
            id=name,
        )
        for name, one in (
            (
                "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch",
                ("0", "12", None),
            ),
            (
                "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
                ("0", "12", None),
            ),
            (
                "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch",
                "0",
            ),
            (
                "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
                "0",
            ),
        )
    ),
    *(
        pytest.param(
            Case(
                wl=ps1(cpu="12"),
                cq=borrowing_while_preempting_cq("TryNextFlavor", "MayStopSearch", ("0", "12", None)),
                others=(secondary(fq("one", cpu="12")),),
                mode=FIT,
                pod_sets=[PS("main", 1, {"cpu": "12"}, {"cpu": ("two", FIT, -1)})],
                usage={("two", "cpu"): "12"},
            ),
            id=name,
        )
        for name in (
            "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor",
            "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor,WhenCanPreempt=MayStopSearch",
        )
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="12"),
            cq=make_cq(CQ)
            .preemption(**PREEMPT_BORROWING)
            .group(fq("one", cpu=("0", "12", None)))
            .cohort("test-cohort")
            .obj(),
            others=(secondary(fq("one", cpu="11")),),
            other_usage={("one", "cpu"): "10"},
            mode=NO_FIT,
            pod_sets=[PS("main", 1, {"cpu": "12"}, status=(max_msg("cpu", "one", "0", "12", "11"),))],
            usage={},
            no_fit_reason="ExceedsMaxQuota",
        ),
        id="when borrowing while preemption is needed, but borrowingLimit exceeds the quota available in the cohort",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="9"),
            cq=cpu_cq(fq("one", pods="10", cpu=("10", None, "1")), fq("two", pods="10", cpu=("10", None, "0")))
            .fungibility("TryNextFlavor", "TryNextFlavor")
            .cohort("test-cohort")
            .obj(),
            cq_usage={("one", "cpu"): "2"},
            others=(secondary(fq("one", cpu="1")),),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "9", "pods": "1"}, {"cpu": ("two", FIT, -1), "pods": ("two", FIT, -1)})],
            usage={("two", "cpu"): "9", ("two", "pods"): "1"},
        ),
        id="lend try next flavor, found the second flavor",
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="9"),
            cq=cpu_cq(fq("one", pods="10", cpu=("10", None, "1")), fq("two", pods="10", cpu=("1", None, "0")))
            .fungibility("TryNextFlavor", "TryNextFlavor")
            .cohort("test-cohort")
            .obj(),
            cq_usage={("one", "cpu"): "2"},
            others=(secondary(fq("one", cpu="1")),),
            mode=FIT,
            pod_sets=[PS("main", 1, {"cpu": "9", "pods": "1"}, {"cpu": ("one", FIT, -1), "pods": ("one", FIT, -1)})],
            borrowing=1,
            usage={("one", "cpu"): "9", ("one", "pods"): "1"},
        ),
        id="lend try next flavor, found the first flavor",
    ),
    *(
        pytest.param(
            Case(
                wl=ps1(cpu="2"),
                cq=make_cq(CQ)
                .fungibility("MayStopSearch", "MayStopSearch")
                .preemption(**PREEMPT_BORROWING)
                .group(fq("one", cpu=("0", "2", None)), fq("two", cpu=("0", "2", None)))
                .cohort("test-cohort")
                .obj(),
                others=(secondary(fq("one", cpu="2"), fq("two", cpu="2")),),
                other_usage={("one", "cpu"): "2"},
                sim={("one", "cpu"): (NO_CANDIDATES, 0)},
                mode=FIT,
                pod_sets=[PS("main", 1, {"cpu": "2"}, {"cpu": ("two", FIT, -1)})],
                borrowing=1,
                usage={("two", "cpu"): "2"},
            ),
            id=name,
        )
        for name in (
            "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)",
            "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits); using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
        )
    ),
    pytest.param(
        Case(
            wl=ps1(cpu="9"),
            cq=cpu_cq(fq("one", pods="10", cpu=("10", None, "0"))).cohort("test-cohort").obj(),
            cq_usage={("one", "cpu"): "2"},
            others=(secondary(fq("one", pods="0", cpu="0")),),
            sim={("one", "cpu"): (PREEMPT_P, 1)},
            mode=PREEMPT,
            pod_sets=[
                PS(
                    "main",
                    1,
                    {"cpu": "9", "pods": "1"},
                    {"cpu": ("one", PREEMPT, -1), "pods": ("one", FIT, -1)},
                    (unused_msg("cpu", "one", "1"),),
                )
            ],
            borrowing=1,
            usage={("one", "cpu"): "9", ("one", "pods"): "1"},
        ),
        id="quota exhausted, but can preempt in cohort and ClusterQueue",
    ),
    *(
        pytest.param(
            Case(
                wl=ps1(cpu="12"),
                cq=fair_sharing_cq("Any"),
                others=(secondary(fq("one", cpu="12")),),
                other_usage={("one", "cpu"): "10"},
                sim={("one", "cpu"): (PREEMPT_P, 1)},
                fair_sharing=True,
                mode=PREEMPT,
                pod_sets=[
                    PS("main", 1, {"cpu": "12"}, {"cpu": ("one", PREEMPT, 0)}, (unused_msg("cpu", "one", "10"),))
                ],
                borrowing=1,
                usage={("one", "cpu"): "12"},
            ),
            id=name,
        )
        for name in (
            "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any",
            "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
        )
    ),
    *(
        pytest.param(
            Case(
                wl=ps1(cpu="12"),
                cq=fair_sharing_cq("Never"),
                others=(secondary(fq("one", cpu="12")),),
                other_usage={("one", "cpu"): "10"},
                sim={("one", "cpu"): (NO_CANDIDATES, 0)},
                fair_sharing=True,
                mode=FIT,
                pod_sets=[PS("main", 1, {"cpu": "12"}, {"cpu": ("two", FIT, -1)})],
                usage={("two", "cpu"): "12"},
            ),
            id=name,
        )
        for name in (
            "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never",
            "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
        )
    ),
    pytest.param(
        Case(
            wl=make_wl("wl")
            .podset("fitting-podset", 1, cpu="1")
            .node_selector(type="one")
            .podset("blocking-podset", 1, cpu="5")
            .obj(),
            cq=cpu_cq(fq("one", cpu="2"), fq("two", cpu="2")).obj(),
            mode=NO_FIT,
            pod_sets=[
                PS("fitting-podset", 1, {"cpu": "1"}, {"cpu": ("one", FIT, 0)}),
                PS(
                    "blocking-podset",
                    1,
                    {"cpu": "5"},
                    status=(max_msg("cpu", "one", "1", "5", "2"), max_msg("cpu", "two", "0", "5", "2")),
                ),
            ],
            usage={("one", "cpu"): "1"},
            no_fit_reason="ExceedsMaxQuota",
        ),
        id="multi-podset, one fits and another fails, fitting podset attempts skipped in resolveNoFitReason",
    ),
]


def observed(a: Assignment) -> tuple[Mode, int, list[PS], dict[tuple[str, str], str], str]:
    """What upstream compares: modes, borrowing, per-podSet flavors/requests/status, usage, NoFitReason."""
    pod_sets = [
        PS(
            ps.name,
            ps.count,
            {r: format_quantity(r, v) for r, v in ps.requests.items()},
            {r: (fa.name, fa.mode, fa.tried_flavor_idx) for r, fa in ps.flavors.items()},
            tuple(sorted(ps.reasons)),
        )
        for ps in a.pod_sets
    ]
    usage = {(fr.flavor, fr.resource): format_quantity(fr.resource, v) for fr, v in a.usage.items()}
    return a.representative_mode(), a.borrowing, pod_sets, usage, a.no_fit_reason


@pytest.mark.parametrize("case", ASSIGN_FLAVORS_CASES)
def test_assign_flavors(case: Case) -> None:
    usage = {CQ: case.cq_usage, CQ2: case.other_usage} if case.others else {CQ: case.cq_usage}
    a = run(case.wl, [*FLAVORS, case.cq, *case.others], usage=usage, sim=case.sim, fair_sharing=case.fair_sharing)
    want_pod_sets = [PS(p.name, p.count, p.requests, p.flavors, tuple(sorted(p.status))) for p in case.pod_sets]
    assert observed(a) == (case.mode, case.borrowing, want_pod_sets, case.usage, case.no_fit_reason)


# -- TestReclaimBeforePriorityPreemption ---------------------------------------------------------
# Three flavors of 10 compute and 10 gpu each, lent to the cohort by test-clusterqueue. (Our
# builders spell the gpu resource `nvidia.com/gpu`; upstream names it `gpu`. Same ordering.)

NGPU = "nvidia.com/gpu"
UNO_DUE_TRE = [make_flavor(n).obj() for n in ("uno", "due", "tre")]


def reclaim_objs(fungibility: tuple[str, str] | None) -> list[dict[str, Any]]:
    test = make_cq(CQ).cohort("cohort").preemption(within="LowerPriority", reclaim="LowerPriority")
    test = test.fungibility(*fungibility) if fungibility else test.fungibility("MayStopSearch", "TryNextFlavor")
    test = test.group(*(fq(n, compute="10", gpu="10") for n in ("uno", "due", "tre")))
    other = (
        make_cq("other-clusterqueue")
        .cohort("cohort")
        .group(*(fq(n, compute="0", gpu="0") for n in ("uno", "due", "tre")))
    )
    return [*UNO_DUE_TRE, test.obj(), other.obj()]


@pytest.mark.parametrize(
    ("requests", "test_usage", "other_usage", "fungibility", "sim", "mode", "want"),
    [
        pytest.param(
            {"gpu": "10"},
            {("uno", NGPU): "1"},
            {("due", NGPU): "1"},
            None,
            {},
            FIT,
            {NGPU: "tre"},
            id="Select first flavor which fits",
        ),
        pytest.param(
            {"gpu": "10"},
            {("uno", NGPU): "1"},
            {("due", NGPU): "1", ("tre", NGPU): "1"},
            None,
            {("uno", NGPU): (PREEMPT_P, 0), ("due", NGPU): (RECLAIM, 0)},
            PREEMPT,
            {NGPU: "due"},
            id="Select first flavor where gpu reclamation is possible",
        ),
        *(
            pytest.param(
                {"gpu": "10"},
                {("uno", NGPU): "1"},
                {("due", NGPU): "1", ("tre", NGPU): "1"},
                ("MayStopSearch", "MayStopSearch"),
                {},
                PREEMPT,
                {NGPU: "uno"},
                id=name,
            )
            for name in (
                "Select first flavor when flavor fungibility is disabled",
                "Select first flavor when flavor fungibility is disabled; using deprecated WhenCanPreempt=MayStopSearch",
            )
        ),
        pytest.param(
            {"gpu": "10"},
            {("uno", NGPU): "1", ("due", NGPU): "1", ("tre", NGPU): "1"},
            {},
            None,
            {},
            PREEMPT,
            {NGPU: "uno"},
            id="Select first flavor where priority based preemption is possible",
        ),
        pytest.param(
            {"gpu": "10", "compute": "10"},
            {("uno", NGPU): "1", ("uno", "compute"): "1", ("due", "compute"): "1"},
            {("due", NGPU): "1", ("tre", NGPU): "1"},
            None,
            {("uno", NGPU): (PREEMPT_P, 0), ("due", NGPU): (RECLAIM, 0), ("tre", NGPU): (RECLAIM, 0)},
            PREEMPT,
            {NGPU: "tre", "compute": "tre"},
            id="Select second flavor where gpu reclamation is possible, as compute Fits",
        ),
    ],
)
def test_reclaim_before_priority_preemption(
    requests: dict[str, str],
    test_usage: dict[tuple[str, str], str],
    other_usage: dict[tuple[str, str], str],
    fungibility: tuple[str, str] | None,
    sim: Sim,
    mode: Mode,
    want: dict[str, str],
) -> None:
    # Upstream leaves whenCanBorrow unset when it overrides fungibility; the API default is MayStopSearch.
    a = run(
        ps1(**requests), reclaim_objs(fungibility), usage={CQ: test_usage, "other-clusterqueue": other_usage}, sim=sim
    )
    assert a.representative_mode() == mode
    assert {r: fa.name for r, fa in a.pod_sets[0].flavors.items()} == want


# -- TestDeletedFlavors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "cpu", "mode", "want"),
    [
        pytest.param(
            [fq("deleted-flavor", cpu="4"), fq("flavor", cpu="4")],
            "3",
            FIT,
            PS("main", 1, {"cpu": "3"}, {"cpu": ("flavor", FIT, -1)}),
            id="multiple flavors, skip missing ResourceFlavor",
        ),
        pytest.param(
            [fq("deleted-flavor", cpu="4")],
            "1",
            NO_FIT,
            PS("main", 1, {"cpu": "1"}, status=("flavor deleted-flavor not found",)),
            id="flavor not found",
        ),
    ],
)
def test_deleted_flavors(groups: list[dict[str, Any]], cpu: str, mode: Mode, want: PS) -> None:
    """The snapshot still lists the flavor, but it is gone from the flavors the assigner sees."""
    objs = [make_flavor("flavor").obj(), make_flavor("deleted-flavor").obj(), make_cq(CQ).group(*groups).obj()]
    a = run(ps1(cpu=cpu), objs, deleted_flavors=["deleted-flavor"])
    got_mode, _, pod_sets, _, reason = observed(a)
    assert (got_mode, pod_sets) == (mode, [want])
    assert reason == ("" if mode == FIT else "NoMatchingFlavor")


# -- TestHierarchical -----------------------------------------------------------------------------
# Cohorts three (root) <- two <- one, each with 4 cpu of the flavor of its name; test-clusterqueue
# sits in cohort one, other-clusterqueue in cohort two, both with no quota of their own.

ONE_TWO_THREE = [make_flavor(n).obj() for n in ("one", "two", "three")]
ZERO_QUOTA = [fq(n, cpu="0") for n in ("one", "two", "three")]


def hierarchy_objs(
    test_flavors: Sequence[dict[str, Any]], fungibility: tuple[str, str, str | None]
) -> list[dict[str, Any]]:
    return [
        *ONE_TWO_THREE,
        make_cohort("three").group(fq("three", cpu="4")).obj(),
        make_cohort("two").parent("three").group(fq("two", cpu="4")).obj(),
        make_cohort("one").parent("two").group(fq("one", cpu="4")).obj(),
        make_cq(CQ)
        .cohort("one")
        .preemption(within="LowerPriority", reclaim="LowerPriority")
        .group(*test_flavors)
        .fungibility(*fungibility)
        .obj(),
        make_cq("other-clusterqueue").cohort("two").group(*ZERO_QUOTA).obj(),
    ]


@pytest.mark.parametrize(
    ("test_flavors", "test_usage", "other_usage", "fungibility", "sim", "mode", "want"),
    [
        pytest.param(
            ZERO_QUOTA,
            {("one", "cpu"): "4"},
            {("two", "cpu"): "4"},
            ("MayStopSearch", "TryNextFlavor", None),
            {},
            FIT,
            "three",
            id="Select the top flavor",
        ),
        pytest.param(
            ZERO_QUOTA,
            {("one", "cpu"): "4"},
            {},
            ("MayStopSearch", "TryNextFlavor", None),
            {},
            FIT,
            "two",
            id="Select the first flavor which fits",
        ),
        pytest.param(
            [fq("one", cpu=("4", "0", None)), fq("two", cpu="0"), fq("three", cpu="0")],
            {("one", "cpu"): "4"},
            {},
            ("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing"),
            {("one", "cpu"): (NO_CANDIDATES, 1)},
            FIT,
            "two",
            id="Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no preemption candidates",
        ),
    ],
)
def test_hierarchical(
    test_flavors: Sequence[dict[str, Any]],
    test_usage: dict[tuple[str, str], str],
    other_usage: dict[tuple[str, str], str],
    fungibility: tuple[str, str, str | None],
    sim: Sim,
    mode: Mode,
    want: str,
) -> None:
    a = run(
        ps1(cpu="4"),
        hierarchy_objs(test_flavors, fungibility),
        usage={CQ: test_usage, "other-clusterqueue": other_usage},
        sim=sim,
    )
    assert a.representative_mode() == mode
    assert {r: fa.name for r, fa in a.pod_sets[0].flavors.items()} == {"cpu": want}


# -- TestIsPreferred ------------------------------------------------------------------------------
# The ranking of two flavors' (granular mode, borrowing level) under a fungibility preference.


@pytest.mark.parametrize(
    ("a", "b", "preference", "want"),
    [
        pytest.param(
            (_PMode.FIT, 0), (_PMode.PREEMPT, 0), None, True, id="feature gate disabled prioritises preemption"
        ),
        pytest.param(
            (_PMode.PREEMPT, 1),
            (_PMode.FIT, 2),
            "BorrowingOverPreemption",
            False,
            id="explicit BorrowingOverPreemption prioritises borrowing distance",
        ),
        pytest.param(
            (_PMode.PREEMPT, 1),
            (_PMode.FIT, 2),
            "PreemptionOverBorrowing",
            True,
            id="explicit PreemptionOverBorrowing prioritises lower preemption",
        ),
        pytest.param(
            (_PMode.PREEMPT, 1),
            (_PMode.FIT, 1),
            "PreemptionOverBorrowing",
            False,
            id="explicit PreemptionOverBorrowing breaks borrowing ties with preemption",
        ),
        pytest.param(
            (_PMode.NO_CANDIDATES, 1),
            (_PMode.FIT, 2),
            "PreemptionOverBorrowing",
            False,
            id="explicit PreemptionOverBorrowing rejects no-candidate flavor before borrowing comparison",
        ),
        pytest.param(
            (_PMode.FIT, 2),
            (_PMode.NO_CANDIDATES, 1),
            "PreemptionOverBorrowing",
            True,
            id="explicit PreemptionOverBorrowing prefers fit over shallower-borrowing no-candidate flavor",
        ),
        pytest.param(
            (_PMode.NO_CANDIDATES, 1),
            (_PMode.NO_FIT, 0),
            None,
            True,
            id="no-candidate flavor remains preferable to no-fit flavor",
        ),
        pytest.param(
            (_PMode.NO_FIT, 0),
            (_PMode.NO_CANDIDATES, 1),
            None,
            False,
            id="no-fit flavor remains worse than no-candidate flavor",
        ),
        pytest.param(
            (_PMode.NO_CANDIDATES, 1),
            (_PMode.NO_CANDIDATES, 2),
            "PreemptionOverBorrowing",
            True,
            id="no-candidate flavors retain borrowing preference",
        ),
        pytest.param(
            (_PMode.NO_CANDIDATES, 2),
            (_PMode.NO_CANDIDATES, 1),
            "PreemptionOverBorrowing",
            False,
            id="no-candidate flavors retain borrowing preference in reverse",
        ),
    ],
)
def test_is_preferred(a: tuple[_PMode, int], b: tuple[_PMode, int], preference: str | None, want: bool) -> None:
    assert _is_preferred(a, b, preference) is want


# -- TestAssignment_TotalRequestsFor (cases without workload slices) ------------------------------
# Upstream builds the Assignment by hand; here the assigner produces it, at the same counts.


@pytest.mark.parametrize(
    ("requests", "counts"),
    [
        pytest.param({"cpu": "1", "memory": "1Mi"}, None, id="RegularWorkload"),
        pytest.param({"cpu": "1", "memory": "1Mi"}, [1], id="WorkloadWithPartialAdmission"),
        pytest.param(
            {"cpu": "1", "memory": "1Mi", GPU: "0"},
            None,
            id="WorkloadWithZeroQuantityResourceNotInClusterQueueSkipsResourceWithoutFlavor",
        ),
    ],
)
def test_total_requests(requests: dict[str, str], counts: list[int] | None) -> None:
    objs = [*FLAVORS, make_cq(CQ).group(fq("default", cpu="10", memory="10Mi")).obj()]
    a = run(make_wl("wl").podset("main", 2, **requests).obj(), objs, counts=counts)
    pods = 2 if counts is None else counts[0]
    want = {FlavorResource("default", "cpu"): pods * 1000, FlavorResource("default", "memory"): pods * 1024 * 1024}
    assert (a.representative_mode(), a.total_requests()) == (FIT, want)


# -- TestIsNoFitDueToCapacityAndLimits (cases without TAS, workload slices or allowed-flavor annotations)

NOFIT_FLAVORS = [make_flavor("flavor-a").label("type", "a").obj(), make_flavor("flavor-b").taint("key", "val").obj()]
SHARED_FLAVORS = [
    make_flavor("flavor-shared").label("type", "shared").obj(),
    make_flavor("flavor-a").label("type", "a").obj(),
]
NOFIT_CQ = make_cq("cq").group(fq("flavor-a", cpu=("2", "4", None)), fq("flavor-b", cpu=("2", "4", None))).obj()


def ab_cohort(a: tuple[str, str], b: tuple[str, str], sibling: tuple[str, str]) -> list[dict[str, Any]]:
    """cq and a sibling in `cohort`, each with (nominal, borrowingLimit) cpu on flavor-a and flavor-b."""
    return [
        make_cq("cq").cohort("cohort").group(fq("flavor-a", cpu=(*a, None)), fq("flavor-b", cpu=(*b, None))).obj(),
        make_cq("sibling")
        .cohort("cohort")
        .group(fq("flavor-a", cpu=(*sibling, None)), fq("flavor-b", cpu=(*sibling, None)))
        .obj(),
    ]


def shared_cohort(cpu_flavors: Sequence[str]) -> list[dict[str, Any]]:
    """cq lists flavor-shared in two resource groups (cpu with `cpu_flavors`, memory alone)."""
    return [
        make_cq("cq")
        .cohort("cohort")
        .group(*(fq(f, cpu=("2", "4", None)) for f in cpu_flavors))
        .group(fq("flavor-shared", memory=("2Gi", "4Gi", None)))
        .obj(),
        make_cq("sibling")
        .cohort("cohort")
        .group(*(fq(f, cpu=("2", "2", None)) for f in cpu_flavors))
        .group(fq("flavor-shared", memory=("2Gi", "2Gi", None)))
        .obj(),
    ]


SHARED_USAGE = {
    "sibling": {("flavor-shared", "cpu"): "2", ("flavor-shared", "memory"): "2Gi", ("flavor-a", "cpu"): "2"}
}
NO_CANDIDATES_SIM = {
    ("flavor-shared", "cpu"): (NO_CANDIDATES, 0),
    ("flavor-shared", "memory"): (NO_CANDIDATES, 0),
    ("flavor-a", "cpu"): (NO_CANDIDATES, 0),
}


@pytest.mark.parametrize(
    ("wl", "objs", "usage", "sim", "reason", "attempts"),
    [
        pytest.param(
            ps1(cpu="1"),
            [*NOFIT_FLAVORS, NOFIT_CQ],
            {},
            {},
            "",
            {"flavor-a": "", "flavor-b": "NoMatchingFlavor"},
            id="succeeds to schedule on flavor-a",
        ),
        pytest.param(
            ps1(cpu="3"),
            [*NOFIT_FLAVORS, NOFIT_CQ],
            {},
            {},
            "ExceedsMaxQuota",
            {"flavor-a": "ExceedsMaxQuota", "flavor-b": "NoMatchingFlavor"},
            id="insufficient quota",
        ),
        pytest.param(
            ps1(cpu="5"),
            [*NOFIT_FLAVORS, NOFIT_CQ],
            {},
            {},
            "ExceedsMaxQuota",
            {"flavor-a": "ExceedsMaxQuota", "flavor-b": "NoMatchingFlavor"},
            id="exceeds max capacity limits",
        ),
        pytest.param(
            make_wl("wl").podset("main", 1, cpu="1").node_selector(type="wrong").obj(),
            [*NOFIT_FLAVORS, NOFIT_CQ],
            {},
            {},
            "NoMatchingFlavor",
            {"flavor-a": "NoMatchingFlavor", "flavor-b": "NoMatchingFlavor"},
            id="taints mismatch",
        ),
        pytest.param(
            make_wl("wl").podset("main", 1, cpu="1").node_selector(type="non-existent").toleration("key", "val").obj(),
            [*NOFIT_FLAVORS, NOFIT_CQ],
            {},
            {},
            "",
            {"flavor-a": "NoMatchingFlavor"},
            id="succeeds to schedule on flavor-b with a tolerated taint",
        ),
        pytest.param(
            make_wl("wl").podset("main", 1, cpu="1").node_selector(type="non-existent").obj(),
            [
                make_flavor("flavor-a").label("type", "a").obj(),
                make_flavor("flavor-b").label("type", "b").obj(),
                NOFIT_CQ,
            ],
            {},
            {},
            "NoMatchingFlavor",
            {"flavor-a": "NoMatchingFlavor", "flavor-b": "NoMatchingFlavor"},
            id="node affinity mismatch when both flavors declare same key",
        ),
        pytest.param(
            make_wl("wl").podset("main", 1, cpu="3", memory="20Gi").node_selector(type="wrong").obj(),
            [*NOFIT_FLAVORS, NOFIT_CQ],
            {},
            {},
            "NoMatchingFlavor",
            {"flavor-a": "NoMatchingFlavor", "flavor-b": "NoMatchingFlavor"},
            id="prioritization of structural mismatch over capacity mismatch",
        ),
        pytest.param(
            ps1(cpu="3"),
            [*NOFIT_FLAVORS, *ab_cohort(("2", "2"), ("2", "2"), ("2", "2"))],
            {"sibling": {("flavor-a", "cpu"): "2", ("flavor-b", "cpu"): "2"}},
            {},
            "WaitingForQuota",
            {"flavor-a": "WaitingForQuota", "flavor-b": "NoMatchingFlavor"},
            id="insufficient capacity, cohort has available capacity (waiting for quota)",
        ),
        pytest.param(
            ps1(cpu="5"),
            [*NOFIT_FLAVORS, *ab_cohort(("2", "2"), ("2", "2"), ("2", "2"))],
            {},
            {},
            "ExceedsMaxQuota",
            {"flavor-a": "ExceedsMaxQuota", "flavor-b": "NoMatchingFlavor"},
            id="exceeds cohort max capacity limits",
        ),
        pytest.param(
            ps1(cpu="4"),
            [*NOFIT_FLAVORS, *ab_cohort(("2", "1"), ("2", "1"), ("5", "5"))],
            {},
            {},
            "ExceedsMaxQuota",
            {"flavor-a": "ExceedsMaxQuota", "flavor-b": "NoMatchingFlavor"},
            id="exceeds borrowing limit but cohort has capacity",
        ),
        pytest.param(
            make_wl("wl").podset("main", 1, cpu="3", memory="3Gi").node_selector(type="a").obj(),
            [*SHARED_FLAVORS, *shared_cohort(["flavor-shared", "flavor-a"])],
            SHARED_USAGE,
            NO_CANDIDATES_SIM,
            "NoMatchingFlavor",
            {"flavor-shared": "NoMatchingFlavor", "flavor-a": "WaitingForQuota"},
            id="flavor spanning multiple resource groups",
        ),
        # Not upstream cases: the same rules with the flavor that spans groups holding the least
        # severe reason of its cpu group, which then also counts for the memory group.
        pytest.param(
            make_wl("wl").podset("main", 1, cpu="3", memory="1Gi").node_selector(type="shared").obj(),
            [*SHARED_FLAVORS, *shared_cohort(["flavor-shared", "flavor-a"])],
            SHARED_USAGE,
            {},
            "WaitingForQuota",
            {"flavor-shared": "WaitingForQuota", "flavor-a": "NoMatchingFlavor"},
            id="derived: a flavor listed in two resource groups counts in both",
        ),
    ],
)
def test_no_fit_reason(
    wl: dict[str, Any], objs: list[dict[str, Any]], usage: Usage, sim: Sim, reason: str, attempts: dict[str, str]
) -> None:
    """NoFitReason, and the no-fit reason recorded for each flavor tried that upstream checks."""
    a = run(wl, objs, cq="cq", usage=usage, sim=sim)
    assert a.no_fit_reason == reason
    got = {f: r for ps in a.pod_sets for f, (_, r) in ps.attempts.items() if f in attempts}
    assert got == {f: attempts[f] for f in got}
    assert got, "no flavor upstream checks was tried"


def test_no_fit_reason_flavor_not_allowed_by_annotations() -> None:
    """Upstream case "flavor not allowed by annotations" (ConcurrentAdmission on): flavor-b is skipped
    without an attempt, so NoFitReason comes from flavor-a alone, where preemption is possible."""
    wl = (
        make_wl("wl")
        .podset("main", 1, cpu="1")
        .annotation("kueue.x-k8s.io/workload-allowed-resource-flavors", "flavor-a")
        .obj()
    )
    a = run(
        wl, [*NOFIT_FLAVORS, NOFIT_CQ], cq="cq", usage={"cq": {("flavor-a", "cpu"): "4"}}, concurrent_admission=True
    )
    assert a.no_fit_reason == ""
    assert "flavor-b" not in a.pod_sets[0].attempts
    assert "skipping flavor flavor-b due to WorkloadAllowedResourceFlavorAnnotation annotation" in a.pod_sets[0].reasons


# -- TestAssignFlavorsWithAllowedFlavors --------------------------------------------------------

ALLOWED_OBJS = [
    *(make_flavor(n).obj() for n in ("f1", "f2", "occupied")),
    make_cq("cq").group(fq("f1", cpu="10"), fq("f2", cpu="10"), fq("occupied", cpu="1")).obj(),
]


@pytest.mark.parametrize(
    ("allowed", "flavor", "mode"),
    [
        pytest.param("f2", "f2", FIT, id="allow only f2"),
        pytest.param("f1", "f1", FIT, id="allow only f1"),
        pytest.param("occupied", "", NO_FIT, id="allow only the occupied flavor"),
        pytest.param("f1,f2", "f1", FIT, id="allow f1 and f2"),
        pytest.param(None, "f1", FIT, id="no constraints"),
        pytest.param("non-existent", "", NO_FIT, id="allow non-existent"),
    ],
)
def test_assign_flavors_with_allowed_flavors(allowed: str | None, flavor: str, mode: Mode) -> None:
    b = make_wl("wl").podset("main", 1, cpu="2")
    if allowed is not None:
        b.annotation("kueue.x-k8s.io/workload-allowed-resource-flavors", allowed)
    a = run(b.obj(), ALLOWED_OBJS, cq="cq", concurrent_admission=True)
    assert a.representative_mode() == mode
    if mode == FIT:
        assert a.pod_sets[0].flavors["cpu"].name == flavor


def test_allowed_flavors_ignored_without_the_gate() -> None:
    """Not an upstream case: with ConcurrentAdmission off the annotation restricts nothing."""
    wl = (
        make_wl("wl")
        .podset("main", 1, cpu="2")
        .annotation("kueue.x-k8s.io/workload-allowed-resource-flavors", "f2")
        .obj()
    )
    assert run(wl, ALLOWED_OBJS, cq="cq").pod_sets[0].flavors["cpu"].name == "f1"


def test_flavor_that_a_later_scan_skips_does_not_provide_the_resource() -> None:
    """Not an upstream case: `mergeFlavorAttemptsForResource` marks a flavor of the memory group
    that the cpu scan tried but the memory scan stopped before as NoMatchingFlavor, which then
    outranks the gpu group's ExceedsMaxQuota."""
    objs = [
        *(make_flavor(n).obj() for n in ("x", "y", "z")),
        make_cq("cq")
        .group(fq("x", cpu="4"))
        .group(fq("y", memory="4Gi"), fq("x", memory="4Gi"))
        .group(fq("z", gpu="1"))
        .obj(),
    ]
    a = run(ps1(cpu="1", memory="1Gi", gpu="2"), objs, cq="cq")
    assert a.representative_mode() == NO_FIT
    assert {f: (m, r) for f, (m, r) in a.pod_sets[0].attempts.items()} == {
        "x": (_PMode.NO_FIT, "NoMatchingFlavor"),
        "y": (_PMode.FIT, ""),
        "z": (_PMode.NO_FIT, "ExceedsMaxQuota"),
    }
    assert a.no_fit_reason == "NoMatchingFlavor"


# -- TestFlavorScanRecordsLastTriedFlavorIdx (the quota-only cases) -------------------------------
# Upstream runs these on TAS flavors with a required topology; the bookmark (triedFlavorIdx) is
# written by the quota scan alone, so the cases whose outcome does not depend on a node placement
# are kept, on plain flavors.


def bookmark_objs(nominal: str, spare: str, fungibility: tuple[str, str, str | None]) -> list[dict[str, Any]]:
    return [
        make_flavor("flavor-1").obj(),
        make_flavor("flavor-2").obj(),
        make_cq("cq")
        .cohort("cohort")
        .fungibility(*fungibility)
        .group(fq("flavor-1", cpu=nominal), fq("flavor-2", cpu=nominal))
        .obj(),
        make_cq("sibling").cohort("cohort").group(fq("flavor-1", cpu=spare), fq("flavor-2", cpu=spare)).obj(),
    ]


BOTH_FULL = {("flavor-1", "cpu"): "2", ("flavor-2", "cpu"): "2"}


@pytest.mark.parametrize(
    ("nominal", "spare", "request_", "usage", "sim", "fungibility", "mode", "idx"),
    [
        pytest.param(
            "10",
            "0",
            "2",
            {},
            {},
            ("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing"),
            FIT,
            0,
            id="quota and topology both fit on the first flavor: bookmark names it",
        ),
        pytest.param(
            "1",
            "20",
            "2",
            {},
            {},
            ("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing"),
            FIT,
            -1,
            id="fits only by borrowing: bookmark says start over",
        ),
        pytest.param(
            "1",
            "20",
            "2",
            {},
            {},
            ("MayStopSearch", "TryNextFlavor", "PreemptionOverBorrowing"),
            FIT,
            0,
            id="fits only by borrowing, but WhenCanBorrow is MayStopSearch: bookmark names the first flavor",
        ),
        pytest.param(
            "2",
            "0",
            "2",
            BOTH_FULL,
            {("flavor-1", "cpu"): (PREEMPT_P, 0), ("flavor-2", "cpu"): (PREEMPT_P, 0)},
            ("MayStopSearch", "MayStopSearch", "PreemptionOverBorrowing"),
            PREEMPT,
            0,
            id="needs preemption and candidates exist: bookmark names the first flavor",
        ),
        pytest.param(
            "2",
            "0",
            "2",
            BOTH_FULL,
            {("flavor-1", "cpu"): (NO_CANDIDATES, 0), ("flavor-2", "cpu"): (NO_CANDIDATES, 0)},
            ("MayStopSearch", "MayStopSearch", "PreemptionOverBorrowing"),
            PREEMPT,
            -1,
            id="needs preemption but no candidates: bookmark says start over whatever the policy",
        ),
    ],
)
def test_flavor_scan_records_last_tried_flavor(
    nominal: str,
    spare: str,
    request_: str,
    usage: dict[tuple[str, str], str],
    sim: Sim,
    fungibility: tuple[str, str, str | None],
    mode: Mode,
    idx: int,
) -> None:
    a = run(ps1(cpu=request_), bookmark_objs(nominal, spare, fungibility), cq="cq", usage={"cq": usage}, sim=sim)
    assert a.representative_mode() == mode
    assert a.last_state is not None
    assert a.last_state.last_tried == [{"cpu": idx}]


# -- podset_reducer_test.go TestSearch ------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod_sets", "limit", "want"),
    [
        pytest.param([], 10, None, id="empty"),
        pytest.param([(1, None), (2, 2)], 2, None, id="partial not available"),
        pytest.param([(5, 3), (5, 4), (5, 1), (5, 2)], 15, 15, id="partial available"),
        pytest.param([(5, 3), (5, None), (5, None), (5, None)], 19, 19, id="one partial available"),
        pytest.param([(5, 3), (5, 4), (5, 1), (5, 2)], 10, 10, id="to min"),
        pytest.param([(5, 3), (5, 4), (5, 1), (5, 2)], 20, 20, id="to max"),
        pytest.param([(150_000, 1)] * 8, 150_000, 150_000, id="no overflow"),
        pytest.param([(150_000, 1)] + [(1, None)] * 7, 150_000, 150_000, id="max pods on 1.27"),
        pytest.param([(0, 0)], 0, None, id="podset with replica count 0"),
    ],
)
def test_search_partial(pod_sets: list[tuple[int, int | None]], limit: int, want: int | None) -> None:
    """The largest total count (down to the minCounts) that passes `fits`; None when none does."""
    b = make_wl("wl")
    for i, (count, min_count) in enumerate(pod_sets):
        b = b.podset(f"ps{i + 1}", count, min_count, cpu="1")
    wl = parse_workload(b.obj())

    def fits(counts: list[int]) -> tuple[int | None, bool]:
        return sum(counts), sum(counts) <= limit

    assert search_partial(wl, fits) == want


def test_partial_admission_counts() -> None:
    """The reducer over the real assigner: 5 pods of minCount 2 on 3 cpu admit 3 pods."""
    objs = [*FLAVORS, make_cq(CQ).group(fq("default", cpu="3")).obj()]
    wl = make_wl("wl").podset("main", 5, 2, cpu="1").obj()

    def fits(counts: list[int]) -> tuple[Assignment | None, bool]:
        a = run(wl, objs, counts=counts)
        return a, a.representative_mode() == FIT

    a = search_partial(parse_workload(wl), fits)
    assert a is not None
    assert [(ps.name, ps.count) for ps in a.pod_sets] == [("main", 3)]
    assert a.total_requests() == {FlavorResource("default", "cpu"): 3000}
