"""What the monitoring tests share: the chart's alert rules and Grafana dashboard
(charts/pykueue/files/), the metric names they read, the names our metric definitions expose, and
promtool (Debian's `prometheus` package, installed when missing; a test that needs it fails, never
skips, when it cannot be).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from e2e.host import PROMETHEUS_PACKAGES, HostError, ensure_packages
from webhook import metrics
from webhook.install.chart import ALERT_RULES, GRAFANA_DASHBOARD

CHART = Path(__file__).resolve().parents[1] / "charts" / "pykueue"
RULES = CHART / ALERT_RULES
DASHBOARD = CHART / GRAFANA_DASHBOARD

# Upstream's label names for the series the rules read (pkg/metrics/metrics.go of v0.19.2, and
# controller-runtime v0.24.1's pkg/internal/metrics/workqueue.go), `le` and `replica_role` included.
_QUOTA = {"cohort", "cluster_queue", "flavor", "resource", "replica_role"}
UPSTREAM_LABELS = {
    "kueue_admission_wait_time_seconds_bucket": {"cluster_queue", "priority_class", "replica_role", "le"},
    "kueue_cluster_queue_resource_usage": _QUOTA,
    "kueue_cluster_queue_nominal_quota": _QUOTA,
    "kueue_cluster_queue_borrowing_limit": _QUOTA,
    "kueue_preempted_workloads_total": {"preempting_cluster_queue", "reason", "replica_role"},
    "workqueue_depth": {"name", "controller", "priority"},
}
# Words of PromQL that look like metric names in an expression.
_PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "le"}


def promtool() -> str:
    try:
        ensure_packages(PROMETHEUS_PACKAGES)
    except HostError as exc:
        pytest.fail(f"the monitoring checks need promtool: {exc}", pytrace=False)
    return str(shutil.which("promtool"))


def rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title and refId, expression) of every panel target; Grafana's `$cluster_queue` (a regex
    of the chosen ClusterQueues) stands as `.*`, as "All" makes it."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (f"{panel['title']} {target['refId']}", target["expr"].replace("$cluster_queue", ".*"))
        for panel in dashboard["panels"]
        for target in panel.get("targets", ())
    ]


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads: identifiers outside label matchers and strings that
    are not a function call, a keyword, a duration or a label list."""
    bare = re.sub(r'\{[^}]*\}|"[^"]*"|\[[^\]]*\]', " ", expr)
    bare = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", bare)
    return {
        word
        for word in re.findall(r"\b([a-zA-Z_:][\w:]*)\b(?!\s*\()", bare)
        if word not in _PROMQL_WORDS and not re.fullmatch(r"\d+\w*", word)
    }


def exported_names() -> set[str]:
    """The sample names the worker's and the webhook's metric definitions can expose."""
    names: set[str] = set()
    for value in vars(metrics).values():
        wrapped = value.metric if isinstance(value, metrics.Family) else value
        families: Iterable[Any] = ()
        if isinstance(wrapped, MetricWrapperBase):
            families = wrapped.describe()
        elif isinstance(value, metrics.WorkQueueGauges | metrics.UsageCollector):
            families = value.collect()
        for family in families:
            names |= {
                "counter": {f"{family.name}_total"},
                "histogram": {f"{family.name}_{s}" for s in ("bucket", "sum", "count")},
            }.get(family.type, {family.name})
    return names


def check_rules(promtool: str, path: Path) -> str:
    """`promtool check rules` on `path`: its output, once it passed."""
    out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout
