"""bench/apiserver_cost.py: what the audit log says a manager sent, and the manager's own kubeconfig."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import apiserver_cost


def _event(audit_id: str, verb: str, resource: str, stage: str = "ResponseComplete", **extra: object) -> bytes:
    ref = {"resource": resource.split("/")[0], "namespace": "ns"}
    if "/" in resource:
        ref["subresource"] = resource.split("/")[1]
    return orjson.dumps({"auditID": audit_id, "verb": verb, "stage": stage, "objectRef": ref, **extra})


def test_each_request_counted_once_with_its_body_bytes() -> None:
    body = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}}
    lines = [
        _event("a", "watch", "workloads", stage="ResponseStarted"),
        _event("a", "watch", "workloads"),  # the same watch ending: one request
        _event("b", "patch", "workloads/status", requestObject=body),
        _event("c", "patch", "workloads/status", requestObject=body),
        b"",
        orjson.dumps({"auditID": "d", "verb": "get", "requestURI": "/apis?timeout=32s"}),
    ]
    summary = apiserver_cost.summarize_audit(lines)
    assert summary == {
        "watch workloads": {"requests": 1, "bytes": 0},
        "patch workloads/status": {"requests": 2, "bytes": 2 * len(orjson.dumps(body))},
        "get /apis": {"requests": 1, "bytes": 0},
    }


def test_manager_kubeconfig_swaps_the_certificate_for_the_token(tmp_path: Path) -> None:
    runner = tmp_path / "kubeconfig"
    runner.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "clusters": [
                    {
                        "name": "envtest",
                        "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": "Q0E="},
                    }
                ],
                "users": [{"name": "envtest", "user": {"client-certificate-data": "Qw==", "client-key-data": "Sw=="}}],
                "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "envtest"}}],
                "current-context": "envtest",
            }
        )
    )
    config = yaml.safe_load(apiserver_cost.manager_kubeconfig(runner).read_text())
    assert config["users"] == [{"name": "envtest", "user": {"token": apiserver_cost.TOKEN}}]
    assert config["clusters"][0]["cluster"]["certificate-authority-data"] == "Q0E="
    assert "client-key-data" in runner.read_text()  # the runner's own is left as it was


def test_assets_wrap_the_apiserver_and_keep_the_others(tmp_path: Path) -> None:
    k8s = tmp_path / "bin"
    k8s.mkdir()
    for name in ("etcd", "kubectl", "kube-apiserver"):
        (k8s / name).write_text("")
    assets = apiserver_cost.prepare_assets(k8s, tmp_path / "run")
    assert (assets / "etcd").resolve() == k8s / "etcd"
    script = (assets / "kube-apiserver").read_text()
    assert f'exec {k8s / "kube-apiserver"} "$@" --token-auth-file=' in script
    assert (tmp_path / "run" / "apiserver-tokens.csv").read_text().startswith(f"{apiserver_cost.TOKEN},bench-manager,")
    policy = yaml.safe_load((tmp_path / "run" / "apiserver-audit-policy.yaml").read_text())
    assert policy["rules"][-1] == {"level": "None"}  # nobody else's requests (the runner's) are recorded
