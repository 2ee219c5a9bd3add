from __future__ import annotations

import pytest

from tests.builders import fq, make_cohort, make_cq, make_wl
from tests.unit.dashboard.fakes import info_of, two_teams
from webhook.core import model
from webhook.dashboard import views
from webhook.dashboard.store import Kind, Store


def cq_with_status(name: str, cohort: str, *flavors: dict, used: dict[str, tuple[str, str]]) -> dict:
    obj = make_cq(name).cohort(cohort).group(*flavors).obj()
    obj["status"] = {
        "pendingWorkloads": 2,
        "reservingWorkloads": 1,
        "admittedWorkloads": 1,
        "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
        "flavorsReservation": [
            {
                "name": "default",
                "resources": [
                    {"name": res, "total": total, "borrowed": borrowed} for res, (total, borrowed) in used.items()
                ],
            }
        ],
    }
    return obj


def test_overview_bars_counts_and_lent_estimate() -> None:
    store = Store()
    store.replace(
        Kind.CLUSTER_QUEUES,
        [
            cq_with_status("borrower", "team", fq("default", cpu=("4", "6", None)), used={"cpu": ("7", "3")}),
            cq_with_status("lender", "team", fq("default", cpu="10"), used={"cpu": ("2", "0")}),
        ],
    )
    ov = views.overview(store, cluster_queues=True, flavors=True, cohorts=True)
    borrower, lender = ov.cluster_queues
    assert (borrower.name, borrower.active, borrower.pending, borrower.admitted) == ("borrower", True, 2, 1)
    bar = borrower.bars[0]
    assert (bar.used, bar.nominal, bar.borrowing_limit, bar.borrowed, bar.scale) == (
        7000,
        4000,
        6000,
        3000,
        10000,
    )  # milli-CPU
    assert (bar.percent(bar.used), bar.text(bar.used), bar.text(None)) == (70.0, "7", "unlimited")
    assert lender.bars[0].lent == 3000  # the only member with idle quota lent all the cohort borrows
    assert ov.cohorts == (views.CohortNode("team", (), ("borrower", "lender")),)


def test_overview_leaves_out_what_the_caller_may_not_list() -> None:
    ov = views.overview(two_teams(), cluster_queues=False, flavors=False, cohorts=True)
    assert ov == views.Overview((), (), ())


@pytest.mark.parametrize(
    ("cohorts", "expected"),
    [
        pytest.param(
            [make_cohort("root").obj(), make_cohort("child").cohort("root").obj()],
            (views.CohortNode("root", (views.CohortNode("child", (), ("q",)),), ()),),
            id="nested cohorts",
        ),
        pytest.param(
            [make_cohort("x").cohort("y").obj(), make_cohort("y").cohort("x").obj()],
            (),
            id="a parent cycle has no root and never recurses",
        ),
    ],
)
def test_cohort_tree(cohorts, expected) -> None:
    spec = (
        model.parse_cluster_queue(make_cq("q").cohort("child").obj())
        if expected
        else model.parse_cluster_queue(make_cq("q").obj())
    )
    assert views.cohort_tree([spec], cohorts) == expected


def test_positions_follow_the_core_order_across_namespaces() -> None:
    store = two_teams()
    pos = views.positions(store.workloads().values(), {"team-a/lq": "cq", "team-b/lq": "cq"})
    # higher priority first, then older; positions per LocalQueue count that queue only
    assert pos == {"team-b/b-high": (1, 1), "team-a/a-old": (2, 1), "team-b/b-low": (3, 2), "team-a/a-new": (4, 2)}


def test_workloads_page_shows_only_the_given_namespaces_with_global_positions() -> None:
    page = views.workloads_page(two_teams(), frozenset({"team-a"}), local_queue_namespaces=frozenset({"team-a"}))
    assert [(r.name, r.state, r.position, r.queue_position) for r in page.rows] == [
        ("a-old", views.State.PENDING, 2, 1),
        ("a-new", views.State.PENDING, 4, 2),
        ("a-running", views.State.ADMITTED, None, None),
    ]
    assert page.namespaces == ("team-a",)
    assert [(lq.namespace, lq.pending, lq.admitted) for lq in page.local_queues] == [("team-a", 2, 1)]


@pytest.mark.parametrize(
    ("filters", "names"),
    [
        pytest.param({"state": "Admitted"}, ["a-running"], id="by state"),
        pytest.param({"namespace": "team-b"}, ["b-high", "b-low"], id="by namespace"),
        pytest.param({"queue": "other"}, [], id="by queue"),
    ],
)
def test_workloads_page_filters(filters, names) -> None:
    assert [
        r.name for r in views.workloads_page(two_teams(), None, local_queue_namespaces=None, **filters).rows
    ] == names


@pytest.mark.parametrize(
    ("workloads", "local_queues", "namespace", "shown"),
    [
        pytest.param(frozenset(), frozenset(), "team-b", [], id="no access, asking for another namespace"),
        pytest.param(frozenset({"team-a"}), frozenset(), "team-b", [], id="asking outside a one-namespace grant"),
        pytest.param(frozenset({"team-a"}), frozenset(), "", [], id="workloads granted, localqueues not"),
        pytest.param(frozenset(), frozenset({"team-b"}), "", [("team-b", "lq", "cq")], id="localqueues granted only"),
        pytest.param(None, frozenset({"team-a"}), "team-b", [], id="all workloads, asking outside the lq grant"),
        pytest.param(frozenset(), None, "team-b", [("team-b", "lq", "cq")], id="all localqueues, asking for one"),
    ],
)
def test_local_queue_rows_follow_the_localqueues_grant_only(workloads, local_queues, namespace, shown) -> None:
    """An empty grant is no grant (never "no filter"), and the workloads grant never opens LocalQueues."""
    page = views.workloads_page(two_teams(), workloads, local_queue_namespaces=local_queues, namespace=namespace)
    assert [(lq.namespace, lq.name, lq.cluster_queue) for lq in page.local_queues] == shown


def test_state_of() -> None:
    assert views.state_of(info_of(make_wl("w").finished().obj())) is views.State.FINISHED
    assert views.state_of(info_of(make_wl("w").reserve("cq", admitted=False).obj())) is views.State.QUOTA_RESERVED


def test_a_delayed_placement_says_who_places_it() -> None:
    def raw(state: str) -> dict[str, object]:
        assignment = {"name": "main", "count": 2, "flavors": {"cpu": "tas"}, "delayedTopologyRequest": state}
        return {"status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [assignment]}}}

    assert views.placement(raw("Pending"))[0].topology == (
        "placed later (by the MultiKueue worker, or once provisioned nodes exist)"
    )
    assert views.placement(raw("Ready"))[0].topology == "placed by the MultiKueue worker"
    assert views.multikueue_placement({"status": {"nominatedClusterNames": ["w1", "w2"]}}) == (
        "dispatched to worker clusters w1, w2; none has admitted it yet"
    )
    assert views.multikueue_placement({"status": {}}) == ""
