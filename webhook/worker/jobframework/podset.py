"""Pod set infos and pod set equality, shared by the Job and Pod integrations.

What an admission adds to a pod template (flavors' node labels and tolerations, queue labels,
admission checks' podSetUpdates), how that merges into a template, and when a Workload's pod sets
still describe its job. Mirrors, at upstream commit ff69552e79: `pkg/podset/podset.go`
(`PodSetInfo`, `FromAssignment`, `FromUpdate`, `Merge`, `IsPermanent`), `getPodSetsInfoFromStatus`
and `expectedRunningPodSets` in `pkg/controller/jobframework/reconciler.go`, and
`pkg/util/equality/podset.go` (`ComparePodSetSlices`). Pure functions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.api import constants as c
from webhook.api import fields
from webhook.api.objects import Obj
from webhook.core.topology import topology_request

__all__ = [
    "FlavorNotFound",
    "PermanentError",
    "PodSetInfo",
    "bad_length",
    "expected_running_pod_sets",
    "from_admission",
    "merge",
    "same_info",
    "same_pod_sets",
    "sanitize_env",
    "template_patch",
    "template_topology_request",
    "topology_request",
    "write_info",
]


class PermanentError(Exception):
    """`podset.IsPermanent`: the admission cannot be applied to the template; retrying cannot help."""


def bad_length(want: int, got: int) -> str:
    """`podset.BadPodSetsInfoLenError`: the admission names another number of podSets than the job has."""
    return f"invalid podset infos: expecting {want} podset, got {got}"


class FlavorNotFound(Exception):
    """A ResourceFlavor the admission names is not known (yet); the caller retries."""


@dataclass(slots=True)
class PodSetInfo:
    name: str = ""
    count: int = 0
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    scheduling_gates: list[Obj] = field(default_factory=list)

    @classmethod
    def of_template(cls, template: Obj) -> PodSetInfo:
        """The parts of a pod (template) an admission can change."""
        meta, spec = template.get("metadata") or {}, template.get("spec") or {}
        return cls(
            annotations=dict(meta.get("annotations") or {}),
            labels=dict(meta.get("labels") or {}),
            node_selector=dict(spec.get("nodeSelector") or {}),
            tolerations=list(spec.get("tolerations") or ()),
            scheduling_gates=list(spec.get("schedulingGates") or ()),
        )


def _conflict(base: Mapping[str, str], new: Mapping[str, str], what: str) -> None:
    for key in sorted(base):
        if key in new and base[key] != new[key]:
            raise PermanentError(
                f"invalid admission check PodSetUpdate: conflict for {what}: conflict for key={key}, value1={base[key]}, value2={new[key]}"
            )


def same_toleration(x: Obj, y: Obj) -> bool:
    """`tolerations.Equal`: key, effect, value and operator (empty operator = Equal)."""
    return all(x.get(k, "") == y.get(k, "") for k in ("key", "effect", "value")) and (x.get("operator") or "Equal") == (
        y.get("operator") or "Equal"
    )


def merge(base: PodSetInfo, new: PodSetInfo, *, elastic: bool = False) -> PodSetInfo:
    """`PodSetInfo.Merge`: maps must not disagree; tolerations and gates are appended once.

    With `elastic` (the ElasticJobsViaWorkloadSlices gate), a stale workload-slice-name annotation,
    and for an elastic admission the workload annotation, are overwritten instead (`podset.Merge`):
    a new slice chain, e.g. after the old slice was deleted by hand, has a new name."""
    if elastic:
        overridable = [c.WORKLOAD_SLICE_NAME]
        if c.WORKLOAD_SLICE_NAME in new.annotations:
            overridable.append(c.WORKLOAD_ANNOTATION)
        stale = {
            key
            for key in overridable
            if key in new.annotations and base.annotations.get(key, new.annotations[key]) != new.annotations[key]
        }
        if stale:
            base = PodSetInfo(
                base.name,
                base.count,
                {k: v for k, v in base.annotations.items() if k not in stale},
                base.labels,
                base.node_selector,
                base.tolerations,
                base.scheduling_gates,
            )
    _conflict(base.annotations, new.annotations, "annotations")
    _conflict(base.labels, new.labels, "labels")
    _conflict(base.node_selector, new.node_selector, "nodeSelector")
    out = PodSetInfo(
        base.name,
        base.count,
        {**base.annotations, **new.annotations},
        {**base.labels, **new.labels},
        {**base.node_selector, **new.node_selector},
        list(base.tolerations),
        list(base.scheduling_gates),
    )
    for tol in new.tolerations:
        if not any(same_toleration(t, tol) for t in out.tolerations):
            out.tolerations.append(tol)
    for gate in new.scheduling_gates:
        if gate not in out.scheduling_gates:
            out.scheduling_gates.append(gate)
    return out


def _map_patch(live: Mapping[str, str], want: Mapping[str, str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {key: None for key in live if key not in want}
    out.update({key: v for key, v in want.items() if live.get(key) != v})
    return out


def template_patch(template: Obj, info: PodSetInfo) -> dict[str, Any] | None:
    """The merge patch of a pod template that gives it `info`'s annotations, labels, node selector,
    tolerations and scheduling gates, and leaves the rest alone (`RestorePodSpec`'s fields, also
    what `Merge` writes); None when they already are. For templates inside maps, which a merge
    patch merges key by key, so a key that must go is sent as null (a map left empty: the map)."""
    live = PodSetInfo.of_template(template)
    patch: dict[str, dict[str, Any]] = {"metadata": {}, "spec": {}}
    for section, key, have, want in (
        ("metadata", "annotations", live.annotations, info.annotations),
        ("metadata", "labels", live.labels, info.labels),
        ("spec", "nodeSelector", live.node_selector, info.node_selector),
    ):
        changes = _map_patch(have, want)
        if changes:
            patch[section][key] = changes if want else None  # an emptied map goes as a whole
    for key, have_list, want_list in (
        ("tolerations", live.tolerations, info.tolerations),
        ("schedulingGates", live.scheduling_gates, info.scheduling_gates),
    ):
        if have_list != want_list:
            patch["spec"][key] = copy.deepcopy(want_list) or None
    out = {section: body for section, body in patch.items() if body}
    return out or None


def template_topology_request(template: Obj) -> dict[str, Any] | None:
    """`NewPodSetTopologyRequest(meta).Build()` with no pod index label (KubeRay's and Spark's pods
    have none): None when the template asks for no topology. Raises ValueError with Go's message."""
    req = topology_request((template.get("metadata") or {}).get("annotations") or {}, pod_index_label="")
    req.pop("podIndexLabel", None)
    return req or None


def write_info(template: dict[str, Any], info: PodSetInfo) -> None:
    """Set what an admission changes in a pod template (in place) to `info`'s, dropping empty fields
    (Go's nil maps and slices, which the API server would not store either): for templates inside
    lists, which a merge patch replaces whole (a JobSet's replicatedJobs, a RayCluster's worker groups)."""
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    for node, key, value in (
        (meta, "annotations", info.annotations),
        (meta, "labels", info.labels),
        (spec, "nodeSelector", info.node_selector),
        (spec, "tolerations", info.tolerations),
        (spec, "schedulingGates", info.scheduling_gates),
    ):
        if value:
            node[key] = copy.deepcopy(value)
        else:
            node.pop(key, None)
    if not meta:
        template.pop("metadata")


def same_info(a: PodSetInfo, b: PodSetInfo) -> bool:
    """The parts an admission changes are equal (`RestorePodSpec` would change nothing)."""
    return (a.annotations, a.labels, a.node_selector, a.tolerations, a.scheduling_gates) == (
        b.annotations,
        b.labels,
        b.node_selector,
        b.tolerations,
        b.scheduling_gates,
    )


def from_admission(
    wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool = False
) -> list[PodSetInfo]:
    """`getPodSetsInfoFromStatus`: one info per podSetAssignment, from its flavors (name → spec),
    the queue labels, the TAS annotation and gate, the slice name of an elastic Workload (`elastic`:
    the ElasticJobsViaWorkloadSlices gate), and the admission checks' podSetUpdates."""
    meta = wl.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    slice_name = (
        str(annotations.get(c.WORKLOAD_SLICE_NAME) or meta.get("name") or "")
        if elastic and annotations.get(c.ELASTIC_JOB) == "true"
        else None
    )
    status = wl.get("status") or {}
    admission = status.get("admission") or {}
    pod_sets = (wl.get("spec") or {}).get("podSets") or []
    infos = []
    for i, psa in enumerate(admission.get("podSetAssignments") or ()):
        ps = pod_sets[i] if i < len(pod_sets) else {}
        info = PodSetInfo(name=psa.get("name", ""), count=psa.get("count", ps.get("count", 1)))
        if tas and psa.get("topologyAssignment") is not None:
            req = ps.get("topologyRequest") or {}
            if not any(k in req for k in ("required", "preferred", "unconstrained")):
                info.annotations[c.PODSET_UNCONSTRAINED_TOPOLOGY] = "true"
            info.scheduling_gates.append({"name": c.TOPOLOGY_GATE})
        seen: set[str] = set()
        for _, flavor in sorted((psa.get("flavors") or {}).items()):
            if flavor in seen:
                continue
            if flavor not in flavors:
                raise FlavorNotFound(f'resourceflavors.kueue.x-k8s.io "{flavor}" not found')
            info.node_selector.update(flavors[flavor].get("nodeLabels") or {})
            info.tolerations.extend(flavors[flavor].get("tolerations") or ())
            seen.add(flavor)
        if tas:
            info.annotations[c.WORKLOAD_ANNOTATION] = str(meta.get("name") or "")
        if slice_name is not None:
            info.annotations[c.WORKLOAD_SLICE_NAME] = slice_name
        info.labels[c.PODSET_LABEL] = info.name
        if assign_queue_labels:
            info.labels[c.LOCAL_QUEUE_NAME_LABEL] = (wl.get("spec") or {}).get("queueName", "")
            cq = admission.get("clusterQueue", "")
            if not fields.is_dns1123_label(cq):
                info.labels[c.CLUSTER_QUEUE_NAME_LABEL] = cq
        for check in status.get("admissionChecks") or ():
            update = next((u for u in check.get("podSetUpdates") or () if u.get("name") == info.name), None)
            if update is None:
                continue
            new = PodSetInfo(
                annotations=dict(update.get("annotations") or {}),
                labels=dict(update.get("labels") or {}),
                node_selector=dict(update.get("nodeSelector") or {}),
                tolerations=list(update.get("tolerations") or ()),
            )
            try:
                info = merge(info, new)
            except PermanentError as exc:
                raise PermanentError(f'in admission check "{check.get("name")}": {exc}') from exc
        infos.append(info)
    return infos


# --- equivalence ----------------------------------------------------------------------------------


def _semantic(value: Any) -> Any:
    """Drop nulls and empty collections, as `equality.Semantic.DeepEqual` treats nil == empty."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [], "", False, 0)}
    if isinstance(value, list | tuple):
        return [_semantic(v) for v in value]
    return value


def sanitize_env(spec: dict[str, Any]) -> None:
    """`SanitizePodSet` (`jobframework/utils.go`): each container keeps one env var per name, at the
    position of its first occurrence, with the value of its last."""
    for key in ("containers", "initContainers"):
        for ctr in spec.get(key) or ():
            if not ctr.get("env"):
                continue
            merged: dict[str, Any] = {}
            for var in ctr["env"]:
                merged[var.get("name")] = var
            ctr["env"] = list(merged.values())


def same_pod_sets(a: Sequence[Obj], b: Sequence[Obj], *, ignore_tolerations: bool) -> bool:
    """`equality.ComparePodSetSlices`: count, minCount, containers, initContainers, tolerations."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.get("count", 1) != y.get("count", 1) or x.get("minCount", -1) != y.get("minCount", -1):
            return False
        xs, ys = (x.get("template") or {}).get("spec") or {}, (y.get("template") or {}).get("spec") or {}
        keys = (
            ("containers", "initContainers") if ignore_tolerations else ("containers", "initContainers", "tolerations")
        )
        if any(_semantic(xs.get(k)) != _semantic(ys.get(k)) for k in keys):
            return False
    return True


def _can_be_partially_admitted(pod_sets: Sequence[Obj]) -> bool:
    return any(ps.get("count", 1) > ps.get("minCount", ps.get("count", 1)) for ps in pod_sets)


def expected_running_pod_sets(
    wl: Obj, flavors: Mapping[str, Obj], *, tas: bool, assign_queue_labels: bool, elastic: bool = False
) -> list[dict[str, Any]] | None:
    """`expectedRunningPodSets`: the Workload's pod sets as its admission runs them (templates with
    the admission merged in, the assigned count under partial admission); None when the Workload
    holds no quota or its admission cannot be applied."""
    conds = (wl.get("status") or {}).get("conditions") or ()
    if not any(x.get("type") == c.WorkloadCondition.QUOTA_RESERVED and x.get("status") == "True" for x in conds):
        return None
    try:
        infos = {
            info.name: info
            for info in from_admission(wl, flavors, tas=tas, assign_queue_labels=assign_queue_labels, elastic=elastic)
        }
    except (FlavorNotFound, PermanentError):
        return None
    out = copy.deepcopy(list((wl.get("spec") or {}).get("podSets") or ()))
    partial = _can_be_partially_admitted(out)
    for ps in out:
        info = infos.get(ps.get("name", ""))
        if info is None:
            return None
        template = ps.setdefault("template", {})
        try:
            merged = merge(PodSetInfo.of_template(template), info, elastic=elastic)
        except PermanentError:
            return None
        meta, spec = template.setdefault("metadata", {}), template.setdefault("spec", {})
        meta["labels"], meta["annotations"] = merged.labels, merged.annotations
        spec["nodeSelector"], spec["tolerations"], spec["schedulingGates"] = (
            merged.node_selector,
            merged.tolerations,
            merged.scheduling_gates,
        )
        if partial and ps.get("minCount") is not None:
            ps["count"] = info.count
    return out
