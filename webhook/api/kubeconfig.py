"""What a MultiKueueCluster's kubeconfig may hold, judged from the document alone.

A worker cluster's kubeconfig comes from a Secret any namespace admin of Kueue's namespace can
write, so it must not make the manager read local files, run programs or trust any server: no
`tokenFile`, no `certificate-authority` path, no `insecure-skip-tls-verify`, no basic auth, no exec
plugin, no auth provider, and a server host that is an IP address or a DNS-1123 subdomain. An
inline `token` (a ServiceAccount token) and inline certificate data are fine.

Mirrors upstream v0.19.2 `validateKubeconfig`, `validateRestConfig` and `isValidHostname`
(`pkg/controller/admissionchecks/multikueue/multikueuecluster.go`), including what they inherit
from client-go: `clientcmd.RESTConfigFromKubeConfig` resolves the current context, refuses one
that is unusable (`DirectClientConfig.ConfirmUsable`, `validateAuthInfo`, `validateClusterInfo` in
`tools/clientcmd`) and, for a server that is not `https`, reads no credentials at all, so the
user's settings are neither checked nor sent. It lives in `api` because `webhook.kube` runs it
before the client library's loader sees the document.

Not checked here, since it needs the filesystem: whether `client-certificate` and `client-key`
paths can be opened (client-go's `unable to read client-cert ...`); the loader fails on them later.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api import fields

__all__ = ["is_valid_hostname", "loadable_document", "validate_kubeconfig"]

_EMPTY_CONFIG = "no configuration has been provided, try setting KUBERNETES_MASTER environment variable"
_EMPTY_CLUSTER = "cluster has no server defined"
_BASE64_FIELDS = {
    "clusters": ("certificate-authority-data",),
    "users": ("client-certificate-data", "client-key-data"),
}
_IMPERSONATION = ("as", "as-uid", "as-groups", "as-user-extra")


class _ParseError(ValueError):
    """The document is not a kubeconfig (clientcmd.Load would fail on it)."""


@dataclass(frozen=True, slots=True)
class _Kubeconfig:
    """A kubeconfig's named entries by name, in document order (clientcmd's internal `api.Config`)."""

    current_context: str
    clusters: Mapping[str, Mapping[str, Any]]
    users: Mapping[str, Mapping[str, Any]]
    contexts: Mapping[str, Mapping[str, Any]]

    def current(self) -> tuple[str, Mapping[str, Any], str, Mapping[str, Any]]:
        """(user name, user, cluster name, cluster) of the current context; empty ones where it
        names nothing or something missing, as `DirectClientConfig.getAuthInfo`/`getCluster` do."""
        context = self.contexts.get(self.current_context, {})
        user_name, cluster_name = str(context.get("user") or ""), str(context.get("cluster") or "")
        return user_name, self.users.get(user_name, {}), cluster_name, self.clusters.get(cluster_name, {})


def _named(doc: Mapping[str, Any], key: str, inner: str) -> dict[str, Mapping[str, Any]]:
    raw = doc.get(key)
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise _ParseError(f"{key}: expected a list, got {type(raw).__name__}")
    out: dict[str, Mapping[str, Any]] = {}
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise _ParseError(f"{key}: expected an object, got {type(entry).__name__}")
        name = entry.get("name") or ""
        body = entry.get(inner) or {}
        if not isinstance(name, str) or not isinstance(body, Mapping):
            raise _ParseError(f"{key}: an entry's name must be a string and its {inner} an object")
        if name in out:
            raise _ParseError(f'{key}: duplicate name "{name}" in list')
        for field in _BASE64_FIELDS.get(key, ()):
            try:
                base64.b64decode(str(body.get(field) or ""), validate=True)
            except binascii.Error as exc:
                raise _ParseError(f"{key}[{name}].{field}: illegal base64 data: {exc}") from exc
        out[name] = body
    return out


def _parse(doc: Mapping[str, Any]) -> _Kubeconfig:
    """The named entries of a kubeconfig document (a YAML or JSON object). Raises ValueError with
    the reason when it is not one."""
    if not isinstance(doc, Mapping):
        raise _ParseError(f"expected an object, got {type(doc).__name__}")
    current = doc.get("current-context") or ""
    if not isinstance(current, str):
        raise _ParseError("current-context: expected a string")
    return _Kubeconfig(
        current,
        _named(doc, "clusters", "cluster"),
        _named(doc, "users", "user"),
        _named(doc, "contexts", "context"),
    )


def _auth_info_errors(name: str, user: Mapping[str, Any]) -> list[str]:
    """`validateAuthInfo` without its file reads."""
    errs: list[str] = []
    methods = (["token"] if user.get("token") else []) + (
        ["basicAuth"] if user.get("username") or user.get("password") else []
    )
    if user.get("client-certificate") or user.get("client-certificate-data"):
        if user.get("client-certificate") and user.get("client-certificate-data"):
            errs.append(
                f"client-cert-data and client-cert are both specified for {name}. client-cert-data will override."
            )
        if user.get("client-key") and user.get("client-key-data"):
            errs.append(f"client-key-data and client-key are both specified for {name}; client-key-data will override")
        if not user.get("client-key") and not user.get("client-key-data"):
            errs.append(
                f"client-key-data or client-key must be specified for {name} to use the clientCert authentication method."
            )
    exec_ = user.get("exec")
    if exec_ is not None:
        exec_ = exec_ if isinstance(exec_, Mapping) else {}
        if user.get("auth-provider") is not None:
            errs.append(f"authProvider cannot be provided in combination with an exec plugin for {name}")
        if not exec_.get("command"):
            errs.append(f"command must be specified for {name} to use exec authentication plugin")
        if not exec_.get("apiVersion"):
            errs.append(f"apiVersion must be specified for {name} to use exec authentication plugin")
        for env in exec_.get("env") or ():
            if not (isinstance(env, Mapping) and env.get("name")):
                errs.append(f"env variable name must be specified for {name} to use exec authentication plugin")
    if len(methods) > 1:
        errs.append(
            f"more than one authentication method found for {name}; found [{' '.join(methods)}], only one is allowed"
        )
    if (user.get("as-groups") or user.get("as-user-extra")) and not user.get("as"):
        errs.append(f"requesting groups or user-extra for {name} without impersonating a user")
    return errs


def _confirm_usable(cfg: _Kubeconfig) -> str | None:
    """`DirectClientConfig.ConfirmUsable` for the current context, as `invalid configuration: ...`."""
    errs: list[str] = []
    if cfg.current_context and cfg.current_context not in cfg.contexts:
        errs.append(f"context was not found for specified context: {cfg.current_context}")
    user_name, user, cluster_name, cluster = cfg.current()
    errs.extend(_auth_info_errors(user_name, user))
    if not cluster:
        errs.append(_EMPTY_CLUSTER)
    elif not cluster.get("server"):
        errs.append(
            f'no server found for cluster "{cluster_name}"' if cluster_name else "default cluster has no server defined"
        )
    if errs == [_EMPTY_CLUSTER]:
        errs = [_EMPTY_CONFIG]
    if not errs:
        return None
    return "invalid configuration: " + (errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and port[1:].isascii() and (port[1:].isdigit() or port == ":"))


def _url_parts(server: str) -> tuple[str, str] | None:
    """(scheme, host with port) as Go's `url.Parse` reads them; None where it fails."""
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in server):
        return None
    rest = server.split("#", 1)[0]
    scheme = ""
    for i, ch in enumerate(rest):
        if ch.isascii() and ch.isalpha():
            continue
        if ch.isascii() and (ch.isdigit() or ch in "+-."):
            if i == 0:
                break
            continue
        if ch == ":":
            if i == 0:
                return None  # missing protocol scheme
            scheme, rest = rest[:i].lower(), rest[i + 1 :]
        break
    rest = rest.split("?", 1)[0]
    if not rest.startswith("/"):
        if scheme:
            return scheme, ""  # an opaque URL
        if ":" in rest.split("/", 1)[0]:
            return None  # first path segment in URL cannot contain colon
    if not rest.startswith("//") or (not scheme and rest.startswith("///")):
        return scheme, ""
    host = rest[2:].split("/", 1)[0].rsplit("@", 1)[-1]
    if host.startswith("["):
        end = host.rfind("]")
        if end < 0 or not _valid_optional_port(host[end + 1 :]):
            return None
    elif ":" in host and not _valid_optional_port(host[host.rfind(":") :]):
        return None
    if "%" in host:
        return None  # Go refuses %-escapes of ASCII in a host; the rest cannot be an IP or a DNS name
    return scheme, host


def _split_host_port(hostport: str) -> str | None:
    """The host of `net.SplitHostPort`; None where it fails (no port, stray brackets or colons)."""
    last = hostport.rfind(":")
    if last < 0:
        return None
    j = k = 0
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or end + 1 != last:
            return None
        host, j, k = hostport[1:end], 1, end + 1
    else:
        host = hostport[:last]
        if ":" in host:
            return None
    if "[" in hostport[j:] or "]" in hostport[k:]:
        return None
    return host


def _is_ip(host: str) -> bool:
    if "%" in host:  # a zone: Python reads it, Go's net.ParseIP does not
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_valid_hostname(server: str) -> bool:
    """The server URL's host (port stripped) is an IP address or a DNS-1123 subdomain (`isValidHostname`)."""
    parts = _url_parts(server)
    if parts is None:
        return False
    hostport = parts[1]
    host = _split_host_port(hostport)
    if host is None:
        host = hostport
    return _is_ip(host) or not fields.is_dns1123_subdomain(host)


def _is_tls(server: str) -> bool:
    """`rest.IsConfigTransportTLS` of a config holding only this host: its URL says `https`."""
    parts = _url_parts(server)
    return parts is not None and parts[0] == "https" and bool(parts[1])


def validate_kubeconfig(doc: Mapping[str, Any]) -> str | None:
    """Why this kubeconfig may not be used for a MultiKueueCluster, in upstream's words; None when it may.

    Checks in upstream's order: every user, then every cluster (document order: Go's map order is
    random), then the current context as client-go resolves it, then the resulting REST config.
    """
    try:
        cfg = _parse(doc)
    except ValueError as exc:
        return f"failed to parse kubeconfig(apiconfig): {exc}"
    if any(user.get("tokenFile") for user in cfg.users.values()):
        return "tokenFile is not allowed"
    for name, cluster in cfg.clusters.items():
        if cluster.get("insecure-skip-tls-verify"):
            return f"insecure TLS verification is not allowed for cluster {name}"
        if cluster.get("certificate-authority"):
            return (
                f"certificate-authority file paths are not allowed, use certificate-authority-data for cluster {name}"
            )
        if not cluster.get("server"):
            return f"server URL is required for cluster {name}"
    unusable = _confirm_usable(cfg)
    if unusable:
        return unusable
    _, user, _, cluster = cfg.current()
    host = str(cluster.get("server") or "")
    if not is_valid_hostname(host.lower()):
        return "untrusted server endpoint"
    if not _is_tls(host):
        return None  # client-go reads no credentials for a plain-http server
    if user.get("username") or user.get("password"):
        return "basic auth is not allowed"
    if user.get("exec") is not None:
        return "exec plugins are not allowed"
    if user.get("auth-provider") is not None:
        return "auth providers are not allowed"
    return None


def loadable_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a valid kubeconfig a client uses: the current context's cluster and, for an
    `https` server only, its user (client-go sends no credentials over plain http). Raises
    ValueError for what we do not implement: impersonation (`as`, `as-groups`, ...)."""
    _, user, _, cluster = _parse(doc).current()
    user = user if _is_tls(str(cluster.get("server") or "")) else {}
    impersonating = [key for key in _IMPERSONATION if user.get(key)]
    if impersonating:
        raise ValueError(f"impersonation is not supported (user fields {', '.join(impersonating)})")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "current",
        "contexts": [{"name": "current", "context": {"cluster": "current", "user": "current"}}],
        "clusters": [{"name": "current", "cluster": dict(cluster)}],
        "users": [{"name": "current", "user": dict(user)}],
    }
