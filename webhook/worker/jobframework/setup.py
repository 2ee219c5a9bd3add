"""How the worker runs the integrations the Configuration enables: each adapter module's `setup`.

Mirrors `SetupControllers` in `pkg/controller/jobframework/setup.go` (upstream v0.19.2): for every
enabled framework, and those it implicitly enables, the registry row (`webhook.api.integrations`)
names the adapter module; its `setup(ctx)` returns the reconciler and the resources the Manager's
informers must follow for it. A framework without an adapter (Deployment: its pods are the pod
integration's) runs no reconciler of its own.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from webhook import kube as k
from webhook.api import integrations
from webhook.config import Configuration
from webhook.worker import events
from webhook.worker.reconcilers.base import Reconciler
from webhook.worker.store import Store

__all__ = ["Adapter", "Resource", "SetupContext", "Wiring", "wire"]


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource the Manager's informers follow: events reach the store, the core and every reconciler."""

    kind: str  # plural, also the Store kind
    api_version: str
    label_selector: str = ""
    optional: bool = False
    """Served by an operator's CRD that may not be installed: until it is, the kind counts as
    listed and empty, so the scheduler does not wait for it (upstream defers such an
    integration's controller until its API is served, `waitForAPI` in `jobframework/setup.go`)."""
    namespace: str = ""
    """Followed in this namespace only (the Secrets of Kueue's namespace); empty: cluster-wide."""

    @property
    def path(self) -> str:
        return k.object_path(self.api_version, self.kind, self.namespace or None)


@dataclass(frozen=True, slots=True)
class SetupContext:
    """What an integration's reconciler is built from (upstream's `ReconcilerFactory` arguments)."""

    kube: k.Kube
    store: Store
    config: Configuration
    recorder: events.Recorder
    stop: threading.Event
    on_ready: Callable[[Mapping[str, Any], datetime], None] | None = None
    """PodsReady turned True/Started: the ready-wait-time metrics."""
    framework: integrations.Framework | None = None
    """The row being set up (`wire` sets it), so one adapter module may serve several kinds."""


@dataclass(frozen=True, slots=True)
class Wiring:
    """One integration in the worker: its reconciler and what the Manager must watch for it."""

    reconciler: Reconciler
    watches: tuple[Resource, ...] = ()


class Adapter(Protocol):
    """The module a registry row names as `adapter`."""

    def setup(self, ctx: SetupContext) -> Wiring: ...


def wire(ctx: SetupContext) -> tuple[Wiring, ...]:
    """The wiring of every enabled integration that has an adapter, in registry order; each
    adapter's `setup` sees its row as `ctx.framework`."""
    return tuple(
        cast(Adapter, importlib.import_module(f.adapter)).setup(dataclasses.replace(ctx, framework=f))
        for f in integrations.enabled(ctx.config.integrations.frameworks)
        if f.adapter is not None
    )
