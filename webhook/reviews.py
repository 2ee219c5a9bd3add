"""Who calls, and what they may do: TokenReview and SubjectAccessReview against the API server,
with the caches that keep them off the hot path — as k8s.io/apiserver's delegating authenticator
and authorizer do. Shared by the worker's HTTPS servers (/metrics, the visibility API) and the
dashboard, which each choose their own TTLs and attributes. Tokens are cached by their SHA-256,
never in clear.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "REVIEW_TIMEOUT_S",
    "SUBJECT_ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
    "KubeAPI",
    "TTLCache",
    "TokenAuthenticator",
    "User",
    "access_review",
    "bearer_token",
    "is_allowed",
]

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
REVIEW_TIMEOUT_S = 10.0  # upstream's TokenAccessReviewTimeout
_AUTHENTICATED = "system:authenticated"

K = TypeVar("K")
V = TypeVar("V")


class KubeAPI(Protocol):
    """The part of `webhook.kube.Kube` the reviews use."""

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class User:
    """Who a TokenReview (or the front proxy) says the caller is; hashable, so it keys decision caches."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


def bearer_token(header: str) -> str | None:
    """The token of `Authorization: Bearer <token>`, as the API server's bearer-token authenticator reads it."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


@dataclass(slots=True)
class TTLCache(Generic[K, V]):
    """A bounded LRU whose entries expire after their own TTL; thread-safe, least recently used out first."""

    size: int
    clock: Callable[[], float]
    _entries: OrderedDict[K, tuple[float, V]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            if hit[0] <= self.clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return hit[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        with self._lock:
            self._entries[key] = (self.clock() + ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class TokenAuthenticator:
    """Bearer token -> User by TokenReview, each answer (a rejection included) cached for `ttl` seconds.

    With `audiences`, only a token bound to one of them authenticates: the TokenReview asks for
    them (`spec.audiences`) and the answer must name one (`status.audiences`), as k8s.io/apiserver's
    webhook token authenticator checks (`plugin/pkg/authenticator/token/webhook/webhook.go`).
    A token bound to the API server's own audience is then refused, so one that leaks from here
    cannot be replayed against the API server, nor one meant for it be used here.
    """

    def __init__(
        self,
        kube: KubeAPI,
        *,
        ttl: float,
        cache_size: int,
        clock: Callable[[], float] = time.monotonic,
        audiences: Sequence[str] = (),
    ) -> None:
        self._kube = kube
        self._ttl = ttl
        self._audiences = tuple(audiences)
        # A 1-tuple, so a rejected token (None) is a cached answer, not a miss.
        self.cache: TTLCache[bytes, tuple[User | None]] = TTLCache(cache_size, clock)

    def authenticate(self, token: str) -> User | None:
        """The token's user, or None if the API server does not authenticate it. Raises KubeError."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self.cache.get(key)
        if cached is not None:
            return cached[0]
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        review = self._kube.create(
            TOKEN_REVIEWS,
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec},
            timeout=REVIEW_TIMEOUT_S,
        )
        status = review.get("status") or {}
        bound = not self._audiences or bool(set(status.get("audiences") or ()) & set(self._audiences))
        user = _user(status) if status.get("authenticated") and bound else None
        self.cache.put(key, (user,), self._ttl)
        return user


def _user(status: Mapping[str, Any]) -> User:
    u = status.get("user") or {}
    groups = tuple(u.get("groups") or ())
    if _AUTHENTICATED not in groups:  # as the API server's authenticated-group adder does
        groups += (_AUTHENTICATED,)
    extra = tuple(sorted((key, tuple(values or ())) for key, values in (u.get("extra") or {}).items()))
    return User(str(u.get("username", "")), str(u.get("uid", "")), groups, extra)


def access_review(kube: KubeAPI, user: User, attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    """The status of a SubjectAccessReview for `user`; `attributes` is the spec's `resourceAttributes` or
    `nonResourceAttributes` entry. Raises KubeError (callers cache nothing then)."""
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups), **attributes}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {name: list(values) for name, values in user.extra}
    review = kube.create(
        SUBJECT_ACCESS_REVIEWS,
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        timeout=REVIEW_TIMEOUT_S,
    )
    return review.get("status") or {}


def is_allowed(status: Mapping[str, Any]) -> bool:
    """Allowed and not explicitly denied."""
    return bool(status.get("allowed")) and not status.get("denied")
