"""Tests for webhook/install: committed files are current, and the objects say what the issue asks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.api import integrations
from webhook.config import load, parse
from webhook.install import chart, kustomize, rbac, values_schema
from webhook.install import objects as o
from webhook.install.__main__ import rendered

ROOT = Path(__file__).resolve().parents[3]
MANAGER = ROOT / "manifests" / "manager"  # in manifests/default, which `make deploy` applies


def test_committed_manifests_and_chart_are_up_to_date():
    expected = rendered()
    on_disk = {
        p.relative_to(ROOT): p.read_text(encoding="utf-8")
        for base in ("manifests", "charts/pykueue")
        for p in (ROOT / base).rglob("*")
        if p.suffix in (".yaml", ".json") and not p.is_relative_to(ROOT / "charts/pykueue/files")
    }  # the chart's files/ (alert rules, Grafana dashboard) are written by hand
    stale = sorted(str(p) for p in expected.keys() | on_disk.keys() if expected.get(p) != on_disk.get(p))
    assert not stale, f"stale generated files {stale}: run `make manifests` (python -m webhook.install manifests)"


def by_kind(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [i for i in items if i["kind"] == kind]


def documents(path: Path) -> list[dict[str, Any]]:
    """The objects of a committed YAML file."""
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


@pytest.fixture(scope="module")
def controller() -> list[dict[str, Any]]:
    return o.controller_objects(o.Settings())


def test_deployment_is_hardened_probed_and_replicated(controller):
    dep = by_kind(controller, "Deployment")[0]
    assert dep["metadata"] == {
        "name": "kueue-controller-manager",
        "namespace": "kueue-system",
        "labels": {**o.SELECTOR, "app.kubernetes.io/component": "controller"},
    }
    spec = dep["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    (c,) = pod["containers"]
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert c["resources"]["requests"] and c["resources"]["limits"]
    assert c["ports"] == [
        {"containerPort": 9443, "name": "webhook-server", "protocol": "TCP"},
        {"containerPort": 8443, "name": "metrics", "protocol": "TCP"},
    ]
    # Plain HTTP on the shipped Configuration's health.healthProbeBindAddress, as upstream's Deployment.
    shipped = parse(o.DEFAULT_CONFIGURATION).health
    assert shipped.health_probe_bind_address == f":{o.HEALTH_PORT}"
    for probe, path in (
        ("livenessProbe", shipped.liveness_endpoint_name),
        ("readinessProbe", shipped.readiness_endpoint_name),
    ):
        assert c[probe]["httpGet"] == {"path": path, "port": o.HEALTH_PORT}
    assert c["args"] == ["serve", "--in-cluster", "--config=/controller_manager_config.yaml", "--drain-seconds=5"]
    # The kubelet must not kill a replica mid-drain, nor while a review is still in flight.
    assert pod["terminationGracePeriodSeconds"] >= 5 + 10
    # The cert dir is under the writable /tmp emptyDir.
    assert o.CERT_DIR.startswith("/tmp/") and {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]


def test_services(controller):
    webhook, metrics = by_kind(controller, "Service")
    assert webhook["metadata"]["name"] == "kueue-webhook-service"
    assert webhook["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 9443}]
    assert metrics["metadata"]["name"] == "kueue-controller-manager-metrics-service"
    # The kueue_* series come from the worker's /metrics on the Configuration's metrics.bindAddress.
    # ... over HTTPS, as upstream's controller-manager-metrics-service (port name `https`).
    assert metrics["spec"]["ports"] == [{"name": "https", "port": 8443, "protocol": "TCP", "targetPort": "metrics"}]
    assert webhook["spec"]["selector"] == metrics["spec"]["selector"] == o.SELECTOR


def test_shipped_configuration_loads_and_enables_internal_certs(tmp_path):
    """The Configuration `make deploy` installs (the kustomize build of manifests/default), read from
    the committed file the manager's Deployment mounts at the path its --config names."""
    assert "../manager" in documents(ROOT / "manifests" / "default" / "kustomization.yaml")[0]["resources"]
    assert {"config.yaml", "deployment.yaml"} <= set(documents(MANAGER / "kustomization.yaml")[0]["resources"])
    (cm,) = by_kind(documents(MANAGER / "config.yaml"), "ConfigMap")
    (dep,) = by_kind(documents(MANAGER / "deployment.yaml"), "Deployment")
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    (mount,) = [m for m in c["volumeMounts"] if f"--config={m['mountPath']}" in c["args"]]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert (volume["configMap"]["name"], mount["subPath"]) == (cm["metadata"]["name"], o.CONFIG_FILE)
    path = tmp_path / "c.yaml"
    path.write_text(cm["data"][o.CONFIG_FILE])
    cfg = load(str(path))
    assert cfg.internal_cert_management.enable
    assert cfg.leader_election.leader_elect
    assert cfg.webhook.port == 9443


def shipped_configurations() -> dict[str, str]:
    """Every Configuration an install applies, as committed: the ConfigMap of manifests/default, the
    cert-manager overlay's patch of it, and the chart's default `managerConfig` (the chart appends
    `internalCertManagement`; tests/integration/test_chart.py loads what helm renders)."""
    (cm,) = by_kind(documents(MANAGER / "config.yaml"), "ConfigMap")
    overlay = documents(ROOT / "manifests" / "cert-manager" / "kustomization.yaml")[0]
    (patch,) = [yaml.safe_load(p["patch"]) for p in overlay["patches"] if p["target"]["kind"] == "ConfigMap"]
    values = documents(ROOT / "charts" / "pykueue" / "values.yaml")[0]
    return {
        "manifests/default": cm["data"][o.CONFIG_FILE],
        "manifests/cert-manager": patch["data"][o.CONFIG_FILE],
        "charts/pykueue": values["managerConfig"]["controllerManagerConfigYaml"],
    }


@pytest.mark.parametrize("install", sorted(shipped_configurations()))
def test_shipped_configuration_is_valid(install):
    cfg = parse(shipped_configurations()[install])
    # Only the cert-manager overlay turns the internal certificates off (the chart's enableCertManager
    # is off by default, and its template writes `enable: true` then).
    assert cfg.internal_cert_management.enable is (install != "manifests/cert-manager")
    assert cfg.leader_election.leader_elect


def test_webhook_configurations():
    mutating, validating = o.webhook_objects(o.Settings())
    assert (mutating["metadata"]["name"], validating["metadata"]["name"]) == (
        "kueue-mutating-webhook-configuration",
        "kueue-validating-webhook-configuration",
    )
    hooks = mutating["webhooks"] + validating["webhooks"]
    assert {h["name"] for h in hooks} >= {"mjob.kb.io", "vjob.kb.io", "mpod.kb.io", "vpod.kb.io", "vcohort.kb.io"}
    for h in hooks:
        assert h["failurePolicy"] == "Fail" and h["sideEffects"] == "None" and h["timeoutSeconds"] == 10
        assert "caBundle" not in h["clientConfig"]  # injected later; an apply must not blank it
        assert h["clientConfig"]["service"]["name"] == "kueue-webhook-service"
        # Every implemented integration's pair, as upstream's kustomization gives each its selector.
        integration = h["name"] in {
            f.webhook_name(mutating=m) for f in integrations.implemented() for m in (True, False)
        }
        if integration:
            assert h["namespaceSelector"] == {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": ["kube-system", "kueue-system"],
                    }
                ]
            }
        else:
            assert "namespaceSelector" not in h


def test_user_roles_keep_upstream_names_and_aggregation_labels():
    roles = {r["metadata"]["name"]: r for r in rbac.user_roles()}
    assert roles["kueue-batch-admin-role"]["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.kueue.x-k8s.io/batch-admin": "true"}}]
    }
    assert roles["kueue-batch-user-role"]["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.kueue.x-k8s.io/batch-user": "true"}}]
    }
    assert sorted(roles) == sorted(
        ["kueue-batch-admin-role", "kueue-batch-user-role"]
        + [
            f"kueue-{k}-{r}-role"
            for k in (
                "clusterqueue",
                "cohort",
                "jaxjob",
                "job",
                "jobset",
                "leaderworkerset",
                "localqueue",
                "mpijob",
                "paddlejob",
                "pytorchjob",
                "resourceflavor",
                "tfjob",
                "topology",
                "workload",
                "xgboostjob",
            )
            for r in ("viewer", "editor")
        ]
        + [
            "kueue-pending-workloads-cq-viewer-role",
            "kueue-pending-workloads-lq-viewer-role",
            "kueue-metrics-reader",
            "kueue-localqueue-limits-viewer-role",
            "kueue-usagerecord-viewer-role",  # ours: batch admins read the UsageRecords
            "kueue-budget-viewer-role",  # ours: and read and write Budgets
            "kueue-budget-editor-role",
        ]
    )
    for name in ("kueue-budget-viewer-role", "kueue-budget-editor-role"):
        labels = roles[name]["metadata"]["labels"]
        assert labels["rbac.kueue.x-k8s.io/batch-admin"] == "true" and "rbac.kueue.x-k8s.io/batch-user" not in labels
    assert roles["kueue-budget-editor-role"]["rules"][0]["resources"] == ["budgets"]
    assert roles["kueue-usagerecord-viewer-role"]["metadata"]["labels"]["rbac.kueue.x-k8s.io/batch-admin"] == "true"
    assert "rbac.kueue.x-k8s.io/batch-user" not in roles["kueue-usagerecord-viewer-role"]["metadata"]["labels"]
    assert roles["kueue-metrics-reader"]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    lq_viewer = roles["kueue-localqueue-viewer-role"]["metadata"]["labels"]
    assert lq_viewer == {
        "rbac.kueue.x-k8s.io/role": "localqueue-viewer",
        "rbac.kueue.x-k8s.io/batch-admin": "true",
        "rbac.kueue.x-k8s.io/batch-user": "true",
        "rbac.authorization.k8s.io/aggregate-to-view": "true",
        "rbac.authorization.k8s.io/aggregate-to-admin": "true",
        "rbac.authorization.k8s.io/aggregate-to-edit": "true",
    }
    # leaderworkerset_{viewer,editor}_role.yaml: as the Job's, for the LeaderWorkerSet integration.
    assert roles["kueue-leaderworkerset-viewer-role"]["rules"] == [
        {
            "apiGroups": ["leaderworkerset.x-k8s.io"],
            "resources": ["leaderworkersets"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": ["leaderworkerset.x-k8s.io"], "resources": ["leaderworkersets/status"], "verbs": ["get"]},
    ]
    # jobset_{viewer,editor}_role.yaml: as the Job's, for the JobSet integration.
    assert roles["kueue-jobset-editor-role"]["rules"] == [
        {
            "apiGroups": ["jobset.x-k8s.io"],
            "resources": ["jobsets"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        },
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    ]
    assert roles["kueue-jobset-viewer-role"]["metadata"]["labels"] == {
        "rbac.kueue.x-k8s.io/role": "jobset-viewer",
        "rbac.kueue.x-k8s.io/batch-admin": "true",
        "rbac.kueue.x-k8s.io/batch-user": "true",
        "rbac.authorization.k8s.io/aggregate-to-view": "true",
        "rbac.authorization.k8s.io/aggregate-to-admin": "true",
        "rbac.authorization.k8s.io/aggregate-to-edit": "true",
    }
    assert roles["kueue-job-editor-role"]["metadata"]["labels"] == {
        "rbac.kueue.x-k8s.io/role": "job-editor",
        "rbac.kueue.x-k8s.io/batch-admin": "true",
        "rbac.kueue.x-k8s.io/batch-user": "true",
    }
    assert roles["kueue-clusterqueue-viewer-role"]["rules"] == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues/status"], "verbs": ["get"]},
    ]

    # upstream's topology_{viewer,editor}_role.yaml: batch admins edit, namespace admins may view
    assert roles["kueue-topology-viewer-role"]["metadata"]["labels"] == {
        "rbac.kueue.x-k8s.io/role": "topology-viewer",
        "rbac.kueue.x-k8s.io/batch-admin": "true",
        "rbac.authorization.k8s.io/aggregate-to-admin": "true",
    }
    assert roles["kueue-topology-editor-role"]["metadata"]["labels"] == {
        "rbac.kueue.x-k8s.io/role": "topology-editor",
        "rbac.kueue.x-k8s.io/batch-admin": "true",
    }
    assert roles["kueue-topology-editor-role"]["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["topologies"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }
    ]

    # upstream's pending_workloads_{cq,lq}_viewer_role.yaml: batch users read LocalQueues' queues only
    cq_pending, lq_pending = (
        roles["kueue-pending-workloads-cq-viewer-role"],
        roles["kueue-pending-workloads-lq-viewer-role"],
    )
    assert cq_pending["rules"] == [
        {
            "apiGroups": ["visibility.kueue.x-k8s.io"],
            "resources": ["clusterqueues/pendingworkloads"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert "rbac.kueue.x-k8s.io/batch-user" not in cq_pending["metadata"]["labels"]
    assert lq_pending["metadata"]["labels"]["rbac.kueue.x-k8s.io/batch-user"] == "true"
    assert lq_pending["rules"][0]["resources"] == ["localqueues/pendingworkloads"]

    # ours (visibility.pykueue.io): whoever reads a LocalQueue's queue reads its limits and estimates
    limits = roles["kueue-localqueue-limits-viewer-role"]
    assert {k: v for k, v in limits["metadata"]["labels"].items() if k != "rbac.kueue.x-k8s.io/role"} == {
        k: v for k, v in lq_pending["metadata"]["labels"].items() if k != "rbac.kueue.x-k8s.io/role"
    }
    assert limits["rules"] == [
        {
            "apiGroups": ["visibility.pykueue.io"],
            "verbs": ["get", "list", "watch"],
            "resources": ["localqueues/limits", "localqueues/pendingworkloads"],
        }
    ]


def test_manager_role_grants_multikueue_reads_and_the_cluster_status_only():
    """The MultiKueue admission check reads its clusters and configs and writes only the clusters'
    `Active` condition; the kubeconfig Secrets and ClusterProfiles are read in our namespace only, by a Role that stays
    when cert-manager replaces the internal certificate (upstream grants the same in its
    `manager-secrets-role`)."""
    objs = rbac.manager_rbac("kueue-system", o.SERVICE_ACCOUNT)
    role = next(r for r in objs if r["metadata"]["name"] == "kueue-manager-role")
    mk = {
        (res, verb)
        for rule in role["rules"]
        for res in rule.get("resources", [])
        if res.split("/")[0] in ("multikueueconfigs", "multikueueclusters")
        for verb in rule["verbs"]
    }
    assert mk == {
        *((res, verb) for res in ("multikueueclusters", "multikueueconfigs") for verb in ("get", "list", "watch")),
        *(("multikueueclusters/status", verb) for verb in ("get", "patch", "update")),
    }
    secrets = next(r for r in objs if r["metadata"]["name"] == "kueue-manager-multikueue-role")
    assert secrets["kind"] == "Role" and secrets["metadata"]["namespace"] == "kueue-system"
    assert secrets["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]},
        # upstream's manager-clusterprofiles-role, for gate MultiKueueClusterProfile
        {"apiGroups": ["multicluster.x-k8s.io"], "resources": ["clusterprofiles"], "verbs": ["get", "list", "watch"]},
    ]


def test_manager_may_review_metrics_scrapers():
    objs = {(r["kind"], r["metadata"]["name"]): r for r in rbac.manager_rbac("kueue-system", o.SERVICE_ACCOUNT)}
    assert objs[("ClusterRole", "kueue-metrics-auth-role")]["rules"] == [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ]
    binding = objs[("ClusterRoleBinding", "kueue-metrics-auth-rolebinding")]
    assert binding["roleRef"]["name"] == "kueue-metrics-auth-role"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": o.SERVICE_ACCOUNT, "namespace": "kueue-system"}]


def test_cert_manager_overlay_swaps_the_internal_cert_manager_out():
    k = yaml.safe_load(kustomize.render()["cert-manager/kustomization.yaml"])
    deleted = {(p["target"]["kind"], p["target"]["name"]) for p in k["patches"] if "$patch: delete" in p["patch"]}
    assert deleted == {
        ("Secret", "kueue-webhook-server-cert"),
        ("Role", "kueue-manager-secrets-role"),
        ("RoleBinding", "kueue-manager-secrets-rolebinding"),
        ("ClusterRole", "kueue-manager-cert-role"),
        ("ClusterRoleBinding", "kueue-manager-cert-rolebinding"),
    }
    annotated = {p["target"]["name"] for p in k["patches"] if "inject-ca-from" in p["patch"]}
    assert annotated == {
        "kueue-mutating-webhook-configuration",
        "kueue-validating-webhook-configuration",
        "clusterqueues.kueue.x-k8s.io",
        "cohorts.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "multikueueclusters.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
    }
    assert any("enable: false" in p["patch"] for p in k["patches"])


# Keys of Kueue's chart values.yaml that ours reproduces (same path, same meaning).
UPSTREAM_VALUE_PATHS = [
    "enableCertManager",
    "enablePrometheus",
    "metrics.prometheusNamespace",
    "metrics.serviceMonitor.tlsConfig",
    "controllerManager.replicas",
    "controllerManager.imagePullSecrets",
    "controllerManager.manager.image.repository",
    "controllerManager.manager.image.tag",
    "controllerManager.manager.image.pullPolicy",
    "controllerManager.manager.resources",
    "controllerManager.manager.podSecurityContext",
    "controllerManager.manager.containerSecurityContext",
    "controllerManager.manager.podAnnotations",
    "controllerManager.manager.priorityClassName",
    "controllerManager.readinessProbe",
    "controllerManager.livenessProbe",
    "controllerManager.nodeSelector",
    "controllerManager.tolerations",
    "controllerManager.topologySpreadConstraints",
    "controllerManager.podDisruptionBudget.enabled",
    "controllerManager.podDisruptionBudget.minAvailable",
    "managerConfig.controllerManagerConfigYaml",
    "metricsService.ports",
    "metricsService.type",
    "metricsService.labels",
    "metricsService.annotations",
    "webhookService.ports",
    "webhookService.type",
    "webhookService.ipDualStack.enabled",
    "webhookService.ipDualStack.ipFamilies",
    "webhookService.ipDualStack.ipFamilyPolicy",
    "controllerManager.featureGates",
    "controllerManager.manager.logLevel",
    "controllerManager.strategy",
    "controllerManager.hostNetwork",
    "controllerManager.dnsPolicy",
    "kubernetesClusterDomain",
    "certManager.issuerRef",
    "mutatingWebhook.reinvocationPolicy",
]


def test_chart_values_use_kueues_names():
    values = yaml.safe_load(chart.render()["values.yaml"])
    for path in UPSTREAM_VALUE_PATHS:
        node: Any = values
        for part in path.split("."):
            assert isinstance(node, dict) and part in node, f"values.yaml lacks {path}"
            node = node[part]
    # Every value the templates read exists in values.yaml, but the upstream ones refused when set.
    templates = "".join(t for name, t in chart.render().items() if name.startswith("templates/"))
    for ref in set(re.findall(r"\.Values\.([\w.]+)", templates)) - set(values_schema.REFUSED):
        node = values
        for part in ref.split("."):
            assert part in node, f"templates read .Values.{ref}, which values.yaml lacks"
            node = node[part]


def test_the_values_schema_closes_every_level_of_the_defaults():
    """Each key of values.yaml is one the schema names, and each object the chart builds itself is closed,
    so Helm refuses a misspelt key at any depth (tests/integration/test_chart.py runs helm on it)."""
    schema = json.loads(chart.render()["values.schema.json"])
    values = yaml.safe_load(chart.render()["values.yaml"])

    def walk(value: Any, node: dict[str, Any], path: str) -> None:
        if not isinstance(value, dict) or "properties" not in node:
            return
        assert node.get("additionalProperties") is False, f"{path or '/'} is open"
        for key, child in value.items():
            assert key in node["properties"], f"the schema lacks {path}/{key}"
            walk(child, node["properties"][key], f"{path}/{key}")

    walk(values, schema, "")
    # The upstream values the chart refuses are admitted with their type, for the template's message.
    for key, (kind, _) in values_schema.REFUSED.items():
        assert key not in values and schema["properties"][key]["type"] == kind
