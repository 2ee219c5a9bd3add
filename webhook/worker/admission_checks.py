"""The worker's side of AdmissionChecks: the AdmissionCheck controller's finalizer, which Workloads to
look at again when a ClusterQueue's checks change, and what the Job integration reads off the checks.

Mirrors, at upstream commit ff69552e79, `pkg/controller/core/admissioncheck_controller.go` (the
`resource-in-use` finalizer; the `Active` condition is the check's own controller's business, core
Kueue only reads it), the ClusterQueue and LocalQueue handlers of `workload_controller.go`
(`workloadQueueHandler`), and `recordAdmissionCheckUpdate` of
`pkg/controller/jobframework/reconciler.go` (the podSetUpdates are merged by `jobframework.podset`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api import constants as c
from webhook.worker.store import Store, object_key

__all__ = [
    "active_condition",
    "checks_changed",
    "checks_in_use",
    "finalized",
    "is_active",
    "pending_checks_message",
    "workloads_routed_to",
]


def is_active(ac: Mapping[str, Any]) -> bool:
    """`Active=True` on the AdmissionCheck; absent or any other status is inactive."""
    return any(
        cond.get("type") == c.ADMISSION_CHECK_ACTIVE and cond.get("status") == "True"
        for cond in (ac.get("status") or {}).get("conditions") or ()
    )


def active_condition(ac: Mapping[str, Any]) -> dict[str, Any]:
    """The `Active=True` condition a check's controller writes when it can serve the check (the
    provisioning and budget controllers' wording, upstream's `provisioning/admissioncheck_reconciler.go`)."""
    return {
        "type": c.ADMISSION_CHECK_ACTIVE,
        "status": "True",
        "reason": "Active",
        "message": "The admission check is active",
        "observedGeneration": int((ac.get("metadata") or {}).get("generation") or 0),
    }


def checks_in_use(cluster_queues: Iterable[Mapping[str, Any]]) -> set[str]:
    """Names of the AdmissionChecks some ClusterQueue (terminating ones included) refers to."""
    return {
        str(rule.get("name"))
        for cq in cluster_queues
        for rule in ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
    }


def finalized(ac: Mapping[str, Any], in_use: set[str]) -> dict[str, Any] | None:
    """The AdmissionCheck with its `resource-in-use` finalizer added (while it lives) or removed (once
    it is being deleted and no ClusterQueue refers to it); None when nothing changes."""
    meta = ac.get("metadata") or {}
    fins = list(meta.get("finalizers") or ())
    has = c.RESOURCE_IN_USE_FINALIZER in fins
    if not meta.get("deletionTimestamp"):
        if has:
            return None
        fins.append(c.RESOURCE_IN_USE_FINALIZER)
    elif has and meta.get("name") not in in_use:
        fins.remove(c.RESOURCE_IN_USE_FINALIZER)
    else:
        return None
    out = copy.deepcopy(dict(ac))
    out["metadata"]["finalizers"] = fins
    return out


def checks_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """A ClusterQueue event that can change which checks its Workloads need: a new queue, other
    check rules, or other flavors (rules without onFlavors apply to all of them)."""
    if old is None:
        return True
    o, n = old.get("spec") or {}, new.get("spec") or {}
    return (o.get("admissionChecksStrategy"), o.get("resourceGroups")) != (
        n.get("admissionChecksStrategy"),
        n.get("resourceGroups"),
    )


def workloads_routed_to(store: Store, cluster_queue: str | None = None, local_queue: str | None = None) -> list[str]:
    """Keys of the Workloads whose LocalQueue (`namespace/name`, or any routing to `cluster_queue`)
    is the given one: those the workload controller re-checks when the queue changes."""
    routes = {
        object_key(lq)
        for lq in store.list("localqueues")
        if cluster_queue is not None and (lq.get("spec") or {}).get("clusterQueue") == cluster_queue
    }
    if local_queue is not None:
        routes.add(local_queue)
    return [
        object_key(wl)
        for wl in store.list("workloads")
        if f"{wl['metadata'].get('namespace')}/{(wl.get('spec') or {}).get('queueName') or ''}" in routes
    ]


def pending_checks_message(wl: Mapping[str, Any]) -> str:
    """`<check>: <message>; ...` over the Pending checks that have a message (the note of the Job's
    `UpdatedAdmissionCheck` event); "" when there is none."""
    return "; ".join(
        f"{check.get('name')}: {check.get('message')}"
        for check in (wl.get("status") or {}).get("admissionChecks") or ()
        if check.get("state") == c.CHECK_STATE_PENDING and check.get("message")
    )
