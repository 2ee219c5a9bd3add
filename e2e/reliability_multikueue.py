"""MultiKueue's lost worker, shared by e2e/test_reliability_multikueue.py (small, CI) and
`python e2e/soak.py --only multikueue` (1,000 Jobs).

Jobs flow through the manager of e2e/multicluster.py's three clusters (one ClusterQueue each; the
manager's quota is the workers' together, with the MultiKueue check; 1 cpu per Job). Mid-flow
worker1's kube-apiserver is SIGKILLed (its etcd, controllers, kwok and our server keep running, and
nothing on worker1 moves without it), kept down until the manager has re-dispatched every Workload it
had on worker1, or `2 * workerLostTimeout + 60 s` passed, then started again. Measured from the kill:
the manager's MultiKueueCluster `Active=False`; each lost Workload given up (evicted once
workerLostTimeout passed) and re-dispatched (admitted on worker2: after its turn in the manager's
queue, where an evicted Workload goes to the back, upstream's default requeuing timestamp); the
reconnection; every Job finished.

Checked with reliability.py's `Sampler` on every cluster (no ClusterQueue above its quota, no Job
with two Workloads; evictions and re-admissions are MultiKueue's re-dispatch, so counted, not refused) and its `final_check` on the manager (every Job succeeded, one Workload each,
Finished, usage back to 0); and here:

* no Job active on both workers at one sample (an unfinished remote Job or a live pod on each), except
  a lost Workload's Job in the moments after worker1 is back: the manager re-dispatched it while it
  could not reach worker1 (as upstream's, whose eviction clears `clusterName` and resets the check to
  Pending, so the Workload is nominated to the reachable worker), and worker1's copy ran on out of its
  reach; once worker1 answers again the manager keeps the copy admitted first and deletes the other.
  Those Jobs are counted with how long both copies were seen, and must be down to one within
  `CONVERGE_S` of the reconnection;
* afterwards no remote Workload or Job of the run left on a worker, and the workers' usage 0.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import reliability as rel
from multicluster import MEMBERS, MULTIKUEUE_CONFIG, Member, MultiClusterSystem, connect_workers

from webhook import kube as k

MANAGER, WORKER1, WORKER2 = MEMBERS
V1B2 = rel.V1B2
#: kwok completes a Job's pod this long after it runs unless the Job says otherwise (reliability.job does).
POD_RUN_S = 2.0
#: After worker1 is reconnected, how long a lost Workload's two copies may both be seen active.
CONVERGE_S = 30.0


def config(worker_lost_timeout_s: float) -> str:
    """The Configuration of the three clusters: upstream e2e's MultiKueue one, a short workerLostTimeout."""
    return MULTIKUEUE_CONFIG + f"multiKueue:\n  workerLostTimeout: {int(worker_lost_timeout_s)}s\n"


def _finished(wl: Mapping[str, Any]) -> bool:
    return rel.is_true(wl, "Finished")


def _cluster_name(wl: Mapping[str, Any]) -> str:
    return str((wl.get("status") or {}).get("clusterName") or "")


@dataclass
class TwoWorkers:
    """Samples the workers' Jobs and pods of the run: which Jobs are active on each, and any active
    on both at once (a worker whose API is down is not sampled)."""

    kubes: Mapping[str, k.Kube]
    namespace: str
    samples: int = 0
    at_once: dict[str, list[float]] = field(default_factory=dict)  # Job -> [first, last] sample seen on both
    ran_on: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def active(self, kube: k.Kube) -> tuple[set[str], set[str]]:
        """(Jobs unfinished there, Jobs with a pod that ran there); raises KubeError when down."""
        jobs, _ = kube.list(k.object_path("batch/v1", "jobs", self.namespace))
        pods, _ = kube.list(k.object_path("v1", "pods", self.namespace))
        active = {
            j["metadata"]["name"]
            for j in jobs
            if not j["metadata"].get("deletionTimestamp")
            and not (rel.is_true(j, "Complete") or rel.is_true(j, "Failed"))
        }
        ran: set[str] = set()
        for pod in pods:
            job = pod["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name")
            if not job:
                continue
            ran.add(job)
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and not pod["metadata"].get(
                "deletionTimestamp"
            ):
                active.add(job)
        return active, ran

    def sample(self) -> None:
        seen: dict[str, set[str]] = {}
        for name, kube in self.kubes.items():
            try:
                seen[name], ran = self.active(kube)
            except k.KubeError:
                continue
            for job in ran:
                self.ran_on[job].add(name)
        if len(seen) < 2:
            return
        self.samples += 1
        now = time.monotonic()
        for job in set.intersection(*seen.values()):
            self.at_once.setdefault(job, [now, now])[1] = now


def _spread(values: list[float]) -> dict[str, float | int | None]:
    vs = sorted(values)
    return {
        "n": len(vs),
        "min": round(vs[0], 1) if vs else None,
        "median": round(vs[len(vs) // 2], 1) if vs else None,
        "max": round(vs[-1], 1) if vs else None,
    }


def _cluster_active(manager: k.Kube, name: str) -> str:
    obj = manager.get(k.object_path(V1B2, "multikueueclusters", None, name)) or {}
    return str(rel.cond(obj, "Active").get("status") or "")


def _leftovers(kube: k.Kube, setup: rel.Setup) -> list[str]:
    """Remote Workloads or Jobs of the run still on a worker, or quota still in use there."""
    wls, _ = kube.list(k.object_path(V1B2, "workloads", setup.namespace))
    jobs, _ = kube.list(k.object_path("batch/v1", "jobs", setup.namespace))
    cqs = [kube.get(k.object_path(V1B2, "clusterqueues", None, n)) or {} for n in setup.cqs]
    out = [f"{len(wls)} workloads left"] if wls else []
    out += [f"{len(jobs)} jobs left"] if jobs else []
    used = sum(rel.status_usage(cq) for cq in cqs)
    return out + ([f"{used}m cpu still reserved"] if used else [])


def _emptied(kube: k.Kube, setup: rel.Setup, timeout: float = 120) -> bool:
    try:
        rel.wait_for("the run's objects gone from a worker", lambda: not _leftovers(kube, setup), timeout)
    except AssertionError:
        return False
    return True


@dataclass
class Lost:
    """The Workloads the manager had on worker1 when it was killed, and when (seconds after the kill)
    the manager gave each up (evicted it: its check went Retry past workerLostTimeout) and re-dispatched
    it (admitted on worker2); one may instead finish on worker1 after its return."""

    killed: float = 0.0
    reconnected: float | None = None
    names: set[str] = field(default_factory=set)
    jobs: set[str] = field(default_factory=set)  # the Jobs owning `names`
    given_up: dict[str, float] = field(default_factory=dict)
    redispatched: dict[str, float] = field(default_factory=dict)
    finished_elsewhere: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, wls: list[dict[str, Any]]) -> None:
        at = time.monotonic() - self.killed
        with self.lock:
            for w in wls:
                name = w["metadata"]["name"]
                if name not in self.names:
                    continue
                if name not in self.given_up and (rel.is_true(w, "Evicted") or _cluster_name(w) != WORKER1.name):
                    self.given_up[name] = at
                if name not in self.redispatched and _cluster_name(w) == WORKER2.name:
                    self.redispatched[name] = at
                if _finished(w) and _cluster_name(w) != WORKER2.name:
                    self.finished_elsewhere.add(name)

    def figures(self) -> dict[str, Any]:
        with self.lock:
            return {
                "lost_workloads": len(self.names),
                "given_up_after_kill_s": _spread(list(self.given_up.values())),
                "redispatched_to_worker2_after_kill_s": _spread(list(self.redispatched.values())),
                "finished_on_worker1_after_its_return": len(self.finished_elsewhere - self.redispatched.keys()),
            }


def _at_once(pair: TwoWorkers, lost: Lost) -> dict[str, Any]:
    """The Jobs seen active on both workers: a lost one converged after the reconnection (with how
    long both copies were seen), or a violation."""
    converged: dict[str, float] = {}
    violations: list[str] = []
    for job, (first, last) in sorted(pair.at_once.items()):
        if job in lost.jobs and lost.reconnected is not None and last <= lost.reconnected + CONVERGE_S:
            converged[job] = round(last - first, 1)
        else:
            since_kill = round(first - lost.killed, 1) if lost.killed else None
            violations.append(
                f"{job}: active on both workers from {since_kill} s after the kill for {last - first:.1f} s"
            )
    return {"on_both_workers_at_once": violations[:20], "lost_copies_converged_after_return_s": converged}


def _outage(
    system: MultiClusterSystem,
    manager: k.Kube,
    wl_path: str,
    worker_lost_timeout_s: float,
    lost: Lost,
    fig: dict[str, Any],
) -> None:
    """Kill worker1's kube-apiserver, watch the manager give its Workloads up (until all are, or
    `2 * workerLostTimeout + 60 s`), start it again and wait for the manager to reconnect; the
    timings go into `fig`, the Workloads lost into `lost` (observed on until the end of the run)."""
    worker1 = system.systems[WORKER1].cluster
    lost.killed = time.monotonic()
    worker1.stop_component("kube-apiserver", kill=True)
    try:
        wls, _ = manager.list(wl_path)
        fig["finished_at_kill"] = sum(_finished(w) for w in wls)
        with lost.lock:
            on_worker1 = [w for w in wls if _cluster_name(w) == WORKER1.name and not _finished(w)]
            lost.names = {w["metadata"]["name"] for w in on_worker1}
            lost.jobs = {ref["name"] for w in on_worker1 for ref in w["metadata"].get("ownerReferences") or []}
        inactive_at: float | None = None
        deadline = lost.killed + 2 * worker_lost_timeout_s + 60
        while time.monotonic() < deadline and (inactive_at is None or len(lost.given_up) < len(lost.names)):
            if inactive_at is None and _cluster_active(manager, WORKER1.name) == "False":
                inactive_at = time.monotonic()
            lost.observe(manager.list(wl_path)[0])
            time.sleep(0.5)
        fig["inactive_after_s"] = round(inactive_at - lost.killed, 1) if inactive_at is not None else None
        fig["redispatched_while_down"] = len(lost.redispatched)
    finally:
        restarted = time.monotonic()
        worker1.start_component("kube-apiserver")
        fig["apiserver_down_s"] = round(time.monotonic() - lost.killed, 1)
    rel.wait_for("worker1 Active again", lambda: _cluster_active(manager, WORKER1.name) == "True", timeout=400)
    lost.reconnected = time.monotonic()
    fig["reconnected_after_restart_s"] = round(time.monotonic() - restarted, 1)
    print(f"multikueue soak: outage over: {json.dumps(fig, default=str)}", file=sys.stderr, flush=True)


def lost_worker(
    system: MultiClusterSystem,
    *,
    jobs: int,
    worker_lost_timeout_s: float,
    worker_cpu: int = 8,
    run: str = "2s",
    kill_after: float = 0.25,
    timeout: float = 900,
) -> dict[str, Any]:
    """`jobs` Jobs through the manager; worker1's kube-apiserver killed once `kill_after` of them
    finished (and the manager has Workloads on worker1), kept down past `worker_lost_timeout_s` (the
    value in the clusters' Configuration), started again. Figures and problems, as the module says."""
    started = time.monotonic()
    check = f"mk-soak-{uuid.uuid4().hex[:6]}"
    manager = connect_workers(system, check)
    workers: dict[Member, k.Kube] = {m: k.Kube(str(system.systems[m].cluster.kubeconfig)) for m in (WORKER1, WORKER2)}
    ns = rel.make_namespace(manager)
    setups: dict[Member, rel.Setup] = {}
    for member, kube in workers.items():
        rel.make_namespace(kube, name=ns)
        setups[member] = rel.make_setup(kube, ns, cq_cpu=(worker_cpu,), borrowing=(None,))
    setups[MANAGER] = rel.make_setup(
        manager, ns, cq_cpu=(2 * worker_cpu,), borrowing=(None,), admission_checks=(check,)
    )
    # Evictions are MultiKueue's own moves: the manager's of a lost worker's Workloads, and a worker's
    # of a stale copy the manager deactivates there once it is back (counted, not refused).
    samplers = {
        m: rel.Sampler(kube, setups[m], requeues_allowed=True) for m, kube in {MANAGER: manager, **workers}.items()
    }
    pair = TwoWorkers({m.name: kube for m, kube in workers.items()}, ns)
    lost = Lost()
    wl_path = k.object_path(V1B2, "workloads", ns)

    def sample() -> None:
        for sampler in samplers.values():
            sampler.sample()
        pair.sample()
        if lost.names:
            lost.observe(manager.list(wl_path)[0])

    queue = next(iter(setups[MANAGER].lqs))
    objs = [rel.job(ns, f"mk-{i:05d}", queue, run=run) for i in range(jobs)]
    result: dict[str, rel.Submitted] = {}
    submitter = threading.Thread(
        target=lambda: result.setdefault("s", rel.submit(manager, ns, objs, threads=8, retry_for=timeout)), daemon=True
    )
    fig: dict[str, Any] = {"jobs": jobs, "worker_lost_timeout_s": worker_lost_timeout_s, "worker_cpu": worker_cpu}
    problems: list[str] = []
    with rel.Background(sample, 1.0):
        submitter.start()

        def ready_to_kill() -> bool:
            wls, _ = manager.list(wl_path)
            done = sum(_finished(w) for w in wls)
            on_worker1 = sum(_cluster_name(w) == WORKER1.name and not _finished(w) for w in wls)
            return done >= kill_after * jobs and on_worker1 >= 2

        try:
            rel.wait_for("Jobs finished and Workloads running on worker1", ready_to_kill, timeout=timeout, interval=1)
            killed = time.monotonic()
            _outage(system, manager, wl_path, worker_lost_timeout_s, lost, fig)
            left = max(60.0, timeout - (time.monotonic() - started))
            submitter.join(timeout=left)
            final = rel.final_check(manager, setups[MANAGER], [o["metadata"]["name"] for o in objs], timeout=left)
            problems += final["problems"]
            fig["all_finished_after_kill_s"] = round(time.monotonic() - killed, 1)
        except AssertionError as exc:
            problems.append(str(exc))
    for member, kube in workers.items():
        if not _emptied(kube, setups[member]):
            problems += [f"{member.name}: {p}" for p in _leftovers(kube, setups[member])]
    sample()
    sub = result.get("s", rel.Submitted())
    log = system.manager.logs().read_text(errors="replace")
    return {
        **fig,
        **lost.figures(),
        "submit_errors": sub.errors[:20],
        "samples": {m.name: s.samples for m, s in samplers.items()} | {"both workers": pair.samples},
        "violations": [f"{m.name}: {v}" for m, s in samplers.items() for v in s.violations],
        "requeued": {m.name: len(s.requeued) for m, s in samplers.items()},
        **_at_once(pair, lost),
        "ran_on_both_workers": sorted(j for j, on in pair.ran_on.items() if len(on) > 1)[:50],
        "peak_reserved_m": {m.name: s.peak_reserved for m, s in samplers.items()},
        "manager_tracebacks": [ln[:300] for ln in log.splitlines() if "Traceback" in ln][:10],
        "problems": problems,
        "seconds": round(time.monotonic() - started, 1),
    }
