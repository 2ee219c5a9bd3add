"""What a Workload's pods will really request, and whether their namespace's LimitRanges allow it.

The API server's LimitRanger and RuntimeClass admission give a pod the requests its template
leaves out: a LimitRange's `defaultRequest`/`default`, a container's limits, the RuntimeClass's
`overhead.podFixed`. Quota must count those, or a Job with no requests in such a namespace would
cost nothing while its pods hold real resources. So, before a Workload is parsed for queueing,
its pod templates get the same defaults (`adjust_workload`), and pods the LimitRanges would refuse
make the Workload inadmissible (`limit_range_errors`). Nothing here is written back to the API:
like upstream, the adjustment is redone on every Workload event from the current LimitRanges and
RuntimeClasses.

Mirrors `pkg/workload/resources.go` (`AdjustResources`: `handlePodOverhead`,
`handlePodLimitRange`, `handleLimitsToRequests`; `ValidateLimitRange`) and
`pkg/util/limitrange/limitrange.go` (`Summarize`, `ValidatePodSpec`) of kueue v0.19.2. Pod-level
totals are `workload.pod_requests`, our `resourcehelpers.PodRequests`.

All functions are pure over the API's JSON dicts; inputs are never mutated, and an object that
needs no change is returned as is (the hot path copies nothing in namespaces without LimitRanges).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from webhook.api import quantity
from webhook.core.workload import pod_requests

__all__ = [
    "ABOVE_MAX_MESSAGE",
    "BELOW_MIN_MESSAGE",
    "LIMIT_RANGE_CONSTRAINTS_MESSAGE",
    "LimitRangeItem",
    "ResourceList",
    "Summary",
    "adjust_pod_spec",
    "adjust_workload",
    "aggregate",
    "limit_range_errors",
    "runtime_class_names",
    "runtime_class_overhead",
    "summarize",
    "validate_pod_spec",
]

# Upstream's exact texts (`limitrange.RequestsMustNotBe{Above,Below}LimitRange{Max,Min}Message`,
# `workload.ErrLimitRangeConstraintsUnsatisfiedResources`).
ABOVE_MAX_MESSAGE = "requests must not be above the limitRange max"
BELOW_MIN_MESSAGE = "requests must not be below the limitRange min"
LIMIT_RANGE_CONSTRAINTS_MESSAGE = "resources didn't satisfy LimitRange constraints"

CONTAINER = "Container"
POD = "Pod"

# A resource list as the API serializes it: resource name → quantity text (or a bare number).
ResourceList = Mapping[str, str | int | float]


@dataclass(frozen=True, slots=True)
class LimitRangeItem:
    """One limit type of a namespace's LimitRanges, merged (`corev1.LimitRangeItem`)."""

    max: ResourceList = field(default_factory=dict)
    min: ResourceList = field(default_factory=dict)
    default: ResourceList = field(default_factory=dict)
    default_request: ResourceList = field(default_factory=dict)
    max_limit_request_ratio: ResourceList = field(default_factory=dict)


# Limit type (`Container`, `Pod`, `PersistentVolumeClaim`) → its merged item.
Summary = Mapping[str, LimitRangeItem]


# -- resource lists (`pkg/util/resource/resource.go`) ------------------------------------------------
def _value(v: str | int | float) -> Fraction:
    return quantity.parse(v)


def _keep_first(dst: ResourceList | None, src: ResourceList | None) -> dict[str, str | int | float]:
    """`MergeResourceListKeepFirst`: every entry of `dst`, plus those of `src` it lacks."""
    return {**(src or {}), **(dst or {})}


def _keep_min(a: ResourceList | None, b: ResourceList | None) -> dict[str, str | int | float]:
    """`MergeResourceListKeepMin`: both lists; on a shared name, the smaller quantity."""
    out = dict(a or {})
    for name, vb in (b or {}).items():
        if name not in out or _value(out[name]) > _value(vb):
            out[name] = vb
    return out


def _keep_max(a: ResourceList | None, b: ResourceList | None) -> dict[str, str | int | float]:
    """`MergeResourceListKeepMax`: both lists; on a shared name, the larger quantity."""
    out = dict(a or {})
    for name, vb in (b or {}).items():
        if name not in out or _value(out[name]) < _value(vb):
            out[name] = vb
    return out


def _amounts(rl: ResourceList | None) -> dict[str, int]:
    """`NewRequestsFromResourceList`: the integer amounts Kueue compares (milli-CPU, whole units)."""
    return {name: quantity.amount(name, v) for name, v in (rl or {}).items()}


def _greater_keys(a: Mapping[str, int], b: Mapping[str, int]) -> list[str]:
    """`Requests.GreaterKeys`: sorted names present in both where `a` is larger (none if either is empty)."""
    if not a or not b:
        return []
    return sorted(name for name, v in a.items() if name in b and v > b[name])


# -- Summarize (`pkg/util/limitrange/limitrange.go`) --------------------------------------------------
def summarize(limit_ranges: Iterable[Mapping[str, Any]]) -> dict[str, LimitRangeItem]:
    """Merge LimitRanges per limit type: the lowest max and maxLimitRequestRatio, the highest min,
    and the first default and defaultRequest seen (callers pass the ranges sorted by name, so which
    one is first does not depend on list order, which upstream leaves to its cache)."""
    out: dict[str, LimitRangeItem] = {}
    for lr in limit_ranges:
        for item in (lr.get("spec") or {}).get("limits") or ():
            kind = str(item.get("type") or "")
            prev = out.get(kind, LimitRangeItem())
            out[kind] = LimitRangeItem(
                max=_keep_min(prev.max, item.get("max")),
                min=_keep_max(prev.min, item.get("min")),
                default=_keep_first(prev.default, item.get("default")),
                default_request=_keep_first(prev.default_request, item.get("defaultRequest")),
                max_limit_request_ratio=_keep_min(prev.max_limit_request_ratio, item.get("maxLimitRequestRatio")),
            )
    return out


def runtime_class_overhead(obj: Mapping[str, Any]) -> ResourceList:
    """A RuntimeClass's `overhead.podFixed`, {} when it sets none."""
    return dict((obj.get("overhead") or {}).get("podFixed") or {})


def runtime_class_names(obj: Mapping[str, Any]) -> frozenset[str]:
    """The RuntimeClasses a Workload's podSets name (upstream's `IndexWorkloadRuntimeClass`), so a
    RuntimeClass change re-adjusts just those Workloads."""
    return frozenset(
        str(name)
        for ps in (obj.get("spec") or {}).get("podSets") or ()
        if (name := ((ps.get("template") or {}).get("spec") or {}).get("runtimeClassName"))
    )


# -- AdjustResources (`pkg/workload/resources.go`) ----------------------------------------------------
def _with_resources(
    holder: Mapping[str, Any], limits: ResourceList, requests: ResourceList, key: str = "resources"
) -> Mapping[str, Any]:
    """`holder` with `resources.limits`/`requests` replaced, or `holder` itself when they are unchanged;
    an absent list stays absent when it would be empty (as Go keeps a nil list nil)."""
    res = holder.get(key) or {}
    new = dict(res)
    for name, value in (("limits", limits), ("requests", requests)):
        if value or name in res:
            new[name] = dict(value)
    if new == res:
        return holder
    return {**holder, key: new}


def _adjust_container(
    container: Mapping[str, Any], default: ResourceList | None, default_request: ResourceList | None
) -> Mapping[str, Any]:
    """LimitRange defaults, then limits as the missing requests (`handlePodLimitRange`, then
    `UseLimitsAsMissingRequestsInPod`)."""
    res = container.get("resources") or {}
    limits = _keep_first(res.get("limits"), default)
    requests = _keep_first(res.get("requests"), default_request)
    return _with_resources(container, limits, _keep_first(requests, limits))


def _adjust_containers(
    containers: Sequence[Mapping[str, Any]], default: ResourceList | None, default_request: ResourceList | None
) -> list[Mapping[str, Any]]:
    return [_adjust_container(c, default, default_request) for c in containers]


def adjust_pod_spec(
    spec: Mapping[str, Any], *, summary: Summary, overheads: Mapping[str, ResourceList]
) -> Mapping[str, Any]:
    """`spec` as admission will create its pods, in upstream's order:

    1. RuntimeClass overhead: a spec naming a runtimeClassName and setting no overhead gets the
       class's `overhead.podFixed` (a class unknown here, or without overhead, changes nothing);
    2. LimitRange defaults: every container and init container gets the Container type's
       `default` limits and `defaultRequest` requests it does not set itself; pod-level resources,
       where the spec has them, get the Pod type's;
    3. limits as requests: every request left unset takes its limit.

    `overheads` maps the RuntimeClasses that exist to their `runtime_class_overhead`. Returns
    `spec` itself when nothing changes.
    """
    out = dict(spec)
    rc = spec.get("runtimeClassName")
    if rc and not spec.get("overhead") and overheads.get(rc):
        out["overhead"] = dict(overheads[rc])
    container = summary.get(CONTAINER)
    default = container.default if container else None
    default_request = container.default_request if container else None
    for kind in ("initContainers", "containers"):
        if spec.get(kind):
            out[kind] = _adjust_containers(spec[kind], default, default_request)
    if spec.get("resources") is not None:
        pod = summary.get(POD)
        res = spec["resources"]
        limits = _keep_first(res.get("limits"), pod.default if pod else None)
        requests = _keep_first(res.get("requests"), pod.default_request if pod else None)
        out = dict(_with_resources(out, limits, _keep_first(requests, limits)))
    return spec if out == spec else out


def adjust_workload(
    obj: Mapping[str, Any], *, summary: Summary, overheads: Mapping[str, ResourceList]
) -> Mapping[str, Any]:
    """The Workload with every podSet's template adjusted (`AdjustResources`); `obj` itself when
    nothing changes. `summary` is `summarize` over the Workload's namespace's LimitRanges."""
    spec = obj.get("spec") or {}
    pod_sets = spec.get("podSets") or ()
    new_sets = []
    changed = False
    for ps in pod_sets:
        template = ps.get("template") or {}
        pspec = template.get("spec") or {}
        adjusted = adjust_pod_spec(pspec, summary=summary, overheads=overheads)
        if adjusted is not pspec:
            changed = True
            ps = {**ps, "template": {**template, "spec": adjusted}}
        new_sets.append(ps)
    if not changed:
        return obj
    return {**obj, "spec": {**spec, "podSets": new_sets}}


# -- ValidatePodSpec / ValidateLimitRange ------------------------------------------------------------
def _invalid(path: str, names: Sequence[str], message: str) -> str:
    """`field.Invalid(path, []ResourceName, message).Error()`: Go prints the value as JSON."""
    return f"{path}: Invalid value: [{','.join(json.dumps(n) for n in names)}]: {message}"


def _container_errors(item: LimitRangeItem, containers: Sequence[Mapping[str, Any]], path: str) -> list[str]:
    errs = []
    for i, c in enumerate(containers):
        res = c.get("resources") or {}
        highest = _amounts(_keep_max(res.get("requests"), res.get("limits")))
        lowest = _amounts(_keep_min(res.get("requests"), res.get("limits")))
        if over := _greater_keys(highest, _amounts(item.max)):
            errs.append(_invalid(f"{path}[{i}]", over, ABOVE_MAX_MESSAGE))
        if under := _greater_keys(_amounts(item.min), lowest):
            errs.append(_invalid(f"{path}[{i}]", under, BELOW_MIN_MESSAGE))
    return errs


def validate_pod_spec(summary: Summary, spec: Mapping[str, Any], path: str) -> list[str]:
    """`Summary.ValidatePodSpec`: each container and init container against the Container type's
    max and min (its larger of request and limit against max, the smaller against min), then the
    pod's total requests (`pod_requests`, overhead included) against the Pod type's. A resource is
    checked only where both sides name it. Errors in that order, init containers first."""
    errs: list[str] = []
    container = summary.get(CONTAINER)
    if container is not None:
        errs += _container_errors(container, spec.get("initContainers") or (), f"{path}.initContainers")
        errs += _container_errors(container, spec.get("containers") or (), f"{path}.containers")
    pod = summary.get(POD)
    if pod is not None:
        total = pod_requests(spec)
        if over := _greater_keys(total, _amounts(pod.max)):
            errs.append(_invalid(path, over, ABOVE_MAX_MESSAGE))
        if under := _greater_keys(_amounts(pod.min), total):
            errs.append(_invalid(path, under, BELOW_MIN_MESSAGE))
    return errs


def aggregate(errs: Sequence[str]) -> str:
    """`ErrorList.ToAggregate().Error()`: "" for none, the one message, or "[a, b]" (duplicates dropped)."""
    unique = list(dict.fromkeys(errs))
    if not unique:
        return ""
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def limit_range_errors(obj: Mapping[str, Any], summary: Summary) -> str:
    """`ValidateLimitRange` over an adjusted Workload: every podSet's violations, aggregated as
    upstream prints them ("" when its pods fit, or the namespace has no LimitRange)."""
    if not summary:
        return ""
    errs: list[str] = []
    for i, ps in enumerate((obj.get("spec") or {}).get("podSets") or ()):
        spec = (ps.get("template") or {}).get("spec") or {}
        errs += validate_pod_spec(summary, spec, f"spec.podSets[{i}].template.spec")
    return aggregate(errs)
