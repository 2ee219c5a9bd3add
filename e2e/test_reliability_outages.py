"""Restarts and outages: worker SIGKILLs, kube-apiserver restarts (etcd kept), a worker paused past
its lease, all during one run of Jobs in a cohort. Nothing lost, nothing admitted twice, quota
never over its limits, usage back to zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e import reliability as rel
from e2e.conftest import Kubectl, local_stack


@pytest.mark.local_stack
def test_worker_kills_apiserver_restarts_and_a_pause(kubectl: Kubectl, tmp_path: Path) -> None:
    stack = local_stack(kubectl)
    kube = rel.admin(stack.kubeconfig)
    stack._stop_server()  # one replica with short lease timings instead
    try:
        fig = rel.outages(
            kube,
            stack.cluster,
            tmp_path,
            cert_dir=stack.cert_dir,
            kubeconfig=stack.kubeconfig,
            port=stack.port,
            jobs=150,
            worker_kills=3,
            apiserver_restarts=2,
            pause_s=8,
        )
    finally:
        stack._start_server(stack.port)
    print("outages:", fig)
    assert fig["submit_errors"] == []
    assert fig["violations"] == []
    assert fig["problems"] == []
    assert fig["tracebacks"] == []
    assert len(fig["worker_recovery_s"]) == 3 and len(fig["apiserver_down_s"]) == 2
    # Every watch came back after the API server restarts (a failure logged, then a fresh list/watch):
    # the run could not have finished otherwise, and the log shows the informers noticed.
    assert fig["watch_failures"] + fig["relists"] > 0
