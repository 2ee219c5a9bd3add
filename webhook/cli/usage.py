"""`kubectl kueue usage`: resource-hours of admitted quota from the UsageRecords (ours, not upstream's).

Reads `pykueue.io/v1alpha1` UsageRecords (one per period, written by the leader: `webhook.worker.usage`)
and sums them per the `--by` dimensions, flavor and resource, over the periods inside
`--since`/`--until`. Amounts are shown in resource-hours (cpu in cores, memory and other binary
resources in GiB, everything else in units); `--price FLAVOR:RESOURCE=USD` (per resource-hour) adds
a cost column. Table, CSV or JSON.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import click

from webhook import kube
from webhook.api import schema_usage
from webhook.cli.api import CliError, list_items
from webhook.cli.output import render_table
from webhook.cli.session import kube_options, session
from webhook.core import usage

__all__ = ["parse_price", "parse_when", "usage_report", "usage_rows"]

RECORDS = kube.object_path(schema_usage.API_VERSION, schema_usage.PLURAL, None)
_BY = {
    "clusterqueue": "clusterQueue",
    "cq": "clusterQueue",
    "cohort": "cohort",
    "localqueue": "localQueue",
    "lq": "localQueue",
    "namespace": "namespace",
    "ns": "namespace",
    "priorityclass": "priorityClass",
    "user": "user",
    "flavor": "flavor",
}
_HEADERS = {
    "clusterQueue": "CLUSTERQUEUE",
    "cohort": "COHORT",
    "localQueue": "LOCALQUEUE",
    "namespace": "NAMESPACE",
    "priorityClass": "PRIORITYCLASS",
    "user": "USER",
}
_RELATIVE = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(text: str, now: datetime) -> int:
    """`2026-11-01`, `2026-11-01T12:00:00Z`, or a time ago: `90m`, `24h`, `7d`, `2w`."""
    if match := _RELATIVE.match(text):
        return int((now - timedelta(**{_UNITS[match[2]]: int(match[1])})).timestamp())
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"invalid time {text!r}: use 2026-11-01, 2026-11-01T12:00:00Z, or 90m, 24h, 7d, 2w") from None
    return int((when if when.tzinfo else when.replace(tzinfo=now.tzinfo)).timestamp())


def parse_price(texts: Sequence[str]) -> dict[tuple[str, str], float]:
    """`FLAVOR:RESOURCE=PRICE` (`*` or no flavor: any flavor) → price per resource-hour."""
    out = {}
    for text in texts:
        target, sep, price = text.partition("=")
        flavor, _, resource = target.rpartition(":")
        try:
            value = float(price)
        except ValueError:
            value = -1.0
        if not sep or not resource or value < 0:
            raise CliError(
                f"invalid --price {text!r}: use FLAVOR:RESOURCE=PRICE per resource-hour, e.g. h100:nvidia.com/gpu=3.00"
            )
        out[(flavor or "*", resource)] = value
    return out


def usage_rows(
    records: Sequence[Mapping[str, Any]],
    by: Sequence[str],
    *,
    since: int | None,
    until: int | None,
    namespace: str | None,
    prices: Mapping[tuple[str, str], float],
) -> list[dict[str, Any]]:
    """One row per group, flavor and resource: resource-hours and, with a price, the cost."""
    ledgers = []
    for record in records:
        ledger = usage.from_record(record)
        if namespace is not None:
            ledger = usage.Ledger(
                ledger.start,
                ledger.end,
                ledger.watermark,
                {k: v for k, v in ledger.totals.items() if k.namespace == namespace},
            )
        ledgers.append(ledger)
    dims = [d for d in by if d != "flavor"]
    rows = []
    for group, amounts in sorted(usage.aggregate(ledgers, dims, since=since, until=until).items()):
        for (flavor, resource), value in sorted(amounts.items()):
            unit, per = usage.unit_of(resource)
            hours = value / per / 3600
            row: dict[str, Any] = dict(zip(dims, group, strict=True))
            row |= {"flavor": flavor, "resource": resource, "unit": unit, "resourceHours": round(hours, 6)}
            price = prices.get((flavor, resource), prices.get(("*", resource)))
            if prices:
                row["cost"] = None if price is None else round(hours * price, 2)
            rows.append(row)
    return rows


def _covered(records: Sequence[Mapping[str, Any]], since: int | None, until: int | None) -> tuple[int, int] | None:
    """The time the report covers: first period start to the last watermark inside the bounds."""
    spans = [
        (ledger.start, ledger.watermark)
        for ledger in map(usage.from_record, records)
        if (since is None or ledger.start >= since) and (until is None or ledger.end <= until)
    ]
    return (min(s for s, _ in spans), max(w for _, w in spans)) if spans else None


def usage_report(rows: Sequence[Mapping[str, Any]], by: Sequence[str], output: str) -> str:
    columns = [d for d in by if d != "flavor"] + ["flavor", "resource", "resourceHours", "unit"]
    if any("cost" in row for row in rows):
        columns.append("cost")
    if output == "json":
        return json.dumps({"items": list(rows)}, indent=2) + "\n"
    if output == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()
    headers = [_HEADERS.get(c, c.upper()).replace("RESOURCEHOURS", "RESOURCE-HOURS") for c in columns]
    return render_table(headers, ([_cell(row.get(c)) for c in columns] for row in rows))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if value >= 0.01 or value == 0 else f"{value:.6f}"
    return "" if value is None else str(value)


@click.command(
    "usage",
    help="Resource-hours of admitted quota, from the leader's UsageRecords (pykueue.io): per ClusterQueue, "
    "cohort, LocalQueue, namespace, priority class or user, and flavor and resource. Periods (an hour each) "
    "count whole: --since/--until select the periods inside them.",
)
@click.option(
    "--by",
    "by_text",
    default="clusterqueue",
    show_default=True,
    help="Comma-separated: clusterqueue, cohort, localqueue, namespace, priorityclass, user, flavor.",
)
@click.option("--since", default=None, help="From (2026-11-01, 2026-11-01T12:00:00Z, or ago: 90m, 24h, 7d, 2w).")
@click.option("--until", default=None, help="To (same forms as --since).")
@click.option("--price", multiple=True, help="FLAVOR:RESOURCE=PRICE per resource-hour (repeatable; * for any flavor).")
@click.option("-o", "--output", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@kube_options
def usage_command(by_text: str, since: str | None, until: str | None, price: tuple[str, ...], output: str) -> None:
    s = session()
    by = []
    for word in filter(None, (w.strip().lower() for w in by_text.split(","))):
        if word not in _BY:
            raise CliError(f"invalid --by {word!r}: one of {', '.join(sorted(set(_BY) - {'cq', 'lq', 'ns'}))}")
        by.append(_BY[word])
    now = s.clock()
    lo = parse_when(since, now) if since else None
    hi = parse_when(until, now) if until else None
    records = list(list_items(s.api, RECORDS)["items"])
    rows = usage_rows(records, by, since=lo, until=hi, namespace=s.namespace, prices=parse_price(price))
    click.echo(usage_report(rows, by, output), nl=False)
    if output == "table":
        covered = _covered(records, lo, hi)
        span = (
            "no records" if covered is None else f"{usage.format_time(covered[0])} to {usage.format_time(covered[1])}"
        )
        click.echo(f"Covered: {span}", err=True)
