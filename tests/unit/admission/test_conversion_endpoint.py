"""/convert through the ASGI app: ConversionReview v1 in, converted objects (or a Failure) out."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from webhook.admission.app import create_app

from .reviews import post

APP = create_app()


def conversion_review(desired: str, *objects: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "c-1", "desiredAPIVersion": desired, "objects": list(objects)},
        }
    )


CQ_V1 = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",
    "kind": "ClusterQueue",
    "metadata": {"name": "cq"},
    "spec": {"cohort": "research", "admissionChecks": ["prov"]},
}
WL_V1 = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "w", "namespace": "ns"},
    "spec": {
        "priorityClassName": "high",
        "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
        "priority": 10,
        "podSets": [],
    },
}


def test_converts_every_object_and_echoes_the_uid() -> None:
    resp = post(APP, "/convert", conversion_review("kueue.x-k8s.io/v1beta2", CQ_V1, WL_V1))
    assert resp.status_code == 200
    answer = resp.json()
    assert answer["kind"] == "ConversionReview" and answer["response"]["uid"] == "c-1"
    assert answer["response"]["result"] == {"status": "Success"}
    cq, wl = answer["response"]["convertedObjects"]
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2" and cq["spec"]["cohortName"] == "research"
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
    assert wl["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }


def test_round_trip_through_the_endpoint() -> None:
    up = post(APP, "/convert", conversion_review("kueue.x-k8s.io/v1beta2", WL_V1)).json()
    down = post(
        APP, "/convert", conversion_review("kueue.x-k8s.io/v1beta1", *up["response"]["convertedObjects"])
    ).json()
    assert down["response"]["convertedObjects"] == [WL_V1]


def test_unknown_kind_is_a_failure_naming_the_object() -> None:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Gadget", "metadata": {"name": "g"}}
    answer = post(APP, "/convert", conversion_review("kueue.x-k8s.io/v1beta2", obj)).json()
    assert answer["response"]["result"]["status"] == "Failure"
    assert "Gadget g" in answer["response"]["result"]["message"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param(b"{", "not valid JSON", id="malformed"),
        pytest.param(
            orjson.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "AdmissionReview"}),
            "expected a ConversionReview",
            id="wrong kind",
        ),
        pytest.param(
            orjson.dumps(
                {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "request": {"uid": "u"}}
            ),
            "unsupported ConversionReview apiVersion",
            id="v1beta1",
        ),
        pytest.param(
            orjson.dumps(
                {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "u"}}
            ),
            "desiredAPIVersion",
            id="no desired version",
        ),
    ],
)
def test_bad_conversion_reviews_get_400(body: bytes, fragment: str) -> None:
    resp = post(APP, "/convert", body)
    assert resp.status_code == 400 and fragment in resp.text


def test_an_object_of_the_wrong_shape_is_handed_back_for_the_schema_check() -> None:
    """The API server converts a request's object for the webhooks before its schema check: a
    Failure here made `spec: []` a 500 (internal error) instead of that check's 422."""
    bad = {**CQ_V1, "spec": []}
    answer = post(APP, "/convert", conversion_review("kueue.x-k8s.io/v1beta2", bad, WL_V1)).json()
    assert answer["response"]["result"] == {"status": "Success"}
    passed, wl = answer["response"]["convertedObjects"]
    assert passed == {**bad, "apiVersion": "kueue.x-k8s.io/v1beta2"}
    assert wl["spec"]["priorityClassRef"]["name"] == "high"


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        pytest.param({"name": "cq", "labels": {"a": 1}}, {"name": "cq"}, id="label not a string"),
        pytest.param({"name": "cq", "annotations": ["x"]}, {"name": "cq"}, id="annotations not a map"),
        pytest.param(None, {}, id="no metadata"),
    ],
)
def test_metadata_the_api_server_would_refuse_in_a_response_is_left_out(meta: Any, expected: Any) -> None:
    """The API server takes labels and annotations from the response and answered 500 for these."""
    obj = {k: v for k, v in CQ_V1.items() if k != "metadata"}
    if meta is not None:
        obj["metadata"] = meta
    answer = post(APP, "/convert", conversion_review("kueue.x-k8s.io/v1beta2", obj)).json()
    assert answer["response"]["result"] == {"status": "Success"}
    assert answer["response"]["convertedObjects"][0]["metadata"] == expected
