"""The chart's alert rules on our real series: on the local stack, a ClusterQueue sees a preemption
and a quota shrunk below its usage; the worker's /metrics then carries every series the rules read,
with upstream's label names, and `promtool test rules` makes each alert fire on those very series
(names and labels as scraped, values moved the way the alert's situation moves them) and stay quiet
on the values scraped. The same scrapes show controller-runtime's work-queue series of upstream's
`workload_controller` and `job` controllers moving with the scenario's Workloads.

The module restarts our server with `metrics.enableClusterQueueResources: true` (the quota series)
and restores the default Configuration afterwards.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from e2e import monitoring as m
from e2e.conftest import Kubectl, local_stack, server_configured
from e2e.helpers import (
    ClusterObjects,
    cluster_queue,
    flavor,
    job,
    local_queue,
    submit,
    wait_for,
    wait_workload,
    workload_priority_class,
)

pytestmark = pytest.mark.local_stack

configured = server_configured("metrics:\n  enableClusterQueueResources: true\n")


@pytest.fixture(scope="module")
def promtool() -> str:
    return m.promtool()


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, dict(s.labels), s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def _find(
    samples: list[tuple[str, dict[str, str], float]], metric: str, /, **labels: str
) -> list[tuple[dict[str, str], float]]:
    return [(lbl, v) for n, lbl, v in samples if n == metric and all(lbl.get(k) == x for k, x in labels.items())]


def _series(name: str, labels: Mapping[str, str]) -> str:
    return name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items())) + "}"


def _held(value: float, minutes: int) -> str:
    return f"{value:g}+0x{minutes}"


def _alert(name: str, at: str, labels: Mapping[str, str], summary: str) -> dict[str, Any]:
    severity = next(r["labels"]["severity"] for r in m.rules() if r["alert"] == name)
    return {
        "eval_time": at,
        "alertname": name,
        "exp_alerts": [{"exp_labels": {**labels, "severity": severity}, "exp_annotations": {"summary": summary}}],
    }


def _quiet(name: str, at: str) -> dict[str, Any]:
    return {"eval_time": at, "alertname": name, "exp_alerts": []}


@pytest.fixture
def scenario(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> Iterator[dict[str, Any]]:
    """A ClusterQueue of 2 CPUs (borrowingLimit 1, in a cohort) where a high-priority Job preempts
    a low one, then the quota shrinks to 0 under the running Job: scrapes of the worker before
    anything, after the preemption, and after the shrink."""
    stack = local_stack(kubectl)
    before = stack.metrics_text()
    rf, cq, low, high = objs.name("alerts-rf"), objs.name("alerts"), objs.name("low"), objs.name("high")
    objs.apply(flavor(rf))
    objs.apply(
        cluster_queue(
            cq,
            rf,
            "2",
            cohort=objs.name("alerts-co"),
            borrowing="1",
            preemption={"withinClusterQueue": "LowerPriority"},
        )
    )
    for name, value in ((low, 100), (high, 1000)):
        objs.apply(workload_priority_class(name, value))
    kubectl.apply(local_queue(namespace, "q", cq))
    submit(kubectl, job(namespace, "low", "q", cpu="2", labels={"kueue.x-k8s.io/priority-class": low}))
    wait_workload(kubectl, namespace, "low", "Admitted")
    submit(kubectl, job(namespace, "high", "q", cpu="2", labels={"kueue.x-k8s.io/priority-class": high}))
    wait_workload(kubectl, namespace, "low", "Evicted", reason="Preempted")
    wait_workload(kubectl, namespace, "high", "Admitted")

    def preempted() -> str | None:
        # The counter moves at the preemption, the gauges at the worker's next refresh (every second,
        # less often while a refresh is slow: METRICS_REFRESH_SHARE): wait for both.
        text = stack.metrics_text()
        samples = _samples(text)
        counted = _find(samples, "kueue_preempted_workloads_total", preempting_cluster_queue=cq)
        return text if counted and _find(samples, "kueue_cluster_queue_nominal_quota", cluster_queue=cq) else None

    preempting = wait_for("the preemption counted", preempted)
    kubectl(
        "patch",
        "clusterqueue",
        cq,
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": "0"}]',
    )

    def shrunk() -> str | None:
        text = stack.metrics_text()
        found = _find(_samples(text), "kueue_cluster_queue_nominal_quota", cluster_queue=cq)
        # The series can be absent for a scrape while the changed ClusterQueue's gauges are set again.
        return text if found and found[0][1] == 0 else None

    yield {
        "cq": cq,
        "high": high,
        "before": before,
        "preempting": preempting,
        "shrunk": wait_for("the quota shrunk", shrunk),
    }


def test_each_alert_fires_on_our_series(promtool: str, scenario: dict[str, Any], tmp_path: Path) -> None:
    cq = scenario["cq"]
    preempting, shrunk = _samples(scenario["preempting"]), _samples(scenario["shrunk"])

    # Every series the rules read is there, with upstream's label names.
    for name, labels in m.UPSTREAM_LABELS.items():
        found = _find(shrunk, name, name="workload_controller") if name == "workqueue_depth" else _find(shrunk, name)
        assert found, f"{name}: not in the worker's /metrics"
        assert {frozenset(lbl) for lbl, _ in found} == {frozenset(labels)}, name
    assert not _find(shrunk, "workqueue_depth", name="workload"), "the seed's first selector matches nothing"
    assert {n for r in m.rules() for n in m.metric_names(r["expr"])} <= {n for n, _, _ in shrunk}

    # The high Job's admission: one series of buckets (the low Job's has its own priority class).
    buckets = _find(
        preempting, "kueue_admission_wait_time_seconds_bucket", cluster_queue=cq, priority_class=scenario["high"]
    )
    assert len(buckets) == 17  # upstream's generateExponentialBuckets(16), and +Inf
    (usage,) = _find(shrunk, "kueue_cluster_queue_resource_usage", cluster_queue=cq)
    (nominal,) = _find(shrunk, "kueue_cluster_queue_nominal_quota", cluster_queue=cq)
    (borrowing,) = _find(shrunk, "kueue_cluster_queue_borrowing_limit", cluster_queue=cq)
    (full_nominal,) = _find(preempting, "kueue_cluster_queue_nominal_quota", cluster_queue=cq)
    (preempted,) = _find(shrunk, "kueue_preempted_workloads_total", preempting_cluster_queue=cq)
    (depth,) = _find(shrunk, "workqueue_depth", name="workload_controller")
    assert (usage[1], nominal[1], borrowing[1], full_nominal[1], preempted[1]) == (2, 0, 1, 2, 1)

    def series(name: str, samples: Iterable[tuple[dict[str, str], Any]]) -> list[dict[str, str]]:
        return [{"series": _series(name, labels), "values": values} for labels, values in samples]

    slow_wait = 1000.0  # one Workload a minute admitted after 1000 s: the p95 is well above 600 s
    wait_series = series(
        "kueue_admission_wait_time_seconds_bucket",
        ((lbl, "0+1x40" if float(lbl["le"]) >= slow_wait else "0+0x40") for lbl, _ in buckets),
    )
    quiet_wait = series("kueue_admission_wait_time_seconds_bucket", ((lbl, _held(v, 40)) for lbl, v in buckets))
    quota = [
        *series("kueue_cluster_queue_resource_usage", [(usage[0], _held(usage[1], 20))]),
        *series("kueue_cluster_queue_borrowing_limit", [(borrowing[0], _held(borrowing[1], 20))]),
    ]
    thrash = series("kueue_preempted_workloads_total", [(preempted[0], "0+60x40")])  # one a second
    no_thrash = series("kueue_preempted_workloads_total", [(preempted[0], _held(preempted[1], 40))])
    backlog = series("workqueue_depth", [(depth[0], "150+0x20")])
    no_backlog = series("workqueue_depth", [(depth[0], _held(depth[1], 20))])
    no_le = {k: v for k, v in buckets[0][0].items() if k != "le"}
    usage_labels = usage[0]
    tests = [
        {
            "name": "each alert fires in its situation",
            "interval": "1m",
            "input_series": [
                *wait_series,
                *quota,
                *series("kueue_cluster_queue_nominal_quota", [(nominal[0], _held(nominal[1], 20))]),
                *thrash,
                *backlog,
            ],
            "alert_rule_test": [
                _alert("KueueAdmissionSlow", "20m", no_le, f"Kueue admission p95 > 10 min for {cq}"),
                _alert("KueueQueueOversubscribed", "15m", usage_labels, f"ClusterQueue {cq} exceeds quota + borrowing"),
                _alert(
                    "KueuePreemptionThrash",
                    "40m",
                    preempted[0],
                    f"Preemption rate > 0.5/s on {cq} — investigate cohort sizing",
                ),
                _alert(
                    "KueueControllerSlow",
                    "15m",
                    depth[0],
                    "Kueue Workload queue depth > 100 — controller-manager backlog",
                ),
            ],
        },
        {
            "name": "none fires on the values scraped",
            "interval": "1m",
            "input_series": [
                *quiet_wait,
                *quota,
                *series("kueue_cluster_queue_nominal_quota", [(full_nominal[0], _held(full_nominal[1], 20))]),
                *no_thrash,
                *no_backlog,
            ],
            "alert_rule_test": [
                _quiet(a, "19m")
                for a in (
                    "KueueAdmissionSlow",
                    "KueueQueueOversubscribed",
                    "KueuePreemptionThrash",
                    "KueueControllerSlow",
                )
            ],
        },
    ]
    path = tmp_path / "alerts.test.yaml"
    path.write_text(
        yaml.safe_dump({"rule_files": [str(m.RULES)], "evaluation_interval": "30s", "tests": tests}, allow_unicode=True)
    )
    out = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_the_work_queue_series_follow_the_workload_controller(scenario: dict[str, Any]) -> None:
    """controller-runtime's seven families for upstream's `workload_controller` and `job` queues,
    moving with the scenario's Workloads."""
    before, shrunk = _samples(scenario["before"]), _samples(scenario["shrunk"])
    for controller in ("workload_controller", "job"):
        labels = {"name": controller, "controller": controller}
        families = {n for n, lbl, _ in shrunk if n.startswith("workqueue_") and lbl.get("name") == controller}
        assert families == {
            "workqueue_depth",
            "workqueue_adds_total",
            "workqueue_retries_total",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
            *(f"workqueue_{h}_duration_seconds_{p}" for h in ("queue", "work") for p in ("bucket", "sum", "count")),
        }, controller
        for name in ("workqueue_adds_total", "workqueue_work_duration_seconds_count"):
            was = sum(v for _, v in _find(before, name, **labels))
            now = sum(v for _, v in _find(shrunk, name, **labels))
            assert now >= was + 2, (controller, name, was, now)  # two Jobs, two Workloads, several events each
