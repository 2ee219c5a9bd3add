"""The install against a real API server: manifests and chart apply, CRDs explain and print, docs' YAML is accepted.

Everything is applied with `--server-side --dry-run=server` (admission, schema and conversion
run; nothing is stored), except the few objects the printer-column test reads back.
cert-manager's and the Prometheus Operator's kinds (Issuer, Certificate, ServiceMonitor) are left
out of the dry runs: the local control plane has no CRDs for them; their YAML is checked by the
kustomize build and tests/integration/test_chart.py alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.conftest import Kubectl
from e2e.helpers import cond, wait_for, when

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "e2e" / "examples" / "docs"
UNSERVED_KINDS = {"Issuer", "Certificate", "ServiceMonitor"}


_CLUSTER_WIDE = "crd,mutatingwebhookconfigurations,validatingwebhookconfigurations,apiservices"


def _ref(doc: dict[str, Any]) -> str:
    group = doc["apiVersion"].rsplit("/", 1)[0] if "/" in doc["apiVersion"] else ""
    return f"{doc['kind'].lower()}{'.' + group if group else ''}/{doc['metadata']['name']}"


def dry_run(kubectl: Kubectl, docs: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """Server dry run of `docs` as an install would send them.

    CRDs and webhook configurations that already exist (the stack installs them pointing at a
    `url`) are checked with `replace`: an apply would merge our `service` into their `url`. So are
    the visibility APIServices and Service (the stack's have a caBundle and an ExternalName).
    """
    items = [d for d in docs if d and d["kind"] not in UNSERVED_KINDS]
    existing = set(kubectl("get", _CLUSTER_WIDE, "-o", "name").stdout.split())
    existing |= set(kubectl("get", "services", "-n", "kueue-system", "-o", "name").stdout.split())
    replaced = [d for d in items if _ref(d) in existing]
    applied = [d for d in items if _ref(d) not in existing]
    out, err, code = "", "", 0
    for verb, group in (("replace", replaced), ("apply", applied)):
        if not group:
            continue
        args = ["--server-side", "--force-conflicts", "--field-manager=pykueue-install-test"] if verb == "apply" else []
        proc = kubectl(
            verb,
            "--dry-run=server",
            *args,
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": group}),
            check=False,
        )
        out, err, code = out + proc.stdout, err + proc.stderr, code or proc.returncode
    return subprocess.CompletedProcess([verb], code, out, err)


def helm_binary(kubectl: Kubectl) -> str:
    beside = Path(kubectl.binary).parent / "helm"
    found = str(beside) if beside.exists() else shutil.which("helm")
    if not found:
        pytest.fail("no helm: run e2e/build-binaries.sh (make binaries) or put helm on PATH", pytrace=False)
    return found


@pytest.mark.parametrize("overlay", ["default", "cert-manager"])
def test_kustomize_build_applies(kubectl: Kubectl, overlay: str) -> None:
    built = kubectl("kustomize", str(ROOT / "manifests" / overlay)).stdout
    docs = [d for d in yaml.safe_load_all(built) if d]
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "ClusterRole", "MutatingWebhookConfiguration", "CustomResourceDefinition"} <= kinds
    assert ("Certificate" in kinds) == (overlay == "cert-manager")
    proc = dry_run(kubectl, docs)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "values",
    [
        [],
        [
            "--set",
            "enableCertManager=true",
            "--set",
            "enablePrometheus=true",
            "--set",
            "controllerManager.podDisruptionBudget.enabled=true",
        ],
        [
            "--set-json",
            'controllerManager.featureGates=[{"name":"ShortWorkloadNames","enabled":true}]',
            "--set",
            "controllerManager.manager.logLevel=3",
            "--set",
            "controllerManager.strategy.rollingUpdate.maxSurge=0",
            "--set",
            "controllerManager.hostNetwork=true",
            "--set",
            "controllerManager.dnsPolicy=ClusterFirstWithHostNet",
            "--set",
            "webhookService.ipDualStack.enabled=true",
            # The default families put IPv6 first, which a single-stack IPv4 API server refuses (as upstream's chart).
            "--set-json",
            'webhookService.ipDualStack.ipFamilies=["IPv4"]',
            "--set",
            "mutatingWebhook.reinvocationPolicy=IfNeeded",
        ],
    ],
    ids=["defaults", "cert-manager, prometheus, pdb", "upstream's manager, service and webhook values"],
)
def test_helm_chart_renders_and_applies(kubectl: Kubectl, values: list[str]) -> None:
    rendered = subprocess.run(
        [
            helm_binary(kubectl),
            "template",
            "kueue",
            str(ROOT / "charts" / "pykueue"),
            "--namespace",
            "kueue-system",
            *values,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    assert any(d["kind"] == "Deployment" for d in docs)
    proc = dry_run(kubectl, docs)
    assert proc.returncode == 0, proc.stderr


def test_kubectl_explain_reads_the_schema(kubectl: Kubectl) -> None:
    out = kubectl("explain", "clusterqueue.spec.resourceGroups").stdout
    assert "coveredResources" in out and "flavors" in out
    out = kubectl(
        "explain",
        "workloads.spec.podSets.template.spec.containers.resources",
        "--api-version",
        "kueue.x-k8s.io/v1beta2",
    ).stdout
    assert "requests" in out


def _release(kubectl: Kubectl, kind: str, name: str, *ns: str) -> None:
    kubectl("patch", kind, name, *ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}', check=False)
    kubectl("delete", kind, name, *ns, "--wait=false", "--ignore-not-found", check=False)


def test_kubectl_get_prints_upstreams_columns(kubectl: Kubectl, namespace: str) -> None:
    objs = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "e2e-cols-rf"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "e2e-cols-cq"},
            "spec": {
                "cohortName": "e2e-cols",
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "e2e-cols-rf", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "e2e-cols-lq", "namespace": namespace},
            "spec": {"clusterQueue": "e2e-cols-cq"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "e2e-cols-wl", "namespace": namespace},
            "spec": {
                "queueName": "e2e-cols-lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
                        },
                    }
                ],
            },
        },
    ]
    kubectl.apply(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    try:

        def header(*args: str) -> list[str]:
            first = kubectl("get", *args).stdout.splitlines()[0]
            return [c for c in first.split("  ") if c.strip()]

        assert [c.strip() for c in header("cq", "e2e-cols-cq")] == ["NAME", "COHORT", "PENDING WORKLOADS"]
        assert [c.strip() for c in header("cq", "e2e-cols-cq", "-o", "wide")] == [
            "NAME",
            "COHORT",
            "STRATEGY",
            "PENDING WORKLOADS",
            "ADMITTED WORKLOADS",
        ]
        assert [c.strip() for c in header("lq", "-n", namespace)] == [
            "NAME",
            "CLUSTERQUEUE",
            "PENDING WORKLOADS",
            "ADMITTED WORKLOADS",
        ]
        assert [c.strip() for c in header("rf", "e2e-cols-rf")] == ["NAME", "AGE"]
        assert [c.strip() for c in header("workloads", "-n", namespace)] == [
            "NAME",
            "QUEUE",
            "RESERVED IN",
            "ADMITTED",
            "FINISHED",
            "AGE",
        ]
        combined = kubectl("get", "cq,rf", "-o", "name").stdout
        assert "clusterqueue.kueue.x-k8s.io/e2e-cols-cq" in combined
    finally:
        _release(kubectl, "workload", "e2e-cols-wl", "-n", namespace)
        _release(kubectl, "localqueue", "e2e-cols-lq", "-n", namespace)
        _release(kubectl, "clusterqueue", "e2e-cols-cq")
        _release(kubectl, "resourceflavor", "e2e-cols-rf")


def test_docs_admin_examples_are_accepted(kubectl: Kubectl) -> None:
    docs = [d for d in yaml.safe_load_all((DOCS / "admin.yaml").read_text()) if d]
    assert {d["apiVersion"] for d in docs} == {"kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"}
    proc = dry_run(kubectl, docs)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("(server dry run)") == len(docs)


def test_docs_user_examples_are_accepted(kubectl: Kubectl, namespace: str) -> None:
    docs = [d for d in yaml.safe_load_all((DOCS / "user.yaml").read_text().replace("NAMESPACE", namespace)) if d]
    proc = dry_run(kubectl, docs)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("(server dry run)") == len(docs)


def test_a_broken_docs_example_is_still_refused(kubectl: Kubectl) -> None:
    """Guard against a dry run that accepts anything: our webhook must still deny bad input."""
    docs = [d for d in yaml.safe_load_all((DOCS / "admin.yaml").read_text()) if d]
    cq = next(d for d in docs if d["metadata"]["name"] == "e2e-docs-cluster-queue")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 99
    cq["spec"]["cohortName"] = "c"
    proc = dry_run(kubectl, [cq])
    assert proc.returncode != 0
    assert 'admission webhook "vclusterqueue.kb.io" denied the request' in proc.stderr


def test_internal_cert_manager_against_the_api_server(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    """Two cert managers share one Secret and inject its CA through real PATCHes.

    Targets are throwaway webhook configurations and a throwaway converting CRD, so the stack's
    own (url-based) webhooks keep their CA.
    """
    from webhook import certmanager as cm
    from webhook.kube import Kube

    base = f"e2e-{namespace}"
    service = {"name": f"{base}-webhook-service", "namespace": namespace, "path": "/never", "port": 443}
    hook = {
        "name": "noop.e2e.pykueue.dev",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "clientConfig": {"service": service},
        "rules": [
            {
                "apiGroups": ["e2e.pykueue.dev"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["nothings"],
            }
        ],
    }
    crd_name = f"{base.replace('-', '')}s.e2e.pykueue.dev"
    version = {"served": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
    objs = [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": f"{base}-mutating-webhook-configuration"},
            "webhooks": [hook],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"{base}-validating-webhook-configuration"},
            "webhooks": [hook, {**hook, "name": "two.e2e.pykueue.dev"}],
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": crd_name},
            "spec": {
                "group": "e2e.pykueue.dev",
                "scope": "Namespaced",
                "names": {"plural": crd_name.split(".")[0], "kind": "E2eThing"},
                "versions": [{"name": "v1", "storage": True, **version}, {"name": "v2", "storage": False, **version}],
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": service}},
                },
            },
        },
    ]
    kubectl.apply(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    try:
        mutating, validating = cm.webhook_configuration_names(f"{base}-webhook-service")
        targets = cm.Targets(
            namespace=namespace,
            secret_name="kueue-webhook-server-cert",
            dns_name=f"{base}-webhook-service.{namespace}.svc",
            cert_dir=tmp_path / "a",
            mutating=mutating,
            validating=validating,
            crds=(crd_name,),
        )
        kube = Kube(str(kubectl.kubeconfig))
        first = cm.CertManager(kube, targets)
        assert first.sync() and first.ready()
        second = cm.CertManager(
            kube, cm.Targets(**{**{f: getattr(targets, f) for f in targets.__slots__}, "cert_dir": tmp_path / "b"})
        )
        assert second.sync()
        assert (tmp_path / "a" / "tls.crt").read_bytes() == (tmp_path / "b" / "tls.crt").read_bytes()
        secret = kubectl.get("secret", "-n", namespace, "kueue-webhook-server-cert")
        assert sorted(secret["data"]) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
        bundle = secret["data"]["ca.crt"]
        for kind, name in (("mutatingwebhookconfiguration", mutating), ("validatingwebhookconfiguration", validating)):
            assert {h["clientConfig"]["caBundle"] for h in kubectl.get(kind, name)["webhooks"]} == {bundle}
        crd = kubectl.get("crd", crd_name)
        assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] == bundle
    finally:
        for obj in objs:
            kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--wait=false", check=False)


SERVED_ONLY = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: e2e-prc}
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: e2e-prov}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: e2e-prc}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: e2e-topology}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: e2e-mkconf}
spec:
  clusters: [e2e-worker1]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: e2e-worker1}
spec:
  kubeConfig: {locationType: Secret, location: worker1-secret}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: e2e-prov-cq}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks: [{name: e2e-prov}]
"""


def test_kinds_we_only_serve_accept_upstreams_yaml(kubectl: Kubectl) -> None:
    """ProvisioningRequestConfig, Topology and MultiKueue objects apply as with upstream's CRDs (no
    controller of ours acts on them); a v1beta1 MultiKueueCluster reads back in v1beta2's shape
    through our conversion webhook. The worker keeps running
    beside them: a ClusterQueue naming the ProvisioningRequest check (whose controller we do not run)
    is inactive, as for any check nobody marks Active."""
    docs = [d for d in yaml.safe_load_all(SERVED_ONLY) if d]
    try:
        proc = kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs), check=False)
        assert proc.returncode == 0, proc.stderr
        prc = kubectl.get("provisioningrequestconfig", "e2e-prc")
        assert prc["spec"]["retryStrategy"] == {
            "backoffBaseSeconds": 60,
            "backoffLimitCount": 3,
            "backoffMaxSeconds": 1800,
        }
        cluster = kubectl.get("multikueueclusters.v1beta2.kueue.x-k8s.io", "e2e-worker1")
        assert cluster["spec"] == {
            "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "worker1-secret"}}
        }
        assert kubectl.get("topo", "e2e-topology")["spec"]["levels"][-1] == {"nodeLabel": "kubernetes.io/hostname"}
        active = wait_for(
            "the ClusterQueue's Active condition",
            lambda: when(
                cond(kubectl.get("clusterqueue", "e2e-prov-cq"), "Active"), lambda c: c.get("status") == "False"
            ),
        )
        assert (active["reason"], active["message"]) == (
            "AdmissionCheckInactive",
            "Can't admit new workloads: references inactive AdmissionCheck(s): e2e-prov.",
        )
        assert not (kubectl.get("admissioncheck", "e2e-prov").get("status") or {}).get("conditions")
    finally:
        for d in reversed(docs):
            kubectl(
                "delete", d["kind"].lower(), d["metadata"]["name"], "--ignore-not-found", "--wait=false", check=False
            )


UPSTREAM_SHAPED = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: e2e-dry-prc}
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
  podSetMergePolicy: IdenticalWorkloadSchedulingRequirements
  retryStrategy: {backoffLimitCount: 2, backoffBaseSeconds: 0, backoffMaxSeconds: 1800}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: e2e-dry-prov}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: e2e-dry-prc}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: e2e-dry-topology}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: e2e-dry-mkconf}
spec:
  clusters: [e2e-dry-worker1, e2e-dry-worker2]
  quotaManagement: Manual
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: e2e-dry-worker1}
spec:
  clusterSource:
    kubeConfig: {locationType: Secret, location: worker1-secret}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: e2e-dry-worker2}
spec:
  clusterSource:
    clusterProfileRef: {name: worker2-profile}
"""


def test_upstream_shaped_objects_of_the_served_only_kinds_pass_a_server_dry_run(kubectl: Kubectl) -> None:
    """v1beta2 objects shaped like upstream's provisioning and MultiKueue setup examples are accepted
    (nothing stored); objects breaking the CRD's rules (an enum, CEL rules, minItems) are refused."""
    docs = [d for d in yaml.safe_load_all(UPSTREAM_SHAPED) if d]
    proc = dry_run(kubectl, docs)
    assert proc.returncode == 0, proc.stderr
    for d in docs:
        assert f"{d['kind'].lower()}.kueue.x-k8s.io/{d['metadata']['name']}" in proc.stdout, proc.stdout

    def refused(kind: str, spec: dict[str, Any]) -> str:
        obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": "e2e-dry-bad"}, "spec": spec}
        result = dry_run(kubectl, [obj])
        assert result.returncode != 0, f"{kind} {spec} was accepted"
        return result.stderr

    err = refused("MultiKueueCluster", {"clusterSource": {"kubeConfig": {"locationType": "File", "location": "x"}}})
    assert 'spec.clusterSource.kubeConfig.locationType: Unsupported value: "File"' in err, err
    err = refused(
        "MultiKueueCluster", {"clusterSource": {"kubeConfig": {"location": "x"}, "clusterProfileRef": {"name": "p"}}}
    )
    assert "exactly one of the fields in [kubeConfig clusterProfileRef] must be set" in err, err
    err = refused(
        "Topology",
        {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "cloud.provider.com/topology-rack"}]},
    )
    assert "the kubernetes.io/hostname label can only be used at the lowest level of topology" in err, err
    err = refused("Topology", {"levels": []})
    assert "spec.levels: Invalid value" in err and "1" in err, err
    err = refused("ProvisioningRequestConfig", {"managedResources": ["nvidia.com/gpu"]})
    # kubectl checks required fields against the served OpenAPI (our schema) before the server does
    assert (
        'missing required field "provisioningClassName"' in err or "spec.provisioningClassName: Required value" in err
    ), err
