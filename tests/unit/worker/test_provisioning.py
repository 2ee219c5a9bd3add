"""The provisioning-request admission check as a user sees it: the ProvisioningRequest and PodTemplates
made for a Workload, the check's state and message, retries, cleanup and the AdmissionCheck's Active
condition (`reconcilers.provisioning`, `admissionchecks.provisioning`)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.worker import provisioning_fixtures as f
from tests.unit.worker.provisioning_fixtures import (
    NS,
    Obj,
    admission_check,
    assignment,
    check,
    condition,
    config,
    pod_set,
    workload,
)
from webhook import kube as k
from webhook.api import constants as c
from webhook.worker.admissionchecks import provisioning as p
from webhook.worker.store import object_key
from webhook.worker.workqueue import Retry

WL = f"{NS}/wl"
CHECK = admission_check("prov", params=(c.GROUP, p.CONFIG_KIND, "cfg"))
FLAVOR = f.flavor("gpu-flavor", {"cloud.example.com/accelerator": "a100"})


def gpu_workload(**kwargs: Any) -> Obj:
    return workload(
        pod_sets=[pod_set("main", 3, requests={"cpu": "1", "example.com/gpu": "1"})],
        assignments=[assignment("main", 3, {"cpu": "gpu-flavor", "example.com/gpu": "gpu-flavor"})],
        checks=[check("prov")],
        **kwargs,
    )


def check_state(world: f.World, name: str = "prov") -> Obj:
    return next(s for s in world.workload()["status"]["admissionChecks"] if s["name"] == name)


def set_request_status(world: f.World, name: str, *conds: Obj, details: dict[str, str] | None = None) -> None:
    """The autoscaler's verdict on the request, as the informer would deliver it."""
    path = k.object_path(p.AUTOSCALING_V1, "provisioningrequests", NS, name)
    req = copy.deepcopy(world.kube.objects[path])
    req["status"] = {"conditions": list(conds), **({"provisioningClassDetails": details} if details else {})}
    world.kube.put(path, req)
    world.store.put("provisioningrequests", copy.deepcopy(world.kube.objects[path]))


def test_a_reserved_workload_gets_a_request_for_its_pods_on_its_flavors() -> None:
    cfg = config("cfg", provisioning_class="queued-provisioning.gke.io", parameters={"maxRunDurationSeconds": "600"})
    wl = gpu_workload(annotations={"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "900"})
    world = f.World([wl, CHECK, cfg, FLAVOR])
    world.controller.reconcile_workload(WL)

    req = world.request("wl-prov-1")
    assert req is not None
    assert req["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    assert req["metadata"]["ownerReferences"] == [f.controller_ref("Workload", "wl")]
    # The Workload's provreq annotations override the config's parameters.
    assert req["spec"] == {
        "provisioningClassName": "queued-provisioning.gke.io",
        "parameters": {"maxRunDurationSeconds": "900"},
        "podSets": [{"podTemplateRef": {"name": "ppt-wl-prov-1-main"}, "count": 3}],
    }
    tmpl = world.template("ppt-wl-prov-1-main")
    assert tmpl is not None
    assert tmpl["metadata"]["ownerReferences"] == [f.controller_ref("ProvisioningRequest", "wl-prov-1")]
    assert tmpl["template"]["spec"]["nodeSelector"] == {"cloud.example.com/accelerator": "a100"}
    assert world.events.sent == [
        (WL, "Normal", "ProvisioningRequestCreated", 'Created ProvisioningRequest: "wl-prov-1"')
    ]
    assert check_state(world)["state"] == c.CHECK_STATE_PENDING


def test_the_check_follows_the_request_until_provisioned() -> None:
    cfg = config("cfg", provisioning_class="cls", node_selector=[("cloud.example.com/nodepool", "pool")])
    world = f.World([gpu_workload(), CHECK, cfg, FLAVOR])
    world.controller.reconcile_workload(WL)

    eta = "Provisioning Request wasn't provisioned. ETA: 2026-01-01T01:00:00Z"
    set_request_status(world, "wl-prov-1", condition(p.ACCEPTED), condition(p.PROVISIONED, "False", message=eta))
    world.controller.reconcile_workload(WL)
    assert (check_state(world)["state"], check_state(world)["message"]) == (c.CHECK_STATE_PENDING, eta)

    set_request_status(
        world,
        "wl-prov-1",
        condition(p.ACCEPTED),
        condition(p.PROVISIONED, message="Provisioned"),
        details={"pool": "p-7"},
    )
    world.controller.reconcile_workload(WL)
    state = check_state(world)
    assert (state["state"], state["message"]) == (c.CHECK_STATE_READY, "Provisioned")
    assert state["podSetUpdates"] == [
        {
            "name": "main",
            "annotations": {p.REQUEST_POD_ANNOTATION: "wl-prov-1", p.CLASS_POD_ANNOTATION: "cls"},
            "nodeSelector": {"cloud.example.com/nodepool": "p-7"},
        }
    ]
    assert world.events.sent[-1] == (
        WL,
        "Normal",
        "AdmissionCheckUpdated",
        "Admission check prov updated state from Pending to Ready with message: Provisioned",
    )


def test_a_failed_request_is_retried_with_a_new_attempt_and_backoff() -> None:
    world = f.World([gpu_workload(), CHECK, config("cfg"), FLAVOR])
    world.controller.reconcile_workload(WL)
    set_request_status(world, "wl-prov-1", condition(p.FAILED, message="out of stock"))
    world.controller.reconcile_workload(WL)
    state = check_state(world)
    assert (state["state"], state["message"], state["requeueAfterSeconds"]) == (
        c.CHECK_STATE_RETRY,
        "Retrying after failure: out of stock",
        60,
    )

    # Core Kueue requeues the Workload: the check is Pending again, with the retry counted.
    wl = world.workload()
    wl["status"]["admissionChecks"] = [check("prov", retryCount=1, message=state["message"])]
    world.kube.put(f.path_of(wl), wl)
    world.store.put("workloads", copy.deepcopy(world.kube.objects[f.path_of(wl)]))
    world.controller.reconcile_workload(WL)
    assert world.request("wl-prov-2") is not None
    assert world.request("wl-prov-1") is not None  # still the last one until the next attempt is seen
    world.controller.reconcile_workload(WL)
    assert world.request("wl-prov-1") is None
    assert check_state(world)["state"] == c.CHECK_STATE_PENDING
    assert check_state(world).get("message", "") == ""  # the new request has no conditions yet


def test_the_last_allowed_failure_rejects_the_check() -> None:
    world = f.World([gpu_workload(), CHECK, config("cfg", retry_limit=0), FLAVOR])
    world.controller.reconcile_workload(WL)
    set_request_status(world, "wl-prov-1", condition(p.FAILED, message="out of stock"))
    world.controller.reconcile_workload(WL)
    assert (check_state(world)["state"], check_state(world)["message"]) == (c.CHECK_STATE_REJECTED, "out of stock")


@pytest.mark.parametrize(
    ("retry_count", "base", "cap", "want"),
    [
        (0, 60, 1800, 60),
        (1, 60, 1800, 120),
        (4, 60, 1800, 960),
        (5, 60, 1800, 1800),
        (9, 60, 1800, 1800),
        (0, 100, 50, 100),
    ],
)
def test_retry_backoff_doubles_up_to_the_maximum(retry_count: int, base: int, cap: int, want: int) -> None:
    assert p.backoff_seconds(retry_count, base, cap) == want


def test_requests_go_when_the_workload_finishes() -> None:
    world = f.World([gpu_workload(), CHECK, config("cfg"), FLAVOR])
    world.controller.reconcile_workload(WL)
    assert world.request("wl-prov-1") is not None
    wl = f.with_conditions(world.workload(), condition(c.WorkloadCondition.FINISHED))
    world.kube.put(f.path_of(wl), wl)
    world.store.put("workloads", copy.deepcopy(world.kube.objects[f.path_of(wl)]))
    world.controller.reconcile_workload(WL)
    assert world.request("wl-prov-1") is None


def test_a_missing_flavor_is_reported_on_the_check() -> None:
    world = f.World([gpu_workload(), CHECK, config("cfg")])
    with pytest.raises(Exception, match="not found"):
        world.controller.reconcile_workload(WL)
    note = 'Error creating PodTemplate "ppt-wl-prov-1-main": resourceflavors.kueue.x-k8s.io "gpu-flavor" not found'
    assert check_state(world)["message"] == note
    assert world.events.sent == [(WL, "Warning", "FailedCreate", note)]
    assert world.request("wl-prov-1") is None


def test_a_topology_assignment_gates_the_template() -> None:
    wl = gpu_workload()
    wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {"levels": ["h"], "slices": []}
    world = f.World([wl, CHECK, config("cfg"), FLAVOR])
    world.controller.reconcile_workload(WL)
    tmpl = world.template("ppt-wl-prov-1-main")
    assert tmpl is not None
    assert tmpl["template"]["spec"]["schedulingGates"] == [{"name": c.TOPOLOGY_GATE}]
    assert tmpl["template"]["metadata"]["annotations"] == {c.PODSET_UNCONSTRAINED_TOPOLOGY: "true"}


def test_long_names_are_cut_with_a_hash() -> None:
    name = p.request_name("w" * 250, "check", 1)
    assert len(name) == 253
    assert name.startswith("w" * 247 + "-") and name != p.request_name("w" * 250, "check", 2)
    wl_name = "w" * 250
    assert p.attempt_of({"metadata": {"name": p.request_name("wl", "check", 12)}}, "wl", "check") == 12
    assert p.attempt_of({"metadata": {"name": name}}, wl_name, "check") == 1  # no readable attempt: 1


def test_nothing_happens_until_the_provisioning_request_api_is_served() -> None:
    """As upstream, which sets the controller up only where the API is served: the check does not
    become Active and no Workload is touched; ours starts once a cluster-autoscaler installs the CRD."""
    world = f.World([gpu_workload(), CHECK, config("cfg"), FLAVOR], probe_s=0.0)
    world.kube.unserved = True
    with pytest.raises(Retry):
        world.controller.reconcile_check("prov")
    world.controller.reconcile_workload(WL)
    assert active_status(world) == ""
    assert world.request("wl-prov-1") is None
    assert check_state(world) == check("prov")

    world.kube.unserved = False
    world.controller.reconcile_check("prov")
    assert active_status(world) == "True"
    world.controller.reconcile_workload(WL)
    assert world.request("wl-prov-1") is not None


def wait_for(what: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def active_status(world: f.World) -> str:
    ac = world.get("admissionchecks", "prov", c.V1BETA2, None) or {}
    return next((x["status"] for x in (ac.get("status") or {}).get("conditions") or () if x["type"] == "Active"), "")


def test_events_drive_both_reconcilers() -> None:
    """A config appearing activates the check; the autoscaler's status on a request moves its Workload."""
    world = f.World([gpu_workload(), CHECK, FLAVOR])
    ctl = world.controller
    ctl.start()
    try:
        ctl.on_event("admissionchecks", "ADDED", CHECK, None)
        wait_for(lambda: active_status(world) == "False")

        cfg = config("cfg")
        world.kube.put(f.path_of(cfg), cfg)
        world.store.put("provisioningrequestconfigs", copy.deepcopy(cfg))
        ctl.on_event("provisioningrequestconfigs", "ADDED", cfg, None)
        wait_for(lambda: active_status(world) == "True")
        wait_for(lambda: world.request("wl-prov-1") is not None)

        set_request_status(world, "wl-prov-1", condition(p.PROVISIONED))
        req = world.store.get("provisioningrequests", f"{NS}/wl-prov-1")
        assert req is not None
        ctl.on_event("provisioningrequests", "MODIFIED", req, None)
        wait_for(lambda: check_state(world)["state"] == c.CHECK_STATE_READY)
        assert object_key(world.workload()) == WL
    finally:
        world.stop.set()
