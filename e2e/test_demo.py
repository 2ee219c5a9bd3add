"""`make run` as a newcomer runs it: e2e/demo.py on a local stack of its own, judged by what it prints.

The step that is meant to prove quota accounting must show the example Job's GPUs in use while the Job
runs (ClusterQueue status is published a second after the Workload changes, so printing it at once showed
0), then `kubectl kueue list workload` with the Workload still admitted, and a dashboard URL that answers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from e2e import demo

ROOT = Path(__file__).resolve().parents[1]


def sections(out: str) -> dict[str, str]:
    """The demo's stdout by step: `=== title` -> the lines printed under it."""
    return {title: body for title, _, body in (chunk.partition("\n") for chunk in out.split("\n=== ")[1:])}


def cq_usage(text: str) -> tuple[dict[tuple[str, str], str], int]:
    """The printed `flavorsUsage=[...] admittedWorkloads=N` line: (flavor, resource) -> total, and N."""
    line = next(line for line in text.splitlines() if line.startswith("flavorsUsage="))
    m = re.fullmatch(r"flavorsUsage=(.*) admittedWorkloads=(\d+)", line)
    assert m, f"not a usage line: {line!r}"
    totals = {(f["name"], r["name"]): r["total"] for f in json.loads(m[1]) for r in f["resources"]}
    return totals, int(m[2])


def table(text: str, command: str) -> list[dict[str, str]]:
    """The rows of the table printed after `$ command`, keyed by its header's (space-separated) columns."""
    lines = text.splitlines()
    header, *rest = lines[lines.index(f"$ {command}") + 1 :]
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    rows = []
    for line in rest:
        if not line or line.startswith(("$ ", "dashboard: ")):
            break
        rows.append({n: line[a:b].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)})
    return rows


@pytest.mark.local_stack
def test_make_run_shows_the_gpus_in_use_while_the_job_runs() -> None:
    """`make run` (the demo on a stack of its own, no KUBECONFIG), as issue 37 saw it: its quota step must
    print the example's GPUs in use, not the 0 the ClusterQueue status reads for a second after admission."""
    job = yaml.safe_load(demo.GPU_JOB.read_text())
    flavor, _, _ = yaml.safe_load_all(demo.GPU_QUOTA.read_text())
    gpus = (
        job["spec"]["parallelism"]
        * job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    )  # 2
    run_dir = ROOT / ".run" / f"demo-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    try:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "e2e" / "demo.py"), "--dir", str(run_dir)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        print(proc.stdout)
        assert proc.returncode == 0, f"make run's demo exited {proc.returncode}: {proc.stderr[-3000:]}"
        steps = sections(proc.stdout)
        name = re.search(r"^job (\S+): spec\.suspend = True", proc.stdout, re.M)
        assert name, "the demo should name the Job it created"

        ran = steps["The Job runs on a GPU node: the flavor's nodeLabels were merged into its nodeSelector"]
        pods = table(ran, f"kubectl get pods -n {demo.NAMESPACE} -l job-name={name[1]} -o wide")
        assert [p["STATUS"] for p in pods] == ["Running"]

        running = steps["ClusterQueue research while it runs"]
        assert cq_usage(running) == ({(flavor["metadata"]["name"], "nvidia.com/gpu"): str(gpus)}, 1)
        listed = table(running, f"kubectl kueue list workload -n {demo.NAMESPACE}")
        assert [(w["JOB NAME"], w["CLUSTERQUEUE"], w["STATUS"]) for w in listed] == [
            (name[1], "research", "ADMITTED")
        ], "the usage should be printed while the Workload is still admitted, i.e. the Job runs"
        url = re.search(r"^dashboard: (https://\S+)", running, re.M)
        assert url, f"no dashboard URL in:\n{running}"
        ca = ssl.create_default_context(cafile=str(run_dir / "certs" / "ca.crt"))  # the stack's CA, as the line says
        with urllib.request.urlopen(f"{url[1]}/healthz", timeout=10, context=ca) as r:  # the stack keeps running
            assert r.status == 200

        released = steps["After the Job completes, its Workload is Finished and the quota is released"]
        assert cq_usage(released) == ({(flavor["metadata"]["name"], "nvidia.com/gpu"): "0"}, 0)
    finally:
        # `make down` for this directory: the demo leaves its stack running for the user.
        subprocess.run([sys.executable, str(ROOT / "e2e" / "stack.py"), "down", "--dir", str(run_dir)], timeout=120)
        shutil.rmtree(run_dir, ignore_errors=True)
