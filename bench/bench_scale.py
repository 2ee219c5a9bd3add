"""Scheduler scale benchmark: upstream's performance runner, minimalkueue vs our worker.

Runs upstream Kueue's `test/performance/scheduler/runner` unchanged (built from the module
pinned in e2e/tools/kueue by e2e/build-kueue.sh) twice against its own envtest control plane
(etcd + kube-apiserver from our cache, KUBEBUILDER_ASSETS): once with `minimalkueue`, once with
our worker behind minimalkueue's command line (bench/minimalkueue-pykueue). The runner creates
the ClusterQueues, LocalQueues and Workloads of a generator config, plays the kubelet (marks
admitted Workloads Finished after their runtime, completes evictions) and records every state
change; its summary.yaml, wlStates.csv and `<manager>.stats.yaml` (wait4 rusage of the manager
process) are what we report, with the cost each manager puts on the API server (apiserver_cost.py:
the kube-apiserver's CPU and peak RSS, the manager's requests by verb and resource from an audit log).

    python bench/bench_scale.py                 # baseline config: 5 cohorts x 6 CQs, 15,000 workloads
    python bench/bench_scale.py --smoke         # 300 workloads, for CI
    python bench/bench_scale.py --config bench/scale-2x.yaml --timeout 30m   # twice the baseline
    python bench/bench_scale.py --config tas --timeout 20m   # upstream's configs by name: tas, large-scale
    python bench/bench_scale.py --runs 2 --only upstream|ours --timeout 15m
    python bench/bench_scale.py --report        # the table again, from the runs already recorded

Runs accumulate in --out (default .run/bench-scale/<config name>) as `<side>-<n>/`; every
invocation prints one table over all of them (each figure: every run, the mean per side, and
ours/upstream of the means) and writes `figures.json` (the same, plus each run's figures and the
load average when it ended) and `plot.png` (time to admission per workload class, ours vs
upstream). Wall time and time to admission depend on what else the machine runs; CPU seconds,
peak RSS and evictions much less.

Exit status: 0 when every side that ran produced a summary; 1 otherwise. A side that cannot
run (our worker not written yet) is reported as "not available" and does not fail the run
unless --require-ours is given.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import apiserver_cost  # noqa: E402

OUR_CRDS = ROOT / "manifests" / "crds"
WRAPPER = ROOT / "bench" / "minimalkueue-pykueue"
#: minimalkueue under the manager's own identity (apiserver_cost.py); the real binary in BENCH_MINIMALKUEUE.
UPSTREAM_WRAPPER = ROOT / "bench" / "minimalkueue-upstream"
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

    def upstream_config(self, name: str) -> Path:
        """One of upstream's generator configs (test/performance/scheduler/configs/<name>)."""
        return self.module / "test" / "performance" / "scheduler" / "configs" / name / "generator.yaml"

    @property
    def baseline_config(self) -> Path:
        return self.upstream_config("baseline")


def wants_tas(config: Path) -> bool:
    """A generator config with a topology makes the runner create Nodes, a Topology and a topology-aware
    ResourceFlavor; upstream's Makefile (run-tas-performance-scheduler) then passes --enableTAS=true, which the
    runner hands on to the manager."""
    return bool((yaml.safe_load(config.read_text()) or {}).get("topology"))


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
    run: int = 1
    wall_ms: float = 0.0
    cpu_s: float = 0.0
    maxrss_mib: float = 0.0
    usage_pct: dict[str, float] = field(default_factory=dict)
    avg_admit_ms: dict[str, float] = field(default_factory=dict)
    # Per workload class, every workload's "ms to admitted" from wlStates.csv (the runner's last
    # admission, measured from the workload's first event), for percentiles and the plot.
    admit_ms: dict[str, list[int]] = field(default_factory=dict)
    evictions: int = 0
    workloads: int = 0
    admitted: int = 0
    finished: int = 0
    dropped_events: int = 0
    # Workloads whose "ms to admitted" equals their "ms to finish": the runner's recorder dropped every
    # event between (its 1,000-event channel was full), so it saw the admission only with the finish.
    admitted_at_finish: int = 0
    runner_s: float = 0.0
    # The API server's side (apiserver_cost.py); None for runs recorded before it was measured.
    apiserver: dict[str, Any] | None = None

    def figures(self) -> dict[str, float]:
        """Every figure of this run by name, as the table and figures.json show them."""
        f: dict[str, float] = {
            "wall s (manager)": self.wall_ms / 1000,
            "CPU s user+sys (manager)": self.cpu_s,
            "CPU ms per admission": self.cpu_s * 1000 / (self.admitted + self.evictions)
            if self.admitted + self.evictions
            else 0.0,
            "peak RSS MiB (manager)": self.maxrss_mib,
            "evictions": float(self.evictions),
        }
        for cls, pct in sorted(self.usage_pct.items()):
            f[f"usage % '{cls}'"] = pct
        for cls in sorted(self.admit_ms):
            ms = sorted(self.admit_ms[cls])
            f[f"admission '{cls}' avg s"] = self.avg_admit_ms.get(cls, 0.0) / 1000
            f[f"admission '{cls}' p50 s"] = _percentile(ms, 50) / 1000
            f[f"admission '{cls}' p90 s"] = _percentile(ms, 90) / 1000
            f[f"admission '{cls}' max s"] = (ms[-1] if ms else 0) / 1000
        f["workloads finished"] = float(self.finished)
        f["admissions seen only at finish"] = float(self.admitted_at_finish)
        if self.apiserver is not None:
            requests = self.apiserver["requests"]
            f["API server CPU s"] = self.apiserver["cpu_s"]
            f["API server peak RSS MiB"] = self.apiserver["peak_rss_mib"]
            f["manager requests"] = float(sum(r["requests"] for r in requests.values()))
            f["manager request body MiB"] = sum(r["bytes"] for r in requests.values()) / 2**20
            for key in sorted(requests):
                f[f"requests {key}"] = float(requests[key]["requests"])
        return f


def _percentile(sorted_ms: list[int], pct: float) -> float:
    """Nearest-rank percentile of an already sorted list (0 for none)."""
    if not sorted_ms:
        return 0.0
    rank = max(1, -(-len(sorted_ms) * pct // 100))
    return float(sorted_ms[int(rank) - 1])


def parse_results(side: str, out: Path, exe: str, runner_s: float, run: int = 1) -> Result:
    summary = yaml.safe_load((out / "summary.yaml").read_text())
    stats = yaml.safe_load((out / f"{exe}.stats.yaml").read_text())
    r = Result(side, run=run, runner_s=runner_s)
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
    r.apiserver = apiserver_cost.read_summary(out)
    with open(out / "wlStates.csv", newline="") as f:
        for row in csv.DictReader(f):
            admit, finish = int(row["ms to admitted"]), int(row["ms to finish"])
            # 0 ms to admitted is a real value when the runner first saw the Workload already admitted.
            if admit > 0 or finish > 0:
                r.admitted += 1
                r.admit_ms.setdefault(row["class name"], []).append(admit)
            if finish > 0:
                r.finished += 1
                r.admitted_at_finish += admit == finish
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
    run: int = 1,
    keep_audit: bool = False,
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
        *(["--enableTAS=true"] if wants_tas(config) else []),
    ]
    pidfile = out / "apiserver.pid"
    env = dict(
        os.environ,
        KUBEBUILDER_ASSETS=str(apiserver_cost.prepare_assets(b.k8s_bin, out)),
        PYKUEUE_PYTHON=python,
        BENCH_MINIMALKUEUE=str(b.minimalkueue),
        **{apiserver_cost.PIDFILE_ENV: str(pidfile)},
    )
    sampler = apiserver_cost.ProcessSampler(pidfile)
    runner_log = out / "runner.log"
    log(f"{side} run {run}: runner started (log: {runner_log})")
    start = time.monotonic()
    with open(runner_log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        next_beat = start + 30
        while proc.poll() is None:
            time.sleep(0.5)
            sampler.sample()
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
                log(f"{side} run {run}: running for {now - start:.0f}s")
                next_beat += 30
    elapsed = time.monotonic() - start
    exe = manager.name
    if proc.returncode != 0 or not (out / "summary.yaml").exists():
        tail = "\n".join("    " + line for line in runner_log.read_text(errors="replace").splitlines()[-15:])
        raise BenchError(
            f"{side}: runner exited {proc.returncode} after {elapsed:.0f}s without a summary; "
            f"last lines of {runner_log}:\n{tail}"
        )
    log(f"{side} run {run}: done in {elapsed:.0f}s")
    apiserver_cost.write_summary(out, sampler, keep_audit=keep_audit)
    (out / "exe").write_text(exe)
    (out / "load.txt").write_text(f"{os.getloadavg()[0]:.1f}\n")
    return parse_results(side, out, exe, elapsed, run)


SIDES = ("upstream", "ours")


def collect(out: Path) -> dict[str, list[Result]]:
    """Every finished run under `out` (`<side>-<n>/`), so runs made by separate invocations add up."""
    results: dict[str, list[Result]] = {}
    for d in sorted(out.glob("*-*"), key=lambda d: (d.name.split("-")[0], _run_no(d))):
        side = d.name.rsplit("-", 1)[0]
        if side in SIDES and (d / "summary.yaml").exists() and (d / "exe").exists():
            results.setdefault(side, []).append(
                parse_results(side, d, (d / "exe").read_text().strip(), 0.0, _run_no(d))
            )
    return results


def _run_no(d: Path) -> int:
    tail = d.name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _next_run(out: Path, side: str) -> int:
    return max((_run_no(d) for d in out.glob(f"{side}-*")), default=0) + 1


def _mean(vals: list[float]) -> float:
    return sum(vals) / len(vals) if vals else 0.0


def figures_table(results: dict[str, list[Result]]) -> list[dict[str, Any]]:
    """One row per figure: each side's per-run values and mean, and ours/upstream of the means."""
    names: list[str] = []
    for runs in results.values():
        for r in runs:
            names += [n for n in r.figures() if n not in names]
    rows = []
    for name in names:
        row: dict[str, Any] = {"figure": name}
        for side in SIDES:
            vals = [r.figures()[name] for r in results.get(side, []) if name in r.figures()]
            row[side] = {"runs": vals, "mean": _mean(vals)} if vals else None
        up, ours = row["upstream"], row["ours"]
        row["ours/upstream"] = ours["mean"] / up["mean"] if up and ours and up["mean"] else None
        rows.append(row)
    return rows


def report(results: dict[str, list[Result]], ours_missing: str | None) -> str:
    """The one table: every figure, each side's runs and mean, and the ratio of the means."""
    rows = figures_table(results)
    lines = [f"{'figure':<44}{'upstream (runs) mean':>34}{'ours (runs) mean':>34}{'ours/up':>9}"]

    def cell(side_row: dict[str, Any] | None) -> str:
        if side_row is None:
            return "-"
        runs = "/".join(_fmt(v) for v in side_row["runs"])
        return f"({runs}) {_fmt(side_row['mean'])}" if len(side_row["runs"]) > 1 else _fmt(side_row["mean"])

    for row in rows:
        ratio = row["ours/upstream"]
        lines.append(
            f"{row['figure']:<44}{cell(row['upstream']):>34}{cell(row['ours']):>34}"
            f"{f'{ratio:.2f}' if ratio is not None else '-':>9}"
        )
    for side in SIDES:
        for r in results.get(side, []):
            lines.append(
                f"{side} run {r.run}: {r.workloads} workloads recorded, {r.admitted} admitted, "
                f"{r.finished} finished, {r.dropped_events} dropped events"
            )
    if "ours" not in results:
        lines.append(f"ours: not available ({ours_missing})" if ours_missing else "ours: not run")
    return "\n".join(lines)


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def write_figures(out: Path, config: Path, results: dict[str, list[Result]]) -> Path:
    """figures.json: the config, the table's rows, and each run's raw figures and load average."""
    runs = [
        {
            "side": r.side,
            "run": r.run,
            "load_avg_at_end": _load(out / f"{r.side}-{r.run}"),
            "workloads": r.workloads,
            "figures": r.figures(),
        }
        for side in SIDES
        for r in results.get(side, [])
    ]
    path = out / "figures.json"
    path.write_text(json.dumps({"config": str(config), "figures": figures_table(results), "runs": runs}, indent=1))
    return path


def _load(d: Path) -> float | None:
    f = d / "load.txt"
    return float(f.read_text()) if f.exists() else None


def plot(out: Path, results: dict[str, list[Result]], title: str) -> Path:
    """plot.png: per workload class, the distribution (CDF) of time to admission, ours vs upstream,
    every run of a side pooled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    classes = sorted({c for runs in results.values() for r in runs for c in r.admit_ms})
    fig, axes = plt.subplots(1, max(1, len(classes)), figsize=(5 * max(1, len(classes)), 4), squeeze=False)
    for ax, cls in zip(axes[0], classes, strict=False):
        for side, colour in zip(SIDES, ("tab:blue", "tab:orange"), strict=True):
            ms = sorted(v for r in results.get(side, []) for v in r.admit_ms.get(cls, []))
            if ms:
                n = len(results[side])
                ax.plot(
                    [v / 1000 for v in ms],
                    [(i + 1) / len(ms) for i in range(len(ms))],
                    color=colour,
                    label=f"{side} ({n} run{'s' if n > 1 else ''})",
                )
        ax.set_title(f"class '{cls}'")
        ax.set_xlabel("time to admission (s)")
        ax.set_ylabel("fraction of workloads")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    path = out / "plot.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="300-workload config (CI)")
    p.add_argument(
        "--config",
        type=Path,
        help="generator config: a file, or one of upstream's by name (baseline, tas, large-scale); default baseline",
    )
    p.add_argument("--only", choices=list(SIDES))
    p.add_argument("--runs", type=int, default=1, help="runs of each side, alternating (default 1)")
    p.add_argument("--report", action="store_true", help="run nothing: report the runs already in --out")
    p.add_argument("--clean", action="store_true", help="forget the runs already in --out first")
    p.add_argument("--timeout", default="15m", help="runner --timeout (max record time)")
    p.add_argument(
        "--keep-audit", action="store_true", help="keep each run's API server audit log (the manager's writes, timed)"
    )
    p.add_argument(
        "--out",
        type=Path,
        help="run directory (default .run/bench-scale/<config name>); "
        "runs accumulate there as <side>-<n>/ and the report covers them all",
    )
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
    out: Path
    results: dict[str, list[Result]]
    failures: list[str]
    ours_missing: str | None


def _config_label(args: argparse.Namespace) -> str:
    return "smoke" if args.smoke else args.config.stem if args.config else "baseline"


def bench(args: argparse.Namespace) -> Outcome:
    out: Path = (args.out or DEFAULT_OUT / _config_label(args)).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.clean:
        for d in out.glob("*-*"):
            if d.is_dir() and d.name.rsplit("-", 1)[0] in SIDES:
                shutil.rmtree(d)
    failures: list[str] = []
    ours_missing = None
    if args.report:
        config = (
            Path(json.loads((out / "figures.json").read_text())["config"]) if (out / "figures.json").exists() else out
        )
        return Outcome(config, out, collect(out), failures, ours_missing)
    b = ensure_binaries()
    if args.config and not args.config.exists() and b.upstream_config(str(args.config)).exists():
        config = b.upstream_config(str(args.config))
    elif args.config:
        config = args.config.resolve()
    elif args.smoke:
        config = out / "smoke-generator.yaml"
        config.write_text(SMOKE_CONFIG)
    else:
        config = b.baseline_config
    log(f"generator config: {config}")
    deadline = _duration_s(args.timeout) + 300
    sides = [s for s in SIDES if args.only in (None, s)]
    if "ours" in sides:
        ours_missing = ours_available(args.python)
        if ours_missing is not None:
            sides.remove("ours")
            if args.require_ours:
                failures.append(f"ours: not available ({ours_missing})")
    for _ in range(args.runs):
        for side in sides:
            manager, crds = (
                (UPSTREAM_WRAPPER, b.upstream_crds)
                if side == "upstream"
                else (WRAPPER, OUR_CRDS if args.ours_crds == "ours" else b.upstream_crds)
            )
            n = _next_run(out, side)
            try:
                run_side(
                    side,
                    b,
                    manager,
                    crds,
                    config,
                    out / f"{side}-{n}",
                    args.timeout,
                    args.python,
                    deadline,
                    n,
                    keep_audit=args.keep_audit,
                )
            except BenchError as exc:
                failures.append(str(exc))
    return Outcome(config, out, collect(out), failures, ours_missing)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    o = bench(args)
    print(f"generator config: {o.config}")
    print(report(o.results, o.ours_missing))
    if o.results:
        print(f"figures: {write_figures(o.out, o.config, o.results)}")
        print(f"plot: {plot(o.out, o.results, f'time to admission, {_config_label(args)} ({o.config.name})')}")
    for f in o.failures:
        print(f, file=sys.stderr)
    return 1 if o.failures else 0


def _duration_s(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)


if __name__ == "__main__":
    sys.exit(main())
