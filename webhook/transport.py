"""HTTP/1.1 to one API server over persistent connections: the wire under `webhook.kube.Kube`.

Why not urllib3 and http.client, which the kubernetes client brings: against the local API server
a request cost this process 330-510 µs of CPU through them (pool bookkeeping, header parsing
through the email package, per-request Timeout and Retry objects) and 80-115 µs here, for the same
TLS connection reuse. The admission worker writes a Workload status, a queue status or an Event
for nearly every decision, so this is where most of its CPU went.

What a client of the API server needs and no more: keep-alive connections shared by threads,
`Content-Length` and chunked bodies, TLS with the kubeconfig's CA, client certificate and server
name, an HTTP proxy through CONNECT, and one retry of a request that a reused connection lost
before any byte of its response came back (the server had closed it while idle), as Go's
net/http transport retries.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import ssl
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

__all__ = ["Endpoint", "Response", "Stream", "Transport"]

#: Idle connections kept for reuse; a burst of more concurrent requests opens more and closes the excess.
MAX_IDLE = 32
#: Longest status line or header line accepted from the server.
MAX_LINE = 65536


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect: `tls` is None for plain HTTP; `server_name` is what TLS sends
    (SNI) and checks the certificate against; `proxy` is an HTTP proxy's (host, port) to tunnel
    through with CONNECT, with `proxy_headers` (e.g. Proxy-Authorization) on the CONNECT."""

    host: str
    port: int
    base_path: str = ""
    tls: ssl.SSLContext | None = None
    server_name: str | None = None
    proxy: tuple[str, int] | None = None
    proxy_headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    body: bytes


class _Conn:
    """One connection; `reused` once a response has been read from it."""

    def __init__(self, ep: Endpoint, timeout: float | None) -> None:
        sock = socket.create_connection(ep.proxy or (ep.host, ep.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if ep.proxy:
                _tunnel(sock, ep)
            if ep.tls is not None:
                sock = ep.tls.wrap_socket(sock, server_hostname=ep.server_name or ep.host)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.rfile = sock.makefile("rb")
        self.reused = False

    def close(self) -> None:
        self.rfile.close()
        self.sock.close()

    def send(self, head: bytes, body: bytes | None) -> None:
        self.sock.sendall(head + body if body else head)

    def read_head(self) -> tuple[int, str, dict[bytes, bytes]]:
        """Status and the headers this client acts on; ConnectionError if the server closed first."""
        while True:
            line = self.rfile.readline(MAX_LINE)
            if not line:
                raise ConnectionError("the server closed the connection before responding")
            version, _, rest = line.rstrip(b"\r\n").partition(b" ")
            code, _, reason = rest.partition(b" ")
            if not version.startswith(b"HTTP/") or not code.isdigit():
                raise ConnectionError(f"not an HTTP response: {line[:80]!r}")
            headers: dict[bytes, bytes] = {}
            while True:
                line = self.rfile.readline(MAX_LINE)
                if line in (b"\r\n", b"\n"):
                    break
                if not line:
                    raise ConnectionError("the connection closed inside the response headers")
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            status = int(code)
            if status != 100:  # a 100 Continue precedes the real response
                return status, reason.decode("latin-1"), headers

    def chunks(self, status: int, headers: Mapping[bytes, bytes], method: str) -> Iterator[bytes]:
        """The body as it arrives; ConnectionError when it is cut short."""
        if method == "HEAD" or status in (204, 304):
            return
        rfile = self.rfile
        if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            while True:
                size_line = rfile.readline(MAX_LINE)
                try:
                    size = int(size_line.split(b";", 1)[0], 16)
                except ValueError:
                    raise ConnectionError("the connection closed inside a chunked body") from None
                if size == 0:
                    while rfile.readline(MAX_LINE) not in (b"\r\n", b"\n", b""):  # trailers
                        pass
                    return
                data = rfile.read(size)
                if len(data) < size or rfile.readline(MAX_LINE) not in (b"\r\n", b"\n"):
                    raise ConnectionError("the connection closed inside a chunked body")
                yield data
        elif b"content-length" in headers:
            remaining = int(headers[b"content-length"])
            while remaining:
                data = rfile.read1(min(remaining, 1 << 16))
                if not data:
                    raise ConnectionError("the connection closed inside the response body")
                remaining -= len(data)
                yield data
        else:  # delimited by the end of the connection
            while data := rfile.read1(1 << 16):
                yield data


def _tunnel(sock: socket.socket, ep: Endpoint) -> None:
    """CONNECT through the HTTP proxy to the API server."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in ep.proxy_headers.items())
    sock.sendall(f"CONNECT {ep.authority} HTTP/1.1\r\nHost: {ep.authority}\r\n{extra}\r\n".encode())
    rfile = sock.makefile("rb")
    try:
        status = rfile.readline(MAX_LINE)
        while rfile.readline(MAX_LINE) not in (b"\r\n", b"\n", b""):
            pass
        if b" 200" not in status[:13]:
            raise ConnectionError(f"proxy refused CONNECT {ep.authority}: {status.strip().decode('latin-1')}")
    finally:
        rfile.close()  # the socket stays open: closing a makefile() only drops its reference


class Stream:
    """A response read as it arrives (a watch). Its connection is never reused: close() ends it."""

    def __init__(self, conn: _Conn, status: int, reason: str, headers: dict[bytes, bytes], method: str) -> None:
        self.status, self.reason = status, reason
        self._conn = conn
        self._chunks = conn.chunks(status, headers, method)

    def chunks(self) -> Iterator[bytes]:
        return self._chunks

    def read(self) -> bytes:
        return b"".join(self._chunks)

    def close(self) -> None:
        self._conn.close()


class Transport:
    """Requests to one API server; thread-safe: each request takes an idle connection or opens one."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._idle: collections.deque[_Conn] = collections.deque()  # append/pop are atomic
        self._streams: weakref.WeakSet[_Conn] = weakref.WeakSet()  # open watches, for close()
        # A client dropped without close() still closes its idle sockets, as urllib3's pools do.
        weakref.finalize(self, _close_all, self._idle)

    def _head(self, method: str, path: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {self.endpoint.base_path}{path} HTTP/1.1", f"Host: {self.endpoint.authority}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _exchange(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes | None, timeout: float | None
    ) -> tuple[_Conn, int, str, dict[bytes, bytes]]:
        """Send and read the response head, on an idle connection when there is one. A reused
        connection that fails before any byte of a response is replaced once: the server may have
        closed it while it sat idle."""
        head = self._head(method, path, headers, body)
        while True:
            try:
                conn = self._idle.pop()
            except IndexError:
                conn = _Conn(self.endpoint, timeout)
            conn.sock.settimeout(timeout)
            try:
                conn.send(head, body)
                status, reason, response_headers = conn.read_head()
            except OSError:
                conn.close()
                if conn.reused:
                    continue
                raise
            return conn, status, reason, response_headers

    def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None = 30,
    ) -> Response:
        """One request and its whole response. OSError (ConnectionError, TimeoutError, ssl.SSLError)
        when the connection fails."""
        conn, status, reason, response_headers = self._exchange(method, path, headers, body, timeout)
        try:
            data = b"".join(conn.chunks(status, response_headers, method))
        except BaseException:
            conn.close()
            raise
        keep = response_headers.get(b"connection", b"").lower() != b"close" and (
            b"content-length" in response_headers
            or b"chunked" in response_headers.get(b"transfer-encoding", b"").lower()
            or status in (204, 304)
        )
        if keep and len(self._idle) < MAX_IDLE:
            conn.reused = True
            self._idle.append(conn)
        else:
            conn.close()
        return Response(status, reason, data)

    def stream(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> Stream:
        """A request whose response is read as it arrives, on a connection of its own."""
        conn = _Conn(self.endpoint, connect_timeout)
        conn.sock.settimeout(read_timeout)
        try:
            conn.send(self._head(method, path, headers, None), None)
            status, reason, response_headers = conn.read_head()
        except BaseException:
            conn.close()
            raise
        self._streams.add(conn)
        return Stream(conn, status, reason, response_headers, method)

    def close(self) -> None:
        """Close the idle connections (those in use close when their request ends) and end every
        open stream: a thread blocked reading a watch sees it end at once (a stopped MultiKueue
        worker's watches must not outlive it by their server-side timeout)."""
        _close_all(self._idle)
        for conn in list(self._streams):
            # The plain socket's shutdown: SSLSocket's would drop its TLS state under the reader.
            with contextlib.suppress(OSError):  # already closed
                socket.socket.shutdown(conn.sock, socket.SHUT_RDWR)


def _close_all(idle: collections.deque[_Conn]) -> None:
    while True:
        try:
            idle.pop().close()
        except IndexError:
            return
