"""OpenAPI schema of the Workload kind, per served version (v1beta1, v1beta2).

Mirrors `apis/kueue/v1beta1/workload_types.go` and `apis/kueue/v1beta2/workload_types.go` at
ff69552e79, including the object-level CEL rules that guard fields while quota is reserved
(upstream's exact messages). The pod template schema is passed in (see `schema_pod`).
"""

from __future__ import annotations

from webhook.api import schema_types as t
from webhook.api.schema_kinds import (
    VERSION_V1BETA1,
    VERSION_V1BETA2,
    object_ref,
    pod_set_name,
    root_schema,
    status_conditions,
)

__all__ = ["workload_schema"]

_QUOTA_RESERVED = "QuotaReserved"


def _reserved(side: str) -> str:
    return (
        f"has({side}.status) && has({side}.status.conditions) && "
        f"{side}.status.conditions.exists(c, c.type == '{_QUOTA_RESERVED}' && c.status == 'True')"
    )


def _admitted(side: str) -> str:
    return (
        f"has({side}.status) && has({side}.status.conditions) && "
        f"{side}.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')"
    )


def _workload_rules(version: str) -> list[dict[str, str]]:
    rules = [
        t.rule(
            f"{_reserved('self')} && has(self.status.admission) ? "
            "size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
            "podSetAssignments must have the same number of podSets as the spec",
        )
    ]
    if version == VERSION_V1BETA2:
        both_refs = "has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)"
        rules += [
            t.rule(
                f"({_reserved('oldSelf')}) ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef))"
                f" || ({both_refs}) : true",
                "priorityClassRef is immutable while workload quota reserved",
            ),
            *(
                t.rule(
                    f"({_reserved('oldSelf')} && {both_refs}) ? "
                    f"oldSelf.spec.priorityClassRef.{f} == self.spec.priorityClassRef.{f} : true",
                    f"priorityClassRef.{f} is immutable while workload quota reserved",
                )
                for f in ("group", "kind")
            ),
            t.rule(
                f"({_reserved('oldSelf')} && {both_refs} && self.spec.priorityClassRef.group == 'scheduling.k8s.io'"
                " && self.spec.priorityClassRef.kind == 'PriorityClass') ? "
                "oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true",
                "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved",
            ),
        ]
    else:
        both_sources = "has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource)"
        rules += [
            t.rule(
                f"({_reserved('oldSelf')} && {both_sources}) ? "
                "(oldSelf.spec.priorityClassSource == self.spec.priorityClassSource) : true",
                "priorityClassSource is immutable while workload quota reserved",
            ),
            t.rule(
                f"({_reserved('oldSelf')} && {both_sources} && "
                "(self.spec.priorityClassSource != 'kueue.x-k8s.io/workloadpriorityclass') && "
                "has(oldSelf.spec.priorityClassName) && has(self.spec.priorityClassName)) ? "
                "(oldSelf.spec.priorityClassName == self.spec.priorityClassName) : true",
                "priorityClassName is immutable while workload quota reserved and priorityClassSource "
                "is not equal to kueue.x-k8s.io/workloadpriorityclass",
            ),
        ]
    rules += [
        t.rule(
            f"(({_reserved('oldSelf')}) && ({_reserved('self')})) ? "
            "((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && "
            "(!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true",
            "queueName is immutable while workload quota reserved",
        ),
        t.rule(
            f"(({_admitted('oldSelf')}) && ({_admitted('self')}))?"
            "((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  "
            "(has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true",
            "maximumExecutionTimeSeconds is immutable while workload quota reserved",
        ),
    ]
    return rules


def _topology_request(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2

    def limited(desc: str, n: int) -> t.Schema:
        return t.string(desc, max_length=n if v2 else None)

    props: dict[str, t.Schema] = {
        "required": limited("Topology level the pods must all fit in.", 63),
        "preferred": limited("Topology level the pods should preferably fit in.", 63),
        "unconstrained": t.boolean("Place pods anywhere, packed as tightly as possible."),
        "podIndexLabel": limited("Label holding the pod index.", 317),
        "subGroupIndexLabel": limited("Label holding the sub-group index.", 317),
        "subGroupCount": t.int32("Number of sub-groups.", minimum=0 if v2 else None),
        "podSetGroupName": limited("PodSets with the same group name are placed together.", 256),
        "podSetSliceRequiredTopology": limited("Topology level each slice must fit in.", 63),
        "podSetSliceSize": t.int32("Pods per slice.", minimum=1),
    }
    if v2:
        props["podsetSliceRequiredTopologyConstraints"] = t.array(
            t.obj(
                {"topology": t.string(max_length=63, min_length=1), "size": t.int32(minimum=1)},
                required=["size", "topology"],
            ),
            "Nested slice constraints.",
            max_items=3,
            list_type="atomic",
        )
    return t.obj(props, "Topology-aware scheduling request.")


def _pod_sets(version: str, pod_template: t.Schema) -> t.Schema:
    pod_set = t.obj(
        {
            "name": pod_set_name("Name of the pod set.", default="main"),
            "template": pod_template,
            "count": t.int32("Number of pods.", minimum=0, default=1),
            "minCount": t.int32("Fewest pods to admit with partial admission.", minimum=1),
            "topologyRequest": _topology_request(version),
        },
        required=["template"] if version == VERSION_V1BETA2 else ["count", "template"],
        rules=[
            t.rule(
                "has(self.minCount) ? self.minCount <= self.count : true",
                "minCount should be positive and less or equal to count",
            )
        ],
    )
    return t.array(pod_set, "Groups of identical pods.", min_items=1, max_items=18, map_keys=["name"])


def _workload_spec(version: str, pod_template: t.Schema) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    props: dict[str, t.Schema] = {
        "podSets": _pod_sets(version, pod_template),
        "queueName": object_ref("LocalQueue, in the same namespace, the workload is submitted to."),
        "priority": t.int32("Priority taken from the priority class; higher is admitted first."),
        "active": t.boolean("Whether the workload may be admitted; false evicts it.", default=True),
        "maximumExecutionTimeSeconds": t.int32("Seconds the workload may run once admitted.", minimum=1),
    }
    if v2:
        props["priorityClassRef"] = t.obj(
            {
                "group": t.string(enum=["kueue.x-k8s.io", "scheduling.k8s.io"]),
                "kind": t.string(enum=["WorkloadPriorityClass", "PriorityClass"]),
                "name": t.string(max_length=253, min_length=1, pattern=t.DNS1123_SUBDOMAIN),
            },
            "Priority class the priority comes from.",
            required=["group", "kind", "name"],
            rules=[
                t.rule(
                    "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
                    "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
                ),
                t.rule(
                    "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
                    "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
                ),
            ],
        )
        props["preemptionGates"] = t.array(
            t.obj({"name": t.string(max_length=63, min_length=1)}, required=["name"]),
            "Gates that hold back preemptions this workload would cause.",
            max_items=8,
            map_keys=["name"],
        )
        return t.obj(
            props,
            "What the workload needs.",
            rules=[
                t.rule(
                    "!has(self.priorityClassRef) || has(self.priority)",
                    "priority should not be nil when priorityClassRef is set",
                )
            ],
        )
    props["priorityClassName"] = object_ref("Name of the priority class.")
    props["priorityClassSource"] = t.string(
        "Kind of the priority class.",
        default="",
        enum=["kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""],
    )
    return t.obj(
        props,
        "What the workload needs.",
        required=["podSets"],
        rules=[
            t.rule(
                "has(self.priorityClassName) ? has(self.priority) : true",
                "priority should not be nil when priorityClassName is set",
            )
        ],
    )


def _topology_assignment(version: str) -> t.Schema:
    levels = t.array(
        t.string(max_length=317 if version == VERSION_V1BETA2 else None),
        min_items=1,
        max_items=16,
        list_type="atomic",
    )
    if version == VERSION_V1BETA1:
        domain = t.obj(
            {
                "count": t.int32(minimum=1),
                "values": t.array(t.string(), min_items=1, max_items=16, list_type="atomic"),
            },
            required=["count", "values"],
        )
        return t.obj(
            {"levels": levels, "domains": t.array(domain)},
            "Topology domains assigned to the pods.",
            required=["domains", "levels"],
        )
    one_of = "exactly one of the fields in [universal individual] must be set"
    values = t.obj(
        {
            "universal": t.string(max_length=63),
            "individual": t.obj(
                {
                    "prefix": t.string(max_length=63),
                    "suffix": t.string(max_length=63),
                    "roots": t.array(t.string(max_length=63), min_items=1, max_items=100000, list_type="atomic"),
                },
                required=["roots"],
            ),
        },
        rules=[t.rule("has(self.universal) != has(self.individual)", one_of)],
    )
    pod_counts = t.obj(
        {
            "universal": t.int32(minimum=1),
            "individual": t.array(t.int32(minimum=1), min_items=1, max_items=100000, list_type="atomic"),
        },
        rules=[t.rule("[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1", one_of)],
    )
    slice_ = t.obj(
        {
            "domainCount": t.int32(minimum=1),
            "valuesPerLevel": t.array(values, min_items=1, max_items=16, list_type="atomic"),
            "podCounts": pod_counts,
        },
        required=["domainCount", "podCounts", "valuesPerLevel"],
        rules=[
            t.rule(
                "!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount",
                "podCounts.individual must have length equal to domainCount",
            ),
            t.rule(
                "self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)",
                "valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this "
                "TopologyAssignmentSlice",
            ),
        ],
    )
    return t.obj(
        {"levels": levels, "slices": t.array(slice_, max_items=1000, list_type="atomic")},
        "Topology domains assigned to the pods, compressed.",
        required=["levels", "slices"],
        rules=[
            t.rule(
                "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
                "valuesPerLevel must have the same length as the number of levels in this TopologyAssignment",
            )
        ],
    )


def _admission(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    assignment = t.obj(
        {
            "name": pod_set_name("Pod set this assignment is for.", default="main"),
            "flavors": t.obj(desc="Flavor assigned to each resource.", additional=object_ref()),
            "resourceUsage": t.quantity_map("Quota used by the whole pod set."),
            "count": t.int32("Number of pods admitted.", minimum=0),
            "topologyAssignment": _topology_assignment(version),
            "delayedTopologyRequest": t.string(
                "State of a delayed topology assignment.",
                max_length=7 if v2 else None,
                enum=["Pending", "Ready"] if v2 else None,
            ),
        },
        required=() if v2 else ["name"],
    )
    return t.obj(
        {
            "clusterQueue": object_ref("ClusterQueue that reserved the quota."),
            "podSetAssignments": t.array(assignment, "Flavors assigned per pod set.", max_items=18, map_keys=["name"]),
        },
        "Where and with which flavors quota is reserved.",
        required=() if v2 else ["clusterQueue", "podSetAssignments"],
    )


def _admission_checks(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    update = t.obj(
        {
            "name": pod_set_name(),
            "labels": t.string_map(),
            "annotations": t.string_map(),
            "nodeSelector": t.string_map(),
            "tolerations": t.tolerations(max_items=8, list_type="atomic" if v2 else None),
        },
        required=["name"],
    )
    check = t.obj(
        {
            "name": t.string("Name of the AdmissionCheck.", max_length=316, min_length=1 if v2 else None),
            "state": t.string("State of the check.", enum=["Pending", "Ready", "Retry", "Rejected"]),
            "lastTransitionTime": t.date_time(),
            "message": t.string(max_length=32768),
            "requeueAfterSeconds": t.int32(minimum=0),
            "retryCount": t.int32(minimum=0),
            "podSetUpdates": t.array(
                update, "Changes the check asks for on the pods.", max_items=18, list_type="atomic"
            ),
        },
        required=["lastTransitionTime", "message", "name", "state"],
    )
    return t.array(check, "State of each admission check.", max_items=8, map_keys=["name"])


def _workload_status(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    counted = t.obj({"name": pod_set_name(), "count": t.int32(minimum=0)}, required=["count", "name"])
    eviction = t.obj(
        {
            "reason": t.string(max_length=316),
            "underlyingCause": t.string(max_length=316),
            "count": t.int32(minimum=0),
        },
        required=["count", "reason", "underlyingCause"],
    )
    props: dict[str, t.Schema] = {
        "conditions": status_conditions(
            version, "Latest observations: QuotaReserved, Admitted, Evicted, Finished, ..."
        ),
        "admission": _admission(version),
        "requeueState": t.obj(
            {"count": t.int32(minimum=0), "requeueAt": t.date_time()}, "Backoff state after evictions."
        ),
        "reclaimablePods": t.array(counted, "Pods no longer needed, per pod set.", max_items=18, map_keys=["name"]),
        "admissionChecks": _admission_checks(version),
        "resourceRequests": t.array(
            t.obj({"name": pod_set_name(), "resources": t.quantity_map()}, required=["name"]),
            "Total requests per pod set, as counted for quota.",
            max_items=18,
            map_keys=["name"],
        ),
        "accumulatedPastExecutionTimeSeconds" if v2 else "accumulatedPastExexcutionTimeSeconds": t.int32(
            "Seconds spent admitted in earlier admissions."
        ),
        "schedulingStats": t.obj(
            {"evictions": t.array(eviction, max_items=256 if v2 else None, map_keys=["reason", "underlyingCause"])},
            "Scheduling statistics.",
        ),
        "clusterName": t.string("Worker cluster the workload runs in (MultiKueue).", max_length=256 if v2 else None),
        "nominatedClusterNames": t.array(
            t.string(max_length=256 if v2 else None),
            "Worker clusters the workload may be dispatched to (MultiKueue).",
            max_items=20,
            list_type="atomic",
        ),
        "unhealthyNodes": t.array(
            t.obj({"name": t.string(max_length=63 if v2 else None)}, required=["name"]),
            "Unhealthy nodes the workload runs on (topology-aware scheduling).",
            max_items=8 if v2 else None,
            map_keys=["name"] if v2 else None,
        ),
    }
    if v2:
        props["preemptionGates"] = t.array(
            t.obj(
                {
                    "name": t.string(max_length=63, min_length=1),
                    "position": t.string(enum=["Closed", "Open"]),
                    "lastTransitionTime": t.date_time(),
                },
                required=["lastTransitionTime", "name", "position"],
            ),
            "State of each preemption gate.",
            max_items=8,
            map_keys=["name"],
        )
    return t.obj(
        props,
        "Observed state of the workload.",
        rules=[
            t.rule(
                "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
                "clusterName is immutable once set",
            ),
            t.rule(
                "!has(self.clusterName) || (!has(self.nominatedClusterNames) || "
                "(has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
                "clusterName and nominatedClusterNames are mutually exclusive",
            ),
        ],
    )


def workload_schema(version: str, pod_template: t.Schema) -> t.Schema:
    """The Workload schema; `pod_template` is the PodTemplateSpec schema used for every pod set."""
    return root_schema(
        "Workload",
        "a unit of admission: pods that are admitted, and evicted, together.",
        {"spec": _workload_spec(version, pod_template), "status": _workload_status(version)},
        rules=_workload_rules(version),
    )
