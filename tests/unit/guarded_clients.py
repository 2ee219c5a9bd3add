"""Hostile clients for the worker process's HTTPS servers, metrics and visibility (`webhook/guarded_server.py`)."""

from __future__ import annotations

import socket
import ssl
import threading
import time


def held_for(port: int, *, byte_every_s: float = 0.2, give_up_s: float = 15.0) -> float:
    """Seconds a slowloris client (a request header trickled one byte at a time over TLS) kept
    its connection before the server closed it; `give_up_s` if it never did."""
    ctx = ssl._create_unverified_context()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=give_up_s) as raw, ctx.wrap_socket(raw) as tls:
        tls.settimeout(byte_every_s)
        request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 1000
        for byte in request:
            if time.monotonic() - started > give_up_s:
                return give_up_s
            try:
                tls.sendall(bytes([byte]))
                if tls.recv(1) == b"":
                    return time.monotonic() - started
            except (TimeoutError, ssl.SSLWantReadError):
                continue
            except OSError:
                return time.monotonic() - started
    return give_up_s


def handler_threads() -> int:
    return sum(1 for t in threading.enumerate() if "process_request_thread" in t.name)


def idle_connections(port: int, count: int) -> list[socket.socket]:
    """Connections that never say hello (each held a server thread before the cap)."""
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
