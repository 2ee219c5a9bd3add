"""StatefulSet rules the webhook and the worker share: when another framework owns the pods, the
replica count, and the name of a StatefulSet's one Workload.

Mirrors `managedByAnotherFramework` and `GetWorkloadName` in `pkg/controller/jobs/statefulset/`
(upstream v0.19.2): the webhook looks that Workload up on a scale-up from zero, the worker creates it.
"""

from __future__ import annotations

from webhook.api import constants as c
from webhook.api import integrations, multikueue
from webhook.api import objects as o
from webhook.api.jobs import workload_name

__all__ = ["API_VERSION", "FRAMEWORK", "GVK", "KIND", "managed_by_another_framework", "replicas", "workload_name_for"]

FRAMEWORK = integrations.STATEFULSET.name
API_VERSION = integrations.STATEFULSET.api_version
KIND = integrations.STATEFULSET.kind
GVK = f"{API_VERSION}, Kind={KIND}"


def managed_by_another_framework(sts: o.Obj) -> bool:
    """A parent integration (e.g. LeaderWorkerSet) already suspends these pods: leave the object alone."""
    meta = ((sts.get("spec") or {}).get("template") or {}).get("metadata") or {}
    parent = (meta.get("annotations") or {}).get(c.POD_SUSPENDING_PARENT)
    return parent is not None and parent != FRAMEWORK


def replicas(sts: o.Obj) -> int:
    """`ptr.Deref(spec.replicas, 1)`."""
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def workload_name_for(sts: o.Obj, *, short: bool) -> str:
    """`GetWorkloadName`: `statefulset-<name>-<hash>`, from the StatefulSet's name and uid (its
    manager's, for a MultiKueue copy: `GetOwnerUID`); `short`: gate ShortWorkloadNames, at most 63
    characters."""
    return workload_name(o.name(sts), multikueue.owner_uid(sts), kind=KIND, group="apps", short=short)
