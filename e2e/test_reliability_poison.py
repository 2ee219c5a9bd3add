"""One bad object never stops admission (issue 27, findings 1 and 2), end to end on the local stack.

A Workload whose quantity Go cannot decode (`1e1.5` matches the CRD's pattern) is refused by our
webhook with Go's message; stored anyway (webhooks unregistered for a moment, as another writer or
an install order could), it is set aside with a Warning Event while other Jobs keep being admitted,
on the leader and on the next one. A quantity with a huge exponent is answered at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import job, one_queue, wait_for, wait_workload

pytestmark = pytest.mark.local_stack

V1B2 = "kueue.x-k8s.io/v1beta2"
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def workload(ns: str, name: str, cpu: str) -> dict[str, Any]:
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": V1B2,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


@pytest.fixture
def queue(kubectl: Kubectl, namespace: str) -> Iterator[str]:
    with one_queue(kubectl, namespace, "poison", "4") as ns:
        yield ns


def _webhook_configurations(kubectl: Kubectl) -> list[dict[str, Any]]:
    out = []
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for item in kubectl.get(kind)["items"]:
            if any(w["name"].endswith("workload.kb.io") for w in item.get("webhooks") or ()):
                meta = item["metadata"]
                item["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
                out.append(item)
    assert len(out) == 2, [c["metadata"]["name"] for c in out]
    return out


def store_unchecked(kubectl: Kubectl, obj: dict[str, Any]) -> None:
    """Create `obj` with our webhook configurations removed for the moment, then put them back."""
    saved = _webhook_configurations(kubectl)
    for c in saved:
        kubectl("delete", c["kind"].lower(), c["metadata"]["name"])
    try:
        # The API server's webhook cache follows the deletion within a moment: retry until stored.
        wait_for("the bad Workload stored", lambda: kubectl.apply(obj, check=False).returncode == 0, timeout=30)
    finally:
        for c in saved:
            kubectl("create", "-f", "-", input=json.dumps(c))
    # And until our webhooks answer again (a Job created before would not be suspended).
    probe = workload(obj["metadata"]["namespace"], "probe", "1e1.5")
    wait_for(
        "the webhooks back",
        lambda: (
            "denied the request"
            in kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False).stderr
        ),
        timeout=30,
    )


def test_a_workload_go_cannot_decode_never_stops_admission(kubectl: Kubectl, queue: str) -> None:
    stack = local_stack(kubectl)
    ns = queue
    refused = kubectl("create", "-f", "-", input=json.dumps(workload(ns, "refused", "1e1.5")), check=False)
    assert refused.returncode != 0
    assert f'admission webhook "mworkload.kb.io" denied the request: {FORMAT_WRONG}' in refused.stderr

    store_unchecked(kubectl, workload(ns, "poison", "1e1.5"))
    kubectl.apply(job(ns, "after-poison", "lq"))
    started = time.monotonic()
    wait_workload(kubectl, ns, "after-poison", "Admitted", timeout=30)
    admitted_in = time.monotonic() - started

    def warning() -> dict[str, Any] | None:
        events = kubectl.get("events", "-n", ns, "--field-selector", "involvedObject.name=poison")["items"]
        return next((e for e in events if e.get("reason") == "InvalidQuantity"), None)

    event = wait_for("a Warning Event on the bad Workload", warning, timeout=30)
    assert event["type"] == "Warning"
    assert "spec.podSets[0].template.spec.containers[0].resources.requests.cpu" in event["message"]
    assert FORMAT_WRONG in event["message"]

    # A new leader rebuilds from lists that hold the bad Workload, and admits as well.
    stack.restart_server()
    kubectl.apply(job(ns, "after-failover", "lq"))
    wait_workload(kubectl, ns, "after-failover", "Admitted", timeout=60)
    poison = kubectl.get("workload", "-n", ns, "poison")
    assert not poison.get("status", {}).get("admission"), "the bad Workload was never given quota"
    print(f"a Job admitted {admitted_in:.1f} s after the bad Workload was stored")


def test_a_huge_exponent_is_answered_at_once_and_admission_goes_on(kubectl: Kubectl, queue: str) -> None:
    ns = queue
    started = time.monotonic()
    # Schema-valid and decodable (it saturates): stored at once, never admitted (no quota is that big).
    kubectl("create", "-f", "-", input=json.dumps(workload(ns, "huge", "1e999999999")), timeout=20)
    assert time.monotonic() - started < 10
    kubectl.apply(job(ns, "after-huge", "lq"))
    wait_workload(kubectl, ns, "after-huge", "Admitted", timeout=30)
    huge = kubectl.get("workload", "-n", ns, "huge")
    assert not huge.get("status", {}).get("admission")
