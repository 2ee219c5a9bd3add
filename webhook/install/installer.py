"""`make deploy` / `make undeploy`: the kustomize build applied with kubectl, then a wait for a usable install.

A Deployment that is Available is not yet an install that takes creates: kube-proxy may not have
programmed the webhook Service, and with `failurePolicy: Fail` the API server then refuses every
create a webhook covers (`failed calling webhook "mresourceflavor.kb.io" ... connect: connection
refused`). So `deploy` waits as upstream's e2e `WaitForKueueAvailability` does (test/util/e2e.go,
kueue v0.19.2), each step retried until one shared deadline:

1. the Deployment's rollout is complete (`kubectl rollout status`);
2. the webhook Service's ready endpoints are exactly the Deployment's ready pods;
3. a server-side dry-run create of a ResourceFlavor passes through the webhooks (the data path);
4. a pod of the Deployment holds the leader Lease (skipped when leader election is off).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from webhook import config as cfg
from webhook.install import objects as o

__all__ = ["AVAILABILITY_TIMEOUT_S", "POLL_INTERVAL_S", "DeployError", "deploy", "undeploy", "wait_until_available"]

ROOT = Path(__file__).resolve().parents[2]
AVAILABILITY_TIMEOUT_S = 180.0  # rollout and webhook path together (upstream: LongTimeout per step, 90 s)
POLL_INTERVAL_S = 0.5
# A name the API server completes, so concurrent probes never collide (as upstream's "webhook-probe-").
_PROBE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": {"generateName": "webhook-probe-"},
}


_T = TypeVar("_T")


class DeployError(Exception):
    """A step of the install that did not finish; the message names the step and what it saw last."""


def _run(kubectl: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([kubectl, *args], input=stdin, capture_output=True, text=True, check=False)


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit status {proc.returncode}"


def _get(kubectl: str, *args: str) -> dict[str, Any]:
    """`kubectl get ... -o json`; a failure is a reason to retry, raised as DeployError."""
    proc = _run(kubectl, "get", *args, "-o", "json")
    if proc.returncode != 0:
        raise DeployError(f"kubectl get {' '.join(args)}: {_last_line(proc)}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _ready_pods(kubectl: str, namespace: str) -> dict[str, str]:
    """Pod IP → name of the Deployment's ready, not deleting pods, once all desired replicas are."""
    dep = _get(kubectl, "-n", namespace, "deployment", o.DEPLOYMENT)
    desired = int(dep["spec"].get("replicas", 1))
    available = int(dep.get("status", {}).get("availableReplicas") or 0)
    if available != desired:
        raise DeployError(f"deployment {namespace}/{o.DEPLOYMENT}: {available} of {desired} replicas available")
    selector = ",".join(f"{k}={v}" for k, v in sorted(dep["spec"]["selector"]["matchLabels"].items()))
    pods = _get(kubectl, "-n", namespace, "pods", "-l", selector)["items"]
    ready = {
        p["status"]["podIP"]: p["metadata"]["name"]
        for p in pods
        if _is_ready(p) and not p["metadata"].get("deletionTimestamp") and p.get("status", {}).get("podIP")
    }
    if len(ready) != desired:
        raise DeployError(f"deployment {namespace}/{o.DEPLOYMENT}: {len(ready)} of {desired} pods ready")
    return ready


def _endpoints_match(kubectl: str, namespace: str) -> dict[str, str]:
    """Step 2: the ready pods, once the webhook Service's ready endpoints are exactly them."""
    ready = _ready_pods(kubectl, namespace)
    slices = _get(kubectl, "-n", namespace, "endpointslices", "-l", f"kubernetes.io/service-name={o.WEBHOOK_SERVICE}")[
        "items"
    ]
    addresses = {
        a
        for s in slices
        for ep in s.get("endpoints") or []
        if (ep.get("conditions") or {}).get("ready", True)
        for a in ep.get("addresses") or []
    }
    if addresses != set(ready):
        raise DeployError(
            f"service {namespace}/{o.WEBHOOK_SERVICE}: ready endpoints {sorted(addresses)} "
            f"are not the ready pods {sorted(ready)}"
        )
    return ready


def _probe_admitted(kubectl: str) -> None:
    """Step 3: a dry-run create goes through the mutating and validating webhooks; nothing is stored."""
    proc = _run(kubectl, "create", "--dry-run=server", "-o", "name", "-f", "-", stdin=json.dumps(_PROBE))
    if proc.returncode != 0:
        raise DeployError(f"dry-run create of a ResourceFlavor refused: {_last_line(proc)}")


def _lease_held(kubectl: str, namespace: str, lease: str, pods: Iterable[str]) -> None:
    """Step 4: the holder identity is `<hostname>_<pid>_<random>`, and a pod's hostname is its name."""
    holder = (_get(kubectl, "-n", namespace, "lease", lease).get("spec") or {}).get("holderIdentity") or ""
    if holder.split("_", 1)[0] not in set(pods):
        raise DeployError(f"lease {namespace}/{lease}: held by {holder or 'nobody'}, not by a ready pod")


def _retry(step: str, check: Callable[[], _T], *, deadline: float, interval_s: float) -> _T:
    """`check()` until it returns; DeployError from it means "not yet", the last one ends the wait."""
    while True:
        try:
            return check()
        except DeployError as exc:
            if time.monotonic() >= deadline:
                raise DeployError(f"{step}: not done in time; last: {exc}") from None
        time.sleep(interval_s)


def wait_until_available(
    kubectl: str,
    *,
    namespace: str,
    lease: str | None,
    timeout_s: float = AVAILABILITY_TIMEOUT_S,
    interval_s: float = POLL_INTERVAL_S,
) -> None:
    """Steps 1-4 of the module docstring, all within `timeout_s`; raises DeployError naming the step."""
    deadline = time.monotonic() + timeout_s
    rollout = _run(
        kubectl,
        "-n",
        namespace,
        "rollout",
        "status",
        f"deployment/{o.DEPLOYMENT}",
        f"--timeout={max(1, int(timeout_s))}s",
    )
    if rollout.returncode != 0:
        raise DeployError(f"rollout of deployment {namespace}/{o.DEPLOYMENT}: {_last_line(rollout)}")
    pods = _retry(
        "webhook endpoints", lambda: _endpoints_match(kubectl, namespace), deadline=deadline, interval_s=interval_s
    )
    _retry("webhook data path", lambda: _probe_admitted(kubectl), deadline=deadline, interval_s=interval_s)
    if lease is not None:
        _retry(
            "leader election",
            lambda: _lease_held(kubectl, namespace, lease, pods.values()),
            deadline=deadline,
            interval_s=interval_s,
        )


def _build(kubectl: str, overlay: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [kubectl, "kustomize", str(ROOT / "manifests" / overlay)], check=True, capture_output=True, text=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _set_image(items: Sequence[dict[str, Any]], image: str, pull_policy: str | None) -> None:
    for item in items:
        if item["kind"] == "Deployment" and item["metadata"]["name"] == o.DEPLOYMENT:
            container = item["spec"]["template"]["spec"]["containers"][0]
            container["image"] = image
            if pull_policy:
                container["imagePullPolicy"] = pull_policy


def _lease_name(items: Sequence[dict[str, Any]]) -> str | None:
    """The Lease the shipped Configuration elects on; None when it turns leader election off."""
    cm = next(i for i in items if i["kind"] == "ConfigMap" and i["metadata"]["name"] == o.CONFIG_MAP)
    election = cfg.parse(cm["data"][o.CONFIG_FILE]).leader_election
    return election.resource_name if election.leader_elect else None


def deploy(
    image: str,
    *,
    kubectl: str = "kubectl",
    overlay: str = "default",
    pull_policy: str | None = None,
    wait: bool = True,
    timeout_s: float = AVAILABILITY_TIMEOUT_S,
) -> None:
    """Apply the kustomize build (server-side): CRDs first, then the rest; then `wait_until_available`."""
    items = _build(kubectl, overlay)
    _set_image(items, image, pull_policy)

    def apply(docs: list[dict[str, Any]]) -> None:
        subprocess.run(
            [kubectl, "apply", "--server-side", "--field-manager=pykueue-install", "--force-conflicts", "-f", "-"],
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}),
            text=True,
            check=True,
        )

    crds = [i for i in items if i["kind"] == "CustomResourceDefinition"]
    apply(crds)
    subprocess.run(
        [
            kubectl,
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            *[f"crd/{c['metadata']['name']}" for c in crds],
        ],
        check=True,
    )
    apply([i for i in items if i["kind"] != "CustomResourceDefinition"])
    if wait:
        namespace = next(i["metadata"]["name"] for i in items if i["kind"] == "Namespace")
        wait_until_available(kubectl, namespace=namespace, lease=_lease_name(items), timeout_s=timeout_s)


def undeploy(*, kubectl: str = "kubectl", overlay: str = "default") -> None:
    """Delete what `deploy` applied: webhooks first (so nothing calls a vanished server), CRDs last."""
    items = _build(kubectl, overlay)
    order = {"MutatingWebhookConfiguration": 0, "ValidatingWebhookConfiguration": 0, "CustomResourceDefinition": 2}
    for rank in (0, 1, 2):
        docs = [i for i in items if order.get(i["kind"], 1) == rank]
        subprocess.run(
            [kubectl, "delete", "--ignore-not-found", "--wait=false", "-f", "-"],
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}),
            text=True,
            check=True,
        )
