"""Admission fair sharing end to end, upstream's two specs
(test/e2e/sequential/baseline/admission_fair_sharing_test.go, kueue v0.19.2):

* within a ClusterQueue, the LocalQueue with the lower usage is admitted first when quota frees up;
* across the ClusterQueues of a cohort, a LocalQueue reclaims its quota by preemption.

The module restarts our server with `admissionFairSharing` (1 s half-life, 1 s sampling, as upstream's
spec) and restores the default Configuration afterwards. The AdmissionFairSharing gate is on by default.
"""

from __future__ import annotations

from typing import Any

import pytest

from e2e.conftest import Kubectl, server_configured
from e2e.helpers import (
    ClusterObjects,
    cluster_queue,
    flavor,
    is_admitted,
    job,
    local_queue,
    submit,
    suspended,
    wait_for,
    wait_workload,
    workload_of,
)
from webhook.api import quantity

pytestmark = pytest.mark.local_stack

AFS_CONFIG = """\
admissionFairSharing:
  usageHalfLifeTime: 1s
  usageSamplingInterval: 1s
"""


admission_fair_sharing_config = server_configured(AFS_CONFIG)


def usage_based(cq: dict[str, Any]) -> dict[str, Any]:
    cq["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    return cq


def weighted(lq: dict[str, Any]) -> dict[str, Any]:
    lq["spec"]["fairSharing"] = {"weight": "1"}
    return lq


def consumed_cpu(kubectl: Kubectl, ns: str, lq: str) -> float:
    """`status.fairSharing.admissionFairSharingStatus.consumedResources.cpu`, in cores (0 when absent)."""
    status = (kubectl.get("localqueue", "-n", ns, lq).get("status") or {}).get("fairSharing") or {}
    cpu = (status.get("admissionFairSharingStatus") or {}).get("consumedResources", {}).get("cpu")
    return float(quantity.parse(cpu)) if cpu is not None else 0.0


def test_local_queue_with_lower_usage_is_admitted_first(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> None:
    rf, cq = objs.name("afs-rf"), objs.name("afs-cq")
    objs.apply(flavor(rf))
    objs.apply(usage_based(cluster_queue(cq, rf, "8")))
    objs.apply(weighted(local_queue(namespace, "lq-a", cq)))
    objs.apply(weighted(local_queue(namespace, "lq-b", cq)))

    submit(kubectl, job(namespace, "job-a-1", "lq-a", cpu="4"), job(namespace, "job-a-2", "lq-a", cpu="4"))
    wait_workload(kubectl, namespace, "job-a-1", "Admitted")
    wait_workload(kubectl, namespace, "job-a-2", "Admitted")
    wait_for("lq-a accumulated usage", lambda: consumed_cpu(kubectl, namespace, "lq-a") > 4.0 or None, timeout=60)

    # Created in this order, job-a-3 is older: without admission fair sharing it would go first.
    submit(kubectl, job(namespace, "job-a-3", "lq-a", cpu="4"), job(namespace, "job-b-1", "lq-b", cpu="4"))
    wait_workload(kubectl, namespace, "job-a-3", "QuotaReserved", "False")
    # job-b-1 has job-a-3's scheduling hash: it may be parked with it, without a condition of its own.
    wait_for("job-b-1's Workload", lambda: workload_of(kubectl, namespace, "job-b-1"))
    assert not is_admitted(kubectl, namespace, "job-b-1")
    kubectl("delete", "job", "-n", namespace, "job-a-1", "--cascade=foreground", "--wait=false")

    wait_workload(kubectl, namespace, "job-b-1", "Admitted", timeout=60)
    assert not suspended(kubectl, namespace, "job-b-1")
    assert suspended(kubectl, namespace, "job-a-3")


def test_preemption_reclaims_quota_across_cluster_queues(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    rf, co = objs.name("afs-rf"), objs.name("afs-cohort")
    cq1, cq2 = objs.name("afs-cq1"), objs.name("afs-cq2")
    objs.apply(flavor(rf))
    for cq in (cq1, cq2):
        objs.apply(usage_based(cluster_queue(cq, rf, "4", cohort=co, preemption={"reclaimWithinCohort": "Any"})))
    objs.apply(weighted(local_queue(namespace, "lq1-a", cq1)))
    objs.apply(weighted(local_queue(namespace, "lq2-a", cq2)))

    submit(kubectl, job(namespace, "job1-a-1", "lq1-a", cpu="3"), job(namespace, "job1-a-2", "lq1-a", cpu="3"))
    wait_workload(kubectl, namespace, "job1-a-1", "Admitted")
    wait_workload(kubectl, namespace, "job1-a-2", "Admitted")
    wait_for("lq1-a accumulated usage", lambda: consumed_cpu(kubectl, namespace, "lq1-a") > 3.0 or None, timeout=60)

    submit(kubectl, job(namespace, "job2-a-1", "lq2-a", cpu="3"))
    wait_workload(kubectl, namespace, "job2-a-1", "Admitted", timeout=60)
    assert not suspended(kubectl, namespace, "job2-a-1")
    wait_for(
        "cq1 down to one admitted workload",
        lambda: (kubectl.get("clusterqueue", cq1).get("status") or {}).get("admittedWorkloads") == 1 or None,
        timeout=60,
    )
