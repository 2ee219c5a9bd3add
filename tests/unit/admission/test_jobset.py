"""JobSet webhooks through the ASGI app: suspension, defaults, upstream's denial messages.

Upstream's `pkg/controller/jobs/jobset/jobset_webhook_test.go` (v0.19.2) translated: its
`TestValidateCreate` and `TestValidateUpdate` cases (queue name, prebuilt Workload, the
TopologyAwareScheduling checks), and its `TestDefault` default-LocalQueue and managedBy cases.
The rest pins the shared job checks (`ValidateJobOnCreate`, `ValidateJobOnUpdate`) as a JobSet
meets them.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest

from webhook.config import Configuration, Integrations

from .reviews import Driver, apply_patch, review

MUTATE = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
VALIDATE = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
Q = "kueue.x-k8s.io/queue-name"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
ENABLED = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
ENABLED += "integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}\n"
DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def make_jobset(
    name: str = "js",
    ns: str = "default",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    suspend: bool | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """`testingjobset.MakeJobSet(name, ns)` without its suspension (`suspend` None: unset), one
    replicatedJob of 2 Jobs times 2 pods."""
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    body: dict[str, Any] = {
        "replicatedJobs": [
            {
                "name": "workers",
                "replicas": 2,
                "template": {
                    "spec": {
                        "parallelism": 2,
                        "completions": 2,
                        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                    }
                },
            }
        ],
        **spec,
    }
    if suspend is not None:
        body["suspend"] = suspend
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "spec": body}


def js_review(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> dict[str, Any]:
    body = review(obj, old=old, kind="Job")
    body["request"]["kind"] = {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"}
    body["request"]["resource"] = {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"}
    return body


def mutated(d: Driver, obj: dict[str, Any]) -> dict[str, Any]:
    """The object after our patch (asserts the review was allowed)."""
    response = d.send(MUTATE, js_review(obj))
    assert response["allowed"], response
    ops = orjson.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(obj, ops)


def denial(d: Driver, obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> str | None:
    response = d.send(VALIDATE, js_review(obj, old=old))
    if response["allowed"]:
        return None
    assert response["status"]["code"] == 403
    return str(response["status"]["message"])


@pytest.fixture
def jobset_driver(make_driver: Any) -> Driver:
    return make_driver(ENABLED)  # type: ignore[no-any-return]


# --- defaulting -----------------------------------------------------------------------------------------


class TestDefault:
    def test_queued_jobset_is_suspended(self, jobset_driver: Driver) -> None:
        assert mutated(jobset_driver, make_jobset(labels={Q: "lq"}))["spec"]["suspend"] is True

    def test_unsuspended_queued_jobset_is_suspended(self, jobset_driver: Driver) -> None:
        assert mutated(jobset_driver, make_jobset(labels={Q: "lq"}, suspend=False))["spec"]["suspend"] is True

    def test_suspended_jobset_gets_no_patch(self, jobset_driver: Driver) -> None:
        response = jobset_driver.send(MUTATE, js_review(make_jobset(labels={Q: "lq"}, suspend=True)))
        assert response["allowed"] and "patch" not in response

    def test_jobset_without_queue_is_untouched(self, jobset_driver: Driver) -> None:
        response = jobset_driver.send(MUTATE, js_review(make_jobset()))
        assert response["allowed"] and "patch" not in response

    @pytest.mark.parametrize(
        ("default_lq", "labels", "want_queue"),
        [
            pytest.param(True, None, "default", id="default lq is created, job doesn't have queue label"),
            pytest.param(True, {Q: "queue"}, "queue", id="default lq is created, job has queue label"),
            pytest.param(False, None, None, id="default lq isn't created, job doesn't have queue label"),
        ],
    )
    def test_default_local_queue(
        self, make_driver: Any, default_lq: bool, labels: dict[str, str] | None, want_queue: str | None
    ) -> None:
        d = make_driver(ENABLED, local_queues=frozenset({("default", "default")} if default_lq else ()))
        out = mutated(d, make_jobset(labels=labels))
        assert (out["metadata"].get("labels") or {}).get(Q) == want_queue
        assert bool(out["spec"].get("suspend")) is (want_queue is not None)

    @pytest.mark.parametrize(
        ("managed_by", "labels"),
        [
            pytest.param(None, None, id="TestDefault_WithoutQueueLabel"),
            pytest.param(None, {Q: "local-queue"}, id="TestDefault_ClusterQueueWithoutAdmissionCheck"),
            pytest.param("example.com/foo", {Q: "local-queue"}, id="TestDefault_UserSpecifiedManagedBy"),
        ],
    )
    def test_managed_by_is_kept_without_a_multikueue_check(
        self, make_driver: Any, managed_by: str | None, labels: dict[str, str] | None
    ) -> None:
        d = make_driver(ENABLED, local_queues=frozenset({("default", "local-queue")}))
        obj = make_jobset(labels=labels) if managed_by is None else make_jobset(labels=labels, managedBy=managed_by)
        assert mutated(d, obj)["spec"].get("managedBy") == managed_by

    def test_manage_jobs_without_queue_name_suspends_in_managed_namespaces(self, make_driver: Any) -> None:
        d = make_driver(ENABLED + "manageJobsWithoutQueueName: true\n")
        assert mutated(d, make_jobset())["spec"]["suspend"] is True
        assert "suspend" not in mutated(d, make_jobset(ns="kube-system"))["spec"]

    def test_jobset_of_a_managed_owner_is_not_suspended(self, make_driver: Any) -> None:
        """A JobSet whose controller is a managed batch/v1 Job (any enabled integration's kind):
        the owner's Workload holds the quota (`WorkloadShouldBeSuspended`)."""
        parent = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "parent", "namespace": "default", "uid": "p-uid", "labels": {Q: "lq"}},
        }
        child = make_jobset(labels={Q: "lq"})
        child["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "parent", "uid": "p-uid", "controller": True}
        ]
        d = make_driver(ENABLED, owners={("default", "batch/v1", "Job", "parent"): parent})
        assert "suspend" not in mutated(d, child)["spec"]

    def test_disabled_integration_is_not_defaulted(self, driver: Driver) -> None:
        """The default Configuration enables batch/job only: the JobSet webhook answers without a patch."""
        response = driver.send(MUTATE, js_review(make_jobset(labels={Q: "lq"})))
        assert response["allowed"] and "patch" not in response


# --- validation -----------------------------------------------------------------------------------------

CREATE_CASES = [
    pytest.param(make_jobset(labels={Q: "queue"}), None, id="simple"),
    pytest.param(
        make_jobset(labels={Q: "queue_name"}),
        f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "queue_name": {DNS_MSG}',
        id="invalid queue-name label",
    ),
    pytest.param(make_jobset(labels={Q: "queue", PREBUILT: "prebuilt-workload"}), None, id="with prebuilt workload"),
    pytest.param(
        make_jobset(labels={Q: "queue"}, annotations={PREBUILT: "prebuilt-workload"}),
        None,
        id="valid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        make_jobset(
            labels={Q: "queue", PREBUILT: "prebuilt-workload-label"},
            annotations={PREBUILT: "prebuilt-workload-annotation"},
        ),
        None,
        id="different prebuilt workload label and annotation, label ignored, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        make_jobset(labels={Q: "queue"}, annotations={PREBUILT: "Bad_Name"}),
        f'metadata.annotations[{PREBUILT}]: Invalid value: "Bad_Name": {DNS_MSG}',
        id="invalid prebuilt workload annotation",
    ),
    pytest.param(
        make_jobset(labels={"kueue.x-k8s.io/max-exec-time-seconds": "0"}),
        "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0",
        id="max exec zero",
    ),
    pytest.param(
        make_jobset(annotations={"kueue.x-k8s.io/admission-gated-by": "nodomain"}),
        'metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "nodomain": '
        'must be a domain-prefixed path (such as "acme.io/foo")',
        id="admission gated by not a path",
    ),
]


@pytest.mark.parametrize(("obj", "message"), CREATE_CASES)
def test_validate_create(make_driver: Any, obj: dict[str, Any], message: str | None) -> None:
    gates = ENABLED + "featureGates: {WorkloadIdentifierAnnotations: true, AdmissionGatedBy: true}\n"
    assert denial(make_driver(gates), obj) == message


def test_elastic_annotation_is_forbidden_on_a_jobset(make_driver: Any) -> None:
    d = make_driver(ENABLED + "featureGates: {ElasticJobsViaWorkloadSlices: true}\n")
    obj = make_jobset(labels={Q: "q"}, annotations={"kueue.x-k8s.io/elastic-job": "true"})
    assert denial(d, obj) == (
        "metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: "
        'elastic job is not supported for "jobset.x-k8s.io/v1alpha2, Kind=JobSet"'
    )


def running(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["suspend"] = False
    return out


def suspended(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["suspend"] = True
    return out


UPDATE_CASES = [
    pytest.param(
        running(make_jobset(labels={Q: "a"})),
        running(make_jobset(labels={Q: "b"})),
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is immutable',
        id="queue name immutable while running",
    ),
    pytest.param(
        suspended(make_jobset(labels={Q: "a"})),
        running(make_jobset(labels={Q: "b"})),
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is immutable',
        id="queue name immutable when resumed with it",
    ),
    pytest.param(
        running(make_jobset(labels={Q: "a"})),
        suspended(make_jobset(labels={Q: "b"})),
        None,
        id="queue name may change while being suspended",
    ),
    pytest.param(
        suspended(make_jobset(labels={Q: "a"})),
        suspended(make_jobset(labels={Q: "b_c"})),
        f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b_c": {DNS_MSG}',
        id="the create checks run on the new object",
    ),
    pytest.param(
        running(make_jobset(labels={Q: "a"})),
        running(make_jobset(labels={Q: "a", "kueue.x-k8s.io/priority-class": "high"})),
        'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": '
        "WorkloadPriorityClass cannot be added to a non-suspended workload",
        id="priority class added while running",
    ),
    pytest.param(
        running(make_jobset(labels={Q: "a", PREBUILT: "wl-a"})),
        running(make_jobset(labels={Q: "a", PREBUILT: "wl-b"})),
        f'metadata.labels[{PREBUILT}]: Invalid value: "wl-b": field is immutable',
        id="prebuilt workload immutable while running",
    ),
    pytest.param(
        suspended(make_jobset(labels={"kueue.x-k8s.io/max-exec-time-seconds": "10"})),
        running(make_jobset(labels={"kueue.x-k8s.io/max-exec-time-seconds": "20"})),
        'metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "20": field is immutable',
        id="max exec immutable unless both suspended",
    ),
    pytest.param(
        running(make_jobset(labels={Q: "a"})),
        running(make_jobset(labels={Q: "b_c"})),
        '[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b_c": field is immutable, '
        f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b_c": {DNS_MSG}]',
        id="update errors come before the create checks",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), UPDATE_CASES)
def test_validate_update(jobset_driver: Driver, old: dict[str, Any], new: dict[str, Any], message: str | None) -> None:
    assert denial(jobset_driver, new, old=old) == message


def test_queue_name_must_not_be_removed_with_default_queue(make_driver: Any) -> None:
    d = make_driver(ENABLED, local_queues=frozenset({("default", "default")}))
    assert denial(d, suspended(make_jobset()), old=suspended(make_jobset(labels={Q: "a"}))) == (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": '
        "queue-name must not be empty in namespace with default queue"
    )


def test_disabled_integration_allows_everything(driver: Driver) -> None:
    assert denial(driver, make_jobset(labels={Q: "Bad_Name"})) is None


def test_queue_warnings_count_every_replicated_job(make_driver: Any) -> None:
    """Our submit-time warning (not upstream's): the LocalQueue named does not exist."""
    response = make_driver(ENABLED).send(VALIDATE, js_review(make_jobset(labels={Q: "missing"})))
    assert response["allowed"]
    assert any("missing" in w for w in response.get("warnings", ())), response


def test_a_quantity_go_cannot_decode_is_an_error(jobset_driver: Driver) -> None:
    """The JobSet CRD checks quantities only against a pattern; upstream's webhook cannot decode
    `1e1.5` and answers 400, and our informers set such a JobSet aside (`quantity_fields`)."""
    obj = make_jobset(labels={Q: "q"})
    ctr = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    ctr["resources"] = {"requests": {"cpu": "1e1.5"}}
    for path in (MUTATE, VALIDATE):
        response = jobset_driver.send(path, js_review(obj))
        assert not response["allowed"] and response["status"]["code"] == 400, response


# --- TopologyAwareScheduling: upstream's TAS cases of TestValidateCreate and TestValidateUpdate -----------

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
ONE_OF = f'must not contain more than one topology annotation: ["{REQUIRED}", "{PREFERRED}", "{UNCONSTRAINED}"]'
NO_TAS = Configuration(
    integrations=Integrations(frameworks=("batch/job", "jobset.x-k8s.io/jobset")),
    feature_gates={"TopologyAwareScheduling": False},
)


def ann(i: int) -> str:
    return f"spec.replicatedJobs[{i}].template.spec.template.metadata.annotations"


def rj(
    name: str, annotations: dict[str, str], replicas: int = 0, parallelism: int = 0, completions: int = 0
) -> dict[str, Any]:
    """One `testingjobset.ReplicatedJobRequirements` (its counts default to Go's zero)."""
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": parallelism,
                "completions": completions,
                "template": {
                    "metadata": {"annotations": dict(annotations)},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
            }
        },
    }


def tas_jobset(*replicated_jobs: dict[str, Any]) -> dict[str, Any]:
    return make_jobset(replicatedJobs=list(replicated_jobs))


def _inconsistent(group: str) -> str:
    detail = f"must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with '{{}}' in group '{group}'"
    return f"[{ann(0)}: Invalid value: {detail.format(ann(1))}, {ann(1)}: Invalid value: {detail.format(ann(0))}]"


TAS_CREATE_CASES = [
    pytest.param(
        tas_jobset(rj("launcher", {REQUIRED: "cloud.com/block"}), rj("worker", {REQUIRED: "cloud.com/block"})),
        None,
        id="valid topology request",
    ),
    pytest.param(
        tas_jobset(
            rj("launcher", {REQUIRED: "cloud.com/block"}),
            rj("worker", {PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"}),
        ),
        f"{ann(1)}: Invalid value: {ONE_OF}",
        id="invalid topology request",
    ),
    pytest.param(
        tas_jobset(
            rj("job1", {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "20"}, 2, 1, 1)
        ),
        f'{ann(0)}[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 2',
        id="invalid slice topology request - slice size larger than number of podsets",
    ),
    pytest.param(
        tas_jobset(
            rj("launcher", {GROUP: "groupname", REQUIRED: "cloud.com/block"}, 1, 1, 1),
            rj("worker", {GROUP: "groupname", REQUIRED: "cloud.com/block"}, 4, 1, 1),
        ),
        None,
        id="valid PodSet grouping request",
    ),
    pytest.param(
        tas_jobset(
            rj("job1", {REQUIRED: "cloud.com/block", GROUP: "1podset"}, 1, 1, 1),
            rj("job2", {REQUIRED: "cloud.com/block", GROUP: "3podsets"}, 1, 1, 1),
            rj("job3", {REQUIRED: "cloud.com/block", GROUP: "3podsets"}, 2, 1, 1),
            rj("job4", {REQUIRED: "cloud.com/block", GROUP: "3podsets"}, 2, 2, 1),
        ),
        f'[{ann(0)}[{GROUP}]: Invalid value: "1podset": can only define groups of exactly 2 pod sets, got: 1 pod set(s), '
        + ", ".join(
            f'{ann(i)}[{GROUP}]: Invalid value: "3podsets": can only define groups of exactly 2 pod sets, '
            "got: 3 pod set(s)"
            for i in (1, 2, 3)
        )
        + "]",
        id="invalid PodSet grouping request - groups of size other than 2",
    ),
    pytest.param(
        tas_jobset(
            rj("job1", {REQUIRED: "cloud.com/block", GROUP: "groupname"}, 2, 1, 1),
            rj("job2", {REQUIRED: "cloud.com/block", GROUP: "groupname"}, 1, 3, 3),
        ),
        "["
        + ", ".join(
            f'{ann(i)}[{GROUP}]: Invalid value: "groupname": can only define groups where at least one pod set has '
            "only 1 replica, got: 2 replica(s) and 3 replica(s) in the group"
            for i in (0, 1)
        )
        + "]",
        id="invalid PodSet grouping request - no leader in group",
    ),
    pytest.param(
        tas_jobset(
            rj("job1", {REQUIRED: "cloud.com/rack", GROUP: "groupname"}, 1, 1, 1),
            rj("job2", {REQUIRED: "cloud.com/block", GROUP: "groupname"}, 2, 1, 1),
        ),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - required topology does not match",
    ),
    pytest.param(
        tas_jobset(
            rj("job1", {PREFERRED: "cloud.com/rack", GROUP: "groupname"}, 1, 1, 1),
            rj("job2", {PREFERRED: "cloud.com/block", GROUP: "groupname"}, 2, 1, 1),
        ),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - preferred topology does not match",
    ),
    pytest.param(
        tas_jobset(
            rj("job1", {REQUIRED: "cloud.com/rack", GROUP: "groupname"}, 1, 1, 1),
            rj("job2", {GROUP: "groupname", PREFERRED: "cloud.com/block"}, 2, 1, 1),
        ),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - different topology annotations within group",
    ),
]


@pytest.mark.parametrize(("obj", "message"), TAS_CREATE_CASES)
def test_validate_create_topology(jobset_driver: Driver, obj: dict[str, Any], message: str | None) -> None:
    """Upstream's `TestValidateCreate` TAS cases (TopologyAwareScheduling on, as by default)."""
    assert denial(jobset_driver, obj) == message


@pytest.mark.parametrize(
    ("new", "message"),
    [
        pytest.param(tas_jobset(rj("worker", {PREFERRED: "cloud.com/block"})), None, id="set valid topology request"),
        pytest.param(
            tas_jobset(rj("worker", {PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"})),
            f"{ann(0)}: Invalid value: {ONE_OF}",
            id="attempt to set invalid topology request",
        ),
    ],
)
def test_validate_update_topology(jobset_driver: Driver, new: dict[str, Any], message: str | None) -> None:
    """Upstream's `TestValidateUpdate` cases: the new JobSet's templates are checked."""
    assert denial(jobset_driver, new, old=tas_jobset(rj("worker", {}))) == message


def test_topology_errors_follow_the_job_checks(jobset_driver: Driver) -> None:
    """`validateCreate`: `ValidateJobOnCreate`'s errors, then each replicated Job's TAS errors in
    order, then the groups'; on update `ValidateJobOnUpdate`'s come first."""
    obj = tas_jobset(
        rj("a", {REQUIRED: "r", PREFERRED: "p", GROUP: "g"}, 1, 1, 1),
        rj("b", {SLICE_REQUIRED: "s", SLICE_SIZE: "3", REQUIRED: "r"}, 1, 2, 2),
    )
    obj["metadata"]["labels"] = {Q: "Bad_Name"}
    create_errors = [
        f'metadata.labels[{Q}]: Invalid value: "Bad_Name": {DNS_MSG}',
        f"{ann(0)}: Invalid value: {ONE_OF}",
        f'{ann(1)}[{SLICE_SIZE}]: Invalid value: "3": must not be greater than pod set count 2',
        f'{ann(0)}[{GROUP}]: Invalid value: "g": can only define groups of exactly 2 pod sets, got: 1 pod set(s)',
    ]
    assert denial(jobset_driver, obj) == "[" + ", ".join(create_errors) + "]"
    old = running(copy.deepcopy(obj))
    old["metadata"]["labels"] = {Q: "a"}
    assert denial(jobset_driver, running(obj), old=old) == (
        "[" + ", ".join([f'metadata.labels[{Q}]: Invalid value: "Bad_Name": field is immutable', *create_errors]) + "]"
    )


def test_a_pod_set_that_cannot_be_built_is_denied_with_gos_error(jobset_driver: Driver) -> None:
    """`JobPodSets` fails (the first replicated Job whose unconstrained flag is not a boolean):
    no field error, not even the job checks', only Go's error."""
    obj = tas_jobset(rj("a", {REQUIRED: "r", PREFERRED: "p"}), rj("b", {UNCONSTRAINED: "maybe"}))
    obj["metadata"]["labels"] = {Q: "Bad_Name"}
    assert denial(jobset_driver, obj) == 'strconv.ParseBool: parsing "maybe": invalid syntax'


def test_topology_checks_need_the_gate(make_driver: Any) -> None:
    obj = tas_jobset(rj("a", {REQUIRED: "r", PREFERRED: "p"}), rj("b", {UNCONSTRAINED: "maybe"}))
    assert denial(make_driver(NO_TAS), obj) is None


_MK_LOOKUPS: dict[str, Any] = {
    "local_queues": frozenset({("default", "local-queue")}),
    "local_queue_targets": {("default", "local-queue"): "cluster-queue"},
    "cluster_queues": {
        "cluster-queue": {
            "metadata": {"name": "cluster-queue"},
            "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "admission-check"}]}},
        }
    },
    "admission_checks": {"admission-check": "kueue.x-k8s.io/multikueue"},
}


@pytest.mark.parametrize(
    ("managed_by", "want"),
    [
        pytest.param(None, "kueue.x-k8s.io/multikueue", id="TestDefault_ManagedByMultiKueue"),
        pytest.param(
            "jobset.sigs.k8s.io/jobset-controller",
            "kueue.x-k8s.io/multikueue",
            id="TestDefault_JobSetControllerManagedBy",
        ),
        pytest.param("example.com/foo", "example.com/foo", id="TestDefault_UserSpecifiedManagedBy"),
    ],
)
def test_managed_by_is_defaulted_for_a_multikueue_cluster_queue(
    make_driver: Any, managed_by: str | None, want: str
) -> None:
    """`ApplyDefaultForManagedBy` with `JobSet.CanDefaultManagedBy`."""
    d = make_driver(ENABLED, **_MK_LOOKUPS)
    spec = {} if managed_by is None else {"managedBy": managed_by}
    out = mutated(d, make_jobset(labels={Q: "local-queue"}, **spec))
    assert out["spec"]["managedBy"] == want
    assert out["spec"]["suspend"] is True


def test_managed_by_is_kept_with_the_multikueue_gate_off(make_driver: Any) -> None:
    d = make_driver(ENABLED + "featureGates: {MultiKueue: false}\n", **_MK_LOOKUPS)
    assert "managedBy" not in mutated(d, make_jobset(labels={Q: "local-queue"}))["spec"]
