"""jobset.x-k8s.io/v1alpha2 JobSet: the adapter the generic job reconcile works through.

`JobSet` fulfils `jobframework.interface.GenericJob` (with `JobWithReclaimablePods` and
`JobWithoutCustomStop`) for a JobSet, as upstream's `pkg/controller/jobs/jobset/jobset_controller.go`
does (upstream v0.19.2): one podSet per replicatedJob, started and stopped through `spec.suspend`
with each replicatedJob's pod template carrying its podSet's admission while it runs. JobSet
has no custom `Stop`: upstream's own `stopJob` suspends it and puts the templates back in one
patch. `plan` decides what is JobSet-specific before the generic reconcile (`jobframework.plan`).

Field names are JobSet v0.12.0's (`sigs.k8s.io/jobset/api/jobset/v1alpha2`): `spec.replicatedJobs[]`
(counted as `webhook.api.jobset_template` counts them, which the TrainJob integration shares),
`spec.suspend`, `status.replicatedJobsStatus[]` (`name`, `ready`, `succeeded`, `active`) and
`status.conditions` (Completed, Failed).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from webhook.api import constants as c
from webhook.api import jobs, jobset_template
from webhook.api import objects as o
from webhook.api.integrations import JOBSET
from webhook.api.objects import Obj
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import StartConflict, SuspendedBySpec
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring

__all__ = [
    "CONTROLLER_NAME",
    "JobSet",
    "JobSetReconciler",
    "finished_condition",
    "is_active",
    "is_suspended",
    "plan",
    "pod_sets",
    "pods_ready",
    "reclaimable_pods",
    "restore_patch",
    "setup",
    "start_patch",
    "workload_name",
]

log = logging.getLogger(__name__)

JOBSET_API = JOBSET.api_version
CONTROLLER_NAME = "jobset.x-k8s.io/jobset-kueue-controller"


# == pure builders ================================================================================
def _replicated_jobs(js: Obj) -> list[Obj]:
    return list((js.get("spec") or {}).get("replicatedJobs") or ())


def is_suspended(js: Obj) -> bool:
    """`JobSet.IsSuspended`: `spec.suspend` (a JobSet has no stopping mark)."""
    return bool((js.get("spec") or {}).get("suspend"))


def is_active(js: Obj) -> bool:
    """`JobSet.IsActive`: some replicatedJob still has an active child Job."""
    return any(int(s.get("active") or 0) > 0 for s in (js.get("status") or {}).get("replicatedJobsStatus") or ())


def pod_sets(js: Obj, *, tas: bool = False) -> list[dict[str, Any]]:
    """`JobSet.PodSets`: one podSet per replicatedJob, named after it, of replicas times pods per
    replica, with its Job's pod template (`jobset_template.pod_sets`); with the
    TopologyAwareScheduling gate, the template's topology request, indexed by completion index
    within each child Job (the sub-group). JobSet has no partial admission: no podSet has a
    minCount. Raises ValueError with Go's message for an unparsable topology annotation."""
    out = jobset_template.pod_sets(js.get("spec") or {})
    if tas:
        for ps, rj in zip(out, _replicated_jobs(js), strict=True):
            ps["topologyRequest"] = podset.topology_request(
                (ps["template"].get("metadata") or {}).get("annotations") or {},
                pod_index_label=c.JOB_COMPLETION_INDEX_ANNOTATION,
                sub_group_index_label=jobset_template.JOB_INDEX_LABEL,
                sub_group_count=jobset_template.replicas(rj),
            )
    return out


def finished_condition(js: Obj) -> tuple[str, str] | None:
    """`JobSet.Finished`: Completed=True is a success, else Failed=True a failure, each with the
    condition's message."""
    conds = (js.get("status") or {}).get("conditions") or ()
    for ctype, reason in (("Completed", c.FinishedReason.SUCCEEDED), ("Failed", c.FinishedReason.FAILED)):
        found = next((x for x in conds if x.get("type") == ctype), None)
        if found is not None and found.get("status") == "True":
            return reason, str(found.get("message") or "")
    return None


def pods_ready(js: Obj) -> bool:
    """`JobSet.PodsReady`: every child Job (the replicas of every replicatedJob) is ready or
    succeeded."""
    replicas = sum(jobset_template.replicas(rj) for rj in _replicated_jobs(js))
    statuses = (js.get("status") or {}).get("replicatedJobsStatus") or ()
    return replicas == sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in statuses)


def reclaimable_pods(js: Obj) -> list[dict[str, Any]]:
    """`JobSet.ReclaimablePods`: the pods of a replicatedJob's succeeded child Jobs, in spec order
    (none before the JobSet reports any status)."""
    statuses = {s.get("name"): s for s in (js.get("status") or {}).get("replicatedJobsStatus") or ()}
    if not statuses:
        return []
    out = []
    for rj in _replicated_jobs(js):
        status = statuses.get(rj.get("name"))
        succeeded = int((status or {}).get("succeeded") or 0)
        if status is not None and 0 < succeeded <= jobset_template.replicas(rj):
            out.append({"name": rj.get("name", ""), "count": succeeded * jobset_template.pods_count_per_replica(rj)})
    return out


def _with_replicated_jobs(js: Obj, replicated_jobs: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A merge patch of the whole `spec.replicatedJobs` list (a merge patch replaces lists), guarded
    by the JobSet's resourceVersion as upstream's update is."""
    return {
        "metadata": {"resourceVersion": o.meta(js).get("resourceVersion")},
        "spec": {**spec, "replicatedJobs": replicated_jobs},
    }


def start_patch(
    js: Obj,
    wl: Obj,
    flavors: Mapping[str, Obj],
    *,
    tas: bool = False,
    assign_queue_labels: bool = True,
    elastic: bool = False,
) -> dict[str, Any]:
    """`JobSet.RunWithPodSetsInfo`: unsuspend, and merge each podSet's admission (flavors' node
    labels and tolerations, queue labels, admission checks' updates) into its replicatedJob's pod
    template; `flavors`: ResourceFlavor name → object. The JobSet controller passes the templates
    on to child Jobs it already made before resuming them. Raises `StartConflict` when the
    admission cannot be applied and `podset.FlavorNotFound` while a flavor is not known yet."""
    replicated_jobs = [copy.deepcopy(dict(r)) for r in _replicated_jobs(js)]
    try:
        infos = podset.from_admission(
            wl,
            {name: (rf.get("spec") or {}) for name, rf in flavors.items()},
            tas=tas,
            assign_queue_labels=assign_queue_labels,
            elastic=elastic,
        )
        if len(infos) != len(replicated_jobs):
            raise podset.PermanentError(podset.bad_length(len(replicated_jobs), len(infos)))
        for rj, info in zip(replicated_jobs, infos, strict=True):
            template = rj.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
            podset.write_info(template, podset.merge(podset.PodSetInfo.of_template(template), info, elastic=elastic))
    except podset.PermanentError as exc:
        raise StartConflict(str(exc)) from exc
    return _with_replicated_jobs(js, replicated_jobs, suspend=False)


def restore_patch(js: Obj, wl: Obj | None) -> dict[str, Any] | None:
    """`JobSet.RestorePodSetsInfo`: each replicatedJob's pod template back to its podSet's in `wl`
    (annotations, labels, node selector, tolerations, scheduling gates), matched by position.
    None when nothing would change, without a Workload, or when the podSet count differs from the
    replicatedJobs' (upstream skips the restore then)."""
    if wl is None:
        return None
    wanted = (wl.get("spec") or {}).get("podSets") or ()
    replicated_jobs = [copy.deepcopy(dict(r)) for r in _replicated_jobs(js)]
    if len(wanted) != len(replicated_jobs):
        log.debug(
            "pod set count differs from the replicated jobs', not restoring",
            extra={"object": o.key(js), "expected": len(replicated_jobs), "got": len(wanted)},
        )
        return None
    changed = False
    for rj, ps in zip(replicated_jobs, wanted, strict=True):
        template = rj.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        want = podset.PodSetInfo.of_template(ps.get("template") or {})
        if not podset.same_info(podset.PodSetInfo.of_template(template), want):
            podset.write_info(template, want)
            changed = True
    return _with_replicated_jobs(js, replicated_jobs) if changed else None


# == the adapter ==================================================================================
class JobSet(SuspendedBySpec):
    """A JobSet as a `GenericJob` (with `JobWithReclaimablePods` and `JobWithoutCustomStop`)."""

    __slots__ = ("obj", "tas")
    api_version = JOBSET_API
    kind = JOBSET.kind
    group = JOBSET.group

    def __init__(self, obj: Obj, *, tas: bool = False) -> None:
        self.obj = obj
        self.tas = tas  # the TopologyAwareScheduling gate: podSets carry the templates' topology requests

    def is_suspended(self) -> bool:
        return is_suspended(self.obj)

    def is_active(self) -> bool:
        return is_active(self.obj)

    def finished(self) -> tuple[str, str] | None:
        return finished_condition(self.obj)

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        return pod_sets(self.obj, tas=self.tas)

    def pods_ready(self) -> bool:
        return pods_ready(self.obj)

    def stop_patch(self, wl: Obj | None) -> dict[str, Any]:
        """`stopJob` without a custom stop: suspend and restore the templates from `wl`, one patch."""
        restore = restore_patch(self.obj, wl)
        patch = self.suspend_patch(stopping=False)
        if restore is not None:
            patch["spec"].update(restore["spec"])
        return patch

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        return start_patch(self.obj, wl, flavors, tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic)

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        return restore_patch(self.obj, wl)

    def reclaimable_pods(self, wl: Obj) -> list[dict[str, Any]]:
        return reclaimable_pods(self.obj)


plan = fw.OwnedKindPlan(lambda obj, tas: JobSet(obj, tas=tas))
"""One reconcile of a JobSet (`ReconcileGenericJob`); one an enabled integration controls (an
AppWrapper's) is that integration's."""


INTEGRATION = Integration(
    api_version=JOBSET_API,
    kind=JOBSET.kind,
    resource=JOBSET.resource,
    controller_name=CONTROLLER_NAME,
    wrap=JobSet,
)
"""JobSets for the generic executor."""


def workload_name(name: str, uid: str, *, short: bool = False) -> str:
    """`GetWorkloadNameForJobSet`: the Workload name of the JobSet `name` (`short`: gate ShortWorkloadNames)."""
    return jobs.workload_name(name, uid, kind=JobSet.kind, group=JobSet.group, short=short)


# == I/O ==========================================================================================
class JobSetReconciler(OwnedJobReconciler, plan=plan, integration=INTEGRATION):
    """The JobSet reconciler: the generic one, planning with this module's `plan`."""


def setup(ctx: SetupContext) -> Wiring:
    """The JobSet integration in the worker: every JobSet is watched, none while the JobSet CRD is
    not installed."""
    return JobSetReconciler.wiring(ctx, Resource(JOBSET.resource, JOBSET.api_version, optional=True))
