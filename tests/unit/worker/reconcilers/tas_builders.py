"""Upstream's testing wrappers (`pkg/util/testing/v1beta2`, `pkg/util/testingjobs/{pod,node}`) as
builders of plain API dicts, named as upstream's in snake case, for the ported TAS controller tests."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from webhook.core.tas import DomainAssignment, TopologyAssignment, to_v1beta2

NOW = datetime.now(UTC).replace(microsecond=0)
MAIN = "main"
WL_ANN = "kueue.x-k8s.io/workload"
PODSET = "kueue.x-k8s.io/podset"
WL_FIN = "kueue.x-k8s.io/resource-in-use"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
JOB_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOBSET_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
KF_REPLICA_INDEX = "training.kubeflow.org/replica-index"
KF_JOB_ROLE = "training.kubeflow.org/job-role"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
OFFSET = "kueue.x-k8s.io/pod-index-offset"
POD_GROUP_INDEX = "kueue.x-k8s.io/pod-group-pod-index"
POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
HOSTNAME = "kubernetes.io/hostname"
BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
LEVELS = [BLOCK, RACK]


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- builders (upstream's testing wrappers, as plain dicts, named as upstream's in snake case) ---------


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _api(value: Any) -> Any:
    if isinstance(value, datetime):
        return ts(value)
    if isinstance(value, list):
        return [_api(v) for v in value]
    return value


def S(**kw: Any) -> dict[str, Any]:  # a Go struct literal, as its API (camelCase) form
    return {_camel(k): _api(v) for k, v in kw.items()}


class Fixture(dict[str, Any]):
    """An API object that can be copied as upstream's fixtures are (`DeepCopy`)."""

    def deep_copy(self) -> Fixture:
        return Fixture(copy.deepcopy(dict(self)))


class _Builder:
    def __init__(self, obj: dict[str, Any]) -> None:
        self._obj = obj

    def obj(self) -> dict[str, Any]:
        return self._obj


class make_pod(_Builder):
    def __init__(self, name: str, ns: str) -> None:
        super().__init__(
            {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "annotations": {}, "labels": {}}, "spec": {}}
        )

    def node_name(self, name: str) -> make_pod:
        self._obj["spec"]["nodeName"] = name
        return self

    def annotation(self, key: str, value: str) -> make_pod:
        self._obj["metadata"]["annotations"][key] = value
        return self

    def label(self, key: str, value: str) -> make_pod:
        self._obj["metadata"]["labels"][key] = value
        return self

    def node_selector(self, key: str, value: str) -> make_pod:
        self._obj["spec"].setdefault("nodeSelector", {})[key] = value
        return self

    def gate(self, *names: str) -> make_pod:
        self._obj["spec"].setdefault("schedulingGates", []).extend({"name": n} for n in names)
        return self

    def topology_scheduling_gate(self) -> make_pod:
        return self.gate(TOPOLOGY_GATE)

    def uid(self, uid: str) -> make_pod:
        self._obj["metadata"]["uid"] = uid
        return self

    def status_phase(self, phase: str) -> make_pod:
        self._obj.setdefault("status", {})["phase"] = phase
        return self

    def group_name_label(self, name: str) -> make_pod:
        return self.label(POD_GROUP_NAME, name)

    def group_total_count(self, n: str) -> make_pod:
        return self.annotation(POD_GROUP_TOTAL, n)


class make_pod_set(_Builder):
    def __init__(self, name: str, count: int) -> None:
        super().__init__({"name": name, "count": count, "template": {"spec": {"containers": [{"name": "c"}]}}})

    def _req(self) -> dict[str, Any]:
        req: dict[str, Any] = self._obj.setdefault("topologyRequest", {})
        return req

    def request(self, resource: str, qty: str) -> make_pod_set:
        ctr = self._obj["template"]["spec"]["containers"][0]
        ctr.setdefault("resources", {}).setdefault("requests", {})[resource] = qty
        return self

    def pod_index_label(self, label: str) -> make_pod_set:
        self._req()["podIndexLabel"] = label
        return self

    def sub_group_index_label(self, label: str) -> make_pod_set:
        self._req()["subGroupIndexLabel"] = label
        return self

    def sub_group_count(self, n: int) -> make_pod_set:
        self._req()["subGroupCount"] = n
        return self

    def toleration(self, tol: dict[str, Any]) -> make_pod_set:
        self._obj["template"]["spec"].setdefault("tolerations", []).append(tol)
        return self

    def pod_set_group(self, name: str) -> make_pod_set:
        self._req()["podSetGroupName"] = name
        return self


class make_pod_set_assignment(_Builder):
    def __init__(self, name: str) -> None:
        super().__init__({"name": name, "flavors": {}, "resourceUsage": {}, "count": 1})

    def assignment(self, resource: str, flavor: str, qty: str) -> make_pod_set_assignment:
        self._obj["flavors"][resource] = flavor
        self._obj["resourceUsage"][resource] = qty
        return self

    def count(self, n: int) -> make_pod_set_assignment:
        self._obj["count"] = n
        return self

    def topology_assignment(self, ta: dict[str, Any]) -> make_pod_set_assignment:
        self._obj["topologyAssignment"] = ta
        return self


class make_admission(_Builder):
    def __init__(self, cq: str) -> None:
        super().__init__({"clusterQueue": cq, "podSetAssignments": [make_pod_set_assignment(MAIN).obj()]})

    def pod_sets(self, *psas: dict[str, Any]) -> make_admission:
        self._obj["podSetAssignments"] = list(psas)
        return self


class make_topology_domain_assignment(_Builder):
    def __init__(self, values: Sequence[str], count: int) -> None:
        super().__init__({"values": list(values), "count": count})


class make_topology_assignment:
    def __init__(self, levels: Sequence[str]) -> None:
        self._levels = list(levels)
        self._domains: list[dict[str, Any]] = []

    def domains(self, *domains: dict[str, Any]) -> make_topology_assignment:
        self._domains.extend(domains)
        return self

    def obj(self) -> dict[str, Any]:
        return v1_beta2_from(S(levels=self._levels, domains=self._domains))


def v1_beta2_from(ta: Mapping[str, Any]) -> dict[str, Any]:
    domains = tuple(DomainAssignment(tuple(d["values"]), d["count"]) for d in ta["domains"])
    return to_v1beta2(TopologyAssignment(tuple(ta["levels"]), domains))


def _condition(ctype: str, status: str, t: datetime, reason: str, message: str) -> dict[str, Any]:
    return {"type": ctype, "status": status, "lastTransitionTime": ts(t), "reason": reason, "message": message}


class make_workload(_Builder):
    def __init__(self, name: str, ns: str) -> None:
        super().__init__(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"podSets": []},
                "status": {},
            }
        )

    def finalizers(self, *names: str) -> make_workload:
        self._obj["metadata"]["finalizers"] = list(names)
        return self

    def pod_sets(self, *pod_sets: dict[str, Any]) -> make_workload:
        self._obj["spec"]["podSets"] = list(pod_sets)
        return self

    def reserve_quota_at(self, admission: dict[str, Any], t: datetime) -> make_workload:
        self._obj["status"]["admission"] = admission
        message = f"Admitted by ClusterQueue {admission['clusterQueue']}"
        self._obj["status"]["conditions"] = [_condition("QuotaReserved", "True", t, "AdmittedByTest", message)]
        return self

    def admitted_at(self, admitted: bool, t: datetime) -> make_workload:
        message = f"Admitted by ClusterQueue {self._obj['status']['admission']['clusterQueue']}"
        conds = [cond for cond in self._obj["status"]["conditions"] if cond["type"] != "Admitted"]
        conds.append(_condition("Admitted", "True" if admitted else "False", t, "ByTest", message))
        self._obj["status"]["conditions"] = conds
        return self

    def admission_checks(self, *checks: dict[str, Any]) -> make_workload:
        self._obj["status"].setdefault("admissionChecks", []).extend(checks)
        return self

    def unhealthy_nodes(self, *names: str) -> make_workload:
        self._obj["status"].setdefault("unhealthyNodes", []).extend({"name": n} for n in names)
        return self


class make_node(_Builder):
    def __init__(self, name: str) -> None:
        super().__init__({"kind": "Node", "metadata": {"name": name}, "spec": {}, "status": {}})

    def clone(self) -> make_node:
        twin = make_node("")
        twin._obj = copy.deepcopy(self._obj)
        return twin

    def name(self, name: str) -> make_node:
        self._obj["metadata"]["name"] = name
        return self

    def label(self, key: str, value: str) -> make_node:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def status_conditions(self, *conds: dict[str, Any]) -> make_node:
        self._obj["status"]["conditions"] = list(conds)
        return self

    def taints(self, *taints: dict[str, Any]) -> make_node:
        self._obj["spec"]["taints"] = list(taints)
        return self


class make_resource_flavor(_Builder):
    def __init__(self, name: str) -> None:
        super().__init__({"kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}})

    def toleration(self, tol: dict[str, Any]) -> make_resource_flavor:
        self._obj["spec"].setdefault("tolerations", []).append(tol)
        return self
