"""`webhook.kube.Kube.from_kubeconfig`: a client for a MultiKueue worker built from the kubeconfig
document a Secret holds, against a local TLS server: it trusts only the document's CA data, sends
its token, leaves no key material on disk, and refuses a document upstream refuses before the
client library's loader (which would run exec plugins) ever sees it."""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import certs
from webhook import kube as k


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[tuple[str, str | None]] = []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({"kind": "Namespace", "metadata": {"name": self.path.rsplit("/", 1)[-1]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def tls(tmp_path: Path) -> Iterator[tuple[Server, bytes]]:
    """A TLS server for 127.0.0.1, and the PEM of the CA that signed its certificate."""
    ca = certs.make_ca()
    serving = certs.make_serving_cert(ca, ["127.0.0.1"])
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "tls.crt").write_bytes(serving.cert_pem)
    (pki / "tls.key").write_bytes(serving.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "tls.crt", pki / "tls.key")
    server = Server()
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server, ca.cert_pem
    server.shutdown()
    server.server_close()


def kubeconfig(server: Server, ca_pem: bytes, user: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "worker1",
        "clusters": [
            {
                "name": "worker1",
                "cluster": {
                    "server": f"https://127.0.0.1:{server.server_address[1]}",
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "contexts": [{"name": "worker1", "context": {"cluster": "worker1", "user": "mk"}}],
        "users": [{"name": "mk", "user": user}],
    }


def test_a_client_from_a_kubeconfig_document_sends_its_token_to_the_server_its_ca_vouches_for(
    tls: tuple[Server, bytes], tmp_path: Path
) -> None:
    server, ca_pem = tls
    state = tmp_path / "state"
    state.mkdir()
    doc = kubeconfig(server, ca_pem, {"token": "sa-token"})
    for _ in range(2):  # the second client must not reuse the first one's (removed) CA file
        kube = k.Kube.from_kubeconfig(doc, temp_dir=str(state))
        try:
            assert kube.get("/api/v1/namespaces/a") == {"kind": "Namespace", "metadata": {"name": "a"}}
        finally:
            kube.close()
    assert server.requests == [("/api/v1/namespaces/a", "Bearer sa-token")] * 2
    assert list(state.iterdir()) == []  # the CA data was on disk only while the TLS context loaded it


def test_a_server_the_documents_ca_does_not_vouch_for_is_refused(tls: tuple[Server, bytes]) -> None:
    server, _ = tls
    kube = k.Kube.from_kubeconfig(kubeconfig(server, certs.make_ca().cert_pem, {"token": "sa-token"}))
    try:
        with pytest.raises(k.ServerError, match="certificate verify failed"):
            kube.get("/api/v1/namespaces/a")
    finally:
        kube.close()
    assert server.requests == []


@pytest.mark.parametrize(
    ("user", "message"),
    [
        pytest.param(
            {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
            "tokenFile is not allowed",
            id="tokenFile",
        ),
        pytest.param(
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "/bin/sh",
                    "args": ["-c", "{touch}"],
                }
            },
            "exec plugins are not allowed",
            id="exec plugin",
        ),
        pytest.param({"username": "admin", "password": "x"}, "basic auth is not allowed", id="basic auth"),
        pytest.param(
            {"token": "t", "as": "system:admin"}, "impersonation is not supported (user fields as)", id="impersonation"
        ),
    ],
)
def test_a_kubeconfig_upstream_refuses_is_refused_before_the_loader_runs(
    tls: tuple[Server, bytes], tmp_path: Path, user: dict[str, Any], message: str
) -> None:
    server, ca_pem = tls
    marker = tmp_path / "exec-ran"
    if "exec" in user:
        user["exec"]["args"] = ["-c", f"touch {marker}"]
    state = tmp_path / "state"
    state.mkdir()
    with pytest.raises(k.KubeError) as exc:
        k.Kube.from_kubeconfig(kubeconfig(server, ca_pem, user), temp_dir=str(state))
    assert str(exc.value) == message
    assert not marker.exists()
    assert list(state.iterdir()) == []
    assert server.requests == []
