"""A manager and two worker clusters in one process for the MultiKueue controller tests: the
manager's API and each worker's API are `FakeKube`s, the workers' able to watch (`WatchableKube`),
and the controller builds a worker's client by looking its kubeconfig's server up here instead of
calling `Kube.from_kubeconfig`."""

from __future__ import annotations

import base64
import copy
import functools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.api import constants as c
from webhook.api import multikueue as mk
from webhook.worker import events
from webhook.worker.multikueue.remote import RemoteClient
from webhook.worker.reconcilers.multikueue import MultiKueueController, Settings, adapters_for
from webhook.worker.store import Store, object_key

NS = "ns"
KUEUE_NS = "kueue-system"
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
Obj = dict[str, Any]
WORKERS = ("worker1", "worker2")
JOBS = k.object_path("batch/v1", "jobs", NS)
PODS = k.object_path("v1", "pods", NS)
STATEFULSETS = k.object_path("apps/v1", "statefulsets", NS)
JOBSETS = k.object_path("jobset.x-k8s.io/v1alpha2", "jobsets", NS)
WORKLOADS = k.object_path(c.V1BETA2, "workloads", NS)


def _collection(path: str) -> tuple[str, str]:
    """(the cluster-wide collection path, the namespace) of an object's path."""
    parent = path.rsplit("/", 1)[0]
    parts = parent.split("/")
    if "namespaces" in parts[:-1]:
        at = parts.index("namespaces")
        return "/".join(parts[:at] + parts[at + 2 :]), parts[at + 1]
    return parent, ""


def _selected(obj: Mapping[str, Any], query: Mapping[str, Any] | None) -> bool:
    selector = str((query or {}).get("labelSelector") or "")
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, _, value in (term.partition("=") for term in selector.split(",")))


class WatchableKube(FakeKube):
    """FakeKube whose lists honour a `key=value` label selector and cluster-wide paths, and whose
    watches deliver every write after the list's resourceVersion until `close()`. While `down`,
    every list, watch and request fails as an unreachable server does."""

    def __init__(self) -> None:
        self.log: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, type, path, object)
        self.changed = threading.Condition()
        self.closed = False
        self.down = False
        super().__init__()

    def put(self, path: str, obj: dict[str, Any]) -> None:
        existed = path in self.objects
        super().put(path, obj)
        self._record("MODIFIED" if existed else "ADDED", path, self.objects[path])

    def _record(self, etype: str, path: str, obj: dict[str, Any]) -> None:
        with self.changed:
            self.log.append((int(obj["metadata"]["resourceVersion"]), etype, path, copy.deepcopy(obj)))
            self.changed.notify_all()

    def _check_up(self, what: str) -> None:
        if self.down:
            raise k.ServerError(0, f"{what}: connection refused")

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        self._check_up(f"{method} {path}")
        answer = super().request(method, path, **kwargs)
        if method == "DELETE":
            self._rv += 1
            gone = copy.deepcopy(answer)
            gone["metadata"]["resourceVersion"] = str(self._rv)
            self._record("DELETED", path, gone)
        return answer

    def list(self, path: str, *, query: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
        self._check_up(f"list {path}")
        with self._lock:
            self.calls.append(("LIST", path))
            items = [
                copy.deepcopy(obj)
                for p, obj in self.objects.items()
                if (p.rsplit("/", 1)[0] == path or _collection(p)[0] == path) and _selected(obj, query)
            ]
            return items, str(self._rv)

    def watch(
        self, path: str, resource_version: str, *, timeout_seconds: int = 300, query: Mapping[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        self._check_up(f"watch {path}")
        with self._lock:
            self.calls.append(("WATCH", path))
        seen = int(resource_version or 0)
        deadline = time.monotonic() + timeout_seconds
        while True:
            with self.changed:
                while not self.closed and not self.down and not any(rv > seen for rv, *_ in self.log):
                    if not self.changed.wait(max(0.0, deadline - time.monotonic())):
                        return
                if self.closed:
                    return
                if self.down:
                    raise k.ServerError(0, f"watch {path}: connection reset by peer")
                fresh = [entry for entry in self.log if entry[0] > seen]
            for rv, etype, obj_path, obj in fresh:
                seen = max(seen, rv)
                if _collection(obj_path)[0] == path and _selected(obj, query):
                    yield {"type": etype, "object": copy.deepcopy(obj)}

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def go_down(self) -> None:
        with self.changed:
            self.down = True
            self.changed.notify_all()

    # -- what a test reads and writes -------------------------------------------------------------
    def workload(self, name: str = "wl") -> Obj | None:
        return self.objects.get(f"{WORKLOADS}/{name}")

    def pod(self, name: str = "pod") -> Obj | None:
        return self.objects.get(f"{PODS}/{name}")

    def job(self, name: str = "job") -> Obj | None:
        return self.objects.get(f"{JOBS}/{name}")


def kubeconfig(server: str, token: str = "t0ken") -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "worker",
            "clusters": [{"name": "worker", "cluster": {"server": server}}],
            "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": "mk"}}],
            "users": [{"name": "mk", "user": {"token": token}}],
        }
    )


def secret(name: str, server: str) -> Obj:
    data = base64.b64encode(kubeconfig(server).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": KUEUE_NS},
        "data": {"kubeconfig": data},
    }


def cluster(name: str, *, secret_name: str | None = None, generation: int = 1) -> Obj:
    location = {"locationType": "Secret", "location": secret_name or f"{name}-secret"}
    return {
        "apiVersion": c.V1BETA2,
        "kind": "MultiKueueCluster",
        "metadata": {"name": name, "generation": generation},
        "spec": {"clusterSource": {"kubeConfig": location}},
    }


def config(name: str, clusters: Sequence[str]) -> Obj:
    return {
        "apiVersion": c.V1BETA2,
        "kind": "MultiKueueConfig",
        "metadata": {"name": name},
        "spec": {"clusters": list(clusters)},
    }


def admission_check(name: str = "ac1", config_name: str = "config1") -> Obj:
    return {
        "apiVersion": c.V1BETA2,
        "kind": "AdmissionCheck",
        "metadata": {"name": name, "generation": 1},
        "spec": {
            "controllerName": mk.CONTROLLER_NAME,
            "parameters": {"apiGroup": c.GROUP, "kind": "MultiKueueConfig", "name": config_name},
        },
    }


def job(name: str = "job", *, suspend: bool = True) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": "job-uid",
            "labels": {c.QUEUE_LABEL: "lq"},
        },
        "spec": {
            "suspend": suspend,
            "managedBy": mk.CONTROLLER_NAME,
            "parallelism": 1,
            "completions": 1,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}},
            "template": {
                "metadata": {
                    "labels": {"batch.kubernetes.io/controller-uid": "job-uid", "batch.kubernetes.io/job-name": name}
                },
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
        },
        "status": {},
    }


def pod(name: str = "pod", *, group: str | None = None) -> Obj:
    """A queued pod as the manager holds it after admission: still gated, `PodScheduled=False/SchedulingGated`."""
    labels = {c.QUEUE_LABEL: "lq"}
    if group is not None:
        labels[c.POD_GROUP_NAME] = group
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"{name}-uid", "labels": labels},
        "spec": {
            "schedulingGates": [{"name": c.ADMISSION_GATE}],
            "containers": [{"name": "c", "image": "busybox"}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": "gated"}
            ],
        },
    }


def pod_workload(*pod_names: str) -> Obj:
    """The Workload of a pod (one name) or of a pod group (every member an owner), the check Pending."""
    wl = workload()
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": f"{name}-uid"} for name in pod_names
    ]
    return wl


def statefulset(name: str = "web") -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS, "uid": "sts-uid", "labels": {c.QUEUE_LABEL: "lq"}},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"replicas": 3, "readyReplicas": 0},
    }


def statefulset_workload(name: str = "web") -> Obj:
    """A StatefulSet's prebuilt group Workload: controlled by the set, named by the job-owner annotations."""
    wl = workload()
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "uid": "sts-uid", "controller": True}
    ]
    wl["metadata"]["annotations"] = {
        c.JOB_OWNER_GVK_ANNOTATION: "apps/v1, Kind=StatefulSet",
        c.JOB_OWNER_NAME_ANNOTATION: name,
    }
    return wl


def condition(ctype: str, reason: str, message: str = "", status: str = "True", at: datetime = NOW) -> Obj:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def workload(name: str = "wl", *, check_state: str = c.CHECK_STATE_PENDING) -> Obj:
    """A Job's Workload holding quota, its MultiKueue check `ac1` in `check_state`."""
    return {
        "apiVersion": c.V1BETA2,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": "wl-uid",
            "generation": 1,
            "labels": {c.JOB_UID_LABEL: "job-uid"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "job-uid", "controller": True}
            ],
        },
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}],
        },
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1, "flavors": {}}]},
            "conditions": [condition(c.WorkloadCondition.QUOTA_RESERVED, "QuotaReserved")],
            "admissionChecks": [
                {"name": "ac1", "state": check_state, "message": "", "lastTransitionTime": "2026-01-01T11:00:00Z"}
            ],
        },
    }


class Events(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.sent: list[tuple[str, str, str, str, str]] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        self.sent.append((object_key(obj), etype, reason, note, controller))


_PLURAL = {
    "MultiKueueCluster": "multikueueclusters",
    "MultiKueueConfig": "multikueueconfigs",
    "AdmissionCheck": "admissionchecks",
    "Secret": "secrets",
    "Workload": "workloads",
    "Job": "jobs",
    "Pod": "pods",
    "StatefulSet": "statefulsets",
    "ClusterQueue": "clusterqueues",
    "JobSet": "jobsets",
    "LocalQueue": "localqueues",
}


def path_of(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return k.object_path(obj["apiVersion"], _PLURAL[obj["kind"]], meta.get("namespace"), meta["name"])


def _version(obj: Obj | None) -> str | None:
    return None if obj is None else obj["metadata"].get("resourceVersion")


def _caught_up(worker: WatchableKube, client: RemoteClient, paths: set[str]) -> bool:
    return all(_version(worker.objects.get(path)) == _version(client.get(path)) for path in paths)


class World:
    """The manager (its API, the store its informers fill, the controller) and two workers,
    reachable at https://<name>.example:6443."""

    def __init__(
        self,
        *,
        worker_lost_timeout: timedelta = timedelta(minutes=15),
        gc_interval: timedelta = timedelta(0),
        quota_automation: bool = False,
        dispatcher: str = mk.DISPATCHER_ALL_AT_ONCE,
        step_size: int = mk.DEFAULT_STEP_SIZE,
    ) -> None:
        self.manager = FakeKube()
        self.store = Store()
        self.events = Events()
        self.workers = {name: WatchableKube() for name in WORKERS}
        self.built: list[str] = []
        self.stop = threading.Event()
        self.controller = MultiKueueController(
            self.manager,  # type: ignore[arg-type]
            self.store,
            self.events,
            settings=Settings(
                namespace=KUEUE_NS,
                worker_lost_timeout=worker_lost_timeout,
                gc_interval=gc_interval,
                quota_automation=quota_automation,
                dispatcher=dispatcher,
                step_size=step_size,
            ),
            adapters=adapters_for(("batch/job", "pod", "statefulset", "jobset.x-k8s.io/jobset")),
            remote_kube=self._build,
            stop=self.stop,
            now=lambda: NOW,
        )

    def _build(self, doc: Mapping[str, Any]) -> k.Kube:
        server = doc["clusters"][0]["cluster"]["server"]
        name = server.removeprefix("https://").split(".")[0]
        self.built.append(name)
        worker = self.workers[name]
        worker.closed = False
        return worker  # type: ignore[return-value]

    def add(self, *objs: Obj) -> None:
        """Create on the manager, and deliver the informer's event to the store and the controller."""
        for obj in objs:
            self.manager.put(path_of(obj), obj)
            self.sync(
                obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"), api_version=obj["apiVersion"]
            )

    def sync(self, kind: str, name: str, namespace: str | None = None, *, api_version: str = c.V1BETA2) -> Obj | None:
        """The manager's current copy into the store (as its informer would), the event to the controller."""
        plural = _PLURAL[kind]
        path = k.object_path(api_version, plural, namespace, name)
        obj = self.manager.objects.get(path)
        key = f"{namespace}/{name}" if namespace else name
        if obj is None:
            last = self.store.delete(plural, key)
            if last is not None:
                self.controller.on_event(plural, "DELETED", last)
            return None
        self.store.put(plural, copy.deepcopy(obj))
        self.controller.on_event(plural, "ADDED", copy.deepcopy(obj))
        return obj

    def get(self, kind: str, name: str, namespace: str | None = None, *, api_version: str = c.V1BETA2) -> Obj | None:
        return self.manager.objects.get(k.object_path(api_version, _PLURAL[kind], namespace, name))

    def settle(self) -> None:
        """Wait until each connected worker's watches have caught up with it: every object of our
        origin it ever held reads from the client as the worker holds it now (or absent)."""
        ours = {"labelSelector": f"{mk.ORIGIN_LABEL}={self.controller.settings.origin}"}
        for name, remote in list(self.controller.remotes.items()):
            client = remote.client
            if client is None:
                continue
            worker = self.workers[name]
            with worker.changed:
                paths = {path for _, _, path, obj in worker.log if _selected(obj, ours)}
            assert wait_for(functools.partial(_caught_up, worker, client, paths), timeout=5), f"{name}'s watches lag"

    def reconcile(self, key: str) -> None:
        """The controller's reconcile of Workload `key` once the workers' watches have caught up,
        as its queue runs it after a remote event."""
        self.settle()
        self.controller.reconcile_workload(key)

    def connect(self, *names: str) -> None:
        """MultiKueueClusters with valid Secrets, reconciled: connected."""
        for name in names:
            self.add(secret(f"{name}-secret", f"https://{name}.example:6443"), cluster(name))
            self.controller.reconcile_cluster(name)

    def close(self) -> None:
        self.stop.set()
        for remote in list(self.controller.remotes.values()):
            remote.stop()


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
