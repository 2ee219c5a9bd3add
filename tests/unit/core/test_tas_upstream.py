"""Upstream TAS placement scenarios, driven through `find_topology_assignments`.

`TestFindTopologyAssignments` of upstream v0.19.2's `pkg/cache/scheduler/tas_cache_test.go` is read
into `data/tas_find_topology_assignments.json` by `port_upstream_tas.py` (case ids are the upstream
case names). As upstream's harness does: a pod set without a topology request is "implied"; running
non-TAS pods (not Succeeded/Failed) use their node's capacity; `priorOwnUsage` is TAS usage of this
flavor, `priorFlavorUsage` usage already reserved on the same hosts by a sibling flavor (hostname
topologies only). Cases that need inputs this engine does not take are listed with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from webhook.core.tas import (
    DomainAssignment,
    DomainUsage,
    Flavor,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Options,
    PodSetRequest,
    PodSetResult,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    find_topology_assignments,
)

HOSTNAME = "kubernetes.io/hostname"
_CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "tas_find_topology_assignments.json").read_text()
)

# Upstream's feature gates this engine models, as Options fields; the others it follows at their default.
_GATES = {"TASBalancedPlacement": "balanced_placement", "TASProfileMixed": "profile_mixed"}
_DEFAULT_ON = {"TASMultiLayerTopology"}


def _node(d: dict[str, Any]) -> Node:
    return Node(
        name=d["name"],
        labels=d["labels"],
        allocatable=d["allocatable"],
        taints=tuple(Taint(t["key"], t["effect"], t["value"]) for t in d["taints"]),
        ready=d["ready"],
        unschedulable=d["unschedulable"],
    )


def _pod_set(d: dict[str, Any]) -> PodSetRequest:
    tr = d["topology_request"]
    affinity = d["required_affinity"]
    return PodSetRequest(
        name=d["name"],
        count=d["count"],
        requests=d["requests"],
        topology_request=TopologyRequest.from_api(tr) if tr is not None else None,
        implied=tr is None,
        group=d["pod_set_group_name"],
        tolerations=tuple(Toleration(**t) for t in d["tolerations"]),
        node_selector=d["node_selector"],
        required_affinity=None
        if affinity is None
        else tuple(
            NodeSelectorTerm(
                match_expressions=tuple(
                    NodeSelectorRequirement(r["key"], r["operator"], tuple(r["values"]))
                    for r in t.get("match_expressions", [])
                ),
                match_fields=tuple(
                    NodeSelectorRequirement(r["key"], r["operator"], tuple(r["values"]))
                    for r in t.get("match_fields", [])
                ),
            )
            for t in affinity
        ),
    )


def _usage(rows: list[dict[str, Any]]) -> list[DomainUsage]:
    return [DomainUsage(tuple(u["values"]), u["requests"], u["count"]) for u in rows]


def _want(d: dict[str, Any]) -> PodSetResult:
    ta = d["want_assignment"]
    assignment = None
    if ta is not None:
        assignment = TopologyAssignment(
            tuple(ta["levels"]), tuple(DomainAssignment(tuple(x["values"]), x["count"]) for x in ta["domains"])
        )
    return PodSetResult(assignment, d["want_reason"])


def _options(gates: dict[str, bool]) -> Options:
    fields: dict[str, bool] = {}
    for gate, on in gates.items():
        if gate in _GATES:
            fields[_GATES[gate]] = on
        elif not (gate in _DEFAULT_ON and on):
            pytest.fail(f"case sets feature gate {gate}={on}, which the engine does not model")
    return Options(**fields)


def run_case(case: dict[str, Any]) -> tuple[dict[str, PodSetResult], dict[str, PodSetResult]]:
    levels = tuple(case["levels"])
    flavor = Flavor("default", levels, tuple(_node(n) for n in case["nodes"]), node_labels=case["node_labels"])
    non_tas: dict[str, dict[str, int]] = {}
    for pod in case["pods"]:
        if pod["phase"] in ("Succeeded", "Failed"):
            continue
        used = non_tas.setdefault(pod["node_name"], {})
        for r, v in {**pod["requests"], "pods": 1}.items():
            used[r] = used.get(r, 0) + v
    assumed: dict[str, dict[str, int]] = {}
    if levels[-1] == HOSTNAME:
        for u in _usage(case["priorFlavorUsage"]):
            assumed[",".join(u.values)] = {**{r: v * u.count for r, v in u.requests.items()}, "pods": u.count}
    got = find_topology_assignments(
        flavor,
        [_pod_set(ps) for ps in case["pod_sets"]],
        tas_usage=_usage(case["priorOwnUsage"]),
        non_tas_usage=non_tas,
        assumed_usage=assumed,
        options=_options(case["feature_gates"]),
    )
    want = {ps["name"]: _want(ps) for ps in case["pod_sets"]}
    return got, want


@pytest.mark.parametrize("case", [c for c in _CASES if "skip" not in c], ids=lambda c: c["name"])
def test_find_topology_assignments(case: dict[str, Any]) -> None:
    got, want = run_case(case)
    assert got == want


def test_not_ported_cases_are_the_known_ones() -> None:
    """The upstream cases left out, by what they need: node replacement and elastic scale-up start
    from an existing admission, preferred node affinity is an alpha gate this engine skips."""
    skipped = {c["name"]: c["skip"] for c in _CASES if "skip" in c}
    reasons = sorted(set(skipped.values()))
    assert reasons == [
        "function literal",
        "identifier utiltestingapi",
        "tas.V1Beta2From",
        "utiltesting.MakePreferredSchedulingTerms",
    ]
    assert len(skipped) == 25
