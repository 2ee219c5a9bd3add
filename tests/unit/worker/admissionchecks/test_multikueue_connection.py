"""A worker cluster's connection bookkeeping and its MultiKueueCluster condition: upstream v0.19.2
`TestReconnectBackoff`, `TestDisconnectedClientReconnectsWithSameConfig`,
`TestConnectionStateTransitions` and `TestEstablishBackoffSchedule`
(`pkg/controller/admissionchecks/multikueue/multikueuecluster_test.go`) under their case names,
then the `Active` condition `clustersReconciler.Reconcile` writes."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api import multikueue as mk
from webhook.worker.admissionchecks.multikueue import connection as conn
from webhook.worker.admissionchecks.multikueue.kubeconfig import ClientConfig, LoadError

CONFIG = ClientConfig({"current-context": "worker1"})


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def reconcile(state: conn.ConnectionState, config: object, *, connects: bool) -> tuple[int, float]:
    """One cluster reconcile as upstream's `setRemoteClientConfig` + `Reconcile` drive the remote
    client: (builder calls, requeue-after seconds). A failed attempt stops the watches and marks
    the client disconnected (`disconnectCluster`)."""
    attempt = state.begin(config)
    if attempt.step is conn.Step.WAIT:
        return 0, attempt.wait_s
    if attempt.step is conn.Step.KEEP:
        return 0, 0.0
    if connects:
        state.connected_now()
        return 1, 0.0
    delay = state.failed()
    state.lost()
    return 1, delay


# -- TestReconnectBackoff -----------------------------------------------------------------------------

# (advance seconds, builder calls, failed attempts, requeue after seconds)
_Step = tuple[float, int, int, float]


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param(
            [(0, 1, 1, 5), (0, 0, 1, 5), (2, 0, 1, 3)],
            id="double reconcile within backoff window does not advance attempts",
        ),
        pytest.param(
            [(0, 1, 1, 5), (5, 1, 2, 10), (10, 1, 3, 20)],
            id="backoff progresses once window elapses",
        ),
        pytest.param(
            [(0, 1, 1, 5), (0, 0, 1, 5), (5, 1, 2, 10), (0, 0, 2, 10), (10, 1, 3, 20)],
            id="deferred reconciles between failures do not consume backoff slots",
        ),
        pytest.param(
            [
                (0, 1, 1, 5),
                (5, 1, 2, 10),
                (10, 1, 3, 20),
                (20, 1, 4, 40),
                (40, 1, 5, 80),
                (80, 1, 6, 160),
                (160, 1, 7, 320),
                (320, 1, 8, 320),
            ],
            id="backoff saturates at retryMaxSteps",
        ),
    ],
)
def test_reconnect_backoff(steps: list[_Step]) -> None:
    """Upstream `TestReconnectBackoff`: a worker whose watches cannot be opened."""
    clock = Clock()
    state = conn.ConnectionState(clock)
    for i, (advance, want_calls, want_failures, want_requeue) in enumerate(steps):
        clock.now += advance
        calls, requeue = reconcile(state, CONFIG, connects=False)
        assert (calls, state.failures, requeue) == (want_calls, want_failures, want_requeue), f"step {i}"


def test_disconnected_client_reconnects_with_same_config() -> None:
    """Upstream `TestDisconnectedClientReconnectsWithSameConfig`: a client whose watch ended is
    rebuilt by the next reconcile even though its config did not change."""
    clock = Clock()
    state = conn.ConnectionState(clock)
    assert reconcile(state, CONFIG, connects=True) == (1, 0.0)
    assert reconcile(state, CONFIG, connects=True) == (0, 0.0)  # connected, same config: kept
    assert state.lost()
    assert reconcile(state, CONFIG, connects=True) == (1, 0.0)
    assert state.connected


def test_connection_state_transitions() -> None:
    """Upstream `TestConnectionStateTransitions`."""
    clock = Clock()
    created = clock.now
    state = conn.ConnectionState(clock)
    assert not state.connected
    assert state.lost_since == created  # the loss counts from creation
    clock.now += 5
    assert not state.lost(), "the initial disconnect is no transition"
    assert state.lost_since == created

    state.connected_now()
    assert state.connected and state.lost_since is None

    clock.now += 10
    dropped = clock.now
    assert state.lost(), "a drop from connected is the first of a streak"
    assert state.lost_since == dropped

    clock.now += 60
    assert not state.lost(), "a repeated drop while disconnected is no transition"
    assert state.lost_since == dropped, "the first drop's time is preserved"

    state.connected_now()
    assert state.connected and state.lost_since is None


# -- TestEstablishBackoffSchedule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failures", "want_s"),
    [
        pytest.param(0, 60, id="first attempt is initial"),
        pytest.param(1, 120, id="one failure doubles"),
        pytest.param(2, 240, id="two failures"),
        pytest.param(3, 480, id="three failures"),
        pytest.param(4, 600, id="four failures hits cap"),
        pytest.param(20, 600, id="many failures stay at cap"),
    ],
)
def test_establish_backoff_schedule(failures: int, want_s: float) -> None:
    """Upstream `TestEstablishBackoffSchedule`."""
    assert conn.establish_timeout(failures) == want_s


def test_each_attempt_bounds_its_watches_by_the_failures_so_far() -> None:
    clock = Clock()
    state = conn.ConnectionState(clock)
    assert state.establish_timeout() == 60
    reconcile(state, CONFIG, connects=False)
    clock.now += 5
    assert state.begin(CONFIG).step is conn.Step.CONNECT
    assert state.establish_timeout() == 120


@pytest.mark.parametrize(
    ("failures", "want_s"),
    [(0, 0), (1, 5), (2, 10), (3, 20), (4, 40), (5, 80), (6, 160), (7, 320), (8, 320), (100, 320)],
)
def test_retry_after(failures: int, want_s: float) -> None:
    """`retryAfter`: "between 0 to 5m20s"."""
    assert conn.retry_after(failures) == want_s


def test_a_changed_config_is_tried_at_once_with_a_fresh_failure_count() -> None:
    clock = Clock()
    state = conn.ConnectionState(clock)
    for _ in range(3):
        reconcile(state, CONFIG, connects=False)
        clock.now += conn.retry_after(state.failures)
    assert state.failures == 3
    assert reconcile(state, CONFIG, connects=False) == (1, 40)
    other = ClientConfig({"current-context": "worker1-rotated"})
    assert state.begin(other) == conn.Attempt(conn.Step.CONNECT)
    assert state.failures == 0
    state.connected_now()
    assert state.begin(other) == conn.Attempt(conn.Step.KEEP)
    assert state.begin(CONFIG) == conn.Attempt(conn.Step.CONNECT), "a connected client follows a config change"


def test_a_watch_still_being_opened_defers_without_counting_a_failure() -> None:
    clock = Clock()
    state = conn.ConnectionState(clock)
    assert state.begin(CONFIG).step is conn.Step.CONNECT
    assert state.deferred() == 5
    state.lost()
    clock.now += 2
    assert state.begin(CONFIG) == conn.Attempt(conn.Step.WAIT, 3)
    assert state.failures == 0
    clock.now += 3
    assert state.begin(CONFIG).step is conn.Step.CONNECT


# -- the MultiKueueCluster's Active condition ---------------------------------------------------------

CLUSTER = {"metadata": {"name": "worker1", "generation": 3}}


@pytest.mark.parametrize(
    ("kwargs", "want"),
    [
        pytest.param(
            {},
            {"status": "True", "reason": "Active", "message": "Connected"},
            id="connected",
        ),
        pytest.param(
            {"load_error": LoadError(mk.ClusterReason.BAD_KUBECONFIG, 'secrets "worker1" not found', not_found=True)},
            {
                "status": "False",
                "reason": "BadKubeConfig",
                "message": 'load client config failed: secrets "worker1" not found',
            },
            id="load error",
        ),
        pytest.param(
            {"load_error": LoadError(mk.ClusterReason.INSECURE_KUBECONFIG, "tokenFile is not allowed")},
            {
                "status": "False",
                "reason": "InsecureKubeConfig",
                "message": "load client config failed: tokenFile is not allowed",
            },
            id="insecure kubeconfig",
        ),
        pytest.param(
            {"connection_error": "dial tcp 10.10.10.10:443: connect: connection refused"},
            {
                "status": "False",
                "reason": "ClientConnectionFailed",
                "message": "dial tcp 10.10.10.10:443: connect: connection refused",
            },
            id="client connection failed",
        ),
    ],
)
def test_cluster_condition(kwargs: dict[str, Any], want: dict[str, str]) -> None:
    assert conn.cluster_condition(CLUSTER, **kwargs) == {"type": "Active", **want, "observedGeneration": 3}


def test_a_condition_is_written_only_when_its_state_changes() -> None:
    """`cmpConditionState`: status, reason and message; a new generation alone writes nothing."""
    current = {"type": "Active", "status": "True", "reason": "Active", "message": "Connected", "observedGeneration": 1}
    cluster = {"metadata": {"generation": 2}, "status": {"conditions": [current]}}
    assert not conn.condition_changed(cluster, conn.cluster_condition(cluster))
    failed = conn.cluster_condition(cluster, connection_error="timed out")
    assert conn.condition_changed(cluster, failed)
    assert conn.condition_changed({"metadata": {}}, conn.cluster_condition(cluster))
