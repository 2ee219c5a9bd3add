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

Reconciles reach the worker through `client`, a `RemoteClient`: an object of a watched kind is read
from what the watches listed and heard (kept in a `Store`, as the local informers' objects are),
so a reconcile costs no GET per worker and the client's rate limit is left to the writes; anything
else, and every write, goes to the API server, and what a write answers is kept at once. Upstream
reads a worker's Workloads with a direct GET (its `SelectivelyCachingClient` caches only
ClusterQueues and LocalQueues); a watch of the same objects gives the same answers, only as late
as its events, and each event queues the Workload again. `stop()` ends the watches for good: the
client's streams are shut, so no thread outlives a deleted MultiKueueCluster by a watch timeout.

Mirrors upstream v0.19.2 `remoteClient` in `pkg/controller/admissionchecks/multikueue/multikueuecluster.go`
(`updateConfigAndRefreshWatchers`, `establishWatcher`, `startWatcher`, `handleWatchEvent`,
`queueWatchEndedEvent`, `StopWatchers`) and `remote_client.go` (`selectivelyCachingClient`). A list
stands in for "the watch is established".
"""

from __future__ import annotations

import copy
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
from webhook.worker.store import Store, object_key

__all__ = ["JOIN_TIMEOUT_S", "KubeFactory", "RemoteClient", "RemoteCluster", "WatchedKind"]

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


def _locate(path: str) -> tuple[str, str] | None:
    """(the cluster-wide collection path, the `namespace/name` key) of an object's REST path, its
    `status` subresource included; None for any other path."""
    parts = path.strip("/").split("/")
    group = parts[:2] if parts[:1] == ["api"] else parts[:3]
    rest = parts[len(group) :]
    namespace = ""
    if len(rest) >= 4 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) == 3 and rest[2] == "status":
        rest = rest[:2]
    if len(rest) != 2 or not all(rest):
        return None
    return "/" + "/".join([*group, rest[0]]), f"{namespace}/{rest[1]}" if namespace else rest[1]


class RemoteClient:
    """A connected worker as the reconcilers reach it (`selectivelyCachingClient`): `get` of an
    object of a watched collection answers from the watches' `Store` (a copy: callers may change
    it); every other read and every write goes to `kube`, and an object a write answers is kept,
    so the next reconcile sees its own create or update before the watch event arrives."""

    def __init__(self, kube: k.Kube, cache: Store, watched: frozenset[str]) -> None:
        self.kube = kube
        self._cache = cache
        self._watched = watched

    def _cached(self, path: str) -> tuple[str, str] | None:
        located = _locate(path)
        return located if located is not None and located[0] in self._watched else None

    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None:
        located = self._cached(path)
        if located is None:
            return self.kube.get(path, timeout=timeout)
        obj = self._cache.get(*located)
        return copy.deepcopy(obj) if obj is not None else None

    def list(self, path: str, *, query: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
        return self.kube.list(path, query=query)

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        created = self.kube.create(path, body, timeout=timeout)
        self._keep(f"{path}/{(created.get('metadata') or {}).get('name', '')}", created)
        return created

    def replace(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        replaced = self.kube.replace(path, body, timeout=timeout)
        self._keep(path, replaced)
        return replaced

    def delete(self, path: str, *, body: Mapping[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        """DELETE; an object gone at once (the answer is a Status, or the object without a
        `deletionTimestamp`) leaves the cache at once too, one still being deleted is kept."""
        answer = self.kube.delete(path, body=body, timeout=timeout)
        located = self._cached(path)
        if located is not None:
            if (answer.get("metadata") or {}).get("deletionTimestamp"):
                self._cache.put(located[0], copy.deepcopy(answer))
            else:
                self._cache.delete(*located)
        return answer

    def _keep(self, path: str, obj: dict[str, Any]) -> None:
        located = self._cached(path)
        if located is not None:
            self._cache.put(located[0], copy.deepcopy(obj))


class _Watches:
    """One connection attempt's informers: their stop event, threads, what they listed and heard
    (`cache`, by collection path) and the client reading it."""

    def __init__(self, kinds: int, kube: k.Kube, watched: frozenset[str]) -> None:
        self.cache = Store()
        self.client = RemoteClient(kube, self.cache, watched)
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
    def client(self) -> RemoteClient | None:
        """The client while connected; None otherwise (the cluster counts as unavailable)."""
        watches = self._watches
        return watches.client if watches is not None and self.state.connected else None

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
        watches = self._watches = _Watches(len(self._kinds), kube, frozenset(kind.path for kind in self._kinds))
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
            watches.cache.replace(kind.path, items)
            self._hold_or_deliver(watches, [(kind, item) for item in items])

        return on_list

    def _watcher(self, watches: _Watches, kind: WatchedKind) -> Callable[[str, dict[str, Any]], None]:
        def on_event(etype: str, obj: dict[str, Any]) -> None:
            if etype == "DELETED":
                watches.cache.delete(kind.path, object_key(obj), obj)
            else:
                watches.cache.put(kind.path, obj)
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
