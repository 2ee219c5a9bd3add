"""The operator harness's pure pieces (e2e/operators.py): which operators run for a list of integrations,
their pinned versions, ports, configuration files and command lines, the manifests the cluster gets, the
stand-in Deployments, certificates a cert-controller rotator keeps, and when a Lease says an operator runs. Running the operators is the job of the
extended upstream suite (`make e2e-upstream SUITE=singlecluster-extended`) and of
e2e/test_worker_integrations.py."""

from __future__ import annotations

import datetime as dt
import ipaddress
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store

E2E_DIR = Path(__file__).resolve().parents[2] / "e2e"
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))

import operators  # noqa: E402
from operators import OPERATORS, OperatorError  # noqa: E402

from webhook.api import integrations  # noqa: E402

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


def test_trainer_brings_jobset_first_and_each_operator_runs_once() -> None:
    assert [op.name for op in operators.resolve(["trainer", "lws", "jobset"])] == ["jobset", "trainer", "lws"]
    assert [op.name for op in operators.resolve(operators.parse_list(" appwrapper, ,trainer,"))] == [
        "appwrapper",
        "jobset",
        "trainer",
    ]
    assert operators.resolve([]) == []


def test_an_unknown_integration_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(
        OperatorError,
        match=r"unknown integration 'mpi'; known: jobset, lws, appwrapper, trainer, training-operator, mpi-operator, kuberay, spark$",
    ):
        operators.resolve(["jobset", "mpi"])


def test_versions_are_those_upstream_kueue_requires() -> None:
    go_mod = """module sigs.k8s.io/kueue

go 1.26.0

require (
\tgithub.com/kubeflow/trainer/v2 v2.2.1
\tsigs.k8s.io/jobset v0.12.0 // a comment
\tsigs.k8s.io/jobset/extra v9.9.9
)

require sigs.k8s.io/lws v0.9.0
"""
    assert operators.pinned_versions(
        go_mod, ["sigs.k8s.io/jobset", "sigs.k8s.io/lws", "github.com/kubeflow/trainer/v2"]
    ) == {
        "sigs.k8s.io/jobset": "v0.12.0",
        "sigs.k8s.io/lws": "v0.9.0",
        "github.com/kubeflow/trainer/v2": "v2.2.1",
    }
    with pytest.raises(OperatorError, match=r"github\.com/project-codeflare/appwrapper"):
        operators.pinned_versions(go_mod, ["github.com/project-codeflare/appwrapper"])


def test_ports_are_never_shared_and_appwrapper_keeps_its_fixed_webhook_port() -> None:
    counter = iter(range(9440, 9500))

    def pick(taken: set[int]) -> int:  # hands out 9443 too unless it is already taken
        port = next(p for p in counter if p not in taken)
        taken.add(port)
        return port

    counter_8080 = iter(range(8075, 8095))

    def pick_8080(taken: set[int]) -> int:  # hands out 8080 too unless it is already taken
        port = next(p for p in counter_8080 if p not in taken)
        taken.add(port)
        return port

    for picker in (pick, pick_8080):
        ports = operators.allocate_ports(operators.resolve(OPERATORS), picker)
        assert ports["appwrapper"].webhook == operators.APPWRAPPER_WEBHOOK_PORT == 9443
        # the MPI operator's health server is fixed on 8080; it serves no webhook, and no metrics as released
        assert ports["mpi-operator"] == operators.Ports(None, None, 8080)
        every = [p for ps in ports.values() for p in (ps.webhook, ps.metrics, ps.health) if p is not None]
        assert len(every) == len(set(every)) == 18
        assert ports["kuberay"].webhook is None  # KubeRay's release serves no webhook
    assert operators.fixed_ports(operators.resolve(["mpi-operator", "jobset"])) == {8080: "mpi-operator's health port"}


def cfg(name: str, tmp_path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(operators.config_file(OPERATORS[name], operators.Ports(1001, 1002, 1003), tmp_path))
    assert isinstance(doc, dict)
    return doc


def test_jobset_and_lws_configs_serve_from_their_own_cert_dir_with_cert_management_off(tmp_path: Path) -> None:
    for name, api in (("jobset", "config.jobset.x-k8s.io/v1alpha1"), ("lws", "config.lws.x-k8s.io/v1alpha1")):
        doc = cfg(name, tmp_path)
        assert doc["apiVersion"] == api and doc["kind"] == "Configuration"
        assert doc["internalCertManagement"] == {"enable": False}
        assert doc["webhook"] == {"port": 1001, "host": "127.0.0.1", "certDir": str(tmp_path)}
        assert doc["metrics"]["bindAddress"] == "127.0.0.1:1002"
        assert doc["health"] == {"healthProbeBindAddress": "127.0.0.1:1003"}
        assert doc["leaderElection"]["resourceNamespace"] == OPERATORS[name].namespace
    # JobSet's metrics server falls back to a fixed /tmp directory when cert management is off
    assert cfg("jobset", tmp_path)["metrics"]["certDir"] == str(tmp_path)


def test_trainer_and_appwrapper_configs(tmp_path: Path) -> None:
    trainer = cfg("trainer", tmp_path)
    assert trainer["certManagement"] == {"enable": False}
    assert trainer["webhook"] == {"port": 1001, "host": "127.0.0.1"}
    assert trainer["leaderElection"]["resourceNamespace"] == "kubeflow-system"
    appwrapper = cfg("appwrapper", tmp_path)
    assert appwrapper["certManagement"] == {"certificateDir": str(tmp_path)}
    assert appwrapper["controllerManager"] == {
        "health": {"bindAddress": "127.0.0.1:1003"},
        "metrics": {"bindAddress": "127.0.0.1:1002"},
        "leaderElection": False,
    }


def test_the_training_operator_runs_every_scheme_but_mpi_on_its_own_ports(tmp_path: Path) -> None:
    op = OPERATORS["training-operator"]
    ports = operators.Ports(1001, 1002, 1003)
    assert operators.config_file(op, ports, tmp_path) is None  # flags only
    cmd, env = operators.command_line(op, Path("/bin/training-operator-v1.9.3"), ports, tmp_path / "config.yaml")
    assert cmd[0] == "/bin/training-operator-v1.9.3"
    assert sorted(cmd[1:]) == sorted(
        [
            "--webhook-server-port=1001",
            "--metrics-bind-address=127.0.0.1:1002",
            "--health-probe-bind-address=127.0.0.1:1003",
            *(f"--enable-scheme={s}" for s in ("tfjob", "pytorchjob", "xgboostjob", "paddlejob", "jaxjob")),
        ]
    )
    # its cert rotator finds its namespace (and so its Secret and DNS name) from the pod's
    assert env == {"MY_POD_NAMESPACE": "kubeflow"}
    assert op.frameworks == tuple(
        f"kubeflow.org/{k}" for k in ("tfjob", "pytorchjob", "xgboostjob", "paddlejob", "jaxjob")
    )


def test_the_mpi_operator_runs_with_its_releases_flags(tmp_path: Path) -> None:
    op = OPERATORS["mpi-operator"]
    ports = operators.Ports(None, None, 8080)
    assert operators.config_file(op, ports, tmp_path) is None
    cmd, env = operators.command_line(op, Path("/bin/mpi-operator-v0.8.2"), ports, tmp_path / "config.yaml")
    assert cmd == ["/bin/mpi-operator-v0.8.2", "-alsologtostderr", "--lock-namespace=mpi-operator"]
    assert env == {}
    assert op.frameworks == ("kubeflow.org/mpijob",)
    assert op.lease == "mpi-operator/mpi-operator"


def test_kuberay_runs_with_its_releases_flags_on_its_own_ports(tmp_path: Path) -> None:
    op = OPERATORS["kuberay"]
    ports = operators.Ports(None, 1002, 1003)
    assert operators.config_file(op, ports, tmp_path) is None
    cmd, env = operators.command_line(op, Path("/bin/kuberay-v1.6.2"), ports, tmp_path / "config.yaml")
    assert cmd == [
        "/bin/kuberay-v1.6.2",
        "--feature-gates=RayClusterStatusConditions=true",  # config/manager/manager.yaml
        "--leader-election-namespace=default",
        "--metrics-addr=127.0.0.1:1002",
        "--health-probe-bind-address=127.0.0.1:1003",
    ]
    assert env == {}
    assert op.frameworks == ("ray.io/raycluster", "ray.io/rayjob", "ray.io/rayservice")
    assert (op.module, op.manifests, op.webhook) == (
        "github.com/ray-project/kuberay/ray-operator",
        "config/default",
        False,
    )


def test_config_file_operators_get_it_on_their_command_line(tmp_path: Path) -> None:
    ports = operators.Ports(1001, 1002, 1003)
    for name in ("jobset", "lws", "trainer"):
        cmd, env = operators.command_line(OPERATORS[name], Path("/bin/x"), ports, tmp_path / "config.yaml")
        assert cmd == ["/bin/x", f"--config={tmp_path / 'config.yaml'}"] and env == {}
    # AppWrapper reads its configuration from a ConfigMap in the namespace its variable names
    assert operators.command_line(OPERATORS["appwrapper"], Path("/bin/x"), ports, tmp_path / "c") == (
        ["/bin/x"],
        {"NAMESPACE": "appwrapper-system"},
    )


def test_a_lease_is_held_when_renewed_since_the_process_started() -> None:
    def lease(holder: str | None, renewed: str | None) -> dict[str, Any]:
        return {"spec": {"holderIdentity": holder, "renewTime": renewed, "leaseDurationSeconds": 15}}

    assert operators.lease_held_since(lease("host_1", "2026-11-27T12:00:01.123456Z"), NOW)
    assert operators.lease_held_since(lease("host_1", "2026-11-27T12:00:00.000000Z"), NOW)
    assert not operators.lease_held_since(lease("host_1", "2026-11-27T11:59:59.999999Z"), NOW)  # an earlier holder
    assert not operators.lease_held_since(lease(None, "2026-11-27T12:00:01.000000Z"), NOW)  # released
    assert not operators.lease_held_since(lease("host_1", None), NOW)
    assert not operators.lease_held_since({"spec": {}}, NOW)


def test_the_rotators_fixed_certificate_is_placed_and_removed_by_the_run_that_made_it(tmp_path: Path) -> None:
    crt = tmp_path / "ours" / "tls.crt"
    crt.parent.mkdir()
    crt.write_text("CERT")
    fixed = tmp_path / "tmp" / "k8s-webhook-server" / "serving-certs"
    (tmp_path / "tmp").mkdir()
    operators.place_rotator_cert(fixed, crt, "run A")
    assert (fixed / "tls.crt").read_text() == "CERT"
    operators.remove_rotator_cert(fixed, "run B")  # another run's teardown leaves it
    assert (fixed / "tls.crt").exists()
    operators.place_rotator_cert(fixed, crt, "run B")  # already there: run B makes nothing
    operators.remove_rotator_cert(fixed, "run B")
    assert (fixed / "tls.crt").exists()
    operators.remove_rotator_cert(fixed, "run A")  # everything run A made, and nothing above it
    assert not (tmp_path / "tmp" / "k8s-webhook-server").exists()
    assert (tmp_path / "tmp").is_dir()

    # a directory someone else made keeps existing; only the file is given
    fixed.mkdir(parents=True)
    operators.place_rotator_cert(fixed, crt, "run C")
    operators.remove_rotator_cert(fixed, "run C")
    assert (fixed / "tls.crt").read_text() == "CERT"


def test_the_cluster_gets_crds_rbac_and_webhooks_pointing_at_the_host() -> None:
    rendered = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jobset-system"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "jobset-controller-manager"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "jobset-webhook-service"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "jobset-webhook-server-cert"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "jobset-manager-config"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}},
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "jobsets.jobset.x-k8s.io"},
            "spec": {
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/convert"}},
                        "conversionReviewVersions": ["v1"],
                    },
                }
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "jobset-mutating-webhook-configuration"},
            "webhooks": [
                {
                    "name": "mjobset.kb.io",
                    "failurePolicy": "Fail",
                    "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/mutate-jobset"}},
                }
            ],
        },
    ]
    out = operators.host_manifests(rendered, "https://127.0.0.1:4444", "Q0E=")
    assert [d["kind"] for d in out] == [
        "Namespace",
        "ClusterRole",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
    ]
    conversion = out[2]["spec"]["conversion"]["webhook"]
    assert conversion == {
        "clientConfig": {"url": "https://127.0.0.1:4444/convert", "caBundle": "Q0E="},
        "conversionReviewVersions": ["v1"],
    }
    hook = out[3]["webhooks"][0]
    assert hook["clientConfig"] == {"url": "https://127.0.0.1:4444/mutate-jobset", "caBundle": "Q0E="}
    assert hook["failurePolicy"] == "Fail"
    assert "service" in rendered[-1]["webhooks"][0]["clientConfig"]  # the input is left as it was

    # the training-operator's MPIJob CRD is left out, as upstream's kubeflow-manifest-patch deletes it
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "spec": {}}
    kubeflow = [{**crd, "metadata": {"name": f"{k}s.kubeflow.org"}} for k in ("mpijob", "pytorchjob", "jaxjob")]
    kept = operators.host_manifests(
        kubeflow, "https://127.0.0.1:4444", "Q0E=", OPERATORS["training-operator"].drop_objects
    )
    assert [d["metadata"]["name"] for d in kept] == ["pytorchjobs.kubeflow.org", "jaxjobs.kubeflow.org"]


def test_stand_ins_are_the_deployments_upstreams_suites_wait_for() -> None:
    waited = {
        ("jobset-system", "jobset-controller-manager"),
        ("lws-system", "lws-controller-manager"),
        ("appwrapper-system", "appwrapper-controller-manager"),
        ("kubeflow-system", "kubeflow-trainer-controller-manager"),
        ("kubeflow", "training-operator"),
        ("mpi-operator", "mpi-operator"),
        ("default", "kuberay-operator"),  # test/util/e2e.go: WaitForKubeRayOperatorAvailability
    }
    found = set()
    for op in OPERATORS.values():
        if not op.process:  # the Spark operator: upstream's Spark specs are left out (it cannot run here)
            continue
        namespace, deployment = operators.stand_in(op)
        assert namespace["metadata"]["name"] == op.namespace
        spec = deployment["spec"]
        assert spec["replicas"] == 1
        assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
        found.add((deployment["metadata"]["namespace"], deployment["metadata"]["name"]))
    assert found == waited


def test_frameworks_enabled_are_the_implemented_ones() -> None:
    ops = operators.resolve(["trainer", "lws"])
    assert operators.frameworks(ops, ["leaderworkerset.x-k8s.io/leaderworkerset", "batch/job"]) == (
        ["leaderworkerset.x-k8s.io/leaderworkerset"],
        ["jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"],
    )
    ops = operators.resolve(["training-operator", "mpi-operator"])
    assert operators.frameworks(ops, ["kubeflow.org/pytorchjob", "kubeflow.org/jaxjob", "kubeflow.org/mpijob"]) == (
        ["kubeflow.org/pytorchjob", "kubeflow.org/jaxjob", "kubeflow.org/mpijob"],
        ["kubeflow.org/tfjob", "kubeflow.org/xgboostjob", "kubeflow.org/paddlejob"],
    )


def test_our_system_implements_every_framework_the_operators_run() -> None:
    """So the extended suite's operators all get their integration enabled in ours (Stack._start_server)."""
    implemented = [f.name for f in integrations.implemented()]
    assert operators.frameworks(operators.resolve(OPERATORS), implemented)[1] == []


def test_certificates_are_what_a_cert_controller_rotator_keeps_and_the_api_server_accepts() -> None:
    op = OPERATORS["appwrapper"]
    pems = operators.issue_certs(op, NOW)
    ca = x509.load_pem_x509_certificate(pems.ca_crt)
    cert = x509.load_pem_x509_certificate(pems.tls_crt)
    # the rotator (open-policy-agent/cert-controller ValidCert) verifies the CA for its CA name and the
    # serving certificate for the Service's DNS name, 90 days ahead, and reads the CA key as PKCS#1
    assert ca.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    ) == ["appwrapper-ca"]
    assert pems.ca_key.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    ahead = NOW + dt.timedelta(days=91)
    builder = PolicyBuilder().store(Store([ca])).time(ahead)
    verifier = builder.build_server_verifier(x509.DNSName("appwrapper-webhook-service.appwrapper-system.svc"))
    assert verifier.verify(cert, [])[0] == cert
    # the API server dials https://127.0.0.1:<port>
    ip_verifier = builder.build_server_verifier(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    assert ip_verifier.verify(cert, [])[0] == cert

    secret = operators.rotator_secret(op, pems)
    assert secret["metadata"] == {"name": "appwrapper-webhook-server-cert", "namespace": "appwrapper-system"}
    assert sorted(secret["data"]) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]


def test_the_training_operators_rotator_keeps_the_secret_made_for_it() -> None:
    op = OPERATORS["training-operator"]
    pems = operators.issue_certs(op, NOW)
    ca = x509.load_pem_x509_certificate(pems.ca_crt)
    # pkg/cert/cert.go: CA name training-operator-ca, DNS name <--webhook-service-name>.<namespace>.svc,
    # Secret <--webhook-secret-name> in MY_POD_NAMESPACE
    assert ca.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    ) == ["training-operator-ca"]
    builder = PolicyBuilder().store(Store([ca])).time(NOW + dt.timedelta(days=91))
    verifier = builder.build_server_verifier(x509.DNSName("training-operator.kubeflow.svc"))
    cert = x509.load_pem_x509_certificate(pems.tls_crt)
    assert verifier.verify(cert, [])[0] == cert
    assert operators.rotator_secret(op, pems)["metadata"] == {
        "name": "training-operator-webhook-cert",
        "namespace": "kubeflow",
    }
    with pytest.raises(OperatorError, match="jobset runs no cert rotator"):
        operators.rotator_secret(OPERATORS["jobset"], pems)
