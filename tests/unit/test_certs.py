"""certs.tls: CA + serving certificate generation, bundle files, rotation predicate, CLI."""

from __future__ import annotations

import base64
import ipaddress
import stat
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import certs
from certs import tls

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HOSTS = ["kueue-webhook-service.kueue-system.svc", "localhost", "127.0.0.1", "::1"]


def test_exported_members():
    assert set(certs.__all__) == set(tls.__all__)
    for name in certs.__all__:
        assert getattr(certs, name) is getattr(tls, name)


def test_ca_subject_and_constraints():
    ca = certs.make_ca(now=NOW)
    subject = ca.certificate.subject
    assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kueue-ca"
    assert subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "kueue"
    assert ca.certificate.issuer == subject
    assert ca.certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True


def test_serving_cert_sans_eku_and_validity():
    ca = certs.make_ca(now=NOW)
    serving = certs.make_serving_cert(ca, HOSTS, now=NOW)
    cert = serving.certificate
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == HOSTS[:2]
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert cert.not_valid_after_utc == NOW + timedelta(days=365)
    assert isinstance(serving.key, ec.EllipticCurvePrivateKey)
    assert serving.key.curve.name == "secp256r1"


def test_chain_verifies():
    ca = certs.make_ca(now=NOW)
    serving = certs.make_serving_cert(ca, HOSTS, now=NOW)
    serving.certificate.verify_directly_issued_by(ca.certificate)
    store = x509.verification.Store([ca.certificate])
    verifier = (
        x509.verification.PolicyBuilder()
        .store(store)
        .time(NOW + timedelta(days=1))
        .build_server_verifier(x509.DNSName("kueue-webhook-service.kueue-system.svc"))
    )
    chain = verifier.verify(serving.certificate, [])
    assert chain[-1] == ca.certificate


def test_other_ca_does_not_verify():
    serving = certs.make_serving_cert(certs.make_ca(now=NOW), HOSTS, now=NOW)
    with pytest.raises(InvalidSignature):
        serving.certificate.verify_directly_issued_by(certs.make_ca(now=NOW).certificate)


def test_no_hosts_rejected():
    with pytest.raises(ValueError, match="at least one host"):
        certs.make_serving_cert(certs.make_ca(now=NOW), [])


def test_write_bundle_files_and_permissions(tmp_path):
    out = certs.write_bundle(tmp_path / "bundle", ["svc.ns.svc", "10.0.0.1"])
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    ca_cert = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    cert.verify_directly_issued_by(ca_cert)
    key = serialization.load_pem_private_key((out / "tls.key").read_bytes(), password=None)
    assert key.public_key() == cert.public_key()
    assert base64.b64decode(certs.ca_bundle(out)) == (out / "ca.crt").read_bytes()


@pytest.mark.parametrize(
    ("offset", "before", "expected"),
    [
        pytest.param(timedelta(days=1), timedelta(days=30), False, id="fresh"),
        pytest.param(timedelta(days=340), timedelta(days=30), True, id="within the rotation window"),
        pytest.param(timedelta(days=365), timedelta(0), True, id="expired"),
        pytest.param(timedelta(days=-2), timedelta(days=30), True, id="not yet valid"),
    ],
)
def test_needs_rotation(offset, before, expected):
    serving = certs.make_serving_cert(certs.make_ca(now=NOW), ["a.b.svc"], now=NOW)
    assert certs.needs_rotation(serving.cert_pem, NOW + offset, before=before) is expected


def test_cli_writes_bundle_and_prints_ca_bundle(tmp_path, capsys):
    assert certs.cli_main(["--out", str(tmp_path), "--host", "svc.ns.svc", "--host", "127.0.0.1"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == certs.ca_bundle(tmp_path)
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["svc.ns.svc"]


def test_cli_requires_host(tmp_path):
    with pytest.raises(SystemExit):
        certs.cli_main(["--out", str(tmp_path)])
