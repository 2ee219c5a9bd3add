"""`python -m webhook dashboard`: watch caches in threads, the app under uvicorn, in its own process.

The dashboard never shares a process with the webhook or the worker: a page render or a slow
browser must not delay an AdmissionReview or a scheduling cycle.
"""

from __future__ import annotations

import logging
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from webhook import kube as k
from webhook.dashboard.app import Settings, create_app
from webhook.dashboard.auth import Authorizer
from webhook.dashboard.history import History
from webhook.dashboard.store import KINDS, Store

__all__ = ["Options", "run", "start_informers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Options:
    host: str = "0.0.0.0"
    port: int = 8080
    kubeconfig: str | None = None  # None: in-cluster
    cert_dir: Path | None = None  # tls.crt and tls.key; plain HTTP without
    sample_every_s: float = 10.0
    root_path: str = ""  # when served under a prefix (e.g. the API server's service proxy)


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
    app = create_app(
        Settings(
            store=store,
            authorizer=Authorizer(kube),
            kube=kube,
            history=History(),
            sample_every_s=options.sample_every_s,
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
    if options.cert_dir is not None:
        config.ssl_certfile = str(options.cert_dir / "tls.crt")
        config.ssl_keyfile = str(options.cert_dir / "tls.key")
        config.ssl_version = ssl.PROTOCOL_TLS_SERVER
    scheme = "https" if options.cert_dir else "http"
    log.info("serving the dashboard", extra={"address": f"{scheme}://{options.host}:{options.port}"})
    try:
        uvicorn.Server(config).run()
    finally:
        stop.set()
    return 0
