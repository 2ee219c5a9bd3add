"""What quota charges for a Workload's podSets under `resources.excludeResourcePrefixes` and
`resources.transformations`: the cases of upstream's `TestNewInfo` (pkg/workload/workload_test.go,
v0.19.2), read through `parse_workload` and `pod_set_requests` (upstream's `TotalRequests`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_wl
from webhook.config import ResourceTransformation
from webhook.core.quota_resources import QuotaResources
from webhook.core.resources import UNLIMITED
from webhook.core.workload import parse_workload


def _rules(*transforms: ResourceTransformation, prefixes: tuple[str, ...] = ()) -> QuotaResources:
    return QuotaResources.from_config(prefixes, transforms)


def _t(input: str, strategy: str = "Retain", multiply_by: str = "", **outputs: str) -> ResourceTransformation:
    return ResourceTransformation(input, strategy, multiply_by, {k.replace("__", "/"): v for k, v in outputs.items()})


def _ps(wl: Any, name: str, count: int, **requests: str) -> Any:
    return wl.podset(name, count, **{k.replace("__", "/"): v for k, v in requests.items()})


def _totals(obj: dict[str, Any], rules: QuotaResources) -> list[dict[str, int]]:
    return parse_workload(obj, resources=rules).pod_set_requests()


GPU_RULES = _rules(
    _t("nvidia.com/mig-1g.5gb", "Replace", **{"example.com__accelerator-memory": "5Ki", "example.com__credits": "10"}),
    _t(
        "nvidia.com/mig-2g.10gb", "Replace", **{"example.com__accelerator-memory": "10Ki", "example.com__credits": "15"}
    ),
    _t("nvidia.com/gpu", "Retain", **{"example.com__accelerator-memory": "40Ki", "example.com__credits": "100"}),
    _t("nvidia.com/vgpucores", "Replace", "nvidia.com/vgpu", **{"nvidia.com__total-vgpucores": "1"}),
    _t("nvidia.com/vgpumem", "Replace", "nvidia.com/vgpu", **{"nvidia.com__total-vgpumem": "1"}),
)
ALLOWANCE = _rules(
    _t("nvidia.com/gpumem", "Replace", "nvidia.com/gpu", **{"quota.example.com__gpu-memory-overage": "1"}),
    _t("nvidia.com/gpu", "Retain", **{"quota.example.com__gpu-memory-overage": "-1024"}),
)
OVERAGE = "quota.example.com/gpu-memory-overage"


def _gpu_workload() -> dict[str, Any]:
    wl = make_wl("transform")
    _ps(wl, "a", 1, **{"nvidia.com__mig-1g.5gb": "2", "nvidia.com__mig-2g.10gb": "1", "cpu": "1"})
    _ps(wl, "b", 2, **{"nvidia.com__gpu": "1", "cpu": "2"})
    _ps(wl, "c", 1, **{"nvidia.com__vgpu": "2", "nvidia.com__vgpucores": "20", "nvidia.com__vgpumem": "1024"})
    _ps(wl, "d", 2, **{"nvidia.com__vgpu": "2", "nvidia.com__vgpucores": "30", "nvidia.com__vgpumem": "2048"})
    return wl.obj()


def _one(rules: QuotaResources, **requests: str) -> tuple[dict[str, Any], QuotaResources]:
    return _ps(make_wl("transform"), "a", 1, **requests).obj(), rules


@pytest.mark.parametrize(
    ("obj", "rules", "want"),
    [
        pytest.param(
            *_one(QuotaResources(), cpu="10m", memory="512Ki", **{"networking.example.com__vpc1": "1"}),
            [{"cpu": 10, "memory": 512 * 1024, "networking.example.com/vpc1": 1}],
            id="nothing configured: every request charged",
        ),
        pytest.param(
            *_one(
                _rules(prefixes=("dummyPrefix", "networking.example.com/")),
                cpu="10m",
                memory="512Ki",
                **{"networking.example.com__vpc1": "1"},
            ),
            [{"cpu": 10, "memory": 512 * 1024}],
            id="filterResources: an excluded prefix drops the resource",
        ),
        pytest.param(
            _gpu_workload(),
            GPU_RULES,
            [
                {"cpu": 1000, "example.com/accelerator-memory": 20 * 1024, "example.com/credits": 35},
                {
                    "cpu": 4000,
                    "example.com/accelerator-memory": 80 * 1024,
                    "example.com/credits": 200,
                    "nvidia.com/gpu": 2,
                },
                {"nvidia.com/vgpu": 2, "nvidia.com/total-vgpucores": 2 * 20, "nvidia.com/total-vgpumem": 2 * 1024},
                {
                    "nvidia.com/vgpu": 2 * 2,
                    "nvidia.com/total-vgpucores": 2 * 2 * 30,
                    "nvidia.com/total-vgpumem": 2 * 2 * 2048,
                },
            ],
            id="transformResources: Replace, Retain and multiplyBy, times the podSet count",
        ),
        pytest.param(
            *_one(ALLOWANCE, **{"nvidia.com__gpumem": "2048", "nvidia.com__gpu": "2"}),
            [{OVERAGE: 2048, "nvidia.com/gpu": 2}],
            id="transformAllowanceAboveIt",
        ),
        pytest.param(
            *_one(ALLOWANCE, **{"nvidia.com__gpumem": "1024", "nvidia.com__gpu": "2"}),
            [{OVERAGE: 0, "nvidia.com/gpu": 2}],
            id="transformAllowanceExactlyAtIt",
        ),
        pytest.param(
            *_one(ALLOWANCE, **{"nvidia.com__gpumem": "512", "nvidia.com__gpu": "2"}),
            [{OVERAGE: 0, "nvidia.com/gpu": 2}],
            id="transformAllowanceUnderIt: a negative generated total counts as zero",
        ),
        pytest.param(
            *_one(
                _rules(_t("example.com/credit", "Replace", **{"example.com__gpu": "-1"})),
                **{"example.com__gpu": "8", "example.com__credit": "3"},
            ),
            [{"example.com/gpu": 8}],
            id="transformAllowanceDoesNotReachADirectRequest",
        ),
        pytest.param(
            *_one(
                _rules(_t("example.com/credit", "Replace", **{"example.com__gpu": "1"})),
                **{"example.com__gpu": "1", "example.com__credit": "1"},
            ),
            [{"example.com/gpu": 2}],
            id="transformOutputSharingANameWithARequestIsAdded",
        ),
        pytest.param(
            *_one(_rules(_t("example.com/gpu", "Retain", **{"example.com__gpu": "5"})), **{"example.com__gpu": "1"}),
            [{"example.com/gpu": 6}],
            id="transformOutputSharingANameWithItsRetainedInputIsAdded",
        ),
        pytest.param(
            *_one(
                _rules(_t("example.com/gpumem", "Retain", "example.com/gpu", **{"example.com__gpumem-quota": "1"})),
                **{"example.com__gpumem": "1024", "example.com__gpu": "2"},
            ),
            [{"example.com/gpumem": 1024, "example.com/gpumem-quota": 2048, "example.com/gpu": 2}],
            id="transformRetainWithMultiplyBy: the retained input is not multiplied",
        ),
        pytest.param(
            *_one(
                _rules(_t("example.com/gpumem", "", "cpu", **{"example.com__gpumem-quota": "1"})),
                cpu="500m",
                **{"example.com__gpumem": "1024"},
            ),
            [{"example.com/gpumem": 1024, "example.com/gpumem-quota": 512, "cpu": 500}],
            id="transformRetainWithMultiplyByUnderOne: strategy unset is Retain, cpu multiplies as 0.5",
        ),
        pytest.param(
            *_one(
                _rules(_t("example.com/gpu", "Retain", "example.com/node", **{"example.com__gpu": "1"})),
                **{"example.com__gpu": "1", "example.com__node": "2"},
            ),
            [{"example.com/gpu": 3, "example.com/node": 2}],
            id="transformOutputSharingANameWithItsRetainedInputIsAddedToTheAmountRequested",
        ),
        pytest.param(
            *_one(
                _rules(_t("example.com/gpumem", "Replace", "example.com/absent", **{"example.com__q": "2"})),
                **{"example.com__gpumem": "3"},
            ),
            [{"example.com/q": 6}],
            id="multiplyBy a resource the pod does not request: the input alone",
        ),
        pytest.param(
            *_one(
                _rules(_t("example.com/credit", "Replace", **{"example.com__gpu": "10000000000"})),
                **{"example.com__credit": "10000000000"},
            ),
            [{"example.com/gpu": UNLIMITED}],
            id="transformProductPastTheRangeIsNotFlooredAway",
        ),
        pytest.param(
            *_one(
                _rules(
                    _t("cpu", "Replace", **{"example.com__cpu-credits": "3000"}),
                    _t("memory", "Replace", **{"example.com__memory-credits": "3m"}),
                ),
                cpu="100m",
                memory="100M",
            ),
            [{"example.com/cpu-credits": 300, "example.com/memory-credits": 300 * 1000}],
            id="transformMilliValues",
        ),
        pytest.param(
            *_one(_rules(_t("example.com/a", "Replace", cpu="1500m")), **{"example.com__a": "3"}),
            [{"cpu": 4500}],
            id="an output in cpu is charged in milli-units",
        ),
        pytest.param(
            *_one(
                _rules(
                    _t("networking.example.com/vpc1", "Replace", **{"example.com__x": "1"}),
                    prefixes=("networking.example.com/",),
                ),
                cpu="1",
                **{"networking.example.com__vpc1": "1"},
            ),
            [{"cpu": 1000}],
            id="exclusion comes first: an excluded input generates nothing",
        ),
    ],
)
def test_charged_requests(obj: dict[str, Any], rules: QuotaResources, want: list[dict[str, int]]) -> None:
    assert _totals(obj, rules) == want


def test_limits_stand_in_for_missing_requests_before_transforming() -> None:
    """A container giving only limits is charged its limits, and transformations see them
    (upstream's `AdjustResources` copies limits into requests before `NewInfo`)."""
    obj = make_wl("limits").podset("main", 2).obj()
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/mig-1g.5gb": "1", "cpu": "1"}
    }
    rules = _rules(_t("nvidia.com/mig-1g.5gb", "Replace", **{"example.com__accelerator-memory": "5Gi"}))
    assert _totals(obj, rules) == [{"cpu": 2000, "example.com/accelerator-memory": 2 * 5 * 2**30}]


def test_untouched_requests_are_not_copied() -> None:
    """The hot path: a pod no rule applies to keeps its requests mapping as it is."""
    requests = {"cpu": 1000}
    assert _rules(_t("nvidia.com/gpu", **{"x": "1"}), prefixes=("example.com/",)).apply(requests) is requests
    assert not QuotaResources()


def test_rules_are_values() -> None:
    """Built twice from one Configuration, the rules are equal and hash alike (SchedulerConfig is a value)."""
    specs = [_t("nvidia.com/gpu", "Replace", "x/y", **{"x__mem": "5Gi"})]
    a, b = _rules(*specs, prefixes=("p/",)), _rules(*specs, prefixes=("p/",))
    assert a == b and hash(a) == hash(b)
    assert a.inputs == ("nvidia.com/gpu",)


def test_transformations_come_before_dra_devices() -> None:
    """Upstream's `totalRequestsFromPodSets` order: exclusions and transformations over what the
    containers ask, then the DeviceClass-backed extended resources out and the devices in."""
    obj = _ps(make_wl("dra"), "main", 2, **{"example.com__gpu": "1", "cpu": "1"}).obj()
    rules = _rules(_t("example.com/gpu", "Retain", **{"example.com__credits": "10"}))
    info = parse_workload(
        obj,
        resources=rules,
        dra_requests={"main": {"gpu.example.com": 1}},
        dra_replaced={"main": frozenset({"example.com/gpu"})},
    )
    assert info.pod_set_requests() == [{"cpu": 2000, "example.com/credits": 20, "gpu.example.com": 2}]
