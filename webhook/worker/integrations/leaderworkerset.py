"""The LeaderWorkerSet integration in the worker: one prebuilt pod-group Workload per group.

Mirrors `pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler.go` and
`pkg/util/statefulset/statefulset.go` (upstream v0.19.2). One reconcile of a LeaderWorkerSet:

* its Workloads (`leaderworkerset-<name>-<index>-<hash>`, one per group index below `replicas`, or
  below `status.replicas` while a rolling update surges): missing ones are created (podSets
  `leader` of 1 and `worker` of `size - 1`, or one `main` of `size` without a leader template;
  owned, not controlled, by the LeaderWorkerSet), existing ones follow its queue name, its
  admission-gated-by annotation and its priority class, and those of removed groups are deleted;
* its pods (label `leaderworkerset.sigs.k8s.io/name`): each pod with a group index becomes a member
  of its group's pod group (managed label, queue name, group and prebuilt Workload name, total count
  = `size`, role `leader`/`worker`/`main`); during a rolling update the pods of the old revision are
  ungated and released, and once the LeaderWorkerSet is gone every pod is.

From there the pod integration (`integrations.pod`) admits, starts, stops and replaces each
group's pods as a serving pod group (the webhook marks the templates `pod-group-serving`): pods that
complete never finish the Workload. The pods are not managed when they are created, so this module
watches the LeaderWorkerSets, their pods and their StatefulSets itself, in its own cache.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api import constants as c
from webhook.api import fields, selector
from webhook.api import objects as o
from webhook.api.integrations import LEADER_WORKER_SET
from webhook.api.leaderworkerset import (
    API_VERSION,
    COMPONENT_WORKLOAD_INDEX_ANNOTATION,
    FRAMEWORK,
    GROUP_INDEX_LABEL,
    GVK,
    KIND,
    LEADER_NAME_ANNOTATION,
    LEADER_POD_SET,
    MULTIKUEUE_ORIGIN_LABEL,
    NAME_LABEL,
    WORKER_INDEX_LABEL,
    WORKER_POD_SET,
    leader_template,
    replicas,
    size,
    worker_template,
    workload_name_for,
)
from webhook.api.objects import Obj
from webhook.worker.integrations.pod.common import DEFAULT_POD_SET, Options, is_gated, is_terminated, pod_ref
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import JobError
from webhook.worker.jobframework.plan import (
    Lookups,
    Plan,
    Priority,
    PriorityClassNotFound,
    lookups_from,
    new_workload,
    resolve_priority,
)
from webhook.worker.jobframework.reconciler import SelfWatchingReconciler, Watch, end_plan, execute_plan
from webhook.worker.jobframework.setup import SetupContext, Wiring
from webhook.worker.store import object_key

__all__ = [
    "LeaderWorkerSetReconciler",
    "plan_leaderworkerset",
    "plan_pod",
    "pod_sets",
    "setup",
]

CONTROLLER_NAME = "leaderworkerset"
LWS_DOMAIN = "leaderworkerset.sigs.k8s.io"
REVISION_LABEL = "controller-revision-hash"
UPDATES_BATCH_PERIOD_S = 1.0
"""upstream's `constants.UpdatesBatchPeriod`: pod, StatefulSet and Workload events are batched."""


# --- the Workloads ----------------------------------------------------------------------------------


def _drop_lws_keys(values: Mapping[str, str]) -> dict[str, str]:
    """`dropLWSPrefixedKeys`: the LWS controller's per-pod keys, but for the set's name."""
    return {key: v for key, v in values.items() if not key.startswith(LWS_DOMAIN) or key == NAME_LABEL}


def _pod_set(name: str, count: int, template: Mapping[str, Any], opts: Options, *, index_label: bool) -> dict[str, Any]:
    """`newPodSet`: the template as it is (but for the LWS's per-pod keys), env sanitized; under
    topology-aware scheduling, the topology request of its annotations (only the workers are indexed,
    by `worker-index`)."""
    body = copy.deepcopy(dict(template))
    meta = body.get("metadata")
    if meta:
        for part in ("labels", "annotations"):
            if meta.get(part):
                meta[part] = _drop_lws_keys(meta[part])
    if body.get("spec") is None:
        body["spec"] = {}
    podset.sanitize_env(body["spec"])
    ps: dict[str, Any] = {"name": name, "count": count, "template": body}
    if opts.tas:
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        try:
            request = podset.topology_request(annotations, pod_index_label=WORKER_INDEX_LABEL)
        except ValueError as exc:
            raise JobError(str(exc)) from exc
        if not index_label:
            del request["podIndexLabel"]
        if request:
            ps["topologyRequest"] = request
    return ps


def pod_sets(lws: Obj, opts: Options) -> list[dict[str, Any]]:
    """`podSets`: a leader of 1 and `size - 1` workers, or `size` pods of one `main` podSet."""
    out: list[dict[str, Any]] = []
    name, count = DEFAULT_POD_SET, size(lws)
    leader = leader_template(lws)
    if leader is not None:
        name, count = WORKER_POD_SET, count - 1
        out.append(_pod_set(LEADER_POD_SET, 1, leader, opts, index_label=False))
    out.append(_pod_set(name, count, worker_template(lws), opts, index_label=True))
    return out


def _priority(lws: Obj, sets: Sequence[Obj], lookups: Lookups) -> Priority:
    """`ExtractPriority`; a class that does not exist fails the reconcile, which is retried."""
    try:
        return resolve_priority(
            lws, wpcs=lookups.workload_priority_classes, pcs=lookups.priority_classes, pod_sets=sets
        )
    except PriorityClassNotFound as exc:
        kind = "workloadpriorityclasses.kueue.x-k8s.io" if exc.workload_class else "priorityclasses.scheduling.k8s.io"
        raise JobError(f'{kind} "{exc.name}" not found') from exc


def _owner_ref(lws: Obj) -> dict[str, Any]:
    """`controllerutil.SetOwnerReference`: an owner, not the controller."""
    return {"apiVersion": API_VERSION, "kind": KIND, "name": o.name(lws), "uid": o.uid(lws)}


def construct_workload(lws: Obj, name: str, index: int, opts: Options, lookups: Lookups) -> dict[str, Any]:
    """`constructWorkload` (+ `NewGroupWorkload` and `PrepareWorkloadPriority`)."""
    sets = pod_sets(lws, opts)
    wl = new_workload(
        name, lws, sets, admission_gated_by=opts.admission_gated_by, priority=_priority(lws, sets, lookups)
    )
    meta = wl["metadata"]
    labels = {key: v for key, v in o.labels(lws).items() if key in opts.label_keys_to_copy}
    labels[c.JOB_UID_LABEL] = o.uid(lws)
    meta["labels"] = labels
    annotations = meta.setdefault("annotations", {})
    annotations.update({key: v for key, v in o.annotations(lws).items() if key in opts.annotations_to_copy})
    annotations[c.IS_GROUP_WORKLOAD] = "true"
    annotations[c.JOB_OWNER_GVK_ANNOTATION] = GVK
    annotations[c.JOB_OWNER_NAME_ANNOTATION] = o.name(lws)
    annotations[COMPONENT_WORKLOAD_INDEX_ANNOTATION] = str(index)
    meta["ownerReferences"] = [_owner_ref(lws)]
    return wl


def _int_or_string(value: Any) -> int:
    """`intstr.IntOrString.IntValue`: a string that is no integer (a percentage) is 0."""
    if isinstance(value, str):
        try:
            return fields.go_atoi(value)
        except ValueError:
            return 0
    return int(value or 0)


def _rolling_update_with_surge(lws: Obj) -> bool:
    """`isRollingUpdateWithSurge`: a surge is allowed and not every group is updated yet."""
    strategy = (lws.get("spec") or {}).get("rolloutStrategy") or {}
    config = strategy.get("rollingUpdateConfiguration")
    if config is None:
        return False
    updated = int((lws.get("status") or {}).get("updatedReplicas") or 0)
    return _int_or_string(config.get("maxSurge")) > 0 and updated < replicas(lws)


def _groups(lws: Obj) -> int:
    """How many groups need a Workload: `replicas`, or `status.replicas` while a rolling update
    surges (a plain scale-down also shows more status replicas for a while: those go)."""
    count = replicas(lws)
    status_count = int((lws.get("status") or {}).get("replicas") or 0)
    if status_count > count and _rolling_update_with_surge(lws):
        return status_count
    return count


def _sync_priority(lws: Obj, wl: Obj, lookups: Lookups) -> list[ja.JobAction]:
    """`UpdateWorkloadPriority` for one Workload: one that follows the `priority-class` label takes
    the class it names now. One priced from a PriorityClass never switches, and one that reserved
    quota without a class cannot be given one."""
    spec = wl.get("spec") or {}
    ref = spec.get("priorityClassRef")
    if ref is None and o.has_quota_reservation(wl):
        return []
    if ref is not None and (ref.get("group"), ref.get("kind")) != (c.GROUP, "WorkloadPriorityClass"):
        return []
    if (ref or {}).get("name", "") == o.labels(lws).get(c.PRIORITY_CLASS_LABEL, ""):
        return []
    priority = _priority(lws, spec.get("podSets") or (), lookups)
    new_ref = None if priority.ref is None else dict(priority.ref)
    if spec.get("priority") == priority.value and ref == new_ref:
        return []
    return [
        ja.UpdatePriority(workload=wl, priority_class_ref=new_ref, priority=priority.value),
        ja.RecordEvent(
            reason=c.JobEventReason.UPDATED_WORKLOAD, message=f"Updated workload priority class: {o.key(wl)}"
        ),
    ]


def _update_workload(lws: Obj, wl: Obj, opts: Options, lookups: Lookups) -> list[ja.JobAction]:
    """`updateWorkload`: the queue name, the admission-gated-by annotation, the priority class."""
    out: list[ja.JobAction] = []
    queue = o.labels(lws).get(c.QUEUE_LABEL, "")
    if (wl.get("spec") or {}).get("queueName", "") != queue:
        out.append(ja.SyncQueueName(workload=wl, queue_name=queue))
    gated_by = o.annotations(lws).get(c.ADMISSION_GATED_BY, "")
    if opts.admission_gated_by and o.annotations(wl).get(c.ADMISSION_GATED_BY, "") != gated_by:
        out.append(ja.UpdateAdmissionGatedBy(workload=wl, value=gated_by or None))
        out.append(
            ja.RecordEvent(
                reason=c.JobEventReason.UPDATED_WORKLOAD, message=f'Updated workload AdmissionGatedBy to "{gated_by}"'
            )
        )
    return out + _sync_priority(lws, wl, lookups)


def plan_workloads(lws: Obj, workloads: Sequence[Obj], opts: Options, lookups: Lookups) -> list[ja.JobAction]:
    """`reconcileWorkloads` over the Workloads the LeaderWorkerSet owns: create, update, delete."""
    existing = {o.name(wl): wl for wl in workloads}
    remote = MULTIKUEUE_ORIGIN_LABEL in o.labels(lws)
    out: list[ja.JobAction] = []
    for index in range(_groups(lws)):
        name = workload_name_for(lws, str(index), short=opts.short_workload_names)
        wl = existing.pop(name, None)
        if wl is not None:
            out += _update_workload(lws, wl, opts, lookups)
        elif not remote:
            new = construct_workload(lws, name, index, opts, lookups)
            out.append(ja.CreateWorkload(body=new))
            out.append(
                ja.RecordEvent(
                    reason=c.JobEventReason.CREATED_WORKLOAD, message=f"Created Workload: {o.namespace(lws)}/{name}"
                )
            )
    out += [ja.DeleteWorkload(workload=wl, event=False) for _, wl in sorted(existing.items())]
    return out


# --- the pods ---------------------------------------------------------------------------------------


def _should_ungate(sts: Obj | None, pod: Obj) -> bool:
    """`shouldUngatePod`: no StatefulSet (any more), or a pod of its old revision while it rolls."""
    if sts is None:
        return True
    status = sts.get("status") or {}
    current = status.get("currentRevision") or ""
    return current != (status.get("updateRevision") or "") and current == o.labels(pod).get(REVISION_LABEL)


def _should_finalize(sts: Obj | None, pod: Obj) -> bool:
    """`ShouldFinalizePod`."""
    return _should_ungate(sts, pod) or is_terminated(pod) or o.is_deleting(pod)


def _ungate_and_finalize(sts: Obj | None, pod: Obj, *, force: bool) -> list[ja.JobAction]:
    """`UngateAndFinalizePod`: the admission gate goes (or, without it, the topology gate), and the
    finalizer."""
    out: list[ja.JobAction] = []
    if force or _should_ungate(sts, pod):
        gates = list((pod.get("spec") or {}).get("schedulingGates") or ())
        for gate in (c.ADMISSION_GATE, c.TOPOLOGY_GATE):
            remaining = [g for g in gates if g.get("name") != gate]
            if len(remaining) != len(gates):
                patch = {
                    "metadata": {"resourceVersion": o.meta(pod).get("resourceVersion")},
                    "spec": {"schedulingGates": remaining},
                }
                out.append(ja.PatchPod(pod=pod_ref(pod), patch=patch))
                break
    if (force or _should_finalize(sts, pod)) and c.POD_FINALIZER in (o.meta(pod).get("finalizers") or ()):
        out.append(ja.RemovePodFinalizer(pod=pod_ref(pod)))
    return out


def _defaults(lws: Obj, pod: Obj, opts: Options) -> dict[str, Any] | None:
    """`setDefault`: the patch that makes a pod a member of its group's pod group, if any."""
    queue = o.labels(lws).get(c.QUEUE_LABEL, "")
    pod_labels = o.labels(pod)
    # Only gated pods take the queue name: the pod webhook refuses the change on the others.
    queue_needed = bool(queue) and is_gated(pod)
    if c.MANAGED_LABEL in pod_labels:
        # A pod adopted before its template carried the queue name (upstream's backfill).
        if queue_needed and pod_labels.get(c.QUEUE_LABEL) != queue:
            return {"metadata": {"labels": {c.QUEUE_LABEL: queue}}}
        return None
    if GROUP_INDEX_LABEL not in pod_labels:
        return None  # the LWS controller has not labelled it yet
    wl_name = workload_name_for(lws, pod_labels[GROUP_INDEX_LABEL], short=opts.short_workload_names)
    labels: dict[str, str] = {c.MANAGED_LABEL: "true"}
    if queue_needed:
        labels[c.QUEUE_LABEL] = queue
    role = DEFAULT_POD_SET
    if leader_template(lws) is not None:
        role = WORKER_POD_SET if LEADER_NAME_ANNOTATION in o.annotations(pod) else LEADER_POD_SET
    annotations = {c.POD_GROUP_TOTAL_COUNT: str(size(lws)), c.ROLE_HASH_ANNOTATION: role}
    # `SetPodGroupName`, `SetPrebuiltWorkloadName`: annotations under WorkloadIdentifierAnnotations.
    by_annotation = opts.workload_identifier_annotations
    (annotations if by_annotation else labels)[c.POD_GROUP_NAME] = wl_name
    (annotations if by_annotation or len(wl_name) > 63 else labels)[c.PREBUILT_WORKLOAD_LABEL] = wl_name
    return {"metadata": {"labels": labels, "annotations": annotations}}


def plan_pod(lws: Obj | None, sts: Obj | None, pod: Obj, opts: Options) -> list[ja.JobAction]:
    """`reconcilePod`: released when its LeaderWorkerSet is gone or its revision is replaced (or it
    is done), else made a member of its group."""
    if lws is None or _should_finalize(sts, pod):
        return _ungate_and_finalize(sts, pod, force=lws is None)
    patch = _defaults(lws, pod, opts)
    return [] if patch is None else [ja.PatchPod(pod=pod_ref(pod), patch=patch)]


def plan_leaderworkerset(
    lws: Obj | None,
    *,
    workloads: Sequence[Obj],
    statefulsets: Sequence[Obj],
    pods: Sequence[Obj],
    opts: Options,
    lookups: Lookups,
) -> Plan:
    """One reconcile of a LeaderWorkerSet (None: it is gone): its Workloads first, so that every
    group has one before its pods join it, then its pods. `workloads` are those it owns,
    `statefulsets` and `pods` those labelled with its name."""
    out: list[ja.JobAction] = []
    if lws is not None:
        try:
            out += plan_workloads(lws, workloads, opts, lookups)
        except JobError as exc:
            return Plan((*out, *exc.actions), str(exc), retry=exc.retry)
    by_name = {o.name(s): s for s in statefulsets}
    for pod in pods:
        owner = o.controller_of(pod)
        out += plan_pod(lws, by_name.get(str(owner.get("name"))) if owner else None, pod, opts)
    return Plan(tuple(out))


# --- wiring -----------------------------------------------------------------------------------------


class LeaderWorkerSetReconciler(
    SelfWatchingReconciler,
    queue="leaderworkersets",
    integration=Integration(
        api_version=API_VERSION, kind=KIND, resource=LEADER_WORKER_SET.resource, controller_name=CONTROLLER_NAME
    ),
    watches=(
        # Without the LWS CRD its list is empty and tried again until served (upstream's `WaitForAPI`).
        Watch(LEADER_WORKER_SET.resource, API_VERSION, optional=True),
        Watch("pods", "v1", {"labelSelector": NAME_LABEL}),
        Watch("statefulsets", "apps/v1", {"labelSelector": NAME_LABEL}),
    ),
):
    """Follows LeaderWorkerSets, and the pods and StatefulSets labelled with their names, in its own
    cache. Key: `ns/name` of a LeaderWorkerSet."""

    @functools.cached_property
    def opts(self) -> Options:
        return Options.from_config(self.config)

    def enqueue(self, kind: str, etype: str, obj: Mapping[str, Any]) -> None:
        """What a watch event of this reconciler's own informers queues (upstream's predicate and
        handlers): a managed LeaderWorkerSet at once; the pods and (on a revision change) the
        StatefulSets it suspends, batched, by their name label."""
        if etype == "DELETED":
            return  # upstream's handlers ignore deletions of all three kinds
        if kind == LEADER_WORKER_SET.resource:
            if self._managed(obj):
                self.queue.add(object_key(obj))
            return
        if kind == "pods":
            suspended_by = o.annotations(obj).get(c.POD_SUSPENDING_PARENT)
        else:
            if etype != "MODIFIED":
                return
            status = obj.get("status") or {}
            current, update = status.get("currentRevision") or "", status.get("updateRevision") or ""
            if current == "" or (update == "" and current == update):
                return
            template = (obj.get("spec") or {}).get("template") or {}
            suspended_by = ((template.get("metadata") or {}).get("annotations") or {}).get(c.POD_SUSPENDING_PARENT)
        name = o.labels(obj).get(NAME_LABEL)
        if suspended_by == FRAMEWORK and name:
            self.queue.add_after(f"{o.namespace(obj)}/{name}", UPDATES_BATCH_PERIOD_S)

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        """`lwsWorkloadHandler`: any change to a Workload a LeaderWorkerSet owns (a deletion during a
        rolling update recreates it)."""
        if kind != "workloads":
            return
        for ref in o.meta(obj).get("ownerReferences") or ():
            if ref.get("apiVersion") == API_VERSION and ref.get("kind") == KIND:
                self.queue.add_after(f"{o.namespace(obj)}/{ref.get('name')}", UPDATES_BATCH_PERIOD_S)
                return

    # == reconcile ================================================================================
    def _managed(self, lws: Obj) -> bool:
        """The event filter: `WorkloadShouldBeSuspended`."""
        if o.labels(lws).get(c.QUEUE_LABEL):
            return True
        if not self.opts.manage_jobs_without_queue_name:
            return False
        ns = self.store.get("namespaces", o.namespace(lws))
        labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
        return ns is not None and selector.matches(
            self.config.managed_jobs_namespace_selector, labels, nil_matches=True
        )

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        now = self.clock()
        ns, name = key.split("/", 1)
        lws = self.cache.get(LEADER_WORKER_SET.resource, key)
        uid = None if lws is None else o.uid(lws)
        workloads = [
            wl
            for wl in self.store.list("workloads", ns)
            if uid is not None and any(ref.get("uid") == uid for ref in o.meta(wl).get("ownerReferences") or ())
        ]
        p = plan_leaderworkerset(
            lws,
            workloads=sorted(workloads, key=o.name),
            statefulsets=[s for s in self.cache.list("statefulsets", ns) if o.labels(s).get(NAME_LABEL) == name],
            pods=sorted((p for p in self.cache.list("pods", ns) if o.labels(p).get(NAME_LABEL) == name), key=o.name),
            opts=self.opts,
            lookups=lookups_from(self.store),
        )
        # The object events name; a LeaderWorkerSet already gone only releases its pods.
        job: Obj = {**(lws or {"metadata": {"name": name, "namespace": ns}}), "apiVersion": API_VERSION, "kind": KIND}
        execute_plan(self.executor, key, job, p, now, settled=lambda key, uid: None)
        end_plan(key, KIND, p)


def setup(ctx: SetupContext) -> Wiring:
    """The LeaderWorkerSet integration in the worker: it follows LeaderWorkerSets, their pods and
    their StatefulSets itself."""
    return Wiring(LeaderWorkerSetReconciler(ctx.kube, ctx.store, ctx.config, ctx.recorder, stop=ctx.stop))
