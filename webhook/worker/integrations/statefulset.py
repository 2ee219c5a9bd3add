"""The StatefulSet integration in the worker: one prebuilt pod-group Workload per StatefulSet.

Mirrors `pkg/controller/jobs/statefulset/{statefulset_reconciler.go,statefulset_pod_reconciler.go}`
and `pkg/util/statefulset/statefulset.go` (upstream v0.19.2):

* the StatefulSet reconciler creates the Workload (`statefulset-<name>-<hash>`, one podSet `main` of
  `replicas` pods, controlled by the StatefulSet), keeps its queue name, puts it on hold when the
  StatefulSet scales to zero (QuotaReserved=False, reason `OnHold`: quota released, not requeued)
  and takes it off hold on scale-up; it also keeps the pods' queue label and ungates old-revision
  pods during a rolling update;
* the pod reconciler turns each pod the StatefulSet creates (gated by the pod webhook, annotated
  `pod-suspending-parent: statefulset`) into a member of that group: managed label, queue name,
  group name = prebuilt Workload name, total count = replicas, fast admission and serving.

From there the pod integration (`integrations.pod`) admits, starts, stops and replaces the group's
pods as for any serving pod group. The pods are not managed (labelled) when they are created, so
this module watches the pods of StatefulSets itself (label `statefulset.kubernetes.io/pod-name`)
and the StatefulSets, in its own cache.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import multikueue, selector
from webhook.api import objects as o
from webhook.api.integrations import STATEFULSET
from webhook.api.objects import Obj
from webhook.api.statefulset import (
    API_VERSION,
    FRAMEWORK,
    GVK,
    KIND,
    managed_by_another_framework,
    replicas,
    workload_name_for,
)
from webhook.worker.integrations.pod.common import (
    DEFAULT_POD_SET,
    Options,
    group_name,
    is_terminated,
    new_condition,
    pod_ref,
)
from webhook.worker.integrations.pod.workload import fast_pod_sets, new_group_workload
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import JobError
from webhook.worker.jobframework.plan import Lookups, Plan, controller_ref, lookups_from
from webhook.worker.jobframework.reconciler import SelfWatchingReconciler, Watch, end_plan, execute_plan
from webhook.worker.jobframework.setup import SetupContext, Wiring
from webhook.worker.store import object_key

__all__ = ["POD_LABEL_SELECTOR", "StatefulSetReconciler", "plan_pod", "plan_statefulset", "setup"]

CONTROLLER_NAME = "statefulset"
#: Every pod a StatefulSet creates carries this label; the pods of our groups are among them.
POD_LABEL_SELECTOR = "statefulset.kubernetes.io/pod-name"
REVISION_LABEL = "controller-revision-hash"
POD_BATCH_PERIOD_S = 1.0  # upstream's podBatchPeriod: a burst of new pods is one reconcile
_POD_KEY = "pod/"


def _controlled_by_statefulset(pod: Obj) -> str | None:
    owner = o.controller_of(pod)
    if owner is None or owner.get("kind") != KIND or owner.get("apiVersion") != API_VERSION:
        return None
    return str(owner.get("name") or "")


def _gates_without_kueue(pod: Obj) -> list[Any]:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return [g for g in gates if g.get("name") not in (c.ADMISSION_GATE, c.TOPOLOGY_GATE)]


# --- the pod reconciler (`statefulset_pod_reconciler.go`) ------------------------------------------


def plan_pod(pod: Obj, sts: Obj | None, opts: Options) -> list[ja.JobAction]:
    """A pod of a managed StatefulSet: released when done, else made a member of the StatefulSet's group."""
    if is_terminated(pod) or o.is_deleting(pod):
        return (
            [ja.RemovePodFinalizer(pod=pod_ref(pod))]
            if c.POD_FINALIZER in (o.meta(pod).get("finalizers") or ())
            else []
        )
    if sts is None or _controlled_by_statefulset(pod) != o.name(sts):
        return []
    queue = o.labels(sts).get(c.QUEUE_LABEL, "")
    wl_name = workload_name_for(sts, short=opts.short_workload_names)
    if group_name(pod, opts) == wl_name:
        if queue and o.labels(pod).get(c.QUEUE_LABEL) != queue:
            return [ja.PatchPod(pod=pod_ref(pod), patch={"metadata": {"labels": {c.QUEUE_LABEL: queue}}})]
        return []
    if not queue and not opts.manage_jobs_without_queue_name:
        return []
    labels: dict[str, str] = {c.MANAGED_LABEL: "true"}
    if queue:
        labels[c.QUEUE_LABEL] = queue
    priority = o.labels(sts).get(c.PRIORITY_CLASS_LABEL, "")
    if priority:
        labels[c.PRIORITY_CLASS_LABEL] = priority
    annotations = {
        c.POD_GROUP_TOTAL_COUNT: str(replicas(sts)),
        c.POD_GROUP_FAST_ADMISSION: "true",
        c.POD_GROUP_SERVING: "true",
        c.POD_GROUP_POD_INDEX_LABEL_ANNOTATION: c.POD_INDEX_LABEL,
        c.ROLE_HASH_ANNOTATION: DEFAULT_POD_SET,
    }
    # `SetPrebuiltWorkloadName`, `SetPodGroupName`: annotations under WorkloadIdentifierAnnotations.
    by_annotation = opts.workload_identifier_annotations
    (annotations if by_annotation or len(wl_name) > 63 else labels)[c.PREBUILT_WORKLOAD_LABEL] = wl_name
    (annotations if by_annotation else labels)[c.POD_GROUP_NAME] = wl_name
    return [ja.PatchPod(pod=pod_ref(pod), patch={"metadata": {"labels": labels, "annotations": annotations}})]


# --- the StatefulSet reconciler (`statefulset_reconciler.go`) --------------------------------------


def _should_ungate(sts: Obj, pod: Obj) -> bool:
    """`shouldUngatePod`: during a rolling update, the pods of the current (old) revision run ungated."""
    status = sts.get("status") or {}
    current = status.get("currentRevision")
    return current != status.get("updateRevision") and current == o.labels(pod).get(REVISION_LABEL)


def _ungate_and_finalize(sts: Obj, pod: Obj) -> list[ja.JobAction]:
    """`UngateAndFinalizePod` (not forced)."""
    out: list[ja.JobAction] = []
    ungate = _should_ungate(sts, pod)
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    remaining = _gates_without_kueue(pod)
    if ungate and len(remaining) != len(gates):
        out.append(
            ja.PatchPod(
                pod=pod_ref(pod),
                patch={
                    "metadata": {"resourceVersion": o.meta(pod).get("resourceVersion")},
                    "spec": {"schedulingGates": remaining},
                },
            )
        )
    if (ungate or is_terminated(pod) or o.is_deleting(pod)) and c.POD_FINALIZER in (
        o.meta(pod).get("finalizers") or ()
    ):
        out.append(ja.RemovePodFinalizer(pod=pod_ref(pod)))
    return out


def _construct(sts: Obj, opts: Options, lookups: Lookups) -> dict[str, Any]:
    """`constructWorkload` + `NewGroupWorkload` + `PrepareWorkloadPriority`."""
    template = (sts.get("spec") or {}).get("template") or {}
    template_meta = template.get("metadata") or {}
    member = {
        "metadata": {
            "annotations": {**(template_meta.get("annotations") or {}), c.ROLE_HASH_ANNOTATION: DEFAULT_POD_SET}
        },
        "spec": template.get("spec") or {},
    }
    pod_sets = fast_pod_sets([member], replicas(sts), opts)
    for ps in pod_sets:
        if "topologyRequest" in ps:
            ps["topologyRequest"]["podIndexLabel"] = c.POD_INDEX_LABEL
    owner_like = {"metadata": o.meta(sts), "spec": template.get("spec") or {}}
    wl = new_group_workload(
        workload_name_for(sts, short=opts.short_workload_names), owner_like, pod_sets, opts, lookups
    )
    meta = wl["metadata"]
    meta["labels"] = {c.JOB_UID_LABEL: o.uid(sts)}
    meta["annotations"].update({c.JOB_OWNER_GVK_ANNOTATION: GVK, c.JOB_OWNER_NAME_ANNOTATION: o.name(sts)})
    meta["ownerReferences"] = [controller_ref(API_VERSION, KIND, sts)]
    return wl


def _on_hold(wl: Obj) -> bool:
    cond = o.find_condition(wl, c.WorkloadCondition.QUOTA_RESERVED)
    return cond is not None and cond.get("status") == "False" and cond.get("reason") == c.ON_HOLD_REASON


def _plan_workload(sts: Obj, wl: Obj | None, opts: Options, lookups: Lookups, now: datetime) -> list[ja.JobAction]:
    """`reconcileWorkload`. A MultiKueue copy on a worker gets no Workload of its own: the manager
    copies its Workload here, under the name the copy's pods use."""
    count = replicas(sts)
    queue = o.labels(sts).get(c.QUEUE_LABEL, "")
    if wl is None:
        remote_copy = multikueue.ORIGIN_LABEL in o.labels(sts)
        if count > 0 and (queue or opts.manage_jobs_without_queue_name) and not remote_copy:
            new = _construct(sts, opts, lookups)
            return [
                ja.CreateWorkload(body=new),
                ja.RecordEvent(
                    reason=c.JobEventReason.CREATED_WORKLOAD,
                    message=f"Created Workload: {o.meta(new)['namespace']}/{o.name(new)}",
                ),
            ]
        return []
    out: list[ja.JobAction] = []
    uid = o.meta(sts).get("uid")
    owned = any(ref.get("uid") == uid for ref in o.meta(wl).get("ownerReferences") or ())
    if not owned and count > 0:
        refs = [r for r in o.meta(wl).get("ownerReferences") or () if not r.get("controller")]
        out.append(
            ja.AdoptWorkload(
                workload={
                    **wl,
                    "metadata": {**o.meta(wl), "ownerReferences": [*refs, controller_ref(API_VERSION, KIND, sts)]},
                },
                annotations={c.JOB_OWNER_GVK_ANNOTATION: GVK, c.JOB_OWNER_NAME_ANNOTATION: o.name(sts)},
            )
        )
    if count > 0 and (wl.get("spec") or {}).get("queueName", "") != queue:
        out.append(ja.SyncQueueName(workload=wl, queue_name=queue))
    active = (wl.get("spec") or {}).get("active", True) is not False
    if count == 0 and o.has_quota_reservation(wl) and not o.is_finished(wl) and active:
        conditions = [
            new_condition(c.WorkloadCondition.QUOTA_RESERVED, "False", c.ON_HOLD_REASON, c.MSG_ON_HOLD, now=now, wl=wl)
        ]
        if o.is_admitted(wl):
            conditions.append(
                new_condition(
                    c.WorkloadCondition.ADMITTED,
                    "False",
                    c.AdmittedReason.NO_RESERVATION,
                    c.MSG_NO_RESERVATION,
                    now=now,
                    wl=wl,
                )
            )
        out.append(ja.SetWorkloadConditions(workload=wl, conditions=tuple(conditions), clear_admission=True))
    elif count > 0 and _on_hold(wl):
        cond = new_condition(
            c.WorkloadCondition.QUOTA_RESERVED,
            "False",
            c.PendingReason.PENDING_EVALUATION,
            c.MSG_NO_LONGER_ON_HOLD,
            now=now,
            wl=wl,
        )
        out.append(ja.SetWorkloadConditions(workload=wl, conditions=(cond,)))
    return out


def plan_statefulset(
    sts: Obj, pods: Sequence[Obj], wl: Obj | None, *, opts: Options, lookups: Lookups, now: datetime
) -> Plan:
    """One pass for a managed StatefulSet: `pods` are those of its group, `wl` its Workload (None if absent)."""
    out: list[ja.JobAction] = []
    queue = o.labels(sts).get(c.QUEUE_LABEL, "")
    if replicas(sts) > 0 and queue:  # `syncQueueLabel`
        out += [
            ja.PatchPod(pod=pod_ref(p), patch={"metadata": {"labels": {c.QUEUE_LABEL: queue}}})
            for p in pods
            if o.labels(p).get(c.QUEUE_LABEL) != queue
        ]
    for pod in pods:  # `finalizePods`
        out += _ungate_and_finalize(sts, pod)
    try:
        out += _plan_workload(sts, wl, opts, lookups, now)
    except JobError as exc:
        return Plan((*out, *exc.actions), str(exc), retry=exc.retry)
    return Plan(tuple(out))


# --- wiring -----------------------------------------------------------------------------------------


class StatefulSetReconciler(
    SelfWatchingReconciler,
    queue="statefulsets",
    integration=Integration(
        api_version=API_VERSION, kind=KIND, resource=STATEFULSET.resource, controller_name=CONTROLLER_NAME
    ),
    watches=(Watch("statefulsets", API_VERSION), Watch("pods", "v1", {"labelSelector": POD_LABEL_SELECTOR})),
):
    """Follows StatefulSets and their pods in its own cache. Keys: `ns/name` of a StatefulSet,
    `pod/ns/name` of a pod."""

    @functools.cached_property
    def opts(self) -> Options:
        return Options.from_config(self.config)

    def enqueue(self, kind: str, etype: str, obj: Mapping[str, Any]) -> None:
        """Every StatefulSet event; a pod this integration suspends, and on its creation (upstream's
        podHandler, batched) its StatefulSet."""
        if kind == "statefulsets":
            self.queue.add(object_key(obj))
            return
        if o.annotations(obj).get(c.POD_SUSPENDING_PARENT) != FRAMEWORK:
            return
        self.queue.add(_POD_KEY + object_key(obj))
        owner = _controlled_by_statefulset(obj)
        if etype == "ADDED" and owner:
            self.queue.add_after(f"{o.meta(obj).get('namespace')}/{owner}", POD_BATCH_PERIOD_S)

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        """The Manager's events: a Workload of a StatefulSet re-checks it (e.g. its hold)."""
        if kind == "workloads" and o.annotations(obj).get(c.JOB_OWNER_GVK_ANNOTATION) == GVK:
            owner = o.annotations(obj).get(c.JOB_OWNER_NAME_ANNOTATION)
            if owner:
                self.queue.add(f"{o.meta(obj).get('namespace')}/{owner}")

    # == reconcile ================================================================================
    def _managed(self, sts: Obj) -> bool:
        """The event filter (`handle`): not another framework's, and `WorkloadShouldBeSuspended`."""
        if managed_by_another_framework(sts):
            return False
        if o.labels(sts).get(c.QUEUE_LABEL):
            return True
        if not self.opts.manage_jobs_without_queue_name:
            return False
        ns = self.store.get("namespaces", str(o.meta(sts).get("namespace") or ""))
        labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
        return ns is not None and selector.matches(
            self.config.managed_jobs_namespace_selector, labels, nil_matches=True
        )

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        now = self.clock()
        if key.startswith(_POD_KEY):
            pod = self.cache.get("pods", key[len(_POD_KEY) :])
            if pod is None:
                return
            owner = _controlled_by_statefulset(pod)
            sts = self.cache.get("statefulsets", f"{o.meta(pod).get('namespace')}/{owner}") if owner else None
            job: Obj = {**pod, "apiVersion": "v1", "kind": "Pod"}
            p = Plan(tuple(plan_pod(pod, sts, self.opts)))
        else:
            sts = self.cache.get("statefulsets", key)
            if sts is None or not self._managed(sts):
                return
            ns = str(o.meta(sts).get("namespace") or "")
            wl_name = workload_name_for(sts, short=self.opts.short_workload_names)
            pods = [p for p in self.cache.list("pods", ns) if group_name(p, self.opts) == wl_name]
            p = plan_statefulset(
                sts,
                pods,
                self.store.get("workloads", f"{ns}/{wl_name}"),
                opts=self.opts,
                lookups=lookups_from(self.store),
                now=now,
            )
            job = {**sts, "apiVersion": API_VERSION, "kind": KIND}  # the object its events name
        execute_plan(self.executor, key, job, p, now, settled=lambda key, uid: None)
        end_plan(key, KIND, p)


def setup(ctx: SetupContext) -> Wiring:
    """The StatefulSet integration in the worker: it follows StatefulSets and their pods itself."""
    return Wiring(StatefulSetReconciler(ctx.kube, ctx.store, ctx.config, ctx.recorder, stop=ctx.stop))
