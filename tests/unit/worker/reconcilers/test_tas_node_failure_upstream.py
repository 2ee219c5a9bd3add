"""Upstream's TAS node failure controller scenarios, run against a fake API.

Ported from upstream v0.19.2 `pkg/controller/tas/node_controller_test.go`: `TestNodeFailureReconciler`
(47 cases) and `TestGetWorkloadStatus` (6), case ids are upstream's names. Each reconciler case
stores its objects (with upstream's ResourceFlavor `unit-test-flavor`), feeds the nodes and pods to
the controller as its informers would, reconciles each requested node, and compares what a user
sees: the Workload's `status.unhealthyNodes` and Evicted condition, when the node is looked at again
(upstream's RequeueAfter), and the pods marked Failed with TerminatedByKueue.

Differences: `injectPatchError` (a failing status patch when a node is removed from
unhealthyNodes) is not reproduced: no such patch happens in its only case, whose expectations hold
as they are. `ignoreUnhealthyNodes` cases (upstream's fake client cannot clear a list through a
status patch) compare unhealthyNodes too, as a real API server shows them: cleared. Upstream's
"fixed-time marking enabled - marked" holds here only because the controller keeps a Workload it
just marked for a node NotReady too long (upstream's controller clears it again in the same
reconcile, which its fake client hides; see `tas_node_failure`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from tests.unit.worker.reconcilers.tas_builders import (
    HOSTNAME,
    MAIN,
    NOW,
    PODSET,
    WL_ANN,
    WL_FIN,
    Fixture,
    S,
    make_admission,
    make_node,
    make_pod,
    make_pod_set,
    make_pod_set_assignment,
    make_resource_flavor,
    make_topology_assignment,
    make_topology_domain_assignment,
    make_workload,
    ts,
)
from webhook import kube as k
from webhook.worker import events, workload_writes
from webhook.worker.reconcilers import tas_node_failure as tnf
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

NODE = "test-node-name"
NODE2 = "test-node-name-2"
NODE_UNASSIGNED = "unassigned-node"
WL = "test-workload"
NS = "default"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
POD_FINALIZER = "kueue.x-k8s.io/managed"
NODE_FAILURE_DELAY = tnf.NODE_FAILURE_DELAY
MULTIPLE_FAILURES = tnf.MULTIPLE_FAILURES
EARLIER = NOW - NODE_FAILURE_DELAY


# --- upstream's fixtures ----------------------------------------------------------------------------


def _on_hosts(domains: list[tuple[str, int]], pods: int, *, psa_count: int | None = None) -> Fixture:
    """A Workload admitted by TAS onto hostnames (`domains`: hostname, pod count)."""
    ta = make_topology_assignment([HOSTNAME]).domains(
        *(make_topology_domain_assignment([n], c).obj() for n, c in domains)
    )
    psa = make_pod_set_assignment(MAIN).assignment("cpu", "unit-test-flavor", "1")
    if psa_count is not None:
        psa.count(psa_count)
    wl = (
        make_workload(WL, NS)
        .finalizers(WL_FIN)
        .pod_sets(make_pod_set(MAIN, pods).request("cpu", "1").obj())
        .reserve_quota_at(make_admission("cq").pod_sets(psa.topology_assignment(ta.obj()).obj()).obj(), NOW)
        .admitted_at(True, NOW)
    )
    return Fixture(wl.obj())


def _with(base: Fixture, *, status: dict[str, Any] | None = None, condition: dict[str, Any] | None = None) -> Fixture:
    out = base.deep_copy()
    out["status"].update(status or {})
    if condition is not None:
        out["status"]["conditions"].append({**condition, "lastTransitionTime": ts(NOW)})
    return out


def _tas_pod(name: str) -> make_pod:
    return make_pod(name, NS).annotation(WL_ANN, WL).annotation(UNCONSTRAINED, "true")


base_workload = _on_hosts([(NODE, 1)], 1)
workload_reassigned = _on_hosts([(NODE2, 1)], 1)
workload_with_unhealthy_node = _with(base_workload, status={"unhealthyNodes": [{"name": NODE}]})
workload_with_two_nodes = _on_hosts([(NODE, 1), (NODE2, 1)], 2, psa_count=2)
workload_with_two_expected_pods = _on_hosts([(NODE, 2)], 2)
finished_workload = _with(base_workload, condition={"type": "Finished", "status": "True", "reason": "Finished"})
evicted_workload = _with(base_workload, condition={"type": "Evicted", "status": "True", "reason": "Evicted"})
base_pod = Fixture(_tas_pod("test-pod").status_phase("Running").node_name(NODE).obj())
pending_pod_with_selector = Fixture(
    _tas_pod("pending-pod-selector").node_selector(HOSTNAME, NODE).status_phase("Pending").obj()
)
gated_pod = Fixture(_tas_pod("gated-pod").topology_scheduling_gate().status_phase("Pending").obj())
stray_pod = Fixture(_tas_pod("stray-pod").node_selector(HOSTNAME, NODE_UNASSIGNED).status_phase("Pending").obj())
terminating_pod = base_pod.deep_copy()
terminating_pod["metadata"].update(deletionTimestamp=ts(NOW), finalizers=[POD_FINALIZER])
failed_pod = base_pod.deep_copy()
failed_pod["status"].update(phase="Failed", containerStatuses=[{"state": {"terminated": {"finishedAt": ts(NOW)}}}])
base_node = make_node(NODE)
unassigned_node = make_node(NODE_UNASSIGNED)

# TestGetWorkloadStatus's own fixtures.
GS_NODE_UNASSIGNED = "test-node-unassigned"
_READY = S(type="Ready", status="True", last_transition_time=NOW)
gs_base_workload = base_workload
gs_base_node = Fixture(make_node(NODE).status_conditions(_READY).obj())
gs_unassigned_node = Fixture(make_node(GS_NODE_UNASSIGNED).status_conditions(_READY).obj())
gs_base_pod = Fixture(
    make_pod("test-pod", NS).annotation(WL_ANN, WL).annotation(PREFERRED, "unconstrained").node_name(NODE).obj()
)
gs_stray_pod = Fixture(
    make_pod("stray-pod", NS)
    .annotation(WL_ANN, WL)
    .annotation(PREFERRED, "unconstrained")
    .node_selector(HOSTNAME, GS_NODE_UNASSIGNED)
    .status_phase("Pending")
    .obj()
)


@dataclass
class NodeCase:
    name: str
    init_objs: list[dict[str, Any]]
    reconcile_requests: list[dict[str, Any]]
    want_unhealthy_nodes: list[dict[str, Any]] | None = None
    want_requeue: timedelta | None = None
    want_evicted_cond: dict[str, Any] | None = None
    want_patched_pods: list[str] = field(default_factory=list)
    feature_gates: dict[str, bool] = field(default_factory=dict)
    ignore_unhealthy_nodes: bool = False
    want_error: bool = False
    inject_patch_error: bool = False


@dataclass
class StatusCase:
    name: str
    node: dict[str, Any]
    node_name: str
    init_objs: list[dict[str, Any]]
    want_status: str
    want_deleted: list[str] = field(default_factory=list)
    feature_gates: dict[str, bool] = field(default_factory=dict)


RECONCILER_CASES = [
    NodeCase(
        "Node Found and Healthy - not marked as unavailable",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="True", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
    ),
    NodeCase(
        "Node becomes healthy, it is removed from the list of nodes to replace",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="True", last_transition_time=NOW)).obj(),
            workload_with_unhealthy_node.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        ignore_unhealthy_nodes=True,
    ),
    NodeCase(
        "Node Found and Unhealthy (NotReady), delay not passed - not marked as unavailable",
        feature_gates={"TASReplaceNodeOnPodTermination": False, "TASReplaceNodeDueToNotReadyOverFixedTime": True},
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        want_requeue=NODE_FAILURE_DELAY,
    ),
    NodeCase(
        "Node Found and Unhealthy (NotReady), delay passed - marked as unavailable",
        feature_gates={"TASReplaceNodeOnPodTermination": False, "TASReplaceNodeDueToNotReadyOverFixedTime": True},
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node NotReady, delay passed, pod running, fixed-time marking disabled - not marked",
        feature_gates={"TASReplaceNodeDueToNotReadyOverFixedTime": False},
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
    ),
    NodeCase(
        "Node NotReady, delay passed, pod running, fixed-time marking enabled - marked",
        feature_gates={"TASReplaceNodeDueToNotReadyOverFixedTime": True},
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node NotReady, delay passed, pod running, both gates disabled - marked at the fixed time",
        feature_gates={
            "TASReplaceNodeDueToNotReadyOverFixedTime": False,
            "TASReplaceNodeOnPodTermination": False,
        },
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node NotReady, pod terminating, both gates disabled - marked",
        feature_gates={
            "TASReplaceNodeDueToNotReadyOverFixedTime": False,
            "TASReplaceNodeOnPodTermination": False,
        },
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            base_workload.deep_copy(),
            terminating_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node NotReady, pod terminating, marked as unavailable",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            base_workload.deep_copy(),
            terminating_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node NotReady, pod failed, marked as unavailable",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            failed_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node NotReady, pod failed, ReplaceNodeOnPodTermination feature gate off, requeued",
        feature_gates={"TASReplaceNodeOnPodTermination": False, "TASReplaceNodeDueToNotReadyOverFixedTime": True},
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            failed_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        want_requeue=NODE_FAILURE_DELAY,
    ),
    NodeCase(
        "Node NotReady, pod running, not marked as unavailable, requeued",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
    ),
    NodeCase(
        "Node NotReady, 2 succeeded pods, 1 running pod -> waits",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            workload_with_two_expected_pods.deep_copy(),
            make_pod("succeeded-pod-1", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Succeeded").obj(),
            make_pod("succeeded-pod-2", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Succeeded").obj(),
            make_pod("running-pod-2", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Running").obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
    ),
    NodeCase(
        "Node NotReady, 2 succeeded pods, 1 pending pod, 1 failed pod -> waits",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            workload_with_two_expected_pods.deep_copy(),
            make_pod("succeeded-pod-1", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Succeeded").obj(),
            make_pod("succeeded-pod-2", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Succeeded").obj(),
            make_pod("pending-pod-2", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Pending").obj(),
            make_pod("failed-pod-2", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Failed").obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
    ),
    NodeCase(
        "Node Deleted - marked as unavailable",
        init_objs=[
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node Deleted, late pod exists for reassigned workload -> UnhealthyNodes not polluted",
        init_objs=[
            workload_reassigned,
            make_pod("late-pod", NS)
            .annotation(WL_ANN, WL)
            .annotation(UNCONSTRAINED, "true")
            .node_selector(HOSTNAME, NODE)
            .status_phase("Pending")
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        ignore_unhealthy_nodes=False,
    ),
    NodeCase(
        "NodeReady missing, late pod exists for reassigned workload -> UnhealthyNodes not polluted",
        init_objs=[
            make_node(NODE).obj(),
            workload_reassigned,
            make_pod("late-pod", NS)
            .annotation(WL_ANN, WL)
            .annotation(UNCONSTRAINED, "true")
            .node_selector(HOSTNAME, NODE)
            .status_phase("Pending")
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        ignore_unhealthy_nodes=False,
    ),
    NodeCase(
        "Node NotReady, timer expired, patch fails during removal -> UnhealthyNodes not polluted",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            workload_reassigned,
            make_pod("late-pod", NS)
            .annotation(WL_ANN, WL)
            .annotation(UNCONSTRAINED, "true")
            .node_selector(HOSTNAME, NODE)
            .status_phase("Pending")
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        ignore_unhealthy_nodes=False,
        inject_patch_error=True,
        want_error=False,
    ),
    NodeCase(
        "Two Nodes Unhealthy (NotReady), delay passed - workload evicted",
        feature_gates={"TASReplaceNodeOnPodTermination": False, "TASReplaceNodeDueToNotReadyOverFixedTime": True},
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            base_node.clone()
            .name(NODE2)
            .status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER))
            .obj(),
            workload_with_two_nodes.deep_copy(),
            make_pod("pod1", NS).annotation(WL_ANN, WL).node_name(NODE).obj(),
            make_pod("pod2", NS).annotation(WL_ANN, WL).node_name(NODE2).obj(),
        ],
        reconcile_requests=[
            S(namespaced_name=S(name=NODE)),
            S(namespaced_name=S(name=NODE2)),
        ],
        want_unhealthy_nodes=None,
        want_evicted_cond=S(
            type="Evicted",
            status="True",
            reason="NodeFailures",
            message=MULTIPLE_FAILURES.format(NODE + ", " + NODE2),
        ),
        ignore_unhealthy_nodes=True,
    ),
    NodeCase(
        "Node has untolerated NoExecute taint -> Unhealthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": False,
            "TASReplaceNodeDueToNotReadyOverFixedTime": True,
        },
    ),
    NodeCase(
        "Node has NoExecute taint with TolerationSeconds -> Healthy (wait for eviction)",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 1)
                .request("cpu", "1")
                .toleration(
                    S(
                        key="foo",
                        effect="NoExecute",
                        operator="Exists",
                        toleration_seconds=300,
                    )
                )
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment([NODE], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        feature_gates={"TASReplaceNodeOnNodeTaints": True},
    ),
    NodeCase(
        "Node has NoExecute taint with TolerationSeconds, pod terminating -> Unhealthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 1)
                .request("cpu", "1")
                .toleration(
                    S(
                        key="foo",
                        effect="NoExecute",
                        operator="Exists",
                        toleration_seconds=300,
                    )
                )
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment([NODE], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
            terminating_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={"TASReplaceNodeOnNodeTaints": True},
    ),
    NodeCase(
        "Node has untolerated NoExecute taint, ReplaceNodeOnPodTermination on, pod running -> Healthy (wait)",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": True,
        },
    ),
    NodeCase(
        "Node has untolerated NoExecute taint, ReplaceNodeOnPodTermination on, pod terminating -> Unhealthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            base_workload.deep_copy(),
            terminating_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": True,
        },
    ),
    NodeCase(
        "Node has untolerated NoExecute taint, ReplaceNodeOnPodTermination on, no pods -> Unhealthy (immediate)",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            base_workload.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": True,
        },
    ),
    NodeCase(
        "Node has untolerated NoExecute taint, ReplaceNodeOnPodTermination off -> Unhealthy (Immediate)",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": False,
            "TASReplaceNodeDueToNotReadyOverFixedTime": True,
        },
    ),
    NodeCase(
        "Node has NoExecute taint with TolerationSeconds, ReplaceNodeOnPodTermination off -> Healthy (wait for eviction)",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 1)
                .request("cpu", "1")
                .toleration(
                    S(
                        key="foo",
                        effect="NoExecute",
                        operator="Exists",
                        toleration_seconds=300,
                    )
                )
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment([NODE], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": False,
            "TASReplaceNodeDueToNotReadyOverFixedTime": True,
        },
    ),
    NodeCase(
        "Node has NoExecute taint with TolerationSeconds, ReplaceNodeOnPodTermination off, pod terminating -> Unhealthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 1)
                .request("cpu", "1")
                .toleration(
                    S(
                        key="foo",
                        effect="NoExecute",
                        operator="Exists",
                        toleration_seconds=300,
                    )
                )
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment([NODE], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
            terminating_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": False,
            "TASReplaceNodeDueToNotReadyOverFixedTime": True,
        },
    ),
    NodeCase(
        "Node has NoExecute taint and pods missing -> Unhealthy (immediate)",
        init_objs=[
            make_node(NODE)
            .taints(
                S(
                    key="key1",
                    value="value1",
                    effect="NoExecute",
                )
            )
            .status_conditions(
                S(
                    type="Ready",
                    status="True",
                    last_transition_time=NOW,
                )
            )
            .obj(),
            base_workload.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
        },
    ),
    NodeCase(
        "Node has NoSchedule taint, ReplaceNodeOnPodTermination on, pod running -> Healthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
        },
    ),
    NodeCase(
        "Node has NoSchedule taint, ReplaceNodeOnPodTermination off, pod running -> Unhealthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            base_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": False,
            "TASReplaceNodeDueToNotReadyOverFixedTime": True,
        },
    ),
    NodeCase(
        "Node has NoSchedule taint, tolerated -> Healthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(
                make_pod_set(MAIN, 1)
                .request("cpu", "1")
                .toleration(
                    S(
                        key="foo",
                        effect="NoSchedule",
                        operator="Exists",
                    )
                )
                .obj()
            )
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment([NODE], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
    ),
    NodeCase(
        "Node has NoSchedule taint tolerated by assigned ResourceFlavor -> Healthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            make_resource_flavor("rf-toleration-flavor")
            .toleration(
                S(
                    key="foo",
                    effect="NoSchedule",
                    operator="Exists",
                )
            )
            .obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "rf-toleration-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment([NODE], 1).obj())
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
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
        },
    ),
    NodeCase(
        "Assigned node gets NoSchedule taint tolerated by AdmissionCheck PodSetUpdate -> Healthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment([HOSTNAME])
                        .domains(make_topology_domain_assignment([NODE], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .admission_checks(
                S(
                    name="check",
                    state="Ready",
                    pod_set_updates=[
                        S(
                            name=MAIN,
                            tolerations=[
                                S(
                                    key="foo",
                                    effect="NoSchedule",
                                    operator="Exists",
                                ),
                            ],
                        ),
                    ],
                )
            )
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
        },
    ),
    NodeCase(
        "Node NotReady, pod pending (assigned via nodeSelector) -> Unhealthy",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            pending_pod_with_selector,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node NotReady, pod pending (gated by TopologySchedulingGate) -> Unhealthy (immediate)",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            gated_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
    ),
    NodeCase(
        "Node has untolerated NoExecute taint, pod pending (assigned via nodeSelector) -> Unhealthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            base_workload.deep_copy(),
            pending_pod_with_selector,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
        },
    ),
    NodeCase(
        "Node has untolerated NoExecute taint, pod pending (gated by TopologySchedulingGate) -> Unhealthy (immediate)",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .taints(S(key="foo", effect="NoExecute"))
            .obj(),
            base_workload.deep_copy(),
            gated_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
        },
    ),
    NodeCase(
        "Node NotReady, pod pending, no hostname topology level -> Healthy (ignore)",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            make_workload(WL, NS)
            .finalizers(WL_FIN)
            .pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj())
            .reserve_quota_at(
                make_admission("cq")
                .pod_sets(
                    make_pod_set_assignment(MAIN)
                    .assignment("cpu", "unit-test-flavor", "1")
                    .topology_assignment(
                        make_topology_assignment(["rack"])
                        .domains(make_topology_domain_assignment(["rack-1"], 1).obj())
                        .obj()
                    )
                    .obj()
                )
                .obj(),
                NOW,
            )
            .admitted_at(True, NOW)
            .obj(),
            make_pod("pending-pod-rack", NS)
            .annotation(WL_ANN, WL)
            .node_selector("rack", "rack-1")
            .status_phase("Pending")
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
    ),
    NodeCase(
        "Node has NoSchedule taint, pod is Pending and on node, ReplaceNodeOnPodTermination on -> Unhealthy, pod patched",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .label(HOSTNAME, NODE)
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            base_workload.deep_copy(),
            make_pod("pending-pod", NS)
            .annotation(WL_ANN, WL)
            .annotation(UNCONSTRAINED, "true")
            .node_selector(HOSTNAME, NODE)
            .status_phase("Pending")
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        want_patched_pods=["pending-pod"],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": True,
        },
    ),
    NodeCase(
        "Node has NoSchedule taint, multiple pending pods, only matching one patched",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .label(HOSTNAME, NODE)
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            base_node.clone()
            .name(NODE2)
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .label(HOSTNAME, NODE2)
            .obj(),
            workload_with_two_nodes.deep_copy(),
            make_pod("pending-pod-1", NS)
            .annotation(WL_ANN, WL)
            .annotation(UNCONSTRAINED, "true")
            .label(PODSET, MAIN)
            .node_selector(HOSTNAME, NODE)
            .status_phase("Pending")
            .obj(),
            make_pod("pending-pod-2", NS)
            .annotation(WL_ANN, WL)
            .annotation(UNCONSTRAINED, "true")
            .label(PODSET, MAIN)
            .node_selector(HOSTNAME, NODE2)
            .status_phase("Pending")
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        want_patched_pods=["pending-pod-1"],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": True,
        },
    ),
    NodeCase(
        "Node has untolerated NoSchedule taint, pod is Gated -> Healthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .label(HOSTNAME, NODE)
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            base_workload.deep_copy(),
            gated_pod,
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": True,
        },
    ),
    NodeCase(
        "Node has untolerated NoSchedule taint, workload has no pods at all -> Unhealthy",
        init_objs=[
            base_node.clone()
            .status_conditions(S(type="Ready", status="True", last_transition_time=NOW))
            .label(HOSTNAME, NODE)
            .taints(S(key="foo", effect="NoSchedule"))
            .obj(),
            base_workload.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=[S(name=NODE)],
        feature_gates={
            "TASReplaceNodeOnNodeTaints": True,
            "TASReplaceNodeOnPodTermination": True,
        },
    ),
    NodeCase(
        "Workload without admission (nil Admission status) - handled safely",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="True", last_transition_time=NOW)).obj(),
            make_workload(WL, NS).finalizers(WL_FIN).pod_sets(make_pod_set(MAIN, 1).request("cpu", "1").obj()).obj(),
            make_pod("stray-pod-on-node", NS)
            .annotation(WL_ANN, WL)
            .annotation(UNCONSTRAINED, "true")
            .node_selector(HOSTNAME, NODE)
            .status_phase("Pending")
            .obj(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        want_patched_pods=["stray-pod-on-node"],
    ),
    NodeCase(
        "Node NotReady, workload missing TAS assignment but has late pod -> Workload marked Healthy, pod patched",
        init_objs=[
            unassigned_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
            base_workload.deep_copy(),
            stray_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE_UNASSIGNED))],
        want_unhealthy_nodes=None,
        want_patched_pods=["stray-pod"],
    ),
    NodeCase(
        "Node NotReady, finished workload on TAS node -> ignored",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            finished_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
    ),
    NodeCase(
        "Node NotReady, evicted workload on TAS node -> ignored",
        init_objs=[
            base_node.clone().status_conditions(S(type="Ready", status="False", last_transition_time=EARLIER)).obj(),
            evicted_workload.deep_copy(),
            base_pod.deep_copy(),
        ],
        reconcile_requests=[S(namespaced_name=S(name=NODE))],
        want_unhealthy_nodes=None,
        want_evicted_cond=S(
            type="Evicted",
            status="True",
            reason="Evicted",
        ),
    ),
]

STATUS_CASES = [
    StatusCase(
        "Healthy pod on assigned node",
        node=gs_base_node,
        node_name=NODE,
        init_objs=[gs_base_workload, gs_base_pod],
        want_status="healthy",
    ),
    StatusCase(
        "Workload not found returns workloadHealthy",
        node=gs_base_node,
        node_name=NODE,
        init_objs=[gs_base_pod],  # Only pod is created
        want_status="healthy",
    ),
    StatusCase(
        "Node Ready, TASReplaceNodeOnNodeTaints disabled -> Healthy",
        node=gs_base_node,
        node_name=NODE,
        init_objs=[gs_base_workload, gs_base_pod],
        want_status="healthy",
        feature_gates={"TASReplaceNodeOnNodeTaints": False},
    ),
    StatusCase(
        "Node NotReady, ReplaceNodeOnPodTermination disabled -> Unhealthy immediately",
        node=make_node(NODE).status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
        node_name=NODE,
        init_objs=[gs_base_workload, gs_base_pod],
        want_status="unhealthy",
        feature_gates={"TASReplaceNodeOnPodTermination": False, "TASReplaceNodeDueToNotReadyOverFixedTime": True},
    ),
    StatusCase(
        "Node NotReady, ReplaceNodeOnPodTermination enabled -> Healthy (Waiting for pod termination)",
        node=make_node(NODE).status_conditions(S(type="Ready", status="False", last_transition_time=NOW)).obj(),
        node_name=NODE,
        init_objs=[
            gs_base_workload.deep_copy(),
            make_pod("valid-pod", NS).annotation(WL_ANN, WL).node_name(NODE).status_phase("Running").obj(),
        ],
        want_status="healthy",
        feature_gates={"TASReplaceNodeOnPodTermination": True},
    ),
    StatusCase(
        "Stray pending pod on unassigned node gets terminated (expectedOnNode == 0)",
        node=gs_unassigned_node,
        node_name=GS_NODE_UNASSIGNED,
        init_objs=[
            gs_unassigned_node.deep_copy(),
            gs_base_workload.deep_copy(),
            gs_stray_pod.deep_copy(),
        ],
        want_status="healthy",  # Node gets healthy status (doesn't trigger workload eviction)
        want_deleted=["stray-pod"],
    ),
]


# --- running a case ---------------------------------------------------------------------------------


class Events(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.seen: list[tuple[str, str, str]] = []

    def emit(self, obj: Any, etype: str, reason: str, note: str, controller: str, *, action: str = "") -> None:
        self.seen.append((etype, reason, note))


_GATES = {
    "TASReplaceNodeOnPodTermination": "replace_on_pod_termination",
    "TASReplaceNodeOnNodeTaints": "replace_on_node_taints",
    "TASReplaceNodeDueToNotReadyOverFixedTime": "not_ready_over_fixed_time",
}


def _gates(overrides: dict[str, bool]) -> tnf.Gates:
    return tnf.Gates(**{_GATES[name]: on for name, on in overrides.items()})


def _path(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    kind = obj.get("kind", "Workload")
    if kind == "Workload":
        return workload_writes.path(obj)
    if kind == "Pod":
        return k.object_path("v1", "pods", meta["namespace"], meta["name"])
    if kind == "Node":
        return k.object_path("v1", "nodes", None, meta["name"])
    return k.object_path("kueue.x-k8s.io/v1beta2", "resourceflavors", None, meta["name"])


def _stored(objs: list[dict[str, Any]]) -> tuple[FakeKube, Store, list[dict[str, Any]], list[dict[str, Any]]]:
    """The objects in a fake API and the Manager's store; the nodes and pods as listed."""
    kube, store = FakeKube(), Store()
    nodes: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for obj in objs:
        kube.put(_path(obj), dict(obj))
        stored = kube.get(_path(obj)) or {}
        kind = obj.get("kind", "Workload")
        if kind == "Workload":
            store.put("workloads", stored)
        elif kind == "ResourceFlavor":
            store.put("resourceflavors", stored)
        else:
            (nodes if kind == "Node" else pods).append(stored)
    return kube, store, nodes, pods


@pytest.mark.parametrize("case", RECONCILER_CASES, ids=lambda c: c.name)
def test_node_failure_reconciler(case: NodeCase) -> None:
    kube, store, nodes, pods = _stored([make_resource_flavor("unit-test-flavor").obj(), *case.init_objs])
    stop = threading.Event()
    ctl = tnf.NodeFailureController(
        kube,
        store,
        k.SharedInformers(kube, stop),
        Events(),
        stop=stop,
        gates=_gates(case.feature_gates),
        clock=lambda: NOW,
    )
    for wl in store.list("workloads"):
        ctl.on_event("workloads", "ADDED", wl, None)
    ctl.on_node_list(nodes)
    ctl.on_pod_list(pods)
    requeued: list[float] = []
    ctl.queue.add_after = lambda key, delay, items=(): requeued.append(delay)  # type: ignore[method-assign]
    failed = False
    try:
        for req in case.reconcile_requests:
            try:
                ctl.reconcile(req["namespacedName"]["name"])
            except Retry:
                failed = True
    finally:
        stop.set()
    assert failed is case.want_error
    wl = kube.get(workload_writes.path(base_workload)) or {}
    got_nodes = (wl.get("status") or {}).get("unhealthyNodes") or []
    assert got_nodes == ([] if case.ignore_unhealthy_nodes else case.want_unhealthy_nodes or [])
    assert requeued == ([case.want_requeue.total_seconds()] if case.want_requeue else [])
    evicted = next((cond for cond in wl["status"].get("conditions") or () if cond["type"] == "Evicted"), None)
    if case.want_evicted_cond is None:
        assert evicted is None
    else:
        assert evicted is not None
        got = {key: evicted.get(key, "") for key in ("type", "status", "reason", "message")}
        assert got == {key: case.want_evicted_cond.get(key, "") for key in ("type", "status", "reason", "message")}
    for name in case.want_patched_pods:
        pod = kube.get(k.object_path("v1", "pods", NS, name))
        assert pod is not None
        assert pod["status"]["phase"] == "Failed"
        cond = next(c for c in pod["status"].get("conditions") or () if c["type"] == tnf.TERMINATED_CONDITION)
        assert (cond["status"], cond["reason"]) == ("True", tnf.TERMINATED_REASON)


@pytest.mark.parametrize("case", STATUS_CASES, ids=lambda c: c.name)
def test_get_workload_status(case: StatusCase) -> None:
    _, store, _, pods = _stored(list(case.init_objs))
    wl = store.get("workloads", f"{NS}/{WL}")
    on_node = tnf.pods_on_node(pods, wl, case.node_name) if wl is not None else []
    by_selector = tnf.pods_by_selector(pods, case.node_name).get(f"{NS}/{WL}", [])
    flavors = {"unit-test-flavor": {}}
    check = tnf.health(case.node, case.node_name, wl, on_node, by_selector, flavors, _gates(case.feature_gates))
    assert check.status.value == case.want_status
    assert [p["metadata"]["name"] for p in check.terminate] == case.want_deleted
