"""apps/v1 Deployment and StatefulSet webhooks through the ASGI app (upstream's
`deployment_webhook_test.go` and `statefulset_webhook_test.go` cases, by behaviour)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from webhook.api.statefulset import workload_name_for

from .reviews import Driver, review

Q = "kueue.x-k8s.io/queue-name"
WPC = "kueue.x-k8s.io/priority-class"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
CONFIG = (
    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    "integrations:\n  frameworks: [batch/job, pod, deployment, statefulset]\n"
)


def make(
    kind: str,
    *,
    labels: dict[str, str] | None = None,
    replicas: int | None = 3,
    ready: int = 0,
    status_replicas: int = 0,
    cpu: str = "1",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "a"}},
        "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "img:1", "resources": {"requests": {"cpu": cpu}}}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    meta: dict[str, Any] = {"name": "s", "namespace": "team-a", "uid": "u-1"}
    if labels is not None:
        meta["labels"] = labels
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": meta,
        "spec": spec,
        "status": {"readyReplicas": ready, "replicas": status_replicas},
    }


@pytest.fixture
def hooks(make_driver: Any) -> Driver:
    return make_driver(CONFIG)  # type: ignore[no-any-return]


def test_deployment_queue_name_reaches_the_template(hooks: Driver) -> None:
    out = hooks.mutate("/mutate-apps-v1-deployment", make("Deployment", labels={Q: "lq", WPC: "high"}))
    meta = out["spec"]["template"]["metadata"]
    assert meta["labels"] == {"app": "a", "kueue.x-k8s.io/managed": "true", Q: "lq", WPC: "high"}
    assert meta["annotations"] == {PARENT: "deployment"}


def test_deployment_queue_change_on_update_reaches_the_template(hooks: Driver) -> None:
    old = make("Deployment", labels={Q: "bad"})
    new = make("Deployment", labels={Q: "lq"})
    new["spec"]["template"]["metadata"]["labels"][Q] = "bad"
    out = hooks.mutate("/mutate-apps-v1-deployment", new, old=old)
    assert out["spec"]["template"]["metadata"]["labels"][Q] == "lq"


def test_deployment_without_queue_is_untouched(hooks: Driver) -> None:
    response = hooks.send("/mutate-apps-v1-deployment", review(make("Deployment")))
    assert response["allowed"] and "patch" not in response


def test_deployment_integration_off_allows_everything(driver: Driver) -> None:
    assert driver.denial("/validate-apps-v1-deployment", make("Deployment", labels={Q: "in valid"})) is None


def test_deployment_queue_name_is_immutable_once_a_replica_is_ready(hooks: Driver) -> None:
    old = make("Deployment", labels={Q: "a"}, ready=1)
    message = hooks.denial("/validate-apps-v1-deployment", make("Deployment", labels={Q: "b"}), old=old)
    assert message == 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is immutable'
    assert (
        hooks.denial(
            "/validate-apps-v1-deployment", make("Deployment", labels={Q: "b"}), old=make("Deployment", labels={Q: "a"})
        )
        is None
    )


def test_deployment_queue_name_may_not_be_removed(hooks: Driver) -> None:
    message = hooks.denial(
        "/validate-apps-v1-deployment", make("Deployment", labels={}), old=make("Deployment", labels={Q: "a"})
    )
    assert message == 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": field is immutable'


def test_statefulset_template_is_marked_suspended(hooks: Driver) -> None:
    out = hooks.mutate("/mutate-apps-v1-statefulset", make("StatefulSet", labels={Q: "lq"}))
    meta = out["spec"]["template"]["metadata"]
    assert meta["annotations"] == {PARENT: "statefulset"}
    assert meta["labels"] == {"app": "a"}  # the pod reconciler labels the pods, not the template


def test_statefulset_of_another_framework_is_left_alone(hooks: Driver) -> None:
    sts = make("StatefulSet", labels={Q: "lq"}, replicas=2)
    sts["spec"]["template"]["metadata"]["annotations"] = {PARENT: "leaderworkerset"}
    response = hooks.send("/mutate-apps-v1-statefulset", review(sts))
    assert response["allowed"] and "patch" not in response
    assert (
        hooks.denial(
            "/validate-apps-v1-statefulset", copy.deepcopy(sts) | {"spec": {**sts["spec"], "replicas": 5}}, old=sts
        )
        is None
    )


def test_statefulset_replicas_change_only_to_and_from_zero(hooks: Driver) -> None:
    path = "/validate-apps-v1-statefulset"
    old = make("StatefulSet", labels={Q: "lq"}, replicas=3)
    assert (
        hooks.denial(path, make("StatefulSet", labels={Q: "lq"}, replicas=4), old=old)
        == "spec.replicas: Invalid value: 4: field is immutable"
    )
    assert hooks.denial(path, make("StatefulSet", labels={Q: "lq"}, replicas=0), old=old) is None
    zero = make("StatefulSet", labels={Q: "lq"}, replicas=0)
    assert (
        hooks.denial(path, make("StatefulSet", labels={Q: "lq"}, replicas=3, status_replicas=2), old=zero)
        == "spec.replicas: Forbidden: scaling down is still in progress"
    )
    assert hooks.denial(path, make("StatefulSet", labels={Q: "lq"}, replicas=3), old=zero) is None


def test_statefulset_scale_up_waits_for_the_old_workload(make_driver: Any) -> None:
    zero = make("StatefulSet", labels={Q: "lq"}, replicas=0)
    key = ("team-a", workload_name_for(zero, short=False))
    held = {"status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "OnHold"}]}}
    admitted = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}]}}
    up = make("StatefulSet", labels={Q: "lq"}, replicas=3)
    path = "/validate-apps-v1-statefulset"
    assert make_driver(CONFIG, workloads={key: held}).denial(path, up, old=zero) is None
    assert (
        make_driver(CONFIG, workloads={key: admitted}).denial(path, up, old=zero)
        == "spec.replicas: Forbidden: workload from previous scale-down is still being deleted"
    )


def test_statefulset_scale_up_looks_up_the_short_workload_name_under_the_gate(make_driver: Any) -> None:
    """With ShortWorkloadNames the worker names the Workload with at most 63 characters; the
    webhook must wait for that one, not for the long name."""
    zero = make("StatefulSet", labels={Q: "lq"}, replicas=0)
    zero["metadata"]["name"] = "w" * 100
    up = copy.deepcopy(zero)
    up["spec"]["replicas"] = 3
    admitted = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}]}}
    short_config = CONFIG + "featureGates:\n  ShortWorkloadNames: true\n"
    key = ("team-a", workload_name_for(zero, short=True))
    assert len(key[1]) == 63
    assert (
        make_driver(short_config, workloads={key: admitted}).denial("/validate-apps-v1-statefulset", up, old=zero)
        == "spec.replicas: Forbidden: workload from previous scale-down is still being deleted"
    )


def test_statefulset_pod_shape_is_immutable_but_the_image_is_not(hooks: Driver) -> None:
    path = "/validate-apps-v1-statefulset"
    old = make("StatefulSet", labels={Q: "lq"})
    new_image = copy.deepcopy(old)
    new_image["spec"]["template"]["spec"]["containers"][0]["image"] = "img:2"
    assert hooks.denial(path, new_image, old=old) is None
    message = hooks.denial(path, make("StatefulSet", labels={Q: "lq"}, cpu="2"), old=old)
    assert message is not None and message.startswith("spec.template.spec.containers[0].resources.requests")
    assert message.endswith("field is immutable")


def test_statefulset_workload_name_is_upstreams() -> None:
    # statefulset.GetWorkloadName(uid, name): `statefulset-<name>-` + SHA-1("StatefulSet\napps\n<name>\n<uid>")[:5]
    digest = hashlib.sha1(b"StatefulSet\napps\nweb\nabc").hexdigest()[:5]
    assert workload_name_for({"metadata": {"name": "web", "uid": "abc"}}, short=False) == f"statefulset-web-{digest}"
