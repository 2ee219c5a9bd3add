"""The `tls` options in Go's names, checked as upstream checks them and translated for OpenSSL.

Mirrors `pkg/util/tlsconfig/tlsconfig.go` (`ParseTLSOptions`) over component-base's
`cli/flag` `TLSVersion`, `TLSCipherSuites` and `TLSCurvePreferences`, with the crypto/tls names of
Go 1.26 (upstream's toolchain at v0.19.2). `webhook.tls` applies the result to every server Kueue
runs (webhooks, metrics, visibility) when the TLSOptions gate is on.

Go never lets TLS 1.3 cipher suites be configured (it ignores them in `CipherSuites`); OpenSSL's
TLS 1.3 suites are likewise left at their defaults here.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from webhook.config.types import Configuration, Feature, TLSOptions

__all__ = [
    "DEFAULT_TLS",
    "PREFERRED_CIPHER_NAMES",
    "ParsedTLS",
    "TLSOptionsError",
    "for_config",
    "parse",
    "unavailable",
]

_MAX_UINT16 = 65535

# crypto/tls CipherSuites() + InsecureCipherSuites() (cliflag accepts both) → OpenSSL names; None for
# the TLS 1.3 suites, which neither Go nor this server lets a configuration choose.
_CIPHERS: Mapping[str, str | None] = MappingProxyType(
    {
        "TLS_AES_128_GCM_SHA256": None,
        "TLS_AES_256_GCM_SHA384": None,
        "TLS_CHACHA20_POLY1305_SHA256": None,
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
        # cliflag keeps the pre-Go-1.14 names of the two ChaCha suites.
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
        # InsecureCipherSuites()
        "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
        "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
        "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
        "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
        "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
        "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
        "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
        "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    }
)
# cliflag.PreferredTLSCipherNames, sorted: the names of CipherSuites() and the two aliases, i.e. all but
# the RSA key exchange, RC4, 3DES and ECDHE CBC-SHA256 suites of InsecureCipherSuites().
PREFERRED_CIPHER_NAMES: tuple[str, ...] = tuple(
    sorted(
        name
        for name in _CIPHERS
        if not name.startswith("TLS_RSA_") and "RC4" not in name and "3DES" not in name and "CBC_SHA256" not in name
    )
)

# crypto/tls CurveIDs Go 1.26 names (IANA TLS Supported Groups) → OpenSSL group names.
_CURVES: Mapping[int, str] = MappingProxyType(
    {
        23: "prime256v1",
        24: "secp384r1",
        25: "secp521r1",
        29: "X25519",
        4587: "SecP256r1MLKEM768",
        4588: "X25519MLKEM768",
        4589: "SecP384r1MLKEM1024",
    }
)
_VERSIONS: Mapping[str, ssl.TLSVersion] = MappingProxyType(
    {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}
)


class TLSOptionsError(ValueError):
    """The options do not parse; the message is upstream's (errors joined by newlines, as errors.Join)."""


@dataclass(frozen=True, slots=True)
class ParsedTLS:
    """What a server context is built from: TLS ≥ `min_version`, these TLS 1.2 suites (all OpenSSL's
    secure ones when empty), these groups (OpenSSL's defaults when empty)."""

    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    ciphers: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


DEFAULT_TLS = ParsedTLS()


def parse(options: TLSOptions) -> ParsedTLS:
    """`ParseTLSOptions`: every error, joined; raises `TLSOptionsError`."""
    errors = []
    version = ssl.TLSVersion.TLSv1_2
    if options.min_version in ("VersionTLS10", "VersionTLS11"):
        errors.append("invalid minVersion. Please use VersionTLS12 or VersionTLS13")
    elif options.min_version:
        if options.min_version not in _VERSIONS:
            errors.append(
                f'invalid minVersion: unknown tls version "{options.min_version}". Please use VersionTLS12 or '
                "VersionTLS13"
            )
        else:
            version = _VERSIONS[options.min_version]
    unknown = next((name for name in options.cipher_suites if name not in _CIPHERS), None)
    if unknown is not None:
        errors.append(
            f"invalid cipher suites: Cipher suite {unknown} not supported or doesn't exist. Please use the secure "
            f"cipher names: [{' '.join(PREFERRED_CIPHER_NAMES)}]"
        )
    curve_error = _curve_error(options.curve_preferences)
    if curve_error:
        errors.append(f"invalid curve preferences: {curve_error}")
    if errors:
        raise TLSOptionsError("\n".join(errors))
    ciphers = tuple(dict.fromkeys(c for name in options.cipher_suites if (c := _CIPHERS[name]) is not None))
    if options.cipher_suites and not ciphers and version < ssl.TLSVersion.TLSv1_3:
        # Only TLS 1.3 suites listed: Go then has no TLS 1.2 suite to offer, so only TLS 1.3 handshakes succeed.
        version = ssl.TLSVersion.TLSv1_3
    return ParsedTLS(version, ciphers, tuple(_CURVES[i] for i in options.curve_preferences))


def _curve_error(ids: Sequence[int]) -> str:
    seen: set[int] = set()
    for i in ids:
        if i <= 0 or i > _MAX_UINT16:
            return f"curve preference {i} is out of range (must be 1-{_MAX_UINT16})"
        if i in seen:
            return f"duplicate curve preference {i}"
        seen.add(i)
        if i not in _CURVES:
            return f"curve preference {i} is not supported by the current Go version"
    return ""


def unavailable(parsed: ParsedTLS) -> list[str]:
    """What this Python's OpenSSL cannot do of `parsed` (refused at start, never dropped quietly)."""
    out = []
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for cipher in parsed.ciphers:
        try:
            probe.set_ciphers(cipher)
        except ssl.SSLError:
            name = next(k for k, v in _CIPHERS.items() if v == cipher)
            out.append(f"tls.cipherSuites: {name} is not available in {ssl.OPENSSL_VERSION}")
    if len(parsed.groups) > 1:
        out.append(
            "tls.curvePreferences: more than one curve is not implemented (Python's ssl module sets a single "
            "group); name one"
        )
    for group in parsed.groups[:1]:
        try:
            probe.set_ecdh_curve(group)
        except ValueError:
            out.append(f"tls.curvePreferences: {group} is not available in {ssl.OPENSSL_VERSION}")
    return out


def for_config(cfg: Configuration) -> ParsedTLS:
    """The servers' TLS settings: `tls` when the TLSOptions gate is on (as cmd/kueue/main.go), else defaults."""
    if cfg.tls is None or not cfg.feature_enabled(Feature.TLS_OPTIONS):
        return DEFAULT_TLS
    return parse(cfg.tls)
