"""The worker's cache transform: what a cached object loses, what it keeps, and that equal strings are shared."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from webhook.worker.store import Store
from webhook.worker.transform import LAST_APPLIED, compact


def job(name: str) -> dict[str, Any]:
    # Built from JSON text, as the informer decodes it: no string is shared between two copies.
    return orjson.loads(
        orjson.dumps(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": name,
                    "namespace": "team-a",
                    "uid": "u-" + name,
                    "resourceVersion": "7",
                    "annotations": {LAST_APPLIED: '{"kind":"Job"}', "kueue.x-k8s.io/queue-name": "main"},
                    "managedFields": [{"manager": "kubectl", "operation": "Update"}],
                },
                "spec": {
                    "suspend": True,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "busybox:1.36", "resources": {"requests": {"cpu": "1"}}}
                            ]
                        }
                    },
                },
                "status": {
                    "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]
                },
            }
        )
    )


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "annotations": {LAST_APPLIED: "{}"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}],
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "qosClass": "Burstable",
            "containerStatuses": [{"name": "c", "ready": True}],
            "startTime": "2025-01-01T00:00:00Z",
        },
    }


def test_job_loses_managed_fields_and_last_applied_and_keeps_everything_read() -> None:
    obj = job("a")
    expected = copy.deepcopy(obj)
    del expected["metadata"]["managedFields"], expected["metadata"]["annotations"][LAST_APPLIED]
    assert compact("jobs", obj) is obj
    assert obj == expected


def test_pod_loses_the_status_nothing_reads() -> None:
    obj = compact("pods", pod("p"))
    assert obj["status"] == {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "startTime": "2025-01-01T00:00:00Z",
    }
    assert obj["spec"] == {"nodeName": "n1", "containers": [{"name": "c"}]} and obj["metadata"]["annotations"] == {}


def test_workload_keeps_every_field_but_managed_fields() -> None:
    # Status and spec writes PUT the cached copy back: nothing of it may be missing.
    wl = {
        "metadata": {"name": "w", "namespace": "n", "managedFields": [{}], "annotations": {LAST_APPLIED: "{}"}},
        "spec": {"podSets": []},
        "status": {"conditions": []},
    }
    expected = copy.deepcopy(wl)
    del expected["metadata"]["managedFields"]
    assert compact("workloads", wl) == expected


def test_equal_strings_of_two_cached_objects_are_one_object() -> None:
    store = Store()
    a, b = job("a"), job("b")
    assert (
        a["spec"]["template"]["spec"]["containers"][0]["image"]
        is not b["spec"]["template"]["spec"]["containers"][0]["image"]
    )
    store.put("jobs", a)
    store.put("jobs", b)
    held_a, held_b = store.get("jobs", "team-a/a"), store.get("jobs", "team-a/b")
    assert held_a is a and held_b is b  # trimmed in place: the event's dict is the stored one
    assert (
        held_a["spec"]["template"]["spec"]["containers"][0]["image"]
        is held_b["spec"]["template"]["spec"]["containers"][0]["image"]
    )
    assert (
        held_a["status"]["conditions"][0]["lastTransitionTime"]
        is held_b["status"]["conditions"][0]["lastTransitionTime"]
    )


def test_relisted_objects_are_trimmed_too() -> None:
    store = Store()
    store.replace("jobs", [job("a")])
    held = store.get("jobs", "team-a/a")
    assert (
        held is not None
        and "managedFields" not in held["metadata"]
        and LAST_APPLIED not in held["metadata"]["annotations"]
    )
