"""Upstream v0.19.2 `pkg/controller/admissionchecks/provisioning/controller_test.go`,
`admissioncheck_reconciler_test.go` and `indexer_test.go`, case by case under upstream's names, against our controller
(`reconcilers.provisioning` carrying out `admissionchecks.provisioning.plan`) on a fake API.

Upstream runs every TestReconcile case twice, with gate WorkloadRequestUseMergePatch off and on; the
gate only changes how upstream sends its Workload writes (ours are PUTs of the status either way),
so each case runs once here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.unit.worker import provisioning_fixtures as f
from tests.unit.worker.provisioning_fixtures import (
    MANAGED,
    NS,
    Obj,
    admission_check,
    assignment,
    check,
    condition,
    config,
    pod_set,
    request,
    template,
    with_checks,
    with_conditions,
    with_owner,
    with_request_conditions,
    workload,
)
from webhook import kube as k
from webhook.api import constants as c
from webhook.worker.admissionchecks import provisioning as p

PENDING, READY, RETRY, REJECTED = (
    c.CHECK_STATE_PENDING,
    c.CHECK_STATE_READY,
    c.CHECK_STATE_RETRY,
    c.CHECK_STATE_REJECTED,
)
WL = f"{NS}/wl"
PR = p.REQUEST_POD_ANNOTATION
CLASS = p.CLASS_POD_ANNOTATION


# == TestMergePodSetsSkipsZeroCounts ===============================================================


def _counted_workload(spec_counts: Sequence[int], admitted: Sequence[int]) -> Obj:
    return workload(
        pod_sets=[pod_set(f"ps{i}", n, requests={"cpu": "1"}) for i, n in enumerate(spec_counts)],
        assignments=[assignment(f"ps{i}", n) for i, n in enumerate(admitted)],
    )


MERGE_CASES = {
    "zero spec count": (_counted_workload([0, 2], [0, 2]), None, ["ps1"], [2]),
    "zero admission count override": (_counted_workload([1, 2], [0, 2]), None, ["ps1"], [2]),
    "zero count does not block compatible merging": (
        _counted_workload([1, 2, 3], [0, 2, 3]),
        "IdenticalPodTemplates",
        ["ps1"],
        [5],
    ),
}


@pytest.mark.parametrize("name", list(MERGE_CASES))
def test_merge_pod_sets_skips_zero_counts(name: str) -> None:
    wl, policy, names, counts = MERGE_CASES[name]
    got = p.merge_pod_sets(wl, {"podSetMergePolicy": policy} if policy else {})
    assert [m.name for m in got] == names
    assert [m.count for m in got] == counts


# == TestReqIsNeeded ===============================================================================


def _needs(spec_count: int, admitted: int | None, with_assignment: bool) -> Obj:
    return workload(
        pod_sets=[pod_set("ps", spec_count, requests={"cpu": "1"})],
        assignments=[assignment("ps", admitted)] if with_assignment else [],
    )


REQ_CASES: dict[str, tuple[Obj, bool, bool]] = {
    "positive admitted count needs request": (_needs(1, 1, True), True, False),
    "missing admitted count falls back to spec count": (_needs(1, None, True), True, False),
    "zero admitted count does not need request": (_needs(1, 0, True), False, False),
    "zero spec count does not require assignment": (_needs(0, None, False), False, False),
    "missing assignment returns inconsistency error": (_needs(1, None, False), False, True),
    "needed podset short circuits later missing assignment": (
        workload(
            pod_sets=[pod_set("ps1", 1, requests={"cpu": "1"}), pod_set("ps2", 1, requests={"cpu": "1"})],
            assignments=[assignment("ps1", 1)],
        ),
        True,
        False,
    ),
}


@pytest.mark.parametrize("name", list(REQ_CASES))
def test_req_is_needed(name: str) -> None:
    wl, want, want_error = REQ_CASES[name]
    cfg = config(managed=["cpu"])
    if want_error:
        with pytest.raises(p.InconsistentPodSetAssignments):
            p.req_is_needed(wl, cfg)
    else:
        assert p.req_is_needed(wl, cfg) is want


# == TestReconcile =================================================================================

TOLERATION = {"key": "f1t1k", "value": "f1t1v", "operator": "Equal", "effect": "NoSchedule"}
FLAVORS = [f.flavor("flv1", {"f1l1": "v1"}, [TOLERATION]), f.flavor("flv2", {"f2l1": "v1"})]
BASE_ASSIGNMENTS = [
    assignment("ps1", 4, {"cpu": "flv1"}, {"cpu": "4"}),
    assignment("ps2", 3, {"cpu": "flv2"}, {"cpu": "3M"}),
]
BASE_CHECKS = (check("check1"), check("not-provisioning"))
BASE_WORKLOAD = workload(
    pod_sets=[pod_set("ps1", 4, requests={"cpu": "1"}), pod_set("ps2", 4, requests={"memory": "1M"})],
    assignments=BASE_ASSIGNMENTS,
    checks=BASE_CHECKS,
)
CHECK1_READY = with_checks(BASE_WORKLOAD, check("check1", READY), check("not-provisioning"))
BASE_REQUEST = request(
    "wl-check1-1",
    [("ppt-wl-check1-1-ps1", 4), ("ppt-wl-check1-1-ps2", 3)],
    provisioning_class="class1",
    parameters={"p1": "v1"},
    labels=MANAGED,
)
TEMPLATE1 = template(
    "ppt-wl-check1-1-ps1", requests={"cpu": "1"}, node_selector={"f1l1": "v1"}, tolerations=[TOLERATION]
)
TEMPLATE2 = template("ppt-wl-check1-1-ps2", requests={"memory": "1M"}, node_selector={"f2l1": "v1"})
BASE_CONFIG = config(provisioning_class="class1", parameters={"p1": "v1"})
RETRY_CONFIG = config(provisioning_class="class1", parameters={"p1": "v1"}, retry=True)
POD_SET_UPDATES_CONFIG = config(
    provisioning_class="class1",
    parameters={"p1": "v1"},
    retry=True,
    node_selector=[("node-selector-key", "node-selector-value")],
)
BASE_CHECK = admission_check("check1", params=(c.GROUP, p.CONFIG_KIND, "config1"))
ALL_ZERO = copy.deepcopy(BASE_WORKLOAD)
for _ps, _psa in zip(ALL_ZERO["spec"]["podSets"], ALL_ZERO["status"]["admission"]["podSetAssignments"], strict=True):
    _ps["count"], _psa["count"] = 0, 0
ANNOTATED = workload(
    annotations={
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "0",
        "invalid-provreq-prefix/Foo1": "Bar1",
        "another-invalid-provreq-prefix/Foo2": "Bar2",
    },
    checks=[check("check1")],
)
MERGE_ASSIGNMENTS = [
    assignment("ps1", 1, {"cpu": "flv1"}, {"cpu": "1"}),
    assignment("ps2", 2, {"cpu": "flv1"}, {"cpu": "1"}),
    assignment("ps3", 2, {"cpu": "flv2"}, {"memory": "1M"}),
    assignment("ps4", 1, {"cpu": "flv2"}, {"memory": "1M"}),
    assignment("ps5", 1, {"cpu": "flv2"}, {"memory": "1M"}),
]
AFFINITY = [{"matchExpressions": [{"key": "type", "operator": "In", "values": ["two"]}]}]
ALREADY_EXISTS = 'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists'
TEMPLATE_ERROR = k.Unprocessable(422, "invalid PodTemplate error")
REQUEST_ERROR = k.Unprocessable(422, "invalid ProvisioningRequest error")


def created(name: str, events: Sequence[tuple[str, str, str, str]] = ()) -> list[tuple[str, str, str, str]]:
    return [*events, (WL, "Normal", "ProvisioningRequestCreated", f'Created ProvisioningRequest: "{name}"')]


def updated(note: str) -> list[tuple[str, str, str, str]]:
    return [(WL, "Normal", "AdmissionCheckUpdated", note)]


def provisioned_updates(*, node_selector: Mapping[str, str] | None = None) -> list[Obj]:
    out: list[Obj] = []
    for ps in ("ps1", "ps2"):
        update: Obj = {"name": ps, "annotations": {PR: "wl-check1-1", CLASS: "class1"}}
        if node_selector:
            update["nodeSelector"] = dict(node_selector)
        out.append(update)
    return out


def conds(*pairs: tuple[str, str], message: Mapping[str, str] | None = None) -> list[Obj]:
    msgs = message or {}
    return [condition(t, s, message=msgs.get(t, "")) for t, s in pairs]


def by_test(ctype: str) -> Obj:
    """`requestWithCondition`: the condition, True, with message "By test"."""
    return condition(ctype, message="By test")


def templates_owned_by(kind: str, name: str, *tmpls: Obj) -> dict[str, Obj]:
    return {t["metadata"]["name"]: with_owner(t, kind, name) for t in tmpls}


@dataclass
class Case:
    workload: Obj
    checks: Sequence[Obj] = ()
    configs: Sequence[Obj] = ()
    flavors: Sequence[Obj] = ()
    requests: Sequence[Obj] = ()
    templates: Sequence[Obj] = ()
    fail_create: Mapping[str, k.KubeError] = field(default_factory=dict)
    cleanup_on_eviction: bool = True
    want_error: type[Exception] | None = None
    want_workloads: Mapping[str, Obj] = field(default_factory=dict)
    want_requests: Mapping[str, Obj | None] = field(default_factory=dict)  # None: must not exist
    want_templates: Mapping[str, Obj] = field(default_factory=dict)
    want_requests_not_found: Sequence[str] = ()
    want_events: Sequence[tuple[str, str, str, str]] = ()


CAPACITY_REVOKED = conds(
    (p.FAILED, "False"), (p.PROVISIONED, "True"), (p.ACCEPTED, "True"), (p.CAPACITY_REVOKED, "True")
)
ADMITTED = condition(c.WorkloadCondition.ADMITTED, reason="ByTest", message="Admitted by ClusterQueue q1")
NOT_ADMITTED = {**ADMITTED, "status": "False"}
FINISHED = condition(c.WorkloadCondition.FINISHED, reason="ByTest", message="Finished by test")
MERGE_POD_SETS = [
    pod_set("ps1", 2, requests={"cpu": "1"}),
    pod_set("ps2", 2, requests={"cpu": "1"}),
    pod_set("ps3", 2, requests={"memory": "1M"}, priority_class="pc-100"),
    pod_set("ps4", 2, requests={"memory": "1M"}, priority_class="pc-100"),
    pod_set("ps5", 1, requests={"memory": "1M"}, priority_class="pc-200"),
]
SIMILAR_POD_SETS = [
    pod_set("ps1", 2, requests={"cpu": "1"}, priority_class="pc-100"),
    pod_set("ps2", 2, requests={"cpu": "1"}, priority_class="pc-200"),
    pod_set("ps3", 2, requests={"memory": "1M"}, priority_class="pc-100", topology="default1"),
    pod_set("ps4", 2, requests={"memory": "1M"}, priority_class="pc-200", topology="default2"),
    pod_set("ps5", 1, requests={"memory": "1M"}, priority_class="pc-300", affinity_terms=AFFINITY),
]
MERGED_REQUEST = request(
    "wl-check1-1",
    [("ppt-wl-check1-1-ps1", 3), ("ppt-wl-check1-1-ps3", 3), ("ppt-wl-check1-1-ps5", 1)],
    labels=MANAGED,
)
PR_OWNER = ("ProvisioningRequest", "wl-check1-1")

RECONCILE_CASES: dict[str, Case] = {
    "unrelated workload": Case(workload(reserved=False)),
    "unrelated workload with reservation": Case(workload()),
    "unrelated admitted workload": Case(with_conditions(workload(), ADMITTED)),
    "missing config": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD, check("check1", message=p.CHECK_INACTIVE_MESSAGE), check("not-provisioning")
            )
        },
    ),
    "with config": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        want_workloads={"wl": BASE_WORKLOAD},
        want_requests={"wl-check1-1": BASE_REQUEST},
        want_templates=templates_owned_by(*PR_OWNER, TEMPLATE1, TEMPLATE2),
        want_events=created("wl-check1-1"),
    ),
    "with only zero-count PodSets": Case(
        ALL_ZERO,
        requests=[BASE_REQUEST],
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        want_workloads={
            "wl": with_checks(ALL_ZERO, check("check1", READY, p.NO_REQUEST_NEEDED), check("not-provisioning"))
        },
        want_requests_not_found=["wl-check1-1"],
        want_events=updated(
            "Admission check check1 updated state from Pending to Ready with message: the provisioning request is not needed"
        ),
    ),
    "workload with provreq annotation": Case(
        ANNOTATED,
        checks=[BASE_CHECK],
        configs=[config()],
        want_requests={
            "wl-check1-1": request(
                "wl-check1-1", [("ppt-wl-check1-1-main", 1)], parameters={"ValidUntilSeconds": "0"}, labels=MANAGED
            )
        },
        want_events=created("wl-check1-1"),
    ),
    "remove unnecessary requests": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[request("wl-check2")],
        want_workloads={"wl": BASE_WORKLOAD},
        want_requests_not_found=["wl-check2"],
        want_events=created("wl-check1-1"),
    ),
    "one template already created": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        templates=[with_owner(TEMPLATE1, "Workload", "wl")],
        want_workloads={"wl": BASE_WORKLOAD},
        want_requests={"wl-check1-1": BASE_REQUEST},
        want_templates=templates_owned_by(*PR_OWNER, TEMPLATE1, TEMPLATE2),
        want_events=created("wl-check1-1"),
    ),
    "request out of sync": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[
            request("wl-check1-1", [("ppt-wl-check1-1-main", 1)], provisioning_class="class1", parameters={"p1": "v0"})
        ],
        want_workloads={"wl": BASE_WORKLOAD},
        want_requests={"wl-check1-1": BASE_REQUEST},
        want_templates=templates_owned_by(*PR_OWNER, TEMPLATE1, TEMPLATE2),
        want_events=created("wl-check1-1"),
    ),
    "request removed on workload finished": Case(
        with_conditions(BASE_WORKLOAD, condition(c.WorkloadCondition.FINISHED)),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[BASE_REQUEST],
        templates=[TEMPLATE1, TEMPLATE2],
        want_requests_not_found=["wl-check1-1"],
    ),
    "request removed on workload evicted": Case(
        with_conditions(BASE_WORKLOAD, condition(c.WorkloadCondition.EVICTED, reason="Preempted")),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[BASE_REQUEST],
        templates=[TEMPLATE1, TEMPLATE2],
        want_requests_not_found=["wl-check1-1"],
    ),
    "request removed on workload evicted by admission check": Case(
        with_conditions(BASE_WORKLOAD, condition(c.WorkloadCondition.EVICTED, reason="AdmissionCheck")),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[BASE_REQUEST],
        templates=[TEMPLATE1, TEMPLATE2],
        want_requests_not_found=["wl-check1-1"],
    ),
    "request preserved on workload evicted when cleanup is disabled": Case(
        with_conditions(BASE_WORKLOAD, condition(c.WorkloadCondition.EVICTED, reason="AdmissionCheck")),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[BASE_REQUEST],
        templates=[TEMPLATE1, TEMPLATE2],
        cleanup_on_eviction=False,
        want_requests={"wl-check1-1": BASE_REQUEST},
    ),
    "when retry count is preserved but provisioning request was cleaned up": Case(
        with_checks(BASE_WORKLOAD, check("check1", retryCount=1), check("not-provisioning")),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        want_workloads={"wl": with_checks(BASE_WORKLOAD, check("check1", retryCount=1), check("not-provisioning"))},
        want_requests={
            "wl-check1-2": request(
                "wl-check1-2",
                [("ppt-wl-check1-2-ps1", 4), ("ppt-wl-check1-2-ps2", 3)],
                provisioning_class="class1",
                parameters={"p1": "v1"},
                labels=MANAGED,
            )
        },
        want_events=created("wl-check1-2"),
    ),
    "when request fails and is retried": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[config(provisioning_class="class1", parameters={"p1": "v1"}, retry_limit=2)],
        requests=[with_request_conditions(BASE_REQUEST, by_test(p.FAILED))],
        templates=[TEMPLATE1, TEMPLATE2],
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD,
                check("check1", RETRY, "Retrying after failure: By test", requeueAfterSeconds=60),
                check("not-provisioning"),
            )
        },
        want_events=updated(
            "Admission check check1 updated state from Pending to Retry with message: Retrying after failure: By test"
        ),
    ),
    "when request fails, and there is no retry": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[config(provisioning_class="class1", parameters={"p1": "v1"}, retry_limit=0)],
        requests=[with_request_conditions(BASE_REQUEST, by_test(p.FAILED))],
        templates=[TEMPLATE1, TEMPLATE2],
        want_workloads={
            "wl": with_checks(BASE_WORKLOAD, check("check1", REJECTED, "By test"), check("not-provisioning"))
        },
        want_events=updated("Admission check check1 updated state from Pending to Rejected with message: By test"),
    ),
    "when request is provisioned": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[with_request_conditions(BASE_REQUEST, by_test(p.PROVISIONED))],
        templates=[TEMPLATE1, TEMPLATE2],
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD,
                check("check1", READY, "By test", podSetUpdates=provisioned_updates()),
                check("not-provisioning"),
            )
        },
        want_events=updated("Admission check check1 updated state from Pending to Ready with message: By test"),
    ),
    "when no request is needed": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[config(provisioning_class="class1", parameters={"p1": "v1"}, managed=["example.org/gpu"])],
        want_workloads={
            "wl": with_checks(BASE_WORKLOAD, check("check1", READY, p.NO_REQUEST_NEEDED), check("not-provisioning"))
        },
        want_events=updated(
            "Admission check check1 updated state from Pending to Ready with message: the provisioning request is not needed"
        ),
    ),
    "when request is needed for one PodSet (resource request)": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[config(provisioning_class="class1", parameters={"p1": "v1"}, managed=["memory"])],
        want_workloads={"wl": BASE_WORKLOAD},
        want_requests={
            "wl-check1-1": request(
                "wl-check1-1",
                [("ppt-wl-check1-1-ps2", 3)],
                provisioning_class="class1",
                parameters={"p1": "v1"},
                labels=MANAGED,
            )
        },
        want_templates=templates_owned_by(*PR_OWNER, TEMPLATE2),
        want_events=created("wl-check1-1"),
    ),
    "when request is needed for one PodSet (resource limit)": Case(
        f.with_limit(BASE_WORKLOAD, "example.com/gpu", "1"),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[config(provisioning_class="class1", parameters={"p1": "v1"}, managed=["example.com/gpu"])],
        want_workloads={"wl": f.with_limit(BASE_WORKLOAD, "example.com/gpu", "1")},
        want_requests={
            "wl-check1-1": request(
                "wl-check1-1",
                [("ppt-wl-check1-1-ps1", 4)],
                provisioning_class="class1",
                parameters={"p1": "v1"},
                labels=MANAGED,
            )
        },
        want_templates={
            "ppt-wl-check1-1-ps1": template(
                "ppt-wl-check1-1-ps1",
                requests={"cpu": "1", "example.com/gpu": "1"},
                limits={"example.com/gpu": "1"},
                node_selector={"f1l1": "v1"},
                tolerations=[TOLERATION],
                owner=PR_OWNER,
            )
        },
        want_events=created("wl-check1-1"),
    ),
    "when the request is removed while the check is ready; don't create the ProvReq and keep Ready state": Case(
        CHECK1_READY,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        want_workloads={"wl": CHECK1_READY},
        want_requests_not_found=["wl-check1-1", "wl-check2-1"],
    ),
    "workloads status gets updated based on the provisioning request": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        templates=[TEMPLATE1, TEMPLATE2],
        requests=[
            with_request_conditions(
                BASE_REQUEST,
                *conds(
                    (p.FAILED, "False"),
                    (p.PROVISIONED, "False"),
                    (p.ACCEPTED, "True"),
                    message={p.PROVISIONED: "Provisioning Request wasn't provisioned. ETA: 2024-02-22T10:36:40Z"},
                ),
            )
        ],
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD,
                check("check1", PENDING, "Provisioning Request wasn't provisioned. ETA: 2024-02-22T10:36:40Z"),
                check("not-provisioning"),
            )
        },
    ),
    "workload sets AdmissionCheck status to Rejected when it is not finished and receives the provisioning request's CapacityRevoked condition": Case(
        with_conditions(BASE_WORKLOAD, ADMITTED),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[with_request_conditions(BASE_REQUEST, *CAPACITY_REVOKED)],
        want_workloads={
            "wl": with_conditions(
                with_checks(BASE_WORKLOAD, check("check1", REJECTED), check("not-provisioning")), ADMITTED
            )
        },
        want_events=updated("Admission check check1 updated state from Pending to Rejected"),
    ),
    "workload sets AdmissionCheck status to Rejected when it is not admitted and receives the provisioning request's CapacityRevoked condition": Case(
        with_conditions(BASE_WORKLOAD, NOT_ADMITTED),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[with_request_conditions(BASE_REQUEST, *CAPACITY_REVOKED)],
        want_workloads={
            "wl": with_conditions(
                with_checks(BASE_WORKLOAD, check("check1", REJECTED), check("not-provisioning")), NOT_ADMITTED
            )
        },
        want_events=updated("Admission check check1 updated state from Pending to Rejected"),
    ),
    "workloads doesnt set AdmissionCheck status to Rejected when it is finished and receives the provisioning request's CapacityRevoked condition": Case(
        with_conditions(BASE_WORKLOAD, FINISHED),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[with_request_conditions(BASE_REQUEST, *CAPACITY_REVOKED)],
        want_workloads={"wl": with_conditions(BASE_WORKLOAD, FINISHED)},
    ),
    "workload does nothing when admitted and receives the provisioning request's BookingExpired condition": Case(
        with_conditions(BASE_WORKLOAD, ADMITTED),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[
            with_request_conditions(
                BASE_REQUEST,
                *conds((p.FAILED, "False"), (p.PROVISIONED, "True"), (p.ACCEPTED, "True"), (p.BOOKING_EXPIRED, "True")),
            )
        ],
        want_workloads={"wl": with_conditions(BASE_WORKLOAD, ADMITTED)},
    ),
    "workload retries the admission check when is not admitted and receives the provisioning request's BookingExpired condition": Case(
        with_conditions(BASE_WORKLOAD, NOT_ADMITTED),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[config(provisioning_class="class1", parameters={"p1": "v1"}, retry_limit=1)],
        requests=[
            with_request_conditions(
                BASE_REQUEST,
                *conds(
                    (p.FAILED, "False"),
                    (p.PROVISIONED, "True"),
                    (p.ACCEPTED, "True"),
                    (p.BOOKING_EXPIRED, "True"),
                    message={p.BOOKING_EXPIRED: "Expired By test"},
                ),
            )
        ],
        want_workloads={
            "wl": with_conditions(
                with_checks(
                    BASE_WORKLOAD,
                    check("check1", RETRY, "Retrying after booking expired: Expired By test", requeueAfterSeconds=60),
                    check("not-provisioning"),
                ),
                NOT_ADMITTED,
            )
        },
        want_events=updated(
            "Admission check check1 updated state from Pending to Retry with message: "
            "Retrying after booking expired: Expired By test"
        ),
    ),
    "workload rejects the admission check when is not admitted and receives the provisioning request's BookingExpired condition": Case(
        with_conditions(BASE_WORKLOAD, NOT_ADMITTED),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[config(provisioning_class="class1", parameters={"p1": "v1"}, retry_limit=0)],
        requests=[
            with_request_conditions(
                BASE_REQUEST,
                *conds((p.FAILED, "False"), (p.PROVISIONED, "True"), (p.ACCEPTED, "True"), (p.BOOKING_EXPIRED, "True")),
            )
        ],
        want_workloads={
            "wl": with_conditions(
                with_checks(BASE_WORKLOAD, check("check1", REJECTED), check("not-provisioning")), NOT_ADMITTED
            )
        },
        want_events=updated("Admission check check1 updated state from Pending to Rejected"),
    ),
    "when pod template creation error": Case(
        ANNOTATED,
        fail_create={"podtemplates": TEMPLATE_ERROR},
        checks=[BASE_CHECK],
        configs=[config()],
        want_error=k.Unprocessable,
        want_workloads={
            "wl": with_checks(
                ANNOTATED,
                check("check1", message='Error creating PodTemplate "ppt-wl-check1-1-main": invalid PodTemplate error'),
            )
        },
        want_events=[
            (
                WL,
                "Warning",
                "FailedCreate",
                'Error creating PodTemplate "ppt-wl-check1-1-main": invalid PodTemplate error',
            )
        ],
    ),
    "when provisioning request creation error": Case(
        BASE_WORKLOAD,
        fail_create={"provisioningrequests": REQUEST_ERROR},
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        want_error=k.Unprocessable,
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD,
                check(
                    "check1",
                    message='Error creating ProvisioningRequest "wl-check1-1": invalid ProvisioningRequest error',
                ),
                check("not-provisioning"),
            )
        },
        want_requests={"wl-check1-1": None},
        want_templates=templates_owned_by("Workload", "wl", TEMPLATE1, TEMPLATE2),
        want_events=[
            (
                WL,
                "Warning",
                "FailedCreate",
                'Error creating ProvisioningRequest "wl-check1-1": invalid ProvisioningRequest error',
            )
        ],
    ),
    "when the provisioning request already exists": Case(
        BASE_WORKLOAD,
        fail_create={"provisioningrequests": k.Conflict(409, ALREADY_EXISTS)},
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        want_error=k.Conflict,
        want_workloads={"wl": BASE_WORKLOAD},
        want_templates=templates_owned_by("Workload", "wl", TEMPLATE1, TEMPLATE2),
    ),
    "when the existing request is already visible in the cache": Case(
        BASE_WORKLOAD,
        fail_create={"provisioningrequests": k.Conflict(409, ALREADY_EXISTS)},
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[request("wl-check1-1", owners=())],
        want_error=k.Conflict,
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD,
                check("check1", message=f'Error creating ProvisioningRequest "wl-check1-1": {ALREADY_EXISTS}'),
                check("not-provisioning"),
            )
        },
        want_events=[
            (WL, "Warning", "FailedCreate", f'Error creating ProvisioningRequest "wl-check1-1": {ALREADY_EXISTS}')
        ],
    ),
    "when the request has no conditions yet the previous check message is cleared": Case(
        with_checks(
            BASE_WORKLOAD,
            check("check1", message=f'Error creating ProvisioningRequest "wl-check1-1": {ALREADY_EXISTS}'),
            check("not-provisioning"),
        ),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[BASE_REQUEST],
        templates=[TEMPLATE1, TEMPLATE2],
        want_workloads={"wl": BASE_WORKLOAD},
    ),
    "when the request is provisioned the previous check message is cleared": Case(
        with_checks(
            BASE_WORKLOAD,
            check("check1", message=f'Error creating ProvisioningRequest "wl-check1-1": {ALREADY_EXISTS}'),
            check("not-provisioning"),
        ),
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[RETRY_CONFIG],
        requests=[with_request_conditions(BASE_REQUEST, condition(p.PROVISIONED, reason=p.PROVISIONED))],
        templates=[TEMPLATE1, TEMPLATE2],
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD, check("check1", READY, podSetUpdates=provisioned_updates()), check("not-provisioning")
            )
        },
        want_events=updated("Admission check check1 updated state from Pending to Ready"),
    ),
    "when request is provisioned and has NodeSelector specified via ProvisioningClassDetail": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[POD_SET_UPDATES_CONFIG],
        requests=[
            f.with_details(
                with_request_conditions(BASE_REQUEST, by_test(p.PROVISIONED)),
                {"node-selector-value": "nodes-selector-xyz"},
            )
        ],
        templates=[TEMPLATE1, TEMPLATE2],
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD,
                check(
                    "check1",
                    READY,
                    "By test",
                    podSetUpdates=provisioned_updates(node_selector={"node-selector-key": "nodes-selector-xyz"}),
                ),
                check("not-provisioning"),
            )
        },
        want_events=updated("Admission check check1 updated state from Pending to Ready with message: By test"),
    ),
    "when request is provisioned and has NodeSelector missing in the ProvisioningClassDetail": Case(
        BASE_WORKLOAD,
        checks=[BASE_CHECK],
        flavors=FLAVORS,
        configs=[POD_SET_UPDATES_CONFIG],
        requests=[
            f.with_details(with_request_conditions(BASE_REQUEST, by_test(p.PROVISIONED)), {"some-detail": "xyz"})
        ],
        templates=[TEMPLATE1, TEMPLATE2],
        want_workloads={
            "wl": with_checks(
                BASE_WORKLOAD,
                check("check1", READY, "By test", podSetUpdates=provisioned_updates()),
                check("not-provisioning"),
            )
        },
        want_events=updated("Admission check check1 updated state from Pending to Ready with message: By test"),
    ),
    "with podSetMergePolicy IdenticalPodTemplates": Case(
        workload(pod_sets=MERGE_POD_SETS, assignments=MERGE_ASSIGNMENTS, checks=BASE_CHECKS),
        checks=[BASE_CHECK],
        configs=[config(merge_policy="IdenticalPodTemplates")],
        flavors=FLAVORS,
        want_requests={"wl-check1-1": MERGED_REQUEST},
        want_events=created("wl-check1-1"),
        want_templates={
            "ppt-wl-check1-1-ps1": template(
                "ppt-wl-check1-1-ps1",
                requests={"cpu": "1"},
                node_selector={"f1l1": "v1"},
                tolerations=[TOLERATION],
                owner=PR_OWNER,
            ),
            "ppt-wl-check1-1-ps3": template(
                "ppt-wl-check1-1-ps3",
                requests={"memory": "1M"},
                node_selector={"f2l1": "v1"},
                priority_class="pc-100",
                owner=PR_OWNER,
            ),
            "ppt-wl-check1-1-ps5": template(
                "ppt-wl-check1-1-ps5",
                requests={"memory": "1M"},
                node_selector={"f2l1": "v1"},
                priority_class="pc-200",
                owner=PR_OWNER,
            ),
        },
    ),
    "with podSetMergePolicy IdenticalWorkloadSchedulingRequirements": Case(
        workload(pod_sets=SIMILAR_POD_SETS, assignments=MERGE_ASSIGNMENTS, checks=BASE_CHECKS),
        checks=[BASE_CHECK],
        configs=[config(merge_policy="IdenticalWorkloadSchedulingRequirements")],
        flavors=FLAVORS,
        want_requests={"wl-check1-1": MERGED_REQUEST},
        want_events=created("wl-check1-1"),
        want_templates={
            "ppt-wl-check1-1-ps1": template(
                "ppt-wl-check1-1-ps1",
                requests={"cpu": "1"},
                node_selector={"f1l1": "v1"},
                priority_class="pc-100",
                tolerations=[TOLERATION],
                owner=PR_OWNER,
            ),
            "ppt-wl-check1-1-ps3": template(
                "ppt-wl-check1-1-ps3",
                requests={"memory": "1M"},
                node_selector={"f2l1": "v1"},
                priority_class="pc-100",
                owner=PR_OWNER,
            ),
            "ppt-wl-check1-1-ps5": template(
                "ppt-wl-check1-1-ps5",
                requests={"memory": "1M"},
                node_selector={"f2l1": "v1"},
                priority_class="pc-300",
                affinity_terms=AFFINITY,
                owner=PR_OWNER,
            ),
        },
    ),
    "with podSetMergePolicy but no PodSetAssignments": Case(
        workload(
            pod_sets=[
                pod_set("ps11", 2, requests={"cpu": "1"}, priority_class="pc-100"),
                pod_set("ps22", 2, requests={"cpu": "1"}, priority_class="pc-200"),
            ],
            assignments=MERGE_ASSIGNMENTS,
            checks=BASE_CHECKS,
        ),
        checks=[BASE_CHECK],
        configs=[config(merge_policy="IdenticalWorkloadSchedulingRequirements")],
        flavors=FLAVORS,
        want_error=p.InconsistentPodSetAssignments,
    ),
}


def _template_view(tmpl: Obj) -> Obj:
    """What upstream compares of a PodTemplate: all but resourceVersion and the pods' restartPolicy."""
    out = copy.deepcopy(tmpl)
    out["metadata"].pop("resourceVersion", None)
    ((out.get("template") or {}).get("spec") or {}).pop("restartPolicy", None)
    return f.equate_empty(out)


def _request_view(req: Obj) -> Obj:
    """What upstream compares of a request: spec, status and labels (not the rest of its metadata)."""
    return f.equate_empty({"labels": req["metadata"].get("labels"), "spec": req["spec"], "status": req.get("status")})


def _workload_view(wl: Obj) -> Obj:
    return f.equate_empty({"spec": wl["spec"], "status": wl["status"]}, drop=f.WORKLOAD_DROP)


@pytest.mark.parametrize("name", list(RECONCILE_CASES))
def test_reconcile(name: str) -> None:
    case = RECONCILE_CASES[name]
    world = f.World(
        [case.workload, *case.checks, *case.configs, *case.flavors, *case.requests, *case.templates],
        fail_create=case.fail_create,
        cleanup_on_eviction=case.cleanup_on_eviction,
    )
    if case.want_error is None:
        world.controller.reconcile_workload(WL)
    else:
        with pytest.raises(case.want_error):
            world.controller.reconcile_workload(WL)
    for wl_name, want in case.want_workloads.items():
        assert _workload_view(world.workload(wl_name)) == _workload_view(want)
    for req_name, want_req in case.want_requests.items():
        got = world.request(req_name)
        if want_req is None:
            assert got is None
        else:
            assert got is not None
            assert _request_view(got) == _request_view(want_req)
    for pt_name, want_pt in case.want_templates.items():
        got_pt = world.template(pt_name)
        assert got_pt is not None
        assert _template_view(got_pt) == _template_view(want_pt)
    for req_name in case.want_requests_not_found:
        assert world.request(req_name) is None
    assert world.events.sent == list(case.want_events)


# == TestActiveOrLastPRForChecks ====================================================================

_ACTIVE_WL = workload(
    pod_sets=[pod_set("main", 4, requests={"cpu": "1"})],
    assignments=[assignment("main", 4, {"cpu": "flv1"}, {"cpu": "4"})],
    checks=[check("check"), check("not-provisioning")],
)
_PR1_FAILED = with_request_conditions(
    request("wl-check-1", [("ppt-wl-check-1-ps1", 4)], provisioning_class="class1", parameters={"p1": "v1"}),
    by_test(p.FAILED),
)
_PR2 = request("wl-check-2", [("ppt-wl-check-1-ps1", 4)], provisioning_class="class1", parameters={"p1": "v1"})
ACTIVE_CASES: dict[str, tuple[list[Obj], dict[str, Obj]]] = {
    "no provisioning requests": ([], {}),
    "two provisioning requests; 1 then 2": ([_PR1_FAILED, _PR2], {"check": _PR2}),
    "two provisioning requests; 2 then 1": ([_PR2, _PR1_FAILED], {"check": _PR2}),
}


@pytest.mark.parametrize("name", list(ACTIVE_CASES))
def test_active_or_last_pr_for_checks(name: str) -> None:
    requests, want = ACTIVE_CASES[name]
    got = p.active_or_last(_ACTIVE_WL, {"check": BASE_CONFIG}, requests)
    assert got == want


# == TestIsMissingInCache ===========================================================================
# Upstream asks the cache directly; ours answers it where it matters: an AlreadyExists on create is
# reported on the check only when the cache already holds the request.

MISSING_CASES = {
    "the cache has not observed the request yet": ([], True),
    "the request is already visible": ([request("wl-check1-1", owners=())], False),
}


@pytest.mark.parametrize("name", list(MISSING_CASES))
def test_is_missing_in_cache(name: str) -> None:
    requests, missing = MISSING_CASES[name]
    world = f.World(
        [BASE_WORKLOAD, BASE_CHECK, RETRY_CONFIG, *FLAVORS, *requests],
        fail_create={"provisioningrequests": k.Conflict(409, ALREADY_EXISTS)},
    )
    with pytest.raises(k.Conflict):
        world.controller.reconcile_workload(WL)
    assert (world.events.sent == []) is missing


# == TestUpdateCheckMessage =========================================================================

MESSAGE_CASES = {
    "sets a message on a check that has none": ("", "provisioned", "provisioned", True),
    "replaces an existing message": ("waiting for capacity", "provisioned", "provisioned", True),
    "clears an existing message when the new one is empty": (
        'Error creating ProvisioningRequest "wl-check1-1": already exists',
        "",
        "",
        True,
    ),
    "reports no change when the message is unchanged": ("provisioned", "provisioned", "provisioned", False),
    "reports no change when both messages are empty": ("", "", "", False),
}


@pytest.mark.parametrize("name", list(MESSAGE_CASES))
def test_update_check_message(name: str) -> None:
    message, new, want, changed = MESSAGE_CASES[name]
    state: dict[str, Any] = {"name": "check1", "message": message}
    assert p.update_check_message(state, new) is changed
    assert (state.get("message") or "") == want


# == admissioncheck_reconciler_test.go: TestReconcileAdmissionCheck =================================

AC_CASES: dict[str, tuple[Obj, list[Obj], Obj | None]] = {
    "unrelated check": (admission_check("check1", "other-controller"), [], None),
    "no parameters specified": (
        admission_check("check1"),
        [],
        {"status": "False", "reason": "BadParametersRef", "message": "missing parameters reference"},
    ),
    "bad ref group": (
        admission_check("check1", params=("bad.group", p.CONFIG_KIND, "config1")),
        [],
        {
            "status": "False",
            "reason": "BadParametersRef",
            "message": 'wrong group "bad.group", expecting "kueue.x-k8s.io": bad parameters reference',
        },
    ),
    "bad ref kind": (
        admission_check("check1", params=(c.GROUP, "BadKind", "config1")),
        [],
        {
            "status": "False",
            "reason": "BadParametersRef",
            "message": 'wrong kind "BadKind", expecting "ProvisioningRequestConfig": bad parameters reference',
        },
    ),
    "config missing": (
        admission_check("check1", params=(c.GROUP, p.CONFIG_KIND, "config1")),
        [],
        {
            "status": "False",
            "reason": "BadParametersRef",
            "message": 'provisioningrequestconfigs.kueue.x-k8s.io "config1" not found',
        },
    ),
    "config found": (
        admission_check("check1", params=(c.GROUP, p.CONFIG_KIND, "config1")),
        [config()],
        {"status": "True", "reason": "Active", "message": "The admission check is active"},
    ),
}


@pytest.mark.parametrize("name", list(AC_CASES))
def test_reconcile_admission_check(name: str) -> None:
    ac, configs, want = AC_CASES[name]
    world = f.World([ac, *configs])
    world.controller.reconcile_check("check1")
    got = world.get("admissionchecks", "check1", c.V1BETA2, None)
    assert got is not None
    active = next((x for x in (got.get("status") or {}).get("conditions") or () if x["type"] == "Active"), None)
    if want is None:
        assert active is None
    else:
        assert active is not None
        assert {key: v for key, v in active.items() if key != "lastTransitionTime"} == {
            "type": "Active",
            **want,
            "observedGeneration": 1,
        }


# == indexer_test.go: the lookups upstream does through field indexes ===============================


def _named(name: str, *, owners: Sequence[str] = (), checks: Sequence[str] = ()) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "default", "ownerReferences": [{"name": x} for x in owners]},
        "status": {"admissionChecks": [{"name": x} for x in checks]},
    }


INDEX_REQUEST_CASES: dict[str, tuple[list[Obj], list[str]]] = {
    "no owner": ([_named("name")], []),
    "single owner, single match": ([_named("name"), _named("name2", owners=["wl"])], ["name2"]),
    "multiple owners, multiple matches": (
        [_named("name"), _named("name2", owners=["wl"]), _named("name3", owners=["wl_2", "wl"])],
        ["name2", "name3"],
    ),
}


@pytest.mark.parametrize("name", list(INDEX_REQUEST_CASES))
def test_index_provisioning_requests(name: str) -> None:
    requests, want = INDEX_REQUEST_CASES[name]
    assert [r["metadata"]["name"] for r in requests if p.owned_by(r, "wl")] == want


INDEX_WORKLOAD_CASES: dict[str, tuple[list[Obj], list[str]]] = {
    "no checks": ([_named("name")], []),
    "single check, single match": ([_named("name"), _named("name2", checks=["check"])], ["name2"]),
    "multiple checks, multiple matches": (
        [_named("name"), _named("name2", checks=["check"]), _named("name3", checks=["check2", "check"])],
        ["name2", "name3"],
    ),
}


@pytest.mark.parametrize("name", list(INDEX_WORKLOAD_CASES))
def test_index_workload(name: str) -> None:
    workloads, want = INDEX_WORKLOAD_CASES[name]
    assert [w["metadata"]["name"] for w in workloads if p.has_check(w, "check")] == want


INDEX_CHECK_CASES: dict[str, tuple[list[Obj], str, list[str]]] = {
    "different controller": (
        [admission_check("check1", "other", params=(c.GROUP, p.CONFIG_KIND, "config1"))],
        "config1",
        [],
    ),
    "bad ref group": ([admission_check("check1", params=("core", p.CONFIG_KIND, "config1"))], "config1", []),
    "bad ref kind": ([admission_check("check1", params=(c.GROUP, "kind", "config1"))], "config1", []),
    "empty name": ([admission_check("check1", params=(c.GROUP, p.CONFIG_KIND, ""))], "", []),
    "match": ([admission_check("check1", params=(c.GROUP, p.CONFIG_KIND, "config1"))], "config1", ["check1"]),
    "multiple checks, partial match": (
        [
            admission_check("check1", params=(c.GROUP, p.CONFIG_KIND, "config1")),
            admission_check("check2", params=(c.GROUP, p.CONFIG_KIND, "config1")),
            admission_check("check3", params=(c.GROUP, p.CONFIG_KIND, "config2")),
        ],
        "config1",
        ["check1", "check2"],
    ),
}


@pytest.mark.parametrize("name", list(INDEX_CHECK_CASES))
def test_index_admission_checks(name: str) -> None:
    checks, cfg, want = INDEX_CHECK_CASES[name]
    assert [ac["metadata"]["name"] for ac in checks if p.uses_config(ac, cfg)] == want
