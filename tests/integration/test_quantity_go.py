"""`webhook/api/quantity.py` agrees with Go's `resource.ParseQuantity` on random texts.

The oracle is `e2e/tools/quantity`, built with the Go toolchain from the module proxy into the
test cache (apimachinery v0.34.4, the control plane's). It fails loudly when Go is missing.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.api import quantity
from webhook.api.quantity import MAX_AMOUNT, QuantityError

TOOL = Path(__file__).resolve().parents[2] / "e2e" / "tools" / "quantity"
CACHE = Path(
    os.environ.get("PYKUEUE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pykueue"
)


class Oracle:
    """One long-lived oracle process: a line in, a line out."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(self, text: str) -> dict[str, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(orjson.dumps(text) + b"\n")
        self.proc.stdin.flush()
        answer: dict[str, str] = orjson.loads(self.proc.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    version = re.search(r"k8s.io/apimachinery (v\S+)", (TOOL / "go.mod").read_text()).group(1)  # type: ignore[union-attr]
    binary = CACHE / f"quantity-oracle-{version}" / "quantity"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["go", "build", "-trimpath", "-o", str(binary) + ".tmp", "."],
            cwd=TOOL,
            env={**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"},
            check=True,
        )
        os.replace(str(binary) + ".tmp", binary)
    o = Oracle(binary)
    yield o
    o.close()


def ours(text: str) -> dict[str, str | Fraction]:
    try:
        return {"value": quantity.parse_quantity(text)}
    except QuantityError as exc:
        return {"error": str(exc)}


def go(oracle: Oracle, text: str) -> dict[str, str | Fraction]:
    """Go's answer, saturated at 2^63-1 units as ours is by design (Go caps binary suffixes only)."""
    answer = oracle.ask(text)
    if "error" in answer:
        return {"error": answer["error"]}
    value = Fraction(answer["value"])
    return {"value": max(-MAX_AMOUNT, min(MAX_AMOUNT, value))}


# Go expands an exponent in full (1e99999999 takes minutes there): keep the oracle's exponents small.
_HUGE_EXPONENT = re.compile(r"[eE][+-]?0*[0-9]{4}")
_texts = (
    st.lists(
        st.one_of(
            st.text(alphabet="0123456789.+-eEinumkKMGTP", max_size=8),
            st.integers(min_value=0, max_value=10**25).map(str),
            st.sampled_from(
                ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E", "e-", "."]
            ),
            st.text(max_size=2),
        ),
        max_size=5,
    )
    .map("".join)
    .filter(lambda s: not _HUGE_EXPONENT.search(s))
)


@settings(max_examples=3000, deadline=None)
@given(_texts)
def test_random_texts_parse_or_fail_as_go(oracle: Oracle, text: str) -> None:
    assert ours(text) == go(oracle, text), repr(text)


@pytest.mark.parametrize(
    "text",
    ["1e1.5", "Ei", "Gi", "-", ".", "e-10", "1.5n", "0." + "0" * 40 + "1Ei", "9" * 40 + ".5Ki", "1" + "0" * 300 + "n"],
)
def test_edges_parse_or_fail_as_go(oracle: Oracle, text: str) -> None:
    assert ours(text) == go(oracle, text)
