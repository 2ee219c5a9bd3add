"""Flavor assignment, borrowing and lending scenarios (after upstream flavorassigner_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_cohort, make_core, make_cq, make_flavor, make_lq, make_topology, make_wl
from webhook.api import selector
from webhook.core import Admit, Pending

LQ = make_lq("lq", "ns", "cq")


def decide(*objs: dict[str, Any]) -> Admit | Pending:
    """The first decision about workload ns/wl (other workloads may be decided first)."""
    core = make_core(*objs)
    for _ in range(5):
        for x in core.schedule(T0).decisions:
            if isinstance(x, Admit | Pending) and x.key == "ns/wl":
                return x
    raise AssertionError("no decision for ns/wl")


def flavors_of(d: Admit | Pending) -> list[dict[str, str]]:
    assert isinstance(d, Admit), d
    return [p["flavors"] for p in d.admission["podSetAssignments"]]


ONE, TWO = make_flavor("one").obj(), make_flavor("two").obj()


@pytest.mark.parametrize(
    ("objs", "want"),
    [
        pytest.param(
            [ONE, make_cq("cq").group(fq("one", cpu="4")).obj(), make_wl("wl").request(cpu="3").obj()],
            [{"cpu": "one"}],
            id="single flavor fits",
        ),
        pytest.param(
            [
                ONE,
                TWO,
                make_cq("cq").group(fq("one", cpu="2"), fq("two", cpu="4")).obj(),
                make_wl("wl").request(cpu="3").obj(),
            ],
            [{"cpu": "two"}],
            id="second flavor fits",
        ),
        pytest.param(
            [
                ONE,
                TWO,
                make_cq("cq").group(fq("one", cpu="4", memory="1Gi"), fq("two", cpu="4", memory="8Gi")).obj(),
                make_wl("wl").request(cpu="3", memory="2Gi").obj(),
            ],
            [{"cpu": "two", "memory": "two"}],
            id="resources of one group share a flavor",
        ),
        pytest.param(
            [
                ONE,
                TWO,
                make_cq("cq").group(fq("one", cpu="4")).group(fq("two", gpu="2")).obj(),
                make_wl("wl").request(cpu="3", gpu="1").obj(),
            ],
            [{"cpu": "one", "nvidia.com/gpu": "two"}],
            id="two resource groups",
        ),
        pytest.param(
            [
                make_flavor("one").taint("spot", "true").obj(),
                TWO,
                make_cq("cq").group(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
                make_wl("wl").request(cpu="1").obj(),
            ],
            [{"cpu": "two"}],
            id="skips untolerated taint",
        ),
        pytest.param(
            [
                make_flavor("one").taint("spot", "true").obj(),
                TWO,
                make_cq("cq").group(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
                make_wl("wl").request(cpu="1").toleration("spot", "true").obj(),
            ],
            [{"cpu": "one"}],
            id="tolerated taint",
        ),
        pytest.param(
            [
                make_flavor("one").taint("spot", "true").toleration("spot", "true").obj(),
                make_cq("cq").group(fq("one", cpu="4")).obj(),
                make_wl("wl").request(cpu="1").obj(),
            ],
            [{"cpu": "one"}],
            id="flavor tolerations tolerate its own taints",
        ),
        pytest.param(
            [
                make_flavor("one").label("arch", "arm").obj(),
                make_flavor("two").label("arch", "x86").obj(),
                make_cq("cq").group(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
                make_wl("wl").request(cpu="1").node_selector(arch="x86").obj(),
            ],
            [{"cpu": "two"}],
            id="nodeSelector picks flavor",
        ),
        pytest.param(
            [
                make_flavor("one").label("arch", "arm").obj(),
                make_cq("cq").group(fq("one", cpu="4")).obj(),
                make_wl("wl").request(cpu="1").node_selector(zone="a").obj(),
            ],
            [{"cpu": "one"}],
            id="selector keys unknown to the flavor are ignored",
        ),
        pytest.param(
            [
                make_flavor("one").label("arch", "arm").obj(),
                make_flavor("two").label("arch", "x86").obj(),
                make_cq("cq").group(fq("one", cpu="4"), fq("two", cpu="4")).obj(),
                make_wl("wl")
                .request(cpu="1")
                .affinity([{"key": "arch", "operator": "NotIn", "values": ["arm"]}])
                .obj(),
            ],
            [{"cpu": "two"}],
            id="required affinity picks flavor",
        ),
        pytest.param(
            [
                ONE,
                make_cq("cq").group(fq("one", cpu="4", pods="2")).obj(),
                make_wl("wl").podset("main", 2, cpu="1").obj(),
            ],
            [{"cpu": "one", "pods": "one"}],
            id="pods resource counted",
        ),
        pytest.param(
            [
                ONE,
                make_cq("cq").group(fq("one", cpu="4")).obj(),
                make_wl("wl").podset("a", 1, cpu="2").podset("b", 1, cpu="2").obj(),
            ],
            [{"cpu": "one"}, {"cpu": "one"}],
            id="several podsets fill a flavor exactly",
        ),
        pytest.param(
            [
                ONE,
                TWO,
                make_cq("cq").group(fq("one", cpu="3"), fq("two", cpu="4")).obj(),
                make_wl("wl").podset("a", 1, cpu="2").podset("b", 1, cpu="2").obj(),
            ],
            [{"cpu": "one"}, {"cpu": "two"}],
            id="later podset moves to the next flavor",
        ),
    ],
)
def test_assigns_flavors(objs: list[dict[str, Any]], want: list[dict[str, str]]) -> None:
    assert flavors_of(decide(*objs, LQ)) == want


@pytest.mark.parametrize(
    ("objs", "reason", "message"),
    [
        pytest.param(
            [ONE, make_cq("cq").group(fq("one", cpu="5")).obj(), make_wl("wl").request(cpu="10").obj()],
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (10) > maximum capacity (5)",
            id="exceeds max quota",
        ),
        pytest.param(
            [
                ONE,
                make_cq("cq").group(fq("one", cpu="4")).obj(),
                make_wl("wl").podset("a", 1, cpu="3").podset("b", 1, cpu="2").obj(),
            ],
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set b: insufficient quota for cpu in flavor one, previously considered podsets requests (3) + current podset request (2) > maximum capacity (4)",
            id="previous podsets counted",
        ),
        pytest.param(
            [
                make_flavor("one").taint("key", "val").obj(),
                make_flavor("two").obj(),
                make_cq("cq").group(fq("one", cpu="5"), fq("two", cpu="5")).obj(),
                make_wl("wl").request(cpu="10").obj(),
            ],
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (10) > maximum capacity (5), untolerated taint {key val NoSchedule <nil>} in flavor one",
            id="reasons of every flavor, sorted",
        ),
        pytest.param(
            [
                make_flavor("one").label("arch", "arm").obj(),
                make_cq("cq").group(fq("one", cpu="4")).obj(),
                make_wl("wl").request(cpu="1").node_selector(arch="x86").obj(),
            ],
            "NoMatchingFlavor",
            "couldn't assign flavors to pod set main: flavor one doesn't match node affinity",
            id="affinity mismatch",
        ),
        pytest.param(
            [ONE, make_cq("cq").group(fq("one", cpu="4")).obj(), make_wl("wl").request(cpu="1", gpu="1").obj()],
            "NoMatchingFlavor",
            "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue",
            id="undeclared resource",
        ),
        pytest.param(
            [
                ONE,
                make_cq("cq").group(fq("one", memory="1Gi")).obj(),
                make_wl("first").request(memory="512Mi").obj(),
                make_wl("wl").created(5).request(memory="1Gi").obj(),
            ],
            "WaitingForQuota",
            "couldn't assign flavors to pod set main: insufficient unused quota for memory in flavor one, 512Mi more needed",
            id="unused quota message formats memory",
        ),
    ],
)
def test_pending_reason_and_message(objs: list[dict[str, Any]], reason: str, message: str) -> None:
    d = decide(*objs, LQ)
    assert isinstance(d, Pending)
    assert (d.reason, d.message) == (reason, message)


def second_gpu_workload_decision(**config: Any) -> Pending:
    """The decision on a 3-GPU Workload queued behind another in a 4-GPU ClusterQueue."""
    core = make_core(
        make_flavor("gpu-nodes").obj(),
        make_cq("cq").group(fq("gpu-nodes", gpu="4")).obj(),
        LQ,
        make_wl("first").request(gpu="3").obj(),
        make_wl("wl").created(1).request(gpu="3").obj(),
        **config,
    )
    core.schedule(T0)
    (d,) = core.schedule(T0).decisions
    assert isinstance(d, Pending)
    return d


@pytest.mark.parametrize(("granular", "shown"), [(False, "Pending"), (True, "WaitingForQuota")])
def test_the_condition_shows_the_granular_reason_only_with_its_gate(granular: bool, shown: str) -> None:
    """UnadmittedWorkloadsObservability (off in v0.19.2): QuotaReserved=False says `Pending` unless
    it is on (`UnadmittedWorkloadReasonWithFallback`); the decision keeps the granular reason for metrics."""
    d = second_gpu_workload_decision(granular_pending_reasons=granular)
    assert d.reason == "WaitingForQuota"
    assert (d.conditions[0].type, d.conditions[0].status, d.conditions[0].reason) == ("QuotaReserved", "False", shown)


def test_waiting_for_quota_gpu_message() -> None:
    d = second_gpu_workload_decision()
    assert d.reason == "WaitingForQuota"
    assert (
        d.message
        == "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor gpu-nodes, 2 more needed"
    )


def cohort_pair(a: dict[str, Any], b: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [ONE, make_cq("cq").cohort("co").group(a).obj(), make_cq("other").cohort("co").group(b).obj(), *extra, LQ]


@pytest.mark.parametrize(
    ("objs", "admitted"),
    [
        pytest.param(
            cohort_pair(fq("one", cpu="2"), fq("one", cpu="4"), make_wl("wl").request(cpu="5").obj()),
            True,
            id="borrows within cohort",
        ),
        pytest.param(
            cohort_pair(fq("one", cpu=("2", "2", None)), fq("one", cpu="4"), make_wl("wl").request(cpu="5").obj()),
            False,
            id="borrowingLimit caps borrowing",
        ),
        pytest.param(
            cohort_pair(fq("one", cpu=("2", "3", None)), fq("one", cpu="4"), make_wl("wl").request(cpu="5").obj()),
            True,
            id="borrowingLimit allows",
        ),
        pytest.param(
            cohort_pair(fq("one", cpu="2"), fq("one", cpu=("4", None, "1")), make_wl("wl").request(cpu="4").obj()),
            False,
            id="lendingLimit caps lending",
        ),
        pytest.param(
            cohort_pair(fq("one", cpu="2"), fq("one", cpu=("4", None, "2")), make_wl("wl").request(cpu="4").obj()),
            True,
            id="lendingLimit allows",
        ),
        pytest.param(
            [
                *cohort_pair(fq("one", cpu="2"), fq("one", cpu="0")),
                make_cohort("co").group(fq("one", cpu="3")).obj(),
                make_wl("wl").request(cpu="5").obj(),
            ],
            True,
            id="cohort's own quota is shared",
        ),
        pytest.param(
            [
                *cohort_pair(fq("one", cpu="2"), fq("one", cpu="0")),
                make_cohort("co").parent("root").group(fq("one", cpu=("1", "1", None))).obj(),
                make_cohort("root").group(fq("one", cpu="10")).obj(),
                make_wl("wl").request(cpu="4").obj(),
            ],
            True,
            id="nested cohort borrows from parent up to its limit",
        ),
        pytest.param(
            [
                *cohort_pair(fq("one", cpu="2"), fq("one", cpu="0")),
                make_cohort("co").parent("root").group(fq("one", cpu=("1", "1", None))).obj(),
                make_cohort("root").group(fq("one", cpu="10")).obj(),
                make_wl("wl").request(cpu="5").obj(),
            ],
            False,
            id="nested cohort borrowingLimit caps",
        ),
    ],
)
def test_borrowing_and_lending(objs: list[dict[str, Any]], admitted: bool) -> None:
    assert isinstance(decide(*objs), Admit) == admitted


def test_borrowing_limit_message() -> None:
    d = decide(*cohort_pair(fq("one", cpu=("2", "1", None)), fq("one", cpu="4"), make_wl("wl").request(cpu="4").obj()))
    assert isinstance(d, Pending)
    assert d.message.endswith("current podset request (4) > maximum capacity (3)")


def test_when_can_borrow_try_next_flavor() -> None:
    objs = [
        ONE,
        TWO,
        make_cq("cq")
        .cohort("co")
        .group(fq("one", cpu="1"), fq("two", cpu="4"))
        .fungibility(when_can_borrow="TryNextFlavor")
        .obj(),
        make_cq("other").cohort("co").group(fq("one", cpu="4"), fq("two", cpu="0")).obj(),
        LQ,
        make_wl("wl").request(cpu="2").obj(),
    ]
    assert flavors_of(decide(*objs)) == [{"cpu": "two"}]
    objs[2] = make_cq("cq").cohort("co").group(fq("one", cpu="1"), fq("two", cpu="4")).obj()
    assert flavors_of(decide(*objs)) == [{"cpu": "one"}]


def test_partial_admission_reduces_count() -> None:
    d = decide(
        ONE,
        make_cq("cq").group(fq("one", cpu="3")).obj(),
        LQ,
        make_wl("wl").podset("main", 5, min_count=2, cpu="1").obj(),
    )
    assert isinstance(d, Admit)
    assert d.admission["podSetAssignments"] == [
        {"name": "main", "flavors": {"cpu": "one"}, "resourceUsage": {"cpu": "3"}, "count": 3}
    ]


def test_several_admissions_per_cycle_never_overcommit() -> None:
    core = make_core(
        ONE,
        make_cq("a").cohort("co").group(fq("one", cpu="2")).obj(),
        make_cq("b").cohort("co").group(fq("one", cpu="2")).obj(),
        make_cq("c").cohort("co").group(fq("one", cpu="2")).obj(),
        *(make_lq(f"lq-{n}", "ns", n) for n in "abc"),
        *(make_wl(f"w{n}").queue(f"lq-{n}").request(cpu="3").obj() for n in "abc"),
    )
    r = core.schedule(T0)
    assert len(r.admitted) == 2
    (p,) = r.pending
    assert p.message == "Workload no longer fits after processing another workload"
    assert p.reason == "WaitingForQuota"


def test_admission_json_formats_quantities() -> None:
    d = decide(
        ONE,
        make_cq("cq").group(fq("one", cpu="4", memory="4Gi")).obj(),
        LQ,
        make_wl("wl").podset("main", 3, cpu="500m", memory="512Mi").obj(),
    )
    assert isinstance(d, Admit)
    assert d.admission == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"cpu": "one", "memory": "one"},
                "resourceUsage": {"cpu": "1500m", "memory": "1536Mi"},
                "count": 3,
            }
        ],
    }


@pytest.mark.parametrize(
    ("sel", "labels"),
    [
        pytest.param({}, {"a": "1"}, id="empty"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "1"}, id="matchLabels hit"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "2"}, id="matchLabels miss"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {"a": "1"}, id="In"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, id="NotIn missing key"
        ),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, id="DoesNotExist"),
    ],
)
def test_parsed_selector_matches_like_wire_form(sel, labels) -> None:
    parsed = selector.parse_label_selector(sel)
    assert parsed is not None
    assert parsed.matches(labels) is selector.matches(sel, labels)


# --- topology-aware scheduling (not implemented: matched, never placed) ----------------------------------

RACK = "cloud.com/rack"
TOPOLOGY = make_topology("default", RACK)


@pytest.mark.parametrize(
    ("objs", "message"),
    [
        pytest.param(
            [ONE, make_cq("cq").group(fq("one", cpu="4")).obj(), make_wl("wl").request(cpu="1").topology(required=RACK).obj()],
            'couldn\'t assign flavors to pod set main: Flavor "one" does not support TopologyAwareScheduling',
            id="required topology, no topology flavor (upstream's message)",
        ),
        pytest.param(
            [ONE, make_cq("cq").group(fq("one", cpu="4")).obj(), make_wl("wl").request(cpu="1").topology(preferred=RACK).obj()],
            'couldn\'t assign flavors to pod set main: Flavor "one" does not support TopologyAwareScheduling',
            id="preferred topology, no topology flavor",
        ),
        pytest.param(
            [
                TOPOLOGY,
                ONE,
                make_flavor("tas").topology("default").obj(),
                make_cq("cq").group(fq("tas", cpu="4"), fq("one", cpu="1")).obj(),
                make_wl("wl").request(cpu="2").obj(),
            ],
            "couldn't assign flavors to pod set main: Flavor \"tas\" supports only TopologyAwareScheduling, "
            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset "
            "request (2) > maximum capacity (1)",
            id="plain podSet skips a topology flavor (upstream's message)",
        ),
    ],
)  # fmt: skip
def test_topology_requests_stay_pending(objs: list[dict[str, Any]], message: str) -> None:
    d = decide(*objs, LQ)
    assert isinstance(d, Pending)
    assert d.message == message


def test_plain_podset_uses_the_plain_flavor_beside_a_topology_flavor() -> None:
    d = decide(
        TOPOLOGY,
        ONE,
        make_flavor("tas").topology("default").obj(),
        make_cq("cq").group(fq("tas", cpu="4"), fq("one", cpu="4")).obj(),
        make_wl("wl").request(cpu="2").obj(),
        LQ,
    )
    assert flavors_of(d) == [{"cpu": "one"}]


def test_without_the_gate_topology_is_ignored() -> None:
    core = make_core(
        ONE,
        make_cq("cq").group(fq("one", cpu="4")).obj(),
        LQ,
        make_wl("wl").request(cpu="1").topology(required=RACK).obj(),
        tas=False,
    )
    (d,) = core.schedule(T0).decisions
    assert flavors_of(d) == [{"cpu": "one"}]
