"""DRA devices in quota (`webhook/core/dra.py`; upstream `pkg/dra/claims.go` and the DRA steps of
`pkg/controller/core/workload_controller.go`, v0.19.2)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import T0, fq, make_core, make_cq, make_flavor, make_lq, make_wl
from webhook.api import quantity
from webhook.core import dra
from webhook.core.admission_checks import workload_step
from webhook.core.decisions import Admit
from webhook.core.pods_ready import StepKind
from webhook.core.workload import WorkloadKey

GPU = "example.com/gpu"
SETTINGS = dra.Settings(mapper=dra.DeviceClassMapper.from_mappings([(GPU, ["gpu.example.com", "gpu2.example.com"])]))
CLAIMS = "spec.podSets[0].template.spec.resourceClaims[0]"


def request(**exactly: Any) -> dict[str, Any]:
    return {"name": "r", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", **exactly}}


def template(name: str, *requests: dict[str, Any], ns: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": {"requests": list(requests)}}},
    }


def workload(name: str = "wl", count: int = 1, *claims: dict[str, Any], cpu: str = "1") -> dict[str, Any]:
    obj = make_wl(name).podset("main", count, cpu=cpu).obj()
    obj["spec"]["podSets"][0]["template"]["spec"]["resourceClaims"] = list(
        claims or ({"name": "gpu", "resourceClaimTemplateName": "gpus"},)
    )
    return obj


def lookup(*templates: dict[str, Any]) -> dra.TemplateLookup:
    by_key = {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in templates}
    return lambda ns, name: by_key.get((ns, name))


# -- counting ---------------------------------------------------------------------------------------


def test_device_requests_are_counted_per_pod_under_the_mapped_name():
    tmpl = template("gpus", request(count=2), request(deviceClassName="gpu2.example.com", count=1))
    out = dra.resolve(workload(), lookup(tmpl), SETTINGS)
    assert not out.inadmissible
    assert dict(out.requests["main"]) == {GPU: 3}


def test_a_request_without_device_class_costs_nothing():
    out = dra.resolve(workload(), lookup(template("gpus", request(deviceClassName="", count=5))), SETTINGS)
    assert not out.inadmissible and dict(out.requests) == {}


def test_a_workload_without_claims_is_left_alone():
    obj = make_wl("plain").request(cpu="1").obj()
    assert dra.resolve(obj, lookup(), SETTINGS) == dra.Outcome()


@pytest.mark.parametrize(
    ("req", "message"),
    [
        pytest.param(
            request(allocationMode="All"),
            f'{CLAIMS}.devices.requests[0].exactly.allocationMode: Invalid value: "All": '
            "ResourceClaimTemplate gpus: AllocationMode 'All' is not supported",
            id="allocation-mode-all",
        ),
        pytest.param(
            {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.example.com"}]},
            f'{CLAIMS}.devices.requests[0]: Invalid value: "null": '
            "ResourceClaimTemplate gpus: FirstAvailable device selection is not supported",
            id="first-available",
        ),
        pytest.param(
            request(adminAccess=True),
            f'{CLAIMS}.devices.requests[0].exactly.adminAccess: Invalid value: "null": '
            "ResourceClaimTemplate gpus: AdminAccess is not supported",
            id="admin-access",
        ),
        pytest.param(
            request(deviceClassName="fpga.example.com"),
            f'{CLAIMS}.resourceClaimTemplateName: Not found: "DeviceClass fpga.example.com is not mapped '
            'in DRA configuration for podset main"',
            id="unmapped-class",
        ),
    ],
)
def test_what_cannot_be_counted_is_refused_with_upstreams_message(req: dict[str, Any], message: str):
    out = dra.resolve(workload(), lookup(template("gpus", req)), SETTINGS)
    assert out.quota_message == message
    assert out.requeued_message == message
    assert dict(out.requests) == {}


def test_a_missing_template_is_refused():
    out = dra.resolve(workload(), lookup(), SETTINGS)
    assert out.quota_message == (
        f"{CLAIMS}: Internal error: failed to get claim spec for ResourceClaimTemplate gpus in podset main: "
        'resourceclaimtemplates.resource.k8s.io "gpus" not found'
    )


def test_a_resource_claim_is_refused_before_any_template_is_read():
    obj = workload("wl", 1, {"name": "shared", "resourceClaimName": "claim"})
    out = dra.resolve(obj, lookup(), SETTINGS)
    assert out.quota_message == "KueueDRAIntegration feature does not support use of resource claims"
    assert out.requeued_message == "DRA resource claims not supported"


@pytest.mark.parametrize("reject", [True, False])
def test_with_the_integration_off_claims_are_refused_or_uncounted(reject: bool):
    off = dra.Settings(enabled=False, reject_when_disabled=reject)
    out = dra.resolve(workload(), lookup(template("gpus", request())), off)
    expected = "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled" if reject else ""
    assert out.quota_message == expected
    assert dict(out.requests) == {}


def test_cel_selectors_are_counted_and_reported_unchecked():
    req = request(count=1, selectors=[{"cel": {"expression": 'device.driver == "gpu.example.com"'}}])
    out = dra.resolve(workload(), lookup(template("gpus", req)), SETTINGS)
    assert dict(out.requests["main"]) == {GPU: 1}
    assert out.unchecked_selectors == (f"{CLAIMS}.devices.requests[0]",)


def test_the_first_mapping_of_a_device_class_wins():
    mapper = dra.DeviceClassMapper.from_mappings([("a", ["x"]), ("b", ["x", "y"])])
    assert dict(mapper.logical) == {"x": "a", "y": "b"}


# -- the Inadmissible conditions --------------------------------------------------------------------


@pytest.mark.parametrize(("granular", "reason"), [(False, "Inadmissible"), (True, "Misconfigured")])
def test_a_refusal_sets_quota_reserved_and_requeued_false(granular: bool, reason: str):
    out = dra.resolve(workload(), lookup(template("gpus", request(allocationMode="All"))), SETTINGS)
    step = workload_step(workload(), None, None, T0, devices=out, granular_reasons=granular)
    assert step.kind == StepKind.UPDATE
    assert [(c.type, c.status, c.reason, c.message) for c in step.conditions] == [
        ("QuotaReserved", "False", reason, out.quota_message),
        ("Requeued", "False", "Inadmissible", out.quota_message),
    ]


def test_a_refusal_already_written_is_not_written_again():
    out = dra.resolve(workload(), lookup(), SETTINGS)
    obj = workload()
    obj["status"]["conditions"] = [
        {"type": "QuotaReserved", "status": "False", "reason": "Inadmissible", "message": out.quota_message},
        {"type": "Requeued", "status": "False", "reason": "Inadmissible", "message": out.quota_message},
    ]
    assert workload_step(obj, None, None, T0, devices=out).kind == StepKind.NONE


def test_a_workload_holding_quota_is_not_refused():
    obj = workload()
    obj["status"]["conditions"] = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}]
    out = dra.resolve(obj, lookup(), SETTINGS)
    step = workload_step(obj, None, None, T0, devices=out)
    assert step.kind == StepKind.ADMITTED, "the ordinary next step, not the refusal"


# -- through the admission core ---------------------------------------------------------------------


def core(*objs: dict[str, Any]) -> Any:
    cq = make_cq("cq").group(fq("default", cpu=("100", None, None), **{GPU: ("4", None, None)})).obj()
    c = make_core(make_flavor("default").obj(), cq, make_lq("lq", "ns", "cq"), dra_settings=SETTINGS)
    for t in objs:
        c.on_claim_template(t)
    return c


def admitted(c: Any) -> dict[str, dict[str, Any]]:
    return {
        str(d.key): d.admission["podSetAssignments"][0]["resourceUsage"]
        for d in c.schedule(T0).decisions
        if isinstance(d, Admit)
    }


def test_devices_are_charged_against_the_cluster_queue():
    c = core(template("gpus", request(count=2)))
    c.on_workload(workload("fits", 2), T0)
    assert admitted(c) == {"ns/fits": {"cpu": "2", GPU: "4"}}


def test_devices_beyond_quota_are_not_admitted():
    c = core(template("gpus", request(count=2)))
    c.on_workload(workload("too-big", 3), T0)
    assert admitted(c) == {}


def test_an_uncountable_workload_waits_outside_the_queues_until_its_template_is_fixed():
    c = core(template("gpus", request(allocationMode="All")))
    obj = workload("wl", 1)
    info = c.on_workload(obj, T0)
    assert info.dra_error.endswith("AllocationMode 'All' is not supported")
    assert WorkloadKey("ns/wl") not in c.queues.pending
    assert admitted(c) == {}

    # The worker wrote the refusal; the template is then fixed and the Workload fed again.
    message = info.dra_error
    obj["status"]["conditions"] = [
        {"type": "QuotaReserved", "status": "False", "reason": "Inadmissible", "message": message},
        {"type": "Requeued", "status": "False", "reason": "Inadmissible", "message": message},
    ]
    c.on_claim_template(template("gpus", request(count=1)))
    c.on_workload(obj, T0)
    assert admitted(c) == {"ns/wl": {"cpu": "1", GPU: "1"}}


# -- extended resources a DeviceClass backs (`pkg/dra/extended_resources.go`) -----------------------

EXT = "example.com/gpu-ext"


def device_class(name: str, extended: str, created: str = "2025-01-01T00:00:00Z") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"extendedResourceName": extended},
    }


def extended_workload(count: int = 1, **requests: str) -> dict[str, Any]:
    obj = make_wl("ext").podset("main", count, cpu="1").obj()
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"].update(requests)
    return obj


def test_the_class_created_last_backs_an_extended_resource_and_ties_go_to_the_first_name():
    classes = [
        device_class("b.example.com", EXT, "2025-01-01T00:00:01Z"),
        device_class("a.example.com", EXT, "2025-01-01T00:00:01Z"),
        device_class("old.example.com", EXT, "2025-01-01T00:00:00Z"),
        device_class("other.example.com", "example.com/other"),
    ]
    assert dict(dra.extended_backing(classes)) == {EXT: "a.example.com", "example.com/other": "other.example.com"}


def test_an_extended_resource_of_a_mapped_class_is_charged_under_the_mapped_name():
    backing = dra.extended_backing([device_class("gpu.example.com", EXT)])
    out = dra.resolve(extended_workload(**{EXT: "2"}), lookup(), SETTINGS, backing)
    assert dict(out.requests["main"]) == {GPU: 2}
    assert out.replaced == {"main": frozenset({EXT})}


def test_an_extended_resource_of_an_unmapped_class_keeps_its_name():
    backing = dra.extended_backing([device_class("fpga.example.com", EXT)])
    out = dra.resolve(extended_workload(**{EXT: "1"}), lookup(), SETTINGS, backing)
    assert dict(out.requests["main"]) == {EXT: 1}


def test_an_extended_resource_nobody_backs_is_an_ordinary_request():
    assert dra.resolve(extended_workload(**{EXT: "1"}), lookup(), SETTINGS, {}) == dra.Outcome()


def test_a_fractional_device_request_is_refused():
    backing = dra.extended_backing([device_class("gpu.example.com", EXT)])
    out = dra.resolve(extended_workload(**{EXT: "500m"}), lookup(), SETTINGS, backing)
    assert out.quota_message == (
        f'spec.podSets[0].template.spec.containers[0].resources.requests.{EXT}: Invalid value: "500m": '
        "extended resource quantity must be an integer"
    )


def test_without_the_gate_extended_resources_are_left_alone():
    backing = dra.extended_backing([device_class("gpu.example.com", EXT)])
    off = dra.Settings(mapper=SETTINGS.mapper, extended_resources=False)
    assert dra.resolve(extended_workload(**{EXT: "2"}), lookup(), off, backing) == dra.Outcome()


def test_the_core_charges_backed_extended_resources_under_the_mapped_name():
    c = core()
    c.on_device_class(device_class("gpu.example.com", EXT))
    c.on_workload(extended_workload(2, **{EXT: "1"}), T0)
    assert admitted(c) == {"ns/ext": {"cpu": "2", GPU: "2"}}


@pytest.mark.parametrize(
    ("name", "extended"),
    [("example.com/gpu", True), ("cpu", False), ("kubernetes.io/x", False), ("requests.example.com/x", False)],
)
def test_only_extended_resource_names_can_be_devices(name: str, extended: bool):
    assert quantity.is_extended_resource_name(name) is extended
