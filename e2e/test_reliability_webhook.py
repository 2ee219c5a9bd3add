"""Bad input and slow clients at the webhook over real TLS; absurd Jobs; no secrets in logs."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import reliability as rel
from e2e.conftest import Kubectl, local_stack

JOB_PATH = "/validate-batch-v1-job"


def _ctx(stack: Any) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(stack.cert_dir / "ca.crt"))


def _post(stack: Any, path: str, body: bytes, *, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPSConnection("127.0.0.1", stack.port, context=_ctx(stack), timeout=15)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _review(
    obj: dict[str, Any], *, api_version: str = "admission.k8s.io/v1", kind: str = "Job", group: str = "batch"
) -> bytes:
    return json.dumps(
        {
            "apiVersion": api_version,
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": group, "version": "v1", "kind": kind},
                "resource": {"group": group, "version": "v1", "resource": kind.lower() + "s"},
                "operation": "CREATE",
                "namespace": "default",
                "name": "x",
                "object": obj,
                "userInfo": {"username": "attacker"},
            },
        }
    ).encode()


def _server_pid(stack: Any) -> int:
    return int(stack.pid_file.read_text())


def _rss_mb(stack: Any) -> float:
    return rel.rss_kb(_server_pid(stack)) / 1024


@pytest.mark.local_stack
def test_bad_bodies_get_4xx_or_valid_answers_and_the_server_stays_up(kubectl: Kubectl) -> None:
    stack = local_stack(kubectl)
    good_job = rel.job("default", "x", "q")
    valid = _review(good_job)
    cases: dict[str, bytes] = {
        "truncated": valid[: len(valid) // 2],
        "empty": b"",
        "non-json": b"\x00\xff<xml>not json</xml>",
        "json-array": b"[1,2,3]",
        "deeply-nested": b"[" * 100_000 + b"]" * 100_000,
        "wrong-version": _review(good_job, api_version="admission.k8s.io/v1beta1"),
        "wrong-kind": _review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, kind="Pod", group=""),
        "object-not-a-job": _review({"apiVersion": "batch/v1", "kind": "Job", "spec": "nonsense", "metadata": []}),
        "huge": b'{"a":"' + b"x" * (9 * 1024 * 1024) + b'"}',
        "lying-length": valid,
    }
    rss_before = _rss_mb(stack)
    answers = {}
    for name, body in cases.items():
        headers = {"Content-Length": str(len(body) + 1000)} if name == "lying-length" else None
        try:
            code, data = _post(stack, JOB_PATH, body, headers=headers)
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            code, data = 0, repr(exc).encode()  # the server closed a request that never completed
        answers[name] = code
        assert (
            (code == 0 and name == "lying-length")
            or 400 <= code < 500
            or (code == 200 and "response" in json.loads(data))
        ), (name, code, data[:200])
    for _ in range(5):  # repeat the big ones: memory must not grow with each
        assert _post(stack, JOB_PATH, cases["huge"])[0] == 400
    code, data = _post(stack, JOB_PATH, valid)
    assert code == 200 and json.loads(data)["response"]["uid"] == "u-1"
    rss_after = _rss_mb(stack)
    print(f"bad bodies: {answers}; server RSS {rss_before:.0f} -> {rss_after:.0f} MB")
    assert rss_after < rss_before + 64


@pytest.mark.local_stack
def test_slowloris_does_not_starve_good_requests(kubectl: Kubectl) -> None:
    stack = local_stack(kubectl)
    ctx = _ctx(stack)
    n, stop = 1200, threading.Event()
    socks: list[ssl.SSLSocket] = []
    rss_before = _rss_mb(stack)
    for i in range(n):
        raw = socket.create_connection(("127.0.0.1", stack.port), timeout=5)
        s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        # Half of them trickle headers, half a body that never ends.
        s.sendall(
            b"POST /validate-batch-v1-job HTTP/1.1\r\nHost: x\r\n"
            if i % 2
            else b"POST /validate-batch-v1-job HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"
        )
        socks.append(s)

    def trickle() -> None:
        while not stop.wait(0.5):
            for s in socks:
                with contextlib.suppress(OSError):
                    s.send(b"a")

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    latencies = []
    body = _review(rel.job("default", "x", "q"))
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            code, _ = _post(stack, JOB_PATH, body)
            latencies.append(time.monotonic() - t0)
            assert code == 200
            time.sleep(0.2)
        # A real Job through the API server (webhook timeout 10 s) meanwhile.
        ns = kubectl("create", "namespace", f"slow-{int(time.time())}").stdout.split("/")[-1].split()[0]
        kubectl("create", "-f", "-", input=json.dumps(rel.job(ns, "during-attack", "q")))
        kubectl("delete", "namespace", ns, "--wait=false")
    finally:
        stop.set()
        t.join()
        for s in socks:
            s.close()
    rss_after = _rss_mb(stack)
    latencies.sort()
    print(
        f"slowloris: {n} slow connections; {len(latencies)} good requests, p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms; server RSS {rss_before:.0f} -> {rss_after:.0f} MB"
    )
    assert latencies[-1] < 2.0
    time.sleep(1)
    assert _rss_mb(stack) < rss_before + 128


@pytest.mark.local_stack
def test_absurd_jobs_get_a_denial_or_a_pending_message_never_a_worker_exception(
    kubectl: Kubectl, namespace: str
) -> None:
    stack = local_stack(kubectl)
    kube = rel.admin(stack.kubeconfig)
    log_from = stack.server_log.stat().st_size
    setup = rel.make_setup(kube, namespace, cq_cpu=(4,), borrowing=(None,))
    lq = next(iter(setup.lqs))
    try:

        def with_requests(name: str, requests: dict[str, Any]) -> dict[str, Any]:
            j = rel.job(namespace, name, lq)
            j["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": requests}
            return j

        pending = {
            "gpus-1e18": with_requests("gpus-1e18", {"nvidia.com/gpu": "1e18"}),
            "cpu-1e18": with_requests("cpu-1e18", {"cpu": "1e18"}),
            "unknown-resource": with_requests("unknown-resource", {"example.com/widgets": "3"}),
            "many-pods": {
                **rel.job(namespace, "many-pods", lq),
                "spec": {**rel.job(namespace, "many-pods", lq)["spec"], "parallelism": 100000, "completions": 100000},
            },
        }
        for obj in pending.values():
            kubectl("create", "-f", "-", input=json.dumps(obj))
        refused = {
            "negative": with_requests("negative", {"cpu": "-1"}),
            "non-numeric": yaml.safe_load(json.dumps(with_requests("non-numeric", {"cpu": "lots"}))),
        }
        for name, obj in refused.items():
            res = kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
            assert res.returncode != 0 and res.stderr.strip(), name
        wls = rel.wait_for(
            "a pending message for every absurd Job",
            lambda: (
                w
                if len(
                    w := [
                        x
                        for x in kube.list(rel.k.object_path(rel.V1B2, "workloads", namespace))[0]
                        if rel.cond(x, "QuotaReserved").get("status") == "False"
                        and rel.cond(x, "QuotaReserved").get("message")
                    ]
                )
                == len(pending)
                else None
            ),
            timeout=30,
        )
        messages = {w["metadata"]["ownerReferences"][0]["name"]: rel.cond(w, "QuotaReserved")["message"] for w in wls}
        print("absurd jobs:", json.dumps(messages, indent=1))
        assert (
            "unavailable in ClusterQueue" in messages["unknown-resource"]
            or "example.com/widgets" in messages["unknown-resource"]
        )
        for name in ("gpus-1e18", "cpu-1e18"):
            assert "couldn't assign flavors" in messages[name] or "unavailable" in messages[name], messages[name]
        assert not any(
            j["spec"].get("suspend") is False for j in kube.list(f"/apis/batch/v1/namespaces/{namespace}/jobs")[0]
        )
        assert rel.log_errors(stack.server_log, since=log_from) == []
    finally:
        setup.cleanup(kube)


@pytest.mark.local_stack
def test_no_secrets_in_logs(kubectl: Kubectl) -> None:
    stack = local_stack(kubectl)
    logs = [stack.server_log, *sorted(Path(stack.dir).glob("**/replica-*.log"))]
    text = "\n".join(p.read_text(errors="replace") for p in logs if p.exists())
    assert text, "no server log to scan"
    key_body = "".join(ln for ln in (stack.cert_dir / "tls.key").read_text().splitlines() if "-----" not in ln)
    cfg = yaml.safe_load(stack.kubeconfig.read_text())
    client_key = base64.b64decode(cfg["users"][0]["user"]["client-key-data"]).decode()
    client_key_body = "".join(ln for ln in client_key.splitlines() if "-----" not in ln)
    secrets = {"tls.key": key_body[20:60], "client key": client_key_body[20:60]}
    # Any service-account token minted in this cluster (JWTs start with eyJ): none may appear.
    assert "BEGIN" not in text and "PRIVATE KEY" not in text
    for what, needle in secrets.items():
        assert needle not in text, what
    assert "eyJhbGciOi" not in text
    assert "client-key-data" not in text and "Authorization: Bearer" not in text
