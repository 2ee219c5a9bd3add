"""Hypothesis state machine: random create/admit/finish/evict/quota/cohort/stopPolicy changes keep invariants.

Quota and cohort changes do not evict anything, so workloads admitted before one may leave a queue
over its new limits ("grandfathered"). Checked after every step:

* every ClusterQueue that admitted in the last cycle has non-negative available quota (new
  admissions never overcommit, whatever the grandfathered usage);
* once no grandfathered workload holds quota: no ClusterQueue above nominal + borrowingLimit, no
  cohort above its capacity, lendingLimit respected;
* no admission into a stopped queue, and no quota held in a HoldAndDrain ClusterQueue once the
  worker has acted on the core's stopPolicy decisions;
* the state rebuilt from the Workload objects equals the incremental state (usage, tree, pending);
* a workload that fits an otherwise empty system is admitted in the next cycle;
* recomputing only the queues `take_status_changes` names keeps every ClusterQueue's and
  LocalQueue's status equal to a fresh computation (what the worker publishes).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.builders import (
    T0,
    feed,
    fq,
    make_cohort,
    make_core,
    make_cq,
    make_flavor,
    make_lq,
    make_wl,
)
from webhook.core import (
    AdmissionCore,
    Admit,
    Evict,
    Preempt,
    QueueBlocked,
    Requeue,
    UnsetReservation,
    resource_node,
)
from webhook.core.resources import FlavorResource

settings.register_profile(
    "core", max_examples=100, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("core")

CQS = ["a", "b", "c"]
FR = FlavorResource("one", "cpu")


class CoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.quota: dict[str, tuple[int, int | None, int | None]] = {n: (4, None, None) for n in CQS}
        self.cohort_of = {"a": "co", "b": "co", "c": "co2"}
        self.cohort_parent: dict[str, str] = {}
        self.cohorts = {"co", "co2"}
        self.workloads: dict[str, dict[str, Any]] = {}
        self.stop: dict[str, str] = {n: "None" for n in CQS}
        # Workloads holding quota from before the last quota/cohort change.
        self.grandfathered: set[str] = set()
        self.admitted_in: set[str] = set()
        self.acted = True
        self.n = 0
        self.published: dict[tuple[str, str], dict[str, Any]] = {}
        self.core = make_core(make_flavor("one").obj(), *self._structure(), *(make_lq("lq-" + n, "ns", n) for n in CQS))

    def _cq(self, name: str) -> dict[str, Any]:
        nominal, bl, ll = self.quota[name]
        b = make_cq(name).group(
            fq("one", cpu=(str(nominal), None if bl is None else str(bl), None if ll is None else str(ll)))
        )
        b.preemption(within="LowerPriority", reclaim="Any")
        if self.stop[name] != "None":
            b.stop(self.stop[name])
        return b.cohort(self.cohort_of[name]).obj()

    def _structure(self) -> list[dict[str, Any]]:
        out = [self._cq(n) for n in CQS]
        self.cohorts |= set(self.cohort_of.values()) | set(self.cohort_parent) | set(self.cohort_parent.values())
        for co in sorted(self.cohorts):
            c = make_cohort(co)
            if co in self.cohort_parent:
                c.parent(self.cohort_parent[co])
            out.append(c.obj())
        return out

    # -- rules ---------------------------------------------------------------------------------
    @rule(cq=st.sampled_from(CQS), cpu=st.integers(1, 6), prio=st.integers(0, 2))
    def create(self, cq: str, cpu: int, prio: int) -> None:
        self.n += 1
        wl = make_wl(f"w{self.n}").queue("lq-" + cq).priority(prio).created(self.n).request(cpu=str(cpu)).obj()
        self.workloads[wl["metadata"]["name"]] = wl
        self.core.on_workload(wl, T0)

    @rule()
    def schedule(self) -> None:
        """One cycle, then the worker's writes for every decision (evictions complete at once)."""
        self.admitted_in = set()
        for d in self.core.schedule(T0).decisions:
            if isinstance(d, Preempt):
                for v in d.targets:
                    self._evict(v.key.split("/")[1])
                continue
            name = d.key.split("/")[1]
            wl = self.workloads.get(name)
            if wl is None:
                continue
            if isinstance(d, Admit):
                assert self.stop[d.cluster_queue] == "None", d
                self.admitted_in.add(d.cluster_queue)
                wl["status"]["admission"] = copy.deepcopy(dict(d.admission))
                wl["status"]["conditions"] = [_cond(c.type, c.status, c.reason, c.message) for c in d.conditions]
            elif isinstance(d, Evict):
                self._evict(name, requeued=("False", d.reason))
                continue
            elif isinstance(d, UnsetReservation):
                wl["status"].pop("admission", None)
                self.grandfathered.discard(name)
                _set(wl, *d.conditions)
            elif isinstance(d, (Requeue, QueueBlocked)):
                _set(wl, *d.conditions)
            else:
                continue
            self.core.on_workload(wl, T0)
        self.acted = True

    def _reserving(self) -> list[str]:
        return sorted(n for n, w in self.workloads.items() if "admission" in w["status"])

    @precondition(lambda self: bool(self._reserving()))
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self._reserving()))
        wl = self.workloads[name]
        wl["status"]["conditions"].append(
            {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "message": "",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            }
        )
        self.core.on_workload(wl, T0)
        del self.workloads[name]
        self.grandfathered.discard(name)
        self.core.on_workload_deleted("ns", name, T0)

    @precondition(lambda self: bool(self._reserving()))
    @rule(data=st.data())
    def evict(self, data: st.DataObject) -> None:
        """Eviction completed: admission cleared, back to pending."""
        self._evict(data.draw(st.sampled_from(self._reserving())))

    def _grandfather(self) -> None:
        """A quota or cohort change evicts nothing: what holds quota now may exceed the new limits."""
        self.grandfathered |= set(self._reserving())
        self.admitted_in = set()

    def _evict(self, name: str, requeued: tuple[str, str] = ("True", "Preempted")) -> None:
        wl = self.workloads[name]
        wl["status"] = {
            "conditions": [
                _cond("QuotaReserved", "False", "PendingEvaluation", "evicted"),
                _cond("Requeued", *requeued, ""),
            ]
        }
        self.grandfathered.discard(name)
        self.core.on_workload(wl, T0)

    @rule(
        cq=st.sampled_from(CQS),
        nominal=st.integers(0, 8),
        bl=st.none() | st.integers(0, 4),
        ll=st.none() | st.integers(0, 8),
    )
    def change_quota(self, cq: str, nominal: int, bl: int | None, ll: int | None) -> None:
        self._grandfather()
        self.quota[cq] = (nominal, bl, None if ll is None else min(ll, nominal))
        self.core.on_cluster_queue(self._cq(cq), T0)

    @rule(cq=st.sampled_from(CQS), cohort=st.sampled_from(["co", "co2", "co3"]))
    def change_cohort(self, cq: str, cohort: str) -> None:
        self._grandfather()
        self.cohort_of[cq] = cohort
        for o in self._structure():
            feed(self.core, o)

    @rule(child=st.sampled_from(["co", "co2", "co3"]), parent=st.none() | st.sampled_from(["co", "co2", "co3", "top"]))
    def change_parent(self, child: str, parent: str | None) -> None:
        self._grandfather()
        if parent is None or parent == child:
            self.cohort_parent.pop(child, None)
        else:
            self.cohort_parent[child] = parent
        for o in self._structure():
            feed(self.core, o)

    @rule(cq=st.sampled_from(CQS), policy=st.sampled_from(["None", "None", "Hold", "HoldAndDrain"]))
    def change_stop(self, cq: str, policy: str) -> None:
        self.stop[cq] = policy
        self.acted = False
        self.core.on_cluster_queue(self._cq(cq), T0)

    # -- invariants ----------------------------------------------------------------------------
    @invariant()
    def new_admissions_fit(self) -> None:
        cache = self.core.cache
        for name in self.admitted_in:
            if name not in cache.forest.cycle_cqs:
                assert resource_node.available(cache.cluster_queues[name], FR) >= 0, name

    @invariant()
    def stopped_queues_drained(self) -> None:
        """After a cycle has been acted on, HoldAndDrain queues hold nothing; Hold keeps only admitted ones."""
        if not self.acted:
            return
        for name in self._reserving():
            st_ = self.workloads[name]["status"]
            policy = self.stop[st_["admission"]["clusterQueue"]]
            admitted = any(c["type"] == "Admitted" and c["status"] == "True" for c in st_["conditions"])
            assert policy == "None" or (admitted and policy == "Hold"), (name, policy)

    @invariant()
    def quotas_respected(self) -> None:
        if self.grandfathered:
            return
        cache = self.core.cache
        for name, cq in cache.cluster_queues.items():
            if name in cache.forest.cycle_cqs:
                continue
            q = cq.quota(FR)
            used = cq.usage.get(FR, 0)
            if q.borrowing_limit is not None:
                assert used <= q.nominal + q.borrowing_limit, (name, used, q)
        for co in cache.forest.cohorts.values():
            if co.parent is None and co.name not in cache.forest.cycle_cohorts:
                assert co.usage.get(FR, 0) <= co.subtree_quota.get(FR, 0), co.name

    @invariant()
    def lending_limit_respected(self) -> None:
        if self.grandfathered:
            return
        cache = self.core.cache
        for cq in cache.cluster_queues.values():
            ll = cq.quota(FR).lending_limit
            if ll is not None and cq.parent is not None and cq.name not in cache.forest.cycle_cqs:
                lent_up = max(0, cq.usage.get(FR, 0) - max(0, cq.quota(FR).nominal - ll))
                # Usage stored in the parent beyond the local part only ever comes from the shared pool.
                assert lent_up <= cq.parent.usage.get(FR, 0)

    @invariant()
    def rebuild_matches(self) -> None:
        rebuilt = make_core(make_flavor("one").obj())
        objs = [*self._structure(), *(make_lq("lq-" + n, "ns", n) for n in CQS), *self.workloads.values()]
        feed(rebuilt, *reversed(objs))
        assert rebuilt.cache.state_fingerprint() == self.core.cache.state_fingerprint()
        assert sorted(rebuilt.queues.pending) == sorted(self.core.queues.pending)

    @invariant()
    def status_changes_reported(self) -> None:
        changes = self.core.take_status_changes()
        fresh = {("cq", n): self.core.cluster_queue_status(n) for n in CQS}
        fresh.update({("lq", f"ns/lq-{n}"): self.core.local_queue_status("ns", f"lq-{n}") for n in CQS})
        for (kind, name), value in fresh.items():
            if changes is None or name in (changes.cluster_queues if kind == "cq" else changes.local_queues):
                self.published[(kind, name)] = value
        assert self.published == fresh

    @invariant()
    def fits_when_empty(self) -> None:
        empty = make_core(make_flavor("one").obj(), *self._structure(), *(make_lq("lq-" + n, "ns", n) for n in CQS))
        if "a" in empty.cache.forest.cycle_cqs or self.quota["a"][0] < 1 or self.stop["a"] != "None":
            return
        empty.on_workload(make_wl("probe").queue("lq-a").request(cpu="1").obj(), T0)
        assert [d.key for d in empty.schedule(T0).admitted] == ["ns/probe"]


def _cond(ctype: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {
        "type": str(ctype),
        "status": status,
        "reason": str(reason),
        "message": message,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }


def _set(wl: dict[str, Any], *conds: Any) -> None:
    by_type = {c["type"]: c for c in wl["status"].get("conditions", [])}
    for c in conds:
        by_type[str(c.type)] = _cond(c.type, c.status, c.reason, c.message)
    wl["status"]["conditions"] = list(by_type.values())


TestCoreMachine = CoreMachine.TestCase


def test_admitted_state_rebuilds_identically() -> None:
    core: AdmissionCore = make_core(
        make_flavor("one").obj(),
        make_cq("a").cohort("co").group(fq("one", cpu=("4", None, "1"))).obj(),
        make_cq("b").cohort("co").group(fq("one", cpu="2")).obj(),
        make_lq("lq-a", "ns", "a"),
        make_lq("lq-b", "ns", "b"),
    )
    objs = {}
    for i, (q, cpu) in enumerate([("a", 3), ("b", 4), ("a", 1), ("b", 1)]):
        wl = make_wl(f"w{i}").queue("lq-" + q).created(i).request(cpu=str(cpu)).obj()
        objs[wl["metadata"]["name"]] = wl
        core.on_workload(wl, T0)
    for _ in range(4):
        for d in core.schedule(T0).admitted:
            wl = objs[d.key.split("/")[1]]
            wl["status"]["admission"] = dict(d.admission)
            wl["status"]["conditions"] = [
                {"type": str(c.type), "status": c.status, "reason": c.reason, "message": c.message}
                for c in d.conditions
            ]
    rebuilt = make_core(
        *objs.values(),
        make_lq("lq-a", "ns", "a"),
        make_flavor("one").obj(),
        make_cq("b").cohort("co").group(fq("one", cpu="2")).obj(),
        make_cq("a").cohort("co").group(fq("one", cpu=("4", None, "1"))).obj(),
    )
    assert rebuilt.cache.state_fingerprint() == core.cache.state_fingerprint()
    assert len(core.cache.reserving) >= 2
