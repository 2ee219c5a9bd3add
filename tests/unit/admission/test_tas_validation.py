"""`tas_validation`: the TopologyAwareScheduling checks of a job's pod-template annotations
(`pkg/controller/jobframework/tas_validation.go`); the webhooks' tests (`test_job.py`, `test_pod.py`,
`test_jobset.py`, `test_leaderworkerset.py`, `test_trainjob.py`, `test_kubeflow.py`, `test_mpijob.py`)
cover them through the app with upstream's cases, these the helpers' edges."""

from __future__ import annotations

import pytest

from webhook.admission import tas_validation as tas
from webhook.api import fields as f

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
META = f.Path("spec.x").key("A").child("template", "metadata")


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        pytest.param({}, None, id="no annotations"),
        pytest.param(
            {UNCONSTRAINED: "yes"}, 'strconv.ParseBool: parsing "yes": invalid syntax', id="bad unconstrained"
        ),
        pytest.param({REQUIRED: "r", UNCONSTRAINED: "yes"}, None, id="unconstrained not read beside required"),
        pytest.param(
            {SLICE_REQUIRED: "b", SLICE_SIZE: "x"}, 'strconv.ParseInt: parsing "x": invalid syntax', id="bad slice size"
        ),
        pytest.param(
            {SLICE_REQUIRED: "b", SLICE_SIZE: "3000000000"},
            'strconv.ParseInt: parsing "3000000000": value out of range',
            id="a slice size beyond int32",
        ),
        pytest.param({SLICE_SIZE: "x"}, None, id="a slice size alone is not read"),
    ],
)
def test_build_error(annotations: dict[str, str], want: str | None) -> None:
    assert tas.build_error(annotations) == want


def test_group_name_needs_a_required_or_preferred_level() -> None:
    assert [str(e) for e in tas.validate_pod_set_request(META, {GROUP: "g", UNCONSTRAINED: "true"})] == [
        f"spec.x[A].template.metadata.annotations[{GROUP}]: Forbidden: may not be set when neither "
        f"'{PREFERRED}' nor '{REQUIRED}' is specified"
    ]
    assert tas.grouping_request({GROUP: "g", UNCONSTRAINED: "true"}) == {}
    assert tas.grouping_request({GROUP: "g", PREFERRED: "p"}) == {"preferred": "p", "podSetGroupName": "g"}


def test_a_slice_size_without_its_topology_is_forbidden() -> None:
    assert [str(e) for e in tas.validate_pod_set_request(META, {SLICE_SIZE: "2"})] == [
        f"spec.x[A].template.metadata.annotations[{SLICE_SIZE}]: Forbidden: may not be set when "
        f"'{SLICE_REQUIRED}' is not specified"
    ]


def test_groups_are_checked_in_first_seen_order() -> None:
    pod_sets = [
        {"name": "b", "count": 2, "topologyRequest": {"required": "r", "podSetGroupName": "g2"}},
        {"name": "a", "count": 2, "topologyRequest": {"required": "r", "podSetGroupName": "g1"}},
    ]
    paths = {"a": f.Path("pa"), "b": f.Path("pb")}
    assert [e.path for e in tas.validate_grouping(pod_sets, paths)] == [f"pb[{GROUP}]", f"pa[{GROUP}]"]
