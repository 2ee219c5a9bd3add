"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet webhook through the ASGI app (upstream's
`leaderworkerset_webhook_test.go` cases, by behaviour)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import fq, make_cq

from .reviews import Driver, review

MUTATE = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
VALIDATE = "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
Q = "kueue.x-k8s.io/queue-name"
WPC = "kueue.x-k8s.io/priority-class"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
SERVING = "kueue.x-k8s.io/pod-group-serving"
OFFSET = "kueue.x-k8s.io/pod-index-offset"
GATED_BY = "kueue.x-k8s.io/admission-gated-by"
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
CONFIG = (
    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    "integrations:\n  frameworks: [pod, leaderworkerset.x-k8s.io/leaderworkerset]\n"
)


def template(cpu: str = "1", image: str = "img:1") -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}]}}


def make(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    leader: dict[str, Any] | None = None,
    worker: dict[str, Any] | None = None,
    size: int | None = 3,
    replicas: int | None = 2,
    ready: int = 0,
    namespace: str = "team-a",
) -> dict[str, Any]:
    lwt: dict[str, Any] = {"workerTemplate": worker or template()}
    if leader is not None:
        lwt["leaderTemplate"] = leader
    if size is not None:
        lwt["size"] = size
    spec: dict[str, Any] = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    meta: dict[str, Any] = {"name": "lws", "namespace": namespace, "uid": "u-1"}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": spec,
        "status": {"readyReplicas": ready},
    }


def metas(lws: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(leader template metadata or None, worker template metadata)."""
    lwt = lws["spec"]["leaderWorkerTemplate"]
    leader = lwt.get("leaderTemplate")
    return (None if leader is None else leader.get("metadata", {}), lwt["workerTemplate"].get("metadata", {}))


@pytest.fixture
def hooks(make_driver: Any) -> Driver:
    return make_driver(CONFIG)  # type: ignore[no-any-return]


# --- Default -------------------------------------------------------------------------------------


def test_default_local_queue_and_priority_class_reach_both_templates(make_driver: Any) -> None:
    hooks = make_driver(CONFIG, local_queues=frozenset({("team-a", "default")}))
    out = hooks.mutate(MUTATE, make(labels={WPC: "high-priority"}, leader=template()))
    assert out["metadata"]["labels"] == {WPC: "high-priority", Q: "default"}
    leader, worker = metas(out)
    assert leader == {
        "labels": {Q: "default", WPC: "high-priority"},
        "annotations": {PARENT: FRAMEWORK, SERVING: "true"},
    }
    # Workers count from 1 after their leader (topology-aware scheduling's gate is on by default).
    assert worker == {
        "labels": {Q: "default", WPC: "high-priority"},
        "annotations": {PARENT: FRAMEWORK, SERVING: "true", OFFSET: "1"},
    }


def test_top_level_queue_overrides_the_templates(hooks: Driver) -> None:
    leader, worker = template(), template()
    leader["metadata"] = {"labels": {Q: "user-queue"}}
    worker["metadata"] = {"labels": {Q: "user-queue"}}
    out = hooks.mutate(MUTATE, make(labels={Q: "test-queue"}, leader=leader, worker=worker))
    assert [m["labels"][Q] for m in metas(out) if m is not None] == ["test-queue", "test-queue"]


def test_worker_only_set_gets_no_offset(make_driver: Any) -> None:
    hooks = make_driver(CONFIG, local_queues=frozenset({("team-a", "default")}))
    leader, worker = metas(hooks.mutate(MUTATE, make()))
    assert leader is None
    assert worker == {"labels": {Q: "default"}, "annotations": {PARENT: FRAMEWORK, SERVING: "true"}}


def test_a_podset_group_gets_no_offset(hooks: Driver) -> None:
    worker = template()
    worker["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-group-name": "test-group"}}
    _, meta = metas(hooks.mutate(MUTATE, make(labels={Q: "lq"}, leader=template(), worker=worker)))
    assert OFFSET not in meta["annotations"]


def test_without_a_queue_nothing_changes(hooks: Driver) -> None:
    response = hooks.send(MUTATE, review(make(leader=template())))
    assert response["allowed"] and "patch" not in response


def test_manage_jobs_without_queue_name_suspends_an_unqueued_set(make_driver: Any) -> None:
    hooks = make_driver(CONFIG + "manageJobsWithoutQueueName: true\n")
    _, meta = metas(hooks.mutate(MUTATE, make()))
    assert meta == {"annotations": {PARENT: FRAMEWORK, SERVING: "true"}}


def test_integration_off_allows_everything(make_driver: Any) -> None:
    hooks = make_driver(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: [pod]\n"
    )
    response = hooks.send(MUTATE, review(make(labels={Q: "lq"})))
    assert response["allowed"] and "patch" not in response
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, replicas=-1)) is None


# --- ValidateCreate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replicas", "message"),
    [
        (-1, "spec.replicas: Invalid value: -1: invalid LeaderWorkerSet replicas: must be >= 0, got -1"),
        (
            1_000_001,
            "spec.replicas: Invalid value: 1000001: invalid LeaderWorkerSet replicas: must be <= 1000000, got 1000001",
        ),
        (1_000_000, None),
        (0, None),
    ],
)
def test_replicas_are_bounded(hooks: Driver, replicas: int, message: str | None) -> None:
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, replicas=replicas)) == message


def test_queue_name_must_be_a_valid_name(hooks: Driver) -> None:
    message = hooks.denial(VALIDATE, make(labels={Q: "Invalid_Queue"}))
    assert message is not None and message.startswith(
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Invalid_Queue": '
    )
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"})) is None
    assert hooks.denial(VALIDATE, make()) is None


def test_an_elastic_set_is_refused(hooks: Driver) -> None:
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, annotations={"kueue.x-k8s.io/elastic-job": "true"})) == (
        'metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for "'
        'leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet"'
    )


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("example.com/my-gate", True),
        ("example.com/my-gate, example.com/other-gate", True),
        ("invalid_gate_name", False),
        ("example.com/my-gate,example.com/my-gate", False),
        ("example.com/my gate", False),
    ],
)
def test_admission_gated_by_format(hooks: Driver, value: str, allowed: bool) -> None:
    message = hooks.denial(VALIDATE, make(labels={Q: "lq"}, annotations={GATED_BY: value}))
    assert (message is None) == allowed
    if not allowed:
        assert message is not None and message.startswith(f"metadata.annotations[{GATED_BY}]")


def test_admission_gated_by_is_not_checked_with_its_gate_off(make_driver: Any) -> None:
    hooks = make_driver(CONFIG + "featureGates:\n  AdmissionGatedBy: false\n")
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, annotations={GATED_BY: "invalid_gate_name"})) is None


# --- ValidateUpdate ------------------------------------------------------------------------------


def test_queue_name_changes_only_while_no_group_is_ready(hooks: Driver) -> None:
    old = make(labels={Q: "test-queue"})
    assert hooks.denial(VALIDATE, make(labels={Q: "new-test-queue"}), old=old) is None
    ready = make(labels={Q: "test-queue"}, ready=1)
    assert (
        hooks.denial(VALIDATE, make(labels={Q: "new-test-queue"}, ready=1), old=ready)
        == 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "new-test-queue": field is immutable'
    )


def test_queue_name_can_never_be_removed(hooks: Driver) -> None:
    assert (
        hooks.denial(VALIDATE, make(labels={}), old=make(labels={Q: "test-queue"}))
        == 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": field is immutable'
    )


def test_priority_class_while_groups_are_ready(hooks: Driver) -> None:
    path = "metadata.labels[kueue.x-k8s.io/priority-class]"
    ready = make(labels={Q: "lq"}, ready=1)
    assert hooks.denial(VALIDATE, make(labels={Q: "lq", WPC: "test"}, ready=1), old=ready) == (
        f'{path}: Invalid value: "test": WorkloadPriorityClass cannot be added to a non-suspended workload'
    )
    assert hooks.denial(VALIDATE, make(labels={Q: "lq", WPC: "test"}), old=make(labels={Q: "lq"})) is None
    with_class = make(labels={Q: "lq", WPC: "test"}, ready=1)
    assert hooks.denial(VALIDATE, make(labels={Q: "lq", WPC: "new-test"}, ready=1), old=with_class) is None
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, ready=1), old=with_class) == (
        f'{path}: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload'
    )


def test_size_is_immutable_while_managed(hooks: Driver) -> None:
    old = make(labels={Q: "lq"}, size=2)
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, size=10), old=old) == (
        "spec.leaderWorkerTemplate.size: Invalid value: 10: field is immutable"
    )
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, size=2), old=old) is None
    assert hooks.denial(VALIDATE, make(size=10), old=make(size=2)) is None  # not managed


def test_size_may_change_with_lws_immutable_group_size_off(make_driver: Any) -> None:
    hooks = make_driver(CONFIG + "featureGates:\n  LWSImmutableGroupSize: false\n")
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, size=10), old=make(labels={Q: "lq"}, size=2)) is None


def test_replicas_of_a_managed_set_may_change(hooks: Driver) -> None:
    """Scaling adds or removes whole groups, each with its own Workload."""
    assert hooks.denial(VALIDATE, make(labels={Q: "lq"}, replicas=5), old=make(labels={Q: "lq"}, replicas=2)) is None


def test_the_pods_shape_is_immutable_but_the_image_is_not(hooks: Driver) -> None:
    old = make(labels={Q: "lq"}, leader=template(), worker=template())
    new_image = make(labels={Q: "lq"}, leader=template(image="img:2"), worker=template(image="img:2"))
    assert hooks.denial(VALIDATE, new_image, old=old) is None
    new_cpu = make(labels={Q: "lq"}, leader=template(cpu="2"), worker=template(cpu="2"))
    message = hooks.denial(VALIDATE, new_cpu, old=old)
    assert message is not None
    leader_error, worker_error = message.strip("[]").split(", ")
    assert leader_error.startswith("spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.requests")
    assert worker_error.startswith("spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests")
    assert leader_error.endswith("field is immutable") and worker_error.endswith("field is immutable")


def test_a_leader_template_may_not_come_or_go(hooks: Driver) -> None:
    old = make(labels={Q: "lq"})
    message = hooks.denial(VALIDATE, make(labels={Q: "lq"}, leader=template()), old=old)
    assert message is not None and message.startswith("spec.leaderWorkerTemplate.leaderTemplate: Invalid value: ")
    assert message.endswith("field is immutable")


def test_an_unmanaged_set_may_change_its_pods(hooks: Driver) -> None:
    assert hooks.denial(VALIDATE, make(worker=template(cpu="2")), old=make()) is None


def test_admission_gates_may_only_be_removed(hooks: Driver) -> None:
    gated = make(labels={Q: "lq"}, annotations={GATED_BY: "example.com/my-gate,example.com/other-gate"})
    for value, allowed in (
        (None, True),
        ("example.com/my-gate", True),
        ("example.com/other-gate,example.com/my-gate", True),
        ("example.com/my-gate,example.com/third-gate", False),
    ):
        new = copy.deepcopy(gated)
        if value is None:
            del new["metadata"]["annotations"][GATED_BY]
        else:
            new["metadata"]["annotations"][GATED_BY] = value
        message = hooks.denial(VALIDATE, new, old=gated)
        assert (message is None) == allowed, value
    assert hooks.denial(
        VALIDATE, make(labels={Q: "lq"}, annotations={GATED_BY: "example.com/my-gate"}), old=make(labels={Q: "lq"})
    ) == (f"metadata.annotations[{GATED_BY}]: Forbidden: cannot add admission gate after creation")


def test_queue_warnings_count_one_group(make_driver: Any) -> None:
    """Our addition (as for the other kinds): a podSet of one group (here the 4 workers of a group of
    5) asking more than the queue can ever give; the number of groups does not count."""
    cq = make_cq("cq").group(fq("f", cpu="3")).obj()
    hooks = make_driver(CONFIG, local_queue_targets={("team-a", "lq"): "cq"}, cluster_queues={"cq": cq})
    fits = hooks.send(VALIDATE, review(make(labels={Q: "lq"}, leader=template(), size=4, replicas=3)))
    assert fits["allowed"] and not fits.get("warnings")
    too_big = hooks.send(VALIDATE, review(make(labels={Q: "lq"}, leader=template(), size=5)))
    assert too_big["allowed"] and too_big.get("warnings")


def test_a_statefulset_of_a_managed_set_may_scale_freely(make_driver: Any) -> None:
    """Upstream's statefulset_webhook_test "change in replicas (scale up with LeaderWorkerSet
    ownerReference)": with the integration on, the LeaderWorkerSet (its ancestor) is what Kueue
    manages, so its StatefulSets are not held to the StatefulSet rules."""
    config = CONFIG.replace("[pod, ", "[pod, statefulset, ")
    owner = make(labels={Q: "lq"})
    hooks = make_driver(config, owners={("team-a", "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws"): owner})

    def sts(replicas: int, status_replicas: int = 0, *, owned: bool = True) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": "lws", "namespace": "team-a", "labels": {Q: "lq"}}
        if owned:
            meta["ownerReferences"] = [
                {
                    "apiVersion": "leaderworkerset.x-k8s.io/v1",
                    "kind": "LeaderWorkerSet",
                    "name": "lws",
                    "uid": "u-1",
                    "controller": True,
                }
            ]
        return {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": meta,
            "spec": {"replicas": replicas, "template": template()},
            "status": {"replicas": status_replicas},
        }

    path = "/validate-apps-v1-statefulset"
    assert hooks.denial(path, sts(4), old=sts(3)) is None
    assert hooks.denial(path, sts(3, 1), old=sts(0, 3)) is None
    assert hooks.denial(path, sts(4, owned=False), old=sts(3, owned=False)) == (
        "spec.replicas: Invalid value: 4: field is immutable"
    )


def test_a_pod_of_a_managed_set_is_gated_at_creation(hooks: Driver) -> None:
    """Queueing starts at the pod: the templates' parent annotation makes the pod webhook gate every
    pod of the set; the worker makes it a member of its group later."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "lws-0",
            "namespace": "team-a",
            "labels": {Q: "lq", "leaderworkerset.sigs.k8s.io/name": "lws"},
            "annotations": {PARENT: FRAMEWORK, SERVING: "true"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "lws", "uid": "s", "controller": True}
            ],
        },
        "spec": template()["spec"],
    }
    out = hooks.mutate("/mutate--v1-pod", pod)
    # (and, with topology-aware scheduling's gate on by default, the topology gate)
    assert {"name": "kueue.x-k8s.io/admission"} in out["spec"]["schedulingGates"]
    assert "kueue.x-k8s.io/managed" not in out["metadata"]["labels"]
