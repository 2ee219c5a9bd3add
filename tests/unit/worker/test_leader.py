"""Leader election against an in-memory Lease store with resourceVersion preconditions, as the API
server enforces them: who acquires, who waits, takeover after expiry, and the split-brain guard."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from webhook import kube as k
from webhook.config import Configuration
from webhook.worker.leader import LeaderElector, LeaseSettings
from webhook.worker.manager import Manager, StatusWrite
from webhook.worker.process import HEALTHY_RUN_S, MAX_BACKOFF_S, MIN_BACKOFF_S, next_backoff

PATH = k.object_path("coordination.k8s.io/v1", "leases", "kueue-system", "lease")


class Leases:
    """One Lease object with optimistic concurrency (409 on a stale resourceVersion)."""

    def __init__(self) -> None:
        self.obj: dict[str, Any] | None = None
        self.rv = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise k.KubeError(503, "apiserver unavailable")

    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None:
        self._check()
        return copy.deepcopy(self.obj)

    def create(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        self._check()
        if self.obj is not None:
            raise k.KubeError(409, "exists")
        return self._store(body)

    def replace(self, path: str, body: Any, *, timeout: float = 30) -> dict[str, Any]:
        self._check()
        assert self.obj is not None
        if body["metadata"].get("resourceVersion") != self.obj["metadata"]["resourceVersion"]:
            raise k.KubeError(409, "conflict")
        return self._store(body)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.obj = copy.deepcopy(body)
        self.obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.obj)

    @property
    def holder(self) -> str | None:
        return None if self.obj is None else self.obj["spec"].get("holderIdentity")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def elector(store: Leases, clock: Clock, identity: str) -> LeaderElector:
    settings = LeaseSettings(
        "kueue-system", "lease", identity, lease_duration_s=15, renew_deadline_s=10, retry_period_s=2
    )
    return LeaderElector(store, settings, clock=clock)


def test_first_comer_acquires_and_the_other_waits_for_expiry() -> None:
    store, clock = Leases(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert a.try_acquire_or_renew()
    assert store.holder == "a"
    assert not b.try_acquire_or_renew()
    clock.t += 14  # b saw the record 14 s ago: still valid
    assert not b.try_acquire_or_renew()
    clock.t += 1.5
    assert b.try_acquire_or_renew()
    assert store.holder == "b"
    assert store.obj is not None and store.obj["spec"]["leaseTransitions"] == 1


def test_renewals_keep_the_lease_and_reset_the_standby_timer() -> None:
    store, clock = Leases(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert a.try_acquire_or_renew()
    for _ in range(10):
        assert not b.try_acquire_or_renew()
        clock.t += 5
        assert a.try_acquire_or_renew()
    assert store.holder == "a"


def test_guard_turns_false_after_the_renew_deadline_without_a_renewal() -> None:
    store, clock = Leases(), Clock()
    a = elector(store, clock, "a")
    assert a.try_acquire_or_renew()
    a.is_leader = True
    assert a.holds_lease()
    clock.t += 9.9
    assert a.holds_lease()
    store.down = True  # renewals fail: the guard counts from the last success
    assert not a.try_acquire_or_renew()
    clock.t += 0.2
    assert not a.holds_lease()


def test_paused_leader_stops_writing_and_a_standby_takes_over() -> None:
    """A SIGSTOPped leader resumes after the standby took the lease: its guard is already false
    before it even talks to the API server, and its next attempt fails on the standby's record."""
    store, clock = Leases(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert a.try_acquire_or_renew()
    a.is_leader = True
    assert not b.try_acquire_or_renew()
    clock.t += 16  # a is paused; b's view of the record expires
    assert b.try_acquire_or_renew()
    assert not a.holds_lease()
    assert not a.try_acquire_or_renew()
    assert store.holder == "b"


def test_run_returns_false_when_leadership_is_lost() -> None:
    store, clock = Leases(), Clock()
    settings = LeaseSettings(
        "kueue-system", "lease", "a", lease_duration_s=15, renew_deadline_s=10, retry_period_s=0.01
    )
    a = LeaderElector(store, settings, clock=clock)
    started = threading.Event()

    def on_started() -> None:
        started.set()
        store.down = True  # every renewal fails from now on
        clock.t += 11

    assert a.run(on_started, stop=threading.Event()) is False
    assert started.is_set() and not a.is_leader and not a.holds_lease()


def test_release_lets_a_standby_acquire_without_waiting_out_the_lease() -> None:
    store, clock = Leases(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert a.try_acquire_or_renew()
    a.is_leader = True
    assert not b.try_acquire_or_renew()
    a.release()
    assert store.holder is None and not a.holds_lease()
    assert b.try_acquire_or_renew()
    assert store.holder == "b"


@pytest.mark.parametrize(
    ("previous", "code", "ran", "expected"),
    [
        (MIN_BACKOFF_S, 1, 1.0, 2 * MIN_BACKOFF_S),  # crash loop: doubles
        (MAX_BACKOFF_S, 1, 1.0, MAX_BACKOFF_S),  # capped
        (MAX_BACKOFF_S, 1, HEALTHY_RUN_S, MIN_BACKOFF_S),  # lost the lease after a long run: at once
        (4.0, 0, 1.0, MIN_BACKOFF_S),  # clean exit
    ],
)
def test_supervisor_backoff(previous: float, code: int, ran: float, expected: float) -> None:
    assert next_backoff(previous, code, ran) == expected


def test_manager_drops_writes_once_the_lease_is_not_held() -> None:
    """The worker side of the guard: no status PUT leaves a process whose lease lapsed."""
    calls: list[str] = []

    class NoAPI:
        def __getattr__(self, name: str) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                calls.append(name)
                raise AssertionError(f"API call {name} after the lease lapsed")

            return call

    held = [True]
    stop = threading.Event()
    manager = Manager(NoAPI(), Configuration(), identity="a", stop=stop, holds_lease=lambda: held[0])  # type: ignore[arg-type]
    held[0] = False
    write = StatusWrite("workloads", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w", lambda status, obj: None)
    manager._write("workloads/ns/w", [write])
    assert calls == [] and stop.is_set()
