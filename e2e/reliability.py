"""Reliability scenarios shared by e2e/test_reliability_*.py (small, CI) and e2e/soak.py (long).

Every scenario talks to the API with the admin kubeconfig through `webhook.kube.Kube` (JSON, no
kubectl subprocesses, so sampling is cheap) and returns figures; the tests assert on them and the
soak prints them. Invariants checked at every sample:

* no ClusterQueue above nominal + borrowing limit (or the cohort's total when unlimited) and no
  cohort above the sum of its members' nominal quota, both from `status.flavorsReservation` and
  recomputed from the Workloads' `status.admission` (QuotaReserved=True, not Finished);
* no Job with two Workloads, no Workload evicted or re-admitted (its admission never changes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from webhook import kube as k  # noqa: E402
from webhook.api import quantity  # noqa: E402

T = TypeVar("T")
V1B2 = "kueue.x-k8s.io/v1beta2"
LEASE_NS, LEASE_NAME = "kueue-system", "c1f6bfd2.kueue.x-k8s.io"
LEASE_PATH = k.object_path("coordination.k8s.io/v1", "leases", LEASE_NS, LEASE_NAME)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60, interval: float = 0.25) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except k.KubeError as exc:  # the API may be restarting under us
            last = None
            _ = exc
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def cond(obj: Mapping[str, Any], ctype: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return dict(c)
    return {}


def is_true(obj: Mapping[str, Any], ctype: str) -> bool:
    return cond(obj, ctype).get("status") == "True"


def admin(kubeconfig: Path | str) -> k.Kube:
    return k.Kube(str(kubeconfig))


# == quota set-up ====================================================================================
@dataclass
class Setup:
    """One flavor, `len(cqs)` ClusterQueues in one cohort, one LocalQueue per CQ in `namespace`."""

    suffix: str
    namespace: str
    flavor: str
    cohort: str
    cqs: dict[str, int]  # name -> nominal cpu
    borrowing: dict[str, int | None]
    lqs: dict[str, str]  # lq -> cq

    def cleanup(self, kube: k.Kube) -> None:
        for name in self.cqs:
            _delete(kube, k.object_path(V1B2, "clusterqueues", None, name))
        _delete(kube, k.object_path(V1B2, "resourceflavors", None, self.flavor))


def _delete(kube: k.Kube, path: str) -> None:
    with contextlib.suppress(k.KubeError):
        kube.request("DELETE", path)


def make_namespace(kube: k.Kube, labels: Mapping[str, str] | None = None, *, name: str | None = None) -> str:
    """A new namespace (`name`, or a fresh one: a MultiKueue worker needs the manager's names)."""
    name = name or f"rel-{uuid.uuid4().hex[:8]}"
    kube.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}},
    )
    return name


def delete_namespace(kube: k.Kube, name: str) -> None:
    _delete(kube, f"/api/v1/namespaces/{name}")


def make_setup(
    kube: k.Kube,
    namespace: str,
    *,
    cq_cpu: Iterable[int] = (4, 4),
    borrowing: Iterable[int | None] = (None, 2),
    admission_checks: Iterable[str] = (),
) -> Setup:
    """`admission_checks`: every ClusterQueue's (a MultiKueue manager's)."""
    sfx = uuid.uuid4().hex[:6]
    checks = {"admissionChecksStrategy": {"admissionChecks": [{"name": n} for n in admission_checks]}}
    flavor, cohort = f"rel-{sfx}", f"rel-cohort-{sfx}"
    cqs = {f"rel-{sfx}-{i}": cpu for i, cpu in enumerate(cq_cpu)}
    borrow = dict(zip(cqs, borrowing, strict=False))
    kube.create(
        k.object_path(V1B2, "resourceflavors", None),
        {"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": flavor}, "spec": {}},
    )
    lqs: dict[str, str] = {}
    for i, (name, cpu) in enumerate(cqs.items()):
        res: dict[str, Any] = {"name": "cpu", "nominalQuota": str(cpu)}
        if borrow.get(name) is not None:
            res["borrowingLimit"] = str(borrow[name])
        kube.create(
            k.object_path(V1B2, "clusterqueues", None),
            {
                "apiVersion": V1B2,
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "cohortName": cohort,
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {"coveredResources": ["cpu"], "flavors": [{"name": flavor, "resources": [res]}]}
                    ],
                    **(checks if admission_checks else {}),
                },
            },
        )
        lq = f"lq-{i}"
        kube.create(
            k.object_path(V1B2, "localqueues", namespace),
            {
                "apiVersion": V1B2,
                "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": namespace},
                "spec": {"clusterQueue": name},
            },
        )
        lqs[lq] = name
    setup = Setup(sfx, namespace, flavor, cohort, cqs, borrow, lqs)
    wait_for(
        "ClusterQueues active",
        lambda: all(is_true(kube.get(k.object_path(V1B2, "clusterqueues", None, n)) or {}, "Active") for n in cqs),
        timeout=30,
    )
    return setup


def job(namespace: str, name: str, queue: str, *, cpu: str = "1", run: str = "1s") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": run}},
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                },
            },
        },
    }


@dataclass
class Submitted:
    names: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)


def submit(
    kube: k.Kube, namespace: str, jobs: list[dict[str, Any]], *, threads: int = 16, retry_for: float = 0.0
) -> Submitted:
    """Create the Jobs as fast as the API takes them; with `retry_for`, retry failures (API restarts)."""
    out = Submitted()
    path = k.object_path("batch/v1", "jobs", namespace)

    def one(obj: dict[str, Any]) -> tuple[str, str | None, float]:
        deadline = time.monotonic() + retry_for
        while True:
            t0 = time.monotonic()
            try:
                kube.create(path, obj, timeout=60)
                return obj["metadata"]["name"], None, time.monotonic() - t0
            except k.Conflict:
                return obj["metadata"]["name"], None, time.monotonic() - t0  # a retried create that had landed
            except k.KubeError as exc:
                if time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                return obj["metadata"]["name"], f"{exc.status}: {exc}", time.monotonic() - t0

    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        for name, err, took in pool.map(one, jobs):
            out.latencies.append(took)
            if err is None:
                out.names.append(name)
            else:
                out.errors.append(f"{name}: {err}")
    out.seconds = time.monotonic() - started
    return out


# == invariants ======================================================================================
def _milli(value: Any) -> int:
    return quantity.amount("cpu", str(value))


def recomputed_usage(workloads: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Milli-cpu reserved per ClusterQueue, from the Workloads' status.admission. A deactivated
    Workload (`spec.active: false`) counts no more, though QuotaReserved stays True until its pods
    are gone: upstream's cache drops it at once (workload_controller.go `Update`, `!active`), so
    the next Workload may be admitted beside its last pods (a MultiKueue worker's copy the manager
    deactivated, e2e/reliability_multikueue.py)."""
    used: dict[str, int] = defaultdict(int)
    for wl in workloads:
        adm = (wl.get("status") or {}).get("admission")
        if not adm or not is_true(wl, "QuotaReserved") or is_true(wl, "Finished"):
            continue
        if (wl.get("spec") or {}).get("active", True) is False:
            continue
        for psa in adm.get("podSetAssignments") or ():
            used[adm["clusterQueue"]] += _milli((psa.get("resourceUsage") or {}).get("cpu", 0))
    return dict(used)


def status_usage(cq: Mapping[str, Any]) -> int:
    total = 0
    for fl in (cq.get("status") or {}).get("flavorsReservation") or ():
        for r in fl.get("resources") or ():
            if r.get("name") == "cpu":
                total += _milli(r.get("total", 0))
    return total


@dataclass
class Sampler:
    """Samples the invariants; `violations` lists every breach with the time it was seen.
    With `requeues_allowed` (a MultiKueue manager, which evicts and re-admits a lost worker's
    Workloads), evictions and re-admissions are counted in `requeued` instead."""

    kube: k.Kube
    setup: Setup
    requeues_allowed: bool = False
    requeued: set[str] = field(default_factory=set)
    samples: int = 0
    violations: list[str] = field(default_factory=list)
    admissions: dict[str, str] = field(default_factory=dict)  # workload -> its first admission (as text)
    peak_reserved: int = 0
    evidence: list[tuple[str, str, str]] = field(default_factory=list)  # reserved Workloads at the first breach

    def limits(self) -> dict[str, int]:
        total = sum(self.setup.cqs.values()) * 1000
        return {
            n: min(total, (cpu + (self.setup.borrowing.get(n) or 10**9)) * 1000) for n, cpu in self.setup.cqs.items()
        }

    def sample(self) -> None:
        try:
            wls, _ = self.kube.list(k.object_path(V1B2, "workloads", self.setup.namespace))
            cqs = {n: self.kube.get(k.object_path(V1B2, "clusterqueues", None, n)) or {} for n in self.setup.cqs}
        except k.KubeError:
            return  # the API is down (an outage scenario): nothing to sample
        self.samples += 1
        now = time.strftime("%H:%M:%S")
        limits, total = self.limits(), sum(self.setup.cqs.values()) * 1000
        for source, usage in (
            ("recomputed", recomputed_usage(wls)),
            ("status", {n: status_usage(c) for n, c in cqs.items()}),
        ):
            for name, used in usage.items():
                if name in limits and used > limits[name]:
                    self.violations.append(f"{now} {source}: {name} uses {used}m > limit {limits[name]}m")
            cohort = sum(v for n, v in usage.items() if n in limits)
            self.peak_reserved = max(self.peak_reserved, cohort)
            # CQ statuses are separate objects written one by one, so only the Workload list (one
            # consistent snapshot) can be summed across the cohort.
            if cohort > total and source == "recomputed":
                self.violations.append(f"{now} {source}: cohort uses {cohort}m > {total}m")
                if source == "recomputed" and not self.evidence:
                    self.evidence = sorted(
                        (
                            cond(w, "QuotaReserved").get("lastTransitionTime", ""),
                            w["metadata"]["name"],
                            (w.get("status") or {}).get("admission", {}).get("clusterQueue", ""),
                        )
                        for w in wls
                        if is_true(w, "QuotaReserved") and not is_true(w, "Finished")
                    )
        owners: dict[str, list[str]] = defaultdict(list)
        for wl in wls:
            meta = wl["metadata"]
            for ref in meta.get("ownerReferences") or ():
                owners[ref.get("uid", "")].append(meta["name"])
            adm = (wl.get("status") or {}).get("admission")
            if adm:
                text = repr(sorted(adm.items()))
                first = self.admissions.setdefault(meta["name"], text)
                if first != text and self.requeues_allowed:
                    self.requeued.add(meta["name"])
                elif first != text:
                    self.violations.append(f"{now} workload {meta['name']} re-admitted: {first} -> {text}")
            if cond(wl, "Evicted").get("status") == "True" or cond(wl, "Requeued").get("reason") in (
                "Preempted",
                "Evicted",
            ):
                if self.requeues_allowed:
                    self.requeued.add(meta["name"])
                else:
                    self.violations.append(f"{now} workload {meta['name']} evicted: {cond(wl, 'Evicted')}")
        for uid, names in owners.items():
            if len(names) > 1:
                self.violations.append(f"{now} owner {uid} has {len(names)} Workloads: {names}")


def final_check(kube: k.Kube, setup: Setup, names: Iterable[str], *, timeout: float = 120) -> dict[str, Any]:
    """Every Job finished with exactly one Workload, Finished=True; usage back to zero everywhere."""
    want = set(names)
    jobs_path = k.object_path("batch/v1", "jobs", setup.namespace)

    def all_done() -> bool:
        jobs, _ = kube.list(jobs_path)
        done = {j["metadata"]["name"] for j in jobs if (j.get("status") or {}).get("succeeded") == 1}
        return want <= done

    def all_finished() -> bool:
        wls, _ = kube.list(k.object_path(V1B2, "workloads", setup.namespace))
        owners = {
            ref.get("name", "")
            for wl in wls
            if is_true(wl, "Finished")
            for ref in wl["metadata"].get("ownerReferences") or ()
        }
        return want <= owners

    try:
        wait_for(f"{len(want)} Jobs to succeed", all_done, timeout=timeout, interval=1.0)
        # The Job reconciler writes Finished on its own pass, after the Job controller's Complete: a
        # Workload not yet Finished right after its Job succeeded is no problem, one still not
        # Finished after this wait is reported below.
        with contextlib.suppress(AssertionError):
            wait_for("their Workloads to be Finished", all_finished, timeout=30, interval=1.0)
    finally:
        jobs, _ = kube.list(jobs_path)
    wls, _ = kube.list(k.object_path(V1B2, "workloads", setup.namespace))
    by_owner: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for wl in wls:
        for ref in wl["metadata"].get("ownerReferences") or ():
            by_owner[ref.get("name", "")].append(wl)
    problems = []
    for j in jobs:
        name = j["metadata"]["name"]
        if name not in want:
            continue
        mine = by_owner.get(name, [])
        if len(mine) != 1:
            problems.append(f"job {name}: {len(mine)} workloads")
        elif not is_true(mine[0], "Finished"):
            problems.append(f"job {name}: workload not Finished")
        if (j.get("status") or {}).get("failed"):
            problems.append(f"job {name}: failed pods {(j.get('status') or {}).get('failed')}")
    missing = want - {j["metadata"]["name"] for j in jobs}
    problems += [f"job {n} lost" for n in sorted(missing)]

    def zero() -> bool:
        cqs = [kube.get(k.object_path(V1B2, "clusterqueues", None, n)) or {} for n in setup.cqs]
        return all(status_usage(c) == 0 for c in cqs) and not recomputed_usage(
            kube.list(k.object_path(V1B2, "workloads", setup.namespace))[0]
        )

    try:
        wait_for("usage back to 0", zero, timeout=30)
    except AssertionError as exc:
        problems.append(str(exc))
    return {"jobs": len(want), "workloads": len(wls), "problems": problems}


# == processes =======================================================================================
def lease_holder(kube: k.Kube) -> tuple[str, int | None]:
    lease = kube.get(LEASE_PATH) or {}
    holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
    parts = holder.rsplit("_", 2)
    if len(parts) == 3 and parts[0] == socket.gethostname() and parts[1].isdigit():
        return holder, int(parts[1])
    return holder, None


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    """Child processes of pid, whichever of its threads started them."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def worker_pids(serve_pid: int) -> list[int]:
    return [p for p in children(serve_pid) if b"worker" in _cmdline(p)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


REPLICA_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
integrations:
  frameworks: ["batch/job", "pod"]
leaderElection:
  leaseDuration: {lease}s
  renewDeadline: {renew}s
  retryPeriod: {retry}s
health:
  healthProbeBindAddress: "0"
"""


@dataclass
class Replica:
    """One `python -m webhook serve` (with its worker) started here, in its own session."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(
        cls,
        name: str,
        directory: Path,
        *,
        cert_dir: Path,
        kubeconfig: Path,
        port: int | None = None,
        lease: float = 15,
        renew: float = 10,
        retry: float = 2,
    ) -> Replica:
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / f"{name}-config.yaml"
        config.write_text(REPLICA_CONFIG.format(lease=lease, renew=renew, retry=retry))
        if port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
        log_path = directory / f"{name}.log"
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "webhook",
                    "serve",
                    "--cert-dir",
                    str(cert_dir),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--config",
                    str(config),
                    "--kubeconfig",
                    str(kubeconfig),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        replica = cls(name, port, proc, log_path)
        ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
        wait_for(f"replica {name} ready", lambda: replica.ready(ctx), timeout=60, interval=0.3)
        return replica

    def ready(self, ctx: ssl.SSLContext) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"replica {self.name} exited with {self.proc.returncode}; see {self.log}")
        import urllib.request

        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/readyz", context=ctx, timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def workers(self) -> list[int]:
        return worker_pids(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass


def worker_restarts(log: Path) -> int:
    """How often the supervisor restarted a worker that exited on its own (crash-loop detector)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return 0
    return text.count('"worker process exited; restarting"')


def log_errors(log: Path, since: int = 0) -> list[str]:
    """Tracebacks and error lines logged after byte offset `since`."""
    try:
        data = log.read_bytes()[since:].decode(errors="replace")
    except OSError:
        return []
    return [ln[:400] for ln in data.splitlines() if '"level":"error"' in ln or "Traceback" in ln]


# == scenarios (CI sizes in the tests, long sizes in e2e/soak.py) =====================================
class Background:
    """Runs `fn` every `interval` s in a thread until stopped."""

    def __init__(self, fn: Callable[[], None], interval: float) -> None:
        import threading

        self._fn, self._interval = fn, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._fn()
            self._stop.wait(self._interval)

    def __enter__(self) -> Background:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def failover(
    kube: k.Kube,
    workdir: Path,
    *,
    cert_dir: Path,
    kubeconfig: Path,
    port: int | None,
    jobs: int = 100,
    kills: int = 4,
    lease: float = 4,
    renew: float = 3,
    retry: float = 1,
    run: str = "1s",
    cq_cpu: tuple[int, ...] = (4, 4),
    timeout: float = 120,
) -> dict[str, Any]:
    """Two replicas on one lease; SIGKILL the lease holder's worker `kills` times while `jobs` Jobs run."""
    import threading

    replicas = [
        Replica.start(
            "replica-a",
            workdir,
            cert_dir=cert_dir,
            kubeconfig=kubeconfig,
            port=port,
            lease=lease,
            renew=renew,
            retry=retry,
        ),
        Replica.start(
            "replica-b", workdir, cert_dir=cert_dir, kubeconfig=kubeconfig, lease=lease, renew=renew, retry=retry
        ),
    ]
    ns = make_namespace(kube)
    setup = make_setup(kube, ns, cq_cpu=cq_cpu, borrowing=(None, 2) + (None,) * (len(cq_cpu) - 2))
    sampler = Sampler(kube, setup)
    takeovers: list[float] = []
    try:

        def ours() -> tuple[str, int] | None:
            holder, pid = lease_holder(kube)
            return (holder, pid) if pid is not None and any(pid in r.workers() for r in replicas) else None

        wait_for("a replica's worker to hold the lease", ours, timeout=lease * 3 + 20)
        queues = list(setup.lqs)
        objs = [job(ns, f"fo-{i:05d}", queues[i % len(queues)], run=run) for i in range(jobs)]
        result: dict[str, Submitted] = {}
        submitter = threading.Thread(target=lambda: result.setdefault("s", submit(kube, ns, objs)), daemon=True)
        with Background(sampler.sample, 0.5):
            submitter.start()
            for _ in range(kills):
                time.sleep(retry * 2)
                holder, pid = wait_for("a lease holder", ours, timeout=lease * 3 + 20)
                killed_at = time.monotonic()
                os.kill(pid, signal.SIGKILL)
                wait_for(
                    "a new lease holder",
                    lambda old=holder: (h := ours()) is not None and h[0] != old,  # type: ignore[misc]
                    timeout=lease * 3 + 20,
                    interval=0.05,
                )
                takeovers.append(time.monotonic() - killed_at)
            submitter.join(timeout=timeout)
            final = final_check(kube, setup, [o["metadata"]["name"] for o in objs], timeout=timeout)
        sampler.sample()
        restarts = sum(worker_restarts(r.log) for r in replicas)
        errors = [e for r in replicas for e in log_errors(r.log)]
    finally:
        for r in replicas:
            r.stop()
        setup.cleanup(kube)
        delete_namespace(kube, ns)
    sub = result.get("s", Submitted())
    return {
        "jobs": jobs,
        "submit_errors": sub.errors,
        "takeover_s": takeovers,
        "samples": sampler.samples,
        "violations": sampler.violations,
        "problems": final["problems"],
        "peak_reserved_m": sampler.peak_reserved,
        "worker_restarts": restarts,
        "log_errors": errors,
        "lease_s": lease,
        "retry_s": retry,
        "evidence": sampler.evidence,
    }


def process_tree_rss_mb(pid: int) -> dict[str, float]:
    """RSS of `serve` and of its worker child, in MB."""
    out = {"serve": rss_kb(pid) / 1024, "worker": 0.0}
    for child in worker_pids(pid):
        out["worker"] += rss_kb(child) / 1024
    return out


def load(
    kube: k.Kube,
    *,
    n: int = 300,
    server_pid: int,
    timeout: float = 180,
    threads: int = 32,
    cq_cpu: tuple[int, ...] = (32, 32),
    hostile: Any = None,
) -> dict[str, Any]:
    """`n` Jobs created as fast as the API takes them; every one admitted and finished. `hostile`
    (e.g. `hostile.against_stack(stack)`) runs beside the submissions."""
    ns = make_namespace(kube)
    setup = make_setup(kube, ns, cq_cpu=cq_cpu, borrowing=(None,) * len(cq_cpu))
    sampler = Sampler(kube, setup)
    before = process_tree_rss_mb(server_pid)
    peak = dict(before)

    def sample() -> None:
        sampler.sample()
        for key, value in process_tree_rss_mb(server_pid).items():
            peak[key] = max(peak[key], value)

    queues = list(setup.lqs)
    objs = [job(ns, f"load-{i:05d}", queues[i % len(queues)], run="1s") for i in range(n)]
    try:
        with Background(sample, 1.0), hostile or contextlib.nullcontext():
            sub = submit(kube, ns, objs, threads=threads)
            try:
                final = final_check(kube, setup, sub.names, timeout=timeout)
            except AssertionError as exc:  # not all finished in time: a problem, and the figures so far still count
                final = {"problems": [str(exc)]}
    finally:
        setup.cleanup(kube)
        delete_namespace(kube, ns)
    lat = sorted(sub.latencies) or [0.0]
    return {
        "jobs": n,
        "created": len(sub.names),
        "submit_errors": sub.errors[:20],
        "submit_seconds": round(sub.seconds, 1),
        "create_p50_ms": round(lat[len(lat) // 2] * 1000),
        "create_max_ms": round(lat[-1] * 1000),
        "webhook_timeouts": sum("timeout" in e or "deadline" in e for e in sub.errors),
        "samples": sampler.samples,
        "violations": sampler.violations,
        "problems": final["problems"],
        "rss_before_mb": {k2: round(v) for k2, v in before.items()},
        "rss_peak_mb": {k2: round(v) for k2, v in peak.items()},
        "hostile_sent": dict(hostile.sent) if hostile is not None else {},
    }


def outages(
    kube: k.Kube,
    cluster: Any,
    workdir: Path,
    *,
    cert_dir: Path,
    kubeconfig: Path,
    port: int | None,
    jobs: int = 150,
    worker_kills: int = 3,
    apiserver_restarts: int = 2,
    pause_s: float = 8.0,
    lease: float = 4,
    renew: float = 3,
    retry: float = 1,
    run: str = "2s",
    timeout: float = 180,
) -> dict[str, Any]:
    """One replica (its own lease timings) while `jobs` Jobs run: SIGKILL its worker `worker_kills`
    times, restart kube-apiserver `apiserver_restarts` times (etcd kept), then SIGSTOP the worker
    for `pause_s` (past the lease) and resume it. Job creation retries through the API outages."""
    import threading

    replica = Replica.start(
        "outages", workdir, cert_dir=cert_dir, kubeconfig=kubeconfig, port=port, lease=lease, renew=renew, retry=retry
    )
    ns = make_namespace(kube)
    setup = make_setup(kube, ns, cq_cpu=(4, 4), borrowing=(None, 2))
    sampler = Sampler(kube, setup)
    fig: dict[str, Any] = {"worker_recovery_s": [], "apiserver_down_s": [], "pause_s": pause_s}

    def holder_pid() -> int | None:
        _, pid = lease_holder(kube)
        return pid if pid is not None and pid in replica.workers() else None

    def wait_holder(old: int | None = None) -> int:
        return wait_for(
            "the worker to hold the lease",
            lambda: (p := holder_pid()) is not None and p != old and p,  # type: ignore[return-value]
            timeout=lease * 3 + 60,
            interval=0.05,
        )

    try:
        wait_holder()
        queues = list(setup.lqs)
        objs = [job(ns, f"out-{i:05d}", queues[i % len(queues)], run=run) for i in range(jobs)]
        result: dict[str, Submitted] = {}
        submitter = threading.Thread(
            target=lambda: result.setdefault("s", submit(kube, ns, objs, threads=4, retry_for=timeout)), daemon=True
        )
        with Background(sampler.sample, 0.5):
            submitter.start()
            for _ in range(worker_kills):
                time.sleep(retry * 2)
                pid = wait_holder()
                killed = time.monotonic()
                os.kill(pid, signal.SIGKILL)
                wait_holder(old=pid)
                fig["worker_recovery_s"].append(round(time.monotonic() - killed, 2))
            for _ in range(apiserver_restarts):
                time.sleep(retry * 2)
                fig["apiserver_down_s"].append(round(cluster.restart("kube-apiserver"), 2))
            time.sleep(retry * 2)
            pid = wait_holder()
            os.kill(pid, signal.SIGSTOP)
            time.sleep(pause_s)
            os.kill(pid, signal.SIGCONT)
            resumed = time.monotonic()
            wait_for("a lease holder after the pause", holder_pid, timeout=lease * 3 + 60, interval=0.05)
            fig["after_pause_holder_s"] = round(time.monotonic() - resumed, 2)
            submitter.join(timeout=timeout)
            final = final_check(kube, setup, [o["metadata"]["name"] for o in objs], timeout=timeout)
        sampler.sample()
        text = replica.log.read_text(errors="replace")
        fig["relists"] = text.count('"watch expired, relisting"')
        fig["watch_failures"] = text.count('"list/watch failed"')
        fig["dropped_write_batches"] = text.count('"leader lease not held; dropping writes and stopping"')
        fig["worker_restarts"] = worker_restarts(replica.log)
        fig["tracebacks"] = [ln[:400] for ln in text.splitlines() if "Traceback" in ln]
    finally:
        replica.stop()
        setup.cleanup(kube)
        delete_namespace(kube, ns)
    sub = result.get("s", Submitted())
    return {
        **fig,
        "jobs": jobs,
        "submit_errors": sub.errors,
        "samples": sampler.samples,
        "violations": sampler.violations,
        "problems": final["problems"],
        "peak_reserved_m": sampler.peak_reserved,
    }
