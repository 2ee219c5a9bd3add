"""How the CLI prints: kubectl's tables, ages, and the `-o name|json|yaml` printers.

Tables follow k8s.io/cli-runtime's printers as upstream kueuectl uses them: uppercase headers, cells
left-aligned, columns three spaces apart, no trailing blanks, a NAMESPACE column first across
namespaces. Ages follow k8s.io/apimachinery's `duration.HumanDuration`. The layout itself is tabulate's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import tabulate
import yaml

from webhook.cli.api import CliError

__all__ = [
    "OUTPUT_FORMATS",
    "age",
    "cell",
    "check_output_format",
    "human_duration",
    "now_utc",
    "parse_time",
    "print_objects",
    "render_table",
]

#: What `-o` accepts; a table (the default, or `wide`) is printed by each list command itself.
OUTPUT_FORMATS = ("json", "yaml", "name", "wide")

_KUBECTL_TABLE = tabulate.TableFormat(
    lineabove=None,
    linebelowheader=None,
    linebetweenrows=None,
    linebelow=None,
    headerrow=tabulate.DataRow("", "   ", ""),
    datarow=tabulate.DataRow("", "   ", ""),
    padding=0,
    with_header_hide=None,
)


def check_output_format(output: str | None, *, table: bool) -> None:
    """Refuse an `-o` value we cannot print before any request is made; `wide` only where there is a table."""
    allowed = OUTPUT_FORMATS if table else OUTPUT_FORMATS[:3]
    if output is not None and output not in allowed:
        raise CliError(
            f'unable to match a printer suitable for the output format "{output}", '
            f"allowed formats are: {','.join(sorted(allowed))}"
        )


def cell(value: Any) -> str:
    """A cell as Go's fmt prints it: booleans lowercase, nothing for None."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """The table text, headers uppercased, ending with a newline."""
    # The header goes in as the first row: as `headers`, tabulate would widen columns for it.
    body = [[h.upper() for h in headers], *([cell(v) for v in row] for row in rows)]
    text = tabulate.tabulate(body, tablefmt=_KUBECTL_TABLE, disable_numparse=True, colalign=["left"] * len(headers))
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def human_duration(seconds: float) -> str:
    """A duration the way kubectl shows ages: precise when short, coarser as it grows."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None, now: datetime) -> str:
    """kubectl's AGE cell; `<unknown>` without a timestamp, as its printers show it."""
    start = parse_time(timestamp)
    if start is None:
        return "<unknown>"
    return human_duration((now - start).total_seconds())


def _typed(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The object with kind and apiVersion first, as Go marshals a typed object."""
    rest = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    return {"kind": obj.get("kind") or kind, "apiVersion": obj.get("apiVersion") or api_version, **rest}


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """As kubectl prints objects: `metadata.managedFields` left out."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta} if "metadata" in obj else dict(obj)


def _name_line(obj: Mapping[str, Any], group: str, kind: str, operation: str) -> str:
    name = (obj.get("metadata") or {}).get("name", "")
    resource = f"{kind.lower()}.{group}" if group else kind.lower()
    return f"{resource}/{name}{' ' + operation if operation else ''}\n"


def print_objects(
    objects: Sequence[Mapping[str, Any]],
    output: str | None,
    *,
    api_version: str,
    kind: str,
    operation: str = "",
    as_list: bool = False,
) -> str:
    """`-o name` (the default: `kind.group/name operation` per object), `json` or `yaml`.

    A list (`as_list`) prints as one `<Kind>List`, as kubectl's JSON and YAML printers print a list.
    """
    group = api_version.rpartition("/")[0]
    if output in (None, "name", "wide"):
        return "".join(_name_line(obj, group, kind, operation) for obj in objects)
    objects = [_without_managed_fields(obj) for obj in objects]
    if as_list:
        doc: Any = {"kind": f"{kind}List", "apiVersion": api_version, "metadata": {}, "items": objects}
    elif len(objects) == 1:
        doc = _typed(objects[0], api_version, kind)
    else:
        doc = {
            "kind": "List",
            "apiVersion": "v1",
            "metadata": {},
            "items": [_typed(o, api_version, kind) for o in objects],
        }
    if output == "json":
        return json.dumps(doc, indent=4, ensure_ascii=False) + "\n"
    return yaml.safe_dump(doc, default_flow_style=False, sort_keys=True, allow_unicode=True)


def now_utc() -> datetime:
    return datetime.now(UTC)
