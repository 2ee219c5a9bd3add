"""An in-cluster Prometheus on the real node, for upstream's prometheus_test.go specs (feature:prometheus).

Made as upstream's e2e makes it (hack/testing/e2e-common.sh: install_prometheus_operator, then
deploy_kueue_prometheus_config once Kueue is deployed), with no registry:
  - the Prometheus operator and its config reloader (the sidecar and init container it gives each
    Prometheus pod) built by e2e/build-operators.sh from their Go module at the version upstream's
    hack/make/test.mk pins (PROMETHEUS_OPERATOR_VERSION), each in a one-binary image under the name
    upstream loads into kind (quay.io/prometheus-operator/<name>:<version>, e2e/image.py), imported
    into the node's containerd; the operator's release bundle (bundle.yaml in its module, what upstream
    applies) with its Deployment pinned to the real node;
  - Prometheus itself built the same way at the version the operator's go.mod requires, which is its
    default Prometheus (pkg/operator/defaults.go), in a one-binary image under the name the operator asks
    for (quay.io/prometheus/prometheus:v<the module's VERSION>). Debian's `prometheus` package cannot
    stand in: it is built without the Kubernetes service discovery (`kubernetes_sd_configs`), which
    every ServiceMonitor becomes. Upstream's test/e2e/config/prometheus/prometheus-setup.yaml is applied
    unchanged; namespace `monitoring` is placed on the real node;
  - the system's ServiceMonitor: upstream's config/prometheus (kustomize) for upstream's manager, our
    chart's `enablePrometheus=true` template (charts/pykueue, rendered by helm) for ours.
The suite reaches Prometheus as upstream's does: through the API server's service proxy
(monitoring/prometheus-api:web), which here routes to the pod on the real node.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import image  # noqa: E402
import oci  # noqa: E402
import operators  # noqa: E402
from cluster import Cluster  # noqa: E402

MODULE = "github.com/prometheus-operator/prometheus-operator"
#: The variable of upstream Kueue's hack/make/test.mk that pins the operator (e2e/build-operators.sh reads it too).
VERSION_VARIABLE = "PROMETHEUS_OPERATOR_VERSION"
PROMETHEUS_MODULE = "github.com/prometheus/prometheus"


@dataclass(frozen=True)
class Binary:
    """One of e2e/build-operators.sh's binaries and the image it goes in: the release image's name (the
    one the bundle or the operator asks for) and the binary's place there (the projects' Dockerfiles:
    the bundle's Deployment and the containers the operator makes rely on it)."""

    name: str
    repository: str
    path: str


BINARIES = (
    Binary("prometheus-operator", "quay.io/prometheus-operator/prometheus-operator", "bin/operator"),
    Binary(
        "prometheus-config-reloader",
        "quay.io/prometheus-operator/prometheus-config-reloader",
        "bin/prometheus-config-reloader",
    ),
    # the operator's default base image for Prometheus (pkg/operator/defaults.go DefaultPrometheusBaseImage)
    Binary("prometheus", "quay.io/prometheus/prometheus", "bin/prometheus"),
)
NAMESPACE = "monitoring"
SETUP = "test/e2e/config/prometheus/prometheus-setup.yaml"
KUEUE_MONITOR = "config/prometheus"
CHART = HERE.parent / "charts" / "pykueue"


class PrometheusError(RuntimeError):
    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"prometheus: step '{step}' failed: {detail}")


class _BundleLoader(yaml.SafeLoader):
    """PyYAML reads a plain `=` as the YAML 1.1 `value` tag it cannot construct; the CRDs of bundle.yaml
    hold such strings (an operator enum), which are just text."""


_BundleLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def pinned_version(kueue_module: Path) -> str:
    """`PROMETHEUS_OPERATOR_VERSION ?= vX.Y.Z` of upstream Kueue's hack/make/test.mk."""
    test_mk = kueue_module / "hack" / "make" / "test.mk"
    for line in test_mk.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == VERSION_VARIABLE and parts[1] == "?=":
            return parts[2]
    raise PrometheusError("read the pinned version", f"no `{VERSION_VARIABLE} ?=` in {test_mk}")


def prometheus_version(operator_version: str) -> tuple[str, str]:
    """(Go module version, release tag) of the Prometheus the operator's go.mod requires: the module's
    versions are v0.<major><minor>.<patch> (v0.309.1 is v3.9.1), its VERSION file says which release."""
    go_mod = (operators.module_dir(MODULE, operator_version) / "go.mod").read_text()
    module_version = operators.pinned_versions(go_mod, [PROMETHEUS_MODULE])[PROMETHEUS_MODULE]
    release = (operators.module_dir(PROMETHEUS_MODULE, module_version) / "VERSION").read_text().strip()
    return module_version, f"v{release}"


def build_images(directory: Path, kueue_module: Path) -> list[Path]:
    """The operator's, the reloader's and Prometheus's image archives in `directory`."""
    version = pinned_version(kueue_module)
    module_version, release = prometheus_version(version)
    bin_dir = operators.build(b.name for b in BINARIES)
    archives = []
    for b in BINARIES:
        built, tag = (module_version, release) if b.name == "prometheus" else (version, version)
        out = directory / f"{b.name}.tar"
        image.build_static(
            out,
            binary=bin_dir / f"{b.name}-{built}",
            name=b.path,
            tag=f"{b.repository}:{tag}",
            config=oci.ImageConfig(entrypoint=(f"/{b.path}",), user="65534:65534"),
        )
        archives.append(out)
    return archives


def bundle(kueue_module: Path, cluster: Cluster) -> list[dict[str, Any]]:
    """The operator's bundle.yaml at the pinned version, its Deployment's pods on the real node."""
    source = operators.module_dir(MODULE, pinned_version(kueue_module))
    docs = [d for d in yaml.load_all((source / "bundle.yaml").read_text(), Loader=_BundleLoader) if d]
    selector, toleration = cluster.real_node_placement()
    for doc in docs:
        if doc["kind"] == "Deployment":
            spec = doc["spec"]["template"]["spec"]
            spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **selector}
            spec["tolerations"] = [*spec.get("tolerations", []), toleration]
    return docs


def setup(kueue_module: Path) -> list[dict[str, Any]]:
    """Upstream's prometheus-setup.yaml: namespace, service account and RBAC, the Prometheus, its Service."""
    return [d for d in yaml.safe_load_all((kueue_module / SETUP).read_text()) if d]


def kueue_monitor(
    system: str, kueue_module: Path, *, kubectl: Path, helm: Path, namespace: str
) -> list[dict[str, Any]]:
    """The system's ServiceMonitor and the Role that lets Prometheus discover its endpoints: upstream's
    config/prometheus for its manager, our chart's enablePrometheus template for ours."""
    if system == "upstream":
        cmd = [str(kubectl), "kustomize", str(kueue_module / KUEUE_MONITOR)]
    else:
        cmd = [
            str(helm),
            "template",
            "pykueue",
            str(CHART),
            f"--namespace={namespace}",
            "--set=enablePrometheus=true",
            "--show-only=templates/prometheus.yaml",
        ]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise PrometheusError("render the ServiceMonitor", f"{' '.join(cmd[:2])}: {res.stderr.strip()[-800:]}")
    return [d for d in yaml.safe_load_all(res.stdout) if d]


def wait_operator(cluster: Cluster) -> None:
    """As upstream: the operator's Deployment available before the Prometheus resource goes in."""
    res = cluster.kubectl(
        "-n", "default", "rollout", "status", "deploy/prometheus-operator", "--timeout=300s", timeout=320.0
    )
    if res.returncode != 0:
        pods = cluster.kubectl("-n", "default", "get", "pods", "-o", "wide")
        raise PrometheusError("wait for the operator", f"{res.stderr.strip()}\n{pods.stdout}")


def save_logs(cluster: Cluster, out: Path) -> None:
    """The operator's and Prometheus's containers' logs and the Prometheus pod's state, for the report."""
    with open(out, "w") as f:
        for namespace, selector in (
            ("default", "app.kubernetes.io/name=prometheus-operator"),
            (NAMESPACE, "app.kubernetes.io/name=prometheus"),
        ):
            res = cluster.kubectl("-n", namespace, "logs", "--all-containers", "--prefix", "-l", selector, "--tail=-1")
            f.write(res.stdout + res.stderr)
        res = cluster.kubectl("-n", NAMESPACE, "get", "pods,statefulsets", "-o", "wide")
        f.write(res.stdout + res.stderr)
