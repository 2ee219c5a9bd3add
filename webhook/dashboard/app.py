"""The dashboard's ASGI app: routes, sign-in, authorization of every request, the live stream.

Pages are rendered with Jinja2 from the watch caches (`views`), each into a full page or, for
the live updates, just its fragment. The live stream (`/events`, server-sent events) carries
no data: it says "changed" when something its user may see changed (the kinds and namespaces of
their `Access`, `Store.version_of`), never for a change elsewhere, so its rhythm does not tell
how busy the rest of the cluster is (issue 27, finding 5). On each message the browser fetches
the fragment it shows, authorized like any page. The stream re-authorizes its user every
`reauthorize_every_s` and ends once the token no longer authenticates.

Credentials: `Authorization: Bearer <token>` on each request, or the same token posted once to
`/login` and kept in an HttpOnly, SameSite=Strict cookie with a Max-Age, Secure whenever the
dashboard is reached over TLS (its default). `/login` and `/logout` refuse cross-site posts
(`Sec-Fetch-Site`, else `Origin` against `Host`) and `/login` reads at most `MAX_LOGIN_BODY` bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import jinja2
import yaml
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from webhook import kube as k
from webhook.api import constants, schema_usage
from webhook.dashboard import usage, views
from webhook.dashboard.auth import Access, Authorizer, RateLimited
from webhook.dashboard.estimates import Estimates
from webhook.dashboard.history import History
from webhook.dashboard.store import Kind, Store
from webhook.reviews import bearer_token

__all__ = ["COOKIE", "MAX_LOGIN_BODY", "SESSION_MAX_AGE_S", "KubeReader", "Settings", "create_app"]

log = logging.getLogger(__name__)

COOKIE = "kueue-dashboard-token"
HEARTBEAT_S = 15.0
DEBOUNCE_S = 0.25
#: How long a browser keeps the sign-in cookie; a token expiring sooner is refused sooner all the same.
SESSION_MAX_AGE_S = 8 * 3600
#: A sign-in form holds one token; service account tokens are ~1 KiB, OIDC ones a few.
MAX_LOGIN_BODY = 16 * 1024
_SAME_ORIGIN = frozenset({"same-origin", "none"})
_DETAILS_ROLE = "kueue-dashboard-details-role"  # webhook.install.dashboard.DETAILS_ROLE (install imports us not)
_HERE = Path(__file__).parent
_SECURITY_HEADERS = {
    # pygal's SVG carries its own <style>; no script but ours, nothing from elsewhere.
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class KubeReader(Protocol):
    """The part of `webhook.kube.Kube` the workload page reads on demand (its Events and Pods)."""

    def list(self, path: str, *, query: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]: ...


@dataclass(frozen=True, slots=True)
class Settings:
    """What the app needs, built once at startup."""

    store: Store
    authorizer: Authorizer
    kube: KubeReader | None = None
    history: History | None = None
    estimates: Estimates | None = None
    sample_every_s: float = 10.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    secure_cookies: bool = True  # False only when served over plain HTTP (`--plain-http`)
    reauthorize_every_s: float = 60.0  # the token cache's TTL: a revoked token ends a live stream in two


class _Changes:
    """Wakes the live streams when the store changes; fed from informer threads."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def notify(self, version: int) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        """True after a change, False after `timeout` without one."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
            return True
        return False


def create_app(settings: Settings) -> Starlette:
    store, authorizer = settings.store, settings.authorizer
    history = settings.history or History()
    estimates = settings.estimates or Estimates()
    changes = _Changes()
    store.subscribe(changes.notify)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )

    def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        base = request.scope.get("root_path", "")
        body = env.get_template(template).render(base=base, **context)
        return HTMLResponse(body, status_code=status, headers=_SECURITY_HEADERS)

    async def access(request: Request) -> Access | Response:
        """The caller's access, or the response that refuses them."""
        token = bearer_token(request.headers.get("authorization", "")) or request.cookies.get(COOKIE)
        wants_page = request.method == "GET" and "text/html" in request.headers.get("accept", "")
        if not token:
            return (
                RedirectResponse(f"{request.scope.get('root_path', '')}/login", 303)
                if wants_page
                else PlainTextResponse("Unauthorized", 401)
            )
        try:
            user = await run_in_threadpool(authorizer.authenticate, token)
            if user is None:
                return (
                    RedirectResponse(f"{request.scope.get('root_path', '')}/login?failed=1", 303)
                    if wants_page
                    else PlainTextResponse("Unauthorized", 401)
                )
            # The namespaces this request names join the user's namespace set (auth.py).
            named = [request.query_params.get("namespace", ""), request.path_params.get("namespace", "")]
            return await run_in_threadpool(authorizer.access, user, named=named, present=store.namespaces())
        except RateLimited as exc:  # auth.py logs the user
            return _too_many(exc)
        except k.KubeError as exc:
            log.error("dashboard: review failed", extra={"error": str(exc)})
            return PlainTextResponse("Authorization failed", 500)

    def overview_context(acc: Access) -> dict[str, Any]:
        return {
            "view": views.overview(
                store, cluster_queues=acc.cluster_queues, flavors=acc.resource_flavors, cohorts=acc.cohorts
            ),
            "access": acc,
        }

    def workloads_context(request: Request, acc: Access) -> dict[str, Any]:
        q = request.query_params
        page = views.workloads_page(
            store,
            acc.workloads,
            local_queue_namespaces=acc.local_queues,
            namespace=q.get("namespace", ""),
            queue=q.get("queue", ""),
            state=q.get("state", ""),
            estimates=estimates.current,
            now=settings.clock(),
        )
        return {
            "page": page,
            "access": acc,
            "states": list(views.State),
            "filters": {"namespace": q.get("namespace", ""), "queue": q.get("queue", ""), "state": q.get("state", "")},
            "query": urllib.parse.urlencode({k: v for k, v in q.items() if k in ("namespace", "queue", "state")}),
        }

    def history_context(acc: Access) -> dict[str, Any]:
        names = sorted(history.series) if acc.cluster_queues else []
        return {
            "charts": [(n, *history.charts(n)) for n in names],
            "accuracy": {n: estimates.accuracy(n) for n in names},
            "access": acc,
        }

    async def usage_context(request: Request, acc: Access) -> dict[str, Any]:
        """The usage page (`usage`): only for those who may list the UsageRecords (every team's usage)."""
        allowed = await run_in_threadpool(
            authorizer.allowed, acc.user, "list", schema_usage.PLURAL, group=schema_usage.GROUP
        )
        q = request.query_params
        hours = q.get("hours", "")
        view = usage.usage_view(
            store.objects(Kind.USAGE_RECORDS).values() if allowed else (),
            by=q.get("by", "namespace"),
            resource=q.get("resource", ""),
            hours=int(hours) if hours.isdigit() else 24,
            now=int(settings.clock().timestamp()),
        )
        return {
            "view": view,
            "allowed": allowed,
            "access": acc,
            "by_options": list(usage.BY),
            "query": urllib.parse.urlencode({k: v for k, v in q.items() if k in ("by", "resource", "hours")}),
        }

    async def sync_context(ctx: dict[str, Any]) -> dict[str, Any]:
        return ctx

    pages: dict[str, tuple[str, Callable[[Request, Access], Awaitable[dict[str, Any]]]]] = {
        "overview": ("overview.html", lambda r, a: sync_context(overview_context(a))),
        "workloads": ("workloads.html", lambda r, a: sync_context(workloads_context(r, a))),
        "history": ("history.html", lambda r, a: sync_context(history_context(a))),
        "usage": ("usage.html", usage_context),
    }

    def page_route(name: str, *, fragment: bool) -> Callable[[Request], Any]:
        template, context = pages[name]

        async def endpoint(request: Request) -> Response:
            acc = await access(request)
            if not isinstance(acc, Access):
                return acc
            try:
                ctx = await context(request, acc)
            except RateLimited as exc:
                return _too_many(exc)
            except k.KubeError as exc:
                log.error("dashboard: review failed", extra={"error": str(exc)})
                return PlainTextResponse("Authorization failed", 500)
            if fragment:
                return render(request, template, fragment=True, **ctx)
            return render(
                request,
                "page.html",
                fragment=False,
                content=template,
                current=name,
                user=acc.user.name,
                fragment_url=f"fragment/{name}" + (f"?{ctx['query']}" if ctx.get("query") else ""),
                **ctx,
            )

        return endpoint

    async def workload(request: Request) -> Response:
        acc = await access(request)
        if not isinstance(acc, Access):
            return acc
        ns, name = request.path_params["namespace"], request.path_params["name"]
        user = acc.user
        try:
            may_get = await run_in_threadpool(authorizer.allowed, user, "get", "workloads", namespace=ns)
        except RateLimited as exc:
            return _too_many(exc)
        if not may_get:
            return render(request, "denied.html", 403, what=f"Workload {ns}/{name}", user=user.name)
        entry = store.workloads().get(f"{ns}/{name}")
        if entry is None:
            return render(request, "denied.html", 404, what=f"Workload {ns}/{name} (not found)", user=user.name)
        events, pods = await run_in_threadpool(_related, settings.kube, authorizer, user, entry.raw)
        pos = views.positions(
            store.workloads().values(),
            {
                key: str((o.get("spec") or {}).get("clusterQueue", ""))
                for key, o in store.objects(Kind.LOCAL_QUEUES).items()
            },
        ).get(entry.info.key)
        return render(
            request,
            "page.html",
            fragment=False,
            content="workload.html",
            current="workload",
            user=user.name,
            fragment_url="",
            wl=entry.info,
            raw=entry.raw,
            state=views.state_of(entry.info),
            position=pos,
            conditions=(entry.raw.get("status") or {}).get("conditions") or [],
            placement=views.placement(entry.raw),
            multikueue=views.multikueue_placement(entry.raw),
            checks=(entry.raw.get("status") or {}).get("admissionChecks") or [],
            events=events,
            pods=pods,
            not_shared=f"Namespace {ns} does not share its Pods and Events with the dashboard (bind ClusterRole "
            f"{_DETAILS_ROLE} to the dashboard's ServiceAccount in it).",
            yaml=yaml.safe_dump(dict(entry.raw), sort_keys=False),
        )

    def view_version(acc: Access) -> tuple[int, ...]:
        """Changes only when something `acc` may see changes."""
        return (
            store.version_of(Kind.CLUSTER_QUEUES) if acc.cluster_queues else 0,
            store.version_of(Kind.RESOURCE_FLAVORS) if acc.resource_flavors else 0,
            store.version_of(Kind.COHORTS) if acc.cohorts else 0,
            store.version_of(Kind.WORKLOADS, acc.workloads),
            store.version_of(Kind.LOCAL_QUEUES, acc.local_queues),
        )

    async def events(request: Request) -> Response:
        acc = await access(request)
        if not isinstance(acc, Access):
            return acc
        loop = asyncio.get_running_loop()
        changes.bind(loop)

        async def stream() -> AsyncIterator[bytes]:
            current, seen = acc, view_version(acc)
            yield b"retry: 2000\ndata: changed\n\n"  # what changed between the page's render and now
            last = loop.time()
            reauthorize_at = last + settings.reauthorize_every_s
            while True:
                if await changes.wait(max(0.0, min(last + HEARTBEAT_S, reauthorize_at) - loop.time())):
                    await asyncio.sleep(DEBOUNCE_S)  # a burst of watch events becomes one refresh
                now = loop.time()
                if now >= reauthorize_at:
                    again = await access(request)
                    if not isinstance(again, Access):
                        log.info(
                            "dashboard: live stream ended, no longer authorized", extra={"user": current.user.name}
                        )
                        return
                    current, reauthorize_at = again, now + settings.reauthorize_every_s
                version = view_version(current)
                if version != seen:
                    seen, last = version, now
                    yield b"data: changed\n\n"
                elif now - last >= HEARTBEAT_S:
                    last = now
                    yield b": ping\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        )

    async def login(request: Request) -> Response:
        if request.method == "GET":
            return render(
                request, "login.html", failed="failed" in request.query_params, audiences=authorizer.audiences
            )
        refused = _cross_site(request)
        if refused is not None:
            return refused
        body = await _bounded_body(request, MAX_LOGIN_BODY)
        if body is None:
            return PlainTextResponse("Request body too large", 413)
        form = urllib.parse.parse_qs(body.decode(errors="replace"))
        token = (form.get("token") or [""])[0].strip()
        try:
            user = await run_in_threadpool(authorizer.authenticate, token) if token else None
        except k.KubeError:
            user = None
        base = request.scope.get("root_path", "")
        if user is None:
            return RedirectResponse(f"{base}/login?failed=1", 303)
        log.info("dashboard: signed in", extra={"user": user.name})
        resp = RedirectResponse(f"{base}/", 303)
        resp.set_cookie(
            COOKIE,
            token,
            max_age=SESSION_MAX_AGE_S,
            httponly=True,
            samesite="strict",
            secure=settings.secure_cookies,
            path=base or "/",
        )
        return resp

    async def logout(request: Request) -> Response:
        refused = _cross_site(request)
        if refused is not None:
            return refused
        base = request.scope.get("root_path", "")
        resp = RedirectResponse(f"{base}/login", 303)
        resp.delete_cookie(COOKIE, path=base or "/")
        return resp

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok" if store.synced() else "syncing", 200 if store.synced() else 503)

    async def sample_forever() -> None:
        while True:
            ov = views.overview(store, cluster_queues=True, flavors=False, cohorts=False)
            history.sample(ov.cluster_queues, (e.info for e in store.workloads().values()), settings.clock())
            try:
                await run_in_threadpool(estimates.sample, store, settings.clock())
            except Exception:  # a bad object must not end the history's sampling
                log.exception("dashboard: estimating failed")
            await asyncio.sleep(settings.sample_every_s)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        changes.bind(asyncio.get_running_loop())
        task = asyncio.create_task(sample_forever())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    routes = [
        Route("/", page_route("overview", fragment=False)),
        Route("/workloads", page_route("workloads", fragment=False)),
        Route("/history", page_route("history", fragment=False)),
        Route("/usage", page_route("usage", fragment=False)),
        *[Route(f"/fragment/{name}", page_route(name, fragment=True)) for name in pages],
        Route("/workloads/{namespace}/{name}", workload),
        Route("/events", events),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _related(
    kube: KubeReader | None, authorizer: Authorizer, user: Any, wl: Mapping[str, Any]
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """The Workload's Events and Pods, each only if `user` may list them in its namespace; None for
    one the dashboard itself may not read there (its namespace has not bound `kueue-dashboard-details-role`)."""
    if kube is None:
        return [], []
    meta = wl["metadata"]
    ns, name = meta["namespace"], meta["name"]
    events: list[dict[str, Any]] | None = []
    pods: list[dict[str, Any]] | None = []
    try:
        if authorizer.allowed(user, "list", "events", namespace=ns, group=""):
            events = _list_shared(
                kube,
                k.object_path("v1", "events", ns),
                query={"fieldSelector": f"involvedObject.kind=Workload,involvedObject.name={name}"},
            )
            if events is not None:
                events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        query = _pod_query(wl)
        if query and authorizer.allowed(user, "list", "pods", namespace=ns, group=""):
            pods = _list_shared(kube, k.object_path("v1", "pods", ns), query=query)
    except (k.KubeError, RateLimited) as exc:
        log.warning("dashboard: reading events or pods failed", extra={"object": f"{ns}/{name}", "error": str(exc)})
    return events, pods


def _list_shared(kube: KubeReader, path: str, *, query: Mapping[str, str]) -> list[dict[str, Any]] | None:
    """The list, or None when the dashboard's own account is refused it (403): not shared with it."""
    try:
        items, _ = kube.list(path, query=query)
    except k.KubeError as exc:
        if exc.status == 403:
            return None
        raise
    return items


def _cross_site(request: Request) -> Response | None:
    """403 for a post another site made the browser send (login CSRF: signing the victim in as the
    attacker). `Sec-Fetch-Site` decides when the browser sends it (it survives a proxy rewriting
    `Host`); else a present `Origin` must be this host. Clients sending neither are not browsers,
    which carry no ambient cookie to abuse."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        ok = site in _SAME_ORIGIN
    else:
        origin = request.headers.get("origin")
        ok = origin is None or urllib.parse.urlsplit(origin).netloc == request.headers.get("host", "")
    if ok:
        return None
    log.warning("dashboard: cross-site post refused", extra={"path": request.url.path})
    return PlainTextResponse("Cross-site request refused", 403)


async def _bounded_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None once it is longer than `limit` (read no further)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _too_many(exc: RateLimited) -> Response:
    return PlainTextResponse(str(exc), 429, headers={"Retry-After": str(math.ceil(exc.retry_after))})


def _pod_query(wl: Mapping[str, Any]) -> dict[str, str]:
    """How to list the Workload's Pods: by its Job's label, its pod group's label, or its one Pod's name."""
    for ref in wl["metadata"].get("ownerReferences") or ():
        if ref.get("kind") == "Job":
            return {"labelSelector": f"batch.kubernetes.io/job-name={ref.get('name')}"}
        if ref.get("kind") == "Pod":
            group = (wl["metadata"].get("labels") or {}).get(constants.POD_GROUP_NAME)
            if group:
                return {"labelSelector": f"{constants.POD_GROUP_NAME}={group}"}
            return {"fieldSelector": f"metadata.name={ref.get('name')}"}
    return {}
