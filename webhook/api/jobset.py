"""JobSet rules the webhook and the worker share: its replicatedJobs, how many pods each runs,
whether it is suspended.

Mirrors `IsSuspended`, `PodsCountPerReplica` and `podsCount` in
`pkg/controller/jobs/jobset/jobset_controller.go` (upstream v0.19.2), over JobSet v0.12.0's
`jobset.x-k8s.io/v1alpha2` fields: `spec.replicatedJobs[]` (`name`, `replicas`, `template`: a
batch/v1 JobTemplateSpec) and `spec.suspend`.
"""

from __future__ import annotations

from webhook.api import integrations
from webhook.api import objects as o

__all__ = [
    "GVK",
    "JOB_INDEX_KEY",
    "is_suspended",
    "pod_template",
    "pods_count",
    "pods_count_per_replica",
    "replicas",
    "replicated_jobs",
]

GVK = integrations.JOBSET.gvk
JOB_INDEX_KEY = "jobset.sigs.k8s.io/job-index"
"""`jobsetapi.JobIndexKey`: a child Job's index within its replicatedJob (a podSet's sub-group label)."""


def replicated_jobs(js: o.Obj) -> list[o.Obj]:
    return list((js.get("spec") or {}).get("replicatedJobs") or ())


def is_suspended(js: o.Obj) -> bool:
    """`JobSet.IsSuspended`: `spec.suspend` (JobSet has no stopping mark)."""
    return bool((js.get("spec") or {}).get("suspend"))


def replicas(rj: o.Obj) -> int:
    """A replicatedJob's child Jobs; the CRD defaults `replicas` to 1, so stored objects have it."""
    return int(rj.get("replicas", 1) or 0)


def pod_template(rj: o.Obj) -> o.Obj:
    """The pod template of a replicatedJob's Job template."""
    return (((rj.get("template") or {}).get("spec") or {}).get("template")) or {}


def pods_count_per_replica(rj: o.Obj) -> int:
    """`PodsCountPerReplica`: one child Job's pods, min(parallelism, completions), parallelism
    defaulting to 1 and completions to parallelism."""
    spec = (rj.get("template") or {}).get("spec") or {}
    parallelism = 1 if spec.get("parallelism") is None else int(spec["parallelism"])
    completions = parallelism if spec.get("completions") is None else int(spec["completions"])
    return min(parallelism, completions)


def pods_count(rj: o.Obj) -> int:
    """`podsCount`: a replicatedJob's pods, replicas times pods per replica (its podSet's count)."""
    return replicas(rj) * pods_count_per_replica(rj)
