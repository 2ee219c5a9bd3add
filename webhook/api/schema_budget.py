"""The `Budget` CRD of our own group (`pykueue.io`, never Kueue's): a spend limit per period.

Ours, not upstream's (kubernetes-sigs/kueue#28 asks for budgets since 2022). Cluster-scoped, like
ClusterQueues and Cohorts: a budget is the platform team's decision about a tenant, and a namespaced
object would be editable by whoever administers the tenant's namespace (the usual `admin` role
aggregates edit rights on namespaced kinds). One Budget covers exactly one of:

    spec.clusterQueue                    a ClusterQueue's Workloads
    spec.cohort                          the Workloads of the ClusterQueues whose spec.cohortName it is
    spec.localQueue {namespace, name}    one LocalQueue's Workloads
    spec.namespace                       a namespace's Workloads

    spec.period                          exactly one of: calendar: Monthly | Weekly (UTC; weeks start
                                         on Monday); every: <ISO 8601 duration> (fixed periods from the
                                         Unix epoch, e.g. PT60S, P1D); rolling: <duration> (the last ...)
    spec.limit                           resourceHours: {resource: quantity per hour, any flavor} or
                                         cost: "1500.00" (with spec.prices)
    spec.prices[]                        {flavor ("*": any), resource, perHour}: as `kubectl kueue usage --price`
    spec.defaultRuntime                  duration charged to a Workload without maximumExecutionTimeSeconds
    spec.runningWorkloads                Continue (default: never stopped by the budget) | Evict

The leader writes `status` (`webhook.worker.budget`); `webhook.core.budget` reads the spec.
"""

from __future__ import annotations

from typing import Any

from webhook.api import schema_types as t
from webhook.api.schema_usage import API_VERSION, GROUP, VERSION, group_crd

__all__ = ["API_VERSION", "CONTROLLER_NAME", "GROUP", "KIND", "PATH", "PLURAL", "VERSION", "crd"]

KIND = "Budget"
PLURAL = "budgets"
PATH = f"/apis/{API_VERSION}/{PLURAL}"
# The admission check controller a ClusterQueue's AdmissionCheck names to have its Workloads checked.
CONTROLLER_NAME = f"{GROUP}/budget"

_DECIMAL = {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"}
_DURATION = {"type": "string", "pattern": r"^P(\d+W)?(\d+D)?(T(\d+H)?(\d+M)?(\d+S)?)?$", "maxLength": 64}
_NAME = {"type": "string", "minLength": 1, "maxLength": 253}


def _one_of(*fields: str) -> str:
    return "[" + ", ".join(f"has(self.{f})" for f in fields) + "].filter(x, x).size() == 1"


def _spec() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["period", "limit"],
        "x-kubernetes-validations": [
            {
                "rule": _one_of("clusterQueue", "cohort", "localQueue", "namespace"),
                "message": "exactly one of clusterQueue, cohort, localQueue, namespace",
            },
            {
                "rule": "!has(self.limit.cost) || (has(self.prices) && size(self.prices) > 0)",
                "message": "a cost limit needs prices",
            },
        ],
        "properties": {
            "clusterQueue": _NAME,
            "cohort": _NAME,
            "namespace": _NAME,
            "localQueue": {
                "type": "object",
                "required": ["namespace", "name"],
                "properties": {"namespace": _NAME, "name": _NAME},
            },
            "period": {
                "type": "object",
                "x-kubernetes-validations": [
                    {
                        "rule": _one_of("calendar", "every", "rolling"),
                        "message": "exactly one of calendar, every, rolling",
                    }
                ],
                "properties": {
                    "calendar": {"type": "string", "enum": ["Monthly", "Weekly"]},
                    "every": _DURATION,
                    "rolling": _DURATION,
                },
            },
            "limit": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": _one_of("resourceHours", "cost"), "message": "exactly one of resourceHours, cost"}
                ],
                "properties": {
                    "resourceHours": {
                        "type": "object",
                        "description": "Per resource (any flavor): a quantity of it held for one hour.",
                        "additionalProperties": t.quantity(),
                    },
                    "cost": {**_DECIMAL, "description": "In the currency of spec.prices."},
                },
            },
            "prices": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["resource", "perHour"],
                    "properties": {
                        "flavor": {"type": "string", "maxLength": 253, "description": '"*" or absent: any flavor'},
                        "resource": _NAME,
                        "perHour": {**_DECIMAL, "description": "Per resource-hour: a core, a GiB or a unit."},
                    },
                },
            },
            "defaultRuntime": _DURATION,
            "runningWorkloads": {"type": "string", "enum": ["Continue", "Evict"], "default": "Continue"},
        },
    }


def _status() -> dict[str, Any]:
    time = {"type": "string", "format": "date-time"}
    return {
        "type": "object",
        "properties": {
            "periodStart": time,
            "resetAt": {**time, "description": "When the period ends (none for a rolling window)."},
            "usedPercent": {"type": "integer", "description": "Most spent + committed of any line, percent."},
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "resource": {"type": "string", "description": 'A resource, or "cost".'},
                        "unit": {"type": "string"},
                        "limit": {"type": "string"},
                        "spent": {"type": "string", "description": "Used in the period (records + since)."},
                        "committed": {
                            "type": "string",
                            "description": "What running Workloads will still use (their remaining runtime).",
                        },
                        "remaining": {"type": "string"},
                    },
                },
            },
            "conditions": t.conditions("Valid: whether the spec is in force.", max_items=8),
        },
    }


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition of Budget."""
    columns = [
        {"name": "Used", "type": "integer", "jsonPath": ".status.usedPercent", "description": "Percent spent"},
        {"name": "Reset", "type": "string", "jsonPath": ".status.resetAt", "description": "Period end"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    schema = {
        "type": "object",
        "description": "A spend limit per period (pykueue budgets).",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _spec(),
            "status": _status(),
        },
    }
    return group_crd(KIND, PLURAL, schema, columns, status_subresource=True)
