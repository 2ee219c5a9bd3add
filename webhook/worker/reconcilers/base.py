"""The one shape every reconciler has towards the Manager.

The Manager hands each watch event to every reconciler (`on_event`) and starts them all once the
caches are synced (`start`); a reconciler keys and queues its own work. This is the role
controller-runtime's `SetupWithManager` + `Watches` plays for upstream's controllers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Reconciler"]


class Reconciler(Protocol):
    def start(self) -> None:
        """Start the work queue's workers (called once every informer has listed)."""
        ...

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        """A watch event for `obj` of `kind` (resource plural); `old` is the version stored before
        it, for ClusterQueues and LocalQueues (None otherwise). Called from informer threads."""
        ...
