"""`podset.template_patch`: the merge patch that gives a pod template a PodSetInfo's fields (what
`Merge` writes and `RestorePodSpec` puts back), for templates a merge patch reaches key by key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from webhook.worker.jobframework import podset

TOL = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
GATE = {"name": "kueue.x-k8s.io/topology"}


def applied(target: Mapping[str, Any], patch: Mapping[str, Any] | None) -> dict[str, Any]:
    """RFC 7386, as the API server applies a merge patch."""
    out = dict(target)
    for key, value in (patch or {}).items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping):
            out[key] = applied(out.get(key) if isinstance(out.get(key), Mapping) else {}, value)
        else:
            out[key] = value
    return out


TEMPLATE = {
    "metadata": {"labels": {"app": "a", "kueue.x-k8s.io/podset": "main"}, "annotations": {"x": "1"}},
    "spec": {"nodeSelector": {"pool": "a", "disk": "ssd"}, "tolerations": [TOL], "containers": [{"name": "c"}]},
}


@pytest.mark.parametrize(
    ("info", "want_patch"),
    [
        pytest.param(podset.PodSetInfo.of_template(TEMPLATE), None, id="nothing to change"),
        pytest.param(
            podset.PodSetInfo(labels={"app": "a"}, annotations={"x": "1"}, node_selector={"disk": "ssd"}),
            {
                "metadata": {"labels": {"kueue.x-k8s.io/podset": None}},
                "spec": {"nodeSelector": {"pool": None}, "tolerations": None},
            },
            id="keys that must go are sent as null",
        ),
        pytest.param(
            podset.PodSetInfo(labels={"app": "b"}, annotations={"x": "1"}, tolerations=[TOL], scheduling_gates=[GATE]),
            {
                "metadata": {"labels": {"app": "b", "kueue.x-k8s.io/podset": None}},
                "spec": {"nodeSelector": None, "schedulingGates": [GATE]},
            },
            id="an emptied map goes whole, lists are replaced",
        ),
    ],
)
def test_template_patch(info: podset.PodSetInfo, want_patch: dict[str, Any] | None) -> None:
    patch = podset.template_patch(TEMPLATE, info)
    assert patch == want_patch
    after = applied(TEMPLATE, patch)
    assert podset.PodSetInfo.of_template(after) == info
    assert after["spec"]["containers"] == TEMPLATE["spec"]["containers"]  # the rest is left alone


def test_a_template_without_the_fields_gets_them_whole() -> None:
    info = podset.PodSetInfo(labels={"a": "1"}, node_selector={"pool": "b"}, tolerations=[TOL])
    assert podset.template_patch({}, info) == {
        "metadata": {"labels": {"a": "1"}},
        "spec": {"nodeSelector": {"pool": "b"}, "tolerations": [TOL]},
    }
