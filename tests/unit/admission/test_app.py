"""Protocol hygiene of the ASGI app: envelopes, bad requests, unknown paths, metrics, fuzzing."""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CONTENT_TYPE_LATEST, Counter

from webhook import metrics
from webhook.admission.app import MAX_BODY_BYTES, create_app, endpoints

from .reviews import post, review

APP = create_app()
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "j", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
    "spec": {"template": {"spec": {"containers": []}}},
}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param(b"{not json", "not valid JSON", id="malformed"),
        pytest.param(orjson.dumps(review(JOB))[:40], "not valid JSON", id="truncated"),
        pytest.param(b"[]", "must be a JSON object", id="not an object"),
        pytest.param(
            orjson.dumps({**review(JOB), "apiVersion": "admission.k8s.io/v1beta1"}),
            "unsupported AdmissionReview apiVersion",
            id="wrong version",
        ),
        pytest.param(
            orjson.dumps({**review(JOB), "kind": "ConversionReview"}),
            "expected kind AdmissionReview",
            id="wrong review kind",
        ),
        pytest.param(
            orjson.dumps(review({**JOB, "kind": "Pod"}, kind="Pod")),
            "serves batch/Job, not /Pod",
            id="wrong object kind",
        ),
        pytest.param(
            orjson.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {
                        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                        "operation": "CREATE",
                        "object": JOB,
                    },
                }
            ),
            "request.uid must be a non-empty string",
            id="no uid",
        ),
        pytest.param(
            orjson.dumps(review(JOB, operation="UPDATE")),
            "request.oldObject is required for UPDATE",
            id="update without old object",
        ),
    ],
)
def test_bad_requests_get_400_with_a_reason(body: bytes, fragment: str) -> None:
    resp = post(APP, "/mutate-batch-v1-job", body)
    assert resp.status_code == 400
    assert fragment in resp.text


def test_oversized_body_is_refused() -> None:
    resp = post(APP, "/validate-batch-v1-job", b" " * (MAX_BODY_BYTES + 1))
    assert resp.status_code == 400 and str(MAX_BODY_BYTES) in resp.text


def test_unknown_path_is_404() -> None:
    assert post(APP, "/mutate-example-com-v1-widget", orjson.dumps(review(JOB))).status_code == 404


def test_uid_is_echoed_and_patch_is_json_patch() -> None:
    body = review(JOB)
    answer = post(APP, "/mutate-batch-v1-job", orjson.dumps(body)).json()
    assert answer["response"]["uid"] == body["request"]["uid"]
    assert answer["response"]["patchType"] == "JSONPatch"
    import base64

    assert orjson.loads(base64.b64decode(answer["response"]["patch"])) == [
        {"op": "add", "path": "/spec/suspend", "value": True}
    ]


def test_metrics_count_requests_by_path_and_outcome() -> None:
    app = create_app()
    post(app, "/validate-batch-v1-job", orjson.dumps(review(JOB)))
    post(app, "/validate-batch-v1-job", b"{")

    async def get() -> str:
        import httpx

        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://w") as c:
            return (await c.get("/metrics")).text

    import asyncio

    text = asyncio.run(get())
    assert 'kueue_webhook_reviews_total{outcome="allowed",webhook="/validate-batch-v1-job"}' in text
    assert 'kueue_webhook_reviews_total{outcome="bad_request",webhook="/validate-batch-v1-job"}' in text
    assert "controller_runtime_webhook_latency_seconds_bucket" in text


def test_metrics_leave_out_families_without_series() -> None:
    """As Go's registry: a labelled family nothing has used yet prints no HELP or TYPE line; the
    content type stays the text format's."""
    import asyncio

    import httpx

    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=APP), base_url="https://w") as c:
            return await c.get("/metrics")

    unused = Counter("kueue_test_unused", "A family without series.", ["webhook"], registry=metrics.REGISTRY)
    try:
        resp = asyncio.run(get())
    finally:
        metrics.REGISTRY.unregister(unused)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == CONTENT_TYPE_LATEST
    assert "kueue_test_unused" not in resp.text


# --- fuzzing ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
SEEDS: list[dict[str, Any]] = [
    JOB,
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/pod-group-name": "g"},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"},
        },
        "spec": {"containers": [{"name": "c"}]},
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "cohortName": "c",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                }
            ],
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "rf"},
        "spec": {"nodeLabels": {"a": "b"}},
    },
]


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_reviews(draw: st.DrawFn) -> tuple[str, bytes]:
    endpoint = draw(st.sampled_from(list(endpoints())))
    obj = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    doc = review(
        obj,
        kind=draw(st.sampled_from(["Job", "Pod", "ClusterQueue", "Workload", "ResourceFlavor", "Cohort"])),
        operation=draw(st.sampled_from(["CREATE", "UPDATE", "DELETE"])),
    )
    if doc["request"]["operation"] == "UPDATE":
        doc["request"]["oldObject"] = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 4))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            continue
        parent: Any = doc
        for p in path[:-1]:
            parent = parent[p]
        parent[path[-1]] = draw(json_values)
    body = json.dumps(doc).encode()
    if draw(st.integers(0, 9)) == 0:
        body = body[: draw(st.integers(0, len(body)))]
    return endpoint.path, body


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_reviews())
def test_fuzzed_reviews_never_fail_the_server(case: tuple[str, bytes]) -> None:
    path, body = case
    resp = post(APP, path, body)
    assert resp.status_code in (200, 400), resp.text
    if resp.status_code == 200:
        answer = resp.json()
        assert answer["kind"] == "AdmissionReview" and isinstance(answer["response"]["allowed"], bool)


def _workload(cpu: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {
            "queueName": "q",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


@pytest.mark.parametrize(
    "path", ["/mutate-kueue-x-k8s-io-v1beta2-workload", "/validate-kueue-x-k8s-io-v1beta2-workload"]
)
@pytest.mark.parametrize("cpu", ["1e1.5", "1e", "Ei"])
def test_a_quantity_go_cannot_decode_is_refused_with_gos_message(path: str, cpu: str) -> None:
    # "1e1.5" matches the CRD's pattern, so only the webhook stands between it and etcd.
    answer = post(APP, path, orjson.dumps(review(_workload(cpu), kind="Workload"))).json()["response"]
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] in (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        "unable to parse quantity's suffix",
        "unable to parse numeric part of quantity",
    )


def test_a_bad_quantity_in_the_old_object_is_refused_too() -> None:
    body = review(_workload("1"), old=_workload("1e1.5"), kind="Workload")
    answer = post(APP, "/validate-kueue-x-k8s-io-v1beta2-workload", orjson.dumps(body)).json()["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 400


def test_a_huge_exponent_is_answered_at_once() -> None:
    # `10**999999999` was computed in full on the event loop; Go saturates nothing here and times out.
    answer = post(APP, "/validate-kueue-x-k8s-io-v1beta2-workload", orjson.dumps(review(_workload("1e999999999"))))
    assert answer.json()["response"]["allowed"] is True


@pytest.mark.parametrize(
    "path", ["/mutate-kueue-x-k8s-io-v1beta2-workload", "/validate-kueue-x-k8s-io-v1beta2-workload"]
)
def test_an_object_not_of_its_kinds_shape_is_errored_in_the_review_not_an_http_400(path: str) -> None:
    """controller-runtime answers a decode failure with Errored(400) in the review; an HTTP 400 is a
    failed webhook call, which the API server turned into a 500 for the user."""
    wl = {**_workload("1"), "spec": {"podSets": "not a list"}}
    resp = post(APP, "/validate-kueue-x-k8s-io-v1beta2-workload", orjson.dumps(review(wl, kind="Workload")))
    assert resp.status_code == 200
    answer = resp.json()["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 400
    assert "not a well-formed Workload" in answer["status"]["message"]


def test_a_large_review_is_decided_off_the_event_loop_under_a_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A review past INLINE_BODY_BYTES that takes too long is refused at the deadline, and a small
    review sent meanwhile is answered at once (it used to wait behind it on the event loop)."""
    import asyncio
    import time

    import httpx

    from webhook.admission import app as app_module

    real = app_module.decide

    def slow(endpoint: Any, req: Any, config: Any, lookups: Any) -> Any:
        if req.name == "big":
            time.sleep(1.0)
        return real(endpoint, req, config, lookups)

    monkeypatch.setattr(app_module, "decide", slow)
    monkeypatch.setattr(app_module, "REVIEW_DEADLINE_S", 0.3)
    big = _workload("1")
    big["metadata"]["name"] = "big"
    big["metadata"]["annotations"] = {"pad": "x" * (app_module.INLINE_BODY_BYTES + 1)}
    app = create_app()
    path = "/validate-kueue-x-k8s-io-v1beta2-workload"

    async def go() -> tuple[dict[str, Any], float, float]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://w") as client:
            started = time.perf_counter()

            async def timed(body: dict[str, Any]) -> tuple[dict[str, Any], float]:
                resp = await client.post(path, content=orjson.dumps(review(body)))
                return resp.json()["response"], time.perf_counter() - started

            (slow_answer, slow_s), (_, fast_s) = await asyncio.gather(timed(big), timed(_workload("1")))
            return slow_answer, slow_s, fast_s

    answer, slow_s, fast_s = asyncio.run(go())
    assert answer["allowed"] is False and answer["status"]["code"] == 500
    assert "not decided within 0.3 s" in answer["status"]["message"]
    assert slow_s < 0.9 and fast_s < slow_s
