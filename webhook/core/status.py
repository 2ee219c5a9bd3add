"""Pure functions computing ClusterQueue, LocalQueue and Cohort status from the core's state.

Mirrors `pkg/controller/core/{clusterqueue,localqueue,cohort}_controller.go` and `Usage` /
`getUsage` in `pkg/cache/scheduler/cache.go` (upstream commit ff69552e79). Conditions are returned
as `{type, status, reason, message}`; the worker adds lastTransitionTime and observedGeneration
with the usual SetStatusCondition rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api import constants
from webhook.api.constants import LocalQueueActiveReason as _LQR
from webhook.core import fair_sharing as fs
from webhook.core.cache import Cache
from webhook.core.model import ClusterQueueSpec, StopPolicy
from webhook.core.queues import QueueManager
from webhook.core.resources import FlavorResource, format_quantity

__all__ = ["cluster_queue_status", "cohort_status", "local_queue_status"]


def _flavor_list(
    spec: ClusterQueueSpec, usage: Mapping[FlavorResource, int], *, with_borrowed: bool
) -> list[dict[str, Any]]:
    out = []
    for rg in spec.resource_groups:
        for fq in rg.flavors:
            resources = []
            for res in sorted(rg.covered_resources):
                total = usage.get(FlavorResource(fq.name, res), 0)
                entry: dict[str, Any] = {"name": res, "total": format_quantity(res, total)}
                if with_borrowed:
                    nominal = spec.quotas.get(FlavorResource(fq.name, res))
                    borrowed = total - (nominal.nominal if nominal else 0)
                    entry["borrowed"] = format_quantity(res, borrowed if borrowed > 0 and spec.cohort else 0)
                resources.append(entry)
            out.append({"name": fq.name, "resources": resources})
    return out


def cluster_queue_status(
    cache: Cache, queues: QueueManager, name: str, *, fair_sharing: bool = False
) -> dict[str, Any]:
    """status of a ClusterQueue: usage lists, workload counts, Active condition, weighted share."""
    ready = cache.readiness(name)
    cond = {
        "type": constants.QueueCondition.ACTIVE,
        "status": "True" if ready.active else "False",
        "reason": ready.reason,
        "message": ready.message,
    }
    node = cache.cluster_queues.get(name)
    if node is None:
        return {"conditions": [cond], "pendingWorkloads": 0, "reservingWorkloads": 0, "admittedWorkloads": 0}
    active, inadmissible = queues.pending_in_cluster_queue(name)
    workloads = list(node.workloads.values())
    out: dict[str, Any] = {
        "conditions": [cond],
        "flavorsReservation": _flavor_list(node.spec, cache.cq_usage(name), with_borrowed=True),
        "flavorsUsage": _flavor_list(node.spec, cache.cq_usage(name, admitted_only=True), with_borrowed=True),
        "pendingWorkloads": active + inadmissible,
        "reservingWorkloads": len(workloads),
        "admittedWorkloads": sum(1 for w in workloads if w.is_admitted),
    }
    if fair_sharing:
        out["fairSharing"] = {"weightedShare": fs.dominant_resource_share(node).weighted_share()}
    return out


def local_queue_status(cache: Cache, queues: QueueManager, key: str) -> dict[str, Any]:
    """status of a LocalQueue: Active condition, counts and usage of its workloads."""
    lq = cache.local_queues.get(key)
    if lq is None:
        return {}
    node = cache.cluster_queues.get(lq.cluster_queue)
    if lq.stop_policy != StopPolicy.NONE:
        cond = ("False", _LQR.STOPPED, "LocalQueue is stopped")
    elif node is None:
        cond = ("False", _LQR.CLUSTER_QUEUE_DOES_NOT_EXIST, "Can't submit new workloads to clusterQueue")
    elif not cache.readiness(lq.cluster_queue).active:
        cond = ("False", _LQR.CLUSTER_QUEUE_IS_INACTIVE, "Can't submit new workloads to clusterQueue")
    else:
        cond = ("True", _LQR.READY, "Can submit new workloads to localQueue")
    out: dict[str, Any] = {
        "conditions": [
            {"type": constants.QueueCondition.ACTIVE, "status": cond[0], "reason": cond[1], "message": cond[2]}
        ],
        "pendingWorkloads": queues.pending_in_local_queue(key) if lq.stop_policy == StopPolicy.NONE else 0,
        "reservingWorkloads": 0,
        "admittedWorkloads": 0,
    }
    if node is None:
        # Upstream writes empty usage stats when the ClusterQueue is gone (`LocalQueueUsageStats{}`).
        return out
    reserved: dict[FlavorResource, int] = {}
    used: dict[FlavorResource, int] = {}
    for wl in cache.reserving_in_local_queue(key):
        out["reservingWorkloads"] += 1
        for fr, v in wl.usage().items():
            reserved[fr] = reserved.get(fr, 0) + v
        if wl.is_admitted:
            out["admittedWorkloads"] += 1
            for fr, v in wl.usage().items():
                used[fr] = used.get(fr, 0) + v
    out["flavorsReservation"] = _flavor_list(node.spec, reserved, with_borrowed=False)
    out["flavorsUsage"] = _flavor_list(node.spec, used, with_borrowed=False)
    return out


def cohort_status(cache: Cache, name: str, *, fair_sharing: bool = False) -> dict[str, Any]:
    """status of a Cohort: only fairSharing.weightedShare, and only with fair sharing."""
    node = cache.forest.cohorts.get(name)
    if node is None or not fair_sharing:
        return {}
    return {"fairSharing": {"weightedShare": fs.dominant_resource_share(node).weighted_share()}}
