"""v1 Pod webhooks through the ASGI app: gating, pod groups, role hash, upstream's messages
(`pkg/controller/jobs/pod/pod_webhook_test.go`, v0.19.2, by behaviour)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.admission.pod import role_hash
from webhook.config import Configuration, Integrations

from .reviews import Driver, review

MUTATE = "/mutate--v1-pod"
VALIDATE = "/validate--v1-pod"
Q = "kueue.x-k8s.io/queue-name"
GROUP = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
POD_CONFIG = (
    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: [batch/job, pod]\n"
)


def make_pod(
    name: str = "p",
    ns: str = "team-a",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec or {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
    }


@pytest.fixture
def pods(make_driver: Any) -> Driver:
    return make_driver(POD_CONFIG)  # type: ignore[no-any-return]


def test_role_hash_vectors() -> None:
    """Upstream's test vectors: one container with empty requests, and with none."""
    assert role_hash({"spec": {"containers": [{"name": "c", "resources": {"requests": {}}}]}}) == "a9f06f3a"
    assert role_hash({"spec": {"containers": [{"name": "c"}]}}) == "7aa6c7b8"


def test_queued_pod_is_managed_gated_and_finalized(pods: Driver) -> None:
    out = pods.mutate(MUTATE, make_pod(labels={Q: "q"}))
    assert out["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert out["metadata"]["finalizers"] == ["kueue.x-k8s.io/managed"]
    gates = [g["name"] for g in out["spec"]["schedulingGates"]]
    assert gates == ["kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"]
    assert out["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] == role_hash(make_pod())


def test_pod_without_queue_is_untouched(pods: Driver) -> None:
    response = pods.send(MUTATE, review(make_pod()))
    assert response["allowed"] and "patch" not in response


def test_pod_in_unmanaged_namespace_is_untouched(pods: Driver) -> None:
    response = pods.send(MUTATE, review(make_pod(ns="kube-system", labels={Q: "q"})))
    assert response["allowed"] and "patch" not in response


def test_pod_integration_disabled_by_default(driver: Driver) -> None:
    response = driver.send(MUTATE, review(make_pod(labels={Q: "q"})))
    assert response["allowed"] and "patch" not in response


def test_pod_of_managed_job_is_left_alone(make_driver: Any) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "team-a", "uid": "j-uid", "labels": {Q: "q"}},
    }
    pod = make_pod(labels={Q: "q"})
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j-uid", "controller": True}
    ]
    d = make_driver(POD_CONFIG, owners={("team-a", "batch/v1", "Job", "j"): job})
    response = d.send(MUTATE, review(pod))
    assert response["allowed"] and "patch" not in response


def test_existing_role_hash_is_kept(pods: Driver) -> None:
    out = pods.mutate(MUTATE, make_pod(labels={Q: "q"}, annotations={"kueue.x-k8s.io/role-hash": "mine"}))
    assert out["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] == "mine"


def test_pod_index_label_is_copied(pods: Driver) -> None:
    out = pods.mutate(
        MUTATE, make_pod(labels={Q: "q", "idx": "3"}, annotations={"kueue.x-k8s.io/pod-group-pod-index-label": "idx"})
    )
    assert out["metadata"]["labels"]["kueue.x-k8s.io/pod-group-pod-index"] == "3"


def test_default_local_queue_for_pods(make_driver: Any) -> None:
    d = make_driver(POD_CONFIG, local_queues=frozenset({("team-a", "default")}))
    out = d.mutate(MUTATE, make_pod())
    assert out["metadata"]["labels"][Q] == "default"


BOTH = f"both the '{TOTAL}' annotation and the '{GROUP}' label should be set"

CREATE_CASES = [
    pytest.param(make_pod(labels={GROUP: "g"}, annotations={TOTAL: "2"}), None, id="valid group"),
    pytest.param(
        make_pod(labels={GROUP: "g"}),
        f"metadata.annotations[{TOTAL}]: Required value: {BOTH}",
        id="group name without count",
    ),
    pytest.param(
        make_pod(annotations={TOTAL: "2"}),
        f"metadata.labels[{GROUP}]: Required value: {BOTH}",
        id="count without group name",
    ),
    pytest.param(
        make_pod(labels={GROUP: "g"}, annotations={TOTAL: "two"}),
        f'metadata.annotations[{TOTAL}]: Invalid value: "two": strconv.Atoi: parsing "two": invalid syntax',
        id="count not a number",
    ),
    pytest.param(
        make_pod(labels={GROUP: "g"}, annotations={TOTAL: "0"}),
        f'metadata.annotations[{TOTAL}]: Invalid value: "0": incorrect annotation value '
        f"'{TOTAL}=0': group total count should be greater than zero",
        id="count zero",
    ),
    pytest.param(
        make_pod(labels={"kueue.x-k8s.io/managed": "yes"}),
        "metadata.labels[kueue.x-k8s.io/managed]: Forbidden: managed label value can only be 'true'",
        id="managed label value",
    ),
    pytest.param(
        make_pod(annotations={"kueue.x-k8s.io/elastic-job": "true"}),
        'metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for "/v1, Kind=Pod"',
        id="elastic pod",
    ),
    pytest.param(
        make_pod(labels={GROUP: "g", "kueue.x-k8s.io/prebuilt-workload-name": "other"}, annotations={TOTAL: "1"}),
        'metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: "other": '
        "prebuilt workload and pod group should be equal",
        id="prebuilt differs from group",
    ),
]


@pytest.mark.parametrize(("pod", "message"), CREATE_CASES)
def test_validate_create(pods: Driver, pod: dict[str, Any], message: str | None) -> None:
    assert pods.denial(VALIDATE, pod) == message


def test_group_name_is_immutable(pods: Driver) -> None:
    old = make_pod(labels={GROUP: "g"}, annotations={TOTAL: "2"})
    new = make_pod(labels={GROUP: "h"}, annotations={TOTAL: "2"})
    assert pods.denial(VALIDATE, new, old=old) == f'metadata.labels[{GROUP}]: Invalid value: "h": field is immutable'


def test_unretriable_group_stays_unretriable(pods: Driver) -> None:
    old = make_pod(labels={GROUP: "g"}, annotations={TOTAL: "2", "kueue.x-k8s.io/retriable-in-group": "false"})
    new = make_pod(labels={GROUP: "g"}, annotations={TOTAL: "2"})
    assert pods.denial(VALIDATE, new, old=old) == (
        "metadata.annotations[kueue.x-k8s.io/retriable-in-group]: Forbidden: "
        "unretriable pod group can't be converted to retriable"
    )


def test_queue_name_immutable_once_ungated(pods: Driver) -> None:
    old = make_pod(labels={Q: "a"})
    new = make_pod(labels={Q: "b"})
    assert pods.denial(VALIDATE, new, old=old) == (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is immutable'
    )
    gated = {"containers": [{"name": "c"}], "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}
    assert (
        pods.denial(VALIDATE, make_pod(labels={Q: "b"}, spec=gated), old=make_pod(labels={Q: "a"}, spec=gated)) is None
    )


def test_managed_label_warning(make_driver: Any) -> None:
    d = make_driver(POD_CONFIG)
    pod = make_pod(labels={"kueue.x-k8s.io/managed": "true"})
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
    ]
    response = d.send(VALIDATE, review(pod))
    assert response["allowed"]
    assert response["warnings"] == [
        "pod owner is managed by kueue, label 'kueue.x-k8s.io/managed=true' might lead to unexpected behaviour"
    ]


# --- TopologyAwareScheduling: the pod's own TAS annotations ----------------------------------------

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
MANAGED = "kueue.x-k8s.io/managed"
ONE_OF = f'must not contain more than one topology annotation: ["{REQUIRED}", "{PREFERRED}", "{UNCONSTRAINED}"]'


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        pytest.param({REQUIRED: "cloud.com/block"}, None, id="valid topology request"),
        pytest.param(
            {REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"},
            f"metadata.annotations: Invalid value: {ONE_OF}",
            id="invalid topology request",
        ),
    ],
)
def test_validate_create_topology(pods: Driver, annotations: dict[str, str], message: str | None) -> None:
    """Upstream's `TestValidateCreate` TAS cases: a managed pod's annotations."""
    assert pods.denial(VALIDATE, make_pod(labels={MANAGED: "true"}, annotations=annotations)) == message


def test_topology_errors_sit_between_the_group_and_the_prebuilt_checks(pods: Driver) -> None:
    """`validateCommon`: managed label, group metadata, TAS annotations, prebuilt Workload; on
    update `ValidateJobOnUpdate`'s errors come first."""
    labels = {MANAGED: "yes", GROUP: "g", "kueue.x-k8s.io/prebuilt-workload-name": "other"}
    annotations = {TOTAL: "0", SLICE_REQUIRED: "cloud.com/block"}
    errors = [
        f"metadata.labels[{MANAGED}]: Forbidden: managed label value can only be 'true'",
        f'metadata.annotations[{TOTAL}]: Invalid value: "0": incorrect annotation value '
        f"'{TOTAL}=0': group total count should be greater than zero",
        "metadata.annotations[kueue.x-k8s.io/podset-slice-size]: Required value: "
        f"must be set when '{SLICE_REQUIRED}' is specified",
        'metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: "other": '
        "prebuilt workload and pod group should be equal",
    ]
    pod = make_pod(labels=labels, annotations=annotations)
    assert pods.denial(VALIDATE, pod) == "[" + ", ".join(errors) + "]"
    old = make_pod(labels={**labels, Q: "a"}, annotations=annotations)
    new = make_pod(labels={**labels, Q: "b"}, annotations=annotations)
    queue_error = f'metadata.labels[{Q}]: Invalid value: "b": field is immutable'
    assert pods.denial(VALIDATE, new, old=old) == "[" + ", ".join([queue_error, *errors]) + "]"


def test_topology_annotations_are_checked_whatever_the_gate(make_driver: Any) -> None:
    """Upstream's pod webhook runs `ValidateTASPodSetRequest` with TopologyAwareScheduling off too."""
    no_tas = Configuration(
        integrations=Integrations(frameworks=("batch/job", "pod")), feature_gates={"TopologyAwareScheduling": False}
    )
    pod = make_pod(annotations={REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"})
    assert make_driver(no_tas).denial(VALIDATE, pod) == f"metadata.annotations: Invalid value: {ONE_OF}"
