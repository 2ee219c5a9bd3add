"""Small builders for OpenAPI v3 (structural) schemas, plus the fragments Kueue kinds share.

Every builder returns a fresh plain dict, so callers may nest and extend the results without
aliasing. The shapes follow what controller-gen emits for the kubebuilder markers used in
`apis/kueue/v1beta2/*_types.go` (at ff69552e79): `+kubebuilder:validation:MaxItems` → `maxItems`,
`+listType=map` + `+listMapKey` → `x-kubernetes-list-type`/`x-kubernetes-list-map-keys`,
`resource.Quantity` → int-or-string with the quantity pattern, `metav1.Condition` → the condition
schema, and so on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DNS1123_LABEL",
    "DNS1123_SUBDOMAIN",
    "LABEL_KEY",
    "QUANTITY_PATTERN",
    "Schema",
    "array",
    "boolean",
    "conditions",
    "date_time",
    "int32",
    "int64",
    "int_or_string",
    "label_selector",
    "obj",
    "quantity",
    "quantity_map",
    "rule",
    "string",
    "string_map",
    "taint_effect_rule",
    "taints",
    "toleration_rules",
    "tolerations",
]

Schema = dict[str, Any]

# Regular expressions the API machinery uses (k8s.io/apimachinery validation and resource.Quantity).
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
# A qualified name with an optional DNS-subdomain prefix: label keys and condition types.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_CONDITION_TYPE = LABEL_KEY
_EFFECTS = "['NoSchedule', 'PreferNoSchedule', 'NoExecute']"


def _put(schema: Schema, **fields: Any) -> Schema:
    """Add the fields that are set (not None) under their OpenAPI names."""
    names = {
        "desc": "description",
        "max_length": "maxLength",
        "min_length": "minLength",
        "max_items": "maxItems",
        "min_items": "minItems",
        "max_properties": "maxProperties",
        "list_type": "x-kubernetes-list-type",
        "map_keys": "x-kubernetes-list-map-keys",
        "map_type": "x-kubernetes-map-type",
    }
    for key, value in fields.items():
        if value is None:
            continue
        if key == "rules":
            if value:
                schema["x-kubernetes-validations"] = list(value)
            continue
        schema[names.get(key, key)] = list(value) if isinstance(value, tuple) else value
    return schema


def rule(expression: str, message: str) -> dict[str, str]:
    """One CEL validation rule (`+kubebuilder:validation:XValidation`)."""
    return {"rule": expression, "message": message}


def string(
    desc: str | None = None,
    *,
    max_length: int | None = None,
    min_length: int | None = None,
    pattern: str | None = None,
    enum: Sequence[str] | None = None,
    default: str | None = None,
    format: str | None = None,
    rules: Sequence[Mapping[str, str]] = (),
) -> Schema:
    return _put(
        {"type": "string"},
        desc=desc,
        maxLength=max_length,
        minLength=min_length,
        pattern=pattern,
        enum=list(enum) if enum is not None else None,
        default=default,
        format=format,
        rules=rules,
    )


def date_time(desc: str | None = None) -> Schema:
    return string(desc, format="date-time")


def _integer(fmt: str, desc: str | None, minimum: int | None, maximum: int | None, default: int | None) -> Schema:
    return _put({"type": "integer", "format": fmt}, desc=desc, minimum=minimum, maximum=maximum, default=default)


def int32(
    desc: str | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    default: int | None = None,
) -> Schema:
    return _integer("int32", desc, minimum, maximum, default)


def int64(
    desc: str | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    default: int | None = None,
) -> Schema:
    return _integer("int64", desc, minimum, maximum, default)


def boolean(desc: str | None = None, *, default: bool | None = None) -> Schema:
    return _put({"type": "boolean"}, desc=desc, default=default)


def quantity(desc: str | None = None, *, default: int | str | None = None) -> Schema:
    """A `resource.Quantity`: an integer or a string matching the quantity syntax."""
    return _put(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        },
        desc=desc,
        default=default,
    )


def int_or_string(desc: str | None = None) -> Schema:
    """An `intstr.IntOrString` (ports and the like), without the quantity pattern."""
    return _put({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}, desc=desc)


def obj(
    properties: Mapping[str, Schema] | None = None,
    desc: str | None = None,
    *,
    required: Sequence[str] = (),
    rules: Sequence[Mapping[str, str]] = (),
    default: Mapping[str, Any] | None = None,
    map_type: str | None = None,
    additional: Schema | None = None,
    max_properties: int | None = None,
) -> Schema:
    schema: Schema = {"type": "object"}
    if properties:
        schema["properties"] = dict(properties)
    if required:
        schema["required"] = sorted(required)
    if additional is not None:
        schema["additionalProperties"] = additional
    return _put(
        schema,
        desc=desc,
        rules=rules,
        default=dict(default) if default is not None else None,
        map_type=map_type,
        max_properties=max_properties,
    )


def array(
    items: Schema,
    desc: str | None = None,
    *,
    max_items: int | None = None,
    min_items: int | None = None,
    list_type: str | None = None,
    map_keys: Sequence[str] | None = None,
    rules: Sequence[Mapping[str, str]] = (),
) -> Schema:
    if map_keys is not None:
        list_type = "map"
    return _put(
        {"type": "array", "items": items},
        desc=desc,
        max_items=max_items,
        min_items=min_items,
        list_type=list_type,
        map_keys=list(map_keys) if map_keys is not None else None,
        rules=rules,
    )


def string_map(desc: str | None = None, *, max_properties: int | None = None, map_type: str | None = None) -> Schema:
    return obj(desc=desc, additional=string(), max_properties=max_properties, map_type=map_type)


def quantity_map(desc: str | None = None) -> Schema:
    """A `corev1.ResourceList`: resource name → quantity."""
    return obj(desc=desc, additional=quantity())


# ---------------------------------------------------------------------------------------------
# Fragments of k8s.io/api and k8s.io/apimachinery types embedded in Kueue kinds.


def conditions(desc: str, *, max_items: int | None) -> Schema:
    """`[]metav1.Condition` as a list-map keyed by `type`."""
    condition = obj(
        {
            "lastTransitionTime": date_time(),
            "message": string(max_length=32768),
            "observedGeneration": int64(minimum=0),
            "reason": string(max_length=1024, min_length=1, pattern=_CONDITION_REASON),
            "status": string(enum=["True", "False", "Unknown"]),
            "type": string(max_length=316, pattern=_CONDITION_TYPE),
        },
        required=["lastTransitionTime", "message", "reason", "status", "type"],
    )
    return array(condition, desc, max_items=max_items, map_keys=["type"])


def label_selector(desc: str | None = None) -> Schema:
    """`metav1.LabelSelector` (an atomic struct)."""
    requirement = obj(
        {
            "key": string(),
            "operator": string(),
            "values": array(string(), list_type="atomic"),
        },
        required=["key", "operator"],
    )
    return obj(
        {
            "matchExpressions": array(requirement, list_type="atomic"),
            "matchLabels": string_map(),
        },
        desc,
        map_type="atomic",
    )


def taints(desc: str | None = None, *, max_items: int | None = None, rules: Sequence[Mapping[str, str]] = ()) -> Schema:
    taint = obj(
        {"effect": string(), "key": string(), "timeAdded": date_time(), "value": string()},
        required=["effect", "key"],
    )
    return array(taint, desc, max_items=max_items, list_type="atomic", rules=rules)


def toleration_rules() -> list[dict[str, str]]:
    """The CEL rules Kueue puts on its own toleration lists (ResourceFlavor, podSetUpdates)."""
    return [
        rule(
            "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
            "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        ),
        rule(
            "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
            "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        ),
        rule(
            "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
            "supported toleration values: 'Equal'(default), 'Exists'",
        ),
        rule(
            "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
            "a value must be empty when 'operator' is 'Exists'",
        ),
        rule(
            f"self.all(x, !has(x.effect) || x.effect in {_EFFECTS})",
            "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        ),
    ]


def taint_effect_rule() -> dict[str, str]:
    return rule(
        f"self.all(x, x.effect in {_EFFECTS})",
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    )


def tolerations(desc: str | None = None, *, max_items: int | None = None, list_type: str | None = "atomic") -> Schema:
    toleration = obj(
        {
            "effect": string(),
            "key": string(),
            "operator": string(),
            "tolerationSeconds": int64(),
            "value": string(),
        }
    )
    return array(toleration, desc, max_items=max_items, list_type=list_type, rules=toleration_rules())
