"""What of a pod's requests is charged to quota: the Configuration's `resources` section.

Mirrors `dropExcludedResources` and `applyResourceTransformations` in `pkg/workload/workload.go`
(kueue v0.19.2), which `totalRequestsFromPodSets` applies, in that order, to each podSet's pod
requests (limits already standing in for missing requests, `AdjustResources`) before multiplying
them by the podSet's count. Every total the core derives from a Workload's podSets therefore sees
the transformed requests: flavor assignment, the podSetAssignments' `resourceUsage`, preemption,
the pending-resources metric and the scheduling hash. A reserved Workload's usage is read back
from `status.admission`, already transformed, so it is never transformed twice.

* `excludeResourcePrefixes`: a resource whose name starts with one of them is not charged at all.
* `transformations`: each names an `input` resource; its request, times the request of
  `multiplyBy` when the pod asks for that resource, times each output's factor, is charged to the
  outputs. `Retain` (the default) keeps charging the input as requested, `Replace` drops it. What
  the transformations generate is summed on its own before it is added to what the pod asked for,
  and a generated total below zero counts as zero, so a negative factor (an allowance) can only
  cancel other generated amounts, never a request.

Amounts are exact: requests arrive as the core's integers (milli-units for cpu, units otherwise),
products are taken as fractions, and each charged total is rounded up to an integer as upstream's
`Quantity.Value`/`MilliValue` do, saturating at int64's maximum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Protocol

from webhook.api import quantity
from webhook.core.resources import UNLIMITED

__all__ = ["RETAIN", "QuotaResources", "Transformation", "TransformationSpec"]

# The default strategy; the other, `Replace`, drops the input.
RETAIN = "Retain"


class TransformationSpec(Protocol):
    """One `resources.transformations[]` entry as the Configuration decodes it."""

    @property
    def input(self) -> str: ...

    @property
    def strategy(self) -> str: ...

    @property
    def multiply_by(self) -> str: ...

    @property
    def outputs(self) -> Mapping[str, str]: ...


@dataclass(frozen=True, slots=True)
class Transformation:
    """A transformation with its output factors parsed once: (output resource, factor) pairs."""

    input: str
    retain: bool = True
    multiply_by: str = ""
    outputs: tuple[tuple[str, Fraction], ...] = ()


def _value(resource: str, amount: int) -> Fraction:
    """The quantity an amount of the core stands for."""
    return Fraction(amount, 1000) if quantity.is_milli_resource(resource) else Fraction(amount)


def _amount(resource: str, value: Fraction) -> int:
    """`Value`/`MilliValue` of a charged quantity: rounded up, clamped to [0, int64 max]."""
    scaled = value * 1000 if quantity.is_milli_resource(resource) else value
    return min(max(0, -((-scaled.numerator) // scaled.denominator)), UNLIMITED)


@dataclass(frozen=True, slots=True)
class QuotaResources:
    """The exclusions and transformations applied to every podSet's per-pod requests (a value:
    hashable and compared by its fields)."""

    excluded_prefixes: tuple[str, ...] = ()
    # At most one per input resource: the Configuration refuses two transformations of one input.
    transformations: tuple[Transformation, ...] = ()
    _by_input: Mapping[str, Transformation] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_input", MappingProxyType({t.input: t for t in self.transformations}))

    @classmethod
    def from_config(cls, excluded_prefixes: Iterable[str], specs: Iterable[TransformationSpec]) -> QuotaResources:
        """From the Configuration's `resources` section (already validated)."""
        return cls(
            tuple(excluded_prefixes),
            tuple(
                Transformation(
                    t.input,
                    retain=(t.strategy or RETAIN) == RETAIN,
                    multiply_by=t.multiply_by,
                    outputs=tuple((r, quantity.parse(v)) for r, v in t.outputs.items()),
                )
                for t in specs
            ),
        )

    @property
    def inputs(self) -> tuple[str, ...]:
        """The resources a transformation applies to, in the Configuration's order."""
        return tuple(t.input for t in self.transformations)

    def __bool__(self) -> bool:
        return bool(self.excluded_prefixes or self.transformations)

    def apply(self, requests: Mapping[str, int]) -> Mapping[str, int]:
        """Per-pod requests as quota charges them; `requests` itself when nothing applies."""
        return self.transform(self.drop_excluded(requests))

    def drop_excluded(self, requests: Mapping[str, int]) -> Mapping[str, int]:
        """`dropExcludedResources`: without the resources an excluded prefix names."""
        prefixes = self.excluded_prefixes
        if not prefixes or not any(r.startswith(prefixes) for r in requests):
            return requests
        return {r: v for r, v in requests.items() if not r.startswith(prefixes)}

    def transform(self, requests: Mapping[str, int]) -> Mapping[str, int]:
        """`applyResourceTransformations` over one pod's requests."""
        rules = self._by_input
        if not rules or not any(r in rules for r in requests):
            return requests
        kept: dict[str, int] = {}
        generated: dict[str, Fraction] = {}
        for res, amount in requests.items():
            rule = rules.get(res)
            if rule is None:
                kept[res] = amount
                continue
            base = _value(res, amount)
            # The multiplier scales only what the outputs are computed from, never the retained input.
            if rule.multiply_by and rule.multiply_by in requests:
                base *= _value(rule.multiply_by, requests[rule.multiply_by])
            for out, factor in rule.outputs:
                generated[out] = generated.get(out, Fraction(0)) + base * factor
            if rule.retain:
                kept[res] = amount
        for out, value in generated.items():
            # Integer amounts: adding the rounded-up generated amount equals rounding up the sum.
            kept[out] = min(kept.get(out, 0) + _amount(out, value), UNLIMITED)
        return kept
