"""Scheduler scale benchmark: upstream's performance runner, minimalkueue vs our worker.

Runs upstream Kueue's `test/performance/scheduler/runner` unchanged (built from the module
pinned in e2e/tools/kueue by e2e/build-kueue.sh) twice against its own envtest control plane
(etcd + kube-apiserver from our cache, KUBEBUILDER_ASSETS): once with `minimalkueue`, once with
our worker behind minimalkueue's command line (bench/minimalkueue-pykueue). The runner creates
the ClusterQueues, LocalQueues and Workloads of a generator config, plays the kubelet (marks
admitted Workloads Finished after their runtime, completes evictions) and records every state
change; its summary.yaml and `<manager>.stats.yaml` (wait4 rusage of the manager process) are
what we print.

    python bench/bench_scale.py                 # baseline config: 5 cohorts x 6 CQs, 15,000 workloads
    python bench/bench_scale.py --smoke         # 300 workloads, for CI
    python bench/bench_scale.py --only upstream|ours --config FILE --timeout 15m

Exit status: 0 when every side that ran produced a summary; 1 otherwise. A side that cannot
run (our worker not written yet) is reported as "not available" and does not fail the run
unless --require-ours is given.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "e2e"
sys.path.insert(0, str(E2E))

from upstream_build import UpstreamBuildError, kueue_bin_dir, kueue_module_dir  # noqa: E402

OUR_CRDS = ROOT / "manifests" / "crds"
WRAPPER = ROOT / "bench" / "minimalkueue-pykueue"
DEFAULT_OUT = ROOT / ".run" / "bench-scale"

# 1 cohort x 3 ClusterQueues x 100 workloads: the baseline's shape (three classes, preemption
# within the CQ and reclaim in the cohort, borrowing) at 2 % of its size.
SMOKE_CONFIG = """\
cohorts:
  - className: cohort
    count: 1
    queuesSets:
    - className: cq
      count: 3
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 70
        creationIntervalMs: 20
        workloads:
        - className: small
          runtimeMs: 200
          priority: 50
          request: 1
      - count: 20
        creationIntervalMs: 70
        workloads:
        - className: medium
          runtimeMs: 300
          priority: 100
          request: 5
      - count: 10
        creationIntervalMs: 140
        workloads:
        - className: large
          runtimeMs: 500
          priority: 200
          request: 20
"""


def log(msg: str) -> None:
    print(f"bench-scale: {msg}", file=sys.stderr, flush=True)


class BenchError(RuntimeError):
    pass


def _script_output(script: Path) -> Path:
    """Run a build script (progress on stderr, which we pass through); its last stdout line is a dir."""
    proc = subprocess.run([str(script)], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise BenchError(f"{script.name} failed (exit {proc.returncode})")
    return Path(proc.stdout.strip().splitlines()[-1])


@dataclass
class Binaries:
    k8s_bin: Path
    kueue_bin: Path
    module: Path

    @property
    def runner(self) -> Path:
        return self.kueue_bin / "performance-scheduler-runner"

    @property
    def minimalkueue(self) -> Path:
        return self.kueue_bin / "minimalkueue"

    @property
    def upstream_crds(self) -> Path:
        return self.module / "config" / "components" / "crd" / "bases"

    @property
    def baseline_config(self) -> Path:
        return self.module / "test" / "performance" / "scheduler" / "configs" / "baseline" / "generator.yaml"


def ensure_binaries() -> Binaries:
    k8s_bin = _script_output(E2E / "build-binaries.sh")
    try:
        return Binaries(k8s_bin, kueue_bin_dir(), kueue_module_dir())
    except UpstreamBuildError as exc:
        raise BenchError(str(exc)) from exc


def ours_available(python: str) -> str | None:
    """None if our worker can be started; otherwise why not."""
    probe = subprocess.run([python, "-m", "webhook", "worker", "--help"], cwd=ROOT, capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"worker missing (`python -m webhook worker --help`: {last})"
    probe = subprocess.run(
        [python, "-c", "import webhook.worker.process, webhook.worker.manager"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"worker missing ({last})"
    return None


@dataclass
class Result:
    side: str
    wall_ms: float = 0.0
    cpu_s: float = 0.0
    maxrss_mib: float = 0.0
    usage_pct: dict[str, float] = field(default_factory=dict)
    avg_admit_ms: dict[str, float] = field(default_factory=dict)
    evictions: int = 0
    workloads: int = 0
    finished: int = 0
    dropped_events: int = 0
    runner_s: float = 0.0


def parse_results(side: str, out: Path, exe: str, runner_s: float) -> Result:
    summary = yaml.safe_load((out / "summary.yaml").read_text())
    stats = yaml.safe_load((out / f"{exe}.stats.yaml").read_text())
    r = Result(side, runner_s=runner_s)
    r.wall_ms = float(stats["wallMs"])
    r.cpu_s = (stats["userMs"] + stats["sysMs"]) / 1000
    r.maxrss_mib = stats["maxrss"] / 1024  # Linux ru_maxrss is KiB
    for cls, s in (summary.get("clusterQueueClasses") or {}).items():
        # checker_test.go: usage = cpuUsed * 100 / (nominalQuota * elapsedMs)
        first = _ts(s["firstEventTime"])
        last = _ts(s["lastEventTime"])
        elapsed_ms = (last - first) * 1000
        if s["nominalQuota"] and elapsed_ms > 0:
            r.usage_pct[cls] = s["cpuUsed"] * 100 / (s["nominalQuota"] * elapsed_ms)
    for cls, s in (summary.get("workloadClasses") or {}).items():
        r.avg_admit_ms[cls] = float(s["averageTimeToAdmissionMs"])
        r.evictions += int(s.get("totalEvictions", 0))
        r.workloads += int(s["count"])
    r.dropped_events = int(summary.get("droppedWorkloadEvents", 0))
    with open(out / "wlStates.csv", newline="") as f:
        r.finished = sum(1 for row in csv.DictReader(f) if int(row["ms to finish"]) > 0)
    return r


def _ts(value: Any) -> float:
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    from datetime import datetime

    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def run_side(
    side: str,
    b: Binaries,
    manager: Path,
    crds: Path,
    config: Path,
    out: Path,
    timeout: str,
    python: str,
    deadline_s: float,
) -> Result:
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():
        if stale.is_file():
            stale.unlink()
    cmd = [
        str(b.runner),
        "--o",
        str(out),
        "--crds",
        str(crds),
        "--generatorConfig",
        str(config),
        "--minimalKueue",
        str(manager),
        "--timeout",
        timeout,
    ]
    env = dict(os.environ, KUBEBUILDER_ASSETS=str(b.k8s_bin), PYKUEUE_PYTHON=python)
    runner_log = out / "runner.log"
    log(f"{side}: runner started (log: {runner_log})")
    start = time.monotonic()
    with open(runner_log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        next_beat = start + 30
        while proc.poll() is None:
            time.sleep(0.5)
            now = time.monotonic()
            if now - start > deadline_s:
                proc.send_signal(2)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                raise BenchError(f"{side}: runner still running after {deadline_s:.0f}s; see {runner_log}")
            if now >= next_beat:
                log(f"{side}: running for {now - start:.0f}s")
                next_beat += 30
    elapsed = time.monotonic() - start
    exe = manager.name
    if proc.returncode != 0 or not (out / "summary.yaml").exists():
        tail = "\n".join("    " + line for line in runner_log.read_text(errors="replace").splitlines()[-15:])
        raise BenchError(
            f"{side}: runner exited {proc.returncode} after {elapsed:.0f}s without a summary; "
            f"last lines of {runner_log}:\n{tail}"
        )
    log(f"{side}: done in {elapsed:.0f}s")
    return parse_results(side, out, exe, elapsed)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def report(results: dict[str, Result], ours_missing: str | None) -> str:
    lines: list[str] = []
    up, ours = results.get("upstream"), results.get("ours")
    sides = [r for r in (up, ours) if r is not None]
    head = f"{'metric':<34}" + "".join(f"{r.side:>12}" for r in sides) + (f"{'ours/up':>10}" if up and ours else "")
    lines.append(head)

    def row(name: str, get: Any, fmt: str) -> None:
        vals = [get(r) for r in sides]
        line = f"{name:<34}" + "".join(f"{format(v, fmt):>12}" if v is not None else f"{'-':>12}" for v in vals)
        if up and ours:
            a, b = get(ours), get(up)
            line += f"{_ratio(a, b) if a is not None and b is not None else '-':>10}"
        lines.append(line)

    row("wallMs (manager process)", lambda r: r.wall_ms, ".0f")
    classes = sorted({c for r in sides for c in r.usage_pct})
    for c in classes:
        row(f"ClusterQueue class '{c}' usage %", lambda r, c=c: r.usage_pct.get(c), ".1f")
    for c in sorted({c for r in sides for c in r.avg_admit_ms}):
        row(f"avg time to admission '{c}' ms", lambda r, c=c: r.avg_admit_ms.get(c), ".0f")
    row("evictions", lambda r: r.evictions, "d")
    row("max RSS MiB (manager)", lambda r: r.maxrss_mib, ".1f")
    row("CPU s user+sys (manager)", lambda r: r.cpu_s, ".1f")
    row("workloads finished", lambda r: r.finished, "d")
    lines.append(
        "workloads recorded: "
        + ", ".join(f"{r.side} {r.workloads} (finished {r.finished}, dropped events {r.dropped_events})" for r in sides)
    )
    if ours is None:
        lines.append(f"ours: not available ({ours_missing})" if ours_missing else "ours: not run")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="300-workload config (CI)")
    p.add_argument("--config", type=Path, help="generator config (default: upstream's baseline)")
    p.add_argument("--only", choices=["upstream", "ours"])
    p.add_argument("--timeout", default="15m", help="runner --timeout (max record time)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument(
        "--ours-crds",
        choices=["ours", "upstream"],
        default="ours",
        help="CRDs installed for our side (minimalkueue always gets upstream's)",
    )
    p.add_argument("--require-ours", action="store_true", help="fail if our worker is not available")
    p.add_argument("--python", default=sys.executable, help="interpreter for our worker")
    return p.parse_args(argv)


@dataclass
class Outcome:
    config: Path
    results: dict[str, Result]
    failures: list[str]
    ours_missing: str | None


def bench(args: argparse.Namespace) -> Outcome:
    b = ensure_binaries()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.config:
        config = args.config.resolve()
    elif args.smoke:
        config = out / "smoke-generator.yaml"
        config.write_text(SMOKE_CONFIG)
    else:
        config = b.baseline_config
    log(f"generator config: {config}")
    deadline = _duration_s(args.timeout) + 300

    results: dict[str, Result] = {}
    failures: list[str] = []
    if args.only in (None, "upstream"):
        try:
            results["upstream"] = run_side(
                "upstream",
                b,
                b.minimalkueue,
                b.upstream_crds,
                config,
                out / "upstream",
                args.timeout,
                args.python,
                deadline,
            )
        except BenchError as exc:
            failures.append(str(exc))
    ours_missing = None
    if args.only in (None, "ours"):
        ours_missing = ours_available(args.python)
        if ours_missing is None:
            crds = OUR_CRDS if args.ours_crds == "ours" else b.upstream_crds
            try:
                results["ours"] = run_side(
                    "ours", b, WRAPPER, crds, config, out / "ours", args.timeout, args.python, deadline
                )
            except BenchError as exc:
                failures.append(str(exc))
        elif args.require_ours:
            failures.append(f"ours: not available ({ours_missing})")
    return Outcome(config, results, failures, ours_missing)


def main(argv: list[str] | None = None) -> int:
    o = bench(parse_args(argv))
    print(f"generator config: {o.config}")
    print(report(o.results, o.ours_missing))
    for f in o.failures:
        print(f, file=sys.stderr)
    return 1 if o.failures else 0


def _duration_s(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)


if __name__ == "__main__":
    sys.exit(main())
