"""The worker's /metrics: TokenReview then SubjectAccessReview, cached, over HTTPS (controller-runtime's
`filters.WithAuthenticationAndAuthorization` as upstream's manager uses it)."""

from __future__ import annotations

import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from prometheus_client import Counter, generate_latest

import certs
from tests.unit import guarded_clients
from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook import metrics
from webhook.reviews import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, bearer_token
from webhook.worker import metrics_server, process
from webhook.worker.metrics_server import (
    ALLOW_TTL_S,
    DENY_TTL_S,
    TOKEN_TTL_S,
    Authorizer,
    Denied,
)

READER = "system:serviceaccount:monitoring:prometheus"
OTHER = "system:serviceaccount:default:nobody"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def kube() -> FakeKube:
    kube = FakeKube()
    kube.tokens["reader-token"] = {
        "username": READER,
        "uid": "u-1",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
    }
    kube.tokens["other-token"] = {"username": OTHER, "groups": ["system:serviceaccounts"]}
    kube.non_resource_grants.add((READER, "get", "/metrics"))
    return kube


def reviews(kube: FakeKube) -> list[str]:
    """The review kinds the API server was asked for, in order."""
    return [{TOKEN_REVIEWS: "TokenReview", SUBJECT_ACCESS_REVIEWS: "SAR"}[path] for _, path in kube.calls]


@pytest.mark.parametrize("header", ["", "Bearer", "Bearer ", "Basic cmVhZGVyOnB3", "Token reader-token"])
def test_no_bearer_token_is_401_without_asking_the_api_server(kube: FakeKube, header: str) -> None:
    assert Authorizer(kube).check(header, "GET", "/metrics") == Denied(401, "Unauthorized")  # type: ignore[arg-type]
    assert kube.calls == []


def test_bearer_token_is_read_as_the_api_server_reads_it() -> None:
    assert bearer_token("  bearer abc  ") == "abc"
    assert bearer_token("Bearer abc extra") == "abc"
    assert bearer_token("Bearer  abc") is None  # a space before the token leaves it empty


def test_a_token_the_review_rejects_is_401(kube: FakeKube) -> None:
    assert Authorizer(kube).check("Bearer forged", "GET", "/metrics") == Denied(401, "Unauthorized")  # type: ignore[arg-type]
    assert reviews(kube) == ["TokenReview"]
    assert kube.calls and kube.calls[0][0] == "POST"


def test_an_authenticated_user_without_the_grant_is_403(kube: FakeKube) -> None:
    got = Authorizer(kube).check("Bearer other-token", "GET", "/metrics")  # type: ignore[arg-type]
    assert got == Denied(403, f"Authorization denied for user {OTHER}")
    assert reviews(kube) == ["TokenReview", "SAR"]


def test_the_reader_is_allowed_and_the_review_names_user_verb_and_path(kube: FakeKube) -> None:
    sent: list[dict[str, Any]] = []
    create = kube.create

    def recording(path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        sent.append(body)
        return create(path, body, timeout=timeout)

    kube.create = recording  # type: ignore[method-assign]
    assert Authorizer(kube).check("Bearer reader-token", "GET", "/metrics") is None  # type: ignore[arg-type]
    token_review, sar = sent
    assert token_review == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "reader-token"},
    }
    assert sar == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": READER,
            "uid": "u-1",
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }


def test_system_authenticated_is_added_to_the_groups_reviewed(kube: FakeKube) -> None:
    auth = Authorizer(kube)  # type: ignore[arg-type]
    user = auth.authenticator.authenticate("other-token")
    assert user is not None and user.groups == ("system:serviceaccounts", "system:authenticated")


def test_the_verb_is_the_method_in_lower_case(kube: FakeKube) -> None:
    got = Authorizer(kube).check("Bearer reader-token", "POST", "/metrics")  # type: ignore[arg-type]
    assert got == Denied(403, f"Authorization denied for user {READER}")


def test_answers_are_cached_for_upstreams_ttls(kube: FakeKube) -> None:
    clock = Clock()
    auth = Authorizer(kube, clock=clock)  # type: ignore[arg-type]
    for _ in range(5):  # a scrape every few seconds: two reviews, then none
        assert auth.check("Bearer reader-token", "GET", "/metrics") is None
        clock.now += 5
    assert reviews(kube) == ["TokenReview", "SAR"]
    clock.now = 1000 + TOKEN_TTL_S + 1  # the token expired, the allowed decision did not
    assert auth.check("Bearer reader-token", "GET", "/metrics") is None
    assert reviews(kube) == ["TokenReview", "SAR", "TokenReview"]
    clock.now = 1000 + ALLOW_TTL_S + 1
    assert auth.check("Bearer reader-token", "GET", "/metrics") is None
    assert reviews(kube)[3:] == ["TokenReview", "SAR"]


def test_refusals_are_cached_too(kube: FakeKube) -> None:
    clock = Clock()
    auth = Authorizer(kube, clock=clock)  # type: ignore[arg-type]
    for _ in range(3):
        assert auth.check("Bearer forged", "GET", "/metrics") == Denied(401, "Unauthorized")
        assert auth.check("Bearer other-token", "GET", "/metrics") == Denied(
            403, f"Authorization denied for user {OTHER}"
        )
    assert reviews(kube) == ["TokenReview", "TokenReview", "SAR"]
    # A denial is kept for a shorter time than an allowance: a new binding takes effect within DENY_TTL_S.
    kube.non_resource_grants.add((OTHER, "get", "/metrics"))
    clock.now += DENY_TTL_S + 1
    assert auth.check("Bearer other-token", "GET", "/metrics") is None
    assert reviews(kube)[3:] == ["SAR"]


def test_the_caches_are_bounded(kube: FakeKube) -> None:
    auth = Authorizer(kube, cache_size=2)  # type: ignore[arg-type]
    for token in ("a", "b", "c", "d"):
        auth.check(f"Bearer {token}", "GET", "/metrics")
    assert len(auth.authenticator.cache) == 2
    for path in ("/metrics", "/a", "/b"):
        auth.check("Bearer reader-token", "GET", path)
    assert len(auth.decisions) == 2
    kube.calls.clear()
    auth.check("Bearer a", "GET", "/metrics")  # the least recently used went first
    assert reviews(kube) == ["TokenReview"]


class BrokenKube(FakeKube):
    """An API server that fails the reviews of one kind."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def create(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        if path == self.failing:
            self.calls.append(("POST", path))
            raise k.ServerError(503, "the server is currently unable to handle the request")
        return super().create(path, body, timeout=timeout)


def test_review_errors_are_500_and_not_cached() -> None:
    kube = BrokenKube(TOKEN_REVIEWS)
    auth = Authorizer(kube)  # type: ignore[arg-type]
    assert auth.check("Bearer t", "GET", "/metrics") == Denied(500, "Authentication failed")
    assert auth.check("Bearer t", "GET", "/metrics") == Denied(500, "Authentication failed")
    assert len(kube.calls) == 2

    kube = BrokenKube(SUBJECT_ACCESS_REVIEWS)
    kube.tokens["t"] = {"username": "alice"}
    auth = Authorizer(kube)  # type: ignore[arg-type]
    assert auth.check("Bearer t", "GET", "/metrics") == Denied(500, "Authorization for user alice failed")
    assert auth.check("Bearer t", "GET", "/metrics") == Denied(500, "Authorization for user alice failed")
    assert reviews(kube) == ["TokenReview", "SAR", "SAR"]


# -- over HTTPS ------------------------------------------------------------------------------------


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def get(url: str, token: str | None, ca: Path | None) -> tuple[int, dict[str, str], bytes]:
    ctx = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_https_scrape_answers_401_403_and_200_with_the_exposition(
    tmp_path: Path, kube: FakeKube, stop: threading.Event
) -> None:
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    bound = process.serve_metrics("127.0.0.1:0", kube, str(tmp_path), stop)  # type: ignore[arg-type]
    assert bound is not None
    url, ca = f"https://127.0.0.1:{bound[1]}/metrics", tmp_path / "ca.crt"

    status, headers, body = get(url, None, ca)
    assert (status, body) == (401, b"Unauthorized\n")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert get(url, "forged", ca)[::2] == (401, b"Unauthorized\n")
    assert get(url, "other-token", ca)[::2] == (403, f"Authorization denied for user {OTHER}\n".encode())

    unused = Counter(
        "kueue_test_unused", "A family without series.", ["cluster_queue"], registry=metrics.WORKER_REGISTRY
    )
    try:
        status, headers, body = get(url, "reader-token", ca)
    finally:
        metrics.WORKER_REGISTRY.unregister(unused)
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=")
    assert body == generate_latest(metrics.WORKER_REGISTRY)
    assert b"# TYPE kueue_build_info gauge" in body
    assert b"kueue_test_unused" not in body  # no HELP/TYPE for a family without series, as Go's registry

    kube.calls.clear()
    assert get(f"https://127.0.0.1:{bound[1]}/", "reader-token", ca)[::2] == (404, b"404 page not found\n")
    assert kube.calls == []


def test_https_without_a_certificate_serves_a_self_signed_one(
    tmp_path: Path, kube: FakeKube, stop: threading.Event
) -> None:
    bound = process.serve_metrics("127.0.0.1:0", kube, str(tmp_path / "absent"), stop)  # type: ignore[arg-type]
    assert bound is not None
    pem = ssl.get_server_certificate(("127.0.0.1", bound[1]), timeout=5)
    cert = x509.load_pem_x509_certificate(pem.encode())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert get(f"https://127.0.0.1:{bound[1]}/metrics", "reader-token", None)[0] == 200


def test_a_rotated_certificate_is_served_without_a_restart(
    tmp_path: Path, kube: FakeKube, stop: threading.Event
) -> None:
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    bound = process.serve_metrics("127.0.0.1:0", kube, str(tmp_path), stop)  # type: ignore[arg-type]
    assert bound is not None
    first = ssl.get_server_certificate(("127.0.0.1", bound[1]), timeout=5)
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    deadline = time.monotonic() + 10
    while ssl.get_server_certificate(("127.0.0.1", bound[1]), timeout=5) == first:
        assert time.monotonic() < deadline, "the new certificate was never served"
        time.sleep(0.1)
    assert get(f"https://127.0.0.1:{bound[1]}/metrics", "reader-token", tmp_path / "ca.crt")[0] == 200


def test_a_stalled_handshake_holds_up_no_other_scrape(tmp_path: Path, kube: FakeKube, stop: threading.Event) -> None:
    import socket

    certs.write_bundle(tmp_path, ["127.0.0.1"])
    bound = process.serve_metrics("127.0.0.1:0", kube, str(tmp_path), stop)  # type: ignore[arg-type]
    assert bound is not None
    with socket.create_connection(("127.0.0.1", bound[1])):  # connects, never says hello
        started = time.monotonic()
        assert get(f"https://127.0.0.1:{bound[1]}/metrics", "reader-token", tmp_path / "ca.crt")[0] == 200
        assert time.monotonic() - started < 2


def test_bind_address_0_serves_nothing(kube: FakeKube, stop: threading.Event) -> None:
    assert process.serve_metrics("0", kube, "/nonexistent", stop) is None  # type: ignore[arg-type]


def test_a_slow_client_is_cut_off_and_connections_are_capped(
    tmp_path: Path, kube: FakeKube, stop: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client trickling its request one byte at a time held a thread forever (a per-read
    timeout only); connections were uncapped, a thread each."""
    monkeypatch.setattr(metrics_server.MetricsServer, "request_timeout_s", 1.0, raising=False)
    monkeypatch.setattr(metrics_server.MetricsServer, "max_connections", 4, raising=False)
    certs.write_bundle(tmp_path, ["127.0.0.1"])
    bound = process.serve_metrics("127.0.0.1:0", kube, str(tmp_path), stop)  # type: ignore[arg-type]
    assert bound is not None
    assert guarded_clients.held_for(bound[1]) < 5
    before = guarded_clients.handler_threads()
    idle = guarded_clients.idle_connections(bound[1], 20)
    try:
        assert get(f"https://127.0.0.1:{bound[1]}/metrics", "reader-token", tmp_path / "ca.crt")[0] == 200
        assert guarded_clients.handler_threads() - before <= 4
    finally:
        for sock in idle:
            sock.close()
