"""TrainJob rules the webhook and the worker share: Kueue's runtime patch, and the JobSet spec
Kubeflow Trainer would build for a TrainJob from its (Cluster)TrainingRuntime.

Upstream Kueue (v0.19.2, `pkg/controller/jobs/trainjob/trainjob_controller.go`, `getChildJobSet`)
runs Trainer's own runtime code to get that JobSet; here the parts of Trainer v2.2.1 that shape
what Kueue reads (pod templates and counts) are written again:

* `pkg/runtime/core/trainingruntime.go` `newRuntimeInfo` / `mergeRuntimePatches`: every runtime
  patch's replicated-Job template is strategically merged into the runtime's, in list order, and
  each replicated Job counts its parallelism (the trainer's: the ML policy's `numNodes`);
* the ML policy plugins' `EnforceMLPolicy` (`torch`, `plainml`, `jax`, `xgboost`: the trainer's
  count is the TrainJob's `trainer.numNodes`; `mpi`: the `node` Job's, less one for a launcher
  run as a node); each replicated Job's parallelism and completions become its count;
* `pkg/runtime/framework/plugins/jobset/builder.go` `Initializer`, `Trainer` and `PodLabels` (the
  coscheduling plugin's pod-group label).

Not reproduced: the Flux policy's installer init container and the torchtune command rewriting
(both change only what the pods run, not what Kueue counts, except the Flux init container's
requests). Pure functions over plain dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.objects import Obj

__all__ = [
    "ANCESTOR_LABEL",
    "CLUSTER_TRAINING_RUNTIME",
    "GROUP",
    "KUEUE_RUNTIME_PATCH_MANAGER",
    "RUNTIME_RESOURCES",
    "TRAINING_RUNTIME",
    "RuntimeError_",
    "child_jobset_spec",
    "kueue_runtime_patch",
    "merge_job_template",
    "runtime_key",
]

GROUP = "trainer.kubeflow.org"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
TRAINING_RUNTIME = "TrainingRuntime"
RUNTIME_RESOURCES = {CLUSTER_TRAINING_RUNTIME: "clustertrainingruntimes", TRAINING_RUNTIME: "trainingruntimes"}
"""The resource (plural) of each runtime kind a TrainJob may name."""
KUEUE_RUNTIME_PATCH_MANAGER = "kueue.x-k8s.io/manager"
"""`runtimePatchManagerName`: the manager of the runtime patch Kueue writes its pod-set info to."""
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
_TRAINER = "trainer"
_NODE = "node"
_DATASET_INITIALIZER = "dataset-initializer"
_MODEL_INITIALIZER = "model-initializer"
_STORAGE_URI = "STORAGE_URI"
_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


class RuntimeError_(Exception):
    """The TrainJob's runtime cannot be used (unsupported kind, or not found); upstream's error text."""


# == the runtime patches ============================================================================
def kueue_runtime_patch(trainjob: Obj) -> Obj | None:
    """`getKueueRuntimePatch`: the runtime patch Kueue's webhook added (manager `kueue.x-k8s.io/manager`)."""
    return next(
        (
            p
            for p in (trainjob.get("spec") or {}).get("runtimePatches") or ()
            if p.get("manager") == KUEUE_RUNTIME_PATCH_MANAGER
        ),
        None,
    )


# == the runtime ====================================================================================
def runtime_key(trainjob: Obj) -> tuple[str, str, str]:
    """(kind, namespace, name) of the runtime the TrainJob names (namespace "" for a
    ClusterTrainingRuntime); raises `RuntimeError_` as `getChildJobSet` does for a kind Trainer
    has no runtime for (`unsupported runtime: <Kind>.<group>`)."""
    spec = trainjob.get("spec") or {}
    ref = spec.get("runtimeRef") or {}
    group, kind = ref.get("apiGroup"), ref.get("kind")
    registry_key = f"{kind or ''}.{group}" if group else str(kind or "")
    if group != GROUP or kind not in (CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME):
        raise RuntimeError_(f"unsupported runtime: {registry_key}")
    namespace = "" if kind == CLUSTER_TRAINING_RUNTIME else str((trainjob.get("metadata") or {}).get("namespace") or "")
    return str(kind), namespace, str(ref.get("name") or "")


# == strategic merge of a Job template ================================================================
# The merge keys `strategicpatch.StrategicMergePatch` reads from batchv1.JobTemplateSpec's struct
# tags, for the fields a runtime patch may carry (`PodSpecPatch`, `ContainerPatch`). Every other
# list is atomic (replaced: a patch's tolerations replace the template's), every map is merged.
_MERGE_KEYS = {
    "spec.template.spec.volumes": "name",
    "spec.template.spec.containers": "name",
    "spec.template.spec.initContainers": "name",
    "spec.template.spec.containers.env": "name",
    "spec.template.spec.initContainers.env": "name",
    "spec.template.spec.containers.volumeMounts": "mountPath",
    "spec.template.spec.initContainers.volumeMounts": "mountPath",
    "spec.template.spec.containers.ports": "containerPort",
    "spec.template.spec.initContainers.ports": "containerPort",
    "spec.template.spec.imagePullSecrets": "name",
    "spec.template.spec.schedulingGates": "name",
}


def _merge(original: Any, patch: Any, path: str) -> Any:
    if isinstance(patch, Mapping) and isinstance(original, Mapping):
        out = dict(original)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = _merge(out[key], value, f"{path}.{key}" if path else key)
            else:
                out[key] = copy.deepcopy(value)
        return out
    merge_key = _MERGE_KEYS.get(path)
    if merge_key is not None and isinstance(patch, list) and isinstance(original, list):
        out_list = [copy.deepcopy(item) for item in original]
        for item in patch:
            at = next(
                (
                    i
                    for i, have in enumerate(out_list)
                    if isinstance(item, Mapping) and have.get(merge_key) == item.get(merge_key)
                ),
                None,
            )
            if at is None:
                out_list.append(copy.deepcopy(item))
            else:
                out_list[at] = _merge(out_list[at], item, path)
        return out_list
    return copy.deepcopy(patch)


def merge_job_template(template: Obj, patch: Obj) -> dict[str, Any]:
    """`strategicpatch.StrategicMergePatch(template, patch, batchv1.JobTemplateSpec{})`: maps merge
    (a null value removes the key), lists with a merge key merge item by item (new items last),
    other lists and values are replaced."""
    merged: dict[str, Any] = _merge(template, patch, "")
    return merged


# == the JobSet Trainer builds =========================================================================
def _upsert_env(env: list[dict[str, Any]], updates: Sequence[Obj]) -> list[dict[str, Any]]:
    """`apply.UpsertEnvVars`: an update replaces the variable of its name, or is appended."""
    out = list(env)
    for update in updates:
        at = next((i for i, e in enumerate(out) if e.get("name") == update.get("name")), None)
        if at is None:
            out.append(copy.deepcopy(dict(update)))
        else:
            out[at] = copy.deepcopy(dict(update))
    return out


def _ancestor(replicated_job: Obj) -> str | None:
    labels = ((replicated_job.get("template") or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(ANCESTOR_LABEL)


def _containers(replicated_job: Obj) -> list[dict[str, Any]]:
    """The pod template's containers (changed in place by the builder steps)."""
    pod = (((replicated_job.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    containers: list[dict[str, Any]] = pod.get("containers") or []
    return containers


def _counts(trainjob: Obj, jobs: Sequence[Obj], ml_policy: Obj | None) -> list[int]:
    """Each replicated Job's pod count: its parallelism (the trainer's: the ML policy's `numNodes`)
    as `newRuntimeInfo` counts it, at least 1, then the TrainJob's `trainer.numNodes` as the ML
    policy plugins apply it."""
    counts = []
    for rj in jobs:
        parallelism = ((rj.get("template") or {}).get("spec") or {}).get("parallelism")
        count = 1 if parallelism is None else int(parallelism)
        if _ancestor(rj) == _TRAINER and ml_policy is not None:
            count = 1 if ml_policy.get("numNodes") is None else int(ml_policy["numNodes"])
        counts.append(max(count, 1))
    num_nodes = ((trainjob.get("spec") or {}).get("trainer") or {}).get("numNodes")
    if num_nodes is None:
        return counts
    policy = ml_policy or {}

    def has(source: str) -> bool:
        return policy.get(source) is not None

    if has("mpi"):
        node = next((i for i, rj in enumerate(jobs) if rj.get("name") == _NODE), None)
        if node is not None:
            launcher_as_node = bool(policy["mpi"].get("runLauncherAsNode"))
            counts[node] = max(int(num_nodes) - 1, 1) if launcher_as_node else int(num_nodes)
    # torch, jax, xgboost, and the plain ML plugin (a policy that is none of torch, MPI, JAX).
    plain = not (has("torch") or has("mpi") or has("jax"))
    trainer_job = next((i for i, rj in enumerate(jobs) if _ancestor(rj) == _TRAINER), None)
    if trainer_job is not None and (has("torch") or has("jax") or has("xgboost") or plain):
        counts[trainer_job] = int(num_nodes)
    return counts


def _initializer(trainjob: Obj, rj: dict[str, Any], step: str) -> None:
    """`Builder.Initializer` for one initializer Job: one replica; storage URI, env and secret."""
    rj["replicas"] = 1
    source = ((trainjob.get("spec") or {}).get("initializer") or {}).get(
        "dataset" if step == _DATASET_INITIALIZER else "model"
    )
    if source is None:
        return
    for container in _containers(rj):
        if container.get("name") != step:
            continue
        updates: list[Obj] = []
        if source.get("storageUri") is not None:
            updates.append({"name": _STORAGE_URI, "value": source["storageUri"]})
        updates.extend(source.get("env") or ())
        env = _upsert_env(list(container.get("env") or ()), updates)
        if env:
            container["env"] = env
        if source.get("secretRef") is not None:
            container["envFrom"] = [
                *(container.get("envFrom") or ()),
                {"secretRef": {"name": (source.get("secretRef") or {}).get("name", "")}},
            ]


def _trainer(trainjob: Obj, rj: dict[str, Any], *, ancestor: bool) -> None:
    """`Builder.Trainer` for one Job's `node` container: for the trainer (`ancestor`) its image,
    command and args, and for it or the `node` Job of an MPI launcher run as a node, its
    resources and env."""
    trainer = (trainjob.get("spec") or {}).get("trainer")
    if ancestor:
        rj["replicas"] = 1
    if trainer is None:
        return
    for container in _containers(rj):
        if container.get("name") != _NODE:
            continue
        if ancestor:
            for key in ("image", "command", "args"):
                if trainer.get(key) is not None:
                    container[key] = copy.deepcopy(trainer[key])
        resources = trainer.get("resourcesPerNode")
        if resources is not None and (resources.get("limits") is not None or resources.get("requests") is not None):
            container["resources"] = {
                key: copy.deepcopy(resources[key]) for key in ("limits", "requests") if resources.get(key) is not None
            }
        env = _upsert_env(list(container.get("env") or ()), trainer.get("env") or ())
        if env:
            container["env"] = env


def child_jobset_spec(trainjob: Obj, runtime: Obj) -> dict[str, Any]:
    """The spec of the JobSet Trainer makes for `trainjob` from `runtime` (a ClusterTrainingRuntime
    or TrainingRuntime), as far as Kueue reads it (`getChildJobSet`)."""
    runtime_spec = runtime.get("spec") or {}
    spec: dict[str, Any] = copy.deepcopy(dict((runtime_spec.get("template") or {}).get("spec") or {}))
    jobs: list[dict[str, Any]] = spec.setdefault("replicatedJobs", [])
    for patch in (trainjob.get("spec") or {}).get("runtimePatches") or ():
        template_patch = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
        for rj_patch in (template_patch or {}).get("replicatedJobs") or ():
            if rj_patch.get("template") is None:
                continue
            for rj in jobs:
                if rj.get("name") == rj_patch.get("name"):
                    rj["template"] = merge_job_template(rj.get("template") or {}, rj_patch["template"])
    ml_policy = runtime_spec.get("mlPolicy")
    for rj, count in zip(jobs, _counts(trainjob, jobs, ml_policy), strict=True):
        job_spec = rj.setdefault("template", {}).setdefault("spec", {})
        job_spec["parallelism"] = count
        job_spec["completions"] = count
    launcher_as_node = bool(((ml_policy or {}).get("mpi") or {}).get("runLauncherAsNode"))
    for rj in jobs:
        step = _ancestor(rj)
        if step in (_DATASET_INITIALIZER, _MODEL_INITIALIZER):
            _initializer(trainjob, rj, step)
    for rj in jobs:
        if _ancestor(rj) == _TRAINER or (launcher_as_node and rj.get("name") == _NODE):
            _trainer(trainjob, rj, ancestor=_ancestor(rj) == _TRAINER)
    if ((runtime_spec.get("podGroupPolicy") or {}).get("coscheduling")) is not None:
        name = str((trainjob.get("metadata") or {}).get("name") or "")
        for rj in jobs:
            template = rj.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
            meta = template.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), _POD_GROUP_LABEL: name}
    return spec
