"""Custom metric labels (gate CustomMetricLabels, `pkg/metrics/custom_labels.go`) and the LocalQueue
selector (`metrics.localQueueMetrics.localQueueSelector`, `pkg/metrics/localqueue.go`) as a scrape
sees them: label names, the values read from the queues' labels and annotations, and the series a
label change or a LocalQueue leaving the selector removes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.builders import T0, fq, make_cohort, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook import metrics
from webhook.config import Configuration, LocalQueueMetrics, Metrics, MetricsCustomLabel
from webhook.core.decisions import Admit
from webhook.core.workload import WorkloadKey
from webhook.worker import process, reporter
from webhook.worker.reporter import MetricsReporter

ROLE = {"replica_role": "leader"}
UNTRACKED = "kueue.x-k8s.io/_UNTRACKED_VALUE_"

ENTRIES = (
    MetricsCustomLabel("team"),  # a ClusterQueue label named like the entry
    MetricsCustomLabel("cost", source_annotation_key="example.com/cost", tracked_values=("low", "high")),
    MetricsCustomLabel("owner", source_label_key="example.com/owner", source_kind="LocalQueue"),
    MetricsCustomLabel("org", source_kind="Cohort"),
    MetricsCustomLabel("tier", source_kind="Workload", tracked_values=("gold",)),
)
GATE = {"CustomMetricLabels": True}


@pytest.fixture
def custom() -> Iterator[metrics.CustomLabels]:
    """The series with `ENTRIES`' labels for one test, and without any again after it."""
    store = metrics.CustomLabels(ENTRIES)
    metrics.configure(store)
    try:
        yield store
    finally:
        metrics.configure(None)


def sample(series: str, **labels: str) -> float | None:
    return metrics.WORKER_REGISTRY.get_sample_value(series, {**labels, **ROLE})


def meta(obj: dict[str, Any], labels: dict[str, str] | None = None, **annotations: str) -> dict[str, Any]:
    obj["metadata"]["labels"] = dict(labels or {})
    obj["metadata"]["annotations"] = dict(annotations)
    return obj


def _decision(key: str, cq: str) -> Admit:
    return Admit(key=WorkloadKey(key), uid="", cluster_queue=cq, admission={}, conditions=())


def label_names(family: metrics.Family[Any]) -> tuple[str, ...]:
    return family.label_names


# == label names ===================================================================================


def test_every_series_of_a_queue_or_cohort_ends_with_the_custom_labels_of_its_kind(
    custom: metrics.CustomLabels,
) -> None:
    """Upstream appends the labels of a series' source kinds after `replica_role`, kinds in name
    order, entries in config order (`InitMetricVectors`, `LabelNames`)."""
    cq, lq, co = ("custom_team", "custom_cost"), ("custom_owner",), ("custom_org",)
    assert label_names(metrics.PENDING_WORKLOADS) == ("cluster_queue", "status", "replica_role", *cq)
    assert label_names(metrics.PREEMPTED_WORKLOADS) == ("preempting_cluster_queue", "reason", "replica_role", *cq)
    assert label_names(metrics.ADMITTED_ACTIVE_WORKLOADS) == ("cluster_queue", "replica_role", *cq, "custom_tier")
    assert label_names(metrics.LOCAL_QUEUE_STATUS) == ("name", "namespace", "active", "replica_role", *lq)
    assert label_names(metrics.WORKLOAD_CREATION_LATENCY) == ("job_kind", "replica_role", *lq)
    assert label_names(metrics.COHORT_SUBTREE_QUOTA) == ("cohort", "flavor", "resource", "replica_role", *co)
    # upstream gives this Cohort series the ClusterQueue labels
    assert label_names(metrics.COHORT_SUBTREE_ADMITTED_ACTIVE_WORKLOADS) == ("cohort", "replica_role", *cq)
    assert label_names(metrics.ADMISSION_ATTEMPTS) == ("result", "replica_role")
    with_custom = [f for f in vars(metrics).values() if isinstance(f, metrics.Family) and f.kinds]
    # upstream's 55 (local_queue_admission_fair_sharing_usage included), plus the three series of
    # upstream's main: execution_time_seconds (CQ and LQ) and preemption_target_recomputations_total
    assert len(with_custom) == 58


def test_without_configure_no_series_has_custom_labels() -> None:
    assert label_names(metrics.PENDING_WORKLOADS) == ("cluster_queue", "status", "replica_role")


@pytest.mark.parametrize(
    ("gates", "labelled"),
    [pytest.param({"CustomMetricLabels": True}, True, id="gate on"), pytest.param({}, False, id="gate off")],
)
def test_the_worker_process_configures_the_labels_only_with_the_gate(
    gates: dict[str, bool], labelled: bool, caplog: pytest.LogCaptureFixture
) -> None:
    config = Configuration(feature_gates=gates, metrics=Metrics(custom_labels=ENTRIES))
    try:
        with caplog.at_level(logging.INFO, logger="webhook.worker.process"):
            process.configure_metrics(config)
        assert ("custom_team" in label_names(metrics.PENDING_WORKLOADS)) is labelled
        warned = "custom labels will have no effect" in caplog.text
        assert warned is not labelled
    finally:
        metrics.configure(None)


# == values ========================================================================================


def test_values_come_from_label_annotation_or_name_with_tracked_values() -> None:
    store = metrics.CustomLabels(ENTRIES)
    kinds = ("ClusterQueue",)
    assert store.values(kinds, {"ClusterQueue": "never-seen"}) == ("", "")
    assert store.store("ClusterQueue", "a", {"team": "ml"}, {"example.com/cost": "high"}) is False  # first sight
    assert store.values(kinds, {"ClusterQueue": "a"}) == ("ml", "high")
    assert store.store("ClusterQueue", "a", {"team": "ml"}, {"example.com/cost": "huge"}) is True
    assert store.values(kinds, {"ClusterQueue": "a"}) == ("ml", UNTRACKED)
    assert store.store("ClusterQueue", "a", {"team": "ml"}, {"example.com/cost": "huge"}) is False  # unchanged
    store.store("LocalQueue", "ns/q", {"example.com/owner": "bob", "owner": "not-this"}, {})
    assert store.values(("LocalQueue",), {"LocalQueue": "ns/q"}) == ("bob",)
    store.delete("ClusterQueue", "a")
    assert store.values(kinds, {"ClusterQueue": "a"}) == ("", "")


def _scenario() -> tuple[Any, list[dict[str, Any]]]:
    objs = [
        make_flavor("default").obj(),
        meta(make_cohort("cl-co").obj(), {"org": "research"}),
        meta(
            make_cq("cl-cq").cohort("cl-co").group(fq("default", cpu="4")).obj(),
            {"team": "ml"},
            **{"example.com/cost": "low"},
        ),
        meta(make_lq("cl-lq", "ns", "cl-cq"), {"example.com/owner": "bob"}),
    ]
    return make_core(*objs), objs


def _feed(rep: MetricsReporter, objs: list[dict[str, Any]]) -> None:
    kinds = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "Cohort": "cohorts"}
    for obj in objs:
        if obj["kind"] in kinds:
            ns = obj["metadata"].get("namespace")
            key = f"{ns}/{obj['metadata']['name']}" if ns else obj["metadata"]["name"]
            rep.queue_event(kinds[obj["kind"]], key, obj)


def test_series_carry_the_values_of_their_queue_and_cohort(custom: metrics.CustomLabels) -> None:
    core, objs = _scenario()
    config = Configuration(feature_gates={**GATE, "MetricsForCohorts": True})
    rep = MetricsReporter(config)
    _feed(rep, objs)
    gold = (
        make_wl("cl-gold")
        .label("tier", "gold")
        .queue("cl-lq")
        .request(cpu="1")
        .reserve("cl-cq", psa(cpu=("default", "1")))
    ).obj()
    silver = (
        make_wl("cl-silver")
        .label("tier", "silver")
        .queue("cl-lq")
        .request(cpu="1")
        .reserve("cl-cq", psa(cpu=("default", "1")))
    ).obj()
    for wl in (gold, silver):
        core.on_workload(wl, T0)
        rep.workload_event(f"ns/{wl['metadata']['name']}", wl)
    rep.refresh(core)
    cq = {"cluster_queue": "cl-cq", "custom_team": "ml", "custom_cost": "low"}
    assert sample("kueue_pending_workloads", **cq, status="active") == 0
    assert sample("kueue_cluster_queue_status", **cq, status="active") == 1
    # split by the Workloads' own tier: one gold, one untracked
    assert sample("kueue_admitted_active_workloads", **cq, custom_tier="gold") == 1
    assert sample("kueue_admitted_active_workloads", **cq, custom_tier=UNTRACKED) == 1
    lq = {"name": "cl-lq", "namespace": "ns", "custom_owner": "bob"}
    assert sample("kueue_local_queue_status", **lq, active="True") is not None
    assert sample("kueue_cohort_info", cohort="cl-co", parent_cohort="", root_cohort="", custom_org="research") == 1
    assert (
        sample("kueue_cohort_subtree_admitted_active_workloads", cohort="cl-co", custom_team="ml", custom_cost="low")
        == 2
    )

    rep.admitted(_decision("ns/cl-gold", "cl-cq"), gold, T0)
    pc = {"priority_class": ""}
    assert sample("kueue_quota_reserved_workloads_total", **cq, **pc) == 1
    assert sample("kueue_local_queue_quota_reserved_workloads_total", **lq, **pc) == 1


def test_a_label_change_moves_the_gauges_and_clears_the_local_queue_counters(custom: metrics.CustomLabels) -> None:
    """A ClusterQueue's counters keep their old values' series (upstream clears only its gauges and
    replaced slices); a LocalQueue's are cleared (`clearLocalQueueMetrics`)."""
    core, objs = _scenario()
    rep = MetricsReporter(Configuration(feature_gates=GATE))
    _feed(rep, objs)
    rep.refresh(core)
    wl = make_wl("lc").queue("cl-lq").request(cpu="1").obj()
    metrics.QUOTA_RESERVED_WORKLOADS.labels("cl-cq", "", "leader").inc()
    metrics.REPLACED_WORKLOAD_SLICES.labels("cl-cq", "leader").inc()
    rep.evicted("ns/lc", "cl-cq", "Preempted", wl)
    old_cq = {"cluster_queue": "cl-cq", "custom_team": "ml", "custom_cost": "low"}
    lq = {"name": "cl-lq", "namespace": "ns"}
    evicted = {"reason": "Preempted", "underlying_cause": "", "priority_class": ""}
    assert sample("kueue_local_queue_evicted_workloads_total", **lq, **evicted, custom_owner="bob") == 1

    rep.queue_event("clusterqueues", "cl-cq", meta(make_cq("cl-cq").obj(), {"team": "infra"}))
    rep.queue_event("localqueues", "ns/cl-lq", meta(make_lq("cl-lq", "ns", "cl-cq"), {"example.com/owner": "eve"}))
    rep.refresh(core)
    # no cost annotation any more: "" is not among the tracked values either
    new_cq = {**old_cq, "custom_team": "infra", "custom_cost": UNTRACKED}
    assert sample("kueue_cluster_queue_status", **old_cq, status="active") is None
    assert sample("kueue_cluster_queue_status", **new_cq, status="active") == 1
    assert sample("kueue_quota_reserved_workloads_total", **old_cq, priority_class="") == 1
    assert sample("kueue_replaced_workload_slices_total", **old_cq) is None
    assert sample("kueue_local_queue_evicted_workloads_total", **lq, **evicted, custom_owner="bob") is None
    assert sample("kueue_local_queue_status", **lq, active="True", custom_owner="bob") is None
    assert sample("kueue_local_queue_status", **lq, active="True", custom_owner="eve") == 1


# == metrics.localQueueMetrics.localQueueSelector ==================================================

SELECTED = Configuration(
    metrics=Metrics(
        local_queue_metrics=LocalQueueMetrics(local_queue_selector={"matchLabels": {"metrics-test": "true"}})
    )
)


def _lq_scenario(picked_name: str = "sel-in") -> tuple[Any, dict[str, Any], dict[str, Any]]:
    picked = meta(make_lq(picked_name, "ns", "sel-cq"), {"metrics-test": "true"})
    other = make_lq("sel-out", "ns", "sel-cq")
    core = make_core(make_flavor("default").obj(), make_cq("sel-cq").group(fq("default", cpu="4")).obj(), picked, other)
    return core, picked, other


def _admit(rep: MetricsReporter, lq: str) -> None:
    wl = make_wl(f"w-{lq}").queue(lq).request(cpu="1").reserve("sel-cq", psa(cpu=("default", "1"))).obj()
    rep.admitted(_decision(f"ns/w-{lq}", "sel-cq"), wl, T0)


def test_only_local_queues_the_selector_picks_report() -> None:
    core, picked, other = _lq_scenario()
    rep = MetricsReporter(SELECTED)
    rep.queue_event("localqueues", "ns/sel-in", picked)
    rep.queue_event("localqueues", "ns/sel-out", other)
    rep.refresh(core)
    _admit(rep, "sel-in")
    _admit(rep, "sel-out")
    pc = {"namespace": "ns", "priority_class": ""}
    assert sample("kueue_local_queue_status", name="sel-in", namespace="ns", active="True") == 1
    assert sample("kueue_local_queue_pending_workloads", name="sel-in", namespace="ns", status="active") == 0
    assert sample("kueue_local_queue_quota_reserved_workloads_total", name="sel-in", **pc) == 1
    assert sample("kueue_local_queue_status", name="sel-out", namespace="ns", active="True") is None
    assert sample("kueue_local_queue_pending_workloads", name="sel-out", namespace="ns", status="active") is None
    assert sample("kueue_local_queue_quota_reserved_workloads_total", name="sel-out", **pc) is None
    # the ClusterQueue series do not depend on it
    assert sample("kueue_quota_reserved_workloads_total", cluster_queue="sel-cq", priority_class="") == 2


def test_a_local_queue_leaving_the_selector_loses_its_series_and_gets_them_back() -> None:
    core, picked, _ = _lq_scenario("sel-back")
    rep = MetricsReporter(SELECTED)
    rep.queue_event("localqueues", "ns/sel-back", picked)
    rep.refresh(core)
    _admit(rep, "sel-back")
    counter = {"name": "sel-back", "namespace": "ns", "priority_class": ""}
    assert sample("kueue_local_queue_quota_reserved_workloads_total", **counter) == 1

    rep.queue_event("localqueues", "ns/sel-back", meta(make_lq("sel-back", "ns", "sel-cq"), {"metrics-test": "false"}))
    rep.refresh(core)
    assert sample("kueue_local_queue_quota_reserved_workloads_total", **counter) is None
    assert sample("kueue_local_queue_status", name="sel-back", namespace="ns", active="True") is None
    _admit(rep, "sel-back")
    assert sample("kueue_local_queue_quota_reserved_workloads_total", **counter) is None

    rep.queue_event("localqueues", "ns/sel-back", picked)
    rep.refresh(core)
    assert sample("kueue_local_queue_status", name="sel-back", namespace="ns", active="True") == 1


def test_workload_creation_latency_takes_the_labels_of_the_workloads_local_queue(custom: metrics.CustomLabels) -> None:
    """`RecordWorkloadCreationLatency` reads `LQGet` of the new Workload's LocalQueue."""
    custom.store("LocalQueue", "ns/wc-lq", {"example.com/owner": "carol"}, {})
    job = {"metadata": {"generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"}}
    wl = make_wl("wc").queue("wc-lq").obj()
    wl["metadata"]["creationTimestamp"] = "2026-01-01T00:00:02Z"
    reporter.workload_created("Job", job, wl)
    assert sample("kueue_workload_creation_latency_seconds_sum", job_kind="Job", custom_owner="carol") == 2
