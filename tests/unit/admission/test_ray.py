"""KubeRay's webhooks (RayCluster, RayJob, RayService) through the ASGI app: suspension, the elastic
gate, upstream's denial messages.

Translated from upstream v0.19.2, keeping the case names: `TestValidateDefault`/`TestDefault`,
`TestValidateCreate` and `TestValidateUpdate` of `pkg/controller/jobs/raycluster/
raycluster_webhook_test.go` and `rayjob/rayjob_webhook_test.go` (the request-only parts; the TAS
tables' messages are `tas_validation`'s, pinned in test_tas_validation.py and here once per kind),
`TestValidateCreateRayClusterSpec` of `raycluster/common_test.go` (through a RayService, whose
webhook runs it on `spec.rayClusterConfig`). One deliberate difference, pinned below: an elastic
RayJob or RayService with in-tree autoscaling is refused (pykueue does not follow its autoscaler
through the RayCluster, `UpdatePodSets`), where upstream admits it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.api import ray

from .reviews import Driver

Q = "kueue.x-k8s.io/queue-name"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
WPC = "kueue.x-k8s.io/priority-class"
ELASTIC = "kueue.x-k8s.io/elastic-job"
GATE = {"name": "kueue.x-k8s.io/elastic-job"}
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
FRAMEWORKS = "integrations: {frameworks: [batch/job, ray.io/raycluster, ray.io/rayjob, ray.io/rayservice]}\n"
V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


def _group(name: str = "workers-group-0", replicas: int | None = 1) -> dict[str, Any]:
    out: dict[str, Any] = {
        "groupName": name,
        "template": {"spec": {"containers": [{"name": "worker-container"}]}},
    }
    if replicas is not None:
        out["replicas"] = replicas
    return out


def _cluster_spec(*, suspend: bool | None = True, groups: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`MakeCluster`'s spec: a head and one worker group of one replica."""
    spec: dict[str, Any] = {
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head-container"}]}}},
        "workerGroupSpecs": [_group()] if groups is None else groups,
    }
    if suspend is not None:
        spec["suspend"] = suspend
    return spec


def make(
    kind: ray.Kind, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **cluster: Any
) -> dict[str, Any]:
    """`MakeCluster` / `MakeJob` / a RayService alike, in namespace `ns`."""
    meta: dict[str, Any] = {"name": "job", "namespace": "ns"}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    if kind is ray.RAYCLUSTER:
        spec = _cluster_spec(**cluster)
    elif kind is ray.RAYJOB:
        suspend = cluster.pop("suspend", True)
        spec = {
            "shutdownAfterJobFinishes": True,
            "suspend": suspend,
            "rayClusterSpec": _cluster_spec(suspend=None, **cluster),
        }
    else:
        spec = {"rayClusterConfig": _cluster_spec(**cluster)}
    return {"apiVersion": "ray.io/v1", "kind": kind.name, "metadata": meta, "spec": spec}


def cluster_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec = ray.cluster_spec(obj, ray.kind_of(obj))
    assert isinstance(spec, dict)
    return spec


def _path(obj: dict[str, Any], *, mutating: bool) -> str:
    return ray.kind_of(obj).framework.webhook_path(mutating=mutating)


@pytest.fixture
def rd(make_driver: Any) -> Driver:
    return make_driver(V2 + FRAMEWORKS)  # type: ignore[no-any-return]


def _driver(make_driver: Any, extra: str = "", **lookups: Any) -> Driver:
    return make_driver(V2 + FRAMEWORKS + extra, **lookups)  # type: ignore[no-any-return]


KINDS = pytest.mark.parametrize("kind", list(ray.KINDS.values()), ids=lambda k_: k_.name)


# --- defaulting -----------------------------------------------------------------------------------


@KINDS
@pytest.mark.parametrize(
    ("manage_all", "labels", "want_suspend"),
    [
        pytest.param(False, None, False, id="unmanaged"),
        pytest.param(True, None, True, id="managed - by config"),
        pytest.param(False, {Q: "queue"}, True, id="managed - by queue"),
    ],
)
def test_default(make_driver: Any, kind: ray.Kind, manage_all: bool, labels: Any, want_suspend: bool) -> None:
    d = _driver(make_driver, f"manageJobsWithoutQueueName: {str(manage_all).lower()}\n")
    obj = make(kind, labels=labels, suspend=False)
    out = d.mutate(_path(obj, mutating=True), obj)
    assert ray.is_suspended(out, kind) is want_suspend


@KINDS
@pytest.mark.parametrize(
    ("default_lq", "labels", "want_queue"),
    [
        pytest.param(True, None, "default", id="default lq is created, job doesn't have queue label"),
        pytest.param(True, {Q: "queue"}, "queue", id="default lq is created, job has queue label"),
        pytest.param(False, None, None, id="default lq isn't created, job doesn't have queue label"),
    ],
)
def test_default_local_queue(make_driver: Any, kind: ray.Kind, default_lq: bool, labels: Any, want_queue: Any) -> None:
    d = _driver(make_driver, local_queues=frozenset({("ns", "default")} if default_lq else ()))
    obj = make(kind, labels=labels, suspend=False)
    out = d.mutate(_path(obj, mutating=True), obj)
    assert (out["metadata"].get("labels") or {}).get(Q) == want_queue
    assert ray.is_suspended(out, kind) is (want_queue is not None)


@pytest.mark.parametrize("kind", [ray.RAYCLUSTER, ray.RAYSERVICE], ids=lambda k_: k_.name)
def test_an_elastic_clusters_templates_are_gated_once(make_driver: Any, kind: ray.Kind) -> None:
    """`Default`'s `GateTemplate` on the head and every worker group, not twice."""
    d = _driver(make_driver, "featureGates: {ElasticJobsViaWorkloadSlices: true}\n")
    obj = make(kind, labels={Q: "q"}, annotations={ELASTIC: "true"}, groups=[_group("a"), _group("b")])
    cluster_of(obj)["workerGroupSpecs"][1]["template"]["spec"]["schedulingGates"] = [GATE]
    out = cluster_of(d.mutate(_path(obj, mutating=True), obj))
    assert out["headGroupSpec"]["template"]["spec"]["schedulingGates"] == [GATE]
    assert [g["template"]["spec"]["schedulingGates"] for g in out["workerGroupSpecs"]] == [[GATE], [GATE]]


def test_an_elastic_rayjob_is_not_gated(make_driver: Any) -> None:
    d = _driver(make_driver, "featureGates: {ElasticJobsViaWorkloadSlices: true}\n")
    obj = make(ray.RAYJOB, labels={Q: "q"}, annotations={ELASTIC: "true"})
    assert d.mutate(_path(obj, mutating=True), obj) == obj


# --- validation on create -----------------------------------------------------------------------------

AUTOSCALER_MSG = (
    "a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the "
    'ElasticJobsViaWorkloadSlices feature gate and set the "kueue.x-k8s.io/elastic-job": "true" annotation'
)


def _many_groups(n: int = 18) -> list[dict[str, Any]]:
    """`MakeWorkerGroups(n)`."""
    return [_group(f"group{i}") for i in range(n)]


def _with(obj: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    cluster_of(out).update(cluster)
    return out


@pytest.mark.parametrize(
    ("obj", "gates", "want"),
    [
        pytest.param(make(ray.RAYCLUSTER), "", None, id="invalid unmanaged"),
        pytest.param(
            _with(make(ray.RAYCLUSTER, labels={Q: "queue"}), enableInTreeAutoscaling=True),
            "",
            f"spec.enableInTreeAutoscaling: Invalid value: true: {AUTOSCALER_MSG}",
            id="invalid managed - has auto scaler",
        ),
        pytest.param(
            _with(
                make(ray.RAYCLUSTER, labels={Q: "queue"}, annotations={ELASTIC: "true"}),
                enableInTreeAutoscaling=True,
                managedBy="kueue.x-k8s.io/multikueue",
                headGroupSpec={"template": {"spec": {"containers": [{"name": "h"}], "schedulingGates": [GATE]}}},
                workerGroupSpecs=[
                    {**_group(), "template": {"spec": {"containers": [{"name": "w"}], "schedulingGates": [GATE]}}}
                ],
            ),
            "ElasticJobsViaWorkloadSlices: true",
            "spec.enableInTreeAutoscaling: Forbidden: in-tree autoscaling is not supported for a MultiKueue-managed "
            "elastic RayCluster",
            id="invalid managed - elastic MultiKueue job with auto scaler",
        ),
        pytest.param(
            _with(
                make(ray.RAYCLUSTER, labels={Q: "queue"}, annotations={ELASTIC: "true"}),
                headGroupSpec={"template": {"spec": {"containers": [{"name": "h"}], "schedulingGates": [GATE]}}},
                workerGroupSpecs=[
                    {**_group(), "template": {"spec": {"containers": [{"name": "w"}], "schedulingGates": [GATE]}}}
                ],
            ),
            "ElasticJobsViaWorkloadSlices: true",
            None,
            id="valid managed - elastic job with the gates",
        ),
        pytest.param(
            make(ray.RAYCLUSTER, labels={Q: "queue"}, annotations={ELASTIC: "true"}),
            "ElasticJobsViaWorkloadSlices: true",
            "[spec.workerGroupSpecs[0].template.spec.schedulingGates: Invalid value: null: an elastic job must have "
            "the ElasticJobSchedulingGate, spec.headGroupSpec.template.spec.schedulingGates: Invalid value: null: "
            "an elastic job must have the ElasticJobSchedulingGate]",
            id="invalid managed - elastic job without the gates",
        ),
        pytest.param(
            make(ray.RAYCLUSTER, labels={Q: "queue"}, groups=_many_groups()),
            "",
            "spec.workerGroupSpecs: Too many: 19: must have at most 18 items",
            id="invalid managed - too many worker groups",
        ),
        pytest.param(
            make(ray.RAYCLUSTER, labels={Q: "queue"}, groups=[{"groupName": "head"}]),
            "",
            'spec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group',
            id="worker group uses head name",
        ),
        pytest.param(
            {**make(ray.RAYJOB, labels={Q: "queue"}), "spec": {"shutdownAfterJobFinishes": True, "suspend": True}},
            "",
            "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't use "
            "clusterSelector",
            id="RayJob invalid managed - no cluster selector and no RayClusterSpec",
        ),
        pytest.param(
            {**make(ray.RAYJOB), "spec": {**make(ray.RAYJOB)["spec"], "shutdownAfterJobFinishes": False}},
            "",
            None,
            id="RayJob invalid unmanaged",
        ),
        pytest.param(
            {**make(ray.RAYJOB), "spec": {**make(ray.RAYJOB)["spec"], "shutdownAfterJobFinishes": False}},
            "manageJobsWithoutQueueName: true",
            "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after "
            "finishing",
            id="RayJob invalid managed - by config",
        ),
        pytest.param(
            {
                **make(ray.RAYJOB, labels={Q: "queue"}),
                "spec": {**make(ray.RAYJOB)["spec"], "clusterSelector": {"k1": "v1"}},
            },
            "",
            'spec.clusterSelector: Invalid value: {"k1":"v1"}: a kueue managed job should not use an existing cluster',
            id="RayJob invalid managed - has cluster selector and RayClusterSpec",
        ),
        pytest.param(
            {
                **make(ray.RAYJOB, labels={Q: "queue", PREBUILT: "Not A Name"}),
                "spec": {"clusterSelector": {"k1": "v1"}, "shutdownAfterJobFinishes": False},
            },
            "",
            None,
            id="RayJob on an existing cluster is left alone",
        ),
        pytest.param(
            make(ray.RAYJOB, labels={Q: "queue"}, groups=_many_groups()),
            "",
            "spec.rayClusterSpec.workerGroupSpecs: Too many: 19: must have at most 18 items",
            id="RayJob invalid managed - too many worker groups",
        ),
        pytest.param(
            make(ray.RAYJOB, labels={Q: "queue"}, groups=_many_groups(7)),
            "",
            None,
            id="RayJob valid managed - max worker groups with gcs fault tolerance",
        ),
        pytest.param(
            make(ray.RAYJOB, labels={Q: "queue"}, groups=[{"groupName": "head"}]),
            "",
            'spec.rayClusterSpec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group',
            id="RayJob worker group uses head name",
        ),
        pytest.param(
            _with(make(ray.RAYSERVICE, labels={Q: "queue"}), enableInTreeAutoscaling=True),
            "",
            "spec.rayClusterConfig.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use "
            "autoscaling when workload slicing is enabled",
            id="RayService autoscaling enabled without workload slicing",
        ),
        pytest.param(
            _with(
                make(ray.RAYSERVICE, labels={Q: "queue"}, groups=[{"groupName": "head"}, *_many_groups()]),
                enableInTreeAutoscaling=True,
            ),
            "",
            "[spec.rayClusterConfig.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use "
            "autoscaling when workload slicing is enabled, spec.rayClusterConfig.workerGroupSpecs: Too many: 20: must "
            'have at most 18 items, spec.rayClusterConfig.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved '
            "for the head group]",
            id="RayService multiple errors",
        ),
        pytest.param(
            _with(make(ray.RAYJOB, labels={Q: "queue"}, annotations={ELASTIC: "true"}), enableInTreeAutoscaling=True),
            "ElasticJobsViaWorkloadSlices: true",
            "spec.rayClusterSpec.enableInTreeAutoscaling: Forbidden: in-tree autoscaling of an elastic RayJob is not "
            "implemented by pykueue (an elastic RayCluster may autoscale)",
            id="RayJob elastic with auto scaler is refused (upstream admits it)",
        ),
        pytest.param(
            make(ray.RAYCLUSTER, labels={Q: "q"}, annotations={ELASTIC: "true"}),
            "ElasticJobsViaWorkloadSlices: false",
            None,
            id="the elastic annotation means nothing without the gate",
        ),
    ],
)
def test_validate_create(make_driver: Any, obj: dict[str, Any], gates: str, want: str | None) -> None:
    extra = ""
    if gates.startswith("manage"):
        extra = gates + "\n"
    elif gates:
        extra = f"featureGates: {{{gates}}}\n"
    d = _driver(make_driver, extra)
    assert d.denial(_path(obj, mutating=False), obj) == want


def test_rayjob_gcs_fault_tolerance_with_the_most_worker_groups_is_valid(rd: Driver) -> None:
    """Upstream's "valid managed - max worker groups with gcs fault tolerance": the head's Redis
    cleanup requests make no podSet of their own."""
    obj = make(ray.RAYJOB, labels={Q: "queue"}, groups=_many_groups(7))
    cluster_of(obj)["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    assert rd.denial(_path(obj, mutating=False), obj) is None


@KINDS
def test_topology_request_of_a_worker_group_is_validated(make_driver: Any, kind: ray.Kind) -> None:
    """ "invalid slice topology request - slice size larger than number of podsets", per kind."""
    obj = make(kind, labels={Q: "queue"}, groups=[_group(replicas=1)])
    cluster_of(obj)["workerGroupSpecs"][0]["template"]["metadata"] = {
        "annotations": {REQUIRED: "cloud.com/block", SLICE_TOPOLOGY: "cloud.com/rack", SLICE_SIZE: "20"}
    }
    base = ".".join(kind.cluster_spec_path)
    want = (
        f'{base}.workerGroupSpecs[0].template.metadata.annotations[{SLICE_SIZE}]: Invalid value: "20": '
        "must not be greater than pod set count 1"
    )
    assert _driver(make_driver).denial(_path(obj, mutating=False), obj) == want


# --- validation on update -----------------------------------------------------------------------------


def _rc(queue: str | None = "queue", *, suspend: bool = True, **labels: str) -> dict[str, Any]:
    lab = dict(labels)
    if queue is not None:
        lab[Q] = queue
    return make(ray.RAYCLUSTER, labels=lab, suspend=suspend)


@pytest.mark.parametrize(
    ("old", "new", "extra", "default_lq", "want"),
    [
        pytest.param(_rc(None), _rc(None), "", False, None, id="invalid unmanaged"),
        pytest.param(
            _rc(suspend=False),
            _rc(suspend=False, **{"test-label": "test-value"}),
            "",
            False,
            None,
            id="queue name unchanged while unsuspended",
        ),
        pytest.param(
            _rc(suspend=False),
            _rc("queue2", suspend=False),
            "",
            False,
            f'metadata.labels[{Q}]: Invalid value: "queue2": field is immutable',
            id="invalid managed - queue name should not change while unsuspended",
        ),
        pytest.param(_rc(), _rc("queue2"), "", False, None, id="managed - queue name can change while suspended"),
        pytest.param(
            _rc(suspend=False),
            _rc(None, suspend=False),
            "ValidateRayAndSparkJobUpdates: true",
            False,
            f'metadata.labels[{Q}]: Invalid value: "": field is immutable',
            id="queue name removal is rejected when the job is unsuspended and ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            _rc(suspend=False),
            _rc(None, suspend=False),
            "ValidateRayAndSparkJobUpdates: false",
            False,
            None,
            id="queue name removal is allowed when the job is unsuspended and ValidateRayAndSparkJobUpdates is disabled",
        ),
        pytest.param(
            _rc("default"),
            _rc(None),
            "ValidateRayAndSparkJobUpdates: true",
            True,
            f'metadata.labels[{Q}]: Invalid value: "": queue-name must not be empty in namespace with default queue',
            id="queue name removal is rejected when the job is suspended in a namespace with a default queue and "
            "ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            _rc("default"),
            _rc(None),
            "ValidateRayAndSparkJobUpdates: false",
            True,
            None,
            id="queue name removal is allowed when the job is suspended in a namespace with a default queue and "
            "ValidateRayAndSparkJobUpdates is disabled",
        ),
        pytest.param(
            _rc(),
            _rc(None),
            "ValidateRayAndSparkJobUpdates: true",
            False,
            None,
            id="queue name removal is allowed when the job is suspended in a namespace without a default queue and "
            "ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            _rc(None, suspend=False, **{PREBUILT: "wl1"}),
            _rc(None, suspend=False, **{PREBUILT: "wl2"}),
            "ValidateRayAndSparkJobUpdates: true",
            False,
            None,
            id="prebuilt workload name change is not validated when the job is unmanaged and "
            "ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            _rc(**{WPC: "test-1"}),
            _rc(**{WPC: "test-2"}),
            "",
            False,
            None,
            id="priorityClassName is mutable",
        ),
    ],
)
def test_validate_update(
    make_driver: Any, old: dict[str, Any], new: dict[str, Any], extra: str, default_lq: bool, want: str | None
) -> None:
    d = _driver(
        make_driver,
        f"featureGates: {{{extra}}}\n" if extra else "",
        local_queues=frozenset({("ns", "default")} if default_lq else ()),
    )
    assert d.denial(_path(new, mutating=False), new, old=old) == want


def test_rayjob_update_of_a_managed_job_runs_the_create_checks(rd: Driver) -> None:
    """RayJob's "invalid new managed - by queue"."""
    old = make(ray.RAYJOB, labels={Q: "queue"})
    new = copy.deepcopy(old)
    new["spec"]["shutdownAfterJobFinishes"] = False
    want = "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing"
    assert rd.denial(_path(new, mutating=False), new, old=old) == want
