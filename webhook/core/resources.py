"""Flavor/resource keys, exact amounts and quota values.

Mirrors `pkg/resources/{resource.go,amount.go,requests.go}` and `ResourceQuota` in
`pkg/cache/scheduler/resource_node.go` (upstream commit ff69552e79). Amounts are plain ints:
milli-units for cpu, whole units otherwise (see `webhook.api.quantity`). A quota that does not fit
in int64 becomes `UNLIMITED`, printed `<unlimited>` as upstream does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, NewType

from webhook.api import quantity

__all__ = [
    "UNLIMITED",
    "ClusterQueueName",
    "CohortName",
    "FRQuantities",
    "FlavorName",
    "FlavorResource",
    "ResourceQuota",
    "add_into",
    "format_quantity",
    "parse_amount",
]

ClusterQueueName = NewType("ClusterQueueName", str)
CohortName = NewType("CohortName", str)
FlavorName = NewType("FlavorName", str)

# Quota values that overflow int64 in upstream's Amount become this sentinel.
UNLIMITED = 2**63 - 1


class FlavorResource(NamedTuple):
    """A (flavor, resource) pair: the unit every quota and usage is kept in."""

    flavor: str
    resource: str


FRQuantities = dict[FlavorResource, int]


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """One fr's quota; None limits mean "no limit" as in the API."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


def parse_amount(resource: str, text: str | int | float) -> int:
    """Exact amount of a quota value; values beyond int64 saturate to UNLIMITED."""
    value = quantity.amount(resource, text)
    return min(value, UNLIMITED)


def format_quantity(resource: str, value: int) -> str:
    """Quantity text as upstream's ResourceFormatter prints it in messages and status."""
    if value >= UNLIMITED:
        return "<unlimited>"
    return quantity.format_amount(resource, value)


def add_into(
    target: dict[FlavorResource, int],
    source: Mapping[FlavorResource, int] | Iterable[tuple[FlavorResource, int]],
    sign: int = 1,
) -> None:
    """Accumulate `source` into `target` (sign=-1 subtracts); keys reaching zero are dropped."""
    items = source.items() if isinstance(source, Mapping) else source
    for fr, v in items:
        nv = target.get(fr, 0) + sign * v
        if nv:
            target[fr] = nv
        else:
            target.pop(fr, None)
