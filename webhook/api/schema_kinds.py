"""OpenAPI schemas of the Kueue kinds, per served version (v1beta1, v1beta2).

Mirrors `apis/kueue/v1beta1/*_types.go` and `apis/kueue/v1beta2/*_types.go` at ff69552e79: the same
fields, limits, defaults, enums, list-map keys and CEL rules (with upstream's exact messages, since
users see them). Descriptions are our own short summaries. v1beta2 is the storage version; the
v1beta1 schemas keep the fields that conversion renames or drops (`spec.cohort`,
`spec.priorityClassName`, `status.flavorUsage`, ...).

Each `*_schema(version, ...)` returns the complete `openAPIV3Schema` of one version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from webhook.api import schema_types as t

__all__ = [
    "VERSIONS",
    "admission_check_schema",
    "cluster_queue_schema",
    "cohort_schema",
    "local_queue_schema",
    "resource_flavor_schema",
    "workload_priority_class_schema",
    "workload_schema",
]

V1BETA1 = "v1beta1"
V1BETA2 = "v1beta2"
VERSIONS = (V1BETA1, V1BETA2)

_QUOTA_RESERVED = "QuotaReserved"


def _root(
    kind: str,
    desc: str,
    fields: Mapping[str, t.Schema],
    *,
    required: Sequence[str] = (),
    rules: Sequence[Mapping[str, str]] = (),
) -> t.Schema:
    props: dict[str, t.Schema] = {
        "apiVersion": t.string("Versioned schema of this object; the API server converts it to the latest."),
        "kind": t.string("REST resource this object represents, in CamelCase."),
        "metadata": t.obj(desc="Standard object metadata."),
    }
    props.update(fields)
    return t.obj(props, f"{kind}: {desc}", required=required, rules=rules)


def _ref(desc: str | None = None) -> t.Schema:
    """A reference to a cluster-scoped object by name (DNS-1123 subdomain)."""
    return t.string(desc, max_length=253, pattern=t.DNS1123_SUBDOMAIN)


def _pod_set_name(desc: str | None = None, *, default: str | None = None) -> t.Schema:
    return t.string(desc, max_length=63, pattern=t.DNS1123_LABEL, default=default)


def _fair_sharing() -> t.Schema:
    return t.obj(
        {
            "weight": t.quantity(
                "Share of this node when borrowing unused quota; 0 means infinite.", default=1
            )
        },
        "Fair sharing settings.",
    )


def _fair_sharing_status(*, admission: bool) -> t.Schema:
    props: dict[str, t.Schema] = {
        "weightedShare": t.int64("Borrowed resources over lendable ones, scaled by weight.")
    }
    if admission:
        props["admissionFairSharingStatus"] = t.obj(
            {"consumedResources": t.quantity_map(), "lastUpdate": t.date_time()},
            "Decayed usage for admission fair sharing.",
            required=["consumedResources", "lastUpdate"],
        )
    return t.obj(props, "Current fair sharing state.", required=["weightedShare"])


def _resource_groups(version: str) -> t.Schema:
    resource = t.obj(
        {
            "name": t.string("Resource name, such as cpu or nvidia.com/gpu."),
            "nominalQuota": t.quantity("Quantity of this resource available to admitted workloads."),
            "borrowingLimit": t.quantity("Maximum quantity this node may borrow from its cohort."),
            "lendingLimit": t.quantity("Maximum quantity this node lends to its cohort."),
        },
        required=["name", "nominalQuota"],
    )
    flavor = t.obj(
        {
            "name": _ref("Name of the ResourceFlavor."),
            "resources": t.array(
                resource, "Quota per covered resource.", min_items=1, max_items=64, map_keys=["name"]
            ),
        },
        required=["name", "resources"],
    )
    group = t.obj(
        {
            "coveredResources": t.array(
                t.string(),
                "Resources this group provides quota for.",
                min_items=1,
                max_items=64,
                list_type="atomic" if version == V1BETA2 else None,
            ),
            "flavors": t.array(
                flavor, "Flavors, in order of preference.", min_items=1, max_items=64, map_keys=["name"]
            ),
        },
        required=["coveredResources", "flavors"],
        rules=[
            t.rule(
                "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
                "flavors must have the same number of resources as the coveredResources",
            )
        ],
    )
    return t.array(
        group, "Groups of resources with their quota per flavor.", max_items=16, list_type="atomic"
    )


def _flavor_usage(desc: str, *, borrowed: bool) -> t.Schema:
    fields: dict[str, t.Schema] = {"name": t.string(), "total": t.quantity()}
    if borrowed:
        fields["borrowed"] = t.quantity()
    usage = t.obj(fields, required=["name"])
    flavor = t.obj(
        {"name": _ref(), "resources": t.array(usage, max_items=64, map_keys=["name"])},
        required=["name", "resources"],
    )
    return t.array(flavor, desc, max_items=64, map_keys=["name"])


def _stop_policy() -> t.Schema:
    return t.string(
        "Whether to stop admitting (Hold) and also evict admitted workloads (HoldAndDrain).",
        default="None",
        enum=["None", "Hold", "HoldAndDrain"],
    )


def _conditions(version: str, desc: str) -> t.Schema:
    return t.conditions(desc, max_items=16 if version == V1BETA2 else None)


# ---------------------------------------------------------------------------------------------


def resource_flavor_schema(version: str) -> t.Schema:
    spec = t.obj(
        {
            "nodeLabels": t.string_map(
                "Labels of the nodes this flavor stands for; injected as a node selector.",
                max_properties=8,
                map_type="atomic",
            ),
            "nodeTaints": t.taints(
                "Taints of the nodes this flavor stands for; workloads must tolerate them.",
                max_items=8,
                rules=[t.taint_effect_rule()],
            ),
            "tolerations": t.tolerations(
                "Tolerations added to the pods admitted with this flavor.", max_items=8
            ),
            "topologyName": _ref("Topology used for topology-aware scheduling."),
        },
        "Node characteristics of this flavor.",
        rules=[
            t.rule(
                "!has(self.topologyName) || self.nodeLabels.size() >= 1",
                "at least one nodeLabel is required when topology is set",
            ),
            t.rule(
                "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)",
                "topologyName is immutable when topologyName is set",
            ),
        ],
    )
    return _root("ResourceFlavor", "a kind of nodes that quota is assigned to.", {"spec": spec})


def cluster_queue_schema(version: str) -> t.Schema:
    v2 = version == V1BETA2
    cohort_field = "cohortName" if v2 else "cohort"
    check_rule = t.obj(
        {
            "name": t.string("Name of the AdmissionCheck.", max_length=316, min_length=1 if v2 else None),
            "onFlavors": t.array(
                _ref(),
                "Flavors the check applies to; empty means all.",
                max_items=64 if v2 else None,
                list_type="set" if v2 else None,
            ),
        },
        required=["name"],
    )
    spec: dict[str, t.Schema] = {
        "resourceGroups": _resource_groups(version),
        cohort_field: _ref("Cohort this ClusterQueue borrows from and lends to."),
        "queueingStrategy": t.string(
            "Order of pending workloads: StrictFIFO or BestEffortFIFO.",
            default="BestEffortFIFO",
            enum=["StrictFIFO", "BestEffortFIFO"],
        ),
        "namespaceSelector": t.label_selector(
            "Namespaces allowed to submit; unset means none, {} means all."
        ),
        "flavorFungibility": t.obj(
            {
                "whenCanBorrow": t.string(
                    "What to do when a flavor fits only by borrowing.",
                    default="MayStopSearch",
                    enum=["MayStopSearch", "TryNextFlavor"] + ([] if v2 else ["Borrow"]),
                ),
                "whenCanPreempt": t.string(
                    "What to do when a flavor fits only by preempting.",
                    default="TryNextFlavor",
                    enum=["MayStopSearch", "TryNextFlavor"] + ([] if v2 else ["Preempt"]),
                ),
                "preference": t.string(
                    "Tie-break between borrowing and preemption when both policies are TryNextFlavor.",
                    enum=["BorrowingOverPreemption", "PreemptionOverBorrowing"],
                ),
            },
            "How flavors are tried when a workload does not fit the first one.",
            default={},
            rules=[
                t.rule(
                    "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
                    "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
                )
            ],
        ),
        "preemption": t.obj(
            {
                "reclaimWithinCohort": t.string(
                    "Which cohort workloads may be preempted to reclaim nominal quota.",
                    default="Never",
                    enum=["Never", "LowerPriority", "Any"],
                ),
                "borrowWithinCohort": t.obj(
                    {
                        "policy": t.string(
                            "Whether to preempt in the cohort while borrowing.",
                            default="Never",
                            enum=["Never", "LowerPriority"],
                        ),
                        "maxPriorityThreshold": t.int32(
                            "Only workloads at or below this priority may be preempted."
                        ),
                    },
                    "Preemption while borrowing.",
                    default={},
                ),
                "withinClusterQueue": t.string(
                    "Which workloads of this ClusterQueue may be preempted.",
                    default="Never",
                    enum=["Never", "LowerPriority", "LowerOrNewerEqualPriority"],
                ),
            },
            "Preemption policies.",
            default={},
            rules=[
                t.rule(
                    "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != 'Never')",
                    "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                )
            ],
        ),
        "admissionChecksStrategy": t.obj(
            {
                "admissionChecks": t.array(
                    check_rule,
                    "Admission checks and the flavors they apply to.",
                    min_items=1 if v2 else None,
                    max_items=64 if v2 else None,
                    map_keys=["name"] if v2 else None,
                )
            },
            "Admission checks required by this ClusterQueue.",
            required=["admissionChecks"] if v2 else (),
        ),
        "stopPolicy": _stop_policy(),
        "fairSharing": _fair_sharing(),
        "admissionScope": t.obj(
            {
                "admissionMode": t.string(
                    "Admission fair sharing mode.",
                    enum=["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"] if v2 else None,
                )
            },
            "Admission fair sharing among the LocalQueues of this ClusterQueue.",
            required=["admissionMode"],
        ),
    }
    if v2:
        spec["concurrentAdmissionPolicy"] = t.obj(
            {
                "migration": t.obj(
                    {
                        "mode": t.string(
                            max_length=253, enum=["TryPreferredFlavors", "RetainFirstAdmission"]
                        ),
                        "constraints": t.obj({"lastAcceptableFlavorName": _ref()}),
                    },
                    required=["mode"],
                )
            },
            "Concurrent admission (alpha).",
            required=["migration"],
        )
    else:
        spec["admissionChecks"] = t.array(
            t.string(max_length=316), "Admission checks required by this ClusterQueue (deprecated)."
        )
    status: dict[str, t.Schema] = {
        "conditions": _conditions(version, "Latest observations; Active tells whether it can admit."),
        "flavorsReservation": _flavor_usage("Quota reserved per flavor and resource.", borrowed=True),
        "flavorsUsage": _flavor_usage(
            "Quota used by admitted workloads per flavor and resource.", borrowed=True
        ),
        "pendingWorkloads": t.int32("Number of workloads waiting for admission."),
        "reservingWorkloads": t.int32("Number of workloads holding a quota reservation."),
        "admittedWorkloads": t.int32("Number of admitted workloads that have not finished."),
        "fairSharing": _fair_sharing_status(admission=not v2),
    }
    if not v2:
        status["pendingWorkloadsStatus"] = t.obj(
            {
                "clusterQueuePendingWorkload": t.array(
                    t.obj({"name": t.string(), "namespace": t.string()}, required=["name", "namespace"]),
                    list_type="atomic",
                ),
                "lastChangeTime": t.date_time(),
            },
            "Unused since v0.14.",
            required=["lastChangeTime"],
        )
    spec_schema = t.obj(
        spec,
        "Quota and policies of this ClusterQueue.",
        rules=[
            t.rule(
                f"!has(self.{cohort_field}) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
                "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
                "borrowingLimit must be nil when cohort is empty",
            )
        ],
    )
    return _root(
        "ClusterQueue",
        "a cluster-wide pool of quota that workloads are admitted into.",
        {"spec": spec_schema, "status": t.obj(status, "Observed state of the ClusterQueue.")},
    )


def cohort_schema(version: str) -> t.Schema:
    spec = t.obj(
        {
            "parentName": _ref("Parent Cohort in the tree; it need not exist."),
            "resourceGroups": _resource_groups(version),
            "fairSharing": _fair_sharing(),
        },
        "Quota shared by the members of this Cohort.",
    )
    status = t.obj(
        {"fairSharing": _fair_sharing_status(admission=version == V1BETA1)}, "Observed state of the Cohort."
    )
    return _root(
        "Cohort", "a group of ClusterQueues and Cohorts that share quota.", {"spec": spec, "status": status}
    )


def local_queue_schema(version: str) -> t.Schema:
    v2 = version == V1BETA2
    spec = t.obj(
        {
            "clusterQueue": _ref("ClusterQueue that admits the workloads of this queue.")
            | {"x-kubernetes-validations": [t.rule("self == oldSelf", "field is immutable")]},
            "stopPolicy": _stop_policy(),
            "fairSharing": _fair_sharing(),
        },
        "The ClusterQueue this queue points to.",
    )
    usage_field = "flavorsUsage" if v2 else "flavorUsage"
    status: dict[str, t.Schema] = {
        "conditions": _conditions(version, "Latest observations; Active tells whether it accepts workloads."),
        "pendingWorkloads": t.int32("Number of workloads waiting for admission."),
        "reservingWorkloads": t.int32("Number of workloads holding a quota reservation."),
        "admittedWorkloads": t.int32("Number of admitted workloads that have not finished."),
        "flavorsReservation": _flavor_usage("Quota reserved per flavor and resource.", borrowed=False),
        usage_field: _flavor_usage(
            "Quota used by admitted workloads per flavor and resource.", borrowed=False
        ),
        "fairSharing": _fair_sharing_status(admission=True),
    }
    if not v2:
        status["flavors"] = t.array(
            t.obj(
                {
                    "name": _ref(),
                    "nodeLabels": t.string_map(max_properties=8, map_type="atomic"),
                    "nodeTaints": t.taints(max_items=8),
                    "resources": t.array(t.string(), max_items=64, list_type="set"),
                    "topology": t.obj(
                        {
                            "name": _ref(),
                            "levels": t.array(t.string(), min_items=1, max_items=16, list_type="atomic"),
                        },
                        required=["levels", "name"],
                    ),
                },
                required=["name"],
            ),
            "Flavors available to this queue (removed in v1beta2).",
            max_items=64,
            map_keys=["name"],
        )
    return _root(
        "LocalQueue",
        "a namespaced queue that users submit workloads to.",
        {"spec": spec, "status": t.obj(status, "Observed state of the LocalQueue.")},
    )


def workload_priority_class_schema(version: str) -> t.Schema:
    return _root(
        "WorkloadPriorityClass",
        "a priority value for workloads, independent of pod priority.",
        {
            "value": t.int32("Priority of the workloads that use this class; higher is more important."),
            "description": t.string(
                "Free-form text about when to use this class.",
                max_length=2048 if version == V1BETA2 else None,
            ),
        },
        required=["value"],
    )


def admission_check_schema(version: str) -> t.Schema:
    v2 = version == V1BETA2
    min1 = 1 if v2 else None
    spec: dict[str, t.Schema] = {
        "controllerName": t.string(
            "Controller that runs this check.",
            max_length=253 if v2 else None,
            min_length=min1,
            rules=[t.rule("self == oldSelf", "field is immutable")],
        ),
        "parameters": t.obj(
            {
                "apiGroup": t.string(max_length=253, min_length=min1, pattern=t.DNS1123_SUBDOMAIN),
                "kind": t.string(max_length=63, min_length=min1, pattern=r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"),
                "name": t.string(max_length=63, min_length=min1, pattern=t.DNS1123_LABEL),
            },
            "Object holding the check's configuration.",
            required=["apiGroup", "kind", "name"],
        ),
    }
    if not v2:
        spec["retryDelayMinutes"] = t.int64("Deprecated; ignored.", default=15)
    return _root(
        "AdmissionCheck",
        "an extra condition a workload must meet before admission.",
        {
            "spec": t.obj(spec, "Which controller runs the check.", required=["controllerName"]),
            "status": t.obj(
                {"conditions": _conditions(version, "Active tells whether the check is usable.")}
            ),
        },
    )


# ---------------------------------------------------------------------------------------------
# Workload


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
    if version == V1BETA2:
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
    v2 = version == V1BETA2

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
            "name": _pod_set_name("Name of the pod set.", default="main"),
            "template": pod_template,
            "count": t.int32("Number of pods.", minimum=0, default=1),
            "minCount": t.int32("Fewest pods to admit with partial admission.", minimum=1),
            "topologyRequest": _topology_request(version),
        },
        required=["template"] if version == V1BETA2 else ["count", "template"],
        rules=[
            t.rule(
                "has(self.minCount) ? self.minCount <= self.count : true",
                "minCount should be positive and less or equal to count",
            )
        ],
    )
    return t.array(pod_set, "Groups of identical pods.", min_items=1, max_items=18, map_keys=["name"])


def _workload_spec(version: str, pod_template: t.Schema) -> t.Schema:
    v2 = version == V1BETA2
    props: dict[str, t.Schema] = {
        "podSets": _pod_sets(version, pod_template),
        "queueName": _ref("LocalQueue, in the same namespace, the workload is submitted to."),
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
    props["priorityClassName"] = _ref("Name of the priority class.")
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
        t.string(max_length=317 if version == V1BETA2 else None),
        min_items=1,
        max_items=16,
        list_type="atomic",
    )
    if version == V1BETA1:
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
                    "roots": t.array(
                        t.string(max_length=63), min_items=1, max_items=100000, list_type="atomic"
                    ),
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
    v2 = version == V1BETA2
    assignment = t.obj(
        {
            "name": _pod_set_name("Pod set this assignment is for.", default="main"),
            "flavors": t.obj(desc="Flavor assigned to each resource.", additional=_ref()),
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
            "clusterQueue": _ref("ClusterQueue that reserved the quota."),
            "podSetAssignments": t.array(
                assignment, "Flavors assigned per pod set.", max_items=18, map_keys=["name"]
            ),
        },
        "Where and with which flavors quota is reserved.",
        required=() if v2 else ["clusterQueue", "podSetAssignments"],
    )


def _admission_checks(version: str) -> t.Schema:
    v2 = version == V1BETA2
    update = t.obj(
        {
            "name": _pod_set_name(),
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
    v2 = version == V1BETA2
    counted = t.obj({"name": _pod_set_name(), "count": t.int32(minimum=0)}, required=["count", "name"])
    eviction = t.obj(
        {
            "reason": t.string(max_length=316),
            "underlyingCause": t.string(max_length=316),
            "count": t.int32(minimum=0),
        },
        required=["count", "reason", "underlyingCause"],
    )
    props: dict[str, t.Schema] = {
        "conditions": _conditions(
            version, "Latest observations: QuotaReserved, Admitted, Evicted, Finished, ..."
        ),
        "admission": _admission(version),
        "requeueState": t.obj(
            {"count": t.int32(minimum=0), "requeueAt": t.date_time()}, "Backoff state after evictions."
        ),
        "reclaimablePods": t.array(
            counted, "Pods no longer needed, per pod set.", max_items=18, map_keys=["name"]
        ),
        "admissionChecks": _admission_checks(version),
        "resourceRequests": t.array(
            t.obj({"name": _pod_set_name(), "resources": t.quantity_map()}, required=["name"]),
            "Total requests per pod set, as counted for quota.",
            max_items=18,
            map_keys=["name"],
        ),
        "accumulatedPastExecutionTimeSeconds" if v2 else "accumulatedPastExexcutionTimeSeconds": t.int32(
            "Seconds spent admitted in earlier admissions."
        ),
        "schedulingStats": t.obj(
            {
                "evictions": t.array(
                    eviction, max_items=256 if v2 else None, map_keys=["reason", "underlyingCause"]
                )
            },
            "Scheduling statistics.",
        ),
        "clusterName": t.string(
            "Worker cluster the workload runs in (MultiKueue).", max_length=256 if v2 else None
        ),
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
    return _root(
        "Workload",
        "a unit of admission: pods that are admitted, and evicted, together.",
        {"spec": _workload_spec(version, pod_template), "status": _workload_status(version)},
        rules=_workload_rules(version),
    )
