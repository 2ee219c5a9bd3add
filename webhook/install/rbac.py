"""Who may do what: the manager's RBAC from one access table, and the user-facing roles.

`manager_access()` lists every API access the code makes, each with the module that makes it, so
the roles are generated from it and `tests/unit/install/test_rbac.py` can hold the code to it
(recorded calls of the webhook lookups and the cert manager must equal their entries; paths the
worker names must be granted, and nothing is granted that no code names). Upstream generates the
same from `+kubebuilder:rbac` markers into `config/components/rbac/role.yaml` (kueue ff69552e79).
The MultiKueue admission check (`webhook.worker.reconcilers.multikueue`, gate MultiKueue) reads
MultiKueueClusters and MultiKueueConfigs, writes the clusters' status, and reads the Secrets of our
namespace (in upstream's `manager-secrets-role`; ours is `kueue-manager-multikueue-role`); what it does on the worker clusters is granted there,
to the identity of each cluster's kubeconfig.

The worker's metrics server checks each scraper with a TokenReview and a SubjectAccessReview;
those creates are its own role, `kueue-metrics-auth-role` (upstream's `metrics_auth_role.yaml`).
Scrapers get `/metrics` from `kueue-metrics-reader` (upstream's `metrics_reader_role.yaml`), bound
by whoever installs Prometheus.

The user-facing roles (`kueue-batch-admin-role`, `kueue-batch-user-role` and a viewer/editor
pair per kind) keep upstream's names and aggregation labels (`config/components/rbac/*_role.yaml`
under `namePrefix: kueue-`), restricted to the kinds we serve, and the two pending-workloads viewers
of the visibility API.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.admission.jobframework import known_owners
from webhook.api import integrations, schema_budget, schema_usage
from webhook.api import trainjob as tj
from webhook.certmanager import conversion_crd_names
from webhook.visibility.api import PYKUEUE_GROUP

__all__ = [
    "BUDGET_EDITOR",
    "BUDGET_VIEWER",
    "CERT_MANAGER",
    "DASHBOARD",
    "LOCAL_QUEUE_LIMITS_VIEWER",
    "LOOKUPS",
    "METRICS_AUTH",
    "METRICS_READER",
    "USAGE_RECORD_VIEWER",
    "VISIBILITY_AUTH",
    "WORKER",
    "Access",
    "budget_roles",
    "local_queue_limits_role",
    "manager_access",
    "manager_rbac",
    "metrics_reader_role",
    "usage_record_viewer_role",
    "user_roles",
]

CERT_MANAGER = "webhook.certmanager"
LOOKUPS = "webhook.admission.lookups"
WORKER = "webhook.worker"
METRICS_AUTH = "webhook.worker.metrics_server"
METRICS_READER = "kueue-metrics-reader"
DASHBOARD = "webhook.dashboard"
VISIBILITY_AUTH = "webhook.visibility.auth"

_K = "kueue.x-k8s.io"
_ALL = ("create", "delete", "get", "list", "patch", "update", "watch")
_READ = ("get", "list", "watch")


@dataclass(frozen=True, slots=True)
class Access:
    """One grant: verbs on resources of a group, cluster-wide or in our namespace, and who needs it."""

    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    user: str
    why: str
    resource_names: tuple[str, ...] = ()
    namespaced: bool = False  # a Role in our namespace instead of the ClusterRole
    role: str = "manager"  # which role/binding pair carries it: manager, cert or leader-election


def _owner_access() -> Iterable[Access]:
    """The ancestor walk GETs owners of every kind any integration registers, and ReplicaSets."""
    by_group: dict[str, set[str]] = defaultdict(set)
    for group, kind in known_owners():
        by_group[group].add(integrations.plural(group, kind))
    for group in sorted(by_group):
        yield Access(
            group,
            tuple(sorted(by_group[group])),
            ("get",),
            LOOKUPS,
            "ancestor walk: GET the controller owner of a Job or Pod",
        )


def _integration_access() -> Iterable[Access]:
    """What each implemented integration's reconciler needs (`webhook.api.integrations` rows)."""
    for framework in integrations.implemented():
        for grant in framework.worker_access:
            group = framework.group if grant.group is None else grant.group
            yield Access(group, grant.resources, grant.verbs, WORKER, f"{framework.name}: {grant.why}")


def manager_access() -> tuple[Access, ...]:
    """Every grant of the manager's roles; the integrations' part follows the registry's rows."""
    return _manager_access(integrations.generation())


@functools.lru_cache(maxsize=2)
def _manager_access(_generation: int) -> tuple[Access, ...]:
    return (
        # -- the webhook server's lookups --------------------------------------------------------------
        Access("", ("namespaces",), _READ, LOOKUPS, "managedJobsNamespaceSelector needs namespace labels"),
        Access(_K, ("localqueues",), ("list", "watch"), LOOKUPS, "default LocalQueue exists?"),
        Access(schema_budget.GROUP, (schema_budget.PLURAL,), ("list", "watch"), LOOKUPS, "budget warnings (ours)"),
        Access(
            "authentication.k8s.io",
            ("selfsubjectreviews",),
            ("create",),
            LOOKUPS,
            "our own username: the submitting-user annotation trusts it (ours)",
        ),
        Access(
            _K,
            ("workloadpriorityclasses",),
            _READ,
            LOOKUPS,
            "default WorkloadPriorityClass exists? (get: one created a moment before the job)",
        ),
        Access(
            _K,
            ("clusterqueues",),
            ("list", "watch"),
            LOOKUPS,
            "submit-time warnings: the ClusterQueue's namespaceSelector and quotas",
        ),
        Access(
            integrations.TRAINJOB.group,
            tuple(sorted(tj.RUNTIME_RESOURCES.values())),
            ("get",),
            LOOKUPS,
            "the TrainJob webhook's topology checks read the runtime's pod templates",
        ),
        Access(
            _K,
            ("admissionchecks",),
            ("list", "watch"),
            LOOKUPS,
            "MultiKueue's managedBy default: which controller a ClusterQueue's checks belong to",
        ),
        *_owner_access(),
        # -- internal certificate management -----------------------------------------------------------
        Access(
            "",
            ("secrets",),
            ("get", "update"),
            CERT_MANAGER,
            "read and rotate the shared serving certificate",
            resource_names=("kueue-webhook-server-cert",),
            namespaced=True,
            role="cert",
        ),
        Access(
            "",
            ("secrets",),
            ("create",),
            CERT_MANAGER,
            "first replica creates the Secret (create cannot be name-scoped)",
            namespaced=True,
            role="cert",
        ),
        Access(
            "admissionregistration.k8s.io",
            ("mutatingwebhookconfigurations",),
            ("get", "patch"),
            CERT_MANAGER,
            "inject the caBundle",
            resource_names=("kueue-mutating-webhook-configuration",),
            role="cert",
        ),
        Access(
            "admissionregistration.k8s.io",
            ("validatingwebhookconfigurations",),
            ("get", "patch"),
            CERT_MANAGER,
            "inject the caBundle",
            resource_names=("kueue-validating-webhook-configuration",),
            role="cert",
        ),
        Access(
            "apiextensions.k8s.io",
            ("customresourcedefinitions",),
            ("get", "patch"),
            CERT_MANAGER,
            "inject the caBundle into conversion",
            resource_names=conversion_crd_names(),
            role="cert",
        ),
        # -- the admission worker ------------------------------------------------------------------------
        Access(_K, ("workloads",), _ALL, WORKER, "Workloads of Jobs and Pods"),
        Access(_K, ("workloads/status",), ("get", "patch", "update"), WORKER, "admission, conditions"),
        Access(
            _K,
            ("admissionchecks", "clusterqueues", "resourceflavors"),
            (*_READ, "update"),
            WORKER,
            "cache, and the resource-in-use finalizer",
        ),
        Access(
            _K,
            (
                "admissionchecks/finalizers",
                "clusterqueues/finalizers",
                "resourceflavors/finalizers",
                "workloads/finalizers",
            ),
            ("update",),
            WORKER,
            "finalizers",
        ),
        Access(_K, ("cohorts", "localqueues", "topologies", "workloadpriorityclasses"), _READ, WORKER, "cache"),
        Access(
            _K,
            ("admissionchecks/status", "clusterqueues/status", "cohorts/status", "localqueues/status"),
            ("get", "patch", "update"),
            WORKER,
            "queue status",
        ),
        *_integration_access(),
        Access(
            schema_usage.GROUP,
            (schema_usage.PLURAL,),
            ("create", "get", "list", "update"),
            WORKER,
            "usage accounting: one UsageRecord per period (ours)",
        ),
        Access(schema_budget.GROUP, (schema_budget.PLURAL,), _READ, WORKER, "budgets (ours)"),
        Access(
            schema_budget.GROUP, (f"{schema_budget.PLURAL}/status",), ("get", "patch"), WORKER, "budget status (ours)"
        ),
        Access("", ("namespaces",), _READ, WORKER, "ClusterQueue namespaceSelector"),
        Access("scheduling.k8s.io", ("priorityclasses",), _READ, WORKER, "workload priority"),
        Access("", ("limitranges",), _READ, WORKER, "LimitRange defaults and bounds of pending Workloads"),
        Access("node.k8s.io", ("runtimeclasses",), _READ, WORKER, "RuntimeClass pod overhead of pending Workloads"),
        Access("", ("nodes",), _READ, WORKER, "FailureRecoveryPolicy: is a terminating pod's node unreachable"),
        Access(
            "",
            ("pods",),
            ("delete", "get", "list", "watch"),
            WORKER,
            "FailureRecoveryPolicy: force-delete opted-in pods stuck on an unreachable node",
        ),
        Access("", ("pods/status",), ("patch",), WORKER, "FailureRecoveryPolicy: mark such a pod Failed"),
        Access(
            "",
            ("pods",),
            ("get", "list", "patch", "watch"),
            WORKER,
            "TAS: lift the topology gate of a TAS-admitted Workload's pods onto their domains",
        ),
        Access("", ("nodes",), _READ, WORKER, "TAS: a node a TAS-admitted Workload uses fails"),
        Access("", ("pods/status",), ("patch",), WORKER, "TAS: mark a pod Pending on a failed node Failed"),
        Access(
            "resource.k8s.io",
            ("deviceclasses", "resourceclaimtemplates"),
            _READ,
            WORKER,
            "DRA devices of pending Workloads",
        ),
        Access(
            _K,
            ("provisioningrequestconfigs",),
            _READ,
            WORKER,
            "provisioning-request admission check: the configs its checks name",
        ),
        Access(
            "autoscaling.x-k8s.io",
            ("provisioningrequests",),
            ("create", "delete", "list", "watch"),
            WORKER,
            "provisioning-request admission check: the requests it makes for Workloads",
        ),
        Access(
            "",
            ("podtemplates",),
            ("create", "get", "update"),
            WORKER,
            "provisioning-request admission check: the pod templates its requests refer to",
        ),
        Access(_K, ("multikueueclusters", "multikueueconfigs"), _READ, WORKER, "MultiKueue: worker clusters"),
        Access(
            _K,
            ("multikueueclusters/status",),
            ("get", "patch", "update"),
            WORKER,
            "MultiKueue: a worker cluster's Active condition",
        ),
        Access(
            "",
            ("secrets",),
            _READ,
            WORKER,
            "MultiKueue: the kubeconfigs of locationType: Secret clusters",
            namespaced=True,
            role="multikueue",
        ),
        Access(
            "multicluster.x-k8s.io",
            ("clusterprofiles",),
            _READ,
            WORKER,
            "MultiKueue: the ClusterProfiles clusterProfileRef clusters name (gate MultiKueueClusterProfile)",
            namespaced=True,
            role="multikueue",
        ),
        Access("events.k8s.io", ("events",), ("create", "patch"), WORKER, "events on Jobs, Pods and Workloads"),
        Access(
            "coordination.k8s.io",
            ("leases",),
            ("create", "get", "update"),
            WORKER,
            "leader election",
            namespaced=True,
            role="leader-election",
        ),
        # -- the worker's metrics server ------------------------------------------------------------------
        Access(
            "authentication.k8s.io",
            ("tokenreviews",),
            ("create",),
            METRICS_AUTH,
            "who is the scraper (its bearer token)",
            role="metrics-auth",
        ),
        Access(
            "authorization.k8s.io",
            ("subjectaccessreviews",),
            ("create",),
            METRICS_AUTH,
            "may the scraper get /metrics",
            role="metrics-auth",
        ),
        # -- the dashboard: its own ServiceAccount and role (`install.dashboard`), never the manager's ------
        Access(
            _K,
            ("clusterqueues", "cohorts", "localqueues", "resourceflavors", "workloads"),
            ("list", "watch"),
            DASHBOARD,
            "watch caches the pages are rendered from",
            role="dashboard",
        ),
        Access(
            schema_usage.GROUP,
            (schema_usage.PLURAL,),
            ("list", "watch"),
            DASHBOARD,
            "the usage page: resource-hours per team and hour",
            role="dashboard",
        ),
        # Events and Pods only where a namespace shares them: a ClusterRole with no cluster-wide binding
        # (`install.dashboard`), bound per namespace; never every Pod and Event of the cluster.
        Access(
            "",
            ("events", "pods"),
            ("list",),
            DASHBOARD,
            "a Workload's page: its Events and Pods, in namespaces that bind it",
            role="dashboard-details",
        ),
        Access(
            "authentication.k8s.io", ("tokenreviews",), ("create",), DASHBOARD, "who is the viewer", role="dashboard"
        ),
        Access(
            "authorization.k8s.io",
            ("subjectaccessreviews",),
            ("create",),
            DASHBOARD,
            "what the viewer may list, per resource and namespace",
            role="dashboard",
        ),
        # -- the worker's visibility server: built-in roles grant these (`install.visibility.auth_objects`) --
        Access(
            "",
            ("configmaps",),
            ("get",),
            VISIBILITY_AUTH,
            "front-proxy settings (extension-apiserver-authentication-reader)",
            resource_names=("extension-apiserver-authentication",),
            role="visibility-auth",
        ),
        Access(
            "authorization.k8s.io",
            ("subjectaccessreviews",),
            ("create",),
            VISIBILITY_AUTH,
            "may the caller read pending workloads (system:auth-delegator)",
            role="visibility-auth",
        ),
    )


# -- generation ----------------------------------------------------------------------------------------


def rules(entries: Iterable[Access]) -> list[dict[str, Any]]:
    """Policy rules merged per (group, verbs, names), resources sorted, rules in a fixed order."""
    merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], set[str]] = defaultdict(set)
    verbs_of: dict[tuple[str, str, tuple[str, ...]], set[str]] = defaultdict(set)
    for a in entries:
        for resource in a.resources:
            verbs_of[(a.group, resource, a.resource_names)].update(a.verbs)
    for (group, resource, names), verb_set in verbs_of.items():
        merged[(group, tuple(sorted(verb_set)), names)].add(resource)
    out = []
    for (group, verbs, names), resources in sorted(merged.items(), key=lambda kv: (kv[0][0], sorted(kv[1]), kv[0])):
        rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
        if names:
            rule["resourceNames"] = list(names)
        rule["verbs"] = list(verbs)
        out.append(rule)
    return out


def _binding(kind: str, name: str, role: str, namespace: str, service_account: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind == "RoleBinding":
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind.removesuffix("Binding"), "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
    }


#: (role key, namespaced) -> (role name, binding name), upstream's names where upstream has the role.
ROLE_NAMES = {
    ("manager", False): ("kueue-manager-role", "kueue-manager-rolebinding"),
    ("cert", False): ("kueue-manager-cert-role", "kueue-manager-cert-rolebinding"),
    ("cert", True): ("kueue-manager-secrets-role", "kueue-manager-secrets-rolebinding"),
    ("leader-election", True): ("kueue-leader-election-role", "kueue-leader-election-rolebinding"),
    # Upstream grants these in its `manager-secrets-role`, which ours keeps for the internal
    # certificate (left out when cert-manager provides it); MultiKueue needs them either way.
    ("multikueue", True): ("kueue-manager-multikueue-role", "kueue-manager-multikueue-rolebinding"),
    ("metrics-auth", False): ("kueue-metrics-auth-role", "kueue-metrics-auth-rolebinding"),
}


def manager_rbac(
    namespace: str, service_account: str, *, access: Sequence[Access] | None = None
) -> list[dict[str, Any]]:
    """ClusterRoles, Roles and their bindings for the manager's service account."""
    out: list[dict[str, Any]] = []
    access = manager_access() if access is None else access
    for (key, namespaced), (role_name, binding_name) in ROLE_NAMES.items():
        entries = [a for a in access if a.role == key and a.namespaced == namespaced]
        if not entries:
            continue
        kind = "Role" if namespaced else "ClusterRole"
        meta: dict[str, Any] = {"name": role_name}
        if namespaced:
            meta["namespace"] = namespace
        out.append(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules(entries)}
        )
        out.append(_binding(f"{kind}Binding", binding_name, role_name, namespace, service_account))
    return out


def metrics_reader_role() -> dict[str, Any]:
    """What a scraper needs: `get` on the non-resource URL `/metrics` (bind it to Prometheus's account)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": METRICS_READER},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }


# -- user-facing roles -----------------------------------------------------------------------------

_ADMIN = "rbac.kueue.x-k8s.io/batch-admin"
_USER = "rbac.kueue.x-k8s.io/batch-user"
_AGG_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"
_AGG_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
_AGG_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"


@dataclass(frozen=True, slots=True)
class _UserKind:
    """A kind users see: its roles' stem, and which audiences each role aggregates into."""

    stem: str
    group: str
    plural: str
    status: bool
    viewer_labels: tuple[str, ...]
    editor_labels: tuple[str, ...]


_SUBMITTED_VIEWERS = (_ADMIN, _USER, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT)
"""Who views a kind users submit: batch admins and users, and the built-in view/edit/admin."""

# Cluster-scoped kinds are for batch admins (and namespace admins may view them); namespaced
# kinds users submit to are for batch users too, and viewable through the built-in view/edit/admin.
_USER_KINDS = (
    _UserKind("clusterqueue", _K, "clusterqueues", True, (_ADMIN, _AGG_ADMIN), (_ADMIN,)),
    _UserKind("cohort", _K, "cohorts", False, (_ADMIN, _AGG_ADMIN), (_ADMIN,)),
    _UserKind("jaxjob", "kubeflow.org", "jaxjobs", True, _SUBMITTED_VIEWERS, (_ADMIN, _USER)),
    _UserKind("job", "batch", "jobs", True, (_ADMIN, _USER, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT), (_ADMIN, _USER)),
    _UserKind(
        "jobset", "jobset.x-k8s.io", "jobsets", True, (_ADMIN, _USER, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT), (_ADMIN, _USER)
    ),
    _UserKind(
        "leaderworkerset",
        "leaderworkerset.x-k8s.io",
        "leaderworkersets",
        True,
        (_ADMIN, _USER, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT),
        (_ADMIN, _USER),
    ),
    _UserKind("localqueue", _K, "localqueues", True, (_ADMIN, _USER, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT), (_ADMIN,)),
    _UserKind("mpijob", "kubeflow.org", "mpijobs", True, _SUBMITTED_VIEWERS, (_ADMIN, _USER)),
    _UserKind("paddlejob", "kubeflow.org", "paddlejobs", True, _SUBMITTED_VIEWERS, (_ADMIN, _USER)),
    _UserKind("pytorchjob", "kubeflow.org", "pytorchjobs", True, _SUBMITTED_VIEWERS, (_ADMIN, _USER)),
    _UserKind("resourceflavor", _K, "resourceflavors", False, (_ADMIN, _AGG_ADMIN), (_ADMIN,)),
    _UserKind("tfjob", "kubeflow.org", "tfjobs", True, _SUBMITTED_VIEWERS, (_ADMIN, _USER)),
    _UserKind("topology", _K, "topologies", False, (_ADMIN, _AGG_ADMIN), (_ADMIN,)),
    _UserKind("workload", _K, "workloads", True, (_ADMIN, _USER, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT), (_ADMIN,)),
    _UserKind("xgboostjob", "kubeflow.org", "xgboostjobs", True, _SUBMITTED_VIEWERS, (_ADMIN, _USER)),
)


def _user_role(kind: _UserKind, editor: bool) -> dict[str, Any]:
    suffix = "editor" if editor else "viewer"
    labels = {"rbac.kueue.x-k8s.io/role": f"{kind.stem}-{suffix}"}
    labels.update({label: "true" for label in (kind.editor_labels if editor else kind.viewer_labels)})
    role_rules: list[dict[str, Any]] = [
        {"apiGroups": [kind.group], "resources": [kind.plural], "verbs": list(_ALL if editor else _READ)}
    ]
    if kind.status:
        role_rules.append({"apiGroups": [kind.group], "resources": [f"{kind.plural}/status"], "verbs": ["get"]})
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"kueue-{kind.stem}-{suffix}-role", "labels": labels},
        "rules": role_rules,
    }


def user_roles() -> list[dict[str, Any]]:
    """batch-admin and batch-user (aggregated by label), a viewer/editor pair per kind, and the metrics reader."""
    aggregated = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"kueue-batch-{who}-role"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]},
            "rules": [],
        }
        for who, label in (("admin", _ADMIN), ("user", _USER))
    ]
    return [
        *aggregated,
        *(_user_role(kind, editor) for kind in _USER_KINDS for editor in (False, True)),
        *(_pending_workloads_role(scope, labels) for scope, labels in _PENDING_WORKLOADS),
        local_queue_limits_role(),
        usage_record_viewer_role(),
        *budget_roles(),
        metrics_reader_role(),
    ]


# The visibility API's reads (`pending_workloads_{cq,lq}_viewer_role.yaml`): a ClusterQueue's queue is
# for batch admins, a LocalQueue's for its namespace's users too.
_PENDING_WORKLOADS = (
    ("cq", (_ADMIN, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT)),
    ("lq", (_ADMIN, _USER, _AGG_VIEW, _AGG_ADMIN, _AGG_EDIT)),
)


def _pending_workloads_role(scope: str, labels: tuple[str, ...]) -> dict[str, Any]:
    plural = {"cq": "clusterqueues", "lq": "localqueues"}[scope]
    meta_labels = {
        "rbac.kueue.x-k8s.io/role": f"pending-workloads-{scope}-viewer",
        **{label: "true" for label in labels},
    }
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"kueue-pending-workloads-{scope}-viewer-role", "labels": meta_labels},
        "rules": [
            {
                "apiGroups": ["visibility.kueue.x-k8s.io"],
                "resources": [f"{plural}/pendingworkloads"],
                "verbs": list(_READ),
            }
        ],
    }


LOCAL_QUEUE_LIMITS_VIEWER = "kueue-localqueue-limits-viewer-role"


def local_queue_limits_role() -> dict[str, Any]:
    """Our group's reads (`visibility.pykueue.io`): a LocalQueue's limits and its pending workloads with
    estimates, for whoever may read the LocalQueue's pending workloads (aggregated as upstream's lq viewer)."""
    labels = {
        "rbac.kueue.x-k8s.io/role": "localqueue-limits-viewer",
        **{label: "true" for label in dict(_PENDING_WORKLOADS)["lq"]},
    }
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": LOCAL_QUEUE_LIMITS_VIEWER, "labels": labels},
        "rules": [
            {
                "apiGroups": [PYKUEUE_GROUP],
                "resources": ["localqueues/limits", "localqueues/pendingworkloads"],
                "verbs": list(_READ),
            }
        ],
    }


USAGE_RECORD_VIEWER = "kueue-usagerecord-viewer-role"
BUDGET_VIEWER = "kueue-budget-viewer-role"
BUDGET_EDITOR = "kueue-budget-editor-role"


def usage_record_viewer_role() -> dict[str, Any]:
    """Reading the UsageRecords (ours, `pykueue.io`: `kubectl kueue usage`): cluster-wide usage of every
    team, so for batch admins only (aggregated into kueue-batch-admin-role). Nobody but the worker
    writes them: no editor role."""
    return _group_role(USAGE_RECORD_VIEWER, "usagerecord-viewer", schema_usage.PLURAL, _READ)


def budget_roles() -> list[dict[str, Any]]:
    """Reading and writing Budgets (ours, `pykueue.io`): every team's limits and spend, so for batch
    admins only (both aggregated into kueue-batch-admin-role); the worker alone writes their status."""
    return [
        _group_role(BUDGET_VIEWER, "budget-viewer", schema_budget.PLURAL, _READ),
        _group_role(
            BUDGET_EDITOR, "budget-editor", schema_budget.PLURAL, (*_READ, "create", "update", "patch", "delete")
        ),
    ]


def _group_role(name: str, role: str, plural: str, verbs: Iterable[str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"rbac.kueue.x-k8s.io/role": role, _ADMIN: "true"}},
        "rules": [{"apiGroups": [schema_usage.GROUP], "resources": [plural], "verbs": list(verbs)}],
    }
