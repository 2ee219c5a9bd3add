"""The slow-client guard: unfinished requests are closed after their deadline; honest ones are served."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from webhook.admission import slowclients
from webhook.admission.app import create_app


class _Fast(slowclients.GuardedHttpToolsProtocol):
    request_timeout_s = 0.5


@pytest.fixture
def port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        p = int(s.getsockname()[1])
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=p, log_config=None, lifespan="off", http=_Fast)
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=asyncio.run, args=(srv.serve(),), daemon=True)
    thread.start()
    for _ in range(100):
        if srv.started:
            break
        time.sleep(0.05)
    yield p
    srv.should_exit = True
    thread.join(timeout=10)


def _closed(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


@pytest.mark.parametrize(
    "prefix",
    [
        b"",
        b"POST /convert HTTP/1.1\r\nHost: x\r\n",
        b"POST /convert HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",
    ],
)
def test_unfinished_request_is_closed_after_the_deadline(port: int, prefix: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(prefix)
        for _ in range(3):  # trickling does not extend the deadline
            time.sleep(0.1)
            if prefix:
                s.sendall(b"a" if b"{" in prefix else b"X-A: b\r\n")
        assert _closed(s, 2.0)


def test_complete_requests_on_a_kept_alive_connection_are_served(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        for _ in range(3):
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(2)
            got = b""
            while not got.endswith(b"ok"):
                chunk = s.recv(4096)
                assert chunk, f"closed after {got!r}"
                got += chunk
            assert got.startswith(b"HTTP/1.1 200")
            time.sleep(0.7)  # idle longer than the request deadline: keep-alive is not a request
