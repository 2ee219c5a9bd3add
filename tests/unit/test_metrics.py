"""The worker's Prometheus series: upstream's names, types, labels and buckets (`pkg/metrics/metrics.go`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.metrics import MetricWrapperBase

from tests.builders import make_core, make_flavor
from tests.metric_samples import bucket_bounds, probe
from tests.unit.core.scheduler_harness import STICKY, TWO_FLAVORS
from webhook import metrics
from webhook.config import Configuration, Metrics
from webhook.core.cycle import AdmissionCore, CycleResult
from webhook.worker import process, reporter

CQ_PC = ("cluster_queue", "priority_class", "replica_role")
LQ_PC = ("name", "namespace", "priority_class", "replica_role")
FR = ("cohort", "cluster_queue", "flavor", "resource", "replica_role")

EXPECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "kueue_build_info": ("gauge", ("git_version", "git_commit", "build_date", "go_version", "compiler", "platform")),
    "kueue_admission_attempts_total": ("counter", ("result", "replica_role")),
    "kueue_admission_attempt_duration_seconds": ("histogram", ("result", "replica_role")),
    "kueue_pending_workloads": ("gauge", ("cluster_queue", "status", "replica_role")),
    "kueue_admission_cycle_preemption_skips": ("gauge", ("cluster_queue", "replica_role")),
    "kueue_preemption_target_recomputations_total": ("counter", ("cluster_queue", "result", "replica_role")),
    "kueue_quota_reserved_workloads_total": ("counter", CQ_PC),
    "kueue_quota_reserved_wait_time_seconds": ("histogram", CQ_PC),
    "kueue_admitted_workloads_total": ("counter", CQ_PC),
    "kueue_admission_wait_time_seconds": ("histogram", CQ_PC),
    "kueue_admission_checks_wait_time_seconds": ("histogram", CQ_PC),
    "kueue_ready_wait_time_seconds": ("histogram", CQ_PC),
    "kueue_admitted_until_ready_wait_time_seconds": ("histogram", CQ_PC),
    "kueue_evicted_workloads_total": (
        "counter",
        ("cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"),
    ),
    "kueue_pods_ready_to_evicted_time_seconds": (
        "histogram",
        ("cluster_queue", "reason", "underlying_cause", "replica_role"),
    ),
    "kueue_pod_scheduling_gate_removal_seconds": ("histogram", ("name", "cluster_queue", "is_group", "replica_role")),
    "kueue_evicted_workloads_once_total": (
        "counter",
        ("cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"),
    ),
    "kueue_replaced_workload_slices_total": ("counter", ("cluster_queue", "replica_role")),
    "kueue_preempted_workloads_total": ("counter", ("preempting_cluster_queue", "reason", "replica_role")),
    "kueue_reserving_active_workloads": ("gauge", ("cluster_queue", "replica_role")),
    "kueue_admitted_active_workloads": ("gauge", ("cluster_queue", "replica_role")),
    "kueue_finished_workloads_total": ("counter", CQ_PC),
    "kueue_cluster_queue_status": ("gauge", ("cluster_queue", "status", "replica_role")),
    "kueue_cluster_queue_info": ("gauge", ("cluster_queue", "parent_cohort", "root_cohort", "replica_role")),
    "kueue_cluster_queue_nominal_quota": ("gauge", FR),
    "kueue_cluster_queue_borrowing_limit": ("gauge", FR),
    "kueue_cluster_queue_lending_limit": ("gauge", FR),
    "kueue_cluster_queue_resource_reservation": ("gauge", FR),
    "kueue_cluster_queue_resource_usage": ("gauge", FR),
    "kueue_cluster_queue_resource_pending": ("gauge", ("cluster_queue", "resource", "replica_role")),
    "kueue_local_queue_pending_workloads": ("gauge", ("name", "namespace", "status", "replica_role")),
    "kueue_local_queue_quota_reserved_workloads_total": ("counter", LQ_PC),
    "kueue_local_queue_quota_reserved_wait_time_seconds": ("histogram", LQ_PC),
    "kueue_local_queue_admitted_workloads_total": ("counter", LQ_PC),
    "kueue_local_queue_admission_wait_time_seconds": ("histogram", LQ_PC),
    "kueue_local_queue_ready_wait_time_seconds": ("histogram", LQ_PC),
    "kueue_local_queue_admitted_until_ready_wait_time_seconds": ("histogram", LQ_PC),
    "kueue_local_queue_evicted_workloads_total": (
        "counter",
        ("name", "namespace", "reason", "underlying_cause", "priority_class", "replica_role"),
    ),
    "kueue_local_queue_reserving_active_workloads": ("gauge", ("name", "namespace", "replica_role")),
    "kueue_local_queue_admitted_active_workloads": ("gauge", ("name", "namespace", "replica_role")),
    "kueue_local_queue_status": ("gauge", ("name", "namespace", "active", "replica_role")),
    "kueue_local_queue_resource_reservation": ("gauge", ("name", "namespace", "flavor", "resource", "replica_role")),
    "kueue_local_queue_resource_usage": ("gauge", ("name", "namespace", "flavor", "resource", "replica_role")),
    "kueue_local_queue_admission_fair_sharing_usage": (
        "gauge",
        ("name", "namespace", "cluster_queue", "replica_role"),
    ),
    "kueue_cohort_info": ("gauge", ("cohort", "parent_cohort", "root_cohort", "replica_role")),
    "kueue_cohort_subtree_quota": ("gauge", ("cohort", "flavor", "resource", "replica_role")),
    "kueue_cohort_subtree_resource_reservations": ("gauge", ("cohort", "flavor", "resource", "replica_role")),
    "kueue_cohort_subtree_admitted_active_workloads": ("gauge", ("cohort", "replica_role")),
    "kueue_cohort_subtree_admitted_workloads_total": ("counter", ("cohort", "priority_class", "replica_role")),
    "kueue_finished_workloads": ("gauge", ("cluster_queue", "replica_role")),
    "kueue_execution_time_seconds": ("histogram", CQ_PC),
    "kueue_workload_eviction_latency_seconds": ("histogram", ("cluster_queue", "reason", "replica_role")),
    "kueue_unadmitted_workloads": ("gauge", ("cluster_queue", "reason", "underlying_cause", "replica_role")),
    "kueue_workload_creation_latency_seconds": ("histogram", ("job_kind", "replica_role")),
    "kueue_cluster_queue_weighted_share": ("gauge", ("cluster_queue", "cohort", "replica_role")),
    "kueue_local_queue_admission_checks_wait_time_seconds": ("histogram", LQ_PC),
    "kueue_local_queue_finished_workloads": ("gauge", ("name", "namespace", "replica_role")),
    "kueue_local_queue_finished_workloads_total": ("counter", LQ_PC),
    "kueue_local_queue_execution_time_seconds": ("histogram", LQ_PC),
    "kueue_local_queue_unadmitted_workloads": (
        "gauge",
        ("name", "namespace", "cluster_queue", "reason", "underlying_cause", "replica_role"),
    ),
    "kueue_cohort_weighted_share": ("gauge", ("cohort", "replica_role")),
}


def test_worker_series_have_upstream_names_types_and_labels() -> None:
    got: dict[str, tuple[str, tuple[str, ...] | None]] = {}
    families = [
        v.metric if isinstance(v, metrics.Family) else v
        for v in vars(metrics).values()
        if isinstance(v, MetricWrapperBase | metrics.Family)
    ]
    for family in families:
        (described,) = family.describe()
        if described.name.startswith("kueue_") and described.name != "kueue_webhook_reviews":
            exposed = described.name + ("_total" if described.type == "counter" else "")  # the name in the exposition
            # The label names in order, read off a series made with as many values as expected.
            try:
                with probe(family, len(EXPECTED.get(exposed, ("", ""))[1])) as labels:
                    got[exposed] = (described.type, tuple(labels))
            except ValueError:  # another number of labels
                got[exposed] = (described.type, None)
    assert got == EXPECTED
    # The two gauges whose names prometheus_client's check would refuse are exposed once they hold a series.
    unchecked = (
        (metrics.FINISHED_WORKLOADS, ("names-cq", "leader")),
        (metrics.LOCAL_QUEUE_FINISHED_WORKLOADS, ("names-lq", "ns", "leader")),
    )
    for gauge, labels in unchecked:
        gauge.labels(*labels).set(0)
    try:
        assert {f.name for f in metrics.WORKER_REGISTRY.collect()} >= {
            "kueue_finished_workloads",
            "kueue_local_queue_finished_workloads",
        }
    finally:
        for gauge, labels in unchecked:
            gauge.remove(*labels)


@pytest.mark.parametrize(
    "registry",
    [
        pytest.param(metrics.WORKER_REGISTRY, id="worker"),
        pytest.param(metrics.REGISTRY, id="webhook"),
    ],
)
def test_a_family_without_samples_is_not_exposed(registry: CollectorRegistry) -> None:
    """Go's registry leaves out a family with no series (a vector never used, or whose series were
    all removed): no HELP or TYPE line for it, which upstream's e2e checks after deleting queues."""
    family = Counter("kueue_test_unused", "A family for this test.", ["cluster_queue"], registry=registry)
    try:
        assert b"kueue_test_unused" not in generate_latest(registry)
        family.labels("a").inc()
        assert (
            b'# TYPE kueue_test_unused_total counter\nkueue_test_unused_total{cluster_queue="a"} 1.0\n'
            in generate_latest(registry)
        )
        family.remove("a")
        assert b"kueue_test_unused" not in generate_latest(registry)
    finally:
        registry.unregister(family)


def test_webhook_registry_holds_no_kueue_worker_series() -> None:
    text = generate_latest(metrics.REGISTRY).decode()
    assert "kueue_pending_workloads" not in text and "_created" not in text


def test_exponential_buckets_match_upstream() -> None:
    assert metrics.exponential_buckets(4) == (1.0, 2.5, 5.0, 10.0)
    with probe(metrics.ADMISSION_WAIT_TIME, 3) as labels:
        assert bucket_bounds(metrics.ADMISSION_WAIT_TIME, labels) == list(metrics.exponential_buckets(16))
    with probe(metrics.QUOTA_RESERVED_WAIT_TIME, 3) as labels:
        assert len(bucket_bounds(metrics.QUOTA_RESERVED_WAIT_TIME, labels)) == 14  # 15 with +Inf


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        pytest.param(":8443", ("0.0.0.0", 8443), id="all interfaces"),
        pytest.param("127.0.0.1:9090", ("127.0.0.1", 9090), id="loopback"),
        pytest.param("[::1]:9090", ("::1", 9090), id="ipv6"),
        pytest.param("0", None, id="disabled"),
    ],
)
def test_parse_bind_address(address: str, expected: tuple[str, int] | None) -> None:
    assert process.parse_bind_address(address) == expected


def test_queued_since_is_creation_or_last_requeue() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    wl: dict[str, Any] = {"metadata": {"creationTimestamp": "2025-12-31T23:59:00Z"}, "status": {"conditions": []}}
    assert reporter.queued_since(wl, now) == now - timedelta(minutes=1)
    wl["status"]["conditions"] = [{"type": "Requeued", "status": "True", "lastTransitionTime": "2025-12-31T23:59:50Z"}]
    assert reporter.queued_since(wl, now) == now - timedelta(seconds=10)


def _cq(name: str, *, cohort: str = "", stop: str = "None") -> dict[str, object]:
    return {
        "metadata": {"name": name, "generation": 1},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {},
            "stopPolicy": stop,
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "2", "lendingLimit": "1"}]}
                    ],
                }
            ],
        },
    }


def _sample(name: str, labels: dict[str, str]) -> float | None:
    return metrics.WORKER_REGISTRY.get_sample_value(name, labels)


def test_refresh_sets_gauges_and_drops_deleted_queues() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    core = AdmissionCore()
    core.on_resource_flavor({"metadata": {"name": "default"}, "spec": {}}, now)
    core.on_cluster_queue(_cq("metrics-a", cohort="metrics-pool"), now)
    core.on_cluster_queue(_cq("metrics-b", stop="Hold"), now)
    rep = reporter.MetricsReporter(Configuration(metrics=Metrics(enable_cluster_queue_resources=True)))
    rep.refresh(core)
    role = {"replica_role": "leader"}
    assert _sample("kueue_cluster_queue_status", {"cluster_queue": "metrics-a", "status": "active", **role}) == 1
    assert _sample("kueue_cluster_queue_status", {"cluster_queue": "metrics-b", "status": "pending", **role}) == 1
    assert _sample("kueue_cluster_queue_status", {"cluster_queue": "metrics-b", "status": "active", **role}) == 0
    assert (
        _sample(
            "kueue_cluster_queue_info",
            {"cluster_queue": "metrics-a", "parent_cohort": "metrics-pool", "root_cohort": "metrics-pool", **role},
        )
        == 1
    )
    fr = {"cohort": "metrics-pool", "cluster_queue": "metrics-a", "flavor": "default", "resource": "cpu", **role}
    assert _sample("kueue_cluster_queue_nominal_quota", fr) == 2
    assert _sample("kueue_cluster_queue_lending_limit", fr) == 1
    assert _sample("kueue_cluster_queue_borrowing_limit", fr) == float("inf")
    # What a ClusterQueue contributes to its cohort is capped by its lendingLimit.
    assert (
        _sample(
            "kueue_cohort_subtree_quota", {"cohort": "metrics-pool", "flavor": "default", "resource": "cpu", **role}
        )
        == 1
    )
    assert _sample("kueue_pending_workloads", {"cluster_queue": "metrics-a", "status": "active", **role}) == 0
    core.on_cluster_queue_deleted("metrics-b", now)
    rep.refresh(core)
    assert _sample("kueue_cluster_queue_status", {"cluster_queue": "metrics-b", "status": "pending", **role}) is None
    assert _sample("kueue_reserving_active_workloads", {"cluster_queue": "metrics-b", **role}) is None


def test_pods_ready_observes_time_since_queued_and_since_admitted() -> None:
    ready_at = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    wl: dict[str, Any] = {
        "metadata": {"name": "w", "namespace": "metrics-ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "lq"},
        "status": {
            "admission": {"clusterQueue": "metrics-ready"},
            "conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:50Z"}],
        },
    }
    reporter.MetricsReporter(Configuration()).pods_ready(wl, ready_at)
    labels = {"cluster_queue": "metrics-ready", "priority_class": "", "replica_role": "leader"}
    assert _sample("kueue_ready_wait_time_seconds_sum", labels) == 60
    assert _sample("kueue_admitted_until_ready_wait_time_seconds_sum", labels) == 10
    lq = {"name": "lq", "namespace": "metrics-ns", "priority_class": "", "replica_role": "leader"}
    assert _sample("kueue_local_queue_ready_wait_time_seconds_sum", lq) == 60
    assert _sample("kueue_local_queue_admitted_until_ready_wait_time_seconds_sum", lq) == 10


def test_eviction_of_a_ready_workload_observes_the_time_since_pods_ready() -> None:
    wl: dict[str, Any] = {
        "metadata": {"name": "w", "namespace": "metrics-ns"},
        "status": {
            "conditions": [{"type": "PodsReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:30Z"}]
        },
    }
    rep = reporter.MetricsReporter(Configuration())
    rep.evicted("metrics-ns/w", "metrics-evict", "Preempted", wl, now=datetime(2026, 1, 1, 0, 2, tzinfo=UTC))
    labels = {"cluster_queue": "metrics-evict", "reason": "Preempted", "underlying_cause": "", "replica_role": "leader"}
    assert _sample("kueue_pods_ready_to_evicted_time_seconds_sum", labels) == 90
    assert _sample("kueue_pods_ready_to_evicted_time_seconds_count", labels) == 1
    # Pods never ready: counted as evicted, but no time observed (upstream's nil duration).
    wl["status"]["conditions"][0].update(status="False", reason="WaitForStart")
    rep.evicted("metrics-ns/w", "metrics-evict", "PodsReadyTimeout", wl)
    timeout = {**labels, "reason": "PodsReadyTimeout"}
    assert _sample("kueue_evicted_workloads_total", {**timeout, "priority_class": ""}) == 1
    assert _sample("kueue_pods_ready_to_evicted_time_seconds_count", timeout) is None
    # The Evicted condition already True (here as written by the workload controller): timed to its
    # transition, not to the call, as upstream reads it off the patched object.
    wl["status"]["conditions"] = [
        {"type": "PodsReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:30Z"},
        {"type": "Evicted", "status": "True", "reason": "Deactivated", "lastTransitionTime": "2026-01-01T00:00:40Z"},
    ]
    rep.evicted("metrics-ns/w", "metrics-evict", "Deactivated", wl, now=datetime(2026, 1, 1, 1, tzinfo=UTC))
    assert _sample("kueue_pods_ready_to_evicted_time_seconds_sum", {**labels, "reason": "Deactivated"}) == 10


def test_pending_resources_sum_the_requests_of_pending_workloads_per_resource() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    core = AdmissionCore()
    core.on_resource_flavor({"metadata": {"name": "default"}, "spec": {}}, now)
    core.on_namespace("metrics-ns", {}, now)
    core.on_cluster_queue(_cq("metrics-pending", stop="Hold"), now)  # held: everything stays pending
    core.on_local_queue(
        {"metadata": {"name": "lq", "namespace": "metrics-ns"}, "spec": {"clusterQueue": "metrics-pending"}}, now
    )
    for name, count in (("a", 3), ("b", 2)):
        core.on_workload(
            {
                "metadata": {
                    "name": name,
                    "namespace": "metrics-ns",
                    "uid": name,
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
                "spec": {
                    "queueName": "lq",
                    "podSets": [
                        {
                            "name": "main",
                            "count": count,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                                    ]
                                }
                            },
                        }
                    ],
                },
            },
            now,
        )
    rep = reporter.MetricsReporter(Configuration(metrics=Metrics(enable_cluster_queue_resources=True)))
    rep.refresh(core)
    labels = {"cluster_queue": "metrics-pending", "replica_role": "leader"}
    assert _sample("kueue_pending_workloads", {**labels, "status": "inadmissible"}) == 2
    assert (
        _sample("kueue_cluster_queue_resource_pending", {**labels, "resource": "cpu"}) == 2.5
    )  # cores, as the other gauges
    assert _sample("kueue_cluster_queue_resource_pending", {**labels, "resource": "memory"}) == 5 * 2**30
    # Pods already done (status.reclaimablePods) are not requested any more (`podSetsCountsAfterReclaim`).
    core.on_workload(
        {
            "metadata": {
                "name": "a",
                "namespace": "metrics-ns",
                "uid": "a",
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 3,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                                ]
                            }
                        },
                    }
                ],
            },
            "status": {"reclaimablePods": [{"name": "main", "count": 2}]},
        },
        now,
    )
    rep.refresh(core)
    assert _sample("kueue_cluster_queue_resource_pending", {**labels, "resource": "cpu"}) == 1.5
    assert _sample("kueue_cluster_queue_resource_pending", {**labels, "resource": "memory"}) == 3 * 2**30
    core.on_workload_deleted("metrics-ns", "a", now)
    core.on_workload_deleted("metrics-ns", "b", now)
    rep.refresh(core)
    assert _sample("kueue_cluster_queue_resource_pending", {**labels, "resource": "cpu"}) == 0  # configured: kept at 0
    assert _sample("kueue_cluster_queue_resource_pending", {**labels, "resource": "memory"}) is None


def test_preemption_skips_and_recomputations_follow_the_cycle() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    core = AdmissionCore()
    core.on_resource_flavor({"metadata": {"name": "default"}, "spec": {}}, now)
    core.on_cluster_queue(_cq("metrics-skips"), now)
    rep = reporter.MetricsReporter(Configuration())
    role = {"replica_role": "leader"}
    rep.cycle(
        CycleResult(preemption_skips={"metrics-skips": 2}, recomputations=[("metrics-skips", "deferred_fit")]), 0.01
    )
    assert _sample("kueue_admission_cycle_preemption_skips", {"cluster_queue": "metrics-skips", **role}) == 2
    assert (
        _sample(
            "kueue_preemption_target_recomputations_total",
            {"cluster_queue": "metrics-skips", "result": "deferred_fit", **role},
        )
        == 1
    )
    rep.cycle(CycleResult(), 0.01)  # a cycle without skips leaves the last value, as upstream's gauge
    rep.refresh(core)
    assert _sample("kueue_admission_cycle_preemption_skips", {"cluster_queue": "metrics-skips", **role}) == 2
    core.on_cluster_queue_deleted("metrics-skips", now)
    rep.refresh(core)
    assert _sample("kueue_admission_cycle_preemption_skips", {"cluster_queue": "metrics-skips", **role}) is None


@pytest.mark.parametrize(
    ("recompute", "skips", "recomputed"),
    [
        pytest.param(True, None, 1, id="recompute gate on: one skipped recomputation"),
        pytest.param(False, 1, 0, id="recompute gate off: one preemption skip"),
    ],
)
def test_overlapping_preemption_targets_feed_skips_and_recomputations(
    recompute: bool, skips: int | None, recomputed: int
) -> None:
    """Upstream's flavor-stickiness scenario: cq-2's workload takes cq-1's preemption target first; cq-1's
    workload is then recomputed (gate on) or skipped (gate off), and the cycle's counts reach the series."""
    core = make_core(
        make_flavor("default").obj(),
        make_flavor("on-demand").obj(),
        *TWO_FLAVORS,
        *STICKY,
        namespaces={"default": {}},
        fair_sharing=True,
        recompute_on_overlap=recompute,
    )
    role = {"replica_role": "leader"}
    skipped = {"cluster_queue": "cq-1", "result": "skipped", **role}
    before = _sample("kueue_preemption_target_recomputations_total", skipped) or 0
    rep = reporter.MetricsReporter(Configuration())
    rep.cycle(core.schedule(datetime(2025, 1, 1, tzinfo=UTC)), 0.01)
    assert (_sample("kueue_preemption_target_recomputations_total", skipped) or 0) == before + recomputed
    assert _sample("kueue_admission_cycle_preemption_skips", {"cluster_queue": "cq-1", **role}) == skips
    core.on_cluster_queue_deleted("cq-1", datetime(2025, 1, 1, tzinfo=UTC))
    rep.cluster_queue_deleted("cq-1")  # leave no series behind for the other row
    assert _sample("kueue_admission_cycle_preemption_skips", {"cluster_queue": "cq-1", **role}) is None


def test_a_scored_admission_is_observed_per_estimate_and_an_unknown_first_one_counted() -> None:
    from tests.metric_samples import value
    from webhook.core.estimate_accuracy import Scored

    cq = "metrics-estimate-cq"
    metrics.observe_wait_estimate(Scored(cq, -40.0, 3.0))
    metrics.observe_wait_estimate(Scored(cq, None, 7.0))
    registry = metrics.WORKER_REGISTRY
    first = {"cluster_queue": cq, "estimate": "first"}
    latest = {"cluster_queue": cq, "estimate": "latest"}
    assert value(registry, "pykueue_wait_estimate_error_seconds_count", first) == 1
    assert value(registry, "pykueue_wait_estimate_error_seconds_sum", first) == 40.0  # absolute error
    assert value(registry, "pykueue_wait_estimate_error_seconds_bucket", {**latest, "le": "5.0"}) == 1
    assert value(registry, "pykueue_wait_estimate_error_seconds_count", latest) == 2
    assert value(registry, "pykueue_wait_estimates_unknown_total", {"cluster_queue": cq}) == 1
