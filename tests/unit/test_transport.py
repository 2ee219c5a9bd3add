"""`webhook.kube.Kube` on its own HTTP/1.1 transport, against real sockets: connections are kept
and reused, a connection the server dropped while idle costs a retry and never a duplicate write,
TLS checks the server against the kubeconfig's CA and tls-server-name, an HTTP proxy is used
through CONNECT with its credentials, and a proxy we cannot use is refused when the client is made."""

from __future__ import annotations

import base64
import gc
import http.server
import json
import socket
import ssl
import threading
import warnings
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
        self.connections = 0
        self.requests: list[tuple[str, str, bytes]] = []
        self.drop_after_response = False

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1
        super().process_request(request, client_address)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, *args: Any) -> None:
        pass

    def _respond(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.command, self.path, body))
        if self.path.startswith("/missing"):
            self._send(404, json.dumps({"kind": "Status", "message": 'widgets "x" not found'}).encode())
        elif self.path.startswith("/broken"):
            self._send(500, b"<html>upstream proxy error</html>", chunked=True)
        else:
            self._send(200, json.dumps({"method": self.command, "path": self.path}).encode(), chunked=True)
        # Closing without "Connection: close": the client finds out on its next request.
        self.close_connection = self.server.drop_after_response

    def _send(self, status: int, body: bytes, *, chunked: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(body) // 2
            for part in (body[:half], body[half:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = _respond


def _serve(tls: ssl.SSLContext | None = None) -> Server:
    server = Server()
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _kubeconfig(tmp_path: Path, server: str, **cluster: Any) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [{"name": "t", "cluster": {"server": server, **cluster}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
                "users": [{"name": "t", "user": {"token": "abc"}}],
            }
        )
    )
    return str(path)


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[tuple[Server, k.Kube]]:
    server = _serve()
    kube = k.Kube(_kubeconfig(tmp_path, f"http://127.0.0.1:{server.server_address[1]}"))
    yield server, kube
    kube.close()
    server.shutdown()
    server.server_close()


def test_requests_reuse_one_connection(plain: tuple[Server, k.Kube]) -> None:
    server, kube = plain
    for i in range(20):
        assert kube.get(f"/api/v1/namespaces/n{i}") == {"method": "GET", "path": f"/api/v1/namespaces/n{i}"}
    assert server.connections == 1


def test_a_connection_dropped_while_idle_is_replaced_without_repeating_a_write(
    plain: tuple[Server, k.Kube],
) -> None:
    server, kube = plain
    server.drop_after_response = True
    for i in range(5):
        created = kube.create("/api/v1/namespaces/a/configmaps", {"metadata": {"name": f"c{i}"}})
        assert created["method"] == "POST"
    posts = [json.loads(body)["metadata"]["name"] for method, _, body in server.requests if method == "POST"]
    assert posts == ["c0", "c1", "c2", "c3", "c4"]
    assert server.connections == 5


def test_errors_carry_the_servers_message_and_status(plain: tuple[Server, k.Kube]) -> None:
    _, kube = plain
    with pytest.raises(k.NotFound, match='widgets "x" not found') as missing:
        kube.replace("/missing/x", {"metadata": {"name": "x"}})
    assert missing.value.status == 404
    assert kube.get("/missing/y") is None
    with pytest.raises(k.ServerError, match="upstream proxy error") as broken:
        kube.get("/broken")
    assert broken.value.status == 500
    assert kube.get("/after")["path"] == "/after"  # the connection survived the error responses


def test_a_refused_connection_is_a_server_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kube = k.Kube(_kubeconfig(tmp_path, f"http://127.0.0.1:{port}"))
    with pytest.raises(k.ServerError, match="GET /api/v1/namespaces") as refused:
        kube.list("/api/v1/namespaces")
    assert refused.value.status == 0


def test_tls_checks_the_server_against_the_ca_and_tls_server_name(tmp_path: Path) -> None:
    certs.write_bundle(tmp_path / "pki", ["kube.example"])
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(tmp_path / "pki" / "tls.crt", tmp_path / "pki" / "tls.key")
    server = _serve(tls)
    url = f"https://127.0.0.1:{server.server_address[1]}"
    ca = str(tmp_path / "pki" / "ca.crt")
    try:
        kube = k.Kube(_kubeconfig(tmp_path, url, **{"certificate-authority": ca, "tls-server-name": "kube.example"}))
        assert kube.get("/api/v1/namespaces/a")["path"] == "/api/v1/namespaces/a"
        kube.close()
        wrong_name = k.Kube(_kubeconfig(tmp_path, url, **{"certificate-authority": ca}))
        with pytest.raises(k.ServerError, match="certificate verify failed"):
            wrong_name.get("/api/v1/namespaces/a")
        other_ca = tmp_path / "other"
        certs.write_bundle(other_ca, ["kube.example"])
        untrusted = k.Kube(
            _kubeconfig(
                tmp_path, url, **{"certificate-authority": str(other_ca / "ca.crt"), "tls-server-name": "kube.example"}
            )
        )
        with pytest.raises(k.ServerError, match="certificate verify failed"):
            untrusted.get("/api/v1/namespaces/a")
    finally:
        server.shutdown()
        server.server_close()


class ConnectProxy(threading.Thread):
    """An HTTP proxy that only tunnels (CONNECT), recording each CONNECT's request head."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.heads: list[str] = []

    def run(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            head = b""
            while b"\r\n\r\n" not in head:
                head += client.recv(4096)
            self.heads.append(head.decode())
            target = head.split(b" ")[1].decode().rsplit(":", 1)
            upstream = socket.create_connection((target[0], int(target[1])))
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        dst.close()


def test_an_http_proxy_is_used_through_connect_with_its_credentials(
    plain: tuple[Server, k.Kube], tmp_path: Path
) -> None:
    server, _ = plain
    proxy = ConnectProxy()
    proxy.start()
    port = proxy.listener.getsockname()[1]
    api = f"127.0.0.1:{server.server_address[1]}"
    kube = k.Kube(_kubeconfig(tmp_path, f"http://{api}", **{"proxy-url": f"http://ops:s%40cret@127.0.0.1:{port}"}))
    try:
        assert kube.get("/api/v1/namespaces/a")["path"] == "/api/v1/namespaces/a"
        assert kube.get("/api/v1/namespaces/b")["path"] == "/api/v1/namespaces/b"
    finally:
        kube.close()
        proxy.listener.close()
    assert len(proxy.heads) == 1  # the tunnel is kept like any connection
    assert proxy.heads[0].startswith(f"CONNECT {api} HTTP/1.1\r\n")
    assert f"Proxy-Authorization: Basic {base64.b64encode(b'ops:s@cret').decode()}" in proxy.heads[0]


def test_a_proxy_other_than_http_is_refused(tmp_path: Path) -> None:
    with pytest.raises(k.KubeError, match=r"proxy 'socks5://127.0.0.1:1080': only http:// proxies are supported"):
        k.Kube(_kubeconfig(tmp_path, "https://127.0.0.1:6443", **{"proxy-url": "socks5://127.0.0.1:1080"}))


def test_a_client_dropped_without_close_closes_its_idle_connections(
    plain: tuple[Server, k.Kube], tmp_path: Path
) -> None:
    server, _ = plain
    kube = k.Kube(_kubeconfig(tmp_path, f"http://127.0.0.1:{server.server_address[1]}"))
    kube.get("/api/v1/namespaces/a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)  # an unclosed socket collected here would warn
        del kube
        gc.collect()
