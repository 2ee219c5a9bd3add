"""Graceful termination: on SIGTERM, fail readiness and keep serving for a drain period, then stop.

uvicorn closes its listener as soon as SIGTERM arrives, as upstream's manager does
(controller-runtime's `pkg/webhook/server.go` shuts its http.Server down when the manager's
context ends). In a cluster the Service still routes to the pod until kube-proxy has dropped its
endpoint, and the webhooks are `failurePolicy: Fail`, so a create sent in that window is refused
(`connect: connection refused`, seen right after a rolling update). So the first SIGTERM
starts a drain instead:

1. `/readyz` answers 503 (the pod leaves the ready endpoints, should its deletion not do it first);
2. the worker process is told to stop, so it releases the leader lease at once;
3. every request is still served, answered with `Connection: close` so keep-alive clients such as
   the API server reconnect through the Service, to a replica that stays;
4. a review (a POST) is forwarded through the webhook Service (`ServiceForwarder`) and the answer
   of whichever replica it reaches is relayed: a rollout that changed the Configuration must not
   have the old replica answer a review sent over a pooled connection after the new one is ready
   (upstream's sequential WorkloadPriorityClassDefaulting spec creates its Job a second later).
   A forwarded review carries `FORWARDED_HEADER`, and a draining replica answers such a one
   itself, so a Service whose only endpoint is this pod does not loop; when the Service cannot be
   reached the review is answered here, as before;
5. after `drain_s` the listener closes and in-flight requests finish (uvicorn's own shutdown).

A second SIGTERM, or SIGINT (Ctrl-C), stops at once. The pod's terminationGracePeriodSeconds
must exceed `drain_s`, or the kubelet kills the process mid-drain.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import os
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DEFAULT_DRAIN_S", "FORWARDED_HEADER", "GracefulServer", "ServiceForwarder", "WhileDraining"]

log = logging.getLogger(__name__)

# Long enough for kube-proxy on a busy node to drop the endpoint (about 0.1 s on an idle one),
# short enough that a rollout of two replicas stays quick.
DEFAULT_DRAIN_S = 5.0


# Marks a review one draining replica sent on through the Service; its value names the sender.
FORWARDED_HEADER = "x-pykueue-forwarded-by"
# Well inside the API server's webhook timeout (10 s by default), leaving time to answer here instead.
FORWARD_TIMEOUT_S = 4.0

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class ServiceForwarder:
    """Sends a review to the webhook Service and returns the answer (status, headers, body), or None
    when no replica could be reached; blocking (run it in a thread)."""

    def __init__(self, address: str, port: int, server_name: str, ca_file: Path, sender: str) -> None:
        self.address, self.port, self.server_name, self.sender = address, port, server_name, sender
        self.context = ssl.create_default_context(cafile=str(ca_file))

    @classmethod
    def for_service(cls, service: str, namespace: str, cert_dir: Path) -> ServiceForwarder | None:
        """The Service's ClusterIP and port from the environment the kubelet gives every pod (its DNS
        name when absent); None without the CA that signed the Service's certificate."""
        ca_file = cert_dir / "ca.crt"
        if not ca_file.is_file():
            return None
        env = service.upper().replace("-", "_")
        server_name = f"{service}.{namespace}.svc"
        address = os.environ.get(f"{env}_SERVICE_HOST") or server_name
        port = int(os.environ.get(f"{env}_SERVICE_PORT") or 443)
        return cls(address, port, server_name, ca_file, socket.gethostname())

    def __call__(self, path: str, headers: list[tuple[bytes, bytes]], body: bytes) -> Answer | None:
        try:
            raw = socket.create_connection((self.address, self.port), timeout=FORWARD_TIMEOUT_S)
            conn = http.client.HTTPSConnection(self.server_name, self.port, timeout=FORWARD_TIMEOUT_S)
            conn.sock = self.context.wrap_socket(raw, server_hostname=self.server_name)
            try:
                sent = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers if k.lower() == b"content-type"}
                conn.request("POST", path, body, {**sent, FORWARDED_HEADER: self.sender})
                resp = conn.getresponse()
                answer = resp.read()
                kept = [
                    (k.lower().encode("latin-1"), v.encode("latin-1"))
                    for k, v in resp.getheaders()
                    if k.lower() == "content-type"
                ]
                return resp.status, kept, answer
            finally:
                conn.close()
        except (OSError, http.client.HTTPException) as exc:
            log.info("draining: forwarding a review failed; answering it here", extra={"path": path, "error": str(exc)})
            return None


class WhileDraining:
    """Once `draining` is set: reviews go on through `forward` (module docstring, step 4) and every
    HTTP response carries `Connection: close`."""

    def __init__(
        self,
        app: ASGIApp,
        draining: threading.Event,
        forward: Callable[[str, list[tuple[bytes, bytes]], bytes], Answer | None] | None = None,
    ) -> None:
        self.app = app
        self.draining = draining
        self.forward = forward

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.draining.is_set():
            await self.app(scope, receive, send)
            return

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or ())
        if (
            self.forward is None
            or scope["method"] != "POST"
            or any(k.lower() == FORWARDED_HEADER.encode() for k, _ in headers)
        ):
            await self.app(scope, receive, send_closing)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        answer = await asyncio.to_thread(self.forward, scope["path"], headers, body)
        if answer is None:

            async def replay() -> Message:
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send_closing)
            return
        status, answer_headers, answer_body = answer
        await send_closing({"type": "http.response.start", "status": status, "headers": answer_headers})
        await send({"type": "http.response.body", "body": answer_body})


class GracefulServer(uvicorn.Server):
    """uvicorn's server whose first SIGTERM starts a drain (module docstring) instead of stopping."""

    def __init__(
        self, config: uvicorn.Config, *, draining: threading.Event, drain_s: float, on_drain: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self.draining = draining
        self.drain_s = drain_s
        self.on_drain = on_drain
        self._term_received = False
        self._drain_ends: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Runs as the signal handler: only set a flag here; the event loop acts on it in on_tick.
        if sig == signal.SIGTERM and not self._term_received:
            self._term_received = True
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        """Every 0.1 s: start the drain once SIGTERM came, and end the server once it is over."""
        now = time.monotonic()
        if self._term_received and self._drain_ends is None:
            self._drain_ends = now + self.drain_s
            self.draining.set()
            log.info("SIGTERM: draining before shutdown", extra={"drain_s": self.drain_s})
            self.on_drain()
        if self._drain_ends is not None and now >= self._drain_ends and not self.should_exit:
            log.info("drain over; closing the listener", extra={"drain_s": self.drain_s})
            self.should_exit = True
        return await super().on_tick(counter)
