"""The integration registry: every table is derived from its rows, so a framework added as one row
(with its webhook and adapter modules, `tests/unit/widget`) is accepted by the Configuration,
served and registered as webhooks, granted in RBAC and reconciled by the worker, and disappears
from all of them when the row goes."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator

import orjson
import pytest

from tests.unit.admission.reviews import Driver, apply_patch
from tests.unit.fake_kube import FakeKube
from tests.unit.widget import adapter as widget_adapter
from tests.unit.widget.webhook import SEEN_LABEL
from webhook import config
from webhook.admission.app import create_app, endpoints
from webhook.admission.registration import webhook_configurations
from webhook.api import integrations
from webhook.config import Configuration, Integrations
from webhook.install import rbac
from webhook.worker.integrations.appwrapper import AppWrapperReconciler
from webhook.worker.integrations.batchjob import JobReconciler
from webhook.worker.integrations.jobset import JobSetReconciler
from webhook.worker.integrations.leaderworkerset import LeaderWorkerSetReconciler
from webhook.worker.integrations.pod.reconciler import PodReconciler
from webhook.worker.integrations.statefulset import StatefulSetReconciler
from webhook.worker.manager import Manager

WIDGET = integrations.Framework(
    "example.com/widget",
    "example.com",
    "v1",
    "Widget",
    "widgets",
    webhook="tests.unit.widget.webhook",
    adapter="tests.unit.widget.adapter",
    worker_access=(integrations.Grant(("widgets",), ("get", "list", "patch", "watch"), "suspend and start widgets"),),
)
WITH_WIDGET = Configuration(integrations=Integrations(frameworks=("batch/job", WIDGET.name)))


@pytest.fixture
def widget() -> Iterator[integrations.Framework]:
    with integrations.registered(WIDGET) as framework:
        yield framework


def widget_obj(size: int = 1) -> dict[str, object]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"size": size},
    }


def review_of(obj: dict[str, object], operation: str = "CREATE") -> dict[str, object]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
            "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "operation": operation,
            "namespace": "ns",
            "name": "w1",
            "object": obj,
            "userInfo": {"username": "tester"},
        },
    }


def test_the_configuration_accepts_a_registered_framework_and_refuses_it_once_gone(widget) -> None:
    assert WIDGET.name in config.supported_frameworks()
    assert WIDGET.name in config.implemented_frameworks()
    assert config.validate(WITH_WIDGET) == []
    config.check_implemented(WITH_WIDGET)  # raises when a framework is not implemented


def test_a_removed_row_leaves_no_trace() -> None:
    with integrations.registered(WIDGET):
        pass
    assert WIDGET.name not in config.supported_frameworks()
    assert not any(e.kind == "Widget" for e in endpoints())
    assert not any("widgets" in a.resources for a in rbac.manager_access())
    [err] = config.validate(WITH_WIDGET)
    assert str(err).startswith('integrations.frameworks[1]: Unsupported value: "example.com/widget"')


def test_its_webhooks_are_served_at_controller_runtimes_paths_and_registered(widget) -> None:
    paths = {e.path for e in endpoints() if e.integration == WIDGET.name}
    assert paths == {"/mutate-example-com-v1-widget", "/validate-example-com-v1-widget"}
    hooks = {h["name"]: h for cfg in webhook_configurations("Q0E=") for h in cfg["webhooks"]}
    for name in ("mwidget.kb.io", "vwidget.kb.io"):
        rule = hooks[name]["rules"][0]
        assert (rule["apiGroups"], rule["apiVersions"], rule["resources"]) == (["example.com"], ["v1"], ["widgets"])
        assert hooks[name]["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "kueue-system"]


def test_its_webhook_module_decides_the_reviews_only_while_enabled(widget) -> None:
    driver = Driver(create_app(WITH_WIDGET))
    answer = driver.send("/mutate-example-com-v1-widget", review_of(widget_obj()))
    mutated = apply_patch(widget_obj(), orjson.loads(base64.b64decode(answer["patch"])))
    assert mutated["metadata"]["labels"][SEEN_LABEL] == "true"
    denied = driver.send("/validate-example-com-v1-widget", review_of(widget_obj(size=-1)))
    assert not denied["allowed"] and "spec.size: Invalid value: -1" in denied["status"]["message"]

    off = Driver(create_app(Configuration()))  # batch/job only: the widget webhooks allow everything
    assert off.send("/validate-example-com-v1-widget", review_of(widget_obj(size=-1)))["allowed"]
    assert "patch" not in off.send("/mutate-example-com-v1-widget", review_of(widget_obj()))


def test_rbac_grants_its_worker_access_and_the_owner_lookup(widget) -> None:
    rules = [r for role in rbac.manager_rbac("kueue-system", "sa") for r in role.get("rules", ())]
    granted = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    assert {("example.com", "widgets", v) for v in ("get", "list", "patch", "watch")} <= granted


def test_the_worker_watches_and_reconciles_it(widget) -> None:
    # The fake lists what is stored under the listed path: the informer's cluster-wide list.
    kube = FakeKube({"/apis/example.com/v1/widgets/w1": widget_obj()})
    stop = threading.Event()
    manager = Manager(kube, WITH_WIDGET, identity="test", stop=stop)  # type: ignore[arg-type]
    [reconciler] = [r for r in manager.reconcilers if isinstance(r, widget_adapter.WidgetReconciler)]
    manager.start()
    try:
        deadline = time.monotonic() + 10
        while not (reconciler.started.is_set() and reconciler.seen):
            assert time.monotonic() < deadline, "the widget reconciler never heard of w1"
            time.sleep(0.01)
    finally:
        stop.set()
        kube.stop.set()
    assert reconciler.seen[0] == ("widgets", "ADDED", "w1")
    assert manager.store.get("widgets", "ns/w1") is not None


@pytest.mark.parametrize(
    ("frameworks", "expected"),
    [
        pytest.param(("batch/job",), {JobReconciler}, id="default"),
        pytest.param(("pod",), {PodReconciler}, id="pod only: no Job reconciler"),
        pytest.param(("batch/job", "deployment"), {JobReconciler, PodReconciler}, id="deployment enables pod"),
        pytest.param(("statefulset",), {PodReconciler, StatefulSetReconciler}, id="statefulset enables pod"),
        pytest.param(("workload.codeflare.dev/appwrapper",), {AppWrapperReconciler}, id="appwrapper"),
        pytest.param(
            ("leaderworkerset.x-k8s.io/leaderworkerset",),
            {PodReconciler, LeaderWorkerSetReconciler},
            id="leaderworkerset enables pod",
        ),
        pytest.param(("jobset.x-k8s.io/jobset",), {JobSetReconciler}, id="jobset alone"),
    ],
)
def test_the_worker_runs_the_enabled_integrations_and_those_they_imply(
    frameworks: tuple[str, ...], expected: set[type]
) -> None:
    manager = Manager(
        FakeKube(),
        Configuration(integrations=Integrations(frameworks=frameworks)),
        identity="t",
        stop=threading.Event(),
    )  # type: ignore[arg-type]
    integration_types = {type(w.reconciler) for w in manager.integrations}
    assert integration_types == expected
    watched = {(r.kind, r.label_selector) for r in manager.resources}
    assert (("pods", "kueue.x-k8s.io/managed=true") in watched) == (PodReconciler in expected)
    assert (("jobs", "") in watched) == (JobReconciler in expected)
    assert (("appwrappers", "") in watched) == (AppWrapperReconciler in expected)
