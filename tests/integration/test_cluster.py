"""The local control plane (e2e/cluster.py) really works: nodes, Jobs, teardown.

These tests start real processes. If the cluster cannot start they must fail,
not skip: a silently skipped e2e suite is worse than a red one.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import socket
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import (  # e2e/, put on sys.path by conftest.py
    GPU_RESOURCE,
    NODES,
    POD_CIDR,
    REAL_NODE_IP,
    REAL_NODE_NETWORK,
    REAL_NODE_POD_CIDR,
    SERVICE_CIDR,
    Cluster,
    ClusterError,
    FakeNode,
    RealNodeSpec,
)

pytestmark = pytest.mark.cluster


def kubectl_json(cluster: Cluster, *args: str) -> Any:
    res = cluster.kubectl(*args, "-o", "json")
    assert res.returncode == 0, f"kubectl {' '.join(args)} failed: {res.stderr}"
    return json.loads(res.stdout)


def alive(pid: int) -> bool:
    """True if pid is a live (non-zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line contains `text` (e.g. the state dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and alive(int(entry.name)):
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def test_six_kwok_nodes_ready_with_labels_and_capacity(cluster: Cluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in kubectl_json(cluster, "get", "nodes", "-l", "type=kwok")["items"]}
    assert set(nodes) == {n.name for n in NODES}

    for name, node in nodes.items():
        conditions = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert conditions.get("Ready") == "True", (name, conditions)
        assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert not node["spec"].get("taints"), f"{name} must be schedulable: {node['spec'].get('taints')}"
        assert int(node["status"]["allocatable"]["cpu"]) >= 32

    by_type: dict[str, list[str]] = {}
    for name, node in nodes.items():
        by_type.setdefault(node["metadata"]["labels"].get("instance-type", "-"), []).append(name)
    assert len(by_type.get("on-demand", [])) == 2
    assert len(by_type.get("spot", [])) == 2

    gpu = [n for n in nodes.values() if n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true"]
    assert len(gpu) == 2
    for node in gpu:
        assert node["status"]["capacity"][GPU_RESOURCE] == "8"
        assert node["status"]["allocatable"][GPU_RESOURCE] == "8"
    for node in nodes.values():
        if node not in gpu:
            assert GPU_RESOURCE not in node["status"]["allocatable"]


JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: hello
  namespace: default
spec:
  completions: 2
  parallelism: 2
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh", "-c", "echo hello"]
        resources:
          requests: {cpu: "1", memory: 64Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: server
  namespace: default
spec:
  containers:
  - name: main
    image: busybox:1.36
    command: ["sleep", "infinity"]
"""


def test_plain_job_runs_to_complete(cluster: Cluster) -> None:
    created = cluster.kubectl("apply", "-f", "-", input=JOB)
    assert created.returncode == 0, created.stderr
    waited = cluster.kubectl("wait", "--for=condition=Complete", "job/hello", "--timeout=60s", timeout=90)
    assert waited.returncode == 0, (
        f"Job did not complete: {waited.stderr}\n{cluster.kubectl('get', 'job,pods', '-o', 'wide').stdout}"
    )

    job = kubectl_json(cluster, "get", "job", "hello")
    assert job["status"]["succeeded"] == 2
    pods = kubectl_json(cluster, "get", "pods", "-l", "job-name=hello")["items"]
    assert len(pods) == 2
    node_names = {n.name for n in NODES}
    for pod in pods:
        assert pod["status"]["phase"] == "Succeeded"
        assert pod["spec"]["nodeName"] in node_names  # placed by kube-scheduler
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0

    # A pod without a Job owner is left Running by kwok, however long we wait.
    server = kubectl_json(cluster, "get", "pod", "server")
    deadline = time.monotonic() + 30
    while server["status"].get("phase") != "Running" and time.monotonic() < deadline:
        time.sleep(0.5)
        server = kubectl_json(cluster, "get", "pod", "server")
    assert server["status"]["phase"] == "Running"

    # Deleting it makes it go away (kwok plays the kubelet's part of deletion).
    deleted = cluster.kubectl("delete", "pod", "server", "--timeout=30s", timeout=60)
    assert deleted.returncode == 0, deleted.stderr


AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def agnhost_pod(name: str, behaviour: dict[str, list[str]], finalizer: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if finalizer:  # keeps the object after its terminal status, so the test can read that status
        meta["finalizers"] = ["pykueue.test/hold"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": AGNHOST, **behaviour}],
        },
    }


def wait_pod(cluster: Cluster, name: str, pred: Any, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        pod = kubectl_json(cluster, "get", "pod", name)
        if pred(pod) or time.monotonic() > deadline:
            return pod  # type: ignore[no-any-return]
        time.sleep(0.3)


def test_agnhost_behaviours_decide_a_pods_fate(cluster: Cluster) -> None:
    """Upstream's e2e pods pick agnhost's behaviour by argument or command; kwok plays it out."""
    pods = [
        agnhost_pod("exit-fast-arg", {"args": ["entrypoint-tester"]}),
        agnhost_pod("exit-fast-cmd", {"command": ["entrypoint-tester"]}),
        agnhost_pod("netexec", {"args": ["netexec"]}, finalizer=True),
        agnhost_pod("webserver", {"args": ["test-webserver"]}, finalizer=True),
    ]
    created = cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    assert created.returncode == 0, created.stderr

    for name in ("exit-fast-arg", "exit-fast-cmd"):
        pod = wait_pod(cluster, name, lambda p: p["status"].get("phase") == "Succeeded")
        assert pod["status"]["phase"] == "Succeeded", pod["status"]
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    for name in ("netexec", "webserver"):
        assert wait_pod(cluster, name, lambda p: p["status"].get("phase") == "Running")["status"]["phase"] == "Running"
    time.sleep(2)  # longer than the exit-fast delay: the servers keep running
    for name in ("netexec", "webserver"):
        assert kubectl_json(cluster, "get", "pod", name)["status"]["phase"] == "Running"

    # Deleted: netexec exits 0 on SIGTERM, the web server is killed.
    deleted = cluster.kubectl("delete", "pod", "netexec", "webserver", "--wait=false")
    assert deleted.returncode == 0, deleted.stderr
    expected = {"netexec": ("Succeeded", 0), "webserver": ("Failed", 137)}
    for name, (phase, code) in expected.items():
        pod = wait_pod(cluster, name, lambda p: p["status"].get("phase") in ("Succeeded", "Failed"))
        assert (pod["status"]["phase"], pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]) == (
            phase,
            code,
        )
        released = cluster.kubectl(
            "patch", "pod", name, "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]'
        )
        assert released.returncode == 0, released.stderr


def test_job_pods_can_run_until_deleted(tmp_path: Path) -> None:
    """`job_pods_run=math.inf` (upstream's suite): a Job pod with no agnhost behaviour never completes,
    one running entrypoint-tester still does."""
    c = Cluster(tmp_path / "cluster", job_pods_run=math.inf)
    c.up()
    try:
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "sleeper", "namespace": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "1"]}],
                    }
                }
            },
        }
        quick = agnhost_pod("quick", {"args": ["entrypoint-tester"]})
        created = c.kubectl(
            "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [job, quick]})
        )
        assert created.returncode == 0, created.stderr
        assert wait_pod(c, "quick", lambda p: p["status"].get("phase") == "Succeeded")["status"]["phase"] == "Succeeded"
        time.sleep(3)  # past the default Job pod run time (2 s)
        job_pods = kubectl_json(c, "get", "pods", "-l", "job-name=sleeper")["items"]
        assert [p["status"].get("phase") for p in job_pods] == ["Running"]
    finally:
        c.down()


def test_down_leaves_no_process_or_port(tmp_path: Path) -> None:
    """A second, throwaway cluster: a stale run is replaced by `up`, and `down` cleans everything."""
    state_dir = tmp_path / "c"
    first = Cluster(state_dir)
    first.up()
    first_pids = dict(first.pids)
    first_ports = dict(first.ports)
    try:
        # A new Cluster on the same dir must kill the previous run before starting.
        second = Cluster(state_dir)
        second.up()
        second_pids = dict(second.pids)
        try:
            assert not [n for n, pid in first_pids.items() if alive(pid)], "stale run survived a new up()"
            assert second.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
        finally:
            second.down()
    finally:
        first.down()  # reaps our children; a no-op otherwise

    assert (
        set(first_pids)
        == set(second_pids)
        == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
    )
    for name, pid in [*first_pids.items(), *second_pids.items()]:
        assert not alive(pid), f"{name} (pid {pid}) still alive after down()"
    assert second.pids == {}
    open_ports = [p for p in {*first_ports.values(), *second.ports.values()} if listening(p)]
    assert not open_ports, f"ports still listening after down(): {open_ports}"
    assert not processes_mentioning(str(state_dir)), processes_mentioning(str(state_dir))
    assert not (state_dir / "pids").exists()


def test_real_node_addresses_collide_with_nothing() -> None:
    """kwok's fake pod IPs, ClusterIPs, the real node's pods and its own address are all disjoint."""
    nets = [ipaddress.ip_network(n) for n in (POD_CIDR, SERVICE_CIDR, REAL_NODE_POD_CIDR, REAL_NODE_NETWORK)]
    for i, a in enumerate(nets):
        for b in nets[i + 1 :]:
            assert not a.overlaps(b), f"{a} overlaps {b}"
    assert ipaddress.ip_address(REAL_NODE_IP) in ipaddress.ip_network(REAL_NODE_NETWORK)


def test_real_node_is_refused_in_the_hosts_network_namespace(tmp_path: Path) -> None:
    """With a real node the apiserver listens on 0.0.0.0: never on the host's interfaces."""
    c = Cluster(tmp_path, real_node=RealNodeSpec(), teardown_on_exit=False)
    with pytest.raises(ClusterError, match="network namespace"):
        c.up()
    assert not c.pids and not (tmp_path / "etcd").exists()


def _serving_sans(host: str, port: int, ca: Path) -> tuple[set[str], set[str]]:
    """(DNS names, IP addresses) of the certificate served at host:port, verified against `ca`."""
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False  # the names are what we want to read
    with socket.create_connection((host, port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        cert = tls.getpeercert()
    names = cert.get("subjectAltName", ())
    return {v for k, v in names if k == "DNS"}, {v for k, v in names if k == "IP Address"}


def test_two_clusters_side_by_side_on_their_own_loopback_addresses(tmp_path: Path) -> None:
    """MultiKueue's workers as kind serves them (e2e/multicluster.py): each API server on its own 127/8
    address at port 6443, its certificate naming kind-workerN-control-plane, its kubeconfig pointing there;
    a 7-day TokenRequest (what the suite's KubeconfigForMultiKueueSA asks for) works on each."""
    clusters = [
        Cluster(
            tmp_path / f"worker{i}",
            listen_ip=f"127.0.0.{i + 1}",
            apiserver_port=6443,
            extra_sans=(f"kind-worker{i}-control-plane",),
            pod_cidr=f"10.24{5 + i}.0.0/16",
            apiserver_args=("--service-account-max-token-expiration=168h",),
            nodes=(FakeNode(f"kind-worker{i}-worker", {"instance-type": "on-demand"}),),
        )
        for i in (1, 2)
    ]
    try:
        for c in clusters:
            c.up()
        for i, c in enumerate(clusters, start=1):
            ip = f"127.0.0.{i + 1}"
            assert c.server == f"https://{ip}:6443"
            assert yaml.safe_load(c.kubeconfig.read_text())["clusters"][0]["cluster"]["server"] == c.server
            dns, ips = _serving_sans(ip, 6443, c.ca_crt)
            assert f"kind-worker{i}-control-plane" in dns
            assert ip in ips
            nodes = kubectl_json(c, "get", "nodes")["items"]
            assert [n["metadata"]["name"] for n in nodes] == [f"kind-worker{i}-worker"]
            assert c.status()["ready"], c.status()
            request = {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 7 * 24 * 3600},
            }
            res = c.kubectl(
                "create",
                "--raw",
                "/api/v1/namespaces/default/serviceaccounts/default/token",
                "-f",
                "-",
                input=json.dumps(request),
            )
            assert res.returncode == 0, res.stderr
            token = json.loads(res.stdout)["status"]["token"]
            who = c.kubectl(
                "auth",
                "whoami",
                f"--token={token}",
                "--kubeconfig=/dev/null",
                f"--server={c.server}",
                f"--certificate-authority={c.ca_crt}",
                "-o",
                "json",
            )
            assert who.returncode == 0, who.stderr
            assert json.loads(who.stdout)["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"
    finally:
        for c in reversed(clusters):
            c.down()
    assert not listening_on("127.0.0.2", 6443) and not listening_on("127.0.0.3", 6443)


def listening_on(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0
