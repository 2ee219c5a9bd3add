"""The objects that make the visibility API reachable through the kube-apiserver's aggregator.

Mirrors upstream's `config/components/visibility/*` and `config/components/visibility-apf/*` (kueue
v0.19.2, with `namePrefix: kueue-`): a Service in front of the worker processes' visibility port,
one APIService per version pointing at it (and one for our `visibility.pykueue.io/v1alpha1`), a RoleBinding in kube-system that lets the server read
the front-proxy settings (`extension-apiserver-authentication-reader`), and the API priority and
fairness objects that give the group its own priority level. Besides upstream's objects, the
server's account is bound to `system:auth-delegator` (the usual grant of an aggregated API server:
TokenReviews and SubjectAccessReviews), which the metrics role grants as well today.

In a cluster the APIServices skip TLS verification, as upstream's do (the serving certificate names
the webhook Service, not this one). Where the server runs beside the API server on the host (the
local stack), `local_objects` points the aggregator at `localhost` through an ExternalName Service,
which the aggregator resolves to `<externalName>:<port>`, and pins our CA in the caBundle.
"""

from __future__ import annotations

from typing import Any

from webhook.config.types import DEFAULT_VISIBILITY_BIND_PORT
from webhook.visibility.api import GROUPS

__all__ = ["APF_NAME", "SERVICE", "apf_objects", "api_services", "auth_objects", "local_objects", "service"]

SERVICE = "kueue-visibility-server"
APF_NAME = "kueue-visibility"
AUTH_READER = "kueue-visibility-server-auth-reader"
AUTH_DELEGATOR = "kueue-visibility-server-auth-delegator"
_SELECTOR = {"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue"}
_LABELS = {
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/component": "visibility-service",
    "control-plane": "controller-manager",
}


def service(namespace: str) -> dict[str, Any]:
    """443 → the Configuration's `visibilityServer.bindPort` on every replica."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": namespace, "labels": dict(_LABELS)},
        "spec": {
            "selector": dict(_SELECTOR),
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": DEFAULT_VISIBILITY_BIND_PORT}],
        },
    }


def api_services(namespace: str, *, port: int = 443, ca_bundle: str | None = None) -> list[dict[str, Any]]:
    """Upstream's `v1beta2` and `v1beta1`, and our `v1alpha1.visibility.pykueue.io`, all to the same
    Service; without `ca_bundle` the aggregator does not verify our certificate."""
    out = []
    for group in GROUPS:
        for version in group.versions:
            spec: dict[str, Any] = {
                "group": group.name,
                "groupPriorityMinimum": 100,
                "version": version,
                "versionPriority": 100,
                "service": {"name": SERVICE, "namespace": namespace, "port": port},
            }
            if ca_bundle:
                spec["caBundle"] = ca_bundle
            else:
                spec["insecureSkipTLSVerify"] = True
            out.append(
                {
                    "apiVersion": "apiregistration.k8s.io/v1",
                    "kind": "APIService",
                    "metadata": {"name": f"{version}.{group.name}", "labels": dict(_LABELS)},
                    "spec": spec,
                }
            )
    return out


def auth_objects(namespace: str, service_account: str) -> list[dict[str, Any]]:
    """What an aggregated API server's account needs: the front-proxy settings, and delegated reviews."""
    subject = [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": AUTH_READER, "namespace": "kube-system", "labels": dict(_LABELS)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": subject,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": AUTH_DELEGATOR, "labels": dict(_LABELS)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:auth-delegator",
            },
            "subjects": subject,
        },
    ]


def apf_objects() -> list[dict[str, Any]]:
    """A priority level of its own for the groups, so heavy visibility reads queue among themselves
    (upstream's `visibility-apf` component: 10 shares, 90% lendable, 16 queues of 50; our group shares it)."""
    return [
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": APF_NAME, "labels": dict(_LABELS)},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 10,
                    "lendablePercent": 90,
                    "limitResponse": {
                        "type": "Queue",
                        "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 50},
                    },
                },
            },
        },
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": APF_NAME, "labels": dict(_LABELS)},
            "spec": {
                "priorityLevelConfiguration": {"name": APF_NAME},
                "matchingPrecedence": 9000,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "resourceRules": [
                            {
                                "apiGroups": [g.name for g in GROUPS],
                                "clusterScope": True,
                                "namespaces": ["*"],
                                "resources": ["*"],
                                "verbs": ["*"],
                            }
                        ],
                        "subjects": [
                            {"kind": "Group", "group": {"name": "system:unauthenticated"}},
                            {"kind": "Group", "group": {"name": "system:authenticated"}},
                        ],
                    }
                ],
            },
        },
    ]


def local_objects(namespace: str, *, port: int, ca_bundle: str, host: str = "localhost") -> list[dict[str, Any]]:
    """The Service and APIServices for a server on the API server's host, listening on `port`."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": namespace, "labels": dict(_LABELS)},
        "spec": {
            "type": "ExternalName",
            "externalName": host,
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        },
    }
    return [svc, *api_services(namespace, port=port, ca_bundle=ca_bundle)]
