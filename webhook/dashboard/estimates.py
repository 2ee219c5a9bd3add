"""Wait estimates on the dashboard: the core's simulation over the dashboard's own caches, scored.

The same estimator as the visibility API (`core.wait_estimate`, `core.estimate_accuracy`), fed
from the watch caches the pages are rendered from instead of an event feed: at each history
sample the dashboard rebuilds a quota `Cache` from the cached ClusterQueues, Cohorts,
ResourceFlavors and Workloads, orders each ClusterQueue's pending Workloads as the page ranks them
(`views.positions`, the core's heap order), and simulates. Reservations that appeared since the
last sample are scored against the first and latest estimate this process made for them. As the
History page, it is kept in memory: a restarted dashboard starts over.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime

from webhook.core import usage
from webhook.core.cache import Cache
from webhook.core.estimate_accuracy import Accuracy, EstimateLog
from webhook.core.snapshot import take_snapshot
from webhook.core.wait_estimate import Estimate, RunTimes, estimate_admissions
from webhook.core.workload import WorkloadInfo, WorkloadKey
from webhook.dashboard import views
from webhook.dashboard.store import Kind, Store

__all__ = ["OBSERVED_RUNS", "Estimates"]

#: Finished Workloads per ClusterQueue whose run times the median is taken over (as the visibility API).
OBSERVED_RUNS = 20


class Estimates:
    """The latest estimates and the log that scores them; sampled from one task, read by pages."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._log = EstimateLog()
        self.current: Mapping[WorkloadKey, Estimate] = {}

    def accuracy(self, cluster_queue: str) -> Accuracy:
        with self._lock:
            return self._log.accuracy(cluster_queue)

    def sample(self, store: Store, now: datetime) -> None:
        """Score the reservations made since the last sample, then estimate every pending Workload."""
        entries = store.workloads()
        cache = Cache()
        for obj in store.objects(Kind.RESOURCE_FLAVORS).values():
            cache.upsert_resource_flavor(obj)
        for obj in store.objects(Kind.COHORTS).values():
            cache.upsert_cohort(obj)
        inactive = set()
        for name, obj in store.objects(Kind.CLUSTER_QUEUES).items():
            cache.upsert_cluster_queue(obj)
            if not views.active_condition(obj.get("status") or {})[0]:
                inactive.add(name)
        limits: dict[WorkloadKey, int] = {}
        runs: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for e in entries.values():
            cache.upsert_workload(e.info)
            limit = (e.raw.get("spec") or {}).get("maximumExecutionTimeSeconds")
            if limit is not None:
                limits[e.info.key] = int(limit)
            if e.info.is_finished and (held := usage.holding_of(e.raw)) is not None and held.end is not None:
                runs[e.info.admission_cluster_queue].append((held.end, float(held.end - held.start)))
        observed = {cq: tuple(s for _, s in sorted(r)[-OBSERVED_RUNS:]) for cq, r in runs.items()}
        queues: dict[str, list[WorkloadInfo]] = defaultdict(list)
        routes = views.queue_map(store)
        pos = views.positions(entries.values(), routes)
        for key in sorted(pos, key=lambda k: pos[k][0]):
            wl = entries[key].info
            cq = routes[f"{wl.namespace}/{wl.queue_name}"]
            if cq not in inactive:
                queues[cq].append(wl)
        estimates = estimate_admissions(
            take_snapshot(cache, active_only=False), queues, RunTimes(limits, observed), now
        )
        with self._lock:
            for e in entries.values():
                at = e.info.quota_reserved_time
                if at is not None and e.info.admission_cluster_queue:
                    self._log.admitted(e.info.key, e.info.admission_cluster_queue, at)
            self._log.retain(estimates.keys())
            self._log.record(estimates)
            self.current = estimates
