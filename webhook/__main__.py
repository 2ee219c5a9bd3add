"""Command line: `python -m webhook certs|serve|worker|dashboard|service-ready ...`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webhook.config import Configuration

__all__ = ["main"]

log = logging.getLogger("webhook")


def _configure(args: argparse.Namespace) -> Configuration | None:
    """Set up logging, then load and check `--config` with `--feature-gates`, as serve and the worker
    both start: the configuration, or None (said on stderr) when it is invalid."""
    from webhook import logs
    from webhook.config import ConfigError, check_implemented, load, support

    logs.setup(logs.zap_level(args.zap_log_level) if args.zap_log_level else args.log_level)
    try:
        config = load(args.config, args.feature_gates)
        check_implemented(config)
    except ConfigError as exc:
        flag = f" with --feature-gates={args.feature_gates}" if args.feature_gates else ""
        print(f"invalid configuration {args.config or '(defaults)'}{flag}: {exc}", file=sys.stderr)
        return None
    for note in support.accepted_without_effect(config):
        log.info("configuration option accepted without effect", extra={"option": note})
    return config


def _zap_level(value: str) -> str:
    """argparse type of `--zap-log-level`: checked now, kept as given (it is passed on to the worker)."""
    from webhook import logs

    try:
        logs.zap_level(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _manager_flags(p: argparse.ArgumentParser) -> None:
    """The flags serve and worker share with upstream's manager (cmd/kueue/main.go) besides --config."""
    p.add_argument(
        "--feature-gates",
        default="",
        help="A=true,B=false: feature gates, in place of the Configuration's featureGates (naming gates in both "
        "is an error, as upstream's manager)",
    )
    level = p.add_mutually_exclusive_group()
    level.add_argument("--log-level", default="INFO", help="a Python level name (default: INFO)")
    level.add_argument(
        "--zap-log-level",
        type=_zap_level,
        help="upstream's flag: debug, info, error, panic, or N > 0 for verbosity V(N); our info lines are V(0) "
        "and our debug lines V(10)",
    )


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from webhook import tls
    from webhook.admission.app import create_app
    from webhook.admission.context import Lookups, StaticLookups
    from webhook.config import tlsoptions

    config = _configure(args)
    if config is None:
        return 2
    lookups: Lookups = StaticLookups()
    ready: Callable[[], bool] = lambda: True  # noqa: E731
    if args.kubeconfig or args.in_cluster:
        from webhook.admission.lookups import ClusterLookups
        from webhook.kube import Kube

        cluster = ClusterLookups(Kube(args.kubeconfig))
        cluster.start()
        lookups, ready = cluster, cluster.synced
    cert_dir = args.cert_dir or config.webhook.cert_dir
    if args.in_cluster and config.internal_cert_management.enable:  # certificates without cert-manager
        from webhook import certmanager

        try:
            ready = certmanager.bootstrap(config, cert_dir, ready=ready)
        except certmanager.BootstrapError as exc:
            print(f"internal certificate management: {exc}", file=sys.stderr)
            return 2
    try:
        ssl_context = tls.server_context(cert_dir, tlsoptions.for_config(config))
    except (OSError, ValueError) as exc:
        print(f"cannot load tls.crt/tls.key from {cert_dir}: {exc}", file=sys.stderr)
        return 2
    supervisor = None
    if (args.kubeconfig or args.in_cluster) and not args.no_worker:
        from webhook.worker.process import Supervisor

        supervisor = Supervisor(_worker_argv(args))
        supervisor.start()
    # Draining after SIGTERM (admission.shutdown): readiness fails while requests are still served.
    # Off outside a cluster by default: there, no Service endpoint has to drop this process first.
    from webhook.admission import shutdown

    drain_s = (
        args.drain_seconds if args.drain_seconds is not None else (shutdown.DEFAULT_DRAIN_S if args.in_cluster else 0.0)
    )
    draining = threading.Event()
    forward = (
        shutdown.ServiceForwarder.for_service(
            config.internal_cert_management.webhook_service_name, config.namespace, Path(cert_dir)
        )
        if args.in_cluster and drain_s > 0
        else None
    )
    app = shutdown.WhileDraining(
        create_app(config, lookups, ready=lambda: not draining.is_set() and ready()), draining, forward
    )
    port = args.port or config.webhook.port
    host = args.host or config.webhook.host or "0.0.0.0"
    # Slow clients: a request must arrive within a deadline (slowclients); `limit_concurrency` counts
    # connections, so it sits above the guard's connection cap and only bounds runaway tasks.
    from webhook.admission import slowclients

    slowclients.pin_mmap_threshold()
    uv_config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        http=slowclients.GuardedHttpToolsProtocol,
        timeout_keep_alive=30,
        limit_concurrency=2 * slowclients.MAX_CONNECTIONS,
    )
    uv_config.load()
    uv_config.ssl = ssl_context
    server = shutdown.GracefulServer(
        uv_config,
        draining=draining,
        drain_s=drain_s,
        on_drain=supervisor.terminate if supervisor is not None else lambda: None,
    )
    # controller-runtime's probe server (health.healthProbeBindAddress): ready once the webhook server
    # listens, as upstream's readyz check (its StartedChecker), and not while draining.
    from webhook import health

    try:
        health.serve_probes(config.health, lambda: server.started and not draining.is_set() and ready())
    except OSError as exc:
        print(f"cannot serve health probes on {config.health.health_probe_bind_address}: {exc}", file=sys.stderr)
        if supervisor is not None:
            supervisor.stop()
        return 2
    reloader = tls.CertReloader(ssl_context, cert_dir)

    async def run() -> None:
        task = asyncio.create_task(reloader.run())
        try:
            await server.serve()
        finally:
            task.cancel()

    log.info("serving webhooks", extra={"address": f"{host}:{port}", "cert_dir": str(cert_dir)})
    try:
        asyncio.run(run())
    finally:
        if supervisor is not None:
            supervisor.stop()
    return 0


def _worker_argv(args: argparse.Namespace) -> list[str]:
    out = ["--zap-log-level", args.zap_log_level] if args.zap_log_level else ["--log-level", args.log_level]
    if args.feature_gates:
        out.append(f"--feature-gates={args.feature_gates}")
    if args.cert_dir:  # the worker's metrics server serves the webhook's certificate
        out += ["--cert-dir", args.cert_dir]
    if args.config:
        out += ["--config", args.config]
    if args.kubeconfig:
        out += ["--kubeconfig", args.kubeconfig]
    if args.in_cluster:
        out.append("--in-cluster")
    if args.leader_election_namespace:
        out += ["--leader-election-namespace", args.leader_election_namespace]
    return out


def _worker(args: argparse.Namespace) -> int:
    import os

    from webhook.worker import process

    config = _configure(args)
    if config is None:
        return 2
    if not (args.kubeconfig or args.in_cluster):
        print("the worker needs --kubeconfig or --in-cluster", file=sys.stderr)
        return 2
    code = process.run(
        config,
        kubeconfig=args.kubeconfig,
        lease_namespace=args.leader_election_namespace,
        cert_dir=args.cert_dir or config.webhook.cert_dir,
    )
    logging.shutdown()
    os._exit(code)  # informer threads may sit in a blocking watch read


def _dashboard(args: argparse.Namespace) -> int:
    from webhook import logs
    from webhook.dashboard.server import Options, run

    logs.setup(args.log_level)
    if not (args.kubeconfig or args.in_cluster):
        print("the dashboard needs --kubeconfig or --in-cluster", file=sys.stderr)
        return 2
    return run(
        Options(
            host=args.host,
            port=args.port,
            kubeconfig=args.kubeconfig,
            cert_dir=Path(args.cert_dir) if args.cert_dir else None,
            plain_http=args.plain_http,
            tls_hosts=tuple(args.tls_host),
            audiences=tuple(a for a in args.audience if a),
            sample_every_s=args.sample_every,
            root_path=args.root_path,
        )
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m webhook", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("certs", help="write ca.crt, tls.crt and tls.key for the given hosts; print the caBundle")
    c.add_argument("--out", required=True)
    c.add_argument("--host", action="append", required=True, help="DNS name or IP (repeatable)")
    s = sub.add_parser("serve", help="serve the admission and conversion webhooks over TLS")
    s.add_argument("--cert-dir", help="directory with tls.crt and tls.key (default: the Configuration's)")
    s.add_argument("--port", type=int, help="port (default: the Configuration's webhook.port, 9443)")
    s.add_argument("--host", help="address to bind (default: all)")
    s.add_argument("--config", help="Kueue Configuration file (config.kueue.x-k8s.io v1beta1 or v1beta2)")
    s.add_argument("--kubeconfig", help="kubeconfig for the cluster whose namespaces and queues the webhook reads")
    s.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    _manager_flags(s)
    s.add_argument("--no-worker", action="store_true", help="do not start the admission worker process")
    s.add_argument(
        "--drain-seconds",
        type=float,
        help="after SIGTERM, keep serving this long with /readyz failing, so Service endpoints drop "
        "this replica first (default: 5 with --in-cluster, else 0; keep it below the pod's "
        "terminationGracePeriodSeconds)",
    )
    s.add_argument(
        "--leader-election-namespace", help="namespace of the leader Lease (default: the Configuration's, kueue-system)"
    )
    w = sub.add_parser("worker", help="the admission worker alone (leader-elected)")
    w.add_argument("--config", help="Kueue Configuration file")
    w.add_argument(
        "--cert-dir",
        help="tls.crt and tls.key for /metrics (default: the Configuration's webhook.certDir; self-signed when absent)",
    )
    w.add_argument("--kubeconfig")
    w.add_argument("--in-cluster", action="store_true")
    _manager_flags(w)
    w.add_argument("--leader-election-namespace")
    d = sub.add_parser("dashboard", help="the queue dashboard (its own process)")
    d.add_argument("--host", default="0.0.0.0")
    d.add_argument("--port", type=int, default=8080)
    d.add_argument("--kubeconfig")
    d.add_argument("--in-cluster", action="store_true")
    d.add_argument(
        "--cert-dir", help="serve HTTPS with tls.crt and tls.key from here (default: a self-signed certificate)"
    )
    d.add_argument("--tls-host", action="append", default=[], help="a name of the self-signed certificate (repeatable)")
    d.add_argument(
        "--plain-http", action="store_true", help="no TLS (only behind a TLS-terminating proxy or on loopback)"
    )
    d.add_argument(
        "--audience",
        action="append",
        default=None,
        help="accept only tokens bound to this audience (repeatable; default: kueue-dashboard, as made by "
        "`kubectl create token <sa> --audience=kueue-dashboard`; '' for the API server's own)",
    )
    d.add_argument("--sample-every", type=float, default=10.0, help="seconds between History samples")
    d.add_argument("--root-path", default="", help="URL prefix when served under one")
    d.add_argument("--log-level", default="INFO")
    r = sub.add_parser(
        "service-ready",
        help="wait until a Service answers GET /readyz through its ClusterIP (the Helm chart's post-install hook)",
    )
    r.add_argument("--service", required=True)
    r.add_argument("--namespace", required=True)
    r.add_argument("--path", default="/readyz")
    r.add_argument("--successes", type=int, default=3, help="answers in a row, 0.5 s apart")
    r.add_argument("--timeout", type=float, default=300.0, help="seconds before giving up (exit 1)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "service-ready":
        from webhook.install import service_ready

        return service_ready.main(
            args.service, args.namespace, path=args.path, successes=args.successes, timeout_s=args.timeout
        )
    if args.command == "dashboard":
        if args.audience is None:
            from webhook.dashboard.auth import AUDIENCE

            args.audience = [AUDIENCE]
        return _dashboard(args)
    if args.command == "worker":
        return _worker(args)
    if args.command == "certs":
        import certs

        return certs.cli_main(["--out", args.out, *[x for h in args.host for x in ("--host", h)]])
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
