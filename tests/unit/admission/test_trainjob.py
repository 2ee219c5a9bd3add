"""The TrainJob webhook through the ASGI app: upstream's `trainjob_webhook_test.go` (v0.19.2:
`TestDefault`, `TestValidateCreate` with its TopologyAwareScheduling cases, which read the
TrainJob's ClusterTrainingRuntime) by behaviour, and the job framework's update checks."""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest

from webhook.config import Configuration, Integrations

from .reviews import Driver, apply_patch, multikueue_lookups, review

MUTATE = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
VALIDATE = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"
Q = "kueue.x-k8s.io/queue-name"
CONFIG = (
    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    "integrations:\n  frameworks: [batch/job, trainer.kubeflow.org/trainjob]\n"
)
KUEUE_PATCH = {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {}}}}
RFC1123 = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def runtime(*replicated_jobs: dict[str, Any]) -> dict[str, Any]:
    """`testingtrainjob.MakeClusterTrainingRuntime("testCtr", <JobSet spec>)`."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "testCtr"},
        "spec": {"template": {"spec": {"replicatedJobs": list(replicated_jobs)}}},
    }


def replicated_job(
    name: str,
    *,
    replicas: int = 0,
    parallelism: int = 0,
    completions: int = 0,
    pod_annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One `testingjobset.ReplicatedJobRequirements` (its counts default to Go's zero)."""
    pod_template: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    if pod_annotations is not None:
        pod_template["metadata"] = {"annotations": dict(pod_annotations)}
    job_spec = {"parallelism": parallelism, "completions": completions, "template": pod_template}
    return {"name": name, "replicas": replicas, "template": {"spec": job_spec}}


TEST_CTR = runtime(replicated_job("node", replicas=1, parallelism=1, completions=1))
RUNTIME_KEY = ("ClusterTrainingRuntime", "", "testCtr")


def trainjob(labels: dict[str, str] | None = None, *, suspend: bool = False, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "trainjob", "namespace": "ns", "labels": dict(labels or {})},
        "spec": {
            "runtimeRef": {"name": "testCtr", "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
            "suspend": suspend,
            **spec,
        },
    }


def trainjob_review(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> dict[str, Any]:
    body = review(obj, old=old, kind="Job")
    body["request"]["kind"] = {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"}
    body["request"]["resource"] = {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": "trainjobs"}
    return body


def mutated(hooks: Driver, obj: dict[str, Any]) -> dict[str, Any]:
    response = hooks.send(MUTATE, trainjob_review(obj))
    assert response["allowed"], response
    ops = orjson.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(obj, ops)


def denial(hooks: Driver, obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> str | None:
    response = hooks.send(VALIDATE, trainjob_review(obj, old=old))
    return None if response["allowed"] else str(response["status"]["message"])


@pytest.fixture
def hooks(make_driver: Any) -> Driver:
    return make_driver(  # type: ignore[no-any-return]
        CONFIG, local_queues=frozenset({("ns", "local-queue")}), training_runtimes={RUNTIME_KEY: TEST_CTR}
    )


# --- TestDefault -------------------------------------------------------------------------------------


def test_should_suspend_a_trainjob_with_a_queue_label(hooks: Driver) -> None:
    out = mutated(hooks, trainjob({Q: "local-queue"}))
    assert out["spec"]["suspend"] is True
    assert out["spec"]["runtimePatches"] == [KUEUE_PATCH]
    assert out["metadata"]["labels"] == {Q: "local-queue"}


def test_should_not_suspend_a_trainjob_without_a_queue_label(hooks: Driver) -> None:
    """Not managed, it still gets Kueue's (empty) runtime patch, as upstream's `Default` adds it to every TrainJob."""
    out = mutated(hooks, trainjob())
    assert out["spec"]["suspend"] is False
    assert out["spec"]["runtimePatches"] == [KUEUE_PATCH]


def test_should_suspend_a_trainjob_without_a_queue_label_if_manage_jobs_without_queue_name(make_driver: Any) -> None:
    hooks = make_driver(CONFIG + "manageJobsWithoutQueueName: true\n")
    out = mutated(hooks, trainjob())
    assert out["spec"]["suspend"] is True and out["spec"]["runtimePatches"] == [KUEUE_PATCH]


@pytest.mark.parametrize(
    ("queues", "labels"),
    [
        pytest.param(frozenset({("ns", "default")}), {Q: "default"}, id="should set the default local queue"),
        pytest.param(frozenset(), {}, id="should not set the default local queue if doesn't exists"),
    ],
)
def test_default_local_queue(make_driver: Any, queues: frozenset[tuple[str, str]], labels: dict[str, str]) -> None:
    out = mutated(make_driver(CONFIG, local_queues=queues), trainjob())
    assert out["metadata"]["labels"] == labels
    assert out["spec"]["suspend"] is bool(labels)


def test_user_runtime_patches_are_kept_and_kueues_added_last(hooks: Driver) -> None:
    user = {"manager": "example.com/user", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": []}}}}
    out = mutated(hooks, trainjob({Q: "local-queue"}, runtimePatches=[user]))
    assert out["spec"]["runtimePatches"] == [user, KUEUE_PATCH]


# --- TestValidateCreate --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        pytest.param({Q: "local-queue"}, None, id="base"),
        pytest.param(
            {Q: "queue_name"},
            f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "queue_name": {RFC1123}',
            id="invalid queue-name label",
        ),
        pytest.param(
            {Q: "local-queue", "kueue.x-k8s.io/prebuilt-workload-name": "prebuilt-workload"},
            None,
            id="with prebuilt workload",
        ),
        pytest.param(
            {Q: "local-queue", "kueue.x-k8s.io/max-exec-time-seconds": "0"},
            "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0",
            id="maximum execution time",
        ),
    ],
)
def test_validate_create(hooks: Driver, labels: dict[str, str], want: str | None) -> None:
    got = denial(hooks, trainjob(labels))
    assert got == want if want is None else want in str(got)


# --- updates (`ValidateJobOnUpdate`) ----------------------------------------------------------------------


def test_the_queue_name_is_immutable_while_the_trainjob_runs(hooks: Driver) -> None:
    old = trainjob({Q: "local-queue"})
    new = copy.deepcopy(old)
    new["metadata"]["labels"][Q] = "other"
    assert 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable' in str(
        denial(hooks, new, old=old)
    )
    old["spec"]["suspend"] = new["spec"]["suspend"] = True
    assert denial(hooks, new, old=old) is None


def test_an_update_is_also_validated_as_a_create(hooks: Driver) -> None:
    old = trainjob({Q: "local-queue"}, suspend=True)
    new = trainjob({Q: "queue_name"}, suspend=True)
    assert 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "queue_name"' in str(denial(hooks, new, old=old))


def test_the_integration_off_allows_everything(make_driver: Any) -> None:
    off = make_driver()
    assert off.send(VALIDATE, trainjob_review(trainjob({Q: "queue_name"})))["allowed"]
    assert "patch" not in off.send(MUTATE, trainjob_review(trainjob({Q: "local-queue"})))


# --- TestValidateCreate: TopologyAwareScheduling ---------------------------------------------------------

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
ONE_OF = f'must not contain more than one topology annotation: ["{REQUIRED}", "{PREFERRED}", "{UNCONSTRAINED}"]'
ADJUST = (
    '. Adjust either the "TrainJob.spec.runtimePatches" or the "TrainingRuntime.Template" annotations for the '
    "corresponding Job"
)


def patched(pod_annotations: dict[str, str]) -> dict[str, Any]:
    """`testTrainJob` with Kueue's runtime patch annotating the `node` Job's pods."""
    rj_patch = {"name": "node", "template": {"spec": {"template": {"metadata": {"annotations": pod_annotations}}}}}
    patch = {
        "manager": "kueue.x-k8s.io/manager",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rj_patch]}}},
    }
    return trainjob(runtimePatches=[patch])


def with_runtime(make_driver: Any, ctr: dict[str, Any], config: Any = CONFIG) -> Driver:
    return make_driver(config, training_runtimes={RUNTIME_KEY: ctr})  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("ctr", "job", "want"),
    [
        pytest.param(
            TEST_CTR, patched({REQUIRED: "cloud.com/block"}), None, id="valid topology request in RuntimePatch"
        ),
        pytest.param(
            runtime(replicated_job("node", pod_annotations={REQUIRED: "cloud.com/block"})),
            trainjob(),
            None,
            id="valid topology request in TrainingRuntime",
        ),
        pytest.param(
            TEST_CTR,
            patched({PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"}),
            f"job[node].annotations: Invalid value: {ONE_OF}{ADJUST}",
            id="invalid topology request in TrainJob",
        ),
        pytest.param(
            runtime(
                replicated_job("node", pod_annotations={PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"})
            ),
            trainjob(),
            f"job[node].annotations: Invalid value: {ONE_OF}{ADJUST}",
            id="invalid topology request in TrainingRuntime",
        ),
        pytest.param(
            TEST_CTR,
            patched({REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "20"}),
            f'job[node].annotations[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 1{ADJUST}',
            id="invalid slice topology request - slice size larger than number of podsets",
        ),
    ],
)
def test_validate_create_topology(make_driver: Any, ctr: dict[str, Any], job: dict[str, Any], want: str | None) -> None:
    """Upstream's `TestValidateCreate` TAS cases (TopologyAwareScheduling on, as by default)."""
    assert denial(with_runtime(make_driver, ctr), job) == want


def test_a_runtime_that_cannot_be_read_denies_the_trainjob_alone(make_driver: Any) -> None:
    """`podSets` fails: Go's error replaces every field error, the job checks' too, on create and
    on update."""
    bad_queue = trainjob({Q: "queue_name"})
    no_runtime = make_driver(CONFIG)
    assert denial(no_runtime, bad_queue) == "runtime 'testCtr' not found"
    assert denial(no_runtime, bad_queue, old=trainjob({Q: "a"})) == "runtime 'testCtr' not found"
    other_kind = trainjob(runtimeRef={"name": "x", "apiGroup": "example.com", "kind": "Runtime"})
    assert denial(no_runtime, other_kind) == "unsupported runtime: Runtime.example.com"


def test_a_pod_set_that_cannot_be_built_is_denied_with_gos_error(make_driver: Any) -> None:
    hooks = with_runtime(make_driver, TEST_CTR)
    assert denial(hooks, patched({UNCONSTRAINED: "maybe"})) == 'strconv.ParseBool: parsing "maybe": invalid syntax'


def test_topology_errors_follow_the_job_checks(make_driver: Any) -> None:
    """`validateCreate`: `ValidateJobOnCreate`'s errors, then the TAS errors; on update
    `ValidateJobOnUpdate`'s first."""
    hooks = with_runtime(make_driver, TEST_CTR)
    new = patched({PREFERRED: "a", REQUIRED: "b"})
    new["metadata"]["labels"] = {Q: "queue_name"}
    create_errors = [
        f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "queue_name": {RFC1123}',
        f"job[node].annotations: Invalid value: {ONE_OF}{ADJUST}",
    ]
    assert denial(hooks, new) == "[" + ", ".join(create_errors) + "]"
    old = copy.deepcopy(new)
    old["metadata"]["labels"] = {Q: "local-queue"}
    immutable = 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "queue_name": field is immutable'
    assert denial(hooks, new, old=old) == "[" + ", ".join([immutable, *create_errors]) + "]"


def test_without_the_gate_the_runtime_is_not_read(make_driver: Any) -> None:
    no_tas = Configuration(
        integrations=Integrations(frameworks=("batch/job", "trainer.kubeflow.org/trainjob")),
        feature_gates={"TopologyAwareScheduling": False},
    )
    assert denial(make_driver(no_tas), trainjob({Q: "local-queue"})) is None


@pytest.mark.parametrize(
    ("managed_by", "want"),
    [
        pytest.param(None, "kueue.x-k8s.io/multikueue", id="unset"),
        pytest.param("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue", id="the trainer's own"),
        pytest.param("example.com/foo", "example.com/foo", id="another controller's: kept"),
    ],
)
def test_managed_by_is_defaulted_for_a_multikueue_cluster_queue(
    make_driver: Any, managed_by: str | None, want: str
) -> None:
    """`TrainJobWebhook.Default`: `ApplyDefaultForManagedBy` (`TrainJob.CanDefaultManagedBy`)."""
    d = make_driver(CONFIG, **multikueue_lookups("ns", "queue"))
    spec = {} if managed_by is None else {"managedBy": managed_by}
    out = mutated(d, trainjob({Q: "queue"}, **spec))
    assert out["spec"]["managedBy"] == want
