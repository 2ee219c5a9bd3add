"""The role hash of a pod: which pods of a group are interchangeable members of one podSet.

Shared by the pod webhook (which stamps `kueue.x-k8s.io/role-hash`) and the pod-group reconciler
(which names group podSets after it). Mirrors `SpecShape`, `ContainersShape` and `GenerateRoleHash`
in `pkg/util/pod/pod.go` at upstream commit ff69552e79.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["role_hash", "spec_shape"]

_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _sorted_map(value: Any) -> Any:
    """Go marshals maps with sorted keys; the API server already does, but tests may not."""
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def _containers_shape(containers: Any) -> list[dict[str, Any]] | None:
    if not containers:
        return None
    return [
        {
            "ports": ctr.get("ports"),
            "resources": {"requests": _sorted_map((ctr.get("resources") or {}).get("requests"))},
        }
        for ctr in containers
    ]


def spec_shape(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a pod spec that make two pods interchangeable members of one role."""
    shape: dict[str, Any] = {
        "affinity": spec.get("affinity"),
        "containers": _containers_shape(spec.get("containers")),
        "initContainers": _containers_shape(spec.get("initContainers")),
        "nodeSelector": _sorted_map(spec.get("nodeSelector")),
        "overhead": _sorted_map(spec.get("overhead")),
        "priority": spec.get("priority"),
        "resourceClaims": spec.get("resourceClaims"),
        "runtimeClassName": spec.get("runtimeClassName"),
        "tolerations": spec.get("tolerations"),
        "topologySpreadConstraints": spec.get("topologySpreadConstraints"),
    }
    if spec.get("resources") is not None:
        shape["resources"] = _sorted_map(spec["resources"].get("requests"))
    return dict(sorted(shape.items()))


def role_hash(pod: Mapping[str, Any]) -> str:
    """First 8 hex digits of SHA-256 over the shape, serialized byte-for-byte like Go's encoding/json."""
    text = orjson.dumps({"spec": spec_shape(pod.get("spec") or {})}).decode()
    for char, escaped in _GO_ESCAPES.items():
        text = text.replace(char, escaped)
    return hashlib.sha256(text.encode()).hexdigest()[:8]
