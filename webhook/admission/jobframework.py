"""What the job webhooks (Job, Pod, Deployment, StatefulSet) share: integration kinds, ancestor
resolution, common checks.

Mirrors `pkg/controller/jobframework/{validation.go,integrationmanager.go,reconciler.go,utils.go}`
and `pkg/util/webhook/validation_admissiongatedby.go`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from webhook.admission.context import Context, LookupError_
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import integrations, jobs, selector
from webhook.api import objects as o
from webhook.api.pod_role import spec_shape
from webhook.config import Feature

__all__ = [
    "ELASTIC_GVKS",
    "INTERIM_OWNERS",
    "PREBUILT_WORKLOAD_GVKS",
    "FrameworkError",
    "apply_default_for_managed_by",
    "default_local_queue",
    "default_priority_class",
    "find_managed_ancestor",
    "is_elastic",
    "known_owners",
    "namespace_is_managed",
    "pod_template_meta",
    "should_suspend",
    "should_validate_ray_or_spark_update",
    "suspend_pod_template",
    "validate_admission_gated_by_create",
    "validate_admission_gated_by_update",
    "validate_elastic",
    "validate_immutable_pod_spec_shape",
    "validate_job_create",
    "validate_job_update",
    "validate_priority_class_update",
    "validate_queue_name",
    "validate_serving_create",
    "validate_serving_update",
]

LABELS = f.Path("metadata.labels")
ANNOTATIONS = f.Path("metadata.annotations")
QUEUE_PATH = LABELS.key(c.QUEUE_LABEL)
MAX_EXEC_PATH = LABELS.key(c.MAX_EXEC_TIME_LABEL)
PRIORITY_PATH = LABELS.key(c.PRIORITY_CLASS_LABEL)
ELASTIC_PATH = ANNOTATIONS.key(c.ELASTIC_JOB)
GATED_BY_PATH = ANNOTATIONS.key(c.ADMISSION_GATED_BY)
IMMUTABLE = "field is immutable"
PREBUILT_WORKLOAD_GVKS = frozenset(
    {
        "batch/v1, Kind=Job",
        "jobset.x-k8s.io/v1alpha2, Kind=JobSet",
        "kubeflow.org/v1, Kind=TFJob",
        "kubeflow.org/v1, Kind=PaddleJob",
        "kubeflow.org/v1, Kind=PyTorchJob",
        "kubeflow.org/v1, Kind=XGBoostJob",
        "trainer.kubeflow.org/v1alpha1, Kind=TrainJob",
        "kubeflow.org/v2beta1, Kind=MPIJob",
        "ray.io/v1, Kind=RayJob",
        "/v1, Kind=Pod",
        "ray.io/v1, Kind=RayCluster",
        "ray.io/v1, Kind=RayService",
        "workload.codeflare.dev/v1beta2, Kind=AppWrapper",
    }
)
"""`supportedPrebuiltWlJobGVKs`: the kinds a prebuilt Workload may be named for (not a JAXJob)."""
ELASTIC_GVKS = frozenset(
    {"batch/v1, Kind=Job", "ray.io/v1, Kind=RayCluster", "ray.io/v1, Kind=RayJob", "ray.io/v1, Kind=RayService"}
)
"""`supportedElasticJobGVKs`: the kinds that may carry the elastic-job annotation."""

# Owners the ancestor walk follows besides the frameworks' kinds: a Deployment's pods are owned by
# its ReplicaSet.
INTERIM_OWNERS = frozenset({("apps", "ReplicaSet")})


class FrameworkError(Exception):
    """A lookup the webhook needed failed; the request is denied with this message."""


def queue_name(obj: Mapping[str, Any]) -> str:
    return o.labels(obj).get(c.QUEUE_LABEL, "")


def _enabled_kinds(ctx: Context) -> frozenset[tuple[str, str]]:
    integ = ctx.config.integrations
    return _kinds_of(integ.frameworks, integ.external_frameworks, integrations.generation())


def known_owners() -> frozenset[tuple[str, str]]:
    """(group, kind) of every registered framework, and the interim owners: an owner of one of these
    is "known" (the ancestor walk GETs it) even when its integration is disabled."""
    return _known_owners(integrations.generation())


@functools.lru_cache(maxsize=2)
def _known_owners(_generation: int) -> frozenset[tuple[str, str]]:
    return frozenset((f.group, f.kind) for f in integrations.all_frameworks()) | INTERIM_OWNERS


@functools.lru_cache(maxsize=8)
def _kinds_of(frameworks: tuple[str, ...], external: tuple[str, ...], _generation: int) -> frozenset[tuple[str, str]]:
    """(group, kind) of the enabled frameworks; cached because the Configuration never changes."""
    kinds = {(f.group, f.kind) for f in integrations.enabled(frameworks)}
    for ext in external:
        # External frameworks are written Kind.version.group.
        kind, _, rest = ext.partition(".")
        kinds.add((rest.partition(".")[2], kind))
    return frozenset(kinds)


def owner_is_managed_kind(obj: Mapping[str, Any], ctx: Context) -> bool:
    """The controller owner is of a kind Kueue manages, so it (not this object) owns admission."""
    owner = o.controller_of(obj)
    return owner is not None and jobs.group_kind(owner.get("apiVersion", ""), owner.get("kind", "")) in _enabled_kinds(
        ctx
    )


def namespace_is_managed(ctx: Context, namespace: str) -> bool:
    """`managedJobsNamespaceSelector` matches the namespace (a nil selector matches every namespace)."""
    try:
        labels = ctx.lookups.namespace_labels(namespace)
    except LookupError_ as exc:
        raise FrameworkError(f"failed to get namespace: {exc}") from None
    # The Configuration validated its selector when it was loaded.
    return selector.matches(ctx.config.managed_jobs_namespace_selector, labels, nil_matches=True, validated=True)


def find_managed_ancestor(obj: Mapping[str, Any], ctx: Context, namespace: str) -> Mapping[str, Any] | None:
    """The top-most ancestor Kueue manages, following controller owners (`FindAncestorJobManagedByKueue`)."""
    if o.controller_of(obj) is None:  # the common case: nothing to walk
        return None
    enabled = _enabled_kinds(ctx)
    known = known_owners() | enabled

    def get_owner(owner: o.OwnerReference) -> Mapping[str, Any] | None:
        try:
            return ctx.lookups.get_owner(
                namespace, owner.get("apiVersion", ""), owner.get("kind", ""), owner.get("name", "")
            )
        except LookupError_ as exc:
            raise FrameworkError(f"workload owner not found\n{exc}") from None

    def is_managed(owner: o.OwnerReference, parent: Mapping[str, Any]) -> bool:
        gk = jobs.group_kind(owner.get("apiVersion", ""), owner.get("kind", ""))
        return gk in enabled and (ctx.config.manage_jobs_without_queue_name or bool(queue_name(parent)))

    try:
        return jobs.find_managed_ancestor(
            obj,
            follows=lambda owner: jobs.group_kind(owner.get("apiVersion", ""), owner.get("kind", "")) in known,
            get_owner=get_owner,
            is_managed=is_managed,
        )
    except jobs.AncestorError as exc:
        raise FrameworkError(str(exc)) from None


def _set_label(obj: dict[str, Any], key: str, value: str) -> None:
    meta = obj.setdefault("metadata", {})
    if meta.get("labels") is None:
        meta["labels"] = {}
    meta["labels"][key] = value


def default_local_queue(obj: dict[str, Any], ctx: Context, namespace: str, *, check_owner: bool = True) -> None:
    """Label the object for LocalQueue `default` when one exists in its namespace (`ApplyDefaultLocalQueue`)."""
    if queue_name(obj) or (check_owner and owner_is_managed_kind(obj, ctx)):
        return
    if not ctx.lookups.local_queue_exists(namespace, c.DEFAULT_LOCAL_QUEUE):
        return
    if check_owner and not namespace_is_managed(ctx, namespace):
        return
    _set_label(obj, c.QUEUE_LABEL, c.DEFAULT_LOCAL_QUEUE)


def default_priority_class(obj: dict[str, Any], ctx: Context) -> None:
    """Label the object for WorkloadPriorityClass `default` when one exists (gate WorkloadPriorityClassDefaulting)."""
    if not ctx.config.feature_enabled(Feature.WORKLOAD_PRIORITY_CLASS_DEFAULTING):
        return
    if o.labels(obj).get(c.PRIORITY_CLASS_LABEL) or owner_is_managed_kind(obj, ctx):
        return
    if ctx.lookups.workload_priority_class_exists(c.DEFAULT_PRIORITY_CLASS):
        _set_label(obj, c.PRIORITY_CLASS_LABEL, c.DEFAULT_PRIORITY_CLASS)


def apply_default_for_managed_by(
    obj: dict[str, Any],
    ctx: Context,
    namespace: str,
    *,
    defaultable: tuple[str | None, ...],
    at: tuple[str, ...] = ("spec",),
) -> None:
    """`ApplyDefaultForManagedBy`: hand the job to MultiKueue (`managedBy` in the object at `at`,
    `spec.runPolicy` for Kubeflow's jobs) when gate MultiKueue is on, its `managedBy` is one the kind
    may default (`CanDefaultManagedBy`: unset or the kind's own controller) and its LocalQueue's
    ClusterQueue has a MultiKueue admission check."""
    if not ctx.config.feature_enabled(Feature.MULTI_KUEUE):
        return
    current: Mapping[str, Any] = obj
    for key in at:
        current = current.get(key) or {}
    if current.get("managedBy") not in defaultable:
        return
    local_queue = o.labels(obj).get(c.QUEUE_LABEL)
    if local_queue is None:
        return
    cluster_queue = ctx.lookups.local_queue_cluster_queue(namespace, local_queue)
    cq = ctx.lookups.cluster_queue(cluster_queue) if cluster_queue else None
    if cq is None:
        return
    if any(ctx.lookups.admission_check_controller(ac) == c.MULTIKUEUE_CONTROLLER for ac in cq.admission_checks):
        holder = obj
        for key in at:
            if holder.get(key) is None:
                holder[key] = {}
            holder = holder[key]
        holder["managedBy"] = c.MULTIKUEUE_CONTROLLER


def should_suspend(obj: Mapping[str, Any], ctx: Context, namespace: str) -> bool:
    """`WorkloadShouldBeSuspended`: a queue name suspends regardless of the namespace selector."""
    if obj.get("metadata", {}).get("deletionTimestamp") and ctx.config.feature_enabled(
        Feature.SKIP_ANCESTOR_CHECK_FOR_DELETED_WORKLOADS
    ):
        return False
    if find_managed_ancestor(obj, ctx, namespace) is not None:
        return False
    if queue_name(obj):
        return True
    return ctx.config.manage_jobs_without_queue_name and namespace_is_managed(ctx, namespace)


def pod_template_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """`spec.template.metadata`, created when absent, for the integrations that own pods."""
    template = obj.setdefault("spec", {}).setdefault("template", {})
    if template.get("metadata") is None:
        template["metadata"] = {}
    meta: dict[str, Any] = template["metadata"]
    return meta


def suspend_pod_template(obj: dict[str, Any], ctx: Context, framework: str) -> bool:
    """What the Deployment and StatefulSet webhooks' `Default` share: default the LocalQueue and
    priority class, and mark the template's pods as suspended by `framework` when Kueue manages the object
    (`WorkloadShouldBeSuspended` with the deleting-object tolerance). True when it did."""
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    default_local_queue(obj, ctx, namespace)
    default_priority_class(obj, ctx)
    if not should_suspend(obj, ctx, namespace):
        return False
    meta = pod_template_meta(obj)
    if meta.get("annotations") is None:
        meta["annotations"] = {}
    meta["annotations"][c.POD_SUSPENDING_PARENT] = framework
    return True


# --- validation -------------------------------------------------------------------------------


def _validate_crd_name(value: str, path: str) -> list[f.FieldError]:
    errs = f.is_dns1123_subdomain(value)
    return [f.invalid(path, value, ",".join(errs))] if errs else []


def prebuilt_workload_name(obj: Mapping[str, Any], ctx: Context) -> tuple[str, str]:
    """(name, field path) of the prebuilt Workload: the name the worker will look up
    (`PrebuiltWorkloadNameFor`) and where a field error about it points (`GetPrebuiltWorkloadPath`)."""
    gate = ctx.config.feature_enabled(Feature.WORKLOAD_IDENTIFIER_ANNOTATIONS)
    in_annotation = jobs.prebuilt_workload_in_annotation(obj, identifier_annotations=gate)
    path = (ANNOTATIONS if in_annotation else LABELS).key(c.PREBUILT_WORKLOAD_LABEL)
    return jobs.prebuilt_workload_name(obj, identifier_annotations=gate), path


def _validate_prebuilt(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidatePrebuiltWorkloadName`: the annotation or the label, whichever the path names."""
    _, path = prebuilt_workload_name(obj, ctx)
    if path.startswith("metadata.annotations"):
        return _validate_crd_name(o.annotations(obj)[c.PREBUILT_WORKLOAD_LABEL], path)
    if c.PREBUILT_WORKLOAD_LABEL in o.labels(obj):
        return _validate_crd_name(o.labels(obj)[c.PREBUILT_WORKLOAD_LABEL], path)
    return []


def _validate_create_prebuilt(obj: Mapping[str, Any], ctx: Context, *, gvk: str) -> list[f.FieldError]:
    """`validateCreateForPrebuiltWorkload`: a valid name, for a kind that supports one."""
    errs = _validate_prebuilt(obj, ctx)
    name, path = prebuilt_workload_name(obj, ctx)
    if name and gvk not in PREBUILT_WORKLOAD_GVKS:
        errs.append(f.forbidden(path, f'Is not supported for "{gvk}"'))
    return errs


def is_elastic(obj: Mapping[str, Any], ctx: Context) -> bool:
    """`workloadslicing.Enabled`: the ElasticJobsViaWorkloadSlices gate is on and the job carries
    `kueue.x-k8s.io/elastic-job: "true"`."""
    return (
        ctx.config.feature_enabled(Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES)
        and o.annotations(obj).get(c.ELASTIC_JOB) == "true"
    )


def validate_queue_name(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`ValidateQueueName`: the queue-name label, when set, is a valid object name."""
    if c.QUEUE_LABEL in o.labels(obj):
        return _validate_crd_name(o.labels(obj)[c.QUEUE_LABEL], QUEUE_PATH)
    return []


def validate_elastic(obj: Mapping[str, Any], ctx: Context, *, gvk: str) -> list[f.FieldError]:
    """`ValidateElasticJobAnnotation`: only batch/v1 Jobs and KubeRay's kinds may be elastic."""
    if is_elastic(obj, ctx) and gvk not in ELASTIC_GVKS:
        return [f.forbidden(ELASTIC_PATH, f'elastic job is not supported for "{gvk}"')]
    return []


def validate_priority_class_update(
    old: Mapping[str, Any], new: Mapping[str, Any], *, suspended: bool
) -> list[f.FieldError]:
    """`ValidateUpdateForWorkloadPriorityClassName`: added only while suspended, never removed."""
    old_p = o.labels(old).get(c.PRIORITY_CLASS_LABEL, "")
    new_p = o.labels(new).get(c.PRIORITY_CLASS_LABEL, "")
    if not suspended and not old_p and new_p:
        return [f.invalid(PRIORITY_PATH, new_p, "WorkloadPriorityClass cannot be added to a non-suspended workload")]
    if not new_p and old_p:
        return [f.invalid(PRIORITY_PATH, new_p, "WorkloadPriorityClass cannot be removed from a workload")]
    return []


def _shape_errors(new: Any, old: Any, path: f.Path) -> list[f.FieldError]:
    if isinstance(new, dict) and isinstance(old, dict):
        return [
            e for key in sorted(set(new) | set(old)) for e in _shape_errors(new.get(key), old.get(key), path.child(key))
        ]
    if (
        isinstance(new, list)
        and isinstance(old, list)
        and len(new) == len(old)
        and all(isinstance(x, dict) for x in new)
    ):
        return [e for i, (n, o_) in enumerate(zip(new, old, strict=True)) for e in _shape_errors(n, o_, path.index(i))]
    return [] if new == old else [f.immutable(path, new)]


def validate_immutable_pod_spec_shape(
    new_spec: Mapping[str, Any], old_spec: Mapping[str, Any], path: f.Path
) -> list[f.FieldError]:
    """`ValidateImmutablePodGroupPodSpec`: what makes pods of a group interchangeable (the role hash's
    shape: requests, ports, node selector, affinity, tolerations, ...) may not change; the image may."""
    top_new, top_old = spec_shape(new_spec), spec_shape(old_spec)
    return [
        e
        for key in sorted(set(top_new) | set(top_old))
        for e in _shape_errors(top_new.get(key), top_old.get(key), path.child(key))
    ]


def validate_job_create(obj: Mapping[str, Any], ctx: Context, *, gvk: str) -> list[f.FieldError]:
    """`ValidateJobOnCreate`: queue name, prebuilt workload, max execution time, elastic, admission-gated-by."""
    errs: list[f.FieldError] = validate_queue_name(obj)
    errs += _validate_create_prebuilt(obj, ctx, gvk=gvk)
    if c.MAX_EXEC_TIME_LABEL in o.labels(obj):
        text = o.labels(obj)[c.MAX_EXEC_TIME_LABEL]
        try:
            seconds = f.go_atoi(text)
        except ValueError as exc:
            errs.append(f.invalid(MAX_EXEC_PATH, text, str(exc)))
        else:
            if seconds <= 0:
                errs.append(f.invalid(MAX_EXEC_PATH, seconds, "should be greater than 0"))
    errs += validate_elastic(obj, ctx, gvk=gvk)
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += validate_admission_gated_by_create(obj)
    return errs


def validate_job_update(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    ctx: Context,
    *,
    old_suspended: bool,
    new_suspended: bool,
    gvk: str,
) -> list[f.FieldError]:
    """`ValidateJobOnUpdate`: what may not change once a job runs (`gvk`: the job's kind, as
    `validate_job_create` takes it)."""
    errs: list[f.FieldError] = []
    old_q, new_q = queue_name(old), queue_name(new)
    if not new_suspended and old_q != new_q:
        errs.append(f.invalid(QUEUE_PATH, new_q, IMMUTABLE))
    namespace = old.get("metadata", {}).get("namespace", "") or ctx.namespace
    if not new_q and old_q and ctx.lookups.local_queue_exists(namespace, c.DEFAULT_LOCAL_QUEUE):
        errs.append(f.invalid(QUEUE_PATH, "", "queue-name must not be empty in namespace with default queue"))
    if new_suspended or is_elastic(old, ctx):
        errs += _validate_create_prebuilt(new, ctx, gvk=gvk)
    else:
        old_name, _ = prebuilt_workload_name(old, ctx)
        new_name, path = prebuilt_workload_name(new, ctx)
        if old_name != new_name:
            errs.append(f.invalid(path, new_name, IMMUTABLE))
    if not new_suspended or not old_suspended:
        old_max = o.labels(old).get(c.MAX_EXEC_TIME_LABEL, "")
        new_max = o.labels(new).get(c.MAX_EXEC_TIME_LABEL, "")
        if old_max != new_max:
            errs.append(f.invalid(MAX_EXEC_PATH, new_max, IMMUTABLE))
    errs += validate_priority_class_update(old, new, suspended=new_suspended)
    if is_elastic(old, ctx) != is_elastic(new, ctx):
        errs.append(f.invalid(ELASTIC_PATH, is_elastic(new, ctx), IMMUTABLE))
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += validate_admission_gated_by_update(old, new)
    return errs


def should_validate_ray_or_spark_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> bool:
    """`ShouldValidateRayOrSparkJobOnUpdate`: Kueue manages the new object (a queue name, or
    `manageJobsWithoutQueueName`), or with ValidateRayAndSparkJobUpdates the old one had a queue name
    (so its removal is validated too)."""
    if ctx.config.manage_jobs_without_queue_name or queue_name(new):
        return True
    return ctx.config.feature_enabled(Feature.VALIDATE_RAY_AND_SPARK_JOB_UPDATES) and bool(queue_name(old))


def validate_serving_create(obj: Mapping[str, Any], ctx: Context, *, gvk: str) -> list[f.FieldError]:
    """The Deployment and StatefulSet webhooks' `ValidateCreate`, the same for both: queue name,
    elastic, admission-gated-by."""
    errs = validate_queue_name(obj) + validate_elastic(obj, ctx, gvk=gvk)
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += validate_admission_gated_by_create(obj)
    return errs


def validate_serving_update(
    old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context, *, gvk: str
) -> list[f.FieldError]:
    """The Deployment and StatefulSet webhooks' `ValidateUpdate`, the same for both: the queue name
    may change only while no replica is ready, and never to empty."""
    errs = validate_queue_name(new) + validate_elastic(new, ctx, gvk=gvk)
    suspended = not (old.get("status") or {}).get("readyReplicas")
    old_q, new_q = queue_name(old), queue_name(new)
    if (not suspended or not new_q) and old_q != new_q:
        errs.append(f.immutable(QUEUE_PATH, new_q))
    errs += validate_priority_class_update(old, new, suspended=suspended)
    if ctx.config.feature_enabled(Feature.ADMISSION_GATED_BY):
        errs += validate_admission_gated_by_update(old, new)
    return errs


# --- kueue.x-k8s.io/admission-gated-by ---------------------------------------------------------

_HTTP_PATH = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(f"^{_HTTP_PATH}$")
MAX_GATE_NAME_LENGTH = 63


def _csv(value: str) -> list[str]:
    if not value.strip():
        return []
    return [part.strip() for part in value.split(",")]


def _domain_prefixed_path(path: str, value: str) -> list[f.FieldError]:
    """k8s `IsDomainPrefixedPath`, the rule Jobs apply to `spec.managedBy`."""
    if not value:
        return [f.required(path)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [f.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [f.invalid(path, host, msg) for msg in f.is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.match(rest):
        errs.append(f.invalid(path, rest, f"Invalid path (regex used for validation is '{_HTTP_PATH}')"))
    return errs


def _gated_by_format(value: str) -> list[f.FieldError]:
    errs: list[f.FieldError] = []
    seen: set[str] = set()
    for gate in _csv(value):
        if not gate:
            errs.append(f.invalid(GATED_BY_PATH, value, "cannot contain empty gate names"))
            continue
        if gate in seen:
            errs.append(f.invalid(GATED_BY_PATH, value, f"duplicate gate name: {gate}"))
            continue
        seen.add(gate)
        errs += _domain_prefixed_path(GATED_BY_PATH, gate)
        if len(gate) > MAX_GATE_NAME_LENGTH:
            errs.append(f.too_long(GATED_BY_PATH, MAX_GATE_NAME_LENGTH))
    return errs


def validate_admission_gated_by_create(obj: Mapping[str, Any]) -> list[f.FieldError]:
    return _gated_by_format(o.annotations(obj).get(c.ADMISSION_GATED_BY, ""))


def validate_admission_gated_by_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[f.FieldError]:
    """Gates may only be removed after creation, never added."""
    old_v = o.annotations(old).get(c.ADMISSION_GATED_BY, "")
    new_v = o.annotations(new).get(c.ADMISSION_GATED_BY, "")
    errs: list[f.FieldError] = []
    if not old_v and new_v:
        errs.append(f.forbidden(GATED_BY_PATH, "cannot add admission gate after creation"))
    if old_v and new_v:
        old_gates = _csv(old_v)
        if any(g not in old_gates for g in _csv(new_v)):
            errs.append(f.forbidden(GATED_BY_PATH, "can only remove gates, not add new ones"))
    return errs + _gated_by_format(new_v)
