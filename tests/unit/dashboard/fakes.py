"""A fake API server for the reviews: tokens name users; RBAC is a set of (user, verb, resource, namespace)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from tests.builders import make_cq, make_lq, make_wl
from webhook.core import usage
from webhook.dashboard.store import Kind, Store
from webhook.reviews import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS

ADMIN = "admin-token"
ALICE = "alice-token"  # ServiceAccount team-a/alice: may list Workloads and LocalQueues in team-a only
BOB = "bob-token"  # ServiceAccount team-a/bob: may list and get Workloads in team-a, but not its LocalQueues
MALLORY = "mallory-token"  # ServiceAccount team-a/mallory: authenticated, may list nothing
CAROL = "carol-token"  # a person (not a ServiceAccount): may list Workloads and LocalQueues in team-b only


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def service_account(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


_ALICE, _BOB = service_account("team-a", "alice"), service_account("team-a", "bob")


class FakeReviews:
    def __init__(self) -> None:
        self.tokens = {
            ADMIN: "admin",
            ALICE: _ALICE,
            BOB: _BOB,
            MALLORY: service_account("team-a", "mallory"),
            CAROL: "carol@example.com",
        }
        self.rules: set[tuple[str, str, str, str]] = {
            ("admin", "*", "*", ""),
            (_ALICE, "list", "workloads", "team-a"),
            (_ALICE, "get", "workloads", "team-a"),
            (_ALICE, "list", "localqueues", "team-a"),
            (_BOB, "list", "workloads", "team-a"),
            (_BOB, "get", "workloads", "team-a"),
            ("carol@example.com", "list", "workloads", "team-b"),
            ("carol@example.com", "list", "localqueues", "team-b"),
        }
        self.calls: list[str] = []

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        self.calls.append(path)
        if path == TOKEN_REVIEWS:
            user = self.tokens.get(body["spec"]["token"])
            return {"status": {"authenticated": True, "user": {"username": user}} if user else {}}
        assert path == SUBJECT_ACCESS_REVIEWS
        spec = body["spec"]
        ra = spec["resourceAttributes"]
        allowed = (spec["user"], "*", "*", "") in self.rules or (
            spec["user"],
            ra["verb"],
            ra["resource"],
            ra["namespace"],
        ) in self.rules
        return {"status": {"allowed": allowed}}


def two_teams() -> Store:
    """team-a and team-b share ClusterQueue cq (4 cpu); two pending Workloads each, one admitted in team-a."""
    store = Store()
    store.replace(
        Kind.CLUSTER_QUEUES,
        [make_cq("cq").group({"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}).obj()],
    )
    store.replace(Kind.LOCAL_QUEUES, [make_lq("lq", "team-a", "cq"), make_lq("lq", "team-b", "cq")])
    store.replace(Kind.RESOURCE_FLAVORS, [{"metadata": {"name": "default"}, "spec": {}}])
    store.replace(Kind.COHORTS, [])
    # One hour of usage, the last whole hour: team-a held 2 cores of cq throughout.
    start = int(time.time()) // 3600 * 3600 - 3600
    ledger = usage.Ledger(
        start,
        start + 3600,
        start + 3600,
        {usage.UsageKey("cq", "", "lq", "team-a", "", "", "default", "cpu"): 7_200_000},
    )
    store.replace(Kind.USAGE_RECORDS, [usage.to_record(ledger)])
    store.replace(
        Kind.WORKLOADS,
        [
            make_wl("a-old", "team-a").created(1).obj(),
            make_wl("a-new", "team-a").created(5).obj(),
            make_wl("b-high", "team-b").created(9).priority(10).obj(),
            make_wl("b-low", "team-b").created(2).obj(),
            make_wl("a-running", "team-a").reserve("cq").obj(),
        ],
    )
    return store


def many_namespaces(n: int) -> Store:
    """two_teams plus a LocalQueue (and so a namespace the caches hold) in each of ns-0 … ns-<n-1>."""
    store = two_teams()
    queues = list(store.objects(Kind.LOCAL_QUEUES).values())
    store.replace(Kind.LOCAL_QUEUES, [*queues, *(make_lq("lq", f"ns-{i}", "cq") for i in range(n))])
    return store


def info_of(obj: dict[str, Any]) -> Any:
    """The dashboard store's view of one Workload object."""
    store = Store()
    store.replace(Kind.WORKLOADS, [obj])
    return next(iter(store.workloads().values())).info
