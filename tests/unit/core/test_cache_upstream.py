"""Upstream's cache and queue-status unit-test scenarios, driven through `AdmissionCore`.

Ported from `pkg/cache/scheduler/cache_test.go` (TestClusterQueueReadiness, TestClusterQueueUsage,
TestLocalQueueUsage), `pkg/cache/scheduler/clusterqueue_test.go` (TestClusterQueueUpdateWithFlavors,
TestClusterQueueUpdateWithAdmissionCheck) and `pkg/controller/core/localqueue_controller_test.go`
(LocalQueue Active reasons) at upstream commit ff69552e79. Row ids are upstream's case names.
What upstream reads from its cache (`ClusterQueueReadiness`, `Usage`, `LocalQueueUsage`) we read
from `cluster_queue_status` / `local_queue_status`; "stops admitting" is checked by scheduling.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa, ts
from webhook.core import AdmissionCore
from webhook.core.resources import FlavorResource

TERMINATING_MSG = "Can't admit new workloads; clusterQueue is terminating"


def with_checks(cq: dict[str, Any], *names: str) -> dict[str, Any]:
    """ClusterQueue requiring admission checks (v1beta2 `admissionChecksStrategy`)."""
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in names]}
    return cq


def deleting(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the API shows it once deleted while a finalizer holds it."""
    obj["metadata"]["deletionTimestamp"] = ts(0)
    obj["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    return obj


def active_condition(core: AdmissionCore, name: str) -> tuple[str, str, str]:
    (cond,) = core.cluster_queue_status(name)["conditions"]
    assert cond["type"] == "Active"
    return cond["status"], cond["reason"], cond["message"]


def core_with(*objs: dict[str, Any], checks: dict[str, bool] | None = None) -> AdmissionCore:
    core: AdmissionCore = make_core()
    for name, active in (checks or {}).items():
        core.on_admission_check(name, active, T0)
    for o in objs:
        {
            "ResourceFlavor": core.on_resource_flavor,
            "ClusterQueue": core.on_cluster_queue,
            "LocalQueue": core.on_local_queue,
            "Workload": core.on_workload,
        }[o["kind"]](o, T0)
    return core


# -- TestClusterQueueReadiness --------------------------------------------------------------------
def _base_queue() -> dict[str, Any]:
    return with_checks(make_cq("queue1").group(fq("flavor1", cpu=("10", "10", None))).obj(), "check1")


READINESS: dict[str, tuple[list[dict[str, Any]], dict[str, bool], tuple[str, str, str]]] = {
    "queue not found": ([], {}, ("False", "NotFound", "ClusterQueue not found")),
    "flavor not found": (
        [_base_queue()],
        {"check1": True},
        ("False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): flavor1."),
    ),
    "check not found": (
        [make_flavor("flavor1").obj(), _base_queue()],
        {},
        ("False", "AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): check1."),
    ),
    "check inactive": (
        [make_flavor("flavor1").obj(), _base_queue()],
        {"check1": False},
        (
            "False",
            "AdmissionCheckInactive",
            "Can't admit new workloads: references inactive AdmissionCheck(s): check1.",
        ),
    ),
    "flavor and check not found": (
        [_base_queue()],
        {},
        (
            "False",
            "FlavorNotFound",
            "Can't admit new workloads: references missing ResourceFlavor(s): flavor1, references missing AdmissionCheck(s): check1.",
        ),
    ),
    "terminating": (
        [make_flavor("flavor1").obj(), deleting(_base_queue())],
        {"check1": True},
        ("False", "Terminating", TERMINATING_MSG),
    ),
    "ready": (
        [make_flavor("flavor1").obj(), _base_queue()],
        {"check1": True},
        ("True", "Ready", "Can admit new workloads"),
    ),
    "stopped": (
        [make_cq("queue1").stop("HoldAndDrain").obj()],
        {},
        ("False", "Stopped", "Can't admit new workloads: is stopped."),
    ),
}


@pytest.mark.parametrize(("objs", "checks", "want"), list(READINESS.values()), ids=list(READINESS))
def test_cluster_queue_readiness(
    objs: list[dict[str, Any]], checks: dict[str, bool], want: tuple[str, str, str]
) -> None:
    core = core_with(*objs, checks=checks)
    assert active_condition(core, "queue1") == want
    assert core.cache.readiness("queue1").active is (want[0] == "True")
    assert (core.cache.readiness("queue1").status == "terminating") is (want[1] == "Terminating")


# -- TestClusterQueueUpdateWithAdmissionCheck (MultiKueue cases left out) ---------------------------
def _cq_with_three_checks(name: str) -> dict[str, Any]:
    return with_checks(make_cq(name).obj(), "check1", "check2", "check3")


READY = ("True", "Ready", "Can admit new workloads")
AC_CASES: dict[str, tuple[str, bool, dict[str, bool], tuple[str, str, str]]] = {}
for _suffix, _cq in (("", "cq"), (" with an AC strategy", "cq2")):
    _all = {"check1": True, "check2": True, "check3": True}
    _two = {"check1": True, "check2": True}
    AC_CASES[f"Pending clusterQueue{_suffix} updated valid AC list"] = (_cq, False, _all, READY)
    AC_CASES[f"Active clusterQueue{_suffix} updated with not found AC"] = (
        _cq,
        False,
        _two,
        ("False", "AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): check3."),
    )
    AC_CASES[f"Active clusterQueue{_suffix} updated with inactive AC"] = (
        _cq,
        False,
        {**_two, "check3": False},
        (
            "False",
            "AdmissionCheckInactive",
            "Can't admit new workloads: references inactive AdmissionCheck(s): check3.",
        ),
    )
    AC_CASES[f"Terminating clusterQueue{_suffix} updated with valid AC list"] = (
        _cq,
        True,
        _all,
        ("False", "Terminating", TERMINATING_MSG),
    )
    AC_CASES[f"Terminating clusterQueue{_suffix} updated with not found AC"] = (
        _cq,
        True,
        _two,
        ("False", "Terminating", TERMINATING_MSG),
    )
AC_CASES["Active clusterQueue with an AC strategy updated"] = (
    "cq2",
    False,
    {"check1": True, "check2": True, "check3": True},
    READY,
)


@pytest.mark.parametrize(("cq", "terminating", "checks", "want"), list(AC_CASES.values()), ids=list(AC_CASES))
def test_cluster_queue_update_with_admission_check(
    cq: str, terminating: bool, checks: dict[str, bool], want: tuple[str, str, str]
) -> None:
    obj = _cq_with_three_checks(cq)
    core = core_with(deleting(obj) if terminating else obj, checks=checks)
    assert active_condition(core, cq) == want


def test_missing_and_inactive_admission_checks_are_listed_sorted() -> None:
    """Upstream sorts the names (`updateWithAdmissionChecks`), whatever the spec order."""
    core = core_with(with_checks(make_cq("cq").obj(), "zeta", "alpha", "mid"), checks={"mid": False})
    assert active_condition(core, "cq") == (
        "False",
        "AdmissionCheckNotFound",
        "Can't admit new workloads: references missing AdmissionCheck(s): alpha,zeta, references inactive AdmissionCheck(s): mid.",
    )


# -- TestClusterQueueUpdateWithFlavors ------------------------------------------------------------
def _x86_cq() -> dict[str, Any]:
    return make_cq("cq").group(fq("x86", cpu="5")).obj()


FLAVOR_CASES: dict[str, tuple[bool, bool, bool, str]] = {
    # name: (terminating, flavor known before, flavor known after, want cache status)
    "Pending clusterQueue updated existent flavors": (False, False, True, "active"),
    "Active clusterQueue updated with not found flavors": (False, True, False, "pending"),
    "Terminating clusterQueue updated with existent flavors": (True, False, True, "terminating"),
    "Terminating clusterQueue updated with not found flavors": (True, True, False, "terminating"),
}


@pytest.mark.parametrize(
    ("terminating", "before", "after", "want"), list(FLAVOR_CASES.values()), ids=list(FLAVOR_CASES)
)
def test_cluster_queue_update_with_flavors(terminating: bool, before: bool, after: bool, want: str) -> None:
    cq = _x86_cq()
    core = core_with(*([make_flavor("x86").obj()] if before else []), deleting(cq) if terminating else cq)
    if after:
        core.on_resource_flavor(make_flavor("x86").obj(), T0)
    else:
        core.on_resource_flavor_deleted("x86", T0)
    assert core.cache.readiness("cq").status == want


# -- a ClusterQueue deleted while workloads still hold quota in it --------------------------------
def test_terminating_cluster_queue_keeps_usage_and_stops_admitting() -> None:
    """deletionTimestamp set, finalizer held by a reserving workload: Active=False/Terminating."""
    cq = make_cq("cq").group(fq("default", cpu="10")).obj()
    running = make_wl("running").request(cpu="4").reserve("cq", psa(cpu=("default", "4"))).obj()
    core = core_with(make_flavor("default").obj(), cq, make_lq("lq", "ns", "cq"), running)
    core.on_cluster_queue(deleting(cq), T0)
    core.on_workload(make_wl("new").request(cpu="1").obj(), T0)

    assert active_condition(core, "cq") == ("False", "Terminating", TERMINATING_MSG)
    status = core.cluster_queue_status("cq")
    assert (status["reservingWorkloads"], status["admittedWorkloads"], status["pendingWorkloads"]) == (1, 1, 1)
    assert status["flavorsReservation"] == [
        {"name": "default", "resources": [{"name": "cpu", "total": "4", "borrowed": "0"}]}
    ]

    result = core.schedule(T0)
    assert result.admitted == []
    assert [(str(d.key), d.reason, d.message) for d in result.blocked] == [
        ("ns/new", "Inadmissible", "ClusterQueue cq is inactive")  # UnadmittedWorkloadsObservability off
    ]
    lq = core.local_queue_status("ns", "lq")["conditions"][0]
    assert (lq["status"], lq["reason"], lq["message"]) == (
        "False",
        "ClusterQueueIsInactive",
        "Can't submit new workloads to clusterQueue",
    )

    # Once the last reserving workload is gone the finalizer is released and the object deleted.
    core.on_workload_deleted("ns", "running", T0)
    core.on_cluster_queue_deleted("cq", T0)
    assert active_condition(core, "cq") == ("False", "NotFound", "ClusterQueue not found")


def test_terminating_cluster_queue_cannot_be_reactivated_by_flavor_events() -> None:
    """A terminating ClusterQueue stays terminating whatever flavors come and go."""
    cq = deleting(make_cq("cq").group(fq("default", cpu="10")).obj())
    core = core_with(cq, make_lq("lq", "ns", "cq"), make_wl("new").request(cpu="1").obj())
    core.on_resource_flavor(make_flavor("default").obj(), T0)
    assert active_condition(core, "cq") == ("False", "Terminating", TERMINATING_MSG)
    assert core.schedule(T0).admitted == []


# -- TestClusterQueueUsage ------------------------------------------------------------------------
def _usage_cq(cohort: bool) -> dict[str, Any]:
    b = (
        make_cq("foo")
        .group(fq("default", cpu=("10", "10", None)))
        .group(fq("model_a", **{"example.com/gpu": ("5", "5", None)}), fq("model_b", **{"example.com/gpu": "5"}))
        .group(fq("interconnect_a", **{f"example.com/vf-{i}": ("5", "5", None) for i in range(3)}))
    )
    if cohort:
        b.cohort("one")
    return b.obj()


def _wl_one() -> dict[str, Any]:
    return (
        make_wl("one", "")
        .request(cpu="8", **{"example.com/gpu": "5"})
        .reserve("foo", psa(cpu=("default", "8"), **{"example.com/gpu": ("model_a", "5")}))
        .obj()
    )


def _wl_two() -> dict[str, Any]:
    return (
        make_wl("two", "")
        .request(cpu="5", **{"example.com/gpu": "6"})
        .reserve("foo", psa(cpu=("default", "5"), **{"example.com/gpu": ("model_b", "6")}), admitted=False)
        .obj()
    )


def _partial(name: str, admitted: bool) -> dict[str, Any]:
    return (
        make_wl(name, "")
        .podset("main", 5, cpu="2")
        .reserve("foo", psa("main", 2, cpu=("default", "4")), admitted=admitted)
        .obj()
    )


def _flavors(default: tuple[str, str], model_a: str, model_b: tuple[str, str]) -> list[dict[str, Any]]:
    """flavorsReservation/flavorsUsage of `foo`: (total, borrowed) for cpu and model_b's gpu."""
    zero = [{"name": f"example.com/vf-{i}", "total": "0", "borrowed": "0"} for i in range(3)]
    return [
        {"name": "default", "resources": [{"name": "cpu", "total": default[0], "borrowed": default[1]}]},
        {"name": "model_a", "resources": [{"name": "example.com/gpu", "total": model_a, "borrowed": "0"}]},
        {"name": "model_b", "resources": [{"name": "example.com/gpu", "total": model_b[0], "borrowed": model_b[1]}]},
        {"name": "interconnect_a", "resources": zero},
    ]


USAGE: dict[str, tuple[bool, list[dict[str, Any]], list[dict[str, Any]], int, list[dict[str, Any]], int]] = {
    "clusterQueue without cohort; single, admitted no borrowing": (
        False,
        [_wl_one()],
        _flavors(("8", "0"), "5", ("0", "0")),
        1,
        _flavors(("8", "0"), "5", ("0", "0")),
        1,
    ),
    "clusterQueue with cohort; multiple borrowing": (
        True,
        [_wl_one(), _wl_two()],
        _flavors(("13", "3"), "5", ("6", "1")),
        2,
        _flavors(("8", "0"), "5", ("0", "0")),
        1,
    ),
    "clusterQueue without cohort; multiple borrowing": (
        False,
        [_wl_one(), _wl_two()],
        _flavors(("13", "0"), "5", ("6", "0")),
        2,
        _flavors(("8", "0"), "5", ("0", "0")),
        1,
    ),
    "clusterQueue with cohort; partial admission": (
        True,
        [_partial("partial-one", True), _partial("partial-two", False)],
        _flavors(("8", "0"), "0", ("0", "0")),
        2,
        _flavors(("4", "0"), "0", ("0", "0")),
        1,
    ),
}


@pytest.mark.parametrize(
    ("cohort", "workloads", "reserved", "reserving", "used", "admitted"), list(USAGE.values()), ids=list(USAGE)
)
def test_cluster_queue_usage(
    cohort: bool,
    workloads: list[dict[str, Any]],
    reserved: list[dict[str, Any]],
    reserving: int,
    used: list[dict[str, Any]],
    admitted: int,
) -> None:
    core = core_with(_usage_cq(cohort), *workloads)
    status = core.cluster_queue_status("foo")
    assert status["flavorsReservation"] == reserved
    assert status["reservingWorkloads"] == reserving
    assert status["flavorsUsage"] == used
    assert status["admittedWorkloads"] == admitted


# -- TestLocalQueueUsage --------------------------------------------------------------------------
def _lq_cq() -> dict[str, Any]:
    return (
        make_cq("foo")
        .group(fq("default", cpu=("10", "10", None)))
        .group(fq("model-a", **{"example.com/gpu": "5"}), fq("model-b", **{"example.com/gpu": "5"}))
        .group(fq("interconnect-a", **{f"example.com/vf-{i}": ("5", "5", None) for i in range(3)}))
        .obj()
    )


def _lq_usage(cpu: str, model_a: str, model_b: str) -> list[dict[str, Any]]:
    return [
        {"name": "default", "resources": [{"name": "cpu", "total": cpu}]},
        {"name": "model-a", "resources": [{"name": "example.com/gpu", "total": model_a}]},
        {"name": "model-b", "resources": [{"name": "example.com/gpu", "total": model_b}]},
        {"name": "interconnect-a", "resources": [{"name": f"example.com/vf-{i}", "total": "0"} for i in range(3)]},
    ]


def _lq_wl(name: str, cpu: str, gpu: str, flavor: str | None) -> dict[str, Any]:
    b = make_wl(name, "ns1").queue("test").request(cpu=cpu, **{"example.com/gpu": gpu})
    if flavor is not None:
        b.reserve("foo", psa(cpu=("default", cpu), **{"example.com/gpu": (flavor, gpu)}), admitted=False)
    return b.obj()


LQ_USAGE: dict[str, tuple[bool, list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "clusterQueue is missing": (False, [make_wl("one", "ns1").queue("test").request(cpu="5").obj()], None),
    "workloads is nothing": (True, [], _lq_usage("0", "0", "0")),
    "all workloads are admitted": (
        True,
        [_lq_wl("one", "5", "5", "model-a"), _lq_wl("two", "3", "3", "model-b")],
        _lq_usage("8", "5", "3"),
    ),
    "some workloads are inadmissible": (
        True,
        [_lq_wl("one", "5", "5", "model-a"), _lq_wl("two", "100000", "3", None)],
        _lq_usage("5", "5", "0"),
    ),
}


@pytest.mark.parametrize(("with_cq", "workloads", "want"), list(LQ_USAGE.values()), ids=list(LQ_USAGE))
def test_local_queue_usage(with_cq: bool, workloads: list[dict[str, Any]], want: list[dict[str, Any]] | None) -> None:
    core = core_with(*([_lq_cq()] if with_cq else []), make_lq("test", "ns1", "foo"), *workloads)
    assert core.local_queue_status("ns1", "test").get("flavorsReservation") == want


# -- LocalQueue Active condition (localqueue_controller_test.go) ----------------------------------
STOPPED = ("False", "Stopped", "LocalQueue is stopped")
CQ_INACTIVE = ("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")


def _lq_case(
    stop: str | None, cq: dict[str, Any] | None, want: tuple[str, str, str], workloads: tuple[dict[str, Any], ...] = ()
) -> Any:
    return (stop, cq, list(workloads), want)


_RUNNING = (
    make_wl("wl", "default")
    .queue("test-queue")
    .request(cpu="4")
    .reserve("test-cluster-queue", psa(cpu=("rf", "4")))
    .obj()
)
LQ_ACTIVE: dict[str, Any] = {
    "local queue with Hold StopPolicy": _lq_case("Hold", make_cq("test-cluster-queue").obj(), STOPPED),
    "local queue with HoldAndDrain StopPolicy": _lq_case("HoldAndDrain", make_cq("test-cluster-queue").obj(), STOPPED),
    # Upstream's ClusterQueue object carries no Active=True condition; ours is inactive for a missing flavor.
    "cluster queue is inactive": _lq_case(
        None, make_cq("test-cluster-queue").group(fq("rf", cpu="10")).obj(), CQ_INACTIVE
    ),
    "cluster queue deleted while its scheduler cache entry is still present": _lq_case(
        None, None, ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue"), (_RUNNING,)
    ),
}


@pytest.mark.parametrize(("stop", "cq", "workloads", "want"), list(LQ_ACTIVE.values()), ids=list(LQ_ACTIVE))
def test_local_queue_active(
    stop: str | None, cq: dict[str, Any] | None, workloads: list[dict[str, Any]], want: tuple[str, str, str]
) -> None:
    core = core_with(
        *([cq] if cq else []), make_lq("test-queue", "default", "test-cluster-queue", stop=stop), *workloads
    )
    core.on_namespace("default", {}, T0)
    status = core.local_queue_status("default", "test-queue")
    (cond,) = status["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == want
    # Upstream reports the stats it has: none without the ClusterQueue, pending 0 when stopped.
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (0, 0, 0)
    if cq is None:
        assert "flavorsReservation" not in status and "flavorsUsage" not in status


# -- cohort membership changes (TestCacheClusterQueueOperations, behaviourally) --------------------
def test_cluster_queue_moving_between_cohorts_moves_its_usage_and_borrowing() -> None:
    """A ClusterQueue changing `cohortName` leaves the old cohort's tree and borrows from the new one."""
    borrower = make_cq("borrower").cohort("a").group(fq("default", cpu="0")).obj()
    core = core_with(
        make_flavor("default").obj(),
        make_cq("lender-a").cohort("a").group(fq("default", cpu="10")).obj(),
        make_cq("lender-b").cohort("b").group(fq("default", cpu="2")).obj(),
        borrower,
        make_lq("lq", "ns", "borrower"),
        make_lq("lq-a", "ns", "lender-a"),
        make_wl("held").request(cpu="6").reserve("borrower", psa(cpu=("default", "6"))).obj(),
    )
    # In cohort a, the borrower's 6 cpu are lent by lender-a: only 4 are left there.
    core.on_workload(make_wl("a-big").queue("lq-a").request(cpu="5").obj(), T0)
    assert core.schedule(T0).admitted == []

    moved = make_cq("borrower").cohort("b").group(fq("default", cpu="0")).obj()
    core.on_cluster_queue(moved, T0)
    assert core.cache.forest.cohorts["a"].usage.get(FlavorResource("default", "cpu"), 0) == 0
    status = core.cluster_queue_status("borrower")
    assert status["flavorsReservation"] == [
        {"name": "default", "resources": [{"name": "cpu", "total": "6", "borrowed": "6"}]}
    ]
    # lender-a gets its whole quota back; cohort b has 2 cpu for the borrower, not more. The parked
    # a-big stays parked: upstream retries inadmissible workloads only in the moved queue's new tree.
    core.on_workload(make_wl("a-full").queue("lq-a").request(cpu="10").created(1).obj(), T0)
    core.on_workload(make_wl("b-small").request(cpu="3").obj(), T0)
    result = core.schedule(T0)
    assert [str(d.key) for d in result.admitted] == ["ns/a-full"]
    assert [str(d.key) for d in result.pending] == ["ns/b-small"]
    assert core.queues.dump_inadmissible() == {"borrower": ["ns/b-small"], "lender-a": ["ns/a-big"]}
