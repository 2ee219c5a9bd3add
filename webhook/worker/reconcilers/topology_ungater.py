"""The TAS topology ungater: the pods of a Workload admitted by topology-aware scheduling wait behind
the `kueue.x-k8s.io/topology` scheduling gate until they are given a domain of the Workload's
`topologyAssignment`; then the gate is lifted and the domain's level labels (e.g. block, rack,
hostname) are added to the pod's nodeSelector, so kube-scheduler can only place it there.

Mirrors `pkg/controller/tas/topology_ungater.go` with `pkg/controller/tas/{pods.go,indexer}` and the
`pkg/util/tas` / `pkg/util/pod` helpers it uses (upstream v0.19.2):

- per pod set with a topology assignment, its live pods (those of the Workload's slice carrying the
  pod set's label, not Succeeded or Failed) are matched to domains: by rank when every pod carries
  the pod set's `podIndexLabel` (and `subGroupIndexLabel`: a JobSet's job index) and the ranks are
  distinct and in range, shifted by `kueue.x-k8s.io/pod-index-offset` and, for a pod-set group (an
  LWS leader and its workers), by the leader's count; otherwise greedily, pods already ungated
  counting against the domain their nodeSelector names;
- a gated pod is not ungated onto a node listed in `status.unhealthyNodes` (it waits for the
  replacement domain);
- expectations: once pods are patched, the Workload is not planned again until the watch shows
  each of them ungated (or gone), so no pod is given two domains.

`plan` is pure; `TopologyUngater` follows the pods of started pod sets (label `kueue.x-k8s.io/podset`
present, the narrowest selector the API offers for them) through its own informer, reads Workloads
from the Manager's store and patches the pods.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from webhook import kube as k
from webhook import metrics as m
from webhook.api import constants as c
from webhook.api import fields
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.core import concurrent_admission as ca
from webhook.core.tas import from_v1beta2
from webhook.core.workload import parse_time
from webhook.worker.reporter import ROLE
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "CONTROLLER_NAME",
    "HOSTNAME_LABEL",
    "Expectations",
    "OffsetError",
    "TopologyUngater",
    "Ungate",
    "has_topology_gate",
    "is_admitted_by_tas",
    "is_tas",
    "plan",
    "slice_name",
]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "tas-topology-ungater"  # `TASTopologyUngater`
HOSTNAME_LABEL = "kubernetes.io/hostname"
PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
_PODS = "/api/v1/pods"
UPDATES_BATCH_S = 1.0  # `constants.UpdatesBatchPeriod`: a pod event reconciles its Workload this much later
PENDING_RETRY_S = 0.2  # a reconcile refused while ungates are unobserved is retried this much later
_DOMAIN_SEP = ","  # `TopologyDomainID`: level values joined by a comma


class OffsetError(ValueError):
    """A pod's `kueue.x-k8s.io/pod-index-offset` is not an integer (`errParseOffsetAnnotation`)."""


@dataclass(frozen=True, slots=True)
class Ungate:
    """Lift the topology gate of `pod` and add `node_labels` to its nodeSelector."""

    pod: Obj
    node_labels: dict[str, str]


def is_tas(pod: Obj) -> bool:
    """The pod belongs to a TAS pod set: explicit topology annotations or the implicit
    unconstrained one (`utiltas.IsTAS`)."""
    ann = o.annotations(pod)
    return any(
        key in ann
        for key in (
            c.PODSET_PREFERRED_TOPOLOGY,
            c.PODSET_REQUIRED_TOPOLOGY,
            c.PODSET_SLICE_REQUIRED_TOPOLOGY,
            PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
            c.PODSET_UNCONSTRAINED_TOPOLOGY,
        )
    )


def is_admitted_by_tas(wl: Obj) -> bool:
    """Admitted, with a topology assignment in at least one pod set (`IsAdmittedByTAS`)."""
    admission = (wl.get("status") or {}).get("admission")
    if not admission or not o.is_admitted(wl):
        return False
    return any(psa.get("topologyAssignment") is not None for psa in admission.get("podSetAssignments") or ())


def slice_name(wl: Obj) -> str:
    """The name the Workload's pods carry (`workloadslicing.SliceName`)."""
    return o.annotations(wl).get(c.WORKLOAD_SLICE_NAME) or o.name(wl)


def pod_slice_name(pod: Obj) -> str | None:
    """The Workload slice a pod belongs to (`IndexPodWorkloadSliceName`)."""
    ann = o.annotations(pod)
    if c.WORKLOAD_SLICE_NAME in ann:
        return ann[c.WORKLOAD_SLICE_NAME]
    return ann.get(c.WORKLOAD_ANNOTATION)


def _gates(pod: Obj) -> list[Obj]:
    return list((pod.get("spec") or {}).get("schedulingGates") or ())


def has_topology_gate(pod: Obj) -> bool:
    return any(g.get("name") == c.TOPOLOGY_GATE for g in _gates(pod))


def _terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _domain_id(levels: Sequence[str], labels: Mapping[str, str]) -> str:
    return _DOMAIN_SEP.join(labels.get(level, "") for level in levels)


def _read_uint_below(pod: Obj, label: str, bound: int) -> int | None:
    """`ReadUIntFromLabelBelowBound`: None when the label is missing, not a base-10 unsigned
    integer, or not below `bound`."""
    value = o.labels(pod).get(label)
    if value is None or not value or not (value.isascii() and value.isdigit()):
        return None
    n = int(value)
    return n if n < bound else None


def _ranks(
    pods: Sequence[Obj], count: int, req: Mapping[str, Any], offset: int, max_rank: int
) -> dict[int, Obj] | None:
    """`readRanksForLabels`: each pod's rank, or None when ranks cannot be used (a missing or
    bad label, no positive subGroupCount, a rank out of [0, count) or taken twice)."""
    single = count
    sub_label = req.get("subGroupIndexLabel")
    sub_count = int(req.get("subGroupCount") or 0)
    if sub_label is not None:
        if sub_count <= 0:
            return None
        single = count // sub_count
    out: dict[int, Obj] = {}
    for pod in pods:
        index = _read_uint_below(pod, req["podIndexLabel"], max_rank)
        if index is None:
            return None
        rank = index - offset
        if sub_label is not None:
            job = _read_uint_below(pod, sub_label, sub_count)
            if job is None or index >= single:
                return None
            rank = index + job * single - offset
        if rank >= count or rank < 0 or rank in out:
            return None
        out[rank] = pod
    return out


def _by_ranks(
    pods: Sequence[Obj],
    count: int,
    req: Mapping[str, Any] | None,
    offset: int,
    max_rank: int,
    levels: Sequence[str],
    rank_domains: Sequence[str],
) -> list[tuple[Obj, str]] | None:
    """`readRanksIfAvailable` + `assignGatedPodsToDomainsByRanks`: the gated pods with the domain
    of their rank; None (greedy instead) when ranks cannot be read, a rank has no domain, or an
    ungated pod runs outside its rank's domain."""
    if req is None or req.get("podIndexLabel") is None:
        return None
    ranks = _ranks(pods, count, req, offset, max_rank)
    if ranks is None:
        return None
    for rank, pod in ranks.items():
        if rank >= len(rank_domains):
            return None
        if not has_topology_gate(pod):
            selector = (pod.get("spec") or {}).get("nodeSelector") or {}
            if _domain_id(levels, selector) != rank_domains[rank]:
                return None
    return [(pod, rank_domains[rank]) for rank, pod in sorted(ranks.items()) if has_topology_gate(pod)]


def _greedy(pods: Sequence[Obj], levels: Sequence[str], domains: Sequence[tuple[str, int]]) -> list[tuple[Obj, str]]:
    """`assignGatedPodsToDomainsGreedy`: domains in assignment order take gated pods in list order
    up to their count less the pods already ungated onto them."""
    gated = [p for p in pods if has_topology_gate(p)]
    ungated: dict[str, int] = {}
    for pod in pods:
        if not has_topology_gate(pod):
            did = _domain_id(levels, (pod.get("spec") or {}).get("nodeSelector") or {})
            ungated[did] = ungated.get(did, 0) + 1
    out: list[tuple[Obj, str]] = []
    for did, count in domains:
        take = min(max(count - ungated.get(did, 0), 0), len(gated) - len(out))
        out.extend((pod, did) for pod in gated[len(out) : len(out) + take])
    return out


def _rank_offsets(
    assignments: Sequence[Obj], requests: Mapping[str, Mapping[str, Any] | None], counts: Mapping[str, int]
) -> tuple[dict[str, int], dict[str, int]]:
    """Per pod set, the first rank and the bound of its pod indexes: in a pod-set group of two
    (an LWS leader and its workers) the smaller set ranks first and the larger after it."""
    groups: dict[str, list[str]] = {}
    for i, psa in enumerate(assignments):
        name = str(psa.get("name", ""))
        req = requests.get(name) or {}
        group = req.get("podSetGroupName")
        groups.setdefault(str(group) if group is not None else str(i), []).append(name)
    offsets: dict[str, int] = {}
    bounds: dict[str, int] = {}
    for names in groups.values():
        if len(names) > 1:
            small, large = names[0], names[1]
            if counts[small] > counts[large]:
                small, large = large, small
            offsets[small], offsets[large] = 0, counts[small]
            bounds[small], bounds[large] = counts[small], counts[large] + counts[small]
        else:
            offsets[names[0]], bounds[names[0]] = 0, counts[names[0]]
    return offsets, bounds


def plan(wl: Obj, pods: Iterable[Obj]) -> list[Ungate]:
    """The gated pods of `wl` (admitted by TAS) to ungate now, each with its domain's node labels.
    `pods` are the pods of the Workload's slice (any order; listed by namespace and name as
    upstream's client lists them). Raises OffsetError for an unparsable pod-index offset."""
    if not is_admitted_by_tas(wl):
        return []
    status = wl.get("status") or {}
    assignments: list[Obj] = list((status.get("admission") or {}).get("podSetAssignments") or ())
    pod_sets = {str(ps.get("name", "")): ps for ps in (wl.get("spec") or {}).get("podSets") or ()}
    requests = {name: ps.get("topologyRequest") for name, ps in pod_sets.items()}
    counts = {
        str(psa.get("name", "")): int(psa.get("count", (pod_sets.get(str(psa.get("name", ""))) or {}).get("count", 1)))
        for psa in assignments
    }
    offsets, bounds = _rank_offsets(assignments, requests, counts)
    unhealthy = {str(n.get("name", "")) for n in status.get("unhealthyNodes") or ()}
    live = sorted((p for p in pods if not _terminated(p)), key=lambda p: (o.namespace(p), o.name(p)))
    out: list[Ungate] = []
    for psa in assignments:
        ta_obj = psa.get("topologyAssignment")
        if ta_obj is None:
            continue
        name = str(psa.get("name", ""))
        mine = [p for p in live if o.labels(p).get(c.PODSET_LABEL) == name]
        offset, bound = offsets[name], bounds[name]
        if mine and c.POD_INDEX_OFFSET_ANNOTATION in o.annotations(mine[0]):
            text = o.annotations(mine[0])[c.POD_INDEX_OFFSET_ANNOTATION]
            try:
                shift = fields.go_atoi(text)
            except ValueError as exc:
                raise OffsetError(f"failed to parse offset annotation: {exc}") from exc
            offset, bound = offset + shift, bound + shift
        ta = from_v1beta2(ta_obj)
        levels = ta.levels
        domains = [(_DOMAIN_SEP.join(d.values), d.count) for d in ta.domains]
        values = {_DOMAIN_SEP.join(d.values): d.values for d in ta.domains}
        rank_domains = [did for did, count in domains for _ in range(count)]
        placed = _by_ranks(mine, counts[name], requests.get(name), offset, bound, levels, rank_domains)
        if placed is None:
            placed = _greedy(mine, levels, domains)
        if unhealthy and levels and levels[-1] == HOSTNAME_LABEL:
            # Such a pod could never schedule there; it waits for the replacement domain.
            placed = [(pod, did) for pod, did in placed if did not in unhealthy]
        out.extend(Ungate(pod, dict(zip(levels, values[did], strict=True))) for pod, did in placed)
    return out


class Expectations:
    """Pods patched per Workload key whose ungating the watch has not shown yet
    (`expectations.Store`): a Workload is planned again only once none is left."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, set[str]] = {}

    def expect(self, key: str, uids: Iterable[str]) -> None:
        with self._lock:
            self._pending.setdefault(key, set()).update(uids)

    def observed(self, key: str, uid: str) -> None:
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None:
                pending.discard(uid)
                if not pending:
                    del self._pending[key]

    def satisfied(self, key: str) -> bool:
        with self._lock:
            return key not in self._pending


class TopologyUngater:
    """One work queue keyed by Workload `namespace/name`: queued by TAS-admitted Workloads' events
    and, one batch period later, by events of their pods."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        informers: k.SharedInformers,
        *,
        stop: threading.Event,
        concurrent_admission: bool = False,
        group_name_annotation: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.kube = kube
        self.store = store
        self.informers = informers
        self.concurrent_admission = concurrent_admission
        self.group_name_annotation = group_name_annotation  # WorkloadIdentifierAnnotations
        self.clock = clock
        self.expectations = Expectations()
        self.queue: WorkQueue[object] = WorkQueue(
            "tas-topology-ungater", self.reconcile, workers=2, stop=stop, controller="tas_topology_ungater"
        )
        self._lock = threading.Lock()
        # (namespace, workload slice name) -> pod key -> pod
        self._pods: dict[tuple[str, str], dict[str, Obj]] = {}
        self._slot_of: dict[str, tuple[str, str]] = {}  # pod key -> its key in `_pods`

    def start(self) -> None:
        self.queue.start()
        self.informers.subscribe(_PODS, self.on_pod_list, self.on_pod_event, query={"labelSelector": c.PODSET_LABEL})

    # == watch events ==============================================================================
    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        if kind == "workloads" and self._should_reconcile(obj):
            self.queue.add(o.key(obj))

    def _should_reconcile(self, wl: Obj) -> bool:
        if self.concurrent_admission and ca.is_variant(wl):
            return False
        return is_admitted_by_tas(wl)

    def on_pod_list(self, items: list[dict[str, Any]]) -> None:
        with self._lock:
            self._pods, self._slot_of = {}, {}
            for pod in items:
                self._index(pod, deleted=False)
        for pod in items:
            self._pod_changed(pod, deleted=False)

    def on_pod_event(self, etype: str, pod: dict[str, Any]) -> None:
        deleted = etype == "DELETED"
        with self._lock:
            self._index(pod, deleted=deleted)
        self._pod_changed(pod, deleted=deleted)

    def _index(self, pod: Obj, *, deleted: bool) -> None:
        """Keep the pods per Workload slice (caller holds the lock)."""
        key = o.key(pod)
        before = self._slot_of.pop(key, None)
        if before is not None:
            slot = self._pods.get(before) or {}
            slot.pop(key, None)
            if not slot:
                self._pods.pop(before, None)
        sl = pod_slice_name(pod)
        if deleted or sl is None:
            return
        where = (o.namespace(pod), sl)
        self._pods.setdefault(where, {})[key] = pod
        self._slot_of[key] = where

    def _pod_changed(self, pod: Obj, *, deleted: bool) -> None:
        """`podHandler`: a TAS pod queues its Workload; an ungated or deleted one is observed."""
        if not is_tas(pod):
            return
        wl_name = o.annotations(pod).get(c.WORKLOAD_ANNOTATION)
        if wl_name is None:
            return
        key = f"{o.namespace(pod)}/{wl_name}"
        if deleted or not has_topology_gate(pod):
            self.expectations.observed(key, o.uid(pod))
        self.queue.add_after(key, UPDATES_BATCH_S)

    def pods_of(self, namespace: str, slice_: str) -> list[Obj]:
        with self._lock:
            return list((self._pods.get((namespace, slice_)) or {}).values())

    # == the reconcile =============================================================================
    def reconcile(self, key: str, _items: object = ()) -> None:
        wl = self.store.get("workloads", key)
        if wl is None:
            return
        if not self.expectations.satisfied(key):
            raise Retry(PENDING_RETRY_S, "pending ungate operations")
        if not is_admitted_by_tas(wl):
            return
        try:
            todo = plan(wl, self.pods_of(o.namespace(wl), slice_name(wl)))
        except OffsetError as exc:
            log.error("topology ungating failed", extra={"object": key, "kind": "Workload", "error": str(exc)})
            raise Retry(1.0, str(exc)) from exc
        if not todo:
            return
        log.info("pods to ungate", extra={"object": key, "kind": "Workload", "count": len(todo)})
        self.expectations.expect(key, [o.uid(u.pod) for u in todo])
        failed = 0
        for u in todo:
            if not self._ungate(key, wl, u):
                # No watch event will show it: do not wait for one.
                self.expectations.observed(key, o.uid(u.pod))
                failed += 1
        if failed:
            raise Retry(PENDING_RETRY_S, f"{failed} pod(s) not ungated")

    def _ungate(self, key: str, wl: Obj, u: Ungate) -> bool:
        """Patch one pod; False when the patch did not land (conflict, gone, error)."""
        pod = u.pod
        gates = [g for g in _gates(pod) if g.get("name") != c.TOPOLOGY_GATE]
        patch = o.guarded_patch(pod, spec={"schedulingGates": gates or None, "nodeSelector": dict(u.node_labels)})
        try:
            self.kube.patch(k.object_path("v1", "pods", o.namespace(pod), o.name(pod)), patch)
        except (k.NotFound, k.Conflict):
            return False
        except k.KubeError as exc:
            log.error("failed ungating pod", extra={"object": o.key(pod), "kind": "Pod", "error": str(exc)})
            return False
        log.info(
            "ungated pod",
            extra={"object": o.key(pod), "kind": "Pod", "workload": key, "nodeLabels": u.node_labels},
        )
        self._observe_latency(wl, pod)
        return True

    def _observe_latency(self, wl: Obj, pod: Obj) -> None:
        """`RecordPodSchedulingGateRemovalSeconds`: from the Admitted transition, while Admitted."""
        cond = o.find_condition(wl, c.WorkloadCondition.ADMITTED) or {}
        admitted_at = parse_time(cond.get("lastTransitionTime")) if cond.get("status") == "True" else None
        if admitted_at is None:
            return
        group = o.labels(pod).get(c.POD_GROUP_NAME, "")
        if self.group_name_annotation:
            group = o.annotations(pod).get(c.POD_GROUP_NAME) or group
        cq = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
        m.POD_SCHEDULING_GATE_REMOVAL.labels(c.TOPOLOGY_GATE, cq, "true" if group else "false", ROLE).observe(
            max(0.0, (self.clock() - admitted_at).total_seconds())
        )
