"""History: usage, pending count and admission wait per ClusterQueue over time, sampled from the caches.

The dashboard samples its own watch caches rather than scraping the worker's /metrics: the
metrics live only in the leader's process behind their own TLS and RBAC, and restart with it,
while the caches already hold the same ClusterQueue status and every Workload's QuotaReserved
time. The series are kept in memory (a bounded ring per ClusterQueue) and drawn server-side as
SVG with pygal, with its tooltip script left out so a page never loads anything from elsewhere.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import pygal
from pygal.style import Style

from webhook.api import constants
from webhook.core.workload import WorkloadInfo
from webhook.dashboard.views import ClusterQueueRow

__all__ = ["STYLE", "History", "Sample", "render_svg"]

#: Samples kept per ClusterQueue (an hour at the default 10 s interval).
KEEP = 360

_SCRIPT = re.compile(r"<script\b.*?</script>", re.S)
STYLE = Style(
    background="transparent",
    plot_background="transparent",
    font_family="system-ui, sans-serif",
    colors=("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#4a5568"),
)


@dataclass(frozen=True, slots=True)
class Sample:
    at: datetime
    usage_percent: Mapping[str, float]  # "flavor/resource" → used as % of nominal
    pending: int
    admitted: int
    wait_seconds: float | None  # mean wait of the Workloads that got quota since the last sample


@dataclass(slots=True)
class History:
    """Ring buffers of samples per ClusterQueue; mutable, fed by one sampling task."""

    keep: int = KEEP
    series: dict[str, deque[Sample]] = field(default_factory=dict)
    _last: datetime | None = None

    def sample(self, rows: Iterable[ClusterQueueRow], workloads: Iterable[WorkloadInfo], now: datetime) -> None:
        """Record one sample per ClusterQueue at `now`."""
        waits: dict[str, list[float]] = {}
        for wl in workloads:
            c = wl.conditions.get(constants.WorkloadCondition.QUOTA_RESERVED)
            if c is None or c.status != "True" or c.last_transition_time is None or not wl.admission_cluster_queue:
                continue
            if (self._last is None or c.last_transition_time > self._last) and c.last_transition_time <= now:
                waits.setdefault(wl.admission_cluster_queue, []).append(
                    max(0.0, (c.last_transition_time - wl.creation).total_seconds())
                )
        seen = set()
        for row in rows:
            seen.add(row.name)
            usage = {
                f"{b.flavor}/{b.resource}": round(100 * b.used / b.nominal, 1) if b.nominal else 0.0 for b in row.bars
            }
            w = waits.get(row.name)
            ring = self.series.setdefault(row.name, deque(maxlen=self.keep))
            ring.append(Sample(now, usage, row.pending, row.admitted, sum(w) / len(w) if w else None))
        for gone in set(self.series) - seen:
            del self.series[gone]
        self._last = now

    def charts(self, cluster_queue: str) -> tuple[str, str]:
        """(usage chart, queue chart) of one ClusterQueue as inline SVG; empty strings without samples."""
        samples = list(self.series.get(cluster_queue, ()))
        if not samples:
            return "", ""
        usage = _chart(pygal.DateTimeLine, f"{cluster_queue}: usage, % of nominal quota")
        for key in sorted({k for s in samples for k in s.usage_percent}):
            usage.add(key, [(s.at, s.usage_percent.get(key)) for s in samples])
        queue = _chart(pygal.DateTimeLine, f"{cluster_queue}: workloads and admission wait (s)")
        queue.add("pending", [(s.at, s.pending) for s in samples])
        queue.add("admitted", [(s.at, s.admitted) for s in samples])
        waits = [(s.at, s.wait_seconds) for s in samples if s.wait_seconds is not None]
        if waits:  # pygal cannot scale an empty secondary axis
            queue.add("admission wait (s)", waits, secondary=True)
        return render_svg(usage), render_svg(queue)


def render_svg(chart: pygal.graph.graph.Graph) -> str:
    """The chart's SVG without the config script pygal always inlines (only its tooltips read it, and
    the page's Content-Security-Policy would block it anyway)."""
    return _SCRIPT.sub("", chart.render(is_unicode=True))


def _chart(kind: type[pygal.DateTimeLine], title: str) -> pygal.DateTimeLine:
    return kind(
        title=title,
        js=[],
        disable_xml_declaration=True,
        style=STYLE,
        width=640,
        height=260,
        show_dots=False,
        x_value_formatter=lambda d: d.strftime("%H:%M:%S"),
        legend_at_bottom=True,
        legend_font_size=10,
        title_font_size=12,
        allow_interruptions=True,
        explicit_size=True,
    )
