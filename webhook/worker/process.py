"""The worker's OS process: leader election, then the Manager; and the supervisor `serve` uses.

`run(...)` is the body of `python -m webhook worker`: every replica runs it, only the lease
holder gets past `LeaderElector.run` and starts the Manager. Losing the lease ends the process
(as upstream's manager exits), and the supervisor in the `serve` process starts a fresh standby.
SIGTERM releases the lease first, so a standby takes over at once instead of after 15 s.

Every worker process serves the Kueue series (`webhook.metrics.WORKER_REGISTRY`) as `/metrics`
over HTTPS on the Configuration's `metrics.bindAddress` (default `:8443`; `0` turns it off), to
callers a TokenReview and a SubjectAccessReview admit (`metrics_server`), as upstream's manager
does on its metrics port. The certificate is the webhook's (`--cert-dir`, re-read when it
rotates), or a self-signed one made at start when there is none. Only the lease holder fills the
series in; a standby shows `kueue_build_info` alone. The webhook server's own `/metrics`
(port 9443) keeps the webhook series.

Every worker process also serves the visibility API (`webhook.visibility`, VisibilityOnDemand) on
the Configuration's `visibilityServer` address (default `:8082`), from its own watches, before and
whatever the outcome of the election, so any replica behind the APIService's Service answers.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from types import FrameType

from webhook import kube as k
from webhook import metrics, reviews, tls
from webhook.config import Configuration, Feature, tlsoptions
from webhook.config.tlsoptions import ParsedTLS
from webhook.visibility import server as visibility_server
from webhook.worker import metrics_server
from webhook.worker.leader import LeaderElector, LeaseSettings
from webhook.worker.manager import Manager

__all__ = ["Supervisor", "configure_metrics", "identity", "parse_bind_address", "run", "serve_metrics"]

log = logging.getLogger(__name__)


def identity() -> str:
    """`<hostname>_<pid>_<random>`: unique per process, and says which process holds the lease."""
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """`host:port` or `:port` (all interfaces) as (host, port); None for "0" (disabled)."""
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


def configure_metrics(config: Configuration) -> None:
    """Give the worker's series the custom labels of `metrics.customLabels` when gate
    CustomMetricLabels is on (`NewCustomLabels` in `cmd/kueue/main.go`); with the gate off they are
    ignored, and said so, as upstream does."""
    entries = config.metrics.custom_labels
    if config.feature_enabled(Feature.CUSTOM_METRIC_LABELS) and entries:
        metrics.configure(metrics.CustomLabels(entries))
    elif entries:
        log.info(
            "metrics.customLabels is configured but CustomMetricLabels feature gate is disabled; "
            "custom labels will have no effect"
        )


def serve_metrics(
    address: str,
    kube: reviews.KubeAPI,
    cert_dir: str,
    stop: threading.Event,
    *,
    tls_options: ParsedTLS = tlsoptions.DEFAULT_TLS,
) -> tuple[str, int] | None:
    """Serve `/metrics` for the worker registry over HTTPS in daemon threads until `stop`; returns
    the bound (host, port).

    The certificate in `cert_dir` is re-read when it changes. A port already taken (two local
    processes on one host) is logged, not fatal: admission matters more than its metrics."""
    bind = parse_bind_address(address)
    if bind is None:
        return None
    reloader = None
    if tls.has_cert(cert_dir):
        ctx = tls.server_context(cert_dir, tls_options)
        reloader = tls.CertReloader(ctx, cert_dir)
    else:
        log.info("no serving certificate; metrics use a self-signed one", extra={"cert_dir": cert_dir})
        ctx = tls.self_signed_context(options=tls_options)
    app = metrics_server.app(metrics.WORKER_REGISTRY, metrics_server.Authorizer(kube))
    try:
        server = metrics_server.MetricsServer(bind, app, ctx)
    except OSError as exc:
        log.warning("cannot serve metrics", extra={"address": address, "error": str(exc)})
        return None

    def until_stopped() -> None:
        if reloader is not None:
            reloader.watch(stop)
        stop.wait()
        server.shutdown()
        server.server_close()

    threading.Thread(target=server.serve_forever, name="metrics-server", daemon=True).start()
    threading.Thread(target=until_stopped, name="metrics-cert-reloader", daemon=True).start()
    host, port = str(server.server_address[0]), int(server.server_address[1])
    log.info("serving metrics", extra={"address": f"{host}:{port}", "scheme": "https"})
    return host, port


def run(config: Configuration, *, kubeconfig: str | None, lease_namespace: str | None, cert_dir: str) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    cc = config.client_connection
    me = identity()
    # The identity in the User-Agent tells in an audit log which replica made a call.
    kube = k.Kube(kubeconfig, qps=cc.qps, burst=cc.burst, user_agent=f"{k.USER_AGENT} ({me})")
    configure_metrics(config)
    serve_metrics(config.metrics.bind_address, kube, cert_dir, stop, tls_options=tlsoptions.for_config(config))
    informers = k.SharedInformers(kube, stop)
    # Every replica answers the visibility API, standbys included (webhook.visibility.server).
    visibility_server.serve_visibility(config, kube, cert_dir, stop, informers)
    le = config.leader_election
    if not le.leader_elect:
        Manager(kube, config, identity=me, stop=stop, informers=informers).start()
        stop.wait()
        return 0
    settings = LeaseSettings(
        namespace=lease_namespace or le.resource_namespace or config.namespace,
        name=le.resource_name,
        identity=me,
        lease_duration_s=le.lease_duration_s,
        renew_deadline_s=le.renew_deadline_s,
        retry_period_s=le.retry_period_s,
    )
    log.info("waiting for the leader lease", extra={"object": f"{settings.namespace}/{settings.name}", "identity": me})
    elector = LeaderElector(kube, settings)
    # Every write of the Manager, reconcilers and event recorder included, asks the lease first.
    fenced = kube.fenced(elector.holds_lease)
    manager = Manager(fenced, config, identity=me, stop=stop, holds_lease=elector.holds_lease, informers=informers)
    clean = elector.run(manager.start, stop=stop)
    return 0 if clean else 1


MIN_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0
HEALTHY_RUN_S = 30.0


def next_backoff(previous: float, code: int, ran_s: float) -> float:
    """Delay before restarting the worker: doubles while it keeps failing fast (a crash loop must
    not hammer the API server), and starts over after a clean exit or a run that lasted, so a
    replica that lost its lease after hours rejoins the election at once."""
    if code == 0 or ran_s >= HEALTHY_RUN_S:
        return MIN_BACKOFF_S
    return min(previous * 2, MAX_BACKOFF_S)


class Supervisor:
    """Keeps one worker child process running beside the webhook server; stops it on exit."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = [sys.executable, "-m", "webhook", "worker", *argv]
        self.proc: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        backoff = MIN_BACKOFF_S
        while not self._stop.is_set():
            started = time.monotonic()
            self.proc = subprocess.Popen(self.argv)
            log.info("worker process started", extra={"pid": self.proc.pid})
            code = self.proc.wait()
            if self._stop.is_set():
                return
            backoff = next_backoff(backoff, code, time.monotonic() - started)
            log.warning(
                "worker process exited; restarting", extra={"pid": self.proc.pid, "code": code, "backoff_s": backoff}
            )
            self._stop.wait(backoff)

    def terminate(self) -> None:
        """SIGTERM the worker without waiting: it releases the lease at once, while the server may
        keep serving webhooks for a while (its drain); no new worker is started."""
        self._stop.set()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        self.terminate()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
