"""The real-node harness's pure pieces (e2e/upstream_real.py): what of upstream's rendered e2e install the
system gets, and the Configuration ours runs with. Running the sequential suites is
`make e2e-upstream SUITE=sequential-baseline|sequential-extended`'s job."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

E2E_DIR = Path(__file__).resolve().parents[2] / "e2e"
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))

import upstream_real  # noqa: E402

#: The shape of upstream's test/e2e/config/extended Configuration (the fields this harness reads).
EXTENDED = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
leaderElection:
  leaderElect: true
  leaseDuration: 60s
integrations:
  frameworks:
  - "batch/job"
  - "sparkoperator.k8s.io/sparkapplication"
  - "example.com/widget"
  - "jobset.x-k8s.io/jobset"
  - "workload.codeflare.dev/appwrapper"
  - "pod"
  - "leaderworkerset.x-k8s.io/leaderworkerset"
featureGates:
  LocalQueueMetrics: true
  MultiKueueManagerQuotaAutomation: true
"""


def rendered(config: str, replicas: int) -> list[dict[str, Any]]:
    return [
        {"kind": "Namespace", "metadata": {"name": "kueue-system"}},
        {
            "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": config},
        },
        {"kind": "Deployment", "metadata": {"name": "kueue-controller-manager"}, "spec": {"replicas": replicas}},
    ]


def test_the_install_gives_the_manager_its_configuration_and_replicas() -> None:
    docs = rendered(EXTENDED, 1)
    assert upstream_real.manager_configuration(docs) == EXTENDED
    assert upstream_real.manager_replicas(docs) == 1
    assert upstream_real.manager_replicas(rendered(EXTENDED, 2)) == 2


@pytest.mark.parametrize(
    ("framework", "enabled"),
    [
        pytest.param("jobset.x-k8s.io/jobset", True, id="jobset kept"),
        pytest.param("leaderworkerset.x-k8s.io/leaderworkerset", True, id="lws kept"),
        pytest.param("workload.codeflare.dev/appwrapper", True, id="appwrapper kept"),
        pytest.param("sparkoperator.k8s.io/sparkapplication", True, id="spark kept"),
        pytest.param("example.com/widget", False, id="a framework ours lacks dropped"),
    ],
)
def test_ours_runs_upstreams_e2e_configuration_less_what_it_lacks(framework: str, enabled: bool) -> None:
    cfg = yaml.safe_load(upstream_real.our_configuration(EXTENDED))
    assert (framework in cfg["integrations"]["frameworks"]) is enabled
    assert cfg["leaderElection"]["leaseDuration"] == "60s"
    assert cfg["featureGates"] == {"LocalQueueMetrics": True, "MultiKueueManagerQuotaAutomation": True}


def test_a_gate_of_a_feature_ours_lacks_is_left_out() -> None:
    text = EXTENDED.replace(
        "  LocalQueueMetrics: true\n", "  LocalQueueMetrics: true\n  PrioritizePreemptorWorkloads: true\n"
    )
    assert "PrioritizePreemptorWorkloads" in text
    cfg = yaml.safe_load(upstream_real.our_configuration(text))
    assert "PrioritizePreemptorWorkloads" not in cfg["featureGates"]
