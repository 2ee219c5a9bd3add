"""Webhook benchmark: our Job and Pod handlers against a constant-answer baseline, over TLS.

Both servers run the same uvicorn/TLS set-up in their own process; a separate load process
sends N mutate reviews at a fixed concurrency over keep-alive connections. The baseline
answers a constant `allowed` without reading the body's JSON, so ours/baseline is the cost
of our logic. Target: Job handler throughput >= 0.7 x baseline.

    python bench/bench_webhook.py [--requests 4000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import socket
import ssl
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONSTANT = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"x","allowed":true}}'


async def _baseline_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:  # drain the body without parsing it
        message = await receive()
        more = message.get("more_body", False)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(CONSTANT)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": CONSTANT})


def _serve(kind: str, port: int, cert_dir: str) -> None:
    import logging

    import uvicorn

    from webhook import tls
    from webhook.admission.app import create_app
    from webhook.config import parse

    logging.disable(logging.CRITICAL)
    cfg = parse(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "integrations:\n  frameworks: [batch/job, pod]\n"
    )
    app = _baseline_app if kind == "baseline" else create_app(cfg)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="off")
    config.load()
    config.ssl = tls.server_context(cert_dir)
    uvicorn.Server(config).run()


def _job_review() -> bytes:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "bench", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
                    ],
                }
            },
        },
    }
    return _review(job, {"group": "batch", "version": "v1", "kind": "Job"})


def _pod_review() -> bytes:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bench", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
    }
    return _review(pod, {"group": "", "version": "v1", "kind": "Pod"})


def _review(obj: dict[str, Any], kind: dict[str, str]) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": str(uuid.uuid4()),
                "kind": kind,
                "operation": "CREATE",
                "namespace": "team-a",
                "name": "bench",
                "object": obj,
            },
        }
    ).encode()


async def _load(port: int, path: str, body: bytes, n: int, concurrency: int, ca: str) -> tuple[float, list[float]]:
    ctx = ssl.create_default_context(cafile=ca)
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    latencies: list[float] = []
    remaining = n

    async def worker() -> None:
        nonlocal remaining
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        while remaining > 0:
            remaining -= 1
            t0 = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            assert head.startswith(b"HTTP/1.1 200"), head[:40]
            latencies.append(time.perf_counter() - t0)
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


def _measure(port: int, path: str, body: bytes, n: int, concurrency: int, ca: str, out: Any) -> None:
    asyncio.run(_load(port, path, body, n // 10, concurrency, ca))  # warm-up
    wall, lat = asyncio.run(_load(port, path, body, n, concurrency, ca))
    lat.sort()
    out.put((n / wall, statistics.median(lat) * 1e3, lat[int(len(lat) * 0.99) - 1] * 1e3))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int) -> None:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on {port} did not start")


def run(kind: str, path: str, body: bytes, n: int, concurrency: int, cert_dir: str) -> tuple[float, float, float]:
    port = _free_port()
    server = mp.Process(target=_serve, args=(kind, port, cert_dir), daemon=True)
    server.start()
    try:
        _wait(port)
        q: Any = mp.Queue()
        load = mp.Process(target=_measure, args=(port, path, body, n, concurrency, os.path.join(cert_dir, "ca.crt"), q))
        load.start()
        result = q.get(timeout=300)
        load.join()
        return result  # type: ignore[no-any-return]
    finally:
        server.terminate()
        server.join()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    import certs

    with tempfile.TemporaryDirectory() as d:
        certs.write_bundle(Path(d), ["127.0.0.1"])
        rows = [
            (
                "baseline (constant)",
                run("baseline", "/mutate-batch-v1-job", _job_review(), args.requests, args.concurrency, d),
            ),
            ("mutate Job", run("ours", "/mutate-batch-v1-job", _job_review(), args.requests, args.concurrency, d)),
            ("mutate Pod", run("ours", "/mutate--v1-pod", _pod_review(), args.requests, args.concurrency, d)),
        ]
    base = rows[0][1][0]
    print(f"{args.requests} requests, concurrency {args.concurrency}, TLS, keep-alive")
    print(f"{'handler':<22}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'ratio':>8}")
    for name, (rps, p50, p99) in rows:
        print(f"{name:<22}{rps:>10.0f}{p50:>10.2f}{p99:>10.2f}{rps / base:>8.2f}")
    job_ratio = rows[1][1][0] / base
    print(f"target: mutate Job >= 0.70 x baseline -> {'met' if job_ratio >= 0.7 else 'NOT met'} ({job_ratio:.2f})")


if __name__ == "__main__":
    main()
