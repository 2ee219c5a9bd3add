"""`podset.from_admission` with topology-aware scheduling: upstream v0.19.2's TAS cases of
`pkg/podset/podset_test.go` `TestFromAssignment` (names kept), and the explicit-request variant. A pod
set placed by a topology assignment starts behind the `kueue.x-k8s.io/topology` gate, which the
topology ungater lifts pod by pod."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.core.tas import DomainAssignment, TopologyAssignment, to_v1beta2
from webhook.worker.jobframework import podset

TOL1 = {"key": "t1k", "operator": "Equal", "value": "t1v", "effect": "NoExecute"}
TOL2 = {"key": "t2k", "operator": "Exists", "effect": "NoSchedule"}
FLAVORS = {"flavor1": {"nodeLabels": {"f1l1": "f1v1", "f1l2": "f1v2"}, "tolerations": [TOL1, TOL2]}}
RACK_ASSIGNMENT = to_v1beta2(TopologyAssignment(("cloud.com/rack",), (DomainAssignment(("rack1",), 4),)))


def _workload(topology_request: dict[str, Any] | None = None) -> dict[str, Any]:
    pod_set: dict[str, Any] = {"name": "name", "count": 4, "template": {"spec": {}}}
    if topology_request is not None:
        pod_set["topologyRequest"] = topology_request
    psa = {"name": "name", "flavors": {"cpu": "flavor1"}, "topologyAssignment": RACK_ASSIGNMENT}
    return {
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"podSets": [pod_set]},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [psa]}},
    }


@pytest.mark.parametrize(
    ("tas", "want_annotations", "want_gates"),
    [
        pytest.param(
            True,
            {"kueue.x-k8s.io/podset-unconstrained-topology": "true", "kueue.x-k8s.io/workload": "wl"},
            [{"name": "kueue.x-k8s.io/topology"}],
            id="with topology assignment; TopologyAwareScheduling enabled - scheduling gate added",
        ),
        pytest.param(
            False, {}, [], id="with topology assignment; TopologyAwareScheduling disabled - no scheduling gate added"
        ),
    ],
)
def test_from_assignment(tas: bool, want_annotations: dict[str, str], want_gates: list[dict[str, str]]) -> None:
    (info,) = podset.from_admission(_workload(), FLAVORS, tas=tas, assign_queue_labels=False)
    assert (info.name, info.count) == ("name", 4)
    assert info.node_selector == {"f1l1": "f1v1", "f1l2": "f1v2"}
    assert info.tolerations == [TOL1, TOL2]
    assert info.annotations == want_annotations
    assert info.scheduling_gates == want_gates


def test_an_explicit_topology_request_gets_the_gate_but_no_implicit_unconstrained_annotation() -> None:
    wl = _workload({"required": "cloud.com/rack", "podIndexLabel": "batch.kubernetes.io/job-completion-index"})
    (info,) = podset.from_admission(wl, FLAVORS, tas=True, assign_queue_labels=False)
    assert "kueue.x-k8s.io/podset-unconstrained-topology" not in info.annotations
    assert info.scheduling_gates == [{"name": "kueue.x-k8s.io/topology"}]
