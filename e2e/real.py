#!/usr/bin/env python3
"""`make e2e-real`: our image, installed as users install it, on a real node, under the e2e suite.

For each install (`make deploy`, then `helm install` of charts/pykueue) on a fresh cluster:

1. a private network namespace (e2e/node.py), the control plane with kwok's six nodes
   (e2e/cluster.py) and a real node in it: containerd, kubelet, kube-proxy;
2. the images (e2e/image.py, no Docker) imported into containerd; kueue-system placed on the
   real node (the tests' own workloads stay on kwok);
3. the install and its first create; `make deploy` itself waits until the install is available
   (webhook/install/installer.py: a Deployment is Available before kube-proxy routes its Service);
   after `helm install --wait` the same wait is run here;
4. the e2e suite against it (`KUBECONFIG_E2E`, `-m "not local_stack"`);
5. everything torn down, also on failure, Ctrl-C or SIGTERM.

Root only: it makes a network namespace, runs containerd and mounts overlays.

    python e2e/real.py run [--install deploy|helm ...] [--image pykueue:dev] [--dir .run/real] [--pytest ARGS]
    python e2e/real.py down [--dir .run/real]      # after a run that was killed with SIGKILL
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parent
sys.path[:0] = [str(REPO_ROOT), str(E2E_DIR)]

import host  # noqa: E402
import image  # noqa: E402
from cluster import BUILD_SCRIPT, Cluster, ClusterError, HostExec, RealNodeSpec  # noqa: E402
from node import NetworkNamespace, RealNode  # noqa: E402

from webhook.config.types import DEFAULT_LEADER_ELECTION_ID  # noqa: E402
from webhook.install import installer, objects  # noqa: E402

DEFAULT_DIR = REPO_ROOT / ".run" / "real"
INSTALLS = ("deploy", "helm")
#: The namespace our install lives in; its pods go to the real node.
NAMESPACE = objects.Settings().namespace
#: Any create a webhook must see: the ResourceFlavor's defaulting webhook (failurePolicy Fail).
#: The very first create after the install command returned (kept for e2e/test_real_install.py).
FIRST = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "e2e-real-first"}}
HELM_VALUES = (
    "controllerManager.replicas=2",
    "controllerManager.podDisruptionBudget.enabled=true",
    "enableCertManager=false",
)


class RunError(RuntimeError):
    """A step of the run failed; the message says which."""


def log(msg: str) -> None:
    print(f"e2e-real: {msg}", file=sys.stderr, flush=True)


@dataclass
class Timings:
    """Seconds per phase, printed at the end (the README quotes them)."""

    phases: list[tuple[str, float]] = field(default_factory=list)

    def measure(self, name: str, started: float) -> None:
        self.phases.append((name, time.monotonic() - started))
        log(f"{name}: {self.phases[-1][1]:.1f}s")

    def summary(self) -> str:
        return ", ".join(f"{name} {seconds:.0f}s" for name, seconds in self.phases)


def build_binaries() -> Path:
    """e2e/build-binaries.sh --node: the control plane, helm, kubelet, kube-proxy, pause."""
    res = subprocess.run(["bash", str(BUILD_SCRIPT), "--node"], stdout=subprocess.PIPE, text=True, check=False)
    lines = res.stdout.split()
    if res.returncode != 0 or not lines:
        raise RunError(f"{BUILD_SCRIPT.name} --node exited {res.returncode}")
    return Path(lines[-1])


class RealCluster:
    """A fresh control plane with kwok's nodes and one real node, in a private network namespace.

    `session()` brings it up and tears it down (also on failure); `down()` removes what a killed run
    left. Our own suite (Round) and upstream's suites that restart the Deployment
    (e2e/upstream_suite.py) both run inside it."""

    def __init__(
        self,
        directory: Path,
        *,
        bin_dir: Path,
        archives: Sequence[Path],
        host_exec: HostExec | None = None,
        job_pods_run: float | None = None,
        node_dir: Path | None = None,
    ) -> None:
        """`node_dir` (default `directory`/node) holds containerd's sockets: its path must stay short."""
        self.spec = RealNodeSpec()
        self.netns = NetworkNamespace(self.spec)
        self.cluster = Cluster(
            directory / "cluster",
            bin_dir=bin_dir,
            teardown_on_exit=False,
            real_node=self.spec,
            host_exec=host_exec,
            job_pods_run=job_pods_run,
        )
        self.node = RealNode(self.cluster, node_dir or directory / "node", images=archives)

    @contextlib.contextmanager
    def session(self, namespace: str | None = NAMESPACE) -> Iterator[Cluster]:
        """Inside the namespace: the cluster up, the node joined, `namespace`'s pods (if any) placed on it."""
        # Here, outside the namespace (apt-get needs the host's network), for every caller: make e2e-real and
        # the real-node upstream suites (sequential/baseline failed on a fresh CI machine without containerd).
        host.ensure_packages(host.NODE_PACKAGES)
        self.down()
        self.netns.create()
        try:
            with self.netns.entered():
                try:
                    self.cluster.up()
                    self.node.up()
                    if namespace is not None:
                        self.cluster.place_on_real_node(namespace)
                    yield self.cluster
                finally:
                    self._stop_inside()
        finally:
            self.netns.delete()

    def down(self) -> None:
        """Remove what a killed run left: the node, the control plane, the namespace."""
        if self.netns.exists():
            with self.netns.entered():
                self._stop_inside()
        else:
            self._stop_inside()
        self.netns.delete()

    def _stop_inside(self) -> None:
        started = time.monotonic()
        self.node.down()
        node_down = time.monotonic() - started
        self.cluster.down()
        log(f"torn down in {time.monotonic() - started:.1f}s (node {node_down:.1f}s)")


class Round:
    """One install on one fresh cluster with a real node, and the suite against it."""

    def __init__(
        self,
        install: str,
        *,
        directory: Path,
        bin_dir: Path,
        image_tag: str,
        archives: Sequence[Path],
        timings: Timings,
        pytest_args: Sequence[str],
    ) -> None:
        self.install = install
        self.dir = directory
        self.bin_dir = bin_dir
        self.image_tag = image_tag
        self.timings = timings
        self.pytest_args = list(pytest_args)
        self.real = RealCluster(directory, bin_dir=bin_dir, archives=archives)
        self.cluster = self.real.cluster

    @property
    def kubectl(self) -> str:
        return str(self.bin_dir / "kubectl")

    def run(self) -> int:
        """The suite's exit code; the cluster and the namespace are gone when this returns or raises."""
        t = time.monotonic()
        with self.real.session():
            self.timings.measure(f"{self.install}: cluster and real node up", t)

            t = time.monotonic()
            self._install()
            self._first_create()
            if self.install == "helm":  # `make deploy` already waited, in webhook/install/installer.py
                self._wait_available()
            self.timings.measure(f"{self.install}: install until a webhook admits", t)

            t = time.monotonic()
            code = self._pytest()
            self.timings.measure(f"{self.install}: e2e suite", t)
            return code

    def down(self) -> None:
        self.real.down()

    def _install(self) -> None:
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig)}
        if self.install == "deploy":
            cmd = ["make", "--no-print-directory", "deploy", f"IMG={self.image_tag}", f"KUBECTL={self.kubectl}"]
        else:
            repository, tag = self.image_tag.rsplit(":", 1)
            values = [
                *HELM_VALUES,
                f"controllerManager.manager.image.repository={repository}",
                f"controllerManager.manager.image.tag={tag}",
            ]
            cmd = [
                str(self.bin_dir / "helm"),
                "install",
                "pykueue",
                str(REPO_ROOT / "charts" / "pykueue"),
                "--namespace",
                NAMESPACE,
                "--wait",
                "--timeout=5m",
                *(a for v in values for a in ("--set", v)),
            ]
            # helm keeps its cache and config under $HOME unless told otherwise
            env |= {f"HELM_{kind}_HOME": str(self.dir / "helm" / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")}
        log(f"installing: {' '.join(cmd)}")
        res = subprocess.run(cmd, cwd=REPO_ROOT, env=env, check=False)
        if res.returncode != 0:
            self._show_pods()
            raise RunError(f"{self.install} exited {res.returncode}")

    def _first_create(self) -> None:
        """One real create through the webhooks, no retry, as a user's first `kubectl create` would be."""
        started = time.monotonic()
        res = subprocess.run(
            [self.kubectl, f"--kubeconfig={self.cluster.kubeconfig}", "create", "-f", "-"],
            input=json.dumps(FIRST),
            capture_output=True,
            text=True,
            check=False,
        )
        outcome = {
            "ok": res.returncode == 0,
            "name": FIRST["metadata"]["name"],
            "seconds": round(time.monotonic() - started, 2),
            "error": res.stderr.strip()[:500],
        }
        self.first_create.write_text(json.dumps(outcome))
        log(f"first create after {self.install}: {'admitted' if outcome['ok'] else 'REFUSED'} ({outcome})")

    @property
    def first_create(self) -> Path:
        return self.dir / f"first-create-{self.install}.json"

    @property
    def summary(self) -> Path:
        return self.dir / f"summary-{self.install}.jsonl"

    def _wait_available(self) -> None:
        """helm's --wait ends at Deployment ready, before the webhook Service may route: the same wait as
        `make deploy`'s (rollout, endpoints, a dry-run create admitted, the Lease held by a ready pod)."""
        os.environ["KUBECONFIG"] = str(self.cluster.kubeconfig)  # the installer's kubectl calls inherit it
        try:
            installer.wait_until_available(self.kubectl, namespace=NAMESPACE, lease=DEFAULT_LEADER_ELECTION_ID)
        except installer.DeployError as exc:
            self._show_pods()
            raise RunError(f"{self.install}: {exc}") from exc

    def _show_pods(self) -> None:
        out = self.cluster.kubectl("get", "pods", "-A", "-o", "wide")
        log(f"pods:\n{out.stdout}{out.stderr}")

    def _pytest(self) -> int:
        env = {
            **os.environ,
            "KUBECONFIG_E2E": str(self.cluster.kubeconfig),
            "KUBECTL": self.kubectl,
            "E2E_REAL_INSTALL": self.install,
            "E2E_REAL_FIRST_CREATE": str(self.first_create),
            "E2E_REAL_SUMMARY": str(self.summary),
        }
        self.summary.unlink(missing_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "e2e",
            "-m",
            "not local_stack",
            "-p",
            "no:cacheprovider",
            "-q",
            "--timeout=300",
            *self.pytest_args,
        ]
        log(f"running: {' '.join(cmd[2:])}")
        last = ""
        with subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True) as proc:
            try:
                for line in proc.stdout or ():  # shown as it comes; the summary line is kept for the log
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    last = line if line.strip() else last
            except BaseException:  # SIGTERM or Ctrl-C here: the suite stops before the cluster goes
                proc.terminate()
                raise
        summary = last.strip().strip("=").strip() or "no summary"  # pytest's last line: "N passed, M deselected in …"
        log(f"{self.install}: e2e suite exited {proc.returncode} ({summary})")
        if self.summary.exists():  # the real-install tests' figures (README, "Real node")
            log(f"{self.install}: figures\n{self.summary.read_text()}")
        return proc.returncode


def run(installs: Sequence[str], *, directory: Path, image_tag: str, pytest_args: Sequence[str]) -> int:
    host.require_root("make e2e-real")
    host.ensure_packages(host.NODE_PACKAGES)
    timings = Timings()
    t = time.monotonic()
    bin_dir = build_binaries()
    timings.measure("binaries", t)

    t = time.monotonic()
    archives = [directory / "images" / "pause.tar", directory / "images" / "server.tar"]
    image.build_pause(archives[0], binary=bin_dir / "pause")
    image.build_server(archives[1], tag=image_tag)
    timings.measure("images", t)

    failed = []
    try:
        for install in installs:  # a broken install still lets the next one run
            r = Round(
                install,
                directory=directory,
                bin_dir=bin_dir,
                image_tag=image_tag,
                archives=archives,
                timings=timings,
                pytest_args=pytest_args,
            )
            try:
                if r.run() != 0:
                    failed.append(install)
            except (RunError, ClusterError) as exc:
                log(f"{install}: {exc}")
                failed.append(install)
    finally:
        for archive in archives:
            archive.unlink(missing_ok=True)
    log(f"times: {timings.summary()}")
    if failed:
        log(f"FAILED: the e2e suite against {', '.join(failed)}")
        return 1
    log(f"passed: {', '.join(installs)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "down"])
    parser.add_argument("--install", action="append", choices=INSTALLS, help="default: both, in turn")
    parser.add_argument("--image", default="pykueue:dev", help="name:tag of the image built and installed")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--pytest", default="", help="more pytest arguments, one string (e.g. '-k webhooks')")
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    # SIGTERM and SIGHUP unwind like Ctrl-C, so every `finally` tears down what it started.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    try:
        if args.command == "down":
            host.require_root("e2e/real.py down")
            bin_dir = build_binaries()
            Round(
                "deploy",
                directory=directory,
                bin_dir=bin_dir,
                image_tag=args.image,
                archives=(),
                timings=Timings(),
                pytest_args=(),
            ).down()
            return 0
        return run(
            args.install or INSTALLS, directory=directory, image_tag=args.image, pytest_args=shlex.split(args.pytest)
        )
    except (RunError, ClusterError, image.ImageError, host.HostError) as exc:
        log(str(exc))
        return 1
    except KeyboardInterrupt:
        log("interrupted; torn down")
        return 130


if __name__ == "__main__":
    sys.exit(main())
