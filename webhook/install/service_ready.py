"""Wait until the webhook Service answers through its ClusterIP: the Helm chart's post-install hook.

`helm install --wait` returns once the manager's pods are Ready, but the API server calls the
webhooks through the Service, and kube-proxy programs the new endpoint up to a sync later
(iptables' minSyncPeriod is 1 s): a create sent in that gap is refused with
`dial tcp <ClusterIP>:443: connect: connection refused` (seen on the real node by
e2e/test_real_install.py, once in five installs). The hook pod runs `python -m webhook
service-ready`, which returns once /readyz has answered 200 through the Service several times in a
row; Helm waits for the hook before `install` or `upgrade` returns. `make deploy` waits the same
way with a dry-run create (`installer.wait_until_available`).

Only routing is checked, so the serving certificate is not verified and nothing but a GET is sent.
"""

from __future__ import annotations

import http.client
import os
import ssl
import sys
import time
from collections.abc import Callable, Mapping

__all__ = ["ServiceNotReady", "address", "probe", "wait"]


class ServiceNotReady(Exception):
    """The Service did not answer in time; the message says what the last attempt saw."""


def address(service: str, namespace: str, env: Mapping[str, str] = os.environ) -> tuple[str, int]:
    """The Service's ClusterIP and port from the kubelet's service links, else its DNS name and 443.

    The links (`<NAME>_SERVICE_HOST`, `_PORT`) need no cluster DNS, which a bare cluster may lack.
    """
    prefix = service.upper().replace("-", "_")
    host = env.get(f"{prefix}_SERVICE_HOST")
    if host:
        return host, int(env.get(f"{prefix}_SERVICE_PORT", "443"))
    return f"{service}.{namespace}.svc", 443


def probe(host: str, port: int, path: str, timeout_s: float) -> str | None:
    """None when `GET path` answered 200, else what went wrong."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(host, port, timeout=timeout_s, context=context)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        resp = conn.getresponse()
        resp.read()
        return None if resp.status == 200 else f"HTTP {resp.status}"
    except (OSError, http.client.HTTPException) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()


def wait(
    host: str,
    port: int,
    *,
    path: str = "/readyz",
    successes: int = 3,
    interval_s: float = 0.5,
    timeout_s: float = 300.0,
    check: Callable[[str, int, str, float], str | None] = probe,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Seconds until `successes` answers in a row, `interval_s` apart; ServiceNotReady at `timeout_s`."""
    started = clock()
    streak = 0
    last = "no attempt"
    while True:
        problem = check(host, port, path, min(2.0, timeout_s))
        streak = 0 if problem else streak + 1
        last = problem or last
        if streak >= successes:
            return clock() - started
        if clock() - started >= timeout_s:
            raise ServiceNotReady(f"https://{host}:{port}{path} not answering after {timeout_s:.0f}s: {last}")
        sleep(interval_s)


def main(service: str, namespace: str, *, path: str, successes: int, timeout_s: float) -> int:
    host, port = address(service, namespace)
    try:
        took = wait(host, port, path=path, successes=successes, timeout_s=timeout_s)
    except ServiceNotReady as exc:
        print(f"service-ready: {exc}", file=sys.stderr)
        return 1
    print(f"service-ready: {service} answered {successes} times in a row at {host}:{port} after {took:.1f}s")
    return 0
