"""Serving TLS: TLS 1.2+ with modern ciphers (or the Configuration's `tls` options), and certificate
rotation without a restart.

Every server Kueue runs (webhooks, the worker's metrics, visibility) builds its context from the
same `ParsedTLS` (`webhook.config.tlsoptions.for_config`), as upstream passes one `tlsconfig.TLS` to
each of its servers: minimum version, TLS 1.2 cipher suites and the key-exchange group. Shared by the webhook server (uvicorn) and the worker's metrics server. The one `SSLContext`
a server uses is re-loaded in place when `tls.crt` or `tls.key` change on disk; OpenSSL uses
the context's current certificate for every new handshake, so connections made after a
rotation see the new certificate. Without a certificate on disk, `self_signed_context` makes
one in memory, as controller-runtime's metrics server does when its cert dir is empty.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import certs
from webhook.config.tlsoptions import DEFAULT_TLS, ParsedTLS

__all__ = ["CertReloader", "has_cert", "self_signed_context", "server_context"]

log = logging.getLogger(__name__)

# Forward-secret AEAD suites only for TLS 1.2; TLS 1.3 suites are fixed by OpenSSL.
_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


def _context(options: ParsedTLS) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = options.min_version
    ctx.set_ciphers(":".join(options.ciphers) or _CIPHERS)
    for group in options.groups:  # at most one: `tlsoptions.unavailable` refuses more at start
        ctx.set_ecdh_curve(group)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION
    return ctx


def has_cert(cert_dir: str | os.PathLike[str]) -> bool:
    d = Path(cert_dir)
    return (d / "tls.crt").is_file() and (d / "tls.key").is_file()


def server_context(cert_dir: str | os.PathLike[str], options: ParsedTLS = DEFAULT_TLS) -> ssl.SSLContext:
    ctx = _context(options)
    d = Path(cert_dir)
    ctx.load_cert_chain(d / "tls.crt", d / "tls.key")
    return ctx


def self_signed_context(
    hosts: Sequence[str] = ("localhost", "127.0.0.1"), options: ParsedTLS = DEFAULT_TLS
) -> ssl.SSLContext:
    """A context serving a fresh certificate for `hosts`, signed by a throwaway CA.

    OpenSSL loads a key pair only from files, so the PEMs pass through a private directory
    that is gone before this returns."""
    serving = certs.make_serving_cert(certs.make_ca(), hosts)
    ctx = _context(options)
    with tempfile.TemporaryDirectory(prefix="self-signed-") as tmp:  # mode 0700
        crt, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        crt.write_bytes(serving.cert_pem + serving.ca.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(serving.key_pem)
        ctx.load_cert_chain(crt, key)
    return ctx


class CertReloader:
    """Polls the certificate files and re-loads them into the live context when they change."""

    def __init__(self, ctx: ssl.SSLContext, cert_dir: str | os.PathLike[str], *, interval: float = 1.0) -> None:
        self._ctx = ctx
        self._dir = Path(cert_dir)
        self._interval = interval
        self._stamp = self._current_stamp()

    def _current_stamp(self) -> tuple[float, float, int, int]:
        crt, key = (self._dir / "tls.crt").stat(), (self._dir / "tls.key").stat()
        return (crt.st_mtime, key.st_mtime, crt.st_ino, key.st_ino)

    def check(self) -> bool:
        """Re-load if the files changed; keep the old certificate if the new pair does not load."""
        try:
            stamp = self._current_stamp()
        except OSError:
            return False
        if stamp == self._stamp:
            return False
        try:
            self._ctx.load_cert_chain(self._dir / "tls.crt", self._dir / "tls.key")
        except (OSError, ssl.SSLError) as exc:
            # A rotation writes two files; between the writes the pair may not match.
            log.warning("certificate reload failed, keeping the previous one", extra={"error": str(exc)})
            return False
        self._stamp = stamp
        log.info("serving certificate reloaded", extra={"dir": str(self._dir)})
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            self.check()

    def watch(self, stop: threading.Event) -> None:
        """`run` for a threaded server: check every interval until `stop`."""
        while not stop.wait(self._interval):
            self.check()
