"""The webhook's cluster lookups: readiness waits for every cache and for the server's own identity."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import pytest

from tests.unit.fake_kube import FakeKube
from webhook import kube as k
from webhook.admission.lookups import ClusterLookups


def _eventually(probe: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return True
        time.sleep(0.01)
    return False


class _FlakyReviews(FakeKube):
    """A server whose first SelfSubjectReviews fail (an API server still starting)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        if body.get("kind") == "SelfSubjectReview" and self.failures > 0:
            self.failures -= 1
            raise k.KubeError(503, "the server is currently unable to handle the request")
        return super().create(path, body, timeout=timeout)


def test_ready_once_every_cache_listed_and_identity_known() -> None:
    kube = FakeKube()
    kube.identity = "system:serviceaccount:kueue-system:kueue-controller-manager"
    lookups = ClusterLookups(kube)  # type: ignore[arg-type]
    lookups.start()
    try:
        assert _eventually(lookups.synced)
        assert lookups.own_identity() == kube.identity
    finally:
        lookups.stop()
        kube.stop.set()


def test_a_failing_identity_review_keeps_it_unready_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    kube = _FlakyReviews(failures=1)
    lookups = ClusterLookups(kube)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="webhook.admission.lookups"):
        lookups.start()
        try:
            assert _eventually(lambda: any("SelfSubjectReview failed" in r.getMessage() for r in caplog.records))
            assert not lookups.synced()
            assert _eventually(lookups.synced, timeout=6.0)  # asked again after 2 s
        finally:
            lookups.stop()
            kube.stop.set()
