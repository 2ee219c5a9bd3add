"""webhook.config.support: what is refused at start, in one message, and what is accepted without effect."""

from __future__ import annotations

import dataclasses
import pathlib
import re
import types
import typing

import pytest

from webhook import config
from webhook.api import integrations
from webhook.config import ConfigError, Configuration, Feature, support
from webhook.config import types as config_types

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


@pytest.fixture(autouse=True)
def _no_service_account(monkeypatch, tmp_path):
    monkeypatch.setattr(config_types, "_SERVICE_ACCOUNT_NAMESPACE_FILE", str(tmp_path / "absent"))


def refusal_of(text: str) -> str:
    cfg = config.parse(V2 + text)
    with pytest.raises(ConfigError) as info:
        config.check_implemented(cfg)
    return str(info.value)


@pytest.mark.parametrize(
    ("stanza", "message"),
    [
        pytest.param("leaderElection: {resourceLock: configmapsleases}\n",
                     'leaderElection.resourceLock: only "leases" is supported (as in client-go, which removed the '
                     "other locks)", id="resource lock"),
        pytest.param("pprofBindAddress: :8083\n",
                     "pprofBindAddress: pprof is Go's profiler and has no equivalent here (attach py-spy to the "
                     "process instead)", id="pprof"),
        pytest.param("controller: {cacheSyncTimeout: 300000000000}\n",
                     "controller.cacheSyncTimeout: the worker waits for its initial lists without a deadline, "
                     "retrying them", id="cache sync timeout"),
        pytest.param("featureGates: {PrioritizePreemptorWorkloads: true}\n",
                     "featureGates.PrioritizePreemptorWorkloads: true is not implemented: the scheduler does not "
                     "order preempting workloads first", id="unimplemented gate on"),
        pytest.param("featureGates: {PriorityBoost: true}\n",
                     "featureGates.PriorityBoost: true is not implemented: the kueue.x-k8s.io/priority-boost "
                     "annotation is validated but never added to a workload's priority", id="priority boost"),
        pytest.param("featureGates: {FlavorFungibility: false}\n",
                     "featureGates.FlavorFungibility: false is not implemented: a ClusterQueue's flavorFungibility "
                     "is always honoured", id="always-on gate off"),
    ],
)  # fmt: skip
def test_each_unimplemented_option_is_refused_at_start(stanza, message):
    assert refusal_of(stanza) == f"not implemented by pykueue: {message}"


@pytest.mark.parametrize(
    "gate",
    [pytest.param(g, id=str(g)) for g in support.UNIMPLEMENTED_GATES if not config.FEATURE_GATE_DEFAULTS[g]
     and g not in config_types.LOCKED_FEATURE_GATES],
)  # fmt: skip
def test_turning_on_an_unimplemented_gate_is_refused(gate):
    gates = {str(gate): "true"}
    # Satisfy upstream's dependency checks so the refusal, not a validation error, is what stops the start.
    if gate is Feature.UNADMITTED_WORKLOADS_EXPLICIT_STATUS:
        gates[Feature.UNADMITTED_WORKLOADS_OBSERVABILITY] = "true"
    if gate is Feature.TAS_REPLACE_NODE_DUE_TO_NOT_READY_OVER_FIXED_TIME:
        gates[Feature.TAS_FAILED_NODE_REPLACEMENT] = "true"
    text = "featureGates: {" + ", ".join(f"{k}: {v}" for k, v in gates.items()) + "}\n"
    assert f"featureGates.{gate}: true is not implemented: {support.UNIMPLEMENTED_GATES[gate]}" in refusal_of(text)


@pytest.mark.parametrize("gate", [pytest.param(g, id=str(g)) for g in support.ALWAYS_ON_GATES])
def test_turning_off_a_hard_wired_gate_is_refused(gate):
    assert f"featureGates.{gate}: false is not implemented" in refusal_of(f"featureGates: {{{gate}: false}}\n")


def test_turning_off_an_unimplemented_feature_is_accepted():
    """Off is what pykueue does: MultiKueue and the integration-only gates may be set false."""
    cfg = config.parse(V2 + "featureGates: {MultiKueue: false, LWSImmutableGroupSize: false, PriorityBoost: false}\n")
    config.check_implemented(cfg)


# Every framework upstream v0.19.2 registers is implemented: one it might add later stands in.
UNIMPLEMENTED = integrations.Framework("example.com/widget", "example.com", "v1", "Widget", "widgets", multikueue=False)


def test_one_message_names_every_refusal_frameworks_first():
    with integrations.registered(UNIMPLEMENTED):
        message = refusal_of(
            "integrations: {frameworks: [batch/job, example.com/widget]}\npprofBindAddress: :8083\n"
            "featureGates: {PrioritizePreemptorWorkloads: true, FlavorFungibility: false}\n"
        )
        # The implemented names follow the registry's rows (each integration adds itself there).
        implemented = ", ".join(f'"{name}"' for name in config.implemented_frameworks())
    assert {"batch/job", "deployment", "pod", "statefulset"} <= set(config.implemented_frameworks())
    assert message == (
        'not implemented by pykueue: integrations.frameworks: "example.com/widget" is not '
        "implemented by pykueue; its "
        f"workloads would run outside every quota (implemented: {implemented}); "
        "pprofBindAddress: pprof is Go's profiler and has no equivalent here (attach py-spy to the process instead); "
        "featureGates.FlavorFungibility: false is not implemented: a ClusterQueue's flavorFungibility is always "
        "honoured; featureGates.PrioritizePreemptorWorkloads: true is not implemented: the scheduler does not order "
        "preempting workloads first"
    )


def test_spark_application_needs_its_alpha_gate():
    """`CanSupportIntegration`: upstream's manager does not start with the framework and its gate off."""
    frameworks = "integrations: {frameworks: [batch/job, sparkoperator.k8s.io/sparkapplication]}\n"
    assert refusal_of(frameworks) == (
        "failed to configure reconcilers: sparkoperator.k8s.io/sparkapplication integration is alpha feature. "
        "please enable SparkApplicationIntegration featuregate"
    )
    config.check_implemented(config.parse(V2 + frameworks + "featureGates: {SparkApplicationIntegration: true}\n"))
    config.check_implemented(config.parse(V2 + "featureGates: {SparkApplicationIntegration: true}\n"))


UPSTREAM_SHIPPED = """\
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks: [batch/job, pod, deployment, statefulset, jobset.x-k8s.io/jobset]
"""


def test_upstream_shipped_configuration_starts_with_group_kind_concurrency_noted():
    """config/components/manager/controller_manager_config.yaml (its implemented frameworks): accepted,
    and the tuning that changes nothing here is said at start rather than refused."""
    cfg = config.parse(V2 + UPSTREAM_SHIPPED)
    config.check_implemented(cfg)
    assert support.accepted_without_effect(cfg) == [
        "controller.groupKindConcurrency: not read; each reconciler runs a fixed number of worker threads "
        "(events of one object in order)"
    ]


def test_internal_gates_are_accepted_and_noted():
    cfg = config.parse(V2 + "featureGates: {WorkloadRequestUseMergePatch: true, VectorizedResourceRequests: false}\n")
    config.check_implemented(cfg)
    assert support.accepted_without_effect(cfg) == [
        "featureGates.VectorizedResourceRequests: a data layout inside upstream's TAS code",
        "featureGates.WorkloadRequestUseMergePatch: how upstream sends a Workload write; ours are merge patches",
    ]


def test_the_gate_lists_do_not_overlap():
    groups = (set(support.UNIMPLEMENTED_GATES), set(support.ALWAYS_ON_GATES), set(support.NO_EFFECT_GATES))
    assert sum(len(g) for g in groups) == len(set().union(*groups))


# --- the README's "Configuration support" table ---------------------------------------------------------

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _camel(name: str) -> str:
    """A dataclass field's upstream JSON name: `lease_duration_s` → `leaseDuration`."""
    head, *rest = name.removesuffix("_s").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _nested(tp: object) -> tuple[type | None, str]:
    """The dataclass inside a field's type (`X`, `X | None`, `tuple[X, ...]`) and the path suffix."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _nested(args[0]) if len(args) == 1 else (None, "")
    if origin is tuple:
        arg = typing.get_args(tp)[0]
        return (arg, "[]") if dataclasses.is_dataclass(arg) else (None, "")
    return (tp, "") if isinstance(tp, type) and dataclasses.is_dataclass(tp) else (None, "")


def configuration_leaves(cls: type = Configuration, prefix: str = "") -> list[str]:
    """Every leaf field of the Configuration dataclasses, as upstream's v1beta2 path."""
    hints = typing.get_type_hints(cls, vars(config_types))
    out = []
    for f in dataclasses.fields(cls):
        path = prefix + _camel(f.name)
        sub, suffix = _nested(hints[f.name])
        out.extend(configuration_leaves(sub, path + suffix + ".") if sub is not None else [path])
    return out


def readme_rows() -> dict[str, list[str]]:
    """First cell (without backticks) → the other cells, for every row of the section's tables."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Configuration support\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_readme_table_names_every_configuration_field_and_gate():
    rows = readme_rows()
    for leaf in configuration_leaves():
        # A raw-kept field (e.g. `multiKueue.clusterProfile`) may be listed by upstream's finer leaves.
        assert any(p == leaf or p.startswith((f"{leaf}.", f"{leaf}[].")) for p in rows), f"README lacks {leaf}"
    missing = [g.value for g in Feature if g.value not in rows]
    assert not missing, f"README lacks gates {missing}"


def test_readme_table_agrees_with_the_refusal_lists():
    rows = readme_rows()
    for gate in support.UNIMPLEMENTED_GATES:
        if not config.FEATURE_GATE_DEFAULTS[gate] and gate not in config_types.LOCKED_FEATURE_GATES:
            assert "refused `true`" in rows[gate.value][1], gate
    for gate in support.ALWAYS_ON_GATES:
        assert "refused `false`" in rows[gate.value][1], gate
    for gate in support.NO_EFFECT_GATES:
        assert "no effect" in rows[gate.value][1], gate
    for path, _, _ in support.FIELD_REFUSALS:
        assert all("refused" in cells[0] for p, cells in rows.items() if p == path or p.startswith(f"{path}."))
    assert "no effect" in rows["controller.groupKindConcurrency"][0]


def test_readme_table_cites_tests_that_exist():
    cited = re.findall(r"`((?:tests|e2e)/[\w/]+\.py)(?:::(\w+))?`", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert cited
    for path, name in cited:
        source = ROOT / path
        assert source.is_file(), path
        if name:
            assert re.search(rf"^\s*(async )?def {name}\(", source.read_text(encoding="utf-8"), re.M), f"{path}::{name}"


# --- the README's "Object fields" table --------------------------------------------------------------

OBJECT_KINDS = ("Workload", "ClusterQueue", "LocalQueue", "Cohort", "ResourceFlavor", "WorkloadPriorityClass",
                "AdmissionCheck")  # fmt: skip


def _schema_leaves(schema: dict[str, typing.Any], path: str) -> list[str]:
    """The leaf paths under `schema`; a podSet's pod template counts as one leaf."""
    if path.endswith("podSets[].template"):
        return [path]
    items = schema.get("items") or {}
    if schema.get("type") == "object" and schema.get("properties"):
        return [leaf for k, v in schema["properties"].items() for leaf in _schema_leaves(v, f"{path}.{k}")]
    if schema.get("type") == "array" and items.get("type") == "object" and items.get("properties"):
        return _schema_leaves(items, path + "[]")
    return [path]


def object_spec_leaves() -> list[str]:
    """`Kind spec.path` of every v1beta2 spec leaf of the queueing objects, from the CRDs we install."""
    from webhook.api import schema

    out = []
    for crd in schema.crds():
        kind = crd["spec"]["names"]["kind"]
        if kind not in OBJECT_KINDS:
            continue
        (version,) = (v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
        props = version["schema"]["openAPIV3Schema"]["properties"]
        tops = {"spec": props["spec"]} if "spec" in props else {
            k: v for k, v in props.items() if k not in ("apiVersion", "kind", "metadata", "status")}  # fmt: skip
        out += [f"{kind} {leaf}" for top, sub in tops.items() for leaf in _schema_leaves(sub, top)]
    return out


def object_field_rows() -> list[str]:
    """The `Kind path` names in the first cell of each "Object fields" row (parenthesised leaves aside)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("\n### Object fields\n", 1)[1].split("\n## ", 1)[0]
    kinds = "|".join(OBJECT_KINDS)
    return [
        name
        for line in table.splitlines()
        if line.startswith("| `")
        for name in re.findall(rf"`((?:{kinds}) [^`]+)`", line.split(" | ")[0])
    ]


def test_readme_object_fields_table_names_every_spec_leaf() -> None:
    rows = object_field_rows()
    assert len(object_spec_leaves()) > 60
    missing = [
        leaf for leaf in object_spec_leaves()
        if not any(leaf == r or leaf.startswith((f"{r}.", f"{r}[]")) for r in rows)
    ]  # fmt: skip
    assert not missing, f"README's Object fields table lacks {missing}"


def test_what_our_multikueue_check_implements_is_accepted():
    """The MultiKueue admission check reads origin, workerLostTimeout and gcInterval
    (webhook/worker/reconcilers/multikueue.py)."""
    cfg = config.parse(
        V2 + "multiKueue: {origin: team-a, workerLostTimeout: 5m, gcInterval: 2m, "
        "dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental, incrementalDispatcherConfig: {stepSize: 2}}\n"
        "featureGates: {MultiKueue: true}\n"
    )
    assert support.refusals(cfg) == []
