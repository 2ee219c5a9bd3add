"""Our visibility.pykueue.io/v1alpha1 end to end, through the aggregator, as a namespace's user: the
limits of its LocalQueue and estimated admission times; 403 elsewhere. The user is a ServiceAccount
with one RoleBinding (kueue-batch-user-role) in its namespace, calling with its own token."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import Kubectl
from e2e.helpers import wait_for

G = "/apis/visibility.pykueue.io/v1alpha1"


def _workload(ns: str, name: str, cpu: str, priority: int = 0, *, max_s: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "queueName": "main",
            "priority": priority,
            "maximumExecutionTimeSeconds": max_s,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                        }
                    },
                }
            ],
        },
    }


def _reserved_at(kubectl: Kubectl, ns: str, name: str) -> datetime:
    wl = kubectl.get("workload", "-n", ns, name)
    cond = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    return datetime.strptime(cond["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _rfc3339(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _token_kubeconfig(kubectl: Kubectl, token: str, path: Path) -> Path:
    """A kubeconfig with the cluster of `kubectl` and only `token` as credentials (an admin client
    certificate next to it would win the API server's authentication)."""
    cfg = json.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = cfg["clusters"][0]["cluster"]
    ca = (
        cluster.get("certificate-authority-data")
        or base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    )
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "user",
                "clusters": [{"name": "c", "cluster": {"server": cluster["server"], "certificate-authority-data": ca}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "user", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


@pytest.fixture
def other_namespace(kubectl: Kubectl) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    yield name
    kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_a_namespace_user_reads_its_local_queue_limits_and_estimates(
    kubectl: Kubectl, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    cq, lender, cohort, flavor = f"lim-{namespace}", f"lend-{namespace}", f"co-{namespace}", f"f-{namespace}"
    kubectl.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}})
    for name, quota in (
        (cq, {"nominalQuota": "4", "borrowingLimit": "2"}),
        (lender, {"nominalQuota": "3", "lendingLimit": "1"}),
    ):
        kubectl.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "cohortName": cohort,
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": flavor, "resources": [{"name": "cpu", **quota}]}],
                        }
                    ],
                },
            }
        )
    for ns in (namespace, other_namespace):
        kubectl.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "main", "namespace": ns},
                "spec": {"clusterQueue": cq},
            }
        )
    try:
        _scenario(kubectl, namespace, other_namespace, cq, tmp_path)
    finally:
        for name in (cq, lender):
            kubectl("delete", "clusterqueue", name, "--wait=false", check=False)


def _scenario(kubectl: Kubectl, namespace: str, other_namespace: str, cq: str, tmp_path: Path) -> None:
    # Two workloads of 1 cpu get quota (for at most 600 s and 1200 s); then one of 4 (300 s) and one
    # of 5 wait: the cohort holds 4 + 1 (the lender lends 1 of its 3) = 5, 2 of them used, so 3 are
    # free, 1 above cq's own unused 2.
    for i in range(2):
        kubectl.apply(_workload(namespace, f"small-{i}", "1", max_s=600 * (i + 1)))
    wait_for(
        "the two small workloads to get quota",
        lambda: all(
            (kubectl.get("workload", "-n", namespace, f"small-{i}").get("status") or {}).get("admission")
            for i in range(2)
        ),
        timeout=60,
    )
    kubectl.apply(_workload(namespace, "big", "4", priority=2, max_s=300))
    kubectl.apply(_workload(namespace, "bigger", "5", priority=1, max_s=60))

    kubectl("create", "serviceaccount", "reader", "-n", namespace)
    kubectl(
        "create",
        "rolebinding",
        "reader",
        "-n",
        namespace,
        "--clusterrole=kueue-batch-user-role",
        f"--serviceaccount={namespace}:reader",
    )
    token = kubectl("create", "token", "reader", "-n", namespace, "--duration=1h").stdout.strip()
    user = Kubectl(_token_kubeconfig(kubectl, token, tmp_path / "reader.kubeconfig"), kubectl.binary)

    def raw(path: str) -> tuple[bool, Any]:
        res = user("get", "--raw", path, check=False)
        return (True, json.loads(res.stdout)) if res.returncode == 0 else (False, res.stderr.strip())

    limits_path = f"{G}/namespaces/{namespace}/localqueues/main/limits"
    # The aggregation of the ClusterRole and the API server's RBAC watch take a moment.
    wait_for("the batch user to read its LocalQueue's limits", lambda: raw(limits_path)[0], timeout=60)

    def limits() -> Any:
        ok, doc = raw(limits_path)
        return doc if ok and doc["flavors"][0]["resources"][0]["used"] == "2" else None

    doc = wait_for("the limits to count both small workloads", limits, timeout=30)
    assert doc["kind"] == "LocalQueueLimits" and (doc["clusterQueue"], doc["cohort"]) == (cq, f"co-{namespace}")
    assert doc["flavors"] == [
        {
            "name": f"f-{namespace}",
            "resources": [
                {
                    "name": "cpu",
                    "nominalQuota": "4",
                    "borrowingLimit": "2",
                    "used": "2",
                    "usedByLocalQueue": "2",
                    "available": "3",
                    "borrowable": "1",
                    "maxAvailable": "5",
                }
            ],
        }
    ]

    def estimates() -> Any:
        ok, doc = raw(f"{G}/namespaces/{namespace}/localqueues/main/pendingworkloads")
        # The replica's watches deliver the ClusterQueue's Active status and the reservations apart.
        return doc if ok and len(doc["items"]) == 2 and all(i["estimatedAdmission"] for i in doc["items"]) else None

    doc = wait_for("both big workloads pending, with estimates", estimates, timeout=30)
    assert doc["estimation"]["method"].startswith("simulation:")
    assert doc["estimation"]["basis"]["holdingQuota"] == 2
    assert doc["estimation"]["basis"]["withMaximumExecutionTime"] == 2
    # "big" (4) once small-0's 600 s are over; "bigger" (5) once both big's 300 s and small-1's
    # 1200 s are: the reservation times plus the limits, to the second.
    reserved = [_reserved_at(kubectl, namespace, f"small-{i}") for i in range(2)]
    want = [
        reserved[0] + timedelta(seconds=600),
        max(reserved[0] + timedelta(seconds=900), reserved[1] + timedelta(seconds=1200)),
    ]
    assert [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["estimatedAdmission"]["time"]) for i in doc["items"]
    ] == [("big", 0, _rfc3339(want[0])), ("bigger", 1, _rfc3339(want[1]))]

    ok, err = raw(f"{G}/namespaces/{other_namespace}/localqueues/main/limits")
    assert not ok and err.startswith("Error from server (Forbidden):") and "visibility.pykueue.io" in err, err
    ok, err = raw(f"{G}/namespaces/{other_namespace}/localqueues/main/pendingworkloads")
    assert not ok and "Forbidden" in err, err
    ok, err = raw(f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads")
    assert not ok and err.startswith("Error from server (Forbidden):"), err
    # Upstream's LocalQueue view is open to the same user, unchanged.
    ok, upstream = raw(
        f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/main/pendingworkloads"
    )
    assert ok and [i["metadata"]["name"] for i in upstream["items"]] == ["big", "bigger"]
    assert all("estimatedAdmission" not in i for i in upstream["items"])


def test_discovery_and_openapi_through_the_aggregator(kubectl: Kubectl) -> None:
    wait_for(
        "our group-version in the cluster's discovery",
        lambda: "visibility.pykueue.io/v1alpha1" in kubectl("api-versions").stdout.split(),
        timeout=60,
    )
    resources = json.loads(kubectl("get", "--raw", G).stdout)["resources"]
    assert [(r["name"], r["verbs"]) for r in resources] == [
        ("localqueues", []),
        ("localqueues/limits", ["get"]),
        ("localqueues/pendingworkloads", ["get"]),
    ]
    ours = f"{G}/namespaces/{{namespace}}/localqueues/{{name}}/limits"
    upstreams = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads"

    def aggregated() -> dict[str, Any] | None:
        # The API server's OpenAPI aggregation fetches each APIService's spec on its own schedule.
        paths: dict[str, Any] = json.loads(kubectl("get", "--raw", "/openapi/v2").stdout)["paths"]
        return paths if ours in paths and upstreams in paths else None

    wait_for("both groups in the aggregated OpenAPI v2", aggregated, timeout=60, interval=1)
    v3 = json.loads(kubectl("get", "--raw", "/openapi/v3").stdout)["paths"]
    assert "apis/visibility.pykueue.io/v1alpha1" in v3 and "apis/visibility.kueue.x-k8s.io/v1beta2" in v3
