"""OpenAPI schemas of the Kueue kinds, per served version (v1beta1, v1beta2).

Mirrors `apis/kueue/v1beta1/*_types.go` and `apis/kueue/v1beta2/*_types.go` at ff69552e79: the same
fields, limits, defaults, enums, list-map keys and CEL rules (with upstream's exact messages, since
users see them). Descriptions are our own short summaries. v1beta2 is the storage version; the
v1beta1 schemas keep the fields that conversion renames or drops (`spec.cohort`,
`spec.priorityClassName`, `status.flavorUsage`, ...).

Each `*_schema(version)` returns the complete `openAPIV3Schema` of one version. The Workload, the
largest kind, lives in `schema_workload`.
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
    "object_ref",
    "pod_set_name",
    "resource_flavor_schema",
    "root_schema",
    "status_conditions",
    "workload_priority_class_schema",
]

VERSION_V1BETA1 = "v1beta1"
VERSION_V1BETA2 = "v1beta2"
VERSIONS = (VERSION_V1BETA1, VERSION_V1BETA2)


def root_schema(
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
        # The API server owns metadata's schema and rejects anything beyond name/generateName here.
        "metadata": t.obj(),
    }
    props.update(fields)
    return t.obj(props, f"{kind}: {desc}", required=required, rules=rules)


def object_ref(desc: str | None = None) -> t.Schema:
    """A reference to a cluster-scoped object by name (DNS-1123 subdomain)."""
    return t.string(desc, max_length=253, pattern=t.DNS1123_SUBDOMAIN)


def pod_set_name(desc: str | None = None, *, default: str | None = None) -> t.Schema:
    return t.string(desc, max_length=63, pattern=t.DNS1123_LABEL, default=default)


def _fair_sharing() -> t.Schema:
    return t.obj(
        {"weight": t.quantity("Share of this node when borrowing unused quota; 0 means infinite.", default=1)},
        "Fair sharing settings.",
    )


def _fair_sharing_status(*, admission: bool) -> t.Schema:
    props: dict[str, t.Schema] = {"weightedShare": t.int64("Borrowed resources over lendable ones, scaled by weight.")}
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
            "name": object_ref("Name of the ResourceFlavor."),
            "resources": t.array(resource, "Quota per covered resource.", min_items=1, max_items=64, map_keys=["name"]),
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
                list_type="atomic" if version == VERSION_V1BETA2 else None,
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
    return t.array(group, "Groups of resources with their quota per flavor.", max_items=16, list_type="atomic")


def _flavor_usage(desc: str, *, borrowed: bool) -> t.Schema:
    fields: dict[str, t.Schema] = {"name": t.string(), "total": t.quantity()}
    if borrowed:
        fields["borrowed"] = t.quantity()
    usage = t.obj(fields, required=["name"])
    flavor = t.obj(
        {"name": object_ref(), "resources": t.array(usage, max_items=64, map_keys=["name"])},
        required=["name", "resources"],
    )
    return t.array(flavor, desc, max_items=64, map_keys=["name"])


def _stop_policy() -> t.Schema:
    return t.string(
        "Whether to stop admitting (Hold) and also evict admitted workloads (HoldAndDrain).",
        default="None",
        enum=["None", "Hold", "HoldAndDrain"],
    )


def status_conditions(version: str, desc: str) -> t.Schema:
    return t.conditions(desc, max_items=16 if version == VERSION_V1BETA2 else None)


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
            "tolerations": t.tolerations("Tolerations added to the pods admitted with this flavor.", max_items=8),
            "topologyName": object_ref("Topology used for topology-aware scheduling."),
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
    return root_schema("ResourceFlavor", "a kind of nodes that quota is assigned to.", {"spec": spec})


def cluster_queue_schema(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    cohort_field = "cohortName" if v2 else "cohort"
    check_rule = t.obj(
        {
            "name": t.string("Name of the AdmissionCheck.", max_length=316, min_length=1 if v2 else None),
            "onFlavors": t.array(
                object_ref(),
                "Flavors the check applies to; empty means all.",
                max_items=64 if v2 else None,
                list_type="set" if v2 else None,
            ),
        },
        required=["name"],
    )
    spec: dict[str, t.Schema] = {
        "resourceGroups": _resource_groups(version),
        cohort_field: object_ref("Cohort this ClusterQueue borrows from and lends to."),
        "queueingStrategy": t.string(
            "Order of pending workloads: StrictFIFO or BestEffortFIFO.",
            default="BestEffortFIFO",
            enum=["StrictFIFO", "BestEffortFIFO"],
        ),
        "namespaceSelector": t.label_selector("Namespaces allowed to submit; unset means none, {} means all."),
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
                        "maxPriorityThreshold": t.int32("Only workloads at or below this priority may be preempted."),
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
                        "mode": t.string(max_length=253, enum=["TryPreferredFlavors", "RetainFirstAdmission"]),
                        "constraints": t.obj({"lastAcceptableFlavorName": object_ref()}),
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
        "conditions": status_conditions(version, "Latest observations; Active tells whether it can admit."),
        "flavorsReservation": _flavor_usage("Quota reserved per flavor and resource.", borrowed=True),
        "flavorsUsage": _flavor_usage("Quota used by admitted workloads per flavor and resource.", borrowed=True),
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
    return root_schema(
        "ClusterQueue",
        "a cluster-wide pool of quota that workloads are admitted into.",
        {"spec": spec_schema, "status": t.obj(status, "Observed state of the ClusterQueue.")},
    )


def cohort_schema(version: str) -> t.Schema:
    spec = t.obj(
        {
            "parentName": object_ref("Parent Cohort in the tree; it need not exist."),
            "resourceGroups": _resource_groups(version),
            "fairSharing": _fair_sharing(),
        },
        "Quota shared by the members of this Cohort.",
    )
    status = t.obj(
        {"fairSharing": _fair_sharing_status(admission=version == VERSION_V1BETA1)}, "Observed state of the Cohort."
    )
    return root_schema(
        "Cohort", "a group of ClusterQueues and Cohorts that share quota.", {"spec": spec, "status": status}
    )


def local_queue_schema(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    spec = t.obj(
        {
            "clusterQueue": object_ref("ClusterQueue that admits the workloads of this queue.")
            | {"x-kubernetes-validations": [t.rule("self == oldSelf", "field is immutable")]},
            "stopPolicy": _stop_policy(),
            "fairSharing": _fair_sharing(),
        },
        "The ClusterQueue this queue points to.",
    )
    usage_field = "flavorsUsage" if v2 else "flavorUsage"
    status: dict[str, t.Schema] = {
        "conditions": status_conditions(version, "Latest observations; Active tells whether it accepts workloads."),
        "pendingWorkloads": t.int32("Number of workloads waiting for admission."),
        "reservingWorkloads": t.int32("Number of workloads holding a quota reservation."),
        "admittedWorkloads": t.int32("Number of admitted workloads that have not finished."),
        "flavorsReservation": _flavor_usage("Quota reserved per flavor and resource.", borrowed=False),
        usage_field: _flavor_usage("Quota used by admitted workloads per flavor and resource.", borrowed=False),
        "fairSharing": _fair_sharing_status(admission=True),
    }
    if not v2:
        status["flavors"] = t.array(
            t.obj(
                {
                    "name": object_ref(),
                    "nodeLabels": t.string_map(max_properties=8, map_type="atomic"),
                    "nodeTaints": t.taints(max_items=8),
                    "resources": t.array(t.string(), max_items=64, list_type="set"),
                    "topology": t.obj(
                        {
                            "name": object_ref(),
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
    return root_schema(
        "LocalQueue",
        "a namespaced queue that users submit workloads to.",
        {"spec": spec, "status": t.obj(status, "Observed state of the LocalQueue.")},
    )


def workload_priority_class_schema(version: str) -> t.Schema:
    return root_schema(
        "WorkloadPriorityClass",
        "a priority value for workloads, independent of pod priority.",
        {
            "value": t.int32("Priority of the workloads that use this class; higher is more important."),
            "description": t.string(
                "Free-form text about when to use this class.",
                max_length=2048 if version == VERSION_V1BETA2 else None,
            ),
        },
        required=["value"],
    )


def admission_check_schema(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
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
    return root_schema(
        "AdmissionCheck",
        "an extra condition a workload must meet before admission.",
        {
            "spec": t.obj(spec, "Which controller runs the check.", required=["controllerName"]),
            "status": t.obj({"conditions": status_conditions(version, "Active tells whether the check is usable.")}),
        },
    )


# == kinds the worker stores but does not act on (TAS, ProvisioningRequest, MultiKueue) ==========
# Served so that upstream's YAML for them applies unchanged; no controller of ours reads them.
_UNIQUE = t.rule("size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "must be unique")
_HOSTNAME = "'kubernetes.io/hostname'"


def topology_schema(version: str) -> t.Schema:
    if version == VERSION_V1BETA2:
        mutable = t.rule(
            f"self == oldSelf || (self[size(self) - 1].nodeLabel == {_HOSTNAME} && oldSelf[size(oldSelf) - 1].nodeLabel == {_HOSTNAME})",
            "levels are mutable only when kubernetes.io/hostname is the lowest level both before and after the change",
        )
    else:
        mutable = t.rule("self == oldSelf", "field is immutable")
    level = t.obj(
        {
            "nodeLabel": t.string(
                "Node label naming this level, e.g. cloud.provider.com/topology-rack.",
                max_length=316,
                min_length=1,
                pattern=t.LABEL_KEY,
            )
        },
        "One level of the topology.",
        required=["nodeLabel"],
    )
    levels = t.array(
        level,
        "Topology levels, from the widest to the narrowest.",
        max_items=16,
        min_items=1,
        list_type="atomic",
        rules=[
            mutable,
            _UNIQUE,
            t.rule(
                f"size(self.filter(i, i.nodeLabel == {_HOSTNAME})) == 0 || self[size(self) - 1].nodeLabel == {_HOSTNAME}",
                "the kubernetes.io/hostname label can only be used at the lowest level of topology",
            ),
        ],
    )
    return root_schema(
        "Topology",
        "the node label hierarchy of a topology (topology-aware scheduling).",
        {"spec": t.obj({"levels": levels}, "The levels of the topology.", required=["levels"])},
    )


def provisioning_request_config_schema(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    node_selector = t.obj(
        {
            "key": t.string("Node selector key to set.", max_length=317, min_length=1, pattern=t.LABEL_KEY),
            "valueFromProvisioningClassDetail": t.string(
                "ProvisioningClassDetails entry holding the value.", max_length=32768, min_length=1
            ),
        },
        required=["key", "valueFromProvisioningClassDetail"],
    )
    backoff = {"backoffBaseSeconds": 60, "backoffLimitCount": 3, "backoffMaxSeconds": 1800}
    spec = t.obj(
        {
            "managedResources": t.array(
                t.string(), "Resources the ProvisioningRequest covers; all when empty.", max_items=100, list_type="set"
            ),
            "parameters": t.obj(
                desc="Parameters passed to the ProvisioningRequest.",
                additional=t.string(max_length=255),
                max_properties=100,
            ),
            "podSetMergePolicy": t.string(
                "How pod sets are merged into one ProvisioningRequest pod set.",
                enum=["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"],
            ),
            "podSetUpdates": t.obj(
                {
                    "nodeSelector": t.array(
                        node_selector,
                        "Node selectors set from the provisioning class details.",
                        max_items=8,
                        map_keys=["key"] if v2 else None,
                    )
                },
                "Updates applied to the workload's pod sets once provisioned.",
            ),
            "provisioningClassName": t.string(
                "ProvisioningRequest class.", max_length=253, min_length=1 if v2 else None, pattern=t.DNS1123_SUBDOMAIN
            ),
            "retryStrategy": t.obj(
                {name: t.int32(default=value) for name, value in backoff.items()},
                "Backoff between ProvisioningRequest attempts.",
                default=backoff,
            ),
        },
        "How ProvisioningRequests are created for a check.",
        required=["provisioningClassName"],
    )
    return root_schema(
        "ProvisioningRequestConfig", "the parameters of a ProvisioningRequest admission check.", {"spec": spec}
    )


def multikueue_config_schema(version: str) -> t.Schema:
    v2 = version == VERSION_V1BETA2
    fields: dict[str, t.Schema] = {
        "clusters": t.array(
            t.string(max_length=256 if v2 else None),
            "Names of the MultiKueueClusters workloads are dispatched to.",
            max_items=20,
            min_items=1,
            list_type="atomic" if v2 else "set",
            rules=[_UNIQUE] if v2 else (),
        ),
    }
    if v2:
        fields["quotaManagement"] = t.string("Who manages quota on the worker clusters.", enum=["Manual", "Automated"])
    return root_schema(
        "MultiKueueConfig",
        "the worker clusters of a MultiKueue admission check.",
        {"spec": t.obj(fields, "The clusters.", required=["clusters"])},
    )


def multikueue_cluster_schema(version: str) -> t.Schema:
    profile = t.obj(
        {"name": t.string("ClusterProfile name.", max_length=256, min_length=1)},
        "A ClusterProfile to reach the cluster through.",
        required=["name"],
    )
    location_type = t.string(
        "Where location points: a Secret in the kueue namespace or a file path.",
        enum=["Secret", "Path"],
        default="Secret",
    )
    if version == VERSION_V1BETA2:
        kube_config = t.obj(
            {"location": t.string("Secret name or path.", max_length=256, min_length=1), "locationType": location_type},
            "The kubeconfig to reach the cluster with.",
            required=["location"],
        )
        source = t.obj(
            {"clusterProfileRef": profile, "kubeConfig": kube_config},
            "How to reach the worker cluster.",
            rules=[
                t.rule(
                    "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
                    "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
                )
            ],
        )
        spec = t.obj({"clusterSource": source}, "The worker cluster.", required=["clusterSource"])
    else:
        kube_config = t.obj(
            {"location": t.string("Secret name or path."), "locationType": location_type},
            "The kubeconfig to reach the cluster with.",
            required=["location", "locationType"],
        )
        spec = t.obj(
            {"clusterProfileRef": profile, "kubeConfig": kube_config}, "The worker cluster.", required=["kubeConfig"]
        )
    return root_schema(
        "MultiKueueCluster",
        "a worker cluster of MultiKueue.",
        {
            "spec": spec,
            "status": t.obj(
                {"conditions": status_conditions(version, "Active tells whether the cluster is connected.")}
            ),
        },
    )
