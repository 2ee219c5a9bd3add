"""ConcurrentAdmission in the core: parents and variants read from Workload JSON
(`pkg/workload/concurrentadmission/concurrentadmission_test.go` has no cases; these pin the rules),
and what the cache and the queue manager do with a parent (`cache.go` `AddOrUpdateWorkload`,
`manager.go` `AddOrUpdateWorkload`, `cluster_queue.go` `PushOrUpdate`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core import concurrent_admission as ca
from webhook.core.workload import WorkloadKey, parse_workload

GATE = "kueue.x-k8s.io/concurrent-admission"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("  ", [], id="blank"),
        pytest.param("spot", ["spot"], id="one"),
        pytest.param(" reservation , spot", ["reservation", "spot"], id="spaces trimmed"),
    ],
)
def test_parse_csv(text: str, want: list[str]) -> None:
    assert ca.parse_csv(text) == want


def test_parent_and_variant() -> None:
    parent = make_wl("wl").label("kueue.x-k8s.io/concurrent-admission-parent", "true").obj()
    variant = make_wl("v").variant_of("wl", "uid-wl", "spot", "on-demand").obj()
    job_owned = make_wl("j").owner("Job", "job", "uid-job", api_version="batch/v1").obj()
    assert (ca.is_parent(parent), ca.is_variant(parent)) == (True, False)
    assert (ca.is_parent(variant), ca.is_variant(variant), ca.parent_name(variant), ca.parent_uid(variant)) == (
        False,
        True,
        "wl",
        "uid-wl",
    )
    assert (ca.variant_flavor(variant), ca.allowed_flavors(variant)) == ("spot", ("spot", "on-demand"))
    assert (ca.is_variant(job_owned), ca.allowed_flavors(job_owned), ca.variant_flavor(job_owned)) == (False, None, "")


@pytest.mark.parametrize(
    ("spec_gates", "states", "closed"),
    [
        pytest.param([], [], False, id="no gates"),
        pytest.param([GATE], [], True, id="gate without a state is closed"),
        pytest.param([GATE], [("Closed", GATE)], True, id="closed"),
        pytest.param([GATE], [("Open", GATE)], False, id="open"),
        pytest.param([GATE, "other"], [("Open", GATE)], True, id="another gate still closed"),
        pytest.param([], [("Closed", GATE)], False, id="state of a gate not in spec is ignored"),
    ],
)
def test_has_closed_preemption_gate(spec_gates: list[str], states: list[tuple[str, str]], closed: bool) -> None:
    wl = make_wl("v").obj()
    wl["spec"]["preemptionGates"] = [{"name": n} for n in spec_gates]
    wl["status"]["preemptionGates"] = [
        {"name": n, "position": p, "lastTransitionTime": "2025-01-01T00:00:00Z"} for p, n in states
    ]
    assert ca.has_closed_preemption_gate(wl) is closed
    assert parse_workload(wl).closed_preemption_gate is closed


def _objs(policy: bool) -> list[dict[str, Any]]:
    cq = make_cq("cq").group(fq("on-demand", cpu="10"), fq("spot", cpu="10"))
    if policy:
        cq.concurrent_admission()
    return [make_flavor("on-demand").obj(), make_flavor("spot").obj(), cq.obj(), make_lq("lq", "ns", "cq")]


def _parent(admitted: bool = False) -> dict[str, Any]:
    b = make_wl("parent").queue("lq").request(cpu="4").label("kueue.x-k8s.io/concurrent-admission-parent", "true")
    if admitted:
        b.reserve("cq", psa(cpu=("spot", "4")))
    return b.obj()


@pytest.mark.parametrize(
    ("gate", "policy", "queued"),
    [
        pytest.param(True, True, ["ns/v-on-demand", "ns/v-spot"], id="parent not queued, its variants are"),
        pytest.param(
            True,
            False,
            ["ns/parent", "ns/v-on-demand", "ns/v-spot"],
            id="no policy: the parent is an ordinary workload",
        ),
        pytest.param(False, True, ["ns/parent", "ns/v-on-demand", "ns/v-spot"], id="gate off: the policy is ignored"),
    ],
)
def test_parent_is_not_queued(gate: bool, policy: bool, queued: list[str]) -> None:
    variants = [
        make_wl(f"v-{f}").queue("lq").request(cpu="4").variant_of("parent", "uid-parent", f).obj()
        for f in ("on-demand", "spot")
    ]
    core = make_core(*_objs(policy), _parent(), *variants, concurrent_admission=gate)
    assert core.queues.dump() == {"cq": queued}
    assert core.queues.pending_in_local_queue("ns/lq") == len(queued)


@pytest.mark.parametrize("queue_first", [True, False], ids=["queue first", "workload first"])
def test_parent_holds_no_quota(queue_first: bool) -> None:
    """The parent carries its variant's admission; only the variant counts, whichever arrives first."""
    variant = (
        make_wl("v-spot")
        .queue("lq")
        .request(cpu="4")
        .variant_of("parent", "uid-parent", "spot")
        .reserve("cq", psa(cpu=("spot", "4")))
        .obj()
    )
    wls = [_parent(admitted=True), variant]
    objs = [*_objs(True), *wls] if queue_first else [*wls, *_objs(True)]
    core = make_core(*objs, concurrent_admission=True)
    assert sorted(core.cache.reserving) == [WorkloadKey("ns/v-spot")]
    assert sum(core.cache.cq_usage("cq").values()) == 4000
    assert not core.schedule(T0).decisions


def test_migration_across_cycles() -> None:
    """Upstream's integration scenario "should migrate to the preferred flavor when it becomes
    available", as the core sees it: spot first, the eviction of the spot variant once the preferred
    flavor has quota, and the preferred variant admitted only once spot gave its quota back."""

    def cq(preferred_cpu: str) -> dict[str, Any]:
        return (
            make_cq("cq").group(fq("reservation", cpu=preferred_cpu), fq("spot", cpu="5")).concurrent_admission().obj()
        )

    def v(flavor: str) -> Any:
        return (
            make_wl(f"v-{flavor}")
            .uid(f"uid-{flavor}")
            .queue("lq")
            .request(cpu="1")
            .variant_of("parent", "uid-parent", flavor)
        )

    core = make_core(
        make_flavor("reservation").obj(),
        make_flavor("spot").obj(),
        cq("0"),
        make_lq("lq", "ns", "cq"),
        _parent(),
        v("reservation").obj(),
        v("spot").obj(),
        concurrent_admission=True,
    )
    decisions = core.schedule(T0).decisions + core.schedule(T0).decisions
    assert [(type(d).__name__, str(d.key)) for d in decisions if type(d).__name__ == "Admit"] == [
        ("Admit", "ns/v-spot")
    ]
    spot = v("spot").reserve("cq", psa(cpu=("spot", "1")))
    core.on_workload(spot.obj(), T0)
    core.on_cluster_queue(cq("5"), T0)
    result = core.schedule(T0)
    assert [(str(d.key), d.reason) for d in result.migrated] == [("ns/v-spot", "FlavorMigration")]
    assert not result.admitted
    core.on_workload(spot.evicted("FlavorMigration").obj(), T0)
    result = core.schedule(T0)
    assert not result.migrated and not result.admitted  # the spot variant still holds its admission
    core.on_workload(v("spot").condition("Evicted", "True", "FlavorMigration").obj(), T0)  # admission cleared
    assert [str(d.key) for d in core.schedule(T0).admitted] == ["ns/v-reservation"]


@pytest.mark.parametrize(
    ("position", "preempts"),
    [
        pytest.param(None, False, id="closed gate: blocked, no preemption"),
        pytest.param("Open", True, id="open gate: preempts"),
    ],
)
def test_preemption_gate(position: str | None, preempts: bool) -> None:
    """A variant that needs preemption waits behind its closed gate (`markPreemptionGated`)."""
    low = make_wl("low").queue("lq").priority(0).request(cpu="10").reserve("cq", psa(cpu=("spot", "10"))).obj()
    high = make_wl("v-spot").queue("lq").priority(10).request(cpu="10").variant_of("parent", "uid-parent", "spot").obj()
    high["spec"]["preemptionGates"] = [{"name": GATE}]
    if position is not None:
        high["status"]["preemptionGates"] = [
            {"name": GATE, "position": position, "lastTransitionTime": "2025-01-01T00:00:00Z"}
        ]
    cq = make_cq("cq").group(fq("spot", cpu="10")).preemption(within="LowerPriority").obj()
    result = make_core(
        make_flavor("spot").obj(), cq, make_lq("lq", "ns", "cq"), low, high, concurrent_admission=True
    ).schedule(T0)
    assert bool(result.preempted) is preempts
    (pending,) = result.pending
    if preempts:
        assert pending.reason == "WaitingForPreemptedWorkloads"
        return
    assert (pending.reason, pending.message) == ("AdmissionGated", "Workload requires preemption, but it's gated")
    blocked = [cv for cv in pending.conditions if cv.type == "BlockedOnPreemptionGates"]
    assert [(cv.status, cv.reason, cv.message) for cv in blocked] == [
        ("True", "PreemptionGated", "Workload requires preemption, but it's gated")
    ]


def test_opening_the_gate_requeues_the_parked_variant() -> None:
    """A gated variant is parked; the status change that opens its gate puts it back in the heap
    (`PushOrUpdate` compares `HasClosedPreemptionGate`)."""
    low = make_wl("low").queue("lq").priority(0).request(cpu="10").reserve("cq", psa(cpu=("spot", "10"))).obj()
    high = make_wl("v-spot").queue("lq").priority(10).request(cpu="10").variant_of("parent", "uid-parent", "spot").obj()
    high["spec"]["preemptionGates"] = [{"name": GATE}]
    cq = make_cq("cq").group(fq("spot", cpu="10")).preemption(within="LowerPriority").obj()
    core = make_core(make_flavor("spot").obj(), cq, make_lq("lq", "ns", "cq"), low, concurrent_admission=True)
    core.schedule(T0)
    core.on_workload(high, T0)
    core.schedule(T0)
    assert core.queues.dump_inadmissible() == {"cq": ["ns/v-spot"]}
    high["status"]["preemptionGates"] = [
        {"name": GATE, "position": "Open", "lastTransitionTime": "2025-01-01T00:00:00Z"}
    ]
    core.on_workload(high, T0)
    assert core.queues.dump() == {"cq": ["ns/v-spot"]}
    assert core.schedule(T0).preempted
