"""Benchmark of the dashboard (not a test): time to render the overview and the Workloads page, and
the SubjectAccessReviews a page view costs the API server at 100 and 5,000 namespaces.

20 ClusterQueues in 4 cohorts, 2 flavors, 200 LocalQueues in 50 namespaces, and N Workloads
(60 % pending, 40 % admitted) in the dashboard's store; each page is fetched through the whole
ASGI app (sign-in cookie, cached reviews, template) in-process, as a browser's GET would be.
The baseline is the same page over the same queues with no Workloads, measured in the same run,
so the ratio shows what the Workloads themselves cost.

Reviews: one LocalQueue in each of N namespaces; for a cluster-wide reader, a ServiceAccount bound
to its own namespace and a person granted one namespace (and naming it), the SubjectAccessReviews of the first
page view, of 20 live refreshes after it, and of a page a minute later (cached answers expired).
Run: python bench/bench_dashboard.py [render|reviews]  (both by default)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from webhook.dashboard.app import COOKIE, Settings, create_app
from webhook.dashboard.auth import Authorizer
from webhook.dashboard.store import Kind, Store

SIZES = (0, 1000, 10000)
REPEAT = 7
LIMIT_S = 1.0


class AllowAll:
    """Token and access reviews answered at once: the benchmark measures rendering, not the API server."""

    def create(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        if "tokenreviews" in path:
            return {"status": {"authenticated": True, "user": {"username": "admin"}}}
        return {"status": {"allowed": True}}


def store_with(workloads: int) -> Store:
    store = Store()
    store.replace(Kind.RESOURCE_FLAVORS, [{"metadata": {"name": f}, "spec": {}} for f in ("on-demand", "spot")])
    store.replace(Kind.COHORTS, [])
    cqs = []
    for i in range(20):
        cqs.append(
            {
                "metadata": {"name": f"cq-{i}"},
                "spec": {
                    "cohortName": f"cohort-{i % 4}",
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": f,
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "100"},
                                        {"name": "memory", "nominalQuota": "400Gi", "borrowingLimit": "100Gi"},
                                    ],
                                }
                                for f in ("on-demand", "spot")
                            ],
                        }
                    ],
                },
                "status": {
                    "pendingWorkloads": 300,
                    "admittedWorkloads": 200,
                    "reservingWorkloads": 200,
                    "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
                    "flavorsReservation": [
                        {
                            "name": "on-demand",
                            "resources": [
                                {"name": "cpu", "total": "80", "borrowed": "0"},
                                {"name": "memory", "total": "300Gi", "borrowed": "0"},
                            ],
                        }
                    ],
                },
            }
        )
    store.replace(Kind.CLUSTER_QUEUES, cqs)
    store.replace(
        Kind.LOCAL_QUEUES,
        [
            {"metadata": {"name": f"lq-{i}", "namespace": f"ns-{i % 50}"}, "spec": {"clusterQueue": f"cq-{i % 20}"}}
            for i in range(200)
        ],
    )
    wls = []
    for i in range(workloads):
        lq = i % 200
        obj: dict[str, Any] = {
            "metadata": {
                "name": f"wl-{i}",
                "namespace": f"ns-{lq % 50}",
                "uid": f"uid-{i:06d}",
                "creationTimestamp": f"2025-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            },
            "spec": {
                "queueName": f"lq-{lq}",
                "priority": i % 3,
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
                    }
                ],
            },
            "status": {},
        }
        if i % 5 < 2:
            obj["status"] = {
                "admission": {"clusterQueue": f"cq-{lq % 20}", "podSetAssignments": []},
                "conditions": [
                    {
                        "type": t,
                        "status": "True",
                        "reason": t,
                        "message": "",
                        "lastTransitionTime": "2025-01-01T01:00:00Z",
                    }
                    for t in ("QuotaReserved", "Admitted")
                ],
            }
        wls.append(obj)
    store.replace(Kind.WORKLOADS, wls)
    return store


async def timed(store: Store, path: str) -> float:
    app = create_app(Settings(store=store, authorizer=Authorizer(AllowAll())))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://dash", cookies={COOKIE: "t"}
    ) as client:
        assert (await client.get(path)).status_code == 200  # warm: reviews cached, templates compiled
        times = []
        for _ in range(REPEAT):
            started = time.perf_counter()
            resp = await client.get(path)
            times.append(time.perf_counter() - started)
            assert resp.status_code == 200
        return statistics.median(times)


REVIEW_NAMESPACES = (100, 5000)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class CountingReviews:
    """Tokens name users; admin may list everything, team-0's account and a person list in ns-0 only."""

    def __init__(self) -> None:
        self.users = {"admin": "admin", "sa": "system:serviceaccount:ns-0:team", "person": "person@example.com"}
        self.sars = 0

    def create(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        if "tokenreviews" in path:
            return {"status": {"authenticated": True, "user": {"username": self.users[body["spec"]["token"]]}}}
        self.sars += 1
        spec = body["spec"]
        return {"status": {"allowed": spec["user"] == "admin" or spec["resourceAttributes"]["namespace"] == "ns-0"}}


async def review_counts(namespaces: int, token: str, path: str) -> tuple[int, int, int]:
    store = Store()
    for kind in (Kind.CLUSTER_QUEUES, Kind.RESOURCE_FLAVORS, Kind.COHORTS, Kind.WORKLOADS):
        store.replace(kind, [])
    store.replace(
        Kind.LOCAL_QUEUES,
        [
            {"metadata": {"name": "lq", "namespace": f"ns-{i}"}, "spec": {"clusterQueue": "cq"}}
            for i in range(namespaces)
        ],
    )
    reviews, clock = CountingReviews(), Clock()
    app = create_app(Settings(store=store, authorizer=Authorizer(reviews, clock=clock)))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://dash", cookies={COOKIE: token}
    ) as client:
        assert (await client.get(path)).status_code == 200
        first = reviews.sars
        for _ in range(20):
            assert (await client.get("/fragment/workloads")).status_code == 200
        refreshes = reviews.sars - first
        clock.now += 61
        assert (await client.get(path)).status_code == 200
        return first, refreshes, reviews.sars - first - refreshes


def reviews() -> None:
    print(f"{'SubjectAccessReviews':<44} {'first page':>10} {'20 refreshes':>12} {'a minute on':>11}")
    for n in REVIEW_NAMESPACES:
        for who, token, path in (
            ("cluster-wide reader", "admin", "/workloads"),
            ("ServiceAccount, own ns", "sa", "/workloads"),
            ("person, naming ns-0", "person", "/workloads?namespace=ns-0"),
        ):
            first, refreshes, later = asyncio.run(review_counts(n, token, path))
            print(f"{n:>5} namespaces, {who:<24}      {first:>10} {refreshes:>12} {later:>11}")


def render() -> bool:
    stores = {n: store_with(n) for n in SIZES}
    ok = True
    for path in ("/", "/workloads"):
        base = asyncio.run(timed(stores[0], path))
        print(f"{path:<11} baseline (no Workloads): {base * 1000:7.1f} ms")
        for n in SIZES[1:]:
            t = asyncio.run(timed(stores[n], path))
            ok &= t < LIMIT_S
            print(
                f"{path:<11} {n:>6} Workloads: {t * 1000:7.1f} ms  ({t / base:5.1f}x baseline)"
                f"{'' if t < LIMIT_S else '  OVER 1 s'}"
            )
    return ok


def main() -> int:
    which = sys.argv[1:] or ["render", "reviews"]
    ok = True
    if "reviews" in which:
        reviews()
    if "render" in which:
        ok = render()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
