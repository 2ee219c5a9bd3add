"""A bounded LRU whose entries expire after their own TTL: the authentication and authorization
caches of the worker's HTTPS servers (`metrics_server`, `visibility_auth`), as the delegating
authenticator and authorizer of `k8s.io/apiserver` cache review answers."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["TTLCache"]

K = TypeVar("K")
V = TypeVar("V")


@dataclass(slots=True)
class TTLCache(Generic[K, V]):
    """Thread-safe; the least recently used entry leaves first once `size` is reached."""

    size: int
    clock: Callable[[], float]
    _entries: OrderedDict[K, tuple[float, V]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            if hit[0] <= self.clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return hit[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        with self._lock:
            self._entries[key] = (self.clock() + ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
