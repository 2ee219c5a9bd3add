"""What a webhook handler may know besides the object: the configuration, the request, and read-only lookups.

Handlers are pure functions of (object, Context). Lookups answer from a cache the server
keeps warm by watching the API (`webhook.admission.lookups`), so a handler never waits on
the network for anything but an owner object the cache cannot know.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from webhook.config import Configuration
from webhook.core import model

__all__ = ["Context", "LookupError_", "Lookups", "StaticLookups"]


class LookupError_(Exception):
    """A lookup failed (API unreachable, owner missing); the request is denied with this text."""


class Lookups(Protocol):
    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Labels of a namespace; raises LookupError_ if it cannot be read."""
        ...

    def local_queue_exists(self, namespace: str, name: str) -> bool: ...

    def local_queue_cluster_queue(self, namespace: str, name: str) -> str | None:
        """The ClusterQueue a LocalQueue points at; None if the LocalQueue does not exist."""
        ...

    def cluster_queue(self, name: str) -> model.ClusterQueueSpec | None:
        """A ClusterQueue's spec, parsed; None if it does not exist."""
        ...

    def workload_priority_class_exists(self, name: str) -> bool: ...

    def admission_check_controller(self, name: str) -> str | None:
        """An AdmissionCheck's `spec.controllerName`; None if it does not exist."""
        ...

    def get_owner(self, namespace: str, api_version: str, kind: str, name: str) -> Mapping[str, Any] | None:
        """The owner object as JSON, None if it does not exist; raises LookupError_ on other failures."""
        ...

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """A Workload as JSON (read from the API: rare, only a StatefulSet's scale-up from zero needs it),
        None if it does not exist; raises LookupError_ on other failures."""
        ...

    def own_identity(self) -> str:
        """The username this server (and its worker) authenticates as; "" while unknown. A request from
        it may keep or change the submitting-user annotation (`webhook.admission.submitter`)."""
        ...

    def budgets(self) -> Sequence[Mapping[str, Any]]:
        """The Budgets (`pykueue.io`) as last watched, status included: for submit-time warnings."""
        ...

    def training_runtime(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """A TrainJob's ClusterTrainingRuntime (namespace "") or TrainingRuntime as JSON (read from the
        API: only the TrainJob webhook's topology checks need it), None if it does not exist; raises
        LookupError_ on other failures."""
        ...


@dataclass(frozen=True, slots=True)
class StaticLookups:
    """Lookups over fixed data: for tests, and for a server started without a cluster."""

    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    local_queues: frozenset[tuple[str, str]] = frozenset()
    priority_classes: frozenset[str] = frozenset()
    owners: Mapping[tuple[str, str, str, str], Mapping[str, Any]] = field(default_factory=dict)
    #: (namespace, LocalQueue) -> ClusterQueue, for queue warnings; `local_queues` alone says only existence
    local_queue_targets: Mapping[tuple[str, str], str] = field(default_factory=dict)
    cluster_queues: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    workloads: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    #: (kind, namespace, name) -> a ClusterTrainingRuntime (namespace "") or TrainingRuntime
    training_runtimes: Mapping[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)
    #: AdmissionCheck name -> controllerName
    admission_checks: Mapping[str, str] = field(default_factory=dict)
    identity: str = ""
    budget_objects: Sequence[Mapping[str, Any]] = ()

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get(namespace, {"kubernetes.io/metadata.name": namespace})

    def local_queue_exists(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.local_queues

    def local_queue_cluster_queue(self, namespace: str, name: str) -> str | None:
        if (namespace, name) in self.local_queue_targets:
            return self.local_queue_targets[(namespace, name)]
        return "" if (namespace, name) in self.local_queues else None

    def cluster_queue(self, name: str) -> model.ClusterQueueSpec | None:
        raw = self.cluster_queues.get(name)
        return None if raw is None else model.parse_cluster_queue(raw)

    def workload_priority_class_exists(self, name: str) -> bool:
        return name in self.priority_classes

    def admission_check_controller(self, name: str) -> str | None:
        return self.admission_checks.get(name)

    def get_owner(self, namespace: str, api_version: str, kind: str, name: str) -> Mapping[str, Any] | None:
        return self.owners.get((namespace, api_version, kind, name))

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.workloads.get((namespace, name))

    def training_runtime(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.training_runtimes.get((kind, namespace, name))

    def own_identity(self) -> str:
        return self.identity

    def budgets(self) -> Sequence[Mapping[str, Any]]:
        return self.budget_objects


@dataclass(frozen=True, slots=True)
class Context:
    config: Configuration
    lookups: Lookups
    operation: str = "CREATE"
    sub_resource: str = ""
    namespace: str = ""
    user: str = ""  # the request's userInfo.username
