"""The app in-process (httpx over ASGI): sign-in, and what each identity may see (kueue#11143)."""

from __future__ import annotations

import copy
import re

import httpx
import pytest

from tests.builders import make_cq, psa
from tests.unit.dashboard.fakes import ADMIN, ALICE, BOB, MALLORY, FakeReviews, two_teams
from webhook.dashboard.app import COOKIE, Settings, create_app
from webhook.dashboard.auth import Authorizer
from webhook.dashboard.store import Kind, Store
from webhook.kube import KubeError

pytestmark = pytest.mark.anyio


class FakeReader:
    """Events and Pods as the API server lists them, optional fields left out."""

    def __init__(self) -> None:
        self.queries: list[tuple[str, dict]] = []

    def list(self, path: str, *, query=None):
        self.queries.append((path, dict(query or {})))
        if path.endswith("/events"):
            return [{"type": "Normal", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq"}], "1"
        return [{"metadata": {"name": "job-a-old-xyz"}, "status": {"phase": "Pending"}}], "1"


def client(token: str | None = None, *, kube: FakeReader | None = None) -> tuple[httpx.AsyncClient, FakeReviews]:
    reviews = FakeReviews()
    app = create_app(Settings(store=two_teams(), authorizer=Authorizer(reviews), kube=kube))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://dash", headers=headers), reviews


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/workloads",
        "/history",
        "/usage",
        "/fragment/overview",
        "/fragment/workloads",
        "/fragment/usage",
        "/workloads/team-a/a-old",
        "/events",
    ],
)
async def test_every_page_needs_a_token(path: str) -> None:
    c, _ = client()
    async with c:
        assert (await c.get(path)).status_code == 401
        assert (await c.get(path, headers={"Authorization": "Bearer wrong"})).status_code == 401
        browser = await c.get(path, headers={"Accept": "text/html"})
        assert (browser.status_code, browser.headers.get("location")) == (303, "/login")


async def test_the_usage_page_is_for_those_who_may_list_usage_records() -> None:
    c, _ = client(ADMIN)
    async with c:
        page = (await c.get("/usage", params={"by": "localqueue", "hours": "3"})).text
        assert 'id="usage-chart"' in page and "<svg" in page
        assert re.search(r'id="usage-team-team-a/lq"><td>team-a/lq</td><td class="nums">2.000</td>', page), page
    c, _ = client(ALICE)  # team-a's user: the records hold every team's usage
    async with c:
        page = (await c.get("/usage")).text
        assert 'id="usage-denied"' in page and "team-a/lq" not in page and "<svg" not in page


async def test_admin_sees_every_namespace_and_the_overview() -> None:
    c, _ = client(ADMIN)
    async with c:
        page = (await c.get("/workloads")).text
        assert "b-high" in page and "a-old" in page
        overview = await c.get("/")
        assert 'id="cq-cq"' in overview.text and "Content-Security-Policy" in overview.headers


def gpu_cluster_queue(cohort: str) -> dict:
    """The seeds' ClusterQueue research (e2e/examples/gpu-quota.yaml) with a 2-GPU Job admitted."""
    obj = (
        make_cq("research")
        .cohort(cohort)
        .group({"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]})
        .obj()
    )
    obj["status"] = {
        "admittedWorkloads": 1,
        "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
        "flavorsReservation": [
            {"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "total": "2", "borrowed": "0"}]}
        ],
    }
    return obj


@pytest.mark.parametrize(
    ("cohort", "numbers"),
    [
        pytest.param("", "2 / 64", id="no cohort: it cannot borrow, so no borrowing limit is shown"),
        pytest.param("lab", "2 / 64 limit +unlimited", id="in a cohort"),
    ],
)
async def test_overview_shows_an_extended_resource_and_its_usage(cohort: str, numbers: str) -> None:
    store = Store()
    store.replace(Kind.CLUSTER_QUEUES, [gpu_cluster_queue(cohort)])
    app = create_app(Settings(store=store, authorizer=Authorizer(FakeReviews())))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://dash", headers={"Authorization": f"Bearer {ADMIN}"}
    ) as c:
        page = (await c.get("/fragment/overview")).text
    assert "<th>gpu-nodes / nvidia.com/gpu</th>" in page
    assert 'title="used 2 of nominal 64"' in page and 'style="width: 3.1%"' in page
    cell = re.search(r'<td class="nums">(.*?)</td>', page, re.S)
    assert cell is not None and " ".join(re.sub(r"<[^>]+>", " ", cell[1]).split()) == numbers


@pytest.mark.parametrize(
    "path",
    [
        "/workloads",
        "/fragment/workloads",
        "/workloads?namespace=team-b",
        "/fragment/workloads?namespace=team-b&state=Pending",
    ],
)
async def test_a_namespace_user_sees_only_their_namespace(path: str) -> None:
    c, _ = client(ALICE)
    async with c:
        page = (await c.get(path)).text
        assert "<td>team-b</td>" not in page and "b-high" not in page and "b-low" not in page
        if "team-b" not in path:
            assert "a-old" in page


@pytest.mark.parametrize(
    ("token", "path"),
    [
        pytest.param(MALLORY, "/workloads?namespace=team-b", id="no access at all, asking for team-b"),
        pytest.param(MALLORY, "/fragment/workloads?namespace=team-b", id="no access at all, the live fragment"),
        pytest.param(ALICE, "/workloads?namespace=team-b", id="team-a's user asking for team-b"),
        pytest.param(BOB, "/workloads", id="workloads but not localqueues granted"),
        pytest.param(BOB, "/workloads?namespace=team-a", id="workloads but not localqueues granted, filtered"),
    ],
)
async def test_no_local_queue_is_shown_without_the_localqueues_grant(token: str, path: str) -> None:
    c, _ = client(token)
    async with c:
        resp = await c.get(path)
    table = re.search(r'<table id="local-queues">(.*?)</table>', resp.text, re.S)
    assert resp.status_code == 200 and table is not None
    assert "<td>lq</td>" not in table[1] and "<td>cq</td>" not in table[1]
    assert "No LocalQueues you may list." in table[1]


async def test_a_namespace_user_cannot_open_another_namespaces_workload() -> None:
    c, _ = client(ALICE)
    async with c:
        assert (await c.get("/workloads/team-b/b-high")).status_code == 403
        assert (await c.get("/workloads/team-a/a-old")).status_code == 200
        assert (await c.get("/workloads/team-a/missing")).status_code == 404


async def test_a_namespace_user_sees_no_cluster_queues() -> None:
    c, _ = client(ALICE)
    async with c:
        page = (await c.get("/")).text
        assert 'id="cq-cq"' not in page and "system:serviceaccount:team-a:alice may not list ClusterQueues" in page


async def test_sign_in_sets_an_http_only_cookie_that_authenticates() -> None:
    c, _ = client()
    async with c:
        bad = await c.post(
            "/login", content="token=nope", headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert bad.headers["location"] == "/login?failed=1"
        ok = await c.post(
            "/login", content=f"token={ALICE}", headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert ok.status_code == 303
        cookie = ok.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
        c.cookies.set(COOKIE, ALICE)
        assert "a-old" in (await c.get("/workloads")).text


async def test_reviews_are_cached_between_page_views() -> None:
    c, reviews = client(ALICE)
    async with c:
        await c.get("/workloads")
        first = len(reviews.calls)
        await c.get("/workloads")
        assert len(reviews.calls) == first


async def _job_workload_page(
    kube: FakeReader, topology: dict | None = None, status: dict | None = None
) -> httpx.Response:
    """The admin's page of team-a's running Workload, owned by Job a-running-job (its pod sets placed on
    `topology`, when given; `status` fields added)."""
    store = two_teams()
    raw = copy.deepcopy(dict(store.workloads()["team-a/a-running"].raw))
    raw["metadata"] = {**raw["metadata"], "ownerReferences": [{"kind": "Job", "name": "a-running-job"}]}
    if topology is not None:
        placed = psa(count=3, cpu=("default", "3")) | {"topologyAssignment": topology}
        raw["status"]["admission"]["podSetAssignments"] = [placed]
    raw["status"].update(status or {})
    store.apply(Kind.WORKLOADS, "MODIFIED", raw)
    app = create_app(Settings(store=store, authorizer=Authorizer(FakeReviews()), kube=kube))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://dash", headers={"Authorization": f"Bearer {ADMIN}"}
    ) as c:
        return await c.get("/workloads/team-a/a-running")


async def test_the_workload_page_shows_conditions_events_pods_and_yaml() -> None:
    kube = FakeReader()
    page = (await _job_workload_page(kube)).text
    assert "Quota reserved in ClusterQueue cq" in page and "job-a-old-xyz" in page and "kind: Workload" in page
    assert kube.queries == [
        (
            "/api/v1/namespaces/team-a/events",
            {"fieldSelector": "involvedObject.kind=Workload,involvedObject.name=a-running"},
        ),
        ("/api/v1/namespaces/team-a/pods", {"labelSelector": "batch.kubernetes.io/job-name=a-running-job"}),
    ]


async def test_the_workload_page_shows_where_topology_aware_admission_put_the_pods() -> None:
    hosts = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "kind-worker", "roots": ["", "2"]}}],
                "podCounts": {"individual": [2, 1]},
            }
        ],
    }
    page = (await _job_workload_page(FakeReader(), hosts)).text
    assert "<h3>Placement</h3>" in page
    assert "<td>kubernetes.io/hostname: kind-worker (2 pods), kind-worker2 (1 pod)</td>" in page
    assert "<td>cpu on default</td>" in page
    assert "<h3>Placement</h3>" not in (await _job_workload_page(FakeReader())).text  # no pod set assigned


async def test_the_workload_page_names_its_multikueue_worker_and_its_checks() -> None:
    check = {
        "name": "multikueue",
        "state": "Ready",
        "message": 'The workload was admitted on "worker2"',
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    page = (await _job_workload_page(FakeReader(), status={"clusterName": "worker2", "admissionChecks": [check]})).text
    assert "<p>MultiKueue: runs on worker cluster worker2</p>" in page
    assert "<h3>Admission checks</h3>" in page
    assert "<td>multikueue</td><td>Ready</td><td>The workload was admitted on &#34;worker2&#34;</td>" in page
    plain = (await _job_workload_page(FakeReader())).text
    assert "MultiKueue:" not in plain and "<h3>Admission checks</h3>" not in plain


async def test_a_namespace_user_without_pod_access_gets_no_pods_read() -> None:
    kube = FakeReader()
    c, _ = client(ALICE, kube=kube)
    async with c:
        assert (await c.get("/workloads/team-a/a-running")).status_code == 200
    assert kube.queries == []


class RefusedReader(FakeReader):
    """The dashboard's own account, in a namespace that has not bound kueue-dashboard-details-role."""

    def list(self, path: str, *, query=None):
        self.queries.append((path, dict(query or {})))
        raise KubeError(403, f'pods is forbidden: cannot list resource "pods" at {path}')


async def test_a_namespace_that_does_not_share_pods_and_events_says_so() -> None:
    kube = RefusedReader()
    page = await _job_workload_page(kube)
    assert page.status_code == 200 and "kind: Workload" in page.text
    assert page.text.count("Namespace team-a does not share its Pods and Events with the dashboard") == 2
    assert [path for path, _ in kube.queries] == ["/api/v1/namespaces/team-a/events", "/api/v1/namespaces/team-a/pods"]
