"""Webhook benchmark against upstream: Kueue's manager (cmd/kueue) vs our server, same reviews, TLS.

Brings up the local control plane (e2e/cluster.py), installs upstream's CRDs (a superset of
ours, which upstream's manager needs to start), a namespace `team-a` with LocalQueue `q`, and
runs side by side, each pinned to CPU 0 (the load process gets CPU 1, when there is one):

* upstream: the manager built by e2e/build-kueue.sh with webhooks on (batch/job, pod), leader
  election off, internal cert management off (it serves our cert dir), visibility server off.
  It insists on metrics certificates at the fixed path /etc/kueue/metrics/certs, so it runs in
  a private mount namespace (`unshare -m`) with an overlay on /etc holding them; nothing on
  the host's /etc changes. Needs root or CAP_SYS_ADMIN; otherwise the upstream side is skipped.
* ours: `python -m webhook serve --kubeconfig ...` (with `--no-worker` when the CLI has it).

A separate load process (bench/bench_webhook.py's loader and reviews) sends mutate-Job and
mutate-Pod AdmissionReviews over keep-alive TLS connections:

1. saturation: closed loop, --concurrency connections, --requests reviews -> req/s;
2. fixed rate: open loop at --rate-fraction x the lower of the two saturations, latency from
   each request's scheduled send time (no coordinated omission) -> p50 / p99.

    python bench/bench_webhook_compare.py [--requests 20000] [--concurrency 32] [--duration 10] [--reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "e2e"), str(ROOT / "bench")]

import bench_webhook as bw  # noqa: E402
from bench_scale import BenchError, _script_output  # noqa: E402
from upstream_build import UpstreamBuildError, kueue_bin_dir, kueue_module_dir  # noqa: E402

DEFAULT_DIR = ROOT / ".run" / "bench-webhook-compare"
HANDLERS = (("mutate Job", "/mutate-batch-v1-job", bw._job_review), ("mutate Pod", "/mutate--v1-pod", bw._pod_review))

UPSTREAM_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:{health}
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: {port}
  certDir: {cert_dir}
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks: ["batch/job", "pod"]
"""

OUR_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: false
integrations:
  frameworks: ["batch/job", "pod"]
health:
  healthProbeBindAddress: "0"
"""

# In a private mount namespace: overlay /etc so the manager finds its metrics certificates
# at the hard-coded /etc/kueue/metrics/certs, then exec the manager.
UNSHARE_SCRIPT = """\
set -e
mount -t overlay overlay -o lowerdir=/etc,upperdir="$OVL/upper",workdir="$OVL/work" /etc
mkdir -p /etc/kueue/metrics/certs
cp "$CERTS/tls.crt" "$CERTS/tls.key" /etc/kueue/metrics/certs/
exec "$@"
"""


def log(msg: str) -> None:
    print(f"bench-webhook-compare: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- load


async def _load_rate(
    port: int, path: str, body: bytes, rate: float, duration: float, conns: int, ca: str
) -> tuple[float, list[float], int]:
    """Open loop: request i is due at t0 + i/rate; latency counts from when it was due."""
    ctx = ssl.create_default_context(cafile=ca)
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    total = int(rate * duration)
    latencies: list[float] = []
    late = 0
    next_i = 0
    t0 = time.perf_counter() + 0.2

    async def worker() -> None:
        nonlocal next_i, late
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        while next_i < total:
            i = next_i
            next_i += 1
            due = t0 + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.001:
                late += 1
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            assert head.startswith(b"HTTP/1.1 200"), head[:40]
            latencies.append(time.perf_counter() - due)
        writer.close()

    await asyncio.gather(*(worker() for _ in range(conns)))
    return time.perf_counter() - t0, latencies, late


def _pin(cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def _saturate(port: int, path: str, body: bytes, n: int, concurrency: int, ca: str, cpu: int | None, out: Any) -> None:
    _pin(cpu)
    asyncio.run(bw._load(port, path, body, max(n // 10, 1000), concurrency, ca))  # warm-up
    c0 = time.process_time()
    wall, _ = asyncio.run(bw._load(port, path, body, n, concurrency, ca))
    out.put((n / wall, (time.process_time() - c0) / wall))


def _fixed(
    port: int, path: str, body: bytes, rate: float, duration: float, conns: int, ca: str, cpu: int | None, out: Any
) -> None:
    _pin(cpu)
    asyncio.run(_load_rate(port, path, body, rate, 1.0, conns, ca))  # warm-up
    wall, lat, late = asyncio.run(_load_rate(port, path, body, rate, duration, conns, ca))
    lat.sort()
    out.put((len(lat) / wall, lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99) - 1] * 1e3, late))


def _in_process(target: Any, *args: Any) -> Any:
    q: Any = mp.Queue()
    p = mp.Process(target=target, args=(*args, q))
    p.start()
    try:
        return q.get(timeout=600)
    finally:
        p.join(30)


def _one_review(port: int, path: str, body: bytes, ca: str) -> dict[str, Any]:
    req = urllib.request.Request(
        f"https://127.0.0.1:{port}{path}", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=ca), timeout=10) as r:
        return json.loads(r.read())["response"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------- servers


class Servers:
    def __init__(self, directory: Path, kueue_bin: Path, python: str) -> None:
        from cluster import Cluster, free_port

        self.dir = directory
        self.cluster = Cluster(directory / "cluster")
        self.cert_dir = directory / "certs"
        self.kueue_bin = kueue_bin
        self.python = python
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        taken: set[int] = set()
        self.ports = {name: free_port(taken) for name in ("upstream", "upstream-health", "ours")}
        self.server_cpu = 0 if (os.cpu_count() or 1) >= 2 else None
        self.load_cpu = 1 if self.server_cpu is not None else None

    def _taskset(self) -> list[str]:
        return (
            ["taskset", "-c", str(self.server_cpu)] if self.server_cpu is not None and shutil.which("taskset") else []
        )

    def up(self, module: Path) -> None:
        import certs

        self.dir.mkdir(parents=True, exist_ok=True)
        self.cluster.up()
        log("installing upstream's CRDs, namespace team-a, LocalQueue team-a/q")
        crd_dir = module / "config" / "components" / "crd" / "bases"
        self.cluster.kubectl("apply", "--server-side", "-f", str(crd_dir), check=True)
        self.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all", check=True)
        for ns in ("kueue-system", "team-a"):
            self.cluster.kubectl("create", "namespace", ns, check=False)
        lq = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "team-a"},
            "spec": {"clusterQueue": "cq"},
        }
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps(lq), check=True)
        certs.write_bundle(self.cert_dir, ["127.0.0.1", "localhost"])

    def start_upstream(self) -> str | None:
        """None when started; otherwise why the upstream side cannot run here."""
        if shutil.which("unshare") is None:
            return "no `unshare` for the private /etc overlay"
        ovl = self.dir / "overlay"
        shutil.rmtree(ovl, ignore_errors=True)
        (ovl / "upper").mkdir(parents=True)
        (ovl / "work").mkdir()
        config = self.dir / "upstream-config.yaml"
        config.write_text(
            UPSTREAM_CONFIG.format(
                health=self.ports["upstream-health"], port=self.ports["upstream"], cert_dir=self.cert_dir
            )
        )
        cmd = [
            *self._taskset(),
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            UNSHARE_SCRIPT,
            "sh",
            str(self.kueue_bin / "kueue-manager"),
            f"--config={config}",
            f"--kubeconfig={self.cluster.kubeconfig}",
            "--feature-gates=VisibilityOnDemand=false",
            "--zap-log-level=error",
        ]
        env = dict(os.environ, OVL=str(ovl), CERTS=str(self.cert_dir))
        self._start("upstream", cmd, env, f"http://127.0.0.1:{self.ports['upstream-health']}/readyz", None)
        return None

    def start_ours(self) -> None:
        config = self.dir / "our-config.yaml"
        config.write_text(OUR_CONFIG)
        help_text = subprocess.run(
            [self.python, "-m", "webhook", "serve", "--help"], cwd=ROOT, capture_output=True, text=True
        ).stdout
        cmd = [
            *self._taskset(),
            self.python,
            "-m",
            "webhook",
            "serve",
            "--cert-dir",
            str(self.cert_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.ports["ours"]),
            "--config",
            str(config),
            "--kubeconfig",
            str(self.cluster.kubeconfig),
            "--log-level",
            "WARNING",
        ]
        if "--no-worker" in help_text:
            cmd.append("--no-worker")
        self._start(
            "ours",
            cmd,
            dict(os.environ),
            f"https://127.0.0.1:{self.ports['ours']}/readyz",
            ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt")),
        )

    def _start(
        self, name: str, cmd: list[str], env: dict[str, str], ready_url: str, ctx: ssl.SSLContext | None
    ) -> None:
        log_path = self.dir / f"{name}.log"
        with open(log_path, "wb") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True
            )
        self.procs[name] = proc
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-10:])
                raise BenchError(f"{name} server exited with {proc.returncode}; {log_path}:\n{tail}")
            try:
                with urllib.request.urlopen(ready_url, context=ctx, timeout=2) as r:
                    if r.status == 200:
                        log(f"{name} server ready (pid {proc.pid})")
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise BenchError(f"{name} server not ready within 90s; see {log_path}")

    def cpu_seconds(self, name: str) -> float:
        """User+system CPU of a server's process (the process we exec'd into)."""
        fields = Path(f"/proc/{self.procs[name].pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def down(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log(f"{name} server stopped")
        self.procs.clear()
        self.cluster.down()


# ---------------------------------------------------------------------------------- main


def _patch_summary(resp: dict[str, Any]) -> str:
    import base64

    if not resp.get("allowed"):
        return f"DENIED {resp.get('status')}"
    patch = json.loads(base64.b64decode(resp["patch"])) if resp.get("patch") else []
    return f"allowed, {len(patch)} patch ops: " + ", ".join(f"{op['op']} {op['path']}" for op in patch)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=20000, help="reviews per saturation run")
    p.add_argument("--reps", type=int, default=3, help="runs per side and measurement; medians are printed")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--duration", type=float, default=10.0, help="seconds per fixed-rate run")
    p.add_argument("--rate-fraction", type=float, default=0.5, help="fixed rate as a fraction of the lower saturation")
    p.add_argument("--rate-conns", type=int, default=16, help="connections for the fixed-rate runs")
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    p.add_argument("--python", default=sys.executable)
    args = p.parse_args(argv)

    k8s_bin = _script_output(ROOT / "e2e" / "build-binaries.sh")
    os.environ.setdefault("PYKUEUE_K8S_BIN_DIR", str(k8s_bin))
    try:
        kueue_bin, module = kueue_bin_dir(), kueue_module_dir()
    except UpstreamBuildError as exc:
        raise BenchError(str(exc)) from exc
    servers = Servers(args.dir.resolve(), kueue_bin, args.python)
    ca = str(servers.cert_dir / "ca.crt")
    sides: list[str] = []
    try:
        servers.up(module)
        why_not = servers.start_upstream()
        if why_not:
            log(f"upstream: not available ({why_not})")
        else:
            sides.append("upstream")
        servers.start_ours()
        sides.append("ours")
        pin = servers.load_cpu
        log(f"servers pinned to CPU {servers.server_cpu}, load to CPU {pin}" if pin is not None else "no CPU pinning")
        for label, path, make in HANDLERS:
            for side in sides:
                log(f"{side} {label}: {_patch_summary(_one_review(servers.ports[side], path, make(), ca))}")

        sat: dict[tuple[str, str], tuple[float, float, float]] = {}
        fixed: dict[tuple[str, str], tuple[float, float, float, int]] = {}
        rates: dict[str, float] = {}
        for label, path, make in HANDLERS:
            body = make()
            runs: dict[str, list[tuple[float, float, float]]] = {s: [] for s in sides}
            for rep in range(args.reps):  # interleaved, so a noisy neighbour hits both sides alike
                for side in sides:
                    c0 = servers.cpu_seconds(side)
                    t0 = time.monotonic()
                    rps, load_cpu = _in_process(
                        _saturate, servers.ports[side], path, body, args.requests, args.concurrency, ca, pin
                    )
                    server_cpu = (servers.cpu_seconds(side) - c0) / (time.monotonic() - t0)
                    runs[side].append((rps, server_cpu, load_cpu))
                    log(
                        f"{side} {label} #{rep + 1}: saturation {rps:.0f} req/s "
                        f"(server CPU {server_cpu:.2f}, load CPU {load_cpu:.2f})"
                    )
            for side in sides:
                sat[(label, side)] = sorted(runs[side])[len(runs[side]) // 2]
            rates[label] = args.rate_fraction * min(sat[(label, s)][0] for s in sides)
            fruns: dict[str, list[tuple[float, float, float, int]]] = {s: [] for s in sides}
            for rep in range(args.reps):
                for side in sides:
                    r = _in_process(
                        _fixed, servers.ports[side], path, body, rates[label], args.duration, args.rate_conns, ca, pin
                    )
                    fruns[side].append(r)
                    log(f"{side} {label} @ {rates[label]:.0f}/s #{rep + 1}: p50 {r[1]:.2f} ms, p99 {r[2]:.2f} ms")
            for side in sides:
                # median run by p99 (p50 follows closely)
                fixed[(label, side)] = sorted(fruns[side], key=lambda r: r[2])[len(fruns[side]) // 2]
    finally:
        servers.down()

    print(
        f"medians of {args.reps} interleaved runs per side; TLS, keep-alive; "
        f"saturation: {args.requests} reviews over {args.concurrency} connections; "
        f"fixed rate: {args.rate_fraction:.0%} of the lower saturation for {args.duration:.0f}s over {args.rate_conns} connections"
    )
    if servers.load_cpu is not None:
        print(f"each server pinned to CPU {servers.server_cpu}; the load process to CPU {servers.load_cpu}")
    print(
        f"{'handler':<12}{'side':<10}{'sat req/s':>10}{'srv CPU':>9}{'load CPU':>9}{'rate/s':>8}{'p50 ms':>9}{'p99 ms':>9}"
    )
    for label, _, _ in HANDLERS:
        for side in sides:
            rps, scpu, lcpu = sat[(label, side)]
            _, p50, p99, _ = fixed[(label, side)]
            print(
                f"{label:<12}{side:<10}{rps:>10.0f}{scpu:>9.2f}{lcpu:>9.2f}{rates[label]:>8.0f}{p50:>9.2f}{p99:>9.2f}"
            )
        if "upstream" in sides:
            u, o = sat[(label, "upstream")], sat[(label, "ours")]
            fu, fo = fixed[(label, "upstream")], fixed[(label, "ours")]
            print(
                f"{label:<12}{'ours/up':<10}{o[0] / u[0]:>10.2f}{'':>9}{'':>9}{'':>8}{fo[1] / fu[1]:>9.2f}{fo[2] / fu[2]:>9.2f}"
            )
    if "upstream" not in sides:
        print("upstream: not available (see above)")
    for (label, side), (_, scpu, lcpu) in sat.items():
        if lcpu > 0.9 and scpu < 0.9:
            print(
                f"note: {side} {label} saturation is bounded by the load process (load CPU {lcpu:.2f}, "
                f"server CPU {scpu:.2f}): a lower bound for that server"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
