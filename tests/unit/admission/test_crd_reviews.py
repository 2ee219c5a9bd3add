"""Every Kueue-CRD webhook table case again, as a real AdmissionReview through the ASGI app.

The per-kind tests call the handlers directly; these prove the same messages reach the API
server from the paths it calls (/validate-kueue-x-k8s-io-v1beta2-*), as kubectl would show them.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhook.admission.app import create_app
from webhook.admission.context import StaticLookups
from webhook.config import Configuration

from . import test_cluster_queue, test_cohort, test_resource_flavor, test_workload
from .reviews import Driver


def _driver(gates: dict[str, bool]) -> Driver:
    return Driver(create_app(Configuration(feature_gates=gates), StaticLookups()))


def _cases() -> list[Any]:
    out = []
    for module, kind in ((test_cluster_queue, "ClusterQueue"), (test_workload, "Workload")):
        for case in module.CREATE_CASES:
            obj, gates, want = case.values
            out.append(pytest.param(kind, None, obj, gates, want, id=f"{kind} create: {case.id}"))
        for case in module.UPDATE_CASES:
            old, new, gates, want = case.values
            out.append(pytest.param(kind, old, new, gates, want, id=f"{kind} update: {case.id}"))
    for module, kind in ((test_cohort, "Cohort"), (test_resource_flavor, "ResourceFlavor")):
        for case in module.CASES:
            obj, want = case.values
            out.append(pytest.param(kind, None, obj, {}, want, id=f"{kind} create: {case.id}"))
    return out


@pytest.mark.parametrize(("kind", "old", "obj", "gates", "want"), _cases())
def test_crd_validation_through_the_app(
    kind: str, old: Any, obj: dict[str, Any], gates: dict[str, bool], want: str
) -> None:
    path = f"/validate-kueue-x-k8s-io-v1beta2-{kind.lower()}"
    message = _driver(gates).denial(path, obj, old=old, kind=kind)
    assert (message or "") == want


@pytest.mark.parametrize("kind", ["ClusterQueue", "ResourceFlavor"])
def test_crd_defaulting_adds_the_finalizer(kind: str) -> None:
    path = f"/mutate-kueue-x-k8s-io-v1beta2-{kind.lower()}"
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": "x"}, "spec": {}}
    out = _driver({}).mutate(path, obj, kind=kind)
    assert out["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
