"""An in-memory stand-in for `webhook.kube.Kube`: objects by path, resourceVersions, and a call log.

Supports what the cert manager and the lookups use: GET (object or list), POST (create, 409 if
present), PUT (409 on a stale resourceVersion; `…/status` replaces only the status), PATCH (JSON Patch incl. `test`, merge patch;
`…/status` merges only the status, 409 on a stale resourceVersion when one is sent) and
watch (blocks until `stop` is set, yielding nothing). TokenReviews and SubjectAccessReviews are
answered, not stored: from `tokens` (token -> user info), `non_resource_grants` (user, verb, path) and
`resource_grants` (user, verb, resource/subresource, namespace); `reviews` records what was asked.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from webhook import kube as k


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _json_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    for op in ops:
        *parents, last = [p for p in op["path"].split("/")[1:]]
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if op["op"] == "test":
            got = node[int(last)] if isinstance(node, list) else node.get(last)
            if got != op["value"]:
                raise k.Unprocessable(422, f"test failed at {op['path']}")
        elif op["op"] in ("add", "replace"):
            node[last] = copy.deepcopy(op["value"])
        else:
            raise NotImplementedError(op["op"])


class FakeKube:
    def __init__(self, objects: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.stop = threading.Event()
        self._rv = 0
        self._lock = threading.Lock()
        self.tokens: dict[str, dict[str, Any]] = {}
        self.non_resource_grants: set[tuple[str, str, str]] = set()
        # (user, verb, resource[/subresource], namespace) a resource SubjectAccessReview allows
        self.resource_grants: set[tuple[str, str, str, str]] = set()
        self.reviews: list[Mapping[str, Any]] = []
        self.identity = "system:serviceaccount:kueue-system:kueue-controller-manager"  # SelfSubjectReview
        for path, obj in (objects or {}).items():
            self.put(path, obj)

    def put(self, path: str, obj: dict[str, Any]) -> None:
        self._rv += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
        self.objects[path] = stored

    # -- the Kube surface ----------------------------------------------------------------------
    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None:
        try:
            return self.request("GET", path)
        except k.NotFound:
            return None

    def list(self, path: str, *, query: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
        with self._lock:
            self.calls.append(("LIST", path))
            return [copy.deepcopy(o) for p, o in self.objects.items() if p.rsplit("/", 1)[0] == path], str(self._rv)

    def patch(self, path: str, body: Any, *, json_patch: bool = False, timeout: float = 30) -> dict[str, Any]:
        ctype = "application/json-patch+json" if json_patch else "application/merge-patch+json"
        return self.request("PATCH", path, body=body, content_type=ctype, timeout=timeout)

    def create(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        return self.request("POST", path, body=dict(body), timeout=timeout)

    def replace(self, path: str, body: Mapping[str, Any], *, timeout: float = 30) -> dict[str, Any]:
        return self.request("PUT", path, body=dict(body), timeout=timeout)

    def delete(self, path: str, *, body: Mapping[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        return self.request("DELETE", path, body=body, timeout=timeout)

    def watch(
        self, path: str, resource_version: str, *, timeout_seconds: int = 300, query: Mapping[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        with self._lock:
            self.calls.append(("WATCH", path))
        self.stop.wait(timeout_seconds)
        return iter(())

    def _review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        spec = body["spec"]
        self.reviews.append(body)
        if body["kind"] == "TokenReview":
            user = self.tokens.get(spec["token"])
            status: dict[str, Any] = {"authenticated": True, "user": user} if user else {"authenticated": False}
        elif "resourceAttributes" in spec:
            attrs = spec["resourceAttributes"]
            resource = "/".join(filter(None, (attrs.get("resource"), attrs.get("subresource"))))
            allowed = (spec["user"], attrs["verb"], resource, attrs.get("namespace", "")) in self.resource_grants
            status = {"allowed": True} if allowed else {"allowed": False, "reason": "no RBAC policy matched"}
        else:
            attrs = spec["nonResourceAttributes"]
            allowed = (spec["user"], attrs["verb"], attrs["path"]) in self.non_resource_grants
            status = {"allowed": True} if allowed else {"allowed": False, "reason": "no RBAC policy matched"}
        return {**body, "status": status}

    def _put_status(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The status subresource: only `status` of the body is taken, guarded by resourceVersion."""
        current = self.objects[path]
        if (body.get("metadata") or {}).get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise k.Conflict(409, "the object has been modified")
        self.put(path, {**current, "status": copy.deepcopy(body.get("status") or {})})
        return copy.deepcopy(self.objects[path])

    def _patch_status(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """A merge patch of the status, guarded when it carries a resourceVersion."""
        sent = (body.get("metadata") or {}).get("resourceVersion")
        if sent is not None and sent != self.objects[path]["metadata"]["resourceVersion"]:
            raise k.Conflict(409, "the object has been modified")
        obj = copy.deepcopy(self.objects[path])
        _merge(obj.setdefault("status", {}), body.get("status") or {})
        self.put(path, obj)
        return copy.deepcopy(self.objects[path])

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]:
        with self._lock:
            self.calls.append((method, path))
            if method == "GET":
                if path not in self.objects:
                    raise k.NotFound(404, f"{path} not found")
                return copy.deepcopy(self.objects[path])
            if method == "POST" and body.get("kind") in ("TokenReview", "SubjectAccessReview"):
                return self._review(body)
            if method == "POST" and body.get("kind") == "SelfSubjectReview":
                return {**body, "status": {"userInfo": {"username": self.identity}}}
            if method == "POST":
                target = f"{path}/{body['metadata']['name']}"
                if target in self.objects:
                    raise k.Conflict(409, "already exists")
                self.put(target, body)
                return copy.deepcopy(self.objects[target])
            if method == "PUT" and path.endswith("/status") and path.removesuffix("/status") in self.objects:
                return self._put_status(path.removesuffix("/status"), body)
            if method == "PATCH" and path.endswith("/status") and path.removesuffix("/status") in self.objects:
                return self._patch_status(path.removesuffix("/status"), body)
            if path not in self.objects:
                raise k.NotFound(404, f"{path} not found")
            current = self.objects[path]
            if method == "DELETE":
                return self.objects.pop(path)
            if method == "PUT":
                sent = (body.get("metadata") or {}).get("resourceVersion")
                if sent != current["metadata"]["resourceVersion"]:
                    raise k.Conflict(409, "the object has been modified")
                self.put(path, body)
            elif method == "PATCH":
                obj = copy.deepcopy(current)
                if content_type == "application/json-patch+json":
                    _json_patch(obj, body)
                else:
                    _merge(obj, body)
                self.put(path, obj)
            else:
                raise NotImplementedError(method)
            return copy.deepcopy(self.objects[path])
