"""The Configuration's `tls` options: upstream's validation messages, and real handshakes honouring them."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

import certs
from webhook import config, tls
from webhook.config import ConfigError, tlsoptions
from webhook.config import types as config_types

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


@pytest.fixture(autouse=True)
def _no_service_account(monkeypatch, tmp_path):
    monkeypatch.setattr(config_types, "_SERVICE_ACCOUNT_NAMESPACE_FILE", str(tmp_path / "absent"))


def _server(cert_dir: Path, stanza: str) -> ssl.SSLContext:
    cfg = config.parse(V2 + stanza)
    config.check_implemented(cfg)
    return tls.server_context(cert_dir, tlsoptions.for_config(cfg))


def _client(cert_dir: Path, *, maximum: ssl.TLSVersion, ciphers: str = "", curve: str = "") -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cert_dir / "ca.crt")
    ctx.maximum_version = maximum
    if ciphers:
        ctx.set_ciphers(ciphers)
    if curve:
        ctx.set_ecdh_curve(curve)
    return ctx


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> tuple[str, str]:
    """One in-memory handshake: (version, cipher), or the client's SSLError."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(20):
        for name, side in (("c", c), ("s", s)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
                except ssl.SSLError:
                    if name == "c":
                        raise
                    done[name] = True  # the server refused; its alert reaches the client next
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        if all(done.values()):
            break
    cipher = c.cipher()
    assert cipher is not None
    return str(c.version()), cipher[0]


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    return tmp_path


def test_min_version_tls13_refuses_tls12_clients(cert_dir: Path) -> None:
    server = _server(cert_dir, "tls: {minVersion: VersionTLS13}\n")
    with pytest.raises(ssl.SSLError):
        _handshake(server, _client(cert_dir, maximum=ssl.TLSVersion.TLSv1_2))
    assert _handshake(server, _client(cert_dir, maximum=ssl.TLSVersion.TLSv1_3))[0] == "TLSv1.3"


def test_cipher_suites_limit_tls12(cert_dir: Path) -> None:
    server = _server(
        cert_dir,
        "tls: {cipherSuites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]}\n",
    )
    tls12 = ssl.TLSVersion.TLSv1_2
    assert "AES256-GCM-SHA384" in _handshake(server, _client(cert_dir, maximum=tls12))[1]
    with pytest.raises(ssl.SSLError):  # our default list would take this one
        _handshake(
            server,
            _client(cert_dir, maximum=tls12, ciphers="ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256"),
        )


def test_only_tls13_suites_listed_means_tls13_only(cert_dir: Path) -> None:
    """Go ignores TLS 1.3 suites in CipherSuites, leaving no TLS 1.2 suite: only TLS 1.3 handshakes succeed."""
    server = _server(cert_dir, "tls: {cipherSuites: [TLS_AES_128_GCM_SHA256]}\n")
    with pytest.raises(ssl.SSLError):
        _handshake(server, _client(cert_dir, maximum=ssl.TLSVersion.TLSv1_2))
    assert _handshake(server, _client(cert_dir, maximum=ssl.TLSVersion.TLSv1_3))[0] == "TLSv1.3"


def test_curve_preference_limits_key_exchange(cert_dir: Path) -> None:
    # TLS 1.3, where groups are only the key exchange (in TLS 1.2 they also bound our P-256 certificate).
    server = _server(cert_dir, "tls: {curvePreferences: [24]}\n")  # P-384 only
    tls13 = ssl.TLSVersion.TLSv1_3
    assert _handshake(server, _client(cert_dir, maximum=tls13, curve="secp384r1"))[0] == "TLSv1.3"
    with pytest.raises(ssl.SSLError):
        _handshake(server, _client(cert_dir, maximum=tls13, curve="X25519"))


def test_gate_off_ignores_the_options(cert_dir: Path) -> None:
    """cmd/kueue/main.go parses `tls` only when TLSOptions is on."""
    server = _server(cert_dir, "tls: {minVersion: VersionTLS13}\nfeatureGates: {TLSOptions: false}\n")
    assert _handshake(server, _client(cert_dir, maximum=ssl.TLSVersion.TLSv1_2))[0] == "TLSv1.2"


_PREFERRED = (
    "[TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256 TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA "
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA "
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305 "
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA "
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 "
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305 TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256]"
)


@pytest.mark.parametrize(
    ("stanza", "message"),
    [
        pytest.param("{minVersion: VersionTLS11}",
                     'tls: Invalid value: v1beta2.TLSOptions{MinVersion:"VersionTLS11", CipherSuites:[]string(nil), '
                     "CurvePreferences:[]int32(nil)}: invalid minVersion. Please use VersionTLS12 or VersionTLS13",
                     id="old version"),
        pytest.param("{minVersion: TLS1.2}",
                     'tls: Invalid value: v1beta2.TLSOptions{MinVersion:"TLS1.2", CipherSuites:[]string(nil), '
                     'CurvePreferences:[]int32(nil)}: invalid minVersion: unknown tls version "TLS1.2". Please use '
                     "VersionTLS12 or VersionTLS13", id="unknown version"),
        pytest.param("{cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, NOPE]}",
                     'tls: Invalid value: v1beta2.TLSOptions{MinVersion:"", CipherSuites:[]string{'
                     '"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "NOPE"}, CurvePreferences:[]int32(nil)}: invalid cipher '
                     f"suites: Cipher suite NOPE not supported or doesn't exist. Please use the secure cipher names: "
                     f"{_PREFERRED}", id="unknown cipher"),
        pytest.param("{curvePreferences: [23, 0]}",
                     'tls: Invalid value: v1beta2.TLSOptions{MinVersion:"", CipherSuites:[]string(nil), '
                     "CurvePreferences:[]int32{23, 0}}: invalid curve preferences: curve preference 0 is out of "
                     "range (must be 1-65535)", id="curve out of range"),
        pytest.param("{curvePreferences: [29, 29]}",
                     'tls: Invalid value: v1beta2.TLSOptions{MinVersion:"", CipherSuites:[]string(nil), '
                     "CurvePreferences:[]int32{29, 29}}: invalid curve preferences: duplicate curve preference 29",
                     id="duplicate curve"),
        pytest.param("{minVersion: VersionTLS10, curvePreferences: [30]}",
                     'tls: Invalid value: v1beta2.TLSOptions{MinVersion:"VersionTLS10", CipherSuites:[]string(nil), '
                     "CurvePreferences:[]int32{30}}: invalid minVersion. Please use VersionTLS12 or VersionTLS13\n"
                     "invalid curve preferences: curve preference 30 is not supported by the current Go version",
                     id="errors joined"),
        pytest.param("{minVersion: VersionTLS13, cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]}",
                     'tls.cipherSuites: Invalid value: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]: may not be '
                     "specified when `minVersion` is 'VersionTLS13'", id="suites with TLS 1.3"),
    ],
)  # fmt: skip
def test_validation_messages(stanza: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config.parse(V2 + f"tls: {stanza}\n")
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("stanza", "message"),
    [
        pytest.param("{curvePreferences: [23, 29]}",
                     "tls.curvePreferences: more than one curve is not implemented (Python's ssl module sets a "
                     "single group); name one", id="several curves"),
        pytest.param("{cipherSuites: [TLS_RSA_WITH_RC4_128_SHA]}",
                     f"tls.cipherSuites: TLS_RSA_WITH_RC4_128_SHA is not available in {ssl.OPENSSL_VERSION}",
                     id="suite OpenSSL lacks"),
    ],
)  # fmt: skip
def test_what_openssl_cannot_do_is_refused_at_start(stanza: str, message: str) -> None:
    cfg = config.parse(V2 + f"tls: {stanza}\n")
    with pytest.raises(ConfigError) as info:
        config.check_implemented(cfg)
    assert str(info.value) == f"not implemented by pykueue: {message}"
