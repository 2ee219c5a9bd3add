"""Leader failover: two replicas on one lease, the lease holder SIGKILLed repeatedly during a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e import reliability as rel
from e2e.conftest import Kubectl, local_stack


@pytest.mark.local_stack
def test_leader_killed_repeatedly_no_job_lost_or_over_quota(kubectl: Kubectl, tmp_path: Path) -> None:
    stack = local_stack(kubectl)
    kube = rel.admin(stack.kubeconfig)
    stack._stop_server()  # its worker would compete for the lease with other settings
    try:
        fig = rel.failover(
            kube,
            tmp_path,
            cert_dir=stack.cert_dir,
            kubeconfig=stack.kubeconfig,
            port=stack.port,
            jobs=100,
            kills=4,
            lease=4,
            renew=3,
            retry=1,
        )
    finally:
        stack._start_server(stack.port)
    print(
        f"failover: takeovers {[round(t, 2) for t in fig['takeover_s']]} s, {fig['samples']} samples, "
        f"peak reserved {fig['peak_reserved_m']}m"
    )
    assert fig["submit_errors"] == []
    assert fig["violations"] == []
    assert fig["problems"] == []
    assert len(fig["takeover_s"]) == 4
    # client-go's rule: the standby waits a full lease duration after it last saw the record change,
    # and polls every retry period.
    assert max(fig["takeover_s"]) <= fig["lease_s"] + 2 * fig["retry_s"] + 1
    assert fig["log_errors"] == []
