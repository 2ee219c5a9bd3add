"""MultiKueue's vocabulary: the labels and annotations on remote objects, the kubeconfig Secret key,
the condition types and reasons of MultiKueueClusters and of its AdmissionChecks, the dispatcher
names and the Configuration defaults, plus the two Go formats its messages are written with.

Mirrors upstream v0.19.2 `apis/kueue/v1beta2/multikueue_types.go`, `apis/config/v1beta2/defaults.go`
and `configuration_types.go`, and the reasons written in `pkg/controller/admissionchecks/multikueue/`
(`multikueuecluster.go`, `admissioncheck.go`) and `pkg/controller/workloaddispatcher/`.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from webhook.api import constants as c
from webhook.api import objects as o

__all__ = [
    "CLUSTER_ACTIVE",
    "CLUSTER_PROFILE_API_VERSION",
    "CLUSTER_PROFILE_GROUP",
    "CLUSTER_PROFILE_KIND",
    "CONFIG_KIND",
    "CONFIG_SECRET_KEY",
    "CONTROLLER_NAME",
    "DEFAULT_GC_INTERVAL_S",
    "DEFAULT_ORIGIN",
    "DEFAULT_STEP_SIZE",
    "DEFAULT_WORKER_LOST_TIMEOUT_S",
    "DEPRECATED_PATH_USAGE_MESSAGE",
    "DEPRECATED_PATH_USAGE_REASON",
    "DISPATCHER_ALL_AT_ONCE",
    "DISPATCHER_INCREMENTAL",
    "KUBECONFIG_PATH_PREFIX",
    "MSG_CHECK_ACTIVE",
    "MSG_CONNECTED",
    "ORIGIN_LABEL",
    "ORIGIN_UID_ANNOTATION",
    "PREEMPTION_GATE",
    "SINGLE_CLUSTER_PREEMPTION_TIMEOUT_S",
    "WORKER_WORKLOAD_POD_LABEL",
    "WORKER_WORKLOAD_POD_VALUE",
    "CheckReason",
    "ClusterReason",
    "LocationType",
    "go_list",
    "go_quote",
    "owner_uid",
]

CONTROLLER_NAME = c.MULTIKUEUE_CONTROLLER
"""`spec.controllerName` of MultiKueue's AdmissionChecks, and `spec.managedBy` of the jobs it dispatches."""
CONFIG_KIND = "MultiKueueConfig"
"""The kind a MultiKueue AdmissionCheck's `spec.parameters` must name."""

ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
"""On every object MultiKueue creates in a worker; its value is the Configuration's `multiKueue.origin`."""
ORIGIN_UID_ANNOTATION = "kueue.x-k8s.io/multikueue-origin-uid"
"""The manager-side UID of a StatefulSet or LeaderWorkerSet copied to a worker."""


def owner_uid(obj: o.Obj) -> str:
    """`GetOwnerUID` (StatefulSet, LeaderWorkerSet): a MultiKueue copy on a worker names its
    Workloads after the manager's original, whose UID it carries, so they match the Workloads the
    manager copied there."""
    if ORIGIN_LABEL in o.labels(obj):
        origin = o.annotations(obj).get(ORIGIN_UID_ANNOTATION)
        if origin is not None:
            return origin
    return o.uid(obj)


WORKER_WORKLOAD_POD_LABEL = "kueue.x-k8s.io/multikueue-worker-workload-pod"
WORKER_WORKLOAD_POD_VALUE = "true"
"""The worker puts this label on the pods of a Workload that carries the origin label."""

CONFIG_SECRET_KEY = "kubeconfig"
"""The key of a `locationType: Secret` MultiKueueCluster's Secret that holds the kubeconfig."""
KUBECONFIG_PATH_PREFIX = "/etc/multikueue/kubeconfigs"
"""Where `locationType: Path` kubeconfigs must live when gate MultiKueueKubeConfigPathValidation is on."""

CLUSTER_PROFILE_GROUP = "multicluster.x-k8s.io"
CLUSTER_PROFILE_API_VERSION = f"{CLUSTER_PROFILE_GROUP}/v1alpha1"
CLUSTER_PROFILE_KIND = "ClusterProfile"
"""The cluster-inventory-api's ClusterProfile (sigs.k8s.io/cluster-inventory-api v0.1.3, as upstream
pins it), which `spec.clusterSource.clusterProfileRef` names in Kueue's namespace (gate
MultiKueueClusterProfile)."""

PREEMPTION_GATE = "kueue.x-k8s.io/multikueue"
"""Gate MultiKueueOrchestratedPreemption: the preemption gate on every remote copy, opened on one worker
at a time (`constants.MultiKueuePreemptionGate`)."""
SINGLE_CLUSTER_PREEMPTION_TIMEOUT_S = 300.0
"""How long after opening one worker's gate the next may open (`singleClusterPreemptionTimeout`)."""


class LocationType(StrEnum):
    """`spec.clusterSource.kubeConfig.locationType` of a MultiKueueCluster."""

    SECRET = "Secret"
    PATH = "Path"


CLUSTER_ACTIVE = "Active"
"""The one condition type of a MultiKueueCluster (`MultiKueueClusterActive`)."""
MSG_CONNECTED = "Connected"


class ClusterReason(StrEnum):
    """Reasons of a MultiKueueCluster's `Active` condition (`clustersReconciler.Reconcile`, `loadClientConfig`)."""

    ACTIVE = "Active"
    BAD_KUBECONFIG = "BadKubeConfig"
    INSECURE_KUBECONFIG = "InsecureKubeConfig"
    CLIENT_CONNECTION_FAILED = "ClientConnectionFailed"
    CLUSTER_PROFILE_FEATURE_DISABLED = "MultiKueueClusterProfileFeatureDisabled"
    BAD_CLUSTER_PROFILE = "BadClusterProfile"
    BAD_REST_CONFIG = "BadRestConfig"


DEPRECATED_PATH_USAGE_REASON = "DeprecatedPathUsage"
DEPRECATED_PATH_USAGE_MESSAGE = (
    "Using locationType=Path without MultiKueueKubeConfigPathValidation feature gate is deprecated and will be "
    "removed in a future release. Enable the MultiKueueKubeConfigPathValidation feature gate and place kubeconfig "
    f"files under {KUBECONFIG_PATH_PREFIX}/."
)
"""The Warning event every reconcile of a Path-located cluster emits while path validation is off."""


class CheckReason(StrEnum):
    """Reasons of a MultiKueue AdmissionCheck's `Active` condition (`ACReconciler.Reconcile`)."""

    ACTIVE = "Active"
    BAD_CONFIG = "BadConfig"
    SOME_ACTIVE_CLUSTERS = "SomeActiveClusters"
    NO_USABLE_CLUSTERS = "NoUsableClusters"


MSG_CHECK_ACTIVE = "The admission check is active"

DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
"""`multiKueue.dispatcherName` values Kueue implements; any other name is an external dispatcher."""

DEFAULT_GC_INTERVAL_S = 60.0
DEFAULT_ORIGIN = "multikueue"
DEFAULT_WORKER_LOST_TIMEOUT_S = 15 * 60.0
"""`DefaultMultiKueueWorkerLostTimeout`; the 5 min `defaultWorkerLostTimeout` of `controllers.go` is
only a fallback the manager never uses."""
DEFAULT_STEP_SIZE = 3
"""The incremental dispatcher's `stepSize` (`DefaultStepSize`, `incrementaldispatcher.go`)."""

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _quote_char(ch: str) -> str:
    if ch in ('"', "\\"):
        return "\\" + ch
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch.isprintable():  # Python's and Go's (`strconv.IsPrint`) notions agree: L, M, N, P, S and ' '
        return ch
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def go_quote(text: str) -> str:
    """Go's `%q` of a string (`strconv.Quote`): double quotes, backslash escapes, non-printable
    characters as `\\x`, `\\u` or `\\U` escapes."""
    return '"' + "".join(_quote_char(ch) for ch in text) + '"'


def go_list(items: Iterable[str]) -> str:
    """Go's `%v` of a `[]string`: `[a b]`, items unquoted and space-separated."""
    return "[" + " ".join(items) + "]"


def describe_placement(status: o.Obj) -> str:
    """For people (explain, the dashboard): which worker cluster runs a MultiKueue Workload
    (`status.clusterName`), or which ones it waits on (`nominatedClusterNames`); "" when neither."""
    if status.get("clusterName"):
        return f"runs on worker cluster {status['clusterName']}"
    nominated = status.get("nominatedClusterNames") or []
    if nominated:
        return f"dispatched to worker clusters {', '.join(map(str, nominated))}; none has admitted it yet"
    return ""


def describe_delayed_topology(state: object) -> str:
    """For people: a pod set's `delayedTopologyRequest` ("" when none)."""
    return {
        "Pending": "placed later (by the MultiKueue worker, or once provisioned nodes exist)",
        "Ready": "placed by the MultiKueue worker",
    }.get(str(state or ""), "")
