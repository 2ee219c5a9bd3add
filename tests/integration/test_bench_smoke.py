"""Keeps `make bench-scale` from rotting: upstream's scheduler performance runner on a 300-workload
config, once with minimalkueue and once with our worker behind minimalkueue's command line.

Needs Go on PATH; builds (or reuses) the control plane and upstream Kueue's runner and
minimalkueue in ~/.cache/pykueue. Never skips: a missing toolchain, a failed build, a runner
that ends without a summary, or our worker not being startable all fail here, loudly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import bench_scale  # noqa: E402

SMOKE_WORKLOADS = 300

# The first run may build the runner and minimalkueue (minutes); warm, both sides take ~1 min.
pytestmark = pytest.mark.timeout(1800)


def test_bench_scale_smoke(tmp_path: Path) -> None:
    args = bench_scale.parse_args(["--smoke", "--require-ours", "--timeout", "3m", "--out", str(tmp_path)])
    outcome = bench_scale.bench(args)
    table = bench_scale.report(outcome.results, outcome.ours_missing)
    print(table)
    assert not outcome.failures, "\n".join(outcome.failures) + "\n" + table
    assert set(outcome.results) == {"upstream", "ours"}, table
    assert all(len(runs) == 1 for runs in outcome.results.values()), table
    for side, (r,) in outcome.results.items():
        # Every workload the generator made was seen, admitted and finished by the runner.
        assert r.workloads == SMOKE_WORKLOADS, f"{side}: runner recorded {r.workloads} workloads\n{table}"
        assert r.finished == SMOKE_WORKLOADS, f"{side}: only {r.finished} workloads finished\n{table}"
        assert set(r.avg_admit_ms) == {"small", "medium", "large"}, table
        assert r.usage_pct.get("cq", 0) > 0, table
        assert r.wall_ms > 0 and r.cpu_s > 0 and r.maxrss_mib > 0, table
        assert sum(len(ms) for ms in r.admit_ms.values()) == r.admitted == SMOKE_WORKLOADS, table
        # The API server's cost: its CPU, and the manager's requests only (the runner creates the
        # Workloads and marks them finished; the manager admits them, through workloads/status).
        assert r.apiserver is not None and r.apiserver["cpu_s"] > 0 and r.apiserver["peak_rss_mib"] > 0, table
        requests = r.apiserver["requests"]
        assert "create workloads" not in requests, f"{side}: the runner's creates were counted\n{table}"
        status_writes = sum(v["requests"] for k, v in requests.items() if k.endswith(" workloads/status"))
        assert status_writes >= SMOKE_WORKLOADS, f"{side}: {status_writes} Workload status writes\n{table}"
    # The figures file carries every row of the table with a ratio, and the plot is a PNG.
    figures = json.loads(bench_scale.write_figures(outcome.out, outcome.config, outcome.results).read_text())
    rows = {row["figure"]: row for row in figures["figures"]}
    assert rows["CPU s user+sys (manager)"]["ours/upstream"] > 0, figures
    assert {"admission 'large' p90 s", "evictions", "usage % 'cq'", "API server CPU s", "manager requests"} <= set(
        rows
    ), sorted(rows)
    png = bench_scale.plot(outcome.out, outcome.results, "smoke")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
