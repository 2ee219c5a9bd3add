"""Self-signed CA plus serving certificate, written as `ca.crt`, `tls.crt`, `tls.key`.

Mirrors what kubernetes-sigs/kueue (commit ff69552e79) gets from internal cert management in
`pkg/util/cert/cert.go`: a CA named `kueue-ca` in organisation `kueue`, and a serving certificate
for the webhook Service DNS names, whose CA goes into every `caBundle`. Keys are ECDSA P-256.
The clock is a parameter (`now`) so callers and tests decide the time.
"""

from __future__ import annotations

import argparse
import base64
import ipaddress
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CA",
    "ServingCert",
    "ca_bundle",
    "cli_main",
    "key_pem",
    "load_ca",
    "make_ca",
    "make_serving_cert",
    "needs_rotation",
    "write_bundle",
    "write_pems",
]

CA_COMMON_NAME = "kueue-ca"
CA_ORGANIZATION = "kueue"
CA_VALIDITY = timedelta(days=3650)
# Backdate notBefore a little so a freshly issued certificate is valid on hosts with clock skew.
CLOCK_SKEW = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class CA:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True, slots=True)
class ServingCert:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    ca: CA

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def _now(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else now


def make_ca(
    *,
    common_name: str = CA_COMMON_NAME,
    organization: str = CA_ORGANIZATION,
    validity: timedelta = CA_VALIDITY,
    now: datetime | None = None,
) -> CA:
    """A self-signed CA certificate (CA:true, pathlen 0, keyCertSign/cRLSign)."""
    start = _now(now)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - CLOCK_SKEW)
        .not_valid_after(start + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return CA(cert, key)


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_serving_cert(ca: CA, hosts: Sequence[str], *, days: int = 365, now: datetime | None = None) -> ServingCert:
    """A serverAuth certificate for `hosts` (DNS names or IP addresses), signed by `ca`."""
    if not hosts:
        raise ValueError("at least one host is required")
    start = _now(now)
    key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = ca.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - CLOCK_SKEW)
        .not_valid_after(start + timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return ServingCert(cert, key, ca)


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write through a fresh file created with `mode`, so the key is never briefly world-readable."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def load_ca(cert_pem: bytes, key_pem: bytes) -> CA:
    """A CA from PEM (as stored in a Secret); ValueError when either part is unusable or they do not pair."""
    certificate = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("CA key is not an ECDSA key")
    if certificate.public_key() != key.public_key():
        raise ValueError("CA key does not match the CA certificate")
    return CA(certificate, key)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """Unencrypted PKCS#8 PEM of a private key."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_pems(out_dir: str | os.PathLike[str], *, ca_crt: bytes, tls_crt: bytes, tls_key: bytes) -> bool:
    """Write `ca.crt`, `tls.crt`, `tls.key` (0600) where they differ from what is there; True if any changed.

    The key is written last so a reader that reloads on its change sees a matching certificate.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, data, mode in (("ca.crt", ca_crt, 0o644), ("tls.crt", tls_crt, 0o644), ("tls.key", tls_key, 0o600)):
        path = out / name
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        _write(path, data, mode)
        changed = True
    return changed


def write_bundle(out_dir: str | os.PathLike[str], hosts: Sequence[str], *, days: int = 365) -> Path:
    """Create a CA and a serving certificate; write `ca.crt`, `tls.crt`, `tls.key` (0600). Returns the dir.

    The CA key is not kept: rotating means issuing a new bundle and updating every caBundle.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    serving = make_serving_cert(make_ca(), hosts, days=days)
    _write(out / "ca.crt", serving.ca.cert_pem, 0o644)
    _write(out / "tls.crt", serving.cert_pem, 0o644)
    _write(out / "tls.key", serving.key_pem, 0o600)
    return out


def ca_bundle(out_dir: str | os.PathLike[str]) -> str:
    """Base64 of `ca.crt`, the form `caBundle` fields of webhook and CRD conversion configs take."""
    return base64.b64encode((Path(out_dir) / "ca.crt").read_bytes()).decode("ascii")


def needs_rotation(cert_pem: bytes, now: datetime, *, before: timedelta) -> bool:
    """True when the certificate is not yet valid, or expires within `before` of `now`."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    return now < cert.not_valid_before_utc or now + before >= cert.not_valid_after_utc


def cli_main(argv: Sequence[str] | None = None) -> int:
    """`--out DIR --host NAME_OR_IP [--host ...] [--days N]`: write the bundle, print the caBundle."""
    parser = argparse.ArgumentParser(prog="certs", description="Write a webhook CA and serving certificate.")
    parser.add_argument("--out", required=True, help="directory for ca.crt, tls.crt and tls.key")
    parser.add_argument("--host", action="append", required=True, help="DNS name or IP address (repeatable)")
    parser.add_argument("--days", type=int, default=365, help="serving certificate validity in days")
    args = parser.parse_args(argv)
    out = write_bundle(args.out, args.host, days=args.days)
    sys.stdout.write(ca_bundle(out) + "\n")
    return 0
