"""`webhook/api/quantity.py` against `resource.ParseQuantity`'s answers, and bounded in time.

The table's answers are Go's, as `e2e/tools/quantity` (apimachinery v0.34.4) printed them; the
integration test `test_quantity_go.py` checks random texts against that oracle itself.
"""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.api import quantity
from webhook.api.quantity import FORMAT_WRONG, MAX_AMOUNT, NUMERIC, SUFFIX, QuantityError

GO_ANSWERS: list[tuple[str, str | Fraction]] = [
    ("1e1.5", FORMAT_WRONG),  # matches the CRD's pattern, yet Go refuses it
    ("1.5.5", FORMAT_WRONG),
    (" 1", FORMAT_WRONG),
    ("", FORMAT_WRONG),
    ("1e-", SUFFIX),
    ("1K", SUFFIX),
    ("1mi", SUFFIX),
    ("1e", SUFFIX),
    ("1e99999999999999999999", SUFFIX),  # the exponent is beyond int64
    ("Ei", NUMERIC),
    ("Pi", NUMERIC),
    ("+.Ei", NUMERIC),
    ("e-10", NUMERIC),
    ("Gi", Fraction(0)),
    ("Ti", Fraction(0)),
    ("-", Fraction(0)),
    (".", Fraction(0)),
    ("e5", Fraction(0)),
    ("m", Fraction(0)),
    ("1.5n", Fraction(2, 10**9)),  # rounded away from zero to a nano-unit
    ("0.0000000000000000001", Fraction(1, 10**9)),
    ("-0.0000000000000000001", Fraction(-1, 10**9)),
    ("1E", Fraction(10**18)),
    ("1.5Pi", Fraction(1688849860263936)),
    (".5Ki", Fraction(512)),
    ("1e+3", Fraction(1000)),
    ("100m", Fraction(1, 10)),
    ("1.", Fraction(1)),
    ("0012.50", Fraction(25, 2)),
]


@pytest.mark.parametrize(("text", "go"), GO_ANSWERS)
def test_parse_answers_as_go(text: str, go: str | Fraction) -> None:
    if isinstance(go, str):
        with pytest.raises(QuantityError) as exc:
            quantity.parse_quantity(text)
        assert str(exc.value) == go
    else:
        assert quantity.parse_quantity(text) == go


@pytest.mark.parametrize(
    "text",
    ["1e999999999", "1e9223372036854775807", "999999999999999999E", "9999999999999999999E", "1e4294967296", "8Ei"],
)
def test_values_beyond_int64_saturate(text: str) -> None:
    # Go caps binary suffixes only, and truncates `1e4294967296` to 1: every one saturates here.
    assert quantity.parse_quantity(text) == MAX_AMOUNT
    assert quantity.parse_quantity("-" + text) == -MAX_AMOUNT


def test_json_values_are_trimmed_as_unmarshal_json_trims_them() -> None:
    assert quantity.parse(" 2\t") == 2
    assert quantity.parse(3) == 3
    assert quantity.parse(2**70) == MAX_AMOUNT
    assert quantity.parse(0.5) == Fraction(1, 2)
    assert quantity.invalid("\x1c2") == FORMAT_WRONG  # Go's TrimSpace keeps U+001C; Python's strip would not
    assert quantity.invalid("1e1.5") == FORMAT_WRONG
    assert quantity.invalid(True) == FORMAT_WRONG
    assert quantity.invalid("500m") is None


def test_amounts_round_up_as_value_and_milli_value() -> None:
    assert quantity.amount("cpu", "1.5n") == 1
    assert quantity.amount("memory", "1.5") == 2
    assert quantity.amount("cpu", "1e999999999") == MAX_AMOUNT * 1000


# Texts of every shape, including the adversarial ones: huge exponents, long runs of digits.
_pieces = st.one_of(
    st.text(alphabet="0123456789.+-eEinumkKMGTP", max_size=12),
    st.integers(min_value=0, max_value=10**30).map(str),
    st.sampled_from(["e999999999", "E9223372036854775807", "e-999999999", "Ei", "Ki", "m"]),
    st.integers(min_value=1, max_value=50_000).map(lambda n: "9" * n),
    st.integers(min_value=1, max_value=50_000).map(lambda n: "." + "0" * n + "1"),
    st.text(max_size=4),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_pieces, min_size=1, max_size=4).map("".join))
def test_any_text_parses_or_is_refused_without_unbounded_work(text: str) -> None:
    started = time.perf_counter()
    try:
        value = quantity.parse_quantity(text)
    except QuantityError as exc:
        assert str(exc) in (FORMAT_WRONG, NUMERIC, SUFFIX)
    else:
        assert -MAX_AMOUNT <= value <= MAX_AMOUNT
        assert (value * 10**9).denominator == 1
    # Linear in the text (at most ~100 kB here), never in the exponent: the old parser took 6 s on 1e7.
    assert time.perf_counter() - started < 0.05, text[:80]
