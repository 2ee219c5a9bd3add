"""The admission core's settings as the worker derives them from a Configuration file."""

from __future__ import annotations

from datetime import timedelta

import pytest

from webhook import config
from webhook.worker.manager import scheduler_config

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


def test_defaults_are_v0_19_2s() -> None:
    sc = scheduler_config(config.parse(V2))
    assert sc.requeue_batch_s == 1.0
    assert sc.timestamp_preemption_buffer == timedelta(0)
    assert not sc.recompute_on_overlap and sc.equivalence_hashing
    assert not sc.fair_sharing and not sc.block_admission


def test_scheduler_gates() -> None:
    gates = (
        "featureGates: {SchedulerLongRequeueInterval: true, SchedulerTimestampPreemptionBuffer: true, "
        "RecomputeAssignmentUponPreemptionTargetsOverlap: true}\n"
    )
    sc = scheduler_config(config.parse(V2 + gates))
    assert sc.requeue_batch_s == 10.0  # requeueLongBatchPeriod
    assert sc.timestamp_preemption_buffer == timedelta(minutes=5)
    assert sc.recompute_on_overlap


def test_fair_sharing_and_pods_ready() -> None:
    stanza = (
        "fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}\n"
        "waitForPodsReady: {timeout: 5m, blockAdmission: true, requeuingStrategy: {timestamp: Creation}}\n"
    )
    sc = scheduler_config(config.parse(V2 + stanza))
    assert sc.fair_sharing and tuple(sc.fair_sharing_strategies) == ("LessThanOrEqualToFinalShare",)
    assert sc.block_admission and not sc.requeue_by_eviction


@pytest.mark.parametrize(
    ("text", "want_ignore", "want_prefixes", "want_inputs"),
    [
        pytest.param("", False, (), (), id="no resources section"),
        pytest.param(
            "resources: {quotaCheckStrategy: IgnoreUndeclared}\n",
            True,
            (),
            (),
            id="IgnoreUndeclared, gate on by default",
        ),
        pytest.param(
            "featureGates: {QuotaCheckStrategy: false}\nresources: {quotaCheckStrategy: IgnoreUndeclared}\n",
            False,
            (),
            (),
            id="IgnoreUndeclared with the gate off: BlockUndeclared",
        ),
        pytest.param("resources: {quotaCheckStrategy: BlockUndeclared}\n", False, (), (), id="BlockUndeclared"),
        pytest.param(
            "resources: {excludeResourcePrefixes: [example.com/], transformations: "
            "[{input: nvidia.com/mig-1g.5gb, strategy: Replace, outputs: {example.com/memory: 5Gi}}]}\n",
            False,
            ("example.com/",),
            ("nvidia.com/mig-1g.5gb",),
            id="exclusions and transformations reach the core",
        ),
    ],
)
def test_resources(text: str, want_ignore: bool, want_prefixes: tuple[str, ...], want_inputs: tuple[str, ...]) -> None:
    """`resources.*` reach the core: quotaCheckStrategy only under its gate (Beta, on)."""
    sc = scheduler_config(config.parse(V2 + text))
    assert sc.ignore_undeclared_resources is want_ignore
    assert sc.resources.excluded_prefixes == want_prefixes
    assert sc.resources.inputs == want_inputs


def test_admission_fair_sharing_needs_its_stanza_and_gate() -> None:
    stanza = "admissionFairSharing: {usageHalfLifeTime: 10m, resourceWeights: {cpu: 2}}\n"
    sc = scheduler_config(config.parse(V2 + stanza))
    assert sc.admission_fair_sharing is not None
    assert sc.admission_fair_sharing.half_life_s == 600
    assert sc.admission_fair_sharing.sampling_interval_s == 300  # upstream's default, 5m
    assert dict(sc.admission_fair_sharing.resource_weights) == {"cpu": 2}
    assert scheduler_config(config.parse(V2)).admission_fair_sharing is None
    gate_off = "featureGates: {AdmissionFairSharing: false}\n"
    assert scheduler_config(config.parse(V2 + stanza + gate_off)).admission_fair_sharing is None
