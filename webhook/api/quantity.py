"""Kubernetes resource quantities as exact integers.

Mirrors `k8s.io/apimachinery/pkg/api/resource` for what Kueue needs: parse the
string forms the API accepts, turn them into int amounts (milli-units for cpu,
units for everything else, rounded up like `Quantity.Value`), and print amounts
back in the canonical form the API server would print (`2`, `500m`, `1Gi`, `1k`).
Never floats: quota arithmetic must be exact.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

__all__ = ["QuantityError", "amount", "format_amount", "is_milli_resource", "parse"]

_PATTERN = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v: k for k, v in _BINARY.items()}
# A quantity beyond 2^63-1 milli-units cannot be represented by the API server either.
MAX_AMOUNT = 2**63 - 1


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse(text: str | int | float) -> Fraction:
    """Exact value of a quantity given as the API serializes it (string, or a bare number)."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(f"quantities must be strings or numbers, got {type(text).__name__}")
    m = _PATTERN.match(text.strip())
    if not m:
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
        )
    sign, digits, suffix = m.group(1), m.group(2), m.group(3) or ""
    value = Fraction(digits)
    if suffix in _BINARY:
        value *= 1024 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= Fraction(10) ** _DECIMAL[suffix]
    else:
        value *= Fraction(10) ** int(suffix[1:])
    return -value if sign == "-" else value


def is_milli_resource(resource: str) -> bool:
    """Kueue counts cpu in milli-units and every other resource in whole units."""
    return resource == "cpu"


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def amount(resource: str, text: str | int | float) -> int:
    """The integer amount Kueue accounts for `text` of `resource` (rounded up, as `Quantity.Value`)."""
    if type(text) is str:
        return _text_amount(resource, text)
    return _amount(resource, text)


@functools.lru_cache(maxsize=4096)
def _text_amount(resource: str, text: str) -> int:
    """`amount` memoized: every Workload event re-reads requests drawn from a few distinct texts."""
    return _amount(resource, text)


def _amount(resource: str, text: str | int | float) -> int:
    value = parse(text)
    return _ceil(value * 1000) if is_milli_resource(resource) else _ceil(value)


def _binary_format(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def format_amount(resource: str, value: int) -> str:
    """Canonical text of an amount, as the API server prints a quantity Kueue built for `resource`."""
    if is_milli_resource(resource):
        if value % 1000 == 0:
            return _format_decimal(value // 1000, 0)
        return _format_decimal(value, -3)
    if _binary_format(resource) and abs(value) >= 1024:
        power = 0
        v = value
        while v != 0 and v % 1024 == 0 and power < 6:
            v //= 1024
            power += 1
        if power:
            return f"{v}{_BINARY_SUFFIX[power]}"
        return str(value)
    return _format_decimal(value, 0)


def _format_decimal(value: int, exponent: int) -> str:
    """Largest multiple-of-3 exponent that keeps the mantissa an integer, like DecimalSI canonical form."""
    if value == 0:
        return "0"
    while value % 1000 == 0 and exponent < 18:
        value //= 1000
        exponent += 3
    return f"{value}{_DECIMAL_SUFFIX[exponent]}"
