"""Which kubeconfigs a MultiKueueCluster may use and where they come from: upstream v0.19.2
`TestValidateKubeconfig` and `TestValidateKubeConfigPath`
(`pkg/controller/admissionchecks/multikueue/multikueuecluster_test.go`) under their case names,
then every message of `loadClientConfig`, `validateKubeconfig`, `validateRestConfig` and
`isValidHostname` (`multikueuecluster.go`) and of client-go's checks they inherit."""

from __future__ import annotations

import base64
import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from webhook.api import kubeconfig as kc
from webhook.api import multikueue as mk
from webhook.worker.admissionchecks.multikueue import kubeconfig as load

CA_DATA = base64.b64encode(b"-----").decode()


def kubeconfig(*, cluster: Mapping[str, Any] | None = None, user: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Upstream's `kubeconfigBase`: cluster `test` at https://10.10.10.10 with CA data, user `u`,
    context `test-context` (current); `cluster`/`user` fields are merged in, None values removed."""
    base_cluster = {"server": "https://10.10.10.10", "certificate-authority-data": CA_DATA, **(cluster or {})}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {k: v for k, v in base_cluster.items() if v is not None}}],
        "users": [{"name": "u", "user": dict(user or {})}],
        "contexts": [{"name": "test-context", "context": {"cluster": "test", "user": "u"}}],
        "current-context": "test-context",
    }


# -- TestValidateKubeconfig ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "want_err"),
    [
        pytest.param(kubeconfig(user={"tokenFile": "/tmp/tokenfile"}), True, id="tokenFile not allowed"),
        pytest.param(kubeconfig(cluster={"insecure-skip-tls-verify": True}), True, id="insecure skip-tls"),
        pytest.param(
            kubeconfig(cluster={"certificate-authority": "/tmp/ca", "certificate-authority-data": None}),
            True,
            id="certificate-authority file disallowed",
        ),
        pytest.param(kubeconfig(), False, id="valid config"),
    ],
)
def test_validate_kubeconfig_upstream(doc: dict[str, Any], want_err: bool) -> None:
    """Upstream `TestValidateKubeconfig`."""
    assert (kc.validate_kubeconfig(doc) is not None) == want_err


# -- TestValidateKubeConfigPath -----------------------------------------------------------------------


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, str]:
    """An allowed directory holding a kubeconfig and a symlink that escapes it (upstream's setup)."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "worker.kubeconfig").write_text("test")
    external = tmp_path / "external"
    external.mkdir()
    (external / "external-secret").write_text("token")
    (allowed / "escape-symlink").symlink_to(external / "external-secret")
    # A sibling whose name starts with the allowed one's: only the path separator tells them apart.
    sibling = tmp_path / "allowed-other"
    sibling.mkdir()
    (sibling / "file").write_text("x")
    return {
        "allowed": str(allowed),
        "sibling": str(sibling / "file"),
        "valid": str(allowed / "worker.kubeconfig"),
        "symlink": str(allowed / "escape-symlink"),
    }


@pytest.mark.parametrize(
    ("path", "prefix", "err_contains"),
    [
        pytest.param("{valid}", "{allowed}", None, id="valid path under prefix"),
        pytest.param("", "{allowed}", "must not be empty", id="empty path"),
        pytest.param(
            "{allowed}/../etc/passwd",
            "{allowed}",
            "cannot resolve kubeconfig path symlinks",
            id="path with dot-dot traversal",
        ),
        pytest.param(
            "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "{allowed}",
            "cannot resolve kubeconfig path symlinks",
            id="path outside prefix",
        ),
        pytest.param("relative/path/file", "{allowed}", "must be absolute", id="relative path rejected"),
        pytest.param("{symlink}", "{allowed}", "not under", id="symlink escape rejected"),
        pytest.param(
            "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "/etc/multikueue/kubeconfigs",
            "not under",
            id="SA token path rejected",
        ),
        # Upstream uses /etc/kueue-other and /etc/kueue, which exist or not depending on the machine
        # (a system running here mounts /etc/kueue/metrics/certs): a private pair instead.
        pytest.param("{sibling}", "{allowed}", "not under", id="prefix name collision"),
    ],
)
def test_validate_kubeconfig_path_upstream(
    dirs: dict[str, str], path: str, prefix: str, err_contains: str | None
) -> None:
    """Upstream `TestValidateKubeConfigPath`, gate MultiKueueKubeConfigPathValidation on. Go's
    `filepath.Join` cleans the dot-dot case's path; `validate_path` cleans it itself."""
    path, prefix = path.format(**dirs), prefix.format(**dirs)
    if err_contains is None:
        assert load.validate_path(path, prefix) == os.path.realpath(path)
        return
    with pytest.raises(load.InvalidPath) as exc:
        load.validate_path(path, prefix)
    assert err_contains in str(exc.value)


def test_validate_kubeconfig_path_gate_off_allows_any_path() -> None:
    """Upstream `TestValidateKubeConfigPath` "safe FG disabled allows any path (legacy)": with the
    gate off the location is read as it is."""
    read: list[str] = []

    def read_file(path: str) -> bytes:
        read.append(path)
        return json.dumps(kubeconfig()).encode()

    got = load.load_client_config(
        cluster("Path", "/any/arbitrary/path"), {}, path_validation=False, read_file=read_file
    )
    assert got == load.ClientConfig(kubeconfig())
    assert read == ["/any/arbitrary/path"]


def test_path_validation_messages(tmp_path: Path) -> None:
    """The exact texts of `validateKubeConfigPath`'s errors."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "kc").write_text("x")
    outside = tmp_path / "outside"
    outside.write_text("x")
    cases = {
        "": "kubeconfig path must not be empty",
        "a/b": "kubeconfig path is not under the allowed prefix: path must be absolute",
        "../a": 'kubeconfig path is not under the allowed prefix: path contains ".."',
        str(outside): f'kubeconfig path is not under the allowed prefix: "{outside}" is not under "{allowed}"',
        f"{allowed}/missing/kc": f"cannot resolve kubeconfig path symlinks: lstat {allowed}/missing: "
        "no such file or directory",
    }
    for path, message in cases.items():
        with pytest.raises(load.InvalidPath) as exc:
            load.validate_path(path, str(allowed))
        assert str(exc.value) == message
    with pytest.raises(load.InvalidPath) as exc:
        load.validate_path("//etc/x", str(tmp_path / "absent") + "/")
    assert (
        str(exc.value) == f'kubeconfig path is not under the allowed prefix: "/etc/x" is not under "{tmp_path}/absent"'
    )
    assert load.validate_path(f"{allowed}//./kc", str(allowed)) == str((allowed / "kc").resolve())


# -- validateKubeconfig / validateRestConfig, message by message --------------------------------------


def _replace(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out[key] = value
    return out


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(kubeconfig(user={"token": "abc"}), None, id="inline token allowed"),
        pytest.param(
            kubeconfig(user={"client-certificate-data": CA_DATA, "client-key-data": CA_DATA}),
            None,
            id="client certificate data allowed",
        ),
        pytest.param(
            _replace(kubeconfig(), "users", [{"name": "u", "user": {}}, {"name": "v", "user": {"tokenFile": "/t"}}]),
            "tokenFile is not allowed",
            id="tokenFile of any user",
        ),
        pytest.param(
            kubeconfig(cluster={"insecure-skip-tls-verify": True}),
            "insecure TLS verification is not allowed for cluster test",
            id="insecure",
        ),
        pytest.param(
            kubeconfig(cluster={"certificate-authority": "/tmp/ca"}),
            "certificate-authority file paths are not allowed, use certificate-authority-data for cluster test",
            id="CA file",
        ),
        pytest.param(
            _replace(
                kubeconfig(),
                "clusters",
                [
                    {"name": "test", "cluster": {"server": "https://10.10.10.10"}},
                    {"name": "other", "cluster": {"certificate-authority-data": CA_DATA}},
                ],
            ),
            "server URL is required for cluster other",
            id="server of every cluster required",
        ),
        pytest.param(
            kubeconfig(cluster={"server": "https://-bad-.example.com"}),
            "untrusted server endpoint",
            id="untrusted host",
        ),
        pytest.param(
            kubeconfig(user={"username": "a", "password": "b"}),
            "basic auth is not allowed",
            id="basic auth",
        ),
        pytest.param(
            kubeconfig(user={"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"}}),
            "exec plugins are not allowed",
            id="exec plugin",
        ),
        pytest.param(
            kubeconfig(user={"auth-provider": {"name": "oidc"}}), "auth providers are not allowed", id="auth provider"
        ),
        pytest.param(
            kubeconfig(
                cluster={"server": "http://10.10.10.10", "certificate-authority-data": None},
                user={"exec": {"apiVersion": "v1", "command": "/bin/sh"}, "username": "a"},
            ),
            None,
            id="plain http: client-go reads no credentials, so none are judged",
        ),
        pytest.param(
            _replace(
                kubeconfig(user={"exec": {"apiVersion": "v1", "command": "/bin/sh"}}),
                "users",
                [
                    {"name": "u", "user": {}},
                    {"name": "other", "user": {"exec": {"apiVersion": "v1", "command": "/bin/sh"}}},
                ],
            ),
            None,
            id="only the current context's user is judged",
        ),
        pytest.param(
            kubeconfig(user={"token": "t", "username": "a"}),
            "invalid configuration: more than one authentication method found for u; found [token basicAuth], "
            "only one is allowed",
            id="token and basic auth",
        ),
        pytest.param(
            kubeconfig(user={"exec": {}, "auth-provider": {"name": "x"}}),
            "invalid configuration: [authProvider cannot be provided in combination with an exec plugin for u, "
            "command must be specified for u to use exec authentication plugin, "
            "apiVersion must be specified for u to use exec authentication plugin]",
            id="malformed exec",
        ),
        pytest.param(
            kubeconfig(user={"client-certificate-data": CA_DATA}),
            "invalid configuration: client-key-data or client-key must be specified for u to use the clientCert "
            "authentication method.",
            id="client certificate without key",
        ),
        pytest.param(
            _replace(kubeconfig(), "current-context", "missing"),
            "invalid configuration: [context was not found for specified context: missing, "
            "cluster has no server defined]",
            id="current context missing",
        ),
        pytest.param(
            _replace(kubeconfig(), "current-context", ""),
            "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment "
            "variable",
            id="no current context",
        ),
        pytest.param(
            {},
            "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment "
            "variable",
            id="empty document",
        ),
        pytest.param(
            _replace(kubeconfig(), "clusters", "x"),
            "failed to parse kubeconfig(apiconfig): clusters: expected a list, got str",
            id="not a kubeconfig",
        ),
        pytest.param(
            kubeconfig(cluster={"certificate-authority-data": "not base64!"}),
            "failed to parse kubeconfig(apiconfig): clusters[test].certificate-authority-data: illegal base64 data: "
            "Only base64 data is allowed",
            id="CA data not base64",
        ),
        pytest.param(
            _replace(kubeconfig(), "users", [{"name": "u", "user": {}}, {"name": "u", "user": {}}]),
            'failed to parse kubeconfig(apiconfig): users: duplicate name "u" in list',
            id="duplicate names",
        ),
    ],
)
def test_validate_kubeconfig_messages(doc: dict[str, Any], message: str | None) -> None:
    assert kc.validate_kubeconfig(doc) == message


@pytest.mark.parametrize(
    ("server", "valid"),
    [
        pytest.param("https://10.10.10.10", True, id="IPv4"),
        pytest.param("https://10.10.10.10:6443", True, id="IPv4 with port"),
        pytest.param("https://[::1]:6443", True, id="IPv6 with port"),
        pytest.param("https://[::1]", False, id="IPv6 without port: SplitHostPort fails, brackets stay"),
        pytest.param("https://kind-worker1-control-plane:6443", True, id="DNS name with port"),
        pytest.param("https://Worker.Example.COM", True, id="upper case is lowered first"),
        pytest.param("https://worker.example.com/prefix?x=1#y", True, id="path, query and fragment ignored"),
        pytest.param("https://user@worker.example.com", True, id="userinfo ignored"),
        pytest.param("https://-bad.example.com", False, id="not a DNS-1123 subdomain"),
        pytest.param("https://worker_1.example.com", False, id="underscore"),
        pytest.param("https://worker.example.com:port", False, id="port not numeric"),
        pytest.param("https://wor%6Bker.example.com", False, id="percent-escaped host"),
        pytest.param("https://[fe80::1%25eth0]:6443", False, id="IPv6 zone"),
        pytest.param("https://010.1.1.1", True, id="IPv4 with a leading zero passes as a DNS name"),
        pytest.param("10.10.10.10:6443", False, id="no scheme: first path segment has a colon"),
        pytest.param("worker.example.com", False, id="no scheme: no host"),
        pytest.param("//worker.example.com", True, id="scheme-relative"),
        pytest.param("https://worker.example.com\n", False, id="control character"),
        pytest.param("https://", False, id="empty host"),
        pytest.param("https://" + "a" * 254, False, id="too long"),
    ],
)
def test_is_valid_hostname(server: str, valid: bool) -> None:
    assert kc.is_valid_hostname(server.lower()) == valid


def test_loadable_document_keeps_the_current_context_only() -> None:
    """What the client library's loader sees: the current cluster and, over https only, its user."""
    doc = _replace(
        kubeconfig(user={"token": "abc"}),
        "users",
        [{"name": "u", "user": {"token": "abc"}}, {"name": "x", "user": {"exec": {"command": "/bin/sh"}}}],
    )
    got = kc.loadable_document(doc)
    assert got["clusters"] == [
        {"name": "current", "cluster": {"server": "https://10.10.10.10", "certificate-authority-data": CA_DATA}}
    ]
    assert got["users"] == [{"name": "current", "user": {"token": "abc"}}]
    plain = kubeconfig(cluster={"server": "http://10.10.10.10"}, user={"token": "abc"})
    assert kc.loadable_document(plain)["users"] == [{"name": "current", "user": {}}]
    with pytest.raises(ValueError, match="impersonation is not supported"):
        kc.loadable_document(kubeconfig(user={"token": "abc", "as": "admin"}))


# -- loadClientConfig ---------------------------------------------------------------------------------


def cluster(location_type: str | None, location: str) -> dict[str, Any]:
    ref = {"location": location} | ({"locationType": location_type} if location_type else {})
    return {"metadata": {"name": "worker1"}, "spec": {"clusterSource": {"kubeConfig": ref}}}


def secret(name: str, data: Mapping[str, bytes]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def _no_file(path: str) -> bytes:
    raise AssertionError(f"read {path}")


_VALID = json.dumps(kubeconfig(user={"token": "abc"})).encode()
_YAML = f"""
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://10.10.10.10
    certificate-authority-data: {CA_DATA}
users:
- name: u
  user:
    token: abc
contexts:
- name: test-context
  context: {{cluster: test, user: u}}
current-context: test-context
""".encode()


@pytest.mark.parametrize(
    ("obj", "secrets", "want"),
    [
        pytest.param(
            cluster("Secret", "worker1"),
            {"worker1": secret("worker1", {"kubeconfig": _VALID})},
            load.ClientConfig(kubeconfig(user={"token": "abc"})),
            id="secret",
        ),
        pytest.param(
            cluster("Secret", "worker1"),
            {"worker1": secret("worker1", {"kubeconfig": _YAML})},
            load.ClientConfig(kubeconfig(user={"token": "abc"})),
            id="secret read as YAML",
        ),
        pytest.param(
            cluster("Secret", "worker1"),
            {},
            load.LoadError(mk.ClusterReason.BAD_KUBECONFIG, 'secrets "worker1" not found', not_found=True),
            id="secret missing",
        ),
        pytest.param(
            cluster("Secret", "worker1"),
            {"worker1": secret("worker1", {"config": _VALID})},
            load.LoadError(mk.ClusterReason.BAD_KUBECONFIG, 'key "kubeconfig" not found in secret "worker1"'),
            id="key missing",
        ),
        pytest.param(
            cluster("Secret", "worker1"),
            {"worker1": secret("worker1", {"kubeconfig": json.dumps(kubeconfig(user={"tokenFile": "/t"})).encode()})},
            load.LoadError(mk.ClusterReason.INSECURE_KUBECONFIG, "tokenFile is not allowed"),
            id="insecure",
        ),
        pytest.param(
            cluster("Secret", "worker1"),
            {"worker1": secret("worker1", {"kubeconfig": b"clusters: [\n  - a: b\n  c"})},
            load.LoadError(
                mk.ClusterReason.INSECURE_KUBECONFIG,
                "failed to parse kubeconfig(apiconfig): error converting YAML to JSON: yaml: line 2: "
                "expected the node content, but found '-'",
            ),
            id="not YAML",
        ),
        pytest.param(
            cluster("Secret", "worker1"),
            {"worker1": secret("worker1", {"kubeconfig": b"- a\n"})},
            load.LoadError(
                mk.ClusterReason.INSECURE_KUBECONFIG,
                "failed to parse kubeconfig(apiconfig): expected an object, got list",
            ),
            id="not an object",
        ),
        pytest.param(
            cluster("Secret", "worker1"),
            {"worker1": secret("worker1", {"kubeconfig": b""})},
            load.LoadError(
                mk.ClusterReason.INSECURE_KUBECONFIG,
                "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER "
                "environment variable",
            ),
            id="empty kubeconfig",
        ),
        pytest.param(
            {"spec": {"clusterSource": {"clusterProfileRef": {"name": "cp"}}}},
            {},
            load.LoadError(
                mk.ClusterReason.CLUSTER_PROFILE_FEATURE_DISABLED, "MultiKueueClusterProfile feature gate is disabled"
            ),
            id="cluster profile, gate off",
        ),
        pytest.param(
            {"spec": {"clusterSource": {}}},
            {},
            load.LoadError(mk.ClusterReason.BAD_KUBECONFIG, "kubeconfig reference is nil"),
            id="no source",
        ),
    ],
)
def test_load_client_config(obj: dict[str, Any], secrets: dict[str, Any], want: object) -> None:
    assert load.load_client_config(obj, secrets, path_validation=False, read_file=_no_file) == want


_PROFILE_REF = {"spec": {"clusterSource": {"clusterProfileRef": {"name": "worker1"}}}}


# upstream's TestUpdateConfig ClusterProfile cases (multikueuecluster_test.go) without a test access
# provider: with none configured (`NoOpClusterProfileAccessProvider`) a found profile gives no client. The
# missing profile's text is the cached client's, as the multikueue/sequential e2e suite asserts it.
@pytest.mark.parametrize(
    ("profiles", "want"),
    [
        pytest.param(
            None,
            load.LoadError(
                mk.ClusterReason.CLUSTER_PROFILE_FEATURE_DISABLED, "MultiKueueClusterProfile feature gate is disabled"
            ),
            id="feature gate disabled",
        ),
        pytest.param(
            {"worker2": {"metadata": {"name": "worker2"}}},
            load.LoadError(
                mk.ClusterReason.BAD_CLUSTER_PROFILE,
                'ClusterProfile.multicluster.x-k8s.io "worker1" not found',
                not_found=True,
            ),
            id="missing cluster profile",
        ),
        pytest.param(
            {"worker1": {"metadata": {"name": "worker1"}}},
            load.LoadError(mk.ClusterReason.BAD_CLUSTER_PROFILE, "no access provider configured"),
            id="no access provider configured",
        ),
    ],
)
def test_load_client_config_from_a_cluster_profile(profiles: dict[str, Any] | None, want: object) -> None:
    got = load.load_client_config(
        _PROFILE_REF, {}, path_validation=False, read_file=_no_file, cluster_profiles=profiles
    )
    assert got == want


def test_load_client_config_from_a_path(tmp_path: Path) -> None:
    """A Path location is read under the prefix with validation on, anywhere with it off; a file
    that cannot be read is `BadKubeConfig` with Go's `open` error."""
    prefix = tmp_path / "kubeconfigs"
    prefix.mkdir()
    (prefix / "worker1").write_bytes(_VALID)

    def read_file(path: str) -> bytes:
        return Path(path).read_bytes()

    ok = load.load_client_config(
        cluster("Path", str(prefix / "worker1")), {}, path_validation=True, read_file=read_file, prefix=str(prefix)
    )
    assert ok == load.ClientConfig(kubeconfig(user={"token": "abc"}))
    refused = load.load_client_config(
        cluster("Path", "/etc/passwd"), {}, path_validation=True, read_file=read_file, prefix=str(prefix)
    )
    assert refused == load.LoadError(
        mk.ClusterReason.BAD_KUBECONFIG,
        f'kubeconfig path is not under the allowed prefix: "/etc/passwd" is not under "{prefix}"',
    )
    missing = load.load_client_config(
        cluster("Path", str(tmp_path / "nope")), {}, path_validation=False, read_file=read_file
    )
    assert missing == load.LoadError(
        mk.ClusterReason.BAD_KUBECONFIG, f"open {tmp_path / 'nope'}: no such file or directory"
    )
