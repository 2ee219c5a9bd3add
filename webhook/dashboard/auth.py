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

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from webhook.api import constants
from webhook.reviews import KubeAPI, TokenAuthenticator, TTLCache, User, access_review, is_allowed

__all__ = ["Access", "Authorizer"]

TOKEN_TTL_S = 60.0
ALLOW_TTL_S = 60.0
DENY_TTL_S = 10.0
CACHE_SIZE = 4096


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


class Authorizer:
    """TokenReview and SubjectAccessReview against the API server, both cached. Calls raise KubeError."""

    def __init__(self, kube: KubeAPI, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._kube = kube
        self.authenticator = TokenAuthenticator(kube, ttl=TOKEN_TTL_S, cache_size=CACHE_SIZE, clock=clock)
        self._decisions: TTLCache[tuple[User, str, str, str, str], bool] = TTLCache(CACHE_SIZE, clock)

    def authenticate(self, token: str) -> User | None:
        """The token's user, or None when the API server does not authenticate it."""
        return self.authenticator.authenticate(token)

    def allowed(
        self, user: User, verb: str, resource: str, *, namespace: str = "", group: str = constants.GROUP
    ) -> bool:
        """Whether `user` may `verb` `resource` of `group` in `namespace` ("" = all namespaces or cluster scope)."""
        key = (user, verb, group, resource, namespace)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        attributes = {"group": group, "resource": resource, "verb": verb, "namespace": namespace}
        allowed = is_allowed(access_review(self._kube, user, {"resourceAttributes": attributes}))
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
