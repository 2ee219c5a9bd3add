"""Tests for webhook/api/schema.py: committed manifests, structural schemas, names and columns."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.api import conversion, schema

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


@pytest.fixture(scope="module")
def definitions() -> dict[str, dict[str, Any]]:
    """Kueue's CRDs (ours, `pykueue.io`, are tested in test_schema_usage.py)."""
    return {d["spec"]["names"]["kind"]: d for d in schema.crds() if d["spec"]["group"] == schema.GROUP}


def _version_schema(definitions, kind: str, version: str) -> dict[str, Any]:
    for entry in definitions[kind]["spec"]["versions"]:
        if entry["name"] == version:
            return entry["schema"]["openAPIV3Schema"]
    raise KeyError(version)


# ---------------------------------------------------------------------------------------------
# Committed manifests


def test_committed_manifests_are_up_to_date():
    expected = schema.render_manifests()
    committed = {p.name: p.read_text(encoding="utf-8") for p in MANIFESTS.glob("*.yaml")} if MANIFESTS.is_dir() else {}
    stale = sorted(name for name in expected.keys() | committed.keys() if expected.get(name) != committed.get(name))
    assert not stale, (
        f"manifests/crds is stale ({', '.join(stale)}): run `make manifests` "
        "(python -m webhook.api.schema manifests/crds) and commit the result"
    )


def test_kustomization_lists_every_crd():
    files = schema.render_manifests()
    kustomization = yaml.safe_load(files["kustomization.yaml"])
    assert kustomization["resources"] == sorted(name for name in files if name != "kustomization.yaml")


def test_dump_round_trips(definitions):
    for definition in definitions.values():
        assert yaml.safe_load(schema.dump(definition)) == definition


# ---------------------------------------------------------------------------------------------
# Names, scope, versions, printer columns

# kind: (plural, scope, short names, status subresource, conversion webhook)
NAMES = {
    "AdmissionCheck": ("admissionchecks", "Cluster", ["ac"], True, False),
    "ClusterQueue": ("clusterqueues", "Cluster", ["cq"], True, True),
    "Cohort": ("cohorts", "Cluster", ["co"], True, True),
    "LocalQueue": ("localqueues", "Namespaced", ["queue", "queues", "lq"], True, True),
    "MultiKueueCluster": ("multikueueclusters", "Cluster", ["mkc"], True, True),
    "MultiKueueConfig": ("multikueueconfigs", "Cluster", ["mkconf"], False, False),
    "ProvisioningRequestConfig": ("provisioningrequestconfigs", "Cluster", ["prc"], False, False),
    "Topology": ("topologies", "Cluster", ["topo"], False, False),
    "ResourceFlavor": ("resourceflavors", "Cluster", ["flavor", "flavors", "rf"], False, False),
    "Workload": ("workloads", "Namespaced", ["kwl", "kueueworkload", "kueueworkloads"], True, True),
    "WorkloadPriorityClass": ("workloadpriorityclasses", "Cluster", ["wpc"], False, False),
}

_CQ = [
    ("Strategy", "string", ".spec.queueingStrategy", 1),
    ("Pending Workloads", "integer", ".status.pendingWorkloads", 0),
    ("Admitted Workloads", "integer", ".status.admittedWorkloads", 1),
]
_WL = [
    ("Queue", "string", ".spec.queueName", 0),
    ("Reserved in", "string", ".status.admission.clusterQueue", 0),
    ("Admitted", "string", ".status.conditions[?(@.type=='Admitted')].status", 0),
    ("Finished", "string", ".status.conditions[?(@.type=='Finished')].status", 0),
    ("Age", "date", ".metadata.creationTimestamp", 0),
]
_LQ = [
    ("ClusterQueue", "string", ".spec.clusterQueue", 0),
    ("Pending Workloads", "integer", ".status.pendingWorkloads", 0),
    ("Admitted Workloads", "integer", ".status.admittedWorkloads", 0),
]
_MKC = [
    ("Connected", "string", ".status.conditions[?(@.type=='Active')].status", 0),
    ("Age", "date", ".metadata.creationTimestamp", 0),
]
# (kind, version): columns as (name, type, jsonPath, priority), in order
COLUMNS = {
    ("ClusterQueue", "v1beta1"): [("Cohort", "string", ".spec.cohort", 0), *_CQ],
    ("ClusterQueue", "v1beta2"): [("Cohort", "string", ".spec.cohortName", 0), *_CQ],
    ("LocalQueue", "v1beta1"): _LQ,
    ("LocalQueue", "v1beta2"): _LQ,
    ("Workload", "v1beta1"): _WL,
    ("Workload", "v1beta2"): _WL,
    ("WorkloadPriorityClass", "v1beta1"): [("Value", "integer", ".value", 0)],
    ("MultiKueueCluster", "v1beta1"): _MKC,
    ("MultiKueueCluster", "v1beta2"): _MKC,
    ("WorkloadPriorityClass", "v1beta2"): [("Value", "integer", ".value", 0)],
}


def test_every_kind_is_generated(definitions):
    assert sorted(definitions) == sorted(NAMES)


# upstream's config/components/crd/kustomization.yaml: all 11 CRDs, and the 5 given its conversion webhook
UPSTREAM_CRDS = {
    "admissionchecks",
    "clusterqueues",
    "cohorts",
    "localqueues",
    "multikueueclusters",
    "multikueueconfigs",
    "provisioningrequestconfigs",
    "resourceflavors",
    "topologies",
    "workloadpriorityclasses",
    "workloads",
}
UPSTREAM_CONVERSION = {"clusterqueues", "cohorts", "localqueues", "multikueueclusters", "workloads"}


def test_every_upstream_crd_is_installed_with_upstreams_conversion_choice(definitions):
    files = schema.render_manifests()
    assert {
        name.removeprefix("kueue.x-k8s.io_").removesuffix(".yaml")
        for name in files
        if name.startswith("kueue.x-k8s.io_")
    } == UPSTREAM_CRDS
    assert {
        d["spec"]["names"]["plural"] for d in definitions.values() if "conversion" in d["spec"]
    } == UPSTREAM_CONVERSION
    # what the API server sends to /convert, the endpoint must handle
    assert {k.kind for k in schema.KINDS if k.conversion} <= conversion.supported_kinds()


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_names_scope_and_subresources(definitions, kind):
    plural, scope, short_names, status, conversion = NAMES[kind]
    spec = definitions[kind]["spec"]
    assert definitions[kind]["metadata"]["name"] == f"{plural}.kueue.x-k8s.io"
    assert spec["group"] == "kueue.x-k8s.io"
    assert spec["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
        "shortNames": short_names,
    }
    assert spec["scope"] == scope
    assert [(v["name"], v["served"], v["storage"]) for v in spec["versions"]] == [
        ("v1beta1", True, False),
        ("v1beta2", True, True),
    ]
    v1beta1 = spec["versions"][0]
    if kind == "MultiKueueConfig":  # the one kind whose v1beta1 upstream does not deprecate
        assert "deprecated" not in v1beta1 and "deprecationWarning" not in v1beta1
    else:
        assert v1beta1["deprecated"] is True
        assert v1beta1["deprecationWarning"] == "This version is deprecated. Use v1beta2 instead."
    for version in spec["versions"]:
        assert ("status" in version.get("subresources", {})) is status
    assert ("conversion" in spec) is conversion


@pytest.mark.parametrize("kind", sorted(NAMES))
@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_printer_columns(definitions, kind, version):
    entry = next(v for v in definitions[kind]["spec"]["versions"] if v["name"] == version)
    got = [
        (c["name"], c["type"], c["jsonPath"], c.get("priority", 0)) for c in entry.get("additionalPrinterColumns", [])
    ]
    assert got == COLUMNS.get((kind, version), [])


def _spec_schema(definitions: dict[str, Any], kind: str, version: str) -> dict[str, Any]:
    entry = next(v for v in definitions[kind]["spec"]["versions"] if v["name"] == version)
    return entry["schema"]["openAPIV3Schema"]["properties"]["spec"]


def test_kinds_served_for_upstream_yaml_keep_upstreams_validation(definitions):
    """Topology, ProvisioningRequestConfig and MultiKueue objects are only stored, but a user's
    YAML must be accepted or refused exactly as upstream's CRDs do."""
    levels = _spec_schema(definitions, "Topology", "v1beta2")["properties"]["levels"]
    assert (levels["minItems"], levels["maxItems"]) == (1, 16)
    assert [r["message"] for r in levels["x-kubernetes-validations"]] == [
        "levels are mutable only when kubernetes.io/hostname is the lowest level both before and after the change",
        "must be unique",
        "the kubernetes.io/hostname label can only be used at the lowest level of topology",
    ]
    assert _spec_schema(definitions, "Topology", "v1beta1")["properties"]["levels"]["x-kubernetes-validations"][0] == {
        "rule": "self == oldSelf",
        "message": "field is immutable",
    }
    prc = _spec_schema(definitions, "ProvisioningRequestConfig", "v1beta2")
    assert prc["required"] == ["provisioningClassName"]
    assert prc["properties"]["retryStrategy"]["default"] == {
        "backoffBaseSeconds": 60,
        "backoffLimitCount": 3,
        "backoffMaxSeconds": 1800,
    }
    source = _spec_schema(definitions, "MultiKueueCluster", "v1beta2")["properties"]["clusterSource"]
    assert source["properties"]["kubeConfig"]["properties"]["locationType"] == {
        "type": "string",
        "enum": ["Secret", "Path"],
        "default": "Secret",
        "description": source["properties"]["kubeConfig"]["properties"]["locationType"]["description"],
    }
    assert (
        source["x-kubernetes-validations"][0]["message"]
        == "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"
    )
    assert _spec_schema(definitions, "MultiKueueCluster", "v1beta1")["required"] == ["kubeConfig"]
    v1_kube_config = _spec_schema(definitions, "MultiKueueCluster", "v1beta1")["properties"]["kubeConfig"]
    assert v1_kube_config["properties"]["locationType"]["enum"] == ["Secret", "Path"]
    assert v1_kube_config["required"] == ["location", "locationType"]
    prc_v1 = _spec_schema(definitions, "ProvisioningRequestConfig", "v1beta1")["properties"]
    assert (
        "minLength" not in prc_v1["provisioningClassName"]
        and prc["properties"]["provisioningClassName"]["minLength"] == 1
    )
    assert prc["properties"]["podSetMergePolicy"]["enum"] == [
        "IdenticalPodTemplates",
        "IdenticalWorkloadSchedulingRequirements",
    ]
    assert prc["properties"]["managedResources"]["x-kubernetes-list-type"] == "set"
    mkconf = _spec_schema(definitions, "MultiKueueConfig", "v1beta2")["properties"]
    assert mkconf["quotaManagement"]["enum"] == ["Manual", "Automated"]
    assert "quotaManagement" not in _spec_schema(definitions, "MultiKueueConfig", "v1beta1")["properties"]


def test_workload_selectable_field(definitions):
    versions = {v["name"]: v for v in definitions["Workload"]["spec"]["versions"]}
    assert versions["v1beta2"]["selectableFields"] == [{"jsonPath": ".status.admission.clusterQueue"}]
    assert "selectableFields" not in versions["v1beta1"]


# ---------------------------------------------------------------------------------------------
# Conversion


def test_conversion_defaults_to_the_webhook_service(definitions):
    conversion = definitions["ClusterQueue"]["spec"]["conversion"]
    assert conversion == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {"name": "kueue-webhook-service", "namespace": "kueue-system", "path": "/convert"}
            },
            "conversionReviewVersions": ["v1"],
        },
    }


def test_conversion_to_a_url_with_ca_bundle():
    got = {
        d["spec"]["names"]["kind"]: d["spec"].get("conversion")
        for d in schema.crds("Q0E=", url="https://127.0.0.1:9443/convert")
    }
    for kind in ("ClusterQueue", "Cohort", "LocalQueue", "Workload"):
        assert got[kind]["webhook"]["clientConfig"] == {
            "url": "https://127.0.0.1:9443/convert",
            "caBundle": "Q0E=",
        }
    assert got["ResourceFlavor"] is None


def test_conversion_to_another_service():
    svc = schema.ServiceRef(name="webhook", namespace="dev", port=8443)
    (cq,) = [d for d in schema.crds(service=svc) if d["spec"]["names"]["kind"] == "ClusterQueue"]
    assert cq["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "service": {"name": "webhook", "namespace": "dev", "path": "/convert", "port": 8443}
    }


def test_conversion_rejects_service_and_url():
    with pytest.raises(ValueError, match="either service or url"):
        schema.crds(service=schema.DEFAULT_SERVICE, url="https://127.0.0.1:9443/convert")


# ---------------------------------------------------------------------------------------------
# Structural schema checker (apiextensions-apiserver `ValidateStructural` and friends)

_JUNCTOR_FORBIDDEN = {
    "type",
    "description",
    "default",
    "additionalProperties",
    "nullable",
    "x-kubernetes-validations",
}
_FIELD = re.compile(r"\b(self|oldSelf)((?:\.[A-Za-z_]\w*)+)(?!\w*\()")


def _cel_fields_exist(node: dict[str, Any], rule: str, path: str) -> list[str]:
    errors = []
    for match in _FIELD.finditer(rule):
        current = node
        for name in match.group(2).lstrip(".").split("."):
            if name in {"all", "exists", "size", "filter", "map", "exists_one"}:
                break
            props = current.get("properties")
            if props is None or name not in props:
                errors.append(f"{path}: CEL rule refers to missing field {match.group(0)!r}")
                break
            current = props[name]
    return errors


def structural_errors(node: dict[str, Any], path: str = "", *, root: bool = True) -> list[str]:
    errors: list[str] = []
    if "$ref" in node:
        errors.append(f"{path}: $ref is not allowed")
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    if not node.get("type") and not int_or_string and not node.get("x-kubernetes-preserve-unknown-fields"):
        errors.append(f"{path}: type must be set")
    if int_or_string:
        if "type" in node:
            errors.append(f"{path}: int-or-string must not set type")
        if node.get("anyOf") not in (None, [{"type": "integer"}, {"type": "string"}]):
            errors.append(f"{path}: int-or-string anyOf must be integer|string")
    elif "anyOf" in node:
        errors.append(f"{path}: anyOf outside int-or-string")
    for junctor in ("allOf", "oneOf", "not"):
        if junctor in node:
            errors.append(f"{path}: {junctor} is not used by our schemas")
    for branch in node.get("anyOf", []):
        if not int_or_string and _JUNCTOR_FORBIDDEN & branch.keys():
            errors.append(f"{path}: anyOf branch sets {_JUNCTOR_FORBIDDEN & branch.keys()}")
    if "properties" in node and "additionalProperties" in node:
        errors.append(f"{path}: properties and additionalProperties are exclusive")
    if "additionalProperties" in node and not isinstance(node["additionalProperties"], dict):
        errors.append(f"{path}: additionalProperties must be a schema")
    if node.get("type") == "array" and "items" not in node:
        errors.append(f"{path}: array without items")
    if node.get("type") != "array" and ("items" in node or "x-kubernetes-list-type" in node):
        errors.append(f"{path}: items/list-type on a non-array")
    if "x-kubernetes-map-type" in node and node.get("type") != "object":
        errors.append(f"{path}: map-type on a non-object")
    if "x-kubernetes-preserve-unknown-fields" in node:
        errors.append(f"{path}: preserve-unknown-fields is not expected anywhere in the Kueue CRDs")
    if root and node.get("properties", {}).get("metadata", {"type": "object"}) != {"type": "object"}:
        errors.append(f"{path}.metadata: must not specify anything but type (name/generateName at most)")
    if root and "default" in node:
        errors.append(f"{path}: default at the root")
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys")
    if (list_type == "map") != (keys is not None):
        errors.append(f"{path}: list-map-keys need list-type map and vice versa")
    if list_type == "map":
        items = node["items"]
        if items.get("type") != "object":
            errors.append(f"{path}: list-type map needs object items")
        for key in keys or []:
            key_schema = items.get("properties", {}).get(key)
            if key_schema is None or key_schema.get("type") not in {"string", "integer", "boolean"}:
                errors.append(f"{path}: map key {key} must be a scalar property")
            elif key not in items.get("required", []) and "default" not in key_schema:
                errors.append(f"{path}: map key {key} must be required or defaulted")
    if list_type == "set" and node["items"].get("type") in {"object", "array"}:
        errors.append(f"{path}: list-type set needs scalar items")
    for required in node.get("required", []):
        if required not in node.get("properties", {}):
            errors.append(f"{path}: required field {required} is not a property")
    for validation in node.get("x-kubernetes-validations", []):
        if set(validation) - {
            "rule",
            "message",
            "messageExpression",
            "reason",
            "fieldPath",
            "optionalOldSelf",
        }:
            errors.append(f"{path}: unknown validation keys {sorted(validation)}")
        if not validation.get("message"):
            errors.append(f"{path}: validation without message")
        errors += _cel_fields_exist(node, validation["rule"], path)
    for name, child in node.get("properties", {}).items():
        errors += structural_errors(child, f"{path}.{name}", root=False)
    if isinstance(node.get("items"), dict):
        errors += structural_errors(node["items"], f"{path}[]", root=False)
    if isinstance(node.get("additionalProperties"), dict):
        errors += structural_errors(node["additionalProperties"], f"{path}{{}}", root=False)
    return errors


@pytest.mark.parametrize("kind", sorted(NAMES))
@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_schemas_are_structural(definitions, kind, version):
    root = _version_schema(definitions, kind, version)
    assert structural_errors(root) == []


def test_checker_catches_problems():
    bad = {
        "type": "object",
        "properties": {
            "a": {"description": "no type"},
            "b": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map"},
            "c": {"type": "object", "x-kubernetes-validations": [{"rule": "self.nope == 1", "message": "m"}]},
        },
    }
    errors = structural_errors(bad)
    assert any(".a: type must be set" in e for e in errors)
    assert any(".b: list-map-keys" in e for e in errors)
    assert any("missing field 'self.nope'" in e for e in errors)


def test_pod_template_has_a_real_schema(definitions):
    root = _version_schema(definitions, "Workload", "v1beta2")
    template = root["properties"]["spec"]["properties"]["podSets"]["items"]["properties"]["template"]
    spec = template["properties"]["spec"]
    assert spec["required"] == ["containers"]
    container = spec["properties"]["containers"]["items"]
    assert spec["properties"]["containers"]["x-kubernetes-list-map-keys"] == ["name"]
    assert container["properties"]["resources"]["properties"]["requests"]["additionalProperties"][
        "x-kubernetes-int-or-string"
    ]
    assert container["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]["port"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    assert sorted(template["properties"]["metadata"]["properties"]) == [
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    ]


# ---------------------------------------------------------------------------------------------
# Example objects validated against the generated schemas (a small OpenAPI validator; CEL is
# left to the API server).


def _matches(pattern: str, value: str) -> bool:
    # Go's RE2 accepts a flag group after `^`; Python wants global flags first.
    if pattern.startswith("^(?i)"):
        pattern = "(?i)^" + pattern[len("^(?i)") :]
    return re.search(pattern, value) is not None


def validate(node: dict[str, Any], value: Any, path: str = "") -> list[str]:
    errors: list[str] = []
    if node.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, int | str):
            return [f"{path}: must be an integer or a string"]
        if isinstance(value, str) and "pattern" in node and not _matches(node["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {node['pattern']}")
        return errors
    kind: str = node.get("type", "")
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    }
    if kind == "string" and node.get("format") == "date-time" and isinstance(value, datetime.datetime):
        return errors  # PyYAML already parsed the timestamp
    if not checks[kind](value):
        return [f"{path}: expected {kind}, got {type(value).__name__}"]
    if "enum" in node and value not in node["enum"]:
        errors.append(f"{path}: Unsupported value: {value!r}")
    if kind == "string":
        if "pattern" in node and not _matches(node["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {node['pattern']}")
        if len(value) > node.get("maxLength", len(value)) or len(value) < node.get("minLength", 0):
            errors.append(f"{path}: bad length")
    if kind == "integer" and not node.get("minimum", value) <= value <= node.get("maximum", value):
        errors.append(f"{path}: out of range")
    if kind == "array":
        if not node.get("minItems", 0) <= len(value) <= node.get("maxItems", len(value)):
            errors.append(f"{path}: bad number of items")
        keys = node.get("x-kubernetes-list-map-keys")
        seen = set()
        for i, item in enumerate(value):
            errors += validate(node["items"], item, f"{path}[{i}]")
            if keys and isinstance(item, dict):
                key = tuple(item.get(k, node["items"]["properties"][k].get("default")) for k in keys)
                if key in seen:
                    errors.append(f"{path}[{i}]: Duplicate value: {key}")
                seen.add(key)
    if kind == "object":
        if "properties" not in node and "additionalProperties" not in node:
            return errors  # metadata: validated by the API server itself
        for name in node.get("required", []):
            if name not in value:
                errors.append(f"{path}.{name}: Required value")
        for name, child in value.items():
            if name in node.get("properties", {}):
                errors += validate(node["properties"][name], child, f"{path}.{name}")
            elif "additionalProperties" in node:
                errors += validate(node["additionalProperties"], child, f"{path}.{name}")
            else:
                errors.append(f"{path}.{name}: unknown field")
    return errors


# Shapes from upstream's site/static/examples (quick start, admin) and the shared seed pages.
EXAMPLES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec:
  nodeLabels: {instance-type: spot}
  tolerations:
  - {key: spot-taint, operator: Exists, effect: NoSchedule}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 9}
      - {name: memory, nominalQuota: 36Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: batch-inference}
spec:
  cohort: inference-pool
  flavorFungibility: {whenCanBorrow: Borrow, whenCanPreempt: Preempt}
  admissionChecks: [prov]
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100-ondemand
      resources: [{name: nvidia.com/gpu, nominalQuota: "8", borrowingLimit: "8", lendingLimit: "4"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: user-queue}
spec: {clusterQueue: cluster-queue}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: research-pool}
spec:
  parentName: root
  fairSharing: {weight: "0.5"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: sample-priority}
value: 10000
description: "Sample priority"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prov-config}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: job-sample-abcde, namespace: default}
spec:
  queueName: user-queue
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: sample-priority}
  priority: 10000
  podSets:
  - name: main
    count: 3
    template:
      metadata:
        labels: {app: sample}
      spec:
        restartPolicy: Never
        containers:
        - name: dummy-job
          image: registry.k8s.io/e2e-test-images/agnhost:2.53
          args: ["entrypoint-tester", "hello", "world"]
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /healthz, port: http}}
          resources:
            requests: {cpu: "1", memory: 200Mi}
status:
  conditions:
  - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: ok,
     lastTransitionTime: "2025-01-01T00:00:00Z"}
  admission:
    clusterQueue: cluster-queue
    podSetAssignments:
    - name: main
      count: 3
      flavors: {cpu: default-flavor, memory: default-flavor}
      resourceUsage: {cpu: "3", memory: 600Mi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: gpu-capacity}
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
  parameters: {ValidUntilSeconds: "300"}
  podSetMergePolicy: IdenticalWorkloadSchedulingRequirements
  retryStrategy: {backoffLimitCount: 2, backoffBaseSeconds: 30, backoffMaxSeconds: 600}
  podSetUpdates:
    nodeSelector:
    - {key: example.com/reservation, valueFromProvisioningClassDetail: reservationName}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ProvisioningRequestConfig
metadata: {name: gpu-capacity-old}
spec:
  provisioningClassName: queued-provisioning.gke.io
  managedResources: [nvidia.com/gpu]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: datacenter}
spec:
  levels:
  - nodeLabel: example.com/topology-block
  - nodeLabel: example.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: two-workers}
spec:
  clusters: [worker-a, worker-b]
  quotaManagement: Manual
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: worker-a}
spec:
  clusterSource:
    kubeConfig: {locationType: Secret, location: worker-a-kubeconfig}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: worker-b}
spec:
  clusterSource:
    clusterProfileRef: {name: worker-b-profile}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: worker-c}
spec:
  kubeConfig: {locationType: Path, location: /etc/kueue/worker-c.kubeconfig}
"""


@pytest.mark.parametrize("example", list(yaml.safe_load_all(EXAMPLES)), ids=lambda e: f"{e['kind']}/{e['apiVersion']}")
def test_examples_validate(definitions, example):
    version = example["apiVersion"].split("/")[1]
    assert validate(_version_schema(definitions, example["kind"], version), example) == []


@pytest.mark.parametrize(
    ("kind", "version", "obj", "error"),
    [
        pytest.param(
            "ClusterQueue",
            "v1beta2",
            {"spec": {"queueingStrategy": "FIFO"}},
            ".spec.queueingStrategy: Unsupported value: 'FIFO'",
            id="unknown queueing strategy",
        ),
        pytest.param(
            "ClusterQueue",
            "v1beta2",
            {"spec": {"flavorFungibility": {"whenCanBorrow": "Borrow"}}},
            ".spec.flavorFungibility.whenCanBorrow: Unsupported value: 'Borrow'",
            id="v1beta1-only fungibility value",
        ),
        pytest.param(
            "ClusterQueue",
            "v1beta2",
            {
                "spec": {
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": "f", "resources": [{"name": "cpu"}]}],
                        }
                    ]
                }
            },
            ".spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Required value",
            id="missing nominal quota",
        ),
        pytest.param(
            "ClusterQueue",
            "v1beta2",
            {
                "spec": {
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1x"}]}],
                        }
                    ]
                }
            },
            ".spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: '1x' does not match",
            id="bad quantity",
        ),
        pytest.param(
            "LocalQueue",
            "v1beta2",
            {"spec": {"clusterQueue": "Bad_Name"}},
            ".spec.clusterQueue: 'Bad_Name' does not match",
            id="cluster queue name not a DNS subdomain",
        ),
        pytest.param(
            "Workload",
            "v1beta2",
            {"spec": {"podSets": [{"name": "a", "template": {"spec": {"containers": []}}, "count": -1}]}},
            ".spec.podSets[0].count: out of range",
            id="negative count",
        ),
        pytest.param(
            "Workload",
            "v1beta2",
            {"spec": {"podSets": [{"name": "a", "template": {"spec": {}}}]}},
            ".spec.podSets[0].template.spec.containers: Required value",
            id="pod spec without containers",
        ),
        pytest.param(
            "Workload",
            "v1beta2",
            {
                "spec": {
                    "podSets": [{"name": "a", "template": {"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}}]
                }
            },
            "Duplicate value: ('c',)",
            id="duplicate container names",
        ),
        pytest.param(
            "WorkloadPriorityClass",
            "v1beta2",
            {"description": "x"},
            ".value: Required value",
            id="priority class without value",
        ),
        pytest.param(
            "Topology",
            "v1beta2",
            {"spec": {"levels": []}},
            ".spec.levels: bad number of items",
            id="topology without levels",
        ),
        pytest.param(
            "Topology",
            "v1beta2",
            {"spec": {"levels": [{"nodeLabel": f"example.com/level-{i}"} for i in range(17)]}},
            ".spec.levels: bad number of items",
            id="topology deeper than 16 levels",
        ),
        pytest.param(
            "Topology",
            "v1beta2",
            {"spec": {"levels": [{"nodeLabel": "not a label"}]}},
            ".spec.levels[0].nodeLabel: 'not a label' does not match",
            id="topology level not a label key",
        ),
        pytest.param(
            "ProvisioningRequestConfig",
            "v1beta2",
            {"spec": {"managedResources": ["nvidia.com/gpu"]}},
            ".spec.provisioningClassName: Required value",
            id="provisioning class missing",
        ),
        pytest.param(
            "ProvisioningRequestConfig",
            "v1beta2",
            {"spec": {"provisioningClassName": "c", "podSetMergePolicy": "Merge"}},
            ".spec.podSetMergePolicy: Unsupported value: 'Merge'",
            id="unknown pod set merge policy",
        ),
        pytest.param(
            "ProvisioningRequestConfig",
            "v1beta2",
            {
                "spec": {
                    "provisioningClassName": "c",
                    "podSetUpdates": {
                        "nodeSelector": [
                            {"key": "k", "valueFromProvisioningClassDetail": "a"},
                            {"key": "k", "valueFromProvisioningClassDetail": "b"},
                        ]
                    },
                }
            },
            ".spec.podSetUpdates.nodeSelector[1]: Duplicate value: ('k',)",
            id="node selector key twice",
        ),
        pytest.param(
            "MultiKueueConfig",
            "v1beta2",
            {"spec": {"clusters": []}},
            ".spec.clusters: bad number of items",
            id="multikueue config without clusters",
        ),
        pytest.param(
            "MultiKueueConfig",
            "v1beta2",
            {"spec": {"clusters": ["a"], "quotaManagement": "Auto"}},
            ".spec.quotaManagement: Unsupported value: 'Auto'",
            id="unknown quota management",
        ),
        pytest.param(
            "MultiKueueConfig",
            "v1beta1",
            {"spec": {"clusters": ["a"], "quotaManagement": "Manual"}},
            ".spec.quotaManagement: unknown field",
            id="quota management is v1beta2 only",
        ),
        pytest.param(
            "MultiKueueCluster",
            "v1beta2",
            {"spec": {"clusterSource": {"kubeConfig": {"locationType": "File", "location": "x"}}}},
            ".spec.clusterSource.kubeConfig.locationType: Unsupported value: 'File'",
            id="unknown kubeconfig location type",
        ),
        pytest.param(
            "MultiKueueCluster",
            "v1beta2",
            {"spec": {"clusterSource": {"kubeConfig": {"location": ""}}}},
            ".spec.clusterSource.kubeConfig.location: bad length",
            id="empty kubeconfig location",
        ),
        pytest.param(
            "MultiKueueCluster",
            "v1beta1",
            {"spec": {"kubeConfig": {"location": "x"}}},
            ".spec.kubeConfig.locationType: Required value",
            id="v1beta1 kubeconfig without location type",
        ),
    ],
)
def test_invalid_objects(definitions, kind, version, obj, error):
    errors = validate(_version_schema(definitions, kind, version), obj)
    assert any(error in e for e in errors), errors


# ---------------------------------------------------------------------------------------------
# CEL messages users see (the API server evaluates the rules; here we pin the messages)


def _messages(node: dict[str, Any]) -> set[str]:
    found = {v["message"] for v in node.get("x-kubernetes-validations", [])}
    for child in [*node.get("properties", {}).values(), node.get("items"), node.get("additionalProperties")]:
        if isinstance(child, dict):
            found |= _messages(child)
    return found


@pytest.mark.parametrize(
    ("kind", "messages"),
    [
        pytest.param(
            "ClusterQueue",
            {
                "borrowingLimit must be nil when cohort is empty",
                "flavors must have the same number of resources as the coveredResources",
                "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            },
            id="ClusterQueue",
        ),
        pytest.param("LocalQueue", {"field is immutable"}, id="LocalQueue"),
        pytest.param("AdmissionCheck", {"field is immutable"}, id="AdmissionCheck"),
        pytest.param(
            "Topology",
            {
                "levels are mutable only when kubernetes.io/hostname is the lowest level both before and after the change",
                "must be unique",
                "the kubernetes.io/hostname label can only be used at the lowest level of topology",
            },
            id="Topology",
        ),
        pytest.param("MultiKueueConfig", {"must be unique"}, id="MultiKueueConfig"),
        pytest.param(
            "MultiKueueCluster",
            {"exactly one of the fields in [kubeConfig clusterProfileRef] must be set"},
            id="MultiKueueCluster",
        ),
        pytest.param(
            "ResourceFlavor",
            {
                "at least one nodeLabel is required when topology is set",
                "topologyName is immutable when topologyName is set",
                "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
                "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
                "effect must be 'NoExecute' when 'tolerationSeconds' is set",
                "supported toleration values: 'Equal'(default), 'Exists'",
                "a value must be empty when 'operator' is 'Exists'",
            },
            id="ResourceFlavor",
        ),
        pytest.param(
            "Workload",
            {
                "podSetAssignments must have the same number of podSets as the spec",
                "priorityClassRef is immutable while workload quota reserved",
                "priorityClassRef.group is immutable while workload quota reserved",
                "priorityClassRef.kind is immutable while workload quota reserved",
                "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved",
                "queueName is immutable while workload quota reserved",
                "maximumExecutionTimeSeconds is immutable while workload quota reserved",
                "priority should not be nil when priorityClassRef is set",
                "minCount should be positive and less or equal to count",
                "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
                "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
                "clusterName is immutable once set",
                "clusterName and nominatedClusterNames are mutually exclusive",
            },
            id="Workload",
        ),
    ],
)
def test_cel_messages(definitions, kind, messages):
    assert messages <= _messages(_version_schema(definitions, kind, "v1beta2"))
