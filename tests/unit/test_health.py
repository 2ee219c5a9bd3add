"""The health probe server: the Configuration's address and endpoint names, controller-runtime's answers."""

from __future__ import annotations

import http.client
import socket

import pytest

from webhook import health
from webhook.config import Health


def _get(port: int, path: str) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


@pytest.mark.parametrize(
    ("address", "want"),
    [
        pytest.param(":8081", ("0.0.0.0", 8081), id="every interface"),
        pytest.param("127.0.0.1:9", ("127.0.0.1", 9), id="host and port"),
        pytest.param("[::1]:8081", ("::1", 8081), id="IPv6"),
        pytest.param("0", None, id="disabled"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_bind_address(address, want):
    assert health.parse_bind_address(address) == want


def test_probes_answer_on_the_configured_paths():
    ready = {"now": False}
    server = health.serve_probes(
        Health("127.0.0.1:0", readiness_endpoint_name="/ready-now", liveness_endpoint_name="/alive"),
        lambda: ready["now"],
    )
    assert server is not None
    port = server.server_address[1]
    try:
        assert _get(port, "/alive") == (200, b"ok")
        assert _get(port, "/ready-now") == (500, b"[-]readyz failed: reason withheld\nhealthz check failed\n")
        ready["now"] = True
        assert _get(port, "/ready-now?verbose") == (200, b"ok")
        assert _get(port, "/readyz")[0] == 404  # only the configured names
    finally:
        server.shutdown()
        server.server_close()


def test_address_zero_serves_nothing():
    assert health.serve_probes(Health("0"), lambda: True) is None


def test_a_taken_address_is_an_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):
            health.serve_probes(Health(f"127.0.0.1:{taken.getsockname()[1]}"), lambda: True)
