"""Where a MultiKueueCluster's kubeconfig comes from, and whether it may be used.

`load_client_config` reads `spec.clusterSource`: a Secret in Kueue's namespace (key `kubeconfig`),
a file (`locationType: Path`, under /etc/multikueue/kubeconfigs when gate
MultiKueueKubeConfigPathValidation is on), or a ClusterProfile (multicluster.x-k8s.io/v1alpha1)
of Kueue's namespace, refused while gate MultiKueueClusterProfile is off. A ClusterProfile gives
access only through an access provider's credential plugin, which we do not run (the
Configuration refuses `multiKueue.clusterProfile` providers), so a found profile always ends as
upstream's `NoOpClusterProfileAccessProvider` ends: `no access provider configured`. The result is
the document to build the remote client from, or the reason and message of the cluster's
`Active=False` condition. The Secrets and ClusterProfiles are passed in and the file is read
through `read_file`, so the decision stays testable from dicts.

Mirrors upstream v0.19.2 `clustersReconciler.loadClientConfig`, `getKubeConfig`,
`getKubeConfigFromSecret`, `getKubeConfigFromPath`, `validateKubeConfigPath` and
`getRestConfigFromClusterProfile` (`pkg/controller/admissionchecks/multikueue/multikueuecluster.go`); the document rules are
`webhook.api.kubeconfig.validate_kubeconfig`.
"""

from __future__ import annotations

import base64
import os
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from webhook.api import kubeconfig
from webhook.api import multikueue as mk
from webhook.api.objects import Obj

__all__ = [
    "ClientConfig",
    "InvalidPath",
    "LoadError",
    "load_client_config",
    "parse_kubeconfig",
    "validate_path",
]

_NOT_UNDER_PREFIX = "kubeconfig path is not under the allowed prefix"
#: `NoOpClusterProfileAccessProvider.BuildConfigFromCP`: no provider, so no client for any profile.
NO_ACCESS_PROVIDER = "no access provider configured"


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """A kubeconfig that passed `validate_kubeconfig`; equal documents mean an unchanged config."""

    kubeconfig: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LoadError:
    """Why no client config: the `Active=False` reason and the error text (the condition message
    prefixes it with `load client config failed: `). `not_found` marks a missing Secret, which
    upstream does not retry: the Secret's creation triggers the next reconcile."""

    reason: mk.ClusterReason
    message: str
    not_found: bool = False


class InvalidPath(ValueError):
    """A `locationType: Path` location refused by path validation (`validateKubeConfigPath`)."""


def _os_error(op: str, exc: OSError) -> str:
    """An OSError as Go's `*PathError` prints it: `open /p: no such file or directory`."""
    reason = exc.strerror or str(exc)
    return f"{op} {exc.filename}: {reason[:1].lower()}{reason[1:]}"


def _go_clean(path: str) -> str:
    """`filepath.Clean`: unlike posixpath.normpath, a leading `//` is one `/`."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def validate_path(path: str, prefix: str) -> str:
    """The symlink-free path of a kubeconfig file that must lie under `prefix`; raises InvalidPath
    with upstream's message otherwise. Reads the filesystem (to resolve symlinks), nothing else."""
    if not path:
        raise InvalidPath("kubeconfig path must not be empty")
    cleaned = _go_clean(path)
    if ".." in cleaned.split("/"):
        raise InvalidPath(f'{_NOT_UNDER_PREFIX}: path contains ".."')
    if not cleaned.startswith("/"):
        raise InvalidPath(f"{_NOT_UNDER_PREFIX}: path must be absolute")
    try:
        allowed = os.path.realpath(prefix, strict=True)
    except OSError:
        raise InvalidPath(f'{_NOT_UNDER_PREFIX}: "{cleaned}" is not under "{_go_clean(prefix)}"') from None
    try:
        resolved = os.path.realpath(cleaned, strict=True)
    except OSError as exc:
        raise InvalidPath(f"cannot resolve kubeconfig path symlinks: {_os_error('lstat', exc)}") from exc
    # The separator keeps /etc/kueue from matching /etc/kueue-other.
    if not (resolved + "/").startswith(allowed.rstrip("/") + "/"):
        raise InvalidPath(f'{_NOT_UNDER_PREFIX}: "{resolved}" is not under "{allowed}"')
    return resolved


def parse_kubeconfig(data: bytes) -> Mapping[str, Any] | str:
    """A kubeconfig file's document (YAML or JSON; empty is an empty config, as `clientcmd.Load`
    reads it), or why it is not one, as the `InsecureKubeConfig` message."""
    try:
        doc = yaml.safe_load(data.decode())
    except UnicodeDecodeError as exc:
        return f"failed to parse kubeconfig(apiconfig): {exc}"
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        return f"failed to parse kubeconfig(apiconfig): error converting YAML to JSON: yaml: {where}{problem}"
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        return f"failed to parse kubeconfig(apiconfig): expected an object, got {type(doc).__name__}"
    return doc


def _secret_kubeconfig(name: str, secrets: Mapping[str, Obj]) -> bytes | LoadError:
    secret = secrets.get(name)
    if secret is None:
        return LoadError(mk.ClusterReason.BAD_KUBECONFIG, f'secrets "{name}" not found', not_found=True)
    data = (secret.get("data") or {}).get(mk.CONFIG_SECRET_KEY)
    if data is None:
        return LoadError(mk.ClusterReason.BAD_KUBECONFIG, f'key "{mk.CONFIG_SECRET_KEY}" not found in secret "{name}"')
    return base64.b64decode(data)  # Secret data is base64 on the wire; the API server checked it


def _path_kubeconfig(
    path: str, *, path_validation: bool, prefix: str, read_file: Callable[[str], bytes]
) -> bytes | LoadError:
    if path_validation:
        try:
            path = validate_path(path, prefix)
        except InvalidPath as exc:
            return LoadError(mk.ClusterReason.BAD_KUBECONFIG, str(exc))
    try:
        return read_file(path)
    except OSError as exc:
        return LoadError(mk.ClusterReason.BAD_KUBECONFIG, _os_error("open", exc))


def _cluster_profile(ref: Mapping[str, Any], profiles: Mapping[str, Obj], *, enabled: bool) -> LoadError:
    """`loadClientConfig`'s ClusterProfile branch without an access provider. The missing profile's
    message is the cached client's NotFound (its kind, not its resource, as the e2e suite sees it)."""
    if not enabled:
        return LoadError(
            mk.ClusterReason.CLUSTER_PROFILE_FEATURE_DISABLED, "MultiKueueClusterProfile feature gate is disabled"
        )
    name = str(ref.get("name") or "")
    if name not in profiles:
        return LoadError(
            mk.ClusterReason.BAD_CLUSTER_PROFILE,
            f'{mk.CLUSTER_PROFILE_KIND}.{mk.CLUSTER_PROFILE_GROUP} "{name}" not found',
            not_found=True,
        )
    return LoadError(mk.ClusterReason.BAD_CLUSTER_PROFILE, NO_ACCESS_PROVIDER)


def load_client_config(
    cluster: Obj,
    secrets: Mapping[str, Obj],
    *,
    path_validation: bool,
    read_file: Callable[[str], bytes],
    prefix: str = mk.KUBECONFIG_PATH_PREFIX,
    cluster_profiles: Mapping[str, Obj] | None = None,
) -> ClientConfig | LoadError:
    """The kubeconfig a MultiKueueCluster points at, validated (`loadClientConfig`).

    `secrets` holds the Secrets of Kueue's namespace by name; `path_validation` is gate
    MultiKueueKubeConfigPathValidation (off: any path is read, and the reconciler warns);
    `cluster_profiles` the ClusterProfiles of Kueue's namespace by name, None while gate
    MultiKueueClusterProfile is off.
    """
    source = (cluster.get("spec") or {}).get("clusterSource") or {}
    if source.get("clusterProfileRef") is not None:
        profiles = cluster_profiles or {}
        return _cluster_profile(source["clusterProfileRef"], profiles, enabled=cluster_profiles is not None)
    ref = source.get("kubeConfig")
    if ref is None:
        return LoadError(mk.ClusterReason.BAD_KUBECONFIG, "kubeconfig reference is nil")
    location = str(ref.get("location") or "")
    if ref.get("locationType") == mk.LocationType.SECRET:
        data = _secret_kubeconfig(location, secrets)
    else:  # upstream reads anything but Secret as a path; the CRD defaults locationType to Secret
        data = _path_kubeconfig(location, path_validation=path_validation, prefix=prefix, read_file=read_file)
    if isinstance(data, LoadError):
        return data
    doc = parse_kubeconfig(data)
    if isinstance(doc, str):
        return LoadError(mk.ClusterReason.INSECURE_KUBECONFIG, doc)
    problem = kubeconfig.validate_kubeconfig(doc)
    if problem is not None:
        return LoadError(mk.ClusterReason.INSECURE_KUBECONFIG, problem)
    return ClientConfig(doc)
