"""The TopologyAwareScheduling checks a job webhook runs on its pod templates' annotations.

Mirrors `ValidateTASPodSetRequest`, `ValidateSliceSizeAnnotationUpperBound` and
`ValidatePodSetGroupingTopology` of `pkg/controller/jobframework/tas_validation.go` (upstream
v0.19.2), with their messages. Every job webhook whose upstream runs them calls them as it does:
batch/v1 Job, Pod, JobSet, LeaderWorkerSet, TrainJob, MPIJob and the training-operator kinds
(`job.py`, `pod.py`, `jobset.py`, `leaderworkerset.py`, `trainjob.py`, `mpijob.py`, `kubeflow.py`).
Not reproduced: the checks of the multi-layer
`podset-slice-required-topology-constraints` annotation (gate TASMultiLayerTopology), whose
podSets this project does not build yet either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api import constants as c
from webhook.api import fields as f

__all__ = [
    "build_error",
    "grouping_request",
    "validate_grouping",
    "validate_pod_set_request",
    "validate_slice_size_upper_bound",
]

_ONE_OF = (c.PODSET_REQUIRED_TOPOLOGY, c.PODSET_PREFERRED_TOPOLOGY, c.PODSET_UNCONSTRAINED_TOPOLOGY)


def _go_int32(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 32)`; None where Go fails."""
    try:
        value = f.go_atoi(text)
    except ValueError:
        return None
    return value if -(2**31) <= value < 2**31 else None


def _is_uint64(text: str) -> bool:
    """`strconv.ParseUint(text, 10, 64)` succeeds."""
    return text.isascii() and text.isdigit() and int(text) < 2**64


def build_error(annotations: Mapping[str, str]) -> str | None:
    """Go's error when the podSet's topology request cannot be built from these annotations
    (`NewPodSetTopologyRequest(...).Build()`: an unconstrained flag that is not a boolean, when it
    is the request; a slice size that is not an int32, beside a slice topology); None when it can."""
    ann = annotations
    is_the_request = c.PODSET_REQUIRED_TOPOLOGY not in ann and c.PODSET_PREFERRED_TOPOLOGY not in ann
    if is_the_request and c.PODSET_UNCONSTRAINED_TOPOLOGY in ann:
        try:
            f.go_parse_bool(ann[c.PODSET_UNCONSTRAINED_TOPOLOGY])
        except ValueError as exc:
            return str(exc)
    if c.PODSET_SLICE_REQUIRED_TOPOLOGY in ann and c.PODSET_SLICE_SIZE in ann:
        text = ann[c.PODSET_SLICE_SIZE]
        if _go_int32(text) is None:
            in_range = text.lstrip("+-").isascii() and text.lstrip("+-").isdigit()
            return f'strconv.ParseInt: parsing "{text}": {"value out of range" if in_range else "invalid syntax"}'
    return None


def grouping_request(annotations: Mapping[str, str]) -> dict[str, str]:
    """What podSet grouping reads of a topology request built from these annotations: its
    required or preferred level and its `podSetGroupName` (set only beside one of them)."""
    out: dict[str, str] = {}
    if c.PODSET_REQUIRED_TOPOLOGY in annotations:
        out["required"] = annotations[c.PODSET_REQUIRED_TOPOLOGY]
    elif c.PODSET_PREFERRED_TOPOLOGY in annotations:
        out["preferred"] = annotations[c.PODSET_PREFERRED_TOPOLOGY]
    if out and c.PODSET_GROUP_NAME in annotations:
        out["podSetGroupName"] = annotations[c.PODSET_GROUP_NAME]
    return out


def validate_pod_set_request(meta_path: f.Path, annotations: Mapping[str, str]) -> list[f.FieldError]:
    """`ValidateTASPodSetRequest`: at most one of required / preferred / unconstrained, label-name
    values, the podSet group name's rules, a boolean `unconstrained`, a slice size of at least 1 and
    the slice annotations only together. `meta_path` is the template's metadata path."""
    path = meta_path.child("annotations")
    ann = annotations
    required, preferred = c.PODSET_REQUIRED_TOPOLOGY in ann, c.PODSET_PREFERRED_TOPOLOGY in ann
    slice_required, slice_size = c.PODSET_SLICE_REQUIRED_TOPOLOGY in ann, c.PODSET_SLICE_SIZE in ann
    errs: list[f.FieldError] = []
    if sum(key in ann for key in _ONE_OF) > 1:
        listed = ", ".join(f'"{key}"' for key in _ONE_OF)
        errs.append(f.invalid_without_value(path, f"must not contain more than one topology annotation: [{listed}]"))
    for key in (c.PODSET_REQUIRED_TOPOLOGY, c.PODSET_PREFERRED_TOPOLOGY, c.PODSET_SLICE_REQUIRED_TOPOLOGY):
        if key in ann:
            errs += f.validate_label_name(ann[key], path.key(key))
    if c.PODSET_GROUP_NAME in ann:
        group_path = path.key(c.PODSET_GROUP_NAME)
        if _is_uint64(ann[c.PODSET_GROUP_NAME]):
            errs.append(f.invalid(group_path, ann[c.PODSET_GROUP_NAME], "must not be a number"))
        if slice_size:
            errs.append(f.forbidden(group_path, f"may not be set when '{c.PODSET_SLICE_SIZE}' is specified"))
        if slice_required:
            errs.append(
                f.forbidden(group_path, f"may not be set when '{c.PODSET_SLICE_REQUIRED_TOPOLOGY}' is specified")
            )
        if not preferred and not required:
            errs.append(
                f.forbidden(
                    group_path,
                    f"may not be set when neither '{c.PODSET_PREFERRED_TOPOLOGY}' nor "
                    f"'{c.PODSET_REQUIRED_TOPOLOGY}' is specified",
                )
            )
    if c.PODSET_UNCONSTRAINED_TOPOLOGY in ann:
        try:
            f.go_parse_bool(ann[c.PODSET_UNCONSTRAINED_TOPOLOGY])
        except ValueError:
            errs.append(
                f.invalid(
                    path.key(c.PODSET_UNCONSTRAINED_TOPOLOGY),
                    ann[c.PODSET_UNCONSTRAINED_TOPOLOGY],
                    "must be a boolean value",
                )
            )
    if slice_size:
        size = _go_int32(ann[c.PODSET_SLICE_SIZE])
        if size is None:
            errs.append(f.invalid(path.key(c.PODSET_SLICE_SIZE), ann[c.PODSET_SLICE_SIZE], "must be a numeric value"))
        elif size < 1:
            errs.append(
                f.invalid(path.key(c.PODSET_SLICE_SIZE), ann[c.PODSET_SLICE_SIZE], "must be greater than or equal to 1")
            )
    if slice_required and not slice_size:
        errs.append(
            f.required(
                path.key(c.PODSET_SLICE_SIZE), f"must be set when '{c.PODSET_SLICE_REQUIRED_TOPOLOGY}' is specified"
            )
        )
    if slice_size and not slice_required:
        errs.append(
            f.forbidden(
                path.key(c.PODSET_SLICE_SIZE),
                f"may not be set when '{c.PODSET_SLICE_REQUIRED_TOPOLOGY}' is not specified",
            )
        )
    return errs


def validate_slice_size_upper_bound(
    meta_path: f.Path, annotations: Mapping[str, str], count: int | None
) -> list[f.FieldError]:
    """`ValidateSliceSizeAnnotationUpperBound`: the slice size is at most the podSet's `count`
    (None: no podSet, nothing to check)."""
    if count is None or c.PODSET_SLICE_SIZE not in annotations:
        return []
    path = meta_path.child("annotations").key(c.PODSET_SLICE_SIZE)
    text = annotations[c.PODSET_SLICE_SIZE]
    size = _go_int32(text)
    if size is None:
        return [f.invalid(path, text, "must be a numeric value")]
    if size > count:
        return [f.invalid(path, text, f"must not be greater than pod set count {count}")]
    return []


def _consistent(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """`topologyRequestsValid`: each names a required or a preferred level, and the same one."""
    if not any(k in a for k in ("required", "preferred")) or not any(k in b for k in ("required", "preferred")):
        return False
    return a.get("required") == b.get("required") and a.get("preferred") == b.get("preferred")


def validate_grouping(
    pod_sets: Sequence[Mapping[str, Any]], annotations_paths: Mapping[str, f.Path]
) -> list[f.FieldError]:
    """`ValidatePodSetGroupingTopology`: podSets sharing a `podSetGroupName` come in pairs, one of
    a single pod, with the same required or preferred level. `pod_sets`: name, count and
    `topologyRequest` (`grouping_request`'s keys suffice); `annotations_paths`: podSet name → its
    template's annotations path. Groups in first-seen order."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for ps in pod_sets:
        name = (ps.get("topologyRequest") or {}).get("podSetGroupName")
        if name is not None:
            groups.setdefault(name, []).append(ps)
    errs: list[f.FieldError] = []
    for group, members in groups.items():
        if len(members) != 2:
            errs += [
                f.invalid(
                    annotations_paths[ps["name"]].key(c.PODSET_GROUP_NAME),
                    group,
                    f"can only define groups of exactly 2 pod sets, got: {len(members)} pod set(s)",
                )
                for ps in members
            ]
            continue
        first, second = members
        path1, path2 = annotations_paths[first["name"]], annotations_paths[second["name"]]
        if first["count"] != 1 and second["count"] != 1:
            message = (
                "can only define groups where at least one pod set has only 1 replica, got: "
                f"{first['count']} replica(s) and {second['count']} replica(s) in the group"
            )
            errs += [
                f.invalid(path1.key(c.PODSET_GROUP_NAME), group, message),
                f.invalid(path2.key(c.PODSET_GROUP_NAME), group, message),
            ]
        if not _consistent(first["topologyRequest"], second["topologyRequest"]):
            template = (
                f"must specify '{c.PODSET_REQUIRED_TOPOLOGY}' or '{c.PODSET_PREFERRED_TOPOLOGY}' topology "
                f"consistent with '{{}}' in group '{group}'"
            )
            errs += [
                f.invalid_without_value(path1, template.format(path2)),
                f.invalid_without_value(path2, template.format(path1)),
            ]
    return errs
