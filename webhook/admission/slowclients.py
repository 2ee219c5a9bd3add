"""Slow clients (slowloris) cannot hold the server: every request must arrive within a deadline.

uvicorn has no header or body read timeout: a client that opens a connection and trickles a
request byte by byte keeps it forever, and with `limit_concurrency` (which counts connections)
a thousand such clients make the server answer 503 to the API server, i.e. every Job creation
fails. Go's `http.Server` as controller-runtime configures it has `ReadHeaderTimeout`; this is
our equivalent, as a subclass of uvicorn's httptools protocol:

* a request (headers and body) must be complete `REQUEST_TIMEOUT_S` after its first byte, or
  after the connection was made; otherwise the connection is closed. Idle keep-alive
  connections are uvicorn's `timeout_keep_alive`, unchanged;
* above `PRESSURE_CONNECTIONS` open connections, a request unfinished for
  `PRESSURE_TIMEOUT_S` is closed at once (swept at most every `SWEEP_INTERVAL_S`);
* above `MAX_CONNECTIONS`, the connection with the oldest unfinished request is closed to
  make room. Finished requests and their responses are never cut.

An honest client (the API server) sends a whole review within milliseconds of connecting.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "MAX_CONNECTIONS",
    "PRESSURE_CONNECTIONS",
    "PRESSURE_TIMEOUT_S",
    "REQUEST_TIMEOUT_S",
    "GuardedHttpToolsProtocol",
    "pin_mmap_threshold",
]

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0
PRESSURE_CONNECTIONS = 256
PRESSURE_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 1024  # x 256 KiB TLS read buffer each: at most ~256 MB held by slow clients
SWEEP_INTERVAL_S = 0.25


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a per-request read deadline and eviction under pressure."""

    request_timeout_s: ClassVar[float] = REQUEST_TIMEOUT_S
    pressure_connections: ClassVar[int] = PRESSURE_CONNECTIONS
    pressure_timeout_s: ClassVar[float] = PRESSURE_TIMEOUT_S
    max_connections: ClassVar[int] = MAX_CONNECTIONS
    _last_sweep: ClassVar[float] = 0.0
    closed_slow: ClassVar[int] = 0  # connections closed for a late request (for tests and logs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._request_started: float | None = None
        self._deadline: asyncio.TimerHandle | None = None

    # -- the deadline of the request being read ----------------------------------------------------
    def _arm(self) -> None:
        if self._deadline is None:
            self._request_started = time.monotonic()
            self._deadline = self.loop.call_later(self.request_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._request_started = None

    def _expire(self) -> None:
        self._deadline = None
        self._close_slow()

    def _close_slow(self) -> None:
        self._request_started = None
        if self.transport is not None and not self.transport.is_closing():
            type(self).closed_slow += 1
            log.debug("closing a connection whose request did not arrive in time", extra={"client": str(self.client)})
            self.transport.close()

    # -- uvicorn hooks -------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        if len(self.connections) > self.pressure_connections:
            self._relieve()

    def data_received(self, data: bytes) -> None:
        self._arm()  # the first byte of a request (no-op while one is being read)
        super().data_received(data)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    # -- pressure ------------------------------------------------------------------------------------
    def _relieve(self) -> None:
        cls = type(self)
        now = time.monotonic()
        unfinished = [
            c
            for c in self.connections
            if isinstance(c, GuardedHttpToolsProtocol) and c is not self and c._request_started is not None
        ]
        if now - cls._last_sweep >= SWEEP_INTERVAL_S:
            cls._last_sweep = now
            for conn in unfinished:
                if conn._request_started is not None and now - conn._request_started > self.pressure_timeout_s:
                    conn._disarm()
                    conn._close_slow()
        if len(self.connections) > self.max_connections:
            oldest = min(
                (c for c in unfinished if c._request_started is not None),
                key=lambda c: c._request_started or now,
                default=None,
            )
            if oldest is not None:
                oldest._disarm()
                oldest._close_slow()


def pin_mmap_threshold(threshold: int = 128 * 1024) -> bool:
    """Keep glibc from retaining TLS read buffers after their connections close.

    The event loop's SSL protocol allocates a 256 KiB read buffer per connection. glibc serves such
    blocks with mmap, but raises its mmap threshold after the first is freed, so later buffers come
    from the heap and stay in RSS after a burst of connections (measured: +330 MB after 1,200 slow
    clients, never returned). A fixed threshold keeps them mmapped and returned on close.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
    m_mmap_threshold = -3
    return bool(mallopt(m_mmap_threshold, threshold))
