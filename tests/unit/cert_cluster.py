"""The cluster the cert manager works on, in memory: the webhook configurations and CRDs it injects
its CA into (at their API paths, without a caBundle yet), and a `CertManager` against a `FakeKube`
on a fixed clock. Shared by test_certmanager and install/test_rbac (which records its API calls)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.unit.fake_kube import FakeKube
from webhook import certmanager as cm
from webhook.admission.registration import webhook_configurations
from webhook.api.schema import crds
from webhook.config import Configuration

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kueue-mutating-webhook-configuration"
VALIDATING = (
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kueue-validating-webhook-configuration"
)
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def cluster_objects() -> dict[str, dict[str, Any]]:
    objects: dict[str, dict[str, Any]] = {}
    for cfg in webhook_configurations("", service=("kueue-webhook-service", "kueue-system")):
        for hook in cfg["webhooks"]:
            del hook["clientConfig"]["caBundle"]
        objects[MUTATING if cfg["kind"].startswith("Mutating") else VALIDATING] = cfg
    for crd in crds():
        objects[f"{CRDS}/{crd['metadata']['name']}"] = crd
    return objects


def config() -> Configuration:
    return Configuration(namespace="kueue-system")


def manager(kube: FakeKube, cert_dir: Path, now: datetime = NOW) -> cm.CertManager:
    return cm.CertManager(kube, cm.targets(config(), cert_dir), clock=lambda: now)
