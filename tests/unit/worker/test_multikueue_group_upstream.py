"""Upstream v0.19.2 `pkg/controller/admissionchecks/multikueue/workload_test.go`, case by case under
upstream's names, against the pure MultiKueue workload plan (`admissionchecks.multikueue.group`).

Each `TestWlReconcile` case starts from upstream's objects (the manager's Workload and Job, each
worker's Workload and Job, which workers are connected), plans one reconcile with `plan_group`, and
carries the plan out on those objects with `World.run` the way the reconciler will: removals
delete the remote Job only if it carries our origin, then the remote Workload; `SyncJob` checks
the remote Job's origin (a foreign one fails the reconcile), then creates it or mirrors its status
through the batch/v1 Job adapter; local steps patch the manager's Workload; a failed create is
reported after the other steps. Then it compares what a user sees, as upstream does: every
Workload and Job on the manager and the workers (lastTransitionTimes ignored, empty equal to
absent, nominatedClusterNames sorted), the Events, the requeue and the error.

Upstream runs each case with gate WorkloadRequestUseMergePatch off and on; that only changes how
its writes are sent, so each case runs once.

Ported: 41 of the 43 `TestWlReconcile` cases (the five OrchestratedPreemption ones with gate
MultiKueueOrchestratedPreemption on), `TestNominateAndSynchronizeWorkers_MoreCases`,
`TestReconcileGroup_SyncDeferred_ShortRequeue` and both admitted-metric tests (as the
`ReportAdmitted` step). Not ported:
* `missing workload` and `failing to read from a worker`: nothing to plan; they test the reads
  around the plan (a NotFound Workload, a failing remote GET), which the reconciler owns.
* `TestOrphanedRemoteWorkloadCleanedAfterReconnect`, `TestConfigHandlerUpdate`,
  `TestConfigHandlerDelete`: garbage collection and event handlers, not part of the plan.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from webhook.api import constants as c
from webhook.api.multikueue import ORIGIN_LABEL, PREEMPTION_GATE
from webhook.config.types import MULTIKUEUE_DISPATCHER_ALL_AT_ONCE
from webhook.worker import preemption_gates
from webhook.worker.admissionchecks import provisioning
from webhook.worker.admissionchecks.multikueue import group as g
from webhook.worker.integrations.multikueue import job as mkjob

NS = "ns"
ORIGIN = "multikueue"  # upstream's defaultOrigin
TIMEOUT = timedelta(minutes=5)  # upstream's defaultWorkerLostTimeout
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
EARLIER = NOW - timedelta(seconds=1)
MUCH_EARLIER = NOW - timedelta(hours=1)
JOB_GVK = "batch/v1, Kind=Job"
CONTROLLERS = {"ac1": c.MULTIKUEUE_CONTROLLER}
CONTEXT = g.GroupContext(
    now=NOW, check="ac1", owner=g.Owner(JOB_GVK, JOB_GVK, "job1"), origin=ORIGIN, worker_lost_timeout=TIMEOUT
)
PENDING, READY, RETRY, REJECTED = (
    c.CHECK_STATE_PENDING,
    c.CHECK_STATE_READY,
    c.CHECK_STATE_RETRY,
    c.CHECK_STATE_REJECTED,
)
ADMITTED_ON_1 = 'The workload was admitted on "worker1"'

Obj = dict[str, Any]


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# == builders (upstream's MakeWorkload and MakeJob wrappers, as dicts) ===============================


class W:
    """`utiltestingapi.MakeWorkload("wl1", ns)`: one pod set `main` of one pod."""

    def __init__(self) -> None:
        self.wl: Obj = {
            "apiVersion": c.V1BETA2,
            "kind": "Workload",
            "metadata": {"name": "wl1", "namespace": NS},
            "spec": {"podSets": [_pod_set("main")]},
        }

    def clone(self) -> W:
        out = W()
        out.wl = copy.deepcopy(self.wl)
        return out

    def _status(self) -> Obj:
        return self.wl.setdefault("status", {})  # type: ignore[no-any-return]

    def check(self, state: str, message: str = "", ltt: datetime = NOW) -> W:
        self._status()["admissionChecks"] = [
            {"name": "ac1", "state": state, "message": message, "lastTransitionTime": _stamp(ltt)}
        ]
        return self

    def owner(self, kind: str = "Job", api_version: str = "batch/v1", name: str = "job1") -> W:
        ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": "uid1", "controller": True}
        self.wl["metadata"]["ownerReferences"] = [ref]
        return self

    def reserve(self, at: datetime = NOW) -> W:
        """`ReserveQuotaAt(MakeAdmission("q1"), at)`: replaces the conditions."""
        self._status()["admission"] = {"clusterQueue": "q1", "podSetAssignments": [{"name": "main", "count": 1}]}
        self._status()["conditions"] = [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "AdmittedByTest",
                "message": "Admitted by ClusterQueue q1",
                "lastTransitionTime": _stamp(at),
            }
        ]
        return self

    def cond(self, ctype: str, reason: str = "", message: str = "", status: str = "True", at: datetime = NOW) -> W:
        conds = [x for x in self._status().get("conditions", []) if x["type"] != ctype]
        conds.append(
            {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": _stamp(at)}
        )
        self._status()["conditions"] = conds
        return self

    def admitted(self) -> W:
        return self.cond("Admitted", "Admitted")

    def evicted(self) -> W:
        """`EvictedAt(now)`."""
        return self.cond("Evicted", "ByTest", "Evicted by test")

    def cluster(self, name: str) -> W:
        self._status()["clusterName"] = name
        return self

    def nominated(self, *names: str) -> W:
        self._status()["nominatedClusterNames"] = list(names)
        return self

    def origin(self) -> W:
        self.wl["metadata"].setdefault("labels", {})[ORIGIN_LABEL] = ORIGIN
        return self

    def annotation(self, key: str, value: str) -> W:
        self.wl["metadata"].setdefault("annotations", {})[key] = value
        return self

    def pod_sets(self, name: str) -> W:
        self.wl["spec"]["podSets"] = [_pod_set(name)]
        return self

    def mk_gate(self, position: str | None = None, at: datetime = NOW) -> W:
        """`PreemptionGates(MultiKueuePreemptionGate)`, with its `PreemptionGateStates` entry at `position`."""
        self.wl["spec"]["preemptionGates"] = [{"name": PREEMPTION_GATE}]
        if position is not None:
            state = {"name": PREEMPTION_GATE, "position": position, "lastTransitionTime": _stamp(at)}
            self._status()["preemptionGates"] = [state]
        return self

    def blocked(self, at: datetime) -> W:
        """The worker's `BlockedOnPreemptionGates=True` signal, since `at`."""
        return self.cond("BlockedOnPreemptionGates", "PreemptionGated", "Preemption gate closed", at=at)

    def priority(self, name: str, value: int) -> W:
        self.wl["spec"]["priorityClassRef"] = {"group": c.GROUP, "kind": "WorkloadPriorityClass", "name": name}
        self.wl["spec"]["priority"] = value
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self.wl)


def _pod_set(name: str) -> Obj:
    return {
        "name": name,
        "count": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "resources": {"requests": {}}}]}},
    }


class J:
    """`testingjob.MakeJob("job1", ns).Suspend(false)`."""

    def __init__(self) -> None:
        self.job: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "job1", "namespace": NS},
            "spec": {
                "parallelism": 1,
                "suspend": False,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}},
            },
        }

    def managed(self) -> J:
        self.job["spec"]["managedBy"] = c.MULTIKUEUE_CONTROLLER
        return self

    def remote(self, origin: str = ORIGIN) -> J:
        """On a worker: `PrebuiltWorkloadLabel("wl1")`, `Label(MultiKueueOriginLabel, origin)`."""
        self.job["metadata"]["labels"] = {c.PREBUILT_WORKLOAD_LABEL: "wl1", ORIGIN_LABEL: origin}
        return self

    def active(self, n: int) -> J:
        self.job.setdefault("status", {})["active"] = n
        return self

    def complete(self) -> J:
        self.job.setdefault("status", {})["conditions"] = [{"type": "Complete", "status": "True"}]
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self.job)


# == the world a plan is carried out in ===========================================================


@dataclass
class World:
    """The manager's Workload and Job and each worker's Workload and Job, plus what the reconcile
    reported. `connected[c]` False: the worker is reconnecting (lost since `lost_since[c]`)."""

    local: Obj | None
    job: Obj | None
    workloads: dict[str, Obj | None]
    jobs: dict[str, Obj | None]
    connected: dict[str, bool]
    lost_since: dict[str, datetime] = field(default_factory=dict)
    deleted: bool = False
    dispatcher: str = MULTIKUEUE_DISPATCHER_ALL_AT_ONCE
    elastic: bool = False
    orchestrated_preemption: bool = False
    create_fails: frozenset[str] = frozenset()
    events: list[tuple[str, str]] = field(default_factory=list)
    admitted: list[str] = field(default_factory=list)
    requeue: timedelta | None = None
    errors: list[str] = field(default_factory=list)
    _deferred: bool = field(default=False, init=False)

    def context(self) -> g.GroupContext:
        assert self.local is not None
        state = g.multikueue_check(self.local, CONTROLLERS)
        owner = g.resolve_owner(self.local, {JOB_GVK})
        managed = mkjob.ADAPTER.managed(self.job) if owner.adapter and self.job is not None else (True, "")
        return g.GroupContext(
            now=NOW,
            check=str(state["name"]) if state else None,
            owner=owner,
            origin=ORIGIN,
            worker_lost_timeout=TIMEOUT,
            managed=managed,
            unavailable=tuple(name for name in sorted(self.connected) if not self.connected[name]),
            lost_since=self.lost_since,
            dispatcher=self.dispatcher,
            elastic_enabled=self.elastic,
            deleted=self.deleted,
            orchestrated_preemption=self.orchestrated_preemption,
        )

    def remotes(self) -> dict[str, Obj | None]:
        return {name: copy.deepcopy(self.workloads[name]) for name in sorted(self.connected) if self.connected[name]}

    def reconcile(self) -> g.GroupPlan:
        assert self.local is not None
        plan = g.plan_group(copy.deepcopy(self.local), self.remotes(), self.context())
        self.run(plan)
        return plan

    def run(self, plan: g.GroupPlan) -> None:
        deferred = False
        for step in plan.steps:
            match step:
                case g.RemoveRemote(cluster=cluster, workload=workload):
                    remote_job = self.jobs.get(cluster)
                    if remote_job is not None and remote_job["metadata"].get("labels", {}).get(ORIGIN_LABEL) == ORIGIN:
                        self.jobs[cluster] = None
                    if workload is not None:
                        self.workloads[cluster] = None
                case g.CreateClone(cluster=cluster, body=body):
                    if cluster in self.create_fails:
                        self.errors.append(f"create on {cluster} failed")
                    else:
                        self.workloads[cluster] = copy.deepcopy(body)
                case g.UpdateRemoteSpec(cluster=cluster, workload=workload):
                    self.workloads[cluster] = copy.deepcopy(workload)
                case g.SetRemoteDeactivation(cluster=cluster, message=message):
                    remote = self.workloads[cluster]
                    assert remote is not None
                    conds = remote.setdefault("status", {}).setdefault("conditions", [])
                    conds.append(
                        {"type": "DeactivationTarget", "status": "True", "reason": g.EVICTED_ON_MANAGER_CLUSTER}
                    )
                    conds[-1]["message"] = message
                case g.OpenRemotePreemptionGate(cluster=cluster):
                    remote = self.workloads[cluster]
                    assert remote is not None
                    preemption_gates.open_gate(remote.setdefault("status", {}), remote, PREEMPTION_GATE, NOW)
                case g.SyncJob(cluster=cluster):
                    if not self._sync_job(cluster):
                        return
                    deferred = deferred or self._deferred
                case g.SetCheck(check=check, event=event):
                    assert self.local is not None
                    checks = self.local.setdefault("status", {}).setdefault("admissionChecks", [])
                    provisioning.set_check_state(checks, check, NOW)
                    if event is not None:
                        self.events.append((event.type, event.message))
                case g.SetClusterName(cluster=cluster):
                    assert self.local is not None
                    self.local["status"]["clusterName"] = cluster
                case g.SetNomination(clusters=clusters):
                    assert self.local is not None
                    if clusters:
                        self.local["status"]["nominatedClusterNames"] = list(clusters)
                    else:
                        self.local["status"].pop("nominatedClusterNames", None)
                case g.SetDelayedTopologyReady(pod_sets=pod_sets):
                    assert self.local is not None
                    for psa in self.local["status"]["admission"]["podSetAssignments"]:
                        if psa["name"] in pod_sets:
                            psa["delayedTopologyRequest"] = "Ready"
                case g.ReportAdmitted(cluster=cluster):
                    self.admitted.append(cluster)
                case g.Finish(reason=reason, message=message):
                    assert self.local is not None
                    self.local["status"]["conditions"].append(
                        {"type": "Finished", "status": "True", "reason": reason, "message": message}
                    )
                case g.RequeueAfter(after=after, if_deferred=if_deferred):
                    self.requeue = if_deferred if deferred and if_deferred is not None else after
                case g.Fail(message=message):
                    self.errors.append(message)
                    return

    def _sync_job(self, cluster: str) -> bool:
        """`ValidateRemoteObjectOwnership`, then `SyncJob` through the Job adapter."""
        assert self.job is not None
        remote = self.jobs.get(cluster)
        self._deferred = False
        if remote is not None and remote["metadata"].get("labels", {}).get(ORIGIN_LABEL) != ORIGIN:
            self.errors.append("remote object is not owned by MultiKueue")
            return False
        if remote is None:
            self.jobs[cluster] = mkjob.ADAPTER.remote_body(self.job, "wl1", ORIGIN, identifier_annotations=False)
            return True
        status, self._deferred = mkjob.ADAPTER.status_update(self.job, remote, now=NOW)
        if status is not None:
            self.job["status"] = status
        return True


def _normal(obj: Any) -> Any:
    """Upstream's comparison options: no lastTransitionTime, empty equals absent, sorted nominations."""
    if isinstance(obj, Mapping):
        out = {k: _normal(v) for k, v in obj.items() if k != "lastTransitionTime"}
        if isinstance(out.get("nominatedClusterNames"), list):
            out["nominatedClusterNames"] = sorted(out["nominatedClusterNames"])
        return {k: v for k, v in out.items() if v not in ({}, [], None, "")}
    if isinstance(obj, list):
        return [_normal(v) for v in obj]
    return obj


# == TestWlReconcile ==============================================================================


@dataclass
class Case:
    local: Obj | None = None
    job: Obj | None = None
    worker1: Obj | None = None
    worker1_job: Obj | None = None
    worker1_connected: bool = True
    worker1_lost_since: datetime | None = None
    second_worker: bool = False
    worker2: Obj | None = None
    worker2_job: Obj | None = None
    worker2_connected: bool = True
    worker2_lost_since: datetime | None = None
    worker2_create_fails: bool = False
    deleted: bool = False
    elastic: bool = False
    orchestrated_preemption: bool = False
    want_local: Obj | None = None
    want_job: Obj | None = None
    want_worker1: Obj | None = None
    want_worker1_job: Obj | None = None
    want_worker2: Obj | None = None
    want_worker2_job: Obj | None = None
    want_events: list[tuple[str, str]] = field(default_factory=list)
    want_requeue: timedelta | None = None
    want_error: str | None = None

    def world(self) -> World:
        workers = ["worker1", "worker2"] if self.second_worker else ["worker1"]
        lost = {"worker1": self.worker1_lost_since, "worker2": self.worker2_lost_since}
        return World(
            local=copy.deepcopy(self.local),
            job=copy.deepcopy(self.job),
            workloads={"worker1": copy.deepcopy(self.worker1), "worker2": copy.deepcopy(self.worker2)},
            jobs={"worker1": copy.deepcopy(self.worker1_job), "worker2": copy.deepcopy(self.worker2_job)},
            connected={
                name: self.worker1_connected if name == "worker1" else self.worker2_connected for name in workers
            },
            lost_since={name: t for name, t in lost.items() if t is not None},
            deleted=self.deleted,
            elastic=self.elastic,
            orchestrated_preemption=self.orchestrated_preemption,
            create_fails=frozenset({"worker2"}) if self.worker2_create_fails else frozenset(),
        )


def _job_wl() -> W:
    return W().owner()


MANAGED_JOB = J().managed().obj()
REMOTE_JOB = J().remote().obj()
PENDING_RESERVED = _job_wl().check(PENDING).reserve()
READY_ON_1 = _job_wl().check(READY, ADMITTED_ON_1).reserve().cluster("worker1")
REMOTE_ADMITTED = W().reserve().origin().admitted()
OUT_OF_SYNC = "The prebuilt workload is out of sync with its user job"
RESET_MESSAGE = (
    'Remote workload on worker cluster "worker1" is out of sync with its user job, resetting for re-dispatch, '
    'Previously: "Ready"'
)


def _elastic() -> W:
    return _job_wl().annotation(c.ELASTIC_JOB, "true")


ELASTIC_READY = _elastic().check(READY, ADMITTED_ON_1).reserve().cluster("worker1")


def _gated(worker1: W, worker2: W, *, opened: str | None = None, requeue: timedelta | None = TIMEOUT) -> Case:
    """A pending Workload already copied to both workers with gate MultiKueueOrchestratedPreemption on:
    the manager opens the gate of `opened` (None: neither), nothing else changes."""
    want = {"worker1": worker1.clone(), "worker2": worker2.clone()}
    if opened is not None:
        want[opened].mk_gate("Open")
    return Case(
        orchestrated_preemption=True,
        local=PENDING_RESERVED.obj(),
        job=MANAGED_JOB,
        worker1=worker1.obj(),
        second_worker=True,
        worker2=worker2.obj(),
        want_local=_job_wl().check(PENDING).reserve().nominated("worker1", "worker2").obj(),
        want_job=MANAGED_JOB,
        want_worker1=want["worker1"].obj(),
        want_worker2=want["worker2"].obj(),
        want_requeue=requeue,
    )


CASES: dict[str, Case] = {
    "deleted regular workload is removed from the cache": Case(
        local=W().owner().obj(),
        deleted=True,
        job=J().obj(),
        want_job=J().obj(),
    ),
    "deleted MultiKueue workload is deleted from cache - the worker will be deleted by GC": Case(
        local=_job_wl().check(REJECTED).obj(),
        deleted=True,
        job=MANAGED_JOB,
        worker1=W().origin().obj(),
        want_job=MANAGED_JOB,
        want_worker1=W().origin().obj(),
    ),
    "missing workload (in deleted workload cache)": Case(
        local=_job_wl().check(PENDING).reserve().obj(),
        deleted=True,
        worker1=W().origin().reserve().obj(),
        worker1_job=REMOTE_JOB,
    ),
    "missing workload (in deleted workload cache), reconnecting worker, GC handles cleanup": Case(
        local=_job_wl().check(PENDING).reserve().obj(),
        deleted=True,
        worker1=W().origin().reserve().obj(),
        worker1_job=REMOTE_JOB,
        second_worker=True,
        worker2_connected=False,
        worker2_lost_since=NOW,
    ),
    "missing workload (in deleted workload cache), no remote objects": Case(
        local=_job_wl().check(PENDING).reserve().obj(),
        deleted=True,
    ),
    "unmanaged wl (no ac) is ignored": Case(local=W().obj(), want_local=W().obj()),
    "unmanaged wl (no parent) is rejected": Case(
        local=W().check(PENDING).obj(),
        want_local=W().check(REJECTED, 'No multikueue adapter found, Previously: "Pending"').obj(),
    ),
    "unmanaged wl (owned by pod) is rejected": Case(
        local=W().owner("Pod", "v1", "pod1").check(PENDING).obj(),
        want_local=W()
        .owner("Pod", "v1", "pod1")
        .check(REJECTED, 'No multikueue adapter found for owner kind "/v1, Kind=Pod", Previously: "Pending"')
        .obj(),
    ),
    "unmanaged wl (job not managed by multikueue) is rejected": Case(
        local=_job_wl().check(PENDING).obj(),
        job=J().obj(),
        want_job=J().obj(),
        want_local=_job_wl()
        .check(
            REJECTED,
            'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "", '
            'Previously: "Pending"',
        )
        .obj(),
    ),
    "reconnecting clients are skipped": Case(
        local=_job_wl().check(PENDING).obj(),
        job=MANAGED_JOB,
        second_worker=True,
        worker2_connected=False,
        worker2_lost_since=NOW,
        want_job=MANAGED_JOB,
        want_local=_job_wl().check(PENDING).obj(),
        want_requeue=TIMEOUT,
    ),
    "wl without reservation, reconnecting worker with remote workload, requeues for cleanup": Case(
        local=_job_wl().check(PENDING).obj(),
        job=MANAGED_JOB,
        second_worker=True,
        worker2_connected=False,
        worker2_lost_since=NOW,
        worker2=W().origin().obj(),
        want_job=MANAGED_JOB,
        want_local=_job_wl().check(PENDING).obj(),
        want_worker2=W().origin().obj(),
        want_requeue=TIMEOUT,
    ),
    "wl without reservation, clears the workload objects": Case(
        local=_job_wl().check(PENDING).obj(),
        job=MANAGED_JOB,
        worker1=W().origin().obj(),
        want_job=MANAGED_JOB,
        want_local=_job_wl().check(PENDING).obj(),
    ),
    "wl with reservation, creates remote workloads, worker2 fails": Case(
        local=PENDING_RESERVED.obj(),
        job=MANAGED_JOB,
        second_worker=True,
        worker2_create_fails=True,
        want_job=MANAGED_JOB,
        want_local=_job_wl().check(PENDING).reserve().nominated("worker1", "worker2").obj(),
        want_worker1=W().origin().obj(),
        want_error="create on worker2 failed",
    ),
    "wl with reservation, creates missing workloads": Case(
        local=PENDING_RESERVED.obj(),
        job=MANAGED_JOB,
        worker1=W().origin().obj(),
        second_worker=True,
        want_job=MANAGED_JOB,
        want_local=_job_wl().check(PENDING).reserve().nominated("worker1", "worker2").obj(),
        want_worker1=W().origin().obj(),
        want_worker2=W().origin().obj(),
    ),
    "remote wl with reservation but not admitted - other workers not deleted": Case(
        local=PENDING_RESERVED.obj(),
        job=MANAGED_JOB,
        worker1=W().reserve().origin().obj(),
        second_worker=True,
        worker2=W().origin().obj(),
        want_local=_job_wl().check(PENDING).reserve().nominated("worker1", "worker2").obj(),
        want_job=MANAGED_JOB,
        want_worker1=W().origin().reserve().obj(),
        want_worker2=W().origin().obj(),
    ),
    "remote wl admitted - other workers deleted": Case(
        local=PENDING_RESERVED.obj(),
        job=MANAGED_JOB,
        worker1=REMOTE_ADMITTED.obj(),
        second_worker=True,
        worker2=W().origin().obj(),
        want_local=READY_ON_1.obj(),
        want_job=MANAGED_JOB,
        want_worker1=REMOTE_ADMITTED.obj(),
        want_worker1_job=REMOTE_JOB,
        want_events=[("Normal", ADMITTED_ON_1)],
        want_requeue=TIMEOUT,
    ),
    "admitting remote is kept when another worker's remote is out of sync": Case(
        local=READY_ON_1.obj(),
        job=MANAGED_JOB,
        worker1=REMOTE_ADMITTED.obj(),
        second_worker=True,
        worker2=W().origin().pod_sets("different-name").obj(),
        want_local=READY_ON_1.obj(),
        want_job=MANAGED_JOB,
        want_worker1=REMOTE_ADMITTED.obj(),
        want_worker1_job=REMOTE_JOB,
        want_events=[("Normal", ADMITTED_ON_1)],
        want_requeue=TIMEOUT,
    ),
    "worker-lost grace applies when the admitting worker is unreachable even if another worker's remote is out of sync": Case(
        worker1_connected=False,
        worker1_lost_since=NOW,
        job=MANAGED_JOB,
        local=_job_wl().check(READY, ADMITTED_ON_1, ltt=NOW - TIMEOUT * 3 / 2).cluster("worker1").reserve().obj(),
        second_worker=True,
        worker2=W().origin().pod_sets("different-name").obj(),
        want_job=MANAGED_JOB,
        want_local=READY_ON_1.obj(),
        want_requeue=TIMEOUT,
    ),
    "handle workload evicted on manager cluster": Case(
        local=_job_wl().check(READY, ADMITTED_ON_1).reserve().cluster("worker1").evicted().obj(),
        job=J().managed().active(1).obj(),
        worker1_job=J().remote().active(0).obj(),
        worker1=W()
        .origin()
        .reserve()
        .cond("Evicted", "DeactivatedDueToEvictedOnManagerCluster", "Evicted on manager: Evicted by test")
        .obj(),
        second_worker=True,
        worker2=W().obj(),
        want_local=_job_wl().check(READY, ADMITTED_ON_1).reserve().cluster("worker1").evicted().obj(),
        want_job=J().managed().active(0).obj(),
        want_worker1=W()
        .origin()
        .reserve()
        .cond("Evicted", "DeactivatedDueToEvictedOnManagerCluster", "Evicted on manager: Evicted by test")
        .obj(),
        want_worker1_job=J().remote().active(0).obj(),  # upstream's zero `active` is omitted
        want_worker2=W().obj(),
    ),
    "handle workload evicted on worker cluster": Case(
        local=READY_ON_1.obj(),
        job=J().managed().active(1).obj(),
        worker1_job=J().remote().active(1).obj(),
        worker1=W()
        .origin()
        .reserve()
        .cond("Evicted", "DeactivatedDueToEvictedOnWorkerCluster", "Evicted on worker: Evicted by test")
        .evicted()
        .obj(),
        second_worker=True,
        worker2=W().obj(),
        want_local=_job_wl()
        .check(RETRY, 'Workload evicted on worker cluster: "worker1", resetting for re-admission. Previously: "Ready"')
        .reserve()
        .cluster("worker1")
        .obj(),
        want_job=J().managed().active(1).obj(),
        want_worker1=W().origin().reserve().evicted().obj(),
        want_worker1_job=J().remote().active(1).obj(),
        want_worker2=W().obj(),
        want_events=[
            ("Normal", 'Workload evicted on worker cluster: "worker1", resetting for re-admission. Previously: "Ready"')
        ],
    ),
    "remote wl finished OutOfSync: reset admission check to Retry instead of finishing the local workload": Case(
        local=READY_ON_1.obj(),
        job=J().managed().active(1).obj(),
        worker1_job=REMOTE_JOB,
        worker1=W().origin().reserve().cond("Finished", "OutOfSync", OUT_OF_SYNC).obj(),
        want_local=_job_wl().check(RETRY, RESET_MESSAGE).reserve().cluster("worker1").obj(),
        want_job=J().managed().active(1).obj(),
        want_worker1=W().origin().reserve().cond("Finished", "OutOfSync", OUT_OF_SYNC).obj(),
        want_worker1_job=REMOTE_JOB,
        want_events=[("Warning", RESET_MESSAGE)],
    ),
    "remote wl finished OutOfSync but admission check already Retry: intercept without finishing (idempotent re-reconcile)": Case(
        local=_job_wl().check(RETRY, RESET_MESSAGE).reserve().cluster("worker1").obj(),
        job=J().managed().active(1).obj(),
        worker1_job=REMOTE_JOB,
        worker1=W().origin().reserve().cond("Finished", "OutOfSync", OUT_OF_SYNC).obj(),
        want_local=_job_wl().check(RETRY, RESET_MESSAGE).reserve().cluster("worker1").obj(),
        want_job=J().managed().active(1).obj(),
        want_worker1=W().origin().reserve().cond("Finished", "OutOfSync", OUT_OF_SYNC).obj(),
        want_worker1_job=REMOTE_JOB,
    ),
    "remote wl is finished, but the remote controller object must be owned before SyncJob": Case(
        local=_job_wl().check(READY, ADMITTED_ON_1).reserve().obj(),
        job=MANAGED_JOB,
        worker1_job=J().remote("other-origin").complete().obj(),
        worker1=W().origin().reserve().cond("Finished", "ByTest", "by test").obj(),
        want_local=_job_wl().check(READY, ADMITTED_ON_1).reserve().obj(),
        want_job=MANAGED_JOB,
        want_worker1=W().origin().reserve().cond("Finished", "ByTest", "by test").obj(),
        want_worker1_job=J().remote("other-origin").complete().obj(),
        want_error="remote object is not owned by MultiKueue",
    ),
    "remote wl is finished, the local workload and Job are marked completed ": Case(
        local=_job_wl().check(READY, ADMITTED_ON_1).reserve().obj(),
        job=MANAGED_JOB,
        worker1_job=J().remote().complete().obj(),
        worker1=W().origin().reserve().cond("Finished", "ByTest", "by test").obj(),
        want_local=_job_wl().check(READY, ADMITTED_ON_1).reserve().cond("Finished", "ByTest", "by test").obj(),
        want_job=J().managed().complete().obj(),
        want_worker1=W().origin().reserve().cond("Finished", "ByTest", "by test").obj(),
        want_worker1_job=J().remote().complete().obj(),
    ),
    "the local Job is marked finished, the remote objects are removed": Case(
        local=_job_wl().check(PENDING, ADMITTED_ON_1).reserve().cond("Finished", "ByTest", "by test").obj(),
        job=J().managed().complete().obj(),
        worker1_job=J().remote().complete().obj(),
        worker1=W().origin().reserve().cond("Finished", "ByTest", "by test").obj(),
        want_local=_job_wl().check(PENDING, ADMITTED_ON_1).reserve().cond("Finished", "ByTest", "by test").obj(),
        want_job=J().managed().complete().obj(),
    ),
    "the local workload admission check stays Ready if the reservation was lost less than WorkerLostTimeout ago": Case(
        worker1_connected=False,
        worker1_lost_since=NOW - TIMEOUT / 2,
        job=MANAGED_JOB,
        local=READY_ON_1.obj(),
        want_job=MANAGED_JOB,
        want_local=READY_ON_1.obj(),
        want_requeue=TIMEOUT / 2,
    ),
    "the local workload's admission check is set to Retry if the reservation was lost more than WorkerLostTimeout ago": Case(
        worker1_connected=False,
        worker1_lost_since=NOW - TIMEOUT * 3 / 2,
        job=MANAGED_JOB,
        local=READY_ON_1.obj(),
        want_job=MANAGED_JOB,
        want_local=_job_wl()
        .check(RETRY, 'Admitting remote lost, Previously: "Ready"')
        .reserve()
        .cluster("worker1")
        .obj(),
    ),
    "the local workload is NOT evicted when the admitting cluster is only reconnecting, even if the admission check transition time is old": Case(
        worker1_connected=False,
        worker1_lost_since=NOW,
        job=MANAGED_JOB,
        local=_job_wl().check(READY, ADMITTED_ON_1, ltt=NOW - TIMEOUT * 3 / 2).cluster("worker1").reserve().obj(),
        want_job=MANAGED_JOB,
        want_local=READY_ON_1.obj(),
        want_requeue=TIMEOUT,
    ),
    "the local workload IS retried when the reservation stays lost past the WorkerLostTimeout": Case(
        worker1_connected=False,
        worker1_lost_since=NOW - TIMEOUT * 3 / 2,
        job=MANAGED_JOB,
        local=READY_ON_1.obj(),
        want_job=MANAGED_JOB,
        want_local=_job_wl()
        .check(RETRY, 'Admitting remote lost, Previously: "Ready"')
        .reserve()
        .cluster("worker1")
        .obj(),
    ),
    "the local workload is retried immediately when the admitting cluster is reachable but its remote workload is gone": Case(
        job=MANAGED_JOB,
        local=READY_ON_1.obj(),
        want_job=MANAGED_JOB,
        want_local=_job_wl()
        .check(RETRY, 'Admitting remote no longer exists, Previously: "Ready"')
        .reserve()
        .cluster("worker1")
        .obj(),
    ),
    "the local workload is retried when the admission check is Ready but no admitting cluster is recorded": Case(
        job=MANAGED_JOB,
        local=_job_wl().check(READY, ADMITTED_ON_1).reserve().obj(),
        want_job=MANAGED_JOB,
        want_local=_job_wl()
        .check(
            RETRY,
            "Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it, "
            'Previously: "Ready"',
        )
        .reserve()
        .obj(),
    ),
    "worker reconnects after the local workload is requeued, remote objects are deleted": Case(
        job=MANAGED_JOB,
        local=_job_wl().check(PENDING, "Requeued").obj(),
        want_job=MANAGED_JOB,
        want_local=_job_wl().check(PENDING, "Requeued").obj(),
        worker1=W().origin().reserve().obj(),
        worker1_job=REMOTE_JOB,
    ),
    "elastic job finished local workload via replacement is ignored": Case(
        elastic=True,
        local=ELASTIC_READY.clone().cond("Finished", "WorkloadSliceReplaced").obj(),
        job=MANAGED_JOB,
        worker1=W().origin().reserve(at=NOW - timedelta(hours=1)).obj(),
        worker1_job=REMOTE_JOB,
        second_worker=True,
        want_local=ELASTIC_READY.clone().cond("Finished", "WorkloadSliceReplaced").obj(),
        want_job=MANAGED_JOB,
        want_worker1=W().origin().reserve().obj(),
        want_worker1_job=REMOTE_JOB,
    ),
    "elastic job local workload without quota reservation": Case(
        elastic=True,
        local=_elastic().check(READY, ADMITTED_ON_1).cluster("worker1").obj(),
        job=MANAGED_JOB,
        worker1=W().origin().reserve(at=NOW - timedelta(hours=1)).obj(),
        worker1_job=REMOTE_JOB,
        second_worker=True,
        want_local=_elastic().check(READY, ADMITTED_ON_1).cluster("worker1").obj(),
        want_job=MANAGED_JOB,
    ),
    "elastic job local scaled-up workload slice without quota reservation": Case(
        elastic=True,
        local=_elastic()
        .annotation(c.WORKLOAD_SLICE_REPLACEMENT_FOR, "old-slice")
        .check(READY, ADMITTED_ON_1)
        .cluster("worker1")
        .obj(),
        job=MANAGED_JOB,
        worker1=W().origin().reserve(at=NOW - timedelta(hours=1)).obj(),
        worker1_job=REMOTE_JOB,
        second_worker=True,
        want_local=_elastic()
        .annotation(c.WORKLOAD_SLICE_REPLACEMENT_FOR, "old-slice")
        .check(READY, ADMITTED_ON_1)
        .cluster("worker1")
        .obj(),
        want_job=MANAGED_JOB,
        want_worker1=W().origin().reserve().obj(),
        want_worker1_job=REMOTE_JOB,
    ),
    "elastic job local workload out-of-sync other than scaled-down": Case(
        elastic=True,
        local=_elastic().pod_sets("different-name").check(READY, ADMITTED_ON_1).reserve().cluster("worker1").obj(),
        job=MANAGED_JOB,
        worker1=W().origin().reserve(at=NOW - timedelta(hours=1)).obj(),
        worker1_job=REMOTE_JOB,
        second_worker=True,
        want_local=_elastic()
        .pod_sets("different-name")
        .check(RETRY, 'Admitting remote no longer exists, Previously: "Ready"')
        .reserve()
        .cluster("worker1")
        .obj(),
        want_job=MANAGED_JOB,
    ),
    # gate MultiKueueOrchestratedPreemption
    "creating remote workloads with preemption gates": Case(
        orchestrated_preemption=True,
        local=PENDING_RESERVED.obj(),
        job=MANAGED_JOB,
        second_worker=True,
        want_local=_job_wl().check(PENDING).reserve().nominated("worker1", "worker2").obj(),
        want_job=MANAGED_JOB,
        want_worker1=W().origin().mk_gate().obj(),
        want_worker2=W().origin().mk_gate().obj(),
    ),
    "opening preemption gate for first workload requiring preemption": _gated(
        W().origin().mk_gate("Closed").blocked(NOW),
        W().origin().mk_gate("Closed").blocked(EARLIER),
        opened="worker2",
    ),
    "opening preemption gate for the second workload requiring preemption if timeout elapsed": _gated(
        W().origin().mk_gate("Open", MUCH_EARLIER),
        W().origin().mk_gate("Closed").blocked(EARLIER),
        opened="worker2",
    ),
    "not opening preemption gate for the second workload if timeout did not elapse": _gated(
        W().origin().mk_gate("Open", NOW),
        W().origin().mk_gate("Closed").blocked(EARLIER),
        requeue=TIMEOUT,  # the 5 minutes since worker1's gate opened
    ),
    "not opening preemption gate for the second workload if timeout elapsed but it does not require preemption": _gated(
        W().origin().mk_gate("Open", MUCH_EARLIER),
        W().origin().mk_gate("Closed"),
        requeue=None,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_wl_reconcile(name: str) -> None:
    """TestWlReconcile."""
    case = CASES[name]
    world = case.world()
    if world.local is not None:
        world.reconcile()
    if case.deleted:  # gone from the API: the plan must not write it
        assert _normal(world.local) == _normal(case.local)
    else:
        assert _normal(world.local) == _normal(case.want_local)
    assert _normal(world.job) == _normal(case.want_job)
    assert _normal(world.workloads["worker1"]) == _normal(case.want_worker1)
    assert _normal(world.jobs["worker1"]) == _normal(case.want_worker1_job)
    if case.second_worker:
        assert _normal(world.workloads["worker2"]) == _normal(case.want_worker2)
        assert _normal(world.jobs["worker2"]) == _normal(case.want_worker2_job)
    assert world.events == case.want_events
    assert world.requeue == case.want_requeue
    assert world.errors == ([case.want_error] if case.want_error else [])


# == TestNominateAndSynchronizeWorkers_MoreCases ==================================================

EXTERNAL = "external.com/mk-dispatcher"
REMOTES = tuple(f"remote{i}" for i in range(1, 10))
BOTH = ("remote1", "remote2")
NOMINATE_CASES: dict[
    str, tuple[str, dict[str, bool], tuple[str, ...], str, tuple[str, ...], tuple[str, ...] | None, bool]
] = {
    # name: (dispatcher, remotes (name → has a copy), nominated, clusterName,
    #        want created, want nominations written (None: not patched), want error)
    "AllClusters: clone to all remotes, nominates all": (
        MULTIKUEUE_DISPATCHER_ALL_AT_ONCE,
        dict.fromkeys(BOTH, False),
        (),
        "",
        BOTH,
        BOTH,
        False,
    ),
    "AllClusters: workloads already created on remotes, do not create again": (
        MULTIKUEUE_DISPATCHER_ALL_AT_ONCE,
        dict.fromkeys(BOTH, True),
        (),
        "",
        (),
        BOTH,
        False,
    ),
    "AllClusters: nominate all workers when called directly with ClusterName set": (
        MULTIKUEUE_DISPATCHER_ALL_AT_ONCE,
        dict.fromkeys(BOTH, False),
        (),
        "remote1",
        BOTH,
        BOTH,
        False,
    ),
    "AllClusters: same set in reversed order does not trigger unnecessary patch": (
        MULTIKUEUE_DISPATCHER_ALL_AT_ONCE,
        dict.fromkeys(BOTH, True),
        ("remote2", "remote1"),
        "",
        (),
        None,
        False,
    ),
    "External controller: no nominated workers, nothing created": (
        EXTERNAL,
        dict.fromkeys(REMOTES, False),
        (),
        "",
        (),
        None,
        False,
    ),
    "External controller: nominate remote1 and remote6": (
        EXTERNAL,
        dict.fromkeys(REMOTES, False),
        ("remote1", "remote6"),
        "",
        ("remote1", "remote6"),
        None,
        False,
    ),
    "External controller: nominate all remotes at once": (
        EXTERNAL,
        dict.fromkeys(REMOTES, False),
        REMOTES,
        "",
        REMOTES,
        None,
        False,
    ),
    "External controller: nominated worker cluster not yet connected": (
        EXTERNAL,
        {"remote1": False},
        BOTH,
        "",
        ("remote1",),
        None,
        True,
    ),
}


@pytest.mark.parametrize("name", list(NOMINATE_CASES))
def test_nominate_and_synchronize_workers(name: str) -> None:
    """TestNominateAndSynchronizeWorkers_MoreCases (`nominate` called directly, as upstream calls
    `nominateAndSynchronizeWorkers`): the copies created, the nominations written, and the error
    for a nominated worker without a client."""
    dispatcher, remotes, nominated, cluster, want_created, want_written, want_error = NOMINATE_CASES[name]
    local = W()
    if nominated:
        local.nominated(*nominated)
    if cluster:
        local.cluster(cluster)
    ctx = dataclasses.replace(CONTEXT, dispatcher=dispatcher)
    plan = g.GroupPlan()
    g.nominate(plan, local.obj(), {r: (W().origin().obj() if has else None) for r, has in remotes.items()}, ctx)
    assert [step.cluster for step in plan.steps if isinstance(step, g.CreateClone)] == list(want_created)
    written = [step.clusters for step in plan.steps if isinstance(step, g.SetNomination)]
    assert written == ([] if want_written is None else [want_written])
    fails = [step.message for step in plan.steps if isinstance(step, g.Fail)]
    assert fails == (["cluster remote2: no remote client for nominated cluster"] if want_error else [])


# == TestReconcileGroup_SyncDeferred_ShortRequeue and the admitted metric =========================


def test_reconcile_group_sync_deferred_short_requeue() -> None:
    """TestReconcileGroup_SyncDeferred_ShortRequeue: with the local Job still suspended the remote
    status waits, so the admitted Workload is looked at again after 2 s, not workerLostTimeout."""
    world = Case(
        local=READY_ON_1.obj(),
        job=J().managed().obj(),
        worker1=REMOTE_ADMITTED.obj(),
        worker1_job=J().remote().active(1).obj(),
    ).world()
    assert world.job is not None
    world.job["spec"]["suspend"] = True
    world.reconcile()
    assert world.requeue == g.SYNC_DEFERRED_REQUEUE == timedelta(seconds=2)
    assert world.job.get("status", {}).get("active") is None  # not copied while suspended


def _admitted_metric_world(state: str) -> World:
    """`setupAdmittedMetricTest`: one worker whose copy is admitted, the check in `state`."""
    return Case(
        local=_job_wl().check(state).reserve().obj(),
        job=J().managed().obj(),
        worker1=REMOTE_ADMITTED.obj(),
    ).world()


def test_admitted_metric_incremented_once_on_admission() -> None:
    """TestMultiKueueWorkloadAdmittedMetricIncrementedOnceOnAdmission."""
    world = _admitted_metric_world(PENDING)
    world.reconcile()
    assert world.admitted == ["worker1"]
    world.reconcile()
    assert world.admitted == ["worker1"]


@pytest.mark.parametrize("state", [RETRY, REJECTED])
def test_admitted_metric_not_incremented_on_retry_or_rejected(state: str) -> None:
    """TestMultiKueueWorkloadAdmittedMetricNotIncrementedOnRetryOrRejected."""
    world = _admitted_metric_world(state)
    for _ in range(2):
        world.reconcile()
        assert world.admitted == []


# == behaviours beyond upstream's table ===========================================================


def test_previously_suffix_and_truncation() -> None:
    """`updateACS`: the old state is appended as `, Previously: "<state>"` and the whole message is
    cut to 32 KiB with ` ...`."""
    world = Case(local=_job_wl().check(PENDING).obj(), job=J().obj()).world()
    assert world.job is not None
    world.job["spec"]["managedBy"] = "x" * 40000
    world.reconcile()
    assert world.local is not None
    message = world.local["status"]["admissionChecks"][0]["message"]
    assert len(message.encode()) == 32 * 1024 and message.endswith(" ...")
    assert message.startswith(
        'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "xxx'
    )
    short = g.truncate_condition_message("é" * 20000)  # cut on a character boundary
    assert short.endswith(" ...") and len(short.encode()) <= 32 * 1024


def test_changed_priority_updates_the_remote_in_place() -> None:
    """Step 5: a remote whose only difference is the WorkloadPriorityClass keeps running with the
    new priority (an in-place Update), instead of being deleted."""
    world = Case(
        local=PENDING_RESERVED.clone().priority("high", 100).obj(),
        job=MANAGED_JOB,
        worker1=W().origin().reserve().priority("low", 10).obj(),
    ).world()
    plan = world.reconcile()
    assert any(isinstance(step, g.UpdateRemoteSpec) for step in plan.steps)
    assert world.workloads["worker1"] is not None
    assert world.workloads["worker1"]["spec"]["priorityClassRef"]["name"] == "high"
    assert world.workloads["worker1"]["spec"]["priority"] == 100


def test_pod_priority_class_is_not_propagated() -> None:
    """`PriorityChanged` ignores Pod priority classes: the drifted remote is removed."""
    local = PENDING_RESERVED.obj()
    local["spec"]["priorityClassRef"] = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
    remote = W().origin().reserve().obj()
    assert g.priority_changed(local, remote) is False
    world = Case(local=local, job=MANAGED_JOB, worker1=remote).world()
    world.reconcile()
    # Removed as out of sync, then created again from the current spec by the nomination.
    assert world.workloads["worker1"] is not None
    assert world.workloads["worker1"]["spec"]["priorityClassRef"]["kind"] == "PriorityClass"
    assert "status" not in world.workloads["worker1"]


def test_elastic_scale_down_updates_the_remote_spec() -> None:
    """Step 5: a scaled-down elastic slice copies its spec to the remote in place."""
    local = _elastic().check(READY, ADMITTED_ON_1).reserve().cluster("worker1").obj()
    local["spec"]["podSets"][0]["count"] = 1
    remote = W().origin().reserve().admitted().obj()
    remote["spec"]["podSets"][0]["count"] = 3
    world = Case(local=local, job=MANAGED_JOB, worker1=remote, worker1_job=REMOTE_JOB, elastic=True).world()
    world.reconcile()
    assert world.workloads["worker1"] is not None
    assert world.workloads["worker1"]["spec"]["podSets"][0]["count"] == 1
    assert _normal(world.local) == _normal(local)


def test_spec_out_of_sync_ignores_preemption_gates_and_empty_fields() -> None:
    """`isRemoteSpecOutOfSync` ignores `preemptionGates` (each side manages its own) and, as
    `equality.Semantic`, empty versus absent."""
    local = W().obj()
    remote = W().obj()
    remote["spec"]["preemptionGates"] = [{"name": "kueue.x-k8s.io/multikueue"}]
    remote["spec"]["podSets"][0]["template"]["metadata"] = {}
    assert g.spec_out_of_sync(local, remote) is False
    remote["spec"]["podSets"][0]["count"] = 2
    assert g.spec_out_of_sync(local, remote) is True


def test_manager_eviction_deactivates_the_admitting_remote() -> None:
    """6b: the manager evicted the Workload while it still holds quota; the admitting remote is
    marked `DeactivationTarget=True`, `EvictedOnManagerCluster`, `Evicted on manager: <message>`,
    and the others are removed."""
    world = Case(
        local=READY_ON_1.clone().evicted().obj(),
        job=MANAGED_JOB,
        worker1=REMOTE_ADMITTED.obj(),
        worker1_job=REMOTE_JOB,
        second_worker=True,
        worker2=W().origin().obj(),
    ).world()
    world.reconcile()
    remote = world.workloads["worker1"]
    assert remote is not None
    assert remote["status"]["conditions"][-1] == {
        "type": "DeactivationTarget",
        "status": "True",
        "reason": "EvictedOnManagerCluster",
        "message": "Evicted on manager: Evicted by test",
    }
    assert world.workloads["worker2"] is None
    assert world.requeue is None and world.events == []


def test_admission_on_another_cluster_cannot_change_cluster_name() -> None:
    """`syncAdmittingRemoteState`: `status.clusterName` is immutable; a different admitting remote
    fails the reconcile with upstream's error and writes nothing locally."""
    local = _job_wl().check(PENDING).reserve().cluster("worker2").obj()
    world = Case(local=local, job=MANAGED_JOB, worker1=REMOTE_ADMITTED.obj()).world()
    world.reconcile()
    assert world.errors == ['attempting to change immutable ClusterName from "worker2" to "worker1"']
    assert _normal(world.local) == _normal(local)


def test_admission_marks_delayed_topology_ready_and_clears_nominations() -> None:
    """6b: pending delayed topology requests the worker placed turn Ready; the nominations go."""
    local = PENDING_RESERVED.clone().nominated("worker1", "worker2").obj()
    local["status"]["admission"]["podSetAssignments"][0]["delayedTopologyRequest"] = "Pending"
    remote = REMOTE_ADMITTED.obj()
    remote["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {"levels": ["h"], "domains": []}
    world = Case(local=local, job=MANAGED_JOB, worker1=remote).world()
    world.reconcile()
    assert world.local is not None
    assert world.local["status"]["admission"]["podSetAssignments"][0]["delayedTopologyRequest"] == "Ready"
    assert "nominatedClusterNames" not in world.local["status"]
    assert world.local["status"]["clusterName"] == "worker1"


def test_nomination_waits_for_the_other_checks() -> None:
    """`allNonMKAdmissionChecksReady`: no copies while another check is not Ready."""
    local = PENDING_RESERVED.obj()
    local["status"]["admissionChecks"].append({"name": "prov", "state": PENDING})
    world = Case(local=local, job=MANAGED_JOB).world()
    assert world.reconcile().steps == []
    local["status"]["admissionChecks"][1]["state"] = READY
    world = Case(local=local, job=MANAGED_JOB).world()
    world.reconcile()
    assert world.workloads["worker1"] is not None


def test_clone_for_create() -> None:
    """`cloneForCreate`: name, namespace, labels without `job-uid` plus the origin, annotations and
    the spec; no owners, finalizers or status."""
    local = _job_wl().reserve().annotation("a", "b").obj()
    local["metadata"]["labels"] = {c.JOB_UID_LABEL: "uid1", "x": "y"}
    local["metadata"]["finalizers"] = [c.RESOURCE_IN_USE_FINALIZER]
    clone = g.clone_for_create(local, "origin1")
    assert clone["metadata"] == {
        "name": "wl1",
        "namespace": NS,
        "labels": {"x": "y", ORIGIN_LABEL: "origin1"},
        "annotations": {"a": "b"},
    }
    assert clone["spec"] == local["spec"] and "status" not in clone


def test_best_match_by_condition_prefers_the_earliest() -> None:
    """`bestMatchByCondition`: the earliest True condition wins; False ones do not count."""
    remotes = {
        "a": W().cond("Admitted", at=NOW).obj(),
        "b": W().cond("Admitted", at=EARLIER).obj(),
        "c": W().cond("Admitted", status="False", at=EARLIER - timedelta(hours=1)).obj(),
        "d": None,
    }
    found = g.best_match_by_condition(remotes, "Admitted")
    assert found is not None and found[1] == "b"
    assert g.best_match_by_condition({"d": None}, "Admitted") is None


def test_multikueue_check_and_owner() -> None:
    """`GetMultiKueueAdmissionCheck` takes the first check of the MultiKueue controller; the adapter
    lookup prefers the job-owner annotations, then the controller reference."""
    wl = W().owner().obj()
    wl["status"] = {"admissionChecks": [{"name": "prov", "state": PENDING}, {"name": "mk", "state": READY}]}
    found = g.multikueue_check(wl, {"prov": "kueue.x-k8s.io/provisioning-request", "mk": c.MULTIKUEUE_CONTROLLER})
    assert found is not None and found["name"] == "mk"
    assert g.resolve_owner(wl, {JOB_GVK}) == g.Owner(JOB_GVK, JOB_GVK, "job1")
    wl["metadata"]["annotations"] = {c.JOB_OWNER_GVK_ANNOTATION: "x/v1, Kind=Y", c.JOB_OWNER_NAME_ANNOTATION: "y1"}
    assert g.resolve_owner(wl, {JOB_GVK, "x/v1, Kind=Y"}) == g.Owner("x/v1, Kind=Y", "x/v1, Kind=Y", "y1")
    assert g.resolve_owner(W().obj(), {JOB_GVK}) == g.Owner(None)


def test_check_update_keeps_pod_set_updates() -> None:
    """`SetAdmissionCheckState` writes the whole state upstream read: podSetUpdates stay."""
    local = PENDING_RESERVED.obj()
    updates = [{"name": "main", "labels": {"a": "b"}}]
    local["status"]["admissionChecks"][0]["podSetUpdates"] = updates
    world = Case(local=local, job=MANAGED_JOB, worker1=REMOTE_ADMITTED.obj()).world()
    world.reconcile()
    assert world.local is not None
    check = world.local["status"]["admissionChecks"][0]
    assert (check["state"], check["message"], check["podSetUpdates"]) == (READY, ADMITTED_ON_1, updates)


def test_a_remote_deactivating_for_a_manager_eviction_is_not_drift() -> None:
    """Its worker turns the remote inactive one write before it marks it Evicted: in between, the
    `active: false` is not spec drift, so the remote and its Job stay until step 4 syncs the Job's status
    (upstream multikueue/baseline "Should preempt ... (other workers)"). Any other difference still removes it."""
    remote = REMOTE_ADMITTED.obj()
    remote["spec"]["active"] = False
    world = Case(
        local=READY_ON_1.clone().evicted().obj(), job=MANAGED_JOB, worker1=remote, worker1_job=REMOTE_JOB
    ).world()
    world.reconcile()
    assert world.workloads["worker1"] is not None
    assert world.jobs["worker1"] is not None

    drifted = copy.deepcopy(remote)
    drifted["spec"]["podSets"][0]["count"] = 5
    world = Case(
        local=READY_ON_1.clone().evicted().obj(), job=MANAGED_JOB, worker1=drifted, worker1_job=REMOTE_JOB
    ).world()
    world.reconcile()
    assert world.workloads["worker1"] is None
