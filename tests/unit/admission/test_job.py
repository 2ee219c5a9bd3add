"""batch/v1 Job webhooks through the ASGI app: suspension, defaults, upstream's denial messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.config import Configuration

from .reviews import Driver, multikueue_lookups, review

MUTATE = "/mutate-batch-v1-job"
VALIDATE = "/validate-batch-v1-job"
Q = "kueue.x-k8s.io/queue-name"
DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def make_job(
    name: str = "job",
    ns: str = "team-a",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    body = {
        "parallelism": 1,
        "completions": 1,
        "suspend": False,
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}},
    }
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": body}


class TestMutate:
    def test_queued_job_is_suspended(self, driver: Driver) -> None:
        out = driver.mutate(MUTATE, make_job(labels={Q: "team-a-gpu"}))
        assert out["spec"]["suspend"] is True

    def test_job_without_queue_is_untouched(self, driver: Driver) -> None:
        job = make_job()
        response = driver.send(MUTATE, review(job))
        assert response["allowed"] and "patch" not in response

    def test_suspended_job_gets_no_patch(self, driver: Driver) -> None:
        job = make_job(labels={Q: "q"}, suspend=True)
        assert driver.mutate(MUTATE, job) == job

    def test_default_local_queue(self, make_driver: Any) -> None:
        d = make_driver(local_queues=frozenset({("team-a", "default")}))
        out = d.mutate(MUTATE, make_job())
        assert out["metadata"]["labels"][Q] == "default"
        assert out["spec"]["suspend"] is True

    def test_default_local_queue_not_in_unmanaged_namespace(self, make_driver: Any) -> None:
        d = make_driver(local_queues=frozenset({("kube-system", "default")}))
        out = d.mutate(MUTATE, make_job(ns="kube-system"))
        assert "labels" not in out["metadata"] and out["spec"]["suspend"] is False

    def test_default_priority_class(self, make_driver: Any) -> None:
        """Gate WorkloadPriorityClassDefaulting: Alpha and off in v0.19.2 (`pkg/features/kube_features.go`)."""
        off = make_driver(priority_classes=frozenset({"default"}))
        assert (
            "kueue.x-k8s.io/priority-class" not in off.mutate(MUTATE, make_job(labels={Q: "q"}))["metadata"]["labels"]
        )
        gates = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfeatureGates:\n  WorkloadPriorityClassDefaulting: true\n"
        on = make_driver(gates, priority_classes=frozenset({"default"}))
        out = on.mutate(MUTATE, make_job(labels={Q: "q"}))
        assert out["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "default"

    def test_manage_jobs_without_queue_name(self, make_driver: Any) -> None:
        d = make_driver(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nmanageJobsWithoutQueueName: true\n"
        )
        assert d.mutate(MUTATE, make_job())["spec"]["suspend"] is True
        assert d.mutate(MUTATE, make_job(ns="kube-system"))["spec"]["suspend"] is False

    def test_job_owned_by_managed_job_is_not_suspended(self, make_driver: Any) -> None:
        parent = make_job("parent", labels={Q: "q"})
        parent["metadata"]["uid"] = "p-uid"
        child = make_job("child", labels={Q: "q"})
        child["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "parent", "uid": "p-uid", "controller": True}
        ]
        d = make_driver(owners={("team-a", "batch/v1", "Job", "parent"): parent})
        assert d.mutate(MUTATE, child)["spec"]["suspend"] is False

    @pytest.mark.parametrize(("external", "suspended"), [(True, False), (False, True)])
    def test_job_owned_by_an_external_framework_is_left_to_it(
        self, make_driver: Any, external: bool, suspended: bool
    ) -> None:
        """`integrations.externalFrameworks` (`IsOwnerManagedByKueue`): the owner's own integration
        queues it, so its Job is not suspended; the same owner unnamed there leaves the Job to us."""
        child = make_job("child", labels={Q: "q"})
        child["metadata"]["ownerReferences"] = [
            {"apiVersion": "example.com/v1", "kind": "Foo", "name": "foo", "uid": "f-uid", "controller": True}
        ]
        owner = {
            "apiVersion": "example.com/v1",
            "kind": "Foo",
            "metadata": {"name": "foo", "namespace": "team-a", "uid": "f-uid", "labels": {Q: "q"}},
        }
        config = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        if external:
            config += "integrations: {frameworks: [batch/job], externalFrameworks: [Foo.v1.example.com]}\n"
        d = make_driver(config, owners={("team-a", "example.com/v1", "Foo", "foo"): owner})
        assert d.mutate(MUTATE, child)["spec"]["suspend"] is suspended

    def test_missing_owner_denies(self, driver: Driver) -> None:
        child = make_job("child", labels={Q: "q"})
        child["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "gone", "uid": "x", "controller": True}
        ]
        msg = driver.denial(MUTATE, child)
        assert msg is not None and msg.startswith("workload owner not found")

    def test_elastic_job_gets_gate(self, driver: Driver) -> None:
        out = driver.mutate(MUTATE, make_job(labels={Q: "q"}, annotations={"kueue.x-k8s.io/elastic-job": "true"}))
        assert {"name": "kueue.x-k8s.io/elastic-job"} in out["spec"]["template"]["spec"]["schedulingGates"]

    def test_elastic_annotation_is_inert_with_the_gate_off(self, make_driver: Any) -> None:
        d = make_driver(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
            "featureGates:\n  ElasticJobsViaWorkloadSlices: false\n"
        )
        job = make_job(
            labels={Q: "q"},
            annotations={"kueue.x-k8s.io/elastic-job": "true", "kueue.x-k8s.io/job-min-parallelism": "1"},
            parallelism=4,
            completions=4,
        )
        assert not d.mutate(MUTATE, job)["spec"]["template"]["spec"].get("schedulingGates")
        assert d.denial(VALIDATE, job) is None


CREATE_CASES = [
    pytest.param(
        make_job(labels={Q: "Bad_Name"}),
        f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Bad_Name": {DNS_MSG}',
        id="queue name not DNS",
    ),
    pytest.param(
        make_job(labels={Q: ""}),
        f'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": {DNS_MSG}',
        id="empty queue name",
    ),
    pytest.param(make_job(labels={Q: "ok"}), None, id="valid"),
    pytest.param(
        make_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "abc"}),
        'metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "abc": '
        'strconv.Atoi: parsing "abc": invalid syntax',
        id="max exec not int",
    ),
    pytest.param(
        make_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "0"}),
        "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0",
        id="max exec zero",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/job-min-parallelism": "x"}, parallelism=4, completions=4),
        'metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "x": '
        'strconv.Atoi: parsing "x": invalid syntax',
        id="min parallelism not int",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/job-min-parallelism": "4"}, parallelism=4, completions=4),
        "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 4: should be between 0 and 3",
        id="min parallelism too big",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/job-min-parallelism": "0"}, parallelism=4, completions=2),
        "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 0: should be between 0 and 1",
        id="min parallelism zero against completions",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/job-min-parallelism": "2"}, parallelism=4, completions=4),
        None,
        id="min parallelism ok",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/job-completions-equal-parallelism": "maybe"}),
        'metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]: Invalid value: "maybe": '
        'strconv.ParseBool: parsing "maybe": invalid syntax',
        id="sync completions not bool",
    ),
    pytest.param(
        make_job(
            annotations={"kueue.x-k8s.io/job-completions-equal-parallelism": "true"}, parallelism=2, completions=3
        ),
        '[metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]: Invalid value: "true": '
        "should not be enabled for NonIndexed jobs, spec.completions: Invalid value: 3: should be equal to "
        "parallelism when kueue.x-k8s.io/job-completions-equal-parallelism annotation is true]",
        id="sync completions on NonIndexed with mismatch",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/a,,example.com/a"}),
        '[metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "example.com/a,,example.com/a": '
        "cannot contain empty gate names, metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "
        '"example.com/a,,example.com/a": duplicate gate name: example.com/a]',
        id="admission gated by format",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/admission-gated-by": "nodomain"}),
        'metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "nodomain": '
        'must be a domain-prefixed path (such as "acme.io/foo")',
        id="admission gated by not a path",
    ),
]


@pytest.mark.parametrize(("job", "message"), CREATE_CASES)
def test_validate_create(driver: Driver, job: dict[str, Any], message: str | None) -> None:
    assert driver.denial(VALIDATE, job) == message


def running(job: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"]["suspend"] = False
    return out


def suspended(job: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"]["suspend"] = True
    return out


UPDATE_CASES = [
    pytest.param(
        running(make_job(labels={Q: "a"})),
        running(make_job(labels={Q: "b"})),
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is immutable',
        id="queue name immutable while running",
    ),
    pytest.param(
        suspended(make_job(labels={Q: "a"})),
        suspended(make_job(labels={Q: "b"})),
        None,
        id="queue name may change while suspended",
    ),
    pytest.param(
        running(make_job()),
        running(make_job(labels={"kueue.x-k8s.io/priority-class": "high"})),
        'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": '
        "WorkloadPriorityClass cannot be added to a non-suspended workload",
        id="priority class added while running",
    ),
    pytest.param(
        suspended(make_job(labels={"kueue.x-k8s.io/priority-class": "high"})),
        suspended(make_job()),
        'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": '
        "WorkloadPriorityClass cannot be removed from a workload",
        id="priority class removed",
    ),
    pytest.param(
        running(make_job(annotations={"kueue.x-k8s.io/job-min-parallelism": "2"}, parallelism=4, completions=4)),
        running(make_job(annotations={"kueue.x-k8s.io/job-min-parallelism": "2"}, parallelism=3, completions=4)),
        "spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended",
        id="parallelism fixed under partial admission",
    ),
    pytest.param(
        suspended(make_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "10"})),
        running(make_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "20"})),
        'metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "20": field is immutable',
        id="max exec immutable unless both suspended",
    ),
    pytest.param(
        make_job(),
        make_job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/g"}),
        "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation",
        id="gate added after creation",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/a"}),
        make_job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/b"}),
        "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: can only remove gates, not add new ones",
        id="gate replaced",
    ),
    pytest.param(
        make_job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/a,example.com/b"}),
        make_job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/a"}),
        None,
        id="gate removed",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), UPDATE_CASES)
def test_validate_update(driver: Driver, old: dict[str, Any], new: dict[str, Any], message: str | None) -> None:
    assert driver.denial(VALIDATE, new, old=old) == message


def test_queue_name_must_not_be_removed_with_default_queue(make_driver: Any) -> None:
    d = make_driver(local_queues=frozenset({("team-a", "default")}))
    msg = d.denial(VALIDATE, suspended(make_job()), old=suspended(make_job(labels={Q: "a"})))
    assert msg == (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": '
        "queue-name must not be empty in namespace with default queue"
    )


def test_disabled_integration_allows_everything(make_driver: Any) -> None:
    d = make_driver(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "managedJobsNamespaceSelector: {matchLabels: {a: b}}\n"
        "integrations:\n  frameworks: [pod]\n"
    )
    assert d.denial(VALIDATE, make_job(labels={Q: "Bad_Name"})) is None
    assert d.mutate(MUTATE, make_job(labels={Q: "q"}))["spec"]["suspend"] is False


GATE_OFF = (
    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    "featureGates: {WorkloadIdentifierAnnotations: false}\n"
)
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"


def test_prebuilt_name_is_the_workers_with_identifier_annotations_off(make_driver: Any) -> None:
    """With the gate off, label `a` names the prebuilt Workload even beside a 70-character
    annotation (`PrebuiltWorkloadNameFor`, which upstream's `validateUpdateForPrebuiltWorkload`
    compares), so changing only that annotation on a running Job changes nothing."""
    from webhook.config import parse
    from webhook.worker.integrations import batchjob as worker_job

    d = make_driver(GATE_OFF)
    old = running(make_job(labels={PREBUILT: "a"}, annotations={PREBUILT: "x" * 70}))
    new = running(make_job(labels={PREBUILT: "a"}, annotations={PREBUILT: "y" * 70}))
    assert d.denial(VALIDATE, new, old=old) is None
    assert worker_job.prebuilt_workload_name(new, parse(GATE_OFF)) == "a"
    renamed = running(make_job(labels={PREBUILT: "b"}, annotations={PREBUILT: "y" * 70}))
    assert d.denial(VALIDATE, renamed, old=old) == (
        f'metadata.annotations[{PREBUILT}]: Invalid value: "b": field is immutable'
    )


# --- TopologyAwareScheduling: upstream's TAS cases of TestValidateCreate and TestValidateUpdate ---------

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
ELASTIC = "kueue.x-k8s.io/elastic-job"
ANN = "spec.template.metadata.annotations"
ONE_OF = f'must not contain more than one topology annotation: ["{REQUIRED}", "{PREFERRED}", "{UNCONSTRAINED}"]'
LABEL_KEY_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
NO_TAS = Configuration(feature_gates={"TopologyAwareScheduling": False})


def tas_job(pod_annotations: dict[str, str], *, parallelism: int = 1, **kw: Any) -> dict[str, Any]:
    """`testingjob.MakeJob("job", "default")` (parallelism 1, no completions) with `PodAnnotation`s."""
    job = make_job(ns="default", parallelism=parallelism, completions=None, **kw)
    job["spec"]["template"]["metadata"] = {"annotations": dict(pod_annotations)}
    return job


TAS_CREATE_CASES = [
    pytest.param({REQUIRED: "cloud.com/block"}, 1, None, id="valid topology request"),
    pytest.param(
        {REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"},
        1,
        f"{ANN}: Invalid value: {ONE_OF}",
        id="invalid topology request - both annotations",
    ),
    pytest.param(
        {REQUIRED: "some required value"},
        1,
        f'{ANN}[{REQUIRED}]: Invalid value: "some required value": {LABEL_KEY_MSG}',
        id="invalid topology request - invalid required",
    ),
    pytest.param(
        {PREFERRED: "some preferred value"},
        1,
        f'{ANN}[{PREFERRED}]: Invalid value: "some preferred value": {LABEL_KEY_MSG}',
        id="invalid topology request - invalid preferred",
    ),
    pytest.param(
        {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "1"},
        1,
        None,
        id="valid slice topology request",
    ),
    pytest.param(
        {UNCONSTRAINED: "true", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "1"},
        1,
        None,
        id="valid topology request - slice-only topology - unconstrained with slices defined",
    ),
    pytest.param(
        {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block"},
        1,
        f"{ANN}[{SLICE_SIZE}]: Required value: must be set when '{SLICE_REQUIRED}' is specified",
        id="invalid topology request - slice requested without slice size",
    ),
    pytest.param(
        {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "not a number"},
        1,
        f'{ANN}[{SLICE_SIZE}]: Invalid value: "not a number": must be a numeric value',
        id="invalid topology request - slice size is not a number",
    ),
    pytest.param(
        {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "-1"},
        1,
        f'{ANN}[{SLICE_SIZE}]: Invalid value: "-1": must be greater than or equal to 1',
        id="invalid topology request - slice size is negative",
    ),
    pytest.param(
        {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "0"},
        1,
        f'{ANN}[{SLICE_SIZE}]: Invalid value: "0": must be greater than or equal to 1',
        id="invalid topology request - slice size is zero",
    ),
    pytest.param(
        {REQUIRED: "cloud.com/block", SLICE_SIZE: "1"},
        1,
        f"{ANN}[{SLICE_SIZE}]: Forbidden: may not be set when '{SLICE_REQUIRED}' is not specified",
        id="invalid topology request - slice size provided without slice topology",
    ),
    pytest.param(
        {SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "1"}, 1, None, id="valid topology request - slice-only topology"
    ),
    pytest.param(
        {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "20"},
        4,
        f'{ANN}[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 4',
        id="invalid slice topology request - slice size larger than number of podsets",
    ),
]


@pytest.mark.parametrize(("pod_annotations", "parallelism", "message"), TAS_CREATE_CASES)
def test_validate_create_topology(
    driver: Driver, pod_annotations: dict[str, str], parallelism: int, message: str | None
) -> None:
    """Upstream's `TestValidateCreate` TAS cases (TopologyAwareScheduling on, as by default)."""
    assert driver.denial(VALIDATE, tas_job(pod_annotations, parallelism=parallelism)) == message


@pytest.mark.parametrize(
    ("pod_annotations", "message"),
    [
        pytest.param(
            {REQUIRED: "cloud.com/block"},
            f"spec.template.metadata.annotations.{REQUIRED}: Forbidden: required topology is not supported with "
            "elastic jobs",
            id="elastic job with required topology is rejected",
        ),
        pytest.param(
            {PREFERRED: "cloud.com/block"},
            f"spec.template.metadata.annotations.{PREFERRED}: Forbidden: preferred topology is not supported with "
            "elastic jobs",
            id="elastic job with preferred topology is rejected",
        ),
        pytest.param({UNCONSTRAINED: "true"}, None, id="elastic job with unconstrained topology is accepted"),
    ],
)
def test_elastic_job_topology(driver: Driver, pod_annotations: dict[str, str], message: str | None) -> None:
    """Upstream's `TestValidateCreate` elastic cases (ElasticJobsViaWorkloadSlices on, as by default):
    only an unconstrained topology; upstream's path here is dotted, not keyed."""
    job = tas_job(pod_annotations, annotations={ELASTIC: "true"})
    assert driver.denial(VALIDATE, job) == message


def test_topology_errors_come_after_the_other_create_checks(driver: Driver) -> None:
    """`validateCreate` appends the TAS errors last; the slice bound waits for valid annotations."""
    job = tas_job({REQUIRED: "a", PREFERRED: "b", SLICE_REQUIRED: "c", SLICE_SIZE: "5"}, labels={Q: "Bad_Name"})
    assert driver.denial(VALIDATE, job) == (
        f'[metadata.labels[{Q}]: Invalid value: "Bad_Name": {DNS_MSG}, {ANN}: Invalid value: {ONE_OF}]'
    )


def test_topology_checks_need_the_gate(make_driver: Any) -> None:
    job = tas_job({REQUIRED: "a", PREFERRED: "b"})
    assert make_driver(NO_TAS).denial(VALIDATE, job) is None
    assert make_driver(NO_TAS).denial(VALIDATE, job, old=tas_job({})) is None


@pytest.mark.parametrize(
    ("pod_annotations", "message"),
    [
        pytest.param({REQUIRED: "cloud.com/block"}, None, id="set valid TAS request"),
        pytest.param(
            {REQUIRED: "cloud.com/block", PREFERRED: "cloud.com/block"},
            f"{ANN}: Invalid value: {ONE_OF}",
            id="attempt to set invalid TAS request",
        ),
        pytest.param(
            {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block", SLICE_SIZE: "1"},
            None,
            id="valid slice topology request",
        ),
        pytest.param(
            {REQUIRED: "cloud.com/block", SLICE_REQUIRED: "cloud.com/block"},
            f"{ANN}[{SLICE_SIZE}]: Required value: must be set when '{SLICE_REQUIRED}' is specified",
            id="attempt to set invalid slice topology request",
        ),
    ],
)
def test_validate_update_topology(driver: Driver, pod_annotations: dict[str, str], message: str | None) -> None:
    """Upstream's `TestValidateUpdate` TAS cases: the new Job's template is checked."""
    assert driver.denial(VALIDATE, tas_job(pod_annotations), old=tas_job({})) == message


def test_update_topology_errors_come_last(driver: Driver) -> None:
    """`validateUpdate` appends the TAS errors after `ValidateJobOnUpdate`'s."""
    old = running(tas_job({}, labels={Q: "a"}))
    new = running(tas_job({REQUIRED: "a", PREFERRED: "b"}, labels={Q: "b"}))
    assert driver.denial(VALIDATE, new, old=old) == (
        f'[metadata.labels[{Q}]: Invalid value: "b": field is immutable, {ANN}: Invalid value: {ONE_OF}]'
    )


_MK = "kueue.x-k8s.io/multikueue"
_MK_LOOKUPS: dict[str, Any] = multikueue_lookups("team-a")


@pytest.mark.parametrize(
    ("gates", "labels", "managed_by", "want"),
    [
        pytest.param(
            "MultiKueue: false", {Q: "local-queue"}, None, None, id="no change in managed by: MultiKueue disabled"
        ),
        pytest.param("", {Q: "local-queue"}, None, _MK, id="managed by is defaulted: queue label was set"),
        pytest.param(
            "", {Q: "local-queue"}, "kubernetes.io/job-controller", _MK, id="the Job controller's own is defaulted too"
        ),
        pytest.param(
            "", {Q: "local-queue"}, "example.com/foo", "example.com/foo", id="no change in managed by: user specified"
        ),
        pytest.param("", {Q: "invalid-local-queue"}, None, None, id="invalid queue name"),
        pytest.param("", None, None, None, id="no queue name"),
    ],
)
def test_managed_by_is_defaulted_for_a_multikueue_cluster_queue(
    make_driver: Any, gates: str, labels: dict[str, str] | None, managed_by: str | None, want: str | None
) -> None:
    """Upstream `job_webhook_test.go` `TestDefault`, its managedBy cases (`ApplyDefaultForManagedBy`,
    `Job.CanDefaultManagedBy`)."""
    config = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    if gates:
        config += f"featureGates:\n  {gates}\n"
    spec = {} if managed_by is None else {"managedBy": managed_by}
    out = make_driver(config, **_MK_LOOKUPS).mutate(MUTATE, make_job(labels=labels, **spec))
    assert out["spec"].get("managedBy") == want
    assert out["spec"]["suspend"] is (labels is not None)


def test_managed_by_stays_for_a_cluster_queue_with_another_controllers_check(make_driver: Any) -> None:
    lookups = {**_MK_LOOKUPS, "admission_checks": {"admission-check": "kueue.x-k8s.io/provisioning-request"}}
    out = make_driver(None, **lookups).mutate(MUTATE, make_job(labels={Q: "local-queue"}))
    assert "managedBy" not in out["spec"]
