"""Admission fair sharing: each LocalQueue's decayed usage, its entry penalties, and the usage value
that orders a ClusterQueue's LocalQueues (lower first).

Mirrors kueue v0.19.2: the math of `pkg/util/admissionfairsharing/admission_fair_sharing.go`, the
per-LocalQueue ledger of `pkg/cache/queue/afs/{usage_ledger,entry_penalties}.go`, the sampling step
of `reconcileConsumedUsage` in `pkg/controller/core/localqueue_controller.go` and the settlement of
`updateAfsConsumedUsage` in `pkg/controller/core/workload_controller.go`.

Amounts are kept in billionths of a unit (nano-cores, nano-bytes), as upstream's `MulByFloat`
rounds every scaled quantity down to 9 decimals: the persisted `consumedResources` read back here
give the same numbers upstream would compute, and the decayed values never lose a whole milli-CPU
to rounding.

The life of one LocalQueue's entry:

1. first seen: seeded from its persisted `status.fairSharing.admissionFairSharingStatus`, sampled
   at once (`seed`, `is_due`);
2. the scheduler assumes a Workload of it: an entry penalty, `alpha(samplingInterval)` times the
   Workload's requests, is recorded against the Workload (`push_penalty`), so a burst of admissions
   is priced before the next sample; a failed admission write takes it back (`sub_penalty`);
3. the Workload becomes Admitted: its penalty is folded into the consumed history together with a
   decay step (`settle`); a Workload that can no longer be admitted drops its penalty;
4. every `usageSamplingInterval` (and at once while penalties are pending): a decay step towards the
   LocalQueue's admitted usage, the result to be written to its status (`sample`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from webhook.api import quantity
from webhook.core import model
from webhook.core.workload import WorkloadInfo, WorkloadKey

if TYPE_CHECKING:
    from webhook.core.cache import Cache

__all__ = [
    "Entry",
    "Settings",
    "Tracker",
    "UsageLedger",
    "alpha_rate",
    "decayed",
    "entry_penalty",
    "format_consumed",
    "merge",
    "parse_consumed",
    "scale",
    "to_nanos",
    "usage",
]

Nanos = dict[str, int]
_NANO = 10**9


@dataclass(frozen=True, slots=True)
class Settings:
    """The Configuration's `admissionFairSharing`, present only with the AdmissionFairSharing gate on."""

    half_life_s: float
    sampling_interval_s: float
    resource_weights: Mapping[str, float] = field(default_factory=dict)


def to_nanos(amounts: Mapping[str, int]) -> Nanos:
    """The core's amounts (milli-CPU, whole units otherwise) in billionths of a unit."""
    return {r: v * (10**6 if quantity.is_milli_resource(r) else _NANO) for r, v in amounts.items()}


def alpha_rate(elapsed_s: float, half_life_s: float) -> float:
    """The weight of the newest sample after `elapsed_s`: 1 - 0.5^(elapsed/halfLife); 0 without a half-life."""
    if half_life_s == 0:
        return 0.0
    return 1.0 - math.pow(0.5, elapsed_s / half_life_s)


def scale(amounts: Mapping[str, int], factor: float) -> Nanos:
    """`MulByFloat`: each amount times the shortest decimal form of `factor`, rounded toward zero."""
    exact = Fraction(repr(factor))
    return {r: int(v * exact) for r, v in amounts.items()}


def merge(a: Mapping[str, int], b: Mapping[str, int]) -> Nanos:
    """`MergeResourceListKeepSum`."""
    out = dict(a)
    for r, v in b.items():
        out[r] = out.get(r, 0) + v
    return out


def entry_penalty(total_requests: Mapping[str, int], settings: Settings) -> Nanos:
    """`CalculateEntryPenalty`: what one sample of these requests would add to the consumed history."""
    return scale(total_requests, alpha_rate(settings.sampling_interval_s, settings.half_life_s))


def decayed(old: Mapping[str, int], new: Mapping[str, int], elapsed_s: float, half_life_s: float) -> Nanos:
    """`CalculateDecayedConsumed`: old * (1 - alpha) + new * alpha."""
    alpha = alpha_rate(elapsed_s, half_life_s)
    return merge(scale(old, 1 - alpha), scale(new, alpha))


def usage(
    consumed: Mapping[str, int], penalty: Mapping[str, int], lq_weight: float, resource_weights: Mapping[str, float]
) -> float:
    """`CalculateUsage`: the resource-weighted sum of consumed history and pending penalties, in whole
    units, over the LocalQueue's weight. A weight of zero or less gives +inf (last), where upstream
    would otherwise divide 0 by 0."""
    total = merge(consumed, penalty)
    value = 0.0
    for r in sorted(total):
        value += resource_weights.get(r, 1.0) * (total[r] / _NANO)
    if lq_weight <= 0:
        return math.inf
    return value / lq_weight


def format_consumed(amounts: Mapping[str, int]) -> dict[str, str]:
    """`consumedResources` as the API prints it."""
    return {r: quantity.format_nanos(amounts[r]) for r in sorted(amounts)}


def parse_consumed(raw: object) -> Nanos:
    """`consumedResources` from a LocalQueue's status (unreadable entries are skipped)."""
    out: Nanos = {}
    if not isinstance(raw, dict):
        return out
    for r, text in raw.items():
        try:
            out[str(r)] = math.floor(quantity.parse(text) * _NANO)
        except (quantity.QuantityError, TypeError, ValueError):
            continue
    return out


@dataclass(slots=True)
class Entry:
    """One LocalQueue's accounting (`UsageLedgerEntry`)."""

    consumed: Nanos
    last_update: datetime
    # Entry penalty per Workload key, until it is settled or dropped.
    penalties: dict[str, Nanos] = field(default_factory=dict)
    # False until the first sample after the entry was created: it is sampled at once.
    sampled: bool = False
    # What the last sample left to write: consumedResources and lastUpdate.
    status: tuple[Nanos, datetime] | None = None
    # Whether the persisted status was folded in (an entry a penalty or settlement created first
    # still needs it, once: `StatusAccounted`).
    status_accounted: bool = False

    def pending_penalty(self) -> Nanos:
        out: Nanos = {}
        for wl in sorted(self.penalties):
            out = merge(out, self.penalties[wl])
        return {r: v for r, v in out.items() if v}


class UsageLedger:
    """Every LocalQueue's entry (`AfsUsageLedger`), keyed by `namespace/name`. Mutable, owned by the
    admission core's thread; every method takes the time it runs at."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        # Workload key -> the LocalQueue its penalty is recorded against.
        self._penalty_owner: dict[str, str] = {}

    def seed(self, lq_key: str, persisted_status: Mapping[str, Any] | None, now: datetime) -> None:
        """Fold a LocalQueue's persisted consumed history into its entry, once (`initializeAfsIfNeeded`).
        A new entry's decay clock starts now, so its first sample folds no live usage."""
        entry = self.entries.get(lq_key)
        if entry is not None and entry.status_accounted:
            return
        seeded = parse_consumed((persisted_status or {}).get("consumedResources"))
        if entry is None:
            self.entries[lq_key] = Entry(seeded, now, status_accounted=True)
            return
        entry.consumed = merge(entry.consumed, seeded)
        entry.status_accounted = True

    def delete(self, lq_key: str) -> None:
        entry = self.entries.pop(lq_key, None)
        if entry is not None:
            for wl in entry.penalties:
                self._penalty_owner.pop(wl, None)

    def push_penalty(self, lq_key: str, wl_key: str, penalty: Mapping[str, int], now: datetime) -> None:
        """Record a Workload's entry penalty, replacing its earlier one (`PushPenalty`)."""
        self.sub_penalty(wl_key)
        entry = self.entries.get(lq_key)
        if entry is None:
            entry = self.entries[lq_key] = Entry({}, now)
        entry.penalties[wl_key] = dict(penalty)
        self._penalty_owner[wl_key] = lq_key

    def sub_penalty(self, wl_key: str) -> Nanos:
        """Drop a Workload's pending penalty, wherever it is recorded (`SubPenalty`); {} if none."""
        lq_key = self._penalty_owner.pop(wl_key, None)
        entry = self.entries.get(lq_key) if lq_key is not None else None
        if entry is None:
            return {}
        return entry.penalties.pop(wl_key, {})

    def penalty_owner(self, wl_key: str) -> str | None:
        """The LocalQueue a Workload's pending penalty is recorded against."""
        return self._penalty_owner.get(wl_key)

    def has_pending_penalty(self, lq_key: str) -> bool:
        entry = self.entries.get(lq_key)
        return entry is not None and bool(entry.pending_penalty())

    def is_due(self, lq_key: str, now: datetime, interval_s: float) -> bool:
        """Whether the LocalQueue should be sampled now: never sampled, penalties pending, or a full
        interval since the decay clock last moved (the LocalQueue reconcile's `RequeueAfter`)."""
        entry = self.entries.get(lq_key)
        if entry is None:
            return False
        if not entry.sampled or entry.pending_penalty():
            return True
        return (now - entry.last_update).total_seconds() >= interval_s

    def sample(self, lq_key: str, admitted: Mapping[str, int], now: datetime, settings: Settings) -> Entry:
        """One decay step towards the LocalQueue's admitted usage (`reconcileConsumedUsage`); the
        result is left in `status` to be written. Without a half-life the history is cleared."""
        entry = self.entries.get(lq_key)
        if entry is None:
            entry = self.entries[lq_key] = Entry({}, now)
        if settings.half_life_s == 0:
            entry.consumed = {}
            entry.last_update = now
        else:
            # A settlement may have stamped a later time: never decay backwards, never move it back.
            elapsed = max(0.0, (now - entry.last_update).total_seconds())
            entry.consumed = decayed(entry.consumed, admitted, elapsed, settings.half_life_s)
            entry.last_update = max(now, entry.last_update)
        entry.sampled = True
        entry.status = (dict(entry.consumed), now)
        return entry

    def settle(self, lq_key: str, wl_key: str, admitted: Mapping[str, int], now: datetime, settings: Settings) -> Nanos:
        """The Workload became Admitted: one decay step towards the admitted usage (which now includes
        it) plus exactly its recorded penalty, which stops being pending (`updateAfsConsumedUsage`).
        Returns the penalty folded in ({} when none was recorded)."""
        entry = self.entries.get(lq_key)
        if entry is None:
            entry = self.entries[lq_key] = Entry({}, now)
        elapsed = max(0.0, (now - entry.last_update).total_seconds())
        consumed = decayed(entry.consumed, admitted, elapsed, settings.half_life_s)
        penalty: Nanos = {}
        if self._penalty_owner.get(wl_key) == lq_key:
            penalty = self.sub_penalty(wl_key)
        entry.consumed = merge(consumed, penalty)
        entry.last_update = max(now, entry.last_update)
        return penalty

    def usage(self, lq_key: str, lq_weight: float, resource_weights: Mapping[str, float]) -> float:
        """The LocalQueue's ordering value: consumed history and pending penalties over its weight."""
        entry = self.entries.get(lq_key)
        if entry is None:
            return usage({}, {}, lq_weight, resource_weights)
        return usage(entry.consumed, entry.pending_penalty(), lq_weight, resource_weights)

    def keys(self) -> Iterable[str]:
        return sorted(self.entries)


class Tracker:
    """Admission fair sharing for the admission core: the ledger, kept by its events, and the usage
    values the queues and the preemptor order by. The core calls it only with the gate on and
    `admissionFairSharing` configured (`afs.Enabled`)."""

    def __init__(self, cache: Cache, settings: Settings, *, ignore_undeclared_resources: bool = False) -> None:
        self.cache = cache
        self.settings = settings
        self.ledger = UsageLedger()
        self._ignore_undeclared = ignore_undeclared_resources
        # Workload key -> whether its last event showed it Admitted (to see the transition).
        self._admitted: dict[WorkloadKey, bool] = {}

    # -- values --------------------------------------------------------------------------------
    def uses_afs(self, cluster_queue: str) -> bool:
        """`ClusterQueueUsesAdmissionFairSharing`."""
        node = self.cache.cluster_queues.get(cluster_queue)
        return node is not None and node.spec.admission_mode == model.AdmissionMode.USAGE_BASED

    def lq_weight(self, lq_key: str) -> float:
        """`ResolveLQWeight`: a missing LocalQueue weighs 1."""
        lq = self.cache.local_queues.get(lq_key)
        return 1.0 if lq is None else float(lq.fair_weight)

    def usage(self, lq_key: str) -> float:
        return self.ledger.usage(lq_key, self.lq_weight(lq_key), self.settings.resource_weights)

    def admitted_usage(self, lq_key: str) -> Nanos:
        """The LocalQueue's admitted usage by resource, flavors summed (`GetAdmittedUsage`)."""
        out: dict[str, int] = {}
        for wl in self.cache.reserving_in_local_queue(lq_key):
            if wl.is_admitted:
                for fr, v in wl.usage().items():
                    out[fr.resource] = out.get(fr.resource, 0) + v
        return to_nanos(out)

    def candidate_usages(self) -> Callable[[WorkloadInfo], float | None]:
        """Each LocalQueue's usage now, for one cycle's preemption (upstream computes it in the
        snapshot): None for a Workload outside an opted-in ClusterQueue."""
        usages: dict[str, float] = {}

        def of(wl: WorkloadInfo) -> float | None:
            if not self.uses_afs(wl.admission_cluster_queue):
                return None
            lq = f"{wl.namespace}/{wl.queue_name}"
            if lq not in usages:
                usages[lq] = self.usage(lq)
            return usages[lq]

        return of

    # -- events --------------------------------------------------------------------------------
    def on_local_queue(self, lq_key: str, obj: Mapping[str, Any], now: datetime) -> None:
        status = ((obj.get("status") or {}).get("fairSharing") or {}).get("admissionFairSharingStatus")
        self.ledger.seed(lq_key, status, now)

    def on_local_queue_deleted(self, lq_key: str) -> None:
        self.ledger.delete(lq_key)

    def on_workload(self, wl: WorkloadInfo, now: datetime) -> None:
        """After the cache took the event: settle on the transition into Admitted, drop a penalty
        that can no longer settle (`reconcileAfsPenaltiesOnUpdate`)."""
        lq_key = f"{wl.namespace}/{wl.queue_name}"
        admitted = wl.is_admitted and wl.active and not wl.is_finished
        was = self._admitted.get(wl.key)
        self._admitted[wl.key] = admitted
        if admitted and was is False and self.uses_afs(wl.admission_cluster_queue):
            self.ledger.settle(lq_key, wl.key, self.admitted_usage(lq_key), now, self.settings)
        owner = self.ledger.penalty_owner(wl.key)
        if owner is None:
            return
        # Moved to another LocalQueue, inactive without a reservation, or finished: it never settles.
        if owner != lq_key or (not wl.active and not wl.has_quota_reservation) or wl.is_finished:
            self.ledger.sub_penalty(wl.key)

    def on_workload_deleted(self, key: WorkloadKey) -> None:
        self._admitted.pop(key, None)
        self.ledger.sub_penalty(key)

    def assumed(self, wl: WorkloadInfo, cluster_queue: str, now: datetime) -> None:
        """The scheduler assumed `wl` (still its pending form): record its entry penalty
        (`shouldApplyEntryPenalty`, `updateEntryPenalty`). A Workload already holding a reservation
        (a second pass) was charged on its first."""
        if not self.uses_afs(cluster_queue) or wl.has_quota_reservation:
            return
        totals: dict[str, int] = {}
        for requests in wl.pod_set_requests():
            for r, v in requests.items():
                totals[r] = totals.get(r, 0) + v
        if self._ignore_undeclared:
            covered = self.cache.cluster_queues[cluster_queue].spec.resource_to_group
            totals = {r: v for r, v in totals.items() if r in covered}
        penalty = entry_penalty(to_nanos(totals), self.settings)
        self.ledger.push_penalty(f"{wl.namespace}/{wl.queue_name}", wl.key, penalty, now)

    def admission_failed(self, key: WorkloadKey) -> None:
        self.ledger.sub_penalty(key)

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, now: datetime) -> list[str]:
        """Sample every LocalQueue due (`LocalQueueReconciler.Reconcile` with AFS): only those not
        stopped whose ClusterQueue exists and is active, as upstream returns before. Returns their keys."""
        out = []
        for key in sorted(self.cache.local_queues):
            lq = self.cache.local_queues[key]
            if lq.stop_policy != model.StopPolicy.NONE or lq.cluster_queue not in self.cache.cluster_queues:
                continue
            if not self.cache.readiness(lq.cluster_queue).active:
                continue
            if self.ledger.is_due(key, now, self.settings.sampling_interval_s):
                self.ledger.sample(key, self.admitted_usage(key), now, self.settings)
                out.append(key)
        return out

    def status(self, lq_key: str) -> dict[str, Any] | None:
        """`status.fairSharing` of the LocalQueue as last sampled; None before its first sample."""
        entry = self.ledger.entries.get(lq_key)
        if entry is None or entry.status is None:
            return None
        consumed, at = entry.status
        return {
            "weightedShare": 0,
            "admissionFairSharingStatus": {
                "consumedResources": format_consumed(consumed),
                "lastUpdate": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }
