"""The writer threads: status changes merged into one write per object, and other writes
(finalizers, priorities) run in order behind them, only while this process holds the lease.

Mirrors how upstream's controllers write through controller-runtime's client, with our own
merging of the status changes a scheduling cycle makes to one object (`Status().Update`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook import kube as k
from webhook.worker.status import update_status
from webhook.worker.store import Store

__all__ = ["Call", "StatusWrite", "Writer"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StatusWrite:
    """One change to an object's status; writes for one object are merged into one PUT.

    `uid` and `generation` (when set) name the object the change was decided for: applied to a
    recreated Workload, or to one whose spec changed since (deactivated, resized, reprioritized), it
    is dropped and `on_failure` runs, so the decision is taken again on what is there now. Upstream's
    status patches carry the UID and generation (`pkg/workload/patching/patching.go`, baseSSAWorkload).
    """

    kind: str
    path: str
    mutate: Callable[[dict[str, Any], Mapping[str, Any]], None]
    on_failure: Callable[[], None] | None = None
    on_success: Callable[[], None] | None = None
    uid: str = ""
    generation: int = 0

    def decided_for(self, obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.uid and meta.get("uid") != self.uid:
            return False
        return not self.generation or int(meta.get("generation") or 0) == self.generation


@dataclass(frozen=True, slots=True)
class Call:
    """A write that is not a status change (e.g. a finalizer patch), run in the writer thread."""

    fn: Callable[[], None]


class Writer:
    """Runs the writes queued for one object; a process that lost the lease drops them and stops."""

    def __init__(self, kube: k.Kube, store: Store, *, holds_lease: Callable[[], bool], stop: threading.Event) -> None:
        self.kube = kube
        self.store = store
        self.holds_lease = holds_lease
        self.stop = stop

    def write(self, key: str, queued: Sequence[StatusWrite | Call]) -> None:
        """The `status` work queue's handler: every write queued for one object, merged."""
        if not self.holds_lease():
            # Everything in hand may predate a takeover; the process ends with its leadership and
            # the next leader recomputes from the API.
            log.error(
                "leader lease not held; dropping writes and stopping", extra={"object": key, "writes": len(queued)}
            )
            self.stop.set()
            return
        for call in queued:
            if isinstance(call, Call):
                call.fn()
        items = [w for w in queued if isinstance(w, StatusWrite)]
        if not items:
            return
        first = items[0]
        stale: list[StatusWrite] = []  # of the last attempt: update_status may re-read and retry

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            stale.clear()
            for item in items:
                if item.decided_for(obj):
                    item.mutate(status, obj)
                else:
                    stale.append(item)

        try:
            written = update_status(self.kube, self.store, first.kind, first.path, mutate)
        except k.KubeError as exc:
            log.warning("status write failed", extra={"object": key, "error": str(exc)})
            for item in items:
                if item.on_failure is not None:
                    item.on_failure()
            return
        if written is None:
            return
        if stale:
            meta = written.get("metadata") or {}
            log.info(
                "status write dropped: decided for another version",
                extra={
                    "object": key,
                    "uid": meta.get("uid"),
                    "generation": meta.get("generation"),
                    "decided": [(w.uid, w.generation) for w in stale],
                },
            )
        for item in items:
            callback = item.on_failure if any(item is w for w in stale) else item.on_success
            if callback is not None:
                callback()
