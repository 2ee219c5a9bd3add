"""LeaderWorkerSet rules the webhook and the worker share: the LWS API's defaults and labels, the
podSet names of a group, and the name of each group's Workload.

Mirrors `leaderworkerset_controller.go` (`GetOwnerUID`, the defaults and the replica bound) and
`GetWorkloadName` in `leaderworkerset_webhook.go` (`pkg/controller/jobs/leaderworkerset/`, upstream
v0.19.2), with the label keys of `sigs.k8s.io/lws/api/leaderworkerset/v1` (v0.9.0). Both sides must
name a group's Workload alike: the worker creates it, the pods carry its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api import constants as c
from webhook.api import integrations, multikueue
from webhook.api import objects as o
from webhook.api.jobs import workload_name

__all__ = [
    "API_VERSION",
    "COMPONENT_WORKLOAD_INDEX_ANNOTATION",
    "FRAMEWORK",
    "GROUP_INDEX_LABEL",
    "GVK",
    "KIND",
    "LEADER_NAME_ANNOTATION",
    "LEADER_POD_SET",
    "MAX_REPLICAS",
    "MULTIKUEUE_ORIGIN_LABEL",
    "MULTIKUEUE_ORIGIN_UID_ANNOTATION",
    "NAME_LABEL",
    "POD_INDEX_OFFSET_ANNOTATION",
    "WORKER_INDEX_LABEL",
    "WORKER_POD_SET",
    "leader_template",
    "replicas",
    "size",
    "worker_template",
    "workload_name_for",
]

FRAMEWORK = integrations.LEADER_WORKER_SET.name
API_VERSION = integrations.LEADER_WORKER_SET.api_version
KIND = integrations.LEADER_WORKER_SET.kind
GVK = integrations.LEADER_WORKER_SET.gvk

# -- the LWS API (leaderworkerset.sigs.k8s.io/*) ----------------------------------------------------
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER_NAME_ANNOTATION = "leaderworkerset.sigs.k8s.io/leader-name"
"""Set on worker pods only: the leader pod is the one without it."""

# -- Kueue's keys that only this integration uses ----------------------------------------------------
COMPONENT_WORKLOAD_INDEX_ANNOTATION = "kueue.x-k8s.io/component-workload-index"
POD_INDEX_OFFSET_ANNOTATION = c.POD_INDEX_OFFSET_ANNOTATION
MULTIKUEUE_ORIGIN_LABEL = multikueue.ORIGIN_LABEL
MULTIKUEUE_ORIGIN_UID_ANNOTATION = multikueue.ORIGIN_UID_ANNOTATION

LEADER_POD_SET = "leader"
WORKER_POD_SET = "worker"
MAX_REPLICAS = 1_000_000
"""`maxLeaderWorkerSetReplicas`: a bound against one Workload per replica of an absurd count."""


def _spec(lws: o.Obj) -> Mapping[str, Any]:
    return lws.get("spec") or {}


def _lwt(lws: o.Obj) -> Mapping[str, Any]:
    return _spec(lws).get("leaderWorkerTemplate") or {}


def replicas(lws: o.Obj) -> int:
    """`spec.replicas`, defaulted to 1 as the LWS API does."""
    value = _spec(lws).get("replicas")
    return 1 if value is None else int(value)


def size(lws: o.Obj) -> int:
    """`spec.leaderWorkerTemplate.size`: pods per group, leader included (default 1)."""
    value = _lwt(lws).get("size")
    return 1 if value is None else int(value)


def leader_template(lws: o.Obj) -> Mapping[str, Any] | None:
    """The leader's own pod template; None: the leader runs the worker template."""
    template = _lwt(lws).get("leaderTemplate")
    return None if template is None else dict(template)


def worker_template(lws: o.Obj) -> Mapping[str, Any]:
    return _lwt(lws).get("workerTemplate") or {}


def workload_name_for(lws: o.Obj, group_index: str, *, short: bool) -> str:
    """`GetWorkloadName`: `leaderworkerset-<name>-<index>-<hash>`, one Workload per group;
    `short` is the ShortWorkloadNames gate (at most 63 characters)."""
    return workload_name(
        f"{o.name(lws)}-{group_index}",
        multikueue.owner_uid(lws),
        kind=KIND,
        group=integrations.LEADER_WORKER_SET.group,
        short=short,
    )
