"""The ASGI app: routes from an explicit table, one handler module per kind.

A request is read (capped at `MAX_BODY_BYTES`), decoded, checked against the endpoint's
kind, handed to a pure handler, and answered; nothing is kept between requests. A body
that is not a usable review gets HTTP 400 with a message; an unknown path gets 404.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anyio.to_thread
import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from webhook import metrics
from webhook.admission import cluster_queue, cohort, conversion, job, pod, resource_flavor, workload
from webhook.admission import review as rv
from webhook.admission.context import Context, Lookups, StaticLookups
from webhook.admission.jobframework import FrameworkError
from webhook.api import fields as f
from webhook.config import Configuration

__all__ = ["MAX_BODY_BYTES", "ORJSONResponse", "create_app"]

log = logging.getLogger(__name__)

# The API server stores objects of at most ~3 MiB; a review carries the object and the old
# object, so 8 MiB holds any honest request and stops a client from filling our memory.
MAX_BODY_BYTES = 8 * 1024 * 1024


class ORJSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class _BodyTooLarge(Exception):
    pass


async def _read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _BodyTooLarge
    chunks = bytearray()
    async for chunk in request.stream():
        chunks += chunk
        if len(chunks) > MAX_BODY_BYTES:
            raise _BodyTooLarge
    return bytes(chunks)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One webhook: what it serves, whether it mutates, and the module that decides.

    The same table generates the Mutating/ValidatingWebhookConfigurations
    (`webhook.admission.registration`), so a path cannot be served without being registered.
    """

    name: str
    path: str
    group: str
    version: str
    kind: str
    resources: tuple[str, ...]
    operations: tuple[str, ...]
    mutating: bool
    handler: ModuleType
    integration: str | None = None  # framework name that must be enabled, else the webhook allows all


_K = "kueue.x-k8s.io"
_CU = ("CREATE", "UPDATE")
ENDPOINTS: Sequence[Endpoint] = (
    Endpoint("mjob.kb.io", "/mutate-batch-v1-job", "batch", "v1", "Job", ("jobs",), ("CREATE",), True, job, "batch/job"),
    Endpoint("vjob.kb.io", "/validate-batch-v1-job", "batch", "v1", "Job", ("jobs",), _CU, False, job, "batch/job"),
    Endpoint("mpod.kb.io", "/mutate--v1-pod", "", "v1", "Pod", ("pods",), ("CREATE",), True, pod, "pod"),
    Endpoint("vpod.kb.io", "/validate--v1-pod", "", "v1", "Pod", ("pods",), _CU, False, pod, "pod"),
    Endpoint("mclusterqueue.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue", _K, "v1beta2", "ClusterQueue",
             ("clusterqueues",), ("CREATE",), True, cluster_queue),
    Endpoint("vclusterqueue.kb.io", "/validate-kueue-x-k8s-io-v1beta2-clusterqueue", _K, "v1beta2", "ClusterQueue",
             ("clusterqueues",), _CU, False, cluster_queue),
    Endpoint("mresourceflavor.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-resourceflavor", _K, "v1beta2",
             "ResourceFlavor", ("resourceflavors",), ("CREATE",), True, resource_flavor),
    Endpoint("vresourceflavor.kb.io", "/validate-kueue-x-k8s-io-v1beta2-resourceflavor", _K, "v1beta2",
             "ResourceFlavor", ("resourceflavors",), _CU, False, resource_flavor),
    Endpoint("mworkload.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-workload", _K, "v1beta2", "Workload",
             ("workloads",), ("CREATE",), True, workload),
    Endpoint("vworkload.kb.io", "/validate-kueue-x-k8s-io-v1beta2-workload", _K, "v1beta2", "Workload",
             ("workloads", "workloads/status"), _CU, False, workload),
    Endpoint("vcohort.kb.io", "/validate-kueue-x-k8s-io-v1beta2-cohort", _K, "v1beta2", "Cohort",
             ("cohorts",), _CU, False, cohort),
)


def _needs_thread(obj: Mapping[str, Any] | None) -> bool:
    """Owner lookups may call the API; keep those off the event loop."""
    meta = obj.get("metadata") if obj else None
    return isinstance(meta, dict) and bool(meta.get("ownerReferences"))


def decide(endpoint: Endpoint, req: rv.Review, config: Configuration, lookups: Lookups) -> tuple[dict[str, Any], str]:
    """The review response for one request, and its outcome label. Pure but for lookups."""
    if endpoint.integration is not None and endpoint.integration not in config.integrations.frameworks:
        return rv.allowed(req.uid), "allowed"
    ctx = Context(
        config=config, lookups=lookups, operation=req.operation, sub_resource=req.sub_resource, namespace=req.namespace
    )
    module = endpoint.handler
    try:
        if endpoint.mutating:
            if req.operation != "CREATE" or req.obj is None:
                return rv.allowed(req.uid), "allowed"
            mutated = copy.deepcopy(req.obj)
            module.default(mutated, ctx)
            patch = rv.json_patch(req.obj, mutated)
            return rv.allowed(req.uid, patch=patch), "patched" if patch else "allowed"
        errors: list[f.FieldError]
        warnings: list[str] = []
        if req.operation == "CREATE" and req.obj is not None:
            errors = module.validate_create(req.obj, ctx)
            warn: Callable[..., list[str]] | None = getattr(module, "warnings_create", None)
            warnings = warn(req.obj, ctx) if warn else []
        elif req.operation == "UPDATE" and req.obj is not None and req.old_obj is not None:
            errors = module.validate_update(req.old_obj, req.obj, ctx)
            warn = getattr(module, "warnings_update", None)
            warnings = warn(req.old_obj, req.obj, ctx) if warn else []
        else:
            return rv.allowed(req.uid), "allowed"
    except FrameworkError as exc:
        return rv.denied(req.uid, str(exc)), "denied"
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        # The API server only sends objects it decoded against the schema; anything else is a bad client.
        raise rv.BadRequest(f"request object is not a well-formed {endpoint.kind}: {type(exc).__name__}: {exc}") from None
    if errors:
        return rv.denied(req.uid, f.aggregate(errors), warnings=warnings), "denied"
    return rv.allowed(req.uid, warnings=warnings), "allowed"


def _observe(path: str, code: int, outcome: str, started: float) -> None:
    metrics.WEBHOOK_REQUESTS.labels(path, str(code)).inc()
    metrics.WEBHOOK_OUTCOMES.labels(path, outcome).inc()
    metrics.WEBHOOK_LATENCY.labels(path, outcome).observe(time.perf_counter() - started)


def _admission_route(endpoint: Endpoint, config: Configuration, lookups: Lookups) -> Route:
    async def handle(request: Request) -> Response:
        started = time.perf_counter()
        try:
            req = rv.parse_review(await _read_body(request))
            if req.kind.get("kind") != endpoint.kind or req.kind.get("group", "") != endpoint.group:
                got = f"{req.kind.get('group', '')}/{req.kind.get('kind')}"
                raise rv.BadRequest(f"{endpoint.path} serves {endpoint.group}/{endpoint.kind}, not {got}")
        except _BodyTooLarge:
            _observe(endpoint.path, 400, "bad_request", started)
            return PlainTextResponse(f"request body exceeds {MAX_BODY_BYTES} bytes", status_code=400)
        except rv.BadRequest as exc:
            _observe(endpoint.path, 400, "bad_request", started)
            return PlainTextResponse(str(exc), status_code=400)
        try:
            if _needs_thread(req.obj):
                answer, outcome = await anyio.to_thread.run_sync(decide, endpoint, req, config, lookups)
            else:
                answer, outcome = decide(endpoint, req, config, lookups)
        except rv.BadRequest as exc:
            _observe(endpoint.path, 400, "bad_request", started)
            return PlainTextResponse(str(exc), status_code=400)
        _observe(endpoint.path, 200, outcome, started)
        if outcome == "denied":
            log.info(
                "denied",
                extra={"object": f"{req.namespace}/{req.name}" if req.namespace else req.name, "kind": endpoint.kind,
                       "decision": answer["response"]["status"]["message"]},
            )
        return ORJSONResponse(answer)

    return Route(endpoint.path, handle, methods=["POST"])


def _conversion_route() -> Route:
    async def handle(request: Request) -> Response:
        started = time.perf_counter()
        try:
            answer = conversion.review(await _read_body(request))
        except _BodyTooLarge:
            _observe("/convert", 400, "bad_request", started)
            return PlainTextResponse(f"request body exceeds {MAX_BODY_BYTES} bytes", status_code=400)
        except rv.BadRequest as exc:
            _observe("/convert", 400, "bad_request", started)
            return PlainTextResponse(str(exc), status_code=400)
        ok = answer["response"]["result"]["status"] == "Success"
        _observe("/convert", 200, "allowed" if ok else "error", started)
        return ORJSONResponse(answer)

    return Route("/convert", handle, methods=["POST"])


def create_app(
    config: Configuration | None = None, lookups: Lookups | None = None, *, ready: Callable[[], bool] = lambda: True
) -> Starlette:
    config = config or Configuration()
    lookups = lookups or StaticLookups()

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> Response:
        return PlainTextResponse("ok") if ready() else PlainTextResponse("not ready", status_code=503)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)

    routes = [_admission_route(e, config, lookups) for e in ENDPOINTS]
    routes += [
        _conversion_route(),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics_endpoint),
    ]
    return Starlette(routes=routes)
