"""What reaches the core thread: the typed messages of the Manager's core queue.

Informer threads put watch events and list-complete markers; write threads report an Admit or
a status write that failed, so the core drops what it assumed. One thread (the core loop) reads
them in arrival order, which is what lets the admission core stay single-threaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AdmissionFailed", "CoreMessage", "Synced", "Watched", "WriteFailed"]


@dataclass(frozen=True, slots=True)
class Watched:
    """A watch event (`ADDED`, `MODIFIED`, `DELETED`) for an object of `kind` (the resource plural)."""

    kind: str
    etype: str
    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Synced:
    """The informer of `kind` delivered its whole initial list (every event before this one)."""

    kind: str


@dataclass(frozen=True, slots=True)
class AdmissionFailed:
    """The Admit write for Workload `key` failed: the core forgets the reservation it assumed."""

    key: str


@dataclass(frozen=True, slots=True)
class WriteFailed:
    """A queue-state or preemption write on Workload `key` failed: the core reconsiders it."""

    key: str


CoreMessage = Watched | Synced | AdmissionFailed | WriteFailed
