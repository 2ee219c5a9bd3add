"""The systems for upstream's suites that reconfigure and restart Kueue (test/e2e/sequential/...).

Those specs edit ConfigMap kueue-system/kueue-manager-config, restart Deployment
kueue-controller-manager (`kubectl.kubernetes.io/restartedAt`) and wait until its new pods are the
webhook Service's endpoints and one of them holds the Lease; the HA specs scale it to two replicas,
clear caBundles and kill the leader's pod. So the system has to be a real Deployment whose pods run
it: the real node of `make e2e-real` (e2e/real.py RealCluster), the system's image imported into
the node's containerd, the Deployment's pods pinned to that node and every other pod on kwok's nodes.
Each suite names the folder of upstream's test/e2e/config its Makefile target deploys (E2E_CONFIG_FOLDER:
baseline, extended):
  ours      our image (e2e/image.py) installed with `make deploy`, then given that folder's
            Configuration restricted to the integrations we implement, and its one replica;
  upstream  upstream's manager image (e2e/image.py, from the cmd/kueue binary e2e/build-kueue.sh
            builds), installed from that folder itself (`kubectl kustomize`).
The real operators a suite needs (JobSet, LWS, AppWrapper: e2e/operators.py) run as host processes
inside the node's network namespace, started before the system so their CRDs exist when it starts;
their stand-in Deployments' pods and the pods they make run on kwok, as the specs' own pods do.
A suite of upstream's Prometheus specs also gets an in-cluster Prometheus on the node (e2e/prometheus.py):
its operator before the system, the system's ServiceMonitor after it, as upstream's e2e-test.sh.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import image  # noqa: E402
import prometheus  # noqa: E402
import real  # noqa: E402
from cluster import Cluster, HostExec  # noqa: E402
from operators import Operators  # noqa: E402
from stack import merged  # noqa: E402

from webhook.api import integrations  # noqa: E402
from webhook.config import support  # noqa: E402
from webhook.config.types import DEFAULT_LEADER_ELECTION_ID  # noqa: E402
from webhook.install import installer, objects  # noqa: E402

NAMESPACE = objects.Settings().namespace
OURS_IMAGE = "pykueue:dev"
UPSTREAM_IMAGE = "localhost/pykueue/upstream-kueue:e2e"
#: upstream's e2e kustomizations, one folder per E2E_CONFIG_FOLDER (hack/make/test.mk).
UPSTREAM_E2E_CONFIGS = "test/e2e/config"


class RealSystemError(RuntimeError):
    """A step of bringing a system up on the real node failed; the message says which."""


def restricted(upstream: dict[str, Any]) -> dict[str, Any]:
    """An upstream Configuration restricted to what we implement (anything else is refused at start):
    its integrations less those we lack, its feature gates less those of features we lack
    (`support.UNIMPLEMENTED_GATES`)."""
    implemented = {f.name for f in integrations.implemented()}
    frameworks = [f for f in (upstream.get("integrations") or {}).get("frameworks", []) if f in implemented]
    gates = {g: on for g, on in (upstream.get("featureGates") or {}).items() if g not in support.UNIMPLEMENTED_GATES}
    cfg = {k: v for k, v in upstream.items() if k not in ("integrations", "featureGates")}
    cfg["integrations"] = {**(upstream.get("integrations") or {}), "frameworks": frameworks}
    cfg["featureGates"] = gates
    return cfg


def our_configuration(upstream_text: str) -> str:
    """The Configuration we ship with upstream e2e's (`upstream_text`) laid over it, `restricted`."""
    upstream = restricted(yaml.safe_load(upstream_text))
    own = ("integrations", "featureGates")  # upstream's alone, not merged with ours
    cfg = merged(yaml.safe_load(objects.DEFAULT_CONFIGURATION), {k: v for k, v in upstream.items() if k not in own})
    cfg.update({k: upstream[k] for k in own})
    return yaml.safe_dump(cfg, sort_keys=False)


def on_real_node(spec: dict[str, Any], cluster: Cluster) -> None:
    """Pin a pod template to the real node. Only the Deployment goes there: other pods the specs make in
    kueue-system (the metrics specs' curl pod) stay on kwok, whose `kubectl exec` reaches this host."""
    selector, toleration = cluster.real_node_placement()
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **selector}
    spec["tolerations"] = [*spec.get("tolerations", []), toleration]


def pin_deployment(kubectl: str, cluster: Cluster) -> None:
    """`on_real_node` for the installed Deployment, then kueue-system's namespace-wide placement dropped."""
    spec: dict[str, Any] = {}
    on_real_node(spec, cluster)
    patch = {"spec": {"template": {"spec": spec}}}
    kubectl_ok(
        kubectl,
        "-n",
        NAMESPACE,
        "patch",
        f"deployment/{objects.DEPLOYMENT}",
        "--type=strategic",
        "-p",
        json.dumps(patch),
    )
    cluster.place_on_real_node(NAMESPACE, placed=False)


def upstream_e2e_install(module: Path, kubectl: str, folder: str) -> list[dict[str, Any]]:
    """upstream's test/e2e/config/`folder` as kustomize renders it: what its Makefile target deploys."""
    res = subprocess.run(
        [kubectl, "kustomize", str(module / UPSTREAM_E2E_CONFIGS / folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise RealSystemError(f"kubectl kustomize {UPSTREAM_E2E_CONFIGS}/{folder}: {res.stderr.strip()}")
    return [d for d in yaml.safe_load_all(res.stdout) if d]


def manager_configuration(docs: list[dict[str, Any]]) -> str:
    """The Configuration file of the install's ConfigMap kueue-manager-config."""
    return next(
        str(d["data"][objects.CONFIG_FILE])
        for d in docs
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == objects.CONFIG_MAP
    )


def manager_replicas(docs: list[dict[str, Any]]) -> int:
    """The install's replica count for the manager Deployment (the folder's `replicas:` entry)."""
    return next(
        int(d["spec"].get("replicas", 1))
        for d in docs
        if d["kind"] == "Deployment" and d["metadata"]["name"] == objects.DEPLOYMENT
    )


def upstream_install(docs: list[dict[str, Any]], cluster: Cluster) -> list[dict[str, Any]]:
    """`docs` (upstream_e2e_install) with the manager image ours to import and its pods on the real node."""
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == objects.DEPLOYMENT:
            for container in doc["spec"]["template"]["spec"]["containers"]:
                container["image"] = UPSTREAM_IMAGE
                container["imagePullPolicy"] = "IfNotPresent"
            on_real_node(doc["spec"]["template"]["spec"], cluster)
    return docs


def kubectl_ok(kubectl: str, *args: str, stdin: str | None = None) -> str:
    res = subprocess.run([kubectl, *args], input=stdin, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RealSystemError(f"kubectl {' '.join(args[:3])}: {res.stderr.strip()[-800:]}")
    return res.stdout


def apply(cluster: Cluster, docs: list[dict[str, Any]]) -> None:
    """Server-side apply as one field manager, CRDs first and established before anything else."""
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    rest = [d for d in docs if d["kind"] != "CustomResourceDefinition"]
    for batch in (crds, rest):
        if not batch:
            continue
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": batch})
        steps = [("apply", "--server-side", "--force-conflicts", "--field-manager=upstream-suite", "-f", "-")]
        if batch is crds:
            steps.append(
                (
                    "wait",
                    "--for=condition=Established",
                    "--timeout=60s",
                    *(f"crd/{d['metadata']['name']}" for d in crds),
                )
            )
        for args in steps:
            res = cluster.kubectl(*args, input=doc)
            if res.returncode != 0:
                raise RealSystemError(f"kubectl {args[0]}: {res.stderr.strip()[-800:]}")


def reconfigure(cluster: Cluster, kubectl: str, config_text: str, replicas: int) -> None:
    """What a platform engineer (and the suite) does: new ConfigMap, replicas, rollout restart, wait."""
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": objects.CONFIG_MAP, "namespace": NAMESPACE},
        "data": {objects.CONFIG_FILE: config_text},
    }
    apply(cluster, [cm])
    kubectl_ok(kubectl, "-n", NAMESPACE, "scale", f"deployment/{objects.DEPLOYMENT}", f"--replicas={replicas}")
    kubectl_ok(kubectl, "-n", NAMESPACE, "rollout", "restart", f"deployment/{objects.DEPLOYMENT}")
    wait_available(kubectl)


def wait_available(kubectl: str) -> None:
    try:
        installer.wait_until_available(kubectl, namespace=NAMESPACE, lease=DEFAULT_LEADER_ELECTION_ID)
    except installer.DeployError as exc:
        pods = subprocess.run([kubectl, "get", "pods", "-A", "-o", "wide"], capture_output=True, text=True, check=False)
        crashed = subprocess.run(
            [kubectl, "-n", NAMESPACE, "logs", "-l", "control-plane=controller-manager", "--previous", "--tail=5"],
            capture_output=True,
            text=True,
            check=False,
        )
        raise RealSystemError(f"{exc}\n{pods.stdout}\nlast lines of restarted containers:\n{crashed.stdout}") from exc


def metrics_url(kubectl: str) -> str:
    """The metrics Service's ClusterIP: this host is inside the node's network namespace, where kube-proxy
    routes it (e2e/fakebin/curl sends the specs' scrapes there)."""
    ip = kubectl_ok(
        kubectl, "-n", NAMESPACE, "get", "service", objects.METRICS_SERVICE, "-o", "jsonpath={.spec.clusterIP}"
    )
    return f"https://{ip.strip()}:{objects.METRICS_PORT}/metrics"


class RealNodeSystem:
    """`name` (ours or upstream) as a Deployment on a fresh cluster's real node, installed as upstream's
    test/e2e/config/`config_folder` says, with the operators `integrations` names beside it and, with
    `with_prometheus`, an in-cluster Prometheus scraping it."""

    def __init__(
        self,
        name: str,
        directory: Path,
        host_exec: HostExec,
        kueue_bin: Path,
        module: Path,
        *,
        config_folder: str,
        integrations: tuple[str, ...] = (),
        with_prometheus: bool = False,
    ) -> None:
        self.name = name
        self.dir = directory
        self.host_exec = host_exec
        self.kueue_bin = kueue_bin
        self.module = module
        self.config_folder = config_folder
        self.integrations = integrations
        self.with_prometheus = with_prometheus
        self.cluster: Cluster | None = None

    def logs(self) -> Path:
        return self.dir / "pods.log"

    @contextlib.contextmanager
    def session(self) -> Iterator[tuple[str, str]]:
        """(metrics URL, the Configuration in use) while the system runs; everything torn down after."""
        node_bin = real.build_binaries()
        archives = [self.dir / "images" / "pause.tar", self.dir / "images" / "system.tar"]
        image.build_pause(archives[0], binary=node_bin / "pause")
        if self.name == "ours":
            image.build_server(archives[1], tag=OURS_IMAGE)
        else:
            image.build_upstream_manager(archives[1], binary=self.kueue_bin / "kueue-manager", tag=UPSTREAM_IMAGE)
        if self.with_prometheus:
            archives += prometheus.build_images(self.dir / "images", self.module)
        rc = real.RealCluster(
            self.dir,
            bin_dir=node_bin,
            archives=archives,
            host_exec=self.host_exec,
            job_pods_run=math.inf,
            # containerd's socket paths must stay under 104 bytes, whatever the checkout's path
            node_dir=Path(tempfile.gettempdir()) / f"pykueue-node-{self.name}",
        )
        kubectl = str(node_bin / "kubectl")
        try:
            # ours: `make deploy` waits for its pods, so kueue-system starts placed on the real node
            with rc.session(NAMESPACE if self.name == "ours" else None) as cluster:
                self.cluster = cluster
                os.environ["KUBECONFIG"] = str(cluster.kubeconfig)  # every kubectl here and in the installer
                operators = Operators(self.dir / "operators", cluster, self.integrations)
                try:
                    operators.up()
                    if self.with_prometheus:
                        self._install_prometheus_operator(cluster)
                    config = self._install(kubectl, cluster)
                    if self.with_prometheus:
                        apply(
                            cluster,
                            prometheus.kueue_monitor(
                                self.name,
                                self.module,
                                kubectl=Path(kubectl),
                                helm=node_bin / "helm",
                                namespace=NAMESPACE,
                            ),
                        )
                    yield metrics_url(kubectl), config
                finally:
                    self._save_logs(kubectl)
                    if self.with_prometheus:
                        prometheus.save_logs(cluster, self.dir / "prometheus.log")
                    operators.down()
        finally:
            for archive in archives:
                archive.unlink(missing_ok=True)

    def _install_prometheus_operator(self, cluster: Cluster) -> None:
        """upstream's install_prometheus_operator: the bundle, the operator available, then the Prometheus."""
        cluster.place_on_real_node(prometheus.NAMESPACE)
        apply(cluster, prometheus.bundle(self.module, cluster))
        prometheus.wait_operator(cluster)
        apply(cluster, prometheus.setup(self.module))

    def _install(self, kubectl: str, cluster: Cluster) -> str:
        docs = upstream_e2e_install(self.module, kubectl, self.config_folder)
        if self.name == "ours":
            res = subprocess.run(
                ["make", "--no-print-directory", "deploy", f"IMG={OURS_IMAGE}", f"KUBECTL={kubectl}"],
                cwd=ROOT,
                check=False,
            )
            if res.returncode != 0:
                raise RealSystemError(f"make deploy exited {res.returncode}")
            pin_deployment(kubectl, cluster)
            config = our_configuration(manager_configuration(docs))
            reconfigure(cluster, kubectl, config, manager_replicas(docs))
            return config
        apply(cluster, upstream_install(docs, cluster))
        wait_available(kubectl)
        return manager_configuration(docs)

    def _save_logs(self, kubectl: str) -> None:
        """Every kueue-system container's log (current and previous), for the run's report."""
        with open(self.logs(), "w") as out:
            for previous in ("--previous=false", "--previous=true"):
                res = subprocess.run(
                    [
                        kubectl,
                        "-n",
                        NAMESPACE,
                        "logs",
                        "--all-containers",
                        "--prefix",
                        "-l",
                        "control-plane=controller-manager",
                        "--tail=-1",
                        previous,
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                out.write(res.stdout)
