"""The Workload-status form of a topology assignment (v1beta2 `TopologyAssignment`) and back.

Mirrors upstream v0.19.2's `pkg/util/tas/tas_assignment.go` (`V1Beta2From` with the default
TASAssignmentsEncodingByHostnamePrefix, and `InternalFrom`): domains are cut into `slices`, each with a
`domainCount`, one `valuesPerLevel` entry per level (a `universal` value, or `individual` roots with a
common `prefix`/`suffix` taken out) and `podCounts` (`universal` or `individual`). Hostnames sharing a
'-'-delimited prefix form one slice each; the single-slice form wins when its JSON is shorter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from webhook.core.tas.types import HOSTNAME_LABEL, DomainAssignment, TopologyAssignment

__all__ = ["encode_by_hostname_prefix", "from_v1beta2", "hostname_prefix_keys", "to_v1beta2"]

MAX_DOMAINS_PER_SLICE = 100_000
MAX_SLICES = 1_000


def _level_values(values: Sequence[str]) -> dict[str, Any]:
    """One level's values: `universal` when all equal, else roots without the common prefix/suffix."""
    first = values[0]
    prefix = suffix = first
    min_len = max_len = len(first)
    for s in values[1:]:
        n = len(s)
        min_len, max_len = min(min_len, n), max(max_len, n)
        prefix = prefix[:n]
        if n < len(suffix):
            suffix = suffix[len(suffix) - n :]
        for i in range(len(prefix)):
            if s[i] != prefix[i]:
                prefix = prefix[:i]
                break
        for i in range(len(suffix)):
            if s[n - 1 - i] != suffix[len(suffix) - 1 - i]:
                suffix = suffix[len(suffix) - i :]
                break
    if len(prefix) == max_len:
        return {"universal": prefix}
    if len(prefix) + len(suffix) > min_len:
        # Keep the prefix and suffix from overlapping (e.g. "ababa" and "aba").
        prefix = prefix[: min_len - len(suffix)]
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [s[len(prefix) : len(s) - len(suffix)] for s in values]
    return {"individual": individual}


def _slice(levels: Sequence[str], domains: Sequence[DomainAssignment]) -> dict[str, Any]:
    counts = [d.count for d in domains]
    pod_counts: dict[str, Any] = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    return {
        "domainCount": len(domains),
        "valuesPerLevel": [_level_values([d.values[i] for d in domains]) for i in range(len(levels))],
        "podCounts": pod_counts,
    }


def _assignment(levels: Sequence[str], slices: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if levels:
        out["levels"] = list(levels)
    out["slices"] = slices
    return out


def _json_len(obj: Mapping[str, Any]) -> int:
    """The length of Go's json.Marshal of the API object (an empty `slices` is omitted)."""
    return len(json.dumps({k: v for k, v in obj.items() if v}, separators=(",", ":")))


def hostname_prefix_keys(domains: Sequence[DomainAssignment]) -> list[str] | None:
    """Per domain, its longest '-'-ended hostname prefix shared with another domain, shortening the
    prefixes until the runs fit the slice limit; None when no depth fits (`reusableHostnamePrefixKeys`)."""
    candidates: list[list[str]] = []
    seen: dict[str, int] = {}
    for d in domains:
        host = d.values[-1]
        mine = [host[: end + 1] for end in range(len(host) - 1) if host[end] == "-"]
        for prefix in mine:
            seen[prefix] = min(seen.get(prefix, 0) + 1, 2)
        candidates.append(mine)
    for depth in range(max((len(c) for c in candidates), default=0), 0, -1):
        keys = [next((c for c in reversed(mine[:depth]) if seen[c] >= 2), "") for mine in candidates]
        slices = sum(-(-len(run) // MAX_DOMAINS_PER_SLICE) for run in _runs(domains, keys))
        if slices <= MAX_SLICES:
            return keys
    return None


def _runs(domains: Sequence[DomainAssignment], keys: Sequence[str] | None) -> Iterator[Sequence[DomainAssignment]]:
    """Consecutive domains with the same key (all domains when there are no keys)."""
    if not domains:
        return
    if not keys:
        yield domains
        return
    start = 0
    for i in range(1, len(domains)):
        if keys[i] != keys[start]:
            yield domains[start:i]
            start = i
    yield domains[start:]


def encode_by_hostname_prefix(ta: TopologyAssignment) -> dict[str, Any]:
    """One slice per run of hostnames sharing a prefix, each cut at the slice limit
    (`compactTopologyAssignmentEncodingWithHostnamePrefixRuns`)."""
    levels, domains = ta.levels, ta.domains
    keys = None
    if len(domains) > 1 and levels and levels[-1] == HOSTNAME_LABEL:
        keys = hostname_prefix_keys(domains)
    return _assignment(
        levels,
        [
            _slice(levels, run[i : i + MAX_DOMAINS_PER_SLICE])
            for run in _runs(domains, keys)
            for i in range(0, len(run), MAX_DOMAINS_PER_SLICE)
        ],
    )


def to_v1beta2(ta: TopologyAssignment) -> dict[str, Any]:
    """The `topologyAssignment` to write into a PodSetAssignment (`V1Beta2From`)."""
    levels, domains = ta.levels, ta.domains
    prefixed = encode_by_hostname_prefix(ta)
    if len(prefixed["slices"]) <= 1 or len(domains) > MAX_DOMAINS_PER_SLICE:
        return prefixed
    single = _assignment(levels, [_slice(levels, domains)])
    return single if _json_len(single) < _json_len(prefixed) else prefixed


def _value_at(values: Mapping[str, Any], idx: int) -> str:
    if "universal" in values and values["universal"] is not None:
        return str(values["universal"])
    ind = values.get("individual") or {}
    return str(ind.get("prefix") or "") + str(ind["roots"][idx]) + str(ind.get("suffix") or "")


def from_v1beta2(obj: Mapping[str, Any]) -> TopologyAssignment:
    """The domains of a Workload's `topologyAssignment` (`InternalFrom`), e.g. to count admitted usage."""
    levels = tuple(str(x) for x in obj.get("levels") or ())
    domains: list[DomainAssignment] = []
    for sl in obj.get("slices") or ():
        counts = sl.get("podCounts") or {}
        per_level = sl.get("valuesPerLevel") or []
        for i in range(int(sl.get("domainCount", 0))):
            count = counts["universal"] if counts.get("universal") is not None else counts["individual"][i]
            domains.append(
                DomainAssignment(tuple(_value_at(per_level[lv], i) for lv in range(len(levels))), int(count))
            )
    return TopologyAssignment(levels, tuple(domains))
