"""One reconcile of the generic job reconciler against a fake API: the world a job of a kind that is
one object (Kubeflow's, KubeRay's) lives in, and what a user then sees (the job, its Workloads, the
patches sent to it, the events). Shared by those integrations' tests."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.api.integrations import Framework
from webhook.config import Configuration
from webhook.worker import events
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry

NOW = datetime.now(UTC).replace(microsecond=0)
WL_API = "kueue.x-k8s.io/v1beta2"


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Kube(FakeKube):
    """Optimistic locking on merge patches, merge patches of `…/status`, finalizer-aware deletion;
    every patch of the job's group (`/apis/<group>/`) is kept in `job_patches`."""

    def __init__(self, group: str) -> None:
        super().__init__()
        self.group = group
        self.job_patches: list[dict[str, Any]] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]:
        target = path.removesuffix("/status")
        if method == "PATCH" and isinstance(body, Mapping):
            if f"/apis/{self.group}/" in path:
                self.job_patches.append(copy.deepcopy(dict(body)))
            sent = (body.get("metadata") or {}).get("resourceVersion")
            current = self.objects.get(target)
            if sent is not None and current is not None and sent != current["metadata"]["resourceVersion"]:
                raise k.Conflict(409, "the object has been modified")
            if path != target:
                return super().request(method, target, body={"status": body.get("status") or {}})
        if method == "DELETE" and self.objects.get(path, {}).get("metadata", {}).get("finalizers"):
            with self._lock:
                self.objects[path]["metadata"].setdefault("deletionTimestamp", ts(NOW))
                return copy.deepcopy(self.objects[path])
        return super().request(method, path, query=query, body=body, content_type=content_type, timeout=timeout)


class Recorder(events.Recorder):
    def __init__(self, controller: str = "") -> None:
        super().__init__(None, instance="test", stop=threading.Event())
        self.controller = controller
        self.seen: list[tuple[str, str, str, str]] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        assert controller == self.controller
        meta = obj.get("metadata") or {}
        self.seen.append((f"{meta.get('namespace')}/{meta.get('name')}", etype, reason, note))


@dataclass
class Outcome:
    job: dict[str, Any] | None
    workloads: list[dict[str, Any]]
    job_patches: list[dict[str, Any]]
    events: list[tuple[str, str, str, str]]
    error: str | None


def one_reconcile(
    framework: Framework,
    reconciler: type[OwnedJobReconciler],
    job: dict[str, Any],
    *,
    workloads: Sequence[dict[str, Any]] = (),
    classes: Sequence[tuple[str, dict[str, Any]]] = (),
    flavors: Mapping[str, Mapping[str, Any]],
    config: Configuration,
) -> Outcome:
    """`job` of `framework` in namespace `ns` (labels k=v) with `workloads`, priority `classes`
    ((resource, object)) and `flavors` (name → spec), reconciled once by `reconciler`."""
    kube, store = Kube(framework.group), Store()
    recorder = Recorder(f"{framework.name}-kueue-controller")
    rec = reconciler(kube, store, config, recorder, clock=lambda: NOW, requeue_after=lambda *_: None)

    def add(kind: str, path: str, obj: dict[str, Any]) -> None:
        full = f"{path}/{obj['metadata']['name']}"
        kube.put(full, obj)
        store.put(kind, copy.deepcopy(kube.objects[full]))

    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"k": "v"}}}
    add("namespaces", "/api/v1/namespaces", ns)
    for name, spec in flavors.items():
        flavor = {"apiVersion": WL_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": dict(spec)}
        add("resourceflavors", k.object_path(WL_API, "resourceflavors", None), flavor)
    for kind, obj in classes:
        add(kind, k.object_path(obj["apiVersion"], kind, None), obj)
    add(framework.resource, k.object_path(framework.api_version, framework.resource, "ns"), job)
    for wl in workloads:
        add("workloads", k.object_path(WL_API, "workloads", "ns"), wl)
    error = None
    try:
        rec.reconcile(f"ns/{job['metadata']['name']}")
    except Retry as exc:
        error = str(exc)
    return Outcome(
        job=kube.objects.get(k.object_path(framework.api_version, framework.resource, "ns", job["metadata"]["name"])),
        workloads=[o for p, o in sorted(kube.objects.items()) if "/workloads/" in p],
        job_patches=kube.job_patches,
        events=recorder.seen,
        error=error,
    )


def admit(wl: dict[str, Any], *, flavor: str = "default", cq: str = "cq") -> dict[str, Any]:
    wl["status"] = {
        "admission": {
            "clusterQueue": cq,
            "podSetAssignments": [
                {"name": ps["name"], "count": ps["count"], "flavors": {"cpu": flavor}} for ps in wl["spec"]["podSets"]
            ],
        },
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": f"in {cq}"},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": f"in {cq}"},
        ],
    }
    return wl


def evict(wl: dict[str, Any], reason: str = "Preempted", message: str = "Preempted to accommodate a workload") -> None:
    wl["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": reason, "message": message, "lastTransitionTime": ts(NOW)}
    )
