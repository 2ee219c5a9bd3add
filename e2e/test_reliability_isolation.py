"""Namespace isolation: a Workload crafted in one namespace cannot make the worker touch objects in
another. Owner references and queue names resolve in the Workload's own namespace only, as in
upstream (the Job reconciler, the LocalQueue lookup and Kubernetes' garbage collector all do)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl
from e2e.helpers import cluster_queue, cond, flavor, job, local_queue, wait_for, workload_of

V1B2 = "kueue.x-k8s.io/v1beta2"


@pytest.fixture
def tenants(kubectl: Kubectl) -> Iterator[tuple[str, str, str]]:
    """Namespaces `victim` and `attacker`, each with LocalQueue `lq` on its own ClusterQueue:
    the victim's has no quota (its Job waits), the attacker's has plenty."""
    s = uuid.uuid4().hex[:6]
    victim, attacker = f"victim-{s}", f"attacker-{s}"
    rf = f"iso-rf-{s}"
    objs: list[dict[str, Any]] = [
        flavor(rf),
        cluster_queue(f"iso-victim-{s}", rf, "0"),
        cluster_queue(f"iso-attacker-{s}", rf, "8"),
    ]
    for ns in (victim, attacker):
        kubectl("create", "namespace", ns)
    objs += [local_queue(victim, "lq", f"iso-victim-{s}"), local_queue(attacker, "lq", f"iso-attacker-{s}")]
    for o in objs:
        kubectl.apply(o)
    yield victim, attacker, s
    for ns in (victim, attacker):
        kubectl("delete", "jobs,workloads", "-n", ns, "--all", "--wait=false", check=False)
        kubectl("delete", "namespace", ns, "--wait=false", check=False)
    for o in reversed(objs[:3]):
        kubectl("delete", o["kind"].lower(), o["metadata"]["name"], "--wait=false", "--ignore-not-found", check=False)


def _workload(ns: str, name: str, owner: dict[str, Any] | None, queue: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": V1B2,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                        }
                    },
                }
            ],
        },
    }


def test_workload_owned_by_another_namespaces_job_cannot_start_it(
    kubectl: Kubectl, tenants: tuple[str, str, str]
) -> None:
    victim, attacker, _ = tenants
    kubectl("create", "-f", "-", input=json.dumps(job(victim, "payroll", "lq")))

    def victim_settled() -> dict[str, Any] | None:
        w = workload_of(kubectl, victim, "payroll")
        if w is None or cond(w, "QuotaReserved").get("status") != "False":
            return None
        # kube-controller-manager's Job controller marks the suspended Job Suspended=True on its own
        # pass: that status write would move the resourceVersion compared below.
        j = kubectl.get("job", "-n", victim, "payroll")
        return j if cond(j, "Suspended").get("status") == "True" else None

    target = wait_for("victim's Job pending (and marked Suspended)", victim_settled)
    before_rv = target["metadata"]["resourceVersion"]
    # The attacker copies the victim Job's uid and name into an owner reference, and also names a
    # LocalQueue that only exists (with another meaning) in the attacker's own namespace.
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "payroll",
        "uid": target["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }
    kubectl("create", "-f", "-", input=json.dumps(_workload(attacker, "evil", owner, "lq")))
    # Whatever happens to the crafted Workload in the attacker's namespace (admitted on the attacker's
    # own quota, or collected by the garbage collector for its dangling owner), the victim's Job and
    # Workload must not move.
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        job_now = kubectl.get("job", "-n", victim, "payroll")
        assert job_now["spec"]["suspend"] is True
        assert job_now["metadata"]["resourceVersion"] == before_rv
        assert not job_now["spec"]["template"]["spec"].get("nodeSelector")
        w = workload_of(kubectl, victim, "payroll")
        assert w is not None and cond(w, "QuotaReserved").get("status") == "False"
        time.sleep(0.5)


def test_workload_naming_another_namespaces_queue_uses_its_own_namespace(
    kubectl: Kubectl, tenants: tuple[str, str, str]
) -> None:
    victim, attacker, s = tenants
    # `lq-only-in-victim` exists in the victim namespace only: the attacker's Workload cannot use it.
    kubectl.apply(local_queue(victim, "lq-only-in-victim", f"iso-attacker-{s}"))
    kubectl("create", "-f", "-", input=json.dumps(_workload(attacker, "borrower", None, "lq-only-in-victim")))

    def pending() -> dict[str, Any] | None:
        w = kubectl.get("workload", "-n", attacker, "borrower")
        c = cond(w, "QuotaReserved")
        return c if c.get("status") == "False" else None

    c = wait_for("attacker's Workload pending", pending)
    assert c["reason"] == "Inadmissible"  # UnadmittedWorkloadsObservability off: upstream's legacy reason
    assert c["message"] == "LocalQueue lq-only-in-victim doesn't exist"
    assert not (kubectl.get("workload", "-n", attacker, "borrower").get("status") or {}).get("admission")
