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

from webhook.config.durations import format_go_duration, parse_go_duration
from webhook.config.types import (
    FEATURE_GATE_DEFAULTS,
    AdmissionFairSharing,
    ClientConnection,
    ConfigError,
    Configuration,
    ControllerConfig,
    DeviceClassMapping,
    FairSharing,
    Feature,
    Health,
    Integrations,
    InternalCertManagement,
    LeaderElection,
    LocalQueueMetrics,
    Metrics,
    MetricsCustomLabel,
    MultiKueue,
    ObjectRetentionPolicies,
    RequeuingStrategy,
    Resources,
    ResourceTransformation,
    VisibilityServer,
    WaitForPodsReady,
    Webhook,
    WorkloadRetentionPolicy,
)
from webhook.config.validation import (
    check_implemented,
    implemented_frameworks,
    load,
    load_and_validate_feature_gates,
    parse,
    parse_feature_gates_flag,
    supported_frameworks,
    validate,
    validate_feature_gates,
)

__all__ = [
    "FEATURE_GATE_DEFAULTS",
    "AdmissionFairSharing",
    "ClientConnection",
    "ConfigError",
    "Configuration",
    "ControllerConfig",
    "DeviceClassMapping",
    "FairSharing",
    "Feature",
    "Health",
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
    "VisibilityServer",
    "WaitForPodsReady",
    "Webhook",
    "WorkloadRetentionPolicy",
    "check_implemented",
    "format_go_duration",
    "implemented_frameworks",
    "load",
    "load_and_validate_feature_gates",
    "parse",
    "parse_feature_gates_flag",
    "parse_go_duration",
    "supported_frameworks",
    "validate",
    "validate_feature_gates",
]
