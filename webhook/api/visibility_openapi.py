"""OpenAPI v2 and v3 documents of the visibility API, as the aggregator and kubectl read them.

Same paths, operation ids, parameters and definition names as the documents upstream's generic API
server builds from its generated definitions (`apis/visibility/openapi`, `pkg/visibility/server.go`,
kueue v0.19.2), so the aggregated `/openapi/v2` and `/openapi/v3` of a cluster look alike whichever
server answers. Every `$ref` resolves inside the document itself: the aggregator merges it into the
cluster's, and kubectl refuses a merged document with a dangling reference. Descriptions are ours.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from webhook.api.visibility import GROUP, SUMMARY_KIND, VERSIONS

__all__ = ["TITLE", "etag", "v2", "v3_document", "v3_documents", "v3_index"]

TITLE = "Kueue visibility-server"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_TAG_STEM = "visibilityKueueXK8sIo"
_OP_STEM = "VisibilityKueueXK8sIo"
_MEDIA = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]


def _kueue(version: str, kind: str) -> str:
    return f"io.k8s.kueue.visibility.{version}.{kind}"


def _str() -> dict[str, Any]:
    return {"type": "string"}


def _int(fmt: str) -> dict[str, Any]:
    return {"type": "integer", "format": fmt}


def _map() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": {"type": "string"}}


def _definitions(ref: str, version_kinds: bool) -> dict[str, dict[str, Any]]:
    """Every schema the documents name; `ref` is the prefix a `$ref` takes (v2 or v3)."""
    meta: dict[str, dict[str, Any]] = {
        f"{_META}.Time": {"type": "string", "format": "date-time", "description": "RFC 3339 time, seconds precision."},
        f"{_META}.FieldsV1": {"type": "object", "description": "A set of fields, in the server-side apply encoding."},
        f"{_META}.ManagedFieldsEntry": {"type": "object", "properties": {
            "apiVersion": _str(), "fieldsType": _str(), "fieldsV1": {"$ref": f"{ref}{_META}.FieldsV1"},
            "manager": _str(), "operation": _str(), "subresource": _str(), "time": {"$ref": f"{ref}{_META}.Time"}}},
        f"{_META}.OwnerReference": {"type": "object", "required": ["apiVersion", "kind", "name", "uid"],
                                    "properties": {"apiVersion": _str(), "blockOwnerDeletion": {"type": "boolean"},
                                                   "controller": {"type": "boolean"}, "kind": _str(), "name": _str(),
                                                   "uid": _str()},
                                    "x-kubernetes-map-type": "atomic"},
        f"{_META}.ObjectMeta": {"type": "object", "properties": {
            "annotations": _map(), "creationTimestamp": {"$ref": f"{ref}{_META}.Time"},
            "deletionGracePeriodSeconds": _int("int64"), "deletionTimestamp": {"$ref": f"{ref}{_META}.Time"},
            "finalizers": {"type": "array", "items": _str(), "x-kubernetes-list-type": "set",
                           "x-kubernetes-patch-strategy": "merge"},
            "generateName": _str(), "generation": _int("int64"), "labels": _map(),
            "managedFields": {"type": "array", "items": {"$ref": f"{ref}{_META}.ManagedFieldsEntry"},
                              "x-kubernetes-list-type": "atomic"},
            "name": _str(), "namespace": _str(),
            "ownerReferences": {"type": "array", "items": {"$ref": f"{ref}{_META}.OwnerReference"},
                                "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map",
                                "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"},
            "resourceVersion": _str(), "selfLink": _str(), "uid": _str()}},
        f"{_META}.APIResource": {"type": "object", "required": ["name", "singularName", "namespaced", "kind", "verbs"],
                                 "properties": {"categories": {"type": "array", "items": _str()}, "group": _str(),
                                                "kind": _str(), "name": _str(), "namespaced": {"type": "boolean"},
                                                "shortNames": {"type": "array", "items": _str()},
                                                "singularName": _str(), "storageVersionHash": _str(),
                                                "verbs": {"type": "array", "items": _str()}, "version": _str()}},
        f"{_META}.APIResourceList": {"type": "object", "required": ["groupVersion", "resources"], "properties": {
            "apiVersion": _str(), "groupVersion": _str(), "kind": _str(),
            "resources": {"type": "array", "items": {"$ref": f"{ref}{_META}.APIResource"}}}},
        f"{_META}.GroupVersionForDiscovery": {"type": "object", "required": ["groupVersion", "version"],
                                              "properties": {"groupVersion": _str(), "version": _str()}},
        f"{_META}.ServerAddressByClientCIDR": {"type": "object", "required": ["clientCIDR", "serverAddress"],
                                               "properties": {"clientCIDR": _str(), "serverAddress": _str()}},
        f"{_META}.APIGroup": {"type": "object", "required": ["name", "versions"], "properties": {
            "apiVersion": _str(), "kind": _str(), "name": _str(),
            "preferredVersion": {"$ref": f"{ref}{_META}.GroupVersionForDiscovery"},
            "serverAddressByClientCIDRs": {"type": "array", "items": {"$ref": f"{ref}{_META}.ServerAddressByClientCIDR"}},
            "versions": {"type": "array", "items": {"$ref": f"{ref}{_META}.GroupVersionForDiscovery"}}}},
        f"{_META}.APIGroupList": {"type": "object", "required": ["groups"], "properties": {
            "apiVersion": _str(), "groups": {"type": "array", "items": {"$ref": f"{ref}{_META}.APIGroup"}},
            "kind": _str()}},
    }
    out = dict(meta)
    for version in VERSIONS:
        item = _kueue(version, "PendingWorkload")
        out[item] = {
            "description": "A pending workload and where it stands in its queues.",
            "type": "object", "required": ["priority", "localQueueName", "positionInClusterQueue", "positionInLocalQueue"],
            "properties": {
                "localQueueName": {**_str(), "description": "The LocalQueue the workload was submitted to."},
                "metadata": {"$ref": f"{ref}{_META}.ObjectMeta"},
                "positionInClusterQueue": {**_int("int32"), "description": "0-based rank in its ClusterQueue."},
                "positionInLocalQueue": {**_int("int32"), "description": "0-based rank in its LocalQueue."},
                "priority": {**_int("int32"), "description": "The workload's priority."}}}
        summary: dict[str, Any] = {
            "description": "A page of the pending workloads of a ClusterQueue or a LocalQueue, in queue order.",
            "type": "object", "required": ["items"],
            "properties": {"apiVersion": _str(), "kind": _str(), "metadata": {"$ref": f"{ref}{_META}.ObjectMeta"},
                           "items": {"type": "array", "items": {"$ref": f"{ref}{item}"}}}}
        if version_kinds:
            summary["x-kubernetes-group-version-kind"] = [{"group": GROUP, "kind": SUMMARY_KIND, "version": version}]
        out[_kueue(version, "PendingWorkloadsSummary")] = summary
    return out


def _query(name: str) -> dict[str, Any]:
    return {"uniqueItems": True, "type": "integer", "name": name, "in": "query",
            "description": {"limit": "Most items to return (default 1000, at most 100000).",
                            "offset": "Items to skip from the head of the queue."}[name]}


def _paths(version: str) -> list[tuple[str, str, str, str, bool]]:
    """(path, operation id, response schema, tag, namespaced) of one group version's reads."""
    tag = f"{_TAG_STEM}_{version}"
    op = f"{_OP_STEM}{version.capitalize()}"
    base = f"/apis/{GROUP}/{version}"
    summary = _kueue(version, "PendingWorkloadsSummary")
    return [
        (f"{base}/", f"get{op}APIResources", f"{_META}.APIResourceList", tag, False),
        (f"{base}/clusterqueues/{{name}}/pendingworkloads", f"read{op}PendingWorkloadsSummaryPendingworkloads",
         summary, tag, False),
        (f"{base}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads",
         f"read{op}NamespacedPendingWorkloadsSummaryPendingworkloads", summary, tag, True),
    ]


def v2() -> dict[str, Any]:
    """`GET /openapi/v2`."""
    ref = "#/definitions/"
    parameters = {
        "limit-visibility": _query("limit"), "offset-visibility": _query("offset"),
        "namespace-visibility": {"uniqueItems": True, "type": "string", "description": "The LocalQueue's namespace.",
                                 "name": "namespace", "in": "path", "required": True},
        "pretty-visibility": {"uniqueItems": True, "type": "string", "description": "'true' indents the answer.",
                              "name": "pretty", "in": "query"},
    }
    common = {"consumes": ["application/json"], "produces": _MEDIA, "schemes": ["https"]}
    paths: dict[str, Any] = {
        "/apis/": {"get": {**common, "tags": ["apis"], "description": "the API groups served here",
                           "operationId": "getAPIVersions",
                           "responses": {"200": {"description": "OK", "schema": {"$ref": f"{ref}{_META}.APIGroupList"}},
                                         "401": {"description": "Unauthorized"}}}},
        f"/apis/{GROUP}/": {"get": {**common, "tags": [_TAG_STEM], "description": "the visibility group",
                                    "operationId": f"get{_OP_STEM}APIGroup",
                                    "responses": {"200": {"description": "OK", "schema": {"$ref": f"{ref}{_META}.APIGroup"}},
                                                  "401": {"description": "Unauthorized"}}}},
    }
    for version in VERSIONS:
        for path, op_id, schema, tag, namespaced in _paths(version):
            op: dict[str, Any] = {**common, "tags": [tag], "operationId": op_id,
                                  "responses": {"200": {"description": "OK", "schema": {"$ref": f"{ref}{schema}"}},
                                                "401": {"description": "Unauthorized"}}}
            if path.endswith("/"):
                op["description"] = "the resources of this group version"
                paths[path] = {"get": op}
                continue
            op.update({"consumes": ["*/*"], "description": "read the pending workloads, in queue order",
                       "x-kubernetes-action": "get",
                       "x-kubernetes-group-version-kind": {"group": GROUP, "version": version, "kind": SUMMARY_KIND}})
            params: list[dict[str, Any]] = [
                {"$ref": "#/parameters/limit-visibility"},
                {"uniqueItems": True, "type": "string", "description": "name of the queue", "name": "name",
                 "in": "path", "required": True}]
            if namespaced:
                params.append({"$ref": "#/parameters/namespace-visibility"})
            params += [{"$ref": "#/parameters/offset-visibility"}, {"$ref": "#/parameters/pretty-visibility"}]
            paths[path] = {"get": op, "parameters": params}
    return {"swagger": "2.0", "info": {"title": TITLE, "version": "v0.0.0"}, "paths": paths,
            "definitions": _definitions(ref, True), "parameters": parameters,
            "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey",
                                                    "name": "authorization", "in": "header"}},
            "security": [{"BearerToken": []}]}


def _v3_op(op_id: str, tag: str, schema: str) -> dict[str, Any]:
    content = {media: {"schema": {"$ref": f"#/components/schemas/{schema}"}} for media in _MEDIA}
    return {"tags": [tag], "operationId": op_id, "responses": {"200": {"description": "OK", "content": content},
                                                               "401": {"description": "Unauthorized"}}}


def _v3_param(name: str, where: str, kind: str, description: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "in": where, "description": description,
                           "schema": {"type": kind, "uniqueItems": True}}
    if where == "path":
        out["required"] = True
    return out


def _v3_paths(path_key: str) -> dict[str, Any]:
    if path_key == "apis":
        return {"/apis/": {"get": _v3_op("getAPIVersions", "apis", f"{_META}.APIGroupList")}}
    if path_key == f"apis/{GROUP}":
        return {f"/apis/{GROUP}/": {"get": _v3_op(f"get{_OP_STEM}APIGroup", _TAG_STEM, f"{_META}.APIGroup")}}
    version = path_key.rsplit("/", 1)[1]
    out: dict[str, Any] = {}
    for path, op_id, schema, tag, namespaced in _paths(version):
        op = _v3_op(op_id, tag, schema)
        if path.endswith("/"):
            out[path] = {"get": op}
            continue
        op.update({"x-kubernetes-action": "get",
                   "x-kubernetes-group-version-kind": {"group": GROUP, "version": version, "kind": SUMMARY_KIND}})
        params = [_v3_param("limit", "query", "integer", _query("limit")["description"]),
                  _v3_param("name", "path", "string", "name of the queue")]
        if namespaced:
            params.append(_v3_param("namespace", "path", "string", "The LocalQueue's namespace."))
        params += [_v3_param("offset", "query", "integer", _query("offset")["description"]),
                   _v3_param("pretty", "query", "string", "'true' indents the answer.")]
        out[path] = {"get": op, "parameters": params}
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
    roots = [op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
             for item in paths.values() for op in [item["get"]]]
    schemas = _referenced(_definitions("#/components/schemas/", True), roots)
    return {"openapi": "3.0.0", "info": {"title": TITLE, "version": "v0.0.0"}, "paths": paths,
            "components": {"schemas": schemas}}


def _v3_keys() -> list[str]:
    return ["apis", f"apis/{GROUP}", *(f"apis/{GROUP}/{v}" for v in VERSIONS)]


def etag(body: bytes) -> str:
    """The hash the v3 index links with and the ETag every document carries (upper-case SHA-512 hex)."""
    return hashlib.sha512(body).hexdigest().upper()


def v3_index(documents: Mapping[str, bytes]) -> dict[str, Any]:
    """`GET /openapi/v3`: where each document lives, with its hash, so clients cache them."""
    return {"paths": {key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={etag(documents[key])}"}
                      for key in sorted(documents)}}


def v3_documents() -> dict[str, bytes]:
    """Every v3 document, serialised once."""
    out = {}
    for key in _v3_keys():
        doc = v3_document(key)
        assert doc is not None
        out[key] = orjson.dumps(doc)
    return out
