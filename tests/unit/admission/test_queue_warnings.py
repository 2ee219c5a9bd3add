"""Submit-time warnings about the queue a Job or Pod names: certain ones only, never a refusal."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import fq, make_cq
from tests.unit.admission.reviews import review
from webhook.admission import job, pod
from webhook.admission.context import Context, StaticLookups
from webhook.config import Configuration, Resources, ResourceTransformation

VALIDATE_JOB = "/validate-batch-v1-job"
NS = {"team-a": {"kubernetes.io/metadata.name": "team-a", "team": "a"}}


def ctx(
    *cqs: dict[str, Any], targets: dict[tuple[str, str], str] | None = None, resources: Resources | None = None
) -> Context:
    lookups = StaticLookups(
        namespaces=NS,
        local_queue_targets=targets if targets is not None else {("team-a", "main"): "cq"},
        cluster_queues={cq["metadata"]["name"]: cq for cq in cqs},
    )
    config = Configuration() if resources is None else Configuration(resources=resources)
    return Context(config=config, lookups=lookups, namespace="team-a")


def a_job(cpu: str = "1", parallelism: int = 1, queue: str = "main") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "parallelism": parallelism,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
        },
    }


CQ = make_cq("cq").group(fq("default", cpu="4"), fq("spot", cpu="6")).obj()


@pytest.mark.parametrize(
    ("obj", "context", "want"),
    [
        pytest.param(a_job(), ctx(CQ), [], id="fits: no warning"),
        pytest.param(
            a_job(queue="nope"),
            ctx(CQ),
            ['LocalQueue "nope" does not exist in namespace "team-a": the Job stays pending until it is created'],
            id="local queue missing",
        ),
        pytest.param(
            a_job(),
            ctx(make_cq("cq").selector({"matchLabels": {"team": "b"}}).group(fq("default", cpu="4")).obj()),
            ['ClusterQueue "cq" of LocalQueue "main" does not select namespace "team-a": the Job cannot be admitted'],
            id="namespace not selected",
        ),
        pytest.param(
            a_job(cpu="2", parallelism=4),
            ctx(CQ),
            ['the Job can never fit ClusterQueue "cq": cpu 8 requested, at most 6 in any flavor'],
            id="never fits",
        ),
        pytest.param(
            a_job(cpu="2", parallelism=4),
            ctx(make_cq("cq").cohort("all").group(fq("default", cpu="4")).obj()),
            [],
            id="cohort without borrowing limit: cannot be judged",
        ),
        pytest.param(
            a_job(cpu="2", parallelism=4),
            ctx(make_cq("cq").cohort("all").group(fq("default", cpu=("4", "2", None))).obj()),
            ['the Job can never fit ClusterQueue "cq": cpu 8 requested, at most 6 in any flavor'],
            id="cohort: nominal plus borrowing limit",
        ),
        pytest.param(a_job(queue=""), ctx(CQ), [], id="no queue: not ours to judge"),
        pytest.param(
            a_job(),
            ctx(targets={("team-a", "main"): "gone"}),
            [],
            id="cluster queue missing: the LocalQueue's own status says so",
        ),
        pytest.param(
            a_job(cpu="2", parallelism=4),
            ctx(CQ, resources=Resources(transformations=(ResourceTransformation("cpu", "Replace", "", {"x/c": "1"}),))),
            [],
            id="a transformation replacing the input: it is not charged, so not judged",
        ),
        pytest.param(
            a_job(cpu="2", parallelism=4),
            ctx(
                make_cq("cq").group(fq("default", cpu="10", **{"x/credits": "12"})).obj(),
                resources=Resources(transformations=(ResourceTransformation("cpu", "Retain", "", {"x/credits": "2"}),)),
            ),
            ['the Job can never fit ClusterQueue "cq": x/credits 16 requested, at most 12 in any flavor'],
            id="a transformation's output is judged against its quota",
        ),
    ],
)
def test_job_warnings(obj, context, want) -> None:
    assert job.warnings_create(obj, context) == want


def test_pod_warnings_only_for_pods_nobody_owns() -> None:
    p = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "main"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "7"}}}]},
    }
    assert pod.warnings_create(p, ctx(CQ)) == [
        'the Pod can never fit ClusterQueue "cq": cpu 7 requested, at most 6 in any flavor'
    ]
    p["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
    ]
    assert pod.warnings_create(p, ctx(CQ)) == []


def test_warnings_reach_the_admission_review_and_never_refuse(make_driver) -> None:
    driver = make_driver(namespaces=NS, local_queue_targets={("team-a", "main"): "cq"}, cluster_queues={"cq": CQ})
    response = driver.send(VALIDATE_JOB, review(a_job(cpu="2", parallelism=4)))
    assert response["allowed"] is True
    assert response["warnings"] == ['the Job can never fit ClusterQueue "cq": cpu 8 requested, at most 6 in any flavor']


def a_budget(name: str, used: int, **target: Any) -> dict[str, Any]:
    spec = {**target, "period": {"every": "PT60S"}, "limit": {"resourceHours": {"cpu": "1"}}}
    status = {"usedPercent": used, "resetAt": "2026-11-28T05:01:00Z"}
    return {"metadata": {"name": name}, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("budgets", "want"),
    [
        pytest.param([a_budget("b", 89, clusterQueue="cq")], [], id="89%: quiet"),
        pytest.param(
            [a_budget("b", 90, clusterQueue="cq")],
            ['budget "b" (ClusterQueue cq) is 90% spent (resets at 2026-11-28T05:01:00Z): the Job may wait for budget'],
            id="90% of its ClusterQueue's",
        ),
        pytest.param([a_budget("b", 99, clusterQueue="other")], [], id="another queue's"),
        pytest.param(
            [
                a_budget("z", 95, namespace="team-a"),
                a_budget("a", 100, localQueue={"namespace": "team-a", "name": "main"}),
            ],
            [
                'budget "a" (LocalQueue team-a/main) is 100% spent (resets at 2026-11-28T05:01:00Z): the Job may wait for budget',
                'budget "z" (namespace team-a) is 95% spent (resets at 2026-11-28T05:01:00Z): the Job may wait for budget',
            ],
            id="several, by name",
        ),
        pytest.param(
            [{"metadata": {"name": "bad"}, "spec": {}, "status": {"usedPercent": 100}}], [], id="invalid: quiet"
        ),
    ],
)
def test_budget_warnings(budgets, want):
    lookups = StaticLookups(
        namespaces=NS,
        local_queue_targets={("team-a", "main"): "cq"},
        cluster_queues={"cq": CQ},
        budget_objects=budgets,
    )
    context = Context(config=Configuration(), lookups=lookups, namespace="team-a")
    assert job.warnings_create(a_job(), context) == want
