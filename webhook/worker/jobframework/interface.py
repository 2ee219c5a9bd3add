"""What the generic job reconciler needs from an integration's job: `GenericJob` and the
optional abilities a job may add, each its own small Protocol.

Mirrors `GenericJob`, `JobWithReclaimablePods` and friends in
`pkg/controller/jobframework/interface.go` (upstream v0.19.2). An adapter wraps the job object as
the API returned it and answers from it alone; it never writes (the executor does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["GenericJob", "JobWithReclaimablePods", "StartConflict"]

Obj = Mapping[str, Any]


class StartConflict(Exception):
    """The admission cannot be applied to the job's pod templates (a permanent error: the
    Workload is finished as FailedToStart)."""


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

    def run_with_pod_sets_info(self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool,
                               elastic: bool) -> dict[str, Any]:
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
