"""The integration registry: one record per job framework, the one place every other table is
derived from.

Mirrors `RegisterIntegration` and `IntegrationCallbacks` in
`pkg/controller/jobframework/integrationmanager.go` (upstream v0.19.2). Upstream's packages
register themselves from `init()`; here each framework is one `Framework` row, and the row names
the two modules that implement it by import path, so this module stays pure data:

* `webhook`: a module of `webhook.admission` with `default`, `validate_create` and
  `validate_update` (the admission app serves it at controller-runtime's paths and the
  webhook configurations register it);
* `adapter`: a module of `webhook.worker.integrations` with `setup(ctx)` (the Manager builds its
  reconciler and informers from it, `webhook.worker.jobframework.setup`).

From the rows come: the framework names the Configuration accepts and whether each has a
MultiKueue adapter (`webhook.config.validation`), the ones this project implements (a row with a
webhook module), the kinds the webhooks' ancestor walk knows, the resource plural of each kind,
the manager's RBAC (`webhook.install.rbac`), the shipped Configuration's frameworks, and which
reconcilers the worker runs. Adding an integration is its adapter module, its webhook module and
its row (README, "Adding an integration").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = [
    "APPWRAPPER",
    "BATCH_JOB",
    "DEPLOYMENT",
    "JAXJOB",
    "JOBSET",
    "LEADER_WORKER_SET",
    "MPIJOB",
    "PADDLEJOB",
    "POD",
    "PYTORCHJOB",
    "RAYCLUSTER",
    "RAYJOB",
    "RAYSERVICE",
    "SPARK_APPLICATION",
    "STATEFULSET",
    "TFJOB",
    "TRAINJOB",
    "XGBOOSTJOB",
    "Framework",
    "Grant",
    "all_frameworks",
    "by_group_kind",
    "enabled",
    "generation",
    "get",
    "implemented",
    "plural",
    "register",
    "registered",
]


@dataclass(frozen=True, slots=True)
class Grant:
    """One RBAC rule the worker needs for a framework (group None: the framework's own group)."""

    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    group: str | None = None


@dataclass(frozen=True, slots=True)
class Framework:
    """One job framework as `integrations.frameworks` names it."""

    name: str
    group: str
    version: str
    kind: str
    resource: str
    """The resource plural: the API path, the informers' and the store's kind."""
    multikueue: bool = True
    """Upstream has a built-in MultiKueue adapter for it (`MultiKueueAdapter`)."""
    webhook: str | None = None
    """Import path of its admission module; None: not implemented by this project."""
    adapter: str | None = None
    """Import path of its worker module; None: it needs no reconciler of its own."""
    multikueue_adapter: str | None = None
    """Import path of the module exporting its MultiKueue `ADAPTER` (`module:NAME` when a module
    holds several, one per kind); None: MultiKueue rejects its Workloads (`No multikueue adapter
    found for owner kind ...`)."""
    mutate_operations: tuple[str, ...] = ("CREATE",)
    validate_calls_api: bool = False
    """Its validating webhook may read from the API server: decided off the event loop."""
    implicitly_enables: tuple[str, ...] = ()
    """`ImplicitlyEnabledFrameworkNames`: frameworks that run whenever this one is enabled."""
    worker_access: tuple[Grant, ...] = ()
    feature_gate: str | None = None
    """`CanSupportIntegration`: the (alpha) feature gate that must be on for the framework to run;
    left out of the shipped Configuration, as upstream comments it out there."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gvk(self) -> str:
        """`schema.GroupVersionKind.String()`, as upstream's messages print it."""
        return f"{self.group}/{self.version}, Kind={self.kind}"

    @property
    def implemented(self) -> bool:
        return self.webhook is not None

    def webhook_path(self, *, mutating: bool) -> str:
        """controller-runtime's `generateMutatePath` / `generateValidatePath`."""
        verb = "mutate" if mutating else "validate"
        return f"/{verb}-{self.group.replace('.', '-')}-{self.version}-{self.kind.lower()}"

    def webhook_name(self, *, mutating: bool) -> str:
        """`m<kind>.kb.io` / `v<kind>.kb.io`, the `+kubebuilder:webhook` names upstream uses."""
        return f"{'m' if mutating else 'v'}{self.kind.lower()}.kb.io"


_FRAMEWORKS: dict[str, Framework] = {}
_generation = [0]  # bumped by every change, so callers may cache what they derive from the rows


def register(framework: Framework) -> Framework:
    """Add a row; a name or a kind registered twice is a programming error (`errDuplicateFrameworkName`)."""
    if framework.name in _FRAMEWORKS:
        raise ValueError(f"duplicate framework name {framework.name!r}")
    if by_group_kind(framework.group, framework.kind) is not None:
        raise ValueError(f"kind {framework.kind}.{framework.group} is registered twice")
    _FRAMEWORKS[framework.name] = framework
    _generation[0] += 1
    return framework


@contextmanager
def registered(framework: Framework) -> Iterator[Framework]:
    """`framework` registered for the duration of the block (`EnableIntegrationsForTest`)."""
    register(framework)
    try:
        yield framework
    finally:
        del _FRAMEWORKS[framework.name]
        _generation[0] += 1


def generation() -> int:
    """Changes whenever a row is added or removed: a cache key for what callers derive from the rows."""
    return _generation[0]


def get(name: str) -> Framework | None:
    return _FRAMEWORKS.get(name)


def all_frameworks() -> tuple[Framework, ...]:
    """Every row, in registration order (the webhook configurations' order)."""
    return tuple(_FRAMEWORKS.values())


def implemented() -> tuple[Framework, ...]:
    return tuple(f for f in _FRAMEWORKS.values() if f.implemented)


def by_group_kind(group: str, kind: str) -> Framework | None:
    return next((f for f in _FRAMEWORKS.values() if f.group == group and f.kind == kind), None)


def plural(group: str, kind: str) -> str:
    """The resource plural of a kind: a framework's as registered, else the lower-cased kind + "s",
    right for the other owners the webhooks look up (ReplicaSet, Workload)."""
    framework = by_group_kind(group, kind)
    return kind.lower() + "s" if framework is None else framework.resource


def enabled(names: Iterable[str]) -> tuple[Framework, ...]:
    """The frameworks that run for `integrations.frameworks` = `names`: those named and those they
    implicitly enable (`collectImplicitlyEnabledIntegrations`), in registration order."""
    on = set(names)
    on |= {dep for name in tuple(on) if (f := _FRAMEWORKS.get(name)) for dep in f.implicitly_enables}
    return tuple(f for f in _FRAMEWORKS.values() if f.name in on)


_ALL = ("delete", "get", "list", "patch", "update", "watch")
_POD_PARENT = ("pod",)

# -- the rows (pkg/controller/jobs/*: each package's RegisterIntegration) ---------------------------
BATCH_JOB = register(
    Framework(
        "batch/job",
        "batch",
        "v1",
        "Job",
        "jobs",
        webhook="webhook.admission.job",
        adapter="webhook.worker.integrations.batchjob",
        multikueue_adapter="webhook.worker.integrations.multikueue.job",
        worker_access=(
            Grant(("jobs",), _ALL, "suspend, resume, inject; delete after the deactivation retention period"),
            Grant(("jobs/status",), ("get", "patch", "update"), "reset startTime when stopping a started Job"),
        ),
    )
)
POD = register(
    Framework(
        "pod",
        "",
        "v1",
        "Pod",
        "pods",
        webhook="webhook.admission.pod",
        adapter="webhook.worker.integrations.pod.reconciler",
        multikueue_adapter="webhook.worker.integrations.multikueue.pod",
        worker_access=(
            Grant(("pods",), _ALL, "gates, finalizers, stop"),
            Grant(("pods/status",), ("patch",), "pod conditions"),
        ),
    )
)
DEPLOYMENT = register(
    Framework(
        "deployment",
        "apps",
        "v1",
        "Deployment",
        "deployments",
        multikueue=False,
        webhook="webhook.admission.deployment",
        # Defaulted on UPDATE too: a changed queue name reaches the template.
        mutate_operations=("CREATE", "UPDATE"),
        implicitly_enables=_POD_PARENT,
    )
)
STATEFULSET = register(
    Framework(
        "statefulset",
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        webhook="webhook.admission.statefulset",
        adapter="webhook.worker.integrations.statefulset",
        multikueue_adapter="webhook.worker.integrations.multikueue.statefulset",
        mutate_operations=("CREATE", "UPDATE"),
        validate_calls_api=True,
        implicitly_enables=_POD_PARENT,
        worker_access=(
            Grant(("statefulsets",), ("get", "list", "watch"), "one pod group per StatefulSet; MultiKueue copies"),
        ),
    )
)
JOBSET = register(
    Framework(
        "jobset.x-k8s.io/jobset",
        "jobset.x-k8s.io",
        "v1alpha2",
        "JobSet",
        "jobsets",
        webhook="webhook.admission.jobset",
        adapter="webhook.worker.integrations.jobset",
        multikueue_adapter="webhook.worker.integrations.multikueue.jobset",
        worker_access=(
            Grant(("jobsets",), _ALL, "suspend, resume, inject; delete after the deactivation retention period"),
            Grant(
                ("jobsets/status",),
                ("get", "patch", "update"),
                "a MultiKueue manager mirrors the worker's JobSet status",
            ),
            Grant(("jobsets/finalizers",), ("get", "update"), "own Workloads with blockOwnerDeletion"),
        ),
    )
)


def _kubeflow(name: str, version: str, kind: str, *, webhook: str, delete: bool = True) -> Framework:
    """A Kubeflow replica-spec kind: all share one adapter (`webhook.worker.integrations.kubeflow`);
    the grants are each package's kubebuilder markers (JAXJob's leave out `delete`)."""
    resource = kind.lower() + "s"
    return Framework(
        name,
        "kubeflow.org",
        version,
        kind,
        resource,
        webhook=webhook,
        adapter="webhook.worker.integrations.kubeflow",
        multikueue_adapter=f"webhook.worker.integrations.multikueue.kubeflow:{kind.upper()}",
        worker_access=(
            Grant(
                (resource,),
                _ALL if delete else tuple(v for v in _ALL if v != "delete"),
                "suspend, resume, inject; delete after the deactivation retention period",
            ),
            Grant(
                (f"{resource}/status",), ("get", "patch", "update"), "a MultiKueue manager mirrors the worker's status"
            ),
            Grant((f"{resource}/finalizers",), ("get", "update"), "own Workloads with blockOwnerDeletion"),
        ),
    )


_TRAINING_OPERATOR_WEBHOOK = "webhook.admission.kubeflow"
MPIJOB = register(_kubeflow("kubeflow.org/mpijob", "v2beta1", "MPIJob", webhook="webhook.admission.mpijob"))
PADDLEJOB = register(_kubeflow("kubeflow.org/paddlejob", "v1", "PaddleJob", webhook=_TRAINING_OPERATOR_WEBHOOK))
PYTORCHJOB = register(_kubeflow("kubeflow.org/pytorchjob", "v1", "PyTorchJob", webhook=_TRAINING_OPERATOR_WEBHOOK))
TFJOB = register(_kubeflow("kubeflow.org/tfjob", "v1", "TFJob", webhook=_TRAINING_OPERATOR_WEBHOOK))
XGBOOSTJOB = register(_kubeflow("kubeflow.org/xgboostjob", "v1", "XGBoostJob", webhook=_TRAINING_OPERATOR_WEBHOOK))
JAXJOB = register(_kubeflow("kubeflow.org/jaxjob", "v1", "JAXJob", webhook=_TRAINING_OPERATOR_WEBHOOK, delete=False))
TRAINJOB = register(
    Framework(
        "trainer.kubeflow.org/trainjob",
        "trainer.kubeflow.org",
        "v1alpha1",
        "TrainJob",
        "trainjobs",
        webhook="webhook.admission.trainjob",
        adapter="webhook.worker.integrations.trainjob",
        multikueue_adapter="webhook.worker.integrations.multikueue.trainjob",
        validate_calls_api=True,  # with TopologyAwareScheduling it reads the TrainJob's runtime
        worker_access=(  # upstream's +kubebuilder:rbac markers (pkg/controller/jobs/trainjob)
            Grant(("trainjobs",), ("get", "list", "patch", "update", "watch"), "suspend, start, stop (runtime patch)"),
            Grant(
                ("trainjobs/status",), ("get", "patch", "update"), "a MultiKueue manager mirrors the worker's status"
            ),
            Grant(("trainjobs/finalizers",), ("get", "update"), "upstream's grant"),
            Grant(
                ("clustertrainingruntimes", "trainingruntimes"),
                ("get", "list", "watch"),
                "pod sets from the runtime's JobSet template",
            ),
        ),
    )
)


def _ray(name: str, kind: str, *, reads_clusters: bool) -> Framework:
    """A KubeRay kind: all share one adapter (`webhook.worker.integrations.ray`) and one webhook
    module; the grants are each package's kubebuilder markers (a RayJob's and a RayService's
    controller also watch the RayClusters KubeRay makes for them)."""
    resource = kind.lower() + "s"
    grants = [
        Grant((resource,), _ALL, "suspend, resume, inject; delete after the deactivation retention period"),
        Grant((f"{resource}/status",), ("get", "patch", "update"), "upstream's grant; no status is written"),
        Grant((f"{resource}/finalizers",), ("get", "update"), "own Workloads with blockOwnerDeletion"),
    ]
    if reads_clusters:
        grants.append(Grant(("rayclusters",), ("get", "list", "watch"), "the RayCluster KubeRay made for it"))
    return Framework(
        name,
        "ray.io",
        "v1",
        kind,
        resource,
        webhook="webhook.admission.ray",
        adapter="webhook.worker.integrations.ray",
        worker_access=tuple(grants),
    )


RAYJOB = register(_ray("ray.io/rayjob", "RayJob", reads_clusters=True))
RAYCLUSTER = register(_ray("ray.io/raycluster", "RayCluster", reads_clusters=False))
RAYSERVICE = register(_ray("ray.io/rayservice", "RayService", reads_clusters=True))
LEADER_WORKER_SET = register(
    Framework(
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "leaderworkerset.x-k8s.io",
        "v1",
        "LeaderWorkerSet",
        "leaderworkersets",
        webhook="webhook.admission.leaderworkerset",
        adapter="webhook.worker.integrations.leaderworkerset",
        mutate_operations=("CREATE", "UPDATE"),
        implicitly_enables=_POD_PARENT,
        worker_access=(
            Grant(("leaderworkersets",), ("get", "list", "watch"), "one Workload per group of a LeaderWorkerSet"),
            Grant(("leaderworkersets/status",), ("get", "patch", "update"), "upstream's kubebuilder markers"),
            Grant(("statefulsets",), ("list", "watch"), "a revision change ungates the old pods", group="apps"),
        ),
    )
)
APPWRAPPER = register(
    Framework(
        "workload.codeflare.dev/appwrapper",
        "workload.codeflare.dev",
        "v1beta2",
        "AppWrapper",
        "appwrappers",
        webhook="webhook.admission.appwrapper",
        adapter="webhook.worker.integrations.appwrapper",
        multikueue_adapter="webhook.worker.integrations.multikueue.appwrapper",
        worker_access=(
            Grant(("appwrappers",), _ALL, "resume with podSetInfos, suspend and clear them; delete after deactivation"),
            Grant(
                ("appwrappers/status",), ("get", "patch", "update"), "a MultiKueue manager mirrors the worker's status"
            ),
            Grant(
                ("appwrappers/finalizers",),
                ("get", "update"),
                "a Workload whose ownerReference blocks the AppWrapper's deletion",
            ),
        ),
    )
)
SPARK_APPLICATION = register(
    Framework(
        "sparkoperator.k8s.io/sparkapplication",
        "sparkoperator.k8s.io",
        "v1beta2",
        "SparkApplication",
        "sparkapplications",
        multikueue=False,
        webhook="webhook.admission.spark",
        adapter="webhook.worker.integrations.spark",
        worker_access=(  # upstream's one kubebuilder marker (pkg/controller/jobs/sparkapplication)
            Grant(
                ("sparkapplications",),
                ("get", "list", "watch", "update", "patch", "delete"),
                "suspend, resume, inject; delete after the deactivation retention period",
            ),
        ),
        feature_gate="SparkApplicationIntegration",
    )
)
