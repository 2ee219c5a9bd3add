"""Kubeflow Trainer's TrainJob (trainer.kubeflow.org/v1alpha1): the adapter the generic job
reconcile works through.

Mirrors `pkg/controller/jobs/trainjob/trainjob_controller.go` (upstream v0.19.2). A TrainJob's
pods are those of the JobSet Trainer builds from its (Cluster)TrainingRuntime, so every answer
that needs pod sets reads the runtime from the worker's cache and rebuilds that JobSet
(`webhook.api.trainjob.child_jobset_spec`); one pod set per replicated Job
(`webhook.api.jobset_template`). A missing runtime is upstream's error (`runtime '<name>' not
found`): the reconcile is retried, no event. Kueue starts a TrainJob through the runtime patch its
webhook added (manager `kueue.x-k8s.io/manager`): the admission's labels, annotations, node
selectors, tolerations and scheduling gates go into that patch's replicated Jobs with
`suspend: false` in one write, and stopping empties them again once no child Job is active
(`JobWithCustomStop`: upstream's `Stop` runs, and reports the stop, on every call).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import jobset_template
from webhook.api import objects as o
from webhook.api import trainjob as tj
from webhook.api.integrations import TRAINJOB
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import JobError, StartConflict, SuspendedBySpec
from webhook.worker.jobframework.plan import Plan
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring
from webhook.worker.store import Store

__all__ = ["CONTROLLER_NAME", "TrainJob", "TrainJobReconciler", "integration", "plan", "setup"]

CONTROLLER_NAME = "trainer.kubeflow.org/trainjob-kueue-controller"


def _default_ports(template: dict[str, Any]) -> None:
    """What upstream's dry-run create of the Workload adds to pod sets that a podSet comparison
    sees: of the Workload schema's defaults only the ports' `protocol: TCP` survives it."""
    spec = template.get("spec") or {}
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or ():
            for port in container.get("ports") or ():
                port.setdefault("protocol", "TCP")


class TrainJob(SuspendedBySpec):
    """A TrainJob as a `GenericJob` (with `JobWithReclaimablePods` and `JobWithCustomStop`);
    `store` holds the runtimes (kinds `clustertrainingruntimes` and `trainingruntimes`)."""

    __slots__ = ("_jobset", "obj", "store", "tas")
    api_version = TRAINJOB.api_version
    kind = TRAINJOB.kind
    group = TRAINJOB.group

    def __init__(self, obj: Obj, *, store: Store, tas: bool = False) -> None:
        self.obj = obj
        self.store = store
        self.tas = tas  # the TopologyAwareScheduling gate: pod sets carry their topology request
        self._jobset: dict[str, Any] | None = None

    # -- the JobSet Trainer builds ---------------------------------------------------------------
    def jobset_spec(self) -> dict[str, Any]:
        """`getChildJobSet`'s spec; raises `JobError` with upstream's text when the runtime cannot be used."""
        if self._jobset is None:
            try:
                kind, namespace, name = tj.runtime_key(self.obj)
            except tj.RuntimeError_ as exc:
                raise JobError(str(exc)) from exc
            runtime = self.store.get(tj.RUNTIME_RESOURCES[kind], f"{namespace}/{name}" if namespace else name)
            if runtime is None:
                raise JobError(f"runtime '{name}' not found")
            self._jobset = tj.child_jobset_spec(self.obj, runtime)
        return self._jobset

    # -- GenericJob --------------------------------------------------------------------------------
    def is_suspended(self) -> bool:
        return bool((self.obj.get("spec") or {}).get("suspend"))

    def is_active(self) -> bool:
        """Some child Job still has a pod running or pending."""
        return any(int(s.get("active") or 0) > 0 for s in (self.obj.get("status") or {}).get("jobsStatus") or ())

    def finished(self) -> tuple[str, str] | None:
        """Complete=True, else Failed=True, with the condition's message."""
        for ctype, reason in (("Complete", c.FinishedReason.SUCCEEDED), ("Failed", c.FinishedReason.FAILED)):
            cond = o.find_condition(self.obj, ctype)
            if cond is not None and cond.get("status") == "True":
                return reason, str(cond.get("message") or "")
        return None

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        """One pod set per replicated Job of the child JobSet; with TopologyAwareScheduling each
        carries its template's topology request, its copies as sub-groups."""
        spec = self.jobset_spec()
        out = jobset_template.pod_sets(spec)
        for ps, rj in zip(out, spec.get("replicatedJobs") or (), strict=True):
            _default_ports(ps["template"])
            if not self.tas:
                continue
            annotations = (ps["template"].get("metadata") or {}).get("annotations") or {}
            try:
                ps["topologyRequest"] = podset.topology_request(
                    annotations,
                    pod_index_label=c.JOB_COMPLETION_INDEX_ANNOTATION,
                    sub_group_index_label=jobset_template.JOB_INDEX_LABEL,
                    sub_group_count=jobset_template.replicas(rj),
                )
            except ValueError as exc:
                raise JobError(str(exc)) from exc
        return out

    def pods_ready(self) -> bool:
        """Ready or succeeded child Jobs add up to the JobSet's replicas (False while the runtime is missing)."""
        try:
            spec = self.jobset_spec()
        except JobError:
            return False
        want = sum(jobset_template.replicas(rj) for rj in spec.get("replicatedJobs") or ())
        statuses = (self.obj.get("status") or {}).get("jobsStatus") or ()
        return want == sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in statuses)

    def reclaimable_pods(self, wl: Obj) -> list[dict[str, Any]]:
        """The pods of succeeded child Jobs, per replicated Job (none while no child Job is reported)."""
        statuses = {s.get("name"): s for s in (self.obj.get("status") or {}).get("jobsStatus") or ()}
        if not statuses:
            return []
        out = []
        for rj in self.jobset_spec().get("replicatedJobs") or ():
            status = statuses.get(rj.get("name"))
            succeeded = int((status or {}).get("succeeded") or 0)
            if 0 < succeeded <= jobset_template.replicas(rj):
                out.append({"name": rj.get("name"), "count": succeeded * jobset_template.pods_count_per_replica(rj)})
        return out

    def stop_blocker(self) -> str | None:
        """`Stop`: the runtime patch is emptied only once no child Job is active, and needs Kueue's patch."""
        if self.is_active():
            return "jobs are still active"
        if tj.kueue_runtime_patch(self.obj) is None:
            return "error restoring info to the trainjob"
        return None

    def _with_kueue_jobs(self, replicated_jobs: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        """The TrainJob's runtime patches with Kueue's replicated-Job patches replaced (a merge patch
        replaces the whole list, so it is sent whole)."""
        out = []
        for patch in (self.obj.get("spec") or {}).get("runtimePatches") or ():
            patch = copy.deepcopy(dict(patch))
            if patch.get("manager") == tj.KUEUE_RUNTIME_PATCH_MANAGER:
                template = patch.setdefault("trainingRuntimeSpec", {}).setdefault("template", {})
                spec = template.get("spec") or {}
                spec.pop("replicatedJobs", None)
                if replicated_jobs:
                    spec["replicatedJobs"] = replicated_jobs
                template["spec"] = spec
            out.append(patch)
        return out

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        """`RunWithPodSetsInfo`: each pod set's admission into Kueue's runtime patch, and unsuspended,
        in one write guarded by the resourceVersion (Trainer lets the patches change together with
        `suspend`). Raises `StartConflict` for an admission of other pod sets, `JobError` while the
        runtime or Kueue's patch is missing."""
        specs = {name: (rf.get("spec") or {}) for name, rf in flavors.items()}
        try:
            infos = podset.from_admission(wl, specs, tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic)
        except podset.PermanentError as exc:
            raise StartConflict(str(exc)) from exc
        want = len(self.jobset_spec().get("replicatedJobs") or ())
        if len(infos) != want:
            raise StartConflict(podset.bad_length(want, len(infos)))
        if tj.kueue_runtime_patch(self.obj) is None:
            raise JobError("kueue runtime patch not found")
        replicated_jobs = []
        for info in infos:
            meta = {key: v for key, v in (("annotations", info.annotations), ("labels", info.labels)) if v}
            pod_spec = {
                key: v
                for key, v in (
                    ("nodeSelector", info.node_selector),
                    ("tolerations", info.tolerations),
                    ("schedulingGates", info.scheduling_gates),
                )
                if v
            }
            template = {"metadata": meta, "spec": pod_spec}
            replicated_jobs.append({"name": info.name, "template": {"spec": {"template": template}}})
        return {
            "metadata": {"resourceVersion": o.meta(self.obj).get("resourceVersion")},
            "spec": {"suspend": False, "runtimePatches": self._with_kueue_jobs(replicated_jobs)},
        }

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        """`RestorePodSetsInfo`: Kueue's runtime patch without replicated Jobs; None when it has none."""
        patch = tj.kueue_runtime_patch(self.obj)
        spec = (((patch or {}).get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        if not spec.get("replicatedJobs"):
            return None
        return {
            "metadata": {"resourceVersion": o.meta(self.obj).get("resourceVersion")},
            "spec": {"runtimePatches": self._with_kueue_jobs(None)},
        }


def integration(store: Store, config: Configuration) -> Integration:
    """TrainJobs for the generic executor, reading runtimes from `store`."""
    tas = config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
    return Integration(
        api_version=TRAINJOB.api_version,
        kind=TRAINJOB.kind,
        resource=TRAINJOB.resource,
        controller_name=CONTROLLER_NAME,
        wrap=lambda obj: TrainJob(obj, store=store, tas=tas),
    )


def plan(
    obj: Obj | None,
    workloads: Sequence[Obj],
    *,
    namespace_labels: Mapping[str, str] | None,
    config: Configuration,
    store: Store | None = None,
    now: datetime | None = None,
) -> Plan:
    """One reconcile of a TrainJob (`ReconcileGenericJob`): a TrainJob is always a top-level job."""
    tas = config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
    store = store if store is not None else Store()
    return fw.plan_always_top_level(
        obj,
        workloads,
        lambda job: TrainJob(job, store=store, tas=tas),
        namespace_labels=namespace_labels,
        config=config,
        store=store,
        now=now or datetime.now(UTC),
    )


class TrainJobReconciler(OwnedJobReconciler, plan=plan):
    """The TrainJob reconciler: the generic one, planning with this module's `plan`; its jobs are
    read with the runtimes in the store."""

    def job_integration(self, store: Store, config: Configuration) -> Integration:
        return integration(store, config)


def setup(ctx: SetupContext) -> Wiring:
    """The TrainJob integration in the worker: TrainJobs, and the runtimes their pod sets come from.
    Trainer's CRDs may come later: until then the worker schedules without them."""
    return TrainJobReconciler.wiring(
        ctx,
        Resource("trainjobs", TRAINJOB.api_version, optional=True),
        Resource("clustertrainingruntimes", TRAINJOB.api_version, optional=True),
        Resource("trainingruntimes", TRAINJOB.api_version, optional=True),
    )
