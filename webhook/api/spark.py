"""Kubeflow's SparkApplication (`sparkoperator.k8s.io/v1beta2`) as Kueue reads it: the rules the
webhook and the worker share.

Mirrors `pkg/controller/jobs/sparkapplication/sparkapplication_podset.go` and the readers of
`sparkapplication_controller.go` (upstream v0.19.2), which adapt the Spark operator's own pod
defaulter (`internal/webhook/sparkpod_defaulter.go`) to build what the driver and executor pods will
ask for before spark-submit makes them. A SparkApplication has no pod templates of its own to run:
each role is a `SparkPodSpec` (`spec.driver`, `spec.executor`) whose fields become the pod. The
Workload's podSets are `driver` (count 1) and `executor` (`spec.executor.instances`, 0 when unset),
each template built on an empty pod with the role's one Spark container, then the role's volumes
(declared in `spec.volumes`, mounted by the role, `spark-local-dir-*` left out), init and sidecar
containers, priority class, node selector, affinity, tolerations, CPU and memory requests and limits
(memory in Java's units, `512m` = `512Mi`), GPU limit, and last its metadata (the role's template's,
with the role's labels and annotations over it). The role's own `template.spec` is not read, as upstream.

Field names are spark-operator v2.5.1's (`github.com/kubeflow/spark-operator/v2/api/v1beta2`, the
version upstream's go.mod pins). Pure functions over plain dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from webhook.api import quantity

__all__ = [
    "DEPLOY_MODE_CLUSTER",
    "DRIVER",
    "DRIVER_CONTAINER",
    "EXECUTOR",
    "EXECUTOR_CONTAINER",
    "FAILED",
    "FINISHED_STATES",
    "LOCAL_DIR_VOLUME_PREFIX",
    "ROLES",
    "RUNNING",
    "SUCCEEDED",
    "app_state",
    "dynamic_allocation_enabled",
    "empty_template",
    "executor_instances",
    "is_suspended",
    "java_memory_to_k8s",
    "pod_label_selector",
    "pod_sets",
    "role_spec",
]

DRIVER = "driver"
"""The driver's podSet name and its `spark-role` label value (`SparkRoleDriver`)."""
EXECUTOR = "executor"
"""The executors' podSet name and `spark-role` (`SparkRoleExecutor`)."""
ROLES = (DRIVER, EXECUTOR)
"""The podSets, in the Workload's order."""
DRIVER_CONTAINER = "spark-kubernetes-driver"  # sparkcommon.SparkDriverContainerName
EXECUTOR_CONTAINER = "spark-kubernetes-executor"  # sparkcommon.Spark3DefaultExecutorContainerName
_EXECUTOR_LOOKUP_CONTAINER = "executor"  # sparkcommon.SparkExecutorContainerName: what findContainer looks for
LOCAL_DIR_VOLUME_PREFIX = "spark-local-dir-"  # sparkcommon.SparkLocalDirVolumePrefix
_APP_NAME_LABEL = "sparkoperator.k8s.io/app-name"  # sparkcommon.LabelSparkAppName, on every pod of the app
DEPLOY_MODE_CLUSTER = "cluster"  # DeployModeCluster

# ApplicationStateType values (api/v1beta2/sparkapplication_types.go)
RUNNING = "RUNNING"
SUCCEEDED = "COMPLETED"
FAILED = "FAILED"
FINISHED_STATES = (SUCCEEDED, FAILED, "SUBMISSION_FAILED")
"""`Finished`: completed, failed, or never submitted."""

# util.ConvertJavaMemoryStringToK8sMemoryString's unitMap
_JAVA_UNITS = {
    "k": "Ki",
    "kb": "Ki",
    "m": "Mi",
    "mb": "Mi",
    "g": "Gi",
    "gb": "Gi",
    "t": "Ti",
    "tb": "Ti",
    "p": "Pi",
    "pb": "Pi",
}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def role_spec(obj: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    """`spec.driver` or `spec.executor` (a `SparkPodSpec` and the role's own fields)."""
    return _spec(obj).get(role) or {}


def is_suspended(obj: Mapping[str, Any]) -> bool:
    """`IsSuspended`: `spec.suspend`."""
    return bool(_spec(obj).get("suspend"))


def app_state(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`status.applicationState` (`state`, `errorMessage`); the operator writes it."""
    return (obj.get("status") or {}).get("applicationState") or {}


def executor_instances(obj: Mapping[str, Any]) -> int:
    """`numInitialExecutors`: `spec.executor.instances`, 0 when unset."""
    return int(role_spec(obj, EXECUTOR).get("instances") or 0)


def dynamic_allocation_enabled(obj: Mapping[str, Any]) -> bool:
    """`spec.dynamicAllocation.enabled`."""
    return bool((_spec(obj).get("dynamicAllocation") or {}).get("enabled"))


def pod_label_selector(obj: Mapping[str, Any]) -> str:
    """`PodLabelSelector`: the label the Spark operator puts on every pod of the application."""
    return f"{_APP_NAME_LABEL}={(obj.get('metadata') or {}).get('name', '')}"


def empty_template(role: str) -> dict[str, Any]:
    """`emptyDriverPodTemplateSpec` / `emptyExecutorPodTemplateSpec`: the role's one Spark container."""
    return {"spec": {"containers": [{"name": DRIVER_CONTAINER if role == DRIVER else EXECUTOR_CONTAINER}]}}


def java_memory_to_k8s(memory: str) -> str:
    """`ConvertJavaMemoryStringToK8sMemoryString`: a Java size suffix (any case) as Kubernetes' binary
    one; the suffix is cut from the text as written, so only a lower-case one converts cleanly."""
    lower = memory.lower()
    for unit, k8s in _JAVA_UNITS.items():
        # a text ends in at most one of the units ("k" and "kb" cannot both end it): no order needed
        if lower.endswith(unit):
            return memory.removesuffix(unit) + k8s
    return memory


def _spark_container(pod: Mapping[str, Any], role: str) -> int:
    """`findContainer`: the role's Spark container by name, else the first."""
    name = DRIVER_CONTAINER if role == DRIVER else _EXECUTOR_LOOKUP_CONTAINER
    return next((i for i, c in enumerate(pod["spec"]["containers"]) if c.get("name") == name), 0)


def _same_container(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """`hasContainer`: the same name and image."""
    return bool(a.get("name", "") == b.get("name", "") and a.get("image", "") == b.get("image", ""))


def _add_volumes(pod: dict[str, Any], app: Mapping[str, Any], role: str) -> None:
    """`addVolumes`: each volume the role mounts (once) and each of its mounts, local dirs left out."""
    declared = {v.get("name"): v for v in _spec(app).get("volumes") or ()}
    added: set[str] = set()
    container = pod["spec"]["containers"][_spark_container(pod, role)]
    for mount in role_spec(app, role).get("volumeMounts") or ():
        name = mount.get("name", "")
        if name.startswith(LOCAL_DIR_VOLUME_PREFIX) or name not in declared:
            continue
        if name not in added:
            pod["spec"].setdefault("volumes", []).append(copy.deepcopy(declared[name]))
            added.add(name)
        container.setdefault("volumeMounts", []).append(copy.deepcopy(mount))


def _add_containers(pod: dict[str, Any], app: Mapping[str, Any], role: str) -> None:
    """`addInitContainers` and `addSidecarContainers`: each one the pod lacks (by name and image)."""
    spec = pod["spec"]
    spec["initContainers"] = []
    for key, source in (("initContainers", "initContainers"), ("containers", "sidecars")):
        for extra in role_spec(app, role).get(source) or ():
            if not any(_same_container(c, extra) for c in spec[key]):
                spec[key].append(copy.deepcopy(extra))


def _quantity(value: str, *, what: str, given: Any) -> str:
    """`value` as the quantity Go stores; ValueError with upstream's message (naming the text as
    given) when it is none."""
    problem = quantity.invalid(value)
    if problem is not None:
        raise ValueError(f"failed to parse {what} {given}: {problem}")
    return value


def _add_resources(pod: dict[str, Any], app: Mapping[str, Any], role: str) -> None:
    """`addCPURequests`, `addCPULimit`, `addMemoryRequests`, `addMemoryLimit` and `addGPU` on the
    role's Spark container."""
    own = role_spec(app, role)
    container = pod["spec"]["containers"][_spark_container(pod, role)]
    resources = container.setdefault("resources", {})
    for key, section, resource, what in (
        ("coreRequest", "requests", "cpu", "CPU requests"),
        ("coreLimit", "limits", "cpu", "CPU limit"),
        ("memory", "requests", "memory", "memory requests"),
        ("memoryLimit", "limits", "memory", "memory limit"),
    ):
        given = own.get(key)
        if given is None:
            continue
        value = java_memory_to_k8s(str(given)) if resource == "memory" else str(given)
        resources.setdefault(section, {})[resource] = _quantity(value, what=what, given=given)
    gpu = own.get("gpu") or {}
    if gpu.get("name") and int(gpu.get("quantity") or 0) > 0:
        resources.setdefault("limits", {})[gpu["name"]] = str(int(gpu["quantity"]))
    if not resources:
        del container["resources"]


def _metadata(app: Mapping[str, Any], role: str) -> dict[str, Any]:
    """`addObjectMeta`: the role's template's metadata with its labels and annotations over it (no
    template: just those), in place of the pod's."""
    own = role_spec(app, role)
    labels, annotations = dict(own.get("labels") or {}), dict(own.get("annotations") or {})
    template = own.get("template")
    if template is None:
        meta: dict[str, Any] = {}
        if labels:
            meta["labels"] = labels
        if annotations:
            meta["annotations"] = annotations
        return meta
    meta = copy.deepcopy(dict(template.get("metadata") or {}))
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    return meta


def _template(app: Mapping[str, Any], role: str) -> dict[str, Any]:
    """`build<Role>PodTemplateSpec`: `mutateSparkPod`'s steps, in its order, on the empty pod."""
    own = role_spec(app, role)
    pod = empty_template(role)
    spec = pod["spec"]
    _add_volumes(pod, app, role)
    _add_containers(pod, app, role)
    if own.get("priorityClassName"):
        spec["priorityClassName"] = own["priorityClassName"]
    spec["nodeSelector"] = dict(own.get("nodeSelector") or {})
    if own.get("affinity") is not None:
        spec["affinity"] = copy.deepcopy(own["affinity"])
    spec["tolerations"] = copy.deepcopy(list(own.get("tolerations") or ()))
    _add_resources(pod, app, role)
    meta = _metadata(app, role)
    return {"metadata": meta, "spec": spec} if meta else {"spec": spec}


def pod_sets(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`PodSets` without the topology requests: the driver (1) and the executors
    (`spec.executor.instances`). Raises ValueError with upstream's message for a request or limit
    that is not a quantity."""
    return [
        {"name": DRIVER, "count": 1, "template": _template(obj, DRIVER)},
        {"name": EXECUTOR, "count": executor_instances(obj), "template": _template(obj, EXECUTOR)},
    ]
