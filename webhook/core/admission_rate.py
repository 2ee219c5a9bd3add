"""An estimate of when a pending workload gets quota, from its ClusterQueue's recent admission rate.

Not an upstream API (upstream ask #13159). The method is deliberately simple, and every answer
says which it is: a ClusterQueue that reserved quota for `n` workloads in the last `window` admits
`n / window`; a workload with `p` workloads ahead of it (its 0-based `positionInClusterQueue`) is
admitted as the `p + 1`-th next one, after `(p + 1) · window / n`. No admissions in the window
means no estimate (None, with the reason), never a guess.

Each reservation is counted once, at its QuotaReserved condition's lastTransitionTime, so every
replica counts the same admissions from the same objects whenever it started. A reservation is
known while its Workload exists: one deleted within the window before this process listed it is
not counted (a fresh replica may see a lower rate, never a higher one). The estimate assumes
the queue order holds and the rate stays; higher-priority arrivals, preemptions and a workload
too large for the free quota make it wrong, which is why the method is stated.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from webhook.core.workload import WorkloadInfo, WorkloadKey

__all__ = ["DEFAULT_WINDOW", "AdmissionRates", "Rate", "method"]

DEFAULT_WINDOW = timedelta(minutes=10)


def method(window: timedelta) -> str:
    """The method, in the words each answer carries."""
    return (
        f"admission rate: quota reservations in the ClusterQueue over the last {int(window.total_seconds())}s; "
        "estimate = (positionInClusterQueue + 1) / rate"
    )


@dataclass(frozen=True, slots=True)
class Rate:
    """The reservations of one ClusterQueue in the window that ends now."""

    admissions: int
    window: timedelta

    @property
    def per_minute(self) -> float:
        return self.admissions * 60 / self.window.total_seconds()

    def wait(self, position: int) -> timedelta | None:
        """Time until the workload at 0-based `position` gets quota; None without admissions."""
        if self.admissions == 0:
            return None
        return self.window * (position + 1) / self.admissions


class AdmissionRates:
    """Quota reservations per ClusterQueue within a sliding window. Not thread-safe."""

    def __init__(self, window: timedelta = DEFAULT_WINDOW) -> None:
        self.window = window
        # ClusterQueue -> (workload, reservation time) -> None; a requeued and readmitted
        # workload counts once per reservation.
        self._seen: dict[str, dict[tuple[WorkloadKey, datetime], None]] = {}
        self._pruned: datetime | None = None

    def observe(self, wl: WorkloadInfo, now: datetime) -> None:
        """Count the workload's reservation if it holds one made within the window."""
        at = wl.quota_reserved_time
        if at is not None and wl.admission_cluster_queue and at > now - self.window:
            self._seen.setdefault(wl.admission_cluster_queue, {})[(wl.key, at)] = None
        # Memory stays bounded by the admissions of about one window, whether or not anyone reads.
        if self._pruned is None or now - self._pruned > self.window / 10:
            self._pruned = now
            for name in list(self._seen):
                self._prune(name, now)

    def _prune(self, cluster_queue: str, now: datetime) -> dict[tuple[WorkloadKey, datetime], None]:
        seen = self._seen.get(cluster_queue, {})
        start = now - self.window
        for old in [k for k in seen if k[1] <= start]:
            del seen[old]
        if not seen:
            self._seen.pop(cluster_queue, None)
        return seen

    def rate(self, cluster_queue: str, now: datetime) -> Rate:
        """Reservations in `(now - window, now]`."""
        return Rate(sum(1 for k in self._prune(cluster_queue, now) if k[1] <= now), self.window)
