"""The MultiKueue adapter of StatefulSets: a copy on the worker, created once, never synced back.

The copy carries the origin label, the prebuilt Workload name and the manager's UID
(`kueue.x-k8s.io/multikueue-origin-uid`), so the worker names the set's Workload as the manager
did and finds there the copy MultiKueue made, instead of creating its own. A StatefulSet has no
`managedBy`: the manager's StatefulSet controller owns the local status and would overwrite a
mirrored one at once, so none is copied; the manager's pods stay gated.

Mirrors upstream v0.19.2 `pkg/controller/jobs/statefulset/statefulset_multikueue_adapter.go`.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from webhook.api import multikueue
from webhook.api import objects as o
from webhook.api.integrations import STATEFULSET, Framework
from webhook.api.objects import Obj
from webhook.worker.integrations.multikueue import MultiKueueAdapter, NotResized, copy_meta, prebuilt_workload_keys

__all__ = ["ADAPTER", "StatefulSetAdapter"]


class StatefulSetAdapter(NotResized):
    """`multiKueueAdapter` of `pkg/controller/jobs/statefulset`."""

    framework: Framework = STATEFULSET
    watches_remote: bool = True
    patch_status: bool = False

    def managed(self, local: Obj) -> tuple[bool, str]:
        """`IsJobManagedByKueue`: a StatefulSet has no `managedBy`; every queued one is MultiKueue's."""
        return True, ""

    def group(self, local: Obj) -> str | None:
        """A StatefulSet is synced alone (its pods are the worker's to make)."""
        return None

    def remote_body(self, local: Obj, workload: str, origin: str, *, identifier_annotations: bool) -> dict[str, Any]:
        """The copy: name, namespace, labels, annotations and spec, with the origin label, the
        prebuilt Workload name and the manager's UID."""
        meta = copy_meta(
            local,
            workload,
            origin,
            identifier_annotations=identifier_annotations,
            annotations={multikueue.ORIGIN_UID_ANNOTATION: o.uid(local)},
        )
        spec = copy.deepcopy(dict(local.get("spec") or {}))
        return {"apiVersion": STATEFULSET.api_version, "kind": STATEFULSET.kind, "metadata": meta, "spec": spec}

    def status_update(self, local: Obj, remote: Obj, *, now: datetime) -> tuple[dict[str, Any] | None, bool]:
        """Never: the local StatefulSet controller owns the local status."""
        return None, False

    def workload_keys(self, remote: Obj, *, identifier_annotations: bool) -> list[str]:
        """`WorkloadKeysFor`."""
        return prebuilt_workload_keys(remote, "statefulset", identifier_annotations=identifier_annotations)


ADAPTER: MultiKueueAdapter = StatefulSetAdapter()
