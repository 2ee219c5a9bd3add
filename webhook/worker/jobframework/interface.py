"""What the generic job reconciler needs from an integration's job: `GenericJob` and the
optional abilities a job may add, each its own small Protocol.

Mirrors `GenericJob`, `JobWithReclaimablePods` and friends in
`pkg/controller/jobframework/interface.go` (upstream v0.19.2). An adapter wraps the job object as
the API returned it and answers from it alone; it never writes (the executor does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker.jobframework.actions import JobAction

__all__ = [
    "ComposableJob",
    "GenericJob",
    "JobError",
    "JobWithCustomQueueNameChange",
    "JobWithCustomStop",
    "JobWithCustomWorkloadConditions",
    "JobWithFinalize",
    "JobWithPodLabelSelector",
    "JobWithPriorityClass",
    "JobWithReclaimablePods",
    "JobWithoutCustomStop",
    "StartConflict",
    "SuspendedBySpec",
]


class StartConflict(Exception):
    """The admission cannot be applied to the job's pod templates (a permanent error: the
    Workload is finished as FailedToStart)."""


class JobError(Exception):
    """An adapter cannot go on with this reconcile: the plan ends with `message` after the actions
    so far and `actions` (e.g. an event saying why). `retry` False is upstream's
    `UnretryableError`: logged, never retried."""

    retry = True

    def __init__(self, message: str, actions: Sequence[JobAction] = ()) -> None:
        super().__init__(message)
        self.actions = tuple(actions)


class SuspendedBySpec:
    """The `Suspend` of a kind stopped by its `spec.suspend` alone and never marked as being stopped
    (its stop is one patch, or waits on its children): JobSet, AppWrapper, TrainJob, SparkApplication.
    A kind whose suspend field lies elsewhere overrides `suspend_patch`."""

    obj: Obj

    def suspend_patch(self, *, stopping: bool) -> dict[str, Any]:
        return o.guarded_patch(self.obj, spec={"suspend": True})

    def stop_status_patch(self) -> dict[str, Any] | None:
        return None


class GenericJob(Protocol):
    """One job of an integration, as `ReconcileGenericJob` sees it."""

    @property
    def obj(self) -> Obj:
        """The job object (`Object()`)."""
        ...

    @property
    def api_version(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def group(self) -> str:
        """The API group, for the Workload's name hash (`GVK().Group`)."""
        ...

    def is_suspended(self) -> bool:
        """`IsSuspended`."""
        ...

    def is_active(self) -> bool:
        """`IsActive`: some pod of the job still runs."""
        ...

    def finished(self) -> tuple[str, str] | None:
        """`Finished`: (Finished reason, message) once the job is done, else None."""
        ...

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        """`PodSets`: the Workload's podSets for this job."""
        ...

    def pods_ready(self) -> bool:
        """`PodsReady`: enough pods are ready (or done) for the workload to count as running."""
        ...

    def suspend_patch(self, *, stopping: bool) -> dict[str, Any]:
        """The merge patch that suspends the job (`Suspend`); with `stopping` it is marked as being
        stopped until the restore is through."""
        ...

    def stop_status_patch(self) -> dict[str, Any] | None:
        """A status patch `Stop` needs before the templates may change (None: none)."""
        ...

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        """The merge patch that starts the job with the admitted `wl`'s pod-set info
        (`RunWithPodSetsInfo`); raises `StartConflict`, or `podset.FlavorNotFound` while a flavor
        is not known yet."""
        ...

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        """The patch of `Stop`'s last part (`RestorePodSetsInfo`): the pod templates back as
        `wl`'s podSets describe them; None when nothing would change."""
        ...


@runtime_checkable
class JobWithReclaimablePods(Protocol):
    """`JobWithReclaimablePods`: the job gives back the quota of pods that will not run again."""

    def reclaimable_pods(self, wl: Obj) -> list[dict[str, Any]]: ...


@runtime_checkable
class JobWithoutCustomStop(Protocol):
    """A job upstream stops with `stopJob`'s own path, having no custom Stop (a JobSet; the batch/v1
    Job's custom Stop is what `GenericJob`'s stop methods describe, a TrainJob's adds
    `JobWithCustomStop`): a suspended job is left as it is, and a running one is suspended with its
    pod templates put back in one patch (`Suspend` and `RestorePodSetsInfo` in one `clientutil.Patch`)."""

    def stop_patch(self, wl: Obj | None) -> dict[str, Any]:
        """The merge patch that suspends the job and restores its pod templates from `wl`'s podSets
        (None: suspend only)."""
        ...


@runtime_checkable
class JobWithPodLabelSelector(Protocol):
    """`PodLabelSelector` of a job whose pods carry no batch Job's controller-uid label: how the
    elastic ungater finds them (a RayCluster's `ray.io/cluster=<name>`)."""

    def pod_label_selector(self) -> str:
        """The label selector of the job's pods; '' while it has none (no cluster made yet)."""
        ...


@runtime_checkable
class JobWithFinalize(Protocol):
    """`JobWithFinalize`: what the job releases once it or its Workload is done."""

    def finalize(self) -> list[JobAction]: ...


@runtime_checkable
class JobWithCustomWorkloadConditions(Protocol):
    """`JobWithCustomWorkloadConditions`: conditions the job keeps on its Workload."""

    def custom_workload_conditions(self, wl: Obj) -> tuple[Obj, ...]:
        """The conditions to write (empty: the Workload has them already)."""
        ...


@runtime_checkable
class JobWithCustomStop(Protocol):
    """`JobWithCustomStop` of a job whose `Stop` runs in full each time the reconcile asks, even on
    a suspended job (upstream's TrainJob): after the suspend, the templates are restored once
    `stop_blocker` is None (else the reconcile is retried with its text, as upstream's error), and
    every stop that gets through counts as stopping the job now (the `Stopped` event)."""

    def stop_blocker(self) -> str | None:
        """Why the pod templates may not be restored yet; None: they may."""
        ...


@runtime_checkable
class JobWithPriorityClass(Protocol):
    """`JobWithPriorityClass`: the job names its PriorityClass itself, in place of the podSets'
    templates (a Kubeflow job's `runPolicy.schedulingPolicy.priorityClass` comes first)."""

    def priority_class(self) -> str:
        """The PriorityClass name; '' for the global default."""
        ...


@runtime_checkable
class JobWithCustomQueueNameChange(Protocol):
    """`JobWithCustomQueueNameChange`: the job decides whether its Workload follows its queue name."""

    def follows_queue_name(self) -> bool: ...


@runtime_checkable
class ComposableJob(Protocol):
    """`ComposableJob` (with `JobWithCustomStop`): a job made of several objects, a pod group. It
    matches and builds its Workload itself, and starts and stops its members with pod actions."""

    def members(self) -> Sequence[Obj]:
        """`ForEach`: the objects the job is made of."""
        ...

    def find_matching_workloads(self, workloads: Sequence[Obj]) -> tuple[Obj | None, list[Obj], list[JobAction]]:
        """`FindMatchingWorkloads`: (the match, those to delete, the writes matching needs first);
        raises `JobError`."""
        ...

    def construct_workload(self) -> tuple[dict[str, Any], list[JobAction]]:
        """`ConstructComposableWorkload`: the Workload and the writes it needs first; raises `JobError`."""
        ...

    def prebuilt_workload_name(self) -> str:
        """The Workload a parent builds for the members (a LeaderWorkerSet's group), which this job
        waits for and never builds itself; '' when it builds its own."""
        ...

    def run(self, wl: Obj) -> list[JobAction]:
        """`Run`: start every gated member with `wl`'s admission; raises `StartConflict` or `JobError`."""
        ...

    def stop(self, wl: Obj | None, reason: str, message: str) -> list[JobAction]:
        """`Stop` and its `Stopped` events; `reason` is the stop reason before `DueTo<eviction>`."""
        ...
