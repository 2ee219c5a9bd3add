"""The Kueue `Configuration` file, parsed once at startup into frozen dataclasses.

Mirrors, at kubernetes-sigs/kueue commit ff69552e79:

* `apis/config/v1beta2/configuration_types.go` and `defaults.go` — the field tree and its defaults;
* `apis/config/v1beta1/configuration_types.go`, `defaults.go`, `configuration_conversion.go` — the older
  version, defaulted as v1beta1 and then converted;
* `pkg/config/config.go` (strict decoding, "no file = all defaults") and `pkg/config/validation.go`;
* `pkg/features/kube_features.go` for the feature-gate defaults used by `Configuration.feature_enabled`.

Every field of `Configuration` carries upstream's v1beta2 default, so `Configuration()` is the
configuration of a manager started without `--config`. Durations are float seconds (`*_s`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "FEATURE_GATE_DEFAULTS",
    "AdmissionFairSharing",
    "ClientConnection",
    "ConfigError",
    "Configuration",
    "ControllerConfig",
    "FairSharing",
    "Health",
    "Integrations",
    "InternalCertManagement",
    "LeaderElection",
    "LocalQueueMetrics",
    "Metrics",
    "MultiKueue",
    "ObjectRetentionPolicies",
    "RequeuingStrategy",
    "ResourceTransformation",
    "Resources",
    "VisibilityServer",
    "WaitForPodsReady",
    "Webhook",
    "WorkloadRetentionPolicy",
    "load",
    "parse",
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
DEFAULT_JOB_FRAMEWORK = "batch/job"
DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT_S = 30 * 60.0
DEFAULT_REQUEUING_BACKOFF_BASE_SECONDS = 60
DEFAULT_REQUEUING_BACKOFF_MAX_SECONDS = 3600
DEFAULT_VISIBILITY_BIND_PORT = 8082
DEFAULT_MULTIKUEUE_ORIGIN = "multikueue"
MULTIKUEUE_DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
MULTIKUEUE_DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"

_SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
_NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# Gate name -> default at this snapshot (pkg/features/kube_features.go, last versioned entry).
FEATURE_GATE_DEFAULTS: Mapping[str, bool] = MappingProxyType(
    {
        "PartialAdmission": True,
        "FlavorFungibility": True,
        "VisibilityOnDemand": True,
        "DisableWaitForPodsReady": False,
        "PrioritySortingWithinCohort": True,
        "FairSharingPreemptWithinNominal": True,
        "FairSharingPrioritizeNonBorrowing": True,
        "MultiKueue": True,
        "TopologyAwareScheduling": True,
        "LocalQueueMetrics": True,
        "TASProfileMixed": True,
        "AdmissionFairSharing": True,
        "TASFailedNodeReplacement": True,
        "ElasticJobsViaWorkloadSlices": True,
        "ElasticJobsViaWorkloadSlicesWithTAS": False,
        "TASFailedNodeReplacementFailFast": True,
        "TASReplaceNodeOnPodTermination": True,
        "SkipReassignmentForPodOwnedWorkloads": True,
        "TASReplaceNodeDueToNotReadyOverFixedTime": False,
        "ManagedJobsNamespaceSelectorAlwaysRespected": True,
        "TASBalancedPlacement": False,
        "TASAssignmentsEncodingByHostnamePrefix": True,
        "KueueDRAIntegration": True,
        "KueueDRAIntegrationExtendedResource": True,
        "KueueDRARejectWorkloadsWhenDRADisabled": True,
        "KueueDRAIntegrationPartitionableDevices": True,
        "KueueDRAIntegrationConsumableCapacity": False,
        "MultiKueueAdaptersForCustomJobs": True,
        "WorkloadRequestUseMergePatch": False,
        "MultiKueueKubeConfigPathValidation": True,
        "ReclaimablePods": True,
        "MultiKueueClusterProfile": False,
        "FailureRecoveryPolicy": False,
        "TLSOptions": True,
        "RemoveFinalizersWithStrictPatch": True,
        "TASReplaceNodeOnNodeTaints": True,
        "AssignQueueLabelsForPods": True,
        "TASMultiLayerTopology": True,
        "SchedulingEquivalenceHashing": True,
        "CustomMetricLabels": False,
        "SparkApplicationIntegration": False,
        "MultiKueueOrchestratedPreemption": False,
        "PriorityBoost": False,
        "AdmissionGatedBy": True,
        "ShortWorkloadNames": False,
        "FastQuotaReleaseInPodIntegration": False,
        "RejectUpdatesToCQWithInvalidOnFlavors": False,
        "FinishOrphanedWorkloads": True,
        "MultiKueueIncrementalDispatcherConfig": True,
        "MultiKueueIncrementalDispatcherRespectConfigOrder": True,
        "ConcurrentAdmission": False,
        "QuotaCheckStrategy": True,
        "MetricForWorkloadCreationLatency": True,
        "TASRespectNodeAffinityPreferred": False,
        "MultiKueueManagerQuotaAutomation": False,
        "WorkloadIdentifierAnnotations": True,
        "WorkloadPriorityClassDefaulting": True,
        "MetricsForCohorts": True,
        "CleanupProvisioningRequestsOnEviction": True,
        "TASHandleOverlappingFlavors": True,
        "UnadmittedWorkloadsObservability": True,
        "TASRecomputeAssignmentWithinSchedulingCycle": True,
        "UnadmittedWorkloadsExplicitStatus": False,
        "DeferRayServiceFinalizationForRedisCleanup": True,
        "TASCacheNodeMatchResults": True,
        "TASCachingRemainingResources": True,
        "TASCacheTopologyTree": True,
        "SchedulerLibraryIntegration": False,
        "VectorizedResourceRequests": True,
        "WorkloadValidateResourcesAreNonNegative": True,
        "TASValidateWorkloadSliceSize": True,
        "WorkloadValidationForPodSetMetadata": True,
        "PrioritizePreemptorWorkloads": False,
        "LWSImmutableGroupSize": True,
        "FlavorFungibilityPreserveScanProgress": True,
        "SkipAncestorCheckForDeletedWorkloads": True,
        "MultiKueueRemoteSpecSync": True,
        "RecomputeAssignmentUponPreemptionTargetsOverlap": True,
        "PodIntegrationValidateGroupOwner": True,
        "ValidateRayAndSparkJobUpdates": True,
    }
)

# Gates at GA with LockToDefault: setting them to anything else is an error.
LOCKED_FEATURE_GATES: frozenset[str] = frozenset(
    {"ManagedJobsNamespaceSelectorAlwaysRespected", "TLSOptions"}
)


class ConfigError(ValueError):
    """The configuration file cannot be read, decoded or validated; the message names the field path."""


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
                        "key": _NAMESPACE_NAME_LABEL,
                        "operator": "NotIn",
                        "values": ("kube-system", namespace),
                    }
                ),
            )
        }
    )


# Identity sentinel: "derive the selector from `namespace`" (an empty selector is a real value).
_AUTO_SELECTOR: Mapping[str, Any] = MappingProxyType({})


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
    source_kind: str = "ClusterQueue"
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
class MultiKueue:
    gc_interval_s: float = 60.0
    origin: str = DEFAULT_MULTIKUEUE_ORIGIN
    worker_lost_timeout_s: float = 15 * 60.0
    dispatcher_name: str = MULTIKUEUE_DISPATCHER_ALL_AT_ONCE
    external_frameworks: tuple[str, ...] = ()
    incremental_dispatcher_step_size: int | None = None  # 3 when dispatcher_name is the incremental one
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


@dataclass(frozen=True, slots=True)
class Resources:
    exclude_resource_prefixes: tuple[str, ...] = ()
    transformations: tuple[ResourceTransformation, ...] = ()
    quota_check_strategy: str | None = None  # None behaves as BlockUndeclared
    device_class_mappings: tuple[Mapping[str, Any], ...] = ()  # kept as decoded, not interpreted


@dataclass(frozen=True, slots=True)
class WorkloadRetentionPolicy:
    after_finished_s: float | None = None  # None: keep forever
    after_deactivated_by_kueue_s: float | None = None


@dataclass(frozen=True, slots=True)
class ObjectRetentionPolicies:
    workloads: WorkloadRetentionPolicy = field(default_factory=WorkloadRetentionPolicy)


@dataclass(frozen=True, slots=True)
class VisibilityServer:
    bind_address: str = ""
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
    managed_jobs_namespace_selector: Mapping[str, Any] = field(default_factory=lambda: _AUTO_SELECTOR)
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
    # v1beta2: present (hence enabled) unless the file is v1beta1 without `enable: true`.
    wait_for_pods_ready: WaitForPodsReady | None = field(default_factory=WaitForPodsReady)
    multi_kueue: MultiKueue = field(default_factory=MultiKueue)
    fair_sharing: FairSharing | None = None
    admission_fair_sharing: AdmissionFairSharing | None = None
    resources: Resources = field(default_factory=Resources)
    object_retention_policies: ObjectRetentionPolicies = field(default_factory=ObjectRetentionPolicies)
    visibility_server: VisibilityServer = field(default_factory=VisibilityServer)
    feature_gates: Mapping[str, bool] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        if self.managed_jobs_namespace_selector is _AUTO_SELECTOR:
            object.__setattr__(
                self,
                "managed_jobs_namespace_selector",
                default_managed_jobs_namespace_selector(self.namespace),
            )

    def feature_enabled(self, name: str) -> bool:
        """The gate's value from `featureGates`, else upstream's default; unknown gates are off."""
        if name in self.feature_gates:
            return self.feature_gates[name]
        return FEATURE_GATE_DEFAULTS.get(name, False)

    @property
    def wait_for_pods_ready_enabled(self) -> bool:
        """waitForPodsReady is on when configured and not switched off by `DisableWaitForPodsReady`."""
        return self.wait_for_pods_ready is not None and not self.feature_enabled("DisableWaitForPodsReady")


def load(path: str | None) -> Configuration:
    """Read and parse the file at `path`; `None` or "" gives the defaults (pkg/config/config.go Load)."""
    if not path:
        return Configuration()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError(f"open {path}: {exc.strerror}") from exc
    return parse(text)


def parse(text: str) -> Configuration:
    """Decode (strictly), default, convert and validate one Configuration document."""
    raise ConfigError("configuration decoding is not implemented yet")
