"""Workload webhook: drop minCount without PartialAdmission; validate spec, status and their updates.

Mirrors `pkg/webhooks/workload_webhook.go` (kubernetes-sigs/kueue at ff69552e79), served at
/mutate-kueue-x-k8s-io-v1beta2-workload and /validate-kueue-x-k8s-io-v1beta2-workload, the latter
for both `workloads` and `workloads/status` (the same checks run for either). The
admission-gated-by rules are `pkg/util/webhook/validation_admissiongatedby.go`, shared with the
job integrations through `jobframework`.

Where upstream prints a Go struct (immutable podSets, admission, podSetUpdates) we print its JSON
with fields in Go declaration order for Kueue's own types and the pod template's common fields;
fields we do not model come after them, sorted. Where upstream's message depends on Go map order
we sort by key, and the divisibility message ends with the count rather than a pointer address.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from webhook.admission import jobframework
from webhook.admission.context import Context
from webhook.admission.resource_flavor import validate_tolerations
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import objects as o
from webhook.api.quantity import amount, parse
from webhook.config import Feature

__all__ = ["default", "validate_create", "validate_update"]

SPEC = f.Path("spec")
STATUS = f.Path("status")
POD_SETS = SPEC.child("podSets")
ADMISSION = STATUS.child("admission")
RECLAIMABLE_PODS = STATUS.child("reclaimablePods")
ADMISSION_CHECKS = STATUS.child("admissionChecks")
PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
PRIORITY_BOOST_PATH = f.Path("metadata.annotations").key(PRIORITY_BOOST_ANNOTATION)
WORKLOAD_SLICE_REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"
RESERVED_RESOURCE = "pods"
IS_NEGATIVE_MSG = "must be greater than or equal to 0"
_SIGNED_INT = re.compile(r"^[+-]?[0-9]+$")
_RESOURCE_LISTS = frozenset({"requests", "limits", "overhead", "resourceUsage"})


# --- Go declaration order of printed structs (workload_types.go, k8s core/v1 and meta/v1) ----------


def _omitempty(*names: str) -> tuple[f.GoField, ...]:
    return tuple(f.GoField(n) for n in names)


_RESOURCE_REQUIREMENTS = _omitempty("limits", "requests", "claims")
_CONTAINER = (
    f.GoField("name", omitempty=False, zero=""),
    *_omitempty("image", "command", "args", "workingDir", "ports", "envFrom", "env"),
    f.GoField("resources", omitempty=False, schema=_RESOURCE_REQUIREMENTS),
    *_omitempty(
        "resizePolicy", "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices", "livenessProbe",
        "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath", "terminationMessagePolicy",
        "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
    ),
)  # fmt: skip
_POD_SPEC = (
    f.GoField("volumes"),
    f.GoField("initContainers", schema=_CONTAINER),
    f.GoField("containers", omitempty=False, schema=_CONTAINER),
    *_omitempty(
        "ephemeralContainers", "restartPolicy", "terminationGracePeriodSeconds", "activeDeadlineSeconds",
        "dnsPolicy", "nodeSelector", "serviceAccountName", "serviceAccount", "automountServiceAccountToken",
        "nodeName", "hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "securityContext",
        "imagePullSecrets", "hostname", "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases",
        "priorityClassName", "priority", "dnsConfig", "readinessGates", "runtimeClassName", "enableServiceLinks",
        "preemptionPolicy", "overhead", "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers",
        "schedulingGates", "resourceClaims",
    ),
    f.GoField("resources", schema=_RESOURCE_REQUIREMENTS),
    *_omitempty("hostnameOverride", "schedulingGroup"),
)  # fmt: skip
_OBJECT_META = _omitempty(
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields",
)  # fmt: skip
_TOPOLOGY_REQUEST = (
    *_omitempty(
        "required", "preferred", "unconstrained", "podIndexLabel", "subGroupIndexLabel", "subGroupCount",
        "podSetGroupName", "podSetSliceRequiredTopology", "podSetSliceSize",
    ),
    f.GoField("podsetSliceRequiredTopologyConstraints", schema=_omitempty("topology", "size")),
)  # fmt: skip
_POD_SET = (
    f.GoField("name"),
    f.GoField(
        "template",
        omitempty=False,
        schema=(
            f.GoField("metadata", omitempty=False, schema=_OBJECT_META),
            f.GoField("spec", omitempty=False, schema=_POD_SPEC),
        ),
    ),
    f.GoField("count", omitempty=False, zero=0),
    f.GoField("minCount"),
    f.GoField("topologyRequest", schema=_TOPOLOGY_REQUEST),
)
_ADMISSION = (
    f.GoField("clusterQueue", omitempty=False, zero=""),
    f.GoField(
        "podSetAssignments",
        omitempty=False,
        schema=(
            f.GoField("name", omitempty=False, zero=""),
            *_omitempty("flavors", "resourceUsage", "count", "topologyAssignment", "delayedTopologyRequest"),
        ),
    ),
)
_TOLERATION = _omitempty("key", "operator", "value", "effect", "tolerationSeconds")
_POD_SET_UPDATE = (
    f.GoField("name", omitempty=False, zero=""),
    *_omitempty("labels", "annotations", "nodeSelector"),
    f.GoField("tolerations", schema=_TOLERATION),
)


# --- handlers ------------------------------------------------------------------------------------


def default(obj: dict[str, Any], ctx: Context) -> None:
    """`WorkloadWebhook.Default`: without PartialAdmission no podSet may keep a minCount."""
    if ctx.config.feature_enabled(Feature.PARTIAL_ADMISSION):
        return
    for pod_set in (obj.get("spec") or {}).get("podSets") or []:
        pod_set.pop("minCount", None)


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateWorkload(obj, nil)`."""
    return _validate_workload(obj, None, ctx)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateWorkloadUpdate`: the create checks, then what may not change once quota is reserved."""
    errs = _validate_workload(new, old, ctx)
    if _has_quota_reservation(old):
        errs += _validate_immutable_pod_sets(_pod_sets(new), _pod_sets(old), ctx)
    if _has_quota_reservation(new) and _has_quota_reservation(old):
        errs += _validate_reclaimable_pods_update(new, old, ctx)
    errs += _validate_admission_update(_status(new).get("admission"), _status(old).get("admission"), ctx)
    errs += _validate_immutable_pod_set_updates(new, old)
    errs += _validate_cluster_name_update(new, old, ctx)
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += jobframework.validate_admission_gated_by_update(old, new)
    return errs


# --- accessors -----------------------------------------------------------------------------------


def _spec(wl: Mapping[str, Any]) -> Mapping[str, Any]:
    return wl.get("spec") or {}


def _status(wl: Mapping[str, Any]) -> Mapping[str, Any]:
    return wl.get("status") or {}


def _pod_sets(wl: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(_spec(wl).get("podSets") or [])


def _count(pod_set: Mapping[str, Any]) -> int:
    # The CRD defaults `count` to 1.
    return int(pod_set.get("count", 1))


def _has_quota_reservation(wl: Mapping[str, Any] | None) -> bool:
    return wl is not None and o.has_quota_reservation(wl)


def _reserves_quota_without_admission(wl: Mapping[str, Any] | None) -> bool:
    return wl is not None and _has_quota_reservation(wl) and _status(wl).get("admission") is None


def _is_elastic(wl: Mapping[str, Any], ctx: Context) -> bool:
    """`workloadslicing.Enabled`: the gate is on and the Workload opted in by annotation."""
    return (
        ctx.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)
        and o.annotations(wl).get(c.ELASTIC_JOB) == "true"
    )


# --- ValidateWorkload ----------------------------------------------------------------------------


def _validate_workload(obj: Mapping[str, Any], old: Mapping[str, Any] | None, ctx: Context) -> list[f.FieldError]:
    errs: list[f.FieldError] = []
    variable_count = 0
    for i, pod_set in enumerate(_pod_sets(obj)):
        errs += _validate_pod_set(pod_set, POD_SETS.index(i), ctx)
        if pod_set.get("minCount") is not None:
            variable_count += 1
    if variable_count > 1:
        errs.append(f.invalid(POD_SETS, variable_count, "at most one podSet can use minCount"))
    if variable_count > 0 and _is_elastic(obj, ctx):
        errs.append(f.invalid(POD_SETS, variable_count, "partial admission and elastic job cannot be used together"))
    if _has_quota_reservation(obj):
        errs += _validate_admission(obj, old)
    errs += f.validate_conditions(_status(obj).get("conditions"), STATUS.child("conditions"))
    errs += _validate_reclaimable_pods(obj, old, ctx)
    errs += _validate_admission_checks(obj)
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += jobframework.validate_admission_gated_by_create(obj)
    if ctx.config.feature_enabled(Feature.PRIORITY_BOOST):
        errs += _validate_priority_boost(obj)
    return errs


def _validate_pod_set(pod_set: Mapping[str, Any], path: f.Path, ctx: Context) -> list[f.FieldError]:
    """`validatePodSet`: template metadata, container and pod-level resources, TAS slice size."""
    errs: list[f.FieldError] = []
    template = pod_set.get("template") or {}
    if ctx.config.feature_enabled(Feature.WORKLOAD_VALIDATION_FOR_POD_SET_METADATA):
        metadata = template.get("metadata") or {}
        errs += f.validate_labels(metadata.get("labels"), path.child("template", "metadata", "labels"))
        errs += f.validate_annotations(metadata.get("annotations"), path.child("template", "metadata", "annotations"))
    pod_spec = template.get("spec") or {}
    for kind in ("initContainers", "containers"):
        for j, container in enumerate(pod_spec.get(kind) or []):
            res_path = path.child("template", "spec", kind).index(j).child("resources")
            resources = container.get("resources") or {}
            errs += _validate_resource_list(resources.get("requests"), res_path.child("requests"), ctx)
            errs += _validate_resource_list(resources.get("limits"), res_path.child("limits"), ctx)
    if (pod_resources := pod_spec.get("resources")) is not None:
        res_path = path.child("template", "spec", "resources")
        errs += _validate_resource_list(pod_resources.get("requests"), res_path.child("requests"), ctx)
        errs += _validate_resource_list(pod_resources.get("limits"), res_path.child("limits"), ctx)
    if ctx.config.feature_enabled(Feature.TAS_VALIDATE_WORKLOAD_SLICE_SIZE):
        errs += _validate_tas_slice_size(pod_set.get("topologyRequest"), path.child("topologyRequest"))
    return errs


def _validate_resource_list(resources: Mapping[str, Any] | None, path: f.Path, ctx: Context) -> list[f.FieldError]:
    """The reserved `pods` key, and (gate WorkloadValidateResourcesAreNonNegative) negative amounts."""
    errs: list[f.FieldError] = []
    non_negative = ctx.config.feature_enabled(Feature.WORKLOAD_VALIDATE_RESOURCES_ARE_NON_NEGATIVE)
    for name in sorted(resources or {}):
        value = (resources or {})[name]
        if name == RESERVED_RESOURCE:
            errs.append(f.invalid(path.key(name), RESERVED_RESOURCE, "the key is reserved for internal kueue use"))
        if non_negative and parse(value) < 0:
            errs.append(f.invalid(path.key(name), f.quantity_string(value), IS_NEGATIVE_MSG))
    return errs


def _validate_tas_slice_size(request: Mapping[str, Any] | None, path: f.Path) -> list[f.FieldError]:
    """`validateTASSliceSize`: slice topology and slice size come together, sizes are positive."""
    if request is None:
        return []
    errs: list[f.FieldError] = []
    size = request.get("podSetSliceSize")
    if request.get("podSetSliceRequiredTopology") is not None:
        if size is None:
            errs.append(
                f.required(path.child("podSetSliceSize"), "must be set when podSetSliceRequiredTopology is specified")
            )
        elif size <= 0:
            errs.append(f.invalid(path.child("podSetSliceSize"), size, "must be greater than 0"))
    elif size is not None:
        errs.append(
            f.forbidden(
                path.child("podSetSliceSize"),
                "may not be set when podSetSliceRequiredTopology is not specified",
            )
        )
    for i, constraint in enumerate(request.get("podsetSliceRequiredTopologyConstraints") or []):
        if (constraint_size := constraint.get("size", 0)) <= 0:
            errs.append(
                f.invalid(
                    path.child("podsetSliceRequiredTopologyConstraints").index(i).child("size"),
                    constraint_size,
                    "must be greater than 0",
                )
            )
    return errs


def _validate_admission(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[f.FieldError]:
    """`validateAdmission`, reached because QuotaReserved is True."""
    admission = _status(obj).get("admission")
    if admission is None:
        # A Workload already in this state may still be updated, so it can converge or be deleted.
        if _reserves_quota_without_admission(old):
            return []
        return [f.required(ADMISSION, "must be set while the QuotaReserved condition is true")]
    errs: list[f.FieldError] = []
    names = {ps.get("name", "") for ps in _pod_sets(obj)}
    for i, assignment in enumerate(admission.get("podSetAssignments") or []):
        assignment_path = ADMISSION.child("podSetAssignments").index(i)
        name = assignment.get("name", "")
        if name not in names:
            errs.append(f.not_found(assignment_path.child("name"), name))
        count = assignment.get("count") or 0
        if count > 0:
            usage = assignment.get("resourceUsage") or {}
            for resource in sorted(usage):
                if amount(resource, usage[resource]) % count != 0:
                    errs.append(
                        f.invalid(
                            assignment_path.child("resourceUsage").key(resource),
                            f.quantity_string(usage[resource]),
                            f"is not a multiple of {count}",
                        )
                    )
    return errs


def _validate_reclaimable_pods(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, ctx: Context
) -> list[f.FieldError]:
    """`validateReclaimablePods`: known podSet names, counts within the podSet (stale elastic counts kept)."""
    reclaimable = _status(obj).get("reclaimablePods") or []
    if not reclaimable:
        return []
    pod_sets = {ps.get("name", ""): ps for ps in _pod_sets(obj)}
    names = [ps.get("name", "") for ps in _pod_sets(obj)]
    old_entries = (
        {(rp.get("name", ""), rp.get("count", 0)) for rp in _status(old).get("reclaimablePods") or []} if old else set()
    )
    elastic = old is not None and _is_elastic(obj, ctx)
    errs: list[f.FieldError] = []
    for rp in reclaimable:
        name, count = rp.get("name", ""), rp.get("count", 0)
        rp_path = RECLAIMABLE_PODS.key(name)
        if name not in pod_sets:
            errs.append(f.not_supported(rp_path.child("name"), name, names))
        elif count > _count(pod_sets[name]) and not (elastic and (name, count) in old_entries):
            errs.append(
                f.invalid(rp_path.child("count"), count, f"should be less or equal to {_count(pod_sets[name])}")
            )
    return errs


def _validate_admission_checks(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateAdmissionChecks`: each check's podSetUpdates name known podSets and use valid syntax."""
    known = sorted({ps.get("name", "") for ps in _pod_sets(obj)})
    errs: list[f.FieldError] = []
    for i, check in enumerate(_status(obj).get("admissionChecks") or []):
        for j, update in enumerate(check.get("podSetUpdates") or []):
            update_path = ADMISSION_CHECKS.index(i).child("podSetUpdates").index(j)
            name = update.get("name", "")
            if name not in known:
                errs.append(f.not_supported(update_path.child("name"), name, known))
            errs += validate_tolerations(update.get("tolerations") or [], update_path.child("tolerations"))
            errs += f.validate_annotations(update.get("annotations"), update_path.child("annotations"))
            errs += f.validate_labels(update.get("nodeSelector"), update_path.child("nodeSelector"))
            errs += f.validate_labels(update.get("labels"), update_path.child("labels"))
    return errs


def _validate_priority_boost(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """KEP-7990: a present `priority-boost` annotation must be a signed 32-bit integer."""
    annotations = o.annotations(obj)
    if PRIORITY_BOOST_ANNOTATION not in annotations:
        return []
    value = annotations[PRIORITY_BOOST_ANNOTATION]
    if value == "":
        return [
            f.invalid(
                PRIORITY_BOOST_PATH,
                value,
                'must be a valid signed integer; use "0" explicitly, empty string is not allowed',
            )
        ]
    if not _SIGNED_INT.match(value) or not -(2**31) <= int(value) < 2**31:
        return [f.invalid(PRIORITY_BOOST_PATH, value, "must be a valid signed integer")]
    return []


# --- ValidateWorkloadUpdate ----------------------------------------------------------------------


def _validate_immutable_pod_sets(
    new: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]], ctx: Context
) -> list[f.FieldError]:
    """`validateImmutablePodSets`; with ElasticJobsViaWorkloadSlices a count may shrink.

    Upstream names each podSet `spec.podSets.<i>` (a child, not an index); we keep that path.
    """
    if len(new) != len(old):
        return [f.immutable(POD_SETS, f.go_json(_canonical(list(new)), _POD_SET))]
    errs: list[f.FieldError] = []
    may_shrink = ctx.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)
    for i, (new_ps, old_ps) in enumerate(zip(new, old, strict=True)):
        candidate = dict(new_ps)
        if may_shrink and _count(new_ps) < _count(old_ps):
            candidate["count"] = _count(old_ps)
        if not _semantic_equal(candidate, old_ps):
            errs.append(f.immutable(POD_SETS.child(str(i)), f.go_json(_canonical(candidate), _POD_SET)))
    return errs


def _validate_reclaimable_pods_update(
    new: Mapping[str, Any], old: Mapping[str, Any], ctx: Context
) -> list[f.FieldError]:
    """`validateReclaimablePodsUpdate`: counts only grow and entries stay, unless the podSet scaled down."""
    new_pods = list(_status(new).get("reclaimablePods") or [])
    old_pods = list(_status(old).get("reclaimablePods") or [])
    new_counts = {rp.get("name", ""): rp.get("count", 0) for rp in new_pods}
    old_counts = {rp.get("name", ""): rp.get("count", 0) for rp in old_pods}
    if new_counts == old_counts or not old_pods:
        return []
    scaled_down = _scaled_down_pod_sets(new, ctx)
    new_reserves = _has_quota_reservation(new)
    errs: list[f.FieldError] = []
    for rp in new_pods:
        name, count = rp.get("name", ""), rp.get("count", 0)
        if not new_reserves and count == 0:
            continue
        if name in old_counts and count < old_counts[name] and name not in scaled_down:
            errs.append(
                f.invalid(
                    RECLAIMABLE_PODS.key(name).child("count"),
                    count,
                    f"cannot be less than {old_counts[name]}",
                )
            )
    # Go walks a map here; we follow the old list's order.
    for name in old_counts:
        if new_reserves and name not in new_counts and name not in scaled_down:
            errs.append(f.required(RECLAIMABLE_PODS.key(name), "cannot be removed"))
    return errs


def _scaled_down_pod_sets(wl: Mapping[str, Any], ctx: Context) -> set[str]:
    """Elastic podSets whose current count is below the count granted at admission."""
    admission = _status(wl).get("admission")
    if not _is_elastic(wl, ctx) or admission is None:
        return set()
    sizes = {ps.get("name", ""): _count(ps) for ps in _pod_sets(wl)}
    return {
        a.get("name", "")
        for a in admission.get("podSetAssignments") or []
        if a.get("count") is not None and a["count"] > sizes.get(a.get("name", ""), 0)
    }


def _validate_admission_update(
    new: Mapping[str, Any] | None, old: Mapping[str, Any] | None, ctx: Context
) -> list[f.FieldError]:
    """`validateAdmissionUpdate`: admission may be set or cleared, not changed (TAS fields excepted)."""
    if new is None or old is None:
        return []
    reference: Mapping[str, Any] = old
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        new_assignments = list(new.get("podSetAssignments") or [])
        old_assignments = list(old.get("podSetAssignments") or [])
        if len(new_assignments) == len(old_assignments):
            patched = []
            for new_a, old_a in zip(new_assignments, old_assignments, strict=True):
                merged = dict(old_a)
                for key in ("topologyAssignment", "delayedTopologyRequest"):
                    if key in new_a:
                        merged[key] = new_a[key]
                    else:
                        merged.pop(key, None)
                patched.append(merged)
            reference = {**old, "podSetAssignments": patched}
    if _semantic_equal(new, reference):
        return []
    return [f.immutable(ADMISSION, f.go_json(_canonical(new), _ADMISSION))]


def _validate_immutable_pod_set_updates(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateImmutablePodSetUpdates`: a check Ready before and after keeps its podSetUpdates."""
    new_checks = {check.get("name", ""): check for check in _status(new).get("admissionChecks") or []}
    errs: list[f.FieldError] = []
    for i, old_check in enumerate(_status(old).get("admissionChecks") or []):
        new_check = new_checks.get(old_check.get("name", ""))
        if new_check is None or old_check.get("state") != "Ready" or new_check.get("state") != "Ready":
            continue
        new_updates = new_check.get("podSetUpdates")
        if not _semantic_equal(new_updates, old_check.get("podSetUpdates")):
            errs.append(
                f.immutable(ADMISSION_CHECKS.index(i).child("podSetUpdates"), f.go_json(new_updates, _POD_SET_UPDATE))
            )
    return errs


def _validate_cluster_name_update(new: Mapping[str, Any], old: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateClusterNameUpdate`: a newly set clusterName is one of the old nominatedClusterNames."""
    if ctx.config.feature_enabled(
        Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES
    ) and WORKLOAD_SLICE_REPLACEMENT_FOR in o.annotations(new):
        return []
    cluster_name = _status(new).get("clusterName")
    newly_set = _status(old).get("clusterName") is None and cluster_name is not None
    if newly_set and cluster_name not in (_status(old).get("nominatedClusterNames") or []):
        return [
            f.invalid(
                STATUS.child("clusterName"),
                cluster_name,
                "when setting clusterName it must be one of the nominatedClusterNames",
            )
        ]
    return []


# --- values --------------------------------------------------------------------------------------


def _map_quantities(value: Any, convert: Callable[[Any], Any], key: str = "") -> Any:
    """Apply `convert` to every amount in a resource list (requests, limits, overhead, resourceUsage)."""
    if isinstance(value, Mapping):
        if key in _RESOURCE_LISTS:
            return {k: convert(v) for k, v in value.items()}
        return {k: _map_quantities(v, convert, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_quantities(v, convert) for v in value]
    return value


def _canonical(value: Any) -> Any:
    """Quantities as Go marshals them (canonical text), for printing."""
    return _map_quantities(copy.deepcopy(value), f.quantity_string)


def _semantic_equal(a: Any, b: Any) -> bool:
    """`equality.Semantic.DeepEqual`: quantities compare by amount, and nulls, empty strings and
    empty collections equal absent fields."""
    return bool(f.go_semantic(_map_quantities(a, parse)) == f.go_semantic(_map_quantities(b, parse)))
