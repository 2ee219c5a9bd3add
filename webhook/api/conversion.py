"""Conversion of Kueue objects between `kueue.x-k8s.io/v1beta1` and `kueue.x-k8s.io/v1beta2`.

Owns the field-level rules behind the `/convert` endpoint (the ConversionReview envelope lives in
`webhook/admission/conversion.py`). Mirrors, at upstream commit ff69552e79:

* `apis/kueue/v1beta1/{clusterqueue,cohort,localqueue,workload,multikueue,admissioncheck,fairsharing}_conversion.go`
  — the hand-written rules;
* `apis/kueue/v1beta1/zz_generated.conversion.go` — which fields each version drops ("does not exist
  in peer-type");
* `pkg/util/tas/tas_assignment.go` — `V1Beta2From` / `InternalSeqFrom`, the TAS assignment encoding;
* `apis/kueue/v1beta{1,2}/*_types.go` — the two type trees.

Objects are plain JSON dicts. Every rule only renames, re-shapes or drops the fields upstream treats
specially; everything else is copied verbatim. Two deliberate JSON-level differences from Go, which
decodes into structs and re-encodes: unknown fields are kept (the API server prunes them anyway), and
zero values are not invented (Go writes `"pendingWorkloadsStatus": null` or `"locationType": ""`
for absent fields; here an absent field stays absent). The API server treats both spellings alike.

Upstream drops, without preserving them anywhere, the fields only one version has:

* to v1beta2: ClusterQueue `status.pendingWorkloadsStatus`, ClusterQueue/Cohort
  `status.fairSharing.admissionFairSharingStatus`, LocalQueue `status.flavors`, AdmissionCheck
  `spec.retryDelayMinutes`, and a Workload `spec.priorityClassName` whose `priorityClassSource` is empty;
* to v1beta1: ClusterQueue `spec.concurrentAdmissionPolicy`, Workload `spec.preemptionGates`,
  `status.preemptionGates` and `podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints`,
  MultiKueueConfig `spec.quotaManagement`.

This module reproduces that exactly. Other conversions that are not one-to-one, also as upstream:
v1beta1 `admissionChecks` come back as `admissionChecksStrategy`, `Borrow`/`Preempt` come back as
`MayStopSearch`, a v1beta1 `kubeConfig` without a location is treated as unset, and a TAS assignment is
rebuilt whole, so a v1beta2 encoding Kueue would not have chosen comes back re-encoded (same domains).
The tests prove the round trip lossless for every other object, and that one conversion always reaches
a fixed point. TAS prefixes are computed on characters where Go uses bytes; this differs only for
non-ASCII values, which label values cannot contain (Go would split a multi-byte character).

Errors: a single `ConversionError` (a `ValueError`) for an unsupported kind or version and for an object
whose shape upstream could not decode (where Go would fail or panic); its message names the field path.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from webhook.api import constants

__all__ = [
    "ConversionError",
    "JSONObject",
    "ShapeError",
    "TopologyDomain",
    "compact_topology_assignment",
    "convert",
    "expand_topology_assignment",
    "supported_kinds",
]

JSONObject = dict[str, object]
_T = TypeVar("_T")

_HOSTNAME_LABEL = "kubernetes.io/hostname"

# Mirrors of the v1beta2 MaxItems limits that shape the hostname-prefix encoding.
_MAX_DOMAINS_PER_SLICE = 100_000
_MAX_SLICES = 1_000

_WORKLOAD_PRIORITY_CLASS_REF = (constants.GROUP, "WorkloadPriorityClass")
_POD_PRIORITY_CLASS_REF = ("scheduling.k8s.io", "PriorityClass")


class ConversionError(ValueError):
    """The object cannot be converted; the message says why and where."""


class ShapeError(ConversionError):
    """A field is not of its schema's JSON type: the object cannot pass the API server's validation."""


@dataclass(frozen=True, slots=True)
class TopologyDomain:
    """One domain of a TAS assignment: a value per topology level and the pods placed there."""

    values: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True)
class _Options:
    hostname_prefix_encoding: bool


# --------------------------------------------------------------------------- JSON shape helpers


def _kind_name(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _as_object(value: object, path: str) -> JSONObject:
    if not isinstance(value, dict):
        raise ShapeError(f"{path}: expected an object, got {_kind_name(value)}")
    return value


def _as_list(value: object, path: str) -> list[object]:
    if not isinstance(value, list):
        raise ShapeError(f"{path}: expected a list, got {_kind_name(value)}")
    return value


def _as_str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ShapeError(f"{path}: expected a string, got {_kind_name(value)}")
    return value


def _as_int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShapeError(f"{path}: expected an integer, got {_kind_name(value)}")
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _child(parent: JSONObject, key: str, path: str) -> JSONObject | None:
    """The object at `key`, or None when absent or null (Go decodes null into a nil pointer)."""
    value = parent.get(key)
    return None if value is None else _as_object(value, _join(path, key))


def _items(parent: JSONObject, key: str, path: str) -> Iterator[tuple[JSONObject, str]]:
    """The objects of the list at `key` with their paths; nothing when absent or null."""
    value = parent.get(key)
    if value is None:
        return
    for i, item in enumerate(_as_list(value, _join(path, key))):
        yield _as_object(item, f"{_join(path, key)}[{i}]"), f"{_join(path, key)}[{i}]"


def _opt_str(parent: Mapping[str, object], key: str, path: str) -> str:
    """A string field as Go reads it: absent or null is the empty string."""
    value = parent.get(key)
    return "" if value is None else _as_str(value, _join(path, key))


def _rename(obj: JSONObject, old: str, new: str, *, omit_empty: bool = False) -> None:
    """Move `old` to `new`; a stray `new` in the source version is not part of its schema."""
    obj.pop(new, None)
    value = obj.pop(old, None)
    if value is None or (omit_empty and value == ""):
        return
    obj[new] = value


# --------------------------------------------------------------------------- TAS assignment encoding


def _common_prefix(values: Sequence[str]) -> str:
    """Longest common prefix; comparing the least and greatest string is enough."""
    low, high = min(values), max(values)
    for i, (a, b) in enumerate(zip(low, high, strict=False)):
        if a != b:
            return low[:i]
    return low


def _compact_level_values(values: Sequence[str]) -> JSONObject:
    """One level of a slice: a universal value, or roots around the longest common prefix/suffix.

    When prefix and suffix would overlap, the prefix is shortened (upstream's choice).
    """
    prefix = _common_prefix(values)
    max_len = max(map(len, values))
    if len(prefix) == max_len:
        return {"universal": prefix}
    min_len = min(map(len, values))
    suffix = _common_prefix([v[::-1] for v in values])[::-1]
    if len(prefix) + len(suffix) > min_len:
        prefix = prefix[: min_len - len(suffix)]
    individual: JSONObject = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [v[len(prefix) : len(v) - len(suffix)] for v in values]
    return {"individual": individual}


def _compact_slice(levels: Sequence[str], domains: Sequence[TopologyDomain]) -> JSONObject:
    """Encode consecutive domains as one v1beta2 slice, compressing values and counts."""
    out: JSONObject = {"domainCount": len(domains)}
    if levels:
        out["valuesPerLevel"] = [
            _compact_level_values([d.values[level] for d in domains]) for level in range(len(levels))
        ]
    counts = [d.count for d in domains]
    out["podCounts"] = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    return out


def _assignment(levels: Sequence[str], slices: list[JSONObject]) -> JSONObject:
    out: JSONObject = {}
    if levels:
        out["levels"] = list(levels)
    if slices:
        out["slices"] = slices
    return out


def _chunks(domains: Sequence[TopologyDomain]) -> Iterator[Sequence[TopologyDomain]]:
    for start in range(0, len(domains), _MAX_DOMAINS_PER_SLICE):
        yield domains[start : start + _MAX_DOMAINS_PER_SLICE]


def _chunk_count(length: int) -> int:
    return -(-length // _MAX_DOMAINS_PER_SLICE)


def _hostname_prefix_keys(hostnames: Sequence[str]) -> list[str] | None:
    """Per hostname, the longest '-'-terminated prefix that at least two hostnames share.

    Tries the deepest prefixes first and backs off one '-' at a time until the runs of equal
    keys fit the slice limit; None when no depth fits (then everything is one run).
    """
    ends = [[i + 1 for i in range(len(h) - 1) if h[i] == "-"] for h in hostnames]
    counts = Counter(h[:end] for h, host_ends in zip(hostnames, ends, strict=True) for end in host_ends)
    for depth in range(max(map(len, ends), default=0), 0, -1):
        keys = []
        for hostname, host_ends in zip(hostnames, ends, strict=True):
            candidates = (hostname[:end] for end in reversed(host_ends[:depth]))
            keys.append(next((p for p in candidates if counts[p] >= 2), ""))
        if sum(_chunk_count(len(run)) for run in _runs(keys, keys)) <= _MAX_SLICES:
            return keys
    return None


def _runs(items: Sequence[_T], keys: Sequence[str] | None) -> list[Sequence[_T]]:
    """Split items into maximal runs of consecutive equal keys (one run when there are no keys)."""
    if not items:
        return []
    if not keys:
        return [items]
    runs: list[Sequence[_T]] = []
    start = 0
    for i in range(1, len(items)):
        if keys[i] != keys[start]:
            runs.append(items[start:i])
            start = i
    runs.append(items[start:])
    return runs


def _single_slice_encoding(levels: Sequence[str], domains: Sequence[TopologyDomain]) -> JSONObject:
    return _assignment(levels, [_compact_slice(levels, domains)] if domains else [])


def _hostname_prefix_encoding(levels: Sequence[str], domains: Sequence[TopologyDomain]) -> JSONObject:
    keys = None
    if len(domains) > 1 and levels and levels[-1] == _HOSTNAME_LABEL:
        keys = _hostname_prefix_keys([d.values[len(levels) - 1] for d in domains])
    slices = [_compact_slice(levels, chunk) for run in _runs(domains, keys) for chunk in _chunks(run)]
    return _assignment(levels, slices)


_GO_EXTRA_ESCAPES = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def _go_json_size(value: object) -> int:
    """Bytes Go's encoding/json writes for `value`, which upstream compares to pick an encoding.

    Go additionally escapes <, > and & (6 bytes instead of 1) and U+2028/U+2029 and lone surrogates
    (6 bytes instead of 3); otherwise its compact output matches Python's byte for byte.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    extra = sum(5 if m in "<>&" else 3 for m in _GO_EXTRA_ESCAPES.findall(text))
    return len(text.encode("utf-8", "surrogatepass")) + extra


def compact_topology_assignment(
    levels: Sequence[str],
    domains: Sequence[TopologyDomain],
    *,
    by_hostname_prefix: bool = True,
) -> JSONObject:
    """Encode domains as a v1beta2 `topologyAssignment` exactly as upstream `V1Beta2From` does.

    `by_hostname_prefix` is the TASAssignmentsEncodingByHostnamePrefix feature gate (beta, on by
    default in 0.19): it splits hostname-level assignments into runs sharing a hostname prefix and
    keeps that only when it serializes smaller than a single slice (or a single slice is too big).
    """
    for i, domain in enumerate(domains):
        if len(domain.values) < len(levels):
            raise ConversionError(f"domains[{i}].values: has {len(domain.values)} values for {len(levels)} levels")
    if not by_hostname_prefix:
        return _single_slice_encoding(levels, domains)
    by_prefix = _hostname_prefix_encoding(levels, domains)
    if len(_as_list(by_prefix.get("slices", []), "slices")) <= 1 or len(domains) > _MAX_DOMAINS_PER_SLICE:
        return by_prefix
    single = _single_slice_encoding(levels, domains)
    return single if _go_json_size(single) < _go_json_size(by_prefix) else by_prefix


def _level_value(values: JSONObject, index: int, path: str) -> str:
    if values.get("universal") is not None:
        return _as_str(values["universal"], f"{path}.universal")
    individual = _child(values, "individual", path)
    if individual is None:
        raise ConversionError(f"{path}: one of universal or individual is required")
    roots = _as_list(individual.get("roots"), f"{path}.individual.roots")
    if index >= len(roots):
        raise ConversionError(f"{path}.individual.roots: has {len(roots)} items, needs {index + 1}")
    root = _as_str(roots[index], f"{path}.individual.roots[{index}]")
    ipath = f"{path}.individual"
    return _opt_str(individual, "prefix", ipath) + root + _opt_str(individual, "suffix", ipath)


def _pod_count(counts: JSONObject, index: int, path: str) -> int:
    if counts.get("universal") is not None:
        return _as_int(counts["universal"], f"{path}.universal")
    individual = _as_list(counts.get("individual"), f"{path}.individual")
    if index >= len(individual):
        raise ConversionError(f"{path}.individual: has {len(individual)} items, needs {index + 1}")
    return _as_int(individual[index], f"{path}.individual[{index}]")


def _levels(ta: Mapping[str, object], path: str) -> list[str]:
    value = ta.get("levels")
    if value is None:
        return []
    return [_as_str(v, f"{path}.levels[{i}]") for i, v in enumerate(_as_list(value, f"{path}.levels"))]


def expand_topology_assignment(ta: Mapping[str, object], path: str = "topologyAssignment") -> list[TopologyDomain]:
    """Decode a v1beta2 `topologyAssignment` into its domains, in order (upstream `InternalSeqFrom`)."""
    level_count = len(_levels(ta, path))
    domains: list[TopologyDomain] = []
    for slice_, spath in _items(dict(ta), "slices", path):
        count = _as_int(slice_.get("domainCount", 0), f"{spath}.domainCount")
        per_level = _as_list(slice_.get("valuesPerLevel", []), f"{spath}.valuesPerLevel")
        if count > 0 and len(per_level) < level_count:
            raise ConversionError(f"{spath}.valuesPerLevel: has {len(per_level)} items for {level_count} levels")
        level_values = [
            _as_object(per_level[lvl], f"{spath}.valuesPerLevel[{lvl}]")
            for lvl in range(level_count if count > 0 else 0)
        ]
        pod_counts = _as_object(slice_.get("podCounts", {}), f"{spath}.podCounts")
        for i in range(count):
            values = tuple(_level_value(v, i, f"{spath}.valuesPerLevel[{lvl}]") for lvl, v in enumerate(level_values))
            domains.append(TopologyDomain(values, _pod_count(pod_counts, i, f"{spath}.podCounts")))
    return domains


def _topology_assignment_to_v1beta2(ta: JSONObject, path: str, options: _Options) -> JSONObject:
    levels = _levels(ta, path)
    domains = []
    for domain, dpath in _items(ta, "domains", path):
        raw_values = domain.get("values")
        values = [] if raw_values is None else _as_list(raw_values, f"{dpath}.values")
        count = domain.get("count")
        domains.append(
            TopologyDomain(
                tuple(_as_str(v, f"{dpath}.values[{i}]") for i, v in enumerate(values)),
                0 if count is None else _as_int(count, f"{dpath}.count"),
            )
        )
    try:
        return compact_topology_assignment(levels, domains, by_hostname_prefix=options.hostname_prefix_encoding)
    except ConversionError as exc:
        raise ConversionError(f"{path}.{exc}") from None


def _topology_assignment_to_v1beta1(ta: JSONObject, path: str) -> JSONObject:
    out: JSONObject = {}
    if ta.get("levels") is not None:
        out["levels"] = _levels(ta, path)
    out["domains"] = [{"values": list(d.values), "count": d.count} for d in expand_topology_assignment(ta, path)]
    return out


def _convert_topology_assignments(obj: JSONObject, convert_one: Callable[[JSONObject, str], JSONObject]) -> None:
    status = _child(obj, "status", "")
    admission = None if status is None else _child(status, "admission", "status")
    if admission is None:
        return
    for psa, path in _items(admission, "podSetAssignments", "status.admission"):
        ta = _child(psa, "topologyAssignment", path)
        if ta is not None:
            psa["topologyAssignment"] = convert_one(ta, f"{path}.topologyAssignment")


# --------------------------------------------------------------------------- per-kind rules


def _workload_to_v1beta2(obj: JSONObject, options: _Options) -> None:
    spec = _child(obj, "spec", "")
    if spec is not None:
        name = _opt_str(spec, "priorityClassName", "spec")
        source = _opt_str(spec, "priorityClassSource", "spec")
        for key in ("priorityClassName", "priorityClassSource", "priorityClassRef", "preemptionGates"):
            spec.pop(key, None)
        group_kind = {
            constants.WORKLOAD_PRIORITY_CLASS_SOURCE: _WORKLOAD_PRIORITY_CLASS_REF,
            constants.POD_PRIORITY_CLASS_SOURCE: _POD_PRIORITY_CLASS_REF,
        }.get(source)
        if group_kind is not None:
            ref: JSONObject = {"group": group_kind[0], "kind": group_kind[1]}
            if name:
                ref["name"] = name
            spec["priorityClassRef"] = ref
    status = _child(obj, "status", "")
    if status is not None:
        status.pop("preemptionGates", None)
        _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
    _convert_topology_assignments(obj, lambda ta, path: _topology_assignment_to_v1beta2(ta, path, options))


def _workload_to_v1beta1(obj: JSONObject, options: _Options) -> None:
    spec = _child(obj, "spec", "")
    if spec is not None:
        ref = _child(spec, "priorityClassRef", "spec")
        for key in ("priorityClassName", "priorityClassSource", "priorityClassRef", "preemptionGates"):
            spec.pop(key, None)
        if ref is not None:
            path = "spec.priorityClassRef"
            group_kind = (_opt_str(ref, "group", path), _opt_str(ref, "kind", path))
            source = {
                _WORKLOAD_PRIORITY_CLASS_REF: constants.WORKLOAD_PRIORITY_CLASS_SOURCE,
                _POD_PRIORITY_CLASS_REF: constants.POD_PRIORITY_CLASS_SOURCE,
            }.get(group_kind)
            if source is not None:
                name = _opt_str(ref, "name", path)
                if name:
                    spec["priorityClassName"] = name
                spec["priorityClassSource"] = source
        for pod_set, path in _items(spec, "podSets", "spec"):
            request = _child(pod_set, "topologyRequest", path)
            if request is not None:
                request.pop("podsetSliceRequiredTopologyConstraints", None)
    status = _child(obj, "status", "")
    if status is not None:
        status.pop("preemptionGates", None)
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
    _convert_topology_assignments(obj, _topology_assignment_to_v1beta1)


_DEPRECATED_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def _cluster_queue_to_v1beta2(obj: JSONObject, options: _Options) -> None:
    spec = _child(obj, "spec", "")
    if spec is not None:
        _rename(spec, "cohort", "cohortName", omit_empty=True)
        spec.pop("concurrentAdmissionPolicy", None)
        checks = spec.pop("admissionChecks", None)
        if checks:
            names = _as_list(checks, "spec.admissionChecks")
            spec["admissionChecksStrategy"] = {
                "admissionChecks": [{"name": _as_str(n, f"spec.admissionChecks[{i}]")} for i, n in enumerate(names)]
            }
        fungibility = _child(spec, "flavorFungibility", "spec")
        if fungibility is not None:
            for field, deprecated in _DEPRECATED_FUNGIBILITY.items():
                if fungibility.get(field) == deprecated:
                    fungibility[field] = "MayStopSearch"
    status = _child(obj, "status", "")
    if status is not None:
        status.pop("pendingWorkloadsStatus", None)
        _drop_admission_fair_sharing_status(status)


def _cluster_queue_to_v1beta1(obj: JSONObject, options: _Options) -> None:
    spec = _child(obj, "spec", "")
    if spec is not None:
        _rename(spec, "cohortName", "cohort", omit_empty=True)
        spec.pop("concurrentAdmissionPolicy", None)
        spec.pop("admissionChecks", None)
    status = _child(obj, "status", "")
    if status is not None:
        status.pop("pendingWorkloadsStatus", None)


def _drop_admission_fair_sharing_status(status: JSONObject) -> None:
    """ClusterQueue and Cohort v1beta2 FairSharingStatus keeps only weightedShare."""
    fair_sharing = _child(status, "fairSharing", "status")
    if fair_sharing is not None:
        fair_sharing.pop("admissionFairSharingStatus", None)


def _cohort_to_v1beta2(obj: JSONObject, options: _Options) -> None:
    status = _child(obj, "status", "")
    if status is not None:
        _drop_admission_fair_sharing_status(status)


def _local_queue_to_v1beta2(obj: JSONObject, options: _Options) -> None:
    status = _child(obj, "status", "")
    if status is not None:
        status.pop("flavors", None)
        _rename(status, "flavorUsage", "flavorsUsage")


def _local_queue_to_v1beta1(obj: JSONObject, options: _Options) -> None:
    status = _child(obj, "status", "")
    if status is not None:
        _rename(status, "flavorsUsage", "flavorUsage")


def _multikueue_cluster_to_v1beta2(obj: JSONObject, options: _Options) -> None:
    spec = _child(obj, "spec", "")
    if spec is None:
        return
    kube_config = _child(spec, "kubeConfig", "spec")
    profile = _child(spec, "clusterProfileRef", "spec")
    for key in ("kubeConfig", "clusterProfileRef", "clusterSource"):
        spec.pop(key, None)
    source: JSONObject = {}
    # A v1beta1 kubeConfig without a location means "not set" (the field is not a pointer there).
    if kube_config is not None and _opt_str(kube_config, "location", "spec.kubeConfig"):
        source["kubeConfig"] = _kube_config(kube_config, "spec.kubeConfig")
    if profile is not None:
        source["clusterProfileRef"] = _profile_ref(profile, "spec.clusterProfileRef")
    spec["clusterSource"] = source


def _multikueue_cluster_to_v1beta1(obj: JSONObject, options: _Options) -> None:
    spec = _child(obj, "spec", "")
    if spec is None:
        return
    source = _child(spec, "clusterSource", "spec") or {}
    kube_config = _child(source, "kubeConfig", "spec.clusterSource")
    profile = _child(source, "clusterProfileRef", "spec.clusterSource")
    for key in ("kubeConfig", "clusterProfileRef", "clusterSource"):
        spec.pop(key, None)
    if kube_config is not None:
        spec["kubeConfig"] = _kube_config(kube_config, "spec.clusterSource.kubeConfig")
    if profile is not None:
        spec["clusterProfileRef"] = _profile_ref(profile, "spec.clusterSource.clusterProfileRef")


def _kube_config(kube_config: JSONObject, path: str) -> JSONObject:
    out = dict(kube_config)
    out["location"] = _opt_str(kube_config, "location", path)
    if not _opt_str(kube_config, "locationType", path):
        out.pop("locationType", None)
    return out


def _profile_ref(profile: JSONObject, path: str) -> JSONObject:
    out = dict(profile)
    if not _opt_str(profile, "name", path):
        out.pop("name", None)
    return out


def _drop_spec_field(field: str) -> Callable[[JSONObject, _Options], None]:
    def drop(obj: JSONObject, options: _Options) -> None:
        spec = _child(obj, "spec", "")
        if spec is not None:
            spec.pop(field, None)

    return drop


def _identity(obj: JSONObject, options: _Options) -> None:
    """The schemas agree; only apiVersion changes."""


_Rule = Callable[[JSONObject, _Options], None]

# kind -> (to v1beta2, to v1beta1)
_RULES: Mapping[str, tuple[_Rule, _Rule]] = {
    "Workload": (_workload_to_v1beta2, _workload_to_v1beta1),
    "ClusterQueue": (_cluster_queue_to_v1beta2, _cluster_queue_to_v1beta1),
    "LocalQueue": (_local_queue_to_v1beta2, _local_queue_to_v1beta1),
    "Cohort": (_cohort_to_v1beta2, _identity),
    "MultiKueueCluster": (_multikueue_cluster_to_v1beta2, _multikueue_cluster_to_v1beta1),
    # The kinds below use `conversion.strategy: None`: the API server swaps apiVersion and prunes
    # what the target schema lacks. Served here too so the endpoint never has to special-case them.
    "AdmissionCheck": (_drop_spec_field("retryDelayMinutes"), _identity),
    "MultiKueueConfig": (_identity, _drop_spec_field("quotaManagement")),
    "ResourceFlavor": (_identity, _identity),
    "WorkloadPriorityClass": (_identity, _identity),
    "Topology": (_identity, _identity),
    "ProvisioningRequestConfig": (_identity, _identity),
}

_VERSIONS = (constants.V1BETA1, constants.V1BETA2)


def supported_kinds() -> frozenset[str]:
    """Kinds `convert` accepts."""
    return frozenset(_RULES)


def convert(
    obj: Mapping[str, object],
    desired_api_version: str,
    *,
    tas_hostname_prefix_encoding: bool = True,
) -> JSONObject:
    """Return a converted deep copy of `obj` in `desired_api_version`; `obj` is left untouched.

    An object already in the desired version is returned as an unchanged copy. The keyword mirrors
    the TASAssignmentsEncodingByHostnamePrefix feature gate.
    """
    if not isinstance(obj, Mapping):
        raise ConversionError(f"object: expected an object, got {_kind_name(obj)}")
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if desired_api_version not in _VERSIONS:
        raise ConversionError(
            f"desiredAPIVersion {desired_api_version!r} is not supported, expected one of {', '.join(_VERSIONS)}"
        )
    if api_version not in _VERSIONS:
        raise ConversionError(f"apiVersion {api_version!r} is not supported, expected one of {', '.join(_VERSIONS)}")
    if not isinstance(kind, str) or kind not in _RULES:
        raise ConversionError(f"kind {kind!r} is not supported, expected one of {', '.join(sorted(_RULES))}")
    out = copy.deepcopy(dict(obj))
    if api_version != desired_api_version:
        to_v1beta2, to_v1beta1 = _RULES[kind]
        rule = to_v1beta2 if desired_api_version == constants.V1BETA2 else to_v1beta1
        rule(out, _Options(hostname_prefix_encoding=tas_hostname_prefix_encoding))
        out["apiVersion"] = desired_api_version
    return out
