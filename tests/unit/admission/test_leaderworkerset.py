"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet webhook through the ASGI app (upstream's
`leaderworkerset_webhook_test.go` cases, by behaviour)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import fq, make_cq
from webhook.config import Configuration, Integrations

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


# --- TopologyAwareScheduling: upstream's TAS cases of TestValidateCreate ------------------------------

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
L_ANN = "spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations"
W_ANN = "spec.leaderWorkerTemplate.workerTemplate.metadata.annotations"
ONE_OF = f'must not contain more than one topology annotation: ["{REQUIRED}", "{PREFERRED}", "{UNCONSTRAINED}"]'
NO_TAS = Configuration(
    integrations=Integrations(frameworks=("pod", "leaderworkerset.x-k8s.io/leaderworkerset")),
    feature_gates={"TopologyAwareScheduling": False},
)


def annotated(annotations: dict[str, str]) -> dict[str, Any]:
    out = template()
    out["metadata"] = {"annotations": dict(annotations)}
    return out


def tas_lws(leader: dict[str, str] | None, worker: dict[str, str], *, size: int = 1) -> dict[str, Any]:
    """`MakeLeaderWorkerSet("test-lws", "")` (1 replica, size 1) queued, with these templates'
    annotations (`leader` None: no leader template)."""
    return make(
        labels={Q: "test-queue"},
        leader=None if leader is None else annotated(leader),
        worker=annotated(worker),
        size=size,
        replicas=1,
    )


def _both(kind: str, detail: str) -> str:
    return f"[{L_ANN}[{GROUP}]: {kind}: {detail}, {W_ANN}[{GROUP}]: {kind}: {detail}]"


def _inconsistent(group: str) -> str:
    detail = f"must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with '{{}}' in group '{group}'"
    return f"[{L_ANN}: Invalid value: {detail.format(W_ANN)}, {W_ANN}: Invalid value: {detail.format(L_ANN)}]"


def _lonely(path: str, group: str) -> str:
    return f'{path}[{GROUP}]: Invalid value: "{group}": can only define groups of exactly 2 pod sets, got: 1 pod set(s)'


DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
GROUPED = {GROUP: "groupname", REQUIRED: "cloud.com/block"}
SLICED = {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block"}

TAS_CREATE_CASES = [
    pytest.param(
        tas_lws({REQUIRED: "cloud.com/block"}, {REQUIRED: "cloud.com/block"}), None, id="valid topology request"
    ),
    pytest.param(
        tas_lws(
            {REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"},
            {REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"},
        ),
        f"[{L_ANN}: Invalid value: {ONE_OF}, {W_ANN}: Invalid value: {ONE_OF}]",
        id="invalid topology request",
    ),
    pytest.param(
        tas_lws({**SLICED, SLICE_SIZE: "2"}, {**SLICED, SLICE_SIZE: "20"}, size=4),
        f'[{L_ANN}[{SLICE_SIZE}]: Invalid value: "2": must not be greater than pod set count 1, '
        f'{W_ANN}[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 3]',
        id="invalid slice topology request - slice size larger than number of podsets",
    ),
    pytest.param(
        tas_lws({SLICE_SIZE: "1"}, {SLICE_SIZE: "1"}, size=4),
        f"[{L_ANN}[{SLICE_SIZE}]: Forbidden: may not be set when '{SLICE_REQUIRED}' is not specified, "
        f"{W_ANN}[{SLICE_SIZE}]: Forbidden: may not be set when '{SLICE_REQUIRED}' is not specified]",
        id="invalid slice topology request - slice size provided without slice topology",
    ),
    pytest.param(
        tas_lws({SLICE_REQUIRED: "cloud.com/block"}, {SLICE_REQUIRED: "cloud.com/block"}, size=4),
        f"[{L_ANN}[{SLICE_SIZE}]: Required value: must be set when '{SLICE_REQUIRED}' is specified, "
        f"{W_ANN}[{SLICE_SIZE}]: Required value: must be set when '{SLICE_REQUIRED}' is specified]",
        id="invalid slice topology request - slice topology requested without slice size",
    ),
    pytest.param(
        tas_lws({**GROUPED, **SLICED, SLICE_SIZE: "1"}, {**GROUPED, **SLICED, SLICE_SIZE: "1"}, size=4),
        "["
        + ", ".join(
            f"{path}[{GROUP}]: Forbidden: may not be set when '{key}' is specified"
            for path in (L_ANN, W_ANN)
            for key in (SLICE_SIZE, SLICE_REQUIRED)
        )
        + "]",
        id="invalid slice topology request - grouping requested together with slicing",
    ),
    pytest.param(tas_lws(GROUPED, GROUPED), None, id="valid PodSet group name request"),
    pytest.param(
        tas_lws({**GROUPED, GROUP: "1234"}, {**GROUPED, GROUP: "1234"}),
        _both("Invalid value", '"1234": must not be a number'),
        id="invalid PodSet group name request - value is a number",
    ),
    pytest.param(
        tas_lws(GROUPED, {}),
        _lonely(L_ANN, "groupname"),
        id="invalid PodSet grouping request - group specified only in leader",
    ),
    pytest.param(
        tas_lws({}, GROUPED),
        _lonely(W_ANN, "groupname"),
        id="invalid PodSet grouping request - group specified only in worker",
    ),
    pytest.param(
        tas_lws({**GROUPED, GROUP: "groupname1"}, {**GROUPED, GROUP: "groupname2"}),
        f"[{_lonely(L_ANN, 'groupname1')}, {_lonely(W_ANN, 'groupname2')}]",
        id="invalid PodSet grouping request - group name does not match",
    ),
    pytest.param(
        tas_lws(GROUPED, {GROUP: "groupname", REQUIRED: "cloud.com/rack"}),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - required topology request does not match",
    ),
    pytest.param(
        tas_lws({GROUP: "groupname", PREFERRED: "cloud.com/block"}, {GROUP: "groupname", PREFERRED: "cloud.com/rack"}),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - preferred topology request does not match",
    ),
    pytest.param(
        tas_lws(GROUPED, {GROUP: "groupname", PREFERRED: "cloud.com/block"}),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - different topology annotations within group",
    ),
    pytest.param(
        tas_lws({GROUP: "groupname"}, {GROUP: "groupname"}),
        _both("Forbidden", f"may not be set when neither '{PREFERRED}' nor '{REQUIRED}' is specified"),
        id="invalid PodSet grouping request - neither preferred nor required topology is requested",
    ),
    pytest.param(
        tas_lws(None, {GROUP: "groupname", PREFERRED: "cloud.com/block"}),
        _lonely(W_ANN, "groupname"),
        id="invalid PodSet grouping request - grouping requested without leader template",
    ),
]


@pytest.mark.parametrize(("lws", "message"), TAS_CREATE_CASES)
def test_validate_create_topology(hooks: Driver, lws: dict[str, Any], message: str | None) -> None:
    """Upstream's `TestValidateCreate` TAS cases (TopologyAwareScheduling on, as by default)."""
    assert hooks.denial(VALIDATE, lws) == message


def test_a_pod_set_that_cannot_be_built_skips_the_bounds_and_the_group(hooks: Driver) -> None:
    """`podSets` fails on the leader's unconstrained flag: each template's own errors still come,
    but no slice bound (the workers' 9 > 2) nor group check (a lone group), and no Go error."""
    lws = tas_lws({UNCONSTRAINED: "maybe"}, {**SLICED, SLICE_SIZE: "9"}, size=3)
    assert hooks.denial(VALIDATE, lws) == (f'{L_ANN}[{UNCONSTRAINED}]: Invalid value: "maybe": must be a boolean value')
    lws = tas_lws({UNCONSTRAINED: "true"}, {**SLICED, SLICE_SIZE: "9"}, size=3)
    assert hooks.denial(VALIDATE, lws) == (
        f'{W_ANN}[{SLICE_SIZE}]: Invalid value: "9": must not be greater than pod set count 2'
    )


def test_without_a_leader_the_workers_are_one_pod_set_of_size(hooks: Driver) -> None:
    lws = tas_lws(None, {**SLICED, SLICE_SIZE: "4"}, size=3)
    assert hooks.denial(VALIDATE, lws) == (
        f'{W_ANN}[{SLICE_SIZE}]: Invalid value: "4": must not be greater than pod set count 3'
    )
    assert hooks.denial(VALIDATE, tas_lws(None, {**SLICED, SLICE_SIZE: "3"}, size=3)) is None


def test_topology_errors_come_last_on_create_and_first_on_update(hooks: Driver) -> None:
    """`validateCreate` appends the TAS errors after its own; `ValidateUpdate` runs it first,
    then the queue-name immutability."""
    new = tas_lws({REQUIRED: "a", PREFERRED: "b"}, {})
    new["metadata"]["labels"] = {Q: "bad/queue"}
    new["spec"]["replicas"] = -1
    create_errors = [
        f'metadata.labels[{Q}]: Invalid value: "bad/queue": {DNS_MSG}',
        "spec.replicas: Invalid value: -1: invalid LeaderWorkerSet replicas: must be >= 0, got -1",
        f"{L_ANN}: Invalid value: {ONE_OF}",
    ]
    assert hooks.denial(VALIDATE, new) == "[" + ", ".join(create_errors) + "]"
    old = tas_lws({}, {})
    old["status"]["readyReplicas"] = 1
    assert hooks.denial(VALIDATE, new, old=old) == (
        "[" + ", ".join([*create_errors, f'metadata.labels[{Q}]: Invalid value: "bad/queue": field is immutable']) + "]"
    )


def test_topology_checks_need_the_gate(make_driver: Any) -> None:
    lws = tas_lws({REQUIRED: "a", PREFERRED: "b"}, {GROUP: "g"})
    assert make_driver(NO_TAS).denial(VALIDATE, lws) is None
