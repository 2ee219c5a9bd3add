"""The only module that imports the `kubernetes` client: raw JSON requests, lists and watches.

The client's kubeconfig and in-cluster loaders read the credentials; requests go out on our own
HTTP/1.1 connections (`webhook.transport`) and responses are parsed by orjson into plain dicts:
the client's generated models and its urllib3 stack are never used on the request path (they cost
several times the CPU per request). Errors become our own types:

    KubeError
    ├── NotFound        404
    ├── Conflict        409
    ├── Gone            410 (a watch's resourceVersion is too old: relist)
    ├── Unprocessable   422
    ├── TooManyRequests 429
    └── ServerError     5xx, and connection failures
"""

from __future__ import annotations

import base64
import copy
import logging
import shutil
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import orjson
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.rest import should_bypass_proxies

from webhook import transport
from webhook.api import kubeconfig
from webhook.api.quantity_fields import SCHEMA_ONLY, first_invalid

__all__ = [
    "USER_AGENT",
    "Conflict",
    "Gone",
    "Kube",
    "KubeError",
    "NotFound",
    "NotLeader",
    "ServerError",
    "SharedInformers",
    "TooManyRequests",
    "Unprocessable",
    "informer",
    "object_path",
    "strip_managed_fields",
]

log = logging.getLogger(__name__)


class KubeError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class NotFound(KubeError): ...


class Conflict(KubeError): ...


class Gone(KubeError): ...


class Unprocessable(KubeError): ...


class TooManyRequests(KubeError): ...


class ServerError(KubeError): ...


class NotLeader(KubeError):
    """A write refused before it was sent: the process does not hold the leader lease (`Kube.fenced`)."""


_BY_STATUS: Mapping[int, type[KubeError]] = {
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Unprocessable,
    429: TooManyRequests,
}


def _error(method: str, path: str, status: int, reason: str, body: bytes) -> KubeError:
    """The API server's `Status` message when the body is one, else the reason phrase."""
    message = reason
    if body:
        try:
            message = orjson.loads(body).get("message", message)
        except (orjson.JSONDecodeError, AttributeError):
            message = body[:300].decode(errors="replace")  # foreign bodies are cut short before they reach logs
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else KubeError)
    return cls(status, message or f"{method} {path}: HTTP {status}")


def object_path(api_version: str, kind_plural: str, namespace: str | None, name: str | None = None) -> str:
    """REST path of a collection or object: /api/v1/... for the core group, /apis/<group>/<version>/... otherwise."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    if namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{kind_plural}"
    return f"{base}/{name}" if name else base


def _resource(path: str) -> str:
    """The API group/version/resource a REST path addresses, e.g. `kueue.x-k8s.io/v1beta2/workloads`
    for a Workload's status, `v1/namespaces` for a Namespace, `v1/events` for Events in one."""
    parts = path.strip("/").split("/")
    gv, rest = (parts[1:2], parts[2:]) if parts[0] == "api" else (parts[1:3], parts[3:])
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    return "/".join([*gv, rest[0] if rest else ""])


def _endpoint(cfg: Any) -> transport.Endpoint:
    """Where the loaded configuration points, with its TLS settings and, unless `no_proxy` exempts
    the server, its proxy (from the kubeconfig's `proxy-url` or the environment)."""
    url = urllib.parse.urlsplit(cfg.host)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise KubeError(0, f"invalid configuration: server {cfg.host!r} is not an http(s) URL")
    tls = None
    if url.scheme == "https":
        tls = ssl.create_default_context(cafile=cfg.ssl_ca_cert, cadata=cfg.ca_cert_data)
        if cfg.cert_file:
            tls.load_cert_chain(cfg.cert_file, cfg.key_file)
        if not cfg.verify_ssl:  # insecure-skip-tls-verify
            tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
        elif cfg.assert_hostname is False:
            tls.check_hostname = False
    named = cfg.assert_hostname if isinstance(cfg.assert_hostname, str) else None
    proxy, proxy_headers = None, dict(cfg.proxy_headers or {})
    if cfg.proxy and not should_bypass_proxies(cfg.host, cfg.no_proxy or ""):
        purl = urllib.parse.urlsplit(cfg.proxy)
        if purl.scheme != "http" or not purl.hostname:
            raise KubeError(0, f"invalid configuration: proxy {cfg.proxy!r}: only http:// proxies are supported")
        proxy = (purl.hostname, purl.port or 80)
        if purl.username:
            user = f"{urllib.parse.unquote(purl.username)}:{urllib.parse.unquote(purl.password or '')}"
            proxy_headers["Proxy-Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()
    return transport.Endpoint(
        host=url.hostname,
        port=url.port or (443 if tls else 80),
        base_path=url.path.rstrip("/"),
        tls=tls,
        server_name=cfg.tls_server_name or named,
        proxy=proxy,
        proxy_headers=proxy_headers,
    )


#: Sent with every request (the API server's audit log and `kubectl get --raw /metrics` name clients by it).
USER_AGENT = "pykueue"

#: How long request headers built from the loaded credentials are reused (`Kube._auth_headers`).
AUTH_REFRESH_S = 10.0


class Kube:
    """A thin JSON client of the API server (thread-safe; connections are pooled by the transport)."""

    def __init__(
        self, kubeconfig: str | None = None, *, qps: float = 0.0, burst: int = 0, user_agent: str = USER_AGENT
    ) -> None:
        """`user_agent`: what audit logs show as the caller (the worker adds its leader identity)."""
        cfg = k8s_client.Configuration()
        if kubeconfig:
            k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        self._setup(cfg, qps, burst, user_agent)

    @classmethod
    def for_context(cls, kubeconfig: str | None = None, context: str | None = None) -> tuple[Kube, str]:
        """A client for a kubeconfig context picked as kubectl picks it (`kubeconfig`, else the files in
        $KUBECONFIG, else ~/.kube/config; `context`, else the current one), and that context's namespace
        ("default" when it names none). Raises KubeError when the kubeconfig cannot be used."""
        cfg = k8s_client.Configuration()
        try:
            k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,  # type: ignore[no-untyped-call]
                client_configuration=cfg,
            )
            contexts, current = k8s_config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        except (k8s_config.ConfigException, OSError, ValueError) as exc:
            raise KubeError(0, f"invalid configuration: {exc}") from exc
        chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
        namespace = ((chosen or {}).get("context") or {}).get("namespace") or "default"
        kube = cls.__new__(cls)
        kube._setup(cfg, 0.0, 0)
        return kube, namespace

    @classmethod
    def from_kubeconfig(
        cls,
        doc: Mapping[str, Any],
        *,
        qps: float = 5.0,
        burst: int = 10,
        user_agent: str = USER_AGENT,
        temp_dir: str | None = None,
    ) -> Kube:
        """A client for an in-memory kubeconfig that the Secret of a MultiKueueCluster may hold.

        The document is judged first (`webhook.api.kubeconfig.validate_kubeconfig`) and only its
        current context is loaded, with the user only for an https server, so the client library's
        loader never sees a token file, a CA path, an exec plugin or an auth provider. The loader
        writes inline certificate data to files: here into a fresh 0700 directory under `temp_dir`,
        removed once the TLS context holds them. `qps`/`burst` default to client-go's `rest.DefaultQPS`
        and `DefaultBurst`, which upstream's remote clients keep. Raises KubeError (status 0) with
        the reason the document cannot be used.
        """
        problem = kubeconfig.validate_kubeconfig(doc)
        if problem is not None:
            raise KubeError(0, problem)
        try:
            loadable = kubeconfig.loadable_document(doc)
        except ValueError as exc:
            raise KubeError(0, str(exc)) from exc
        cfg = k8s_client.Configuration()
        private = tempfile.mkdtemp(prefix="kubeconfig-", dir=temp_dir)  # mode 0700
        try:
            k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                config_dict=loadable, client_configuration=cfg, persist_config=False, temp_file_path=private
            )
            kube = cls.__new__(cls)
            kube._setup(cfg, qps, burst, user_agent)
        except (k8s_config.ConfigException, OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise KubeError(0, f"invalid configuration: {exc}") from exc
        finally:
            shutil.rmtree(private, ignore_errors=True)
        return kube

    def _setup(self, cfg: Any, qps: float, burst: int, user_agent: str = USER_AGENT) -> None:
        self.host: str = cfg.host
        self._user_agent = user_agent
        self._cfg = cfg
        self._transport = transport.Transport(_endpoint(cfg))
        self._lock = threading.Lock()
        self._qps = qps
        self._burst = float(burst or 1)
        self._buckets: dict[str, list[float]] = {}  # resource → [tokens, last refill]
        self._auth: tuple[float, dict[str, str]] = (float("-inf"), {})
        self._fence: Callable[[], bool] | None = None

    def fenced(self, holds_lease: Callable[[], bool]) -> Kube:
        """This client (same connections and rate limits) refusing every write while `holds_lease()`
        is False, asked right before each request, retries included.

        A leader paused past its renew deadline may have been replaced; whatever its threads still
        hold (a status write, a Job to unsuspend, a pod to ungate, a retry) must not reach the API
        server until a renewal proves it still leads. Reads are never fenced.
        """
        clone = copy.copy(self)
        clone._fence = holds_lease
        return clone

    def _check_fence(self, method: str, path: str) -> None:
        if method != "GET" and self._fence is not None and not self._fence():
            raise NotLeader(0, f"{method} {path}: not sent, the leader lease is not held")

    def _auth_headers(self) -> dict[str, str]:
        """Our User-Agent and the loaded credentials' bearer token, re-read every AUTH_REFRESH_S.

        Reading them runs the loader's refresh hook: the in-cluster loader re-reads a rotated token
        file, the kubeconfig loader rebuilds its configuration, ~0.3 ms per request, and pick the
        token up within seconds of its renewal either way (both renew well before expiry)."""
        read_at, headers = self._auth
        now = time.monotonic()
        if now - read_at < AUTH_REFRESH_S:
            return headers
        headers = {"User-Agent": self._user_agent}
        for setting in self._cfg.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        self._auth = (now, headers)
        return headers

    def _throttle(self, path: str) -> None:
        """clientConnection qps/burst as one token bucket per API resource.

        controller-runtime builds one REST client, hence one client-go token bucket, per
        GroupVersionKind (`apiutil.RESTClientForGVK`), and the event recorder has its own client:
        Kueue's budget applies to Workload writes, ClusterQueue writes and Events separately, not
        to their sum.
        """
        if self._qps <= 0:
            return
        resource = _resource(path)
        with self._lock:
            now = time.monotonic()
            bucket = self._buckets.setdefault(resource, [self._burst, now])
            tokens = min(self._burst, bucket[0] + (now - bucket[1]) * self._qps)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / self._qps
            bucket[0], bucket[1] = tokens - 1, now
        if wait:
            time.sleep(wait)

    def _headers(self, content_type: str, accept: str) -> dict[str, str]:
        return {**self._auth_headers(), "Accept": accept, "Content-Type": content_type}

    @staticmethod
    def _target(path: str, query: Mapping[str, Any] | None) -> str:
        return f"{path}?{urllib.parse.urlencode(query, quote_via=urllib.parse.quote)}" if query else path

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]:
        """One call; `accept` asks for another representation (e.g. a server-side Table)."""
        self._check_fence(method, path)
        self._throttle(path)
        self._check_fence(method, path)  # the rate limiter may have held it past the renew deadline
        target = self._target(path, query)
        data = None if body is None else orjson.dumps(body)
        try:
            resp = self._transport.request(method, target, self._headers(content_type, accept), data, timeout)
        except OSError as exc:  # refused, reset, timed out, TLS failure, cut mid-body
            raise ServerError(0, f"{method} {path}: {exc}") from exc
        if not 200 <= resp.status < 300:
            raise _error(method, path, resp.status, resp.reason, resp.body)
        return orjson.loads(resp.body) if resp.body else {}

    def patch(self, path: str, body: Any, *, json_patch: bool = False, timeout: float = 30) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386), or a JSON patch (RFC 6902) with `json_patch`.

        Put `metadata.resourceVersion` in a merge patch (or a `test` op in a JSON patch) to make
        it conditional: a stale version then fails with Conflict.
        """
        ctype = "application/json-patch+json" if json_patch else "application/merge-patch+json"
        return self.request("PATCH", path, body=body, content_type=ctype, timeout=timeout)

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        return self.request("POST", path, body=dict(body), timeout=timeout)

    def replace(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        """PUT: an update guarded by the body's `metadata.resourceVersion` (Conflict when stale)."""
        return self.request("PUT", path, body=dict(body), timeout=timeout)

    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None:
        try:
            return self.request("GET", path, timeout=timeout)
        except NotFound:
            return None

    def list(self, path: str, *, query: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
        """All items of a collection (following `continue`) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 500, **(query or {})}
        while True:
            doc = self.request("GET", path, query=params, timeout=60)
            items.extend(doc.get("items") or [])
            meta = doc.get("metadata") or {}
            if not meta.get("continue"):
                return items, meta.get("resourceVersion", "")
            params["continue"] = meta["continue"]

    def delete(self, path: str, *, body: Mapping[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        """DELETE, with DeleteOptions (e.g. `preconditions`) when given."""
        return self.request("DELETE", path, body=dict(body) if body is not None else None, timeout=timeout)

    def watch(
        self, path: str, resource_version: str, *, timeout_seconds: int = 300, query: Mapping[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Watch events (dicts with `type` and `object`) from `resource_version`, bookmarks included."""
        query = {
            **(query or {}),
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        self._throttle(path)
        target = self._target(path, query)
        try:
            resp = self._transport.stream(
                "GET",
                target,
                self._headers("application/json", "application/json"),
                connect_timeout=10,
                read_timeout=timeout_seconds + 30,
            )
        except OSError as exc:
            raise ServerError(0, f"watch {path}: {exc}") from exc
        try:
            if not 200 <= resp.status < 300:
                raise _error("GET", path, resp.status, resp.reason, resp.read())
            buffer = b""
            for chunk in resp.chunks():  # the API server flushes one event per chunk
                *lines, buffer = (buffer + chunk if buffer else chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        event = orjson.loads(line)
                        if event.get("type") == "ERROR":
                            status = event.get("object") or {}
                            code = int(status.get("code") or 500)
                            raise _BY_STATUS.get(code, ServerError)(code, status.get("message", "watch error"))
                        yield event
        except OSError as exc:
            # The API server went away mid-stream (restart, proxy reset): a retryable failure for
            # the informer, like a refused connection, not the end of its thread.
            raise ServerError(0, f"watch {path}: {exc}") from exc
        finally:
            resp.close()

    def close(self) -> None:
        """Close the idle connections (a test's sockets must not outlive it)."""
        self._transport.close()


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop `metadata.managedFields` from a cached copy, as controller-runtime's cache transform does
    for upstream: nothing reads them, they are often the bulk of an object, and an update without
    them leaves the server's copy unchanged."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


InvalidHandler = Callable[[dict[str, Any], str, str], None]


class _Screen:
    """Sets aside the objects of a watched resource that Go could not decode.

    Upstream's informers decode into Go types, so one stored object with a quantity Go refuses
    (the CRD's pattern admits `1e1.5`) fails the whole list and its cache never syncs. Here such an
    object is absent to every handler: left out of lists, and an ADDED or MODIFIED copy of it is
    handed on as DELETED (metadata only, nothing to parse), so an earlier valid copy is forgotten.
    Each version of it is logged once, naming it, and passed to `on_invalid`; `set_aside` holds
    the ones set aside now, so a handler that comes later (a new leader) hears of them too.
    """

    def __init__(self, path: str, on_invalid: InvalidHandler | None) -> None:
        resource = path.rstrip("/").rsplit("/", 1)[-1]
        # Built-in kinds reach us decoded by the API server: screening them (Pods are the busiest
        # watch) would only cost time.
        self.resource = resource if resource in SCHEMA_ONLY else ""
        self.on_invalid = on_invalid
        # key → (object, field, error) of each object set aside now, as last reported.
        self.set_aside: dict[tuple[str, str], tuple[dict[str, Any], str, str]] = {}

    def items(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        before, self.set_aside = self.set_aside, {}
        return [item for item in items if not self._invalid(item, before)]

    def event(self, etype: str, obj: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if etype == "DELETED":
            self.set_aside.pop(_Shared.key(obj), None)
            return etype, obj if first_invalid(self.resource, obj) is None else _metadata_only(obj)
        if self._invalid(obj, self.set_aside):
            return "DELETED", _metadata_only(obj)
        self.set_aside.pop(_Shared.key(obj), None)
        return etype, obj

    def _invalid(
        self, obj: dict[str, Any], reported: Mapping[tuple[str, str], tuple[dict[str, Any], str, str]]
    ) -> bool:
        """Whether `obj` is set aside; a version not in `reported` is logged and reported."""
        bad = first_invalid(self.resource, obj)
        if bad is None:
            return False
        key = _Shared.key(obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        last = reported.get(key)
        if last is not None and (last[0].get("metadata") or {}).get("resourceVersion") == version:
            self.set_aside[key] = last
            return True
        self.set_aside[key] = (obj, *bad)
        log.warning(
            "object set aside: a quantity cannot be decoded",
            extra={"object": "/".join(filter(None, key)), "resource": self.resource, "field": bad[0], "error": bad[1]},
        )
        if self.on_invalid is not None:
            self.on_invalid(obj, *bad)
        return True


def _metadata_only(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {name: obj[name] for name in ("apiVersion", "kind", "metadata") if name in obj}


def informer(
    kube: Kube,
    path: str,
    on_list: Callable[[list[dict[str, Any]]], None],
    on_event: Callable[[str, dict[str, Any]], None],
    *,
    stop: threading.Event,
    on_synced: Callable[[], None] = lambda: None,
    query: Mapping[str, Any] | None = None,
    on_invalid: InvalidHandler | None = None,
    absent_is_empty: bool = False,
    on_error: Callable[[KubeError], None] | None = None,
) -> None:
    """List then watch `path` until `stop`; relist on 410 Gone, back off on errors. Runs in its own thread.

    `query` (e.g. a `labelSelector`) narrows both the list and the watch. Objects Go could not
    decode never reach the handlers (`_Screen`); `on_invalid(obj, field, error)` hears of each.
    With `absent_is_empty`, a path the API server does not serve (404: an operator's CRD not
    installed) or does not let us read (403: an optional feature's RBAC not applied) is listed as
    empty and synced, and tried again until it is served. `on_error`
    hears of every failed list or watch before the backoff; setting `stop` in it ends the loop
    (a MultiKueue worker's watch reports its connection lost instead of retrying on its own).
    """
    _follow(
        kube,
        path,
        _Screen(path, on_invalid),
        on_list,
        on_event,
        stop=stop,
        on_synced=on_synced,
        query=query,
        absent_is_empty=absent_is_empty,
        on_error=on_error,
    )


def _follow(
    kube: Kube,
    path: str,
    screen: _Screen,
    on_list: Callable[[list[dict[str, Any]]], None],
    on_event: Callable[[str, dict[str, Any]], None],
    *,
    stop: threading.Event,
    on_synced: Callable[[], None],
    query: Mapping[str, Any] | None,
    absent_is_empty: bool = False,
    on_error: Callable[[KubeError], None] | None = None,
    on_served: Callable[[bool], None] = lambda _served: None,
) -> None:
    backoff = 0.5
    absent = False  # the empty list of an unserved path has been delivered
    while not stop.is_set():
        try:
            items, rv = kube.list(path, query=query)
            absent = False
            on_list(screen.items([strip_managed_fields(item) for item in items]))
            on_synced()
            on_served(True)  # after the list: whoever asks sees the objects in the caches
            backoff = 0.5
            while not stop.is_set():
                for event in kube.watch(path, rv, query=query):
                    rv = (event.get("object") or {}).get("metadata", {}).get("resourceVersion", rv)
                    if event["type"] != "BOOKMARK":
                        on_event(*screen.event(event["type"], strip_managed_fields(event["object"])))
                    if stop.is_set():
                        return
        except Gone:
            log.info("watch expired, relisting", extra={"path": path})
        except KubeError as exc:
            if absent_is_empty and (isinstance(exc, NotFound) or exc.status == 403):
                if not absent:
                    if exc.status == 403:
                        log.warning("not permitted to list: no objects until it is", extra={"path": path})
                    else:
                        log.info("API not served: no objects until it is", extra={"path": path})
                    on_served(False)
                    on_list([])
                    on_synced()
                    absent = True
            else:
                log.warning("list/watch failed", extra={"path": path, "status": exc.status, "error": str(exc)})
                if on_error is not None:
                    on_error(exc)
            stop.wait(backoff)
            backoff = min(backoff * 2, 30.0)
        except Exception:
            # A bug in a handler or an unforeseen transport error must not end the thread silently:
            # the cache would go stale for good. Log it and start over with a fresh list.
            log.exception("informer failed; relisting", extra={"path": path})
            stop.wait(backoff)
            backoff = min(backoff * 2, 30.0)


ListHandler = Callable[[list[dict[str, Any]]], None]
EventHandler = Callable[[str, dict[str, Any]], None]


class _Subscriber(NamedTuple):
    on_list: ListHandler
    on_event: EventHandler
    on_synced: Callable[[], None]
    on_invalid: InvalidHandler | None


class _Shared:
    """One list and watch of a path, delivered to every subscriber in order, with the last list's
    objects kept so a late subscriber starts from them (client-go's shared informer replays its
    store to a handler added after the sync).

    Each subscriber is called in its own try: one that fails on an object is logged, naming the
    object, and the others still get it (before, the Manager, subscribed after the visibility
    feed, never saw a list the feed had failed on).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.screen = _Screen(path, self.on_invalid)
        self.lock = threading.Lock()
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.synced = False
        self.served = False  # listed from the API server, not an unserved path counted as empty
        self.subscribers: list[_Subscriber] = []

    @staticmethod
    def key(obj: Mapping[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return meta.get("namespace") or "", meta.get("name") or ""

    def _call(self, what: str, subject: str, handler: Callable[..., None], *args: Any) -> None:
        try:
            handler(*args)
        except Exception:
            log.exception("informer handler failed", extra={"path": self.path, "handler": what, "object": subject})

    def on_list(self, items: list[dict[str, Any]]) -> None:
        with self.lock:
            self.objects = {self.key(item): item for item in items}
            for sub in self.subscribers:
                self._call("list", f"{len(items)} objects", sub.on_list, items)

    def on_event(self, etype: str, obj: dict[str, Any]) -> None:
        with self.lock:
            key = self.key(obj)
            if etype == "DELETED":
                self.objects.pop(key, None)
            else:
                self.objects[key] = obj
            for sub in self.subscribers:
                self._call(etype, "/".join(filter(None, key)), sub.on_event, etype, obj)

    def on_served(self, served: bool) -> None:
        self.served = served

    def on_synced(self) -> None:
        with self.lock:
            self.synced = True
            for sub in self.subscribers:
                self._call("synced", "", sub.on_synced)

    def on_invalid(self, obj: dict[str, Any], field: str, error: str) -> None:
        with self.lock:
            for sub in self.subscribers:
                if sub.on_invalid is not None:
                    self._call("invalid", "/".join(filter(None, self.key(obj))), sub.on_invalid, obj, field, error)

    def add(self, sub: _Subscriber) -> None:
        with self.lock:
            self.subscribers.append(sub)
            if self.synced:
                sub.on_list(list(self.objects.values()))
                if sub.on_invalid is not None:
                    for obj, field, error in list(self.screen.set_aside.values()):
                        sub.on_invalid(obj, field, error)
                sub.on_synced()


class SharedInformers:
    """The process's informers, one per (path, query), each started by its first subscriber.

    The leader's admission worker and the visibility server both follow Workloads, LocalQueues,
    ClusterQueues and Cohorts; reading each stream once halves the decoding of the busiest watch.
    Handlers run on the informer's thread and must not mutate the objects they are given.
    """

    def __init__(self, kube: Kube, stop: threading.Event) -> None:
        self.kube = kube
        self.stop = stop
        self._lock = threading.Lock()
        self._shared: dict[tuple[str, tuple[tuple[str, Any], ...]], _Shared] = {}

    @staticmethod
    def _key(path: str, query: Mapping[str, Any] | None) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """One stream per path and query."""
        return path, tuple(sorted((query or {}).items()))

    def subscribe(
        self,
        path: str,
        on_list: ListHandler,
        on_event: EventHandler,
        *,
        on_synced: Callable[[], None] = lambda: None,
        query: Mapping[str, Any] | None = None,
        on_invalid: InvalidHandler | None = None,
        absent_is_empty: bool = False,
    ) -> None:
        """`on_list` with the current objects (at once when already listed, and again on every relist),
        then `on_event` for each change; `on_invalid` for each object set aside; `absent_is_empty`
        as `informer` has it (the first subscriber of a stream decides)."""
        key = self._key(path, query)
        with self._lock:
            shared = self._shared.get(key)
            start = shared is None
            if shared is None:
                shared = self._shared[key] = _Shared(path)
        shared.add(_Subscriber(on_list, on_event, on_synced, on_invalid))
        if start:
            threading.Thread(
                target=_follow,
                args=(self.kube, path, shared.screen, shared.on_list, shared.on_event),
                kwargs={
                    "stop": self.stop,
                    "on_synced": shared.on_synced,
                    "query": query,
                    "absent_is_empty": absent_is_empty,
                    "on_served": shared.on_served,
                },
                name=f"informer-{path.rsplit('/', 1)[-1]}",
                daemon=True,
            ).start()

    def served(self, path: str, query: Mapping[str, Any] | None = None) -> bool:
        """Whether the stream's last list came from the API server: an optional path (`absent_is_empty`)
        that is not served yet lists as empty, which must not be read as "there are none"."""
        shared = self._shared.get(self._key(path, query))
        return shared is not None and shared.served
