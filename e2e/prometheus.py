"""An in-cluster Prometheus on the real node, for upstream's prometheus_test.go specs (feature:prometheus).

Made as upstream's e2e makes it (hack/testing/e2e-common.sh: install_prometheus_operator, then
deploy_kueue_prometheus_config once Kueue is deployed), with no registry:
  - the Prometheus operator and its config reloader (the sidecar and init container it gives each
    Prometheus pod) built by e2e/build-operators.sh from their Go module at the version upstream's
    hack/make/test.mk pins (PROMETHEUS_OPERATOR_VERSION), each in a one-binary image under the name
    upstream loads into kind (quay.io/prometheus-operator/<name>:<version>, e2e/image.py), imported
    into the node's containerd; the operator's release bundle (bundle.yaml in its module, what upstream
    applies) with its Deployment pinned to the real node;
  - Prometheus itself from Debian's package (e2e/image.py) under the name the operator asks for,
    quay.io/prometheus/prometheus:v<Debian's release>; upstream's test/e2e/config/prometheus/
    prometheus-setup.yaml applied with one field added: the Prometheus's spec.version, Debian's release
    (the operator's default is a 3.x image the node does not have, and it writes each Prometheus's
    configuration and flags for the version it runs); namespace `monitoring` is placed on the real node;
  - the system's ServiceMonitor: upstream's config/prometheus (kustomize) for upstream's manager, our
    chart's `enablePrometheus=true` template (charts/pykueue, rendered by helm) for ours.
The suite reaches Prometheus as upstream's does: through the API server's service proxy
(monitoring/prometheus-api:web), which here routes to the pod on the real node.
"""

from __future__ import annotations

import subprocess
import sys
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
BINARIES = ("prometheus-operator", "prometheus-config-reloader")
#: Where each binary sits in its release image (the module's Dockerfiles): the bundle's Deployment and the
#: reloader containers the operator makes (`command: /bin/prometheus-config-reloader`) rely on those paths.
IMAGE_PATHS = {"prometheus-operator": "bin/operator", "prometheus-config-reloader": "bin/prometheus-config-reloader"}
REGISTRY = "quay.io/prometheus-operator"
#: The operator's default base image for Prometheus (pkg/operator/defaults.go DefaultPrometheusBaseImage).
PROMETHEUS_REPOSITORY = "quay.io/prometheus/prometheus"
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


def build_images(directory: Path, kueue_module: Path) -> tuple[list[Path], str]:
    """The operator's, the reloader's and Prometheus's image archives in `directory`, and Prometheus's
    release tag (vX.Y.Z), the version the Prometheus resource states."""
    version = pinned_version(kueue_module)
    bin_dir = operators.build(BINARIES)
    archives = []
    for name in BINARIES:
        out = directory / f"{name}.tar"
        path = IMAGE_PATHS[name]
        image.build_static(
            out,
            binary=bin_dir / f"{name}-{version}",
            name=path,
            tag=f"{REGISTRY}/{name}:{version}",
            config=oci.ImageConfig(entrypoint=(f"/{path}",), user="65534:65534"),
        )
        archives.append(out)
    out = directory / "prometheus.tar"
    tag = image.build_prometheus(out, repository=PROMETHEUS_REPOSITORY)
    return [*archives, out], tag


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


def setup(kueue_module: Path, prometheus_version: str) -> list[dict[str, Any]]:
    """Upstream's prometheus-setup.yaml with the Prometheus's spec.version set (see the module docstring)."""
    docs = [d for d in yaml.safe_load_all((kueue_module / SETUP).read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Prometheus":
            doc["spec"]["version"] = prometheus_version
    return docs


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
