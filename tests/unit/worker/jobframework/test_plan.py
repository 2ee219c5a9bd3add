"""What a new Workload takes from its job: here, our submitting-user annotation."""

from __future__ import annotations

from webhook.worker.jobframework.plan import Priority, new_workload


def job(annotations: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"name": "j", "namespace": "ns", "annotations": annotations}, "spec": {}}


def test_the_submitting_user_reaches_the_workload() -> None:
    wl = new_workload(
        "wl", job({"pykueue.io/submitted-by": "alice", "other": "x"}), [], admission_gated_by=True, priority=Priority()
    )
    assert wl["metadata"]["annotations"] == {"pykueue.io/submitted-by": "alice"}


def test_a_job_without_one_gives_none() -> None:
    wl = new_workload("wl", job({}), [], admission_gated_by=True, priority=Priority())
    assert "annotations" not in wl["metadata"]
