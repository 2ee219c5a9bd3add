"""Upstream v0.19.2 `pkg/controller/admissionchecks/multikueue/clusterqueue_test.go`
(`TestCQReconcile`), case by case under upstream's names, against the pure quota automation
(`admissionchecks.multikueue.quota`): the manager queue's nominal quotas and its
MultiKueueManagerQuotaAutomation condition. An inactive worker is one the reconciler leaves out of
`aggregate` (it reads connected workers only)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.worker.admissionchecks.multikueue import quota

NS = "ns"
AUTOMATED = ("True", "QuotaAutomated", "ClusterQueue quota is automatically managed based on MultiKueue workers.")


def cq(name: str, *flavors: tuple[str, dict[str, str]], groups: int = 1) -> dict[str, Any]:
    """A ClusterQueue of `groups` resource groups (the flavors split among them in order)."""
    per = max(1, len(flavors) // groups)
    rgs = []
    for i in range(groups):
        chunk = flavors[i * per : (i + 1) * per] if i < groups - 1 else flavors[i * per :]
        covered = list(dict.fromkeys(r for _, res in chunk for r in res))
        rgs.append(
            {
                "coveredResources": covered,
                "flavors": [
                    {"name": f, "resources": [{"name": r, "nominalQuota": q} for r, q in res.items()]}
                    for f, res in chunk
                ],
            }
        )
    return {"metadata": {"name": name}, "spec": {"resourceGroups": rgs}}


def lq(name: str, target: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS}, "spec": {"clusterQueue": target}}


def config(quota_management: str | None = "Automated") -> dict[str, Any]:
    spec: dict[str, Any] = {"clusters": ["worker1", "worker2"]}
    if quota_management is not None:
        spec["quotaManagement"] = quota_management
    return {"metadata": {"name": "config1"}, "spec": spec}


def worker(lqs: list[dict[str, Any]], cqs: list[dict[str, Any]]) -> quota.WorkerQueues:
    return quota.WorkerQueues(lqs, cqs)


CASES = [
    pytest.param(
        cq("cq1", ("default", {"cpu": "0", "memory": "0"})),
        ["lq1"],
        [
            worker([lq("lq1", "w1-cq1")], [cq("w1-cq1", ("default", {"cpu": "10", "memory": "20Gi"}))]),
            worker([lq("lq1", "w2-cq1")], [cq("w2-cq1", ("default", {"cpu": "5", "memory": "10Gi"}))]),
        ],
        {"cpu": "15", "memory": "30Gi"},
        id="multiple resources for single LQs and CQs",
    ),
    pytest.param(
        cq("cq1", ("default", {"cpu": "0"})),
        ["lq1"],
        [
            worker(
                [lq("lq1", "w1-cq1")],
                [cq("w1-cq1", ("default", {"cpu": "10"})), cq("w1-cq-unrelated", ("default", {"cpu": "100"}))],
            ),
            # worker2 is inactive: not read at all
        ],
        {"cpu": "10"},
        id="unrelated CQs and inactive workers are ignored",
    ),
    pytest.param(
        cq("cq1", ("default", {"cpu": "0"})),
        ["lq1", "lq2"],
        [
            worker([lq("lq1", "w1-cq1"), lq("lq2", "w1-cq1")], [cq("w1-cq1", ("default", {"cpu": "10"}))]),
            worker(
                [lq("lq1", "w2-cq1"), lq("lq2", "w2-cq2")],
                [cq("w2-cq1", ("default", {"cpu": "5"})), cq("w2-cq2", ("default", {"cpu": "8"}))],
            ),
        ],
        {"cpu": "23"},
        id="multiple LQs pointing to same and different CQs on workers",
    ),
    pytest.param(
        cq("cq1", ("default", {"cpu": "0", "gpu": "0"})),
        ["lq1"],
        [
            worker(
                [lq("lq1", "w1-cq1")],
                [cq("w1-cq1", ("default", {"cpu": "10"}), ("gpu", {"gpu": "1"}), groups=2)],
            ),
            worker(
                [lq("lq1", "w2-cq1")],
                [cq("w2-cq1", ("default", {"cpu": "5", "gpu": "2"}), ("other", {"cpu": "4", "gpu": "1"}))],
            ),
        ],
        {"cpu": "19", "gpu": "4"},
        id="multiple flavors and incompatible ResourceGroups across workers",
    ),
    pytest.param(
        cq("cq1", ("default", {"cpu": "0", "memory": "0", "gpu": "0"})),
        ["lq1"],
        [
            worker([lq("lq1", "w1-cq1")], [cq("w1-cq1", ("default", {"cpu": "10", "memory": "20Gi"}))]),
            worker([lq("lq1", "w2-cq1")], [cq("w2-cq1", ("default", {"cpu": "5"}))]),
        ],
        {"cpu": "15", "memory": "20Gi", "gpu": "0"},
        id="workers with a subset of manager resources",
    ),
]


@pytest.mark.parametrize(("manager", "local_queues", "workers", "want"), CASES)
def test_cq_reconcile_automated(
    manager: dict[str, Any], local_queues: list[str], workers: list[quota.WorkerQueues], want: dict[str, str]
) -> None:
    totals = quota.aggregate([f"{NS}/{name}" for name in local_queues], workers)
    plan = quota.plan_quota(manager, True, config(), totals)
    assert plan.condition is not None
    assert (plan.condition["status"], plan.condition["reason"], plan.condition["message"]) == AUTOMATED
    assert plan.resources is not None
    assert {r["name"]: r["nominalQuota"] for r in plan.resources} == want
    covered = manager["spec"]["resourceGroups"][0]["coveredResources"]
    assert [r["name"] for r in plan.resources] == covered  # in the manager's order


def test_quota_automation_not_requested() -> None:
    plan = quota.plan_quota(cq("cq1", ("default", {"cpu": "100"})), True, config(None), {})
    assert plan.resources is None
    assert plan.condition == {
        "type": "MultiKueueManagerQuotaAutomation",
        "status": "False",
        "reason": "NotRequested",
        "message": "MultiKueue manager quota automation has not been requested.",
    }


def test_quota_automation_unsupported_for_multiple_manager_flavors() -> None:
    manager = cq("cq1", ("default", {"cpu": "0"}), ("other", {"cpu": "0"}))
    plan = quota.plan_quota(manager, True, config(), {"cpu": "10"})
    assert plan.condition is not None and plan.resources is None
    assert (plan.condition["reason"], plan.condition["message"]) == (
        "UnsupportedConfiguration",
        "Quota automation requires that the manager-side ClusterQueue has exactly one ResourceFlavor",
    )


def test_quota_automation_unsupported_for_missing_manager_covered_resources() -> None:
    plan = quota.plan_quota(
        cq("cq1", ("default", {"cpu": "0"})), True, config(), {"cpu": "1", "memory": "1Gi", "gpu": "1"}
    )
    assert plan.condition is not None and plan.resources is None
    assert (plan.condition["reason"], plan.condition["message"]) == (
        "UnsupportedConfiguration",
        "manager-side coveredResources is missing resources configured on workers: [gpu memory]",
    )


def test_not_a_multikueue_manager_cluster_queue() -> None:
    assert quota.plan_quota(cq("cq1", ("default", {"cpu": "0"})), False, None, {}) == quota.QuotaPlan(None)


def test_referenced_multikueue_config_not_found() -> None:
    plan = quota.plan_quota(cq("cq1", ("default", {"cpu": "0"})), True, None, {})
    assert plan.condition is not None
    assert (plan.condition["status"], plan.condition["reason"], plan.condition["message"]) == (
        "False",
        "UnsupportedConfiguration",
        "The referenced MultiKueueConfig was not found.",
    )


def test_unchanged_quotas_are_not_written_again() -> None:
    manager = cq("cq1", ("default", {"cpu": "15"}))
    plan = quota.plan_quota(manager, True, config(), {"cpu": "15"})
    assert plan.resources is None and plan.condition is not None


def test_sums_print_as_go_prints_them() -> None:
    """upstream's e2e sums: milli-cpu and decimal-SI memory keep their form."""
    workers = [
        worker([lq("lq1", "a")], [cq("a", ("f", {"cpu": "1600m", "memory": "2.5G", "ephemeral-storage": "10G"}))]),
        worker([lq("lq1", "b")], [cq("b", ("f", {"cpu": "1600m", "memory": "2.5G", "ephemeral-storage": "10G"}))]),
    ]
    assert quota.aggregate([f"{NS}/lq1"], workers) == {"cpu": "3200m", "memory": "5G", "ephemeral-storage": "20G"}
