"""How far past wait estimates were from the admissions that followed.

Ours (issue 35). For each pending workload the first estimate made for it and the latest one are
kept; when its quota reservation is seen, the error of each is `actual - estimated` in seconds
(positive: later than promised). Errors are kept per ClusterQueue for the most recent `keep`
admissions, so the percentiles describe the estimator as it behaves now. A workload whose first
estimate was unknown counts as such, without an error. Kept in memory by whoever makes the
estimates: a restarted process starts with no history and with no estimates for workloads that
were already waiting (their admissions are not scored).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from webhook.core.wait_estimate import Estimate
from webhook.core.workload import WorkloadKey

__all__ = ["Accuracy", "EstimateLog", "Scored", "percentile"]

DEFAULT_KEEP = 500


@dataclass(frozen=True, slots=True)
class Scored:
    """One admission against its estimates: errors in seconds, None where the estimate was unknown."""

    cluster_queue: str
    first_error: float | None
    latest_error: float | None


@dataclass(frozen=True, slots=True)
class Accuracy:
    """A ClusterQueue's recent admissions: how many were scored, how many had no first estimate,
    and the 50th/90th percentiles of the absolute errors (None without one)."""

    admissions: int
    unknown: int
    first_p50: float | None
    first_p90: float | None
    latest_p50: float | None
    latest_p90: float | None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank `q`-th percentile (0 < q <= 100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


class EstimateLog:
    """First and latest estimate per pending workload, and scored admissions per ClusterQueue.
    Mutable; not thread-safe (its owner locks)."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        self.keep = keep
        self._first: dict[WorkloadKey, Estimate] = {}
        self._latest: dict[WorkloadKey, Estimate] = {}
        self._scored: dict[str, deque[Scored]] = {}

    def record(self, estimates: Mapping[WorkloadKey, Estimate]) -> None:
        """Estimates just made: the first one per workload stays, the latest is replaced."""
        for key, e in estimates.items():
            self._first.setdefault(key, e)
            self._latest[key] = e

    def first(self, key: WorkloadKey) -> Estimate | None:
        return self._first.get(key)

    def forget(self, key: WorkloadKey) -> None:
        """The workload left the queue without an admission seen (deleted, finished, deactivated)."""
        self._first.pop(key, None)
        self._latest.pop(key, None)

    def retain(self, keys: Collection[WorkloadKey]) -> None:
        """Forget every workload not in `keys` (for an owner that polls instead of seeing deletions)."""
        for key in [k for k in self._first if k not in keys]:
            self.forget(key)

    def admitted(self, key: WorkloadKey, cluster_queue: str, at: datetime) -> Scored | None:
        """Score the reservation at `at` against the workload's estimates; None if none was made."""
        first, latest = self._first.pop(key, None), self._latest.pop(key, None)
        if first is None or latest is None:
            return None
        scored = Scored(cluster_queue, _error(first, at), _error(latest, at))
        self._scored.setdefault(cluster_queue, deque(maxlen=self.keep)).append(scored)
        return scored

    def accuracy(self, cluster_queue: str) -> Accuracy:
        scored = self._scored.get(cluster_queue, ())
        first = [abs(s.first_error) for s in scored if s.first_error is not None]
        latest = [abs(s.latest_error) for s in scored if s.latest_error is not None]
        return Accuracy(
            admissions=len(scored),
            unknown=sum(1 for s in scored if s.first_error is None),
            first_p50=percentile(first, 50),
            first_p90=percentile(first, 90),
            latest_p50=percentile(latest, 50),
            latest_p90=percentile(latest, 90),
        )


def _error(e: Estimate, at: datetime) -> float | None:
    return None if e.at is None else (at - e.at).total_seconds()
