"""Budgets (ours) end to end: a ClusterQueue lists the built-in `pykueue.io/budget` check; a Budget
with a one-minute period holds the queue's next Workload (check Pending, with what is left and
when it resets) and lets it through when the period resets; `kubectl create` warns once the
budget is nearly spent; the submitting user is stamped on the Job and its Workload, refused as an
edit, and `kubectl kueue usage --by user` shows it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from e2e.conftest import Kubectl
from e2e.helpers import ClusterObjects, cluster_queue, cond, flavor, job, local_queue, wait_for, when, workload_of

CLI = Path(sys.executable).parent / "kubectl-kueue"
KEY = "pykueue.io/submitted-by"
# 10m cpu-hours = 36 core-seconds per minute; each Job is 1 cpu for at most 20 s (20 core-seconds).
LIMIT_CPU = "10m"
RUNTIME = "20"


def budget_job(ns: str, name: str, run_for: str = "15s") -> dict[str, Any]:
    obj = job(ns, name, "lq", cpu="1", run_for=run_for)
    obj["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = RUNTIME
    return obj


def check_of(kubectl: Kubectl, ns: str, name: str) -> dict[str, Any]:
    wl = workload_of(kubectl, ns, name) or {}
    return next(iter((wl.get("status") or {}).get("admissionChecks") or ()), {})


def cli(kubectl: Kubectl, *args: str) -> str:
    """`kubectl kueue ARGS` against the stack, its stdout."""
    return subprocess.run(
        [str(CLI), *args],
        env={**os.environ, "KUBECONFIG": str(kubectl.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout


def seconds_into_minute() -> float:
    now = datetime.now(UTC)
    return now.second + now.microsecond / 1e6


def test_budget_holds_the_next_workload_until_the_period_resets(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    rf, cq, ac, bud = objs.name("b-rf"), objs.name("b-cq"), objs.name("budget"), objs.name("team")
    objs.apply(flavor(rf))
    objs.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": ac},
            "spec": {"controllerName": "pykueue.io/budget"},
        }
    )
    queue = cluster_queue(cq, rf, "8")
    queue["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": ac}]}
    objs.apply(queue)
    objs.apply(local_queue(namespace, "lq", cq))
    objs.apply(
        {
            "apiVersion": "pykueue.io/v1alpha1",
            "kind": "Budget",
            "metadata": {"name": bud},
            "spec": {"clusterQueue": cq, "period": {"every": "PT60S"}, "limit": {"resourceHours": {"cpu": LIMIT_CPU}}},
        }
    )
    wait_for(
        "the ClusterQueue active (the budget check Active)",
        lambda: when(kubectl.get("clusterqueue", cq), lambda o: cond(o, "Active").get("status") == "True"),
    )
    # alice may create Jobs in the namespace, as a tenant would
    kubectl("create", "rolebinding", "alice-edit", "-n", namespace, "--clusterrole=edit", "--user=alice")

    # Start early in a minute, so the first Jobs fall in one period.
    wait_for("the start of a minute", lambda: 1 < seconds_into_minute() < 15 or None, timeout=70, interval=0.5)
    forged = budget_job(namespace, "first")
    forged["metadata"]["annotations"] = {KEY: "somebody-else"}
    kubectl("create", "--as=alice", "-f", "-", input=json.dumps(forged))
    wait_for("first admitted", lambda: check_of(kubectl, namespace, "first").get("state") == "Ready" or None)
    assert kubectl.get("job", "-n", namespace, "first")["metadata"]["annotations"][KEY] == "alice"
    assert (workload_of(kubectl, namespace, "first") or {})["metadata"]["annotations"][KEY] == "alice"
    refused = kubectl(
        "annotate", "--as=alice", "job", "-n", namespace, "first", f"{KEY}=mallory", "--overwrite", check=False
    )
    assert refused.returncode != 0
    assert (
        f"metadata.annotations[{KEY}]: Forbidden: is set by Kueue at creation and cannot be changed" in refused.stderr
    )

    kubectl("create", "-f", "-", input=json.dumps(budget_job(namespace, "second")))
    pending = wait_for(
        "second held by the budget",
        lambda: when(check_of(kubectl, namespace, "second"), lambda c: "left of" in (c.get("message") or "")),
        timeout=20,
    )
    assert pending["state"] == "Pending"
    assert pending["message"].startswith(f'budget "{bud}" (ClusterQueue {cq}): ')
    assert re.search(
        r"core-hours of cpu left of 0\.01 core-hours of cpu, this Workload needs 0\.0056 core-hours", pending["message"]
    )
    reset_at = re.search(r"resets at (\S+Z)$", pending["message"])
    assert reset_at is not None
    status = kubectl.get("budget", bud)["status"]
    assert status["resetAt"] == reset_at.group(1)
    held_since = time.time()

    # Nearly spent (what first used and commits, plus second's reservation as it waits): kubectl warns.
    wait_for(
        "the budget 90 % used",
        lambda: kubectl.get("budget", bud)["status"].get("usedPercent", 0) >= 90 or None,
        timeout=40,
    )
    created = kubectl("create", "-f", "-", input=json.dumps(budget_job(namespace, "third")))
    assert f'Warning: budget "{bud}" (ClusterQueue {cq}) is ' in created.stderr, created.stderr
    assert f"spent (resets at {reset_at.group(1)}): the Job may wait for budget" in created.stderr

    # The period resets: the oldest waiting Workload goes, the next still waits (they cannot share).
    ready = wait_for(
        "second let through at the reset",
        lambda: when(check_of(kubectl, namespace, "second"), lambda c: c.get("state") == "Ready"),
        timeout=80,
    )
    waited = time.time() - held_since
    reset = datetime.fromisoformat(reset_at.group(1).replace("Z", "+00:00")).timestamp()
    assert time.time() >= reset
    assert ready["message"].startswith(f'budget "{bud}" (ClusterQueue {cq}): fits')
    wait_for(
        "second admitted",
        lambda: cond(workload_of(kubectl, namespace, "second") or {}, "Admitted").get("status") == "True" or None,
    )
    assert check_of(kubectl, namespace, "third")["state"] == "Pending"
    explained = cli(kubectl, "explain", "job/third", "-n", namespace)
    assert f'Blocked: held by budget (admission check {ac}): budget "{bud}"' in explained, explained
    print(f"budget: second held {waited:.1f} s, released {time.time() - reset:.1f} s after the reset")

    # The usage records carry the submitting user (written at most every 10 s).
    def by_user() -> dict[str, float] | None:
        out = cli(kubectl, "usage", "--by", "user", "-n", namespace, "-o", "json")
        users = {i["user"]: i["resourceHours"] for i in json.loads(out)["items"] if i["resource"] == "cpu"}
        return users if "alice" in users and len(users) == 2 else None

    users = wait_for("usage by user", by_user, timeout=40, interval=2)
    assert users["alice"] > 0
