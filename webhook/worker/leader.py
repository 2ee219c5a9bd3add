"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules.

Mirrors `k8s.io/client-go/tools/leaderelection` (`tryAcquireOrRenew`, `renew`, `release`) as
configured by Kueue's manager (`cmd/kueue/main.go`, `leaderElection` of the Configuration): lease
15 s, renew deadline 10 s, retry 2 s, release on a clean stop. A lease held by someone else counts
as valid until `leaseDurationSeconds` after *we* last saw its record change (local clock only, so
clock skew between replicas does not matter).

`holds_lease()` is the split-brain guard: a process that was paused (SIGSTOP, a long GC, a
starved VM) past its renew deadline may already have been replaced while its threads still hold
decisions in hand. Writers ask it before every write; it answers from the local monotonic clock
only, counting from the start of the last successful renew, so no API round trip is needed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from webhook import kube as k

__all__ = ["LeaderElector", "LeaseClient", "LeaseSettings"]

log = logging.getLogger(__name__)


class LeaseClient(Protocol):
    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None: ...

    def create(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]: ...

    def replace(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    namespace: str
    name: str
    identity: str
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0


def _micro_time(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """`run()` blocks until leadership is acquired, then calls `on_started`, then renews until
    leadership is lost (returns False) or `stop` is set (releases the lease, returns True)."""

    def __init__(
        self, client: LeaseClient, settings: LeaseSettings, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.s = settings
        self._clock = clock
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._rv = ""
        self._renewed_at: float | None = None  # clock when the last successful attempt *started*
        self.is_leader = False

    @property
    def _path(self) -> str:
        return k.object_path("coordination.k8s.io/v1", "leases", self.s.namespace, self.s.name)

    def _record(self, lease: dict[str, Any] | None) -> dict[str, Any]:
        return dict((lease or {}).get("spec") or {})

    def holds_lease(self) -> bool:
        """True while no other replica can have acquired the lease: less than the renew deadline
        (itself shorter than the lease duration) since our last successful renew began."""
        started = self._renewed_at
        return self.is_leader and started is not None and self._clock() - started < self.s.renew_deadline_s

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the lease afterwards."""
        started = self._clock()
        ok = self._attempt()
        if ok:
            self._renewed_at = started
        return ok

    def _attempt(self) -> bool:
        now_wall = datetime.now(UTC)
        try:
            lease = self.client.get(self._path)
        except k.KubeError as exc:
            log.warning(
                "cannot read the leader lease", extra={"object": f"{self.s.namespace}/{self.s.name}", "error": str(exc)}
            )
            return False
        spec: dict[str, Any] = {
            "holderIdentity": self.s.identity,
            "leaseDurationSeconds": int(self.s.lease_duration_s),
            "acquireTime": _micro_time(now_wall),
            "renewTime": _micro_time(now_wall),
            "leaseTransitions": 0,
        }
        if lease is None:
            try:
                created = self.client.create(
                    k.object_path("coordination.k8s.io/v1", "leases", self.s.namespace),
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": self.s.name, "namespace": self.s.namespace},
                        "spec": spec,
                    },
                )
            except k.KubeError:
                return False
            self._observe(created)
            return True
        old = self._record(lease)
        if old != (self._observed or {}).get("spec"):
            self._observe(lease)
        holder = old.get("holderIdentity") or ""
        valid = self._observed_at + self.s.lease_duration_s > self._clock()
        if holder and holder != self.s.identity and valid:
            return False
        if holder == self.s.identity:
            spec["acquireTime"] = old.get("acquireTime") or spec["acquireTime"]
            spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0)
        else:
            spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        body = {**lease, "spec": spec}
        try:
            updated = self.client.replace(self._path, body)
        except k.KubeError:
            return False
        self._observe(updated)
        return True

    def _observe(self, lease: dict[str, Any]) -> None:
        self._observed = {"spec": self._record(lease)}
        self._observed_at = self._clock()
        self._rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")

    def release(self) -> None:
        """Give the lease up at once so a standby need not wait for it to lapse."""
        if not self.is_leader:
            return
        try:
            lease = self.client.get(self._path)
            if lease is None or self._record(lease).get("holderIdentity") != self.s.identity:
                return
            now = _micro_time(datetime.now(UTC))
            spec = {
                **self._record(lease),
                "holderIdentity": None,
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
            }
            self.client.replace(self._path, {**lease, "spec": spec})
            log.info("released the leader lease", extra={"object": f"{self.s.namespace}/{self.s.name}"})
        except k.KubeError as exc:
            log.warning("cannot release the leader lease", extra={"error": str(exc)})
        self.is_leader = False

    def run(self, on_started: Callable[[], None], *, stop: threading.Event) -> bool:
        while not stop.is_set():
            if self.try_acquire_or_renew():
                break
            stop.wait(self.s.retry_period_s)
        if stop.is_set():
            return True
        self.is_leader = True
        log.info(
            "acquired the leader lease",
            extra={"object": f"{self.s.namespace}/{self.s.name}", "identity": self.s.identity},
        )
        on_started()
        while not stop.wait(self.s.retry_period_s):
            if not self.try_acquire_or_renew() and not self.holds_lease():
                self.is_leader = False
                log.error("lost the leader lease", extra={"object": f"{self.s.namespace}/{self.s.name}"})
                return False
        self.release()
        return True
