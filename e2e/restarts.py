"""Restarts of a host-process system when an upstream suite restarts Kueue's Deployment.

Upstream's sequential specs reconfigure Kueue as a platform engineer would
(`test/util/e2e.go` `UpdateKueueConfigurationAndRestart`): they write ConfigMap
kueue-system/kueue-manager-config, set the Deployment kueue-controller-manager's template annotation
`kubectl.kubernetes.io/restartedAt`, then wait for the rollout (`WaitForKueueAvailability`: the
Deployment available, the webhook Service's endpoints the new pods, a dry-run create answered by the
webhook, the Lease renewed after that). Where the system runs on the host beside a kwok stand-in
Deployment (e2e/upstream_suite.py), `RestartSupervisor` follows that annotation on one cluster: each
new value restarts the system with the ConfigMap's Configuration, while the real kube-controller-manager
rolls the stand-in's pods over. The old process is stopped as soon as the annotation changes, so the
suite's webhook probe, and the Lease renewal it then waits for, are answered by the new one only.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from cluster import Cluster  # noqa: E402

from webhook.install import objects  # noqa: E402

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
#: One line per watch event: the annotation's value (empty when unset).
_JSONPATH = "{.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}{'\\n'}"
#: What a host-process system binds on the host: its own, whatever the ConfigMap says after a round trip
#: through upstream's Configuration type.
HOST_BOUND = ("health", "webhook", "visibilityServer", "internalCertManagement")


def log(msg: str) -> None:
    print(f"restarts: {msg}", file=sys.stderr, flush=True)


def without_host_bindings(config: dict[str, object]) -> dict[str, object]:
    """`config` less the sections that say where a host-process system listens (and the metrics
    address): the system keeps its own."""
    out = {k: v for k, v in config.items() if k not in HOST_BOUND}
    metrics = out.get("metrics")
    if isinstance(metrics, dict):
        out["metrics"] = {k: v for k, v in metrics.items() if k != "bindAddress"}
    return out


class RestartSupervisor:
    """Restarts `name`'s system on `cluster` through `restart(configuration text)` whenever the
    stand-in Deployment's `restartedAt` annotation takes a new value (a context manager)."""

    def __init__(self, name: str, cluster: Cluster, restart: Callable[[str], None]) -> None:
        self.name = name
        self.cluster = cluster
        self.restart = restart
        self._stop = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"restarts-{name}", daemon=True)
        self.restarts = 0

    def __enter__(self) -> RestartSupervisor:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.terminate()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        seen: str | None = None
        while not self._stop.is_set():  # a watch ends now and then (the API server's timeout): resume it
            seen = self._watch(seen)
            self._stop.wait(1.0)

    def _watch(self, seen: str | None) -> str | None:
        with self._lock:
            if self._stop.is_set():
                return seen
            self._proc = subprocess.Popen(
                [
                    str(self.cluster.bin_dir / "kubectl"),
                    f"--kubeconfig={self.cluster.kubeconfig}",
                    "-n",
                    "kueue-system",
                    "get",
                    f"deployment/{objects.DEPLOYMENT}",
                    "--watch",
                    "-o",
                    f"jsonpath={_JSONPATH}",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
            proc = self._proc
        assert proc.stdout is not None
        for line in proc.stdout:
            value = line.strip()
            if seen is not None and value != seen and value:
                self._restart(value)
            seen = value
        proc.wait()
        return seen

    def _restart(self, value: str) -> None:
        res = self.cluster.kubectl(
            "-n", "kueue-system", "get", "configmap", objects.CONFIG_MAP, "-o", f"jsonpath={{.data.{_key()}}}"
        )
        if res.returncode != 0:
            log(f"{self.name}: cannot read the ConfigMap for the restart of {value}: {res.stderr.strip()}")
            return
        log(f"{self.name}: restartedAt {value}: restarting the system with the ConfigMap's Configuration")
        try:
            self.restart(res.stdout)
        except Exception as exc:  # the suite sees the system unavailable and fails the spec
            log(f"{self.name}: restart failed: {exc}")
            return
        self.restarts += 1
        log(f"{self.name}: system restarted")


def _key() -> str:
    """The ConfigMap key in a jsonpath (its dots escaped)."""
    return objects.CONFIG_FILE.replace(".", "\\.")


def parse(config_text: str) -> dict[str, object]:
    """A Configuration as the suite wrote it (YAML from Go's marshaller), as a dict."""
    doc = yaml.safe_load(config_text)
    if not isinstance(doc, dict):
        raise ValueError("the ConfigMap holds no Configuration object")
    return doc
