"""Workload slices in the core: a replacement slice keeps the old slice's flavors, counts its quota
as its own, and names it in the Admit decision so the worker finishes it.

Ported from upstream v0.19.2 `pkg/scheduler/flavorassigner/flavorassigner_test.go` (the two
"workload slice preemption ..." cases of TestAssignFlavors), `pkg/scheduler/scheduler_test.go`
("workload-slice fits in single clusterQueue" of TestSchedule) and
`pkg/workloadslicing/workloadslicing_test.go` (TestReplacedWorkloadSlice); case ids are upstream's
names. The remaining cases pin what the e2e specs rely on: no admission gap, a pending slice while
the growth does not fit, and the old slice never preempted for its replacement.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.api import constants as c
from webhook.core.cache import Cache
from webhook.core.flavor_assigner import Mode, PreemptionPossibility, assign_flavors
from webhook.core.resource_node import ClusterQueueNode
from webhook.core.resources import FlavorResource
from webhook.core.snapshot import take_snapshot
from webhook.core.workload import WorkloadInfo, parse_workload

REPLACES = c.WORKLOAD_SLICE_REPLACEMENT_FOR


class _NoPreemption:
    def simulate_preemption(
        self, cq: ClusterQueueNode, wl: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[PreemptionPossibility, int]:
        return PreemptionPossibility.NO_CANDIDATES, 0


def _assign(one_cpu: str, old_flavor: str) -> Any:
    cache = Cache()
    for f in ("one", "two"):
        cache.upsert_resource_flavor(make_flavor(f).obj())
    cache.upsert_cluster_queue(
        make_cq("test-clusterqueue")
        .group(
            fq("one", cpu=(one_cpu, None, None), memory=("1Gi", None, None)),
            fq("two", cpu=("4", None, None), memory=("2Gi", None, None)),
        )
        .obj()
    )
    old = parse_workload(
        make_wl("old")
        .podset("main", 1, cpu="2", memory="10Mi")
        .reserve("test-clusterqueue", psa("main", 1, cpu=(old_flavor, "2"), memory=(old_flavor, "10Mi")))
        .obj()
    )
    new = parse_workload(make_wl("new").annotation(REPLACES, "ns/old").podset("main", 1, cpu="3", memory="10Mi").obj())
    snap = take_snapshot(cache)
    return assign_flavors(
        new, snap.cluster_queues["test-clusterqueue"], snap.resource_flavors, _NoPreemption(), replaces=old
    )


def test_workload_slice_preemption_fits_in_the_original_workload_resource_flavor() -> None:
    a = _assign("3", "two")
    assert a.representative_mode() == Mode.FIT
    assert {r: fa.name for r, fa in a.pod_sets[0].flavors.items()} == {"cpu": "two", "memory": "two"}
    assert a.pod_sets[0].requests == {"cpu": 3000, "memory": 10 * 2**20}
    # Only the growth counts: 1 CPU more, no more memory.
    assert a.total_requests() == {FlavorResource("two", "cpu"): 1000}
    assert a.pod_sets[0].attempts["one"][1] == "NoMatchingFlavor"


def test_workload_slice_preemption_does_not_fit_in_the_original_workload_resource_flavor() -> None:
    a = _assign("500m", "one")
    assert a.representative_mode() == Mode.NO_FIT
    assert sorted(a.pod_sets[0].reasons) == [
        "could not assign two flavor since the original workload is assigned: one",
        "could not assign two flavor since the original workload is assigned: one",
        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (1) > maximum capacity (500m)",
    ]
    assert a.no_fit_reason == "ExceedsMaxQuota"


def _sales(cpu: str = "50") -> list[dict[str, Any]]:
    return [
        make_flavor("default").obj(),
        make_cq("sales").preemption(within="LowerPriority").group(fq("default", cpu=(cpu, None, None))).obj(),
        make_lq("main", "sales", "sales"),
    ]


def _old(count: int = 10, priority: int = 0) -> dict[str, Any]:
    return (
        make_wl("foo-1", "sales")
        .queue("main")
        .priority(priority)
        .podset("one", count, cpu="1")
        .reserve("sales", psa("one", count, cpu=("default", str(count))))
        .obj()
    )


def _new(count: int = 15, old: str = "sales/foo-1") -> dict[str, Any]:
    return (
        make_wl("foo-2", "sales").queue("main").created(1).annotation(REPLACES, old).podset("one", count, cpu="1").obj()
    )


def test_workload_slice_fits_in_single_cluster_queue() -> None:
    core = make_core(*_sales(), _old(), _new(), namespaces={"sales": {}}, elastic_jobs=True)
    result = core.schedule(T0)
    [admit] = result.admitted
    assert str(admit.key) == "sales/foo-2"
    assert dict(admit.admission) == {
        "clusterQueue": "sales",
        "podSetAssignments": [
            {"name": "one", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "15"}, "count": 15}
        ],
    }
    assert admit.replaces is not None and str(admit.replaces.key) == "sales/foo-1"
    assert admit.replaces.cluster_queue == "sales"
    [finished] = admit.replaces.conditions
    assert (finished.type, finished.status, finished.reason) == ("Finished", "True", "WorkloadSliceReplaced")
    assert (
        finished.message
        == "Replaced to accommodate a workload (UID: uid-foo-2, JobUID: ) due to workload slice aggregation"
    )


def test_replacement_waits_for_the_growth_to_fit_and_keeps_the_old_slice() -> None:
    # 10 of 12 CPUs are held by the old slice: 15 pods need 5 more, 12 pods only 2.
    core = make_core(*_sales("12"), _old(), _new(15), namespaces={"sales": {}}, elastic_jobs=True)
    result = core.schedule(T0)
    assert result.admitted == [] and result.preempted == []
    [pending] = result.pending
    assert str(pending.key) == "sales/foo-2"
    assert pending.message.endswith("insufficient unused quota for cpu in flavor default, 3 more needed")
    assert core.cache.is_reserving("sales/foo-1")


def test_replacement_within_quota_is_admitted_next_to_the_old_slice() -> None:
    core = make_core(*_sales("12"), _old(), _new(12), namespaces={"sales": {}}, elastic_jobs=True)
    [admit] = core.schedule(T0).admitted
    assert admit.replaces is not None
    # No gap: both slices hold quota until the old one's Finished event arrives.
    assert core.cache.is_reserving("sales/foo-1") and core.cache.is_reserving("sales/foo-2")


def test_old_slice_is_never_a_preemption_target_of_its_replacement() -> None:
    # A lower-priority workload holds 2 CPUs; the replacement needs them and preempts it, not foo-1.
    low = (
        make_wl("low", "sales")
        .queue("main")
        .priority(-1)
        .podset("one", 2, cpu="1")
        .reserve("sales", psa("one", 2, cpu=("default", "2")))
        .obj()
    )
    core = make_core(*_sales("12"), _old(), low, _new(12), namespaces={"sales": {}}, elastic_jobs=True)
    result = core.schedule(T0)
    assert [str(v.key) for p in result.preempted for v in p.targets] == ["sales/low"]
    assert result.admitted == []


def test_without_the_gate_the_annotation_is_ignored() -> None:
    core = make_core(*_sales("12"), _old(), _new(12), namespaces={"sales": {}})
    result = core.schedule(T0)
    assert result.admitted == []


@pytest.mark.parametrize(
    ("replaces", "found"),
    [
        pytest.param("", False, id="WorkloadWithoutReplacementAnnotation"),
        pytest.param("sales/missing", False, id="EdgeCase_ReplacedWorkloadIsNotFound_NotInClusterQueue"),
        pytest.param("sales/foo-1", True, id="ReplacedWorkloadIsFound"),
    ],
)
def test_replaced_workload_slice(replaces: str, found: bool) -> None:
    new = make_wl("foo-2", "sales").queue("main").podset("one", 12, cpu="1")
    if replaces:
        new = new.annotation(REPLACES, replaces)
    core = make_core(*_sales("12"), _old(), new.obj(), namespaces={"sales": {}}, elastic_jobs=True)
    admitted = core.schedule(T0).admitted
    assert bool(admitted) == found
    assert all(a.replaces is not None for a in admitted)


def test_cross_namespace_replacement_is_rejected() -> None:
    other = (
        make_wl("foo-1", "other")
        .queue("main")
        .podset("one", 10, cpu="1")
        .reserve("sales", psa("one", 10, cpu=("default", "10")))
        .obj()
    )
    core = make_core(
        *_sales("12"), other, _new(12, old="other/foo-1"), namespaces={"sales": {}, "other": {}}, elastic_jobs=True
    )
    assert core.schedule(T0).admitted == []
