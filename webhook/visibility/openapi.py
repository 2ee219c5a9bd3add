"""OpenAPI v2 and v3 documents of the visibility API, as the aggregator and kubectl read them.

Same paths, operation ids, parameters and definition names as the documents upstream's generic API
server builds from its generated definitions (`apis/visibility/openapi`, `pkg/visibility/server.go`,
kueue v0.19.2), so the aggregated `/openapi/v2` and `/openapi/v3` of a cluster look alike whichever
server answers. Every `$ref` resolves inside the document itself: the aggregator merges it into the
cluster's, and kubectl refuses a merged document with a dangling reference. Descriptions are ours.
Our own group (`visibility.pykueue.io`) is described alongside, under `io.pykueue.visibility.*`
definitions, its own tags and operation ids, so nothing of upstream's group changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from webhook.visibility.api import GROUP, GROUPS, LIMITS_KIND, SUMMARY_KIND, VERSIONS, ApiGroup

__all__ = ["TITLE", "etag", "v2", "v3_document", "v3_documents", "v3_index"]

TITLE = "Kueue visibility-server"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_MEDIA = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]


def _kueue(version: str, kind: str) -> str:
    return f"io.k8s.kueue.visibility.{version}.{kind}"


def _ours(version: str, kind: str) -> str:
    return f"io.pykueue.visibility.{version}.{kind}"


def _stems(group: str) -> tuple[str, str]:
    """The tag and operation-id stems of a group, as the generic API server derives them from its name."""
    words = [w.capitalize() for w in group.replace("-", ".").split(".")]
    return words[0].lower() + "".join(words[1:]), "".join(words)


def _str() -> dict[str, Any]:
    return {"type": "string"}


def _int(fmt: str) -> dict[str, Any]:
    return {"type": "integer", "format": fmt}


def _map() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": {"type": "string"}}


def _pending_workload(ref: str) -> dict[str, Any]:
    return {
        "description": "A pending workload and where it stands in its queues.",
        "type": "object",
        "required": ["priority", "localQueueName", "positionInClusterQueue", "positionInLocalQueue"],
        "properties": {
            "localQueueName": {**_str(), "description": "The LocalQueue the workload was submitted to."},
            "metadata": {"$ref": f"{ref}{_META}.ObjectMeta"},
            "positionInClusterQueue": {**_int("int32"), "description": "0-based rank in its ClusterQueue."},
            "positionInLocalQueue": {**_int("int32"), "description": "0-based rank in its LocalQueue."},
            "priority": {**_int("int32"), "description": "The workload's priority."},
        },
    }


def _kind(
    ref: str,
    description: str,
    required: list[str],
    properties: dict[str, Any],
    group_version_kind: tuple[str, str, str] | None,
) -> dict[str, Any]:
    """A kind the API serves: `properties` after apiVersion, kind and metadata, and, when the
    document names its kinds, the group, version and kind it is served as."""
    schema: dict[str, Any] = {
        "description": description,
        "type": "object",
        "required": required,
        "properties": {
            "apiVersion": _str(),
            "kind": _str(),
            "metadata": {"$ref": f"{ref}{_META}.ObjectMeta"},
            **properties,
        },
    }
    if group_version_kind is not None:
        group, kind, version = group_version_kind
        schema["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    return schema


def _definitions(ref: str, version_kinds: bool) -> dict[str, dict[str, Any]]:
    """Every schema the documents name; `ref` is the prefix a `$ref` takes (v2 or v3)."""
    meta: dict[str, dict[str, Any]] = {
        f"{_META}.Time": {"type": "string", "format": "date-time", "description": "RFC 3339 time, seconds precision."},
        f"{_META}.FieldsV1": {"type": "object", "description": "A set of fields, in the server-side apply encoding."},
        f"{_META}.ManagedFieldsEntry": {
            "type": "object",
            "properties": {
                "apiVersion": _str(),
                "fieldsType": _str(),
                "fieldsV1": {"$ref": f"{ref}{_META}.FieldsV1"},
                "manager": _str(),
                "operation": _str(),
                "subresource": _str(),
                "time": {"$ref": f"{ref}{_META}.Time"},
            },
        },
        f"{_META}.OwnerReference": {
            "type": "object",
            "required": ["apiVersion", "kind", "name", "uid"],
            "properties": {
                "apiVersion": _str(),
                "blockOwnerDeletion": {"type": "boolean"},
                "controller": {"type": "boolean"},
                "kind": _str(),
                "name": _str(),
                "uid": _str(),
            },
            "x-kubernetes-map-type": "atomic",
        },
        f"{_META}.ObjectMeta": {
            "type": "object",
            "properties": {
                "annotations": _map(),
                "creationTimestamp": {"$ref": f"{ref}{_META}.Time"},
                "deletionGracePeriodSeconds": _int("int64"),
                "deletionTimestamp": {"$ref": f"{ref}{_META}.Time"},
                "finalizers": {
                    "type": "array",
                    "items": _str(),
                    "x-kubernetes-list-type": "set",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "generateName": _str(),
                "generation": _int("int64"),
                "labels": _map(),
                "managedFields": {
                    "type": "array",
                    "items": {"$ref": f"{ref}{_META}.ManagedFieldsEntry"},
                    "x-kubernetes-list-type": "atomic",
                },
                "name": _str(),
                "namespace": _str(),
                "ownerReferences": {
                    "type": "array",
                    "items": {"$ref": f"{ref}{_META}.OwnerReference"},
                    "x-kubernetes-list-map-keys": ["uid"],
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "uid",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "resourceVersion": _str(),
                "selfLink": _str(),
                "uid": _str(),
            },
        },
        f"{_META}.APIResource": {
            "type": "object",
            "required": ["name", "singularName", "namespaced", "kind", "verbs"],
            "properties": {
                "categories": {"type": "array", "items": _str()},
                "group": _str(),
                "kind": _str(),
                "name": _str(),
                "namespaced": {"type": "boolean"},
                "shortNames": {"type": "array", "items": _str()},
                "singularName": _str(),
                "storageVersionHash": _str(),
                "verbs": {"type": "array", "items": _str()},
                "version": _str(),
            },
        },
        f"{_META}.APIResourceList": {
            "type": "object",
            "required": ["groupVersion", "resources"],
            "properties": {
                "apiVersion": _str(),
                "groupVersion": _str(),
                "kind": _str(),
                "resources": {"type": "array", "items": {"$ref": f"{ref}{_META}.APIResource"}},
            },
        },
        f"{_META}.GroupVersionForDiscovery": {
            "type": "object",
            "required": ["groupVersion", "version"],
            "properties": {"groupVersion": _str(), "version": _str()},
        },
        f"{_META}.ServerAddressByClientCIDR": {
            "type": "object",
            "required": ["clientCIDR", "serverAddress"],
            "properties": {"clientCIDR": _str(), "serverAddress": _str()},
        },
        f"{_META}.APIGroup": {
            "type": "object",
            "required": ["name", "versions"],
            "properties": {
                "apiVersion": _str(),
                "kind": _str(),
                "name": _str(),
                "preferredVersion": {"$ref": f"{ref}{_META}.GroupVersionForDiscovery"},
                "serverAddressByClientCIDRs": {
                    "type": "array",
                    "items": {"$ref": f"{ref}{_META}.ServerAddressByClientCIDR"},
                },
                "versions": {"type": "array", "items": {"$ref": f"{ref}{_META}.GroupVersionForDiscovery"}},
            },
        },
        f"{_META}.APIGroupList": {
            "type": "object",
            "required": ["groups"],
            "properties": {
                "apiVersion": _str(),
                "groups": {"type": "array", "items": {"$ref": f"{ref}{_META}.APIGroup"}},
                "kind": _str(),
            },
        },
    }
    out = dict(meta)
    for version in VERSIONS:
        item = _kueue(version, "PendingWorkload")
        out[item] = _pending_workload(ref)
        out[_kueue(version, "PendingWorkloadsSummary")] = _kind(
            ref,
            "A page of the pending workloads of a ClusterQueue or a LocalQueue, in queue order.",
            ["items"],
            {"items": {"type": "array", "items": {"$ref": f"{ref}{item}"}}},
            (GROUP, SUMMARY_KIND, version) if version_kinds else None,
        )
    out.update(_our_definitions(ref, version_kinds))
    return out


def _quantity(what: str) -> dict[str, Any]:
    return {"type": "string", "description": f"{what}, as a resource quantity."}


def _our_definitions(ref: str, version_kinds: bool) -> dict[str, dict[str, Any]]:
    """`visibility.pykueue.io` kinds: a LocalQueue's limits, and its pending workloads with estimates."""
    out: dict[str, dict[str, Any]] = {}
    for group in (g for g in GROUPS if g.name != GROUP):
        for version in group.versions:
            d = {
                name: _ours(version, name)
                for name in (
                    "ResourceLimits",
                    "FlavorLimits",
                    LIMITS_KIND,
                    "EstimatedAdmission",
                    "Estimation",
                    "PendingWorkload",
                    SUMMARY_KIND,
                )
            }
            out[d["ResourceLimits"]] = {
                "description": "One resource of a flavor of the LocalQueue's ClusterQueue.",
                "type": "object",
                "required": [
                    "name",
                    "nominalQuota",
                    "used",
                    "usedByLocalQueue",
                    "available",
                    "borrowable",
                    "maxAvailable",
                ],
                "properties": {
                    "name": {**_str(), "description": "The resource."},
                    "nominalQuota": _quantity("The ClusterQueue's nominal quota"),
                    "borrowingLimit": _quantity(
                        "Most the ClusterQueue may borrow (absent: no limit; 0 outside a cohort)"
                    ),
                    "lendingLimit": _quantity("Most the ClusterQueue lends to its cohort (absent: no limit)"),
                    "used": _quantity("Quota reserved by all of the ClusterQueue's workloads"),
                    "usedByLocalQueue": _quantity("Quota reserved by this LocalQueue's workloads"),
                    "available": _quantity("What a workload could get now without preemption, borrowing included"),
                    "borrowable": _quantity("The part of `available` above the ClusterQueue's unused nominal quota"),
                    "maxAvailable": _quantity("The most the ClusterQueue could hold, whatever the usage"),
                },
            }
            out[d["FlavorLimits"]] = {
                "description": "A flavor of the LocalQueue's ClusterQueue.",
                "type": "object",
                "required": ["name", "resources"],
                "properties": {
                    "name": _str(),
                    "resources": {"type": "array", "items": {"$ref": f"{ref}{d['ResourceLimits']}"}},
                },
            }
            out[d["EstimatedAdmission"]] = {
                "description": "When the workload is expected to get quota.",
                "type": "object",
                "required": ["waitSeconds", "time"],
                "properties": {"waitSeconds": _int("int64"), "time": {"$ref": f"{ref}{_META}.Time"}},
            }
            seconds = _int("int64")
            percentiles = {"type": "object", "properties": {"p50Seconds": seconds, "p90Seconds": seconds}}
            out[d["Estimation"]] = {
                "description": "How the estimates were made, what they started from, how far past ones were "
                "off, and why there are none when the ClusterQueue cannot admit.",
                "type": "object",
                "required": ["method", "basis", "accuracy"],
                "properties": {
                    "method": _str(),
                    "basis": {
                        "description": "The ClusterQueue's workloads holding quota, by what tells when they end.",
                        "type": "object",
                        "properties": {
                            "holdingQuota": _int("int64"),
                            "withMaximumExecutionTime": _int("int64"),
                            "fromObservedRuns": _int("int64"),
                            "withoutBasis": _int("int64"),
                            "observedRuns": _int("int64"),
                            "observedMedianSeconds": seconds,
                        },
                    },
                    "accuracy": {
                        "description": "Absolute errors of past estimates at the ClusterQueue's recent admissions.",
                        "type": "object",
                        "properties": {
                            "admissions": _int("int64"),
                            "unknownAtFirst": _int("int64"),
                            "firstEstimate": percentiles,
                            "latestEstimate": percentiles,
                        },
                    },
                    "unknownReason": _str(),
                },
            }
            item = _pending_workload(ref)
            item["description"] = "A pending workload, where it stands and when it may be admitted (null: unknown)."
            item["properties"]["estimatedAdmission"] = {"$ref": f"{ref}{d['EstimatedAdmission']}"}
            item["properties"]["estimatedAdmissionUnknownReason"] = _str()
            out[d["PendingWorkload"]] = item
            out[d[LIMITS_KIND]] = _kind(
                ref,
                "What the users of a LocalQueue can draw on now, per flavor and resource of its ClusterQueue.",
                ["clusterQueue", "flavors"],
                {
                    "clusterQueue": _str(),
                    "cohort": _str(),
                    "flavors": {"type": "array", "items": {"$ref": f"{ref}{d['FlavorLimits']}"}},
                },
                (group.name, LIMITS_KIND, version) if version_kinds else None,
            )
            out[d[SUMMARY_KIND]] = _kind(
                ref,
                "A page of a LocalQueue's pending workloads, in queue order, with estimates.",
                ["items", "estimation"],
                {
                    "estimation": {"$ref": f"{ref}{d['Estimation']}"},
                    "items": {"type": "array", "items": {"$ref": f"{ref}{d['PendingWorkload']}"}},
                },
                (group.name, SUMMARY_KIND, version) if version_kinds else None,
            )
    return out


def _query(name: str) -> dict[str, Any]:
    return {
        "uniqueItems": True,
        "type": "integer",
        "name": name,
        "in": "query",
        "description": {
            "limit": "Most items to return (default 1000, at most 100000).",
            "offset": "Items to skip from the head of the queue.",
        }[name],
    }


class _Read(NamedTuple):
    """One GET of a group version: the resource list (kind "") or a subresource read."""

    path: str
    op_id: str
    schema: str
    tag: str
    group: str
    kind: str = ""
    namespaced: bool = False
    paged: bool = True


def _paths(group: ApiGroup, version: str) -> list[_Read]:
    """The reads of one group version."""
    tag_stem, op_stem = _stems(group.name)
    tag = f"{tag_stem}_{version}"
    op = f"{op_stem}{version.capitalize()}"
    base = f"/apis/{group.name}/{version}"
    out = [_Read(f"{base}/", f"get{op}APIResources", f"{_META}.APIResourceList", tag, group.name)]
    if group.name == GROUP:
        summary = _kueue(version, SUMMARY_KIND)
        return [
            *out,
            _Read(
                f"{base}/clusterqueues/{{name}}/pendingworkloads",
                f"read{op}PendingWorkloadsSummaryPendingworkloads",
                summary,
                tag,
                GROUP,
                SUMMARY_KIND,
            ),
            _Read(
                f"{base}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads",
                f"read{op}NamespacedPendingWorkloadsSummaryPendingworkloads",
                summary,
                tag,
                GROUP,
                SUMMARY_KIND,
                True,
            ),
        ]
    return [
        *out,
        _Read(
            f"{base}/namespaces/{{namespace}}/localqueues/{{name}}/limits",
            f"read{op}NamespacedLocalQueueLimitsLimits",
            _ours(version, LIMITS_KIND),
            tag,
            group.name,
            LIMITS_KIND,
            True,
            paged=False,
        ),
        _Read(
            f"{base}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads",
            f"read{op}NamespacedPendingWorkloadsSummaryPendingworkloads",
            _ours(version, SUMMARY_KIND),
            tag,
            group.name,
            SUMMARY_KIND,
            True,
        ),
    ]


_DESCRIPTIONS = {
    SUMMARY_KIND: "read the pending workloads, in queue order",
    LIMITS_KIND: "read what the LocalQueue's users can draw on now",
}


def v2() -> dict[str, Any]:
    """`GET /openapi/v2`."""
    ref = "#/definitions/"
    parameters = {
        "limit-visibility": _query("limit"),
        "offset-visibility": _query("offset"),
        "namespace-visibility": {
            "uniqueItems": True,
            "type": "string",
            "description": "The LocalQueue's namespace.",
            "name": "namespace",
            "in": "path",
            "required": True,
        },
        "pretty-visibility": {
            "uniqueItems": True,
            "type": "string",
            "description": "'true' indents the answer.",
            "name": "pretty",
            "in": "query",
        },
    }
    common = {"consumes": ["application/json"], "produces": _MEDIA, "schemes": ["https"]}
    paths: dict[str, Any] = {
        "/apis/": {
            "get": {
                **common,
                "tags": ["apis"],
                "description": "the API groups served here",
                "operationId": "getAPIVersions",
                "responses": {
                    "200": {"description": "OK", "schema": {"$ref": f"{ref}{_META}.APIGroupList"}},
                    "401": {"description": "Unauthorized"},
                },
            }
        },
    }
    for group in GROUPS:
        tag_stem, op_stem = _stems(group.name)
        paths[f"/apis/{group.name}/"] = {
            "get": {
                **common,
                "tags": [tag_stem],
                "description": "the visibility group",
                "operationId": f"get{op_stem}APIGroup",
                "responses": {
                    "200": {"description": "OK", "schema": {"$ref": f"{ref}{_META}.APIGroup"}},
                    "401": {"description": "Unauthorized"},
                },
            }
        }
        for version in group.versions:
            for read in _paths(group, version):
                op: dict[str, Any] = {
                    **common,
                    "tags": [read.tag],
                    "operationId": read.op_id,
                    "responses": {
                        "200": {"description": "OK", "schema": {"$ref": f"{ref}{read.schema}"}},
                        "401": {"description": "Unauthorized"},
                    },
                }
                if not read.kind:
                    op["description"] = "the resources of this group version"
                    paths[read.path] = {"get": op}
                    continue
                op.update(
                    {
                        "consumes": ["*/*"],
                        "description": _DESCRIPTIONS[read.kind],
                        "x-kubernetes-action": "get",
                        "x-kubernetes-group-version-kind": {"group": read.group, "version": version, "kind": read.kind},
                    }
                )
                params: list[dict[str, Any]] = [{"$ref": "#/parameters/limit-visibility"}] if read.paged else []
                params.append(
                    {
                        "uniqueItems": True,
                        "type": "string",
                        "description": "name of the queue",
                        "name": "name",
                        "in": "path",
                        "required": True,
                    }
                )
                if read.namespaced:
                    params.append({"$ref": "#/parameters/namespace-visibility"})
                if read.paged:
                    params.append({"$ref": "#/parameters/offset-visibility"})
                params.append({"$ref": "#/parameters/pretty-visibility"})
                paths[read.path] = {"get": op, "parameters": params}
    return {
        "swagger": "2.0",
        "info": {"title": TITLE, "version": "v0.0.0"},
        "paths": paths,
        "definitions": _definitions(ref, True),
        "parameters": parameters,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            }
        },
        "security": [{"BearerToken": []}],
    }


def _v3_op(op_id: str, tag: str, schema: str) -> dict[str, Any]:
    content = {media: {"schema": {"$ref": f"#/components/schemas/{schema}"}} for media in _MEDIA}
    return {
        "tags": [tag],
        "operationId": op_id,
        "responses": {"200": {"description": "OK", "content": content}, "401": {"description": "Unauthorized"}},
    }


def _v3_param(name: str, where: str, kind: str, description: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "in": where,
        "description": description,
        "schema": {"type": kind, "uniqueItems": True},
    }
    if where == "path":
        out["required"] = True
    return out


def _v3_paths(path_key: str) -> dict[str, Any]:
    if path_key == "apis":
        return {"/apis/": {"get": _v3_op("getAPIVersions", "apis", f"{_META}.APIGroupList")}}
    for group in GROUPS:
        if path_key == f"apis/{group.name}":
            tag_stem, op_stem = _stems(group.name)
            return {f"/apis/{group.name}/": {"get": _v3_op(f"get{op_stem}APIGroup", tag_stem, f"{_META}.APIGroup")}}
    _, group_name, version = path_key.split("/")
    group = next(g for g in GROUPS if g.name == group_name)
    out: dict[str, Any] = {}
    for read in _paths(group, version):
        op = _v3_op(read.op_id, read.tag, read.schema)
        if not read.kind:
            out[read.path] = {"get": op}
            continue
        op.update(
            {
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": {"group": read.group, "version": version, "kind": read.kind},
            }
        )
        params = [_v3_param("limit", "query", "integer", _query("limit")["description"])] if read.paged else []
        params.append(_v3_param("name", "path", "string", "name of the queue"))
        if read.namespaced:
            params.append(_v3_param("namespace", "path", "string", "The LocalQueue's namespace."))
        if read.paged:
            params.append(_v3_param("offset", "query", "integer", _query("offset")["description"]))
        params.append(_v3_param("pretty", "query", "string", "'true' indents the answer."))
        out[read.path] = {"get": op, "parameters": params}
    return out


def _referenced(schemas: Mapping[str, Any], roots: list[str]) -> dict[str, Any]:
    """The schemas reachable from `roots`, as upstream lists per document only what it uses."""
    prefix = "#/components/schemas/"
    seen: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen[name] = schemas[name]
        text = orjson.dumps(schemas[name]).decode()
        for part in text.split(prefix)[1:]:
            todo.append(part.split('"', 1)[0])
    return dict(sorted(seen.items()))


def v3_document(path_key: str) -> dict[str, Any] | None:
    """`GET /openapi/v3/<path_key>` (`apis`, `apis/<group>`, `apis/<group>/<version>`); None for others."""
    if path_key not in _v3_keys():
        return None
    paths = _v3_paths(path_key)
    roots = [
        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        for item in paths.values()
        for op in [item["get"]]
    ]
    schemas = _referenced(_definitions("#/components/schemas/", True), roots)
    return {
        "openapi": "3.0.0",
        "info": {"title": TITLE, "version": "v0.0.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _v3_keys() -> list[str]:
    return ["apis", *(key for g in GROUPS for key in (f"apis/{g.name}", *(f"apis/{g.name}/{v}" for v in g.versions)))]


def etag(body: bytes) -> str:
    """The hash the v3 index links with and the ETag every document carries (upper-case SHA-512 hex)."""
    return hashlib.sha512(body).hexdigest().upper()


def v3_index(documents: Mapping[str, bytes]) -> dict[str, Any]:
    """`GET /openapi/v3`: where each document lives, with its hash, so clients cache them."""
    return {
        "paths": {
            key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={etag(documents[key])}"} for key in sorted(documents)
        }
    }


def v3_documents() -> dict[str, bytes]:
    """Every v3 document, serialised once."""
    out = {}
    for key in _v3_keys():
        doc = v3_document(key)
        assert doc is not None
        out[key] = orjson.dumps(doc)
    return out
