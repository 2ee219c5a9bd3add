"""Front-proxy authentication and SubjectAccessReview authorization of the visibility API, in-process
and over a real TLS socket (a client certificate from the requestheader CA, or not)."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import certs
from tests.unit import guarded_clients
from tests.unit.fake_kube import FakeKube
from webhook import tls
from webhook.reviews import SUBJECT_ACCESS_REVIEWS, User
from webhook.visibility.auth import (
    AUTH_CONFIGMAP,
    AccessDecision,
    AccessReviewer,
    Attributes,
    FrontProxy,
    FrontProxySource,
    authenticate,
    parse_front_proxy,
)
from webhook.visibility.handler import VisibilityAPI
from webhook.visibility.server import PendingFeed, VisibilityServer

CQ_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"


def configmap(ca_pem: str, allowed: list[str]) -> dict[str, Any]:
    return {
        "data": {
            "requestheader-client-ca-file": ca_pem,
            "requestheader-allowed-names": json.dumps(allowed),
            "requestheader-username-headers": '["X-Remote-User"]',
            "requestheader-group-headers": '["X-Remote-Group"]',
            "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
            "requestheader-uid-headers": '["X-Remote-Uid"]',
        }
    }


FRONT = parse_front_proxy(configmap("PEM", ["front-proxy-client"]))
PEER = {"subject": ((("commonName", "front-proxy-client"),),)}


def headers_of(raw: dict[str, list[str]]) -> tuple[Any, list[str]]:
    lower = {k.lower(): v for k, v in raw.items()}
    return (lambda name: lower.get(name.lower(), [])), list(raw)


def test_the_configmap_is_read_as_the_api_server_publishes_it() -> None:
    assert (
        FrontProxy(
            "PEM",
            ("front-proxy-client",),
            ("X-Remote-User",),
            ("X-Remote-Uid",),
            ("X-Remote-Group",),
            ("X-Remote-Extra-",),
        )
        == FRONT
    )
    assert parse_front_proxy({"data": {"client-ca-file": "x"}}) is None  # no front proxy configured
    assert parse_front_proxy(None) is None


def test_the_user_comes_from_the_headers_of_a_trusted_proxy() -> None:
    get, names = headers_of(
        {
            "X-Remote-User": ["alice", "mallory"],
            "X-Remote-Group": ["dev", "ops"],
            "X-Remote-Uid": ["u-1"],
            "X-Remote-Extra-Scopes": ["a", "b"],
            "X-Remote-Extra-Acme.com%2Fproject": ["p"],
        }
    )
    assert authenticate(FRONT, PEER, get, names) == User(
        "alice", "u-1", ("dev", "ops", "system:authenticated"), (("acme.com/project", ("p",)), ("scopes", ("a", "b")))
    )


@pytest.mark.parametrize(
    ("peer", "raw"),
    [
        pytest.param(None, {"X-Remote-User": ["alice"]}, id="no client certificate"),
        pytest.param(
            {"subject": ((("commonName", "admin"),),)}, {"X-Remote-User": ["alice"]}, id="common name not allowed"
        ),
        pytest.param(PEER, {}, id="no user header"),
    ],
)
def test_anything_else_is_not_authenticated(peer: dict[str, Any] | None, raw: dict[str, list[str]]) -> None:
    get, names = headers_of(raw)
    assert authenticate(FRONT, peer, get, names) is None
    assert authenticate(None, PEER, *headers_of({"X-Remote-User": ["alice"]})) is None


def test_an_empty_allowed_list_trusts_any_name_the_ca_signed() -> None:
    front = parse_front_proxy(configmap("PEM", []))
    get, names = headers_of({"X-Remote-User": ["alice"]})
    assert authenticate(front, {"subject": ((("commonName", "anyone"),),)}, get, names) is not None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_reviews_carry_the_resource_attributes_and_are_cached_ten_seconds() -> None:
    kube = FakeKube()
    kube.resource_grants.add(("alice", "get", "localqueues/pendingworkloads", "ns"))
    clock = Clock()
    reviewer = AccessReviewer(kube, clock=clock)
    alice = User("alice", groups=("system:authenticated",))
    lq = Attributes("get", "localqueues", "pendingworkloads", "a", "ns", "visibility.kueue.x-k8s.io", "v1beta2")
    assert reviewer.authorize(alice, lq) == AccessDecision(True)
    assert reviewer.authorize(alice, lq._replace(namespace="other")).allowed is False
    assert reviewer.authorize(alice, lq) == AccessDecision(True)
    assert [p for _, p in kube.calls] == [SUBJECT_ACCESS_REVIEWS] * 2
    assert kube.reviews[0]["spec"] == {
        "user": "alice",
        "groups": ["system:authenticated"],
        "resourceAttributes": {
            "verb": "get",
            "group": "visibility.kueue.x-k8s.io",
            "version": "v1beta2",
            "resource": "localqueues",
            "subresource": "pendingworkloads",
            "name": "a",
            "namespace": "ns",
        },
    }
    clock.now += 10.5
    reviewer.authorize(alice, lq)
    assert len(kube.calls) == 3
    reviewer.authorize(alice, Attributes("get", path="/openapi/v2"))
    assert kube.reviews[-1]["spec"]["nonResourceAttributes"] == {"path": "/openapi/v2", "verb": "get"}


def test_system_masters_is_allowed_without_a_review() -> None:
    """As the generic API server's `AlwaysAllowGroups`: the aggregator's discovery requests keep
    working while our identity may not make reviews; anyone else is still reviewed."""
    kube = FakeKube()
    reviewer = AccessReviewer(kube)
    aggregator = User("system:kube-aggregator", groups=("system:masters",))
    assert reviewer.authorize(aggregator, Attributes("get", path="/openapi/v2")) == AccessDecision(True)
    assert kube.calls == []
    assert (
        reviewer.authorize(User("bob", groups=("system:authenticated",)), Attributes("get", path="/apis")).allowed
        is False
    )
    assert len(kube.calls) == 1


# -- over TLS -----------------------------------------------------------------------------------------


def client_cert(ca: certs.CA, cn: str, out: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    crt, pem = out / f"{cn}.crt", out / f"{cn}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return crt, pem


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, certs.CA, Path, FakeKube]]:
    cert_dir = certs.write_bundle(tmp_path / "serving", ["127.0.0.1"])
    proxy_ca = certs.make_ca(common_name="front-proxy-ca")
    kube = FakeKube()
    kube.put(AUTH_CONFIGMAP, configmap(proxy_ca.cert_pem.decode(), ["front-proxy-client"]))
    kube.resource_grants.add(("admin", "get", "clusterqueues/pendingworkloads", ""))
    ctx = tls.server_context(cert_dir)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    front = FrontProxySource(kube, ctx)
    front.refresh()
    feed = PendingFeed()
    feed.on_list("clusterqueues", [{"metadata": {"name": "cq"}}])
    server = VisibilityServer(
        ("127.0.0.1", 0), VisibilityAPI(feed, AccessReviewer(kube), feed), ctx, lambda: front.current
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1]), proxy_ca, cert_dir, kube
    finally:
        server.shutdown()
        server.server_close()


def call(port: int, cert_dir: Path, cert: tuple[Path, Path] | None, user: str = "admin") -> tuple[int, dict[str, Any]]:
    ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    if cert:
        ctx.load_cert_chain(*cert)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    try:
        conn.request("GET", CQ_PATH, headers={"X-Remote-User": user})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_only_the_front_proxy_certificate_lets_a_user_in(
    served: tuple[int, certs.CA, Path, FakeKube], tmp_path: Path
) -> None:
    port, proxy_ca, cert_dir, _ = served
    proxy = client_cert(proxy_ca, "front-proxy-client", tmp_path)
    status, doc = call(port, cert_dir, proxy)
    assert (status, doc["kind"], doc["items"]) == (200, "PendingWorkloadsSummary", [])
    assert call(port, cert_dir, proxy, user="bob")[0] == 403
    assert call(port, cert_dir, None)[0] == 401  # no certificate: the headers are not believed
    assert call(port, cert_dir, client_cert(proxy_ca, "someone-else", tmp_path))[0] == 401
    with pytest.raises((ssl.SSLError, ConnectionError)):  # a certificate from another CA fails the handshake
        call(port, cert_dir, client_cert(certs.make_ca(), "front-proxy-client", tmp_path))


def test_a_slow_client_is_cut_off_and_connections_are_capped(
    served: tuple[int, certs.CA, Path, FakeKube], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The visibility server runs in the leader's process: a trickling client held one of its
    threads forever, and every connection got a thread."""
    monkeypatch.setattr(VisibilityServer, "request_timeout_s", 1.0, raising=False)
    monkeypatch.setattr(VisibilityServer, "max_connections", 4, raising=False)
    port, proxy_ca, cert_dir, _ = served
    assert guarded_clients.held_for(port) < 5
    before = guarded_clients.handler_threads()
    idle = guarded_clients.idle_connections(port, 20)
    try:
        assert call(port, cert_dir, client_cert(proxy_ca, "front-proxy-client", tmp_path))[0] == 200
        assert guarded_clients.handler_threads() - before <= 4
    finally:
        for sock in idle:
            sock.close()
