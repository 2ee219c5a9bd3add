"""The restart supervisor's pure pieces (e2e/restarts.py): what of the suite's ConfigMap a restarted
host-process system takes. Following the Deployment and restarting is `make e2e-upstream
SUITE=multikueue-sequential`'s job."""

from __future__ import annotations

import pytest
import restarts  # e2e/, put on sys.path by conftest.py
import upstream_real
import yaml

#: A host-process system's Configuration after the suite's round trip through upstream's type, with the
#: Incremental dispatcher and a gate of a feature we lack turned on.
ROUND_TRIPPED = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:40001
metrics:
  bindAddress: 127.0.0.1:40002
  enableClusterQueueResources: true
webhook:
  host: 127.0.0.1
  port: 40003
  certDir: /tmp/certs
visibilityServer:
  bindAddress: 127.0.0.1
  bindPort: 40004
internalCertManagement:
  enable: false
integrations:
  frameworks:
  - batch/job
  - pod
  - sparkoperator.k8s.io/sparkapplication
multiKueue:
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
featureGates:
  MultiKueueOrchestratedPreemption: true
  SparkApplicationIntegration: true
"""


def test_a_restart_keeps_the_systems_own_bindings() -> None:
    cfg = restarts.without_host_bindings(restarts.parse(ROUND_TRIPPED))
    assert not {"health", "webhook", "visibilityServer", "internalCertManagement"} & cfg.keys()
    assert cfg["metrics"] == {"enableClusterQueueResources": True}
    assert cfg["multiKueue"] == {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"}


def test_ours_takes_what_it_implements() -> None:
    cfg = upstream_real.restricted(restarts.without_host_bindings(restarts.parse(ROUND_TRIPPED)))
    # SparkApplication and its gate are implemented now (issue 33): kept as written.
    assert cfg["integrations"]["frameworks"] == ["batch/job", "pod", "sparkoperator.k8s.io/sparkapplication"]
    assert cfg["featureGates"] == {"MultiKueueOrchestratedPreemption": True, "SparkApplicationIntegration": True}


def test_a_configmap_without_a_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="no Configuration"):
        restarts.parse(yaml.safe_dump(["not", "a", "configuration"]))
