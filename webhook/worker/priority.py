"""A WorkloadPriorityClass's value → `spec.priority` of the Workloads that name it.

Mirrors `pkg/controller/core/workloadpriorityclass_controller.go` (upstream commit ff69552e79):
when a class is created, or its `value` changes, every Workload whose `spec.priorityClassRef` is
(`kueue.x-k8s.io`, `WorkloadPriorityClass`, <name>) gets `spec.priority = value` by an update of
the whole object, whatever the Workload's state (pending, admitted or finished alike). Workloads
already at the value are not written; deleting a class changes nothing. The scheduler then sees
the new priority through the Workload's update event.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.worker import workload_writes
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry

__all__ = ["references", "sync_workload_priorities"]

log = logging.getLogger(__name__)

WPC_KIND = "WorkloadPriorityClass"


def references(wl: Mapping[str, Any], name: str) -> bool:
    """Whether the Workload names the WorkloadPriorityClass `name` (upstream's field index)."""
    ref = (wl.get("spec") or {}).get("priorityClassRef") or {}
    return ref.get("group") == c.GROUP and ref.get("kind") == WPC_KIND and ref.get("name") == name


def _update_priority(
    kube: k.Kube, store: Store, wl: Mapping[str, Any], name: str, value: int, *, attempts: int = 3
) -> bool:
    """PUT the Workload with the new priority, guarded by its resourceVersion; False if nothing written."""
    current: Mapping[str, Any] | None = wl
    for _ in range(attempts):
        if current is None:
            current = kube.get(workload_writes.path(wl))
        if current is None or not references(current, name) or (current.get("spec") or {}).get("priority") == value:
            return False  # gone, or changed meanwhile so that there is nothing left to do
        body = copy.deepcopy(dict(current))
        body["spec"]["priority"] = value
        try:
            workload_writes.replace(kube, store, body)
            return True
        except k.Conflict:
            current = None
        except k.NotFound:
            return False
    raise k.Conflict(409, f"workload {object_key(wl)}: still conflicting after {attempts} attempts")


def sync_workload_priorities(kube: k.Kube, store: Store, name: str) -> list[str]:
    """Bring every Workload naming class `name` to its current value; the keys written.

    Failures (other than a vanished Workload) end in `Retry`, so the class is reconciled again,
    as upstream returns the joined update errors to controller-runtime.
    """
    wpc = store.get("workloadpriorityclasses", name)
    if wpc is None:
        return []
    value = int(wpc.get("value") or 0)
    updated: list[str] = []
    failed: list[str] = []
    for wl in sorted(store.list("workloads"), key=object_key):
        if not references(wl, name) or (wl.get("spec") or {}).get("priority") == value:
            continue
        key = object_key(wl)
        try:
            if _update_priority(kube, store, wl, name, value):
                updated.append(key)
                log.info(
                    "updated workload priority",
                    extra={"object": key, "kind": "Workload", "workload_priority_class": name, "priority": value},
                )
        except k.KubeError as exc:
            log.warning("workload priority update failed", extra={"object": key, "error": str(exc)})
            failed.append(key)
    if failed:
        raise Retry(1.0, f"priority of {len(failed)} workload(s) of WorkloadPriorityClass {name} not updated")
    return updated
