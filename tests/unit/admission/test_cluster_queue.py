"""ClusterQueue webhook: scenarios of upstream's pkg/webhooks/clusterqueue_webhook_test.go, exact messages."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.admission import cluster_queue
from webhook.admission.context import Context, StaticLookups
from webhook.api.fields import aggregate
from webhook.config import Configuration

from .reviews import crd_defaulted, crd_denial

NAME_PART_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
RG0 = "spec.resourceGroups[0]"
Q0 = f"{RG0}.flavors[0].resources[0]"


def ctx(**gates: bool) -> Context:
    return Context(config=Configuration(feature_gates=gates), lookups=StaticLookups())


def flavor(name: str, *resources: tuple[Any, ...]) -> dict[str, Any]:
    """resources: (name, nominal[, borrowingLimit[, lendingLimit]]); "" leaves a limit unset."""
    out = []
    for res in resources:
        quota: dict[str, Any] = {"name": res[0], "nominalQuota": res[1] if len(res) > 1 else "0"}
        if len(res) > 2 and res[2] != "":
            quota["borrowingLimit"] = res[2]
        if len(res) > 3 and res[3] != "":
            quota["lendingLimit"] = res[3]
        out.append(quota)
    return {"name": name, "resources": out}


def group(*flavors: dict[str, Any], covered: list[str] | None = None) -> dict[str, Any]:
    if covered is None:
        covered = [r["name"] for r in flavors[0]["resources"]] if flavors else []
    return {"coveredResources": covered, "flavors": list(flavors)}


def cq(*groups: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", **spec}
    if groups:
        body["resourceGroups"] = list(groups)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": body,
    }


def many_flavors(n: int) -> list[dict[str, Any]]:
    return [flavor(f"f{i:03d}", ("cpu", "1")) for i in range(n)]


def covered_resources(n: int) -> dict[str, Any]:
    names = [f"res{i:03d}" for i in range(n)]
    return group(flavor("default", *[(r, "1") for r in names]), covered=names)


def combinations(flavors: int, resources: int) -> dict[str, Any]:
    names = [f"res{j:03d}" for j in range(resources)]
    return group(*[flavor(f"f{i:03d}", *[(r, "1") for r in names]) for i in range(flavors)], covered=names)


CREATE_CASES = [
    pytest.param(cq(group(flavor("default", ("cpu", "0")))), {}, "", id="built-in resources with qualified names"),
    pytest.param(
        cq(group(flavor("default", ("@cpu", "0")))),
        {},
        f'{RG0}.coveredResources[0]: Invalid value: "@cpu": {NAME_PART_REGEX}',
        id="invalid resource name",
    ),
    pytest.param(
        cq(admissionChecksStrategy={"admissionChecks": [{"name": "ac1"}]}),
        {},
        "",
        id="admissionChecks defined",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1")),
            admissionChecksStrategy={"admissionChecks": [{"name": "ac1", "onFlavors": ["flavor1"]}]},
        ),
        {},
        "",
        id="admissionCheckStrategy defined with a valid flavor",
    ),
    pytest.param(
        cq(admissionChecksStrategy={"admissionChecks": [{"name": "ac1", "onFlavors": ["flavor1"]}]}),
        {},
        'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "flavor1"',
        id="admissionCheckStrategy refers to a flavor that is not in quota",
    ),
    pytest.param(cq(cohortName="prod"), {}, "", id="in cohort"),
    pytest.param(
        cq(group(flavor("default", ("example.com/gpu", "0")))),
        {},
        "",
        id="extended resources with qualified names",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "-1")))),
        {},
        f'{Q0}.nominalQuota: Invalid value: "-1": must be greater than or equal to 0',
        id="flavor quota with negative value",
    ),
    pytest.param(cq(group(flavor("x86", ("cpu", "0")))), {}, "", id="flavor quota with zero value"),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "0"))), cohortName="cohort"),
        {},
        "",
        id="flavor quota with borrowingLimit 0",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "-1"))), cohortName="cohort"),
        {},
        f'{Q0}.borrowingLimit: Invalid value: "-1": must be greater than or equal to 0',
        id="flavor quota with negative borrowingLimit",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "", "0"))), cohortName="cohort"),
        {},
        "",
        id="flavor quota with lendingLimit 0",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "", "-1"))), cohortName="cohort"),
        {},
        f'{Q0}.lendingLimit: Invalid value: "-1": must be greater than or equal to 0',
        id="flavor quota with negative lendingLimit",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "", "1")))),
        {},
        f'{Q0}.lendingLimit: Invalid value: "1": must be nil when cohort is empty',
        id="flavor quota with lendingLimit and empty cohort",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "2")))),
        {},
        f'{Q0}.borrowingLimit: Invalid value: "2": must be nil when cohort is empty',
        id="flavor quota with borrowingLimit and empty cohort",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "", "2"))), cohortName="cohort"),
        {},
        f'{Q0}.lendingLimit: Invalid value: "2": must be less than or equal to the nominalQuota',
        id="flavor quota with lendingLimit greater than nominalQuota",
    ),
    pytest.param(
        cq(group(flavor("x86", ("cpu", "1", "-1", "-2")))),
        {},
        f'[{Q0}.borrowingLimit: Invalid value: "-1": must be nil when cohort is empty, '
        f'{Q0}.borrowingLimit: Invalid value: "-1": must be greater than or equal to 0, '
        f'{Q0}.lendingLimit: Invalid value: "-2": must be greater than or equal to 0, '
        f'{Q0}.lendingLimit: Invalid value: "-2": must be nil when cohort is empty]',
        id="limit errors come in upstream order: borrowing (cohort, sign), lending (sign, cohort, nominal)",
    ),
    pytest.param(
        cq(group(flavor("x86", ("memory", "1Gi", "", "1.5Gi"))), cohortName="cohort"),
        {},
        f'{Q0}.lendingLimit: Invalid value: "1536Mi": must be less than or equal to the nominalQuota',
        id="quantities are printed in canonical form",
    ),
    pytest.param(cq(queueingStrategy=""), {}, "", id="empty queueing strategy is supported"),
    pytest.param(
        cq(namespaceSelector={"matchLabels": {"nospecialchars^=@": "bar"}}),
        {},
        f'spec.namespaceSelector.matchLabels: Invalid value: "nospecialchars^=@": {NAME_PART_REGEX}',
        id="namespaceSelector with invalid labels",
    ),
    pytest.param(
        cq(namespaceSelector={"matchExpressions": [{"key": "key", "operator": "In"}]}),
        {},
        "spec.namespaceSelector.matchExpressions[0].values: Required value: "
        "must be specified when `operator` is 'In' or 'NotIn'",
        id="namespaceSelector with invalid expressions",
    ),
    pytest.param(
        cq(namespaceSelector={"matchExpressions": [{"key": "key", "operator": "Equals", "values": ["a b"]}]}),
        {},
        '[spec.namespaceSelector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator, '
        'spec.namespaceSelector.matchExpressions[0].values[0]: Invalid value: "a b": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]",
        id="namespaceSelector with unknown operator and bad value",
    ),
    pytest.param(
        cq(
            group(flavor("alpha", ("cpu", "0"), ("memory", "0")), flavor("beta", ("cpu", "0"), ("memory", "0"))),
            group(flavor("gamma", ("example.com/gpu", "0")), flavor("omega", ("example.com/gpu", "0"))),
        ),
        {},
        "",
        id="multiple resource groups",
    ),
    pytest.param(
        cq(
            group(
                flavor("alpha", ("cpu", "0"), ("memory", "0")),
                flavor("beta", ("memory", "0"), ("cpu", "0")),
                covered=["cpu", "memory"],
            )
        ),
        {},
        f'[{RG0}.flavors[1].resources[0].name: Invalid value: "memory": must match the name in coveredResources, '
        f'{RG0}.flavors[1].resources[1].name: Invalid value: "cpu": must match the name in coveredResources]',
        id="resources in a flavor in different order",
    ),
    pytest.param(
        cq(group(flavor("alpha", ("cpu", "0"), ("memory", "0"))), group(flavor("beta", ("memory", "0")))),
        {},
        'spec.resourceGroups[1].coveredResources[0]: Duplicate value: "memory"',
        id="resource in more than one resource group",
    ),
    pytest.param(
        cq(
            group(flavor("alpha", ("cpu", "0")), flavor("beta", ("cpu", "0"))),
            group(flavor("beta", ("memory", "0"))),
        ),
        {},
        'spec.resourceGroups[1].flavors[0].name: Duplicate value: "beta"',
        id="flavor in more than one resource group",
    ),
    pytest.param(
        cq(
            preemption={
                "reclaimWithinCohort": "LowerPriority",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10},
            }
        ),
        {},
        "",
        id="valid preemption with borrowWithinCohort",
    ),
    pytest.param(
        cq(preemption={"reclaimWithinCohort": "Never"}),
        {},
        "",
        id="existing cluster queue created with older Kueue version that has a nil borrowWithinCohort field",
    ),
    pytest.param(
        cq(
            preemption={
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": "Never",
                "borrowWithinCohort": {"policy": "LowerPriority"},
            }
        ),
        {},
        'spec.preemption: Invalid value: {"reclaimWithinCohort":"Never","borrowWithinCohort":{"policy":"LowerPriority"},'
        '"withinClusterQueue":"LowerPriority"}: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never',
        id="borrowWithinCohort without reclaimWithinCohort",
    ),
    pytest.param(
        cq(
            flavorFungibility={
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "MayStopSearch",
                "preference": "BorrowingOverPreemption",
            }
        ),
        {},
        'spec.flavorFungibility.preference: Invalid value: "BorrowingOverPreemption": preference '
        '"BorrowingOverPreemption" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
        id="flavorFungibility preference set but whenCanPreempt != TryNextFlavor",
    ),
    pytest.param(
        cq(
            flavorFungibility={
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "MayStopSearch",
                "preference": "BorrowingOverPreemption",
            }
        ),
        {},
        'spec.flavorFungibility.preference: Invalid value: "BorrowingOverPreemption": preference '
        '"BorrowingOverPreemption" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
        id="flavorFungibility preference set but whenCanBorrow != TryNextFlavor",
    ),
    pytest.param(
        cq(
            flavorFungibility={
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "BorrowingOverPreemption",
            }
        ),
        {},
        "",
        id="flavorFungibility preference BorrowingOverPreemption with both TryNextFlavor is valid",
    ),
    pytest.param(
        cq(
            flavorFungibility={
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "PreemptionOverBorrowing",
            }
        ),
        {},
        "",
        id="flavorFungibility preference PreemptionOverBorrowing with both TryNextFlavor is valid",
    ),
    pytest.param(
        cq(
            flavorFungibility={
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "PreemptionOverBorrowing",
            }
        ),
        {},
        'spec.flavorFungibility.preference: Invalid value: "PreemptionOverBorrowing": preference '
        '"PreemptionOverBorrowing" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
        id="flavorFungibility preference PreemptionOverBorrowing but whenCanBorrow != TryNextFlavor",
    ),
    pytest.param(
        cq(fairSharing={"weight": "-1"}),
        {},
        'spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0',
        id="negative fair sharing weight",
    ),
    pytest.param(
        cq(fairSharing={"weight": "0.0000000001"}),
        {},
        'spec.fairSharing: Invalid value: "1n": When not 0, weight must be > 10e-9',
        id="fair sharing weight that collapses to zero",
    ),
    pytest.param(cq(fairSharing={"weight": "0"}), {}, "", id="zero fair sharing weight"),
    pytest.param(cq(group(*many_flavors(10))), {}, "", id="within limit (10 flavors)"),
    pytest.param(cq(group(*many_flavors(256))), {}, "", id="at limit (256 flavors)"),
    pytest.param(
        cq(group(*many_flavors(257))),
        {},
        "spec.resourceGroups: Invalid value: 257: total number of flavors across all resourceGroups must be ≤ 256, got 257",
        id="over limit (257 flavors)",
    ),
    pytest.param(cq(covered_resources(256)), {}, "", id="at limit (256 covered resources)"),
    pytest.param(
        cq(covered_resources(257)),
        {},
        "spec.resourceGroups: Invalid value: 257: total number of covered resources across all resourceGroups "
        "must be ≤ 256, got 257",
        id="over limit (257 covered resources)",
    ),
    pytest.param(cq(combinations(8, 64)), {}, "", id="at limit (8 flavors x 64 resources = 512)"),
    pytest.param(
        cq(combinations(9, 64)),
        {},
        "spec.resourceGroups[0]: Invalid value: 576: number of flavor-resource combinations in a resourceGroup "
        "must be ≤ 512, got 576",
        id="over limit (9 flavors x 64 resources = 576)",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1", ("cpu", "1"))),
            concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}},
        ),
        {"ConcurrentAdmission": True},
        "",
        id="valid ConcurrentAdmissionPolicy",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1", ("cpu", "1"))),
            queueingStrategy="StrictFIFO",
            concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}},
        ),
        {"ConcurrentAdmission": True},
        'spec.queueingStrategy: Invalid value: "StrictFIFO": '
        "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined",
        id="ConcurrentAdmissionPolicy with StrictFIFO queueing strategy is invalid",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1", ("cpu", "1"))),
            group(flavor("flavor2", ("memory", "1"))),
            concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}},
        ),
        {"ConcurrentAdmission": True},
        "spec.resourceGroups: Invalid value: 2: must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
        id="ConcurrentAdmissionPolicy with more than one ResourceGroup",
    ),
    pytest.param(
        cq(group(*many_flavors(17)), concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}}),
        {"ConcurrentAdmission": True},
        "spec.resourceGroups[0].flavors: Invalid value: 17: cannot have more than 16 resource flavors in the "
        "ResourceGroup when ConcurrentAdmissionPolicy is defined",
        id="ConcurrentAdmissionPolicy with more than 16 flavors",
    ),
    pytest.param(
        cq(concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}}),
        {"ConcurrentAdmission": True},
        "spec.resourceGroups: Invalid value: 0: must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
        id="ConcurrentAdmissionPolicy with empty ResourceGroups",
    ),
    pytest.param(
        cq(concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}}),
        {},
        "",
        id="ConcurrentAdmissionPolicy is not checked while the gate is off",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1", ("cpu", "1"))),
            concurrentAdmissionPolicy={"migration": {"constraints": {"lastAcceptableFlavorName": "flavor1"}}},
        ),
        {"ConcurrentAdmission": True},
        "",
        id="ConcurrentAdmissionPolicy with valid LastAcceptableFlavorName",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1", ("cpu", "1"))),
            concurrentAdmissionPolicy={
                "migration": {
                    "mode": "RetainFirstAdmission",
                    "constraints": {"lastAcceptableFlavorName": "flavor1"},
                }
            },
        ),
        {"ConcurrentAdmission": True},
        "spec.concurrentAdmissionPolicy.migration.constraints: Forbidden: "
        'may only be set when migration.mode is "TryPreferredFlavors" (got "RetainFirstAdmission")',
        id="ConcurrentAdmissionPolicy constraints with RetainFirstAdmission mode is forbidden",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1", ("cpu", "1"))),
            concurrentAdmissionPolicy={
                "migration": {"mode": "", "constraints": {"lastAcceptableFlavorName": "flavor1"}}
            },
        ),
        {"ConcurrentAdmission": True},
        "",
        id="ConcurrentAdmissionPolicy constraints with empty migration mode is allowed",
    ),
    pytest.param(
        cq(
            group(flavor("flavor1", ("cpu", "1"))),
            concurrentAdmissionPolicy={
                "migration": {"constraints": {"lastAcceptableFlavorName": "non-existent-flavor"}}
            },
        ),
        {"ConcurrentAdmission": True},
        "spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: Invalid value: "
        '"non-existent-flavor": must be one of the flavors defined in the ClusterQueue: [flavor1]',
        id="ConcurrentAdmissionPolicy with invalid LastAcceptableFlavorName",
    ),
]


@pytest.mark.parametrize(("obj", "gates", "want"), CREATE_CASES)
def test_validate_create(obj: dict[str, Any], gates: dict[str, bool], want: str) -> None:
    errors = cluster_queue.validate_create(obj, ctx(**gates))
    assert (aggregate(errors) if errors else "") == want


@pytest.mark.parametrize(("obj", "gates", "want"), CREATE_CASES)
def test_validate_create_through_the_app(obj: dict[str, Any], gates: dict[str, bool], want: str) -> None:
    assert crd_denial("ClusterQueue", obj, gates=gates) == want


def strategy(check: str, *flavors: str) -> dict[str, Any]:
    return {"admissionChecks": [{"name": check, "onFlavors": list(flavors)}]}


ALPHA = group(flavor("alpha", ("cpu", "1")))
GHOST = 'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "{}": supported values: "{}"'

UPDATE_CASES = [
    pytest.param(
        cq(queueingStrategy="StrictFIFO"),
        cq(queueingStrategy="BestEffortFIFO"),
        {},
        "",
        id="queueingStrategy can be updated",
    ),
    pytest.param(cq(), cq(), {}, "", id="same queueingStrategy"),
    pytest.param(
        cq(ALPHA, queueingStrategy="StrictFIFO", admissionChecksStrategy=strategy("ac1", "ghost")),
        cq(ALPHA, queueingStrategy="BestEffortFIFO", admissionChecksStrategy=strategy("ac1", "ghost")),
        {"RejectUpdatesToCQWithInvalidOnFlavors": False},
        "",
        id="legacy cluster queue with invalid onFlavors allows unrelated updates when the feature gate is disabled",
    ),
    pytest.param(
        cq(ALPHA, queueingStrategy="StrictFIFO", admissionChecksStrategy=strategy("ac1", "ghost")),
        cq(ALPHA, queueingStrategy="BestEffortFIFO", admissionChecksStrategy=strategy("ac1", "ghost")),
        {"RejectUpdatesToCQWithInvalidOnFlavors": True},
        GHOST.format("ghost", "alpha"),
        id="legacy cluster queue with invalid onFlavors rejects unrelated updates when the feature gate is enabled",
    ),
    pytest.param(
        cq(ALPHA),
        cq(ALPHA, admissionChecksStrategy=strategy("ac1", "alpha")),
        {},
        "",
        id="valid admissionCheckStrategy can be added when the old cluster queue has no strategy",
    ),
    pytest.param(
        cq(ALPHA),
        cq(ALPHA, admissionChecksStrategy=strategy("ac1", "ghost")),
        {},
        GHOST.format("ghost", "alpha"),
        id="invalid admissionCheckStrategy is rejected when the old cluster queue has no strategy",
    ),
    pytest.param(
        cq(ALPHA, admissionChecksStrategy=strategy("ac1", "ghost")),
        cq(group(flavor("beta", ("cpu", "1"))), admissionChecksStrategy=strategy("ac1", "ghost")),
        {},
        GHOST.format("ghost", "beta"),
        id="resourceGroup flavor change revalidates admissionCheck onFlavors for legacy cluster queue",
    ),
    pytest.param(
        cq(ALPHA, admissionChecksStrategy=strategy("ac1", "ghost")),
        cq(ALPHA, admissionChecksStrategy=strategy("ac1", "phantom")),
        {},
        GHOST.format("phantom", "alpha"),
        id="changing invalid onFlavors for a legacy cluster queue revalidates the new ref",
    ),
    pytest.param(
        cq(ALPHA, admissionChecksStrategy=strategy("ac1", "ghost")),
        cq(ALPHA, admissionChecksStrategy=strategy("ac2", "ghost")),
        {},
        GHOST.format("ghost", "alpha"),
        id="changing admissionCheck name revalidates onFlavors for the new rule",
    ),
    pytest.param(
        cq(ALPHA),
        cq(ALPHA, concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}}),
        {"ConcurrentAdmission": True},
        'spec.concurrentAdmissionPolicy: Invalid value: {"migration":{"mode":"TryPreferredFlavors"}}: field is immutable',
        id="ConcurrentAdmissionPolicy cannot be added",
    ),
    pytest.param(
        cq(ALPHA, concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}}),
        cq(ALPHA),
        {"ConcurrentAdmission": True},
        "spec.concurrentAdmissionPolicy: Invalid value: null: field is immutable",
        id="ConcurrentAdmissionPolicy cannot be removed",
    ),
    pytest.param(
        cq(ALPHA, cohortName="a"),
        cq(group(flavor("alpha", ("cpu", "1", "2"))), cohortName=""),
        {},
        f'{Q0}.borrowingLimit: Invalid value: "2": must be nil when cohort is empty',
        id="update validates the new spec",
    ),
]


@pytest.mark.parametrize(("old", "new", "gates", "want"), UPDATE_CASES)
def test_validate_update(old: dict[str, Any], new: dict[str, Any], gates: dict[str, bool], want: str) -> None:
    errors = cluster_queue.validate_update(old, new, ctx(**gates))
    assert (aggregate(errors) if errors else "") == want


@pytest.mark.parametrize(("old", "new", "gates", "want"), UPDATE_CASES)
def test_validate_update_through_the_app(
    old: dict[str, Any], new: dict[str, Any], gates: dict[str, bool], want: str
) -> None:
    assert crd_denial("ClusterQueue", new, old=old, gates=gates) == want


@pytest.mark.parametrize(
    ("metadata", "want"),
    [
        pytest.param({"name": "cq"}, ["kueue.x-k8s.io/resource-in-use"], id="adds the finalizer"),
        pytest.param(
            {"name": "cq", "finalizers": ["example.com/x"]},
            ["example.com/x", "kueue.x-k8s.io/resource-in-use"],
            id="appends to existing finalizers",
        ),
        pytest.param(
            {"name": "cq", "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
            ["kueue.x-k8s.io/resource-in-use"],
            id="keeps a finalizer already there",
        ),
    ],
)
def test_default(metadata: dict[str, Any], want: list[str]) -> None:
    obj = {"metadata": metadata, "spec": {}}
    cluster_queue.default(obj, ctx())
    assert obj["metadata"]["finalizers"] == want
    assert obj["spec"] == {}


def test_default_through_the_app_adds_the_finalizer() -> None:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "x"}, "spec": {}}
    assert crd_defaulted("ClusterQueue", obj)["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
