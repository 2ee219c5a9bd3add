"""workload.codeflare.dev/v1beta2 AppWrapper: the adapter the generic job reconcile works through.

`AppWrapper` fulfils `jobframework.interface.GenericJob` for an AppWrapper, mirroring upstream's
`pkg/controller/jobs/appwrapper/appwrapper_controller.go` (upstream v0.19.2) and the helpers of
the AppWrapper library it calls (`pkg/utils/utils.go` of project-codeflare/appwrapper v1.2.2:
`GetComponentPodSpecs`, `InferPodSets`, `GetPodTemplateSpec`, `SetPodSetInfos`,
`ClearPodSetInfos`).

An AppWrapper wraps raw objects (`spec.components[].template`: a Job, a Deployment, a
PyTorchJob...). Each component's podSets are declared (`podSets[]`: a replica count and a
`path` such as `template.spec.template` into the raw object) or, for the kinds the library knows,
inferred; once the AppWrapper controller has run they are cached in `status.componentStatus`.
The Workload gets one podSet per podSet of every component, in order, named `<aw>-<index>`. The
admission is not merged into the wrapped templates: it is written to each component's
`podSetInfos`, which the AppWrapper controller applies when it creates the wrapped objects, and
cleared again when the AppWrapper is stopped.

Not reproduced: the library decodes each pod spec strictly (an unknown field makes that podSet
silently skipped); here any spec that is a map is read. Quantities keep the text they were
written with, rounded up to a milli-unit when finer (upstream re-prints them canonically,
`1000m` as `1`: the same amounts). An AppWrapper is always a top-level job here (upstream walks
its owners for a managed ancestor; nothing Kueue manages creates AppWrappers).
"""

from __future__ import annotations

import copy
import logging
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from webhook.api import constants as c
from webhook.api import fields, jobs, quantity
from webhook.api import objects as o
from webhook.api.integrations import APPWRAPPER
from webhook.api.objects import Obj
from webhook.config import Configuration, Feature
from webhook.worker.jobframework import plan as fw
from webhook.worker.jobframework import podset
from webhook.worker.jobframework.executor import Integration
from webhook.worker.jobframework.interface import JobError, StartConflict, SuspendedBySpec
from webhook.worker.jobframework.plan import Plan, Priority
from webhook.worker.jobframework.reconciler import OwnedJobReconciler
from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring
from webhook.worker.store import Store

__all__ = [
    "CONTROLLER_NAME",
    "INTEGRATION",
    "TAS_POD_INDEX_LABEL",
    "TAS_SUB_GROUP_COUNT",
    "TAS_SUB_GROUP_INDEX_LABEL",
    "AppWrapper",
    "AppWrapperReconciler",
    "PodSetError",
    "build_workload",
    "component_pod_sets",
    "component_pod_specs",
    "finished",
    "infer_pod_sets",
    "plan",
    "pod_sets",
    "pod_template",
    "restore_patch",
    "setup",
    "start_patch",
    "value_at",
    "workload_name",
]

log = logging.getLogger(__name__)

AW_API = APPWRAPPER.api_version
CONTROLLER_NAME = f"{APPWRAPPER.name}-kueue-controller"

# The AppWrapper's status conditions and phases Kueue reads (api/v1beta2/appwrapper_types.go).
QUOTA_RESERVED = "QuotaReserved"
RESOURCES_DEPLOYED = "ResourcesDeployed"
PODS_READY = "PodsReady"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"

# PodSet annotations the library sets on inferred podSets, read for the topology request.
TAS_POD_INDEX_LABEL = "workload.codeflare.dev.appwrapper/tas-pod-index-label"
TAS_SUB_GROUP_INDEX_LABEL = "workload.codeflare.dev.appwrapper/tas-sub-group-index-label"
TAS_SUB_GROUP_COUNT = "workload.codeflare.dev.appwrapper/tas-sub-group-count"
_JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
_PYTORCH_REPLICA_INDEX = "training.kubeflow.org/replica-index"


class PodSetError(Exception):
    """A component's podSets cannot be read (the library's error text)."""


# == paths into a component's raw template (the library's `getValueAtPath`) =======================
def value_at(obj: Obj, path: str) -> Any:
    """The value at `path` (`template`, then `.field` and `[index]` steps) inside the component
    template `obj`; raises `PodSetError` with the library's message."""
    processed = "template"
    if not path.startswith(processed):
        raise PodSetError("first element of the path must be 'template'")
    remaining = path[len(processed) :]
    cursor: Any = obj
    while remaining:
        if remaining.startswith("["):
            end = remaining.find("]")
            if end < 0:
                raise PodSetError(f"at path position '{processed}' invalid array index '{remaining}'")
            try:
                index = fields.go_atoi(remaining[1:end])
            except ValueError:
                raise PodSetError(
                    f"at path position '{processed}' invalid index expression '{remaining[1:end]}'"
                ) from None
            if not isinstance(cursor, list):
                raise PodSetError(f"at path position '{processed}' found non-array value")
            if index < 0 or index >= len(cursor):
                raise PodSetError(f"at path position '{processed}' out of bounds index '{index}'")
            cursor = cursor[index]
            processed += remaining[:end]  # the library drops the closing bracket from its position
            remaining = remaining[end + 1 :]
        elif remaining.startswith("."):
            remaining = remaining[1:]
            processed += "."
            end = len(remaining)
            if (dot := remaining.find(".")) > 0:
                end = dot
            if 0 < (bracket := remaining.find("[")) < end:
                end = bracket
            key = remaining[:end]
            if not isinstance(cursor, Mapping):
                raise PodSetError(f"at path position '{processed}' non-map value")
            if key not in cursor:
                raise PodSetError(f"at path position '{processed}' missing field '{key}'")
            cursor = cursor[key]
            remaining = remaining[len(key) :]
            processed += key
        else:
            raise PodSetError(f"at path position '{processed}' invalid path element '{remaining}'")
    return cursor


def _raw_template(obj: Obj, path: str) -> Mapping[str, Any]:
    value = value_at(obj, path)
    if not isinstance(value, Mapping):
        raise PodSetError(f"at path position '{path}' non-map value")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _replicas_at(obj: Obj, path: str) -> int | None:
    """`GetReplicas`, with its error as None: the integer at `path`."""
    try:
        value = value_at(obj, path)
    except PodSetError:
        return None
    return value if _is_int(value) else None


def _infer_replicas(obj: Obj, path: str) -> int:
    """`inferReplicas`: the integer at `path`, 1 when it is absent."""
    parent, _, key = path.rpartition(".")
    holder = _raw_template(obj, parent) if parent else obj
    value = holder.get(key)
    if value is None:
        return 1
    if not _is_int(value):
        raise PodSetError(f"at path position '{path}' non-int value {value}")
    return int(value)


# == podSets: declared, inferred, cached in the status ============================================
def _ray_pod_sets(obj: Obj, prefix: str) -> list[dict[str, Any]]:
    """`inferRayPodSets`: the head, then each worker group with a template."""
    out: list[dict[str, Any]] = [{"replicas": 1, "path": f"{prefix}headGroupSpec.template"}]
    try:
        workers = value_at(obj, f"{prefix}workerGroupSpecs")
    except PodSetError:
        return out
    for i in range(len(workers) if isinstance(workers, list) else 0):
        group = f"{prefix}workerGroupSpecs[{i}]."
        try:
            value_at(obj, f"{group}template")
        except PodSetError:
            continue
        out.append({"replicas": _infer_replicas(obj, f"{group}replicas"), "path": f"{group}template"})
    return out


def _job_pod_count(obj: Obj, prefix: str) -> int:
    """min(parallelism, completions) of the Job spec under `prefix`, each 1 when absent."""
    count = _replicas_at(obj, f"{prefix}.spec.parallelism")
    count = 1 if count is None else count
    completions = _replicas_at(obj, f"{prefix}.spec.completions")
    return completions if completions is not None and completions < count else count


def _jobset_pod_sets(obj: Obj) -> list[dict[str, Any]]:
    try:
        jobs = value_at(obj, "template.spec.replicatedJobs")
    except PodSetError:
        return []
    out = []
    for i in range(len(jobs) if isinstance(jobs, list) else 0):
        prefix = f"template.spec.replicatedJobs[{i}]."
        try:
            value_at(obj, f"{prefix}template")
        except PodSetError:
            continue
        pods = _job_pod_count(obj, f"{prefix}template")
        replicas = _replicas_at(obj, f"{prefix}replicas")
        replicas = 1 if replicas is None else replicas
        out.append(
            {
                "replicas": replicas * pods,
                "path": f"{prefix}template.spec.template",
                "annotations": {
                    TAS_POD_INDEX_LABEL: c.JOB_COMPLETION_INDEX_ANNOTATION,
                    TAS_SUB_GROUP_INDEX_LABEL: _JOBSET_JOB_INDEX,
                    TAS_SUB_GROUP_COUNT: str(replicas),
                },
            }
        )
    return out


def _pytorch_pod_sets(obj: Obj) -> list[dict[str, Any]]:
    out = []
    for role in ("Master", "Worker"):
        prefix = f"template.spec.pytorchReplicaSpecs.{role}."
        try:
            value_at(obj, f"{prefix}template")
        except PodSetError:
            continue
        out.append(
            {
                "replicas": _infer_replicas(obj, f"{prefix}replicas"),
                "path": f"{prefix}template",
                "annotations": {TAS_POD_INDEX_LABEL: _PYTORCH_REPLICA_INDEX},
            }
        )
    return out


# Kinds whose one pod template sits at a fixed path (`templatesForGVK`): (path, replicas path).
_FIXED_TEMPLATES: dict[tuple[str, str], tuple[str, str]] = {
    ("v1", "Pod"): ("template", ""),
    ("apps/v1", "Deployment"): ("template.spec.template", "template.spec.replicas"),
    ("apps/v1", "StatefulSet"): ("template.spec.template", "template.spec.replicas"),
}


def infer_pod_sets(obj: Obj) -> list[dict[str, Any]]:
    """`InferPodSets`: the podSets of a wrapped object of a kind the library knows (none for
    others); raises `PodSetError` when one does not lead to a pod template."""
    gvk = (obj.get("apiVersion"), obj.get("kind"))
    out: list[dict[str, Any]]
    if gvk == ("batch/v1", "Job"):
        out = [
            {
                "replicas": _job_pod_count(obj, "template"),
                "path": "template.spec.template",
                "annotations": {TAS_POD_INDEX_LABEL: c.JOB_COMPLETION_INDEX_ANNOTATION},
            }
        ]
    elif gvk == ("jobset.x-k8s.io/v1alpha2", "JobSet"):
        out = _jobset_pod_sets(obj)
    elif gvk == ("kubeflow.org/v1", "PyTorchJob"):
        out = _pytorch_pod_sets(obj)
    elif gvk == ("ray.io/v1", "RayCluster"):
        out = _ray_pod_sets(obj, "template.spec.")
    elif gvk == ("ray.io/v1", "RayJob"):
        out = _ray_pod_sets(obj, "template.spec.rayClusterSpec.")
    else:
        out = []
        fixed = _FIXED_TEMPLATES.get((str(gvk[0]), str(gvk[1])))
        if fixed is not None:
            path, replicas = fixed
            try:
                value_at(obj, path)
            except PodSetError:
                pass
            else:
                out.append({"replicas": _infer_replicas(obj, replicas) if replicas else 1, "path": path})
    for ps in out:
        try:
            pod_template(obj, ps["path"])
        except PodSetError as exc:
            raise PodSetError(f"{ps['path']} does not refer to a v1.PodSpecTemplate: {exc}") from None
    return out


def _decoded(component: Obj) -> Obj:
    """The component's raw template as an object (the library's unstructured decode needs a kind)."""
    template = component.get("template")
    if not isinstance(template, Mapping) or not template.get("kind"):
        raise PodSetError(f"Object 'Kind' is missing in '{orjson.dumps(template).decode()}'")
    return template


def component_pod_sets(aw: Obj) -> list[list[dict[str, Any]]]:
    """`EnsureComponentStatusInitialized`: each component's podSets, from `status.componentStatus`
    when the AppWrapper controller has filled it for every component, else declared or inferred."""
    components = (aw.get("spec") or {}).get("components") or []
    cached = (aw.get("status") or {}).get("componentStatus") or []
    if len(cached) == len(components):
        return [list(cs.get("podSets") or ()) for cs in cached]
    return [list(comp.get("podSets") or ()) or infer_pod_sets(_decoded(comp)) for comp in components]


# == a pod template as the library reads it (`GetPodTemplateSpec`) ================================
_DOMAIN = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"^((?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)(?::([\w][\w.-]{{0,127}}))?"
    r"(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)
_HEX64 = re.compile(r"^[a-f0-9]{64}$")


def _image_tag(image: str) -> str:
    """`getImageTag`: the tag, `latest` when there is neither tag nor digest, empty when the
    reference does not parse (distribution/reference's grammar)."""
    match = _REFERENCE.match(image)
    if match is None or _HEX64.match(match.group(1)) or len(match.group(1)) > 255:
        return ""
    tag, digest = match.group(2), match.group(3)
    return tag or ("" if digest else "latest")


def _round_up_milli(value: object) -> object:
    """`defaultResourceList`: a quantity rounded up to a milli-unit; raises `QuantityError`."""
    amount = quantity.parse(value)  # type: ignore[arg-type]
    milli = amount * 1000
    if milli.denominator == 1:
        return value if isinstance(value, str) else str(value)
    return quantity.format_nanos(math.ceil(milli) * 10**6)


def _resource_list(resources: object) -> dict[str, Any] | None:
    if not isinstance(resources, Mapping) or not resources:
        return None
    return {name: _round_up_milli(v) for name, v in resources.items()}


def _containers(src: Sequence[Any]) -> list[dict[str, Any]]:
    """`copyContainers`: the fields Kueue compares and counts, defaulted as the API server would."""
    out = []
    for ctr in src:
        ctr = ctr if isinstance(ctr, Mapping) else {}
        res: Mapping[str, Any] = ctr["resources"] if isinstance(ctr.get("resources"), Mapping) else {}
        image = str(ctr.get("image") or "")
        dst: dict[str, Any] = {"name": ctr.get("name", "")}
        if image:
            dst["image"] = image
        for key in ("command", "args"):
            if ctr.get(key):
                dst[key] = ctr[key]
        dst["resources"] = {
            key: rl for key in ("limits", "requests") if (rl := _resource_list(res.get(key))) is not None
        }
        dst["terminationMessagePath"] = ctr.get("terminationMessagePath") or "/dev/termination-log"
        dst["terminationMessagePolicy"] = ctr.get("terminationMessagePolicy") or "File"
        dst["imagePullPolicy"] = ctr.get("imagePullPolicy") or (
            "Always" if _image_tag(image) == "latest" else "IfNotPresent"
        )
        if ctr.get("securityContext") is not None:
            dst["securityContext"] = ctr["securityContext"]
        out.append(dst)
    return out


def _string_map(value: object) -> dict[str, str] | None:
    if not isinstance(value, Mapping):
        return None
    return {key: v for key, v in value.items() if isinstance(v, str)}


def pod_template(obj: Obj, path: str) -> dict[str, Any]:
    """`GetPodTemplateSpec`: the pod template at `path` (a PodTemplateSpec or a Pod), reduced to
    what Kueue reads and defaulted as the API server would default it, so that the Workload's
    podSets compare equal to what the job says on every reconcile. Raises `PodSetError`."""
    candidate = _raw_template(obj, path)
    src = candidate.get("spec")
    if not isinstance(src, Mapping):
        raise PodSetError(f"content at {path} does not contain a spec")
    out: dict[str, Any] = {}
    meta = candidate.get("metadata")
    if isinstance(meta, Mapping):
        dst_meta = {key: m for key in ("labels", "annotations") if (m := _string_map(meta.get(key))) is not None and m}
        if dst_meta:
            out["metadata"] = dst_meta
    try:
        spec: dict[str, Any] = {}
        if src.get("initContainers"):
            spec["initContainers"] = _containers(src["initContainers"])
        spec["containers"] = _containers(src.get("containers") or ())
        spec["restartPolicy"] = src.get("restartPolicy") or "Always"
        if src.get("terminationGracePeriodSeconds") is None:
            # The library defaults the field only when absent, and drops a value that is set.
            spec["terminationGracePeriodSeconds"] = 30
        spec["dnsPolicy"] = src.get("dnsPolicy") or "ClusterFirst"
        for key in ("nodeSelector", "nodeName"):
            if src.get(key):
                spec[key] = src[key]
        spec["securityContext"] = src.get("securityContext") or {}
        if src.get("affinity") is not None:
            spec["affinity"] = src["affinity"]
        spec["schedulerName"] = src.get("schedulerName") or "default-scheduler"
        for key in ("tolerations", "priorityClassName"):
            if src.get(key):
                spec[key] = src[key]
        spec["preemptionPolicy"] = src.get("preemptionPolicy") or "PreemptLowerPriority"
        if (overhead := _resource_list(src.get("overhead"))) is not None:
            spec["overhead"] = overhead
        if src.get("topologySpreadConstraints"):
            spec["topologySpreadConstraints"] = src["topologySpreadConstraints"]
    except quantity.QuantityError as exc:
        raise PodSetError(f"content at {path}.spec not parseable as a v1.PodSpec: {exc}") from None
    out["spec"] = spec
    return out


def component_pod_specs(aw: Obj) -> list[tuple[dict[str, Any], Obj]]:
    """`GetComponentPodSpecs`: (pod template, AppWrapper podSet) for every podSet whose template
    can be read, in component order; a podSet whose template cannot is left out."""
    components = (aw.get("spec") or {}).get("components") or []
    out: list[tuple[dict[str, Any], Obj]] = []
    for comp, sets in zip(components, component_pod_sets(aw), strict=True):
        if not sets:
            continue
        obj = _decoded(comp)
        for ps in sets:
            try:
                out.append((pod_template(obj, str(ps.get("path") or "")), ps))
            except PodSetError:
                continue
    return out


# == the Workload's podSets =========================================================================
def _replicas(ps: Obj) -> int:
    """`utils.Replicas`: a podSet's replicas, 1 when unset."""
    value = ps.get("replicas")
    return 1 if value is None else int(value)


def _topology_request(template: Obj, ps: Obj, key: str) -> dict[str, Any] | None:
    """`NewPodSetTopologyRequest(meta).PodIndexLabel(..).SubGroup(..).Build()` from the template's
    annotations and the podSet's TAS annotations; None when nothing asks for one."""
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    ps_annotations = ps.get("annotations") or {}
    index_label = ps_annotations.get(TAS_POD_INDEX_LABEL)
    sub_label = ps_annotations.get(TAS_SUB_GROUP_INDEX_LABEL)
    sub_count: int | None = None
    if TAS_SUB_GROUP_COUNT in ps_annotations:
        try:
            sub_count = fields.go_atoi(ps_annotations[TAS_SUB_GROUP_COUNT])
        except ValueError as exc:
            log.error(
                "Malformed annotation ignored",
                extra={"object": key, "annotation": TAS_SUB_GROUP_COUNT, "error": str(exc)},
            )
    asked = any(
        a in annotations
        for a in (c.PODSET_REQUIRED_TOPOLOGY, c.PODSET_PREFERRED_TOPOLOGY, c.PODSET_UNCONSTRAINED_TOPOLOGY)
    ) or (c.PODSET_SLICE_REQUIRED_TOPOLOGY in annotations and c.PODSET_SLICE_SIZE in annotations)
    if not asked and index_label is None and sub_label is None and sub_count is None:
        return None
    req = podset.topology_request(annotations, pod_index_label=index_label or "")
    if index_label is None:
        del req["podIndexLabel"]
    if sub_count is not None:
        req["subGroupCount"] = sub_count
    if sub_label is not None:
        req["subGroupIndexLabel"] = sub_label
    return req


def pod_sets(aw: Obj, *, tas: bool = False) -> list[dict[str, Any]]:
    """`AppWrapper.PodSets`: one podSet per readable component podSet, named `<aw>-<index>`, its
    count the podSet's replicas, with the gate TopologyAwareScheduling its topology request.
    Raises `PodSetError`."""
    name, key = o.name(aw), o.key(aw)
    out = []
    for i, (template, ps) in enumerate(component_pod_specs(aw)):
        entry: dict[str, Any] = {"name": f"{name}-{i}", "count": _replicas(ps), "template": template}
        if tas:
            try:
                req = _topology_request(template, ps, key)
            except ValueError as exc:
                raise PodSetError(str(exc)) from None
            if req is not None:
                entry["topologyRequest"] = req
        out.append(entry)
    return out


# == status =========================================================================================
def finished(aw: Obj) -> tuple[str, str] | None:
    """`AppWrapper.Finished`: Succeeded, or Failed once the wrapped resources are gone."""
    phase = (aw.get("status") or {}).get("phase")
    if phase == PHASE_SUCCEEDED:
        return c.FinishedReason.SUCCEEDED, "AppWrapper finished successfully"
    if phase == PHASE_FAILED and not o.is_condition_true(aw, RESOURCES_DEPLOYED):
        return c.FinishedReason.FAILED, "AppWrapper failed"
    return None


# == start and stop: the components' podSetInfos ===================================================
def _pod_set_info(info: podset.PodSetInfo) -> dict[str, Any]:
    """An `AppWrapperPodSetInfo`, its empty fields left out."""
    out: dict[str, Any] = {
        "annotations": info.annotations,
        "labels": info.labels,
        "nodeSelector": info.node_selector,
        "tolerations": info.tolerations,
        "schedulingGates": info.scheduling_gates,
    }
    return {key: copy.deepcopy(v) for key, v in out.items() if v}


def start_patch(
    aw: Obj, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool = False, assign_queue_labels: bool = True
) -> dict[str, Any]:
    """`RunWithPodSetsInfo` (`SetPodSetInfos`): the admission's podSet infos, in order, become
    the components' `podSetInfos`, and the AppWrapper is resumed; one merge patch guarded by the
    resourceVersion. Raises `StartConflict` when the counts disagree or an admission check's
    update conflicts, `podset.FlavorNotFound` while a flavor is not known yet."""
    specs = {name: (rf.get("spec") or {}) for name, rf in flavors.items()}
    try:
        infos = podset.from_admission(wl, specs, tas=tas, assign_queue_labels=assign_queue_labels)
    except podset.PermanentError as exc:
        raise StartConflict(str(exc)) from exc
    try:
        sets = component_pod_sets(aw)
    except PodSetError as exc:
        raise StartConflict(f"invalid podset infos: {exc}") from exc
    expected = sum(len(s) for s in sets)
    if expected != len(infos):
        raise StartConflict(f"invalid podset infos: expecting {expected} podsets, got {len(infos)}")
    components = copy.deepcopy(list((aw.get("spec") or {}).get("components") or ()))
    at = 0
    for comp, comp_sets in zip(components, sets, strict=True):
        comp["podSetInfos"] = [_pod_set_info(info) for info in infos[at : at + len(comp_sets)]]
        at += len(comp_sets)
    return {
        "metadata": {"resourceVersion": o.meta(aw).get("resourceVersion")},
        "spec": {"suspend": False, "components": components},
    }


def restore_patch(aw: Obj, wl: Obj | None) -> dict[str, Any] | None:
    """`RestorePodSetsInfo` (`ClearPodSetInfos`): every component's `podSetInfos` removed, when
    the stop has the Workload's podSets to restore from; None when there is nothing to clear."""
    components = (aw.get("spec") or {}).get("components") or []
    if wl is None or not any(comp.get("podSetInfos") for comp in components):
        return None
    cleared = [{key: v for key, v in comp.items() if key != "podSetInfos"} for comp in components]
    return o.guarded_patch(aw, spec={"components": cleared})


# == the adapter ====================================================================================
class AppWrapper(SuspendedBySpec):
    """An AppWrapper as a `GenericJob`."""

    __slots__ = ("obj", "tas")
    api_version = AW_API
    kind = APPWRAPPER.kind
    group = APPWRAPPER.group

    def __init__(self, obj: Obj, *, tas: bool = False) -> None:
        self.obj = obj
        self.tas = tas  # the TopologyAwareScheduling gate: podSets carry a topology request

    def is_suspended(self) -> bool:
        return bool((self.obj.get("spec") or {}).get("suspend"))

    def is_active(self) -> bool:
        """The AppWrapper controller still holds quota for it (its own QuotaReserved condition)."""
        return o.is_condition_true(self.obj, QUOTA_RESERVED)

    def finished(self) -> tuple[str, str] | None:
        return finished(self.obj)

    def pod_sets(self, *, partial_admission: bool) -> list[dict[str, Any]]:
        """Raises `JobError` when the components cannot be read (upstream returns the error)."""
        try:
            return pod_sets(self.obj, tas=self.tas)
        except PodSetError as exc:
            raise JobError(str(exc)) from exc

    def pods_ready(self) -> bool:
        return o.is_condition_true(self.obj, PODS_READY)

    def run_with_pod_sets_info(
        self, wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool
    ) -> dict[str, Any]:
        return start_patch(self.obj, wl, flavors, tas=tas, assign_queue_labels=assign_queue_labels)

    def restore_pod_sets_info(self, wl: Obj | None) -> dict[str, Any] | None:
        return restore_patch(self.obj, wl)


INTEGRATION = Integration(
    api_version=AW_API,
    kind=APPWRAPPER.kind,
    resource="appwrappers",  # the registry row's plural, spelled out so the RBAC scan sees the worker use it
    controller_name=CONTROLLER_NAME,
    wrap=AppWrapper,
)
"""AppWrappers for the generic executor."""


def workload_name(name: str, uid: str, *, short: bool = False) -> str:
    """`GetWorkloadNameForAppWrapper`: the Workload name of the AppWrapper `name`."""
    return jobs.workload_name(name, uid, kind=AppWrapper.kind, group=AppWrapper.group, short=short)


def build_workload(aw: Obj, *, config: Configuration, priority: Priority) -> dict[str, Any]:
    """The Workload of an AppWrapper (`jobframework.plan.build_workload`)."""
    gj = AppWrapper(aw, tas=config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING))
    return fw.build_workload(gj, config=config, priority=priority)


# == the plan =======================================================================================
def plan(
    aw: Obj | None,
    workloads: Sequence[Obj],
    *,
    namespace_labels: Mapping[str, str] | None,
    config: Configuration,
    store: Store | None = None,
    now: datetime | None = None,
) -> Plan:
    """One reconcile of an AppWrapper (`ReconcileGenericJob`); `workloads` are those it owns."""
    tas = config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
    store = store if store is not None else Store()
    return fw.plan_always_top_level(
        aw,
        workloads,
        lambda obj: AppWrapper(obj, tas=tas),
        namespace_labels=namespace_labels,
        config=config,
        store=store,
        now=now or datetime.now(UTC),
    )


# == I/O ============================================================================================
class AppWrapperReconciler(OwnedJobReconciler, plan=plan, integration=INTEGRATION):
    """The AppWrapper reconciler: the generic one, planning with this module's `plan`."""


def setup(ctx: SetupContext) -> Wiring:
    """The AppWrapper integration in the worker: every AppWrapper is watched, once its CRD is served
    (the operator's CRD may not be installed: until it is, there are no AppWrappers)."""
    return AppWrapperReconciler.wiring(ctx, Resource(INTEGRATION.resource, AW_API, optional=True))
