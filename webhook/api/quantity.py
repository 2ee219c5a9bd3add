"""Kubernetes resource quantities as exact integers.

Mirrors `k8s.io/apimachinery/pkg/api/resource/quantity.go` for what Kueue needs: `ParseQuantity`'s
grammar, errors and rounding (every value rounded away from zero to a nano-unit), the integer amounts Kueue accounts (milli-units for cpu, units otherwise, rounded up like
`Quantity.Value`), and the canonical text the API server prints (`2`, `500m`, `1Gi`, `1k`).
Never floats: quota arithmetic must be exact.

Unlike upstream, parsing costs O(length of the text) whatever the exponent: Go's parser expands
`1e999999999` in full (upstream's webhook timed out on it), and truncates an exponent beyond int32
to its low bits (`1e4294967296` is 1 there); and it caps only binary-suffixed values at 2^63-1
units, so `Value()` of `1e30` wraps around in Kueue's accounting. Here every value beyond 2^63-1
units saturates to it, whatever its suffix, before any big arithmetic is done.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction

__all__ = [
    "MAX_AMOUNT",
    "QuantityError",
    "amount",
    "format_amount",
    "format_nanos",
    "format_sum",
    "invalid",
    "is_extended_resource_name",
    "is_milli_resource",
    "parse",
    "parse_quantity",
]

# The messages of `resource.ErrFormatWrong`, `ErrNumeric` and `ErrSuffix`, which upstream's webhooks
# return when they cannot decode an object.
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v: k for k, v in _BINARY.items()}
# What Go's `strings.TrimSpace` removes (the Unicode White_Space property): `Quantity.UnmarshalJSON`
# trims it. Python's `str.strip()` also removes U+001C..U+001F, which Go keeps.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
# `resource.maxAllowed`, in units: the cap on every parsed value (Go applies it to binary suffixes only).
MAX_AMOUNT = 2**63 - 1
_NANO = 10**9
_MAX_NANOS = MAX_AMOUNT * _NANO
# Digits kept below the nano-unit before a binary suffix multiplies (2^60 < 10^61): enough that
# the dropped tail can never move the rounded result across a nano-unit.
_GUARD_DIGITS = 61
_CACHED_LENGTH = 64


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity; the message is Go's."""


def parse(text: str | int | float) -> Fraction:
    """Value of a quantity as the API serializes it (string or bare number), as `UnmarshalJSON` reads it."""
    if isinstance(text, bool):
        raise QuantityError(FORMAT_WRONG)
    if isinstance(text, int):
        return Fraction(max(-MAX_AMOUNT, min(MAX_AMOUNT, text)))
    if isinstance(text, float):
        return parse_quantity(repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"quantities must be strings or numbers, got {type(text).__name__}")
    text = text.strip(_GO_SPACE)
    return _parse_short(text) if len(text) <= _CACHED_LENGTH else parse_quantity(text)


def invalid(value: object) -> str | None:
    """Go's error for a JSON value that does not decode as a quantity, or None when it does."""
    try:
        parse(value)  # type: ignore[arg-type]
    except QuantityError as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=4096)
def _parse_short(text: str) -> Fraction:
    """`parse_quantity` memoized for the few short texts objects repeat (long ones would fill memory)."""
    return parse_quantity(text)


def parse_quantity(text: str) -> Fraction:
    """`resource.ParseQuantity`: the same texts accepted and refused, with the same messages."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    positive, value, num, denom, suffix = _split(text)
    base, exponent = _suffix(suffix)
    if not any(ch in _DIGITS for ch in value) and (exponent >= 50 if base == 2 else exponent < -9):
        # Go's fast path gives up on these suffixes and re-reads the number's own text, which then
        # needs a digit: "Pi", "-Ei" and "e-10" are refused while "Gi" and "e5" are zero.
        raise QuantityError(NUMERIC)
    nanos = _nanos(num, denom, base, exponent)
    return Fraction(nanos if positive else -nanos, _NANO)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """`parseQuantityString`: sign, the number's text, numerator and fraction digits, suffix."""
    end = len(text)
    pos = 0
    positive = True
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    i = pos
    while i < end and text[i] in _DIGITS:
        i += 1
    num = text[pos:i] or "0"
    if i >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[i] == ".":
        j = i + 1
        while j < end and text[j] in _DIGITS:
            j += 1
        denom = text[i + 1 : j]
        i = j
        if i >= end:
            return positive, text, num, denom, ""
    value, start = text[:i], i
    while i < end and text[i] in _SUFFIX_CHARS:
        i += 1
    if i < end and text[i] in "+-":
        i += 1
    while i < end and text[i] in _DIGITS:
        i += 1
    if i < end:
        raise QuantityError(FORMAT_WRONG)
    return positive, value, num, denom, text[start:]


def _suffix(suffix: str) -> tuple[int, int]:
    """`quantitySuffixer.interpret`: base and exponent of a suffix (an exponent beyond int64 is refused)."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix]
    if suffix in _BINARY:
        return 2, 10 * _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:].lstrip("+-")
        if digits and len(suffix) - len(digits) <= 2 and all(ch in _DIGITS for ch in digits):
            stripped = digits.lstrip("0")
            if len(stripped) <= 19:
                exponent = int(stripped or "0")
                exponent = -exponent if suffix[1] == "-" else exponent
                if -(2**63) <= exponent < 2**63:
                    return 10, exponent
    raise QuantityError(SUFFIX)


def _nanos(num: str, denom: str, base: int, exponent: int) -> int:
    """|value| in nano-units, rounded away from zero and capped, in time linear in the digits."""
    digits = (num + denom).lstrip("0")
    point = len(denom)  # |value| = int(digits) * 10**-point * base**exponent
    stripped = digits.rstrip("0")
    if not stripped:
        return 0
    point -= len(digits) - len(stripped)
    digits = stripped
    e10, e2 = (exponent, 0) if base == 10 else (0, exponent)
    magnitude = len(digits) - point + e10  # |value| / 2**e2 lies in [10**(magnitude-1), 10**magnitude)
    if magnitude - 1 >= 19:  # at least 10**19 > 2**63-1 units
        return _MAX_NANOS
    if magnitude + 19 <= -9:  # below 10**-9 even after 2**60: one nano-unit
        return 1
    shift = e10 - point + 9  # nanos = int(digits) * 2**e2 * 10**shift
    if shift >= 0:
        return min((int(digits) << e2) * int(10**shift), _MAX_NANOS)
    keep = max(0, len(digits) + shift) + _GUARD_DIGITS
    sticky = len(digits) > keep  # the last digit is not zero, so any dropped tail is not zero
    if sticky:
        shift += len(digits) - keep
        digits = digits[:keep]
    whole, rest = divmod(int(digits) << e2, int(10**-shift))
    return min(whole + (1 if rest or sticky else 0), _MAX_NANOS)


def is_extended_resource_name(name: str) -> bool:
    """`IsExtendedResourceName` (k8s.io/kubernetes pkg/apis/core/helper): a domain-prefixed resource
    outside kubernetes.io, and not a ResourceQuota `requests.` name."""
    if name.startswith("requests.") or "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    return domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def is_milli_resource(resource: str) -> bool:
    """Kueue counts cpu in milli-units and every other resource in whole units."""
    return resource == "cpu"


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def amount(resource: str, text: str | int | float) -> int:
    """The integer amount Kueue accounts for `text` of `resource` (rounded up, as `Quantity.Value`)."""
    if type(text) is str and len(text) <= _CACHED_LENGTH:
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


def format_nanos(nanos: int) -> str:
    """Canonical DecimalSI text of `nanos` billionths of a unit, as Go prints a quantity built from an
    `inf.Dec` of scale 9 (`resource.NewDecimalQuantity`): "4", "31999m", "3999999999n"."""
    return _format_decimal(nanos, -9)


def format_sum(texts: Sequence[str]) -> str:
    """Go's `Quantity.Add` of `texts` from zero, then `String()`: the sum takes the format of its
    first non-zero term (BinarySI for a `Ki`..`Ei` suffix); a BinarySI integer prints with the
    largest power of 1024 that divides it, anything else in canonical DecimalSI ("3200m", "5G")."""
    values = [parse_quantity(t) for t in texts]
    total = sum(values, Fraction(0))
    first = next((t for t, v in zip(texts, values, strict=True) if v != 0), "")
    if first and _split(first)[4] in _BINARY and total.denominator == 1 and total != 0:
        value, power = int(total), 0
        while value % 1024 == 0 and power < 6:
            value //= 1024
            power += 1
        return f"{value}{_BINARY_SUFFIX[power]}" if power else str(value)
    return format_nanos(_ceil(total * _NANO))


def _format_decimal(value: int, exponent: int) -> str:
    """Largest multiple-of-3 exponent that keeps the mantissa an integer, like DecimalSI canonical form."""
    if value == 0:
        return "0"
    while value % 1000 == 0 and exponent < 18:
        value //= 1000
        exponent += 3
    return f"{value}{_DECIMAL_SUFFIX[exponent]}"
