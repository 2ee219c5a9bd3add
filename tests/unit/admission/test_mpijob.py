"""The MPIJob webhooks through the ASGI app: suspension, the TAS pod-index offset of a working
launcher's workers, upstream's denial messages.

Upstream's `pkg/controller/jobs/mpijob/mpijob_webhook_test.go` (v0.19.2) translated, keeping the
case names: every `TestDefault` case but the two that need a MultiKueue admission check
(`managedBy` defaulting; MultiKueue is not implemented), and
all of `TestValidateCreate`. The rest pins the order of the MPIJob webhook's checks, which
differs from the base webhook's, and the TAS checks' gate and errors.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest

from webhook.config import Configuration, Integrations

from .reviews import Driver, apply_patch, multikueue_lookups

Q = "kueue.x-k8s.io/queue-name"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
MAX_EXEC = "kueue.x-k8s.io/max-exec-time-seconds"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
GROUP = "kueue.x-k8s.io/podset-group-name"
OFFSET = "kueue.x-k8s.io/pod-index-offset"
MUTATE = "/mutate-kubeflow-org-v2beta1-mpijob"
VALIDATE = "/validate-kubeflow-org-v2beta1-mpijob"
ENABLED = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
ENABLED += "integrations: {frameworks: [batch/job, kubeflow.org/mpijob]}\n"
NO_TAS = Configuration(
    integrations=Integrations(frameworks=("batch/job", "kubeflow.org/mpijob")),
    feature_gates={"TopologyAwareScheduling": False},
)
DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def replica(replicas: int = 1) -> dict[str, Any]:
    """`GenericLauncher()` / `GenericWorker()`'s replica spec."""
    return {
        "replicas": replicas,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "mpijob", "image": "busybox"}]}},
    }


class MPI:
    """`testingmpijob.MakeMPIJob(name, "default")`: suspended, no replica specs until given."""

    def __init__(self) -> None:
        self.o: dict[str, Any] = {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": "job", "namespace": "default"},
            "spec": {"runPolicy": {"suspend": True}, "mpiReplicaSpecs": {}},
        }

    def queue(self, name: str) -> MPI:
        self.o["metadata"].setdefault("labels", {})[Q] = name
        return self

    def label(self, key: str, value: str) -> MPI:
        self.o["metadata"].setdefault("labels", {})[key] = value
        return self

    def replica(self, replica_type: str, spec: dict[str, Any] | None) -> MPI:
        """`GenericReplicaSpec(type, spec)`: a None spec stays a null map entry."""
        self.o["spec"]["mpiReplicaSpecs"][replica_type] = spec
        return self

    def launcher_and_workers(self, workers: int = 3) -> MPI:
        """`MPIJobReplicaSpecs({Launcher, 1}, {Worker, workers})`."""
        return self.replica("Launcher", replica()).replica("Worker", replica(workers))

    def run_launcher_as_worker(self, value: bool) -> MPI:
        self.o["spec"]["runLauncherAsWorker"] = value
        return self

    def pod_annotation(self, replica_type: str, key: str, value: str) -> MPI:
        template = self.o["spec"]["mpiReplicaSpecs"][replica_type]["template"]
        template.setdefault("metadata", {}).setdefault("annotations", {})[key] = value
        return self

    def managed_by(self, value: str) -> MPI:
        self.o["spec"]["runPolicy"]["managedBy"] = value
        return self

    def unsuspended(self) -> MPI:
        self.o["spec"]["runPolicy"].pop("suspend")
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.o)


def mpi_review(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": "u1",
        "kind": {"group": "kubeflow.org", "version": "v2beta1", "kind": "MPIJob"},
        "resource": {"group": "kubeflow.org", "version": "v2beta1", "resource": "mpijobs"},
        "operation": "UPDATE" if old is not None else "CREATE",
        "namespace": obj["metadata"]["namespace"],
        "name": obj["metadata"]["name"],
        "object": obj,
    }
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def mutated(d: Driver, obj: dict[str, Any]) -> dict[str, Any]:
    response = d.send(MUTATE, mpi_review(obj))
    assert response["allowed"], response
    ops = orjson.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(obj, ops)


def denial(d: Driver, obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> str | None:
    response = d.send(VALIDATE, mpi_review(obj, old=old))
    if response["allowed"]:
        return None
    assert response["status"]["code"] == 403
    return str(response["status"]["message"])


# --- upstream: TestDefault ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "want_managed_by"),
    [
        pytest.param(MPI().unsuspended(), None, id="TestDefault_WithoutQueueLabel"),
        pytest.param(MPI().queue("invalid-queue"), None, id="TestDefault_InvalidQueueName"),
        pytest.param(MPI().queue("non-existent-queue"), None, id="TestDefault_QueueNotFound"),
        pytest.param(MPI().queue("local-queue"), None, id="TestDefault_AdmissionCheckNotFound"),
        pytest.param(MPI().queue("local-queue"), None, id="TestDefault_MultiKueueFeatureDisabled"),
        pytest.param(
            MPI().queue("local-queue").managed_by("example.com/foo"),
            "example.com/foo",
            id="TestDefault_UserSpecifiedManagedBy",
        ),
        pytest.param(MPI().queue("local-queue"), None, id="TestDefault_ClusterQueueWithoutAdmissionCheck"),
    ],
)
def test_managed_by_is_not_defaulted_without_a_multikueue_check(
    make_driver: Any, job: MPI, want_managed_by: str | None
) -> None:
    d = make_driver(ENABLED, local_queues=frozenset({("default", "local-queue")}))
    out = mutated(d, job.obj())
    assert out["spec"]["runPolicy"].get("managedBy") == want_managed_by


@pytest.mark.parametrize(
    ("default_lq", "job", "want"),
    [
        pytest.param(True, MPI(), MPI().queue("default"), id="default lq is created, job doesn't have queue label"),
        pytest.param(True, MPI().queue("queue"), MPI().queue("queue"), id="default lq is created, job has queue label"),
        pytest.param(False, MPI(), MPI(), id="default lq isn't created, job doesn't have queue label"),
    ],
)
def test_default_local_queue(make_driver: Any, default_lq: bool, job: MPI, want: MPI) -> None:
    d = make_driver(ENABLED, local_queues=frozenset({("default", "default")} if default_lq else ()))
    assert mutated(d, job.obj()) == want.obj()


def _lw() -> MPI:
    return MPI().queue("queue").launcher_and_workers()


TAS_DEFAULT_CASES = [
    pytest.param(
        True,
        _lw().run_launcher_as_worker(True),
        _lw().run_launcher_as_worker(True).pod_annotation("Worker", OFFSET, "1"),
        id="TAS enabled, RunLauncherAsWorker true with 2 replica specs",
    ),
    pytest.param(
        True,
        _lw().replica("Extra", {}).run_launcher_as_worker(True),
        _lw().replica("Extra", {}).run_launcher_as_worker(True).pod_annotation("Worker", OFFSET, "1"),
        id="TAS enabled, RunLauncherAsWorker true with 3 replica specs",
    ),
    pytest.param(
        True,
        MPI().queue("queue").replica("Worker", replica()).replica("Extra", {}).run_launcher_as_worker(True),
        MPI().queue("queue").replica("Worker", replica()).replica("Extra", {}).run_launcher_as_worker(True),
        id="TAS enabled, RunLauncherAsWorker true without the Launcher replica spec",
    ),
    pytest.param(
        True,
        MPI().queue("queue").replica("Worker", replica(3)).replica("Launcher", None).run_launcher_as_worker(True),
        MPI().queue("queue").replica("Worker", replica(3)).replica("Launcher", None).run_launcher_as_worker(True),
        id="TAS enabled, RunLauncherAsWorker true with a nil Launcher replica spec",
    ),
    pytest.param(
        True,
        MPI().queue("queue").replica("Launcher", replica()).replica("Worker", None).run_launcher_as_worker(True),
        MPI().queue("queue").replica("Launcher", replica()).replica("Worker", None).run_launcher_as_worker(True),
        id="TAS enabled, RunLauncherAsWorker true with a nil Worker replica spec",
    ),
    pytest.param(
        True,
        _lw().run_launcher_as_worker(False),
        _lw().run_launcher_as_worker(False),
        id="TAS enabled, RunLauncherAsWorker false",
    ),
    pytest.param(True, _lw(), _lw(), id="TAS enabled, RunLauncherAsWorker nil"),
    pytest.param(
        False,
        _lw().run_launcher_as_worker(True),
        _lw().run_launcher_as_worker(True),
        id="TAS disabled, RunLauncherAsWorker true",
    ),
    pytest.param(
        True,
        MPI().queue("queue").replica("Launcher", replica()).run_launcher_as_worker(True),
        MPI().queue("queue").replica("Launcher", replica()).run_launcher_as_worker(True),
        id="TAS enabled, RunLauncherAsWorker true, only Launcher replica",
    ),
    pytest.param(
        True,
        _lw().run_launcher_as_worker(True).pod_annotation("Worker", "existing-annotation", "value"),
        _lw()
        .run_launcher_as_worker(True)
        .pod_annotation("Worker", "existing-annotation", "value")
        .pod_annotation("Worker", OFFSET, "1"),
        id="TAS enabled, RunLauncherAsWorker true, Worker has existing annotations",
    ),
    pytest.param(
        True,
        _lw().run_launcher_as_worker(True).pod_annotation("Launcher", GROUP, "group1"),
        _lw().run_launcher_as_worker(True).pod_annotation("Launcher", GROUP, "group1"),
        id="TAS enabled, RunLauncherAsWorker true, Launcher has PodSetGroupName annotation",
    ),
]


@pytest.mark.parametrize(("tas", "job", "want"), TAS_DEFAULT_CASES)
def test_default_pod_index_offset(make_driver: Any, tas: bool, job: MPI, want: MPI) -> None:
    """With TopologyAwareScheduling and a launcher that works too, the workers' pod indexes start
    after the launcher's: `kueue.x-k8s.io/pod-index-offset: "1"` on the worker template."""
    d = make_driver(ENABLED if tas else NO_TAS)
    assert mutated(d, job.obj()) == want.obj()


def test_queued_mpijob_is_suspended(make_driver: Any) -> None:
    out = mutated(make_driver(ENABLED), MPI().queue("q").launcher_and_workers().unsuspended().obj())
    assert out["spec"]["runPolicy"] == {"suspend": True}


def test_disabled_integration_is_not_defaulted(driver: Driver) -> None:
    response = driver.send(MUTATE, mpi_review(MPI().queue("q").unsuspended().obj()))
    assert response["allowed"] and "patch" not in response


# --- upstream: TestValidateCreate -----------------------------------------------------------------------

CREATE_CASES = [
    pytest.param(MPI().queue("queue"), None, id="simple"),
    pytest.param(
        MPI().queue("queue_name"),
        f'metadata.labels[{Q}]: Invalid value: "queue_name": {DNS_MSG}',
        id="invalid queue-name label",
    ),
    pytest.param(MPI().queue("queue").label(PREBUILT, "prebuilt-workload"), None, id="with prebuilt workload"),
    pytest.param(
        MPI()
        .queue("queue-name")
        .launcher_and_workers()
        .pod_annotation("Launcher", REQUIRED, "cloud.com/block")
        .pod_annotation("Worker", REQUIRED, "cloud.com/block"),
        None,
        id="valid topology request",
    ),
    pytest.param(
        MPI()
        .queue("queue-name")
        .launcher_and_workers()
        .pod_annotation("Launcher", GROUP, "groupname")
        .pod_annotation("Launcher", REQUIRED, "cloud.com/block")
        .pod_annotation("Worker", GROUP, "groupname")
        .pod_annotation("Worker", REQUIRED, "cloud.com/block"),
        None,
        id="valid PodSet grouping request",
    ),
]


PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
ONE_OF = (
    'must not contain more than one topology annotation: ["kueue.x-k8s.io/podset-required-topology", '
    '"kueue.x-k8s.io/podset-preferred-topology", "kueue.x-k8s.io/podset-unconstrained-topology"]'
)
L_ANN = "spec.mpiReplicaSpecs[Launcher].template.metadata.annotations"
W_ANN = "spec.mpiReplicaSpecs[Worker].template.metadata.annotations"


def _pair(launchers: int, workers: int, launcher: dict[str, str], worker: dict[str, str]) -> MPI:
    job = MPI().queue("queue-name").replica("Launcher", replica(launchers)).replica("Worker", replica(workers))
    for key, value in launcher.items():
        job.pod_annotation("Launcher", key, value)
    for key, value in worker.items():
        job.pod_annotation("Worker", key, value)
    return job


def _inconsistent(group: str) -> str:
    return (
        f"[{L_ANN}: Invalid value: must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with "
        f"'{W_ANN}' in group '{group}', {W_ANN}: Invalid value: must specify '{REQUIRED}' or '{PREFERRED}' "
        f"topology consistent with '{L_ANN}' in group '{group}']"
    )


CREATE_CASES += [
    pytest.param(
        _pair(
            1,
            3,
            {REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"},
            {REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"},
        ),
        f"[{L_ANN}: Invalid value: {ONE_OF}, {W_ANN}: Invalid value: {ONE_OF}]",
        id="invalid topology request",
    ),
    pytest.param(
        _pair(
            1,
            3,
            {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "20"},
            {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "20"},
        ),
        f'[{L_ANN}[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 1, '
        f'{W_ANN}[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 3]',
        id="invalid slice topology request - slice size larger than number of podsets",
    ),
    pytest.param(
        _pair(
            1, 3, {GROUP: "groupname1", REQUIRED: "cloud.com/block"}, {GROUP: "groupname2", REQUIRED: "cloud.com/block"}
        ),
        f'[{L_ANN}[{GROUP}]: Invalid value: "groupname1": can only define groups of exactly 2 pod sets, got: 1 pod set(s), '
        f'{W_ANN}[{GROUP}]: Invalid value: "groupname2": can only define groups of exactly 2 pod sets, got: 1 pod set(s)]',
        id="invalid PodSet grouping request - groups of size other than 2",
    ),
    pytest.param(
        _pair(
            2, 3, {GROUP: "groupname", REQUIRED: "cloud.com/block"}, {GROUP: "groupname", REQUIRED: "cloud.com/block"}
        ),
        f'[{L_ANN}[{GROUP}]: Invalid value: "groupname": can only define groups where at least one pod set has only '
        "1 replica, got: 2 replica(s) and 3 replica(s) in the group, "
        f'{W_ANN}[{GROUP}]: Invalid value: "groupname": can only define groups where at least one pod set has only '
        "1 replica, got: 2 replica(s) and 3 replica(s) in the group]",
        id="invalid PodSet grouping request - no leader in group",
    ),
    pytest.param(
        _pair(
            1, 3, {GROUP: "groupname", REQUIRED: "cloud.com/block"}, {GROUP: "groupname", REQUIRED: "cloud.com/rack"}
        ),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - required topology does not match",
    ),
    pytest.param(
        _pair(
            1, 3, {GROUP: "groupname", PREFERRED: "cloud.com/block"}, {GROUP: "groupname", PREFERRED: "cloud.com/rack"}
        ),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - preferred topology does not match",
    ),
    pytest.param(
        _pair(
            1, 3, {GROUP: "groupname", REQUIRED: "cloud.com/block"}, {GROUP: "groupname", PREFERRED: "cloud.com/rack"}
        ),
        _inconsistent("groupname"),
        id="invalid PodSet grouping request - different topology annotations within group",
    ),
]


@pytest.mark.parametrize(("job", "message"), CREATE_CASES)
def test_validate_create(make_driver: Any, job: MPI, message: str | None) -> None:
    assert denial(make_driver(ENABLED), job.obj()) == message


def test_tas_checks_need_the_gate(make_driver: Any) -> None:
    """Without TopologyAwareScheduling the templates' annotations are not checked."""
    job = _pair(1, 3, {REQUIRED: "a", PREFERRED: "b"}, {}).obj()
    assert denial(make_driver(NO_TAS), job) is None


def test_a_pod_set_that_cannot_be_built_is_denied_with_gos_error(make_driver: Any) -> None:
    """`JobPodSets` fails (an unconstrained flag that is not a boolean): no field error, Go's error."""
    job = _pair(1, 3, {"kueue.x-k8s.io/podset-unconstrained-topology": "maybe"}, {}).obj()
    assert denial(make_driver(ENABLED), job) == 'strconv.ParseBool: parsing "maybe": invalid syntax'


def test_create_errors_are_sorted_by_field(make_driver: Any) -> None:
    """`ValidateCreate` sorts its errors by field: the annotation before the labels, max-exec
    before queue-name (unlike `ValidateJobOnCreate`'s own order)."""
    job = MPI().queue("Bad_Name").label(MAX_EXEC, "0").obj()
    job["metadata"]["annotations"] = {"kueue.x-k8s.io/admission-gated-by": "nodomain"}
    d = make_driver(ENABLED + "featureGates: {AdmissionGatedBy: true}\n")
    assert denial(d, job) == (
        '[metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "nodomain": '
        'must be a domain-prefixed path (such as "acme.io/foo"), '
        f"metadata.labels[{MAX_EXEC}]: Invalid value: 0: should be greater than 0, "
        f'metadata.labels[{Q}]: Invalid value: "Bad_Name": {DNS_MSG}]'
    )


def _running(job: MPI) -> dict[str, Any]:
    out = job.obj()
    out["spec"]["runPolicy"]["suspend"] = False
    return out


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        pytest.param(MPI().queue("a").obj(), MPI().queue("b").obj(), None, id="queue name may change while suspended"),
        pytest.param(
            _running(MPI().queue("a")),
            _running(MPI().queue("b")),
            f'metadata.labels[{Q}]: Invalid value: "b": field is immutable',
            id="queue name immutable while running",
        ),
        pytest.param(
            MPI().queue("a").obj(),
            MPI().queue("b_c").obj(),
            f'metadata.labels[{Q}]: Invalid value: "b_c": {DNS_MSG}',
            id="the create checks run on the new object",
        ),
        pytest.param(
            _running(MPI().queue("a")),
            _running(MPI().queue("b_c")),
            f'[metadata.labels[{Q}]: Invalid value: "b_c": field is immutable, '
            f'metadata.labels[{Q}]: Invalid value: "b_c": {DNS_MSG}]',
            id="update errors come before the create checks",
        ),
    ],
)
def test_validate_update(make_driver: Any, old: dict[str, Any], new: dict[str, Any], message: str | None) -> None:
    """`ValidateUpdate`: `ValidateJobOnUpdate`, then the create checks of the new object."""
    assert denial(make_driver(ENABLED), new, old=old) == message


def test_queue_warnings_count_launcher_and_workers(make_driver: Any) -> None:
    """Our submit-time warning (not upstream's): the LocalQueue named does not exist."""
    response = make_driver(ENABLED).send(VALIDATE, mpi_review(MPI().queue("missing").launcher_and_workers().obj()))
    assert response["allowed"]
    assert any("missing" in w for w in response.get("warnings", ())), response


def test_a_gang_min_resources_quantity_go_cannot_decode_is_an_error(make_driver: Any) -> None:
    """`runPolicy.schedulingPolicy.minResources` holds quantities too: upstream's decode fails (400)."""
    obj = MPI().queue("q").launcher_and_workers().obj()
    obj["spec"]["runPolicy"]["schedulingPolicy"] = {"minResources": {"cpu": "1e1.5"}}
    response = make_driver(ENABLED).send(VALIDATE, mpi_review(obj))
    assert not response["allowed"] and response["status"]["code"] == 400, response


@pytest.mark.parametrize(
    ("managed_by", "want"),
    [
        pytest.param(None, "kueue.x-k8s.io/multikueue", id="unset"),
        pytest.param("kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue", id="the operator's own"),
        pytest.param("kubeflow.org/training-operator", "kubeflow.org/training-operator", id="another's: kept"),
    ],
)
def test_managed_by_is_defaulted_for_a_multikueue_cluster_queue(
    make_driver: Any, managed_by: str | None, want: str
) -> None:
    """`MpiJobWebhook.Default`: `ApplyDefaultForManagedBy` (`MPIJob.CanDefaultManagedBy`), in `spec.runPolicy`."""
    d = make_driver(ENABLED, **multikueue_lookups("default", "queue"))
    job = MPI().queue("queue").obj()
    if managed_by is not None:
        job["spec"]["runPolicy"]["managedBy"] = managed_by
    assert mutated(d, job)["spec"]["runPolicy"]["managedBy"] == want
