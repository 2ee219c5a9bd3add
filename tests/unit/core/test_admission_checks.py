"""Admission checks: required checks per flavor, the checks list, messages, eviction reset, the
Admitted sync and the order of the workload controller's steps (`core.admission_checks`), and the
scheduler's Admitted decision at reservation (`cycle._admit`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa, ts
from webhook.core import admission_checks as ac
from webhook.core.model import parse_cluster_queue
from webhook.core.pods_ready import Policy, StepKind, WorkloadStep


def checked_cq(*rules: dict[str, Any]) -> dict[str, Any]:
    cq = make_cq("cq").group(fq("a", cpu="4"), fq("b", cpu="4")).obj()
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": list(rules)}
    return cq


CQ = parse_cluster_queue(
    checked_cq({"name": "all"}, {"name": "on-a", "onFlavors": ["a"]}, {"name": "on-b", "onFlavors": ["b"]})
)


def admission(*flavors: str) -> dict[str, Any]:
    return {
        "clusterQueue": "cq",
        "podSetAssignments": [{"name": f"ps{i}", "flavors": {"cpu": f}} for i, f in enumerate(flavors)],
    }


def check(name: str, state: str = "Pending", message: str = "", at: float = 0, **extra: Any) -> dict[str, Any]:
    return {"name": name, "state": state, "message": message, "lastTransitionTime": ts(at), **extra}


# == which checks ================================================================================
def test_a_check_without_on_flavors_applies_to_every_flavor_of_the_queue() -> None:
    assert CQ.admission_check_flavors == {"all": {"a", "b"}, "on-a": {"a"}, "on-b": {"b"}}


@pytest.mark.parametrize(
    ("adm", "want"),
    [
        pytest.param(None, {"all"}, id="before reservation: only checks for all flavors"),
        pytest.param(admission("a"), {"all", "on-a"}, id="flavor a"),
        pytest.param(admission("b"), {"all", "on-b"}, id="flavor b"),
        pytest.param(admission("a", "b"), {"all", "on-a", "on-b"}, id="both flavors"),
    ],
)
def test_required_checks(adm: dict[str, Any] | None, want: set[str]) -> None:
    assert ac.required_checks(CQ, adm) == want


def test_has_all_required_looks_only_at_the_assigned_flavors() -> None:
    assert ac.has_all_required(CQ, admission("a"), ["all", "on-a"])
    assert not ac.has_all_required(CQ, admission("a", "b"), ["all", "on-a"])


# == the checks list ==============================================================================
def test_sync_adds_missing_checks_as_pending_removes_extras_and_sorts() -> None:
    now = T0 + timedelta(seconds=5)
    current = [check("zz", "Ready"), check("all", "Ready", "ok")]
    assert ac.sync_checks(current, frozenset({"all", "on-a"}), now) == [
        check("all", "Ready", "ok"),
        {"name": "on-a", "state": "Pending", "message": "", "lastTransitionTime": ts(5)},
    ]


@pytest.mark.parametrize(
    ("current", "required", "want"),
    [
        pytest.param([check("b"), check("a")], {"a", "b"}, None, id="same names, other order: no write"),
        pytest.param([], set(), None, id="nothing required, nothing listed"),
        pytest.param([check("a")], set(), [], id="nothing required: the list goes"),
        pytest.param([check("a"), check("b")], {"b"}, [check("b")], id="an extra check goes"),
    ],
)
def test_sync_checks(current: list[dict[str, Any]], required: set[str], want: list[dict[str, Any]] | None) -> None:
    assert ac.sync_checks(current, frozenset(required), T0) == want


@pytest.mark.parametrize(
    ("checks", "state", "want"),
    [
        pytest.param(
            [check("p", message="no capacity")],
            "Rejected",
            'AdmissionCheck in Rejected state: "p" (no capacity)',
            id="one",
        ),
        pytest.param(
            [check("z", message="later"), check("a")],
            "Retry",
            'AdmissionChecks in Retry state: "a"; "z" (later)',
            id="two, sorted",
        ),
    ],
)
def test_checks_message(checks: list[dict[str, Any]], state: str, want: str) -> None:
    assert ac.checks_message(checks, state) == want


def test_eviction_resets_checks_to_pending_and_counts_retries() -> None:
    now = T0 + timedelta(seconds=9)
    checks = [
        check("p"),
        check("r", "Retry", "again", requeueAfterSeconds=5, retryCount=2),
        check("y", "Ready", "ok", retryCount=1, podSetUpdates=[{"name": "main", "labels": {"x": "y"}}]),
    ]
    assert ac.reset_on_eviction(checks, now) == [
        check("p"),
        {
            "name": "r",
            "state": "Pending",
            "message": "Reset to Pending after eviction. Previously: Retry",
            "lastTransitionTime": ts(9),
            "requeueAfterSeconds": 5,
            "retryCount": 3,
        },
        {
            "name": "y",
            "state": "Pending",
            "message": "Reset to Pending after eviction. Previously: Ready",
            "lastTransitionTime": ts(9),
        },
    ]


@pytest.mark.parametrize(
    ("checks", "requeue_state", "now", "want"),
    [
        pytest.param(
            [check("r", "Retry", at=10, requeueAfterSeconds=5), check("s", "Retry", at=12, requeueAfterSeconds=1)],
            None,
            11,
            15,
            id="the latest retry time",
        ),
        pytest.param([check("r", "Retry", at=10, requeueAfterSeconds=5)], None, 16, None, id="already past"),
        pytest.param([check("r", "Retry", at=10)], None, 0, None, id="no delay: retry at once"),
        pytest.param([check("r", "Ready", at=10, requeueAfterSeconds=5)], None, 0, None, id="only Retry checks count"),
        pytest.param(
            [check("r", "Retry", at=10, requeueAfterSeconds=5)],
            {"requeueAt": ts(20)},
            0,
            None,
            id="a later requeueAt stays",
        ),
        pytest.param(
            [check("r", "Retry", at=10, requeueAfterSeconds=5)],
            {"count": 1, "requeueAt": ts(12)},
            0,
            15,
            id="an earlier one moves",
        ),
    ],
)
def test_requeue_at_update(
    checks: list[dict[str, Any]], requeue_state: dict[str, Any] | None, now: float, want: float | None
) -> None:
    status: dict[str, Any] = {"admissionChecks": checks}
    if requeue_state is not None:
        status["requeueState"] = requeue_state
    got = ac.requeue_at_update(status, T0 + timedelta(seconds=now))
    assert got == (None if want is None else T0 + timedelta(seconds=want))


# == the workload controller's steps ==============================================================
def reserved(*checks: dict[str, Any], admitted: bool | None = None) -> dict[str, Any]:
    wl = make_wl("wl").queue("lq").request(cpu="1").reserve("cq", psa(cpu=("a", "1")), admitted=bool(admitted)).obj()
    if admitted is False:
        wl["status"]["conditions"].append(
            {
                "type": "Admitted",
                "status": "False",
                "reason": "UnsatisfiedAdmissionChecks",
                "message": "The workload has not all checks ready",
                "lastTransitionTime": ts(0),
            }
        )
    wl["status"]["admissionChecks"] = list(checks)
    return wl


NOW = T0 + timedelta(seconds=30)


def test_a_pending_workload_gets_the_checks_for_all_flavors() -> None:
    wl = make_wl("wl").queue("lq").request(cpu="1").obj()
    step = ac.workload_step(wl, CQ, None, NOW)
    assert step == WorkloadStep(
        StepKind.SYNC_CHECKS, checks=({"name": "all", "state": "Pending", "message": "", "lastTransitionTime": ts(30)},)
    )


def test_reservation_on_a_flavor_adds_its_checks_before_anything_else() -> None:
    step = ac.workload_step(reserved(check("all", "Ready"), admitted=False), CQ, None, NOW)
    assert step.kind == StepKind.SYNC_CHECKS
    assert [c["name"] for c in step.checks] == ["all", "on-a"]


@pytest.mark.parametrize(
    ("states", "admitted", "want"),
    [
        pytest.param(
            ("Ready", "Ready"), False, ("True", "Admitted", "The workload is admitted"), id="all Ready: admitted"
        ),
        pytest.param(
            ("Ready", "Pending"),
            None,
            ("False", "UnsatisfiedAdmissionChecks", "The workload has not all checks ready"),
            id="reserved without Admitted: not all checks ready",
        ),
        pytest.param(("Ready", "Pending"), False, None, id="already not admitted: nothing to write"),
    ],
)
def test_admitted_follows_the_check_states(
    states: tuple[str, str], admitted: bool | None, want: tuple[str, str, str] | None
) -> None:
    wl = reserved(check("all", states[0]), check("on-a", states[1]), admitted=admitted)
    if admitted is None:
        wl["status"]["conditions"] = [c for c in wl["status"]["conditions"] if c["type"] != "Admitted"]
    step = ac.workload_step(wl, CQ, None, NOW)
    if want is None:
        assert step == WorkloadStep(StepKind.NONE)
    else:
        assert step.kind == StepKind.ADMITTED
        assert (step.conditions[0].status, step.conditions[0].reason, step.conditions[0].message) == want


def test_retry_evicts_with_upstreams_reason_and_message() -> None:
    step = ac.workload_step(
        reserved(check("all", "Retry", "busy"), check("on-a", "Ready"), admitted=False), CQ, None, NOW
    )
    assert step.kind == StepKind.EVICT
    assert (step.reason, step.message, step.event_reason) == (
        "AdmissionCheck",
        'Evicted due to AdmissionCheck in Retry state: "all" (busy)',
        "EvictedDueToAdmissionCheck",
    )
    assert [(c.type, c.status, c.reason) for c in step.conditions] == [("Evicted", "True", "AdmissionCheck")]


def test_rejected_wins_over_retry_and_sets_the_deactivation_target() -> None:
    step = ac.workload_step(
        reserved(check("all", "Retry"), check("on-a", "Rejected", "never"), admitted=False), CQ, None, NOW
    )
    assert step.kind == StepKind.REJECTED
    detail = 'AdmissionCheck in Rejected state: "on-a" (never)'
    assert (
        step.conditions[0].type,
        step.conditions[0].status,
        step.conditions[0].reason,
        step.conditions[0].message,
    ) == ("DeactivationTarget", "True", "AdmissionCheck", detail)
    assert step.event == f"Deactivated due to {detail}"


def test_a_retry_delay_is_written_first_and_holds_the_eviction_back() -> None:
    wl = reserved(check("all", "Retry", at=25, requeueAfterSeconds=10), check("on-a", "Ready"), admitted=False)
    assert ac.workload_step(wl, CQ, None, NOW) == WorkloadStep(
        StepKind.REQUEUE_AT, requeue_at=T0 + timedelta(seconds=35)
    )
    wl["status"]["requeueState"] = {"requeueAt": ts(35)}
    assert ac.workload_step(wl, CQ, None, NOW) == WorkloadStep(StepKind.RECHECK, recheck_at=T0 + timedelta(seconds=35))
    assert ac.workload_step(wl, CQ, None, T0 + timedelta(seconds=36)).kind == StepKind.EVICT


def test_nothing_for_finished_or_already_evicted_workloads() -> None:
    wl = reserved(check("all", "Retry"), check("on-a", "Ready"), admitted=False)
    wl["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "AdmissionCheck", "message": "m", "lastTransitionTime": ts(1)}
    )
    assert ac.workload_step(wl, CQ, None, NOW) == WorkloadStep(StepKind.NONE)
    wl["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "m", "lastTransitionTime": ts(2)}
    )
    wl["status"]["admissionChecks"] = []
    assert ac.workload_step(wl, CQ, None, NOW) == WorkloadStep(StepKind.NONE)


def test_the_pods_ready_timeout_comes_after_the_checks() -> None:
    policy = Policy(timeout=timedelta(seconds=1))
    wl = reserved(check("all", "Ready"), check("on-a", "Ready"), admitted=True)
    assert ac.workload_step(wl, CQ, policy, NOW).kind == StepKind.EVICT  # the PodsReady timeout
    wl["status"]["admissionChecks"][0]["state"] = "Retry"
    step = ac.workload_step(wl, CQ, policy, NOW)
    assert step.reason == "AdmissionCheck"


def test_without_a_cluster_queue_the_list_is_left_alone() -> None:
    wl = reserved(check("other", "Ready"), admitted=True)
    assert ac.workload_step(wl, None, None, NOW) == WorkloadStep(StepKind.NONE)


# == the scheduler at reservation =================================================================
def test_scheduler_sets_admitted_only_when_the_assigned_flavors_checks_are_listed() -> None:
    cq = checked_cq({"name": "on-b", "onFlavors": ["b"]})
    core = make_core(
        make_flavor("a").obj(),
        make_flavor("b").obj(),
        cq,
        make_lq("lq", "ns", "cq"),
        make_wl("wl").queue("lq").request(cpu="1").obj(),
    )
    assert core.schedule(T0).admitted == []  # the check does not exist yet: the ClusterQueue is inactive
    core.on_admission_check("on-b", True, T0)
    [admit] = core.schedule(T0).admitted
    assert admit.admission["podSetAssignments"][0]["flavors"] == {"cpu": "a"}
    assert [(c.type, c.status, c.reason) for c in admit.conditions][-1] == (
        "Admitted",
        "True",
        "Admitted",
    )  # on-b does not apply to a

    with_all = checked_cq({"name": "all"})
    core = make_core(
        make_flavor("a").obj(),
        make_flavor("b").obj(),
        with_all,
        make_lq("lq", "ns", "cq"),
        make_wl("wl").queue("lq").request(cpu="1").obj(),
    )
    core.on_admission_check("all", True, T0)
    [admit] = core.schedule(T0).admitted
    assert [c.type for c in admit.conditions] == ["QuotaReserved"]  # the check is not listed yet: Admitted waits for it


# == the ClusterQueue's Active condition ==========================================================
MK, PROV = "kueue.x-k8s.io/multikueue", "kueue.x-k8s.io/provisioning-request"


@pytest.mark.parametrize(
    ("rules", "checks", "want"),
    [
        pytest.param(
            [{"name": "x"}, {"name": "y"}],
            {},
            ("AdmissionCheckNotFound", "references missing AdmissionCheck(s): x,y"),
            id="missing",
        ),
        pytest.param(
            [{"name": "x"}, {"name": "y"}],
            {"x": (True, "c"), "y": (False, "c")},
            ("AdmissionCheckInactive", "references inactive AdmissionCheck(s): y"),
            id="inactive",
        ),
        pytest.param(
            [{"name": "x"}, {"name": "y"}],
            {"y": (False, "c")},
            (
                "AdmissionCheckNotFound",
                "references missing AdmissionCheck(s): x, references inactive AdmissionCheck(s): y",
            ),
            id="missing first, then inactive",
        ),
        pytest.param(
            [{"name": "m1"}, {"name": "m2"}],
            {"m1": (True, MK), "m2": (True, MK)},
            (
                "MultipleMultiKueueAdmissionChecks",
                "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: m1,m2",
            ),
            id="two MultiKueue checks",
        ),
        pytest.param(
            [{"name": "m", "onFlavors": ["a"]}],
            {"m": (True, MK)},
            (
                "MultiKueueAdmissionCheckAppliedPerFlavor",
                "Cannot specify MultiKueue AdmissionCheck per flavor, found: m",
            ),
            id="MultiKueue on some flavors",
        ),
        pytest.param(
            [{"name": "m", "onFlavors": ["a", "b"]}, {"name": "p"}],
            {"m": (True, MK), "p": (True, PROV)},
            (
                "MultiKueueWithProvisioningRequest",
                "Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, found: m, p",
            ),
            id="MultiKueue with ProvisioningRequest",
        ),
    ],
)
def test_a_cluster_queue_with_unusable_checks_is_inactive(
    rules: list[dict[str, Any]], checks: dict[str, tuple[bool, str]], want: tuple[str, str]
) -> None:
    core = make_core(make_flavor("a").obj(), make_flavor("b").obj(), checked_cq(*rules))
    for name, (active, controller) in checks.items():
        core.on_admission_check(name, active, T0, controller)
    r = core.cache.readiness("cq")
    assert (r.active, r.reason, r.message) == (False, want[0], f"Can't admit new workloads: {want[1]}.")
    for name in [r["name"] for r in rules]:
        core.on_admission_check(name, True, T0, "example.com/other")
    assert core.cache.readiness("cq").active


@pytest.mark.parametrize(
    ("delayed", "want"),
    [
        pytest.param(
            "Pending",
            ("False", "PendingDelayedTopologyRequests", "There are pending delayed topology requests"),
            id="checks Ready, placement pending: not admitted yet",
        ),
        pytest.param("Ready", ("True", "Admitted", "The workload is admitted"), id="placement done: admitted"),
    ],
)
def test_a_delayed_placement_holds_admission_until_it_is_ready(delayed: str, want: tuple[str, str, str]) -> None:
    """`SyncAdmittedCondition`: with every check Ready, a pod set whose topology a MultiKueue worker
    still has to place keeps the Workload from Admitted (upstream's reason and message)."""
    wl = reserved(check("all", "Ready"), check("on-a", "Ready"), admitted=False)
    wl["status"]["admission"]["podSetAssignments"][0]["delayedTopologyRequest"] = delayed
    step = ac.workload_step(wl, CQ, None, NOW)
    assert step.kind == StepKind.ADMITTED
    assert (step.conditions[0].status, step.conditions[0].reason, step.conditions[0].message) == want
