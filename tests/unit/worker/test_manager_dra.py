"""The worker counts DRA devices from the ResourceClaimTemplates it watches, and the workload
controller marks a Workload it cannot count Inadmissible (issue 29; upstream `pkg/dra/claims.go`
and `Reconcile` in `pkg/controller/core/workload_controller.go`)."""

from __future__ import annotations

import copy
import threading
from typing import Any

from tests.builders import T0
from tests.unit.core.test_dra import EXT, GPU, device_class, extended_workload, request, template, workload
from tests.unit.fake_kube import FakeKube
from webhook import config
from webhook.config import Configuration
from webhook.core.workload import WorkloadKey
from webhook.worker import events
from webhook.worker.manager import CLAIM_TEMPLATES, DEVICE_CLASSES, Manager, dra_settings
from webhook.worker.reconcilers import workload as w
from webhook.worker.store import Store

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
MAPPED = config.parse(
    V2 + "resources:\n  deviceClassMappings:\n  - {name: example.com/gpu, deviceClassNames: [gpu.example.com]}\n"
)
PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl"


def manager(cfg: Configuration = MAPPED) -> Manager:
    return Manager(FakeKube(), cfg, identity="test", stop=threading.Event())


def requests(mgr: Manager, key: str) -> dict[str, int]:
    return dict(mgr.core.queues.pending[WorkloadKey(key)].pod_sets[0].requests)


def test_templates_are_watched_only_with_the_integration_on():
    assert CLAIM_TEMPLATES.path == "/apis/resource.k8s.io/v1/resourceclaimtemplates"
    assert {CLAIM_TEMPLATES, DEVICE_CLASSES} <= set(manager().resources)
    off = config.parse(
        V2 + "featureGates: {KueueDRAIntegration: false, KueueDRAIntegrationExtendedResource: false, "
        "KueueDRAIntegrationPartitionableDevices: false}\n"
    )
    assert not {CLAIM_TEMPLATES, DEVICE_CLASSES} & set(manager(off).resources)
    no_extended = config.parse(V2 + "featureGates: {KueueDRAIntegrationExtendedResource: false}\n")
    assert DEVICE_CLASSES not in manager(no_extended).resources


def test_a_device_class_backing_an_extended_resource_re_charges_the_workloads_asking_for_it():
    mgr = manager()
    wl = extended_workload(1, **{EXT: "2"})
    mgr.store.put("workloads", wl)
    mgr._feed("workloads", "ADDED", wl, T0)
    assert requests(mgr, "ns/ext") == {"cpu": 1000, EXT: 2}

    dc = device_class("gpu.example.com", EXT)
    mgr._feed("deviceclasses", "ADDED", dc, T0)
    assert requests(mgr, "ns/ext") == {"cpu": 1000, GPU: 2}

    mgr._feed("deviceclasses", "DELETED", dc, T0)
    assert requests(mgr, "ns/ext") == {"cpu": 1000, EXT: 2}


def test_a_template_arriving_after_its_workload_queues_it_with_its_devices():
    mgr = manager()
    wl = workload("wl", 2)
    mgr.store.put("workloads", wl)
    mgr._feed("workloads", "ADDED", wl, T0)
    assert WorkloadKey("ns/wl") not in mgr.core.queues.pending, "not counted yet: kept out of the queues"

    tmpl = template("gpus", request(count=2))
    mgr.store.put("resourceclaimtemplates", tmpl)
    mgr._feed("resourceclaimtemplates", "ADDED", tmpl, T0)
    assert requests(mgr, "ns/wl") == {"cpu": 1000, GPU: 2}

    changed = template("gpus", request(count=3))
    mgr._feed("resourceclaimtemplates", "MODIFIED", changed, T0)
    assert requests(mgr, "ns/wl") == {"cpu": 1000, GPU: 3}


class StatusKube(FakeKube):
    """Writes to the status subresource land on the object."""

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return super().request(method, path.removesuffix("/status"), **kwargs)


def reconciled(obj: dict[str, Any], *templates: dict[str, Any], cfg: Configuration = MAPPED) -> list[tuple[str, ...]]:
    kube = StatusKube({PATH: obj})
    store = Store()
    store.put("workloads", copy.deepcopy(obj))
    for t in templates:
        store.put("resourceclaimtemplates", t)
    rec = w.WorkloadReconciler(
        kube,
        store,
        cfg,
        events.Recorder(None, instance="t", stop=threading.Event()),
        stop=threading.Event(),
        on_evicted=lambda *_: None,
        dra_settings=dra_settings(cfg),
    )
    rec.reconcile("ns/wl")
    conds = kube.objects[PATH]["status"].get("conditions") or ()
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in conds]


def test_an_unmapped_device_class_is_written_inadmissible():
    tmpl = template("gpus", request(deviceClassName="fpga.example.com"))
    message = (
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "
        '"DeviceClass fpga.example.com is not mapped in DRA configuration for podset main"'
    )
    assert reconciled(workload(), tmpl) == [
        ("QuotaReserved", "False", "Inadmissible", message),
        ("Requeued", "False", "Inadmissible", message),
    ]


def test_a_countable_workload_gets_no_condition_from_the_controller():
    assert reconciled(workload(), template("gpus", request(count=1))) == []
