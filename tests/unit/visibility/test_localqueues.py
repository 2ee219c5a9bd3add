"""Our group, visibility.pykueue.io/v1alpha1: a LocalQueue's limits and its pending workloads with
estimates, from a feed of watch events, authorized on the namespaced resource."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import orjson
import pytest

from tests.builders import T0, fq, make_cohort, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core.admission_fair_sharing import Settings
from webhook.core.estimate_accuracy import Scored
from webhook.reviews import User
from webhook.visibility.auth import AccessDecision, Attributes
from webhook.visibility.handler import Request, Response, VisibilityAPI
from webhook.visibility.server import PendingFeed

G = "/apis/visibility.pykueue.io/v1alpha1"
NOW = T0 + timedelta(minutes=30)
ALICE = User("alice", groups=("system:authenticated",))


class Grants:
    """alice may read what `allowed` lists, nothing else."""

    def __init__(self) -> None:
        self.allowed: set[Attributes] = set()

    def authorize(self, user: User, attrs: Attributes) -> AccessDecision:
        return AccessDecision(attrs in self.allowed)


def active(cq: dict[str, Any], status: str = "True") -> dict[str, Any]:
    cq["status"] = {
        "conditions": [
            {
                "type": "Active",
                "status": status,
                "reason": "Ready",
                "message": "Can admit new workloads" if status == "True" else "Can't admit new workloads: is stopped.",
            }
        ]
    }
    return cq


def limited(obj: dict[str, Any], seconds: int = 600) -> dict[str, Any]:
    obj["spec"]["maximumExecutionTimeSeconds"] = seconds
    return obj


@pytest.fixture
def scored() -> list[Scored]:
    return []


@pytest.fixture
def feed(scored: list[Scored]) -> PendingFeed:
    f = PendingFeed(clock=lambda: NOW, on_scored=scored.append)
    f.on_list("resourceflavors", [make_flavor("default").obj()])
    f.on_list("cohorts", [make_cohort("co").obj()])
    f.on_list(
        "clusterqueues",
        [
            active(make_cq("cq").cohort("co").group(fq("default", cpu=("10", "4", None), memory="10Gi")).obj()),
            active(make_cq("other").cohort("co").group(fq("default", cpu=("6", None, "2"), memory="0")).obj()),
        ],
    )
    f.on_list(
        "localqueues",
        [make_lq("main", "team", "cq"), make_lq("x", "elsewhere", "cq"), make_lq("held", "team", "cq", stop="Hold")],
    )
    # Running: four of 1 cpu, reserved at 21, 23, 25 and 27 min with 10 min each (ending at 31..37
    # min), and one of 2 cpu since minute 1 with no limit (and no finished run to learn from).
    reserved = [
        limited(
            make_wl(f"done-{i}", "team")
            .queue("main")
            .request(cpu="1")
            .reserve("cq", psa(cpu=("default", "1")), at=(21 + 2 * i) * 60)
            .obj()
        )
        for i in range(4)
    ]
    old = make_wl("old", "elsewhere").queue("x").request(cpu="2").reserve("cq", psa(cpu=("default", "2")), at=60).obj()
    pending = [
        limited(make_wl(name, ns).queue(q).priority(prio).created(i).request(cpu=cpu).obj())
        for i, (name, ns, q, prio, cpu) in enumerate(
            [("p0", "team", "main", 5, "4"), ("p1", "elsewhere", "x", 4, "4"), ("p2", "team", "main", 3, "3")]
        )
    ]
    f.on_list("workloads", [*reserved, old, *pending])
    return f


@pytest.fixture
def grants() -> Grants:
    g = Grants()
    for sub in ("limits", "pendingworkloads"):
        g.allowed.add(Attributes("get", "localqueues", sub, "main", "team", "visibility.pykueue.io", "v1alpha1"))
    return g


def get(feed: PendingFeed, grants: Grants, path: str, **query: str) -> tuple[int, Any]:
    resp: Response = VisibilityAPI(feed, grants, feed).handle(
        Request("GET", path, {k: [v] for k, v in query.items()}, ALICE)
    )
    return resp.status, orjson.loads(resp.body)


def test_limits_of_the_users_local_queue(feed: PendingFeed, grants: Grants) -> None:
    status, doc = get(feed, grants, f"{G}/namespaces/team/localqueues/main/limits")
    assert status == 200
    # cq: 10 cpu (borrowing limit 4) uses 4 (team/main) + 2 (elsewhere/x); other lends 2 of its 6.
    # The cohort: 12 cpu, 6 used: 6 free, 4 of them cq's own, 2 borrowed.
    assert doc == {
        "kind": "LocalQueueLimits",
        "apiVersion": "visibility.pykueue.io/v1alpha1",
        "metadata": {"name": "main", "namespace": "team"},
        "clusterQueue": "cq",
        "cohort": "co",
        "flavors": [
            {
                "name": "default",
                "resources": [
                    {
                        "name": "cpu",
                        "nominalQuota": "10",
                        "borrowingLimit": "4",
                        "used": "6",
                        "usedByLocalQueue": "4",
                        "available": "6",
                        "borrowable": "2",
                        "maxAvailable": "12",
                    },
                    {
                        "name": "memory",
                        "nominalQuota": "10Gi",
                        "used": "0",
                        "usedByLocalQueue": "0",
                        "available": "10Gi",
                        "borrowable": "0",
                        "maxAvailable": "10Gi",
                    },
                ],
            }
        ],
    }


def test_pending_workloads_with_estimates(feed: PendingFeed, grants: Grants) -> None:
    status, doc = get(feed, grants, f"{G}/namespaces/team/localqueues/main/pendingworkloads")
    assert status == 200 and doc["kind"] == "PendingWorkloadsSummary"
    assert doc["apiVersion"] == "visibility.pykueue.io/v1alpha1"
    assert doc["estimation"]["method"].startswith("simulation: each workload holding quota frees it at")
    assert doc["estimation"]["basis"] == {
        "holdingQuota": 5,
        "withMaximumExecutionTime": 4,
        "fromObservedRuns": 0,
        "withoutBasis": 1,
        "observedRuns": 0,
        "observedMedianSeconds": None,
    }
    got = [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"], i["estimatedAdmission"])
        for i in doc["items"]
    ]
    # cq may use 12 cpu of the cohort and 6 are taken: p0 (4) now; p2 (3, behind p1 but BestEffortFIFO)
    # once done-0 ends at 31 min; p1 (4) once p0's 10 min are over.
    assert got == [
        ("p0", 0, 0, {"waitSeconds": 0, "time": "2025-01-01T00:30:00Z"}),
        ("p2", 2, 1, {"waitSeconds": 60, "time": "2025-01-01T00:31:00Z"}),
    ]
    grants.allowed.add(
        Attributes("get", "localqueues", "pendingworkloads", "x", "elsewhere", "visibility.pykueue.io", "v1alpha1")
    )
    _, other = get(feed, grants, f"{G}/namespaces/elsewhere/localqueues/x/pendingworkloads")
    assert [i["estimatedAdmission"] for i in other["items"]] == [{"waitSeconds": 600, "time": "2025-01-01T00:40:00Z"}]
    _, page = get(feed, grants, f"{G}/namespaces/team/localqueues/main/pendingworkloads", offset="1", limit="1")
    assert [i["metadata"]["name"] for i in page["items"]] == ["p2"]


def test_unknown_estimates_say_why(feed: PendingFeed, grants: Grants) -> None:
    path = f"{G}/namespaces/team/localqueues/main/pendingworkloads"
    feed.on_event(
        "clusterqueues",
        "MODIFIED",
        active(
            make_cq("cq").cohort("co").group(fq("default", cpu=("10", "4", None), memory="10Gi")).stop("Hold").obj(),
            "False",
        ),
    )
    _, doc = get(feed, grants, path)
    assert doc["estimation"]["unknownReason"] == "Can't admit new workloads: is stopped."
    assert [i["estimatedAdmission"] for i in doc["items"]] == [None, None]
    assert {i["estimatedAdmissionUnknownReason"] for i in doc["items"]} == {"Can't admit new workloads: is stopped."}

    stuck = PendingFeed(clock=lambda: NOW)
    stuck.on_list("resourceflavors", [make_flavor("default").obj()])
    stuck.on_list("clusterqueues", [active(make_cq("cq").group(fq("default", cpu="1")).obj())])
    stuck.on_list("localqueues", [make_lq("main", "team", "cq")])
    running = make_wl("r", "team").queue("main").request(cpu="1").reserve("cq", psa(cpu=("default", "1"))).obj()
    stuck.on_list("workloads", [running, make_wl("p", "team").queue("main").request(cpu="1").obj()])
    _, doc = get(stuck, grants, path)
    assert "unknownReason" not in doc["estimation"]
    assert [(i["estimatedAdmission"], i["estimatedAdmissionUnknownReason"]) for i in doc["items"]] == [
        (
            None,
            "it waits for quota held by 1 workload(s) with no maximumExecutionTimeSeconds and no finished "
            "workloads in their ClusterQueue to learn a run time from (team/r)",
        )
    ]
    # Once a workload of the ClusterQueue has finished, its run time is the basis: r is expected to
    # hold its quota as long (5 min from its reservation at T0, so overdue: any moment now).
    done = make_wl("d", "team").queue("main").request(cpu="1").reserve("cq", psa(cpu=("default", "1")), at=60)
    stuck.on_event("workloads", "ADDED", done.condition("Finished", "True", "Succeeded", "done", at=360).obj())
    stuck.refresh_estimates()  # a request remakes them at most once a second
    _, doc = get(stuck, grants, path)
    assert doc["estimation"]["basis"]["observedRuns"] == 1
    assert doc["estimation"]["basis"]["observedMedianSeconds"] == 300
    assert [i["estimatedAdmission"] for i in doc["items"]] == [{"waitSeconds": 0, "time": "2025-01-01T00:30:00Z"}]


def test_admissions_are_scored_against_the_first_and_latest_estimates(
    feed: PendingFeed, grants: Grants, scored: list[Scored]
) -> None:
    path = f"{G}/namespaces/team/localqueues/main/pendingworkloads"
    get(feed, grants, path)  # estimates made: p2 at 31 min
    p2 = limited(make_wl("p2", "team").queue("main").priority(3).created(2).request(cpu="3").obj())
    feed.on_event("workloads", "MODIFIED", p2)  # a status update: still pending, same estimate
    reserved = make_wl("p2", "team").queue("main").priority(3).created(2).request(cpu="3")
    feed.on_event(
        "workloads", "MODIFIED", limited(reserved.reserve("cq", psa(cpu=("default", "3")), at=31 * 60 + 20).obj())
    )
    assert scored == [Scored("cq", 20.0, 20.0)]
    _, doc = get(feed, grants, path)
    assert doc["estimation"]["accuracy"] == {
        "admissions": 1,
        "unknownAtFirst": 0,
        "firstEstimate": {"p50Seconds": 20, "p90Seconds": 20},
        "latestEstimate": {"p50Seconds": 20, "p90Seconds": 20},
    }


def test_a_role_in_one_namespace_opens_that_local_queue_only(feed: PendingFeed, grants: Grants) -> None:
    status, doc = get(feed, grants, f"{G}/namespaces/elsewhere/localqueues/x/limits")
    assert status == 403
    assert doc["message"] == (
        'localqueues.visibility.pykueue.io "x" is forbidden: User "alice" cannot get resource '
        '"localqueues/limits" in API group "visibility.pykueue.io" in the namespace "elsewhere"'
    )
    assert get(feed, grants, "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads")[0] == 403


def test_unknown_or_stopped_local_queues_are_not_found(feed: PendingFeed, grants: Grants) -> None:
    for name in ("held", "nope"):
        for sub in ("limits", "pendingworkloads"):
            grants.allowed.add(Attributes("get", "localqueues", sub, name, "team", "visibility.pykueue.io", "v1alpha1"))
            status, doc = get(feed, grants, f"{G}/namespaces/team/localqueues/{name}/{sub}")
            assert (status, doc["message"]) == (404, f'localqueue.visibility.pykueue.io "{name}" not found')
    grants.allowed.add(Attributes("get", "clusterqueues", "limits", "cq", "", "visibility.pykueue.io", "v1alpha1"))
    assert get(feed, grants, f"{G}/clusterqueues/cq/limits")[0] == 404  # namespaced only


def test_a_deleted_reservation_frees_quota(feed: PendingFeed, grants: Grants) -> None:
    done = (
        make_wl("done-0", "team")
        .queue("main")
        .request(cpu="1")
        .reserve("cq", psa(cpu=("default", "1")), at=21 * 60)
        .obj()
    )
    feed.on_event("workloads", "DELETED", done)
    feed.refresh_estimates()
    _, limits = get(feed, grants, f"{G}/namespaces/team/localqueues/main/limits")
    assert limits["flavors"][0]["resources"][0]["usedByLocalQueue"] == "3"
    _, doc = get(feed, grants, f"{G}/namespaces/team/localqueues/main/pendingworkloads")
    assert doc["items"][1]["estimatedAdmission"] == {"waitSeconds": 0, "time": "2025-01-01T00:30:00Z"}


def test_discovery_lists_both_groups_and_ours_alone_in_its_version(feed: PendingFeed, grants: Grants) -> None:
    grants.allowed.update({Attributes("get", path=p) for p in ("/apis", G, "/apis/visibility.pykueue.io")})
    _, groups = get(feed, grants, "/apis")
    assert [g["name"] for g in groups["groups"]] == ["visibility.kueue.x-k8s.io", "visibility.pykueue.io"]
    _, resources = get(feed, grants, G)
    assert [(r["name"], r["namespaced"], r["kind"], r["verbs"]) for r in resources["resources"]] == [
        ("localqueues", True, "LocalQueueLimits", []),
        ("localqueues/limits", True, "LocalQueueLimits", ["get"]),
        ("localqueues/pendingworkloads", True, "PendingWorkloadsSummary", ["get"]),
    ]
    _, group = get(feed, grants, "/apis/visibility.pykueue.io")
    assert group["preferredVersion"] == {"groupVersion": "visibility.pykueue.io/v1alpha1", "version": "v1alpha1"}


def test_openapi_describes_our_reads_with_resolvable_references(feed: PendingFeed, grants: Grants) -> None:
    grants.allowed.add(Attributes("get", path="/openapi/v2"))
    _, doc = get(feed, grants, "/openapi/v2")
    limits = doc["paths"][f"{G}/namespaces/{{namespace}}/localqueues/{{name}}/limits"]
    assert limits["get"]["operationId"] == "readVisibilityPykueueIoV1alpha1NamespacedLocalQueueLimitsLimits"
    assert [p.get("name") or p["$ref"] for p in limits["parameters"]] == [
        "name",
        "#/parameters/namespace-visibility",
        "#/parameters/pretty-visibility",
    ]
    item = doc["definitions"]["io.pykueue.visibility.v1alpha1.PendingWorkload"]
    assert item["properties"]["estimatedAdmission"] == {
        "$ref": "#/definitions/io.pykueue.visibility.v1alpha1.EstimatedAdmission"
    }
    text = orjson.dumps(doc).decode()
    for ref in {part.split('"', 1)[0] for part in text.split('"$ref":"#/definitions/')[1:]}:
        assert ref in doc["definitions"], ref


def test_a_status_write_changes_the_active_state_and_a_spec_change_the_quota(feed: PendingFeed, grants: Grants) -> None:
    spec = make_cq("cq").cohort("co").group(fq("default", cpu=("10", "4", None), memory="10Gi")).obj()
    feed.on_event("clusterqueues", "MODIFIED", active(spec, "False"))  # the leader's status write alone
    _, doc = get(feed, grants, f"{G}/namespaces/team/localqueues/main/pendingworkloads")
    assert doc["estimation"]["unknownReason"] == "Can't admit new workloads: is stopped."
    feed.on_event(
        "clusterqueues",
        "MODIFIED",
        active(make_cq("cq").cohort("co").group(fq("default", cpu=("20", "4", None), memory="10Gi")).obj()),
    )
    _, limits = get(feed, grants, f"{G}/namespaces/team/localqueues/main/limits")
    assert limits["flavors"][0]["resources"][0]["nominalQuota"] == "20"
    _, doc = get(feed, grants, f"{G}/namespaces/team/localqueues/main/pendingworkloads")
    assert "unknownReason" not in doc["estimation"]


def test_feed_ranks_an_opted_in_cluster_queue_by_the_usage_its_local_queues_show() -> None:
    """With admission fair sharing, the pending order follows each LocalQueue's sampled usage:
    `consumedResources` in its status, resource-weighted, over its weight."""

    def lq(name: str, consumed: str, weight: str = "1") -> dict[str, Any]:
        obj = make_lq(name, "team", "cq")
        obj["spec"]["fairSharing"] = {"weight": weight}
        obj["status"] = {
            "fairSharing": {
                "weightedShare": 0,
                "admissionFairSharingStatus": {"consumedResources": {"cpu": consumed}, "lastUpdate": "t"},
            }
        }
        return obj

    f = PendingFeed(clock=lambda: NOW, admission_fair_sharing=Settings(half_life_s=10, sampling_interval_s=1))
    f.on_list("clusterqueues", [active(make_cq("cq").group(fq("default", cpu="1")).admission_mode().obj())])
    f.on_list("localqueues", [lq("busy", "8"), lq("idle", "1"), lq("heavy", "16", weight="4")])
    f.on_list(
        "workloads",
        [
            make_wl(name, "team").queue(q).created(i).request(cpu="1").obj()
            for i, (name, q) in enumerate([("first", "busy"), ("second", "heavy"), ("third", "idle")])
        ],
    )
    page = f.cluster_queue_page("cq", offset=0, limit=10)
    assert page is not None
    assert [p.workload.name for p in page] == ["third", "second", "first"]
    f.on_event("localqueues", "MODIFIED", lq("idle", "9"))
    page = f.cluster_queue_page("cq", offset=0, limit=10)
    assert page is not None
    assert [p.workload.name for p in page] == ["second", "first", "third"]


def test_workloads_beyond_the_simulated_depth_say_so(grants: Grants, monkeypatch: pytest.MonkeyPatch) -> None:
    from webhook.visibility import server

    monkeypatch.setattr(server, "ESTIMATE_DEPTH", 2)
    f = PendingFeed(clock=lambda: NOW)
    f.on_list("resourceflavors", [make_flavor("default").obj()])
    f.on_list("clusterqueues", [active(make_cq("cq").group(fq("default", cpu="10")).obj())])
    f.on_list("localqueues", [make_lq("main", "team", "cq")])
    f.on_list("workloads", [make_wl(f"p{i}", "team").queue("main").created(i).request(cpu="1").obj() for i in range(3)])
    _, doc = get(f, grants, f"{G}/namespaces/team/localqueues/main/pendingworkloads")
    assert [
        (i["estimatedAdmission"] or {}).get("waitSeconds", i.get("estimatedAdmissionUnknownReason"))
        for i in doc["items"]
    ] == [
        0,
        0,
        "only the first 2 workloads of a ClusterQueue are simulated",
    ]


def test_a_workload_that_joins_a_queue_is_estimated_at_the_next_request(feed: PendingFeed, grants: Grants) -> None:
    path = f"{G}/namespaces/team/localqueues/main/pendingworkloads"
    get(feed, grants, path)
    late = limited(make_wl("p3", "team").queue("main").priority(9).created(9).request(cpu="1").obj())
    feed.on_event("workloads", "ADDED", late)  # the clock has not moved: only the arrival calls for a refresh
    _, doc = get(feed, grants, path)
    assert doc["items"][0]["metadata"]["name"] == "p3"
    assert doc["items"][0]["estimatedAdmission"] == {"waitSeconds": 0, "time": "2025-01-01T00:30:00Z"}
