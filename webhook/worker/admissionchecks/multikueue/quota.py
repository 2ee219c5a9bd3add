"""Manager quota automation (gate MultiKueueManagerQuotaAutomation): a manager ClusterQueue whose
MultiKueueConfig says `quotaManagement: Automated` takes as nominal quota the sum of what its
workers' ClusterQueues offer, so the manager admits what the workers can run.

Which worker ClusterQueues count: those a worker LocalQueue of the same namespace and name as one of
the manager queue's LocalQueues points at, on the connected workers of the config. Every nominal
quota of every flavor of those queues adds up per resource; the manager queue (one resource group of
one flavor) gets the sum for each covered resource, in its order.

Mirrors upstream v0.19.2 `pkg/controller/admissionchecks/multikueue/clusterqueue.go`
(`cqReconciler.Reconcile`, `aggregateWorkerQuotas`); the condition's reasons and messages are
upstream's. Pure: the reconciler reads the manager's and the workers' objects and writes the plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.api import constants as c
from webhook.api import multikueue as mk
from webhook.api import objects as o
from webhook.api import quantity
from webhook.api.objects import Obj

__all__ = [
    "CONDITION",
    "QUOTA_AUTOMATED",
    "QuotaPlan",
    "WorkerQueues",
    "aggregate",
    "multikueue_check_of",
    "plan_quota",
]

CONDITION = "MultiKueueManagerQuotaAutomation"
QUOTA_AUTOMATED = "QuotaAutomated"
_UNSUPPORTED = "UnsupportedConfiguration"
_AUTOMATED = "Automated"


@dataclass(frozen=True, slots=True)
class WorkerQueues:
    """One connected worker's LocalQueues and ClusterQueues."""

    local_queues: Sequence[Obj]
    cluster_queues: Sequence[Obj]


@dataclass(frozen=True, slots=True)
class QuotaPlan:
    """What to write: the condition (None: remove it), and the flavor's new `resources` (None: keep)."""

    condition: dict[str, Any] | None
    resources: list[dict[str, Any]] | None = None


def _condition(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": CONDITION, "status": status, "reason": reason, "message": message}


def aggregate(local_queue_keys: Iterable[str], workers: Iterable[WorkerQueues]) -> dict[str, str]:
    """`aggregateWorkerQuotas`: per resource, the sum of the nominal quotas of the worker queues
    the manager queue's LocalQueues lead to, as Go prints the sum of quantities."""
    keys = set(local_queue_keys)
    texts: dict[str, list[str]] = {}
    for worker in workers:
        targets = {
            str((lq.get("spec") or {}).get("clusterQueue") or "") for lq in worker.local_queues if o.key(lq) in keys
        }
        for cq in worker.cluster_queues:
            if o.name(cq) not in targets:
                continue
            for rg in (cq.get("spec") or {}).get("resourceGroups") or ():
                for flavor in rg.get("flavors") or ():
                    for res in flavor.get("resources") or ():
                        texts.setdefault(str(res["name"]), []).append(str(res.get("nominalQuota", "0")))
    return {name: quantity.format_sum(values) for name, values in texts.items()}


def plan_quota(
    cq: Obj,
    check_found: bool,
    config: Obj | None,
    totals: Mapping[str, str],
) -> QuotaPlan:
    """`cqReconciler.Reconcile` for the manager ClusterQueue `cq`: `check_found` whether one of its
    checks is MultiKueue's, `config` that check's MultiKueueConfig (None: not found), `totals` what
    `aggregate` gave."""
    if not check_found:
        return QuotaPlan(None)
    if config is None:
        return QuotaPlan(_condition("False", _UNSUPPORTED, "The referenced MultiKueueConfig was not found."))
    if (config.get("spec") or {}).get("quotaManagement", "Manual") != _AUTOMATED:
        return QuotaPlan(
            _condition("False", "NotRequested", "MultiKueue manager quota automation has not been requested.")
        )
    groups = (cq.get("spec") or {}).get("resourceGroups") or []
    if len(groups) != 1 or len(groups[0].get("flavors") or ()) != 1:
        return QuotaPlan(
            _condition(
                "False",
                _UNSUPPORTED,
                "Quota automation requires that the manager-side ClusterQueue has exactly one ResourceFlavor",
            )
        )
    covered = [str(r) for r in groups[0].get("coveredResources") or ()]
    missing = sorted(set(totals) - set(covered))
    if missing:
        message = f"manager-side coveredResources is missing resources configured on workers: {mk.go_list(missing)}"
        return QuotaPlan(_condition("False", _UNSUPPORTED, message))
    resources = [{"name": name, "nominalQuota": totals.get(name, "0")} for name in covered]
    current = groups[0]["flavors"][0].get("resources") or []
    changed = [dict(r) for r in current] != resources
    automated = _condition(
        "True", QUOTA_AUTOMATED, "ClusterQueue quota is automatically managed based on MultiKueue workers."
    )
    return QuotaPlan(automated, resources if changed else None)


def multikueue_check_of(cq: Obj, controllers: Mapping[str, str]) -> str | None:
    """`getMultiKueueAdmissionCheck`: the name of the queue's check that is MultiKueue's, if any."""
    strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
    names = [str(rule.get("name")) for rule in strategy.get("admissionChecks") or ()]
    return next((n for n in sorted(names) if controllers.get(n) == c.MULTIKUEUE_CONTROLLER), None)
