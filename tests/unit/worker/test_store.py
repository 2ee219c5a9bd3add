"""The worker's object cache: newer versions win, and a delete is not undone by a late writer's answer."""

from __future__ import annotations

from typing import Any

from webhook.worker.store import Store


def cq(rv: int, finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "cq", "resourceVersion": str(rv), "finalizers": list(finalizers)},
        "spec": {"resourceGroups": [{"flavors": [{"name": "rf"}]}]},
    }


def test_an_older_version_never_replaces_a_newer_one() -> None:
    store = Store()
    assert store.put("clusterqueues", cq(5))
    assert not store.put("clusterqueues", cq(4))
    assert store.get("clusterqueues", "cq")["metadata"]["resourceVersion"] == "5"  # type: ignore[index]


def test_a_status_write_answered_after_the_delete_does_not_bring_the_object_back() -> None:
    """The race seen in upstream's e2e: a ClusterQueue status PUT answered (rv 7) after the watch's
    DELETED event (rv 9) re-added the deleted queue, whose flavor then kept its resource-in-use
    finalizer for good."""
    store = Store()
    store.put("clusterqueues", cq(5, ("kueue.x-k8s.io/resource-in-use",)))
    store.delete("clusterqueues", "cq", cq(9))
    assert not store.put("clusterqueues", cq(7))
    assert store.list("clusterqueues") == []


def test_a_recreated_object_is_stored_again() -> None:
    store = Store()
    store.put("clusterqueues", cq(5))
    store.delete("clusterqueues", "cq", cq(9))
    assert store.put("clusterqueues", cq(12))
    assert [o["metadata"]["resourceVersion"] for o in store.list("clusterqueues")] == ["12"]


def test_without_the_deleted_object_the_held_version_is_remembered() -> None:
    store = Store()
    store.put("clusterqueues", cq(5))
    store.delete("clusterqueues", "cq")
    assert not store.put("clusterqueues", cq(5))
    assert store.put("clusterqueues", cq(6))


def test_versions_that_cannot_be_ordered_leave_the_later_put_in_place() -> None:
    """resourceVersions are compared only in KEP-5504's comparable form (decimal, no leading zero);
    an opaque one (an aggregated API's) used to read as 0 and lose to any stored copy for good."""
    store = Store()
    assert store.put("things", {"metadata": {"name": "a", "resourceVersion": "12"}})
    assert store.put("things", {"metadata": {"name": "a", "resourceVersion": "opaque-1"}})
    assert store.put("things", {"metadata": {"name": "a", "resourceVersion": "0012"}})
    assert store.put("things", {"metadata": {"name": "a", "resourceVersion": "9"}})  # 0012 is not comparable
    assert not store.put("things", {"metadata": {"name": "a", "resourceVersion": "8"}})
    assert store.put("things", {"metadata": {"name": "a", "resourceVersion": "10"}})
