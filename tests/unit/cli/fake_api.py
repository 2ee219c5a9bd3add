"""An in-memory API server for CLI tests: the `webhook.cli.api.Api` protocol over stored objects.

Understands collection and object paths (namespaced or across namespaces), `labelSelector` (k=v, k!=v,
k), `fieldSelector` (metadata.name / metadata.namespace), POST, merge PATCH, DELETE, `dryRun=All`, and
fixed answers for anything else (discovery, the visibility API, server-side Tables) via `answers`.
Beside it, the clock the CLI runs on in these tests (`NOW`, `ago`) and what one run gives back (`Result`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook import kube

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def ago(**kw: float) -> str:
    return (NOW - timedelta(**kw)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Result:
    code: int
    out: str
    err: str


_PATH = re.compile(r"^/(api/v1|apis/[^/]+/[^/]+)(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?$")


def _selector_matches(selector: str, labels: Mapping[str, str]) -> bool:
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term not in labels:
            return False
    return True


def _fields_match(selector: str, obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    for term in filter(None, selector.split(",")):
        key, value = term.replace("==", "=").split("=", 1)
        if str(meta.get(key.removeprefix("metadata."), "")) != value:
            return False
    return True


class FakeApi:
    def __init__(self, *objects: Mapping[str, Any], answers: Mapping[str, Any] | None = None) -> None:
        self.store: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.answers: dict[str, Any] = dict(answers or {})
        self.calls: list[tuple[str, str, Any]] = []
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any], plural: str | None = None) -> None:
        meta = obj["metadata"]
        gv = obj["apiVersion"]
        base = f"api/{gv}" if "/" not in gv else f"apis/{gv}"
        self.store[(base, plural or obj["kind"].lower() + "s", meta.get("namespace", ""), meta["name"])] = (
            copy.deepcopy(dict(obj))
        )

    def get(self, base: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.store.get((base, plural, namespace, name))

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]:
        query = dict(query or {})
        self.calls.append((method, path, query))
        if path in self.answers:
            answer = self.answers[path]
            if isinstance(answer, Exception):
                raise answer
            return copy.deepcopy(answer)  # type: ignore[no-any-return]
        m = _PATH.match(path)
        if not m:
            raise kube.NotFound(404, "the server could not find the requested resource")
        base, namespace, plural, name = m.group(1), m.group(2) or "", m.group(3), m.group(4)
        dry = query.get("dryRun") == "All"
        if method == "GET" and name is None:
            items = [
                copy.deepcopy(o)
                for (b, p, ns, _), o in sorted(self.store.items())
                if b == base
                and p == plural
                and (not namespace or ns == namespace)
                and _selector_matches(query.get("labelSelector", ""), (o["metadata"].get("labels") or {}))
                and _fields_match(query.get("fieldSelector", ""), o)
            ]
            return {"kind": "List", "metadata": {"resourceVersion": "1"}, "items": items}
        if method == "POST":
            key = (base, plural, namespace, body["metadata"]["name"])
            if key in self.store:
                raise kube.Conflict(409, f'{plural} "{body["metadata"]["name"]}" already exists')
            obj = copy.deepcopy(body)
            obj["metadata"].setdefault("creationTimestamp", "2025-01-01T00:00:00Z")
            if not dry:
                self.store[key] = obj
            return copy.deepcopy(obj)
        key = (base, plural, namespace, name or "")
        if key not in self.store:
            group = base.split("/")[1] if base.startswith("apis/") else ""
            raise kube.NotFound(404, f'{plural}{"." + group if group else ""} "{name}" not found')
        if method == "GET":
            return copy.deepcopy(self.store[key])
        if method == "DELETE":
            return self.store[key] if dry else self.store.pop(key)
        if method == "PATCH":
            obj = copy.deepcopy(self.store[key])
            _merge(obj, body)
            if not dry:
                self.store[key] = obj
            return copy.deepcopy(obj)
        raise NotImplementedError(method)


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
