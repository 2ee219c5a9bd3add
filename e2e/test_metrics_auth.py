"""The worker's /metrics end to end: HTTPS, and only for tokens the API server vouches for and RBAC
lets `get /metrics` (kueue-metrics-reader), as upstream's manager serves it."""

from __future__ import annotations

import http.client
import json
import urllib.request

import pytest

from e2e.conftest import Kubectl, local_stack
from e2e.helpers import wait_for
from webhook.install.rbac import METRICS_READER, metrics_reader_role


@pytest.mark.local_stack
def test_metrics_need_a_token_bound_to_the_metrics_reader(kubectl: Kubectl, namespace: str) -> None:
    stack = local_stack(kubectl)
    kubectl.apply(json.dumps(metrics_reader_role()))
    kubectl("create", "serviceaccount", "scraper", "-n", namespace)
    kubectl("create", "serviceaccount", "stranger", "-n", namespace)
    binding = f"{namespace}-scraper"
    kubectl(
        "create",
        "clusterrolebinding",
        binding,
        f"--clusterrole={METRICS_READER}",
        f"--serviceaccount={namespace}:scraper",
    )
    try:
        reader = kubectl("create", "token", "scraper", "-n", namespace).stdout.strip()
        stranger = kubectl("create", "token", "stranger", "-n", namespace).stdout.strip()
        # The API server's authorizer sees the new binding through its own watch, a moment after the
        # create; a denial it answered meanwhile would stay in the worker's cache for 30 s.
        wait_for(
            "the binding to reach the authorizer",
            lambda: (
                kubectl(
                    "auth", "can-i", "get", "/metrics", f"--as=system:serviceaccount:{namespace}:scraper", check=False
                ).stdout.strip()
                == "yes"
            ),
        )

        status, body = stack.scrape_metrics(reader)
        assert status == 200, body
        # Families without series are left out (as Go's registry does): build_info is the one every
        # process holds from the start, whether or not anything was admitted yet.
        assert "# TYPE kueue_build_info gauge" in body
        assert "kueue_build_info{" in body

        assert stack.scrape_metrics(stranger) == (
            403,
            f"Authorization denied for user system:serviceaccount:{namespace}:stranger\n",
        )
        assert stack.scrape_metrics(None) == (401, "Unauthorized\n")
        assert stack.scrape_metrics("not-a-token") == (401, "Unauthorized\n")
        assert stack.scrape_metrics(reader)[0] == 200  # the refusals left the reader's answer alone

        # No plain-HTTP answer on the metrics port.
        with pytest.raises((OSError, http.client.HTTPException)):
            urllib.request.urlopen(stack.metrics_url.replace("https://", "http://"), timeout=5)
    finally:
        kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found", check=False)


@pytest.mark.local_stack
def test_the_suite_scrapes_as_an_authorized_reader(kubectl: Kubectl) -> None:
    text = local_stack(kubectl).metrics_text()
    assert "# TYPE kueue_build_info gauge" in text
