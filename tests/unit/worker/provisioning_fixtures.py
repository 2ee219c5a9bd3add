"""Objects and a fake cluster for the provisioning-request admission check tests (upstream's wrappers
`MakeWorkload`, `MakePodSet`, `MakeProvisioningRequestConfig`, ... as plain dicts)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.api import constants as c
from webhook.worker import events
from webhook.worker.admissionchecks import provisioning as p
from webhook.worker.reconcilers.provisioning import ProvisioningController
from webhook.worker.store import Store, object_key

NS = "ns"
NOW = "2026-01-01T00:00:00Z"
MANAGED = {c.MANAGED_LABEL: "true"}

Obj = dict[str, Any]


def pod_set(
    name: str,
    count: int,
    *,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    priority_class: str = "",
    topology: str = "",
    affinity_terms: Sequence[Obj] = (),
) -> Obj:
    resources: Obj = {"requests": dict(requests or {})}
    if limits:
        resources["limits"] = dict(limits)
    spec: Obj = {"restartPolicy": "Never", "containers": [{"name": "c", "resources": resources}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if affinity_terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(affinity_terms)}
            }
        }
    out: Obj = {"name": name, "count": count, "template": {"spec": spec}}
    if topology:
        out["topologyRequest"] = {"required": topology}
    return out


def assignment(
    name: str, count: int | None = 1, flavors: Mapping[str, str] | None = None, usage: Mapping[str, str] | None = None
) -> Obj:
    out: Obj = {"name": name, "flavors": dict(flavors or {}), "resourceUsage": dict(usage or {})}
    if count is not None:
        out["count"] = count
    return out


def check(name: str, state: str = c.CHECK_STATE_PENDING, message: str = "", **extra: Any) -> Obj:
    out: Obj = {"name": name, "state": state, "lastTransitionTime": NOW, **extra}
    if message:
        out["message"] = message
    return out


def condition(ctype: str, status: str = "True", reason: str = "ByTest", message: str = "") -> Obj:
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": NOW}


def workload(
    name: str = "wl",
    *,
    pod_sets: Sequence[Obj] | None = None,
    assignments: Sequence[Obj] | None = None,
    reserved: bool = True,
    checks: Sequence[Obj] = (),
    conditions: Sequence[Obj] = (),
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    """`MakeWorkload` (one pod set `main` of one pod), `ReserveQuotaAt` with `assignments` (one `main`
    assignment by default), `AdmissionChecks`, `Condition`s."""
    meta: Obj = {"name": name, "namespace": NS}
    if annotations:
        meta["annotations"] = dict(annotations)
    status: Obj = {}
    if reserved:
        status["admission"] = {
            "clusterQueue": "q1",
            "podSetAssignments": list(assignments) if assignments is not None else [assignment("main")],
        }
        status["conditions"] = [condition(c.WorkloadCondition.QUOTA_RESERVED, reason="AdmittedByTest")]
    status.setdefault("conditions", []).extend(conditions)
    if checks:
        status["admissionChecks"] = [copy.deepcopy(s) for s in checks]
    return {
        "apiVersion": c.V1BETA2,
        "kind": "Workload",
        "metadata": meta,
        "spec": {"podSets": list(pod_sets) if pod_sets is not None else [pod_set("main", 1)]},
        "status": status,
    }


def with_checks(wl: Obj, *checks: Obj) -> Obj:
    out = copy.deepcopy(wl)
    out["status"]["admissionChecks"] = [copy.deepcopy(s) for s in checks]
    return out


def with_limit(wl: Obj, resource: str, value: str) -> Obj:
    """`WorkloadWrapper.Limit`: a limit on the first container of the first pod set."""
    out = copy.deepcopy(wl)
    resources = out["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
    resources.setdefault("limits", {})[resource] = value
    return out


def with_conditions(wl: Obj, *conds: Obj) -> Obj:
    out = copy.deepcopy(wl)
    kept = [x for x in out["status"].get("conditions") or () if x["type"] not in {y["type"] for y in conds}]
    out["status"]["conditions"] = kept + [copy.deepcopy(x) for x in conds]
    return out


def admission_check(
    name: str, controller: str = p.CONTROLLER_NAME, *, params: tuple[str, str, str] | None = None
) -> Obj:
    spec: Obj = {"controllerName": controller}
    if params is not None:
        spec["parameters"] = {"apiGroup": params[0], "kind": params[1], "name": params[2]}
    return {
        "apiVersion": c.V1BETA2,
        "kind": "AdmissionCheck",
        "metadata": {"name": name, "generation": 1},
        "spec": spec,
    }


def config(
    name: str = "config1",
    *,
    provisioning_class: str = "",
    parameters: Mapping[str, str] | None = None,
    retry_limit: int | None = None,
    retry: bool = False,
    managed: Sequence[str] = (),
    node_selector: Sequence[tuple[str, str]] | None = None,
    merge_policy: str = "",
) -> Obj:
    spec: Obj = {}
    if provisioning_class:
        spec["provisioningClassName"] = provisioning_class
    if parameters:
        spec["parameters"] = dict(parameters)
    if retry or retry_limit is not None:
        spec["retryStrategy"] = {
            "backoffLimitCount": 3 if retry_limit is None else retry_limit,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 1800,
        }
    if managed:
        spec["managedResources"] = list(managed)
    if node_selector is not None:
        spec["podSetUpdates"] = {
            "nodeSelector": [{"key": key, "valueFromProvisioningClassDetail": detail} for key, detail in node_selector]
        }
    if merge_policy:
        spec["podSetMergePolicy"] = merge_policy
    return {"apiVersion": c.V1BETA2, "kind": "ProvisioningRequestConfig", "metadata": {"name": name}, "spec": spec}


def flavor(name: str, labels: Mapping[str, str], tolerations: Sequence[Obj] = ()) -> Obj:
    spec: Obj = {"nodeLabels": dict(labels)}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {"apiVersion": c.V1BETA2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def request(
    name: str,
    pod_sets: Sequence[tuple[str, int]] = (),
    *,
    provisioning_class: str = "",
    parameters: Mapping[str, str] | None = None,
    owners: Sequence[str] = ("wl",),
    labels: Mapping[str, str] | None = None,
    conditions: Sequence[Obj] = (),
    details: Mapping[str, str] | None = None,
) -> Obj:
    meta: Obj = {"name": name, "namespace": NS}
    if owners:
        meta["ownerReferences"] = [{"name": owner} for owner in owners]
    if labels:
        meta["labels"] = dict(labels)
    spec: Obj = {
        "provisioningClassName": provisioning_class,
        "podSets": [{"podTemplateRef": {"name": pt}, "count": count} for pt, count in pod_sets],
    }
    if parameters:
        spec["parameters"] = dict(parameters)
    status: Obj = {}
    if conditions:
        status["conditions"] = list(conditions)
    if details:
        status["provisioningClassDetails"] = dict(details)
    return {
        "apiVersion": p.AUTOSCALING_V1,
        "kind": "ProvisioningRequest",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def with_request_conditions(req: Obj, *conds: Obj) -> Obj:
    out = copy.deepcopy(req)
    out["status"]["conditions"] = [copy.deepcopy(x) for x in conds]
    return out


def with_details(req: Obj, details: Mapping[str, str]) -> Obj:
    out = copy.deepcopy(req)
    out["status"]["provisioningClassDetails"] = dict(details)
    return out


def controller_ref(kind: str, name: str) -> Obj:
    api_version = c.V1BETA2 if kind == "Workload" else p.AUTOSCALING_V1
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def template(
    name: str,
    *,
    requests: Mapping[str, str],
    limits: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Obj] = (),
    priority_class: str = "",
    affinity_terms: Sequence[Obj] = (),
    owner: tuple[str, str] | None = None,
) -> Obj:
    """`MakePodTemplate(...).Label(managed).Containers(c).NodeSelector(...).Toleration(...)`."""
    resources: Obj = {"requests": dict(requests)}
    if limits:
        resources["limits"] = dict(limits)
    spec: Obj = {"containers": [{"name": "c", "resources": resources}]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if priority_class:
        spec["priorityClassName"] = priority_class
    if affinity_terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(affinity_terms)}
            }
        }
    meta: Obj = {"name": name, "namespace": NS, "labels": dict(MANAGED)}
    if owner is not None:
        meta["ownerReferences"] = [controller_ref(*owner)]
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta, "template": {"spec": spec}}


def with_owner(tmpl: Obj, kind: str, name: str) -> Obj:
    out = copy.deepcopy(tmpl)
    out["metadata"]["ownerReferences"] = [controller_ref(kind, name)]
    return out


# == normalization (upstream's cmp options) ========================================================


def equate_empty(value: Any, *, drop: frozenset[str] = frozenset()) -> Any:
    """`cmpopts.EquateEmpty` and `IgnoreFields`: empty values and the `drop` keys are left out."""
    if isinstance(value, Mapping):
        out = {key: equate_empty(v, drop=drop) for key, v in value.items() if key not in drop}
        return {key: v for key, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [equate_empty(v, drop=drop) for v in value]
    return value


WORKLOAD_DROP = frozenset({"lastTransitionTime", "requeueAt"})


# == the fake cluster =============================================================================


class Events(events.Recorder):
    def __init__(self) -> None:
        super().__init__(None, instance="t", stop=threading.Event())
        self.sent: list[tuple[str, str, str, str]] = []

    def emit(
        self, obj: Mapping[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        assert controller == p.EVENT_SOURCE
        self.sent.append((object_key(obj), etype, reason, note))


class Kube(FakeKube):
    """FakeKube whose creates of a resource can be made to fail (upstream's create interceptor)."""

    def __init__(self, fail_create: Mapping[str, k.KubeError] | None = None) -> None:
        super().__init__()
        self.fail_create = dict(fail_create or {})
        self.unserved = False  # the ProvisioningRequest API: a LIST of it is NotFound

    def list(self, path: str, *, query: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
        if self.unserved and path.endswith("/provisioningrequests"):
            raise k.NotFound(404, "the server could not find the requested resource")
        return super().list(path, query=query)

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        resource = path.rstrip("/").rsplit("/", 1)[-1]
        if resource in self.fail_create:
            raise self.fail_create[resource]
        return super().create(path, body, timeout=timeout)


def path_of(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    plural = {
        "Workload": "workloads",
        "AdmissionCheck": "admissionchecks",
        "ProvisioningRequestConfig": "provisioningrequestconfigs",
        "ResourceFlavor": "resourceflavors",
        "ProvisioningRequest": "provisioningrequests",
        "PodTemplate": "podtemplates",
    }[obj["kind"]]
    return k.object_path(obj["apiVersion"], plural, meta.get("namespace"), meta["name"])


STORE_KIND = {
    "Workload": "workloads",
    "AdmissionCheck": "admissionchecks",
    "ProvisioningRequestConfig": "provisioningrequestconfigs",
    "ResourceFlavor": "resourceflavors",
    "ProvisioningRequest": "provisioningrequests",
}


class World:
    """The API objects of a case, the caches the informers would have filled, and the controller."""

    def __init__(
        self,
        objects: Sequence[Obj],
        *,
        fail_create: Mapping[str, k.KubeError] | None = None,
        cleanup_on_eviction: bool = True,
        probe_s: float = 30.0,
    ) -> None:
        self.kube = Kube(fail_create)
        self.store = Store()
        self.events = Events()
        for obj in objects:
            self.kube.put(path_of(obj), obj)
            kind = STORE_KIND.get(obj["kind"])
            if kind is not None:
                self.store.put(kind, copy.deepcopy(self.kube.objects[path_of(obj)]))
        self.stop = threading.Event()  # ends the controller's queues once started
        self.controller = ProvisioningController(
            self.kube,
            self.store,
            self.events,
            stop=self.stop,
            cleanup_on_eviction=cleanup_on_eviction,
            probe_s=probe_s,
        )

    def get(self, kind: str, name: str, api_version: str, namespace: str | None = NS) -> Obj | None:
        return self.kube.objects.get(k.object_path(api_version, kind, namespace, name))

    def workload(self, name: str = "wl") -> Obj:
        got = self.get("workloads", name, c.V1BETA2)
        assert got is not None
        return got

    def request(self, name: str) -> Obj | None:
        return self.get("provisioningrequests", name, p.AUTOSCALING_V1)

    def template(self, name: str) -> Obj | None:
        return self.get("podtemplates", name, "v1")
