"""ClusterQueue webhook: add the resource-in-use finalizer, validate quotas, limits and policies.

Mirrors `pkg/webhooks/clusterqueue_webhook.go` and the resource-group and fair-sharing checks of
`pkg/webhooks/common.go` (kubernetes-sigs/kueue at ff69552e79), served at
/mutate-kueue-x-k8s-io-v1beta2-clusterqueue and /validate-kueue-x-k8s-io-v1beta2-clusterqueue.
The Cohort webhook (`cohort.py`) reuses `validate_resource_groups` and `validate_fair_sharing`.

Schema defaults (queueingStrategy, preemption, flavorFungibility, ...) and the CRD's CEL rules are
applied by the API server before this webhook sees the object; only the [WH] rules live here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from webhook.admission.context import Context
from webhook.api import constants as c
from webhook.api import fields as f
from webhook.api import objects as o
from webhook.api.quantity import parse
from webhook.config import Feature

__all__ = [
    "default",
    "validate_create",
    "validate_fair_sharing",
    "validate_resource_groups",
    "validate_update",
]

SPEC = f.Path("spec")
RESOURCE_GROUPS = SPEC.child("resourceGroups")
ADMISSION_CHECKS = SPEC.child("admissionChecksStrategy", "admissionChecks")
CONCURRENT_ADMISSION_POLICY = SPEC.child("concurrentAdmissionPolicy")

LENDING_LIMIT_MSG = "must be less than or equal to the nominalQuota"
IS_NEGATIVE_MSG = "must be greater than or equal to 0"
MAX_TOTAL_FLAVORS = 256
MAX_TOTAL_COVERED_RESOURCES = 256
MAX_FLAVOR_RESOURCES_PER_GROUP = 512
MAX_CONCURRENT_ADMISSION_FLAVORS = 16
_ONE_NANO = Fraction(1, 10**9)

# Go struct field order of the values printed in errors (apis/kueue/v1beta2/clusterqueue_types.go).
_BORROW_WITHIN_COHORT = (f.GoField("policy"), f.GoField("maxPriorityThreshold"))
_PREEMPTION = (
    f.GoField("reclaimWithinCohort"),
    f.GoField("borrowWithinCohort", schema=_BORROW_WITHIN_COHORT),
    f.GoField("withinClusterQueue"),
)
_CONCURRENT_ADMISSION_POLICY = (
    f.GoField(
        "migration",
        schema=(f.GoField("mode"), f.GoField("constraints", schema=(f.GoField("lastAcceptableFlavorName"),))),
    ),
)


def default(obj: dict[str, Any], ctx: Context) -> None:
    """Add the `kueue.x-k8s.io/resource-in-use` finalizer (`ClusterQueueWebhook.Default`)."""
    o.add_finalizer(obj, c.RESOURCE_IN_USE_FINALIZER)


def validate_create(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateClusterQueue`: the spec, then admission-check `onFlavors`."""
    return _validate_spec(obj, ctx) + _validate_on_flavors(obj, {})


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`ValidateClusterQueueUpdate`: as on create, tolerating legacy `onFlavors`; the policy is immutable."""
    errs = _validate_spec(new, ctx) + _validate_on_flavors(new, _tolerated_on_flavors(old, new, ctx))
    old_policy = _spec(old).get("concurrentAdmissionPolicy")
    new_policy = _spec(new).get("concurrentAdmissionPolicy")
    if f.go_semantic(old_policy) != f.go_semantic(new_policy):
        value = f.go_json(new_policy, _CONCURRENT_ADMISSION_POLICY) if new_policy is not None else None
        errs.append(f.immutable(CONCURRENT_ADMISSION_POLICY, value))
    return errs


# --- shared with Cohort (pkg/webhooks/common.go) --------------------------------------------------


def validate_resource_groups(
    groups: Sequence[Mapping[str, Any]],
    path: f.Path,
    *,
    has_parent: bool,
    parent_word: str,
    enforce_lending_le_nominal: bool,
) -> list[f.FieldError]:
    """`validateResourceGroups`: resource names, duplicates across groups, then each flavor's quotas."""
    errs: list[f.FieldError] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, group in enumerate(groups):
        group_path = path.index(i)
        covered = list(group.get("coveredResources") or [])
        for j, name in enumerate(covered):
            res_path = group_path.child("coveredResources").index(j)
            errs += [f.invalid(res_path, name, msg) for msg in f.is_label_key(name)]
            if name in seen_resources:
                errs.append(f.duplicate(res_path, name))
            else:
                seen_resources.add(name)
        for j, flavor in enumerate(group.get("flavors") or []):
            flavor_path = group_path.child("flavors").index(j)
            errs += _validate_flavor_quotas(
                flavor,
                covered,
                flavor_path,
                has_parent=has_parent,
                parent_word=parent_word,
                enforce_lending_le_nominal=enforce_lending_le_nominal,
            )
            name = flavor.get("name", "")
            if name in seen_flavors:
                errs.append(f.duplicate(flavor_path.child("name"), name))
            else:
                seen_flavors.add(name)
    return errs


def validate_fair_sharing(fair_sharing: Mapping[str, Any] | None, path: f.Path) -> list[f.FieldError]:
    """`validateFairSharing`: the weight is non-negative and, when positive, above 1n."""
    if not fair_sharing or fair_sharing.get("weight") is None:
        return []
    weight = fair_sharing["weight"]
    value = parse(weight)
    errs: list[f.FieldError] = []
    if value < 0:
        errs.append(f.invalid(path, f.quantity_string(weight), IS_NEGATIVE_MSG))
    if 0 < value <= _ONE_NANO:
        errs.append(f.invalid(path, f.quantity_string(weight), "When not 0, weight must be > 10e-9"))
    return errs


def _validate_flavor_quotas(
    flavor: Mapping[str, Any],
    covered: Sequence[str],
    path: f.Path,
    *,
    has_parent: bool,
    parent_word: str,
    enforce_lending_le_nominal: bool,
) -> list[f.FieldError]:
    """`validateFlavorQuotas`: only the first len(coveredResources) entries are looked at."""
    errs: list[f.FieldError] = []
    for k, quota in enumerate(flavor.get("resources") or []):
        if k >= len(covered):
            break
        quota_path = path.child("resources").index(k)
        if quota.get("name", "") != covered[k]:
            errs.append(
                f.invalid(quota_path.child("name"), quota.get("name", ""), "must match the name in coveredResources")
            )
        nominal = quota.get("nominalQuota", "0")
        errs += _non_negative(nominal, quota_path.child("nominalQuota"))
        if quota.get("borrowingLimit") is not None:
            limit_path = quota_path.child("borrowingLimit")
            errs += _limit_needs_parent(quota["borrowingLimit"], limit_path, has_parent=has_parent, word=parent_word)
            errs += _non_negative(quota["borrowingLimit"], limit_path)
        if quota.get("lendingLimit") is not None:
            lending = quota["lendingLimit"]
            limit_path = quota_path.child("lendingLimit")
            errs += _non_negative(lending, limit_path)
            errs += _limit_needs_parent(lending, limit_path, has_parent=has_parent, word=parent_word)
            if enforce_lending_le_nominal and parse(lending) > parse(nominal):
                errs.append(f.invalid(limit_path, f.quantity_string(lending), LENDING_LIMIT_MSG))
    return errs


def _non_negative(value: str | int | float, path: str) -> list[f.FieldError]:
    if parse(value) < 0:
        return [f.invalid(path, f.quantity_string(value), IS_NEGATIVE_MSG)]
    return []


def _limit_needs_parent(value: str | int | float, path: str, *, has_parent: bool, word: str) -> list[f.FieldError]:
    if has_parent:
        return []
    return [f.invalid(path, f.quantity_string(value), f"must be nil when {word} is empty")]


# --- ClusterQueue only -----------------------------------------------------------------------------


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _groups(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(_spec(obj).get("resourceGroups") or [])


def _validate_spec(obj: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """`validateClusterQueueSpec`, checks in upstream's order."""
    spec = _spec(obj)
    groups = _groups(obj)
    errs = validate_resource_groups(
        groups,
        RESOURCE_GROUPS,
        has_parent=bool(spec.get("cohortName")),
        parent_word="cohort",
        enforce_lending_le_nominal=True,
    )
    errs += f.validate_label_selector(spec.get("namespaceSelector"), SPEC.child("namespaceSelector"))
    if spec.get("preemption") is not None:
        errs += _validate_preemption(spec["preemption"])
    if spec.get("flavorFungibility") is not None:
        errs += _validate_flavor_fungibility(spec["flavorFungibility"])
    errs += validate_fair_sharing(spec.get("fairSharing"), SPEC.child("fairSharing"))
    errs += _validate_totals(groups)
    if ctx.config.feature_enabled(Feature.CONCURRENT_ADMISSION):
        errs += _validate_concurrent_admission_policy(spec, groups)
    return errs


def _validate_preemption(preemption: Mapping[str, Any]) -> list[f.FieldError]:
    borrow = preemption.get("borrowWithinCohort")
    if (
        preemption.get("reclaimWithinCohort", "") == "Never"
        and borrow is not None
        and borrow.get("policy", "") != "Never"
    ):
        return [
            f.invalid(
                SPEC.child("preemption"),
                f.go_json(preemption, _PREEMPTION),
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            )
        ]
    return []


def _validate_flavor_fungibility(fungibility: Mapping[str, Any]) -> list[f.FieldError]:
    preference = fungibility.get("preference")
    if preference is None:
        return []
    if (
        fungibility.get("whenCanBorrow", "") != "TryNextFlavor"
        or fungibility.get("whenCanPreempt", "") != "TryNextFlavor"
    ):
        return [
            f.invalid(
                SPEC.child("flavorFungibility", "preference"),
                preference,
                f'preference "{preference}" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
            )
        ]
    return []


def _validate_totals(groups: Sequence[Mapping[str, Any]]) -> list[f.FieldError]:
    """`validateTotalFlavors`, `validateTotalCoveredResources`, `validateFlavorResourceCombinations`."""
    errs: list[f.FieldError] = []
    flavors = sum(len(g.get("flavors") or []) for g in groups)
    if flavors > MAX_TOTAL_FLAVORS:
        errs.append(
            f.invalid(
                RESOURCE_GROUPS,
                flavors,
                f"total number of flavors across all resourceGroups must be ≤ {MAX_TOTAL_FLAVORS}, got {flavors}",
            )
        )
    covered = sum(len(g.get("coveredResources") or []) for g in groups)
    if covered > MAX_TOTAL_COVERED_RESOURCES:
        errs.append(
            f.invalid(
                RESOURCE_GROUPS,
                covered,
                "total number of covered resources across all resourceGroups must be "
                f"≤ {MAX_TOTAL_COVERED_RESOURCES}, got {covered}",
            )
        )
    for i, group in enumerate(groups):
        combos = sum(len(fq.get("resources") or []) for fq in group.get("flavors") or [])
        if combos > MAX_FLAVOR_RESOURCES_PER_GROUP:
            errs.append(
                f.invalid(
                    RESOURCE_GROUPS.index(i),
                    combos,
                    "number of flavor-resource combinations in a resourceGroup must be "
                    f"≤ {MAX_FLAVOR_RESOURCES_PER_GROUP}, got {combos}",
                )
            )
    return errs


def _all_flavors(groups: Iterable[Mapping[str, Any]]) -> set[str]:
    return {fq.get("name", "") for g in groups for fq in g.get("flavors") or []}


def _validate_concurrent_admission_policy(
    spec: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]
) -> list[f.FieldError]:
    """`validateConcurrentAdmissionPolicy` (gate ConcurrentAdmission)."""
    policy = spec.get("concurrentAdmissionPolicy")
    if policy is None:
        return []
    errs: list[f.FieldError] = []
    if len(groups) != 1:
        errs.append(
            f.invalid(
                RESOURCE_GROUPS,
                len(groups),
                "must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        )
    if len(groups) == 1 and len(groups[0].get("flavors") or []) > MAX_CONCURRENT_ADMISSION_FLAVORS:
        errs.append(
            f.invalid(
                RESOURCE_GROUPS.index(0).child("flavors"),
                len(groups[0].get("flavors") or []),
                f"cannot have more than {MAX_CONCURRENT_ADMISSION_FLAVORS} resource flavors in the ResourceGroup "
                "when ConcurrentAdmissionPolicy is defined",
            )
        )
    migration = policy.get("migration") or {}
    constraints = migration.get("constraints")
    constraints_path = CONCURRENT_ADMISSION_POLICY.child("migration", "constraints")
    if constraints is not None:
        mode = migration.get("mode", "")
        if mode not in ("", "TryPreferredFlavors"):
            errs.append(
                f.forbidden(
                    constraints_path,
                    f'may only be set when migration.mode is "TryPreferredFlavors" (got "{mode}")',
                )
            )
        elif constraints.get("lastAcceptableFlavorName") is not None:
            last = constraints["lastAcceptableFlavorName"]
            flavors = _all_flavors(groups)
            if last not in flavors:
                # Go prints the flavor set in map order; we sort it so the message is stable.
                errs.append(
                    f.invalid(
                        constraints_path.child("lastAcceptableFlavorName"),
                        last,
                        f"must be one of the flavors defined in the ClusterQueue: [{' '.join(sorted(flavors))}]",
                    )
                )
    if spec.get("queueingStrategy") == "StrictFIFO":
        errs.append(
            f.invalid(
                SPEC.child("queueingStrategy"),
                "StrictFIFO",
                "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined",
            )
        )
    return errs


def _tolerated_on_flavors(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> dict[str, frozenset[str]]:
    """Admission-check rules persisted before `onFlavors` was checked, kept while nothing relevant changes.

    With RejectUpdatesToCQWithInvalidOnFlavors off, a rule whose `onFlavors` set is unchanged is
    not re-checked, provided the ClusterQueue's own flavor set is unchanged too.
    """
    if ctx.config.feature_enabled(Feature.REJECT_UPDATES_TO_CQ_WITH_INVALID_ON_FLAVORS):
        return {}
    strategy = _spec(old).get("admissionChecksStrategy")
    if strategy is None or _all_flavors(_groups(old)) != _all_flavors(_groups(new)):
        return {}
    return {
        rule.get("name", ""): frozenset(rule.get("onFlavors") or []) for rule in strategy.get("admissionChecks") or []
    }


def _validate_on_flavors(obj: Mapping[str, Any], tolerated: Mapping[str, frozenset[str]]) -> list[f.FieldError]:
    """`validateAdmissionCheckOnFlavorsWithOld`: every `onFlavors` entry names a flavor of this ClusterQueue."""
    strategy = _spec(obj).get("admissionChecksStrategy")
    if strategy is None:
        return []
    flavors = _all_flavors(_groups(obj))
    # Go lists the allowed flavors in map order; sorted here for a stable message.
    allowed = sorted(flavors)
    errs: list[f.FieldError] = []
    for i, rule in enumerate(strategy.get("admissionChecks") or []):
        on_flavors = list(rule.get("onFlavors") or [])
        name = rule.get("name", "")
        if name in tolerated and tolerated[name] == frozenset(on_flavors):
            continue
        for j, flavor in enumerate(on_flavors):
            if flavor not in flavors:
                errs.append(f.not_supported(ADMISSION_CHECKS.index(i).child("onFlavors").index(j), flavor, allowed))
    return errs
