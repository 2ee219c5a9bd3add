"""The MultiKueue adapter of batch/v1 Jobs: the worker's copy of a Job and the status it sends back.

The copy keeps the Job's metadata and spec, less what the worker's Job controller must own (the
selector, the controller's pod template labels, `spec.managedBy`), and gains the origin label and
the prebuilt Workload name, so the worker's Kueue admits it through the Workload the manager
created there. The remote status is copied back once the local Job runs, while both are
suspended, or when the remote finished; otherwise the local Job stays as it is and the sync is
deferred. An elastic Job's resize reaches the remote as a parallelism patch.

Mirrors upstream v0.19.2 `pkg/controller/jobs/job/job_multikueue_adapter.go` (`SyncJob`,
`determineStatusUpdate`, `IsJobManagedByKueue`, `WorkloadKeysFor`, `needElasticJobSync`,
`syncElasticJob`), `job_controller.go:cleanLabels` and `jobframework/utils.go`
(`SetMultiKueueMeta`, `SetPrebuiltWorkloadName`).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import jobs
from webhook.api import objects as o
from webhook.api.integrations import BATCH_JOB, Framework
from webhook.api.objects import Obj
from webhook.worker.integrations import batchjob
from webhook.worker.integrations.multikueue import (
    MultiKueueAdapter,
    copy_meta,
    prebuilt_name_meta,
    prebuilt_workload_keys,
)
from webhook.worker.jobframework import workload_slices

__all__ = [
    "ADAPTER",
    "SUSPENDED_MESSAGE",
    "SUSPENDED_REASON",
    "JobAdapter",
]

SUSPENDED_REASON = "MultiKueueAdapter"
SUSPENDED_MESSAGE = "Set by MultiKueue adapter"
_JOB_SUSPENDED = "JobSuspended"
# The Job controller's pod template labels the copy must not carry (`managedLabels` less
# `batch.kubernetes.io/job-name`, which `cleanLabels` keeps).
_CONTROLLER_TEMPLATE_LABELS = ("job-name", "controller-uid", "batch.kubernetes.io/controller-uid")


def _finished(job: Obj) -> bool:
    return batchjob.finished_condition(job) is not None


def _condition_true(job: Obj, ctype: str) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return bool(cond.get("status") == "True")
    return False


def _parallelism(job: Obj) -> int:
    return int((job.get("spec") or {}).get("parallelism") or 0)


class JobAdapter:
    """`multiKueueAdapter` of `pkg/controller/jobs/job`."""

    framework: Framework = BATCH_JOB
    watches_remote: bool = True
    patch_status: bool = False

    def managed(self, local: Obj) -> tuple[bool, str]:
        """`IsJobManagedByKueue`: only Jobs handed to MultiKueue through `spec.managedBy`."""
        managed_by = str((local.get("spec") or {}).get("managedBy") or "")
        if managed_by != c.MULTIKUEUE_CONTROLLER:
            return False, f'Expecting spec.managedBy to be "{c.MULTIKUEUE_CONTROLLER}" not "{managed_by}"'
        return True, ""

    def group(self, local: Obj) -> str | None:
        """A Job is synced alone."""
        return None

    def remote_body(self, local: Obj, workload: str, origin: str, *, identifier_annotations: bool) -> dict[str, Any]:
        """The Job to create on the worker (`SyncJob`'s create branch)."""
        meta = copy_meta(local, workload, origin, identifier_annotations=identifier_annotations)
        spec = copy.deepcopy(dict(local.get("spec") or {}))
        spec.pop("selector", None)
        spec.pop("managedBy", None)  # the worker's Job controller takes over
        template_meta = (spec.get("template") or {}).get("metadata") or {}
        template_labels = {
            k: v for k, v in (template_meta.get("labels") or {}).items() if k not in _CONTROLLER_TEMPLATE_LABELS
        }
        if "labels" in template_meta:
            if template_labels:
                template_meta["labels"] = template_labels
            else:
                del template_meta["labels"]
        return {"apiVersion": BATCH_JOB.api_version, "kind": BATCH_JOB.kind, "metadata": meta, "spec": spec}

    def status_update(self, local: Obj, remote: Obj, *, now: datetime) -> tuple[dict[str, Any] | None, bool]:
        """`determineStatusUpdate`: the remote status once the local Job runs, while both are
        suspended (so `active` drops after a remote eviction), or when the remote finished.
        Otherwise (local suspended, remote running) nothing is copied: a started local Job could
        no longer take the spec changes admission makes. The local Job then only gains
        `JobSuspended=True`, which newer API servers require of a suspended Job, and the sync is
        deferred."""
        current = dict(local.get("status") or {})
        if not batchjob.is_suspended(local) or batchjob.is_suspended(remote) or _finished(remote):
            new, deferred = copy.deepcopy(dict(remote.get("status") or {})), False
        elif not _condition_true(local, _JOB_SUSPENDED):
            stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            condition = {
                "type": _JOB_SUSPENDED,
                "status": "True",
                "reason": SUSPENDED_REASON,
                "message": SUSPENDED_MESSAGE,
                "lastTransitionTime": stamp,
                "lastProbeTime": stamp,
            }
            conditions = [dict(cond) for cond in current.get("conditions") or ()]
            at = next((i for i, cond in enumerate(conditions) if cond.get("type") == _JOB_SUSPENDED), None)
            if at is None:
                conditions.append(condition)
            else:
                conditions[at] = condition
            new, deferred = {**copy.deepcopy(current), "conditions": conditions}, True
        else:
            return None, True
        return (None if new == current else new), deferred

    def remote_spec_patch(
        self,
        local: Obj,
        remote: Obj,
        workload: str,
        *,
        elastic_enabled: bool,
        identifier_annotations: bool,
        short_names: bool,
    ) -> dict[str, Any] | None:
        """`needElasticJobSync` + `syncElasticJob`: a merge patch giving the remote the local
        parallelism and naming `workload` as its prebuilt Workload. A reconcile that still sees
        the old slice while the Job already grew is stale and patches nothing."""
        if not workload_slices.is_elastic(local, enabled=elastic_enabled):
            return None
        old, new = _parallelism(remote), _parallelism(local)
        generation = str(int(o.meta(local).get("generation") or 0))
        newest = batchjob.workload_name(o.name(local), o.uid(local), extra=generation, short=short_names)
        if old < new and workload != newest:
            return None
        current = jobs.prebuilt_workload_name(remote, identifier_annotations=identifier_annotations)
        patch: dict[str, Any] = {}
        if old != new:
            patch["spec"] = {"parallelism": (local.get("spec") or {}).get("parallelism")}
        if current != workload:
            section, key = prebuilt_name_meta(workload, identifier_annotations=identifier_annotations)
            patch["metadata"] = {section: {key: workload}}
        return patch or None

    def workload_keys(self, remote: Obj, *, identifier_annotations: bool) -> list[str]:
        """`WorkloadKeysFor`."""
        return prebuilt_workload_keys(remote, "job", identifier_annotations=identifier_annotations)


ADAPTER: MultiKueueAdapter = JobAdapter()
