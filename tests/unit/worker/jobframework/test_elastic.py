"""Elastic Jobs in the worker: the Job plan over workload slices, the pod template an admitted slice
starts, and the ungater that lifts `kueue.x-k8s.io/elastic-job` up to the slice's count.

The plan cases follow upstream v0.19.2 `pkg/controller/jobframework/reconciler.go` (the slice path of
`ensureOneWorkload`, `prepareWorkloadSlice`, `handleJobWithNoWorkload`, step 8 of
`ReconcileGenericJob`); the ungater cases follow `pkg/controller/elasticjobs/elastic_job_ungater.go`
and the scenarios of upstream's integration specs "Should cap elastic pod ungating to the granted
quota", "Should keep an additional pod gated while the admitted pod is running" and "Should ungate a
replacement after the prior Pod succeeds" (test/integration/singlecluster/controller/jobs/job).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook.api import constants as c
from webhook.config import Configuration
from webhook.worker.integrations import batchjob as j
from webhook.worker.jobframework import elastic, podset

GATE_ON = Configuration(feature_gates={"ElasticJobsViaWorkloadSlices": True}, wait_for_pods_ready=None)
NOW = datetime(2025, 1, 1, tzinfo=UTC)


def make_job(parallelism: int = 2, *, suspend: bool = False, generation: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "name",
            "namespace": "ns",
            "uid": "uid",
            "resourceVersion": "7",
            "generation": generation,
            "labels": {c.QUEUE_LABEL: "lq"},
            "annotations": {c.ELASTIC_JOB: "true"},
        },
        "spec": {
            "suspend": suspend,
            "parallelism": parallelism,
            "completions": 10,
            "template": {
                "metadata": {"labels": {"batch.kubernetes.io/job-name": "name"}},
                "spec": {"schedulingGates": [{"name": c.ELASTIC_JOB_GATE}], "containers": [{"name": "c"}]},
            },
        },
        "status": {"active": parallelism},
    }


def admit(wl: dict[str, Any], count: int, *, created: str = "2025-01-01T00:00:00Z") -> dict[str, Any]:
    wl = copy.deepcopy(wl)
    wl["metadata"].update(uid=f"uid-{wl['metadata']['name']}", creationTimestamp=created)
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": str(count)}, "count": count}
            ],
        },
        "conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
        ],
    }
    return wl


def first_slice(parallelism: int = 2) -> dict[str, Any]:
    return admit(j.build_workload(make_job(parallelism), config=GATE_ON, priority=j.Priority()), parallelism)


def plan(job: dict[str, Any], workloads: list[dict[str, Any]]) -> j.Plan:
    return j.plan(job, workloads, namespace_labels={"kubernetes.io/metadata.name": "ns"}, config=GATE_ON, now=NOW)


def test_first_slice_is_named_after_the_generation_and_starts_the_chain() -> None:
    wl = j.build_workload(make_job(generation=3), config=GATE_ON, priority=j.Priority())
    assert wl["metadata"]["name"] == j.workload_name("name", "uid", extra="3") != j.workload_name("name", "uid")
    assert wl["metadata"]["annotations"] == {c.ELASTIC_JOB: "true", c.WORKLOAD_SLICE_NAME: wl["metadata"]["name"]}
    assert wl["spec"]["podSets"][0]["count"] == 2


def test_without_the_gate_a_job_gets_one_plain_workload() -> None:
    gate_off = Configuration(feature_gates={"ElasticJobsViaWorkloadSlices": False})
    wl = j.build_workload(make_job(), config=gate_off, priority=j.Priority())
    assert wl["metadata"]["name"] == j.workload_name("name", "uid") and "annotations" not in wl["metadata"]


def test_scale_up_of_an_admitted_slice_creates_a_replacement_without_stopping_the_job() -> None:
    old = first_slice(2)
    p = plan(make_job(3, generation=2), [old])
    assert [s.name for s in p.steps] == ["create", "event"]
    new = p.steps[0].body
    assert new["metadata"]["name"] == j.workload_name("name", "uid", extra="2")
    assert new["metadata"]["annotations"] == {
        c.ELASTIC_JOB: "true",
        c.WORKLOAD_SLICE_NAME: old["metadata"]["name"],
        c.WORKLOAD_SLICE_REPLACEMENT_FOR: f"ns/{old['metadata']['name']}",
    }
    assert new["spec"]["podSets"][0]["count"] == 3


def test_a_pending_replacement_leaves_the_running_job_alone() -> None:
    old = first_slice(2)
    new = plan(make_job(3, generation=2), [old]).steps[0].body
    new["metadata"].update(uid="uid-new", creationTimestamp="2025-01-01T00:00:05Z")
    assert plan(make_job(3, generation=2), [old, new]).steps == ()


def test_scale_down_rewrites_the_admitted_slice_in_place() -> None:
    old = first_slice(4)
    p = plan(make_job(1, generation=2), [old])
    assert [s.name for s in p.steps] == ["update_workload"]
    assert p.steps[0].spec["podSets"][0]["count"] == 1


def test_a_replaced_slice_still_unfinished_is_finished_by_the_job_reconciler() -> None:
    old = first_slice(2)
    new = admit(plan(make_job(3, generation=2), [old]).steps[0].body, 3, created="2025-01-01T00:00:05Z")
    p = plan(make_job(3, generation=2), [old, new])
    assert [(s.name, s.reason) for s in p.steps] == [("finish", "WorkloadSliceReplaced")]
    assert p.steps[0].workload is old


def test_start_stamps_the_slice_name_and_overwrites_a_stale_one() -> None:
    job = make_job(2, suspend=True)
    job["spec"]["template"]["metadata"]["annotations"] = {c.WORKLOAD_SLICE_NAME: "old-chain"}
    wl = first_slice(2)
    flavors = {"on-demand": {"spec": {"nodeLabels": {"instance-type": "on-demand"}}}}
    patch = j.start_patch(job, wl, flavors, elastic=True)
    template = patch["spec"]["template"]
    assert template["metadata"]["annotations"] == {c.WORKLOAD_SLICE_NAME: wl["metadata"]["name"]}
    assert template["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
    assert (
        "annotations"
        not in j.start_patch(make_job(2, suspend=True), wl, flavors, elastic=False)["spec"]["template"]["metadata"]
    )


def test_merge_keeps_reporting_other_conflicts() -> None:
    base = podset.PodSetInfo(annotations={"a": "1", c.WORKLOAD_SLICE_NAME: "x"})
    with pytest.raises(podset.PermanentError):
        podset.merge(base, podset.PodSetInfo(annotations={"a": "2", c.WORKLOAD_SLICE_NAME: "y"}), elastic=True)


# -- the ungater -------------------------------------------------------------------------------------


def pod(
    name: str, *, gated: bool = True, phase: str = "Pending", chain: str = "chain", pod_set: str = "main"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": "1",
            "labels": {c.PODSET_LABEL: pod_set},
            "annotations": {c.WORKLOAD_SLICE_NAME: chain},
        },
        "spec": {"schedulingGates": [{"name": c.ELASTIC_JOB_GATE}] if gated else [], "containers": [{"name": "c"}]},
        "status": {"phase": phase},
    }


def active(count: int, **status: Any) -> dict[str, Any]:
    wl = {
        "metadata": {"name": "slice-2", "namespace": "ns", "annotations": {c.WORKLOAD_SLICE_NAME: "chain"}},
        "spec": {"podSets": [{"name": "main", "count": count}]},
        "status": status,
    }
    return wl


@pytest.mark.parametrize(
    ("count", "pods", "want"),
    [
        pytest.param(
            3,
            [pod("p-c"), pod("p-a"), pod("p-b"), pod("p-d")],
            ["p-a", "p-b", "p-c"],
            id="Should cap elastic pod ungating to the granted quota",
        ),
        pytest.param(
            1,
            [pod("p-a", gated=False, phase="Running"), pod("p-b")],
            [],
            id="Should keep an additional pod gated while the admitted pod is running",
        ),
        pytest.param(
            1,
            [pod("p-a", gated=False, phase="Succeeded"), pod("p-b")],
            ["p-b"],
            id="Should ungate a replacement after the prior Pod succeeds",
        ),
        pytest.param(2, [pod("p-a", chain="other"), pod("p-b")], ["p-b"], id="pods of another chain are left alone"),
        pytest.param(1, [pod("p-a", pod_set="other")], [], id="a podSet the slice does not grant"),
    ],
)
def test_pods_to_ungate(count: int, pods: list[dict[str, Any]], want: list[str]) -> None:
    got = elastic.pods_to_ungate(active(count), pods)
    assert [u.pod["metadata"]["name"] for u in got] == want
    for u in got:
        assert u.patch == {"metadata": {"resourceVersion": "1"}, "spec": {"schedulingGates": None}}


def test_ungating_carries_the_provisioning_request_metadata_and_skips_stale_pods() -> None:
    update = {
        "name": "main",
        "annotations": {"autoscaling.x-k8s.io/consume-provisioning-request": "prq-2", "other": "x"},
        "nodeSelector": {"zone": "a"},
    }
    wl = active(2, admissionChecks=[{"name": "prov", "state": "Ready", "podSetUpdates": [update]}])
    stale = pod("p-a")
    stale["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] = "prq-1"
    [u] = elastic.pods_to_ungate(wl, [stale, pod("p-b")])
    assert u.pod["metadata"]["name"] == "p-b"
    assert u.patch == {
        "metadata": {
            "resourceVersion": "1",
            "annotations": {"autoscaling.x-k8s.io/consume-provisioning-request": "prq-2"},
        },
        "spec": {"schedulingGates": None, "nodeSelector": {"zone": "a"}},
    }


def test_ungater_waits_for_admission_then_patches_the_pods() -> None:
    kube = FakeKube({f"/api/v1/namespaces/ns/pods/{p['metadata']['name']}": p for p in (pod("p-a"), pod("p-b"))})
    ungater = elastic.Ungater(kube, clock=lambda: NOW)  # type: ignore[arg-type]
    job = make_job(2)
    reserved = active(1, conditions=[{"type": "QuotaReserved", "status": "True"}])
    reserved["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"
    ungater.ungate(job, [reserved])
    assert not any(method == "PATCH" for method, _ in kube.calls)
    reserved["status"]["conditions"].append(
        {"type": "Admitted", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}
    )
    ungater.ungate(job, [reserved])
    assert [path for method, path in kube.calls if method == "PATCH"] == ["/api/v1/namespaces/ns/pods/p-a"]
    assert kube.objects["/api/v1/namespaces/ns/pods/p-a"]["spec"].get("schedulingGates") is None
