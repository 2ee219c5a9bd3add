"""Workload webhook: scenarios of upstream's pkg/webhooks/workload_webhook_test.go, exact messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.admission import workload
from webhook.admission.context import Context, StaticLookups
from webhook.api.fields import aggregate
from webhook.config import Configuration

from .reviews import crd_denial

NOW = "2025-01-01T00:00:00Z"
GATED_BY = "metadata.annotations[kueue.x-k8s.io/admission-gated-by]"
BOOST = "metadata.annotations[kueue.x-k8s.io/priority-boost]"
PS0_SPEC = "spec.podSets[0].template.spec"
LABEL_VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_PART_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_KEY_SLASHES = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)


def ctx(**gates: bool) -> Context:
    return Context(config=Configuration(feature_gates=gates), lookups=StaticLookups())


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources}


def pod_set(
    name: str,
    count: int,
    *,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    pod_resources: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers if containers is not None else [container({"cpu": "1"})]}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if pod_resources is not None:
        spec["resources"] = pod_resources
    template: dict[str, Any] = {"spec": spec}
    if metadata is not None:
        template["metadata"] = metadata
    return {"name": name, "count": count, "template": template, **fields}


def quota_reserved(status: str = "True") -> dict[str, Any]:
    return {
        "type": "QuotaReserved",
        "status": status,
        "reason": "AdmittedByTest",
        "message": "admitted",
        "lastTransitionTime": NOW,
    }


def admission(*assignments: dict[str, Any], cluster_queue: str = "cluster-queue") -> dict[str, Any]:
    return {"clusterQueue": cluster_queue, "podSetAssignments": list(assignments)}


def wl(
    *pod_sets: dict[str, Any],
    annotations: dict[str, str] | None = None,
    reserve: dict[str, Any] | None = None,
    **status: Any,
) -> dict[str, Any]:
    """A Workload; `reserve` sets status.admission and a QuotaReserved=True condition."""
    obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "test-workload", "namespace": "test-ns"},
        "spec": {"podSets": list(pod_sets) or [pod_set("main", 1)], "queueName": "lq"},
    }
    if annotations is not None:
        obj["metadata"]["annotations"] = annotations
    body: dict[str, Any] = dict(status)
    if reserve is not None:
        body["admission"] = reserve
        body.setdefault("conditions", []).append(quota_reserved())
    if body:
        obj["status"] = body
    return obj


def reserved_without_admission() -> dict[str, Any]:
    return wl(pod_set("driver", 1), conditions=[quota_reserved()])


def gated(value: str) -> dict[str, Any]:
    return wl(annotations={"kueue.x-k8s.io/admission-gated-by": value})


def boosted(value: str) -> dict[str, Any]:
    return wl(annotations={"kueue.x-k8s.io/priority-boost": value})


ELASTIC = {"kueue.x-k8s.io/elastic-job": "true"}

CREATE_CASES = [
    pytest.param(wl(pod_set("driver", 1), pod_set("workers", 100)), {}, "", id="valid"),
    pytest.param(
        reserved_without_admission(),
        {},
        "status.admission: Required value: must be set while the QuotaReserved condition is true",
        id="quota reserved without an admission is refused, not a panic",
    ),
    pytest.param(
        wl(reserve=admission({"name": "@invalid"})),
        {},
        'status.admission.podSetAssignments[0].name: Not found: "@invalid"',
        id="should have a valid podSet name in status assignment",
    ),
    pytest.param(
        wl(
            pod_set("main", 3),
            reserve=admission({"name": "main", "flavors": {"cpu": "flv"}, "resourceUsage": {"cpu": "1"}, "count": 3}),
        ),
        {},
        'status.admission.podSetAssignments[0].resourceUsage[cpu]: Invalid value: "1": is not a multiple of 3',
        id="assignment usage should be divisible by count",
    ),
    pytest.param(
        wl(
            pod_set("main", 3),
            reserve=admission({"name": "main", "resourceUsage": {"cpu": "3", "memory": "3Gi"}, "count": 3}),
        ),
        {},
        "",
        id="assignment usage divisible by count",
    ),
    pytest.param(
        wl(pod_set("bad", 1, init_containers=[container({"pods": "1"})], containers=[container({"pods": "1"})])),
        {},
        f'[{PS0_SPEC}.initContainers[0].resources.requests[pods]: Invalid value: "pods": '
        "the key is reserved for internal kueue use, "
        f'{PS0_SPEC}.containers[0].resources.requests[pods]: Invalid value: "pods": '
        "the key is reserved for internal kueue use]",
        id="should not request num-pods resource",
    ),
    pytest.param(
        wl(
            pod_set(
                "bad",
                1,
                init_containers=[container(limits={"pods": "1"})],
                containers=[container(limits={"pods": "1"})],
            )
        ),
        {},
        f'[{PS0_SPEC}.initContainers[0].resources.limits[pods]: Invalid value: "pods": '
        "the key is reserved for internal kueue use, "
        f'{PS0_SPEC}.containers[0].resources.limits[pods]: Invalid value: "pods": '
        "the key is reserved for internal kueue use]",
        id="should reject reserved pods resource key in limits",
    ),
    pytest.param(
        wl(pod_set("bad", 1, containers=[container({"cpu": "-1"})])),
        {},
        f'{PS0_SPEC}.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        id="should reject negative container resource request",
    ),
    pytest.param(
        wl(pod_set("bad", 1, containers=[], init_containers=[container({"cpu": "-1"})])),
        {},
        f'{PS0_SPEC}.initContainers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        id="should reject negative initContainer resource request",
    ),
    pytest.param(
        wl(pod_set("bad", 1, containers=[container(limits={"cpu": "-1"})])),
        {},
        f'{PS0_SPEC}.containers[0].resources.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        id="should reject negative container resource limit",
    ),
    pytest.param(
        wl(
            pod_set(
                "bad",
                1,
                containers=[container({"cpu": "1", "memory": "-1Gi"}, {"cpu": "2", "memory": "-2Gi"})],
            )
        ),
        {},
        f'[{PS0_SPEC}.containers[0].resources.requests[memory]: Invalid value: "-1Gi": '
        "must be greater than or equal to 0, "
        f'{PS0_SPEC}.containers[0].resources.limits[memory]: Invalid value: "-2Gi": must be greater than or equal to 0]',
        id="should reject negative resource among multiple valid requests and limits",
    ),
    pytest.param(
        wl(pod_set("bad", 1, pod_resources={"requests": {"cpu": "-1"}})),
        {},
        f'{PS0_SPEC}.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        id="should reject negative pod-level resource request",
    ),
    pytest.param(
        wl(pod_set("bad", 1, pod_resources={"limits": {"memory": "-1Gi"}})),
        {},
        f'{PS0_SPEC}.resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0',
        id="should reject negative pod-level resource limit",
    ),
    pytest.param(
        wl(pod_set("ok", 1, containers=[container({"cpu": "-1"})])),
        {"WorkloadValidateResourcesAreNonNegative": False},
        "",
        id="should accept negative container resource request when WorkloadValidateResourcesAreNonNegative is disabled",
    ),
    pytest.param(
        wl(pod_set("ok", 1, containers=[container({"cpu": "0"})])),
        {},
        "",
        id="should accept zero container resource request",
    ),
    pytest.param(
        wl(
            pod_set(
                "bad-metadata",
                1,
                metadata={
                    "labels": {"valid": "invalid value with spaces, test-wec1"},
                    "annotations": {"invalid/annotation/key/too/long/invalid": "val"},
                },
            )
        ),
        {"WorkloadValidationForPodSetMetadata": False},
        "",
        id="should accept invalid podSet template metadata when WorkloadValidationForPodSetMetadata is disabled",
    ),
    pytest.param(
        wl(pod_set("bad-metadata", 1, metadata={"labels": {"valid": "invalid value with spaces"}})),
        {},
        f'spec.podSets[0].template.metadata.labels: Invalid value: "invalid value with spaces": {LABEL_VALUE_REGEX}',
        id="should reject invalid podSet template label value",
    ),
    pytest.param(
        wl(
            pod_set(
                "bad-metadata",
                1,
                metadata={"annotations": {"invalid/annotation/key/too/long/invalid": "val"}},
            )
        ),
        {},
        'spec.podSets[0].template.metadata.annotations: Invalid value: "invalid/annotation/key/too/long/invalid": '
        f"{LABEL_KEY_SLASHES}",
        id="should reject invalid podSet template annotation key",
    ),
    pytest.param(
        wl(pod_set("ok", 1, metadata={"annotations": {"Example.COM/Key": "val"}})),
        {},
        "",
        id="annotation keys are checked case-insensitively",
    ),
    pytest.param(
        wl(pod_set("big", 1, metadata={"annotations": {"a": "x" * (256 * 1024)}})),
        {},
        "spec.podSets[0].template.metadata.annotations: Too long: may not be more than 262144 bytes",
        id="annotations larger than 256KiB",
    ),
    pytest.param(
        wl(
            pod_set(
                "bad",
                1,
                topologyRequest={
                    "podSetSliceRequiredTopology": "kubernetes.io/hostname",
                    "podSetSliceSize": 0,
                },
            )
        ),
        {},
        "spec.podSets[0].topologyRequest.podSetSliceSize: Invalid value: 0: must be greater than 0",
        id="should reject non-positive podSetSliceSize when TASValidateWorkloadSliceSize is enabled",
    ),
    pytest.param(
        wl(pod_set("bad", 1, topologyRequest={"podSetSliceRequiredTopology": "kubernetes.io/hostname"})),
        {},
        "spec.podSets[0].topologyRequest.podSetSliceSize: Required value: "
        "must be set when podSetSliceRequiredTopology is specified",
        id="should reject podSetSliceRequiredTopology without podSetSliceSize",
    ),
    pytest.param(
        wl(pod_set("bad", 1, topologyRequest={"podSetSliceSize": 1})),
        {},
        "spec.podSets[0].topologyRequest.podSetSliceSize: Forbidden: "
        "may not be set when podSetSliceRequiredTopology is not specified",
        id="should reject podSetSliceSize without podSetSliceRequiredTopology when TASValidateWorkloadSliceSize is enabled",
    ),
    pytest.param(
        wl(
            pod_set(
                "bad",
                1,
                topologyRequest={
                    "podsetSliceRequiredTopologyConstraints": [{"topology": "kubernetes.io/hostname", "size": 0}]
                },
            )
        ),
        {},
        "spec.podSets[0].topologyRequest.podsetSliceRequiredTopologyConstraints[0].size: Invalid value: 0: "
        "must be greater than 0",
        id="should reject non-positive podsetSliceRequiredTopologyConstraints size when TASValidateWorkloadSliceSize is enabled",
    ),
    pytest.param(
        wl(
            pod_set(
                "ok",
                1,
                topologyRequest={
                    "podSetSliceRequiredTopology": "kubernetes.io/hostname",
                    "podSetSliceSize": 0,
                },
            )
        ),
        {"TASValidateWorkloadSliceSize": False},
        "",
        id="should accept non-positive podSetSliceSize when TASValidateWorkloadSliceSize is disabled",
    ),
    pytest.param(wl(admissionChecks=[{}]), {}, "", id="empty podSetUpdates"),
    pytest.param(
        wl(
            pod_set("first", 1),
            pod_set("second", 1),
            admissionChecks=[{"podSetUpdates": [{"name": "first"}]}],
        ),
        {},
        "",
        id="should accept podSetUpdates for only a subset of podSets",
    ),
    pytest.param(
        wl(
            pod_set("first", 1),
            pod_set("second", 1),
            admissionChecks=[{"podSetUpdates": [{"name": "first"}, {"name": "third"}]}],
        ),
        {},
        'status.admissionChecks[0].podSetUpdates[1].name: Unsupported value: "third": supported values: "first", "second"',
        id="mismatched names in podSetUpdates with names in podSets",
    ),
    pytest.param(
        wl(
            pod_set("first", 1),
            pod_set("second", 1),
            admissionChecks=[
                {
                    "podSetUpdates": [
                        {
                            "name": "first",
                            "labels": {"l1": "first"},
                            "annotations": {"foo": "bar"},
                            "tolerations": [
                                {
                                    "key": "t1",
                                    "operator": "Equal",
                                    "value": "t1v",
                                    "effect": "NoExecute",
                                    "tolerationSeconds": 5,
                                }
                            ],
                            "nodeSelector": {"type": "first"},
                        },
                        {"name": "second", "labels": {"l2": "second"}, "nodeSelector": {"type": "second"}},
                    ]
                }
            ],
        ),
        {},
        "",
        id="matched names in podSetUpdates with names in podSets",
    ),
    pytest.param(
        wl(admissionChecks=[{"podSetUpdates": [{"name": "main", "labels": {"@abc": "foo"}}]}]),
        {},
        f'status.admissionChecks[0].podSetUpdates[0].labels: Invalid value: "@abc": {NAME_PART_REGEX}',
        id="invalid label name of podSetUpdate",
    ),
    pytest.param(
        wl(admissionChecks=[{"podSetUpdates": [{"name": "main", "nodeSelector": {"@abc": "foo"}}]}]),
        {},
        f'status.admissionChecks[0].podSetUpdates[0].nodeSelector: Invalid value: "@abc": {NAME_PART_REGEX}',
        id="invalid node selector name of podSetUpdate",
    ),
    pytest.param(
        wl(admissionChecks=[{"podSetUpdates": [{"name": "main", "labels": {"foo": "@abc"}}]}]),
        {},
        f'status.admissionChecks[0].podSetUpdates[0].labels: Invalid value: "@abc": {LABEL_VALUE_REGEX}',
        id="invalid label value of podSetUpdate",
    ),
    pytest.param(
        wl(
            admissionChecks=[
                {"podSetUpdates": [{"name": "main", "tolerations": [{"key": "@t", "operator": "Exists"}]}]}
            ]
        ),
        {},
        f'status.admissionChecks[0].podSetUpdates[0].tolerations[0].key: Invalid value: "@t": {NAME_PART_REGEX}',
        id="invalid toleration key of podSetUpdate",
    ),
    pytest.param(
        wl(pod_set("ps1", 3), reclaimablePods=[{"name": "ps1", "count": 4}, {"name": "ps2", "count": 1}]),
        {},
        "[status.reclaimablePods[ps1].count: Invalid value: 4: should be less or equal to 3, "
        'status.reclaimablePods[ps2].name: Unsupported value: "ps2": supported values: "ps1"]',
        id="invalid reclaimablePods",
    ),
    pytest.param(
        wl(pod_set("ps1", 3, minCount=2), pod_set("ps2", 3, minCount=1)),
        {},
        "spec.podSets: Invalid value: 2: at most one podSet can use minCount",
        id="too many variable count podSets",
    ),
    pytest.param(
        wl(pod_set("main", 10, minCount=5), annotations=ELASTIC),
        {},
        "spec.podSets: Invalid value: 1: partial admission and elastic job cannot be used together",
        id="partial admission and elastic job cannot be used together",
    ),
    pytest.param(
        wl(pod_set("main", 10, minCount=5), annotations=ELASTIC),
        {"ElasticJobsViaWorkloadSlices": False},
        "",
        id="minCount with the elastic annotation while elastic jobs are off",
    ),
    pytest.param(
        wl(
            conditions=[
                {
                    "type": "Finished",
                    "status": "Maybe",
                    "reason": "1bad",
                    "lastTransitionTime": NOW,
                    "observedGeneration": -1,
                },
                {"type": "Finished", "status": "True", "reason": ""},
            ]
        ),
        {},
        '[status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown", '
        "status.conditions[0].observedGeneration: Invalid value: -1: must be greater than or equal to zero, "
        'status.conditions[0].reason: Invalid value: "1bad": a condition reason must start with alphabetic '
        "character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an "
        "alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
        "'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?'), "
        'status.conditions[1].type: Duplicate value: "Finished", '
        "status.conditions[1].lastTransitionTime: Required value, "
        "status.conditions[1].reason: Required value]",
        id="conditions are validated like metav1 conditions",
    ),
    pytest.param(boosted("10"), {"PriorityBoost": True}, "", id="valid priority-boost"),
    pytest.param(boosted("0"), {"PriorityBoost": True}, "", id="valid priority-boost zero"),
    pytest.param(boosted("-5"), {"PriorityBoost": True}, "", id="valid priority-boost negative"),
    pytest.param(
        boosted("invalid"),
        {"PriorityBoost": True},
        f'{BOOST}: Invalid value: "invalid": must be a valid signed integer',
        id="invalid priority-boost",
    ),
    pytest.param(
        boosted("2147483648"),
        {"PriorityBoost": True},
        f'{BOOST}: Invalid value: "2147483648": must be a valid signed integer',
        id="priority-boost out of int32 range",
    ),
    pytest.param(
        boosted(""),
        {"PriorityBoost": True},
        f'{BOOST}: Invalid value: "": must be a valid signed integer; use "0" explicitly, empty string is not allowed',
        id="empty string priority-boost",
    ),
    pytest.param(wl(), {"PriorityBoost": True}, "", id="missing priority-boost annotation"),
    pytest.param(boosted("invalid"), {}, "", id="invalid priority-boost when feature off"),
    pytest.param(gated("example.com/controller"), {}, "", id="valid AdmissionGatedBy annotation with single gate"),
    pytest.param(
        gated("example.com/a,not.example.com/b"),
        {},
        "",
        id="valid AdmissionGatedBy annotation with multiple gates",
    ),
    pytest.param(gated(" example.com/gate"), {}, "", id="AdmissionGatedBy annotation - leading space"),
    pytest.param(
        gated("example.com/gate ,example.com/gate2"),
        {},
        "",
        id="AdmissionGatedBy annotation - space before comma",
    ),
    pytest.param(
        gated("example.com/gate, example.com/gate2"),
        {},
        "",
        id="AdmissionGatedBy annotation - space after comma",
    ),
    pytest.param(gated("example.com/gate "), {}, "", id="AdmissionGatedBy annotation - trailing space"),
    pytest.param(
        gated("this is an invalid value"),
        {},
        f'{GATED_BY}: Invalid value: "this is an invalid value": must be a domain-prefixed path (such as "acme.io/foo")',
        id="invalid AdmissionGatedBy annotation - not in subdomain/path format",
    ),
    pytest.param(
        gated("duplicates.are/invalid,duplicates.are/invalid"),
        {},
        f'{GATED_BY}: Invalid value: "duplicates.are/invalid,duplicates.are/invalid": '
        "duplicate gate name: duplicates.are/invalid",
        id="invalid AdmissionGatedBy annotation - duplicate gates",
    ),
    pytest.param(
        gated("example.com/gate name"),
        {},
        f'{GATED_BY}: Invalid value: "gate name": Invalid path (regex used for validation is '
        "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        id="invalid AdmissionGatedBy annotation - space in path component",
    ),
    pytest.param(
        gated("example .com/gate"),
        {},
        f'{GATED_BY}: Invalid value: "example .com": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        id="invalid AdmissionGatedBy annotation - space in domain component",
    ),
    pytest.param(
        gated("valid.com/gate,,other.com/gate"),
        {},
        f'{GATED_BY}: Invalid value: "valid.com/gate,,other.com/gate": cannot contain empty gate names',
        id="invalid AdmissionGatedBy annotation - empty gate",
    ),
    pytest.param(
        gated("example.com/" + "g" * 60),
        {},
        f"{GATED_BY}: Too long: may not be more than 63 bytes",
        id="invalid AdmissionGatedBy annotation - gate longer than 63",
    ),
    pytest.param(
        gated("this is an invalid value"),
        {"AdmissionGatedBy": False},
        "",
        id="AdmissionGatedBy annotation is not checked while the gate is off",
    ),
    pytest.param(
        wl(pod_set("main", 1, topologyRequest={"subGroupCount": 0})),
        {},
        "",
        id="non-negative subGroupCount is accepted without warning",
    ),
]


@pytest.mark.parametrize(("obj", "gates", "want"), CREATE_CASES)
def test_validate_create(obj: dict[str, Any], gates: dict[str, bool], want: str) -> None:
    errors = workload.validate_create(obj, ctx(**gates))
    assert (aggregate(errors) if errors else "") == want


@pytest.mark.parametrize(("obj", "gates", "want"), CREATE_CASES)
def test_validate_create_through_the_app(obj: dict[str, Any], gates: dict[str, bool], want: str) -> None:
    assert crd_denial("Workload", obj, gates=gates) == want


def two_sets(count1: int = 3, count2: int = 3) -> list[dict[str, Any]]:
    return [pod_set("ps1", count1), pod_set("ps2", count2)]


ADMITTED_12 = admission({"name": "ps1"}, {"name": "ps2"})


def elastic(count: int, reclaimable: int | None, *, admitted: int | None = None) -> dict[str, Any]:
    assignment: dict[str, Any] = {"name": "ps1"}
    if admitted is not None:
        assignment["count"] = admitted
    status: dict[str, Any] = {}
    if reclaimable is not None:
        status["reclaimablePods"] = [{"name": "ps1", "count": reclaimable}]
    return wl(pod_set("ps1", count), annotations=dict(ELASTIC), reserve=admission(assignment), **status)


def with_finalizer(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    return obj


def gated_main(value: str | None) -> dict[str, Any]:
    return wl(annotations=None if value is None else {"kueue.x-k8s.io/admission-gated-by": value})


def ready_check(*updates: dict[str, Any], name: str = "ac1", message: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "state": "Ready",
        "message": message,
        "lastTransitionTime": NOW,
        "podSetUpdates": list(updates),
    }


def tas_assignment(count: int) -> dict[str, Any]:
    return {"levels": ["level"], "slices": [{"domainCount": 1, "podCounts": {"universal": count}}]}


UPDATE_CASES = [
    pytest.param(
        wl(pod_set("driver", 1)),
        reserved_without_admission(),
        {},
        "status.admission: Required value: must be set while the QuotaReserved condition is true",
        id="an update may not put a workload in quota reserved with no admission",
    ),
    pytest.param(
        reserved_without_admission(),
        reserved_without_admission(),
        {},
        "",
        id="a workload already in that state stays updatable so it can be removed",
    ),
    pytest.param(
        with_finalizer(reserved_without_admission()),
        reserved_without_admission(),
        {},
        "",
        id="a workload whose quota reservation lost its admission can still drop its finalizer",
    ),
    pytest.param(
        wl(*two_sets(), reserve=ADMITTED_12, reclaimablePods=[{"name": "ps1", "count": 1}]),
        wl(
            *two_sets(),
            reserve=ADMITTED_12,
            reclaimablePods=[{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}],
        ),
        {},
        "",
        id="reclaimable pod count can change up",
    ),
    pytest.param(
        wl(pod_set("driver", 1)),
        wl(pod_set("driver", 1, metadata={"labels": {"valid": "invalid value with spaces, test-wec1"}})),
        {"WorkloadValidationForPodSetMetadata": False},
        "",
        id="should accept invalid podSet template metadata on update when WorkloadValidationForPodSetMetadata is disabled",
    ),
    pytest.param(
        wl(pod_set("driver", 1)),
        wl(pod_set("driver", 1, metadata={"labels": {"valid": "invalid value with spaces"}})),
        {},
        f'spec.podSets[0].template.metadata.labels: Invalid value: "invalid value with spaces": {LABEL_VALUE_REGEX}',
        id="should reject invalid podSet template label value on update",
    ),
    pytest.param(
        wl(
            *two_sets(),
            reserve=ADMITTED_12,
            reclaimablePods=[{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}],
        ),
        wl(*two_sets(), reserve=ADMITTED_12, reclaimablePods=[{"name": "ps1", "count": 1}]),
        {},
        "[status.reclaimablePods[ps1].count: Invalid value: 1: cannot be less than 2, "
        "status.reclaimablePods[ps2]: Required value: cannot be removed]",
        id="reclaimable pod count cannot change down",
    ),
    pytest.param(
        elastic(8, 4),
        elastic(3, 4),
        {},
        "",
        id="elastic workload: unchanged reclaimable pod count is tolerated while its podSet scales down below it",
    ),
    pytest.param(
        elastic(8, 4),
        elastic(3, 5),
        {},
        "status.reclaimablePods[ps1].count: Invalid value: 5: should be less or equal to 3",
        id="elastic workload: changed reclaimable pod count above the podSet count is rejected",
    ),
    pytest.param(
        elastic(3, 4, admitted=8),
        elastic(3, 3, admitted=8),
        {},
        "",
        id="elastic workload: reclaimable pod count can decrease after its podSet scaled down below the admitted count",
    ),
    pytest.param(
        elastic(10, 9, admitted=20),
        elastic(10, 0, admitted=20),
        {},
        "",
        id="elastic workload: reclaimable count can decrease when scaled down below the admitted count",
    ),
    pytest.param(
        elastic(8, 4),
        elastic(8, 2),
        {},
        "status.reclaimablePods[ps1].count: Invalid value: 2: cannot be less than 4",
        id="elastic workload: reclaimable pod count cannot decrease without a podSet scale-down",
    ),
    pytest.param(
        elastic(8, 4, admitted=8),
        elastic(1, None, admitted=8),
        {},
        "",
        id="elastic workload: reclaimable pod entry can be removed after its podSet scaled down below the admitted count",
    ),
    pytest.param(
        elastic(8, 4),
        elastic(8, None),
        {},
        "status.reclaimablePods[ps1]: Required value: cannot be removed",
        id="elastic workload: reclaimable pod entry cannot be removed without a podSet scale-down",
    ),
    pytest.param(
        wl(
            pod_set("ps1", 8),
            reserve=admission({"name": "ps1"}),
            reclaimablePods=[{"name": "ps1", "count": 4}],
        ),
        wl(
            pod_set("ps1", 3),
            reserve=admission({"name": "ps1"}),
            reclaimablePods=[{"name": "ps1", "count": 4}],
        ),
        {},
        "status.reclaimablePods[ps1].count: Invalid value: 4: should be less or equal to 3",
        id="non-elastic workload: stale reclaimable pod count is still rejected when its podSet scales down",
    ),
    pytest.param(
        wl(
            *two_sets(),
            reserve=ADMITTED_12,
            reclaimablePods=[{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}],
        ),
        wl(
            *two_sets(),
            admissionChecks=[ready_check({"name": "ps1"}, {"name": "ps2"})],
            reclaimablePods=[{"name": "ps1", "count": 0}, {"name": "ps2", "count": 1}],
        ),
        {},
        "",
        id="reclaimable pod count can go to 0 if the job is suspended",
    ),
    pytest.param(
        wl(
            pod_set("first", 1),
            pod_set("second", 1),
            admissionChecks=[ready_check({"name": "first", "labels": {"foo": "bar"}}, {"name": "second"})],
        ),
        wl(
            pod_set("first", 1),
            pod_set("second", 1),
            admissionChecks=[ready_check({"name": "first", "labels": {"foo": "baz"}}, {"name": "second"})],
        ),
        {},
        'status.admissionChecks[0].podSetUpdates: Invalid value: [{"name":"first","labels":{"foo":"baz"}},'
        '{"name":"second"}]: field is immutable',
        id="podSetUpdates should be immutable when state is ready",
    ),
    pytest.param(
        wl(
            pod_set("first", 1),
            pod_set("second", 1),
            admissionChecks=[
                ready_check({"name": "first", "labels": {"foo": "bar"}}, {"name": "second"}, message="old")
            ],
        ),
        wl(
            pod_set("first", 1),
            pod_set("second", 1),
            admissionChecks=[
                ready_check({"name": "first", "labels": {"foo": "bar"}}, {"name": "second"}, message="new")
            ],
        ),
        {},
        "",
        id="should change other fields of admissionchecks when podSetUpdates is immutable",
    ),
    pytest.param(
        wl(pod_set("ps1", 3), reserve=admission({"name": "ps1", "topologyAssignment": tas_assignment(2)})),
        wl(pod_set("ps1", 3), reserve=admission({"name": "ps1", "topologyAssignment": tas_assignment(3)})),
        {},
        "",
        id="TopologyAssignment can be mutated",
    ),
    pytest.param(
        wl(pod_set("ps1", 3), reserve=admission({"name": "ps1", "topologyAssignment": tas_assignment(2)})),
        wl(pod_set("ps1", 3), reserve=admission({"name": "ps1", "topologyAssignment": tas_assignment(3)})),
        {"TopologyAwareScheduling": False},
        'status.admission: Invalid value: {"clusterQueue":"cluster-queue","podSetAssignments":[{"name":"ps1",'
        '"topologyAssignment":{"levels":["level"],"slices":[{"domainCount":1,"podCounts":{"universal":3}}]}}]}: '
        "field is immutable",
        id="TopologyAssignment is immutable without TAS",
    ),
    pytest.param(
        wl(*two_sets(), reserve=ADMITTED_12),
        wl(*two_sets(), reserve=admission({"name": "ps1"})),
        {},
        'status.admission: Invalid value: {"clusterQueue":"cluster-queue","podSetAssignments":[{"name":"ps1"}]}: '
        "field is immutable",
        id="PodSets cannot be removed from admission",
    ),
    pytest.param(
        wl(*two_sets(), reserve=admission({"name": "ps1"})),
        wl(*two_sets(), reserve=ADMITTED_12),
        {},
        'status.admission: Invalid value: {"clusterQueue":"cluster-queue","podSetAssignments":[{"name":"ps1"},'
        '{"name":"ps2"}]}: field is immutable',
        id="PodSets cannot be added to admission",
    ),
    pytest.param(
        wl(*two_sets(), reserve=admission({"name": "ps1", "resourceUsage": {"cpu": "1"}}, {"name": "ps2"})),
        wl(
            *two_sets(),
            reserve=admission({"name": "ps1", "resourceUsage": {"cpu": "1000m"}}, {"name": "ps2"}),
        ),
        {},
        "",
        id="admission usage compares quantities by value",
    ),
    pytest.param(
        wl(*two_sets(), reserve=ADMITTED_12),
        wl(*two_sets(), reserve=admission({"name": "ps1"}, {"name": "ps2"}, cluster_queue="other")),
        {},
        'status.admission: Invalid value: {"clusterQueue":"other","podSetAssignments":[{"name":"ps1"},{"name":"ps2"}]}: '
        "field is immutable",
        id="admission clusterQueue is immutable",
    ),
    pytest.param(
        wl(*two_sets(3, 4), reserve=ADMITTED_12),
        wl(*two_sets(3, 3), reserve=ADMITTED_12),
        {"ElasticJobsViaWorkloadSlices": False},
        'spec.podSets.1: Invalid value: {"name":"ps2","template":{"metadata":{},"spec":{"containers":[{"name":"c",'
        '"resources":{"requests":{"cpu":"1"}}}]}},"count":3}: field is immutable',
        id="workload.podSets[].count is immutable",
    ),
    pytest.param(
        wl(*two_sets(3, 4), reserve=ADMITTED_12),
        wl(*two_sets(3, 3), reserve=ADMITTED_12),
        {},
        "",
        id="workload.podSets[].count is mutable with ElasticJobs feature gate",
    ),
    pytest.param(
        wl(*two_sets(3, 4), reserve=ADMITTED_12),
        wl(*two_sets(3, 5), reserve=ADMITTED_12),
        {},
        'spec.podSets.1: Invalid value: {"name":"ps2","template":{"metadata":{},"spec":{"containers":[{"name":"c",'
        '"resources":{"requests":{"cpu":"1"}}}]}},"count":5}: field is immutable',
        id="workload.podSets[].count may not grow even with ElasticJobs",
    ),
    pytest.param(
        wl(pod_set("ps1", 3), reserve=admission({"name": "ps1"})),
        wl(*two_sets(), reserve=admission({"name": "ps1"})),
        {},
        'spec.podSets: Invalid value: [{"name":"ps1","template":{"metadata":{},"spec":{"containers":[{"name":"c",'
        '"resources":{"requests":{"cpu":"1"}}}]}},"count":3},{"name":"ps2","template":{"metadata":{},"spec":'
        '{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}},"count":3}]: field is immutable',
        id="podSets cannot be added while quota is reserved",
    ),
    pytest.param(
        wl(*two_sets(3, 4)),
        wl(*two_sets(3, 3)),
        {"ElasticJobsViaWorkloadSlices": False},
        "",
        id="podSets may change before quota is reserved",
    ),
    pytest.param(
        wl(*two_sets(3, 4)),
        wl(
            *two_sets(3, 4),
            reserve=ADMITTED_12,
            clusterName="worker1",
        )
        | {
            "metadata": {
                "name": "test-workload",
                "namespace": "test-ns",
                "annotations": {"kueue.x-k8s.io/workload-slice-replacement-for": "test-ns/test-workload"},
            }
        },
        {},
        "",
        id="ClusterName doesn't have to be one of the nominatedClusterNames with ElasticJobs feature gate",
    ),
    pytest.param(
        wl(nominatedClusterNames=["worker1", "worker2"]),
        wl(clusterName="worker3"),
        {},
        'status.clusterName: Invalid value: "worker3": when setting clusterName it must be one of the nominatedClusterNames',
        id="clusterName must be one of the nominatedClusterNames",
    ),
    pytest.param(
        wl(nominatedClusterNames=["worker1", "worker2"]),
        wl(clusterName="worker2"),
        {},
        "",
        id="clusterName set to a nominated cluster",
    ),
    pytest.param(
        gated_main(None),
        gated_main("example.com/controller"),
        {},
        f"{GATED_BY}: Forbidden: cannot add admission gate after creation",
        id="reject adding AdmissionGatedBy annotation after workload creation",
    ),
    pytest.param(
        gated_main("example.com/controller1"),
        gated_main(None),
        {},
        "",
        id="allow removing AdmissionGatedBy annotation with single gate",
    ),
    pytest.param(
        gated_main("example.com/controller1,example.com/controller2"),
        gated_main(None),
        {},
        "",
        id="allow removing AdmissionGatedBy annotation with multiple gates",
    ),
    pytest.param(
        gated_main("example.com/controller1,example.com/controller2"),
        gated_main("example.com/controller2"),
        {},
        "",
        id="allow removing one gate from AdmissionGatedBy annotation",
    ),
    pytest.param(
        gated_main("example.com/controller1,example.com/controller2"),
        gated_main("example.com/controller3"),
        {},
        f"{GATED_BY}: Forbidden: can only remove gates, not add new ones",
        id="reject injecting new gate in AdmissionGatedBy annotation",
    ),
    pytest.param(
        gated_main("example.com/controller1,example.com/controller2"),
        gated_main("example.com/controller2,example.com/controller1"),
        {},
        "",
        id="allow reordering gates in AdmissionGatedBy annotation",
    ),
    pytest.param(
        gated_main("example.com/a"),
        gated_main("example.com/a,example.com/a"),
        {},
        f'{GATED_BY}: Invalid value: "example.com/a,example.com/a": duplicate gate name: example.com/a',
        id="format errors are reported once on update",
    ),
]


@pytest.mark.parametrize(("old", "new", "gates", "want"), UPDATE_CASES)
def test_validate_update(old: dict[str, Any], new: dict[str, Any], gates: dict[str, bool], want: str) -> None:
    errors = workload.validate_update(old, new, ctx(**gates))
    assert (aggregate(errors) if errors else "") == want


@pytest.mark.parametrize(("old", "new", "gates", "want"), UPDATE_CASES)
def test_validate_update_through_the_app(
    old: dict[str, Any], new: dict[str, Any], gates: dict[str, bool], want: str
) -> None:
    assert crd_denial("Workload", new, old=old, gates=gates) == want


def test_status_subresource_runs_the_same_checks() -> None:
    status_ctx = Context(config=Configuration(), lookups=StaticLookups(), operation="UPDATE", sub_resource="status")
    old = wl(*two_sets(), reserve=ADMITTED_12, reclaimablePods=[{"name": "ps1", "count": 2}])
    new = wl(*two_sets(), reserve=ADMITTED_12, reclaimablePods=[{"name": "ps1", "count": 1}])
    errors = workload.validate_update(old, new, status_ctx)
    assert aggregate(errors) == "status.reclaimablePods[ps1].count: Invalid value: 1: cannot be less than 2"


@pytest.mark.parametrize(
    ("gates", "want_min_counts"),
    [
        pytest.param({}, [2, None], id="PartialAdmission on by default keeps minCount"),
        pytest.param({"PartialAdmission": False}, [None, None], id="PartialAdmission off drops minCount"),
    ],
)
def test_default(gates: dict[str, bool], want_min_counts: list[int | None]) -> None:
    obj = wl(pod_set("ps1", 3, minCount=2), pod_set("ps2", 3))
    before = copy.deepcopy(obj)
    workload.default(obj, ctx(**gates))
    assert [ps.get("minCount") for ps in obj["spec"]["podSets"]] == want_min_counts
    for ps in before["spec"]["podSets"]:
        ps.pop("minCount", None)
    for ps in obj["spec"]["podSets"]:
        ps.pop("minCount", None)
    assert obj == before
