"""Field errors, worded exactly as `k8s.io/apimachinery/pkg/util/validation/field`.

A validator returns a list of `FieldError`; `aggregate` joins them the way
`field.ErrorList.ToAggregate().Error()` does, which is the text kubectl shows after
`admission webhook "..." denied the request: `. The validation helpers at the bottom
reproduce the k8s messages Kueue reuses (DNS-1123 subdomain, qualified names, label values).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "FieldError",
    "Kind",
    "Path",
    "aggregate",
    "duplicate",
    "forbidden",
    "invalid",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "not_found",
    "not_supported",
    "render_value",
    "required",
    "too_long",
]


class Kind(StrEnum):
    INVALID = "Invalid value"
    REQUIRED = "Required value"
    FORBIDDEN = "Forbidden"
    NOT_SUPPORTED = "Unsupported value"
    DUPLICATE = "Duplicate value"
    NOT_FOUND = "Not found"
    TOO_LONG = "Too long"
    INTERNAL = "Internal error"


class Path(str):
    """A field path that builds itself like `field.NewPath(...).Child(...).Index(...).Key(...)`."""

    __slots__ = ()

    def child(self, *names: str) -> Path:
        parts = [self] if self else []
        return Path(".".join([*parts, *names]))

    def index(self, i: int) -> Path:
        return Path(f"{self}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self}[{k}]")


_NO_VALUE = object()


def render_value(value: Any) -> str:
    """Go's `%q` for strings, plain numbers and bools, JSON for everything else."""
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
    errs = []
    if len(value) > 253:
        errs.append(_max_len(253))
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


def is_qualified_name(value: str) -> list[str]:
    """Label-key syntax: optional DNS subdomain prefix, `/`, and a name of at most 63 characters."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + "must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                _QUALIFIED_NAME,
                "MyName",
                "my.name",
                "123-abc",
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if name and not _QUALIFIED_NAME_RE.match(name):
        errs.append(
            "name part "
            + _regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                _QUALIFIED_NAME,
                "MyName",
                "my.name",
                "123-abc",
            )
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs
