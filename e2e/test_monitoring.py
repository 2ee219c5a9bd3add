"""The chart's alert rules and Grafana dashboard (charts/pykueue/files/) checked without a cluster:
the rules and every dashboard query are valid PromQL (`promtool check rules`; the queries as
recording rules), and every metric they read is one our metric definitions expose.
(e2e/test_worker_alerts.py makes each alert fire on the series a real scrape of the worker returns.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from e2e import monitoring as m


@pytest.fixture(scope="module")
def promtool() -> str:
    return m.promtool()


def test_the_alert_rules_pass_promtool(promtool: str) -> None:
    assert f"SUCCESS: {len(m.rules())} rules found" in m.check_rules(promtool, m.RULES)
    assert [r["alert"] for r in m.rules()] == [
        "KueueAdmissionSlow",
        "KueueQueueOversubscribed",
        "KueuePreemptionThrash",
        "KueueControllerSlow",
    ]


def test_every_dashboard_query_is_valid_promql(promtool: str, tmp_path: Path) -> None:
    """Each panel query becomes a recording rule, which `promtool check rules` parses."""
    queries = m.dashboard_queries()
    assert len(queries) >= 15
    assert not [q for _, q in queries if "$" in q], "a Grafana variable left unexplained"
    rules = [{"record": f"pykueue:dashboard:query{i}", "expr": expr} for i, (_, expr) in enumerate(queries)]
    path = tmp_path / "dashboard.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    assert f"SUCCESS: {len(rules)} rules found" in m.check_rules(promtool, path)


def test_the_rules_and_the_dashboard_read_only_series_we_export() -> None:
    exported = m.exported_names()
    assert {"workqueue_depth", "kueue_admission_wait_time_seconds_bucket", "kueue_pending_workloads"} <= exported
    read = {(f"alert {r['alert']}", name) for r in m.rules() for name in m.metric_names(r["expr"])}
    read |= {(f"panel {title}", name) for title, expr in m.dashboard_queries() for name in m.metric_names(expr)}
    variables = json.loads(m.DASHBOARD.read_text())["templating"]["list"]
    read |= {
        (f"variable {v['name']}", name)
        for v in variables
        if v["type"] == "query"
        for name in re.findall(r"label_values\((\w+),", v["definition"])
    }
    assert {name for _, name in read} >= set(m.UPSTREAM_LABELS) - {"kueue_admission_wait_time_seconds_bucket"}
    assert sorted((where, name) for where, name in read if name not in exported) == []
