"""Strict decoding of v1beta1 and v1beta2 Configuration files, each with its version's defaults.

Mirrors `pkg/config/config.go` and `apis/config/v1beta1/{defaults.go,configuration_conversion.go}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from webhook.api import multikueue, quantity
from webhook.config.durations import parse_go_duration, to_seconds
from webhook.config.types import (
    AUTO_SELECTOR,
    DEFAULT_CLIENT_BURST,
    DEFAULT_CLIENT_QPS,
    DEFAULT_JOB_FRAMEWORK,
    DEFAULT_METRICS_BIND_ADDRESS,
    DEFAULT_VISIBILITY_BIND_PORT,
    DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT_S,
    DEFAULT_WEBHOOK_CERT_DIR,
    DEFAULT_WEBHOOK_PORT,
    DEFAULT_WEBHOOK_SECRET_NAME,
    DEFAULT_WEBHOOK_SERVICE_NAME,
    MULTIKUEUE_DISPATCHER_INCREMENTAL,
    AdmissionFairSharing,
    ClientConnection,
    ConfigError,
    Configuration,
    ControllerConfig,
    DeviceClassMapping,
    FairSharing,
    Health,
    IncrementalDispatcherConfig,
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
    TLSOptions,
    VisibilityServer,
    WaitForPodsReady,
    Webhook,
    WorkloadRetentionPolicy,
    operator_namespace,
)

_T = TypeVar("_T")

__all__ = [
    "CONFIG_V1BETA1",
    "CONFIG_V1BETA2",
    "GROUP",
    "Decoder",
    "StrictLoader",
    "decode_document",
    "json_kind",
]


# --- strict decoding --------------------------------------------------------------------------------

GROUP = "config.kueue.x-k8s.io"
CONFIG_V1BETA1 = f"{GROUP}/v1beta1"
CONFIG_V1BETA2 = f"{GROUP}/v1beta2"


class StrictLoader(yaml.SafeLoader):
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


def json_kind(value: Any) -> str:
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
    return ConfigError(f"json: cannot unmarshal {json_kind(value)} into Go struct field {path} of type {go_type}")


class Decoder:
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
        if isinstance(value, bool) or not isinstance(value, int) or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
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


def _webhook(d: Decoder, raw: Any) -> Webhook:
    w = d.obj(raw, "webhook", ("port", "host", "certDir"))
    return Webhook(
        port=DEFAULT_WEBHOOK_PORT if w.get("port") is None else d.integer(w["port"], "webhook.port", "int"),
        host=d.string(w.get("host", ""), "webhook.host"),
        cert_dir=d.string(w.get("certDir", ""), "webhook.certDir") or DEFAULT_WEBHOOK_CERT_DIR,
    )


def _leader_election(d: Decoder, raw: Any) -> LeaderElection:
    p = "leaderElection"
    le = d.obj(raw, p, ("leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
                        "resourceName", "resourceNamespace"))  # fmt: skip
    defaults = LeaderElection()

    def dur(key: str, default: float) -> float:
        ns = 0 if le.get(key) is None else d.duration(le[key], f"{p}.{key}")
        return to_seconds(ns) if ns else default

    return LeaderElection(
        leader_elect=True if le.get("leaderElect") is None else d.boolean(le["leaderElect"], f"{p}.leaderElect"),
        resource_name=d.string(le.get("resourceName", ""), f"{p}.resourceName") or defaults.resource_name,
        resource_namespace=d.string(le.get("resourceNamespace", ""), f"{p}.resourceNamespace"),
        lease_duration_s=dur("leaseDuration", defaults.lease_duration_s),
        renew_deadline_s=dur("renewDeadline", defaults.renew_deadline_s),
        retry_period_s=dur("retryPeriod", defaults.retry_period_s),
        resource_lock=d.string(le.get("resourceLock", ""), f"{p}.resourceLock") or defaults.resource_lock,
    )


def _health(d: Decoder, raw: Any) -> Health:
    h = d.obj(raw, "health", ("healthProbeBindAddress", "readinessEndpointName", "livenessEndpointName"))
    defaults = Health()
    return Health(
        health_probe_bind_address=d.string(h.get("healthProbeBindAddress", ""), "health.healthProbeBindAddress")
        or defaults.health_probe_bind_address,
        readiness_endpoint_name=d.string(h.get("readinessEndpointName", ""), "health.readinessEndpointName")
        or defaults.readiness_endpoint_name,
        liveness_endpoint_name=d.string(h.get("livenessEndpointName", ""), "health.livenessEndpointName")
        or defaults.liveness_endpoint_name,
    )


def _metrics(d: Decoder, raw: Any) -> Metrics:
    m = d.obj(raw, "metrics", ("bindAddress", "enableClusterQueueResources", "customLabels", "localQueueMetrics"))
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
    keys = ("name", "sourceLabelKey", "sourceAnnotationKey") + (() if d.v1beta1 else ("sourceKind", "trackedValues"))
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
        bind_address=d.string(m.get("bindAddress", ""), "metrics.bindAddress") or DEFAULT_METRICS_BIND_ADDRESS,
        enable_cluster_queue_resources=d.boolean(
            m.get("enableClusterQueueResources", False), "metrics.enableClusterQueueResources"
        ),
        local_queue_metrics=lqm,
        custom_labels=tuple(labels),
    )


def _controller(d: Decoder, raw: Any) -> ControllerConfig:
    c = d.obj(raw, "controller", ("groupKindConcurrency", "cacheSyncTimeout"))
    gkc = d.obj(c.get("groupKindConcurrency"), "controller.groupKindConcurrency", c.get("groupKindConcurrency") or ())
    timeout = c.get("cacheSyncTimeout")
    return ControllerConfig(
        group_kind_concurrency=MappingProxyType(
            {str(k): d.integer(v, f"controller.groupKindConcurrency.{k}", "int") for k, v in gkc.items()}
        ),
        # A plain time.Duration: JSON nanoseconds, not a duration string.
        cache_sync_timeout_s=None
        if timeout is None
        else to_seconds(d.integer(timeout, "controller.cacheSyncTimeout", "int64")),
    )


def _tls(d: Decoder, raw: Any) -> TLSOptions | None:
    if raw is None:
        return None
    t = d.obj(raw, "tls", ("minVersion", "cipherSuites", "curvePreferences"))
    return TLSOptions(
        min_version=d.string(t.get("minVersion", ""), "tls.minVersion"),
        cipher_suites=d.strings(t.get("cipherSuites"), "tls.cipherSuites"),
        curve_preferences=tuple(
            d.integer(v, f"tls.curvePreferences[{i}]") for i, v in enumerate(d.list(t.get("curvePreferences"), "tls"))
        ),
    )


def _internal_cert_management(d: Decoder, raw: Any) -> InternalCertManagement:
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


def _client_connection(d: Decoder, raw: Any) -> ClientConnection:
    cc = d.obj(raw, "clientConnection", ("qps", "burst"))
    return ClientConnection(
        qps=DEFAULT_CLIENT_QPS if cc.get("qps") is None else d.number(cc["qps"], "clientConnection.qps", "float32"),
        burst=DEFAULT_CLIENT_BURST if cc.get("burst") is None else d.integer(cc["burst"], "clientConnection.burst"),
    )


def _requeuing_strategy(d: Decoder, raw: Any) -> RequeuingStrategy:
    p = "waitForPodsReady.requeuingStrategy"
    rs = d.obj(raw, p, ("timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"))
    defaults = RequeuingStrategy()

    def int_or(key: str, default: int) -> int:
        return default if rs.get(key) is None else d.integer(rs[key], f"{p}.{key}")

    return RequeuingStrategy(
        timestamp=defaults.timestamp if rs.get("timestamp") is None else d.string(rs["timestamp"], f"{p}.timestamp"),
        backoff_limit_count=_opt(rs.get("backoffLimitCount"), d.integer, f"{p}.backoffLimitCount"),
        backoff_base_seconds=int_or("backoffBaseSeconds", defaults.backoff_base_seconds),
        backoff_max_seconds=int_or("backoffMaxSeconds", defaults.backoff_max_seconds),
    )


def _wait_for_pods_ready(d: Decoder, raw: Any) -> WaitForPodsReady | None:
    p = "waitForPodsReady"
    keys = ("timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout")
    w = d.obj(raw, p, (*keys, "enable") if d.v1beta1 else keys)
    timeout_ns = None if w.get("timeout") is None else d.duration(w["timeout"], f"{p}.timeout")
    recovery_ns = None if w.get("recoveryTimeout") is None else d.duration(w["recoveryTimeout"], f"{p}.recoveryTimeout")
    block = None if w.get("blockAdmission") is None else d.boolean(w["blockAdmission"], f"{p}.blockAdmission")
    strategy = _requeuing_strategy(d, w.get("requeuingStrategy"))
    if d.v1beta1:
        # v1beta1 has an `enable` flag; conversion drops the whole struct when it is false.
        if not d.boolean(w.get("enable", False), f"{p}.enable"):
            return None
        timeout_s = to_seconds(5 * 60 * 10**9 if timeout_ns is None else timeout_ns)
        block_admission = True if block is None else block
    else:
        # v1beta2: the struct always exists after defaulting, so waitForPodsReady is on.
        timeout_s = DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT_S if not timeout_ns else to_seconds(timeout_ns)
        block_admission = False if block is None else block
    return WaitForPodsReady(
        timeout_s=timeout_s,
        block_admission=block_admission,
        requeuing_strategy=strategy,
        recovery_timeout_s=timeout_s if recovery_ns is None else to_seconds(recovery_ns),
    )


def _integrations(d: Decoder, raw: Any) -> Integrations:
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


def _multi_kueue(d: Decoder, raw: Any) -> MultiKueue:
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
        idc = IncrementalDispatcherConfig(
            multikueue.DEFAULT_STEP_SIZE if idc is None or idc.step_size is None else idc.step_size
        )
    cp = mk.get("clusterProfile")
    return MultiKueue(
        gc_interval_s=defaults.gc_interval_s
        if mk.get("gcInterval") is None
        else to_seconds(d.duration(mk["gcInterval"], f"{p}.gcInterval")),
        origin=d.string(mk.get("origin", ""), f"{p}.origin") or defaults.origin,
        worker_lost_timeout_s=defaults.worker_lost_timeout_s
        if mk.get("workerLostTimeout") is None
        else to_seconds(d.duration(mk["workerLostTimeout"], f"{p}.workerLostTimeout")),
        dispatcher_name=dispatcher,
        external_frameworks=tuple(names),
        incremental_dispatcher_config=idc,
        cluster_profile=None if cp is None else MappingProxyType(dict(d.obj(cp, f"{p}.clusterProfile", cp or ()))),
    )


def _fair_sharing(d: Decoder, raw: Any) -> FairSharing | None:
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


def _admission_fair_sharing(d: Decoder, raw: Any) -> AdmissionFairSharing | None:
    if raw is None:
        return None
    p = "admissionFairSharing"
    afs = d.obj(raw, p, ("usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"))
    half_life = (
        0 if afs.get("usageHalfLifeTime") is None else d.duration(afs["usageHalfLifeTime"], f"{p}.usageHalfLifeTime")
    )
    interval = (
        0
        if afs.get("usageSamplingInterval") is None
        else d.duration(afs["usageSamplingInterval"], f"{p}.usageSamplingInterval")
    )
    weights = d.obj(afs.get("resourceWeights"), f"{p}.resourceWeights", afs.get("resourceWeights") or ())
    return AdmissionFairSharing(
        usage_half_life_time_s=to_seconds(half_life),
        usage_sampling_interval_s=to_seconds(interval) if interval else 300.0,
        resource_weights=MappingProxyType(
            {str(k): d.number(v, f"{p}.resourceWeights.{k}") for k, v in weights.items()}
        ),
    )


def _resources(d: Decoder, raw: Any) -> Resources:
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
                outputs=MappingProxyType({str(k): _quantity(v, f"{tp}.outputs.{k}") for k, v in outputs.items()}),
            )
        )
    mappings = []
    mapping_keys = ("name", "deviceClassNames") + (() if d.v1beta1 else ("sources",))
    for i, item in enumerate(d.list(r.get("deviceClassMappings"), f"{p}.deviceClassMappings")):
        mp = f"{p}.deviceClassMappings[{i}]"
        m = d.obj(item, mp, mapping_keys)
        mappings.append(
            DeviceClassMapping(
                name=d.string(m.get("name", ""), f"{mp}.name"),
                device_class_names=d.strings(m.get("deviceClassNames"), f"{mp}.deviceClassNames"),
                sources=tuple(
                    MappingProxyType(dict(d.obj(src, f"{mp}.sources[{j}]", ("counter", "capacity"))))
                    for j, src in enumerate(d.list(m.get("sources"), f"{mp}.sources"))
                ),
            )
        )
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


def _object_retention_policies(d: Decoder, raw: Any) -> ObjectRetentionPolicies:
    p = "objectRetentionPolicies"
    orp = d.obj(raw, p, ("workloads",))
    w = d.obj(orp.get("workloads"), f"{p}.workloads", ("afterFinished", "afterDeactivatedByKueue"))

    def dur(key: str) -> float | None:
        return None if w.get(key) is None else to_seconds(d.duration(w[key], f"{p}.workloads.{key}"))

    return ObjectRetentionPolicies(WorkloadRetentionPolicy(dur("afterFinished"), dur("afterDeactivatedByKueue")))


def _visibility_server(d: Decoder, raw: Any) -> VisibilityServer:
    vs = d.obj(raw, "visibilityServer", ("bindAddress", "bindPort"))
    return VisibilityServer(
        bind_address=_opt(vs.get("bindAddress"), d.string, "visibilityServer.bindAddress"),
        bind_port=DEFAULT_VISIBILITY_BIND_PORT
        if vs.get("bindPort") is None
        else d.integer(vs["bindPort"], "visibilityServer.bindPort"),
    )


def _queue_visibility(d: Decoder, raw: Any) -> None:
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


def decode_document(d: Decoder, doc: Mapping[str, Any]) -> Configuration:
    top = d.obj(doc, "", (*_TOP_LEVEL_KEYS, "queueVisibility" if d.v1beta1 else "visibilityServer"))
    namespace = operator_namespace() if top.get("namespace") is None else d.string(top["namespace"], "namespace")
    selector = d.selector(top.get("managedJobsNamespaceSelector"), "managedJobsNamespaceSelector")
    gates = d.obj(top.get("featureGates"), "featureGates", top.get("featureGates") or ())
    if d.v1beta1 and top.get("queueVisibility") is not None:
        _queue_visibility(d, top["queueVisibility"])
    return Configuration(
        namespace=namespace,
        manage_jobs_without_queue_name=d.boolean(
            top.get("manageJobsWithoutQueueName", False), "manageJobsWithoutQueueName"
        ),
        managed_jobs_namespace_selector=AUTO_SELECTOR if selector is None else selector,
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
        visibility_server=VisibilityServer() if d.v1beta1 else _visibility_server(d, top.get("visibilityServer")),
        feature_gates=MappingProxyType({str(k): d.boolean(v, f"featureGates.{k}") for k, v in gates.items()}),
    )
