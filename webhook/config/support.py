"""What pykueue does not implement of upstream's Configuration and feature gates: the one list.

`serve` and `worker` refuse, at start and in one message, a valid Configuration that asks for any of
it (`check_implemented`); nothing is accepted and then ignored. Implementing a feature is removing
its line here. The README's "Configuration support" table names every field and gate; a unit test
keeps it in step with `webhook.config.types` and with the lists below.

Feature gates fall in three groups:

* `UNIMPLEMENTED_GATES`: the feature is absent. Off is what pykueue does, so `false` is always
  accepted; `true` is refused when upstream's default is off. A default-on gate of an absent feature
  (a MultiKueue dispatcher's or adapter's) is accepted at its default: objects that need it are held
  back as upstream holds them when no flavor or cluster supports it.
* `ALWAYS_ON_GATES`: the behaviour is hard-wired on; `false` is refused.
* `NO_EFFECT_GATES`: upstream's internals (how a patch is sent, a TAS data layout); either value is
  accepted and changes nothing a user can observe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from webhook.config import tlsoptions
from webhook.config.types import FEATURE_GATE_DEFAULTS, Configuration, Feature

__all__ = [
    "ALWAYS_ON_GATES",
    "FIELD_REFUSALS",
    "NO_EFFECT_GATES",
    "UNIMPLEMENTED_GATES",
    "accepted_without_effect",
    "refusals",
]

_MK = "MultiKueue is not implemented"
#: What the MultiKueue admission check (webhook/worker/reconcilers/multikueue.py) does not do yet.
_MK_PART = (
    "not implemented by our MultiKueue admission check yet (it dispatches Jobs, JobSets, AppWrappers, "
    "Kubeflow's jobs, TrainJobs, Pods, Deployments and StatefulSets)"
)

UNIMPLEMENTED_GATES: Mapping[Feature, str] = MappingProxyType(
    {
        Feature.UNADMITTED_WORKLOADS_EXPLICIT_STATUS: "pending Workloads get no explicit unadmitted status",
        Feature.PRIORITIZE_PREEMPTOR_WORKLOADS: "the scheduler does not order preempting workloads first",
        Feature.FAST_QUOTA_RELEASE_IN_POD_INTEGRATION: "a terminating pod keeps its quota until it is gone",
        Feature.PRIORITY_BOOST: (
            "the kueue.x-k8s.io/priority-boost annotation is validated but never added to a workload's priority"
        ),
        # Topology-aware scheduling is implemented at upstream's defaults (webhook.core.tas); these
        # alternatives to them are not reachable from the Configuration yet.
        Feature.TAS_BALANCED_PLACEMENT: "TAS balanced placement is not implemented",
        Feature.TAS_RESPECT_NODE_AFFINITY_PREFERRED: "TAS does not rank domains by preferred node affinity",
        Feature.SCHEDULER_LIBRARY_INTEGRATION: "TAS placement does not call the kube-scheduler library",
        Feature.ELASTIC_JOBS_VIA_WORKLOAD_SLICES_WITH_TAS: "elastic Jobs' workload slices are not placed by TAS",
        Feature.MULTI_KUEUE_ADAPTERS_FOR_CUSTOM_JOBS: _MK,
        Feature.MULTI_KUEUE_KUBE_CONFIG_PATH_VALIDATION: _MK,
        Feature.MULTI_KUEUE_REMOTE_SPEC_SYNC: _MK,
        Feature.MULTI_KUEUE_ALLOW_INSECURE_KUBECONFIGS: _MK,
    }
)

ALWAYS_ON_GATES: Mapping[Feature, str] = MappingProxyType(
    {
        Feature.FLAVOR_FUNGIBILITY: "a ClusterQueue's flavorFungibility is always honoured",
        Feature.FLAVOR_FUNGIBILITY_PRESERVE_SCAN_PROGRESS: "the flavor scan always resumes where it stopped",
        Feature.PRIORITY_SORTING_WITHIN_COHORT: "workloads of a cohort are always ordered by priority",
        Feature.FAIR_SHARING_PREEMPT_WITHIN_NOMINAL: "fair sharing always preempts within nominal quota first",
        Feature.FAIR_SHARING_PRIORITIZE_NON_BORROWING: "fair sharing always admits non-borrowing workloads first",
        Feature.REMOVE_FINALIZERS_WITH_STRICT_PATCH: "finalizers are always removed with a resourceVersion check",
        Feature.TAS_ASSIGNMENTS_ENCODING_BY_HOSTNAME_PREFIX: (
            "v1beta1 topology assignments are always converted with the hostname-prefix encoding"
        ),
        Feature.TAS_PROFILE_MIXED: "TAS always places with upstream's mixed profile",
        Feature.TAS_MULTI_LAYER_TOPOLOGY: "TAS always honours multi-layer slice requests",
        Feature.TAS_HANDLE_OVERLAPPING_FLAVORS: "TAS flavors sharing nodes always count each other's usage",
        Feature.TAS_RECOMPUTE_ASSIGNMENT_WITHIN_SCHEDULING_CYCLE: (
            "a TAS placement whose domains were taken earlier in the cycle is always recomputed"
        ),
        Feature.TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST: (
            "a Workload whose failed node has no replacement is always evicted at once"
        ),
    }
)

# Parts of topology-aware scheduling: with TopologyAwareScheduling off, turning them off too is consistent.
_TAS_PARTS = frozenset(
    {
        Feature.TAS_PROFILE_MIXED,
        Feature.TAS_MULTI_LAYER_TOPOLOGY,
        Feature.TAS_HANDLE_OVERLAPPING_FLAVORS,
        Feature.TAS_RECOMPUTE_ASSIGNMENT_WITHIN_SCHEDULING_CYCLE,
        Feature.TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST,
    }
)

NO_EFFECT_GATES: Mapping[Feature, str] = MappingProxyType(
    {
        Feature.WORKLOAD_REQUEST_USE_MERGE_PATCH: "how upstream sends a Workload write; ours are merge patches",
        Feature.VECTORIZED_RESOURCE_REQUESTS: "a data layout inside upstream's TAS code",
        Feature.TAS_CACHE_NODE_MATCH_RESULTS: "a cache upstream's TAS code keeps for speed",
        Feature.TAS_CACHING_REMAINING_RESOURCES: "a cache upstream's TAS code keeps for speed",
        Feature.TAS_CACHE_TOPOLOGY_TREE: "a cache upstream's TAS code keeps for speed",
    }
)


def _access_providers(cfg: Configuration) -> bool:
    """`multiKueue.clusterProfile` names an access provider (or a deprecated credentials provider)."""
    cp = cfg.multi_kueue.cluster_profile or {}
    return bool(cp.get("accessProviders") or cp.get("credentialsProviders"))


# Fields refused at a non-default value: (path, is it at its default, why).
FIELD_REFUSALS: tuple[tuple[str, Callable[[Configuration], bool], str], ...] = (
    (
        "leaderElection.resourceLock",
        lambda cfg: cfg.leader_election.resource_lock == "leases",
        'only "leases" is supported (as in client-go, which removed the other locks)',
    ),
    (
        "pprofBindAddress",
        lambda cfg: cfg.pprof_bind_address == "",
        "pprof is Go's profiler and has no equivalent here (attach py-spy to the process instead)",
    ),
    (
        "controller.cacheSyncTimeout",
        lambda cfg: cfg.controller.cache_sync_timeout_s is None,
        "the worker waits for its initial lists without a deadline, retrying them",
    ),
    (
        "multiKueue.externalFrameworks",
        lambda cfg: not cfg.multi_kueue.external_frameworks,
        f"external frameworks are {_MK_PART}",
    ),
    (
        "multiKueue.clusterProfile",
        lambda cfg: not _access_providers(cfg),
        "ClusterProfile access providers run a credential plugin, which our MultiKueue admission check does not "
        "(a MultiKueueCluster's clusterProfileRef is read, and without a provider it reports "
        '"no access provider configured", as upstream)',
    ),
)


def refusals(cfg: Configuration) -> list[str]:
    """One line per option `cfg` sets that pykueue does not implement, fields first, gates sorted."""
    out = [f"{path}: {why}" for path, at_default, why in FIELD_REFUSALS if not at_default(cfg)]
    out.extend(tlsoptions.unavailable(tlsoptions.for_config(cfg)))
    tas = cfg.feature_enabled(Feature.TOPOLOGY_AWARE_SCHEDULING)
    for name in sorted(cfg.feature_gates):
        gate, value = Feature(name), cfg.feature_gates[name]
        if value and not FEATURE_GATE_DEFAULTS[gate] and gate in UNIMPLEMENTED_GATES:
            out.append(f"featureGates.{gate}: true is not implemented: {UNIMPLEMENTED_GATES[gate]}")
        elif not value and gate in ALWAYS_ON_GATES and (gate not in _TAS_PARTS or tas):
            out.append(f"featureGates.{gate}: false is not implemented: {ALWAYS_ON_GATES[gate]}")
    return out


def accepted_without_effect(cfg: Configuration) -> list[str]:
    """Options `cfg` sets that are accepted as harmless tuning but change nothing here (logged at start)."""
    out = []
    if cfg.controller.group_kind_concurrency:
        out.append(
            "controller.groupKindConcurrency: not read; each reconciler runs a fixed number of worker "
            "threads (events of one object in order)"
        )
    out.extend(
        f"featureGates.{name}: {NO_EFFECT_GATES[Feature(name)]}"
        for name in sorted(cfg.feature_gates)
        if Feature(name) in NO_EFFECT_GATES
    )
    return out
