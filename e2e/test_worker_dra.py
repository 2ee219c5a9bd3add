"""DRA devices in quota end to end (issue 29): a Job whose pods ask for devices through a
ResourceClaimTemplate is charged the mapped logical resource, and one Kueue cannot count is held
Inadmissible with upstream's message (kueue v0.19.2 `pkg/dra/claims.go`, `workload_controller.go`).

The module restarts our server with a `deviceClassMappings` Configuration and restores the default
one afterwards. No DRA driver runs: the pods never get their devices, which is beside the point;
admission happens before them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, server_configured
from e2e.helpers import cond, flavor, job, local_queue, submit, wait_workload

pytestmark = pytest.mark.local_stack

GPU = "example.com/gpu"
MAPPINGS = f"""\
resources:
  deviceClassMappings:
  - name: {GPU}
    deviceClassNames: [gpu.example.com]
"""


dra_config = server_configured(MAPPINGS)


@pytest.fixture
def queue(kubectl: Kubectl, namespace: str) -> Iterator[str]:
    """LocalQueue `lq` on a ClusterQueue with 10 CPUs and 2 devices of `example.com/gpu`."""
    s = uuid.uuid4().hex[:6]
    rf, cq = f"dra-rf-{s}", f"dra-cq-{s}"
    spec = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", GPU],
                "flavors": [
                    {
                        "name": rf,
                        "resources": [{"name": "cpu", "nominalQuota": "10"}, {"name": GPU, "nominalQuota": "2"}],
                    }
                ],
            }
        ],
    }
    cluster_scoped = [
        flavor(rf),
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": spec},
    ]
    for o in [*cluster_scoped, local_queue(namespace, "lq", cq)]:
        kubectl.apply(o)
    yield namespace
    kubectl("delete", "jobs,workloads", "-n", namespace, "--all", "--wait=false", check=False)
    for o in reversed(cluster_scoped):
        kubectl("delete", o["kind"].lower(), o["metadata"]["name"], "--wait=false", "--ignore-not-found", check=False)


def claim_template(ns: str, name: str, **exactly: Any) -> dict[str, Any]:
    request = {"name": "dev", "exactly": {"deviceClassName": "gpu.example.com", **exactly}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def device_job(ns: str, name: str, claim: dict[str, str]) -> dict[str, Any]:
    j = job(ns, name, "lq")
    spec = j["spec"]["template"]["spec"]
    spec["resourceClaims"] = [{"name": "gpu", **claim}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return j


def usage(wl: dict[str, Any]) -> dict[str, str]:
    return dict(wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"])


def test_devices_are_charged_and_bound_quota(kubectl: Kubectl, queue: str) -> None:
    ns = queue
    kubectl.apply(claim_template(ns, "one", count=1))
    kubectl.apply(claim_template(ns, "two", count=2))
    submit(kubectl, device_job(ns, "first", {"resourceClaimTemplateName": "one"}))
    wl = wait_workload(kubectl, ns, "first", "Admitted")
    assert usage(wl) == {"cpu": "1", GPU: "1"}

    # One device left: a Job needing two waits for quota, as upstream's scheduler says.
    submit(kubectl, device_job(ns, "second", {"resourceClaimTemplateName": "two"}))
    pending = wait_workload(kubectl, ns, "second", "QuotaReserved", "False", reason="Pending")
    assert "insufficient unused quota for example.com/gpu" in cond(pending, "QuotaReserved")["message"]


def test_an_unmapped_device_class_is_inadmissible(kubectl: Kubectl, queue: str) -> None:
    ns = queue
    kubectl.apply(claim_template(ns, "fpga", deviceClassName="fpga.example.com", count=1))
    submit(kubectl, device_job(ns, "unmapped", {"resourceClaimTemplateName": "fpga"}))
    wl = wait_workload(kubectl, ns, "unmapped", "QuotaReserved", "False", reason="Inadmissible")
    message = (
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "
        '"DeviceClass fpga.example.com is not mapped in DRA configuration for podset main"'
    )
    assert cond(wl, "QuotaReserved")["message"] == message
    assert (cond(wl, "Requeued")["status"], cond(wl, "Requeued")["reason"]) == ("False", "Inadmissible")


def test_a_template_created_late_lets_the_workload_in(kubectl: Kubectl, queue: str) -> None:
    ns = queue
    submit(kubectl, device_job(ns, "early", {"resourceClaimTemplateName": "later"}))
    wl = wait_workload(kubectl, ns, "early", "QuotaReserved", "False", reason="Inadmissible")
    assert cond(wl, "QuotaReserved")["message"].endswith('resourceclaimtemplates.resource.k8s.io "later" not found')
    kubectl.apply(claim_template(ns, "later", count=2))
    wl = wait_workload(kubectl, ns, "early", "Admitted")
    assert usage(wl) == {"cpu": "1", GPU: "2"}


def test_a_resource_claim_is_inadmissible(kubectl: Kubectl, queue: str) -> None:
    ns = queue
    submit(kubectl, device_job(ns, "claimed", {"resourceClaimName": "shared"}))
    wl = wait_workload(kubectl, ns, "claimed", "QuotaReserved", "False", reason="Inadmissible")
    assert cond(wl, "QuotaReserved")["message"] == (
        "KueueDRAIntegration feature does not support use of resource claims"
    )
    assert cond(wl, "Requeued")["message"] == "DRA resource claims not supported"
