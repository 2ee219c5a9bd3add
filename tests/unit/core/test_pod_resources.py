"""LimitRange defaults, RuntimeClass overhead and limits-as-requests before queueing, and the
LimitRange bounds (issue 27, finding 8).

The tables mirror upstream's `TestAdjustResources`, `TestValidateLimitRange`
(`pkg/workload/resources_test.go`), `TestSummarize` and `TestValidatePodSpec`
(`pkg/util/limitrange/limitrange_test.go`) at v0.19.2; the last tests drive `AdmissionCore`, so
a Workload with no requests in a defaulting namespace is charged what its pods will request.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import (
    T0,
    fq,
    limit_range,
    make_core,
    make_cq,
    make_flavor,
    make_lq,
    make_wl,
    runtime_class,
)
from webhook.core import pod_resources as pr
from webhook.core.cache import Cache
from webhook.core.decisions import Pending
from webhook.core.pod_resources import LimitRangeItem


def pod_set(name: str, *, containers: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    """A podSet whose one container is `containers[0]` or a bare `c` (upstream `MakePodSet`)."""
    body = {"containers": containers or [{"name": "c"}], **spec}
    return {"name": name, "count": 1, "template": {"spec": body}}


def ctr(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": "c", **({"resources": res} if res else {}), **extra}


def workload(*sets: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "foo", "namespace": "ns"}, "spec": {"podSets": list(sets)}}


def summary_of(*ranges: dict[str, Any]) -> dict[str, LimitRangeItem]:
    return pr.summarize(ranges)


def overheads_of(*classes: dict[str, Any]) -> dict[str, pr.ResourceList]:
    return {c["metadata"]["name"]: pr.runtime_class_overhead(c) for c in classes}


OVERHEAD_1 = {"cpu": "1", "memory": "1Ki"}
OVERHEAD_2 = {"cpu": "2", "memory": "2Ki"}
CPU_RANGE = {"default": {"cpu": "4"}, "defaultRequest": {"cpu": "3"}, "max": {"cpu": "5"}, "min": {"cpu": "2"}}

# (runtime classes, limit ranges, podSets in, podSets out) — upstream's TestAdjustResources.
ADJUST = [
    pytest.param(
        [runtime_class("runtime-a", OVERHEAD_1)],
        [],
        [
            pod_set("a", runtimeClassName="runtime-a"),
            pod_set("b"),
            pod_set("c", runtimeClassName="runtime-a", overhead=OVERHEAD_2),
            pod_set("d", runtimeClassName="runtime-d"),
            pod_set("e", runtimeClassName="runtime-e", overhead=OVERHEAD_2),
        ],
        [
            pod_set("a", runtimeClassName="runtime-a", overhead=OVERHEAD_1),
            pod_set("b"),
            pod_set("c", runtimeClassName="runtime-a", overhead=OVERHEAD_2),
            pod_set("d", runtimeClassName="runtime-d"),
            pod_set("e", runtimeClassName="runtime-e", overhead=OVERHEAD_2),
        ],
        id="Handle runtimeClass with podOverHead",
    ),
    pytest.param(
        [runtime_class("runtime-a")],
        [],
        [
            pod_set("a", runtimeClassName="runtime-a"),
            pod_set("c", runtimeClassName="runtime-a", overhead=OVERHEAD_1),
            pod_set("d", runtimeClassName="runtime-d"),
        ],
        [
            pod_set("a", runtimeClassName="runtime-a"),
            pod_set("c", runtimeClassName="runtime-a", overhead=OVERHEAD_1),
            pod_set("d", runtimeClassName="runtime-d"),
        ],
        id="Handle runtimeClass without podOverHead",
    ),
    pytest.param(
        [],
        [limit_range("foo", "ns", "Container", **CPU_RANGE)],
        [
            pod_set("a", initContainers=[{"name": "i"}]),
            pod_set("b", containers=[ctr(limits={"cpu": "6"})], initContainers=[{"name": "i"}]),
            pod_set("c", containers=[ctr(requests={"cpu": "1"})], initContainers=[{"name": "i"}]),
        ],
        [
            pod_set(
                "a",
                containers=[ctr({"cpu": "3"}, {"cpu": "4"})],
                initContainers=[{"name": "i", "resources": {"limits": {"cpu": "4"}, "requests": {"cpu": "3"}}}],
            ),
            pod_set(
                "b",
                containers=[ctr({"cpu": "3"}, {"cpu": "6"})],
                initContainers=[{"name": "i", "resources": {"limits": {"cpu": "4"}, "requests": {"cpu": "3"}}}],
            ),
            pod_set(
                "c",
                containers=[ctr({"cpu": "1"}, {"cpu": "4"})],
                initContainers=[{"name": "i", "resources": {"limits": {"cpu": "4"}, "requests": {"cpu": "3"}}}],
            ),
        ],
        id="Handle container limit range",
    ),
    pytest.param(
        [],
        [limit_range("foo", "ns", "Pod", **CPU_RANGE)],
        [pod_set("a"), pod_set("b", containers=[ctr({"cpu": "1"}, {"cpu": "6"})])],
        [pod_set("a"), pod_set("b", containers=[ctr({"cpu": "1"}, {"cpu": "6"})])],
        id="Handle pod limit range",
    ),
    pytest.param(
        [],
        [
            limit_range(
                "foo",
                "ns",
                "Pod",
                default={"cpu": "4", "memory": "1Gi"},
                defaultRequest={"cpu": "3", "memory": "512Mi"},
            )
        ],
        [
            pod_set("a", resources={"limits": {"memory": "2Gi"}}),
            pod_set("b", resources={"limits": {"cpu": "6"}, "requests": {"cpu": "1"}}),
        ],
        [
            pod_set(
                "a",
                resources={"limits": {"cpu": "4", "memory": "2Gi"}, "requests": {"cpu": "3", "memory": "512Mi"}},
            ),
            pod_set(
                "b",
                resources={"limits": {"cpu": "6", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "512Mi"}},
            ),
        ],
        id="Handle pod-level resources with pod limit range",
    ),
    pytest.param(
        [],
        [limit_range("foo", "ns", "Container")],
        [pod_set("a"), pod_set("b", containers=[ctr({"cpu": "1"}, {"cpu": "6"})])],
        [pod_set("a"), pod_set("b", containers=[ctr({"cpu": "1"}, {"cpu": "6"})])],
        id="Handle empty container limit range",
    ),
    pytest.param(
        [],
        [],
        [
            pod_set("a", resources={"limits": {"cpu": "1", "memory": "1Gi"}}),
            pod_set("b", resources={"requests": {"cpu": "2"}, "limits": {"cpu": "3", "memory": "1Gi"}}),
        ],
        [
            pod_set(
                "a", resources={"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}
            ),
            pod_set(
                "b", resources={"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "3", "memory": "1Gi"}}
            ),
        ],
        id="Apply pod-level limits to requests",
    ),
    pytest.param(
        [],
        [],
        [
            pod_set(
                "a",
                containers=[ctr(limits={"cpu": "1", "memory": "1Gi"})],
                initContainers=[ctr(limits={"cpu": "1", "memory": "1"})],
            ),
            pod_set(
                "b",
                containers=[ctr({"cpu": "2"}, {"cpu": "3", "memory": "1Gi"})],
                initContainers=[ctr({"cpu": "2"}, {"cpu": "3", "memory": "1"})],
            ),
            pod_set(
                "c",
                containers=[ctr({"memory": "1Gi"}, {"cpu": "1", "memory": "3Gi"})],
                initContainers=[ctr({"memory": "1"}, {"cpu": "1", "memory": "3"})],
            ),
            pod_set("d", containers=[ctr(limits={"cpu": "1"})], initContainers=[ctr(limits={"cpu": "1"})]),
            pod_set("e", containers=[ctr({"memory": "1Gi"})], initContainers=[ctr({"memory": "1"})]),
        ],
        [
            pod_set(
                "a",
                containers=[ctr({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})],
                initContainers=[ctr({"cpu": "1", "memory": "1"}, {"cpu": "1", "memory": "1"})],
            ),
            pod_set(
                "b",
                containers=[ctr({"cpu": "2", "memory": "1Gi"}, {"cpu": "3", "memory": "1Gi"})],
                initContainers=[ctr({"cpu": "2", "memory": "1"}, {"cpu": "3", "memory": "1"})],
            ),
            pod_set(
                "c",
                containers=[ctr({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "3Gi"})],
                initContainers=[ctr({"cpu": "1", "memory": "1"}, {"cpu": "1", "memory": "3"})],
            ),
            pod_set(
                "d", containers=[ctr({"cpu": "1"}, {"cpu": "1"})], initContainers=[ctr({"cpu": "1"}, {"cpu": "1"})]
            ),
            pod_set("e", containers=[ctr({"memory": "1Gi"})], initContainers=[ctr({"memory": "1"})]),
        ],
        id="Apply limits to requests",
    ),
]


@pytest.mark.parametrize(("classes", "ranges", "sets", "want"), ADJUST)
def test_adjust_workload(classes, ranges, sets, want):
    wl = workload(*sets)
    before = copy.deepcopy(wl)
    got = pr.adjust_workload(wl, summary=summary_of(*ranges), overheads=overheads_of(*classes))
    assert got["spec"]["podSets"] == want
    assert wl == before, "the input is never mutated"


def test_adjust_returns_the_same_object_when_nothing_applies():
    wl = workload(pod_set("a", containers=[ctr({"cpu": "1"}, {"cpu": "2"})]), pod_set("b"))
    assert pr.adjust_workload(wl, summary={}, overheads={}) is wl


# -- Summarize ------------------------------------------------------------------------------------
SUMMARIZE = [
    pytest.param([], {}, id="empty"),
    pytest.param(
        [
            limit_range("a", "ns", "Pod", default={"cpu": "2"}, defaultRequest={"cpu": "500m", "memory": "1Gi"}),
            limit_range("b", "ns", "Pod", default={"memory": "2Gi"}, defaultRequest={"cpu": "1"}),
        ],
        {
            "Pod": LimitRangeItem(
                default={"cpu": "2", "memory": "2Gi"}, default_request={"cpu": "500m", "memory": "1Gi"}
            )
        },
        id="podDefaults",
    ),
    pytest.param(
        [
            limit_range(
                "a",
                "ns",
                "Pod",
                max={"cpu": "2"},
                min={"cpu": "500m", "memory": "1Gi"},
                maxLimitRequestRatio={"cpu": "2"},
            ),
            limit_range(
                "b", "ns", "Pod", max={"memory": "2Gi"}, min={"cpu": "1"}, maxLimitRequestRatio={"cpu": "500m"}
            ),
        ],
        {
            "Pod": LimitRangeItem(
                max={"cpu": "2", "memory": "2Gi"},
                min={"cpu": "1", "memory": "1Gi"},
                max_limit_request_ratio={"cpu": "500m"},
            )
        },
        id="limits",
    ),
]


@pytest.mark.parametrize(("ranges", "want"), SUMMARIZE)
def test_summarize(ranges, want):
    assert pr.summarize(ranges) == want


# -- ValidatePodSpec ------------------------------------------------------------------------------
PATH = "spec.podSets[0].template.spec"
POD_SPEC = {
    "containers": [
        ctr({"cpu": "1", "memory": "2Gi", "example.com/mainContainerGpu": "2"}),
        ctr({"cpu": "1.5", "example.com/gpu": "2"}),
    ],
    "initContainers": [
        ctr({"cpu": "4", "memory": "2Gi"}),
        ctr({"cpu": "1.5", "example.com/gpu": "2", "example.com/initContainerGpu": "2"}),
    ],
    "overhead": {"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"},
}
ABOVE = "requests must not be above the limitRange max"
BELOW = "requests must not be below the limitRange min"


def lr(kind: str, **values: dict[str, str]) -> dict[str, Any]:
    return limit_range("", "ns", kind, **values)


VALIDATE = [
    pytest.param([], None, [], id="empty"),
    pytest.param(
        [lr("Container", max={"example.com/initContainerGpu": "1"})],
        None,
        [f'{PATH}.initContainers[1]: Invalid value: ["example.com/initContainerGpu"]: {ABOVE}'],
        id="init container over",
    ),
    pytest.param(
        [lr("Container", min={"example.com/initContainerGpu": "3"})],
        None,
        [f'{PATH}.initContainers[1]: Invalid value: ["example.com/initContainerGpu"]: {BELOW}'],
        id="init container under",
    ),
    pytest.param(
        [lr("Container", max={"example.com/mainContainerGpu": "1"})],
        None,
        [f'{PATH}.containers[0]: Invalid value: ["example.com/mainContainerGpu"]: {ABOVE}'],
        id="container over",
    ),
    pytest.param(
        [lr("Container", min={"example.com/mainContainerGpu": "3"})],
        None,
        [f'{PATH}.containers[0]: Invalid value: ["example.com/mainContainerGpu"]: {BELOW}'],
        id="container under",
    ),
    pytest.param([lr("Pod", max={"cpu": "4"})], None, [f'{PATH}: Invalid value: ["cpu"]: {ABOVE}'], id="pod over"),
    pytest.param([lr("Pod", min={"cpu": "6"})], None, [f'{PATH}: Invalid value: ["cpu"]: {BELOW}'], id="pod under"),
    pytest.param(
        [
            lr("Pod", max={"cpu": "4"}),
            lr("Container", min={"example.com/mainContainerGpu": "3"}),
            lr("Container", max={"example.com/initContainerGpu": "1"}),
        ],
        None,
        [
            f'{PATH}.initContainers[1]: Invalid value: ["example.com/initContainerGpu"]: {ABOVE}',
            f'{PATH}.containers[0]: Invalid value: ["example.com/mainContainerGpu"]: {BELOW}',
            f'{PATH}: Invalid value: ["cpu"]: {ABOVE}',
        ],
        id="multiple",
    ),
    pytest.param(
        [
            lr("Pod", max={"cpu": "5"}),
            lr("Container", min={"example.com/mainContainerGpu": "1"}),
            lr("Container", max={"example.com/initContainerGpu": "2"}),
        ],
        None,
        [],
        id="multiple valid",
    ),
    pytest.param(
        [lr("Container", min={"example.com/mainContainerGpu": "3"})],
        {"containers": [ctr({"example.com/mainContainerGpu": "0"})]},
        [f'{PATH}.containers[0]: Invalid value: ["example.com/mainContainerGpu"]: {BELOW}'],
        id="container under with explicit zero",
    ),
    pytest.param(
        [lr("Pod", min={"cpu": "6"})],
        {"containers": [ctr({"cpu": "0"})]},
        [f'{PATH}: Invalid value: ["cpu"]: {BELOW}'],
        id="pod under with explicit zero",
    ),
]


@pytest.mark.parametrize(("ranges", "spec", "want"), VALIDATE)
def test_validate_pod_spec(ranges, spec, want):
    assert pr.validate_pod_spec(pr.summarize(ranges), spec or POD_SPEC, PATH) == want


# -- ValidateLimitRange ---------------------------------------------------------------------------
SIDECAR = ctr({"cpu": "300m"}, restartPolicy="Always")
LIMIT_RANGE_ERRORS = [
    pytest.param(
        [lr("Pod", max={"cpu": "1000m"})],
        [pod_set("alpha", containers=[ctr({"cpu": "300m"})]), pod_set("beta", containers=[ctr({"cpu": "200m"})])],
        "",
        id="valid case with LimitRange",
    ),
    pytest.param(
        [],
        [pod_set("alpha", containers=[ctr({"cpu": "300m"})]), pod_set("beta", containers=[ctr({"cpu": "200m"})])],
        "",
        id="valid case without LimitRange",
    ),
    pytest.param(
        [lr("Pod", max={"cpu": "500m"})],
        [pod_set("alpha", containers=[ctr({"cpu": "300m"})], initContainers=[SIDECAR])],
        f'{PATH}: Invalid value: ["cpu"]: {ABOVE}',
        id="pod doesn't satisfy LimitRange constraints",
    ),
    pytest.param(
        [lr("Container", max={"cpu": "1"})],
        [pod_set("a", containers=[ctr({"cpu": "2"})]), pod_set("b", containers=[ctr({"cpu": "3"})])],
        f'[{PATH}.containers[0]: Invalid value: ["cpu"]: {ABOVE}, '
        f'spec.podSets[1].template.spec.containers[0]: Invalid value: ["cpu"]: {ABOVE}]',
        id="errors of several podSets are aggregated as Go prints them",
    ),
]


@pytest.mark.parametrize(("ranges", "sets", "want"), LIMIT_RANGE_ERRORS)
def test_limit_range_errors(ranges, sets, want):
    assert pr.limit_range_errors(workload(*sets), pr.summarize(ranges)) == want


def test_runtime_class_names():
    wl = workload(pod_set("a", runtimeClassName="kata"), pod_set("b"), pod_set("c", runtimeClassName="gvisor"))
    assert pr.runtime_class_names(wl) == {"kata", "gvisor"}


def test_the_first_range_by_name_gives_the_default():
    """Upstream keeps the first default its cache lists; ours is the first by name, whatever the event order."""
    cache = Cache()
    cache.set_limit_range("ns", "b", limit_range("b", "ns", defaultRequest={"cpu": "2"}))
    cache.set_limit_range("ns", "a", limit_range("a", "ns", defaultRequest={"cpu": "1"}))
    assert cache.limit_summaries["ns"]["Container"].default_request == {"cpu": "1"}
    cache.set_limit_range("ns", "a", None)
    assert cache.limit_summaries["ns"]["Container"].default_request == {"cpu": "2"}
    cache.set_limit_range("ns", "b", None)
    assert "ns" not in cache.limit_summaries


# -- through the admission core ---------------------------------------------------------------------
QUEUES = [
    make_flavor("default").obj(),
    make_cq("cq").group(fq("default", cpu="3", memory="10Gi")).obj(),
    make_lq("lq", "ns", "cq"),
]


def no_requests(name: str, created: int, **spec: Any) -> dict[str, Any]:
    obj = make_wl(name).created(created).podset("main", 2).obj()
    obj["spec"]["podSets"][0]["template"]["spec"] |= spec
    del obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
    return obj


def admitted_cpu(core: Any) -> dict[str, str]:
    return {
        str(d.key): d.admission["podSetAssignments"][0]["resourceUsage"].get("cpu", "0")
        for d in core.schedule(T0).admitted
    }


def test_default_requests_are_charged_and_the_second_job_waits():
    """Two pods of 1 CPU each by the LimitRange: 2 of the 3 CPUs; the next such Workload must wait."""
    core = make_core(*QUEUES, limit_range("defaults", "ns", defaultRequest={"cpu": "1"}))
    core.on_workload(no_requests("first", 0), T0)
    core.on_workload(no_requests("second", 1), T0)
    assert admitted_cpu(core) == {"ns/first": "2"}
    assert admitted_cpu(core) == {}


def test_without_the_limit_range_nothing_is_charged():
    """What finding 8 was: the same Workloads cost no CPU, so any number of them is admitted."""
    core = make_core(*QUEUES)
    core.on_workload(no_requests("first", 0), T0)
    core.on_workload(no_requests("second", 1), T0)
    assert admitted_cpu(core) == {"ns/first": "0"}
    assert admitted_cpu(core) == {"ns/second": "0"}


def test_runtime_class_overhead_is_charged_per_pod():
    core = make_core(*QUEUES, runtime_class("kata", {"cpu": "500m"}))
    core.on_workload(no_requests("kata", 0, runtimeClassName="kata"), T0)
    assert admitted_cpu(core) == {"ns/kata": "1"}


def test_a_limit_range_change_applies_to_the_next_event_of_a_pending_workload():
    core = make_core(*QUEUES, limit_range("defaults", "ns", max={"cpu": "1"}))
    wl = make_wl("big").request(cpu="2").obj()
    core.on_workload(wl, T0)
    [pending] = [d for d in core.schedule(T0).decisions if isinstance(d, Pending)]
    assert pending.message == (
        "resources didn't satisfy LimitRange constraints: spec.podSets[0].template.spec.containers[0]: "
        'Invalid value: ["cpu"]: requests must not be above the limitRange max'
    )
    core.on_limit_range_deleted("ns", "defaults")
    core.on_workload(wl, T0)  # the worker re-feeds the namespace's pending Workloads
    assert admitted_cpu(core) == {"ns/big": "2"}
