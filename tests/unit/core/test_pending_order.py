"""The pending order behind the visibility API: upstream's queue order, positions, paging."""

from __future__ import annotations

import random

import pytest

from tests.builders import WorkloadBuilder
from webhook.core.pending_order import OwnerRef, PendingOrder, pending_workload
from webhook.core.workload import WorkloadKey


def wl(name: str, ns: str = "ns", *, queue: str = "lq", priority: int = 0, created: float = 0) -> WorkloadBuilder:
    return WorkloadBuilder(name, ns).queue(queue).priority(priority).created(created).request(cpu="1")


def add(order: PendingOrder, b: WorkloadBuilder) -> None:
    obj = b.obj()
    meta = obj["metadata"]
    order.set_workload(WorkloadKey(f"{meta['namespace']}/{meta['name']}"), pending_workload(obj))


def names(page: list | None) -> list[tuple[str, int, int]]:
    assert page is not None
    return [(p.workload.name, p.in_cluster_queue, p.in_local_queue) for p in page]


@pytest.fixture
def order() -> PendingOrder:
    o = PendingOrder()
    o.set_cluster_queue("cq", True)
    o.set_local_queue("ns/a", "cq")
    o.set_local_queue("ns/b", "cq")
    return o


def test_order_is_priority_then_age_then_uid_with_per_queue_positions(order: PendingOrder) -> None:
    add(order, wl("low", queue="a", priority=1, created=0))
    add(order, wl("high", queue="b", priority=9, created=5))
    add(order, wl("mid-old", queue="a", priority=5, created=1))
    add(order, wl("mid-new", queue="b", priority=5, created=2))
    add(order, wl("mid-new-2", queue="b", priority=5, created=2).uid("uid-zzz"))
    assert names(order.cluster_queue_page("cq", offset=0, limit=10)) == [
        ("high", 0, 0),
        ("mid-old", 1, 0),
        ("mid-new", 2, 1),
        ("mid-new-2", 3, 2),
        ("low", 4, 1),
    ]
    assert names(order.local_queue_page("ns/b", offset=0, limit=10)) == [
        ("high", 0, 0),
        ("mid-new", 2, 1),
        ("mid-new-2", 3, 2),
    ]


@pytest.mark.parametrize(
    ("offset", "limit", "want"),
    [
        pytest.param(0, 2, ["w0", "w1"], id="first page"),
        pytest.param(3, 2, ["w3", "w4"], id="middle page"),
        pytest.param(4, 10, ["w4", "w5"], id="last page is short"),
        pytest.param(9, 10, [], id="offset past the end"),
        pytest.param(0, 0, [], id="limit 0"),
    ],
)
def test_pages(order: PendingOrder, offset: int, limit: int, want: list[str]) -> None:
    for i in range(6):
        add(order, wl(f"w{i}", queue="ab"[i % 2], created=i))
    page = order.cluster_queue_page("cq", offset=offset, limit=limit)
    assert [(p.workload.name, p.in_cluster_queue) for p in page or []] == [(n, int(n[1:])) for n in want]
    # positions in the LocalQueue are ranks among that queue's workloads, wherever the page starts
    assert all(p.in_local_queue == int(p.workload.name[1:]) // 2 for p in page or [])


def test_local_queue_pages_number_cluster_queue_positions(order: PendingOrder) -> None:
    for i in range(6):
        add(order, wl(f"w{i}", queue="ab"[i % 2], created=i))
    assert names(order.local_queue_page("ns/b", offset=1, limit=2)) == [("w3", 3, 1), ("w5", 5, 2)]


def test_unknown_queues_are_none_and_a_local_queue_without_its_cluster_queue_is_empty(order: PendingOrder) -> None:
    add(order, wl("w", queue="c"))
    assert order.cluster_queue_page("nope", offset=0, limit=10) is None
    assert order.local_queue_page("ns/c", offset=0, limit=10) is None  # no such LocalQueue yet
    order.set_local_queue("ns/c", "missing-cq")
    assert order.local_queue_page("ns/c", offset=0, limit=10) == []
    order.set_cluster_queue("missing-cq", True)  # the ClusterQueue appears: it collects the queue's workloads
    assert names(order.cluster_queue_page("missing-cq", offset=0, limit=10)) == [("w", 0, 0)]


def test_stopped_or_moved_local_queues_take_their_workloads_along(order: PendingOrder) -> None:
    add(order, wl("a1", queue="a", created=1))
    add(order, wl("b1", queue="b", created=2))
    order.set_local_queue("ns/a", None)  # stopped (or deleted)
    assert names(order.cluster_queue_page("cq", offset=0, limit=10)) == [("b1", 0, 0)]
    assert order.local_queue_page("ns/a", offset=0, limit=10) is None
    order.set_cluster_queue("other", True)
    order.set_local_queue("ns/a", "other")
    assert names(order.cluster_queue_page("other", offset=0, limit=10)) == [("a1", 0, 0)]
    order.set_cluster_queue("cq", False)
    assert order.cluster_queue_page("cq", offset=0, limit=10) is None


def test_workloads_leave_when_reserved_finished_or_deleted_and_move_when_updated(order: PendingOrder) -> None:
    add(order, wl("x", queue="a", priority=1))
    add(order, wl("y", queue="a", priority=2))
    add(order, wl("x", queue="a", priority=3))  # a priority change re-sorts
    assert names(order.cluster_queue_page("cq", offset=0, limit=10)) == [("x", 0, 0), ("y", 1, 1)]
    add(order, wl("x", queue="b", priority=3))  # moved to another LocalQueue
    assert names(order.local_queue_page("ns/b", offset=0, limit=10)) == [("x", 0, 0)]
    add(order, wl("y", queue="a").reserve("cq"))
    add(order, wl("x", queue="b").finished())
    assert order.cluster_queue_page("cq", offset=0, limit=10) == []
    assert len(order) == 0


def test_the_api_fields_come_from_the_workload() -> None:
    obj = wl("w").obj()
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "j",
            "uid": "u",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    entry = pending_workload(obj)
    assert entry is not None
    assert (entry.namespace, entry.name, entry.local_queue, entry.creation_timestamp) == (
        "ns",
        "w",
        "lq",
        obj["metadata"]["creationTimestamp"],
    )
    assert entry.owner_references == (OwnerRef("batch/v1", "Job", "j", "u"),)
    assert pending_workload(wl("inactive").obj() | {"spec": {**obj["spec"], "active": False}}) is None


def test_matches_a_full_sort_under_random_updates() -> None:
    """Upstream sorts a copy of the queue per request; the incremental lists must agree with it."""
    rng = random.Random(7)
    order = PendingOrder()
    order.set_cluster_queue("cq", True)
    for q in "abc":
        order.set_local_queue(f"ns/{q}", "cq")
    live: dict[str, tuple[int, int, str, str]] = {}
    for step in range(400):
        name = f"w{rng.randrange(60)}"
        if rng.random() < 0.2:
            order.set_workload(WorkloadKey(f"ns/{name}"), None)
            live.pop(name, None)
            continue
        prio, created, queue = rng.randrange(4), rng.randrange(30), rng.choice("abc")
        add(order, wl(name, queue=queue, priority=prio, created=created))
        live[name] = (-prio, created, f"uid-{name}", queue)
        if step % 50 == 0:
            want = sorted(live, key=lambda n: live[n][:3])
            got = order.cluster_queue_page("cq", offset=0, limit=1000) or []
            assert [p.workload.name for p in got] == want
            for p in got:
                same_queue = [n for n in want if live[n][3] == live[p.workload.name][3]]
                assert p.in_local_queue == same_queue.index(p.workload.name)


@pytest.mark.parametrize(
    ("offset", "limit", "want"),
    [
        pytest.param(
            0,
            10,
            [("b-high", 0, 0), ("c-mid", 1, 0), ("b-low", 2, 1), ("a-top", 3, 0)],
            id="lowest usage first, equal usages merged by the heap order",
        ),
        pytest.param(2, 1, [("b-low", 2, 1)], id="a page inside the merged group"),
        pytest.param(3, 5, [("a-top", 3, 0)], id="a page after the whole group"),
    ],
)
def test_admission_fair_sharing_ranks_by_local_queue_usage(order: PendingOrder, offset, limit, want) -> None:
    order.set_local_queue("ns/c", "cq")
    order.set_fair_order("cq", True)
    for lq, usage in (("ns/a", 5.0), ("ns/b", 1.0), ("ns/c", 1.0)):
        order.set_local_queue_usage(lq, usage)
    add(order, wl("a-top", queue="a", priority=100))
    add(order, wl("b-high", queue="b", priority=9))
    add(order, wl("b-low", queue="b", priority=1))
    add(order, wl("c-mid", queue="c", priority=5))
    assert names(order.cluster_queue_page("cq", offset=offset, limit=limit)) == want
    page = [p for lq in ("ns/a", "ns/b", "ns/c") for p in names(order.local_queue_page(lq, offset=0, limit=10))]
    assert sorted(page, key=lambda p: p[1]) == [
        ("b-high", 0, 0),
        ("c-mid", 1, 0),
        ("b-low", 2, 1),
        ("a-top", 3, 0),
    ], "each LocalQueue page shows the same ClusterQueue positions"
    order.set_fair_order("cq", False)
    assert names(order.cluster_queue_page("cq", offset=0, limit=1)) == [("a-top", 0, 0)]
