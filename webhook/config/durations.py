"""Go `time.Duration` text, as the Configuration file writes durations (`30m`, `1h5s`)."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import TypeVar

_T = TypeVar("_T")

__all__ = [
    "format_go_duration",
    "parse_go_duration",
    "to_nanoseconds",
    "to_seconds",
]


# --- Go durations -----------------------------------------------------------------------------------

_DURATION_UNITS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9,
                   "m": 60 * 10**9, "h": 3600 * 10**9}  # fmt: skip
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")


def parse_go_duration(text: str) -> int:
    """`time.ParseDuration` in nanoseconds; ValueError carries Go's message."""
    quoted = json.dumps(text, ensure_ascii=False)
    rest = text
    sign = 1
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"time: invalid duration {quoted}")
    total = Fraction(0)
    while rest:
        m = _DURATION_PART.match(rest)
        number, unit = (m.group(1), m.group(2)) if m else ("", "")
        if number in ("", "."):
            raise ValueError(f"time: invalid duration {quoted}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _DURATION_UNITS:
            raise ValueError(f"time: unknown unit {json.dumps(unit, ensure_ascii=False)} in duration {quoted}")
        total += Fraction(number) * _DURATION_UNITS[unit]
        rest = rest[len(number) + len(unit) :]
    return sign * int(total)


def format_go_duration(ns: int) -> str:
    """`time.Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)

    def frac(value: int, digits: int) -> str:
        whole, part = divmod(value, 10**digits)
        tail = str(part).rjust(digits, "0").rstrip("0")
        return f"{whole}.{tail}" if tail else str(whole)

    if u < 10**3:
        return f"{sign}{u}ns"
    if u < 10**6:
        return f"{sign}{frac(u, 3)}\u00b5s"
    if u < 10**9:
        return f"{sign}{frac(u, 6)}ms"
    text = frac(u % (60 * 10**9), 9) + "s"
    minutes = u // (60 * 10**9)
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes >= 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def to_seconds(ns: int) -> float:
    return ns / 1e9


def to_nanoseconds(seconds: float) -> int:
    return round(seconds * 1e9)
