"""The core-backed answers of explain and dry-run, on snapshots built from plain objects."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_cq, make_flavor, make_lq, make_topology, make_wl, psa
from tests.unit.cli.fake_api import FakeApi
from webhook import kube
from webhook.cli import explain, simulate
from webhook.core.decisions import Admit, Pending, Preempt
from webhook.core.workload import WorkloadKey, parse_workload

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"team": "a"}}}


def state(*objs: dict[str, Any]) -> simulate.ClusterState:
    s = simulate.ClusterState(namespaces=[NS])
    buckets = {
        "ResourceFlavor": s.resource_flavors,
        "ClusterQueue": s.cluster_queues,
        "Cohort": s.cohorts,
        "LocalQueue": s.local_queues,
        "Workload": s.workloads,
    }
    for obj in objs:
        buckets[obj["kind"]].append(obj)
    return s


def run(st: simulate.ClusterState, wl: dict[str, Any]) -> tuple[simulate.Outcome, list[simulate.QuotaRow]]:
    st.workloads.append(wl)
    core = simulate.build_core(st, T0)
    info = parse_workload(wl)
    rows = simulate.quota_rows(core, info, "cq")
    return simulate.simulate(core, info.key, T0), rows


FLAVOR = make_flavor("default").obj()
LQ = make_lq("lq", "ns", "cq")


def test_quota_exhausted() -> None:
    cq = make_cq("cq").group(fq("default", cpu="4")).obj()
    running = make_wl("running").request(cpu="3").reserve("cq", psa(cpu=("default", "3"))).obj()
    outcome, rows = run(state(FLAVOR, cq, LQ, running), make_wl("new").request(cpu="2").created(10).obj())
    assert isinstance(outcome.decision, Pending)
    assert "insufficient unused quota for cpu in flavor default, 1 more needed" in outcome.decision.message
    assert rows == [simulate.QuotaRow("main", "default", "cpu", 2000, 4000, 3000, 0, 1000, 4000)]
    assert simulate.never_fits(rows) == []


def test_borrowable_from_the_cohort() -> None:
    cq = make_cq("cq").cohort("all").group(fq("default", cpu="2")).obj()
    lender = make_cq("lender").cohort("all").group(fq("default", cpu="4")).obj()
    outcome, rows = run(state(FLAVOR, cq, lender, LQ), make_wl("new").request(cpu="5").obj())
    assert isinstance(outcome.decision, Admit)
    assert rows[0].borrowable == 4000 and rows[0].shortfall == 0 and rows[0].most_ever == 6000
    assert (
        explain.describe_outcome(outcome, parse_workload(make_wl("new").request(cpu="5").obj()))[1]
        == "  pod set main: cpu on default (1 pods)"
    )


def test_preemptible_lower_priority() -> None:
    cq = make_cq("cq").group(fq("default", cpu="4")).preemption(within="LowerPriority").obj()
    low = make_wl("low").priority(0).request(cpu="4").reserve("cq", psa(cpu=("default", "4"))).obj()
    outcome, _ = run(state(FLAVOR, cq, LQ, low), make_wl("high").priority(100).request(cpu="4").created(5).obj())
    assert isinstance(outcome.decision, Preempt)
    assert [v.key for v in outcome.decision.targets] == [WorkloadKey("ns/low")]
    lines = explain.describe_outcome(outcome, parse_workload(make_wl("high").request(cpu="4").obj()))
    assert lines[0] == "would be admitted by ClusterQueue cq after preempting 1 workload(s):"


def test_never_fits() -> None:
    cq = make_cq("cq").cohort("all").group(fq("default", cpu=("4", "2", None))).obj()
    lender = make_cq("lender").cohort("all").group(fq("default", cpu="10")).obj()
    outcome, rows = run(state(FLAVOR, cq, lender, LQ), make_wl("big").podset(count=4, cpu="2").obj())
    assert isinstance(outcome.decision, Pending)
    assert simulate.never_fits(rows) == ["pod set main: cpu 8 requested, at most 6 in any flavor"]


def test_partial_admission_count() -> None:
    cq = make_cq("cq").group(fq("default", cpu="3")).obj()
    wl = make_wl("part").podset(count=5, min_count=2, cpu="1").obj()
    outcome, _ = run(state(FLAVOR, cq, LQ), wl)
    assert isinstance(outcome.decision, Admit)
    assert "(partial admission: 3 of 5 pods)" in explain.describe_outcome(outcome, parse_workload(wl))[1]


@pytest.mark.parametrize(
    ("cq", "lq", "wl_active", "want"),
    [
        pytest.param(
            make_cq("cq").selector({"matchLabels": {"team": "b"}}).obj(),
            LQ,
            True,
            ["ClusterQueue cq's namespaceSelector does not select namespace ns"],
            id="namespace not selected",
        ),
        pytest.param(
            make_cq("cq").stop("Hold").obj(),
            LQ,
            True,
            ["ClusterQueue cq is stopped (stopPolicy Hold)"],
            id="cluster queue stopped",
        ),
        pytest.param(
            make_cq("cq").obj(),
            make_lq("lq", "ns", "cq", stop="HoldAndDrain"),
            True,
            ["LocalQueue lq is stopped (stopPolicy HoldAndDrain)"],
            id="local queue stopped",
        ),
        pytest.param(
            make_cq("cq").obj(),
            make_lq("other", "ns", "cq"),
            True,
            ["LocalQueue lq does not exist in namespace ns"],
            id="local queue missing",
        ),
        pytest.param(
            make_cq("cq").obj(),
            LQ,
            False,
            ["the Workload is stopped (spec.active is false; `kubectl kueue resume workload` lifts it)"],
            id="workload stopped",
        ),
    ],
)
def test_blockers(cq, lq, wl_active, want) -> None:
    wl = make_wl("w").request(cpu="1").obj()
    wl["spec"]["active"] = wl_active
    assert explain.blockers(wl, state(FLAVOR, cq, lq))[1] == want


def test_inactive_cluster_queue_blocks_with_its_message() -> None:
    cq = make_cq("cq").obj()
    cq["status"] = {
        "conditions": [
            {
                "type": "Active",
                "status": "False",
                "message": "Can't admit new workloads: references missing ResourceFlavor(s): gone.",
            }
        ]
    }
    assert explain.blockers(make_wl("w").obj(), state(cq, LQ))[1] == [
        "ClusterQueue cq is inactive: Can't admit new workloads: references missing ResourceFlavor(s): gone."
    ]


def test_blockers_name_the_budget_that_holds_a_workload() -> None:
    s = state(FLAVOR, make_cq("cq").obj(), LQ)
    s.admission_checks.append({"metadata": {"name": "budget"}, "spec": {"controllerName": "pykueue.io/budget"}})
    s.admission_checks.append({"metadata": {"name": "prov"}, "spec": {"controllerName": "example.com/other"}})
    held = 'budget "team" (ClusterQueue cq): 0 core-hours of cpu left of 1 core-hours of cpu; resets at 2026-11-28T06:00:00Z'
    wl = make_wl("w").queue("lq").reserve("cq", psa(cpu=("default", "1")), admitted=False).obj()
    wl["status"]["admissionChecks"] = [
        {"name": "budget", "state": "Pending", "message": held},
        {"name": "prov", "state": "Pending", "message": "waiting for nodes"},
    ]
    assert explain.blockers(wl, s)[1] == [
        "admission check(s) not ready yet: budget, prov",
        f"held by budget (admission check budget): {held}",
    ]


def test_workloads_ahead_in_queue_order() -> None:
    wls = [
        make_wl("old").created(0).obj(),
        make_wl("urgent").priority(10).created(50).obj(),
        make_wl("me").created(20).obj(),
        make_wl("later").created(30).obj(),
        make_wl("running").created(1).reserve("cq", psa(cpu=("default", "1"))).obj(),
    ]
    ahead = simulate.workloads_ahead(wls, parse_workload(wls[2]), "cq", {("ns", "lq"): "cq"})
    assert [w.name for w in ahead] == ["urgent", "old"]


@pytest.mark.parametrize(
    ("obj", "count", "min_count"),
    [
        pytest.param(
            {
                "kind": "Job",
                "metadata": {"name": "j", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                "spec": {"parallelism": 4, "completions": 3, "template": {"spec": {}}},
            },
            3,
            None,
            id="job",
        ),
        pytest.param(
            {
                "kind": "Job",
                "metadata": {"name": "j", "annotations": {"kueue.x-k8s.io/job-min-parallelism": "2"}},
                "spec": {"parallelism": 4, "template": {"spec": {}}},
            },
            4,
            2,
            id="partial job",
        ),
        pytest.param(
            {
                "kind": "Pod",
                "metadata": {"name": "p", "annotations": {"kueue.x-k8s.io/pod-group-total-count": "3"}},
                "spec": {"containers": []},
            },
            3,
            None,
            id="pod group",
        ),
    ],
)
def test_workload_for(obj, count, min_count) -> None:
    wl = simulate.workload_for(obj, now=T0)
    ps = wl["spec"]["podSets"][0]
    assert (ps["count"], ps.get("minCount"), wl["metadata"]["namespace"]) == (count, min_count, "default")


def test_workload_for_refuses_other_kinds() -> None:
    with pytest.raises(ValueError, match="cannot make a Workload for kind 'Deployment'"):
        simulate.workload_for({"kind": "Deployment", "metadata": {"name": "d"}}, now=T0)


def test_quota_table() -> None:
    rows = [
        simulate.QuotaRow("main", "default", "cpu", 2000, 4000, 3000, 0, 1000, 4000),
        simulate.QuotaRow("main", "default", "memory", 2**30, 8 * 2**30, 2**30, 0, 0, 8 * 2**30),
    ]
    assert explain.quota_table(rows) == (
        "POD SET   FLAVOR    RESOURCE   REQUESTED   NOMINAL   IN USE   BORROWABLE NOW   SHORTFALL\n"
        "main      default   cpu        2           4         3        0                1\n"
        "main      default   memory     1Gi         8Gi       1Gi      0                0\n"
    )


def _config_map(text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {
            "controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n" + text
        },
    }


MIG_TO_CPU = (
    "resources:\n  transformations:\n  - {input: nvidia.com/mig-1g.5gb, strategy: Replace, outputs: {cpu: '2'}}\n"
)


@pytest.mark.parametrize(
    ("api", "ignore", "inputs"),
    [
        pytest.param(FakeApi(), False, (), id="no ConfigMap: defaults"),
        pytest.param(
            FakeApi(answers={explain.CONFIG_MAP_PATH: kube.KubeError(403, "forbidden")}),
            False,
            (),
            id="not readable by the caller: defaults",
        ),
        pytest.param(FakeApi(_config_map("bogus: 1\n")), False, (), id="not a valid Configuration: defaults"),
        pytest.param(
            FakeApi(_config_map("resources: {quotaCheckStrategy: IgnoreUndeclared}\n")),
            True,
            (),
            id="IgnoreUndeclared",
        ),
        pytest.param(FakeApi(_config_map(MIG_TO_CPU)), False, ("nvidia.com/mig-1g.5gb",), id="transformations"),
    ],
)
def test_server_config(api: FakeApi, ignore: bool, inputs: tuple[str, ...]) -> None:
    cfg = explain.server_config(api)
    assert cfg.ignore_undeclared_resources is ignore
    assert cfg.resources.inputs == inputs


def test_undeclared_resource_under_ignore_undeclared() -> None:
    """The server ignores a resource its ClusterQueue does not declare: so does the answer."""
    cq = make_cq("cq").group(fq("default", cpu="4")).obj()
    wl = make_wl("new").request(cpu="2", memory="1Gi").obj()
    blocked, _ = run(state(FLAVOR, cq, LQ), wl)
    assert isinstance(blocked.decision, Pending)
    st = state(FLAVOR, cq, LQ)
    st.config = explain.server_config(FakeApi(_config_map("resources: {quotaCheckStrategy: IgnoreUndeclared}\n")))
    admitted, _ = run(st, wl)
    assert isinstance(admitted.decision, Admit)


def test_quota_rows_show_what_a_transformation_charges() -> None:
    cq = make_cq("cq").group(fq("default", cpu="4")).obj()
    wl = make_wl("new").podset(count=3, **{"nvidia.com/mig-1g.5gb": "1"}).obj()
    st = state(FLAVOR, cq, LQ)
    st.config = explain.server_config(FakeApi(_config_map(MIG_TO_CPU)))
    core = simulate.build_core(st, T0)
    rows = simulate.quota_rows(core, core.parse_workload(wl), "cq")
    assert [(r.resource, r.requested) for r in rows] == [("cpu", 6000)]
    assert simulate.never_fits(rows) == ["pod set main: cpu 6 requested, at most 4 in any flavor"]


def _node(name: str, rack: str) -> dict[str, Any]:
    labels = {"cloud.com/rack": rack, "kubernetes.io/hostname": name}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "1", "pods": "10"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _tas_state(*running_on: str) -> simulate.ClusterState:
    """Two racks of two one-cpu nodes behind a topology-aware flavor; a one-cpu pod outside Kueue on each
    of `running_on`."""
    st = state(
        make_flavor("tas").topology("racks").obj(),
        make_cq("cq").group(fq("tas", cpu="8")).obj(),
        LQ,
    )
    st.topologies.append(make_topology("racks", "cloud.com/rack", "kubernetes.io/hostname"))
    st.nodes += [_node("x1", "r1"), _node("x2", "r1"), _node("x3", "r2"), _node("x4", "r2")]
    st.pods += [
        {
            "kind": "Pod",
            "metadata": {"name": f"other-{n}", "namespace": "other"},
            "spec": {"nodeName": n, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Running"},
        }
        for n in running_on
    ]
    return st


def test_topology_aware_dry_run_names_the_hosts_it_would_use() -> None:
    wl = make_wl("train").queue("lq").podset("main", 2, cpu="1").topology(required="cloud.com/rack").obj()
    outcome, _ = run(_tas_state("x1"), wl)  # rack r1 has one free host left: only r2 fits
    assert isinstance(outcome.decision, Admit)
    assert explain.describe_outcome(outcome, parse_workload(wl))[1:] == [
        "  pod set main: cpu on tas (2 pods)",
        "    topology kubernetes.io/hostname: x3 (1 pod), x4 (1 pod)",
    ]


def test_topology_aware_dry_run_says_why_no_rack_fits() -> None:
    wl = make_wl("train").queue("lq").podset("main", 2, cpu="1").topology(required="cloud.com/rack").obj()
    outcome, _ = run(_tas_state("x1", "x3"), wl)  # quota is free, but no rack has two free hosts
    assert isinstance(outcome.decision, Pending)
    assert "allows to fit only 1 out of 2 pod(s)" in outcome.decision.message


def test_fetch_state_reads_nodes_and_pods_only_for_topology_aware_flavors() -> None:
    api = FakeApi()
    api.add(make_flavor("plain").obj())
    api.add(_node("x1", "r1"))
    assert explain.fetch_state(api).nodes == []
    api.add(make_flavor("tas").topology("racks").obj())
    assert [n["metadata"]["name"] for n in explain.fetch_state(api).nodes] == ["x1"]


def test_dry_run_of_a_job_carries_its_topology_annotations_into_the_simulation() -> None:
    """The Workload `dry-run` simulates asks for the rack the Job's pod template requires, as the worker's."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud.com/rack"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            },
        },
    }
    wl = simulate.workload_for(job, now=T0)
    assert wl["spec"]["podSets"][0]["topologyRequest"] == {
        "required": "cloud.com/rack",
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
    }
    outcome, _ = run(_tas_state("x1", "x3"), wl)
    assert isinstance(outcome.decision, Pending)
    assert "allows to fit only 1 out of 2 pod(s)" in outcome.decision.message


def test_dry_run_refuses_an_unparsable_topology_annotation_with_gos_message() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"kueue.x-k8s.io/podset-unconstrained-topology": "maybe"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    with pytest.raises(ValueError, match=r'strconv.ParseBool: parsing "maybe": invalid syntax'):
        simulate.workload_for(pod, now=T0)
