"""Prometheus series read the way a scrape reads them: through prometheus_client's public API only
(a registry's `get_sample_value`, a metric's `describe()`, `labels()`, `collect()` and `remove()`),
never the client's private attributes (`_value`, `_upper_bounds`, `_labelnames`, ...)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase


def value(registry: CollectorRegistry, name: str, labels: Mapping[str, str]) -> float:
    """The sample's value, 0 while the series does not exist (as a counter that was never incremented)."""
    return registry.get_sample_value(name, dict(labels)) or 0.0


def _labels(sample_labels: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in sample_labels.items() if k != "le"}


def bucket_bounds(metric: MetricWrapperBase, labels: Mapping[str, str]) -> list[float]:
    """The upper bounds of a histogram series' buckets, +Inf left out: the `le` labels of the
    `_bucket` samples that `metric.collect()` yields for the series with exactly `labels`."""
    return [
        float(s.labels["le"])
        for family in metric.collect()
        for s in family.samples
        if s.name.endswith("_bucket") and _labels(s.labels) == dict(labels) and s.labels["le"] != "+Inf"
    ]


@contextlib.contextmanager
def probe(metric: MetricWrapperBase, count: int) -> Iterator[dict[str, str]]:
    """One series of `metric` made with `count` made-up label values, removed again on exit: yields its
    labels (name to value, in the metric's label order) as `metric.collect()` reports them. Raises
    ValueError, as `labels()` does, when the metric does not take `count` labels."""
    values = tuple(f"probe-{i}" for i in range(count))
    metric.labels(*values)
    try:
        yield next(
            _labels(s.labels)
            for family in metric.collect()
            for s in family.samples
            if tuple(_labels(s.labels).values()) == values
        )
    finally:
        metric.remove(*values)
