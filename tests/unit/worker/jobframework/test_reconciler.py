"""The job reconcilers' work queues carry the names of upstream's controllers in their series."""

from __future__ import annotations

import pytest

from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.reconciler import queue_controller


@pytest.mark.parametrize(
    ("api_version", "kind", "controller"),
    [
        pytest.param("batch/v1", "Job", "job", id="For(Job): the kind in lower case"),
        pytest.param("jobset.x-k8s.io/v1alpha2", "JobSet", "jobset", id="JobSet"),
        pytest.param("kubeflow.org/v1", "PyTorchJob", "pytorchjob", id="a Kubeflow kind"),
        pytest.param("apps/v1", "StatefulSet", "statefulset", id="StatefulSet"),
        pytest.param("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkerset", id="LeaderWorkerSet"),
        pytest.param("v1", "Pod", "v1_pod", id="the pod integration is Named(v1_pod)"),
    ],
)
def test_queue_controller_is_upstreams_controller_name(api_version: str, kind: str, controller: str) -> None:
    integration = Integration(api_version=api_version, kind=kind, resource="x", controller_name="x-controller")
    assert queue_controller(integration) == controller
