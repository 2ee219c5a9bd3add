"""Submit-time warnings about the queue a Job or Pod names (our addition; upstream warns about none of these).

kubectl prints them at create (`Warning: …`); the object is never refused for them. Each is certain,
never a guess: the LocalQueue does not exist in the namespace; its ClusterQueue's namespaceSelector
does not select the namespace; or a pod set asks for more of a resource than any flavor of the
ClusterQueue could ever give (nominal quota, plus the borrowing limit in a cohort; a cohort member
without a borrowing limit could borrow an amount the webhook cannot know, so it is not judged).
Requests are judged as quota charges them: after the Configuration's excluded prefixes and
resource transformations (`core.quota_resources`), as the admission worker does.
Answers come from the lookup caches only: no API call on the request path.

One more, not a certainty but worth knowing at submit time: a Budget (ours, `pykueue.io`) covering
the queue is at least `BUDGET_WARN_PERCENT` spent (its status as the leader last wrote it, committed
runtime included): the job may wait for the budget's next period.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from webhook.admission.context import Context
from webhook.api import quantity
from webhook.core import budget, model
from webhook.core.quota_resources import QuotaResources
from webhook.core.resources import FlavorResource
from webhook.core.workload import pod_requests

__all__ = ["BUDGET_WARN_PERCENT", "PodSetDemand", "budget_warnings", "pod_set_demand", "queue_warnings"]

BUDGET_WARN_PERCENT = 90

#: (pods, per-pod requests) of one pod set.
PodSetDemand = tuple[int, Mapping[str, int]]


def pod_set_demand(count: int, pod_spec: Mapping[str, object]) -> PodSetDemand:
    return count, pod_requests(pod_spec)


def _most(cq: model.ClusterQueueSpec, flavor: str, resource: str) -> int | None:
    """The most `cq` could ever hold of one flavor and resource; None when it cannot be known here."""
    quota = cq.quotas.get(FlavorResource(flavor, resource))
    if quota is None:
        return 0
    if not cq.cohort:
        return quota.nominal
    return None if quota.borrowing_limit is None else quota.nominal + quota.borrowing_limit


def _never_fits(cq: model.ClusterQueueSpec, demand: Sequence[PodSetDemand]) -> list[str]:
    out = []
    for count, requests in demand:
        for resource in sorted(requests):
            group = cq.resource_to_group.get(resource)
            if group is None or not requests[resource]:
                continue
            most = [_most(cq, f, resource) for f in cq.resource_groups[group].flavor_names]
            if not most or any(m is None for m in most):
                continue
            best = max(m for m in most if m is not None)
            total = requests[resource] * count
            if total > best:
                out.append(
                    f"{resource} {quantity.format_amount(resource, total)} requested, "
                    f"at most {quantity.format_amount(resource, best)} in any flavor"
                )
    return out


def queue_warnings(kind: str, namespace: str, queue: str, demand: Sequence[PodSetDemand], ctx: Context) -> list[str]:
    """Warnings for a `kind` object of `namespace` naming LocalQueue `queue` with these pod sets."""
    if not queue:
        return []
    lookups = ctx.lookups
    cq_name = lookups.local_queue_cluster_queue(namespace, queue)
    if cq_name is None:
        return [
            f'LocalQueue "{queue}" does not exist in namespace "{namespace}": the {kind} stays pending until it is created'
        ]
    cq = lookups.cluster_queue(cq_name)
    if cq is None:
        return []
    out = []
    labels = lookups.namespace_labels(namespace)
    if cq.namespace_selector is None or not cq.namespace_selector.matches(labels):
        out.append(
            f'ClusterQueue "{cq_name}" of LocalQueue "{queue}" does not select namespace "{namespace}": '
            f"the {kind} cannot be admitted"
        )
    res = ctx.config.resources
    if res.exclude_resource_prefixes or res.transformations:
        rules = QuotaResources.from_config(res.exclude_resource_prefixes, res.transformations)
        demand = [(count, rules.apply(requests)) for count, requests in demand]
    reasons = _never_fits(cq, demand)
    if reasons:
        out.append(f'the {kind} can never fit ClusterQueue "{cq_name}": ' + "; ".join(reasons))
    return out + budget_warnings(kind, namespace, queue, cq_name, cq.cohort or "", ctx)


def budget_warnings(kind: str, namespace: str, queue: str, cq_name: str, cohort: str, ctx: Context) -> list[str]:
    """One warning per Budget covering the queue whose status says it is nearly spent, by name."""
    out = []
    for obj in sorted(ctx.lookups.budgets(), key=lambda o: str((o.get("metadata") or {}).get("name"))):
        status = obj.get("status") or {}
        used = status.get("usedPercent")
        if not isinstance(used, int) or used < BUDGET_WARN_PERCENT:
            continue
        try:
            bud = budget.parse_budget(obj)
        except budget.BudgetError:
            continue
        if not bud.target.covers_queue(cluster_queue=cq_name, cohort=cohort, namespace=namespace, local_queue=queue):
            continue
        when = f"resets at {status['resetAt']}" if status.get("resetAt") else f"a rolling window of {bud.period.text}"
        out.append(
            f'budget "{bud.name}" ({bud.target.describe()}) is {used}% spent ({when}): the {kind} may wait for budget'
        )
    return out
