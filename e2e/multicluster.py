#!/usr/bin/env python3
"""Three control planes on one host for MultiKueue: a manager and two workers, as upstream's
hack/testing/e2e-multikueue-test.sh makes them with kind (clusters kind-manager, kind-worker1 and
kind-worker2, each with one worker node labelled as hack/testing/multikueue/*.kind.yaml label it).

Each member is a whole system (our Stack, or upstream's manager for calibration: the factory decides)
on its own Cluster, with its own Configuration, kwok node, pod addresses and fakebin state file (so
`kubectl exec ... curl /exit` into a worker's pod ends that worker's pod). The workers' API servers
listen where kind would put them for the manager: https://kind-workerN-control-plane:6443, here
127.0.0.2 and 127.0.0.3, port 6443, their certificates naming kind-workerN-control-plane. Only the
manager's Kueue must resolve those names (the suite's own clients use its contexts' addresses), so it
runs in a private mount namespace whose /etc/hosts is a bind-mounted file of ours: the host's is
never edited. Worker apiservers take `--service-account-max-token-expiration=168h`, as upstream's
worker kind config sets, since the suite asks each for a 7-day token.

The suite's kubeconfig has contexts kind-kind-manager, kind-kind-worker1 and kind-kind-worker2 (kubeadm's
admin of each), current-context kind-kind-manager, as `kind export kubeconfig` leaves it.

    python e2e/multicluster.py up|down [--dir DIR]    # three of our stacks, MultiKueue enabled

`connect_workers` does on the clusters what upstream's suite does before its specs (a ServiceAccount
on each worker, its token in a kubeconfig Secret on the manager) and adds the MultiKueueClusters, a
MultiKueueConfig and an AdmissionCheck: for our own tests and the soak (e2e/reliability_multikueue.py).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from cluster import POD_CIDR, Cluster, ClusterError, FakeNode, HostExec  # noqa: E402
from stack import Stack, StackError  # noqa: E402

from webhook import kube as k  # noqa: E402

FAKEBIN = HERE / "fakebin"
DEFAULT_DIR = ROOT / ".run" / "multicluster"
#: What the manager's Kueue must resolve: `util.GetClusterServerAddress` makes https://<name>-control-plane:6443.
APISERVER_PORT = 6443
#: upstream's hack/testing/multikueue/worker-cluster.kind.yaml: the suite's TokenRequest asks for 7 days.
WORKER_APISERVER_ARGS = ("--service-account-max-token-expiration=168h",)
#: Both kind configs label their one worker node so.
NODE_LABELS = {"instance-type": "on-demand", "cloud.provider.com/node-group": "tas-node"}

#: upstream e2e's MultiKueue Configuration (test/e2e/config/multikueue/baseline/controller_manager_config.yaml,
#: which `make test-multikueue-e2e-baseline` deploys to all three clusters), less leaderElection (each
#: system keeps its own Lease settings). Each system adds its host ports.
MULTIKUEUE_CONFIG = """\
metrics:
  enableClusterQueueResources: true
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
fairSharing:
  preemptionStrategies: ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
  - "batch/job"
  - "pod"
  - "deployment"
  - "statefulset"
featureGates:
  MultiKueue: true
  MultiKueueManagerQuotaAutomation: true
tls:
  minVersion: "VersionTLS12"
  cipherSuites:
    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    - TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
    - TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
    - TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
    - TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
"""


def log(msg: str) -> None:
    print(f"multicluster: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Member:
    """One of the three clusters: kind's names for it, and where its API server listens."""

    name: str
    listen_ip: str
    apiserver_port: int | None
    pod_cidr: str

    @property
    def is_worker(self) -> bool:
        return self.name != "manager"

    @property
    def control_plane(self) -> str:
        """kind's control-plane node, the host name upstream's suite puts in a worker's kubeconfig."""
        return f"kind-{self.name}-control-plane"

    @property
    def context(self) -> str:
        """The suite's context: "kind-" + the cluster name (`util.CreateClientUsingCluster`)."""
        return f"kind-kind-{self.name}"

    @property
    def node(self) -> FakeNode:
        return FakeNode(f"kind-{self.name}-worker", dict(NODE_LABELS))

    def cluster_args(self) -> dict[str, Any]:
        """The `Cluster` keywords that set this member apart from the other two (its one node aside: `node`)."""
        return {
            "listen_ip": self.listen_ip,
            "apiserver_port": self.apiserver_port,
            "extra_sans": (self.control_plane,),
            "pod_cidr": self.pod_cidr,
            "apiserver_args": WORKER_APISERVER_ARGS if self.is_worker else (),
        }


#: Distinct pod CIDRs keep pod IPs unique across the run (10.245/16 is the real node's).
MEMBERS = (
    Member("manager", "127.0.0.1", None, POD_CIDR),
    Member("worker1", "127.0.0.2", APISERVER_PORT, "10.246.0.0/16"),
    Member("worker2", "127.0.0.3", APISERVER_PORT, "10.247.0.0/16"),
)


class System(Protocol):
    """What the three-cluster system needs of each member: e2e/upstream_suite.py's systems fit."""

    @property
    def cluster(self) -> Cluster: ...

    def up(self) -> tuple[str, str]:
        """Start; (metrics URL, the Configuration in use)."""
        ...

    def down(self) -> None: ...

    def logs(self) -> Path: ...


#: Builds a member's system: (member, its directory, kwok's host exec, bind mounts its Kueue must run under).
SystemFactory = Callable[[Member, Path, HostExec, Mapping[Path, Path]], System]
#: Runs once a member is up, before the suite: (member, its system, its Configuration); e.g. the stand-ins.
Prepare = Callable[[Member, System, str], None]


def hosts_text() -> str:
    """The manager's /etc/hosts: localhost, and each worker's control-plane name at its address."""
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
    lines += [f"{m.listen_ip} {m.control_plane}" for m in MEMBERS if m.is_worker]
    return "\n".join(lines) + "\n"


def private_mounts(binds: Mapping[Path, Path]) -> list[str]:
    """A command prefix that runs the command in a private mount namespace with each `source` bind-mounted
    over its `target` (binds: target -> source); the host's mounts stay as they are. Empty when no binds.
    As root a plain mount namespace; otherwise a user namespace mapping us to root inside it."""
    if not binds:
        return []
    script = " && ".join(f"mount --bind {shlex.quote(str(src))} {shlex.quote(str(dst))}" for dst, src in binds.items())
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *userns, "--mount", "--propagation", "private", "--", "sh", "-c", f'{script} && exec "$@"', "sh"]


def suite_kubeconfig(admins: Mapping[Member, Path]) -> dict[str, Any]:
    """One kubeconfig with a context per member (kind's names), from each member's admin kubeconfig."""
    clusters, users, contexts = [], [], []
    for member, path in admins.items():
        doc = yaml.safe_load(path.read_text())
        ctx = next(c["context"] for c in doc["contexts"] if c["name"] == doc["current-context"])
        cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
        clusters.append({"name": member.context, "cluster": cluster})
        users.append({"name": member.context, "user": user})
        contexts.append({"name": member.context, "context": {"cluster": member.context, "user": member.context}})
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": MEMBERS[0].context,
        "preferences": {},
    }


class MultiClusterSystem:
    """A manager and two workers side by side, each a system `make` builds in `<out>/<member>`."""

    def __init__(self, out: Path, make: SystemFactory, *, prepare: Prepare | None = None) -> None:
        self.out = out
        self.prepare = prepare
        self.hosts_file = out / "manager-hosts"
        self.kubeconfig = out / "kubeconfig"
        self.systems: dict[Member, System] = {}
        for member in MEMBERS:
            directory = out / member.name
            host_exec = HostExec(
                f"{FAKEBIN}:/usr/local/bin:/usr/bin:/bin", {"UPSTREAM_SUITE_STATE": str(self.state_file(member))}
            )
            binds = {} if member.is_worker else {Path("/etc/hosts"): self.hosts_file}
            self.systems[member] = make(member, directory, host_exec, binds)

    def state_file(self, member: Member) -> Path:
        """fakebin's state for commands kwok runs on `member`'s pods (its kubectl, kubeconfig, metrics URL)."""
        return self.out / member.name / "fakebin-state.json"

    @property
    def manager(self) -> System:
        return self.systems[MEMBERS[0]]

    def up(self) -> None:
        """Start the three members in turn, then write the suite's kubeconfig; on failure stop what started."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.hosts_file.write_text(hosts_text())
        try:
            for member, system in self.systems.items():
                log(f"starting {member.name} (API server {member.listen_ip}:{member.apiserver_port or 'free port'})")
                (self.out / member.name).mkdir(parents=True, exist_ok=True)
                metrics_url, config = system.up()
                if self.prepare is not None:
                    self.prepare(member, system, config)
                cluster = system.cluster
                cluster.bind_cluster_admins()
                self.state_file(member).write_text(
                    json.dumps(
                        {
                            "kubectl": str(cluster.bin_dir / "kubectl"),
                            "kubeconfig": str(cluster.kubeconfig),
                            "metrics_url": metrics_url,
                        }
                    )
                )
                self.state_file(member).with_suffix(".token").unlink(missing_ok=True)
            doc = suite_kubeconfig({m: s.cluster.cluster_admin_kubeconfig for m, s in self.systems.items()})
            self.kubeconfig.write_text(yaml.safe_dump(doc, sort_keys=False))
            self.kubeconfig.chmod(0o600)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stop every member, the manager last; one failing to stop does not keep the others up."""
        errors = []
        for member, system in reversed(self.systems.items()):
            try:
                system.down()
            except (ClusterError, StackError, OSError) as exc:
                errors.append(f"{member.name}: {exc}")
        if errors:
            log("teardown problems: " + "; ".join(errors))

    @contextlib.contextmanager
    def session(self) -> Iterator[MultiClusterSystem]:
        self.up()
        try:
            yield self
        finally:
            self.down()


class OurMember:
    """Our Stack as a `System` (the CLI's members): the MultiKueue Configuration, no dashboard.
    `config` is merged into the server's Configuration; `job_pods_run` as `Cluster` takes it (by
    default pods run until deleted, as upstream's suite expects). `ours(...)` binds both."""

    def __init__(
        self,
        member: Member,
        directory: Path,
        host_exec: HostExec,
        binds: Mapping[Path, Path],
        *,
        config: str = MULTIKUEUE_CONFIG,
        job_pods_run: float = math.inf,
    ) -> None:
        self.config = config
        self.stack = Stack(
            directory,
            teardown_on_exit=False,
            job_pods_run=job_pods_run,
            host_exec=host_exec,
            nodes=(member.node,),
            cluster_args=member.cluster_args(),
            command_prefix=private_mounts(binds),
            dashboard=False,
        )

    @property
    def cluster(self) -> Cluster:
        return self.stack.cluster

    def up(self) -> tuple[str, str]:
        self.stack.up(self.config)
        return self.stack.metrics_url, (self.stack.dir / "server-config.yaml").read_text()

    def down(self) -> None:
        self.stack.down()

    def logs(self) -> Path:
        return self.stack.server_log


def ours(*, config: str = MULTIKUEUE_CONFIG, job_pods_run: float = math.inf) -> SystemFactory:
    """A factory of our members with this Configuration and pod run time."""
    return functools.partial(OurMember, config=config, job_pods_run=job_pods_run)


# == the manager's access to the workers (upstream's test/util/multikueue.go) ===========================
MANAGER_SA, MANAGER_SA_NS, MANAGER_ROLE = "mksa-sa", "kueue-system", "mksa-role"
#: `MultiKueueRulesForManager` for MULTIKUEUE_CONFIG's frameworks: the manager watches Workloads, the queues
#: and each enabled framework's kind (Deployments go through pods); a kind it may not list keeps it inactive.
_MANAGED_KINDS = (("batch", "jobs"), ("", "pods"), ("apps", "statefulsets"))
_ALL_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
TOKEN_SECONDS = 7 * 24 * 3600


def manager_access_objects() -> list[dict[str, Any]]:
    """ClusterRole `mksa-role`, ServiceAccount `kueue-system/mksa-sa` and the binding, on a worker."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": _ALL_VERBS},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues", "localqueues"],
            "verbs": ["get", "list", "watch"],
        },
        *({"apiGroups": [group], "resources": [kind], "verbs": _ALL_VERBS} for group, kind in _MANAGED_KINDS),
        *({"apiGroups": [group], "resources": [f"{kind}/status"], "verbs": ["get"]} for group, kind in _MANAGED_KINDS),
    ]
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": MANAGER_ROLE},
            "rules": rules,
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": MANAGER_SA, "namespace": MANAGER_SA_NS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "mksa-crb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MANAGER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": MANAGER_SA, "namespace": MANAGER_SA_NS}],
        },
    ]


_PATHS = {
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles"),
    "ServiceAccount": ("v1", "serviceaccounts"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    "Secret": ("v1", "secrets"),
    "MultiKueueCluster": ("kueue.x-k8s.io/v1beta2", "multikueueclusters"),
    "MultiKueueConfig": ("kueue.x-k8s.io/v1beta2", "multikueueconfigs"),
    "AdmissionCheck": ("kueue.x-k8s.io/v1beta2", "admissionchecks"),
}


def create_all(kube: k.Kube, objs: Sequence[Mapping[str, Any]]) -> None:
    """Create each object; one that exists already is left as it is."""
    for obj in objs:
        api_version, resource = _PATHS[obj["kind"]]
        with contextlib.suppress(k.Conflict):
            kube.create(k.object_path(api_version, resource, obj["metadata"].get("namespace")), obj)


def worker_kubeconfig(member: Member, cluster: Cluster) -> str:
    """What `util.KubeconfigForMultiKueueSA` writes for a worker: the manager's ServiceAccount there
    (made here), a 7-day token, the worker's control-plane name and its CA data."""
    kube = k.Kube(str(cluster.kubeconfig))
    create_all(kube, manager_access_objects())
    token = kube.create(
        k.object_path("v1", "serviceaccounts", MANAGER_SA_NS, MANAGER_SA) + "/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        },
    )["status"]["token"]
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = admin["clusters"][0]["cluster"]["certificate-authority-data"]
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "default-cluster",
                    "cluster": {
                        "server": f"https://{member.control_plane}:{APISERVER_PORT}",
                        "certificate-authority-data": ca,
                    },
                }
            ],
            "users": [{"name": "default-user", "user": {"token": token}}],
            "contexts": [
                {"name": "default-context", "context": {"cluster": "default-cluster", "user": "default-user"}}
            ],
            "current-context": "default-context",
        }
    )


def connect_workers(system: MultiClusterSystem, check: str, *, timeout: float = 60) -> k.Kube:
    """On the manager: a Secret and a MultiKueueCluster (named after the member) per worker, MultiKueueConfig
    and AdmissionCheck `check` over both; waits until the check is Active. Returns the manager's admin client."""
    manager = k.Kube(str(system.manager.cluster.kubeconfig))
    objs: list[dict[str, Any]] = []
    for member, member_system in system.systems.items():
        if not member.is_worker:
            continue
        kubeconfig = worker_kubeconfig(member, member_system.cluster)
        secret = f"{member.name}-kubeconfig"
        objs += [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": MANAGER_SA_NS},
                "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
            },
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "MultiKueueCluster",
                "metadata": {"name": member.name},
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}},
            },
        ]
    objs += [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "MultiKueueConfig",
            "metadata": {"name": check},
            "spec": {"clusters": [m.name for m in MEMBERS if m.is_worker]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": check},
            },
        },
    ]
    create_all(manager, objs)
    deadline = time.monotonic() + timeout
    while True:
        ac = manager.get(k.object_path("kueue.x-k8s.io/v1beta2", "admissionchecks", None, check)) or {}
        conditions = (ac.get("status") or {}).get("conditions") or ()
        active: dict[str, Any] = next((c for c in conditions if c.get("type") == "Active"), {})
        if active.get("status") == "True" and active.get("reason") == "Active":
            return manager
        if time.monotonic() > deadline:
            raise AssertionError(f"admission check {check} not Active after {timeout}s: {active}")
        time.sleep(0.5)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    system = MultiClusterSystem(args.dir.resolve(), OurMember)
    try:
        if args.command == "up":
            system.up()
            print(system.kubeconfig)
        else:
            system.down()
    except (ClusterError, StackError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
