"""Who is asking, and what they may see: TokenReview, then a SubjectAccessReview per resource and namespace.

Every page, fragment and the live stream go through `Authorizer.access`, and every row a page
shows is filtered by the answer, so a user bound to one namespace sees that namespace's
LocalQueues and Workloads only (upstream KueueViz served every namespace to anyone who could
reach it, kubernetes-sigs/kueue#11143). The dashboard reads through its own ServiceAccount's
watch caches; the reviews decide what of them each user gets.

Answers are cached briefly (a token for a minute, an allowed review for a minute, a denied one
for ten seconds) so that a page view costs no API call while RBAC changes show within a minute;
tokens are cached by their SHA-256, never in clear.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from webhook.api import constants

__all__ = ["Access", "Authorizer", "KubeAPI", "User", "bearer_token"]

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
TOKEN_TTL_S = 60.0
ALLOW_TTL_S = 60.0
DENY_TTL_S = 10.0
CACHE_SIZE = 4096
REVIEW_TIMEOUT_S = 10.0


class KubeAPI(Protocol):
    """The part of `webhook.kube.Kube` the reviews use."""

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class User:
    """Who a TokenReview says the caller is; hashable, so it keys the decision cache."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class Access:
    """What one user may list. `None` for a namespaced kind means every namespace."""

    user: User
    cluster_queues: bool
    resource_flavors: bool
    cohorts: bool
    workloads: frozenset[str] | None
    local_queues: frozenset[str] | None

    def sees_workloads_in(self, namespace: str) -> bool:
        return self.workloads is None or namespace in self.workloads


def bearer_token(header: str) -> str | None:
    """The token of `Authorization: Bearer <token>`."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class _TTLCache:
    """A bounded LRU whose entries expire after their own TTL."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self._size, self._clock = size, clock
        self._entries: OrderedDict[object, tuple[float, object]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: object) -> tuple[object] | None:
        """`(value,)` on a hit, so that a cached None is told apart from a miss."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None or hit[0] <= self._clock():
                self._entries.pop(key, None)
                return None
            self._entries.move_to_end(key)
            return (hit[1],)

    def put(self, key: object, value: object, ttl: float) -> None:
        with self._lock:
            self._entries[key] = (self._clock() + ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


def _user(status: Mapping[str, Any]) -> User:
    u = status.get("user") or {}
    extra = tuple(sorted((key, tuple(values or ())) for key, values in (u.get("extra") or {}).items()))
    return User(str(u.get("username", "")), str(u.get("uid", "")), tuple(u.get("groups") or ()), extra)


class Authorizer:
    """TokenReview and SubjectAccessReview against the API server, both cached. Calls raise KubeError."""

    def __init__(self, kube: KubeAPI, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._kube = kube
        self._tokens = _TTLCache(CACHE_SIZE, clock)
        self._decisions = _TTLCache(CACHE_SIZE, clock)

    def authenticate(self, token: str) -> User | None:
        """The token's user, or None when the API server does not authenticate it."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self._tokens.get(key)
        if cached is not None:
            return cached[0]  # type: ignore[return-value]
        review = self._kube.create(TOKEN_REVIEWS, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
            timeout=REVIEW_TIMEOUT_S)
        status = review.get("status") or {}
        user = _user(status) if status.get("authenticated") else None
        self._tokens.put(key, user, TOKEN_TTL_S)
        return user

    def allowed(self, user: User, verb: str, resource: str, *, namespace: str = "", group: str = constants.GROUP) -> bool:
        """Whether `user` may `verb` `resource` of `group` in `namespace` ("" = all namespaces or cluster scope)."""
        key = (user, verb, group, resource, namespace)
        cached = self._decisions.get(key)
        if cached is not None:
            return bool(cached[0])
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "resourceAttributes": {"group": group, "resource": resource, "verb": verb,
                                                       "namespace": namespace}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {name: list(values) for name, values in user.extra}
        review = self._kube.create(SUBJECT_ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
            timeout=REVIEW_TIMEOUT_S)
        status = review.get("status") or {}
        allowed = bool(status.get("allowed")) and not status.get("denied")
        self._decisions.put(key, allowed, ALLOW_TTL_S if allowed else DENY_TTL_S)
        return allowed

    def _namespaces(self, user: User, resource: str, candidates: Iterable[str]) -> frozenset[str] | None:
        if self.allowed(user, "list", resource):
            return None
        return frozenset(ns for ns in sorted(set(candidates)) if self.allowed(user, "list", resource, namespace=ns))

    def access(self, user: User, namespaces: Iterable[str]) -> Access:
        """What `user` may list, the namespaced kinds checked in each of `namespaces` (those the caches hold)."""
        candidates = list(namespaces)
        return Access(
            user=user,
            cluster_queues=self.allowed(user, "list", "clusterqueues"),
            resource_flavors=self.allowed(user, "list", "resourceflavors"),
            cohorts=self.allowed(user, "list", "cohorts"),
            workloads=self._namespaces(user, "workloads", candidates),
            local_queues=self._namespaces(user, "localqueues", candidates),
        )
