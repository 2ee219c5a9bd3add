#!/usr/bin/env python3
"""A real Kubernetes control plane on loopback, with kwok playing the kubelets.

There is no container engine here, so instead of kind we run etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and kwok as plain
processes built by e2e/build-binaries.sh, and let kwok fake six nodes. Pods
never run; kwok writes their status according to e2e/kwok-stages.yaml.

CLI:     python e2e/cluster.py up|down|status [--dir DIR]
Python:  with Cluster() as c: c.kubectl("get", "nodes")

Everything listens on 127.0.0.1 only, except that `Cluster(listen_ip=..., apiserver_port=...)` puts the
API server on another loopback address and a fixed port (MultiKueue's workers, e2e/multicluster.py:
https://kind-workerN-control-plane:6443 as kind serves them). State lives in DIR (default
<repo>/.run/cluster): pki/, logs/, etcd data, kubeconfigs, `pids` and
`state.json`, so `down` (or the next `up`) can clean up after a process that
died without tearing down.

`Cluster(real_node=RealNodeSpec())` gets the control plane ready for one real
kubelet and kube-proxy (e2e/node.py runs them; `make e2e-real`): only inside a
private network namespace, because the apiserver then also serves on the
node's address.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import datetime as dt
import http.client
import ipaddress
import json
import math
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, ClassVar

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parent
DEFAULT_DIR = REPO_ROOT / ".run" / "cluster"
BUILD_SCRIPT = E2E_DIR / "build-binaries.sh"
STAGES_FILE = E2E_DIR / "kwok-stages.yaml"

#: Seconds a Job-owned pod stays Running before kwok marks it Succeeded.
POD_RUN_SECONDS_ENV = "PYKUEUE_POD_RUN_SECONDS"
DEFAULT_POD_RUN_SECONDS = 2.0
#: Use these binaries instead of running build-binaries.sh.
BIN_DIR_ENV = "PYKUEUE_K8S_BIN_DIR"

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
NODE_CPU = "64"
NODE_MEMORY = "256Gi"
NODE_PODS = "250"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_PER_NODE = "8"
SERVICE_CIDR = "10.96.0.0/16"
#: Writes at Metadata level (who, what, when), nothing else: enough to prove who wrote.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Metadata", "verbs": ["create", "update", "patch", "delete", "deletecollection"]},
        {"level": "None"},
    ],
}
POD_CIDR = "10.244.0.0/16"
#: The real node's pods get addresses outside kwok's fake POD_CIDR, so no pod IP can mean both.
REAL_NODE_POD_CIDR = "10.245.0.0/24"
#: The real node's own address, in a /24 of its own beside its pods'.
REAL_NODE_IP = "10.245.255.1"
REAL_NODE_NETWORK = "10.245.255.0/24"
#: Test workloads lack this toleration, so they stay on the kwok nodes.
REAL_NODE_TAINT = "pykueue.local/real-node"


@dataclass(frozen=True)
class FakeNode:
    """A node kwok pretends to run; tests rely on these names and labels."""

    name: str
    labels: dict[str, str]
    extra_capacity: dict[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        capacity = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": NODE_PODS, **self.extra_capacity}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "kubernetes.io/hostname": self.name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                    **self.labels,
                },
            },
            # Deliberately no kwok.x-k8s.io/node taint: ordinary pods must land here.
            "spec": {},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        }


NODES: tuple[FakeNode, ...] = (
    FakeNode("kwok-on-demand-1", {"instance-type": "on-demand"}),
    FakeNode("kwok-on-demand-2", {"instance-type": "on-demand"}),
    FakeNode("kwok-spot-1", {"instance-type": "spot"}),
    FakeNode("kwok-spot-2", {"instance-type": "spot"}),
    FakeNode("kwok-gpu-1", {"nvidia.com/gpu.present": "true"}, {GPU_RESOURCE: GPU_PER_NODE}),
    FakeNode("kwok-gpu-2", {"nvidia.com/gpu.present": "true"}, {GPU_RESOURCE: GPU_PER_NODE}),
)


@dataclass(frozen=True)
class RealNodeSpec:
    """One real node (e2e/node.py: containerd, kubelet, kube-proxy) and what the control plane does for it.

    The apiserver also listens on `ip` and advertises it, so the `kubernetes` Service's endpoint is
    reachable from pods; it dials the kubelet at its InternalIP with a client certificate and checks
    the kubelet's serving certificate against our CA. The node registers tainted (REAL_NODE_TAINT),
    so test workloads keep landing on kwok; only pods of a namespace given to
    `Cluster.place_on_real_node` tolerate the taint and select the node, which leaves what we
    install (manifests, chart) exactly as users get it.
    """

    name: str = "real-node"
    ip: str = REAL_NODE_IP
    pod_cidr: str = REAL_NODE_POD_CIDR

    @property
    def labels(self) -> dict[str, str]:
        return {"type": "real"}

    @property
    def taint(self) -> dict[str, str]:
        return {"key": REAL_NODE_TAINT, "value": "true", "effect": "NoSchedule"}

    def identities(self) -> dict[str, tuple[str, list[str]]]:
        """Client certificates: the kubelet (Node authorizer), kube-proxy, the apiserver to the kubelet."""
        return {
            "kubelet": (f"system:node:{self.name}", ["system:nodes"]),
            "kube-proxy": ("system:kube-proxy", []),
            "kube-apiserver-kubelet-client": ("kube-apiserver-kubelet-client", ["system:masters"]),
        }


@dataclass(frozen=True)
class HostExec:
    """`kubectl exec` into a fake pod runs the command on this host (a kwok ClusterExec) with `path`
    as PATH and `env` added: upstream's e2e specs exec curl in their agnhost pods, and a directory of
    stand-ins on PATH answers for what the pod would reach."""

    path: str
    env: dict[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        envs = [{"name": "PATH", "value": self.path}, *({"name": k, "value": v} for k, v in sorted(self.env.items()))]
        return {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterExec",
            "metadata": {"name": "host-exec"},
            "spec": {"execs": [{"local": {"envs": envs}}]},
        }


class _NoAliasDumper(yaml.SafeDumper):
    """Writes shared blocks out in full: the stages file shares them through anchors, kwok wants copies."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# Start order; teardown runs in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def log(msg: str) -> None:
    """Progress goes to stderr so stdout stays machine-readable (kubeconfig path)."""
    print(f"cluster: {msg}", file=sys.stderr, flush=True)


class ClusterError(RuntimeError):
    """A named bring-up step failed; the message says which and shows the evidence."""

    def __init__(self, step: str, detail: str, elapsed: float | None = None, log_tail: str = "") -> None:
        after = f" after {elapsed:.0f}s" if elapsed is not None else ""
        msg = f"cluster: step '{step}' failed{after}: {detail}"
        if log_tail:
            msg += f"; last log lines:\n{log_tail}"
        super().__init__(msg)
        self.step = step


# --------------------------------------------------------------------------- helpers


def free_port(taken: set[int]) -> int:
    """A currently unused loopback port; `taken` avoids handing out one twice."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in taken:
            taken.add(port)
            return port


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def tail(path: Path, lines: int = 25) -> str:
    try:
        data = path.read_bytes()[-20000:].decode(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join("    " + line for line in data.splitlines()[-lines:])


def proc_start_time(pid: int) -> int | None:
    """Kernel start time of pid (jiffies since boot); guards against PID reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # zombie: already dead, just not reaped
        return None
    return int(fields[19])


def pod_run_seconds() -> float:
    """Seconds a Job-owned pod without an agnhost behaviour runs, from the environment."""
    raw = os.environ.get(POD_RUN_SECONDS_ENV, "")
    if not raw:
        return DEFAULT_POD_RUN_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ClusterError("read settings", f"{POD_RUN_SECONDS_ENV}={raw!r} is not a number") from None
    if value < 0:
        raise ClusterError("read settings", f"{POD_RUN_SECONDS_ENV}={raw!r} is negative")
    return value


def _in_named_network_namespace() -> bool:
    """True inside a namespace made by `ip netns add` (listed in /run/netns), never the host's.
    (Comparing with init's namespace would need ptrace rights over PID 1, which root may lack.)"""
    own = os.stat("/proc/self/ns/net")
    netns_dir = Path("/run/netns")
    named = netns_dir.iterdir() if netns_dir.is_dir() else iter(())
    return any((st.st_dev, st.st_ino) == (own.st_dev, own.st_ino) for st in map(os.stat, named))


# --------------------------------------------------------------------------- PKI


class _Pki:
    """One CA that signs every serving and client cert, plus the SA signing key.

    A single CA keeps the kubeconfigs trivial (same CA data everywhere) and is
    what pods see as kube-root-ca.crt.
    """

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ca_crt = directory / "ca.crt"
        self.ca_key = directory / "ca.key"
        self.serving_crt = directory / "serving.crt"
        self.serving_key = directory / "serving.key"
        self.sa_key = directory / "sa.key"
        self.sa_pub = directory / "sa.pub"
        self.front_proxy_crt = directory / "front-proxy-client.crt"
        self.front_proxy_key = directory / "front-proxy-client.key"
        self.kubelet_crt = directory / "kubelet-serving.crt"
        self.kubelet_key = directory / "kubelet-serving.key"

    def client(self, name: str) -> tuple[Path, Path]:
        return self.dir / f"{name}.crt", self.dir / f"{name}.key"

    @staticmethod
    def _key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    @staticmethod
    def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        path.chmod(0o600)

    def generate(
        self,
        client_identities: dict[str, tuple[str, list[str]]],
        node: RealNodeSpec | None,
        *,
        listen_ip: str = "127.0.0.1",
        extra_sans: Sequence[str] = (),
    ) -> None:
        """Every certificate and the SA key; the apiserver's serving certificate also names `listen_ip` and
        `extra_sans` (a DNS name each, or an IP address)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        until = now + dt.timedelta(days=30)

        ca_key = self._key()
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pykueue-e2e-ca")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        self.ca_crt.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self._write_key(self.ca_key, ca_key)

        def issue(
            cn: str,
            orgs: list[str],
            usage: x509.ObjectIdentifier,
            sans: list[x509.GeneralName],
            crt: Path,
            key_path: Path,
        ) -> None:
            key = self._key()
            attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
            attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
            builder = (
                x509.CertificateBuilder()
                .subject_name(x509.Name(attrs))
                .issuer_name(ca_name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now)
                .not_valid_after(until)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            )
            if sans:
                builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
            crt.write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
            self._write_key(key_path, key)

        issue(
            "kube-apiserver",
            [],
            ExtendedKeyUsageOID.SERVER_AUTH,
            [
                x509.DNSName("localhost"),
                x509.DNSName("kubernetes"),
                x509.DNSName("kubernetes.default"),
                x509.DNSName("kubernetes.default.svc"),
                x509.DNSName("kubernetes.default.svc.cluster.local"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address(SERVICE_CIDR.split("/")[0]) + 1),
                *([x509.IPAddress(ipaddress.ip_address(node.ip))] if node else []),
                *([x509.IPAddress(ipaddress.ip_address(listen_ip))] if listen_ip != "127.0.0.1" else []),
                *map(_san, extra_sans),
            ],
            self.serving_crt,
            self.serving_key,
        )
        if node:
            node_sans: list[x509.GeneralName] = [x509.DNSName(node.name), x509.IPAddress(ipaddress.ip_address(node.ip))]
            issue(
                f"system:node:{node.name}",
                ["system:nodes"],
                ExtendedKeyUsageOID.SERVER_AUTH,
                node_sans,
                self.kubelet_crt,
                self.kubelet_key,
            )
        issue(
            "front-proxy-client",
            [],
            ExtendedKeyUsageOID.CLIENT_AUTH,
            [],
            self.front_proxy_crt,
            self.front_proxy_key,
        )
        for name, (cn, groups) in client_identities.items():
            issue(cn, groups, ExtendedKeyUsageOID.CLIENT_AUTH, [], *self.client(name))

        sa = self._key()
        self._write_key(self.sa_key, sa)
        self.sa_pub.write_bytes(
            sa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )


def _san(name: str) -> x509.GeneralName:
    """An IP address SAN for an address, a DNS name SAN for anything else."""
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


# --------------------------------------------------------------------------- processes


@dataclass
class Proc:
    """A process we started (popen set) or one recorded in a pids file by an earlier run."""

    name: str
    pid: int
    start_time: int | None
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return self.start_time is not None and proc_start_time(self.pid) == self.start_time

    def exit_code(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None


def spawn(name: str, cmd: Sequence[str], *, log_path: Path, cwd: Path, env: Mapping[str, str]) -> Proc:
    """Start `cmd` in its own session (kill_group reaches all of it), output appended to `log_path`."""
    with open(log_path, "ab") as out:
        out.write(f"# {' '.join(cmd)}\n".encode())
        out.flush()
        popen = subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            env=dict(env),
        )
    return Proc(name, popen.pid, proc_start_time(popen.pid), log_path, popen)


def write_pid_file(path: Path, procs: Sequence[Proc]) -> None:
    """Record `procs` so that a later `down` (another process, after a crash) can stop them."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(f"{p.name} {p.pid} {p.start_time or 0} {p.log}\n" for p in procs))
    tmp.replace(path)


def read_pid_file(path: Path) -> list[Proc]:
    try:
        text = path.read_text()
    except OSError:
        return []
    procs = []
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[1].isdigit():
            procs.append(Proc(parts[0], int(parts[1]), int(parts[2]) or None, Path(parts[3])))
    return procs


def _wait_gone(proc: Proc, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            return True
        time.sleep(0.05)
    return not proc.alive()


def kill_group(proc: Proc, term_timeout: float = 10.0) -> None:
    """SIGTERM the process group, SIGKILL it if it lingers (at once when `term_timeout` is 0), and reap
    our own children."""
    if proc.alive():
        steps = ((signal.SIGTERM, term_timeout),) if term_timeout > 0 else ()
        for sig, wait in (*steps, (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)  # each component leads its own session/group
            except ProcessLookupError:
                break
            except PermissionError:
                os.kill(proc.pid, sig)
            if _wait_gone(proc, wait):
                break
    else:
        # The leader may be gone while a child in its group survives.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.popen is not None:
        try:
            proc.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log(f"{proc.name} (pid {proc.pid}) did not exit after SIGKILL")


# --------------------------------------------------------------------------- HTTP probes


def _get(
    port: int, path: str, ctx: ssl.SSLContext | None, timeout: float = 3.0, host: str = "127.0.0.1"
) -> tuple[int, bytes]:
    conn: http.client.HTTPConnection
    if ctx is None:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    else:
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _insecure_ctx() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


# --------------------------------------------------------------------------- the cluster


class Cluster:
    """Owns one local control plane rooted at a state directory.

    `up()` always starts fresh (a stale run in the same directory is killed
    first). Unless `teardown_on_exit=False` (the CLI's `up`), the processes are
    torn down when the interpreter exits or gets SIGTERM/SIGHUP, so an
    interrupted test session does not leak an apiserver.
    """

    def __init__(
        self,
        directory: Path | str | None = None,
        *,
        bin_dir: Path | str | None = None,
        teardown_on_exit: bool = True,
        step_timeout: float = 60.0,
        job_pods_run: float | None = None,
        host_exec: HostExec | None = None,
        real_node: RealNodeSpec | None = None,
        nodes: Sequence[FakeNode] = NODES,
        listen_ip: str = "127.0.0.1",
        apiserver_port: int | None = None,
        extra_sans: Sequence[str] = (),
        pod_cidr: str = POD_CIDR,
        apiserver_args: Sequence[str] = (),
        crds: Sequence[Path] = (),
    ) -> None:
        """`job_pods_run`: seconds a Job-owned pod without an agnhost behaviour runs before kwok completes
        it (None: PYKUEUE_POD_RUN_SECONDS or 2 s; math.inf: until deleted, as upstream's suite expects).
        `host_exec`: let `kubectl exec` reach this host (off by default: it runs commands as this user).
        `real_node`: get ready for that node to join (see RealNodeSpec); needs a private network namespace.
        `nodes`: the fake nodes kwok runs (upstream's suites want the layouts of their kind configs).
        `listen_ip`, `apiserver_port`: where the API server listens and what every kubeconfig names (another
        127/8 address and a fixed port: several clusters side by side, each at the address kind would give
        it); None picks a free port. `extra_sans`: more names its serving certificate carries (DNS names or
        IPs). `pod_cidr`: kwok's pod addresses (distinct per cluster keeps pod IPs unique across a run).
        `apiserver_args`: more kube-apiserver flags, after ours. `crds`: other projects' CRD files applied
        (and established) once the API server is up, before any system starts (the ClusterProfile CRD)."""
        if not ipaddress.ip_address(listen_ip).is_loopback:
            raise ValueError(f"listen_ip {listen_ip!r} is not a loopback address")
        if real_node is not None and (listen_ip != "127.0.0.1" or apiserver_port is not None):
            raise ValueError("a real node's cluster listens on 0.0.0.0 and a free port")
        self.dir = Path(directory or os.environ.get("PYKUEUE_CLUSTER_DIR") or DEFAULT_DIR).resolve()
        self.job_pods_run = job_pods_run
        self.host_exec = host_exec
        self.real_node = real_node
        self.nodes = tuple(nodes)
        self.listen_ip = listen_ip
        self.apiserver_port = apiserver_port
        self.extra_sans = tuple(extra_sans)
        self.pod_cidr = pod_cidr
        self.apiserver_args = tuple(apiserver_args)
        self.crds = tuple(crds)
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self.teardown_on_exit = teardown_on_exit
        self.step_timeout = step_timeout
        self.ports: dict[str, int] = {}
        self._procs: list[Proc] = []
        self._lock = threading.RLock()
        self._exit_hooks_installed = False
        self._prev_handlers: dict[int, Any] = {}
        self._pki = _Pki(self.dir / "pki")

    # ------------------------------------------------------------------ public API

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (user `admin`, group system:masters)."""
        return self.dir / "kubeconfig"

    @property
    def cluster_admin_kubeconfig(self) -> Path:
        """Kubeconfig of kubeadm's admin (user `kubernetes-admin`, group kubeadm:cluster-admins), as kind
        gives upstream's e2e suites; usable once `bind_cluster_admins` has run."""
        return self._kubeconfig_path("cluster-admin")

    def bind_cluster_admins(self) -> None:
        """Bind kubeadm:cluster-admins to cluster-admin, as kubeadm init does."""
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "kubeadm:cluster-admins"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "kubeadm:cluster-admins"}],
        }
        res = self.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(binding))
        if res.returncode != 0:
            raise ClusterError("bind cluster admins", res.stderr.strip())

    @property
    def server(self) -> str:
        if "kube-apiserver" not in self.ports:
            state = self._read_state()
            self.ports = {k: int(v) for k, v in state.get("ports", {}).items()}
        return f"https://{self.listen_ip}:{self.ports['kube-apiserver']}"

    @property
    def bin_dir(self) -> Path:
        if self._bin_dir is None:
            self._bin_dir = self._resolve_bin_dir()
        return self._bin_dir

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def audit_log(self) -> Path:
        """The API server's audit log: one JSON line per write (create, update, patch, delete), with
        its verb, URI, user and user agent; reads are not logged. Tests read who wrote what."""
        return self.logs_dir / "audit.log"

    @property
    def pids(self) -> dict[str, int]:
        return {p.name: p.pid for p in self._procs}

    @property
    def ca_crt(self) -> Path:
        """The CA behind every certificate here: a real kubelet checks its clients against it."""
        return self._pki.ca_crt

    @property
    def kubelet_serving(self) -> tuple[Path, Path]:
        """The real node's kubelet serving certificate and key (the apiserver verifies them)."""
        return self._pki.kubelet_crt, self._pki.kubelet_key

    def kubeconfig_of(self, identity: str) -> Path:
        """The kubeconfig of one client identity, e.g. a real node's "kubelet" or "kube-proxy"."""
        return self._kubeconfig_path(identity)

    def real_node_placement(self) -> tuple[dict[str, str], dict[str, str]]:
        """(node selector, toleration) that put a pod on the real node and nowhere else."""
        if self.real_node is None:
            raise ClusterError("place pods", "this cluster was started without a real node")
        node = self.real_node
        return dict(node.labels), {"key": node.taint["key"], "operator": "Exists", "effect": node.taint["effect"]}

    def place_on_real_node(self, namespace: str, *, placed: bool = True) -> None:
        """Create (or annotate) `namespace` so that the admission plugins PodTolerationRestriction and
        PodNodeSelector give each of its pods the real node's toleration and node selector; `placed=False`
        takes the annotations away again (pods created later land on kwok's nodes)."""
        selector, toleration = self.real_node_placement()
        annotations = {
            "scheduler.alpha.kubernetes.io/node-selector": ",".join(f"{k}={v}" for k, v in selector.items()),
            "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps([toleration]),
        }
        if not placed:  # server-side apply drops what this field manager no longer states
            annotations = {}
        manifest = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "annotations": annotations},
        }
        res = self.kubectl(
            "apply", "--server-side", "--field-manager=pykueue-real-node", "-f", "-", input=json.dumps(manifest)
        )
        if res.returncode != 0:
            raise ClusterError("place namespace", f"kubectl apply of namespace {namespace}: {res.stderr.strip()}")

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = False, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Run the cluster's kubectl against the admin kubeconfig; output captured as text."""
        return subprocess.run(
            [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def up(self) -> Cluster:
        """Start everything and block until pods can be created; on failure tear down and raise."""
        with self._lock:
            started = time.monotonic()
            try:
                self._up()
            except BaseException as exc:
                if isinstance(exc, ClusterError):
                    log(f"step '{exc.step}' failed; tearing down what was started")
                else:
                    log(f"bring-up interrupted: {exc!r}; tearing down")
                self.down()
                raise
            log(f"cluster ready in {time.monotonic() - started:.1f}s; kubeconfig {self.kubeconfig}")
            return self

    def down(self) -> None:
        """Kill every process of this run (ours or recorded in DIR/pids) and wait for its ports to close."""
        with self._lock:
            procs = self._procs or self._recorded_procs()
            ports = set(self.ports.values()) or {int(p) for p in self._read_state().get("ports", {}).values()}
            for proc in reversed(procs):
                if proc.alive():
                    log(f"stopping {proc.name} (pid {proc.pid})")
                kill_group(proc)
            self._procs = []
            apiserver = (self.ports or self._read_state().get("ports", {})).get("kube-apiserver")
            listen_ip = self._read_state().get("listen_ip", self.listen_ip)

            def is_open(port: int) -> bool:
                return port_open(port, listen_ip if port == apiserver else "127.0.0.1")

            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(is_open(p) for p in ports):
                time.sleep(0.1)
            still = sorted(p for p in ports if is_open(p))
            if still:
                log(f"warning: ports still open after teardown: {still}")
            for path in (self.dir / "pids",):
                path.unlink(missing_ok=True)
            self._remove_exit_hooks()

    def status(self) -> dict[str, Any]:
        """Which recorded processes are alive and whether the apiserver answers /readyz."""
        procs = self._procs or self._recorded_procs()
        result: dict[str, Any] = {"dir": str(self.dir), "processes": {}, "ready": False}
        for proc in procs:
            result["processes"][proc.name] = {"pid": proc.pid, "alive": proc.alive()}
        state = self._read_state()
        if state.get("ports"):
            listen_ip = state.get("listen_ip", "127.0.0.1")
            result["server"] = f"https://{listen_ip}:{state['ports']['kube-apiserver']}"
            result["kubeconfig"] = str(self.kubeconfig)
            try:
                code, body = _get(state["ports"]["kube-apiserver"], "/readyz", self._admin_ctx(), host=listen_ip)
                result["ready"] = code == 200 and body.strip() == b"ok"
            except (OSError, ssl.SSLError):
                pass
        result["ready"] = result["ready"] and bool(procs) and all(p.alive() for p in procs)
        return result

    def restart(self, name: str, *, down_for: float = 0.0) -> float:
        """Stop one component (SIGTERM, then SIGKILL), keep it down `down_for` s, start it with the
        same command and wait until it is ready again; etcd data and the other components are kept.
        Returns the seconds from the stop until ready."""
        started = time.monotonic()
        self.stop_component(name)
        time.sleep(down_for)
        self.start_component(name)
        return time.monotonic() - started

    def stop_component(self, name: str, *, kill: bool = False) -> None:
        """Stop one component and wait until its port is closed: SIGTERM, then SIGKILL; with `kill`,
        SIGKILL at once (a crash: no graceful shutdown, streams cut). Start it again with `start_component`."""
        self._component_command(name)
        with self._lock:
            if not self._procs:  # a cluster started by another process (`cluster.py up`)
                self._procs = [p for p in self._recorded_procs() if p.alive()]
            proc = next((p for p in self._procs if p.name == name), None)
            if proc is None:
                raise ClusterError(f"stop {name}", "not started by this Cluster object")
            kill_group(proc, term_timeout=0.0 if kill else 10.0)
            self._procs.remove(proc)
            port = self.ports.get(name)
            host = self.listen_ip if name == "kube-apiserver" else "127.0.0.1"
            deadline = time.monotonic() + 10
            while port is not None and time.monotonic() < deadline and port_open(port, host):
                time.sleep(0.05)

    def start_component(self, name: str) -> float:
        """Start a component `stop_component` stopped, with the same command, and wait until it is
        ready; returns the seconds that took."""
        command = self._component_command(name)
        with self._lock:
            started = time.monotonic()
            self._start(name, command())
            if name == "kube-apiserver":
                self._wait("kube-apiserver ready", name, self._apiserver_ready, timeout=max(self.step_timeout, 90))
            elif name == "etcd":
                self._wait(
                    "etcd ready", name, lambda: _get(self.ports["etcd"], "/health", None)[1].find(b'"true"') >= 0
                )
            else:
                self._wait(f"{name} ready", name, self._healthz_probe(self.ports[name], _insecure_ctx()))
            return time.monotonic() - started

    def _component_command(self, name: str) -> Callable[[], list[str]]:
        commands = {
            "etcd": self._etcd_cmd,
            "kube-apiserver": self._apiserver_cmd,
            "kube-controller-manager": self._kcm_cmd,
            "kube-scheduler": self._scheduler_cmd,
            "kwok": self._kwok_cmd,
        }
        if name not in commands:
            raise ValueError(f"unknown component {name!r}; one of {sorted(commands)}")
        return commands[name]

    def __enter__(self) -> Cluster:
        return self.up()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.down()

    # ------------------------------------------------------------------ bring-up

    def _up(self) -> None:
        run_seconds = pod_run_seconds() if self.job_pods_run is None else self.job_pods_run
        bin_dir = self.bin_dir
        for exe in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"):
            if not os.access(bin_dir / exe, os.X_OK):
                raise ClusterError("find binaries", f"{bin_dir / exe} missing or not executable")

        if self.real_node is not None and not _in_named_network_namespace():
            raise ClusterError(
                "check network namespace",
                "with a real node the apiserver listens on 0.0.0.0: "
                "run inside the private network namespace of e2e/node.py",
            )

        # A previous run in this directory (crashed test session, forgotten `up`) goes first.
        stale = self._recorded_procs()
        if any(p.alive() for p in stale):
            log(f"cleaning up a previous run in {self.dir}")
        self.down()
        self._reset_dir()
        if self.teardown_on_exit:
            self._install_exit_hooks()

        if self.apiserver_port is not None and port_open(self.apiserver_port, self.listen_ip):
            raise ClusterError(
                "find ports", f"{self.listen_ip}:{self.apiserver_port} is already taken (another cluster still up?)"
            )
        taken: set[int] = set()
        self.ports = {
            "etcd": free_port(taken),
            "etcd-peer": free_port(taken),
            "kube-apiserver": self.apiserver_port or free_port(taken),
            "kube-controller-manager": free_port(taken),
            "kube-scheduler": free_port(taken),
            "kwok": free_port(taken),
        }
        self._write_state()

        self._step("generate certificates", self._write_pki)
        self._write_kwok_config(run_seconds)

        self._start("etcd", self._etcd_cmd())
        self._wait("etcd ready", "etcd", lambda: _get(self.ports["etcd"], "/health", None)[1].find(b'"true"') >= 0)

        self._start("kube-apiserver", self._apiserver_cmd())
        self._wait(
            "kube-apiserver ready",
            "kube-apiserver",
            self._apiserver_ready,
            timeout=max(self.step_timeout, 90),
        )

        self._start("kube-controller-manager", self._kcm_cmd())
        self._start("kube-scheduler", self._scheduler_cmd())
        self._start("kwok", self._kwok_cmd())
        insecure = _insecure_ctx()
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            self._wait(f"{name} ready", name, self._healthz_probe(self.ports[name], insecure))

        self._step("create nodes", self._create_nodes)
        self._wait("nodes Ready", "kwok", self._nodes_ready)
        self._wait(
            "default ServiceAccount",
            "kube-controller-manager",
            lambda: self._api_get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
        )
        if self.crds:
            self._step("install CRDs", self._install_crds)

    def _install_crds(self) -> None:
        for crd in self.crds:
            self.kubectl("apply", "--server-side", "--field-manager=pykueue-cluster", "-f", str(crd), check=True)
        names = [str(yaml.safe_load(crd.read_text())["metadata"]["name"]) for crd in self.crds]
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in names), check=True)

    def _resolve_bin_dir(self) -> Path:
        env = os.environ.get(BIN_DIR_ENV)
        if env:
            return Path(env)
        log(f"running {BUILD_SCRIPT.relative_to(REPO_ROOT)} (first run builds from source; can take a while)")
        started = time.monotonic()
        # stderr (progress) passes straight through; stdout's last line is the bin dir.
        res = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
        lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
        if res.returncode != 0 or not lines:
            raise ClusterError(
                "build binaries",
                f"{BUILD_SCRIPT} exited {res.returncode}",
                time.monotonic() - started,
                "\n".join(lines[-10:]),
            )
        return Path(lines[-1].strip())

    def _reset_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        for child in self.dir.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        self.logs_dir.mkdir()

    def _step(self, name: str, fn: Callable[[], None]) -> None:
        started = time.monotonic()
        try:
            fn()
        except ClusterError:
            raise
        except Exception as exc:
            raise ClusterError(name, f"{type(exc).__name__}: {exc}", time.monotonic() - started) from exc

    def _wait(self, step: str, component: str, probe: Callable[[], bool], timeout: float | None = None) -> None:
        """Poll `probe` until true; fail fast if the component died, else after the timeout."""
        timeout = timeout or self.step_timeout
        started = time.monotonic()
        last_err = ""
        proc = next((p for p in self._procs if p.name == component), None)
        while True:
            elapsed = time.monotonic() - started
            try:
                if probe():
                    log(f"{step} ({elapsed:.1f}s)")
                    return
            except (OSError, ssl.SSLError, http.client.HTTPException, ValueError, KeyError) as exc:
                last_err = f"{type(exc).__name__}: {exc}"
            if proc is not None and not proc.alive():
                raise ClusterError(step, f"{component} exited with code {proc.exit_code()}", elapsed, tail(proc.log))
            if elapsed > timeout:
                detail = f"timed out waiting for {component}" + (f" (last error: {last_err})" if last_err else "")
                log_path = proc.log if proc else self.logs_dir / f"{component}.log"
                raise ClusterError(step, detail, elapsed, tail(log_path))
            time.sleep(0.2)

    def _start(self, name: str, cmd: list[str]) -> None:
        log_path = self.logs_dir / f"{name}.log"
        try:
            proc = spawn(name, cmd, log_path=log_path, cwd=self.dir, env={**os.environ, "KUBECONFIG": ""})
        except OSError as exc:
            raise ClusterError(f"start {name}", str(exc)) from exc
        self._procs.append(proc)
        self._write_pids()
        log(f"started {name} (pid {proc.pid}, log {log_path})")

    # ------------------------------------------------------------------ state files

    def _write_pids(self) -> None:
        write_pid_file(self.dir / "pids", self._procs)

    def _recorded_procs(self) -> list[Proc]:
        return read_pid_file(self.dir / "pids")

    def _write_state(self) -> None:
        state = {
            "ports": self.ports,
            "listen_ip": self.listen_ip,
            "kubeconfig": str(self.kubeconfig),
            "owner_pid": os.getpid(),
        }
        (self.dir / "state.json").write_text(json.dumps(state, indent=2) + "\n")

    def _read_state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.dir / "state.json").read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    # ------------------------------------------------------------------ config files

    _IDENTITIES: ClassVar[dict[str, tuple[str, list[str]]]] = {
        "admin": ("admin", ["system:masters"]),
        # kubeadm's (so kind's) admin: all rights through a ClusterRoleBinding, not system:masters,
        # which authorizers that delegate to the API server let through unreviewed.
        "cluster-admin": ("kubernetes-admin", ["kubeadm:cluster-admins"]),
        "kube-controller-manager": ("system:kube-controller-manager", []),
        "kube-scheduler": ("system:kube-scheduler", []),
        # kwok patches node and pod status, renews leases and deletes pods: give it full rights.
        "kwok": ("kwok-controller", ["system:masters"]),
    }

    def _kubeconfig_path(self, name: str) -> Path:
        return self.kubeconfig if name == "admin" else self.dir / f"{name}.kubeconfig"

    def _write_pki(self) -> None:
        identities = {**self._IDENTITIES, **(self.real_node.identities() if self.real_node else {})}
        self._pki.generate(identities, self.real_node, listen_ip=self.listen_ip, extra_sans=self.extra_sans)
        ca = base64.b64encode(self._pki.ca_crt.read_bytes()).decode()
        for name, (user, _) in identities.items():
            crt, key = self._pki.client(name)
            cfg = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "pykueue",
                        "cluster": {
                            "server": f"https://{self.listen_ip}:{self.ports['kube-apiserver']}",
                            "certificate-authority-data": ca,
                        },
                    }
                ],
                "users": [
                    {
                        "name": user,
                        "user": {
                            "client-certificate-data": base64.b64encode(crt.read_bytes()).decode(),
                            "client-key-data": base64.b64encode(key.read_bytes()).decode(),
                        },
                    }
                ],
                "contexts": [{"name": "pykueue", "context": {"cluster": "pykueue", "user": user}}],
                "current-context": "pykueue",
                "preferences": {},
            }
            path = self._kubeconfig_path(name)
            path.write_text(yaml.safe_dump(cfg, sort_keys=False))
            path.chmod(0o600)

    def _write_kwok_config(self, run_seconds: float) -> None:
        """Our stages with the Job pods' run time (or without their completion stage), plus the host exec."""

        def fail(detail: str) -> ClusterError:
            return ClusterError("write kwok stages", detail)

        try:
            docs = yaml.safe_load(STAGES_FILE.read_text())["stages"]
        except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
            raise fail(f"cannot read a 'stages' list from {STAGES_FILE}: {exc}") from exc
        complete = [d for d in docs if d.get("metadata", {}).get("name") == "pod-complete"]
        if len(complete) != 1:
            raise fail(f"{STAGES_FILE} must define exactly one 'pod-complete' stage")
        if math.isinf(run_seconds):
            docs.remove(complete[0])
        else:
            complete[0]["spec"].setdefault("delay", {})["durationMilliseconds"] = int(run_seconds * 1000)
        if self.host_exec is not None:
            docs.append(self.host_exec.manifest())
        (self.dir / "kwok.yaml").write_text(yaml.dump_all(docs, Dumper=_NoAliasDumper, sort_keys=False))

    # ------------------------------------------------------------------ commands

    def _bin(self, name: str) -> str:
        return str(self.bin_dir / name)

    def _etcd_cmd(self) -> list[str]:
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        return [
            self._bin("etcd"),
            "--name=pykueue",
            f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=pykueue={peer}",
            "--initial-cluster-state=new",
            "--listen-metrics-urls=",
            "--unsafe-no-fsync=true",  # throwaway data: durability buys nothing, fsync costs seconds
            "--quota-backend-bytes=4294967296",
            "--auto-compaction-mode=periodic",
            "--auto-compaction-retention=1m",
            "--log-level=warn",
        ]

    def _apiserver_network(self) -> list[str]:
        if self.real_node is None:
            return [
                f"--bind-address={self.listen_ip}",
                f"--advertise-address={self.listen_ip}",
                # A loopback address is not a valid Endpoints address, and nothing here needs
                # the in-cluster `kubernetes` Service to route anywhere.
                "--endpoint-reconciler-type=none",
            ]
        p, node = self._pki, self.real_node
        return [
            # Pods reach us through the `kubernetes` Service, whose endpoint (kept by the default lease
            # reconciler) is the node's address; in the private namespace 0.0.0.0 is lo and that address.
            "--bind-address=0.0.0.0",
            f"--advertise-address={node.ip}",
            # `kubectl logs/exec` go through the kubelet: authenticate to it, and check who answers.
            f"--kubelet-client-certificate={p.client('kube-apiserver-kubelet-client')[0]}",
            f"--kubelet-client-key={p.client('kube-apiserver-kubelet-client')[1]}",
            f"--kubelet-certificate-authority={p.ca_crt}",
            # No DNS knows the node's name (Hostname comes first by default): dial its address.
            "--kubelet-preferred-address-types=InternalIP",
        ]

    def _audit_policy(self) -> Path:
        policy = self.dir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY, sort_keys=False))
        return policy

    def _apiserver_cmd(self) -> list[str]:
        p = self._pki
        plugins = "MutatingAdmissionWebhook,ValidatingAdmissionWebhook"
        if self.real_node is not None:  # they apply place_on_real_node's namespace annotations
            plugins += ",PodNodeSelector,PodTolerationRestriction"
        return [
            self._bin("kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--etcd-prefix=/registry",
            *self._apiserver_network(),
            f"--secure-port={self.ports['kube-apiserver']}",
            f"--cert-dir={p.dir}",
            f"--tls-cert-file={p.serving_crt}",
            f"--tls-private-key-file={p.serving_key}",
            f"--client-ca-file={p.ca_crt}",
            f"--service-account-key-file={p.sa_pub}",
            f"--service-account-signing-key-file={p.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            # Added to the default plugin set (which already has the webhooks in 1.34; explicit is safer).
            f"--enable-admission-plugins={plugins}",
            "--allow-privileged=true",
            f"--requestheader-client-ca-file={p.ca_crt}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={p.front_proxy_crt}",
            f"--proxy-client-key-file={p.front_proxy_key}",
            "--profiling=false",
            f"--audit-policy-file={self._audit_policy()}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-maxsize=200",
            "--audit-log-maxbackup=1",
            "--v=1",
            *self.apiserver_args,
        ]

    def _component_common(self, name: str) -> list[str]:
        kubeconfig = self._kubeconfig_path(name)
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports[name]}",
            f"--tls-cert-file={self._pki.serving_crt}",
            f"--tls-private-key-file={self._pki.serving_key}",
            "--leader-elect=false",
            "--profiling=false",
            "--v=1",
        ]

    def _kcm_cmd(self) -> list[str]:
        p = self._pki
        return [
            self._bin("kube-controller-manager"),
            *self._component_common("kube-controller-manager"),
            "--controllers=*",  # default set: job, garbage-collector, namespace, serviceaccount(-token), ...
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={p.sa_key}",
            f"--root-ca-file={p.ca_crt}",
            f"--cluster-signing-cert-file={p.ca_crt}",
            f"--cluster-signing-key-file={p.ca_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allocate-node-cidrs=false",
            "--node-monitor-period=1s",
            # Defaults (20 qps) throttle start-up: each controller mints its own SA token.
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--configure-cloud-routes=false",
            "--cloud-provider=",
        ]

    def _scheduler_cmd(self) -> list[str]:
        return [self._bin("kube-scheduler"), *self._component_common("kube-scheduler")]

    def _kwok_cmd(self) -> list[str]:
        port = self.ports["kwok"]
        return [
            self._bin("kwok"),
            f"--kubeconfig={self._kubeconfig_path('kwok')}",
            f"--config={self.dir / 'kwok.yaml'}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
            f"--cidr={self.pod_cidr}",
            "--node-ip=127.0.0.1",
            f"--node-port={port}",
            f"--server-address=127.0.0.1:{port}",
            f"--tls-cert-file={self._pki.serving_crt}",
            f"--tls-private-key-file={self._pki.serving_key}",
            "--node-lease-duration-seconds=40",
        ]

    # ------------------------------------------------------------------ API access

    def _admin_ctx(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self._pki.ca_crt))
        ctx.load_cert_chain(*map(str, self._pki.client("admin")))
        return ctx

    def _api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPSConnection(
            self.listen_ip, self.ports["kube-apiserver"], timeout=10, context=self._admin_ctx()
        )
        try:
            headers = {"Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, raw.decode(errors="replace")

    def _api_get(self, path: str) -> tuple[int, Any]:
        return self._api("GET", path)

    @staticmethod
    def _healthz_probe(port: int, ctx: ssl.SSLContext) -> Callable[[], bool]:
        return lambda: _get(port, "/healthz", ctx)[0] == 200

    def _apiserver_ready(self) -> bool:
        code, body = _get(self.ports["kube-apiserver"], "/readyz", self._admin_ctx(), host=self.listen_ip)
        return code == 200 and body.strip() == b"ok"

    def _create_nodes(self) -> None:
        for node in self.nodes:
            code, body = self._api("POST", "/api/v1/nodes", node.manifest())
            if code not in (201, 409):
                raise ClusterError("create nodes", f"POST node {node.name} -> HTTP {code}: {body}")

    def _nodes_ready(self) -> bool:
        """All fake nodes Ready and rid of the not-ready taint, i.e. schedulable."""
        code, body = self._api_get("/api/v1/nodes?labelSelector=type%3Dkwok")
        if code != 200:
            return False
        ready = set()
        for item in body.get("items", []):
            conds = {c["type"]: c["status"] for c in item.get("status", {}).get("conditions", [])}
            if conds.get("Ready") == "True" and not item.get("spec", {}).get("taints"):
                ready.add(item["metadata"]["name"])
        return ready >= {n.name for n in self.nodes}

    # ------------------------------------------------------------------ exit hooks

    def _install_exit_hooks(self) -> None:
        """Tear down on interpreter exit and on SIGTERM/SIGHUP (pytest killed by CI, terminal closed)."""
        if self._exit_hooks_installed:
            return
        atexit.register(self._atexit)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._prev_handlers[sig] = signal.signal(sig, self._on_signal)
        self._exit_hooks_installed = True

    def _remove_exit_hooks(self) -> None:
        if not self._exit_hooks_installed:
            return
        atexit.unregister(self._atexit)
        if threading.current_thread() is threading.main_thread():
            for sig, prev in self._prev_handlers.items():
                if signal.getsignal(sig) == self._on_signal:
                    signal.signal(sig, prev)
        self._prev_handlers.clear()
        self._exit_hooks_installed = False

    def _atexit(self) -> None:
        if self._procs:
            log("interpreter exiting: tearing the cluster down")
            self.down()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        prev = self._prev_handlers.get(signum)
        log(f"got signal {signum}: tearing the cluster down")
        self.down()
        if callable(prev):
            prev(signum, frame)
        elif prev != signal.SIG_IGN:
            sys.exit(128 + signum)


# --------------------------------------------------------------------------- CLI


def _iter_status_lines(st: dict[str, Any]) -> Iterator[str]:
    yield f"dir:        {st['dir']}"
    if "server" in st:
        yield f"server:     {st['server']}"
        yield f"kubeconfig: {st['kubeconfig']}"
    for name, info in st["processes"].items():
        yield f"{name:24} pid {info['pid']:>7}  {'running' if info['alive'] else 'DEAD'}"
    yield f"ready:      {'yes' if st['ready'] else 'no'}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--dir", type=Path, default=None, help=f"state directory (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)
    cluster = Cluster(args.dir, teardown_on_exit=False)
    try:
        if args.command == "up":
            # Ctrl-C during bring-up still tears down (up() handles BaseException).
            signal.signal(signal.SIGTERM, lambda s, f: sys.exit(128 + s))
            cluster.up()
            print(cluster.kubeconfig)
        elif args.command == "down":
            cluster.down()
            log("down")
        else:
            st = cluster.status()
            print("\n".join(_iter_status_lines(st)))
            return 0 if st["ready"] else 1
    except ClusterError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
