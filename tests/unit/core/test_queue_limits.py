"""A LocalQueue's limits agree with what the flavor assigner lets a workload have."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_cohort, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core.cache import Cache
from webhook.core.queue_limits import local_queue_limits
from webhook.core.resources import FlavorResource
from webhook.core.workload import parse_workload


def cohort_objects() -> list[dict[str, Any]]:
    """Cohort `co`: cq-a (10 cpu, may borrow 4) uses 8 (5 from team/main, 3 from other/x); cq-b
    (6 cpu, lends at most 2) uses nothing; cq-c (5 cpu) uses 6, borrowing 1."""
    return [
        make_flavor("default").obj(),
        make_cq("cq-a").cohort("co").group(fq("default", cpu=("10", "4", None))).obj(),
        make_cq("cq-b").cohort("co").group(fq("default", cpu=("6", None, "2"))).obj(),
        make_cq("cq-c").cohort("co").group(fq("default", cpu="5")).obj(),
        make_lq("main", "team", "cq-a"),
        make_lq("x", "other", "cq-a"),
        make_lq("lq", "ns", "cq-c"),
        make_wl("a1", "team").queue("main").request(cpu="5").reserve("cq-a", psa(cpu=("default", "5"))).obj(),
        make_wl("a2", "other").queue("x").request(cpu="3").reserve("cq-a", psa(cpu=("default", "3"))).obj(),
        make_wl("c1", "ns").queue("lq").request(cpu="6").reserve("cq-c", psa(cpu=("default", "6"))).obj(),
    ]


def cache_of(objs: list[dict[str, Any]]) -> Cache:
    cache = Cache()
    for o in objs:
        kind = o["kind"]
        if kind == "ClusterQueue":
            cache.upsert_cluster_queue(o)
        elif kind == "Cohort":
            cache.upsert_cohort(o)
        elif kind == "LocalQueue":
            cache.upsert_local_queue(o)
        elif kind == "Workload":
            cache.upsert_workload(parse_workload(o))
    return cache


def test_limits_in_a_cohort_with_borrowing_and_lending_limits() -> None:
    lim = local_queue_limits(cache_of(cohort_objects()), "team/main")
    assert lim is not None and (lim.cluster_queue, lim.cohort) == ("cq-a", "co")
    [cpu] = lim.resources
    # The cohort holds 10 + 2 (cq-b lends 2 of its 6) + 5 = 17 and uses 8 + 6 = 14: 3 are free, of
    # which cq-a's own unused 2 and 1 more borrowed (within its borrowing limit of 4).
    assert cpu.flavor == FlavorResource("default", "cpu")
    assert (cpu.nominal, cpu.borrowing_limit, cpu.lending_limit) == (10_000, 4_000, None)
    assert (cpu.used, cpu.used_by_local_queue) == (8_000, 5_000)
    assert (cpu.available, cpu.borrowable, cpu.max_available) == (3_000, 1_000, 14_000)


def test_borrowing_limit_caps_what_can_be_borrowed() -> None:
    objs = cohort_objects()
    objs[1] = make_cq("cq-a").cohort("co").group(fq("default", cpu=("10", "0", None))).obj()
    [cpu] = local_queue_limits(cache_of(objs), "team/main").resources  # type: ignore[union-attr]
    assert (cpu.available, cpu.borrowable, cpu.max_available) == (2_000, 0, 10_000)


def test_outside_a_cohort_nothing_is_borrowed() -> None:
    objs = [
        make_flavor("f").obj(),
        make_cq("solo").group(fq("f", cpu="4", memory="8Gi")).obj(),
        make_lq("q", "ns", "solo"),
        make_wl("w", "ns").queue("q").request(cpu="1").reserve("solo", psa(cpu=("f", "1"))).obj(),
    ]
    lim = local_queue_limits(cache_of(objs), "ns/q")
    assert lim is not None and lim.cohort == ""
    cpu, mem = lim.resources
    assert (cpu.borrowing_limit, cpu.available, cpu.borrowable, cpu.max_available) == (0, 3_000, 0, 4_000)
    assert (mem.flavor.resource, mem.available, mem.used_by_local_queue) == ("memory", 8 * 2**30, 0)


def test_unknown_local_queue_and_missing_cluster_queue() -> None:
    cache = cache_of([make_lq("q", "ns", "nowhere")])
    assert local_queue_limits(cache, "ns/other") is None
    lim = local_queue_limits(cache, "ns/q")
    assert lim is not None and (lim.cluster_queue, lim.resources) == ("nowhere", ())


def test_a_cohort_quota_adds_to_what_can_be_borrowed() -> None:
    objs = [*cohort_objects(), make_cohort("co").group(fq("default", cpu="2")).obj()]
    [cpu] = local_queue_limits(cache_of(objs), "team/main").resources  # type: ignore[union-attr]
    assert (cpu.available, cpu.borrowable) == (5_000, 3_000)


@pytest.mark.parametrize("extra", [0, 1])
def test_available_is_what_the_scheduler_admits_without_preemption(extra: int) -> None:
    """A workload asking for exactly `available` is admitted; one more millicore is not."""
    from tests.builders import make_core

    objs = cohort_objects()
    [cpu] = local_queue_limits(cache_of(objs), "team/main").resources  # type: ignore[union-attr]
    ask = f"{cpu.available + extra}m"
    core = make_core(*objs, namespaces={n: {"kubernetes.io/metadata.name": n} for n in ("team", "other", "ns")})
    core.on_workload(make_wl("next", "team").queue("main").request(cpu=ask).obj(), T0)
    admitted = [d.key for d in core.schedule(T0).admitted]
    assert admitted == (["team/next"] if extra == 0 else [])
