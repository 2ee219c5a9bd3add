"""KubeRay's integrations (RayCluster, RayJob, RayService): upstream's controller tests translated.

From upstream v0.19.2, keeping the case names: `TestBuildPodSets`, `TestRestorePodSetsInfo` and
`TestUpdateRayClusterSpecToRunWithPodSetsInfo` of `pkg/controller/jobs/raycluster/common_test.go`;
`TestPodSets` of `raycluster_controller_test.go`, `rayjob_controller_test.go` and
`rayservice_controller_test.go` (not their elastic `UpdatePodSets` cases: see
webhook.worker.integrations.ray); `TestNodeSelectors`, `TestRestorePodSetsInfo` and
`Test_RayJobFinished` of `rayjob_controller_test.go`; `TestIsSuspended`, `TestIsActive` and
`TestPodsReady` of `rayservice_controller_test.go`; `TestReconciler` of `raycluster_controller_test.go`
(for each kind) with one reconcile against a fake API (job_world.py). Patches are applied as the API
server applies a JSON merge patch, and the object compared.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from tests.builders import merged, pruned
from tests.unit.worker.integrations.job_world import Outcome, admit, evict, one_reconcile
from webhook.api import ray
from webhook.config import Configuration, Integrations
from webhook.worker.integrations import ray as ri
from webhook.worker.jobframework.interface import StartConflict

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
SUBMITTER_RESOURCES = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}}
AUTOSCALER_RESOURCES = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}}


def group(
    name: str, *, replicas: int | None = None, hosts: int | None = None, container: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "groupName": name,
        "template": {"spec": {"containers": [{"name": container or f"{name}_c"}]}},
    }
    if replicas is not None:
        out["replicas"] = replicas
    if hosts is not None:
        out["numOfHosts"] = hosts
    return out


def cluster_spec(*groups: dict[str, Any], head: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "headGroupSpec": {"template": head or {"spec": {"containers": [{"name": "head_c"}]}}},
        "workerGroupSpecs": list(groups),
        **extra,
    }


def obj_of(
    kind: ray.Kind, spec: dict[str, Any], *, annotations: dict[str, str] | None = None, **job: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "rc", "namespace": "ns", "resourceVersion": "7"}
    if annotations:
        meta["annotations"] = annotations
    if kind is ray.RAYCLUSTER:
        body = spec
    elif kind is ray.RAYJOB:
        body = {"rayClusterSpec": spec, "shutdownAfterJobFinishes": True, "suspend": True, **job}
    else:
        body = {"rayClusterConfig": spec}
    return {"apiVersion": "ray.io/v1", "kind": kind.name, "metadata": meta, "spec": body}


def ps(name: str, count: int, template: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, "count": count, "template": copy.deepcopy(dict(template))}


# --- TestBuildPodSets (common_test.go) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "annotations", "want"),
    [
        pytest.param(
            cluster_spec(group("group1", replicas=2)),
            None,
            [
                ps("head", 1, {"spec": {"containers": [{"name": "head_c"}]}}),
                ps("group1", 2, {"spec": {"containers": [{"name": "group1_c"}]}}),
            ],
            id="basic spec with head and single worker group",
        ),
        pytest.param(
            cluster_spec(group("group1", replicas=1), group("group2", replicas=3)),
            None,
            [
                ps("head", 1, {"spec": {"containers": [{"name": "head_c"}]}}),
                ps("group1", 1, {"spec": {"containers": [{"name": "group1_c"}]}}),
                ps("group2", 3, {"spec": {"containers": [{"name": "group2_c"}]}}),
            ],
            id="spec with multiple worker groups",
        ),
        pytest.param(
            cluster_spec(group("group1")),
            None,
            [
                ps("head", 1, {"spec": {"containers": [{"name": "head_c"}]}}),
                ps("group1", 1, {"spec": {"containers": [{"name": "group1_c"}]}}),
            ],
            id="spec with worker group without replicas specified",
        ),
        pytest.param(
            cluster_spec(group("group1", replicas=2, hosts=3)),
            None,
            [
                ps("head", 1, {"spec": {"containers": [{"name": "head_c"}]}}),
                ps("group1", 6, {"spec": {"containers": [{"name": "group1_c"}]}}),
            ],
            id="spec with NumOfHosts > 1",
        ),
        pytest.param(
            cluster_spec(
                group("group1", replicas=1),
                head={
                    "spec": {
                        "containers": [{"name": "head_c", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}]
                    }
                },
                gcsFaultToleranceOptions={"redisAddress": "redis:6379"},
            ),
            None,
            [
                ps(
                    "head",
                    1,
                    {
                        "spec": {
                            "containers": [
                                {"name": "head_c", "resources": {"requests": {"cpu": "200m", "memory": "1Gi"}}}
                            ]
                        }
                    },
                ),
                ps("group1", 1, {"spec": {"containers": [{"name": "group1_c"}]}}),
            ],
            id="spec with gcs fault tolerance",
        ),
        pytest.param(
            cluster_spec(group("group1", replicas=1)),
            {"ray.io/ft-enabled": "True"},
            [
                ps(
                    "head",
                    1,
                    {
                        "spec": {
                            "containers": [
                                {"name": "head_c", "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}
                            ]
                        }
                    },
                ),
                ps("group1", 1, {"spec": {"containers": [{"name": "group1_c"}]}}),
            ],
            id="spec with gcs fault tolerance annotation",
        ),
        pytest.param(
            cluster_spec(group("group1", replicas=1), enableInTreeAutoscaling=True),
            None,
            [
                ps(
                    "head",
                    1,
                    {
                        "spec": {
                            "containers": [
                                {"name": "head_c"},
                                {"name": "autoscaler", "resources": AUTOSCALER_RESOURCES},
                            ]
                        }
                    },
                ),
                ps("group1", 1, {"spec": {"containers": [{"name": "group1_c"}]}}),
            ],
            id="autoscaler sidecar added to head podSet with default resources when in-tree autoscaling is enabled",
        ),
        pytest.param(
            cluster_spec(
                group("group1", replicas=1),
                enableInTreeAutoscaling=True,
                autoscalerOptions={"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
            ),
            None,
            [
                ps(
                    "head",
                    1,
                    {
                        "spec": {
                            "containers": [
                                {"name": "head_c"},
                                {"name": "autoscaler", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
                            ]
                        }
                    },
                ),
                ps("group1", 1, {"spec": {"containers": [{"name": "group1_c"}]}}),
            ],
            id="autoscaler sidecar uses AutoscalerOptions.Resources override when set",
        ),
    ],
)
def test_build_pod_sets(spec: dict[str, Any], annotations: dict[str, str] | None, want: list[dict[str, Any]]) -> None:
    for kind in ray.KINDS.values():
        assert ri.pod_sets(obj_of(kind, copy.deepcopy(spec), annotations=annotations), kind) == want


def test_gcs_fault_tolerance_and_missing_head_container() -> None:
    obj = obj_of(ray.RAYCLUSTER, cluster_spec(head={"spec": {}}, gcsFaultToleranceOptions={}))
    with pytest.raises(
        ValueError,
        match=r"^cannot account for Redis cleanup resources: head pod template must include the Ray container$",
    ):
        ri.pod_sets(obj, ray.RAYCLUSTER)


# --- TestPodSets (controllers) ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ray.KINDS.values()), ids=lambda k_: k_.name)
@pytest.mark.parametrize(
    ("annotation", "tas", "want_request"),
    [
        pytest.param(
            {REQUIRED: "cloud.com/block"}, True, {"required": "cloud.com/block"}, id="with required topology annotation"
        ),
        pytest.param(
            {PREFERRED: "cloud.com/block"},
            True,
            {"preferred": "cloud.com/block"},
            id="with preferred topology annotation",
        ),
        pytest.param(
            {REQUIRED: "cloud.com/block"},
            False,
            None,
            id="without required and preferred topology annotation if TAS is disabled",
        ),
        pytest.param({}, True, None, id="no annotations"),
    ],
)
def test_pod_sets_topology(kind: ray.Kind, annotation: dict[str, str], tas: bool, want_request: Any) -> None:
    head = (
        {"metadata": {"annotations": annotation}, "spec": {"containers": [{"name": "head_c"}]}} if annotation else None
    )
    worker = group("group1", replicas=2)
    if annotation:
        worker["template"]["metadata"] = {"annotations": dict(annotation)}
    got = ri.pod_sets(obj_of(kind, cluster_spec(worker, head=head)), kind, tas=tas)
    assert [p.get("topologyRequest") for p in got] == [want_request, want_request]


def _rayjob(mode: str, **job: Any) -> dict[str, Any]:
    return obj_of(
        ray.RAYJOB,
        cluster_spec(
            group("group1"),
            group("group2", replicas=3),
            head={"spec": {"containers": [{"name": "head_c", "image": "ray:2"}]}},
        ),
        submissionMode=mode,
        **job,
    )


def test_rayjob_pod_sets_with_default_job_submitter() -> None:
    got = ri.pod_sets(_rayjob("K8sJobMode"), ray.RAYJOB)
    assert [(p["name"], p["count"]) for p in got] == [("head", 1), ("group1", 1), ("group2", 3), ("submitter", 1)]
    assert got[-1]["template"] == {
        "spec": {
            "containers": [{"name": "ray-job-submitter", "image": "ray:2", "resources": SUBMITTER_RESOURCES}],
            "restartPolicy": "Never",
        }
    }


def test_rayjob_pod_sets_with_submitter_job_pod_template_override() -> None:
    own = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "ray-job-submitter", "resources": {"requests": {"cpu": "50m", "memory": "100Mi"}}}],
        }
    }
    got = ri.pod_sets(_rayjob("K8sJobMode", submitterPodTemplate=own), ray.RAYJOB)
    assert got[-1] == ps("submitter", 1, own)


def test_rayjob_pod_sets_with_sidecar_submission_mode_accounts_for_the_injected_submitter_on_the_head_pod_set() -> None:
    got = ri.pod_sets(_rayjob("SidecarMode"), ray.RAYJOB)
    assert [(p["name"], p["count"]) for p in got] == [("head", 1), ("group1", 1), ("group2", 3)]
    assert got[0]["template"]["spec"]["containers"] == [
        {"name": "head_c", "image": "ray:2"},
        {"name": "ray-job-submitter", "resources": SUBMITTER_RESOURCES},
    ]


def test_rayjob_submitter_topology_annotation_is_its_own() -> None:
    """ "with submitter topology annotation specified"."""
    own = {"metadata": {"annotations": {REQUIRED: "cloud.com/rack"}}, "spec": {"containers": [{"name": "s"}]}}
    got = ri.pod_sets(_rayjob("K8sJobMode", submitterPodTemplate=own), ray.RAYJOB, tas=True)
    assert [p.get("topologyRequest") for p in got] == [None, None, None, {"required": "cloud.com/rack"}]


# --- RunWithPodSetsInfo / RestorePodSetsInfo ------------------------------------------------------------


def admitted(
    *names_counts: tuple[str, int], flavor_labels: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An admitted Workload of these podSets on flavor `f`, and the flavors map."""
    wl = {
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": n, "count": c, "template": {"spec": {}}} for n, c in names_counts],
        },
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": n, "count": c, "flavors": {"cpu": "f"}} for n, c in names_counts],
            }
        },
    }
    return wl, {"f": {"spec": {"nodeLabels": dict(flavor_labels or {"instance-type": "on-demand"})}}}


@pytest.mark.parametrize("kind", list(ray.KINDS.values()), ids=lambda k_: k_.name)
def test_run_then_restore_round_trip(kind: ray.Kind) -> None:
    """`TestUpdateRayClusterSpecToRunWithPodSetsInfo` "update multiple worker groups", then
    `TestRestorePodSetsInfo` "restore with different node selector" back to the Workload's."""
    obj = obj_of(kind, cluster_spec(group("g1", replicas=1), group("g2", replicas=2)))
    wl, flavors = admitted(("head", 1), ("g1", 1), ("g2", 2))
    running = merged(obj, ri.start_patch(obj, kind, wl, flavors))
    assert not ray.is_suspended(running, kind)
    spec = ray.cluster_spec(running, kind) or {}
    templates = [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec["workerGroupSpecs"]]
    assert [t["spec"].get("nodeSelector") for t in templates] == [{"instance-type": "on-demand"}] * 3
    assert [t["metadata"]["labels"]["kueue.x-k8s.io/podset"] for t in templates] == ["head", "g1", "g2"]
    wl["spec"]["podSets"] = ri.pod_sets(obj, kind)
    stopped = merged(running, ri.RayObject(running, kind).stop_patch(wl))
    assert ray.is_suspended(stopped, kind)
    want = copy.deepcopy(obj)
    if kind is not ray.RAYJOB:
        (ray.cluster_spec(want, kind) or {})["suspend"] = True  # type: ignore[index]
    assert pruned(stopped["spec"]) == want["spec"]
    assert ri.restore_patch(stopped, kind, wl) is None  # "no changes when no restoration needed"


def test_invalid_run_info() -> None:
    """`TestNodeSelectors` "invalid runInfo": another number of podSets than the object has."""
    obj = obj_of(ray.RAYJOB, cluster_spec(group("g1")))
    wl, flavors = admitted(("head", 1))
    with pytest.raises(StartConflict, match=r"^invalid podset infos: expecting 2 podset, got 1$"):
        ri.start_patch(obj, ray.RAYJOB, wl, flavors)


def test_k8s_job_mode_with_nil_submitter_pod_template_persists_admission_constraints() -> None:
    obj = _rayjob("K8sJobMode")
    wl, flavors = admitted(("head", 1), ("group1", 1), ("group2", 3), ("submitter", 1))
    running = merged(obj, ri.start_patch(obj, ray.RAYJOB, wl, flavors))
    sub = running["spec"]["submitterPodTemplate"]
    assert sub["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
    assert sub["spec"]["containers"][0]["name"] == "ray-job-submitter"
    assert sub["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "submitter"


@pytest.mark.parametrize(
    ("count", "want_change"),
    [
        pytest.param(1, False, id="fewer podSetsInfo than expected is a no-op"),
        pytest.param(5, False, id="more podSetsInfo than expected is a no-op"),
        pytest.param(4, True, id="K8sJobMode with matching length restores pod sets including the submitter"),
        pytest.param(3, False, id="K8sJobMode with a missing submitter pod set is a no-op"),
    ],
)
def test_rayjob_restore_pod_sets_info(count: int, want_change: bool) -> None:
    own = {"spec": {"nodeSelector": {"x": "y"}, "containers": [{"name": "s"}]}}
    obj = _rayjob("K8sJobMode", submitterPodTemplate=own)
    wl = {"spec": {"podSets": [{"name": f"p{i}", "template": {"spec": {}}} for i in range(count)]}}
    patch = ri.restore_patch(obj, ray.RAYJOB, wl)
    assert (patch is not None) is want_change
    if patch is not None:
        assert "nodeSelector" not in merged(obj, patch)["spec"]["submitterPodTemplate"]["spec"]


# --- status predicates ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "want"),
    [
        pytest.param(
            {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "message": "done"},
            ("Succeeded", "done"),
            id="succeeded",
        ),
        pytest.param(
            {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "message": "oops"}, ("Failed", "oops"), id="failed"
        ),
        pytest.param(
            {"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"}, ("Failed", ""), id="complete but not succeeded"
        ),
        pytest.param({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, None, id="running"),
        pytest.param({}, None, id="new"),
    ],
)
def test_rayjob_finished(status: dict[str, Any], want: Any) -> None:
    obj = {**_rayjob("K8sJobMode"), "status": status}
    got = ri.finished(obj, ray.RAYJOB)
    assert (None if got is None else (str(got[0]), got[1])) == want


@pytest.mark.parametrize(
    ("deployment", "want"),
    [("", False), ("Suspended", False), ("Initializing", True), ("Running", True), ("Suspending", True)],
)
def test_rayjob_is_active(deployment: str, want: bool) -> None:
    assert ri.is_active({"status": {"jobDeploymentStatus": deployment}}, ray.RAYJOB) is want


def test_a_raycluster_is_never_finished_and_active_when_ready() -> None:
    obj = obj_of(ray.RAYCLUSTER, cluster_spec(), **{})
    for state in ("ready", "failed", "suspended"):
        got = {**obj, "status": {"state": state}}
        assert ri.finished(got, ray.RAYCLUSTER) is None
        assert ri.is_active(got, ray.RAYCLUSTER) is ri.pods_ready(got, ray.RAYCLUSTER) is (state == "ready")


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        pytest.param([{"type": "Ready", "status": "True"}], True, id="RayServiceReady condition is true"),
        pytest.param([{"type": "Ready", "status": "False"}], False, id="RayServiceReady condition is false"),
        pytest.param([], False, id="no conditions"),
    ],
)
def test_rayservice_is_active_and_pods_ready(conditions: list[dict[str, str]], want: bool) -> None:
    obj = {**obj_of(ray.RAYSERVICE, cluster_spec()), "status": {"conditions": conditions}}
    assert ri.is_active(obj, ray.RAYSERVICE) is ri.pods_ready(obj, ray.RAYSERVICE) is want
    assert ri.finished(obj, ray.RAYSERVICE) is None


@pytest.mark.parametrize(
    ("suspend", "want"),
    [(False, False), (True, True), (None, False)],
    ids=["not suspended", "suspended", "suspend is nil"],
)
def test_rayservice_is_suspended(suspend: bool | None, want: bool) -> None:
    spec = cluster_spec() if suspend is None else cluster_spec(suspend=suspend)
    assert ray.is_suspended(obj_of(ray.RAYSERVICE, spec), ray.RAYSERVICE) is want


def test_pod_label_selector_names_the_cluster() -> None:
    assert ri.pod_label_selector(obj_of(ray.RAYCLUSTER, cluster_spec()), ray.RAYCLUSTER) == "ray.io/cluster=rc"
    job = {**_rayjob("K8sJobMode"), "status": {"rayClusterName": "rc-abc"}}
    assert ri.pod_label_selector(job, ray.RAYJOB) == "ray.io/cluster=rc-abc"
    assert ri.pod_label_selector(_rayjob("K8sJobMode"), ray.RAYJOB) == ""


# --- TestReconciler (raycluster_controller_test.go), one reconcile against a fake API --------------------

NO_TAS = Configuration(wait_for_pods_ready=None, feature_gates={"TopologyAwareScheduling": False})
FLAVOR = {"unit-test-flavor": {"nodeLabels": {"kubernetes.io/arch": "arm64"}}}
QUEUE = "kueue.x-k8s.io/queue-name"


def _queued(kind: ray.Kind, *, suspend: bool = True, **job: Any) -> dict[str, Any]:
    """`MakeCluster("job", "ns").Queue("foo")` alike: a head and `workers-group-0` of one replica."""
    spec = cluster_spec(
        group("workers-group-0", replicas=1, container="worker-container"),
        head={"spec": {"containers": [{"name": "head-container"}]}},
    )
    obj = obj_of(kind, spec, **job)
    obj["metadata"] |= {"name": "job", "uid": "uid-1", "labels": {QUEUE: "foo"}}
    if kind is ray.RAYJOB:
        obj["spec"]["suspend"] = suspend
    else:
        (ray.cluster_spec(obj, kind) or {})["suspend"] = suspend  # type: ignore[index]
    return obj


def _workload(kind: ray.Kind, obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "test",
            "namespace": "ns",
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": kind.name, "name": "job", "uid": "uid-1", "controller": True}
            ],
        },
        "spec": {"queueName": "foo", "priority": 0, "podSets": ri.pod_sets(obj, kind)},
    }


def _reconcile(
    kind: ray.Kind, obj: dict[str, Any], *workloads: dict[str, Any], config: Configuration = NO_TAS
) -> Outcome:
    return one_reconcile(
        kind.framework, ri.RECONCILERS[kind.name], obj, workloads=workloads, flavors=FLAVOR, config=config
    )


def _templates(obj: Mapping[str, Any] | None, kind: ray.Kind) -> list[dict[str, Any]]:
    spec = ray.cluster_spec(obj or {}, kind) or {}
    return [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec["workerGroupSpecs"]]


@pytest.mark.parametrize("kind", list(ray.KINDS.values()), ids=lambda k_: k_.name)
def test_when_workload_is_admitted_cluster_is_unsuspended(kind: ray.Kind) -> None:
    obj = _queued(kind)
    out = _reconcile(kind, obj, admit(_workload(kind, obj), flavor="unit-test-flavor"))
    assert out.error is None
    assert not ray.is_suspended(out.job or {}, kind)
    templates = _templates(out.job, kind)
    assert [t["spec"].get("nodeSelector") for t in templates] == [{"kubernetes.io/arch": "arm64"}] * 2
    assert [t["metadata"]["labels"]["kueue.x-k8s.io/podset"] for t in templates] == ["head", "workers-group-0"]
    assert [(e[1], e[2]) for e in out.events] == [("Normal", "Started")]


@pytest.mark.parametrize("kind", list(ray.KINDS.values()), ids=lambda k_: k_.name)
def test_when_workload_is_admitted_but_evicted_suspend_it_and_restore_node_selector(kind: ray.Kind) -> None:
    queued = _queued(kind)
    wl = admit(_workload(kind, queued), flavor="unit-test-flavor")
    evict(wl)
    running = merged(
        queued, ri.start_patch(queued, kind, wl, {"unit-test-flavor": {"spec": FLAVOR["unit-test-flavor"]}})
    )
    out = _reconcile(kind, running, wl)
    assert ray.is_suspended(out.job or {}, kind)
    assert [t["spec"].get("nodeSelector") for t in _templates(out.job, kind)] == [None, None]
    assert len(out.job_patches) == 1  # suspended and restored in one patch


def test_raycluster_with_num_of_hosts_above_one_gets_a_workload_of_replicas_times_hosts() -> None:
    obj = _queued(ray.RAYCLUSTER)
    (ray.cluster_spec(obj, ray.RAYCLUSTER) or {})["workerGroupSpecs"][0] |= {"replicas": 2, "numOfHosts": 3}  # type: ignore[index]
    out = _reconcile(ray.RAYCLUSTER, obj)
    assert [[(p["name"], p["count"]) for p in w["spec"]["podSets"]] for w in out.workloads] == [
        [("head", 1), ("workers-group-0", 6)]
    ]
    assert out.workloads[0]["metadata"]["name"] == ri.workload_name(ray.RAYCLUSTER, "job", "uid-1")


def test_a_rayjob_on_an_existing_cluster_is_skipped() -> None:
    obj = _queued(ray.RAYJOB, clusterSelector={"ray.io/cluster": "shared"})
    out = _reconcile(ray.RAYJOB, obj)
    assert out.workloads == [] and out.job_patches == [] and out.error is None


def test_the_raycluster_kuberay_makes_for_a_rayjob_is_the_rayjobs() -> None:
    obj = _queued(ray.RAYCLUSTER, suspend=False)
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "uid": "u", "controller": True}
    ]
    config = Configuration(
        wait_for_pods_ready=None, integrations=Integrations(frameworks=("ray.io/rayjob", "ray.io/raycluster"))
    )
    out = _reconcile(ray.RAYCLUSTER, obj, config=config)
    assert out.workloads == [] and out.job_patches == []


def test_a_k8s_job_mode_rayjob_gets_a_workload_with_its_submitter() -> None:
    obj = _queued(ray.RAYJOB, submissionMode="K8sJobMode")
    out = _reconcile(ray.RAYJOB, obj)
    assert [[(p["name"], p["count"]) for p in w["spec"]["podSets"]] for w in out.workloads] == [
        [("head", 1), ("workers-group-0", 1), ("submitter", 1)]
    ]
