"""The TrainJob webhook through the ASGI app: upstream's `trainjob_webhook_test.go` (`TestDefault`,
`TestValidateCreate`) by behaviour, and the job framework's update checks."""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest

from .reviews import Driver, apply_patch, review

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
    return make_driver(CONFIG, local_queues=frozenset({("ns", "local-queue")}))  # type: ignore[no-any-return]


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
