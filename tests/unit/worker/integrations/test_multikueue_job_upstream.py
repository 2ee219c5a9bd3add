"""Upstream v0.19.2 `pkg/controller/jobs/job/job_multikueue_adapter_test.go`, case by case under
upstream's names, against the pure batch/v1 Job MultiKueue adapter (`integrations.multikueue.job`).

Upstream's `SyncJob` reads both Jobs and writes the result; here `_sync_job` does those writes on
plain dicts the way the MultiKueue reconciler will: a missing remote is created from
`remote_body`, else the local status becomes `status_update`'s and `remote_spec_patch` is merged
into the remote. Each case compares the resulting local and remote Jobs (and the deferred flag).

Ported: `TestMultiKueueAdapter` (all but one case), `Test_multiKueueAdapter_SyncJob` (all but
three) and `Test_multiKueueAdapter_SyncJob_DeferredWhenLocalSuspended`. Not ported, because they
test the API calls the reconciler makes rather than the adapter's decisions:
`TestMultiKueueAdapter/remote job is deleted` (a DELETE with Background propagation),
`TestMultiKueueAdapter/missing job is not considered managed` (a failed GET), and
`FailureToRetrieveLocalJob`, `FailureToRetrieveRemoteJob`, `ElasticJob_RemoteOutOfSync_PatchFailure`
(client errors).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from webhook.api import constants as c
from webhook.api.multikueue import ORIGIN_LABEL
from webhook.worker.integrations import batchjob
from webhook.worker.integrations.multikueue import job as mkjob

NS = "ns"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
PREBUILT = c.PREBUILT_WORKLOAD_LABEL
ELASTIC = c.ELASTIC_JOB
RUNNING = {"type": "SuccessCriteriaMet", "status": "False"}
COMPLETE = {"type": "Complete", "status": "True"}
FAILED = {"type": "Failed", "status": "True"}
ADAPTER = mkjob.ADAPTER

Obj = dict[str, Any]


class JobBuilder:
    """Upstream's `testingjobs/job.MakeJob`: parallelism 1, suspended, one container."""

    def __init__(self, name: str) -> None:
        self.job: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "parallelism": 1,
                "suspend": True,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}},
            },
        }

    def clone(self) -> JobBuilder:
        out = JobBuilder("")
        out.job = copy.deepcopy(self.job)
        return out

    def suspend(self, value: bool) -> JobBuilder:
        self.job["spec"]["suspend"] = value
        return self

    def managed_by(self, value: str) -> JobBuilder:
        self.job["spec"]["managedBy"] = value
        return self

    def label(self, key: str, value: str) -> JobBuilder:
        self.job["metadata"].setdefault("labels", {})[key] = value
        return self

    def annotation(self, key: str, value: str) -> JobBuilder:
        self.job["metadata"].setdefault("annotations", {})[key] = value
        return self

    def parallelism(self, value: int) -> JobBuilder:
        self.job["spec"]["parallelism"] = value
        return self

    def active(self, value: int) -> JobBuilder:
        self.job.setdefault("status", {})["active"] = value
        return self

    def condition(self, cond: Obj) -> JobBuilder:
        self.job.setdefault("status", {}).setdefault("conditions", []).append(dict(cond))
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self.job)


def _merge(target: Obj, patch: Obj) -> None:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        elif value is None:
            target.pop(key, None)
        else:
            target[key] = copy.deepcopy(value)


def _sync_job(
    local: Obj,
    remote: Obj | None,
    workload: str,
    origin: str,
    *,
    identifier_annotations: bool = True,
    elastic: bool = False,
) -> tuple[Obj, Obj, bool]:
    """What the reconciler's `sync_job` does with the adapter: (local, remote, deferred) after it."""
    if remote is None:
        return local, ADAPTER.remote_body(local, workload, origin, identifier_annotations=identifier_annotations), False
    local, remote = copy.deepcopy(local), copy.deepcopy(remote)
    status, deferred = ADAPTER.status_update(local, remote, now=NOW)
    if status is not None:
        local["status"] = status
    patch = ADAPTER.remote_spec_patch(
        local,
        remote,
        workload,
        elastic_enabled=elastic,
        identifier_annotations=identifier_annotations,
        short_names=False,
    )
    if patch is not None:
        _merge(remote, patch)
    return local, remote, deferred


def _drop_empty(obj: Any) -> Any:
    """Upstream compares with `cmpopts.EquateEmpty`."""
    if isinstance(obj, dict):
        return {k: _drop_empty(v) for k, v in obj.items() if v not in ({}, [], None)}
    if isinstance(obj, list):
        return [_drop_empty(v) for v in obj]
    return obj


BASE = JobBuilder("job1").suspend(False)
MANAGED = BASE.clone().managed_by(c.MULTIKUEUE_CONTROLLER)


# == TestMultiKueueAdapter =========================================================================

SYNC_CASES: dict[str, tuple[Obj, Obj | None, bool, Obj, Obj]] = {
    # name: (manager's job, worker's job, WorkloadIdentifierAnnotations, want manager's, want worker's)
    "sync creates missing remote job": (
        MANAGED.obj(),
        None,
        False,
        MANAGED.obj(),
        BASE.clone().label(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").obj(),
    ),
    "sync intermediate status from remote job": (
        MANAGED.obj(),
        BASE.clone().label(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").active(2).obj(),
        False,
        MANAGED.clone().active(2).obj(),
        BASE.clone().label(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").active(2).obj(),
    ),
    "sync intermediate status from remote suspended job": (
        MANAGED.clone().suspend(True).obj(),
        BASE.clone().label(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").suspend(True).active(2).obj(),
        False,
        MANAGED.clone().suspend(True).active(2).obj(),
        BASE.clone().label(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").suspend(True).active(2).obj(),
    ),
    "sync final status from remote job": (
        MANAGED.obj(),
        BASE.clone().label(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").condition(COMPLETE).obj(),
        False,
        MANAGED.clone().condition(COMPLETE).obj(),
        BASE.clone().label(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").condition(COMPLETE).obj(),
    ),
    "sync creates missing remote job, WorkloadIdentifierAnnotations enabled": (
        MANAGED.obj(),
        None,
        True,
        MANAGED.obj(),
        BASE.clone().annotation(PREBUILT, "wl1").label(ORIGIN_LABEL, "origin1").obj(),
    ),
}


@pytest.mark.parametrize("name", list(SYNC_CASES))
def test_multikueue_adapter_sync(name: str) -> None:
    """TestMultiKueueAdapter: the sync cases."""
    local, remote, gate, want_local, want_remote = SYNC_CASES[name]
    got_local, got_remote, _ = _sync_job(local, remote, "wl1", "origin1", identifier_annotations=gate)
    assert _drop_empty(got_local) == _drop_empty(want_local)
    assert _drop_empty(got_remote) == _drop_empty(want_remote)


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(
            BASE.obj(),
            (False, 'Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""'),
            id="job with wrong managedBy is not considered managed",
        ),
        pytest.param(MANAGED.obj(), (True, ""), id="job managedBy multikueue"),
    ],
)
def test_multikueue_adapter_managed(job: Obj, want: tuple[bool, str]) -> None:
    """TestMultiKueueAdapter: the IsJobManagedByKueue cases, with upstream's rejection reason."""
    assert ADAPTER.managed(job) == want


def test_remote_body_drops_what_the_worker_controller_owns() -> None:
    """`SyncJob`'s create branch with `cleanLabels` (job_controller_test.go `TestCleanLabels`'s
    labels): no selector, no managedBy, no controller template labels but `batch.kubernetes.io/job-name`."""
    local = MANAGED.clone().label(c.JOB_UID_LABEL, "uid1").obj()
    local["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": "uid1"}}
    local["spec"]["template"]["metadata"] = {
        "labels": {
            "job-name": "job1",
            "controller-uid": "uid1",
            "batch.kubernetes.io/controller-uid": "uid1",
            "batch.kubernetes.io/job-name": "job1",
            "app": "x",
        }
    }
    body = ADAPTER.remote_body(local, "wl1", "origin1", identifier_annotations=True)
    assert "selector" not in body["spec"] and "managedBy" not in body["spec"]
    assert body["spec"]["template"]["metadata"]["labels"] == {"batch.kubernetes.io/job-name": "job1", "app": "x"}
    assert body["metadata"]["labels"] == {c.JOB_UID_LABEL: "uid1", ORIGIN_LABEL: "origin1"}
    assert body["metadata"]["annotations"] == {PREBUILT: "wl1"}


def test_remote_body_puts_a_long_workload_name_in_an_annotation() -> None:
    """`SetPrebuiltWorkloadName`: a name too long for a label value goes to the annotation even
    with WorkloadIdentifierAnnotations off."""
    name = "w" * 64
    body = ADAPTER.remote_body(MANAGED.obj(), name, "origin1", identifier_annotations=False)
    assert body["metadata"]["annotations"] == {PREBUILT: name}
    assert PREBUILT not in body["metadata"]["labels"]


# == Test_multiKueueAdapter_SyncJob ================================================================

WL_NAME = batchjob.workload_name("test", "", extra="0")  # GetWorkloadNameForOwnerWithGVKAndGeneration


def new_job() -> JobBuilder:
    return JobBuilder("test")


def elastic() -> JobBuilder:
    return new_job().annotation(ELASTIC, "true")


SYNC_JOB_CASES: dict[str, tuple[Obj, Obj | None, str, dict[str, bool], bool, Obj | None, Obj | None]] = {
    # name: (local, remote, workload, gates, want deferred, want local, want remote)
    "RemoteJobNotFound": (
        new_job().managed_by("parent").obj(),
        None,
        "",
        {"identifier_annotations": False},
        False,
        new_job().managed_by("parent").obj(),
        new_job().label(ORIGIN_LABEL, "origin1").label(PREBUILT, "").obj(),
    ),
    "RemoteJobInProgress_LocalIsManagedButStillSuspended": (
        new_job().obj(),
        new_job().label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
        "",
        {},
        False,
        new_job().condition(RUNNING).obj(),
        new_job().label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
    ),
    "RemoteJobInProgress_LocalIsManagedAndUnsuspended": (
        new_job().suspend(False).obj(),
        new_job().label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
        "",
        {},
        False,
        new_job().suspend(False).condition(RUNNING).obj(),
        new_job().label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
    ),
    "RemoteJobFinished_Completed": (
        new_job().suspend(False).obj(),
        new_job().label(ORIGIN_LABEL, "origin1").condition(COMPLETE).obj(),
        "",
        {},
        False,
        new_job().condition(COMPLETE).suspend(False).obj(),
        None,
    ),
    "RemoteJobFinished_Failed": (
        new_job().suspend(False).obj(),
        new_job().label(ORIGIN_LABEL, "origin1").suspend(False).condition(FAILED).obj(),
        "",
        {},
        False,
        new_job().suspend(False).condition(FAILED).obj(),
        None,
    ),
    "ElasticJob_RemoteInSync": (
        elastic().condition(RUNNING).obj(),
        elastic().label(PREBUILT, "test-workload").label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
        "test-workload",
        {"elastic": True},
        False,
        elastic().condition(RUNNING).obj(),
        elastic().label(PREBUILT, "test-workload").label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
    ),
    "ElasticJob_LocalIsStale": (
        elastic().parallelism(2).condition(RUNNING).obj(),
        elastic().label(PREBUILT, "test-workload").label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
        "test-workload",
        {"elastic": True},
        False,
        elastic().parallelism(2).condition(RUNNING).obj(),
        elastic().label(PREBUILT, "test-workload").label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
    ),
    "ElasticJob_WorkloadNameOnlyChange_EdgeCase": (
        elastic().condition(RUNNING).obj(),
        elastic().label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
        "test-workload-new",
        {"elastic": True},
        False,
        elastic().condition(RUNNING).obj(),
        elastic().annotation(PREBUILT, "test-workload-new").label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
    ),
    "ElasticJob_RemoteOutOfSync": (
        elastic().parallelism(22).condition(RUNNING).obj(),
        elastic().label(PREBUILT, "test-workload").label(ORIGIN_LABEL, "origin1").condition(RUNNING).obj(),
        WL_NAME,
        {"elastic": True},
        False,
        elastic().parallelism(22).condition(RUNNING).obj(),
        elastic()
        .label(PREBUILT, "test-workload")
        .annotation(PREBUILT, "job-test-f53b2")
        .label(ORIGIN_LABEL, "origin1")
        .parallelism(22)
        .condition(RUNNING)
        .obj(),
    ),
    # Regression (#11115): the elastic patch must not swallow the deferred flag.
    "ElasticJob_DeferredWhenLocalSuspended": (
        elastic().parallelism(22).condition(RUNNING).obj(),
        elastic()
        .suspend(False)
        .label(PREBUILT, "test-workload")
        .label(ORIGIN_LABEL, "origin1")
        .condition(RUNNING)
        .obj(),
        WL_NAME,
        {"elastic": True},
        True,
        None,
        None,
    ),
}


@pytest.mark.parametrize("name", list(SYNC_JOB_CASES))
def test_sync_job(name: str) -> None:
    """Test_multiKueueAdapter_SyncJob."""
    local, remote, workload, gates, want_deferred, want_local, want_remote = SYNC_JOB_CASES[name]
    got_local, got_remote, deferred = _sync_job(local, remote, workload, "origin1", **gates)
    assert deferred is want_deferred
    if want_local is not None:
        assert _drop_empty(got_local) == _drop_empty(want_local)
    if want_remote is not None:
        assert _drop_empty(got_remote) == _drop_empty(want_remote)


def test_elastic_remote_patch_is_a_merge_patch() -> None:
    """`syncElasticJob` patches only parallelism and the prebuilt name."""
    local = elastic().parallelism(22).obj()
    remote = elastic().label(PREBUILT, "test-workload").obj()
    patch = ADAPTER.remote_spec_patch(
        local, remote, WL_NAME, elastic_enabled=True, identifier_annotations=True, short_names=False
    )
    assert patch == {"spec": {"parallelism": 22}, "metadata": {"annotations": {PREBUILT: "job-test-f53b2"}}}
    assert (
        ADAPTER.remote_spec_patch(
            local, remote, WL_NAME, elastic_enabled=False, identifier_annotations=True, short_names=False
        )
        is None
    )


def test_sync_job_deferred_when_local_suspended() -> None:
    """Test_multiKueueAdapter_SyncJob_DeferredWhenLocalSuspended: the local Job keeps its status
    (`active` is not copied) and gains JobSuspended=True from the adapter; the sync is deferred."""
    local = new_job().obj()
    remote = new_job().label(ORIGIN_LABEL, "origin1").suspend(False).active(1).obj()
    status, deferred = ADAPTER.status_update(local, remote, now=NOW)
    assert deferred is True
    assert status == {
        "conditions": [
            {
                "type": "JobSuspended",
                "status": "True",
                "reason": "MultiKueueAdapter",
                "message": "Set by MultiKueue adapter",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "lastProbeTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    suspended = new_job().condition({"type": "JobSuspended", "status": "True", "reason": "JobSuspended"}).obj()
    assert ADAPTER.status_update(suspended, remote, now=NOW) == (None, True)


def test_workload_keys() -> None:
    """`WorkloadKeysFor`: the prebuilt Workload's key, or upstream's error without one."""
    remote = new_job().annotation(PREBUILT, "wl1").obj()
    assert ADAPTER.workload_keys(remote, identifier_annotations=True) == [f"{NS}/wl1"]
    with pytest.raises(ValueError, match="no prebuilt workload found for job: ns/test"):
        ADAPTER.workload_keys(new_job().obj(), identifier_annotations=True)
