"""`create …`: upstream kueuectl's create tests (cmd/kueuectl/app/create/*_test.go), ids = upstream case names."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.cli.fake_api import FakeApi
from webhook.cli import create

V1B2 = "kueue.x-k8s.io/v1beta2"


def fq(name: str, *resources: tuple[str, ...]) -> dict[str, Any]:
    """A flavor's quotas as upstream's MakeFlavorQuotas(...).Resource(name, nominal, borrowing, lending)."""
    out = []
    for r in resources:
        q: dict[str, Any] = {"name": r[0], "nominalQuota": r[1] if len(r) > 1 else "0"}
        if len(r) > 2 and r[2]:
            q["borrowingLimit"] = r[2]
        if len(r) > 3 and r[3]:
            q["lendingLimit"] = r[3]
        out.append(q)
    return {"name": name, "resources": out}


def rg(covered: list[str], *flavors: dict[str, Any]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": list(flavors)}


@pytest.mark.parametrize(
    ("quota", "borrowing", "lending", "want"),
    [
        pytest.param(
            ["alpha-2.0:cpu=1;memory=1;example-1.org/memory=5Gi"],
            [],
            [],
            [
                rg(
                    ["cpu", "memory", "example-1.org/memory"],
                    fq("alpha-2.0", ("cpu", "1"), ("memory", "1"), ("example-1.org/memory", "5Gi")),
                )
            ],
            id="should create one resource group with one flavor and nominalQuota set",
        ),
        pytest.param(
            [],
            ["alpha:cpu=1;memory=1"],
            [],
            [rg(["cpu", "memory"], fq("alpha", ("cpu", "0", "1"), ("memory", "0", "1")))],
            id="should create one resource group with one flavor and borrowingLimit set",
        ),
        pytest.param(
            [],
            [],
            ["alpha:cpu=1;memory=1"],
            [rg(["cpu", "memory"], fq("alpha", ("cpu", "0", "", "1"), ("memory", "0", "", "1")))],
            id="should create one resource group with one flavor and lendingLimit set",
        ),
        pytest.param(
            ["alpha:example.com/gpu=1", "beta:example.com/gpu=2"],
            [],
            [],
            [rg(["example.com/gpu"], fq("alpha", ("example.com/gpu", "1")), fq("beta", ("example.com/gpu", "2")))],
            id="should create one resource group with two flavors and nominalQuota set",
        ),
        pytest.param(
            ["alpha:cpu=1;memory=1", "beta:memory=2;cpu=2"],
            [],
            [],
            [
                rg(
                    ["cpu", "memory"],
                    fq("alpha", ("cpu", "1"), ("memory", "1")),
                    fq("beta", ("memory", "2"), ("cpu", "2")),
                )
            ],
            id="should create one resource group when flavors listing resources in different order",
        ),
        pytest.param(
            ["alpha:cpu=1;memory=1", "beta:example.com/gpu=2"],
            [],
            [],
            [
                rg(["cpu", "memory"], fq("alpha", ("cpu", "1"), ("memory", "1"))),
                rg(["example.com/gpu"], fq("beta", ("example.com/gpu", "2"))),
            ],
            id="should create two resource groups with one flavor each and nominalQuota set",
        ),
        pytest.param(
            ["alpha:cpu=1;memory=1", "beta:example.com/gpu=2", "gamma:cpu=2;memory=2"],
            [],
            [],
            [
                rg(
                    ["cpu", "memory"],
                    fq("alpha", ("cpu", "1"), ("memory", "1")),
                    fq("gamma", ("cpu", "2"), ("memory", "2")),
                ),
                rg(["example.com/gpu"], fq("beta", ("example.com/gpu", "2"))),
            ],
            id="should create two resource groups with multiple flavors and nominalQuota set",
        ),
        pytest.param(
            ["alpha:cpu=1;memory=2"],
            ["alpha:cpu=1;memory=2"],
            ["alpha:cpu=1;memory=2"],
            [rg(["cpu", "memory"], fq("alpha", ("cpu", "1", "1", "1"), ("memory", "2", "2", "2")))],
            id="should create one resource group with one flavor and all quotas set",
        ),
        pytest.param(
            ["alpha:example.com/gpu=1", "beta:example.com/gpu=2"],
            ["alpha:example.com/gpu=1", "beta:example.com/gpu=2"],
            ["alpha:example.com/gpu=1", "beta:example.com/gpu=2"],
            [
                rg(
                    ["example.com/gpu"],
                    fq("alpha", ("example.com/gpu", "1", "1", "1")),
                    fq("beta", ("example.com/gpu", "2", "2", "2")),
                )
            ],
            id="should create one resource group with two flavors and all quotas set",
        ),
        pytest.param(
            *[["alpha:cpu=1;memory=1", "beta:example.com/gpu=2"]] * 3,
            [
                rg(["cpu", "memory"], fq("alpha", ("cpu", "1", "1", "1"), ("memory", "1", "1", "1"))),
                rg(["example.com/gpu"], fq("beta", ("example.com/gpu", "2", "2", "2"))),
            ],
            id="should create two resource groups with one flavor each and all quotas set",
        ),
        pytest.param(
            *[["alpha:cpu=1;memory=1", "beta:example.com/gpu=2", "gamma:cpu=2;memory=2"]] * 3,
            [
                rg(
                    ["cpu", "memory"],
                    fq("alpha", ("cpu", "1", "1", "1"), ("memory", "1", "1", "1")),
                    fq("gamma", ("cpu", "2", "2", "2"), ("memory", "2", "2", "2")),
                ),
                rg(["example.com/gpu"], fq("beta", ("example.com/gpu", "2", "2", "2"))),
            ],
            id="should create two resource groups with multiple flavors and all quotas set",
        ),
    ],
)
def test_parse_resource_groups(quota, borrowing, lending, want) -> None:
    assert create.parse_resource_groups(quota, borrowing, lending) == want


@pytest.mark.parametrize(
    ("quota", "borrowing", "message"),
    [
        pytest.param(
            ["alpha:cpu=1;memory=1", "alpha:example.com/gpu=2"],
            [],
            "invalid flavor",
            id="should fail to create a resource group with an invalid flavor and one quota set",
        ),
        pytest.param(
            ["alpha:cpu=1;memory=1", "beta:cpu=1"],
            [],
            "invalid resource group",
            id="should fail to create when one resource is shared by multiple resource groups",
        ),
        pytest.param(
            ["alpha:cpu=1;memory=1"],
            ["alpha:example.com/gpu=2"],
            "invalid flavor",
            id="should fail to create a resource group with an invalid flavor and multiple quotas set",
        ),
        pytest.param(
            ["alpha:cpu=;memory=1"],
            [],
            "invalid resources specification",
            id="should fail when invalid resource quotas",
        ),
        pytest.param(
            ["alpha:cpu=0,memory=1"],
            [],
            "invalid resources specification",
            id="should fail when invalid resources separator",
        ),
        pytest.param(["alpha"], [], "invalid resources specification", id="should fail when invalid param"),
        pytest.param(
            ["alpha=cpu=0;memory=1"],
            [],
            "invalid resources specification",
            id="should fail when invalid flavor specification",
        ),
        pytest.param(["alpha:cpu=a;memory=1"], [], "invalid resource quota", id="should fail when invalid quantity"),
    ],
)
def test_parse_resource_groups_errors(quota, borrowing, message) -> None:
    with pytest.raises(create.QuotaError, match=f"^{message}$"):
        create.parse_resource_groups(quota, borrowing, [])


def test_build_cluster_queue() -> None:
    """upstream TestCreateClusterQueue "success_create"."""
    groups = [rg([], fq("alpha", ("cpu", "0", "0", "0"), ("memory", "0", "0", "0")))]
    got = create.build_cluster_queue(
        "cq1",
        cohort="cohort",
        queueing_strategy="StrictFIFO",
        namespace_selector={"foo": "bar"},
        reclaim_within_cohort="Any",
        preemption_within_cluster_queue="LowerPriority",
        resource_groups=groups,
    )
    assert got == {
        "apiVersion": V1B2,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq1"},
        "spec": {
            "resourceGroups": groups,
            "cohortName": "cohort",
            "queueingStrategy": "StrictFIFO",
            "namespaceSelector": {"matchLabels": {"foo": "bar"}},
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        },
    }


def test_build_local_queue() -> None:
    """upstream TestCreateLocalQueue "success_create"."""
    assert create.build_local_queue("lq1", "ns1", "cq1") == {
        "apiVersion": V1B2,
        "kind": "LocalQueue",
        "metadata": {"name": "lq1", "namespace": "ns1"},
        "spec": {"clusterQueue": "cq1"},
    }


def test_build_resource_flavor() -> None:
    """upstream TestResourceFlavorOptions_createResourceFlavor "success create"."""
    got = create.build_resource_flavor(
        "rf", node_labels={"key1": "value"}, node_taints=[{"key": "key1", "value": "value", "effect": "NoSchedule"}]
    )
    assert got == {
        "apiVersion": V1B2,
        "kind": "ResourceFlavor",
        "metadata": {"name": "rf"},
        "spec": {
            "nodeLabels": {"key1": "value"},
            "nodeTaints": [{"key": "key1", "value": "value", "effect": "NoSchedule"}],
        },
    }


KEY_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param([], [], id="empty spec"),
        pytest.param([""], "invalid taint spec", id="empty spec item"),
        pytest.param(["NoSchedule"], "invalid taint spec: NoSchedule", id="empty key and value"),
        pytest.param(["key=value"], "invalid taint spec: key=value", id="no effect"),
        pytest.param(
            ["key=value:NoSchedule:NoSchedule"],
            "invalid taint spec: key=value:NoSchedule:NoSchedule",
            id="duplicate effect",
        ),
        pytest.param(
            ["key=value=value:NoSchedule"], "invalid taint spec: key=value=value:NoSchedule", id="duplicate values"
        ),
        pytest.param(
            ["key=value:NoSchedule", "key=value:NoSchedule"],
            "duplicated taints with the same key and effect: {key value NoSchedule <nil>}",
            id="duplicate key-effect pair",
        ),
        pytest.param(
            ["=value:NoSchedule"],
            f"invalid taint spec: =value:NoSchedule, name part must be non-empty; {KEY_MSG}",
            id="empty key",
        ),
        pytest.param(["@=value:NoSchedule"], f"invalid taint spec: @=value:NoSchedule, {KEY_MSG}", id="invalid key"),
        pytest.param(["key=@:NoSchedule"], f"invalid taint spec: key=@:NoSchedule, {VALUE_MSG}", id="invalid value"),
        pytest.param(
            ["key=value:Invalid"], "invalid taint effect: Invalid, unsupported taint effect", id="invalid effect"
        ),
    ],
)
def test_parse_taints(spec, want) -> None:
    if isinstance(want, str):
        with pytest.raises(create.CliError) as exc:
            create.parse_taints(spec)
        assert str(exc.value) == want
    else:
        assert create.parse_taints(spec) == want


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param([], [], id="empty spec"),
        pytest.param([""], "invalid toleration spec", id="empty spec item"),
        pytest.param(
            ["key=value:NoSchedule:NoSchedule"],
            "invalid toleration spec: key=value:NoSchedule:NoSchedule",
            id="duplicate effect",
        ),
        pytest.param(
            ["key=value=value:NoSchedule"], "invalid toleration spec: key=value=value:NoSchedule", id="duplicate values"
        ),
        pytest.param(["=value:NoSchedule"], "invalid toleration spec: =value:NoSchedule", id="empty key"),
        pytest.param(
            ["@=value:NoSchedule"], f"invalid toleration spec: @=value:NoSchedule, {KEY_MSG}", id="invalid key"
        ),
        pytest.param(
            ["key=@:NoSchedule"], f"invalid toleration spec: key=@:NoSchedule, {VALUE_MSG}", id="invalid value"
        ),
        pytest.param([":Invalid"], "invalid taint effect: Invalid, unsupported taint effect", id="invalid effect"),
        pytest.param(
            ["key:Invalid"], "invalid taint effect: Invalid, unsupported taint effect", id="invalid effect with key"
        ),
        pytest.param(
            ["key=value:Invalid"],
            "invalid taint effect: Invalid, unsupported taint effect",
            id="invalid effect with key=value",
        ),
        pytest.param(["key"], [{"key": "key", "operator": "Exists"}], id="key"),
        pytest.param([":NoSchedule"], [{"operator": "Exists", "effect": "NoSchedule"}], id="effect"),
        pytest.param(["key=value"], [{"key": "key", "operator": "Equal", "value": "value"}], id="key and value"),
        pytest.param(
            ["key:NoSchedule"], [{"key": "key", "operator": "Exists", "effect": "NoSchedule"}], id="key and effect"
        ),
        pytest.param(
            ["key=value:NoSchedule"],
            [{"key": "key", "operator": "Equal", "value": "value", "effect": "NoSchedule"}],
            id="key, value and effect",
        ),
    ],
)
def test_parse_tolerations(spec, want) -> None:
    if isinstance(want, str):
        with pytest.raises(create.CliError) as exc:
            create.parse_tolerations(spec)
        assert str(exc.value) == want
    else:
        assert create.parse_tolerations(spec) == want


RF_PATH = ("apis/kueue.x-k8s.io/v1beta2", "resourceflavors", "", "rf")


@pytest.mark.parametrize(
    ("args", "spec", "out", "err"),
    [
        pytest.param(
            ["--dry-run", "invalid"],
            None,
            "",
            'Error: invalid dry-run value (invalid). Must be "none", "server", or "client"\n',
            id="shouldn't create resource flavor with invalid dry-run client",
        ),
        pytest.param(
            ["--dry-run", "client"],
            None,
            "resourceflavor.kueue.x-k8s.io/rf created (client dry run)\n",
            "",
            id="shouldn't create resource flavor with dry-run client",
        ),
        pytest.param([], {}, "resourceflavor.kueue.x-k8s.io/rf created\n", "", id="should create resource flavor"),
        pytest.param(
            ["--node-labels", "kubernetes.io/arch=arm64,kubernetes.io/os=linux"],
            {"nodeLabels": {"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"}},
            "resourceflavor.kueue.x-k8s.io/rf created\n",
            "",
            id="should create resource flavor with node labels",
        ),
        pytest.param(
            [
                "--node-taints",
                "key1=value:NoSchedule,key1=value:PreferNoSchedule,key2=value:NoSchedule,key3=value:NoSchedule",
            ],
            {
                "nodeTaints": [
                    {"key": "key1", "value": "value", "effect": "NoSchedule"},
                    {"key": "key1", "value": "value", "effect": "PreferNoSchedule"},
                    {"key": "key2", "value": "value", "effect": "NoSchedule"},
                    {"key": "key3", "value": "value", "effect": "NoSchedule"},
                ]
            },
            "resourceflavor.kueue.x-k8s.io/rf created\n",
            "",
            id="should create resource flavor with node taints",
        ),
        pytest.param(
            ["--node-taints", "key1=value:Invalid"],
            None,
            "",
            "Error: invalid taint effect: Invalid, unsupported taint effect\n",
            id="shouldn't create resource flavor with invalid taint",
        ),
        pytest.param(
            ["--tolerations", "key1=value:NoSchedule,key2:NoSchedule"],
            {
                "tolerations": [
                    {"key": "key1", "operator": "Equal", "value": "value", "effect": "NoSchedule"},
                    {"key": "key2", "operator": "Exists", "effect": "NoSchedule"},
                ]
            },
            "resourceflavor.kueue.x-k8s.io/rf created\n",
            "",
            id="should create resource flavor with toleration",
        ),
        pytest.param(
            ["--tolerations", "key1=value:Invalid"],
            None,
            "",
            "Error: invalid taint effect: Invalid, unsupported taint effect\n",
            id="shouldn't create resource flavor with invalid toleration",
        ),
    ],
)
def test_create_resource_flavor_command(run, args, spec, out, err) -> None:
    api = FakeApi()
    got = run(api, "create", "resourceflavor", "rf", *args)
    assert (got.out, got.err, got.code) == (out, err, 1 if err else 0)
    stored = api.store.get(RF_PATH)
    assert (stored or {}).get("spec") == spec


def test_create_local_queue_checks_the_cluster_queue(run) -> None:
    got = run(FakeApi(), "create", "localqueue", "lq", "-c", "missing", "-n", "team")
    assert (got.code, got.err) == (1, 'Error: clusterqueues.kueue.x-k8s.io "missing" not found\n')
    api = FakeApi()
    got = run(api, "create", "lq", "lq", "-c", "missing", "-i", "--namespace", "team")
    assert (got.code, got.out) == (0, "localqueue.kueue.x-k8s.io/lq created\n")
    assert api.get("apis/kueue.x-k8s.io/v1beta2", "localqueues", "team", "lq")["spec"] == {"clusterQueue": "missing"}


def test_create_local_queue_needs_a_cluster_queue(run) -> None:
    got = run(FakeApi(), "create", "lq", "lq")
    assert (got.code, got.err) == (1, 'Error: required flag(s) "clusterqueue" not set\n')


def test_create_cluster_queue_server_dry_run_writes_nothing(run) -> None:
    api = FakeApi()
    got = run(
        api,
        "create",
        "cq",
        "cq1",
        "--cohort",
        "all",
        "--nominal-quota",
        "default:cpu=2;memory=4Gi",
        "--namespace-selector",
        "team=a",
        "--dry-run",
        "server",
    )
    assert (got.code, got.out) == (0, "clusterqueue.kueue.x-k8s.io/cq1 created (server dry run)\n")
    assert api.store == {}
    assert api.calls[-1] == ("POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", {"dryRun": "All"})


def test_usage_errors_are_one_line(run) -> None:
    got = run(FakeApi(), "create", "lq")
    assert (got.code, got.err) == (1, "Error: Missing argument 'NAME'.\n")
