"""A Workload's preemption gates: `spec.preemptionGates` names them, `status.preemptionGates` holds
each one's position (Open or Closed) and when it moved. A gate only in the spec counts as closed, so a
Workload can be created gated at once. Used by ConcurrentAdmission (its variants' gate) and MultiKueue's
orchestrated preemption (the gate on each remote copy, opened one worker at a time).

Mirrors upstream v0.19.2 `pkg/workload/workload.go` (`SetPreemptionGatePosition`, `OpenPreemptionGate`,
`FindPreemptionGate`) and `pkg/controller/core/workload_controller.go` (`syncPreemptionGateStates`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from webhook.api.objects import Obj

__all__ = ["OPEN", "gate_state", "open_gate", "sync_gate_states"]

OPEN = "Open"
_CLOSED = "Closed"


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def gate_state(obj: Obj, gate: str) -> Obj | None:
    """`FindPreemptionGate`: `gate`'s entry of `status.preemptionGates`, if any."""
    return next((g for g in (obj.get("status") or {}).get("preemptionGates") or () if g.get("name") == gate), None)


def open_gate(status: dict[str, Any], obj: Obj, gate: str, now: datetime) -> None:
    """`OpenPreemptionGate` for `gate` on `status` (of `obj`), if the spec lists it."""
    if not any(g.get("name") == gate for g in (obj.get("spec") or {}).get("preemptionGates") or ()):
        return
    gates: list[dict[str, Any]] = status.setdefault("preemptionGates", [])
    for g in gates:
        if g.get("name") == gate:
            g.update(position=OPEN, lastTransitionTime=_stamp(now))
            return
    gates.append({"name": gate, "position": OPEN, "lastTransitionTime": _stamp(now)})


def sync_gate_states(status: dict[str, Any], obj: Obj, now: datetime) -> bool:
    """`syncPreemptionGateStates`: drop the states of gates no longer in the spec and add a Closed state
    for each new one; True when `status` changed."""
    names = [str(g.get("name")) for g in (obj.get("spec") or {}).get("preemptionGates") or ()]
    states: list[dict[str, Any]] = list(status.get("preemptionGates") or ())
    kept = [s for s in states if s.get("name") in names]
    changed = len(kept) != len(states)
    known = {s.get("name") for s in kept}
    for name in names:
        if name not in known:
            kept.append({"name": name, "position": _CLOSED, "lastTransitionTime": _stamp(now)})
            known.add(name)
            changed = True
    if changed:
        if kept:
            status["preemptionGates"] = kept
        else:
            status.pop("preemptionGates", None)
    return changed
