"""The objects of an install, built in Python so names, ports and paths come from the code.

Mirrors what upstream assembles with kustomize from `config/default` and `config/components/`
(manager, rbac, webhook, internalcert, certmanager) at kueue ff69552e79: namespace
`kueue-system`, every name prefixed `kueue-`, webhook Service 443 → 9443, the Configuration in a
ConfigMap mounted at `/controller_manager_config.yaml`. Differences, on purpose:

* 2 replicas; every replica serves webhooks, the worker runs in the Lease holder only;
* the metrics Service targets port 8443 (`metrics.bindAddress`), where the worker process of the
  Lease holder exports the `kueue_*` series over HTTPS to scrapers bound to `kueue-metrics-reader`
  (as upstream), serving the webhook's certificate (upstream: a self-signed one, or cert-manager's
  `kueue-metrics-server-cert`);
* on SIGTERM each replica fails /readyz and keeps serving for `--drain-seconds` before it closes
  its listener (`webhook.admission.shutdown`): the webhooks fail closed, and kube-proxy may still
  route to a terminating pod for a moment; terminationGracePeriodSeconds covers the drain plus
  one review's timeout;
* the cert dir is in an emptyDir at /tmp that the cert manager writes, not the Secret mounted
  as a volume, so a new certificate needs no kubelet sync (and /tmp is writable under a
  read-only root filesystem).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.admission.registration import webhook_configurations
from webhook.admission.shutdown import DEFAULT_DRAIN_S
from webhook.api import integrations
from webhook.api.schema import ServiceRef, crds
from webhook.install import rbac

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_CONFIGURATION",
    "Settings",
    "cert_manager_objects",
    "controller_objects",
    "crd_objects",
    "pod_disruption_budget",
    "prometheus_objects",
    "rbac_objects",
    "webhook_objects",
]

NAME_PREFIX = "kueue-"
SERVICE_ACCOUNT = "kueue-controller-manager"
DEPLOYMENT = "kueue-controller-manager"
WEBHOOK_SERVICE = "kueue-webhook-service"
METRICS_SERVICE = "kueue-controller-manager-metrics-service"
METRICS_PORT = 8443  # the Configuration's metrics.bindAddress, served by the worker process
SECRET = "kueue-webhook-server-cert"
CONFIG_MAP = "kueue-manager-config"
CONFIG_FILE = "controller_manager_config.yaml"
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
WEBHOOK_PORT = 9443
HEALTH_PORT = 8081  # the Configuration's health.healthProbeBindAddress: plain-HTTP probes, as upstream
WEBHOOK_TIMEOUT_S = 10  # the webhook configurations' timeoutSeconds
DRAIN_S = int(DEFAULT_DRAIN_S)
SELECTOR = {"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue"}

# The Configuration we ship: upstream's controller_manager_config.yaml restricted to the
# integrations we implement (`webhook.api.integrations`). `namespace` is left out: it is the pod's own namespace.
DEFAULT_CONFIGURATION = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
internalCertManagement:
  enable: true
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
  frameworks:
""" + "".join(f'  - "{f.name}"\n' for f in integrations.implemented() if f.feature_gate is None)


@dataclass(frozen=True, slots=True)
class Settings:
    namespace: str = "kueue-system"
    image: str = "pykueue:dev"
    pull_policy: str = "IfNotPresent"
    replicas: int = 2
    resources: dict[str, Any] = field(
        default_factory=lambda: {
            "limits": {"cpu": "2", "memory": "512Mi"},
            "requests": {"cpu": "500m", "memory": "512Mi"},
        }
    )
    configuration: str = DEFAULT_CONFIGURATION


def _meta(name: str, s: Settings, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": s.namespace}
    if labels:
        meta["labels"] = labels
    return meta


def _labels(component: str) -> dict[str, str]:
    return {**SELECTOR, "app.kubernetes.io/component": component}


def crd_objects(s: Settings) -> list[dict[str, Any]]:
    """The CRDs, converting through the webhook Service of `s.namespace` (caBundle injected later)."""
    return crds(service=ServiceRef(WEBHOOK_SERVICE, s.namespace))


def rbac_objects(s: Settings) -> list[dict[str, Any]]:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(SERVICE_ACCOUNT, s)}
    return [sa, *rbac.manager_rbac(s.namespace, SERVICE_ACCOUNT), *rbac.user_roles()]


def _probe(path: str, delay: int, period: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": HEALTH_PORT},
        "initialDelaySeconds": delay,
        "periodSeconds": period,
        "timeoutSeconds": 1,
        "failureThreshold": 3,
        "successThreshold": 1,
    }


def _deployment(s: Settings) -> dict[str, Any]:
    container = {
        "name": "manager",
        "image": s.image,
        "imagePullPolicy": s.pull_policy,
        "args": ["serve", "--in-cluster", f"--config=/{CONFIG_FILE}", f"--drain-seconds={DRAIN_S}"],
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
        "ports": [
            {"containerPort": WEBHOOK_PORT, "name": "webhook-server", "protocol": "TCP"},
            {"containerPort": METRICS_PORT, "name": "metrics", "protocol": "TCP"},
        ],
        "livenessProbe": _probe("/healthz", 15, 20),
        "readinessProbe": _probe("/readyz", 5, 10),
        "resources": s.resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "manager-config", "mountPath": f"/{CONFIG_FILE}", "subPath": CONFIG_FILE, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(DEPLOYMENT, s, **_labels("controller")),
        "spec": {
            "replicas": s.replicas,
            "selector": {"matchLabels": dict(SELECTOR)},
            "template": {
                "metadata": {
                    "labels": _labels("controller"),
                    "annotations": {"kubectl.kubernetes.io/default-container": "manager"},
                },
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    # The drain, then a review still in flight when the listener closes.
                    "terminationGracePeriodSeconds": DRAIN_S + WEBHOOK_TIMEOUT_S,
                    "containers": [container],
                    "volumes": [
                        {"name": "manager-config", "configMap": {"name": CONFIG_MAP}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                    ],
                },
            },
        },
    }


def _service(name: str, component: str, port: dict[str, Any], s: Settings) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name, s, **_labels(component)),
        "spec": {"type": "ClusterIP", "selector": dict(SELECTOR), "ports": [port]},
    }


def controller_objects(s: Settings) -> list[dict[str, Any]]:
    """Namespace, Configuration, the (empty) certificate Secret, Deployment and both Services."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.namespace, "labels": dict(SELECTOR)}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(CONFIG_MAP, s),
            "data": {CONFIG_FILE: s.configuration},
        },
        # Filled by the first replica's cert manager (upstream's internalcert component).
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": _meta(SECRET, s)},
        _deployment(s),
        _service(WEBHOOK_SERVICE, "webhook-service", {"port": 443, "protocol": "TCP", "targetPort": WEBHOOK_PORT}, s),
        _service(
            METRICS_SERVICE,
            "metrics-service",
            {"name": "https", "port": METRICS_PORT, "protocol": "TCP", "targetPort": "metrics"},
            s,
        ),
    ]


def pod_disruption_budget(s: Settings, *, min_available: int | str = 1) -> dict[str, Any]:
    """Keeps `min_available` replicas through voluntary disruptions (upstream's chart: manager-pdb.yaml)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(DEPLOYMENT, s, **_labels("controller")),
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": dict(SELECTOR)}},
    }


# -- Prometheus Operator (upstream's chart: templates/prometheus/, enablePrometheus) -----------------

SERVICE_MONITOR = "kueue-controller-manager-metrics-monitor"
PROMETHEUS_ROLE = "kueue-prometheus-k8s"
PROMETHEUS_ACCOUNTS = ("prometheus-k8s", "prometheus-operator")  # kube-prometheus' service accounts


def prometheus_objects(
    s: Settings, *, prometheus_namespace: str = "monitoring", tls_config: dict[str, Any] | str | None = None
) -> list[dict[str, Any]]:
    """A ServiceMonitor for the metrics Service's `https` port, scraped with the scraper's own token (the
    worker admits it by TokenReview and SubjectAccessReview), and a Role that lets the Prometheus
    service accounts of `prometheus_namespace` discover it. Upstream's Role also grants ingresses,
    which discovery for a ServiceMonitor never reads; ours leaves them out."""
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": _meta(SERVICE_MONITOR, s, **SELECTOR),
        "spec": {
            "selector": {"matchLabels": _labels("metrics-service")},
            "endpoints": [
                {
                    "path": "/metrics",
                    "port": "https",
                    "scheme": "https",
                    "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                    "tlsConfig": {"insecureSkipVerify": True} if tls_config is None else tls_config,
                }
            ],
        },
    }
    read = ["get", "list", "watch"]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(PROMETHEUS_ROLE, s),
        "rules": [
            {"apiGroups": [""], "resources": ["endpoints", "pods", "services"], "verbs": read},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(PROMETHEUS_ROLE, s),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": PROMETHEUS_ROLE},
        "subjects": [
            {"kind": "ServiceAccount", "name": name, "namespace": prometheus_namespace} for name in PROMETHEUS_ACCOUNTS
        ],
    }
    return [monitor, role, binding]


def webhook_objects(s: Settings) -> list[dict[str, Any]]:
    """Both webhook configurations, caBundle left out (the cert manager or cert-manager injects it)."""
    configs = webhook_configurations(
        "", service=(WEBHOOK_SERVICE, s.namespace), namespace=s.namespace, timeout_seconds=WEBHOOK_TIMEOUT_S
    )
    for cfg in configs:
        for hook in cfg["webhooks"]:
            hook["clientConfig"].pop("caBundle", None)
    return configs


# -- the cert-manager alternative ----------------------------------------------------------------

ISSUER = "kueue-selfsigned-issuer"
CERTIFICATE = "kueue-serving-cert"
INJECT_CA_FROM = "cert-manager.io/inject-ca-from"


def cert_manager_objects(s: Settings, *, cluster_domain: str = "cluster.local") -> list[dict[str, Any]]:
    """A self-signed Issuer and the serving Certificate, stored in the Secret the server reads; its
    names are the Service's, short and under `cluster_domain` (upstream chart's kubernetesClusterDomain)."""
    host = f"{WEBHOOK_SERVICE}.{s.namespace}.svc"
    return [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": _meta(ISSUER, s),
            "spec": {"selfSigned": {}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": _meta(CERTIFICATE, s),
            "spec": {
                "dnsNames": [host, f"{host}.{cluster_domain}"],
                "secretName": SECRET,
                "issuerRef": {"kind": "Issuer", "name": ISSUER},
            },
        },
    ]
