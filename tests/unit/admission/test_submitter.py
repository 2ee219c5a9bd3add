"""The submitting-user annotation (ours): stamped at creation from userInfo, never set or changed by users."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.admission.reviews import Driver
from webhook.admission.app import create_app
from webhook.admission.context import StaticLookups
from webhook.config import Configuration

OURS = "system:serviceaccount:kueue-system:kueue-controller-manager"
KEY = "pykueue.io/submitted-by"
MUTATE_JOB = "/mutate-batch-v1-job"
VALIDATE_JOB = "/validate-batch-v1-job"
MUTATE_WL = "/mutate-kueue-x-k8s-io-v1beta2-workload"
VALIDATE_WL = "/validate-kueue-x-k8s-io-v1beta2-workload"


@pytest.fixture
def hooks() -> Driver:
    lookups = StaticLookups(local_queues=frozenset({("team-a", "main")}), identity=OURS)
    return Driver(create_app(Configuration(), lookups))


def a_job(
    *, annotations: dict[str, str] | None = None, queue: str | None = "main", owner: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "j", "namespace": "team-a", "uid": "u1"}
    if queue:
        meta["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "example.com/v1", "kind": "Pipeline", "name": "p", "uid": "o", "controller": True}
        ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}},
        },
    }


def a_workload(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "wl", "namespace": "team-a"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": "main",
            "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
            ],
        },
    }


def annotation(obj: dict[str, Any]) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(KEY)


@pytest.mark.parametrize(
    ("obj", "user", "want"),
    [
        pytest.param(a_job(), "alice", "alice", id="stamped with the creator"),
        pytest.param(a_job(annotations={KEY: "bob"}), "alice", "alice", id="a forged value is overwritten"),
        pytest.param(a_job(annotations={KEY: "bob"}), OURS, "bob", id="our own identity keeps one"),
        pytest.param(a_job(), OURS, None, id="our own identity without one: left without"),
        pytest.param(a_job(queue=None), "alice", None, id="no queue: not Kueue's"),
        pytest.param(a_job(owner=True), "alice", None, id="a controller's child: its owner carries it"),
    ],
)
def test_job_create(hooks, obj, user, want):
    assert annotation(hooks.mutate(MUTATE_JOB, obj, user=user)) == want


@pytest.mark.parametrize(
    ("obj", "user", "want"),
    [
        pytest.param(a_workload(), "alice", "alice", id="a user's own Workload"),
        pytest.param(a_workload({KEY: "bob"}), "alice", "alice", id="forged"),
        pytest.param(a_workload({KEY: "bob"}), OURS, "bob", id="the worker copies the job's"),
    ],
)
def test_workload_create(hooks, obj, user, want):
    assert annotation(hooks.mutate(MUTATE_WL, obj, user=user, kind="Workload")) == want


FORBIDDEN = (
    "metadata.annotations[pykueue.io/submitted-by]: Forbidden: is set by Kueue at creation and cannot be changed"
)


@pytest.mark.parametrize(
    ("old", "new", "user", "denied"),
    [
        pytest.param({KEY: "alice"}, {KEY: "bob"}, "alice", True, id="changed"),
        pytest.param({KEY: "alice"}, None, "alice", True, id="removed"),
        pytest.param(None, {KEY: "bob"}, "alice", True, id="added to an object without one"),
        pytest.param({KEY: "alice"}, {KEY: "alice", "other": "x"}, "alice", False, id="other annotations change"),
        pytest.param({KEY: "alice"}, {KEY: "bob"}, OURS, False, id="our own identity may"),
    ],
)
def test_update(hooks, old, new, user, denied):
    old_job, new_job = a_job(annotations=old), a_job(annotations=new)
    message = hooks.denial(VALIDATE_JOB, new_job, old=old_job, user=user)
    assert (message is not None and FORBIDDEN in message) is denied, message
    old_wl, new_wl = a_workload(old), a_workload(new)
    message = hooks.denial(VALIDATE_WL, new_wl, old=old_wl, user=user, kind="Workload")
    assert (message is not None and FORBIDDEN in message) is denied, message


def test_status_updates_are_not_judged(hooks):
    old = a_workload({KEY: "alice"})
    new = copy.deepcopy(old)
    new["metadata"]["annotations"][KEY] = "bob"  # the status subresource ignores metadata
    assert hooks.denial(VALIDATE_WL, new, old=old, user="alice", kind="Workload", sub_resource="status") is None
