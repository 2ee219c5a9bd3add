"""Kubeflow's SparkApplication: the adapter the generic job reconcile works through.

`SparkApplication` fulfils `jobframework.interface.GenericJob` (with `JobWithoutCustomStop` and
`JobWithPodLabelSelector`) as upstream's `pkg/controller/jobs/sparkapplication/
sparkapplication_controller.go` does (upstream v0.19.2, alpha behind SparkApplicationIntegration),
over the podSets of `webhook.api.spark`: started and stopped through `spec.suspend`; the Spark
operator then runs spark-submit, which makes the driver pod, which makes the executors. A role has
no pod template the admission could go into, so each podSet's admission (annotations, labels, node
selector, tolerations) goes into the role's own `SparkPodSpec` fields (`spec.driver`,
`spec.executor`), and its scheduling gates into the role's `template` (made with the role's one
Spark container when there is none). A global `spec.nodeSelector` is the base of both roles' node
selectors and is cleared when the application starts (the operator takes the global one over the
roles'). On stop, the roles get their podSets' fields back and the executors their count.

Finished: the operator's `status.applicationState.state` COMPLETED (a success), FAILED or
SUBMISSION_FAILED, with its `errorMessage`. Active while RUNNING; PodsReady once RUNNING with every
requested executor RUNNING or COMPLETED in `status.executorState`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from webhook.api import constants as c
from webhook.api import jobs, spark
from webhook.api import objects as o
from webhook.api.integrations import SPARK_APPLICATION
from webhook.api.objects import Obj
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import StartConflict, SuspendedBySpec
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring

__all__ = [
    "INTEGRATION",
    "SparkApplication",
    "SparkApplicationReconciler",
    "finished",
    "plan",
    "pod_sets",
    "pods_ready",
    "restore_patch",
    "setup",
    "start_patch",
    "workload_name",
]

log = logging.getLogger(__name__)

_READY_EXECUTOR_STATES = ("RUNNING", "COMPLETED")  # ExecutorStateRunning, ExecutorStateCompleted


# == pure builders ================================================================================
def finished(obj: Obj) -> tuple[str, str] | None:
    """`Finished`: COMPLETED is a success, FAILED and SUBMISSION_FAILED failures, each with the
    state's `errorMessage`."""
    state = spark.app_state(obj)
    if state.get("state") not in spark.FINISHED_STATES:
        return None
    ok = state.get("state") == spark.SUCCEEDED
    return (c.FinishedReason.SUCCEEDED if ok else c.FinishedReason.FAILED), str(state.get("errorMessage") or "")


def pods_ready(obj: Obj) -> bool:
    """`PodsReady`: the application RUNNING (its driver runs) and at least `spec.executor.instances`
    executors RUNNING or COMPLETED: the state alone turns RUNNING with the driver, while executors
    may still wait for room."""
    if spark.app_state(obj).get("state") != spark.RUNNING:
        return False
    expected = spark.executor_instances(obj)
    states = ((obj.get("status") or {}).get("executorState") or {}).values()
    return expected == 0 or sum(1 for s in states if s in _READY_EXECUTOR_STATES) >= expected


def pod_sets(obj: Obj, *, tas: bool = False) -> list[dict[str, Any]]:
    """`PodSets` (`webhook.api.spark.pod_sets`); with the TopologyAwareScheduling gate, each role's
    topology request from its annotations. Raises ValueError with Go's message."""
    out = spark.pod_sets(obj)
    if tas:
        for ps in out:
            req = podset.template_topology_request(ps["template"])
            if req is not None:
                ps["topologyRequest"] = req
    return out


def _gates(own: Mapping[str, Any]) -> list[Obj]:
    return list(((own.get("template") or {}).get("spec") or {}).get("schedulingGates") or ())


def _as_template(own: Mapping[str, Any], node_selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The role's admission-related fields laid out as a pod template's, so `podset` can read and
    patch them: its annotations, labels, node selector (`node_selector` in its place when given),
    tolerations, and its template's scheduling gates."""
    return {
        "metadata": {"annotations": own.get("annotations") or {}, "labels": own.get("labels") or {}},
        "spec": {
            "nodeSelector": own.get("nodeSelector") if node_selector is None else node_selector,
            "tolerations": own.get("tolerations") or [],
            "schedulingGates": _gates(own),
        },
    }


def _role_patch(obj: Obj, role: str, want: podset.PodSetInfo) -> tuple[dict[str, Any], bool]:
    """(the merge patch of `spec.<role>` that gives the role `want`'s fields, whether any of them
    changes); a role without a template gets the empty one (`empty<Role>PodTemplateSpec`) either way."""
    own = spark.role_spec(obj, role)
    patch: dict[str, Any] = {}
    changes = podset.template_patch(_as_template(own), want) or {}
    meta, spec = changes.get("metadata") or {}, changes.get("spec") or {}
    for key in ("annotations", "labels"):
        if key in meta:
            patch[key] = meta[key]
    for key in ("nodeSelector", "tolerations"):
        if key in spec:
            patch[key] = spec[key]
    if own.get("template") is None:
        template = spark.empty_template(role)
        if want.scheduling_gates:
            template["spec"]["schedulingGates"] = list(want.scheduling_gates)
        patch["template"] = template
    elif "schedulingGates" in spec:
        patch["template"] = {"spec": {"schedulingGates": spec["schedulingGates"]}}
    return patch, bool(changes)


def start_patch(
    obj: Obj,
    wl: Obj,
    flavors: Mapping[str, Obj],
    *,
    tas: bool = False,
    assign_queue_labels: bool = True,
    elastic: bool = False,
) -> dict[str, Any]:
    """`RunWithPodSetsInfo`: unsuspend, and merge each podSet's admission into its role's fields, on
    the global node selector when there is one (then cleared); `flavors`: ResourceFlavor name →
    object. Raises `StartConflict` when the admission cannot be applied and `podset.FlavorNotFound`
    while a flavor is not known yet."""
    spec = obj.get("spec") or {}
    global_selector = spec.get("nodeSelector")
    body: dict[str, Any] = {"suspend": False}
    try:
        infos = podset.from_admission(
            wl,
            {name: (rf.get("spec") or {}) for name, rf in flavors.items()},
            tas=tas,
            assign_queue_labels=assign_queue_labels,
            elastic=elastic,
        )
        if len(infos) != len(spark.ROLES):
            raise podset.PermanentError(podset.bad_length(len(spark.ROLES), len(infos)))
        for role, info in zip(spark.ROLES, infos, strict=True):
            own = spark.role_spec(obj, role)
            base = podset.PodSetInfo.of_template(_as_template(own, global_selector))
            body[role], _ = _role_patch(obj, role, podset.merge(base, info, elastic=elastic))
    except podset.PermanentError as exc:
        raise StartConflict(str(exc)) from exc
    if global_selector is not None:
        body["nodeSelector"] = None
    return o.guarded_patch(obj, spec=body)


def _restore(obj: Obj, wl: Obj | None) -> tuple[dict[str, Any], bool] | None:
    """`RestorePodSetsInfo`'s writes as a `spec` patch (each role's fields from its podSet in `wl`,
    the executors' count, the global node selector cleared) and whether upstream counts them as a
    change (the count and a made template alone do not); None without a Workload or when its podSet
    count is not two (upstream skips the restore then)."""
    if wl is None:
        return None
    wanted: list[Obj] = list((wl.get("spec") or {}).get("podSets") or ())
    if len(wanted) != len(spark.ROLES):
        log.debug(
            "pod set count differs from the application's, not restoring",
            extra={"object": o.key(obj), "expected": len(spark.ROLES), "got": len(wanted)},
        )
        return None
    body: dict[str, Any] = {}
    changed = False
    for role, ps in zip(spark.ROLES, wanted, strict=True):
        body[role], role_changed = _role_patch(obj, role, podset.PodSetInfo.of_template(ps.get("template") or {}))
        changed = changed or role_changed
    body[spark.EXECUTOR]["instances"] = int(wanted[1].get("count", 1))
    if (obj.get("spec") or {}).get("nodeSelector") is not None:
        body["nodeSelector"] = None
        changed = True
    return body, changed


def restore_patch(obj: Obj, wl: Obj | None) -> dict[str, Any] | None:
    """`RestorePodSetsInfo` on its own: the patch when it changes something, else None."""
    restored = _restore(obj, wl)
    if restored is None or not restored[1]:
        return None
    return o.guarded_patch(obj, spec=restored[0])


# == the adapter ==================================================================================
class SparkApplication(SuspendedBySpec):
    """A SparkApplication as a `GenericJob` (with `JobWithoutCustomStop`, `JobWithPodLabelSelector`)."""

    __slots__ = ("obj", "tas")
    api_version = SPARK_APPLICATION.api_version
    kind = SPARK_APPLICATION.kind
    group = SPARK_APPLICATION.group

    def __init__(self, obj: Obj, *, tas: bool = False) -> None:
        self.obj = obj
        self.tas = tas

    def is_suspended(self) -> bool:
        return spark.is_suspended(self.obj)

    def is_active(self) -> bool:
        """`IsActive`: the application is RUNNING."""
        return spark.app_state(self.obj).get("state") == spark.RUNNING

    def finished(self) -> tuple[str, str] | None:
        return finished(self.obj)

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        return pod_sets(self.obj, tas=self.tas)

    def pods_ready(self) -> bool:
        return pods_ready(self.obj)

    def stop_patch(self, wl: Obj | None) -> dict[str, Any]:
        """`stopJob` without a custom stop: suspend and everything the restore writes, one update."""
        patch = self.suspend_patch(stopping=False)
        restored = _restore(self.obj, wl)
        if restored is not None:
            patch["spec"].update(restored[0])
        return patch

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        return start_patch(self.obj, wl, flavors, tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic)

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        return restore_patch(self.obj, wl)

    def pod_label_selector(self) -> str:
        return spark.pod_label_selector(self.obj)


plan = fw.OwnedKindPlan(lambda obj, tas: SparkApplication(obj, tas=tas))
"""One reconcile of a SparkApplication (`ReconcileGenericJob`)."""

INTEGRATION = Integration.of_family(SPARK_APPLICATION, SparkApplication)
"""SparkApplications for the generic executor."""


def workload_name(name: str, uid: str, *, short: bool = False) -> str:
    """`GetWorkloadNameForSparkApplication`: the Workload name of the application `name`."""
    return jobs.workload_name(name, uid, kind=SparkApplication.kind, group=SparkApplication.group, short=short)


# == I/O ==========================================================================================
class SparkApplicationReconciler(OwnedJobReconciler, plan=plan, integration=INTEGRATION):
    """The SparkApplication reconciler: the generic one over `SparkApplication`."""


def setup(ctx: SetupContext) -> Wiring:
    """The integration in the worker: every SparkApplication is watched, none while the Spark
    operator's CRD is not installed."""
    return SparkApplicationReconciler.wiring(
        ctx, Resource(SPARK_APPLICATION.resource, SPARK_APPLICATION.api_version, optional=True)
    )
