#!/usr/bin/env python3
"""A real cluster-autoscaler beside the local stack, so ProvisioningRequest admission checks have someone
to answer them.

cluster-autoscaler 1.33.0 (e2e/build-autoscaler.sh: from the Go module proxy, its kwok cloud provider
only) runs as a host process against the local control plane with ProvisioningRequest support on (its
classes `check-capacity.autoscaling.x-k8s.io` and `best-effort-atomic-scale-up.autoscaling.x-k8s.io`):
  - the ProvisioningRequest CRD (autoscaling.x-k8s.io v1, storage, and v1beta1) from the release's apis
    module, as its chart installs it;
  - its kwok cloud provider reads node groups from node templates in ConfigMaps of `NAMESPACE`
    (`kwok-provider-config`, `kwok-provider-templates`; cloudprovider/kwok/README.md), one template per
    group of `NODE_GROUPS`, grouped by the `NODE_GROUP_LABEL` label. A scale-up creates Nodes from the
    template, annotated `kwok.x-k8s.io/node: fake`, the annotation the stack's kwok manages nodes by
    (`--manage-nodes-with-annotation-selector`), so they turn Ready and run pods like the stack's own;
  - the provider taints its nodes `kwok-provider=true:NoSchedule` (`PROVIDER_TAINT`): only pods that
    tolerate it (a ResourceFlavor's tolerations) land there, so the rest of the suite never does;
  - on exit the provider deletes the nodes it made; `down` deletes any left over.
A process that exits or is not ready in time fails the bring-up, naming its log.

    python e2e/autoscaler.py build      # e2e/build-autoscaler.sh
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from cluster import KWOK_ANNOTATION, Cluster, Proc, free_port, kill_group, read_pid_file, spawn, tail, write_pid_file  # noqa: E402

BUILD_SCRIPT = HERE / "build-autoscaler.sh"
#: Where the provider reads its ConfigMaps (POD_NAMESPACE) and the autoscaler writes its status ConfigMap.
NAMESPACE = "kube-system"
#: The label the provider groups template nodes by (`nodegroups.fromNodeLabelKey`).
NODE_GROUP_LABEL = "pykueue.dev/node-group"
#: The annotation the provider marks its nodes with (cloudprovider/kwok/kwok_constants.go NGNameAnnotation).
NODE_GROUP_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/name"
#: The taint the provider puts on every node it makes (README "Gotchas").
PROVIDER_TAINT = {"key": "kwok-provider", "value": "true", "effect": "NoSchedule"}
#: The ConfigMap the autoscaler writes after each loop: its presence says the loop runs.
STATUS_CONFIGMAP = "cluster-autoscaler-status"


class AutoscalerError(RuntimeError):
    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"autoscaler: step '{step}' failed: {detail}")


def log(msg: str) -> None:
    print(f"autoscaler: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class NodeGroup:
    """One node group of the kwok provider: the template its nodes are made from, at most `max_size` of them."""

    name: str
    max_size: int
    capacity: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)

    def template(self) -> dict[str, Any]:
        """The template Node (`kwok-provider-templates`); the provider renames it per node and adds its
        annotations, providerID and taint."""
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "annotations": {
                    "cluster-autoscaler.kwok.nodegroup/min-count": "0",
                    "cluster-autoscaler.kwok.nodegroup/max-count": str(self.max_size),
                },
                "labels": {
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                    NODE_GROUP_LABEL: self.name,
                    **self.labels,
                },
            },
            "spec": {},
            "status": {"capacity": dict(self.capacity), "allocatable": dict(self.capacity)},
        }


#: A100 nodes of 4 GPUs each, at most 2: the ProvisioningRequest e2e's pods select them by label.
NODE_GROUPS: tuple[NodeGroup, ...] = (
    NodeGroup(
        "gpu-a100",
        2,
        {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"},
        {"cloud.example.com/accelerator": "nvidia-a100"},
    ),
)


def provider_config_maps(groups: Sequence[NodeGroup]) -> list[dict[str, Any]]:
    """`kwok-provider-config` (node templates from a ConfigMap, grouped by NODE_GROUP_LABEL) and
    `kwok-provider-templates` (one template per group), as cloudprovider/kwok/README.md describes them."""
    config = {
        "apiVersion": "v1alpha1",
        "readNodesFrom": "configmap",
        "nodegroups": {"fromNodeLabelKey": NODE_GROUP_LABEL},
        "nodes": {"skipTaint": False},
        "configmap": {"name": "kwok-provider-templates"},
    }
    templates = {"apiVersion": "v1", "kind": "List", "items": [g.template() for g in groups]}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "data": {key: yaml.safe_dump(doc, sort_keys=False)},
        }
        for name, key, doc in (
            ("kwok-provider-config", "config", config),
            ("kwok-provider-templates", "templates", templates),
        )
    ]


def command_line(binary: Path, kubeconfig: Path, port: int) -> list[str]:
    """Loops every 2 s (the default 10 s would slow each e2e step); no leader election (one process);
    scale-down on, as shipped, so an idle node group shrinks again. JSON to the API server: its default,
    protobuf, is also what its ProvisioningRequest client sends, and a custom resource cannot be encoded so
    (every status write, Accepted first, fails and no request is ever processed)."""
    return [
        str(binary),
        "--cloud-provider=kwok",
        f"--kubeconfig={kubeconfig}",
        f"--address=127.0.0.1:{port}",
        "--kube-api-content-type=application/json",
        f"--namespace={NAMESPACE}",
        "--enable-provisioning-requests=true",
        "--leader-elect=false",
        "--scan-interval=2s",
        "--logtostderr=true",
        "--v=4",
    ]


def build() -> tuple[Path, Path]:
    """Run e2e/build-autoscaler.sh (progress on stderr passes through): (the CRD file, the binary)."""
    started = time.monotonic()
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.split()
    if proc.returncode != 0 or len(lines) < 2:
        raise AutoscalerError(
            "build", f"{BUILD_SCRIPT.name} exited {proc.returncode} after {time.monotonic() - started:.0f}s"
        )
    return Path(lines[-2]), Path(lines[-1])


class Autoscaler:
    """cluster-autoscaler on one cluster, its state in `directory` (its log and a pids file, so a later `down`
    from another process stops it)."""

    def __init__(self, directory: Path, cluster: Cluster, groups: Sequence[NodeGroup] = NODE_GROUPS) -> None:
        self.dir = Path(directory)
        self.cluster = cluster
        self.groups = tuple(groups)
        self._proc: Proc | None = None

    @property
    def pid_file(self) -> Path:
        return self.dir / "pids"

    @property
    def log_file(self) -> Path:
        return self.dir / "cluster-autoscaler.log"

    def up(self) -> None:
        """Build (or find in the cache), install the CRD and the provider's ConfigMaps, start, and wait until
        its first loop has run; raises AutoscalerError naming the step and the log, after stopping it."""
        started = time.monotonic()
        self.down()
        try:
            self._up()
        except BaseException:
            self.down()
            raise
        log(f"up in {time.monotonic() - started:.0f}s (log {self.log_file})")

    def _up(self) -> None:
        crd, binary = build()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._apply(yaml.safe_load(crd.read_text()))
        res = self.cluster.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", "crd/provisioningrequests.autoscaling.x-k8s.io"
        )
        if res.returncode != 0:
            raise AutoscalerError("CRD established", res.stderr.strip())
        self.cluster.kubectl("delete", "configmap", "-n", NAMESPACE, STATUS_CONFIGMAP, "--ignore-not-found")
        for doc in provider_config_maps(self.groups):
            self._apply(doc)
        port = free_port(set())
        env = {
            **os.environ,
            "KUBECONFIG": str(self.cluster.kubeconfig),
            "KWOK_PROVIDER_MODE": "local",  # the provider's own client from KUBECONFIG, not in-cluster
            "POD_NAMESPACE": NAMESPACE,
        }
        try:
            self._proc = spawn(
                "cluster-autoscaler",
                command_line(binary, self.cluster.kubeconfig, port),
                log_path=self.log_file,
                cwd=self.dir,
                env=env,
            )
        except OSError as exc:
            raise AutoscalerError("start", str(exc)) from exc
        write_pid_file(self.pid_file, [self._proc])
        log(f"started cluster-autoscaler (pid {self._proc.pid}, log {self.log_file})")
        self._wait_ready(port)

    def _wait_ready(self, port: int, timeout: float = 90.0) -> None:
        """Until its health check answers and its status ConfigMap is written (a whole loop has run)."""
        assert self._proc is not None
        url = f"http://127.0.0.1:{port}/health-check"
        deadline = time.monotonic() + timeout
        while True:
            if not self._proc.alive():
                raise AutoscalerError(
                    "ready", f"exited with {self._proc.exit_code()}; last lines:\n{tail(self._proc.log)}"
                )
            status = self.cluster.kubectl("get", "configmap", "-n", NAMESPACE, STATUS_CONFIGMAP, "-o", "name")
            if _answers(url) and status.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AutoscalerError(
                    "ready",
                    f"{url} and ConfigMap {NAMESPACE}/{STATUS_CONFIGMAP} not there in {timeout:.0f}s; "
                    f"last lines:\n{tail(self._proc.log)}",
                )
            time.sleep(0.5)

    def _apply(self, doc: dict[str, Any]) -> None:
        res = self.cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=pykueue-autoscaler",
            "-f",
            "-",
            input=json.dumps(doc),
        )
        if res.returncode != 0:
            raise AutoscalerError(f"apply {doc['kind']}/{doc['metadata']['name']}", res.stderr.strip()[-800:])

    def nodes(self) -> list[dict[str, Any]]:
        """The Nodes the provider made (annotated with their node group)."""
        res = self.cluster.kubectl("get", "nodes", "-o", "json")
        if res.returncode != 0:
            raise AutoscalerError("list nodes", res.stderr.strip())
        return [
            n
            for n in json.loads(res.stdout)["items"]
            if NODE_GROUP_ANNOTATION in (n["metadata"].get("annotations") or {})
            and n["metadata"]["annotations"].get(KWOK_ANNOTATION) == "fake"
        ]

    def down(self) -> None:
        """Stop the autoscaler of this directory (this object's, or recorded by an earlier run) and delete the
        nodes it made, while the cluster still answers."""
        for proc in [self._proc] if self._proc is not None else read_pid_file(self.pid_file):
            kill_group(proc)
        self._proc = None
        self.pid_file.unlink(missing_ok=True)
        if self.cluster.kubectl("get", "--raw=/readyz").returncode == 0:
            for node in self.nodes():
                self.cluster.kubectl("delete", "node", node["metadata"]["name"], "--ignore-not-found", "--wait=false")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["build"]:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        crd, binary = build()
    except AutoscalerError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(crd)
    print(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
