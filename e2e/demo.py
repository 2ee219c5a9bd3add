"""`make run`: the field guide's GPU example, shown the way a user would check it.

With no cluster named, it starts the local stack (control plane + CRDs + our server +
webhooks). `--cluster current` uses the current kubectl context instead, which must already
have us installed; a KUBECONFIG merely present in the environment is never used by surprise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: What the demo applies (the e2e suite applies the same): ClusterQueue research admits namespaces
#: carrying NAMESPACE_LABELS; GPU_QUOTA holds the flavor/ClusterQueue/LocalQueue, GPU_JOB the Job.
NAMESPACE = "team-a"
NAMESPACE_LABELS = {"kueue.x-k8s.io/queue": "research"}
GPU_QUOTA = HERE / "examples" / "gpu-quota.yaml"
GPU_JOB = HERE / "examples" / "gpu-job.yaml"


def step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def wait(run: Callable[..., str], what: str, probe: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(0.3)
    raise SystemExit(f"timed out waiting for {what}")


def _condition(obj: dict[str, Any], ctype: str) -> str:
    return next((c["status"] for c in obj.get("status", {}).get("conditions", []) if c["type"] == ctype), "")


def _admitted(run: Callable[..., str]) -> dict[str, Any] | None:
    items = json.loads(run("get", "workloads", "-n", NAMESPACE, "-o", "json", show=False))["items"]
    fresh = sorted(items, key=lambda w: w["metadata"]["creationTimestamp"])[-1:] if items else []
    return next((w for w in fresh if _condition(w, "Admitted") == "True"), None)


def _finished(run: Callable[..., str], name: str) -> bool:
    return (
        _condition(json.loads(run("get", "workload", "-n", NAMESPACE, name, "-o", "json", show=False)), "Finished")
        == "True"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default=str(HERE.parent / ".run"))
    parser.add_argument("--cluster", help="'current' to use the current kubectl context")
    args = parser.parse_args()

    if args.cluster == "current":
        kubectl = ["kubectl"]
    elif args.cluster:
        print(f"unknown --cluster {args.cluster!r}; use 'current' or nothing", file=sys.stderr)
        return 2
    else:
        from stack import Stack

        stack = Stack(args.dir, teardown_on_exit=False)
        step("Bringing up the local control plane and our server")
        stack.up()
        kubectl = [str(stack.cluster.bin_dir / "kubectl"), "--kubeconfig", str(stack.kubeconfig)]
        os.environ.pop("KUBECONFIG", None)

    def run(*cmd: str, input: str | None = None, show: bool = True) -> str:
        if show:
            print("$ kubectl " + " ".join(cmd), flush=True)
        out = subprocess.run([*kubectl, *cmd], input=input, capture_output=True, text=True)
        text = out.stdout + out.stderr
        if show:
            print(text.rstrip(), flush=True)
        if out.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(cmd)} failed")
        return out.stdout

    step("Nodes (kwok): two carry nvidia.com/gpu=8 and nvidia.com/gpu.present=true")
    run("get", "nodes", "-L", "instance-type,nvidia.com/gpu.present")
    step("Quota objects: ResourceFlavor gpu-nodes, ClusterQueue research, LocalQueue team-a-gpu")
    run("apply", "-f", "-", input=run("create", "namespace", NAMESPACE, "--dry-run=client", "-o", "yaml", show=False))
    run("label", "namespace", NAMESPACE, *(f"{k}={v}" for k, v in NAMESPACE_LABELS.items()), "--overwrite")
    run("apply", "-f", str(GPU_QUOTA))
    run("get", "resourceflavors,clusterqueues")
    run("get", "localqueues", "-n", NAMESPACE)
    step("A Job asking for 2 GPUs, labelled kueue.x-k8s.io/queue-name=team-a-gpu")
    print(f"$ kubectl create -f {GPU_JOB}", flush=True)
    job = json.loads(run("create", "-f", str(GPU_JOB), "-o", "json", show=False))
    name = job["metadata"]["name"]
    print(f"job {name}: spec.suspend = {job['spec']['suspend']} as created (set by our mutating webhook)")
    step("Its Workload: created by the admission worker, quota reserved in ClusterQueue research, admitted")
    wl = wait(run, "the Workload to be admitted", lambda: _admitted(run))
    run("get", "workloads", "-n", NAMESPACE)
    print(
        f"workload {wl['metadata']['name']}: "
        + ", ".join(f"{c['type']}={c['status']} ({c['reason']})" for c in wl["status"]["conditions"])
    )
    step("The Job runs on a GPU node: the flavor's nodeLabels were merged into its nodeSelector")
    run("get", "job", "-n", NAMESPACE, name, "-o", 'jsonpath={.spec.suspend} {.spec.template.spec.nodeSelector}{"\\n"}')
    wait(
        run,
        "the pod to be bound",
        lambda: any(
            p["spec"].get("nodeName")
            for p in json.loads(
                run("get", "pods", "-n", NAMESPACE, "-l", f"job-name={name}", "-o", "json", show=False)
            )["items"]
        ),
    )
    run("get", "pods", "-n", NAMESPACE, "-l", f"job-name={name}", "-o", "wide")
    step("ClusterQueue research while it runs")
    run(
        "get",
        "clusterqueue",
        "research",
        "-o",
        'jsonpath=flavorsUsage={.status.flavorsUsage} admittedWorkloads={.status.admittedWorkloads}{"\\n"}',
    )
    step("After the Job completes, its Workload is Finished and the quota is released")
    wait(run, "Finished", lambda: _finished(run, wl["metadata"]["name"]), timeout=60)
    run("get", "workloads", "-n", NAMESPACE)
    wait(
        run,
        "usage back to 0",
        lambda: (
            json.loads(run("get", "clusterqueue", "research", "-o", "json", show=False))["status"].get(
                "admittedWorkloads"
            )
            == 0
        ),
    )
    run(
        "get",
        "clusterqueue",
        "research",
        "-o",
        'jsonpath=flavorsUsage={.status.flavorsUsage} admittedWorkloads={.status.admittedWorkloads}{"\\n"}',
    )
    if not args.cluster:
        print(f"\nThe local stack keeps running (kubeconfig {stack.kubeconfig}); `make down` stops it.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
