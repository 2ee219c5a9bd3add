"""The OpenAPI schema of `core/v1 PodTemplateSpec`, derived from the Kubernetes Python client.

A Workload's pod sets embed full pod templates. Upstream's CRD gets their schema from controller-gen
reading `k8s.io/api/core/v1`; we derive the same tree from the client's generated model classes:
each has `openapi_types` (attribute → type string such as `str`, `int`, `List[V1Container]`,
`Dict[str, str]`) and `attribute_map` (attribute → JSON name); `model_fields` says which fields
are required. What the client does not carry is supplied by small tables of Kubernetes API facts
(the `+listType`, `+listMapKey`, `+structType=atomic`, `+default` markers of `core/v1/types.go`):
which lists are maps and by which keys, which string fields are quantities, which structs are
atomic, and the few schema defaults.

Importing `kubernetes` is allowed here only because this runs at generation time (`make manifests`
and the schema tests), never in the webhook or worker processes: the import is lazy, inside
`pod_template_schema`.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from webhook.api import schema_types as t

__all__ = ["pod_template_schema"]

# (model class, attribute) → list-map keys (JSON names), from `+listType=map` / `+listMapKey`.
_LIST_MAP_KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("V1PodSpec", "containers"): ("name",),
    ("V1PodSpec", "init_containers"): ("name",),
    ("V1PodSpec", "ephemeral_containers"): ("name",),
    ("V1PodSpec", "host_aliases"): ("ip",),
    ("V1PodSpec", "image_pull_secrets"): ("name",),
    ("V1PodSpec", "resource_claims"): ("name",),
    ("V1PodSpec", "scheduling_gates"): ("name",),
    ("V1PodSpec", "topology_spread_constraints"): ("topologyKey", "whenUnsatisfiable"),
    ("V1PodSpec", "volumes"): ("name",),
    ("V1Container", "env"): ("name",),
    ("V1Container", "ports"): ("containerPort", "protocol"),
    ("V1Container", "volume_devices"): ("devicePath",),
    ("V1Container", "volume_mounts"): ("mountPath",),
    ("V1EphemeralContainer", "env"): ("name",),
    ("V1EphemeralContainer", "ports"): ("containerPort", "protocol"),
    ("V1EphemeralContainer", "volume_devices"): ("devicePath",),
    ("V1EphemeralContainer", "volume_mounts"): ("mountPath",),
    ("V1ResourceRequirements", "claims"): ("name",),
}
# Lists with `+listType=set`; every other list is atomic.
_LIST_SETS = {("V1ContainerRestartRuleOnExitCodes", "values")}

# String-typed attributes that are really `resource.Quantity`.
_QUANTITIES = {
    ("V1ResourceFieldSelector", "divisor"),
    ("V1EmptyDirVolumeSource", "size_limit"),
}
# Map attributes whose values are quantities (`corev1.ResourceList`).
_QUANTITY_MAPS = {
    ("V1ResourceRequirements", "limits"),
    ("V1ResourceRequirements", "requests"),
    ("V1VolumeResourceRequirements", "limits"),
    ("V1VolumeResourceRequirements", "requests"),
    ("V1PodSpec", "overhead"),
}
# `object`-typed attributes that are `intstr.IntOrString`.
_INT_OR_STRING = {("V1HTTPGetAction", "port"), ("V1TCPSocketAction", "port")}

# Structs marked `+structType=atomic` (or embedding such a struct inline), and atomic maps.
_ATOMIC_STRUCTS = {
    "V1ConfigMapEnvSource",
    "V1ConfigMapKeySelector",
    "V1ConfigMapProjection",
    "V1ConfigMapVolumeSource",
    "V1FileKeySelector",
    "V1LabelSelector",
    "V1LocalObjectReference",
    "V1NodeSelector",
    "V1NodeSelectorTerm",
    "V1ObjectFieldSelector",
    "V1ResourceFieldSelector",
    "V1SecretEnvSource",
    "V1SecretKeySelector",
    "V1SecretProjection",
    "V1TypedLocalObjectReference",
}
_ATOMIC_MAPS = {("V1PodSpec", "node_selector")}

# Schema defaults (`+default=`) of core/v1.
_DEFAULTS: dict[tuple[str, str], Any] = {
    ("V1ContainerPort", "protocol"): "TCP",
    ("V1GRPCAction", "service"): "",
    ("V1FileKeySelector", "optional"): False,
    ("V1AzureDiskVolumeSource", "fs_type"): "ext4",
    ("V1AzureDiskVolumeSource", "read_only"): False,
    ("V1ISCSIVolumeSource", "iscsi_interface"): "default",
    ("V1RBDVolumeSource", "keyring"): "/etc/ceph/keyring",
    ("V1RBDVolumeSource", "pool"): "rbd",
    ("V1RBDVolumeSource", "user"): "admin",
    ("V1ScaleIOVolumeSource", "fs_type"): "xfs",
    ("V1ScaleIOVolumeSource", "storage_mode"): "ThinProvisioned",
}
# Structs whose `name` (from an inline LocalObjectReference) defaults to "".
_NAME_DEFAULTS_EMPTY = {
    "V1ConfigMapEnvSource",
    "V1ConfigMapKeySelector",
    "V1ConfigMapProjection",
    "V1ConfigMapVolumeSource",
    "V1LocalObjectReference",
    "V1SecretEnvSource",
    "V1SecretKeySelector",
    "V1SecretProjection",
}

_LIST = re.compile(r"^[Ll]ist\[(.+)\]$")
_DICT = re.compile(r"^[Dd]ict\[str, (.+)\]$|^dict\(str, (.+)\)$")
_SCALARS: dict[str, t.Schema] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
}


def _embedded_metadata(desc: str | None = None) -> t.Schema:
    """ObjectMeta inside a template: only what a template may carry (as controller-gen emits it)."""
    return t.obj(
        {
            "annotations": t.string_map("Annotations copied to the pods."),
            "finalizers": t.array(t.string()),
            "labels": t.string_map("Labels copied to the pods."),
            "name": t.string(),
            "namespace": t.string(),
        },
        desc,
    )


class _Deriver:
    """Walks model classes of `kubernetes.client` into structural schemas."""

    def __init__(self, models: Any) -> None:
        self._models = models
        self._stack: list[str] = []

    def model(self, name: str) -> t.Schema:
        if name == "V1ObjectMeta":
            return _embedded_metadata()
        if name in self._stack:
            raise ValueError(f"recursive model {' -> '.join([*self._stack, name])} has no structural schema")
        cls = getattr(self._models, name)
        self._stack.append(name)
        try:
            properties = {
                cls.attribute_map[attr]: self.attribute(name, attr, type_name)
                for attr, type_name in sorted(cls.openapi_types.items(), key=lambda kv: cls.attribute_map[kv[0]])
            }
        finally:
            self._stack.pop()
        fields = getattr(cls, "model_fields", {})
        required = [cls.attribute_map[attr] for attr, field in fields.items() if field.is_required()]
        return t.obj(properties, required=required, map_type="atomic" if name in _ATOMIC_STRUCTS else None)

    def attribute(self, owner: str, attr: str, type_name: str) -> t.Schema:
        key = (owner, attr)
        if key in _QUANTITIES:
            return t.quantity()
        if key in _INT_OR_STRING:
            return t.int_or_string()
        if key in _QUANTITY_MAPS:
            return t.quantity_map()
        schema = self.type(type_name)
        if schema.get("type") == "array":
            if key in _LIST_MAP_KEYS:
                schema["x-kubernetes-list-type"] = "map"
                schema["x-kubernetes-list-map-keys"] = list(_LIST_MAP_KEYS[key])
            else:
                schema["x-kubernetes-list-type"] = "set" if key in _LIST_SETS else "atomic"
        if key in _ATOMIC_MAPS:
            schema["x-kubernetes-map-type"] = "atomic"
        if key in _DEFAULTS:
            schema["default"] = _DEFAULTS[key]
        elif attr == "name" and owner in _NAME_DEFAULTS_EMPTY:
            schema["default"] = ""
        return schema

    def type(self, type_name: str) -> t.Schema:
        if type_name in _SCALARS:
            return dict(_SCALARS[type_name])
        if m := _LIST.match(type_name):
            return t.array(self.type(m.group(1)))
        if m := _DICT.match(type_name):
            return t.obj(additional=self.type(m.group(1) or m.group(2)))
        if type_name == "object":
            raise ValueError("an untyped `object` attribute needs an entry in the int-or-string table")
        return self.model(type_name)


@functools.cache
def _derive() -> t.Schema:
    from kubernetes import client  # generation time only; see the module docstring

    template = _Deriver(client).model("V1PodTemplateSpec")
    template["properties"]["metadata"] = _embedded_metadata("Labels and annotations of the pods.")
    template["properties"]["spec"]["description"] = "Specification of the pods (core/v1 PodSpec)."
    return template


def pod_template_schema(desc: str | None = None) -> t.Schema:
    """Schema of a PodTemplateSpec: metadata (labels, annotations, ...) and a full PodSpec.

    Imports `kubernetes.client` lazily: only the CRD generator calls this. The result is a fresh
    copy each time, so callers may modify it.
    """
    import copy

    schema = copy.deepcopy(_derive())
    if desc:
        schema["description"] = desc
    return schema
