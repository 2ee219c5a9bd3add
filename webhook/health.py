"""The health probe server: plain HTTP on `health.healthProbeBindAddress` (`:8081` by default).

Mirrors controller-runtime's manager probes as upstream's `cmd/kueue/main.go` registers them:
`healthz` (a ping) on `health.livenessEndpointName` and `readyz` (certificates ready and the webhook
server listening) on `health.readinessEndpointName`. An answer is `200 ok`, or `500` with
controller-runtime's body naming the failed check (`pkg/healthz/healthz.go`). An address of "" or
"0" serves nothing, as controller-runtime. The webhook port keeps answering `/healthz` and `/readyz`
too (the chart's post-install hook reaches them through the webhook Service).

The server is a thread per connection under `guarded_server`'s cap and request deadline.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from http.server import HTTPServer
from typing import Any

from webhook.config import Health
from webhook.guarded_server import GuardedHandler, GuardedThreadingMixIn

__all__ = ["ProbeServer", "parse_bind_address", "serve_probes"]

log = logging.getLogger(__name__)


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """`host:port` (`:port` = every interface, `[v6]:port`) → (host, port); "" and "0" → None."""
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


class _Handler(GuardedHandler):
    server: ProbeServer

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        probe = self.server.probes.get(path)
        if probe is None:
            self._answer(404, "404 page not found\n")
            return
        name, check = probe
        if check():
            self._answer(200, "ok")
        else:
            self._answer(500, f"[-]{name} failed: reason withheld\nhealthz check failed\n")

    do_HEAD = do_GET

    def _answer(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Probes arrive every few seconds: no access log."""


class ProbeServer(GuardedThreadingMixIn, HTTPServer):
    """Path → (check name, check) over plain HTTP."""

    def __init__(self, address: tuple[str, int], probes: dict[str, tuple[str, Callable[[], bool]]]) -> None:
        self.address_family = socket.getaddrinfo(
            address[0], address[1], type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0][0]
        self.probes = probes
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("health probe: connection failed", extra={"client": str(client_address)}, exc_info=True)


def serve_probes(health: Health, ready: Callable[[], bool]) -> ProbeServer | None:
    """Serve the probes in a daemon thread; None when the address disables them. Raises OSError when the
    address cannot be bound (the manager does not start, as upstream's)."""
    bind = parse_bind_address(health.health_probe_bind_address)
    if bind is None:
        return None
    server = ProbeServer(
        bind,
        {
            health.liveness_endpoint_name: ("healthz", lambda: True),
            health.readiness_endpoint_name: ("readyz", ready),
        },
    )
    threading.Thread(target=server.serve_forever, name="health-probes", daemon=True).start()
    log.info("serving health probes", extra={"address": f"{bind[0]}:{server.server_address[1]}"})
    return server
