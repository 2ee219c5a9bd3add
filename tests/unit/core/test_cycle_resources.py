"""The Configuration's `resources` section in a scheduling cycle: what is admitted, the
podSetAssignments' `resourceUsage` written to status.admission, and the quota the ClusterQueue
then holds. Mirrors upstream's integration suites `scheduler/quotacheckstrategy`,
`scheduler/excluderesources` and `scheduler/resourcetransformations` (v0.19.2), and the e2e
`sequential/baseline/quota_check_strategy_test.go`'s preemption case."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.config import ResourceTransformation
from webhook.core.decisions import Pending, Preempt
from webhook.core.quota_resources import QuotaResources
from webhook.core.resources import FlavorResource

GPU = "example.com/gpu"
MIG = "nvidia.com/mig-1g.5gb"
ACCEL = "example.com/accelerator-memory"
VPC = "networking.example.com/vpc1"

MIG_TO_MEMORY = QuotaResources.from_config((), [ResourceTransformation(MIG, "Replace", "", {ACCEL: "5Gi"})])


def _setup(*groups: dict[str, Any], preemption: bool = False) -> list[dict[str, Any]]:
    cq = make_cq("cq").group(*groups)
    if preemption:
        cq = cq.preemption(within="LowerPriority")
    return [make_flavor("default").obj(), cq.obj(), make_lq("lq", "ns", "cq")]


def _wl(name: str, requests: dict[str, str], count: int = 1, priority: int = 0) -> dict[str, Any]:
    obj = make_wl(name).queue("lq").priority(priority).podset("main", count).obj()
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {"requests": requests}
    return obj


@pytest.mark.parametrize(
    ("config", "workload", "quota", "want_usage"),
    [
        pytest.param(
            {"ignore_undeclared_resources": True},
            _wl("wl", {"cpu": "2", "example.com/gpu": "100"}),
            fq("default", cpu="10"),
            {"cpu": "2"},
            id="IgnoreUndeclared: admitted, the undeclared resource not charged",
        ),
        pytest.param(
            {"resources": QuotaResources(excluded_prefixes=("networking.example.com/",))},
            _wl("wl", {"cpu": "2", "networking.example.com/vpc1": "1"}),
            fq("default", cpu="10"),
            {"cpu": "2"},
            id="excludeResourcePrefixes: admitted, the excluded resource not charged",
        ),
        pytest.param(
            {"resources": MIG_TO_MEMORY},
            _wl("wl", {"cpu": "1", "nvidia.com/mig-1g.5gb": "1"}, count=2),
            fq("default", cpu="10", **{ACCEL: "10Gi"}),
            # An extended resource is written in DecimalSI, as upstream's `ResourceFormatter` does.
            {"cpu": "2", ACCEL: "10737418240"},
            id="transformation Replace: the outputs charged, times the count, the input not",
        ),
    ],
)
def test_admitted_usage(
    config: dict[str, Any], workload: dict[str, Any], quota: dict[str, Any], want_usage: dict[str, str]
) -> None:
    core = make_core(*_setup(quota), workload, **config)
    admitted = core.schedule(T0).admitted
    assert len(admitted) == 1
    (ps,) = admitted[0].admission["podSetAssignments"]
    assert ps["resourceUsage"] == want_usage
    assert set(ps["flavors"]) == set(want_usage)
    held = core.cache.cluster_queues["cq"].usage
    assert {fr.resource for fr, v in held.items() if v} == set(want_usage)


@pytest.mark.parametrize(
    ("config", "workload", "quota", "want_message"),
    [
        pytest.param(
            {},
            _wl("wl", {"cpu": "2", "example.com/gpu": "100"}),
            fq("default", cpu="10"),
            f"couldn't assign flavors to pod set main: resource {GPU} unavailable in ClusterQueue",
            id="BlockUndeclared (the default): an undeclared resource keeps it pending",
        ),
        pytest.param(
            {"resources": QuotaResources(excluded_prefixes=("other.example.com/",))},
            _wl("wl", {"cpu": "2", "networking.example.com/vpc1": "1"}),
            fq("default", cpu="10"),
            f"couldn't assign flavors to pod set main: resource {VPC} unavailable in ClusterQueue",
            id="a prefix that does not match excludes nothing",
        ),
        pytest.param(
            {"resources": MIG_TO_MEMORY},
            _wl("wl", {"cpu": "1", "nvidia.com/mig-1g.5gb": "1"}, count=3),
            fq("default", cpu="10", **{ACCEL: "10Gi"}),
            f"couldn't assign flavors to pod set main: insufficient quota for {ACCEL} in flavor default, "
            "previously considered podsets requests (0) + current podset request (16106127360) > maximum capacity "
            "(10737418240)",
            id="transformation: the output is what must fit",
        ),
    ],
)
def test_pending(config: dict[str, Any], workload: dict[str, Any], quota: dict[str, Any], want_message: str) -> None:
    core = make_core(*_setup(quota), workload, **config)
    result = core.schedule(T0)
    assert not result.admitted
    (pending,) = [d for d in result.decisions if isinstance(d, Pending)]
    assert pending.message == want_message


def test_ignore_undeclared_preempts_lower_priority() -> None:
    """Upstream's e2e: a high-priority Job asking for an undeclared resource preempts a
    low-priority one that holds the whole cpu quota (undeclared resource included)."""
    low = (
        make_wl("low")
        .queue("lq")
        .priority(10)
        .podset("main", 1, cpu="100", memory="1Gi")
        .reserve("cq", psa(cpu=("default", "100")))
        .obj()
    )
    high = _wl("high", {"cpu": "100", "memory": "1Gi"}, priority=1000)
    core = make_core(*_setup(fq("default", cpu="100"), preemption=True), low, high, ignore_undeclared_resources=True)
    (preempt,) = [d for d in core.schedule(T0).decisions if isinstance(d, Preempt)]
    assert preempt.preemptor_key == "ns/high"
    assert [t.key for t in preempt.targets] == ["ns/low"]
    assert FlavorResource("default", "memory") not in core.cache.cluster_queues["cq"].usage


def test_ignore_undeclared_pod_set_of_undeclared_resources_only_does_not_end_the_assignment() -> None:
    """A podSet asking only for undeclared resources gets no flavor and holds no quota; the podSets
    after it are still assigned and charged. Upstream (v0.19.2 `assignFlavors`) stops at such a
    podSet and admits the Workload without the later podSets' assignments: their pods run uncharged."""
    wl = make_wl("wl").queue("lq").podset("sidecar", 1, memory="1Gi").podset("main", 2, cpu="2").obj()
    core = make_core(*_setup(fq("default", cpu="10")), wl, ignore_undeclared_resources=True)
    (admit,) = core.schedule(T0).admitted
    assert admit.admission["podSetAssignments"] == [
        {"name": "sidecar", "flavors": {}, "resourceUsage": {}, "count": 1},
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "4"}, "count": 2},
    ]
    assert core.cache.cluster_queues["cq"].usage[FlavorResource("default", "cpu")] == 4000
