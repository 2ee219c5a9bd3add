"""Upstream Kueue's binaries and module source, at the version pinned in e2e/tools/kueue/go.mod.

e2e/build-kueue.sh builds them into the cache (perf runner, minimalkueue, manager, kueuectl and the
baseline e2e suite); the module directory holds upstream's CRDs, kustomizations and test data. Used by
the upstream e2e runner and by the benchmarks that compare with upstream.
"""

from __future__ import annotations

import json
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
    """Upstream's module source in the Go module cache, downloaded if a fresh cache lacks it (`go list -m`
    would name no directory then)."""
    proc = subprocess.run(
        ["go", "mod", "download", "-json", "sigs.k8s.io/kueue"],
        cwd=E2E / "tools" / "kueue",
        env=dict(os.environ, GOFLAGS="-mod=mod"),
        capture_output=True,
        text=True,
        check=False,
    )
    directory = json.loads(proc.stdout).get("Dir", "") if proc.returncode == 0 and proc.stdout.strip() else ""
    if not directory:
        raise UpstreamBuildError(f"cannot locate the kueue module: {proc.stderr.strip() or proc.stdout.strip()}")
    return Path(directory)
