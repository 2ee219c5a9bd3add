"""The MultiKueue adapter of Pods and pod groups: the worker's copy of each pod and the status it
sends back.

The manager's pods stay gated (their Workload has a MultiKueue check, so the pod reconciler does
not start them); each is copied to the worker with its metadata and spec, the origin label and the
prebuilt Workload name, where the worker's Kueue admits and ungates it. A pod group is copied member
by member, all through the group's one Workload. Once a copy exists its status is mirrored onto the
local pod, whole, except that a local pod still gated keeps its `PodScheduled=False/SchedulingGated`
until the worker's pod is scheduled: copied as is, an unschedulable worker pod would look like a
scale-up candidate to the manager cluster's autoscaler.

Mirrors upstream v0.19.2 `pkg/controller/jobs/pod/pod_multikueue_adapter.go` (`SyncJob`,
`syncLocalPodWithRemote`, `DeleteRemoteObject`, `IsJobManagedByKueue`, `WorkloadKeysFor`) and
`pkg/util/api/api.go:CloneObjectMetaForCreation`.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.integrations import POD, Framework
from webhook.api.objects import Obj
from webhook.worker import transform
from webhook.worker.integrations.multikueue import MultiKueueAdapter, NotResized, copy_meta, prebuilt_workload_keys

__all__ = ["ADAPTER", "PodAdapter"]

_POD_SCHEDULED = "PodScheduled"


def _condition(status: Obj, ctype: str) -> Obj | None:
    return next((cond for cond in status.get("conditions") or () if cond.get("type") == ctype), None)


def _gated(pod: Obj) -> bool:
    """`isGated`: the pod still carries Kueue's admission gate."""
    return any(g.get("name") == c.ADMISSION_GATE for g in (pod.get("spec") or {}).get("schedulingGates") or ())


class PodAdapter(NotResized):
    """`multiKueueAdapter` of `pkg/controller/jobs/pod`."""

    framework: Framework = POD
    watches_remote: bool = True
    patch_status: bool = True

    def managed(self, local: Obj) -> tuple[bool, str]:
        """`IsJobManagedByKueue`: a pod has no `managedBy`; every queued pod is MultiKueue's."""
        return True, ""

    def group(self, local: Obj) -> str | None:
        """The pod group `local` belongs to (`GetPodGroupName`): its members are synced together."""
        return o.labels(local).get(c.POD_GROUP_NAME) or None

    def remote_body(self, local: Obj, workload: str, origin: str, *, identifier_annotations: bool) -> dict[str, Any]:
        """The pod to create on the worker: name, namespace, labels and annotations, the whole spec
        (Kueue's gate included: the worker's Kueue lifts it), the origin and the prebuilt name."""
        meta = copy_meta(local, workload, origin, identifier_annotations=identifier_annotations)
        spec = copy.deepcopy(dict(local.get("spec") or {}))
        return {"apiVersion": POD.api_version, "kind": POD.kind, "metadata": meta, "spec": spec}

    def status_update(self, local: Obj, remote: Obj, *, now: datetime) -> tuple[dict[str, Any] | None, bool]:
        """The remote pod's status, keeping the local `PodScheduled` while the local pod is gated
        and the remote one is not scheduled yet; nothing for a local pod being deleted. Compared
        as the worker's cache keeps pods (without container statuses and IPs), so a status equal
        in what the cache holds is not written again. Never deferred."""
        if o.is_deleting(local):
            return None, False
        current = dict(local.get("status") or {})
        new = copy.deepcopy(dict(remote.get("status") or {}))
        local_scheduled = _condition(current, _POD_SCHEDULED)
        remote_scheduled = _condition(new, _POD_SCHEDULED)
        remote_is_scheduled = remote_scheduled is not None and remote_scheduled.get("status") == "True"
        if _gated(local) and local_scheduled is not None and not remote_is_scheduled:
            conditions = [cond for cond in new.get("conditions") or () if cond is not remote_scheduled]
            at = next((i for i, cond in enumerate(new.get("conditions") or ()) if cond is remote_scheduled), None)
            conditions.insert(len(conditions) if at is None else at, dict(local_scheduled))
            new["conditions"] = conditions
        cached = transform.compact("pods", {"status": copy.deepcopy(new)})["status"]
        return (None if cached == current else new), False

    def workload_keys(self, remote: Obj, *, identifier_annotations: bool) -> list[str]:
        """`WorkloadKeysFor`."""
        return prebuilt_workload_keys(remote, "pod", identifier_annotations=identifier_annotations)


ADAPTER: MultiKueueAdapter = PodAdapter()
