"""The `kueue.x-k8s.io/resource-in-use` finalizers of ClusterQueues, ResourceFlavors and
AdmissionChecks: released once a deleted object is no longer used, added to a check in use
(upstream's `clusterqueue_controller.go`, `resourceflavor_controller.go` and
`admissioncheck_controller.go`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.core.cycle import AdmissionCore
from webhook.worker import admission_checks
from webhook.worker.store import Store
from webhook.worker.workqueue import WorkQueue
from webhook.worker.writers import Call, StatusWrite

__all__ = ["Finalizers"]

log = logging.getLogger(__name__)


class Finalizers:
    """Queues the finalizer writes; `release` runs on the core thread after each cycle."""

    def __init__(self, kube: k.Kube, core: AdmissionCore, store: Store, writes: WorkQueue[StatusWrite | Call]) -> None:
        self.kube = kube
        self.core = core
        self.store = store
        self.writes = writes

    def release(self) -> None:
        """Drop the finalizer of every deleted ClusterQueue, ResourceFlavor and AdmissionCheck no longer in use."""
        for cq in self.store.list("clusterqueues"):
            meta = cq["metadata"]
            if meta.get("deletionTimestamp") and c.RESOURCE_IN_USE_FINALIZER in (meta.get("finalizers") or ()):
                node = self.core.cache.cluster_queues.get(meta["name"])
                if node is None or not node.workloads:
                    self._remove_finalizer(
                        "clusterqueues", cq, k.object_path(c.V1BETA2, "clusterqueues", None, meta["name"])
                    )
        flavors = [
            rf
            for rf in self.store.list("resourceflavors")
            if rf["metadata"].get("deletionTimestamp")
            and c.RESOURCE_IN_USE_FINALIZER in (rf["metadata"].get("finalizers") or ())
        ]
        # Which flavors the ClusterQueues name: a walk over every ClusterQueue, only while one is deleted.
        used = {
            fq
            for cq in (self.store.list("clusterqueues") if flavors else ())
            for rg in (cq.get("spec") or {}).get("resourceGroups") or ()
            for fq in (f.get("name") for f in rg.get("flavors") or ())
        }
        for rf in flavors:
            meta = rf["metadata"]
            if meta["name"] not in used:
                self._remove_finalizer(
                    "resourceflavors", rf, k.object_path(c.V1BETA2, "resourceflavors", None, meta["name"])
                )
        deleting = [ac for ac in self.store.list("admissionchecks") if ac["metadata"].get("deletionTimestamp")]
        checks_used = admission_checks.checks_in_use(self.store.list("clusterqueues")) if deleting else set()
        for ac in deleting:
            self.sync_check_finalizer(ac, checks_used)

    def _remove_finalizer(self, kind: str, obj: Mapping[str, Any], path: str) -> None:
        meta = obj["metadata"]
        fins = [f for f in meta.get("finalizers") or () if f != c.RESOURCE_IN_USE_FINALIZER]

        def remove() -> None:
            # A guarded PUT, not a PATCH: upstream's role grants these kinds `update` only.
            body = {**obj, "metadata": {**meta, "finalizers": fins}}
            if not fins:
                del body["metadata"]["finalizers"]
            try:
                self.kube.replace(path, body)
                log.info("released resource-in-use finalizer", extra={"object": meta["name"], "kind": kind})
            except (k.NotFound, k.Conflict):
                pass

        self.writes.add(f"{kind}/{meta['name']}/finalizer", Call(remove))

    def sync_check_finalizer(self, ac: Mapping[str, Any], in_use: set[str]) -> None:
        new = admission_checks.finalized(ac, in_use)
        if new is None:
            return
        name = ac["metadata"]["name"]

        def write() -> None:
            with contextlib.suppress(k.NotFound, k.Conflict):  # gone, or changed: its next event decides again
                self.store.put(
                    "admissionchecks", self.kube.replace(k.object_path(c.V1BETA2, "admissionchecks", None, name), new)
                )
                log.info(
                    "resource-in-use finalizer",
                    extra={
                        "object": name,
                        "kind": "admissionchecks",
                        "decision": "Added"
                        if c.RESOURCE_IN_USE_FINALIZER in new["metadata"]["finalizers"]
                        else "Released",
                    },
                )

        self.writes.add(f"admissionchecks/{name}/finalizer", Call(write))
