"""Workload slices of elastic Jobs: which slice a Job's reconcile works on, and what it repairs.

Mirrors `pkg/workloadslicing/workloadslicing.go` (`Enabled`, `ReplacementForKey`, `SliceName`,
`FindNotFinishedWorkloads`, `FindLatestActiveWorkload`, `ScaledDown`, `EnsureWorkloadSlices`,
`normalizeActiveSlices`, `IsReplaced`) of upstream v0.19.2. Pure functions over Workload dicts:
`ensure_slices` returns a `SliceDecision` (which slice, which podSet counts to write on it, which
slices to finish) that the Job reconciler turns into steps.

A scale-up of an admitted slice is a new slice (a Workload that names the old one in
`workload-slice-replacement-for`); the scheduler counts the old slice's quota as the new one's and
finishes the old slice once the new one is admitted. A scale-down, or any change before the slice
holds quota, rewrites the podSet counts of the slice in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.objects import Obj

__all__ = [
    "SliceDecision",
    "counts",
    "ensure_slices",
    "is_elastic",
    "is_replaced",
    "latest_active",
    "normalize",
    "not_finished",
    "replacement_for",
    "scaled_down",
    "slice_name",
]


def _reserved(wl: Obj) -> bool:
    return o.is_condition_true(wl, c.WorkloadCondition.QUOTA_RESERVED)


def _evicted(wl: Obj) -> bool:
    return o.is_condition_true(wl, c.WorkloadCondition.EVICTED)


def is_elastic(obj: Obj, *, enabled: bool) -> bool:
    """`Enabled`: the feature gate is on and the object carries `elastic-job: "true"`."""
    return enabled and o.annotations(obj).get(c.ELASTIC_JOB) == "true"


def replacement_for(wl: Obj) -> str | None:
    """`ReplacementForKey`: the `namespace/name` of the slice `wl` replaces, if any."""
    return o.annotations(wl).get(c.WORKLOAD_SLICE_REPLACEMENT_FOR)


def slice_name(wl: Obj) -> str:
    """`SliceName`: the chain's first slice name, which pods of every slice carry."""
    return o.annotations(wl).get(c.WORKLOAD_SLICE_NAME) or str(o.meta(wl).get("name", ""))


def is_replaced(wl: Obj) -> bool:
    """`IsReplaced`: Finished=True with reason WorkloadSliceReplaced."""
    cond = o.find_condition(wl, c.WorkloadCondition.FINISHED)
    return (
        cond is not None
        and cond.get("status") == "True"
        and cond.get("reason") == c.FinishedReason.WORKLOAD_SLICE_REPLACED
    )


def counts(pod_sets: Sequence[Obj]) -> dict[str, int]:
    """`ExtractPodSetCounts`: podSet name → count."""
    return {str(ps.get("name", "")): int(ps.get("count", 1)) for ps in pod_sets}


def _fewer(a: Mapping[str, int], b: Mapping[str, int]) -> bool:
    """`PodSetsCounts.HasFewerReplicasThan`: some podSet of `a` is smaller in `b`'s terms."""
    return any(name in b and n < b[name] for name, n in a.items())


def scaled_down(old: Mapping[str, int], new: Mapping[str, int]) -> bool:
    """`ScaledDown`: some podSet shrank and none grew."""
    return _fewer(new, old) and not _fewer(old, new)


def not_finished(workloads: Sequence[Obj]) -> list[Obj]:
    """`FindNotFinishedWorkloads`: oldest first (creation time, then UID), without Finished ones."""
    ordered = sorted(
        workloads, key=lambda wl: (str(o.meta(wl).get("creationTimestamp") or ""), str(o.meta(wl).get("uid") or ""))
    )
    return [wl for wl in ordered if not o.is_condition_true(wl, c.WorkloadCondition.FINISHED)]


def latest_active(workloads: Sequence[Obj]) -> Obj | None:
    """`FindLatestActiveWorkload`: the newest unfinished slice holding quota and not being evicted
    (eviction sets its condition before the reservation goes, so an evicted slice's capacity is
    already on its way out)."""
    for wl in reversed(not_finished(workloads)):
        if _reserved(wl) and not _evicted(wl):
            return wl
    return None


@dataclass(frozen=True, slots=True)
class SliceDecision:
    """What `ensure_slices` decided: the slice to go on with (None: a new one is needed), whether the
    Job still fits the slice model (`compatible`; False falls back to the one-Workload path), the
    podSet counts to write on that slice first, and the slices to finish as (workload, reason, message)."""

    workload: Obj | None
    compatible: bool = True
    new_counts: Mapping[str, int] | None = None
    finish: tuple[tuple[Obj, str, str], ...] = ()


def normalize(workloads: Sequence[Obj]) -> tuple[Obj | None, tuple[tuple[Obj, str, str], ...]]:
    """`normalizeActiveSlices`: keep the admitted head of the replacement chain and at most one
    pending slice replacing it (else the newest non-evicted slice); finish every other one, as
    replaced when another slice names it, else as out of sync. `workloads` are oldest first."""
    replacements: dict[str, Obj] = {}
    for wl in workloads:
        key = replacement_for(wl)
        if key is None or _evicted(wl):
            continue
        existing = replacements.get(key)
        # Two slices claiming the same predecessor (a race): the one holding quota wins.
        if existing is None or (not _reserved(existing) and _reserved(wl)):
            replacements[key] = wl
    admitted: Obj | None = None
    newest: Obj | None = None
    for wl in workloads:
        if _evicted(wl):
            continue
        newest = wl
        if not _reserved(wl):
            continue
        repl = replacements.get(o.key(wl))
        if repl is not None and _reserved(repl):
            continue
        admitted = wl
    pending = None
    if admitted is not None:
        repl = replacements.get(o.key(admitted))
        if repl is not None and not _reserved(repl):
            pending = repl
    selected = pending if pending is not None else admitted if admitted is not None else newest
    finish = []
    for wl in workloads:
        if wl is selected or wl is admitted:
            continue
        if o.key(wl) in replacements:
            finish.append((wl, c.FinishedReason.WORKLOAD_SLICE_REPLACED, c.MSG_SLICE_REPLACED))
        else:
            finish.append((wl, c.FinishedReason.OUT_OF_SYNC, c.MSG_SLICE_OUT_OF_SYNC))
    return selected, tuple(finish)


def ensure_slices(job_pod_sets: Sequence[Obj], workloads: Sequence[Obj]) -> SliceDecision:
    """`EnsureWorkloadSlices` for a Job whose podSets are `job_pod_sets` and whose Workloads (any
    state) are `workloads`. Only podSet counts may change between slices: other podSet names make
    the Job incompatible. A slice without quota, or one being scaled down, takes the new counts in
    place; a scale-up of a slice holding quota needs a new slice (`workload` None)."""
    job_counts = counts(job_pod_sets)
    live = not_finished(workloads)
    finish: tuple[tuple[Obj, str, str], ...] = ()
    if not live:
        return SliceDecision(None)
    if len(live) == 1:
        selected: Obj | None = live[0]
    else:
        selected, finish = normalize(live)
        if selected is None:
            return SliceDecision(None, finish=finish)
    assert selected is not None
    wl_counts = counts((selected.get("spec") or {}).get("podSets") or ())
    if set(job_counts) != set(wl_counts):
        return SliceDecision(None, compatible=False, finish=finish)
    if job_counts == wl_counts:
        return SliceDecision(selected, finish=finish)
    if not _reserved(selected) or scaled_down(wl_counts, job_counts):
        return SliceDecision(selected, new_counts=job_counts, finish=finish)
    return SliceDecision(None, finish=finish)
