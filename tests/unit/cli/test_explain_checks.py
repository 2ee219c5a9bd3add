"""explain on a Workload waiting for admission checks: each check's state and its controller's message."""

from __future__ import annotations

from collections.abc import Callable

from tests.builders import fq, make_cq, make_flavor, make_lq, make_wl, psa
from tests.unit.cli.fake_api import FakeApi, Result

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}


def test_explain_lists_each_check_with_its_state_message_and_retries(run: Callable[..., Result]) -> None:
    wl = make_wl("train").queue("lq").podset("main", 1, cpu="1").reserve("cq", psa(count=1, cpu=("rf", "1"))).obj()
    wl["status"]["admissionChecks"] = [
        {
            "name": "capacity",
            "state": "Retry",
            "message": "Retrying after failure: CA could not find requested capacity",
            "retryCount": 1,
            "requeueAfterSeconds": 90,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
        {"name": "review", "state": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
    ]
    api = FakeApi(
        NS, make_flavor("rf").obj(), make_cq("cq").group(fq("rf", cpu="8")).obj(), make_lq("lq", "ns", "cq"), wl
    )
    result = run(api, "explain", "workload/train", "-n", "ns")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    at = lines.index("Admission checks:")
    assert lines[at + 1 : at + 3] == [
        "  capacity: Retry: Retrying after failure: CA could not find requested capacity"
        " (retries 1, next attempt after 90s)",
        "  review: Ready",
    ]


def test_explain_says_nothing_of_checks_a_workload_has_none_of(run: Callable[..., Result]) -> None:
    wl = make_wl("train").queue("lq").podset("main", 1, cpu="1").obj()
    api = FakeApi(
        NS, make_flavor("rf").obj(), make_cq("cq").group(fq("rf", cpu="8")).obj(), make_lq("lq", "ns", "cq"), wl
    )
    result = run(api, "explain", "workload/train", "-n", "ns")
    assert result.code == 0, result.err
    assert "Admission checks:" not in result.out


def test_explain_names_the_worker_a_multikueue_workload_runs_on(run: Callable[..., Result]) -> None:
    wl = make_wl("train").queue("lq").podset("main", 1, cpu="1").reserve("cq", psa(count=1, cpu=("rf", "1"))).obj()
    wl["status"]["admission"]["podSetAssignments"][0]["delayedTopologyRequest"] = "Ready"
    wl["status"]["clusterName"] = "worker2"
    wl["status"]["admissionChecks"] = [
        {
            "name": "mk",
            "state": "Ready",
            "message": 'The workload was admitted on "worker2"',
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    api = FakeApi(
        NS, make_flavor("rf").obj(), make_cq("cq").group(fq("rf", cpu="8")).obj(), make_lq("lq", "ns", "cq"), wl
    )
    result = run(api, "explain", "workload/train", "-n", "ns")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "MultiKueue: runs on worker cluster worker2" in lines
    assert "    topology: placed by the MultiKueue worker" in lines
    assert '  mk: Ready: The workload was admitted on "worker2"' in lines


def test_explain_names_the_workers_a_workload_waits_on(run: Callable[..., Result]) -> None:
    wl = make_wl("train").queue("lq").podset("main", 1, cpu="1").reserve("cq", psa(count=1, cpu=("rf", "1"))).obj()
    wl["status"]["admission"]["podSetAssignments"][0]["delayedTopologyRequest"] = "Pending"
    wl["status"]["nominatedClusterNames"] = ["worker1", "worker2"]
    api = FakeApi(
        NS, make_flavor("rf").obj(), make_cq("cq").group(fq("rf", cpu="8")).obj(), make_lq("lq", "ns", "cq"), wl
    )
    result = run(api, "explain", "workload/train", "-n", "ns")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "MultiKueue: dispatched to worker clusters worker1, worker2; none has admitted it yet" in lines
    assert "    topology: placed later (by the MultiKueue worker, or once provisioned nodes exist)" in lines
