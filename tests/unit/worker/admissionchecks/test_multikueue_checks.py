"""A MultiKueue AdmissionCheck's `Active` condition: upstream v0.19.2 `TestReconcile`
(`pkg/controller/admissionchecks/multikueue/admissioncheck_test.go`) under its case names, less
"missing admissioncheck" (the reconciler finds no check to judge), then the parameters messages
of `pkg/util/admissioncheck` and the event routing of `mkConfigHandler`/`mkClusterHandler`."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.worker.admissionchecks.multikueue import checks


def admission_check(
    name: str = "ac1", *, controller: str = "kueue.x-k8s.io/multikueue", parameters: Any = "config1", **status: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"controllerName": controller}
    if isinstance(parameters, str):
        spec["parameters"] = {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": parameters}
    elif parameters is not None:
        spec["parameters"] = parameters
    return {"metadata": {"name": name, "generation": 1}, "spec": spec, **({"status": status} if status else {})}


def mk_config(name: str, *clusters: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"clusters": list(clusters)}}


def mk_cluster(name: str, active: str) -> dict[str, Any]:
    condition = {"type": "Active", "status": active, "reason": "ByTest", "message": "by test", "observedGeneration": 1}
    return {"metadata": {"name": name}, "status": {"conditions": [condition]}}


def _by_name(*objs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs}


def _active(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": "Active", "status": status, "reason": reason, "message": message, "observedGeneration": 1}


@pytest.mark.parametrize(
    ("ac", "configs", "clusters", "want"),
    [
        pytest.param(
            admission_check(),
            [],
            [],
            _active(
                "False",
                "BadConfig",
                'Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io "config1" not found',
            ),
            id="missing config",
        ),
        pytest.param(admission_check(controller="not-multikueue"), [], [], None, id="unmanaged"),
        pytest.param(
            admission_check(),
            [mk_config("config1", "worker1")],
            [],
            _active("False", "NoUsableClusters", "Missing clusters: [worker1]"),
            id="missing cluster",
        ),
        pytest.param(
            admission_check(),
            [mk_config("config1", "worker1")],
            [mk_cluster("worker1", "False")],
            _active("False", "NoUsableClusters", "Inactive clusters: [worker1]"),
            id="inactive cluster",
        ),
        pytest.param(
            admission_check(),
            [mk_config("config1", "worker1", "worker2", "worker3")],
            [mk_cluster("worker1", "False"), mk_cluster("worker2", "False")],
            _active("False", "NoUsableClusters", "Missing clusters: [worker3], Inactive clusters: [worker1 worker2]"),
            id="all clusters missing or inactive",
        ),
        pytest.param(
            admission_check(),
            [mk_config("config1", "worker1", "worker2", "worker3")],
            [mk_cluster("worker1", "False"), mk_cluster("worker2", "True")],
            _active("True", "SomeActiveClusters", "Missing clusters: [worker3], Inactive clusters: [worker1]"),
            id="partially active",
        ),
        pytest.param(
            admission_check(),
            [mk_config("config1", "worker1")],
            [mk_cluster("worker1", "True")],
            _active("True", "Active", "The admission check is active"),
            id="active",
        ),
    ],
)
def test_reconcile_upstream(
    ac: dict[str, Any], configs: list[dict[str, Any]], clusters: list[dict[str, Any]], want: dict[str, Any] | None
) -> None:
    """Upstream `TestReconcile`."""
    assert checks.active_condition(ac, _by_name(*configs), _by_name(*clusters)) == want


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        pytest.param(None, "missing parameters reference", id="no parameters"),
        pytest.param(
            {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": ""},
            "empty name: bad parameters reference",
            id="empty name",
        ),
        pytest.param(
            {"apiGroup": "example.com", "kind": "MultiKueueConfig", "name": "config1"},
            'wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference',
            id="wrong group",
        ),
        pytest.param(
            {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "config1"},
            'wrong kind "ProvisioningRequestConfig", expecting "MultiKueueConfig": bad parameters reference',
            id="wrong kind",
        ),
    ],
)
def test_bad_parameters(parameters: dict[str, str] | None, message: str) -> None:
    got = checks.active_condition(admission_check(parameters=parameters), _by_name(mk_config("config1")), {})
    assert got == _active("False", "BadConfig", f"Cannot load the AdmissionChecks parameters: {message}")


def test_the_condition_is_written_only_when_its_state_changes() -> None:
    configs, clusters = _by_name(mk_config("config1", "worker1")), _by_name(mk_cluster("worker1", "True"))
    current = _active("True", "Active", "The admission check is active") | {"observedGeneration": 0}
    assert checks.active_condition(admission_check(conditions=[current]), configs, clusters) is None
    stale = _active("False", "NoUsableClusters", "Missing clusters: [worker1]")
    assert checks.active_condition(admission_check(conditions=[stale]), configs, clusters) == _active(
        "True", "Active", "The admission check is active"
    )


def test_events_requeue_the_checks_that_use_the_config_or_cluster() -> None:
    acs = [
        admission_check("ac2", parameters="config1"),
        admission_check("ac1", parameters="config1"),
        admission_check("ac3", parameters="config2"),
        admission_check("other", controller="kueue.x-k8s.io/provisioning-request", parameters="config1"),
        admission_check("bad", parameters={"apiGroup": "example.com", "kind": "MultiKueueConfig", "name": "config1"}),
    ]
    assert checks.checks_using_config(acs, "config1") == ["ac1", "ac2"]
    configs = [mk_config("config1", "worker1"), mk_config("config2", "worker1", "worker2")]
    assert checks.checks_using_cluster(acs, configs, "worker1") == ["ac1", "ac2", "ac3"]
    assert checks.checks_using_cluster(acs, configs, "worker2") == ["ac3"]
    assert checks.checks_using_cluster(acs, configs, "worker9") == []


def test_a_cluster_update_matters_when_its_active_state_changes() -> None:
    active, inactive = mk_cluster("worker1", "True"), mk_cluster("worker1", "False")
    assert checks.active_state_changed(active, inactive)
    assert not checks.active_state_changed(active, mk_cluster("worker1", "True") | {"spec": {"x": 1}})
    assert checks.active_state_changed({"metadata": {"name": "worker1"}}, active)
    assert not checks.active_state_changed({"metadata": {}}, {"metadata": {}})
