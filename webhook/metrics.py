"""Prometheus metric definitions (module-level singletons, as the style allows).

The webhook series reuse controller-runtime's names and labels, which Kueue's manager
exports, so existing dashboards keep working; `outcome` is ours and says what the
webhook decided (allowed, patched, denied, bad_request, error).
"""

from __future__ import annotations

import itertools
import platform
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Metric, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics import MetricWrapperBase

from webhook.config.types import MetricsCustomLabel
from webhook.core.estimate_accuracy import Scored

__all__ = [
    "ADMISSION_ATTEMPTS",
    "ADMISSION_ATTEMPT_DURATION",
    "ADMISSION_CHECKS_WAIT_TIME",
    "ADMISSION_CYCLE_PREEMPTION_SKIPS",
    "ADMISSION_WAIT_TIME",
    "ADMITTED_ACTIVE_WORKLOADS",
    "ADMITTED_UNTIL_READY_WAIT_TIME",
    "ADMITTED_WORKLOADS",
    "BUDGETS",
    "BUILD_INFO",
    "CLUSTER_QUEUE",
    "CLUSTER_QUEUE_BORROWING_LIMIT",
    "CLUSTER_QUEUE_INFO",
    "CLUSTER_QUEUE_LENDING_LIMIT",
    "CLUSTER_QUEUE_NOMINAL_QUOTA",
    "CLUSTER_QUEUE_RESOURCE_PENDING",
    "CLUSTER_QUEUE_RESOURCE_RESERVATION",
    "CLUSTER_QUEUE_RESOURCE_USAGE",
    "CLUSTER_QUEUE_STATUS",
    "CLUSTER_QUEUE_WEIGHTED_SHARE",
    "COHORT",
    "COHORT_INFO",
    "COHORT_SUBTREE_ADMITTED_ACTIVE_WORKLOADS",
    "COHORT_SUBTREE_ADMITTED_WORKLOADS",
    "COHORT_SUBTREE_QUOTA",
    "COHORT_SUBTREE_RESOURCE_RESERVATIONS",
    "COHORT_WEIGHTED_SHARE",
    "EVICTED_WORKLOADS",
    "EVICTED_WORKLOADS_ONCE",
    "EXECUTION_TIME",
    "FINISHED_WORKLOADS",
    "FINISHED_WORKLOADS_TOTAL",
    "GO_DEFAULT_BUCKETS",
    "LOCAL_QUEUE",
    "LOCAL_QUEUE_ADMISSION_CHECKS_WAIT_TIME",
    "LOCAL_QUEUE_ADMISSION_FAIR_SHARING_USAGE",
    "LOCAL_QUEUE_ADMISSION_WAIT_TIME",
    "LOCAL_QUEUE_ADMITTED_ACTIVE_WORKLOADS",
    "LOCAL_QUEUE_ADMITTED_UNTIL_READY_WAIT_TIME",
    "LOCAL_QUEUE_ADMITTED_WORKLOADS",
    "LOCAL_QUEUE_EVICTED_WORKLOADS",
    "LOCAL_QUEUE_EXECUTION_TIME",
    "LOCAL_QUEUE_FINISHED_WORKLOADS",
    "LOCAL_QUEUE_FINISHED_WORKLOADS_TOTAL",
    "LOCAL_QUEUE_PENDING_WORKLOADS",
    "LOCAL_QUEUE_QUOTA_RESERVED_WAIT_TIME",
    "LOCAL_QUEUE_QUOTA_RESERVED_WORKLOADS",
    "LOCAL_QUEUE_READY_WAIT_TIME",
    "LOCAL_QUEUE_RESERVING_ACTIVE_WORKLOADS",
    "LOCAL_QUEUE_RESOURCE_RESERVATION",
    "LOCAL_QUEUE_RESOURCE_USAGE",
    "LOCAL_QUEUE_STATUS",
    "LOCAL_QUEUE_UNADMITTED_WORKLOADS",
    "MULTIKUEUE_WORKLOADS_ADMITTED",
    "MULTIKUEUE_WORKLOADS_DISPATCHED",
    "PENDING_WORKLOADS",
    "PODS_READY_TO_EVICTED_TIME",
    "POD_SCHEDULING_GATE_REMOVAL",
    "PREEMPTED_WORKLOADS",
    "PREEMPTION_TARGET_RECOMPUTATIONS",
    "QUOTA_RESERVED_WAIT_TIME",
    "QUOTA_RESERVED_WORKLOADS",
    "READY_WAIT_TIME",
    "REGISTRY",
    "REPLACED_WORKLOAD_SLICES",
    "RESERVING_ACTIVE_WORKLOADS",
    "ROLE",
    "UNADMITTED_WORKLOADS",
    "UNTRACKED_VALUE",
    "USAGE",
    "USAGE_LABELS",
    "WAIT_ESTIMATES_UNKNOWN",
    "WAIT_ESTIMATE_ERROR",
    "WEBHOOK_LATENCY",
    "WEBHOOK_OUTCOMES",
    "WEBHOOK_REQUESTS",
    "WORKER_REGISTRY",
    "WORKLOAD",
    "WORKLOAD_CREATION_LATENCY",
    "WORKLOAD_EVICTION_LATENCY",
    "WORKQUEUE_ADDS",
    "WORKQUEUE_BUCKETS",
    "WORKQUEUE_GAUGES",
    "WORKQUEUE_QUEUE_DURATION",
    "WORKQUEUE_RETRIES",
    "WORKQUEUE_WORK_DURATION",
    "BudgetCollector",
    "CustomLabels",
    "Family",
    "QueueLoad",
    "QueueLoadSource",
    "UsageCollector",
    "UsageTotals",
    "WorkQueueGauges",
    "configure",
    "custom_labels",
    "exponential_buckets",
    "observe_wait_estimate",
    "remove_series",
    "workload_custom_label_sources",
]

# Go's client (upstream) exports no `_created` series; neither do we.
disable_created_metrics()  # type: ignore[no-untyped-call]


class _SampledRegistry(CollectorRegistry):
    """Leaves out families without samples, as Go's `Registry.Gather` does: a labelled family
    nothing has used yet, or whose series were all removed with their queue, prints no HELP or
    TYPE line. Every exposition (text, OpenMetrics, either /metrics) reads `collect`."""

    def collect(self) -> Iterator[Metric]:
        return (family for family in super().collect() if family.samples)


REGISTRY = _SampledRegistry(auto_describe=True)

WEBHOOK_REQUESTS = Counter(
    "controller_runtime_webhook_requests_total",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
    registry=REGISTRY,
)
WEBHOOK_OUTCOMES = Counter(
    "kueue_webhook_reviews_total",
    "Admission and conversion reviews answered, by path and outcome.",
    ["webhook", "outcome"],
    registry=REGISTRY,
)
WEBHOOK_LATENCY = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests.",
    ["webhook", "outcome"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=REGISTRY,
)

# == the admission worker's series (`pkg/metrics/metrics.go`) =====================================
# Served by the worker process on `metrics.bindAddress` (see `webhook/worker/metrics_server.py`),
# not by the webhook server: the two are separate OS processes. Every series but build_info ends
# with `replica_role`; only the lease holder sets values, so it is always `leader`.
# Each is a `Family`, so that `configure` can give it the custom labels (gate CustomMetricLabels)
# the Configuration asks for; the series of ClusterQueues, LocalQueues and Cohorts say which ones
# name their object (`keys`), and `kinds` lists the source kinds whose labels a series takes.

WORKER_REGISTRY = _SampledRegistry(auto_describe=True)
ROLE = "replica_role"


# prometheus.DefBuckets of Go's client, which upstream's histograms without explicit buckets get
# (Python's Histogram.DEFAULT_BUCKETS has four more).
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def exponential_buckets(count: int) -> tuple[float, ...]:
    """Upstream's `generateExponentialBuckets`: 1, then 2.5·2^i, `count` buckets in all."""
    return (1.0, *(2.5 * 2**i for i in range(count - 1)))


# == custom metric labels (`pkg/metrics/custom_labels.go`, gate CustomMetricLabels) ===============
# Source kinds in the order upstream appends their labels: it sorts the kinds of a series by name.
CLUSTER_QUEUE = "ClusterQueue"
COHORT = "Cohort"
LOCAL_QUEUE = "LocalQueue"
WORKLOAD = "Workload"
# What a value outside an entry's `trackedValues` is reported as (`UntrackedCustomLabelValue`).
UNTRACKED_VALUE = "kueue.x-k8s.io/_UNTRACKED_VALUE_"


class CustomLabels:
    """The Configuration's `metrics.customLabels` and the last values seen on each source object.

    Each entry reads a label (`sourceLabelKey`, else its `name`) or an annotation
    (`sourceAnnotationKey`) of objects of its `sourceKind`; a value outside a non-empty
    `trackedValues` becomes `UNTRACKED_VALUE`, and an object never stored reports "". Only the
    core thread stores; other threads read, and every write replaces a whole tuple, so a reader
    never sees half an update."""

    def __init__(self, entries: Sequence[MetricsCustomLabel]) -> None:
        kinds = sorted({e.source_kind for e in entries})
        self._entries = {kind: tuple(e for e in entries if e.source_kind == kind) for kind in kinds}
        self._values: dict[str, dict[str, tuple[str, ...]]] = {kind: {} for kind in kinds}

    def names(self, kinds: Iterable[str]) -> list[str]:
        """The Prometheus label names (`custom_<name>`) of `kinds`, by kind then in config order."""
        return [f"custom_{e.name}" for kind in sorted(set(kinds)) for e in self._entries.get(kind, ())]

    def store(self, kind: str, key: str, labels: Mapping[str, str], annotations: Mapping[str, str]) -> bool:
        """Record the values of object `key`; True when it was known and they changed (upstream's
        `store`, which callers use to tell a label change from a first sight)."""
        entries = self._entries.get(kind)
        if entries is None:
            return False
        new = tuple(_custom_value(e, labels, annotations) for e in entries)
        old = self._values[kind].get(key)
        self._values[kind][key] = new
        return old is not None and old != new

    def delete(self, kind: str, key: str) -> None:
        self._values.get(kind, {}).pop(key, None)

    def values(self, kinds: Iterable[str], sources: Mapping[str, str]) -> tuple[str, ...]:
        """The values for a series of `kinds`, read from the objects `sources` names per kind."""
        out: list[str] = []
        for kind in sorted(set(kinds)):
            entries = self._entries.get(kind, ())
            known = self._values.get(kind, {}).get(sources[kind]) if kind in sources else None
            out.extend(known if known is not None else ("",) * len(entries))
        return tuple(out)


def _custom_value(entry: MetricsCustomLabel, labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    if entry.source_annotation_key:
        value = annotations.get(entry.source_annotation_key, "")
    else:
        value = labels.get(entry.source_label_key or entry.name, "")
    return value if not entry.tracked_values or value in entry.tracked_values else UNTRACKED_VALUE


def workload_custom_label_sources(entries: Iterable[MetricsCustomLabel]) -> tuple[frozenset[str], frozenset[str]]:
    """The label and annotation keys the Workload-kind entries read, which job reconcilers copy
    onto the Workloads they build (`WorkloadCustomLabelSources`)."""
    labels: set[str] = set()
    annotations: set[str] = set()
    for e in entries:
        if e.source_kind != WORKLOAD:
            continue
        if e.source_annotation_key:
            annotations.add(e.source_annotation_key)
        else:
            labels.add(e.source_label_key or e.name)
    return frozenset(labels), frozenset(annotations)


M = TypeVar("M", bound=MetricWrapperBase)


class Family(Generic[M]):
    """A worker series whose label names are its own, `replica_role`, then the custom labels of its
    source kinds, fixed at start by `configure` (upstream's `InitMetricVectors` rebuilds its vectors
    the same way). Registered as a collector of the wrapped metric.

    `labels(*values)` takes the series' own values and `replica_role`; the custom values follow,
    read from the ClusterQueue, LocalQueue or Cohort these values name (`keys`), or from the
    objects `sources` names. `remove` takes every value, custom ones included, as exposed."""

    def __init__(
        self,
        make: Callable[[list[str]], M],
        labels: Sequence[str],
        *,
        kinds: tuple[str, ...] = (),
        keys: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self._make: Callable[[list[str]], M] = make
        self._labels = [*labels, ROLE]
        self.kinds = kinds
        # source kind -> the positions of the labels whose values, joined by "/", make its key
        self._keys: dict[str, tuple[int, ...]] = {
            kind: tuple(self._labels.index(n) for n in names) for kind, names in (keys or {}).items()
        }
        self._custom: CustomLabels | None = None
        self.metric: M = make(self._labels)
        _FAMILIES.append(self)
        WORKER_REGISTRY.register(self)

    def rebuild(self, custom: CustomLabels | None) -> None:
        self._custom = custom
        self.metric = self._make(self._labels + (custom.names(self.kinds) if custom else []))

    def describe(self) -> list[Metric]:
        # No names: prometheus_client would refuse `finished_workloads` beside `finished_workloads_total`,
        # which Go's registry accepts and upstream exports.
        return []

    def collect(self) -> Iterable[Metric]:
        families: Iterable[Metric] = self.metric.collect()
        return families

    @property
    def label_names(self) -> tuple[str, ...]:
        return tuple(self.metric._labelnames)

    def full(self, *values: str, sources: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """`values` followed by the custom labels' values (see the class)."""
        if self._custom is None or not self.kinds:
            return values
        named = {kind: "/".join(values[i] for i in at) for kind, at in self._keys.items()}
        return (*values, *self._custom.values(self.kinds, named if sources is None else sources))

    def labels(self, *values: str, sources: Mapping[str, str] | None = None) -> M:
        child: M = self.metric.labels(*self.full(*values, sources=sources))
        return child

    def remove(self, *values: str) -> None:
        self.metric.remove(*values)


_FAMILIES: list[Family[Any]] = []


_configured: list[CustomLabels | None] = [None]


def configure(custom: CustomLabels | None) -> None:
    """Give every worker series the custom labels of `custom` (None: none), dropping its series.
    Called once when a worker process starts, before anything reports (and by tests)."""
    _configured[0] = custom
    for family in _FAMILIES:
        family.rebuild(custom)


def custom_labels() -> CustomLabels | None:
    """The store `configure` gave the series, which the reporter keeps up to date."""
    return _configured[0]


def remove_series(metric: Family[Any], match: Mapping[str, str]) -> None:
    """Drop every series of `metric` whose labels include `match`, whatever its other labels (the Go
    client's `DeletePartialMatch`, which upstream uses to forget a deleted queue)."""
    names = list(metric.label_names)
    want = {names.index(label): value for label, value in match.items()}
    present = {tuple(sample.labels[n] for n in names) for family in metric.collect() for sample in family.samples}
    for values in present:
        if all(values[at] == value for at, value in want.items()):
            metric.remove(*values)


_CQ_KEY = {CLUSTER_QUEUE: ("cluster_queue",)}
_LQ_KEY = {LOCAL_QUEUE: ("namespace", "name")}
_COHORT_KEY = {COHORT: ("cohort",)}


_Keys = Mapping[str, tuple[str, ...]]


def _gauge(
    name: str, doc: str, labels: list[str], keys: _Keys | None = None, kinds: tuple[str, ...] = ()
) -> Family[Gauge]:
    def make(names: list[str]) -> Gauge:
        return Gauge(f"kueue_{name}", doc, names, registry=None)

    return Family(make, labels, kinds=kinds or tuple(keys or ()), keys=keys)


def _counter(
    name: str, doc: str, labels: list[str], keys: _Keys | None = None, kinds: tuple[str, ...] = ()
) -> Family[Counter]:
    def make(names: list[str]) -> Counter:
        return Counter(f"kueue_{name}", doc, names, registry=None)

    return Family(make, labels, kinds=kinds or tuple(keys or ()), keys=keys)


def _histogram(
    name: str,
    doc: str,
    labels: list[str],
    buckets: tuple[float, ...],
    keys: _Keys | None = None,
    kinds: tuple[str, ...] = (),
) -> Family[Histogram]:
    def make(names: list[str]) -> Histogram:
        return Histogram(f"kueue_{name}", doc, names, buckets=buckets, registry=None)

    return Family(make, labels, kinds=kinds or tuple(keys or ()), keys=keys)


_CQ = ["cluster_queue"]
_CQ_PC = ["cluster_queue", "priority_class"]
_LQ = ["name", "namespace"]
_LQ_PC = ["name", "namespace", "priority_class"]
_FR = ["cohort", "cluster_queue", "flavor", "resource"]

BUILD_INFO = Gauge(
    "kueue_build_info",
    "Kueue build information. 1 labeled by git version, git commit, build date, go version, compiler, platform",
    ["git_version", "git_commit", "build_date", "go_version", "compiler", "platform"],
    registry=WORKER_REGISTRY,
)
# Set at start in every process, the standby's included, as upstream's `InitMetricVectors` does.
BUILD_INFO.labels(
    "pykueue", "", "", sys.version.split()[0], platform.python_implementation(), f"{sys.platform}/{platform.machine()}"
).set(1)

# -- scheduler health
ADMISSION_ATTEMPTS = _counter(
    "admission_attempts_total", "The total number of attempts to admit workloads.", ["result"]
)
ADMISSION_ATTEMPT_DURATION = _histogram(
    "admission_attempt_duration_seconds", "The latency of an admission attempt.", ["result"], GO_DEFAULT_BUCKETS
)

ADMISSION_CYCLE_PREEMPTION_SKIPS = _gauge(
    "admission_cycle_preemption_skips",
    "The number of Workloads in the ClusterQueue that got "
    "preemption candidates but had to be skipped because other ClusterQueues needed the "
    "same resources in the same cycle",
    _CQ,
    keys=_CQ_KEY,
)
PREEMPTION_TARGET_RECOMPUTATIONS = _counter(
    "preemption_target_recomputations_total",
    "The total number of preemption target "
    "recomputations triggered when a workload's preemption targets overlap with targets "
    "selected by another workload in the same scheduling cycle.",
    [*_CQ, "result"],
    keys=_CQ_KEY,
)

# -- ClusterQueue
PENDING_WORKLOADS = _gauge(
    "pending_workloads",
    "The number of pending workloads, per 'cluster_queue' and 'status'.",
    [*_CQ, "status"],
    keys=_CQ_KEY,
)
QUOTA_RESERVED_WORKLOADS = _counter(
    "quota_reserved_workloads_total",
    "The total number of quota reserved workloads per 'cluster_queue'",
    _CQ_PC,
    keys=_CQ_KEY,
)
QUOTA_RESERVED_WAIT_TIME = _histogram(
    "quota_reserved_wait_time_seconds",
    "The time between a workload was created or requeued until it got quota reservation, per 'cluster_queue'",
    _CQ_PC,
    exponential_buckets(14),
    keys=_CQ_KEY,
)
ADMITTED_WORKLOADS = _counter(
    "admitted_workloads_total", "The total number of admitted workloads per 'cluster_queue'", _CQ_PC, keys=_CQ_KEY
)
ADMISSION_WAIT_TIME = _histogram(
    "admission_wait_time_seconds",
    "The time between a workload was created or requeued until admission, per 'cluster_queue'",
    _CQ_PC,
    exponential_buckets(16),
    keys=_CQ_KEY,
)
ADMISSION_CHECKS_WAIT_TIME = _histogram(
    "admission_checks_wait_time_seconds",
    "The time from when a workload got the quota reservation until admission, per 'cluster_queue'",
    _CQ_PC,
    exponential_buckets(14),
    keys=_CQ_KEY,
)
READY_WAIT_TIME = _histogram(
    "ready_wait_time_seconds",
    "The time between a workload was created or requeued until ready, per 'cluster_queue'",
    _CQ_PC,
    exponential_buckets(14),
    keys=_CQ_KEY,
)
ADMITTED_UNTIL_READY_WAIT_TIME = _histogram(
    "admitted_until_ready_wait_time_seconds",
    "The time between a workload was admitted until ready, per 'cluster_queue'",
    _CQ_PC,
    exponential_buckets(14),
    keys=_CQ_KEY,
)
EVICTED_WORKLOADS = _counter(
    "evicted_workloads_total",
    "The number of evicted workloads per 'cluster_queue'",
    [*_CQ, "reason", "underlying_cause", "priority_class"],
    keys=_CQ_KEY,
)
EVICTED_WORKLOADS_ONCE = _counter(
    "evicted_workloads_once_total",
    "The number of unique workload evictions per 'cluster_queue'",
    [*_CQ, "reason", "underlying_cause", "priority_class"],
    keys=_CQ_KEY,
)
REPLACED_WORKLOAD_SLICES = _counter(
    "replaced_workload_slices_total", "The number of replaced workload slices per 'cluster_queue'", _CQ, keys=_CQ_KEY
)
PODS_READY_TO_EVICTED_TIME = _histogram(
    "pods_ready_to_evicted_time_seconds",
    "The number of seconds between a workload's pods being ready and eviction workloads per 'cluster_queue'",
    [*_CQ, "reason", "underlying_cause"],
    exponential_buckets(14),
    keys=_CQ_KEY,
)
POD_SCHEDULING_GATE_REMOVAL = _histogram(
    "pod_scheduling_gate_removal_seconds",
    "Duration from Workload admission to removal of a Pod scheduling gate.",
    ["name", *_CQ, "is_group"],
    GO_DEFAULT_BUCKETS,
    keys=_CQ_KEY,
)
PREEMPTED_WORKLOADS = _counter(
    "preempted_workloads_total",
    "The number of preempted workloads per 'preempting_cluster_queue'",
    ["preempting_cluster_queue", "reason"],
    keys={CLUSTER_QUEUE: ("preempting_cluster_queue",)},
)
RESERVING_ACTIVE_WORKLOADS = _gauge(
    "reserving_active_workloads",
    "The number of Workloads that are reserving quota, per 'cluster_queue'",
    _CQ,
    keys=_CQ_KEY,
)
ADMITTED_ACTIVE_WORKLOADS = _gauge(
    "admitted_active_workloads",
    "The number of admitted Workloads that are active, per 'cluster_queue'",
    _CQ,
    kinds=(CLUSTER_QUEUE, WORKLOAD),
)
FINISHED_WORKLOADS_TOTAL = _counter(
    "finished_workloads_total", "The total number of finished workloads per 'cluster_queue'", _CQ_PC, keys=_CQ_KEY
)
FINISHED_WORKLOADS = _gauge(
    "finished_workloads", "The number of finished workloads per 'cluster_queue'.", _CQ, keys=_CQ_KEY
)
EXECUTION_TIME = _histogram(
    "execution_time_seconds",
    "The total execution time of a finished admitted workload (from first admission "
    "to completion, including time across evict/readmit cycles), per 'cluster_queue'",
    _CQ_PC,
    exponential_buckets(16),
    keys=_CQ_KEY,
)
WORKLOAD_EVICTION_LATENCY = _histogram(
    "workload_eviction_latency_seconds",
    "The time from workload eviction (WorkloadEvicted condition becomes True) until the workload returns to Pending (quota released).\n"
    "Observed on status transition from admitted or quota-reserved to pending while WorkloadEvicted remains True.\n"
    "Each matching update observes one latency sample (seconds) into this histogram; Prometheus aggregates samples across workloads.\n"
    "Uses the eviction condition LastTransitionTime on the updated object as the start time; cluster_queue is taken from "
    "status.admission.cluster_queue on the pre-update object when set and non-empty (otherwise no sample is recorded for that update).",
    [*_CQ, "reason"],
    exponential_buckets(14),
    keys=_CQ_KEY,
)
UNADMITTED_WORKLOADS = _gauge(
    "unadmitted_workloads",
    "The number of unadmitted workloads, per 'cluster_queue', 'reason', and "
    "'underlying_cause'. This metric is only emitted when UnadmittedWorkloadsObservability feature gate is "
    "enabled.",
    [*_CQ, "reason", "underlying_cause"],
    keys=_CQ_KEY,
)
WORKLOAD_CREATION_LATENCY = _histogram(
    "workload_creation_latency_seconds",
    "The time between a job was created until its workload was "
    "created, per 'job_kind'. Entries are only recorded for objects with generation 1.",
    ["job_kind"],
    tuple(0.01 * 2**i for i in range(11)),
    kinds=(LOCAL_QUEUE,),
)
CLUSTER_QUEUE_STATUS = _gauge(
    "cluster_queue_status",
    "Reports 'cluster_queue' with its 'status' (with possible values 'pending', "
    "'active' or 'terminated'). For a ClusterQueue, the metric only reports a value of 1 for one of the statuses.",
    [*_CQ, "status"],
    keys=_CQ_KEY,
)
CLUSTER_QUEUE_INFO = _gauge(
    "cluster_queue_info",
    "Reports ClusterQueue hierarchy information. The metric has value 1 and can be joined using labels.",
    [*_CQ, "parent_cohort", "root_cohort"],
    keys=_CQ_KEY,
)

# -- ClusterQueue quota and usage (metrics.enableClusterQueueResources)
CLUSTER_QUEUE_NOMINAL_QUOTA = _gauge(
    "cluster_queue_nominal_quota",
    "Reports the cluster_queue's resource nominal quota within all the flavors",
    _FR,
    keys=_CQ_KEY,
)
CLUSTER_QUEUE_BORROWING_LIMIT = _gauge(
    "cluster_queue_borrowing_limit",
    "Reports the cluster_queue's resource borrowing limit within all "
    "the flavors. If borrowingLimit is unset, this metric reports +Inf.",
    _FR,
    keys=_CQ_KEY,
)
CLUSTER_QUEUE_LENDING_LIMIT = _gauge(
    "cluster_queue_lending_limit",
    "Reports the cluster_queue's resource lending limit within all the "
    "flavors. If lendingLimit is unset, this metric reports +Inf.",
    _FR,
    keys=_CQ_KEY,
)
CLUSTER_QUEUE_RESOURCE_RESERVATION = _gauge(
    "cluster_queue_resource_reservation",
    "Reports the cluster_queue's total resource reservation within all the flavors",
    _FR,
    keys=_CQ_KEY,
)
CLUSTER_QUEUE_RESOURCE_USAGE = _gauge(
    "cluster_queue_resource_usage",
    "Reports the cluster_queue's total resource usage within all the flavors",
    _FR,
    keys=_CQ_KEY,
)
CLUSTER_QUEUE_RESOURCE_PENDING = _gauge(
    "cluster_queue_resource_pending",
    "Reports the cluster_queue's total pending resource requests, not yet assigned to flavors",
    [*_CQ, "resource"],
    keys=_CQ_KEY,
)

CLUSTER_QUEUE_WEIGHTED_SHARE = _gauge(
    "cluster_queue_weighted_share",
    "Reports a value that representing the maximum of the ratios of "
    "usage above nominal\nquota to the lendable resources in the cohort, among all the resources provided "
    "by\nthe ClusterQueue, and divided by the weight.\nIf zero, it means that the usage of the ClusterQueue "
    "is below the nominal quota.\nIf the ClusterQueue has a weight of zero and is borrowing, this will "
    "return NaN.",
    [*_CQ, "cohort"],
    keys=_CQ_KEY,
)

# -- LocalQueue (gate LocalQueueMetrics and metrics.localQueueMetrics.enable)
LOCAL_QUEUE_PENDING_WORKLOADS = _gauge(
    "local_queue_pending_workloads",
    "The number of pending workloads, per 'local_queue' and 'status'.",
    [*_LQ, "status"],
    keys=_LQ_KEY,
)
LOCAL_QUEUE_QUOTA_RESERVED_WORKLOADS = _counter(
    "local_queue_quota_reserved_workloads_total",
    "The total number of quota reserved workloads per 'local_queue'",
    _LQ_PC,
    keys=_LQ_KEY,
)
LOCAL_QUEUE_QUOTA_RESERVED_WAIT_TIME = _histogram(
    "local_queue_quota_reserved_wait_time_seconds",
    "The time between a workload was created or requeued until it got quota reservation, per 'local_queue'",
    _LQ_PC,
    exponential_buckets(14),
    keys=_LQ_KEY,
)
LOCAL_QUEUE_ADMITTED_WORKLOADS = _counter(
    "local_queue_admitted_workloads_total",
    "The total number of admitted workloads per 'local_queue'",
    _LQ_PC,
    keys=_LQ_KEY,
)
LOCAL_QUEUE_ADMISSION_WAIT_TIME = _histogram(
    "local_queue_admission_wait_time_seconds",
    "The time between a workload was created or requeued until admission, per 'local_queue'",
    _LQ_PC,
    exponential_buckets(14),
    keys=_LQ_KEY,
)
LOCAL_QUEUE_ADMISSION_CHECKS_WAIT_TIME = _histogram(
    "local_queue_admission_checks_wait_time_seconds",
    "The time from when a workload got the quota reservation until admission, per 'local_queue'",
    _LQ_PC,
    exponential_buckets(14),
    keys=_LQ_KEY,
)
LOCAL_QUEUE_FINISHED_WORKLOADS = _gauge(
    "local_queue_finished_workloads", "The number of finished workloads, per 'local_queue'.", _LQ, keys=_LQ_KEY
)
LOCAL_QUEUE_FINISHED_WORKLOADS_TOTAL = _counter(
    "local_queue_finished_workloads_total",
    "The total number of finished workloads per 'local_queue'",
    _LQ_PC,
    keys=_LQ_KEY,
)
LOCAL_QUEUE_EXECUTION_TIME = _histogram(
    "local_queue_execution_time_seconds",
    "The total execution time of a finished admitted workload "
    "(from first admission to completion, including time across evict/readmit cycles), per "
    "'local_queue'",
    _LQ_PC,
    exponential_buckets(16),
    keys=_LQ_KEY,
)
LOCAL_QUEUE_UNADMITTED_WORKLOADS = _gauge(
    "local_queue_unadmitted_workloads",
    "The number of unadmitted workloads, per 'name', "
    "'namespace', 'cluster_queue', 'reason', and 'underlying_cause'. This metric is only emitted when "
    "UnadmittedWorkloadsObservability feature gate is enabled.",
    [*_LQ, "cluster_queue", "reason", "underlying_cause"],
    keys=_LQ_KEY,
)
LOCAL_QUEUE_READY_WAIT_TIME = _histogram(
    "local_queue_ready_wait_time_seconds",
    "The time between a workload was created or requeued until ready, per 'local_queue'",
    _LQ_PC,
    exponential_buckets(14),
    keys=_LQ_KEY,
)
LOCAL_QUEUE_ADMITTED_UNTIL_READY_WAIT_TIME = _histogram(
    "local_queue_admitted_until_ready_wait_time_seconds",
    "The time between a workload was admitted until ready, per 'local_queue'",
    _LQ_PC,
    exponential_buckets(14),
    keys=_LQ_KEY,
)
LOCAL_QUEUE_EVICTED_WORKLOADS = _counter(
    "local_queue_evicted_workloads_total",
    "The number of evicted workloads per 'local_queue'",
    [*_LQ, "reason", "underlying_cause", "priority_class"],
    keys=_LQ_KEY,
)
LOCAL_QUEUE_RESERVING_ACTIVE_WORKLOADS = _gauge(
    "local_queue_reserving_active_workloads",
    "The number of Workloads that are reserving quota, per 'localQueue'",
    _LQ,
    keys=_LQ_KEY,
)
LOCAL_QUEUE_ADMITTED_ACTIVE_WORKLOADS = _gauge(
    "local_queue_admitted_active_workloads",
    "The number of admitted Workloads that are active, per 'localQueue'",
    _LQ,
    keys=_LQ_KEY,
)
LOCAL_QUEUE_STATUS = _gauge(
    "local_queue_status",
    "Reports 'localQueue' with its 'active' status (with possible values 'True', 'False', "
    "or 'Unknown'). For a LocalQueue, the metric only reports a value of 1 for one of the statuses.",
    [*_LQ, "active"],
    keys=_LQ_KEY,
)
LOCAL_QUEUE_RESOURCE_RESERVATION = _gauge(
    "local_queue_resource_reservation",
    "Reports the localQueue's total resource reservation within all the flavors",
    [*_LQ, "flavor", "resource"],
    keys=_LQ_KEY,
)
LOCAL_QUEUE_RESOURCE_USAGE = _gauge(
    "local_queue_resource_usage",
    "Reports the localQueue's total resource usage within all the flavors",
    [*_LQ, "flavor", "resource"],
    keys=_LQ_KEY,
)
LOCAL_QUEUE_ADMISSION_FAIR_SHARING_USAGE = _gauge(
    "local_queue_admission_fair_sharing_usage",
    "Reports a value representing the LocalQueue's Admission Fair Sharing usage,\n"
    "calculated from the resource-weighted sum of consumed resources and pending\n"
    "admission penalties, divided by the LocalQueue's fair sharing weight",
    [*_LQ, "cluster_queue"],
    keys=_LQ_KEY,
)

# -- Cohort (gate MetricsForCohorts)
COHORT_INFO = _gauge(
    "cohort_info",
    "Reports Cohort hierarchy information. The metric has value 1 and can be joined using labels.",
    ["cohort", "parent_cohort", "root_cohort"],
    keys=_COHORT_KEY,
)
COHORT_SUBTREE_QUOTA = _gauge(
    "cohort_subtree_quota",
    "Reports the cohort's nominal quota aggregated within the cohort's subtree. The "
    "values are reported per resource and flavor",
    ["cohort", "flavor", "resource"],
    keys=_COHORT_KEY,
)
COHORT_SUBTREE_RESOURCE_RESERVATIONS = _gauge(
    "cohort_subtree_resource_reservations",
    "Reports the cohort's resource reservations "
    "aggregated within the cohort's subtree. The values are reported per resource and flavor",
    ["cohort", "flavor", "resource"],
    keys=_COHORT_KEY,
)
COHORT_SUBTREE_ADMITTED_ACTIVE_WORKLOADS = _gauge(
    "cohort_subtree_admitted_active_workloads",
    "The number of admitted Workloads that are active, per cohort's subtree",
    ["cohort"],
    kinds=(CLUSTER_QUEUE,),
)
COHORT_WEIGHTED_SHARE = _gauge(
    "cohort_weighted_share",
    "Reports a value that representing the maximum of the ratios of usage above "
    "nominal\nquota to the lendable resources in the Cohort, among all the resources provided by\nthe Cohort, "
    "and divided by the weight.\nIf zero, it means that the usage of the Cohort is below the nominal quota.\n"
    "If the Cohort has a weight of zero and is borrowing, this will return NaN.",
    ["cohort"],
    keys=_COHORT_KEY,
)
COHORT_SUBTREE_ADMITTED_WORKLOADS = _counter(
    "cohort_subtree_admitted_workloads_total",
    "The total number of admitted workloads per cohort's subtree",
    ["cohort", "priority_class"],
    keys=_COHORT_KEY,
)

# -- MultiKueue (subsystem `multikueue`, no `kueue_` prefix; no custom labels, as upstream reports them)
MULTIKUEUE_WORKLOADS_DISPATCHED = Counter(
    "multikueue_workloads_dispatched_total",
    "The total number of remote workloads created by the MultiKueue manager on a worker cluster, per "
    "'cluster_queue' and 'cluster'.",
    ["cluster_queue", "cluster", ROLE],
    registry=WORKER_REGISTRY,
)
MULTIKUEUE_WORKLOADS_ADMITTED = Counter(
    "multikueue_workloads_admitted_total",
    "The total number of remote workload admissions on a worker cluster, per 'cluster_queue' and 'cluster'. "
    "A workload may be counted more than once if it is evicted and re-admitted.",
    ["cluster_queue", "cluster", ROLE],
    registry=WORKER_REGISTRY,
)


# -- usage accounting (ours, not upstream's: `webhook.worker.usage`) ------------------------------------
USAGE_LABELS = ("cluster_queue", "cohort", "local_queue", "namespace", "priority_class", "flavor", "resource")
UsageTotals = Callable[[], Iterable[tuple[tuple[str, ...], float]]]


class UsageCollector:
    """`pykueue_usage_resource_seconds_total`: resource-seconds of admitted quota (cpu in cores, other
    resources in their units) per ClusterQueue, cohort, LocalQueue, namespace, priority class,
    flavor and resource. Read from the leader's UsageRecords at each scrape, so it starts from the
    durable totals after a failover or restart instead of zero; only the lease holder has a source.
    A late correction (`core.usage.advance`) can take a series back by a few seconds' worth."""

    NAME = "pykueue_usage_resource_seconds"

    def __init__(self) -> None:
        self._source: UsageTotals | None = None

    def use(self, source: UsageTotals | None) -> None:
        self._source = source

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            self.NAME,
            "Resource-seconds of admitted quota, from the UsageRecords (pykueue.io).",
            labels=[*USAGE_LABELS, ROLE],
        )
        for labels, value in self._source() if self._source is not None else ():
            family.add_metric([*labels, "leader"], value)
        yield family


USAGE = UsageCollector()
WORKER_REGISTRY.register(USAGE)


# -- controller-runtime's work queues (`pkg/internal/metrics/workqueue.go`, v0.24.1, which upstream's
# go.mod pins): one set of series per controller, `name` and `controller` both its name, no
# `replica_role`; the depth also carries the item's `priority` (controller-runtime's priority queue,
# its default). The counters and histograms exist from the queue's creation, the depth from its first add.
_WORKQUEUE = ["name", "controller"]
# prometheus.ExponentialBuckets(10e-9, 10, 12), multiplied out as Go does, so the `le` values print alike.
WORKQUEUE_BUCKETS = tuple(itertools.accumulate(range(11), lambda bound, _: bound * 10, initial=10e-9))
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total", "Total number of adds handled by workqueue", _WORKQUEUE, registry=WORKER_REGISTRY
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries_total",
    "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit "
    "RequeueAfter or AddAfter calls)",
    _WORKQUEUE,
    registry=WORKER_REGISTRY,
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    _WORKQUEUE,
    buckets=WORKQUEUE_BUCKETS,
    registry=WORKER_REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    _WORKQUEUE,
    buckets=WORKQUEUE_BUCKETS,
    registry=WORKER_REGISTRY,
)


class QueueLoad(NamedTuple):
    """A queue's state at a scrape: keys waiting, seconds its handlers have run so far (summed, and
    the longest), and whether anything was ever added (the depth series exists from then on)."""

    depth: int
    unfinished_s: float
    longest_s: float
    added: bool


class QueueLoadSource(Protocol):
    controller: str

    def load(self) -> QueueLoad: ...


class WorkQueueGauges:
    """`workqueue_depth`, `workqueue_unfinished_work_seconds` and
    `workqueue_longest_running_processor_seconds`, read from the live queues at each scrape (upstream
    updates the last two every 500 ms). Queues sharing a controller name add up (the longest is the
    longest of them); a queue that is garbage collected drops out."""

    def __init__(self) -> None:
        self._queues: weakref.WeakSet[QueueLoadSource] = weakref.WeakSet()

    def track(self, queue: QueueLoadSource) -> None:
        self._queues.add(queue)

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        loads: dict[str, QueueLoad] = {}
        for queue in list(self._queues):
            load, seen = queue.load(), loads.get(queue.controller)
            if seen is not None:
                load = QueueLoad(
                    seen.depth + load.depth,
                    seen.unfinished_s + load.unfinished_s,
                    max(seen.longest_s, load.longest_s),
                    seen.added or load.added,
                )
            loads[queue.controller] = load
        depth = GaugeMetricFamily(
            "workqueue_depth", "Current depth of workqueue by workqueue and priority", labels=[*_WORKQUEUE, "priority"]
        )
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads "
            "by observing the rate at which this increases.",
            labels=_WORKQUEUE,
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=_WORKQUEUE,
        )
        for controller, load in sorted(loads.items()):
            if load.added:
                # Every item here has priority 0: nothing is queued at upstream's LowPriority (-100).
                depth.add_metric([controller, controller, "0"], load.depth)
            unfinished.add_metric([controller, controller], load.unfinished_s)
            longest.add_metric([controller, controller], load.longest_s)
        yield from (depth, unfinished, longest)


WORKQUEUE_GAUGES = WorkQueueGauges()
WORKER_REGISTRY.register(WORKQUEUE_GAUGES)


# -- wait estimates (ours: `webhook.core.wait_estimate`, scored by `core.estimate_accuracy`) -----------
WAIT_ESTIMATE_ERROR = Histogram(
    "pykueue_wait_estimate_error_seconds",
    "How far a workload's quota reservation was from its estimated admission time (absolute seconds), "
    "per ClusterQueue, for the first estimate made for it and the latest one. Every replica scores the "
    "estimates it served, from its own watches.",
    ["cluster_queue", "estimate"],
    buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 86400),
    registry=WORKER_REGISTRY,
)
WAIT_ESTIMATES_UNKNOWN = Counter(
    "pykueue_wait_estimates_unknown_total",
    "Workloads admitted whose first wait estimate was unknown (no basis), per ClusterQueue.",
    ["cluster_queue"],
    registry=WORKER_REGISTRY,
)


def observe_wait_estimate(scored: Scored) -> None:
    """Record one admission scored against its estimates."""
    for which, error in (("first", scored.first_error), ("latest", scored.latest_error)):
        if error is not None:
            WAIT_ESTIMATE_ERROR.labels(scored.cluster_queue, which).observe(abs(error))
    if scored.first_error is None:
        WAIT_ESTIMATES_UNKNOWN.labels(scored.cluster_queue).inc()


# -- budgets (ours: `webhook.worker.budget`) ---------------------------------------------------------------
BudgetLines = Callable[[], Iterable[tuple[tuple[str, str, str], Any, Any, Any, Any]]]


class BudgetCollector:
    """`pykueue_budget_{limit,spent,committed,remaining}`: each Budget line (a resource, or `cost`) in
    resource-hours of its `unit` (cores, GiB, units) or in its currency, as the leader last computed
    it (`core.budget`). Only the lease holder has a source."""

    _DOCS = (
        ("limit", "The Budget's limit for the period."),
        ("spent", "Spent in the current period (UsageRecords plus what is reserved since)."),
        ("committed", "What running Workloads will still use (their remaining runtime)."),
        ("remaining", "Limit less spent and committed (never below zero)."),
    )

    def __init__(self) -> None:
        self._source: BudgetLines | None = None

    def use(self, source: BudgetLines | None) -> None:
        self._source = source

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        rows = list(self._source()) if self._source is not None else []
        for i, (what, doc) in enumerate(self._DOCS):
            family = GaugeMetricFamily(f"pykueue_budget_{what}", doc, labels=["budget", "line", "unit", ROLE])
            for labels, *values in rows:
                family.add_metric([*labels, "leader"], float(values[i]))
            yield family


BUDGETS = BudgetCollector()
WORKER_REGISTRY.register(BUDGETS)
