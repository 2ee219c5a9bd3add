"""Lifting the `kueue.x-k8s.io/elastic-job` scheduling gate from an elastic Job's pods.

Mirrors `pkg/controller/elasticjobs/elastic_job_ungater.go` of upstream v0.19.2. The Job webhook
gates every pod of an elastic Job, so pods the Job controller adds after a scale-up wait until a
slice admitted for them exists. Once the chain's active slice is admitted, gated pods are released,
lowest names first, until the running (ungated, not terminated) pods of each podSet reach the
slice's count; a pod whose immutable ProvisioningRequest metadata no longer matches the admission
stays gated. `pods_to_ungate` decides (pure); `Ungater` lists the Job's pods and patches them.

Upstream reacts to pod and Workload events through its own controller; here the Job reconciler
calls the ungater after each pass over an elastic Job, which Workload events and the Job
controller's status updates for new pods both trigger. Pods are read from the API, so no
expectations are needed to avoid ungating twice against a stale cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from webhook import kube as k
from webhook import metrics as m
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker.jobframework import workload_slices
from webhook.worker.reporter import ROLE
from webhook.worker.workqueue import Retry

__all__ = ["Ungate", "Ungater", "pods_to_ungate"]

log = logging.getLogger(__name__)

# Pod annotations a ProvisioningRequest admission check hands over; immutable once set.
_PROVREQ_POD_ANNOTATIONS = (
    "autoscaling.x-k8s.io/consume-provisioning-request",
    "autoscaling.x-k8s.io/provisioning-class-name",
)


@dataclass(frozen=True, slots=True)
class Ungate:
    """One pod to release: its object and the merge patch that lifts the gate."""

    pod: Obj
    patch: Mapping[str, Any]


def _gates(pod: Obj) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("schedulingGates") or ())


def _gated(pod: Obj) -> bool:
    return any(g.get("name") == c.ELASTIC_JOB_GATE for g in _gates(pod))


def _terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _pod_slice_name(pod: Obj) -> str:
    """`podSliceName`: the chain's name a pod was stamped with (slice name, else workload name)."""
    annotations = o.meta(pod).get("annotations") or {}
    return str(annotations.get(c.WORKLOAD_SLICE_NAME) or annotations.get(c.WORKLOAD_ANNOTATION) or "")


class _Conflict(Exception):
    """Two admission checks hand a podSet different values for one key."""


def _admission_update(wl: Obj, pod_set: str) -> tuple[dict[str, str], dict[str, str]]:
    """`admissionUpdateForPodSet`: the ProvisioningRequest annotations and node selector the
    admission checks' podSetUpdates give `pod_set`."""
    annotations: dict[str, str] = {}
    node_selector: dict[str, str] = {}
    for check in (wl.get("status") or {}).get("admissionChecks") or ():
        for update in check.get("podSetUpdates") or ():
            if update.get("name") != pod_set:
                continue
            for key in _PROVREQ_POD_ANNOTATIONS:
                value = (update.get("annotations") or {}).get(key)
                if value is None:
                    continue
                if annotations.get(key, value) != value:
                    raise _Conflict(f'conflicting "{key}" annotation updates for PodSet "{pod_set}"')
                annotations[key] = value
            for key, value in (update.get("nodeSelector") or {}).items():
                if node_selector.get(key, value) != value:
                    raise _Conflict(f'conflicting "{key}" node selector updates for PodSet "{pod_set}"')
                node_selector[key] = value
    return annotations, node_selector


def _compatible(pod: Obj, annotations: Mapping[str, str], node_selector: Mapping[str, str]) -> bool:
    """`podAdmissionCompatible`: nothing the admission sets is already set otherwise on the pod."""
    have_annotations = o.meta(pod).get("annotations") or {}
    have_selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return all(have_annotations.get(key, v) == v for key, v in annotations.items()) and all(
        have_selector.get(key, v) == v for key, v in node_selector.items()
    )


def _patch(pod: Obj, annotations: Mapping[str, str], node_selector: Mapping[str, str]) -> dict[str, Any]:
    """`refreshPodAdmission` + `Ungate`: the missing admission metadata and the remaining gates,
    guarded by the pod's resourceVersion."""
    have_annotations = o.meta(pod).get("annotations") or {}
    have_selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    remaining = [g for g in _gates(pod) if g.get("name") != c.ELASTIC_JOB_GATE]
    spec: dict[str, Any] = {"schedulingGates": remaining or None}
    selector = {key: v for key, v in sorted(node_selector.items()) if have_selector.get(key) != v}
    if selector:
        spec["nodeSelector"] = selector
    meta: dict[str, Any] = {"resourceVersion": o.meta(pod).get("resourceVersion")}
    added = {key: v for key, v in sorted(annotations.items()) if key not in have_annotations}
    if added:
        meta["annotations"] = added
    return {"metadata": meta, "spec": spec}


def pods_to_ungate(active: Obj, pods: Sequence[Obj]) -> list[Ungate]:
    """`podsToUngate` for the chain's admitted active slice `active` and the Job's pods: per podSet,
    the gated pods (lowest names first) that fit between the pods already ungated and the
    slice's count. Pods of another chain or already terminated are left alone."""
    chain = workload_slices.slice_name(active)
    granted = workload_slices.counts((active.get("spec") or {}).get("podSets") or ())
    gated: dict[str, list[Obj]] = {}
    running: dict[str, int] = {}
    updates: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    for pod in pods:
        if _pod_slice_name(pod) != chain or _terminated(pod):
            continue
        pod_set = str((o.meta(pod).get("labels") or {}).get(c.PODSET_LABEL, ""))
        if not _gated(pod):
            running[pod_set] = running.get(pod_set, 0) + 1
            continue
        if pod_set not in updates:
            try:
                updates[pod_set] = _admission_update(active, pod_set)
            except _Conflict as exc:
                log.warning(
                    "elastic pods left gated",
                    extra={
                        "object": f"{o.meta(active).get('namespace')}/{o.meta(active).get('name')}",
                        "kind": "Workload",
                        "pod_set": pod_set,
                        "error": str(exc),
                    },
                )
                updates[pod_set] = ({}, {})
                continue
        if not _compatible(pod, *updates[pod_set]):
            log.info(
                "leaving elastic pod gated: its admission metadata is stale",
                extra={
                    "object": f"{o.meta(pod).get('namespace')}/{o.meta(pod).get('name')}",
                    "kind": "Pod",
                    "pod_set": pod_set,
                },
            )
            continue
        gated.setdefault(pod_set, []).append(pod)
    out: list[Ungate] = []
    for pod_set in sorted(gated):
        room = granted.get(pod_set, 0) - running.get(pod_set, 0)
        if room <= 0:
            continue
        for pod in sorted(gated[pod_set], key=lambda p: str(o.meta(p).get("name", "")))[:room]:
            out.append(Ungate(pod, _patch(pod, *updates[pod_set])))
    return out


def _admitted_at(wl: Obj) -> datetime | None:
    cond = o.find_condition(wl, c.WorkloadCondition.ADMITTED)
    if cond is None or cond.get("status") != "True" or not cond.get("lastTransitionTime"):
        return None
    return datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00"))


class Ungater:
    """Releases the gated pods of one elastic Job against its admitted active slice."""

    def __init__(self, kube: k.Kube, *, clock: Callable[[], datetime]) -> None:
        self.kube = kube
        self.clock = clock

    def ungate(self, job: Obj, workloads: Sequence[Obj], *, selector: str | None = None) -> None:
        """`Reconcile` for the Job's chain: nothing until its active slice is admitted (quota alone
        is not enough: admission checks may still be pending). The job's pods are those `selector`
        matches (None: a batch Job's, by its controller-uid label; '': none yet). A pod changed
        meanwhile (Conflict) ends the pass with `Retry`, after the other pods."""
        active = workload_slices.latest_active(workloads)
        admitted_at = None if active is None else _admitted_at(active)
        if active is None or admitted_at is None or selector == "":
            return
        ns = str(o.meta(job).get("namespace", ""))
        if selector is None:
            selector = f"batch.kubernetes.io/controller-uid={o.meta(job).get('uid', '')}"
        pods, _ = self.kube.list(k.object_path("v1", "pods", ns), query={"labelSelector": selector})
        cq = str(((active.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
        conflicts = 0
        for u in pods_to_ungate(active, pods):
            key = f"{ns}/{o.meta(u.pod).get('name', '')}"
            try:
                self.kube.patch(k.object_path("v1", "pods", ns, str(o.meta(u.pod).get("name", ""))), dict(u.patch))
            except k.NotFound:
                continue
            except k.Conflict:
                conflicts += 1
                continue
            m.POD_SCHEDULING_GATE_REMOVAL.labels(c.ELASTIC_JOB_GATE, cq, "false", ROLE).observe(
                max(0.0, (self.clock() - admitted_at).total_seconds())
            )
            log.info(
                "ungated elastic pod",
                extra={
                    "object": key,
                    "kind": "Pod",
                    "decision": "Ungated",
                    "workload": f"{ns}/{o.meta(active).get('name', '')}",
                    "cluster_queue": cq,
                },
            )
        if conflicts:
            raise Retry(0.2, f"{conflicts} elastic pods changed while ungating")
