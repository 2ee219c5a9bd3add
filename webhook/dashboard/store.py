"""The dashboard's watch caches: one informer per kind it shows, held as raw dicts, parsed once.

Each page is rendered from these caches, so a page view costs no List against the API server;
a change bumps `version` and calls the listeners (the live stream wakes its clients with it).
Each kind also keeps the version at which each of its namespaces last changed, so a live stream
can tell a change its user may see from one elsewhere (`version_of`).
Workloads are parsed into `WorkloadInfo` when they arrive, since every page reads them and
parsing 10,000 of them per render would dominate the render.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from webhook.api import constants, schema_usage
from webhook.core.workload import WorkloadInfo, parse_workload

__all__ = ["KINDS", "Kind", "Store", "WorkloadEntry"]

log = logging.getLogger(__name__)


class Kind(StrEnum):
    """The kinds the dashboard watches; each value is the API resource name."""

    CLUSTER_QUEUES = "clusterqueues"
    LOCAL_QUEUES = "localqueues"
    WORKLOADS = "workloads"
    RESOURCE_FLAVORS = "resourceflavors"
    COHORTS = "cohorts"
    USAGE_RECORDS = "usagerecords"  # ours (`pykueue.io`): the usage page's hourly totals


#: REST collection paths (all namespaces for the namespaced kinds).
KINDS: Mapping[Kind, str] = {
    kind: f"/apis/{schema_usage.API_VERSION}/{kind.value}"
    if kind is Kind.USAGE_RECORDS
    else f"/apis/{constants.GROUP}/v1beta2/{kind.value}"
    for kind in Kind
}


@dataclass(frozen=True, slots=True)
class WorkloadEntry:
    """A Workload as the API server sent it and as the core reads it."""

    raw: Mapping[str, Any]
    info: WorkloadInfo


def _namespace(key: str) -> str:
    """The namespace part of a cache key; "" for a cluster-scoped object."""
    ns, slash, _ = key.partition("/")
    return ns if slash else ""


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


class Store:
    """Thread-safe caches fed by informer threads; readers get copies of the current maps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[Kind, dict[str, Mapping[str, Any]]] = {kind: {} for kind in Kind}
        self._workloads: dict[str, WorkloadEntry] = {}
        self._synced: set[Kind] = set()
        self._listeners: list[Callable[[int], None]] = []
        self._changed_at: dict[Kind, dict[str, int]] = {kind: {} for kind in Kind}
        self.version = 0

    def subscribe(self, listener: Callable[[int], None]) -> None:
        """Call `listener(version)` after each change, from the informer's thread."""
        self._listeners.append(listener)

    def synced(self) -> bool:
        return len(self._synced) == len(Kind)

    def replace(self, kind: Kind, items: list[dict[str, Any]]) -> None:
        """A fresh List: the kind's cache becomes exactly `items`."""
        objects: dict[str, Mapping[str, Any]] = {_key(o): o for o in items}
        entries = {k: _entry(o) for k, o in objects.items()} if kind is Kind.WORKLOADS else None
        with self._lock:
            touched = {_namespace(k) for k in self._objects[kind]} | {_namespace(k) for k in objects}
            self._objects[kind] = objects
            if entries is not None:
                self._workloads = entries
            self._synced.add(kind)
        self._changed(kind, touched)

    def apply(self, kind: Kind, event: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED or DELETED)."""
        key = _key(obj)
        entry = _entry(obj) if kind is Kind.WORKLOADS and event != "DELETED" else None
        with self._lock:
            if event == "DELETED":
                self._objects[kind].pop(key, None)
                if kind is Kind.WORKLOADS:
                    self._workloads.pop(key, None)
            else:
                self._objects[kind][key] = obj
                if entry is not None:
                    self._workloads[key] = entry
        self._changed(kind, (_namespace(key),))

    def objects(self, kind: Kind) -> dict[str, Mapping[str, Any]]:
        """The cached objects of `kind` by `namespace/name` (or name); a shallow copy of the map."""
        with self._lock:
            return dict(self._objects[kind])

    def namespaces(self) -> frozenset[str]:
        """Namespaces that hold a LocalQueue or a Workload: the only ones a page can show anything of."""
        with self._lock:
            out = {key.partition("/")[0] for key in self._objects[Kind.LOCAL_QUEUES]}
            out.update(key.partition("/")[0] for key in self._workloads)
        return frozenset(out)

    def workloads(self) -> dict[str, WorkloadEntry]:
        with self._lock:
            return dict(self._workloads)

    def version_of(self, kind: Kind, namespaces: Collection[str] | None = None) -> int:
        """The version at which `kind` last changed in any of `namespaces` (None: anywhere); 0 if never."""
        with self._lock:
            changed = self._changed_at[kind]
            if namespaces is None:
                return max(changed.values(), default=0)
            return max((changed.get(ns, 0) for ns in namespaces), default=0)

    def _changed(self, kind: Kind, namespaces: Iterable[str]) -> None:
        with self._lock:
            self.version += 1
            version = self.version
            for ns in namespaces:
                self._changed_at[kind][ns] = version
        for listener in self._listeners:
            listener(version)


def _entry(obj: Mapping[str, Any]) -> WorkloadEntry:
    return WorkloadEntry(obj, parse_workload(obj))
