"""The manager's RBAC against the API calls the code makes.

* Recorded: the webhook lookups and the cert manager run against a recording fake API; every
  call must be granted to that module's entries, and every verb those entries grant must have
  been used (no more, no less).
* Scanned: every API path the code under webhook/ spells out (`object_path("g/v", "plural")`,
  "/api/..." and "/apis/..." literals) must be granted; every resource granted to the worker must
  be named somewhere in webhook/worker.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.unit.cert_cluster import cluster_objects, manager
from tests.unit.fake_kube import FakeKube
from webhook.admission.jobframework import known_owners
from webhook.admission.lookups import ClusterLookups
from webhook.api import integrations
from webhook.install import rbac, visibility
from webhook.worker.metrics_server import Authorizer

WEBHOOK = Path(__file__).resolve().parents[3] / "webhook"
NAMESPACE = "kueue-system"


class Call(NamedTuple):
    group: str
    resource: str  # with /subresource
    verb: str
    name: str | None
    namespace: str | None


def parse(method: str, path: str) -> Call:
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], (rest[1] if len(rest) > 1 else None)
    if len(rest) > 2:
        resource += "/" + rest[2]
    verb = {
        "GET": "get" if name else "list",
        "LIST": "list",
        "WATCH": "watch",
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
    }[method]
    return Call(group, resource, verb, name, namespace)


def grants(entry: rbac.Access, call: Call) -> bool:
    return (
        entry.group == call.group
        and call.resource in entry.resources
        and call.verb in entry.verbs
        and (not entry.resource_names or call.name in entry.resource_names)
        and (not entry.namespaced or call.namespace == NAMESPACE)
    )


def entries_of(user: str) -> list[rbac.Access]:
    return [a for a in rbac.manager_access() if a.user == user]


def granted_triples(entries: Iterable[rbac.Access]) -> set[tuple[str, str, str]]:
    return {(a.group, r, v) for a in entries for r in a.resources for v in a.verbs}


# -- recorded -------------------------------------------------------------------------------------


def lookups_calls() -> list[Call]:
    kube = FakeKube()
    lookups = ClusterLookups(kube)  # type: ignore[arg-type]
    lookups.start()
    try:
        deadline = time.monotonic() + 5
        while not lookups.synced() or sum(m == "WATCH" for m, _ in kube.calls) < 5:
            assert time.monotonic() < deadline, "lookups never synced against the fake"
            time.sleep(0.01)
        with pytest.raises(Exception, match="not found"):
            lookups.namespace_labels("created-a-moment-ago")
        assert not lookups.workload_priority_class_exists("created-a-moment-ago")
        for group, kind in sorted(known_owners()):
            api_version = f"{group}/v1" if group else "v1"
            assert lookups.get_owner("ns", api_version, kind, "owner") is None
        assert lookups.training_runtime("ClusterTrainingRuntime", "", "runtime") is None
        assert lookups.training_runtime("TrainingRuntime", "ns", "runtime") is None
        assert lookups.own_identity() == kube.identity  # from a SelfSubjectReview, before readiness
        assert lookups.budgets() == []
    finally:
        lookups.stop()
        kube.stop.set()
    return [parse(m, p) for m, p in kube.calls]


def cert_manager_calls(tmp_path: Path) -> list[Call]:
    kube = FakeKube(cluster_objects())
    manager(kube, tmp_path / "a").sync()  # creates the Secret, injects everywhere
    secret = "/api/v1/namespaces/kueue-system/secrets/kueue-webhook-server-cert"
    kube.put(secret, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert"}})
    manager(kube, tmp_path / "b").sync()  # an empty Secret is updated, a new CA re-injected
    return [parse(m, p) for m, p in kube.calls]


def metrics_auth_calls() -> list[Call]:
    kube = FakeKube()
    kube.tokens["t"] = {"username": "prometheus"}
    auth = Authorizer(kube)  # type: ignore[arg-type]
    assert auth.check("Bearer t", "GET", "/metrics") is not None  # reviewed, and denied
    return [parse(m, p) for m, p in kube.calls]


@pytest.mark.parametrize("user", [rbac.LOOKUPS, rbac.CERT_MANAGER, rbac.METRICS_AUTH])
def test_recorded_calls_equal_the_grants(tmp_path, user):
    calls = {
        rbac.LOOKUPS: lookups_calls,
        rbac.CERT_MANAGER: lambda: cert_manager_calls(tmp_path),
        rbac.METRICS_AUTH: metrics_auth_calls,
    }[user]()
    entries = entries_of(user)
    lacking = sorted({c for c in calls if not any(grants(e, c) for e in entries)})
    assert not lacking, f"{user} makes calls its RBAC entries do not grant: {lacking}"
    used = {(c.group, c.resource, c.verb) for c in calls}
    unused = sorted(granted_triples(entries) - used)
    assert not unused, f"RBAC grants {user} more than it uses: {unused}"


def test_generated_roles_carry_exactly_the_table():
    objs = rbac.manager_rbac(NAMESPACE, "sa")
    from_roles = {
        (g, r, v)
        for o in objs
        if o["kind"] in ("ClusterRole", "Role")
        for rule in o["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert from_roles == granted_triples(
        [a for a in rbac.manager_access() if (a.role, a.namespaced) in rbac.ROLE_NAMES]
    )
    bindings = [o for o in objs if o["kind"].endswith("Binding")]
    assert {b["roleRef"]["name"] for b in bindings} == {
        o["metadata"]["name"] for o in objs if not o["kind"].endswith("Binding")
    }


def test_visibility_grants_come_from_built_in_roles():
    """What the visibility server needs is bound to Kubernetes' own roles, not generated."""
    entries = [a for a in rbac.manager_access() if a.role == "visibility-auth"]
    assert {(a.group, a.resources) for a in entries} == {
        ("", ("configmaps",)),
        ("authorization.k8s.io", ("subjectaccessreviews",)),
    }
    bound = {o["roleRef"]["name"]: o for o in visibility.auth_objects(NAMESPACE, "sa")}
    assert bound["extension-apiserver-authentication-reader"]["metadata"]["namespace"] == "kube-system"
    assert "system:auth-delegator" in bound


# -- scanned --------------------------------------------------------------------------------------


def _constants(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _template(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)  # type: ignore[misc]
    return None


def references(path: Path) -> Iterator[tuple[str, str]]:
    """(group, resource) named by API paths spelled out in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    consts = _constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func == "object_path" and len(node.args) >= 2:
                api, plural = (
                    a.value if isinstance(a, ast.Constant) else consts.get(getattr(a, "id", "")) for a in node.args[:2]
                )
                if isinstance(api, str) and isinstance(plural, str):
                    yield (api.rsplit("/", 1)[0] if "/" in api else ""), plural
        text = _template(node)
        if text and text.startswith(("/api/", "/apis/")):
            parts = text.strip("/").split("/")
            rest = parts[2:] if parts[0] == "api" else parts[3:]
            if rest and rest[0] == "namespaces" and len(rest) >= 3:
                rest = rest[2:]
            if rest and rest[0] != "{}":
                yield ("" if parts[0] == "api" else parts[1]), rest[0]


def scan(root: Path) -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if {"install", "cli"} & set(path.relative_to(WEBHOOK).parts):  # the CLI acts with its user's rights
            continue
        for ref in references(path):
            found.setdefault(ref, []).append(str(path.relative_to(WEBHOOK.parent)))
    return found


def test_every_path_the_code_names_is_granted():
    granted = {(a.group, r.split("/")[0]) for a in rbac.manager_access() for r in a.resources}
    missing = {ref: where for ref, where in scan(WEBHOOK).items() if ref not in granted}
    assert not missing, f"the code calls resources no role grants: {missing}"


def test_the_scan_sees_what_it_should():
    found = scan(WEBHOOK)
    for ref in (
        ("", "namespaces"),
        ("kueue.x-k8s.io", "localqueues"),
        ("kueue.x-k8s.io", "workloadpriorityclasses"),
        ("", "secrets"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ):
        assert ref in found, ref


# Granted from the worker's brief before its code names them (the AdmissionCheck cache is still
# being written); drop an entry once the worker spells it out.
DECLARED_AHEAD = {("kueue.x-k8s.io", "admissionchecks")}


def test_worker_grants_are_named_by_the_worker():
    worker = WEBHOOK / "worker"
    source = "\n".join(p.read_text(encoding="utf-8") for p in worker.rglob("*.py"))
    # An adapter reaches its framework's resource through the registry row (`Framework.resource`).
    named = set(scan(worker)) | {(f.group, f.resource) for f in integrations.implemented() if f.adapter}
    unnamed = sorted(
        {
            (a.group, r.split("/")[0])
            for a in entries_of(rbac.WORKER)
            for r in a.resources
            if (a.group, r.split("/")[0]) not in named | DECLARED_AHEAD and f'"{r.split("/")[0]}"' not in source
        }
    )
    assert not unnamed, f"RBAC grants the worker resources it never names: {unnamed}"


def test_every_status_the_worker_writes_may_be_patched():
    """The worker writes every status subresource by merge patch (`worker.status.update_status`): a
    status granted `update` alone (the Budgets' once were) is written by nobody on a real cluster."""
    unpatchable = sorted(
        (a.group, r)
        for a in entries_of(rbac.WORKER)
        for r in a.resources
        if r.endswith("/status") and "patch" not in a.verbs
    )
    assert not unpatchable, f"status the worker writes without patch: {unpatchable}"
