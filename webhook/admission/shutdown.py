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
4. after `drain_s` the listener closes and in-flight requests finish (uvicorn's own shutdown).

A second SIGTERM, or SIGINT (Ctrl-C), stops at once. The pod's terminationGracePeriodSeconds
must exceed `drain_s`, or the kubelet kills the process mid-drain.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DEFAULT_DRAIN_S", "CloseWhileDraining", "GracefulServer"]

log = logging.getLogger(__name__)

# Long enough for kube-proxy on a busy node to drop the endpoint (about 0.1 s on an idle one),
# short enough that a rollout of two replicas stays quick.
DEFAULT_DRAIN_S = 5.0


class CloseWhileDraining:
    """Adds `Connection: close` to every HTTP response once `draining` is set."""

    def __init__(self, app: ASGIApp, draining: threading.Event) -> None:
        self.app = app
        self.draining = draining

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.draining.is_set():
            await self.app(scope, receive, send)
            return

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, send_closing)


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
