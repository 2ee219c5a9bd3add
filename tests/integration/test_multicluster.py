"""Three control planes side by side (e2e/multicluster.py), our server on each: the manager's MultiKueue
reaches a worker at https://kind-worker1-control-plane:6443 exactly as upstream's multikueue suites make it
(test/util/multikueue.go KubeconfigForMultiKueueSA), while the host's /etc/hosts knows no such name.

These tests start real processes. If the clusters cannot start they must fail, not skip.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from multicluster import MEMBERS, MultiClusterSystem, OurMember, worker_kubeconfig  # e2e/, on sys.path by conftest.py

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

MANAGER, WORKER1, _ = MEMBERS


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MultiClusterSystem]:
    multi = MultiClusterSystem(tmp_path_factory.mktemp("multicluster"), OurMember)
    with multi.session():
        yield multi


def kubectl(system: MultiClusterSystem, context: str, *args: str, input: str | None = None) -> str:
    kubectl_bin = system.manager.cluster.bin_dir / "kubectl"
    res = subprocess.run(
        [str(kubectl_bin), f"--kubeconfig={system.kubeconfig}", f"--context={context}", *args],
        input=input,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
    return res.stdout


def apply(system: MultiClusterSystem, context: str, *objs: dict[str, Any]) -> None:
    kubectl(system, context, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))


def test_the_suite_kubeconfig_names_kinds_contexts(system: MultiClusterSystem) -> None:
    doc = yaml.safe_load(system.kubeconfig.read_text())
    assert doc["current-context"] == "kind-kind-manager"
    servers = {c["name"]: c["cluster"]["server"] for c in doc["clusters"]}
    assert servers["kind-kind-worker1"] == "https://127.0.0.2:6443"
    assert servers["kind-kind-worker2"] == "https://127.0.0.3:6443"
    for member in MEMBERS:
        nodes = json.loads(kubectl(system, member.context, "get", "nodes", "-o", "json"))["items"]
        assert [n["metadata"]["name"] for n in nodes] == [f"kind-{member.name}-worker"]
        assert nodes[0]["metadata"]["labels"]["cloud.provider.com/node-group"] == "tas-node"


def test_only_the_managers_kueue_resolves_the_workers_names(system: MultiClusterSystem) -> None:
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo(WORKER1.control_plane, 6443)
    pid = int(Path(system.out / "manager" / "server.pid").read_text())
    hosts = Path(f"/proc/{pid}/root/etc/hosts").read_text()
    assert f"127.0.0.2 {WORKER1.control_plane}" in hosts


def test_a_multikueue_cluster_from_a_worker_token_turns_active(system: MultiClusterSystem) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "multikueue1", "namespace": "kueue-system"},
        "data": {
            "kubeconfig": base64.b64encode(
                worker_kubeconfig(WORKER1, system.systems[WORKER1].cluster).encode()
            ).decode()
        },
    }
    cluster = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueCluster",
        "metadata": {"name": "worker1"},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "multikueue1"}}},
    }
    apply(system, MANAGER.context, secret, cluster)
    deadline = time.monotonic() + 30  # upstream's specs allow util.Timeout, 10 s
    active: dict[str, Any] = {}
    while time.monotonic() < deadline:
        got = json.loads(kubectl(system, MANAGER.context, "get", "multikueuecluster", "worker1", "-o", "json"))
        active = next((c for c in got.get("status", {}).get("conditions", []) if c["type"] == "Active"), {})
        if active.get("status") == "True":
            break
        time.sleep(0.5)
    assert (active.get("status"), active.get("reason"), active.get("message")) == ("True", "Active", "Connected")
