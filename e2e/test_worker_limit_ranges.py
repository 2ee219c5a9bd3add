"""Quota counts what a namespace's LimitRange gives a Job's pods (issue 27, finding 8), end to end.

A Job that sets no requests in a namespace whose LimitRange has `defaultRequest` gets real
requests from the API server's LimitRanger when its pods are created; upstream charges its Workload
the same (`workload.AdjustResources`), so a second such Job waits for quota. A Job whose pods the
LimitRange would refuse (above its max) is never admitted, with upstream's message.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl
from e2e.helpers import (
    cluster_queue,
    cond,
    flavor,
    is_admitted,
    job,
    local_queue,
    reserved_cpu,
    submit,
    wait_for,
    wait_workload,
    workload_of,
)

OVER_MAX = (
    "resources didn't satisfy LimitRange constraints: spec.podSets[0].template.spec.containers[0]: "
    'Invalid value: ["cpu"]: requests must not be above the limitRange max'
)


def limit_range(ns: str, **item: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "limits", "namespace": ns},
        "spec": {"limits": [{"type": "Container", **item}]},
    }


def bare_job(ns: str, name: str, lq: str, **resources: dict[str, str]) -> dict[str, Any]:
    """A queued Job whose container sets `resources` (none at all by default)."""
    j = job(ns, name, lq)
    container = j["spec"]["template"]["spec"]["containers"][0]
    del container["resources"]
    if resources:
        container["resources"] = resources
    return j


@pytest.fixture
def queue(kubectl: Kubectl, namespace: str) -> Iterator[tuple[str, str]]:
    """A ClusterQueue with 1.5 CPUs and LocalQueue `lq` in the test's namespace: (namespace, ClusterQueue)."""
    s = uuid.uuid4().hex[:6]
    objs = [flavor(f"lr-rf-{s}"), cluster_queue(f"lr-cq-{s}", f"lr-rf-{s}", "1500m")]
    for o in [*objs, local_queue(namespace, "lq", f"lr-cq-{s}")]:
        kubectl.apply(o)
    yield namespace, f"lr-cq-{s}"
    kubectl("delete", "jobs", "-n", namespace, "--all", "--wait=false", check=False)
    for o in reversed(objs):
        kubectl("delete", o["kind"].lower(), o["metadata"]["name"], "--wait=false", "--ignore-not-found", check=False)


def test_default_requests_count_against_quota(kubectl: Kubectl, queue: tuple[str, str]) -> None:
    ns, cq = queue
    kubectl.apply(limit_range(ns, defaultRequest={"cpu": "1"}))
    submit(kubectl, bare_job(ns, "first", "lq"))
    wl = wait_workload(kubectl, ns, "first", "Admitted")
    usage = wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
    assert usage.get("cpu") == "1", usage
    wait_for(
        f"ClusterQueue {cq} to count the defaulted CPU",
        lambda: reserved_cpu(kubectl.get("clusterqueue", cq))[0] == "1",
    )
    # Its pods really got the CPU (the API server's LimitRanger): what the quota now says.
    pods = wait_for("the admitted Job's pod", lambda: kubectl.get("pods", "-n", ns, "-l", "job-name=first")["items"])
    assert pods[0]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}

    submit(kubectl, bare_job(ns, "second", "lq"))
    second = wait_for(
        "the second Job to be refused for quota",
        lambda: (
            (w := workload_of(kubectl, ns, "second"))
            and "insufficient unused quota for cpu" in cond(w, "QuotaReserved").get("message", "")
            and w
        ),
    )
    assert cond(second, "QuotaReserved")["status"] == "False"
    assert not is_admitted(kubectl, ns, "second")
    assert kubectl.get("job", "-n", ns, "second")["spec"]["suspend"] is True


def test_requests_over_the_limit_range_max_are_not_admitted(kubectl: Kubectl, queue: tuple[str, str]) -> None:
    ns, _ = queue
    kubectl.apply(limit_range(ns, max={"cpu": "1"}))
    big = bare_job(ns, "big", "lq", requests={"cpu": "1200m"}, limits={"cpu": "1200m"})
    submit(kubectl, big, bare_job(ns, "small", "lq", requests={"cpu": "500m"}))

    wl = wait_for(
        "the over-max Workload to be refused",
        lambda: (w := workload_of(kubectl, ns, "big")) and cond(w, "QuotaReserved").get("message") == OVER_MAX and w,
    )
    assert (cond(wl, "QuotaReserved")["status"], cond(wl, "QuotaReserved")["reason"]) == ("False", "Pending")
    # The queue is not blocked by it: the Job within the range is admitted.
    wait_workload(kubectl, ns, "small", "Admitted")
    assert not is_admitted(kubectl, ns, "big")
    events = kubectl.get("events", "-n", ns, "--field-selector", f"involvedObject.name={wl['metadata']['name']}")
    assert any(e.get("message") == OVER_MAX for e in events["items"]), json.dumps(events["items"])[:2000]
