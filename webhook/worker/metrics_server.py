"""The worker's `/metrics` over HTTPS, for callers the API server vouches for.

Our counterpart of controller-runtime's secure metrics serving with
`filters.WithAuthenticationAndAuthorization`, which upstream's manager uses (kueue ff69552e79,
`cmd/kueue/main.go`):

1. the bearer token goes to a TokenReview; no token, or one the review does not authenticate,
   is 401 `Unauthorized`;
2. the user it names goes to a SubjectAccessReview for the request's verb (the method, lower
   case) on the non-resource path; anything but "allowed" is 403
   `Authorization denied for user <name>`;
3. an API error in either step is 500, and nothing is cached for it.

Answers are cached as upstream's delegating authenticator and authorizer cache them (a token
for a minute, an allowed review for five, a denied one for thirty seconds), so a scrape every
few seconds costs no API call; each cache holds at most `CACHE_SIZE` entries, least recently
used first out. Tokens are cached by their SHA-256, never in clear.

Only `/metrics` is served (404 elsewhere, before any review, as controller-runtime's mux does);
its body comes from prometheus_client's WSGI app, so the exposition (content negotiation,
gzip, `name[]`) is exactly what `start_http_server` served before. Each connection gets its own
thread, and its TLS handshake happens there; connections are capped and each request must be in
within a deadline (`guarded_server`), so a slow client holds up no one.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from prometheus_client import make_wsgi_app
from prometheus_client.registry import Collector

from webhook import kube as k
from webhook.guarded_server import GuardedHandler, GuardedThreadingMixIn
from webhook.reviews import (
    KubeAPI,
    TokenAuthenticator,
    TTLCache,
    User,
    access_review,
    bearer_token,
    is_allowed,
)

__all__ = [
    "CACHE_SIZE",
    "Authorizer",
    "Denied",
    "MetricsServer",
    "app",
]

log = logging.getLogger(__name__)

METRICS_PATH = "/metrics"

#: controller-runtime's TTLs (`DelegatingAuthenticatorConfig.CacheTTL`, `AllowCacheTTL`, `DenyCacheTTL`).
TOKEN_TTL_S = 60.0
ALLOW_TTL_S = 300.0
DENY_TTL_S = 30.0
CACHE_SIZE = 1024
HANDSHAKE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Denied:
    """A refusal: the HTTP status and the plain-text message controller-runtime sends."""

    status: int
    message: str


class Authorizer:
    """Decides whether a request may read the metrics: TokenReview, then SubjectAccessReview, both cached."""

    def __init__(
        self, kube: KubeAPI, *, clock: Callable[[], float] = time.monotonic, cache_size: int = CACHE_SIZE
    ) -> None:
        self._kube = kube
        self.authenticator = TokenAuthenticator(kube, ttl=TOKEN_TTL_S, cache_size=cache_size, clock=clock)
        self.decisions: TTLCache[tuple[User, str, str], bool] = TTLCache(cache_size, clock)

    def authorize(self, user: User, verb: str, path: str) -> bool:
        """Whether RBAC (or any authorizer) lets `user` `verb` the non-resource `path`. Raises KubeError."""
        key = (user, verb, path)
        cached = self.decisions.get(key)
        if cached is not None:
            return cached
        allowed = is_allowed(access_review(self._kube, user, {"nonResourceAttributes": {"path": path, "verb": verb}}))
        self.decisions.put(key, allowed, ALLOW_TTL_S if allowed else DENY_TTL_S)
        return allowed

    def check(self, authorization: str, method: str, path: str) -> Denied | None:
        """None if the request may go on, else why not."""
        token = bearer_token(authorization)
        if token is None:
            return Denied(401, "Unauthorized")
        try:
            user = self.authenticator.authenticate(token)
        except k.KubeError as exc:
            log.error("metrics: token review failed", extra={"error": str(exc)})
            return Denied(500, "Authentication failed")
        if user is None:
            return Denied(401, "Unauthorized")
        try:
            allowed = self.authorize(user, method.lower(), path)
        except k.KubeError as exc:
            log.error("metrics: subject access review failed", extra={"user": user.name, "error": str(exc)})
            return Denied(500, f"Authorization for user {user.name} failed")
        if not allowed:
            return Denied(403, f"Authorization denied for user {user.name}")
        return None


def _plain(start_response: StartResponse, status: str, message: str) -> Iterable[bytes]:
    """What Go's `http.Error` writes."""
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff")])
    return [message.encode() + b"\n"]


_REASONS = {401: "Unauthorized", 403: "Forbidden", 500: "Internal Server Error"}


def app(registry: Collector, auth: Authorizer) -> WSGIApplication:
    """`/metrics` behind `auth`; every other path is 404."""
    exposition = make_wsgi_app(registry)

    def metrics_app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path != METRICS_PATH:
            return _plain(start_response, "404 Not Found", "404 page not found")
        denied = auth.check(environ.get("HTTP_AUTHORIZATION", ""), environ["REQUEST_METHOD"], path)
        if denied is not None:
            return _plain(start_response, f"{denied.status} {_REASONS[denied.status]}", denied.message)
        body: Iterable[bytes] = exposition(environ, start_response)
        return body

    return metrics_app


class _Handler(GuardedHandler, WSGIRequestHandler):
    """Completes the TLS handshake in the connection's own thread, then serves one request quietly."""

    timeout = HANDSHAKE_TIMEOUT_S  # also bounds reading the request

    def setup(self) -> None:
        self.request.settimeout(self.timeout)
        self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged (as before)."""


class MetricsServer(GuardedThreadingMixIn, WSGIServer):
    """A thread per connection, capped, each request under a deadline (`guarded_server`); accepted
    sockets are wrapped in `ssl_context` without a handshake."""

    def __init__(self, address: tuple[str, int], wsgi_app: WSGIApplication, ssl_context: ssl.SSLContext) -> None:
        self.address_family = socket.getaddrinfo(
            address[0], address[1], type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0][0]
        self.ssl_context = ssl_context
        super().__init__(address, _Handler)
        self.set_app(wsgi_app)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = self.socket.accept()
        return self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A failed handshake or a dropped client is the client's problem, not a traceback on stderr."""
        log.debug("metrics: connection failed", extra={"client": str(client_address)}, exc_info=True)
