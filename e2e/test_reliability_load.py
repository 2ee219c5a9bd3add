"""Load: Jobs created as fast as the API takes them; no webhook timeouts, all admitted and finished."""

from __future__ import annotations

import pytest

from e2e import hostile
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


@pytest.mark.local_stack
def test_hostile_clients_beside_the_load_refuse_no_legitimate_create(kubectl: Kubectl) -> None:
    """Slow, oversized and malformed clients at the webhook, metrics and visibility servers (what any
    pod can send) while 300 Jobs are created: none refused, none late, all admitted and finished."""
    stack = local_stack(kubectl)
    mix = hostile.against_stack(stack)
    fig = rel.load(
        rel.admin(stack.kubeconfig), n=300, server_pid=int(stack.pid_file.read_text()), timeout=180, hostile=mix
    )
    print("hostile load:", fig)
    assert fig["submit_errors"] == [] and fig["created"] == 300
    assert fig["violations"] == [] and fig["problems"] == []
    assert fig["hostile_sent"]["slow"] >= 100 and fig["hostile_sent"]["malformed"] > 0
