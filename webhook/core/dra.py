"""Dynamic Resource Allocation: what a Workload's ResourceClaimTemplates cost in quota.

A pod asking for devices through `spec.resourceClaims[].resourceClaimTemplateName` requests no
container resource, so without this step it would be admitted with its devices uncharged. With the
feature gate KueueDRAIntegration (on by default) each device request of a referenced template is
counted per DeviceClass, and `resources.deviceClassMappings` turns the class into the logical
resource name ClusterQueues give quota for. A Workload that cannot be counted (a class nobody mapped,
a request form Kueue does not count, a `resourceClaimName` instead of a template) is held
Inadmissible with upstream's message, never admitted for free.

With gate KueueDRAIntegrationExtendedResource (on by default) a container's request of an extended
resource that a DeviceClass backs (`spec.extendedResourceName`) is a device request too: it moves to
the class's mapped name.

Mirrors kueue v0.19.2: `pkg/dra/claims.go` (`countDevicesPerClass`,
`GetResourceRequestsForResourceClaimTemplates`), `pkg/dra/mapper.go` (`ResourceMapper`),
`pkg/dra/extended_resources.go` (`NeedsDRAReconcile`, `ResolveExtendedResourceQuota`),
`pkg/workload/workload.go` (`HasDRA`, `HasResourceClaim`, `HasResourceClaimTemplates`) and the DRA
steps of `Reconcile` in `pkg/controller/core/workload_controller.go`.

Not mirrored: upstream also compiles each request's CEL selectors and checks that enough devices of
the cluster's ResourceSlices match them before counting. There is no CEL evaluator here, so such a
request is counted without that check (a Workload whose selectors match too few devices is admitted
and its pods wait in kube-scheduler instead of the Workload waiting in Kueue); `resolve` reports the
selectors it did not check so the worker can log them.

Everything here is pure over the API's JSON dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from webhook.api import constants, quantity
from webhook.api.fields import FieldError, Path, aggregate, invalid, not_found, quantity_string
from webhook.core.conditions import ConditionValue
from webhook.core.resources import UNLIMITED

__all__ = [
    "MSG_CLAIMS_NOT_SUPPORTED",
    "MSG_CLAIMS_NOT_SUPPORTED_REQUEUED",
    "MSG_DRA_DISABLED",
    "DeviceClassMapper",
    "Outcome",
    "Settings",
    "TemplateLookup",
    "claim_template_names",
    "count_devices_per_class",
    "extended_backing",
    "extended_requests",
    "has_dra",
    "has_resource_claim",
    "has_resource_claim_templates",
    "inadmissible_conditions",
    "resolve",
    "without_own_refusal",
]

MSG_DRA_DISABLED = "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled"
MSG_CLAIMS_NOT_SUPPORTED = "KueueDRAIntegration feature does not support use of resource claims"
MSG_CLAIMS_NOT_SUPPORTED_REQUEUED = "DRA resource claims not supported"

# A ResourceClaimTemplate as the API serves it, or None when it does not exist (namespace, name).
TemplateLookup = Callable[[str, str], Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class DeviceClassMapper:
    """DeviceClass name → logical resource name (`ResourceMapper.PopulateFromConfiguration`): a class
    named by several mappings keeps the first one, as upstream's does."""

    logical: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_mappings(cls, mappings: Iterable[tuple[str, Iterable[str]]]) -> DeviceClassMapper:
        """From (logical resource name, its DeviceClass names) pairs, in configuration order."""
        out: dict[str, str] = {}
        for name, classes in mappings:
            for dc in classes:
                out.setdefault(dc, name)
        return cls(MappingProxyType(out))


@dataclass(frozen=True, slots=True)
class Settings:
    """The Configuration's say on DRA: gates KueueDRAIntegration and
    KueueDRARejectWorkloadsWhenDRADisabled, and `resources.deviceClassMappings`."""

    enabled: bool = True
    reject_when_disabled: bool = True
    mapper: DeviceClassMapper = field(default_factory=DeviceClassMapper)
    # Gate KueueDRAIntegrationExtendedResource: container requests of an extended resource that a
    # DeviceClass names in spec.extendedResourceName are devices too.
    extended_resources: bool = True


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the DRA step found for one Workload.

    `requests` is, per podSet name, the per-pod logical resources its templates add (amounts as
    `quantity.amount` counts them). `quota_message` / `requeued_message` are set when the Workload
    must be held Inadmissible (they differ only for a `resourceClaimName`). Upstream retries a
    missing template with backoff; here the template's watch event brings the Workload back.
    `unchecked_selectors` names the requests whose CEL selectors were not evaluated (see the module).
    """

    requests: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: MappingProxyType({}))
    # Per podSet name, the extended resources whose requests `requests` now carries instead.
    replaced: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    quota_message: str = ""
    requeued_message: str = ""
    unchecked_selectors: tuple[str, ...] = ()

    @property
    def inadmissible(self) -> bool:
        return bool(self.quota_message)


_NONE = Outcome()
# `field.Invalid(path, nil, ...)` prints the missing value as the string "null".
_NULL = "null"


def _pod_specs(obj: Mapping[str, Any]) -> Iterable[tuple[int, str, Mapping[str, Any]]]:
    for i, ps in enumerate((obj.get("spec") or {}).get("podSets") or ()):
        yield i, str(ps.get("name") or "main"), (ps.get("template") or {}).get("spec") or {}


def _claims_with(obj: Mapping[str, Any], key: str) -> bool:
    return any(prc.get(key) is not None for _, _, s in _pod_specs(obj) for prc in s.get("resourceClaims") or ())


def has_resource_claim(obj: Mapping[str, Any]) -> bool:
    """A pod template names a ResourceClaim directly (`HasResourceClaim`)."""
    return _claims_with(obj, "resourceClaimName")


def has_resource_claim_templates(obj: Mapping[str, Any]) -> bool:
    """A pod template names a ResourceClaimTemplate (`HasResourceClaimTemplates`)."""
    return _claims_with(obj, "resourceClaimTemplateName")


def claim_template_names(obj: Mapping[str, Any]) -> frozenset[str]:
    """The ResourceClaimTemplates a Workload's pods name (all in its namespace)."""
    return frozenset(
        str(prc["resourceClaimTemplateName"])
        for _, _, s in _pod_specs(obj)
        for prc in s.get("resourceClaims") or ()
        if prc.get("resourceClaimTemplateName") is not None
    )


def has_dra(obj: Mapping[str, Any]) -> bool:
    """`HasDRA`: either kind of claim."""
    return has_resource_claim(obj) or has_resource_claim_templates(obj)


@dataclass(frozen=True, slots=True)
class _Counted:
    counts: dict[str, int]  # DeviceClass → devices, in the order the requests name them
    selectors: list[int]  # indices of requests with CEL selectors (counted, not checked)


def count_devices_per_class(claim_spec: Mapping[str, Any]) -> _Counted | FieldError:
    """Devices requested per DeviceClass by a ResourceClaimSpec (`countDevicesPerClass`), or the first
    refusal (its path relative to the spec): only `exactly` requests with allocationMode ExactCount
    are counted; FirstAvailable, adminAccess and allocationMode All are refused. A request without
    deviceClassName costs nothing. The API server defaults allocationMode to ExactCount and count to
    1, so an absent value is read as those."""
    counts: dict[str, int] = {}
    selectors: list[int] = []
    requests = Path("devices.requests")
    for i, req in enumerate((claim_spec.get("devices") or {}).get("requests") or ()):
        path = requests.index(i)
        if req.get("firstAvailable") is not None:
            return invalid(path, _NULL, "FirstAvailable device selection is not supported")
        exactly = req.get("exactly")
        if exactly is None:
            return invalid(path, _NULL, "Exactly must be set if FirstAvailable is nil")
        if any((sel or {}).get("cel") is not None for sel in exactly.get("selectors") or ()):
            selectors.append(i)
        mode = str(exactly.get("allocationMode") or "ExactCount")
        if exactly.get("adminAccess") is True:
            return invalid(path.child("exactly", "adminAccess"), _NULL, "AdminAccess is not supported")
        if mode == "All":
            return invalid(path.child("exactly", "allocationMode"), mode, "AllocationMode 'All' is not supported")
        if mode != "ExactCount":
            return invalid(path.child("exactly", "allocationMode"), mode, f"unsupported allocation mode: {mode}")
        dc = str(exactly.get("deviceClassName") or "")
        if dc:
            # Counts are user-controlled: saturate as the scheduler's amounts do, never wrap.
            counts[dc] = min(counts.get(dc, 0) + int(exactly.get("count", 1)), UNLIMITED)
    return _Counted(counts, selectors)


def resolve(
    obj: Mapping[str, Any],
    templates: TemplateLookup,
    settings: Settings,
    backing: Mapping[str, str] | None = None,
) -> Outcome:
    """The DRA step of the workload controller for a Workload waiting for quota, in upstream's order:
    with the integration off, refuse any claim (gate KueueDRARejectWorkloadsWhenDRADisabled) or count
    nothing; a `resourceClaimName` is refused; then each ResourceClaimTemplate is counted and mapped,
    stopping at the first problem (`GetResourceRequestsForResourceClaimTemplates`); then the extended
    resources `backing` names (extendedResourceName → DeviceClass, `extended_backing`) are moved to
    their quota key (`ResolveExtendedResourceQuota`)."""
    if not settings.enabled:
        if settings.reject_when_disabled and has_dra(obj):
            return Outcome(quota_message=MSG_DRA_DISABLED, requeued_message=MSG_DRA_DISABLED)
        return _NONE
    backing = backing if settings.extended_resources and backing else {}
    if not has_dra(obj) and not _requests_backed(obj, backing):
        return _NONE
    if has_resource_claim(obj):
        return Outcome(quota_message=MSG_CLAIMS_NOT_SUPPORTED, requeued_message=MSG_CLAIMS_NOT_SUPPORTED_REQUEUED)
    claimed = _template_requests(obj, templates, settings)
    if claimed.inadmissible or not backing:
        return claimed
    extended = _extended_requests(obj, settings, backing)
    if extended.inadmissible:
        return extended
    merged: dict[str, Mapping[str, int]] = dict(claimed.requests)
    for ps, added in extended.requests.items():
        total = dict(merged.get(ps) or {})
        for r, v in added.items():
            total[r] = min(total.get(r, 0) + v, UNLIMITED)
        merged[ps] = MappingProxyType(total)
    return replace(claimed, requests=MappingProxyType(merged), replaced=extended.replaced)


def _template_requests(obj: Mapping[str, Any], templates: TemplateLookup, settings: Settings) -> Outcome:
    ns = str((obj.get("metadata") or {}).get("namespace") or "")
    per_pod_set: dict[str, Mapping[str, int]] = {}
    unchecked: list[str] = []
    for i, ps_name, spec in _pod_specs(obj):
        added: dict[str, int] = {}
        claims = Path("spec.podSets").index(i).child("template", "spec", "resourceClaims")
        for j, prc in enumerate(spec.get("resourceClaims") or ()):
            tname = prc.get("resourceClaimTemplateName")
            if tname is None:
                continue
            tmpl = templates(ns, str(tname))
            if tmpl is None:
                err = (
                    f"{claims.index(j)}: Internal error: failed to get claim spec for ResourceClaimTemplate "
                    f'{tname} in podset {ps_name}: resourceclaimtemplates.resource.k8s.io "{tname}" not found'
                )
                return _refused(err)
            counted = count_devices_per_class(((tmpl.get("spec") or {}).get("spec")) or {})
            if isinstance(counted, FieldError):
                where = f"{claims.index(j)}.{counted.path}"
                detail = f"ResourceClaimTemplate {tname}: {counted.detail}"
                return _refused(str(replace(counted, path=where, detail=detail)))
            unchecked.extend(f"{claims.index(j)}.devices.requests[{r}]" for r in counted.selectors)
            for dc, n in counted.counts.items():
                logical = settings.mapper.logical.get(dc)
                if logical is None:
                    path = claims.index(j).child("resourceClaimTemplateName")
                    detail = f"DeviceClass {dc} is not mapped in DRA configuration for podset {ps_name}"
                    return _refused(str(not_found(path, detail)))
                added[logical] = min(added.get(logical, 0) + quantity.amount(logical, n), UNLIMITED)
        if added:
            per_pod_set[ps_name] = MappingProxyType(added)
    return Outcome(requests=MappingProxyType(per_pod_set), unchecked_selectors=tuple(unchecked))


# -- extended resources backed by a DeviceClass (`pkg/dra/extended_resources.go`) -------------------


def extended_backing(device_classes: Iterable[Mapping[str, Any]]) -> Mapping[str, str]:
    """extendedResourceName → the DeviceClass Kubernetes allocates it from (`selectedDeviceClass`): of
    several classes naming it, the one created last; of those created in the same second, the name
    sorted first."""
    best: dict[str, tuple[str, str]] = {}  # extended name → (creationTimestamp, class name)
    for dc in device_classes:
        ern = (dc.get("spec") or {}).get("extendedResourceName")
        if not ern:
            continue
        meta = dc.get("metadata") or {}
        cand = (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
        held = best.get(str(ern))
        if held is None or cand[0] > held[0] or (cand[0] == held[0] and cand[1] < held[1]):
            best[str(ern)] = cand
    return MappingProxyType({ern: name for ern, (_, name) in best.items()})


def _positive_extended(container: Mapping[str, Any]) -> dict[str, tuple[Fraction, str]]:
    """A container's positive extended requests: name → (amount, text as the API carries it)."""
    reqs = (container.get("resources") or {}).get("requests") or {}
    out = {}
    for name, text in reqs.items():
        if quantity.is_extended_resource_name(str(name)):
            v = quantity.parse(text)
            if v > 0:
                out[str(name)] = (v, str(text))
    return out


def extended_requests(obj: Mapping[str, Any]) -> frozenset[str]:
    """The extended resources a Workload's containers ask for."""
    return frozenset(
        name
        for _, _, spec in _pod_specs(obj)
        for kind in ("initContainers", "containers")
        for c in spec.get(kind) or ()
        for name in _positive_extended(c)
    )


def _requests_backed(obj: Mapping[str, Any], backing: Mapping[str, str]) -> bool:
    """Some container asks for an extended resource a DeviceClass backs (`NeedsDRAReconcile`)."""
    if not backing:
        return False
    for _, _, spec in _pod_specs(obj):
        for kind in ("initContainers", "containers"):
            for c in spec.get(kind) or ():
                if any(name in backing for name in _positive_extended(c)):
                    return True
    return False


def _extended_requests(obj: Mapping[str, Any], settings: Settings, backing: Mapping[str, str]) -> Outcome:
    """`ResolveExtendedResourceQuota`: per podSet, init containers' extended requests by max and the
    others' by sum, then the larger of the two per name; each name a DeviceClass backs must be a whole
    number in every container and in total, and moves to its quota key: the class's mapped logical
    name, or the extended name itself. Errors of all names are reported together (sorted by name,
    where upstream follows map order)."""
    per_pod_set: dict[str, Mapping[str, int]] = {}
    replaced: dict[str, frozenset[str]] = {}
    errs: list[FieldError] = []
    for i, ps_name, spec in _pod_specs(obj):
        base = Path("spec.podSets").index(i).child("template", "spec")
        entries: list[tuple[Path, dict[str, tuple[Fraction, str]]]] = []
        first: dict[str, Path] = {}
        init_max: dict[str, Fraction] = {}
        regular_sum: dict[str, Fraction] = {}
        for kind in ("initContainers", "containers"):
            for j, c in enumerate(spec.get(kind) or ()):
                res = _positive_extended(c)
                if not res:
                    continue
                path = base.child(kind).index(j)
                entries.append((path, res))
                for name, (v, _) in res.items():
                    first.setdefault(name, path)
                    if kind == "initContainers":
                        init_max[name] = max(init_max.get(name, Fraction(0)), v)
                    else:
                        regular_sum[name] = regular_sum.get(name, Fraction(0)) + v
        pod = {n: max(init_max.get(n, Fraction(0)), regular_sum.get(n, Fraction(0))) for n in first}
        added: dict[str, int] = {}
        moved: set[str] = set()
        for name in sorted(pod):
            dc = backing.get(name)
            if dc is None:
                continue
            bad = [
                invalid(p.child("resources", "requests", name), quantity_string(res[name][1]), _NOT_INTEGER)
                for p, res in entries
                if name in res and res[name][0].denominator != 1
            ]
            if bad:
                errs.extend(bad)
                continue
            total = pod[name]
            if total > UNLIMITED:
                errs.append(invalid(first[name].child("resources", "requests", name), str(total), _OVERFLOW))
                continue
            key = settings.mapper.logical.get(dc, name)
            moved.add(name)
            added[key] = min(added.get(key, 0) + quantity.amount(key, int(total)), UNLIMITED)
        if added:
            per_pod_set[ps_name] = MappingProxyType(added)
        if moved:
            replaced[ps_name] = frozenset(moved)
    if errs:
        return _refused(aggregate(errs))
    return Outcome(requests=MappingProxyType(per_pod_set), replaced=MappingProxyType(replaced))


_NOT_INTEGER = "extended resource quantity must be an integer"
_OVERFLOW = "total extended resource quantity overflows int64"


def _refused(message: str) -> Outcome:
    return Outcome(quota_message=message, requeued_message=message)


def inadmissible_conditions(
    obj: Mapping[str, Any], outcome: Outcome, *, granular_reasons: bool
) -> tuple[ConditionValue, ...]:
    """The conditions an inadmissible `outcome` writes, () when they are already there:
    QuotaReserved=False (reason Inadmissible, or Misconfigured with UnadmittedWorkloadsObservability)
    and Requeued=False reason Inadmissible. As upstream (`UnsetQuotaReservationWithCondition`, then
    `SetRequeuedCondition` only if that changed something), Requeued is left alone when QuotaReserved
    already says the same; the DRA-disabled refusal sets Requeued regardless."""
    reason = constants.PendingReason.MISCONFIGURED if granular_reasons else constants.INADMISSIBLE_REASON
    current = {str(c.get("type")): c for c in (obj.get("status") or {}).get("conditions") or ()}
    quota = ConditionValue(constants.WorkloadCondition.QUOTA_RESERVED, "False", reason, outcome.quota_message)
    requeued = ConditionValue(
        constants.WorkloadCondition.REQUEUED, "False", constants.INADMISSIBLE_REASON, outcome.requeued_message
    )

    def same(cv: ConditionValue) -> bool:
        c = current.get(cv.type) or {}
        return (c.get("status"), c.get("reason"), c.get("message")) == (cv.status, cv.reason, cv.message)

    if not same(quota):
        return quota, requeued
    if outcome.quota_message == MSG_DRA_DISABLED and not same(requeued):
        return (requeued,)
    return ()


def without_own_refusal(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`obj` without the Requeued=False / QuotaReserved=False this step wrote, once its devices can
    be counted: upstream drops them from the copy it queues (`Reconcile`), or the Workload would
    wait for a requeue nothing schedules. Upstream drops any False Requeued of a DRA Workload; only
    ours (reason Inadmissible) is dropped here, so a PodsReady backoff is not cut short."""
    status = obj.get("status") or {}
    conds = status.get("conditions") or ()
    requeued = next((c for c in conds if c.get("type") == constants.WorkloadCondition.REQUEUED), None)
    if requeued is None or requeued.get("status") != "False" or requeued.get("reason") != constants.INADMISSIBLE_REASON:
        return obj
    dropped = (constants.WorkloadCondition.REQUEUED, constants.WorkloadCondition.QUOTA_RESERVED)
    kept = [c for c in conds if not (c.get("type") in dropped and c.get("status") == "False")]
    return {**obj, "status": {**status, "conditions": kept}}
