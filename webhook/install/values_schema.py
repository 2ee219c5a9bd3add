"""charts/pykueue/values.schema.json: every value the chart reads, so Helm refuses any other.

Kueue's chart (charts/kueue, v0.19.2) ships no schema, so a misspelt or unsupported key is dropped
without a word. Here every object whose keys the chart knows is closed (`additionalProperties:
false`); a Kubernetes object passed through whole (resources, security contexts, tolerations, ...)
takes its keys from the same `core/v1` schema the Workload CRD embeds (`webhook.api.schema_pod`), so
a typo there fails too. Upstream values the chart does not implement are listed with their
upstream type and refused by templates/refused.yaml with the reason (`chart.REFUSED`).
"""

from __future__ import annotations

from typing import Any

from webhook.api import schema_types as t
from webhook.api.schema_pod import pod_template_schema
from webhook.config import FEATURE_GATE_DEFAULTS

__all__ = ["REFUSED", "values_schema"]

Schema = dict[str, Any]


def _closed(properties: dict[str, Schema], *, required: tuple[str, ...] = (), desc: str | None = None) -> Schema:
    out: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    if desc:
        out["description"] = desc
    return out


def _json_schema(openapi: Any) -> Any:
    """An OpenAPI v3 structural schema as JSON Schema: Kubernetes extensions and descriptions dropped,
    and every object with listed properties closed."""
    if isinstance(openapi, list):
        return [_json_schema(x) for x in openapi]
    if not isinstance(openapi, dict):
        return openapi
    out = {
        k: (v if k in ("required", "enum") else _json_schema(v))
        for k, v in openapi.items()
        if not k.startswith("x-kubernetes-") and k != "description"
    }
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _kube() -> dict[str, Schema]:
    """The core/v1 pieces the chart passes through to the manager's pod, as JSON Schema."""
    spec = pod_template_schema()["properties"]["spec"]["properties"]
    container = spec["containers"]["items"]["properties"]
    return {
        name: _json_schema(s)
        for name, s in {
            "resources": container["resources"],
            "containerSecurityContext": container["securityContext"],
            "podSecurityContext": spec["securityContext"],
            "imagePullSecrets": spec["imagePullSecrets"],
            "nodeSelector": spec["nodeSelector"],
            "tolerations": spec["tolerations"],
            "topologySpreadConstraints": spec["topologySpreadConstraints"],
        }.items()
    }


_FIXED_NAMES = (
    "object names are fixed (kueue-*): RBAC resourceNames, the webhook Service's DNS name and the internal "
    "certificate depend on them"
)
# Upstream values the chart does not implement: name → (upstream type, why). The schema admits each
# with that type, so that templates/refused.yaml can stop the install with the reason when it is set
# (a bare "additional properties not allowed" would not say what to do instead).
REFUSED: dict[str, tuple[str, str]] = {
    "nameOverride": ("string", _FIXED_NAMES),
    "fullnameOverride": ("string", _FIXED_NAMES),
    "enableMutatingAdmissionPolicy": (
        "boolean",
        "its policy clears MultiKueue's status.nominatedClusterNames, and pykueue has no MultiKueue "
        "(nothing sets that field)",
    ),
    "kueueViz": (
        "object",
        "upstream's KueueViz images are not shipped; set enableKueueViz: true for pykueue's own dashboard "
        "(same image as the manager)",
    ),
}

_STRING_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}
_INT_OR_STRING: Schema = {"anyOf": [{"type": "integer"}, {"type": "string"}]}


def _enum(*values: str) -> Schema:
    return {"type": "string", "enum": list(values)}


def _probe() -> Schema:
    """The probe timings the chart sets on its own httpGet probe (upstream's five)."""
    keys = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "failureThreshold", "successThreshold")
    return _closed({k: {"type": "integer", "minimum": 0} for k in keys})


def _service_ports() -> Schema:
    """core/v1 ServicePort."""
    return {
        "type": "array",
        "items": _closed(
            {
                "name": {"type": "string"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "protocol": _enum("TCP", "UDP", "SCTP"),
                "targetPort": _INT_OR_STRING,
                "nodePort": {"type": "integer"},
                "appProtocol": {"type": "string"},
            },
            required=("port",),
        ),
    }


def _service_type() -> Schema:
    return _enum("ClusterIP", "NodePort", "LoadBalancer")


# zap's level names (any case), or an integer > 0, as the manager's --zap-log-level takes them.
_ZAP_NAME = "|".join("".join(f"[{c.upper()}{c}]" for c in name) for name in ("debug", "info", "error", "panic"))


def values_schema() -> Schema:
    kube = _kube()
    manager = _closed(
        {
            "image": _closed(
                {
                    "repository": {"type": "string"},
                    "tag": {"type": "string"},
                    "pullPolicy": _enum("Always", "IfNotPresent", "Never"),
                }
            ),
            "resources": kube["resources"],
            "podSecurityContext": kube["podSecurityContext"],
            "containerSecurityContext": kube["containerSecurityContext"],
            "podAnnotations": _STRING_MAP,
            "priorityClassName": {"type": ["string", "null"]},
            "logLevel": {
                "description": "--zap-log-level: debug, info, error, panic, or N > 0 for verbosity V(N)",
                "type": ["integer", "string"],
                "minimum": 1,
                "pattern": f"^({_ZAP_NAME}|[+]?[0-9]*[1-9][0-9]*)$",
            },
        }
    )
    feature_gate = _closed(
        {"name": {"type": "string", "enum": sorted(FEATURE_GATE_DEFAULTS)}, "enabled": {"type": "boolean"}},
        required=("name", "enabled"),
    )
    controller_manager = _closed(
        {
            "replicas": {"type": "integer", "minimum": 0},
            "featureGates": {
                "description": "the manager's --feature-gates; naming gates in managerConfig's featureGates too "
                "stops the manager, as upstream's",
                "type": "array",
                "items": feature_gate,
            },
            "strategy": _closed(
                {
                    "type": _enum("RollingUpdate", "Recreate"),
                    "rollingUpdate": _closed({"maxSurge": _INT_OR_STRING, "maxUnavailable": _INT_OR_STRING}),
                },
                desc="apps/v1 DeploymentStrategy of the manager",
            ),
            "hostNetwork": {"type": "boolean"},
            "dnsPolicy": _enum("", "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
            "manager": manager,
            "imagePullSecrets": kube["imagePullSecrets"],
            "readinessProbe": _probe(),
            "livenessProbe": _probe(),
            "nodeSelector": kube["nodeSelector"],
            "tolerations": kube["tolerations"],
            "topologySpreadConstraints": kube["topologySpreadConstraints"],
            "podDisruptionBudget": _closed({"enabled": {"type": "boolean"}, "minAvailable": _INT_OR_STRING}),
        }
    )
    tls_config = _closed(  # prometheus-operator's SafeTLSConfig and TLSConfig
        {
            "ca": {"type": "object"},
            "caFile": {"type": "string"},
            "cert": {"type": "object"},
            "certFile": {"type": "string"},
            "insecureSkipVerify": {"type": "boolean"},
            "keyFile": {"type": "string"},
            "keySecret": {"type": "object"},
            "serverName": {"type": "string"},
            "minVersion": {"type": "string"},
            "maxVersion": {"type": "string"},
        }
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pykueue chart values",
        **_closed(
            {
                "enableCertManager": {"type": "boolean"},
                "enablePrometheus": {"type": "boolean"},
                "enableVisibilityAPF": {"type": "boolean"},
                "enableKueueViz": {"type": "boolean", "description": "pykueue's dashboard"},
                "enableVisibilityAuthReaderRoleBinding": {"type": "boolean"},
                "kubernetesClusterDomain": {"type": "string", "pattern": t.DNS1123_SUBDOMAIN},
                "certManager": _closed(
                    {
                        "issuerRef": {
                            **_closed(
                                {"name": {"type": "string"}, "kind": {"type": "string"}, "group": {"type": "string"}}
                            ),
                            "dependentRequired": {"kind": ["name"], "group": ["name"]},
                        }
                    }
                ),
                "controllerManager": controller_manager,
                "managerConfig": _closed({"controllerManagerConfigYaml": {"type": "string"}}),
                "metrics": _closed(
                    {
                        "prometheusNamespace": {"type": "string"},
                        "serviceMonitor": _closed({"tlsConfig": tls_config}),
                        "prometheusRule": _closed({"enabled": {"type": "boolean"}, "labels": _STRING_MAP}),
                        "grafanaDashboard": _closed({"enabled": {"type": "boolean"}, "labels": _STRING_MAP}),
                    }
                ),
                "metricsService": _closed(
                    {
                        "type": _service_type(),
                        "labels": _STRING_MAP,
                        "annotations": _STRING_MAP,
                        "ports": _service_ports(),
                    }
                ),
                "webhookService": _closed(
                    {
                        "type": _service_type(),
                        "ports": _service_ports(),
                        "waitUntilReachable": {"type": "boolean"},
                        "ipDualStack": _closed(
                            {
                                "enabled": {"type": "boolean"},
                                "ipFamilies": {
                                    "type": "array",
                                    "items": _enum("IPv4", "IPv6"),
                                    "minItems": 1,
                                    "maxItems": 2,
                                    "uniqueItems": True,
                                },
                                "ipFamilyPolicy": _enum("SingleStack", "PreferDualStack", "RequireDualStack"),
                            }
                        ),
                    }
                ),
                "mutatingWebhook": _closed({"reinvocationPolicy": _enum("Never", "IfNeeded")}),
                **{key: {"type": kind, "description": f"not supported: {why}"} for key, (kind, why) in REFUSED.items()},
            }
        ),
    }
