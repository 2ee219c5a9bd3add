"""What a page costs the API server in reviews, whatever the size of the cluster (issue 27, finding 4)."""

from __future__ import annotations

import httpx
import pytest

from tests.unit.dashboard.fakes import ADMIN, ALICE, CAROL, MALLORY, Clock, FakeReviews, many_namespaces
from webhook.dashboard import auth
from webhook.dashboard.app import Settings, create_app
from webhook.dashboard.auth import Authorizer
from webhook.dashboard.store import Store
from webhook.reviews import SUBJECT_ACCESS_REVIEWS, User

pytestmark = pytest.mark.anyio


def dashboard(store: Store, clock: Clock | None = None) -> tuple[httpx.AsyncClient, FakeReviews]:
    reviews = FakeReviews()
    authorizer = Authorizer(reviews, clock=clock or Clock())
    app = create_app(Settings(store=store, authorizer=authorizer))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://dash"), reviews


def sars(reviews: FakeReviews) -> int:
    return reviews.calls.count(SUBJECT_ACCESS_REVIEWS)


@pytest.mark.parametrize("namespaces", [100, 5000])
@pytest.mark.parametrize(
    ("token", "cold"),
    [
        pytest.param(ADMIN, 5, id="cluster-wide reader"),
        pytest.param(ALICE, 7, id="ServiceAccount bound to its namespace"),
        pytest.param(MALLORY, 7, id="ServiceAccount with no grant"),
        pytest.param(CAROL, 5, id="person with a namespace grant, naming none"),
    ],
)
async def test_a_page_costs_a_few_reviews_at_any_cluster_size(namespaces: int, token: str, cold: int) -> None:
    c, reviews = dashboard(many_namespaces(namespaces))
    async with c:
        c.headers["Authorization"] = f"Bearer {token}"
        assert (await c.get("/workloads")).status_code == 200
        assert sars(reviews) == cold
        for _ in range(5):  # live refreshes
            assert (await c.get("/fragment/workloads")).status_code == 200
        assert sars(reviews) == cold


async def test_a_person_sees_a_namespace_once_they_name_it_and_only_if_granted() -> None:
    c, _ = dashboard(many_namespaces(10))
    async with c:
        c.headers["Authorization"] = f"Bearer {CAROL}"
        assert "b-high" not in (await c.get("/workloads")).text
        assert "b-high" in (await c.get("/workloads?namespace=team-b")).text
        assert "b-high" in (await c.get("/fragment/workloads")).text  # remembered: no filter shows it now
        assert "a-old" not in (await c.get("/workloads?namespace=team-a")).text  # naming never grants


async def test_the_namespace_set_keeps_the_last_ones_named() -> None:
    clock = Clock()
    c, reviews = dashboard(many_namespaces(2 * auth.MAX_NAMESPACES), clock)
    async with c:
        c.headers["Authorization"] = f"Bearer {CAROL}"
        await c.get("/workloads?namespace=team-b")
        for i in range(auth.MAX_NAMESPACES):
            clock.now += 60  # refilled, every cached answer expired
            assert (await c.get(f"/workloads?namespace=ns-{i}")).status_code == 200
        clock.now += 60
        before = sars(reviews)
        assert "b-high" not in (await c.get("/workloads")).text  # team-b fell out
        assert sars(reviews) - before == 5 + 2 * auth.MAX_NAMESPACES  # cluster scope, then her namespace set


async def test_a_user_naming_namespace_after_namespace_is_rate_limited_alone() -> None:
    c, reviews = dashboard(many_namespaces(200))  # the clock stands still: no refill
    async with c:
        statuses = [
            (await c.get(f"/workloads?namespace=ns-{i}", headers={"Authorization": f"Bearer {CAROL}"})).status_code
            for i in range(100)
        ]
        assert set(statuses) == {200, 429} and statuses[0] == 200
        limited = await c.get("/workloads?namespace=ns-199", headers={"Authorization": f"Bearer {CAROL}"})
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert sars(reviews) <= auth.REVIEW_BURST
        assert (await c.get("/workloads", headers={"Authorization": f"Bearer {ADMIN}"})).status_code == 200


def test_service_account_namespace() -> None:
    assert auth.service_account_namespace(User("system:serviceaccount:team-a:alice")) == "team-a"
    assert auth.service_account_namespace(User("system:serviceaccount:team-a")) == ""
    assert auth.service_account_namespace(User("alice@example.com")) == ""
