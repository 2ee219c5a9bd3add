"""Thread-per-connection HTTPS servers that a slow or greedy client cannot exhaust.

The worker process's metrics and visibility servers (`worker.metrics_server`, `visibility.server`)
are `socketserver` servers with a thread per connection. Uncapped, with only a per-read timeout, a
client sending one byte every few seconds held a thread forever, and enough of them filled the
leader process with threads. Here:

* every request must be complete (TLS handshake, request line and headers) within
  `REQUEST_TIMEOUT_S` of the moment the connection was ready to read it: its accept, or the end
  of the previous answer on a kept-alive connection. A reaper thread shuts down sockets past it;
* at most `MAX_CONNECTIONS` connections are open; one more closes the one that has waited longest
  for its request (an honest client sends its request within milliseconds), or, when every
  connection is being answered, is itself refused.

Our counterpart of Go's `http.Server` `ReadHeaderTimeout` and of the webhook's
`admission/slowclients.py`.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from socketserver import BaseServer, ThreadingMixIn
from typing import Any, ClassVar, cast

__all__ = ["MAX_CONNECTIONS", "REQUEST_TIMEOUT_S", "GuardedHandler", "GuardedThreadingMixIn"]

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 64
_REAP_INTERVAL_S = 0.25


class GuardedThreadingMixIn(ThreadingMixIn):
    """`ThreadingMixIn` with a connection cap and a whole-request deadline (see the module docstring).

    Handlers report their progress with `reading(sock)` and `answering(sock)` (`GuardedHandler`).
    """

    daemon_threads = True
    max_connections: ClassVar[int] = MAX_CONNECTIONS
    request_timeout_s: ClassVar[float] = REQUEST_TIMEOUT_S

    def _guard(self) -> None:
        if getattr(self, "_open", None) is None:
            self._guard_lock = threading.Lock()
            # socket → monotonic time it started waiting for a request, None while it is answered
            self._open: dict[Any, float | None] = {}
            self.slow_closed = 0
            self.refused = 0
            threading.Thread(target=self._reap, name=f"{type(self).__name__}-reaper", daemon=True).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        self._guard()
        with self._guard_lock:
            if len(self._open) >= self.max_connections:
                waiting = [(since, sock) for sock, since in self._open.items() if since is not None]
                if not waiting:
                    self.refused += 1
                    log.warning("connection refused: every connection is busy", extra={"client": str(client_address)})
                    cast(BaseServer, self).shutdown_request(request)
                    return
                _, oldest = min(waiting, key=lambda pair: pair[0])
                self._close(oldest)
            self._open[request] = time.monotonic()
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._guard_lock:
                self._open.pop(request, None)

    def reading(self, sock: Any) -> None:
        """`sock` waits for a request: its deadline starts now."""
        with self._guard_lock:
            if sock in self._open:
                self._open[sock] = time.monotonic()

    def answering(self, sock: Any) -> None:
        """`sock`'s request is in: no deadline while it is answered."""
        with self._guard_lock:
            if sock in self._open:
                self._open[sock] = None

    def open_connections(self) -> int:
        with self._guard_lock:
            return len(self._open)

    def _close(self, sock: Any) -> None:
        """Unblock the thread reading `sock` (it then ends); called with the lock held."""
        self._open.pop(sock, None)
        self.slow_closed += 1
        with contextlib.suppress(OSError):  # already gone
            sock.shutdown(socket.SHUT_RDWR)

    def _reap(self) -> None:
        while True:
            time.sleep(_REAP_INTERVAL_S)
            cutoff = time.monotonic() - self.request_timeout_s
            with self._guard_lock:
                for sock in [s for s, since in self._open.items() if since is not None and since < cutoff]:
                    self._close(sock)


class GuardedHandler(BaseHTTPRequestHandler):
    """Reports to its `GuardedThreadingMixIn` server when a request is in and when it is answered."""

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:
            _server(self.server).answering(self.request)
        return parsed

    def handle_one_request(self) -> None:
        _server(self.server).reading(self.request)
        super().handle_one_request()


def _server(server: BaseServer) -> GuardedThreadingMixIn:
    assert isinstance(server, GuardedThreadingMixIn)
    return server
