"""The `/convert` endpoint: ConversionReview v1 around `webhook.api.conversion.convert`.

A body that is not a ConversionReview is a 400; an object that cannot be converted is a
review with `result.status: Failure` and a message naming the object, as the API server
expects (it then fails the user's request with that message).

An object with a field of the wrong JSON type (`spec: []`) is handed back with only its apiVersion
changed. The API server converts a request's object for the admission webhooks before it checks
it against the schema: upstream's conversion fails to decode such an object and the user gets a
500 (an internal error) where the schema check would have said 422 (invalid) a moment later.
Handed back as it is, it meets that check. Stored objects have passed it, so they never get here.

Likewise labels and annotations that are not maps of strings are left out of every converted
object: the API server takes those two fields from the response and fails the request with a 500
when they are not, where its own validation of the request would answer 422.
"""

from __future__ import annotations

from typing import Any

import orjson

from webhook.admission.review import CONVERSION_API_VERSION, BadRequest
from webhook.api import conversion

__all__ = ["review"]


def _valid_string_maps(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with a metadata map, and without labels or annotations that are not maps of strings
    (`restoreObjectMeta` in apiextensions-apiserver's webhook_converter.go refuses those)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return {**obj, "metadata": {}}
    bad = [f for f in ("labels", "annotations") if f in meta and not _string_map(meta[f])]
    return {**obj, "metadata": {k: v for k, v in meta.items() if k not in bad}} if bad else obj


def _string_map(value: object) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))


def review(body: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "ConversionReview":
        raise BadRequest("expected a ConversionReview object")
    if doc.get("apiVersion") != CONVERSION_API_VERSION:
        raise BadRequest(
            f"unsupported ConversionReview apiVersion {doc.get('apiVersion')!r}, expected {CONVERSION_API_VERSION!r}"
        )
    req = doc.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str) or not req["uid"]:
        raise BadRequest("ConversionReview request must have a non-empty uid")
    desired = req.get("desiredAPIVersion")
    objects = req.get("objects")
    if not isinstance(desired, str) or not isinstance(objects, list):
        raise BadRequest("ConversionReview request needs desiredAPIVersion (string) and objects (list)")
    response: dict[str, Any] = {"uid": req["uid"]}
    converted = []
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict):
            response["result"] = {"status": "Failure", "message": f"objects[{i}] is not a JSON object"}
            break
        try:
            converted.append(_valid_string_maps(conversion.convert(obj, desired)))
        except conversion.ShapeError:
            converted.append(_valid_string_maps({**obj, "apiVersion": desired}))
        except conversion.ConversionError as exc:
            meta = obj.get("metadata") or {}
            name = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
            response["result"] = {"status": "Failure", "message": f"converting {obj.get('kind')} {name}: {exc}"}
            break
    else:
        response["convertedObjects"] = converted
        response["result"] = {"status": "Success"}
    return {"apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview", "response": response}
