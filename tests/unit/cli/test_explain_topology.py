"""explain on a topology-aware Workload: which hosts its pods got, as its topologyAssignment says."""

from __future__ import annotations

from collections.abc import Callable

from tests.builders import fq, make_cq, make_flavor, make_lq, make_topology, make_wl, psa
from tests.unit.cli.fake_api import FakeApi, Result

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}


def test_explain_shows_the_hosts_of_an_admitted_topology_aware_workload(run: Callable[..., Result]) -> None:
    placed = psa(count=3, cpu=("tas", "3")) | {
        "topologyAssignment": {
            "levels": ["kubernetes.io/hostname"],
            "slices": [
                {
                    "domainCount": 2,
                    "valuesPerLevel": [{"individual": {"prefix": "kind-worker", "roots": ["", "2"]}}],
                    "podCounts": {"individual": [2, 1]},
                }
            ],
        }
    }
    wl = make_wl("train").queue("lq").podset("main", 3, cpu="1").reserve("cq", placed).obj()
    api = FakeApi(
        NS,
        make_topology("hosts", "kubernetes.io/hostname"),
        make_flavor("tas").topology("hosts").obj(),
        make_cq("cq").group(fq("tas", cpu="8")).obj(),
        make_lq("lq", "ns", "cq"),
        wl,
    )
    result = run(api, "explain", "workload/train", "-n", "ns")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    at = lines.index("  pod set main: cpu on tas (3 pods)")
    assert lines[at + 1] == "    topology kubernetes.io/hostname: kind-worker (2 pods), kind-worker2 (1 pod)"
