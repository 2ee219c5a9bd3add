"""Who is asking the visibility API, and may they: front-proxy authentication, SubjectAccessReviews.

An aggregated API server trusts the kube-apiserver's aggregator, not end users: the aggregator
connects with its front-proxy client certificate and names the user in request headers. What to
trust is published in ConfigMap `kube-system/extension-apiserver-authentication`
(`requestheader-client-ca-file`, `requestheader-allowed-names` and the header names), which
`k8s.io/apiserver`'s `DelegatingAuthenticationOptions` reads and our server reads the same way:

1. the TLS layer verifies a client certificate against the requestheader CA (`tls_context`); a
   request without one, or with one whose common name is not allowed, is not authenticated (401);
   bearer tokens and anonymous requests are not accepted (upstream's anonymous user would get 403);
2. the user is the first value of the first username header present, groups are every value of the
   group headers, extras come from the prefixed headers (key unescaped, lower-cased), and
   `system:authenticated` is added, as the API server's authenticated-group adder does;
3. each request is authorized by a SubjectAccessReview (`DelegatingAuthorizationOptions`); answers are
   cached for ten seconds, allowed or not, as those options' defaults do.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from webhook import kube as k
from webhook.reviews import KubeAPI, TTLCache, User, access_review, is_allowed

__all__ = [
    "AUTH_CONFIGMAP",
    "AccessDecision",
    "AccessReviewer",
    "Attributes",
    "FrontProxy",
    "FrontProxySource",
    "KubeAPIGet",
    "authenticate",
    "parse_front_proxy",
]

log = logging.getLogger(__name__)

AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
ALLOW_TTL_S = 10.0
PRIVILEGED_GROUP = "system:masters"
DENY_TTL_S = 10.0
CACHE_SIZE = 1024
REFRESH_S = 30.0
_AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True, slots=True)
class FrontProxy:
    """The requestheader settings the cluster publishes for aggregated API servers."""

    client_ca: str
    allowed_names: tuple[str, ...]
    username_headers: tuple[str, ...]
    uid_headers: tuple[str, ...]
    group_headers: tuple[str, ...]
    extra_prefixes: tuple[str, ...]


def _names(data: Mapping[str, str], key: str) -> tuple[str, ...]:
    raw = data.get(key) or "[]"
    try:
        values = json.loads(raw)
    except ValueError:
        return ()
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


def parse_front_proxy(configmap: Mapping[str, Any] | None) -> FrontProxy | None:
    """The ConfigMap's requestheader settings; None when it has no requestheader CA (no front proxy)."""
    data = (configmap or {}).get("data") or {}
    ca = str(data.get("requestheader-client-ca-file") or "")
    if not ca.strip():
        return None
    return FrontProxy(
        ca,
        _names(data, "requestheader-allowed-names"),
        _names(data, "requestheader-username-headers"),
        _names(data, "requestheader-uid-headers"),
        _names(data, "requestheader-group-headers"),
        _names(data, "requestheader-extra-headers-prefix"),
    )


def _common_name(peer_cert: Mapping[str, Any]) -> str:
    for rdn in peer_cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


def authenticate(
    front: FrontProxy | None,
    peer_cert: Mapping[str, Any] | None,
    headers: Callable[[str], Sequence[str]],
    header_names: Sequence[str],
) -> User | None:
    """The user the front proxy names, or None. `peer_cert` is the client certificate the TLS layer
    already verified against the requestheader CA (None without one); `headers(name)` gives every value
    of a header (case-insensitive) and `header_names` lists the request's header names."""
    if front is None or not peer_cert:
        return None
    if front.allowed_names and _common_name(peer_cert) not in front.allowed_names:
        return None
    name = next((v for h in front.username_headers for v in headers(h) if v), "")
    if not name:
        return None
    uid = next((v for h in front.uid_headers for v in headers(h) if v), "")
    groups = tuple(v for h in front.group_headers for v in headers(h))
    if _AUTHENTICATED not in groups:
        groups += (_AUTHENTICATED,)
    extra: dict[str, list[str]] = {}
    for header in header_names:
        for prefix in front.extra_prefixes:
            if header.lower().startswith(prefix.lower()):
                key = urllib.parse.unquote(header[len(prefix) :]).lower()
                extra.setdefault(key, []).extend(headers(header))
    return User(name, uid, groups, tuple(sorted((key, tuple(values)) for key, values in extra.items())))


class KubeAPIGet(KubeAPI, Protocol):
    """The part of `webhook.kube.Kube` the front-proxy settings and the reviews use."""

    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None: ...


class FrontProxySource:
    """Keeps the cluster's front-proxy settings current: read at start, re-read every `REFRESH_S`.

    A new requestheader CA is added to the server's TLS context (new connections trust it at once);
    a removed one stays trusted until restart, since OpenSSL cannot drop a CA from a live context."""

    def __init__(self, kube: KubeAPIGet, ctx: ssl.SSLContext) -> None:
        self._kube = kube
        self._ctx = ctx
        self._loaded: set[str] = set()
        self.current: FrontProxy | None = None

    def refresh(self) -> None:
        try:
            front = parse_front_proxy(self._kube.get(AUTH_CONFIGMAP))
        except k.KubeError as exc:
            log.warning(
                "visibility: cannot read the front-proxy settings",
                extra={"object": "kube-system/extension-apiserver-authentication", "error": str(exc)},
            )
            return
        if front is not None and front.client_ca not in self._loaded:
            self._ctx.load_verify_locations(cadata=front.client_ca)
            self._loaded.add(front.client_ca)
        if front != self.current:
            log.info(
                "visibility: front-proxy settings loaded",
                extra={
                    "object": "kube-system/extension-apiserver-authentication",
                    "allowed_names": list(front.allowed_names) if front else None,
                },
            )
        self.current = front

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(REFRESH_S):
            self.refresh()


class Attributes(NamedTuple):
    """What a request does, as `authorizer.Attributes`: a resource request when `resource` is set,
    else a non-resource `path`."""

    verb: str
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    group: str = ""
    version: str = ""
    path: str = ""


class AccessDecision(NamedTuple):
    """A SubjectAccessReview's answer (not the admission core's `cycle.Decision`)."""

    allowed: bool
    reason: str = ""


class AccessReviewer:
    """Authorizes by SubjectAccessReview, caching each (user, attributes) answer for ten seconds."""

    def __init__(
        self, kube: KubeAPI, *, clock: Callable[[], float] = time.monotonic, cache_size: int = CACHE_SIZE
    ) -> None:
        self._kube = kube
        self.decisions: TTLCache[tuple[User, Attributes], AccessDecision] = TTLCache(cache_size, clock)

    def authorize(self, user: User, attrs: Attributes) -> AccessDecision:
        """Raises KubeError when the review cannot be made (nothing is cached then).

        A member of system:masters is allowed without a review, as the generic API server's
        delegating authorizer does (`AlwaysAllowGroups`): the API server would allow it anyway, and
        the aggregator's own discovery requests (as `system:kube-aggregator`, in that group) keep
        the APIService Available while our identity cannot make reviews."""
        if PRIVILEGED_GROUP in user.groups:
            return AccessDecision(True, "")
        key = (user, attrs)
        cached = self.decisions.get(key)
        if cached is not None:
            return cached
        if attrs.resource:
            attributes: dict[str, Any] = {
                "resourceAttributes": {
                    key: value
                    for key, value in (
                        ("verb", attrs.verb),
                        ("group", attrs.group),
                        ("version", attrs.version),
                        ("resource", attrs.resource),
                        ("subresource", attrs.subresource),
                        ("name", attrs.name),
                        ("namespace", attrs.namespace),
                    )
                    if value
                }
            }
        else:
            attributes = {"nonResourceAttributes": {"path": attrs.path, "verb": attrs.verb}}
        status = access_review(self._kube, user, attributes)
        decision = AccessDecision(is_allowed(status), str(status.get("reason") or ""))
        self.decisions.put(key, decision, ALLOW_TTL_S if decision.allowed else DENY_TTL_S)
        return decision
