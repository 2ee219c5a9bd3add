"""`list …`: upstream kueuectl's list table tests (cmd/kueuectl/app/list/*_test.go), ids = upstream case names."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.cli.fake_api import FakeApi, ago
from webhook import kube
from webhook.cli import listing

V1B2 = "kueue.x-k8s.io/v1beta2"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{}/pendingworkloads"


def lq(name: str, ns: str, cq: str, n: int, created: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": V1B2,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": created, "labels": labels or {}},
        "spec": {"clusterQueue": cq},
        "status": {"pendingWorkloads": n, "admittedWorkloads": n},
    }


def cq(name: str, cohort: str, active: bool, created: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": V1B2,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "creationTimestamp": created, "labels": labels or {}},
        "spec": {"cohortName": cohort},
        "status": {"conditions": [{"type": "Active", "status": "True" if active else "False"}]},
    }


def rf(
    name: str, created: str, node_labels: dict[str, str] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": V1B2,
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "creationTimestamp": created, "labels": labels or {}},
        "spec": {"nodeLabels": node_labels or {}},
    }


def wl(
    name: str,
    ns: str,
    owner: tuple[str, str, str],
    queue: str,
    admitted_cq: str,
    created: str,
    *,
    conditions: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    owner_uid: str = "test-uid",
) -> dict[str, Any]:
    api_version, kind, owner_name = owner
    return {
        "apiVersion": V1B2,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": ns,
            "creationTimestamp": created,
            "labels": labels or {},
            "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": owner_name, "uid": owner_uid}],
        },
        "spec": {"queueName": queue, "active": True},
        "status": {"admission": {"clusterQueue": admitted_cq}, "conditions": conditions or []},
    }


JOB = ("batch/v1", "Job")
RAY = ("ray.io/v1", "RayJob")
PYTORCH = ("kubeflow.org/v1", "PyTorchJob")


def cond(kind: str, status: str, at: str | None = None) -> dict[str, Any]:
    return {"type": kind, "status": status, **({"lastTransitionTime": at} if at else {})}


LQS = [lq("lq1", "ns1", "cq1", 1, ago(hours=1)), lq("lq2", "ns2", "cq2", 2, ago(hours=2))]
LQS_DEFAULT = [
    lq("lq1", "default", "cq1", 1, ago(hours=1), {"key": "value1", "foo": "bar"}),
    lq("lq2", "default", "cq2", 2, ago(hours=2), {"key": "value2"}),
]
LQ_TABLE_1 = """\
NAME   CLUSTERQUEUE   PENDING WORKLOADS   ADMITTED WORKLOADS   AGE
lq1    cq1            1                   1                    60m
"""
LQ_TABLE_ALL = """\
NAMESPACE   NAME   CLUSTERQUEUE   PENDING WORKLOADS   ADMITTED WORKLOADS   AGE
ns1         lq1    cq1            1                   1                    60m
ns2         lq2    cq2            2                   2                    120m
"""


@pytest.mark.parametrize(
    ("objs", "namespace", "args", "out", "err"),
    [
        pytest.param(LQS, "ns1", [], LQ_TABLE_1, "", id="should print local queue list with namespace filter"),
        pytest.param(
            LQS_DEFAULT,
            "default",
            ["--clusterqueue", "cq1"],
            LQ_TABLE_1,
            "",
            id="should print local queue list with clusterqueue filter",
        ),
        pytest.param(
            LQS_DEFAULT,
            "default",
            ["--selector", "key=value1"],
            LQ_TABLE_1,
            "",
            id="should print local queue list with label selector filter",
        ),
        pytest.param(
            LQS_DEFAULT,
            "default",
            ["-l", "foo=bar"],
            LQ_TABLE_1,
            "",
            id="should print local queue list with label selector filter (short flag)",
        ),
        pytest.param(
            [], "default", [], "", "No resources found in default namespace.\n", id="should print not found error"
        ),
        pytest.param(
            [],
            "default",
            ["-A"],
            "",
            "No resources found\n",
            id="should print not found error with all-namespaces filter",
        ),
        pytest.param(
            LQS,
            "default",
            ["--all-namespaces"],
            LQ_TABLE_ALL,
            "",
            id="should print local queue list with all namespaces",
        ),
        pytest.param(
            LQS,
            "default",
            ["-A"],
            LQ_TABLE_ALL,
            "",
            id="should print local queue list with all namespaces (short command and flag)",
        ),
    ],
)
def test_list_local_queues(run, objs, namespace, args, out, err) -> None:
    got = run(FakeApi(*objs), "list", "lq" if "-A" in args else "localqueue", *args, namespace=namespace)
    assert (got.code, got.out, got.err) == (0, out, err)


CQS = [
    cq("cq1", "cohort1", True, ago(hours=1), {"key": "value1"}),
    cq("cq2", "cohort2", False, ago(hours=2), {"key": "value2"}),
]
CQ_HEADER = "NAME   COHORT    PENDING WORKLOADS   ADMITTED WORKLOADS   ACTIVE   AGE\n"
CQ1 = "cq1    cohort1   0                   0                    true     60m\n"
CQ2 = "cq2    cohort2   0                   0                    false    120m\n"


@pytest.mark.parametrize(
    ("objs", "args", "out", "err"),
    [
        pytest.param(CQS, [], CQ_HEADER + CQ1 + CQ2, "", id="should print cluster queue list"),
        pytest.param(CQS, ["--active", "true"], CQ_HEADER + CQ1, "", id="should print active cluster queue list"),
        pytest.param(CQS, ["--active", "false"], CQ_HEADER + CQ2, "", id="should print inactive cluster queue list"),
        pytest.param(
            CQS,
            ["--selector", "key=value1"],
            CQ_HEADER + CQ1,
            "",
            id="should print cluster queue list with label selector filter",
        ),
        pytest.param(
            CQS,
            ["-l", "key=value1"],
            CQ_HEADER + CQ1,
            "",
            id="should print cluster queue list with label selector filter (short flag)",
        ),
        pytest.param([], [], "", "No resources found\n", id="should print not found error"),
    ],
)
def test_list_cluster_queues(run, objs, args, out, err) -> None:
    got = run(FakeApi(*[_zero(o) for o in objs]), "list", "clusterqueue", *args)
    assert (got.code, got.out, got.err) == (0, out, err)


def _zero(obj: dict[str, Any]) -> dict[str, Any]:
    obj["status"] |= {"pendingWorkloads": 0, "admittedWorkloads": 0}
    return obj


def test_list_cluster_queues_refuses_two_active_values(run) -> None:
    got = run(FakeApi(), "list", "cq", "--active", "true,false")
    assert (got.code, got.err) == (1, "Error: only one active flag can be provided\n")


RFS = [
    rf("rf1", ago(hours=1), labels={"key": "value1", "foo": "bar"}),
    rf("rf2", ago(hours=2), labels={"key": "value2"}),
]


@pytest.mark.parametrize(
    ("objs", "args", "out", "err"),
    [
        pytest.param(
            RFS,
            [],
            "NAME   NODE LABELS   AGE\nrf1                  60m\nrf2                  120m\n",
            "",
            id="should print resource flavor list",
        ),
        pytest.param(
            [
                rf("rf1", ago(hours=1), {"key1": "value1", "key2": "value2"}),
                rf("rf2", ago(hours=2), {"key3": "value3", "key4": "value4"}),
            ],
            [],
            "NAME   NODE LABELS                AGE\nrf1    key1=value1, key2=value2   60m\n"
            "rf2    key3=value3, key4=value4   120m\n",
            "",
            id="should print resource flavor list with node labels",
        ),
        pytest.param(
            RFS,
            ["--selector", "key=value1"],
            "NAME   NODE LABELS   AGE\nrf1                  60m\n",
            "",
            id="should print resource flavor list with label selector filter",
        ),
        pytest.param(
            RFS,
            ["-l", "foo=bar"],
            "NAME   NODE LABELS   AGE\nrf1                  60m\n",
            "",
            id="should print resource flavor list with label selector filter (short flag)",
        ),
        pytest.param([], [], "", "No resources found\n", id="should print not found error"),
    ],
)
def test_list_resource_flavors(run, objs, args, out, err) -> None:
    got = run(FakeApi(*objs), "list", "resourceflavor", *args)
    assert (got.code, got.out, got.err) == (0, out, err)


WL_HEADER = "NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
WL1_PENDING = "wl1               j1         lq1          cq1            PENDING                                   60m\n"
TWO_WLS = [
    wl("wl1", "default", (*JOB, "j1"), "lq1", "cq1", ago(hours=1), labels={"key": "value1"}),
    wl("wl2", "default", (*RAY, "j2"), "lq2", "cq2", ago(hours=2), labels={"key": "value2"}),
]
STATUS_WLS = [
    wl("wl1", "default", (*JOB, "j1"), "lq1", "cq1", ago(hours=1)),
    wl("wl2", "default", (*RAY, "j2"), "lq2", "cq2", ago(hours=2), conditions=[cond("Admitted", "True", ago(hours=1))]),
    wl(
        "wl3", "default", (*RAY, "j3"), "lq3", "cq3", ago(hours=2), conditions=[cond("Admitted", "False", ago(hours=1))]
    ),
    wl(
        "wl4",
        "default",
        (*JOB, "j4"),
        "lq4",
        "cq4",
        ago(hours=3),
        conditions=[cond("Admitted", "True", ago(hours=2)), cond("Finished", "True", ago(hours=1))],
    ),
    wl(
        "wl5",
        "default",
        (*JOB, "j5"),
        "lq5",
        "cq5",
        ago(hours=3),
        conditions=[cond("Admitted", "True", ago(hours=2)), cond("Finished", "False", ago(hours=1))],
    ),
]
STATUS_TABLE = """\
NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS     POSITION IN QUEUE   EXEC TIME   AGE
wl1               j1         lq1          cq1            PENDING                                    60m
wl2               j2         lq2          cq2            ADMITTED                       60m         120m
wl3               j3         lq3          cq3            PENDING                                    120m
wl4               j4         lq4          cq4            FINISHED                       60m         3h
wl5               j5         lq5          cq5            ADMITTED                       120m        3h
"""
ADMITTED_FINISHED_TABLE = """\
NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS     POSITION IN QUEUE   EXEC TIME   AGE
wl2               j2         lq2          cq2            ADMITTED                       60m         120m
wl4               j4         lq4          cq4            FINISHED                       60m         3h
"""


def _discovery(*entries: tuple[str, str, str, str]) -> dict[str, Any]:
    """Legacy discovery answers: (groupVersion, kind, singular, group field)."""
    answers: dict[str, Any] = {}
    for gv, kind, singular, group in entries:
        path = f"/apis/{gv}" if "/" in gv else f"/api/{gv}"
        doc = answers.setdefault(path, {"groupVersion": gv, "resources": []})
        doc["resources"].append(
            {"name": singular + "s", "singularName": singular, "kind": kind, "group": group, "namespaced": True}
        )
    return answers


@pytest.mark.parametrize(
    ("objs", "namespace", "args", "answers", "out", "err"),
    [
        pytest.param(
            [
                wl("wl1", "ns1", (*JOB, "j1"), "lq1", "cq1", ago(hours=1)),
                wl("wl2", "ns2", (*RAY, "j2"), "lq2", "cq2", ago(hours=2)),
            ],
            "ns1",
            [],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with namespace filter",
        ),
        pytest.param(
            TWO_WLS,
            "default",
            ["--localqueue", "lq1"],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with localqueue filter",
        ),
        pytest.param(
            TWO_WLS,
            "default",
            ["-q", "lq1"],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with localqueue filter (short flag)",
        ),
        pytest.param(
            TWO_WLS,
            "default",
            ["--clusterqueue", "cq1"],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with clusterqueue filter",
        ),
        pytest.param(
            TWO_WLS,
            "default",
            ["-c", "cq1"],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with clusterqueue filter (short flag)",
        ),
        pytest.param(
            STATUS_WLS,
            "default",
            ["--status", "all"],
            {},
            STATUS_TABLE,
            "",
            id="should print workload list with all status flag",
        ),
        pytest.param(
            [STATUS_WLS[0], STATUS_WLS[1], STATUS_WLS[3]],
            "default",
            ["--status", "admitted", "--status", "finished"],
            {},
            ADMITTED_FINISHED_TABLE,
            "",
            id="should print workload list with only admitted and finished status flags",
        ),
        pytest.param(
            [
                STATUS_WLS[0],
                wl("wl2", "default", (*RAY, "j2"), "lq2", "cq2", ago(hours=2), conditions=[cond("Finished", "True")]),
            ],
            "default",
            ["--status", "pending"],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with only pending filter",
        ),
        pytest.param(
            [
                wl(
                    "wl1",
                    "default",
                    (*JOB, "j1"),
                    "lq1",
                    "cq1",
                    ago(hours=1),
                    conditions=[cond("QuotaReserved", "True")],
                ),
                wl(
                    "wl2",
                    "default",
                    (*RAY, "j2"),
                    "lq2",
                    "cq2",
                    ago(hours=2),
                    conditions=[cond("QuotaReserved", "False")],
                ),
            ],
            "default",
            ["--status", "quotareserved"],
            {},
            "NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS          POSITION IN QUEUE   EXEC TIME   AGE\n"
            "wl1               j1         lq1          cq1            QUOTARESERVED                                   60m\n",
            "",
            id="should print workload list with only quotareserved filter",
        ),
        pytest.param(
            [
                wl(
                    "wl1",
                    "default",
                    (*JOB, "j1"),
                    "lq1",
                    "cq1",
                    ago(hours=1),
                    conditions=[cond("Admitted", "True", ago(hours=1))],
                ),
                wl(
                    "wl2",
                    "default",
                    (*RAY, "j2"),
                    "lq2",
                    "cq2",
                    ago(hours=2),
                    conditions=[cond("Admitted", "False", ago(hours=1))],
                ),
            ],
            "default",
            ["--status", "admitted"],
            {},
            "NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS     POSITION IN QUEUE   EXEC TIME   AGE\n"
            "wl1               j1         lq1          cq1            ADMITTED                       60m         60m\n",
            "",
            id="should print workload list with only admitted filter",
        ),
        pytest.param(
            [
                wl(
                    "wl1",
                    "default",
                    (*JOB, "j1"),
                    "lq1",
                    "cq1",
                    ago(hours=1),
                    conditions=[cond("Admitted", "True", ago(hours=2)), cond("Finished", "True", ago(hours=1))],
                ),
                wl(
                    "wl2",
                    "default",
                    (*RAY, "j2"),
                    "lq2",
                    "cq2",
                    ago(hours=2),
                    conditions=[cond("Admitted", "True", ago(hours=2)), cond("Finished", "False", ago(hours=1))],
                ),
            ],
            "default",
            ["--status", "finished"],
            {},
            "NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS     POSITION IN QUEUE   EXEC TIME   AGE\n"
            "wl1               j1         lq1          cq1            FINISHED                       60m         60m\n",
            "",
            id="should print workload list with only finished status filter",
        ),
        pytest.param(
            TWO_WLS,
            "default",
            ["--selector", "key=value1"],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with label selector filter",
        ),
        pytest.param(
            TWO_WLS,
            "default",
            ["-l", "key=value1"],
            {},
            WL_HEADER + WL1_PENDING,
            "",
            id="should print workload list with label selector filter (short flag)",
        ),
        pytest.param(
            [*TWO_WLS, wl("wl3", "default", (*PYTORCH, "j3"), "lq3", "cq3", ago(hours=3))],
            "default",
            [],
            _discovery(
                ("batch/v1", "Job", "job", ""),
                ("ray.io/v1", "RayJob", "rayjob", "ray.io"),
                ("kubeflow.org/v1", "PyTorchJob", "pytorchjob", "kubeflow.org"),
            ),
            "NAME   JOB TYPE                  JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
            "wl1    job                       j1         lq1          cq1            PENDING                                   60m\n"
            "wl2    rayjob.ray.io             j2         lq2          cq2            PENDING                                   120m\n"
            "wl3    pytorchjob.kubeflow....   j3         lq3          cq3            PENDING                                   3h\n",
            "",
            id="should print workload list with Job types",
        ),
        pytest.param(
            [
                wl("wl1", "default", (*JOB, "j1"), "lq1", "cq1", ago(hours=1)),
                wl("wl2", "default", (*RAY, "j2"), "lq2", "cq2", ago(hours=2)),
            ],
            "default",
            [],
            {
                VISIBILITY.format("cq1"): {
                    "items": [
                        {
                            "metadata": {"name": "wl1", "namespace": "default"},
                            "positionInClusterQueue": 11,
                            "positionInLocalQueue": 12,
                        }
                    ]
                },
                VISIBILITY.format("cq2"): {
                    "items": [
                        {
                            "metadata": {"name": "wl2", "namespace": "default"},
                            "positionInClusterQueue": 21,
                            "positionInLocalQueue": 22,
                        }
                    ]
                },
            },
            "NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
            "wl1               j1         lq1          cq1            PENDING   12                              60m\n"
            "wl2               j2         lq2          cq2            PENDING   22                              120m\n",
            "",
            id="should print workload list with position in queue",
        ),
        pytest.param(
            [], "default", [], {}, "", "No resources found in default namespace.\n", id="should print not found error"
        ),
        pytest.param(
            [],
            "default",
            ["-A"],
            {},
            "",
            "No resources found\n",
            id="should print not found error with all-namespaces filter",
        ),
        pytest.param(
            [
                wl("wl1", "ns1", (*JOB, "j1"), "lq1", "cq1", ago(hours=1)),
                wl("wl2", "ns2", (*RAY, "j2"), "lq2", "cq2", ago(hours=2)),
            ],
            "default",
            ["--all-namespaces"],
            {},
            "NAMESPACE   NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
            "ns1         wl1               j1         lq1          cq1            PENDING                                   60m\n"
            "ns2         wl2               j2         lq2          cq2            PENDING                                   120m\n",
            "",
            id="should print workload list with all namespaces",
        ),
    ],
)
def test_list_workloads(run, objs, namespace, args, answers, out, err) -> None:
    got = run(FakeApi(*objs, answers=answers), "list", "workload", *args, namespace=namespace)
    assert (got.code, got.out, got.err) == (0, out, err)


def _for_answers(kind: str, plural: str, group: str, version: str) -> dict[str, Any]:
    """Discovery (aggregated, as a 1.30+ server answers) naming one kind besides core v1."""
    return {
        "/api/v1": {"resources": [{"name": "pods", "singularName": "pod", "kind": "Pod", "namespaced": True}]},
        "/apis": {
            "kind": "APIGroupDiscoveryList",
            "items": [
                {
                    "metadata": {"name": group},
                    "versions": [
                        {
                            "version": version,
                            "resources": [
                                {
                                    "resource": plural,
                                    "singularResource": kind.lower(),
                                    "responseKind": {"kind": kind},
                                    "scope": "Namespaced",
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    }


def test_list_workloads_for_job_by_uid_label(run) -> None:
    """upstream "should print workload list with resource filter": the job-uid label picks the Workload."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job-test", "namespace": "default", "uid": "job-test-uid"},
    }
    wls = [
        wl(
            "wl1",
            "default",
            (*JOB, "job-test"),
            "lq1",
            "cq1",
            ago(hours=2),
            labels={"kueue.x-k8s.io/job-uid": "job-test-uid"},
        ),
        wl("wl2", "default", (*PYTORCH, "job-test"), "lq2", "cq2", ago(hours=2)),
    ]
    answers = _for_answers("Job", "jobs", "batch", "v1") | _discovery(("batch/v1", "Job", "job", "batch"))
    got = run(FakeApi(job, *wls, answers=answers), "list", "workload", "--for", "job.batch/job-test")
    assert got.out == (
        "NAME   JOB TYPE    JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
        "wl1    job.batch   job-test   lq1          cq1            PENDING                                   120m\n"
    )


def test_list_workloads_for_pod_by_owner(run) -> None:
    """upstream "should print workload list with resource filter and composable jobs": no label, so owner UIDs."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pod-test-1", "namespace": "default", "uid": "pod-test-uid-1"},
    }
    wls = [
        wl(
            "wl1",
            "default",
            (*JOB, "job-test"),
            "lq1",
            "cq1",
            ago(hours=2),
            labels={"kueue.x-k8s.io/job-uid": "job-test-uid"},
        ),
        wl("wl2", "default", ("v1", "Pod", "pod-test-1"), "lq2", "cq2", ago(hours=3), owner_uid="pod-test-uid-1"),
    ]
    answers = _for_answers("Job", "jobs", "batch", "v1")
    got = run(FakeApi(pod, *wls, answers=answers), "list", "workload", "--for", "pod/pod-test-1")
    assert got.out == (
        "NAME   JOB TYPE   JOB NAME     LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
        "wl2    pod        pod-test-1   lq2          cq2            PENDING                                   3h\n"
    )


def test_list_workloads_refuses_unknown_status(run) -> None:
    got = run(FakeApi(), "list", "workload", "--status", "running")
    assert (got.code, got.err) == (
        1,
        'Error: invalid status value (running). Must be "all", "pending", "admitted" or "finished"\n',
    )


def test_workload_cluster_queue_comes_from_the_local_queue_when_not_admitted(run) -> None:
    pending = wl("wl1", "default", (*JOB, "j1"), "lq1", "", ago(minutes=5))
    got = run(FakeApi(pending, lq("lq1", "default", "cq9", 0, ago(hours=1))), "list", "workload")
    assert "lq1          cq9            PENDING" in got.out


def test_position_blank_when_visibility_api_absent(run) -> None:
    got = run(FakeApi(wl("wl1", "default", (*JOB, "j1"), "lq1", "cq1", ago(hours=1))), "list", "workload")
    assert got.out == WL_HEADER + WL1_PENDING


def test_visibility_errors_other_than_not_found_fail_the_list(run) -> None:
    api = FakeApi(
        wl("wl1", "default", (*JOB, "j1"), "lq1", "cq1", ago(hours=1)),
        answers={
            VISIBILITY.format("cq1"): kube.ServerError(503, "the server is currently unable to handle the request")
        },
    )
    got = run(api, "list", "workload")
    assert (got.code, got.err) == (1, "Error: the server is currently unable to handle the request\n")


POD_COLUMNS = [
    {"name": "Name", "type": "string"},
    {"name": "Ready", "type": "string"},
    {"name": "Status", "type": "string"},
    {"name": "Restarts", "type": "integer"},
    {"name": "Age", "type": "string"},
    {"name": "IP", "type": "string", "priority": 1},
    {"name": "Node", "type": "string", "priority": 1},
    {"name": "Nominated Node", "type": "string", "priority": 1},
    {"name": "Readiness Gates", "type": "string", "priority": 1},
]


def _pod_table(*pods: tuple[str, str]) -> dict[str, Any]:
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": POD_COLUMNS,
        "rows": [
            {
                "cells": [name, "1/1", "Running", 0, "<unknown>", "<none>", "<none>", "<none>", "<none>"],
                "object": {"metadata": {"name": name, "namespace": ns}},
            }
            for ns, name in pods
        ],
    }


def _job_for_pods(
    name: str = "test-job", kind: str = "Job", api_version: str = "batch/v1", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
    }


@pytest.mark.parametrize(
    ("obj", "args", "answers", "out", "err"),
    [
        pytest.param(
            _job_for_pods(),
            ["--for", "job/test-job", "-o", "wide"],
            {"/api/v1/namespaces/default/pods": _pod_table(("default", "valid-pod-1"), ("default", "valid-pod-2"))},
            "NAME          READY   STATUS    RESTARTS   AGE         IP       NODE     NOMINATED NODE   READINESS GATES\n"
            "valid-pod-1   1/1     Running   0          <unknown>   <none>   <none>   <none>           <none>\n"
            "valid-pod-2   1/1     Running   0          <unknown>   <none>   <none>   <none>           <none>\n",
            "",
            id="list pods of batch/job with wide output",
        ),
        pytest.param(
            _job_for_pods(),
            ["--for", "job/test-job"],
            {"/api/v1/namespaces/default/pods": _pod_table(("default", "valid-pod-1"), ("default", "valid-pod-2"))},
            "NAME          READY   STATUS    RESTARTS   AGE\n"
            "valid-pod-1   1/1     Running   0          <unknown>\n"
            "valid-pod-2   1/1     Running   0          <unknown>\n",
            "",
            id="list pods for valid batch/job type",
        ),
        pytest.param(
            _job_for_pods(),
            ["--for", "job/test-job"],
            {"/api/v1/namespaces/default/pods": _pod_table()},
            "",
            "No resources found in default namespace.\n",
            id="no valid pods for batch/job type in current namespace",
        ),
        pytest.param(
            _job_for_pods(),
            ["--for", "job/test-job", "-A"],
            {"/api/v1/pods": _pod_table()},
            "",
            "No resources found.\n",
            id="no valid pods for batch/job type in all namespaces",
        ),
        pytest.param(
            _job_for_pods("sample-job"),
            ["--for", "job/sample-job", "-A"],
            {"/api/v1/pods": _pod_table(("dev-team-a", "valid-pod-1"), ("dev-team-b", "valid-pod-2"))},
            "NAMESPACE    NAME          READY   STATUS    RESTARTS   AGE\n"
            "dev-team-a   valid-pod-1   1/1     Running   0          <unknown>\n"
            "dev-team-b   valid-pod-2   1/1     Running   0          <unknown>\n",
            "",
            id="valid pods for batch/job type in all namespaces",
        ),
    ],
)
def test_list_pods(run, obj, args, answers, out, err) -> None:
    api = FakeApi(obj, answers=answers | _for_answers("Job", "jobs", "batch", "v1"))
    got = run(api, "list", "pods", *args)
    assert (got.code, got.out, got.err) == (0, out, err)


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(_job_for_pods(), "batch.kubernetes.io/job-name=test-job", id="batch/job"),
        pytest.param(
            _job_for_pods(kind="PyTorchJob", api_version="kubeflow.org/v1"),
            "training.kubeflow.org/job-name=test-job,training.kubeflow.org/operator-name=pytorchjob-controller",
            id="list pods for kubeflow.org/PyTorchJob type",
        ),
        pytest.param(
            _job_for_pods(kind="PaddleJob", api_version="kubeflow.org/v1"),
            "training.kubeflow.org/job-name=test-job,training.kubeflow.org/operator-name=paddlejob-controller",
            id="list pods for kubeflow.org/paddlejob type",
        ),
        pytest.param(
            _job_for_pods(kind="TFJob", api_version="kubeflow.org/v1"),
            "training.kubeflow.org/job-name=test-job,training.kubeflow.org/operator-name=tfjob-controller",
            id="list pods for kubeflow.org/tfjob type",
        ),
        pytest.param(
            _job_for_pods(kind="MPIJob", api_version="kubeflow.org/v2beta1"),
            "training.kubeflow.org/job-name=test-job,training.kubeflow.org/operator-name=mpi-operator",
            id="list pods for kubeflow.org/mpijob type",
        ),
        pytest.param(
            _job_for_pods(kind="XGBoostJob", api_version="kubeflow.org/v1"),
            "training.kubeflow.org/job-name=test-job,training.kubeflow.org/operator-name=xgboostjob-controller",
            id="list pods for kubeflow.org/xgboostjob type",
        ),
        pytest.param(
            {**_job_for_pods(kind="RayJob", api_version="ray.io/v1"), "status": {"rayClusterName": "test-cluster"}},
            "ray.io/cluster=test-cluster",
            id="list pods for rayjob type",
        ),
        pytest.param(
            _job_for_pods("test-cluster", kind="RayCluster", api_version="ray.io/v1"),
            "ray.io/cluster=test-cluster",
            id="list pods for raycluster type",
        ),
        pytest.param(
            _job_for_pods(kind="JobSet", api_version="jobset.x-k8s.io/v1alpha2"),
            "jobset.sigs.k8s.io/jobset-name=test-job",
            id="list pods for jobset type",
        ),
        pytest.param(
            _job_for_pods("p", kind="Pod", api_version="v1", labels={"kueue.x-k8s.io/pod-group-name": "g"}),
            "kueue.x-k8s.io/pod-group-name=g",
            id="pod group",
        ),
        pytest.param(_job_for_pods(kind="Deployment", api_version="apps/v1"), None, id="unknown kind"),
    ],
)
def test_pod_label_selector(obj, want) -> None:
    assert listing.pod_label_selector(obj) == want


def test_list_pods_needs_for(run) -> None:
    got = run(FakeApi(), "list", "pods")
    assert (got.code, got.err) == (1, 'Error: required flag(s) "for" not set\n')


def test_list_json_is_a_typed_list(run) -> None:
    got = run(FakeApi(*LQS_DEFAULT), "list", "localqueue", "-o", "json")
    import json

    doc = json.loads(got.out)
    assert (doc["kind"], doc["apiVersion"], [i["metadata"]["name"] for i in doc["items"]]) == (
        "LocalQueueList",
        V1B2,
        ["lq1", "lq2"],
    )


def test_unknown_output_format_is_refused(run) -> None:
    got = run(FakeApi(), "list", "localqueue", "-o", "jsonpath")
    assert got.code == 1
    assert got.err.startswith('Error: unable to match a printer suitable for the output format "jsonpath"')
