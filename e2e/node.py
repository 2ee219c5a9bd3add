"""A real node for the local control plane: containerd, kubelet and kube-proxy in a private network namespace.

kwok's nodes (e2e/cluster.py) never run a container, so our image, manifests and chart are only
really exercised by a node that does. This one runs on this machine, and nothing of it touches the
host's network: the namespace (`NetworkNamespace`) holds the node's address on a veth pair, the CNI
bridge with the pods, the ClusterIPs and kube-proxy's iptables rules; no route leads out of it. Pods
resolve Services' names through e2e/clusterdns.py on the node's address (the kubelet's clusterDNS).

    netns = NetworkNamespace(spec)       # ip netns add, the node's address, the ClusterIP route
    netns.create()
    with netns.entered():                # this process (and what it starts) joins the namespace
        cluster = Cluster(d, real_node=spec).up()
        node = RealNode(cluster, d2, images=[pause_tar, server_tar]).up()
        ...
        node.down(); cluster.down()
    netns.delete()

The runtime is Debian's containerd 1.6 with runc and the CNI bridge, host-local and loopback
plugins (e2e/host.py installs them), with its own root, state and socket under the node's
directory. The facts behind the settings were found the hard way and are noted where they apply.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import clusterdns
import host
import yaml
from cluster import (
    REAL_NODE_NETWORK,
    SERVICE_CIDR,
    Cluster,
    ClusterError,
    Proc,
    RealNodeSpec,
    kill_group,
    read_pid_file,
    spawn,
    tail,
    write_pid_file,
)
from image import PAUSE_IMAGE

_CLONE_NEWNET = 0x40000000
#: The pods' bridge; inside the namespace, so any name would do, but this one says whose it is.
CNI_BRIDGE = "pykueue-cni0"
CNI_NETWORK = "pykueue-real"
#: libcni caches each attachment here whatever containerd is told.
CNI_CACHE = Path("/var/lib/cni")
#: The kubelet's device-plugin registration socket: a fixed path, whatever --root-dir says.
DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")
#: Directories the daemons create outside their configured paths, children first; removed when empty.
HOST_DIRS = (
    Path("/var/log/containers"),
    DEVICE_PLUGIN_SOCKET.parent,
    DEVICE_PLUGIN_SOCKET.parent.parent,
    CNI_CACHE / "results",
    CNI_CACHE,
    Path("/run/containerd/s"),
    Path("/run/containerd"),
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: containerd finds runc and its shim, kube-proxy iptables and conntrack, here.
DAEMON_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The kubelet's cgroup for all pods (cgroupfs driver), in every hierarchy; removed on teardown.
KUBEPODS = "kubepods"


def log(msg: str) -> None:
    print(f"node: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class NetworkNamespace:
    """A named network namespace holding the node's address and a route for the ClusterIPs.

    The address sits on one end of a veth pair whose other end stays in the namespace too (this
    kernel has no dummy interfaces). Without the ClusterIP route, a connection made inside the
    namespace to a Service (the apiserver calling our webhook) fails before kube-proxy's DNAT sees it.
    """

    node: RealNodeSpec
    name: str = "pykueue-real"
    link: str = "pkr-node0"

    @property
    def path(self) -> Path:
        return Path("/run/netns") / self.name

    def exists(self) -> bool:
        return self.path.exists()

    def create(self) -> None:
        """Make the namespace (a leftover of an interrupted run is deleted first)."""
        self.delete()
        prefix = int(REAL_NODE_NETWORK.split("/")[1])
        steps = [
            ["ip", "netns", "add", self.name],
            ["ip", "-n", self.name, "link", "set", "lo", "up"],
            ["ip", "-n", self.name, "link", "add", self.link, "type", "veth", "peer", "name", f"{self.link}p"],
            ["ip", "-n", self.name, "addr", "add", f"{self.node.ip}/{prefix}", "dev", self.link],
            ["ip", "-n", self.name, "link", "set", self.link, "up"],
            ["ip", "-n", self.name, "link", "set", f"{self.link}p", "up"],
            ["ip", "-n", self.name, "route", "add", SERVICE_CIDR, "dev", self.link, "src", self.node.ip],
            # Pods reach each other and the apiserver through the bridge: forward, and let kube-proxy's
            # iptables rules see bridged packets (hairpin to a pod's own Service).
            [
                "ip",
                "netns",
                "exec",
                self.name,
                "sysctl",
                "-q",
                "-w",
                "net.ipv4.ip_forward=1",
                "net.bridge.bridge-nf-call-iptables=1",
            ],
        ]
        for cmd in steps:
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if res.returncode != 0:
                self.delete()
                raise ClusterError("create network namespace", f"{' '.join(cmd)}: {res.stderr.strip()}")
        log(f"network namespace {self.name}: node address {self.node.ip}, no route out")

    def delete(self) -> None:
        """Delete the namespace, and /run/netns too when ours was the last one (`ip netns add` made it a
        mount point)."""
        if self.exists():
            subprocess.run(["ip", "netns", "delete", self.name], check=False)
        runtime_dir = self.path.parent
        if runtime_dir.is_dir() and not any(runtime_dir.iterdir()):
            host.unmount_under(runtime_dir)
            with contextlib.suppress(OSError):
                runtime_dir.rmdir()

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Move this thread into the namespace (children inherit it) and back on exit.

        setns(2) on the network namespace alone, not `ip netns exec`: that also makes a mount
        namespace with its own /sys, which hides the cgroup mounts from the kubelet ("failed to find
        cgroup mounts") and keeps the kubelet's volume mounts out of containerd's sight.
        """
        home = os.open("/proc/self/ns/net", os.O_RDONLY)
        try:
            with open(self.path, "rb") as target:
                _setns(target.fileno())
            try:
                yield
            finally:
                _setns(home)
        finally:
            os.close(home)


def _setns(fd: int) -> None:
    """setns(2) into the network namespace `fd` refers to (os.setns arrives with Python 3.12)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


class RealNode:
    """containerd, kubelet and kube-proxy for `cluster.real_node`, run in this process's network namespace.

    `up()` starts them, imports the images and waits for the node to be Ready; `down()` stops the
    pods' containers through containerd, then the daemons, and removes the mounts, pod network
    namespaces, cgroups and CNI state they leave. `down()` also works from the pids file alone.
    containerd's root (images, unpacked layers, no containers once down) stays in
    ~/.cache/pykueue/containerd: the next run imports only the layers that changed, and a
    teardown does not spend seconds deleting hundreds of MB.
    """

    def __init__(
        self, cluster: Cluster, directory: Path, *, images: Sequence[Path] = (), timeout: float = 120.0
    ) -> None:
        if cluster.real_node is None:
            raise ValueError("the cluster was not started with a real node (Cluster(real_node=...))")
        self.cluster = cluster
        self.spec: RealNodeSpec = cluster.real_node
        self.dir = directory.resolve()
        self.images = list(images)
        self.timeout = timeout
        self._procs: list[Proc] = []

    # ------------------------------------------------------------------ paths

    @property
    def socket(self) -> Path:
        return self.dir / "containerd" / "state" / "containerd.sock"

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    def _ctr(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    # ------------------------------------------------------------------ public API

    def up(self) -> RealNode:
        """Start everything and wait for the node to be Ready; on failure tear down and raise."""
        started = time.monotonic()
        try:
            self._up()
        except BaseException:
            self.down()
            raise
        log(f"real node {self.spec.name} Ready in {time.monotonic() - started:.1f}s")
        return self

    def down(self) -> None:
        """Stop what `up` started and remove what it left; safe to call twice or after a crash."""
        procs = {p.name: p for p in (self._procs or read_pid_file(self.dir / "pids"))}
        for name in ("kube-proxy", "kubelet", "cluster-dns"):  # first, or the kubelet restarts what we stop
            if name in procs:
                kill_group(procs[name])
        if "containerd" in procs:
            if not procs["containerd"].alive() and self.socket.parent.exists():
                # Its shims outlived it (they leave containerd's process group): only it knows them.
                procs["containerd"] = self._start("containerd", self._containerd_cmd())
                try:
                    self._wait("containerd (cleanup)", lambda: self._ctr("version").returncode == 0, timeout=30)
                except ClusterError as exc:
                    log(f"cannot remove leftover containers: {exc}")
            self._remove_containers()
            kill_group(procs["containerd"])
        self._procs = []
        (self.dir / "pids").unlink(missing_ok=True)
        host.unmount_under(self.dir)
        _remove_cgroups()
        self._remove_host_leftovers()
        shutil.rmtree(self.dir / "containerd", ignore_errors=True)

    # ------------------------------------------------------------------ bring-up

    def _up(self) -> None:
        bin_dir = self.cluster.bin_dir
        for exe in ("kubelet", "kube-proxy"):
            if not os.access(bin_dir / exe, os.X_OK):
                raise ClusterError("find node binaries", f"{bin_dir / exe} missing: run e2e/build-binaries.sh --node")
        self.down()
        for sub in ("containerd", "cni", "kubelet", "pod-logs", "logs"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self._write_configs()

        self._start_containerd()
        try:
            self._import_images()
        except ClusterError as exc:
            # The cached root can hold layers whose parent snapshot is gone ("parent snapshot ... does
            # not exist", seen when a rebuilt image's new layers are unpacked): start again from an
            # empty root, once (about 13 s of importing).
            log(f"{exc}; removing containerd's cached root and importing again")
            kill_group(self._procs.pop())
            shutil.rmtree(host.cache_root() / "containerd", ignore_errors=True)
            self._start_containerd()
            self._import_images()

        self._procs.append(self._start("cluster-dns", self._cluster_dns_cmd()))
        self._procs.append(self._start("kubelet", self._kubelet_cmd()))
        self._procs.append(self._start("kube-proxy", self._kube_proxy_cmd()))
        self._wait("node Ready", self._node_ready, component="kubelet")

    def _start_containerd(self) -> None:
        self._procs.append(self._start("containerd", self._containerd_cmd()))
        self._wait("containerd ready", lambda: self._ctr("version").returncode == 0, component="containerd")

    def _import_images(self) -> None:
        for archive in self.images:
            t0 = time.monotonic()
            res = self._ctr("images", "import", str(archive), timeout=600)
            if res.returncode != 0:
                raise ClusterError("import image", f"ctr images import {archive}: {res.stderr.strip()}")
            log(f"imported {archive.name} into containerd ({time.monotonic() - t0:.1f}s)")

    def _start(self, name: str, cmd: list[str]) -> Proc:
        try:
            proc = spawn(name, cmd, log_path=self.logs_dir / f"{name}.log", cwd=self.dir, env={"PATH": DAEMON_PATH})
        except OSError as exc:
            raise ClusterError(f"start {name}", str(exc)) from exc
        write_pid_file(self.dir / "pids", [*self._procs, proc])
        log(f"started {name} (pid {proc.pid}, log {proc.log})")
        return proc

    def _wait(
        self, step: str, probe: Callable[[], bool], *, component: str | None = None, timeout: float | None = None
    ) -> None:
        """Poll `probe`; fail fast if `component` died, else after the timeout (its log tail attached)."""
        started = time.monotonic()
        proc = next((p for p in self._procs if p.name == component), None)
        while not probe():
            elapsed = time.monotonic() - started
            if proc is not None and not proc.alive():
                raise ClusterError(step, f"{component} exited with code {proc.exit_code()}", elapsed, tail(proc.log))
            if elapsed > (timeout or self.timeout):
                log_path = proc.log if proc else self.logs_dir / "containerd.log"
                raise ClusterError(step, "timed out", elapsed, tail(log_path))
            time.sleep(0.5)
        log(f"{step} ({time.monotonic() - started:.1f}s)")

    def _node_ready(self) -> bool:
        res = self.cluster.kubectl("get", "node", self.spec.name, "-o", "json")
        if res.returncode != 0:
            return False
        conditions = json.loads(res.stdout).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    # ------------------------------------------------------------------ teardown

    def _remove_containers(self) -> None:
        """Kill every task and delete every container, so the runc shims exit with them."""
        tasks = self._ctr("tasks", "ls", "-q").stdout.split()
        for task in tasks:
            self._ctr("tasks", "kill", "--all", "--signal", "SIGKILL", task)
        deadline = time.monotonic() + 10
        while tasks and time.monotonic() < deadline:  # the CRI plugin deletes a task when it exits
            time.sleep(0.2)
            tasks = self._ctr("tasks", "ls", "-q").stdout.split()
        for task in tasks:
            self._ctr("tasks", "delete", "--force", task)
        for container in self._ctr("containers", "ls", "-q").stdout.split():
            self._ctr("containers", "delete", container)

    def _remove_host_leftovers(self) -> None:
        """What the daemons write outside our directory whatever they are told: the kubelet's log links
        and device-plugin socket, libcni's result cache, the shims' socket dir. Ours go; the directories
        go only when nothing else is left in them."""
        ours = str(self.dir)
        for link in Path("/var/log/containers").glob("*.log"):
            if link.is_symlink() and os.readlink(link).startswith(ours + "/"):
                link.unlink()
        for entry in (CNI_CACHE / "results").glob("*"):
            with contextlib.suppress(OSError):
                if ours in entry.read_text():  # each names the pod netns it configured, under our state dir
                    entry.unlink()
        DEVICE_PLUGIN_SOCKET.unlink(missing_ok=True)  # a fixed path: one kubelet per machine, ours
        for d in HOST_DIRS:
            with contextlib.suppress(OSError):  # not empty, or not there
                d.rmdir()

    # ------------------------------------------------------------------ config files

    def _write_configs(self) -> None:
        state = self.socket.parent
        (self.dir / "containerd" / "config.toml").write_text(
            _containerd_toml(root=host.cache_root() / "containerd", state=state, cni_conf=self.dir / "cni")
        )
        (self.dir / "cni" / f"10-{CNI_NETWORK}.conflist").write_text(json.dumps(self._cni_conflist(), indent=2))
        # The node's own resolver; pods get the cluster DNS (e2e/clusterdns.py) on the node's address.
        (self.dir / "resolv.conf").write_text("nameserver 127.0.0.1\noptions ndots:1\n")
        (self.dir / "kubelet.yaml").write_text(yaml.safe_dump(self._kubelet_config(), sort_keys=False))
        (self.dir / "kube-proxy.yaml").write_text(yaml.safe_dump(self._kube_proxy_config(), sort_keys=False))

    def _cni_conflist(self) -> dict[str, Any]:
        return {
            "cniVersion": "1.0.0",
            "name": CNI_NETWORK,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": CNI_BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": self.spec.pod_cidr}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.dir / "cni-ipam"),
                    },
                }
            ],
        }

    def _kubelet_config(self) -> dict[str, Any]:
        crt, key = self.cluster.kubelet_serving
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs",  # no systemd here
            "failCgroupV1": False,  # this kernel mounts v1 hierarchies (plus cgroup2 at unified/)
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "address": self.spec.ip,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "tlsCertFile": str(crt),
            "tlsPrivateKeyFile": str(key),
            # The apiserver comes with a client certificate from our CA; the rest with tokens.
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.cluster.ca_crt)},
            },
            "authorization": {"mode": "Webhook"},
            "registerWithTaints": [self.spec.taint],
            "clusterDomain": clusterdns.DOMAIN,
            "clusterDNS": [self.spec.ip],
            "resolvConf": str(self.dir / "resolv.conf"),
            "podLogsDir": str(self.dir / "pod-logs"),
            "serializeImagePulls": False,
            # The disk is shared with the rest of the machine: never evict or collect our imported images.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "nodeStatusReportFrequency": "10s",
            "syncFrequency": "10s",
        }

    def _kubelet_cmd(self) -> list[str]:
        labels = ",".join(f"{k}={v}" for k, v in self.spec.labels.items())
        return [
            str(self.cluster.bin_dir / "kubelet"),
            f"--config={self.dir / 'kubelet.yaml'}",
            f"--kubeconfig={self.cluster.kubeconfig_of('kubelet')}",
            f"--hostname-override={self.spec.name}",
            f"--node-ip={self.spec.ip}",
            f"--node-labels={labels}",
            f"--root-dir={self.dir / 'kubelet'}",
            "--v=1",
        ]

    def _kube_proxy_config(self) -> dict[str, Any]:
        return {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "iptables",
            "clientConnection": {"kubeconfig": str(self.cluster.kubeconfig_of("kube-proxy"))},
            "hostnameOverride": self.spec.name,
            "clusterCIDR": self.spec.pod_cidr,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # Conntrack limits are host-wide sysctls: leave them alone.
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            "iptables": {
                "localhostNodePorts": False,
                "masqueradeAll": False,
                "minSyncPeriod": "1s",
                "syncPeriod": "30s",
            },
            "nodePortAddresses": ["primary"],
        }

    def _cluster_dns_cmd(self) -> list[str]:
        return [
            sys.executable,
            str(Path(clusterdns.__file__).resolve()),
            f"--listen={self.spec.ip}:53",
            f"--kubectl={self.cluster.bin_dir / 'kubectl'}",
            f"--kubeconfig={self.cluster.kubeconfig}",
        ]

    def _kube_proxy_cmd(self) -> list[str]:
        return [str(self.cluster.bin_dir / "kube-proxy"), f"--config={self.dir / 'kube-proxy.yaml'}", "--v=1"]

    def _containerd_cmd(self) -> list[str]:
        return ["containerd", "--config", str(self.dir / "containerd" / "config.toml")]


def _containerd_toml(*, root: Path, state: Path, cni_conf: Path) -> str:
    """containerd 1.6's CRI with its own root, state and socket, cgroupfs, and our pause image."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""\
version = 2
root = "{root}"
state = "{state}"

[grpc]
  address = "{state}/containerd.sock"

[plugins."io.containerd.internal.v1.opt"]
  path = "{root}/opt"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  enable_selinux = false
  # Pod network namespaces under our state dir, not /run/netns, so teardown finds only ours.
  netns_mounts_under_state_dir = true
  # Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj (pause asks for -998) and every
  # sandbox fails: "nsexec: failed to update /proc/self/oom_score_adj: Permission denied".
  restrict_oom_score_adj = true

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{state}/runc"

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{cni_conf}"
"""


def _remove_cgroups() -> None:
    """rmdir the kubelet's pod cgroups (empty once the containers are gone), leaves first."""
    for hierarchy in CGROUP_ROOT.iterdir():
        top = hierarchy / KUBEPODS
        if not top.is_dir():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()
