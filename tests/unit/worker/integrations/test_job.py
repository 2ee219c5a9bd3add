"""Pure parts of the Job reconciler: names, podSets, priority, start/restore patches, the plan, and
the reclaimable pods of a running Job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from webhook.api import jobs
from webhook.config import Configuration, ObjectRetentionPolicies, WorkloadRetentionPolicy
from webhook.worker.integrations import batchjob as j


def make_job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "name",
            "namespace": "ns",
            "uid": "uid",
            "resourceVersion": "7",
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
        },
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "template": {
                "metadata": {"labels": {"job-name": "name", "batch.kubernetes.io/job-name": "name", "app": "x"}},
                "spec": {
                    "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}]
                },
            },
            **spec,
        },
    }


@pytest.mark.parametrize(
    ("name", "uid", "expected"),
    [
        pytest.param("name", "uid", "job-name-ef3a1", id="upstream vector"),
        pytest.param("x" * 300, "u", "job-" + "x" * 243 + "-", id="prefix cut to 247"),
    ],
)
def test_workload_name(name: str, uid: str, expected: str) -> None:
    assert j.workload_name(name, uid).startswith(expected)
    assert len(j.workload_name(name, uid)) <= 253


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        pytest.param({}, 1, id="defaults"),
        pytest.param({"parallelism": 4, "completions": 2}, 2, id="min of parallelism and completions"),
        pytest.param({"parallelism": 3}, 3, id="completions nil"),
    ],
)
def test_pod_set_count(spec: dict[str, Any], count: int) -> None:
    assert j.pod_sets(make_job(**spec))[0]["count"] == count


def test_pod_set_template_drops_job_controller_labels_and_dedupes_env() -> None:
    ps = j.pod_sets(make_job())[0]
    assert ps["template"]["metadata"]["labels"] == {"batch.kubernetes.io/job-name": "name", "app": "x"}
    assert ps["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "2"}]


def test_build_workload() -> None:
    wl = j.build_workload(
        make_job(),
        config=Configuration(),
        priority=j.Priority(5, {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "p"}),
    )
    assert wl["metadata"]["name"] == "job-name-ef3a1"
    assert wl["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": "uid"}
    assert wl["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert wl["metadata"]["ownerReferences"][0] | {} == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "name",
        "uid": "uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert wl["spec"]["queueName"] == "lq" and wl["spec"]["priority"] == 5


@pytest.mark.parametrize(
    ("gate", "annotations", "want"),
    [
        pytest.param(True, {"kueue.x-k8s.io/podset-required-topology": "cloud.com/rack"},
                     {"required": "cloud.com/rack", "podIndexLabel": "batch.kubernetes.io/job-completion-index"},
                     id="required topology"),
        pytest.param(True, {"kueue.x-k8s.io/podset-preferred-topology": "cloud.com/block"},
                     {"preferred": "cloud.com/block", "podIndexLabel": "batch.kubernetes.io/job-completion-index"},
                     id="preferred topology"),
        pytest.param(True, {}, {"podIndexLabel": "batch.kubernetes.io/job-completion-index"},
                     id="no annotation: the index label only, as upstream"),
        pytest.param(False, {"kueue.x-k8s.io/podset-required-topology": "cloud.com/rack"}, None, id="gate off"),
    ],
)  # fmt: skip
def test_workload_carries_the_templates_topology_request(
    gate: bool, annotations: dict[str, str], want: dict[str, Any] | None
) -> None:
    """`Job.PodSets` (pkg/controller/jobs/job/job_controller.go): the core then keeps a podSet that asks for a
    topology pending instead of admitting it with no placement."""
    job = make_job()
    job["spec"]["template"]["metadata"]["annotations"] = annotations
    config = Configuration(feature_gates={"TopologyAwareScheduling": gate} if gate else _TAS_OFF)
    (ps,) = j.build_workload(job, config=config, priority=j.Priority())["spec"]["podSets"]
    assert ps.get("topologyRequest") == want


_TAS_OFF = dict.fromkeys(
    (
        "TopologyAwareScheduling", "TASProfileMixed", "TASHandleOverlappingFlavors", "TASFailedNodeReplacement",
        "TASFailedNodeReplacementFailFast", "TASReplaceNodeOnPodTermination", "TASReplaceNodeOnNodeTaints",
        "TASMultiLayerTopology", "TASRecomputeAssignmentWithinSchedulingCycle",
    ),
    False,
)  # fmt: skip


@pytest.mark.parametrize(("gate", "limit"), [(False, 253), (True, 63)])
def test_short_workload_names_gate_bounds_a_long_jobs_workload_name(gate: bool, limit: int) -> None:
    """Upstream's `maxWorkloadNameLength` applies ShortWorkloadNames to every kind, not only pods."""
    job = make_job()
    job["metadata"]["name"] = "x" * 300
    config = Configuration(feature_gates={"ShortWorkloadNames": gate})
    name = j.build_workload(job, config=config, priority=j.Priority())["metadata"]["name"]
    assert len(name) == limit and name == j.workload_name("x" * 300, "uid", short=gate)
    assert name.startswith("job-xxx") and name[-6] == "-"


def test_priority_from_label_then_template_then_global_default() -> None:
    job = make_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    assert j.resolve_priority(job, wpcs={"high": 100}, pcs={}).value == 100
    with pytest.raises(j.PriorityClassNotFound):
        j.resolve_priority(job, wpcs={}, pcs={})
    pcs = {"a": {"value": 10, "globalDefault": True}, "b": {"value": 3, "globalDefault": True}}
    assert j.resolve_priority(make_job(), wpcs={}, pcs=pcs).ref == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "b",
    }


def admitted_workload(job: dict[str, Any]) -> dict[str, Any]:
    wl = j.build_workload(job, config=Configuration(), priority=j.Priority())
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "count": 1}],
        },
        "conditions": [
            {"type": "Admitted", "status": "True"},
            {"type": "QuotaReserved", "status": "True"},
            {"type": "PodsReady", "status": "False", "reason": "WaitForStart"},
        ],
    }
    return wl


def test_start_patch_merges_flavor_node_labels_and_tolerations() -> None:
    job = make_job()
    tol = {"key": "spot", "operator": "Exists"}
    patch = j.start_patch(
        job, admitted_workload(job), {"f": {"spec": {"nodeLabels": {"pool": "a"}, "tolerations": [tol]}}}
    )
    assert patch["metadata"] == {"resourceVersion": "7"}
    assert patch["spec"]["suspend"] is False
    tpl = patch["spec"]["template"]
    assert tpl["spec"] == {"nodeSelector": {"pool": "a"}, "tolerations": [tol]}
    assert tpl["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert tpl["metadata"]["labels"]["kueue.x-k8s.io/local-queue-name"] == "lq"
    assert tpl["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"] == "cq"


def test_start_patch_conflict_is_permanent() -> None:
    job = make_job()
    job["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "b"}
    with pytest.raises(j.StartConflict, match="conflict for nodeSelector: conflict for key=pool, value1=b, value2=a"):
        j.start_patch(job, admitted_workload(job), {"f": {"spec": {"nodeLabels": {"pool": "a"}}}})


def test_restore_patch_undoes_start() -> None:
    job = make_job()
    wl = admitted_workload(job)
    running = make_job()
    running["spec"]["template"]["metadata"]["labels"].update({"kueue.x-k8s.io/podset": "main", "controller-uid": "u"})
    running["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "a"}
    patch = j.restore_patch(running, wl)
    assert patch is not None
    assert patch["spec"]["template"]["metadata"]["labels"] == {"kueue.x-k8s.io/podset": None}
    assert patch["spec"]["template"]["spec"]["nodeSelector"] == {"pool": None}
    assert j.restore_patch(make_job(), wl) is None


def ns_labels() -> dict[str, str]:
    return {"kubernetes.io/metadata.name": "ns"}


@pytest.mark.parametrize(
    ("mutate", "action"),
    [
        pytest.param(lambda job, wl: None, "start", id="suspended and admitted: start"),
        pytest.param(
            lambda job, wl: job.setdefault("status", {}).update(
                conditions=[{"type": "Complete", "status": "True", "message": "done"}]
            ),
            "finish",
            id="job complete: finish",
        ),
        pytest.param(
            lambda job, wl: (
                job["spec"].update(suspend=False),
                wl["status"]["conditions"].append({"type": "Evicted", "status": "True", "reason": "Preempted"}),
            ),
            "stop",
            id="evicted and running: stop",
        ),
        pytest.param(
            lambda job, wl: wl["status"]["conditions"].append(
                {"type": "Evicted", "status": "True", "reason": "Preempted"}
            ),
            "clear_reservation",
            id="evicted and stopped: clear reservation",
        ),
        pytest.param(
            lambda job, wl: (
                job["spec"].update(suspend=False),
                wl["status"]["conditions"].__setitem__(0, {"type": "Admitted", "status": "False"}),
            ),
            "stop",
            id="running but not admitted: stop",
        ),
    ],
)
def test_plan(mutate: Any, action: str) -> None:
    job = make_job()
    wl = admitted_workload(job)
    mutate(job, wl)
    assert j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration()).action == action


def test_finished_workload_is_reported_on_every_pass_and_its_finalizer_dropped_once() -> None:
    """As upstream's `ReconcileGenericJob`: the FinishedWorkload event on each pass (the recorder
    folds repeats), the finalizer only while the Workload still has it."""
    job = make_job()
    wl = admitted_workload(job)
    wl["status"]["conditions"].append({"type": "Finished", "status": "True"})
    p = j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration())
    assert [s.name for s in p.steps] == ["event", "remove_finalizer"]
    wl["metadata"]["finalizers"] = []
    assert [s.name for s in j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration()).steps] == ["event"]


def test_plan_creates_only_for_managed_queued_jobs() -> None:
    cfg = Configuration()
    assert j.plan(make_job(), [], namespace_labels=ns_labels(), config=cfg).action == "create"
    assert (
        j.plan(make_job(), [], namespace_labels={"kubernetes.io/metadata.name": "kube-system"}, config=cfg).action
        == "ignore"
    )
    plain = make_job()
    plain["metadata"]["labels"] = {}
    assert j.plan(plain, [], namespace_labels=ns_labels(), config=cfg).action == "ignore"
    assert j.plan(None, [admitted_workload(make_job())], namespace_labels=ns_labels(), config=cfg).action == "finalize"


@pytest.mark.parametrize(
    ("status", "spec", "ready"),
    [
        pytest.param({}, {}, False, id="no pods yet"),
        pytest.param({"ready": 1}, {}, True, id="the one pod is ready"),
        pytest.param(
            {"ready": 1, "succeeded": 1}, {"parallelism": 3, "completions": 2}, True, id="min(parallelism, completions)"
        ),
        pytest.param(
            {"ready": 1, "uncountedTerminatedPods": {"succeeded": ["u1"]}}, {"parallelism": 3}, False, id="2 of 3"
        ),
        pytest.param(
            {"ready": 2, "uncountedTerminatedPods": {"succeeded": ["u1"]}},
            {"parallelism": 3},
            True,
            id="uncounted succeeded count",
        ),
        pytest.param({"active": 3}, {"parallelism": 3}, False, id="active is not ready"),
    ],
)
def test_job_pods_ready(status: dict[str, Any], spec: dict[str, Any], ready: bool) -> None:
    job = make_job(**spec)
    job["status"] = status
    assert j.job_pods_ready(job) is ready


def test_plan_writes_pods_ready_before_anything_else_the_job_needs() -> None:
    job = make_job(suspend=False)
    job["status"] = {"ready": 1}
    wl = admitted_workload(job)
    p = j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration())
    assert (p.action, p.reason, p.message) == (
        "pods_ready",
        "Started",
        "All pods reached readiness and the workload is running",
    )
    wl["status"]["conditions"][2] = {"type": "PodsReady", "status": "True", "reason": "Started"}
    assert j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration()).action == "ignore"
    job["status"] = {"ready": 0}
    p = j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration())
    assert (p.action, p.reason) == ("pods_ready", "WaitForRecovery")


def test_plan_marks_a_new_pending_workload_waiting_to_start() -> None:
    job = make_job()
    wl = j.build_workload(job, config=Configuration(), priority=j.Priority())
    p = j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration())
    assert (p.action, p.reason, p.message) == ("pods_ready", "WaitForStart", "Not all pods are ready or succeeded")


def test_no_pods_ready_condition_without_wait_for_pods_ready() -> None:
    job = make_job()
    wl = j.build_workload(job, config=Configuration(), priority=j.Priority())
    assert (
        j.plan(job, [wl], namespace_labels=ns_labels(), config=Configuration(wait_for_pods_ready=None)).action
        == "ignore"
    )


def test_admission_gated_by_follows_the_job() -> None:
    """`UpdateAdmissionGatedBy`: lifting a gate on the Job lifts it on its Workload."""
    gated = make_job()
    gated["metadata"]["annotations"] = {"kueue.x-k8s.io/admission-gated-by": "example.com/gate"}
    wl = j.build_workload(gated, config=Configuration(), priority=j.Priority())
    assert wl["metadata"]["annotations"] == {"kueue.x-k8s.io/admission-gated-by": "example.com/gate"}
    p = j.plan(make_job(), [wl], namespace_labels=ns_labels(), config=Configuration(wait_for_pods_ready=None))
    assert [(s.name, s.message) for s in p.steps] == [
        ("update_gated_by", ""),
        ("event", 'Updated workload AdmissionGatedBy to ""'),
    ]
    assert p.steps[0].value is None


def test_deactivated_workload_is_looked_at_again_when_its_retention_period_ends() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    job = make_job(suspend=False)
    wl = admitted_workload(job)
    wl["spec"]["active"] = False
    wl["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "DeactivatedDueToRequeuingLimitExceeded",
            "message": "m",
            "lastTransitionTime": (now - timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )
    config = Configuration(
        object_retention_policies=ObjectRetentionPolicies(WorkloadRetentionPolicy(after_deactivated_by_kueue_s=120))
    )
    p = j.plan(job, [wl], namespace_labels=ns_labels(), config=config, now=now)
    assert [s.name for s in p.steps] == ["stop", "clear_reservation"]
    assert p.requeue_after == 60


# -- `status.reclaimablePods` of a running Job's Workload (upstream `Job.ReclaimablePods`) ----------


def running(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    job = make_job(**spec)
    job["spec"]["suspend"] = False
    job["status"] = status
    return job


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        pytest.param({"parallelism": 4, "completions": 10}, {"succeeded": 5}, [], id="remaining work fills every slot"),
        pytest.param(
            {"parallelism": 4, "completions": 10},
            {"succeeded": 7},
            [{"name": "main", "count": 1}],
            id="3 left for 4 slots",
        ),
        pytest.param(
            {"parallelism": 4, "completions": 10}, {"succeeded": 10}, [{"name": "main", "count": 4}], id="all done"
        ),
        pytest.param(
            {"parallelism": 4},
            {"succeeded": 1},
            [{"name": "main", "count": 1}],
            id="completions defaults to parallelism",
        ),
        pytest.param({"parallelism": 1}, {"succeeded": 1}, [], id="single pod has nothing to reclaim"),
        pytest.param({"parallelism": 3, "completions": 3}, {}, [], id="no terminal pod"),
        pytest.param(
            {"parallelism": 3, "completions": 4, "completionMode": "Indexed"},
            {"succeeded": 0, "completedIndexes": "0-1", "failedIndexes": "1,3,7"},
            [{"name": "main", "count": 2}],
            id="indexed: 0,1,3 terminal (7 >= completions), 1 left for 3 slots",
        ),
        pytest.param(
            {"parallelism": 3, "completions": 4, "completionMode": "Indexed"},
            {"succeeded": 4, "completedIndexes": "x,5-3"},
            [],
            id="indexed: malformed intervals ignored, succeeded not used",
        ),
    ],
)
def test_reclaimable_pods(spec: dict[str, Any], status: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    job = running(spec, status)
    wl = admitted_workload(job)
    wl["spec"]["podSets"][0]["count"] = jobs.pods_count(job)
    assert j.reclaimable_pods(job, wl) == expected


def test_reclaimable_count_is_capped_at_the_pod_set_count() -> None:
    job = running({"parallelism": 4, "completions": 4}, {"succeeded": 4})
    wl = admitted_workload(job)
    wl["spec"]["podSets"][0]["count"] = 2  # e.g. after an elastic scale-down
    assert j.reclaimable_pods(job, wl) == [{"name": "main", "count": 2}]


DEFAULTS = Configuration()


def plan_for(job: dict[str, Any], wl: dict[str, Any], config: Configuration = DEFAULTS) -> j.Plan:
    return j.plan(job, [wl], namespace_labels={}, config=config)


def test_plan_updates_reclaimable_pods_of_a_running_job_until_they_match() -> None:
    job = running({"parallelism": 3, "completions": 3}, {"succeeded": 2, "active": 1})
    wl = admitted_workload(job)
    wl["spec"]["podSets"][0]["count"] = 3
    p = plan_for(job, wl)
    assert (p.action, p.steps[0].reclaimable_pods) == ("update_reclaimable", [{"name": "main", "count": 2}])
    wl["status"]["reclaimablePods"] = [{"name": "main", "count": 2}]
    assert plan_for(job, wl).action == "ignore"
    off = Configuration(feature_gates={"ReclaimablePods": False})
    del wl["status"]["reclaimablePods"]
    assert plan_for(job, wl, off).action == "ignore"


def test_finished_job_is_finished_rather_than_reclaimed() -> None:
    job = running(
        {"parallelism": 3, "completions": 3}, {"succeeded": 3, "conditions": [{"type": "Complete", "status": "True"}]}
    )
    wl = admitted_workload(job)
    assert plan_for(job, wl).action == "finish"
