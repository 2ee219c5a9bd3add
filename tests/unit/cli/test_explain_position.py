"""explain's position line: from the visibility API when it answers, else counted from the Workloads the
same way (0 = next in the ClusterQueue, as upstream's positionInClusterQueue)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.unit.cli.conftest import Result
from tests.unit.cli.fake_api import FakeApi
from tests.unit.core.builders import fq, make_cq, make_flavor, make_lq, make_wl, psa

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"


def cluster(**answers: Any) -> FakeApi:
    running = make_wl("running").queue("lq").request(cpu="1").reserve("cq", psa(cpu=("default", "1"))).obj()
    first = make_wl("first").queue("lq").request(cpu="1").created(10).obj()
    second = make_wl("second").queue("lq").request(cpu="1").created(20).obj()
    return FakeApi(NS, make_flavor("default").obj(), make_cq("cq").group(fq("default", cpu="1")).obj(),
                   make_lq("lq", "ns", "cq"), running, first, second, answers=answers)


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
    assert position_line(run(api, "explain", "workload/second", "-n", "ns")) == \
        "Position: 7 in ClusterQueue cq, 3 in LocalQueue lq"
