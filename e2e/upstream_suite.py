#!/usr/bin/env python3
"""Upstream Kueue's own e2e suites (test/e2e/singlecluster/{baseline,extended}, tas/baseline,
sequential/{baseline,extended} on a real node: e2e/upstream_real.py, and multikueue/baseline on three
control planes: e2e/multicluster.py), unchanged, against a system.

The suite is built by e2e/build-kueue.sh with `go test -c` from the Go module pinned in
e2e/tools/kueue/go.mod (nothing of upstream's is committed) and runs against our local control
plane with one of two systems behind it:
  ours      our stack (e2e/stack.py): CRDs, our server as a host process, its webhooks;
  upstream  upstream's manager (cmd/kueue, same version) as a host process with upstream's own
            CRDs and webhook configurations: the calibration that tells a harness defect from ours.
Both get the same Configuration (upstream e2e's, test/e2e/config/default), the same stand-ins, kwok
stages and ginkgo seed; the extended suites also get the real operators they need (e2e/operators.py) and
their frameworks, those we implement for ours. The selection (label filter + every excluded spec with its reason) is
e2e/upstream-suites/<suite>.yaml; a dry run checks that it names every spec the filter leaves out.

What the suite's BeforeSuite (test/util/e2e.go WaitForKueueAvailability) wants, met from outside:
a Deployment kueue-controller-manager in kueue-system, available, whose pods' IPs are the ready
endpoints of Service kueue-webhook-service (stand-ins: kwok runs the pod, the system runs on the
host), a dry-run ResourceFlavor create admitted (the system's real webhooks), and the Lease
c1f6bfd2.kueue.x-k8s.io renewed (the system's own leader election). The metrics specs exec curl in a
pod as ServiceAccount kueue-controller-manager: e2e/fakebin/curl answers on the host. The Kueuectl spec
runs `../../../../bin/kubectl-kueue` from its working directory, as from upstream's source tree: the
suite runs in <dir>/<system>/tree/test/e2e/singlecluster/baseline, and tree/bin/kubectl-kueue is ours
(the venv's entry point) or upstream's (cmd/kueuectl, built by e2e/build-kueue.sh).

    python e2e/upstream_suite.py run [--system ours|upstream] [--dir DIR] [--focus REGEX]
    python e2e/upstream_suite.py check      # the selection file against a dry run
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import host  # noqa: E402
import image  # noqa: E402
import restarts  # noqa: E402
from cluster import Cluster, ClusterError, FakeNode, HostExec, free_port  # noqa: E402
from multicluster import MEMBERS, MULTIKUEUE_CONFIG, Member, MultiClusterSystem, System, private_mounts  # noqa: E402
from operators import OperatorError, Operators, module_dir, pinned_versions  # noqa: E402
from stack import Stack, StackError, merged, wait_ready  # noqa: E402
from upstream_build import UpstreamBuildError, kueue_bin_dir, kueue_module_dir  # noqa: E402
from upstream_real import UPSTREAM_E2E_CONFIGS, RealNodeSystem, RealSystemError, apply, restricted  # noqa: E402

import certs  # noqa: E402
from webhook.install import visibility  # noqa: E402

SELECTIONS = HERE / "upstream-suites"
FAKEBIN = HERE / "fakebin"
DEFAULT_DIR = ROOT / ".run" / "upstream-suite"


#: upstream's hack/testing/kind-cluster.yaml as kwok nodes: two workers under kind's names, on-demand and spot.
KIND_NODES = (
    FakeNode("kind-worker", {"instance-type": "on-demand"}),
    FakeNode("kind-worker2", {"instance-type": "spot"}),
)
TAS_NODE_GROUP = {"cloud.provider.com/node-group": "tas-group"}
#: hack/testing/kind-cluster-tas.yaml: eight workers, block b1 (workers 1 to 4) and b2 (5 to 8), racks r1, r1,
#: r2, r2 within each block; the specs name the nodes (kind-worker, kind-worker2 ... kind-worker8).
TAS_KIND_NODES = tuple(
    FakeNode(
        "kind-worker" + (str(i) if i > 1 else ""),
        {
            **TAS_NODE_GROUP,
            "cloud.provider.com/topology-block": "b1" if i <= 4 else "b2",
            "cloud.provider.com/topology-rack": "r1" if (i - 1) % 4 < 2 else "r2",
        },
    )
    for i in range(1, 9)
)


@dataclass(frozen=True)
class Suite:
    """One of upstream's e2e suites: its package (the ginkgo tree), whether it needs a real Deployment
    (it restarts Kueue with a changed Configuration: e2e/upstream_real.py) or the host-process stack, and
    the operators (e2e/operators.py) its selected specs need beside the system. A real-node suite's
    system is installed from upstream's test/e2e/config/`config_folder`, as its Makefile target does.
    A host-process suite gets the kwok `nodes` of its kind config, the stand-in manager pod on
    `manager_node` (where no spec deletes or fills the node). A three-cluster suite (MultiKueue) runs
    on e2e/multicluster.py's manager and workers, each with one kwok node and its stand-ins there.
    A suite `with_prometheus` runs its real-node system with an in-cluster Prometheus (e2e/prometheus.py):
    singlecluster-prometheus is the baseline package's feature:prometheus specs, which need one."""

    name: str
    package: str
    real_node: bool
    integrations: tuple[str, ...] = ()
    config_folder: str = "baseline"
    nodes: tuple[FakeNode, ...] = KIND_NODES
    manager_node: str = "kind-worker"
    clusters: int = 1
    multikueue_config: str | None = None
    """A three-cluster suite's Configuration: upstream's test/e2e/config/`multikueue_config`
    (None: `MULTIKUEUE_CONFIG`, the baseline's)."""
    restarts: bool = False
    """Its specs restart Kueue with a changed ConfigMap: each system follows (e2e/restarts.py)."""
    dependency_crds: tuple[tuple[str, str], ...] = ()
    """CRDs of other projects on every cluster, (Go module, file in it), at the version upstream pins."""
    with_prometheus: bool = False

    @property
    def binary(self) -> str:
        """e2e/build-kueue.sh's name for `go test -c` of the package: test/e2e/a/b -> a-b.test."""
        return self.package.removeprefix("test/e2e/").replace("/", "-") + ".test"

    @property
    def selection_file(self) -> Path:
        return SELECTIONS / f"{self.name}.yaml"


#: hack/make/deps.mk `clusterprofile-crd`: the ClusterProfile CRD upstream's MultiKueue e2e installs.
CLUSTER_INVENTORY_MODULE = "sigs.k8s.io/cluster-inventory-api"
CLUSTER_PROFILE_CRD = "config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml"

SUITES = {
    s.name: s
    for s in (
        Suite("singlecluster-baseline", "test/e2e/singlecluster/baseline", real_node=False),
        Suite(
            "singlecluster-extended",
            "test/e2e/singlecluster/extended",
            real_node=False,
            integrations=("jobset", "lws", "appwrapper", "trainer", "training-operator", "mpi-operator", "kuberay"),
        ),
        Suite("singlecluster-prometheus", "test/e2e/singlecluster/baseline", real_node=True, with_prometheus=True),
        Suite("sequential-baseline", "test/e2e/sequential/baseline", real_node=True),
        Suite(
            "sequential-extended",
            "test/e2e/sequential/extended",
            real_node=True,
            integrations=("jobset", "lws", "appwrapper"),
            config_folder="extended",
        ),
        Suite(
            "tas-baseline", "test/e2e/tas/baseline", real_node=False, nodes=TAS_KIND_NODES, manager_node="kind-worker8"
        ),
        Suite("multikueue-baseline", "test/e2e/multikueue/baseline", real_node=False, clusters=3),
        Suite(
            "multikueue-sequential",
            "test/e2e/multikueue/sequential",
            real_node=False,
            clusters=3,
            multikueue_config="multikueue/sequential",
            restarts=True,
            dependency_crds=((CLUSTER_INVENTORY_MODULE, CLUSTER_PROFILE_CRD),),
        ),
    )
}
#: Fixed paths where upstream's manager reads certificates, and the directory to remove at teardown when
#: this run made it (a marker file in it says so): the metrics certificate when internal cert management
#: is off (cmd/kueue/main.go), the visibility server's (pkg/visibility/server.go, hard-coded).
UPSTREAM_CERT_DIRS = (
    (Path("/etc/kueue/metrics/certs"), Path("/etc/kueue")),
    (Path("/visibility"), Path("/visibility")),
)
MARKER_NAME = "MADE-BY-PYKUEUE-UPSTREAM-SUITE"
#: upstream's roles the visibility specs bind (config/components/rbac, namePrefix kueue-).
UPSTREAM_VISIBILITY_ROLES = (
    "batch_admin_role.yaml",
    "batch_user_role.yaml",
    "pending_workloads_cq_viewer_role.yaml",
    "pending_workloads_lq_viewer_role.yaml",
)

#: upstream e2e's Configuration (test/e2e/config/default/controller_manager_config.yaml), less what
#: only makes sense in a pod; no frameworks here: each system enables batch/job, pod, deployment and
#: statefulset plus those of the suite's operators (the CRDs there are).
#: VisibilityOnDemand is on: each system serves the visibility API from the host, and its
#: APIServices reach it through an ExternalName Service `localhost` (webhook.install.visibility).
E2E_CONFIG = """\
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
featureGates:
  LocalQueueMetrics: true
  ElasticJobsViaWorkloadSlices: true
  ConcurrentAdmission: true
  MultiKueueManagerQuotaAutomation: true
  VisibilityOnDemand: true
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
    print(f"upstream-suite: {msg}", file=sys.stderr, flush=True)


class SuiteError(RuntimeError):
    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"upstream-suite: step '{step}' failed: {detail}")


# --------------------------------------------------------------------------- the suite and its selection


def build() -> tuple[Path, Path]:
    """(bin dir with the test binary and upstream's manager, upstream's module source dir)."""
    try:
        return kueue_bin_dir(), kueue_module_dir()
    except UpstreamBuildError as exc:
        raise SuiteError("build upstream binaries", str(exc)) from exc


@dataclass(frozen=True)
class Spec:
    """One `It` of the suite as ginkgo reports it."""

    file: str
    text: str
    state: str = ""
    seconds: float = 0.0
    failure: str = ""


def read_report(path: Path) -> list[Spec]:
    specs = []
    for suite in json.loads(path.read_text()):
        for r in suite.get("SpecReports") or []:
            if r.get("LeafNodeType") != "It":
                continue
            text = " ".join([*(r.get("ContainerHierarchyTexts") or []), r["LeafNodeText"]])
            failure = (r.get("Failure") or {}).get("Message", "")
            specs.append(
                Spec(
                    Path(r["LeafNodeLocation"]["FileName"]).name,
                    text,
                    r.get("State", ""),
                    r.get("RunTime", 0) / 1e9,
                    failure,
                )
            )
    return specs


@dataclass(frozen=True)
class Selection:
    """A suite's label filter and excluded specs; `rest_in` names the suite of the same package whose
    selection accounts for every spec this filter leaves out (and excludes every spec this one runs)."""

    label_filter: str
    excluded: dict[str, str]  # spec text -> reason
    rest_in: str = ""

    @staticmethod
    def load(path: Path) -> Selection:
        doc = yaml.safe_load(path.read_text())
        excluded: dict[str, str] = {}
        for entry in doc["excluded"]:
            if entry["spec"] in excluded:
                raise SuiteError("read selection", f"{path.name} excludes {entry['spec']!r} twice")
            excluded[entry["spec"]] = entry["reason"]
        return Selection(doc.get("label_filter") or "", excluded, doc.get("rest_in") or "")


def _ginkgo_literal(text: str) -> str:
    """`text` as an RE2 pattern matching itself (ginkgo's -skip takes RE2)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text)


def ray_image(module: Path) -> str:
    """The Ray image upstream's e2e-common.sh names with USE_RAY_FOR_TESTS=ray (hack/testing/ray/Dockerfile's
    base): the KubeRay specs put it in their pod templates (KUBERAY_RAY_IMAGE), and kwok never pulls it."""
    dockerfile = module / "hack" / "testing" / "ray" / "Dockerfile"
    try:
        base = next(line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("FROM "))
    except (OSError, StopIteration, IndexError) as exc:
        raise SuiteError("read the Ray image", f"{dockerfile}: {exc}") from exc
    return base.split("@")[0]


def suite_env(module: Path, kubeconfig: Path | None = None, state_file: Path | None = None) -> dict[str, str]:
    """The suite's environment: test/util reads hack/testing/agnhost/Dockerfile under PROJECT_DIR when it loads;
    the KubeRay specs read KUBERAY_RAY_IMAGE (`ray_image`);
    specs that run `docker exec` on a node find e2e/fakebin/docker first on PATH, with the run's state file."""
    env = {**os.environ, "PROJECT_DIR": f"{module}/", "KUBERAY_RAY_IMAGE": ray_image(module)}
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    if state_file is not None:
        env |= {"PATH": f"{FAKEBIN}:{env.get('PATH', '')}", "UPSTREAM_SUITE_STATE": str(state_file)}
    return env


def suite_cwd(out: Path, suite: Suite, kueuectl: Path | None = None) -> Path:
    """Where the suite runs: its package's place in a directory whose bin/kubectl-kueue is `kueuectl`, as
    the specs find the CLI at ../../../../bin/kubectl-kueue (its place in upstream's source tree)."""
    tree = out / "tree"
    cwd = tree / suite.package
    cwd.mkdir(parents=True, exist_ok=True)
    if kueuectl is not None:
        link = tree / "bin" / "kubectl-kueue"
        link.parent.mkdir(exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(kueuectl)
    return cwd


def dry_run(suite: Suite, binary: Path, module: Path, out: Path, label_filter: str | None) -> list[Spec]:
    report = out / f"dry-run-{'all' if label_filter is None else 'selected'}.json"
    report.unlink(missing_ok=True)
    args = [str(binary), "-ginkgo.dry-run", f"-ginkgo.json-report={report}", "-ginkgo.no-color"]
    if label_filter:
        args.append(f"-ginkgo.label-filter={label_filter}")
    res = subprocess.run(
        args, cwd=suite_cwd(out, suite), env=suite_env(module), capture_output=True, text=True, check=False
    )
    if not report.exists():
        raise SuiteError("dry run", f"no report; exit {res.returncode}: {res.stdout[-2000:]}{res.stderr[-2000:]}")
    return read_report(report)


def check_selection(
    suite: Suite, binary: Path, module: Path, out: Path, selection: Selection
) -> tuple[list[Spec], list[str]]:
    """(every spec of the suite, the excluded ones the label filter would still run: -skip must name them).
    Raises when the file names a spec that does not exist, or leaves a filtered-out spec without a reason
    (a selection whose rest is another suite's: when a spec it runs is not excluded there)."""
    all_specs = dry_run(suite, binary, module, out, None)
    everything = {s.text for s in all_specs}
    # a dry run reports the specs the label filter leaves out as skipped
    labelled = {s.text for s in dry_run(suite, binary, module, out, selection.label_filter) if s.state != "skipped"}
    unknown = sorted(set(selection.excluded) - everything)
    if selection.rest_in:
        rest = SUITES.get(selection.rest_in)
        if rest is None or rest.package != suite.package:
            raise SuiteError("check selection", f"rest_in {selection.rest_in!r} is no suite of {suite.package}")
        elsewhere = Selection.load(rest.selection_file).excluded
        unexplained = sorted(labelled - set(selection.excluded) - set(elsewhere))
        # what the other suite leaves to this one (its reason names this suite) must run here
        unknown += sorted(t for t, reason in elsewhere.items() if suite.name in reason and t not in labelled)
    else:
        unexplained = sorted(everything - labelled - set(selection.excluded))
    problems = [f"excluded but not in the suite (or left to it and not run): {t!r}" for t in unknown]
    problems += [
        f"run here and by {selection.rest_in}: {t!r}"
        if selection.rest_in
        else f"left out by the label filter but not in the excluded list: {t!r}"
        for t in unexplained
    ]
    if problems:
        raise SuiteError("check selection", f"{suite.selection_file.name}:\n  " + "\n  ".join(problems))
    return all_specs, sorted(labelled & set(selection.excluded))


# --------------------------------------------------------------------------- the systems


def standins(config_text: str, node: str) -> list[dict[str, Any]]:
    """kueue-system objects the suite looks for while the system runs on the host (see the docstring); the
    stand-in manager pod runs on `node`."""
    labels = {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}
    ns = "kueue-system"
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "kueue-controller-manager", "namespace": ns},
        },
        # upstream config/components/rbac/metrics_reader_role.yaml: the metrics specs bind it
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "kueue-metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": ns},
            "data": {"controller_manager_config.yaml": config_text},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "kueue-controller-manager",
                "namespace": ns,
                "labels": {**labels, "pykueue.dev/stand-in": "true"},
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": "kueue-controller-manager",
                        "terminationGracePeriodSeconds": 1,
                        "nodeSelector": {"kubernetes.io/hostname": node},
                        "containers": [
                            {"name": "manager", "image": "stand-in/system-runs-on-the-host:none", "args": ["stand-in"]}
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kueue-webhook-service", "namespace": ns},
            "spec": {
                "selector": {"control-plane": "controller-manager"},
                "ports": [{"port": 443, "protocol": "TCP", "targetPort": 9443}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kueue-controller-manager-metrics-service", "namespace": ns},
            "spec": {
                "selector": {"control-plane": "controller-manager"},
                "ports": [{"name": "https", "port": 8443, "protocol": "TCP", "targetPort": 8443}],
            },
        },
    ]


def upstream_manifests(
    module: Path, base_url: str, ca_bundle: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Upstream's CRDs and webhook configurations as its config/default kustomization makes them (namePrefix
    kueue-, conversion webhooks, the webhooks' namespaceSelector patch), every clientConfig a URL on the host."""
    crd_dir = module / "config/components/crd"
    kust = yaml.safe_load((crd_dir / "kustomization.yaml").read_text())
    converted = set()
    for patch in kust.get("patches", []):
        doc = yaml.safe_load((crd_dir / patch["path"]).read_text())
        if doc.get("spec", {}).get("conversion"):
            converted.add(doc["metadata"]["name"])
    crds = []
    for res in kust["resources"]:
        crd = yaml.safe_load((crd_dir / res).read_text())
        if crd["metadata"]["name"] in converted:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"url": f"{base_url}/convert", "caBundle": ca_bundle},
                    "conversionReviewVersions": ["v1"],
                },
            }
        crds.append(crd)

    wh_dir = module / "config/components/webhook"
    wh_kust = yaml.safe_load((wh_dir / "kustomization.yaml").read_text())
    selector = None
    for patch in wh_kust.get("patches", []):
        for hook in yaml.safe_load(patch["patch"]).get("webhooks", []):
            selector = hook["namespaceSelector"]
    selected = {
        fp.split("[name=")[1].split("]")[0]
        for rep in wh_kust.get("replacements", [])
        for t in rep["targets"]
        for fp in t["fieldPaths"]
    }
    hooks = []
    for doc in yaml.safe_load_all((wh_dir / "manifests.yaml").read_text()):
        if not doc:
            continue
        doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"]
        for hook in doc["webhooks"]:
            hook["clientConfig"] = {"url": base_url + hook["clientConfig"]["service"]["path"], "caBundle": ca_bundle}
            if hook["name"] in selected and selector:
                hook["namespaceSelector"] = selector
        hooks.append(doc)
    return crds, hooks


class OursSystem:
    """Our stack, its server started with upstream e2e's Configuration additions (`config`). `cluster_args`
    and `command_prefix`: as `Stack` takes them (one of e2e/multicluster.py's members)."""

    name = "ours"

    def __init__(
        self,
        directory: Path,
        host_exec: HostExec,
        suite: Suite,
        *,
        config: str = E2E_CONFIG,
        cluster_args: dict[str, Any] | None = None,
        command_prefix: list[str] | None = None,
    ) -> None:
        self.config = config
        self.stack = Stack(
            directory,
            job_pods_run=math.inf,
            host_exec=host_exec,
            integrations=suite.integrations,
            nodes=suite.nodes,
            cluster_args=cluster_args,
            command_prefix=command_prefix or (),
            dashboard=suite.clusters == 1,
        )

    @property
    def cluster(self) -> Cluster:
        return self.stack.cluster

    def up(self) -> tuple[str, str]:
        """(metrics URL, the Configuration in use)."""
        self.stack.up(self.config)
        return self.stack.metrics_url, (self.stack.dir / "server-config.yaml").read_text()

    def down(self) -> None:
        self.stack.down()

    def logs(self) -> Path:
        return self.stack.server_log

    def restart(self, config_text: str) -> None:
        """Our server again, with `config_text` (the suite's ConfigMap) restricted to what we implement,
        on its own host ports (e2e/restarts.py)."""
        config = restricted(restarts.without_host_bindings(restarts.parse(config_text)))
        self.stack.restart_server(json.dumps(config))


class UpstreamSystem:
    """Upstream's manager on the host, over upstream's own CRDs and webhook configurations, with the
    operators `integrations` names beside it and their frameworks enabled. `config`: the Configuration's
    e2e part; `cluster_args`: more `Cluster` keywords; `binds`: bind mounts (target -> source) the manager
    runs under, in a private mount namespace (one of e2e/multicluster.py's members: its own /etc/hosts,
    and its own certificates at the fixed paths of UPSTREAM_CERT_DIRS, `cert_dir`)."""

    name = "upstream"

    def __init__(
        self,
        directory: Path,
        host_exec: HostExec,
        bin_dir: Path,
        module: Path,
        suite: Suite,
        *,
        config: str = E2E_CONFIG,
        cluster_args: dict[str, Any] | None = None,
        binds: Mapping[Path, Path] | None = None,
    ) -> None:
        self.dir = directory
        self.config = config
        self.cluster = Cluster(
            directory / "cluster",
            job_pods_run=math.inf,
            host_exec=host_exec,
            **({"nodes": suite.nodes} | (cluster_args or {})),
        )
        self.operators = Operators(directory / "operators", self.cluster, suite.integrations)
        self.bin_dir = bin_dir
        self.module = module
        self.command_prefix = private_mounts(binds or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.host_config: dict[str, Any] = {}  # where it listens: kept across restarts

    @staticmethod
    def cert_dir_of(directory: Path) -> Path:
        """Where the system in `directory` keeps its serving certificates."""
        return directory / "certs"

    @property
    def cert_dir(self) -> Path:
        return self.cert_dir_of(self.dir)

    def logs(self) -> Path:
        return self.dir / "manager.log"

    def up(self) -> tuple[str, str]:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cluster.up()
        self.operators.up()  # their CRDs exist before the manager sets up those integrations
        frameworks = [
            "batch/job",
            "pod",
            "deployment",
            "statefulset",
            *(f for op in self.operators.ops for f in op.frameworks),
        ]
        cert_dir = certs.write_bundle(
            self.cert_dir, ["127.0.0.1", "localhost", f"{visibility.SERVICE}.kueue-system.svc"]
        )
        for certs_dir, owned in UPSTREAM_CERT_DIRS:
            if not owned.exists():
                certs_dir.mkdir(parents=True)
                (owned / MARKER_NAME).write_text("made by pykueue's e2e/upstream_suite.py; removed at its teardown\n")
            certs_dir.mkdir(parents=True, exist_ok=True)
            for name in ("tls.crt", "tls.key"):
                shutil.copy(cert_dir / name, certs_dir / name)
        taken: set[int] = set()
        webhook, metrics, health = free_port(taken), free_port(taken), free_port(taken)
        visibility_port = free_port(taken)
        config = f"""\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:{health}
metrics:
  bindAddress: 127.0.0.1:{metrics}
  enableClusterQueueResources: true
webhook:
  port: {webhook}
  host: 127.0.0.1
  certDir: {cert_dir}
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
  resourceNamespace: kueue-system
internalCertManagement:
  enable: false
integrations:
  frameworks: {json.dumps(frameworks)}
visibilityServer:
  bindAddress: 127.0.0.1
  bindPort: {visibility_port}
"""
        # The e2e part over the host part, section by section (a YAML key given twice is an error).
        config = yaml.safe_dump(merged(yaml.safe_load(config), yaml.safe_load(self.config)), sort_keys=False)
        crds, hooks = upstream_manifests(self.module, f"https://127.0.0.1:{webhook}", certs.ca_bundle(cert_dir))
        apply(self.cluster, crds)  # and waits until they are established
        self.cluster.kubectl("create", "namespace", "kueue-system")
        self.host_config = {k: v for k, v in yaml.safe_load(config).items() if k in restarts.HOST_BOUND}
        self.host_config["metrics"] = {"bindAddress": f"127.0.0.1:{metrics}"}
        self._start_manager(config)
        apply(self.cluster, hooks)
        roles = []
        for name in UPSTREAM_VISIBILITY_ROLES:
            role = yaml.safe_load((self.module / "config/components/rbac" / name).read_text())
            role["metadata"]["name"] = "kueue-" + role["metadata"]["name"]
            roles.append(role)
        apply(
            self.cluster,
            [
                *visibility.local_objects("kueue-system", port=visibility_port, ca_bundle=certs.ca_bundle(cert_dir)),
                *roles,
            ],
        )
        return f"https://127.0.0.1:{metrics}/metrics", config

    def _start_manager(self, config: str) -> None:
        """Upstream's manager with `config`, until its readiness probe answers."""
        (self.dir / "manager-config.yaml").write_text(config)
        health = yaml.safe_load(config)["health"]["healthProbeBindAddress"]
        log("starting upstream's manager")
        with open(self.logs(), "ab") as out:
            self.proc = subprocess.Popen(
                [
                    *self.command_prefix,
                    str(self.bin_dir / "kueue-manager"),
                    f"--config={self.dir / 'manager-config.yaml'}",
                    f"--kubeconfig={self.cluster.kubeconfig}",
                    "--zap-log-level=2",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_ready(self.proc, f"http://{health}/readyz", None, "upstream manager", self.logs(), timeout=120)

    def _stop_manager(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
            self.proc = None

    def restart(self, config_text: str) -> None:
        """The manager again with `config_text` (the suite's ConfigMap), on its own host ports
        (e2e/restarts.py)."""
        config = merged(restarts.without_host_bindings(restarts.parse(config_text)), self.host_config)
        self._stop_manager()
        self._start_manager(yaml.safe_dump(config, sort_keys=False))

    def down(self) -> None:
        self._stop_manager()
        self.operators.down()
        self.cluster.down()
        for _, owned in UPSTREAM_CERT_DIRS:
            if (owned / MARKER_NAME).exists():
                shutil.rmtree(owned)


# --------------------------------------------------------------------------- run and report


def table(specs: list[Spec], selection: Selection, everything: list[Spec]) -> str:
    """Per-file counts: specs in the baseline, excluded, passed, failed (a selection whose rest is another
    suite's: only the files it runs)."""
    ran: dict[str, Counter[str]] = defaultdict(Counter)
    for s in specs:
        ran[s.file][s.state] += 1
    total = Counter(s.file for s in everything if not selection.rest_in or s.file in ran)
    excluded = Counter(s.file for s in everything if s.text in selection.excluded)
    rows = [("file", "specs", "excluded", "passed", "failed")]
    for f in sorted(total):
        failed = sum(n for state, n in ran[f].items() if state not in ("passed", "skipped", "pending"))
        rows.append((f, str(total[f]), str(excluded[f]), str(ran[f]["passed"]), str(failed)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    )


def _place_standins(cluster: Cluster, config: str, node: str) -> None:
    """The stand-ins on `cluster`, their manager pod on `node`, and wait until the Deployment is available."""
    apply(cluster, standins(config, node))
    res = cluster.kubectl(
        "-n", "kueue-system", "rollout", "status", "deploy/kueue-controller-manager", "--timeout=120s"
    )
    if res.returncode != 0:
        raise SuiteError("stand-ins", res.stderr.strip())


@contextlib.contextmanager
def host_session(system: OursSystem | UpstreamSystem, suite: Suite) -> Iterator[tuple[str, str]]:
    """(metrics URL, Configuration) while a host-process system runs, its stand-ins in place."""
    try:
        metrics_url, config = system.up()
        _place_standins(system.cluster, config, suite.manager_node)
        yield metrics_url, config
    finally:
        system.down()


@dataclass(frozen=True)
class Target:
    """What the suite runs against: its kubeconfig, fakebin's state file for its own commands, the system log."""

    kubeconfig: Path
    state_file: Path
    logs: Path


@contextlib.contextmanager
def single_target(
    system: OursSystem | UpstreamSystem | RealNodeSystem,
    session: contextlib.AbstractContextManager[tuple[str, str]],
    state_file: Path,
) -> Iterator[Target]:
    """One cluster: fakebin's state names it, and the suite's client is kind's admin, not system:masters (a
    visibility spec needs it reviewed)."""
    with session as (metrics_url, _config):
        cluster = system.cluster
        assert cluster is not None
        state_file.write_text(
            json.dumps(
                {
                    "kubectl": str(cluster.bin_dir / "kubectl"),
                    "kubeconfig": str(cluster.kubeconfig),
                    "metrics_url": metrics_url,
                }
            )
        )
        state_file.with_suffix(".token").unlink(missing_ok=True)  # fakebin/curl's token belongs to one cluster
        cluster.bind_cluster_admins()
        yield Target(cluster.cluster_admin_kubeconfig, state_file, system.logs())


def multikueue_configuration(module: Path, suite: Suite) -> str:
    """The Configuration every member of a three-cluster suite gets: upstream's test/e2e/config folder
    the suite's Makefile target deploys, less leaderElection (each system keeps its own Lease settings),
    or the baseline's."""
    if suite.multikueue_config is None:
        return MULTIKUEUE_CONFIG
    path = module / UPSTREAM_E2E_CONFIGS / suite.multikueue_config / "controller_manager_config.yaml"
    doc = yaml.safe_load(path.read_text())
    dropped = ("apiVersion", "kind", "leaderElection")
    return yaml.safe_dump({k: v for k, v in doc.items() if k not in dropped}, sort_keys=False)


def dependency_crds(module: Path, suite: Suite) -> tuple[Path, ...]:
    """The suite's other projects' CRD files, from the Go module cache at the versions upstream's go.mod pins."""
    if not suite.dependency_crds:
        return ()
    pins = pinned_versions((module / "go.mod").read_text(), {m for m, _ in suite.dependency_crds})
    return tuple(module_dir(m, pins[m]) / path for m, path in suite.dependency_crds)


def multicluster_system(
    system_name: str, out: Path, bin_dir: Path, module: Path, suite: Suite
) -> tuple[MultiClusterSystem, dict[str, OursSystem | UpstreamSystem]]:
    """A manager and two workers of `system_name` (e2e/multicluster.py), each with the suite's MultiKueue
    Configuration and its stand-ins on its one node, and each system by member name. Upstream's managers
    also read their visibility and metrics certificates from fixed paths: each gets its own bound over them."""
    config = multikueue_configuration(module, suite)
    crds = dependency_crds(module, suite)
    made: dict[str, OursSystem | UpstreamSystem] = {}

    def make(member: Member, directory: Path, host_exec: HostExec, binds: Mapping[Path, Path]) -> System:
        member_suite = dataclasses.replace(suite, nodes=(member.node,), manager_node=member.node.name)
        args = {**member.cluster_args(), "crds": crds}
        system: OursSystem | UpstreamSystem
        if system_name == "ours":
            system = OursSystem(
                directory / "stack",
                host_exec,
                member_suite,
                config=config,
                cluster_args=args,
                command_prefix=private_mounts(binds),
            )
        else:
            system_dir = directory / "system"
            system = UpstreamSystem(
                system_dir,
                host_exec,
                bin_dir,
                module,
                member_suite,
                config=config,
                cluster_args=args,
                binds={**binds, **{fixed: UpstreamSystem.cert_dir_of(system_dir) for fixed, _ in UPSTREAM_CERT_DIRS}},
            )
        made[member.name] = system
        return system

    def prepare(member: Member, system: System, config: str) -> None:
        _place_standins(system.cluster, config, member.node.name)

    return MultiClusterSystem(out / "clusters", make, prepare=prepare), made


@contextlib.contextmanager
def multi_target(
    multi: MultiClusterSystem, supervised: Mapping[str, OursSystem | UpstreamSystem] | None = None
) -> Iterator[Target]:
    """Three clusters: the suite's kubeconfig has a context each; its own fakebin commands see the manager.
    `supervised`: the systems restarted with the ConfigMap when the suite restarts their Deployment."""
    with multi.session(), contextlib.ExitStack() as stack:
        for name, system in (supervised or {}).items():
            stack.enter_context(restarts.RestartSupervisor(name, system.cluster, system.restart))
        yield Target(multi.kubeconfig, multi.state_file(MEMBERS[0]), multi.manager.logs())


def run(suite: Suite, system_name: str, directory: Path, focus: str | None, seed: int) -> int:
    bin_dir, module = build()
    binary = bin_dir / suite.binary
    out = directory / suite.name / system_name
    out.mkdir(parents=True, exist_ok=True)
    selection = Selection.load(suite.selection_file)
    everything, skip = check_selection(suite, binary, module, out, selection)

    state_file = out / "fakebin-state.json"
    host_exec = HostExec(f"{FAKEBIN}:/usr/local/bin:/usr/bin:/bin", {"UPSTREAM_SUITE_STATE": str(state_file)})
    target: contextlib.AbstractContextManager[Target]
    if suite.clusters > 1:
        multi, systems = multicluster_system(system_name, out, bin_dir, module, suite)
        target = multi_target(multi, systems if suite.restarts else None)
    elif suite.real_node:
        host.require_root(f"the {suite.name} suite (a real node runs the system's Deployment)")
        real = RealNodeSystem(
            system_name,
            out / "system",
            host_exec,
            bin_dir,
            module,
            config_folder=suite.config_folder,
            integrations=suite.integrations,
            with_prometheus=suite.with_prometheus,
        )
        target = single_target(real, real.session(), state_file)
    else:
        system = (
            OursSystem(out / "stack", host_exec, suite)
            if system_name == "ours"
            else UpstreamSystem(out / "system", host_exec, bin_dir, module, suite)
        )
        target = single_target(system, host_session(system, suite), state_file)
    started = time.monotonic()
    report = out / "report.json"
    with target as t:
        log(f"{system_name} up in {time.monotonic() - started:.0f} s; running {suite.name} (log {out / 'suite.log'})")
        report.unlink(missing_ok=True)
        args = [
            str(binary),
            f"-ginkgo.json-report={report}",
            "-ginkgo.timeout=2h",
            "-ginkgo.v",
            "-ginkgo.no-color",
            f"-ginkgo.seed={seed}",
        ]
        if selection.label_filter:
            args.append(f"-ginkgo.label-filter={selection.label_filter}")
        # Ginkgo matches -skip against more than the spec's text (a prefix precedes it), so no ^ anchor.
        args += [f"-ginkgo.skip={_ginkgo_literal(text)}$" for text in skip]
        if focus:
            args.append(f"-ginkgo.focus={focus}")
        env = suite_env(module, t.kubeconfig, t.state_file)
        kueuectl = Path(sys.executable).parent / "kubectl-kueue" if system_name == "ours" else bin_dir / "kubectl-kueue"
        suite_started = time.monotonic()
        with open(out / "suite.log", "w") as suite_log:
            subprocess.run(
                args,
                cwd=suite_cwd(out, suite, kueuectl),
                env=env,
                stdout=suite_log,
                stderr=subprocess.STDOUT,
                check=False,
            )
        suite_seconds = time.monotonic() - suite_started
        logs = t.logs
    if not report.exists():
        raise SuiteError("run suite", f"no report written; see {out / 'suite.log'}")
    specs = [s for s in read_report(report) if s.state != "skipped"]
    passed = [s for s in specs if s.state == "passed"]
    failed = [s for s in specs if s.state != "passed"]
    print(table(specs, selection, everything))
    for s in failed:
        first_line = s.failure.strip().splitlines()[0] if s.failure.strip() else s.state
        print(f"FAILED {s.file}: {s.text}\n    {first_line[:300]}")
    print(
        f"{suite.name} on {system_name}: {len(passed)} passed, {len(failed)} failed, {len(selection.excluded)} excluded "
        f"(suite {suite_seconds:.0f} s; report {report}; system log {logs})"
    )
    return 0 if specs and not failed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="bring a system up, run the selection, tear down, print the table")
    check_p = sub.add_parser("check", help="check the selection file against a dry run of the suite")
    for p in (run_p, check_p):
        p.add_argument("--suite", choices=sorted(SUITES), default="singlecluster-baseline")
        p.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    run_p.add_argument("--system", choices=["ours", "upstream"], default="ours")
    run_p.add_argument("--focus", help="ginkgo focus regex, to run part of the selection")
    run_p.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    suite = SUITES[args.suite]
    try:
        if args.command == "check":
            bin_dir, module = build()
            out = args.dir / suite.name
            out.mkdir(parents=True, exist_ok=True)
            _, skip = check_selection(suite, bin_dir / suite.binary, module, out, Selection.load(suite.selection_file))
            print(f"selection ok; {len(skip)} excluded specs inside the label filter are skipped by name")
            return 0
        return run(suite, args.system, args.dir, args.focus, args.seed)
    except (
        SuiteError,
        StackError,
        OperatorError,
        RealSystemError,
        ClusterError,
        image.ImageError,
        host.HostError,
    ) as exc:
        print(str(exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
