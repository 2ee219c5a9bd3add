"""Field errors, worded exactly as `k8s.io/apimachinery/pkg/util/validation/field`.

A validator returns a list of `FieldError`; `aggregate` joins them the way
`field.ErrorList.ToAggregate().Error()` does, which is the text kubectl shows after
`admission webhook "..." denied the request: `. The validation helpers at the bottom
reproduce the k8s messages Kueue reuses (DNS-1123 subdomain, qualified names, label values).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any, NamedTuple

__all__ = [
    "FIELD_IMMUTABLE",
    "FieldError",
    "GoField",
    "Kind",
    "Path",
    "Rendered",
    "aggregate",
    "duplicate",
    "forbidden",
    "go_atoi",
    "go_json",
    "go_parse_bool",
    "go_semantic",
    "immutable",
    "invalid",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_domain_prefixed_path",
    "is_label_key",
    "is_label_value",
    "not_found",
    "not_supported",
    "quantity_string",
    "render_value",
    "required",
    "too_long",
    "too_many",
    "validate_annotations",
    "validate_conditions",
    "validate_label_name",
    "validate_label_selector",
    "validate_labels",
]


class Kind(StrEnum):
    INVALID = "Invalid value"
    REQUIRED = "Required value"
    FORBIDDEN = "Forbidden"
    NOT_SUPPORTED = "Unsupported value"
    DUPLICATE = "Duplicate value"
    NOT_FOUND = "Not found"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    INTERNAL = "Internal error"


class Path(str):
    """A field path that builds itself like `field.NewPath(...).Child(...).Index(...).Key(...)`."""

    __slots__ = ()

    def child(self, *names: str) -> Path:
        parts = [self] if self else []
        return Path(".".join([*parts, *names]))

    def index(self, i: int) -> Path:  # type: ignore[override]  # field.Path.Index, not str.index
        return Path(f"{self}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self}[{k}]")


_NO_VALUE = object()


class Rendered(str):
    """A value already rendered the way Go prints it (e.g. by `go_json`); printed verbatim."""

    __slots__ = ()


def render_value(value: Any) -> str:
    """Go's `%q` for strings, plain numbers and bools, JSON for everything else."""
    if isinstance(value, Rendered):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class FieldError:
    kind: Kind
    path: str
    detail: str = ""
    value: Any = _NO_VALUE

    def __str__(self) -> str:
        text = f"{self.path}: {self.kind.value}" if self.path else self.kind.value
        if self.kind not in (Kind.REQUIRED, Kind.FORBIDDEN, Kind.TOO_LONG) and self.value is not _NO_VALUE:
            text += f": {render_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(Kind.INVALID, path, detail, value)


def invalid_without_value(path: str, detail: str) -> FieldError:
    """`field.Invalid(path, field.OmitValueType{}, detail)`: the value is not printed."""
    return FieldError(Kind.INVALID, path, detail)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(Kind.REQUIRED, path, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(Kind.FORBIDDEN, path, detail)


def duplicate(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(Kind.DUPLICATE, path, detail, value)


def not_found(path: str, value: Any) -> FieldError:
    return FieldError(Kind.NOT_FOUND, path, "", value)


def too_long(path: str, max_length: int) -> FieldError:
    return FieldError(Kind.TOO_LONG, path, f"may not be more than {max_length} bytes")


def too_many(path: str, actual: int, maximum: int) -> FieldError:
    """`field.TooMany`: `<path>: Too many: <n>: must have at most <max> items`."""
    return FieldError(Kind.TOO_MANY, path, f"must have at most {maximum} items", actual)


def not_supported(path: str, value: Any, valid: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(v) for v in valid) if valid else ""
    return FieldError(Kind.NOT_SUPPORTED, path, detail, value)


def aggregate(errors: Iterable[FieldError]) -> str:
    """`ErrorList.ToAggregate().Error()`: one message alone, several in brackets, duplicates dropped."""
    seen: list[str] = []
    for e in errors:
        text = str(e)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


# --- k8s.io/apimachinery/pkg/util/validation messages -------------------------------------------

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN}$")
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME}$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """`validation.RegexError`, including its odd `'a', or 'b', ` example list."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {listed}regex used for validation is '{fmt}')"


def is_dns1123_subdomain(value: str) -> list[str]:
    """`validation.IsDNS1123Subdomain`: the length limit counts characters."""
    return _dns1123_subdomain(value, too_long=len(value) > 253, length_message=_max_len(253))


def _dns1123_subdomain(value: str, *, too_long: bool, length_message: str) -> list[str]:
    errs = [length_message] if too_long else []
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN,
                "example.com",
            )
        )
    return errs


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _DNS1123_LABEL_RE.match(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character",
                _DNS1123_LABEL,
                "my-name",
                "123-abc",
            )
        )
    return errs


# --- k8s.io/apimachinery/pkg/api/validate/content (apimachinery v0.36, vendored by upstream) -----
# Label keys and values are checked by `content.IsLabelKey` / `content.IsLabelValue` at this
# snapshot: length messages say "bytes", a key with several '/' is "a valid label key", and an
# empty name part also fails the name regex.

_LABEL_KEY_FMT = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"


def _max_bytes(n: int) -> str:
    return f"must be no more than {n} bytes"


def _content_dns1123_subdomain(value: str) -> list[str]:
    """The `content` package's variant: the same rule, but the limit counts bytes."""
    return _dns1123_subdomain(value, too_long=len(value.encode()) > 253, length_message=_max_bytes(253))


def is_label_key(value: str) -> list[str]:
    """`content.IsLabelKey`: an optional DNS-subdomain prefix and '/', then a name of at most 63 bytes."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in _content_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part " + _max_bytes(63))
    if not _QUALIFIED_NAME_RE.match(name):
        errs.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    """`content.IsLabelValue`: empty, or at most 63 bytes of label-key name syntax."""
    errs = []
    if len(value.encode()) > 63:
        errs.append(_max_bytes(63))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


# --- k8s.io/apimachinery/pkg/apis/meta/v1/validation and pkg/api/validation ----------------------
# Go walks label and annotation maps in random order; we walk them sorted by key so the same
# object always gets the same message.

TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * 1024


def validate_label_name(name: str, path: str) -> list[FieldError]:
    """`ValidateLabelName`."""
    return [invalid(path, name, msg) for msg in is_label_key(name)]


def validate_labels(labels: Mapping[str, str] | None, path: str) -> list[FieldError]:
    """`ValidateLabels`: every error carries the map's path, not the key's."""
    errs: list[FieldError] = []
    for key in sorted(labels or {}):
        errs += validate_label_name(key, path)
        errs += [invalid(path, (labels or {})[key], msg) for msg in is_label_value((labels or {})[key])]
    return errs


def validate_annotations(annotations: Mapping[str, str] | None, path: str) -> list[FieldError]:
    """`ValidateAnnotations`: keys are label keys compared case-insensitively; total size ≤ 256 KiB."""
    annotations = annotations or {}
    errs: list[FieldError] = []
    for key in sorted(annotations):
        errs += [invalid(path, key, msg) for msg in is_label_key(key.lower())]
    total = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return errs


def validate_label_selector(selector: Mapping[str, Any] | None, path: Path) -> list[FieldError]:
    """`ValidateLabelSelector` with default options (unknown operators and bad values rejected)."""
    if selector is None:
        return []
    errs = validate_labels(selector.get("matchLabels"), path.child("matchLabels"))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        expr_path = path.child("matchExpressions").index(i)
        operator = expr.get("operator", "")
        values = expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(required(expr_path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    forbidden(
                        expr_path.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(invalid(expr_path.child("operator"), operator, "not a valid selector operator"))
        errs += validate_label_name(expr.get("key", ""), expr_path.child("key"))
        for j, value in enumerate(values):
            errs += [invalid(expr_path.child("values").index(j), value, msg) for msg in is_label_value(value)]
    return errs


_CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON_RE = re.compile(f"^{_CONDITION_REASON_FMT}$")
_CONDITION_STATUSES = ("False", "True", "Unknown")


def validate_conditions(conditions: Sequence[Mapping[str, Any]] | None, path: Path) -> list[FieldError]:
    """`ValidateConditions`: unique types, then each condition's type, status, generation, time, reason, message."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(conditions or []):
        cond_path = path.index(i)
        ctype = cond.get("type") or ""
        if ctype in seen:
            errs.append(duplicate(cond_path.child("type"), ctype))
        else:
            seen.add(ctype)
        errs += validate_label_name(ctype, cond_path.child("type"))
        status = cond.get("status") or ""
        if status not in _CONDITION_STATUSES:
            errs.append(not_supported(cond_path.child("status"), status, _CONDITION_STATUSES))
        generation = cond.get("observedGeneration") or 0
        if generation < 0:
            errs.append(
                invalid(cond_path.child("observedGeneration"), generation, "must be greater than or equal to zero")
            )
        if not cond.get("lastTransitionTime"):
            errs.append(required(cond_path.child("lastTransitionTime")))
        reason = cond.get("reason") or ""
        if not reason:
            errs.append(required(cond_path.child("reason")))
        else:
            if not _CONDITION_REASON_RE.match(reason):
                errs.append(
                    invalid(
                        cond_path.child("reason"),
                        reason,
                        _regex_error(
                            "a condition reason must start with alphabetic character, optionally followed by a string "
                            "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                            _CONDITION_REASON_FMT,
                            "my_name",
                            "MY_NAME",
                            "MyName",
                            "ReasonA,ReasonB",
                            "ReasonA:ReasonB",
                        ),
                    )
                )
            if len(reason.encode()) > 1024:
                errs.append(too_long(cond_path.child("reason"), 1024))
        if len((cond.get("message") or "").encode()) > 32 * 1024:
            errs.append(too_long(cond_path.child("message"), 32 * 1024))
    return errs


# --- k8s.io/apimachinery/pkg/util/validation.IsDomainPrefixedPath --------------------------------

_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(f"^{_HTTP_PATH_FMT}$")


def is_domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """`IsDomainPrefixedPath` (Job `spec.managedBy` syntax): a DNS subdomain, '/', then HTTP path characters."""
    if not value:
        return [required(path)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.match(rest):
        errs.append(invalid(path, rest, _regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


# --- immutability (k8s.io/apimachinery/pkg/api/validation.ValidateImmutableField) ----------------

FIELD_IMMUTABLE = "field is immutable"


def immutable(path: str, new_value: Any) -> FieldError:
    """The error `ValidateImmutableField` reports: Invalid, the NEW value, `field is immutable`."""
    return invalid(path, new_value, FIELD_IMMUTABLE)


# --- resource.Quantity.String() -------------------------------------------------------------------

_QUANTITY_RE = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_BIN_EXP = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DEC_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DEC_SUFFIX = {v: k for k, v in _DEC_EXP.items()}
_BIN_SUFFIX = {0: "", **{v: k for k, v in _BIN_EXP.items()}}


def quantity_string(value: str | int | float) -> str:
    """`Quantity.String()` of a quantity as the API carries it: the canonical form in its own format.

    The format follows the suffix (binary `Ki`..`Ei`, decimal SI, or `e` exponent); values are
    rounded away from zero to nano units, as `ParseQuantity` does. Text that is not a quantity is
    returned unchanged (the API server rejects it before any webhook sees it).
    """
    text = value if isinstance(value, str) else str(value)
    m = _QUANTITY_RE.match(text.strip())
    if not m:
        return text
    sign, digits, suffix = m.group(1), m.group(2), m.group(3) or ""
    amount = Fraction(digits)
    if suffix in _BIN_EXP:
        fmt = "binary"
        amount *= 1024 ** _BIN_EXP[suffix]
        if 0 < amount < 1:
            fmt = "decimal"
    elif suffix in _DEC_EXP:
        fmt = "decimal"
        amount *= Fraction(10) ** _DEC_EXP[suffix]
    else:
        fmt = "exponent"
        amount *= Fraction(10) ** int(suffix[1:])
    nanos = -((-amount * 10**9).__floor__())  # round up (away from zero) to nano units
    if sign == "-":
        nanos = -nanos
    if nanos == 0:
        return "0"
    if fmt == "binary" and (abs(nanos) < 1024 * 10**9 or nanos % 10**9):
        fmt = "decimal"
    if fmt == "binary":
        units, power = nanos // 10**9, 0
        while units % 1024 == 0 and power < 6:
            units //= 1024
            power += 1
        return f"{units}{_BIN_SUFFIX[power]}"
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    if fmt == "exponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DEC_SUFFIX.get(exponent, '')}"


# --- Go's encoding/json of API structs ------------------------------------------------------------


class GoField(NamedTuple):
    """One field of a Go struct, in declaration order: JSON name, `omitempty`, zero value, nested schema."""

    name: str
    omitempty: bool = True
    zero: Any = None
    schema: tuple[GoField, ...] | None = None


def _go_value(value: Any, schema: tuple[GoField, ...] | None) -> Any:
    if isinstance(value, Mapping):
        if schema is None:
            return {k: _go_value(value[k], None) for k in sorted(value)}
        out: dict[str, Any] = {}
        for fld in schema:
            item = value.get(fld.name)
            if item is None or (fld.omitempty and item in ("", 0, False, [], {})):
                if fld.omitempty:
                    continue
                item = fld.zero
                if fld.schema is not None and item is None:
                    item = {}
            out[fld.name] = _go_value(item, fld.schema)
        known = {fld.name for fld in schema}
        out.update({k: _go_value(value[k], None) for k in sorted(value) if k not in known})
        return out
    if isinstance(value, list):
        return [_go_value(v, schema) for v in value]
    return value


def go_json(value: Any, schema: tuple[GoField, ...] | None = None) -> Rendered:
    """`json.Marshal` of a Go value decoded from `value`: struct fields in `schema` order, maps sorted.

    `None` is `null`. Fields not in the schema come after it, sorted, like map keys; Go's HTML
    escaping of `<`, `>` and `&` is reproduced.
    """
    text = json.dumps(_go_value(value, schema), separators=(",", ":"), ensure_ascii=False)
    return Rendered(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def go_semantic(value: Any) -> Any:
    """`value` as `equality.Semantic.DeepEqual` compares the Go struct it decodes to: nulls, empty
    strings and empty collections are dropped, since Go decodes them all to an absent field's zero."""
    if isinstance(value, Mapping):
        items = {k: go_semantic(v) for k, v in value.items()}
        return {k: v for k, v in items.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [go_semantic(v) for v in value]
    return value


# --- Go's strconv, for integer and boolean annotation values ----------------------------------------


def go_atoi(text: str) -> int:
    """`strconv.Atoi`: optional sign and decimal digits only; raises ValueError with Go's message."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value


def go_parse_bool(text: str) -> bool:
    """`strconv.ParseBool` with Go's error text."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')
