"""A worker cluster's connection: when to (re)connect, how long to back off, and what the
MultiKueueCluster's `Active` condition says about it.

`ConnectionState` keeps one remote client's bookkeeping with the clock passed in. A reconcile of
the cluster (upstream `updateConfigAndRefreshWatchers`) runs:

1. `begin(config)`: `KEEP` when the config is unchanged and the client connected; `WAIT(s)` while a
   disconnected client's backoff has not elapsed; else `CONNECT` (a changed config resets the
   failure count first, so it is tried at once).
2. On `CONNECT`, stop the old watches and open new ones, each bounded by `establish_timeout()`;
   then `connected_now()` once every watch is up, or `failed()` (the requeue delay) and `lost()`
   with the watches stopped, or `deferred()` while an earlier attempt still opens a watch.

A watch that ends on its own calls `lost()`; the first loss of a streak records `lost_since`,
which only a full reconnect clears, so the worker-lost timeout counts from the first loss.

Mirrors upstream v0.19.2 `retryAfter`, `establishBackoff`, `connectionState`, `remoteClient`'s
failed-attempt fields and `clustersReconciler.Reconcile`/`updateStatus`
(`pkg/controller/admissionchecks/multikueue/multikueuecluster.go`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from webhook.api import multikueue as mk
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.worker.admissionchecks.multikueue.kubeconfig import LoadError

__all__ = [
    "ESTABLISH_IN_PROGRESS_RETRY_S",
    "Attempt",
    "ConnectionState",
    "Step",
    "cluster_condition",
    "condition_changed",
    "establish_timeout",
    "retry_after",
]

_RETRY_INCREMENT_S = 5.0
_RETRY_MAX_STEPS = 7
_INITIAL_ESTABLISH_S = 60.0
_MAX_ESTABLISH_S = 600.0
ESTABLISH_IN_PROGRESS_RETRY_S = _RETRY_INCREMENT_S
"""How long a reconcile defers while a previous attempt is still opening a watch (`deferConnAttempt`)."""


def retry_after(failures: int) -> float:
    """Seconds before the next connection attempt after `failures` failed ones in a row:
    5 s * 2^(min(n, 7) - 1), that is 5, 10, 20, ... 320 s; 0 without a failure (`retryAfter`)."""
    if failures <= 0:
        return 0.0
    return float(2 ** (min(failures, _RETRY_MAX_STEPS) - 1)) * _RETRY_INCREMENT_S


def establish_timeout(failures: int) -> float:
    """How long opening one watch may take after `failures` failed attempts: 1, 2, 4, 8, then
    10 minutes (`establishBackoff.WaitTime(failures+1)`)."""
    return min(_INITIAL_ESTABLISH_S * 2.0 ** max(failures, 0), _MAX_ESTABLISH_S)


class Step(StrEnum):
    KEEP = "Keep"
    """Same config and connected: nothing to do."""
    WAIT = "Wait"
    """Disconnected and the backoff has not elapsed: requeue after `Attempt.wait_s`."""
    CONNECT = "Connect"
    """Build the client and establish its watches now."""


@dataclass(frozen=True, slots=True)
class Attempt:
    step: Step
    wait_s: float = 0.0


class ConnectionState:
    """One remote client's connection bookkeeping (thread-safe: the watch threads report losses
    while a reconcile decides). It starts disconnected, its loss counted from creation, so a worker
    that is down when the manager starts still reaches its worker-lost timeout (`newRemoteClient`)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._config: object = None
        self._connected = False
        self._lost_since: float | None = clock()
        self._failures = 0
        self._next_attempt: float | None = None

    @property
    def connected(self) -> bool:
        with self._lock:
            return self._connected

    @property
    def lost_since(self) -> float | None:
        """When the client last lost its connection (or was created, if it never had one); None while connected."""
        with self._lock:
            return self._lost_since

    @property
    def failures(self) -> int:
        with self._lock:
            return self._failures

    def begin(self, config: object) -> Attempt:
        """What a reconcile with this config must do (step 1 of the module docstring)."""
        with self._lock:
            changed = config != self._config
            if not changed and self._connected:
                return Attempt(Step.KEEP)
            if changed:
                self._config = config
                self._failures, self._next_attempt = 0, None
            if not self._connected and self._next_attempt is not None:
                remaining = self._next_attempt - self._clock()
                if remaining > 0:
                    return Attempt(Step.WAIT, remaining)
            return Attempt(Step.CONNECT)

    def establish_timeout(self) -> float:
        """The bound on opening each watch of this attempt."""
        with self._lock:
            return establish_timeout(self._failures)

    def connected_now(self) -> None:
        """Every watch is up: connected, the loss forgotten, the failure count reset (`markConnected`)."""
        with self._lock:
            self._connected, self._lost_since = True, None
            self._failures, self._next_attempt = 0, None

    def lost(self) -> bool:
        """The connection dropped or an attempt failed; True when it was connected until now, the
        first loss of a streak, whose time is kept (`markDisconnected`)."""
        with self._lock:
            was_connected = self._connected
            self._connected = False
            if self._lost_since is None:
                self._lost_since = self._clock()
            return was_connected

    def failed(self) -> float:
        """An attempt failed: one more failure, and the seconds until the next attempt (`increaseFailedConnAttempt`)."""
        with self._lock:
            self._failures += 1
            delay = retry_after(self._failures)
            self._next_attempt = self._clock() + delay
            return delay

    def deferred(self) -> float:
        """A watch of an earlier attempt is still being opened: retry after a short, fixed delay
        that does not count as a failure (`deferConnAttempt`)."""
        with self._lock:
            self._next_attempt = self._clock() + ESTABLISH_IN_PROGRESS_RETRY_S
            return ESTABLISH_IN_PROGRESS_RETRY_S


def cluster_condition(
    cluster: Obj, *, load_error: LoadError | None = None, connection_error: str | None = None
) -> dict[str, Any]:
    """The MultiKueueCluster's `Active` condition: False with the load reason and
    `load client config failed: <err>`, False `ClientConnectionFailed` with the connection error,
    else True `Active`/`Connected` (`clustersReconciler.Reconcile`, `updateStatus`)."""
    status, reason, message = "True", str(mk.ClusterReason.ACTIVE), mk.MSG_CONNECTED
    if load_error is not None:
        status, reason, message = "False", str(load_error.reason), f"load client config failed: {load_error.message}"
    elif connection_error is not None:
        status, reason, message = "False", str(mk.ClusterReason.CLIENT_CONNECTION_FAILED), connection_error
    return {
        "type": mk.CLUSTER_ACTIVE,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": int(o.meta(cluster).get("generation") or 0),
    }


def condition_changed(obj: Obj, new: Obj) -> bool:
    """Whether writing `new` changes the object's condition of that type: its status, reason or
    message differ (`cmpConditionState`); a new observedGeneration alone is not written."""
    old = o.find_condition(obj, str(new["type"]))
    if old is None:
        return True
    return any(old.get(key) != new.get(key) for key in ("status", "reason", "message"))
