"""Hostile clients to run beside a load (`make soak SOAK_ARGS="--only load --hostile"`, and a small
run in `make test`): what any pod can send to our Services, since reaching them needs no RBAC.

Each kind runs in its own thread until stopped, against the webhook server and the worker's metrics
and visibility servers, and counts what it sent:
* slow: connections that complete TLS, then trickle a request a byte every half second;
* oversized: webhook POSTs past the body cap (9 MiB);
* malformed: truncated or non-JSON bodies, reviews whose object is not of its kind's shape, a
  Workload with a quantity Go refuses (`1e1.5`) and one with a huge exponent (`1e999999999`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["HostileClients", "against_stack"]

SLOW_CONNECTIONS = 200


def _review(obj: dict[str, Any], kind: str, group: str, version: str) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "hostile",
                "kind": {"group": group, "version": version, "kind": kind},
                "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
                "operation": "CREATE",
                "namespace": "default",
                "name": "x",
                "object": obj,
                "userInfo": {"username": "hostile"},
            },
        }
    ).encode()


def _workload(cpu: str) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {
            "queueName": "q",
            "podSets": [{"name": "m", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


_WL = "/validate-kueue-x-k8s-io-v1beta2-workload"
_MALFORMED: list[tuple[str, bytes]] = [
    ("/validate-batch-v1-job", b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionRev'),
    ("/validate-batch-v1-job", b"\x00\xff<not json>"),
    ("/validate-batch-v1-job", _review({"kind": "Job", "spec": "nonsense", "metadata": []}, "Job", "batch", "v1")),
    (_WL, _review(_workload("1e1.5"), "Workload", "kueue.x-k8s.io", "v1beta2")),
    (_WL, _review(_workload("1e999999999"), "Workload", "kueue.x-k8s.io", "v1beta2")),
    (_WL, _review({**_workload("1"), "spec": []}, "Workload", "kueue.x-k8s.io", "v1beta2")),
]


class HostileClients:
    """A context manager running the hostile mix against `ports` (name → loopback port)."""

    def __init__(self, ca: Path, webhook_port: int, ports: dict[str, int]) -> None:
        self.ca = ca
        self.webhook_port = webhook_port
        self.ports = ports
        self.sent: Counter[str] = Counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._slow, daemon=True),
            threading.Thread(target=self._oversized, daemon=True),
            threading.Thread(target=self._malformed, daemon=True),
        ]

    def _count(self, what: str) -> None:
        with self._lock:
            self.sent[what] += 1

    def _post(self, path: str, body: bytes) -> None:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        conn = http.client.HTTPSConnection("127.0.0.1", self.webhook_port, context=ctx, timeout=15)
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            conn.getresponse().read()
        conn.close()

    def _slow(self) -> None:
        ctx = ssl._create_unverified_context()
        targets = [self.webhook_port, *self.ports.values()]
        socks: list[ssl.SSLSocket] = []
        while not self._stop.is_set():
            while len(socks) < SLOW_CONNECTIONS and not self._stop.is_set():
                port = targets[self.sent["slow"] % len(targets)]
                try:
                    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s = ctx.wrap_socket(raw)
                    s.sendall(b"POST /validate-batch-v1-job HTTP/1.1\r\nHost: x\r\n")
                except OSError:
                    continue
                socks.append(s)
                self._count("slow")
            alive = []
            for s in socks:
                try:
                    s.send(b"a")
                    alive.append(s)
                except OSError:  # cut off by the server: open another
                    s.close()
            socks = alive
            self._stop.wait(0.5)
        for s in socks:
            s.close()

    def _oversized(self) -> None:
        body = b'{"a":"' + b"x" * (9 * 1024 * 1024) + b'"}'
        while not self._stop.wait(1.0):
            self._post("/validate-batch-v1-job", body)
            self._count("oversized")

    def _malformed(self) -> None:
        i = 0
        while not self._stop.wait(0.05):
            path, body = _MALFORMED[i % len(_MALFORMED)]
            self._post(path, body)
            self._count("malformed")
            i += 1

    def __enter__(self) -> HostileClients:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)


def against_stack(stack: Any) -> HostileClients:
    """The mix against a local stack's webhook, metrics and visibility servers."""
    ports = {
        "metrics": int(stack.metrics_port_file.read_text()),
        "visibility": int(stack.visibility_port_file.read_text()),
    }
    return HostileClients(stack.cert_dir / "ca.crt", stack.port, ports)
