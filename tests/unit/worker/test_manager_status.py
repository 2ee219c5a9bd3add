"""What the worker writes into queue status (ClusterQueue usage lists, Cohort fair sharing) and the
WorkloadPriorityClass → Workload `spec.priority` sync, against a fake API server."""

from __future__ import annotations

import copy
import threading
from datetime import timedelta
from typing import Any

import pytest

from tests.builders import T0, fq, make_cohort, make_cq, make_flavor, make_lq, make_wl, psa
from tests.metric_samples import value
from tests.unit.fake_kube import FakeKube
from webhook import config as cfg
from webhook import kube as k
from webhook import metrics as m
from webhook.api import constants as c
from webhook.api import quantity
from webhook.config import Configuration, FairSharing, Resources, ResourceTransformation
from webhook.worker import priority
from webhook.worker.manager import RESOURCES, Manager
from webhook.worker.reporter import ROLE
from webhook.worker.workqueue import Retry
from webhook.worker.writers import StatusWrite

API = {r.kind: r.api_version for r in RESOURCES}
KINDS = {
    "ResourceFlavor": "resourceflavors",
    "Cohort": "cohorts",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "Workload": "workloads",
    "WorkloadPriorityClass": "workloadpriorityclasses",
}


class World:
    """A Manager whose core is fed directly and whose writes run synchronously on `flush`."""

    def __init__(self, config: Configuration, *objs: dict[str, Any]) -> None:
        self.kube = FakeKube()
        self.mgr = Manager(self.kube, config, identity="test", stop=threading.Event())
        self.mgr.core.on_namespace("ns", {"kubernetes.io/metadata.name": "ns"}, T0)
        for obj in objs:
            self.add(obj)

    def path(self, obj: dict[str, Any]) -> str:
        plural = KINDS[obj["kind"]]
        return k.object_path(API[plural], plural, obj["metadata"].get("namespace"), obj["metadata"]["name"])

    def add(self, obj: dict[str, Any]) -> None:
        self.kube.put(self.path(obj), obj)
        stored = self.kube.get(self.path(obj))
        assert stored is not None
        self.mgr.store.put(KINDS[obj["kind"]], stored)
        self.mgr._feed(KINDS[obj["kind"]], "ADDED", stored, T0)

    def publish(self) -> None:
        self.mgr.queue_status.publish(T0)
        self.mgr.finalizers.release()
        self.flush()

    def flush(self) -> None:
        for writes in (self.mgr.writes, self.mgr.queue_writes):
            queued = writes._queued
            while queued:
                key, items = queued.popitem(last=False)
                self.mgr._write(key, items)

    def status(self, obj: dict[str, Any]) -> dict[str, Any]:
        got = self.kube.get(self.path(obj))
        assert got is not None
        return dict(got.get("status") or {})


ROOT = make_cohort("root").obj()
CHILD = make_cohort("child").parent("root").obj()
CQ_A = make_cq("a").cohort("child").group(fq("default", cpu="2")).obj()
CQ_B = make_cq("b").cohort("root").group(fq("default", cpu="2")).obj()
# `a` runs 3 CPUs on a nominal quota of 2: its cohort `child` borrows 1 of the 4 CPUs `root` can lend.
BORROWER = make_wl("w").queue("lq-a").request(cpu="3").reserve("a", psa(cpu=("default", "3"))).obj()


def objects() -> list[dict[str, Any]]:
    return [make_flavor("default").obj(), ROOT, CHILD, CQ_A, CQ_B, make_lq("lq-a", "ns", "a"), BORROWER]


def test_cohort_status_carries_the_weighted_share_with_fair_sharing() -> None:
    w = World(Configuration(fair_sharing=FairSharing()), *objects())
    w.publish()
    assert w.status(CHILD) == {"fairSharing": {"weightedShare": 250}}  # ceil(1 CPU x 1000 / 4 CPUs lendable)
    assert w.status(ROOT) == {"fairSharing": {"weightedShare": 0}}  # a root borrows from nobody
    assert w.status(CQ_A)["fairSharing"]["weightedShare"] > 0


def test_cohort_status_drops_fair_sharing_when_it_is_off() -> None:
    stale = {**CHILD, "status": {"fairSharing": {"weightedShare": 7}}}
    w = World(Configuration(), make_flavor("default").obj(), ROOT, stale, CQ_A)
    w.publish()
    assert w.status(CHILD) == {}
    assert "fairSharing" not in w.status(CQ_A)


def test_cluster_queue_usage_lists_carry_borrowed_even_when_zero() -> None:
    """Upstream's `borrowed` is a resource.Quantity (a struct): `omitempty` never drops it, so the
    stored object shows "0" whenever nothing is borrowed; LocalQueue entries have no such field."""
    w = World(Configuration(), *objects())
    w.publish()
    assert w.status(CQ_A)["flavorsReservation"] == [
        {"name": "default", "resources": [{"name": "cpu", "total": "3", "borrowed": "1"}]}
    ]
    assert w.status(CQ_B)["flavorsUsage"] == [
        {"name": "default", "resources": [{"name": "cpu", "total": "0", "borrowed": "0"}]}
    ]
    lq = w.status(make_lq("lq-a", "ns", "a"))
    assert lq["flavorsUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "3"}]}]


def test_reclaimable_pods_release_quota_in_queue_status() -> None:
    """usage = per-pod requests x (count - reclaimable): 4 pods of 1 CPU with 3 reclaimable hold 1 CPU."""
    job_wl = (
        make_wl("job").queue("lq-a").podset(count=4, cpu="1").reserve("a", psa(count=4, cpu=("default", "4"))).obj()
    )
    w = World(Configuration(), make_flavor("default").obj(), CQ_A, make_lq("lq-a", "ns", "a"), job_wl)
    w.publish()
    assert w.status(CQ_A)["flavorsReservation"][0]["resources"][0]["total"] == "4"
    job_wl["status"]["reclaimablePods"] = [{"name": "main", "count": 3}]
    w.add(job_wl)
    w.publish()
    assert w.status(CQ_A)["flavorsReservation"][0]["resources"][0] == {"name": "cpu", "total": "1", "borrowed": "0"}
    assert w.status(make_lq("lq-a", "ns", "a"))["flavorsUsage"][0]["resources"][0]["total"] == "1"


def test_partially_admitted_pod_set_keeps_its_usage_until_more_pods_are_reclaimable_than_were_left_out() -> None:
    """Upstream counts the pods still needed from the podSet's count: 6 pods, 4 admitted, 2
    reclaimable leaves 4 needed (no change); 3 reclaimable leaves 3 of the 4 admitted."""
    wl = (
        make_wl("partial")
        .queue("lq-a")
        .podset(count=6, min_count=2, cpu="500m")
        .reserve("a", psa(count=4, cpu=("default", "2")))
        .obj()
    )
    w = World(Configuration(), make_flavor("default").obj(), CQ_A, make_lq("lq-a", "ns", "a"))
    for reclaimable, total in ((2, "2"), (3, "1500m")):
        wl["status"]["reclaimablePods"] = [{"name": "main", "count": reclaimable}]
        w.add(wl)
        w.publish()
        assert w.status(CQ_A)["flavorsReservation"][0]["resources"][0]["total"] == total


# == WorkloadPriorityClass → spec.priority =========================================================
def wpc(value: int) -> dict[str, Any]:
    return {"apiVersion": c.V1BETA2, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": value}


def ref(kind: str = "WorkloadPriorityClass", group: str = c.GROUP) -> dict[str, str]:
    return {"group": group, "kind": kind, "name": "high"}


def workload(name: str, priority_value: int, reference: dict[str, str], *, finished: bool = False) -> dict[str, Any]:
    b = make_wl(name).priority(priority_value).request(cpu="1")
    if finished:
        b = b.reserve("a", psa(cpu=("default", "1"))).finished()
    wl = b.obj()
    wl["spec"]["priorityClassRef"] = reference
    return wl


def priorities(w: World, *names: str) -> list[int]:
    out = []
    for name in names:
        got = w.kube.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}")
        assert got is not None
        out.append(got["spec"]["priority"])
    return out


def test_value_change_rewrites_priority_of_every_workload_naming_the_class() -> None:
    w = World(
        Configuration(),
        wpc(100),
        workload("pending", 10, ref()),
        workload("done", 10, ref(), finished=True),
        workload("current", 100, ref()),
        workload("pod-priority", 10, ref("PriorityClass", "scheduling.k8s.io")),
    )
    calls = len(w.kube.calls)
    assert priority.sync_workload_priorities(w.kube, w.mgr.store, "high") == ["ns/done", "ns/pending"]
    assert [m for m, _ in w.kube.calls[calls:]] == ["PUT", "PUT"]  # the Workload already at 100 is not written
    assert priorities(w, "pending", "done", "current", "pod-priority") == [100, 100, 100, 10]
    assert w.mgr.store.get("workloads", "ns/pending")["spec"]["priority"] == 100  # type: ignore[index]


def test_conflicting_update_is_retried_on_the_newest_version() -> None:
    w = World(Configuration(), wpc(100), workload("pending", 10, ref()))
    # Someone else changed the Workload since the store saw it: the first PUT conflicts.
    path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/pending"
    newer = w.kube.get(path)
    assert newer is not None
    newer["metadata"]["labels"] = {"touched": "yes"}
    w.kube.put(path, newer)
    assert priority.sync_workload_priorities(w.kube, w.mgr.store, "high") == ["ns/pending"]
    got = w.kube.get(path)
    assert got is not None and got["spec"]["priority"] == 100 and got["metadata"]["labels"] == {"touched": "yes"}


def test_failed_update_makes_the_class_retried() -> None:
    w = World(Configuration(), wpc(100), workload("pending", 10, ref()))
    w.kube.objects.clear()  # GET after the conflict finds nothing: a vanished Workload is not an error
    assert priority.sync_workload_priorities(w.kube, w.mgr.store, "high") == []

    class Failing(FakeKube):
        def replace(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
            raise k.KubeError(500, "etcd is sad")

    with pytest.raises(Retry):
        priority.sync_workload_priorities(Failing(), w.mgr.store, "high")


@pytest.mark.parametrize(
    ("old_value", "queued"),
    [
        pytest.param(None, True, id="created"),
        pytest.param(100, False, id="value unchanged"),
        pytest.param(5, True, id="value changed"),
    ],
)
def test_manager_syncs_on_creation_and_value_change_only(old_value: int | None, queued: bool) -> None:
    w = World(Configuration(), workload("pending", 10, ref()))
    w.mgr._synced.update(r.kind for r in w.mgr.resources)
    if old_value is not None:
        w.mgr.store.put(
            "workloadpriorityclasses", {**wpc(old_value), "metadata": {"name": "high", "resourceVersion": "1"}}
        )
    w.mgr._event(
        "workloadpriorityclasses",
        "ADDED" if old_value is None else "MODIFIED",
        {**wpc(100), "metadata": {"name": "high", "resourceVersion": "2", "labels": {"x": "y"}}},
    )
    w.flush()
    assert priorities(w, "pending") == [100 if queued else 10]


def test_admitting_a_replacement_slice_finishes_the_old_one_after_the_write() -> None:
    cq = make_cq("cq").group(fq("f", cpu=("12", None, None))).obj()
    old = make_wl("old").podset("main", 10, cpu="1").reserve("cq", psa("main", 10, cpu=("f", "10"))).obj()
    new = (
        make_wl("new")
        .created(1)
        .annotation(c.WORKLOAD_SLICE_REPLACEMENT_FOR, "ns/old")
        .podset("main", 12, cpu="1")
        .obj()
    )
    w = World(Configuration(), make_flavor("f").obj(), cq, make_lq("lq", "ns", "cq"), old, new)
    replaced = ("kueue_replaced_workload_slices_total", {"cluster_queue": "cq", "replica_role": ROLE})
    before = value(m.WORKER_REGISTRY, *replaced)
    w.mgr._observe_workload("ADDED", w.kube.get(w.path(old)))
    result = w.mgr.core.schedule(T0)
    [admit] = result.admitted
    w.mgr.decisions.dispatch(result, T0)
    w.flush()  # the Admit write, whose success queues the old slice's Finished write
    assert w.status(new)["admission"]["clusterQueue"] == "cq"
    w.flush()
    finished = next(x for x in w.status(old)["conditions"] if x["type"] == "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "WorkloadSliceReplaced")
    assert (
        finished["message"]
        == "Replaced to accommodate a workload (UID: uid-new, JobUID: ) due to workload slice aggregation"
    )
    assert w.status(old)["admission"] == old["status"]["admission"]
    assert value(m.WORKER_REGISTRY, *replaced) == before  # counted on the watch event, once
    w.mgr._observe_workload("MODIFIED", w.kube.get(w.path(old)))
    w.mgr._observe_workload("MODIFIED", w.kube.get(w.path(old)))
    assert value(m.WORKER_REGISTRY, *replaced) == before + 1
    assert admit.replaces is not None


def test_no_cycle_runs_until_the_preemptions_of_the_last_one_are_written() -> None:
    """Upstream's cycle waits for its preemption patches (`IssuePreemptions`): the worker holds its
    cycles while a victim's Preempted write is queued or in flight, then schedules again."""
    cq = make_cq("cq").group(fq("f", cpu="1")).preemption(within="LowerPriority").obj()
    low = make_wl("low").queue("lq").priority(1).request(cpu="1").reserve("cq", psa(cpu=("f", "1"))).obj()
    high = make_wl("high").queue("lq").priority(10).request(cpu="1").obj()
    w = World(Configuration(), make_flavor("f").obj(), cq, make_lq("lq", "ns", "cq"), low, high)
    assert not w.mgr._writes_held()
    result = w.mgr.core.schedule(T0)
    assert [str(t.key) for d in result.preempted for t in d.targets] == ["ns/low"]
    w.mgr.decisions.dispatch(result, T0)
    assert w.mgr._writes_held()
    w.flush()
    evicted = next(x for x in w.status(low)["conditions"] if x["type"] == "Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
    assert not w.mgr._writes_held()


def test_no_cycle_runs_until_the_pending_status_of_the_last_one_is_written() -> None:
    """Upstream's cycle ends after the pending-status patches of the heads it did not admit
    (`requeueAndUpdate`): the worker holds its next cycle while one is queued or in flight, and a
    head whose status already shows the same pending reason costs no write and holds nothing."""
    cq = make_cq("cq").group(fq("f", cpu="1")).obj()
    big = make_wl("big").queue("lq").request(cpu="2").obj()
    w = World(Configuration(), make_flavor("f").obj(), cq, make_lq("lq", "ns", "cq"), big)
    result = w.mgr.core.schedule(T0)
    assert [str(d.key) for d in result.pending] == ["ns/big"]
    w.mgr.decisions.dispatch(result, T0)
    assert w.mgr._writes_held()
    w.flush()
    reserved = next(x for x in w.status(big)["conditions"] if x["type"] == "QuotaReserved")
    assert (reserved["status"], reserved["reason"]) == ("False", "Pending")
    assert not w.mgr._writes_held()
    w.mgr.core.queues.queue_inadmissible(["cq"], T0)
    again = w.mgr.core.schedule(T0)
    assert [str(d.key) for d in again.pending] == ["ns/big"]
    w.mgr.decisions.dispatch(again, T0)
    assert not w.mgr._writes_held()


def _recreated(wl: dict[str, Any]) -> dict[str, Any]:
    wl = copy.deepcopy(wl)
    wl["metadata"]["uid"] = "uid-recreated"
    return wl


def _resized(wl: dict[str, Any]) -> dict[str, Any]:
    wl = copy.deepcopy(wl)
    wl["metadata"]["generation"] = 2
    wl["spec"]["podSets"][0]["count"] = 3
    return wl


def _deactivated(wl: dict[str, Any]) -> dict[str, Any]:
    wl = copy.deepcopy(wl)
    wl["metadata"]["generation"] = 2
    wl["spec"]["active"] = False
    return wl


@pytest.mark.parametrize("change", [_recreated, _resized, _deactivated])
def test_an_admission_decided_for_one_workload_never_lands_on_another(change: Any) -> None:
    """The Workload changed (recreated, resized, deactivated) between the cycle and its write: the
    write is dropped and the core told, so it decides again on what is there now."""
    cq = make_cq("cq").group(fq("f", cpu="4")).obj()
    wl = make_wl("w").queue("lq").request(cpu="1").obj()
    wl["metadata"]["generation"] = 1
    w = World(Configuration(), make_flavor("f").obj(), cq, make_lq("lq", "ns", "cq"), wl)
    result = w.mgr.core.schedule(T0)
    assert [str(d.key) for d in result.admitted] == ["ns/w"]
    w.mgr.decisions.dispatch(result, T0)
    w.kube.put(w.path(wl), change(wl))  # after the decision, before its write
    w.flush()
    assert "admission" not in w.status(wl)
    assert [type(m).__name__ for m in w.mgr._drain(0)] == ["AdmissionFailed"]


def test_a_preemption_decided_for_one_victim_never_evicts_its_namesake() -> None:
    cq = make_cq("cq").group(fq("f", cpu="1")).preemption(within="LowerPriority").obj()
    low = make_wl("low").queue("lq").priority(1).request(cpu="1").reserve("cq", psa(cpu=("f", "1"))).obj()
    high = make_wl("high").queue("lq").priority(10).request(cpu="1").obj()
    w = World(Configuration(), make_flavor("f").obj(), cq, make_lq("lq", "ns", "cq"), low, high)
    result = w.mgr.core.schedule(T0)
    w.mgr.decisions.dispatch(result, T0)
    w.kube.put(w.path(low), _recreated(low))
    w.flush()
    assert not any(x["type"] == "Evicted" for x in w.status(low).get("conditions") or ())
    assert [type(m).__name__ for m in w.mgr._drain(0)] == ["WriteFailed"]


def test_pending_workload_reports_its_requests_as_quota_charges_them_until_admitted() -> None:
    """`status.resourceRequests` (upstream's `PropagateResourceRequests` on every pending report,
    cleared by the admission patch): the podSets' totals after the Configuration's transformations."""
    cfg = Configuration(
        resources=Resources(
            transformations=(ResourceTransformation("example.com/credit", "Replace", "", {"cpu": "1"}),)
        )
    )
    cq = make_cq("cq").group(fq("f", cpu="4")).obj()
    big = make_wl("big").queue("lq").podset("main", 5, **{"example.com/credit": "1"}).obj()
    big["status"] = {}
    small = make_wl("small").queue("lq").podset("main", 2, **{"example.com/credit": "1"}).created(5).obj()
    small["status"] = {"resourceRequests": [{"name": "main", "resources": {"example.com/credit": "2"}}]}
    w = World(cfg, make_flavor("f").obj(), cq, make_lq("lq", "ns", "cq"), big, small)
    first = w.mgr.core.schedule(T0)  # one head per ClusterQueue and cycle: `big`, which does not fit
    assert [str(d.key) for d in first.pending] == ["ns/big"] and not first.admitted
    w.mgr.decisions.dispatch(first, T0)
    w.flush()
    second = w.mgr.core.schedule(T0)
    assert [str(d.key) for d in second.admitted] == ["ns/small"]
    w.mgr.decisions.dispatch(second, T0)
    w.flush()
    assert w.status(big)["resourceRequests"] == [{"name": "main", "resources": {"cpu": "5"}}]
    assert w.status(small)["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "2"}
    assert "resourceRequests" not in w.status(small)


def test_requests_beyond_int64_are_reported_as_a_quantity_the_api_accepts() -> None:
    """A Job asking 1e18 CPUs (1e21 milli-CPUs, past int64) stays pending with its message; its
    resourceRequests saturate to a valid quantity, not `<unlimited>`, which the API refuses (and the
    pending condition with it)."""
    cq = make_cq("cq").group(fq("f", cpu="4")).obj()
    huge = make_wl("huge").queue("lq").podset("main", 1, cpu="1e18").obj()
    huge["status"] = {}
    w = World(Configuration(), make_flavor("f").obj(), cq, make_lq("lq", "ns", "cq"), huge)
    result = w.mgr.core.schedule(T0)
    w.mgr.decisions.dispatch(result, T0)
    w.flush()
    requested = w.status(huge)["resourceRequests"][0]["resources"]["cpu"]
    assert requested == "9223372036854775807m"
    assert quantity.invalid(requested) is None  # the API's quantity syntax
    reserved = next(c for c in w.status(huge)["conditions"] if c["type"] == "QuotaReserved")
    assert reserved["status"] == "False" and "couldn't assign flavors" in reserved["message"]


def test_local_queue_status_and_metric_carry_admission_fair_sharing_usage() -> None:
    """`status.fairSharing.admissionFairSharingStatus` is written when the LocalQueue is sampled, and
    `kueue_local_queue_admission_fair_sharing_usage` follows it (localqueue_controller.go)."""
    conf = cfg.parse(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "admissionFairSharing: {usageHalfLifeTime: 10s, usageSamplingInterval: 1s, resourceWeights: {cpu: 2}}\n"
    )
    lq = make_lq("afs-lq", "ns", "afs")
    lq["spec"]["fairSharing"] = {"weight": "4"}
    w = World(
        conf,
        make_flavor("default").obj(),
        make_cq("afs").group(fq("default", cpu="8")).admission_mode().obj(),
        lq,
        make_wl("w").queue("afs-lq").request(cpu="4").reserve("afs", psa(cpu=("default", "4"))).obj(),
    )
    w.publish()
    assert "fairSharing" not in w.status(lq), "nothing before the first sample"
    assert w.mgr.core.sample_admission_fair_sharing(T0) == ["ns/afs-lq"]
    assert w.mgr.core.sample_admission_fair_sharing(T0 + timedelta(seconds=10)) == ["ns/afs-lq"]
    w.publish()
    assert w.status(lq)["fairSharing"] == {
        "weightedShare": 0,
        "admissionFairSharingStatus": {"consumedResources": {"cpu": "2"}, "lastUpdate": "2025-01-01T00:00:10Z"},
    }
    w.mgr.reporter.refresh(w.mgr.core)
    labels = {"name": "afs-lq", "namespace": "ns", "cluster_queue": "afs", "replica_role": ROLE}
    # 2 CPUs consumed, weighted 2 for cpu, over the LocalQueue's weight 4.
    assert m.WORKER_REGISTRY.get_sample_value("kueue_local_queue_admission_fair_sharing_usage", labels) == 1.0


def test_a_workload_event_republishes_only_its_queues_and_a_failed_write_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Queue status is recomputed for the queues the core reports changed (all of them once), as
    upstream's controllers reconcile the queues of each Workload event; a write that failed is
    computed and queued again at the next publish."""
    lq_b = make_lq("lq-b", "ns", "b")
    w = World(Configuration(), *objects(), lq_b)
    w.publish()
    assert w.status(CQ_B)["pendingWorkloads"] == 0
    w.add(make_wl("p").queue("lq-b").request(cpu="1").obj())
    core, computed = w.mgr.core, []
    status_of = core.cluster_queue_status
    monkeypatch.setattr(core, "cluster_queue_status", lambda name: computed.append(name) or status_of(name))
    w.mgr.queue_status.publish(T0)
    assert computed == ["b"]
    queued = w.mgr.queue_writes._queued
    assert sorted(queued) == ["clusterqueues/b", "localqueues/ns/lq-b"]
    for item in queued.pop("localqueues/ns/lq-b"):
        assert isinstance(item, StatusWrite) and item.on_failure is not None
        item.on_failure()
    w.flush()
    assert w.status(CQ_B)["pendingWorkloads"] == 1
    assert w.status(lq_b)["pendingWorkloads"] == 0  # its write failed
    w.publish()
    assert w.status(lq_b)["pendingWorkloads"] == 1
