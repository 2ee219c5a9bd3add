"""stop, resume, delete workload, version, pass-through; delete cases are upstream's (delete_workload_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.cli.fake_api import FakeApi
from webhook.cli import passthrough

V1B2 = "kueue.x-k8s.io/v1beta2"
KUEUE = "apis/kueue.x-k8s.io/v1beta2"


def cq(name: str) -> dict[str, Any]:
    return {"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {"stopPolicy": "None"}}


def lq(name: str, ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": V1B2,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": "cq", "stopPolicy": "None"},
    }


def wl(name: str, ns: str = "default", owner: str | None = None) -> dict[str, Any]:
    refs = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": "u"}] if owner else []
    return {
        "apiVersion": V1B2,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": refs},
        "spec": {"active": True},
    }


def job(name: str, ns: str = "default") -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns}}


@pytest.mark.parametrize(
    ("args", "policy", "out"),
    [
        pytest.param(
            ["stop", "clusterqueue", "cq1"], "HoldAndDrain", "clusterqueue.kueue.x-k8s.io/cq1\n", id="stop drains"
        ),
        pytest.param(
            ["stop", "cq", "cq1", "--keep-already-running"],
            "Hold",
            "clusterqueue.kueue.x-k8s.io/cq1\n",
            id="stop keeps running workloads",
        ),
        pytest.param(["resume", "cq", "cq1"], "None", "clusterqueue.kueue.x-k8s.io/cq1\n", id="resume"),
        pytest.param(
            ["stop", "cq", "cq1", "--dry-run", "client"],
            "None",
            "clusterqueue.kueue.x-k8s.io/cq1  (client dry run)\n",
            id="client dry run writes nothing",
        ),
    ],
)
def test_stop_resume_cluster_queue(run, args, policy, out) -> None:
    api = FakeApi(cq("cq1"))
    api.store[(KUEUE, "clusterqueues", "", "cq1")]["spec"]["stopPolicy"] = "Hold" if args[0] == "resume" else "None"
    got = run(api, *args)
    assert (got.code, got.out) == (0, out)
    assert api.get(KUEUE, "clusterqueues", "", "cq1")["spec"]["stopPolicy"] == policy


def test_stop_local_queue_in_the_namespace(run) -> None:
    api = FakeApi(lq("lq1", "team"))
    got = run(api, "stop", "localqueue", "lq1", "-n", "team", "-o", "yaml")
    assert got.code == 0 and "stopPolicy: HoldAndDrain" in got.out
    got = run(api, "stop", "lq", "lq1")
    assert (got.code, got.err) == (1, 'Error: localqueues.kueue.x-k8s.io "lq1" not found\n')


@pytest.mark.parametrize(
    ("verb", "active", "out"),
    [
        pytest.param("stop", False, "workload.kueue.x-k8s.io/wl1 stopped\n", id="stop workload"),
        pytest.param("resume", True, "workload.kueue.x-k8s.io/wl1 resumed\n", id="resume workload"),
    ],
)
def test_stop_resume_workload(run, verb, active, out) -> None:
    api = FakeApi(wl("wl1"))
    got = run(api, verb, "workload", "wl1")
    assert (got.code, got.out) == (0, out)
    assert api.get(KUEUE, "workloads", "default", "wl1")["spec"]["active"] is active


def test_server_dry_run_sends_dry_run(run) -> None:
    api = FakeApi(wl("wl1"))
    got = run(api, "stop", "kwl", "wl1", "--dry-run=server")
    assert got.out == "workload.kueue.x-k8s.io/wl1 stopped (server dry run)\n"
    assert api.get(KUEUE, "workloads", "default", "wl1")["spec"]["active"] is True


JOBS_DISCOVERY = {
    "/api/v1": {"resources": []},
    "/apis": {
        "kind": "APIGroupDiscoveryList",
        "items": [
            {
                "metadata": {"name": "batch"},
                "versions": [
                    {
                        "version": "v1",
                        "resources": [
                            {
                                "resource": "jobs",
                                "singularResource": "job",
                                "responseKind": {"kind": "Job"},
                                "scope": "Namespaced",
                            }
                        ],
                    }
                ],
            }
        ],
    },
}


@pytest.mark.parametrize(
    ("objs", "args", "stdin", "out", "err", "left"),
    [
        pytest.param([], [], "", "", "Error: requires at least 1 arg(s), only received 0\n", None, id="no arguments"),
        pytest.param(
            [wl("wl1", owner="j1"), job("j1")],
            ["wl1"],
            "",
            "This operation will also delete:\n  - jobs.batch/j1 associated with the default/wl1 workload\n"
            "Do you want to proceed (y/n)? Deletion is canceled\n",
            "",
            ({"wl1"}, {"j1"}),
            id="shouldn't delete a workload and its corresponding job without confirmation",
        ),
        pytest.param(
            [wl("wl1", owner="j1"), wl("wl2"), job("j1"), job("j2")],
            ["wl2"],
            "",
            "workload.kueue.x-k8s.io/wl2 deleted\n",
            "",
            ({"wl1"}, {"j1", "j2"}),
            id="should delete just a workload without confirmation because there is no associated job requiring it",
        ),
        pytest.param(
            [],
            ["wl2"],
            "",
            "",
            'workloads.kueue.x-k8s.io "wl2" not found\n',
            None,
            id="shouldn't delete a workload because it is not found",
        ),
        pytest.param(
            [wl("wl1", owner="j1"), wl("wl2"), job("j1"), job("j2")],
            ["wl1"],
            "y\n",
            "This operation will also delete:\n  - jobs.batch/j1 associated with the default/wl1 workload\n"
            "Do you want to proceed (y/n)? jobs.batch/j1 deleted\n",
            "",
            ({"wl1", "wl2"}, {"j2"}),
            id="should delete jobs corresponding to the workload with confirmation",
        ),
        pytest.param(
            [wl("wl1", owner="j1"), wl("wl2"), job("j1"), job("j2")],
            ["wl1", "--yes"],
            "",
            "jobs.batch/j1 deleted\n",
            "",
            ({"wl1", "wl2"}, {"j2"}),
            id="should delete jobs corresponding to the workload with yes flag",
        ),
        pytest.param(
            [wl("wl1", owner="j1"), wl("wl2"), wl("wl3", "test"), job("j1"), job("j2")],
            ["--all", "--yes"],
            "",
            None,
            "",
            ({"wl1", "wl3"}, {"j2"}),
            id="should delete all jobs corresponding to the workloads and any workloads without corresponding jobs in default namespace",
        ),
        pytest.param(
            [wl("wl1", owner="j1"), wl("wl2"), wl("wl3", "test"), job("j1"), job("j2")],
            ["--all", "-y", "-A"],
            "",
            None,
            "",
            ({"wl1"}, {"j2"}),
            id="should delete all jobs corresponding to the workloads and any workloads without corresponding jobs in all namespaces",
        ),
        pytest.param(
            [wl("wl1", owner="j1"), job("j1")],
            ["wl1", "--dry-run", "client"],
            "",
            "jobs.batch/j1 deleted (client dry run)\n",
            "",
            ({"wl1"}, {"j1"}),
            id="shouldn't delete the jobs corresponding to the workloads jobs when using client dry-run flag",
        ),
        pytest.param(
            [wl("wl1", owner="j1"), job("j1")],
            ["wl1", "--dry-run", "server"],
            "",
            "jobs.batch/j1 deleted (server dry run)\n",
            "",
            ({"wl1"}, {"j1"}),
            id="shouldn't delete the jobs corresponding to the workloads jobs when using server dry-run flag",
        ),
    ],
)
def test_delete_workload(run, monkeypatch, objs, args, stdin, out, err, left) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    api = FakeApi(*objs, answers=JOBS_DISCOVERY)
    got = run(api, "delete", "workload", *args)
    if out is not None:
        assert got.out == out
    assert got.err == err
    if left is not None:
        workloads = {k[3] for k in api.store if k[1] == "workloads"}
        jobs = {k[3] for k in api.store if k[1] == "jobs"}
        # the Job's Workload goes with the Job through garbage collection, which the fake has not
        assert (workloads, jobs) == left


def test_version_prints_the_manager_image(run) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.0.0"}]}}
        },
    }
    got = run(FakeApi(), "version")
    assert got.out.startswith("Client Version: v") and got.out.count("\n") == 1
    got = run(FakeApi(deployment), "version")
    assert got.out.splitlines()[1] == "Kueue Controller Manager Image: registry.k8s.io/kueue/kueue:v0.0.0"


@pytest.mark.parametrize(
    ("argv", "verb", "kind", "want"),
    [
        pytest.param(
            ["get", "kwl", "-n", "x"],
            "get",
            "workload",
            ["/k", "get", "workloads.kueue.x-k8s.io", "-n", "x"],
            id="alias qualified",
        ),
        pytest.param(
            ["-n", "x", "describe", "cq", "cq"],
            "describe",
            "clusterqueue",
            ["/k", "-n", "x", "describe", "clusterqueues.kueue.x-k8s.io", "cq"],
            id="only the kind word after the verb",
        ),
        pytest.param(
            ["edit", "resourceflavor", "rf", "-o", "yaml"],
            "edit",
            "resourceflavor",
            ["/k", "edit", "resourceflavors.kueue.x-k8s.io", "rf", "-o", "yaml"],
            id="full name",
        ),
    ],
)
def test_kubectl_argv(argv, verb, kind, want) -> None:
    assert passthrough.kubectl_argv(argv, verb, kind, "/k") == want


def test_passthrough_execs_kubectl(run, monkeypatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/kubectl")
    monkeypatch.setattr("os.execv", lambda path, argv: seen.append((path, argv)))
    got = run(FakeApi(), "get", "lq", "-A", "--show-labels")
    assert got.code == 0
    assert seen == [
        ("/usr/bin/kubectl", ["/usr/bin/kubectl", "get", "localqueues.kueue.x-k8s.io", "-A", "--show-labels"])
    ]
