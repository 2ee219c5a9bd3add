"""The training-operator webhooks (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob) through the ASGI
app: suspension, defaults, upstream's denial messages.

Upstream v0.19.2 serves these kinds with `jobframework.BaseWebhook`; translated here, keeping the
case names: `TestBaseWebhookDefault` (`pkg/controller/jobframework/base_webhook_test.go`) where it
needs no MultiKueue (not implemented), the request-only parts of its `TestValidateOnCreate` and
`TestValidateOnUpdate` (their other parts mock a custom validation), and each kind's `TestValidate`
(`pkg/controller/jobs/kubeflow/jobs/*/*_controller_test.go`, the TAS checks of the replica
templates). The rest pins the shared job checks as these kinds meet them.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest

from webhook.api import kubeflow as kf
from webhook.config import Configuration, Integrations

from .reviews import Driver, apply_patch, multikueue_lookups

Q = "kueue.x-k8s.io/queue-name"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
MAX_EXEC = "kueue.x-k8s.io/max-exec-time-seconds"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TRAINING_KINDS = (kf.PYTORCHJOB, kf.TFJOB, kf.XGBOOSTJOB, kf.PADDLEJOB, kf.JAXJOB)
ALL_FRAMEWORKS = ", ".join(k_.framework.name for k_ in TRAINING_KINDS)
ENABLED = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
ENABLED += f"integrations: {{frameworks: [batch/job, {ALL_FRAMEWORKS}]}}\n"
DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _types(kind: kf.Kind) -> tuple[str, ...]:
    """The replica types `Make<Kind>(...).<Kind>ReplicaSpecsDefault()` sets."""
    return {"TFJob": ("Chief", "PS", "Worker"), "JAXJob": ("Worker",)}.get(kind.name, ("Master", "Worker"))


def make_job(
    kind: kf.Kind = kf.PYTORCHJOB,
    *,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    suspend: bool | None = None,
    pod_annotations: dict[str, dict[str, str]] | None = None,
    managed_by: str | None = None,
) -> dict[str, Any]:
    """A job of `kind` with its default replica types of one pod each (`suspend` None: unset)."""
    meta: dict[str, Any] = {"name": "job", "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    specs: dict[str, Any] = {}
    for t in _types(kind):
        template: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        if pod_annotations and t in pod_annotations:
            template["metadata"] = {"annotations": dict(pod_annotations[t])}
        specs[t] = {"replicas": 1, "template": template}
    run_policy: dict[str, Any] = {}
    if suspend is not None:
        run_policy["suspend"] = suspend
    if managed_by is not None:
        run_policy["managedBy"] = managed_by
    spec: dict[str, Any] = {kind.replica_specs_field: specs}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": kind.framework.api_version, "kind": kind.name, "metadata": meta, "spec": spec}


def job_review(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> dict[str, Any]:
    framework = kf.kind_of(obj).framework
    meta = obj["metadata"]
    request: dict[str, Any] = {
        "uid": "u1",
        "kind": {"group": framework.group, "version": framework.version, "kind": framework.kind},
        "resource": {"group": framework.group, "version": framework.version, "resource": framework.resource},
        "operation": "UPDATE" if old is not None else "CREATE",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "object": obj,
    }
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _path(obj: dict[str, Any], verb: str) -> str:
    return kf.kind_of(obj).framework.webhook_path(mutating=verb == "mutate")


def mutated(d: Driver, obj: dict[str, Any]) -> dict[str, Any]:
    """The object after our patch (asserts the review was allowed)."""
    response = d.send(_path(obj, "mutate"), job_review(obj))
    assert response["allowed"], response
    ops = orjson.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(obj, ops)


def denial(d: Driver, obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> str | None:
    response = d.send(_path(obj, "validate"), job_review(obj, old=old))
    if response["allowed"]:
        return None
    assert response["status"]["code"] == 403
    return str(response["status"]["message"])


def suspended_of(obj: dict[str, Any]) -> bool:
    return bool((obj["spec"].get("runPolicy") or {}).get("suspend"))


@pytest.fixture
def kf_driver(make_driver: Any) -> Driver:
    return make_driver(ENABLED)  # type: ignore[no-any-return]


# --- defaulting: upstream's TestBaseWebhookDefault ------------------------------------------------------


@pytest.mark.parametrize("kind", TRAINING_KINDS, ids=lambda k_: k_.name)
@pytest.mark.parametrize(
    "manage_all",
    [
        pytest.param(False, id="update the suspend field with 'manageJobsWithoutQueueName=false'"),
        pytest.param(True, id="update the suspend field 'manageJobsWithoutQueueName=true'"),
    ],
)
def test_queued_job_is_suspended(make_driver: Any, kind: kf.Kind, manage_all: bool) -> None:
    d = make_driver(ENABLED + f"manageJobsWithoutQueueName: {str(manage_all).lower()}\n")
    out = mutated(d, make_job(kind, labels={Q: "queue"}))
    assert out["spec"]["runPolicy"] == {"suspend": True}
    assert out["spec"][kind.replica_specs_field] == make_job(kind)["spec"][kind.replica_specs_field]


@pytest.mark.parametrize(
    ("default_lq", "labels", "want_queue"),
    [
        pytest.param(True, None, "default", id="default lq is created, job doesn't have queue label"),
        pytest.param(True, {Q: "queue"}, "queue", id="default lq is created, job has queue label"),
        pytest.param(False, None, None, id="default lq isn't created, job doesn't have queue label"),
    ],
)
def test_default_local_queue(
    make_driver: Any, default_lq: bool, labels: dict[str, str] | None, want_queue: str | None
) -> None:
    d = make_driver(ENABLED, local_queues=frozenset({("default", "default")} if default_lq else ()))
    out = mutated(d, make_job(labels=labels))
    assert (out["metadata"].get("labels") or {}).get(Q) == want_queue
    assert suspended_of(out) is (want_queue is not None)


@pytest.mark.parametrize(
    "managed_by",
    [
        pytest.param(None, id="ManagedByDefaulting, targeting non-multikueue local queue"),
        pytest.param(
            "someone-else",
            id="ManagedByDefaulting, targeting multikueue local queue but already managaed by someone else",
        ),
    ],
)
def test_managed_by_is_kept_without_a_multikueue_check(make_driver: Any, managed_by: str | None) -> None:
    d = make_driver(ENABLED, local_queues=frozenset({("default", "queue")}))
    out = mutated(d, make_job(labels={Q: "queue"}, managed_by=managed_by))
    assert out["spec"]["runPolicy"].get("managedBy") == managed_by
    assert suspended_of(out)


def test_job_in_unmanaged_namespace_with_default_lq_should_not_get_queue_label_or_be_suspended(
    make_driver: Any,
) -> None:
    """Upstream's "job in unmanaged namespace with default lq should not get queue label or be
    suspended" (our Configuration also refuses a selector matching kube-system or kueue-system)."""
    selector = "managedJobsNamespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [unmanaged-ns, kube-system, kueue-system]}]}\n"
    d = make_driver(
        ENABLED + selector,
        local_queues=frozenset({("unmanaged-ns", "default")}),
        namespaces={"unmanaged-ns": {"kubernetes.io/metadata.name": "unmanaged-ns"}},
    )
    job = make_job(ns="unmanaged-ns")
    assert mutated(d, job) == job


def test_suspended_job_gets_no_patch(kf_driver: Driver) -> None:
    obj = make_job(kf.TFJOB, labels={Q: "q"}, suspend=True)
    response = kf_driver.send(_path(obj, "mutate"), job_review(obj))
    assert response["allowed"] and "patch" not in response


def test_job_without_queue_is_untouched(kf_driver: Driver) -> None:
    obj = make_job(kf.XGBOOSTJOB)
    response = kf_driver.send(_path(obj, "mutate"), job_review(obj))
    assert response["allowed"] and "patch" not in response


def test_job_of_a_managed_owner_is_not_suspended(make_driver: Any) -> None:
    """A PyTorchJob whose controller is a managed batch/v1 Job: the owner's Workload holds the quota."""
    parent = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "parent", "namespace": "default", "uid": "p-uid", "labels": {Q: "lq"}},
    }
    child = make_job(labels={Q: "lq"})
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "parent", "uid": "p-uid", "controller": True}
    ]
    d = make_driver(ENABLED, owners={("default", "batch/v1", "Job", "parent"): parent})
    assert "runPolicy" not in mutated(d, child)["spec"]


def test_disabled_integration_is_not_defaulted(driver: Driver) -> None:
    """The default Configuration enables batch/job only: these webhooks answer without a patch."""
    obj = make_job(labels={Q: "lq"})
    response = driver.send(_path(obj, "mutate"), job_review(obj))
    assert response["allowed"] and "patch" not in response


# --- validation -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", TRAINING_KINDS, ids=lambda k_: k_.name)
@pytest.mark.parametrize(
    "pod_annotations",
    [
        pytest.param(None, id="no annotations"),
        pytest.param(
            {"first": {REQUIRED: "cloud.com/rack"}, "last": {PREFERRED: "cloud.com/block"}}, id="valid TAS request"
        ),
    ],
)
def test_validate(kf_driver: Driver, kind: kf.Kind, pod_annotations: dict[str, Any] | None) -> None:
    """Each kind's `TestValidate` cases without errors (TopologyAwareScheduling on, as by default),
    on create and on update."""
    types = _types(kind)
    by_type = (
        None if pod_annotations is None else {types[0]: pod_annotations["first"], types[-1]: pod_annotations["last"]}
    )
    d = kf_driver
    obj = make_job(kind, pod_annotations=by_type)
    assert denial(d, obj) is None
    assert denial(d, obj, old=obj) is None


SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
ONE_OF = (
    'must not contain more than one topology annotation: ["kueue.x-k8s.io/podset-required-topology", '
    '"kueue.x-k8s.io/podset-preferred-topology", "kueue.x-k8s.io/podset-unconstrained-topology"]'
)
BOTH = {REQUIRED: "cloud.com/rack", PREFERRED: "cloud.com/block"}


def job_with(kind: kf.Kind, *rows: tuple[str, int, dict[str, str]]) -> dict[str, Any]:
    """`<Kind>ReplicaSpecs({ReplicaType, ReplicaCount, Annotations}...)`."""
    obj = make_job(kind)
    obj["spec"][kind.replica_specs_field] = {
        t: {"replicas": n, "template": {"metadata": {"annotations": dict(a)}, "spec": {"containers": [{"name": "c"}]}}}
        for t, n, a in rows
    }
    return obj


def _ann_path(kind: kf.Kind, replica_type: str) -> str:
    return f"spec.{kind.replica_specs_field}[{replica_type}].template.metadata.annotations"


def _sliced(topology: str, size: int) -> dict[str, str]:
    return {REQUIRED: topology, SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: str(size)}


def _too_big(kind: kf.Kind, *rows: tuple[str, int, int]) -> str:
    errs = [
        f'{_ann_path(kind, t)}[{SLICE_SIZE}]: Invalid value: "{size}": must not be greater than pod set count {n}'
        for t, n, size in rows
    ]
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


def _one_of(kind: kf.Kind, *types: str) -> str:
    errs = [f"{_ann_path(kind, t)}: Invalid value: {ONE_OF}" for t in types]
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


INVALID_TAS_CASES = [
    *(
        case
        for kind in (kf.PYTORCHJOB, kf.XGBOOSTJOB, kf.PADDLEJOB)
        for case in (
            pytest.param(
                job_with(kind, ("Master", 1, BOTH), ("Worker", 3, BOTH)),
                _one_of(kind, "Master", "Worker"),
                id=f"{kind.name}: invalid TAS request",
            ),
            pytest.param(
                job_with(
                    kind, ("Master", 5, _sliced("cloud.com/rack", 10)), ("Worker", 10, _sliced("cloud.com/rack", 20))
                ),
                _too_big(kind, ("Master", 5, 10), ("Worker", 10, 20)),
                id=f"{kind.name}: invalid slice topology request - slice size larger than number of podsets",
            ),
        )
    ),
    pytest.param(
        job_with(kf.TFJOB, ("Chief", 1, BOTH), ("PS", 1, BOTH), ("Worker", 1, {REQUIRED: "cloud.com/rack"})),
        _one_of(kf.TFJOB, "Chief", "PS"),
        id="TFJob: invalid TAS request",
    ),
    pytest.param(
        job_with(
            kf.TFJOB,
            ("Chief", 3, _sliced("cloud.com/rack", 5)),
            ("PS", 5, _sliced("cloud.com/rack", 10)),
            ("Worker", 10, _sliced("cloud.com/rack", 20)),
        ),
        _too_big(kf.TFJOB, ("Chief", 3, 5), ("PS", 5, 10), ("Worker", 10, 20)),
        id="TFJob: invalid slice topology request - slice size larger than number of podsets",
    ),
    pytest.param(
        job_with(kf.JAXJOB, ("Worker", 3, BOTH)), _one_of(kf.JAXJOB, "Worker"), id="JAXJob: invalid TAS request"
    ),
    pytest.param(
        job_with(kf.JAXJOB, ("Worker", 3, _sliced("cloud.com/block", 20))),
        _too_big(kf.JAXJOB, ("Worker", 3, 20)),
        id="JAXJob: invalid slice topology request - slice size larger than number of podsets",
    ),
]


@pytest.mark.parametrize(("obj", "message"), INVALID_TAS_CASES)
def test_validate_invalid_tas(kf_driver: Driver, obj: dict[str, Any], message: str) -> None:
    """Each kind's `TestValidate` cases with errors (`ValidateOnCreate`, and `ValidateOnUpdate`
    the same), TopologyAwareScheduling on as by default."""
    assert denial(kf_driver, obj) == message
    assert denial(kf_driver, obj, old=obj) == message


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        pytest.param(
            {REQUIRED: "cloud.com/rack", "kueue.x-k8s.io/podset-group-name": "7"},
            'spec.pytorchReplicaSpecs[Master].template.metadata.annotations[kueue.x-k8s.io/podset-group-name]: Invalid value: "7": must not be a number',
            id="a group name that is a number",
        ),
        pytest.param(
            {SLICE_SIZE: "0", SLICE_REQUIRED: "cloud.com/block"},
            'spec.pytorchReplicaSpecs[Master].template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]: Invalid value: "0": must be greater than or equal to 1',
            id="a slice size below 1",
        ),
        pytest.param(
            {SLICE_REQUIRED: "cloud.com/block"},
            f"spec.pytorchReplicaSpecs[Master].template.metadata.annotations[{SLICE_SIZE}]: Required value: must be set when '{SLICE_REQUIRED}' is specified",
            id="a slice topology without a size",
        ),
        pytest.param(
            {"kueue.x-k8s.io/podset-unconstrained-topology": "maybe"},
            'spec.pytorchReplicaSpecs[Master].template.metadata.annotations[kueue.x-k8s.io/podset-unconstrained-topology]: Invalid value: "maybe": must be a boolean value',
            id="an unconstrained flag that is not a boolean",
        ),
    ],
)
def test_tas_annotation_rules(kf_driver: Driver, annotations: dict[str, str], message: str) -> None:
    """`ValidateTASPodSetRequest`'s other rules, as a PyTorchJob meets them."""
    assert denial(kf_driver, job_with(kf.PYTORCHJOB, ("Master", 1, annotations), ("Worker", 1, {}))) == message


def test_tas_checks_need_the_gate(make_driver: Any) -> None:
    config = Configuration(
        integrations=Integrations(frameworks=("kubeflow.org/pytorchjob",)),
        feature_gates={"TopologyAwareScheduling": False},
    )
    assert denial(make_driver(config), job_with(kf.PYTORCHJOB, ("Master", 1, BOTH), ("Worker", 3, BOTH))) is None


CREATE_CASES = [
    pytest.param(make_job(labels={Q: "queue"}), None, id="valid request"),
    pytest.param(
        make_job(labels={MAX_EXEC: "0"}),
        f"metadata.labels[{MAX_EXEC}]: Invalid value: 0: should be greater than 0",
        id="invalid request (without the mocked custom validation)",
    ),
    pytest.param(
        make_job(kf.TFJOB, labels={Q: "queue_name"}),
        f'metadata.labels[{Q}]: Invalid value: "queue_name": {DNS_MSG}',
        id="invalid queue-name label",
    ),
    pytest.param(make_job(kf.PADDLEJOB, labels={Q: "queue", PREBUILT: "prebuilt"}), None, id="with prebuilt workload"),
    pytest.param(
        make_job(kf.JAXJOB, labels={Q: "queue", PREBUILT: "prebuilt"}),
        f'metadata.labels[{PREBUILT}]: Forbidden: Is not supported for "kubeflow.org/v1, Kind=JAXJob"',
        id="a JAXJob may not name a prebuilt workload",
    ),
    pytest.param(
        make_job(kf.XGBOOSTJOB, annotations={"kueue.x-k8s.io/admission-gated-by": "nodomain"}),
        'metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "nodomain": '
        'must be a domain-prefixed path (such as "acme.io/foo")',
        id="admission gated by not a path",
    ),
]


@pytest.mark.parametrize(("obj", "message"), CREATE_CASES)
def test_validate_create(make_driver: Any, obj: dict[str, Any], message: str | None) -> None:
    """`BaseWebhook.ValidateCreate`: `ValidateJobOnCreate`."""
    assert denial(make_driver(ENABLED + "featureGates: {AdmissionGatedBy: true}\n"), obj) == message


def test_elastic_annotation_is_forbidden(make_driver: Any) -> None:
    d = make_driver(ENABLED + "featureGates: {ElasticJobsViaWorkloadSlices: true}\n")
    obj = make_job(kf.PYTORCHJOB, labels={Q: "q"}, annotations={"kueue.x-k8s.io/elastic-job": "true"})
    assert denial(d, obj) == (
        "metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: "
        'elastic job is not supported for "kubeflow.org/v1, Kind=PyTorchJob"'
    )


def running(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"].setdefault("runPolicy", {})["suspend"] = False
    return out


def suspended(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"].setdefault("runPolicy", {})["suspend"] = True
    return out


UPDATE_CASES = [
    pytest.param(make_job(labels={Q: "queue"}), make_job(labels={Q: "queue"}), None, id="valid request"),
    pytest.param(
        make_job(labels={Q: "queue"}),
        running(make_job(labels={Q: "changed"})),
        f'metadata.labels[{Q}]: Invalid value: "changed": field is immutable',
        id="invalid request (without the mocked custom validation)",
    ),
    pytest.param(
        suspended(make_job(kf.TFJOB, labels={Q: "a"})),
        running(make_job(kf.TFJOB, labels={Q: "b"})),
        f'metadata.labels[{Q}]: Invalid value: "b": field is immutable',
        id="queue name immutable when resumed with it",
    ),
    pytest.param(
        running(make_job(kf.JAXJOB, labels={Q: "a"})),
        suspended(make_job(kf.JAXJOB, labels={Q: "b"})),
        None,
        id="queue name may change while being suspended",
    ),
    pytest.param(
        suspended(make_job(kf.PADDLEJOB, labels={Q: "a"})),
        suspended(make_job(kf.PADDLEJOB, labels={Q: "b_c"})),
        None,
        id="the create checks do not run on update (BaseWebhook)",
    ),
    pytest.param(
        running(make_job(labels={Q: "a"})),
        running(make_job(labels={Q: "a", "kueue.x-k8s.io/priority-class": "high"})),
        'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": '
        "WorkloadPriorityClass cannot be added to a non-suspended workload",
        id="priority class added while running",
    ),
    pytest.param(
        running(make_job(labels={Q: "a", PREBUILT: "wl-a"})),
        running(make_job(labels={Q: "a", PREBUILT: "wl-b"})),
        f'metadata.labels[{PREBUILT}]: Invalid value: "wl-b": field is immutable',
        id="prebuilt workload immutable while running",
    ),
    pytest.param(
        suspended(make_job(kf.JAXJOB, labels={Q: "a"})),
        suspended(make_job(kf.JAXJOB, labels={Q: "a", PREBUILT: "wl"})),
        f'metadata.labels[{PREBUILT}]: Forbidden: Is not supported for "kubeflow.org/v1, Kind=JAXJob"',
        id="a suspended JAXJob may not name a prebuilt workload",
    ),
    pytest.param(
        suspended(make_job(labels={MAX_EXEC: "10"})),
        running(make_job(labels={MAX_EXEC: "20"})),
        f'metadata.labels[{MAX_EXEC}]: Invalid value: "20": field is immutable',
        id="max exec immutable unless both suspended",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), UPDATE_CASES)
def test_validate_update(kf_driver: Driver, old: dict[str, Any], new: dict[str, Any], message: str | None) -> None:
    """`BaseWebhook.ValidateUpdate`: `ValidateJobOnUpdate` only."""
    assert denial(kf_driver, new, old=old) == message


def test_queue_name_must_not_be_removed_with_default_queue(make_driver: Any) -> None:
    d = make_driver(ENABLED, local_queues=frozenset({("default", "default")}))
    assert denial(d, suspended(make_job()), old=suspended(make_job(labels={Q: "a"}))) == (
        f'metadata.labels[{Q}]: Invalid value: "": queue-name must not be empty in namespace with default queue'
    )


def test_disabled_integration_allows_everything(driver: Driver) -> None:
    assert denial(driver, make_job(labels={Q: "Bad_Name"})) is None


def test_queue_warnings_name_the_missing_queue(kf_driver: Driver) -> None:
    """Our submit-time warning (not upstream's): the LocalQueue named does not exist."""
    obj = make_job(kf.TFJOB, labels={Q: "missing"})
    response = kf_driver.send(_path(obj, "validate"), job_review(obj))
    assert response["allowed"]
    assert any("missing" in w for w in response.get("warnings", ())), response


@pytest.mark.parametrize("kind", TRAINING_KINDS, ids=lambda k_: k_.name)
def test_a_quantity_go_cannot_decode_is_an_error(kf_driver: Driver, kind: kf.Kind) -> None:
    """The CRDs check quantities only against a pattern; upstream's webhook cannot decode `1e1.5`
    and answers 400, and our informers set such a job aside (`quantity_fields`)."""
    obj = make_job(kind, labels={Q: "q"})
    replica_type = _types(kind)[-1]
    ctr = obj["spec"][kind.replica_specs_field][replica_type]["template"]["spec"]["containers"][0]
    ctr["resources"] = {"requests": {"cpu": "1e1.5"}}
    for verb in ("mutate", "validate"):
        response = kf_driver.send(_path(obj, verb), job_review(obj))
        assert not response["allowed"] and response["status"]["code"] == 400, response
        assert response["status"]["message"].startswith("quantities must match the regular expression")


@pytest.mark.parametrize("kind", TRAINING_KINDS, ids=lambda k: k.name)
@pytest.mark.parametrize(
    ("managed_by", "want"),
    [
        pytest.param(None, "kueue.x-k8s.io/multikueue", id="unset"),
        pytest.param("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue", id="the operator's own"),
        pytest.param("example.com/foo", "example.com/foo", id="another controller's: kept"),
    ],
)
def test_managed_by_is_defaulted_for_a_multikueue_cluster_queue(
    make_driver: Any, kind: kf.Kind, managed_by: str | None, want: str
) -> None:
    """`BaseWebhook.Default` ends with `ApplyDefaultForManagedBy` (`KubeflowJob.CanDefaultManagedBy`):
    `spec.runPolicy.managedBy`, for a queue whose ClusterQueue has a MultiKueue check."""
    d = make_driver(ENABLED, **multikueue_lookups("default", "queue"))
    out = mutated(d, make_job(kind, labels={Q: "queue"}, managed_by=managed_by))
    assert out["spec"]["runPolicy"]["managedBy"] == want
    assert out["spec"]["runPolicy"]["suspend"] is True
