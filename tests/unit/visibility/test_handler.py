"""The visibility API's answers, as upstream's server gives them: summaries, errors, discovery, OpenAPI."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.builders import WorkloadBuilder
from webhook.core.pending_order import PendingOrder, pending_workload
from webhook.core.workload import WorkloadKey
from webhook.reviews import User
from webhook.visibility.auth import AccessDecision, Attributes
from webhook.visibility.handler import Request, Response, VisibilityAPI
from webhook.visibility.server import PendingFeed

G = "/apis/visibility.kueue.x-k8s.io"
ADMIN = User("admin", groups=("system:masters", "system:authenticated"))
ALICE = User("alice", groups=("system:authenticated",))


class Grants:
    """Authorizes from a set: `admin` may do anything, others what `allowed` lists."""

    def __init__(self) -> None:
        self.allowed: set[tuple[str, Attributes]] = set()
        self.asked: list[Attributes] = []

    def authorize(self, user: User, attrs: Attributes) -> AccessDecision:
        self.asked.append(attrs)
        return AccessDecision(user.name == "admin" or (user.name, attrs) in self.allowed)


@pytest.fixture
def order() -> PendingOrder:
    o = PendingOrder()
    o.set_cluster_queue("cq", True)
    o.set_local_queue("ns/a", "cq")
    o.set_local_queue("ns/b", "cq")
    for i, (queue, prio) in enumerate([("a", 1), ("b", 5), ("a", 5), ("b", 0)]):
        obj = WorkloadBuilder(f"w{i}", "ns").queue(queue).priority(prio).created(i).request(cpu="1").obj()
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{i}", "uid": f"job-uid-{i}", "controller": True}
        ]
        o.set_workload(WorkloadKey(f"ns/w{i}"), pending_workload(obj))
    return o


@pytest.fixture
def grants() -> Grants:
    return Grants()


@pytest.fixture
def api(order: PendingOrder, grants: Grants) -> VisibilityAPI:
    return VisibilityAPI(order, grants, PendingFeed())


def get(api: VisibilityAPI, path: str, user: User | None = ADMIN, accept: str = "", **query: str) -> Response:
    return api.handle(Request("GET", path, {k: [v] for k, v in query.items()}, user, accept))


def body(resp: Response) -> Any:
    return orjson.loads(resp.body)


def test_cluster_queue_summary_is_upstreams_json(api: VisibilityAPI) -> None:
    resp = get(api, f"{G}/v1beta2/clusterqueues/cq/pendingworkloads", limit="2")
    assert (resp.status, resp.content_type) == (200, "application/json")
    assert body(resp) == {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
        "metadata": {},
        "items": [
            {
                "metadata": {
                    "name": "w1",
                    "namespace": "ns",
                    "creationTimestamp": "2025-01-01T00:00:01Z",
                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "job-1", "uid": "job-uid-1"}],
                },
                "priority": 5,
                "localQueueName": "b",
                "positionInClusterQueue": 0,
                "positionInLocalQueue": 0,
            },
            {
                "metadata": {
                    "name": "w2",
                    "namespace": "ns",
                    "creationTimestamp": "2025-01-01T00:00:02Z",
                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "job-2", "uid": "job-uid-2"}],
                },
                "priority": 5,
                "localQueueName": "a",
                "positionInClusterQueue": 1,
                "positionInLocalQueue": 0,
            },
        ],
    }


def positions(resp: Response) -> list[tuple[str, int, int]]:
    return [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in body(resp)["items"]
    ]


@pytest.mark.parametrize(
    ("query", "want"),
    [
        pytest.param({}, ["w1", "w2", "w0", "w3"], id="no limit: 1000"),
        pytest.param({"limit": "0"}, ["w1", "w2", "w0", "w3"], id="limit 0 means the default"),
        pytest.param({"limit": "-3"}, [], id="negative limit is 0"),
        pytest.param({"limit": "2", "offset": "1"}, ["w2", "w0"], id="offset"),
        pytest.param({"offset": "-1", "limit": "1"}, ["w1"], id="negative offset is 0"),
        pytest.param({"limit": "+1"}, ["w1"], id="a sign is an integer"),
    ],
)
def test_limit_and_offset(api: VisibilityAPI, query: dict[str, str], want: list[str]) -> None:
    resp = get(api, f"{G}/v1beta1/clusterqueues/cq/pendingworkloads", **query)
    assert [n for n, _, _ in positions(resp)] == want
    assert body(resp)["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("abc", "invalid syntax"),
        ("1.5", "invalid syntax"),
        ("", "invalid syntax"),
        ("99999999999999999999", "value out of range"),
    ],
)
def test_a_limit_that_is_not_an_integer_is_400(api: VisibilityAPI, value: str, why: str) -> None:
    resp = get(api, f"{G}/v1beta2/clusterqueues/cq/pendingworkloads", limit=value)
    assert resp.status == 400
    assert body(resp) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'strconv.ParseInt: parsing "{value}": {why}',
        "reason": "BadRequest",
        "code": 400,
    }


def test_local_queue_summary_numbers_cluster_queue_positions(api: VisibilityAPI) -> None:
    resp = get(api, f"{G}/v1beta2/namespaces/ns/localqueues/a/pendingworkloads")
    assert positions(resp) == [("w2", 1, 0), ("w0", 2, 1)]


@pytest.mark.parametrize(
    ("path", "kind", "name"),
    [
        pytest.param(f"{G}/v1beta2/clusterqueues/nope/pendingworkloads", "clusterqueue", "nope", id="ClusterQueue"),
        pytest.param(
            f"{G}/v1beta2/namespaces/ns/localqueues/nope/pendingworkloads", "localqueue", "nope", id="LocalQueue"
        ),
        pytest.param(
            f"{G}/v1beta2/namespaces/other/localqueues/a/pendingworkloads",
            "localqueue",
            "a",
            id="LocalQueue of another namespace",
        ),
    ],
)
def test_unknown_queues_are_404_not_found(api: VisibilityAPI, path: str, kind: str, name: str) -> None:
    resp = get(api, path)
    assert resp.status == 404
    assert body(resp) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind}.visibility.kueue.x-k8s.io "{name}" not found',
        "reason": "NotFound",
        "details": {"name": name, "group": "visibility.kueue.x-k8s.io", "kind": kind},
        "code": 404,
    }


@pytest.mark.parametrize(
    "path",
    [
        f"{G}/v1beta2/clusterqueues/cq",
        f"{G}/v1beta2/clusterqueues/cq/status",
        f"{G}/v1beta3",
        f"{G}/v1beta2/namespaces/ns/clusterqueues/cq/pendingworkloads",
        "/apis/other.group/v1",
        "/version",
    ],
)
def test_other_paths_are_404(api: VisibilityAPI, path: str) -> None:
    resp = get(api, path)
    assert (resp.status, body(resp)["message"]) == (404, "the server could not find the requested resource")


def test_writes_are_405(api: VisibilityAPI) -> None:
    resp = api.handle(Request("POST", f"{G}/v1beta2/clusterqueues/cq/pendingworkloads", {}, ADMIN))
    assert (resp.status, body(resp)["reason"]) == (405, "MethodNotAllowed")


def test_without_an_authenticated_user_it_is_401_except_health(api: VisibilityAPI, grants: Grants) -> None:
    resp = get(api, f"{G}/v1beta2/clusterqueues/cq/pendingworkloads", user=None)
    assert resp.status == 401
    assert body(resp) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    assert get(api, "/healthz", user=None).status == 200
    assert grants.asked == []


def test_refusals_are_403_in_the_api_servers_words(api: VisibilityAPI, grants: Grants) -> None:
    resp = get(api, f"{G}/v1beta2/clusterqueues/nope/pendingworkloads", user=ALICE)
    assert resp.status == 403  # refused before the lookup: a caller learns nothing of what exists
    assert body(resp) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'clusterqueues.visibility.kueue.x-k8s.io "nope" is forbidden: User "alice" cannot get resource '
        '"clusterqueues/pendingworkloads" in API group "visibility.kueue.x-k8s.io" at the cluster scope',
        "reason": "Forbidden",
        "details": {"name": "nope", "group": "visibility.kueue.x-k8s.io", "kind": "clusterqueues"},
        "code": 403,
    }
    assert grants.asked == [
        Attributes("get", "clusterqueues", "pendingworkloads", "nope", "", "visibility.kueue.x-k8s.io", "v1beta2")
    ]
    resp = get(api, f"{G}/v1beta2/namespaces/ns/localqueues/a/pendingworkloads", user=ALICE)
    assert body(resp)["message"].endswith(
        'cannot get resource "localqueues/pendingworkloads" in API group '
        '"visibility.kueue.x-k8s.io" in the namespace "ns"'
    )
    resp = get(api, f"{G}/v1beta2", user=ALICE)
    assert body(resp)["message"] == f'forbidden: User "alice" cannot get path "{G}/v1beta2"'


def test_a_namespaced_grant_opens_that_namespace_only(api: VisibilityAPI, grants: Grants) -> None:
    grants.allowed.add(
        (
            "alice",
            Attributes("get", "localqueues", "pendingworkloads", "a", "ns", "visibility.kueue.x-k8s.io", "v1beta2"),
        )
    )
    assert get(api, f"{G}/v1beta2/namespaces/ns/localqueues/a/pendingworkloads", user=ALICE).status == 200
    assert get(api, f"{G}/v1beta2/namespaces/ns/localqueues/b/pendingworkloads", user=ALICE).status == 403
    assert get(api, f"{G}/v1beta2/clusterqueues/cq/pendingworkloads", user=ALICE).status == 403


def test_discovery_documents(api: VisibilityAPI) -> None:
    group = body(get(api, G))
    assert group == {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "visibility.kueue.x-k8s.io",
        "versions": [
            {"groupVersion": "visibility.kueue.x-k8s.io/v1beta2", "version": "v1beta2"},
            {"groupVersion": "visibility.kueue.x-k8s.io/v1beta1", "version": "v1beta1"},
        ],
        "preferredVersion": {"groupVersion": "visibility.kueue.x-k8s.io/v1beta2", "version": "v1beta2"},
    }
    resources = body(get(api, f"{G}/v1beta2/"))
    assert resources["kind"] == "APIResourceList" and resources["groupVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    assert [(r["name"], r["namespaced"], r["verbs"]) for r in resources["resources"]] == [
        ("clusterqueues", False, []),
        ("clusterqueues/pendingworkloads", False, ["get"]),
        ("localqueues", True, []),
        ("localqueues/pendingworkloads", True, ["get"]),
    ]
    assert body(get(api, "/apis"))["groups"][0]["name"] == "visibility.kueue.x-k8s.io"


def test_aggregated_discovery_when_asked_for(api: VisibilityAPI) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    resp = get(api, "/apis", accept=accept)
    assert resp.content_type == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    doc = body(resp)
    assert doc["kind"] == "APIGroupDiscoveryList"
    v1beta2 = doc["items"][0]["versions"][0]
    assert v1beta2["version"] == "v1beta2" and v1beta2["freshness"] == "Current"
    assert [
        (r["resource"], r["scope"], [s["subresource"] for s in r["subresources"]]) for r in v1beta2["resources"]
    ] == [("clusterqueues", "Cluster", ["pendingworkloads"]), ("localqueues", "Namespaced", ["pendingworkloads"])]
    assert (
        body(get(api, "/apis", accept="application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"))[
            "kind"
        ]
        == "APIGroupList"
    )


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        return {node["$ref"]} if "$ref" in node else {r for v in node.values() for r in _refs(v)}
    if isinstance(node, list):
        return {r for v in node for r in _refs(v)}
    return set()


def test_openapi_v2_references_all_resolve(api: VisibilityAPI) -> None:
    doc = body(get(api, "/openapi/v2"))
    for ref in _refs(doc):
        section, name = ref.removeprefix("#/").split("/", 1)
        assert name in doc[section], ref
    op = doc["paths"][f"{G}/v1beta2/clusterqueues/{{name}}/pendingworkloads"]["get"]
    assert op["operationId"] == "readVisibilityKueueXK8sIoV1beta2PendingWorkloadsSummaryPendingworkloads"
    assert op["x-kubernetes-group-version-kind"] == {
        "group": "visibility.kueue.x-k8s.io",
        "version": "v1beta2",
        "kind": "PendingWorkloadsSummary",
    }
    summary = doc["definitions"]["io.k8s.kueue.visibility.v1beta2.PendingWorkloadsSummary"]
    assert summary["x-kubernetes-group-version-kind"] == [
        {"group": "visibility.kueue.x-k8s.io", "kind": "PendingWorkloadsSummary", "version": "v1beta2"}
    ]


def test_openapi_v3_index_documents_and_stale_hashes(api: VisibilityAPI) -> None:
    index = body(get(api, "/openapi/v3"))["paths"]
    assert sorted(index) == [
        "apis",
        "apis/visibility.kueue.x-k8s.io",
        "apis/visibility.kueue.x-k8s.io/v1beta1",
        "apis/visibility.kueue.x-k8s.io/v1beta2",
        "apis/visibility.pykueue.io",
        "apis/visibility.pykueue.io/v1alpha1",
    ]
    url = index["apis/visibility.kueue.x-k8s.io/v1beta2"]["serverRelativeURL"]
    path, _, query = url.partition("?hash=")
    resp = get(api, path, hash=query)
    assert resp.status == 200 and ("Cache-Control", "public, immutable") in resp.headers
    doc = body(resp)
    assert doc["openapi"] == "3.0.0"
    for ref in _refs(doc):
        assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"], ref
    stale = get(api, path, hash="0")
    assert stale.status == 301 and ("Location", url) in stale.headers
    assert get(api, "/openapi/v3/apis/other").status == 404
