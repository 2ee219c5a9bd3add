"""The visibility API server of a worker process: its own watches, its pending order, HTTPS.

Where upstream's manager runs its visibility server in every replica (`pkg/visibility/server.go`,
started from `cmd/kueue/main.go` when VisibilityOnDemand is on, kueue v0.19.2), every worker
process runs this one, the lease holder and the standbys alike, because the APIService points at
the Service and any replica gets requests. Upstream's standbys keep their queue manager from the
same watches as the leader (only its writes wait for the lease); here each process keeps a
`PendingOrder`, a quota `Cache` and what the wait estimates start from (our LocalQueue limits
and estimates, `visibility.pykueue.io`) from its own watches of Workloads, LocalQueues,
ClusterQueues, Cohorts and ResourceFlavors, so the answer does not depend on which replica is
asked nor on the admission core's thread: a request never
waits for a scheduling cycle, and the core's queues stay the core thread's alone. What a
replica shows is the API's state as its watches delivered it; the leader's in-memory decisions
reach it through the status writes they make, a moment later, as upstream's standbys see them.

Estimates (`core.wait_estimate`) are remade for every ClusterQueue every `ESTIMATE_EVERY_S`, and
before a request when older than `ESTIMATE_FRESH_S` or when a workload joined a queue since; the
simulation runs outside the feed's lock, on a snapshot taken under it. Each replica scores its own estimates when it sees the
reservations that follow (`core.estimate_accuracy`), so every replica serves the same figures.

Threads (daemons): five informers feeding the feed under one lock (`kube.SharedInformers`: on the
lease holder the admission worker reads the same streams, so each is decoded once), the front-proxy settings'
refresher, the server's accept loop and one thread per connection (TLS handshake included, with a
deadline, so a slow client holds up no one).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import urllib.parse
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import HTTPServer
from typing import Any

from webhook import kube as k
from webhook import metrics, tls
from webhook.api import constants as c
from webhook.config import Configuration, Feature, tlsoptions
from webhook.core import admission_fair_sharing, model, usage
from webhook.core.cache import Cache
from webhook.core.estimate_accuracy import Accuracy, EstimateLog, Scored
from webhook.core.pending_order import PendingOrder, Positioned, pending_entry
from webhook.core.queue_limits import QueueLimits, local_queue_limits
from webhook.core.snapshot import take_snapshot
from webhook.core.wait_estimate import Estimate, RunTimes, estimate_admissions
from webhook.core.workload import WorkloadInfo, WorkloadKey, parse_workload
from webhook.guarded_server import GuardedHandler, GuardedThreadingMixIn
from webhook.visibility.auth import AccessReviewer, FrontProxy, FrontProxySource, authenticate
from webhook.visibility.handler import Basis, Request, Response, VisibilityAPI

__all__ = [
    "Basis",
    "EstimatedPage",
    "PendingFeed",
    "VisibilityServer",
    "admission_fair_sharing_settings",
    "serve_visibility",
]

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 60.0
# In any order: the cache recounts a ClusterQueue's usage when it appears after its Workloads.
_WATCHED = (
    ("workloads", c.V1BETA2),
    ("localqueues", c.V1BETA2),
    ("clusterqueues", c.V1BETA2),
    ("cohorts", c.V1BETA2),
    ("resourceflavors", c.V1BETA2),
)
ESTIMATE_EVERY_S = 5.0
ESTIMATE_FRESH_S = 1.0
#: Pending workloads simulated per ClusterQueue; those further back get no estimate.
ESTIMATE_DEPTH = 1000
#: Finished workloads per ClusterQueue whose run times the median is taken over.
OBSERVED_RUNS = 20


def admission_fair_sharing_settings(config: Configuration) -> admission_fair_sharing.Settings | None:
    """`afs.Enabled`: the AdmissionFairSharing gate on and `admissionFairSharing` set (the worker's
    core and every replica's pending order read it alike)."""
    afs = config.admission_fair_sharing
    if afs is None or not config.feature_enabled(Feature.ADMISSION_FAIR_SHARING):
        return None
    return admission_fair_sharing.Settings(
        half_life_s=afs.usage_half_life_time_s,
        sampling_interval_s=afs.usage_sampling_interval_s,
        resource_weights=dict(afs.resource_weights),
    )


@dataclass(frozen=True, slots=True)
class EstimatedPage:
    """A LocalQueue page at `now` with its workloads' estimates, what its ClusterQueue's estimates
    start from and how good they were; `unknown` says why there are none when the ClusterQueue
    cannot admit at all ("" when it can)."""

    items: list[Positioned]
    estimates: Mapping[WorkloadKey, Estimate]
    unknown: str
    now: datetime
    basis: Basis = field(default_factory=Basis)
    accuracy: Accuracy = field(default_factory=lambda: Accuracy(0, 0, None, None, None, None))


class PendingFeed:
    """What every replica keeps from its own watches for the visibility API, under one lock: the
    pending order, the quota state (`core.cache.Cache`: ClusterQueues, Cohorts, ResourceFlavors,
    reserving Workloads), what tells how long workloads run, and the wait estimates with their
    scores. `on_scored` hears each admission scored against its estimates (the metrics)."""

    def __init__(
        self,
        *,
        requeue_by_eviction: bool = True,
        concurrent_admission: bool = False,
        admission_fair_sharing: admission_fair_sharing.Settings | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        on_scored: Callable[[Scored], None] = lambda scored: None,
    ) -> None:
        self._order = PendingOrder()
        self._afs = admission_fair_sharing
        self._cache = Cache(concurrent_admission=concurrent_admission)
        self._clock = clock
        self._on_scored = on_scored
        # What the estimates read: pending workloads, each workload's maximumExecutionTimeSeconds,
        # and per ClusterQueue the seconds its recent finished workloads held quota.
        self._pending: dict[WorkloadKey, WorkloadInfo] = {}
        self._limits: dict[WorkloadKey, int] = {}
        self._observed: dict[str, deque[float]] = {}
        self._runs_seen: set[WorkloadKey] = set()
        self._log = EstimateLog()
        self._estimates: dict[WorkloadKey, Estimate] = {}
        self._estimated_at: datetime | None = None
        self._unestimated = False  # a workload joined a queue since the estimates were made
        self._estimating = threading.Lock()  # one simulation at a time
        # The Active condition each ClusterQueue's status carries (the leader writes it).
        self._inactive: dict[str, str] = {}
        # What of each ClusterQueue the cache was last given: the leader's status writes (after
        # every admission) leave it alone, as they do not touch what the cache reads, and a cache
        # update rebuilds the cohort tree and recounts the queue's usage.
        self._fed: dict[str, tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._requeue_by_eviction = requeue_by_eviction
        self._seen: dict[str, set[str]] = {kind: set() for kind, _ in _WATCHED}

    @staticmethod
    def _key(obj: dict[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace")
        return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name") or "")

    def _apply(self, kind: str, key: str, obj: dict[str, Any] | None) -> None:
        if obj is None:
            self._seen[kind].discard(key)
        else:
            self._seen[kind].add(key)
        if kind == "workloads":
            self._apply_workload(WorkloadKey(key), obj)
        elif kind == "localqueues":
            lq = None if obj is None else self._cache.upsert_local_queue(obj)
            if lq is None:
                self._cache.delete_local_queue(key)
            routed = lq is not None and lq.stop_policy == model.StopPolicy.NONE
            self._order.set_local_queue(key, lq.cluster_queue if lq is not None and routed else None)
            if self._afs is not None:
                self._order.set_local_queue_usage(key, None if lq is None or obj is None else self._lq_usage(lq, obj))
        elif kind == "clusterqueues":
            self._order.set_cluster_queue(key, obj is not None)
            mode = ((obj or {}).get("spec") or {}).get("admissionScope") or {}
            self._order.set_fair_order(
                key, self._afs is not None and mode.get("admissionMode") == model.AdmissionMode.USAGE_BASED
            )
            if obj is None:
                self._cache.delete_cluster_queue(key)
                self._inactive.pop(key, None)
                self._fed.pop(key, None)
                return
            fed = (obj.get("spec"), (obj.get("metadata") or {}).get("deletionTimestamp"))
            if self._fed.get(key) != fed:
                self._fed[key] = fed
                self._cache.upsert_cluster_queue(obj)
            self._set_active(key, obj)
        elif kind == "resourceflavors":
            if obj is None:
                self._cache.delete_resource_flavor(key)
            else:
                self._cache.upsert_resource_flavor(obj)
        elif obj is None:
            self._cache.delete_cohort(key)
        else:
            self._cache.upsert_cohort(obj)

    def _lq_usage(self, lq: model.LocalQueueSpec, obj: dict[str, Any]) -> float:
        """The usage the LocalQueue's status shows (its last sample, without pending penalties)."""
        assert self._afs is not None
        status = ((obj.get("status") or {}).get("fairSharing") or {}).get("admissionFairSharingStatus") or {}
        consumed = admission_fair_sharing.parse_consumed(status.get("consumedResources"))
        return admission_fair_sharing.usage(consumed, {}, float(lq.fair_weight), self._afs.resource_weights)

    def _apply_workload(self, key: WorkloadKey, obj: dict[str, Any] | None) -> None:
        if obj is None:
            self._order.set_workload(key, None)
            self._cache.delete_workload(key)
            self._forget(key)
            return
        info = parse_workload(obj, requeue_by_eviction=self._requeue_by_eviction)
        entry = pending_entry(info, obj)
        self._order.set_workload(key, entry)
        self._cache.upsert_workload(info)
        limit = (obj.get("spec") or {}).get("maximumExecutionTimeSeconds")
        if limit is None:
            self._limits.pop(key, None)
        else:
            self._limits[key] = int(limit)
        if entry is not None:
            self._pending[key] = info
            self._unestimated |= key not in self._estimates
            return
        self._pending.pop(key, None)
        at = info.quota_reserved_time
        if at is not None and info.admission_cluster_queue and not self._cache.is_parent(info):
            # ConcurrentAdmission: a parent's admitted variant is the admission
            scored = self._log.admitted(key, info.admission_cluster_queue, at)
            if scored is not None:
                self._on_scored(scored)
        else:
            self._log.forget(key)  # left the queue without a reservation (deactivated, finished)
        if info.is_finished and key not in self._runs_seen:
            held = usage.holding_of(obj)
            if held is not None and held.end is not None:
                self._runs_seen.add(key)
                runs = self._observed.setdefault(info.admission_cluster_queue, deque(maxlen=OBSERVED_RUNS))
                runs.append(float(held.end - held.start))

    def _forget(self, key: WorkloadKey) -> None:
        self._pending.pop(key, None)
        self._limits.pop(key, None)
        self._runs_seen.discard(key)
        self._estimates.pop(key, None)
        self._log.forget(key)

    def refresh_estimates(self) -> None:
        """Remake every ClusterQueue's estimates: the snapshot under the lock, the simulation outside."""
        with self._estimating:
            with self._lock:
                now = self._clock()
                self._unestimated = False
                snap = take_snapshot(self._cache, active_only=False)
                queues: dict[str, list[WorkloadInfo]] = {}
                for name in snap.cluster_queues:
                    if name in self._inactive:
                        continue
                    page = self._order.cluster_queue_page(name, offset=0, limit=ESTIMATE_DEPTH) or []
                    queues[name] = [self._pending[p.workload.key] for p in page if p.workload.key in self._pending]
                run_times = RunTimes(dict(self._limits), {cq: tuple(runs) for cq, runs in self._observed.items()})
            estimates = estimate_admissions(snap, queues, run_times, now)
            with self._lock:
                # A workload that left the queue meanwhile keeps no estimate.
                estimates = {k: e for k, e in estimates.items() if k in self._pending}
                self._estimates = estimates
                self._estimated_at = now
                self._log.record(estimates)

    def _basis(self, cluster_queue: str) -> Basis:
        node = self._cache.cluster_queues.get(cluster_queue)
        runs = self._observed.get(cluster_queue, ())
        run_times = RunTimes(self._limits, {cluster_queue: tuple(runs)})
        holding = list(node.workloads.values()) if node is not None else []
        with_limit = sum(1 for wl in holding if wl.key in self._limits)
        known = sum(1 for wl in holding if run_times.expected(wl.key, cluster_queue) is not None)
        return Basis(
            len(holding),
            with_limit,
            known - with_limit,
            len(holding) - known,
            len(runs),
            run_times.observed_median(cluster_queue),
        )

    def _set_active(self, name: str, obj: dict[str, Any]) -> None:
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") == c.QueueCondition.ACTIVE:
                if cond.get("status") == "True":
                    self._inactive.pop(name, None)
                else:
                    self._inactive[name] = str(cond.get("message") or cond.get("reason") or "not active")
                return
        self._inactive[name] = "no Active condition yet"

    def on_list(self, kind: str, items: list[dict[str, Any]]) -> None:
        """A (re)list: everything not in it is gone."""
        with self._lock:
            present = {self._key(obj): obj for obj in items}
            for key in self._seen[kind] - present.keys():
                self._apply(kind, key, None)
            for key, obj in present.items():
                try:
                    self._apply(kind, key, obj)
                except Exception:  # one object's failure must not keep the others from the feed
                    log.exception("visibility feed skipped an object", extra={"kind": kind, "object": key})

    def on_event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._apply(kind, self._key(obj), None if etype == "DELETED" else obj)

    def cluster_queue_page(self, name: str, *, offset: int, limit: int) -> list[Positioned] | None:
        with self._lock:
            return self._order.cluster_queue_page(name, offset=offset, limit=limit)

    def local_queue_page(self, key: str, *, offset: int, limit: int) -> list[Positioned] | None:
        with self._lock:
            return self._order.local_queue_page(key, offset=offset, limit=limit)

    def local_queue_limits(self, key: str) -> QueueLimits | None:
        with self._lock:
            lq = self._cache.local_queues.get(key)
            if lq is None or lq.stop_policy != model.StopPolicy.NONE:
                return None  # as its pending workloads: a stopped LocalQueue is not served
            return local_queue_limits(self._cache, key)

    def local_queue_estimates(self, key: str, *, offset: int, limit: int) -> EstimatedPage | None:
        with self._lock:
            stale = (
                self._estimated_at is None
                or self._unestimated
                or self._clock() - self._estimated_at > timedelta(seconds=ESTIMATE_FRESH_S)
            )
        if stale:
            self.refresh_estimates()
        with self._lock:
            items = self._order.local_queue_page(key, offset=offset, limit=limit)
            if items is None:
                return None
            cq = self._cache.local_queues[key].cluster_queue
            if cq not in self._cache.cluster_queues:
                unknown = f'ClusterQueue "{cq}" does not exist'
            else:
                unknown = self._inactive.get(cq, "")
            estimates = {p.workload.key: e for p in items if (e := self._estimates.get(p.workload.key)) is not None}
            beyond = Estimate(None, f"only the first {ESTIMATE_DEPTH} workloads of a ClusterQueue are simulated")
            estimates.update((p.workload.key, beyond) for p in items if p.in_cluster_queue >= ESTIMATE_DEPTH)
            return EstimatedPage(items, estimates, unknown, self._clock(), self._basis(cq), self._log.accuracy(cq))


class _Handler(GuardedHandler):
    """One connection: TLS handshake in this thread, then HTTP/1.1 requests until the client leaves."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle on, the second waits for the client's
    # delayed ACK (some 40 ms a request on a kept-alive connection).
    disable_nagle_algorithm = True
    server: VisibilityServer

    def setup(self) -> None:
        self.request.settimeout(HANDSHAKE_TIMEOUT_S)
        self.request.do_handshake()
        self.request.settimeout(IDLE_TIMEOUT_S)
        super().setup()

    def _serve(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        user = authenticate(
            self.server.front_proxy(), peer, lambda name: self.headers.get_all(name) or [], list(self.headers.keys())
        )
        req = Request(
            self.command,
            url.path,
            urllib.parse.parse_qs(url.query, keep_blank_values=True),
            user,
            self.headers.get("Accept", ""),
        )
        try:
            resp = self.server.api.handle(req)
        except k.KubeError as exc:
            log.error("visibility: authorization failed", extra={"user": user.name if user else "", "error": str(exc)})
            resp = Response(
                500,
                b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                b'"message":"authorization failed","reason":"InternalError","code":500}',
            )
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(resp.body)))
        for name, value in resp.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(resp.body)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged one by one (the API server's audit log has them)."""


class VisibilityServer(GuardedThreadingMixIn, HTTPServer):
    """A thread per connection, capped, each request under a deadline (`guarded_server`); accepted
    sockets are wrapped in `ssl_context` without a handshake."""

    def __init__(
        self,
        address: tuple[str, int],
        api: VisibilityAPI,
        ssl_context: ssl.SSLContext,
        front_proxy: Callable[[], FrontProxy | None],
    ) -> None:
        self.address_family = socket.getaddrinfo(
            address[0], address[1], type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0][0]
        self.api = api
        self.ssl_context = ssl_context
        self.front_proxy = front_proxy
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = self.socket.accept()
        return self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A failed handshake (no or untrusted client certificate) or a dropped client is not our error."""
        log.debug("visibility: connection failed", extra={"client": str(client_address)}, exc_info=True)


def serve_visibility(
    config: Configuration, kube: k.Kube, cert_dir: str, stop: threading.Event, informers: k.SharedInformers
) -> tuple[str, int] | None:
    """Start the watches (through the process's `informers`, which the leader's admission worker
    shares) and the server (VisibilityOnDemand on); returns the bound (host, port).

    The serving certificate is the webhook's (re-read when it rotates), or a self-signed one when
    there is none, as upstream's server makes one; a taken port is logged, not fatal."""
    if not config.feature_enabled(Feature.VISIBILITY_ON_DEMAND):
        return None
    if tls.has_cert(cert_dir):
        ctx = tls.server_context(cert_dir, tlsoptions.for_config(config))
        threading.Thread(
            target=tls.CertReloader(ctx, cert_dir).watch, args=(stop,), name="visibility-cert-reloader", daemon=True
        ).start()
    else:
        ctx = tls.self_signed_context(options=tlsoptions.for_config(config))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    front = FrontProxySource(kube, ctx)
    front.refresh()
    wfpr = config.wait_for_pods_ready
    feed = PendingFeed(
        requeue_by_eviction=wfpr is None or wfpr.requeuing_strategy.timestamp != "Creation",
        concurrent_admission=config.feature_enabled(Feature.CONCURRENT_ADMISSION),
        admission_fair_sharing=admission_fair_sharing_settings(config),
        on_scored=metrics.observe_wait_estimate,
    )
    api = VisibilityAPI(feed, AccessReviewer(kube), feed)
    vs = config.visibility_server
    bind = (vs.bind_address or "0.0.0.0", vs.bind_port)
    try:
        server = VisibilityServer(bind, api, ctx, lambda: front.current)
    except OSError as exc:
        log.warning("cannot serve the visibility API", extra={"address": f"{bind[0]}:{bind[1]}", "error": str(exc)})
        return None
    for kind, api_version in _WATCHED:

        def on_list(items: list[dict[str, Any]], kind: str = kind) -> None:
            feed.on_list(kind, items)

        def on_event(etype: str, obj: dict[str, Any], kind: str = kind) -> None:
            feed.on_event(kind, etype, obj)

        informers.subscribe(k.object_path(api_version, kind, None), on_list, on_event)

    def until_stopped() -> None:
        stop.wait()
        server.shutdown()
        server.server_close()

    def estimate_forever() -> None:
        while not stop.wait(ESTIMATE_EVERY_S):
            try:
                feed.refresh_estimates()
            except Exception:  # a bad object must not end the estimates for good
                log.exception("visibility: estimating failed")

    threading.Thread(target=estimate_forever, name="visibility-estimates", daemon=True).start()
    threading.Thread(target=front.run, args=(stop,), name="visibility-front-proxy", daemon=True).start()
    threading.Thread(target=server.serve_forever, name="visibility-server", daemon=True).start()
    threading.Thread(target=until_stopped, name="visibility-stop", daemon=True).start()
    host, port = str(server.server_address[0]), int(server.server_address[1])
    log.info("serving the visibility API", extra={"address": f"{host}:{port}", "scheme": "https"})
    return host, port
