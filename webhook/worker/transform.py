"""The worker's cache transform: what of a watched object is kept in memory.

Upstream sets controller-runtime's `DefaultTransform` to `TransformStripManagedFields`
(`pkg/config/config.go`); we drop a little more where nothing of the worker reads it and no write
sends the cached copy back whole, and share equal strings between objects. Every object the
`Store` holds passes through `compact` (in place, so the dict a watch event hands to the
reconcilers and the core is the one stored).

What is dropped, by kind:

* every kind: `metadata.managedFields` (often half an object; an update without them leaves the
  server's copy alone);
* Jobs and Pods: kubectl's `last-applied-configuration` annotation (a second copy of the whole
  object when users `kubectl apply`); their writes are merge patches, never a PUT of the cached copy;
* Pods: the status the pod reconcilers never read (container statuses, IPs, QoS class).

Workloads keep every field: status writes PUT the cached copy with a new status, and spec updates
PUT it whole. Strings are interned (`sys.intern`): condition types, reasons and messages,
timestamps of the same second, images, namespaces, label values and each object's uid repeated in
its selector and labels then exist once, a third of a cached Job's and Workload's size.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["LAST_APPLIED", "compact"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_POD_STATUS_UNREAD = (
    "containerStatuses",
    "initContainerStatuses",
    "ephemeralContainerStatuses",
    "podIP",
    "podIPs",
    "hostIP",
    "hostIPs",
    "qosClass",
)


def _intern_in_place(node: Any) -> None:
    if isinstance(node, dict):
        for key, val in node.items():
            if type(val) is str:
                node[key] = sys.intern(val)
            elif isinstance(val, (dict, list)):
                _intern_in_place(val)
    elif isinstance(node, list):
        for i, val in enumerate(node):
            if type(val) is str:
                node[i] = sys.intern(val)
            elif isinstance(val, (dict, list)):
                _intern_in_place(val)


def compact(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Trim `obj` (of the Store kind `kind`, a resource plural) in place and return it."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        if kind in ("jobs", "pods"):
            annotations = meta.get("annotations")
            if isinstance(annotations, dict) and LAST_APPLIED in annotations:
                del annotations[LAST_APPLIED]
    if kind == "pods":
        status = obj.get("status")
        if isinstance(status, dict):
            for field in _POD_STATUS_UNREAD:
                status.pop(field, None)
    _intern_in_place(obj)
    return obj
