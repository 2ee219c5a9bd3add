"""Fixtures for the e2e suite: any cluster with us deployed, or the local stack started here.

With `KUBECONFIG_E2E` set, the suite runs against that cluster (kind, or a real one) and
assumes our CRDs, server and webhooks are installed. Without it, the session starts the
local control plane and our server (`e2e/stack.py`) and stops them at the end. If the stack
cannot start, every test errors with the step that broke; nothing is skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import ClusterObjects, cond, gpu_triad, wait_for

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


class Kubectl:
    def __init__(self, kubeconfig: Path, kubectl: str) -> None:
        self.kubeconfig = kubeconfig
        self.binary = kubectl
        self.stack: Any = None  # the local `stack.Stack` when this session started one, else None

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [self.binary, "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def apply(self, obj: dict[str, Any] | str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        text = obj if isinstance(obj, str) else json.dumps(obj)
        return self("apply", "-f", "-", input=text, check=check)

    def get(self, *args: str) -> dict[str, Any]:
        return json.loads(self("get", *args, "-o", "json").stdout)  # type: ignore[no-any-return]


def metric_sample(text: str, metric: str, **labels: str) -> float | None:
    """The value of the first `metric{...}` series in a Prometheus exposition whose labels include `labels`."""
    for line in text.splitlines():
        if not line.startswith(metric + "{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line[len(metric) : line.rindex("}") + 1]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def local_stack(kubectl: Kubectl) -> Any:
    """The local stack behind `kubectl`, for tests marked `local_stack` (they drive our host processes).

    Against an external cluster (`KUBECONFIG_E2E`) such tests are deselected with
    `-m "not local_stack"` (as `make e2e-kind` does); run anyway, they fail here, never skip.
    """
    if kubectl.stack is None:
        pytest.fail(
            "this test drives our processes on the host: it needs the local stack, not KUBECONFIG_E2E "
            "(deselect it with -m 'not local_stack')",
            pytrace=False,
        )
    return kubectl.stack


def server_configured(extra_config: str) -> Any:
    """A module's autouse fixture (assign it to a module-level name): our server restarted with
    `extra_config` merged into its Configuration for the module's tests, and with the default after them."""

    @pytest.fixture(scope="module", autouse=True)
    def configured(kubectl: Kubectl) -> Iterator[None]:
        stack = local_stack(kubectl)
        stack.restart_server(extra_config)
        yield
        stack.restart_server()

    return configured


@pytest.fixture(scope="session")
def kubectl() -> Iterator[Kubectl]:
    given = os.environ.get("KUBECONFIG_E2E")
    if given:
        yield Kubectl(Path(given), os.environ.get("KUBECTL", "kubectl"))
        return
    from stack import Stack

    reuse = os.environ.get("PYKUEUE_E2E_STACK_DIR")  # a stack already up (`python e2e/stack.py up --dir D`)
    if reuse:
        kept = Stack(reuse, teardown_on_exit=False)
        kept.cluster.ports = {k: int(v) for k, v in kept.cluster._read_state().get("ports", {}).items()}
        k = Kubectl(kept.kubeconfig, str(kept.cluster.bin_dir / "kubectl"))
        k.stack = kept
        yield k
        return
    # One directory per session, so concurrent runs (several developers, CI) never share a cluster.
    stack = Stack(HERE.parent / ".run" / f"e2e-{os.getpid()}")
    try:
        stack.up()
    except Exception as exc:
        stack.down()
        pytest.fail(f"the local stack did not start: {exc}", pytrace=False)
    try:
        k = Kubectl(stack.kubeconfig, str(stack.cluster.bin_dir / "kubectl"))
        k.stack = stack
        yield k
    finally:
        stack.down()
        shutil.rmtree(stack.dir, ignore_errors=True)


@pytest.fixture
def namespace(kubectl: Kubectl) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    yield name
    # Pods we gated carry our finalizer; release them so the namespace can go.
    pods = kubectl.get("pods", "-n", name)["items"]
    for pod in pods:
        if pod["metadata"].get("finalizers"):
            kubectl(
                "patch",
                "pod",
                "-n",
                name,
                pod["metadata"]["name"],
                "--type=json",
                "-p",
                '[{"op":"remove","path":"/metadata/finalizers"}]',
                check=False,
            )
    kubectl("delete", "namespace", name, "--wait=false", check=False)


# == fixtures shared by the scenario modules (their objects are built in helpers.py) ===================
@pytest.fixture
def objs(kubectl: Kubectl, namespace: str) -> Iterator[ClusterObjects]:
    o = ClusterObjects(kubectl, namespace)
    yield o
    o.cleanup()


@pytest.fixture
def suffix() -> str:
    return uuid.uuid4().hex[:6]


@pytest.fixture
def quota(kubectl: Kubectl, namespace: str, suffix: str) -> Iterator[str]:
    kubectl("label", "namespace", namespace, f"kueue.x-k8s.io/queue={suffix}")
    for obj in gpu_triad(suffix, namespace):
        kubectl.apply(obj)
    yield f"research-{suffix}"
    kubectl("delete", "jobs", "-n", namespace, "--all", "--wait=false", check=False)
    kubectl("delete", "clusterqueue", f"research-{suffix}", "--wait=false", check=False)
    kubectl("delete", "resourceflavor", f"gpu-nodes-{suffix}", "--wait=false", check=False)


@pytest.fixture
def pod_quota(kubectl: Kubectl, namespace: str) -> Iterator[str]:
    """On-demand flavor (node label + a toleration to inject), 8 CPUs, LocalQueue `user-queue`."""
    sfx = namespace[4:]
    kubectl("label", "namespace", namespace, f"kueue.x-k8s.io/queue={sfx}")
    objs = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": f"on-demand-{sfx}"},
            "spec": {
                "nodeLabels": {"instance-type": "on-demand"},
                "tolerations": [{"key": "e2e-pods", "operator": "Exists", "effect": "NoSchedule"}],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": f"pods-{sfx}"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kueue.x-k8s.io/queue": sfx}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": f"on-demand-{sfx}", "resources": [{"name": "cpu", "nominalQuota": 8}]}],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "user-queue", "namespace": namespace},
            "spec": {"clusterQueue": f"pods-{sfx}"},
        },
    ]
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    wait_for(
        "the ClusterQueue to be active",
        lambda: cond(kubectl.get("clusterqueue", f"pods-{sfx}"), "Active").get("status") == "True",
    )
    yield f"pods-{sfx}"
    kubectl("delete", "pods", "-n", namespace, "--all", "--wait=false", check=False)
    kubectl("delete", "clusterqueue", f"pods-{sfx}", "--wait=false", check=False)
    kubectl("delete", "resourceflavor", f"on-demand-{sfx}", "--wait=false", check=False)
