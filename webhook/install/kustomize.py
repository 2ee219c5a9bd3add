"""The kustomize tree under manifests/: generated files, path → text.

    manifests/crds/          CRDs (webhook/api/schema.py writes these)
    manifests/rbac/          service account, the manager's roles, the user-facing roles
    manifests/manager/       namespace, Configuration ConfigMap, certificate Secret, Deployment, Services
    manifests/webhook/       Mutating/ValidatingWebhookConfiguration
    manifests/default/       all of the above, internal certificate management (`make deploy`)
    manifests/cert-manager/  the same with cert-manager issuing the certificate and injecting the CA

Upstream's counterparts are `config/default` and `config/components/*` (kueue ff69552e79).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from webhook.api.schema import dump
from webhook.certmanager import conversion_crd_names
from webhook.install import dashboard, rbac, visibility
from webhook.install import objects as o

__all__ = ["documents", "render"]


def documents(items: Sequence[dict[str, Any]]) -> str:
    """Several objects as one multi-document YAML file."""
    return "".join(dump(item) for item in items)


def _kustomization(resources: Sequence[str], **extra: Any) -> str:
    return dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": list(resources),
            **extra,
        }
    )


def _patch(target: dict[str, str], patch: dict[str, Any]) -> dict[str, Any]:
    return {"target": target, "patch": dump(patch).removeprefix("---\n")}


def _cert_manager_patches(s: o.Settings) -> list[dict[str, Any]]:
    inject = {o.INJECT_CA_FROM: f"{s.namespace}/{o.CERTIFICATE}"}
    patches = []
    for kind, name in (
        ("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration"),
        ("ValidatingWebhookConfiguration", "kueue-validating-webhook-configuration"),
    ):
        patches.append(
            _patch(
                {"kind": kind, "name": name},
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": kind,
                    "metadata": {"name": name, "annotations": inject},
                },
            )
        )
    for name in conversion_crd_names():
        patches.append(
            _patch(
                {"kind": "CustomResourceDefinition", "name": name},
                {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": name, "annotations": inject},
                },
            )
        )
    # cert-manager owns the Secret now; the internal cert manager and its permissions go.
    for kind, name in (
        ("Secret", o.SECRET),
        ("Role", "kueue-manager-secrets-role"),
        ("RoleBinding", "kueue-manager-secrets-rolebinding"),
        ("ClusterRole", "kueue-manager-cert-role"),
        ("ClusterRoleBinding", "kueue-manager-cert-rolebinding"),
    ):
        meta: dict[str, Any] = {"name": name}
        if kind in ("Secret", "Role", "RoleBinding"):
            meta["namespace"] = s.namespace
        version = "v1" if kind == "Secret" else "rbac.authorization.k8s.io/v1"
        patches.append(
            _patch(
                {"kind": kind, "name": name},
                {"$patch": "delete", "apiVersion": version, "kind": kind, "metadata": meta},
            )
        )
    config = s.configuration.replace(
        "internalCertManagement:\n  enable: true\n", "internalCertManagement:\n  enable: false\n"
    )
    patches.append(
        _patch(
            {"kind": "ConfigMap", "name": o.CONFIG_MAP},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": o.CONFIG_MAP, "namespace": s.namespace},
                "data": {o.CONFIG_FILE: config},
            },
        )
    )
    patches.append(
        _patch(
            {"kind": "Deployment", "name": o.DEPLOYMENT},
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": o.DEPLOYMENT, "namespace": s.namespace},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "manager",
                                    "volumeMounts": [{"name": "cert", "mountPath": o.CERT_DIR, "readOnly": True}],
                                }
                            ],
                            "volumes": [{"name": "cert", "secret": {"secretName": o.SECRET, "defaultMode": 0o444}}],
                        }
                    }
                },
            },
        )
    )
    return patches


def render(s: o.Settings | None = None) -> dict[str, str]:
    """Path (relative to manifests/) → content, for everything but manifests/crds."""
    s = s or o.Settings()
    service_account = o.rbac_objects(s)[:1]
    manager_roles = rbac.manager_rbac(s.namespace, o.SERVICE_ACCOUNT)
    user_roles = rbac.user_roles()
    controller = o.controller_objects(s)
    files = {
        "rbac/service_account.yaml": documents(service_account),
        "rbac/manager_roles.yaml": documents(manager_roles),
        "rbac/user_roles.yaml": documents(user_roles),
        "rbac/kustomization.yaml": _kustomization(["service_account.yaml", "manager_roles.yaml", "user_roles.yaml"]),
        "manager/namespace.yaml": documents(controller[:1]),
        "manager/config.yaml": documents(controller[1:2]),
        "manager/secret.yaml": documents(controller[2:3]),
        "manager/deployment.yaml": documents(controller[3:4]),
        "manager/services.yaml": documents(controller[4:]),
        "manager/kustomization.yaml": _kustomization(
            ["namespace.yaml", "config.yaml", "secret.yaml", "deployment.yaml", "services.yaml"]
        ),
        "webhook/webhook_configurations.yaml": documents(o.webhook_objects(s)),
        "webhook/kustomization.yaml": _kustomization(["webhook_configurations.yaml"]),
        "visibility/visibility.yaml": documents(
            [
                visibility.service(s.namespace),
                *visibility.api_services(s.namespace),
                *visibility.auth_objects(s.namespace, o.SERVICE_ACCOUNT),
            ]
        ),
        "visibility/kustomization.yaml": _kustomization(["visibility.yaml"]),
        "dashboard/dashboard.yaml": documents(dashboard.objects(s.namespace, image=s.image, pull_policy=s.pull_policy)),
        "dashboard/kustomization.yaml": _kustomization(["dashboard.yaml"]),
        "visibility-apf/apf.yaml": documents(visibility.apf_objects()),
        "visibility-apf/kustomization.yaml": _kustomization(["apf.yaml"]),
        "default/kustomization.yaml": _kustomization(
            ["../crds", "../rbac", "../manager", "../webhook", "../visibility"]
        ),
        "cert-manager/certificate.yaml": documents(o.cert_manager_objects(s)),
        "cert-manager/kustomization.yaml": _kustomization(
            ["../crds", "../rbac", "../manager", "../webhook", "../visibility", "certificate.yaml"],
            patches=_cert_manager_patches(s),
        ),
    }
    return files
