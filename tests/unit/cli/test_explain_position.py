"""explain's position line: from the visibility API when it answers, else counted from the Workloads the
same way (0 = next in the ClusterQueue, as upstream's positionInClusterQueue)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.builders import fq, make_cq, make_flavor, make_lq, make_wl, psa
from tests.unit.cli.fake_api import FakeApi, Result

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"


def cluster(**answers: Any) -> FakeApi:
    running = make_wl("running").queue("lq").request(cpu="1").reserve("cq", psa(cpu=("default", "1"))).obj()
    first = make_wl("first").queue("lq").request(cpu="1").created(10).obj()
    second = make_wl("second").queue("lq").request(cpu="1").created(20).obj()
    return FakeApi(
        NS,
        make_flavor("default").obj(),
        make_cq("cq").group(fq("default", cpu="1")).obj(),
        make_lq("lq", "ns", "cq"),
        running,
        first,
        second,
        answers=answers,
    )


def position_line(result: Result) -> str:
    assert result.code == 0, result.err
    return next(line for line in result.out.splitlines() if line.startswith("Position:"))


def test_without_the_visibility_api_the_next_workload_is_at_position_0(run: Callable[..., Result]) -> None:
    api = cluster()
    assert position_line(run(api, "explain", "workload/first", "-n", "ns")).startswith("Position: 0 in ClusterQueue cq")
    out = run(api, "explain", "workload/second", "-n", "ns")
    assert position_line(out).startswith("Position: 1 in ClusterQueue cq")
    assert "Ahead of it (1):\n  ns/first" in out.out


def test_the_visibility_apis_positions_are_shown_when_it_answers(run: Callable[..., Result]) -> None:
    item = {"metadata": {"name": "second", "namespace": "ns"}, "positionInClusterQueue": 7, "positionInLocalQueue": 3}
    api = cluster(**{VISIBILITY: {"items": [item]}})
    assert (
        position_line(run(api, "explain", "workload/second", "-n", "ns"))
        == "Position: 7 in ClusterQueue cq, 3 in LocalQueue lq"
    )


OURS = "/apis/visibility.pykueue.io/v1alpha1/namespaces/ns/localqueues/lq/pendingworkloads"


def estimate_line(result: Result) -> str | None:
    assert result.code == 0, result.err
    return next((line for line in result.out.splitlines() if line.startswith("Estimated admission:")), None)


def test_the_estimated_admission_from_our_visibility_group(run: Callable[..., Result]) -> None:
    page = {
        "estimation": {
            "method": "simulation: …",
            "basis": {
                "holdingQuota": 4,
                "withMaximumExecutionTime": 3,
                "fromObservedRuns": 1,
                "withoutBasis": 0,
                "observedRuns": 5,
                "observedMedianSeconds": 240,
            },
            "accuracy": {
                "admissions": 12,
                "unknownAtFirst": 1,
                "firstEstimate": {"p50Seconds": 20, "p90Seconds": 95},
                "latestEstimate": {"p50Seconds": 4, "p90Seconds": 30},
            },
        },
        "items": [
            {
                "metadata": {"name": "second", "namespace": "ns"},
                "estimatedAdmission": {"waitSeconds": 300, "time": "2025-01-01T00:05:00Z"},
            }
        ],
    }
    out = run(cluster(**{OURS: page}), "explain", "workload/second", "-n", "ns")
    assert estimate_line(out) == (
        "Estimated admission: in 5m, at 2025-01-01T00:05:00Z (simulated from when the 4 workloads holding quota "
        "end: 3 by maximumExecutionTimeSeconds, 1 by observed run times, median of 5 finished runs 4m)"
    )
    assert (
        "Past estimates in its ClusterQueue (12 recent admissions): first estimate off by 20s (p50), 95s (p90), "
        "latest by 4s (p50), 30s (p90)"
    ) in out.out.splitlines()


def test_an_unknown_estimate_says_why(run: Callable[..., Result]) -> None:
    page = {
        "estimation": {"accuracy": {"admissions": 0}},
        "items": [
            {
                "metadata": {"name": "first", "namespace": "ns"},
                "estimatedAdmission": None,
                "estimatedAdmissionUnknownReason": "it waits for quota held by 1 workload(s) with no …",
            }
        ],
    }
    out = run(cluster(**{OURS: page}), "explain", "workload/first", "-n", "ns")
    assert estimate_line(out) == "Estimated admission: unknown (it waits for quota held by 1 workload(s) with no …)"
    assert "Past estimates" not in out.out
    page = {"estimation": {"unknownReason": "Can't admit new workloads: is stopped."}, "items": [page["items"][0]]}
    page["items"][0].pop("estimatedAdmissionUnknownReason")
    line = estimate_line(run(cluster(**{OURS: page}), "explain", "workload/first", "-n", "ns"))
    assert line == "Estimated admission: unknown (Can't admit new workloads: is stopped.)"


def test_no_estimate_line_where_our_group_is_not_served_or_forbidden(run: Callable[..., Result]) -> None:
    from webhook import kube

    assert estimate_line(run(cluster(), "explain", "workload/first", "-n", "ns")) is None
    forbidden = kube.KubeError(403, "forbidden")
    assert estimate_line(run(cluster(**{OURS: forbidden}), "explain", "workload/first", "-n", "ns")) is None
