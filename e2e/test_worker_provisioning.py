"""ProvisioningRequest admission checks against a real cluster-autoscaler (e2e/autoscaler.py: 1.33.0, its kwok
cloud provider making nodes of the `gpu-a100` node group, at most 2 of 4 GPUs each).

A GPU Job in a ClusterQueue whose AdmissionCheck is of controller `kueue.x-k8s.io/provisioning-request`
stays suspended while its ProvisioningRequest and PodTemplates ask the autoscaler for nodes; the
autoscaler makes them, the check turns Ready, the Job starts and its pods run there. A request the
autoscaler cannot satisfy fails (`check-capacity` with `noRetry`: Failed at once) and is retried as the
config's retryStrategy says, then rejected, which deactivates the Workload; a `best-effort-atomic-scale-up`
request beyond the group's maximum waits with the autoscaler's own message. `kubectl kueue explain` shows
each check's state and message throughout.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import ClusterObjects, cond, events, local_queue, submit, suspended, wait_for, when, workload_of

pytestmark = [pytest.mark.cluster, pytest.mark.local_stack, pytest.mark.autoscaler]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from autoscaler import NODE_GROUP_ANNOTATION, NODE_GROUP_LABEL, PROVIDER_TAINT  # noqa: E402
from cluster import tail  # noqa: E402

T = TypeVar("T")

CLI = Path(sys.executable).parent / "kubectl-kueue"
CONTROLLER = "kueue.x-k8s.io/provisioning-request"
BEST_EFFORT = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
GPU = "nvidia.com/gpu"
GROUP = "gpu-a100"
GPUS_PER_NODE = 4
# The autoscaler's messages (provisioningrequest/conditions/conditions.go, checkcapacity/provisioningclass.go,
# besteffortatomic/provisioning_class.go of cluster-autoscaler 1.33.0).
PROVISIONED = "Capacity is found in the cluster"
NOT_FOUND_NO_RETRY = "CA could not find requested capacity"
NOT_FOUND_LATER = "Capacity is not found, CA will try to find it later."


@pytest.fixture(scope="module", autouse=True)
def autoscaler(kubectl: Kubectl) -> Iterator[Any]:
    stack = local_stack(kubectl)
    stack.start_autoscaler()
    yield stack.autoscaler
    stack.stop_autoscaler()


def waiting_on_autoscaler(autoscaler: Any, what: str, probe: Callable[[], T | None], timeout: float) -> T:
    """`wait_for` a step the autoscaler takes; a timeout shows the end of its log."""
    try:
        return wait_for(what, probe, timeout=timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\ncluster-autoscaler's last lines:\n{tail(autoscaler.log_file, 40)}") from None


def explain(kubectl: Kubectl, ns: str, job: str) -> str:
    env = {"KUBECONFIG": str(kubectl.kubeconfig), "PATH": str(Path(kubectl.binary).parent)}
    proc = subprocess.run(
        [str(CLI), "explain", f"job/{job}", "-n", ns], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    print(f"$ kubectl kueue explain job/{job}\n{proc.stdout}")  # what a user sees (pytest -rP shows it)
    return proc.stdout


def setup(
    objs: ClusterObjects,
    ns: str,
    *,
    klass: str,
    parameters: dict[str, str] | None = None,
    retry: dict[str, int] | None = None,
) -> str:
    """A flavor on the autoscaled node group (tolerating the provider's taint), a ProvisioningRequestConfig
    of `klass`, its AdmissionCheck, a ClusterQueue of 16 GPUs requiring it and LocalQueue `lq`; the check."""
    rf, prc, ac, cq = objs.name("a100"), objs.name("prc"), objs.name("prov"), objs.name("gpu-cq")
    objs.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": rf},
            "spec": {
                "nodeLabels": {NODE_GROUP_LABEL: GROUP},
                "tolerations": [{**PROVIDER_TAINT, "operator": "Equal"}],
            },
        }
    )
    spec: dict[str, Any] = {"provisioningClassName": klass, "managedResources": [GPU]}
    if parameters:
        spec["parameters"] = parameters
    if retry:
        spec["retryStrategy"] = retry
    objs.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": prc},
            "spec": spec,
        }
    )
    objs.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": ac},
            "spec": {
                "controllerName": CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": prc},
            },
        }
    )
    objs.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", GPU],
                        "flavors": [
                            {
                                "name": rf,
                                "resources": [{"name": "cpu", "nominalQuota": 64}, {"name": GPU, "nominalQuota": 16}],
                            }
                        ],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": [{"name": ac}]},
            },
        }
    )
    objs.apply(local_queue(ns, "lq", cq))
    wait_for(
        "the ClusterQueue to be active (its check Active)",
        lambda: when(objs.kubectl.get("clusterqueue", cq), lambda o: cond(o, "Active").get("status") == "True"),
    )
    return ac


def gpu_job(ns: str, name: str, pods: int) -> dict[str, Any]:
    """`pods` pods of 1 CPU and a whole node's GPUs each, running an hour."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": "busybox",
                            "resources": {
                                "requests": {"cpu": "1", GPU: str(GPUS_PER_NODE)},
                                "limits": {GPU: str(GPUS_PER_NODE)},
                            },
                        }
                    ],
                },
            },
        },
    }


def check_state(kubectl: Kubectl, ns: str, job: str, check: str) -> dict[str, Any]:
    wl = workload_of(kubectl, ns, job) or {}
    return next((s for s in (wl.get("status") or {}).get("admissionChecks") or () if s["name"] == check), {})


def requests(kubectl: Kubectl, ns: str) -> dict[str, dict[str, Any]]:
    return {
        pr["metadata"]["name"]: pr for pr in kubectl.get("provisioningrequests.autoscaling.x-k8s.io", "-n", ns)["items"]
    }


def test_gpu_job_waits_for_the_autoscaler_then_runs_on_its_new_nodes(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, autoscaler: Any
) -> None:
    check = setup(objs, namespace, klass=BEST_EFFORT)
    before = {n["metadata"]["name"] for n in autoscaler.nodes()}
    submit(kubectl, gpu_job(namespace, "train", 2))

    wl = wait_for(
        "quota reserved, the check listed",
        lambda: when(
            workload_of(kubectl, namespace, "train") or {}, lambda w: cond(w, "QuotaReserved").get("status") == "True"
        ),
    )
    pr_name = f"{wl['metadata']['name']}-{check}-1"
    pr = wait_for("the ProvisioningRequest", lambda: requests(kubectl, namespace).get(pr_name), timeout=30)
    assert pr["apiVersion"] == "autoscaling.x-k8s.io/v1"
    assert pr["spec"]["provisioningClassName"] == BEST_EFFORT
    template_name = f"ppt-{pr_name}-main"
    assert pr["spec"]["podSets"] == [{"podTemplateRef": {"name": template_name}, "count": 2}]
    template = kubectl.get("podtemplate", "-n", namespace, template_name)["template"]["spec"]
    assert template["nodeSelector"] == {NODE_GROUP_LABEL: GROUP}
    assert {**PROVIDER_TAINT, "operator": "Equal"} in template["tolerations"]
    assert suspended(kubectl, namespace, "train")
    assert cond(workload_of(kubectl, namespace, "train") or {}, "Admitted").get("status") != "True"
    explain(kubectl, namespace, "train")

    # The autoscaler accepts the request and scales the node group up by two nodes, which kwok makes Ready.
    provisioned = waiting_on_autoscaler(
        autoscaler,
        "the request Provisioned",
        lambda: when(requests(kubectl, namespace)[pr_name], lambda p: cond(p, "Provisioned").get("status") == "True"),
        timeout=90,
    )
    assert cond(provisioned, "Accepted").get("status") == "True"
    assert cond(provisioned, "Provisioned")["message"] == PROVISIONED
    new_nodes = waiting_on_autoscaler(
        autoscaler,
        "two new gpu-a100 nodes, Ready",
        lambda: when(
            [n for n in autoscaler.nodes() if n["metadata"]["name"] not in before],
            lambda ns_: len(ns_) == 2 and all(cond(n, "Ready").get("status") == "True" for n in ns_),
        ),
        timeout=60,
    )
    for node in new_nodes:
        assert node["metadata"]["annotations"][NODE_GROUP_ANNOTATION] == GROUP
        assert node["metadata"]["labels"][NODE_GROUP_LABEL] == GROUP
        assert node["status"]["allocatable"][GPU] == str(GPUS_PER_NODE)

    state = wait_for(
        "the check Ready",
        lambda: when(check_state(kubectl, namespace, "train", check), lambda s: s.get("state") == "Ready"),
        timeout=30,
    )
    assert state["message"] == PROVISIONED
    assert state["podSetUpdates"] == [
        {
            "name": "main",
            "annotations": {
                "autoscaling.x-k8s.io/consume-provisioning-request": pr_name,
                "autoscaling.x-k8s.io/provisioning-class-name": BEST_EFFORT,
            },
        }
    ]
    wait_for("the Job started", lambda: not suspended(kubectl, namespace, "train"))
    names = {n["metadata"]["name"] for n in new_nodes}

    def running_on_new_nodes() -> list[dict[str, Any]] | None:
        pods = kubectl.get("pods", "-n", namespace, "-l", "job-name=train")["items"]
        ok = len(pods) == 2 and all(
            p["status"].get("phase") == "Running" and p["spec"].get("nodeName") in names for p in pods
        )
        return pods if ok else None

    pods = wait_for("both pods running on the new nodes", running_on_new_nodes, timeout=60)
    assert {p["spec"]["nodeName"] for p in pods} == names  # one node's GPUs each
    for pod in pods:
        assert pod["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] == pr_name
    out = explain(kubectl, namespace, "train")
    assert out.splitlines()[0].startswith(f"Workload {namespace}/{wl['metadata']['name']}: ADMITTED")
    assert f"  {check}: Ready: {PROVISIONED}" in out.splitlines()


def test_unsatisfiable_request_fails_is_retried_as_configured_then_rejected(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, autoscaler: Any
) -> None:
    # check-capacity never scales up; with noRetry the autoscaler marks a request it finds no room for Failed
    # at once (three nodes' worth of GPUs, the group holds two), and Kueue retries once, after 2 s, then rejects.
    # Retry and Rejected last only until the Workload is evicted (its checks then reset to Pending): the
    # Workload's events keep each step.
    retry = {"backoffLimitCount": 1, "backoffBaseSeconds": 2, "backoffMaxSeconds": 4}
    check = setup(objs, namespace, klass=CHECK_CAPACITY, parameters={"noRetry": "true"}, retry=retry)
    submit(kubectl, gpu_job(namespace, "too-big", 3))
    wl_name = wait_for("the Workload", lambda: workload_of(kubectl, namespace, "too-big"))["metadata"]["name"]

    def seen(*wanted: tuple[str, str, str]) -> list[tuple[str, str, str]] | None:
        got = events(kubectl, namespace, wl_name)
        return got if all(w in got for w in wanted) else None

    retried = (
        "Normal",
        "AdmissionCheckUpdated",
        f"Admission check {check} updated state from Pending to Retry with message: "
        f"Retrying after failure: {NOT_FOUND_NO_RETRY}",
    )
    evicted = (
        "Normal",
        "EvictedDueToAdmissionCheck",
        f'Evicted due to AdmissionCheck in Retry state: "{check}" (Retrying after failure: {NOT_FOUND_NO_RETRY})',
    )
    rejected = (
        "Normal",
        "AdmissionCheckUpdated",
        f"Admission check {check} updated state from Pending to Rejected with message: {NOT_FOUND_NO_RETRY}",
    )
    deactivated = (
        "Warning",
        "AdmissionCheckRejected",
        f'Deactivated due to AdmissionCheck in Rejected state: "{check}" ({NOT_FOUND_NO_RETRY})',
    )
    got = waiting_on_autoscaler(
        autoscaler,
        "retried once, then rejected and deactivated",
        lambda: seen(retried, rejected, deactivated),
        timeout=120,
    )
    created = [m for _, r, m in got if r == "ProvisioningRequestCreated"]
    assert created == [
        f'Created ProvisioningRequest: "{wl_name}-{check}-1"',
        f'Created ProvisioningRequest: "{wl_name}-{check}-2"',
    ], got
    assert got.index(retried) < got.index(rejected), got
    assert evicted in got, got

    wl = wait_for(
        "the Workload deactivated and evicted",
        lambda: when(
            workload_of(kubectl, namespace, "too-big") or {},
            lambda w: w["spec"].get("active") is False and cond(w, "Evicted").get("status") == "True",
        ),
    )
    # As upstream's workload controller words it (pkg/controller/core/workload_controller.go, evict.go).
    assert cond(wl, "Evicted")["reason"] == "DeactivatedDueToAdmissionCheck"
    assert cond(wl, "Evicted")["message"] == (
        f'The workload is deactivated due to AdmissionCheck in Rejected state: "{check}" ({NOT_FOUND_NO_RETRY})'
    )
    assert suspended(kubectl, namespace, "too-big")
    state = check_state(kubectl, namespace, "too-big", check)
    assert (state["state"], state["message"]) == ("Pending", "Reset to Pending after eviction. Previously: Rejected")
    # CleanupProvisioningRequestsOnEviction (on by default): the evicted Workload's requests are gone.
    wait_for("its requests deleted", lambda: requests(kubectl, namespace) == {})
    out = explain(kubectl, namespace, "too-big")
    assert "Blocked: the Workload is stopped (spec.active is false; `kubectl kueue resume workload` lifts it)" in (
        out.splitlines()
    ), out
    assert f"  {check}: Pending: Reset to Pending after eviction. Previously: Rejected" in out.splitlines(), out


def test_request_beyond_the_node_group_maximum_waits_with_the_autoscalers_message(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects, autoscaler: Any
) -> None:
    check = setup(objs, namespace, klass=BEST_EFFORT)
    before = {n["metadata"]["name"] for n in autoscaler.nodes()}
    submit(kubectl, gpu_job(namespace, "three-nodes", 3))

    state = waiting_on_autoscaler(
        autoscaler,
        "the check pending with the autoscaler's message",
        lambda: when(
            check_state(kubectl, namespace, "three-nodes", check), lambda s: s.get("message") == NOT_FOUND_LATER
        ),
        timeout=90,
    )
    assert state["state"] == "Pending"
    wl_name = (workload_of(kubectl, namespace, "three-nodes") or {})["metadata"]["name"]
    pr = requests(kubectl, namespace)[f"{wl_name}-{check}-1"]
    assert cond(pr, "Provisioned")["reason"] == "CapacityIsNotFound"
    assert cond(pr, "Failed") == {}
    assert {n["metadata"]["name"] for n in autoscaler.nodes()} - before == set()  # atomic: no partial scale-up
    assert suspended(kubectl, namespace, "three-nodes")
    out = explain(kubectl, namespace, "three-nodes")
    assert f"  {check}: Pending: {NOT_FOUND_LATER}" in out.splitlines(), out
    assert f"Blocked: admission check(s) not ready yet: {check}" in out.splitlines(), out
