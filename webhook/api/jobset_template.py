"""A JobSet spec's pod sets: one per replicated Job, as Kueue counts them.

Mirrors `JobSet.PodSets` (without the topology request, which the worker adds), `PodsCountPerReplica`
and `podsCount` in `pkg/controller/jobs/jobset/jobset_controller.go` (upstream v0.19.2). Public so
every integration that turns a JobSet spec into a Workload shares it: the TrainJob integration
builds the JobSet its runtime would make (`webhook.api.trainjob`) and takes its pod sets here.
Pure functions over plain dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["JOB_INDEX_LABEL", "pod_sets", "pods_count", "pods_count_per_replica", "replicas"]

JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
"""`jobsetapi.JobIndexKey`: the label numbering a replicated Job's copies (a pod set's sub-groups)."""


def replicas(replicated_job: Mapping[str, Any]) -> int:
    """`replicas` as the typed JobSet reads it: absent is Go's zero."""
    return int(replicated_job.get("replicas") or 0)


def pods_count_per_replica(replicated_job: Mapping[str, Any]) -> int:
    """`PodsCountPerReplica`: min(parallelism, completions) of the Job template, parallelism
    defaulting to 1 and completions to parallelism."""
    spec = (replicated_job.get("template") or {}).get("spec") or {}
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    return min(count, int(completions)) if completions is not None else count


def pods_count(replicated_job: Mapping[str, Any]) -> int:
    """`podsCount`: every copy of the replicated Job runs its pods."""
    return replicas(replicated_job) * pods_count_per_replica(replicated_job)


def pod_sets(jobset_spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One pod set per replicated Job, in order: its name, its pods count and its pod template."""
    return [
        {
            "name": str(rj.get("name") or ""),
            "count": pods_count(rj),
            "template": copy.deepcopy(((rj.get("template") or {}).get("spec") or {}).get("template") or {}),
        }
        for rj in jobset_spec.get("replicatedJobs") or ()
    ]
