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

from webhook.api import constants as c
from webhook.api import jobs, multikueue
from webhook.api import objects as o
from webhook.api.integrations import Framework
from webhook.api.objects import Obj

__all__ = ["MultiKueueAdapter", "NotResized", "copy_meta", "prebuilt_name_meta", "prebuilt_workload_keys"]


def prebuilt_name_meta(workload: str, *, identifier_annotations: bool) -> tuple[str, str]:
    """`SetPrebuiltWorkloadName`: (`labels` or `annotations`, key) where the name goes; an
    annotation with WorkloadIdentifierAnnotations or when too long for a label value."""
    if identifier_annotations or len(workload) > jobs.LABEL_VALUE_MAX_LENGTH:
        return "annotations", c.PREBUILT_WORKLOAD_LABEL
    return "labels", c.PREBUILT_WORKLOAD_LABEL


def copy_meta(
    local: Obj, workload: str, origin: str, *, identifier_annotations: bool, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A remote copy's metadata (`CloneObjectMetaForCreation` + `SetMultiKueueMeta`): name,
    namespace, labels and annotations (plus `annotations`), the origin label and the prebuilt
    Workload name; nothing the local API server assigned."""
    labels = {**o.labels(local), multikueue.ORIGIN_LABEL: origin}
    notes = {**o.annotations(local), **(annotations or {})}
    section, key = prebuilt_name_meta(workload, identifier_annotations=identifier_annotations)
    (notes if section == "annotations" else labels)[key] = workload
    meta: dict[str, Any] = {"name": o.name(local), "namespace": o.namespace(local), "labels": labels}
    if notes:
        meta["annotations"] = notes
    return meta


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

    @property
    def patch_status(self) -> bool:
        """The local status is written as a merge patch replacing each top-level field (the worker
        caches this kind trimmed, so its cached copy cannot be sent back whole), not a PUT."""
        ...

    def managed(self, local: Obj) -> tuple[bool, str]:
        """`IsJobManagedByKueue`: whether MultiKueue runs this job, and why not."""
        ...

    def group(self, local: Obj) -> str | None:
        """The group of local objects synced with `local` through one Workload (a pod group's
        members: those of the same kind and namespace with the same group), or None."""
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


def prebuilt_workload_keys(remote: Obj, noun: str, *, identifier_annotations: bool) -> list[str]:
    """`WorkloadKeysFor`: the prebuilt Workload a remote object's event concerns (`noun`: the kind
    in upstream's error, e.g. `job`)."""
    name = jobs.prebuilt_workload_name(remote, identifier_annotations=identifier_annotations)
    if not name:
        raise ValueError(f"no prebuilt workload found for {noun}: {o.key(remote)}")
    return [f"{o.namespace(remote)}/{name}"]


class NotResized:
    """For adapters of kinds MultiKueue never resizes in place (no elastic sync)."""

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
        """Never a patch: the copy keeps the spec it was created with."""
        return None
