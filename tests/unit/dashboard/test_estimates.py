"""The dashboard's wait estimates: the core's simulation over its caches, scored at the next sample."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.builders import T0, fq, make_cq, make_flavor, make_lq, make_wl, psa
from webhook.core.estimate_accuracy import Accuracy
from webhook.core.wait_estimate import Estimate
from webhook.core.workload import WorkloadKey
from webhook.dashboard import views
from webhook.dashboard.estimates import Estimates
from webhook.dashboard.store import Kind, Store

NOW = T0 + timedelta(seconds=100)


def active(obj: dict[str, Any]) -> dict[str, Any]:
    obj["status"] = {"conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "ok"}]}
    return obj


def running(name: str, at: float, limit: int | None) -> dict[str, Any]:
    obj = make_wl(name, "team").queue("lq").request(cpu="2").reserve("cq", psa(cpu=("default", "2")), at=at).obj()
    if limit is not None:
        obj["spec"]["maximumExecutionTimeSeconds"] = limit
    return obj


def store_of(*workloads: dict[str, Any]) -> Store:
    store = Store()
    store.replace(Kind.RESOURCE_FLAVORS, [make_flavor("default").obj()])
    store.replace(Kind.COHORTS, [])
    store.replace(Kind.CLUSTER_QUEUES, [active(make_cq("cq").group(fq("default", cpu="2")).obj())])
    store.replace(Kind.LOCAL_QUEUES, [make_lq("lq", "team", "cq")])
    store.replace(Kind.USAGE_RECORDS, [])
    store.replace(Kind.WORKLOADS, list(workloads))
    return store


def test_estimates_show_on_the_workloads_page_and_are_scored_at_the_next_sample() -> None:
    waiting = make_wl("p", "team").queue("lq").request(cpu="2").created(50).obj()
    store = store_of(running("r", 0, 300), waiting)
    est = Estimates()
    est.sample(store, NOW)
    assert est.current == {WorkloadKey("team/p"): Estimate(T0 + timedelta(seconds=300))}
    page = views.workloads_page(store, None, local_queue_namespaces=None, estimates=est.current, now=NOW)
    row = next(r for r in page.rows if r.name == "p")
    assert (row.estimate, row.estimate_detail) == ("00:05:00 (in 200 s)", "2025-01-01T00:05:00+00:00")

    # r ends; p gets its quota 10 s later than estimated.
    admitted = make_wl("p", "team").queue("lq").request(cpu="2").created(50)
    store.replace(Kind.WORKLOADS, [admitted.reserve("cq", psa(cpu=("default", "2")), at=310).obj()])
    est.sample(store, T0 + timedelta(seconds=320))
    assert est.accuracy("cq") == Accuracy(1, 0, 10.0, 10.0, 10.0, 10.0)
    assert est.current == {}


def test_a_holder_without_a_limit_is_timed_by_the_finished_runs_of_its_cluster_queue() -> None:
    waiting = make_wl("p", "team").queue("lq").request(cpu="2").created(50).obj()
    done = running("d", -400, None)
    done["status"]["conditions"].append(
        {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "",
            "lastTransitionTime": "2024-12-31T23:55:00Z",
        }
    )
    est = Estimates()
    est.sample(store_of(running("r", 0, None), waiting), NOW)
    assert est.current[WorkloadKey("team/p")].at is None
    est.sample(store_of(running("r", 0, None), waiting, done), NOW)
    # d held its quota 100 s (from -400 s to -300 s): so is r expected to, ending at 100 s (now).
    assert est.current == {WorkloadKey("team/p"): Estimate(NOW)}
