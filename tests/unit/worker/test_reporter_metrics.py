"""Values of the worker's series after a scenario: finished and unadmitted Workloads, execution time,
eviction latency, weighted shares and workload creation latency (`pkg/metrics/metrics.go`)."""

from __future__ import annotations

import math
import threading
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import generate_latest

from tests.builders import (
    T0,
    fq,
    make_cohort,
    make_core,
    make_cq,
    make_flavor,
    make_lq,
    make_wl,
    psa,
    ts,
)
from tests.metric_samples import bucket_bounds
from tests.unit.fake_kube import FakeKube
from webhook import metrics
from webhook.config import Configuration, FairSharing, Metrics
from webhook.core.cycle import CycleResult
from webhook.worker import reporter
from webhook.worker.manager import Manager
from webhook.worker.reporter import MetricsReporter, WorkloadState
from webhook.worker.store import object_key

ROLE = {"replica_role": "leader"}


def sample(series: str, **labels: str) -> float:
    return metrics.WORKER_REGISTRY.get_sample_value(series, {**labels, **ROLE}) or 0.0


def present(series: str, **labels: str) -> bool:
    return metrics.WORKER_REGISTRY.get_sample_value(series, {**labels, **ROLE}) is not None


def admitted(name: str, cq: str, lq: str = "lq") -> Any:
    return make_wl(name).queue(lq).request(cpu="1").reserve(cq, psa(cpu=("default", "1")))


def test_finishing_counts_the_workload_and_observes_its_execution_time() -> None:
    old = admitted("done", "fin-cq").obj()
    old["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    new = make_wl("done").condition("Finished", "True", "Succeeded", "", at=90).obj()
    new["spec"] = old["spec"]
    new["status"] = {
        **old["status"],
        "conditions": old["status"]["conditions"] + new["status"]["conditions"],
        "accumulatedPastExecutionTimeSeconds": 10,
    }
    rep = MetricsReporter(Configuration())
    labels = {"cluster_queue": "fin-cq", "priority_class": "high"}
    before = sample("kueue_finished_workloads_total", **labels)
    rep.workload_updated(WorkloadState.of(old), new, T0 + timedelta(seconds=95))
    rep.workload_updated(WorkloadState.of(new), new, T0 + timedelta(seconds=96))  # no transition, no count
    assert sample("kueue_finished_workloads_total", **labels) == before + 1
    assert sample("kueue_execution_time_seconds_sum", **labels) == 100  # 90 s admitted→finished + 10 s earlier runs
    assert sample("kueue_execution_time_seconds_bucket", **labels, le="80.0") == 0
    assert sample("kueue_execution_time_seconds_bucket", **labels, le="160.0") == 1
    lq = {
        "name": "lq",
        "namespace": "ns",
        "priority_class": "high",
    }  # series the LocalQueue metrics add (on by default)
    assert sample("kueue_local_queue_finished_workloads_total", **lq) == 1
    assert sample("kueue_local_queue_execution_time_seconds_count", **lq) == 1


@pytest.mark.parametrize(
    ("reason", "counted"),
    [
        pytest.param("WorkloadSliceReplaced", 1, id="replaced"),
        pytest.param("OutOfSync", 0, id="out of sync"),
    ],
)
def test_a_slice_finished_as_replaced_counts_whichever_controller_finished_it(reason: str, counted: int) -> None:
    """The Job reconciler may finish a replaced slice before the scheduler's own write does (its
    message differs): the replaced-slices counter still counts it, once."""
    old = admitted("slice", "slice-cq").obj()
    new = (
        admitted("slice", "slice-cq")
        .condition("Finished", "True", reason, "Replaced to accommodate a new workload slice")
        .obj()
    )
    rep = MetricsReporter(Configuration())
    before = sample("kueue_replaced_workload_slices_total", cluster_queue="slice-cq")
    rep.workload_updated(WorkloadState.of(old), new, T0)
    rep.workload_updated(WorkloadState.of(new), new, T0)  # no transition, no count
    assert sample("kueue_replaced_workload_slices_total", cluster_queue="slice-cq") == before + counted


def test_eviction_latency_is_observed_when_quota_is_released() -> None:
    old = admitted("evicted", "evict-cq").evicted("Preempted").obj()  # Evicted=True at T0, still holding quota
    new = (
        make_wl("evicted")
        .queue("lq")
        .request(cpu="1")
        .evicted("Preempted")
        .condition("QuotaReserved", "False", "Pending")
        .obj()
    )
    rep = MetricsReporter(Configuration())
    rep.workload_updated(WorkloadState.of(old), new, T0 + timedelta(seconds=30))
    labels = {"cluster_queue": "evict-cq", "reason": "Preempted"}
    assert sample("kueue_workload_eviction_latency_seconds_sum", **labels) == 30
    assert sample("kueue_workload_eviction_latency_seconds_bucket", **labels, le="40.0") == 1
    assert sample("kueue_workload_eviction_latency_seconds_bucket", **labels, le="20.0") == 0
    rep.workload_updated(WorkloadState.of(new), new, T0 + timedelta(seconds=31))  # already pending: nothing more
    assert sample("kueue_workload_eviction_latency_seconds_count", **labels) == 1


@pytest.mark.parametrize("gate", [True, False])
def test_refresh_counts_finished_and_unadmitted_workloads_per_queue(gate: bool) -> None:
    """kueue_unadmitted_workloads needs gate UnadmittedWorkloadsObservability (Beta but off in v0.19.2,
    `pkg/features/kube_features.go`); the finished counts do not."""
    cq_name = f"una-cq-{gate}"
    objs = [
        make_flavor("default").obj(),
        make_cq(cq_name).group(fq("default", cpu="4")).obj(),
        make_lq("una-lq", "ns", cq_name),
    ]
    core = make_core(*objs)
    never_seen = make_wl("new").queue("una-lq").request(cpu="1").obj()
    waiting = make_wl("waiting").queue("una-lq").request(cpu="1").condition("QuotaReserved", "False", "Pending").obj()
    waiting2 = make_wl("waiting2").queue("una-lq").request(cpu="1").condition("QuotaReserved", "False", "Pending").obj()
    checks = admitted("checks", cq_name, "una-lq").condition("Admitted", "False", "NoChecks").obj()
    running = admitted("running", cq_name, "una-lq").obj()
    done = admitted("done", cq_name, "una-lq").finished().obj()
    no_queue = make_wl("orphan").queue("missing").request(cpu="1").obj()
    rep = MetricsReporter(Configuration(feature_gates={"UnadmittedWorkloadsObservability": gate}))
    for wl in (never_seen, waiting, waiting2, checks, running, done, no_queue):
        rep.workload_event(f"ns/{wl['metadata']['name']}", wl)
    rep.refresh(core)
    cq = {"cluster_queue": cq_name}
    assert sample("kueue_finished_workloads", **cq) == 1
    if not gate:
        assert sample("kueue_unadmitted_workloads", **cq, reason="NoReservation", underlying_cause="Pending") == 0
        return
    assert sample("kueue_unadmitted_workloads", **cq, reason="NoReservation", underlying_cause="PendingEvaluation") == 1
    assert sample("kueue_unadmitted_workloads", **cq, reason="NoReservation", underlying_cause="Pending") == 2
    assert sample("kueue_unadmitted_workloads", **cq, reason="NoChecks", underlying_cause="") == 1
    lq = {"name": "una-lq", "namespace": "ns"}
    assert (
        sample("kueue_local_queue_unadmitted_workloads", **lq, **cq, reason="NoReservation", underlying_cause="Pending")
        == 2
    )
    assert sample("kueue_finished_workloads", **cq) == 1
    assert sample("kueue_local_queue_finished_workloads", **lq) == 1
    rep.workload_event("ns/waiting", admitted("waiting", "una-cq", "una-lq").obj())  # admitted now
    for gone in (never_seen, waiting2, checks, done, no_queue):
        rep.workload_event(f"ns/{gone['metadata']['name']}", None)
    rep.refresh(core)
    assert not present("kueue_unadmitted_workloads", **cq, reason="NoReservation", underlying_cause="Pending")
    assert sample("kueue_finished_workloads", **cq) == 0 and present("kueue_finished_workloads", **cq)


def test_weighted_shares_with_fair_sharing() -> None:
    objs = [
        make_flavor("default").obj(),
        make_cohort("ws-root").obj(),
        make_cohort("ws-child").parent("ws-root").obj(),
        make_cq("ws-a").cohort("ws-child").group(fq("default", cpu="2")).obj(),
        make_cq("ws-b").cohort("ws-root").group(fq("default", cpu="2")).obj(),
        make_wl("w").request(cpu="3").reserve("ws-a", psa(cpu=("default", "3"))).obj(),
    ]
    core = make_core(*objs, fair_sharing=True)
    MetricsReporter(
        Configuration(fair_sharing=FairSharing(), metrics=Metrics(enable_cluster_queue_resources=True))
    ).refresh(core)
    assert sample("kueue_cohort_weighted_share", cohort="ws-child") == 250  # 1 CPU borrowed x 1000 / 4 lendable
    assert sample("kueue_cohort_weighted_share", cohort="ws-root") == 0
    assert sample("kueue_cluster_queue_weighted_share", cluster_queue="ws-a", cohort="ws-child") > 0
    assert sample("kueue_cluster_queue_weighted_share", cluster_queue="ws-b", cohort="ws-root") == 0


def test_a_deleted_cluster_queue_keeps_its_last_weighted_share() -> None:
    """Upstream's e2e "should ensure the default metrics are available" expects
    `kueue_cluster_queue_weighted_share` to outlive its deleted ClusterQueue (the gauge is in the
    cohort-change cleanup scope, which ClearClusterQueueMetrics does not touch); a recreated
    ClusterQueue of that name reports its own share again."""
    objs = [
        make_flavor("default").obj(),
        make_cohort("wsd-root").obj(),
        make_cq("wsd-a").cohort("wsd-root").group(fq("default", cpu="1")).obj(),
        make_cq("wsd-b").cohort("wsd-root").group(fq("default", cpu="4")).obj(),
        make_wl("wsd-w").request(cpu="3").reserve("wsd-a", psa(cpu=("default", "3"))).obj(),
    ]
    core = make_core(*objs, fair_sharing=True)
    reporter = MetricsReporter(
        Configuration(fair_sharing=FairSharing(), metrics=Metrics(enable_cluster_queue_resources=True))
    )
    reporter.refresh(core)
    share = sample("kueue_cluster_queue_weighted_share", cluster_queue="wsd-a", cohort="wsd-root")
    assert share > 0

    core.on_workload_deleted("ns", "wsd-w", T0)
    core.on_cluster_queue_deleted("wsd-a", T0)
    reporter.cluster_queue_deleted("wsd-a")
    reporter.refresh(core)
    assert sample("kueue_cluster_queue_weighted_share", cluster_queue="wsd-a", cohort="wsd-root") == share

    core.on_cluster_queue(make_cq("wsd-a").cohort("wsd-root").group(fq("default", cpu="1")).obj(), T0)
    reporter.refresh(core)
    assert sample("kueue_cluster_queue_weighted_share", cluster_queue="wsd-a", cohort="wsd-root") == 0


def test_zero_weight_borrower_reports_nan_for_a_cluster_queue_and_inf_for_a_cohort() -> None:
    objs = [
        make_flavor("default").obj(),
        make_cohort("zw-root").obj(),
        make_cohort("zw-child").parent("zw-root").weight("0").obj(),
        make_cq("zw-a").cohort("zw-child").weight("0").group(fq("default", cpu="2")).obj(),
        make_cq("zw-b").cohort("zw-root").group(fq("default", cpu="2")).obj(),
        make_wl("w").request(cpu="3").reserve("zw-a", psa(cpu=("default", "3"))).obj(),
    ]
    core = make_core(*objs, fair_sharing=True)
    MetricsReporter(
        Configuration(fair_sharing=FairSharing(), metrics=Metrics(enable_cluster_queue_resources=True))
    ).refresh(core)
    assert math.isnan(sample("kueue_cluster_queue_weighted_share", cluster_queue="zw-a", cohort="zw-child"))
    assert sample("kueue_cohort_weighted_share", cohort="zw-child") == math.inf


def test_workload_creation_latency_only_for_first_generation_owners() -> None:
    job = {"metadata": {"creationTimestamp": ts(0), "generation": 1}}
    wl = {"metadata": {"creationTimestamp": ts(3)}}
    before = sample("kueue_workload_creation_latency_seconds_count", job_kind="Job")
    reporter.workload_created("Job", job, wl)
    reporter.workload_created("Job", {"metadata": {"creationTimestamp": ts(0), "generation": 2}}, wl)
    assert sample("kueue_workload_creation_latency_seconds_count", job_kind="Job") == before + 1
    creation = {"job_kind": "Job", **ROLE}
    assert bucket_bounds(metrics.WORKLOAD_CREATION_LATENCY, creation) == [0.01 * 2**i for i in range(11)]


def test_manager_reports_finished_on_the_watch_event_even_after_its_own_write() -> None:
    """The job reconciler stores its Finished write before the watch event arrives; the transition
    is still seen, once."""
    mgr = Manager(FakeKube(), Configuration(), identity="test", stop=threading.Event())
    wl = admitted("watched", "watch-cq").obj()
    wl["metadata"]["resourceVersion"] = "1"
    finished = admitted("watched", "watch-cq").finished().obj()
    finished["metadata"]["resourceVersion"] = "2"
    labels = {"cluster_queue": "watch-cq", "priority_class": ""}
    mgr._event("workloads", "ADDED", wl)
    mgr.store.put("workloads", finished)  # the writer's copy
    mgr._event("workloads", "MODIFIED", finished)
    mgr._event("workloads", "MODIFIED", finished)
    assert sample("kueue_finished_workloads_total", **labels) == 1


def test_preempting_a_ready_workload_observes_pods_ready_to_evicted() -> None:
    """The scheduler preempts a workload whose pods have been ready since T0+30s; the manager records
    the time from PodsReady to the Evicted condition it writes (upstream's `reportEvictedWorkload`)."""
    mgr = Manager(FakeKube(), Configuration(), identity="test", stop=threading.Event())
    mgr.core.on_namespace("ns", {"kubernetes.io/metadata.name": "ns"}, T0)
    running = (
        make_wl("ready-victim")
        .queue("lq")
        .priority(0)
        .request(cpu="2")
        .reserve("ready-cq", psa(cpu=("default", "2")))
        .condition("PodsReady", "True", "PodsReady", "", at=30)
        .obj()
    )
    starting = (
        make_wl("starting-victim")
        .queue("lq")
        .priority(0)
        .request(cpu="2")
        .reserve("ready-cq", psa(cpu=("default", "2")))
        .condition("PodsReady", "False", "WaitForStart", "", at=30)
        .obj()
    )
    high = make_wl("preemptor").queue("lq").priority(100).request(cpu="4").obj()
    objs = [
        make_flavor("default").obj(),
        make_cq("ready-cq").preemption(within="LowerPriority").group(fq("default", cpu="4")).obj(),
        make_lq("lq", "ns", "ready-cq"),
        running,
        starting,
        high,
    ]
    kinds = {
        "ResourceFlavor": "resourceflavors",
        "ClusterQueue": "clusterqueues",
        "LocalQueue": "localqueues",
        "Workload": "workloads",
    }
    for obj in objs:
        mgr.store.put(kinds[obj["kind"]], obj)
        mgr._feed(kinds[obj["kind"]], "ADDED", obj, T0)
    now = T0 + timedelta(seconds=120)
    result = mgr.core.schedule(now)
    assert [sorted(str(v.key) for v in d.targets) for d in result.preempted] == [
        ["ns/ready-victim", "ns/starting-victim"]
    ]
    mgr.decisions.dispatch(result, now)
    labels = {"cluster_queue": "ready-cq", "reason": "Preempted", "underlying_cause": ""}
    assert sample("kueue_evicted_workloads_total", **labels, priority_class="") == 2
    # Only the victim whose pods were ready is timed: 90 s, in the (80, 160] bucket.
    assert sample("kueue_pods_ready_to_evicted_time_seconds_count", **labels) == 1
    assert sample("kueue_pods_ready_to_evicted_time_seconds_sum", **labels) == 90
    assert sample("kueue_pods_ready_to_evicted_time_seconds_bucket", **labels, le="80.0") == 0
    assert sample("kueue_pods_ready_to_evicted_time_seconds_bucket", **labels, le="160.0") == 1
    assert bucket_bounds(metrics.PODS_READY_TO_EVICTED_TIME, {**labels, **ROLE}) == list(
        metrics.exponential_buckets(14)
    )


def test_deleting_a_queue_drops_its_counters_and_histograms() -> None:
    """Upstream's ClearClusterQueueMetrics / ClearLocalQueueMetrics on the delete events: every series
    of the queue goes, other queues' stay."""
    mgr = Manager(FakeKube(), Configuration(), identity="test", stop=threading.Event())
    for cq in ("gone-cq", "kept-cq"):
        mgr._feed("clusterqueues", "ADDED", make_cq(cq).group(fq("default", cpu="1")).obj(), T0)
        metrics.EVICTED_WORKLOADS.labels(cq, "Preempted", "", "", "leader").inc()
        metrics.PODS_READY_TO_EVICTED_TIME.labels(cq, "Preempted", "", "leader").observe(5)
        metrics.POD_SCHEDULING_GATE_REMOVAL.labels("kueue.x-k8s.io/admission", cq, "false", "leader").observe(1)
        metrics.PREEMPTION_TARGET_RECOMPUTATIONS.labels(cq, "skipped", "leader").inc()
        metrics.PREEMPTED_WORKLOADS.labels(cq, "InClusterQueue", "leader").inc()
        metrics.LOCAL_QUEUE_EVICTED_WORKLOADS.labels(f"lq-{cq}", "ns", "Preempted", "", "", "leader").inc()
    mgr.reporter.cycle(CycleResult(preemption_skips={"gone-cq": 1, "kept-cq": 1}), 0.01)
    gone = make_cq("gone-cq").obj()
    mgr._feed("clusterqueues", "DELETED", gone, T0)
    mgr._feed("localqueues", "DELETED", make_lq("lq-gone-cq", "ns", "gone-cq"), T0)
    for cq, kept in (("gone-cq", False), ("kept-cq", True)):
        assert (
            present(
                "kueue_evicted_workloads_total",
                cluster_queue=cq,
                reason="Preempted",
                underlying_cause="",
                priority_class="",
            )
            is kept
        )
        assert (
            present(
                "kueue_pods_ready_to_evicted_time_seconds_count",
                cluster_queue=cq,
                reason="Preempted",
                underlying_cause="",
            )
            is kept
        )
        assert (
            present(
                "kueue_pod_scheduling_gate_removal_seconds_count",
                name="kueue.x-k8s.io/admission",
                cluster_queue=cq,
                is_group="false",
            )
            is kept
        )
        assert present("kueue_preemption_target_recomputations_total", cluster_queue=cq, result="skipped") is kept
        assert present("kueue_preempted_workloads_total", preempting_cluster_queue=cq, reason="InClusterQueue") is kept
        assert present("kueue_admission_cycle_preemption_skips", cluster_queue=cq) is kept
        assert (
            present(
                "kueue_local_queue_evicted_workloads_total",
                name=f"lq-{cq}",
                namespace="ns",
                reason="Preempted",
                underlying_cause="",
                priority_class="",
            )
            is kept
        )
    mgr.reporter.refresh(mgr.core)  # the next refresh does not bring the skips gauge back
    assert not present("kueue_admission_cycle_preemption_skips", cluster_queue="gone-cq")
    assert present("kueue_admission_cycle_preemption_skips", cluster_queue="kept-cq")


def test_manager_passes_the_recompute_gate_to_the_core() -> None:
    """RecomputeAssignmentUponPreemptionTargetsOverlap (off by default, as in v0.19.2) decides whether
    the scheduler recomputes overlapping preemption targets, and so whether recomputations are counted."""
    off = Manager(FakeKube(), Configuration(), identity="test", stop=threading.Event())
    on = Manager(
        FakeKube(),
        Configuration(feature_gates={"RecomputeAssignmentUponPreemptionTargetsOverlap": True}),
        identity="test",
        stop=threading.Event(),
    )
    assert on.core.config.recompute_on_overlap and not off.core.config.recompute_on_overlap


def local_queue_series(text: str, namespace: str, name: str) -> set[str]:
    """The sample names of an exposition that carry the LocalQueue's `name` and `namespace` labels."""
    wanted = (f'name="{name}"', f'namespace="{namespace}"')
    return {
        line.split("{", 1)[0]
        for line in text.splitlines()
        if line.startswith("kueue_local_queue_") and all(label in line for label in wanted)
    }


def test_local_queue_series_follow_the_deletion_of_its_cluster_queue_then_of_itself() -> None:
    """Upstream's e2e "should ensure the default metrics are available": with a Workload admitted,
    the Workload and the ClusterQueue are deleted. The scheduler cache's LocalQueue gauges go with
    the ClusterQueue (`Cache.DeleteClusterQueue` → `ClearLocalQueueCacheMetrics`); nor are usage
    series recorded for a LocalQueue without its ClusterQueue (`RecordLocalQueueResourceMetrics`).
    Pending counts stay at 0 and counters stay until the LocalQueue's own deletion
    (`Manager.DeleteLocalQueue` → `ClearLocalQueueMetrics`), after which nothing is left."""
    mgr = Manager(FakeKube(), Configuration(), identity="test", stop=threading.Event())
    mgr.core.on_namespace("lqdel-ns", {"kubernetes.io/metadata.name": "lqdel-ns"}, T0)
    wl = make_wl("w", "lqdel-ns").queue("lqdel-lq").request(cpu="1").obj()
    objs = [
        ("resourceflavors", make_flavor("default").obj()),
        ("clusterqueues", make_cq("lqdel-cq").group(fq("default", cpu="1")).obj()),
        ("localqueues", make_lq("lqdel-lq", "lqdel-ns", "lqdel-cq")),
        ("workloads", wl),
    ]
    for kind, obj in objs:
        mgr.store.put(kind, obj)
        mgr._feed(kind, "ADDED", obj, T0)
    now = T0 + timedelta(seconds=5)
    result = mgr.core.schedule(now)
    assert [str(d.key) for d in result.admitted] == ["lqdel-ns/w"]
    mgr.decisions.dispatch(result, now)

    def scrape() -> set[str]:
        mgr.reporter.refresh(mgr.core)
        return local_queue_series(generate_latest(metrics.WORKER_REGISTRY).decode(), "lqdel-ns", "lqdel-lq")

    counters = {
        "kueue_local_queue_quota_reserved_workloads_total",
        "kueue_local_queue_quota_reserved_wait_time_seconds_count",
        "kueue_local_queue_admitted_workloads_total",
        "kueue_local_queue_admission_wait_time_seconds_count",
    }
    cache_gauges = {
        "kueue_local_queue_reserving_active_workloads",
        "kueue_local_queue_admitted_active_workloads",
        "kueue_local_queue_resource_reservation",
        "kueue_local_queue_resource_usage",
    }
    assert scrape() >= counters | cache_gauges | {"kueue_local_queue_pending_workloads", "kueue_local_queue_status"}

    for kind, obj in (("workloads", wl), ("clusterqueues", objs[1][1])):
        mgr.store.delete(kind, object_key(obj))
        mgr._feed(kind, "DELETED", obj, now)
    left = scrape()
    assert not left & cache_gauges
    assert left >= counters | {"kueue_local_queue_pending_workloads", "kueue_local_queue_status"}
    lq = {"name": "lqdel-lq", "namespace": "lqdel-ns"}
    assert sample("kueue_local_queue_pending_workloads", **lq, status="active") == 0
    assert present("kueue_local_queue_pending_workloads", **lq, status="inadmissible")
    assert sample("kueue_local_queue_status", **lq, active="False") == 1

    mgr._feed("localqueues", "DELETED", objs[2][1], now)
    # Stricter than upstream for `kueue_local_queue_status`, which its cache leaves behind when the
    # ClusterQueue went first: nothing of the LocalQueue outlives it here.
    assert scrape() == set()


def test_stopping_a_local_queue_drops_what_the_queue_manager_reported_for_it() -> None:
    """A stopped LocalQueue leaves upstream's queue manager (`LocalQueueReconciler.Update` →
    `Manager.DeleteLocalQueue` → `ClearLocalQueueMetrics`): its pending and finished gauges and its
    counters go, while the cache's gauges and the status stay. Restarting it brings the gauges back."""
    mgr = Manager(FakeKube(), Configuration(), identity="test", stop=threading.Event())
    mgr.core.on_namespace("lqstop-ns", {"kubernetes.io/metadata.name": "lqstop-ns"}, T0)
    objs = [
        ("resourceflavors", make_flavor("default").obj()),
        ("clusterqueues", make_cq("lqstop-cq").group(fq("default", cpu="1")).obj()),
        ("localqueues", make_lq("lqstop-lq", "lqstop-ns", "lqstop-cq")),
        ("workloads", make_wl("running", "lqstop-ns").queue("lqstop-lq").request(cpu="1").obj()),
        ("workloads", make_wl("waiting", "lqstop-ns").queue("lqstop-lq").request(cpu="1").obj()),
    ]
    for kind, obj in objs:
        mgr.store.put(kind, obj)
        mgr._feed(kind, "ADDED", obj, T0)
    now = T0 + timedelta(seconds=5)
    mgr.decisions.dispatch(mgr.core.schedule(now), now)

    def scrape() -> set[str]:
        mgr.reporter.refresh(mgr.core)
        return local_queue_series(generate_latest(metrics.WORKER_REGISTRY).decode(), "lqstop-ns", "lqstop-lq")

    manager_series = {
        "kueue_local_queue_pending_workloads",
        "kueue_local_queue_finished_workloads",
        "kueue_local_queue_quota_reserved_workloads_total",
        "kueue_local_queue_admitted_workloads_total",
    }
    cache_series = {
        "kueue_local_queue_reserving_active_workloads",
        "kueue_local_queue_admitted_active_workloads",
        "kueue_local_queue_status",
    }
    assert scrape() >= manager_series | cache_series

    mgr._feed("localqueues", "MODIFIED", make_lq("lqstop-lq", "lqstop-ns", "lqstop-cq", stop="Hold"), now)
    left = scrape()
    assert not left & manager_series
    assert left >= cache_series
    assert sample("kueue_local_queue_reserving_active_workloads", name="lqstop-lq", namespace="lqstop-ns") == 1

    mgr._feed("localqueues", "MODIFIED", make_lq("lqstop-lq", "lqstop-ns", "lqstop-cq"), now)
    assert scrape() >= {"kueue_local_queue_pending_workloads", "kueue_local_queue_finished_workloads"} | cache_series
