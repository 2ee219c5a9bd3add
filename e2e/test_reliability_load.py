"""Load: Jobs created as fast as the API takes them; no webhook timeouts, all admitted and finished."""

from __future__ import annotations

import pytest

from e2e import reliability as rel
from e2e.conftest import Kubectl, local_stack


@pytest.mark.local_stack
def test_300_jobs_as_fast_as_the_api_takes_them(kubectl: Kubectl) -> None:
    stack = local_stack(kubectl)
    fig = rel.load(rel.admin(stack.kubeconfig), n=300, server_pid=int(stack.pid_file.read_text()), timeout=120)
    print("load:", fig)
    assert fig["submit_errors"] == [] and fig["created"] == 300
    assert fig["violations"] == [] and fig["problems"] == []
    # bench_core measures the admission core at well under 10 MB per 1,000 pending Workloads; the whole
    # worker process (informer caches of Jobs and Workloads included) stays within a generous bound.
    assert fig["rss_peak_mb"]["worker"] - fig["rss_before_mb"]["worker"] < 150
    assert fig["rss_peak_mb"]["serve"] - fig["rss_before_mb"]["serve"] < 100
