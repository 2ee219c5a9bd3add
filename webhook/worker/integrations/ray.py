"""KubeRay's RayCluster, RayJob and RayService: one adapter for the three kinds.

`RayObject` fulfils `jobframework.interface.GenericJob` (with `JobWithoutCustomStop` and
`JobWithPodLabelSelector`, for the elastic ungater) as upstream's
`pkg/controller/jobs/raycluster/raycluster_controller.go`, `rayjob/rayjob_controller.go` and
`rayservice/rayservice_controller.go` do (upstream v0.19.2), over the podSets of
`webhook.api.ray`: suspended through a RayJob's `spec.suspend` or the RayClusterSpec's `suspend`,
each podSet's pod template (head, worker groups, a K8sJobMode RayJob's submitter) carrying its
admission while it runs. None has a custom stop: upstream's `stopJob` suspends it and puts the
templates back in one patch. A RayCluster is never finished (KubeRay keeps it up) and neither is a
RayService; a RayJob finishes when its deployment is Complete or Failed, a success when the Ray job
SUCCEEDED. PodsReady: the cluster is `ready` (a RayService: its Ready condition).

Skipped as upstream's `JobWithSkip`: a RayJob naming an existing cluster (`clusterSelector`); with
DeferRayServiceFinalizationForRedisCleanup, a GCS fault-tolerant RayService being deleted (its
Workload stays until KubeRay's Redis cleanup Job is done). A RayCluster KubeRay made for a RayJob
or RayService is run by its owner's integration. Not mirrored: a RayJob's `IsOnHold` (KubeRay's
ValidationFailed), and for an elastic RayJob or RayService with in-tree autoscaling the worker
counts read back from its RayCluster (`UpdatePodSets`, with the Workload's replica-size and
cluster-generation annotations): the webhook refuses that combination instead.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api import constants as c
from webhook.api import jobs, ray
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import StartConflict, SuspendedBySpec
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring

__all__ = [
    "INTEGRATIONS",
    "RECONCILERS",
    "RayClusterReconciler",
    "RayJobReconciler",
    "RayObject",
    "RayServiceReconciler",
    "finished",
    "is_active",
    "kind_plan",
    "pod_label_selector",
    "pod_sets",
    "pods_ready",
    "restore_patch",
    "setup",
    "start_patch",
    "workload_name",
]

log = logging.getLogger(__name__)

_READY = "ready"  # rayv1.Ready
_DONE_DEPLOYMENTS = ("Complete", "Failed")
_IDLE_DEPLOYMENTS = ("Suspended", "")  # JobDeploymentStatusSuspended, JobDeploymentStatusNew


# == pure builders ================================================================================
def _status(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _service_ready(obj: Obj) -> bool:
    return any(x.get("type") == "Ready" and x.get("status") == "True" for x in _status(obj).get("conditions") or ())


def is_active(obj: Obj, kind: ray.Kind) -> bool:
    """`IsActive`: a RayCluster `ready`; a RayJob whose deployment is neither Suspended nor New; a
    RayService Ready."""
    if kind is ray.RAYCLUSTER:
        return _status(obj).get("state") == _READY
    if kind is ray.RAYJOB:
        return _status(obj).get("jobDeploymentStatus", "") not in _IDLE_DEPLOYMENTS
    return _service_ready(obj)


def pods_ready(obj: Obj, kind: ray.Kind) -> bool:
    """`PodsReady`: the cluster (a RayJob's `status.rayClusterStatus`) is `ready`; a RayService is Ready."""
    if kind is ray.RAYCLUSTER:
        return _status(obj).get("state") == _READY
    if kind is ray.RAYJOB:
        return (_status(obj).get("rayClusterStatus") or {}).get("state") == _READY
    return _service_ready(obj)


def finished(obj: Obj, kind: ray.Kind) -> tuple[str, str] | None:
    """`Finished`: only a RayJob ends, once its deployment is Complete or Failed; a success when the
    Ray job SUCCEEDED, with `status.message`."""
    if kind is not ray.RAYJOB or _status(obj).get("jobDeploymentStatus") not in _DONE_DEPLOYMENTS:
        return None
    ok = _status(obj).get("jobStatus") == "SUCCEEDED"
    return (c.FinishedReason.SUCCEEDED if ok else c.FinishedReason.FAILED), str(_status(obj).get("message") or "")


def pod_label_selector(obj: Obj, kind: ray.Kind) -> str:
    """`PodLabelSelector`: `ray.io/cluster=<its cluster>`, a RayCluster's own name, a RayJob's
    `status.rayClusterName`, a RayService's active cluster; '' while there is none."""
    if kind is ray.RAYCLUSTER:
        cluster = o.name(obj)
    elif kind is ray.RAYJOB:
        cluster = str(_status(obj).get("rayClusterName") or "")
    else:
        cluster = str((_status(obj).get("activeServiceStatus") or {}).get("rayClusterName") or "")
    return f"{ray.RAY_CLUSTER_LABEL}={cluster}" if cluster else ""


def pod_sets(obj: Obj, kind: ray.Kind, *, tas: bool = False) -> list[dict[str, Any]]:
    """`PodSets` (`webhook.api.ray.pod_sets`); with the TopologyAwareScheduling gate, each
    template's topology request. Raises ValueError with Go's message for a podSet that cannot be
    built."""
    out = ray.pod_sets(obj, kind)
    if tas:
        for ps in out:
            req = podset.template_topology_request(ps["template"])
            if req is not None:
                ps["topologyRequest"] = req
    return out


def _nest(kind: ray.Kind, cluster: dict[str, Any]) -> dict[str, Any]:
    """`cluster` (a RayClusterSpec patch) at the kind's place in the object, from `spec` down."""
    body = cluster
    for key in reversed(kind.cluster_spec_path[1:]):
        body = {key: body}
    return body


def _submitter_mode(obj: Obj, kind: ray.Kind) -> bool:
    return kind is ray.RAYJOB and (obj.get("spec") or {}).get("submissionMode") == ray.K8S_JOB_MODE


def _templates_patch(
    obj: Obj, kind: ray.Kind, infos: Sequence[podset.PodSetInfo], *, merge: bool, elastic: bool = False
) -> dict[str, Any] | None:
    """The `spec` merge patch that gives each podSet's template `infos[i]` (merged into what it has
    with `merge`, as `RunWithPodSetsInfo`; set as it is without, as `RestorePodSetsInfo`): the head's
    template key by key, the worker groups' list whole (a merge patch replaces lists), a
    K8sJobMode RayJob's submitter template last. None when nothing would change."""
    spec = ray.cluster_spec(obj, kind) or {}

    def want(template: Obj, info: podset.PodSetInfo) -> podset.PodSetInfo:
        return podset.merge(podset.PodSetInfo.of_template(template), info, elastic=elastic) if merge else info

    cluster: dict[str, Any] = {}
    head = (spec.get("headGroupSpec") or {}).get("template") or {}
    head_patch = podset.template_patch(head, want(head, infos[0]))
    if head_patch is not None:
        cluster["headGroupSpec"] = {"template": head_patch}
    groups = [copy.deepcopy(dict(g)) for g in spec.get("workerGroupSpecs") or ()]
    changed = False
    for group, info in zip(groups, infos[1:], strict=False):
        template = group.setdefault("template", {})
        target = want(template, info)
        if not podset.same_info(podset.PodSetInfo.of_template(template), target):
            podset.write_info(template, target)
            changed = True
    if changed:
        cluster["workerGroupSpecs"] = groups
    out = _nest(kind, cluster) if cluster else {}
    if _submitter_mode(obj, kind):
        own = (obj.get("spec") or {}).get("submitterPodTemplate")
        if merge or own is not None:
            template = ray.submitter_template(obj)
            target = want(template, infos[-1])
            if own is None:  # the default template, with the admission, becomes the RayJob's own
                podset.write_info(template, target)
                out["submitterPodTemplate"] = template
            elif (sub := podset.template_patch(template, target)) is not None:
                out["submitterPodTemplate"] = sub
    return out or None


def _check_length(obj: Obj, kind: ray.Kind, got: int) -> None:
    want = ray.expected_pod_sets_count(obj, kind)
    if got != want:
        raise StartConflict(podset.bad_length(want, got))


def _suspend_spec(kind: ray.Kind, value: bool) -> dict[str, Any]:
    return {"suspend": value} if kind is ray.RAYJOB else _nest(kind, {"suspend": value})


def _merge_into(into: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra`'s keys merged into `into`, recursively for maps (two patches of one `spec`)."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge_into(into[key], value)
        else:
            into[key] = value
    return into


def start_patch(
    obj: Obj,
    kind: ray.Kind,
    wl: Obj,
    flavors: Mapping[str, Obj],
    *,
    tas: bool = False,
    assign_queue_labels: bool = True,
    elastic: bool = False,
) -> dict[str, Any]:
    """`RunWithPodSetsInfo`: unsuspend, and merge each podSet's admission into its pod template;
    `flavors`: ResourceFlavor name → object. Raises `StartConflict` when the admission cannot be
    applied and `podset.FlavorNotFound` while a flavor is not known yet."""
    try:
        infos = podset.from_admission(
            wl,
            {name: (rf.get("spec") or {}) for name, rf in flavors.items()},
            tas=tas,
            assign_queue_labels=assign_queue_labels,
            elastic=elastic,
        )
        _check_length(obj, kind, len(infos))
        templates = _templates_patch(obj, kind, infos, merge=True, elastic=elastic) or {}
    except podset.PermanentError as exc:
        raise StartConflict(str(exc)) from exc
    return o.guarded_patch(obj, spec=_merge_into(_suspend_spec(kind, False), templates))


def restore_patch(obj: Obj, kind: ray.Kind, wl: Obj | None) -> dict[str, Any] | None:
    """`RestorePodSetsInfo`: each template back to its podSet's in `wl`, matched by position; None
    when nothing would change, without a Workload, or when the podSet count differs from the
    object's (upstream skips the restore then)."""
    if wl is None:
        return None
    wanted = (wl.get("spec") or {}).get("podSets") or ()
    if len(wanted) != ray.expected_pod_sets_count(obj, kind):
        log.debug(
            "pod set count differs from the object's, not restoring",
            extra={"object": o.key(obj), "expected": ray.expected_pod_sets_count(obj, kind), "got": len(wanted)},
        )
        return None
    infos = [podset.PodSetInfo.of_template(ps.get("template") or {}) for ps in wanted]
    templates = _templates_patch(obj, kind, infos, merge=False)
    return None if templates is None else o.guarded_patch(obj, spec=templates)


# == the adapter ==================================================================================
class RayObject(SuspendedBySpec):
    """A RayCluster, RayJob or RayService as a `GenericJob` (with `JobWithoutCustomStop`)."""

    __slots__ = ("kind_row", "obj", "tas")

    def __init__(self, obj: Obj, kind: ray.Kind, *, tas: bool = False) -> None:
        self.obj = obj
        self.kind_row = kind
        self.tas = tas

    @property
    def api_version(self) -> str:
        return self.kind_row.framework.api_version

    @property
    def kind(self) -> str:
        return self.kind_row.name

    @property
    def group(self) -> str:
        return self.kind_row.framework.group

    def is_suspended(self) -> bool:
        return ray.is_suspended(self.obj, self.kind_row)

    def is_active(self) -> bool:
        return is_active(self.obj, self.kind_row)

    def finished(self) -> tuple[str, str] | None:
        return finished(self.obj, self.kind_row)

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        return pod_sets(self.obj, self.kind_row, tas=self.tas)

    def pods_ready(self) -> bool:
        return pods_ready(self.obj, self.kind_row)

    def suspend_patch(self, *, stopping: bool) -> dict[str, Any]:
        """`Suspend`; never marked as being stopped (the stop is one patch)."""
        return o.guarded_patch(self.obj, spec=_suspend_spec(self.kind_row, True))

    def stop_patch(self, wl: Obj | None) -> dict[str, Any]:
        """`stopJob` without a custom stop: suspend and restore the templates from `wl`, one patch."""
        patch = self.suspend_patch(stopping=False)
        restore = restore_patch(self.obj, self.kind_row, wl)
        if restore is not None:
            _merge_into(patch["spec"], restore["spec"])
        return patch

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        return start_patch(
            self.obj, self.kind_row, wl, flavors, tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic
        )

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        return restore_patch(self.obj, self.kind_row, wl)

    def pod_label_selector(self) -> str:
        """`PodLabelSelector`: the pods of the object's cluster, once it has one."""
        return pod_label_selector(self.obj, self.kind_row)


def workload_name(kind: ray.Kind, name: str, uid: str, *, short: bool = False) -> str:
    """`GetWorkloadNameFor<Kind>`: the Workload name of the object `name` of `kind`."""
    return jobs.workload_name(name, uid, kind=kind.name, group=kind.framework.group, short=short)


# == the plan =====================================================================================
def _skipped(obj: Obj, kind: ray.Kind, config: Configuration) -> bool:
    """`JobWithSkip.Skip`: a RayJob on an existing cluster; a GCS fault-tolerant RayService being
    deleted, with DeferRayServiceFinalizationForRedisCleanup."""
    if kind is ray.RAYJOB:
        return bool((obj.get("spec") or {}).get("clusterSelector"))
    if kind is ray.RAYSERVICE:
        return (
            config.feature_enabled(Feature.DEFER_RAY_SERVICE_FINALIZATION_FOR_REDIS_CLEANUP)
            and o.is_deleting(obj)
            and ray.is_gcs_fault_tolerant(ray.cluster_spec(obj, kind) or {}, obj)
        )
    return False


def kind_plan(kind: ray.Kind) -> fw.OwnedKindPlan:
    """One reconcile of an object of `kind` (`ReconcileGenericJob`): a RayCluster KubeRay made for a
    RayJob or RayService is its owner's; `_skipped` objects are nobody's."""
    return fw.OwnedKindPlan(
        lambda obj, tas: RayObject(obj, kind, tas=tas), lambda obj, config: _skipped(obj, kind, config)
    )


INTEGRATIONS: Mapping[str, Integration] = {
    name: Integration.of_family(kind.framework, functools.partial(RayObject, kind=kind))
    for name, kind in ray.KINDS.items()
}
"""Each kind's objects for the generic executor, by kind."""


# == I/O ==========================================================================================
class RayClusterReconciler(
    OwnedJobReconciler, plan=kind_plan(ray.RAYCLUSTER), integration=INTEGRATIONS[ray.RAYCLUSTER.name]
):
    """The RayCluster reconciler: the generic one over `RayObject`."""


class RayJobReconciler(OwnedJobReconciler, plan=kind_plan(ray.RAYJOB), integration=INTEGRATIONS[ray.RAYJOB.name]):
    """The RayJob reconciler: the generic one over `RayObject`."""


class RayServiceReconciler(
    OwnedJobReconciler, plan=kind_plan(ray.RAYSERVICE), integration=INTEGRATIONS[ray.RAYSERVICE.name]
):
    """The RayService reconciler: the generic one over `RayObject`."""


RECONCILERS: Mapping[str, type[OwnedJobReconciler]] = {
    ray.RAYCLUSTER.name: RayClusterReconciler,
    ray.RAYJOB.name: RayJobReconciler,
    ray.RAYSERVICE.name: RayServiceReconciler,
}
"""Each kind's reconciler, by kind."""


def setup(ctx: SetupContext) -> Wiring:
    """The integration of `ctx.framework` in the worker: every object of its kind is watched, none
    while KubeRay's CRD is not installed."""
    framework = ctx.framework
    if framework is None or framework.kind not in RECONCILERS:
        raise ValueError(f"not a KubeRay framework: {framework}")
    return RECONCILERS[framework.kind].wiring(ctx, Resource(framework.resource, framework.api_version, optional=True))
