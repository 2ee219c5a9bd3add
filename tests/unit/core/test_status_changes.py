"""`AdmissionCore.take_status_changes`: which queues' status the worker recomputes and publishes.

The worker publishes only the ClusterQueues and LocalQueues reported here (all of them after a
queue, flavor or check changed), so a queue left out would keep a stale status. The hypothesis
state machine (`test_state_machine.py`) checks the same against a fresh computation after random
steps; these pin the cases it does not reach (an assumed admission before its write lands) and
that an event does not report unrelated queues.
"""

from __future__ import annotations

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core import AdmissionCore
from webhook.core.cycle import QueueStatusChanges


def _core() -> AdmissionCore:
    core: AdmissionCore = make_core(
        make_flavor("default").obj(),
        *(make_cq(n).cohort("co").group(fq("default", cpu="2")).obj() for n in ("a", "b", "c")),
        *(make_lq(f"lq-{n}", "ns", n) for n in ("a", "b", "c")),
    )
    return core


def test_first_call_and_queue_changes_report_every_queue() -> None:
    core = _core()
    assert core.take_status_changes() is None
    assert core.take_status_changes() == QueueStatusChanges()
    core.on_cluster_queue(make_cq("b").cohort("co").group(fq("default", cpu="3")).obj(), T0)
    assert core.take_status_changes() is None
    core.on_local_queue(make_lq("lq-new", "ns", "c"), T0)
    assert core.take_status_changes() is None


def test_a_workload_event_reports_its_local_queue_and_cluster_queue_only() -> None:
    core = _core()
    core.take_status_changes()
    core.on_workload(make_wl("w").queue("lq-a").request(cpu="1").obj(), T0)
    assert core.take_status_changes() == QueueStatusChanges({"a"}, {"ns/lq-a"})
    core.on_workload_deleted("ns", "w", T0)
    assert core.take_status_changes() == QueueStatusChanges({"a"}, {"ns/lq-a"})


def test_an_assumed_admission_is_reported_before_its_write_lands() -> None:
    core = _core()
    core.on_workload(make_wl("w").queue("lq-b").request(cpu="1").obj(), T0)
    core.take_status_changes()
    assert [d.key for d in core.schedule(T0).admitted] == ["ns/w"]
    assert core.take_status_changes() == QueueStatusChanges({"b"}, {"ns/lq-b"})
    assert core.cluster_queue_status("b")["reservingWorkloads"] == 1
    assert core.local_queue_status("ns", "lq-b")["reservingWorkloads"] == 1


def test_quota_released_in_another_queue_reports_the_queue_holding_it() -> None:
    core = _core()
    reserved = make_wl("w").queue("lq-a").request(cpu="1").reserve("c", psa(cpu=("default", "1")))
    core.on_workload(reserved.obj(), T0)
    assert core.cluster_queue_status("c")["reservingWorkloads"] == 1
    core.take_status_changes()
    core.on_workload_deleted("ns", "w", T0)
    assert core.take_status_changes() == QueueStatusChanges({"a", "c"}, {"ns/lq-a"})


def test_each_reader_gets_every_change_since_its_own_last_call() -> None:
    core = _core()
    assert core.take_status_changes("status") is None
    assert core.take_status_changes("gauges") is None
    core.on_workload(make_wl("w").queue("lq-a").request(cpu="1").obj(), T0)
    assert core.take_status_changes("status") == QueueStatusChanges({"a"}, {"ns/lq-a"})
    core.on_workload(make_wl("v").queue("lq-c").request(cpu="1").obj(), T0)
    assert core.take_status_changes("gauges") == QueueStatusChanges({"a", "c"}, {"ns/lq-a", "ns/lq-c"})
    assert core.take_status_changes("status") == QueueStatusChanges({"c"}, {"ns/lq-c"})
