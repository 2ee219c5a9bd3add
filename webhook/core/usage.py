"""Usage accounting: resource-seconds of admitted quota, per period, that a new leader can resume.

Ours, not upstream's (kueue v0.19.2 only has Prometheus counters, which restart at zero with the
leader). What is counted is the quota a Workload holds, the `resourceUsage` of each podSetAssignment
of its `status.admission`, times the seconds it held it:

* from `QuotaReserved=True` (its `lastTransitionTime`): quota is taken from the ClusterQueue then,
  before admission checks turn it into `Admitted`, so the ClusterQueue's usage and ours agree;
* to the first of `Finished=True`, the reservation's release (`QuotaReserved=False`, an eviction),
  and the Workload's `deletionTimestamp`.

All times are whole seconds since the epoch, as conditions carry them, so a total equals what the
Workloads' admission intervals say, to the second.

A `Ledger` holds one period's totals up to its `watermark` and the holdings still open at the
watermark. `advance` adds what the given holdings held up to a new watermark: a pure function of
the ledger and the Workloads, so whoever advances a persisted ledger (a new leader included) adds
each second once. The open holdings kept with the ledger say what was counted up to the
watermark: a reservation whose start was stamped before a write but seen after it is counted from
its start, one whose end was is given back what was counted past its end, and a holding whose
Workload no longer shows it is closed (`resolve`): an eviction keeps its release time on the
object, but not the admitted amounts, which `status.admission` loses with it.

The ledger's wire form (`to_record`, `from_record`) is the `UsageRecord` of
`webhook.api.schema_usage`; `aggregate` sums records for `kubectl kueue usage`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from webhook.api import constants as c
from webhook.api import quantity
from webhook.api.schema_usage import API_VERSION, KIND, USAGE_LABEL
from webhook.core.workload import parse_time

__all__ = [
    "DIMENSIONS",
    "Holding",
    "Ledger",
    "Resolved",
    "UsageKey",
    "advance",
    "aggregate",
    "format_time",
    "from_record",
    "holding_of",
    "new_ledger",
    "period_bounds",
    "record_name",
    "released_at",
    "resolve",
    "to_record",
    "unit_of",
]

_GIB = 1024**3

# The row dimensions, in the order rows are sorted and the CLI names them.
DIMENSIONS = (
    "clusterQueue",
    "cohort",
    "localQueue",
    "namespace",
    "priorityClass",
    "user",
    "flavor",
    "resource",
)


@dataclass(frozen=True, slots=True, order=True)
class UsageKey:
    """One row of a ledger: who held quota of which flavor and resource (field order = `DIMENSIONS`)."""

    cluster_queue: str
    cohort: str
    local_queue: str
    namespace: str
    priority_class: str
    # The submitting user (our `pykueue.io/submitted-by` annotation); empty for a Workload without it.
    user: str
    flavor: str
    resource: str

    def to_api(self) -> dict[str, str]:
        return dict(zip(DIMENSIONS, self.values(), strict=True))

    def values(self) -> tuple[str, ...]:
        return (
            self.cluster_queue,
            self.cohort,
            self.local_queue,
            self.namespace,
            self.priority_class,
            self.user,
            self.flavor,
            self.resource,
        )

    @classmethod
    def from_api(cls, row: Mapping[str, Any]) -> UsageKey:
        return cls(*(str(row.get(d) or "") for d in DIMENSIONS))


@dataclass(frozen=True, slots=True)
class Holding:
    """Quota one Workload held from `start` to `end` (None: still holds it), per row."""

    uid: str
    workload: str  # namespace/name, for logs and the record
    start: int
    end: int | None
    amounts: Mapping[UsageKey, int]

    @property
    def ident(self) -> tuple[str, int]:
        """One reservation of one Workload: a re-admitted Workload holds anew from a later start."""
        return (self.uid, self.start)


@dataclass(frozen=True, slots=True)
class Ledger:
    """One period [start, end): resource-seconds per row up to `watermark`, and the holdings open there."""

    start: int
    end: int
    watermark: int
    totals: Mapping[UsageKey, int] = field(default_factory=dict)
    running: Mapping[str, Holding] = field(default_factory=dict)  # uid → its holding open at the watermark

    @property
    def complete(self) -> bool:
        return self.watermark >= self.end


def _seconds(text: object) -> int | None:
    dt = parse_time(text)
    return None if dt is None else int(dt.timestamp())


def format_time(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(wl: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for cond in (wl.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return cond  # type: ignore[no-any-return]
    return None


def _true_since(wl: Mapping[str, Any], ctype: str) -> int | None:
    cond = _condition(wl, ctype)
    return _seconds(cond.get("lastTransitionTime")) if cond is not None and cond.get("status") == "True" else None


def holding_of(wl: Mapping[str, Any], *, cohort: str = "") -> Holding | None:
    """The reservation a Workload shows (None without one): `status.admission`'s amounts from
    QuotaReserved's time to the first of Finished's time and the deletionTimestamp; the user is
    who submitted it (our annotation, `webhook.admission.submitter`)."""
    admission = (wl.get("status") or {}).get("admission") or {}
    start = _true_since(wl, c.WorkloadCondition.QUOTA_RESERVED)
    if start is None or not admission.get("clusterQueue"):
        return None
    meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
    ends = [e for e in (_true_since(wl, c.WorkloadCondition.FINISHED), _seconds(meta.get("deletionTimestamp"))) if e]
    namespace = str(meta.get("namespace") or "")
    user = str((meta.get("annotations") or {}).get(c.SUBMITTED_BY) or "")
    amounts: dict[UsageKey, int] = {}
    for psa in admission.get("podSetAssignments") or ():
        flavors = psa.get("flavors") or {}
        for resource, text in (psa.get("resourceUsage") or {}).items():
            value = quantity.amount(str(resource), text)
            if not value:
                continue
            key = UsageKey(
                cluster_queue=str(admission["clusterQueue"]),
                cohort=cohort,
                local_queue=str(spec.get("queueName") or ""),
                namespace=namespace,
                priority_class=str((spec.get("priorityClassRef") or {}).get("name") or ""),
                user=user,
                flavor=str(flavors.get(resource) or ""),
                resource=str(resource),
            )
            amounts[key] = amounts.get(key, 0) + value
    return Holding(
        uid=str(meta.get("uid") or ""),
        workload=f"{namespace}/{meta.get('name', '')}",
        start=start,
        end=max(start, min(ends)) if ends else None,
        amounts=amounts,
    )


def released_at(wl: Mapping[str, Any]) -> int | None:
    """When an evicted Workload gave its quota back (QuotaReserved=False), or None."""
    cond = _condition(wl, c.WorkloadCondition.QUOTA_RESERVED)
    if cond is None or cond.get("status") != "False":
        return None
    return _seconds(cond.get("lastTransitionTime"))


@dataclass(frozen=True, slots=True)
class Resolved:
    """`resolve`'s answer: every holding to count, and the open ones whose end nobody can know."""

    holdings: list[Holding]
    unknown_end: list[Holding]


def resolve(ledger: Ledger, observed: Iterable[Holding], released: Mapping[str, int | None]) -> Resolved:
    """The holdings to advance `ledger` with: those observed, plus those open at its watermark that no
    Workload shows any more. Such a holding ends at its Workload's release time (`released`, by uid,
    an eviction) when that is known; otherwise (the Workload was deleted, or evicted and admitted
    again, while no leader saw it) at the watermark: nothing is counted twice, and what cannot be
    known is not invented."""
    out = list(observed)
    seen = {h.ident for h in out}
    unknown: list[Holding] = []
    for uid, held in sorted(ledger.running.items()):
        if held.ident in seen:
            continue
        end = released.get(uid)
        if end is None:
            unknown.append(held)
            end = ledger.watermark
        out.append(replace(held, end=max(held.start, end)))
    return Resolved(out, unknown)


def _add(totals: dict[UsageKey, int], amounts: Mapping[UsageKey, int], seconds: int) -> None:
    for key, value in amounts.items():
        totals[key] = totals.get(key, 0) + value * seconds


def advance(ledger: Ledger, holdings: Iterable[Holding], until: int) -> Ledger:
    """`ledger` with what `holdings` held up to min(until, end) added (unchanged when that is not past
    the watermark). Each second is added once, whenever its Workload's events arrive:

    1. a holding open at the watermark (in `running`, same start) was counted up to it: it adds from
       there, and gives back what was counted past its end when that end turns out to lie before;
    2. one not in `running` that is open or ends after the watermark was never counted (its start was
       stamped before, seen after, the last write): it adds from its start (within this period);
    3. one not in `running` that ended by the watermark was counted, or has nothing in this span.
    """
    lo, hi = ledger.watermark, min(until, ledger.end)
    if hi <= lo:
        return ledger
    totals = dict(ledger.totals)
    running: dict[str, Holding] = {}
    for held in holdings:
        counted = ledger.running.get(held.uid)
        if counted is not None and counted.start == held.start:
            begin = lo
            if held.end is not None and held.end < lo:
                _add(totals, held.amounts, -(lo - max(held.end, held.start, ledger.start)))
        elif held.end is None or held.end > lo:
            begin = max(held.start, ledger.start)
        else:
            continue
        stop = hi if held.end is None else min(held.end, hi)
        if stop > begin:
            _add(totals, held.amounts, stop - begin)
        if held.start <= hi and (held.end is None or held.end > hi):
            running[held.uid] = held
    return replace(ledger, watermark=hi, totals=totals, running=running)


def period_bounds(t: int, period_s: int) -> tuple[int, int]:
    """The period holding second `t`: periods are `period_s` long, aligned to the epoch (UTC)."""
    start = t - t % period_s
    return start, start + period_s


def new_ledger(start: int, period_s: int, *, carried: Mapping[str, Holding] | None = None) -> Ledger:
    """An empty period from its start, with the holdings the previous one left open there."""
    return Ledger(start=start, end=start + period_s, watermark=start, running=dict(carried or {}))


def record_name(start: int) -> str:
    """The UsageRecord of the period starting at `start`: `usage-20261127-210000`."""
    return "usage-" + datetime.fromtimestamp(start, UTC).strftime("%Y%m%d-%H%M%S")


def to_record(ledger: Ledger) -> dict[str, Any]:
    """The UsageRecord of a ledger (no resourceVersion: the writer adds the one it read). An open
    reservation names its amounts by row (`status.usage` index): a record holds one entry per
    Workload admitted at its watermark, so each must stay small."""
    keys = sorted(set(ledger.totals) | {key for held in ledger.running.values() for key in held.amounts})
    row = {key: i for i, key in enumerate(keys)}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": record_name(ledger.start), "labels": {USAGE_LABEL: "true"}},
        "spec": {"periodStart": format_time(ledger.start), "periodEnd": format_time(ledger.end)},
        "status": {
            "watermark": format_time(ledger.watermark),
            "usage": [
                {**key.to_api(), "resourceSeconds": quantity.format_amount(key.resource, ledger.totals.get(key, 0))}
                for key in keys
            ],
            "running": [
                {
                    "uid": held.uid,
                    "workload": held.workload,
                    "since": format_time(held.start),
                    "amounts": {
                        str(row[k]): quantity.format_amount(k.resource, v) for k, v in sorted(held.amounts.items())
                    },
                }
                for _, held in sorted(ledger.running.items())
            ],
        },
    }


def from_record(record: Mapping[str, Any]) -> Ledger:
    """A ledger from its UsageRecord (`to_record`'s inverse)."""
    spec, status = record.get("spec") or {}, record.get("status") or {}
    start, end = _seconds(spec.get("periodStart")), _seconds(spec.get("periodEnd"))
    if start is None or end is None or end <= start:
        raise ValueError(f"UsageRecord {(record.get('metadata') or {}).get('name')}: bad period")
    watermark = _seconds(status.get("watermark"))
    keys = [UsageKey.from_api(row) for row in status.get("usage") or ()]
    totals: dict[UsageKey, int] = {}
    for key, row in zip(keys, status.get("usage") or (), strict=True):
        if value := quantity.amount(key.resource, str(row.get("resourceSeconds") or "0")):
            totals[key] = totals.get(key, 0) + value
    running = {}
    for entry in status.get("running") or ():
        since = _seconds(entry.get("since"))
        amounts: dict[UsageKey, int] = {}
        for index, text in (entry.get("amounts") or {}).items():
            if not str(index).isdigit() or int(index) >= len(keys):
                raise ValueError(f"UsageRecord {(record.get('metadata') or {}).get('name')}: no usage row {index}")
            key = keys[int(index)]
            amounts[key] = quantity.amount(key.resource, str(text))
        if since is not None:
            uid = str(entry.get("uid") or "")
            running[uid] = Holding(uid, str(entry.get("workload") or ""), since, None, amounts)
    return Ledger(
        start=start,
        end=end,
        watermark=min(end, max(start, watermark if watermark is not None else start)),
        totals=totals,
        running=running,
    )


def aggregate(
    ledgers: Iterable[Ledger], by: Sequence[str], *, since: int | None = None, until: int | None = None
) -> dict[tuple[str, ...], dict[tuple[str, str], int]]:
    """Resource-seconds per group (the values of the `by` dimensions) and (flavor, resource), over
    the periods lying inside [since, until) (a period counts whole: rows are not split in time)."""
    index = [DIMENSIONS.index(d) for d in by]
    out: dict[tuple[str, ...], dict[tuple[str, str], int]] = {}
    for ledger in ledgers:
        if (since is not None and ledger.start < since) or (until is not None and ledger.end > until):
            continue
        for key, value in ledger.totals.items():
            values = key.values()
            group = out.setdefault(tuple(values[i] for i in index), {})
            fr = (key.flavor, key.resource)
            group[fr] = group.get(fr, 0) + value
    return out


def unit_of(resource: str) -> tuple[str, int]:
    """What an hour of `resource` is shown and priced in (cores, GiB or units), and how many accounted
    amounts make one (`kubectl kueue usage`, the dashboard, budgets)."""
    if quantity.is_milli_resource(resource):
        return "cores", 1000
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return "GiB", _GIB
    return "units", 1
