"""One reconcile of a ConcurrentAdmission parent, pure: from the parent, its variants, its
ClusterQueue and `now` to the actions (`jobframework.actions`) that keep one variant Workload per
flavor and the parent in step with whichever variant is admitted. No I/O, no clock.

Mirrors `Reconcile` and its helpers in `pkg/controller/concurrentadmission/controller.go` and
`GetWorkloadNameForVariant` of `pkg/controller/jobframework/workload_names.go` (upstream v0.19.2),
in upstream's order: create missing variants, delete stale ones, follow a variant's eviction,
deactivate and activate variants, sync the parent's admission, open one preemption gate. Each
action is applied to the plan's own copies as it is decided, as upstream's reconcile mutates the
objects it holds, so later steps see earlier ones. `reconciler` carries the actions out.

Upstream's writes as actions:

* `createVariants`: `CreateWorkload` of `generateVariant`'s body, with the parent's CreatedVariant event;
* `deleteStaleVariants`: `DeleteWorkload`, then the parent's DeletedVariant `RecordEvent`;
* `activateWl` / `deactivateWl`: `SetWorkloadActive`, with the variant's (De)ActivatedVariant event;
* `SetEvictedCondition` of the parent: `SetWorkloadConditions` with Evicted=True;
* `clearWorkloadAdmission` of a variant: `ClearReservation`;
* `syncFinished`: `FinishWorkload` per variant;
* `syncPodsReadyCond`: `SetPodsReady` on the admitted variant;
* the parent's `SetQuotaReservation` + `SetAdmittedCondition`: `AdmitWorkload`;
* `openPreemptionGate`: `OpenPreemptionGate`, with the variant's PreemptionUngatedVariant event.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from webhook.api import constants as c
from webhook.api import objects as o
from webhook.core import concurrent_admission as ca
from webhook.core.conditions import ConditionValue
from webhook.core.model import ClusterQueueSpec, MigrationMode
from webhook.core.workload import parse_time
from webhook.worker.jobframework import actions as ja
from webhook.worker.status import clear_reservation, set_conditions

__all__ = [
    "PREEMPTION_TIMEOUT",
    "VariantAction",
    "VariantPlan",
    "first_candidate",
    "new_variant",
    "plan",
    "variant_name",
]

# Only one variant of a parent may preempt at a time; the next one gets its turn after this long.
PREEMPTION_TIMEOUT = timedelta(minutes=5)
_MAX_PREFIX = 253 - 6
_SHORT_MAX_PREFIX = 63 - 6
_E = c.VariantEventReason
_W = c.WorkloadCondition


VariantAction = (
    ja.CreateWorkload
    | ja.DeleteWorkload
    | ja.RecordEvent
    | ja.SetWorkloadActive
    | ja.SetWorkloadConditions
    | ja.ClearReservation
    | ja.FinishWorkload
    | ja.SetPodsReady
    | ja.AdmitWorkload
    | ja.OpenPreemptionGate
)
"""Every action a variant reconcile may plan."""


@dataclass(frozen=True, slots=True)
class VariantPlan:
    """One variant reconcile: its actions in order, then maybe a later look."""

    steps: tuple[VariantAction, ...] = ()
    requeue_after: timedelta | None = None


def variant_name(parent: str, parent_uid: str, flavor: str, *, short: bool = False) -> str:
    """`<parent without its hash>-variant-<flavor>` cut to the prefix limit, `-`, then 5 hex of
    SHA-1 over the parent's name and UID and the flavor. Upstream hashes the parent's
    GroupVersionKind too, which its typed client leaves empty, hence the two empty lines."""
    prefix = f"{parent[: parent.rfind('-')]}-variant-{flavor}"[: _SHORT_MAX_PREFIX if short else _MAX_PREFIX]
    digest = hashlib.sha1(f"\n\n{parent}\n{parent_uid}\n{flavor}".encode()).hexdigest()[:5]
    return f"{prefix}-{digest}"


def new_variant(parent: Mapping[str, Any], flavor: str, *, short_names: bool = False) -> dict[str, Any]:
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
    body_meta: dict[str, Any] = {
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


def _generation(obj: Mapping[str, Any]) -> int:
    return int(o.meta(obj).get("generation") or 0)


def _is_active(obj: Mapping[str, Any]) -> bool:
    return (obj.get("spec") or {}).get("active", True) is not False


def _is_admissible(obj: Mapping[str, Any]) -> bool:
    """`IsAdmissible`, without the gates this worker has no concept of."""
    return not o.is_finished(obj) and _is_active(obj) and not o.has_quota_reservation(obj)


def _admitted(variants: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    return next((v for v in variants if o.is_admitted(v)), None)


def _gate_open(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The state of the ConcurrentAdmission gate in status when it is Open, else None."""
    return next(
        (
            g
            for g in (obj.get("status") or {}).get("preemptionGates") or ()
            if g.get("name") == c.CONCURRENT_ADMISSION_PREEMPTION_GATE and g.get("position") == "Open"
        ),
        None,
    )


def first_candidate(admissible: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The most preferred variant blocked on its closed gate; None as soon as a more preferred one
    has not been evaluated yet (`firstCandidateVariant`)."""
    for v in admissible:
        if _gate_open(v) is not None:
            continue
        if o.is_condition_true(v, _W.BLOCKED_ON_PREEMPTION_GATES):
            return v
        if o.find_condition(v, _W.QUOTA_RESERVED) is None:
            return None
    return None


class _Planner:
    """Decides the actions of one reconcile, applying each to its own copies as it goes."""

    def __init__(
        self,
        parent: Mapping[str, Any],
        variants: Sequence[Mapping[str, Any]],
        cq: ClusterQueueSpec,
        now: datetime,
        short_names: bool,
    ) -> None:
        self.parent: dict[str, Any] = copy.deepcopy(dict(parent))
        self.order = {name: i for i, name in enumerate(cq.resource_groups[0].flavor_names)}
        # Stable, unlike upstream's sort; a flavor no longer listed sorts first, as its missing map key reads 0.
        self.variants: list[dict[str, Any]] = sorted(
            (copy.deepcopy(dict(v)) for v in variants), key=lambda v: self.order.get(ca.variant_flavor(v), 0)
        )
        self.policy = cq.concurrent_admission
        self.flavors = cq.resource_groups[0].flavor_names
        self.now = now
        self.short_names = short_names
        self.steps: list[VariantAction] = []

    @property
    def mode(self) -> MigrationMode:
        return self.policy.mode if self.policy is not None else MigrationMode.TRY_PREFERRED_FLAVORS

    @property
    def last_acceptable(self) -> str | None:
        return self.policy.last_acceptable_flavor if self.policy is not None else None

    def rank(self, v: Mapping[str, Any]) -> int:
        return self.order.get(ca.variant_flavor(v), 0)

    # -- actions, each applied to the copies -------------------------------------------------------
    def _evict(self, wl: dict[str, Any], reason: str, message: str) -> None:
        evicted = {"type": _W.EVICTED, "status": "True", "reason": reason, "message": message}
        set_conditions(wl.setdefault("status", {}), (evicted,), self.now, _generation(wl))
        self.steps.append(
            ja.SetWorkloadConditions(workload=copy.deepcopy(wl), conditions=(evicted,), reason=reason, message=message)
        )

    def _clear_admission(self, v: dict[str, Any], evicted: Mapping[str, Any]) -> None:
        """`clearWorkloadAdmission`: requeued only after a preemption or node failures."""
        reason, message = str(evicted.get("reason") or ""), str(evicted.get("message") or "")
        requeue = reason in (c.EvictionReason.PREEMPTED, c.EvictionReason.NODE_FAILURES)
        clear_reservation(
            v.setdefault("status", {}),
            requeue=requeue,
            reason=reason,
            message=message,
            now=self.now,
            generation=_generation(v),
        )
        self.steps.append(
            ja.ClearReservation(workload=copy.deepcopy(v), requeue=requeue, reason=reason, message=message)
        )

    def _set_active(self, v: dict[str, Any], active: bool, message: str) -> None:
        if _is_active(v) == active:
            return
        v.setdefault("spec", {})["active"] = active
        self.steps.append(
            ja.SetWorkloadActive(
                workload=copy.deepcopy(v),
                reason=_E.ACTIVATED_VARIANT if active else _E.DEACTIVATED_VARIANT,
                message=message,
                active=active,
            )
        )
        if active:
            return
        evicted = o.find_condition(v, _W.EVICTED)
        if evicted is not None and evicted.get("status") == "True" and o.has_quota_reservation(v):
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
                body = new_variant(self.parent, flavor, short_names=self.short_names)
                self.steps.append(
                    ja.CreateWorkload(
                        body=body, reason=_E.CREATED_VARIANT, message=f'Variant Workload "{o.key(body)}" created'
                    )
                )

    def delete_stale_variants(self) -> None:
        fresh = []
        for v in self.variants:
            flavor = ca.variant_flavor(v)
            if flavor in self.order:
                fresh.append(v)
                continue
            message = f'Variant Workload "{o.key(v)}" deleted; flavor "{flavor}" no longer in ClusterQueue'
            self.steps.append(ja.DeleteWorkload(workload=copy.deepcopy(v), message=message))
            self.steps.append(ja.RecordEvent(reason=_E.DELETED_VARIANT, message=message))
        self.variants = fresh

    def sync_variant_eviction(self) -> bool:
        """An admitted variant was evicted: evict the parent and wait until it gives its quota back,
        then clear the variant's admission. True while waiting for the parent."""
        for v in self.variants:
            evicted = o.find_condition(v, _W.EVICTED)
            if evicted is None or evicted.get("status") != "True" or not o.has_quota_reservation(v):
                continue
            if o.has_quota_reservation(self.parent):
                if not o.is_condition_true(self.parent, _W.EVICTED):
                    self._evict(self.parent, c.VARIANT_EVICTED_REASON, c.MSG_ADMITTED_VARIANT_EVICTED)
                return True
            self._clear_admission(v, evicted)
            return False
        return False

    def deactivate_variants(self) -> None:
        if not _is_active(self.parent):
            for v in self.variants:
                self._set_active(v, False, f'Parent Workload "{o.key(self.parent)}" not active')
            return
        admitted = _admitted(self.variants)
        if admitted is None:
            return
        if self.mode == MigrationMode.RETAIN_FIRST_ADMISSION:
            for v in self.variants:
                if v["metadata"]["name"] != admitted["metadata"]["name"]:
                    self._set_active(v, False, f'RetainFirstAdmission: another Variant "{o.key(admitted)}" is admitted')
            return
        last = self.last_acceptable
        if last is not None:
            for v in self.variants:
                if v["metadata"]["name"] != admitted["metadata"]["name"] and self.rank(v) > self.order.get(last, 0):
                    self._set_active(
                        v,
                        False,
                        f'being below lastAcceptableFlavor: "{last}" and another Variant admitted "{o.key(admitted)}"',
                    )
        for v in self.variants:
            if self.rank(v) > self.rank(admitted):
                self._set_active(v, False, f'being lower priority than admitted Variant "{o.key(admitted)}"')

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
                self._set_active(v, True, f'being higher priority than admitted Variant "{o.key(admitted)}"')
            elif self.rank(v) <= self.order.get(last, 0):
                self._set_active(
                    v,
                    True,
                    f'being at least lastAcceptableFlavor: "{last}" and higher priority than admitted Variant "{o.key(admitted)}"',
                )

    def sync_admission(self) -> None:
        finished = o.find_condition(self.parent, _W.FINISHED)
        if finished is not None and finished.get("status") == "True":
            for v in self.variants:
                if not o.is_finished(v):
                    self.steps.append(
                        ja.FinishWorkload(
                            workload=copy.deepcopy(v),
                            reason=str(finished.get("reason") or ""),
                            message=str(finished.get("message") or ""),
                        )
                    )
            return
        admitted = _admitted(self.variants)
        parent_admitted = o.is_admitted(self.parent)
        if admitted is None:
            if parent_admitted:
                self._evict(self.parent, c.CONCURRENT_ADMISSION_EVICTION_REASON, c.MSG_NO_VARIANT_RUNNING)
            return
        ready = o.find_condition(self.parent, _W.PODS_READY)
        current = o.find_condition(admitted, _W.PODS_READY)
        if ready is not None and (
            current is None or any(current.get(f) != ready.get(f) for f in ("status", "reason", "message"))
        ):
            condition = ConditionValue(*(str(ready.get(f) or "") for f in ("type", "status", "reason", "message")))
            self.steps.append(ja.SetPodsReady(workload=copy.deepcopy(admitted), condition=condition))
        if not parent_admitted:
            admission = copy.deepcopy((admitted.get("status") or {}).get("admission") or {})
            self.steps.append(
                ja.AdmitWorkload(
                    workload=copy.deepcopy(self.parent),
                    reason="Admitted",
                    message=c.MSG_VARIANT_ADMITTED.format(name=admitted["metadata"]["name"]),
                    admission=admission,
                )
            )

    def open_preemption_gate(self) -> timedelta | None:
        """Open the gate of the most preferred variant blocked on it, once no other variant's gate
        was opened within the timeout (`selectVariantToOpenPreemptionGate`)."""
        admissible = [v for v in self.variants if _is_admissible(v)]
        candidate = first_candidate(admissible)
        if candidate is None:
            return None
        opened = [parse_time(s.get("lastTransitionTime")) for v in admissible if (s := _gate_open(v)) is not None]
        latest = max((t for t in opened if t is not None), default=None)
        if latest is not None:
            wait = PREEMPTION_TIMEOUT - (self.now - latest)
            if wait > timedelta(0):
                return wait
        self.steps.append(
            ja.OpenPreemptionGate(
                workload=copy.deepcopy(candidate),
                gate=c.CONCURRENT_ADMISSION_PREEMPTION_GATE,
                reason=_E.PREEMPTION_UNGATED_VARIANT,
                message=f'Opened preemption gate for variant workload "{o.key(candidate)}"',
            )
        )
        return PREEMPTION_TIMEOUT


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
