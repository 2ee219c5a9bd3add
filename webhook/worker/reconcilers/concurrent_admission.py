"""The ConcurrentAdmission variant controller: one variant Workload per flavor of a parent's
ClusterQueue, and the parent kept in step with whichever variant is admitted.

Mirrors `pkg/controller/concurrentadmission/controller.go` and `GetWorkloadNameForVariant` of
`pkg/controller/jobframework/workload_names.go` at upstream v0.19.2. `plan` is pure: from the parent,
its variants, the ClusterQueue and `now` it returns the steps of one `Reconcile`, in upstream's order
(create missing variants, delete stale ones, follow a variant's eviction, deactivate and activate
variants, sync the parent's admission, open one preemption gate). Each step is applied to the
plan's own copies as it is decided, as upstream's reconcile mutates the objects it holds, so later
steps see earlier ones. `VariantReconciler` carries the steps out against the API.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, assert_never

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.core import concurrent_admission as ca
from webhook.core.model import ClusterQueueSpec, MigrationMode, parse_cluster_queue
from webhook.core.workload import parse_time
from webhook.worker import events
from webhook.worker.status import (
    set_condition,
    unset_quota_reservation,
    update_status,
)
from webhook.worker.store import Store, object_key
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "CONTROLLER_NAME",
    "PREEMPTION_TIMEOUT",
    "AdmitParent",
    "ClearVariantAdmission",
    "CreateVariant",
    "DeleteVariant",
    "EvictWorkload",
    "FinishVariant",
    "OpenGate",
    "SetVariantActive",
    "SetVariantPodsReady",
    "VariantPlan",
    "VariantReconciler",
    "VariantStep",
    "parents_for_cluster_queue",
    "plan",
    "variant_name",
]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "concurrent-admission-controller"
# Only one variant of a parent may preempt at a time; the next one gets its turn after this long.
PREEMPTION_TIMEOUT = timedelta(minutes=5)
_MAX_PREFIX = 253 - 6
_SHORT_MAX_PREFIX = 63 - 6
_E = c.VariantEventReason
_W = c.WorkloadCondition

Obj = dict[str, Any]


def variant_name(parent: str, parent_uid: str, flavor: str, *, short: bool = False) -> str:
    """`<parent without its hash>-variant-<flavor>` cut to the prefix limit, `-`, then 5 hex of
    SHA-1 over the parent's name and UID and the flavor. Upstream hashes the parent's
    GroupVersionKind too, which its typed client leaves empty, hence the two empty lines."""
    prefix = f"{parent[: parent.rfind('-')]}-variant-{flavor}"[: _SHORT_MAX_PREFIX if short else _MAX_PREFIX]
    digest = hashlib.sha1(f"\n\n{parent}\n{parent_uid}\n{flavor}".encode()).hexdigest()[:5]
    return f"{prefix}-{digest}"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Step:
    """One write of a reconcile: `target` is the Workload written (the parent or a variant);
    `name` is the step's stable short name, logged as `decision`."""

    name: ClassVar[str]
    target: Mapping[str, Any]
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateVariant(_Step):
    """`generateVariant` + Create: a new variant Workload for `flavor`."""

    name = "create"
    flavor: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteVariant(_Step):
    """A variant the policy no longer wants."""

    name = "delete"


@dataclass(frozen=True, slots=True, kw_only=True)
class SetVariantActive(_Step):
    """`spec.active` of a variant, with the event saying why."""

    name = "set_active"
    active: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class EvictWorkload(_Step):
    """Evicted=True on the parent or a variant."""

    name = "evict"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearVariantAdmission(_Step):
    """A variant gives its reservation back."""

    name = "clear_admission"


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishVariant(_Step):
    """Finished=True on a variant, copied from the parent."""

    name = "finish"


@dataclass(frozen=True, slots=True, kw_only=True)
class SetVariantPodsReady(_Step):
    """The admitted variant's PodsReady condition, copied to the parent."""

    name = "pods_ready"
    condition: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmitParent(_Step):
    """The admitted variant's admission, copied to the parent."""

    name = "admit_parent"
    admission: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenGate(_Step):
    """The ConcurrentAdmission preemption gate of a variant is opened."""

    name = "open_gate"


VariantStep = (
    CreateVariant
    | DeleteVariant
    | SetVariantActive
    | EvictWorkload
    | ClearVariantAdmission
    | FinishVariant
    | SetVariantPodsReady
    | AdmitParent
    | OpenGate
)
"""Every write a variant reconcile may plan."""


@dataclass(frozen=True, slots=True)
class VariantPlan:
    """One variant reconcile: its steps in order, then maybe a later look."""

    steps: tuple[VariantStep, ...] = ()
    requeue_after: timedelta | None = None


def _ref(obj: Mapping[str, Any]) -> str:
    return object_key(obj)


def _is_active(obj: Mapping[str, Any]) -> bool:
    return (obj.get("spec") or {}).get("active", True) is not False


def _has_reservation(obj: Mapping[str, Any]) -> bool:
    return o.is_condition_true(obj, _W.QUOTA_RESERVED)


def _is_admissible(obj: Mapping[str, Any]) -> bool:
    """`IsAdmissible`, without the gates this worker has no concept of."""
    return not o.is_condition_true(obj, _W.FINISHED) and _is_active(obj) and not _has_reservation(obj)


def _admitted(variants: Sequence[Obj]) -> Obj | None:
    return next((v for v in variants if o.is_condition_true(v, _W.ADMITTED)), None)


def _gate_state(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next(
        (
            g
            for g in (obj.get("status") or {}).get("preemptionGates") or ()
            if g.get("name") == c.CONCURRENT_ADMISSION_PREEMPTION_GATE
        ),
        None,
    )


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_variant(parent: Mapping[str, Any], flavor: str, *, short_names: bool = False) -> Obj:
    """`generateVariant`: the parent's labels (minus the parent label), annotations and spec, the
    ConcurrentAdmission preemption gate, the allowed-flavor annotation and the parent as controller."""
    meta = parent["metadata"]
    labels = {key: val for key, val in (meta.get("labels") or {}).items() if key != c.CONCURRENT_ADMISSION_PARENT_LABEL}
    annotations = {**(meta.get("annotations") or {}), c.ALLOWED_RESOURCE_FLAVORS_ANNOTATION: flavor}
    spec = copy.deepcopy(parent.get("spec") or {})
    gates = list(spec.get("preemptionGates") or ())
    if not any(g.get("name") == c.CONCURRENT_ADMISSION_PREEMPTION_GATE for g in gates):
        gates.append({"name": c.CONCURRENT_ADMISSION_PREEMPTION_GATE})
    spec["preemptionGates"] = gates
    body_meta: Obj = {
        "name": variant_name(str(meta["name"]), str(meta.get("uid") or ""), flavor, short=short_names),
        "namespace": meta["namespace"],
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": c.V1BETA2,
                "kind": "Workload",
                "name": meta["name"],
                "uid": meta.get("uid") or "",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if labels:
        body_meta["labels"] = labels
    return {"apiVersion": c.V1BETA2, "kind": "Workload", "metadata": body_meta, "spec": spec}


class _Planner:
    """Decides the steps of one reconcile, applying each to its own copies as it goes."""

    def __init__(
        self,
        parent: Mapping[str, Any],
        variants: Sequence[Mapping[str, Any]],
        cq: ClusterQueueSpec,
        now: datetime,
        short_names: bool,
    ) -> None:
        self.parent: Obj = copy.deepcopy(dict(parent))
        self.order = {name: i for i, name in enumerate(cq.resource_groups[0].flavor_names)}
        # Stable, unlike upstream's sort; a flavor no longer listed sorts first, as its missing map key reads 0.
        self.variants: list[Obj] = sorted(
            (copy.deepcopy(dict(v)) for v in variants), key=lambda v: self.order.get(ca.variant_flavor(v), 0)
        )
        self.policy = cq.concurrent_admission
        self.flavors = cq.resource_groups[0].flavor_names
        self.now = now
        self.short_names = short_names
        self.steps: list[VariantStep] = []

    @property
    def mode(self) -> MigrationMode:
        return self.policy.mode if self.policy is not None else MigrationMode.TRY_PREFERRED_FLAVORS

    @property
    def last_acceptable(self) -> str | None:
        return self.policy.last_acceptable_flavor if self.policy is not None else None

    def rank(self, v: Mapping[str, Any]) -> int:
        return self.order.get(ca.variant_flavor(v), 0)

    # -- steps, each applied to the copies ---------------------------------------------------------
    def _add(self, step: VariantStep) -> None:
        self.steps.append(step)

    def _evict(self, wl: Obj, reason: str, message: str) -> None:
        set_condition(
            wl.setdefault("status", {}),
            {"type": _W.EVICTED, "status": "True", "reason": reason, "message": message},
            self.now,
            _gen(wl),
        )
        self._add(EvictWorkload(target=copy.deepcopy(wl), reason=reason, message=message))

    def _clear_admission(self, v: Obj, evicted: Mapping[str, Any]) -> None:
        reason, message = str(evicted.get("reason") or ""), str(evicted.get("message") or "")
        apply_clear_admission(v.setdefault("status", {}), reason, message, self.now, _gen(v))
        self._add(ClearVariantAdmission(target=copy.deepcopy(v), reason=reason, message=message))

    def _set_active(self, v: Obj, active: bool, message: str) -> None:
        if _is_active(v) == active:
            return
        v.setdefault("spec", {})["active"] = active
        self._add(
            SetVariantActive(
                target=copy.deepcopy(v),
                reason=_E.ACTIVATED_VARIANT if active else _E.DEACTIVATED_VARIANT,
                message=message,
                active=active,
            )
        )
        if active:
            return
        evicted = o.find_condition(v, _W.EVICTED)
        if evicted is not None and evicted.get("status") == "True" and _has_reservation(v):
            self._clear_admission(v, evicted)

    # -- the recipe ------------------------------------------------------------------------------------
    def run(self) -> timedelta | None:
        self.create_variants()
        self.delete_stale_variants()
        if self.sync_variant_eviction():
            return None
        self.deactivate_variants()
        self.activate_variants()
        self.sync_admission()
        return self.open_preemption_gate()

    def create_variants(self) -> None:
        have = {ca.variant_flavor(v) for v in self.variants}
        for flavor in self.flavors:
            if flavor not in have:
                # Not added to `variants`: upstream's reconcile goes on with the list it read.
                self._add(
                    CreateVariant(
                        target=copy.deepcopy(new_variant(self.parent, flavor, short_names=self.short_names)),
                        flavor=flavor,
                    )
                )

    def delete_stale_variants(self) -> None:
        fresh = []
        for v in self.variants:
            flavor = ca.variant_flavor(v)
            if flavor in self.order:
                fresh.append(v)
            else:
                self._add(
                    DeleteVariant(
                        target=copy.deepcopy(v),
                        reason=_E.DELETED_VARIANT,
                        message=f'Variant Workload "{_ref(v)}" deleted; flavor "{flavor}" no longer in ClusterQueue',
                    )
                )
        self.variants = fresh

    def sync_variant_eviction(self) -> bool:
        """An admitted variant was evicted: evict the parent and wait until it gives its quota back,
        then clear the variant's admission. True while waiting for the parent."""
        for v in self.variants:
            evicted = o.find_condition(v, _W.EVICTED)
            if evicted is None or evicted.get("status") != "True" or not _has_reservation(v):
                continue
            if _has_reservation(self.parent):
                if not o.is_condition_true(self.parent, _W.EVICTED):
                    self._evict(self.parent, c.VARIANT_EVICTED_REASON, c.MSG_ADMITTED_VARIANT_EVICTED)
                return True
            self._clear_admission(v, evicted)
            return False
        return False

    def deactivate_variants(self) -> None:
        if not _is_active(self.parent):
            for v in self.variants:
                self._set_active(v, False, f'Parent Workload "{_ref(self.parent)}" not active')
            return
        admitted = _admitted(self.variants)
        if admitted is None:
            return
        if self.mode == MigrationMode.RETAIN_FIRST_ADMISSION:
            for v in self.variants:
                if v["metadata"]["name"] != admitted["metadata"]["name"]:
                    self._set_active(v, False, f'RetainFirstAdmission: another Variant "{_ref(admitted)}" is admitted')
            return
        last = self.last_acceptable
        if last is not None:
            for v in self.variants:
                if v["metadata"]["name"] != admitted["metadata"]["name"] and self.rank(v) > self.order.get(last, 0):
                    self._set_active(
                        v,
                        False,
                        f'being below lastAcceptableFlavor: "{last}" and another Variant admitted "{_ref(admitted)}"',
                    )
        for v in self.variants:
            if self.rank(v) > self.rank(admitted):
                self._set_active(v, False, f'being lower priority than admitted Variant "{_ref(admitted)}"')

    def activate_variants(self) -> None:
        if not _is_active(self.parent):
            return
        admitted = _admitted(self.variants)
        if admitted is None:
            for v in self.variants:  # e.g. after a preemption: every flavor is worth pursuing again
                self._set_active(v, True, "no other Variant being admitted")
            return
        if self.mode == MigrationMode.RETAIN_FIRST_ADMISSION:
            return
        last = self.last_acceptable
        for v in self.variants:
            if self.rank(v) >= self.rank(admitted):
                continue
            if last is None:
                self._set_active(v, True, f'being higher priority than admitted Variant "{_ref(admitted)}"')
            elif self.rank(v) <= self.order.get(last, 0):
                self._set_active(
                    v,
                    True,
                    f'being at least lastAcceptableFlavor: "{last}" and higher priority than admitted Variant "{_ref(admitted)}"',
                )

    def sync_admission(self) -> None:
        finished = o.find_condition(self.parent, _W.FINISHED)
        if finished is not None and finished.get("status") == "True":
            for v in self.variants:
                if not o.is_condition_true(v, _W.FINISHED):
                    self._add(
                        FinishVariant(
                            target=copy.deepcopy(v),
                            reason=str(finished.get("reason") or ""),
                            message=str(finished.get("message") or ""),
                        )
                    )
            return
        admitted = _admitted(self.variants)
        parent_admitted = o.is_condition_true(self.parent, _W.ADMITTED)
        if admitted is None:
            if parent_admitted:
                self._evict(self.parent, c.CONCURRENT_ADMISSION_EVICTION_REASON, c.MSG_NO_VARIANT_RUNNING)
            return
        ready = o.find_condition(self.parent, _W.PODS_READY)
        current = o.find_condition(admitted, _W.PODS_READY)
        if ready is not None and (
            current is None or any(current.get(f) != ready.get(f) for f in ("status", "reason", "message"))
        ):
            self._add(SetVariantPodsReady(target=copy.deepcopy(admitted), condition=dict(ready)))
        if not parent_admitted:
            admission = copy.deepcopy((admitted.get("status") or {}).get("admission") or {})
            message = c.MSG_VARIANT_ADMITTED.format(name=admitted["metadata"]["name"])
            self._add(
                AdmitParent(target=copy.deepcopy(self.parent), reason="Admitted", message=message, admission=admission)
            )

    def open_preemption_gate(self) -> timedelta | None:
        """Open the gate of the most preferred variant blocked on it, once no other variant's gate
        was opened within the timeout (`selectVariantToOpenPreemptionGate`)."""
        admissible = [v for v in self.variants if _is_admissible(v)]
        candidate = _first_candidate(admissible)
        if candidate is None:
            return None
        opened = [
            parse_time(s.get("lastTransitionTime"))
            for v in admissible
            if (s := _gate_state(v)) is not None and s.get("position") == "Open"
        ]
        latest = max((t for t in opened if t is not None), default=None)
        if latest is not None:
            wait = PREEMPTION_TIMEOUT - (self.now - latest)
            if wait > timedelta(0):
                return wait
        self._add(
            OpenGate(
                target=copy.deepcopy(candidate),
                reason=_E.PREEMPTION_UNGATED_VARIANT,
                message=f'Opened preemption gate for variant workload "{_ref(candidate)}"',
            )
        )
        return PREEMPTION_TIMEOUT


def _first_candidate(admissible: Sequence[Obj]) -> Obj | None:
    """The most preferred variant blocked on its closed gate; None as soon as a more preferred one
    has not been evaluated yet (`firstCandidateVariant`)."""
    for v in admissible:
        state = _gate_state(v)
        if state is not None and state.get("position") == "Open":
            continue
        if o.is_condition_true(v, _W.BLOCKED_ON_PREEMPTION_GATES):
            return v
        if o.find_condition(v, _W.QUOTA_RESERVED) is None:
            return None
    return None


def _gen(obj: Mapping[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("generation") or 0)


def apply_clear_admission(status: dict[str, Any], reason: str, message: str, now: datetime, generation: int) -> None:
    """`clearWorkloadAdmission`: Requeued (True after a preemption or node failures) and the
    reservation unset, as the job reconciler does for a Job's evicted Workload."""
    requeued = "True" if reason in (c.EvictionReason.PREEMPTED, c.EvictionReason.NODE_FAILURES) else "False"
    set_condition(
        status, {"type": _W.REQUEUED, "status": requeued, "reason": reason, "message": message}, now, generation
    )
    unset_quota_reservation(status, c.PendingReason.PENDING_EVALUATION, message, now, generation)


def plan(
    parent: Mapping[str, Any] | None,
    variants: Sequence[Mapping[str, Any]],
    cq: ClusterQueueSpec | None,
    now: datetime,
    *,
    short_names: bool = False,
) -> VariantPlan:
    """One reconcile of a parent (`Reconcile`); nothing for a Workload that is not a parent, or whose
    ClusterQueue is unknown or has no resource group."""
    if parent is None or not ca.is_parent(parent) or cq is None or not cq.resource_groups:
        return VariantPlan()
    planner = _Planner(parent, variants, cq, now, short_names)
    wait = planner.run()
    return VariantPlan(tuple(planner.steps), wait)


def parents_for_cluster_queue(store: Store, cluster_queue: str) -> list[str]:
    """Keys of the parents whose LocalQueue routes to `cluster_queue` (`parentsForClusterQueue`)."""
    routed = {
        object_key(lq)
        for lq in store.list("localqueues")
        if (lq.get("spec") or {}).get("clusterQueue") == cluster_queue
    }
    return sorted(
        object_key(wl)
        for wl in store.list("workloads")
        if ca.is_parent(wl)
        and f"{wl['metadata'].get('namespace')}/{(wl.get('spec') or {}).get('queueName') or ''}" in routed
    )


def flavors_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """The flavor names of some resource group changed (`clusterQueueFlavorsChanged`)."""

    def names(cq: Mapping[str, Any] | None) -> list[list[str]]:
        return [
            [str(f.get("name")) for f in rg.get("flavors") or ()]
            for rg in ((cq or {}).get("spec") or {}).get("resourceGroups") or ()
        ]

    return old is not None and names(old) != names(new)


class VariantReconciler:
    """Carries out `plan` for one parent key (`namespace/name`) on its own work queue."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        recorder: events.Recorder,
        *,
        stop: threading.Event,
        short_names: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.kube = kube
        self.store = store
        self.events = recorder
        self.short_names = short_names
        self.clock = clock
        self.queue: WorkQueue[object] = WorkQueue("variants", self.reconcile, workers=2, stop=stop)

    def start(self) -> None:
        self.queue.start()

    def add(self, key: str) -> None:
        self.queue.add(key)

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind == "workloads":
            self.on_workload(obj)
        elif kind == "clusterqueues" and etype != "DELETED":
            self.on_cluster_queue(old, obj)

    def on_workload(self, obj: Mapping[str, Any]) -> None:
        """Watch events: a parent queues itself, a variant its parent."""
        meta = obj.get("metadata") or {}
        if ca.is_parent(obj):
            self.add(object_key(obj))
        elif ca.is_variant(obj):
            self.add(f"{meta.get('namespace')}/{ca.parent_name(obj)}")

    def on_cluster_queue(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        if flavors_changed(old, new):
            for key in parents_for_cluster_queue(self.store, str(new["metadata"]["name"])):
                self.add(key)

    def _cluster_queue(self, wl: Mapping[str, Any]) -> ClusterQueueSpec | None:
        lq = self.store.get(
            "localqueues", f"{wl['metadata'].get('namespace')}/{(wl.get('spec') or {}).get('queueName') or ''}"
        )
        cq = self.store.get("clusterqueues", str(((lq or {}).get("spec") or {}).get("clusterQueue") or ""))
        return None if cq is None else parse_cluster_queue(cq, concurrent_admission=True)

    def reconcile(self, key: str, _items: Sequence[object] = ()) -> None:
        parent = self.store.get("workloads", key)
        if parent is None or not ca.is_parent(parent):
            return
        uid = parent["metadata"].get("uid")
        variants = [
            wl
            for wl in self.store.list("workloads", parent["metadata"]["namespace"])
            if any(ref.get("uid") == uid for ref in wl["metadata"].get("ownerReferences") or ())
        ]
        cq = self._cluster_queue(parent)
        if cq is None:
            raise Retry(1.0, "ClusterQueue of the parent not found")
        now = self.clock()
        p = plan(parent, variants, cq, now, short_names=self.short_names)
        for step in p.steps:
            try:
                self._do(step, parent, now)
            except k.Conflict as exc:
                raise Retry(0.2, "workload changed") from exc
        if p.requeue_after is not None:
            self.queue.add_after(key, p.requeue_after.total_seconds())

    # -- steps -----------------------------------------------------------------------------------
    def _path(self, wl: Mapping[str, Any]) -> str:
        return k.object_path(c.V1BETA2, "workloads", wl["metadata"]["namespace"], wl["metadata"]["name"])

    def _status(self, wl: Mapping[str, Any], mutate: Any) -> dict[str, Any] | None:
        return update_status(self.kube, self.store, "workloads", self._path(wl), mutate)

    def _do(self, step: VariantStep, parent: Mapping[str, Any], now: datetime) -> None:
        match step:
            case CreateVariant():
                self._do_create(step, parent, now)
            case DeleteVariant():
                self._do_delete(step, parent, now)
            case SetVariantActive():
                self._do_set_active(step, parent, now)
            case EvictWorkload():
                self._do_evict(step, parent, now)
            case ClearVariantAdmission():
                self._do_clear_admission(step, parent, now)
            case FinishVariant():
                self._do_finish(step, parent, now)
            case SetVariantPodsReady():
                self._do_pods_ready(step, parent, now)
            case AdmitParent():
                self._do_admit_parent(step, parent, now)
            case OpenGate():
                self._do_open_gate(step, parent, now)
            case _:
                assert_never(step)

    def _log(self, message: str, step: VariantStep, parent: Mapping[str, Any], **extra: Any) -> None:
        log.info(
            message,
            extra={
                "object": _ref(step.target),
                "kind": "Workload",
                "parent": _ref(parent),
                "decision": step.name,
                **extra,
            },
        )

    def _do_create(self, step: CreateVariant, parent: Mapping[str, Any], now: datetime) -> None:
        wl = step.target
        try:
            self.store.put(
                "workloads",
                self.kube.create(k.object_path(c.V1BETA2, "workloads", wl["metadata"]["namespace"], None), wl),
            )
        except k.Conflict:
            return  # already exists
        self._log("variant created", step, parent, flavor=step.flavor)
        self.events.emit(
            parent, "Normal", _E.CREATED_VARIANT, f'Variant Workload "{_ref(wl)}" created', CONTROLLER_NAME
        )

    def _do_delete(self, step: DeleteVariant, parent: Mapping[str, Any], now: datetime) -> None:
        # A Conflict: the UID precondition failed, the variant was recreated since it was planned.
        with contextlib.suppress(k.NotFound, k.Conflict):
            self.kube.delete(self._path(step.target), body=o.uid_precondition(step.target))
        self._log("variant deleted", step, parent, detail=step.message)
        self.events.emit(parent, "Normal", step.reason, step.message, CONTROLLER_NAME)

    def _do_set_active(self, step: SetVariantActive, parent: Mapping[str, Any], now: datetime) -> None:
        """spec.active, guarded by the resourceVersion the decision was taken on."""
        wl, active = step.target, step.active
        body = {"metadata": {"resourceVersion": wl["metadata"].get("resourceVersion")}, "spec": {"active": active}}
        try:
            self.store.put("workloads", self.kube.patch(self._path(wl), body))
        except k.NotFound:
            return
        word = "activated" if active else "deactivated"
        self._log(f"variant {word}", step, parent, detail=step.message)
        self.events.emit(wl, "Normal", step.reason, f"Variant Workload {word} due to {step.message}", CONTROLLER_NAME)

    def _do_evict(self, step: EvictWorkload, parent: Mapping[str, Any], now: datetime) -> None:
        cond = {"type": _W.EVICTED, "status": "True", "reason": step.reason, "message": step.message}
        self._status(step.target, lambda status, obj: set_condition(status, cond, now, _gen(obj)))
        self._log("parent evicted", step, parent, reason=step.reason, detail=step.message)

    def _do_clear_admission(self, step: ClearVariantAdmission, parent: Mapping[str, Any], now: datetime) -> None:
        self._status(
            step.target, lambda status, obj: apply_clear_admission(status, step.reason, step.message, now, _gen(obj))
        )
        self._log("variant admission cleared", step, parent, reason=step.reason)

    def _do_finish(self, step: FinishVariant, parent: Mapping[str, Any], now: datetime) -> None:
        cond = {"type": _W.FINISHED, "status": "True", "reason": step.reason, "message": step.message}
        self._status(step.target, lambda status, obj: set_condition(status, cond, now, _gen(obj)))
        self._log("variant finished", step, parent, reason=step.reason)

    def _do_pods_ready(self, step: SetVariantPodsReady, parent: Mapping[str, Any], now: datetime) -> None:
        ready = {f: step.condition[f] for f in ("type", "status", "reason", "message")}
        self._status(step.target, lambda status, obj: set_condition(status, ready, now, _gen(obj)))

    def _do_admit_parent(self, step: AdmitParent, parent: Mapping[str, Any], now: datetime) -> None:
        admission = step.admission
        self._status(
            step.target, lambda status, obj: apply_parent_admission(status, admission, step.message, now, _gen(obj))
        )
        self._log("parent admitted", step, parent, cluster_queue=admission.get("clusterQueue", ""))

    def _do_open_gate(self, step: OpenGate, parent: Mapping[str, Any], now: datetime) -> None:
        if self._status(step.target, lambda status, obj: open_gate(status, obj, now)) is None:
            return
        self._log("preemption gate opened", step, parent)
        self.events.emit(step.target, "Normal", step.reason, step.message, CONTROLLER_NAME)


def apply_parent_admission(
    status: dict[str, Any], admission: Mapping[str, Any], message: str, now: datetime, generation: int
) -> None:
    """`SetQuotaReservation` with the variant's admission, then Admitted=True (`SetAdmittedCondition`):
    active Evicted, Preempted and BlockedOnPreemptionGates conditions turn False, "Previously: ..."."""
    status["admission"] = copy.deepcopy(dict(admission))
    cq = admission.get("clusterQueue", "")
    set_condition(
        status,
        {
            "type": _W.QUOTA_RESERVED,
            "status": "True",
            "reason": c.QUOTA_RESERVED_REASON,
            "message": f"Quota reserved in ClusterQueue {cq}",
        },
        now,
        generation,
    )
    for ctype in (_W.EVICTED, _W.PREEMPTED, _W.BLOCKED_ON_PREEMPTION_GATES):
        prev = o.find_condition({"status": status}, ctype)
        if prev is not None and prev.get("status") == "True":
            set_condition(
                status,
                {
                    "type": ctype,
                    "status": "False",
                    "reason": c.QUOTA_RESERVED_REASON,
                    "message": f"Previously: {prev.get('message', '')}",
                },
                now,
                generation,
            )
    set_condition(
        status, {"type": _W.ADMITTED, "status": "True", "reason": "Admitted", "message": message}, now, generation
    )


def open_gate(status: dict[str, Any], obj: Mapping[str, Any], now: datetime) -> None:
    """`OpenPreemptionGate` for the ConcurrentAdmission gate, if the spec lists it."""
    if not any(
        g.get("name") == c.CONCURRENT_ADMISSION_PREEMPTION_GATE
        for g in (obj.get("spec") or {}).get("preemptionGates") or ()
    ):
        return
    gates: list[dict[str, Any]] = status.setdefault("preemptionGates", [])
    for g in gates:
        if g.get("name") == c.CONCURRENT_ADMISSION_PREEMPTION_GATE:
            g.update(position="Open", lastTransitionTime=_stamp(now))
            return
    gates.append(
        {"name": c.CONCURRENT_ADMISSION_PREEMPTION_GATE, "position": "Open", "lastTransitionTime": _stamp(now)}
    )
