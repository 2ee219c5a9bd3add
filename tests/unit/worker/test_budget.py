"""The pykueue.io/budget admission check: a Workload over budget waits with a message, and is let
through when the period resets; the Budget's status and gauges say where it stands."""

from __future__ import annotations

import logging
import threading
from typing import Any

from tests.builders import T0, make_wl, psa
from tests.unit.fake_kube import FakeKube
from webhook import metrics
from webhook.api import constants as c
from webhook.api import schema_budget
from webhook.kube import object_path
from webhook.worker import workload_writes
from webhook.worker.budget import BUDGETS, BudgetController
from webhook.worker.store import Store
from webhook.worker.usage import UsageAccountant

BASE = int(T0.timestamp())
AC = "budget"
AC_PATH = object_path(c.V1BETA2, "admissionchecks", None, AC)


class Clock:
    def __init__(self) -> None:
        self.now = BASE

    def __call__(self) -> float:
        return float(self.now)


class World:
    """A FakeKube and the Store the controller reads, kept alike (the informers' part)."""

    def __init__(self, **spec: Any) -> None:
        self.kube = FakeKube()
        self.store = Store()
        self.clock = Clock()
        self.accountant = UsageAccountant(self.kube, self.store, stop=threading.Event(), lag_s=0, clock=self.clock)
        self.controller = BudgetController(
            self.kube, self.store, self.accountant, stop=threading.Event(), clock=self.clock
        )
        ac = {"metadata": {"name": AC}, "spec": {"controllerName": schema_budget.CONTROLLER_NAME}}
        self.add("admissionchecks", AC_PATH, ac)
        budget = {
            "apiVersion": schema_budget.API_VERSION,
            "kind": "Budget",
            "metadata": {"name": "team"},
            "spec": {
                "clusterQueue": "cq",
                "period": {"every": "PT1H"},
                "limit": {"resourceHours": {"cpu": "1"}},
                **spec,
            },
        }
        self.add(BUDGETS, object_path(schema_budget.API_VERSION, BUDGETS, None, "team"), budget)

    def add(self, kind: str, path: str, obj: dict[str, Any]) -> None:
        self.kube.put(path, obj)
        self.store.put(kind, self.kube.objects[path])

    def workload(self, name: str, at: int, *, admitted: bool, state: str, cpu: str = "1", runtime: int = 1200) -> None:
        wl = make_wl(name).request(cpu=cpu).reserve("cq", psa(cpu=("on-demand", cpu)), admitted=admitted, at=at).obj()
        wl["metadata"]["uid"] = f"uid-{name}"
        wl["spec"]["maximumExecutionTimeSeconds"] = runtime
        wl["status"]["admissionChecks"] = [
            {"name": AC, "state": state, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]
        self.add("workloads", workload_writes.path(wl), wl)
        self.accountant.on_event("workloads", "ADDED", wl)

    def check(self, name: str) -> dict[str, Any]:
        wl = self.kube.objects[workload_writes.path(make_wl(name).obj())]
        return wl["status"]["admissionChecks"][0]

    def budget_status(self) -> dict[str, Any]:
        return self.kube.objects[object_path(schema_budget.API_VERSION, BUDGETS, None, "team")]["status"]


def test_over_budget_waits_with_what_is_left_and_when_it_resets_then_goes_at_the_reset():
    w = World()
    w.workload("a", 0, admitted=True, state=c.CHECK_STATE_READY)  # 1 cpu for 1200 s: a third of the hour's budget
    w.workload("b", 100, admitted=False, state=c.CHECK_STATE_PENDING, runtime=3000)
    w.clock.now = BASE + 200
    w.controller.run_pass()
    check = w.check("b")
    assert check["state"] == c.CHECK_STATE_PENDING
    # spent 200 + 100 (b's own reservation) s, a commits 1000 s more: 2300 s left, b needs 3000
    assert check["message"] == (
        'budget "team" (ClusterQueue cq): 0.6389 core-hours of cpu left of 1 core-hours of cpu, this Workload needs '
        "0.8333 core-hours of cpu; resets at 2025-01-01T01:00:00Z"
    )
    status = w.budget_status()
    assert status["resetAt"] == "2025-01-01T01:00:00Z" and status["usedPercent"] == 36
    assert status["lines"] == [
        {
            "resource": "cpu",
            "unit": "core-hours",
            "limit": "1",
            "spent": "0.0833",
            "committed": "0.2778",
            "remaining": "0.6389",
        }
    ]
    assert status["conditions"][0]["type"] == "Valid" and status["conditions"][0]["status"] == "True"
    assert w.kube.objects[AC_PATH]["status"]["conditions"][0]["status"] == "True"  # Active
    rows = {labels: values for labels, *values in w.controller._lines}
    assert list(rows) == [("team", "cpu", "core-hours")]
    # the next period: what a still commits (and b's reservation since the reset) leaves room
    w.clock.now = BASE + 3600 + 1
    w.controller.run_pass()
    assert w.check("b")["state"] == c.CHECK_STATE_READY
    assert w.check("b")["message"].startswith('budget "team" (ClusterQueue cq): fits')


def test_nothing_is_decided_until_budgets_are_listed(caplog):
    """An install whose Budget CRD is not established when the leader starts lists no Budgets: a
    Workload must not go Ready as "covered by no budget" meanwhile. The check stays inactive (its
    ClusterQueue admits nothing) and the Workload Pending, until the Budgets are listed."""
    served = [False]
    w = World()
    w.controller.served = lambda: served[0]
    w.workload("a", 0, admitted=False, state=c.CHECK_STATE_PENDING)
    w.clock.now = BASE + 1
    with caplog.at_level(logging.WARNING):
        w.controller.run_pass()
        w.controller.run_pass()
    assert [r.getMessage() for r in caplog.records] == ["Budget API not served: budget checks wait for it"]
    assert "status" not in w.kube.objects[AC_PATH]
    assert w.check("a")["state"] == c.CHECK_STATE_PENDING and w.check("a")["message"] == ""
    served[0] = True
    w.controller.run_pass()
    assert w.kube.objects[AC_PATH]["status"]["conditions"][0]["status"] == "True"
    assert w.check("a")["state"] == c.CHECK_STATE_READY
    assert w.check("a")["message"].startswith('budget "team" (ClusterQueue cq): fits')


def test_two_waiting_cannot_share_what_one_fits():
    w = World()
    w.workload("a", 0, admitted=False, state=c.CHECK_STATE_PENDING, runtime=2000)
    w.workload("b", 1, admitted=False, state=c.CHECK_STATE_PENDING, runtime=2000)
    w.clock.now = BASE + 2
    w.controller.run_pass()
    assert (w.check("a")["state"], w.check("b")["state"]) == (c.CHECK_STATE_READY, c.CHECK_STATE_PENDING)


def test_no_runtime_waits_and_says_why():
    w = World()
    w.workload("a", 0, admitted=False, state=c.CHECK_STATE_PENDING, runtime=0)
    wl = w.store.get("workloads", "ns/a")
    del wl["spec"]["maximumExecutionTimeSeconds"]
    w.controller.run_pass()
    assert "no maximumExecutionTimeSeconds and the budget no defaultRuntime" in w.check("a")["message"]


def test_evict_policy_retries_running_workloads_once_spent():
    w = World(runningWorkloads="Evict")
    w.workload("a", 0, admitted=True, state=c.CHECK_STATE_READY, cpu="2", runtime=7200)
    w.clock.now = BASE + 1800  # 2 cpu for half an hour: the core-hour is spent
    w.controller.run_pass()
    assert w.check("a")["state"] == c.CHECK_STATE_RETRY
    assert w.check("a")["message"] == 'budget "team": budget exhausted'


def test_continue_policy_never_touches_running_workloads():
    w = World()
    w.workload("a", 0, admitted=True, state=c.CHECK_STATE_READY, cpu="2", runtime=7200)
    w.clock.now = BASE + 1800
    w.controller.run_pass()
    assert w.check("a")["state"] == c.CHECK_STATE_READY


def test_an_invalid_budget_says_so():
    w = World(period={"every": "soon"})
    w.controller.run_pass()
    cond = w.budget_status()["conditions"][0]
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert "spec.period.every" in cond["message"]


def test_gauges():
    w = World()
    w.workload("a", 0, admitted=True, state=c.CHECK_STATE_READY)
    w.clock.now = BASE + 360
    w.controller.run_pass()
    metrics.BUDGETS.use(lambda: list(w.controller._lines))
    try:
        families = {f.name: f for f in metrics.BUDGETS.collect()}
        remaining = families["pykueue_budget_remaining"].samples[0]
        assert remaining.labels == {"budget": "team", "line": "cpu", "unit": "core-hours", "replica_role": "leader"}
        assert abs(remaining.value - (1 - 0.1 - 840 / 3600)) < 1e-9
    finally:
        metrics.BUDGETS.use(None)


def test_a_decision_is_logged(caplog):
    """The log record of a changed check carries its message (a field named `message` would make
    the logging module raise, which once killed the controller's thread)."""
    w = World()
    w.workload("a", 0, admitted=False, state=c.CHECK_STATE_PENDING)
    with caplog.at_level("INFO", logger="webhook.worker.budget"):
        w.controller.run_pass()
    record = next(r for r in caplog.records if r.getMessage() == "budget check")
    assert record.decision == c.CHECK_STATE_READY and record.check_message.startswith('budget "team"')
