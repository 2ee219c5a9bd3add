"""Our whole stack on a local control plane: cluster + CRDs + our server (host process) + webhooks.

Pods of a local kwok cluster cannot run our image, so the server runs on the host and the
webhook configurations and CRD conversion point at https://127.0.0.1:PORT with the caBundle
from `certs`; the visibility APIServices reach the worker's visibility port through an
ExternalName Service `localhost` (`webhook.install.visibility.local_objects`).
With `integrations` (`make up INTEGRATIONS=jobset,lws,appwrapper,trainer,training-operator,mpi-operator`)
the operators those need run beside it (e2e/operators.py) and the server's Configuration enables each one's
frameworks we implement. With `autoscaler` (`make up AUTOSCALER=1`) a real cluster-autoscaler with its kwok
cloud provider answers ProvisioningRequests (e2e/autoscaler.py).
`python e2e/stack.py up|down [--dir DIR] [--integrations LIST] [--autoscaler]`; `make up` / `make down` call it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "e2e")]

from autoscaler import Autoscaler  # noqa: E402
from cluster import NODES, Cluster, FakeNode, HostExec  # noqa: E402
from operators import Operators, frameworks, parse_list  # noqa: E402

import certs  # noqa: E402
from webhook.admission.registration import webhook_configurations  # noqa: E402
from webhook.api import integrations as api_integrations  # noqa: E402
from webhook.api.schema import crds  # noqa: E402
from webhook.dashboard.auth import AUDIENCE  # noqa: E402
from webhook.install import visibility  # noqa: E402
from webhook.install.rbac import METRICS_READER, metrics_reader_role, user_roles  # noqa: E402

DEFAULT_DIR = ROOT / ".run"
#: The ServiceAccount the e2e suite scrapes the worker's /metrics as (bound to kueue-metrics-reader).
METRICS_SCRAPER = ("kueue-system", "e2e-metrics-scraper")
SERVER_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
integrations:
  frameworks: ["batch/job", "pod", "deployment", "statefulset"]
metrics:
  bindAddress: "127.0.0.1:{metrics_port}"
  enableClusterQueueResources: true
visibilityServer:
  bindAddress: 127.0.0.1
  bindPort: {visibility_port}
health:
  healthProbeBindAddress: "127.0.0.1:{health_port}"
"""


def _log(msg: str) -> None:
    print(f"stack: {msg}", file=sys.stderr, flush=True)


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` over `base`, section by section: an extra `metrics:` keeps the base's bindAddress (the
    Configuration decoder refuses a key given twice)."""
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        out[key] = merged(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(
    proc: subprocess.Popen[bytes], url: str, ctx: ssl.SSLContext | None, name: str, log_file: Path, timeout: float = 60
) -> None:
    """Until `url` answers 200; a process that exits first fails at once, naming its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StackError(f"{name} start", f"exited with {proc.returncode}; see {log_file}")
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise StackError(f"{name} ready", f"no ready answer from {url} within {timeout:.0f}s; see {log_file}")


def wait_listening(proc: subprocess.Popen[bytes], port: int, name: str, log_file: Path, timeout: float = 60) -> None:
    """Until something accepts on 127.0.0.1:`port`; a process that exits first fails at once, naming its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StackError(f"{name} start", f"exited with {proc.returncode}; see {log_file}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return
        except OSError:
            time.sleep(0.3)
    raise StackError(f"{name} ready", f"nothing listens on 127.0.0.1:{port} within {timeout:.0f}s; see {log_file}")


def _stop(pid_file: Path, proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the process group recorded in `pid_file` (ours or an earlier run's), SIGKILL after 5 s."""
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    try:
        os.killpg(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc is not None:
        proc.wait(timeout=10)
    pid_file.unlink(missing_ok=True)


class StackError(RuntimeError):
    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"stack: step '{step}' failed: {detail}")


class Stack:
    """One local stack rooted at a state directory; `up()` starts fresh, `down()` stops all of it."""

    def __init__(
        self,
        directory: Path | str = DEFAULT_DIR,
        *,
        teardown_on_exit: bool = True,
        job_pods_run: float | None = None,
        host_exec: HostExec | None = None,
        integrations: Iterable[str] = (),
        nodes: Sequence[FakeNode] = NODES,
        cluster_args: Mapping[str, Any] | None = None,
        command_prefix: Sequence[str] = (),
        dashboard: bool = True,
        autoscaler: bool = False,
    ) -> None:
        """`job_pods_run`, `host_exec` and `nodes`: the kwok behaviours and fake nodes, as `Cluster` takes them;
        `integrations`: the operators to run (e2e/operators.py names). `cluster_args`: more `Cluster` keywords
        (where its API server listens: e2e/multicluster.py). `command_prefix`: what the server runs under (a
        private mount namespace with its own /etc/hosts, for a MultiKueue manager). `dashboard`: start it.
        `autoscaler`: run cluster-autoscaler (and install the ProvisioningRequest CRD) before our server."""
        self.dir = Path(directory).resolve()
        self.cluster = Cluster(
            self.dir / "cluster",
            teardown_on_exit=teardown_on_exit,
            job_pods_run=job_pods_run,
            host_exec=host_exec,
            nodes=nodes,
            **(cluster_args or {}),
        )
        self.command_prefix = tuple(command_prefix)
        self.dashboard = dashboard
        self.operators = Operators(self.dir / "operators", self.cluster, integrations)
        self.with_autoscaler = autoscaler
        self.autoscaler = Autoscaler(self.dir / "autoscaler", self.cluster)
        self.cert_dir = self.dir / "certs"
        self.pid_file = self.dir / "server.pid"
        self.port_file = self.dir / "server.port"
        self.metrics_port_file = self.dir / "metrics.port"  # the worker's /metrics (HTTPS, loopback)
        self.visibility_port_file = self.dir / "visibility.port"  # the worker's visibility API (HTTPS, loopback)
        self.server_log = self.dir / "server.log"
        self.dashboard_pid_file = self.dir / "dashboard.pid"
        self.dashboard_port_file = self.dir / "dashboard.port"
        self._server: subprocess.Popen[bytes] | None = None
        self._dashboard: subprocess.Popen[bytes] | None = None
        self._metrics_token: str | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    @property
    def port(self) -> int:
        return int(self.port_file.read_text())

    @property
    def metrics_url(self) -> str:
        """The worker's `/metrics` (HTTPS on loopback, from the Configuration's metrics.bindAddress)."""
        return f"https://127.0.0.1:{int(self.metrics_port_file.read_text())}/metrics"

    def scrape_metrics(self, token: str | None) -> tuple[int, str]:
        """GET the worker's `/metrics` with `token` as bearer, verifying its certificate (the webhook's,
        signed by our CA); (status, body) whatever the status."""
        ctx = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        req = urllib.request.Request(self.metrics_url, headers={"Authorization": f"Bearer {token}"} if token else {})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics_token(self) -> str:
        """A token of a ServiceAccount bound to `kueue-metrics-reader`, made once per Stack object (so once
        per e2e session), as a Prometheus would get one."""
        if self._metrics_token is None:
            namespace, name = METRICS_SCRAPER
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_READER},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
            account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
            self.apply([metrics_reader_role(), account, binding])
            # The authorizer sees the binding through its own watch, a moment after the create; a 403 the
            # worker got meanwhile would stay in its authorization cache for 30 s.
            deadline = time.monotonic() + 30
            while (
                self.kubectl(
                    "auth", "can-i", "get", "/metrics", f"--as=system:serviceaccount:{namespace}:{name}", check=False
                ).stdout.strip()
                != "yes"
            ):
                if time.monotonic() > deadline:
                    raise StackError("metrics token", f"{namespace}/{name} is still not allowed to get /metrics")
                time.sleep(0.2)
            self._metrics_token = self.kubectl(
                "create", "token", name, "-n", namespace, "--duration=24h"
            ).stdout.strip()
        return self._metrics_token

    def metrics_text(self) -> str:
        """The worker's exposition, scraped as an authorized reader."""
        status, body = self.scrape_metrics(self.metrics_token())
        if status != 200:
            raise StackError("scrape metrics", f"{self.metrics_url} answered {status}: {body.strip()}")
        return body

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, input=input, check=check)

    def apply(self, objects: list[dict[str, Any]]) -> None:
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        self.kubectl(
            "apply", "--server-side", "--force-conflicts", "--field-manager=pykueue-stack", "-f", "-", input=doc
        )

    def up(self, extra_config: str = "") -> Stack:
        """Start fresh (the dashboard included); `extra_config` (top-level Configuration YAML) is merged into the server's default one."""
        started = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._stop_server()
        for log in (self.server_log, self.dir / "dashboard.log"):  # a restart within this run appends
            log.write_bytes(b"")
        self.cluster.up()
        self.operators.up()  # their CRDs exist before our server watches them
        if self.with_autoscaler:
            self.autoscaler.up()  # so does the ProvisioningRequest CRD
        # The aggregator checks the visibility server's certificate against the Service's DNS name.
        certs.write_bundle(self.cert_dir, ["127.0.0.1", "localhost", f"{visibility.SERVICE}.kueue-system.svc"])
        ca_bundle = certs.ca_bundle(self.cert_dir)
        port = _free_port()
        self.port_file.write_text(str(port))
        visibility_port = _free_port()
        self.visibility_port_file.write_text(str(visibility_port))
        base = f"https://127.0.0.1:{port}"
        _log("installing CRDs")
        self.apply(crds(ca_bundle, url=f"{base}/convert"))
        self._wait_established()
        self.kubectl("create", "namespace", "kueue-system", check=False)
        self._start_server(port, extra_config)
        _log("registering webhooks")
        self.apply(webhook_configurations(ca_bundle, url=base))
        _log("registering the visibility API (APIService -> ExternalName localhost)")
        self.apply(
            [
                *visibility.local_objects("kueue-system", port=visibility_port, ca_bundle=ca_bundle),
                *visibility.auth_objects("kueue-system", "kueue-controller-manager"),
                *user_roles(),
            ]
        )
        if self.dashboard:
            self._start_dashboard()
        _log(f"up in {time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}")
        return self

    def _wait_established(self) -> None:
        """`kubectl wait` errors out instead of waiting when a CRD has no status.conditions yet (right
        after the apply, on a busy host): try again until the deadline."""
        deadline = time.monotonic() + 60
        while True:
            res = self.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all", check=False)
            if res.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise StackError("CRDs established", res.stderr.strip())
            time.sleep(0.5)

    def restart_server(self, extra_config: str = "") -> None:
        """Restart our server with `extra_config` (top-level Configuration YAML) merged into the default one;
        the old process releases the lease on SIGTERM, so the new worker takes over at once."""
        self._stop_server()
        self._start_server(self.port, extra_config)

    def start_integrations(self, names: Iterable[str]) -> None:
        """Run the operators of `names` beside a stack already up and restart our server with their frameworks
        enabled, as `up` does for the `integrations` it was made with (an e2e module's fixture: one control
        plane for the session, the operators for one module). Raises OperatorError naming the step."""
        self.operators.down()
        self.operators = Operators(self.dir / "operators", self.cluster, names)
        self.operators.up()
        self.restart_server()

    def stop_integrations(self) -> None:
        """Undo `start_integrations`: the operators stopped and their webhooks removed, our server restarted
        with the default frameworks."""
        self.operators.uninstall()
        self.operators = Operators(self.dir / "operators", self.cluster)
        self.restart_server()

    def start_autoscaler(self) -> None:
        """Run cluster-autoscaler beside a stack already up and restart our server, whose worker then finds the
        ProvisioningRequest API at once (an e2e module's fixture). Raises AutoscalerError naming the step."""
        self.autoscaler.up()
        self.restart_server()

    def stop_autoscaler(self) -> None:
        """Undo `start_autoscaler`: the autoscaler stopped and its nodes deleted (the CRD stays)."""
        self.autoscaler.down()

    def _start_server(self, port: int, extra_config: str = "") -> None:
        config = self.dir / "server-config.yaml"
        metrics_port = _free_port()
        self.metrics_port_file.write_text(str(metrics_port))
        base = yaml.safe_load(
            SERVER_CONFIG.format(
                metrics_port=metrics_port,
                visibility_port=int(self.visibility_port_file.read_text()),
                health_port=_free_port(),
            )
        )
        enabled, lacking = frameworks(self.operators.ops, (f.name for f in api_integrations.implemented()))
        if lacking:
            _log(f"operators run for {', '.join(lacking)}, which the server does not implement: not enabled")
        base["integrations"]["frameworks"] += enabled
        # a framework behind an alpha gate (SparkApplication) runs only with its gate on, as upstream's
        gates = {f.feature_gate: True for f in api_integrations.enabled(enabled) if f.feature_gate}
        if gates:
            base["featureGates"] = {**base.get("featureGates", {}), **gates}
        config.write_text(json.dumps(merged(base, yaml.safe_load(extra_config) or {})))
        with open(self.server_log, "ab") as out:
            self._server = subprocess.Popen(
                [
                    *self.command_prefix,
                    sys.executable,
                    "-m",
                    "webhook",
                    "serve",
                    "--cert-dir",
                    str(self.cert_dir),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--config",
                    str(config),
                    "--kubeconfig",
                    str(self.kubeconfig),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        self.pid_file.write_text(str(self._server.pid))
        ctx = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        wait_ready(self._server, f"https://127.0.0.1:{port}/readyz", ctx, "server", self.server_log)
        # The webhook answers before the worker process it supervises serves /metrics; tests scrape at once.
        wait_listening(self._server, metrics_port, "worker metrics", self.server_log)
        _log(f"server ready on 127.0.0.1:{port} (pid {self._server.pid})")

    def _stop_server(self) -> None:
        _stop(self.pid_file, self._server)
        self._server = None

    @property
    def dashboard_url(self) -> str:
        return f"https://127.0.0.1:{int(self.dashboard_port_file.read_text())}"

    def dashboard_line(self) -> str:
        """The dashboard's URL and how to get a token for its sign-in page, one line (`make up`, `make run`)."""
        return (
            f"dashboard: {self.dashboard_url}  (certificate from {self.cert_dir / 'ca.crt'}; sign in with a token, e.g. "
            f"`kubectl --kubeconfig {self.kubeconfig} create token <serviceaccount> -n <namespace> "
            f"--audience={AUDIENCE}`)"
        )

    def _start_dashboard(self) -> None:
        """The dashboard as its own host process, over TLS with the stack's certificate (the server's, for
        127.0.0.1), taking tokens bound to its audience only, sampling History every second."""
        port = _free_port()
        self.dashboard_port_file.write_text(str(port))
        with open(self.dir / "dashboard.log", "ab") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "webhook",
                    "dashboard",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "--cert-dir",
                    str(self.cert_dir),
                    "--sample-every",
                    "1",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        self._dashboard = proc
        self.dashboard_pid_file.write_text(str(proc.pid))
        ctx = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        wait_ready(proc, f"{self.dashboard_url}/healthz", ctx, "dashboard", self.dir / "dashboard.log")
        _log(f"dashboard on {self.dashboard_url} (pid {proc.pid})")

    def _stop_dashboard(self) -> None:
        _stop(self.dashboard_pid_file, self._dashboard)
        self._dashboard = None

    def down(self) -> None:
        self._stop_dashboard()
        self._stop_server()
        self.autoscaler.down()
        self.operators.down()
        self.cluster.down()

    def __enter__(self) -> Stack:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--dir", default=str(DEFAULT_DIR))
    parser.add_argument(
        "--integrations",
        default="",
        help="operators to run beside the server, comma-separated: jobset,lws,appwrapper,trainer",
    )
    parser.add_argument(
        "--autoscaler",
        action="store_true",
        help="run cluster-autoscaler (kwok cloud provider) answering ProvisioningRequests",
    )
    args = parser.parse_args(argv)
    stack = Stack(
        args.dir, teardown_on_exit=False, integrations=parse_list(args.integrations), autoscaler=args.autoscaler
    )
    try:
        if args.command == "up":
            stack.up()
            print(stack.kubeconfig)
            print(stack.dashboard_line())
        else:
            stack.down()
    except (StackError, RuntimeError) as exc:
        print(str(exc), file=sys.stderr)
        if args.command == "up":
            stack.down()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
