"""Prometheus metric definitions (module-level singletons, as the style allows).

The webhook series reuse controller-runtime's names and labels, which Kueue's manager
exports, so existing dashboards keep working; `outcome` is ours and says what the
webhook decided (allowed, patched, denied, bad_request, error).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["REGISTRY", "WEBHOOK_LATENCY", "WEBHOOK_OUTCOMES", "WEBHOOK_REQUESTS"]

REGISTRY = CollectorRegistry(auto_describe=True)

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
