"""Graceful termination over a real socket: after SIGTERM, /readyz fails while reviews are still
answered for the drain period, then the listener closes; a second signal stops at once."""

from __future__ import annotations

import asyncio
import functools
import http.client
import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

import certs
from webhook import tls
from webhook.admission import shutdown
from webhook.admission.app import create_app

from .reviews import review

DRAIN_S = 3.0
RF_PATH = "/mutate-kueue-x-k8s-io-v1beta2-resourceflavor"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Client:
    """HTTPS requests to 127.0.0.1:port, each on a new connection unless one is passed."""

    def __init__(self, port: int, ca: Path, probe_port: int = 0) -> None:
        self.port = port
        self.probe_port = probe_port
        self.ctx = ssl.create_default_context(cafile=str(ca))

    def probe(self, path: str) -> int:
        """The status of a plain-HTTP GET on the health probe port."""
        c = http.client.HTTPConnection("127.0.0.1", self.probe_port, timeout=5)
        try:
            c.request("GET", path)
            return c.getresponse().status
        finally:
            c.close()

    def connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=5)

    def request(
        self, method: str, path: str, body: bytes | None = None, conn: http.client.HTTPSConnection | None = None
    ) -> tuple[int, str | None, bytes]:
        """(status, Connection header, body)."""
        c = conn or self.connection()
        c.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        r = c.getresponse()
        data = r.read()
        if conn is None:
            c.close()
        return r.status, r.getheader("connection"), data

    def review_allowed(self, conn: http.client.HTTPSConnection | None = None) -> tuple[bool, str | None]:
        body = json.dumps(
            review(
                {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
                kind="ResourceFlavor",
            )
        ).encode()
        status, connection, data = self.request("POST", RF_PATH, body, conn)
        return status == 200 and bool(json.loads(data)["response"]["allowed"]), connection


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Client]]:
    """`python -m webhook serve --drain-seconds DRAIN_S`, ready, its health probes on `client.probe_port`."""
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    port, probe_port = _free_port(), _free_port()
    (tmp_path / "config.yaml").write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        f"health: {{healthProbeBindAddress: '127.0.0.1:{probe_port}'}}\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webhook",
            "serve",
            "--cert-dir",
            str(tmp_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--drain-seconds",
            str(DRAIN_S),
            "--config",
            str(tmp_path / "config.yaml"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    client = Client(port, tmp_path / "ca.crt", probe_port)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if client.request("GET", "/readyz")[0] == 200:
                    break
            except OSError:
                assert time.monotonic() < deadline, "server not ready within 30 s"
                time.sleep(0.05)
        yield proc, client
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def test_sigterm_fails_readiness_keeps_serving_for_the_drain_then_closes(
    served: tuple[subprocess.Popen[str], Client],
) -> None:
    proc, client = served
    kept_alive = client.connection()  # as the API server's pooled connection
    assert client.review_allowed(kept_alive) == (True, None)
    assert (client.probe("/readyz"), client.probe("/healthz")) == (200, 200)  # kubelet's probes, port 8081 in a pod
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)

    # (seconds after SIGTERM, /readyz, /healthz, review allowed, Connection header), each on a new connection
    samples: list[tuple[float, int, int, bool, str | None]] = []
    while True:
        at = time.monotonic() - sent
        try:
            ready, live = client.request("GET", "/readyz")[0], client.request("GET", "/healthz")[0]
            samples.append((at, ready, live, *client.review_allowed()))
        except (OSError, http.client.HTTPException):
            ended = at
            break
        if ready == 503 and kept_alive.sock is not None:  # answered once more, then closed by the server
            assert (client.probe("/readyz"), client.probe("/healthz")) == (500, 200)  # the probe port agrees
            assert client.review_allowed(kept_alive) == (True, "close")
            kept_alive.close()
        assert at < DRAIN_S + 5, "the server never stopped answering"
        time.sleep(0.1)

    draining = [s for s in samples if s[1] == 503]
    assert draining and draining[0][0] < 1.0, f"/readyz still ready: {samples}"
    assert samples.index(draining[0]) + len(draining) == len(samples), "readiness must not come back"
    assert all(live == 200 and allowed for _, _, live, allowed, _ in samples), samples
    assert all(connection == "close" for *_, connection in draining), "draining answers close their connection"
    # Slack for a loaded machine, where one round of three TLS requests can take half a second.
    assert samples[-1][0] >= DRAIN_S - 1.0, f"stopped answering {samples[-1][0]:.2f}s into a {DRAIN_S}s drain"
    assert ended <= DRAIN_S + 2.5, f"still answering {ended:.2f}s after SIGTERM"
    with pytest.raises(ConnectionRefusedError):  # the listener is closed, not just the connections
        socket.create_connection(("127.0.0.1", client.port), timeout=2).close()
    assert proc.wait(timeout=5) == 0
    logs = [json.loads(line)["msg"] for line in (proc.stderr.read() if proc.stderr else "").splitlines()]
    assert logs.index("SIGTERM: draining before shutdown") < logs.index("drain over; closing the listener")


class InProcess:
    """A GracefulServer in a thread (no signal handlers there); signals are delivered by calling handle_exit."""

    def __init__(self, tmp_path: Path, drain_s: float) -> None:
        certs.write_bundle(tmp_path, ["127.0.0.1"])
        self.port = _free_port()
        self.draining = threading.Event()
        self.drain_called: list[float] = []
        config = uvicorn.Config(
            shutdown.WhileDraining(create_app(), self.draining),
            host="127.0.0.1",
            port=self.port,
            log_config=None,
            lifespan="off",
        )
        config.load()
        config.ssl = tls.server_context(tmp_path)
        self.server = shutdown.GracefulServer(
            config, draining=self.draining, drain_s=drain_s, on_drain=lambda: self.drain_called.append(time.monotonic())
        )
        self.thread = threading.Thread(target=asyncio.run, args=(self.server.serve(),), daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)

    def stopped_after(self, *signals: signal.Signals) -> float:
        """Seconds from the first of `signals` (sent 0.2 s apart) until the server thread ends."""
        start = time.monotonic()
        for sig in signals:
            self.server.handle_exit(sig, None)
            time.sleep(0.2)
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()
        return time.monotonic() - start


@pytest.mark.parametrize(
    ("signals", "drain_s", "at_least", "at_most", "drains"),
    [
        # "At once" is well under the 30 s drain, with slack for a loaded machine.
        pytest.param([signal.SIGTERM], 1.0, 1.0, 3.0, True, id="SIGTERM drains, then stops"),
        pytest.param([signal.SIGTERM], 0.0, 0.0, 3.0, True, id="no drain: SIGTERM stops at once, worker told"),
        pytest.param([signal.SIGTERM, signal.SIGTERM], 30.0, 0.0, 3.0, True, id="a second SIGTERM stops at once"),
        pytest.param([signal.SIGINT], 30.0, 0.0, 3.0, False, id="SIGINT stops at once"),
    ],
)
def test_signals(
    tmp_path: Path, signals: list[signal.Signals], drain_s: float, at_least: float, at_most: float, drains: bool
) -> None:
    srv = InProcess(tmp_path, drain_s)
    sent = time.monotonic()
    took = srv.stopped_after(*signals)
    assert at_least <= took <= at_most
    assert srv.draining.is_set() is drains
    if drains:  # the worker is told at the drain's start, not at its end
        assert len(srv.drain_called) == 1 and srv.drain_called[0] - sent < 1.0


def test_close_while_draining_adds_the_header_only_once_draining() -> None:
    draining = threading.Event()
    app = shutdown.WhileDraining(create_app(), draining)

    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://webhook") as client:
            return await client.get("/healthz")

    assert "connection" not in asyncio.run(get()).headers
    draining.set()
    response = asyncio.run(get())
    assert (response.status_code, response.headers["connection"]) == (200, "close")


SERVICE = "kueue-webhook-service.kueue-system.svc"


async def _replica(name: str, scope: Scope, receive: Receive, send: Send) -> None:
    """A replica that answers with its name, the review it read and who forwarded it."""
    body = (await receive()).get("body", b"")
    forwarded = dict(scope["headers"]).get(shutdown.FORWARDED_HEADER.encode(), b"").decode()
    answer = json.dumps({"replica": name, "review": body.decode(), "forwarded_by": forwarded}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": answer})


@pytest.fixture
def replica_b(tmp_path: Path) -> Iterator[int]:
    """Replica B, ready, serving TLS with the Service's certificate; yields its port."""
    certs.write_bundle(tmp_path, [SERVICE])
    port = _free_port()
    config = uvicorn.Config(
        functools.partial(_replica, "B"),
        host="127.0.0.1",
        port=port,
        log_config=None,
        lifespan="off",
        interface="asgi3",
    )
    config.load()
    config.ssl = tls.server_context(tmp_path)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def _post_to_a(forward: shutdown.ServiceForwarder, *, draining: bool, **headers: str) -> httpx.Response:
    """POST a review to draining replica A, whose reviews go on through `forward`."""
    state = threading.Event()
    if draining:
        state.set()
    app = shutdown.WhileDraining(functools.partial(_replica, "A"), state, forward)

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://a") as client:
            return await client.post(RF_PATH, content=b'{"kind":"AdmissionReview"}', headers=headers)

    return asyncio.run(post())


def test_a_draining_replica_forwards_reviews_through_the_service(tmp_path: Path, replica_b: int) -> None:
    forward = shutdown.ServiceForwarder("127.0.0.1", replica_b, SERVICE, tmp_path / "ca.crt", "pod-a")
    answered = _post_to_a(forward, draining=True)
    assert answered.headers["connection"] == "close"
    assert answered.json() == {"replica": "B", "review": '{"kind":"AdmissionReview"}', "forwarded_by": "pod-a"}
    # Before the drain, and for a review another draining replica forwarded (no loop): answered here.
    assert _post_to_a(forward, draining=False).json()["replica"] == "A"
    assert _post_to_a(forward, draining=True, **{shutdown.FORWARDED_HEADER: "pod-b"}).json()["replica"] == "A"


def test_a_draining_replica_answers_itself_when_the_service_cannot_be_reached(tmp_path: Path) -> None:
    certs.write_bundle(tmp_path, [SERVICE])
    forward = shutdown.ServiceForwarder("127.0.0.1", _free_port(), SERVICE, tmp_path / "ca.crt", "pod-a")
    answered = _post_to_a(forward, draining=True)
    assert answered.json() == {"replica": "A", "review": '{"kind":"AdmissionReview"}', "forwarded_by": ""}


def test_a_forwarded_review_is_sent_only_to_a_replica_with_the_services_certificate(
    tmp_path: Path, replica_b: int
) -> None:
    other_ca = certs.write_bundle(tmp_path / "other", [SERVICE]) / "ca.crt"
    forward = shutdown.ServiceForwarder("127.0.0.1", replica_b, SERVICE, other_ca, "pod-a")
    assert _post_to_a(forward, draining=True).json()["replica"] == "A"
