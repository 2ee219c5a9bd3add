"""Where each kind holds `resource.Quantity` values, and the first one Go could not decode.

Upstream's webhooks and informers decode objects into Go structs, so a quantity Go refuses fails
the whole object: its webhooks answer with the parse error (controller-runtime's
`admission.Errored(400, err)`), and its informers cannot list. CRDs check quantities only against
a pattern that admits some of them (`1e1.5`), so such objects can be stored. This table lets the
webhooks refuse them as upstream does, and lets our informers set them aside instead of stopping.

Paths are dotted; `[]` steps into every list item and `*` into every map value. The Kueue kinds'
entries are the quantity fields of their CRD schemas (checked against them by the schema tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api import quantity

__all__ = ["FIELDS", "POD_SPEC", "SCHEMA_ONLY", "first_invalid"]

_RESOURCES = ("resources.limits.*", "resources.requests.*")
_CONTAINER = (*_RESOURCES, "env[].valueFrom.resourceFieldRef.divisor")
# `core/v1 PodSpec`'s quantities.
POD_SPEC: tuple[str, ...] = (
    *(f"{group}[].{path}" for group in ("containers", "initContainers", "ephemeralContainers") for path in _CONTAINER),
    "overhead.*",
    *_RESOURCES,
    "volumes[].downwardAPI.items[].resourceFieldRef.divisor",
    "volumes[].emptyDir.sizeLimit",
    *(f"volumes[].ephemeral.volumeClaimTemplate.spec.{path}" for path in _RESOURCES),
    "volumes[].projected.sources[].downwardAPI.items[].resourceFieldRef.divisor",
)
_QUOTAS = tuple(
    f"spec.resourceGroups[].flavors[].resources[].{name}" for name in ("nominalQuota", "borrowingLimit", "lendingLimit")
)
_USAGE = tuple(
    f"status.{usage}[].resources[].{name}"
    for usage in ("flavorsReservation", "flavorsUsage")
    for name in ("total", "borrowed")
)
_CONSUMED = "status.fairSharing.admissionFairSharingStatus.consumedResources.*"


def _under(prefix: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{prefix}.{path}" for path in paths)


# Resource (plural) → its quantity fields, every served version's.
FIELDS: Mapping[str, tuple[str, ...]] = {
    "workloads": (
        *_under("spec.podSets[].template.spec", POD_SPEC),
        "status.admission.podSetAssignments[].resourceUsage.*",
        "status.resourceRequests[].resources.*",
    ),
    "clusterqueues": (*_QUOTAS, "spec.fairSharing.weight", *_USAGE, _CONSUMED),
    "cohorts": (*_QUOTAS, "spec.fairSharing.weight", _CONSUMED),
    # Ours (`webhook.api.schema_usage`): resource-seconds and amounts held.
    "usagerecords": ("status.usage[].resourceSeconds", "status.running[].amounts.*"),
    "budgets": ("spec.limit.resourceHours.*",),
    "localqueues": (
        "spec.fairSharing.weight",
        "status.flavorsReservation[].resources[].total",
        "status.flavorsUsage[].resources[].total",
        "status.flavorUsage[].resources[].total",  # v1beta1's name
        _CONSUMED,
    ),
    "pods": _under("spec", POD_SPEC),
    "jobs": _under("spec.template.spec", POD_SPEC),
    "deployments": _under("spec.template.spec", POD_SPEC),
    "statefulsets": (
        *_under("spec.template.spec", POD_SPEC),
        *_under("spec.volumeClaimTemplates[].spec", _RESOURCES),
    ),
    "jobsets": (  # JobSet v0.12.0's v1alpha2
        *_under("spec.replicatedJobs[].template.spec.template.spec", POD_SPEC),
        *_under("spec.volumeClaimPolicies[].templates[].spec", _RESOURCES),
    ),
    # training-operator v1.9.3's kinds and mpi-operator v0.8.2's MPIJob: replica templates, gang minResources
    **{
        f"{kind}s": (
            *_under(f"spec.{specs}.*.template.spec", POD_SPEC),
            "spec.runPolicy.schedulingPolicy.minResources.*",
        )
        for kind, specs in (
            ("pytorchjob", "pytorchReplicaSpecs"),
            ("tfjob", "tfReplicaSpecs"),
            ("xgboostjob", "xgbReplicaSpecs"),
            ("paddlejob", "paddleReplicaSpecs"),
            ("jaxjob", "jaxReplicaSpecs"),
            ("mpijob", "mpiReplicaSpecs"),
        )
    },
}

# The resources whose quantities the API server checks only against the CRD pattern: built-in
# kinds (Pods, Jobs, ...) are decoded by the API server itself, so only these can be stored bad.
SCHEMA_ONLY = frozenset(
    {"workloads", "clusterqueues", "cohorts", "localqueues", "jobsets"}
    | {f"{kind}s" for kind in ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob", "mpijob")}
)

# Each path as a tree of steps; None marks a quantity.
_Tree = dict[str, Any]


def _tree(paths: tuple[str, ...]) -> _Tree:
    root: _Tree = {}
    for path in paths:
        node = root
        steps = path.replace("[]", ".[]").split(".")
        for step in steps[:-1]:
            node = node.setdefault(step, {})
        node[steps[-1]] = None
    return root


_TREES = {resource: _tree(paths) for resource, paths in FIELDS.items()}


def first_invalid(resource: str, obj: Any) -> tuple[str, str] | None:
    """The path and Go's error of the first quantity in `obj` Go would not decode, if any."""
    tree = _TREES.get(resource)
    return None if tree is None else _walk(tree, obj, "")


def _walk(tree: _Tree, value: Any, path: str) -> tuple[str, str] | None:
    if isinstance(value, list) and "[]" in tree:
        for i, item in enumerate(value):
            if found := _step(tree["[]"], item, f"{path}[{i}]"):
                return found
    elif isinstance(value, Mapping):
        if "*" in tree:
            for key, item in value.items():
                if found := _step(tree["*"], item, f"{path}.{key}" if path else str(key)):
                    return found
        for key, sub in tree.items():
            if (
                key not in ("*", "[]")
                and key in value
                and (found := _step(sub, value[key], f"{path}.{key}" if path else key))
            ):
                return found
    return None


def _step(sub: _Tree | None, value: Any, path: str) -> tuple[str, str] | None:
    if sub is not None:
        return _walk(sub, value, path)
    if value is None:
        return None  # a null quantity decodes as zero
    error = quantity.invalid(value)
    return None if error is None else (path, error)
