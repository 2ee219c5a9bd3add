"""The incremental dispatcher (`multiKueue.dispatcherName:
kueue.x-k8s.io/multikueue-dispatcher-incremental`): a Workload is nominated to a few workers at a
time instead of all at once, a few more each round, until one admits it.

A round nominates the next `stepSize` workers of the check's MultiKueueConfig not nominated yet
(by name, or in the config's order with MultiKueueIncrementalDispatcherRespectConfigOrder) and
lasts five minutes; the MultiKueue workload reconciler creates the copies on the nominated workers
(it takes the nominations as written for any dispatcher but AllAtOnce). Nothing is nominated once
the check leaves Pending or a cluster was chosen (an elastic slice excepted), nor for a Workload
finished or without quota.

Mirrors upstream v0.19.2 `pkg/controller/workloaddispatcher/incrementaldispatcher.go` and
`pkg/workload/workload.go:ShouldSkipClusterNomination`. Pure: the reconciler keeps the round start
times and writes `status.nominatedClusterNames`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from webhook.api import constants as c
from webhook.api.objects import Obj

__all__ = ["NO_MORE_WORKERS", "ROUND_TIMEOUT", "Round", "next_nominations", "plan_round", "skip_nomination"]

ROUND_TIMEOUT = timedelta(minutes=5)
"""How long one round's nominations stand before the next workers are added (`incrementalDispatcherRoundTimeout`)."""
NO_MORE_WORKERS = "no more workers to nominate"  # ErrNoMoreWorkers


def skip_nomination(check: Obj | None, wl: Obj, *, elastic: bool) -> bool:
    """`ShouldSkipClusterNomination`: no MultiKueue check, or not Pending; or a cluster already
    chosen, unless the Workload is an elastic slice (it stays on its cluster)."""
    if check is None or check.get("state") != c.CHECK_STATE_PENDING:
        return True
    if elastic:
        return False
    return (wl.get("status") or {}).get("clusterName") is not None


def next_nominations(nominated: Sequence[str], clusters: Sequence[str], step: int, *, respect_order: bool) -> list[str]:
    """`getNextNominatedWorkers`: up to `step` of `clusters` not in `nominated`, in the config's order
    or by name; empty when every worker was nominated already."""
    already = set(nominated)
    rest = [name for name in clusters if name not in already]
    if not respect_order:
        rest.sort()
    return rest[:step]


@dataclass(frozen=True, slots=True)
class Round:
    """What one reconcile does: the whole new `nominatedClusterNames` (None: no write), when to look
    again (None: on the next event), and the error upstream returns (retried with backoff)."""

    nominate: tuple[str, ...] | None = None
    wait: timedelta | None = None
    error: str = ""


def plan_round(
    nominated: Sequence[str],
    clusters: Sequence[str],
    *,
    step: int,
    respect_order: bool,
    started: datetime | None,
    now: datetime,
) -> Round:
    """`nominateWorkers`: while the current round lasts, wait for its end; then add the next workers
    to those nominated and start a new round."""
    if started is not None and now - started <= ROUND_TIMEOUT:
        return Round(wait=ROUND_TIMEOUT - (now - started))
    new = next_nominations(nominated, clusters, step, respect_order=respect_order)
    if not new:
        return Round(error=NO_MORE_WORKERS)
    return Round(nominate=(*nominated, *new), wait=ROUND_TIMEOUT)
