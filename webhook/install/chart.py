"""The Helm chart charts/pykueue, generated from the same objects as manifests/.

Values keep the names of Kueue's chart (`charts/kueue/values.yaml`, kueue ff69552e79) where they
overlap: `controllerManager.replicas`, `.manager.image.{repository,tag,pullPolicy}`,
`.manager.resources`, `.manager.podSecurityContext`, `.manager.containerSecurityContext`,
`.imagePullSecrets`, `.readinessProbe`, `.livenessProbe`, `.nodeSelector`, `.tolerations`,
`.topologySpreadConstraints`, `.podDisruptionBudget`, `managerConfig.controllerManagerConfigYaml`,
`enableCertManager`, `enablePrometheus` (with `metrics.prometheusNamespace` and
`metrics.serviceMonitor.tlsConfig`), `enableVisibilityAPF`, `enableKueueViz` (the dashboard, from the
manager's image), `enableVisibilityAuthReaderRoleBinding`, `metricsService`, `webhookService` (with
`.ipDualStack`), and from v0.19.2's chart `controllerManager.featureGates`, `.manager.logLevel`,
`.strategy`, `.hostNetwork`, `.dnsPolicy`, `kubernetesClusterDomain`, `certManager.issuerRef`,
`mutatingWebhook.reinvocationPolicy`; ours, `metrics.prometheusRule` (the alert rules of files/) and
`metrics.grafanaDashboard` (the Grafana dashboard of files/). `values.schema.json` (`values_schema`) closes every level,
and templates/refused.yaml stops the install on the upstream values left out. Objects live
in the release namespace; names keep the `kueue-` prefix (RBAC resourceNames and the webhook DNS name
depend on them). Each object is dumped as its own document, so an optional one (the PDB, the
ServiceMonitor) can never run into its neighbour.

Templating is done by placing tokens in the generated objects and replacing the dumped lines:
`'@@NAME@@'` as a value becomes a scalar or an indented `toYaml` block; as a key (with an empty
value) it becomes raw template lines at that indentation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from webhook.api.schema import dump
from webhook.certmanager import conversion_crd_names
from webhook.install import dashboard, rbac, values_schema, visibility
from webhook.install import objects as o

__all__ = ["render"]

_NS = "pykueue-helm-release-namespace"  # stands for {{ .Release.Namespace }} until the text is final
_DOMAIN = "pykueue-helm-cluster-domain"  # stands for {{ .Values.kubernetesClusterDomain }}
_M = ".Values.controllerManager"
_CERT_MANAGER = ".Values.enableCertManager"
_PROMETHEUS = ".Values.enablePrometheus"

CHART = """\
apiVersion: v2
name: pykueue
description: Kueue-compatible job queueing for Kubernetes, in Python
type: application
version: 0.1.0
appVersion: "dev"
"""


def _values() -> dict[str, Any]:
    d = o.Settings()
    return {
        "enableCertManager": False,
        "enablePrometheus": False,
        "enableVisibilityAPF": False,
        "enableKueueViz": False,
        "enableVisibilityAuthReaderRoleBinding": True,
        # The cert-manager Certificate's second DNS name ends in it.
        "kubernetesClusterDomain": "cluster.local",
        # An Issuer or ClusterIssuer of your own ({name, kind, group}) in place of the chart's self-signed one.
        "certManager": {"issuerRef": {}},
        "controllerManager": {
            "replicas": d.replicas,
            # [{name: PartialAdmission, enabled: true}, ...]: the manager's --feature-gates, which replaces
            # managerConfig's featureGates (naming gates in both stops the manager).
            "featureGates": [],
            "strategy": {},
            "hostNetwork": False,
            "dnsPolicy": "",
            "manager": {
                "image": {"repository": "pykueue", "tag": "dev", "pullPolicy": d.pull_policy},
                "resources": d.resources,
                "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                "containerSecurityContext": {
                    "readOnlyRootFilesystem": True,
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
                "podAnnotations": {},
                "priorityClassName": "",
                # --zap-log-level: debug, info, error, panic or N > 0 (verbosity V(N)).
                "logLevel": 2,
            },
            "imagePullSecrets": [],
            "readinessProbe": {
                "initialDelaySeconds": 5,
                "periodSeconds": 10,
                "timeoutSeconds": 1,
                "failureThreshold": 3,
                "successThreshold": 1,
            },
            "livenessProbe": {
                "initialDelaySeconds": 15,
                "periodSeconds": 20,
                "timeoutSeconds": 1,
                "failureThreshold": 3,
                "successThreshold": 1,
            },
            "nodeSelector": {},
            "tolerations": [],
            "topologySpreadConstraints": [],
            "podDisruptionBudget": {"enabled": False, "minAvailable": 1},
        },
        # internalCertManagement is set by the chart from enableCertManager; leave it out here.
        "managerConfig": {
            "controllerManagerConfigYaml": d.configuration.replace("internalCertManagement:\n  enable: true\n", "")
        },
        "metrics": {
            "prometheusNamespace": "monitoring",
            "serviceMonitor": {"tlsConfig": {"insecureSkipVerify": True}},
            # Ours: files/kueue-alerts.rules.yaml as a PrometheusRule (labels: what the Prometheus
            # operator's ruleSelector matches), and files/kueue-dashboard.json as a ConfigMap the Grafana
            # sidecar imports (it looks for the label grafana_dashboard by default).
            "prometheusRule": {"enabled": False, "labels": {}},
            "grafanaDashboard": {"enabled": False, "labels": {"grafana_dashboard": "1"}},
        },
        # The port name is the ServiceMonitor's `port` (upstream's chart and the kustomize Service: https).
        "metricsService": {
            "type": "ClusterIP",
            "labels": {},
            "annotations": {},
            "ports": [{"name": "https", "port": o.METRICS_PORT, "protocol": "TCP", "targetPort": "metrics"}],
        },
        "webhookService": {
            "type": "ClusterIP",
            "ports": [{"port": 443, "protocol": "TCP", "targetPort": o.WEBHOOK_PORT}],
            # A post-install/upgrade hook pod: `helm install` returns once the Service answers
            # (webhook/install/service_ready.py), not merely once the pods are Ready.
            "waitUntilReachable": True,
            "ipDualStack": {"enabled": False, "ipFamilies": ["IPv6", "IPv4"], "ipFamilyPolicy": "PreferDualStack"},
        },
        "mutatingWebhook": {"reinvocationPolicy": "Never"},
    }


def _if(cond: str, *lines: str) -> Callable[[str], list[str]]:
    def emit(indent: str) -> list[str]:
        return [f"{indent}{{{{- if {cond} }}}}", *(indent + line for line in lines), f"{indent}{{{{- end }}}}"]

    return emit


def _placement(i: str) -> list[str]:
    """Pull secrets, node selector and tolerations: where the manager's pods, and the hook, may run."""
    return [
        line
        for key in ("imagePullSecrets", "nodeSelector", "tolerations")
        for line in (
            f"{i}{{{{- with {_M}.{key} }}}}",
            f"{i}{key}: {{{{- toYaml . | nindent {len(i) + 2} }}}}",
            f"{i}{{{{- end }}}}",
        )
    ]


# Token → a scalar template, a block (toYaml of a value), or raw lines.
_SCALARS = {
    "REPLICAS": f"{{{{ {_M}.replicas }}}}",
    "IMAGE": f'"{{{{ {_M}.manager.image.repository }}}}:{{{{ {_M}.manager.image.tag }}}}"',
    "PULL_POLICY": f"{{{{ {_M}.manager.image.pullPolicy }}}}",
    "METRICS_TYPE": "{{ .Values.metricsService.type }}",
    "WEBHOOK_TYPE": "{{ .Values.webhookService.type }}",
    "PDB_MIN_AVAILABLE": f"{{{{ {_M}.podDisruptionBudget.minAvailable }}}}",
    "PROMETHEUS_NAMESPACE": "{{ .Values.metrics.prometheusNamespace }}",
    "REINVOCATION": "{{ .Values.mutatingWebhook.reinvocationPolicy }}",
}
_BLOCKS = {
    "RESOURCES": f"{_M}.manager.resources",
    "POD_SECURITY": f"{_M}.manager.podSecurityContext",
    "CONTAINER_SECURITY": f"{_M}.manager.containerSecurityContext",
    "METRICS_PORTS": ".Values.metricsService.ports",
    "WEBHOOK_PORTS": ".Values.webhookService.ports",
    "MONITOR_TLS": ".Values.metrics.serviceMonitor.tlsConfig",
}
_RAW: dict[str, Callable[[str], list[str]]] = {
    "CERT_ANNOTATION": _if(
        _CERT_MANAGER, "annotations:", f"  {o.INJECT_CA_FROM}: {{{{ .Release.Namespace }}}}/{o.CERTIFICATE}"
    ),
    "POD_EXTRAS": lambda i: [
        *_placement(i),
        f"{i}{{{{- with {_M}.topologySpreadConstraints }}}}",
        f"{i}topologySpreadConstraints: {{{{- toYaml . | nindent {len(i) + 2} }}}}",
        f"{i}{{{{- end }}}}",
        f"{i}{{{{- with {_M}.manager.priorityClassName }}}}",
        f"{i}priorityClassName: {{{{ . }}}}",
        f"{i}{{{{- end }}}}",
        f"{i}{{{{- with {_M}.hostNetwork }}}}",
        f"{i}hostNetwork: {{{{ . }}}}",
        f"{i}{{{{- end }}}}",
        f"{i}{{{{- with {_M}.dnsPolicy }}}}",
        f"{i}dnsPolicy: {{{{ . }}}}",
        f"{i}{{{{- end }}}}",
    ],
    # Upstream's chart renders the same two flags (templates/manager/manager.yaml, kueue.featureGates).
    "MANAGER_ARGS": lambda i: [
        f"{i}- --zap-log-level={{{{ {_M}.manager.logLevel }}}}",
        f"{i}{{{{- with {_M}.featureGates }}}}",
        f"{i}- --feature-gates={{{{ range $i, $g := . }}}}{{{{ if $i }}}},{{{{ end }}}}"
        "{{ $g.name }}={{ $g.enabled }}{{ end }}",
        f"{i}{{{{- end }}}}",
    ],
    "STRATEGY": lambda i: [
        f"{i}{{{{- with {_M}.strategy }}}}",
        f"{i}strategy: {{{{- toYaml . | nindent {len(i) + 2} }}}}",
        f"{i}{{{{- end }}}}",
    ],
    "DUAL_STACK": lambda i: [
        f"{i}{{{{- if .Values.webhookService.ipDualStack.enabled }}}}",
        f"{i}ipFamilies: {{{{- toYaml .Values.webhookService.ipDualStack.ipFamilies | nindent {len(i) + 2} }}}}",
        f"{i}ipFamilyPolicy: {{{{ .Values.webhookService.ipDualStack.ipFamilyPolicy }}}}",
        f"{i}{{{{- end }}}}",
    ],
    "ISSUER_REF": lambda i: [
        f"{i}{{{{- if .Values.certManager.issuerRef }}}}",
        f"{i}{{{{- toYaml .Values.certManager.issuerRef | nindent {len(i)} }}}}",
        f"{i}{{{{- else }}}}",
        f"{i}kind: Issuer",
        f"{i}name: {o.ISSUER}",
        f"{i}{{{{- end }}}}",
    ],
    "HOOK_EXTRAS": lambda i: _placement(i),
    "POD_ANNOTATIONS": lambda i: [
        f"{i}{{{{- with {_M}.manager.podAnnotations }}}}",
        f"{i}{{{{- toYaml . | nindent {len(i)} }}}}",
        f"{i}{{{{- end }}}}",
    ],
    "CERT_MOUNT": _if(_CERT_MANAGER, f"- name: cert\n{{i}}  mountPath: {o.CERT_DIR}\n{{i}}  readOnly: true"),
    "CERT_VOLUME": _if(_CERT_MANAGER, f"- name: cert\n{{i}}  secret:\n{{i}}    secretName: {o.SECRET}"),
    "PROBE_READY": lambda i: [f"{i}{{{{- toYaml {_M}.readinessProbe | nindent {len(i)} }}}}"],
    "PROBE_LIVE": lambda i: [f"{i}{{{{- toYaml {_M}.livenessProbe | nindent {len(i)} }}}}"],
    "METRICS_ANNOTATIONS": lambda i: [
        f"{i}{{{{- with .Values.metricsService.annotations }}}}",
        f"{i}annotations: {{{{- toYaml . | nindent {len(i) + 2} }}}}",
        f"{i}{{{{- end }}}}",
    ],
    "METRICS_LABELS": lambda i: [
        f"{i}{{{{- with .Values.metricsService.labels }}}}",
        f"{i}{{{{- toYaml . | nindent {len(i)} }}}}",
        f"{i}{{{{- end }}}}",
    ],
}

_VALUE = re.compile(r"^(\s*)((?:- )?)([\w.-]+): '@@(\w+)@@'$")
_KEY = re.compile(r"^(\s*)((?:- )?)'@@(\w+)@@': ''$")


def _template(text: str) -> str:
    out: list[str] = []
    for line in text.splitlines():
        if m := _VALUE.match(line):
            indent, dash, key, token = m.groups()
            if token in _SCALARS:
                out.append(f"{indent}{dash}{key}: {_SCALARS[token]}")
            else:
                inner = " " * (len(indent) + len(dash) + 2)
                out += [f"{indent}{dash}{key}:", f"{inner}{{{{- toYaml {_BLOCKS[token]} | nindent {len(inner)} }}}}"]
        elif m := _KEY.match(line):
            indent, dash, token = m.groups()
            lines = _RAW[token](indent)  # a list-item token's lines carry their own "- "
            out += [ln.replace("{i}", indent) for chunk in lines for ln in chunk.split("\n")]
        else:
            if "@@" in line:
                raise ValueError(f"token left in chart line: {line!r}")
            out.append(line)
    text = (
        "\n".join(out)
        .replace(_NS, "{{ .Release.Namespace }}")
        .replace(_DOMAIN, "{{ .Values.kubernetesClusterDomain }}")
    )
    return text + "\n"


def _docs(items: list[dict[str, Any]]) -> str:
    return _template("".join(dump(item) for item in items))


def _guard(cond: str, text: str) -> str:
    return f"{{{{- if {cond} }}}}\n{text}{{{{- end }}}}\n"


def _deployment(s: o.Settings) -> dict[str, Any]:
    dep = o.controller_objects(s)[3]
    spec = dep["spec"]
    spec["replicas"] = "@@REPLICAS@@"
    spec["@@STRATEGY@@"] = ""
    pod = spec["template"]["spec"]
    spec["template"]["metadata"]["annotations"]["@@POD_ANNOTATIONS@@"] = ""
    pod["securityContext"] = "@@POD_SECURITY@@"
    pod["@@POD_EXTRAS@@"] = ""
    c = pod["containers"][0]
    c.update(
        {
            "image": "@@IMAGE@@",
            "imagePullPolicy": "@@PULL_POLICY@@",
            "resources": "@@RESOURCES@@",
            "securityContext": "@@CONTAINER_SECURITY@@",
        }
    )
    c["args"].append({"@@MANAGER_ARGS@@": ""})
    c["readinessProbe"] = {"httpGet": c["readinessProbe"]["httpGet"], "@@PROBE_READY@@": ""}
    c["livenessProbe"] = {"httpGet": c["livenessProbe"]["httpGet"], "@@PROBE_LIVE@@": ""}
    c["volumeMounts"].append({"@@CERT_MOUNT@@": ""})
    pod["volumes"].append({"@@CERT_VOLUME@@": ""})
    return dep


def _services(s: o.Settings) -> list[dict[str, Any]]:
    webhook, metrics = o.controller_objects(s)[4:]
    webhook["spec"].update({"type": "@@WEBHOOK_TYPE@@", "ports": "@@WEBHOOK_PORTS@@", "@@DUAL_STACK@@": ""})
    metrics["spec"].update({"type": "@@METRICS_TYPE@@", "ports": "@@METRICS_PORTS@@"})
    metrics["metadata"]["@@METRICS_ANNOTATIONS@@"] = ""
    metrics["metadata"]["labels"]["@@METRICS_LABELS@@"] = ""
    return [webhook, metrics]


def _config_map() -> str:
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        f"  name: {o.CONFIG_MAP}\n  namespace: {{{{ .Release.Namespace }}}}\ndata:\n"
        f"  {o.CONFIG_FILE}: |\n"
        "    {{- .Values.managerConfig.controllerManagerConfigYaml | trim | nindent 4 }}\n"
        "    internalCertManagement:\n"
        f"      enable: {{{{ not {_CERT_MANAGER} }}}}\n"
    )


def _pdb(s: o.Settings) -> dict[str, Any]:
    return o.pod_disruption_budget(s, min_available="@@PDB_MIN_AVAILABLE@@")


def _service_ready_hook(s: o.Settings) -> dict[str, Any]:
    """The pod Helm waits for after install and upgrade: the webhook Service answers through its ClusterIP.

    Its labels are not the manager's selector, so no Service routes to it.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{o.WEBHOOK_SERVICE}-ready",
            "namespace": s.namespace,
            "labels": {"app.kubernetes.io/name": "kueue", "app.kubernetes.io/component": "service-ready-hook"},
            "annotations": {
                "helm.sh/hook": "post-install,post-upgrade",
                "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "securityContext": "@@POD_SECURITY@@",
            "@@HOOK_EXTRAS@@": "",
            "containers": [
                {
                    "name": "service-ready",
                    "image": "@@IMAGE@@",
                    "imagePullPolicy": "@@PULL_POLICY@@",
                    "args": ["service-ready", f"--service={o.WEBHOOK_SERVICE}", f"--namespace={s.namespace}"],
                    "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
                    "securityContext": "@@CONTAINER_SECURITY@@",
                }
            ],
        },
    }


def render() -> dict[str, str]:
    """Path (relative to charts/pykueue) → content."""
    s = o.Settings(namespace=_NS)
    conversion = set(conversion_crd_names())
    crds = o.crd_objects(s)
    for crd in crds:
        if crd["metadata"]["name"] in conversion:
            crd["metadata"]["@@CERT_ANNOTATION@@"] = ""
    webhooks = o.webhook_objects(s)
    for cfg in webhooks:
        cfg["metadata"]["@@CERT_ANNOTATION@@"] = ""
        for hook in cfg["webhooks"]:
            if "reinvocationPolicy" in hook:  # the mutating ones
                hook["reinvocationPolicy"] = "@@REINVOCATION@@"
    manager_rbac = rbac.manager_rbac(_NS, o.SERVICE_ACCOUNT)
    always = [r for r in manager_rbac if "cert" not in r["metadata"]["name"] and "secrets" not in r["metadata"]["name"]]
    internal = [r for r in manager_rbac if r not in always]
    controller = o.controller_objects(s)
    return {
        "Chart.yaml": CHART,
        "values.yaml": "# Defaults; names follow Kueue's chart where they overlap.\n"
        + dump(_values()).removeprefix("---\n"),
        "values.schema.json": json.dumps(values_schema.values_schema(), indent=2) + "\n",
        "templates/crds.yaml": _docs(crds),
        "templates/rbac.yaml": _docs([o.rbac_objects(s)[0], *always, *rbac.user_roles()]),
        "templates/internalcert.yaml": _guard(f"not {_CERT_MANAGER}", _docs([*internal, controller[2]])),
        "templates/manager.yaml": _config_map() + _docs([_deployment(s), *_services(s)]),
        "templates/service-ready-hook.yaml": _guard(
            ".Values.webhookService.waitUntilReachable", _docs([_service_ready_hook(s)])
        ),
        "templates/manager-pdb.yaml": _guard(f"{_M}.podDisruptionBudget.enabled", _docs([_pdb(s)])),
        "templates/prometheus.yaml": _guard(
            _PROMETHEUS,
            _docs(
                o.prometheus_objects(s, prometheus_namespace="@@PROMETHEUS_NAMESPACE@@", tls_config="@@MONITOR_TLS@@")
            ),
        ),
        "templates/prometheus-rules.yaml": _guard(".Values.metrics.prometheusRule.enabled", _prometheus_rule()),
        "templates/grafana-dashboard.yaml": _guard(".Values.metrics.grafanaDashboard.enabled", _grafana_dashboard()),
        "templates/webhooks.yaml": _docs(webhooks),
        "templates/certmanager.yaml": _cert_manager(s),
        "templates/refused.yaml": _refused(),
        "templates/visibility.yaml": _visibility(),
        "templates/visibility-apf.yaml": _guard(".Values.enableVisibilityAPF", _docs(visibility.apf_objects())),
        "templates/dashboard.yaml": _guard(
            ".Values.enableKueueViz", _docs(dashboard.objects(_NS, image="@@IMAGE@@", pull_policy="@@PULL_POLICY@@"))
        ),
    }


# The chart's files/ (written by hand, shipped as they are): Prometheus' rules file and Grafana's dashboard.
ALERT_RULES = "files/kueue-alerts.rules.yaml"
GRAFANA_DASHBOARD = "files/kueue-dashboard.json"


def _prometheus_rule() -> str:
    """The alert rules file as a PrometheusRule's spec (its top level is `groups:`, as the spec's),
    beside the ServiceMonitor in the release namespace. `.Files.Get` is not templated again, so the
    rules' own `{{ $labels.x }}` reach Prometheus unchanged."""
    return (
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n"
        "  name: kueue-alerts\n  namespace: {{ .Release.Namespace }}\n  labels:\n"
        "    app.kubernetes.io/name: kueue\n"
        "    {{- with .Values.metrics.prometheusRule.labels }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n"
        f'spec:\n  {{{{- .Files.Get "{ALERT_RULES}" | nindent 2 }}}}\n'
    )


def _grafana_dashboard() -> str:
    """The dashboard JSON in a ConfigMap, labelled for Grafana's dashboard sidecar."""
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: kueue-grafana-dashboard\n  namespace: {{ .Release.Namespace }}\n  labels:\n"
        "    app.kubernetes.io/name: kueue\n"
        "    {{- with .Values.metrics.grafanaDashboard.labels }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n"
        f'data:\n  kueue.json: |-\n    {{{{- .Files.Get "{GRAFANA_DASHBOARD}" | nindent 4 }}}}\n'
    )


def _cert_manager(s: o.Settings) -> str:
    """The Certificate, and the self-signed Issuer unless `certManager.issuerRef` names another
    (upstream: templates/certmanager/issuer.yaml and the kueue.certManager.issuerRef helper)."""
    issuer, certificate = o.cert_manager_objects(s, cluster_domain=_DOMAIN)
    certificate["spec"]["issuerRef"] = {"@@ISSUER_REF@@": ""}
    return _guard(_CERT_MANAGER, _guard("not .Values.certManager.issuerRef", _docs([issuer])) + _docs([certificate]))


def _refused() -> str:
    """Setting an upstream value the chart does not implement stops `helm install` with the reason."""
    return "".join(
        f'{{{{- if .Values.{key} }}}}\n{{{{- fail "{key}: not supported by pykueue: {why}" }}}}\n{{{{- end }}}}\n'
        for key, (_, why) in values_schema.REFUSED.items()
    )


def _visibility() -> str:
    """The Service, the APIServices and the delegator binding; the kube-system RoleBinding can be left
    to whoever may write there (upstream's `enableVisibilityAuthReaderRoleBinding`)."""
    reader, delegator = visibility.auth_objects(_NS, o.SERVICE_ACCOUNT)
    return _docs([visibility.service(_NS), *visibility.api_services(_NS), delegator]) + _guard(
        ".Values.enableVisibilityAuthReaderRoleBinding", _docs([reader])
    )
