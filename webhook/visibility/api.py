"""The visibility API's wire format: group, versions, discovery documents, summaries and Status errors.

`visibility.kueue.x-k8s.io` v1beta2 and v1beta1 share one schema (upstream's `apis/visibility/*/types.go`,
kueue v0.19.2); only the `apiVersion` differs. Four resources are served, as upstream's storage map
(`pkg/visibility/storage/storage.go`) installs them: `clusterqueues` and `localqueues` exist only to
carry their `pendingworkloads` subresource, the one thing a client can `get`. Errors are
`meta/v1 Status` objects in the API server's words (`k8s.io/apimachinery/pkg/api/errors`).

The same server also serves a group of ours, `visibility.pykueue.io` `v1alpha1` (not upstream's:
upstream asks #1526, #13854, #13159): a LocalQueue's `limits` and its `pendingworkloads` with
estimated admission times. It is a separate group so that upstream's group keeps exactly
upstream's discovery and OpenAPI; its own APIService routes it to the same Service.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "AGGREGATED_DISCOVERY_TYPE",
    "DEFAULT_LIMIT",
    "GROUP",
    "GROUPS",
    "KUEUE",
    "LIMITS_KIND",
    "MAX_LIMIT",
    "PREFERRED_VERSION",
    "PYKUEUE",
    "PYKUEUE_GROUP",
    "PYKUEUE_VERSION",
    "RESOURCES",
    "SUMMARY_KIND",
    "VERSIONS",
    "ApiGroup",
    "Resource",
    "aggregated_discovery",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "bad_request",
    "forbidden",
    "forbidden_path",
    "method_not_allowed",
    "not_found",
    "resource_not_found",
    "status",
    "unauthorized",
]

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")  # highest priority first, as upstream's PrioritizedVersions
PREFERRED_VERSION = VERSIONS[0]
SUMMARY_KIND = "PendingWorkloadsSummary"
#: The media type of aggregated discovery, as clients ask for it and as it is answered.
AGGREGATED_DISCOVERY_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
#: Upstream's DefaultPendingWorkloadsLimit and MaxPendingWorkloadsLimit (pkg/constants/constants.go).
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000


class Resource(NamedTuple):
    """One entry of a group-version's APIResourceList."""

    name: str
    singular_name: str
    namespaced: bool
    verbs: tuple[str, ...]
    kind: str = SUMMARY_KIND


class ApiGroup(NamedTuple):
    """A group this server serves: its versions (preferred first) and resources."""

    name: str
    versions: tuple[str, ...]
    resources: tuple[Resource, ...]


RESOURCES = (
    Resource("clusterqueues", "clusterqueue", False, ()),
    Resource("clusterqueues/pendingworkloads", "", False, ("get",)),
    Resource("localqueues", "localqueue", True, ()),
    Resource("localqueues/pendingworkloads", "", True, ("get",)),
)
KUEUE = ApiGroup(GROUP, VERSIONS, RESOURCES)

PYKUEUE_GROUP = "visibility.pykueue.io"
PYKUEUE_VERSION = "v1alpha1"
LIMITS_KIND = "LocalQueueLimits"
#: Namespaced only: what a namespace's users may read about their own LocalQueues.
PYKUEUE = ApiGroup(
    PYKUEUE_GROUP,
    (PYKUEUE_VERSION,),
    (
        Resource("localqueues", "localqueue", True, (), LIMITS_KIND),
        Resource("localqueues/limits", "", True, ("get",), LIMITS_KIND),
        Resource("localqueues/pendingworkloads", "", True, ("get",)),
    ),
)
GROUPS = (KUEUE, PYKUEUE)


def _group_version(group: ApiGroup, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group.name}/{version}", "version": version}


def api_group(group: ApiGroup = KUEUE) -> dict[str, Any]:
    """`GET /apis/<group>`."""
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group.name,
        "versions": [_group_version(group, v) for v in group.versions],
        "preferredVersion": _group_version(group, group.versions[0]),
    }


def api_group_list() -> dict[str, Any]:
    """`GET /apis` in the legacy form (the generic API server writes no apiVersion here)."""
    groups = []
    for g in GROUPS:
        group = api_group(g)
        del group["kind"], group["apiVersion"]
        groups.append(group)
    return {"kind": "APIGroupList", "groups": groups}


def aggregated_discovery() -> dict[str, Any]:
    """`GET /apis` as `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`, what the aggregator asks for first
    (it keeps the one group-version each APIService names): each top-level resource with its subresources."""
    items = []
    for group in GROUPS:
        resources = []
        for r in group.resources:
            if "/" in r.name:
                continue
            subresources = [
                {
                    "subresource": s.name.split("/", 1)[1],
                    "responseKind": {"group": "", "version": "", "kind": s.kind},
                    "verbs": list(s.verbs),
                }
                for s in group.resources
                if s.name.startswith(f"{r.name}/")
            ]
            resources.append(
                {
                    "resource": r.name,
                    "responseKind": {"group": "", "version": "", "kind": r.kind},
                    "scope": "Namespaced" if r.namespaced else "Cluster",
                    "singularResource": r.singular_name,
                    "verbs": list(r.verbs),
                    "subresources": subresources,
                }
            )
        versions = [{"version": v, "resources": resources, "freshness": "Current"} for v in group.versions]
        items.append({"metadata": {"name": group.name}, "versions": versions})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}


def api_resource_list(version: str, group: ApiGroup = KUEUE) -> dict[str, Any]:
    """`GET /apis/<group>/<version>`."""
    resources = [
        {
            "name": r.name,
            "singularName": r.singular_name,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        for r in group.resources
    ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group.name}/{version}",
        "resources": resources,
    }


# -- errors (meta/v1 Status) ----------------------------------------------------------------------


def status(code: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A failure `Status` as the API server writes it."""
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        out["details"] = dict(details)
    out["code"] = code
    return out


def not_found(resource: str, name: str, group: str = GROUP) -> dict[str, Any]:
    """`errors.NewNotFound(visibility.Resource(resource), name)`: upstream names the singular resource."""
    return status(
        404, "NotFound", f'{resource}.{group} "{name}" not found', {"name": name, "group": group, "kind": resource}
    )


def bad_request(message: str) -> dict[str, Any]:
    return status(400, "BadRequest", message)


def resource_not_found() -> dict[str, Any]:
    """A path the group does not serve."""
    return status(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed() -> dict[str, Any]:
    return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def unauthorized() -> dict[str, Any]:
    return status(401, "Unauthorized", "Unauthorized")


def forbidden(
    *,
    user: str,
    verb: str,
    resource: str,
    subresource: str,
    name: str,
    namespace: str,
    reason: str = "",
    group: str = GROUP,
) -> dict[str, Any]:
    """The authorization filter's refusal (`responsewriters.Forbidden`), for a resource request."""
    full = f"{resource}/{subresource}" if subresource else resource
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    why = f'User "{user}" cannot {verb} resource "{full}" in API group "{group}" {where}'
    if reason:
        why = f"{why}: {reason}"
    message = f'{resource}.{group} "{name}" is forbidden: {why}' if name else f"{resource}.{group} is forbidden: {why}"
    details: dict[str, Any] = {"group": group, "kind": resource}
    if name:
        details = {"name": name, **details}
    return status(403, "Forbidden", message, details)


def forbidden_path(*, user: str, verb: str, path: str) -> dict[str, Any]:
    """The refusal of a non-resource request (discovery, OpenAPI)."""
    return status(403, "Forbidden", f'forbidden: User "{user}" cannot {verb} path "{path}"')
