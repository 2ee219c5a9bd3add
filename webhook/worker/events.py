"""Kubernetes Events (events.k8s.io/v1), sent from background threads so no caller waits.

Mirrors the recorder Kueue builds with `mgr.GetEventRecorder` (reason + action + note): the
reporting controller is `kueue-admission` for scheduler decisions and `<framework>-kueue-controller`
for job integrations (`pkg/controller/jobframework/events.go`). Events are best effort: a full
queue or a failed POST drops the event with a DEBUG log.

Like client-go's events broadcaster (`tools/events`), an event isomorphic to one recorded in
the last six minutes (same action, reason, reporting controller and regarding object, down to
its resourceVersion; the note does not count) is not sent again: the scheduler repeats its
Pending event on every cycle that leaves a Workload unchanged.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from webhook import kube as k

__all__ = ["Recorder", "truncate_note"]

log = logging.getLogger(__name__)

SERIES_WINDOW_S = 6 * 60  # client-go tools/events: finishTime
# client-go's events broadcaster posts each event from its own goroutine (`recordToSink` in
# tools/events/event_broadcaster.go), so only the events client's token bucket paces them. One
# sender thread was paced by the API server's latency instead: ~15 events/s on bench-scale's 2x
# config against upstream's 50 (its qps), the rest waiting in the queue. Enough senders keep the
# bucket the limit at up to ~160 ms per POST.
SENDERS = 8


_NOTE_LIMIT = 1024


def truncate_note(note: str) -> str:
    """`api.TruncateEventMessage`: at most 1024 characters, a cut one ending in ` ...`."""
    return note if len(note) <= _NOTE_LIMIT else note[: _NOTE_LIMIT - 4] + " ..."


class Recorder:
    def __init__(self, kube: k.Kube | None, *, instance: str, stop: threading.Event) -> None:
        self.kube = kube
        self.instance = instance
        self._stop = stop
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=10000)
        self._seen: dict[tuple[Any, ...], float] = {}  # isomorphic key → when last sent, oldest first
        self._seen_lock = threading.Lock()

    def start(self) -> None:
        for i in range(SENDERS):
            threading.Thread(target=self._run, name=f"events-{i}", daemon=True).start()

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        meta = obj.get("metadata") or {}
        if self._repeated(
            (
                action or reason,
                reason,
                controller,
                obj.get("apiVersion"),
                obj.get("kind"),
                meta.get("namespace"),
                meta.get("name"),
                meta.get("uid"),
                meta.get("resourceVersion"),
            )
        ):
            return
        ns = meta.get("namespace") or "default"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name', 'object')}.{time.time_ns():x}", "namespace": ns},
            "eventTime": now,
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.instance}"[:128],
            "action": action or reason,
            "reason": reason,
            "note": truncate_note(note),
            "type": etype,
            "regarding": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
        }
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            log.debug("event dropped", extra={"reason": reason})

    def _repeated(self, key: tuple[Any, ...]) -> bool:
        """True when an isomorphic event was emitted within SERIES_WINDOW_S; else remember this one."""
        now = time.monotonic()
        with self._seen_lock:
            last = self._seen.get(key)
            if last is not None and now - last < SERIES_WINDOW_S:
                return True
            self._seen.pop(key, None)
            self._seen[key] = now
            for old, at in list(itertools.islice(self._seen.items(), 64)):
                if now - at < SERIES_WINDOW_S:
                    break
                del self._seen[old]
            return False

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                event = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if self.kube is None:
                continue
            try:
                ns = event["metadata"]["namespace"]
                self.kube.create(k.object_path("events.k8s.io/v1", "events", ns), event)
            except k.KubeError as exc:
                log.debug("event not recorded", extra={"reason": event["reason"], "error": str(exc)})
