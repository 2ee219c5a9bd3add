"""MultiKueue's names, as upstream v0.19.2 spells them (`apis/kueue/v1beta2/multikueue_types.go`,
`apis/config/v1beta2/defaults.go`, `pkg/controller/admissionchecks/multikueue/`), and Go's `%q` and
`%v` formats its messages use."""

from __future__ import annotations

import pytest

from webhook.api import leaderworkerset as lws
from webhook.api import multikueue as mk
from webhook.config import types as config_types


@pytest.mark.parametrize(
    ("value", "upstream"),
    [
        pytest.param(mk.CONTROLLER_NAME, "kueue.x-k8s.io/multikueue", id="MultiKueueControllerName"),
        pytest.param(mk.ORIGIN_LABEL, "kueue.x-k8s.io/multikueue-origin", id="MultiKueueOriginLabel"),
        pytest.param(mk.ORIGIN_UID_ANNOTATION, "kueue.x-k8s.io/multikueue-origin-uid", id="origin uid"),
        pytest.param(mk.WORKER_WORKLOAD_POD_LABEL, "kueue.x-k8s.io/multikueue-worker-workload-pod", id="pod label"),
        pytest.param(mk.WORKER_WORKLOAD_POD_VALUE, "true", id="pod label value"),
        pytest.param(mk.CONFIG_SECRET_KEY, "kubeconfig", id="MultiKueueConfigSecretKey"),
        pytest.param(mk.CLUSTER_ACTIVE, "Active", id="MultiKueueClusterActive"),
        pytest.param(mk.MSG_CONNECTED, "Connected", id="connected message"),
        pytest.param(mk.MSG_CHECK_ACTIVE, "The admission check is active", id="check active message"),
        pytest.param(mk.KUBECONFIG_PATH_PREFIX, "/etc/multikueue/kubeconfigs", id="defaultKubeConfigPathPrefix"),
        pytest.param(
            mk.DISPATCHER_ALL_AT_ONCE, "kueue.x-k8s.io/multikueue-dispatcher-all-at-once", id="AllAtOnce dispatcher"
        ),
        pytest.param(
            mk.DISPATCHER_INCREMENTAL, "kueue.x-k8s.io/multikueue-dispatcher-incremental", id="Incremental dispatcher"
        ),
        pytest.param(mk.DEFAULT_ORIGIN, "multikueue", id="DefaultMultiKueueOrigin"),
        pytest.param(mk.DEFAULT_GC_INTERVAL_S, 60.0, id="DefaultMultiKueueGCInterval"),
        pytest.param(mk.DEFAULT_WORKER_LOST_TIMEOUT_S, 900.0, id="DefaultMultiKueueWorkerLostTimeout"),
        pytest.param(mk.DEFAULT_STEP_SIZE, 3, id="DefaultStepSize"),
        pytest.param(mk.DEPRECATED_PATH_USAGE_REASON, "DeprecatedPathUsage", id="DeprecatedPathUsage"),
        pytest.param(
            mk.DEPRECATED_PATH_USAGE_MESSAGE,
            "Using locationType=Path without MultiKueueKubeConfigPathValidation feature gate is deprecated and will "
            "be removed in a future release. Enable the MultiKueueKubeConfigPathValidation feature gate and place "
            "kubeconfig files under /etc/multikueue/kubeconfigs/.",
            id="DeprecatedPathUsage message",
        ),
    ],
)
def test_names_are_upstreams(value: object, upstream: object) -> None:
    assert value == upstream


def test_reasons_are_upstreams() -> None:
    assert [r.value for r in mk.ClusterReason] == [
        "Active",
        "BadKubeConfig",
        "InsecureKubeConfig",
        "ClientConnectionFailed",
        "MultiKueueClusterProfileFeatureDisabled",
        "BadClusterProfile",
        "BadRestConfig",
    ]
    assert [r.value for r in mk.CheckReason] == ["Active", "BadConfig", "SomeActiveClusters", "NoUsableClusters"]
    assert [t.value for t in mk.LocationType] == ["Secret", "Path"]


def test_other_modules_share_these_names() -> None:
    """The Configuration's defaults and the LeaderWorkerSet integration read the same strings."""
    defaults = config_types.MultiKueue()
    assert (defaults.origin, defaults.gc_interval_s, defaults.worker_lost_timeout_s, defaults.dispatcher_name) == (
        mk.DEFAULT_ORIGIN,
        mk.DEFAULT_GC_INTERVAL_S,
        mk.DEFAULT_WORKER_LOST_TIMEOUT_S,
        mk.DISPATCHER_ALL_AT_ONCE,
    )
    assert (lws.MULTIKUEUE_ORIGIN_LABEL, lws.MULTIKUEUE_ORIGIN_UID_ANNOTATION) == (
        mk.ORIGIN_LABEL,
        mk.ORIGIN_UID_ANNOTATION,
    )


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        pytest.param("worker1", '"worker1"', id="plain"),
        pytest.param("", '""', id="empty"),
        pytest.param('say "hi"\\', '"say \\"hi\\"\\\\"', id="quotes and backslash"),
        pytest.param("a\nb\tc\r\a\b\f\v", '"a\\nb\\tc\\r\\a\\b\\f\\v"', id="control escapes"),
        pytest.param("\x00\x1f\x7f", '"\\x00\\x1f\\x7f"', id="other ASCII controls"),
        pytest.param("héllo 世界", '"héllo 世界"', id="printable unicode kept"),
        pytest.param("\u00a0\u200b", '"\\u00a0\\u200b"', id="non-printable unicode"),
        pytest.param("\U000e0001", '"\\U000e0001"', id="non-printable astral"),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert mk.go_quote(text) == quoted


@pytest.mark.parametrize(
    ("items", "formatted"),
    [
        pytest.param(["a", "b"], "[a b]", id="two"),
        pytest.param(["worker1"], "[worker1]", id="one"),
        pytest.param([], "[]", id="none"),
    ],
)
def test_go_list(items: list[str], formatted: str) -> None:
    assert mk.go_list(items) == formatted
