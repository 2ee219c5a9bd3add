"""The scheduler's evictions as status writes (`worker.decisions`): each is counted in
`status.schedulingStats.evictions` as `workloadEvictionStateInc` does (`pkg/workload/evict/evict.go`)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.builders import make_wl, psa
from webhook.api.constants import PreemptionReason
from webhook.config import Configuration
from webhook.core.conditions import ConditionValue
from webhook.core.cycle import CycleResult
from webhook.core.decisions import Admit, Decision, Evict, Migrate, Preempt, Victim
from webhook.core.workload import WorkloadKey
from webhook.worker import events
from webhook.worker.decisions import DecisionWriter
from webhook.worker.reporter import MetricsReporter
from webhook.worker.store import Store
from webhook.worker.writers import Call, StatusWrite

NOW = datetime(2025, 1, 1, tzinfo=UTC)
KEY = WorkloadKey("ns/wl")


class Writes:
    """Stands in for the status WorkQueue: keeps what is queued."""

    def __init__(self) -> None:
        self.queued: list[StatusWrite | Call] = []

    def add(self, key: str, item: StatusWrite | Call, *, first: bool = False) -> None:
        self.queued.append(item)


def written_status(decision: Decision, wl: dict[str, Any]) -> dict[str, Any]:
    """Dispatch `decision` and apply its status write to `wl`'s status."""
    store = Store()
    store.put("workloads", wl)
    writes = Writes()
    recorder = events.Recorder(None, instance="t", stop=threading.Event())
    writer = DecisionWriter(None, store, writes, recorder, MetricsReporter(Configuration()), lambda _m: None)  # type: ignore[arg-type]
    writer.dispatch(CycleResult(decisions=[decision]), NOW)
    [write] = writes.queued
    assert isinstance(write, StatusWrite)
    status = dict(wl["status"])
    write.mutate(status, wl)
    return status


def admitted(evicted: bool = False) -> dict[str, Any]:
    b = make_wl("wl").queue("lq").request(cpu="1").reserve("cq", psa(cpu=("a", "1")))
    if evicted:
        b = b.evicted("Preempted")
    wl = b.obj()
    wl["metadata"]["uid"] = "u"
    wl["status"]["schedulingStats"] = {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]}
    return wl


def evicted(reason: str) -> ConditionValue:
    return ConditionValue("Evicted", "True", reason, "m")


def victim() -> Victim:
    return Victim(
        KEY,
        "u",
        "cq",
        PreemptionReason.IN_CLUSTER_QUEUE,
        "m",
        (evicted("Preempted"), ConditionValue("Preempted", "True", "InClusterQueue", "m")),
    )


@pytest.mark.parametrize(
    ("decision", "want"),
    [
        pytest.param(
            Preempt(WorkloadKey("ns/preemptor"), "cq", (victim(),)),
            [{"reason": "Preempted", "underlyingCause": "", "count": 2}],
            id="preempted",
        ),
        pytest.param(
            Evict(KEY, "u", "cq", "ClusterQueueStopped", "m", (evicted("ClusterQueueStopped"),)),
            [
                {"reason": "Preempted", "underlyingCause": "", "count": 1},
                {"reason": "ClusterQueueStopped", "underlyingCause": "", "count": 1},
            ],
            id="queue stopped with HoldAndDrain",
        ),
        pytest.param(
            Migrate(KEY, "u", "cq", "FlavorMigration", "m", (evicted("FlavorMigration"),)),
            [
                {"reason": "Preempted", "underlyingCause": "", "count": 1},
                {"reason": "FlavorMigration", "underlyingCause": "", "count": 1},
            ],
            id="flavor migration",
        ),
    ],
)
def test_every_eviction_is_counted(decision: Decision, want: list[dict[str, Any]]) -> None:
    assert written_status(decision, admitted())["schedulingStats"]["evictions"] == want


def test_a_preemption_of_an_already_evicted_workload_is_not_counted_again() -> None:
    status = written_status(Preempt(WorkloadKey("ns/preemptor"), "cq", (victim(),)), admitted(evicted=True))
    assert status["schedulingStats"]["evictions"] == [{"reason": "Preempted", "underlyingCause": "", "count": 1}]


def _on_failed_node() -> dict[str, Any]:
    wl = admitted()
    wl["status"]["unhealthyNodes"] = [{"name": "x2"}]
    return wl


def test_a_node_replacement_clears_the_unhealthy_nodes_with_the_new_admission() -> None:
    admission = {"clusterQueue": "cq", "podSetAssignments": [psa(cpu=("a", "1"))]}
    admit = Admit(KEY, "u", "cq", admission, (), clears_unhealthy_nodes=True)
    status = written_status(admit, _on_failed_node())
    assert "unhealthyNodes" not in status
    assert status["admission"] == admission


def test_an_eviction_clears_the_unhealthy_nodes() -> None:
    status = written_status(Evict(KEY, "u", "cq", "NodeFailures", "m", (evicted("NodeFailures"),)), _on_failed_node())
    assert "unhealthyNodes" not in status


@pytest.mark.parametrize(
    "decision",
    [
        pytest.param(Preempt(WorkloadKey("ns/preemptor"), "cq", (victim(),)), id="preempted"),
        pytest.param(
            Evict(KEY, "u", "cq", "ClusterQueueStopped", "m", (evicted("ClusterQueueStopped"),)), id="queue stopped"
        ),
        pytest.param(Migrate(KEY, "u", "cq", "FlavorMigration", "m", (evicted("FlavorMigration"),)), id="migration"),
    ],
)
def test_an_eviction_forgets_the_multikueue_worker(decision: Decision) -> None:
    """`resetClusterNomination` (evict.go): a readmitted Workload is dispatched to the workers afresh."""
    wl = admitted()
    wl["status"]["clusterName"] = "worker1"
    status = written_status(decision, wl)
    assert "clusterName" not in status and "nominatedClusterNames" not in status
    wl = admitted()
    wl["status"]["nominatedClusterNames"] = ["worker1", "worker2"]
    assert "nominatedClusterNames" not in written_status(decision, wl)
