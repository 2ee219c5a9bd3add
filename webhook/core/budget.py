"""Budgets: spend per period from the usage ledgers, and whether a Workload's admission fits (ours).

Ours, not upstream's (upstream's issue #28). Pure arithmetic over a Budget's JSON
(`webhook.api.schema_budget`), the usage ledgers (`core.usage`) and the reservations the leader
knows; the `pykueue.io/budget` admission check controller (`webhook.worker.budget`) supplies them.

A budget has lines: one per resource of `limit.resourceHours` (in resource-seconds, the usage
ledgers' unit: milli-CPU-seconds, byte-seconds, unit-seconds), or one `cost` line (in the currency
of `prices`, per resource-hour of a core, a GiB or a unit, as `kubectl kueue usage --price`).

For a window [start, now) of the budget's period:

1. **spent** = the totals of the usage periods (ledgers) that start inside the window, up to the
   newest one's watermark, plus, from the reservations the leader knows, what they held in the
   parts of the window no such period covers: before the first (a window that does not start on a
   usage period boundary: a rolling window, `every: PT60S`) and after the newest watermark;
2. **committed** = what the Workloads that run (admitted, or their budget check Ready) will still
   use: their amounts times what is left of their runtime (`maximumExecutionTimeSeconds`, else the
   budget's `defaultRuntime`; nothing when neither is known), counted from their admission;
3. a Workload waiting on the check **needs** its `status.admission` amounts times its runtime
   (from now: what it held while waiting is spent already); it is Ready when, on every line,
   spent + committed + need <= limit.

Only rows the budget covers count (its ClusterQueue, cohort, LocalQueue or namespace); a cost budget
charges only the flavors and resources it has a price for.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, NamedTuple

from webhook.api import quantity
from webhook.core.usage import Holding, Ledger, UsageKey, format_time, unit_of

__all__ = [
    "COST",
    "Budget",
    "BudgetError",
    "Period",
    "Running",
    "Standing",
    "Target",
    "Verdict",
    "charge",
    "committed",
    "decide",
    "format_line",
    "parse_budget",
    "parse_duration",
    "standing",
    "to_status",
]

COST = "cost"
_DURATION = re.compile(r"^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
_WEEK_S = 7 * 86400
# 1970-01-01 was a Thursday: weeks start on Monday, 1970-01-05.
_FIRST_MONDAY = 4 * 86400


class BudgetError(ValueError):
    """The Budget's spec cannot be used; the message names every problem, with its field."""


def parse_duration(text: str) -> int:
    """ISO 8601 `PnWnDTnHnMnS` (no years or months: their length varies) in seconds, > 0."""
    match = _DURATION.match(text or "")
    if not match or text in ("P", "PT") or text.endswith("T"):
        raise ValueError(f"{text!r} is not a duration like PT60S, PT1H, P7D")
    weeks, days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = (((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if total <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return total


@dataclass(frozen=True, slots=True)
class Target:
    """What a budget covers: `kind` is clusterQueue, cohort, localQueue or namespace."""

    kind: str
    name: str
    namespace: str = ""

    def covers(self, key: UsageKey) -> bool:
        return self.covers_queue(
            cluster_queue=key.cluster_queue, cohort=key.cohort, namespace=key.namespace, local_queue=key.local_queue
        )

    def covers_queue(self, *, cluster_queue: str, cohort: str, namespace: str, local_queue: str) -> bool:
        if self.kind == "clusterQueue":
            return cluster_queue == self.name
        if self.kind == "cohort":
            return cohort == self.name
        if self.kind == "localQueue":
            return (namespace, local_queue) == (self.namespace, self.name)
        return namespace == self.name

    def describe(self) -> str:
        if self.kind == "localQueue":
            return f"LocalQueue {self.namespace}/{self.name}"
        return {"clusterQueue": "ClusterQueue", "cohort": "cohort", "namespace": "namespace"}[
            self.kind
        ] + f" {self.name}"


@dataclass(frozen=True, slots=True)
class Period:
    """`kind`: Monthly, Weekly, Every (fixed periods of `seconds` from the epoch) or Rolling."""

    kind: str
    seconds: int = 0
    text: str = ""

    def window(self, now: int) -> tuple[int, int | None]:
        """The window holding `now`: its start, and when it resets (None: a rolling window never does)."""
        if self.kind == "Rolling":
            return now - self.seconds, None
        if self.kind == "Every":
            start = now - now % self.seconds
            return start, start + self.seconds
        if self.kind == "Weekly":
            start = now - (now - _FIRST_MONDAY) % _WEEK_S
            return start, start + _WEEK_S
        day = datetime.fromtimestamp(now, UTC)
        start_dt = day.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        days = calendar.monthrange(day.year, day.month)[1]
        start = int(start_dt.timestamp())
        return start, start + days * 86400


@dataclass(frozen=True, slots=True)
class Budget:
    name: str
    target: Target
    period: Period
    limits: Mapping[str, Fraction]  # line (a resource, or COST) -> limit in line units
    prices: Mapping[tuple[str, str], Fraction] = field(default_factory=dict)  # (flavor or "*", resource) -> per hour
    default_runtime: int | None = None
    evict_running: bool = False

    @property
    def is_cost(self) -> bool:
        return COST in self.limits


def _decimal(text: object) -> Fraction:
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a decimal number") from None
    if not value.is_finite() or value < 0:
        raise ValueError(f"{text!r} is not a non-negative number")
    return Fraction(value)


def _target(spec: Mapping[str, Any], errors: list[str]) -> Target | None:
    given = [k for k in ("clusterQueue", "cohort", "localQueue", "namespace") if spec.get(k)]
    if len(given) != 1:
        errors.append("spec: exactly one of clusterQueue, cohort, localQueue, namespace is required")
        return None
    kind = given[0]
    if kind == "localQueue":
        lq = spec["localQueue"] or {}
        if not lq.get("namespace") or not lq.get("name"):
            errors.append("spec.localQueue: namespace and name are required")
            return None
        return Target(kind, str(lq["name"]), str(lq["namespace"]))
    return Target(kind, str(spec[kind]))


def _period(spec: Mapping[str, Any], errors: list[str]) -> Period | None:
    period = spec.get("period") or {}
    given = [k for k in ("calendar", "every", "rolling") if period.get(k)]
    if len(given) != 1:
        errors.append("spec.period: exactly one of calendar, every, rolling is required")
        return None
    kind = given[0]
    text = str(period[kind])
    if kind == "calendar":
        if text not in ("Monthly", "Weekly"):
            errors.append(f'spec.period.calendar: Unsupported value: "{text}": supported values: "Monthly", "Weekly"')
            return None
        return Period(text, text=text)
    try:
        return Period("Every" if kind == "every" else "Rolling", parse_duration(text), text)
    except ValueError as exc:
        errors.append(f"spec.period.{kind}: {exc}")
        return None


def _limits(spec: Mapping[str, Any], errors: list[str]) -> dict[str, Fraction]:
    limit = spec.get("limit") or {}
    hours, cost = limit.get("resourceHours"), limit.get("cost")
    if (hours is None) == (cost is None):
        errors.append("spec.limit: exactly one of resourceHours, cost is required")
        return {}
    if cost is not None:
        try:
            return {COST: _decimal(cost)}
        except ValueError as exc:
            errors.append(f"spec.limit.cost: {exc}")
            return {}
    out = {}
    for resource, text in sorted((hours or {}).items()):
        try:
            out[str(resource)] = Fraction(quantity.amount(str(resource), text) * 3600)
        except (ValueError, TypeError) as exc:
            errors.append(f"spec.limit.resourceHours[{resource}]: {exc}")
    if not out and not errors:
        errors.append("spec.limit.resourceHours: at least one resource is required")
    return out


def _prices(spec: Mapping[str, Any], errors: list[str]) -> dict[tuple[str, str], Fraction]:
    out = {}
    for i, entry in enumerate(spec.get("prices") or ()):
        resource = str(entry.get("resource") or "")
        if not resource:
            errors.append(f"spec.prices[{i}].resource: Required value")
            continue
        try:
            out[(str(entry.get("flavor") or "*"), resource)] = _decimal(entry.get("perHour"))
        except ValueError as exc:
            errors.append(f"spec.prices[{i}].perHour: {exc}")
    return out


def parse_budget(obj: Mapping[str, Any]) -> Budget:
    """A Budget's spec, checked whole; BudgetError lists every problem."""
    spec = obj.get("spec") or {}
    errors: list[str] = []
    target, period = _target(spec, errors), _period(spec, errors)
    limits, prices = _limits(spec, errors), _prices(spec, errors)
    if COST in limits and not prices:
        errors.append("spec.prices: a cost limit needs prices")
    runtime = None
    if spec.get("defaultRuntime"):
        try:
            runtime = parse_duration(str(spec["defaultRuntime"]))
        except ValueError as exc:
            errors.append(f"spec.defaultRuntime: {exc}")
    running = str(spec.get("runningWorkloads") or "Continue")
    if running not in ("Continue", "Evict"):
        errors.append(f'spec.runningWorkloads: Unsupported value: "{running}": supported values: "Continue", "Evict"')
    if errors or target is None or period is None:
        raise BudgetError("; ".join(errors))
    name = str((obj.get("metadata") or {}).get("name") or "")
    return Budget(name, target, period, limits, prices, runtime, running == "Evict")


# == charging =========================================================================================


def _price(budget: Budget, flavor: str, resource: str) -> Fraction | None:
    return budget.prices.get((flavor, resource), budget.prices.get(("*", resource)))


def charge(budget: Budget, amounts: Mapping[UsageKey, int], seconds: int | Fraction) -> dict[str, Fraction]:
    """What holding `amounts` (accounted units) for `seconds` costs on each line (rows it covers only)."""
    out: dict[str, Fraction] = {}
    if seconds <= 0:
        return out
    for key, value in amounts.items():
        if not value or not budget.target.covers(key):
            continue
        if budget.is_cost:
            price = _price(budget, key.flavor, key.resource)
            if price is None:
                continue
            _, per = unit_of(key.resource)
            out[COST] = out.get(COST, Fraction(0)) + Fraction(value * seconds, per * 3600) * price
        elif key.resource in budget.limits:
            out[key.resource] = out.get(key.resource, Fraction(0)) + value * Fraction(seconds)
    return out


def _add(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for line, value in more.items():
        into[line] = into.get(line, Fraction(0)) + value


def _overlap(held: Holding, lo: int, hi: int, now: int) -> int:
    end = now if held.end is None else min(held.end, now)
    return max(0, min(end, hi) - max(held.start, lo))


def spent(
    budget: Budget, ledgers: Sequence[Ledger], holdings: Iterable[Holding], start: int, now: int
) -> dict[str, Fraction]:
    """Step 1 of the module docstring: the window [start, now)'s spend on each line."""
    out: dict[str, Fraction] = {}
    covered = sorted((lg for lg in ledgers if lg.start >= start and lg.start < now), key=lambda lg: lg.start)
    for ledger in covered:
        _add(out, charge(budget, ledger.totals, 1))
    spans = [(start, covered[0].start), (max(lg.watermark for lg in covered), now)] if covered else [(start, now)]
    spans = [(lo, hi) for lo, hi in spans if hi > lo]
    for held in holdings:
        for lo, hi in spans:
            _add(out, charge(budget, held.amounts, _overlap(held, lo, hi, now)))
    return out


class Running(NamedTuple):
    """A reservation that runs: its runtime (None: unknown) counts from `since`, when it was admitted
    (Kueue's maximum execution time counts from admission, not from the quota reservation)."""

    held: Holding
    runtime: int | None
    since: int


def committed(budget: Budget, running: Iterable[Running], now: int) -> dict[str, Fraction]:
    """Step 2: what the running reservations will still use, up to the end of their runtime."""
    out: dict[str, Fraction] = {}
    for held, runtime, since in running:
        runtime = runtime if runtime is not None else budget.default_runtime
        if held.end is None and runtime is not None:
            _add(out, charge(budget, held.amounts, since + runtime - now))
    return out


@dataclass(frozen=True, slots=True)
class Standing:
    """A budget's state at `now`: its window, and per line what is spent and committed."""

    budget: Budget
    now: int
    start: int
    reset_at: int | None
    spent: Mapping[str, Fraction]
    committed: Mapping[str, Fraction]

    def remaining(self, line: str) -> Fraction:
        return self.budget.limits[line] - self.spent.get(line, Fraction(0)) - self.committed.get(line, Fraction(0))

    def used_percent(self) -> int:
        """The most spent + committed of any line, in whole percent (rounded down)."""
        best = 0
        for line, limit in self.budget.limits.items():
            used = self.spent.get(line, Fraction(0)) + self.committed.get(line, Fraction(0))
            pct = 100 if limit == 0 and used > 0 else (int(used * 100 / limit) if limit else 0)
            best = max(best, pct)
        return best

    def exhausted(self) -> bool:
        """Some line's spend alone reached its limit (the `Evict` policy's trigger)."""
        return any(self.spent.get(line, Fraction(0)) >= limit for line, limit in self.budget.limits.items())


def standing(
    budget: Budget,
    ledgers: Sequence[Ledger],
    holdings: Sequence[Holding],
    running: Iterable[Running],
    now: int,
) -> Standing:
    """`budget` at `now`: `holdings` are every reservation the leader knows, `running` those that run."""
    start, reset_at = budget.period.window(now)
    return Standing(
        budget, now, start, reset_at, spent(budget, ledgers, holdings, start, now), committed(budget, running, now)
    )


# == deciding =========================================================================================


def format_line(budget: Budget, line: str, value: Fraction) -> tuple[str, str]:
    """A line's value as text (two decimals for cost, up to four for resource-hours) and its unit."""
    if line == COST:
        return f"{float(value):.2f}", ""
    unit, per = unit_of(line)
    hours = value / (per * 3600)
    text = f"{float(hours):.4f}".rstrip("0").rstrip(".")
    return (text if text not in ("-0", "") else "0"), _HOURS[unit]


_HOURS = {"cores": "core-hours", "GiB": "GiB-hours", "units": "unit-hours"}


def _text(budget: Budget, line: str, value: Fraction) -> str:
    text, unit = format_line(budget, line, value)
    return f"{text} {unit} of {line}" if line != COST else f"{text} cost"


@dataclass(frozen=True, slots=True)
class Verdict:
    ready: bool
    message: str


def _when(st: Standing) -> str:
    if st.reset_at is None:
        return f"rolling window of {st.budget.period.text}: frees as older usage leaves it"
    return f"resets at {format_time(st.reset_at)}"


def decide(st: Standing, amounts: Mapping[UsageKey, int], runtime: int | None) -> Verdict:
    """Step 3: whether a Workload holding `amounts` for `runtime` seconds (None: its own limit is
    unknown; the budget's defaultRuntime then) fits what is left, with the message its check carries."""
    budget = st.budget
    head = f'budget "{budget.name}" ({budget.target.describe()})'
    runtime = runtime if runtime is not None else budget.default_runtime
    if runtime is None:
        return Verdict(
            False,
            f"{head}: the Workload has no maximumExecutionTimeSeconds and the budget no defaultRuntime: "
            "its cost cannot be known",
        )
    need = charge(budget, amounts, runtime)
    short = sorted(line for line, value in need.items() if value > st.remaining(line))
    if not short:
        return Verdict(True, f"{head}: fits, {_remaining_text(st, sorted(need) or sorted(budget.limits))} left")
    parts = [
        f"{_text(budget, line, max(Fraction(0), st.remaining(line)))} left of "
        f"{_text(budget, line, budget.limits[line])}, this Workload needs {_text(budget, line, need[line])}"
        for line in short
    ]
    return Verdict(False, f"{head}: {'; '.join(parts)}; {_when(st)}")


def _remaining_text(st: Standing, lines: Sequence[str]) -> str:
    return ", ".join(_text(st.budget, line, max(Fraction(0), st.remaining(line))) for line in lines)


def to_status(st: Standing, *, problem: str = "") -> dict[str, Any]:
    """The Budget's `status` (without conditions' times: the writer keeps them)."""
    budget = st.budget
    lines = []
    for line in sorted(budget.limits):
        limit, unit = format_line(budget, line, budget.limits[line])
        lines.append(
            {
                "resource": line,
                "unit": unit or "cost",
                "limit": limit,
                "spent": format_line(budget, line, st.spent.get(line, Fraction(0)))[0],
                "committed": format_line(budget, line, st.committed.get(line, Fraction(0)))[0],
                "remaining": format_line(budget, line, max(Fraction(0), st.remaining(line)))[0],
            }
        )
    status: dict[str, Any] = {"periodStart": format_time(st.start), "usedPercent": st.used_percent(), "lines": lines}
    if st.reset_at is not None:
        status["resetAt"] = format_time(st.reset_at)
    return status
