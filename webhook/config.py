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

import ipaddress
import json
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from webhook.api import fields, quantity, selector

_T = TypeVar("_T")

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
# fmt: off
_GATES_ON_BY_DEFAULT = (
    "PartialAdmission", "FlavorFungibility", "VisibilityOnDemand", "PrioritySortingWithinCohort",
    "FairSharingPreemptWithinNominal", "FairSharingPrioritizeNonBorrowing", "MultiKueue",
    "TopologyAwareScheduling", "LocalQueueMetrics", "TASProfileMixed", "AdmissionFairSharing",
    "TASFailedNodeReplacement", "ElasticJobsViaWorkloadSlices", "TASFailedNodeReplacementFailFast",
    "TASReplaceNodeOnPodTermination", "SkipReassignmentForPodOwnedWorkloads",
    "ManagedJobsNamespaceSelectorAlwaysRespected", "TASAssignmentsEncodingByHostnamePrefix",
    "KueueDRAIntegration", "KueueDRAIntegrationExtendedResource", "KueueDRARejectWorkloadsWhenDRADisabled",
    "KueueDRAIntegrationPartitionableDevices", "MultiKueueAdaptersForCustomJobs",
    "MultiKueueKubeConfigPathValidation", "ReclaimablePods", "TLSOptions",
    "RemoveFinalizersWithStrictPatch", "TASReplaceNodeOnNodeTaints", "AssignQueueLabelsForPods",
    "TASMultiLayerTopology", "SchedulingEquivalenceHashing", "AdmissionGatedBy", "FinishOrphanedWorkloads",
    "MultiKueueIncrementalDispatcherConfig", "MultiKueueIncrementalDispatcherRespectConfigOrder",
    "QuotaCheckStrategy", "MetricForWorkloadCreationLatency", "WorkloadIdentifierAnnotations",
    "WorkloadPriorityClassDefaulting", "MetricsForCohorts", "CleanupProvisioningRequestsOnEviction",
    "TASHandleOverlappingFlavors", "UnadmittedWorkloadsObservability",
    "TASRecomputeAssignmentWithinSchedulingCycle", "DeferRayServiceFinalizationForRedisCleanup",
    "TASCacheNodeMatchResults", "TASCachingRemainingResources", "TASCacheTopologyTree",
    "VectorizedResourceRequests", "WorkloadValidateResourcesAreNonNegative", "TASValidateWorkloadSliceSize",
    "WorkloadValidationForPodSetMetadata", "LWSImmutableGroupSize", "FlavorFungibilityPreserveScanProgress",
    "SkipAncestorCheckForDeletedWorkloads", "MultiKueueRemoteSpecSync",
    "RecomputeAssignmentUponPreemptionTargetsOverlap", "PodIntegrationValidateGroupOwner",
    "ValidateRayAndSparkJobUpdates",
)
_GATES_OFF_BY_DEFAULT = (
    "DisableWaitForPodsReady", "ElasticJobsViaWorkloadSlicesWithTAS",
    "TASReplaceNodeDueToNotReadyOverFixedTime", "TASBalancedPlacement",
    "KueueDRAIntegrationConsumableCapacity", "WorkloadRequestUseMergePatch", "MultiKueueClusterProfile",
    "FailureRecoveryPolicy", "CustomMetricLabels", "SparkApplicationIntegration",
    "MultiKueueOrchestratedPreemption", "PriorityBoost", "ShortWorkloadNames",
    "FastQuotaReleaseInPodIntegration", "RejectUpdatesToCQWithInvalidOnFlavors", "ConcurrentAdmission",
    "TASRespectNodeAffinityPreferred", "MultiKueueManagerQuotaAutomation",
    "UnadmittedWorkloadsExplicitStatus", "SchedulerLibraryIntegration", "PrioritizePreemptorWorkloads",
)
# fmt: on
FEATURE_GATE_DEFAULTS: Mapping[str, bool] = MappingProxyType(
    {**dict.fromkeys(_GATES_ON_BY_DEFAULT, True), **dict.fromkeys(_GATES_OFF_BY_DEFAULT, False)}
)

# Gates at GA with LockToDefault: setting them to anything else is an error.
LOCKED_FEATURE_GATES: frozenset[str] = frozenset(
    {"ManagedJobsNamespaceSelectorAlwaysRespected", "TLSOptions"}
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
    gc_interval_s: float = 60.0
    origin: str = DEFAULT_MULTIKUEUE_ORIGIN
    worker_lost_timeout_s: float = 15 * 60.0
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
        if self.feature_gates.get("DisableWaitForPodsReady", False):
            object.__setattr__(self, "wait_for_pods_ready", None)
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
        return self.wait_for_pods_ready is not None


# --- errors ---------------------------------------------------------------------------------------


class ConfigError(ValueError):
    """The file cannot be read, decoded or validated. The message names the field path.

    `errors` holds the field errors when validation failed (empty for read/decode failures).
    """

    def __init__(self, message: str, errors: Sequence[fields.FieldError] = ()) -> None:
        super().__init__(message)
        self.errors: tuple[fields.FieldError, ...] = tuple(errors)


def _invalid_stringer(path: str, rendered: str, detail: str) -> fields.FieldError:
    """`field.Invalid` of a Go value printed by its String() method (Durations): unquoted."""
    return fields.FieldError(fields.Kind.INVALID, path, f"{rendered}: {detail}")


@dataclass(frozen=True, slots=True)
class _TooMany(fields.FieldError):
    """`field.TooMany`: `<path>: Too many: <n>: must have at most <max> items`."""

    def __str__(self) -> str:
        return f"{self.path}: Too many: {self.value}: {self.detail}"


def _too_many(path: str, actual: int, maximum: int) -> fields.FieldError:
    return _TooMany(fields.Kind.INVALID, path, f"must have at most {maximum} items", actual)


# --- Go durations -----------------------------------------------------------------------------------

_DURATION_UNITS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9,
                   "m": 60 * 10**9, "h": 3600 * 10**9}  # fmt: skip
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")


def parse_go_duration(text: str) -> int:
    """`time.ParseDuration` in nanoseconds; ValueError carries Go's message."""
    quoted = json.dumps(text, ensure_ascii=False)
    rest = text
    sign = 1
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"time: invalid duration {quoted}")
    total = Fraction(0)
    while rest:
        m = _DURATION_PART.match(rest)
        number, unit = (m.group(1), m.group(2)) if m else ("", "")
        if number in ("", "."):
            raise ValueError(f"time: invalid duration {quoted}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _DURATION_UNITS:
            raise ValueError(
                f"time: unknown unit {json.dumps(unit, ensure_ascii=False)} in duration {quoted}"
            )
        total += Fraction(number) * _DURATION_UNITS[unit]
        rest = rest[len(number) + len(unit) :]
    return sign * int(total)


def format_go_duration(ns: int) -> str:
    """`time.Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)

    def frac(value: int, digits: int) -> str:
        whole, part = divmod(value, 10**digits)
        tail = str(part).rjust(digits, "0").rstrip("0")
        return f"{whole}.{tail}" if tail else str(whole)

    if u < 10**3:
        return f"{sign}{u}ns"
    if u < 10**6:
        return f"{sign}{frac(u, 3)}\u00b5s"
    if u < 10**9:
        return f"{sign}{frac(u, 6)}ms"
    text = frac(u % (60 * 10**9), 9) + "s"
    minutes = u // (60 * 10**9)
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes >= 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def _seconds(ns: int) -> float:
    return ns / 1e9


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


# --- strict decoding --------------------------------------------------------------------------------

GROUP = "config.kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that rejects duplicate keys, like sigs.k8s.io/yaml in strict mode."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                raise ConfigError(
                    f"yaml: unmarshal errors:\n  line {key_node.start_mark.line + 1}: "
                    f"key {json.dumps(str(key))} already set in map"
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _mismatch(value: Any, path: str, go_type: str) -> ConfigError:
    return ConfigError(
        f"json: cannot unmarshal {_json_kind(value)} into Go struct field {path} of type {go_type}"
    )


class _Decoder:
    """Reads one document. Unknown keys are collected (strict decoding); type errors raise at once."""

    __slots__ = ("unknown", "v1beta1")

    def __init__(self, *, v1beta1: bool) -> None:
        self.v1beta1 = v1beta1
        self.unknown: list[str] = []

    def obj(self, value: Any, path: str, known: Iterable[str]) -> Mapping[str, Any]:
        """A struct: None is absent; keys outside `known` are recorded as unknown fields."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise _mismatch(value, path, "struct")
        allowed = set(known)
        for key in value:
            if key not in allowed:
                self.unknown.append(f"{path}.{key}" if path else str(key))
        return value

    @staticmethod
    def string(value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise _mismatch(value, path, "string")
        return value

    @staticmethod
    def boolean(value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise _mismatch(value, path, "bool")
        return value

    @staticmethod
    def integer(value: Any, path: str, go_type: str = "int32") -> int:
        bits = 32 if go_type == "int32" else 64
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
        ):
            raise _mismatch(value, path, go_type)
        return value

    @staticmethod
    def number(value: Any, path: str, go_type: str = "float64") -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _mismatch(value, path, go_type)
        return float(value)

    @staticmethod
    def duration(value: Any, path: str) -> int:
        """A metav1.Duration (a Go duration string), in nanoseconds."""
        if not isinstance(value, str):
            raise _mismatch(value, path, "string")
        try:
            return parse_go_duration(value)
        except ValueError as exc:
            raise ConfigError(f"{path}: {exc}") from None

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise _mismatch(value, path, "[]string")
        return tuple(self.string(v, f"{path}[{i}]") for i, v in enumerate(value))

    def list(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise _mismatch(value, path, "array")
        return value

    def string_map(self, value: Any, path: str) -> Mapping[str, str]:
        raw = self.obj(value, path, value.keys() if isinstance(value, Mapping) else ())
        return MappingProxyType({str(k): self.string(v, f"{path}.{k}") for k, v in raw.items()})

    def selector(self, value: Any, path: str) -> Mapping[str, Any] | None:
        """A metav1.LabelSelector, frozen (mapping proxies and tuples)."""
        if value is None:
            return None
        raw = self.obj(value, path, ("matchLabels", "matchExpressions"))
        out: dict[str, Any] = {}
        if raw.get("matchLabels") is not None:
            out["matchLabels"] = self.string_map(raw["matchLabels"], f"{path}.matchLabels")
        if raw.get("matchExpressions") is not None:
            exprs = []
            for i, item in enumerate(self.list(raw["matchExpressions"], f"{path}.matchExpressions")):
                ipath = f"{path}.matchExpressions[{i}]"
                expr = self.obj(item, ipath, ("key", "operator", "values"))
                exprs.append(
                    MappingProxyType(
                        {
                            "key": self.string(expr.get("key", ""), f"{ipath}.key"),
                            "operator": self.string(expr.get("operator", ""), f"{ipath}.operator"),
                            "values": self.strings(expr.get("values"), f"{ipath}.values"),
                        }
                    )
                )
            out["matchExpressions"] = tuple(exprs)
        return MappingProxyType(out)


def _opt(value: Any, convert: Callable[[Any, str], _T], path: str) -> _T | None:
    return None if value is None else convert(value, path)


# --- per-struct decoding with each version's defaults (apis/config/*/defaults.go) --------------------


def _webhook(d: _Decoder, raw: Any) -> Webhook:
    w = d.obj(raw, "webhook", ("port", "host", "certDir"))
    return Webhook(
        port=DEFAULT_WEBHOOK_PORT if w.get("port") is None else d.integer(w["port"], "webhook.port", "int"),
        host=d.string(w.get("host", ""), "webhook.host"),
        cert_dir=d.string(w.get("certDir", ""), "webhook.certDir") or DEFAULT_WEBHOOK_CERT_DIR,
    )


def _leader_election(d: _Decoder, raw: Any) -> LeaderElection:
    p = "leaderElection"
    le = d.obj(raw, p, ("leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
                        "resourceName", "resourceNamespace"))  # fmt: skip
    defaults = LeaderElection()

    def dur(key: str, default: float) -> float:
        ns = 0 if le.get(key) is None else d.duration(le[key], f"{p}.{key}")
        return _seconds(ns) if ns else default

    return LeaderElection(
        leader_elect=True
        if le.get("leaderElect") is None
        else d.boolean(le["leaderElect"], f"{p}.leaderElect"),
        resource_name=d.string(le.get("resourceName", ""), f"{p}.resourceName") or defaults.resource_name,
        resource_namespace=d.string(le.get("resourceNamespace", ""), f"{p}.resourceNamespace"),
        lease_duration_s=dur("leaseDuration", defaults.lease_duration_s),
        renew_deadline_s=dur("renewDeadline", defaults.renew_deadline_s),
        retry_period_s=dur("retryPeriod", defaults.retry_period_s),
        resource_lock=d.string(le.get("resourceLock", ""), f"{p}.resourceLock") or defaults.resource_lock,
    )


def _health(d: _Decoder, raw: Any) -> Health:
    h = d.obj(raw, "health", ("healthProbeBindAddress", "readinessEndpointName", "livenessEndpointName"))
    defaults = Health()
    return Health(
        health_probe_bind_address=d.string(
            h.get("healthProbeBindAddress", ""), "health.healthProbeBindAddress"
        )
        or defaults.health_probe_bind_address,
        readiness_endpoint_name=d.string(h.get("readinessEndpointName", ""), "health.readinessEndpointName")
        or defaults.readiness_endpoint_name,
        liveness_endpoint_name=d.string(h.get("livenessEndpointName", ""), "health.livenessEndpointName")
        or defaults.liveness_endpoint_name,
    )


def _metrics(d: _Decoder, raw: Any) -> Metrics:
    m = d.obj(
        raw, "metrics", ("bindAddress", "enableClusterQueueResources", "customLabels", "localQueueMetrics")
    )
    lqm = LocalQueueMetrics()
    if m.get("localQueueMetrics") is not None:
        raw_lqm = d.obj(m["localQueueMetrics"], "metrics.localQueueMetrics", ("enable", "localQueueSelector"))
        lqm = LocalQueueMetrics(
            enable=d.boolean(raw_lqm.get("enable", False), "metrics.localQueueMetrics.enable"),
            local_queue_selector=d.selector(
                raw_lqm.get("localQueueSelector"), "metrics.localQueueMetrics.localQueueSelector"
            ),
        )
    labels = []
    keys = ("name", "sourceLabelKey", "sourceAnnotationKey") + (
        () if d.v1beta1 else ("sourceKind", "trackedValues")
    )
    for i, item in enumerate(d.list(m.get("customLabels"), "metrics.customLabels")):
        p = f"metrics.customLabels[{i}]"
        cl = d.obj(item, p, keys)
        labels.append(
            MetricsCustomLabel(
                name=d.string(cl.get("name", ""), f"{p}.name"),
                source_label_key=d.string(cl.get("sourceLabelKey", ""), f"{p}.sourceLabelKey"),
                source_annotation_key=d.string(cl.get("sourceAnnotationKey", ""), f"{p}.sourceAnnotationKey"),
                source_kind=d.string(cl.get("sourceKind", "ClusterQueue"), f"{p}.sourceKind"),
                tracked_values=d.strings(cl.get("trackedValues"), f"{p}.trackedValues"),
            )
        )
    return Metrics(
        bind_address=d.string(m.get("bindAddress", ""), "metrics.bindAddress")
        or DEFAULT_METRICS_BIND_ADDRESS,
        enable_cluster_queue_resources=d.boolean(
            m.get("enableClusterQueueResources", False), "metrics.enableClusterQueueResources"
        ),
        local_queue_metrics=lqm,
        custom_labels=tuple(labels),
    )


def _controller(d: _Decoder, raw: Any) -> ControllerConfig:
    c = d.obj(raw, "controller", ("groupKindConcurrency", "cacheSyncTimeout"))
    gkc = d.obj(
        c.get("groupKindConcurrency"), "controller.groupKindConcurrency", c.get("groupKindConcurrency") or ()
    )
    timeout = c.get("cacheSyncTimeout")
    return ControllerConfig(
        group_kind_concurrency=MappingProxyType(
            {str(k): d.integer(v, f"controller.groupKindConcurrency.{k}", "int") for k, v in gkc.items()}
        ),
        # A plain time.Duration: JSON nanoseconds, not a duration string.
        cache_sync_timeout_s=None
        if timeout is None
        else _seconds(d.integer(timeout, "controller.cacheSyncTimeout", "int64")),
    )


def _tls(d: _Decoder, raw: Any) -> TLSOptions | None:
    if raw is None:
        return None
    t = d.obj(raw, "tls", ("minVersion", "cipherSuites", "curvePreferences"))
    return TLSOptions(
        min_version=d.string(t.get("minVersion", ""), "tls.minVersion"),
        cipher_suites=d.strings(t.get("cipherSuites"), "tls.cipherSuites"),
        curve_preferences=tuple(
            d.integer(v, f"tls.curvePreferences[{i}]")
            for i, v in enumerate(d.list(t.get("curvePreferences"), "tls"))
        ),
    )


def _internal_cert_management(d: _Decoder, raw: Any) -> InternalCertManagement:
    p = "internalCertManagement"
    icm = d.obj(raw, p, ("enable", "webhookServiceName", "webhookSecretName"))
    return InternalCertManagement(
        enable=True if icm.get("enable") is None else d.boolean(icm["enable"], f"{p}.enable"),
        webhook_service_name=DEFAULT_WEBHOOK_SERVICE_NAME
        if icm.get("webhookServiceName") is None
        else d.string(icm["webhookServiceName"], f"{p}.webhookServiceName"),
        webhook_secret_name=DEFAULT_WEBHOOK_SECRET_NAME
        if icm.get("webhookSecretName") is None
        else d.string(icm["webhookSecretName"], f"{p}.webhookSecretName"),
    )


def _client_connection(d: _Decoder, raw: Any) -> ClientConnection:
    cc = d.obj(raw, "clientConnection", ("qps", "burst"))
    return ClientConnection(
        qps=DEFAULT_CLIENT_QPS
        if cc.get("qps") is None
        else d.number(cc["qps"], "clientConnection.qps", "float32"),
        burst=DEFAULT_CLIENT_BURST
        if cc.get("burst") is None
        else d.integer(cc["burst"], "clientConnection.burst"),
    )


def _requeuing_strategy(d: _Decoder, raw: Any) -> RequeuingStrategy:
    p = "waitForPodsReady.requeuingStrategy"
    rs = d.obj(raw, p, ("timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"))
    defaults = RequeuingStrategy()

    def int_or(key: str, default: int) -> int:
        return default if rs.get(key) is None else d.integer(rs[key], f"{p}.{key}")

    return RequeuingStrategy(
        timestamp=defaults.timestamp
        if rs.get("timestamp") is None
        else d.string(rs["timestamp"], f"{p}.timestamp"),
        backoff_limit_count=_opt(rs.get("backoffLimitCount"), d.integer, f"{p}.backoffLimitCount"),
        backoff_base_seconds=int_or("backoffBaseSeconds", defaults.backoff_base_seconds),
        backoff_max_seconds=int_or("backoffMaxSeconds", defaults.backoff_max_seconds),
    )


def _wait_for_pods_ready(d: _Decoder, raw: Any) -> WaitForPodsReady | None:
    p = "waitForPodsReady"
    keys = ("timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout")
    w = d.obj(raw, p, (*keys, "enable") if d.v1beta1 else keys)
    timeout_ns = None if w.get("timeout") is None else d.duration(w["timeout"], f"{p}.timeout")
    recovery_ns = (
        None if w.get("recoveryTimeout") is None else d.duration(w["recoveryTimeout"], f"{p}.recoveryTimeout")
    )
    block = None if w.get("blockAdmission") is None else d.boolean(w["blockAdmission"], f"{p}.blockAdmission")
    strategy = _requeuing_strategy(d, w.get("requeuingStrategy"))
    if d.v1beta1:
        # v1beta1 has an `enable` flag; conversion drops the whole struct when it is false.
        if not d.boolean(w.get("enable", False), f"{p}.enable"):
            return None
        timeout_s = _seconds(5 * 60 * 10**9 if timeout_ns is None else timeout_ns)
        block_admission = True if block is None else block
    else:
        # v1beta2: the struct always exists after defaulting, so waitForPodsReady is on.
        timeout_s = DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT_S if not timeout_ns else _seconds(timeout_ns)
        block_admission = False if block is None else block
    return WaitForPodsReady(
        timeout_s=timeout_s,
        block_admission=block_admission,
        requeuing_strategy=strategy,
        recovery_timeout_s=timeout_s if recovery_ns is None else _seconds(recovery_ns),
    )


def _integrations(d: _Decoder, raw: Any) -> Integrations:
    keys = ("frameworks", "externalFrameworks", "labelKeysToCopy")
    i = d.obj(raw, "integrations", (*keys, "podOptions") if d.v1beta1 else keys)
    if d.v1beta1 and i.get("podOptions") is not None:
        # Deprecated: decoded strictly, then dropped by the v1beta1 -> v1beta2 conversion.
        po = d.obj(i["podOptions"], "integrations.podOptions", ("namespaceSelector", "podSelector"))
        d.selector(po.get("namespaceSelector"), "integrations.podOptions.namespaceSelector")
        d.selector(po.get("podSelector"), "integrations.podOptions.podSelector")
    return Integrations(
        frameworks=d.strings(i.get("frameworks"), "integrations.frameworks") or (DEFAULT_JOB_FRAMEWORK,),
        external_frameworks=d.strings(i.get("externalFrameworks"), "integrations.externalFrameworks"),
        label_keys_to_copy=d.strings(i.get("labelKeysToCopy"), "integrations.labelKeysToCopy"),
    )


def _multi_kueue(d: _Decoder, raw: Any) -> MultiKueue:
    p = "multiKueue"
    keys = ("gcInterval", "origin", "workerLostTimeout", "dispatcherName", "externalFrameworks")
    mk = d.obj(raw, p, keys if d.v1beta1 else (*keys, "clusterProfile", "incrementalDispatcherConfig"))
    defaults = MultiKueue()
    names = []
    for i, item in enumerate(d.list(mk.get("externalFrameworks"), f"{p}.externalFrameworks")):
        ef = d.obj(item, f"{p}.externalFrameworks[{i}]", ("name",))
        names.append(d.string(ef.get("name", ""), f"{p}.externalFrameworks[{i}].name"))
    dispatcher = (
        defaults.dispatcher_name
        if mk.get("dispatcherName") is None
        else d.string(mk["dispatcherName"], f"{p}.dispatcherName")
    )
    idc = None
    if mk.get("incrementalDispatcherConfig") is not None:
        raw_idc = d.obj(mk["incrementalDispatcherConfig"], f"{p}.incrementalDispatcherConfig", ("stepSize",))
        idc = IncrementalDispatcherConfig(
            _opt(raw_idc.get("stepSize"), d.integer, f"{p}.incrementalDispatcherConfig.stepSize")
        )
    if dispatcher == MULTIKUEUE_DISPATCHER_INCREMENTAL and not d.v1beta1:
        idc = IncrementalDispatcherConfig(3 if idc is None or idc.step_size is None else idc.step_size)
    cp = mk.get("clusterProfile")
    return MultiKueue(
        gc_interval_s=defaults.gc_interval_s
        if mk.get("gcInterval") is None
        else _seconds(d.duration(mk["gcInterval"], f"{p}.gcInterval")),
        origin=d.string(mk.get("origin", ""), f"{p}.origin") or defaults.origin,
        worker_lost_timeout_s=defaults.worker_lost_timeout_s
        if mk.get("workerLostTimeout") is None
        else _seconds(d.duration(mk["workerLostTimeout"], f"{p}.workerLostTimeout")),
        dispatcher_name=dispatcher,
        external_frameworks=tuple(names),
        incremental_dispatcher_config=idc,
        cluster_profile=None
        if cp is None
        else MappingProxyType(dict(d.obj(cp, f"{p}.clusterProfile", cp or ()))),
    )


def _fair_sharing(d: _Decoder, raw: Any) -> FairSharing | None:
    if raw is None:
        return None
    keys = ("preemptionStrategies",)
    fs = d.obj(raw, "fairSharing", (*keys, "enable") if d.v1beta1 else keys)
    strategies = d.strings(fs.get("preemptionStrategies"), "fairSharing.preemptionStrategies")
    if d.v1beta1:
        if not d.boolean(fs.get("enable", False), "fairSharing.enable"):
            return None
        return FairSharing(strategies or FairSharing().preemption_strategies)
    return FairSharing(strategies)


def _admission_fair_sharing(d: _Decoder, raw: Any) -> AdmissionFairSharing | None:
    if raw is None:
        return None
    p = "admissionFairSharing"
    afs = d.obj(raw, p, ("usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"))
    half_life = (
        0
        if afs.get("usageHalfLifeTime") is None
        else d.duration(afs["usageHalfLifeTime"], f"{p}.usageHalfLifeTime")
    )
    interval = (
        0
        if afs.get("usageSamplingInterval") is None
        else d.duration(afs["usageSamplingInterval"], f"{p}.usageSamplingInterval")
    )
    weights = d.obj(afs.get("resourceWeights"), f"{p}.resourceWeights", afs.get("resourceWeights") or ())
    return AdmissionFairSharing(
        usage_half_life_time_s=_seconds(half_life),
        usage_sampling_interval_s=_seconds(interval) if interval else 300.0,
        resource_weights=MappingProxyType(
            {str(k): d.number(v, f"{p}.resourceWeights.{k}") for k, v in weights.items()}
        ),
    )


def _resources(d: _Decoder, raw: Any) -> Resources:
    p = "resources"
    keys = ("excludeResourcePrefixes", "transformations", "deviceClassMappings")
    r = d.obj(raw, p, keys if d.v1beta1 else (*keys, "quotaCheckStrategy"))
    transformations = []
    for i, item in enumerate(d.list(r.get("transformations"), f"{p}.transformations")):
        tp = f"{p}.transformations[{i}]"
        t = d.obj(item, tp, ("input", "strategy", "multiplyBy", "outputs"))
        outputs = d.obj(t.get("outputs"), f"{tp}.outputs", t.get("outputs") or ())
        transformations.append(
            ResourceTransformation(
                input=d.string(t.get("input", ""), f"{tp}.input"),
                strategy=d.string(t.get("strategy") or "Retain", f"{tp}.strategy"),
                multiply_by=d.string(t.get("multiplyBy", ""), f"{tp}.multiplyBy"),
                outputs=MappingProxyType(
                    {str(k): _quantity(v, f"{tp}.outputs.{k}") for k, v in outputs.items()}
                ),
            )
        )
    mappings = []
    mapping_keys = ("name", "deviceClassNames") + (() if d.v1beta1 else ("sources",))
    for i, item in enumerate(d.list(r.get("deviceClassMappings"), f"{p}.deviceClassMappings")):
        mappings.append(MappingProxyType(dict(d.obj(item, f"{p}.deviceClassMappings[{i}]", mapping_keys))))
    return Resources(
        exclude_resource_prefixes=d.strings(r.get("excludeResourcePrefixes"), f"{p}.excludeResourcePrefixes"),
        transformations=tuple(transformations),
        quota_check_strategy=_opt(r.get("quotaCheckStrategy"), d.string, f"{p}.quotaCheckStrategy"),
        device_class_mappings=tuple(mappings),
    )


def _quantity(value: Any, path: str) -> str:
    text = value if isinstance(value, str) else str(value)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _mismatch(value, path, "resource.Quantity")
    try:
        quantity.parse(text)
    except quantity.QuantityError:
        raise ConfigError(
            f"{path}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ) from None
    return text


def _object_retention_policies(d: _Decoder, raw: Any) -> ObjectRetentionPolicies:
    p = "objectRetentionPolicies"
    orp = d.obj(raw, p, ("workloads",))
    w = d.obj(orp.get("workloads"), f"{p}.workloads", ("afterFinished", "afterDeactivatedByKueue"))

    def dur(key: str) -> float | None:
        return None if w.get(key) is None else _seconds(d.duration(w[key], f"{p}.workloads.{key}"))

    return ObjectRetentionPolicies(
        WorkloadRetentionPolicy(dur("afterFinished"), dur("afterDeactivatedByKueue"))
    )


def _visibility_server(d: _Decoder, raw: Any) -> VisibilityServer:
    vs = d.obj(raw, "visibilityServer", ("bindAddress", "bindPort"))
    return VisibilityServer(
        bind_address=_opt(vs.get("bindAddress"), d.string, "visibilityServer.bindAddress"),
        bind_port=DEFAULT_VISIBILITY_BIND_PORT
        if vs.get("bindPort") is None
        else d.integer(vs["bindPort"], "visibilityServer.bindPort"),
    )


def _queue_visibility(d: _Decoder, raw: Any) -> None:
    """v1beta1 only; decoded strictly and dropped (replaced by the on-demand visibility API)."""
    qv = d.obj(raw, "queueVisibility", ("clusterQueues", "updateIntervalSeconds"))
    cq = d.obj(qv.get("clusterQueues"), "queueVisibility.clusterQueues", ("maxCount",))
    _opt(cq.get("maxCount"), d.integer, "queueVisibility.clusterQueues.maxCount")
    _opt(qv.get("updateIntervalSeconds"), d.integer, "queueVisibility.updateIntervalSeconds")


_TOP_LEVEL_KEYS = (
    "apiVersion", "kind", "namespace", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector",
    "internalCertManagement", "waitForPodsReady", "clientConnection", "integrations", "multiKueue",
    "fairSharing", "admissionFairSharing", "resources", "featureGates", "objectRetentionPolicies",
    "webhook", "leaderElection", "metrics", "health", "pprofBindAddress", "controller", "tls",
)  # fmt: skip


def _decode(d: _Decoder, doc: Mapping[str, Any]) -> Configuration:
    top = d.obj(doc, "", (*_TOP_LEVEL_KEYS, "queueVisibility" if d.v1beta1 else "visibilityServer"))
    namespace = (
        operator_namespace() if top.get("namespace") is None else d.string(top["namespace"], "namespace")
    )
    selector = d.selector(top.get("managedJobsNamespaceSelector"), "managedJobsNamespaceSelector")
    gates = d.obj(top.get("featureGates"), "featureGates", top.get("featureGates") or ())
    if d.v1beta1 and top.get("queueVisibility") is not None:
        _queue_visibility(d, top["queueVisibility"])
    return Configuration(
        namespace=namespace,
        manage_jobs_without_queue_name=d.boolean(
            top.get("manageJobsWithoutQueueName", False), "manageJobsWithoutQueueName"
        ),
        managed_jobs_namespace_selector=_AUTO_SELECTOR if selector is None else selector,
        integrations=_integrations(d, top.get("integrations")),
        webhook=_webhook(d, top.get("webhook")),
        internal_cert_management=_internal_cert_management(d, top.get("internalCertManagement")),
        leader_election=_leader_election(d, top.get("leaderElection")),
        health=_health(d, top.get("health")),
        metrics=_metrics(d, top.get("metrics")),
        client_connection=_client_connection(d, top.get("clientConnection")),
        controller=_controller(d, top.get("controller")),
        pprof_bind_address=d.string(top.get("pprofBindAddress", ""), "pprofBindAddress"),
        tls=_tls(d, top.get("tls")),
        wait_for_pods_ready=_wait_for_pods_ready(d, top.get("waitForPodsReady")),
        multi_kueue=_multi_kueue(d, top.get("multiKueue")),
        fair_sharing=_fair_sharing(d, top.get("fairSharing")),
        admission_fair_sharing=_admission_fair_sharing(d, top.get("admissionFairSharing")),
        resources=_resources(d, top.get("resources")),
        object_retention_policies=_object_retention_policies(d, top.get("objectRetentionPolicies")),
        visibility_server=VisibilityServer()
        if d.v1beta1
        else _visibility_server(d, top.get("visibilityServer")),
        feature_gates=MappingProxyType({str(k): d.boolean(v, f"featureGates.{k}") for k, v in gates.items()}),
    )


# --- validation (pkg/config/validation.go) -----------------------------------------------------------

# Built-in integrations (pkg/controller/jobs/*): framework name -> GVK string of its job type, and
# whether it has a built-in MultiKueue adapter.
_FRAMEWORKS: Mapping[str, tuple[str, bool]] = MappingProxyType({
    "batch/job": ("batch/v1, Kind=Job", True),
    "deployment": ("apps/v1, Kind=Deployment", False),
    "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io/v1alpha2, Kind=JobSet", True),
    "kubeflow.org/jaxjob": ("kubeflow.org/v1, Kind=JAXJob", True),
    "kubeflow.org/mpijob": ("kubeflow.org/v2beta1, Kind=MPIJob", True),
    "kubeflow.org/paddlejob": ("kubeflow.org/v1, Kind=PaddleJob", True),
    "kubeflow.org/pytorchjob": ("kubeflow.org/v1, Kind=PyTorchJob", True),
    "kubeflow.org/tfjob": ("kubeflow.org/v1, Kind=TFJob", True),
    "kubeflow.org/xgboostjob": ("kubeflow.org/v1, Kind=XGBoostJob", True),
    "leaderworkerset.x-k8s.io/leaderworkerset": ("leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet", True),
    "pod": ("/v1, Kind=Pod", True),
    "ray.io/raycluster": ("ray.io/v1, Kind=RayCluster", True),
    "ray.io/rayjob": ("ray.io/v1, Kind=RayJob", True),
    "ray.io/rayservice": ("ray.io/v1, Kind=RayService", True),
    "sparkoperator.k8s.io/sparkapplication": ("sparkoperator.k8s.io/v1beta2, Kind=SparkApplication", False),
    "statefulset": ("apps/v1, Kind=StatefulSet", True),
    "trainer.kubeflow.org/trainjob": ("trainer.kubeflow.org/v1alpha1, Kind=TrainJob", True),
    "workload.codeflare.dev/appwrapper": ("workload.codeflare.dev/v1beta2, Kind=AppWrapper", True),
})  # fmt: skip
SUPPORTED_FRAMEWORKS: tuple[str, ...] = tuple(sorted(_FRAMEWORKS))

_NEGATIVE = "must be greater than or equal to 0"
_PREEMPTION_STRATEGY_SETS = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)
_CUSTOM_LABEL_NAME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*$")
_MAX_CUSTOM_LABELS = 20
_MAX_TRACKED_VALUES = 16
_MAX_TRACKED_WORKLOAD_VALUES = 12
# pkg/metrics: MaxCustomLabelsForSourceKind; Workload labels are capped lower.
_MAX_CUSTOM_LABELS_PER_KIND = MappingProxyType(
    {"Cohort": 8, "ClusterQueue": 8, "LocalQueue": 8, "Workload": 2}
)
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"


def _parse_kind_arg(arg: str) -> str | None:
    """`schema.ParseKindArg`: `Kind.version.group` -> the GVK string, or None without two dots."""
    if arg.count(".") < 2:
        return None
    kind, version, group = arg.split(".", 2)
    return f"{group}/{version}, Kind={kind}"


def _is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not re.fullmatch(_DNS1035_LABEL, value):
        errs.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
            f"regex used for validation is '{_DNS1035_LABEL}')"
        )
    return errs


def validate(cfg: Configuration) -> list[fields.FieldError]:
    """`config.Validate`: every error, in upstream's order. Gates come from `cfg.feature_gates`."""
    return [
        *_validate_wait_for_pods_ready(cfg),
        *_validate_integrations(cfg),
        *_validate_multi_kueue(cfg),
        *_validate_fair_sharing(cfg),
        *_validate_admission_fair_sharing(cfg),
        *_validate_internal_cert_management(cfg),
        *_validate_resource_transformations(cfg),
        *_validate_namespace_selector(cfg, cfg.managed_jobs_namespace_selector),
        *_validate_object_retention_policies(cfg),
        *_validate_tls(cfg),
        *_validate_visibility_server(cfg),
        *_validate_custom_labels(cfg),
        *_validate_quota_check_strategy(cfg),
    ]


def _validate_wait_for_pods_ready(cfg: Configuration) -> list[fields.FieldError]:
    w = cfg.wait_for_pods_ready
    if w is None:
        return []
    errs = []
    p = "waitForPodsReady"
    if w.timeout_s == 0:
        errs.append(fields.required(f"{p}.timeout", "must be specified"))
    if w.timeout_s < 0:
        errs.append(_invalid_stringer(f"{p}.timeout", format_go_duration(_ns(w.timeout_s)), _NEGATIVE))
    if w.recovery_timeout_s is not None and w.recovery_timeout_s < 0:
        errs.append(
            _invalid_stringer(
                f"{p}.recoveryTimeout", format_go_duration(_ns(w.recovery_timeout_s)), _NEGATIVE
            )
        )
    rs = w.requeuing_strategy
    if rs.timestamp not in ("Creation", "Eviction"):
        errs.append(
            fields.not_supported(f"{p}.requeuingStrategy.timestamp", rs.timestamp, ("Creation", "Eviction"))
        )
    for key, value in (
        ("backoffLimitCount", rs.backoff_limit_count),
        ("backoffBaseSeconds", rs.backoff_base_seconds),
        ("backoffMaxSeconds", rs.backoff_max_seconds),
    ):
        if value is not None and value < 0:
            errs.append(fields.invalid(f"{p}.requeuingStrategy.{key}", value, _NEGATIVE))
    return errs


def _validate_integrations(cfg: Configuration) -> list[fields.FieldError]:
    if not cfg.integrations.frameworks:
        return [fields.required("integrations.frameworks", "cannot be empty")]
    errs = []
    managed: set[str] = set()
    for i, name in enumerate(cfg.integrations.frameworks):
        path = f"integrations.frameworks[{i}]"
        if name not in _FRAMEWORKS:
            errs.append(fields.not_supported(path, name, SUPPORTED_FRAMEWORKS))
        elif _FRAMEWORKS[name][0] in managed:
            errs.append(fields.duplicate(path, name))
        else:
            managed.add(_FRAMEWORKS[name][0])
    for i, name in enumerate(cfg.integrations.external_frameworks):
        path = f"integrations.externalFrameworks[{i}]"
        gvk = _parse_kind_arg(name)
        if gvk is None:
            errs.append(fields.invalid(path, name, "must be format, 'Kind.version.group.com'"))
        elif gvk in managed:
            errs.append(fields.duplicate(path, name))
        else:
            managed.add(gvk)
    if "pod" in cfg.integrations.frameworks:
        sel: Mapping[str, Any] | None = cfg.managed_jobs_namespace_selector
        if sel is None:
            errs.append(
                fields.required(
                    "managedJobsNamespaceSelector", "cannot be empty when pod integration is enabled"
                )
            )
        else:
            errs.extend(_validate_namespace_selector(cfg, sel))
    return errs


def _validate_namespace_selector(
    cfg: Configuration, sel: Mapping[str, Any] | None
) -> list[fields.FieldError]:
    """The selector must be valid and must exempt kube-system and Kueue's own namespace."""
    path = "managedJobsNamespaceSelector"
    errs = selector.validate(sel, path)
    if sel is None or errs:
        return errs  # nil is `labels.Nothing()`; an invalid selector cannot be converted
    prohibited = ["kube-system"] + ([cfg.namespace] if cfg.namespace else [])
    for ns in prohibited:
        if selector.matches(sel, {_NAMESPACE_NAME_LABEL: ns}):
            errs.append(
                fields.invalid(
                    path, selector.canonical(sel), f"should not match the {json.dumps(ns)} namespace"
                )
            )
    return errs


def _validate_multi_kueue(cfg: Configuration) -> list[fields.FieldError]:
    mk = cfg.multi_kueue
    p = "multiKueue"
    errs = []
    if mk.gc_interval_s < 0:
        errs.append(
            _invalid_stringer(f"{p}.gcInterval", format_go_duration(_ns(mk.gc_interval_s)), _NEGATIVE)
        )
    if mk.worker_lost_timeout_s < 0:
        errs.append(
            _invalid_stringer(
                f"{p}.workerLostTimeout", format_go_duration(_ns(mk.worker_lost_timeout_s)), _NEGATIVE
            )
        )
    label_errs = fields.is_label_value(mk.origin)
    if label_errs:
        errs.append(fields.invalid(f"{p}.origin", mk.origin, ",".join(label_errs)))
    built_in = {
        _FRAMEWORKS[f][0] for f in cfg.integrations.frameworks if f in _FRAMEWORKS and _FRAMEWORKS[f][1]
    }
    seen: set[str] = set()
    for i, name in enumerate(mk.external_frameworks):
        path = f"{p}.externalFrameworks[{i}].name"
        gvk = _parse_kind_arg(name)
        if gvk is None:
            errs.append(fields.invalid(path, name, "must be in 'kind.version.group' format"))
            continue
        if gvk in seen:
            errs.append(fields.duplicate(path, name))
        seen.add(gvk)
        if gvk in built_in:
            errs.append(fields.invalid(path, name, "conflicts with a built-in MultiKueue adapter"))
    idc = mk.incremental_dispatcher_config
    if idc is not None:
        if mk.dispatcher_name != MULTIKUEUE_DISPATCHER_INCREMENTAL:
            errs.append(
                fields.invalid(
                    f"{p}.incrementalDispatcherConfig",
                    {} if idc.step_size is None else {"stepSize": idc.step_size},
                    "incrementalDispatcherConfig is only valid when dispatcherName is set to the incremental dispatcher",
                )
            )
        if idc.step_size is not None and idc.step_size < 1:
            errs.append(
                fields.invalid(
                    f"{p}.incrementalDispatcherConfig.stepSize",
                    idc.step_size,
                    "must be greater than or equal to 1",
                )
            )
    return errs


def _validate_fair_sharing(cfg: Configuration) -> list[fields.FieldError]:
    fs = cfg.fair_sharing
    path = "fairSharing.preemptionStrategies"
    if fs is None:
        return []
    if not fs.preemption_strategies:
        return [fields.required(path, "must be specified")]
    if tuple(fs.preemption_strategies) not in _PREEMPTION_STRATEGY_SETS:
        return [
            fields.not_supported(
                path, list(fs.preemption_strategies), [",".join(s) for s in _PREEMPTION_STRATEGY_SETS]
            )
        ]
    return []


def _validate_admission_fair_sharing(cfg: Configuration) -> list[fields.FieldError]:
    afs = cfg.admission_fair_sharing
    if afs is None:
        return []
    p = "admissionFairSharing"
    half_life = format_go_duration(_ns(afs.usage_half_life_time_s))
    errs = []
    if afs.usage_half_life_time_s < 0:
        errs.append(_invalid_stringer(f"{p}.usageHalfLifeTime", half_life, _NEGATIVE))
    if afs.usage_sampling_interval_s <= 0:
        # Upstream reports the half-life value here, not the interval.
        errs.append(_invalid_stringer(f"{p}.usageSamplingInterval", half_life, "must be greater than 0"))
    weights = {k: _go_float(afs.resource_weights[k]) for k in sorted(afs.resource_weights)}
    for name in sorted(afs.resource_weights):
        if afs.resource_weights[name] < 0:
            errs.append(fields.invalid(f"{p}.resourceWeights[{name}]", weights, _NEGATIVE))
    return errs


def _go_float(value: float) -> int | float:
    """Go's JSON prints integral floats without a fraction."""
    return int(value) if value.is_integer() and abs(value) < 1e21 else value


def _validate_internal_cert_management(cfg: Configuration) -> list[fields.FieldError]:
    icm = cfg.internal_cert_management
    if not icm.enable:
        return []
    errs = []
    svc_errs = _is_dns1035_label(icm.webhook_service_name)
    if svc_errs:
        errs.append(
            fields.invalid(
                "internalCertManagement.webhookServiceName", icm.webhook_service_name, ",".join(svc_errs)
            )
        )
    sec_errs = fields.is_dns1123_subdomain(icm.webhook_secret_name)
    if sec_errs:
        errs.append(
            fields.invalid(
                "internalCertManagement.webhookSecretName", icm.webhook_secret_name, ",".join(sec_errs)
            )
        )
    return errs


def _validate_resource_transformations(cfg: Configuration) -> list[fields.FieldError]:
    errs = []
    seen: set[str] = set()
    for i, t in enumerate(cfg.resources.transformations):
        path = f"resources.transformations[{i}]"
        if t.strategy not in ("Retain", "Replace"):
            errs.append(fields.not_supported(f"{path}.strategy", t.strategy, ("Retain", "Replace")))
        if t.input in seen:
            errs.append(fields.duplicate(f"{path}.input", t.input))
        seen.add(t.input)
    return errs


def _validate_object_retention_policies(cfg: Configuration) -> list[fields.FieldError]:
    w = cfg.object_retention_policies.workloads
    p = "objectRetentionPolicies.workloads"
    errs = []
    if w.after_finished_s is not None and w.after_finished_s < 0:
        errs.append(
            _invalid_stringer(f"{p}.afterFinished", format_go_duration(_ns(w.after_finished_s)), _NEGATIVE)
        )
    if w.after_deactivated_by_kueue_s is not None and w.after_deactivated_by_kueue_s < 0:
        # Upstream passes Duration.String() here, so the value is quoted.
        text = format_go_duration(_ns(w.after_deactivated_by_kueue_s))
        errs.append(fields.invalid(f"{p}.afterDeactivatedByKueue", text, _NEGATIVE))
    return errs


def _validate_tls(cfg: Configuration) -> list[fields.FieldError]:
    tls = cfg.tls
    if tls is not None and tls.min_version == "VersionTLS13" and tls.cipher_suites:
        return [
            fields.invalid(
                "tls.cipherSuites",
                list(tls.cipher_suites),
                "may not be specified when `minVersion` is 'VersionTLS13'",
            )
        ]
    return []


def _validate_visibility_server(cfg: Configuration) -> list[fields.FieldError]:
    vs = cfg.visibility_server
    errs = []
    if vs.bind_address is not None:
        try:
            ipaddress.ip_address(vs.bind_address)
        except ValueError:
            errs.append(
                fields.invalid("visibilityServer.bindAddress", vs.bind_address, "must be a valid IP address")
            )
    if not 1 <= vs.bind_port <= 65535:
        errs.append(
            fields.invalid("visibilityServer.bindPort", vs.bind_port, "must be a valid port number (1-65535)")
        )
    return errs


def _custom_label_json(cl: MetricsCustomLabel) -> dict[str, Any]:
    out: dict[str, Any] = {"name": cl.name}
    if cl.source_label_key:
        out["sourceLabelKey"] = cl.source_label_key
    if cl.source_annotation_key:
        out["sourceAnnotationKey"] = cl.source_annotation_key
    out["sourceKind"] = cl.source_kind
    if cl.tracked_values:
        out["trackedValues"] = list(cl.tracked_values)
    return out


def _validate_custom_labels(cfg: Configuration) -> list[fields.FieldError]:
    labels = cfg.metrics.custom_labels
    if not labels:
        return []
    p = "metrics.customLabels"
    errs = []
    if len(labels) > _MAX_CUSTOM_LABELS:
        errs.append(_too_many(p, len(labels), _MAX_CUSTOM_LABELS))
    seen: set[str] = set()
    per_kind: dict[str, int] = {}
    for i, cl in enumerate(labels):
        path = f"{p}[{i}]"
        if not _CUSTOM_LABEL_NAME_RE.match(cl.name):
            errs.append(fields.invalid(f"{path}.name", cl.name, "must match ^[a-zA-Z][a-zA-Z0-9_]*$"))
        if cl.name in seen:
            errs.append(fields.duplicate(f"{path}.name", cl.name))
        seen.add(cl.name)
        if cl.source_label_key and cl.source_annotation_key:
            errs.append(
                fields.invalid(
                    path,
                    _custom_label_json(cl),
                    "sourceLabelKey and sourceAnnotationKey are mutually exclusive",
                )
            )
        key_path, key = (
            (f"{path}.sourceLabelKey", cl.source_label_key)
            if cl.source_label_key
            else (f"{path}.sourceAnnotationKey", cl.source_annotation_key)
            if cl.source_annotation_key
            else (f"{path}.name", cl.name)
        )
        key_errs = fields.is_label_key(key)
        if key_errs:
            errs.append(fields.invalid(key_path, key, "; ".join(key_errs)))
        per_kind[cl.source_kind] = per_kind.get(cl.source_kind, 0) + 1
        values = list(cl.tracked_values)
        if cl.source_kind == "Workload":
            if not values:
                errs.append(
                    fields.invalid(
                        f"{path}.trackedValues", None, "must not be empty when sourceKind is 'Workload'"
                    )
                )
            if len(values) > _MAX_TRACKED_WORKLOAD_VALUES:
                errs.append(
                    fields.invalid(
                        f"{path}.trackedValues",
                        values,
                        f"must not be greater than {_MAX_TRACKED_WORKLOAD_VALUES} when sourceKind is 'Workload'",
                    )
                )
        elif len(values) > _MAX_TRACKED_VALUES:
            errs.append(_too_many(f"{path}.trackedValues", len(values), _MAX_TRACKED_VALUES))
        if len(set(values)) < len(values):
            errs.append(fields.invalid(f"{path}.trackedValues", values, "must not contain duplicates"))
    rendered = [_custom_label_json(cl) for cl in labels]
    for kind in sorted(per_kind):
        if kind not in _MAX_CUSTOM_LABELS_PER_KIND:
            errs.append(fields.invalid(p, rendered, f"unknown source kind: {kind}"))
        elif per_kind[kind] > _MAX_CUSTOM_LABELS_PER_KIND[kind]:
            limit = _MAX_CUSTOM_LABELS_PER_KIND[kind]
            errs.append(
                fields.invalid(
                    p,
                    rendered,
                    f"too many custom labels for source kind {kind}: found {per_kind[kind]}, expected <= {limit}",
                )
            )
    return errs


def _validate_quota_check_strategy(cfg: Configuration) -> list[fields.FieldError]:
    strategy = cfg.resources.quota_check_strategy
    if not cfg.feature_enabled("QuotaCheckStrategy") or strategy is None:
        return []
    p = "resources.quotaCheckStrategy"
    errs = []
    if cfg.resources.exclude_resource_prefixes and strategy == "IgnoreUndeclared":
        errs.append(
            fields.invalid(
                p,
                strategy,
                "excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared",
            )
        )
    if strategy not in ("IgnoreUndeclared", "BlockUndeclared"):
        errs.append(fields.not_supported(p, strategy, ("IgnoreUndeclared", "BlockUndeclared")))
    return errs


def validate_feature_gates(gates: Mapping[str, bool]) -> list[fields.FieldError]:
    """`LoadAndValidateFeatureGates` for the `featureGates` map (component-base `SetFromMap` rules)."""
    value = {k: gates[k] for k in sorted(gates)}
    for name in sorted(gates):  # Go stops at the first unknown gate; we pick it deterministically
        if name not in FEATURE_GATE_DEFAULTS:
            return [fields.invalid("featureGates", value, f"unrecognized feature gate: {name}")]
    locked = [
        f"cannot set feature gate {name} to {str(gates[name]).lower()}, feature is locked to "
        f"{str(FEATURE_GATE_DEFAULTS[name]).lower()}"
        for name in sorted(gates)
        if name in LOCKED_FEATURE_GATES and gates[name] != FEATURE_GATE_DEFAULTS[name]
    ]
    if locked:
        return [
            fields.invalid(
                "featureGates", value, locked[0] if len(locked) == 1 else "[" + ", ".join(locked) + "]"
            )
        ]

    def enabled(name: str) -> bool:
        return gates.get(name, FEATURE_GATE_DEFAULTS[name])

    profiles = int(enabled("TASProfileMixed"))
    if not enabled("TopologyAwareScheduling") and profiles > 0:
        return [fields.invalid("featureGates", profiles, "cannot use a TAS profile with TAS disabled")]
    return []


# --- entry points ----------------------------------------------------------------------------------


def load(path: str | None) -> Configuration:
    """Read and parse the file at `path`; `None` or "" gives the defaults (pkg/config/config.go Load)."""
    if not path:
        return Configuration()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError(f"read {path}: {exc.strerror}") from exc
    return parse(text)


def parse(text: str) -> Configuration:
    """Decode strictly, default per version (v1beta1 then converted), then validate.

    Raises `ConfigError` naming the field: YAML errors, type mismatches, unknown fields
    (`strict decoding error: unknown field "integrations.foo"`), bad feature gates, then the aggregated
    validation errors.
    """
    try:
        doc = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"yaml: {exc}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise ConfigError(
            f"json: cannot unmarshal {_json_kind(doc)} into Go value of type v1beta2.Configuration"
        )
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not kind:
        raise ConfigError(
            f"Object 'Kind' is missing in '{json.dumps(doc, default=str, separators=(',', ':'))}'"
        )
    if api_version not in (V1BETA1, V1BETA2) or kind != "Configuration":
        raise ConfigError(f'no kind "{kind}" is registered for version "{api_version}"')
    decoder = _Decoder(v1beta1=api_version == V1BETA1)
    cfg = _decode(decoder, doc)
    if decoder.unknown:
        raise ConfigError(
            "strict decoding error: " + ", ".join(f"unknown field {json.dumps(u)}" for u in decoder.unknown)
        )
    for check in (validate_feature_gates(cfg.feature_gates), validate(cfg)):
        if check:
            raise ConfigError(fields.aggregate(check), check)
    return cfg
