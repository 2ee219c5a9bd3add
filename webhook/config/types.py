"""The Configuration field tree with upstream's v1beta2 defaults, feature-gate defaults and ConfigError.

Mirrors `apis/config/v1beta2/configuration_types.go`, `defaults.go` and `pkg/features/kube_features.go`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

from webhook.api import fields, integrations, multikueue

_T = TypeVar("_T")

__all__ = [
    "AUTO_SELECTOR",
    "DEFAULT_CLIENT_BURST",
    "DEFAULT_CLIENT_QPS",
    "DEFAULT_HEALTH_PROBE_BIND_ADDRESS",
    "DEFAULT_JOB_FRAMEWORK",
    "DEFAULT_LEADER_ELECTION_ID",
    "DEFAULT_METRICS_BIND_ADDRESS",
    "DEFAULT_MULTIKUEUE_ORIGIN",
    "DEFAULT_NAMESPACE",
    "DEFAULT_REQUEUING_BACKOFF_BASE_SECONDS",
    "DEFAULT_REQUEUING_BACKOFF_MAX_SECONDS",
    "DEFAULT_VISIBILITY_BIND_PORT",
    "DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT_S",
    "DEFAULT_WEBHOOK_CERT_DIR",
    "DEFAULT_WEBHOOK_PORT",
    "DEFAULT_WEBHOOK_SECRET_NAME",
    "DEFAULT_WEBHOOK_SERVICE_NAME",
    "FEATURE_GATE_DEFAULTS",
    "LOCKED_FEATURE_GATES",
    "MULTIKUEUE_DISPATCHER_ALL_AT_ONCE",
    "MULTIKUEUE_DISPATCHER_INCREMENTAL",
    "NAMESPACE_NAME_LABEL",
    "QUOTA_CHECK_BLOCK_UNDECLARED",
    "QUOTA_CHECK_IGNORE_UNDECLARED",
    "AdmissionFairSharing",
    "ClientConnection",
    "ConfigError",
    "Configuration",
    "ControllerConfig",
    "DeviceClassMapping",
    "FairSharing",
    "Feature",
    "Health",
    "IncrementalDispatcherConfig",
    "Integrations",
    "InternalCertManagement",
    "LeaderElection",
    "LocalQueueMetrics",
    "Metrics",
    "MetricsCustomLabel",
    "MultiKueue",
    "ObjectRetentionPolicies",
    "RequeuingStrategy",
    "ResourceTransformation",
    "Resources",
    "TLSOptions",
    "VisibilityServer",
    "WaitForPodsReady",
    "Webhook",
    "WorkloadRetentionPolicy",
    "default_managed_jobs_namespace_selector",
    "invalid_stringer",
    "operator_namespace",
    "too_many",
]


# --- defaults (apis/config/v1beta2/defaults.go) -------------------------------------------------

DEFAULT_NAMESPACE = "kueue-system"
DEFAULT_WEBHOOK_SERVICE_NAME = "kueue-webhook-service"
DEFAULT_WEBHOOK_SECRET_NAME = "kueue-webhook-server-cert"
DEFAULT_WEBHOOK_PORT = 9443
DEFAULT_WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
DEFAULT_HEALTH_PROBE_BIND_ADDRESS = ":8081"
DEFAULT_METRICS_BIND_ADDRESS = ":8443"
DEFAULT_LEADER_ELECTION_ID = "c1f6bfd2.kueue.x-k8s.io"
DEFAULT_CLIENT_QPS = 300.0
DEFAULT_CLIENT_BURST = 500
DEFAULT_JOB_FRAMEWORK = integrations.BATCH_JOB.name
DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT_S = 30 * 60.0
DEFAULT_REQUEUING_BACKOFF_BASE_SECONDS = 60
DEFAULT_REQUEUING_BACKOFF_MAX_SECONDS = 3600
DEFAULT_VISIBILITY_BIND_PORT = 8082
DEFAULT_MULTIKUEUE_ORIGIN = multikueue.DEFAULT_ORIGIN
MULTIKUEUE_DISPATCHER_ALL_AT_ONCE = multikueue.DISPATCHER_ALL_AT_ONCE
MULTIKUEUE_DISPATCHER_INCREMENTAL = multikueue.DISPATCHER_INCREMENTAL

_SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class Feature(StrEnum):
    """Every feature gate of upstream's `pkg/features/kube_features.go`, by its exact name.

    Code asks `Configuration.feature_enabled(Feature.X)`, so a misspelt gate is an attribute (or
    type) error rather than a gate that is silently off. The `featureGates` map of the
    Configuration file keeps plain strings; a StrEnum member equals (and hashes as) its name.
    """

    ADMISSION_FAIR_SHARING = "AdmissionFairSharing"
    ADMISSION_GATED_BY = "AdmissionGatedBy"
    ASSIGN_QUEUE_LABELS_FOR_PODS = "AssignQueueLabelsForPods"
    CLEANUP_PROVISIONING_REQUESTS_ON_EVICTION = "CleanupProvisioningRequestsOnEviction"
    CONCURRENT_ADMISSION = "ConcurrentAdmission"
    CUSTOM_METRIC_LABELS = "CustomMetricLabels"
    DEFER_RAY_SERVICE_FINALIZATION_FOR_REDIS_CLEANUP = "DeferRayServiceFinalizationForRedisCleanup"
    DISABLE_WAIT_FOR_PODS_READY = "DisableWaitForPodsReady"
    ELASTIC_JOBS_VIA_WORKLOAD_SLICES = "ElasticJobsViaWorkloadSlices"
    ELASTIC_JOBS_VIA_WORKLOAD_SLICES_WITH_TAS = "ElasticJobsViaWorkloadSlicesWithTAS"
    FAILURE_RECOVERY_POLICY = "FailureRecoveryPolicy"
    FAIR_SHARING_PREEMPT_WITHIN_NOMINAL = "FairSharingPreemptWithinNominal"
    FAIR_SHARING_PRIORITIZE_NON_BORROWING = "FairSharingPrioritizeNonBorrowing"
    FAST_QUOTA_RELEASE_IN_POD_INTEGRATION = "FastQuotaReleaseInPodIntegration"
    FINISH_ORPHANED_WORKLOADS = "FinishOrphanedWorkloads"
    FLAVOR_FUNGIBILITY = "FlavorFungibility"
    FLAVOR_FUNGIBILITY_PRESERVE_SCAN_PROGRESS = "FlavorFungibilityPreserveScanProgress"
    HIERARCHICAL_COHORTS = "HierarchicalCohorts"
    KUEUE_DRA_INTEGRATION = "KueueDRAIntegration"
    KUEUE_DRA_INTEGRATION_CONSUMABLE_CAPACITY = "KueueDRAIntegrationConsumableCapacity"
    KUEUE_DRA_INTEGRATION_EXTENDED_RESOURCE = "KueueDRAIntegrationExtendedResource"
    KUEUE_DRA_INTEGRATION_PARTITIONABLE_DEVICES = "KueueDRAIntegrationPartitionableDevices"
    KUEUE_DRA_REJECT_WORKLOADS_WHEN_DRA_DISABLED = "KueueDRARejectWorkloadsWhenDRADisabled"
    LOCAL_QUEUE_METRICS = "LocalQueueMetrics"
    LWS_IMMUTABLE_GROUP_SIZE = "LWSImmutableGroupSize"
    MANAGED_JOBS_NAMESPACE_SELECTOR_ALWAYS_RESPECTED = "ManagedJobsNamespaceSelectorAlwaysRespected"
    METRICS_FOR_COHORTS = "MetricsForCohorts"
    METRIC_FOR_WORKLOAD_CREATION_LATENCY = "MetricForWorkloadCreationLatency"
    MULTI_KUEUE = "MultiKueue"
    MULTI_KUEUE_ADAPTERS_FOR_CUSTOM_JOBS = "MultiKueueAdaptersForCustomJobs"
    MULTI_KUEUE_ALLOW_INSECURE_KUBECONFIGS = "MultiKueueAllowInsecureKubeconfigs"
    MULTI_KUEUE_CLUSTER_PROFILE = "MultiKueueClusterProfile"
    MULTI_KUEUE_INCREMENTAL_DISPATCHER_CONFIG = "MultiKueueIncrementalDispatcherConfig"
    MULTI_KUEUE_INCREMENTAL_DISPATCHER_RESPECT_CONFIG_ORDER = "MultiKueueIncrementalDispatcherRespectConfigOrder"
    MULTI_KUEUE_KUBE_CONFIG_PATH_VALIDATION = "MultiKueueKubeConfigPathValidation"
    MULTI_KUEUE_MANAGER_QUOTA_AUTOMATION = "MultiKueueManagerQuotaAutomation"
    MULTI_KUEUE_ORCHESTRATED_PREEMPTION = "MultiKueueOrchestratedPreemption"
    MULTI_KUEUE_REDO_ADMISSION_ON_EVICTION_IN_WORKER = "MultiKueueRedoAdmissionOnEvictionInWorker"
    MULTI_KUEUE_REMOTE_SPEC_SYNC = "MultiKueueRemoteSpecSync"
    MULTI_KUEUE_WAIT_FOR_WORKLOAD_ADMITTED = "MultiKueueWaitForWorkloadAdmitted"
    OBJECT_RETENTION_POLICIES = "ObjectRetentionPolicies"
    PARTIAL_ADMISSION = "PartialAdmission"
    POD_INTEGRATION_VALIDATE_GROUP_OWNER = "PodIntegrationValidateGroupOwner"
    PRIORITIZE_PREEMPTOR_WORKLOADS = "PrioritizePreemptorWorkloads"
    PRIORITY_BOOST = "PriorityBoost"
    PRIORITY_SORTING_WITHIN_COHORT = "PrioritySortingWithinCohort"
    PROPAGATE_BATCH_JOB_LABELS_TO_WORKLOAD = "PropagateBatchJobLabelsToWorkload"
    QUOTA_CHECK_STRATEGY = "QuotaCheckStrategy"
    RECLAIMABLE_PODS = "ReclaimablePods"
    RECOMPUTE_ASSIGNMENT_UPON_PREEMPTION_TARGETS_OVERLAP = "RecomputeAssignmentUponPreemptionTargetsOverlap"
    REJECT_UPDATES_TO_CQ_WITH_INVALID_ON_FLAVORS = "RejectUpdatesToCQWithInvalidOnFlavors"
    REMOVE_FINALIZERS_WITH_STRICT_PATCH = "RemoveFinalizersWithStrictPatch"
    SCHEDULER_LIBRARY_INTEGRATION = "SchedulerLibraryIntegration"
    SCHEDULER_LONG_REQUEUE_INTERVAL = "SchedulerLongRequeueInterval"
    SCHEDULER_TIMESTAMP_PREEMPTION_BUFFER = "SchedulerTimestampPreemptionBuffer"
    SCHEDULING_EQUIVALENCE_HASHING = "SchedulingEquivalenceHashing"
    SHORT_WORKLOAD_NAMES = "ShortWorkloadNames"
    SKIP_ANCESTOR_CHECK_FOR_DELETED_WORKLOADS = "SkipAncestorCheckForDeletedWorkloads"
    SKIP_FINALIZERS_FOR_PODS_SUSPENDED_BY_PARENT = "SkipFinalizersForPodsSuspendedByParent"
    SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS = "SkipReassignmentForPodOwnedWorkloads"
    SPARK_APPLICATION_INTEGRATION = "SparkApplicationIntegration"
    TAS_ASSIGNMENTS_ENCODING_BY_HOSTNAME_PREFIX = "TASAssignmentsEncodingByHostnamePrefix"
    TAS_BALANCED_PLACEMENT = "TASBalancedPlacement"
    TAS_CACHE_NODE_MATCH_RESULTS = "TASCacheNodeMatchResults"
    TAS_CACHE_TOPOLOGY_TREE = "TASCacheTopologyTree"
    TAS_CACHING_REMAINING_RESOURCES = "TASCachingRemainingResources"
    TAS_FAILED_NODE_REPLACEMENT = "TASFailedNodeReplacement"
    TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST = "TASFailedNodeReplacementFailFast"
    TAS_HANDLE_OVERLAPPING_FLAVORS = "TASHandleOverlappingFlavors"
    TAS_MULTI_LAYER_TOPOLOGY = "TASMultiLayerTopology"
    TAS_PROFILE_MIXED = "TASProfileMixed"
    TAS_RECOMPUTE_ASSIGNMENT_WITHIN_SCHEDULING_CYCLE = "TASRecomputeAssignmentWithinSchedulingCycle"
    TAS_REPLACE_NODE_DUE_TO_NOT_READY_OVER_FIXED_TIME = "TASReplaceNodeDueToNotReadyOverFixedTime"
    TAS_REPLACE_NODE_ON_NODE_TAINTS = "TASReplaceNodeOnNodeTaints"
    TAS_REPLACE_NODE_ON_POD_TERMINATION = "TASReplaceNodeOnPodTermination"
    TAS_RESPECT_NODE_AFFINITY_PREFERRED = "TASRespectNodeAffinityPreferred"
    TAS_VALIDATE_WORKLOAD_SLICE_SIZE = "TASValidateWorkloadSliceSize"
    TLS_OPTIONS = "TLSOptions"
    TOPOLOGY_AWARE_SCHEDULING = "TopologyAwareScheduling"
    UNADMITTED_WORKLOADS_EXPLICIT_STATUS = "UnadmittedWorkloadsExplicitStatus"
    UNADMITTED_WORKLOADS_OBSERVABILITY = "UnadmittedWorkloadsObservability"
    VALIDATE_RAY_AND_SPARK_JOB_UPDATES = "ValidateRayAndSparkJobUpdates"
    VECTORIZED_RESOURCE_REQUESTS = "VectorizedResourceRequests"
    VISIBILITY_ON_DEMAND = "VisibilityOnDemand"
    WORKLOAD_IDENTIFIER_ANNOTATIONS = "WorkloadIdentifierAnnotations"
    WORKLOAD_PRIORITY_CLASS_DEFAULTING = "WorkloadPriorityClassDefaulting"
    WORKLOAD_REQUEST_USE_MERGE_PATCH = "WorkloadRequestUseMergePatch"
    WORKLOAD_VALIDATE_RESOURCES_ARE_NON_NEGATIVE = "WorkloadValidateResourcesAreNonNegative"
    WORKLOAD_VALIDATION_FOR_POD_SET_METADATA = "WorkloadValidationForPodSetMetadata"


# Gate -> default at this snapshot (pkg/features/kube_features.go, last versioned entry).
# fmt: off
_GATES_ON_BY_DEFAULT: tuple[Feature, ...] = (
    Feature.PARTIAL_ADMISSION, Feature.FLAVOR_FUNGIBILITY, Feature.VISIBILITY_ON_DEMAND,
    Feature.PRIORITY_SORTING_WITHIN_COHORT, Feature.FAIR_SHARING_PREEMPT_WITHIN_NOMINAL,
    Feature.FAIR_SHARING_PRIORITIZE_NON_BORROWING, Feature.MULTI_KUEUE, Feature.TOPOLOGY_AWARE_SCHEDULING,
    Feature.LOCAL_QUEUE_METRICS, Feature.TAS_PROFILE_MIXED, Feature.ADMISSION_FAIR_SHARING,
    Feature.TAS_FAILED_NODE_REPLACEMENT, Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES,
    Feature.TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST, Feature.TAS_REPLACE_NODE_ON_POD_TERMINATION,
    Feature.SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS,
    Feature.MANAGED_JOBS_NAMESPACE_SELECTOR_ALWAYS_RESPECTED,
    Feature.TAS_ASSIGNMENTS_ENCODING_BY_HOSTNAME_PREFIX, Feature.KUEUE_DRA_INTEGRATION,
    Feature.KUEUE_DRA_INTEGRATION_EXTENDED_RESOURCE, Feature.KUEUE_DRA_REJECT_WORKLOADS_WHEN_DRA_DISABLED,
    Feature.KUEUE_DRA_INTEGRATION_PARTITIONABLE_DEVICES, Feature.MULTI_KUEUE_ADAPTERS_FOR_CUSTOM_JOBS,
    Feature.RECLAIMABLE_PODS, Feature.TLS_OPTIONS,
    Feature.REMOVE_FINALIZERS_WITH_STRICT_PATCH, Feature.TAS_REPLACE_NODE_ON_NODE_TAINTS,
    Feature.ASSIGN_QUEUE_LABELS_FOR_PODS, Feature.TAS_MULTI_LAYER_TOPOLOGY,
    Feature.SCHEDULING_EQUIVALENCE_HASHING, Feature.ADMISSION_GATED_BY, Feature.FINISH_ORPHANED_WORKLOADS,
    Feature.MULTI_KUEUE_INCREMENTAL_DISPATCHER_CONFIG,
    Feature.MULTI_KUEUE_INCREMENTAL_DISPATCHER_RESPECT_CONFIG_ORDER, Feature.QUOTA_CHECK_STRATEGY,
    Feature.METRIC_FOR_WORKLOAD_CREATION_LATENCY, Feature.WORKLOAD_IDENTIFIER_ANNOTATIONS,
    Feature.METRICS_FOR_COHORTS,
    Feature.CLEANUP_PROVISIONING_REQUESTS_ON_EVICTION, Feature.TAS_HANDLE_OVERLAPPING_FLAVORS,
    Feature.TAS_RECOMPUTE_ASSIGNMENT_WITHIN_SCHEDULING_CYCLE,
    Feature.DEFER_RAY_SERVICE_FINALIZATION_FOR_REDIS_CLEANUP, Feature.TAS_CACHE_NODE_MATCH_RESULTS,
    Feature.TAS_CACHING_REMAINING_RESOURCES,
    Feature.VECTORIZED_RESOURCE_REQUESTS, Feature.WORKLOAD_VALIDATE_RESOURCES_ARE_NON_NEGATIVE,
    Feature.TAS_VALIDATE_WORKLOAD_SLICE_SIZE, Feature.WORKLOAD_VALIDATION_FOR_POD_SET_METADATA,
    Feature.LWS_IMMUTABLE_GROUP_SIZE, Feature.FLAVOR_FUNGIBILITY_PRESERVE_SCAN_PROGRESS,
    Feature.SKIP_ANCESTOR_CHECK_FOR_DELETED_WORKLOADS, Feature.MULTI_KUEUE_REMOTE_SPEC_SYNC,
    Feature.POD_INTEGRATION_VALIDATE_GROUP_OWNER, Feature.VALIDATE_RAY_AND_SPARK_JOB_UPDATES,
)
_GATES_OFF_BY_DEFAULT: tuple[Feature, ...] = (
    Feature.DISABLE_WAIT_FOR_PODS_READY, Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES_WITH_TAS,
    Feature.TAS_REPLACE_NODE_DUE_TO_NOT_READY_OVER_FIXED_TIME, Feature.TAS_BALANCED_PLACEMENT,
    Feature.KUEUE_DRA_INTEGRATION_CONSUMABLE_CAPACITY, Feature.WORKLOAD_REQUEST_USE_MERGE_PATCH,
    Feature.MULTI_KUEUE_CLUSTER_PROFILE, Feature.FAILURE_RECOVERY_POLICY, Feature.CUSTOM_METRIC_LABELS,
    Feature.SPARK_APPLICATION_INTEGRATION, Feature.MULTI_KUEUE_ORCHESTRATED_PREEMPTION,
    Feature.PRIORITY_BOOST, Feature.SHORT_WORKLOAD_NAMES, Feature.FAST_QUOTA_RELEASE_IN_POD_INTEGRATION,
    Feature.REJECT_UPDATES_TO_CQ_WITH_INVALID_ON_FLAVORS, Feature.CONCURRENT_ADMISSION,
    Feature.TAS_RESPECT_NODE_AFFINITY_PREFERRED, Feature.MULTI_KUEUE_MANAGER_QUOTA_AUTOMATION,
    Feature.UNADMITTED_WORKLOADS_EXPLICIT_STATUS, Feature.SCHEDULER_LIBRARY_INTEGRATION,
    Feature.PRIORITIZE_PREEMPTOR_WORKLOADS,
    # Off in v0.19.2 (`pkg/features/kube_features.go`); upstream's main turns some on for 0.20.
    Feature.RECOMPUTE_ASSIGNMENT_UPON_PREEMPTION_TARGETS_OVERLAP, Feature.MULTI_KUEUE_KUBE_CONFIG_PATH_VALIDATION,
    Feature.WORKLOAD_PRIORITY_CLASS_DEFAULTING, Feature.UNADMITTED_WORKLOADS_OBSERVABILITY,
    Feature.TAS_CACHE_TOPOLOGY_TREE, Feature.SCHEDULER_LONG_REQUEUE_INTERVAL,
    Feature.SCHEDULER_TIMESTAMP_PREEMPTION_BUFFER,
    # Deprecated, off and locked off (removed in 0.20).
    Feature.MULTI_KUEUE_ALLOW_INSECURE_KUBECONFIGS,
)
# GA and locked on in v0.19.2, their code paths always on here: setting them true is accepted, false refused.
_GATES_GRADUATED: tuple[Feature, ...] = (
    Feature.HIERARCHICAL_COHORTS,
    Feature.MULTI_KUEUE_REDO_ADMISSION_ON_EVICTION_IN_WORKER, Feature.MULTI_KUEUE_WAIT_FOR_WORKLOAD_ADMITTED,
    Feature.OBJECT_RETENTION_POLICIES, Feature.PROPAGATE_BATCH_JOB_LABELS_TO_WORKLOAD,
    Feature.SKIP_FINALIZERS_FOR_PODS_SUSPENDED_BY_PARENT,
)
# fmt: on
FEATURE_GATE_DEFAULTS: Mapping[Feature, bool] = MappingProxyType(
    {
        **dict.fromkeys(_GATES_ON_BY_DEFAULT, True),
        **dict.fromkeys(_GATES_OFF_BY_DEFAULT, False),
        **dict.fromkeys(_GATES_GRADUATED, True),
    }
)

# Gates with LockToDefault (GA, or deprecated and off): setting them to anything else is an error.
LOCKED_FEATURE_GATES: frozenset[Feature] = frozenset(
    {
        Feature.MANAGED_JOBS_NAMESPACE_SELECTOR_ALWAYS_RESPECTED,
        Feature.MULTI_KUEUE_ALLOW_INSECURE_KUBECONFIGS,
        *_GATES_GRADUATED,
    }
)


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


def operator_namespace() -> str:
    """The pod's namespace from its service-account mount, else `kueue-system` (getOperatorNamespace)."""
    try:
        with open(_SERVICE_ACCOUNT_NAMESPACE_FILE, encoding="utf-8") as f:
            ns = f.read().strip()
    except OSError:
        return DEFAULT_NAMESPACE
    return ns or DEFAULT_NAMESPACE


def default_managed_jobs_namespace_selector(namespace: str) -> Mapping[str, Any]:
    """`kubernetes.io/metadata.name NotIn [kube-system, <namespace>]`."""
    return MappingProxyType(
        {
            "matchExpressions": (
                MappingProxyType(
                    {
                        "key": NAMESPACE_NAME_LABEL,
                        "operator": "NotIn",
                        "values": ("kube-system", namespace),
                    }
                ),
            )
        }
    )


# Identity sentinel: "derive the selector from `namespace`" (an empty selector is a real value).
AUTO_SELECTOR: Mapping[str, Any] = MappingProxyType({})


# --- the field tree ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Webhook:
    port: int = DEFAULT_WEBHOOK_PORT
    host: str = ""
    cert_dir: str = DEFAULT_WEBHOOK_CERT_DIR


@dataclass(frozen=True, slots=True)
class InternalCertManagement:
    enable: bool = True
    webhook_service_name: str = DEFAULT_WEBHOOK_SERVICE_NAME
    webhook_secret_name: str = DEFAULT_WEBHOOK_SECRET_NAME


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """component-base LeaderElectionConfiguration after `RecommendedDefaultLeaderElectionConfiguration`."""

    leader_elect: bool = True
    resource_name: str = DEFAULT_LEADER_ELECTION_ID
    resource_namespace: str = ""  # empty: the pod's namespace
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0
    resource_lock: str = "leases"


@dataclass(frozen=True, slots=True)
class Health:
    health_probe_bind_address: str = DEFAULT_HEALTH_PROBE_BIND_ADDRESS
    # controller-runtime's defaults when the file leaves these empty.
    readiness_endpoint_name: str = "/readyz"
    liveness_endpoint_name: str = "/healthz"


@dataclass(frozen=True, slots=True)
class LocalQueueMetrics:
    enable: bool = True
    local_queue_selector: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MetricsCustomLabel:
    name: str
    source_label_key: str = ""
    source_annotation_key: str = ""
    source_kind: str = "ClusterQueue"  # a nil sourceKind means ClusterQueue
    tracked_values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Metrics:
    bind_address: str = DEFAULT_METRICS_BIND_ADDRESS
    enable_cluster_queue_resources: bool = False
    local_queue_metrics: LocalQueueMetrics = field(default_factory=LocalQueueMetrics)
    custom_labels: tuple[MetricsCustomLabel, ...] = ()


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    group_kind_concurrency: Mapping[str, int] = field(default_factory=_empty)
    cache_sync_timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class ClientConnection:
    qps: float = DEFAULT_CLIENT_QPS
    burst: int = DEFAULT_CLIENT_BURST


@dataclass(frozen=True, slots=True)
class RequeuingStrategy:
    timestamp: str = "Eviction"
    backoff_limit_count: int | None = None  # None: requeue forever
    backoff_base_seconds: int = DEFAULT_REQUEUING_BACKOFF_BASE_SECONDS
    backoff_max_seconds: int = DEFAULT_REQUEUING_BACKOFF_MAX_SECONDS


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    timeout_s: float = DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT_S
    block_admission: bool = False
    requeuing_strategy: RequeuingStrategy = field(default_factory=RequeuingStrategy)
    recovery_timeout_s: float | None = None  # None here means "same as timeout_s" (see __post_init__)

    def __post_init__(self) -> None:
        if self.recovery_timeout_s is None:
            object.__setattr__(self, "recovery_timeout_s", self.timeout_s)


@dataclass(frozen=True, slots=True)
class Integrations:
    frameworks: tuple[str, ...] = (DEFAULT_JOB_FRAMEWORK,)
    external_frameworks: tuple[str, ...] = ()
    label_keys_to_copy: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IncrementalDispatcherConfig:
    step_size: int | None = None


@dataclass(frozen=True, slots=True)
class MultiKueue:
    gc_interval_s: float = multikueue.DEFAULT_GC_INTERVAL_S
    origin: str = DEFAULT_MULTIKUEUE_ORIGIN
    worker_lost_timeout_s: float = multikueue.DEFAULT_WORKER_LOST_TIMEOUT_S
    dispatcher_name: str = MULTIKUEUE_DISPATCHER_ALL_AT_ONCE
    external_frameworks: tuple[str, ...] = ()
    # Set (step size 3 by default) when dispatcher_name is the incremental dispatcher.
    incremental_dispatcher_config: IncrementalDispatcherConfig | None = None
    cluster_profile: Mapping[str, Any] | None = None  # kept as decoded, not interpreted


@dataclass(frozen=True, slots=True)
class FairSharing:
    preemption_strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@dataclass(frozen=True, slots=True)
class AdmissionFairSharing:
    usage_half_life_time_s: float = 0.0
    usage_sampling_interval_s: float = 300.0
    resource_weights: Mapping[str, float] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class ResourceTransformation:
    input: str
    strategy: str = "Retain"
    multiply_by: str = ""
    outputs: Mapping[str, str] = field(default_factory=_empty)


# resources.quotaCheckStrategy values (`configapi.QuotaCheck{Ignore,Block}Undeclared`).
QUOTA_CHECK_IGNORE_UNDECLARED = "IgnoreUndeclared"
QUOTA_CHECK_BLOCK_UNDECLARED = "BlockUndeclared"


@dataclass(frozen=True, slots=True)
class DeviceClassMapping:
    """`resources.deviceClassMappings[]`: the DeviceClasses whose devices count as resource `name`.
    `sources` (counter / capacity quota, v1beta2 only) is kept as decoded: `check_implemented`
    refuses it."""

    name: str = ""
    device_class_names: tuple[str, ...] = ()
    sources: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Resources:
    exclude_resource_prefixes: tuple[str, ...] = ()
    transformations: tuple[ResourceTransformation, ...] = ()
    quota_check_strategy: str | None = None  # None behaves as BlockUndeclared
    device_class_mappings: tuple[DeviceClassMapping, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkloadRetentionPolicy:
    after_finished_s: float | None = None  # None: keep forever
    after_deactivated_by_kueue_s: float | None = None


@dataclass(frozen=True, slots=True)
class ObjectRetentionPolicies:
    workloads: WorkloadRetentionPolicy = field(default_factory=WorkloadRetentionPolicy)


@dataclass(frozen=True, slots=True)
class VisibilityServer:
    bind_address: str | None = None
    bind_port: int = DEFAULT_VISIBILITY_BIND_PORT


@dataclass(frozen=True, slots=True)
class TLSOptions:
    min_version: str = ""
    cipher_suites: tuple[str, ...] = ()
    curve_preferences: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Configuration:
    """The whole configuration. `Configuration()` equals loading no file (v1beta2 defaults)."""

    namespace: str = field(default_factory=operator_namespace)
    manage_jobs_without_queue_name: bool = False
    # Defaults to `kubernetes.io/metadata.name NotIn [kube-system, <namespace>]`.
    managed_jobs_namespace_selector: Mapping[str, Any] = field(default_factory=lambda: AUTO_SELECTOR)
    integrations: Integrations = field(default_factory=Integrations)
    webhook: Webhook = field(default_factory=Webhook)
    internal_cert_management: InternalCertManagement = field(default_factory=InternalCertManagement)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    health: Health = field(default_factory=Health)
    metrics: Metrics = field(default_factory=Metrics)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    pprof_bind_address: str = ""
    tls: TLSOptions | None = None
    # None = disabled: a v1beta1 file without `enable: true`, or gate DisableWaitForPodsReady.
    wait_for_pods_ready: WaitForPodsReady | None = field(default_factory=WaitForPodsReady)
    multi_kueue: MultiKueue = field(default_factory=MultiKueue)
    fair_sharing: FairSharing | None = None
    admission_fair_sharing: AdmissionFairSharing | None = None
    resources: Resources = field(default_factory=Resources)
    object_retention_policies: ObjectRetentionPolicies = field(default_factory=ObjectRetentionPolicies)
    visibility_server: VisibilityServer = field(default_factory=VisibilityServer)
    feature_gates: Mapping[str, bool] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        # waitforpodsready.Enabled: the gate wins over the configuration.
        if self.feature_gates.get(Feature.DISABLE_WAIT_FOR_PODS_READY, False):
            object.__setattr__(self, "wait_for_pods_ready", None)
        if self.managed_jobs_namespace_selector is AUTO_SELECTOR:
            object.__setattr__(
                self,
                "managed_jobs_namespace_selector",
                default_managed_jobs_namespace_selector(self.namespace),
            )

    def feature_enabled(self, gate: Feature) -> bool:
        """The gate's value from `featureGates`, else upstream's default."""
        if gate in self.feature_gates:
            return self.feature_gates[gate]
        return FEATURE_GATE_DEFAULTS[gate]

    @property
    def ignore_undeclared_resources(self) -> bool:
        """quotaCheckStrategy IgnoreUndeclared under the QuotaCheckStrategy gate (upstream's
        `quotaCheckStrategy` in cmd/kueue/main.go with `IgnoreUndeclaredResources`)."""
        return (
            self.feature_enabled(Feature.QUOTA_CHECK_STRATEGY)
            and self.resources.quota_check_strategy == QUOTA_CHECK_IGNORE_UNDECLARED
        )

    @property
    def wait_for_pods_ready_enabled(self) -> bool:
        return self.wait_for_pods_ready is not None


# --- errors ---------------------------------------------------------------------------------------


class ConfigError(ValueError):
    """The file cannot be read, decoded or validated. The message names the field path.

    `errors` holds the field errors when validation failed (empty for read/decode failures).
    """

    def __init__(self, message: str, errors: Sequence[fields.FieldError] = ()) -> None:
        super().__init__(message)
        self.errors: tuple[fields.FieldError, ...] = tuple(errors)


def invalid_stringer(path: str, rendered: str, detail: str) -> fields.FieldError:
    """`field.Invalid` of a Go value printed by its String() method (Durations): unquoted."""
    return fields.FieldError(fields.Kind.INVALID, path, f"{rendered}: {detail}")


too_many = fields.too_many  # kept under config's name: the Configuration's count limits use it
