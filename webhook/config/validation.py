"""Validation of a decoded Configuration, with upstream's messages (`pkg/config/validation.go`)."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from webhook.api import fields, integrations, selector
from webhook.config import support, tlsoptions
from webhook.config.decode import (
    CONFIG_V1BETA1,
    CONFIG_V1BETA2,
    Decoder,
    StrictLoader,
    decode_document,
    json_kind,
)
from webhook.config.durations import format_go_duration, to_nanoseconds
from webhook.config.types import (
    FEATURE_GATE_DEFAULTS,
    LOCKED_FEATURE_GATES,
    MULTIKUEUE_DISPATCHER_INCREMENTAL,
    NAMESPACE_NAME_LABEL,
    QUOTA_CHECK_BLOCK_UNDECLARED,
    QUOTA_CHECK_IGNORE_UNDECLARED,
    ConfigError,
    Configuration,
    Feature,
    MetricsCustomLabel,
    TLSOptions,
    invalid_stringer,
    too_many,
)

_T = TypeVar("_T")

__all__ = [
    "check_implemented",
    "implemented_frameworks",
    "load",
    "load_and_validate_feature_gates",
    "parse",
    "parse_feature_gates_flag",
    "supported_frameworks",
    "validate",
    "validate_feature_gates",
]


# --- validation (pkg/config/validation.go) -----------------------------------------------------------


def supported_frameworks() -> tuple[str, ...]:
    """Every framework name upstream registers (`webhook.api.integrations`), sorted as its messages list them."""
    return tuple(sorted(f.name for f in integrations.all_frameworks()))


def implemented_frameworks() -> tuple[str, ...]:
    """The integrations this project implements. Upstream accepts every supported name; naming one we
    lack would let its workloads run outside every quota without a word, so `serve` refuses it."""
    return tuple(sorted(f.name for f in integrations.implemented()))


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
# `maxCustomLabelsPerSourceKind`: 6 per kind (`MaxCustomLabelsForSourceKind` on upstream's main), 2 for Workloads.
_MAX_CUSTOM_LABELS_PER_KIND = MappingProxyType({"Cohort": 6, "ClusterQueue": 6, "LocalQueue": 6, "Workload": 2})
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
        *_validate_device_class_mappings(cfg),
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
        errs.append(invalid_stringer(f"{p}.timeout", format_go_duration(to_nanoseconds(w.timeout_s)), _NEGATIVE))
    if w.recovery_timeout_s is not None and w.recovery_timeout_s < 0:
        errs.append(
            invalid_stringer(
                f"{p}.recoveryTimeout", format_go_duration(to_nanoseconds(w.recovery_timeout_s)), _NEGATIVE
            )
        )
    rs = w.requeuing_strategy
    if rs.timestamp not in ("Creation", "Eviction"):
        errs.append(fields.not_supported(f"{p}.requeuingStrategy.timestamp", rs.timestamp, ("Creation", "Eviction")))
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
        framework = integrations.get(name)
        if framework is None:
            errs.append(fields.not_supported(path, name, supported_frameworks()))
        elif framework.gvk in managed:
            errs.append(fields.duplicate(path, name))
        else:
            managed.add(framework.gvk)
    for i, name in enumerate(cfg.integrations.external_frameworks):
        path = f"integrations.externalFrameworks[{i}]"
        gvk = _parse_kind_arg(name)
        if gvk is None:
            errs.append(fields.invalid(path, name, "must be format, 'Kind.version.group.com'"))
        elif gvk in managed:
            errs.append(fields.duplicate(path, name))
        else:
            managed.add(gvk)
    if integrations.POD.name in cfg.integrations.frameworks:
        sel: Mapping[str, Any] | None = cfg.managed_jobs_namespace_selector
        if sel is None:
            errs.append(
                fields.required("managedJobsNamespaceSelector", "cannot be empty when pod integration is enabled")
            )
        else:
            errs.extend(_validate_namespace_selector(cfg, sel))
    return errs


def _validate_namespace_selector(cfg: Configuration, sel: Mapping[str, Any] | None) -> list[fields.FieldError]:
    """The selector must be valid and must exempt kube-system and Kueue's own namespace."""
    path = "managedJobsNamespaceSelector"
    errs = selector.validate(sel, path)
    if sel is None or errs:
        return errs  # nil is `labels.Nothing()`; an invalid selector cannot be converted
    prohibited = ["kube-system"] + ([cfg.namespace] if cfg.namespace else [])
    for ns in prohibited:
        if selector.matches(sel, {NAMESPACE_NAME_LABEL: ns}):
            errs.append(
                fields.invalid(path, selector.canonical(sel), f"should not match the {json.dumps(ns)} namespace")
            )
    return errs


def _validate_multi_kueue(cfg: Configuration) -> list[fields.FieldError]:
    mk = cfg.multi_kueue
    p = "multiKueue"
    errs = []
    if mk.gc_interval_s < 0:
        errs.append(
            invalid_stringer(f"{p}.gcInterval", format_go_duration(to_nanoseconds(mk.gc_interval_s)), _NEGATIVE)
        )
    if mk.worker_lost_timeout_s < 0:
        errs.append(
            invalid_stringer(
                f"{p}.workerLostTimeout", format_go_duration(to_nanoseconds(mk.worker_lost_timeout_s)), _NEGATIVE
            )
        )
    label_errs = fields.is_label_value(mk.origin)
    if label_errs:
        errs.append(fields.invalid(f"{p}.origin", mk.origin, ",".join(label_errs)))
    built_in = {f.gvk for name in cfg.integrations.frameworks if (f := integrations.get(name)) and f.multikueue}
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
            fields.not_supported(path, list(fs.preemption_strategies), [",".join(s) for s in _PREEMPTION_STRATEGY_SETS])
        ]
    return []


def _validate_admission_fair_sharing(cfg: Configuration) -> list[fields.FieldError]:
    afs = cfg.admission_fair_sharing
    if afs is None:
        return []
    p = "admissionFairSharing"
    half_life = format_go_duration(to_nanoseconds(afs.usage_half_life_time_s))
    errs = []
    if afs.usage_half_life_time_s < 0:
        errs.append(invalid_stringer(f"{p}.usageHalfLifeTime", half_life, _NEGATIVE))
    if afs.usage_sampling_interval_s <= 0:
        # Upstream reports the half-life value here, not the interval.
        errs.append(invalid_stringer(f"{p}.usageSamplingInterval", half_life, "must be greater than 0"))
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
            fields.invalid("internalCertManagement.webhookServiceName", icm.webhook_service_name, ",".join(svc_errs))
        )
    sec_errs = fields.is_dns1123_subdomain(icm.webhook_secret_name)
    if sec_errs:
        errs.append(
            fields.invalid("internalCertManagement.webhookSecretName", icm.webhook_secret_name, ",".join(sec_errs))
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


def _counter_name(sources: Sequence[Mapping[str, Any]]) -> str:
    """`counterNameForMapping`: the first source's counter name, "" without one."""
    counter = sources[0].get("counter") if sources else None
    return str(counter.get("name") or "") if isinstance(counter, Mapping) else ""


def _validate_device_class_mappings(cfg: Configuration) -> list[fields.FieldError]:
    """`validateDeviceClassMappings`: at most 16 mappings of 1 to 8 DeviceClasses; names are label
    keys of at most 253 characters; a resource name once; a DeviceClass once per mapping and in one
    mapping only (unless both mappings count different counters). Of `sources` only the shape and
    the gates they need are checked here; `check_implemented` then refuses them."""
    mappings = cfg.resources.device_class_mappings
    p = fields.Path("resources.deviceClassMappings")
    errs: list[fields.FieldError] = []
    if len(mappings) > 16:
        errs.append(too_many(p, len(mappings), 16))
    seen_names: set[str] = set()
    class_to_resource: dict[str, str] = {}
    class_counters: dict[str, set[str]] = {}
    for i, m in enumerate(mappings):
        mp = p.index(i)
        label_errs = fields.is_label_key(m.name)
        if label_errs:
            errs.append(fields.invalid(mp.child("name"), m.name, "; ".join(label_errs)))
        if len(m.name) > 253:
            errs.append(fields.invalid(mp.child("name"), m.name, "must not exceed 253 characters"))
        if m.name in seen_names:
            errs.append(fields.duplicate(mp.child("name"), m.name))
        seen_names.add(m.name)
        if not m.device_class_names:
            errs.append(fields.required(mp.child("deviceClassNames"), "at least one device class name is required"))
        if len(m.device_class_names) > 8:
            errs.append(too_many(mp.child("deviceClassNames"), len(m.device_class_names), 8))
        seen_classes: set[str] = set()
        counter = _counter_name(m.sources)
        for j, dc in enumerate(m.device_class_names):
            dp = mp.child("deviceClassNames").index(j)
            label_errs = fields.is_label_key(dc)
            if label_errs:
                errs.append(fields.invalid(dp, dc, "; ".join(label_errs)))
            if len(dc) > 253:
                errs.append(fields.invalid(dp, dc, "must not exceed 253 characters"))
            if dc in seen_classes:
                errs.append(fields.duplicate(dp, dc))
            seen_classes.add(dc)
            existing = class_to_resource.get(dc)
            if existing is None:
                class_to_resource[dc] = m.name
                class_counters[dc] = {counter} if counter else set()
            elif existing != m.name:
                counters = class_counters[dc]
                if not counter or not counters:
                    errs.append(fields.invalid(dp, dc, f"device class already mapped to resource {existing}"))
                elif counter in counters:
                    errs.append(
                        fields.invalid(
                            dp, dc, f"device class already has a counter source for counter {json.dumps(counter)}"
                        )
                    )
                else:
                    counters.add(counter)
        errs.extend(_validate_sources(cfg, m.sources, mp.child("sources")))
    return errs


def _validate_sources(
    cfg: Configuration, sources: Sequence[Mapping[str, Any]], p: fields.Path
) -> list[fields.FieldError]:
    errs: list[fields.FieldError] = []
    counters, capacity = 0, False
    for k, src in enumerate(sources):
        sp = p.index(k)
        has_counter, has_capacity = src.get("counter") is not None, src.get("capacity") is not None
        if not has_counter and not has_capacity:
            errs.append(fields.required(sp, "exactly one source type must be set per entry"))
        elif has_counter and has_capacity:
            errs.append(fields.invalid(sp, "counter+capacity", "exactly one source type must be set per entry"))
        elif has_counter:
            counters += 1
            if not cfg.feature_enabled(Feature.KUEUE_DRA_INTEGRATION_PARTITIONABLE_DEVICES):
                errs.append(
                    fields.invalid(
                        sp.child("counter"),
                        True,
                        "counter sources require KueueDRAIntegrationPartitionableDevices to be enabled",
                    )
                )
        else:
            capacity = True
            if not cfg.feature_enabled(Feature.KUEUE_DRA_INTEGRATION_CONSUMABLE_CAPACITY):
                errs.append(
                    fields.invalid(
                        sp.child("capacity"),
                        True,
                        "capacity sources require KueueDRAIntegrationConsumableCapacity to be enabled",
                    )
                )
    if counters and capacity:
        errs.append(fields.invalid(p, len(sources), "cannot mix counter and capacity sources in the same mapping"))
    return errs


def _validate_object_retention_policies(cfg: Configuration) -> list[fields.FieldError]:
    w = cfg.object_retention_policies.workloads
    p = "objectRetentionPolicies.workloads"
    errs = []
    if w.after_finished_s is not None and w.after_finished_s < 0:
        errs.append(
            invalid_stringer(f"{p}.afterFinished", format_go_duration(to_nanoseconds(w.after_finished_s)), _NEGATIVE)
        )
    if w.after_deactivated_by_kueue_s is not None and w.after_deactivated_by_kueue_s < 0:
        # Upstream passes Duration.String() here, so the value is quoted.
        text = format_go_duration(to_nanoseconds(w.after_deactivated_by_kueue_s))
        errs.append(fields.invalid(f"{p}.afterDeactivatedByKueue", text, _NEGATIVE))
    return errs


def _go_tls_options(tls: TLSOptions) -> fields.Rendered:
    """`%#v` of a `v1beta2.TLSOptions` (field.Invalid prints structs that way)."""
    ciphers = ", ".join(json.dumps(c) for c in tls.cipher_suites)
    curves = ", ".join(str(c) for c in tls.curve_preferences)
    return fields.Rendered(
        f"v1beta2.TLSOptions{{MinVersion:{json.dumps(tls.min_version)}, "
        f"CipherSuites:{f'[]string{{{ciphers}}}' if tls.cipher_suites else '[]string(nil)'}, "
        f"CurvePreferences:{f'[]int32{{{curves}}}' if tls.curve_preferences else '[]int32(nil)'}}}"
    )


def _validate_tls(cfg: Configuration) -> list[fields.FieldError]:
    """`validateTLS`: the options must parse (`ParseTLSOptions`), then no cipher suites with TLS 1.3."""
    tls = cfg.tls
    if tls is None:
        return []
    try:
        tlsoptions.parse(tls)
    except tlsoptions.TLSOptionsError as exc:
        return [fields.invalid("tls", _go_tls_options(tls), str(exc))]
    if tls.min_version == "VersionTLS13" and tls.cipher_suites:
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
            errs.append(fields.invalid("visibilityServer.bindAddress", vs.bind_address, "must be a valid IP address"))
    if not 1 <= vs.bind_port <= 65535:
        errs.append(fields.invalid("visibilityServer.bindPort", vs.bind_port, "must be a valid port number (1-65535)"))
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
        errs.append(too_many(p, len(labels), _MAX_CUSTOM_LABELS))
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
                    fields.invalid(f"{path}.trackedValues", None, "must not be empty when sourceKind is 'Workload'")
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
            errs.append(too_many(f"{path}.trackedValues", len(values), _MAX_TRACKED_VALUES))
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
    if not cfg.feature_enabled(Feature.QUOTA_CHECK_STRATEGY) or strategy is None:
        return []
    p = "resources.quotaCheckStrategy"
    errs = []
    if cfg.resources.exclude_resource_prefixes and strategy == QUOTA_CHECK_IGNORE_UNDECLARED:
        errs.append(
            fields.invalid(
                p,
                strategy,
                "excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared",
            )
        )
    allowed = (QUOTA_CHECK_IGNORE_UNDECLARED, QUOTA_CHECK_BLOCK_UNDECLARED)
    if strategy not in allowed:
        errs.append(fields.not_supported(p, strategy, allowed))
    return errs


def check_implemented(cfg: Configuration) -> None:
    """Refuse a valid Configuration that asks for what this project does not implement: integrations
    (see `implemented_frameworks`) and the options and gate values listed in `webhook.config.support`.
    One message names all of them."""
    done = implemented_frameworks()
    missing = [name for name in cfg.integrations.frameworks if name not in done]
    problems = support.refusals(cfg)
    if missing:
        problems.insert(
            0,
            f"integrations.frameworks: {', '.join(json.dumps(m) for m in missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not implemented by pykueue; "
            f"{'its' if len(missing) == 1 else 'their'} workloads would run outside every quota "
            f"(implemented: {', '.join(json.dumps(f) for f in done)})",
        )
    if len(problems) == 1 and missing:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError("not implemented by pykueue: " + "; ".join(problems))
    _check_dra_implemented(cfg)
    _check_integration_gates(cfg)


def _check_integration_gates(cfg: Configuration) -> None:
    """`CanSupportIntegration` (`jobframework.SetupControllers`): an enabled framework behind a gate
    that is off stops the manager, in upstream's words (SparkApplication's alpha gate)."""
    for framework in integrations.enabled(cfg.integrations.frameworks):
        gate = framework.feature_gate
        if gate is not None and not cfg.feature_enabled(Feature(gate)):
            raise ConfigError(
                f"failed to configure reconcilers: {framework.name} integration is alpha feature. "
                f"please enable {gate} featuregate"
            )


def _check_dra_implemented(cfg: Configuration) -> None:
    """Refuse the DRA quota sources this project lacks (counters of partitionable devices,
    consumable capacity): a Configuration asking for them would get devices charged differently
    from what it says, without a word. Counting whole devices per DeviceClass is implemented."""
    for gate in _UNIMPLEMENTED_DRA_GATES:
        if gate in cfg.feature_gates and cfg.feature_gates[gate] != FEATURE_GATE_DEFAULTS[gate]:
            raise ConfigError(
                f"featureGates: {gate}={str(cfg.feature_gates[gate]).lower()} is not implemented by pykueue "
                f"(only its default, {str(FEATURE_GATE_DEFAULTS[gate]).lower()}, is accepted)"
            )
    for i, m in enumerate(cfg.resources.device_class_mappings):
        if m.sources:
            raise ConfigError(
                f"resources.deviceClassMappings[{i}].sources: counter and capacity sources are not implemented "
                "by pykueue; devices are counted per DeviceClass only (leave sources unset)"
            )


_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_GO_BOOLS |= {"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}

# validateFeatureGateDependency: a gate has no effect unless every gate it depends on is enabled.
_GATE_DEPENDENCIES: tuple[tuple[Feature, tuple[Feature, ...]], ...] = (
    (Feature.TAS_FAILED_NODE_REPLACEMENT, (Feature.TOPOLOGY_AWARE_SCHEDULING,)),
    (
        Feature.TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST,
        (Feature.TOPOLOGY_AWARE_SCHEDULING, Feature.TAS_FAILED_NODE_REPLACEMENT),
    ),
    (
        Feature.TAS_REPLACE_NODE_ON_POD_TERMINATION,
        (Feature.TOPOLOGY_AWARE_SCHEDULING, Feature.TAS_FAILED_NODE_REPLACEMENT),
    ),
    (
        Feature.TAS_REPLACE_NODE_DUE_TO_NOT_READY_OVER_FIXED_TIME,
        (Feature.TOPOLOGY_AWARE_SCHEDULING, Feature.TAS_FAILED_NODE_REPLACEMENT),
    ),
    (Feature.TAS_BALANCED_PLACEMENT, (Feature.TOPOLOGY_AWARE_SCHEDULING,)),
    (Feature.TAS_REPLACE_NODE_ON_NODE_TAINTS, (Feature.TOPOLOGY_AWARE_SCHEDULING,)),
    (Feature.TAS_MULTI_LAYER_TOPOLOGY, (Feature.TOPOLOGY_AWARE_SCHEDULING,)),
    (Feature.TAS_RESPECT_NODE_AFFINITY_PREFERRED, (Feature.TOPOLOGY_AWARE_SCHEDULING,)),
    (Feature.TAS_RECOMPUTE_ASSIGNMENT_WITHIN_SCHEDULING_CYCLE, (Feature.TOPOLOGY_AWARE_SCHEDULING,)),
    (Feature.UNADMITTED_WORKLOADS_EXPLICIT_STATUS, (Feature.UNADMITTED_WORKLOADS_OBSERVABILITY,)),
)
# validateDRAFeatureGateDependencies: each DRA sub-feature needs KueueDRAIntegration.
_DRA_SUB_FEATURES = (
    Feature.KUEUE_DRA_INTEGRATION_EXTENDED_RESOURCE,
    Feature.KUEUE_DRA_INTEGRATION_PARTITIONABLE_DEVICES,
    Feature.KUEUE_DRA_INTEGRATION_CONSUMABLE_CAPACITY,
)


def parse_feature_gates_flag(value: str) -> dict[str, bool]:
    """`--feature-gates=A=true,B=false` as component-base's `featureGate.Set` reads it: empty items
    skipped, names and values trimmed, values as Go's `strconv.ParseBool`. Raises ValueError with
    its message."""
    gates: dict[str, bool] = {}
    for item in value.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        raw = raw.strip()
        if raw not in _GO_BOOLS:
            raise ValueError(f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax')
        gates[name] = _GO_BOOLS[raw]
    return gates


def _set_error(gates: Mapping[str, bool]) -> str | None:
    """component-base `SetFromMap`: the first unknown gate, else every gate set against its lock."""
    for name in sorted(gates):  # Go stops at the first unknown gate; we pick it deterministically
        if name not in FEATURE_GATE_DEFAULTS:
            return f"unrecognized feature gate: {name}"
    locked = [
        f"cannot set feature gate {name} to {str(gates[name]).lower()}, feature is locked to "
        f"{str(FEATURE_GATE_DEFAULTS[Feature(name)]).lower()}"
        for name in sorted(gates)
        if name in LOCKED_FEATURE_GATES and gates[name] != FEATURE_GATE_DEFAULTS[Feature(name)]
    ]
    if not locked:
        return None
    return locked[0] if len(locked) == 1 else "[" + ", ".join(locked) + "]"


def load_and_validate_feature_gates(
    flag: str, gates: Mapping[str, bool]
) -> tuple[Mapping[str, bool], list[fields.FieldError]]:
    """`LoadAndValidateFeatureGates`: the gates in effect (the `--feature-gates` flag when given, else
    the Configuration's `featureGates`) and every error. The flag and a non-empty map together are an
    error, as upstream (which also refuses an explicit empty map beside the flag; that one sets
    nothing, so we let it pass)."""
    if flag:
        try:
            effective: Mapping[str, bool] = parse_feature_gates_flag(flag)
        except ValueError as exc:
            return gates, [fields.invalid("featureGates", flag, str(exc))]
        if error := _set_error(effective):
            return gates, [fields.invalid("featureGates", flag, error)]
    else:
        effective = gates
        if error := _set_error(gates):
            return gates, [fields.invalid("featureGates", {k: gates[k] for k in sorted(gates)}, error)]
    errs = []
    if flag and gates:
        errs.append(
            fields.invalid(
                "featureGates",
                {k: gates[k] for k in sorted(gates)},
                "feature gates for CLI and configuration cannot both specified",
            )
        )

    def enabled(gate: Feature) -> bool:
        return effective.get(gate, FEATURE_GATE_DEFAULTS[gate])

    profiles = int(enabled(Feature.TAS_PROFILE_MIXED))
    tas = enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
    if not tas and profiles > 0:
        errs.append(fields.invalid("featureGates", profiles, "cannot use a TAS profile with TAS disabled"))
    if not tas and enabled(Feature.TAS_HANDLE_OVERLAPPING_FLAVORS):
        gate = Feature.TAS_HANDLE_OVERLAPPING_FLAVORS
        errs.append(
            fields.invalid(
                "featureGates", str(gate), f"{gate} requires {Feature.TOPOLOGY_AWARE_SCHEDULING} to be enabled"
            )
        )
    for gate, needs in _GATE_DEPENDENCIES:
        if enabled(gate):
            errs += [
                fields.invalid("featureGates", str(gate), f"{gate} requires {dep} to be enabled")
                for dep in needs
                if not enabled(dep)
            ]
    elastic_tas = Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES_WITH_TAS
    if enabled(elastic_tas):
        errs += [
            fields.invalid("featureGates", str(elastic_tas), f"{elastic_tas} requires {dep} to be enabled")
            for dep in (Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES, Feature.TOPOLOGY_AWARE_SCHEDULING)
            if not enabled(dep)
        ]
    errs += [
        fields.invalid("featureGates", str(gate), f"{gate} requires {Feature.KUEUE_DRA_INTEGRATION} to be enabled")
        for gate in _DRA_SUB_FEATURES
        if enabled(gate) and not enabled(Feature.KUEUE_DRA_INTEGRATION)
    ]
    return effective, errs


def validate_feature_gates(gates: Mapping[str, bool]) -> list[fields.FieldError]:
    """`LoadAndValidateFeatureGates` for the `featureGates` map alone (no `--feature-gates` flag)."""
    return load_and_validate_feature_gates("", gates)[1]


# DRA quota from consumable capacity (`pkg/dra/capacity.go`) is not implemented: turning its gate
# on is refused. KueueDRAIntegrationPartitionableDevices (counters, `pkg/dra/counters.go`) is not
# implemented either, but it acts only on `deviceClassMappings[].sources`, which are refused: its
# two values behave the same here, and off it must be for KueueDRAIntegration to be turned off.
_UNIMPLEMENTED_DRA_GATES = (Feature.KUEUE_DRA_INTEGRATION_CONSUMABLE_CAPACITY,)


# --- entry points ----------------------------------------------------------------------------------


def load(path: str | None, feature_gates: str = "") -> Configuration:
    """Read and parse the file at `path`; `None` or "" gives the defaults (pkg/config/config.go Load).
    `feature_gates` is the manager's `--feature-gates` flag (see `parse`)."""
    if not path:
        return _checked(Configuration(), feature_gates) if feature_gates else Configuration()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError(f"read {path}: {exc.strerror}") from exc
    return parse(text, feature_gates)


def _checked(cfg: Configuration, feature_gates: str) -> Configuration:
    """cmd/kueue/main.go after `apply`: the feature gates (flag or file), then `config.Validate` with
    those gates in effect."""
    effective, errs = load_and_validate_feature_gates(feature_gates, cfg.feature_gates)
    if errs:
        raise ConfigError(fields.aggregate(errs), errs)
    if feature_gates:
        cfg = dataclasses.replace(cfg, feature_gates=MappingProxyType(dict(effective)))
    if errs := validate(cfg):
        raise ConfigError(fields.aggregate(errs), errs)
    return cfg


def parse(text: str, feature_gates: str = "") -> Configuration:
    """Decode strictly, default per version (v1beta1 then converted), then validate.

    `feature_gates` is the `--feature-gates` flag (`A=true,B=false`): when given it replaces the
    file's `featureGates`, and naming gates in both is an error, as upstream's manager.
    Raises `ConfigError` naming the field: YAML errors, type mismatches, unknown fields
    (`strict decoding error: unknown field "integrations.foo"`), bad feature gates, then the aggregated
    validation errors.
    """
    try:
        doc = yaml.load(text, Loader=StrictLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"yaml: {exc}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise ConfigError(f"json: cannot unmarshal {json_kind(doc)} into Go value of type v1beta2.Configuration")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not kind:
        raise ConfigError(f"Object 'Kind' is missing in '{json.dumps(doc, default=str, separators=(',', ':'))}'")
    if api_version not in (CONFIG_V1BETA1, CONFIG_V1BETA2) or kind != "Configuration":
        raise ConfigError(f'no kind "{kind}" is registered for version "{api_version}"')
    decoder = Decoder(v1beta1=api_version == CONFIG_V1BETA1)
    cfg = decode_document(decoder, doc)
    if decoder.unknown:
        raise ConfigError(
            "strict decoding error: " + ", ".join(f"unknown field {json.dumps(u)}" for u in decoder.unknown)
        )
    return _checked(cfg, feature_gates)
