"""AdmissionReview and ConversionReview envelopes, and minimal RFC 6902 JSON Patches. No I/O.

Decoding raises `BadRequest` with a message saying what is wrong; the app turns it into
HTTP 400. Responses mirror controller-runtime's: a denial is `allowed: false` with status
code 403 and reason `Forbidden`, which kubectl prints as
`admission webhook "<name>" denied the request: <message>`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "BadRequest",
    "Review",
    "allowed",
    "denied",
    "errored",
    "json_patch",
    "parse_review",
]

ADMISSION_API_VERSION = "admission.k8s.io/v1"
CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"


class BadRequest(ValueError):
    """The request body is not a usable review; answered with HTTP 400 and this message."""


@dataclass(frozen=True, slots=True)
class Review:
    """The parts of an AdmissionReview request the handlers use."""

    uid: str
    kind: Mapping[str, str]
    operation: str
    namespace: str
    name: str
    sub_resource: str
    obj: dict[str, Any] | None
    old_obj: dict[str, Any] | None
    dry_run: bool
    user: str = ""  # userInfo.username


def _want(cond: bool, message: str) -> None:
    if not cond:
        raise BadRequest(message)


def parse_review(body: bytes) -> Review:
    """Decode and check an AdmissionReview v1 request body."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    _want(isinstance(doc, dict), "request body must be a JSON object")
    _want(doc.get("kind") == "AdmissionReview", f"expected kind AdmissionReview, got {doc.get('kind')!r}")
    _want(
        doc.get("apiVersion") == ADMISSION_API_VERSION,
        f"unsupported AdmissionReview apiVersion {doc.get('apiVersion')!r}, expected {ADMISSION_API_VERSION!r}",
    )
    req = doc.get("request")
    _want(isinstance(req, dict), "AdmissionReview has no request")
    uid = req.get("uid")
    _want(isinstance(uid, str) and uid != "", "request.uid must be a non-empty string")
    kind = req.get("kind")
    _want(isinstance(kind, dict) and isinstance(kind.get("kind"), str), "request.kind must be a GroupVersionKind")
    operation = req.get("operation")
    _want(
        operation in ("CREATE", "UPDATE", "DELETE", "CONNECT"),
        f"request.operation must be CREATE, UPDATE, DELETE or CONNECT, got {operation!r}",
    )
    obj = req.get("object")
    old = req.get("oldObject")
    _want(obj is None or isinstance(obj, dict), "request.object must be a JSON object")
    _want(old is None or isinstance(old, dict), "request.oldObject must be a JSON object")
    _want(operation not in ("CREATE", "UPDATE") or obj is not None, f"request.object is required for {operation}")
    _want(operation != "UPDATE" or old is not None, "request.oldObject is required for UPDATE")
    for field in ("namespace", "name", "subResource"):
        _want(isinstance(req.get(field, ""), str), f"request.{field} must be a string")
    return Review(
        uid=uid,
        kind=kind,
        operation=operation,
        namespace=req.get("namespace", ""),
        name=req.get("name", ""),
        sub_resource=req.get("subResource", ""),
        obj=obj,
        old_obj=old,
        dry_run=bool(req.get("dryRun", False)),
        user=str((req.get("userInfo") if isinstance(req.get("userInfo"), dict) else {}).get("username") or ""),
    )


def _envelope(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def allowed(uid: str, *, patch: Sequence[Mapping[str, Any]] = (), warnings: Sequence[str] = ()) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": True, "status": {"code": 200}}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(list(patch))).decode()
    if warnings:
        response["warnings"] = list(warnings)
    return _envelope(response)


def denied(uid: str, message: str, *, warnings: Sequence[str] = ()) -> dict[str, Any]:
    response: dict[str, Any] = {
        "uid": uid,
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": message},
    }
    if warnings:
        response["warnings"] = list(warnings)
    return _envelope(response)


def errored(uid: str, code: int, message: str) -> dict[str, Any]:
    """controller-runtime's `Errored`: the handler could not decide (e.g. a lookup failed)."""
    return _envelope({"uid": uid, "allowed": False, "status": {"code": code, "message": message}})


# --- JSON Patch -------------------------------------------------------------------------------


def _pointer(path: str, key: str | int) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def json_patch(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """A small RFC 6902 patch turning `old` into `new`.

    Maps are diffed key by key; a list that only grew at its end gets `add` operations,
    any other list change replaces the list (handlers rarely touch lists otherwise, and
    index-wise edits would race with concurrent writers anyway).
    """
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[dict[str, Any]] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": _pointer(path, key)})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": _pointer(path, key), "value": value})
            elif old[key] != value:
                ops.extend(json_patch(old[key], value, _pointer(path, key)))
        return ops
    if isinstance(old, list) and isinstance(new, list) and len(new) > len(old) and new[: len(old)] == old:
        return [{"op": "add", "path": _pointer(path, i), "value": new[i]} for i in range(len(old), len(new))]
    if old == new and type(old) is type(new):
        return []
    return [{"op": "replace", "path": path, "value": new}]
