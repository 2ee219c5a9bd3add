"""Deploy our image into a cluster whose pods can run it (kind, or a real cluster): `make e2e-kind`.

A minimal install: namespace, service account and RBAC, serving certificate Secret (made here
with `certs`), Deployment, Service, CRDs converting through the Service, and the webhook
configurations. The full, least-privilege install with kustomize and Helm is issue 6.

    KUBECONFIG=... python e2e/deploy.py --image pykueue:dev
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import certs  # noqa: E402
from webhook.admission.registration import webhook_configurations  # noqa: E402
from webhook.api.schema import crds  # noqa: E402

NAMESPACE = "kueue-system"
SERVICE = "kueue-webhook-service"
CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
integrations:
  frameworks: ["batch/job", "pod"]
"""


def objects(image: str, cert_dir: Path) -> list[dict[str, Any]]:
    ca = certs.ca_bundle(cert_dir)
    labels = {"app.kubernetes.io/name": "pykueue", "control-plane": "controller-manager"}
    secret = {k: base64.b64encode((cert_dir / k).read_bytes()).decode() for k in ("tls.crt", "tls.key", "ca.crt")}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        *crds(ca, url=None),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kueue-controller-manager", "namespace": NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kueue-manager-role"},
         "rules": [
             {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get"]},
             {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues", "workloadpriorityclasses"],
              "verbs": ["get", "list", "watch"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "kueue-manager-rolebinding"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kueue-manager-role"},
         "subjects": [{"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": NAMESPACE}]},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert", "namespace": NAMESPACE},
         "type": "kubernetes.io/tls", "data": secret},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config", "namespace": NAMESPACE},
         "data": {"controller_manager_config.yaml": CONFIG}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "kueue-controller-manager", "namespace": NAMESPACE, "labels": labels},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {
                 "serviceAccountName": "kueue-controller-manager",
                 "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                 "containers": [{
                     "name": "manager", "image": image, "imagePullPolicy": "IfNotPresent",
                     "args": ["serve", "--in-cluster", "--cert-dir", "/certs", "--config", "/config/controller_manager_config.yaml"],
                     "ports": [{"containerPort": 9443, "name": "webhook-server"}],
                     "readinessProbe": {"httpGet": {"path": "/readyz", "port": 9443, "scheme": "HTTPS"}},
                     "livenessProbe": {"httpGet": {"path": "/healthz", "port": 9443, "scheme": "HTTPS"}},
                     "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                         "capabilities": {"drop": ["ALL"]}},
                     "volumeMounts": [{"name": "cert", "mountPath": "/certs", "readOnly": True},
                                      {"name": "config", "mountPath": "/config", "readOnly": True}],
                 }],
                 "volumes": [{"name": "cert", "secret": {"secretName": "kueue-webhook-server-cert"}},
                             {"name": "config", "configMap": {"name": "kueue-manager-config"}}],
             }}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVICE, "namespace": NAMESPACE},
         "spec": {"selector": labels, "ports": [{"port": 443, "targetPort": 9443}]}},
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", required=True)
    parser.add_argument("--kubectl", default="kubectl")
    args = parser.parse_args()

    def kubectl(*a: str, input: str | None = None) -> None:
        subprocess.run([args.kubectl, *a], input=input, text=True, check=True)

    with tempfile.TemporaryDirectory() as d:
        cert_dir = Path(d)
        certs.write_bundle(cert_dir, [f"{SERVICE}.{NAMESPACE}.svc", f"{SERVICE}.{NAMESPACE}.svc.cluster.local"])
        items = objects(args.image, cert_dir)
        hooks = webhook_configurations(certs.ca_bundle(cert_dir), service=(SERVICE, NAMESPACE))
    kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    kubectl("-n", NAMESPACE, "rollout", "status", "deployment/kueue-controller-manager", "--timeout=180s")
    kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": hooks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
