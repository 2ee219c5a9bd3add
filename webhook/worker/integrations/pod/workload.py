"""The Workload of a plain Pod or a pod group: names, podSets, priority, construction, equivalence.

Mirrors, at upstream commit ff69552e79: `pkg/controller/jobframework/tas.go`, the pod parts of
`pkg/controller/jobs/pod/pod_controller.go` (`GetWorkloadNameForPod`, `constructPodSet`,
`constructGroupPodSets`, `NewGroupWorkload`, `ConstructComposableWorkload` helpers) and
`pkg/util/equality/podset.go`. What upstream's pod controller takes from the job framework
(`NewWorkload`, `ConstructWorkload`, `ExtractPriority`, Workload names) is `jobframework.plan`'s
and `webhook.api.jobs`'s here too. Pure functions; `adapter` composes them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from webhook.api import constants as c
from webhook.api import jobs
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker.integrations.pod.common import (
    DEFAULT_POD_SET,
    POD_API,
    Options,
    RetryLater,
    is_pod_suspended,
    is_runnable_or_succeeded,
    pod_event,
    pod_role,
)
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.plan import (
    Lookups,
    Priority,
    PriorityClassNotFound,
    construct_workload,
    max_execution_time_seconds,
    new_workload,
    resolve_priority,
)

__all__ = [
    "construct_pod_workload",
    "equivalent_single",
    "fast_pod_sets",
    "group_pod_sets",
    "new_group_workload",
    "with_owners",
    "workload_name_for_pod",
]

# --- naming ---------------------------------------------------------------------------------------


def workload_name_for_pod(pod_name: str, pod_uid: str, *, short: bool = False) -> str:
    """`GetWorkloadNameForPod`: the generic name with the Pod's kind (core group)."""
    return jobs.workload_name(pod_name, pod_uid, kind="Pod", short=short)


# --- podSets and Workload construction ------------------------------------------------------------


def _topology_request(pod: Obj, opts: Options) -> dict[str, Any] | None:
    """`NewPodSetTopologyRequest(meta).PodIndexLabel(pod-group-pod-index)`."""
    if not opts.tas:
        return None
    try:
        return podset.topology_request(o.annotations(pod), pod_index_label=c.POD_GROUP_POD_INDEX_LABEL)
    except ValueError as exc:
        raise RetryLater(str(exc)) from exc


def _pod_set(pod: Obj, opts: Options, *, name: str = DEFAULT_POD_SET, count: int = 1) -> dict[str, Any]:
    """`constructPodSet`: the pod's spec only (no metadata), sanitized env."""
    spec = copy.deepcopy(dict(pod.get("spec") or {}))
    podset.sanitize_env(spec)
    ps: dict[str, Any] = {"name": name, "count": count, "template": {"metadata": {}, "spec": spec}}
    topology = _topology_request(pod, opts)
    if topology is not None:
        ps["topologyRequest"] = topology
    return ps


def group_pod_sets(pods: Sequence[Obj], opts: Options) -> list[dict[str, Any]]:
    """`constructGroupPodSets`: one podSet per role among active pods, sorted by name."""
    by_role: dict[str, dict[str, Any]] = {}
    for pod in pods:
        if not is_runnable_or_succeeded(pod):
            continue
        role = pod_role(pod)
        if role in by_role:
            by_role[role]["count"] += 1
        else:
            by_role[role] = _pod_set(pod, opts, name=role.lower())
    return [by_role[role] for role in sorted(by_role, key=lambda r: r.lower())]


def fast_pod_sets(pods: Sequence[Obj], total: int, opts: Options) -> list[dict[str, Any]]:
    for pod in pods:
        if is_runnable_or_succeeded(pod):
            return [_pod_set(pod, opts, name=pod_role(pod).lower(), count=total)]
    raise RetryLater("failed to find a runnable pod in the group")


def _priority(pod: Obj, pod_sets: Sequence[Obj], lookups: Lookups) -> Priority:
    """`PrepareWorkloadPriority`: `resolve_priority`, as for any job, with a missing class reported
    as the pod integration does: the API's NotFound message (upstream's client GET), retried, and
    for a WorkloadPriorityClass a warning event on the pod."""
    try:
        return resolve_priority(
            pod, wpcs=lookups.workload_priority_classes, pcs=lookups.priority_classes, pod_sets=pod_sets
        )
    except PriorityClassNotFound as exc:
        if not exc.workload_class:
            raise RetryLater(str(exc)) from exc
        event = pod_event(pod, c.JobEventReason.WORKLOAD_PRIORITY_CLASS_NOT_FOUND, str(exc), warning=True)
        raise RetryLater(f'workloadpriorityclasses.kueue.x-k8s.io "{exc.name}" not found', [event]) from exc


def new_group_workload(
    name: str, obj: Obj, pod_sets: list[dict[str, Any]], opts: Options, lookups: Lookups
) -> dict[str, Any]:
    """`NewGroupWorkload`: the generic `new_workload` of the (first) pod or the StatefulSet `obj`,
    marked as a group's, its priority resolved as a pod's; its owners and labels are the caller's."""
    wl = new_workload(
        name, obj, pod_sets, admission_gated_by=opts.admission_gated_by, priority=_priority(obj, pod_sets, lookups)
    )
    wl["metadata"].setdefault("annotations", {})[c.IS_GROUP_WORKLOAD] = "true"
    return wl


def construct_pod_workload(pod: Obj, opts: Options, lookups: Lookups) -> dict[str, Any]:
    """`ConstructWorkload` for a single pod, as upstream's pod controller calls it:
    `pod-<name>-<hash5>` with one `main` podSet, its priority resolved as a pod's."""
    pod_sets = [_pod_set(pod, opts)]
    return construct_workload(
        workload_name_for_pod(o.name(pod), o.uid(pod), short=opts.short_workload_names),
        pod,
        pod_sets,
        api_version=POD_API,
        kind="Pod",
        label_keys_to_copy=opts.label_keys_to_copy,
        annotations_to_copy=opts.annotations_to_copy,
        admission_gated_by=opts.admission_gated_by,
        priority=_priority(pod, pod_sets, lookups),
    )


def _owner_ref(pod: Obj) -> dict[str, Any]:
    return {"apiVersion": POD_API, "kind": "Pod", "name": o.name(pod), "uid": o.meta(pod).get("uid", "")}


def with_owners(refs: Sequence[Obj], pods: Sequence[Obj]) -> list[dict[str, Any]]:
    """`controllerutil.SetOwnerReference` per pod: upsert by kind and name, never as controller."""
    out = [dict(r) for r in refs]
    for pod in pods:
        new = _owner_ref(pod)
        for i, ref in enumerate(out):
            if (
                ref.get("kind") == "Pod"
                and ref.get("apiVersion", "").split("/")[0] in ("v1", "")
                and ref.get("name") == new["name"]
            ):
                out[i] = {**ref, **new}
                break
        else:
            out.append(new)
    return out


# --- single-pod equivalence -----------------------------------------------------------------------


def equivalent_single(pod: Obj, wl: Obj, opts: Options, lookups: Lookups) -> bool:
    owner = o.controller_of(wl) or {}
    if owner.get("name") != o.name(pod):
        return False
    if opts.finish_orphaned_workloads and owner.get("uid") != o.meta(pod).get("uid"):
        return False
    if (wl.get("spec") or {}).get("maximumExecutionTimeSeconds") != max_execution_time_seconds(pod):
        return False
    job = [_pod_set(pod, opts)]
    ignore = o.is_admitted(wl)
    running = podset.expected_running_pod_sets(
        wl, lookups.resource_flavors, tas=opts.tas, assign_queue_labels=opts.assign_queue_labels
    )
    wl_sets = (wl.get("spec") or {}).get("podSets") or []
    if running is not None:
        if podset.same_pod_sets(job, running, ignore_tolerations=ignore):
            return True
        return is_pod_suspended(pod) and podset.same_pod_sets(job, wl_sets, ignore_tolerations=ignore)
    return podset.same_pod_sets(job, wl_sets, ignore_tolerations=ignore)
