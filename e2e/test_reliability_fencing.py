"""A leader paused past its renew deadline and replaced issues no write at all once it resumes
(issue 27, finding 7), proven from the API server's audit log on the local stack.

Every write of the worker goes through a client fenced by the lease (`Kube.fenced`), and its
User-Agent names its leader identity, so the audit log tells which replica wrote what.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import job, one_queue, wait_for, wait_workload
from e2e.reliability import Replica, admin, lease_holder, worker_pids

pytestmark = pytest.mark.local_stack

WRITES = {"create", "update", "patch", "delete", "deletecollection"}
# TokenReviews and SubjectAccessReviews are questions, not writes: every replica's metrics and
# visibility servers ask them, standbys included, and they change nothing.
REVIEWS = ("/apis/authentication.k8s.io/", "/apis/authorization.k8s.io/")


@pytest.fixture
def queue(kubectl: Kubectl, namespace: str) -> Iterator[str]:
    with one_queue(kubectl, namespace, "fence", "16") as ns:
        yield ns


def writes_by(audit_log: Path, identity: str, since: datetime | None = None) -> list[str]:
    """Writes the audit log shows from the client whose User-Agent names `identity`."""
    out = []
    for line in audit_log.read_text().splitlines():
        try:
            entry: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:  # the line the API server is writing right now
            continue
        if identity not in entry.get("userAgent", "") or entry.get("verb") not in WRITES:
            continue
        if entry["requestURI"].startswith(REVIEWS):
            continue
        received = datetime.fromisoformat(entry["requestReceivedTimestamp"].replace("Z", "+00:00"))
        if since is None or received >= since:
            out.append(f"{received:%H:%M:%S.%f} {entry['verb']} {entry['requestURI']}")
    return out


def test_a_deposed_leader_writes_nothing_after_resuming(kubectl: Kubectl, queue: str, tmp_path: Path) -> None:
    stack = local_stack(kubectl)
    ns = queue
    kube = admin(stack.kubeconfig)
    [worker] = worker_pids(int(stack.pid_file.read_text()))
    holder = wait_for("the stack's worker leading", lambda: lease_holder(kube)[1] == worker and lease_holder(kube)[0])
    standby = Replica.start("standby", tmp_path, cert_dir=stack.cert_dir, kubeconfig=stack.kubeconfig)
    try:
        kubectl.apply(job(ns, "before", "lq"))
        wait_workload(kubectl, ns, "before", "Admitted")
        assert writes_by(stack.cluster.audit_log, holder), "the audit log names the leader's writes"

        os.kill(worker, signal.SIGSTOP)
        try:
            kubectl.apply(job(ns, "in-hand", "lq"))  # the paused leader may hold its event, or not
            new = wait_for("the standby leading", lambda: lease_holder(kube)[0] != holder, timeout=60)
            assert new
            wait_workload(kubectl, ns, "in-hand", "Admitted", timeout=60)
        finally:
            resumed = datetime.now(UTC)
            os.kill(worker, signal.SIGCONT)
        kubectl.apply(job(ns, "after", "lq"))
        wait_workload(kubectl, ns, "after", "Admitted", timeout=60)
        time.sleep(5)  # time for anything the resumed process still held to be attempted
        assert writes_by(stack.cluster.audit_log, holder, since=resumed) == []
    finally:
        standby.stop()
