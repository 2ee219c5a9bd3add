"""The MultiKueue adapter of JobSets: the worker's copy and the status it sends back.

The copy keeps the JobSet's metadata and spec less `spec.managedBy` (the worker's JobSet controller
takes over), with the origin label and the prebuilt Workload name. Once it exists its status is
copied back whole on every sync: the manager's JobSet controller leaves a JobSet managed by
MultiKueue alone, so nothing here competes with it, and nothing is deferred.

Mirrors upstream v0.19.2 `pkg/controller/jobs/jobset/jobset_multikueue_adapter.go`.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from webhook.api import constants as c
from webhook.api.integrations import JOBSET, Framework
from webhook.api.objects import Obj
from webhook.worker.integrations.multikueue import MultiKueueAdapter, NotResized, copy_meta, prebuilt_workload_keys

__all__ = ["ADAPTER", "JobSetAdapter"]


class JobSetAdapter(NotResized):
    """`multiKueueAdapter` of `pkg/controller/jobs/jobset`."""

    framework: Framework = JOBSET
    watches_remote: bool = True
    patch_status: bool = False

    def managed(self, local: Obj) -> tuple[bool, str]:
        """`IsJobManagedByKueue`: only JobSets handed to MultiKueue through `spec.managedBy`."""
        managed_by = str((local.get("spec") or {}).get("managedBy") or "")
        if managed_by != c.MULTIKUEUE_CONTROLLER:
            return False, f'Expecting spec.managedBy to be "{c.MULTIKUEUE_CONTROLLER}" not "{managed_by}"'
        return True, ""

    def group(self, local: Obj) -> str | None:
        """A JobSet is synced alone."""
        return None

    def remote_body(self, local: Obj, workload: str, origin: str, *, identifier_annotations: bool) -> dict[str, Any]:
        """The JobSet to create on the worker (`SyncJob`'s create branch)."""
        spec = copy.deepcopy(dict(local.get("spec") or {}))
        spec.pop("managedBy", None)
        meta = copy_meta(local, workload, origin, identifier_annotations=identifier_annotations)
        return {"apiVersion": JOBSET.api_version, "kind": JOBSET.kind, "metadata": meta, "spec": spec}

    def status_update(self, local: Obj, remote: Obj, *, now: datetime) -> tuple[dict[str, Any] | None, bool]:
        """The remote status, whole; None when the local one already equals it."""
        new = copy.deepcopy(dict(remote.get("status") or {}))
        return (None if new == dict(local.get("status") or {}) else new), False

    def workload_keys(self, remote: Obj, *, identifier_annotations: bool) -> list[str]:
        """`WorkloadKeysFor`."""
        return prebuilt_workload_keys(remote, "jobset", identifier_annotations=identifier_annotations)


ADAPTER: MultiKueueAdapter = JobSetAdapter()
