"""webhook.config: decoding, per-version defaults, v1beta1 conversion, validation messages."""

from __future__ import annotations

import dataclasses

import pytest

from webhook import config
from webhook.config import ConfigError, Configuration, Feature
from webhook.config import types as config_types

V1 = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
NS_LABEL = "kubernetes.io/metadata.name"


@pytest.fixture(autouse=True)
def _no_service_account(monkeypatch, tmp_path):
    """Tests run outside a pod unless they say otherwise."""
    monkeypatch.setattr(config_types, "_SERVICE_ACCOUNT_NAMESPACE_FILE", str(tmp_path / "absent"))


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        config.parse(text)
    return str(info.value)


def test_exported_members_exist():
    for name in config.__all__:
        assert hasattr(config, name), name


# --- defaults -------------------------------------------------------------------------------------


def test_no_file_defaults():
    cfg = Configuration()
    assert cfg.namespace == "kueue-system"
    assert cfg.manage_jobs_without_queue_name is False
    assert dict(cfg.managed_jobs_namespace_selector) == {
        "matchExpressions": ({"key": NS_LABEL, "operator": "NotIn", "values": ("kube-system", "kueue-system")},)
    }
    assert cfg.integrations == config.Integrations(("batch/job",), (), ())
    assert cfg.webhook == config.Webhook(9443, "", "/tmp/k8s-webhook-server/serving-certs")
    assert cfg.internal_cert_management == config.InternalCertManagement(
        True, "kueue-webhook-service", "kueue-webhook-server-cert"
    )
    assert cfg.leader_election == config.LeaderElection(True, "c1f6bfd2.kueue.x-k8s.io", "", 15.0, 10.0, 2.0, "leases")
    assert cfg.health.health_probe_bind_address == ":8081"
    assert cfg.metrics.bind_address == ":8443"
    assert cfg.metrics.enable_cluster_queue_resources is False
    assert cfg.metrics.local_queue_metrics.enable is True
    assert cfg.client_connection == config.ClientConnection(300.0, 500)
    assert cfg.wait_for_pods_ready == config.WaitForPodsReady(
        timeout_s=1800.0,
        block_admission=False,
        requeuing_strategy=config.RequeuingStrategy("Eviction", None, 60, 3600),
        recovery_timeout_s=1800.0,
    )
    assert cfg.wait_for_pods_ready_enabled
    assert cfg.fair_sharing is None
    assert cfg.admission_fair_sharing is None
    assert cfg.resources == config.Resources()
    assert cfg.resources.quota_check_strategy is None
    assert cfg.object_retention_policies.workloads == config.WorkloadRetentionPolicy(None, None)
    assert cfg.visibility_server.bind_port == 8082
    assert cfg.multi_kueue.gc_interval_s == 60.0
    assert cfg.multi_kueue.dispatcher_name == "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
    assert dict(cfg.feature_gates) == {}


def test_configuration_is_frozen():
    cfg = Configuration()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.namespace = "x"  # type: ignore[misc]


def test_namespace_from_service_account(monkeypatch, tmp_path):
    path = tmp_path / "namespace"
    path.write_text("tenant-a\n")
    monkeypatch.setattr(config_types, "_SERVICE_ACCOUNT_NAMESPACE_FILE", str(path))
    cfg = Configuration()
    assert cfg.namespace == "tenant-a"
    assert cfg.managed_jobs_namespace_selector["matchExpressions"][0]["values"] == ("kube-system", "tenant-a")


def test_default_selector_follows_namespace():
    cfg = config.parse(V2 + "namespace: tenant-b\n")
    assert cfg.namespace == "tenant-b"
    assert cfg.managed_jobs_namespace_selector["matchExpressions"][0]["values"] == ("kube-system", "tenant-b")


def test_load_without_file_is_defaults():
    assert config.load(None) == Configuration()
    assert config.load("") == Configuration()


def test_empty_v1beta2_file_is_defaults(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(V2)
    assert config.load(str(path)) == Configuration()


def test_load_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"absent\.yaml"):
        config.load(str(tmp_path / "absent.yaml"))


def test_explicit_values_override_defaults():
    cfg = config.parse(
        V2
        + """
manageJobsWithoutQueueName: true
webhook: {port: 0, host: 0.0.0.0, certDir: /certs}
clientConnection: {qps: 0, burst: 10}
leaderElection: {leaderElect: false, leaseDuration: 30s, resourceNamespace: kube-system}
metrics: {bindAddress: ":9090", enableClusterQueueResources: true, localQueueMetrics: {}}
health: {readinessEndpointName: /ready}
integrations: {frameworks: [batch/job, pod], labelKeysToCopy: [team]}
controller: {groupKindConcurrency: {Job.batch: 5}, cacheSyncTimeout: 120000000000}
objectRetentionPolicies: {workloads: {afterFinished: 1h}}
resources:
  excludeResourcePrefixes: [example.com/]
  transformations: [{input: nvidia.com/mig-1g.5gb, outputs: {example.com/accelerator-memory: 5Gi}}]
"""
    )
    assert cfg.manage_jobs_without_queue_name is True
    # Pointers keep explicit zero values; strings fall back to defaults when empty.
    assert cfg.webhook == config.Webhook(0, "0.0.0.0", "/certs")
    assert cfg.client_connection == config.ClientConnection(0.0, 10)
    assert cfg.leader_election.leader_elect is False
    assert cfg.leader_election.lease_duration_s == 30.0
    assert cfg.leader_election.renew_deadline_s == 10.0
    assert cfg.leader_election.resource_namespace == "kube-system"
    # An explicit localQueueMetrics struct has enable=false.
    assert cfg.metrics.local_queue_metrics.enable is False
    assert cfg.metrics.bind_address == ":9090"
    assert cfg.health.readiness_endpoint_name == "/ready"
    assert cfg.integrations.frameworks == ("batch/job", "pod")
    assert cfg.integrations.label_keys_to_copy == ("team",)
    assert dict(cfg.controller.group_kind_concurrency) == {"Job.batch": 5}
    assert cfg.controller.cache_sync_timeout_s == 120.0
    assert cfg.object_retention_policies.workloads.after_finished_s == 3600.0
    assert cfg.resources.transformations[0].strategy == "Retain"
    assert dict(cfg.resources.transformations[0].outputs) == {"example.com/accelerator-memory": "5Gi"}


def test_empty_frameworks_default_to_batch_job():
    assert config.parse(V2 + "integrations: {frameworks: []}\n").integrations.frameworks == ("batch/job",)


# --- waitForPodsReady / fairSharing across versions -----------------------------------------------------


def test_wait_for_pods_ready_v1beta2_always_enabled():
    cfg = config.parse(V2 + "waitForPodsReady: {timeout: 0s, blockAdmission: true}\n")
    assert cfg.wait_for_pods_ready is not None
    assert cfg.wait_for_pods_ready.timeout_s == 1800.0
    assert cfg.wait_for_pods_ready.block_admission is True


def test_wait_for_pods_ready_v1beta2_recovery_timeout_defaults_to_timeout():
    cfg = config.parse(V2 + "waitForPodsReady: {timeout: 10m}\n")
    assert cfg.wait_for_pods_ready is not None
    assert cfg.wait_for_pods_ready.recovery_timeout_s == 600.0
    cfg = config.parse(V2 + "waitForPodsReady: {timeout: 10m, recoveryTimeout: 1m}\n")
    assert cfg.wait_for_pods_ready is not None
    assert cfg.wait_for_pods_ready.recovery_timeout_s == 60.0


def test_wait_for_pods_ready_v1beta1_disabled_by_default():
    assert config.parse(V1).wait_for_pods_ready is None
    assert config.parse(V1 + "waitForPodsReady: {enable: false, timeout: 10m}\n").wait_for_pods_ready is None


def test_wait_for_pods_ready_v1beta1_enabled_defaults():
    cfg = config.parse(V1 + "waitForPodsReady: {enable: true}\n")
    assert cfg.wait_for_pods_ready == config.WaitForPodsReady(
        timeout_s=300.0,
        block_admission=True,
        requeuing_strategy=config.RequeuingStrategy(),
        recovery_timeout_s=300.0,
    )


def test_wait_for_pods_ready_disabled_by_gate():
    cfg = config.parse(V2 + "featureGates: {DisableWaitForPodsReady: true}\n")
    assert cfg.wait_for_pods_ready is None
    assert not cfg.wait_for_pods_ready_enabled
    assert Configuration(feature_gates={"DisableWaitForPodsReady": True}).wait_for_pods_ready is None


def test_fair_sharing_v1beta2_presence_enables():
    cfg = config.parse(V2 + "fairSharing: {preemptionStrategies: [LessThanInitialShare]}\n")
    assert cfg.fair_sharing == config.FairSharing(("LessThanInitialShare",))


@pytest.mark.parametrize(
    ("stanza", "expected"),
    [
        pytest.param("", None, id="absent"),
        pytest.param("fairSharing: {enable: false}\n", None, id="disabled"),
        pytest.param(
            "fairSharing: {enable: true}\n",
            config.FairSharing(("LessThanOrEqualToFinalShare", "LessThanInitialShare")),
            id="enabled gets both strategies",
        ),
        pytest.param(
            "fairSharing: {enable: true, preemptionStrategies: [LessThanInitialShare]}\n",
            config.FairSharing(("LessThanInitialShare",)),
            id="enabled keeps given strategies",
        ),
    ],
)
def test_fair_sharing_v1beta1(stanza, expected):
    assert config.parse(V1 + stanza).fair_sharing == expected


def test_v1beta1_only_fields_are_accepted_and_dropped():
    cfg = config.parse(
        V1
        + """
integrations:
  frameworks: [pod]
  podOptions:
    namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]}
queueVisibility: {updateIntervalSeconds: 5, clusterQueues: {maxCount: 10}}
"""
    )
    assert cfg.integrations.frameworks == ("pod",)


@pytest.mark.parametrize(
    ("text", "unknown"),
    [
        pytest.param(V1 + "visibilityServer: {bindPort: 8082}\n", "visibilityServer", id="visibilityServer in v1beta1"),
        pytest.param(V2 + "queueVisibility: {}\n", "queueVisibility", id="queueVisibility in v1beta2"),
        pytest.param(V2 + "integrations: {podOptions: {}}\n", "integrations.podOptions", id="podOptions in v1beta2"),
        pytest.param(V2 + "waitForPodsReady: {enable: true}\n", "waitForPodsReady.enable", id="enable in v1beta2"),
        pytest.param(V2 + "fairSharing: {enable: true}\n", "fairSharing.enable", id="fairSharing.enable in v1beta2"),
        pytest.param(V1 + "resources: {quotaCheckStrategy: BlockUndeclared}\n", "resources.quotaCheckStrategy",
                     id="quotaCheckStrategy in v1beta1"),
    ],
)  # fmt: skip
def test_version_specific_fields_are_unknown_elsewhere(text, unknown):
    assert error_of(text) == f'strict decoding error: unknown field "{unknown}"'


# --- strict decoding ------------------------------------------------------------------------------------


def test_unknown_fields_are_all_reported_with_paths():
    text = V2 + "invalidField: 1\nintegrations: {framework: [pod]}\nresources: {transformations: [{input: a, x: 1}]}\n"
    assert error_of(text) == (
        'strict decoding error: unknown field "invalidField", unknown field "integrations.framework", '
        'unknown field "resources.transformations[0].x"'
    )


def test_duplicate_keys_rejected():
    assert 'key "namespace" already set in map' in error_of(V2 + "namespace: a\nnamespace: b\n")


@pytest.mark.parametrize(
    ("stanza", "message"),
    [
        pytest.param("webhook: {port: abc}\n", "webhook.port of type int", id="string for int"),
        pytest.param("manageJobsWithoutQueueName: 'yes'\n", "manageJobsWithoutQueueName of type bool", id="bool"),
        pytest.param("integrations: {frameworks: pod}\n", "integrations.frameworks of type []string", id="list"),
        pytest.param("waitForPodsReady: {timeout: 5}\n", "waitForPodsReady.timeout of type string", id="duration type"),
        pytest.param("waitForPodsReady: {timeout: 5x}\n", 'waitForPodsReady.timeout: time: unknown unit "x" in duration "5x"',
                     id="duration unit"),
        pytest.param("clientConnection: {burst: 4294967296}\n", "clientConnection.burst of type int32", id="int32 range"),
    ],
)  # fmt: skip
def test_type_errors_name_the_field(stanza, message):
    assert message in error_of(V2 + stanza)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("apiVersion: config.kueue.x-k8s.io/v1\nkind: Configuration\n",
                     'no kind "Configuration" is registered for version "config.kueue.x-k8s.io/v1"', id="version"),
        pytest.param("apiVersion: config.kueue.x-k8s.io/v1beta2\n", "Object 'Kind' is missing", id="kind"),
        pytest.param("", "Object 'Kind' is missing", id="empty"),
        pytest.param("- a\n", "cannot unmarshal array", id="not a mapping"),
    ],
)  # fmt: skip
def test_document_errors(text, message):
    assert message in error_of(text)


# --- feature gates ----------------------------------------------------------------------------------------


def test_feature_enabled_defaults_and_overrides():
    cfg = Configuration()
    assert cfg.feature_enabled(Feature.PARTIAL_ADMISSION)
    assert cfg.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
    assert cfg.feature_enabled(Feature.MANAGED_JOBS_NAMESPACE_SELECTOR_ALWAYS_RESPECTED)
    assert not cfg.feature_enabled(Feature.SHORT_WORKLOAD_NAMES)
    assert not cfg.feature_enabled(Feature.DISABLE_WAIT_FOR_PODS_READY)
    assert not cfg.feature_enabled(Feature.UNADMITTED_WORKLOADS_EXPLICIT_STATUS)
    with pytest.raises(AttributeError):  # a misspelt gate is an error, never silently off
        cfg.feature_enabled(Feature.NO_SUCH_GATE)  # type: ignore[attr-defined]
    cfg = config.parse(V2 + "featureGates: {PartialAdmission: false, ShortWorkloadNames: true}\n")
    assert not cfg.feature_enabled(Feature.PARTIAL_ADMISSION)
    assert cfg.feature_enabled(Feature.SHORT_WORKLOAD_NAMES)


# Upstream's TAS sub-features on by default: turning TAS off needs each of them off too.
TAS_SUB_GATES_OFF = ", ".join(
    f"{g}: false"
    for g in (
        "TASHandleOverlappingFlavors",
        "TASFailedNodeReplacement",
        "TASFailedNodeReplacementFailFast",
        "TASReplaceNodeOnPodTermination",
        "TASReplaceNodeOnNodeTaints",
        "TASMultiLayerTopology",
        "TASRecomputeAssignmentWithinSchedulingCycle",
    )
)


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        pytest.param("{Foo: true}", 'featureGates: Invalid value: {"Foo":true}: unrecognized feature gate: Foo',
                     id="unknown gate"),
        pytest.param("{MultiKueueAllowInsecureKubeconfigs: true}",
                     'featureGates: Invalid value: {"MultiKueueAllowInsecureKubeconfigs":true}: cannot set feature '
                     "gate MultiKueueAllowInsecureKubeconfigs to true, feature is locked to false",
                     id="deprecated gate locked off"),
        pytest.param("{ObjectRetentionPolicies: false}",
                     'featureGates: Invalid value: {"ObjectRetentionPolicies":false}: cannot set feature gate '
                     "ObjectRetentionPolicies to false, feature is locked to true", id="gate graduated in v0.19"),
        pytest.param("{TopologyAwareScheduling: false, " + TAS_SUB_GATES_OFF + "}",
                     "featureGates: Invalid value: 1: cannot use a TAS profile with TAS disabled",
                     id="TAS off with the mixed profile on"),
        pytest.param("{TopologyAwareScheduling: false, TASProfileMixed: false}",
                     "[" + ", ".join(
                         f'featureGates: Invalid value: "{g}": {g} requires TopologyAwareScheduling to be enabled'
                         for g in ("TASHandleOverlappingFlavors", "TASFailedNodeReplacement",
                                   "TASFailedNodeReplacementFailFast", "TASReplaceNodeOnPodTermination",
                                   "TASReplaceNodeOnNodeTaints", "TASMultiLayerTopology",
                                   "TASRecomputeAssignmentWithinSchedulingCycle")) + "]",
                     id="TAS off with its default-on sub-features on"),
        pytest.param("{TASReplaceNodeDueToNotReadyOverFixedTime: true, TASFailedNodeReplacement: false, "
                     "TASFailedNodeReplacementFailFast: false, TASReplaceNodeOnPodTermination: false}",
                     'featureGates: Invalid value: "TASReplaceNodeDueToNotReadyOverFixedTime": '
                     "TASReplaceNodeDueToNotReadyOverFixedTime requires TASFailedNodeReplacement to be enabled",
                     id="TAS sub-feature without its parent"),
        pytest.param("{UnadmittedWorkloadsExplicitStatus: true, UnadmittedWorkloadsObservability: false}",
                     'featureGates: Invalid value: "UnadmittedWorkloadsExplicitStatus": UnadmittedWorkloadsExplicitStatus '
                     "requires UnadmittedWorkloadsObservability to be enabled", id="explicit status without observability"),
        pytest.param("{ElasticJobsViaWorkloadSlicesWithTAS: true, ElasticJobsViaWorkloadSlices: false}",
                     'featureGates: Invalid value: "ElasticJobsViaWorkloadSlicesWithTAS": '
                     "ElasticJobsViaWorkloadSlicesWithTAS requires ElasticJobsViaWorkloadSlices to be enabled",
                     id="elastic TAS without elastic jobs"),
        pytest.param("{KueueDRAIntegration: false, KueueDRAIntegrationPartitionableDevices: false, "
                     "KueueDRAIntegrationConsumableCapacity: false}",
                     'featureGates: Invalid value: "KueueDRAIntegrationExtendedResource": '
                     "KueueDRAIntegrationExtendedResource requires KueueDRAIntegration to be enabled",
                     id="DRA sub-feature without DRA"),
    ],
)  # fmt: skip
def test_feature_gate_errors(gates, message):
    assert error_of(V2 + f"featureGates: {gates}\n") == message


def test_feature_gates_flag_sets_the_gates():
    """`--feature-gates` (cmd/kueue/main.go) replaces the file's gates; spaces and Go's bool spellings."""
    cfg = config.parse(V2, " ShortWorkloadNames = T ,,PartialAdmission=0")
    assert cfg.feature_enabled(Feature.SHORT_WORKLOAD_NAMES)
    assert not cfg.feature_enabled(Feature.PARTIAL_ADMISSION)
    assert config.load(None, "DisableWaitForPodsReady=true").wait_for_pods_ready is None
    assert config.load(None).wait_for_pods_ready is not None


def test_configuration_is_validated_with_the_flags_gates():
    """config.Validate runs after the flag is applied: a gate it turns off turns its checks off."""
    text = V2 + "resources: {quotaCheckStrategy: Bogus}\n"
    assert error_of(text).startswith('resources.quotaCheckStrategy: Unsupported value: "Bogus"')
    assert config.parse(text, "QuotaCheckStrategy=false").resources.quota_check_strategy == "Bogus"


@pytest.mark.parametrize(
    ("text", "flag", "message"),
    [
        pytest.param(V2, "Foo", 'featureGates: Invalid value: "Foo": missing bool value for Foo', id="no value"),
        pytest.param(V2, "PartialAdmission=yes",
                     'featureGates: Invalid value: "PartialAdmission=yes": invalid value of PartialAdmission=yes, '
                     'err: strconv.ParseBool: parsing "yes": invalid syntax', id="not a Go bool"),
        pytest.param(V2, "Foo=true", 'featureGates: Invalid value: "Foo=true": unrecognized feature gate: Foo',
                     id="unknown gate"),
        pytest.param(V2, "MultiKueueAllowInsecureKubeconfigs=true",
                     'featureGates: Invalid value: "MultiKueueAllowInsecureKubeconfigs=true": cannot set feature gate '
                     "MultiKueueAllowInsecureKubeconfigs to true, feature is locked to false", id="locked gate"),
        pytest.param(V2 + "featureGates: {PartialAdmission: true}\n", "ShortWorkloadNames=true",
                     'featureGates: Invalid value: {"PartialAdmission":true}: feature gates for CLI and configuration '
                     "cannot both specified", id="flag and file"),
        pytest.param(V2, "ElasticJobsViaWorkloadSlicesWithTAS=true,ElasticJobsViaWorkloadSlices=false",
                     'featureGates: Invalid value: "ElasticJobsViaWorkloadSlicesWithTAS": '
                     "ElasticJobsViaWorkloadSlicesWithTAS requires ElasticJobsViaWorkloadSlices to be enabled",
                     id="dependency"),
    ],
)  # fmt: skip
def test_feature_gates_flag_errors(text, flag, message):
    with pytest.raises(ConfigError) as info:
        config.parse(text, flag)
    assert str(info.value) == message


def test_gates_graduated_by_v0_19_are_accepted_on():
    """v0.19.2 still knows these GA gates (locked on): a Configuration written for it keeps loading."""
    cfg = config.parse(V2 + "featureGates: {ObjectRetentionPolicies: true, HierarchicalCohorts: true}\n")
    assert cfg.feature_enabled(Feature.OBJECT_RETENTION_POLICIES)


def test_tas_can_be_disabled_with_its_profile_and_sub_features():
    cfg = config.parse(
        V2 + "featureGates: {TopologyAwareScheduling: false, TASProfileMixed: false, " + TAS_SUB_GATES_OFF + "}\n"
    )
    config.check_implemented(cfg)  # turning unimplemented TAS sub-features off is what pykueue does anyway
    assert not cfg.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)


def test_tls_options_gate_can_be_turned_off():
    cfg = config.parse(V2 + "featureGates: {TLSOptions: false}\n")
    assert not cfg.feature_enabled(Feature.TLS_OPTIONS)


def test_multikueue_insecure_kubeconfigs_defaults_off():
    assert not Configuration().feature_enabled(Feature.MULTI_KUEUE_ALLOW_INSECURE_KUBECONFIGS)
    config.parse(V2 + "featureGates: {MultiKueueAllowInsecureKubeconfigs: false}\n")


# --- validation -----------------------------------------------------------------------------------------

_SUPPORTED = ", ".join(f'"{f}"' for f in config.supported_frameworks())


@pytest.mark.parametrize(
    ("stanza", "message"),
    [
        pytest.param("integrations: {frameworks: [batch/job, foo]}\n",
                     f'integrations.frameworks[1]: Unsupported value: "foo": supported values: {_SUPPORTED}',
                     id="unknown framework"),
        pytest.param("integrations: {frameworks: [pod, pod]}\n",
                     'integrations.frameworks[1]: Duplicate value: "pod"', id="duplicate framework"),
        pytest.param("integrations: {externalFrameworks: [Foo]}\n",
                     "integrations.externalFrameworks[0]: Invalid value: \"Foo\": must be format, "
                     "'Kind.version.group.com'", id="external framework format"),
        pytest.param("integrations: {externalFrameworks: [Job.v1.batch]}\n",
                     'integrations.externalFrameworks[0]: Duplicate value: "Job.v1.batch"',
                     id="external framework duplicates a built-in"),
        pytest.param("integrations: {frameworks: [pod]}\nmanagedJobsNamespaceSelector: {matchLabels: {team: a}}\n",
                     "", id="pod with a selector that exempts system namespaces"),
        pytest.param(
            "integrations: {frameworks: [pod]}\n"
            "managedJobsNamespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, "
            "values: [kube-system]}]}\n",
            'managedJobsNamespaceSelector: Invalid value: {"matchExpressions":[{"key":"kubernetes.io/metadata.name",'
            '"operator":"NotIn","values":["kube-system"]}]}: should not match the "kueue-system" namespace',
            id="selector must exempt the kueue namespace"),
        pytest.param(
            "managedJobsNamespaceSelector: {}\n",
            '[managedJobsNamespaceSelector: Invalid value: {}: should not match the "kube-system" namespace, '
            'managedJobsNamespaceSelector: Invalid value: {}: should not match the "kueue-system" namespace]',
            id="empty selector matches system namespaces"),
        pytest.param(
            "managedJobsNamespaceSelector: {matchExpressions: [{key: a, operator: In}]}\n",
            "managedJobsNamespaceSelector.matchExpressions[0].values: Required value: must be specified when "
            "`operator` is 'In' or 'NotIn'", id="invalid selector"),
        pytest.param("waitForPodsReady: {timeout: -1m}\n",
                     "[waitForPodsReady.timeout: Invalid value: -1m0s: must be greater than or equal to 0, "
                     "waitForPodsReady.recoveryTimeout: Invalid value: -1m0s: must be greater than or equal to 0]",
                     id="negative timeout"),
        pytest.param("waitForPodsReady: {requeuingStrategy: {timestamp: Now, backoffLimitCount: -1}}\n",
                     '[waitForPodsReady.requeuingStrategy.timestamp: Unsupported value: "Now": supported values: '
                     '"Creation", "Eviction", waitForPodsReady.requeuingStrategy.backoffLimitCount: Invalid value: -1: '
                     "must be greater than or equal to 0]", id="requeuing strategy"),
        pytest.param("fairSharing: {preemptionStrategies: []}\n",
                     "fairSharing.preemptionStrategies: Required value: must be specified", id="no strategies"),
        pytest.param("fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}\n",
                     'fairSharing.preemptionStrategies: Unsupported value: ["LessThanInitialShare",'
                     '"LessThanOrEqualToFinalShare"]: supported values: "LessThanOrEqualToFinalShare", '
                     '"LessThanInitialShare", "LessThanOrEqualToFinalShare,LessThanInitialShare"',
                     id="strategies out of order"),
        pytest.param("admissionFairSharing: {usageHalfLifeTime: 10m, usageSamplingInterval: -1s}\n",
                     "admissionFairSharing.usageSamplingInterval: Invalid value: 10m0s: must be greater than 0",
                     id="sampling interval reports the half-life"),
        pytest.param("admissionFairSharing: {resourceWeights: {cpu: -1}}\n",
                     'admissionFairSharing.resourceWeights[cpu]: Invalid value: {"cpu":-1}: must be greater than or '
                     "equal to 0", id="negative weight"),
        pytest.param("internalCertManagement: {webhookServiceName: Svc}\n",
                     'internalCertManagement.webhookServiceName: Invalid value: "Svc": a DNS-1035 label must consist '
                     "of lower case alphanumeric characters or '-', start with an alphabetic character, and end with "
                     "an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                     "'[a-z]([-a-z0-9]*[a-z0-9])?')", id="service name"),
        pytest.param("internalCertManagement: {enable: false, webhookServiceName: Svc}\n", "",
                     id="names unchecked when disabled"),
        pytest.param("resources: {transformations: [{input: a, strategy: Drop}, {input: a}]}\n",
                     '[resources.transformations[0].strategy: Unsupported value: "Drop": supported values: "Retain", '
                     '"Replace", resources.transformations[1].input: Duplicate value: "a"]', id="transformations"),
        pytest.param("resources: {quotaCheckStrategy: IgnoreUndeclared, excludeResourcePrefixes: [x]}\n",
                     'resources.quotaCheckStrategy: Invalid value: "IgnoreUndeclared": excludeResourcePrefixes is not '
                     "allowed when quotaCheckStrategy is IgnoreUndeclared", id="quota check strategy"),
        pytest.param("resources: {quotaCheckStrategy: Other}\n",
                     'resources.quotaCheckStrategy: Unsupported value: "Other": supported values: "IgnoreUndeclared", '
                     '"BlockUndeclared"', id="unknown quota check strategy"),
        pytest.param("objectRetentionPolicies: {workloads: {afterFinished: -1s, afterDeactivatedByKueue: -90m}}\n",
                     "[objectRetentionPolicies.workloads.afterFinished: Invalid value: -1s: must be greater than or "
                     'equal to 0, objectRetentionPolicies.workloads.afterDeactivatedByKueue: Invalid value: "-1h30m0s": '
                     "must be greater than or equal to 0]", id="retention"),
        pytest.param("visibilityServer: {bindAddress: localhost, bindPort: 70000}\n",
                     '[visibilityServer.bindAddress: Invalid value: "localhost": must be a valid IP address, '
                     "visibilityServer.bindPort: Invalid value: 70000: must be a valid port number (1-65535)]",
                     id="visibility server"),
        pytest.param("multiKueue: {gcInterval: -1s}\n",
                     "multiKueue.gcInterval: Invalid value: -1s: must be greater than or equal to 0", id="multikueue"),
        pytest.param("multiKueue: {externalFrameworks: [{name: Job.v1.batch}]}\n",
                     'multiKueue.externalFrameworks[0].name: Invalid value: "Job.v1.batch": conflicts with a built-in '
                     "MultiKueue adapter", id="multikueue external framework"),
        pytest.param("tls: {minVersion: VersionTLS13, cipherSuites: [TLS_AES_128_GCM_SHA256]}\n",
                     'tls.cipherSuites: Invalid value: ["TLS_AES_128_GCM_SHA256"]: may not be specified when '
                     "`minVersion` is 'VersionTLS13'", id="tls"),
        pytest.param("metrics: {customLabels: [{name: 1bad}, {name: team, sourceKind: Workload}]}\n",
                     '[metrics.customLabels[0].name: Invalid value: "1bad": must match ^[a-zA-Z][a-zA-Z0-9_]*$, '
                     "metrics.customLabels[1].trackedValues: Invalid value: null: must not be empty when sourceKind "
                     "is 'Workload']", id="custom labels"),
    ],
)  # fmt: skip
def test_validation_messages(stanza, message):
    if not message:
        config.parse(V2 + stanza)
        return
    assert error_of(V2 + stanza) == message


def test_origin_label_value_message():
    assert error_of(V2 + "multiKueue: {origin: 'a b'}\n").startswith(
        'multiKueue.origin: Invalid value: "a b": a valid label must be an empty string'
    )


def test_validation_errors_are_exposed_as_field_errors():
    with pytest.raises(ConfigError) as info:
        config.parse(V2 + "integrations: {frameworks: [foo, bar]}\n")
    assert [e.path for e in info.value.errors] == ["integrations.frameworks[0]", "integrations.frameworks[1]"]


def test_pod_integration_requires_a_selector():
    # Unreachable from a file (defaulting always sets it), but kept like upstream's check.
    cfg = dataclasses.replace(
        Configuration(),
        integrations=config.Integrations(("pod",)),
        managed_jobs_namespace_selector=None,  # type: ignore[arg-type]
    )
    assert [str(e) for e in config.validate(cfg)] == [
        "managedJobsNamespaceSelector: Required value: cannot be empty when pod integration is enabled"
    ]


def test_pod_integration_with_default_selector_is_valid():
    cfg = config.parse(V2 + "integrations: {frameworks: [batch/job, pod]}\n")
    assert "pod" in cfg.integrations.frameworks


def test_upstream_shipped_config_is_valid():
    """Upstream's own shipped Configuration (config/components/manager/controller_manager_config.yaml,
    every framework listed) loads, so a user's copy of it does. Ours, as installed, is read from
    manifests/ and charts/ in tests/unit/install/test_manifests.py."""
    config.parse(
        V2
        + """
namespace: kueue-system
health: {healthProbeBindAddress: ":8081"}
metrics: {bindAddress: ":8443"}
webhook: {port: 9443}
leaderElection: {leaderElect: true, resourceName: c1f6bfd2.kueue.x-k8s.io}
controller:
  groupKindConcurrency: {Job.batch: 5, Pod: 5, Workload.kueue.x-k8s.io: 5, LocalQueue.kueue.x-k8s.io: 1,
                         Cohort.kueue.x-k8s.io: 1, ClusterQueue.kueue.x-k8s.io: 1, ResourceFlavor.kueue.x-k8s.io: 1}
clientConnection: {qps: 50, burst: 100}
integrations:
  frameworks: [batch/job, kubeflow.org/mpijob, ray.io/rayjob, ray.io/raycluster, jobset.x-k8s.io/jobset,
               kubeflow.org/paddlejob, kubeflow.org/pytorchjob, kubeflow.org/tfjob, kubeflow.org/xgboostjob,
               kubeflow.org/jaxjob, trainer.kubeflow.org/trainjob, workload.codeflare.dev/appwrapper, pod,
               deployment, statefulset, leaderworkerset.x-k8s.io/leaderworkerset]
"""
    )


# --- Go durations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ns"),
    [("0", 0), ("5m", 300 * 10**9), ("1h30m", 5400 * 10**9), ("1.5s", 1_500_000_000), ("-2ms", -2_000_000),
     ("300us", 300_000), ("1\u00b5s", 1000), ("+1h", 3600 * 10**9)],
)  # fmt: skip
def test_parse_go_duration(text, ns):
    assert config.parse_go_duration(text) == ns


@pytest.mark.parametrize(
    ("text", "message"),
    [("", 'time: invalid duration ""'), ("5", 'time: missing unit in duration "5"'),
     ("5d", 'time: unknown unit "d" in duration "5d"'), ("m", 'time: invalid duration "m"')],
)  # fmt: skip
def test_parse_go_duration_errors(text, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(") + "$"):
        config.parse_go_duration(text)


@pytest.mark.parametrize(
    ("ns", "text"),
    [(0, "0s"), (-10**9, "-1s"), (5400 * 10**9, "1h30m0s"), (60 * 10**9, "1m0s"), (1_500_000, "1.5ms"),
     (999, "999ns"), (2500, "2.5\u00b5s"), (90_500_000_000, "1m30.5s")],
)  # fmt: skip
def test_format_go_duration(ns, text):
    assert config.format_go_duration(ns) == text


@pytest.mark.parametrize(("kind", "limit"), [("ClusterQueue", 6), ("LocalQueue", 6), ("Cohort", 6), ("Workload", 2)])
def test_custom_labels_per_source_kind_are_capped_as_in_v0_19_2(kind, limit):
    """`maxCustomLabelsPerSourceKind` (pkg/config/validation.go, v0.19.2): one label past the cap is refused."""

    def stanza(count):
        entries = ", ".join(f"{{name: l{i}, sourceKind: {kind}, trackedValues: [v]}}" for i in range(count))
        return f"metrics: {{customLabels: [{entries}]}}\n"

    config.parse(V2 + stanza(limit))
    assert error_of(V2 + stanza(limit + 1)).endswith(
        f"too many custom labels for source kind {kind}: found {limit + 1}, expected <= {limit}"
    )
