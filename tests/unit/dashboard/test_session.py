"""Sign-in and the live stream as an attacker would try them (issue 27, finding 5): tokens bound to the
dashboard's audience, a Secure expiring cookie, no cross-site sign-in or sign-out, a bounded sign-in
body, and a live stream that tells nothing of other namespaces and ends with its token."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

import certs
from tests.builders import make_wl
from tests.unit.dashboard.fakes import ALICE, Clock, FakeReviews, two_teams
from webhook.dashboard import app as dashboard_app
from webhook.dashboard import server
from webhook.dashboard.app import COOKIE, Settings, create_app
from webhook.dashboard.auth import Authorizer
from webhook.dashboard.store import Kind, Store
from webhook.reviews import TOKEN_REVIEWS

pytestmark = pytest.mark.anyio

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
AUDIENCE = "kueue-dashboard"  # what the sign-in page tells users to pass to `kubectl create token --audience`


class AudienceReviews(FakeReviews):
    """Tokens carry audiences, and a TokenReview asking for some authenticates only their intersection,
    as the API server's service account authenticator does."""

    def __init__(self) -> None:
        super().__init__()
        self.audiences = {ALICE: {AUDIENCE}, "alice-api-token": {API_AUDIENCE}}
        self.tokens["alice-api-token"] = self.tokens[ALICE]
        self.token_reviews: list[Mapping[str, Any]] = []

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        if path != TOKEN_REVIEWS:
            return super().create(path, body, timeout=timeout)
        self.token_reviews.append(body["spec"])
        token = body["spec"]["token"]
        wanted = set(body["spec"].get("audiences") or [API_AUDIENCE])
        granted = sorted(self.audiences.get(token, set()) & wanted)
        if not granted or token not in self.tokens:
            return {"status": {"authenticated": False}}
        return {"status": {"authenticated": True, "user": {"username": self.tokens[token]}, "audiences": granted}}


def dashboard(
    reviews: FakeReviews | None = None, *, store: Store | None = None, clock: Clock | None = None, **settings: Any
) -> httpx.AsyncClient:
    authorizer = Authorizer(reviews or AudienceReviews(), clock=clock or Clock(), audiences=(AUDIENCE,))
    app = create_app(Settings(store=store or two_teams(), authorizer=authorizer, **settings))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://dash")


async def test_only_a_token_bound_to_the_dashboards_audience_signs_in() -> None:
    reviews = AudienceReviews()
    async with dashboard(reviews) as c:
        refused = await c.post("/login", content="token=alice-api-token", headers=FORM)
        assert refused.headers["location"] == "/login?failed=1"
        assert (await c.get("/workloads", headers={"Authorization": "Bearer alice-api-token"})).status_code == 401
        ok = await c.post("/login", content=f"token={ALICE}", headers=FORM)
        assert ok.headers["location"] == "/"
        assert "kubectl create token" in (login := (await c.get("/login")).text) and f"--audience={AUDIENCE}" in login
    assert {tuple(spec["audiences"]) for spec in reviews.token_reviews} == {(AUDIENCE,)}


async def test_an_answer_naming_no_audience_is_refused() -> None:
    """An authenticator that ignored the requested audiences would answer without `status.audiences`."""
    reviews = AudienceReviews()
    reviews.create = lambda path, body, *, timeout=30: (  # type: ignore[method-assign]
        {"status": {"authenticated": True, "user": {"username": "alice"}}}
        if path == TOKEN_REVIEWS
        else FakeReviews.create(reviews, path, body)
    )
    async with dashboard(reviews) as c:
        assert (await c.post("/login", content=f"token={ALICE}", headers=FORM)).headers["location"].endswith("failed=1")


async def test_the_session_cookie_is_secure_and_expires() -> None:
    async with dashboard() as c:
        cookie = (await c.post("/login", content=f"token={ALICE}", headers=FORM)).headers["set-cookie"]
    attributes = {a.strip().split("=")[0].lower(): a for a in cookie.split(";")}
    assert {"secure", "httponly", "max-age"} <= attributes.keys()
    assert attributes["max-age"].strip() == f"Max-Age={dashboard_app.SESSION_MAX_AGE_S}" and attributes[
        "samesite"
    ].strip().lower() == ("samesite=strict")


CROSS_SITE = [
    pytest.param({"Origin": "https://evil.example"}, id="another origin"),
    pytest.param({"Origin": "null"}, id="an opaque origin"),
    pytest.param({"Sec-Fetch-Site": "cross-site"}, id="cross-site fetch"),
    pytest.param({"Sec-Fetch-Site": "same-site", "Origin": "http://dash"}, id="a sibling subdomain"),
]
SAME_SITE = [
    pytest.param({}, id="no browser headers (curl)"),
    pytest.param({"Origin": "http://dash"}, id="same origin"),
    pytest.param({"Sec-Fetch-Site": "same-origin", "Origin": "https://proxy.example"}, id="same-origin behind a proxy"),
]


@pytest.mark.parametrize("path", ["/login", "/logout"])
@pytest.mark.parametrize("headers", CROSS_SITE)
async def test_a_cross_site_post_is_refused(path: str, headers: dict[str, str]) -> None:
    async with dashboard() as c:
        resp = await c.post(path, content=f"token={ALICE}", headers={**FORM, **headers})
    assert resp.status_code == 403 and "set-cookie" not in resp.headers


@pytest.mark.parametrize("path", ["/login", "/logout"])
@pytest.mark.parametrize("headers", SAME_SITE)
async def test_a_same_site_post_is_served(path: str, headers: dict[str, str]) -> None:
    async with dashboard() as c:
        resp = await c.post(path, content=f"token={ALICE}", headers={**FORM, **headers})
    assert resp.status_code == 303 and COOKIE in resp.headers["set-cookie"]


async def test_the_sign_in_body_is_bounded() -> None:
    async def endless() -> AsyncIterator[bytes]:
        yield b"token="
        while True:
            yield b"x" * 65536

    async with dashboard() as c:
        assert (
            await c.post("/login", content=b"token=" + b"x" * dashboard_app.MAX_LOGIN_BODY, headers=FORM)
        ).status_code == 413
        assert (await c.post("/login", content=endless(), headers=FORM)).status_code == 413  # no Content-Length


class Stream:
    """GET /events through the ASGI app directly (httpx's ASGI transport waits for a body's end)."""

    def __init__(self, app: Any, token: str) -> None:
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._gone = asyncio.Event()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": "/events",
            "raw_path": b"/events",
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"dash"), (b"authorization", f"Bearer {token}".encode())],
            "client": ("127.0.0.1", 5000),
            "server": ("dash", 80),
        }
        self.task = asyncio.create_task(app(scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.body":
            if message.get("body"):
                await self.chunks.put(message["body"])
            if not message.get("more_body"):
                await self.chunks.put(None)

    async def next(self, timeout: float) -> bytes | None:
        """The next chunk (None: the stream ended); TimeoutError when nothing comes."""
        return await asyncio.wait_for(self.chunks.get(), timeout)

    async def close(self) -> None:
        self._gone.set()
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def touch(store: Store, key: str) -> None:
    ns, name = key.split("/")
    store.apply(Kind.WORKLOADS, "MODIFIED", make_wl(name, ns).priority(7).obj())


async def test_the_live_stream_tells_nothing_of_changes_elsewhere() -> None:
    store = two_teams()
    authorizer = Authorizer(FakeReviews(), clock=Clock())
    stream = Stream(create_app(Settings(store=store, authorizer=authorizer)), ALICE)
    try:
        assert await stream.next(2) == b"retry: 2000\ndata: changed\n\n"
        for _ in range(3):  # team-b is busy; Alice may see team-a only
            touch(store, "team-b/b-high")
        with pytest.raises(TimeoutError):
            await stream.next(1)
        touch(store, "team-a/a-old")
        assert await stream.next(2) == b"data: changed\n\n"  # no counter: it says nothing of how much changed
    finally:
        await stream.close()


async def test_the_live_stream_ends_when_its_token_stops_authenticating() -> None:
    reviews, clock = FakeReviews(), Clock()
    app = create_app(Settings(store=two_teams(), authorizer=Authorizer(reviews, clock=clock), reauthorize_every_s=0.2))
    stream = Stream(app, ALICE)
    try:
        assert await stream.next(2) == b"retry: 2000\ndata: changed\n\n"
        await asyncio.sleep(0.5)  # re-authorized while the token is good: still open
        assert stream.chunks.empty() and not stream.task.done()
        del reviews.tokens[ALICE]  # the token is revoked (or expires) ...
        clock.now += 61  # ... and its cached review expires
        assert await stream.next(2) is None
    finally:
        await stream.close()


def test_tls_is_the_default_with_webhook_tls_context(tmp_path: Path) -> None:
    options = server.Options()
    assert not options.plain_http and options.audiences == (AUDIENCE,)  # type: ignore[attr-defined]
    ctx, reloader = server.server_tls(options)
    assert isinstance(ctx, ssl.SSLContext) and ctx.minimum_version is ssl.TLSVersion.TLSv1_2 and reloader is None
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    ctx, reloader = server.server_tls(server.Options(cert_dir=tmp_path))
    assert isinstance(ctx, ssl.SSLContext) and reloader is not None  # rotated certificates are picked up
    assert server.server_tls(server.Options(plain_http=True)) == (None, None)
