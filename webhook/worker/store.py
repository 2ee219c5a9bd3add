"""The worker's read cache: the newest copy of every watched object, by kind and `namespace/name`.

Informer threads and writers both put objects here; an older resourceVersion never replaces a
newer one (resourceVersions are compared as KEP-5504, "comparable resource versions", defines it
for objects of one kind: as decimal integers when both are such, otherwise not at all, and then the
later put wins), and a deleted object is not brought back by a writer's answer that predates the delete
(a tombstone keeps its last resourceVersion a while). Every object is trimmed in place on the way
in (`transform.compact`). Readers get the stored dict itself and must not mutate it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.worker.transform import compact

__all__ = ["Store", "object_key"]


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def _rv(obj: Mapping[str, Any]) -> int | None:
    """The resourceVersion as a number, when it is one in KEP-5504's form (decimal digits, no
    leading zero); None for a version that cannot be ordered (opaque, e.g. an aggregated API's)."""
    text = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        return None
    return int(text)


def _compare(a: int | None, b: int | None) -> int | None:
    """-1, 0 or 1 as `a` precedes, equals or follows `b`; None when they cannot be ordered."""
    return None if a is None or b is None else (a > b) - (a < b)


#: How long a deleted object's resourceVersion is remembered: far longer than any write in flight.
TOMBSTONE_S = 300.0


class Store:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[str, dict[str, Any]]] = {}
        # (kind, key) -> (resourceVersion at deletion, monotonic time of the delete)
        self._tombstones: dict[tuple[str, str], tuple[int | None, float]] = {}
        self._next_prune = 0.0

    def put(self, kind: str, obj: dict[str, Any]) -> bool:
        """Store `obj` unless a newer version is held, or it was deleted at a later version; True when stored.
        Without the tombstone, a status write answered after the watch's DELETED event would bring a deleted
        ClusterQueue back for good (and keep its flavors' resource-in-use finalizers)."""
        key = object_key(compact(kind, obj))
        with self._lock:
            objs = self._kinds.setdefault(kind, {})
            old = objs.get(key)
            if old is not None and (_compare(_rv(obj), _rv(old)) or 0) < 0:
                return False
            tomb = self._tombstones.get((kind, key))
            if tomb is not None:
                order = _compare(_rv(obj), tomb[0])
                if order is not None and order <= 0:
                    return False
                del self._tombstones[(kind, key)]  # created again
            objs[key] = obj
            return True

    def delete(self, kind: str, key: str, last: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """Drop the object; `last` (the DELETED event's object) gives the version answers older than the
        delete carry at most, else the held copy's version is remembered."""
        now = time.monotonic()
        with self._lock:
            held = self._kinds.setdefault(kind, {}).pop(key, None)
            versions = [v for v in (_rv(last) if last else None, _rv(held) if held else None) if v is not None]
            rv = max(versions, default=None)
            if now >= self._next_prune:  # at most once a minute: deletes come by the thousand at scale
                self._tombstones = {k: t for k, t in self._tombstones.items() if now - t[1] < TOMBSTONE_S}
                self._next_prune = now + 60.0
            self._tombstones[(kind, key)] = (rv, now)
            return held

    def replace(self, kind: str, objs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """A relist: the new set, returning the objects that disappeared."""
        fresh = {object_key(o): compact(kind, o) for o in objs}
        with self._lock:
            old = self._kinds.get(kind, {})
            self._kinds[kind] = fresh
        return [o for k, o in old.items() if k not in fresh]

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._kinds.get(kind, {}).get(key)

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            objs = list(self._kinds.get(kind, {}).values())
        if namespace is None:
            return objs
        return [o for o in objs if (o.get("metadata") or {}).get("namespace") == namespace]
