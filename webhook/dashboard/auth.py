"""Who is asking, and what they may see: a TokenReview, then SubjectAccessReviews on a bounded set.

Every page, fragment and the live stream go through `Authorizer.access`, and every row a page
shows is filtered by the answer, so a user bound to one namespace sees that namespace's
LocalQueues and Workloads only (upstream KueueViz served every namespace to anyone who could
reach it, kubernetes-sigs/kueue#11143). The dashboard reads through its own ServiceAccount's
watch caches; the reviews decide what of them each user gets.

What it costs the API server is bounded per user, whatever the size of the cluster (issue 27,
finding 4: checking every namespace the caches hold cost 2N+5 reviews a page):

- five cluster-scope reviews: list ClusterQueues, ResourceFlavors, Cohorts, and Workloads and
  LocalQueues in all namespaces; a user granted the last two needs nothing more;
- otherwise two per namespace of the user's own *namespace set*: their ServiceAccount's
  namespace and the last `MAX_NAMESPACES` namespaces they named (`?namespace=`, a Workload's
  URL), those the caches hold only. Any other namespace shows nothing until named.
- every review the cache does not answer spends from the user's token bucket
  (`REVIEW_BURST`, refilled at `REVIEWS_PER_S`); an empty bucket is `RateLimited` (429).

Answers are cached (a token for a minute, an allowed review for a minute, a denied one for ten
seconds) so that a page view costs no API call while RBAC changes show within a minute; tokens
are cached by their SHA-256, never in clear.

Why SubjectAccessReviews and not a SelfSubjectRulesReview: an SSRR must be made as the user,
with their token, and the dashboard's tokens are bound to its own audience, which the API server
refuses (that is the point of binding them: a token given to the dashboard cannot be replayed at
the API server). An SSRR also covers one namespace per call, so it would not replace the loop
over namespaces, and its answer may be incomplete (webhook authorizers) or wider than what is
allowed (it lists RBAC's rules even when an authorizer ahead of RBAC denies): it could show more
than a SubjectAccessReview allows. A SubjectAccessReview is the API server's whole decision.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from webhook.api import constants
from webhook.reviews import KubeAPI, TokenAuthenticator, TTLCache, User, access_review, is_allowed

__all__ = [
    "AUDIENCE",
    "MAX_NAMESPACES",
    "REVIEWS_PER_S",
    "REVIEW_BURST",
    "Access",
    "Authorizer",
    "RateLimited",
    "service_account_namespace",
]

log = logging.getLogger(__name__)

#: The audience the dashboard's tokens are bound to: `kubectl create token <sa> --audience=kueue-dashboard`.
AUDIENCE = "kueue-dashboard"
TOKEN_TTL_S = 60.0
ALLOW_TTL_S = 60.0
DENY_TTL_S = 10.0
CACHE_SIZE = 4096
#: Namespaces per user checked one by one when no cluster-wide grant covers them.
MAX_NAMESPACES = 8
#: Reviews a user may cause at once, and per second after that: a cold page, 5 + 2 * (MAX_NAMESPACES + 1)
#: with their own namespace, plus a Workload page's three (get it, list its Events and Pods) and one spare.
REVIEW_BURST = 5 + 2 * (MAX_NAMESPACES + 1) + 4
REVIEWS_PER_S = 2.0
#: Users whose namespace sets and buckets are remembered (least recently seen out first).
USERS = 1024
_SERVICE_ACCOUNT = "system:serviceaccount:"


class RateLimited(Exception):
    """The user has used up their reviews; retry after `retry_after` seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many access reviews; retry in {retry_after:.1f}s")
        self.retry_after = retry_after


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


def service_account_namespace(user: User) -> str:
    """The namespace of a ServiceAccount user (`system:serviceaccount:<ns>:<name>`), else ""."""
    if not user.name.startswith(_SERVICE_ACCOUNT):
        return ""
    ns, _, name = user.name[len(_SERVICE_ACCOUNT) :].partition(":")
    return ns if name else ""


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class _PerUser:
    """Each user's namespace set (most recently named last) and review bucket, for `USERS` users at most."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._named: OrderedDict[User, tuple[str, ...]] = OrderedDict()
        self._buckets: OrderedDict[User, _Bucket] = OrderedDict()

    def name(self, user: User, namespaces: Iterable[str]) -> tuple[str, ...]:
        """Add `namespaces` to the user's set (the oldest fall out past `MAX_NAMESPACES`); the set."""
        with self._lock:
            named = list(self._named.pop(user, ()))
            for ns in namespaces:
                if ns in named:
                    named.remove(ns)
                named.append(ns)
            self._named[user] = tuple(named[-MAX_NAMESPACES:])
            while len(self._named) > USERS:
                self._named.popitem(last=False)
            return self._named[user]

    def spend(self, user: User) -> None:
        """Take one review from the user's bucket, or raise RateLimited."""
        now = self._clock()
        with self._lock:
            b = self._buckets.pop(user, None) or _Bucket(float(REVIEW_BURST), now)
            b.tokens = min(float(REVIEW_BURST), b.tokens + (now - b.stamp) * REVIEWS_PER_S)
            b.stamp = now
            self._buckets[user] = b
            while len(self._buckets) > USERS:
                self._buckets.popitem(last=False)
            if b.tokens < 1:
                log.warning("dashboard: user rate-limited", extra={"user": user.name})
                raise RateLimited((1 - b.tokens) / REVIEWS_PER_S)
            b.tokens -= 1


class Authorizer:
    """TokenReview and SubjectAccessReview against the API server, both cached. Calls raise KubeError,
    and RateLimited when the user has caused too many reviews."""

    def __init__(
        self, kube: KubeAPI, *, clock: Callable[[], float] = time.monotonic, audiences: Sequence[str] = ()
    ) -> None:
        self._kube = kube
        self.audiences = tuple(audiences)  # () accepts tokens bound to the API server's own audience
        self.authenticator = TokenAuthenticator(
            kube, ttl=TOKEN_TTL_S, cache_size=CACHE_SIZE, clock=clock, audiences=audiences
        )
        self._decisions: TTLCache[tuple[User, str, str, str, str], bool] = TTLCache(CACHE_SIZE, clock)
        self._users = _PerUser(clock)

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
        self._users.spend(user)
        attributes = {"group": group, "resource": resource, "verb": verb, "namespace": namespace}
        allowed = is_allowed(access_review(self._kube, user, {"resourceAttributes": attributes}))
        self._decisions.put(key, allowed, ALLOW_TTL_S if allowed else DENY_TTL_S)
        return allowed

    def _namespaces(self, user: User, resource: str, candidates: Iterable[str]) -> frozenset[str] | None:
        if self.allowed(user, "list", resource):
            return None
        return frozenset(ns for ns in candidates if self.allowed(user, "list", resource, namespace=ns))

    def access(self, user: User, *, named: Iterable[str] = (), present: Collection[str] | None = None) -> Access:
        """What `user` may list. The namespaced kinds, unless granted in all namespaces, are checked in the
        user's namespace set (their ServiceAccount's namespace, then those `named` now and before), leaving
        out namespaces not in `present` (those the caches hold; None: keep all)."""
        own = service_account_namespace(user)
        named_here = [ns for ns in named if ns and ns != own and (present is None or ns in present)]
        candidates = list(self._users.name(user, named_here))
        if own and (present is None or own in present):
            candidates.insert(0, own)
        return Access(
            user=user,
            cluster_queues=self.allowed(user, "list", "clusterqueues"),
            resource_flavors=self.allowed(user, "list", "resourceflavors"),
            cohorts=self.allowed(user, "list", "cohorts"),
            workloads=self._namespaces(user, "workloads", candidates),
            local_queues=self._namespaces(user, "localqueues", candidates),
        )
