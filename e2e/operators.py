#!/usr/bin/env python3
"""The external operators upstream Kueue's extended e2e suites need, for real, beside the system.

JobSet, LeaderWorkerSet, AppWrapper, Kubeflow Trainer, the Kubeflow training-operator, the MPI
operator and KubeRay are built by e2e/build-operators.sh at the versions upstream Kueue's go.mod pins, and run here
as host processes against the local control plane (kwok runs their pods, the kube-controller-manager
their Jobs and StatefulSets): the local stack's, where our server is a host process too, or the real
node's (e2e/upstream_real.py), where the system is a Deployment on the node and the operators run in the
node's network namespace, so 127.0.0.1 is the API server's loopback there as well:
  - manifests: each operator's own kustomization in its module (the release's CRDs, RBAC, webhook
    configurations), rendered by `kubectl kustomize` as upstream's hack/testing/e2e-common.sh applies
    them (the MPI operator's: its release file deploy/v2beta1/mpi-operator.yaml; the training-operator's
    without its MPIJob CRD, which the MPI operator's replaces, as upstream's kubeflow-manifest-patch;
    KubeRay's config/default, whose CRDs of up to 1.3 MB go in by server-side apply, which keeps no
    last-applied annotation, the reason upstream's e2e-common.sh `kubectl create`s them);
    Deployments, Services, Secrets and ConfigMaps dropped (the process runs on the host), every
    webhook and CRD conversion clientConfig a URL https://127.0.0.1:<its port> with our CA's bundle;
  - certificates: each operator gets its own directory of certificates from our CA and its own TMPDIR.
    JobSet, LWS and Trainer run with internal cert management off (they would all write the fixed
    /tmp/k8s-webhook-server/serving-certs); AppWrapper and the training-operator cannot switch it off,
    so their rotators' Secrets are made in advance with our certificate (valid for 127.0.0.1 too) and
    the rotators keep them. The training-operator's rotator also waits for a tls.crt in that fixed
    directory (where the kubelet would mount the Secret) while its webhook server reads its TMPDIR's:
    the fixed one is made if missing, and removed at `down` by the run that made it;
  - ports: webhook, metrics and health ports of their own (AppWrapper's webhook port is fixed, 9443;
    the MPI operator's health port, 8080; the MPI operator and KubeRay have no webhook);
  - stand-ins: the Deployment each upstream suite waits for (jobset-system/jobset-controller-manager,
    ...) with one kwok pod, Available and never restarted, as for Kueue's own Deployment;
  - Trainer needs JobSet, and its ClusterTrainingRuntimes (manifests/overlays/runtimes) are applied once
    its webhook answers;
  - the training-operator runs every scheme but MPI (`--enable-scheme`, as upstream's patch), the MPI
    operator its v2beta1 controller; the latter is ready once it holds its Lease;
  - the Spark operator (spark-operator v2.5.1) does not run: its spark-submit needs real containers and a Spark
    image (kwok's pods run no process; no Spark image is assembled from Maven's jars yet). Its SparkApplication CRD (config/crd/bases in its module, fetched
    from the Go module proxy into the Go module cache) goes in, and e2e tests play the operator's part.
A process that exits or is not ready in time fails the bring-up, naming its log.

    python e2e/operators.py build [NAME...]      # e2e/build-operators.sh
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from cluster import Cluster, Proc, free_port, kill_group, read_pid_file, spawn, tail, write_pid_file  # noqa: E402
from upstream_build import kueue_module_dir  # noqa: E402

BUILD_SCRIPT = HERE / "build-operators.sh"
#: AppWrapper's webhook server port (cmd/main.go hard-codes it).
APPWRAPPER_WEBHOOK_PORT = 9443
#: The MPI operator's health server port (cmd/mpi-operator/app/server.go hard-codes it, on every address).
MPI_OPERATOR_HEALTH_PORT = 8080
#: Ports an operator cannot be given another of: (operator, role) -> port; nobody else is handed them.
FIXED_PORTS = {("appwrapper", "webhook"): APPWRAPPER_WEBHOOK_PORT, ("mpi-operator", "health"): MPI_OPERATOR_HEALTH_PORT}
#: Operators that take no configuration file, only flags (command_line).
FLAGS_ONLY = frozenset({"training-operator", "mpi-operator", "kuberay"})
#: The training-operator's schemes as upstream's e2e enables them (test/e2e/config/multikueue/
#: kubeflow-manifest-patch): all but MPI, whose MPIJob v2beta1 the MPI operator serves.
TRAINING_OPERATOR_SCHEMES = ("tfjob", "pytorchjob", "xgboostjob", "paddlejob", "jaxjob")
#: Kept from an operator's rendered manifests; the rest (Deployment, Services, Secrets, ConfigMaps) is
#: what the host process replaces.
KEPT_KINDS = frozenset(
    {
        "Namespace",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ServiceAccount",
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
    }
)
STAND_IN_LABEL = "pykueue.dev/stand-in"
#: In a directory this harness made outside its own (a cert rotator's hard-coded one), naming the run's directory.
MARKER_NAME = "MADE-BY-PYKUEUE-OPERATORS"


class OperatorError(RuntimeError):
    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"operators: step '{step}' failed: {detail}")


def log(msg: str) -> None:
    print(f"operators: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Operator:
    """One operator: where it comes from and what upstream's suites expect of it in the cluster."""

    name: str
    module: str  # Go module path, its version read from upstream Kueue's go.mod
    frameworks: tuple[str, ...]  # the Kueue integrations (integrations.frameworks) whose objects it runs
    namespace: str
    deployment: str  # the Deployment upstream's suites wait for (test/util/e2e.go)
    service: str  # its webhook Service: the serving certificate's DNS name is <service>.<namespace>.svc
    #: a kustomization directory in the module source, rendered; or a file of manifests there, read
    manifests: str
    needs: tuple[str, ...] = ()
    #: lines removed from the kustomization first, as upstream's e2e-common.sh does for Trainer's JobSet
    drop_resources: tuple[str, ...] = ()
    #: rendered objects left out ("Kind/name"), as upstream's kustomize patches delete them
    drop_objects: tuple[str, ...] = ()
    #: applied once the operator answers (Trainer's ClusterTrainingRuntimes)
    after_ready: str | None = None
    #: the Secret its cert rotator (which cannot be switched off) reads, made in advance with our certificate
    cert_secret: str | None = None
    #: the directory its cert rotator waits for a tls.crt in (hard-coded), when that is not where its webhook
    #: server reads the certificate (the default under TMPDIR)
    rotator_cert_dir: str | None = None
    webhook: bool = True
    metrics: bool = True
    ready_path: str = "/readyz"  # on its health port
    #: the Lease ("namespace/name") it holds once its controllers run, when its health port says nothing of that
    lease: str | None = None
    #: False: nothing of it runs, only its manifests go in (the Spark operator: its spark-submit needs real
    #: containers and a Spark image, neither of which the local stack has; the tests play the operator's part)
    process: bool = True


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator(
            "jobset",
            "sigs.k8s.io/jobset",
            ("jobset.x-k8s.io/jobset",),
            "jobset-system",
            "jobset-controller-manager",
            "jobset-webhook-service",
            "config/default",
        ),
        Operator(
            "lws",
            "sigs.k8s.io/lws",
            ("leaderworkerset.x-k8s.io/leaderworkerset",),
            "lws-system",
            "lws-controller-manager",
            "lws-webhook-service",
            "config/default",
        ),
        Operator(
            "appwrapper",
            "github.com/project-codeflare/appwrapper",
            ("workload.codeflare.dev/appwrapper",),
            "appwrapper-system",
            "appwrapper-controller-manager",
            "appwrapper-webhook-service",
            "config/default",
            cert_secret="appwrapper-webhook-server-cert",
        ),
        Operator(
            "trainer",
            "github.com/kubeflow/trainer/v2",
            ("trainer.kubeflow.org/trainjob",),
            "kubeflow-system",
            "kubeflow-trainer-controller-manager",
            "kubeflow-trainer-controller-manager",
            "manifests/overlays/manager",
            needs=("jobset",),
            drop_resources=("../../third-party/jobset",),
            after_ready="manifests/overlays/runtimes",
        ),
        Operator(
            "training-operator",
            "github.com/kubeflow/training-operator",
            tuple(f"kubeflow.org/{scheme}" for scheme in TRAINING_OPERATOR_SCHEMES),
            "kubeflow",
            "training-operator",
            "training-operator",  # its --webhook-service-name default
            "manifests/overlays/standalone",
            drop_objects=("CustomResourceDefinition/mpijobs.kubeflow.org",),
            cert_secret="training-operator-webhook-cert",  # its --webhook-secret-name default
            rotator_cert_dir="/tmp/k8s-webhook-server/serving-certs",  # pkg/cert/cert.go
        ),
        Operator(
            "mpi-operator",
            "github.com/kubeflow/mpi-operator",
            ("kubeflow.org/mpijob",),
            "mpi-operator",
            "mpi-operator",
            "mpi-operator",  # no webhook: no Service, no certificate
            "deploy/v2beta1/mpi-operator.yaml",
            webhook=False,
            metrics=False,  # --monitoring-port 0, as its release's Deployment
            ready_path="/healthz",
            lease="mpi-operator/mpi-operator",  # --lock-namespace, and its controller's name
        ),
        Operator(
            "kuberay",
            "github.com/ray-project/kuberay/ray-operator",
            ("ray.io/raycluster", "ray.io/rayjob", "ray.io/rayservice"),
            "default",  # config/default's namespace, where upstream's suites wait for it (test/util/e2e.go)
            "kuberay-operator",
            "kuberay-operator",  # no webhook (its release serves none unless ENABLE_WEBHOOKS): no certificate
            "config/default",  # what upstream's e2e-common.sh `kubectl create -k`s (its CRDs, RBAC)
            webhook=False,
        ),
        Operator(
            "spark",
            "github.com/kubeflow/spark-operator/v2",
            ("sparkoperator.k8s.io/sparkapplication",),
            "spark-operator",
            "spark-operator-controller",
            "spark-operator-webhook-svc",
            # what upstream's deps.mk copies as the spark-operator CRDs (its e2e installs the operator by helm)
            "config/crd/bases/sparkoperator.k8s.io_sparkapplications.yaml",
            webhook=False,
            metrics=False,
            process=False,
        ),
    )
}


# --------------------------------------------------------------------------- pure pieces


def resolve(names: Iterable[str]) -> list[Operator]:
    """The operators asked for plus those they need, each once, a needed one before its dependant.
    Names are OPERATORS keys; an unknown one is an error naming the known ones."""
    order: list[Operator] = []

    def visit(name: str) -> None:
        if name not in OPERATORS:
            raise OperatorError("resolve", f"unknown integration {name!r}; known: {', '.join(OPERATORS)}")
        op = OPERATORS[name]
        if op in order:
            return
        for need in op.needs:
            visit(need)
        order.append(op)

    for name in names:
        if name.strip():
            visit(name.strip())
    return order


def frameworks(ops: Iterable[Operator], implemented: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the Kueue integrations of `ops` a system implementing `implemented` enables, those it lacks)."""
    have = set(implemented)
    wanted = [f for op in ops for f in op.frameworks]
    return [f for f in wanted if f in have], [f for f in wanted if f not in have]


def parse_list(text: str) -> list[str]:
    """`jobset,lws` (the make variable INTEGRATIONS) as names."""
    return [n.strip() for n in text.split(",") if n.strip()]


def pinned_versions(go_mod: str, modules: Iterable[str]) -> dict[str, str]:
    """The version upstream Kueue's go.mod requires for each module (as hack/make/deps.mk reads them)."""
    wanted = set(modules)
    found: dict[str, str] = {}
    for line in go_mod.splitlines():
        words = line.split("//")[0].split()
        if words[:1] == ["require"]:
            words = words[1:]
        if len(words) >= 2 and words[0] in wanted:
            found[words[0]] = words[1]
    missing = sorted(wanted - set(found))
    if missing:
        raise OperatorError("read versions", f"upstream Kueue's go.mod requires none of {missing}")
    return found


@dataclass(frozen=True)
class Ports:
    webhook: int | None  # None: the operator serves no webhook
    metrics: int | None  # None: it serves no metrics (the MPI operator's release leaves them off)
    health: int


def allocate_ports(ops: Iterable[Operator], pick: Callable[[set[int]], int]) -> dict[str, Ports]:
    """Ports for each operator that runs, none shared; a port an operator hard-codes (FIXED_PORTS) is its, and
    nobody else is handed it. `pick(taken)` returns a free port not in `taken` and adds it (cluster.free_port)."""
    taken = set(FIXED_PORTS.values())

    def port(op: Operator, role: str) -> int:
        return FIXED_PORTS.get((op.name, role)) or pick(taken)

    return {
        op.name: Ports(
            port(op, "webhook") if op.webhook else None,
            port(op, "metrics") if op.metrics else None,
            port(op, "health"),
        )
        for op in ops
        if op.process
    }


def fixed_ports(ops: Iterable[Operator]) -> dict[int, str]:
    """The hard-coded ports `ops` will bind, each with who binds it (for a clear error when one is in use)."""
    names = {op.name for op in ops}
    return {port: f"{name}'s {role} port" for (name, role), port in FIXED_PORTS.items() if name in names}


def config_file(op: Operator, ports: Ports, cert_dir: Path) -> str | None:
    """The operator's own configuration, as its release's controller_manager_config.yaml with the host's
    ports, certificate directory and namespace; internal cert management off where it can be. None for an
    operator configured by flags alone (command_line)."""
    if op.name in FLAGS_ONLY:
        return None
    health = f"127.0.0.1:{ports.health}"
    metrics = f"127.0.0.1:{ports.metrics}"
    webhook = {"port": ports.webhook, "host": "127.0.0.1"}
    cfg: dict[str, Any]
    if op.name in ("jobset", "lws"):
        cfg = {
            "apiVersion": f"config.{'jobset' if op.name == 'jobset' else 'lws'}.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": True, "resourceNamespace": op.namespace},
            "internalCertManagement": {"enable": False},
            "webhook": {**webhook, "certDir": str(cert_dir)},
            "metrics": {"bindAddress": metrics, **({"certDir": str(cert_dir)} if op.name == "jobset" else {})},
            "health": {"healthProbeBindAddress": health},
        }
    elif op.name == "trainer":
        # manifests/base/manager/controller_manager_config.yaml; its webhook server takes the default
        # certificate directory under TMPDIR (config.addTo sets no CertDir)
        cfg = {
            "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
            "kind": "Configuration",
            "health": {"healthProbeBindAddress": health, "readinessEndpointName": "readyz"},
            "metrics": {"bindAddress": metrics, "secureServing": True},
            "webhook": webhook,
            "leaderElection": {
                "leaderElect": True,
                "resourceName": "trainer.kubeflow.org",
                "resourceNamespace": op.namespace,
                "leaseDuration": "15s",
                "renewDeadline": "10s",
                "retryPeriod": "2s",
            },
            "controller": {
                "groupKindConcurrency": {
                    "TrainJob.trainer.kubeflow.org": 5,
                    "TrainingRuntime.trainer.kubeflow.org": 1,
                    "ClusterTrainingRuntime.trainer.kubeflow.org": 1,
                }
            },
            "certManagement": {"enable": False},
            "clientConnection": {"qps": 50, "burst": 100},
        }
    elif op.name == "appwrapper":
        # config/default/config.yaml (a ConfigMap the operator reads at start), plus where its rotator
        # looks for the certificate files the kubelet would mount. No leader election: its main.go names
        # no lease namespace, which controller-runtime then reads from the pod's ServiceAccount.
        cfg = {
            "controllerManager": {
                "health": {"bindAddress": health},
                "metrics": {"bindAddress": metrics},
                "leaderElection": False,
            },
            "certManagement": {"certificateDir": str(cert_dir)},
        }
    else:
        raise OperatorError("write config", f"no configuration for {op.name}")
    return yaml.safe_dump(cfg, sort_keys=False)


def command_line(op: Operator, binary: Path, ports: Ports, config: Path) -> tuple[list[str], dict[str, str]]:
    """The operator's command line (`config`: where config_file's text is, for those that read one) and the
    environment it needs beside KUBECONFIG and TMPDIR. Off-cluster no ServiceAccount namespace file says
    where the operator runs: AppWrapper and the training-operator's cert rotator read it from the variable
    their Deployments set from the pod's namespace."""
    if op.name == "appwrapper":
        return [str(binary)], {"NAMESPACE": op.namespace}  # its config is a ConfigMap it reads
    if op.name == "training-operator":
        # manifests/base/deployment.yaml passes no flags (the webhook on 9443, no leader election); upstream's
        # patch adds the schemes
        return [
            str(binary),
            f"--webhook-server-port={ports.webhook}",
            *(f"--enable-scheme={scheme}" for scheme in TRAINING_OPERATOR_SCHEMES),
            f"--metrics-bind-address=127.0.0.1:{ports.metrics}",
            f"--health-probe-bind-address=127.0.0.1:{ports.health}",
        ], {"MY_POD_NAMESPACE": op.namespace}
    if op.name == "mpi-operator":
        # deploy/v2beta1/mpi-operator.yaml's args; it watches every namespace and reads KUBECONFIG
        return [str(binary), "-alsologtostderr", f"--lock-namespace={op.namespace}"], {}
    if op.name == "kuberay":
        # config/manager/manager.yaml's args; off-cluster its Lease needs a namespace named (main.go)
        return [
            str(binary),
            "--feature-gates=RayClusterStatusConditions=true",
            f"--leader-election-namespace={op.namespace}",
            f"--metrics-addr=127.0.0.1:{ports.metrics}",
            f"--health-probe-bind-address=127.0.0.1:{ports.health}",
        ], {}
    return [str(binary), f"--config={config}"], {}


def host_manifests(
    docs: Iterable[dict[str, Any]], base_url: str, ca_bundle: str, drop: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """What of an operator's rendered manifests the cluster gets when it runs on the host: KEPT_KINDS but
    those `drop` names ("Kind/name"), each webhook's and CRD conversion's service reference replaced by
    `base_url` + its path, with `ca_bundle`."""
    dropped = set(drop)
    out = []
    for doc in docs:
        if not doc or doc.get("kind") not in KEPT_KINDS or f"{doc['kind']}/{doc['metadata']['name']}" in dropped:
            continue
        doc = json.loads(json.dumps(doc))  # a copy
        if doc["kind"] == "CustomResourceDefinition":
            webhook = (doc["spec"].get("conversion") or {}).get("webhook")
            if webhook:
                webhook["clientConfig"] = _url_client_config(webhook["clientConfig"], base_url, ca_bundle)
        elif doc["kind"].endswith("WebhookConfiguration"):
            for hook in doc.get("webhooks", []):
                hook["clientConfig"] = _url_client_config(hook["clientConfig"], base_url, ca_bundle)
        out.append(doc)
    return out


def _url_client_config(client_config: dict[str, Any], base_url: str, ca_bundle: str) -> dict[str, Any]:
    path = (client_config.get("service") or {}).get("path", "")
    return {"url": base_url + path, "caBundle": ca_bundle}


def lease_held_since(lease: dict[str, Any], since: dt.datetime) -> bool:
    """Whether a coordination.k8s.io Lease has a holder that renewed it at or after `since` (so not one left by
    an earlier process)."""
    spec = lease.get("spec") or {}
    renewed = spec.get("renewTime")
    if not spec.get("holderIdentity") or not renewed:
        return False
    return dt.datetime.fromisoformat(renewed) >= since


def stand_in(op: Operator) -> list[dict[str, Any]]:
    """The Deployment upstream's suites wait for (Available, its pods never restarted): one kwok pod."""
    labels = {"app.kubernetes.io/name": op.name, "control-plane": "controller-manager"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": op.namespace}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": op.deployment,
                "namespace": op.namespace,
                "labels": {**labels, STAND_IN_LABEL: "true"},
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "nodeSelector": {"instance-type": "on-demand"},
                        "containers": [
                            {
                                "name": "manager",
                                "image": "stand-in/operator-runs-on-the-host:none",
                                "args": ["stand-in"],
                            }
                        ],
                    },
                },
            },
        },
    ]


@dataclass(frozen=True)
class OperatorCerts:
    """PEMs of an operator's CA and serving certificate."""

    ca_crt: bytes
    ca_key: bytes  # PKCS#1, as the cert-controller rotator reads a CA key
    tls_crt: bytes
    tls_key: bytes


def _pkcs1(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue_certs(op: Operator, now: dt.datetime) -> OperatorCerts:
    """A CA of the operator's own and a serving certificate for its webhook Service's DNS name and
    127.0.0.1 (where the API server dials it). Made so that an open-policy-agent/cert-controller rotator
    keeps them (AppWrapper's, which cannot be switched off): RSA keys, the CA's certificate naming the
    rotator's CA name, both valid well past its 90-day look-ahead."""
    begin, end = now - dt.timedelta(hours=1), now + dt.timedelta(days=3650)
    usage = dict(
        content_commitment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = f"{op.name}-ca"
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, op.name), x509.NameAttribute(NameOID.COMMON_NAME, ca_name)]
    )
    ca = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begin)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True, crl_sign=True, **usage),
            critical=True,
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(ca_name)]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    dns = f"{op.service}.{op.namespace}.svc"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns)]))
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begin)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=False, crl_sign=False, **usage),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([_san(dns), _san("127.0.0.1")]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return OperatorCerts(ca.public_bytes(pem), _pkcs1(ca_key), cert.public_bytes(pem), _pkcs1(key))


def rotator_secret(op: Operator, pems: OperatorCerts) -> dict[str, Any]:
    """The Secret the operator's cert rotator reads (`op.cert_secret`), already holding `pems`."""
    if op.cert_secret is None:
        raise OperatorError("make the rotator's Secret", f"{op.name} runs no cert rotator")
    data = {"ca.crt": pems.ca_crt, "ca.key": pems.ca_key, "tls.crt": pems.tls_crt, "tls.key": pems.tls_key}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": op.cert_secret, "namespace": op.namespace},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def place_rotator_cert(fixed: Path, tls_crt: Path, marker: str) -> None:
    """Give a cert rotator the tls.crt it waits for in its hard-coded directory `fixed` (the kubelet's Secret
    mount in a pod; it only checks that the file is there), unless one is there already. The topmost
    directory this made gets a MARKER_NAME file holding `marker` (it names the run), for remove_rotator_cert."""
    if (fixed / "tls.crt").exists():
        return
    made = next((d for d in reversed((fixed, *fixed.parents)) if not d.exists()), None)
    try:
        fixed.mkdir(parents=True, exist_ok=True)
        shutil.copy(tls_crt, fixed / "tls.crt")
        if made is not None:
            (made / MARKER_NAME).write_text(marker)
    except OSError as exc:
        raise OperatorError("certificate for the rotator", f"{fixed}: {exc}") from exc


def remove_rotator_cert(fixed: Path, marker: str) -> None:
    """Undo place_rotator_cert of the run `marker` names: what another run or anyone else made stays."""
    for made in (fixed, *fixed.parents):
        with contextlib.suppress(OSError):
            if (made / MARKER_NAME).read_text() == marker:
                shutil.rmtree(made)
                return


# --------------------------------------------------------------------------- build and run


def build(names: Iterable[str]) -> Path:
    """Run e2e/build-operators.sh for `names` (progress on stderr passes through); its bin dir."""
    started = time.monotonic()
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), *names], stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.split()
    if proc.returncode != 0 or not lines:
        raise OperatorError(
            "build", f"{BUILD_SCRIPT.name} exited {proc.returncode} after {time.monotonic() - started:.0f}s"
        )
    return Path(lines[-1])


def module_dir(module: str, version: str) -> Path:
    """The operator's module source in the Go module cache (the build downloaded it)."""
    proc = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GOFLAGS": ""},
    )
    if proc.returncode != 0:
        raise OperatorError("find module source", f"{module}@{version}: {proc.stderr.strip() or proc.stdout.strip()}")
    return Path(json.loads(proc.stdout)["Dir"])


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as Go's listeners: a port whose last connections (an earlier run's probes) linger in TIME_WAIT is free
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


class Operators:
    """The operators asked for, on one cluster, their state in `directory` (one subdirectory each and a
    pids file, so a later `down` from another process stops them)."""

    def __init__(self, directory: Path, cluster: Cluster, names: Iterable[str] = ()) -> None:
        self.dir = Path(directory)
        self.cluster = cluster
        self.ops = resolve(names)
        self._procs: list[Proc] = []
        self._started: dict[str, dt.datetime] = {}  # when each process was started (its Lease is renewed since)
        self._webhooks: list[tuple[str, str]] = []  # (kind, name) of each webhook configuration applied

    @property
    def pid_file(self) -> Path:
        return self.dir / "pids"

    def log_file(self, name: str) -> Path:
        return self.dir / name / f"{name}.log"

    def up(self) -> None:
        """Build (or find in the cache), install and start every operator asked for, then their stand-ins;
        raises OperatorError naming the step and the log on any failure, after stopping what started."""
        if not self.ops:
            return
        started = time.monotonic()
        self.down()
        try:
            self._up()
        except BaseException:
            self.down()
            raise
        log(f"{', '.join(op.name for op in self.ops)} up in {time.monotonic() - started:.0f}s")

    def _up(self) -> None:
        running = [op for op in self.ops if op.process]
        bin_dir = build([op.name for op in running]) if running else Path()
        versions = pinned_versions((kueue_module_dir() / "go.mod").read_text(), [op.module for op in self.ops])
        ports = allocate_ports(self.ops, free_port)
        for port, who in fixed_ports(running).items():
            if not port_free(port):
                raise OperatorError("ports", f"{who} {port} (hard-coded in its main package) is in use")
        now = dt.datetime.now(dt.UTC)
        for op in self.ops:  # everything in the cluster first: Trainer watches JobSets from its start
            source = module_dir(op.module, versions[op.module])
            work = self.dir / op.name
            if work.exists():
                shutil.rmtree(work)
            cert_dir = work / "tmp" / "k8s-webhook-server" / "serving-certs"
            cert_dir.mkdir(parents=True)
            docs = self._render(source, op.manifests, work, op.drop_resources)
            extra: list[dict[str, Any]] = []
            base_url = ca_bundle = ""
            if op.webhook:
                pems = issue_certs(op, now)
                for name, data in (("ca.crt", pems.ca_crt), ("tls.crt", pems.tls_crt), ("tls.key", pems.tls_key)):
                    (cert_dir / name).write_bytes(data)
                (cert_dir / "tls.key").chmod(0o600)
                base_url = f"https://127.0.0.1:{ports[op.name].webhook}"
                ca_bundle = base64.b64encode(pems.ca_crt).decode()
                if op.cert_secret:
                    extra.append(rotator_secret(op, pems))
                if op.rotator_cert_dir:
                    place_rotator_cert(Path(op.rotator_cert_dir), cert_dir / "tls.crt", self._rotator_marker)
            config = config_file(op, ports[op.name], cert_dir) if op.process else None
            if op.name == "appwrapper":
                extra.append(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "appwrapper-operator-config", "namespace": op.namespace},
                        "data": {"config.yaml": config},
                    }
                )
            elif config is not None:
                (work / "config.yaml").write_text(config)
            self._apply(host_manifests(docs, base_url, ca_bundle, op.drop_objects) + extra)
        for op in running:
            self._start(op, bin_dir / f"{op.name}-{versions[op.module]}", ports[op.name])
        for op in running:
            self._wait_ready(op, ports[op.name])
            if op.after_ready:
                source = module_dir(op.module, versions[op.module])
                self._apply(self._render(source, op.after_ready, self.dir / op.name, ()))
        self._apply([doc for op in running for doc in stand_in(op)])
        for op in running:
            res = self.cluster.kubectl(
                "-n", op.namespace, "rollout", "status", f"deploy/{op.deployment}", "--timeout=120s"
            )
            if res.returncode != 0:
                raise OperatorError(f"stand-in {op.namespace}/{op.deployment}", res.stderr.strip())

    @property
    def _rotator_marker(self) -> str:
        return f"{MARKER_NAME}: made for {self.dir}, removed at its teardown\n"

    def _render(self, source: Path, manifests: str, work: Path, drop: tuple[str, ...]) -> list[dict[str, Any]]:
        """`kubectl kustomize` of a kustomization in the module (with `drop`, of a writable copy without those
        resources: the module cache is read-only), or the objects of a manifests file there."""
        target = source / manifests
        if target.is_file():
            try:
                return [d for d in yaml.safe_load_all(target.read_text()) if d]
            except (OSError, yaml.YAMLError) as exc:
                raise OperatorError(f"read {target}", str(exc)) from exc
        if drop:
            top = manifests.split("/")[0]
            copy = work / "src"
            shutil.copytree(source / top, copy / top, dirs_exist_ok=True)
            for path in copy.rglob("*"):
                path.chmod(path.stat().st_mode | 0o200)
            target = copy / manifests
            kust = target / "kustomization.yaml"
            doc = yaml.safe_load(kust.read_text())
            doc["resources"] = [r for r in doc["resources"] if r not in drop]
            kust.write_text(yaml.safe_dump(doc, sort_keys=False))
        res = self.cluster.kubectl("kustomize", str(target))
        if res.returncode != 0:
            raise OperatorError(f"render {target}", res.stderr.strip()[-800:])
        return [d for d in yaml.safe_load_all(res.stdout) if d]

    def _apply(self, docs: list[dict[str, Any]]) -> None:
        """Server-side apply, CRDs first and established before the rest."""
        crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
        rest = [d for d in docs if d["kind"] != "CustomResourceDefinition"]
        for batch in (crds, rest):
            if not batch:
                continue
            doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": batch})
            res = self.cluster.kubectl(
                "apply", "--server-side", "--force-conflicts", "--field-manager=pykueue-operators", "-f", "-", input=doc
            )
            if res.returncode != 0:
                raise OperatorError("apply", res.stderr.strip()[-800:])
            self._webhooks += [
                (d["kind"].lower(), d["metadata"]["name"]) for d in batch if d["kind"].endswith("WebhookConfiguration")
            ]
            if batch is crds:
                names = [f"crd/{d['metadata']['name']}" for d in crds]
                deadline = time.monotonic() + 60
                while (
                    res := self.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
                ).returncode:
                    if time.monotonic() > deadline:  # a CRD without conditions yet makes `wait` fail at once
                        raise OperatorError("CRDs established", res.stderr.strip())
                    time.sleep(0.5)

    def _start(self, op: Operator, binary: Path, ports: Ports) -> None:
        work = self.dir / op.name
        cmd, env = command_line(op, binary, ports, work / "config.yaml")
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig), "TMPDIR": str(work / "tmp"), **env}
        self._started[op.name] = dt.datetime.now(dt.UTC)
        try:
            proc = spawn(op.name, cmd, log_path=self.log_file(op.name), cwd=work, env=env)
        except OSError as exc:
            raise OperatorError(f"start {op.name}", str(exc)) from exc
        self._procs.append(proc)
        write_pid_file(self.pid_file, self._procs)
        log(f"started {op.name} (pid {proc.pid}, log {self.log_file(op.name)})")

    def _wait_ready(self, op: Operator, ports: Ports, timeout: float = 120.0) -> None:
        """Until the operator's health port answers `op.ready_path` and, with `op.lease`, it holds that Lease
        (renewed since it started)."""
        proc = next(p for p in self._procs if p.name == op.name)
        url = f"http://127.0.0.1:{ports.health}{op.ready_path}"
        deadline = time.monotonic() + timeout
        while True:
            if not proc.alive():
                raise OperatorError(
                    f"{op.name} ready", f"exited with {proc.exit_code()}; last lines:\n{tail(proc.log)}"
                )
            if self._answers(url) and (op.lease is None or self._holds(op.lease, self._started[op.name])):
                log(f"{op.name} ready" + (f" (webhook 127.0.0.1:{ports.webhook})" if ports.webhook else ""))
                return
            if time.monotonic() > deadline:
                what = url + (f" and Lease {op.lease}" if op.lease else "")
                raise OperatorError(
                    f"{op.name} ready", f"{what} not ready in {timeout:.0f}s; last lines:\n{tail(proc.log)}"
                )
            time.sleep(0.3)

    @staticmethod
    def _answers(url: str) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _holds(self, lease: str, since: dt.datetime) -> bool:
        namespace, name = lease.split("/")
        res = self.cluster.kubectl("-n", namespace, "get", "lease", name, "-o", "json")
        return res.returncode == 0 and lease_held_since(json.loads(res.stdout), since)

    def uninstall(self) -> None:
        """Stop the operators, then take their webhook configurations and stand-ins out of a cluster that stays
        up (an e2e module's operators on the session's stack): a webhook left pointing at a stopped process
        would refuse, with failurePolicy Fail, every object it matches. CRDs and RBAC stay."""
        self.down()
        for args in (
            *(("delete", kind, name) for kind, name in self._webhooks),
            *(("-n", op.namespace, "delete", "deployment", op.deployment) for op in self.ops if op.process),
        ):
            res = self.cluster.kubectl(*args, "--ignore-not-found")
            if res.returncode != 0:
                raise OperatorError("uninstall", res.stderr.strip())
        self._webhooks = []

    def down(self) -> None:
        """Stop every operator process of this directory (this object's, or recorded by an earlier run), and
        remove the rotators' directories it made."""
        for proc in reversed(self._procs or read_pid_file(self.pid_file)):
            kill_group(proc)
        self._procs = []
        self.pid_file.unlink(missing_ok=True)
        for op in OPERATORS.values():
            if op.rotator_cert_dir:
                remove_rotator_cert(Path(op.rotator_cert_dir), self._rotator_marker)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "build":
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(build([op.name for op in resolve(args[1:] or OPERATORS) if op.process]))
    except OperatorError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
