"""What the users of a LocalQueue can draw on now: per flavor and resource of its ClusterQueue.

Not an upstream API (upstream asks #1526/#13854). The numbers come from the same cohort-tree
algebra the flavor assigner reads (`resource_node.available` and `potential_available`, as
`_fits_quota` in `flavor_assigner.py` calls them; upstream `pkg/scheduler/flavorassigner/
flavorassigner.go` `fitsResourceQuota`), over a `Cache` kept from the same watches, so
"can borrow now" honours borrowingLimit, what the cohort's members may lend (lendingLimit) and
what the cohort already uses, exactly as the next scheduling cycle would see them, minus the
leader's in-memory reservations whose writes have not landed yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.core.cache import Cache
from webhook.core.resource_node import available, potential_available
from webhook.core.resources import FlavorResource

__all__ = ["QueueLimits", "ResourceLimits", "local_queue_limits"]


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """One flavor and resource of the ClusterQueue, in the core's integer amounts.

    `available` is what a workload could be given right now without preemption (unused nominal
    quota plus what may be borrowed); `borrowable` the part of it above the unused nominal quota;
    `max_available` the most the ClusterQueue could ever hold (nominal + borrowing, capped by the
    cohort), whatever the usage. Outside a cohort nothing can be borrowed, so the borrowing limit
    is 0 there whatever the spec says (an absent limit would read as unlimited)."""

    flavor: FlavorResource
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    used: int
    used_by_local_queue: int
    available: int
    borrowable: int
    max_available: int


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """A LocalQueue's ClusterQueue and its limits, in the ClusterQueue's resource-group order."""

    cluster_queue: str
    cohort: str
    resources: tuple[ResourceLimits, ...]


def local_queue_limits(cache: Cache, key: str) -> QueueLimits | None:
    """The limits of LocalQueue `ns/name`; None when the LocalQueue is unknown. A LocalQueue whose
    ClusterQueue does not exist (yet) gets its name and no resources."""
    lq = cache.local_queues.get(key)
    if lq is None:
        return None
    node = cache.cluster_queues.get(lq.cluster_queue)
    if node is None:
        return QueueLimits(lq.cluster_queue, "", ())
    by_lq: dict[FlavorResource, int] = {}
    for wl in node.workloads.values():
        if wl.namespace == lq.namespace and wl.queue_name == lq.name:
            for fr, v in wl.usage().items():
                by_lq[fr] = by_lq.get(fr, 0) + v
    out = []
    for rg in node.spec.resource_groups:
        for fq in rg.flavors:
            for res in sorted(rg.covered_resources):  # as the status lists them
                fr = FlavorResource(fq.name, res)
                quota = node.quota(fr)
                used = node.usage.get(fr, 0)
                avail = available(node, fr)
                in_cohort = node.parent is not None
                out.append(
                    ResourceLimits(
                        flavor=fr,
                        nominal=quota.nominal,
                        borrowing_limit=quota.borrowing_limit if in_cohort else 0,
                        lending_limit=quota.lending_limit if in_cohort else None,
                        used=used,
                        used_by_local_queue=by_lq.get(fr, 0),
                        available=avail,
                        borrowable=max(0, avail - max(0, quota.nominal - used)),
                        max_available=potential_available(node, fr),
                    )
                )
    return QueueLimits(node.name, node.spec.cohort, tuple(out))
