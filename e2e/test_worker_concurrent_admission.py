"""ConcurrentAdmission end to end: the two specs of upstream's
`test/e2e/singlecluster/baseline/concurrent_admission_test.go` (v0.19.2), with what they create and
assert, plus where the Job's pods land.

The module restarts our server with the `ConcurrentAdmission` feature gate on and restores the
default Configuration afterwards. Upstream's flavors are "reservation" (preferred) and "spot"; here
the preferred flavor selects the kwok `on-demand` nodes so the pods run and their node selector can
be checked before and after the migration.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, server_configured
from e2e.helpers import cond, create, wait_for, workloads

pytestmark = pytest.mark.local_stack

GATE_ON = """\
featureGates:
  ConcurrentAdmission: true
"""
PARENT_LABEL = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED = "kueue.x-k8s.io/workload-allowed-resource-flavors"


concurrent_admission_gate = server_configured(GATE_ON)


@pytest.fixture
def queues(kubectl: Kubectl, namespace: str) -> Iterator[tuple[str, str, str]]:
    """Two flavors (preferred first), a ClusterQueue with a TryPreferredFlavors policy, LocalQueue `main`."""
    preferred, spot, cq = f"reservation-{namespace}", f"spot-{namespace}", f"cq-concurrent-{namespace}"
    for name, nodes in ((preferred, "on-demand"), (spot, "spot")):
        kubectl.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": name},
                "spec": {"nodeLabels": {"instance-type": nodes}},
            }
        )
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": f,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "5"},
                                    {"name": "memory", "nominalQuota": "1Gi"},
                                ],
                            }
                            for f in (preferred, spot)
                        ],
                    }
                ],
            },
        }
    )
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "main", "namespace": namespace},
            "spec": {"clusterQueue": cq},
        }
    )
    wait_for(
        "the ClusterQueue to be active", lambda: cond(kubectl.get("clusterqueue", cq), "Active").get("status") == "True"
    )
    yield preferred, spot, cq
    kubectl("delete", "jobs", "-n", namespace, "--all", "--wait=false", check=False)
    kubectl("delete", "workloads", "-n", namespace, "--all", "--wait=false", check=False)
    kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
    kubectl("delete", "resourceflavor", preferred, spot, "--wait=false", check=False)


def job(ns: str) -> dict[str, Any]:
    """Upstream's Job: one pod, 200m CPU and 20Mi, running until deleted."""
    resources = {"cpu": "200m", "memory": "20Mi"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "main"}},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": resources, "limits": resources},
                        }
                    ],
                }
            }
        },
    }


def parent_of(kubectl: Kubectl, ns: str) -> dict[str, Any] | None:
    return next(
        (w for w in workloads(kubectl, ns) if (w["metadata"].get("ownerReferences") or [{}])[0].get("kind") == "Job"),
        None,
    )


def variant(wls: list[dict[str, Any]], parent: str, flavor: str) -> dict[str, Any] | None:
    """`getVariantByFlavor`."""
    return next(
        (
            w
            for w in wls
            if w["metadata"]["name"] != parent
            and any(r["name"] == parent for r in w["metadata"].get("ownerReferences") or ())
            and (w["metadata"].get("annotations") or {}).get(ALLOWED) == flavor
        ),
        None,
    )


def admitted_on(wl: dict[str, Any] | None, flavor: str) -> bool:
    if wl is None or cond(wl, "Admitted").get("status") != "True":
        return False
    return bool(wl["status"]["admission"]["podSetAssignments"][0]["flavors"].get("cpu") == flavor)


def set_preferred_quota(kubectl: Kubectl, cq: str, cpu: str, memory: str) -> None:
    patch = [
        {"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": cpu},
        {"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/1/nominalQuota", "value": memory},
    ]
    kubectl("patch", "clusterqueue", cq, "--type=json", "-p", json.dumps(patch))


def job_pod_selector(kubectl: Kubectl, ns: str) -> dict[str, str] | None:
    j = kubectl.get("job", "-n", ns, "job")
    return None if j["spec"].get("suspend") else j["spec"]["template"]["spec"].get("nodeSelector")


def test_one_parent_workload_and_one_variant_per_flavor(
    kubectl: Kubectl, namespace: str, queues: tuple[str, str, str]
) -> None:
    """Upstream "Should create one Parent Workload and one Variant per flavor"."""
    preferred, spot, _ = queues
    create(kubectl, job(namespace))
    parent = wait_for(
        "the parent Workload labelled",
        lambda: (
            (p := parent_of(kubectl, namespace))
            and (p["metadata"].get("labels") or {}).get(PARENT_LABEL) == "true"
            and p
        ),
    )
    assert parent["metadata"]["name"].startswith("job-job-")

    def all_three() -> list[dict[str, Any]] | None:
        wls = workloads(kubectl, namespace)
        flavors = sorted(a for w in wls if (a := (w["metadata"].get("annotations") or {}).get(ALLOWED)))
        return wls if len(wls) == 3 and flavors == sorted([preferred, spot]) else None

    wls = wait_for("one variant per flavor (2 variants + 1 parent)", all_three)
    variants = [
        w
        for w in wls
        if w["metadata"]["name"] != parent["metadata"]["name"]
        and any(r["uid"] == parent["metadata"]["uid"] for r in w["metadata"].get("ownerReferences") or ())
    ]
    assert len(variants) == 2
    for v in variants:
        ref = v["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref.get("controller"), ref.get("blockOwnerDeletion")) == (
            "Workload",
            parent["metadata"]["name"],
            True,
            True,
        )
        assert PARENT_LABEL not in (v["metadata"].get("labels") or {})
        assert {"name": "kueue.x-k8s.io/concurrent-admission"} in v["spec"]["preemptionGates"]
    # Both flavors have quota: the preferred variant wins and the parent carries its admission.
    wait_for(
        "the parent admitted on the preferred flavor",
        lambda: admitted_on(kubectl.get("workload", "-n", namespace, parent["metadata"]["name"]), preferred),
    )
    assert wait_for("the Job started on the preferred nodes", lambda: job_pod_selector(kubectl, namespace)) == {
        "instance-type": "on-demand"
    }


def test_job_migrates_to_the_more_favorable_flavor_when_its_quota_becomes_available(
    kubectl: Kubectl, namespace: str, queues: tuple[str, str, str]
) -> None:
    """Upstream "Should migrate Job to more favorable flavor when its quota becomes available"."""
    preferred, spot, cq = queues
    set_preferred_quota(kubectl, cq, "0", "0")
    create(kubectl, job(namespace))
    parent = wait_for("the parent Workload", lambda: parent_of(kubectl, namespace))
    name = parent["metadata"]["name"]

    wait_for(
        "the parent admitted on spot",
        lambda: admitted_on(kubectl.get("workload", "-n", namespace, name), spot),
        timeout=60,
    )

    def spot_admitted_reservation_pending() -> tuple[dict[str, Any], dict[str, Any]] | None:
        wls = workloads(kubectl, namespace)
        s, r = variant(wls, name, spot), variant(wls, name, preferred)
        return (
            (s, r)
            if s is not None and r is not None and admitted_on(s, spot) and r["spec"].get("active", True)
            else None
        )

    _, reservation = wait_for(
        "the spot variant admitted, the preferred one pending and active", spot_admitted_reservation_pending
    )
    assert cond(reservation, "QuotaReserved").get("status") == "False"
    assert wait_for("the Job started on spot nodes", lambda: job_pod_selector(kubectl, namespace)) == {
        "instance-type": "spot"
    }

    set_preferred_quota(kubectl, cq, "5", "1Gi")
    parent = wait_for(
        "the parent migrated to the preferred flavor",
        lambda: when_admitted(kubectl, namespace, name, preferred),
        timeout=60,
    )
    evicted = cond(parent, "Evicted")
    assert (evicted.get("status"), evicted.get("message")) == ("False", "Previously: Admitted variant was evicted")
    wait_for(
        "the spot variant deactivated",
        lambda: (
            (s := variant(workloads(kubectl, namespace), name, spot)) is not None
            and s["spec"].get("active", True) is False
        ),
    )
    assert wait_for(
        "the Job restarted on the preferred nodes",
        lambda: (sel := job_pod_selector(kubectl, namespace)) == {"instance-type": "on-demand"} and sel,
    )
    s = variant(workloads(kubectl, namespace), name, spot)
    assert s is not None and cond(s, "Evicted").get("reason") == "FlavorMigration"


def when_admitted(kubectl: Kubectl, ns: str, name: str, flavor: str) -> dict[str, Any] | None:
    wl = kubectl.get("workload", "-n", ns, name)
    return wl if admitted_on(wl, flavor) else None


def test_only_the_most_preferred_variant_may_preempt(kubectl: Kubectl, namespace: str) -> None:
    """Upstream's integration spec "should open the preemption gate for only the most-preferred
    variant at a time": both 1-CPU flavors held by low-priority Workloads, a high-priority parent
    whose two variants both need preemption; only the preferred variant's gate opens."""
    preferred, spot, cq = f"reservation-{namespace}", f"spot-{namespace}", f"cq-preemption-gate-{namespace}"
    for name in (preferred, spot):
        kubectl.apply(
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}
        )
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "concurrentAdmissionPolicy": {"migration": {"mode": "RetainFirstAdmission"}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": f, "resources": [{"name": "cpu", "nominalQuota": "1"}]} for f in (preferred, spot)
                        ],
                    }
                ],
            },
        }
    )
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": cq},
        }
    )
    wait_for(
        "the ClusterQueue to be active", lambda: cond(kubectl.get("clusterqueue", cq), "Active").get("status") == "True"
    )

    def wl(name: str, priority: int) -> dict[str, Any]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "queueName": "lq",
                "priority": priority,
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}
                                ],
                            }
                        },
                    }
                ],
            },
        }

    try:
        for i in range(2):
            create(kubectl, wl(f"low-{i}", 0))
            wait_for(
                f"low-{i} to hold quota",
                lambda i=i: (
                    cond(kubectl.get("workload", "-n", namespace, f"low-{i}"), "QuotaReserved").get("status") == "True"
                ),
                timeout=60,
            )
        parent = wl("parent-wl-preemption-gate", 100)
        parent["metadata"]["labels"] = {PARENT_LABEL: "true"}
        create(kubectl, parent)

        def gate_open(flavor: str) -> bool:
            v = variant(workloads(kubectl, namespace), "parent-wl-preemption-gate", flavor)
            return v is not None and any(
                g["name"] == "kueue.x-k8s.io/concurrent-admission" and g["position"] == "Open"
                for g in (v.get("status") or {}).get("preemptionGates") or ()
            )

        wait_for("the preferred variant's gate to open", lambda: gate_open(preferred), timeout=60)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # Consistently: the spot variant's gate stays closed
            assert not gate_open(spot)
            time.sleep(0.2)
    finally:
        kubectl("delete", "workloads", "-n", namespace, "--all", "--wait=false", check=False)
        kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
        kubectl("delete", "resourceflavor", preferred, spot, "--wait=false", check=False)
