"""Upstream Kueue's binaries and module source, at the version pinned in e2e/tools/kueue/go.mod.

e2e/build-kueue.sh builds them into the cache (perf runner, minimalkueue, manager, kueuectl and the
baseline e2e suite); the module directory holds upstream's CRDs, kustomizations and test data. Used by
the upstream e2e runner and by the benchmarks that compare with upstream.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

E2E = Path(__file__).resolve().parent


class UpstreamBuildError(RuntimeError):
    pass


def kueue_bin_dir() -> Path:
    """Run e2e/build-kueue.sh (progress on stderr passes through) and return its bin dir (last stdout line)."""
    proc = subprocess.run(["bash", str(E2E / "build-kueue.sh")], stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.split()
    if proc.returncode != 0 or not lines:
        raise UpstreamBuildError(f"e2e/build-kueue.sh failed (exit {proc.returncode})")
    return Path(lines[-1])


def kueue_module_dir() -> Path:
    """Upstream's module source in the Go module cache."""
    proc = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue"],
        cwd=E2E / "tools" / "kueue",
        env=dict(os.environ, GOFLAGS="-mod=mod"),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise UpstreamBuildError(f"cannot locate the kueue module: {proc.stderr.strip()}")
    return Path(proc.stdout.strip())
