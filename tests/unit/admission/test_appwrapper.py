"""AppWrapper webhooks through the ASGI app: upstream's base webhook (`jobframework.BaseWebhook`)
over `spec.suspend`: the default LocalQueue, suspension of managed AppWrappers, and the job
validations with upstream's messages."""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest

from .reviews import Driver, apply_patch, multikueue_lookups, review

MUTATE = "/mutate-workload-codeflare-dev-v1beta2-appwrapper"
VALIDATE = "/validate-workload-codeflare-dev-v1beta2-appwrapper"
Q = "kueue.x-k8s.io/queue-name"
ENABLED = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: [workload.codeflare.dev/appwrapper]\n"
DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def make_aw(
    name: str = "aw", ns: str = "team-a", *, labels: dict[str, str] | None = None, suspend: bool | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    wrapped = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}},
    }
    spec: dict[str, Any] = {"components": [{"template": wrapped}]}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "metadata": meta, "spec": spec}


def aw_review(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> dict[str, Any]:
    body = review(obj, old=old, kind="Job")
    body["request"]["kind"] = {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"}
    body["request"]["resource"] = {"group": "workload.codeflare.dev", "version": "v1beta2", "resource": "appwrappers"}
    return body


def mutated(d: Driver, obj: dict[str, Any]) -> dict[str, Any]:
    """The AppWrapper after our patch (asserts the review was allowed)."""
    response = d.send(MUTATE, aw_review(obj))
    assert response["allowed"], response
    ops = orjson.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(obj, ops)


def denial(d: Driver, obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> str | None:
    response = d.send(VALIDATE, aw_review(obj, old=old))
    if response["allowed"]:
        return None
    assert response["status"]["code"] == 403
    return str(response["status"]["message"])


@pytest.fixture
def driver(make_driver: Any) -> Driver:
    return make_driver(ENABLED)  # type: ignore[no-any-return]


class TestMutate:
    def test_a_queued_appwrapper_is_suspended(self, driver: Driver) -> None:
        out = mutated(driver, make_aw(labels={Q: "lq"}, suspend=False))
        assert out["spec"]["suspend"] is True

    def test_one_without_suspend_gets_it(self, driver: Driver) -> None:
        assert mutated(driver, make_aw(labels={Q: "lq"}))["spec"]["suspend"] is True

    def test_an_appwrapper_without_queue_is_untouched(self, driver: Driver) -> None:
        response = driver.send(MUTATE, aw_review(make_aw(suspend=False)))
        assert response["allowed"] and "patch" not in response

    def test_default_local_queue(self, make_driver: Any) -> None:
        d = make_driver(ENABLED, local_queues=frozenset({("team-a", "default")}))
        out = mutated(d, make_aw(suspend=False))
        assert out["metadata"]["labels"][Q] == "default" and out["spec"]["suspend"] is True

    def test_manage_jobs_without_queue_name(self, make_driver: Any) -> None:
        d = make_driver(ENABLED + "manageJobsWithoutQueueName: true\n")
        assert mutated(d, make_aw(suspend=False))["spec"]["suspend"] is True
        assert mutated(d, make_aw(ns="kube-system", suspend=False))["spec"]["suspend"] is False

    def test_the_components_are_left_alone(self, driver: Driver) -> None:
        aw = make_aw(labels={Q: "lq"}, suspend=False)
        assert mutated(driver, aw)["spec"]["components"] == aw["spec"]["components"]

    def test_not_enabled_the_webhook_allows_without_a_patch(self, make_driver: Any) -> None:
        response = make_driver().send(MUTATE, aw_review(make_aw(labels={Q: "lq"}, suspend=False)))
        assert response["allowed"] and "patch" not in response


class TestValidate:
    def test_invalid_queue_name(self, driver: Driver) -> None:
        assert denial(driver, make_aw(labels={Q: "Bad_Queue"})) == (
            f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Bad_Queue": {DNS_MSG}'
        )

    def test_queue_name_may_change_while_suspended(self, driver: Driver) -> None:
        old = make_aw(labels={Q: "a"}, suspend=True)
        new = copy.deepcopy(old)
        new["metadata"]["labels"][Q] = "b"
        assert denial(driver, new, old=old) is None

    def test_queue_name_is_immutable_once_running(self, driver: Driver) -> None:
        old = make_aw(labels={Q: "a"}, suspend=False)
        new = copy.deepcopy(old)
        new["metadata"]["labels"][Q] = "b"
        assert (
            denial(driver, new, old=old)
            == 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is immutable'
        )

    def test_queue_name_cannot_be_emptied_where_a_default_queue_exists(self, make_driver: Any) -> None:
        d = make_driver(ENABLED, local_queues=frozenset({("team-a", "default")}))
        old = make_aw(labels={Q: "a"}, suspend=True)
        new = make_aw(labels={}, suspend=True)
        assert denial(d, new, old=old) == (
            'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": queue-name must not be empty in namespace '
            "with default queue"
        )

    def test_max_execution_time_must_be_positive(self, driver: Driver) -> None:
        aw = make_aw(labels={Q: "a", "kueue.x-k8s.io/max-exec-time-seconds": "0"})
        assert denial(driver, aw) == (
            "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0"
        )

    def test_elastic_is_not_supported(self, make_driver: Any) -> None:
        d = make_driver(ENABLED + "featureGates: {ElasticJobsViaWorkloadSlices: true}\n")
        aw = make_aw(labels={Q: "a"})
        aw["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
        assert denial(d, aw) == (
            "metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for "
            '"workload.codeflare.dev/v1beta2, Kind=AppWrapper"'
        )

    def test_priority_class_cannot_be_added_while_running(self, driver: Driver) -> None:
        old = make_aw(labels={Q: "a"}, suspend=False)
        new = copy.deepcopy(old)
        new["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
        assert denial(driver, new, old=old) == (
            'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": WorkloadPriorityClass cannot be '
            "added to a non-suspended workload"
        )


class TestWrappedObjects:
    """What the AppWrapper controller creates once the AppWrapper is admitted belongs to it: the
    Job and Deployment webhooks find the managed AppWrapper as ancestor and leave them running
    (`FindAncestorJobManagedByKueue`; upstream's e2e wraps a Job and a Deployment)."""

    CONFIG = (
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n"
        "  frameworks: [batch/job, deployment, workload.codeflare.dev/appwrapper]\n"
    )

    @staticmethod
    def owned(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "workload.codeflare.dev/v1beta2",
                "kind": "AppWrapper",
                "name": "aw",
                "uid": "aw-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        return obj

    def driver(self, make_driver: Any, *, queued: bool) -> Driver:
        aw = make_aw(labels={Q: "lq"} if queued else {}, suspend=False)
        aw["metadata"]["uid"] = "aw-uid"
        owners = {("team-a", "workload.codeflare.dev/v1beta2", "AppWrapper", "aw"): aw}
        return make_driver(self.CONFIG, owners=owners)  # type: ignore[no-any-return]

    @pytest.mark.parametrize(("queued", "suspended"), [(True, False), (False, True)])
    def test_a_wrapped_job(self, make_driver: Any, queued: bool, suspended: bool) -> None:
        job = self.owned(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "job-0", "namespace": "team-a", "labels": {Q: "lq"}},
                "spec": {"suspend": False, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            }
        )
        out = self.driver(make_driver, queued=queued).mutate("/mutate-batch-v1-job", job)
        assert out["spec"]["suspend"] is suspended

    def test_a_wrapped_deployments_pods_are_not_gated(self, make_driver: Any) -> None:
        deployment = self.owned(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "deployment", "namespace": "team-a", "labels": {Q: "lq"}},
                "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            }
        )
        body = review(deployment, kind="Deployment")
        response = self.driver(make_driver, queued=True).send("/mutate-apps-v1-deployment", body)
        assert response["allowed"] and "patch" not in response


@pytest.mark.parametrize(
    ("managed_by", "want"),
    [
        pytest.param(None, "kueue.x-k8s.io/multikueue", id="unset"),
        pytest.param(
            "workload.codeflare.dev/appwrapper-controller", "kueue.x-k8s.io/multikueue", id="the operator's own"
        ),
        pytest.param("example.com/foo", "example.com/foo", id="another controller's: kept"),
    ],
)
def test_managed_by_is_defaulted_for_a_multikueue_cluster_queue(
    make_driver: Any, managed_by: str | None, want: str
) -> None:
    """`BaseWebhook.Default`: `ApplyDefaultForManagedBy` (`AppWrapper.CanDefaultManagedBy`)."""
    d = make_driver(ENABLED, **multikueue_lookups("team-a", "queue"))
    aw = make_aw(labels={"kueue.x-k8s.io/queue-name": "queue"})
    if managed_by is not None:
        aw["spec"]["managedBy"] = managed_by
    assert mutated(d, aw)["spec"]["managedBy"] == want
