"""Chained fixture builders returning plain v1beta2 JSON dicts (like upstream's wrappers.go): the
ResourceFlavors, queues, Workloads and cluster objects every test folder builds its scenarios from."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def ts(seconds: float = 0) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class FlavorBuilder:
    def __init__(self, name: str) -> None:
        self._o: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {},
        }

    def label(self, k: str, v: str) -> FlavorBuilder:
        self._o["spec"].setdefault("nodeLabels", {})[k] = v
        return self

    def taint(self, k: str, v: str, effect: str = "NoSchedule") -> FlavorBuilder:
        self._o["spec"].setdefault("nodeTaints", []).append({"key": k, "value": v, "effect": effect})
        return self

    def toleration(self, k: str, v: str, effect: str = "NoSchedule") -> FlavorBuilder:
        self._o["spec"].setdefault("tolerations", []).append(
            {"key": k, "operator": "Equal", "value": v, "effect": effect}
        )
        return self

    def topology(self, name: str) -> FlavorBuilder:
        self._o["spec"]["topologyName"] = name
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._o)


def make_flavor(name: str) -> FlavorBuilder:
    return FlavorBuilder(name)


def make_topology(name: str, *levels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


class QueueBuilder:
    """ClusterQueue or Cohort."""

    def __init__(self, kind: str, name: str) -> None:
        spec: dict[str, Any] = {"resourceGroups": []}
        if kind == "ClusterQueue":
            spec["namespaceSelector"] = {}
        self._o: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": kind,
            "metadata": {"name": name, "generation": 1},
            "spec": spec,
        }

    def cohort(self, name: str) -> QueueBuilder:
        self._o["spec"]["cohortName" if self._o["kind"] == "ClusterQueue" else "parentName"] = name
        return self

    parent = cohort

    def group(self, *flavors: dict[str, Any]) -> QueueBuilder:
        """A resource group: each flavor is `fq("name", cpu=("10", None, None), ...)`."""
        covered: list[str] = []
        for f in flavors:
            for r in f["resources"]:
                if r["name"] not in covered:
                    covered.append(r["name"])
        self._o["spec"]["resourceGroups"].append({"coveredResources": covered, "flavors": list(flavors)})
        return self

    def preemption(
        self, within: str = "Never", reclaim: str = "Never", borrow: str = "Never", threshold: int | None = None
    ) -> QueueBuilder:
        p: dict[str, Any] = {
            "withinClusterQueue": within,
            "reclaimWithinCohort": reclaim,
            "borrowWithinCohort": {"policy": borrow},
        }
        if threshold is not None:
            p["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
        self._o["spec"]["preemption"] = p
        return self

    def fungibility(
        self,
        when_can_borrow: str = "MayStopSearch",
        when_can_preempt: str = "TryNextFlavor",
        preference: str | None = None,
    ) -> QueueBuilder:
        ff: dict[str, Any] = {"whenCanBorrow": when_can_borrow, "whenCanPreempt": when_can_preempt}
        if preference:
            ff["preference"] = preference
        self._o["spec"]["flavorFungibility"] = ff
        return self

    def strategy(self, s: str) -> QueueBuilder:
        self._o["spec"]["queueingStrategy"] = s
        return self

    def weight(self, w: str) -> QueueBuilder:
        self._o["spec"]["fairSharing"] = {"weight": w}
        return self

    def concurrent_admission(
        self, mode: str = "TryPreferredFlavors", last_acceptable: str | None = None
    ) -> QueueBuilder:
        """spec.concurrentAdmissionPolicy (upstream `ConcurrentAdmissionPolicy`, `LastAcceptableFlavorName`)."""
        migration: dict[str, Any] = {"mode": mode}
        if last_acceptable is not None:
            migration["constraints"] = {"lastAcceptableFlavorName": last_acceptable}
        self._o["spec"]["concurrentAdmissionPolicy"] = {"migration": migration}
        return self

    def stop(self, policy: str) -> QueueBuilder:
        self._o["spec"]["stopPolicy"] = policy
        return self

    def admission_mode(self, mode: str = "UsageBasedAdmissionFairSharing") -> QueueBuilder:
        """spec.admissionScope (upstream `AdmissionMode`)."""
        self._o["spec"]["admissionScope"] = {"admissionMode": mode}
        return self

    def selector(self, sel: dict[str, Any] | None) -> QueueBuilder:
        if sel is None:
            self._o["spec"].pop("namespaceSelector", None)
        else:
            self._o["spec"]["namespaceSelector"] = sel
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._o)


def fq(name: str, **resources: str | tuple[str, str | None, str | None]) -> dict[str, Any]:
    """Flavor quotas: value is nominal, or (nominal, borrowingLimit, lendingLimit)."""
    out = []
    for res, v in resources.items():
        res = "nvidia.com/gpu" if res == "gpu" else res
        nominal, bl, ll = (v, None, None) if isinstance(v, str) else v
        r: dict[str, Any] = {"name": res, "nominalQuota": nominal}
        if bl is not None:
            r["borrowingLimit"] = bl
        if ll is not None:
            r["lendingLimit"] = ll
        out.append(r)
    return {"name": name, "resources": out}


def make_cq(name: str) -> QueueBuilder:
    return QueueBuilder("ClusterQueue", name)


def make_cohort(name: str) -> QueueBuilder:
    return QueueBuilder("Cohort", name)


def make_lq(name: str, ns: str, cq: str, stop: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterQueue": cq}
    if stop:
        spec["stopPolicy"] = stop
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


class WorkloadBuilder:
    def __init__(self, name: str, ns: str) -> None:
        self._o: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": f"uid-{name}",
                "creationTimestamp": ts(0),
                "generation": 1,
            },
            "spec": {"queueName": "lq", "podSets": []},
            "status": {},
        }

    def queue(self, q: str) -> WorkloadBuilder:
        self._o["spec"]["queueName"] = q
        return self

    def priority(self, p: int) -> WorkloadBuilder:
        self._o["spec"]["priority"] = p
        return self

    def created(self, seconds: float) -> WorkloadBuilder:
        self._o["metadata"]["creationTimestamp"] = ts(seconds)
        return self

    def uid(self, u: str) -> WorkloadBuilder:
        self._o["metadata"]["uid"] = u
        return self

    def label(self, k: str, v: str) -> WorkloadBuilder:
        self._o["metadata"].setdefault("labels", {})[k] = v
        return self

    def annotation(self, k: str, v: str) -> WorkloadBuilder:
        self._o["metadata"].setdefault("annotations", {})[k] = v
        return self

    def owner(self, kind: str, name: str, uid: str, api_version: str = "kueue.x-k8s.io/v1beta2") -> WorkloadBuilder:
        """A controller ownerReference (upstream `ControllerReference`)."""
        self._o["metadata"].setdefault("ownerReferences", []).append(
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        )
        return self

    def variant_of(self, parent: str, parent_uid: str, *flavors: str) -> WorkloadBuilder:
        """A ConcurrentAdmission variant: owned by Workload `parent`, allowed only `flavors`."""
        return self.owner("Workload", parent, parent_uid).annotation(
            "kueue.x-k8s.io/workload-allowed-resource-flavors", ",".join(flavors)
        )

    def podset(
        self, name: str = "main", count: int = 1, min_count: int | None = None, **requests: str
    ) -> WorkloadBuilder:
        reqs = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in requests.items()}
        ps: dict[str, Any] = {
            "name": name,
            "count": count,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": reqs}}]}},
        }
        if min_count is not None:
            ps["minCount"] = min_count
        self._o["spec"]["podSets"].append(ps)
        return self

    def request(self, **requests: str) -> WorkloadBuilder:
        return self.podset("main", 1, **requests)

    def topology(self, **request: str) -> WorkloadBuilder:
        """The last podSet's topologyRequest (e.g. `required="cloud.com/rack"`)."""
        self._o["spec"]["podSets"][-1]["topologyRequest"] = request
        return self

    def node_selector(self, **sel: str) -> WorkloadBuilder:
        self._o["spec"]["podSets"][-1]["template"]["spec"]["nodeSelector"] = sel
        return self

    def affinity(self, *terms: list[dict[str, Any]]) -> WorkloadBuilder:
        self._o["spec"]["podSets"][-1]["template"]["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
        return self

    def toleration(self, k: str, v: str, effect: str = "NoSchedule") -> WorkloadBuilder:
        self._o["spec"]["podSets"][-1]["template"]["spec"].setdefault("tolerations", []).append(
            {"key": k, "operator": "Equal", "value": v, "effect": effect}
        )
        return self

    def condition(self, ctype: str, status: str, reason: str = "", message: str = "", at: float = 0) -> WorkloadBuilder:
        conds = [c for c in self._o["status"].setdefault("conditions", []) if c["type"] != ctype]
        conds.append(
            {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": ts(at)}
        )
        self._o["status"]["conditions"] = conds
        return self

    def reserve(self, cq: str, *assignments: dict[str, Any], admitted: bool = True, at: float = 0) -> WorkloadBuilder:
        """Mark quota reserved in `cq` with explicit podSetAssignments (see `psa`)."""
        self._o["status"]["admission"] = {"clusterQueue": cq, "podSetAssignments": list(assignments)}
        self.condition("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}", at)
        if admitted:
            self.condition("Admitted", "True", "Admitted", "The workload is admitted", at)
        return self

    def finished(self) -> WorkloadBuilder:
        return self.condition("Finished", "True", "Succeeded", "done")

    def evicted(self, reason: str = "Preempted") -> WorkloadBuilder:
        return self.condition("Evicted", "True", reason, "evicted")

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._o)


def psa(name: str = "main", count: int = 1, **usage: tuple[str, str]) -> dict[str, Any]:
    """podSetAssignment: usage maps resource -> (flavor, total quantity)."""
    flavors = {}
    res = {}
    for r, (f, q) in usage.items():
        r = "nvidia.com/gpu" if r == "gpu" else r
        flavors[r] = f
        res[r] = q
    return {"name": name, "flavors": flavors, "resourceUsage": res, "count": count}


def limit_range(name: str, ns: str, kind: str = "Container", **values: dict[str, str]) -> dict[str, Any]:
    """A LimitRange with one item of type `kind`; `values` maps field (max, min, default,
    defaultRequest, maxLimitRequestRatio) to its resource list (upstream `MakeLimitRange`)."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"limits": [{"type": kind, **values}]},
    }


def runtime_class(name: str, pod_fixed: dict[str, str] | None = None) -> dict[str, Any]:
    """A RuntimeClass, with `overhead.podFixed` when given (upstream `MakeRuntimeClass`)."""
    obj: dict[str, Any] = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}}
    obj["handler"] = f"{name}-handler"
    if pod_fixed is not None:
        obj["overhead"] = {"podFixed": pod_fixed}
    return obj


def make_wl(name: str, ns: str = "ns") -> WorkloadBuilder:
    return WorkloadBuilder(name, ns)


def make_core(
    *objs: dict[str, Any],
    fair_sharing: bool = False,
    namespaces: dict[str, dict[str, str]] | None = None,
    now: datetime = T0,
    **config: Any,
) -> Any:
    """An AdmissionCore fed with `objs` (any kinds, any order); namespace `ns` exists by default.
    `config` holds further `SchedulerConfig` fields.

    A LocalQueue `lq` in namespace `ns` is created for every ClusterQueue named `cq` unless given.
    """
    from webhook.core import AdmissionCore, SchedulerConfig

    core = AdmissionCore(SchedulerConfig(fair_sharing=fair_sharing, **config))
    for name, labels in (namespaces or {"ns": {"kubernetes.io/metadata.name": "ns"}}).items():
        core.on_namespace(name, labels, now)
    feed(core, *objs, now=now)
    return core


def feed(core: Any, *objs: dict[str, Any], now: datetime = T0) -> None:
    handlers = {
        "ResourceFlavor": core.on_resource_flavor,
        "ClusterQueue": core.on_cluster_queue,
        "Cohort": core.on_cohort,
        "LocalQueue": core.on_local_queue,
        "Workload": core.on_workload,
    }
    for o in objs:
        if o["kind"] == "WorkloadPriorityClass":
            core.on_priority_class(o)
        elif o["kind"] == "LimitRange":
            core.on_limit_range(o)
        elif o["kind"] == "RuntimeClass":
            core.on_runtime_class(o)
        elif o["kind"] == "Topology":
            core.on_topology(o, now)
        elif o["kind"] == "Node":
            core.on_node(o, now)
        elif o["kind"] == "Pod":
            meta = o["metadata"]
            core.on_pod(f"{meta.get('namespace', '')}/{meta['name']}", o, now)
        else:
            handlers[o["kind"]](o, now)


def merged(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`target` after the JSON merge patch `patch` (RFC 7386), as the API server applies it."""
    out = copy.deepcopy(dict(target))
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping):
            out[key] = merged(out.get(key) if isinstance(out.get(key), Mapping) else {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def pruned(value: Any) -> Any:
    """`value` without empty maps (upstream's `cmpopts.EquateEmpty`: a template's metadata emptied
    by a restore is no metadata)."""
    if isinstance(value, Mapping):
        kept = {key: pruned(v) for key, v in value.items()}
        return {key: v for key, v in kept.items() if v != {}}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


def make_spark_application(name: str, ns: str) -> dict[str, Any]:
    """Upstream's `MakeSparkApplication` (pkg/util/testingjobs/sparkapplication): a cluster-mode Scala
    SparkPi of one driver and one executor, each 100m CPU and 512Mi."""
    role = {"memory": "512Mi", "serviceAccount": "spark-operator-spark", "coreRequest": "100m"}
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "type": "Scala",
            "mode": "cluster",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "mainClass": "org.apache.spark.examples.SparkPi",
            "arguments": ["1000"],
            "driver": dict(role),
            "executor": {**role, "instances": 1, "deleteOnTermination": False},
        },
    }
