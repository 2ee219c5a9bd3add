"""`python -m webhook service-ready`, the chart's post-install hook: it returns only once the Service
has answered /readyz several times in a row, over real TLS on a local port."""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import certs
from webhook.__main__ import main
from webhook.install import service_ready


class _Readyz(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/readyz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def https(tmp_path: Path) -> Iterator[tuple[int, type[_Readyz]]]:
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    handler = type("Handler", (_Readyz,), {"status": 200})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv.server_address[1], handler
    srv.shutdown()
    srv.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_address_comes_from_the_service_links_else_the_dns_name() -> None:
    env = {"KUEUE_WEBHOOK_SERVICE_SERVICE_HOST": "10.96.2.164", "KUEUE_WEBHOOK_SERVICE_SERVICE_PORT": "443"}
    assert service_ready.address("kueue-webhook-service", "kueue-system", env) == ("10.96.2.164", 443)
    assert service_ready.address("kueue-webhook-service", "team-a", {}) == ("kueue-webhook-service.team-a.svc", 443)


def test_probe_reports_what_it_saw(https: tuple[int, type[_Readyz]]) -> None:
    port, handler = https
    assert service_ready.probe("127.0.0.1", port, "/readyz", 2.0) is None
    handler.status = 503
    assert service_ready.probe("127.0.0.1", port, "/readyz", 2.0) == "HTTP 503"
    assert "ConnectionRefused" in (service_ready.probe("127.0.0.1", _closed_port(), "/readyz", 2.0) or "")


def test_wait_needs_answers_in_a_row() -> None:
    outcomes = iter(["connection refused", None, "HTTP 503", None, None, None, "never reached"])
    calls: list[float] = []
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    def check(host: str, port: int, path: str, timeout_s: float) -> str | None:
        calls.append(now[0])
        return next(outcomes)

    took = service_ready.wait(
        "10.0.0.1", 443, successes=3, interval_s=0.5, check=check, clock=lambda: now[0], sleep=sleep
    )
    assert len(calls) == 6 and took == 2.5


def test_wait_gives_up_with_the_last_problem() -> None:
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    with pytest.raises(service_ready.ServiceNotReady, match=r"not answering after 2s: HTTP 503"):
        service_ready.wait(
            "10.0.0.1",
            443,
            timeout_s=2.0,
            check=lambda *_: "HTTP 503",
            clock=lambda: now[0],
            sleep=sleep,
        )


def test_command_exits_zero_once_the_service_answers_and_one_when_it_never_does(
    https: tuple[int, type[_Readyz]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port, _ = https
    monkeypatch.setenv("KUEUE_WEBHOOK_SERVICE_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUEUE_WEBHOOK_SERVICE_SERVICE_PORT", str(port))
    args = ["service-ready", "--service=kueue-webhook-service", "--namespace=kueue-system"]
    assert main([*args, "--successes=2"]) == 0
    assert f"answered 2 times in a row at 127.0.0.1:{port}" in capsys.readouterr().out

    monkeypatch.setenv("KUEUE_WEBHOOK_SERVICE_SERVICE_PORT", str(_closed_port()))
    assert main([*args, "--timeout=1"]) == 1
    assert "not answering after 1s: ConnectionRefusedError" in capsys.readouterr().err
