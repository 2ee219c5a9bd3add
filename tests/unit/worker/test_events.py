"""The worker's event recorder: isomorphic events are sent once, as client-go's events broadcaster does."""

from __future__ import annotations

import http.server
import json
import threading
import time
from pathlib import Path
from typing import Any

from webhook import kube as k
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


class _SlowEvents(http.server.ThreadingHTTPServer):
    """An API server that answers each Event POST after HOLD_S, counting the POSTs in flight."""

    daemon_threads = True
    HOLD_S = 0.3

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _SlowHandler)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.notes: list[str] = []


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _SlowEvents

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        with self.server.lock:
            self.server.in_flight += 1
            self.server.most_in_flight = max(self.server.most_in_flight, self.server.in_flight)
        time.sleep(self.server.HOLD_S)
        with self.server.lock:
            self.server.in_flight -= 1
            self.server.notes.append(body["note"])
        out = json.dumps(body).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def test_a_slow_api_server_does_not_serialize_events(tmp_path: Path) -> None:
    """client-go posts each event from its own goroutine: a slow POST does not hold back the next
    ones, only the events client's qps does."""
    server = _SlowEvents()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [{"name": "t", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
                "users": [{"name": "t", "user": {"token": "abc"}}],
            }
        )
    )
    kube = k.Kube(str(config), qps=50, burst=100)
    stop = threading.Event()
    rec = events.Recorder(kube, instance="t", stop=stop)
    rec.start()
    try:
        for i in range(8):
            rec.emit(_wl(str(i)), "Normal", "QuotaReserved", f"reserved {i}", "kueue-admission")
        deadline = time.monotonic() + 10
        while len(server.notes) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(server.notes) == sorted(f"reserved {i}" for i in range(8))
        assert server.most_in_flight > 1
    finally:
        stop.set()
        kube.close()
        server.shutdown()
        server.server_close()
