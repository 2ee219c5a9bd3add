"""One worker cluster as the manager sees it: a client built from the MultiKueueCluster's
kubeconfig, a list and watch of every kind MultiKueue creates there (Workloads, and each job kind
whose adapter watches its remote objects), and the connection state.

A reconcile of the cluster calls `update(config)`. Following `ConnectionState.begin`, it keeps the
client, waits out the backoff, or (re)connects: stop the old watches, build a new client, start one
informer per kind with the origin selector, and wait, bounded by the establish timeout, until every
kind has listed once. Only then is the client connected, and only then do the listed objects and
the watch events reach `on_keys`, as the local Workload keys they concern (upstream starts
consuming its watches only after `markConnected`). A list or watch failing after that ends every
watch of the client, marks it disconnected and calls `on_lost`, so the cluster is reconciled (and
reconnected with backoff) instead of the informer retrying on its own.

Reconciles read and write through `kube` directly, never through a cache, as upstream's remote
client does (`NeverCachingClient`). `stop()` ends the watches for good: the client's streams are
shut, so no thread outlives a deleted MultiKueueCluster by a watch timeout.

Mirrors upstream v0.19.2 `remoteClient` in `pkg/controller/admissionchecks/multikueue/multikueuecluster.go`
(`updateConfigAndRefreshWatchers`, `establishWatcher`, `startWatcher`, `handleWatchEvent`,
`queueWatchEndedEvent`, `StopWatchers`). A list stands in for "the watch is established".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook import kube as k
from webhook.api import multikueue as mk
from webhook.api.objects import Obj
from webhook.worker.admissionchecks.multikueue.connection import ConnectionState, Step
from webhook.worker.admissionchecks.multikueue.kubeconfig import ClientConfig

__all__ = ["JOIN_TIMEOUT_S", "KubeFactory", "RemoteCluster", "WatchedKind"]

log = logging.getLogger(__name__)

KubeFactory = Callable[[Mapping[str, Any]], k.Kube]
"""Builds the client of a worker from its validated kubeconfig (`Kube.from_kubeconfig`, fenced)."""

JOIN_TIMEOUT_S = 5.0
"""How long `stop()` waits for each watch thread (a list in flight ends with its request timeout)."""


@dataclass(frozen=True, slots=True)
class WatchedKind:
    """A collection MultiKueue creates objects in on every worker, and the local Workloads an
    object there concerns (`WorkloadKeysFor`; raising ValueError: none, logged)."""

    path: str
    keys: Callable[[Obj], list[str]]


class _Watches:
    """One connection attempt's informers: their stop event, threads and what they listed."""

    def __init__(self, kinds: int) -> None:
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()
        self.synced = 0
        self.kinds = kinds
        self.ready = threading.Event()  # every kind listed, or the attempt failed
        self.error: str | None = None
        self.live = False  # connected: events go out instead of into `held`
        self.held: list[tuple[WatchedKind, Obj]] = []


class RemoteCluster:
    """The client, watches and connection state of one MultiKueueCluster (thread-safe).

    `on_keys(cluster, keys)` hears of local Workload keys a remote object changed for;
    `on_lost(cluster)` of a connection that dropped after it was up."""

    def __init__(
        self,
        name: str,
        *,
        build: KubeFactory,
        origin: str,
        kinds: Sequence[WatchedKind],
        on_keys: Callable[[str, list[str]], None],
        on_lost: Callable[[str], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.origin = origin
        self.state = ConnectionState(clock)
        self._build = build
        self._kinds = tuple(kinds)
        self._on_keys = on_keys
        self._on_lost = on_lost
        self._lock = threading.Lock()  # one reconcile of this cluster at a time (upstream #11297)
        self._kube: k.Kube | None = None
        self._watches: _Watches | None = None

    @property
    def kube(self) -> k.Kube | None:
        """The client while connected; None otherwise (the cluster counts as unavailable)."""
        kube = self._kube
        return kube if kube is not None and self.state.connected else None

    def update(self, config: ClientConfig) -> tuple[float | None, str | None]:
        """Bring the connection in line with `config`: (seconds until the next reconcile, or None;
        the connection error for the `ClientConnectionFailed` condition, or None)."""
        with self._lock:
            attempt = self.state.begin(config.kubeconfig)
            if attempt.step is Step.KEEP:
                return None, None
            self._stop_watches()
            if attempt.step is Step.WAIT:
                return attempt.wait_s, None
            try:
                kube = self._build(config.kubeconfig)
            except k.KubeError as exc:
                self.state.lost()
                return self.state.failed(), str(exc)
            self._kube = kube
            watches = self._start_watches(kube)
            if not watches.ready.wait(self.state.establish_timeout()):
                watches.error = watches.error or f"establishing the watches of cluster {self.name} timed out"
            if watches.error is not None:
                self._stop_watches()
                self.state.lost()
                return self.state.failed(), watches.error
            self.state.connected_now()
            with watches.lock:
                watches.live = True
                held, watches.held = watches.held, []
            self._deliver(held)
            log.info("worker cluster connected", extra={"object": self.name, "kind": "MultiKueueCluster"})
            return None, None

    def disconnect(self) -> None:
        """Stop the watches and count the connection lost (`disconnectCluster`): the config could
        not be loaded any more."""
        with self._lock:
            self._stop_watches()
            self.state.lost()

    def stop(self) -> None:
        """End every watch and close the client: the MultiKueueCluster is gone."""
        with self._lock:
            self._stop_watches()

    # == watches ======================================================================================
    def _start_watches(self, kube: k.Kube) -> _Watches:
        watches = self._watches = _Watches(len(self._kinds))
        query = {"labelSelector": f"{mk.ORIGIN_LABEL}={self.origin}"}
        for kind in self._kinds:
            thread = threading.Thread(
                target=k.informer,
                args=(kube, kind.path, self._lister(watches, kind), self._watcher(watches, kind)),
                kwargs={
                    "stop": watches.stop,
                    "on_synced": lambda: self._synced(watches),
                    "query": query,
                    "on_error": lambda exc: self._failed(watches, exc),
                },
                name=f"mk-{self.name}-{kind.path.rsplit('/', 1)[-1]}",
                daemon=True,
            )
            watches.threads.append(thread)
        for thread in watches.threads:
            thread.start()
        if not self._kinds:
            watches.ready.set()
        return watches

    def _stop_watches(self) -> None:
        watches, kube = self._watches, self._kube
        self._watches = self._kube = None
        if watches is None:
            return
        watches.stop.set()
        if kube is not None:
            kube.close()  # ends the open watch streams at once
        for thread in watches.threads:
            thread.join(JOIN_TIMEOUT_S)

    def _synced(self, watches: _Watches) -> None:
        with watches.lock:
            watches.synced += 1
            if watches.synced >= watches.kinds:
                watches.ready.set()

    def _failed(self, watches: _Watches, exc: k.KubeError) -> None:
        """A list or watch failed: the attempt fails, or the live connection is lost."""
        if watches.stop.is_set():
            return  # being stopped: the cut stream is ours
        watches.stop.set()
        with watches.lock:
            live = watches.live
            watches.error = watches.error or str(exc)
        watches.ready.set()
        if live and self.state.lost():
            log.warning(
                "worker cluster connection lost",
                extra={"object": self.name, "kind": "MultiKueueCluster", "error": str(exc)},
            )
            self._on_lost(self.name)

    def _lister(self, watches: _Watches, kind: WatchedKind) -> Callable[[list[dict[str, Any]]], None]:
        def on_list(items: list[dict[str, Any]]) -> None:
            self._hold_or_deliver(watches, [(kind, item) for item in items])

        return on_list

    def _watcher(self, watches: _Watches, kind: WatchedKind) -> Callable[[str, dict[str, Any]], None]:
        def on_event(_etype: str, obj: dict[str, Any]) -> None:
            self._hold_or_deliver(watches, [(kind, obj)])

        return on_event

    def _hold_or_deliver(self, watches: _Watches, objs: list[tuple[WatchedKind, Obj]]) -> None:
        with watches.lock:
            if not watches.live:
                watches.held.extend(objs)
                return
        self._deliver(objs)

    def _deliver(self, objs: Sequence[tuple[WatchedKind, Obj]]) -> None:
        """The local Workload keys of `objs` to `on_keys` (`handleWatchEvent`)."""
        keys: list[str] = []
        for kind, obj in objs:
            try:
                keys.extend(kind.keys(obj))
            except ValueError as exc:
                log.info("remote object names no workload", extra={"object": self.name, "error": str(exc)})
        if keys:
            self._on_keys(self.name, keys)
