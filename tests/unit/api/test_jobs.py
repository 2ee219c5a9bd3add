"""Job rules the webhook and the worker share (`PrebuiltWorkloadNameFor`, the ancestor walk)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api import jobs

LONG = "w" * 70
KEY = "kueue.x-k8s.io/prebuilt-workload-name"


def job(*, label: str | None = None, annotation: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "j", "namespace": "ns"}
    if label is not None:
        meta["labels"] = {KEY: label}
    if annotation is not None:
        meta["annotations"] = {KEY: annotation}
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("obj", "gate", "name", "in_annotation"),
    [
        pytest.param(job(label="a"), False, "a", False, id="label only"),
        pytest.param(job(annotation="b"), False, "", False, id="short annotation ignored with the gate off"),
        pytest.param(job(annotation=LONG), False, LONG, True, id="long annotation counts with the gate off"),
        pytest.param(
            job(label="a", annotation=LONG), False, "a", True, id="label wins over a long annotation with the gate off"
        ),
        pytest.param(job(label="a", annotation="b"), True, "b", True, id="annotation wins with the gate on"),
        pytest.param(job(label="a"), True, "a", False, id="label when no annotation with the gate on"),
    ],
)
def test_prebuilt_workload_name(obj: dict[str, Any], gate: bool, name: str, in_annotation: bool) -> None:
    assert jobs.prebuilt_workload_name(obj, identifier_annotations=gate) == name
    assert jobs.prebuilt_workload_in_annotation(obj, identifier_annotations=gate) is in_annotation


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        pytest.param({}, 1, id="defaults"),
        pytest.param({"parallelism": 4, "completions": 2}, 2, id="capped by completions"),
        pytest.param({"parallelism": 3}, 3, id="no completions"),
    ],
)
def test_pods_count(spec: dict[str, Any], count: int) -> None:
    assert jobs.pods_count({"spec": spec}) == count


def _chain(n: int) -> dict[str, dict[str, Any]]:
    """Jobs j0 <- j1 <- ... <- jn, each controlled by the next; all queued."""
    objs = {}
    for i in range(n + 1):
        meta: dict[str, Any] = {"name": f"j{i}", "uid": f"u{i}", "labels": {"kueue.x-k8s.io/queue-name": "q"}}
        if i < n:
            meta["ownerReferences"] = [
                {"apiVersion": "batch/v1", "kind": "Job", "name": f"j{i + 1}", "uid": f"u{i + 1}", "controller": True}
            ]
        objs[f"j{i}"] = {"metadata": meta}
    return objs


def _walk(objs: dict[str, dict[str, Any]]) -> Any:
    return jobs.find_managed_ancestor(
        objs["j0"],
        follows=lambda _: True,
        get_owner=lambda ref: objs.get(ref.get("name", "")),
        is_managed=lambda _, parent: True,
    )


def test_ancestor_is_the_top_most_managed() -> None:
    objs = _chain(3)
    assert _walk(objs) is objs["j3"]


def test_ancestor_chain_limit() -> None:
    assert _walk(_chain(jobs.MANAGED_OWNERS_CHAIN_LIMIT))["metadata"]["name"] == "j10"
    with pytest.raises(jobs.AncestorError) as err:
        _walk(_chain(jobs.MANAGED_OWNERS_CHAIN_LIMIT + 1))
    assert err.value.too_deep and str(err.value) == jobs.MSG_NESTING_TOO_DEEP


def test_ancestor_not_found() -> None:
    objs = _chain(1)
    del objs["j1"]
    with pytest.raises(jobs.AncestorError, match=r'jobs\.batch "j1" not found'):
        _walk(objs)
