"""The usage page: resource-hours per team and hour, from the UsageRecords the leader keeps.

Ours (issue 35). The records (`webhook.core.usage`: one per hour, durable across leaders) are
watched like every other kind, so a page view costs no API call. A team is a namespace, a
LocalQueue (`namespace/name`) or a ClusterQueue; one resource is shown at a time, summed over
flavors, as a stacked bar per hour drawn server-side with pygal (as `history`), the largest
`TOP` teams each in their own colour and the rest as "others". The hour being written counts up
to its watermark, which the page states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygal

from webhook.core import usage
from webhook.dashboard.history import STYLE, render_svg

__all__ = ["BY", "TOP", "UsageView", "usage_view"]

#: `?by=` values and the record dimensions that name a team.
BY: Mapping[str, tuple[str, ...]] = {
    "namespace": ("namespace",),
    "localqueue": ("namespace", "localQueue"),
    "clusterqueue": ("clusterQueue",),
}
TOP = 8
MAX_HOURS = 14 * 24


@dataclass(frozen=True, slots=True)
class UsageView:
    """What the page shows: the choices made, each team's total over the span (largest first), the
    chart, and the span the records cover ("" without records)."""

    by: str
    resource: str
    resources: tuple[str, ...]
    hours: int
    unit: str
    totals: tuple[tuple[str, float], ...]
    chart: str
    covered: str


def _stamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%m-%d %H:%M")


def usage_view(records: Iterable[Mapping[str, Any]], *, by: str, resource: str, hours: int, now: int) -> UsageView:
    """The page for the last `hours` hours before `now` (seconds): teams by `by` (a key of `BY`,
    else namespace), one `resource` (else cpu when recorded, else the first recorded)."""
    by = by if by in BY else "namespace"
    hours = min(max(hours, 1), MAX_HOURS)
    ledgers = []
    for record in records:
        try:
            ledgers.append(usage.from_record(record))
        except ValueError:
            continue  # a malformed record is the CLI's to report; the page shows the rest
    since = now - hours * 3600
    ledgers = sorted((ledger for ledger in ledgers if ledger.end > since), key=lambda ledger: ledger.start)
    resources = tuple(sorted({key.resource for ledger in ledgers for key in ledger.totals}))
    if resource not in resources:
        resource = "cpu" if "cpu" in resources or not resources else resources[0]
    unit, per = usage.unit_of(resource)
    series: dict[str, dict[int, float]] = {}
    for ledger in ledgers:
        for group, amounts in usage.aggregate([ledger], BY[by]).items():
            value = sum(v for (_, res), v in amounts.items() if res == resource)
            if value:
                team = "/".join(group)
                series.setdefault(team, {})[ledger.start] = value / per / 3600
    totals = sorted(((team, sum(v.values())) for team, v in series.items()), key=lambda t: (-t[1], t[0]))
    covered = f"{_stamp(ledgers[0].start)} to {_stamp(max(x.watermark for x in ledgers))} UTC" if ledgers else ""
    return UsageView(
        by=by,
        resource=resource,
        resources=resources or ("cpu",),
        hours=hours,
        unit=unit,
        totals=tuple((team, round(total, 3)) for team, total in totals),
        chart=_chart([ledger.start for ledger in ledgers], series, [t for t, _ in totals], resource, unit)
        if ledgers
        else "",
        covered=covered,
    )


def _chart(
    starts: list[int], series: Mapping[str, Mapping[int, float]], order: list[str], resource: str, unit: str
) -> str:
    chart = pygal.StackedBar(
        title=f"{resource}: resource-hours per hour ({unit})",
        js=[],
        disable_xml_declaration=True,
        style=STYLE,
        width=720,
        height=300,
        x_label_rotation=30,
        legend_at_bottom=True,
        legend_font_size=10,
        title_font_size=12,
        explicit_size=True,
        print_values=False,
    )
    chart.x_labels = [_stamp(start) for start in starts]
    for team in order[:TOP]:
        chart.add(team, [series[team].get(start) for start in starts])
    rest = order[TOP:]
    if rest:
        chart.add("others", [sum(series[t].get(start, 0.0) for t in rest) or None for start in starts])
    return render_svg(chart)
