"""`kubectl-kueue` as a user runs it: the installed executable, in a subprocess, against the session's stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.conftest import Kubectl
from e2e.helpers import create, wait_for

pytestmark = pytest.mark.cluster
CLI = Path(sys.executable).parent / "kubectl-kueue"


class Cli:
    """The executable with the stack's kubeconfig, kubectl on PATH for the pass-through commands."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.env = {
            **os.environ,
            "KUBECONFIG": str(kubectl.kubeconfig),
            "PATH": f"{Path(kubectl.binary).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def __call__(self, *args: str, ok: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(CLI), *args], env=self.env, capture_output=True, text=True, timeout=60, input=input)
        if ok and proc.returncode != 0:
            raise AssertionError(f"kubectl-kueue {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        assert "Traceback" not in proc.stderr
        return proc


@pytest.fixture
def cli(kubectl: Kubectl) -> Cli:
    return Cli(kubectl)


def job(ns: str, name: str, queue: str, cpu: str, *, run_for: str = "10m") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "suspend": True,
            "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": run_for}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                },
            },
        },
    }


@pytest.fixture
def queues(cli: Cli, kubectl: Kubectl, namespace: str) -> Any:
    """A flavor, a ClusterQueue of 2 cpu and a LocalQueue, all made with the CLI."""
    suffix = uuid.uuid4().hex[:6]
    names = {"rf": f"cli-rf-{suffix}", "cq": f"cli-cq-{suffix}", "lq": "cli-lq"}
    cli("create", "resourceflavor", names["rf"], "--node-labels", "instance-type=on-demand")
    cli("create", "clusterqueue", names["cq"], "--nominal-quota", f"{names['rf']}:cpu=2")
    cli("create", "localqueue", names["lq"], "--clusterqueue", names["cq"], "--namespace", namespace)
    yield names
    kubectl("delete", "clusterqueue", names["cq"], "--wait=false", check=False)
    kubectl("delete", "resourceflavor", names["rf"], "--wait=false", check=False)


def test_create_and_list_queues(cli: Cli, queues: Any, namespace: str) -> None:
    out = cli("list", "clusterqueue").stdout
    assert out.splitlines()[0].split() == [
        "NAME",
        "COHORT",
        "PENDING",
        "WORKLOADS",
        "ADMITTED",
        "WORKLOADS",
        "ACTIVE",
        "AGE",
    ]
    row = next(line for line in out.splitlines() if line.startswith(queues["cq"]))
    assert row.split()[1:4] == ["0", "0", "true"]
    out = cli("list", "lq", "-n", namespace).stdout
    assert out.splitlines()[1].split()[:2] == ["cli-lq", queues["cq"]]
    assert namespace in cli("list", "localqueue", "-A", "--clusterqueue", queues["cq"]).stdout
    doc = json.loads(cli("list", "localqueue", "-n", namespace, "-o", "json").stdout)
    assert (doc["kind"], doc["items"][0]["spec"]["clusterQueue"]) == ("LocalQueueList", queues["cq"])
    assert queues["rf"] in cli("list", "rf").stdout
    assert "instance-type=on-demand" in cli("list", "resourceflavor").stdout
    got = cli("create", "localqueue", "x", "-c", "no-such-cq", "-n", namespace, ok=False)
    assert (got.returncode, got.stderr) == (1, 'Error: clusterqueues.kueue.x-k8s.io "no-such-cq" not found\n')


def test_stop_and_resume_queues(cli: Cli, kubectl: Kubectl, queues: Any, namespace: str) -> None:
    assert cli("stop", "clusterqueue", queues["cq"]).stdout == f"clusterqueue.kueue.x-k8s.io/{queues['cq']}\n"
    assert kubectl.get("clusterqueue", queues["cq"])["spec"]["stopPolicy"] == "HoldAndDrain"
    wait_for("the ClusterQueue inactive", lambda: "false" in cli("list", "cq", "--active", "false").stdout)
    cli("resume", "cq", queues["cq"])
    cli("stop", "localqueue", "cli-lq", "-n", namespace, "--keep-already-running")
    assert kubectl.get("localqueue", "cli-lq", "-n", namespace)["spec"]["stopPolicy"] == "Hold"
    cli("resume", "lq", "cli-lq", "-n", namespace)
    assert kubectl.get("localqueue", "cli-lq", "-n", namespace)["spec"]["stopPolicy"] == "None"


def test_workloads_pods_and_passthrough(cli: Cli, kubectl: Kubectl, queues: Any, namespace: str) -> None:
    create(kubectl, job(namespace, "fits", "cli-lq", "2"))
    create(kubectl, job(namespace, "waits", "cli-lq", "1"))

    def rows() -> dict[str, list[str]]:
        out = cli("list", "workload", "-n", namespace).stdout
        return {line.split()[0]: line.split() for line in out.splitlines()[1:]}

    wait_for(
        "one admitted, one pending",
        lambda: sorted(r[5] if len(r) > 5 else "" for r in rows().values()) == ["ADMITTED", "PENDING"] and rows(),
    )
    admitted = next(r for r in rows().values() if "ADMITTED" in r)
    assert admitted[1:5] == ["job", "fits", "cli-lq", queues["cq"]]
    assert cli("list", "workload", "-n", namespace, "--for", "job/waits").stdout.count("\n") == 2
    assert cli("list", "workload", "-n", namespace, "--status", "pending").stdout.count("PENDING") == 1

    wait_for(
        "the admitted Job's pod", lambda: "fits-" in cli("list", "pods", "--for", "job/fits", "-n", namespace).stdout
    )
    assert cli("list", "pods", "--for", "job/fits", "-n", namespace).stdout.split()[:5] == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
    ]

    pending = next(name for name, r in rows().items() if "PENDING" in r)
    assert cli("stop", "workload", pending, "-n", namespace).stdout == f"workload.kueue.x-k8s.io/{pending} stopped\n"
    assert kubectl.get("workload", pending, "-n", namespace)["spec"]["active"] is False
    cli("resume", "kwl", pending, "-n", namespace)
    assert kubectl.get("workload", pending, "-n", namespace)["spec"]["active"] is True

    assert pending in cli("get", "workload", "-n", namespace).stdout
    assert "Cluster Queue:" in cli("describe", "lq", "cli-lq", "-n", namespace).stdout
    cli("patch", "lq", "cli-lq", "-n", namespace, "--type=merge", "-p", '{"metadata":{"labels":{"x":"y"}}}')
    assert kubectl.get("localqueue", "cli-lq", "-n", namespace)["metadata"]["labels"] == {"x": "y"}

    got = cli("delete", "workload", pending, "-n", namespace, "--yes")
    assert got.stdout == "jobs.batch/waits deleted\n"
    wait_for("the Job gone", lambda: kubectl("get", "job", "waits", "-n", namespace, check=False).returncode != 0)


def test_version_and_completion(cli: Cli) -> None:
    assert cli("version").stdout.startswith("Client Version: v")
    assert "_KUBECTL_KUEUE_COMPLETE" in cli("completion", "bash").stdout
    got = subprocess.run(
        [str(CLI.parent / "kubectl_complete-kueue"), "list", "c"],
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert got.stdout.splitlines() == ["clusterqueue", ":4"]


def test_errors_are_one_line(cli: Cli) -> None:
    got = cli("list", "workload", "--status", "bogus", ok=False)
    assert (got.returncode, got.stderr.count("\n")) == (1, 1)
    got = cli("--kubeconfig", "/nonexistent", "list", "cq", ok=False)
    assert got.returncode == 1 and got.stderr.startswith("Error: ") and got.stderr.count("\n") == 1


# --------------------------------------------------------------------------- explain and dry-run


def manifest(ns: str, name: str, queue: str, cpu: str, *, count: int = 1, priority: str | None = None) -> str:
    obj = job(ns, name, queue, cpu)
    obj["spec"]["parallelism"] = obj["spec"]["completions"] = count
    if priority:
        obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priority
    return json.dumps(obj)


@pytest.fixture
def cohort(cli: Cli, kubectl: Kubectl, namespace: str) -> Any:
    """ClusterQueue `mine` (2 cpu, may borrow 2, preempts lower priority) and `lender` (4 cpu) in one cohort."""
    suffix = uuid.uuid4().hex[:6]
    names = {
        "rf": f"cli-rf-{suffix}",
        "mine": f"cli-mine-{suffix}",
        "lender": f"cli-lender-{suffix}",
        "wpc": f"cli-high-{suffix}",
    }
    cli("create", "rf", names["rf"])
    cli(
        "create",
        "cq",
        names["mine"],
        "--cohort",
        f"cli-{suffix}",
        "--nominal-quota",
        f"{names['rf']}:cpu=2",
        "--borrowing-limit",
        f"{names['rf']}:cpu=2",
        "--preemption-within-cluster-queue",
        "LowerPriority",
    )
    cli("create", "cq", names["lender"], "--cohort", f"cli-{suffix}", "--nominal-quota", f"{names['rf']}:cpu=4")
    cli("create", "lq", "mine", "-c", names["mine"], "-n", namespace)
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": names["wpc"]},
            "value": 1000,
        }
    )
    yield names
    for kind in ("clusterqueue", "clusterqueue", "resourceflavor", "workloadpriorityclass"):
        key = {"clusterqueue": None, "resourceflavor": "rf", "workloadpriorityclass": "wpc"}[kind]
        for name in [names["mine"], names["lender"]] if key is None else [names[key]]:
            kubectl("delete", kind, name, "--wait=false", check=False)


def dry_run(cli: Cli, text: str) -> str:
    return cli("dry-run", "-f", "-", input=text).stdout


def test_dry_run_scenarios(cli: Cli, kubectl: Kubectl, cohort: Any, namespace: str) -> None:
    rf = cohort["rf"]
    out = dry_run(cli, manifest(namespace, "fits", "mine", "1"))
    assert f"would be admitted now by ClusterQueue {cohort['mine']}" in out and f"cpu on {rf} (1 pods)" in out

    out = dry_run(cli, manifest(namespace, "borrows", "mine", "1", count=4))
    assert "would be admitted now" in out
    assert out.splitlines()[-1].split() == ["main", rf, "cpu", "4", "2", "0", "2", "0"], out

    out = dry_run(cli, manifest(namespace, "never", "mine", "1", count=5))
    assert "can never fit" in out and "pod set main: cpu 5 requested, at most 4 in any flavor" in out

    create(kubectl, job(namespace, "low", "mine", "4"))  # its nominal 2 and all it may borrow
    wait_for("the low-priority Job admitted", lambda: "ADMITTED" in cli("list", "workload", "-n", namespace).stdout)
    out = dry_run(cli, manifest(namespace, "urgent", "mine", "2", priority=cohort["wpc"]))
    assert "after preempting 1 workload(s):" in out and f"{namespace}/job-low-" in out, out
    assert not [w for w in kubectl.get("workloads", "-n", namespace)["items"] if "urgent" in w["metadata"]["name"]]


def test_explain_scenarios(cli: Cli, kubectl: Kubectl, cohort: Any, namespace: str) -> None:
    create(kubectl, job(namespace, "first", "mine", "4"))
    wait_for("first admitted", lambda: "ADMITTED" in cli("list", "workload", "-n", namespace).stdout)
    kubectl("patch", "clusterqueue", cohort["lender"], "--type=merge", "-p", '{"spec":{"stopPolicy":"Hold"}}')
    create(kubectl, job(namespace, "second", "mine", "1"))

    def explained() -> str | None:
        out = cli("explain", "job/second", "-n", namespace).stdout
        return out if "Kueue says:" in out else None

    out = wait_for("second pending with a reason", explained)
    assert out.startswith(f"Workload {namespace}/job-second-") and "PENDING" in out.splitlines()[0]
    # The stack serves the visibility API, whose positions count from 0 (upstream's).
    assert f"Position: 0 in ClusterQueue {cohort['mine']}, 0 in LocalQueue mine" in out and "Ahead of it: none" in out
    assert "would stay pending" in out
    row = out.splitlines()[-1].split()
    assert row[:8] == ["main", cohort["rf"], "cpu", "1", "2", "4", "0", "1"], out

    kubectl("patch", "clusterqueue", cohort["mine"], "--type=merge", "-p", '{"spec":{"stopPolicy":"Hold"}}')
    wait_for(
        "the stop reported",
        lambda: "is stopped (stopPolicy Hold)" in cli("explain", "job/second", "-n", namespace).stdout,
    )

    kubectl("label", "namespace", namespace, "pykueue-cli=yes")
    kubectl(
        "patch",
        "clusterqueue",
        cohort["mine"],
        "--type=merge",
        "-p",
        '{"spec":{"stopPolicy":"None","namespaceSelector":{"matchLabels":{"pykueue-cli":"no"}}}}',
    )
    out = wait_for(
        "namespace not selected",
        lambda: (o := cli("explain", "job/second", "-n", namespace).stdout) and "does not select namespace" in o and o,
    )
    assert f"ClusterQueue {cohort['mine']}'s namespaceSelector does not select namespace {namespace}" in out

    assert "ADMITTED" in cli("explain", "job/first", "-n", namespace).stdout.splitlines()[0]
    got = cli("explain", "job/nope", "-n", namespace, ok=False)
    assert (got.returncode, got.stderr) == (1, 'Error: jobs.batch "nope" not found\n')


def test_submit_time_warnings(cli: Cli, kubectl: Kubectl, queues: Any, namespace: str) -> None:
    """kubectl shows the webhook's warnings at create; the Job is created all the same."""

    def created(obj: dict[str, Any]) -> str:
        proc = kubectl("create", "-f", "-", input=json.dumps(obj))
        return proc.stderr

    # the lookups cache follows the LocalQueue and ClusterQueue made a moment ago by the fixture
    wait_for(
        "the queue in the webhook's cache",
        lambda: "never fit" in created(job(namespace, f"probe-{uuid.uuid4().hex[:4]}", "cli-lq", "3")),
    )
    assert created(job(namespace, "fits", "cli-lq", "1")) == ""
    assert (
        created(job(namespace, "lost", "no-such-lq", "1"))
        == f'Warning: LocalQueue "no-such-lq" does not exist in namespace "{namespace}": the Job stays pending until it is created\n'
    )
    assert (
        created(job(namespace, "huge", "cli-lq", "3"))
        == f'Warning: the Job can never fit ClusterQueue "{queues["cq"]}": cpu 3 requested, at most 2 in any flavor\n'
    )
    kubectl(
        "patch",
        "clusterqueue",
        queues["cq"],
        "--type=merge",
        "-p",
        '{"spec":{"namespaceSelector":{"matchLabels":{"pykueue-cli":"nowhere"}}}}',
    )
    wait_for(
        "the selector warning",
        lambda: "does not select namespace" in created(job(namespace, f"sel-{uuid.uuid4().hex[:4]}", "cli-lq", "1")),
    )
    assert kubectl("get", "job", "huge", "-n", namespace, check=False).returncode == 0


TAS_EXAMPLE = Path(__file__).resolve().parent / "examples" / "tas-rack-job.yaml"
RACKS = {"kwok-spot-1": "r1", "kwok-spot-2": "r1", "kwok-gpu-1": "r2", "kwok-gpu-2": "r2"}
TAS_LABELS = ("cloud.provider.com/node-group", "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack")


@pytest.fixture
def racks(kubectl: Kubectl) -> Iterator[dict[str, str]]:
    """Four of the stack's nodes laid out as two racks of a block, as the README example expects; only while
    the test runs."""
    for node, rack in RACKS.items():
        values = ("tas-group", "b1", rack)
        kubectl("label", "node", node, "--overwrite", *(f"{k}={v}" for k, v in zip(TAS_LABELS, values, strict=True)))
    yield RACKS
    for node in RACKS:
        kubectl("label", "node", node, *(f"{k}-" for k in TAS_LABELS), check=False)


def test_the_readme_rack_job_runs_in_one_rack_and_explain_names_its_hosts(
    cli: Cli, kubectl: Kubectl, namespace: str, racks: dict[str, str]
) -> None:
    """e2e/examples/tas-rack-job.yaml as a user applies it: the Job's three pods are ungated onto hosts of one
    rack, and `kubectl kueue explain` says which."""
    docs = [
        d
        for d in yaml.safe_load_all(TAS_EXAMPLE.read_text().replace("namespace: default", f"namespace: {namespace}"))
        if d
    ]
    cluster_scoped = [(d["kind"].lower(), d["metadata"]["name"]) for d in docs if "namespace" not in d["metadata"]]
    try:
        for doc in docs:
            kubectl.apply(doc)

        def hosts() -> list[str] | None:
            pods = kubectl.get("pods", "-n", namespace, "-l", "job-name=rack-job")["items"]
            placed = [(p["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname") for p in pods]
            ungated = len(pods) == 3 and all(not p["spec"].get("schedulingGates") for p in pods)
            return placed if ungated and all(placed) else None  # type: ignore[return-value]

        placed = wait_for("the three pods ungated onto hosts", hosts)
        assert len({racks[h] for h in placed}) == 1, placed
        out = cli("explain", "job/rack-job", "-n", namespace).stdout
        topology_line = next(line for line in out.splitlines() if line.strip().startswith("topology "))
        assert topology_line.startswith("    topology kubernetes.io/hostname: "), out
        assert {h: placed.count(h) for h in placed} == {
            host: int(count.split()[0])
            for host, count in (part.rstrip(")").split(" (") for part in topology_line.split(": ", 1)[1].split(", "))
        }
    finally:
        kubectl("delete", "job", "rack-job", "-n", namespace, "--ignore-not-found", check=False)
        for kind, name in reversed(cluster_scoped):
            kubectl("delete", kind, name, "--wait=false", "--ignore-not-found", check=False)
