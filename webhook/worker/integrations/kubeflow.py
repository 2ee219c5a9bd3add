"""Kubeflow's replica-spec jobs (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob of the
training-operator v1, and the mpi-operator's v2beta1 MPIJob): one adapter for the six kinds.

`KubeflowJob` fulfils `jobframework.interface.GenericJob` (with `JobWithoutCustomStop` and
`JobWithPriorityClass`) as upstream's shared `KubeflowJob`
(`pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go`) and its `MPIJob`
(`pkg/controller/jobs/mpijob/mpijob_controller.go`, upstream v0.19.2) do; the two differ only in
their kind's row (`webhook.api.kubeflow`): one podSet per replica type present, in the kind's
order, of `replicas` pods (default 1); suspended through `spec.runPolicy.suspend`, with each
replica type's pod template carrying its podSet's admission while it runs; finished on a
Succeeded or Failed condition; active while a replica type has active pods; PodsReady on the
Running condition. Neither has a custom stop: upstream's `stopJob` suspends the job and puts the
templates back in one patch. Every kind is always a top-level job here, unless an enabled
integration controls it (a PyTorchJob in an AppWrapper), which then runs it.

`setup` serves whichever row the worker sets up (`SetupContext.framework`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

from webhook.api import constants as c
from webhook.api import jobs
from webhook.api import kubeflow as kf
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import StartConflict, SuspendedBySpec
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring

__all__ = [
    "INTEGRATIONS",
    "RECONCILERS",
    "JAXJobReconciler",
    "KubeflowJob",
    "MPIJobReconciler",
    "PaddleJobReconciler",
    "PyTorchJobReconciler",
    "TFJobReconciler",
    "XGBoostJobReconciler",
    "finished_condition",
    "is_active",
    "kind_plan",
    "pod_sets",
    "pods_ready",
    "restore_patch",
    "setup",
    "start_patch",
    "workload_name",
]

log = logging.getLogger(__name__)


# == pure builders ================================================================================
def is_active(job: Obj) -> bool:
    """`IsActive`: some replica type reports active pods."""
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    return any(int((s or {}).get("active") or 0) != 0 for s in statuses.values())


def finished_condition(job: Obj) -> tuple[str, str] | None:
    """`Finished`: the first Succeeded or Failed condition that is True, with its message."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Succeeded", "Failed") and cond.get("status") == "True":
            reason = c.FinishedReason.FAILED if cond["type"] == "Failed" else c.FinishedReason.SUCCEEDED
            return reason, str(cond.get("message") or "")
    return None


def pods_ready(job: Obj) -> bool:
    """`PodsReady`: the Running condition is True."""
    return any(
        cond.get("type") == "Running" and cond.get("status") == "True"
        for cond in (job.get("status") or {}).get("conditions") or ()
    )


def pod_sets(job: Obj, kind: kf.Kind, *, tas: bool = False) -> list[dict[str, Any]]:
    """`PodSets` (`webhook.api.kubeflow.pod_sets`); with the TopologyAwareScheduling gate each
    carries its template's topology request, indexed by the replica index label. Raises ValueError
    with Go's message for an unparsable topology annotation."""
    out = kf.pod_sets(job, kind)
    if tas:
        for ps in out:
            ps["topologyRequest"] = podset.topology_request(
                (ps["template"].get("metadata") or {}).get("annotations") or {},
                pod_index_label=kf.REPLICA_INDEX_LABEL,
            )
    return out


def _guarded(job: Obj, kind: kf.Kind, templates: Mapping[str, dict[str, Any]], **run_policy: Any) -> dict[str, Any]:
    """A merge patch of `runPolicy` and the replica types' templates (`templates`: replica type →
    template patch), guarded by the job's resourceVersion as upstream's update is."""
    spec: dict[str, Any] = {}
    if run_policy:
        spec["runPolicy"] = run_policy
    if templates:
        spec[kind.replica_specs_field] = {t: {"template": patch} for t, patch in templates.items()}
    return o.guarded_patch(job, spec=spec)


def _template(job: Obj, kind: kf.Kind, replica_type: str) -> Obj:
    return kf.replica_specs(job, kind)[replica_type].get("template") or {}


def start_patch(
    job: Obj,
    kind: kf.Kind,
    wl: Obj,
    flavors: Mapping[str, Obj],
    *,
    tas: bool = False,
    assign_queue_labels: bool = True,
    elastic: bool = False,
) -> dict[str, Any]:
    """`RunWithPodSetsInfo`: unsuspend, and merge each podSet's admission (flavors' node labels and
    tolerations, queue labels, admission checks' updates) into its replica type's pod template,
    matched by position; `flavors`: ResourceFlavor name → object. Raises `StartConflict` when the
    admission cannot be applied and `podset.FlavorNotFound` while a flavor is not known yet."""
    types = kf.ordered_replica_types(job, kind)
    templates: dict[str, dict[str, Any]] = {}
    try:
        infos = podset.from_admission(
            wl,
            {name: (rf.get("spec") or {}) for name, rf in flavors.items()},
            tas=tas,
            assign_queue_labels=assign_queue_labels,
            elastic=elastic,
        )
        if len(infos) != len(types):
            raise podset.PermanentError(podset.bad_length(len(types), len(infos)))
        for replica_type, info in zip(types, infos, strict=True):
            template = _template(job, kind, replica_type)
            merged = podset.merge(podset.PodSetInfo.of_template(template), info, elastic=elastic)
            patch = podset.template_patch(template, merged)
            if patch is not None:
                templates[replica_type] = patch
    except podset.PermanentError as exc:
        raise StartConflict(str(exc)) from exc
    return _guarded(job, kind, templates, suspend=False)


def restore_patch(job: Obj, kind: kf.Kind, wl: Obj | None) -> dict[str, Any] | None:
    """`RestorePodSetsInfo`: each replica type's pod template back to its podSet's in `wl`
    (annotations, labels, node selector, tolerations, scheduling gates), matched by position.
    None when nothing would change, without a Workload, or when the podSet count differs from the
    replica types' (upstream skips the restore then)."""
    if wl is None:
        return None
    wanted = (wl.get("spec") or {}).get("podSets") or ()
    types = kf.ordered_replica_types(job, kind)
    if len(wanted) != len(types):
        log.debug(
            "pod set count differs from the replica types', not restoring",
            extra={"object": o.key(job), "expected": len(types), "got": len(wanted)},
        )
        return None
    templates: dict[str, dict[str, Any]] = {}
    for replica_type, ps in zip(types, wanted, strict=True):
        info = podset.PodSetInfo.of_template(ps.get("template") or {})
        patch = podset.template_patch(_template(job, kind, replica_type), info)
        if patch is not None:
            templates[replica_type] = patch
    return _guarded(job, kind, templates) if templates else None


# == the adapter ==================================================================================
class KubeflowJob(SuspendedBySpec):
    """A Kubeflow job of `kind` as a `GenericJob` (with `JobWithoutCustomStop` and
    `JobWithPriorityClass`)."""

    __slots__ = ("kf_kind", "obj", "tas")

    def __init__(self, obj: Obj, kind: kf.Kind, *, tas: bool = False) -> None:
        self.obj = obj
        self.kf_kind = kind
        self.tas = tas  # the TopologyAwareScheduling gate: podSets carry the templates' topology requests

    @property
    def api_version(self) -> str:
        return self.kf_kind.framework.api_version

    @property
    def kind(self) -> str:
        return self.kf_kind.framework.kind

    @property
    def group(self) -> str:
        return self.kf_kind.framework.group

    def is_suspended(self) -> bool:
        return kf.is_suspended(self.obj)

    def is_active(self) -> bool:
        return is_active(self.obj)

    def finished(self) -> tuple[str, str] | None:
        return finished_condition(self.obj)

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        return pod_sets(self.obj, self.kf_kind, tas=self.tas)

    def pods_ready(self) -> bool:
        return pods_ready(self.obj)

    def priority_class(self) -> str:
        return kf.priority_class(self.obj, self.kf_kind)

    def suspend_patch(self, *, stopping: bool) -> dict[str, Any]:
        """`Suspend`; a Kubeflow job is never marked as being stopped (its stop is one patch)."""
        return o.guarded_patch(self.obj, spec={"runPolicy": {"suspend": True}})

    def stop_patch(self, wl: Obj | None) -> dict[str, Any]:
        """`stopJob` without a custom stop: suspend and restore the templates from `wl`, one patch."""
        patch = self.suspend_patch(stopping=False)
        restore = restore_patch(self.obj, self.kf_kind, wl)
        if restore is not None:
            patch["spec"].update(restore["spec"])
        return patch

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        return start_patch(
            self.obj, self.kf_kind, wl, flavors, tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic
        )

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        return restore_patch(self.obj, self.kf_kind, wl)


def workload_name(kind: kf.Kind, name: str, uid: str, *, short: bool = False) -> str:
    """`GetWorkloadNameFor<Kind>`: the Workload name of the job `name` of `kind` (`short`: gate
    ShortWorkloadNames)."""
    return jobs.workload_name(name, uid, kind=kind.framework.kind, group=kind.framework.group, short=short)


# == the plan =====================================================================================
def kind_plan(kind: kf.Kind) -> fw.OwnedKindPlan:
    """One reconcile of a job of `kind` (`ReconcileGenericJob`); a job an enabled integration controls
    (an AppWrapper's) is that integration's."""
    return fw.OwnedKindPlan(lambda obj, tas: KubeflowJob(obj, kind, tas=tas))


INTEGRATIONS: Mapping[str, Integration] = {
    name: Integration.of_family(kind.framework, functools.partial(KubeflowJob, kind=kind))
    for name, kind in kf.KINDS.items()
}
"""Each kind's jobs for the generic executor, by kind."""


# == I/O ==========================================================================================
class PyTorchJobReconciler(
    OwnedJobReconciler, plan=kind_plan(kf.PYTORCHJOB), integration=INTEGRATIONS[kf.PYTORCHJOB.name]
):
    """The PyTorchJob reconciler: the generic one over `KubeflowJob`."""


class TFJobReconciler(OwnedJobReconciler, plan=kind_plan(kf.TFJOB), integration=INTEGRATIONS[kf.TFJOB.name]):
    """The TFJob reconciler: the generic one over `KubeflowJob`."""


class XGBoostJobReconciler(
    OwnedJobReconciler, plan=kind_plan(kf.XGBOOSTJOB), integration=INTEGRATIONS[kf.XGBOOSTJOB.name]
):
    """The XGBoostJob reconciler: the generic one over `KubeflowJob`."""


class PaddleJobReconciler(
    OwnedJobReconciler, plan=kind_plan(kf.PADDLEJOB), integration=INTEGRATIONS[kf.PADDLEJOB.name]
):
    """The PaddleJob reconciler: the generic one over `KubeflowJob`."""


class JAXJobReconciler(OwnedJobReconciler, plan=kind_plan(kf.JAXJOB), integration=INTEGRATIONS[kf.JAXJOB.name]):
    """The JAXJob reconciler: the generic one over `KubeflowJob`."""


class MPIJobReconciler(OwnedJobReconciler, plan=kind_plan(kf.MPIJOB), integration=INTEGRATIONS[kf.MPIJOB.name]):
    """The MPIJob reconciler: the generic one over `KubeflowJob`."""


RECONCILERS: Mapping[str, type[OwnedJobReconciler]] = {
    kf.PYTORCHJOB.name: PyTorchJobReconciler,
    kf.TFJOB.name: TFJobReconciler,
    kf.XGBOOSTJOB.name: XGBoostJobReconciler,
    kf.PADDLEJOB.name: PaddleJobReconciler,
    kf.JAXJOB.name: JAXJobReconciler,
    kf.MPIJOB.name: MPIJobReconciler,
}
"""Each kind's reconciler, by kind."""


def setup(ctx: SetupContext) -> Wiring:
    """The integration of `ctx.framework` in the worker: every job of its kind is watched, none
    while its operator's CRD is not installed."""
    framework = ctx.framework
    if framework is None or framework.kind not in RECONCILERS:
        raise ValueError(f"not a Kubeflow replica-spec framework: {framework}")
    return RECONCILERS[framework.kind].wiring(ctx, Resource(framework.resource, framework.api_version, optional=True))
