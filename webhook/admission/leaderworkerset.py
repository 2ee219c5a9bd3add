"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet webhook: mark the leader's and the workers' pods as
suspended by the LeaderWorkerSet (with its queue and priority class) and keep a managed group's
shape stable.

Mirrors `pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go` (upstream v0.19.2). The
worker (`webhook/worker/integrations/leaderworkerset.py`) makes one Workload per group and turns
each group's pods into a pod group. Paths /mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset
(CREATE and UPDATE) and /validate-leaderworkerset-x-k8s-io-v1-leaderworkerset. With
TopologyAwareScheduling, create and update check the leader's and the workers' template TAS
annotations and their podSet group (`validateTopologyRequest`, `tas_validation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission import jobframework as jf
from webhook.admission import queue_warnings
from webhook.admission import tas_validation as tas
from webhook.admission.context import Context
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import objects as o
from webhook.api.leaderworkerset import (
    FRAMEWORK,
    GVK,
    LEADER_POD_SET,
    MAX_REPLICAS,
    POD_INDEX_OFFSET_ANNOTATION,
    WORKER_POD_SET,
    leader_template,
    replicas,
    size,
    worker_template,
)
from webhook.config import Feature

__all__ = ["FRAMEWORK", "GVK", "default", "validate_create", "validate_update", "warnings_create"]

REPLICAS_PATH = f.Path("spec.replicas")
LWT_PATH = f.Path("spec.leaderWorkerTemplate")
SIZE_PATH = LWT_PATH.child("size")
LEADER_TEMPLATE_PATH = LWT_PATH.child("leaderTemplate")
WORKER_TEMPLATE_PATH = LWT_PATH.child("workerTemplate")
LEADER_META_PATH = LEADER_TEMPLATE_PATH.child("metadata")
WORKER_META_PATH = WORKER_TEMPLATE_PATH.child("metadata")
_DEFAULT_POD_SET = "main"  # `kueue.DefaultPodSetName`: the workers' podSet without a leader template
# `podSetAnnotationsPathByName`: where each podSet's annotations are, for the group errors.
_ANNOTATIONS_PATHS = {
    LEADER_POD_SET: LEADER_META_PATH.child("annotations"),
    WORKER_POD_SET: WORKER_META_PATH.child("annotations"),
    _DEFAULT_POD_SET: WORKER_META_PATH.child("annotations"),
}


# --- mutation -----------------------------------------------------------------------------------


def _template_meta(obj: dict[str, Any], key: str) -> dict[str, Any]:
    lwt = obj.setdefault("spec", {}).setdefault("leaderWorkerTemplate", {})
    if lwt.get(key) is None:
        lwt[key] = {}
    template = lwt[key]
    if template.get("metadata") is None:
        template["metadata"] = {}
    meta: dict[str, Any] = template["metadata"]
    return meta


def _set(meta: dict[str, Any], part: str, key: str, value: str) -> None:
    if meta.get(part) is None:
        meta[part] = {}
    meta[part][key] = value


def _default_template(obj: dict[str, Any], ctx: Context, key: str, pod_set: str) -> None:
    """`podTemplateSpecDefault`: the object's queue and priority class reach the pods, which are
    suspended by the LeaderWorkerSet and served as a group."""
    meta = _template_meta(obj, key)
    queue = jf.queue_name(obj)
    if queue:
        _set(meta, "labels", c.QUEUE_LABEL, queue)
    priority = o.labels(obj).get(c.PRIORITY_CLASS_LABEL, "")
    if priority:
        _set(meta, "labels", c.PRIORITY_CLASS_LABEL, priority)
    _set(meta, "annotations", c.POD_SUSPENDING_PARENT, FRAMEWORK)
    _set(meta, "annotations", c.POD_GROUP_SERVING, "true")
    annotations = meta["annotations"]
    if (
        ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
        and pod_set == WORKER_POD_SET
        and leader_template(obj) is not None
        and c.PODSET_GROUP_NAME not in annotations
    ):
        # Workers count from 1 after their leader, unless both are one podSet group.
        annotations[POD_INDEX_OFFSET_ANNOTATION] = "1"


def default(obj: dict[str, Any], ctx: Context) -> None:
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    if not jf.should_suspend(obj, ctx, namespace):
        return
    if leader_template(obj) is not None:
        _default_template(obj, ctx, "leaderTemplate", LEADER_POD_SET)
    _default_template(obj, ctx, "workerTemplate", WORKER_POD_SET)


# --- validation ---------------------------------------------------------------------------------


def _validate_replicas(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateLeaderWorkerSetReplicaCount`: from 0 to a million groups."""
    count = replicas(obj)
    prefix = "invalid LeaderWorkerSet replicas"
    if count < 0:
        return [f.invalid(REPLICAS_PATH, count, f"{prefix}: must be >= 0, got {count}")]
    if count > MAX_REPLICAS:
        return [f.invalid(REPLICAS_PATH, count, f"{prefix}: must be <= {MAX_REPLICAS}, got {count}")]
    return []


def _annotations(template: Mapping[str, Any]) -> Mapping[str, str]:
    return (template.get("metadata") or {}).get("annotations") or {}


def _validate_topology(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateTopologyRequest`: the leader's (when it has its own template) then the workers'
    TAS annotations, each followed, when both podSets can be built, by its slice size against its
    podSet's count (the leader 1, the workers `size`, less the leader), then the podSet group. A
    podSet that cannot be built always has a field error of its own, so Go's error is not seen."""
    leader = leader_template(obj)
    templates = [(_DEFAULT_POD_SET, size(obj), worker_template(obj), WORKER_META_PATH)]
    if leader is not None:
        templates = [
            (LEADER_POD_SET, 1, leader, LEADER_META_PATH),
            (WORKER_POD_SET, size(obj) - 1, worker_template(obj), WORKER_META_PATH),
        ]
    built = all(tas.build_error(_annotations(t)) is None for _, _, t, _ in templates)
    errs: list[f.FieldError] = []
    pod_sets: list[dict[str, Any]] = []
    for name, count, template, meta_path in templates:
        annotations = _annotations(template)
        errs += tas.validate_pod_set_request(meta_path, annotations)
        if built:
            errs += tas.validate_slice_size_upper_bound(meta_path, annotations, count)
        pod_sets.append({"name": name, "count": count, "topologyRequest": tas.grouping_request(annotations)})
    if built:
        errs += tas.validate_grouping(pod_sets, _ANNOTATIONS_PATHS)
    return errs


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCreate`: queue name, not elastic, replica bound, admission-gated-by format, then
    with TopologyAwareScheduling the TAS checks."""
    errs = jf.validate_queue_name(obj) + jf.validate_elastic(obj, ctx, gvk=GVK) + _validate_replicas(obj)
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += jf.validate_admission_gated_by_create(obj)
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        errs += _validate_topology(obj)
    return errs


def _immutable_template(new: Mapping[str, Any] | None, old: Mapping[str, Any] | None, path: str) -> list[f.FieldError]:
    """`validateImmutablePodTemplateSpec`: a template may not come or go, nor its pods change shape."""
    if new is None or old is None:
        return [] if new == old else [f.immutable(path, new)]
    return jf.validate_immutable_pod_spec_shape(
        new.get("spec") or {}, old.get("spec") or {}, f.Path(path).child("spec")
    )


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateUpdate`: the queue name is fixed once a group is ready and can never be removed;
    a managed LeaderWorkerSet keeps its templates' shape (and, with LWSImmutableGroupSize, its size)."""
    errs = validate_create(new, ctx)
    suspended = not (old.get("status") or {}).get("readyReplicas")
    old_q, new_q = jf.queue_name(old), jf.queue_name(new)
    if (not suspended or not new_q) and old_q != new_q:
        errs.append(f.immutable(jf.QUEUE_PATH, new_q))
    errs += jf.validate_priority_class_update(old, new, suspended=suspended)
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += jf.validate_admission_gated_by_update(old, new)
    namespace = o.meta(new).get("namespace") or ctx.namespace
    if not jf.should_suspend(new, ctx, namespace):
        return errs
    errs += _immutable_template(leader_template(new), leader_template(old), LEADER_TEMPLATE_PATH)
    errs += _immutable_template(worker_template(new), worker_template(old), WORKER_TEMPLATE_PATH)
    if ctx.config.feature_enabled(Feature.LWS_IMMUTABLE_GROUP_SIZE) and size(new) != size(old):
        errs.append(f.immutable(SIZE_PATH, size(new)))
    return errs


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue's warnings for one group (one Workload: the leader and `size - 1` workers)."""
    leader = leader_template(obj)
    workers = size(obj) - (1 if leader is not None else 0)
    demand: list[queue_warnings.PodSetDemand] = []
    if replicas(obj) > 0:
        if leader is not None:
            demand.append(queue_warnings.pod_set_demand(1, leader.get("spec") or {}))
        if workers > 0:
            demand.append(queue_warnings.pod_set_demand(workers, worker_template(obj).get("spec") or {}))
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings("LeaderWorkerSet", namespace, jf.queue_name(obj), demand, ctx)
