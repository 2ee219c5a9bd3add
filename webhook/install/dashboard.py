"""The dashboard's Deployment, Service, ServiceAccount and RBAC (upstream's KueueViz, `enableKueueViz`).

Optional, as upstream's is: `manifests/dashboard` is not part of the default overlay, and the chart
renders it only with `enableKueueViz: true`. It runs under its own ServiceAccount with the
`dashboard` entries of the access table (read-only, plus token and access reviews), never the
manager's. It serves HTTPS with a certificate it makes for its Service's names (sign-in tokens
never cross the network in clear) and takes only tokens bound to its audience: reach it with
`kubectl port-forward`, sign in with `kubectl create token <sa> --audience=kueue-dashboard`.

It reads no Pod or Event cluster-wide: `kueue-dashboard-details-role` (list Pods and Events) comes
unbound, and a namespace that wants its Workloads' Pods and Events on their pages binds it:
`kubectl create rolebinding kueue-dashboard-details -n <ns> --clusterrole=kueue-dashboard-details-role
--serviceaccount=<kueue namespace>:kueue-dashboard`.
"""

from __future__ import annotations

from typing import Any

from webhook.install import rbac

__all__ = ["DETAILS_ROLE", "NAME", "PORT", "objects"]

NAME = "kueue-dashboard"
DETAILS_ROLE = f"{NAME}-details-role"
PORT = 8080
_LABELS = {"app.kubernetes.io/name": "kueue", "app.kubernetes.io/component": "dashboard"}


def objects(namespace: str, *, image: str, pull_policy: str) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole + binding, Deployment, Service, and the unbound details ClusterRole."""
    meta = {"name": NAME, "namespace": namespace, "labels": dict(_LABELS)}
    container = {
        "name": "dashboard",
        "image": image,
        "imagePullPolicy": pull_policy,
        "args": [
            "dashboard",
            "--in-cluster",
            f"--port={PORT}",
            f"--tls-host={NAME}.{namespace}.svc",
            f"--tls-host={NAME}.{namespace}.svc.cluster.local",
        ],
        "ports": [{"containerPort": PORT, "name": "https", "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": PORT, "scheme": "HTTPS"}, "periodSeconds": 10},
        "resources": {"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{NAME}-role"},
            "rules": rbac.rules(a for a in rbac.manager_access() if a.role == "dashboard"),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{NAME}-rolebinding"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{NAME}-role"},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": dict(_LABELS)},
                "template": {
                    "metadata": {"labels": dict(_LABELS)},
                    "spec": {
                        "serviceAccountName": NAME,
                        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [container],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "type": "ClusterIP",
                "selector": dict(_LABELS),
                "ports": [{"name": "https", "port": PORT, "protocol": "TCP", "targetPort": "https"}],
            },
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": DETAILS_ROLE, "labels": dict(_LABELS)},
            "rules": rbac.rules(a for a in rbac.manager_access() if a.role == "dashboard-details"),
        },
    ]
