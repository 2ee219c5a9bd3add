"""`python -m webhook dashboard`: watch caches in threads, the app under uvicorn, in its own process.

The dashboard never shares a process with the webhook or the worker: a page render or a slow
browser must not delay an AdmissionReview or a scheduling cycle.

It serves TLS unless told `--plain-http`: sign-in tokens must not cross a network in clear.
The context is `webhook/tls.py`'s (TLS 1.2+, forward-secret ciphers), as the webhook's: loaded
from `--cert-dir` and re-loaded when the files rotate, or, without one, a certificate made in
memory for localhost and the `--tls-host` names.
"""

from __future__ import annotations

import logging
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from webhook import kube as k
from webhook import tls
from webhook.dashboard.app import Settings, create_app
from webhook.dashboard.auth import AUDIENCE, Authorizer
from webhook.dashboard.history import History
from webhook.dashboard.store import KINDS, Store

__all__ = ["Options", "run", "server_tls", "start_informers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Options:
    host: str = "0.0.0.0"
    port: int = 8080
    kubeconfig: str | None = None  # None: in-cluster
    cert_dir: Path | None = None  # tls.crt and tls.key; a self-signed certificate without
    plain_http: bool = False  # no TLS at all (a TLS-terminating proxy in front, or loopback only)
    tls_hosts: tuple[str, ...] = ()  # names of the self-signed certificate, beyond localhost
    audiences: tuple[str, ...] = (AUDIENCE,)  # a sign-in token must be bound to one of them
    sample_every_s: float = 10.0
    root_path: str = ""  # when served under a prefix (e.g. the API server's service proxy)


def server_tls(options: Options) -> tuple[ssl.SSLContext | None, tls.CertReloader | None]:
    """The serving context (None for plain HTTP), and its reloader when the certificate is on disk."""
    if options.plain_http:
        return None, None
    if options.cert_dir is not None:
        ctx = tls.server_context(options.cert_dir)
        return ctx, tls.CertReloader(ctx, options.cert_dir)
    return tls.self_signed_context(("localhost", "127.0.0.1", *options.tls_hosts)), None


def start_informers(kube: k.Kube, store: Store, stop: threading.Event) -> list[threading.Thread]:
    """One list-and-watch thread per kind; the store is the only thing they write."""
    threads = []
    for kind, path in KINDS.items():
        t = threading.Thread(
            target=k.informer,
            args=(
                kube,
                path,
                lambda items, kind=kind: store.replace(kind, items),
                lambda event, obj, kind=kind: store.apply(kind, event, obj),
            ),
            kwargs={"stop": stop},
            name=f"dashboard-{kind.value}",
            daemon=True,
        )
        t.start()
        threads.append(t)
    return threads


def run(options: Options) -> int:
    kube = k.Kube(options.kubeconfig)
    store = Store()
    stop = threading.Event()
    start_informers(kube, store, stop)
    ctx, reloader = server_tls(options)
    app = create_app(
        Settings(
            store=store,
            authorizer=Authorizer(kube, audiences=options.audiences),
            kube=kube,
            history=History(),
            sample_every_s=options.sample_every_s,
            secure_cookies=ctx is not None,
        )
    )
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_config=None,
        access_log=False,
        root_path=options.root_path,
        timeout_graceful_shutdown=2,
    )
    config.load()
    config.ssl = ctx  # uvicorn would build its own context from files; ours is webhook/tls.py's
    if reloader is not None:
        threading.Thread(target=reloader.watch, args=(stop,), name="dashboard-tls", daemon=True).start()
    scheme = "https" if ctx is not None else "http"
    log.info(
        "serving the dashboard",
        extra={"address": f"{scheme}://{options.host}:{options.port}", "audiences": list(options.audiences)},
    )
    try:
        uvicorn.Server(config).run()
    finally:
        stop.set()
    return 0
