"""Real TLS: old protocol versions are refused, and a certificate replaced on disk is served next."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from cryptography import x509

import certs
from webhook import tls
from webhook.admission.app import create_app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    port = _free_port()
    ctx = tls.server_context(tmp_path)
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_config=None, lifespan="off")
    config.load()
    config.ssl = ctx
    srv = uvicorn.Server(config)
    reloader = tls.CertReloader(ctx, tmp_path, interval=0.05)

    async def run() -> None:
        task = asyncio.create_task(reloader.run())
        await srv.serve()
        task.cancel()

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    for _ in range(100):
        if srv.started:
            break
        time.sleep(0.05)
    yield port, tmp_path
    srv.should_exit = True
    thread.join(timeout=10)


def _peer_cert(port: int, ca: Path) -> x509.Certificate:
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port)) as raw, ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        der = s.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def test_rotated_certificate_is_served_without_restart(server: tuple[int, Path], tmp_path: Path) -> None:
    port, cert_dir = server
    before = _peer_cert(port, cert_dir / "ca.crt")
    certs.write_bundle(cert_dir, ["127.0.0.1"])  # new CA and serving certificate, same files
    deadline = time.monotonic() + 5
    after = before
    while time.monotonic() < deadline and after.serial_number == before.serial_number:
        time.sleep(0.05)
        try:
            after = _peer_cert(port, cert_dir / "ca.crt")
        except ssl.SSLError:
            continue  # the new CA was written before the reloader picked up the new pair
    assert after.serial_number != before.serial_number


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1])
def test_old_tls_versions_are_refused(server: tuple[int, Path], version: ssl.TLSVersion) -> None:
    port, cert_dir = server
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cert_dir / "ca.crt")
    with warnings.catch_warnings():  # Python deprecates offering these versions at all
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = version
        ctx.maximum_version = version
    ctx.set_ciphers("ALL:@SECLEVEL=0")
    with socket.create_connection(("127.0.0.1", port)) as raw, pytest.raises(ssl.SSLError):
        ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    # The same client limited to TLS 1.2 gets through, so the refusal above is about the version.
    ok = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ok.load_verify_locations(cert_dir / "ca.crt")
    ok.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", port)) as raw, ok.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        assert s.version() == "TLSv1.2"


def test_healthz_over_tls(server: tuple[int, Path]) -> None:
    port, cert_dir = server
    ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    import urllib.request

    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=5) as resp:
        assert resp.status == 200 and resp.read() == b"ok"


@pytest.mark.parametrize(
    "ciphers",
    [
        "AES128-GCM-SHA256:AES256-SHA256",
        "ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA",
        "DHE-RSA-AES128-GCM-SHA256",
        "ALL:!ECDHE:@SECLEVEL=0",
    ],
)
def test_tls12_without_forward_secret_aead_ciphers_is_refused(server: tuple[int, Path], ciphers: str) -> None:
    """TLS 1.2 clients must offer ECDHE with AES-GCM or ChaCha20: static RSA, CBC and DHE are refused."""
    port, cert_dir = server
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cert_dir / "ca.crt")
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(ciphers)
    with socket.create_connection(("127.0.0.1", port)) as raw, pytest.raises(ssl.SSLError):
        ctx.wrap_socket(raw, server_hostname="127.0.0.1")


def test_negotiated_cipher_is_forward_secret_aead(server: tuple[int, Path]) -> None:
    port, cert_dir = server
    for maximum in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cert_dir / "ca.crt")
        ctx.maximum_version = maximum
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s,
        ):
            cipher = s.cipher()
            assert cipher is not None
            name, version, _ = cipher
            assert version in ("TLSv1.2", "TLSv1.3")
            assert "GCM" in name or "CHACHA20" in name, name
            if version == "TLSv1.2":
                assert name.startswith("ECDHE-"), name
