"""The AppWrapper integration: its podSets as upstream's AppWrapper library reads them, and what one
reconcile does to an AppWrapper and its Workload, run end to end against a fake API.

Upstream's cases (`pkg/controller/jobs/appwrapper/appwrapper_controller_test.go`, v0.19.2:
`TestPodSets` and `TestReconciler`, including the case upstream left disabled for want of
PodSet defaulting, "when workload is admitted, job gets node selectors") keep upstream's names;
the others pin the behaviour upstream's adapter and the library (project-codeflare/appwrapper
v1.2.2 `pkg/utils/utils.go`) give: the path grammar and its messages, inferred and declared
podSets, the pod template defaults, start (podSetInfos), stop (their removal), Finished,
PodsReady and IsActive from the AppWrapper's status.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.config import Configuration
from webhook.worker import events
from webhook.worker.integrations import appwrapper as a
from webhook.worker.jobframework.setup import Resource, SetupContext
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

NOW = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
Q = "kueue.x-k8s.io/queue-name"
WL_API = "kueue.x-k8s.io/v1beta2"
AW_PATH = k.object_path("workload.codeflare.dev/v1beta2", "appwrappers", "ns")
WL_PATH = k.object_path(WL_API, "workloads", "ns")
INDEX = "batch.kubernetes.io/job-completion-index"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
WL_NAME = a.workload_name("aw", "aw-uid")
TAS_OFF = {"TopologyAwareScheduling": False}


# --- builders (upstream's testing wrappers, as plain dicts) -----------------------------------------


def container(**fields_: Any) -> dict[str, Any]:
    return {"name": "c", "image": "pause", "resources": {"requests": {}, "limits": {}}, **fields_}


def job(name: str = "job", parallelism: int = 1, *, cpu: str | None = None, **spec: Any) -> dict[str, Any]:
    """`testingjob.MakeJob(name, "ns").SetTypeMeta()`: suspended, one container `c`."""
    ctr = container()
    if cpu is not None:
        ctr["resources"]["requests"]["cpu"] = cpu
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "parallelism": parallelism,
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "nodeSelector": {}, "containers": [ctr]}},
            **spec,
        },
    }


def pytorch_job(
    master_annotations: Mapping[str, str] = {}, worker_annotations: Mapping[str, str] = {}
) -> dict[str, Any]:
    """`testingpytorchjob.MakePyTorchJob` with a Master of 1 and 4 Workers."""

    def replica(count: int, annotations: Mapping[str, str]) -> dict[str, Any]:
        meta = {"annotations": dict(annotations)} if annotations else {}
        return {
            "replicas": count,
            "template": {"metadata": meta, "spec": {"restartPolicy": "Never", "containers": [container()]}},
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pytorchjob", "namespace": "ns"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": replica(1, master_annotations),
                "Worker": replica(4, worker_annotations),
            }
        },
    }


def deployment(replicas: int | None = 3) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [container()]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "deployment"}, "spec": spec}


def component(
    template: Mapping[str, Any],
    *,
    pod_sets: Sequence[Mapping[str, Any]] = (),
    infos: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {"template": copy.deepcopy(dict(template))}
    if pod_sets:
        out["podSets"] = [dict(p) for p in pod_sets]
    if infos:
        out["podSetInfos"] = [dict(i) for i in infos]
    return out


def appwrapper(
    *components: dict[str, Any],
    queue: str = "",
    suspend: bool = True,
    annotations: Mapping[str, str] | None = None,
    phase: str = "",
    conditions: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """`testingappwrapper.MakeAppWrapper("aw", "ns")`: suspended, with `components`."""
    meta: dict[str, Any] = {"name": "aw", "namespace": "ns", "uid": "aw-uid", "annotations": dict(annotations or {})}
    if queue:
        meta["labels"] = {Q: queue}
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if conditions:
        status["conditions"] = [{"type": t, "status": s, "reason": t} for t, s in conditions]
    out = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": meta,
        "spec": {"suspend": suspend, "components": list(components)},
    }
    if status:
        out["status"] = status
    return out


def defaulted_container(**fields_: Any) -> dict[str, Any]:
    """`container()` as the library's `copyContainers` leaves it."""
    return {
        "name": "c",
        "image": "pause",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "Always",
        **fields_,
    }


def defaulted_spec(**fields_: Any) -> dict[str, Any]:
    return {
        "containers": [defaulted_container()],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "preemptionPolicy": "PreemptLowerPriority",
        **fields_,
    }


# --- TestPodSets ------------------------------------------------------------------------------------


def _pod_set(name: str, count: int, *, annotations: Mapping[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": defaulted_spec()}
    if annotations:
        template["metadata"] = {"annotations": dict(annotations)}
    return {"name": name, "count": count, "template": template, **extra}


REQUIRED = {"kueue.x-k8s.io/podset-required-topology": "cloud.com/rack"}
PREFERRED = {"kueue.x-k8s.io/podset-preferred-topology": "cloud.com/block"}


@pytest.mark.parametrize(
    ("aw", "tas", "want"),
    [
        pytest.param(
            appwrapper(component(pytorch_job()), component(job(parallelism=2))),
            False,
            [_pod_set("aw-0", 1), _pod_set("aw-1", 4), _pod_set("aw-2", 2)],
            id="no annotations",
        ),
        pytest.param(
            appwrapper(component(pytorch_job(REQUIRED, PREFERRED))),
            True,
            [
                _pod_set("aw-0", 1, annotations=REQUIRED,
                         topologyRequest={"required": "cloud.com/rack", "podIndexLabel": REPLICA_INDEX}),
                _pod_set("aw-1", 4, annotations=PREFERRED,
                         topologyRequest={"preferred": "cloud.com/block", "podIndexLabel": REPLICA_INDEX}),
            ],
            id="with required and preferred topology annotation",
        ),
        pytest.param(
            appwrapper(component(pytorch_job(REQUIRED, PREFERRED))),
            False,
            [_pod_set("aw-0", 1, annotations=REQUIRED), _pod_set("aw-1", 4, annotations=PREFERRED)],
            id="without required and preferred topology annotation if TAS is disabled",
        ),
    ],
)  # fmt: skip
def test_pod_sets(aw: dict[str, Any], tas: bool, want: list[dict[str, Any]]) -> None:
    assert a.pod_sets(aw, tas=tas) == want


# --- the library's paths, inference and pod templates ---------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        pytest.param("spec", "first element of the path must be 'template'", id="not under template"),
        pytest.param("template.spec.nope", "at path position 'template.spec.' missing field 'nope'", id="missing"),
        pytest.param("template.spec.items[2]", "at path position 'template.spec.items' out of bounds index '2'",
                     id="out of bounds"),
        pytest.param("template.spec.items[x]", "at path position 'template.spec.items' invalid index expression 'x'",
                     id="bad index"),
        pytest.param("template.spec.items[0", "at path position 'template.spec.items' invalid array index '[0'",
                     id="unclosed"),
        pytest.param("template.spec[0]", "at path position 'template.spec' found non-array value", id="not a list"),
        pytest.param("template.spec.items[0].x", "at path position 'template.spec.items[0.' non-map value",
                     id="not a map (the library's position drops the closing bracket)"),
        pytest.param("template/spec", "at path position 'template' invalid path element '/spec'", id="bad step"),
    ],
)  # fmt: skip
def test_a_bad_path_fails_with_the_librarys_message(path: str, message: str) -> None:
    obj = {"spec": {"items": ["a", "b"]}}
    with pytest.raises(a.PodSetError) as err:
        a.value_at(obj, path)
    assert str(err.value) == message


def test_a_path_reaches_into_lists_and_maps() -> None:
    obj = {"spec": {"groups": [{"template": {"x": 1}}, {"template": {"x": 2}}]}}
    assert a.value_at(obj, "template.spec.groups[1].template.x") == 2
    assert a.value_at(obj, "template") is obj


def _ray(kind: str) -> dict[str, Any]:
    cluster = {
        "headGroupSpec": {"template": {"spec": {"containers": [container()]}}},
        "workerGroupSpecs": [
            {"replicas": 3, "template": {"spec": {"containers": [container()]}}},
            {"template": {"spec": {"containers": [container()]}}},
            {"replicas": 9},  # no template: not a podSet
        ],
    }
    spec = cluster if kind == "RayCluster" else {"rayClusterSpec": cluster}
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": "r"}, "spec": spec}


def _jobset() -> dict[str, Any]:
    def replicated(name: str, replicas: int | None, parallelism: int, completions: int | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"parallelism": parallelism, "template": {"spec": {"containers": [container()]}}}
        if completions is not None:
            spec["completions"] = completions
        out: dict[str, Any] = {"name": name, "template": {"spec": spec}}
        if replicas is not None:
            out["replicas"] = replicas
        return out

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {"replicatedJobs": [replicated("l", None, 1, None), replicated("w", 2, 4, 3)]},
    }


def _tas(sub_count: str | None = None) -> dict[str, str]:
    out = {a.TAS_POD_INDEX_LABEL: INDEX}
    if sub_count is not None:
        out |= {a.TAS_SUB_GROUP_INDEX_LABEL: "jobset.sigs.k8s.io/job-index", a.TAS_SUB_GROUP_COUNT: sub_count}
    return out


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(job(parallelism=4, completions=2), [{"replicas": 2, "path": "template.spec.template",
                                                          "annotations": _tas()}], id="Job: min(parallelism, completions)"),
        pytest.param(deployment(3), [{"replicas": 3, "path": "template.spec.template"}], id="Deployment"),
        pytest.param(deployment(None), [{"replicas": 1, "path": "template.spec.template"}], id="Deployment, replicas unset"),
        pytest.param({**deployment(2), "kind": "StatefulSet"}, [{"replicas": 2, "path": "template.spec.template"}],
                     id="StatefulSet"),
        pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container()]}},
                     [{"replicas": 1, "path": "template"}], id="Pod"),
        pytest.param(_jobset(), [
            {"replicas": 1, "path": "template.spec.replicatedJobs[0].template.spec.template", "annotations": _tas("1")},
            {"replicas": 6, "path": "template.spec.replicatedJobs[1].template.spec.template", "annotations": _tas("2")},
        ], id="JobSet: replicas x pods of each replicated Job"),
        pytest.param(_ray("RayCluster"), [
            {"replicas": 1, "path": "template.spec.headGroupSpec.template"},
            {"replicas": 3, "path": "template.spec.workerGroupSpecs[0].template"},
            {"replicas": 1, "path": "template.spec.workerGroupSpecs[1].template"},
        ], id="RayCluster"),
        pytest.param(_ray("RayJob"), [
            {"replicas": 1, "path": "template.spec.rayClusterSpec.headGroupSpec.template"},
            {"replicas": 3, "path": "template.spec.rayClusterSpec.workerGroupSpecs[0].template"},
            {"replicas": 1, "path": "template.spec.rayClusterSpec.workerGroupSpecs[1].template"},
        ], id="RayJob"),
        pytest.param({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}}, [], id="unknown kind: none"),
    ],
)  # fmt: skip
def test_infer_pod_sets(obj: dict[str, Any], want: list[dict[str, Any]]) -> None:
    assert a.infer_pod_sets(obj) == want


def test_inference_fails_when_a_path_holds_no_pod_spec() -> None:
    broken = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"metadata": {}}}}
    with pytest.raises(a.PodSetError) as err:
        a.infer_pod_sets(broken)
    assert str(err.value) == (
        "template.spec.template does not refer to a v1.PodSpecTemplate: content at template.spec.template does not "
        "contain a spec"
    )


def test_a_non_integer_replica_count_fails_inference() -> None:
    with pytest.raises(a.PodSetError) as err:
        a.infer_pod_sets(deployment(None) | {"spec": {**deployment(None)["spec"], "replicas": "3"}})
    assert str(err.value) == "at path position 'template.spec.replicas' non-int value 3"


def test_declared_pod_sets_win_and_the_controllers_cached_ones_win_over_both() -> None:
    declared = component(deployment(5), pod_sets=[{"replicas": 2, "path": "template.spec.template"}])
    aw = appwrapper(declared, component(job(parallelism=3)))
    assert [ps["count"] for ps in a.pod_sets(aw)] == [2, 3]
    aw["status"] = {
        "componentStatus": [{"podSets": [{"replicas": 7, "path": "template.spec.template"}]}, {"podSets": []}]
    }
    assert [(ps["name"], ps["count"]) for ps in a.pod_sets(aw)] == [("aw-0", 7)]


def test_a_pod_set_whose_template_cannot_be_read_is_left_out_and_the_next_takes_its_index() -> None:
    aw = appwrapper(
        component(
            deployment(2), pod_sets=[{"path": "template.metadata"}, {"replicas": 2, "path": "template.spec.template"}]
        )
    )
    assert [(ps["name"], ps["count"]) for ps in a.pod_sets(aw)] == [("aw-0", 2)]


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        pytest.param("pause", "Always", id="no tag: latest"),
        pytest.param("registry.k8s.io/pause:3.9", "IfNotPresent", id="tag"),
        pytest.param("busybox:latest", "Always", id="latest"),
        pytest.param("busybox@sha256:" + "a" * 64, "IfNotPresent", id="digest"),
        pytest.param("localhost:5000/x/busybox", "Always", id="registry port, no tag"),
        pytest.param("Busybox", "IfNotPresent", id="invalid reference"),
    ],
)
def test_image_pull_policy_defaults_as_the_api_server(image: str, policy: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": image}]}}
    assert a.pod_template(pod, "template")["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_pod_template_keeps_what_kueue_reads_and_defaults_the_rest() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": {"app": "x", "n": 1}, "annotations": {"a": "b"}},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            "priorityClassName": "high",
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "overhead": {"cpu": "0.0001"},
            "containers": [
                {
                    "name": "c",
                    "image": "pause:1",
                    "env": [{"name": "A", "value": "1"}],
                    "imagePullPolicy": "Never",
                    "resources": {"requests": {"cpu": "1500m", "memory": 1024}, "limits": {"cpu": 2}},
                }
            ],
        },
    }
    assert a.pod_template(pod, "template") == {
        "metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "pause:1",
                    "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1500m", "memory": "1024"}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "Never",
                }
            ],
            # terminationGracePeriodSeconds: set, so the library drops it
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "nodeSelector": {"zone": "a"},
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "priorityClassName": "high",
            "preemptionPolicy": "PreemptLowerPriority",
            "overhead": {"cpu": "1m"},
        },
    }


def test_tas_sub_group_of_a_jobset_component() -> None:
    (first, second) = a.pod_sets(appwrapper(component(_jobset())), tas=True)
    assert first["topologyRequest"] == {
        "podIndexLabel": INDEX,
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
        "subGroupCount": 1,
    }
    assert second["topologyRequest"]["subGroupCount"] == 2


def test_tas_without_any_request_leaves_a_deployment_pod_set_without_one() -> None:
    (ps,) = a.pod_sets(appwrapper(component(deployment(2))), tas=True)
    assert "topologyRequest" not in ps


# --- the reconcile, end to end against a fake API ---------------------------------------------------

Event = tuple[str, str, str, str]


class _Kube(FakeKube):
    """Optimistic locking on merge patches; every write's body is recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str, Any]] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]:
        if method != "GET":
            self.sent.append((method, path, copy.deepcopy(body)))
        if method == "PATCH" and isinstance(body, Mapping) and not path.endswith("/status"):
            sent = (body.get("metadata") or {}).get("resourceVersion")
            current = self.objects.get(path)
            if sent is not None and current is not None and sent != current["metadata"]["resourceVersion"]:
                raise k.Conflict(409, "the object has been modified")
        return super().request(method, path, query=query, body=body, content_type=content_type, timeout=timeout)


class _Recorder(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="test", stop=threading.Event())
        self.seen: list[Event] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        meta = obj.get("metadata") or {}
        assert controller == "workload.codeflare.dev/appwrapper-kueue-controller"
        self.seen.append((f"{meta.get('namespace')}/{meta.get('name')}", etype, reason, note))


@dataclass
class Cluster:
    """A fake API with namespace `ns` (and the flavors given), and the AppWrapper reconciler."""

    config: Configuration = field(default_factory=lambda: Configuration(feature_gates=TAS_OFF))
    flavors: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"default": {}})  # name: spec
    kube: _Kube = field(default_factory=_Kube)
    store: Store = field(default_factory=Store)
    recorder: _Recorder = field(default_factory=_Recorder)

    def __post_init__(self) -> None:
        self.reconciler = a.AppWrapperReconciler(
            self.kube, self.store, self.config, self.recorder, clock=lambda: NOW, requeue_after=lambda key, s: None
        )
        self.add(
            "namespaces",
            "/api/v1/namespaces",
            {"metadata": {"name": "ns", "labels": {"kubernetes.io/metadata.name": "ns"}}},
        )
        for name, spec in self.flavors.items():
            rf = {"apiVersion": WL_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": dict(spec)}
            self.add("resourceflavors", k.object_path(WL_API, "resourceflavors", None), rf)

    def add(self, kind: str, path: str, obj: Mapping[str, Any]) -> None:
        full = f"{path}/{obj['metadata']['name']}"
        self.kube.put(full, copy.deepcopy(dict(obj)))
        self.store.put(kind, copy.deepcopy(self.kube.objects[full]))

    def reconcile(self) -> str | None:
        """One reconcile of ns/aw; the error it ends with, if any."""
        self.kube.sent.clear()
        self.recorder.seen.clear()
        for kind, path in (("appwrappers", AW_PATH), ("workloads", WL_PATH)):
            for p, obj in self.kube.objects.items():
                if p.startswith(path + "/"):
                    self.store.put(kind, copy.deepcopy(obj))
        try:
            self.reconciler.reconcile("ns/aw")
        except Retry as exc:
            return str(exc)
        return None

    @property
    def aw(self) -> dict[str, Any]:
        return copy.deepcopy(self.kube.objects[f"{AW_PATH}/aw"])

    @property
    def workloads(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for p, o in sorted(self.kube.objects.items()) if p.startswith(WL_PATH + "/")]

    def edit_workload(self, status: Mapping[str, Any]) -> None:
        (wl,) = self.workloads
        self.kube.put(f"{WL_PATH}/{wl['metadata']['name']}", {**wl, "status": {**wl.get("status", {}), **status}})

    def edit_aw(self, **changes: Any) -> None:
        self.kube.put(f"{AW_PATH}/aw", {**self.aw, **changes})


def created() -> Event:
    return ("ns/aw", "Normal", "CreatedWorkload", f"Created Workload: ns/{WL_NAME}")


def _spec_view(wl: Mapping[str, Any]) -> dict[str, Any]:
    """The Workload as upstream's TestReconciler compares it (names, owners, templates aside)."""
    spec = copy.deepcopy(dict(wl["spec"]))
    for ps in spec["podSets"]:
        ps.pop("template")
    return {"annotations": wl["metadata"].get("annotations", {}), "spec": spec}


EVERYWHERE = Configuration(manage_jobs_without_queue_name=True, managed_jobs_namespace_selector={})


def test_workload_is_created_with_podsets() -> None:
    cluster = Cluster(config=EVERYWHERE)
    aw = appwrapper(component(job(parallelism=2)))
    cluster.add("appwrappers", AW_PATH, aw)
    assert cluster.reconcile() is None
    (wl,) = cluster.workloads
    assert _spec_view(wl) == {
        "annotations": {},
        "spec": {
            "podSets": [{"name": "aw-0", "count": 2, "topologyRequest": {"podIndexLabel": INDEX}}],
            "queueName": "",
            "priority": 0,
        },
    }
    assert wl["metadata"]["name"] == WL_NAME
    assert wl["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "name": "aw",
            "uid": "aw-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert wl["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert wl["spec"]["podSets"][0]["template"] == {"spec": defaulted_spec()}
    assert cluster.recorder.seen == [created()]
    assert cluster.aw["spec"] == aw["spec"]


def test_workload_is_created_with_a_provreq_annotation() -> None:
    cluster = Cluster(config=EVERYWHERE)
    annotations = {
        "provreq.kueue.x-k8s.io/test-annotation": "test-val",
        "invalid-provreq-prefix/test-annotation-2": "v",
    }
    cluster.add("appwrappers", AW_PATH, appwrapper(component(job(parallelism=2)), annotations=annotations))
    assert cluster.reconcile() is None
    (wl,) = cluster.workloads
    assert wl["metadata"]["annotations"] == {"provreq.kueue.x-k8s.io/test-annotation": "test-val"}


def test_workload_isnt_created_due_to_manage_jobs_without_queue_name_false() -> None:
    cluster = Cluster()
    cluster.add("appwrappers", AW_PATH, appwrapper(component(job(parallelism=2))))
    assert cluster.reconcile() is None
    assert cluster.workloads == [] and cluster.recorder.seen == [] and cluster.kube.sent == []


def test_workload_shouldnt_be_recreated_for_completed_job() -> None:
    cluster = Cluster()
    cluster.add("appwrappers", AW_PATH, appwrapper(component(job(parallelism=2)), queue="foo", phase="Succeeded"))
    assert cluster.reconcile() is None
    assert cluster.workloads == [] and cluster.recorder.seen == [] and cluster.kube.sent == []


def _admit(cluster: Cluster, flavors: Sequence[str], *, cq: str = "cq") -> None:
    (wl,) = cluster.workloads
    assignments = [
        {"name": ps["name"], "count": ps["count"], "flavors": {"cpu": flavor}}
        for ps, flavor in zip(wl["spec"]["podSets"], flavors, strict=True)
    ]
    cluster.edit_workload(
        {
            "admission": {"clusterQueue": cq, "podSetAssignments": assignments},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
                {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
            ],
        }
    )


def _three_jobs() -> dict[str, Any]:
    return appwrapper(*(component(job(cpu="1")) for _ in range(3)), queue="foo")


SPOT_TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
FLAVORS = {
    "on-demand": {"nodeLabels": {"provisioning": "on-demand"}},
    "spot": {"nodeLabels": {"provisioning": "spot"}, "tolerations": [SPOT_TOLERATION]},
    "default": {},
}


def _started(config: Configuration | None = None) -> Cluster:
    """Three one-pod Job components, created and started on flavors on-demand, spot and default."""
    cluster = Cluster(config=config or Configuration(feature_gates=TAS_OFF), flavors=FLAVORS)
    cluster.add("appwrappers", AW_PATH, _three_jobs())
    assert cluster.reconcile() is None  # creates the Workload
    _admit(cluster, ["on-demand", "spot", "default"])
    assert cluster.reconcile() is None  # PodsReady=False (WaitForStart) on the Workload first
    assert cluster.reconcile() is None
    return cluster


def _info(index: int, tolerations: Sequence[Mapping[str, str]] = (), **node_selector: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "labels": {
            "kueue.x-k8s.io/podset": f"aw-{index}",
            "kueue.x-k8s.io/local-queue-name": "foo",
            "kueue.x-k8s.io/cluster-queue-name": "cq",
        }
    }
    if node_selector:
        out["nodeSelector"] = node_selector
    if tolerations:
        out["tolerations"] = [dict(t) for t in tolerations]
    return out


def test_when_workload_is_admitted_job_gets_node_selectors() -> None:
    """Upstream's disabled case: each component's podSetInfos carry its flavor's node labels and
    tolerations (and,
    with AssignQueueLabelsForPods, the podSet and queue labels); the templates stay as written."""
    cluster = _started()
    got = cluster.aw
    assert got["spec"]["suspend"] is False
    assert [comp["podSetInfos"] for comp in got["spec"]["components"]] == [
        [_info(0, provisioning="on-demand")],
        [_info(1, [SPOT_TOLERATION], provisioning="spot")],
        [_info(2)],
    ]
    assert [comp["template"] for comp in got["spec"]["components"]] == [
        comp["template"] for comp in _three_jobs()["spec"]["components"]
    ]
    assert cluster.recorder.seen == [("ns/aw", "Normal", "Started", "Admitted by clusterQueue cq")]
    [(method, path, body)] = cluster.kube.sent
    assert (method, path) == ("PATCH", f"{AW_PATH}/aw")
    assert body["metadata"]["resourceVersion"] and body["spec"]["suspend"] is False


def test_an_evicted_workload_stops_the_appwrapper_and_clears_its_pod_set_infos() -> None:
    cluster = _started()
    cluster.edit_workload(
        {
            "conditions": [
                *cluster.workloads[0]["status"]["conditions"],
                {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "Preempted to make room"},
            ]
        }
    )
    assert cluster.reconcile() is None
    got = cluster.aw
    assert got["spec"]["suspend"] is True
    assert all("podSetInfos" not in comp for comp in got["spec"]["components"])
    assert [comp["template"] for comp in got["spec"]["components"]] == [
        comp["template"] for comp in _three_jobs()["spec"]["components"]
    ]
    assert cluster.recorder.seen == [("ns/aw", "Normal", "Stopped", "Preempted to make room")]
    aw_writes = [body for method, path, body in cluster.kube.sent if path == f"{AW_PATH}/aw"]
    assert [set(body["spec"]) for body in aw_writes] == [{"suspend"}, {"components"}]
    # The AppWrapper holds no quota of its own any more (no QuotaReserved=True): the Workload's goes back.
    (wl,) = cluster.workloads
    reserved = next(x for x in wl["status"]["conditions"] if x["type"] == "QuotaReserved")
    assert reserved["status"] == "False" and "admission" not in wl["status"]


def test_an_evicted_workload_keeps_its_quota_while_the_appwrapper_is_active() -> None:
    """`IsActive`: the AppWrapper's own QuotaReserved condition, until its controller has deleted
    the wrapped resources."""
    cluster = _started()
    cluster.edit_aw(
        status={"phase": "Running", "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "x"}]}
    )
    cluster.edit_workload(
        {
            "conditions": [
                *cluster.workloads[0]["status"]["conditions"],
                {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "Preempted"},
            ]
        }
    )
    assert cluster.reconcile() is None
    assert cluster.aw["spec"]["suspend"] is True
    assert "admission" in cluster.workloads[0]["status"]


@pytest.mark.parametrize(
    ("phase", "deployed", "want"),
    [
        pytest.param("Succeeded", "False", ("Succeeded", "AppWrapper finished successfully"), id="succeeded"),
        pytest.param("Failed", "False", ("Failed", "AppWrapper failed"), id="failed"),
        pytest.param("Failed", "True", None, id="failed, still deleting resources: not finished"),
        pytest.param("Running", "True", None, id="running"),
    ],
)
def test_finished_from_the_appwrappers_phase(phase: str, deployed: str, want: tuple[str, str] | None) -> None:
    cluster = _started()
    cluster.edit_aw(
        status={"phase": phase, "conditions": [{"type": "ResourcesDeployed", "status": deployed, "reason": "x"}]}
    )
    assert cluster.reconcile() is None
    (wl,) = cluster.workloads
    finished = next((x for x in wl["status"]["conditions"] if x["type"] == "Finished"), None)
    if want is None:
        assert finished is None and cluster.recorder.seen == []
        return
    assert finished is not None and (finished["status"], finished["reason"], finished["message"]) == ("True", *want)
    assert cluster.recorder.seen == [
        ("ns/aw", "Normal", "FinishedWorkload", f"Workload 'ns/{WL_NAME}' is declared finished")
    ]


@pytest.mark.parametrize(("ready", "want"), [("True", ("True", "Started")), ("False", ("False", "WaitForStart"))])
def test_pods_ready_from_the_appwrappers_condition(ready: str, want: tuple[str, str]) -> None:
    cluster = _started()
    cluster.edit_aw(status={"phase": "Running", "conditions": [{"type": "PodsReady", "status": ready, "reason": "x"}]})
    assert cluster.reconcile() is None
    cond = next(x for x in cluster.workloads[0]["status"]["conditions"] if x["type"] == "PodsReady")
    assert (cond["status"], cond["reason"]) == want


def test_a_pod_set_counted_but_not_readable_fails_the_start() -> None:
    """The library counts a declared podSet whose template cannot be read when it writes the
    podSetInfos, but leaves it out of the Workload: the start cannot match them up."""
    cluster = Cluster()
    broken = component(
        deployment(2), pod_sets=[{"path": "template.metadata"}, {"replicas": 2, "path": "template.spec.template"}]
    )
    cluster.add("appwrappers", AW_PATH, appwrapper(broken, queue="foo"))
    assert cluster.reconcile() is None
    _admit(cluster, ["default"])
    assert cluster.reconcile() is None  # PodsReady=False (WaitForStart)
    assert cluster.reconcile() is None
    assert cluster.aw["spec"]["suspend"] is True
    finished = next(x for x in cluster.workloads[0]["status"]["conditions"] if x["type"] == "Finished")
    assert (finished["reason"], finished["message"]) == (
        "FailedToStart",
        "invalid podset infos: expecting 2 podsets, got 1",
    )


def test_priority_comes_from_the_wrapped_pod_templates_priority_class() -> None:
    cluster = Cluster()
    cluster.add(
        "priorityclasses",
        k.object_path("scheduling.k8s.io/v1", "priorityclasses", None),
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100},
    )
    wrapped = job(parallelism=1)
    wrapped["spec"]["template"]["spec"]["priorityClassName"] = "high"
    cluster.add("appwrappers", AW_PATH, appwrapper(component(wrapped), queue="foo"))
    assert cluster.reconcile() is None
    (wl,) = cluster.workloads
    assert wl["spec"]["priority"] == 100
    assert wl["spec"]["priorityClassRef"] == {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}


def test_an_unreadable_component_is_a_reconcile_error() -> None:
    cluster = Cluster()
    cluster.add("appwrappers", AW_PATH, appwrapper({"template": {"apiVersion": "v1"}}, queue="foo"))
    error = cluster.reconcile()
    assert error is not None and "Object 'Kind' is missing" in error
    assert cluster.workloads == []


def test_a_deleted_appwrapper_releases_its_workload() -> None:
    cluster = _started()
    del cluster.kube.objects[f"{AW_PATH}/aw"]
    cluster.store.delete("appwrappers", "ns/aw")
    assert cluster.reconcile() is None
    (wl,) = cluster.workloads
    assert "kueue.x-k8s.io/resource-in-use" not in wl["metadata"].get("finalizers", [])


def test_the_worker_does_not_wait_for_an_uninstalled_appwrapper_crd() -> None:
    """Upstream ships the integration enabled and defers it until the operator's CRD is served: the
    watch counts as listed and empty until then (`Resource.optional`)."""
    wiring = a.setup(
        SetupContext(kube=_Kube(), store=Store(), config=Configuration(), recorder=_Recorder(), stop=threading.Event())  # type: ignore[arg-type]
    )
    assert wiring.watches == (Resource("appwrappers", "workload.codeflare.dev/v1beta2", optional=True),)
    assert isinstance(wiring.reconciler, a.AppWrapperReconciler)


@pytest.mark.parametrize("tas", [False, True])
def test_a_running_appwrapper_still_matches_its_workload(tas: bool) -> None:
    """The podSets read from the running AppWrapper (its templates untouched, the admission in
    podSetInfos) stay equivalent to its admitted Workload: the next reconcile writes nothing."""
    cluster = _started(Configuration(feature_gates={"TopologyAwareScheduling": tas}))
    cluster.edit_aw(
        status={"phase": "Running", "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "x"}]}
    )
    assert cluster.reconcile() is None
    assert cluster.kube.sent == [] and cluster.recorder.seen == []
    assert cluster.aw["spec"]["suspend"] is False
