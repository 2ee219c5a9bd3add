"""Every write of a Workload the worker makes, in one place: create, guarded patches, spec
replacement, finish, finalizer removal, delete; each puts what the API returns into the `Store`,
so the next reader in this process starts from it.

Status changes go through `status.update_status` (the read-modify-PUT loop every status writer
shares, the scheduler's merged writes included). The leader-lease check is not here but below:
the Manager's client is `Kube.fenced`, which refuses every write, these included, while the lease
is not held. Mirrors the Workload writes of `pkg/workload` (`workload.go`: `RemoveFinalizer`,
`workloadfinish.Finish`) and the controllers' `client.Create/Patch/Update/Delete` calls (upstream
v0.19.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from webhook import kube as k
from webhook.api import objects as o
from webhook.api.constants import RESOURCE_IN_USE_FINALIZER, V1BETA2, WorkloadCondition
from webhook.api.objects import Obj
from webhook.worker.status import set_condition, update_status
from webhook.worker.store import Store

__all__ = [
    "create",
    "delete",
    "finish",
    "patch",
    "path",
    "remove_finalizer",
    "replace",
]

KIND = "workloads"


def path(wl: Obj) -> str:
    """The Workload's API path."""
    meta = o.meta(wl)
    return k.object_path(V1BETA2, KIND, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def create(kube: k.Kube, store: Store, wl: Obj) -> dict[str, Any]:
    """POST the Workload; raises `kube.Conflict` when one of that name exists."""
    created = kube.create(k.object_path(V1BETA2, KIND, str(o.meta(wl).get("namespace") or "")), wl)
    store.put(KIND, created)
    return created


def patch(kube: k.Kube, store: Store, wl: Obj, body: dict[str, Any], *, guarded: bool = True) -> dict[str, Any]:
    """Merge-patch the Workload; `guarded`, the patch carries `wl`'s resourceVersion, so it fails with
    `kube.Conflict` when the Workload changed since the decision was taken on `wl`."""
    if guarded:
        body.setdefault("metadata", {})["resourceVersion"] = o.meta(wl).get("resourceVersion")
    written = kube.patch(path(wl), body)
    store.put(KIND, written)
    return written


def replace(kube: k.Kube, store: Store, wl: Obj) -> dict[str, Any]:
    """PUT the whole Workload (its resourceVersion guards it)."""
    written = kube.replace(path(wl), dict(wl))
    store.put(KIND, written)
    return written


def delete(kube: k.Kube, store: Store, wl: Obj) -> None:
    """DELETE guarded by `wl`'s UID: a Workload created anew under the same name meanwhile is left
    alone (`kube.Conflict`)."""
    kube.delete(path(wl), body=o.uid_precondition(wl))
    store.delete(KIND, o.key(wl))


def finish(kube: k.Kube, store: Store, wl: Obj, reason: str, message: str, now: datetime) -> dict[str, Any] | None:
    """Finished=True with `reason` (`workloadfinish.Finish`); the stored Workload, None when it is gone."""

    def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
        cond = {"type": WorkloadCondition.FINISHED, "status": "True", "reason": reason, "message": message}
        set_condition(status, cond, now, int(o.meta(obj).get("generation") or 0))

    return update_status(kube, store, KIND, path(wl), mutate)


def remove_finalizer(kube: k.Kube, store: Store, wl: Obj) -> Obj:
    """Drop the resource-in-use finalizer (`workload.RemoveFinalizer`), guarded by `wl`'s
    resourceVersion; returns the Workload as written (`wl` when there was nothing to drop). Raises
    `kube.Conflict` when it changed since, `kube.NotFound` when it is gone."""
    fins = list(o.finalizers(wl))
    if RESOURCE_IN_USE_FINALIZER not in fins:
        return wl
    fins.remove(RESOURCE_IN_USE_FINALIZER)
    return patch(kube, store, wl, {"metadata": {"finalizers": fins or None}})
