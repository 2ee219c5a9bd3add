"""The visibility API end to end, through the kube-apiserver's aggregator: positions, paging, RBAC."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import wait_for

G = "/apis/visibility.kueue.x-k8s.io/v1beta2"


def _queues(kubectl: Kubectl, ns: str) -> str:
    """A ClusterQueue with no quota (everything stays pending) and LocalQueues a and b in `ns`."""
    cq = f"vis-{ns}"
    kubectl.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": cq}})
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": cq, "resources": [{"name": "cpu", "nominalQuota": "0"}]}],
                    }
                ],
            },
        }
    )
    for lq in ("a", "b"):
        kubectl.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": ns},
                "spec": {"clusterQueue": cq},
            }
        )
    return cq


def _workload(kubectl: Kubectl, ns: str, name: str, queue: str, priority: int) -> None:
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "queueName": queue,
                "priority": priority,
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                            }
                        },
                    }
                ],
            },
        }
    )


def _raw(kubectl: Kubectl, path: str, *args: str) -> tuple[bool, Any]:
    res = kubectl("get", "--raw", path, *args, check=False)
    return (True, json.loads(res.stdout)) if res.returncode == 0 else (False, res.stderr.strip())


def _positions(doc: dict[str, Any]) -> list[tuple[str, str, int, int, int]]:
    return [
        (
            i["metadata"]["name"],
            i["localQueueName"],
            i["priority"],
            i["positionInClusterQueue"],
            i["positionInLocalQueue"],
        )
        for i in doc["items"]
    ]


def test_pending_workloads_and_their_positions(kubectl: Kubectl, namespace: str) -> None:
    cq = _queues(kubectl, namespace)
    # Distinct priorities: creation times have seconds precision, and equal ones fall back to UIDs.
    for name, queue, prio in [("low", "a", 1), ("high", "b", 9), ("mid-a", "a", 5), ("mid-b", "b", 4)]:
        _workload(kubectl, namespace, name, queue, prio)
    want = [("high", "b", 9, 0, 0), ("mid-a", "a", 5, 1, 0), ("mid-b", "b", 4, 2, 1), ("low", "a", 1, 3, 1)]

    def listed() -> bool:
        ok, doc = _raw(kubectl, f"{G}/clusterqueues/{cq}/pendingworkloads")
        return ok and _positions(doc) == want

    wait_for("all four pending in queue order", listed)
    ok, doc = _raw(kubectl, f"{G}/clusterqueues/{cq}/pendingworkloads?limit=2&offset=1")
    assert ok and _positions(doc) == want[1:3]
    ok, doc = _raw(
        kubectl, f"/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/{namespace}/localqueues/a/pendingworkloads"
    )
    assert ok and doc["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    assert _positions(doc) == [want[1], want[3]]
    assert _raw(kubectl, f"{G}/clusterqueues/no-such-cq/pendingworkloads") == (
        False,
        'Error from server (NotFound): clusterqueue.visibility.kueue.x-k8s.io "no-such-cq" not found',
    )
    assert _raw(kubectl, f"{G}/clusterqueues/{cq}/pendingworkloads?limit=ten") == (
        False,
        'Error from server (BadRequest): strconv.ParseInt: parsing "ten": invalid syntax',
    )
    kubectl("delete", "workload", "-n", namespace, "high")
    wait_for(
        "a deleted workload to leave the queue",
        lambda: (
            [p[0] for p in _positions(_raw(kubectl, f"{G}/clusterqueues/{cq}/pendingworkloads")[1])]
            == ["mid-a", "mid-b", "low"]
        ),
    )
    kubectl("delete", "clusterqueue", cq, "--wait=false")


def test_only_the_roles_open_the_queues(kubectl: Kubectl, namespace: str) -> None:
    cq = _queues(kubectl, namespace)
    _workload(kubectl, namespace, "w", "a", 0)
    user = f"system:serviceaccount:{namespace}:reader"
    lq_path = f"{G}/namespaces/{namespace}/localqueues/a/pendingworkloads"
    ok, err = _raw(kubectl, f"{G}/clusterqueues/{cq}/pendingworkloads", f"--as={user}")
    assert not ok and err.startswith("Error from server (Forbidden):"), err
    assert not _raw(kubectl, lq_path, f"--as={user}")[0]

    kubectl(
        "create",
        "rolebinding",
        "reader",
        "-n",
        namespace,
        "--clusterrole=kueue-batch-user-role",
        f"--serviceaccount={namespace}:reader",
    )
    # Within the 10 s the server caches a denial, plus the aggregation of the ClusterRole.
    wait_for("the batch user to read its LocalQueue", lambda: _raw(kubectl, lq_path, f"--as={user}")[0], timeout=60)
    assert [i["metadata"]["name"] for i in _raw(kubectl, lq_path, f"--as={user}")[1]["items"]] == ["w"]
    ok, err = _raw(kubectl, f"{G}/clusterqueues/{cq}/pendingworkloads", f"--as={user}")
    assert not ok and "Forbidden" in err  # a namespace's user does not see the whole ClusterQueue
    kubectl("delete", "clusterqueue", cq, "--wait=false")


@pytest.mark.local_stack
def test_the_server_believes_only_the_front_proxy(kubectl: Kubectl) -> None:
    """Straight to the worker's port, a request naming a user in the front proxy's headers is refused."""
    stack = local_stack(kubectl)
    port = int(stack.visibility_port_file.read_text())
    ctx = ssl.create_default_context(cafile=str(stack.cert_dir / "ca.crt"))
    req = urllib.request.Request(
        f"https://127.0.0.1:{port}{G}", headers={"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, context=ctx, timeout=10)
    refused.value.close()
    assert refused.value.code == 401
