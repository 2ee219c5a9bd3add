"""Kubeflow's replica-spec jobs as Kueue reads them: the training-operator v1 kinds (PyTorchJob,
TFJob, XGBoostJob, PaddleJob, JAXJob) and the mpi-operator's v2beta1 MPIJob.

Mirrors `KFJobControl` and the shared `KubeflowJob` readers of
`pkg/controller/jobs/kubeflow/kubeflowjob/` with each kind's `OrderedReplicaTypes` and
`ReplicaSpecsFieldName` (`pkg/controller/jobs/kubeflow/jobs/*/`), and the same readers of
`pkg/controller/jobs/mpijob/mpijob_controller.go` (upstream v0.19.2), which differ only in their
table row. Field names are training-operator v1.9.3's (`spec.<kind>ReplicaSpecs`, a map from
replica type to `{replicas, template}`; `spec.runPolicy` with `suspend`, `managedBy` and
`schedulingPolicy.priorityClass`; `status.conditions` and `status.replicaStatuses`) and
mpi-operator v0.8.2's (the same under `spec.mpiReplicaSpecs`). Shared by the webhooks and the
worker; pure functions over plain dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api import integrations
from webhook.api.integrations import Framework

__all__ = [
    "JAXJOB",
    "KINDS",
    "MPIJOB",
    "PADDLEJOB",
    "PYTORCHJOB",
    "REPLICA_INDEX_LABEL",
    "TFJOB",
    "XGBOOSTJOB",
    "Kind",
    "is_suspended",
    "kind_of",
    "ordered_replica_types",
    "pod_sets",
    "priority_class",
    "replica_specs",
    "run_policy",
]

REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
"""`ReplicaIndexLabel` of both operators: the pod's index within its replica type (TAS's pod index)."""


@dataclass(frozen=True, slots=True)
class Kind:
    """One replica-spec kind: its registry row, where its replica specs live and the order its
    replica types become podSets in (`OrderedReplicaTypes`)."""

    framework: Framework
    replica_specs_field: str
    replica_types: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.framework.kind


_MASTER_WORKER = ("Master", "Worker")
PYTORCHJOB = Kind(integrations.PYTORCHJOB, "pytorchReplicaSpecs", _MASTER_WORKER)
TFJOB = Kind(integrations.TFJOB, "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator"))
XGBOOSTJOB = Kind(integrations.XGBOOSTJOB, "xgbReplicaSpecs", _MASTER_WORKER)
PADDLEJOB = Kind(integrations.PADDLEJOB, "paddleReplicaSpecs", _MASTER_WORKER)
JAXJOB = Kind(integrations.JAXJOB, "jaxReplicaSpecs", ("Worker",))
MPIJOB = Kind(integrations.MPIJOB, "mpiReplicaSpecs", ("Launcher", "Worker"))

KINDS: Mapping[str, Kind] = {k.name: k for k in (PYTORCHJOB, TFJOB, XGBOOSTJOB, PADDLEJOB, JAXJOB, MPIJOB)}
"""Each kind by its `kind`."""


def kind_of(obj: Mapping[str, Any]) -> Kind:
    """The row of `obj`'s kind (an admission request's object always carries it); KeyError for
    any other kind."""
    return KINDS[str(obj.get("kind") or "")]


def run_policy(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`RunPolicy()`: `spec.runPolicy` (absent: empty)."""
    return (obj.get("spec") or {}).get("runPolicy") or {}


def is_suspended(obj: Mapping[str, Any]) -> bool:
    """`IsSuspended`: `spec.runPolicy.suspend`."""
    return bool(run_policy(obj).get("suspend"))


def replica_specs(obj: Mapping[str, Any], kind: Kind) -> Mapping[str, Any]:
    """`ReplicaSpecs()`: replica type → replica spec (a null spec stays None)."""
    return (obj.get("spec") or {}).get(kind.replica_specs_field) or {}


def ordered_replica_types(obj: Mapping[str, Any], kind: Kind) -> list[str]:
    """`OrderedReplicaTypes`: the kind's replica types, in its order, that the job has a non-null
    spec for. Types are matched exactly, as Go's map lookup does."""
    specs = replica_specs(obj, kind)
    return [t for t in kind.replica_types if specs.get(t) is not None]


def _template(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec.get("template") or {}


def pod_sets(obj: Mapping[str, Any], kind: Kind) -> list[dict[str, Any]]:
    """`PodSets` without the topology request: one podSet per replica type in order, named by the
    lower-cased type (`NewPodSetReference`), counting `replicas` (default 1), with its pod template."""
    specs = replica_specs(obj, kind)
    return [
        {
            "name": t.lower(),
            "count": 1 if specs[t].get("replicas") is None else int(specs[t]["replicas"]),
            "template": copy.deepcopy(dict(_template(specs[t]))),
        }
        for t in ordered_replica_types(obj, kind)
    ]


def priority_class(obj: Mapping[str, Any], kind: Kind) -> str:
    """`PriorityClass`: `spec.runPolicy.schedulingPolicy.priorityClass`, else the first
    `priorityClassName` of the replica types' pod templates in order, else ''."""
    scheduling = run_policy(obj).get("schedulingPolicy") or {}
    if scheduling.get("priorityClass"):
        return str(scheduling["priorityClass"])
    specs = replica_specs(obj, kind)
    for t in ordered_replica_types(obj, kind):
        name = (_template(specs[t]).get("spec") or {}).get("priorityClassName")
        if name:
            return str(name)
    return ""
