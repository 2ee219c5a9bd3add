"""Accessors over raw objects: defaults for missing parts, controller owner, conditions."""

from __future__ import annotations

from webhook.api import objects as o


def test_missing_parts_read_as_empty() -> None:
    obj: dict[str, object] = {"metadata": None}
    assert o.meta(obj) == {}
    assert o.labels(obj) == {} and o.annotations(obj) == {}
    assert (o.name(obj), o.namespace(obj), o.uid(obj), o.key(obj)) == ("", "", "", "/")
    assert o.controller_of(obj) is None and o.owner_references(obj) == ()
    assert not o.is_deleting(obj) and o.finalizers(obj) == ()


def test_controller_of_skips_plain_owners() -> None:
    ctrl = {"kind": "Job", "name": "b", "controller": True}
    obj = {"metadata": {"ownerReferences": [{"kind": "Job", "name": "a"}, ctrl]}}
    assert o.controller_of(obj) == ctrl


def test_workload_predicates() -> None:
    wl = {
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "False"},
                {"type": "Finished", "status": "True"},
            ]
        }
    }
    assert o.has_quota_reservation(wl) and not o.is_admitted(wl) and o.is_finished(wl)
    assert o.find_condition(wl, "Admitted") == {"type": "Admitted", "status": "False"}
    assert o.find_condition(wl, "Evicted") is None
