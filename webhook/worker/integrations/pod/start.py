"""Start and stop pods: apply an admission to gated pods, or mark and delete running ones.

Mirrors, at upstream commit ff69552e79: `pkg/podset/podset.go` (`FromAssignment`, `Merge`),
`startJob`/`stopJob` in `pkg/controller/jobframework/reconciler.go` and `Pod.Run`/`Pod.Stop` in
`pkg/controller/jobs/pod/pod_controller.go`. Starting a group is all-or-nothing here (upstream
patches pods in parallel and may ungate some before hitting a conflict).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker.integrations.pod.common import (
    Options,
    RetryLater,
    is_gated,
    is_pod_suspended,
    parse_timestamp,
    pod_event,
    pod_ref,
    pod_role,
    remove_finalizers,
    rfc3339,
)
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.interface import StartConflict
from webhook.worker.jobframework.plan import Lookups
from webhook.worker.jobframework.podset import PermanentError

__all__ = [
    "eviction_reason",
    "start_pods",
    "stop_pods",
]

# --- start: podSet infos and the per-pod patch ----------------------------------------------------


def _pod_set_infos(wl: Obj, lookups: Lookups, opts: Options) -> list[podset.PodSetInfo]:
    """`getPodSetsInfoFromStatus` with the pod reconciler's options; a missing flavor is retried."""
    try:
        return podset.from_admission(
            wl, lookups.resource_flavors, tas=opts.tas, assign_queue_labels=opts.assign_queue_labels
        )
    except podset.FlavorNotFound as exc:
        raise RetryLater(str(exc)) from exc


def _start_patch(pod: Obj, info: podset.PodSetInfo, ungates: ja.GateRemoval | None = None) -> ja.PatchPod:
    """`prepare`: merge the podSet info into the pod, then lift the admission (and topology) gate."""
    spec = pod.get("spec") or {}
    base = podset.PodSetInfo.of_template(pod)
    merged = podset.merge(base, info)
    gates = [g for g in merged.scheduling_gates if g.get("name") != c.ADMISSION_GATE]
    if {"name": c.TOPOLOGY_GATE} not in info.scheduling_gates:
        gates = [g for g in gates if g.get("name") != c.TOPOLOGY_GATE]
    meta: dict[str, Any] = {}
    for key, old, new in (
        ("labels", base.labels, merged.labels),
        ("annotations", base.annotations, merged.annotations),
    ):
        added = {k: v for k, v in new.items() if old.get(k) != v}
        if added:
            meta[key] = added
    spec_patch: dict[str, Any] = {}
    selector = {k: v for k, v in merged.node_selector.items() if base.node_selector.get(k) != v}
    if selector:
        spec_patch["nodeSelector"] = selector
    if merged.tolerations != list(spec.get("tolerations") or ()):
        spec_patch["tolerations"] = merged.tolerations
    if gates != list(spec.get("schedulingGates") or ()):
        spec_patch["schedulingGates"] = gates
    patch: dict[str, Any] = {}
    if meta:
        patch["metadata"] = meta
    if spec_patch:
        patch["spec"] = spec_patch
    return ja.PatchPod(pod=pod_ref(pod), patch=patch, gate_removal=ungates)


def start_pods(pods: Sequence[Obj], wl: Obj, *, is_group: bool, opts: Options, lookups: Lookups) -> list[ja.JobAction]:
    """`startJob` + `Pod.Run`: one patch and one `Started` event per gated pod; raises
    `StartConflict` when the admission does not fit the pods, `RetryLater` while a flavor is unknown."""
    cluster_queue = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
    message = f"Admitted by clusterQueue {cluster_queue}"
    # Timed from the Admitted transition, and only while Admitted is True (`RecordPodSchedulingGateRemovalSeconds`).
    admitted = o.find_condition(wl, c.WorkloadCondition.ADMITTED) or {}
    admitted_at = (
        parse_timestamp(admitted.get("lastTransitionTime"))
        if admitted.get("status") == "True" and admitted.get("lastTransitionTime")
        else None
    )
    ungates = None if admitted_at is None else ja.GateRemoval(cluster_queue, is_group, admitted_at)
    try:
        infos = _pod_set_infos(wl, lookups, opts)
        if not is_group and len(infos) != 1:
            raise PermanentError(f"invalid podset infos: expecting 1 pod set got {len(infos)}")
        out: list[ja.JobAction] = []
        for pod in pods:
            if not is_gated(pod):
                continue
            if is_group:
                role = pod_role(pod)
                info = next((i for i in infos if i.name == role), None)
                if info is None:
                    raise PermanentError(f"invalid podset infos: podSetInfo with the name '{role}' is not found")
            else:
                info = infos[0]
            out += [_start_patch(pod, info, ungates), pod_event(pod, c.JobEventReason.STARTED, message)]
    except PermanentError as exc:
        raise StartConflict(str(exc)) from exc
    return out


# --- stop -----------------------------------------------------------------------------------------


def stop_pods(
    pods: Sequence[Obj], *, reason: str, message: str, now: datetime, finalize: Sequence[Obj] = ()
) -> list[ja.JobAction]:
    """`Pod.Stop`: mark each live pod TerminationTarget, delete it, and report `Stopped` on it."""
    out: list[ja.JobAction] = []
    for pod in pods:
        if o.is_deleting(pod) or (reason != c.StopReason.WORKLOAD_DELETED and is_pod_suspended(pod)):
            continue
        cond = {
            "type": c.POD_TERMINATION_TARGET,
            "status": "True",
            "lastTransitionTime": rfc3339(now),
            "reason": reason,
            "message": message,
        }
        out += [ja.StopPod(pod=pod_ref(pod), condition=cond), pod_event(pod, c.JobEventReason.STOPPED, message)]
    return out + remove_finalizers(finalize)


def eviction_reason(wl: Obj | None) -> str:
    cond = o.find_condition(wl, c.WorkloadCondition.EVICTED) if wl is not None else None
    if cond is not None and cond.get("status") == "True":
        return f"{c.StopReason.WORKLOAD_EVICTED}DueTo{cond.get('reason', '')}"
    return c.StopReason.WORKLOAD_EVICTED
