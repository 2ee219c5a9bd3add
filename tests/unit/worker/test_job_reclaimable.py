"""`status.reclaimablePods` of a running batch/v1 Job's Workload (upstream `Job.ReclaimablePods`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.worker.test_job import admitted_workload, make_job
from webhook.api import jobs
from webhook.config import Configuration
from webhook.worker.integrations import batchjob as j


def running(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    job = make_job(**spec)
    job["spec"]["suspend"] = False
    job["status"] = status
    return job


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        pytest.param({"parallelism": 4, "completions": 10}, {"succeeded": 5}, [], id="remaining work fills every slot"),
        pytest.param(
            {"parallelism": 4, "completions": 10},
            {"succeeded": 7},
            [{"name": "main", "count": 1}],
            id="3 left for 4 slots",
        ),
        pytest.param(
            {"parallelism": 4, "completions": 10}, {"succeeded": 10}, [{"name": "main", "count": 4}], id="all done"
        ),
        pytest.param(
            {"parallelism": 4},
            {"succeeded": 1},
            [{"name": "main", "count": 1}],
            id="completions defaults to parallelism",
        ),
        pytest.param({"parallelism": 1}, {"succeeded": 1}, [], id="single pod has nothing to reclaim"),
        pytest.param({"parallelism": 3, "completions": 3}, {}, [], id="no terminal pod"),
        pytest.param(
            {"parallelism": 3, "completions": 4, "completionMode": "Indexed"},
            {"succeeded": 0, "completedIndexes": "0-1", "failedIndexes": "1,3,7"},
            [{"name": "main", "count": 2}],
            id="indexed: 0,1,3 terminal (7 >= completions), 1 left for 3 slots",
        ),
        pytest.param(
            {"parallelism": 3, "completions": 4, "completionMode": "Indexed"},
            {"succeeded": 4, "completedIndexes": "x,5-3"},
            [],
            id="indexed: malformed intervals ignored, succeeded not used",
        ),
    ],
)
def test_reclaimable_pods(spec: dict[str, Any], status: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    job = running(spec, status)
    wl = admitted_workload(job)
    wl["spec"]["podSets"][0]["count"] = jobs.pods_count(job)
    assert j.reclaimable_pods(job, wl) == expected


def test_reclaimable_count_is_capped_at_the_pod_set_count() -> None:
    job = running({"parallelism": 4, "completions": 4}, {"succeeded": 4})
    wl = admitted_workload(job)
    wl["spec"]["podSets"][0]["count"] = 2  # e.g. after an elastic scale-down
    assert j.reclaimable_pods(job, wl) == [{"name": "main", "count": 2}]


DEFAULTS = Configuration()


def plan_for(job: dict[str, Any], wl: dict[str, Any], config: Configuration = DEFAULTS) -> j.Plan:
    return j.plan(job, [wl], namespace_labels={}, config=config)


def test_plan_updates_reclaimable_pods_of_a_running_job_until_they_match() -> None:
    job = running({"parallelism": 3, "completions": 3}, {"succeeded": 2, "active": 1})
    wl = admitted_workload(job)
    wl["spec"]["podSets"][0]["count"] = 3
    p = plan_for(job, wl)
    assert (p.action, p.steps[0].reclaimable_pods) == ("update_reclaimable", [{"name": "main", "count": 2}])
    wl["status"]["reclaimablePods"] = [{"name": "main", "count": 2}]
    assert plan_for(job, wl).action == "ignore"
    off = Configuration(feature_gates={"ReclaimablePods": False})
    del wl["status"]["reclaimablePods"]
    assert plan_for(job, wl, off).action == "ignore"


def test_finished_job_is_finished_rather_than_reclaimed() -> None:
    job = running(
        {"parallelism": 3, "completions": 3}, {"succeeded": 3, "conditions": [{"type": "Complete", "status": "True"}]}
    )
    wl = admitted_workload(job)
    assert plan_for(job, wl).action == "finish"
