"""The visibility API's request handling: route, authorize, answer; no sockets, no threads.

Our counterpart of what upstream's generic API server does for `visibility.kueue.x-k8s.io`
(`pkg/visibility/server.go`, `pkg/visibility/storage/pending_workloads_{cq,lq}.go`, kueue v0.19.2):

1. `/healthz`, `/livez`, `/readyz` answer without authentication (probes have no front-proxy cert);
2. anything else needs the user the front proxy named (else 401);
3. a resource request (`/apis/<group>/<version>/[namespaces/<ns>/]<resource>/<name>/<subresource>`)
   is authorized with its resource attributes, anything else as a non-resource path (403 when not
   allowed), and only then routed, so a refused caller learns nothing about what exists;
4. `pendingworkloads` pages follow upstream's storage: `limit` 0 or absent means 1000, it is held to
   0..100000, a negative `offset` is 0, a value that is not an integer is 400 in Go's words; a
   ClusterQueue page numbers LocalQueue positions, a LocalQueue page ClusterQueue positions.

Our own group, `visibility.pykueue.io/v1alpha1`, goes through the same steps: a LocalQueue's
`limits` (`core.queue_limits`) and its `pendingworkloads` as upstream's items plus an estimated
admission each (`core.wait_estimate`), paged as upstream's, with the method, what the estimates
started from and how far past ones were off stated in the answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from webhook.core import wait_estimate
from webhook.core.estimate_accuracy import Accuracy
from webhook.core.pending_order import Positioned
from webhook.core.queue_limits import QueueLimits
from webhook.core.resources import format_quantity
from webhook.core.workload import WorkloadKey
from webhook.reviews import User
from webhook.visibility import api as v
from webhook.visibility import openapi
from webhook.visibility.auth import AccessDecision, Attributes

__all__ = [
    "Basis",
    "LocalQueueReader",
    "PendingReader",
    "Request",
    "RequestAuthorizer",
    "Response",
    "VisibilityAPI",
    "estimates",
    "limits",
    "summary",
]

HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1
_JSON = "application/json"


class PendingReader(Protocol):
    """The pending order, read under its owner's lock."""

    def cluster_queue_page(self, name: str, *, offset: int, limit: int) -> list[Positioned] | None: ...

    def local_queue_page(self, key: str, *, offset: int, limit: int) -> list[Positioned] | None: ...


@dataclass(frozen=True, slots=True)
class Basis:
    """What a ClusterQueue's estimates start from: its workloads holding quota, by what tells their
    end (their maximumExecutionTimeSeconds, the observed runs, nothing), and the observed runs."""

    holding: int = 0
    with_limit: int = 0
    from_observed: int = 0
    no_basis: int = 0
    observed_runs: int = 0
    observed_median_s: float | None = None


class EstimatedPage(Protocol):
    """A LocalQueue page, its estimates, and why there are none at all ("" if there may be)."""

    @property
    def items(self) -> list[Positioned]: ...

    @property
    def estimates(self) -> Mapping[WorkloadKey, wait_estimate.Estimate]: ...

    @property
    def basis(self) -> Basis: ...

    @property
    def accuracy(self) -> Accuracy: ...

    @property
    def unknown(self) -> str: ...

    @property
    def now(self) -> datetime: ...


class LocalQueueReader(Protocol):
    """What our own group reads: limits and estimated pages of a LocalQueue `ns/name` (None: not found)."""

    def local_queue_limits(self, key: str) -> QueueLimits | None: ...

    def local_queue_estimates(self, key: str, *, offset: int, limit: int) -> EstimatedPage | None: ...


class RequestAuthorizer(Protocol):
    def authorize(self, user: User, attrs: Attributes) -> AccessDecision: ...


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: Mapping[str, Sequence[str]]
    user: User | None
    accept: str = ""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = _JSON
    headers: tuple[tuple[str, str], ...] = ()


class _BadRequest(Exception):
    pass


def _json(
    status: int, obj: Any, *, pretty: bool = False, content_type: str = _JSON, headers: tuple[tuple[str, str], ...] = ()
) -> Response:
    return Response(status, orjson.dumps(obj, option=orjson.OPT_INDENT_2 if pretty else 0), content_type, headers)


def _status(obj: Mapping[str, Any], pretty: bool = False) -> Response:
    return _json(int(obj["code"]), obj, pretty=pretty)


def _int_param(query: Mapping[str, Sequence[str]], name: str) -> int:
    """The first value as Go's `strconv.ParseInt(s, 10, 64)` reads it; 0 when absent."""
    values = query.get(name) or ()
    if not values:
        return 0
    text = values[0]
    if not _INT.fullmatch(text):
        raise _BadRequest(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise _BadRequest(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _bounded(query: Mapping[str, Sequence[str]]) -> tuple[int, int]:
    """(limit, offset) as upstream's defaulting and `boundedLimitOffset` leave them."""
    limit = _int_param(query, "limit") or v.DEFAULT_LIMIT
    offset = _int_param(query, "offset")
    return min(max(limit, 0), v.MAX_LIMIT), max(offset, 0)


def _item(p: Positioned) -> dict[str, Any]:
    wl = p.workload
    meta: dict[str, Any] = {
        "name": wl.name,
        "namespace": wl.namespace,
        "creationTimestamp": wl.creation_timestamp or None,
    }
    if wl.owner_references:
        meta["ownerReferences"] = [
            {"apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": o.uid} for o in wl.owner_references
        ]
    return {
        "metadata": meta,
        "priority": wl.priority,
        "localQueueName": wl.local_queue,
        "positionInClusterQueue": p.in_cluster_queue,
        "positionInLocalQueue": p.in_local_queue,
    }


def summary(version: str, items: Sequence[Positioned]) -> dict[str, Any]:
    """Upstream's `PendingWorkloadsSummary` in `version`."""
    return {
        "kind": v.SUMMARY_KIND,
        "apiVersion": f"{v.GROUP}/{version}",
        "metadata": {},
        "items": [_item(p) for p in items],
    }


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(value: float | None) -> int | None:
    return None if value is None else round(value)


def estimates(page: EstimatedPage) -> dict[str, Any]:
    """Our `PendingWorkloadsSummary`: upstream's items, each with `estimatedAdmission` (null when
    unknown, `estimatedAdmissionUnknownReason` then says why), and under `estimation` the method,
    what it started from (`basis`) and the error of past estimates (`accuracy`)."""
    b, acc = page.basis, page.accuracy
    estimation: dict[str, Any] = {
        "method": wait_estimate.METHOD,
        "basis": {
            "holdingQuota": b.holding,
            "withMaximumExecutionTime": b.with_limit,
            "fromObservedRuns": b.from_observed,
            "withoutBasis": b.no_basis,
            "observedRuns": b.observed_runs,
            "observedMedianSeconds": _seconds(b.observed_median_s),
        },
        "accuracy": {
            "admissions": acc.admissions,
            "unknownAtFirst": acc.unknown,
            "firstEstimate": {"p50Seconds": _seconds(acc.first_p50), "p90Seconds": _seconds(acc.first_p90)},
            "latestEstimate": {"p50Seconds": _seconds(acc.latest_p50), "p90Seconds": _seconds(acc.latest_p90)},
        },
    }
    if page.unknown:
        estimation["unknownReason"] = page.unknown
    items = []
    for p in page.items:
        e = None if page.unknown else page.estimates.get(p.workload.key)
        item = _item(p)
        if e is None or e.at is None:
            item["estimatedAdmission"] = None
            item["estimatedAdmissionUnknownReason"] = page.unknown or (e.unknown if e else "not estimated yet")
        else:
            wait = max(0, int((e.at - page.now).total_seconds()))
            item["estimatedAdmission"] = {"waitSeconds": wait, "time": _rfc3339(e.at)}
        items.append(item)
    return {
        "kind": v.SUMMARY_KIND,
        "apiVersion": f"{v.PYKUEUE_GROUP}/{v.PYKUEUE_VERSION}",
        "metadata": {},
        "estimation": estimation,
        "items": items,
    }


def limits(namespace: str, name: str, lim: QueueLimits) -> dict[str, Any]:
    """Our `LocalQueueLimits`: per flavor and resource of the ClusterQueue, as quantities. A limit
    that is absent is unlimited."""
    flavors: dict[str, list[dict[str, Any]]] = {}
    for r in lim.resources:
        res = r.flavor.resource
        entry: dict[str, Any] = {"name": res, "nominalQuota": format_quantity(res, r.nominal)}
        if r.borrowing_limit is not None:
            entry["borrowingLimit"] = format_quantity(res, r.borrowing_limit)
        if r.lending_limit is not None:
            entry["lendingLimit"] = format_quantity(res, r.lending_limit)
        entry.update(
            {
                "used": format_quantity(res, r.used),
                "usedByLocalQueue": format_quantity(res, r.used_by_local_queue),
                "available": format_quantity(res, r.available),
                "borrowable": format_quantity(res, r.borrowable),
                "maxAvailable": format_quantity(res, r.max_available),
            }
        )
        flavors.setdefault(r.flavor.flavor, []).append(entry)
    out: dict[str, Any] = {
        "kind": v.LIMITS_KIND,
        "apiVersion": f"{v.PYKUEUE_GROUP}/{v.PYKUEUE_VERSION}",
        "metadata": {"name": name, "namespace": namespace},
        "clusterQueue": lim.cluster_queue,
    }
    if lim.cohort:
        out["cohort"] = lim.cohort
    out["flavors"] = [{"name": f, "resources": rs} for f, rs in flavors.items()]
    return out


def _served(group: str, version: str) -> v.ApiGroup | None:
    return next((g for g in v.GROUPS if g.name == group and version in g.versions), None)


def resource_attributes(path: str) -> Attributes | None:
    """The attributes of a resource request of a group served here, or None for a discovery/OpenAPI path."""
    parts = [p for p in path.split("/") if p]
    if len(parts) < 4 or parts[0] != "apis" or _served(parts[1], parts[2]) is None:
        return None
    rest, namespace = parts[3:], ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return Attributes("get" if name else "list", rest[0], subresource, name, namespace, parts[1], parts[2])


class VisibilityAPI:
    """Answers one request at a time; thread-safe as long as `reader` and `authorizer` are."""

    def __init__(self, reader: PendingReader, authorizer: RequestAuthorizer, local_queues: LocalQueueReader) -> None:
        self._reader = reader
        self._authorizer = authorizer
        self._local_queues = local_queues
        self._openapi_v2 = orjson.dumps(openapi.v2())
        self._openapi_v3 = openapi.v3_documents()
        self._openapi_v3_index = orjson.dumps(openapi.v3_index(self._openapi_v3))

    def handle(self, req: Request) -> Response:
        path = req.path.rstrip("/") or "/"
        pretty = (req.query.get("pretty") or ["false"])[0] in ("1", "true")
        if path in HEALTH_PATHS:
            return Response(200, b"ok", "text/plain; charset=utf-8")
        if req.user is None:
            return _status(v.unauthorized(), pretty)
        if req.method not in ("GET", "HEAD"):
            return _status(v.method_not_allowed(), pretty)
        attrs = resource_attributes(path)
        decision = self._authorizer.authorize(req.user, attrs or Attributes("get", path=req.path))
        if not decision.allowed:
            if attrs is None:
                return _status(v.forbidden_path(user=req.user.name, verb="get", path=req.path), pretty)
            return _status(
                v.forbidden(
                    user=req.user.name,
                    verb=attrs.verb,
                    resource=attrs.resource,
                    subresource=attrs.subresource,
                    name=attrs.name,
                    namespace=attrs.namespace,
                    reason=decision.reason,
                    group=attrs.group,
                ),
                pretty,
            )
        if attrs is not None and attrs.group == v.PYKUEUE_GROUP:
            return self._local_queue(attrs, path, req.query, pretty)
        if attrs is not None:
            return self._pending(attrs, path, req.query, pretty)
        return self._discovery(path, req, pretty)

    def _pending(self, attrs: Attributes, path: str, query: Mapping[str, Sequence[str]], pretty: bool) -> Response:
        depth = len([p for p in path.split("/") if p]) - (5 if attrs.namespace else 3)
        if attrs.subresource != "pendingworkloads" or depth != 3:
            return _status(v.resource_not_found(), pretty)
        if (attrs.resource, bool(attrs.namespace)) not in (("clusterqueues", False), ("localqueues", True)):
            return _status(v.resource_not_found(), pretty)
        try:
            limit, offset = _bounded(query)
        except _BadRequest as exc:
            return _status(v.bad_request(str(exc)), pretty)
        if attrs.resource == "clusterqueues":
            items = self._reader.cluster_queue_page(attrs.name, offset=offset, limit=limit)
            if items is None:
                return _status(v.not_found("clusterqueue", attrs.name), pretty)
        else:
            items = self._reader.local_queue_page(f"{attrs.namespace}/{attrs.name}", offset=offset, limit=limit)
            if items is None:
                return _status(v.not_found("localqueue", attrs.name), pretty)
        return _json(200, summary(attrs.version, items), pretty=pretty)

    def _local_queue(self, attrs: Attributes, path: str, query: Mapping[str, Sequence[str]], pretty: bool) -> Response:
        """`namespaces/<ns>/localqueues/<name>/{limits,pendingworkloads}` of our group."""
        depth = len([p for p in path.split("/") if p]) - 5
        if (
            depth != 3
            or not attrs.namespace
            or attrs.resource != "localqueues"
            or attrs.subresource not in ("limits", "pendingworkloads")
        ):
            return _status(v.resource_not_found(), pretty)
        key = f"{attrs.namespace}/{attrs.name}"
        missing = _status(v.not_found("localqueue", attrs.name, v.PYKUEUE_GROUP), pretty)
        if attrs.subresource == "limits":
            lim = self._local_queues.local_queue_limits(key)
            return missing if lim is None else _json(200, limits(attrs.namespace, attrs.name, lim), pretty=pretty)
        try:
            limit, offset = _bounded(query)
        except _BadRequest as exc:
            return _status(v.bad_request(str(exc)), pretty)
        page = self._local_queues.local_queue_estimates(key, offset=offset, limit=limit)
        return missing if page is None else _json(200, estimates(page), pretty=pretty)

    def _discovery(self, path: str, req: Request, pretty: bool) -> Response:
        if path == "/apis":
            if "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" in req.accept.replace(" ", ""):
                return _json(
                    200,
                    v.aggregated_discovery(),
                    pretty=pretty,
                    content_type=v.AGGREGATED_DISCOVERY_TYPE,
                    headers=(("Vary", "Accept"),),
                )
            return _json(200, v.api_group_list(), pretty=pretty)
        for group in v.GROUPS:
            if path == f"/apis/{group.name}":
                return _json(200, v.api_group(group), pretty=pretty)
            for version in group.versions:
                if path == f"/apis/{group.name}/{version}":
                    return _json(200, v.api_resource_list(version, group), pretty=pretty)
        if path == "/openapi/v2":
            return Response(200, self._openapi_v2, headers=(("ETag", f'"{openapi.etag(self._openapi_v2)}"'),))
        if path == "/openapi/v3":
            return Response(200, self._openapi_v3_index)
        if path.startswith("/openapi/v3/"):
            return self._openapi_v3_document(path.removeprefix("/openapi/v3/"), req.query)
        return _status(v.resource_not_found(), pretty)

    def _openapi_v3_document(self, key: str, query: Mapping[str, Sequence[str]]) -> Response:
        """A document; with a stale `hash` the client is sent to the current one (as kube-openapi does)."""
        body = self._openapi_v3.get(key)
        if body is None:
            return _status(v.resource_not_found())
        tag = openapi.etag(body)
        asked = (query.get("hash") or [""])[0]
        if asked and asked != tag:
            return Response(301, b"", headers=(("Location", f"/openapi/v3/{key}?hash={tag}"), ("ETag", f'"{tag}"')))
        cache = "public, immutable" if asked else "no-cache, private"
        return Response(200, body, headers=(("ETag", f'"{tag}"'), ("Cache-Control", cache)))
