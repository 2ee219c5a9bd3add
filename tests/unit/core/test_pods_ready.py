"""waitForPodsReady (after upstream workload_controller_test.go, reconciler_test.go, scheduler_test.go)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa, ts
from webhook.core import AdmissionCore, Admit, Pending, SchedulerConfig, parse_workload
from webhook.core.conditions import ConditionValue
from webhook.core.pods_ready import (
    Policy,
    StepKind,
    backoff,
    controller_step,
    not_ready_deadline,
    pods_ready_condition,
)

POLICY = Policy(
    timeout=timedelta(seconds=300),
    recovery_timeout=timedelta(seconds=60),
    backoff_limit_count=2,
    backoff_base_seconds=10,
    backoff_max_seconds=3600,
)


def admitted(at: float = 0) -> Any:
    return make_wl("w").request(cpu="1").reserve("cq", psa(cpu=("one", "1")), at=at)


def step(obj: dict[str, Any], seconds: float, policy: Policy | None = POLICY, jitter: float = 0.0) -> Any:
    return controller_step(parse_workload(obj), policy, T0 + timedelta(seconds=seconds), jitter=jitter)


def cv(ctype: str, status: str, reason: str, message: str) -> ConditionValue:
    return ConditionValue(ctype, status, reason, message)


NOT_READY = cv("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded")
READY = "All pods reached readiness and the workload is running"
RECOVERING = cv("PodsReady", "False", "WaitForRecovery", "At least one pod has failed, waiting for recovery")


@pytest.mark.parametrize(
    ("admitted_", "ready", "current", "want"),
    [
        pytest.param(False, True, None, NOT_READY, id="not admitted: waiting to start, even with ready pods"),
        pytest.param(False, False, ("True", "Started"), NOT_READY, id="evicted and requeued: back to waiting"),
        pytest.param(True, False, None, NOT_READY, id="admitted, no condition yet"),
        pytest.param(True, False, ("False", "WaitForStart"), NOT_READY, id="admitted, still starting"),
        pytest.param(True, False, ("False", "PodsReady"), NOT_READY, id="legacy reason is waiting to start"),
        pytest.param(True, True, None, cv("PodsReady", "True", "Started", READY), id="ready for the first time"),
        pytest.param(True, True, ("False", "WaitForStart"), cv("PodsReady", "True", "Started", READY), id="started"),
        pytest.param(True, False, ("True", "Started"), RECOVERING, id="a pod failed after start"),
        pytest.param(True, False, ("False", "WaitForRecovery"), RECOVERING, id="still recovering"),
        pytest.param(
            True, True, ("False", "WaitForRecovery"), cv("PodsReady", "True", "Recovered", READY), id="recovered"
        ),
        pytest.param(
            True, True, ("True", "Recovered"), cv("PodsReady", "True", "Recovered", READY), id="stays recovered"
        ),
    ],
)
def test_pods_ready_condition(
    admitted_: bool, ready: bool, current: tuple[str, str] | None, want: ConditionValue
) -> None:
    assert pods_ready_condition(admitted=admitted_, pods_ready=ready, current=current) == want


@pytest.mark.parametrize(
    ("count", "base", "cap", "want"),
    [
        (1, 60, 3600, 60),
        (2, 60, 3600, 120),
        (3, 60, 3600, 240),
        (7, 60, 3600, 3600),
        (50, 60, 3600, 3600),
        (1, 100, 50, 100),
        (2, 100, 50, 50),
        (3, 1, 0, 4),
    ],
)
def test_backoff_doubles_from_the_base_up_to_the_cap(count: int, base: int, cap: int, want: int) -> None:
    assert backoff(count, base_seconds=base, max_seconds=cap) == timedelta(seconds=want)


def test_backoff_jitter_adds_at_most_a_ten_thousandth() -> None:
    assert backoff(2, base_seconds=60, max_seconds=3600, jitter=0.5) == timedelta(seconds=120 * 1.00005)
    assert backoff(2, base_seconds=60, max_seconds=3600, jitter=0.999) < timedelta(seconds=120.012)


def test_deadline_counts_from_admission_while_starting_and_from_the_failure_while_recovering() -> None:
    starting = parse_workload(admitted(at=10).condition("PodsReady", "False", "WaitForStart", at=20).obj())
    assert not_ready_deadline(starting, POLICY) is not None
    assert not_ready_deadline(starting, POLICY).at == T0 + timedelta(seconds=310)  # type: ignore[union-attr]
    recovering = parse_workload(admitted(at=10).condition("PodsReady", "False", "WaitForRecovery", at=500).obj())
    got = not_ready_deadline(recovering, POLICY)
    assert got is not None and (got.cause, got.at) == ("WaitForRecovery", T0 + timedelta(seconds=560))
    assert not_ready_deadline(recovering, Policy(timeout=timedelta(seconds=300))) is None  # recoveryTimeout 0s
    ready = parse_workload(admitted().condition("PodsReady", "True", "Started").obj())
    assert not_ready_deadline(ready, POLICY) is None
    reserved_only = parse_workload(
        make_wl("w").request(cpu="1").reserve("cq", psa(cpu=("one", "1")), admitted=False).obj()
    )
    assert not_ready_deadline(reserved_only, POLICY) is None


def test_timeout_rechecks_at_the_deadline_then_evicts_with_backoff() -> None:
    wl = admitted(at=0).condition("PodsReady", "False", "WaitForStart").obj()
    early = step(wl, 299)
    assert (early.kind, early.recheck_at) == (StepKind.RECHECK, T0 + timedelta(seconds=300))
    got = step(wl, 300, jitter=0.0)
    assert got.kind == StepKind.EVICT
    assert got.conditions == (cv("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w"),)
    assert (got.reason, got.underlying_cause, got.event_reason) == (
        "PodsReadyTimeout",
        "WaitForStart",
        "EvictedDueToPodsReadyTimeout",
    )
    assert got.requeue_state == {"count": 1, "requeueAt": ts(310)}


def test_second_timeout_doubles_the_backoff_and_keeps_counting() -> None:
    wl = admitted(at=1000).obj()
    wl["status"]["requeueState"] = {"count": 1}
    got = step(wl, 1300)
    assert got.kind == StepKind.EVICT and got.requeue_state == {"count": 2, "requeueAt": ts(1320)}


def test_a_requeue_at_still_ahead_is_waited_for_first() -> None:
    wl = admitted(at=0).obj()
    wl["status"]["requeueState"] = {"count": 0, "requeueAt": ts(400)}
    assert (step(wl, 300).kind, step(wl, 300).recheck_at) == (StepKind.RECHECK, T0 + timedelta(seconds=400))
    wl["status"]["requeueState"] = {"count": 0, "requeueAt": ts(299)}
    assert step(wl, 300).requeue_state == {"count": 1, "requeueAt": ts(310)}


def test_the_limit_sets_a_deactivation_target_instead_of_evicting() -> None:
    wl = admitted(at=0).obj()
    wl["status"]["requeueState"] = {"count": 2}
    got = step(wl, 300)
    assert got.kind == StepKind.DEACTIVATE
    assert got.conditions == (
        cv(
            "DeactivationTarget", "True", "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries"
        ),
    )
    assert step(wl, 300, Policy(timeout=timedelta(seconds=300))).kind == StepKind.EVICT  # no limit: requeue forever


def test_no_timeout_without_wait_for_pods_ready_or_once_evicted_or_ready() -> None:
    wl = admitted(at=0).obj()
    assert step(wl, 10**6, policy=None).kind == StepKind.NONE
    assert step(admitted(at=0).evicted("Preempted").obj(), 10**6).kind == StepKind.NONE
    assert step(admitted(at=0).condition("PodsReady", "True", "Started").obj(), 10**6).kind == StepKind.NONE


def test_deactivation_target_then_inactive_then_evicted_with_the_cause() -> None:
    target = admitted().condition(
        "DeactivationTarget", "True", "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries"
    )
    assert step(target.obj(), 0).kind == StepKind.SET_INACTIVE
    inactive = target.obj()
    inactive["spec"]["active"] = False
    inactive["status"]["requeueState"] = {"count": 2}
    got = step(inactive, 0)
    message = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    assert got.kind == StepKind.EVICT
    assert got.conditions == (cv("Evicted", "True", "DeactivatedDueToRequeuingLimitExceeded", message),)
    assert got.remove_conditions == ("DeactivationTarget",) and (got.set_requeue_state, got.requeue_state) == (
        True,
        None,
    )
    assert (got.reason, got.underlying_cause, got.event_reason) == (
        "Deactivated",
        "RequeuingLimitExceeded",
        "EvictedDueToDeactivatedDueToRequeuingLimitExceeded",
    )


def test_an_inactive_workload_without_reservation_reads_deactivated() -> None:
    wl = (
        make_wl("w")
        .request(cpu="1")
        .evicted("Deactivated")
        .condition("QuotaReserved", "False", "PendingEvaluation", "x")
        .obj()
    )
    wl["spec"]["active"] = False
    got = step(wl, 0)
    assert got.kind == StepKind.UPDATE
    assert [(c.type, c.status, c.reason, c.message) for c in got.conditions] == [
        ("QuotaReserved", "False", "Deactivated", "The workload is deactivated"),
        ("Admitted", "False", "NoReservation", "The workload has no reservation"),
    ]
    plain = make_wl("p").request(cpu="1").obj()
    plain["spec"]["active"] = False
    assert step(plain, 0).conditions == (cv("Evicted", "True", "Deactivated", "The workload is deactivated"),)


def test_backoff_finishes_once_requeue_at_passes() -> None:
    parked = (
        make_wl("w")
        .request(cpu="1")
        .evicted("PodsReadyTimeout")
        .condition("Requeued", "False", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w")
        .obj()
    )
    parked["status"]["requeueState"] = {"count": 1, "requeueAt": ts(60)}
    assert (step(parked, 59).kind, step(parked, 59).recheck_at) == (StepKind.RECHECK, T0 + timedelta(seconds=60))
    got = step(parked, 60)
    assert got.kind == StepKind.UPDATE and got.requeue_state == {"count": 1}
    assert got.conditions == (cv("Requeued", "True", "BackoffFinished", "The workload backoff was finished"),)
    parked["status"]["requeueState"] = {"count": 1}
    assert step(parked, 60).conditions == got.conditions and not step(parked, 60).set_requeue_state


def test_reactivation_requeues_only_a_plain_deactivation() -> None:
    wl = (
        make_wl("w").request(cpu="1").condition("Requeued", "False", "Deactivated", "The workload is deactivated").obj()
    )
    assert step(wl, 0).conditions == (cv("Requeued", "True", "Reactivated", "The workload was reactivated"),)
    caused = (
        make_wl("w")
        .request(cpu="1")
        .condition("Requeued", "False", "DeactivatedDueToRequeuingLimitExceeded", "m")
        .obj()
    )
    assert step(caused, 0).kind == StepKind.NONE


def test_finished_workloads_are_left_alone() -> None:
    assert step(admitted().finished().obj(), 10**6).kind == StepKind.NONE


# -- blockAdmission ----------------------------------------------------------------------------------
def blocking_core(*objs: dict[str, Any]) -> AdmissionCore:
    core = AdmissionCore(SchedulerConfig(block_admission=True))
    core.on_namespace("ns", {"kubernetes.io/metadata.name": "ns"}, T0)
    for o in (make_flavor("one").obj(), make_cq("cq").group(fq("one", cpu="4")).obj(), make_lq("lq", "ns", "cq")):
        {
            "ResourceFlavor": core.on_resource_flavor,
            "ClusterQueue": core.on_cluster_queue,
            "LocalQueue": core.on_local_queue,
        }[o["kind"]](o, T0)
    for o in objs:
        core.on_workload(o, T0)
    return core


def test_block_admission_admits_one_workload_at_a_time_until_it_is_ready() -> None:
    core = blocking_core(make_wl("a").request(cpu="1").created(1).obj(), make_wl("b").request(cpu="1").created(2).obj())
    assert [d.key for d in core.schedule(T0).admitted] == ["ns/a"]
    blocked = core.schedule(T0)
    assert blocked.admitted == []
    assert [(d.key, d.reason, d.message) for d in blocked.pending] == [
        ("ns/b", "WaitingForPodsReady", "waiting for all admitted workloads to be in PodsReady condition")
    ]
    assert [d.reason for d in core.schedule(T0).pending] == ["WaitingForPodsReady"]  # retried, still blocked
    core.on_workload(
        make_wl("a")
        .request(cpu="1")
        .created(1)
        .reserve("cq", psa(cpu=("one", "1")))
        .condition("PodsReady", "True", "Started")
        .obj(),
        T0,
    )
    assert [d.key for d in core.schedule(T0).decisions if isinstance(d, Admit)] == ["ns/b"]


def test_without_block_admission_both_are_admitted() -> None:
    core = make_core(
        make_flavor("one").obj(),
        make_cq("cq").group(fq("one", cpu="4")).obj(),
        make_lq("lq", "ns", "cq"),
        make_wl("a").request(cpu="1").obj(),
        make_wl("b").request(cpu="1").obj(),
    )
    results = [core.schedule(T0), core.schedule(T0)]
    assert [d.key for r in results for d in r.admitted] == ["ns/a", "ns/b"]
    assert not [d for r in results for d in r.decisions if isinstance(d, Pending)]


@pytest.mark.parametrize(("by_eviction", "first"), [(True, "fresh"), (False, "evicted")])
def test_requeuing_timestamp_orders_a_timed_out_workload(by_eviction: bool, first: str) -> None:
    """`requeuingStrategy.timestamp`: Eviction puts a workload evicted for PodsReadyTimeout behind
    one created after it; Creation keeps its place by creation time."""

    def wl(name: str, created: str, evicted_at: str | None = None) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "uid": name, "creationTimestamp": created},
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
                    }
                ],
            },
        }
        if evicted_at:
            obj["status"] = {
                "conditions": [
                    {
                        "type": "Evicted",
                        "status": "True",
                        "reason": "PodsReadyTimeout",
                        "message": "Exceeded the PodsReady timeout ns/" + name,
                        "lastTransitionTime": evicted_at,
                    }
                ]
            }
        return obj

    core = AdmissionCore(SchedulerConfig(requeue_by_eviction=by_eviction))
    now = T0 + timedelta(minutes=10)
    evicted = core.on_workload(wl("evicted", "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"), now)
    fresh = core.on_workload(wl("fresh", "2026-01-01T00:01:00Z"), now)
    order = sorted([evicted, fresh], key=lambda w: w.queue_order_timestamp)
    assert order[0].name == first
