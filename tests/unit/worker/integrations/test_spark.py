"""The SparkApplication integration: upstream's controller and pod-set tests translated.

From upstream v0.19.2, keeping the case names: `TestPodSets`, `TestRunWithPodsetsInfo`,
`TestRestorePodSetsInfo` and `TestReconciler` of `pkg/controller/jobs/sparkapplication/
sparkapplication_controller_test.go` (the last with one reconcile against a fake API, job_world.py),
and `TestAddVolumes` of `sparkapplication_podset_test.go` (its `TestAddVolumeMount` case of a pod that
is neither driver nor executor cannot arise here: the roles are the two podSets). Patches are applied
as the API server applies a JSON merge patch, and the object compared without empty maps (upstream's
`cmpopts.EquateEmpty`).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import make_spark_application, merged, pruned
from tests.unit.worker.integrations.job_world import Outcome, admit, evict, one_reconcile
from webhook.api import integrations, spark
from webhook.config import Configuration, WaitForPodsReady
from webhook.worker.integrations import spark as si
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.interface import StartConflict

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
TOLERATION = {"key": "t1k", "operator": "Equal", "value": "t1v", "effect": "NoExecute"}
TOLERATION2 = {"key": "t2k", "operator": "Exists", "effect": "NoSchedule"}
GATE = {"name": "test-scheduling-gate-1"}
GATE2 = {"name": "test-scheduling-gate-2"}
REQUESTS = {"requests": {"cpu": "100m", "memory": "512Mi"}}


def make(name: str = "test-sparkapp", **spec: Any) -> dict[str, Any]:
    """`MakeSparkApplication(name, "ns")`, `spec` laid over its spec (`driver` / `executor` merged)."""
    obj = make_spark_application(name, "ns")
    obj["metadata"]["resourceVersion"] = "7"
    for key, value in spec.items():
        obj["spec"][key] = {**obj["spec"][key], **value} if key in ("driver", "executor") else value
    return obj


def pod_spec(container: str, **extra: Any) -> dict[str, Any]:
    """A podSet's pod spec as `mutateSparkPod` builds it from the wrapper's defaults."""
    return {
        "containers": [{"name": container, "resources": copy.deepcopy(REQUESTS)}],
        "initContainers": [],
        "nodeSelector": {},
        "tolerations": [],
        **extra,
    }


# --- TestPodSets ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "tas", "want"),
    [
        pytest.param(
            make(
                driver={"nodeSelector": {"test": "test"}, "tolerations": [TOLERATION]},
                executor={"nodeSelector": {"test": "test"}, "tolerations": [TOLERATION], "instances": 3},
            ),
            False,
            [
                {
                    "name": "driver",
                    "count": 1,
                    "template": {
                        "spec": pod_spec(
                            spark.DRIVER_CONTAINER, nodeSelector={"test": "test"}, tolerations=[TOLERATION]
                        )
                    },
                },
                {
                    "name": "executor",
                    "count": 3,
                    "template": {
                        "spec": pod_spec(
                            spark.EXECUTOR_CONTAINER, nodeSelector={"test": "test"}, tolerations=[TOLERATION]
                        )
                    },
                },
            ],
            id="base",
        ),
        pytest.param(
            make(
                driver={"annotations": {REQUIRED: "cloud.com/block"}},
                executor={"annotations": {REQUIRED: "cloud.com/block"}},
            ),
            True,
            [
                {
                    "name": role,
                    "count": 1,
                    "template": {
                        "metadata": {"annotations": {REQUIRED: "cloud.com/block"}},
                        "spec": pod_spec(container),
                    },
                    "topologyRequest": {"required": "cloud.com/block"},
                }
                for role, container in (("driver", spark.DRIVER_CONTAINER), ("executor", spark.EXECUTOR_CONTAINER))
            ],
            id="with TopologyAwareScheduling",
        ),
        pytest.param(
            make(
                driver={"annotations": {REQUIRED: "cloud.com/block"}},
                executor={"annotations": {REQUIRED: "cloud.com/block"}},
            ),
            False,
            [
                {
                    "name": role,
                    "count": 1,
                    "template": {
                        "metadata": {"annotations": {REQUIRED: "cloud.com/block"}},
                        "spec": pod_spec(container),
                    },
                }
                for role, container in (("driver", spark.DRIVER_CONTAINER), ("executor", spark.EXECUTOR_CONTAINER))
            ],
            id="with TopologyAwareScheduling annotation but TopologyAwareScheduling feature gate disabled",
        ),
    ],
)
def test_pod_sets(obj: dict[str, Any], tas: bool, want: list[dict[str, Any]]) -> None:
    assert si.pod_sets(obj, tas=tas) == want


def test_pod_sets_follow_the_spark_pod_defaulter() -> None:
    """Ours: what else `mutateSparkPod` reads of a role, in Java's memory units, and what it ignores."""
    obj = make(
        volumes=[{"name": "data", "emptyDir": {}}, {"name": "unused", "emptyDir": {}}],
        driver={
            "memory": "2g",
            "memoryLimit": "3g",
            "coreLimit": "1",
            "gpu": {"name": "nvidia.com/gpu", "quantity": 2},
            "priorityClassName": "high",
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            "initContainers": [{"name": "init", "image": "busybox"}],
            "sidecars": [{"name": "side", "image": "busybox"}],
            "labels": {"app": "pi"},
            "template": {"metadata": {"labels": {"from": "template"}}, "spec": {"containers": [{"name": "ignored"}]}},
        },
    )
    driver = si.pod_sets(obj)[0]["template"]
    assert driver["metadata"] == {"labels": {"from": "template", "app": "pi"}, "annotations": {}}
    assert driver["spec"]["priorityClassName"] == "high"
    assert driver["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert [c["name"] for c in driver["spec"]["initContainers"]] == ["init"]
    assert [c["name"] for c in driver["spec"]["containers"]] == [spark.DRIVER_CONTAINER, "side"]
    assert driver["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "2Gi"},
        "limits": {"cpu": "1", "memory": "3Gi", "nvidia.com/gpu": "2"},
    }
    assert driver["spec"]["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]


@pytest.mark.parametrize(
    ("memory", "want"),
    [("512m", "512Mi"), ("1g", "1Gi"), ("2gb", "2Gi"), ("100k", "100Ki"), ("512Mi", "512Mi"), ("1024", "1024")],
)
def test_java_memory_sizes(memory: str, want: str) -> None:
    assert spark.java_memory_to_k8s(memory) == want


def test_an_unparsable_memory_size_is_go_s_error() -> None:
    with pytest.raises(ValueError, match=r"^failed to parse memory requests 5x: quantities must match"):
        spark.pod_sets(make(driver={"memory": "5x"}))


# --- TestAddVolumes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("volumes", "mounts", "want_volumes", "want_mounts"),
    [
        pytest.param([{"name": "data"}], [{"name": "data", "mountPath": "/data"}], ["data"], ["data"],
                     id="adds a volume and mount that match by name"),
        pytest.param([], [{"name": "unknown", "mountPath": "/data"}], [], [],
                     id="skips a mount with no matching volume declared"),
        pytest.param([{"name": "spark-local-dir-0"}], [{"name": "spark-local-dir-0", "mountPath": "/tmp"}], [], [],
                     id="skips localDir volume mounts"),
        pytest.param([{"name": "data"}],
                     [{"name": "data", "mountPath": "/data-a"}, {"name": "data", "mountPath": "/data-b"}],
                     ["data"], ["data", "data"], id="adds the volume once for two mounts referencing the same volume"),
    ],
)  # fmt: skip
def test_add_volumes(volumes: list[Any], mounts: list[Any], want_volumes: list[str], want_mounts: list[str]) -> None:
    driver = si.pod_sets(make(volumes=volumes, driver={"volumeMounts": mounts}))[0]["template"]["spec"]
    assert [v["name"] for v in driver.get("volumes") or ()] == want_volumes
    assert [m["name"] for m in driver["containers"][0].get("volumeMounts") or ()] == want_mounts


# --- TestRunWithPodsetsInfo -----------------------------------------------------------------------


def admission(*infos: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An admitted Workload whose admission checks give the driver's and executors' podSets these
    fields (`infos`: name → nodeSelector / tolerations), with no flavor labels and no queue labels, so
    the infos reach the application as upstream's tables hand them to `RunWithPodSetsInfo`."""
    wl = {
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"queueName": "lq", "podSets": [{"name": i["name"], "count": 1, "template": {}} for i in infos]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": i["name"], "count": 1, "flavors": {"cpu": "f"}} for i in infos],
            },
            "admissionChecks": [{"name": "check", "podSetUpdates": [dict(i) for i in infos]}],
        },
    }
    return wl, {"f": {"spec": {}}}


def _run(obj: dict[str, Any], *infos: dict[str, Any]) -> dict[str, Any]:
    wl, flavors = admission(*infos)
    out = merged(obj, si.start_patch(obj, wl, flavors, assign_queue_labels=False))
    for role in spark.ROLES:  # the podset label every admission adds (upstream's tables leave it out)
        labels = out["spec"][role].pop("labels")
        assert labels == {"kueue.x-k8s.io/podset": role}
    return out


def _with_templates(obj: dict[str, Any], gates: list[Any] | None = None) -> dict[str, Any]:
    for role in spark.ROLES:
        template = spark.empty_template(role)
        if gates:
            template["spec"]["schedulingGates"] = gates
        obj["spec"][role]["template"] = template
    return obj


def test_run_should_add_to_the_sparkapplication_specified_in_the_podset_info() -> None:
    """(Its scheduling gates come from TAS here: `test_run_puts_the_topology_gate_in_each_roles_template`.)"""
    info = {"nodeSelector": {"disktype": "ssd"}, "tolerations": [TOLERATION]}
    got = _run(make(), {"name": "driver", **info}, {"name": "executor", **info})
    want = _with_templates(make(suspend=False, driver=info, executor=info))
    assert pruned(got) == pruned(want)


def test_run_puts_the_topology_gate_in_each_roles_template() -> None:
    """A TAS admission's gate goes into the role's template (made when missing, kept when there)."""
    obj = make(executor={"template": {"spec": {"containers": [{"name": "mine"}], "schedulingGates": [GATE]}}})
    wl, flavors = admission({"name": "driver"}, {"name": "executor"})
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        psa["topologyAssignment"] = {"levels": ["kubernetes.io/hostname"], "slices": []}
    got = merged(obj, si.start_patch(obj, wl, flavors, tas=True))["spec"]
    topology = {"name": "kueue.x-k8s.io/topology"}
    assert got["driver"]["template"] == {
        "spec": {"containers": [{"name": spark.DRIVER_CONTAINER}], "schedulingGates": [topology]}
    }
    assert got["executor"]["template"] == {
        "spec": {"containers": [{"name": "mine"}], "schedulingGates": [GATE, topology]}
    }


def test_run_should_raise_error_when_podset_info_config_conflicts_to_the_sparkapplication() -> None:
    own = {"nodeSelector": {"disktype": "hdd"}, "tolerations": [TOLERATION2]}
    obj = _with_templates(make(driver=own, executor=own), [GATE2])
    info = {"nodeSelector": {"disktype": "ssd"}, "tolerations": [TOLERATION]}
    wl, flavors = admission({"name": "driver", **info}, {"name": "executor", **info})
    with pytest.raises(StartConflict, match="conflict for nodeSelector: conflict for key=disktype"):
        si.start_patch(obj, wl, flavors, assign_queue_labels=False)


def test_run_should_apply_different_node_selectors_per_role_when_global_node_selector_is_set() -> None:
    obj = make(nodeSelector={"zone": "us-east"})
    got = _run(
        obj,
        {"name": "driver", "nodeSelector": {"zone": "us-east", "node-type": "cpu"}},
        {"name": "executor", "nodeSelector": {"zone": "us-east", "node-type": "gpu"}},
    )
    want = _with_templates(
        make(
            suspend=False,
            driver={"nodeSelector": {"zone": "us-east", "node-type": "cpu"}},
            executor={"nodeSelector": {"zone": "us-east", "node-type": "gpu"}},
        )
    )
    assert pruned(got) == pruned(want)


def test_run_should_raise_error_if_the_wrong_number_of_podset_infos_is_provided() -> None:
    wl, flavors = admission({"name": "driver"})
    with pytest.raises(StartConflict, match=r"^invalid podset infos: expecting 2 podset, got 1$"):
        si.start_patch(make(), wl, flavors)


# --- TestRestorePodSetsInfo -----------------------------------------------------------------------


def workload_of(*templates: dict[str, Any], count: int = 3) -> dict[str, Any]:
    """A Workload whose podSets carry these templates (driver, then executor of `count`)."""
    names = ("driver", "executor")[: len(templates)]
    return {
        "spec": {
            "podSets": [
                {"name": n, "count": 1 if n == "driver" else count, "template": t}
                for n, t in zip(names, templates, strict=True)
            ]
        }
    }


RESTORED = {
    "metadata": {},
    "spec": {"nodeSelector": {"disktype": "ssd"}, "tolerations": [TOLERATION], "schedulingGates": [GATE]},
}
RESTORED_ROLE = {"nodeSelector": {"disktype": "ssd"}, "tolerations": [TOLERATION]}


def _restored(obj: dict[str, Any], wl: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The object after `stopJob`'s update (suspend left out) and whether the restore counts as a change."""
    changed = si.restore_patch(obj, wl) is not None
    patch = si.SparkApplication(obj).stop_patch(wl)
    del patch["spec"]["suspend"]
    return merged(obj, patch), changed


def test_restore_should_restore_podset_info_to_the_sparkapplication() -> None:
    got, changed = _restored(make(), workload_of(RESTORED, RESTORED))
    want = _with_templates(make(driver=RESTORED_ROLE, executor={**RESTORED_ROLE, "instances": 3}), [GATE])
    assert changed
    assert pruned(got) == pruned(want)


def test_restore_should_not_modify_the_sparkapplication_when_already_restored() -> None:
    obj = _with_templates(make(driver=RESTORED_ROLE, executor={**RESTORED_ROLE, "instances": 3}), [GATE])
    got, changed = _restored(obj, workload_of(RESTORED, RESTORED))
    assert not changed
    assert pruned(got) == pruned(obj)


def test_restore_should_restore_per_role_node_selectors_when_global_node_selector_is_set() -> None:
    obj = make(nodeSelector={"zone": "us-east"})
    got, changed = _restored(
        obj,
        workload_of(
            {"spec": {"nodeSelector": {"zone": "us-east", "node-type": "cpu"}}},
            {"spec": {"nodeSelector": {"zone": "us-east", "node-type": "gpu"}}},
        ),
    )
    want = _with_templates(
        make(
            driver={"nodeSelector": {"zone": "us-east", "node-type": "cpu"}},
            executor={"nodeSelector": {"zone": "us-east", "node-type": "gpu"}, "instances": 3},
        )
    )
    assert changed
    assert pruned(got) == pruned(want)


def test_restore_should_not_modify_the_sparkapplication_if_the_wrong_number_of_podset_infos_is_provided() -> None:
    obj = make()
    assert si.restore_patch(obj, workload_of(RESTORED)) is None
    patch = si.SparkApplication(obj).stop_patch(workload_of(RESTORED))
    assert patch["spec"] == {"suspend": True}


# --- status predicates ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "want"),
    [
        pytest.param({"state": "COMPLETED"}, ("Succeeded", ""), id="completed"),
        pytest.param({"state": "FAILED", "errorMessage": "driver OOM"}, ("Failed", "driver OOM"), id="failed"),
        pytest.param(
            {"state": "SUBMISSION_FAILED", "errorMessage": "no jar"}, ("Failed", "no jar"), id="not submitted"
        ),
        pytest.param({"state": "RUNNING"}, None, id="running"),
        pytest.param({}, None, id="new"),
    ],
)
def test_finished(state: dict[str, Any], want: Any) -> None:
    got = si.finished({**make(), "status": {"applicationState": state}})
    assert (None if got is None else (str(got[0]), got[1])) == want


def test_active_and_suspended_and_the_pods_label() -> None:
    obj = make(suspend=True)
    app = si.SparkApplication({**obj, "status": {"applicationState": {"state": "RUNNING"}}})
    assert app.is_suspended() and app.is_active()
    assert not si.SparkApplication(obj).is_active()
    assert app.pod_label_selector() == "sparkoperator.k8s.io/app-name=test-sparkapp"


# --- TestReconciler -------------------------------------------------------------------------------

FLAVOR = {"unit-test-flavor": {"nodeLabels": {"kubernetes.io/arch": "arm64"}}}
CONFIG = Configuration(wait_for_pods_ready=None, feature_gates={"TopologyAwareScheduling": False})
READY_CONFIG = Configuration(wait_for_pods_ready=WaitForPodsReady(), feature_gates={"TopologyAwareScheduling": False})


def _queued(**spec: Any) -> dict[str, Any]:
    obj = make(**spec)
    obj["metadata"] |= {"uid": "test-sparkapp-uid", "labels": {"kueue.x-k8s.io/queue-name": "foo"}}
    return obj


def _workload(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "wl",
            "namespace": "ns",
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "ownerReferences": [
                {
                    "apiVersion": "sparkoperator.k8s.io/v1beta2",
                    "kind": "SparkApplication",
                    "name": "test-sparkapp",
                    "uid": "test-sparkapp-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {"queueName": "foo", "priority": 0, "podSets": si.pod_sets(obj)},
    }


def _reconcile(obj: dict[str, Any], *workloads: dict[str, Any], config: Configuration = CONFIG) -> Outcome:
    return one_reconcile(
        integrations.SPARK_APPLICATION,
        si.SparkApplicationReconciler,
        obj,
        workloads=workloads,
        flavors=FLAVOR,
        config=config,
    )


def test_workload_is_created_with_the_corresponding_podsets() -> None:
    out = _reconcile(_queued(suspend=True))
    assert [[(p["name"], p["count"]) for p in w["spec"]["podSets"]] for w in out.workloads] == [
        [("driver", 1), ("executor", 1)]
    ]
    assert out.workloads[0]["metadata"]["name"] == si.workload_name("test-sparkapp", "test-sparkapp-uid")


def _running(executors: int, running: int) -> dict[str, Any]:
    obj = _queued(suspend=False, executor={"instances": executors})
    obj["status"] = {
        "applicationState": {"state": "RUNNING"},
        "executorState": {f"test-sparkapp-exec-{i}": "RUNNING" for i in range(1, running + 1)},
    }
    return obj


@pytest.mark.parametrize(
    ("running", "want"),
    [
        pytest.param(
            0,
            ("False", "WaitForStart", "Not all pods are ready or succeeded"),
            id="PodsReady stays False/WaitForStart while AppState=Running but no executors reported ready",
        ),
        pytest.param(
            2,
            ("True", "Started", "All pods reached readiness and the workload is running"),
            id="PodsReady becomes True/Started after AppState=Running and all executors reach Running",
        ),
    ],
)
def test_pods_ready(running: int, want: tuple[str, str, str]) -> None:
    obj = _running(2, running)
    wl = admit(_workload(obj), flavor="unit-test-flavor")
    out = _reconcile(obj, wl, config=READY_CONFIG)
    ready = next(c for c in out.workloads[0]["status"]["conditions"] if c["type"] == "PodsReady")
    assert (ready["status"], ready["reason"], ready["message"]) == want


def test_when_workload_is_admitted_the_application_is_started_on_the_flavor() -> None:
    obj = _queued(suspend=True)
    out = _reconcile(obj, admit(_workload(obj), flavor="unit-test-flavor"))
    assert out.error is None
    job = out.job or {}
    assert not spark.is_suspended(job)
    for role in spark.ROLES:
        assert job["spec"][role]["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
        assert job["spec"][role]["labels"]["kueue.x-k8s.io/podset"] == role
    assert [(e[1], e[2]) for e in out.events] == [("Normal", "Started")]


def test_when_workload_is_evicted_the_application_is_suspended_and_restored_in_one_patch() -> None:
    queued = _queued(suspend=True)
    wl = admit(_workload(queued), flavor="unit-test-flavor")
    evict(wl)
    running = merged(queued, si.start_patch(queued, wl, {"unit-test-flavor": {"spec": FLAVOR["unit-test-flavor"]}}))
    out = _reconcile(running, wl)
    job = out.job or {}
    assert spark.is_suspended(job)
    assert [job["spec"][role].get("nodeSelector") for role in spark.ROLES] == [None, None]
    assert [job["spec"][role].get("labels") for role in spark.ROLES] == [None, None]
    assert len(out.job_patches) == 1


def test_a_finished_application_finishes_its_workload() -> None:
    obj = _queued(suspend=False)
    obj["status"] = {"applicationState": {"state": "FAILED", "errorMessage": "driver exited 1"}}
    out = _reconcile(obj, admit(_workload(obj), flavor="unit-test-flavor"))
    done = next(c for c in out.workloads[0]["status"]["conditions"] if c["type"] == "Finished")
    assert (done["status"], done["reason"], done["message"]) == ("True", "Failed", "driver exited 1")


def test_podset_info_of_a_role_reads_its_spark_pod_spec() -> None:
    """The role's fields as `podset` sees them: what `RunWithPodSetsInfo` merges the admission into."""
    obj = _with_templates(make(driver={"annotations": {"a": "b"}, "tolerations": [TOLERATION]}), [GATE])
    wl, flavors = admission({"name": "driver", "annotations": {"c": "d"}}, {"name": "executor"})
    got = merged(obj, si.start_patch(obj, wl, flavors))["spec"]["driver"]
    assert podset.PodSetInfo(annotations=got["annotations"]).annotations == {"a": "b", "c": "d"}
    assert got["tolerations"] == [TOLERATION] and got["template"]["spec"]["schedulingGates"] == [GATE]
