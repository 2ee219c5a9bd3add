"""The `UsageRecord` CRD of our own group (`pykueue.io`, never Kueue's): one period's usage.

Ours, not upstream's. The leader writes one cluster-scoped UsageRecord per period (an hour by
default), named after its start (`usage-20261127-210000`):

    spec.periodStart, spec.periodEnd   the period, [start, end)
    status.watermark                   usage is complete up to this time
    status.usage[]                     resource-seconds of admitted quota per clusterQueue, cohort,
                                       localQueue, namespace, priorityClass, user, flavor, resource
    status.running[]                   the reservations open at the watermark (uid, workload, since,
                                       amounts by index of their row in usage[]): what was counted
                                       up to the watermark, and what a new leader closes

Amounts are quantities of the resource times seconds (`cpu: "7200"` is two CPU-hours). There is
no status subresource: only the leader writes a record, whole, under its resourceVersion.
`webhook.core.usage` reads and writes the fields; `webhook.api.schema.crds()` installs the CRD.
"""

from __future__ import annotations

from typing import Any

__all__ = ["API_VERSION", "GROUP", "KIND", "PLURAL", "USAGE_LABEL", "VERSION", "crd", "group_crd"]

GROUP = "pykueue.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "UsageRecord"
PLURAL = "usagerecords"
USAGE_LABEL = f"{GROUP}/usage-record"

_DIMENSIONS = ("clusterQueue", "cohort", "localQueue", "namespace", "priorityClass", "user", "flavor", "resource")
_QUANTITY: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    "x-kubernetes-int-or-string": True,
}


def _row(amount_field: str, description: str) -> dict[str, Any]:
    props: dict[str, Any] = {d: {"type": "string", "maxLength": 253} for d in _DIMENSIONS}
    props[amount_field] = {**_QUANTITY, "description": description}
    return {"type": "object", "required": ["clusterQueue", "flavor", "resource", amount_field], "properties": props}


def _schema() -> dict[str, Any]:
    time = {"type": "string", "format": "date-time"}
    return {
        "type": "object",
        "description": "One period's resource-seconds of admitted quota (pykueue usage accounting).",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["periodStart", "periodEnd"],
                "properties": {"periodStart": time, "periodEnd": time},
            },
            "status": {
                "type": "object",
                "properties": {
                    "watermark": {**time, "description": "Usage is counted up to this time."},
                    "usage": {
                        "type": "array",
                        "items": _row("resourceSeconds", "Quantity of the resource times seconds it was held."),
                    },
                    "running": {
                        "type": "array",
                        "description": "Reservations open at the watermark.",
                        "items": {
                            "type": "object",
                            "required": ["uid", "since"],
                            "properties": {
                                "uid": {"type": "string"},
                                "workload": {"type": "string"},
                                "since": time,
                                "amounts": {
                                    "type": "object",
                                    "description": "Quantity held, by index of its row in usage.",
                                    "additionalProperties": _QUANTITY,
                                },
                            },
                        },
                    },
                },
            },
        },
    }


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition of UsageRecord."""
    columns = [
        {"name": "Start", "type": "string", "jsonPath": ".spec.periodStart", "description": "Period start"},
        {"name": "Watermark", "type": "string", "jsonPath": ".status.watermark", "description": "Counted up to"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return group_crd(KIND, PLURAL, _schema(), columns, short_names=("usage",))


def group_crd(
    kind: str,
    plural: str,
    schema: dict[str, Any],
    columns: list[dict[str, Any]],
    *,
    short_names: tuple[str, ...] = (),
    status_subresource: bool = False,
) -> dict[str, Any]:
    """A cluster-scoped CustomResourceDefinition of our group, one served and stored version."""
    names: dict[str, Any] = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    if short_names:
        names["shortNames"] = list(short_names)
    names["categories"] = ["pykueue"]
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
    }
    if status_subresource:
        version["subresources"] = {"status": {}}
    version["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "names": names, "scope": "Cluster", "versions": [version]},
    }
