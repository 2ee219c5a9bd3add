"""Upstream v0.19.2 `pkg/controller/workloaddispatcher/incrementaldispatcher_test.go`, case by case
under upstream's names, against the pure incremental dispatcher (`admissionchecks.multikueue.dispatch`).
Cluster names run anti-alphabetically, so the configured order and the sorted one differ."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from webhook.worker.admissionchecks.multikueue import dispatch

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
ALPHA = "ABCDEFGHIJKLMNO"


def rev(n: int) -> list[str]:
    return list(reversed(ALPHA[:n]))


NOMINATE_CASES = [
    # (name, remotes, nominated, step, respect order, round expired, want nominated, want error)
    ("one remote", ["A"], [], 3, True, False, ["A"], ""),
    ("two remotes", ["B", "A"], [], 3, True, False, ["B", "A"], ""),
    ("three remotes", rev(3), [], 3, True, False, rev(3), ""),
    ("fifteen remotes", rev(15), [], 3, True, False, ["O", "N", "M"], ""),
    ("all already nominated (3)", rev(3), rev(3), 3, True, True, rev(3), dispatch.NO_MORE_WORKERS),
    ("all already nominated (1)", ["A"], ["A"], 3, True, True, ["A"], dispatch.NO_MORE_WORKERS),
    ("round expired, next set nominated", rev(6), ["F", "E", "D"], 3, True, True, rev(6), ""),
    ("round in progress, keep current", rev(6), ["F", "E", "D"], 3, True, False, ["F", "E", "D"], ""),
    ("round expired, nominate all", rev(8), rev(8)[:6], 3, True, True, rev(8), ""),
    ("no remotes", [], [], 3, True, False, [], dispatch.NO_MORE_WORKERS),
    ("stepSize=2, five remotes — first batch is exactly 2", rev(5), [], 2, True, False, ["E", "D"], ""),
    ("stepSize=2, round expired — second batch is next 2", rev(5), ["E", "D"], 2, True, True, rev(5)[:4], ""),
    ("ordering gate off: three remotes nominated alphabetically", rev(3), [], 3, False, False, ["A", "B", "C"], ""),
    ("ordering gate off: first batch of fifteen is alphabetical", rev(15), [], 3, False, False, ["A", "B", "C"], ""),
    (
        "ordering gate off: prior nomination retained, remainder alphabetical",
        rev(6),
        ["F", "E", "D"],
        3,
        False,
        True,
        ["F", "E", "D", "A", "B", "C"],
        "",
    ),
    ("ordering gate off: stepSize=2 first batch is alphabetical", rev(5), [], 2, False, False, ["A", "B"], ""),
]


@pytest.mark.parametrize(
    ("remotes", "nominated", "step", "respect_order", "expired", "want", "error"),
    [pytest.param(*case[1:], id=case[0]) for case in NOMINATE_CASES],
)
def test_incremental_dispatcher_nominate_workers(
    remotes: list[str],
    nominated: list[str],
    step: int,
    respect_order: bool,
    expired: bool,
    want: list[str],
    error: str,
) -> None:
    """A workload with nominations is in a round that started at NOW (or 6 minutes before: expired)."""
    started = None if not nominated else NOW - (timedelta(minutes=6) if expired else timedelta(0))
    got = dispatch.plan_round(nominated, remotes, step=step, respect_order=respect_order, started=started, now=NOW)
    assert got.error == error
    assert list(got.nominate if got.nominate is not None else nominated) == want
    if nominated and not expired:
        assert got.wait == dispatch.ROUND_TIMEOUT


def check(state: str) -> dict[str, Any]:
    return {"name": "ac1", "state": state}


@pytest.mark.parametrize(
    ("acs", "cluster", "elastic", "skip"),
    [
        pytest.param(None, None, False, True, id="admission check nil"),
        pytest.param(check("Rejected"), None, False, True, id="admission check is rejected"),
        pytest.param(check("Ready"), None, False, True, id="admission check is ready"),
        pytest.param(check("Pending"), "worker1", False, True, id="already assigned to cluster"),
        pytest.param(check("Pending"), "worker1", True, False, id="elastic slice stays nominated"),
        pytest.param(check("Pending"), None, False, False, id="workload has quota reserved"),
    ],
)
def test_incremental_dispatcher_reconcile_skips(
    acs: dict[str, Any] | None, cluster: str | None, elastic: bool, skip: bool
) -> None:
    wl: dict[str, Any] = {"status": {} if cluster is None else {"clusterName": cluster}}
    assert dispatch.skip_nomination(acs, wl, elastic=elastic) is skip
