"""Upstream's topology ungater scenarios, run against a fake API.

Ported from upstream v0.19.2 `pkg/controller/tas/topology_ungater_test.go`: `TestReconcile` (37
cases), `TestRecordPodSchedulingGateRemovalSeconds` (3) and `TestIsTAS` (7), case ids are upstream's
names. Each `TestReconcile` case stores the Workloads and pods, feeds the pods to the ungater as its
informer would, runs one reconcile of the first Workload's key and compares what a user sees: the
pods (gates, node selectors, labels, annotations, phase) and how many ungated, live pods each node
selector has. As upstream, a `CountsOnly` case does not compare node selectors pod by pod (which pod
gets which domain depends on listing order), only the counts. Upstream's error results are ours
retried: `errPendingUngateOps` and `errParseOffsetAnnotation` are a `Retry`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from tests.unit.worker.reconcilers.tas_builders import (
    BLOCK,
    HOSTNAME,
    JOB_INDEX,
    JOBSET_JOB_INDEX,
    JOBSET_REPLICAS,
    KF_JOB_ROLE,
    KF_REPLICA_INDEX,
    LEVELS,
    LWS_WORKER_INDEX,
    MAIN,
    NOW,
    OFFSET,
    POD_GROUP_INDEX,
    PODSET,
    RACK,
    TOPOLOGY_GATE,
    WL_ANN,
    WL_FIN,
    S,
    make_admission,
    make_pod,
    make_pod_set,
    make_pod_set_assignment,
    make_topology_assignment,
    make_topology_domain_assignment,
    make_workload,
    v1_beta2_from,
)
from webhook import kube as k
from webhook import metrics
from webhook.worker.reconcilers import topology_ungater as tu
from webhook.worker.reporter import ROLE
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry


@dataclass
class Case:
    name: str
    workloads: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    want_pods: list[dict[str, Any]]
    node_selector_assert_mode: str = ""
    want_counts: list[dict[str, Any]] = field(default_factory=list)
    want_err: str | None = None
    expect_uids: list[str] = field(default_factory=list)
    is_group: bool = False
    want_metrics_count: int = 0
    want_metrics_seconds: float = 0


RECONCILE_CASES = [
    Case(
        "ungate single pod",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "does not ungate a replacement pod onto the unhealthy domain of a two-pod group",
        # Closer to production than the single-pod case below: one pod of the
        # group survives on a healthy domain and holds its slot, so the only
        # slot the replacement could take is the one on the unhealthy node.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 2).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "2")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(
                            make_topology_domain_assignment(["x1"], 1).obj(),
                            make_topology_domain_assignment(["x2"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .unhealthy_nodes("x1")
            .obj(),
        ],
        pods=[
            # Survivor: already ungated on the healthy domain, holding x2's slot.
            make_pod("pod-survivor", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(HOSTNAME, "x2")
            .obj(),
            # Replacement for the pod that was on the unhealthy node.
            make_pod("pod-replacement", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        # Listed name-sorted, which is the order the comparison uses.
        want_pods=[
            make_pod("pod-replacement", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("pod-survivor", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(HOSTNAME, "x2")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={HOSTNAME: "x2"},
                count=1,
            ),
        ],
    ),
    Case(
        "does not ungate a pod onto a node marked unhealthy",
        # The workload keeps its admission and its TopologyAssignment while it
        # waits for a replacement node (see the "should update workload
        # TopologyAssignment after a node becomes available" integration
        # test, which asserts the assignment is retained). A replacement pod
        # created during that window must NOT be ungated onto the domain of
        # the node already recorded in Status.UnhealthyNodes: it can never
        # schedule there, and the node controller then terminates it with
        # UnschedulableOnAssignedNode, so every recreation burns a retry.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment(["x1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .unhealthy_nodes("x1")
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        # The pod must stay gated: no node selector applied, nothing ungated.
        want_pods=[
            make_pod("pod", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        want_counts=[],
    ),
    Case(
        "ungate single pod with sub group index label but no sub group count",
        # Regression test: a PodSet with SubGroupIndexLabel set but SubGroupCount
        # nil (e.g. from an unvalidated user-supplied annotation) must not panic
        # the controller; it should fall back to greedy domain assignment.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 1)
                .request("cpu", "1")
                .pod_index_label(JOB_INDEX)
                .sub_group_index_label(JOBSET_JOB_INDEX)
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ungate single pod with sub group index label but zero sub group count",
        # Regression test: a PodSet with SubGroupIndexLabel set but SubGroupCount
        # zero (the literal divide-by-zero) must not panic the controller; it should
        # fall back to greedy domain assignment.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 1)
                .request("cpu", "1")
                .pod_index_label(JOB_INDEX)
                .sub_group_index_label(JOBSET_JOB_INDEX)
                .sub_group_count(0)
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ungate multiple pods in a single domain",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 3).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .count(3)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 3).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
            make_pod("pod2", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).obj(),
            make_pod("pod2", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
        ],
    ),
    Case(
        "ungate multiple pods across multiple domains",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 2).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .count(2)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
            make_pod("pod2", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).obj(),
            make_pod("pod2", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "workload without admission - pod remains gated",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 2).request("cpu", "1").obj())
            .obj(),
        ],
        pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
    ),
    Case(
        "workload admitted but without topology assignment - pod remains gated",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 2).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(make_pod_set_assignment(MAIN).assignment("cpu", "unit-test-flavor", "1").count(2).obj())
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
    ),
    Case(
        "workload with admission (reserved quota), but not admitted - pod remains gated",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 2).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .count(2)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(False, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
    ),
    Case(
        "workload admitted by TAS with single pod without the Workload annotation - Pod remains gated",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod", "ns").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
    ),
    Case(
        "workload admitted by TAS with single pod without the PodSet label - Pod remains gated",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns").annotation(WL_ANN, "unit-test").topology_scheduling_gate().obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod", "ns").annotation(WL_ANN, "unit-test").topology_scheduling_gate().obj(),
        ],
    ),
    Case(
        "workload admitted by TAS with single pod without topology gate, remains gated by another gate",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .gate("example.com/gate")
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .gate("example.com/gate")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "workload admitted by TAS with single pod with topology gate and another gate, ungated, but remains gated by another gate",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .gate("example.com/gate")
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .gate("example.com/gate")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "expect single pod; one already running - don't ungate second pod",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod-already-running", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .status_phase("Running")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod-gated", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod-already-running", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .status_phase("Running")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod-gated", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "expect single pod; one ungated pod failed - ungate second pod",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod-already-running", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .status_phase("Failed")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod-gated", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod-already-running", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .status_phase("Failed")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod-gated", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "two pods, one already ungated, second to ungate",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "2")
                    .count(2)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 2).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod1", "ns")
            .uid("x")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod2", "ns")
            .uid("y")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod1", "ns")
            .uid("x")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod2", "ns")
            .uid("y")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
        ],
    ),
    Case(
        "expect single pod; one ungated pod succeeded - ungate second pod",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod-already-succeeded", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .status_phase("Succeeded")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod-gated", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod-already-succeeded", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .status_phase("Succeeded")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod-gated", "ns").annotation(WL_ANN, "unit-test").label(PODSET, MAIN).obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ungate replacement pod for unhealthy node",
        # Scenario: A node replacement happens, but a terminating pod is deleted quickly.
        # The new replacement pod (p0, rank 0) needs to be ungated. But rank 0's expected node mapping
        # could conflict with where p1 (rank 1) is already running, triggering a fallback to greedy assignment.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 2)
                .request("cpu", "1")
                .pod_index_label(JOB_INDEX)
                .sub_group_index_label(JOBSET_JOB_INDEX)
                .sub_group_count(1)
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "2")
                    .count(2)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .
                        # Expected domains by rank: Rank 0 -> b1/r1, Rank 1 -> b1/r2
                        domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),  # x1
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),  # x2
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p1-running", "ns")
            .uid("x")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .  # Rank 1
            label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .  # Occupying Rank 0's expected domain!
            obj(),
            make_pod("p0-replacement", "ns")
            .uid("y")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .  # Rank 0
            label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("p0-replacement", "ns")
            .uid("y")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .  # Fallback to greedy, correctly picks the remaining domain
            obj(),
            make_pod("p1-running", "ns")
            .uid("x")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ungate single pod; while there are pending expectations",
        expect_uids=["x"],
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "2")
                    .count(2)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 2).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("pod1", "ns")
            .uid("x")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod2", "ns")
            .uid("y")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("pod1", "ns")
            .uid("x")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod2", "ns")
            .uid("y")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        want_err="pending",
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: ungate pods according to their ranks for batch/Job - some Pods already scheduled",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 5).request("cpu", "1").pod_index_label(JOB_INDEX).obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "5")
                    .count(5)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 2).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "3")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "4")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "3")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "4")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=2,
            ),
        ],
    ),
    Case(
        "ranks: ungate pods according to their ranks for LeaderWorkerSet - for all Pods",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set("workers", 4)
                .request("cpu", "1")
                .pod_index_label(LWS_WORKER_INDEX)
                .pod_set_group("lws-group")
                .obj(),
                make_pod_set("leader", 1)
                .request("cpu", "1")
                .pod_index_label(LWS_WORKER_INDEX)
                .pod_set_group("lws-group")
                .obj(),
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment("workers")
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 2).obj(),
                        )
                        .obj()
                    )
                    .obj(),
                    make_pod_set_assignment("leader")
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj(),
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "0")
            .label(PODSET, "leader")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "2")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "1")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "3")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "4")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "0")
            .label(PODSET, "leader")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "2")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "1")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "3")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "4")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=2,
            ),
        ],
    ),
    Case(
        "ranks: ungate pods according to their ranks for batch/Job - for all Pods",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 5).request("cpu", "1").pod_index_label(JOB_INDEX).obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "5")
                    .count(5)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 2).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "3")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "4")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "3")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "4")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=2,
            ),
        ],
    ),
    Case(
        "ranks: gracefully handle situation with ranks going below 0",
        # this might happen when two PodSets are in the same group
        # but indexes of the second PodSet start from 0 instead of
        # consecutive number after the first PodSet.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set("workers", 4)
                .request("cpu", "1")
                .pod_index_label(LWS_WORKER_INDEX)
                .pod_set_group("lws-group")
                .obj(),
                make_pod_set("leader", 1)
                .request("cpu", "1")
                .pod_index_label(LWS_WORKER_INDEX)
                .pod_set_group("lws-group")
                .obj(),
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment("workers")
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 2).obj(),
                        )
                        .obj()
                    )
                    .obj(),
                    make_pod_set_assignment("leader")
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj(),
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "0")
            .label(PODSET, "leader")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "0")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "1")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "2")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "3")
            .label(PODSET, "workers")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "0")
            .label(PODSET, "leader")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "0")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "1")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "2")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p4", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(LWS_WORKER_INDEX, "3")
            .label(PODSET, "workers")
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=2,
            ),
        ],
    ),
    Case(
        "ranks: gracefully handle situation with repeated ranks",
        # this could happen if the Job has a notion of replicated Jobs
        # as JobSet. We will support JobSet, but there could be other CRDs
        # with unknown labels which we need to support gracefully - the
        # order may not be optimal, but we cannot fail.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 4).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("p0", "ns").annotation(WL_ANN, "unit-test").label(JOB_INDEX, "0").label(PODSET, MAIN).obj(),
            make_pod("p1", "ns").annotation(WL_ANN, "unit-test").label(JOB_INDEX, "1").label(PODSET, MAIN).obj(),
            make_pod("p2", "ns").annotation(WL_ANN, "unit-test").label(JOB_INDEX, "0").label(PODSET, MAIN).obj(),
            make_pod("p3", "ns").annotation(WL_ANN, "unit-test").label(JOB_INDEX, "1").label(PODSET, MAIN).obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: gracefully handle situation when parallelism < completions",
        # The scenario corresponds to parallelism=1, completions=2, backoffLimitPerIndex=0.
        # The pod with index 0 failed, the Pod with index 1 is created.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .status_phase("Failed")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(PODSET, MAIN)
            .status_phase("Failed")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for JobSet - for all Pods",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 4)
                .request("cpu", "1")
                .pod_index_label(JOB_INDEX)
                .sub_group_index_label(JOBSET_JOB_INDEX)
                .sub_group_count(2)
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for JobSet - some Pods already scheduled",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 4)
                .request("cpu", "1")
                .pod_index_label(JOB_INDEX)
                .sub_group_index_label(JOBSET_JOB_INDEX)
                .sub_group_count(2)
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "0")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for JobSet - only subset of pods is observed so far",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 4)
                .request("cpu", "1")
                .pod_index_label(JOB_INDEX)
                .sub_group_index_label(JOBSET_JOB_INDEX)
                .sub_group_count(2)
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        v1_beta2_from(
                            S(
                                levels=LEVELS,
                                domains=[
                                    S(
                                        count=2,
                                        values=[
                                            "b1",
                                            "r1",
                                        ],
                                    ),
                                    S(
                                        count=1,
                                        values=[
                                            "b1",
                                            "r2",
                                        ],
                                    ),
                                    S(
                                        count=1,
                                        values=[
                                            "b2",
                                            "r1",
                                        ],
                                    ),
                                ],
                            )
                        )
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("p1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "0")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("p3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(JOB_INDEX, "1")
            .label(JOBSET_JOB_INDEX, "1")
            .label(JOBSET_REPLICAS, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for kubeflow with valid offset annotation - for all Pods",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set("launcher", 1)
                .request("cpu", "1")
                .pod_index_label(KF_REPLICA_INDEX)
                .pod_set_group("mpijob-group")
                .obj(),
                make_pod_set("worker", 3)
                .request("cpu", "1")
                .pod_index_label(KF_REPLICA_INDEX)
                .pod_set_group("mpijob-group")
                .obj(),
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment("launcher")
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj(),
                    make_pod_set_assignment("worker")
                    .assignment("cpu", "unit-test-flavor", "3")
                    .count(3)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj(),
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, "launcher")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w3", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "3")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, "launcher")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, "worker")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, "worker")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("w3", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "3")
            .label(PODSET, "worker")
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: out-of-range pod index falls back to greedy assignment",
        # A stray Pod whose pod-index label is out of range (completion index 3
        # with offset 1) cannot be used for rank ordering, so the ungater uses
        # greedy assignment. The already-placed Pods keep their domains and the
        # stray Pod stays gated.
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set("worker", 2).request("cpu", "1").pod_index_label(JOB_INDEX).obj(),
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment("worker")
                    .assignment("cpu", "unit-test-flavor", "2")
                    .count(2)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj(),
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            # correctly placed, already ungated Pods (ranks 0 and 1)
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(PODSET, "worker")
            .label(JOB_INDEX, "1")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(PODSET, "worker")
            .label(JOB_INDEX, "2")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            # stray Pod with an out-of-range completion index (would be rank 2)
            make_pod("stray", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(PODSET, "worker")
            .label(JOB_INDEX, "3")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            # listed name-sorted to match the fake client's List ordering
            make_pod("stray", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(PODSET, "worker")
            .label(JOB_INDEX, "3")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(PODSET, "worker")
            .label(JOB_INDEX, "1")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "1")
            .label(PODSET, "worker")
            .label(JOB_INDEX, "2")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: TopologyAssignment shorter than the PodSet count falls back to greedy assignment",
        # When the TopologyAssignment covers fewer pods than the PodSet Count
        # (here Count 2 with a single-rank assignment), a Pod's rank can exceed
        # len(rankToDomainID); the ungater uses greedy assignment for those Pods.
        # The scheduler produces this state for a slice size that does not divide
        # the count (see the integration test).
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set("worker", 2).request("cpu", "1").pod_index_label(JOB_INDEX).obj(),
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment("worker")
                    .assignment("cpu", "unit-test-flavor", "2")
                    .count(2)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj(),
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            # gated Pod whose rank (1) exceeds len(rankToDomainID) (1)
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(PODSET, "worker")
            .label(JOB_INDEX, "1")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="CountsOnly",
        want_pods=[
            make_pod("w1", "ns").annotation(WL_ANN, "unit-test").label(PODSET, "worker").label(JOB_INDEX, "1").obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for kubeflow with invalid offset annotation - for all Pods",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set("launcher", 1)
                .request("cpu", "1")
                .pod_index_label(KF_REPLICA_INDEX)
                .pod_set_group("mpijob-group")
                .obj(),
                make_pod_set("worker", 3)
                .request("cpu", "1")
                .pod_index_label(KF_REPLICA_INDEX)
                .pod_set_group("mpijob-group")
                .obj(),
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment("launcher")
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj(),
                    make_pod_set_assignment("worker")
                    .assignment("cpu", "unit-test-flavor", "3")
                    .count(3)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 1).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj(),
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, "launcher")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "invalid")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "invalid")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "invalid")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, "launcher")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "invalid")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "invalid")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .annotation(OFFSET, "invalid")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, "worker")
            .topology_scheduling_gate()
            .obj(),
        ],
        want_err="offset",
    ),
    Case(
        "ranks: support rank-based ordering for kubeflow - for all Pods",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 4).request("cpu", "1").pod_index_label(KF_REPLICA_INDEX).obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for kubeflow - some Pods already scheduled",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 4).request("cpu", "1").pod_index_label(KF_REPLICA_INDEX).obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("l0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "launcher")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "0")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(KF_JOB_ROLE, "worker")
            .label(KF_REPLICA_INDEX, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for pod groups - for all Pods",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 4).request("cpu", "1").pod_index_label(POD_GROUP_INDEX).obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "0")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "1")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "3")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "0")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("w3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "3")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
    Case(
        "ranks: support rank-based ordering for pod groups - some Pods already scheduled",
        workloads=[
            make_workload("unit-test", "ns")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 4).request("cpu", "1").pod_index_label(POD_GROUP_INDEX).obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "4")
                    .count(4)
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(
                            make_topology_domain_assignment(["b1", "r1"], 2).obj(),
                            make_topology_domain_assignment(["b1", "r2"], 1).obj(),
                            make_topology_domain_assignment(["b2", "r1"], 1).obj(),
                        )
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
        ],
        pods=[
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "0")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "2")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .obj(),
            make_pod("w3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "3")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        node_selector_assert_mode="Exact",
        want_pods=[
            make_pod("w0", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "0")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w1", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "1")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("w2", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "2")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r2")
            .obj(),
            make_pod("w3", "ns")
            .annotation(WL_ANN, "unit-test")
            .label(POD_GROUP_INDEX, "3")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b2")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_counts=[
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r1",
                },
                count=2,
            ),
            S(
                node_selector={
                    BLOCK: "b1",
                    RACK: "r2",
                },
                count=1,
            ),
            S(
                node_selector={
                    BLOCK: "b2",
                    RACK: "r1",
                },
                count=1,
            ),
        ],
    ),
]

METRICS_CASES = [
    Case(
        "one workload for pod group with two pods; they remove the scheduling gates with different delays",
        is_group=True,
        pods=[
            make_pod("pod1", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .group_name_label("group")
            .group_total_count("2")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod2", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .group_name_label("group")
            .group_total_count("2")
            .obj(),
        ],
        workloads=[
            make_workload("group", "default")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 2).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "rf", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 2).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW - timedelta(seconds=2),
            )
            .admitted_at(True, NOW - timedelta(seconds=2))
            .obj(),
        ],
        want_pods=[
            make_pod("pod1", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .group_name_label("group")
            .group_total_count("2")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod2", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .group_name_label("group")
            .group_total_count("2")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_metrics_count=1,
        want_metrics_seconds=2,
        want_err=None,
    ),
    Case(
        "one workload for pod group with two pods; they remove the tas scheduling gates at the same time",
        is_group=True,
        pods=[
            make_pod("pod1", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .group_name_label("group")
            .group_total_count("2")
            .obj(),
            make_pod("pod2", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .topology_scheduling_gate()
            .group_name_label("group")
            .group_total_count("2")
            .obj(),
        ],
        workloads=[
            make_workload("group", "default")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 2).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "rf", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 2).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW - timedelta(seconds=2),
            )
            .admitted_at(True, NOW - timedelta(seconds=2))
            .obj(),
        ],
        want_pods=[
            make_pod("pod1", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .group_name_label("group")
            .group_total_count("2")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
            make_pod("pod2", "default")
            .annotation(WL_ANN, "group")
            .label(PODSET, MAIN)
            .group_name_label("group")
            .group_total_count("2")
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_metrics_count=2,
        want_metrics_seconds=4,
        want_err=None,
    ),
    Case(
        "one workload with one pod (no group)",
        is_group=False,
        pods=[
            make_pod("pod", "default").annotation(WL_ANN, "wl").label(PODSET, MAIN).topology_scheduling_gate().obj(),
        ],
        workloads=[
            make_workload("wl", "default")
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "rf", "1")
                    .topology_assignment(
                        make_topology_assignment(LEVELS)
                        .domains(make_topology_domain_assignment(["b1", "r1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW - timedelta(seconds=2),
            )
            .admitted_at(True, NOW - timedelta(seconds=2))
            .obj(),
        ],
        want_pods=[
            make_pod("pod", "default")
            .annotation(WL_ANN, "wl")
            .label(PODSET, MAIN)
            .node_selector(BLOCK, "b1")
            .node_selector(RACK, "r1")
            .obj(),
        ],
        want_metrics_count=1,
        want_metrics_seconds=2,
        want_err=None,
    ),
]


# --- running a case ---------------------------------------------------------------------------------


def _pod_path(pod: Mapping[str, Any]) -> str:
    meta = pod["metadata"]
    return k.object_path("v1", "pods", meta["namespace"], meta["name"])


def _reconcile(case: Case) -> tuple[list[dict[str, Any]], Retry | None]:
    """One reconcile of the first Workload's key; the pods as the API holds them after it."""
    kube = FakeKube()
    store = Store()
    for wl in case.workloads:
        meta = wl["metadata"]
        kube.put(k.object_path("kueue.x-k8s.io/v1beta2", "workloads", meta["namespace"], meta["name"]), wl)
        store.put(
            "workloads",
            kube.get(k.object_path("kueue.x-k8s.io/v1beta2", "workloads", meta["namespace"], meta["name"])) or {},
        )
    for pod in case.pods:
        kube.put(_pod_path(pod), pod)
    stop = threading.Event()
    ungater = tu.TopologyUngater(kube, store, k.SharedInformers(kube, stop), stop=stop, clock=lambda: NOW)
    ungater.on_pod_list([kube.get(_pod_path(p)) or {} for p in case.pods])
    first = case.workloads[0]["metadata"]
    key = f"{first['namespace']}/{first['name']}"
    if case.expect_uids:
        ungater.expectations.expect(key, case.expect_uids)
    err: Retry | None = None
    try:
        ungater.reconcile(key)
    except Retry as exc:
        err = exc
    finally:
        stop.set()
    pods = [p for path, p in sorted(kube.objects.items()) if path.startswith("/api/v1/")]
    return pods, err


def _view(pod: Mapping[str, Any], *, node_selector: bool) -> dict[str, Any]:
    """What the comparison looks at (empty collections equal absent ones)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    out = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "labels": meta.get("labels") or {},
        "annotations": meta.get("annotations") or {},
        "gates": spec.get("schedulingGates") or [],
        "phase": (pod.get("status") or {}).get("phase"),
    }
    if node_selector:
        out["nodeSelector"] = spec.get("nodeSelector") or {}
    return out


def _counts(pods: Sequence[Mapping[str, Any]]) -> dict[tuple[tuple[str, str], ...], int]:
    """Ungated, live pods per node selector (upstream's `extractCountsMapFromPods`)."""
    out: dict[tuple[tuple[str, str], ...], int] = {}
    for pod in pods:
        if tu.has_topology_gate(pod) or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        key = tuple(sorted(((pod.get("spec") or {}).get("nodeSelector") or {}).items()))
        out[key] = out.get(key, 0) + 1
    return out


_ERRORS = {"pending": "pending ungate operations", "offset": "failed to parse offset annotation"}


@pytest.mark.parametrize("case", RECONCILE_CASES, ids=lambda c: c.name)
def test_reconcile(case: Case) -> None:
    assert case.node_selector_assert_mode in ("Exact", "CountsOnly")
    pods, err = _reconcile(case)
    if case.want_err is None:
        assert err is None
    else:
        assert err is not None and _ERRORS[case.want_err] in str(err)
    exact = case.node_selector_assert_mode == "Exact"
    got = sorted((_view(p, node_selector=exact) for p in pods), key=lambda v: v["name"])
    want = sorted((_view(p, node_selector=exact) for p in case.want_pods), key=lambda v: v["name"])
    assert got == want
    want_counts = {tuple(sorted(c["nodeSelector"].items())): c["count"] for c in case.want_counts}
    assert _counts(pods) == want_counts


def _gate_removal_sample(suffix: str, is_group: bool) -> float:
    labels = {
        "name": TOPOLOGY_GATE,
        "cluster_queue": "cq",
        "is_group": "true" if is_group else "false",
        "replica_role": ROLE,
    }
    return (
        metrics.WORKER_REGISTRY.get_sample_value(f"kueue_pod_scheduling_gate_removal_seconds_{suffix}", labels) or 0.0
    )


@pytest.mark.parametrize("case", METRICS_CASES, ids=lambda c: c.name)
def test_record_pod_scheduling_gate_removal_seconds(case: Case) -> None:
    count_before = _gate_removal_sample("count", case.is_group)
    sum_before = _gate_removal_sample("sum", case.is_group)
    pods, err = _reconcile(case)
    assert err is None
    got = sorted((_view(p, node_selector=True) for p in pods), key=lambda v: v["name"])
    want = sorted((_view(p, node_selector=True) for p in case.want_pods), key=lambda v: v["name"])
    assert got == want
    assert _gate_removal_sample("count", case.is_group) - count_before == case.want_metrics_count
    assert _gate_removal_sample("sum", case.is_group) - sum_before == pytest.approx(case.want_metrics_seconds)


IS_TAS_CASES = {
    "no annotations": ({}, False),
    "PodSetPreferredTopologyAnnotation": ({"kueue.x-k8s.io/podset-preferred-topology": BLOCK}, True),
    "PodSetRequiredTopologyAnnotation": ({"kueue.x-k8s.io/podset-required-topology": RACK}, True),
    "PodSetSliceRequiredTopologyAnnotation": ({"kueue.x-k8s.io/podset-slice-required-topology": BLOCK}, True),
    "PodSetSliceRequiredTopologyConstraintsAnnotation": (
        {"kueue.x-k8s.io/podset-slice-required-topology-constraints": '[{"topology":"cloud.com/rack","size":2}]'},
        True,
    ),
    "PodSetUnconstrainedTopologyAnnotation": ({"kueue.x-k8s.io/podset-unconstrained-topology": "true"}, True),
    "unrelated annotation": ({"foo": "bar"}, False),
}


@pytest.mark.parametrize(("annotations", "want"), IS_TAS_CASES.values(), ids=IS_TAS_CASES.keys())
def test_is_tas(annotations: dict[str, str], want: bool) -> None:
    pod = make_pod("pod", "ns").obj()
    pod["metadata"]["annotations"] = annotations
    assert tu.is_tas(pod) is want
