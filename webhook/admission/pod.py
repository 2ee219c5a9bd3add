"""v1 Pod webhook: gate pods with a queue name, validate pod-group metadata, compute the role hash.

Mirrors `pkg/controller/jobs/pod/pod_webhook.go`; the role hash itself (`pkg/util/pod/pod.go`) lives in
`webhook/api/pod_role.py`, shared with the pod-group reconciler. Paths /mutate--v1-pod and /validate--v1-pod.
Create and update check the pod's own TAS annotations (`tas_validation`), as upstream does whatever
the TopologyAwareScheduling gate.
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
from webhook.api import integrations
from webhook.api import objects as o
from webhook.api.pod_role import role_hash
from webhook.config import Feature

__all__ = ["GVK", "default", "group_name", "is_suspended", "role_hash", "validate_create", "validate_update"]

GVK = integrations.POD.gvk
MANAGED_PATH = jf.LABELS.key(c.MANAGED_LABEL)
TOTAL_COUNT_PATH = jf.ANNOTATIONS.key(c.POD_GROUP_TOTAL_COUNT)
RETRIABLE_PATH = jf.ANNOTATIONS.key(c.RETRIABLE_IN_GROUP)
META_PATH = f.Path("metadata")


# --- mutation -----------------------------------------------------------------------------------


def _gate(spec: dict[str, Any], name: str) -> None:
    gates = spec.get("schedulingGates") or []
    if not any(g.get("name") == name for g in gates):
        spec["schedulingGates"] = [*gates, {"name": name}]


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Label, finalize and gate a pod Kueue manages (`PodWebhook.Default`)."""
    meta = obj.setdefault("metadata", {})
    namespace = meta.get("namespace") or ctx.namespace
    suspend_by_parent = c.POD_SUSPENDING_PARENT in o.annotations(obj)
    if not suspend_by_parent:
        if ctx.config.managed_jobs_namespace_selector is not None and not jf.namespace_is_managed(ctx, namespace):
            return
        if jf.find_managed_ancestor(obj, ctx, namespace) is not None:
            return
        jf.default_local_queue(obj, ctx, namespace, check_owner=False)
        jf.default_priority_class(obj, ctx)
        if not (jf.queue_name(obj) or ctx.config.manage_jobs_without_queue_name):
            return
        if meta.get("labels") is None:
            meta["labels"] = {}
        meta["labels"][c.MANAGED_LABEL] = "true"
        o.add_finalizer(obj, c.POD_FINALIZER)
    spec = obj.setdefault("spec", {})
    _gate(spec, c.ADMISSION_GATE)
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        index_label = o.annotations(obj).get(c.POD_GROUP_POD_INDEX_LABEL_ANNOTATION)
        if index_label is not None:
            if meta.get("labels") is None:
                meta["labels"] = {}
            meta["labels"][c.POD_GROUP_POD_INDEX_LABEL] = meta["labels"].get(index_label, "")
        _gate(spec, c.TOPOLOGY_GATE)
    if meta.get("annotations") is None:
        meta["annotations"] = {}
    if c.ROLE_HASH_ANNOTATION not in meta["annotations"]:
        meta["annotations"][c.ROLE_HASH_ANNOTATION] = role_hash(obj)


# --- validation ---------------------------------------------------------------------------------


def group_name(pod: Mapping[str, Any], ctx: Context) -> tuple[str, str]:
    """(group name, its field path): the annotation form wins when allowed and set."""
    annotation = o.annotations(pod).get(c.POD_GROUP_NAME, "")
    if annotation and ctx.config.feature_enabled(Feature.WORKLOAD_IDENTIFIER_ANNOTATIONS):
        return annotation, jf.ANNOTATIONS.key(c.POD_GROUP_NAME)
    return o.labels(pod).get(c.POD_GROUP_NAME, ""), jf.LABELS.key(c.POD_GROUP_NAME)


def is_suspended(pod: Mapping[str, Any]) -> bool:
    """Finished, or still waiting behind Kueue's admission gate."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    return any(g.get("name") == c.ADMISSION_GATE for g in (pod.get("spec") or {}).get("schedulingGates") or ())


def _validate_group_metadata(pod: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    annotations = o.annotations(pod)
    name, name_path = group_name(pod, ctx)
    form = "annotation" if name_path.startswith("metadata.annotations") else "label"
    detail = f"both the '{c.POD_GROUP_TOTAL_COUNT}' annotation and the '{c.POD_GROUP_NAME}' {form} should be set"
    has_total = c.POD_GROUP_TOTAL_COUNT in annotations
    errs: list[f.FieldError] = []
    if not name:
        return [f.required(name_path, detail)] if has_total else []
    errors = f.is_dns1123_subdomain(name)
    if errors:
        errs.append(f.invalid(name_path, name, ",".join(errors)))
    if not has_total:
        return [*errs, f.required(TOTAL_COUNT_PATH, detail)]
    text = annotations[c.POD_GROUP_TOTAL_COUNT]
    try:
        total = f.go_atoi(text)
    except ValueError as exc:
        return [*errs, f.invalid(TOTAL_COUNT_PATH, text, str(exc))]
    if total < 1:
        errs.append(
            f.invalid(
                TOTAL_COUNT_PATH,
                text,
                f"incorrect annotation value '{c.POD_GROUP_TOTAL_COUNT}={text}': group total count should be greater than zero",
            )
        )
    return errs


def _validate_common(pod: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCommon`: the managed label, the pod-group metadata, the pod's TAS annotations,
    then the prebuilt Workload against the group."""
    errs: list[f.FieldError] = []
    managed = o.labels(pod).get(c.MANAGED_LABEL)
    if managed is not None and managed != "true":
        errs.append(f.forbidden(MANAGED_PATH, "managed label value can only be 'true'"))
    errs += _validate_group_metadata(pod, ctx)
    errs += tas.validate_pod_set_request(META_PATH, o.annotations(pod))
    name, _ = group_name(pod, ctx)
    prebuilt, prebuilt_path = jf.prebuilt_workload_name(pod, ctx)
    if name and prebuilt and prebuilt != name:
        errs.append(f.invalid(prebuilt_path, prebuilt, "prebuilt workload and pod group should be equal"))
    return errs


def _managed_label_warning(pod: Mapping[str, Any], ctx: Context) -> list[str]:
    if o.labels(pod).get(c.MANAGED_LABEL) == "true" and jf.owner_is_managed_kind(pod, ctx):
        return [f"pod owner is managed by kueue, label '{c.MANAGED_LABEL}=true' might lead to unexpected behaviour"]
    return []


def warnings_create(pod: Mapping[str, Any], ctx: Context) -> list[str]:
    """The managed-label warning, then the queue's (one pod of a group at a time; not for pods a controller
    owns, whose owner is what gets queued)."""
    owned = any(ref.get("controller") for ref in o.meta(pod).get("ownerReferences") or [])
    queue = "" if owned else o.labels(pod).get(c.QUEUE_LABEL, "")
    demand = [queue_warnings.pod_set_demand(1, pod.get("spec") or {})]
    namespace = o.meta(pod).get("namespace") or ctx.namespace
    return [*_managed_label_warning(pod, ctx), *queue_warnings.queue_warnings("Pod", namespace, queue, demand, ctx)]


def warnings_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[str]:
    if c.POD_SUSPENDING_PARENT in o.annotations(new):
        return []
    return _managed_label_warning(new, ctx)


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    return [*jf.validate_job_create(obj, ctx, gvk=GVK), *_validate_common(obj, ctx)]


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    errs = jf.validate_job_update(
        old, new, ctx, old_suspended=is_suspended(old), new_suspended=is_suspended(new), gvk=GVK
    )
    errs += _validate_common(new, ctx)
    name, _ = group_name(new, ctx)
    if (
        name
        and o.annotations(old).get(c.RETRIABLE_IN_GROUP) == "false"
        and o.annotations(new).get(c.RETRIABLE_IN_GROUP) != "false"
    ):
        errs.append(f.forbidden(RETRIABLE_PATH, "unretriable pod group can't be converted to retriable"))
    old_name, _ = group_name(old, ctx)
    if old_name:
        new_name, new_path = group_name(new, ctx)
        if new_name != old_name:
            errs.append(f.invalid(new_path, new_name, jf.IMMUTABLE))
    return errs
