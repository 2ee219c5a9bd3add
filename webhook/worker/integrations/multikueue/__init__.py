"""MultiKueue adapters: how the manager copies a job to a worker cluster and mirrors its status back.

One module per job kind (`job` for batch/v1 Jobs), each exporting `ADAPTER`, an object that fulfils
`MultiKueueAdapter`, as upstream's `pkg/controller/jobframework/multikueue.go` `MultiKueueAdapter`
(+ `MultiKueueWatcher`) at v0.19.2. The adapters are pure: they build the remote object and decide
the local status from the two objects they are given; the MultiKueue workload reconciler does the
reads and writes (upstream's `SyncJob` and `DeleteRemoteObject` do both in one call).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from webhook.api.integrations import Framework
from webhook.api.objects import Obj

__all__ = ["MultiKueueAdapter"]

"""Set to the manager's `multiKueue.origin` on every object it creates on a worker
(`kueue.MultiKueueOriginLabel`); the worker-side watches and the garbage collector select on it."""


class MultiKueueAdapter(Protocol):
    """What the MultiKueue workload reconciler needs from one job kind."""

    @property
    def framework(self) -> Framework:
        """The registry row: the GVK string (`gvk.String()`) keys the adapter, as upstream's map does."""
        ...

    @property
    def watches_remote(self) -> bool:
        """Remote objects of this kind are watched too (`MultiKueueWatcher`)."""
        ...

    def managed(self, local: Obj) -> tuple[bool, str]:
        """`IsJobManagedByKueue`: whether MultiKueue runs this job, and why not."""
        ...

    def remote_body(self, local: Obj, workload: str, origin: str, *, identifier_annotations: bool) -> dict[str, Any]:
        """The object to create on the worker for `local`, admitted there through the prebuilt
        Workload `workload`."""
        ...

    def status_update(self, local: Obj, remote: Obj, *, now: datetime) -> tuple[dict[str, Any] | None, bool]:
        """The local object's new status (None: unchanged), and whether the sync is deferred (the
        remote's progress is deliberately not copied yet; the caller requeues soon)."""
        ...

    def remote_spec_patch(
        self,
        local: Obj,
        remote: Obj,
        workload: str,
        *,
        elastic_enabled: bool,
        identifier_annotations: bool,
        short_names: bool,
    ) -> dict[str, Any] | None:
        """A merge patch bringing the remote in line with a resized local job (None: none needed)."""
        ...

    def workload_keys(self, remote: Obj, *, identifier_annotations: bool) -> list[str]:
        """`WorkloadKeysFor`: the `namespace/name` of the local Workloads a remote object's event concerns."""
        ...
