"""KubeRay's kinds (RayCluster, RayJob, RayService of `ray.io/v1`) as Kueue sees them: the rules the
webhooks and the worker share.

Mirrors `pkg/controller/jobs/raycluster/common.go` and the pod-set parts of
`pkg/controller/jobs/rayjob/rayjob_controller.go` (upstream v0.19.2). The three kinds carry one
RayClusterSpec each, at `KIND.cluster_spec_path`: a RayCluster's `spec`, a RayJob's
`spec.rayClusterSpec`, a RayService's `spec.rayClusterConfig` (its Go field is `RayClusterSpec`).
The Workload's podSets are the head (count 1), then one per worker group (`replicas`, default 1,
times `numOfHosts` when above 1); a RayJob in K8sJobMode adds its submitter Job's pod last.
Containers KubeRay adds at pod-build time are counted where they run: with in-tree autoscaling the
head carries the autoscaler sidecar; a SidecarMode RayJob's head carries the submitter; a GCS
fault-tolerant cluster's head requests at least what KubeRay's Redis cleanup Job does.

Field names are KubeRay v1.6.2's (`github.com/ray-project/kuberay/ray-operator/apis/ray/v1`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api import fields as f
from webhook.api import integrations, quantity
from webhook.api import objects as o
from webhook.api.integrations import Framework

__all__ = [
    "AUTOSCALER_CONTAINER",
    "HEAD",
    "K8S_JOB_MODE",
    "KINDS",
    "MAX_POD_SETS",
    "RAYCLUSTER",
    "RAYJOB",
    "RAYSERVICE",
    "RAY_CLUSTER_LABEL",
    "SIDECAR_MODE",
    "SUBMITTER",
    "SUBMITTER_CONTAINER",
    "Kind",
    "cluster_spec",
    "expected_pod_sets_count",
    "is_gcs_fault_tolerant",
    "is_suspended",
    "kind_of",
    "pod_sets",
    "worker_count",
]

HEAD = "head"
"""The head group's podSet name; no worker group may take it."""
SUBMITTER = "submitter"
"""A K8sJobMode RayJob's submitter Job podSet."""
MAX_POD_SETS = 18
"""`jobframework.MaxPodSets`: a Workload's podSet limit."""
K8S_JOB_MODE = "K8sJobMode"
SIDECAR_MODE = "SidecarMode"
AUTOSCALER_CONTAINER = "autoscaler"
SUBMITTER_CONTAINER = "ray-job-submitter"  # rayutils.SubmitterContainerName
RAY_CLUSTER_LABEL = "ray.io/cluster"  # rayutils.RayClusterLabelKey: every pod of the cluster has it
_FT_ANNOTATION = "ray.io/ft-enabled"  # rayutils.RayFTEnabledAnnotationKey

# KubeRay's hard-coded resources (ray-operator/controllers/ray/common): the autoscaler sidecar's
# (pod.go BuildAutoscalerContainer), the submitter's (job.go GetDefaultSubmitterContainer) and
# the Redis cleanup Job's requests (raycluster_controller.go).
_AUTOSCALER_RESOURCES = {
    "requests": {"cpu": "500m", "memory": "512Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
_SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}
_REDIS_CLEANUP_REQUESTS = {"cpu": "200m", "memory": "256Mi"}


@dataclass(frozen=True, slots=True)
class Kind:
    """One of KubeRay's kinds: its framework row and where its RayClusterSpec is."""

    framework: Framework
    cluster_spec_path: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.framework.kind


RAYCLUSTER = Kind(integrations.RAYCLUSTER, ("spec",))
RAYJOB = Kind(integrations.RAYJOB, ("spec", "rayClusterSpec"))
RAYSERVICE = Kind(integrations.RAYSERVICE, ("spec", "rayClusterConfig"))
KINDS: Mapping[str, Kind] = {k.name: k for k in (RAYCLUSTER, RAYJOB, RAYSERVICE)}


def kind_of(obj: Mapping[str, Any]) -> Kind:
    """The object's kind row; KeyError for a kind that is not KubeRay's."""
    return KINDS[str(obj.get("kind"))]


def cluster_spec(obj: Mapping[str, Any], kind: Kind) -> Mapping[str, Any] | None:
    """The object's RayClusterSpec; None where a RayJob has none (it names a `clusterSelector`)."""
    node: Any = obj
    for key in kind.cluster_spec_path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def is_suspended(obj: Mapping[str, Any], kind: Kind) -> bool:
    """`IsSuspended`: a RayJob's `spec.suspend`, else its RayClusterSpec's `suspend`."""
    if kind is RAYJOB:
        return bool((obj.get("spec") or {}).get("suspend"))
    return bool((cluster_spec(obj, kind) or {}).get("suspend"))


def is_gcs_fault_tolerant(spec: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """`rayutils.IsGCSFaultToleranceEnabled`: the `ray.io/ft-enabled` annotation says true (any
    case), or the spec has `gcsFaultToleranceOptions`."""
    return (
        o.annotations(obj).get(_FT_ANNOTATION, "").lower() == "true" or spec.get("gcsFaultToleranceOptions") is not None
    )


def worker_count(group: Mapping[str, Any]) -> int:
    """`effectiveWorkerCount`: `replicas` (1 when unset) times `numOfHosts` when that is above 1."""
    count = 1 if group.get("replicas") is None else int(group["replicas"])
    hosts = int(group.get("numOfHosts") or 0)
    return count * hosts if hosts > 1 else count


def _workers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(spec.get("workerGroupSpecs") or ())


def expected_pod_sets_count(obj: Mapping[str, Any], kind: Kind) -> int:
    """`ExpectedPodSetsCount` (and a RayJob's `expectedPodSetsCount`): head, worker groups, and a
    K8sJobMode RayJob's submitter."""
    count = len(_workers(cluster_spec(obj, kind) or {})) + 1
    if kind is RAYJOB and (obj.get("spec") or {}).get("submissionMode") == K8S_JOB_MODE:
        count += 1
    return count


def _keep_max(requests: dict[str, Any], floor: Mapping[str, str]) -> None:
    """`MergeResourceListKeepMax` in place: each of `floor`'s resources at least as large."""
    for name, text in floor.items():
        if name not in requests or quantity.parse(requests[name]) < quantity.parse(text):
            requests[name] = text


def _head_template(obj: Mapping[str, Any], spec: Mapping[str, Any], kind: Kind) -> dict[str, Any]:
    """The head podSet's template: the head group's, with what KubeRay adds to the head pod."""
    template = copy.deepcopy(dict((spec.get("headGroupSpec") or {}).get("template") or {}))
    containers = template.setdefault("spec", {}).setdefault("containers", [])
    if is_gcs_fault_tolerant(spec, obj):
        if not containers:
            raise ValueError(
                "cannot account for Redis cleanup resources: head pod template must include the Ray container"
            )
        resources = containers[0].setdefault("resources", {})
        _keep_max(resources.setdefault("requests", {}), _REDIS_CLEANUP_REQUESTS)
    if spec.get("enableInTreeAutoscaling"):
        options = spec.get("autoscalerOptions") or {}
        resources = options.get("resources")
        containers.append(
            {
                "name": AUTOSCALER_CONTAINER,
                "resources": copy.deepcopy(resources if resources is not None else _AUTOSCALER_RESOURCES),
            }
        )
    if kind is RAYJOB and (obj.get("spec") or {}).get("submissionMode") == SIDECAR_MODE:
        # KubeRay's sidecar submitter always takes the default resources (getSubmitterContainer)
        containers.append({"name": SUBMITTER_CONTAINER, "resources": copy.deepcopy(_SUBMITTER_RESOURCES)})
    return template


def submitter_template(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`getSubmitterTemplate`: a K8sJobMode RayJob's `submitterPodTemplate`, else KubeRay's default
    submitter pod (the head's image, its default resources, restartPolicy Never)."""
    spec = obj.get("spec") or {}
    if spec.get("submitterPodTemplate") is not None:
        return copy.deepcopy(dict(spec["submitterPodTemplate"]))
    head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
    containers = (head.get("spec") or {}).get("containers") or [{}]
    return {
        "spec": {
            "containers": [
                {
                    "name": SUBMITTER_CONTAINER,
                    "image": containers[0].get("image", ""),
                    "resources": copy.deepcopy(_SUBMITTER_RESOURCES),
                }
            ],
            "restartPolicy": "Never",
        }
    }


def pod_sets(obj: Mapping[str, Any], kind: Kind) -> list[dict[str, Any]]:
    """`PodSets` without the topology requests: the head, each worker group named after it (lower
    case, `NewPodSetReference`), and a K8sJobMode RayJob's submitter. Raises ValueError with
    upstream's message when a GCS fault-tolerant head has no container to carry the Redis cleanup."""
    spec = cluster_spec(obj, kind) or {}
    out: list[dict[str, Any]] = [{"name": HEAD, "count": 1, "template": _head_template(obj, spec, kind)}]
    for group in _workers(spec):
        out.append(
            {
                "name": str(group.get("groupName", "")).lower(),
                "count": worker_count(group),
                "template": copy.deepcopy(dict(group.get("template") or {})),
            }
        )
    if kind is RAYJOB and (obj.get("spec") or {}).get("submissionMode") == K8S_JOB_MODE:
        out.append({"name": SUBMITTER, "count": 1, "template": submitter_template(obj)})
    return out


def template_paths(kind: Kind, spec: Mapping[str, Any]) -> list[f.Path]:
    """Each RayClusterSpec podSet's pod template path, in podSet order (head, then worker groups)."""
    base = f.Path(".".join(kind.cluster_spec_path))
    return [base.child("headGroupSpec", "template")] + [
        base.child("workerGroupSpecs").index(i).child("template") for i in range(len(_workers(spec)))
    ]
