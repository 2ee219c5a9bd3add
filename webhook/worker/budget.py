"""The `pykueue.io/budget` admission check controller and the Budgets' status (ours, not upstream's).

A ClusterQueue lists an AdmissionCheck whose `spec.controllerName` is `pykueue.io/budget`; a
Workload of it that holds quota keeps that check Pending while its admission would overrun a
Budget (`pykueue.io/v1alpha1`, `webhook.api.schema_budget`) covering it, with a message saying
what is left and when it resets, and gets Ready otherwise. The arithmetic is `webhook.core.budget`;
spend comes from the usage accountant (`webhook.worker.usage`: the durable UsageRecords as this
leader holds them, and every reservation it knows).

One thread evaluates everything every `PASS_S` seconds, and soon after a Workload event: a period
that resets is seen within `PASS_S`. In each pass:

1. every Budget's standing is computed; its status is written when it changed (numbers that only
   drift, at most every `STATUS_S`), and the `pykueue_budget_*` gauges read it;
2. the Workloads waiting on a budget check (quota reserved, not admitted), oldest reservation first
   (then namespace/name), are decided against every Budget covering them; a Workload made Ready
   counts as committed for the ones after it in the same pass, so two cannot share what one fits;
3. with `runningWorkloads: Evict`, once a Budget's spend alone reaches its limit, its admitted
   Workloads' checks go to Retry: Kueue evicts them (check-based eviction) and they wait anew;
4. every AdmissionCheck of this controller is marked Active (it needs no parameters).

A Pending message carries amounts that drift as reservations run: it is rewritten at most every
`MESSAGE_S` unless the state changes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from webhook import kube as k
from webhook import metrics
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api import schema_budget
from webhook.core import budget as b
from webhook.core import usage
from webhook.core.workload import parse_time
from webhook.worker import admission_checks, workload_writes
from webhook.worker.admissionchecks.provisioning import set_check_state
from webhook.worker.status import set_condition, update_status
from webhook.worker.store import Store
from webhook.worker.usage import UsageAccountant

__all__ = ["BUDGETS", "MESSAGE_S", "PASS_S", "STATUS_S", "BudgetController"]

log = logging.getLogger(__name__)

BUDGETS = "budgets"
PASS_S = 2.0
STATUS_S = 10.0
MESSAGE_S = 30.0
_EXHAUSTED = "budget exhausted"


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A Workload waiting on a budget check: what it holds, and for how long it may run."""

    key: str
    check: str
    state: Mapping[str, Any]
    held: usage.Holding
    runtime: int | None


def _runtime(wl: Mapping[str, Any]) -> int | None:
    value = (wl.get("spec") or {}).get("maximumExecutionTimeSeconds")
    return int(value) if value is not None else None


def _admitted_at(wl: Mapping[str, Any], now: int) -> int:
    """When the Workload was admitted (its runtime counts from then); `now` for one about to be."""
    cond = o.find_condition(wl, c.WorkloadCondition.ADMITTED) or {}
    when = parse_time(cond.get("lastTransitionTime")) if cond.get("status") == "True" else None
    return now if when is None else int(when.timestamp())


def _true(wl: Mapping[str, Any], ctype: str) -> bool:
    return (o.find_condition(wl, ctype) or {}).get("status") == "True"


class BudgetController:
    """Decides the budget checks and keeps the Budgets' status (a `Reconciler`)."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        accountant: UsageAccountant,
        *,
        stop: threading.Event,
        pass_s: float = PASS_S,
        clock: Callable[[], float] = time.time,
        served: Callable[[], bool] = lambda: True,
    ) -> None:
        self.kube = kube
        self.store = store
        self.accountant = accountant
        self.stop = stop
        self.pass_s = pass_s
        self.clock = clock
        self.served = served  # the Budget API is listed from the API server (not unserved, counted as empty)
        self._unserved = False  # said once in the log while the Budget API is not served
        self._wake = threading.Event()
        self._status_at: dict[str, float] = {}  # Budget → when its status was last written
        self._message_at: dict[str, float] = {}  # Workload key → when its check message was last written
        self._lines: list[tuple[tuple[str, str, str], Fraction, Fraction, Fraction, Fraction]] = []

    # == events ===================================================================================
    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        if kind in ("workloads", BUDGETS, "admissionchecks"):
            self._wake.set()

    def start(self) -> None:
        metrics.BUDGETS.use(lambda: list(self._lines))
        threading.Thread(target=self._run, name="budget", daemon=True).start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self._wake.wait(self.pass_s)
            self._wake.clear()
            try:
                self.run_pass()
            except k.NotLeader:
                return
            except k.KubeError as exc:
                log.warning("budget pass failed", extra={"kind": "Budget", "error": str(exc)})
            except Exception:  # a bug must not silently stop every budget check for good
                log.exception("budget pass failed", extra={"kind": "Budget"})
            self.stop.wait(0.2)  # a burst of events makes one pass, not one each

    # == one pass =================================================================================
    def _checks(self) -> set[str]:
        return {
            o.name(ac)
            for ac in self.store.list("admissionchecks")
            if (ac.get("spec") or {}).get("controllerName") == schema_budget.CONTROLLER_NAME
        }

    def run_pass(self) -> None:
        now = int(self.clock())
        checks = self._checks()
        if not self.served():
            # Until Budgets are listed, "no Budget covers this Workload" cannot be told from "none is
            # known yet" (an install whose CRD is not established when the leader starts): the checks
            # stay inactive, so their ClusterQueues admit nothing, as with any check whose controller
            # is not running.
            if checks and not self._unserved:
                log.warning("Budget API not served: budget checks wait for it", extra={"kind": "Budget"})
            self._unserved = bool(checks)
            self._lines = []
            return
        self._unserved = False
        for name in sorted(checks):
            self._activate(name)
        budgets = self._budgets()
        if not checks and not budgets:
            self._lines = []
            return  # idle: nothing to decide or report
        ledgers, holdings = self.accountant.view()
        running, waiting, admitted = self._workloads(holdings, checks, now)
        standings = {name: b.standing(bud, ledgers, holdings, running, now) for name, bud in budgets.items()}
        for w in waiting:
            covering = [name for name, bud in sorted(budgets.items()) if _covers(bud, w.held)]
            verdicts = [b.decide(standings[name], w.held.amounts, w.runtime) for name in covering]
            blocked = [v for v in verdicts if not v.ready]
            if blocked:
                self._set_check(w.key, w.check, c.CHECK_STATE_PENDING, "; ".join(v.message for v in blocked), now)
                continue
            message = "; ".join(v.message for v in verdicts) or "no budget covers this Workload"
            if self._set_check(w.key, w.check, c.CHECK_STATE_READY, message, now):
                for name in covering:  # what it will use is no longer left for the next ones
                    st = standings[name]
                    extra = b.committed(st.budget, [b.Running(w.held, w.runtime, now)], now)
                    merged = dict(st.committed)
                    for line, value in extra.items():
                        merged[line] = merged.get(line, Fraction(0)) + value
                    standings[name] = replace(st, committed=merged)
        for name, st in sorted(standings.items()):
            if st.budget.evict_running and st.exhausted():
                for key, check, held in admitted:
                    if _covers(st.budget, held):
                        self._set_check(key, check, c.CHECK_STATE_RETRY, f'budget "{name}": {_EXHAUSTED}', now)
            self._write_status(name, b.to_status(st), now)
        self._lines = [
            ((name, line, b.format_line(st.budget, line, Fraction(0))[1] or "cost"), *_values(st, line))
            for name, st in sorted(standings.items())
            for line in sorted(st.budget.limits)
        ]

    def _budgets(self) -> dict[str, b.Budget]:
        out = {}
        for obj in self.store.list(BUDGETS):
            name = o.name(obj)
            try:
                out[name] = b.parse_budget(obj)
            except b.BudgetError as exc:
                self._write_invalid(name, str(exc))
        return out

    def _workloads(
        self, holdings: Sequence[usage.Holding], checks: set[str], now: int
    ) -> tuple[list[b.Running], list[_Waiting], list[tuple[str, str, usage.Holding]]]:
        """The open reservations that run (admitted, or their budget check Ready), with their
        runtimes; the Workloads waiting on a budget check, in decision order; and the admitted
        Workloads with a budget check Ready (those the `Evict` policy would evict)."""
        running: list[b.Running] = []
        waiting: list[_Waiting] = []
        admitted: list[tuple[str, str, usage.Holding]] = []
        for held in holdings:
            if held.end is not None:
                continue
            wl = self.store.get("workloads", held.workload)
            if wl is None or o.uid(wl) != held.uid:
                continue
            state = next(
                (s for s in (wl.get("status") or {}).get("admissionChecks") or () if s.get("name") in checks), None
            )
            ready = state is not None and state.get("state") == c.CHECK_STATE_READY
            if _true(wl, c.WorkloadCondition.ADMITTED) or ready:
                running.append(b.Running(held, _runtime(wl), _admitted_at(wl, now)))
                if state is not None and ready and _true(wl, c.WorkloadCondition.ADMITTED):
                    admitted.append((held.workload, str(state["name"]), held))
            elif state is not None and state.get("state") == c.CHECK_STATE_PENDING:
                waiting.append(_Waiting(held.workload, str(state["name"]), state, held, _runtime(wl)))
        waiting.sort(key=lambda w: (w.held.start, w.key))
        return running, waiting, admitted

    # == writes ===================================================================================
    def _set_check(self, key: str, check: str, state: str, message: str, now: int) -> bool:
        """Set the Workload's check; True when it has that state now (written, or already so)."""
        wl = self.store.get("workloads", key)
        if wl is None:
            return False
        current = next(
            (s for s in (wl.get("status") or {}).get("admissionChecks") or () if s.get("name") == check), None
        )
        if current is None:
            return False
        same_state = current.get("state") == state
        if same_state and (current.get("message") == message or now - self._message_at.get(key, 0) < MESSAGE_S):
            return True
        stamp = datetime.fromtimestamp(now, UTC)

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            set_check_state(
                status.setdefault("admissionChecks", []), {"name": check, "state": state, "message": message}, stamp
            )

        try:
            written = update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)
        except k.NotFound:
            return False
        self._message_at[key] = now
        if not same_state:
            log.info(
                "budget check", extra={"object": key, "kind": "Workload", "decision": state, "check_message": message}
            )
        return written is not None

    def _activate(self, name: str) -> None:
        ac = self.store.get("admissionchecks", name)
        if ac is None or admission_checks.is_active(ac):
            return
        cond = admission_checks.active_condition(ac)

        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            set_condition(status, cond, datetime.now(UTC))

        update_status(
            self.kube, self.store, "admissionchecks", k.object_path(c.V1BETA2, "admissionchecks", None, name), mutate
        )
        log.info("admission check condition", extra={"object": name, "kind": "AdmissionCheck", "status": "True"})

    def _write_status(self, name: str, status: Mapping[str, Any], now: float) -> None:
        obj = self.store.get(BUDGETS, name)
        if obj is None:
            return
        current = obj.get("status") or {}
        stable = ("periodStart", "resetAt", "usedPercent")
        drifting = current.get("lines") == status.get("lines") or now - self._status_at.get(name, 0) < STATUS_S
        if all(current.get(f) == status.get(f) for f in stable) and drifting and _valid(current):
            return
        cond = {"type": "Valid", "status": "True", "reason": "Valid", "message": "The budget is in force"}
        self._put_status(name, status, cond)
        self._status_at[name] = now

    def _write_invalid(self, name: str, problem: str) -> None:
        obj = self.store.get(BUDGETS, name)
        if obj is None or (o.find_condition(obj, "Valid") or {}).get("message") == problem:
            return
        cond = {"type": "Valid", "status": "False", "reason": "InvalidSpec", "message": problem}
        self._put_status(name, {}, cond)
        log.warning("budget invalid", extra={"object": name, "kind": "Budget", "error": problem})

    def _put_status(self, name: str, fields: Mapping[str, Any], cond: Mapping[str, Any]) -> None:
        def mutate(status: dict[str, Any], _obj: Mapping[str, Any]) -> None:
            conditions = status.get("conditions") or []
            status.clear()
            status.update(fields)
            status["conditions"] = conditions
            set_condition(status, cond, datetime.now(UTC))

        path = k.object_path(schema_budget.API_VERSION, BUDGETS, None, name)
        update_status(self.kube, self.store, BUDGETS, path, mutate)


def _valid(status: Mapping[str, Any]) -> bool:
    return any(cond.get("type") == "Valid" and cond.get("status") == "True" for cond in status.get("conditions") or ())


def _covers(bud: b.Budget, held: usage.Holding) -> bool:
    return any(bud.target.covers(key) for key in held.amounts)


def _values(st: b.Standing, line: str) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """A line's limit, spent, committed and remaining, in resource-hours (or currency)."""
    per = Fraction(1) if line == b.COST else Fraction(usage.unit_of(line)[1] * 3600)
    zero = Fraction(0)
    return (
        st.budget.limits[line] / per,
        st.spent.get(line, zero) / per,
        st.committed.get(line, zero) / per,
        max(zero, st.remaining(line)) / per,
    )
