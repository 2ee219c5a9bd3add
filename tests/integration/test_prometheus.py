"""The in-cluster Prometheus's pure pieces (e2e/prometheus.py) and the singlecluster-prometheus selection. Running the suite is `make e2e-upstream SUITE=singlecluster-prometheus`'s job."""

from __future__ import annotations

from pathlib import Path

import prometheus
import pytest
import upstream_suite
from cluster import Cluster, RealNodeSpec
from upstream_build import kueue_module_dir


def test_the_operator_version_is_the_one_upstreams_e2e_pins() -> None:
    module = kueue_module_dir()
    assert prometheus.pinned_version(module) == "v0.89.0"  # hack/make/test.mk of the pinned Kueue


def test_prometheus_is_the_release_the_operator_defaults_to() -> None:
    # pkg/operator/defaults.go of v0.89.0: DefaultPrometheusVersion is the compatibility matrix's last, v3.9.1
    assert prometheus.prometheus_version("v0.89.0") == ("v0.309.1", "v3.9.1")


def test_upstreams_prometheus_setup_is_applied_unchanged() -> None:
    module = kueue_module_dir()
    docs = prometheus.setup(module)
    by_kind = {d["kind"]: d for d in docs}
    assert by_kind["Prometheus"]["spec"] == {
        "serviceAccountName": "prometheus-k8s",
        "scrapeInterval": "2s",
        "serviceMonitorNamespaceSelector": {},
        "serviceMonitorSelector": {},
    }
    binding = next(d for d in docs if d["metadata"]["name"] == "prometheus-kueue-metrics-reader")
    assert binding["roleRef"]["name"] == "kueue-metrics-reader"


def test_the_operators_bundle_runs_on_the_real_node(tmp_path: Path) -> None:
    operators_module = prometheus.operators.module_dir(prometheus.MODULE, "v0.89.0")
    if not (operators_module / "bundle.yaml").exists():
        pytest.fail(f"no bundle.yaml in {operators_module}")
    cluster = Cluster(tmp_path, bin_dir=tmp_path, real_node=RealNodeSpec())
    docs = prometheus.bundle(kueue_module_dir(), cluster)
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    selector, toleration = cluster.real_node_placement()
    assert selector.items() <= spec["nodeSelector"].items()
    assert toleration in spec["tolerations"]
    assert spec["containers"][0]["image"] == "quay.io/prometheus-operator/prometheus-operator:v0.89.0"
    assert (
        "--prometheus-config-reloader=quay.io/prometheus-operator/prometheus-config-reloader:v0.89.0"
        in (spec["containers"][0]["args"])
    )
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"} >= {
        "prometheuses.monitoring.coreos.com",
        "servicemonitors.monitoring.coreos.com",
    }


def test_ours_is_scraped_through_the_charts_service_monitor(tmp_path: Path) -> None:
    helm = Cluster(tmp_path).bin_dir / "helm"  # resolves (and builds) the binaries only
    docs = prometheus.kueue_monitor(
        "ours", kueue_module_dir(), kubectl=Path("kubectl"), helm=helm, namespace="kueue-system"
    )
    monitor = next(d for d in docs if d["kind"] == "ServiceMonitor")
    assert monitor["metadata"]["namespace"] == "kueue-system"
    assert monitor["spec"]["endpoints"][0]["port"] == "https"
    assert monitor["spec"]["endpoints"][0]["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert {"Role", "RoleBinding"} <= {d["kind"] for d in docs}


def test_the_prometheus_suite_runs_the_baseline_package_and_its_rest_is_the_baselines() -> None:
    suite = upstream_suite.SUITES["singlecluster-prometheus"]
    baseline = upstream_suite.SUITES["singlecluster-baseline"]
    assert suite.binary == baseline.binary == "singlecluster-baseline.test"
    assert suite.real_node and suite.with_prometheus and suite.config_folder == "baseline"
    selection = upstream_suite.Selection.load(suite.selection_file)
    assert selection.rest_in == baseline.name
    assert selection.label_filter == "feature:prometheus"
    excluded_there = upstream_suite.Selection.load(baseline.selection_file).excluded
    prom_specs = {t for t in excluded_there if t.startswith("Prometheus ")}
    assert len(prom_specs) == 3
    assert all("singlecluster-prometheus" in excluded_there[t] for t in prom_specs)
