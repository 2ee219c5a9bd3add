"""FailureRecoveryPolicy (feature gate, Alpha, off by default): a pod opted in with the annotation
`kueue.x-k8s.io/safe-to-forcefully-delete: "true"` that is stuck terminating on an unreachable node
is marked Failed and force-deleted once a grace period has passed since its deletionTimestamp.

Mirrors `pkg/controller/failurerecovery/pod_termination_controller.go` (upstream v0.19.2): the
decision (`plan`) is a pure function of the pod, its node and `now`; `FailureRecovery` follows
pods and nodes through the process's shared informers and carries the decision out: pod status
phase=Failed (unless already Succeeded or Failed) with the condition KueueFailureRecovery=True
(KueueForcefullyDeleted), a Warning event KueueForcefullyDeleted, then DELETE with
gracePeriodSeconds=0. A node that becomes unreachable brings the eligible pods bound to it.

Two departures, both deliberate: upstream adds the pod's deletionGracePeriodSeconds to the grace
period as nanoseconds (`time.Duration(seconds)`), so its event reads "1m0.00000003s" for a 30 s
grace; ours counts seconds ("1m30s"). And the delete carries the pod's UID as a precondition, so a
namesake created since is never deleted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook import kube as k
from webhook.api import constants as c
from webhook.api import objects as o
from webhook.core.workload import parse_time
from webhook.worker import events
from webhook.worker.workqueue import Retry, WorkQueue

__all__ = [
    "CONTROLLER_NAME",
    "FORCEFUL_TERMINATION_GRACE",
    "FailureRecovery",
    "ForceDelete",
    "Recheck",
    "is_eligible",
    "is_unreachable",
    "plan",
]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "kueue-pod-termination-controller"  # `constants.PodTerminationControllerName`
FORCEFUL_TERMINATION_GRACE = timedelta(minutes=1)  # upstream's default, not configurable there either
_PODS = "/api/v1/pods"
_NODES = "/api/v1/nodes"
_RECHECK_SLACK_S = 0.05


@dataclass(frozen=True, slots=True)
class Recheck:
    """Nothing to do before `at`."""

    at: datetime


@dataclass(frozen=True, slots=True)
class ForceDelete:
    """Mark the pod Failed with `message` and delete it at once."""

    message: str
    fail: bool  # the pod is not Succeeded or Failed yet


def is_eligible(pod: Mapping[str, Any]) -> bool:
    """Opted in with the annotation and being deleted (`podEligibleForTermination`)."""
    opted_in = o.annotations(pod).get(c.SAFE_TO_FORCEFULLY_DELETE_ANNOTATION) == c.SAFE_TO_FORCEFULLY_DELETE_VALUE
    return opted_in and o.is_deleting(pod)


def is_unreachable(node: Mapping[str, Any] | None) -> bool:
    """The node carries the `node.kubernetes.io/unreachable` taint (any effect)."""
    taints = ((node or {}).get("spec") or {}).get("taints") or ()
    return any(t.get("key") == c.TAINT_NODE_UNREACHABLE for t in taints)


def go_duration(seconds: int) -> str:
    """Whole seconds as Go's `time.Duration.String` writes them: 45s, 1m30s, 2h0m5s."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m}m{s}s"
    return f"{m}m{s}s" if m else f"{s}s"


def plan(
    pod: Mapping[str, Any],
    node: Mapping[str, Any] | None,
    now: datetime,
    *,
    grace: timedelta = FORCEFUL_TERMINATION_GRACE,
) -> Recheck | ForceDelete | None:
    """What to do about `pod` (on `node`, None when unknown) at `now`, in upstream's order: nothing
    unless eligible; wait until `grace` after its deletionTimestamp; nothing unless its node is
    unreachable; else fail and delete it."""
    if not is_eligible(pod):
        return None
    deleting_at = parse_time(o.meta(pod).get("deletionTimestamp"))
    assert deleting_at is not None  # is_eligible checked it is set
    if now < deleting_at + grace:
        return Recheck(deleting_at + grace)
    if node is None or not is_unreachable(node):
        return None
    total = int(o.meta(pod).get("deletionGracePeriodSeconds") or 0) + int(grace.total_seconds())
    message = (
        f"Pod forcefully terminated after {go_duration(total)} grace period due to unreachable node "
        f"`{o.name(node)}` (triggered by `{c.SAFE_TO_FORCEFULLY_DELETE_ANNOTATION}` annotation)"
    )
    phase = (pod.get("status") or {}).get("phase")
    return ForceDelete(message, fail=phase not in ("Succeeded", "Failed"))


class FailureRecovery:
    """Follows pods and nodes; one work queue keyed by pod `namespace/name`.

    Only eligible pods are kept (a pod turns eligible when deleted, and stays so until gone), and
    nodes by name; a node that turns unreachable queues the eligible pods bound to it.
    """

    def __init__(self, kube: k.Kube, recorder: events.Recorder, *, stop: threading.Event) -> None:
        self.kube = kube
        self.events = recorder
        self.queue: WorkQueue[object] = WorkQueue(
            "failure-recovery", self.reconcile, workers=1, stop=stop, controller="pod_termination_controller"
        )
        self._lock = threading.Lock()
        self._pods: dict[str, Mapping[str, Any]] = {}
        self._nodes: dict[str, Mapping[str, Any]] = {}

    def start(self, informers: k.SharedInformers) -> None:
        self.queue.start()
        informers.subscribe(_NODES, self.on_node_list, self.on_node_event)
        informers.subscribe(_PODS, self.on_pod_list, self.on_pod_event)

    # == watch events ==============================================================================
    def on_pod_list(self, items: list[dict[str, Any]]) -> None:
        eligible: dict[str, Mapping[str, Any]] = {o.key(p): p for p in items if is_eligible(p)}
        with self._lock:
            self._pods = eligible
        for key in eligible:
            self.queue.add(key)

    def on_pod_event(self, etype: str, pod: dict[str, Any]) -> None:
        key = o.key(pod)
        if etype == "DELETED" or not is_eligible(pod):
            with self._lock:
                self._pods.pop(key, None)
            return
        with self._lock:
            known = key in self._pods
            self._pods[key] = pod
        if not known:  # turned eligible: later updates (ours included) queue nothing (upstream's predicate)
            self.queue.add(key)

    def on_node_list(self, items: list[dict[str, Any]]) -> None:
        with self._lock:
            before = self._nodes
            self._nodes = {o.name(n): n for n in items}
        for node in items:
            self._node_changed(before.get(o.name(node)), node)

    def on_node_event(self, etype: str, node: dict[str, Any]) -> None:
        with self._lock:
            before = self._nodes.pop(o.name(node), None)
            if etype != "DELETED":
                self._nodes[o.name(node)] = node
        if etype != "DELETED":
            self._node_changed(before, node)

    def _node_changed(self, before: Mapping[str, Any] | None, node: Mapping[str, Any]) -> None:
        """A node newly unreachable queues its eligible pods (`mapNodeToPods`, `nodeEventsPredicate`)."""
        if is_unreachable(before) or not is_unreachable(node):
            return
        with self._lock:
            keys = [key for key, pod in self._pods.items() if (pod.get("spec") or {}).get("nodeName") == o.name(node)]
        for key in keys:
            self.queue.add(key)

    # == the reconcile =============================================================================
    def reconcile(self, key: str, _items: object = ()) -> None:
        with self._lock:
            pod = self._pods.get(key)
            node = self._nodes.get(str((pod or {}).get("spec", {}).get("nodeName") or ""))
        if pod is None:
            return
        now = datetime.now(UTC)
        step = plan(pod, node, now)
        if isinstance(step, Recheck):
            self.queue.add_after(key, max(0.0, (step.at - now).total_seconds()) + _RECHECK_SLACK_S)
            return
        if step is None:
            return
        self._force_delete(key, pod, step)

    def _force_delete(self, key: str, pod: Mapping[str, Any], step: ForceDelete) -> None:
        path = k.object_path("v1", "pods", o.namespace(pod), o.name(pod))
        kept = [
            cond
            for cond in (pod.get("status") or {}).get("conditions") or ()
            if cond.get("type") != c.FAILURE_RECOVERY_CONDITION  # once, should a failed delete be retried
        ]
        status: dict[str, Any] = {
            "conditions": [
                *kept,
                {
                    "type": c.FAILURE_RECOVERY_CONDITION,
                    "status": "True",
                    "reason": c.FORCEFULLY_DELETED_REASON,
                    "message": step.message,
                },
            ]
        }
        if step.fail:
            status["phase"] = "Failed"
        try:
            written = self.kube.patch(
                path + "/status",
                o.guarded_patch(pod, status=status),
            )
        except k.NotFound:
            return
        except k.Conflict as exc:
            raise Retry(0.2, "pod changed") from exc
        self.events.emit(
            written, "Warning", c.FORCEFULLY_DELETED_REASON, step.message, CONTROLLER_NAME, action="ForcefulTermination"
        )
        log.info(
            "pod forcefully deleted",
            extra={"object": key, "kind": "Pod", "decision": "ForceDelete", "node": pod["spec"].get("nodeName")},
        )
        try:
            self.kube.delete(path, body={"gracePeriodSeconds": 0, **o.uid_precondition(pod)})
        except (k.NotFound, k.Conflict):
            return  # gone, or a namesake took its place
