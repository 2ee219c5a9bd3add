"""A MultiKueue worker lost and back: worker1's kube-apiserver killed mid-flow, kept down past the
manager's workerLostTimeout (20 s here, upstream's default is 15 min), restarted. No Job lost, none
active on both workers at once (but a given-up one in the seconds after worker1 is back, until the
manager deletes one copy: e2e/reliability_multikueue.py), no ClusterQueue above its quota on any of
the three clusters, the manager notices and reconnects. The small version of `python e2e/soak.py --only multikueue`
(e2e/reliability_multikueue.py); it starts its own three control planes (e2e/multicluster.py, root
for the manager's private hosts file) beside the session's stack, about 5 min on this 2-core host.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import reliability_multikueue as rmk  # e2e/, on sys.path by conftest.py
from multicluster import MultiClusterSystem, ours

LOST_TIMEOUT_S = 20.0


@pytest.mark.local_stack
@pytest.mark.timeout(1200)
def test_a_worker_lost_past_worker_lost_timeout_and_back(tmp_path: Path) -> None:
    system = MultiClusterSystem(
        tmp_path / "clusters", ours(config=rmk.config(LOST_TIMEOUT_S), job_pods_run=rmk.POD_RUN_S)
    )
    with system.session():
        fig = rmk.lost_worker(system, jobs=80, worker_lost_timeout_s=LOST_TIMEOUT_S, worker_cpu=4, timeout=600)
    print("multikueue lost worker:", fig)
    assert fig["submit_errors"] == []
    assert fig["violations"] == []
    assert fig["problems"] == []
    assert fig["on_both_workers_at_once"] == []
    assert fig["lost_workloads"] > 0
    # The watch breaks with the API server: the manager marks the cluster inactive long before the timeout.
    assert fig["inactive_after_s"] is not None and fig["inactive_after_s"] < LOST_TIMEOUT_S
    assert "reconnected_after_restart_s" in fig
