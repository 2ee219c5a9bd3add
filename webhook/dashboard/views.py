"""What each page shows, computed from the watch caches without I/O: plain frozen rows for the templates.

Usage comes from each ClusterQueue's `status.flavorsReservation` (what the worker writes, so it
matches `kubectl get clusterqueue`); quotas from its spec, parsed by the core's `parse_cluster_queue`.

A pending Workload's position is computed here with the core's own heap order
(`ordering.queue_key`, mirroring upstream's `queueOrderingFunc`) rather than read from a
visibility API: the caches already hold every Workload, so ordering them costs no API call,
works whether or not the visibility API is installed, and cannot disagree with the core about
the order. Like upstream's visibility API it does not model the worker's in-memory state
(a workload in backoff, or parked as inadmissible, keeps its place in the order).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from webhook.api import multikueue, quantity
from webhook.core import model, ordering, topology
from webhook.core.wait_estimate import Estimate
from webhook.core.workload import WorkloadInfo, WorkloadKey, describe_flavors
from webhook.dashboard.store import Kind, Store, WorkloadEntry

__all__ = [
    "Bar",
    "ClusterQueueRow",
    "CohortNode",
    "FlavorRow",
    "LocalQueueRow",
    "Overview",
    "PlacementRow",
    "State",
    "WorkloadRow",
    "WorkloadsPage",
    "active_condition",
    "cohort_tree",
    "local_queues",
    "overview",
    "placement",
    "positions",
    "queue_map",
    "state_of",
    "workloads_page",
]

#: At most this many Workload rows on one page; the rest are counted, not listed.
PAGE_ROWS = 500


class State(StrEnum):
    PENDING = "Pending"
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    FINISHED = "Finished"
    INACTIVE = "Inactive"


def state_of(wl: WorkloadInfo) -> State:
    """One state per Workload, the furthest it has got: Finished > Admitted > QuotaReserved > Inactive > Pending."""
    if wl.is_finished:
        return State.FINISHED
    if wl.is_admitted:
        return State.ADMITTED
    if wl.has_quota_reservation:
        return State.QUOTA_RESERVED
    if not wl.active:
        return State.INACTIVE
    return State.PENDING


@dataclass(frozen=True, slots=True)
class Bar:
    """One flavor/resource of a ClusterQueue: usage against nominal quota and borrowing limit.

    `scale` is the bar's full width: nominal plus the borrowing limit, or plus what is borrowed
    when the limit is unset (borrowing is then bounded only by the cohort).
    """

    flavor: str
    resource: str
    used: int
    nominal: int
    borrowing_limit: int | None
    borrowed: int
    lent: int

    @property
    def scale(self) -> int:
        extra = self.borrowing_limit if self.borrowing_limit is not None else self.borrowed
        return max(self.nominal + extra, self.used, 1)

    def percent(self, value: int) -> float:
        return round(100 * min(value, self.scale) / self.scale, 1)

    def text(self, value: int | None) -> str:
        return "unlimited" if value is None else quantity.format_amount(self.resource, value)


@dataclass(frozen=True, slots=True)
class ClusterQueueRow:
    name: str
    cohort: str
    active: bool
    active_reason: str
    pending: int
    reserving: int
    admitted: int
    bars: tuple[Bar, ...]


@dataclass(frozen=True, slots=True)
class CohortNode:
    """A cohort and what hangs under it: child cohorts and ClusterQueues, both sorted by name."""

    name: str
    cohorts: tuple[CohortNode, ...]
    cluster_queues: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FlavorRow:
    name: str
    node_labels: tuple[tuple[str, str], ...]
    taints: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Overview:
    cluster_queues: tuple[ClusterQueueRow, ...]
    cohorts: tuple[CohortNode, ...]
    flavors: tuple[FlavorRow, ...]


@dataclass(frozen=True, slots=True)
class LocalQueueRow:
    namespace: str
    name: str
    cluster_queue: str
    pending: int
    admitted: int


@dataclass(frozen=True, slots=True)
class WorkloadRow:
    namespace: str
    name: str
    queue: str
    cluster_queue: str
    state: State
    priority: int
    created: str
    position: int | None  # 1-based, in its ClusterQueue; None unless pending
    queue_position: int | None  # 1-based, in its LocalQueue
    # Pending only: "HH:MM:SS (in N s)" or "unknown", and the estimated time or why it is unknown.
    estimate: str = ""
    estimate_detail: str = ""


@dataclass(frozen=True, slots=True)
class WorkloadsPage:
    rows: tuple[WorkloadRow, ...]
    total: int
    namespaces: tuple[str, ...]
    queues: tuple[str, ...]
    local_queues: tuple[LocalQueueRow, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class PlacementRow:
    """Where one pod set of an admitted Workload runs: its flavors and, under topology-aware admission,
    its domains (`webhook.core.topology.describe_assignment`)."""

    pod_set: str
    count: int
    flavors: str
    topology: str


def placement(raw: Mapping[str, Any]) -> tuple[PlacementRow, ...]:
    """The pod sets of `status.admission`, or none while the Workload holds no quota."""
    admission = (raw.get("status") or {}).get("admission") or {}
    return tuple(
        PlacementRow(
            str(psa.get("name", "")),
            int(psa.get("count") or 0),
            describe_flavors(psa),
            _topology_text(psa),
        )
        for psa in admission.get("podSetAssignments") or ()
    )


def _topology_text(psa: Mapping[str, Any]) -> str:
    """Where the pod set's pods go, or that the placement is left to later (`delayedTopologyRequest`)."""
    if psa.get("topologyAssignment"):
        return topology.describe_assignment(psa["topologyAssignment"])
    return multikueue.describe_delayed_topology(psa.get("delayedTopologyRequest"))


def multikueue_placement(raw: Mapping[str, Any]) -> str:
    """Which worker cluster runs a MultiKueue Workload, or which ones it waits on ("" when neither)."""
    return multikueue.describe_placement(raw.get("status") or {})


def _amount(resource: str, text: object) -> int:
    return quantity.amount(resource, text) if isinstance(text, str | int) else 0


def _usage(status: Mapping[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
    """(flavor, resource) → (total, borrowed) from `status.flavorsReservation`."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for fl in status.get("flavorsReservation") or ():
        for r in fl.get("resources") or ():
            res = str(r.get("name", ""))
            out[(str(fl.get("name", "")), res)] = (_amount(res, r.get("total", 0)), _amount(res, r.get("borrowed", 0)))
    return out


def _lent(
    specs: Mapping[str, model.ClusterQueueSpec], usage: Mapping[str, Mapping[tuple[str, str], tuple[int, int]]]
) -> dict[tuple[str, str, str], int]:
    """(cq, flavor, resource) → an estimate of how much of its nominal quota others in its cohort use.

    Kueue does not record who lends to whom, so what a cohort borrows is spread over its members'
    idle lendable quota (`min(nominal - used, lendingLimit)`) in proportion to it.
    """
    by_cohort: dict[str, list[str]] = defaultdict(list)
    for name, spec in specs.items():
        if spec.cohort:
            by_cohort[spec.cohort].append(name)
    out: dict[tuple[str, str, str], int] = {}
    for members in by_cohort.values():
        borrowed: dict[tuple[str, str], int] = defaultdict(int)
        lendable: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        for cq in members:
            for fr, quota in specs[cq].quotas.items():
                total, b = usage[cq].get((fr.flavor, fr.resource), (0, 0))
                borrowed[(fr.flavor, fr.resource)] += b
                idle = max(0, quota.nominal - total)
                if quota.lending_limit is not None:
                    idle = min(idle, quota.lending_limit)
                lendable[(fr.flavor, fr.resource)][cq] = idle
        for fr_key, amount in borrowed.items():
            pool = sum(lendable[fr_key].values())
            if amount <= 0 or pool <= 0:
                continue
            for cq, idle in lendable[fr_key].items():
                out[(cq, *fr_key)] = min(idle, amount * idle // pool)
    return out


def active_condition(status: Mapping[str, Any]) -> tuple[bool, str]:
    for c in status.get("conditions") or ():
        if c.get("type") == "Active":
            return c.get("status") == "True", str(c.get("reason", ""))
    return False, "Unknown"


def overview(store: Store, *, cluster_queues: bool, flavors: bool, cohorts: bool) -> Overview:
    """The overview, leaving out what the caller may not list."""
    raw = store.objects(Kind.CLUSTER_QUEUES) if cluster_queues else {}
    specs = {name: model.parse_cluster_queue(obj) for name, obj in raw.items()}
    usage = {name: _usage(obj.get("status") or {}) for name, obj in raw.items()}
    lent = _lent(specs, usage)
    rows = []
    for name in sorted(specs):
        spec, status = specs[name], raw[name].get("status") or {}
        bars = []
        for fr, quota in spec.quotas.items():
            total, borrowed = usage[name].get((fr.flavor, fr.resource), (0, 0))
            bars.append(
                Bar(
                    fr.flavor,
                    fr.resource,
                    total,
                    quota.nominal,
                    quota.borrowing_limit,
                    borrowed,
                    lent.get((name, fr.flavor, fr.resource), 0),
                )
            )
        active, reason = active_condition(status)
        rows.append(
            ClusterQueueRow(
                name,
                spec.cohort,
                active,
                reason,
                int(status.get("pendingWorkloads") or 0),
                int(status.get("reservingWorkloads") or 0),
                int(status.get("admittedWorkloads") or 0),
                tuple(bars),
            )
        )
    tree = cohort_tree(specs.values(), store.objects(Kind.COHORTS).values()) if cohorts and cluster_queues else ()
    flavor_rows = (
        tuple(_flavor(obj) for _, obj in sorted(store.objects(Kind.RESOURCE_FLAVORS).items())) if flavors else ()
    )
    return Overview(tuple(rows), tree, flavor_rows)


def _flavor(obj: Mapping[str, Any]) -> FlavorRow:
    spec = obj.get("spec") or {}
    taints = tuple(f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in spec.get("nodeTaints") or ())
    return FlavorRow(str(obj["metadata"]["name"]), tuple(sorted((spec.get("nodeLabels") or {}).items())), taints)


def cohort_tree(
    specs: Iterable[model.ClusterQueueSpec], cohort_objects: Iterable[Mapping[str, Any]]
) -> tuple[CohortNode, ...]:
    """Root cohorts with their subtrees. A cohort exists when a ClusterQueue or a Cohort names it,
    or a Cohort object defines it; a parent cycle (which the API allows) is cut at the first repeat."""
    parents: dict[str, str] = {}
    for obj in cohort_objects:
        c = model.parse_cohort(obj)
        parents[c.name] = c.parent
    queues: dict[str, list[str]] = defaultdict(list)
    for spec in specs:
        if spec.cohort:
            queues[spec.cohort].append(spec.name)
            parents.setdefault(spec.cohort, "")
    for parent in list(parents.values()):
        if parent:
            parents.setdefault(parent, "")
    children: dict[str, list[str]] = defaultdict(list)
    for name, parent in parents.items():
        children[parent].append(name)

    def build(name: str, seen: frozenset[str]) -> CohortNode:
        kids = tuple(build(c, seen | {c}) for c in sorted(children.get(name, ())) if c not in seen)
        return CohortNode(name, kids, tuple(sorted(queues.get(name, ()))))

    return tuple(build(name, frozenset({name})) for name in sorted(children.get("", ())))


def queue_map(store: Store) -> dict[str, str]:
    """LocalQueue `namespace/name` → its ClusterQueue."""
    return {
        key: str((obj.get("spec") or {}).get("clusterQueue", ""))
        for key, obj in store.objects(Kind.LOCAL_QUEUES).items()
    }


def positions(entries: Iterable[WorkloadEntry], queue_map: Mapping[str, str]) -> dict[str, tuple[int, int]]:
    """Pending Workload key → (position in its ClusterQueue, position in its LocalQueue), both 1-based,
    in the core's heap order (`ordering.queue_key`)."""
    by_cq: dict[str, list[WorkloadInfo]] = defaultdict(list)
    for e in entries:
        wl = e.info
        cq = queue_map.get(f"{wl.namespace}/{wl.queue_name}")
        if cq and state_of(wl) is State.PENDING:
            by_cq[cq].append(wl)
    out: dict[str, tuple[int, int]] = {}
    for pending in by_cq.values():
        pending.sort(key=ordering.queue_key)
        per_lq: dict[tuple[str, str], int] = defaultdict(int)
        for i, wl in enumerate(pending, 1):
            per_lq[(wl.namespace, wl.queue_name)] += 1
            out[wl.key] = (i, per_lq[(wl.namespace, wl.queue_name)])
    return out


def local_queues(store: Store, namespaces: Collection[str] | None) -> tuple[LocalQueueRow, ...]:
    """LocalQueues in `namespaces` (None: all), with pending and admitted counts from the Workloads."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in store.workloads().values():
        state = state_of(e.info)
        if state is State.PENDING:
            counts[f"{e.info.namespace}/{e.info.queue_name}"][0] += 1
        elif state is State.ADMITTED:
            counts[f"{e.info.namespace}/{e.info.queue_name}"][1] += 1
    rows = []
    for key, obj in sorted(store.objects(Kind.LOCAL_QUEUES).items()):
        meta = obj["metadata"]
        if namespaces is not None and meta.get("namespace") not in namespaces:
            continue
        pending, admitted = counts[key]
        rows.append(
            LocalQueueRow(
                str(meta.get("namespace")),
                str(meta["name"]),
                str((obj.get("spec") or {}).get("clusterQueue", "")),
                pending,
                admitted,
            )
        )
    return tuple(rows)


def _asked(allowed: Collection[str] | None, namespace: str) -> Collection[str] | None:
    """The namespaces both allowed (None: all) and asked for ("": no filter). Asking never widens
    what is allowed: a namespace outside `allowed` gives the empty set, not "no filter"."""
    if not namespace:
        return allowed
    return (namespace,) if allowed is None or namespace in allowed else ()


def workloads_page(
    store: Store,
    namespaces: Collection[str] | None,
    *,
    local_queue_namespaces: Collection[str] | None,
    namespace: str = "",
    queue: str = "",
    state: str = "",
    estimates: Mapping[WorkloadKey, Estimate] | None = None,
    now: datetime | None = None,
) -> WorkloadsPage:
    """Workloads in `namespaces` and LocalQueues in `local_queue_namespaces` (each None: all, as the
    caller's `list` grant on that kind says) matching the filters, pending Workloads first in queue order.

    The positions are computed over every pending Workload, those the caller may not see included,
    since they are ahead in the queue all the same; only their count shows, never their names.
    """
    entries = store.workloads()
    queues = queue_map(store)
    pos = positions(entries.values(), queues)
    visible = [e.info for e in entries.values() if namespaces is None or e.info.namespace in namespaces]
    all_namespaces = tuple(sorted({wl.namespace for wl in visible}))
    all_queues = tuple(sorted({wl.queue_name for wl in visible if wl.queue_name}))
    chosen = [
        wl
        for wl in visible
        if (not namespace or wl.namespace == namespace)
        and (not queue or wl.queue_name == queue)
        and (not state or state_of(wl) == state)
    ]
    chosen.sort(key=lambda wl: (wl.key not in pos, pos.get(wl.key, (0, 0)), wl.namespace, wl.name))
    rows = []
    for wl in chosen[:PAGE_ROWS]:
        p = pos.get(wl.key)
        estimate, detail = _estimate_text((estimates or {}).get(wl.key), now) if p else ("", "")
        rows.append(
            WorkloadRow(
                wl.namespace,
                wl.name,
                wl.queue_name,
                wl.admission_cluster_queue or queues.get(f"{wl.namespace}/{wl.queue_name}", ""),
                state_of(wl),
                wl.priority,
                wl.creation.isoformat(timespec="seconds"),
                p[0] if p else None,
                p[1] if p else None,
                estimate,
                detail,
            )
        )
    lq_rows = local_queues(store, _asked(local_queue_namespaces, namespace))
    return WorkloadsPage(tuple(rows), len(chosen), all_namespaces, all_queues, lq_rows)


def _estimate_text(e: Estimate | None, now: datetime | None) -> tuple[str, str]:
    """A pending Workload's estimate as the table shows it, and its detail (the time, or why unknown)."""
    if e is None or now is None:
        return "", "not estimated yet"
    if e.at is None:
        return "unknown", e.unknown
    wait = max(0, int((e.at - now).total_seconds()))
    return f"{e.at:%H:%M:%S} (in {wait} s)", e.at.isoformat(timespec="seconds")
