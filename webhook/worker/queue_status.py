"""ClusterQueue, LocalQueue and Cohort status, as the admission core computes it, written when
it changed (upstream's `clusterqueue_controller.go`, `localqueue_controller.go` and
`cohort_controller.go` status updates).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.core.cycle import AdmissionCore
from webhook.worker.status import set_condition
from webhook.worker.store import Store
from webhook.worker.workqueue import WorkQueue
from webhook.worker.writers import Call, StatusWrite

__all__ = ["QueueStatusPublisher"]


def _gen(obj: Mapping[str, Any]) -> int:
    return int(o.meta(obj).get("generation") or 0)


class QueueStatusPublisher:
    """Called by the core thread after each cycle; remembers what it last wrote per object."""

    def __init__(self, core: AdmissionCore, store: Store, writes: WorkQueue[StatusWrite | Call]) -> None:
        self.core = core
        self.store = store
        self.writes = writes
        self._published: dict[str, Any] = {}
        # Keys whose write failed (added by the writer threads): computed again at the next publish.
        self._failed: set[str] = set()

    def publish(self, now: datetime) -> None:
        """The status of the ClusterQueues and LocalQueues the core reports changed since the last
        publish (all of them after a queue, flavor or check changed), and of every Cohort, as the
        core computes it now. Recomputing all 1,000 ClusterQueues and LocalQueues of upstream's
        large-scale config every second was most of the core thread's time there (bench_core_scale)."""
        cache = self.core.cache
        changes = self.core.take_status_changes()
        failed, self._failed = self._failed, set()
        if changes is None:
            cq_names, lq_keys = set(cache.cluster_queues), set(cache.local_queues)
        else:
            cq_names = {n for n in changes.cluster_queues if n in cache.cluster_queues}
            lq_keys = {key for key in changes.local_queues if key in cache.local_queues}
        for key in failed:
            kind, _, name = key.partition("/")
            if kind == "clusterqueues" and name in cache.cluster_queues:
                cq_names.add(name)
            elif kind == "localqueues" and name in cache.local_queues:
                lq_keys.add(name)
        for name in sorted(cq_names):
            self._publish(
                f"clusterqueues/{name}",
                "clusterqueues",
                k.object_path(c.V1BETA2, "clusterqueues", None, name),
                self.core.cluster_queue_status(name),
                now,
                optional=("fairSharing",),
            )
        for key in sorted(lq_keys):
            ns, name = key.split("/", 1)
            self._publish(
                f"localqueues/{key}",
                "localqueues",
                k.object_path(c.V1BETA2, "localqueues", ns, name),
                self.core.local_queue_status(ns, name),
                now,
            )
        # Cohort objects (`cohort_controller.go`): only fairSharing, removed when fair sharing is off.
        for cohort in self.store.list("cohorts"):
            name = cohort["metadata"]["name"]
            if name in self.core.cache.forest.cohorts:
                self._publish(
                    f"cohorts/{name}",
                    "cohorts",
                    k.object_path(c.V1BETA2, "cohorts", None, name),
                    self.core.cohort_status(name),
                    now,
                    optional=("fairSharing",),
                )

    def _publish(
        self, key: str, kind: str, path: str, computed: dict[str, Any], now: datetime, *, optional: Sequence[str] = ()
    ) -> None:
        """Write `computed` into the object's status when it changed; `optional` fields absent from
        `computed` are removed (upstream sets them to nil, e.g. fairSharing without fair sharing)."""
        if self._published.get(key) == computed:
            return
        self._published[key] = computed

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            for field_name in optional:
                if field_name not in computed:
                    status.pop(field_name, None)
            for field_name, value in computed.items():
                if field_name != "conditions":
                    status[field_name] = value
            for cond in computed.get("conditions") or ():
                set_condition(status, cond, now, _gen(obj))

        def failed() -> None:
            self._published.pop(key, None)
            self._failed.add(key)

        self.writes.add(key, StatusWrite(kind, path, mutate, failed))
