"""The StatefulSet reconciler's decisions (upstream's `statefulset_reconciler_test.go` and
`statefulset_pod_reconciler_test.go` cases, by behaviour): pure functions over plain objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from webhook.api.statefulset import workload_name_for
from webhook.config import Configuration, parse
from webhook.worker.integrations.pod.common import Options
from webhook.worker.integrations.statefulset import plan_pod, plan_statefulset
from webhook.worker.jobframework import actions as ja
from webhook.worker.jobframework.plan import Lookups

NOW = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
Q = "kueue.x-k8s.io/queue-name"
OPTS = Options.from_config(
    parse(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "integrations:\n  frameworks: [pod, statefulset]\n"
    )
)


def sts(replicas: int = 3, queue: str = "lq", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "sts-uid", "labels": {Q: queue} if queue else {}},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "200m"}}}]},
            },
        },
        "status": status,
    }


def pod(
    name: str = "web-0", *, group: str = "", queue: str = "", gated: bool = True, revision: str = "r1"
) -> dict[str, Any]:
    annotations = {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}
    if group:
        annotations["kueue.x-k8s.io/pod-group-name"] = group
    labels = {"controller-revision-hash": revision, **({Q: queue} if queue else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"{name}-uid",
            "resourceVersion": "7",
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True}
            ],
        },
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}] if gated else []},
    }


def workload(*, reserved: bool = True, on_hold: bool = False, queue: str = "lq") -> dict[str, Any]:
    conds = []
    if reserved:
        conds = [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ]
    elif on_hold:
        conds = [{"type": "QuotaReserved", "status": "False", "reason": "OnHold"}]
    return {
        "metadata": {
            "name": workload_name_for(sts(), short=False),
            "namespace": "ns",
            "resourceVersion": "3",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True}
            ],
        },
        "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 3}]},
        "status": {"conditions": conds},
    }


def test_a_new_statefulset_gets_one_group_workload_of_all_its_replicas() -> None:
    result = plan_statefulset(sts(), [], None, opts=OPTS, lookups=Lookups(), now=NOW)
    created = [act for act in result.steps if isinstance(act, ja.CreateWorkload)]
    assert len(created) == 1 and not result.error
    wl = created[0].body
    assert wl["metadata"]["name"] == workload_name_for(sts(), short=False)
    assert wl["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": "sts-uid"}
    assert wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
    assert wl["metadata"]["annotations"]["kueue.x-k8s.io/job-owner-gvk"] == "apps/v1, Kind=StatefulSet"
    assert (
        wl["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
        and wl["metadata"]["ownerReferences"][0]["controller"]
    )
    assert wl["spec"]["queueName"] == "lq"
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]


def test_short_workload_names_gate_bounds_the_group_workload_and_its_pods_group_name() -> None:
    short = Options.from_config(
        parse(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
            "integrations:\n  frameworks: [pod, statefulset]\nfeatureGates:\n  ShortWorkloadNames: true\n"
        )
    )
    long_sts = sts()
    long_sts["metadata"]["name"] = "w" * 100
    [created] = [
        act
        for act in plan_statefulset(long_sts, [], None, opts=short, lookups=Lookups(), now=NOW).steps
        if isinstance(act, ja.CreateWorkload)
    ]
    name = created.body["metadata"]["name"]
    assert len(name) == 63 and name == workload_name_for(long_sts, short=True)
    assert len(workload_name_for(long_sts, short=False)) == len("statefulset-") + 100 + 6


def test_no_workload_at_zero_replicas_or_without_a_queue() -> None:
    assert plan_statefulset(sts(replicas=0), [], None, opts=OPTS, lookups=Lookups(), now=NOW).steps == ()
    assert plan_statefulset(sts(queue=""), [], None, opts=OPTS, lookups=Lookups(), now=NOW).steps == ()


def test_scale_to_zero_puts_the_workload_on_hold_and_scale_up_takes_it_off() -> None:
    down = plan_statefulset(sts(replicas=0), [], workload(), opts=OPTS, lookups=Lookups(), now=NOW).steps
    [status] = [act for act in down if isinstance(act, ja.SetWorkloadConditions)]
    assert status.clear_admission
    assert {(cd["type"], cd["status"], cd["reason"]) for cd in status.conditions} == {
        ("QuotaReserved", "False", "OnHold"),
        ("Admitted", "False", "NoReservation"),
    }
    up = plan_statefulset(
        sts(), [], workload(reserved=False, on_hold=True), opts=OPTS, lookups=Lookups(), now=NOW
    ).steps
    [status] = [act for act in up if isinstance(act, ja.SetWorkloadConditions)]
    assert not status.clear_admission
    assert [(cd["type"], cd["status"], cd["reason"]) for cd in status.conditions] == [
        ("QuotaReserved", "False", "PendingEvaluation")
    ]


def test_a_new_queue_name_reaches_the_workload_and_the_pods() -> None:
    name = workload_name_for(sts(), short=False)
    result = plan_statefulset(
        sts(queue="other"), [pod(group=name, queue="lq")], workload(), opts=OPTS, lookups=Lookups(), now=NOW
    )
    [queue] = [act for act in result.steps if isinstance(act, ja.SyncQueueName)]
    assert queue.queue_name == "other"
    [patch] = [act for act in result.steps if isinstance(act, ja.PatchPod)]
    assert patch.patch == {"metadata": {"labels": {Q: "other"}}}


def test_old_revision_pods_are_ungated_during_a_rolling_update() -> None:
    name = workload_name_for(sts(), short=False)
    rolling = sts(currentRevision="r1", updateRevision="r2")
    actions = plan_statefulset(
        rolling, [pod(group=name, queue="lq")], workload(), opts=OPTS, lookups=Lookups(), now=NOW
    ).steps
    assert [act.patch["spec"] for act in actions if isinstance(act, ja.PatchPod)] == [{"schedulingGates": []}]
    settled = sts(currentRevision="r2", updateRevision="r2")
    assert (
        plan_statefulset(
            settled, [pod(group=name, queue="lq")], workload(), opts=OPTS, lookups=Lookups(), now=NOW
        ).steps
        == ()
    )


def test_a_new_pod_joins_the_group_as_a_serving_pod() -> None:
    [patch] = plan_pod(pod(), sts(), OPTS)
    assert isinstance(patch, ja.PatchPod)
    name = workload_name_for(sts(), short=False)
    assert patch.patch == {
        "metadata": {
            "labels": {"kueue.x-k8s.io/managed": "true", Q: "lq"},
            "annotations": {
                "kueue.x-k8s.io/pod-group-total-count": "3",
                "kueue.x-k8s.io/pod-group-fast-admission": "true",
                "kueue.x-k8s.io/pod-group-serving": "true",
                "kueue.x-k8s.io/pod-group-pod-index-label": "apps.kubernetes.io/pod-index",
                "kueue.x-k8s.io/role-hash": "main",
                "kueue.x-k8s.io/prebuilt-workload-name": name,
                "kueue.x-k8s.io/pod-group-name": name,
            },
        }
    }


def test_a_pod_of_an_unqueued_statefulset_is_left_alone() -> None:
    assert plan_pod(pod(), sts(queue=""), OPTS) == []
    with_default = Options.from_config(Configuration(manage_jobs_without_queue_name=True))
    assert plan_pod(pod(), sts(queue=""), with_default) != []


def _remote_copy(origin_uid: str = "manager-uid") -> dict[str, Any]:
    """The copy MultiKueue makes on a worker (`GetOwnerUID` reads the manager's UID from it)."""
    copy_ = sts()
    copy_["metadata"]["uid"] = "worker-uid"
    copy_["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = "multikueue"
    copy_["metadata"]["annotations"] = {"kueue.x-k8s.io/multikueue-origin-uid": origin_uid}
    return copy_


def test_a_multikueue_copy_gets_no_workload_and_its_pods_join_the_managers() -> None:
    """On a worker the Workload is the manager's copy, named from the manager's UID; creating one
    here would admit the set twice, and a name from the worker's UID would never match."""
    manager = sts()
    manager["metadata"]["uid"] = "manager-uid"
    remote = _remote_copy()
    assert plan_statefulset(remote, [], None, opts=OPTS, lookups=Lookups(), now=NOW).steps == ()
    assert workload_name_for(remote, short=False) == workload_name_for(manager, short=False)
    [patch] = plan_pod(pod(), remote, OPTS)
    assert isinstance(patch, ja.PatchPod)
    group = workload_name_for(manager, short=False)
    assert patch.patch["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-name"] == group
    # Without the origin label the annotation means nothing: the set's own UID names it.
    unlabelled = _remote_copy()
    del unlabelled["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"]
    assert workload_name_for(unlabelled, short=False) != group
