"""TAS node failure handling: a node a TAS-admitted Workload was placed on fails (NotReady, gone, or
tainted in a way the Workload's pods do not tolerate) and the Workload is marked for a replacement
domain (`status.unhealthyNodes`), which the scheduler's second pass then swaps in; a Workload already
waiting for another node is evicted instead (reason NodeFailures). A node that recovers is taken out
of `unhealthyNodes` again. Pods stuck Pending on such a node through their TAS nodeSelector are
marked Failed (condition TerminatedByKueue), so their job controller replaces them.

Mirrors `pkg/controller/tas/node_controller.go` (upstream v0.19.2, gate TASFailedNodeReplacement,
Beta, on by default) with its gates TASReplaceNodeOnPodTermination (Beta, on: a NotReady or
untolerated node is marked only once the Workload's pods on it stopped), TASReplaceNodeOnNodeTaints
(Beta, on) and TASReplaceNodeDueToNotReadyOverFixedTime (Deprecated, off: mark 30 s after NotReady). One departure: with that last gate, a Workload marked
because its node stayed NotReady is not unmarked in the same reconcile while its pods there still
run (upstream marks then clears it; its own test expects it to stay marked).

`health` and `classify_taints` are pure; `NodeFailureController` follows nodes and the started pods
through informers, reads Workloads and ResourceFlavors from the Manager's store and writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.api.objects import Obj
from webhook.api.selector import Taint, parse_taint, parse_toleration
from webhook.core.admission_checks import reset_on_eviction
from webhook.core.tas import from_v1beta2
from webhook.core.workload import parse_time
from webhook.worker import events, workload_writes
from webhook.worker.jobframework import podset
from webhook.worker.reconcilers.topology_ungater import (
    HOSTNAME_LABEL,
    has_topology_gate,
    is_admitted_by_tas,
    is_tas,
    slice_name,
)
from webhook.worker.status import count_eviction, set_condition, update_status
from webhook.worker.store import Store
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "CONTROLLER_NAME",
    "NODE_FAILURE_DELAY",
    "Gates",
    "Health",
    "NodeFailureController",
    "assigned_node_names",
    "classify_taints",
    "health",
    "pods_by_selector",
    "pods_on_node",
]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "tas-node-controller"  # `TASNodeController`
NODE_FAILURE_DELAY = timedelta(seconds=30)  # `NodeFailureDelay`
RECONCILE_BATCH_S = 0.1  # `reconcileBatchPeriod`: a pod event reconciles its node this much later
TERMINATED_CONDITION = "TerminatedByKueue"
TERMINATED_REASON = "UnschedulableOnAssignedNode"
TERMINATED_MESSAGE = "Pod terminated by Kueue NodeController due to node taint"
TERMINATED_EVENT = "PodTerminatedByKueue"
MULTIPLE_FAILURES = "Workload eviction triggered due to multiple TAS assigned node failures, including: {}"
_PODS = "/api/v1/pods"
_NODES = "/api/v1/nodes"


@dataclass(frozen=True, slots=True)
class Gates:
    """The feature gates the decisions depend on (upstream's defaults)."""

    replace_on_pod_termination: bool = True
    replace_on_node_taints: bool = True
    not_ready_over_fixed_time: bool = False


class Health(Enum):
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"


@dataclass(slots=True)
class HealthCheck:
    """A Workload's health on a node and its pods to mark Failed (`workloadHealthCheck`)."""

    status: Health
    terminate: list[Obj] = field(default_factory=list)


def _domains_on(psa: Mapping[str, Any]) -> list[str]:
    """The hostnames a pod set's topology assignment places pods on (hostname as lowest level)."""
    ta_obj = psa.get("topologyAssignment")
    if ta_obj is None:
        return []
    ta = from_v1beta2(ta_obj)
    if not ta.levels or ta.levels[-1] != HOSTNAME_LABEL:
        return []
    return [d.values[-1] for d in ta.domains if d.values and d.count > 0]


def assigned_node_names(wl: Obj) -> set[str]:
    """The nodes of a TAS-admitted Workload's assignments (`TASAssignedNodeNames`)."""
    if not is_admitted_by_tas(wl):
        return set()
    admission = (wl.get("status") or {}).get("admission") or {}
    return {n for psa in admission.get("podSetAssignments") or () for n in _domains_on(psa)}


def _has_node(wl: Obj, node_name: str) -> bool:
    """`HasTASAssignmentOnNode`."""
    admission = (wl.get("status") or {}).get("admission") or {}
    return any(node_name in _domains_on(psa) for psa in admission.get("podSetAssignments") or ())


def unhealthy_nodes(wl: Obj) -> list[str]:
    return [str(n.get("name", "")) for n in (wl.get("status") or {}).get("unhealthyNodes") or ()]


def ready_condition(node: Obj) -> Obj | None:
    return next(
        (cond for cond in (node.get("status") or {}).get("conditions") or () if cond.get("type") == "Ready"), None
    )


def is_ready(node: Obj | None) -> bool:
    cond = ready_condition(node) if node is not None else None
    return cond is not None and cond.get("status") == "True"


def _scheduling_taints(node: Obj) -> list[Obj]:
    return [t for t in (node.get("spec") or {}).get("taints") or () if t.get("effect") in ("NoExecute", "NoSchedule")]


def _tolerated(tolerations: Sequence[Obj], taint: Taint) -> bool:
    return any(parse_toleration(t).tolerates(taint) for t in tolerations)


def classify_taints(taints: Iterable[Obj], pod_set_tolerations: Sequence[Sequence[Obj]]) -> tuple[list[Obj], list[Obj]]:
    """(untolerated, tolerated only for a while) among the NoExecute/NoSchedule `taints`, given each
    pod set's tolerations on the node (`classifyTaints`): a taint is untolerated when some pod set
    does not tolerate it, and tolerated for a while when some pod set tolerates it only with
    tolerationSeconds."""
    untolerated: list[Obj] = []
    temporary: list[Obj] = []
    for raw in taints:
        if raw.get("effect") not in ("NoExecute", "NoSchedule"):
            continue
        taint = parse_taint(raw)
        if not all(_tolerated(tols, taint) for tols in pod_set_tolerations):
            untolerated.append(raw)
            continue
        permanent = all(
            _tolerated([t for t in tols if t.get("tolerationSeconds") is None], taint) for tols in pod_set_tolerations
        )
        if not permanent:
            temporary.append(raw)
    return untolerated, temporary


def effective_tolerations(wl: Obj, node_name: str, flavors: Mapping[str, Obj]) -> list[list[Obj]]:
    """Per pod set placed on the node, the tolerations its pods get: the template's, the flavors'
    and the admission checks' podSetUpdates' (`podSetsWithEffectiveTolerationsOnNode`). Raises
    `podset.FlavorNotFound` for a flavor not known yet."""
    status = wl.get("status") or {}
    pod_sets = {str(ps.get("name", "")): ps for ps in (wl.get("spec") or {}).get("podSets") or ()}
    out: list[list[Obj]] = []
    for psa in (status.get("admission") or {}).get("podSetAssignments") or ():
        if node_name not in _domains_on(psa):
            continue
        ps = pod_sets.get(str(psa.get("name", "")))
        if ps is None:
            continue
        tolerations = list(((ps.get("template") or {}).get("spec") or {}).get("tolerations") or ())
        extra: list[Obj] = []
        for flavor in dict.fromkeys((psa.get("flavors") or {}).values()):
            if flavor not in flavors:
                raise podset.FlavorNotFound(f'resourceflavors.kueue.x-k8s.io "{flavor}" not found')
            extra.extend(flavors[flavor].get("tolerations") or ())
        for check in status.get("admissionChecks") or ():
            update = next((u for u in check.get("podSetUpdates") or () if u.get("name") == psa.get("name")), None)
            if update is not None:
                extra.extend(update.get("tolerations") or ())
        for tol in extra:
            if not any(podset.same_toleration(t, tol) for t in tolerations):
                tolerations.append(tol)
        out.append(tolerations)
    return out


def _terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _check_pods(
    on_node: Sequence[Obj], by_selector: Sequence[Obj], *, untolerated: bool, assigned: bool, gates: Gates
) -> HealthCheck:
    """`checkPodsOnNode`: pods Pending behind the node's nodeSelector (ungated, unbound) are to be
    marked Failed; the Workload stays healthy while it still has pods running or starting there
    (except on an untolerated taint without TASReplaceNodeOnPodTermination)."""
    terminate = [
        p
        for p in by_selector
        if not (p.get("spec") or {}).get("nodeName")
        and (p.get("status") or {}).get("phase") == "Pending"
        and not has_topology_gate(p)
    ]
    progressing = any(not o.is_deleting(p) and not _terminated(p) for p in on_node)
    if not assigned or (progressing and (not untolerated or gates.replace_on_pod_termination)):
        return HealthCheck(Health.HEALTHY, terminate)
    return HealthCheck(Health.UNHEALTHY, terminate)


def pods_on_node(pods: Iterable[Obj], wl: Obj, node_name: str) -> list[Obj]:
    """The pods of the Workload's slice bound to the node (`hasProgressingPods`' list)."""
    sl = slice_name(wl)
    return [
        p
        for p in pods
        if o.namespace(p) == o.namespace(wl)
        and (p.get("spec") or {}).get("nodeName") == node_name
        and (o.annotations(p).get(c.WORKLOAD_SLICE_NAME) or o.annotations(p).get(c.WORKLOAD_ANNOTATION)) == sl
    ]


def pods_by_selector(pods: Iterable[Obj], node_name: str) -> dict[str, list[Obj]]:
    """Per Workload key, its TAS pods whose nodeSelector names the node (`listPodsAssignedByNodeSelector`)."""
    out: dict[str, list[Obj]] = {}
    for pod in pods:
        if is_tas(pod) and ((pod.get("spec") or {}).get("nodeSelector") or {}).get(HOSTNAME_LABEL) == node_name:
            wl_name = o.annotations(pod).get(c.WORKLOAD_ANNOTATION)
            if wl_name is not None:
                out.setdefault(f"{o.namespace(pod)}/{wl_name}", []).append(pod)
    return out


def health(
    node: Obj,
    node_name: str,
    wl: Obj | None,
    on_node: Sequence[Obj],
    by_selector: Sequence[Obj],
    flavors: Mapping[str, Obj],
    gates: Gates,
) -> HealthCheck:
    """`getWorkloadStatus`: whether the Workload (None: gone) must leave the (existing) node.
    `on_node` are the Workload's pods bound to it, `by_selector` its TAS pods sent there by
    nodeSelector. Raises `podset.FlavorNotFound` while a flavor of the Workload is unknown."""
    if wl is None:
        return HealthCheck(Health.HEALTHY)
    assigned = _has_node(wl, node_name)
    if not assigned:
        return _check_pods(on_node, by_selector, untolerated=False, assigned=False, gates=gates)
    if not is_ready(node):
        if not gates.replace_on_pod_termination:
            return HealthCheck(Health.UNHEALTHY)
        return _check_pods(on_node, by_selector, untolerated=False, assigned=True, gates=gates)
    if not gates.replace_on_node_taints or not _scheduling_taints(node):
        return HealthCheck(Health.HEALTHY)
    untolerated, temporary = classify_taints(_scheduling_taints(node), effective_tolerations(wl, node_name, flavors))
    if untolerated:
        if not gates.replace_on_pod_termination:
            return HealthCheck(Health.UNHEALTHY)
        return _check_pods(on_node, by_selector, untolerated=True, assigned=True, gates=gates)
    if temporary:
        return _check_pods(on_node, by_selector, untolerated=False, assigned=True, gates=gates)
    return HealthCheck(Health.HEALTHY)


def _usable(wl: Obj) -> bool:
    """Neither finished nor evicted (what upstream's node index of Workloads keeps)."""
    return not o.is_finished(wl) and not o.is_condition_true(wl, c.WorkloadCondition.EVICTED)


class NodeFailureController:
    """One work queue keyed by node name: queued by node changes that matter and, a batch period
    later, by TAS pods left Pending on a node through their nodeSelector or stopping on one."""

    def __init__(
        self,
        kube: k.Kube,
        store: Store,
        informers: k.SharedInformers,
        recorder: events.Recorder,
        *,
        stop: threading.Event,
        gates: Gates = Gates(),
        on_evicted: Callable[[str, str, str, Mapping[str, Any] | None], None] = lambda *_: None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.kube = kube
        self.store = store
        self.informers = informers
        self.events = recorder
        self.gates = gates
        self.on_evicted = on_evicted
        self.clock = clock
        self.queue: WorkQueue[object] = WorkQueue(
            "tas-node-failure", self.reconcile, workers=1, stop=stop, controller="tas_node_controller"
        )
        self._lock = threading.Lock()
        self._nodes: dict[str, Obj] = {}
        # Pods per node they are bound to or sent to by their hostname nodeSelector, and the reverse.
        self._pods_at: dict[str, dict[str, Obj]] = {}
        self._places_of: dict[str, frozenset[str]] = {}
        # Unfinished, unevicted Workloads per node of their TAS assignment (`AdmittedWorkloadNodesKey`).
        self._by_node: dict[str, set[str]] = {}
        self._nodes_of: dict[str, frozenset[str]] = {}

    def start(self) -> None:
        self.queue.start()
        self.informers.subscribe(_NODES, self.on_node_list, self.on_node_event)
        self.informers.subscribe(_PODS, self.on_pod_list, self.on_pod_event, query={"labelSelector": c.PODSET_LABEL})

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        """Workload changes keep the index of Workloads per node; they queue nothing (as upstream)."""
        if kind != "workloads":
            return
        key = o.key(obj)
        nodes = frozenset(assigned_node_names(obj)) if etype != "DELETED" and _usable(obj) else frozenset()
        with self._lock:
            before = self._nodes_of.get(key, frozenset())
            if nodes == before:
                return
            for name in before - nodes:
                keys = self._by_node.get(name)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._by_node[name]
            for name in nodes - before:
                self._by_node.setdefault(name, set()).add(key)
            if nodes:
                self._nodes_of[key] = nodes
            else:
                self._nodes_of.pop(key, None)

    # == watch events ==============================================================================
    def on_node_list(self, items: list[dict[str, Any]]) -> None:
        with self._lock:
            gone = set(self._nodes) - {o.name(n) for n in items}
            self._nodes = {o.name(n): n for n in items}
        for name in (*gone, *(o.name(n) for n in items)):
            self.queue.add(name)

    def on_node_event(self, etype: str, node: dict[str, Any]) -> None:
        name = o.name(node)
        with self._lock:
            before = self._nodes.pop(name, None)
            if etype != "DELETED":
                self._nodes[name] = node
        if etype != "MODIFIED" or before is None or self._changed(before, node):
            self.queue.add(name)

    def _changed(self, before: Obj, after: Obj) -> bool:
        """The node update predicate: Ready flipped, or (with TASReplaceNodeOnNodeTaints) taints changed."""
        if is_ready(before) != is_ready(after):
            return True
        taints = ((before.get("spec") or {}).get("taints") or [], (after.get("spec") or {}).get("taints") or [])
        return self.gates.replace_on_node_taints and taints[0] != taints[1]

    def on_pod_list(self, items: list[dict[str, Any]]) -> None:
        with self._lock:
            self._pods_at, self._places_of = {}, {}
            for pod in items:
                self._index_pod(pod, deleted=False)
        for pod in items:
            self._pod_changed(pod)

    def on_pod_event(self, etype: str, pod: dict[str, Any]) -> None:
        with self._lock:
            self._index_pod(pod, deleted=etype == "DELETED")
        self._pod_changed(pod)

    def _index_pod(self, pod: Obj, *, deleted: bool) -> None:
        """Keep `_pods_at` (caller holds the lock)."""
        key = o.key(pod)
        for name in self._places_of.pop(key, frozenset()):
            bucket = self._pods_at.get(name) or {}
            bucket.pop(key, None)
            if not bucket:
                self._pods_at.pop(name, None)
        if deleted:
            return
        spec = pod.get("spec") or {}
        places = frozenset(
            str(n) for n in (spec.get("nodeName"), (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL)) if n
        )
        for name in places:
            self._pods_at.setdefault(name, {})[key] = pod
        if places:
            self._places_of[key] = places

    def _pod_changed(self, pod: Obj) -> None:
        """`nodeFailurePodHandler`: a TAS pod sent to a node but not bound, or stopping on one."""
        if not is_tas(pod):
            return
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        target = (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL)
        if not node_name and target:
            self.queue.add_after(str(target), RECONCILE_BATCH_S)
        if node_name and (o.is_deleting(pod) or _terminated(pod)):
            self.queue.add_after(str(node_name), RECONCILE_BATCH_S)

    # == the reconcile =============================================================================
    def reconcile(self, node_name: str, _items: object = ()) -> None:
        with self._lock:
            node = self._nodes.get(node_name)
        now = self.clock()
        ready = ready_condition(node) if node is not None else None
        expired = False
        if ready is not None and ready.get("status") != "True":
            since = parse_time(ready.get("lastTransitionTime")) or now
            remaining = NODE_FAILURE_DELAY - (now - since)
            expired = remaining <= timedelta(0)
            if not expired and not self.gates.replace_on_pod_termination:
                self.queue.add_after(node_name, remaining.total_seconds())
                return
        with self._lock:
            affected = set(self._by_node.get(node_name, ()))
        if node is None or ready is None:
            self._mark_unhealthy(node_name, affected, now)
            return
        marked: set[str] = set()
        if self.gates.not_ready_over_fixed_time and expired:
            affected -= self._mark_unhealthy(node_name, affected, now)
            marked = set(affected)
        with self._lock:
            pods = list((self._pods_at.get(node_name) or {}).values())
        by_selector = pods_by_selector(pods, node_name)
        for key in by_selector.keys() - affected:  # late pods of Workloads placed elsewhere
            wl = self.store.get("workloads", key)
            if wl is not None and _usable(wl):
                affected.add(key)
        self._reconcile_workloads(node_name, node, affected, pods, by_selector, now, keep=marked)

    def _reconcile_workloads(
        self,
        node_name: str,
        node: Obj,
        keys: set[str],
        pods: Sequence[Obj],
        by_selector: Mapping[str, Sequence[Obj]],
        now: datetime,
        *,
        keep: set[str],
    ) -> None:
        """`reconcileWorkloadsOnNode`; the Workloads in `keep` were just marked for the node being
        NotReady for too long and stay marked even while their pods there still run (upstream clears
        them again in the same reconcile, which its unit tests do not see: their fake client cannot
        remove a list item through a status patch)."""
        unhealthy: set[str] = set()
        healthy: set[str] = set()
        terminate: dict[str, list[Obj]] = {}
        flavors = {o.name(f): f.get("spec") or {} for f in self.store.list("resourceflavors")}
        for key in sorted(keys):
            wl = self.store.get("workloads", key)
            on_node = pods_on_node(pods, wl, node_name) if wl is not None else []
            try:
                check = health(node, node_name, wl, on_node, by_selector.get(key, ()), flavors, self.gates)
            except podset.FlavorNotFound as exc:
                raise Retry(1.0, str(exc)) from exc
            if check.terminate:
                terminate[key] = check.terminate
            (unhealthy if check.status is Health.UNHEALTHY else healthy).add(key)
        evicted = self._mark_unhealthy(node_name, unhealthy, now) if unhealthy else set()
        for key in sorted(healthy - keep):
            self._mark_healthy(node_name, key)
        for key, doomed in terminate.items():
            if key not in evicted:
                for pod in doomed:
                    self._fail_pod(pod, now)

    # == writes ====================================================================================
    def _mark_unhealthy(self, node_name: str, keys: Iterable[str], now: datetime) -> set[str]:
        """`handleUnhealthyNode`: add the node to each Workload's unhealthyNodes, or evict a Workload
        already waiting for another node; returns the evicted ones."""
        evicted: set[str] = set()
        for key in sorted(keys):
            wl = self.store.get("workloads", key)
            if wl is None:
                continue
            others = unhealthy_nodes(wl)
            is_evicted = o.is_condition_true(wl, c.WorkloadCondition.EVICTED)
            if others and node_name not in others and not is_evicted:
                self._evict(wl, MULTIPLE_FAILURES.format(", ".join([*others, node_name])), now)
                evicted.add(key)
            elif is_evicted:
                evicted.add(key)
            elif node_name not in others:
                self._write_unhealthy(wl, node_name, add=True)
        return evicted

    def _mark_healthy(self, node_name: str, key: str) -> None:
        """`handleHealthyNode`: the node leaves the Workload's unhealthyNodes."""
        wl = self.store.get("workloads", key)
        if wl is not None and node_name in unhealthy_nodes(wl):
            self._write_unhealthy(wl, node_name, add=False)

    def _write_unhealthy(self, wl: Obj, node_name: str, *, add: bool) -> None:
        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            nodes = [n for n in status.get("unhealthyNodes") or () if n.get("name") != node_name]
            if add:
                nodes.append({"name": node_name})
            if nodes:
                status["unhealthyNodes"] = nodes
            else:
                status.pop("unhealthyNodes", None)

        try:
            update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        log.info(
            "unhealthy node added" if add else "unhealthy node removed",
            extra={"object": o.key(wl), "kind": "Workload", "node": node_name},
        )

    def _evict(self, wl: Obj, message: str, now: datetime) -> None:
        """`evict.Evict` with reason NodeFailures: Evicted=True, the eviction counted, checks back
        to Pending, unhealthyNodes and cluster nomination cleared, preemption gates closed."""
        reason = c.EvictionReason.NODE_FAILURES

        def mutate(status: dict[str, Any], obj: Mapping[str, Any]) -> None:
            generation = int(o.meta(obj).get("generation") or 0)
            cond = {"type": c.WorkloadCondition.EVICTED, "status": "True", "reason": reason, "message": message}
            set_condition(status, cond, now, generation)
            for key in ("clusterName", "nominatedClusterNames", "unhealthyNodes"):
                status.pop(key, None)
            if status.get("admissionChecks"):
                status["admissionChecks"] = reset_on_eviction(status["admissionChecks"], now)
            if o.is_condition_true(obj, c.WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES):
                blocked = {
                    "type": c.WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES,
                    "status": "False",
                    "reason": reason,
                    "message": message,
                }
                set_condition(status, blocked, now, generation)
            for gate in status.get("preemptionGates") or ():
                gate.update(position="Closed", lastTransitionTime=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
            count_eviction(status, reason)

        try:
            written = update_status(self.kube, self.store, "workloads", workload_writes.path(wl), mutate)
        except k.Conflict as exc:
            raise Retry(0.2, "workload changed") from exc
        if written is None:
            return
        log.info("workload evicted", extra={"object": o.key(wl), "kind": "Workload", "reason": reason})
        cq = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        if cq:
            self.on_evicted(o.key(wl), cq, reason, written)
            self.events.emit(written, "Normal", f"EvictedDueTo{reason}", message, CONTROLLER_NAME)

    def _fail_pod(self, pod: Obj, now: datetime) -> None:
        """`markPodsFailed`: phase Failed with the TerminatedByKueue condition, and an event."""
        conditions = [
            *((pod.get("status") or {}).get("conditions") or ()),
            {
                "type": TERMINATED_CONDITION,
                "status": "True",
                "reason": TERMINATED_REASON,
                "message": TERMINATED_MESSAGE,
                "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        ]
        path = k.object_path("v1", "pods", o.namespace(pod), o.name(pod)) + "/status"
        try:
            written = self.kube.patch(path, o.guarded_patch(pod, status={"phase": "Failed", "conditions": conditions}))
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "pod changed") from exc
        self.events.emit(
            written, "Normal", TERMINATED_EVENT, TERMINATED_MESSAGE, CONTROLLER_NAME, action="PodTerminated"
        )
        log.info("pod marked failed", extra={"object": o.key(pod), "kind": "Pod", "reason": TERMINATED_REASON})
