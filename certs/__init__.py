"""Webhook serving certificates: a self-signed CA and a serving certificate signed by it.

Our counterpart of Kueue's internal cert management (`pkg/util/cert/cert.go`, which delegates to
open-policy-agent/cert-controller) for deployments that provision certificates up front.
"""

from __future__ import annotations

from certs.tls import (
    CA,
    ServingCert,
    ca_bundle,
    cli_main,
    key_pem,
    load_ca,
    make_ca,
    make_serving_cert,
    needs_rotation,
    write_bundle,
    write_pems,
)

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
