"""Benchmark of the visibility API (not a test): a page of pending workloads out of a long queue.

10,000 pending workloads in one ClusterQueue, spread over 10 LocalQueues, random priorities and ages.
Each case answers the same request many times and reports p50/p99 in milliseconds:

* ours: `VisibilityAPI.handle` over the incremental `PendingOrder` (authorization answered from the
  review cache, JSON rendered), in-process;
* baseline, measured in the same run: upstream's method for the same answer (`ClusterQueue.Snapshot`
  copies and sorts the whole queue per request, then walks it up to offset+limit counting LocalQueue
  positions, `pending_workloads_cq.go`), on the same entries, rendering the same JSON;
* https: ours through the real server on loopback, TLS with a front-proxy client certificate,
  one keep-alive connection, as the aggregator calls it.

It also times one workload update (the cost every watch event pays). Run: python bench/bench_visibility.py
"""

from __future__ import annotations

import http.client
import random
import ssl
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import certs
from webhook import tls
from webhook.core.pending_order import Positioned
from webhook.visibility.auth import AccessReviewer, FrontProxySource
from webhook.visibility.handler import Request, VisibilityAPI, summary
from webhook.visibility.server import PendingFeed, VisibilityServer
from webhook.worker.metrics_server import User

PENDING = 10_000
LOCAL_QUEUES = 10
LIMIT = 100
ROUNDS = 300
T0 = datetime(2025, 1, 1, tzinfo=UTC)
PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"
ADMIN = User("admin", groups=("system:masters", "system:authenticated"))


class AllowingKube:
    """Answers every SubjectAccessReview with allowed (the reviewer caches it after the first)."""

    def create(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        return {**body, "status": {"allowed": True}}

    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None:
        return self.configmap

    configmap: dict[str, Any] | None = None


def workloads(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i in range(PENDING):
        created = (T0 + timedelta(seconds=rng.randrange(86_400))).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(
            {
                "metadata": {
                    "name": f"wl-{i}",
                    "namespace": "ns",
                    "uid": f"uid-{i:05d}",
                    "creationTimestamp": created,
                    "ownerReferences": [
                        {"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{i}", "uid": f"job-uid-{i}"}
                    ],
                },
                "spec": {
                    "queueName": f"lq-{i % LOCAL_QUEUES}",
                    "priority": rng.randrange(10),
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {
                                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                            },
                        }
                    ],
                },
            }
        )
    return out


def feed_of(objs: list[dict[str, Any]]) -> PendingFeed:
    feed = PendingFeed()
    feed.on_list(
        "clusterqueues",
        [
            {
                "metadata": {"name": "cq"},
                "spec": {
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "0"}]}],
                        }
                    ]
                },
            }
        ],
    )
    feed.on_list(
        "localqueues",
        [
            {"metadata": {"name": f"lq-{i}", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}
            for i in range(LOCAL_QUEUES)
        ],
    )
    feed.on_list("workloads", objs)
    return feed


def upstream_page(feed: PendingFeed, offset: int, limit: int) -> bytes:
    """Upstream's per-request work: copy the queue, sort it, walk to offset+limit, render."""
    everything = feed.cluster_queue_page("cq", offset=0, limit=PENDING) or []  # stands for the heap + inadmissible
    elements = [p.workload for p in everything]
    random.shuffle(elements)  # the heap's list is in no particular order
    elements.sort(key=lambda wl: wl.order)
    lq_positions: dict[str, int] = {}
    items = []
    for index, wl in enumerate(elements[: offset + limit]):
        pos = lq_positions.get(wl.local_queue, 0)
        lq_positions[wl.local_queue] = pos + 1
        if index >= offset:
            items.append(Positioned(wl, index, pos))
    return orjson.dumps(summary("v1beta2", items))


def timed(fn: Callable[[], object], rounds: int = ROUNDS) -> tuple[float, float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def client_cert(ca: certs.CA, out: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "front-proxy-client")]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    (out / "client.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (out / "client.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return out / "client.crt", out / "client.key"


def over_https(feed: PendingFeed, offset: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cert_dir = certs.write_bundle(Path(tmp) / "serving", ["127.0.0.1"])
        proxy_ca = certs.make_ca(common_name="front-proxy-ca")
        kube = AllowingKube()
        kube.configmap = {
            "data": {
                "requestheader-client-ca-file": proxy_ca.cert_pem.decode(),
                "requestheader-allowed-names": '["front-proxy-client"]',
                "requestheader-username-headers": '["X-Remote-User"]',
                "requestheader-group-headers": '["X-Remote-Group"]',
            }
        }
        ctx = tls.server_context(cert_dir)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        front = FrontProxySource(kube, ctx)  # type: ignore[arg-type]
        front.refresh()
        server = VisibilityServer(
            ("127.0.0.1", 0), VisibilityAPI(feed, AccessReviewer(kube), feed), ctx, lambda: front.current
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        client_ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
        client_ctx.load_cert_chain(*client_cert(proxy_ca, Path(tmp)))
        conn = http.client.HTTPSConnection("127.0.0.1", int(server.server_address[1]), context=client_ctx, timeout=10)
        headers = {"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}

        def call() -> None:
            conn.request("GET", f"{PATH}?limit={LIMIT}&offset={offset}", headers=headers)
            resp = conn.getresponse()
            assert resp.status == 200 and len(orjson.loads(resp.read())["items"]) == LIMIT

        call()
        try:
            return timed(call)
        finally:
            conn.close()
            server.shutdown()
            server.server_close()


def main() -> int:
    rng = random.Random(1)
    objs = workloads(rng)
    start = time.perf_counter()
    feed = feed_of(objs)
    print(
        f"visibility: {PENDING:,} pending workloads in one ClusterQueue over {LOCAL_QUEUES} LocalQueues "
        f"(initial list {time.perf_counter() - start:.2f} s); page of {LIMIT}, {ROUNDS} requests per case"
    )
    api = VisibilityAPI(feed, AccessReviewer(AllowingKube()), feed)  # type: ignore[arg-type]
    api.handle(Request("GET", PATH, {}, ADMIN))  # the review is cached from here on

    def ours(offset: int) -> None:
        resp = api.handle(Request("GET", PATH, {"limit": [str(LIMIT)], "offset": [str(offset)]}, ADMIN))
        assert resp.status == 200

    for offset in (0, PENDING // 2, PENDING - LIMIT):
        assert (
            orjson.loads(upstream_page(feed, offset, LIMIT))["items"]
            == orjson.loads(
                api.handle(Request("GET", PATH, {"limit": [str(LIMIT)], "offset": [str(offset)]}, ADMIN)).body
            )["items"]
        )
        o50, o99 = timed(lambda offset=offset: ours(offset))  # type: ignore[misc]
        b50, b99 = timed(lambda offset=offset: upstream_page(feed, offset, LIMIT), rounds=60)  # type: ignore[misc]
        print(
            f"  offset {offset:>5}: ours p50 {o50:6.2f} ms p99 {o99:6.2f} ms | baseline (copy+sort) p50 {b50:6.2f} ms "
            f"p99 {b99:6.2f} ms | p99 ratio {o99 / b99:.3f}"
        )
    lq50, lq99 = timed(
        lambda: api.handle(
            Request(
                "GET",
                "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues/lq-3/pendingworkloads",
                {"limit": [str(LIMIT)], "offset": ["500"]},
                ADMIN,
            )
        )
    )
    print(f"  LocalQueue page (offset 500 of 1,000): ours p50 {lq50:.2f} ms p99 {lq99:.2f} ms")
    ours_lq = "/apis/visibility.pykueue.io/v1alpha1/namespaces/ns/localqueues/lq-3"
    e50, e99 = timed(
        lambda: api.handle(
            Request("GET", f"{ours_lq}/pendingworkloads", {"limit": [str(LIMIT)], "offset": ["500"]}, ADMIN)
        )
    )
    print(
        f"  the same page with estimated admissions (visibility.pykueue.io): p50 {e50:.2f} ms p99 {e99:.2f} ms "
        f"(p50 ratio to upstream's page {e50 / lq50:.2f})"
    )
    m50, m99 = timed(lambda: api.handle(Request("GET", f"{ours_lq}/limits", {}, ADMIN)))
    print(f"  the LocalQueue's limits: p50 {m50:.3f} ms p99 {m99:.3f} ms")
    h50, h99 = over_https(feed, PENDING // 2)
    print(
        f"  https, front-proxy cert, keep-alive, offset {PENDING // 2}: p50 {h50:.2f} ms p99 {h99:.2f} ms "
        f"({'under' if h99 < 50 else 'OVER'} the 50 ms target)"
    )
    wl = objs[123]
    flip = [0]

    def update() -> None:
        flip[0] ^= 1
        feed.on_event("workloads", "MODIFIED", {**wl, "spec": {**wl["spec"], "priority": 20 + flip[0]}})

    u50, u99 = timed(update, rounds=2000)
    print(f"  one workload update (watch event): p50 {u50 * 1000:.0f} us p99 {u99 * 1000:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
