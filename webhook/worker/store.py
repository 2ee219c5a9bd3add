"""The worker's read cache: the newest copy of every watched object, by kind and `namespace/name`.

Informer threads and writers both put objects here; an older resourceVersion never replaces a
newer one (etcd's revisions are integers in practice, so they are compared as such when they
parse). Readers get the stored dict itself and must not mutate it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.kube import strip_managed_fields

__all__ = ["Store", "object_key"]


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Store:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[str, dict[str, Any]]] = {}

    def put(self, kind: str, obj: dict[str, Any]) -> bool:
        """Store `obj` unless a newer version is held; True when stored."""
        key = object_key(strip_managed_fields(obj))
        with self._lock:
            objs = self._kinds.setdefault(kind, {})
            old = objs.get(key)
            if old is not None and _rv(old) > _rv(obj):
                return False
            objs[key] = obj
            return True

    def delete(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._kinds.setdefault(kind, {}).pop(key, None)

    def replace(self, kind: str, objs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """A relist: the new set, returning the objects that disappeared."""
        fresh = {object_key(o): strip_managed_fields(o) for o in objs}
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
