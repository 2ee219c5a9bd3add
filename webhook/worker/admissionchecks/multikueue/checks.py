"""A MultiKueue AdmissionCheck's `Active` condition, from its MultiKueueConfig and the state of
that config's clusters, and which checks an event on a config or a cluster concerns.

The check is Active while at least one of its clusters exists and is Active; a message lists the
missing and the inactive clusters in the config's order. The ClusterQueue side (a queue with an
inactive check is inactive) is the core's (`webhook.core.cache`).

Mirrors upstream v0.19.2 `ACReconciler.Reconcile`, `mkConfigHandler`, `mkClusterHandler` and
`cmpConditionState` (`pkg/controller/admissionchecks/multikueue/admissioncheck.go`) and the
`AdmissionCheckUsingConfigKey`/`UsingMultiKueueClusters` indexes (`indexer.go`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api import constants as c
from webhook.api import multikueue as mk
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker.admissionchecks import parameters
from webhook.worker.admissionchecks.multikueue.connection import condition_changed

__all__ = [
    "active_condition",
    "active_state_changed",
    "checks_using_cluster",
    "checks_using_config",
    "config_from_ref",
]

_CONFIG_RESOURCE = "multikueueconfigs.kueue.x-k8s.io"


def config_from_ref(ref: Obj | None, configs: Mapping[str, Obj]) -> Obj:
    """The MultiKueueConfig a check's `spec.parameters` names; raises `parameters.BadParametersRef`
    or `parameters.ConfigNotFound` with upstream's text (`ConfigHelper.ConfigFromRef`)."""
    return parameters.config_from_ref(ref, configs, kind=mk.CONFIG_KIND, resource=_CONFIG_RESOURCE)


def _is_multikueue(ac: Obj) -> bool:
    return (ac.get("spec") or {}).get("controllerName") == mk.CONTROLLER_NAME


def active_condition(ac: Obj, configs: Mapping[str, Obj], clusters: Mapping[str, Obj]) -> dict[str, Any] | None:
    """The `Active` condition to write on a MultiKueue AdmissionCheck, or None when the check is
    another controller's or its condition already has this status, reason and message.

    `configs` and `clusters` hold the MultiKueueConfigs and MultiKueueClusters by name."""
    if not _is_multikueue(ac):
        return None
    new: dict[str, Any] = {
        "type": c.ADMISSION_CHECK_ACTIVE,
        "status": "True",
        "reason": str(mk.CheckReason.ACTIVE),
        "message": mk.MSG_CHECK_ACTIVE,
        "observedGeneration": int(o.meta(ac).get("generation") or 0),
    }
    try:
        config = config_from_ref((ac.get("spec") or {}).get("parameters"), configs)
    except (parameters.BadParametersRef, parameters.ConfigNotFound) as exc:
        new.update(
            status="False",
            reason=str(mk.CheckReason.BAD_CONFIG),
            message=f"Cannot load the AdmissionChecks parameters: {exc}",
        )
        return new if condition_changed(ac, new) else None
    names = [str(n) for n in (config.get("spec") or {}).get("clusters") or ()]
    missing = [n for n in names if n not in clusters]
    inactive = [n for n in names if n in clusters and not o.is_condition_true(clusters[n], mk.CLUSTER_ACTIVE)]
    if missing or inactive:
        if len(missing) + len(inactive) < len(names):
            new["reason"] = str(mk.CheckReason.SOME_ACTIVE_CLUSTERS)
        else:
            new.update(status="False", reason=str(mk.CheckReason.NO_USABLE_CLUSTERS))
        parts = [f"Missing clusters: {mk.go_list(missing)}"] if missing else []
        parts += [f"Inactive clusters: {mk.go_list(inactive)}"] if inactive else []
        new["message"] = ", ".join(parts)
    return new if condition_changed(ac, new) else None


def checks_using_config(checks: Iterable[Obj], config: str) -> list[str]:
    """Names of the MultiKueue checks whose valid parameters name `config`, sorted (the
    `AdmissionCheckUsingConfigKey` index): a config's creation, deletion or `spec.clusters` change
    requeues them."""
    using = []
    for ac in checks:
        if not _is_multikueue(ac):
            continue
        try:
            config_from_ref((ac.get("spec") or {}).get("parameters"), {config: {}})
        except (parameters.BadParametersRef, parameters.ConfigNotFound):
            continue
        using.append(o.name(ac))
    return sorted(using)


def checks_using_cluster(checks: Iterable[Obj], configs: Iterable[Obj], cluster: str) -> list[str]:
    """Names of the MultiKueue checks using a config that lists `cluster`, sorted: a cluster's
    creation, deletion or `Active` change requeues them (`mkClusterHandler.queue`)."""
    checks = list(checks)
    names: set[str] = set()
    for config in configs:
        if cluster in ((config.get("spec") or {}).get("clusters") or ()):
            names.update(checks_using_config(checks, o.name(config)))
    return sorted(names)


def active_state_changed(old: Obj, new: Obj) -> bool:
    """A MultiKueueCluster update changed its `Active` condition's status, reason or message."""
    before = o.find_condition(old, mk.CLUSTER_ACTIVE)
    after = o.find_condition(new, mk.CLUSTER_ACTIVE)
    if before is None or after is None:
        return (before is None) != (after is None)
    return condition_changed(old, after)
