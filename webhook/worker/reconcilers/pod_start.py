"""Start and stop pods: apply an admission to gated pods, or mark and delete running ones.

Mirrors, at upstream commit ff69552e79: `pkg/podset/podset.go` (`FromAssignment`, `Merge`),
`startJob`/`stopJob` in `pkg/controller/jobframework/reconciler.go` and `Pod.Run`/`Pod.Stop` in
`pkg/controller/jobs/pod/pod_controller.go`. Starting a group is all-or-nothing here (upstream
patches pods in parallel and may ungate some before hitting a conflict).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import fields
from webhook.worker.reconcilers import actions as a
from webhook.worker.reconcilers.pod_common import (
    Lookups,
    Obj,
    Options,
    _annotations,
    _condition,
    _deleting,
    _event,
    _finish,
    _is_gated,
    _is_suspended,
    _labels,
    _name,
    _Permanent,
    _pod_role,
    _ref,
    _remove_finalizers,
    _Retry,
    _rfc3339,
)

__all__ = [
    "start_pods",
    "stop_pods",
]

# --- start: podSet infos and the per-pod patch ----------------------------------------------------


@dataclass(slots=True)
class _PodSetInfo:
    name: str = ""
    count: int = 0
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    scheduling_gates: list[Obj] = field(default_factory=list)

    @classmethod
    def of_template(cls, template: Obj) -> _PodSetInfo:
        spec = template.get("spec") or {}
        return cls(
            annotations=dict(_annotations(template)),
            labels=dict(_labels(template)),
            node_selector=dict(spec.get("nodeSelector") or {}),
            tolerations=list(spec.get("tolerations") or ()),
            scheduling_gates=list(spec.get("schedulingGates") or ()),
        )


def _conflict(base: Mapping[str, str], new: Mapping[str, str], what: str) -> None:
    for key in sorted(base):
        if key in new and base[key] != new[key]:
            raise _Permanent(
                f"invalid admission check PodSetUpdate: conflict for {what}: conflict for key={key}, value1={base[key]}, value2={new[key]}"
            )


def _same_toleration(x: Obj, y: Obj) -> bool:
    """`tolerations.Equal`: key, effect, value and operator (empty operator = Equal)."""
    return all(x.get(k, "") == y.get(k, "") for k in ("key", "effect", "value")) and (x.get("operator") or "Equal") == (
        y.get("operator") or "Equal"
    )


def _merge(base: _PodSetInfo, new: _PodSetInfo) -> _PodSetInfo:
    """`PodSetInfo.Merge`: maps must not disagree; tolerations and gates are appended once."""
    _conflict(base.annotations, new.annotations, "annotations")
    _conflict(base.labels, new.labels, "labels")
    _conflict(base.node_selector, new.node_selector, "nodeSelector")
    out = _PodSetInfo(
        base.name,
        base.count,
        {**base.annotations, **new.annotations},
        {**base.labels, **new.labels},
        {**base.node_selector, **new.node_selector},
        list(base.tolerations),
        list(base.scheduling_gates),
    )
    for tol in new.tolerations:
        if not any(_same_toleration(t, tol) for t in out.tolerations):
            out.tolerations.append(tol)
    for gate in new.scheduling_gates:
        if gate not in out.scheduling_gates:
            out.scheduling_gates.append(gate)
    return out


def _pod_set_infos(wl: Obj, lookups: Lookups, opts: Options) -> list[_PodSetInfo]:
    """`getPodSetsInfoFromStatus`: flavors, queue labels, TAS annotation, admission-check updates."""
    status = wl.get("status") or {}
    assignments = (status.get("admission") or {}).get("podSetAssignments") or []
    pod_sets = (wl.get("spec") or {}).get("podSets") or []
    infos = []
    for i, psa in enumerate(assignments):
        ps = pod_sets[i] if i < len(pod_sets) else {}
        info = _PodSetInfo(name=psa.get("name", ""), count=psa.get("count", ps.get("count", 1)))
        if opts.tas and psa.get("topologyAssignment") is not None:
            req = ps.get("topologyRequest") or {}
            if not any(k in req for k in ("required", "preferred", "unconstrained")):
                info.annotations[c.PODSET_UNCONSTRAINED_TOPOLOGY] = "true"
            info.scheduling_gates.append({"name": c.TOPOLOGY_GATE})
        seen: set[str] = set()
        for _, flavor in sorted((psa.get("flavors") or {}).items()):
            if flavor in seen:
                continue
            if flavor not in lookups.resource_flavors:
                raise _Retry(f'resourceflavors.kueue.x-k8s.io "{flavor}" not found')
            rf = lookups.resource_flavors[flavor]
            info.node_selector.update(rf.get("nodeLabels") or {})
            info.tolerations.extend(rf.get("tolerations") or ())
            seen.add(flavor)
        if opts.tas:
            info.annotations[c.WORKLOAD_ANNOTATION] = _name(wl)
        info.labels[c.PODSET_LABEL] = info.name
        if opts.assign_queue_labels:
            info.labels[c.LOCAL_QUEUE_NAME_LABEL] = (wl.get("spec") or {}).get("queueName", "")
            cq = (status.get("admission") or {}).get("clusterQueue", "")
            if not fields.is_dns1123_label(cq):
                info.labels[c.CLUSTER_QUEUE_NAME_LABEL] = cq
        for check in status.get("admissionChecks") or ():
            for update in check.get("podSetUpdates") or ():
                if update.get("name") == info.name:
                    new = _PodSetInfo(
                        annotations=dict(update.get("annotations") or {}),
                        labels=dict(update.get("labels") or {}),
                        node_selector=dict(update.get("nodeSelector") or {}),
                        tolerations=list(update.get("tolerations") or ()),
                    )
                    try:
                        info = _merge(info, new)
                    except _Permanent as exc:
                        raise _Permanent(f'in admission check "{check.get("name")}": {exc}') from exc
                    break
        infos.append(info)
    return infos


def _start_patch(pod: Obj, info: _PodSetInfo) -> a.PatchPod:
    """`prepare`: merge the podSet info into the pod, then lift the admission (and topology) gate."""
    spec = pod.get("spec") or {}
    base = _PodSetInfo.of_template(pod)
    merged = _merge(base, info)
    gates = [g for g in merged.scheduling_gates if g.get("name") != c.ADMISSION_GATE]
    if {"name": c.TOPOLOGY_GATE} not in info.scheduling_gates:
        gates = [g for g in gates if g.get("name") != c.TOPOLOGY_GATE]
    meta: dict[str, Any] = {}
    for key, old, new in (("labels", base.labels, merged.labels), ("annotations", base.annotations, merged.annotations)):
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
    return a.PatchPod(_ref(pod), patch)


def start_pods(pods: Sequence[Obj], wl: Obj, *, is_group: bool, opts: Options, lookups: Lookups, now: datetime) -> a.Decision:
    """`startJob` + `Pod.Run`: one patch and one `Started` event per gated pod."""
    message = f"Admitted by clusterQueue {((wl.get('status') or {}).get('admission') or {}).get('clusterQueue', '')}"
    try:
        infos = _pod_set_infos(wl, lookups, opts)
        if not is_group and len(infos) != 1:
            raise _Permanent(f"invalid podset infos: expecting 1 pod set got {len(infos)}")
        out: list[a.Action] = []
        for pod in pods:
            if not _is_gated(pod):
                continue
            if is_group:
                role = _pod_role(pod)
                info = next((i for i in infos if i.name == role), None)
                if info is None:
                    raise _Permanent(f"invalid podset infos: podSetInfo with the name '{role}' is not found")
            else:
                info = infos[0]
            out += [_start_patch(pod, info), _event(pod, c.JobEventReason.STARTED, message)]
    except _Permanent as exc:
        return a.Decision(tuple(_finish(wl, c.FinishedReason.FAILED_TO_START, str(exc), now)), str(exc))
    except _Retry as exc:
        return a.Decision((), str(exc), retry=True)
    return a.Decision(tuple(out))


# --- stop -----------------------------------------------------------------------------------------


def stop_pods(pods: Sequence[Obj], *, reason: str, message: str, now: datetime, finalize: Sequence[Obj] = ()) -> list[a.Action]:
    """`Pod.Stop`: mark each live pod TerminationTarget, delete it, and report `Stopped` on it."""
    out: list[a.Action] = []
    for pod in pods:
        if _deleting(pod) or (reason != c.StopReason.WORKLOAD_DELETED and _is_suspended(pod)):
            continue
        cond = {"type": c.POD_TERMINATION_TARGET, "status": "True", "lastTransitionTime": _rfc3339(now), "reason": reason, "message": message}
        out += [a.SetPodCondition(_ref(pod), cond), a.DeletePod(_ref(pod)), _event(pod, c.JobEventReason.STOPPED, message)]
    return out + _remove_finalizers(finalize)


def _eviction_reason(wl: Obj | None) -> str:
    cond = _condition(wl, c.WorkloadCondition.EVICTED) if wl is not None else None
    if cond is not None and cond.get("status") == "True":
        return f"{c.StopReason.WORKLOAD_EVICTED}DueTo{cond.get('reason', '')}"
    return c.StopReason.WORKLOAD_EVICTED


