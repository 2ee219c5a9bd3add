"""A replica stopped as the kubelet stops a pod (SIGTERM to the server process only), against a real
API server: the worker gives the leader lease up at once, while the webhook server drains with
/readyz failing and every request still answered; then both processes are gone."""

from __future__ import annotations

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
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from cluster import Cluster  # e2e/, put on sys.path by conftest.py

import certs
from webhook.api.schema import crds

pytestmark = pytest.mark.cluster

NAMESPACE = "pykueue-shutdown"
LEASE = "c1f6bfd2.kueue.x-k8s.io"
# Long enough that a loaded 2-core machine still sees the release and the 503s inside the drain.
DRAIN_S = 10.0
CONFIG = f"""\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: {NAMESPACE}
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: "0"
"""
T = TypeVar("T")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _until(what: str, value: Callable[[], T | None], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while True:
        if (got := value()) is not None:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.05)


def _holder(cluster: Cluster) -> str | None:
    """The lease's holder identity; "" once released (and while it does not exist yet: None)."""
    proc = cluster.kubectl("get", "lease", "-n", NAMESPACE, LEASE, "-o", "json")
    if proc.returncode != 0:
        return None
    return str(json.loads(proc.stdout)["spec"].get("holderIdentity") or "")


def _status(port: int, ctx: ssl.SSLContext, path: str) -> int:
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=ctx, timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_sigterm_releases_the_lease_at_once_while_the_server_drains(cluster: Cluster, tmp_path: Path) -> None:
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    port = _free_port()
    cluster.kubectl("create", "namespace", NAMESPACE)
    items: list[dict[str, Any]] = crds(certs.ca_bundle(tmp_path), url=f"https://127.0.0.1:{port}/convert")
    applied = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
    )
    assert applied.returncode == 0, applied.stderr
    (tmp_path / "config.yaml").write_text(CONFIG)
    ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    with open(tmp_path / "server.log", "wb") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "webhook",
                "serve",
                "--cert-dir",
                str(tmp_path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--config",
                str(tmp_path / "config.yaml"),
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--leader-election-namespace",
                NAMESPACE,
                "--drain-seconds",
                str(DRAIN_S),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        holder = _until("the worker holding the lease", lambda: _holder(cluster) or None, timeout=60)
        worker_pid = int(holder.rsplit("_", 2)[1])
        assert _status(port, ctx, "/readyz") == 200

        sent = time.monotonic()
        server.send_signal(signal.SIGTERM)  # the server alone, as the kubelet signals a container's PID 1
        # Released while the server still drains (not at its exit, nor when the lease would expire).
        _until("the lease released", lambda: True if _holder(cluster) == "" else None, timeout=DRAIN_S / 2)
        # Still inside the drain: not ready, yet serving.
        assert (_status(port, ctx, "/readyz"), _status(port, ctx, "/healthz")) == (503, 200)
        assert time.monotonic() - sent < DRAIN_S

        assert server.wait(timeout=DRAIN_S + 10) == 0
        assert time.monotonic() - sent >= DRAIN_S
        _until("the worker gone", lambda: True if not _alive(worker_pid) else None, timeout=5)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)  # the worker too: it shares the server's session
            server.wait(timeout=10)
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
        log_text = (tmp_path / "server.log").read_text(errors="replace")
        print(log_text[-4000:])
