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
from fractions import Fraction
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from webhook.api.quantity import parse as quantity  # noqa: E402
from webhook.dashboard.auth import AUDIENCE  # noqa: E402
from webhook.install import dashboard  # noqa: E402

#: What the demo applies (the e2e suite applies the same): ClusterQueue research admits namespaces
#: carrying NAMESPACE_LABELS; GPU_QUOTA holds the flavor/ClusterQueue/LocalQueue, GPU_JOB the Job.
NAMESPACE = "team-a"
NAMESPACE_LABELS = {"kueue.x-k8s.io/queue": "research"}
GPU_QUOTA = HERE / "examples" / "gpu-quota.yaml"
GPU_JOB = HERE / "examples" / "gpu-job.yaml"
#: kwok completes a Job's pod 2 s after it starts unless this annotation says otherwise: the demo gives the
#: example's pod RUN_FOR, long enough to see the quota in use (a real kubelet ignores the annotation).
KWOK_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"
RUN_FOR = "20s"
#: ClusterQueue status is published up to a second after a Workload changes (upstream's
#: UpdatesBatchPeriod); the demo waits this long at most for it to count the admitted Workload.
USAGE_TIMEOUT = 30.0
CQ_USAGE = 'jsonpath=flavorsUsage={.status.flavorsUsage} admittedWorkloads={.status.admittedWorkloads}{"\\n"}'


def step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def wait(
    run: Callable[..., str],
    what: str,
    probe: Callable[[], Any],
    timeout: float = 30,
    detail: Callable[[], str] | None = None,
) -> Any:
    """Poll `probe` until it gives something truthy; past `timeout`, stop the demo saying what never
    happened (and `detail()`, e.g. what was seen last)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(0.3)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}" + (f"; {detail()}" if detail else ""))


def _condition(obj: dict[str, Any], ctype: str) -> str:
    return next((c["status"] for c in obj.get("status", {}).get("conditions", []) if c["type"] == ctype), "")


def _admitted(run: Callable[..., str]) -> dict[str, Any] | None:
    items = json.loads(run("get", "workloads", "-n", NAMESPACE, "-o", "json", show=False))["items"]
    fresh = sorted(items, key=lambda w: w["metadata"]["creationTimestamp"])[-1:] if items else []
    return next((w for w in fresh if _condition(w, "Admitted") == "True"), None)


def _charged(wl: dict[str, Any]) -> dict[tuple[str, str], Fraction]:
    """What an admitted Workload charges its ClusterQueue, per (flavor, resource)."""
    charged: dict[tuple[str, str], Fraction] = {}
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        for resource, amount in (psa.get("resourceUsage") or {}).items():
            key = (psa["flavors"][resource], resource)
            charged[key] = charged.get(key, Fraction(0)) + quantity(amount)
    return charged


def _counts(cq: dict[str, Any], wl: dict[str, Any]) -> bool:
    """Whether the ClusterQueue's status counts the admitted Workload: its admittedWorkloads and, for every
    flavor and resource the Workload was given, at least that much flavorsUsage."""
    status = cq.get("status") or {}
    used = {
        (f["name"], r["name"]): quantity(r["total"])
        for f in status.get("flavorsUsage") or ()
        for r in f.get("resources") or ()
    }
    return status.get("admittedWorkloads", 0) >= 1 and all(
        used.get(key, Fraction(0)) >= amount for key, amount in _charged(wl).items()
    )


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

    kubeconfig: Path | None = None
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
        kubeconfig = stack.kubeconfig
        kubectl = [str(stack.cluster.bin_dir / "kubectl"), "--kubeconfig", str(kubeconfig)]
        os.environ.pop("KUBECONFIG", None)

    def run(*cmd: str, input: str | None = None, show: bool = True, check: bool = True) -> str:
        if show:
            print("$ kubectl " + " ".join(cmd), flush=True)
        out = subprocess.run([*kubectl, *cmd], input=input, capture_output=True, text=True)
        text = out.stdout + out.stderr
        if show:
            print(text.rstrip(), flush=True)
        if check and out.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(cmd)} failed")
        return out.stdout

    def kueue(*cmd: str) -> None:
        """`kubectl kueue ...` as a user types it: kubectl runs the kubectl-kueue plugin found on PATH (this
        venv's bin first). kubectl allows no flag before a plugin's name, so the kubeconfig goes in KUBECONFIG."""
        print("$ kubectl kueue " + " ".join(cmd), flush=True)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        if kubeconfig is not None:
            env["KUBECONFIG"] = str(kubeconfig)
        out = subprocess.run([kubectl[0], "kueue", *cmd], env=env, capture_output=True, text=True)
        print((out.stdout + out.stderr).rstrip(), flush=True)
        if out.returncode != 0:
            raise SystemExit(f"kubectl kueue {' '.join(cmd)} failed")

    def dashboard_line() -> str:
        """Where to see the same in the dashboard: the local stack's URL, or the port-forward to the
        in-cluster one (installed only on request, as upstream's KueueViz)."""
        if kubeconfig is not None:
            return stack.dashboard_line()
        found = run(
            "get",
            "services",
            "-A",
            f"--field-selector=metadata.name={dashboard.NAME}",
            "-o",
            "json",
            show=False,
            check=False,
        )
        items = json.loads(found)["items"] if found else []
        if not items:
            return "dashboard: not installed (`kubectl apply -k manifests/dashboard`, or helm's enableKueueViz=true)"
        ns = items[0]["metadata"]["namespace"]
        return (
            f"dashboard: `kubectl -n {ns} port-forward svc/{dashboard.NAME} {dashboard.PORT}`, then "
            f"https://localhost:{dashboard.PORT}  (sign in with a token from "
            f"`kubectl create token <serviceaccount> -n <namespace> --audience={AUDIENCE}`)"
        )

    step("Nodes (kwok): two carry nvidia.com/gpu=8 and nvidia.com/gpu.present=true")
    run("get", "nodes", "-L", "instance-type,nvidia.com/gpu.present")
    step("Quota objects: ResourceFlavor gpu-nodes, ClusterQueue research, LocalQueue team-a-gpu")
    run("apply", "-f", "-", input=run("create", "namespace", NAMESPACE, "--dry-run=client", "-o", "yaml", show=False))
    run("label", "namespace", NAMESPACE, *(f"{k}={v}" for k, v in NAMESPACE_LABELS.items()), "--overwrite")
    run("apply", "-f", str(GPU_QUOTA))
    run("get", "resourceflavors,clusterqueues")
    run("get", "localqueues", "-n", NAMESPACE)
    step("A Job asking for 2 GPUs, labelled kueue.x-k8s.io/queue-name=team-a-gpu")
    print(f"$ kubectl create -f {GPU_JOB}  # pod annotated {KWOK_DELAY}={RUN_FOR}: kwok runs it that long", flush=True)
    manifest = json.loads(run("create", "-f", str(GPU_JOB), "--dry-run=client", "-o", "json", show=False))
    manifest["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[KWOK_DELAY] = RUN_FOR
    job = json.loads(run("create", "-f", "-", "-o", "json", input=json.dumps(manifest), show=False))
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
        "the pod to be Running",
        lambda: any(
            p["status"].get("phase") == "Running"
            for p in json.loads(
                run("get", "pods", "-n", NAMESPACE, "-l", f"job-name={name}", "-o", "json", show=False)
            )["items"]
        ),
    )
    run("get", "pods", "-n", NAMESPACE, "-l", f"job-name={name}", "-o", "wide")
    step("ClusterQueue research while it runs")
    last: list[dict[str, Any]] = [{}]

    def counted() -> bool:
        last[0] = json.loads(run("get", "clusterqueue", "research", "-o", "json", show=False))
        return _counts(last[0], wl)

    wait(
        run,
        f"ClusterQueue research's status to count Workload {wl['metadata']['name']} ("
        + ", ".join(f"{amount} {res} in {flavor}" for (flavor, res), amount in _charged(wl).items())
        + ")",
        counted,
        timeout=USAGE_TIMEOUT,
        detail=lambda: (
            f"it still shows flavorsUsage={json.dumps(last[0].get('status', {}).get('flavorsUsage'))} "
            f"admittedWorkloads={last[0].get('status', {}).get('admittedWorkloads')}"
        ),
    )
    run("get", "clusterqueue", "research", "-o", CQ_USAGE)
    kueue("list", "workload", "-n", NAMESPACE)
    print(dashboard_line(), flush=True)
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
    run("get", "clusterqueue", "research", "-o", CQ_USAGE)
    if not args.cluster:
        print(f"\nThe local stack keeps running (kubeconfig {stack.kubeconfig}); `make down` stops it.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
