"""`deploy` waits until the webhooks take a create, as upstream's WaitForKueueAvailability, against a fake kubectl."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from webhook.install import installer
from webhook.install import objects as o
from webhook.install.__main__ import main
from webhook.install.kustomize import documents

REFUSED = (
    'Error from server (InternalError): Internal error occurred: failed calling webhook "mresourceflavor.kb.io": '
    'failed to call webhook: Post "https://kueue-webhook-service.kueue-system.svc:443/mutate-kueue-x-k8s-io-'
    'v1beta2-resourceflavor?timeout=10s": dial tcp 10.96.149.236:443: connect: connection refused'
)
POD_IPS = {"10.244.0.5": "kueue-controller-manager-7d9f-a", "10.244.1.7": "kueue-controller-manager-7d9f-b"}

# Answers what `installer` asks, from a JSON state file: how many dry-run creates to refuse, how
# many endpoint reads still show one replica, who holds the Lease; every call is logged.
FAKE_KUBECTL = """\
import json, sys
state_path = sys.argv[0] + ".json"
state = json.load(open(state_path))
args = sys.argv[1:]
sent = json.loads(sys.stdin.read()) if args[0] in ("apply", "create") else {}
state["calls"].append({"args": args, "kinds": [i["kind"] for i in sent.get("items", [sent] if sent else [])]})
def out(obj):
    print(json.dumps(obj))
if args[0] == "kustomize":
    print(state["kustomize"])
elif args[0] == "create":
    if state["refuse"] > 0:
        state["refuse"] -= 1
        print(state["refused"], file=sys.stderr)
        json.dump(state, open(state_path, "w"))
        sys.exit(1)
    print("resourceflavor.kueue.x-k8s.io/webhook-probe-x7k2p")
elif args[0] == "get" and args[3] == "deployment":
    out({"spec": {"replicas": 2, "selector": {"matchLabels": {"control-plane": "controller-manager"}}},
         "status": {"availableReplicas": 2}})
elif args[0] == "get" and args[3] == "pods":
    out({"items": [{"metadata": {"name": n}, "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}}
                   for ip, n in state["pods"].items()]})
elif args[0] == "get" and args[3] == "endpointslices":
    ips = sorted(state["pods"])
    if state["lagging_endpoints"] > 0:
        state["lagging_endpoints"] -= 1
        ips = ips[:1]
    out({"items": [{"endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips]}]})
elif args[0] == "get" and args[3] == "lease":
    out({"spec": {"holderIdentity": state["holder"]}})
json.dump(state, open(state_path, "w"))
"""


class FakeKubectl:
    def __init__(self, directory: Path, **state: Any) -> None:
        self.path = directory / "kubectl"
        self.path.write_text(f"#!{sys.executable}\n{FAKE_KUBECTL}")
        self.path.chmod(0o755)
        s = o.Settings()
        built = documents([*o.crd_objects(s)[:1], *o.controller_objects(s), *o.webhook_objects(s)])
        self.state_path = Path(f"{self.path}.json")
        self.state_path.write_text(
            json.dumps(
                {
                    "kustomize": built,
                    "refused": REFUSED,
                    "refuse": 0,
                    "lagging_endpoints": 0,
                    "pods": POD_IPS,
                    "holder": "kueue-controller-manager-7d9f-b_7_0c1d2e3f",
                    "calls": [],
                    **state,
                }
            )
        )

    @property
    def calls(self) -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = json.loads(self.state_path.read_text())["calls"]
        return calls

    def verbs(self) -> list[str]:
        """Each call's words, without flags, the namespace and paths."""
        words = (
            [a for a in c["args"] if a[0] not in "-/" and a not in ("kueue-system", "json", "name")] for c in self.calls
        )
        return [" ".join(w[:3]) for w in words]


def test_deploy_returns_once_a_dry_run_create_is_admitted(tmp_path: Path) -> None:
    kubectl = FakeKubectl(tmp_path, refuse=2, lagging_endpoints=1)
    installer.deploy("pykueue:dev", kubectl=str(kubectl.path), timeout_s=30)
    applied = [c["kinds"] for c in kubectl.calls if c["args"][0] == "apply"]
    assert applied[0] == ["CustomResourceDefinition"] and "Deployment" in applied[1]
    assert kubectl.verbs() == [
        "kustomize",
        "apply",
        "wait crd/admissionchecks.kueue.x-k8s.io",
        "apply",
        "rollout status deployment/kueue-controller-manager",
        # the endpoints lag one read behind the pods, then match
        *[
            "get deployment kueue-controller-manager",
            "get pods control-plane=controller-manager",
            "get endpointslices kubernetes.io/service-name=kueue-webhook-service",
        ]
        * 2,
        # refused twice (kube-proxy has not routed the Service yet), then admitted
        "create",
        "create",
        "create",
        "get lease c1f6bfd2.kueue.x-k8s.io",
    ]
    probe = next(c for c in kubectl.calls if c["args"][0] == "create")
    assert "--dry-run=server" in probe["args"]


@pytest.mark.parametrize(
    ("state", "message"),
    [
        pytest.param(
            {"refuse": 10**6},
            f"webhook data path: not done in time; last: dry-run create of a ResourceFlavor refused: {REFUSED}",
            id="webhook never reachable",
        ),
        pytest.param(
            {"lagging_endpoints": 10**6},
            "webhook endpoints: not done in time; last: service kueue-system/kueue-webhook-service: ready "
            "endpoints ['10.244.0.5'] are not the ready pods ['10.244.0.5', '10.244.1.7']",
            id="one replica missing from the endpoints",
        ),
        pytest.param(
            {"holder": ""},
            "leader election: not done in time; last: lease kueue-system/c1f6bfd2.kueue.x-k8s.io: "
            "held by nobody, not by a ready pod",
            id="no leader",
        ),
    ],
)
def test_wait_times_out_naming_the_step_and_what_it_saw_last(
    tmp_path: Path, state: dict[str, Any], message: str
) -> None:
    kubectl = FakeKubectl(tmp_path, **state)
    with pytest.raises(installer.DeployError) as err:
        installer.wait_until_available(
            str(kubectl.path), namespace="kueue-system", lease="c1f6bfd2.kueue.x-k8s.io", timeout_s=0.3, interval_s=0.05
        )
    assert str(err.value) == message


def test_deploy_command_fails_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubectl = FakeKubectl(tmp_path, refuse=10**6)
    assert main(["deploy", "--image", "pykueue:dev", "--kubectl", str(kubectl.path), "--timeout", "0.5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "deploy: webhook data path: not done in time; last: dry-run create of a ResourceFlavor "
        "refused: Error from server (InternalError): Internal error occurred: failed calling webhook"
    )
