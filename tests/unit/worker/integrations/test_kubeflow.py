"""The Kubeflow replica-spec integrations (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob,
MPIJob): upstream's controller tests translated, then the generic reconcile's steps as such a job
sees them, end to end against a fake API.

Translated from upstream v0.19.2, keeping the case names (prefixed by the kind):
`TestPriorityClass` (`TestCalcPriorityClassName` for MPIJob), `TestOrderedReplicaTypes`,
`TestPodSets`, `TestRestorePodSetsInfo`, `TestRunWithPodSetsInfo` and `TestReconciler` of
`pkg/controller/jobs/kubeflow/jobs/{pytorchjob,tfjob,xgboostjob,paddlejob,jaxjob}/*_controller_test.go`
and `pkg/controller/jobs/mpijob/mpijob_controller_test.go`. Their `TestValidate` cases are the
webhook's (`tests/unit/admission/test_kubeflow.py`). The reconcile scenarios run one reconcile of
the job's key through its reconciler (the pure plan and its executor) and compare what a user
sees: the job, its Workloads, the patches sent and the events.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import merged, pruned
from tests.unit.fake_kube import FakeKube
from tests.unit.worker.integrations.job_world import NOW, Outcome, Recorder, admit, evict, one_reconcile, ts
from webhook.api import integrations
from webhook.api import kubeflow as kf
from webhook.config import Configuration, Integrations, WaitForPodsReady
from webhook.worker.integrations import kubeflow as kfi
from webhook.worker.jobframework import setup as fw_setup
from webhook.worker.jobframework.interface import StartConflict
from webhook.worker.jobframework.setup import SetupContext
from webhook.worker.store import Store

WL_API = "kueue.x-k8s.io/v1beta2"
WL_FIN = "kueue.x-k8s.io/resource-in-use"
QUEUE = "kueue.x-k8s.io/queue-name"
PODSET = "kueue.x-k8s.io/podset"
LQ_LABEL = "kueue.x-k8s.io/local-queue-name"
CQ_LABEL = "kueue.x-k8s.io/cluster-queue-name"
WPC_LABEL = "kueue.x-k8s.io/priority-class"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
KINDS = {k_.name: k_ for k_ in kf.KINDS.values()}
NO_TAS = {"TopologyAwareScheduling": False}


# --- builders (upstream's testingjobs wrappers, as plain dicts) -----------------------------------------


def replica(
    replicas: int | None = 1,
    *,
    priority_class: str | None = None,
    annotations: Mapping[str, str] | None = None,
    cpu: str | None = None,
    node_selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`<Kind>ReplicaSpecRequirement{ReplicaCount, Annotations}`: one container, restartPolicy Never."""
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    template: dict[str, Any] = {"spec": spec}
    if annotations is not None:
        template["metadata"] = {"annotations": dict(annotations)}
    out: dict[str, Any] = {"template": template}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def bare(priority_class: str | None = None) -> dict[str, Any]:
    """A replica spec that is only a pod template (Go's `{Template: {Spec: {PriorityClassName}}}`)."""
    return {"template": {"spec": {} if priority_class is None else {"priorityClassName": priority_class}}}


def make_job(
    kind: kf.Kind,
    specs: Mapping[str, dict[str, Any] | None] | None = None,
    *,
    name: str = "job",
    suspend: bool | None = True,
    queue: str | None = None,
    labels: Mapping[str, str] | None = None,
    scheduling_priority: str | None = None,
) -> dict[str, Any]:
    """`testing<kind>.Make<Kind>(name, "ns")`: suspended, with `specs` (replica type → spec)."""
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"{name}-uid"}
    all_labels = dict(labels or {})
    if queue is not None:
        all_labels[QUEUE] = queue
    if all_labels:
        meta["labels"] = all_labels
    run_policy: dict[str, Any] = {}
    if suspend is not None:
        run_policy["suspend"] = suspend
    if scheduling_priority is not None:
        run_policy["schedulingPolicy"] = {"priorityClass": scheduling_priority} if scheduling_priority else {}
    spec: dict[str, Any] = {"runPolicy": run_policy}
    if specs is not None:
        spec[kind.replica_specs_field] = copy.deepcopy(dict(specs))
    return {"apiVersion": kind.framework.api_version, "kind": kind.name, "metadata": meta, "spec": spec}


def template_of(job: Mapping[str, Any], kind: kf.Kind, replica_type: str) -> dict[str, Any]:
    return job["spec"][kind.replica_specs_field][replica_type]["template"]  # type: ignore[no-any-return]


# --- upstream: TestPriorityClass / TestCalcPriorityClassName ------------------------------------------


def _two_type_priority_cases(kind: kf.Kind, first: str, second: str) -> list[Any]:
    """The seven cases upstream writes for a kind of two replica types (Master/Worker, Launcher/Worker)."""
    f = first.lower()
    return [
        pytest.param(kind, None, None, "", id=f"{kind.name}: none priority class name specified"),
        pytest.param(
            kind,
            {first: bare(f"{f}-priority"), second: bare("worker-priority")},
            "scheduling-priority",
            "scheduling-priority",
            id=f"{kind.name}: priority specified at runPolicy and replicas; use priority in runPolicy",
        ),
        pytest.param(
            kind,
            {first: bare(f"{f}-priority")},
            "",
            f"{f}-priority",
            id=f"{kind.name}: runPolicy present, but without priority; fallback to {f}",
        ),
        pytest.param(
            kind,
            {first: bare(f"{f}-priority"), second: bare("worker-priority")},
            None,
            f"{f}-priority",
            id=f"{kind.name}: specified on {f} takes precedence over worker",
        ),
        pytest.param(
            kind,
            {first: bare(), second: bare("worker-priority")},
            None,
            "worker-priority",
            id=f"{kind.name}: {f} present, but without priority; fallback to worker",
        ),
        pytest.param(
            kind,
            {first: {}, second: bare("worker-priority")},
            None,
            "worker-priority",
            id=f"{kind.name}: specified on worker only",
        ),
        pytest.param(
            kind,
            {first: {}, second: bare()},
            None,
            "",
            id=f"{kind.name}: worker present, but without priority; fallback to empty",
        ),
    ]


PRIORITY_CASES = [
    *_two_type_priority_cases(kf.PYTORCHJOB, "Master", "Worker"),
    *_two_type_priority_cases(kf.XGBOOSTJOB, "Master", "Worker"),
    *_two_type_priority_cases(kf.PADDLEJOB, "Master", "Worker"),
    *_two_type_priority_cases(kf.MPIJOB, "Launcher", "Worker"),
    pytest.param(kf.TFJOB, None, None, "", id="TFJob: none priority class name specified"),
    pytest.param(
        kf.TFJOB,
        {"Chief": bare("chief-priority"), "Worker": bare("worker-priority")},
        "scheduling-priority",
        "scheduling-priority",
        id="TFJob: priority specified at runPolicy and replicas; use priority in runPolicy",
    ),
    pytest.param(
        kf.TFJOB,
        {"Chief": bare("chief-priority")},
        "",
        "chief-priority",
        id="TFJob: runPolicy present, but without priority; fallback to chief",
    ),
    pytest.param(
        kf.TFJOB,
        {
            "Chief": bare("chief-priority"),
            "PS": bare("ps-priority"),
            "Worker": bare("worker-priority"),
            "Evaluator": bare("eval-priority"),
        },
        None,
        "chief-priority",
        id="TFJob: specified on chief takes precedence over chief",
    ),
    pytest.param(
        kf.TFJOB,
        {"Chief": bare(), "Evaluator": bare("eval-priority")},
        None,
        "eval-priority",
        id="TFJob: chief present, but without priority; fallback to evaluator",
    ),
    pytest.param(
        kf.TFJOB,
        {"Chief": {}, "Worker": bare("worker-priority")},
        None,
        "worker-priority",
        id="TFJob: specified on worker only",
    ),
    pytest.param(
        kf.TFJOB,
        {"Chief": {}, "Evaluator": bare()},
        None,
        "",
        id="TFJob: evaluator present, but without priority; fallback to empty",
    ),
    pytest.param(kf.JAXJOB, None, None, "", id="JAXJob: none priority class name specified"),
    pytest.param(
        kf.JAXJOB,
        {"Worker": bare("worker-priority")},
        "scheduling-priority",
        "scheduling-priority",
        id="JAXJob: priority specified at runPolicy and replicas; use priority in runPolicy",
    ),
]


@pytest.mark.parametrize(("kind", "specs", "scheduling", "want"), PRIORITY_CASES)
def test_priority_class(kind: kf.Kind, specs: dict[str, Any] | None, scheduling: str | None, want: str) -> None:
    job = make_job(kind, specs, scheduling_priority=scheduling)
    assert kfi.KubeflowJob(job, kind).priority_class() == want


# --- upstream: TestOrderedReplicaTypes ----------------------------------------------------------------


def _ordered_cases(kind: kf.Kind, only_worker: str) -> list[Any]:
    return [
        pytest.param(kind, None, [], id=f"{kind.name}: job has no replicas"),
        pytest.param(kind, {"Worker": {}, "Master": {}}, ["Master", "Worker"], id=f"{kind.name}: job has all replicas"),
        pytest.param(kind, {"Worker": {}}, ["Worker"], id=f"{kind.name}: {only_worker}"),
    ]


ORDERED_CASES = [
    *_ordered_cases(kf.PYTORCHJOB, "job only has the worker replica"),
    *_ordered_cases(kf.XGBOOSTJOB, "job has only worker replica"),
    *_ordered_cases(kf.PADDLEJOB, "job only has the worker replica"),
    pytest.param(kf.TFJOB, None, [], id="TFJob: job has no replicas"),
    pytest.param(
        kf.TFJOB,
        {"PS": {}, "Evaluator": {}, "Worker": {}, "Chief": {}, "Master": {}},
        ["Chief", "Master", "PS", "Worker", "Evaluator"],
        id="TFJob: job has all replicas",
    ),
    pytest.param(kf.TFJOB, {"Worker": {}}, ["Worker"], id="TFJob: job has only worker replicas"),
    pytest.param(kf.JAXJOB, None, [], id="JAXJob: job has no replicas"),
    pytest.param(kf.JAXJOB, {"Worker": {}}, ["Worker"], id="JAXJob: job has worker replicas"),
]


@pytest.mark.parametrize(("kind", "specs", "want"), ORDERED_CASES)
def test_ordered_replica_types(kind: kf.Kind, specs: dict[str, Any] | None, want: list[str]) -> None:
    """Only the kind's types with a spec, in the kind's order, whatever the map's order."""
    assert kf.ordered_replica_types(make_job(kind, specs), kind) == want


def test_a_null_replica_spec_and_an_unknown_type_make_no_pod_set() -> None:
    """Go's nil map entry is skipped, and a type the kind does not know (Go's map lookup is exact:
    `master`) is never a podSet."""
    job = make_job(kf.PYTORCHJOB, {"Master": None, "master": replica(), "Worker": replica(2)})
    assert [(ps["name"], ps["count"]) for ps in kfi.pod_sets(job, kf.PYTORCHJOB)] == [("worker", 2)]


# --- upstream: TestPodSets ----------------------------------------------------------------------------


def _topology(**request: str) -> dict[str, Any]:
    return {**request, "podIndexLabel": REPLICA_INDEX}


def _pod_set_cases(
    kind: kf.Kind, default_types: Sequence[str], annotated: Sequence[tuple[str, dict[str, str]]]
) -> list[Any]:
    """Upstream's three TestPodSets cases of a kind: its default replicas without annotations;
    replica types with a required / preferred topology annotation (and one without), with TAS on
    and off."""
    plain = {t: replica() for t in default_types}
    with_annotations = {t: replica(annotations=a or None) for t, a in annotated}
    want_plain = [(t.lower(), 1, None) for t in default_types]
    want_tas = [
        (
            t.lower(),
            1,
            _topology(**({"required": a[REQUIRED]} if REQUIRED in a else {"preferred": a[PREFERRED]} if a else {})),
        )
        for t, a in annotated
    ]
    return [
        pytest.param(kind, plain, False, want_plain, id=f"{kind.name}: no annotations"),
        pytest.param(
            kind, with_annotations, True, want_tas, id=f"{kind.name}: with required and preferred topology annotation"
        ),
        pytest.param(
            kind,
            with_annotations,
            False,
            [(t.lower(), 1, None) for t, _ in annotated],
            id=f"{kind.name}: without required and preferred topology annotation if TAS is disabled",
        ),
    ]


MW_ANNOTATED = [("Master", {REQUIRED: "cloud.com/rack"}), ("Worker", {PREFERRED: "cloud.com/block"})]
POD_SET_CASES = [
    *_pod_set_cases(kf.PYTORCHJOB, ("Master", "Worker"), MW_ANNOTATED),
    *_pod_set_cases(kf.XGBOOSTJOB, ("Master", "Worker"), MW_ANNOTATED),
    *_pod_set_cases(kf.PADDLEJOB, ("Master", "Worker"), MW_ANNOTATED),
    *_pod_set_cases(
        kf.TFJOB,
        ("Chief", "PS", "Worker"),
        [("Chief", {REQUIRED: "cloud.com/rack"}), ("PS", {PREFERRED: "cloud.com/block"}), ("Worker", {})],
    ),
    # JAXJob's two cases run with upstream's default gates (TopologyAwareScheduling on).
    pytest.param(kf.JAXJOB, {"Worker": replica()}, True, [("worker", 1, _topology())], id="JAXJob: no annotations"),
    pytest.param(
        kf.JAXJOB,
        {"Worker": replica(annotations={PREFERRED: "cloud.com/block"})},
        True,
        [("worker", 1, _topology(preferred="cloud.com/block"))],
        id="JAXJob: with required and preferred topology annotation",
    ),
    pytest.param(
        kf.MPIJOB,
        {"Launcher": replica(), "Worker": replica(3)},
        False,
        [("launcher", 1, None), ("worker", 3, None)],
        id="MPIJob: no annotations",
    ),
    pytest.param(
        kf.MPIJOB,
        {
            "Launcher": replica(annotations={REQUIRED: "cloud.com/block"}),
            "Worker": replica(3, annotations={REQUIRED: "cloud.com/block"}),
        },
        True,
        [("launcher", 1, _topology(required="cloud.com/block")), ("worker", 3, _topology(required="cloud.com/block"))],
        id="MPIJob: with required topology annotation",
    ),
    pytest.param(
        kf.MPIJOB,
        {
            "Launcher": replica(annotations={PREFERRED: "cloud.com/block"}),
            "Worker": replica(3, annotations={PREFERRED: "cloud.com/block"}),
        },
        True,
        [
            ("launcher", 1, _topology(preferred="cloud.com/block")),
            ("worker", 3, _topology(preferred="cloud.com/block")),
        ],
        id="MPIJob: with preferred topology annotation",
    ),
    pytest.param(
        kf.MPIJOB,
        {
            "Launcher": replica(annotations={REQUIRED: "cloud.com/block"}),
            "Worker": replica(3, annotations={REQUIRED: "cloud.com/block"}),
        },
        False,
        [("launcher", 1, None), ("worker", 3, None)],
        id="MPIJob: without required and preferred topology annotation if TAS is disabled",
    ),
    pytest.param(
        kf.MPIJOB,
        {
            "Launcher": replica(annotations={PREFERRED: "cloud.com/block"}),
            "Worker": replica(3, annotations={PREFERRED: "cloud.com/block"}),
        },
        False,
        [("launcher", 1, None), ("worker", 3, None)],
        id="MPIJob: without preferred topology annotation if TAS is disabled",
    ),
    pytest.param(
        kf.MPIJOB,
        {"Launcher": None, "Worker": replica(3)},
        False,
        [("worker", 3, None)],
        id="MPIJob: nil launcher replica spec is skipped",
    ),
]


@pytest.mark.parametrize(("kind", "specs", "tas", "want"), POD_SET_CASES)
def test_pod_sets(
    kind: kf.Kind, specs: dict[str, Any], tas: bool, want: list[tuple[str, int, dict[str, Any] | None]]
) -> None:
    """Each podSet: the lower-cased replica type, `replicas`, the replica type's pod template as it
    is (annotations included) and, with TAS, the template's topology request."""
    job = make_job(kind, specs)
    got = kfi.pod_sets(job, kind, tas=tas)
    assert [(ps["name"], ps["count"], ps.get("topologyRequest")) for ps in got] == want
    types = kf.ordered_replica_types(job, kind)
    assert [ps["template"] for ps in got] == [template_of(job, kind, t) for t in types]


def test_replicas_default_to_one() -> None:
    job = make_job(kf.TFJOB, {"Chief": replica(None), "Worker": replica(4)})
    assert [(ps["name"], ps["count"]) for ps in kfi.pod_sets(job, kf.TFJOB)] == [("chief", 1), ("worker", 4)]


# --- upstream: TestRestorePodSetsInfo and TestRunWithPodSetsInfo ---------------------------------------


def _wl_with(*node_selectors: dict[str, str] | None) -> dict[str, Any]:
    """A Workload whose podSets' templates carry these node selectors (None: an empty template)."""
    return {
        "spec": {
            "podSets": [
                {"name": f"ps{i}", "count": 1, "template": {} if ns is None else {"spec": {"nodeSelector": ns}}}
                for i, ns in enumerate(node_selectors)
            ]
        }
    }


RESTORED = {"restored": "true"}
RESTORE_CASES = [
    pytest.param(
        kf.PYTORCHJOB,
        {"Master": replica(), "Worker": replica()},
        _wl_with(None, None, None),
        None,
        id="PyTorchJob: more podSetsInfo than replica types is a no-op",
    ),
    pytest.param(
        kf.PYTORCHJOB,
        {"Master": replica(), "Worker": replica()},
        _wl_with(None),
        None,
        id="PyTorchJob: fewer podSetsInfo than replica types is a no-op",
    ),
    pytest.param(
        kf.PYTORCHJOB,
        {"Master": replica(), "Worker": replica()},
        _wl_with(RESTORED, RESTORED),
        ["Master", "Worker"],
        id="PyTorchJob: matching length restores pod sets",
    ),
    pytest.param(
        kf.MPIJOB,
        {"Launcher": replica(), "Worker": replica()},
        _wl_with(None, None, None),
        None,
        id="MPIJob: more podSetsInfo than replica types is a no-op",
    ),
    pytest.param(
        kf.MPIJOB,
        {"Launcher": replica(), "Worker": replica()},
        _wl_with(None),
        None,
        id="MPIJob: fewer podSetsInfo than replica types is a no-op",
    ),
    pytest.param(
        kf.MPIJOB,
        {"Launcher": replica(), "Worker": replica()},
        _wl_with(RESTORED, RESTORED),
        ["Launcher", "Worker"],
        id="MPIJob: matching length restores pod sets",
    ),
    pytest.param(
        kf.MPIJOB,
        {"Launcher": None, "Worker": replica()},
        _wl_with(RESTORED),
        ["Worker"],
        id="MPIJob: nil launcher replica spec restores only the worker",
    ),
    pytest.param(
        kf.MPIJOB,
        {"Launcher": replica(), "Worker": None},
        _wl_with(RESTORED),
        ["Launcher"],
        id="MPIJob: nil worker replica spec restores only the launcher",
    ),
]


@pytest.mark.parametrize(("kind", "specs", "wl", "restored"), RESTORE_CASES)
def test_restore_pod_sets_info(
    kind: kf.Kind, specs: dict[str, Any], wl: dict[str, Any], restored: list[str] | None
) -> None:
    job = make_job(kind, specs)
    patch = kfi.restore_patch(job, kind, wl)
    if restored is None:
        assert patch is None
        return
    assert patch is not None
    after = merged(job, patch)
    for t in restored:
        assert template_of(after, kind, t)["spec"]["nodeSelector"] == RESTORED
    assert set(patch["spec"][kind.replica_specs_field]) == set(restored)


def _admitted(*names: str) -> dict[str, Any]:
    """A Workload admitted with its podSets `names` on flavor `assigned` (node label assigned=true)."""
    return {
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"queueName": "q", "podSets": [{"name": n, "count": 1, "template": {}} for n in names]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": n, "count": 1, "flavors": {"cpu": "assigned"}} for n in names],
            }
        },
    }


ASSIGNED_FLAVOR = {"assigned": {"metadata": {"name": "assigned"}, "spec": {"nodeLabels": {"assigned": "true"}}}}
RUN_CASES = [
    pytest.param(
        {"Launcher": replica(), "Worker": replica()}, ("launcher",), None, id="mismatched length returns an error"
    ),
    pytest.param(
        {"Launcher": replica(), "Worker": replica()},
        ("launcher", "worker"),
        ["Launcher", "Worker"],
        id="matching length runs the job",
    ),
    pytest.param(
        {"Launcher": None, "Worker": replica()},
        ("worker",),
        ["Worker"],
        id="nil launcher replica spec only assigns the worker",
    ),
    pytest.param(
        {"Launcher": replica(), "Worker": None},
        ("launcher",),
        ["Launcher"],
        id="nil worker replica spec only assigns the launcher",
    ),
]


@pytest.mark.parametrize(("specs", "pod_sets", "assigned"), RUN_CASES)
def test_run_with_pod_sets_info(specs: dict[str, Any], pod_sets: tuple[str, ...], assigned: list[str] | None) -> None:
    """MPIJob's `TestRunWithPodSetsInfo`: the admission goes to the replica types present, matched
    by position; a count that differs is a permanent error."""
    job = make_job(kf.MPIJOB, specs)
    wl = _admitted(*pod_sets)
    if assigned is None:
        with pytest.raises(StartConflict, match="invalid podset infos: expecting 2 podset, got 1"):
            kfi.start_patch(job, kf.MPIJOB, wl, ASSIGNED_FLAVOR, assign_queue_labels=False)
        return
    after = merged(job, kfi.start_patch(job, kf.MPIJOB, wl, ASSIGNED_FLAVOR, assign_queue_labels=False))
    assert after["spec"]["runPolicy"]["suspend"] is False
    for t in assigned:
        assert template_of(after, kf.MPIJOB, t)["spec"]["nodeSelector"] == {"assigned": "true"}


# --- the fake API and one reconcile -------------------------------------------------------------------


@dataclass
class World:
    kind: kf.Kind
    job: dict[str, Any]
    workloads: Sequence[dict[str, Any]] = ()
    classes: Sequence[tuple[str, dict[str, Any]]] = ()
    flavors: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"default": {}})
    config: Configuration = field(default_factory=lambda: Configuration(wait_for_pods_ready=None, feature_gates=NO_TAS))


def reconcile(world: World) -> Outcome:
    return one_reconcile(
        world.kind.framework,
        kfi.RECONCILERS[world.kind.name],
        world.job,
        workloads=world.workloads,
        classes=world.classes,
        flavors=world.flavors,
        config=world.config,
    )


def _spec_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    assert obj is not None
    return obj["spec"]  # type: ignore[no-any-return]


def workload_for(
    kind: kf.Kind, job: Mapping[str, Any], counts: Mapping[str, int], *, name: str = "wl"
) -> dict[str, Any]:
    """The Workload of `job` (created already, finalizer on), its podSets taken from the job."""
    return {
        "apiVersion": WL_API,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "finalizers": [WL_FIN],
            "ownerReferences": [
                {
                    "apiVersion": kind.framework.api_version,
                    "kind": kind.name,
                    "name": job["metadata"]["name"],
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": (job["metadata"].get("labels") or {}).get(QUEUE, ""),
            "priority": 0,
            "podSets": [
                {"name": ps["name"], "count": counts.get(ps["name"], ps["count"]), "template": ps["template"]}
                for ps in kf.pod_sets(job, kind)
            ],
        },
    }


# --- upstream: TestReconciler -------------------------------------------------------------------------

MANAGE_ALL = Configuration(manage_jobs_without_queue_name=True, wait_for_pods_ready=None)  # TAS on, as upstream
WPC = (
    "workloadpriorityclasses",
    {"apiVersion": WL_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "test-wpc"}, "value": 100},
)
PC = (
    "priorityclasses",
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "test-pc"}, "value": 200},
)
WPC_REF = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "test-wpc"}
PC_REF = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "test-pc"}


def _default_specs(kind: kf.Kind, workers: int) -> dict[str, Any]:
    """`<Kind>ReplicaSpecsDefault().Parallelism(workers)` / `GenericLauncherAndWorker()`."""
    first = "Launcher" if kind is kf.MPIJOB else "Master"
    return {first: replica(), "Worker": replica(workers)}


CREATE_CASES = [
    *(
        pytest.param(
            kind, _default_specs(kind, 2), {}, (), (0, None), id=f"{kind.name}: workload is created with podsets"
        )
        for kind in (kf.PADDLEJOB, kf.XGBOOSTJOB, kf.MPIJOB)
    ),
    pytest.param(
        kf.MPIJOB,
        _default_specs(kf.MPIJOB, 2),
        {"labels": {WPC_LABEL: "test-wpc"}},
        (WPC,),
        (100, WPC_REF),
        id="MPIJob: workload is created with podsets and workloadPriorityClass",
    ),
    pytest.param(
        kf.MPIJOB,
        _default_specs(kf.MPIJOB, 2),
        {"scheduling_priority": "test-pc"},
        (PC,),
        (200, PC_REF),
        id="MPIJob: workload is created with podsets and PriorityClass",
    ),
    pytest.param(
        kf.MPIJOB,
        _default_specs(kf.MPIJOB, 2),
        {"labels": {WPC_LABEL: "test-wpc"}, "scheduling_priority": "test-pc"},
        (PC, WPC),
        (100, WPC_REF),
        id="MPIJob: workload is created with podsets, workloadPriorityClass and PriorityClass",
    ),
]


@pytest.mark.parametrize(("kind", "specs", "options", "classes", "want_priority"), CREATE_CASES)
def test_reconciler_creates_the_workload(
    kind: kf.Kind,
    specs: dict[str, Any],
    options: dict[str, Any],
    classes: Sequence[tuple[str, dict[str, Any]]],
    want_priority: tuple[int, dict[str, str] | None],
) -> None:
    job = make_job(kind, specs, **options)
    got = reconcile(World(kind, job, classes=classes, config=MANAGE_ALL))
    assert got.error is None
    assert _spec_of(got.job) == job["spec"] and got.job_patches == []
    (wl,) = got.workloads
    name = kfi.workload_name(kind, "job", "job-uid")
    assert wl["metadata"]["name"] == name
    assert wl["metadata"]["ownerReferences"][0]["kind"] == kind.name
    assert wl["metadata"]["ownerReferences"][0]["apiVersion"] == kind.framework.api_version
    first = "launcher" if kind is kf.MPIJOB else "master"
    assert [(ps["name"], ps["count"], ps["topologyRequest"]) for ps in wl["spec"]["podSets"]] == [
        (first, 1, _topology()),
        ("worker", 2, _topology()),
    ]
    assert (wl["spec"]["priority"], wl["spec"].get("priorityClassRef")) == want_priority
    assert got.events == [("ns/job", "Normal", "CreatedWorkload", f"Created Workload: ns/{name}")]


@pytest.mark.parametrize("kind", [kf.PADDLEJOB, kf.XGBOOSTJOB], ids=lambda k_: k_.name)
def test_workload_isnt_created_due_to_manage_jobs_without_queue_name_false(kind: kf.Kind) -> None:
    """Upstream's "workload isn't created due to manageJobsWithoutQueueName=false"."""
    job = make_job(kind, _default_specs(kind, 2))
    got = reconcile(World(kind, job))
    assert (got.workloads, got.job_patches, got.events, got.error) == ([], [], [], None)
    assert _spec_of(got.job) == job["spec"]


def _running(kind: kf.Kind, specs: Mapping[str, Any], **kw: Any) -> dict[str, Any]:
    return make_job(kind, specs, queue="foo", suspend=False, **kw)


@pytest.mark.parametrize("kind", [kf.PADDLEJOB, kf.XGBOOSTJOB], ids=lambda k_: k_.name)
def test_when_workload_is_evicted_suspended_is_reset_restore_node_affinity(kind: kf.Kind) -> None:
    """Upstream's "when workload is evicted, suspended is reset, restore node affinity": the
    running job is suspended with the node selector it got at start removed (its Workload's
    templates have none); its pods are still active, so the Workload keeps its quota."""
    specs = {
        "Master": replica(cpu="1", node_selector={"provisioning": "spot"}),
        "Worker": replica(10, cpu="5", node_selector={"provisioning": "spot"}),
    }
    job = _running(kind, specs)
    job["status"] = {"replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 10}}}
    clean = {"Master": replica(cpu="1"), "Worker": replica(10, cpu="5")}
    wl = admit(workload_for(kind, make_job(kind, clean, queue="foo"), {}, name="a"))
    evict(wl, reason="", message="")
    got = reconcile(World(kind, job, workloads=[wl]))
    assert got.error is None
    assert pruned(_spec_of(got.job)) == make_job(kind, clean)["spec"]
    assert got.workloads[0]["status"] == wl["status"]


# --- the generic reconcile, as a Kubeflow job sees it ---------------------------------------------------


def two_replicas(kind: kf.Kind = kf.PYTORCHJOB) -> dict[str, Any]:
    """The job most scenarios start from: queue `foo`, a master of one cpu and 2 workers of one cpu."""
    first = "Launcher" if kind is kf.MPIJOB else "Master"
    return make_job(kind, {first: replica(cpu="1"), "Worker": replica(2, cpu="1")}, queue="foo")


def test_a_job_without_queue_name_is_left_alone() -> None:
    got = reconcile(World(kf.PYTORCHJOB, make_job(kf.PYTORCHJOB, {"Worker": replica()})))
    assert (got.workloads, got.job_patches, got.events) == ([], [], [])


def test_a_job_run_by_another_enabled_integration_is_left_alone() -> None:
    """A PyTorchJob an AppWrapper wraps: the AppWrapper's integration owns admission."""
    job = two_replicas()
    job["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "name": "aw",
            "uid": "aw",
            "controller": True,
        }
    ]
    config = Configuration(
        integrations=Integrations(frameworks=("kubeflow.org/pytorchjob", "workload.codeflare.dev/appwrapper")),
        wait_for_pods_ready=None,
        feature_gates=NO_TAS,
    )
    got = reconcile(World(kf.PYTORCHJOB, job, config=config))
    assert (got.workloads, got.job_patches, got.events) == ([], [], [])


@pytest.mark.parametrize("kind", list(kf.KINDS.values()), ids=lambda k_: k_.name)
def test_every_kind_gets_a_workload_named_after_its_kind(kind: kf.Kind) -> None:
    first = {"TFJob": "Chief", "MPIJob": "Launcher", "JAXJob": None}.get(kind.name, "Master")
    specs = {"Worker": replica(3)} if first is None else {first: replica(), "Worker": replica(3)}
    got = reconcile(World(kind, make_job(kind, specs, queue="foo")))
    (wl,) = got.workloads
    assert wl["metadata"]["name"] == kfi.workload_name(kind, "job", "job-uid")
    assert wl["metadata"]["name"].startswith(f"{kind.name.lower()}-job-")
    assert wl["spec"]["queueName"] == "foo"
    want = [("worker", 3)] if first is None else [(first.lower(), 1), ("worker", 3)]
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == want


def test_admitted_workload_starts_the_job_with_each_podsets_flavor() -> None:
    """`RunWithPodSetsInfo`: one patch unsuspends the job and merges each podSet's flavor node
    labels, tolerations and queue labels into its replica type's pod template."""
    job = two_replicas()
    template_of(job, kf.PYTORCHJOB, "Worker")["spec"]["nodeSelector"] = {"disk": "ssd"}
    tol = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    wl = admit(workload_for(kf.PYTORCHJOB, job, {}))
    wl["status"]["admission"]["podSetAssignments"][1]["flavors"] = {"cpu": "spot"}
    flavors = {"default": {"nodeLabels": {"pool": "a"}}, "spot": {"nodeLabels": {"pool": "b"}, "tolerations": [tol]}}
    got = reconcile(World(kf.PYTORCHJOB, job, workloads=[wl], flavors=flavors))
    assert got.error is None
    (patch,) = got.job_patches
    assert patch["spec"]["runPolicy"] == {"suspend": False}
    assert patch["metadata"]["resourceVersion"]
    master, worker = (template_of(got.job or {}, kf.PYTORCHJOB, t) for t in ("Master", "Worker"))
    assert _spec_of(got.job)["runPolicy"]["suspend"] is False
    assert master["metadata"]["labels"] == {PODSET: "master", LQ_LABEL: "foo", CQ_LABEL: "cq"}
    assert master["spec"]["nodeSelector"] == {"pool": "a"} and "tolerations" not in master["spec"]
    assert worker["metadata"]["labels"] == {PODSET: "worker", LQ_LABEL: "foo", CQ_LABEL: "cq"}
    assert worker["spec"]["nodeSelector"] == {"disk": "ssd", "pool": "b"}
    assert worker["spec"]["tolerations"] == [tol]
    assert got.events == [("ns/job", "Normal", "Started", "Admitted by clusterQueue cq")]


def test_an_admission_for_other_podsets_fails_to_start() -> None:
    job = two_replicas(kf.MPIJOB)
    wl = admit(workload_for(kf.MPIJOB, job, {}))
    wl["status"]["admission"]["podSetAssignments"].pop()
    got = reconcile(World(kf.MPIJOB, job, workloads=[wl]))
    assert got.job_patches == []
    finished = next(x for x in got.workloads[0]["status"]["conditions"] if x["type"] == "Finished")
    assert (finished["status"], finished["reason"], finished["message"]) == (
        "True",
        "FailedToStart",
        "invalid podset infos: expecting 2 podset, got 1",
    )


def test_a_flavor_conflicting_with_the_template_fails_to_start() -> None:
    job = two_replicas()
    template_of(job, kf.PYTORCHJOB, "Master")["spec"]["nodeSelector"] = {"pool": "z"}
    wl = admit(workload_for(kf.PYTORCHJOB, job, {}))
    got = reconcile(World(kf.PYTORCHJOB, job, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    finished = next(x for x in got.workloads[0]["status"]["conditions"] if x["type"] == "Finished")
    assert finished["reason"] == "FailedToStart"
    assert finished["message"] == (
        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=pool, value1=z, value2=a"
    )


def started(kind: kf.Kind, job: dict[str, Any], wl: Mapping[str, Any]) -> dict[str, Any]:
    """The job as starting with `wl`'s admission left it (flavor `default` labels pool=a)."""
    out = copy.deepcopy(job)
    out["spec"]["runPolicy"]["suspend"] = False
    for t, ps in zip(kf.ordered_replica_types(out, kind), wl["spec"]["podSets"], strict=True):
        template = template_of(out, kind, t)
        template.setdefault("metadata", {})["labels"] = {PODSET: ps["name"], LQ_LABEL: "foo", CQ_LABEL: "cq"}
        template["spec"]["nodeSelector"] = {"pool": "a"}
    return out


def test_eviction_stops_the_job_and_restores_its_templates_in_one_patch() -> None:
    """`stopJob` without a custom stop: suspend and `RestorePodSetsInfo` in one patch, the
    `Stopped` event with the eviction's message; once no pod is active the quota is released."""
    job = two_replicas()
    wl = admit(workload_for(kf.PYTORCHJOB, job, {}))
    evict(wl)
    running = started(kf.PYTORCHJOB, job, wl)
    got = reconcile(World(kf.PYTORCHJOB, running, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    assert got.error is None
    (patch,) = got.job_patches
    assert patch["spec"]["runPolicy"] == {"suspend": True}
    # the labels and node selector the start added go (maps merge key by key; emptied ones go whole)
    assert patch["spec"]["pytorchReplicaSpecs"]["Master"]["template"] == {
        "metadata": {"labels": None},
        "spec": {"nodeSelector": None},
    }
    assert pruned(_spec_of(got.job)) == job["spec"]  # suspended, templates as the Workload has them
    assert got.events == [("ns/job", "Normal", "Stopped", "Preempted to accommodate a workload")]
    conds = {x["type"]: x for x in got.workloads[0]["status"]["conditions"]}
    assert conds["QuotaReserved"]["status"] == "False"
    assert (conds["Requeued"]["status"], conds["Requeued"]["reason"]) == ("True", "Preempted")


def test_a_suspended_job_is_not_stopped_again() -> None:
    job = two_replicas()
    template_of(job, kf.PYTORCHJOB, "Master").setdefault("metadata", {})["labels"] = {"extra": "x"}
    wl = workload_for(kf.PYTORCHJOB, two_replicas(), {})
    wl["status"] = {"conditions": [{"type": "Evicted", "status": "True", "reason": "Preempted", "message": "m"}]}
    got = reconcile(World(kf.PYTORCHJOB, job, workloads=[wl]))
    assert (got.job_patches, got.events, got.error) == ([], [], None)


def test_a_running_job_without_admission_is_stopped() -> None:
    job = two_replicas()
    job["spec"]["runPolicy"]["suspend"] = False
    got = reconcile(World(kf.PYTORCHJOB, job, workloads=[workload_for(kf.PYTORCHJOB, two_replicas(), {})]))
    (patch,) = got.job_patches
    assert patch["spec"] == {"runPolicy": {"suspend": True}}
    assert got.events == [("ns/job", "Normal", "Stopped", "Not admitted by cluster queue")]


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        pytest.param([("Succeeded", "True", "job succeeded")], ("Succeeded", "job succeeded"), id="Succeeded"),
        pytest.param([("Failed", "True", "job failed")], ("Failed", "job failed"), id="Failed"),
        pytest.param(
            [("Running", "True", "r"), ("Failed", "True", "f"), ("Succeeded", "True", "s")],
            ("Failed", "f"),
            id="the first finished condition wins",
        ),
        pytest.param([("Succeeded", "False", "s"), ("Running", "True", "r")], None, id="not finished"),
    ],
)
def test_finished_job_finishes_its_workload(
    conditions: list[tuple[str, str, str]], want: tuple[str, str] | None
) -> None:
    job = two_replicas(kf.MPIJOB)
    wl = admit(workload_for(kf.MPIJOB, job, {}))
    done = started(kf.MPIJOB, job, wl)
    done["status"] = {"conditions": [{"type": t, "status": s, "reason": "X", "message": m} for t, s, m in conditions]}
    got = reconcile(World(kf.MPIJOB, done, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    finished = next((x for x in got.workloads[0]["status"]["conditions"] if x["type"] == "Finished"), None)
    if want is None:
        assert finished is None and got.events == []
        return
    assert finished is not None
    assert (finished["status"], finished["reason"], finished["message"]) == ("True", *want)
    assert got.events == [("ns/job", "Normal", "FinishedWorkload", "Workload 'ns/wl' is declared finished")]
    assert got.job_patches == []


@pytest.mark.parametrize(
    ("running", "want"),
    [pytest.param("True", "True", id="Running"), pytest.param("False", "False", id="not running")],
)
def test_pods_ready_follows_the_running_condition(running: str, want: str) -> None:
    job = two_replicas()
    wl = admit(workload_for(kf.PYTORCHJOB, job, {}))
    live = started(kf.PYTORCHJOB, job, wl)
    live["status"] = {"conditions": [{"type": "Running", "status": running, "reason": "X", "message": ""}]}
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(), feature_gates=NO_TAS)
    world = World(
        kf.PYTORCHJOB, live, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}, config=config
    )
    ready = next(x for x in reconcile(world).workloads[0]["status"]["conditions"] if x["type"] == "PodsReady")
    assert ready["status"] == want


def test_a_changed_replica_count_replaces_the_unadmitted_workload() -> None:
    job = two_replicas()
    old = workload_for(kf.PYTORCHJOB, job, {})
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 5
    got = reconcile(World(kf.PYTORCHJOB, job, workloads=[old]))
    assert {ps["name"]: ps["count"] for ps in got.workloads[0]["spec"]["podSets"]} == {"master": 1, "worker": 5}
    assert got.events == [
        ("ns/job", "Normal", "UpdatedWorkload", "Updated not matching Workload for suspended job: ns/wl")
    ]


def test_an_evicted_job_keeps_its_quota_while_a_pod_is_active() -> None:
    job = two_replicas()
    wl = admit(workload_for(kf.PYTORCHJOB, job, {}))
    evict(wl)
    running = started(kf.PYTORCHJOB, job, wl)
    running["status"] = {"replicaStatuses": {"Master": {"active": 0}, "Worker": {"active": 1}}}
    got = reconcile(World(kf.PYTORCHJOB, running, workloads=[wl], flavors={"default": {"nodeLabels": {"pool": "a"}}}))
    assert len(got.job_patches) == 1 and _spec_of(got.job)["runPolicy"]["suspend"] is True
    conds = {x["type"]: x["status"] for x in got.workloads[0]["status"]["conditions"]}
    assert conds["QuotaReserved"] == "True"


def test_the_job_going_away_releases_its_workload() -> None:
    job = two_replicas()
    job["metadata"]["deletionTimestamp"] = ts(NOW)
    job["metadata"]["finalizers"] = ["x"]
    got = reconcile(World(kf.PYTORCHJOB, job, workloads=[admit(workload_for(kf.PYTORCHJOB, two_replicas(), {}))]))
    assert got.workloads[0]["metadata"].get("finalizers") in (None, [])


@pytest.mark.parametrize("framework", [k_.framework for k_ in kf.KINDS.values()], ids=lambda f: f.kind)
def test_setup_watches_the_row_being_set_up(framework: integrations.Framework) -> None:
    """`wire` hands each enabled row to the one adapter; its reconciler follows that kind only,
    optionally (the operator's CRD may not be installed)."""
    ctx = SetupContext(
        kube=FakeKube(),  # type: ignore[arg-type]
        store=Store(),
        config=Configuration(integrations=Integrations(frameworks=(framework.name,))),
        recorder=Recorder(),
        stop=threading.Event(),
    )
    (wiring,) = fw_setup.wire(ctx)
    assert isinstance(wiring.reconciler, kfi.RECONCILERS[framework.kind])
    assert [(r.kind, r.api_version, r.optional) for r in wiring.watches] == [
        (framework.resource, framework.api_version, True)
    ]
