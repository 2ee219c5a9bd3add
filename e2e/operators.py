#!/usr/bin/env python3
"""The external operators upstream Kueue's extended e2e suites need, for real, beside the system.

JobSet, LeaderWorkerSet, AppWrapper and Kubeflow Trainer are built by e2e/build-operators.sh at the
versions upstream Kueue's go.mod pins, and run here as host processes against the local control plane
(kwok runs their pods, the kube-controller-manager their Jobs and StatefulSets): the local stack's, where
our server is a host process too, or the real node's (e2e/upstream_real.py), where the system is a
Deployment on the node and the operators run in the node's network namespace, so 127.0.0.1 is the API
server's loopback there as well:
  - manifests: each operator's own kustomization in its module (the release's CRDs, RBAC, webhook
    configurations), rendered by `kubectl kustomize` as upstream's hack/testing/e2e-common.sh applies
    them; Deployments, Services, Secrets and ConfigMaps dropped (the process runs on the host), every
    webhook and CRD conversion clientConfig a URL https://127.0.0.1:<its port> with our CA's bundle;
  - certificates: each operator gets its own directory of certificates from our CA and its own TMPDIR.
    JobSet, LWS and Trainer run with internal cert management off (they would all write the fixed
    /tmp/k8s-webhook-server/serving-certs); AppWrapper cannot switch it off, so its rotator's Secret is
    made in advance with our certificate (valid for 127.0.0.1 too) and the rotator keeps it;
  - ports: webhook, metrics and health ports of their own (AppWrapper's webhook port is fixed, 9443);
  - stand-ins: the Deployment each upstream suite waits for (jobset-system/jobset-controller-manager,
    ...) with one kwok pod, Available and never restarted, as for Kueue's own Deployment;
  - Trainer needs JobSet, and its ClusterTrainingRuntimes (manifests/overlays/runtimes) are applied once
    its webhook answers.
A process that exits or is not ready in time fails the bring-up, naming its log.

    python e2e/operators.py build [NAME...]      # e2e/build-operators.sh
"""

from __future__ import annotations

import base64
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
    framework: str  # the Kueue integration (integrations.frameworks) whose objects it runs
    namespace: str
    deployment: str  # the Deployment upstream's suites wait for (test/util/e2e.go)
    service: str  # its webhook Service: the serving certificate's DNS name is <service>.<namespace>.svc
    kustomization: str  # rendered from the module source
    needs: tuple[str, ...] = ()
    #: lines removed from the kustomization first, as upstream's e2e-common.sh does for Trainer's JobSet
    drop_resources: tuple[str, ...] = ()
    #: applied once the operator answers (Trainer's ClusterTrainingRuntimes)
    after_ready: str | None = None

    @property
    def prefix(self) -> str:
        """The kustomization's namePrefix (jobset-, lws-, appwrapper-, kubeflow-trainer-)."""
        return self.deployment.removesuffix("controller-manager")


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator(
            "jobset",
            "sigs.k8s.io/jobset",
            "jobset.x-k8s.io/jobset",
            "jobset-system",
            "jobset-controller-manager",
            "jobset-webhook-service",
            "config/default",
        ),
        Operator(
            "lws",
            "sigs.k8s.io/lws",
            "leaderworkerset.x-k8s.io/leaderworkerset",
            "lws-system",
            "lws-controller-manager",
            "lws-webhook-service",
            "config/default",
        ),
        Operator(
            "appwrapper",
            "github.com/project-codeflare/appwrapper",
            "workload.codeflare.dev/appwrapper",
            "appwrapper-system",
            "appwrapper-controller-manager",
            "appwrapper-webhook-service",
            "config/default",
        ),
        Operator(
            "trainer",
            "github.com/kubeflow/trainer/v2",
            "trainer.kubeflow.org/trainjob",
            "kubeflow-system",
            "kubeflow-trainer-controller-manager",
            "kubeflow-trainer-controller-manager",
            "manifests/overlays/manager",
            needs=("jobset",),
            drop_resources=("../../third-party/jobset",),
            after_ready="manifests/overlays/runtimes",
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
    wanted = [op.framework for op in ops]
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
    webhook: int
    metrics: int
    health: int


def allocate_ports(ops: Iterable[Operator], pick: Callable[[set[int]], int]) -> dict[str, Ports]:
    """Ports for each operator, none shared; AppWrapper's webhook gets its fixed port, which nobody else
    is handed. `pick(taken)` returns a free port not in `taken` and adds it (cluster.free_port)."""
    taken = {APPWRAPPER_WEBHOOK_PORT}
    ports = {}
    for op in ops:
        webhook = APPWRAPPER_WEBHOOK_PORT if op.name == "appwrapper" else pick(taken)
        ports[op.name] = Ports(webhook, pick(taken), pick(taken))
    return ports


def config_file(op: Operator, ports: Ports, cert_dir: Path) -> str:
    """The operator's own configuration, as its release's controller_manager_config.yaml with the host's
    ports, certificate directory and namespace; internal cert management off where it can be."""
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


def host_manifests(docs: Iterable[dict[str, Any]], base_url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """What of an operator's rendered manifests the cluster gets when it runs on the host: KEPT_KINDS, each
    webhook's and CRD conversion's service reference replaced by `base_url` + its path, with `ca_bundle`."""
    out = []
    for doc in docs:
        if not doc or doc.get("kind") not in KEPT_KINDS:
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
    """The Secret the operator's cert rotator reads (its config/internalcert's <prefix>webhook-server-cert),
    already holding `pems`."""
    data = {"ca.crt": pems.ca_crt, "ca.key": pems.ca_key, "tls.crt": pems.tls_crt, "tls.key": pems.tls_key}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": f"{op.prefix}webhook-server-cert", "namespace": op.namespace},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


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
        names = [op.name for op in self.ops]
        bin_dir = build(names)
        versions = pinned_versions((kueue_module_dir() / "go.mod").read_text(), [op.module for op in self.ops])
        ports = allocate_ports(self.ops, free_port)
        if "appwrapper" in names and not port_free(APPWRAPPER_WEBHOOK_PORT):
            raise OperatorError(
                "ports", f"AppWrapper's webhook port {APPWRAPPER_WEBHOOK_PORT} (fixed in its main.go) is in use"
            )
        now = dt.datetime.now(dt.UTC)
        for op in self.ops:  # everything in the cluster first: Trainer watches JobSets from its start
            source = module_dir(op.module, versions[op.module])
            work = self.dir / op.name
            if work.exists():
                shutil.rmtree(work)
            cert_dir = work / "tmp" / "k8s-webhook-server" / "serving-certs"
            cert_dir.mkdir(parents=True)
            pems = issue_certs(op, now)
            for name, data in (("ca.crt", pems.ca_crt), ("tls.crt", pems.tls_crt), ("tls.key", pems.tls_key)):
                (cert_dir / name).write_bytes(data)
            (cert_dir / "tls.key").chmod(0o600)
            docs = self._render(source, op.kustomization, work, op.drop_resources)
            ca_bundle = base64.b64encode(pems.ca_crt).decode()
            extra: list[dict[str, Any]] = []
            config = config_file(op, ports[op.name], cert_dir)
            if op.name == "appwrapper":
                extra = [
                    rotator_secret(op, pems),
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": f"{op.prefix}operator-config", "namespace": op.namespace},
                        "data": {"config.yaml": config},
                    },
                ]
            else:
                (work / "config.yaml").write_text(config)
            self._apply(host_manifests(docs, f"https://127.0.0.1:{ports[op.name].webhook}", ca_bundle) + extra)
        for op in self.ops:
            self._start(op, bin_dir / f"{op.name}-{versions[op.module]}")
        for op in self.ops:
            self._wait_ready(op, ports[op.name])
            if op.after_ready:
                source = module_dir(op.module, versions[op.module])
                self._apply(self._render(source, op.after_ready, self.dir / op.name, ()))
        self._apply([doc for op in self.ops for doc in stand_in(op)])
        for op in self.ops:
            res = self.cluster.kubectl(
                "-n", op.namespace, "rollout", "status", f"deploy/{op.deployment}", "--timeout=120s"
            )
            if res.returncode != 0:
                raise OperatorError(f"stand-in {op.namespace}/{op.deployment}", res.stderr.strip())

    def _render(self, source: Path, kustomization: str, work: Path, drop: tuple[str, ...]) -> list[dict[str, Any]]:
        """`kubectl kustomize` of a kustomization in the module; with `drop`, of a writable copy without
        those resources (the module cache is read-only)."""
        target = source / kustomization
        if drop:
            top = kustomization.split("/")[0]
            copy = work / "src"
            shutil.copytree(source / top, copy / top, dirs_exist_ok=True)
            for path in copy.rglob("*"):
                path.chmod(path.stat().st_mode | 0o200)
            target = copy / kustomization
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

    def _start(self, op: Operator, binary: Path) -> None:
        work = self.dir / op.name
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig), "TMPDIR": str(work / "tmp")}
        cmd = [str(binary)]
        if op.name == "appwrapper":
            env["NAMESPACE"] = op.namespace  # off-cluster it has no ServiceAccount namespace file
        else:
            cmd.append(f"--config={work / 'config.yaml'}")
        try:
            proc = spawn(op.name, cmd, log_path=self.log_file(op.name), cwd=work, env=env)
        except OSError as exc:
            raise OperatorError(f"start {op.name}", str(exc)) from exc
        self._procs.append(proc)
        write_pid_file(self.pid_file, self._procs)
        log(f"started {op.name} (pid {proc.pid}, log {self.log_file(op.name)})")

    def _wait_ready(self, op: Operator, ports: Ports, timeout: float = 120.0) -> None:
        proc = next(p for p in self._procs if p.name == op.name)
        url = f"http://127.0.0.1:{ports.health}/readyz"
        deadline = time.monotonic() + timeout
        while True:
            if not proc.alive():
                raise OperatorError(
                    f"{op.name} ready", f"exited with {proc.exit_code()}; last lines:\n{tail(proc.log)}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        log(f"{op.name} ready (webhook 127.0.0.1:{ports.webhook})")
                        return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise OperatorError(
                    f"{op.name} ready", f"{url} not ready in {timeout:.0f}s; last lines:\n{tail(proc.log)}"
                )
            time.sleep(0.3)

    def uninstall(self) -> None:
        """Stop the operators, then take their webhook configurations and stand-ins out of a cluster that stays
        up (an e2e module's operators on the session's stack): a webhook left pointing at a stopped process
        would refuse, with failurePolicy Fail, every object it matches. CRDs and RBAC stay."""
        self.down()
        for args in (
            *(("delete", kind, name) for kind, name in self._webhooks),
            *(("-n", op.namespace, "delete", "deployment", op.deployment) for op in self.ops),
        ):
            res = self.cluster.kubectl(*args, "--ignore-not-found")
            if res.returncode != 0:
                raise OperatorError("uninstall", res.stderr.strip())
        self._webhooks = []

    def down(self) -> None:
        """Stop every operator process of this directory (this object's, or recorded by an earlier run)."""
        for proc in reversed(self._procs or read_pid_file(self.pid_file)):
            kill_group(proc)
        self._procs = []
        self.pid_file.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "build":
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(build([op.name for op in resolve(args[1:] or OPERATORS)]))
    except OperatorError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
