"""The SparkApplication webhook through the ASGI app: suspension, upstream's denial messages.

Translated from upstream v0.19.2's `pkg/controller/jobs/sparkapplication/sparkapplication_webhook_test.go`
(`TestValidateCreate`, `TestValidateUpdate`, `TestDefault`), keeping the case names; `make` is its
`MakeSparkApplication` wrapper.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import make_spark_application
from webhook.api import integrations

from .reviews import Driver

Q = "kueue.x-k8s.io/queue-name"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
ELASTIC = "kueue.x-k8s.io/elastic-job"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
SPARK = "featureGates: {SparkApplicationIntegration: true"
FRAMEWORKS = "integrations: {frameworks: [batch/job, sparkoperator.k8s.io/sparkapplication]}\n"
MUTATE = integrations.SPARK_APPLICATION.webhook_path(mutating=True)
VALIDATE = integrations.SPARK_APPLICATION.webhook_path(mutating=False)
DYNAMIC = {"enabled": True, "minExecutors": 1, "initialExecutors": 2, "maxExecutors": 3}


def make(
    *,
    ns: str = "test",
    suspend: bool | None = False,
    queue: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    executor_annotations: dict[str, str] | None = None,
    dynamic: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`MakeSparkApplication("test-sparkapp", ns)` with the wrapper's setters used by the tables."""
    obj = make_spark_application("test-sparkapp", ns)
    meta, spec = obj["metadata"], obj["spec"]
    all_labels = {**(labels or {}), **({Q: queue} if queue else {})}
    if all_labels:
        meta["labels"] = all_labels
    if annotations:
        meta["annotations"] = dict(annotations)
    if executor_annotations:
        spec["executor"]["annotations"] = dict(executor_annotations)
    if dynamic is not None:
        spec["dynamicAllocation"] = dict(dynamic)
    if suspend is not None:
        spec["suspend"] = suspend
    return obj


def _driver(make_driver: Any, gates: str = "", extra: str = "", **lookups: Any) -> Driver:
    return make_driver(V2 + FRAMEWORKS + SPARK + (", " + gates if gates else "") + "}\n" + extra, **lookups)  # type: ignore[no-any-return]


# --- TestValidateCreate ---------------------------------------------------------------------------

TOPOLOGY_MSG = (
    'must not contain more than one topology annotation: ["kueue.x-k8s.io/podset-required-topology", '
    '"kueue.x-k8s.io/podset-preferred-topology", "kueue.x-k8s.io/podset-unconstrained-topology"]'
)


@pytest.mark.parametrize(
    ("obj", "gates", "want"),
    [
        pytest.param(make(queue="local-queue"), "", None, id="base"),
        pytest.param(
            make(queue="local-queue", dynamic=DYNAMIC),
            "",
            "spec.dynamicAllocation.enabled: Invalid value: true: a kueue managed job can use dynamicAllocation only "
            "when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job",
            id="dynamicAllocation without elastic job feature",
        ),
        pytest.param(
            make(queue="local-queue", annotations={ELASTIC: "true"}, dynamic=DYNAMIC),
            "ElasticJobsViaWorkloadSlices: true",
            f"metadata.annotations[{ELASTIC}]: Forbidden: elastic job is not supported for "
            '"sparkoperator.k8s.io/v1beta2, Kind=SparkApplication"',
            id="dynamicAllocation with elastic job feature",
        ),
        pytest.param(
            make(queue="local-queue", executor_annotations={REQUIRED: "cloud.com/block"}),
            "TopologyAwareScheduling: true",
            None,
            id="base with TAS",
        ),
        pytest.param(
            make(queue="local-queue", executor_annotations={REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"}),
            "TopologyAwareScheduling: true",
            f"spec.executor.annotations: Invalid value: {TOPOLOGY_MSG}",
            id="invalid TAS configuration",
        ),
        # ours: what else `validateCreate` refuses of a managed application, in its words
        pytest.param(
            {**make(queue="local-queue"), "spec": {**make()["spec"], "mode": "client"}},
            "",
            'spec.mode: Invalid value: "client": only Cluster mode is supported for a kueue managed job',
            id="client mode",
        ),
        pytest.param(make(dynamic=DYNAMIC), "", None, id="dynamicAllocation of an unmanaged application"),
    ],
)
def test_validate_create(make_driver: Any, obj: dict[str, Any], gates: str, want: str | None) -> None:
    assert _driver(make_driver, gates).denial(VALIDATE, obj) == want


def test_dynamic_allocation_is_refused_when_every_job_is_managed(make_driver: Any) -> None:
    d = _driver(make_driver, extra="manageJobsWithoutQueueName: true\n")
    assert (d.denial(VALIDATE, make(dynamic=DYNAMIC)) or "").startswith("spec.dynamicAllocation.enabled: Invalid value")


def test_an_unparsable_request_is_denied_with_gos_error_under_tas(make_driver: Any) -> None:
    obj = make(queue="local-queue")
    obj["spec"]["driver"]["coreRequest"] = "lots"
    want = (
        "failed to parse CPU requests lots: quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    assert _driver(make_driver, "TopologyAwareScheduling: true").denial(VALIDATE, obj) == want


# --- TestValidateUpdate ---------------------------------------------------------------------------

IMMUTABLE = "field is immutable"


@pytest.mark.parametrize(
    ("old", "new", "gates", "default_lq", "want"),
    [
        pytest.param(
            make(queue="local-queue"),
            make(queue="local-queue", labels={"test-label": "test-value"}),
            "",
            False,
            None,
            id="queue name unchanged while unsuspended",
        ),
        pytest.param(
            make(queue="local-queue"),
            make(queue="local-queue-2"),
            "",
            False,
            f'metadata.labels[{Q}]: Invalid value: "local-queue-2": {IMMUTABLE}',
            id="queue name should not change while unsuspended",
        ),
        pytest.param(
            make(suspend=True, queue="local-queue"),
            make(suspend=True, queue="local-queue-2"),
            "",
            False,
            None,
            id="queue name can change while suspended",
        ),
        pytest.param(
            make(queue="local-queue"),
            make(),
            "ValidateRayAndSparkJobUpdates: true",
            False,
            f'metadata.labels[{Q}]: Invalid value: "": {IMMUTABLE}',
            id="queue name removal is rejected when the job is unsuspended and ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            make(queue="local-queue"),
            make(),
            "ValidateRayAndSparkJobUpdates: false",
            False,
            None,
            id="queue name removal is allowed when the job is unsuspended and ValidateRayAndSparkJobUpdates is disabled",
        ),
        pytest.param(
            make(suspend=True, queue="default"),
            make(suspend=True),
            "ValidateRayAndSparkJobUpdates: true",
            True,
            f'metadata.labels[{Q}]: Invalid value: "": queue-name must not be empty in namespace with default queue',
            id="queue name removal is rejected when the job is suspended in a namespace with a default queue and "
            "ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            make(suspend=True, queue="default"),
            make(suspend=True),
            "ValidateRayAndSparkJobUpdates: false",
            True,
            None,
            id="queue name removal is allowed when the job is suspended in a namespace with a default queue and "
            "ValidateRayAndSparkJobUpdates is disabled",
        ),
        pytest.param(
            make(suspend=True, queue="local-queue"),
            make(suspend=True),
            "ValidateRayAndSparkJobUpdates: true",
            False,
            None,
            id="queue name removal is allowed when the job is suspended in a namespace without a default queue and "
            "ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            make(labels={PREBUILT: "wl1"}),
            make(labels={PREBUILT: "wl2"}),
            "ValidateRayAndSparkJobUpdates: true",
            False,
            None,
            id="prebuilt workload name change is not validated when the job is unmanaged and "
            "ValidateRayAndSparkJobUpdates is enabled",
        ),
        # ours: an update of a managed application runs the create checks too
        pytest.param(
            make(queue="local-queue"),
            make(queue="local-queue", dynamic=DYNAMIC),
            "",
            False,
            "spec.dynamicAllocation.enabled: Invalid value: true: a kueue managed job can use dynamicAllocation only "
            "when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job",
            id="dynamicAllocation turned on while managed",
        ),
    ],
)
def test_validate_update(
    make_driver: Any, old: dict[str, Any], new: dict[str, Any], gates: str, default_lq: bool, want: str | None
) -> None:
    d = _driver(make_driver, gates, local_queues=frozenset({("test", "default")} if default_lq else ()))
    assert d.denial(VALIDATE, new, old=old) == want


# --- TestDefault ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "extra", "default_lq", "want_queue", "want_suspend"),
    [
        pytest.param(
            make(ns="ns-unmanaged"),
            "managedJobsNamespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ns}}\n",
            False,
            None,
            False,
            id="should not suspend a SparkApplication in unmanaged namespace",
        ),
        pytest.param(
            make(ns="ns", queue="local-queue"), "", False, "local-queue", True, id="should suspend a SparkApplication"
        ),
        pytest.param(
            make(ns="ns"),
            "",
            False,
            None,
            False,
            id="should not suspend a SparkApplication without a queue label if manageJobsWithoutQueueName is not enabled",
        ),
        pytest.param(
            make(ns="ns"),
            "manageJobsWithoutQueueName: true\n",
            False,
            None,
            True,
            id="should suspend a SparkApplication without a queue label if manageJobsWithoutQueueName is enabled",
        ),
        pytest.param(
            make(ns="ns"),
            "",
            True,
            "default",
            True,
            id="should set the default local queue if enabled and the user didn't specify any",
        ),
        pytest.param(
            make(ns="ns"), "", False, None, False, id="should not set the default local queue if doesn't exists"
        ),
    ],
)
def test_default(
    make_driver: Any, obj: dict[str, Any], extra: str, default_lq: bool, want_queue: str | None, want_suspend: bool
) -> None:
    d = _driver(
        make_driver,
        extra=extra,
        local_queues=frozenset({("ns", "local-queue")} | ({("ns", "default")} if default_lq else set())),
    )
    out = d.mutate(MUTATE, obj)
    want = copy.deepcopy(obj)
    want["spec"]["suspend"] = want_suspend
    if want_queue is not None:
        want["metadata"].setdefault("labels", {})[Q] = want_queue
    assert out == want


def test_not_served_while_the_framework_is_off(make_driver: Any) -> None:
    """With the framework not enabled the webhook allows everything untouched, as upstream registers none."""
    d = make_driver(V2 + "integrations: {frameworks: [batch/job]}\n")
    obj = make(queue="local-queue", dynamic=DYNAMIC)
    assert d.mutate(MUTATE, obj) == obj
    assert d.denial(VALIDATE, obj) is None
