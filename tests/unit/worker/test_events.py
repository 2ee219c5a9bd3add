"""The worker's event recorder: isomorphic events are sent once, as client-go's events broadcaster does."""

from __future__ import annotations

import threading
from typing import Any

from webhook.worker import events


def _wl(rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "uid": "u1", "resourceVersion": rv},
    }


def _queued(rec: events.Recorder) -> list[tuple[str, str]]:
    out = []
    while not rec._queue.empty():
        e = rec._queue.get_nowait()
        out.append((e["reason"], e["note"]))
    return out


def test_an_isomorphic_event_is_sent_once_whatever_its_note() -> None:
    rec = events.Recorder(None, instance="t", stop=threading.Event())
    rec.emit(_wl("1"), "Warning", "Pending", "1 more needed", "kueue-admission")
    rec.emit(_wl("1"), "Warning", "Pending", "no longer fits", "kueue-admission")
    rec.emit(_wl("1"), "Normal", "QuotaReserved", "reserved", "kueue-admission")
    rec.emit(_wl("2"), "Warning", "Pending", "no longer fits", "kueue-admission")  # a new version of the object
    assert _queued(rec) == [("Pending", "1 more needed"), ("QuotaReserved", "reserved"), ("Pending", "no longer fits")]


def test_the_same_event_is_sent_again_after_the_series_window(monkeypatch: Any) -> None:
    rec = events.Recorder(None, instance="t", stop=threading.Event())
    clock = [1000.0]
    monkeypatch.setattr(events.time, "monotonic", lambda: clock[0])
    rec.emit(_wl("1"), "Warning", "Pending", "waiting", "kueue-admission")
    clock[0] += events.SERIES_WINDOW_S + 1
    rec.emit(_wl("1"), "Warning", "Pending", "waiting", "kueue-admission")
    assert len(_queued(rec)) == 2 and len(rec._seen) == 1
