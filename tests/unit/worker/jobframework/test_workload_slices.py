"""Which slice an elastic Job's reconcile works on, ported from upstream v0.19.2
`pkg/workloadslicing/workloadslicing_test.go` (TestEnabled, TestScaledDown, TestFindNotFinishedWorkloads,
TestEnsureWorkloadSlices, TestNormalizeActiveSlices, TestFindLatestActiveWorkload). Case ids are
upstream's names. Upstream's cases that fail only on the fake client (a failed List, Update or status
Patch) have no pure counterpart; where upstream's fake client fails a status patch it cannot apply,
the port checks the finish that would be written instead.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api import constants as c
from webhook.worker.jobframework import workload_slices as ws

REPLACES = c.WORKLOAD_SLICE_REPLACEMENT_FOR


def ps(name: str = "main", count: int = 1) -> dict[str, Any]:
    return {"name": name, "count": count, "template": {"spec": {"containers": [{"name": "c"}]}}}


def wl(
    name: str,
    *pod_sets: dict[str, Any],
    created: int = 0,
    uid: str = "",
    reserved: bool = False,
    evicted: bool = False,
    finished: bool = False,
    replaces: str | None = None,
) -> dict[str, Any]:
    conditions = []
    if reserved:
        conditions.append({"type": "QuotaReserved", "status": "True"})
    if evicted:
        conditions.append({"type": "Evicted", "status": "True"})
    if finished:
        conditions.append({"type": "Finished", "status": "True"})
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": uid or f"uid-{name}",
        "creationTimestamp": f"2025-01-01T00:00:{created:02d}Z",
    }
    if replaces is not None:
        meta["annotations"] = {REPLACES: replaces}
    return {"metadata": meta, "spec": {"podSets": list(pod_sets or [ps()])}, "status": {"conditions": conditions}}


@pytest.mark.parametrize(
    ("annotations", "gate", "want"),
    [
        pytest.param(None, True, False, id="NilAnnotation"),
        pytest.param({}, True, False, id="EmptyAnnotation"),
        pytest.param({c.ELASTIC_JOB: "true"}, True, True, id="Enabled"),
        pytest.param({c.ELASTIC_JOB: "false"}, True, False, id="NotEnabled"),
        pytest.param({c.ELASTIC_JOB: "true"}, False, False, id="FeatureDisabled"),
    ],
)
def test_enabled(annotations: dict[str, str] | None, gate: bool, want: bool) -> None:
    assert ws.is_elastic({"metadata": {"annotations": annotations}}, enabled=gate) is want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param({}, {}, False, id="EmptyCounts"),
        pytest.param({"foo": 3, "bar": 5}, {"foo": 3, "bar": 4}, True, id="OnePodSetScaledDown"),
        pytest.param({"foo": 3, "bar": 5}, {"foo": 2, "bar": 4}, True, id="AllPodSetsScaledDown"),
        pytest.param({"foo": 3, "bar": 5}, {"foo": 2, "bar": 6}, False, id="OnePodSetScaledDownAndOnePodSetScaledUp"),
        pytest.param({"foo": 3, "bar": 5}, {"foo": 2, "baz": 6}, True, id="ExtraneousPodSetScaledUp"),
        pytest.param({"foo": 3, "bar": 5}, {"foo": 2, "baz": 1}, True, id="ExtraneousPodSetScaledDown"),
    ],
)
def test_scaled_down(old: dict[str, int], new: dict[str, int], want: bool) -> None:
    assert ws.scaled_down(old, new) is want


@pytest.mark.parametrize(
    ("workloads", "want"),
    [
        pytest.param([], [], id="EmptyList"),
        pytest.param(
            [wl("b", created=2), wl("done", created=1, finished=True), wl("a", created=1)],
            ["a", "b"],
            id="SortedAndFiltered",
        ),
        pytest.param(
            [wl("x", created=1, uid="2"), wl("y", created=1, uid="1")],
            ["y", "x"],
            id="TwoActiveWorkloads_TimestampCollision",
        ),
    ],
)
def test_find_not_finished_workloads(workloads: list[dict[str, Any]], want: list[str]) -> None:
    assert [w["metadata"]["name"] for w in ws.not_finished(workloads)] == want


def _names(finish: tuple[tuple[Any, str, str], ...]) -> list[tuple[str, str]]:
    return [(w["metadata"]["name"], reason) for w, reason, _ in finish]


OOS, REPLACED = c.FinishedReason.OUT_OF_SYNC, c.FinishedReason.WORKLOAD_SLICE_REPLACED


@pytest.mark.parametrize(
    ("job", "workloads", "want_name", "want_counts", "compatible", "want_finish"),
    [
        pytest.param([ps()], [], None, None, True, [], id="NoWorkloadSlices"),
        pytest.param(
            [ps("different-name")], [wl("job-1")], None, None, False, [], id="OneWorkloadSlice_IncompatibleWithJob"
        ),
        pytest.param([ps()], [wl("job-1")], "job-1", None, True, [], id="OneWorkloadSlice_CurrentWorkload"),
        pytest.param(
            [ps(count=3)],
            [wl("job-1", reserved=True)],
            None,
            None,
            True,
            [],
            id="OneWorkloadSlice_ReservedQuota_ScaleUp",
        ),
        pytest.param(
            [ps("scale-up", 4), ps("stay-the-same", 3), ps("scale-down", 1)],
            [wl("job-1", ps("scale-up", 3), ps("scale-down", 3), ps("stay-the-same", 3), reserved=True)],
            None,
            None,
            True,
            [],
            id="OneWorkloadSlice_ReservedQuota_ScaleUp_MultiplePodSets",
        ),
        pytest.param(
            [ps(count=1)],
            [wl("job-1", ps(count=3), reserved=True)],
            "job-1",
            {"main": 1},
            True,
            [],
            id="OneWorkloadSlice_ReservedQuota_ScaleDown",
        ),
        pytest.param(
            [ps("scale-down", 1), ps("stay-the-same", 3)],
            [wl("job-1", ps("scale-down", 3), ps("stay-the-same", 3), reserved=True)],
            "job-1",
            {"scale-down": 1, "stay-the-same": 3},
            True,
            [],
            id="OneWorkloadSlice_ReservedQuota_ScaleDown_MultiplePodSets",
        ),
        pytest.param(
            [ps(count=3)], [wl("job-1")], "job-1", {"main": 3}, True, [], id="OneWorkloadSlice_UnreservedQuota_ScaleUp"
        ),
        pytest.param(
            [ps(count=1)],
            [wl("job-1", ps(count=3))],
            "job-1",
            {"main": 1},
            True,
            [],
            id="OneWorkloadSlice_UnreservedQuota_ScaleDown",
        ),
        pytest.param(
            [ps(count=3)],
            [wl("job-1", created=0), wl("job-2", ps(count=3), created=5)],
            "job-2",
            None,
            True,
            [("job-1", OOS)],
            id="TwoWorkloads_BothUnreserved_NewIsCurrent",
        ),
        pytest.param(
            [ps("different-key")],
            [wl("job-1", reserved=True), wl("job-2", ps(count=3), created=5, replaces="ns/job-1")],
            None,
            None,
            False,
            [],
            id="TwoWorkloads_NewIsIncompatible",
        ),
        pytest.param(
            [ps(count=5)],
            [wl("job-1", reserved=True), wl("job-2", ps(count=3), created=5, reserved=True)],
            None,
            None,
            True,
            [("job-1", OOS)],
            id="TwoWorkloads_BothWithReservedQuota",
        ),
        pytest.param(
            [ps(count=5)],
            [wl("job-1", reserved=True, evicted=True), wl("job-2", ps(count=3), created=5)],
            "job-2",
            {"main": 5},
            True,
            [("job-1", OOS)],
            id="TwoWorkloads_OldWithReservedQuotaAndEvicted_NewWithoutQuotaReservation",
        ),
        pytest.param(
            [ps(count=3)],
            [wl("job-1", reserved=True), wl("job-2", ps(count=3), created=5, replaces="ns/job-1")],
            "job-2",
            None,
            True,
            [],
            id="TwoWorkloadSlices_NewIsUnreservedAndCurrent",
        ),
        pytest.param(
            [ps(count=5)],
            [wl("job-1", reserved=True), wl("job-2", ps(count=3), created=5, replaces="ns/job-1")],
            "job-2",
            {"main": 5},
            True,
            [],
            id="TwoWorkloadSlices_NewIsUnreservedAndOutOfSync_ScaleUp",
        ),
        pytest.param(
            [ps(count=2)],
            [wl("job-1", reserved=True), wl("job-2", ps(count=3), created=5, replaces="ns/job-1")],
            "job-2",
            {"main": 2},
            True,
            [],
            id="TwoWorkloadSlices_NewIsUnreservedAndOutOfSync_ScaleDown",
        ),
        pytest.param(
            [ps(count=3)],
            [wl("job-1", reserved=True), wl("job-2", ps(count=3), created=5, reserved=True, replaces="ns/job-1")],
            "job-2",
            None,
            True,
            [("job-1", REPLACED)],
            id="TwoWorkloads_OldWithReservedQuota_NewWithReplacementAnnotationAndQuota",
        ),
        pytest.param(
            [ps(count=3)],
            [wl("job-1"), wl("job-2", ps(count=2), created=1), wl("job-3", ps(count=3), created=1)],
            "job-3",
            None,
            True,
            [("job-1", OOS), ("job-2", OOS)],
            id="MoreThanTwoWorkloadSlices",
        ),
    ],
)
def test_ensure_workload_slices(
    job: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    want_name: str | None,
    want_counts: dict[str, int] | None,
    compatible: bool,
    want_finish: list[tuple[str, str]],
) -> None:
    d = ws.ensure_slices(job, workloads)
    assert (None if d.workload is None else d.workload["metadata"]["name"]) == want_name
    assert d.new_counts == want_counts
    assert d.compatible is compatible
    assert _names(d.finish) == want_finish


def _admitted(name: str, count: int = 1, created: int = 0, **kw: Any) -> dict[str, Any]:
    return wl(name, ps(count=count), created=created, reserved=True, **kw)


@pytest.mark.parametrize(
    ("workloads", "survivor", "kept_admitted"),
    [
        pytest.param([_admitted("wl-a"), _admitted("wl-b", 2, created=1)], "wl-b", "", id="two admitted, keep newest"),
        pytest.param(
            [_admitted("wl-a"), wl("wl-b", ps(count=2), created=1, replaces="ns/wl-a")],
            "wl-b",
            "wl-a",
            id="admitted + pending replacement, keep replacement",
        ),
        pytest.param(
            [_admitted("wl-a", evicted=True), wl("wl-b", ps(count=2), created=1)],
            "wl-b",
            "",
            id="evicted admitted + pending, keep pending and finish evicted",
        ),
        pytest.param(
            [_admitted("wl-a", 2, replaces="ns/wl-old"), _admitted("wl-b", 3, created=1, replaces="ns/wl-old")],
            "wl-b",
            "",
            id="forked DAG, both replace same finished target, keep newest",
        ),
        pytest.param(
            [wl("wl-a"), wl("wl-b", ps(count=2), created=1)], "wl-b", "", id="all non-admitted non-evicted, keep newest"
        ),
        pytest.param(
            [_admitted("wl-a", evicted=True), _admitted("wl-b", 2, created=1, evicted=True)],
            None,
            "",
            id="all evicted, survivor is nil",
        ),
        pytest.param(
            [_admitted("wl-a"), wl("wl-b", ps(count=2), created=1)],
            "wl-a",
            "",
            id="admitted + pending without replacement annotation, keep admitted",
        ),
        pytest.param(
            [
                _admitted("wl-a"),
                wl("wl-b", ps(count=2), created=1, replaces="ns/wl-old"),
                wl("wl-c", ps(count=3), created=2, replaces="ns/wl-a"),
            ],
            "wl-c",
            "wl-a",
            id="three workloads, admitted + two pending, keep replacement targeting admitted",
        ),
        pytest.param(
            [
                _admitted("wl-a", uid="1"),
                wl("wl-b", ps(count=2), uid="2", replaces="ns/wl-a"),
                _admitted("wl-c", 3, uid="3", replaces="ns/wl-a"),
                wl("wl-d", ps(count=4), uid="4", replaces="ns/wl-c"),
            ],
            "wl-d",
            "wl-c",
            id="four same-second slices, chained replacements, admitted slice survives",
        ),
        pytest.param(
            [
                _admitted("wl-c", 3, uid="1", replaces="ns/wl-a"),
                wl("wl-b", ps(count=2), uid="2", replaces="ns/wl-a"),
                _admitted("wl-a", uid="3"),
                wl("wl-d", ps(count=4), uid="4", replaces="ns/wl-c"),
            ],
            "wl-d",
            "wl-c",
            id="forked claim in adversarial order, admitted fork wins over pending",
        ),
        pytest.param(
            [wl("wl-a", uid="1"), wl("wl-b", uid="2")], "wl-b", "", id="two pending slices created in the same second"
        ),
    ],
)
def test_normalize_active_slices(workloads: list[dict[str, Any]], survivor: str | None, kept_admitted: str) -> None:
    selected, finish = ws.normalize(ws.not_finished(workloads))
    assert (None if selected is None else selected["metadata"]["name"]) == survivor
    kept = {survivor, kept_admitted}
    assert sorted(n for n, _ in _names(finish)) == sorted(
        w["metadata"]["name"] for w in workloads if w["metadata"]["name"] not in kept
    )


@pytest.mark.parametrize(
    ("workloads", "want"),
    [
        pytest.param([], None, id="none"),
        pytest.param([_admitted("only")], "only", id="the only reserved one"),
        pytest.param([_admitted("older"), _admitted("newer", created=1)], "newer", id="the newest reserved one"),
        pytest.param(
            [_admitted("older"), _admitted("evicting", created=1, evicted=True)],
            "older",
            id="a newer slice that is being evicted",
        ),
        pytest.param(
            [_admitted("one", evicted=True), _admitted("two", created=1, evicted=True)],
            None,
            id="every slice is being evicted",
        ),
    ],
)
def test_find_latest_active_workload(workloads: list[dict[str, Any]], want: str | None) -> None:
    got = ws.latest_active(workloads)
    assert (None if got is None else got["metadata"]["name"]) == want


def test_slice_name_and_replacement() -> None:
    first = wl("first")
    assert ws.slice_name(first) == "first" and ws.replacement_for(first) is None
    second = wl("second", replaces="ns/first")
    second["metadata"]["annotations"][c.WORKLOAD_SLICE_NAME] = "first"
    assert ws.slice_name(second) == "first" and ws.replacement_for(second) == "ns/first"
    replaced = wl("first")
    replaced["status"]["conditions"] = [{"type": "Finished", "status": "True", "reason": "WorkloadSliceReplaced"}]
    assert ws.is_replaced(replaced) and not ws.is_replaced(first)
