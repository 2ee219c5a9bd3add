"""KubeRay's webhooks (RayCluster, RayJob, RayService): suspend queued objects, gate an elastic
one's pods, refuse what Kueue cannot account for.

Mirrors `pkg/controller/jobs/raycluster/raycluster_webhook.go`, `rayjob/rayjob_webhook.go`,
`rayservice/rayservice_webhook.go` and `ValidateCreate`/`ValidateTopologyRequest` of
`raycluster/common.go` (upstream v0.19.2), at each row's paths (/mutate-ray-io-v1-raycluster on
CREATE, /validate-ray-io-v1-raycluster, ...); the object's `kind` says which. A Kueue-managed
object (a queue name, or `manageJobsWithoutQueueName`) may not autoscale in-tree unless it is an
elastic job (RayCluster: whose pod templates carry the elastic gate; an elastic RayJob or
RayService is refused here, pykueue not following its autoscaler as upstream does), may not have more podSets
than a Workload holds, nor a worker group named `head`; a managed RayJob must bring its own
cluster (`rayClusterSpec`, not a `clusterSelector`) and shut it down when done. On update, an
object Kueue does not manage is not validated (`ShouldValidateRayOrSparkJobOnUpdate`).
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
from webhook.api import ray
from webhook.config import Feature

__all__ = ["default", "validate_create", "validate_update", "warnings_create"]

_KUBERAY_CONTROLLER = "ray.io/kuberay-operator"  # rayutils.KubeRayController
DEFAULTABLE_MANAGED_BY = (None, _KUBERAY_CONTROLLER)
"""`CanDefaultManagedBy`: unset, or KubeRay's own controller."""
_SPEC = f.Path("spec")
_ELASTIC_GATE = {"name": c.ELASTIC_JOB_GATE}


def _gate(template: dict[str, Any]) -> None:
    """`utilpod.GateTemplate`: the elastic gate on the template, once."""
    spec = template.setdefault("spec", {})
    gates = spec.get("schedulingGates") or []
    if _ELASTIC_GATE not in gates:
        spec["schedulingGates"] = [*gates, dict(_ELASTIC_GATE)]


def _cluster_spec_for_write(obj: dict[str, Any], kind: ray.Kind) -> dict[str, Any]:
    node = obj
    for key in kind.cluster_spec_path:
        if node.get(key) is None:
            node[key] = {}
        node = node[key]
    return node


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Default the LocalQueue and WorkloadPriorityClass, suspend a managed object
    (`ApplyDefaultForSuspend`), hand it to MultiKueue where its queue says so, and gate an elastic
    RayCluster's or RayService's pod templates (head and every worker group)."""
    kind = ray.kind_of(obj)
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    jf.default_local_queue(obj, ctx, namespace)
    jf.default_priority_class(obj, ctx)
    if jf.should_suspend(obj, ctx, namespace) and not ray.is_suspended(obj, kind):
        if kind is ray.RAYJOB:
            obj.setdefault("spec", {})["suspend"] = True
        else:
            _cluster_spec_for_write(obj, kind)["suspend"] = True
    jf.apply_default_for_managed_by(obj, ctx, namespace, defaultable=DEFAULTABLE_MANAGED_BY)
    if kind is not ray.RAYJOB and jf.is_elastic(obj, ctx):
        spec = _cluster_spec_for_write(obj, kind)
        _gate((spec.setdefault("headGroupSpec", {})).setdefault("template", {}))
        for group in spec.get("workerGroupSpecs") or ():
            _gate(group.setdefault("template", {}))


def _cluster_rules(spec: Mapping[str, Any], path: f.Path) -> list[f.FieldError]:
    """The podSet limit and the reserved head name, for every kind."""
    errs: list[f.FieldError] = []
    count = len(spec.get("workerGroupSpecs") or ()) + 1
    if count > ray.MAX_POD_SETS:
        errs.append(f.too_many(path.child("workerGroupSpecs"), count, ray.MAX_POD_SETS))
    for i, group in enumerate(spec.get("workerGroupSpecs") or ()):
        if group.get("groupName") == ray.HEAD:
            errs.append(
                f.forbidden(
                    path.child("workerGroupSpecs").index(i).child("groupName"),
                    f'"{ray.HEAD}" is reserved for the head group',
                )
            )
    return errs


def _validate_elastic_cluster(obj: Mapping[str, Any]) -> list[f.FieldError]:
    """`validateElasticJob`: every worker group's template, then the head's, carries the elastic
    gate; a MultiKueue-managed elastic RayCluster may not autoscale in-tree."""
    spec = obj.get("spec") or {}
    errs: list[f.FieldError] = []
    detail = "an elastic job must have the ElasticJobSchedulingGate"
    for i, group in enumerate(spec.get("workerGroupSpecs") or ()):
        gates = ((group.get("template") or {}).get("spec") or {}).get("schedulingGates")
        if _ELASTIC_GATE not in (gates or ()):
            path = _SPEC.child("workerGroupSpecs").index(i).child("template", "spec", "schedulingGates")
            errs.append(f.invalid(path, gates, detail))
    head_gates = (((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}).get("schedulingGates")
    if _ELASTIC_GATE not in (head_gates or ()):
        errs.append(f.invalid(_SPEC.child("headGroupSpec", "template", "spec", "schedulingGates"), head_gates, detail))
    if spec.get("enableInTreeAutoscaling") and spec.get("managedBy") == c.MULTIKUEUE_CONTROLLER:
        errs.append(
            f.forbidden(
                _SPEC.child("enableInTreeAutoscaling"),
                "in-tree autoscaling is not supported for a MultiKueue-managed elastic RayCluster",
            )
        )
    return errs


def _validate_raycluster(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    spec = obj.get("spec") or {}
    errs: list[f.FieldError] = []
    if jf.is_elastic(obj, ctx):
        errs += _validate_elastic_cluster(obj)
    elif spec.get("enableInTreeAutoscaling"):
        errs.append(
            f.invalid(
                _SPEC.child("enableInTreeAutoscaling"),
                spec["enableInTreeAutoscaling"],
                "a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the "
                f'ElasticJobsViaWorkloadSlices feature gate and set the "{c.ELASTIC_JOB}": "true" annotation',
            )
        )
    return errs + _cluster_rules(spec, _SPEC)


def _validate_embedded(
    obj: Mapping[str, Any], spec: Mapping[str, Any], path: f.Path, ctx: Context
) -> list[f.FieldError]:
    """`raycluster.ValidateCreate` of a RayJob's or RayService's RayClusterSpec."""
    errs: list[f.FieldError] = []
    if spec.get("enableInTreeAutoscaling") and not jf.is_elastic(obj, ctx):
        errs.append(
            f.invalid(
                path.child("enableInTreeAutoscaling"),
                spec["enableInTreeAutoscaling"],
                "a kueue managed job should only use autoscaling when workload slicing is enabled",
            )
        )
    elif spec.get("enableInTreeAutoscaling"):
        # Upstream follows the autoscaler through the RayCluster KubeRay made (`UpdatePodSets`);
        # pykueue does not, so it refuses rather than let the cluster outgrow its quota unseen.
        errs.append(
            f.forbidden(
                path.child("enableInTreeAutoscaling"),
                f"in-tree autoscaling of an elastic {obj.get('kind')} is not implemented by pykueue "
                "(an elastic RayCluster may autoscale)",
            )
        )
    return errs + _cluster_rules(spec, path)


def _validate_rayjob(obj: Mapping[str, Any], ctx: Context) -> tuple[list[f.FieldError], bool]:
    """The RayJob's own rules; (errors, whether the shared checks still follow: a RayJob with a
    `clusterSelector` or without a cluster spec ends here, as upstream returns early)."""
    spec = obj.get("spec") or {}
    selector, cluster = spec.get("clusterSelector"), spec.get("rayClusterSpec")
    if selector and cluster is not None:
        return [
            f.invalid(
                _SPEC.child("clusterSelector"), selector, "a kueue managed job should not use an existing cluster"
            )
        ], False
    if selector:
        return [], False  # an existing cluster: not Kueue's to manage
    if cluster is None:
        detail = "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
        return [f.required(_SPEC.child("rayClusterSpec"), detail)], False
    errs: list[f.FieldError] = []
    if not spec.get("shutdownAfterJobFinishes"):
        errs.append(
            f.invalid(
                _SPEC.child("shutdownAfterJobFinishes"),
                bool(spec.get("shutdownAfterJobFinishes")),
                "a kueue managed job should delete the cluster after finishing",
            )
        )
    return errs + _validate_embedded(obj, cluster, _SPEC.child("rayClusterSpec"), ctx), True


def _validate_topology(obj: Mapping[str, Any], kind: ray.Kind) -> list[f.FieldError]:
    """`validateTopologyRequest` (RayCluster) and `raycluster.ValidateTopologyRequest` (RayJob,
    RayService): the head's and each worker group's TAS annotations, and once the podSets can be
    built, the slice sizes against their counts and the podSet groups. A podSet that cannot be
    built with no field error is denied with Go's error."""
    spec = ray.cluster_spec(obj, kind)
    if spec is None:
        return []
    paths = [p.child("metadata") for p in ray.template_paths(kind, spec)]
    templates = [(spec.get("headGroupSpec") or {}).get("template") or {}]
    templates += [g.get("template") or {} for g in spec.get("workerGroupSpecs") or ()]
    ann = [(t.get("metadata") or {}).get("annotations") or {} for t in templates]
    build = next((e for a in ann if (e := tas.build_error(a)) is not None), None)
    try:
        pod_sets = ray.pod_sets(obj, kind)[: len(paths)]
    except ValueError as exc:
        pod_sets, build = [], build or str(exc)
    built = build is None
    grouping: list[f.FieldError] = []
    if built:
        for ps, a in zip(pod_sets, ann, strict=True):
            ps["topologyRequest"] = tas.grouping_request(a)
        annotation_paths = {ps["name"]: p.child("annotations") for ps, p in zip(pod_sets, paths, strict=True)}
        grouping = tas.validate_grouping(pod_sets, annotation_paths)

    def slice_bound(i: int) -> list[f.FieldError]:
        return tas.validate_slice_size_upper_bound(paths[i], ann[i], pod_sets[i]["count"]) if built else []

    errs = tas.validate_pod_set_request(paths[0], ann[0])
    if kind is ray.RAYCLUSTER:
        errs += grouping + slice_bound(0)
        if built:
            for i in range(1, len(paths)):
                errs += tas.validate_pod_set_request(paths[i], ann[i]) + slice_bound(i)
    else:
        errs += slice_bound(0) + grouping
        for i in range(1, len(paths)):
            errs += tas.validate_pod_set_request(paths[i], ann[i]) + slice_bound(i)
    if not errs and build is not None:
        raise jf.FrameworkError(build)
    return errs


def _is_managed(obj: Mapping[str, Any], ctx: Context) -> bool:
    return ctx.config.manage_jobs_without_queue_name or bool(jf.queue_name(obj))


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateCreate`: a managed object's Ray rules, then `ValidateJobOnCreate`, then with
    TopologyAwareScheduling the TAS checks."""
    kind = ray.kind_of(obj)
    errs: list[f.FieldError] = []
    if _is_managed(obj, ctx):
        if kind is ray.RAYCLUSTER:
            errs += _validate_raycluster(obj, ctx)
        elif kind is ray.RAYJOB:
            own, go_on = _validate_rayjob(obj, ctx)
            if not go_on:
                return own
            errs += own
        else:
            path = _SPEC.child("rayClusterConfig")
            errs += _validate_embedded(obj, ray.cluster_spec(obj, kind) or {}, path, ctx)
    errs += jf.validate_job_create(obj, ctx, gvk=kind.framework.gvk)
    if ctx.config.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING):
        errs += _validate_topology(obj, kind)
    return errs


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateUpdate`: nothing for an object Kueue neither manages nor managed (with
    ValidateRayAndSparkJobUpdates, a queue name removed is still validated); else
    `ValidateJobOnUpdate`, then the create checks on the new object."""
    if not jf.should_validate_ray_or_spark_update(old, new, ctx):
        return []
    kind = ray.kind_of(new)
    errs = jf.validate_job_update(
        old,
        new,
        ctx,
        old_suspended=ray.is_suspended(old, kind),
        new_suspended=ray.is_suspended(new, kind),
        gvk=kind.framework.gvk,
    )
    return errs + validate_create(new, ctx)


def warnings_create(obj: Mapping[str, Any], ctx: Context) -> list[str]:
    """The queue the object names: missing, not selecting its namespace, or too small for it ever."""
    kind = ray.kind_of(obj)
    try:
        sets = ray.pod_sets(obj, kind)
    except ValueError:
        return []  # validation denies it
    demand = [queue_warnings.pod_set_demand(ps["count"], ps["template"].get("spec") or {}) for ps in sets]
    namespace = o.meta(obj).get("namespace") or ctx.namespace
    return queue_warnings.queue_warnings(kind.name, namespace, jf.queue_name(obj), demand, ctx)
