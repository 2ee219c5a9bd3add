"""Tests for webhook/certmanager.py against an in-memory API: issue, share, rotate, inject."""

from __future__ import annotations

import base64
import time
from datetime import timedelta
from typing import Any

import pytest
from cryptography import x509

import certs
from tests.unit.cert_cluster import CRDS, MUTATING, NOW, VALIDATING, cluster_objects, config, manager
from tests.unit.fake_kube import FakeKube
from webhook import certmanager as cm
from webhook import kube as k

SECRET = "/api/v1/namespaces/kueue-system/secrets/kueue-webhook-server-cert"


def secret_pem(kube: FakeKube, key: str) -> bytes:
    return base64.b64decode(kube.objects[SECRET]["data"][key])


def writes(kube: FakeKube) -> list[tuple[str, str]]:
    return [c for c in kube.calls if c[0] != "GET"]


def test_targets_follow_the_configuration():
    t = cm.targets(config(), "/certs")
    assert t.dns_name == "kueue-webhook-service.kueue-system.svc"
    assert (t.mutating, t.validating) == (
        "kueue-mutating-webhook-configuration",
        "kueue-validating-webhook-configuration",
    )
    assert t.crds == (
        "clusterqueues.kueue.x-k8s.io",
        "cohorts.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "multikueueclusters.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
    )
    assert cm.webhook_configuration_names("team-webhook-service") == (
        "team-mutating-webhook-configuration",
        "team-validating-webhook-configuration",
    )


def test_first_start_creates_the_secret_writes_files_and_injects(tmp_path):
    kube = FakeKube(cluster_objects())
    m = manager(kube, tmp_path)
    assert not m.ready()
    assert m.sync()
    assert m.ready()
    assert set(kube.objects[SECRET]["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert (tmp_path / "tls.crt").read_bytes() == secret_pem(kube, "tls.crt")
    assert (tmp_path / "tls.key").read_bytes() == secret_pem(kube, "tls.key")
    assert (tmp_path / "tls.key").stat().st_mode & 0o777 == 0o600
    cert = x509.load_pem_x509_certificate(secret_pem(kube, "tls.crt"))
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["kueue-webhook-service.kueue-system.svc"]
    ca = x509.load_pem_x509_certificate(secret_pem(kube, "ca.crt"))
    assert ca.subject.rfc4514_string() == "CN=kueue-ca,O=kueue"
    bundle = base64.b64encode(secret_pem(kube, "ca.crt")).decode()
    for path in (MUTATING, VALIDATING):
        assert {h["clientConfig"]["caBundle"] for h in kube.objects[path]["webhooks"]} == {bundle}
    for name in cm.conversion_crd_names():
        assert kube.objects[f"{CRDS}/{name}"]["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] == bundle
    # CRDs without conversion are left alone
    assert "conversion" not in kube.objects[f"{CRDS}/resourceflavors.kueue.x-k8s.io"]["spec"]


def test_second_pass_and_second_replica_write_nothing(tmp_path):
    kube = FakeKube(cluster_objects())
    manager(kube, tmp_path / "a").sync()
    kube.calls.clear()
    other = manager(kube, tmp_path / "b")
    assert other.sync()
    assert writes(kube) == []
    assert (tmp_path / "a" / "tls.crt").read_bytes() == (tmp_path / "b" / "tls.crt").read_bytes()
    assert not manager(kube, tmp_path / "a").ensure_certificate()  # files already current


def test_empty_secret_from_the_manifests_is_filled_by_update(tmp_path):
    kube = FakeKube(
        {
            SECRET: {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "kueue-webhook-server-cert", "namespace": "kueue-system"},
            }
        }
    )
    manager(kube, tmp_path).ensure_certificate()
    assert ("PUT", SECRET) in kube.calls
    assert "POST" not in {m for m, _ in kube.calls}
    assert set(kube.objects[SECRET]["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}


class RacingKube(FakeKube):
    """Another replica writes its certificate between our GET and our write."""

    def __init__(self, winner: dict[str, Any], **kw: Any) -> None:
        super().__init__(**kw)
        self.winner = winner
        self.raced = False

    def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        if method in ("POST", "PUT") and not self.raced:
            self.raced = True
            self.put(SECRET, self.winner)
        return super().request(method, path, **kw)


@pytest.mark.parametrize("existing", [False, True], ids=["create loses", "update loses"])
def test_lost_race_uses_the_winners_certificate(tmp_path, existing):
    winner_kube = FakeKube()
    manager(winner_kube, tmp_path / "w").ensure_certificate()
    winner = winner_kube.objects[SECRET]
    kube = RacingKube(winner)
    if existing:
        kube.put(SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert"}})
    manager(kube, tmp_path / "l").ensure_certificate()
    assert kube.raced
    assert (tmp_path / "l" / "tls.crt").read_bytes() == base64.b64decode(winner["data"]["tls.crt"])


def test_serving_certificate_rotates_before_expiry_keeping_the_ca(tmp_path):
    kube = FakeKube(cluster_objects())
    manager(kube, tmp_path).sync()
    first_tls, first_ca = secret_pem(kube, "tls.crt"), secret_pem(kube, "ca.crt")
    later = NOW + timedelta(days=cm.SERVING_CERT_DAYS) - cm.ROTATE_BEFORE + timedelta(hours=1)
    kube.calls.clear()
    rotated = manager(kube, tmp_path, now=later)
    assert rotated.sync()
    assert secret_pem(kube, "tls.crt") != first_tls
    assert secret_pem(kube, "ca.crt") == first_ca
    assert (tmp_path / "tls.crt").read_bytes() == secret_pem(kube, "tls.crt")
    assert [c for c in writes(kube) if c[0] == "PATCH"] == []  # same CA: no re-injection


def test_ca_near_expiry_is_replaced_and_reinjected(tmp_path):
    kube = FakeKube(cluster_objects())
    manager(kube, tmp_path).sync()
    first_ca = secret_pem(kube, "ca.crt")
    later = NOW + certs.tls.CA_VALIDITY - timedelta(days=30)
    manager(kube, tmp_path, now=later).sync()
    new_ca = secret_pem(kube, "ca.crt")
    assert new_ca != first_ca
    # within the overlap the old CA stays trusted next to the new one (replicas may still serve it) ...
    assert injected_bundles(kube) == {base64.b64encode(new_ca + first_ca).decode()}
    # ... and is dropped after it
    manager(kube, tmp_path, now=later + cm.CA_OVERLAP + certs.tls.CLOCK_SKEW).sync()
    assert injected_bundles(kube) == {base64.b64encode(new_ca).decode()}


def injected_bundles(kube: FakeKube) -> set[str]:
    hooks = [h["clientConfig"]["caBundle"] for path in (MUTATING, VALIDATING) for h in kube.objects[path]["webhooks"]]
    convs = [
        kube.objects[f"{CRDS}/{n}"]["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
        for n in cm.conversion_crd_names()
    ]
    return set(hooks + convs)


def test_secret_deleted_rotates_seamlessly_across_replicas(tmp_path):
    """A user deletes the Secret: one replica issues a new CA, the other still serves the old
    certificate until its next pass; the API server trusts both CAs all along, and the second
    replica's pass writes nothing to the cluster (no flapping between the replicas' bundles)."""
    kube = FakeKube(cluster_objects())
    a, b = manager(kube, tmp_path / "a"), manager(kube, tmp_path / "b")
    a.sync()
    b.sync()
    old_ca = secret_pem(kube, "ca.crt")
    del kube.objects[SECRET]
    a.sync()
    new_ca = secret_pem(kube, "ca.crt")
    assert new_ca != old_ca
    assert (tmp_path / "a" / "ca.crt").read_bytes() == new_ca
    assert (tmp_path / "b" / "ca.crt").read_bytes() == old_ca  # b has not looked yet
    both = {base64.b64encode(new_ca + old_ca).decode()}
    assert injected_bundles(kube) == both
    kube.calls.clear()
    b.sync()
    assert writes(kube) == []
    assert (tmp_path / "b" / "tls.crt").read_bytes() == secret_pem(kube, "tls.crt")
    assert injected_bundles(kube) == both


class FailingPatchKube(FakeKube):
    def request(self, method, path, **kwargs):
        if method == "PATCH":
            raise k.ServerError(500, "injection failed")
        return super().request(method, path, **kwargs)


def test_new_certificate_is_served_only_once_its_ca_is_injected(tmp_path):
    kube = FakeKube(cluster_objects())
    manager(kube, tmp_path).sync()
    served = (tmp_path / "tls.crt").read_bytes()
    failing = FailingPatchKube(kube.objects)
    m = manager(failing, tmp_path)
    m._injected.set()  # a replica that has been serving
    del failing.objects[SECRET]
    with pytest.raises(k.ServerError):
        m.sync()
    assert (tmp_path / "tls.crt").read_bytes() == served


@pytest.mark.parametrize("damage", ["wrong dns name", "missing key", "garbage", "foreign ca"])
def test_unusable_secret_is_reissued(tmp_path, damage):
    kube = FakeKube()
    manager(kube, tmp_path).ensure_certificate()
    data = dict(kube.objects[SECRET]["data"])
    if damage == "wrong dns name":
        ca = certs.load_ca(base64.b64decode(data["ca.crt"]), base64.b64decode(data["ca.key"]))
        other = certs.make_serving_cert(ca, ["elsewhere.svc"], now=NOW)
        data["tls.crt"] = base64.b64encode(other.cert_pem).decode()
        data["tls.key"] = base64.b64encode(other.key_pem).decode()
    elif damage == "missing key":
        del data["tls.key"]
    elif damage == "garbage":
        data["tls.crt"] = base64.b64encode(b"not a certificate").decode()
    else:
        data["ca.crt"] = base64.b64encode(certs.make_ca(now=NOW).cert_pem).decode()
    secret = {**kube.objects[SECRET], "data": data}
    kube.put(SECRET, secret)
    manager(kube, tmp_path).ensure_certificate()
    fixed = cm._from_secret(kube.objects[SECRET])
    assert fixed is not None and cm._is_usable(fixed, "kueue-webhook-service.kueue-system.svc", NOW)


def test_not_ready_until_the_webhook_configurations_exist(tmp_path):
    objects = cluster_objects()
    del objects[MUTATING]
    kube = FakeKube(objects)
    m = manager(kube, tmp_path)
    assert not m.sync()
    assert not m.ready()
    kube.put(MUTATING, cluster_objects()[MUTATING])
    assert m.sync()
    assert m.ready()


def test_bootstrap_gives_up_after_its_deadline(tmp_path):
    class Down(FakeKube):
        def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
            raise k.ServerError(503, "apiserver unavailable")

    with pytest.raises(cm.BootstrapError, match="apiserver unavailable"):
        cm.bootstrap(config(), tmp_path, kube=Down(), deadline_s=0.01)


def test_bootstrap_writes_the_certificate_before_returning(tmp_path):
    kube = FakeKube(cluster_objects())
    ready = cm.bootstrap(config(), tmp_path, kube=kube, ready=lambda: True)
    assert (tmp_path / "tls.crt").exists() and (tmp_path / "tls.key").exists()
    for _ in range(100):
        if ready():
            break
        time.sleep(0.02)
    assert ready()
