"""`webhook.worker.preemption_gates`: a Workload's preemption gate states follow its spec."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from webhook.worker import preemption_gates

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
STAMP = "2026-01-01T12:00:00Z"
BEFORE = "2026-01-01T11:00:00Z"


def _state(name: str, position: str = "Closed", at: str = BEFORE) -> dict[str, str]:
    return {"name": name, "position": position, "lastTransitionTime": at}


def test_states_follow_the_spec() -> None:
    """Upstream's workload_controller_test "should synchronize the status of preemption gates" (gate
    MultiKueueOrchestratedPreemption): a state without a spec gate goes, a spec gate without a state
    gets a Closed one, a matching state is kept as it is."""
    wl = {
        "spec": {"preemptionGates": [{"name": "synchronized"}, {"name": "desynchronized-status"}]},
        "status": {"preemptionGates": [_state("synchronized"), _state("desynchronized-spec")]},
    }
    status = copy.deepcopy(wl["status"])
    assert preemption_gates.sync_gate_states(status, wl, NOW)
    assert status["preemptionGates"] == [_state("synchronized"), _state("desynchronized-status", at=STAMP)]
    assert not preemption_gates.sync_gate_states(status, {**wl, "status": status}, NOW)


def test_no_gates_left_removes_the_field() -> None:
    wl = {"spec": {}, "status": {"preemptionGates": [_state("gone")]}}
    status = copy.deepcopy(wl["status"])
    assert preemption_gates.sync_gate_states(status, wl, NOW)
    assert "preemptionGates" not in status


def test_open_gate_only_for_a_spec_gate() -> None:
    wl = {"spec": {"preemptionGates": [{"name": "g"}]}, "status": {"preemptionGates": [_state("g")]}}
    status = copy.deepcopy(wl["status"])
    preemption_gates.open_gate(status, wl, "g", NOW)
    preemption_gates.open_gate(status, wl, "other", NOW)
    assert status["preemptionGates"] == [_state("g", "Open", STAMP)]
    assert preemption_gates.gate_state({"status": status}, "g") == _state("g", "Open", STAMP)
    assert preemption_gates.gate_state({"status": status}, "other") is None
