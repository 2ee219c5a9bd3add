"""Builders for AdmissionReview bodies and a driver that sends them through the ASGI app in-process."""

from __future__ import annotations

import asyncio
import base64
import copy
import uuid
from typing import Any

import httpx
import orjson
from starlette.types import ASGIApp

from webhook.admission.app import create_app
from webhook.admission.context import StaticLookups
from webhook.config import Configuration

GVK = {
    "Job": {"group": "batch", "version": "v1", "kind": "Job"},
    "Pod": {"group": "", "version": "v1", "kind": "Pod"},
    "ClusterQueue": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "ClusterQueue"},
    "ResourceFlavor": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "ResourceFlavor"},
    "Workload": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Workload"},
    "Cohort": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Cohort"},
    "Deployment": {"group": "apps", "version": "v1", "kind": "Deployment"},
    "StatefulSet": {"group": "apps", "version": "v1", "kind": "StatefulSet"},
    "LeaderWorkerSet": {"group": "leaderworkerset.x-k8s.io", "version": "v1", "kind": "LeaderWorkerSet"},
    "RayCluster": {"group": "ray.io", "version": "v1", "kind": "RayCluster"},
    "RayJob": {"group": "ray.io", "version": "v1", "kind": "RayJob"},
    "RayService": {"group": "ray.io", "version": "v1", "kind": "RayService"},
    "SparkApplication": {"group": "sparkoperator.k8s.io", "version": "v1beta2", "kind": "SparkApplication"},
}


def review(
    obj: dict[str, Any],
    *,
    old: dict[str, Any] | None = None,
    operation: str | None = None,
    kind: str | None = None,
    sub_resource: str = "",
    user: str | None = None,
) -> dict[str, Any]:
    """Without `user`, the review carries no userInfo: the tests of upstream's patches then see no
    submitting-user annotation (ours, pinned by test_submitter.py)."""
    kind = kind or obj.get("kind", "Job")
    meta = obj.get("metadata", {})
    req: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": dict(GVK[kind]),
        "resource": {"group": GVK[kind]["group"], "version": GVK[kind]["version"], "resource": kind.lower() + "s"},
        "operation": operation or ("UPDATE" if old is not None else "CREATE"),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "object": obj,
    }
    if user is not None:
        req["userInfo"] = {"username": user}
    if sub_resource:
        req["subResource"] = sub_resource
    if old is not None:
        req["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def apply_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A minimal RFC 6902 applier (add/remove/replace), enough to check our patches."""
    doc = copy.deepcopy(obj)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        if not parts:
            doc = op["value"]
            continue
        parent: Any = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        if isinstance(parent, list):
            idx = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                parent.insert(idx, op["value"])
            elif op["op"] == "remove":
                del parent[idx]
            else:
                parent[idx] = op["value"]
        elif op["op"] == "remove":
            del parent[last]
        else:
            if op["op"] == "replace":
                assert last in parent, f"replace of missing {op['path']}"
            parent[last] = op["value"]
    return doc


def post(app: ASGIApp, path: str, content: bytes) -> httpx.Response:
    """One request through the app in-process (httpx's ASGI transport, no sockets)."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="https://webhook") as client:
            return await client.post(path, content=content, headers={"Content-Type": "application/json"})

    return asyncio.run(go())


class Driver:
    """Sends reviews to one path and returns the parsed response (asserting the envelope)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def send(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = post(self.app, path, orjson.dumps(body))
        assert resp.status_code == 200, resp.text
        answer = resp.json()
        assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
        assert answer["response"]["uid"] == body["request"]["uid"]
        return answer["response"]

    def mutate(self, path: str, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
        """The object after our patch (asserts the review was allowed)."""
        response = self.send(path, review(obj, **kw))
        assert response["allowed"], response
        ops = orjson.loads(base64.b64decode(response["patch"])) if "patch" in response else []
        return apply_patch(obj, ops)

    def denial(self, path: str, obj: dict[str, Any], **kw: Any) -> str | None:
        """The denial message, or None if allowed."""
        response = self.send(path, review(obj, **kw))
        if response["allowed"]:
            return None
        assert response["status"]["code"] == 403 and response["status"]["reason"] == "Forbidden"
        return str(response["status"]["message"])


def crd_denial(
    kind: str, obj: dict[str, Any], *, old: dict[str, Any] | None = None, gates: dict[str, bool] | None = None
) -> str:
    """The message a Kueue CRD object gets from the app on the path the API server calls
    (/validate-kueue-x-k8s-io-v1beta2-<kind>), as kubectl would show it; "" when it is allowed.

    The per-kind tests call the handlers directly; their tables run through this too, so the same
    messages are known to reach the API server."""
    driver = Driver(create_app(Configuration(feature_gates=gates or {}), StaticLookups()))
    return driver.denial(f"/validate-kueue-x-k8s-io-v1beta2-{kind.lower()}", obj, old=old, kind=kind) or ""


def crd_defaulted(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A Kueue CRD object as the app's defaulting path (/mutate-kueue-x-k8s-io-v1beta2-<kind>) patches it."""
    driver = Driver(create_app(Configuration(), StaticLookups()))
    return driver.mutate(f"/mutate-kueue-x-k8s-io-v1beta2-{kind.lower()}", obj, kind=kind)


def multikueue_lookups(namespace: str, queue: str = "local-queue") -> dict[str, Any]:
    """`StaticLookups` arguments for a LocalQueue `queue` in `namespace` whose ClusterQueue has a
    MultiKueue admission check (the webhooks then default `managedBy` to MultiKueue)."""
    return {
        "local_queues": frozenset({(namespace, queue)}),
        "local_queue_targets": {(namespace, queue): "cluster-queue"},
        "cluster_queues": {
            "cluster-queue": {
                "metadata": {"name": "cluster-queue"},
                "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "admission-check"}]}},
            }
        },
        "admission_checks": {"admission-check": "kueue.x-k8s.io/multikueue"},
    }
