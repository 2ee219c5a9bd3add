"""Wait estimates measured against the admissions that followed, on Jobs whose run times are known.

Two ClusterQueues of 2 cpu each get Jobs of 1 cpu whose kwok pods complete after a set delay:
`obs` learns run times from two finished warm-up Jobs (its Jobs have no limit), `lim` has every
Job labelled with maximumExecutionTimeSeconds. While the queues drain, the test reads our
visibility API every half second as the admin and keeps each pending workload's first and latest
estimate; at the end it compares them with the QuotaReserved times and prints p50/p90 of the
absolute errors (the README quotes the figures). The server's own scoring of the same estimates
(`estimation.accuracy`, `pykueue_wait_estimate_error_seconds`) must have scored them too.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from e2e.conftest import Kubectl
from e2e.helpers import cluster_queue, cond, flavor, job, local_queue, wait_for, workloads
from webhook.core.estimate_accuracy import percentile

G = "/apis/visibility.pykueue.io/v1alpha1"
RUN_S = 6  # each pod completes this long after it runs
LIMIT_S = 20  # `lim`'s Jobs: maximumExecutionTimeSeconds, comfortably above the run time
JOBS = {"obs": 10, "lim": 8}


def _time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


@pytest.fixture
def queues(kubectl: Kubectl, namespace: str) -> Iterator[dict[str, str]]:
    """obs and lim: LocalQueue name -> its ClusterQueue (2 cpu each, one flavor, no cohort)."""
    sfx = uuid.uuid4().hex[:6]
    rf = f"est-{sfx}"
    kubectl.apply(flavor(rf))
    out = {lq: f"est-{lq}-{sfx}" for lq in JOBS}
    for lq, cq in out.items():
        kubectl.apply(cluster_queue(cq, rf, "2"))
        kubectl.apply(local_queue(namespace, lq, cq))
    yield out
    for cq in out.values():
        kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
    kubectl("delete", "resourceflavor", rf, "--wait=false", check=False)


def _finished(kubectl: Kubectl, ns: str, want: int) -> bool:
    return sum(1 for w in workloads(kubectl, ns) if cond(w, "Finished").get("status") == "True") >= want


def _job(ns: str, name: str, lq: str, *, limit: int | None = None) -> dict[str, Any]:
    labels = {} if limit is None else {"kueue.x-k8s.io/max-exec-time-seconds": str(limit)}
    return job(ns, name, lq, run_for=f"{RUN_S}s", labels=labels)


def test_estimates_against_the_admissions_that_followed(
    kubectl: Kubectl, namespace: str, queues: dict[str, str]
) -> None:
    # Warm-up: two finished runs give `obs` its run-time basis.
    for i in range(2):
        kubectl.apply(_job(namespace, f"warm-{i}", "obs"))
    wait_for("the warm-up Jobs to finish", lambda: _finished(kubectl, namespace, 2), timeout=120, interval=1)

    names = [(lq, f"{lq}-{i:02d}") for lq, n in JOBS.items() for i in range(n)]
    for lq, name in names:
        kubectl.apply(_job(namespace, name, lq, limit=LIMIT_S if lq == "lim" else None))

    first: dict[str, datetime | None] = {}
    latest: dict[str, datetime | None] = {}
    pages: dict[str, Any] = {}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for lq in JOBS:
            res = kubectl("get", "--raw", f"{G}/namespaces/{namespace}/localqueues/{lq}/pendingworkloads", check=False)
            if res.returncode != 0:
                continue
            pages[lq] = json.loads(res.stdout)
            for item in pages[lq]["items"]:
                eta = item["estimatedAdmission"]
                at = None if eta is None else _time(eta["time"])
                first.setdefault(item["metadata"]["name"], at)
                latest[item["metadata"]["name"]] = at
        if _finished(kubectl, namespace, 2 + len(names)):
            break
        time.sleep(0.5)
    assert _finished(kubectl, namespace, 2 + len(names)), "the Jobs did not all finish in 300 s"

    report = []
    for lq, cq in queues.items():
        errors: dict[str, list[float]] = {"first": [], "latest": []}
        unknown = []
        for wl in workloads(kubectl, namespace):
            name = wl["metadata"]["name"]
            if wl["spec"]["queueName"] != lq or name not in first:
                continue
            reserved = _time(cond(wl, "QuotaReserved")["lastTransitionTime"])
            for which, seen in (("first", first), ("latest", latest)):
                if (at := seen[name]) is None:
                    unknown.append(f"{which}:{name}")
                else:
                    errors[which].append(abs((reserved - at).total_seconds()))
        # Every workload that waited had an estimate from the first look on (the basis was there).
        assert unknown == [], f"{lq}: estimates unknown for {unknown}"
        assert len(errors["first"]) >= JOBS[lq] - 2, f"{lq}: only {len(errors['first'])} workloads seen waiting"
        p = {w: (percentile(errors[w], 50), percentile(errors[w], 90)) for w in errors}
        report.append(
            f"{lq} ({cq}): {len(errors['first'])} waited; first estimate |error| p50 {p['first'][0]:.0f}s "
            f"p90 {p['first'][1]:.0f}s; latest p50 {p['latest'][0]:.0f}s p90 {p['latest'][1]:.0f}s"
        )
        # The server scored the same admissions against its own first and latest estimates.
        accuracy = pages[lq]["estimation"]["accuracy"]
        assert accuracy["admissions"] >= len(errors["first"]), accuracy
        report.append(f"  server: {json.dumps(accuracy)}")
        bound = 3 * RUN_S if lq == "obs" else 3 * LIMIT_S
        assert (p["latest"][1] or 0) <= bound, report
    print("wait estimates: " + "\n".join(report))
