"""charts/pykueue rendered by the project's helm (e2e/tools/helm, built into ~/.cache/pykueue by
e2e/build-binaries.sh) for every option combination that matters: each document is one well-formed
object of the kind its template should produce, ports are named as upstream's chart names them, and
every selector selects what it should. (The chart's text itself is checked in
tests/unit/install/test_manifests.py; applying it to an API server, in e2e/test_install.py.)
"""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import Cluster  # e2e/, put on sys.path by conftest.py

from webhook import __main__ as entry
from webhook.certmanager import conversion_crd_names
from webhook.config import Configuration, Feature, parse
from webhook.install import objects as o

CHART = Path(__file__).resolve().parents[2] / "charts" / "pykueue"
NAMESPACE = "kueue-system"
NAMESPACED = {
    "ConfigMap",
    "Deployment",
    "Service",
    "Secret",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "PodDisruptionBudget",
    "ServiceMonitor",
    "Issuer",
    "Certificate",
    "Pod",
}
# Upstream binds extension-apiserver-authentication-reader where that Role lives, whatever the release namespace.
OTHER_NAMESPACE = {("RoleBinding", "kueue-visibility-server-auth-reader"): "kube-system"}
CRD_COUNT = len(o.crd_objects(o.Settings()))


class _StrictLoader(yaml.CSafeLoader):
    """Refuses a mapping with a repeated key: two objects run together in one document (no `---`
    between them) show up as exactly that, and a plain load would keep the second silently."""


def _no_duplicates(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
    repeated = sorted(str(k) for k, n in Counter(keys).items() if n > 1)
    if repeated:
        raise yaml.constructor.ConstructorError(None, None, f"repeated keys {repeated}", node.start_mark)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> str:
    binary = Cluster(tmp_path_factory.mktemp("bin")).bin_dir / "helm"  # resolves (and builds) the binaries only
    assert binary.exists(), f"no {binary}: run e2e/build-binaries.sh (make binaries)"
    return str(binary)


def render(helm: str, values: Mapping[str, Any], tmp_path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(template file, object) for every document `helm template` prints, each parsed strictly."""
    values_file = tmp_path / "values.json"  # JSON is YAML
    values_file.write_text(json.dumps(values))
    out = subprocess.run(
        [helm, "template", "kueue", str(CHART), "--namespace", NAMESPACE, "--values", str(values_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    docs = []
    for chunk in out.stdout.split("\n---\n"):
        source, _, body = chunk.removeprefix("---\n").partition("\n")
        assert source.startswith("# Source: pykueue/templates/"), f"a document without its source: {chunk[:200]}"
        parsed = [d for d in yaml.load_all(body, Loader=_StrictLoader) if d is not None]
        assert len(parsed) == 1, f"{source}: {len(parsed)} objects in one document"
        docs.append((source.removeprefix("# Source: pykueue/"), parsed[0]))
    return docs


def _subset(small: Mapping[str, str], big: Mapping[str, str]) -> bool:
    return all(big.get(k) == v for k, v in small.items())


BOOLEANS = (
    "enableCertManager",
    "enablePrometheus",
    "controllerManager.podDisruptionBudget.enabled",
    "enableVisibilityAPF",
    "enableVisibilityAuthReaderRoleBinding",
)


def _values(flags: tuple[bool, ...], replicas: int) -> dict[str, Any]:
    """BOOLEANS set to `flags` (dotted paths nested), and the replica count."""
    values: dict[str, Any] = {"controllerManager": {"replicas": replicas}}
    for path, flag in zip(BOOLEANS, flags, strict=True):
        *parents, leaf = path.split(".")
        node = values
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = flag
    return values


EVERYTHING_SET = {
    "enableCertManager": True,
    "enablePrometheus": True,
    "enableVisibilityAPF": True,
    "enableVisibilityAuthReaderRoleBinding": True,
    "controllerManager": {
        "replicas": 3,
        "podDisruptionBudget": {"enabled": True, "minAvailable": "50%"},
        "imagePullSecrets": [{"name": "pull"}],
        "nodeSelector": {"pool": "system"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"control-plane": "controller-manager"}},
            }
        ],
        "manager": {"priorityClassName": "system-cluster-critical", "podAnnotations": {"team": "batch"}},
    },
    "metricsService": {"labels": {"scrape": "yes"}, "annotations": {"note": "metrics"}},
    "metrics": {
        "prometheusNamespace": "observability",
        "serviceMonitor": {"tlsConfig": {"insecureSkipVerify": False, "serverName": "kueue"}},
    },
}

# Every on/off combination of the booleans; the replica count (1 or 3) follows the parity of the
# flags, so each boolean, either way, meets both counts.
_SHORT = ("certManager", "prometheus", "pdb", "visibilityAPF", "authReaderBinding")
COMBINATIONS = [
    pytest.param(
        _values(flags, replicas := 1 + 2 * (sum(flags) % 2)),
        id=" ".join(f"{name}={int(flag)}" for name, flag in zip(_SHORT, flags, strict=True)) + f" replicas={replicas}",
    )
    for flags in itertools.product([False, True], repeat=len(BOOLEANS))
] + [
    pytest.param(EVERYTHING_SET, id="every optional value set"),
    pytest.param({"webhookService": {"waitUntilReachable": False}}, id="no service-ready hook"),
]


_MISSING = object()
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())


def _value(values: Mapping[str, Any], path: str) -> Any:
    """The value at dotted `path` as the chart sees it: the given one, else the chart's default."""
    for source in (values, DEFAULTS):
        node: Any = source
        for part in path.split("."):
            node = node.get(part, _MISSING) if isinstance(node, Mapping) else _MISSING
        if node is not _MISSING:
            return node
    raise KeyError(path)


@pytest.mark.parametrize("values", COMBINATIONS)
def test_every_document_is_one_object_of_the_expected_kind_with_matching_selectors(
    helm: str, tmp_path: Path, values: dict[str, Any]
) -> None:
    cert_manager, prometheus, pdb, apf, auth_reader = (_value(values, path) for path in BOOLEANS)
    docs = render(helm, values, tmp_path)

    # Each object is well formed, in the release namespace when namespaced, and comes once.
    for source, doc in docs:
        assert isinstance(doc.get("apiVersion"), str) and isinstance(doc.get("kind"), str), (source, doc)
        assert doc["metadata"]["name"], (source, doc)
        namespace = OTHER_NAMESPACE.get(
            (doc["kind"], doc["metadata"]["name"]), NAMESPACE if doc["kind"] in NAMESPACED else None
        )
        assert doc["metadata"].get("namespace") == namespace, (source, doc)
    refs = Counter((doc["kind"], doc["metadata"]["name"]) for _, doc in docs)
    assert not [r for r, n in refs.items() if n > 1], "objects rendered twice"

    # Each template produces the kinds it should, and only when its option is on.
    kinds: dict[str, Counter[str]] = {}
    for source, doc in docs:
        kinds.setdefault(source, Counter())[doc["kind"]] += 1
    expected = {
        "templates/crds.yaml": Counter({"CustomResourceDefinition": CRD_COUNT}),
        "templates/manager.yaml": Counter({"ConfigMap": 1, "Deployment": 1, "Service": 2}),
        "templates/webhooks.yaml": Counter({"MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1}),
        "templates/visibility.yaml": Counter(
            {"Service": 1, "APIService": 3, "ClusterRoleBinding": 1, "RoleBinding": int(auth_reader)}
        ),
    }
    if _value(values, "webhookService.waitUntilReachable"):
        expected["templates/service-ready-hook.yaml"] = Counter({"Pod": 1})
    if apf:
        expected["templates/visibility-apf.yaml"] = Counter({"FlowSchema": 1, "PriorityLevelConfiguration": 1})
    if pdb:
        expected["templates/manager-pdb.yaml"] = Counter({"PodDisruptionBudget": 1})
    if prometheus:
        expected["templates/prometheus.yaml"] = Counter({"ServiceMonitor": 1, "Role": 1, "RoleBinding": 1})
    if cert_manager:
        expected["templates/certmanager.yaml"] = Counter({"Issuer": 1, "Certificate": 1})
    else:
        assert kinds.pop("templates/internalcert.yaml")["Secret"] == 1
    assert set(kinds.pop("templates/rbac.yaml")) == {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    }
    assert kinds == expected

    objs = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in docs}
    dep = objs[("Deployment", o.DEPLOYMENT)]
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["replicas"] == _value(values, "controllerManager.replicas")
    assert _subset(dep["spec"]["selector"]["matchLabels"], pod_labels)
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container_ports == {"webhook-server": o.WEBHOOK_PORT, "metrics": o.METRICS_PORT}

    # Services select the pods and reach container ports; the metrics port is named as upstream's.
    services = {name: svc for (kind, name), svc in objs.items() if kind == "Service"}
    for svc in services.values():
        assert _subset(svc["spec"]["selector"], pod_labels), svc["metadata"]["name"]
    webhook, metrics = services[o.WEBHOOK_SERVICE], services[o.METRICS_SERVICE]
    assert webhook["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": o.WEBHOOK_PORT}]
    kustomize_metrics = next(
        x for x in o.controller_objects(o.Settings()) if x["metadata"]["name"] == o.METRICS_SERVICE
    )
    assert (
        metrics["spec"]["ports"]
        == kustomize_metrics["spec"]["ports"]
        == [{"name": "https", "port": o.METRICS_PORT, "protocol": "TCP", "targetPort": "metrics"}]
    )
    assert _subset(_value(values, "metricsService.labels"), metrics["metadata"]["labels"])

    # The post-install hook waits on the webhook Service, runs the manager's image where the manager
    # may run, and is no endpoint of any Service.
    ready_hook = objs.get(("Pod", f"{o.WEBHOOK_SERVICE}-ready"))
    if ready_hook is not None:
        assert ready_hook["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
        pod = ready_hook["spec"]
        manager_pod = dep["spec"]["template"]["spec"]
        (waiter,) = pod["containers"]
        assert waiter["image"] == container["image"]
        assert waiter["args"][:3] == ["service-ready", f"--service={o.WEBHOOK_SERVICE}", f"--namespace={NAMESPACE}"]
        for key in ("imagePullSecrets", "nodeSelector", "tolerations", "securityContext"):
            assert pod.get(key) == manager_pod.get(key), key
        for svc in services.values():
            assert not _subset(svc["spec"]["selector"], ready_hook["metadata"]["labels"]), svc["metadata"]["name"]

    hooks = [h for (kind, _), x in objs.items() if kind.endswith("WebhookConfiguration") for h in x["webhooks"]]
    webhook_ports = {p["port"] for p in webhook["spec"]["ports"]}
    for hook in hooks:  # every webhook calls the webhook Service on a port it serves
        service = hook["clientConfig"]["service"]
        assert (service["name"], service["namespace"], service["port"] in webhook_ports) == (
            o.WEBHOOK_SERVICE,
            NAMESPACE,
            True,
        ), hook["name"]
    assert hooks

    api_services = [x for (kind, _), x in objs.items() if kind == "APIService"]
    for ref in (x["spec"]["service"] for x in api_services):  # the visibility APIServices reach their Service
        assert ref["namespace"] == NAMESPACE and ref["port"] in {
            p["port"] for p in services[ref["name"]]["spec"]["ports"]
        }

    if pdb:
        budget = objs[("PodDisruptionBudget", o.DEPLOYMENT)]
        assert _subset(budget["spec"]["selector"]["matchLabels"], pod_labels)
        assert budget["spec"]["minAvailable"] == _value(values, "controllerManager.podDisruptionBudget.minAvailable")

    if prometheus:
        monitor = objs[("ServiceMonitor", o.SERVICE_MONITOR)]["spec"]
        selected = [
            name
            for name, svc in services.items()
            if _subset(monitor["selector"]["matchLabels"], svc["metadata"]["labels"])
        ]
        assert selected == [o.METRICS_SERVICE]
        (endpoint,) = monitor["endpoints"]
        assert endpoint["port"] in {p["name"] for p in metrics["spec"]["ports"]}
        assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics")
        assert endpoint["tlsConfig"] == _value(values, "metrics.serviceMonitor.tlsConfig")
        binding = objs[("RoleBinding", o.PROMETHEUS_ROLE)]
        assert ("Role", binding["roleRef"]["name"]) in objs
        assert {s["namespace"] for s in binding["subjects"]} == {_value(values, "metrics.prometheusNamespace")}

    # The certificate's source matches the option: cert-manager's Secret mounted, or the internal manager.
    config = parse(objs[("ConfigMap", o.CONFIG_MAP)]["data"][o.CONFIG_FILE])
    assert config.internal_cert_management.enable is not cert_manager
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert ("cert" in volumes) is cert_manager
    if cert_manager:
        certificate = objs[("Certificate", o.CERTIFICATE)]
        assert volumes["cert"]["secret"]["secretName"] == certificate["spec"]["secretName"] == o.SECRET
        inject = f"{NAMESPACE}/{o.CERTIFICATE}"
        annotated = [
            name
            for (kind, name), x in objs.items()
            if (x["metadata"].get("annotations") or {}).get(o.INJECT_CA_FROM) == inject
        ]
        assert len(annotated) == 2 + len(conversion_crd_names())  # both webhook configurations, converting CRDs


def render_error(helm: str, values: Mapping[str, Any], tmp_path: Path) -> str:
    """What `helm template` says when it refuses `values` (it must refuse them)."""
    values_file = tmp_path / "values.json"
    values_file.write_text(json.dumps(values))
    out = subprocess.run(
        [helm, "template", "kueue", str(CHART), "--namespace", NAMESPACE, "--values", str(values_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode != 0, "helm accepted the values"
    return out.stderr


def _manager(values: Mapping[str, Any]) -> dict[str, Any]:
    return {"controllerManager": {"manager": dict(values)}}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"enableCertManger": True}, "- at '': additional properties 'enableCertManger' not allowed",
                     id="misspelt top-level key"),
        pytest.param({"controllerManager": {"replica": 3}},
                     "at '/controllerManager': additional properties 'replica' not allowed", id="misspelt nested key"),
        pytest.param(_manager({"resources": {"limit": {"cpu": "1"}}}),
                     "at '/controllerManager/manager/resources': additional properties 'limit' not allowed",
                     id="misspelt key inside a Kubernetes object"),
        pytest.param({"controllerManager": {"tolerations": [{"key": "a", "tolerationSecond": 3}]}},
                     "at '/controllerManager/tolerations/0': additional properties 'tolerationSecond' not allowed",
                     id="misspelt key in a list item"),
        pytest.param({"controllerManager": {"featureGates": [{"name": "PartialAdmision", "enabled": True}]}},
                     "at '/controllerManager/featureGates/0/name': value must be one of 'AdmissionFairSharing'",
                     id="unknown feature gate"),
        pytest.param({"controllerManager": {"featureGates": [{"name": "PartialAdmission", "enabled": "no"}]}},
                     "at '/controllerManager/featureGates/0/enabled': got string, want boolean",
                     id="feature gate not a boolean"),
        pytest.param(_manager({"logLevel": 0}), "at '/controllerManager/manager/logLevel': minimum: got 0, want 1",
                     id="log level 0"),
        pytest.param(_manager({"logLevel": "verbose"}),
                     "at '/controllerManager/manager/logLevel': 'verbose' does not match pattern",
                     id="log level name"),
        pytest.param({"mutatingWebhook": {"reinvocationPolicy": "Always"}},
                     "at '/mutatingWebhook/reinvocationPolicy': value must be one of 'Never', 'IfNeeded'",
                     id="reinvocation policy"),
        pytest.param({"certManager": {"issuerRef": {"kind": "ClusterIssuer"}}},
                     "at '/certManager/issuerRef': properties 'name' required, if 'kind' exists",
                     id="issuerRef without a name"),
        pytest.param({"kueueViz": {"backend": {"ingress": {"enabled": False}}}},
                     "kueueViz: not supported by pykueue: upstream's KueueViz images are not shipped; set "
                     "enableKueueViz: true for pykueue's own dashboard", id="kueueViz"),
        pytest.param({"fullnameOverride": "queues"}, "fullnameOverride: not supported by pykueue: object names are "
                     "fixed (kueue-*)", id="fullnameOverride"),
        pytest.param({"nameOverride": "queues"}, "nameOverride: not supported by pykueue", id="nameOverride"),
        pytest.param({"enableMutatingAdmissionPolicy": True},
                     "enableMutatingAdmissionPolicy: not supported by pykueue: its policy clears MultiKueue's",
                     id="enableMutatingAdmissionPolicy"),
    ],
)  # fmt: skip
def test_an_unknown_misspelt_or_refused_value_stops_helm(
    helm: str, tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    assert message in render_error(helm, values, tmp_path)


def test_upstreams_defaults_of_refused_values_are_accepted(helm: str, tmp_path: Path) -> None:
    """Upstream's values.yaml sets these to do nothing; a copy of it must not fail on them."""
    docs = render(
        helm,
        {"nameOverride": "", "fullnameOverride": "", "enableMutatingAdmissionPolicy": False, "kueueViz": {}},
        tmp_path,
    )
    assert docs


UPSTREAM_VALUES = {
    "kubernetesClusterDomain": "corp.example",
    "enableCertManager": True,
    "certManager": {"issuerRef": {"name": "company-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}},
    "controllerManager": {
        "featureGates": [
            {"name": "ShortWorkloadNames", "enabled": True},
            {"name": "PartialAdmission", "enabled": False},
        ],
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "manager": {"logLevel": "debug"},
    },
    "webhookService": {
        "ipDualStack": {"enabled": True, "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack"}
    },
    "mutatingWebhook": {"reinvocationPolicy": "IfNeeded"},
}


def test_upstreams_values_reach_the_objects(helm: str, tmp_path: Path) -> None:
    objs = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in render(helm, UPSTREAM_VALUES, tmp_path)}
    dep = objs[("Deployment", o.DEPLOYMENT)]
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][-2:] == [
        "--zap-log-level=debug",
        "--feature-gates=ShortWorkloadNames=true,PartialAdmission=false",
    ]
    assert dep["spec"]["strategy"] == UPSTREAM_VALUES["controllerManager"]["strategy"]
    assert (pod["hostNetwork"], pod["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    hook_pod = objs[("Pod", f"{o.WEBHOOK_SERVICE}-ready")]["spec"]
    assert "hostNetwork" not in hook_pod  # the readiness hook stays on the pod network
    webhook = objs[("Service", o.WEBHOOK_SERVICE)]["spec"]
    assert (webhook["ipFamilies"], webhook["ipFamilyPolicy"]) == (["IPv4", "IPv6"], "RequireDualStack")
    mutating = objs[("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration")]["webhooks"]
    assert {h["reinvocationPolicy"] for h in mutating} == {"IfNeeded"}
    certificate = objs[("Certificate", o.CERTIFICATE)]["spec"]
    assert certificate["issuerRef"] == UPSTREAM_VALUES["certManager"]["issuerRef"]
    assert certificate["dnsNames"][-1] == f"{o.WEBHOOK_SERVICE}.{NAMESPACE}.svc.corp.example"
    assert ("Issuer", o.ISSUER) not in objs  # the named issuer replaces the self-signed one


def test_by_default_the_manager_logs_at_upstreams_level_and_sets_no_gates(helm: str, tmp_path: Path) -> None:
    objs = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in render(helm, {}, tmp_path)}
    dep = objs[("Deployment", o.DEPLOYMENT)]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert container["args"][-1] == "--zap-log-level=2"
    assert not [a for a in container["args"] if a.startswith("--feature-gates")]
    assert "strategy" not in dep["spec"]
    assert not {"hostNetwork", "dnsPolicy"} & set(dep["spec"]["template"]["spec"])
    assert "ipFamilies" not in objs[("Service", o.WEBHOOK_SERVICE)]["spec"]


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Starting the manager in-process sets up the root logger; put pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


def _start(container: Mapping[str, Any], config: Mapping[str, Any], tmp_path: Path) -> Configuration | None:
    """What the manager's start makes of its rendered args and mounted Configuration: the Configuration
    it would run with, or None when it refuses to start."""
    path = tmp_path / o.CONFIG_FILE
    path.write_text(config["data"][o.CONFIG_FILE])
    args = [f"--config={path}" if a.startswith("--config=") else a for a in container["args"]]
    return entry._configure(entry._parser().parse_args(args))


def test_the_manager_honours_the_charts_feature_gates_and_log_level(
    helm: str, tmp_path: Path, restore_logging: None
) -> None:
    objs = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in render(helm, UPSTREAM_VALUES, tmp_path)}
    (container,) = objs[("Deployment", o.DEPLOYMENT)]["spec"]["template"]["spec"]["containers"]
    cfg = _start(container, objs[("ConfigMap", o.CONFIG_MAP)], tmp_path)
    assert cfg is not None
    assert cfg.feature_enabled(Feature.SHORT_WORKLOAD_NAMES)
    assert not cfg.feature_enabled(Feature.PARTIAL_ADMISSION)
    assert logging.getLogger().level == logging.INFO - 1  # zap's debug: V(1)


def test_gates_in_both_the_chart_and_managerconfig_stop_the_manager(
    helm: str, tmp_path: Path, restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """As upstream's manager: the flag and the Configuration's featureGates cannot both be given."""
    values = {
        "controllerManager": {"featureGates": [{"name": "ShortWorkloadNames", "enabled": True}]},
        "managerConfig": {
            "controllerManagerConfigYaml": DEFAULTS["managerConfig"]["controllerManagerConfigYaml"]
            + "featureGates:\n  PartialAdmission: true\n"
        },
    }
    objs = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in render(helm, values, tmp_path)}
    (container,) = objs[("Deployment", o.DEPLOYMENT)]["spec"]["template"]["spec"]["containers"]
    assert _start(container, objs[("ConfigMap", o.CONFIG_MAP)], tmp_path) is None
    assert (
        'featureGates: Invalid value: {"PartialAdmission":true}: feature gates for CLI and configuration cannot '
        "both specified" in capsys.readouterr().err
    )


# Kueue's chart values.yaml at v0.19.2, every value but its `kueueViz` block (refused) and its
# managerConfig (whose frameworks the manager refuses; tests/unit/test_main.py).
KUEUE_VALUES = yaml.safe_load("""
nameOverride: ''
fullnameOverride: ''
enablePrometheus: false
enableCertManager: false
certManager: {issuerRef: {}}
enableVisibilityAPF: false
enableMutatingAdmissionPolicy: false
enableVisibilityAuthReaderRoleBinding: true
enableKueueViz: false
kubernetesClusterDomain: cluster.local
controllerManager:
  featureGates: []
  strategy: {}
  hostNetwork: false
  dnsPolicy: ''
  manager:
    priorityClassName: null
    image: {repository: us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue, tag: release-0.19, pullPolicy: Always}
    podAnnotations: {}
    logLevel: 2
    resources: {limits: {cpu: '2', memory: 512Mi}, requests: {cpu: 500m, memory: 512Mi}}
    podSecurityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
    containerSecurityContext:
      {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  replicas: 1
  imagePullSecrets: []
  readinessProbe: {initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1}
  livenessProbe: {initialDelaySeconds: 15, periodSeconds: 20, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1}
  nodeSelector: {}
  tolerations: []
  topologySpreadConstraints: []
  podDisruptionBudget: {enabled: false, minAvailable: 1}
metricsService:
  ports: [{name: https, port: 8443, protocol: TCP, targetPort: 8443}]
  type: ClusterIP
  labels: {}
  annotations: {}
webhookService:
  ipDualStack: {enabled: false, ipFamilies: [IPv6, IPv4], ipFamilyPolicy: PreferDualStack}
  ports: [{port: 443, protocol: TCP, targetPort: 9443}]
  type: ClusterIP
mutatingWebhook: {reinvocationPolicy: Never}
metrics:
  prometheusNamespace: monitoring
  serviceMonitor: {tlsConfig: {insecureSkipVerify: true}}
""")


def test_kueues_own_values_file_is_accepted(helm: str, tmp_path: Path) -> None:
    objs = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in render(helm, KUEUE_VALUES, tmp_path)}
    dep = objs[("Deployment", o.DEPLOYMENT)]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert dep["spec"]["replicas"] == 1
    assert container["image"] == "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:release-0.19"
    assert container["args"][-1] == "--zap-log-level=2"
    with_viz = {**KUEUE_VALUES, "kueueViz": {"backend": {"nodeSelector": {}}}}
    assert "set enableKueueViz: true for pykueue's own dashboard" in render_error(helm, with_viz, tmp_path)


def test_the_alert_rules_and_grafana_dashboard_are_the_charts_files(helm: str, tmp_path: Path) -> None:
    """`metrics.prometheusRule` and `metrics.grafanaDashboard` (ours, off by default) render the
    files of charts/pykueue/files/ unchanged: the rules file as a PrometheusRule's spec (its
    `{{ $labels.x }}` left for Prometheus), the dashboard JSON in a ConfigMap with the label Grafana's
    sidecar looks for."""
    kinds = {(doc["kind"], doc["metadata"]["name"]) for _, doc in render(helm, {}, tmp_path)}
    assert ("PrometheusRule", "kueue-alerts") not in kinds
    assert ("ConfigMap", "kueue-grafana-dashboard") not in kinds

    values = {
        "metrics": {
            "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
            "grafanaDashboard": {"enabled": True},
        }
    }
    objs = {(doc["kind"], doc["metadata"]["name"]): (source, doc) for source, doc in render(helm, values, tmp_path)}
    source, rule = objs[("PrometheusRule", "kueue-alerts")]
    assert source == "templates/prometheus-rules.yaml"
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["namespace"] == NAMESPACE
    assert rule["metadata"]["labels"] == {"app.kubernetes.io/name": "kueue", "release": "prometheus"}
    assert rule["spec"] == yaml.safe_load((CHART / "files" / "kueue-alerts.rules.yaml").read_text())
    assert "{{ $labels.cluster_queue }}" in rule["spec"]["groups"][0]["rules"][0]["annotations"]["summary"]
    source, dashboard = objs[("ConfigMap", "kueue-grafana-dashboard")]
    assert source == "templates/grafana-dashboard.yaml"
    assert dashboard["metadata"]["namespace"] == NAMESPACE
    assert dashboard["metadata"]["labels"] == {"app.kubernetes.io/name": "kueue", "grafana_dashboard": "1"}
    assert json.loads(dashboard["data"]["kueue.json"]) == json.loads(
        (CHART / "files" / "kueue-dashboard.json").read_text()
    )
