"""The ConcurrentAdmission variant controller, against a fake API.

Ports upstream's `pkg/controller/concurrentadmission/controller_test.go` (v0.19.2): TestReconcile
(row ids are its case names; it runs with UnadmittedWorkloadsObservability on, so a cleared
reservation reads PendingEvaluation), TestFirstCandidateVariant, TestClusterQueueFlavorsChanged,
TestParentsForClusterQueue, TestCreateVariantsAlreadyExists, and TestGetWorkloadNameForVariant of
`workload_names_test.go`. Each TestReconcile row seeds the store and the fake API with the parent,
its variants and upstream's ClusterQueues and LocalQueues, runs one reconcile, and compares every
Workload (what upstream's cmp options look at) and the events. The `test_plan_*` tests read the
pure plan's actions where their order or content is what a user sees.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.builders import fq, make_cq, make_lq, make_wl, psa
from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.core.model import ClusterQueueSpec, parse_cluster_queue
from webhook.worker.jobframework import actions as ja
from webhook.worker.reconcilers.concurrent_admission import plan as ca
from webhook.worker.reconcilers.concurrent_admission import reconciler as car
from webhook.worker.store import Store, object_key

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
GATE = "kueue.x-k8s.io/concurrent-admission"
PARENT_LABEL = "kueue.x-k8s.io/concurrent-admission-parent"
TIMEOUT = ca.PREEMPTION_TIMEOUT


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


QUEUES = [
    make_cq("cq").group(fq("on-demand", cpu="0"), fq("spot", cpu="0")).concurrent_admission().obj(),
    make_cq("cq-migration")
    .group(fq("reservation", cpu="0"), fq("on-demand", cpu="0"), fq("spot", cpu="0"))
    .concurrent_admission(last_acceptable="reservation")
    .obj(),
    make_cq("cq-migration-no-constraint")
    .group(fq("reservation", cpu="0"), fq("on-demand", cpu="0"), fq("spot", cpu="0"))
    .concurrent_admission()
    .obj(),
    make_cq("cq-hold")
    .group(fq("reservation", cpu="0"), fq("on-demand", cpu="0"), fq("spot", cpu="0"))
    .concurrent_admission("RetainFirstAdmission")
    .obj(),
    make_cq("cq-spot-only").group(fq("spot", cpu="0")).concurrent_admission().obj(),
    make_lq("lq", "default", "cq"),
    make_lq("lq-migration", "default", "cq-migration"),
    make_lq("lq-migration-no-constraint", "default", "cq-migration-no-constraint"),
    make_lq("lq-hold", "default", "cq-hold"),
    make_lq("lq-spot-only", "default", "cq-spot-only"),
]
CQ_OF = {
    "lq": "cq",
    "lq-migration": "cq-migration",
    "lq-migration-no-constraint": "cq-migration-no-constraint",
    "lq-hold": "cq-hold",
    "lq-spot-only": "cq-spot-only",
}


def parent(
    queue: str = "lq", *, admitted_on: str | None = None, active: bool = True, **conds: tuple[str, str, str]
) -> dict[str, Any]:
    """The parent `wl-12345` (upstream's fixtures have no UID), labelled, requesting 1 CPU."""
    b = make_wl("wl-12345", "default").uid("").queue(queue).label(PARENT_LABEL, "true").request(cpu="1")
    if admitted_on is not None:
        b.reserve(CQ_OF[queue], psa(cpu=(admitted_on, "1")))
    for ctype, (status, reason, message) in conds.items():
        b.condition(ctype, status, reason, message)
    o = b.obj()
    if not active:
        o["spec"]["active"] = False
    return o


def variant(
    flavor: str,
    queue: str = "lq",
    *,
    name: str | None = None,
    admitted: bool = False,
    active: bool | None = None,
    gate: tuple[str, datetime] | None = None,
    blocked: bool = False,
    **conds: tuple[str, str, str],
) -> dict[str, Any]:
    b = (
        make_wl(name or f"wl-variant-{flavor}", "default")
        .uid(f"uid-{flavor}")
        .queue(queue)
        .request(cpu="1")
        .variant_of("wl-12345", "", flavor)
    )
    if admitted:
        b.reserve(CQ_OF[queue], psa(cpu=(flavor, "1")))
    if blocked:
        b.condition(
            "BlockedOnPreemptionGates", "True", "PreemptionGated", "Workload requires preemption, but it's gated"
        )
    for ctype, (status, reason, message) in conds.items():
        b.condition(ctype, status, reason, message)
    o = b.obj()
    o["spec"]["preemptionGates"] = [{"name": GATE}]
    if gate is not None:
        o["status"]["preemptionGates"] = [{"name": GATE, "position": gate[0], "lastTransitionTime": stamp(gate[1])}]
    if active is not None:
        o["spec"]["active"] = active
    return o


def view(wl: dict[str, Any]) -> dict[str, Any]:
    """What upstream's comparison sees, minus times and UIDs."""
    meta, spec, status = wl["metadata"], wl.get("spec") or {}, wl.get("status") or {}
    admission = status.get("admission")
    return {
        "labels": meta.get("labels") or {},
        "allowed": (meta.get("annotations") or {}).get("kueue.x-k8s.io/workload-allowed-resource-flavors"),
        "owner": [r["name"] for r in meta.get("ownerReferences") or ()],
        "active": spec.get("active", True) is not False,
        "gates": [g["name"] for g in spec.get("preemptionGates") or ()],
        "gate_states": {
            g["name"]: (g["position"], g["lastTransitionTime"]) for g in status.get("preemptionGates") or ()
        },
        "conditions": {c["type"]: (c["status"], c["reason"], c["message"]) for c in status.get("conditions") or ()},
        "admission": None
        if admission is None
        else (admission["clusterQueue"], [p["flavors"] for p in admission["podSetAssignments"]]),
    }


@dataclass
class Recorder:
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def emit(
        self, obj: dict[str, Any], etype: str, reason: str, note: str, controller: str, *, action: str = ""
    ) -> None:
        assert (etype, controller) == ("Normal", car.CONTROLLER_NAME)
        self.events.append((f"{obj['metadata']['namespace']}/{obj['metadata']['name']}", reason, note))


def wl_path(name: str) -> str:
    return k.object_path("kueue.x-k8s.io/v1beta2", "workloads", "default", name)


def reconcile(
    p: dict[str, Any] | None, variants: list[dict[str, Any]], key: str = "default/wl-12345"
) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str, str]], ca.VariantPlan]:
    kube, store, rec = FakeKube(), Store(), Recorder()
    for q in QUEUES:
        kind = "clusterqueues" if q["kind"] == "ClusterQueue" else "localqueues"
        store.put(kind, copy.deepcopy(q))
    for wl in ([p] if p else []) + variants:
        kube.put(wl_path(wl["metadata"]["name"]), wl)
        store.put("workloads", copy.deepcopy(kube.objects[wl_path(wl["metadata"]["name"])]))
    r = car.VariantReconciler(kube, store, rec, stop=threading.Event(), clock=lambda: NOW)  # type: ignore[arg-type]
    stored_parent = store.get("workloads", key)
    cq = r.cluster_queue(stored_parent) if stored_parent else None
    result = ca.plan(stored_parent, [w for w in store.list("workloads") if w is not stored_parent], cq, NOW)
    r.reconcile(key)
    return {o["metadata"]["name"]: o for path, o in kube.objects.items() if "/workloads/" in path}, rec.events, result


def created(flavor: str, name: str, queue: str = "lq") -> dict[str, Any]:
    """The view of a variant the controller creates for `flavor` (no status yet)."""
    v = variant(flavor, queue, name=name)
    v["status"] = {}
    return v


ADMITTED = ("True", "Admitted", "The workload is admitted")
RESERVED = ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq")
BLOCKED = ("True", "PreemptionGated", "Workload requires preemption, but it's gated")


def with_(
    wl: dict[str, Any],
    *,
    active: bool | None = None,
    gate: tuple[str, datetime] | None = None,
    admission: tuple[str, str] | None = None,
    **conds: tuple[str, str, str],
) -> dict[str, Any]:
    """`wl` as expected after the reconcile."""
    out = copy.deepcopy(wl)
    status = out.setdefault("status", {})
    if active is not None:
        out["spec"]["active"] = active
    if gate is not None:
        status["preemptionGates"] = [{"name": GATE, "position": gate[0], "lastTransitionTime": stamp(gate[1])}]
    if admission is not None:
        status["admission"] = {"clusterQueue": admission[0], "podSetAssignments": [psa(cpu=(admission[1], "1"))]}
    conditions = [c for c in status.get("conditions") or () if c["type"] not in conds]
    conditions += [{"type": t, "status": s, "reason": r, "message": m} for t, (s, r, m) in conds.items()]
    status["conditions"] = conditions
    return out


@dataclass
class Case:
    parent: dict[str, Any] | None
    variants: list[dict[str, Any]]
    want: list[dict[str, Any]]
    events: list[tuple[str, str, str]] = field(default_factory=list)
    requeue_after: timedelta | None = None
    key: str = "default/wl-12345"


def _deactivated(name: str, why: str) -> tuple[str, str, str]:
    return (f"default/{name}", "DeactivatedVariant", f"Variant Workload deactivated due to {why}")


def _parent_admitted(queue: str, flavor: str, variant_name: str) -> dict[str, Any]:
    return with_(
        parent(queue),
        admission=(CQ_OF[queue], flavor),
        QuotaReserved=("True", "QuotaReserved", f"Quota reserved in ClusterQueue {CQ_OF[queue]}"),
        Admitted=("True", "Admitted", f"The variant {variant_name} is admitted"),
    )


MIG = "lq-migration"
MIG_NC = "lq-migration-no-constraint"
BELOW = 'being below lastAcceptableFlavor: "reservation" and another Variant admitted "default/{}"'
LOWER = 'being lower priority than admitted Variant "default/{}"'

CASES: dict[str, Case] = {
    "workload not found": Case(None, [], [], key="default/non-existing"),
    "workload is not parent or variant": Case(
        make_wl("wl", "default").obj(), [], [make_wl("wl", "default").obj()], key="default/wl"
    ),
    "parent workload without variants creates them": Case(
        parent(),
        [],
        [parent(), created("spot", "wl-variant-spot-a2342"), created("on-demand", "wl-variant-on-demand-480a3")],
        events=[
            ("default/wl-12345", "CreatedVariant", 'Variant Workload "default/wl-variant-on-demand-480a3" created'),
            ("default/wl-12345", "CreatedVariant", 'Variant Workload "default/wl-variant-spot-a2342" created'),
        ],
    ),
    "parent workload with missing variants; creates missing": Case(
        parent(),
        [variant("spot")],
        [parent(), variant("spot"), created("on-demand", "wl-variant-on-demand-480a3")],
        events=[
            ("default/wl-12345", "CreatedVariant", 'Variant Workload "default/wl-variant-on-demand-480a3" created')
        ],
    ),
    "flavor removed from ClusterQueue; variant is deleted": Case(
        parent(),
        [variant("on-demand"), variant("spot"), variant("stale")],
        [parent(), variant("on-demand"), variant("spot")],
        events=[
            (
                "default/wl-12345",
                "DeletedVariant",
                'Variant Workload "default/wl-variant-stale" deleted; flavor "stale" no longer in ClusterQueue',
            )
        ],
    ),
    "admitted variant's flavor removed; variant deleted and parent evicted": Case(
        parent("lq-spot-only", admitted_on="on-demand"),
        [variant("on-demand", "lq-spot-only", admitted=True), variant("spot", "lq-spot-only")],
        [
            with_(
                parent("lq-spot-only", admitted_on="on-demand"),
                Evicted=("True", "ConcurrentAdmission", "No variant is running"),
            ),
            variant("spot", "lq-spot-only"),
        ],
        events=[
            (
                "default/wl-12345",
                "DeletedVariant",
                'Variant Workload "default/wl-variant-on-demand" deleted; flavor "on-demand" no longer in ClusterQueue',
            )
        ],
    ),
    "deleting the variant holding the open preemption gate opens the next one's gate": Case(
        parent("lq-spot-only"),
        [
            variant("on-demand", "lq-spot-only", gate=("Open", NOW), blocked=True),
            variant("spot", "lq-spot-only", blocked=True),
        ],
        [parent("lq-spot-only"), variant("spot", "lq-spot-only", gate=("Open", NOW), blocked=True)],
        events=[
            (
                "default/wl-12345",
                "DeletedVariant",
                'Variant Workload "default/wl-variant-on-demand" deleted; flavor "on-demand" no longer in ClusterQueue',
            ),
            (
                "default/wl-variant-spot",
                "PreemptionUngatedVariant",
                'Opened preemption gate for variant workload "default/wl-variant-spot"',
            ),
        ],
        requeue_after=TIMEOUT,
    ),
    "ungates the next-preferred variant once the open gate's preemption timeout elapses": Case(
        parent(),
        [variant("on-demand", gate=("Open", NOW - TIMEOUT), blocked=True), variant("spot", blocked=True)],
        [
            parent(),
            variant("on-demand", gate=("Open", NOW - TIMEOUT), blocked=True),
            variant("spot", gate=("Open", NOW), blocked=True),
        ],
        events=[
            (
                "default/wl-variant-spot",
                "PreemptionUngatedVariant",
                'Opened preemption gate for variant workload "default/wl-variant-spot"',
            )
        ],
        requeue_after=TIMEOUT,
    ),
    "blocked variant has its preemption gate opened; non-blocked variant stays closed": Case(
        parent(),
        [variant("on-demand", blocked=True), variant("spot", gate=("Closed", NOW))],
        [parent(), variant("on-demand", gate=("Open", NOW), blocked=True), variant("spot", gate=("Closed", NOW))],
        events=[
            (
                "default/wl-variant-on-demand",
                "PreemptionUngatedVariant",
                'Opened preemption gate for variant workload "default/wl-variant-on-demand"',
            )
        ],
        requeue_after=TIMEOUT,
    ),
    "no variant requires preemption; no gate is opened": Case(
        parent(),
        [variant("on-demand", gate=("Closed", NOW)), variant("spot", gate=("Closed", NOW))],
        [parent(), variant("on-demand", gate=("Closed", NOW)), variant("spot", gate=("Closed", NOW))],
    ),
    "waits for a more-preferred variant to be evaluated before ungating a lower-preference variant": Case(
        parent(),
        [variant("on-demand"), variant("spot", blocked=True)],
        [parent(), variant("on-demand"), variant("spot", blocked=True)],
    ),
    "the most-preferred blocked variant is selected for ungating": Case(
        parent(),
        [variant("on-demand", blocked=True), variant("spot", blocked=True)],
        [parent(), variant("on-demand", gate=("Open", NOW), blocked=True), variant("spot", blocked=True)],
        events=[
            (
                "default/wl-variant-on-demand",
                "PreemptionUngatedVariant",
                'Opened preemption gate for variant workload "default/wl-variant-on-demand"',
            )
        ],
        requeue_after=TIMEOUT,
    ),
    "a recently opened gate defers ungating the next variant until the timeout": Case(
        parent(),
        [variant("on-demand", gate=("Open", NOW - timedelta(minutes=1))), variant("spot", blocked=True)],
        [parent(), variant("on-demand", gate=("Open", NOW - timedelta(minutes=1))), variant("spot", blocked=True)],
        requeue_after=TIMEOUT - timedelta(minutes=1),
    ),
    "the latest open-gate time among variants determines the wait": Case(
        parent(MIG_NC),
        [
            variant("reservation", MIG_NC, gate=("Open", NOW - timedelta(minutes=4))),
            variant("on-demand", MIG_NC, gate=("Open", NOW - timedelta(minutes=1))),
            variant("spot", MIG_NC, blocked=True),
        ],
        [
            parent(MIG_NC),
            variant("reservation", MIG_NC, gate=("Open", NOW - timedelta(minutes=4))),
            variant("on-demand", MIG_NC, gate=("Open", NOW - timedelta(minutes=1))),
            variant("spot", MIG_NC, blocked=True),
        ],
        requeue_after=TIMEOUT - timedelta(minutes=1),
    ),
    "admitted variant syncs admission to parent": Case(
        parent(),
        [variant("spot", admitted=True), variant("on-demand")],
        [_parent_admitted("lq", "spot", "wl-variant-spot"), variant("spot", admitted=True), variant("on-demand")],
    ),
    "no variant admitted; parent admitted; evict parent": Case(
        parent(admitted_on="spot"),
        [variant("spot"), variant("on-demand")],
        [
            with_(parent(admitted_on="spot"), Evicted=("True", "ConcurrentAdmission", "No variant is running")),
            variant("spot"),
            variant("on-demand"),
        ],
    ),
    "admitted variant evicted; parent has quota; evict parent and wait": Case(
        parent(admitted_on="spot"),
        [
            variant("spot", admitted=True, active=True, Evicted=("True", "Preempted", "Evicted by preemption")),
            variant("on-demand", active=False),
        ],
        [
            with_(parent(admitted_on="spot"), Evicted=("True", "VariantEvicted", "Admitted variant was evicted")),
            variant("spot", admitted=True, active=True, Evicted=("True", "Preempted", "Evicted by preemption")),
            variant("on-demand", active=False),
        ],
    ),
    "admitted variant evicted; parent has no quota reservation; clear variant reservation": Case(
        parent(),
        [
            variant("spot", admitted=True, active=True, Evicted=("True", "Preempted", "Evicted by preemption")),
            variant("on-demand", active=False),
        ],
        [
            parent(),
            with_(
                variant("spot", active=True, Evicted=("True", "Preempted", "Evicted by preemption")),
                QuotaReserved=("False", "PendingEvaluation", "Evicted by preemption"),
                Admitted=("False", "NoReservation", "The workload has no reservation"),
                Requeued=("True", "Preempted", "Evicted by preemption"),
            ),
            variant("on-demand", active=True),
        ],
        events=[
            (
                "default/wl-variant-on-demand",
                "ActivatedVariant",
                "Variant Workload activated due to no other Variant being admitted",
            )
        ],
    ),
    "with minTargetFlavor=reservation, variant admitted on spot, deactivate on-demand": Case(
        parent(MIG),
        [variant("reservation", MIG), variant("on-demand", MIG), variant("spot", MIG, admitted=True)],
        [
            _parent_admitted(MIG, "spot", "wl-variant-spot"),
            variant("reservation", MIG),
            variant("on-demand", MIG, active=False),
            variant("spot", MIG, admitted=True),
        ],
        events=[_deactivated("wl-variant-on-demand", BELOW.format("wl-variant-spot"))],
    ),
    "with minTargetFlavor=reservation, variant admitted on on-demand, deactivate spot": Case(
        parent(MIG),
        [variant("reservation", MIG), variant("on-demand", MIG, admitted=True), variant("spot", MIG)],
        [
            _parent_admitted(MIG, "on-demand", "wl-variant-on-demand"),
            variant("reservation", MIG),
            variant("on-demand", MIG, admitted=True),
            variant("spot", MIG, active=False),
        ],
        events=[_deactivated("wl-variant-spot", BELOW.format("wl-variant-on-demand"))],
    ),
    "with minTargetFlavor=reservation, variant admitted on reservation, deactivate spot and on-demand": Case(
        parent(MIG),
        [variant("reservation", MIG, admitted=True), variant("on-demand", MIG), variant("spot", MIG)],
        [
            _parent_admitted(MIG, "reservation", "wl-variant-reservation"),
            variant("reservation", MIG, admitted=True),
            variant("on-demand", MIG, active=False),
            variant("spot", MIG, active=False),
        ],
        events=[
            _deactivated("wl-variant-on-demand", BELOW.format("wl-variant-reservation")),
            _deactivated("wl-variant-spot", BELOW.format("wl-variant-reservation")),
        ],
    ),
    "without minTargetFlavor, variant admitted on spot, nothing deactivated": Case(
        parent(MIG_NC),
        [variant("reservation", MIG_NC), variant("on-demand", MIG_NC), variant("spot", MIG_NC, admitted=True)],
        [
            _parent_admitted(MIG_NC, "spot", "wl-variant-spot"),
            variant("reservation", MIG_NC),
            variant("on-demand", MIG_NC),
            variant("spot", MIG_NC, admitted=True),
        ],
    ),
    "without minTargetFlavor, variant admitted on on-demand, deactivate spot": Case(
        parent(MIG_NC),
        [variant("reservation", MIG_NC), variant("on-demand", MIG_NC, admitted=True), variant("spot", MIG_NC)],
        [
            _parent_admitted(MIG_NC, "on-demand", "wl-variant-on-demand"),
            variant("reservation", MIG_NC),
            variant("on-demand", MIG_NC, admitted=True),
            variant("spot", MIG_NC, active=False),
        ],
        events=[_deactivated("wl-variant-spot", LOWER.format("wl-variant-on-demand"))],
    ),
    "without minTargetFlavor, variant admitted on reservation, deactivate spot and on-demand": Case(
        parent(MIG_NC),
        [variant("reservation", MIG_NC, admitted=True), variant("on-demand", MIG_NC), variant("spot", MIG_NC)],
        [
            _parent_admitted(MIG_NC, "reservation", "wl-variant-reservation"),
            variant("reservation", MIG_NC, admitted=True),
            variant("on-demand", MIG_NC, active=False),
            variant("spot", MIG_NC, active=False),
        ],
        events=[
            _deactivated("wl-variant-on-demand", LOWER.format("wl-variant-reservation")),
            _deactivated("wl-variant-spot", LOWER.format("wl-variant-reservation")),
        ],
    ),
    "RetainFirstAdmission, variant admitted on spot, deactivate reservation and on-demand": Case(
        parent("lq-hold"),
        [variant("reservation", "lq-hold"), variant("on-demand", "lq-hold"), variant("spot", "lq-hold", admitted=True)],
        [
            _parent_admitted("lq-hold", "spot", "wl-variant-spot"),
            variant("reservation", "lq-hold", active=False),
            variant("on-demand", "lq-hold", active=False),
            variant("spot", "lq-hold", admitted=True),
        ],
        events=[
            _deactivated(n, 'RetainFirstAdmission: another Variant "default/wl-variant-spot" is admitted')
            for n in ("wl-variant-reservation", "wl-variant-on-demand")
        ],
    ),
    "parent marked finished, mark all variants finished": Case(
        parent(Finished=("True", "Succeeded", "Job finished successfully")),
        [variant("on-demand"), variant("spot")],
        [
            parent(Finished=("True", "Succeeded", "Job finished successfully")),
            *(
                with_(variant(f), Finished=("True", "Succeeded", "Job finished successfully"))
                for f in ("on-demand", "spot")
            ),
        ],
    ),
    "parent is not active, propagating deactivation to all variants": Case(
        parent(active=False),
        [variant("spot"), variant("on-demand")],
        [parent(active=False), variant("spot", active=False), variant("on-demand", active=False)],
        events=[
            _deactivated(f"wl-variant-{f}", 'Parent Workload "default/wl-12345" not active')
            for f in ("spot", "on-demand")
        ],
    ),
    "parent changes WaitForPodsReady from False to True, syncs to admitted variant": Case(
        parent(admitted_on="spot", PodsReady=("True", "PodsReady", "Pods are ready")),
        [
            variant("spot", admitted=True, PodsReady=("False", "PodsNotReady", "Pods are not ready")),
            variant("on-demand"),
        ],
        [
            parent(admitted_on="spot", PodsReady=("True", "PodsReady", "Pods are ready")),
            variant("spot", admitted=True, PodsReady=("True", "PodsReady", "Pods are ready")),
            variant("on-demand"),
        ],
    ),
    "parent changes WaitForPodsReady from True to False, syncs to admitted variant": Case(
        parent(admitted_on="spot", PodsReady=("False", "PodsNotReady", "Pods are not ready")),
        [variant("spot", admitted=True, PodsReady=("True", "PodsReady", "Pods are ready")), variant("on-demand")],
        [
            parent(admitted_on="spot", PodsReady=("False", "PodsNotReady", "Pods are not ready")),
            variant("spot", admitted=True, PodsReady=("False", "PodsNotReady", "Pods are not ready")),
            variant("on-demand"),
        ],
    ),
    "parent not admitted, variant admitted, parent changes WaitForPodsReady from True to False, syncs to variant and admits parent": Case(
        parent(PodsReady=("False", "PodsNotReady", "Pods are not ready")),
        [variant("spot", admitted=True, PodsReady=("True", "PodsReady", "Pods are ready")), variant("on-demand")],
        [
            with_(
                _parent_admitted("lq", "spot", "wl-variant-spot"),
                PodsReady=("False", "PodsNotReady", "Pods are not ready"),
            ),
            variant("spot", admitted=True, PodsReady=("False", "PodsNotReady", "Pods are not ready")),
            variant("on-demand"),
        ],
    ),
}


@pytest.mark.parametrize("case", [pytest.param(c, id=name) for name, c in CASES.items()])
def test_reconcile(case: Case) -> None:
    got, events, result = reconcile(case.parent, case.variants, case.key)
    assert {n: view(w) for n, w in got.items()} == {w["metadata"]["name"]: view(w) for w in case.want}
    assert sorted(events) == sorted(case.events)
    assert result.requeue_after == case.requeue_after


def test_created_variants_inherit_the_parents_preemption_gates() -> None:
    """Upstream "parent with a pre-existing preemption gate; created variants inherit it plus the
    ConcurrentAdmission gate"."""
    p = parent()
    p["spec"]["preemptionGates"] = [{"name": "other-gate"}]
    got, _, _ = reconcile(p, [])
    assert {n: view(w)["gates"] for n, w in got.items() if n != "wl-12345"} == {
        "wl-variant-spot-a2342": ["other-gate", GATE],
        "wl-variant-on-demand-480a3": ["other-gate", GATE],
    }


# -- TestFirstCandidateVariant -------------------------------------------------------------------
BLOCKED_SPOT = variant("spot", name="blocked", blocked=True)


@pytest.mark.parametrize(
    ("first", "want"),
    [
        pytest.param(
            variant("on-demand", name="preferred"),
            None,
            id="waits when the preferred variant has no evaluation condition",
        ),
        pytest.param(
            variant("on-demand", name="preferred", QuotaReserved=("False", "Pending", "Workload does not fit")),
            "blocked",
            id="skips a preferred variant with an existing quota reservation condition",
        ),
    ],
)
def test_first_candidate_variant(first: dict[str, Any], want: str | None) -> None:
    got = ca.first_candidate([first, BLOCKED_SPOT])
    assert (got["metadata"]["name"] if got else None) == want


# -- TestClusterQueueFlavorsChanged --------------------------------------------------------------
BASE = make_cq("cq").group(fq("on-demand", cpu="5"), fq("spot", cpu="5")).obj()


def _cq_with(*groups: tuple[str, ...], status: bool = False) -> dict[str, Any]:
    b = make_cq("cq")
    for names in groups:
        b.group(*(fq(n, cpu="9") for n in names))
    o = b.obj()
    if status:
        o["status"] = {"pendingWorkloads": 3}
    return o


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param(_cq_with(("on-demand", "spot"), status=True), False, id="only status changed"),
        pytest.param(_cq_with(("on-demand", "spot")), False, id="quota changed, flavors unchanged"),
        pytest.param(_cq_with(("on-demand", "spot", "reservation")), True, id="flavor added"),
        pytest.param(_cq_with(("on-demand",)), True, id="flavor removed"),
        pytest.param(_cq_with(("spot", "on-demand")), True, id="flavors reordered"),
        pytest.param(_cq_with(("on-demand", "spot"), ("gpu",)), True, id="resource group added"),
    ],
)
def test_cluster_queue_flavors_changed(new: dict[str, Any], want: bool) -> None:
    assert car.flavors_changed(BASE, new) is want


# -- TestParentsForClusterQueue ------------------------------------------------------------------
def _store(*objs: dict[str, Any]) -> Store:
    store = Store()
    for o in objs:
        store.put({"Workload": "workloads", "LocalQueue": "localqueues"}[o["kind"]], copy.deepcopy(o))
    return store


def _parent_in(name: str, ns: str, queue: str) -> dict[str, Any]:
    return make_wl(name, ns).queue(queue).label(PARENT_LABEL, "true").obj()


@pytest.mark.parametrize(
    ("objs", "want"),
    [
        pytest.param(
            [make_lq("lq", "ns", "cq"), _parent_in("p1", "ns", "lq"), _parent_in("p2", "ns", "lq")],
            ["ns/p1", "ns/p2"],
            id="multiple parents under one ClusterQueue",
        ),
        pytest.param(
            [
                make_lq("lq", "ns1", "cq"),
                make_lq("lq", "ns2", "cq"),
                _parent_in("p1", "ns1", "lq"),
                _parent_in("p2", "ns2", "lq"),
            ],
            ["ns1/p1", "ns2/p2"],
            id="parents across namespaces feeding the same ClusterQueue",
        ),
        pytest.param(
            [make_lq("lq", "ns", "cq"), _parent_in("p1", "ns", "lq"), make_wl("plain", "ns").queue("lq").obj()],
            ["ns/p1"],
            id="non-parent workloads are excluded",
        ),
        pytest.param(
            [
                make_lq("lq", "ns", "cq"),
                make_lq("other", "ns", "other-cq"),
                _parent_in("p1", "ns", "lq"),
                _parent_in("p2", "ns", "other"),
            ],
            ["ns/p1"],
            id="workloads of other ClusterQueues are excluded",
        ),
        pytest.param([make_lq("lq", "ns", "cq")], [], id="no parents returns nothing"),
    ],
)
def test_parents_for_cluster_queue(objs: list[dict[str, Any]], want: list[str]) -> None:
    assert car.parents_for_cluster_queue(_store(*objs), "cq") == want


def test_create_variants_already_exists() -> None:
    """Upstream TestCreateVariantsAlreadyExists: a variant created meanwhile is no error."""
    existing = created("spot", "wl-variant-spot-a2342")
    kube, store, rec = FakeKube(), Store(), Recorder()
    for q in QUEUES:
        store.put("clusterqueues" if q["kind"] == "ClusterQueue" else "localqueues", copy.deepcopy(q))
    kube.put(wl_path("wl-12345"), parent())
    kube.put(wl_path("wl-variant-spot-a2342"), existing)  # in the API, not yet in the store
    store.put("workloads", copy.deepcopy(kube.objects[wl_path("wl-12345")]))
    car.VariantReconciler(kube, store, rec, stop=threading.Event(), clock=lambda: NOW).reconcile("default/wl-12345")  # type: ignore[arg-type]
    assert rec.events == [
        ("default/wl-12345", "CreatedVariant", 'Variant Workload "default/wl-variant-on-demand-480a3" created')
    ]


# -- TestGetWorkloadNameForVariant ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("flavor", "short", "want"),
    [
        pytest.param("spot", False, None, id="simple flavor"),
        pytest.param(
            "a" * 300,
            False,
            "job-my-job-variant-" + "a" * (247 - 19),
            id="flavor name exceeding max length (ShortWorkloadNames=false)",
        ),
        pytest.param(
            "a" * 300,
            True,
            "job-my-job-variant-" + "a" * (57 - 19),
            id="flavor name exceeding max length (ShortWorkloadNames=true)",
        ),
    ],
)
def test_variant_name(flavor: str, short: bool, want: str | None) -> None:
    """Upstream hashes the owner's GroupVersionKind as its caller passes it; the controller passes
    the parent's, which is empty, so the hashes here differ from the test's batch/v1 Job ones."""
    got = ca.variant_name("job-my-job-12345", "uid-123", flavor, short=short)
    prefix = ("job-my-job-variant-" + flavor)[: 57 if short else 247]
    assert got[:-6] == prefix and got[-6] == "-" and len(got) == len(prefix) + 6
    if want is not None:
        assert got[:-6] == want
    assert ca.variant_name("job-my-job-12345", "uid-123", "flavor1") != ca.variant_name(
        "job-my-job-12345", "uid-123", "flavor2"
    )
    assert ca.variant_name("job-my-job-12345", "uid-123", "flavor-x") == ca.variant_name(
        "job-my-job-12345", "uid-123", "flavor-x"
    )


# -- the pure plan --------------------------------------------------------------------------------
def _cq(name: str) -> ClusterQueueSpec:
    return parse_cluster_queue(next(q for q in QUEUES if q["metadata"]["name"] == name), concurrent_admission=True)


def test_plan_creates_the_missing_variants_in_the_cluster_queues_flavor_order() -> None:
    """Each new variant carries the CreatedVariant event its parent gets once it exists."""
    got = ca.plan(parent(), [], _cq("cq"), NOW)
    creates = [s for s in got.steps if isinstance(s, ja.CreateWorkload)]
    assert len(creates) == len(got.steps) and got.requeue_after is None
    assert [(object_key(s.body), s.reason, s.message) for s in creates] == [
        (f"default/{n}", "CreatedVariant", f'Variant Workload "default/{n}" created')
        for n in ("wl-variant-on-demand-480a3", "wl-variant-spot-a2342")
    ]


def test_plan_deletes_a_stale_variant_then_tells_its_parent() -> None:
    """The DeletedVariant event is its own action on the parent, after the delete (upstream records
    it whether or not the variant was still there)."""
    got = ca.plan(parent(), [variant("on-demand"), variant("spot"), variant("stale")], _cq("cq"), NOW)
    message = 'Variant Workload "default/wl-variant-stale" deleted; flavor "stale" no longer in ClusterQueue'
    assert got.steps == (
        ja.DeleteWorkload(workload=variant("stale"), message=message),
        ja.RecordEvent(reason="DeletedVariant", message=message),
    )


def test_plan_evicts_the_parent_and_waits_while_it_holds_an_evicted_variants_quota() -> None:
    """Nothing else happens to the family until the parent gives the quota back."""
    evicted = variant("spot", admitted=True, Evicted=("True", "Preempted", "Evicted by preemption"))
    held = parent(admitted_on="spot")
    got = ca.plan(held, [evicted, variant("on-demand", active=False)], _cq("cq"), NOW)
    assert [s.name for s in got.steps] == ["workload_conditions"]
    step = got.steps[0]
    assert isinstance(step, ja.SetWorkloadConditions) and object_key(step.workload or {}) == "default/wl-12345"
    assert [dict(cd) for cd in step.conditions] == [
        {"type": "Evicted", "status": "True", "reason": "VariantEvicted", "message": "Admitted variant was evicted"}
    ]
    already = with_(held, Evicted=("True", "VariantEvicted", "Admitted variant was evicted"))
    assert ca.plan(already, [evicted, variant("on-demand", active=False)], _cq("cq"), NOW) == ca.VariantPlan()


@pytest.mark.parametrize(
    ("reason", "requeue"),
    [("Preempted", True), ("NodeFailures", True), ("PodsReadyTimeout", False)],
)
def test_plan_clears_an_evicted_variant_requeued_only_after_preemption_or_node_failures(
    reason: str, requeue: bool
) -> None:
    """Once the parent holds no quota: the variant's reservation goes, then every flavor is pursued again."""
    evicted = variant("spot", admitted=True, Evicted=("True", reason, "evicted"))
    got = ca.plan(parent(), [evicted, variant("on-demand", active=False)], _cq("cq"), NOW)
    assert [s.name for s in got.steps] == ["clear_reservation", "set_active"]
    clear, activate = got.steps
    assert isinstance(clear, ja.ClearReservation) and (clear.requeue, clear.reason, clear.message) == (
        requeue,
        reason,
        "evicted",
    )
    assert isinstance(activate, ja.SetWorkloadActive) and activate.active
    assert (object_key(activate.workload or {}), activate.reason, activate.message) == (
        "default/wl-variant-on-demand",
        "ActivatedVariant",
        "no other Variant being admitted",
    )


def test_plan_opens_the_next_gate_once_the_timeout_since_the_last_opening_passed() -> None:
    """`now` is the plan's only clock: a minute later the waiting variant's gate opens."""
    variants = [variant("on-demand", gate=("Open", NOW - timedelta(minutes=4))), variant("spot", blocked=True)]
    assert ca.plan(parent(), variants, _cq("cq"), NOW) == ca.VariantPlan((), timedelta(minutes=1))
    got = ca.plan(parent(), variants, _cq("cq"), NOW + timedelta(minutes=1))
    assert got.requeue_after == TIMEOUT
    assert [(s.name, object_key(s.workload or {})) for s in got.steps] == [("open_gate", "default/wl-variant-spot")]


def test_plan_leaves_its_inputs_alone() -> None:
    """The plan works on its own copies: the store's objects stay as they were."""
    p = parent(admitted_on="spot")
    variants = [variant("spot", Evicted=("True", "Preempted", "x")), variant("on-demand", admitted=True)]
    before = copy.deepcopy((p, variants))
    assert ca.plan(p, variants, _cq("cq"), NOW).steps
    assert (p, variants) == before
