"""The MultiKueue adapters whose worker copy runs under its own operator and whose status comes back
whole (upstream's JobSet, AppWrapper, TrainJob, MPIJob and Kubeflow training-job adapters): the copy
without `managedBy` (where each kind keeps it), the managed check, the status and the event keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from webhook.api import constants as c
from webhook.api.multikueue import ORIGIN_LABEL
from webhook.worker.reconcilers.multikueue import adapters_for

FRAMEWORKS = (
    "jobset.x-k8s.io/jobset",
    "workload.codeflare.dev/appwrapper",
    "trainer.kubeflow.org/trainjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
)
ADAPTERS = adapters_for(FRAMEWORKS)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_each_kind_has_its_adapter() -> None:
    assert sorted(a.framework.name for a in ADAPTERS.values()) == sorted(FRAMEWORKS)


def _job(adapter: Any, managed_by: str | None) -> dict[str, Any]:
    kubeflow = adapter.framework.group == "kubeflow.org"
    holder: dict[str, Any] = {} if managed_by is None else {"managedBy": managed_by}
    spec: dict[str, Any] = {"runPolicy": {"suspend": True, **holder}} if kubeflow else {"suspend": True, **holder}
    return {
        "apiVersion": adapter.framework.api_version,
        "kind": adapter.framework.kind,
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "labels": {c.QUEUE_LABEL: "lq"}},
        "spec": spec,
        "status": {},
    }


@pytest.mark.parametrize("gvk", sorted(ADAPTERS))
def test_the_copy_loses_managed_by_and_gains_the_origin(gvk: str) -> None:
    adapter = ADAPTERS[gvk]
    local = _job(adapter, c.MULTIKUEUE_CONTROLLER)
    assert adapter.managed(local) == (True, "")
    body = adapter.remote_body(local, "wl", "multikueue", identifier_annotations=True)
    assert body["metadata"] == {
        "name": "j",
        "namespace": "ns",
        "labels": {c.QUEUE_LABEL: "lq", ORIGIN_LABEL: "multikueue"},
        "annotations": {c.PREBUILT_WORKLOAD_LABEL: "wl"},
    }
    assert body["spec"] == _job(adapter, None)["spec"]
    assert local["spec"] == _job(adapter, c.MULTIKUEUE_CONTROLLER)["spec"]  # the local job is untouched
    assert adapter.workload_keys(body, identifier_annotations=True) == ["ns/wl"]


@pytest.mark.parametrize("gvk", sorted(ADAPTERS))
def test_a_job_handed_to_another_controller_is_not_managed(gvk: str) -> None:
    adapter = ADAPTERS[gvk]
    assert adapter.managed(_job(adapter, "example.com/foo")) == (
        False,
        'Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "example.com/foo"',
    )


@pytest.mark.parametrize("gvk", sorted(ADAPTERS))
def test_the_remote_status_comes_back_whole_and_only_when_it_changed(gvk: str) -> None:
    adapter = ADAPTERS[gvk]
    local, remote = _job(adapter, c.MULTIKUEUE_CONTROLLER), _job(adapter, None)
    remote["status"] = {"conditions": [{"type": "Running", "status": "True"}], "startTime": "2026-01-01T00:00:00Z"}
    assert adapter.status_update(local, remote, now=NOW) == (remote["status"], False)
    local["status"] = dict(remote["status"])
    assert adapter.status_update(local, remote, now=NOW) == (None, False)
