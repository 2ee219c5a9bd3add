"""Admission fair sharing (`webhook/core/admission_fair_sharing.py`), with a fixed clock.

The math cases follow upstream's `pkg/util/admissionfairsharing/admission_fair_sharing_test.go`,
the cycle cases `TestScheduleForAFS` (`pkg/scheduler/scheduler_afs_test.go`) and the ordering
cases `TestCandidatesOrdering` (`pkg/scheduler/preemption/preemption_test.go`), kueue v0.19.2.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core import ordering
from webhook.core.admission_fair_sharing import (
    Settings,
    UsageLedger,
    alpha_rate,
    decayed,
    entry_penalty,
    format_consumed,
    parse_consumed,
    to_nanos,
    usage,
)
from webhook.core.workload import parse_workload

G = 10**9  # one unit, in the ledger's nanos
AFS = Settings(half_life_s=10, sampling_interval_s=1)


# -- math ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("elapsed", "half_life", "want"),
    [
        pytest.param(10, 10, 0.5, id="one half-life"),
        pytest.param(20, 10, 0.75, id="two half-lives"),
        pytest.param(0, 10, 0.0, id="no time elapsed"),
        pytest.param(5, 0, 0.0, id="no half-life"),
    ],
)
def test_alpha_rate(elapsed, half_life, want):
    assert alpha_rate(elapsed, half_life) == pytest.approx(want)


@pytest.mark.parametrize(
    ("consumed", "penalty", "lq_weight", "weights", "want"),
    [
        pytest.param({"gpu-logical": 2 * G}, {}, 1, {}, 2, id="default resource weight"),
        pytest.param({"gpu-logical": 2 * G}, {}, 1, {"gpu-logical": 3.0}, 6, id="explicit resource weight"),
        pytest.param({"cpu": 4 * G, "gpu-logical": 2 * G}, {}, 1, {"gpu-logical": 5.0}, 14, id="mixed resources"),
        pytest.param({"gpu-logical": 10 * G}, {}, 1, {"gpu-logical": 0}, 0, id="weight zero contributes nothing"),
        pytest.param({}, {"gpu-logical": 3 * G}, 1, {}, 3, id="penalty only"),
        pytest.param({"gpu-logical": 2 * G}, {"gpu-logical": G}, 2, {"gpu-logical": 4.0}, 6, id="consumed and penalty"),
        pytest.param({}, {}, 0, {}, math.inf, id="idle zero-weight queue sorts last, not first (0/0)"),
        pytest.param({"cpu": G}, {}, 0, {}, math.inf, id="zero-weight queue sorts last"),
    ],
)
def test_usage(consumed, penalty, lq_weight, weights, want):
    assert usage(consumed, penalty, lq_weight, weights) == want


def test_entry_penalty_is_one_sample_of_the_requests():
    penalty = entry_penalty(
        to_nanos({"cpu": 4000, "gpu-logical": 2}), Settings(half_life_s=600, sampling_interval_s=300)
    )
    alpha = 1 - 0.5**0.5
    assert penalty["cpu"] == pytest.approx(4 * G * alpha, abs=1)
    assert penalty["gpu-logical"] == pytest.approx(2 * G * alpha, abs=1)


def test_decay_converges_to_usage_on_the_half_life_curve():
    """A week-long half-life sampled every 5 minutes: each sample adds less than a milli-CPU, and the
    history still reaches 1 - 0.5^n of the usage after n half-lives, never above it."""
    half_life, step = 168 * 3600.0, 300.0
    consumed: dict[str, int] = {}
    for n, want in ((1, 1.0), (2, 1.5), (3, 1.75)):
        for _ in range(2016):
            consumed = decayed(consumed, {"cpu": 2 * G}, step, half_life)
        assert consumed["cpu"] / G == pytest.approx(want, abs=0.001), n
        assert consumed["cpu"] <= 2 * G


def test_consumed_round_trips_through_status():
    consumed = {"cpu": 3_999_999_999, "memory": 209_715_200 * G, "example.com/gpu": 0}
    text = format_consumed(consumed)
    assert text == {"cpu": "3999999999n", "example.com/gpu": "0", "memory": "209715200"}
    assert parse_consumed(text) == consumed
    assert parse_consumed({"cpu": "31999m", "memory": "bad"}) == {"cpu": 31_999_000_000}


# -- the ledger ----------------------------------------------------------------------------------
def test_ledger_penalty_settles_once_and_rollback_takes_back_only_its_own():
    ledger = UsageLedger()
    ledger.seed("ns/lq", {"consumedResources": {"cpu": "2"}}, T0)
    ledger.push_penalty("ns/lq", "ns/a", {"cpu": G}, T0)
    ledger.push_penalty("ns/lq", "ns/a", {"cpu": G}, T0)  # re-assumed: replaces, no stacking
    ledger.push_penalty("ns/lq", "ns/b", {"cpu": 3 * G}, T0)
    assert ledger.usage("ns/lq", 1, {}) == 6
    assert ledger.sub_penalty("ns/b") == {"cpu": 3 * G}
    assert ledger.sub_penalty("ns/b") == {}
    # Admitted at once: no decay, exactly the recorded penalty joins the history.
    assert ledger.settle("ns/lq", "ns/a", {"cpu": 4 * G}, T0, AFS) == {"cpu": G}
    assert ledger.entries["ns/lq"].consumed == {"cpu": 3 * G}
    assert not ledger.has_pending_penalty("ns/lq")
    assert ledger.settle("ns/lq", "ns/a", {"cpu": 4 * G}, T0, AFS) == {}


def test_ledger_sampling_timer():
    ledger = UsageLedger()
    ledger.seed("ns/lq", None, T0)
    assert ledger.is_due("ns/lq", T0, 1), "sampled at once when first seen"
    ledger.sample("ns/lq", {"cpu": 8 * G}, T0, AFS)
    assert ledger.entries["ns/lq"].consumed == {"cpu": 0}, "the first sample folds no live usage"
    assert not ledger.is_due("ns/lq", T0 + timedelta(milliseconds=999), 1)
    assert ledger.is_due("ns/lq", T0 + timedelta(seconds=1), 1)
    ledger.push_penalty("ns/lq", "ns/wl", {"cpu": G}, T0)
    assert ledger.is_due("ns/lq", T0, 1), "a pending penalty is sampled at once"
    entry = ledger.sample("ns/lq", {"cpu": 8 * G}, T0 + timedelta(seconds=10), AFS)
    assert entry.consumed == {"cpu": 4 * G}
    assert entry.status == ({"cpu": 4 * G}, T0 + timedelta(seconds=10))


def test_ledger_without_half_life_clears_history():
    ledger = UsageLedger()
    ledger.seed("ns/lq", {"consumedResources": {"cpu": "5"}}, T0)
    entry = ledger.sample("ns/lq", {"cpu": 8 * G}, T0, Settings(half_life_s=0, sampling_interval_s=1))
    assert entry.consumed == {}


def test_ledger_merges_persisted_history_into_an_entry_created_first():
    ledger = UsageLedger()
    ledger.push_penalty("ns/lq", "ns/wl", {"cpu": G}, T0)
    ledger.seed("ns/lq", {"consumedResources": {"cpu": "2"}}, T0)
    ledger.seed("ns/lq", {"consumedResources": {"cpu": "2"}}, T0)
    assert ledger.entries["ns/lq"].consumed == {"cpu": 2 * G}


# -- ordering of preemption candidates -----------------------------------------------------------
def _reserved(name: str, cq: str, priority: int) -> Any:
    return parse_workload(make_wl(name).priority(priority).reserve(cq, psa(cpu=("default", "1"))).obj())


@pytest.mark.parametrize(
    ("usages", "want"),
    [
        pytest.param({"low": 0.1, "mid": 0.5}, ["mid", "low"], id="higher LocalQueue usage first"),
        pytest.param({}, ["low", "mid"], id="without admission fair sharing: lower priority first"),
    ],
)
def test_candidate_key_ranks_higher_usage_first(usages, want):
    low, mid = _reserved("low", "preemptor", 1), _reserved("mid", "preemptor", 10)
    got = sorted([low, mid], key=lambda w: ordering.candidate_key(w, "preemptor", T0, lq_usage=usages.get(w.name, 0.0)))
    assert [w.name for w in got] == want


# -- the cycle -----------------------------------------------------------------------------------
def _lq(name: str, *, weight: str | None = "1", consumed: dict[str, str] | None = None) -> dict[str, Any]:
    lq = make_lq(name, "default", "cq1")
    if weight is not None:
        lq["spec"]["fairSharing"] = {"weight": weight}
    if consumed is not None:
        lq["status"] = {
            "fairSharing": {
                "weightedShare": 0,
                "admissionFairSharingStatus": {"consumedResources": consumed, "lastUpdate": "2025-01-01T00:00:00Z"},
            }
        }
    return lq


def _pending(name: str, lq: str, cpu: str, created: float) -> dict[str, Any]:
    return make_wl(name, "default").queue(lq).request(cpu=cpu).created(created).obj()


def _core(
    *objs: dict[str, Any], mode: str | None = "UsageBasedAdmissionFairSharing", afs: Settings | None = AFS
) -> Any:
    cq = make_cq("cq1").group(fq("default", cpu="8", memory="8Gi"))
    if mode is not None:
        cq = cq.admission_mode(mode)
    return make_core(
        make_flavor("default").obj(),
        cq.obj(),
        *objs,
        namespaces={"default": {}},
        admission_fair_sharing=afs,
    )


def _admit_all(core: Any) -> list[str]:
    """Cycles until one admits nothing; the admitted workload names in order."""
    out: list[str] = []
    for _ in range(10):
        admitted = core.schedule(T0).admitted
        if not admitted:
            return out
        out += [d.key.split("/", 1)[1] for d in admitted]
    return out


@pytest.mark.parametrize(
    ("objs", "want"),
    [
        pytest.param(
            [
                _lq("lq-a", consumed={"cpu": "8"}),
                _lq("lq-b", consumed={"cpu": "2"}),
                _pending("wl-a1", "lq-a", "8", 0),
                _pending("wl-b1", "lq-b", "8", 1),
            ],
            ["wl-b1"],
            id="admits workload from less active localqueue",
        ),
        pytest.param(
            [
                _lq("lq-a", consumed={"cpu": "0"}),
                _lq("lq-zero", weight="0", consumed={"cpu": "0"}),
                _pending("wl-z1", "lq-zero", "8", 0),
                _pending("wl-a1", "lq-a", "8", 1),
            ],
            ["wl-a1"],
            id="does not prioritize a zero-weight localqueue",
        ),
        pytest.param(
            [
                _lq("lq-a", consumed={"cpu": "4"}),
                _lq("lq-b", consumed={"cpu": "4"}),
                _pending("wl-a1", "lq-a", "4", 0),
                _pending("wl-a2", "lq-a", "4", 1),
                _pending("wl-b1", "lq-b", "4", 2),
                _pending("wl-b2", "lq-b", "4", 3),
            ],
            ["wl-a1", "wl-b1"],
            id="admits one workload from each localqueue when quota is limited (entry penalty)",
        ),
        pytest.param(
            [
                _lq("lq-a", consumed={"cpu": "2"}),
                _lq("lq-b", consumed={"cpu": "2"}),
                _pending("wl-a1", "lq-a", "8", 0),
                _pending("wl-b1", "lq-b", "8", 1),
            ],
            ["wl-a1"],
            id="schedules normally when queues have equal usage",
        ),
        pytest.param(
            [
                _lq("lq-a", consumed={"cpu": "8"}),
                _lq("lq-b", weight="8", consumed={"cpu": "16"}),
                _pending("wl-a1", "lq-a", "8", 1),
                _pending("wl-b1", "lq-b", "8", 0),
            ],
            ["wl-b1"],
            id="the LocalQueue weight divides its usage",
        ),
    ],
)
def test_lower_usage_local_queue_first(objs, want):
    assert _admit_all(_core(*objs)) == want


@pytest.mark.parametrize(
    ("mode", "afs"),
    [
        pytest.param(None, AFS, id="ClusterQueue without admissionScope"),
        pytest.param("NoAdmissionFairSharing", AFS, id="NoAdmissionFairSharing"),
        pytest.param("UsageBasedAdmissionFairSharing", None, id="gate off or no admissionFairSharing config"),
    ],
)
def test_usage_ignored_unless_enabled_and_opted_in(mode, afs):
    core = _core(
        _lq("lq-a", consumed={"cpu": "8"}),
        _lq("lq-b", consumed={"cpu": "2"}),
        _pending("wl-a1", "lq-a", "8", 0),
        _pending("wl-b1", "lq-b", "8", 1),
        mode=mode,
        afs=afs,
    )
    assert _admit_all(core) == ["wl-a1"]


def _status(core: Any, lq: str) -> Any:
    return core.local_queue_status("default", lq).get("fairSharing")


def test_local_queue_status_samples_admitted_usage():
    core = _core(
        _lq("lq-a"),
        make_wl("running", "default").queue("lq-a").request(cpu="4").reserve("cq1", psa(cpu=("default", "4"))).obj(),
    )
    assert _status(core, "lq-a") is None, "nothing written before the first sample"
    assert core.sample_admission_fair_sharing(T0) == ["default/lq-a"]
    assert _status(core, "lq-a") == {
        "weightedShare": 0,
        "admissionFairSharingStatus": {"consumedResources": {"cpu": "0"}, "lastUpdate": "2025-01-01T00:00:00Z"},
    }
    assert core.sample_admission_fair_sharing(T0 + timedelta(milliseconds=500)) == [], "within the interval"
    assert core.sample_admission_fair_sharing(T0 + timedelta(seconds=10)) == ["default/lq-a"]
    assert _status(core, "lq-a")["admissionFairSharingStatus"] == {
        "consumedResources": {"cpu": "2"},  # half of the 4 admitted CPUs after one half-life
        "lastUpdate": "2025-01-01T00:00:10Z",
    }


def test_stopped_local_queue_is_not_sampled():
    lq = _lq("lq-a")
    lq["spec"]["stopPolicy"] = "Hold"
    core = _core(lq)
    assert core.sample_admission_fair_sharing(T0) == []


def test_admission_settles_the_entry_penalty_and_a_failed_write_rolls_it_back():
    wl = _pending("wl-a1", "lq-a", "4", 0)
    core = _core(_lq("lq-a"), _lq("lq-b"), wl)
    assert _admit_all(core) == ["wl-a1"]
    alpha = alpha_rate(1, 10)
    assert core.afs.usage("default/lq-a") == pytest.approx(4 * alpha)
    core.admission_failed("default/wl-a1", T0)
    assert core.afs.usage("default/lq-a") == 0

    assert _admit_all(core) == ["wl-a1"]
    admitted = make_wl("wl-a1", "default").queue("lq-a").request(cpu="4").created(0)
    core.on_workload(admitted.reserve("cq1", psa(cpu=("default", "4"))).obj(), T0)
    entry = core.afs.ledger.entries["default/lq-a"]
    assert not entry.penalties, "settled"
    assert entry.consumed["cpu"] == pytest.approx(4 * G * alpha, abs=1)


def test_penalty_of_a_deleted_workload_is_dropped():
    core = _core(_lq("lq-a"), _pending("wl-a1", "lq-a", "4", 0))
    assert _admit_all(core) == ["wl-a1"]
    core.on_workload_deleted("default", "wl-a1", T0)
    assert core.afs.usage("default/lq-a") == 0


def test_preemption_within_cluster_queue_takes_from_the_busiest_local_queue():
    cq = make_cq("cq1").group(fq("default", cpu="8")).admission_mode().preemption(within="LowerPriority").obj()
    running = [
        make_wl(name, "default").queue(lq).request(cpu="4").reserve("cq1", psa(cpu=("default", "4"))).obj()
        for name, lq in (("on-a", "lq-a"), ("on-b", "lq-b"))
    ]
    core = make_core(
        make_flavor("default").obj(),
        cq,
        _lq("lq-a", consumed={"cpu": "1"}),
        _lq("lq-b", consumed={"cpu": "6"}),
        _lq("lq-c"),
        *running,
        make_wl("preemptor", "default").queue("lq-c").request(cpu="4").priority(10).obj(),
        namespaces={"default": {}},
        admission_fair_sharing=AFS,
    )
    result = core.schedule(T0)
    assert [v.key for p in result.preempted for v in p.targets] == ["default/on-b"]
