"""Mutating/ValidatingWebhookConfigurations generated from the app's endpoint table.

Names, paths, rules, failurePolicy and namespaceSelector as upstream's
`config/components/webhook/manifests.yaml`: the Job and Pod webhooks never see
kube-system or our own namespace; the Kueue CRD webhooks see everything.
"""

from __future__ import annotations

from typing import Any

from webhook.admission.app import Endpoint, endpoints

__all__ = ["MUTATING_NAME", "VALIDATING_NAME", "webhook_configurations"]

MUTATING_NAME = "kueue-mutating-webhook-configuration"
VALIDATING_NAME = "kueue-validating-webhook-configuration"


def _client_config(
    endpoint: Endpoint, ca_bundle: str, url: str | None, service: tuple[str, str] | None
) -> dict[str, Any]:
    cfg: dict[str, Any] = {"caBundle": ca_bundle}
    if url is not None:
        cfg["url"] = url.rstrip("/") + endpoint.path
    else:
        name, namespace = service or ("kueue-webhook-service", "kueue-system")
        cfg["service"] = {"name": name, "namespace": namespace, "path": endpoint.path, "port": 443}
    return cfg


def _webhook(
    endpoint: Endpoint,
    ca_bundle: str,
    url: str | None,
    service: tuple[str, str] | None,
    namespace: str,
    timeout_seconds: int,
) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": endpoint.name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": _client_config(endpoint, ca_bundle, url, service),
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "timeoutSeconds": timeout_seconds,
        "rules": [
            {
                "apiGroups": [endpoint.group],
                "apiVersions": [endpoint.version],
                "operations": list(endpoint.operations),
                "resources": list(endpoint.resources),
            }
        ],
    }
    if endpoint.integration is not None:
        hook["namespaceSelector"] = {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", namespace]}
            ]
        }
    if endpoint.mutating:
        hook["reinvocationPolicy"] = "Never"
    return hook


def webhook_configurations(
    ca_bundle: str,
    *,
    url: str | None = None,
    service: tuple[str, str] | None = None,
    namespace: str = "kueue-system",
    timeout_seconds: int = 10,
) -> list[dict[str, Any]]:
    """The two configurations, pointing at `url` (a host process) or at a Service (`name`, `namespace`)."""

    def build(mutating: bool) -> list[dict[str, Any]]:
        return [
            _webhook(e, ca_bundle, url, service, namespace, timeout_seconds)
            for e in endpoints()
            if e.mutating == mutating
        ]

    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": MUTATING_NAME},
            "webhooks": build(True),
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": VALIDATING_NAME},
            "webhooks": build(False),
        },
    ]
