"""`create clusterqueue|localqueue|resourceflavor`: upstream kueuectl's flags, our objects as plain dicts.

Mirrors cmd/kueuectl/app/create/*.go: the same flags, defaults (BestEffortFIFO, preemption Never),
quota syntax (`FLAVOR:RESOURCE=QUANTITY;…`, flavors comma-separated), taint and toleration syntax
(`KEY[=VALUE][:EFFECT]`) and error messages. Parsing and building are pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import click

from webhook.api import constants, fields, quantity
from webhook.cli.api import CliError, get_object, kueue_path
from webhook.cli.output import check_output_format, print_objects
from webhook.cli.session import (
    AliasedGroup,
    DryRun,
    dry_run_option,
    kube_options,
    output_option,
    parse_dry_run,
    session,
)

__all__ = [
    "QuotaError",
    "build_cluster_queue",
    "build_local_queue",
    "build_resource_flavor",
    "create",
    "parse_key_values",
    "parse_resource_groups",
    "parse_taints",
    "parse_tolerations",
    "submit",
]

_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: upstream's shape check for one flavor's quota list (Go's \w is ASCII); values may also carry a decimal point.
_QUOTA_SPEC = re.compile(
    r"^([a-z0-9][a-z0-9\-.]{0,252}):((\w+[.-]?)*/?\w+=[\w.]+;)*(\w+[.-]?)*/?\w+=[\w.]+;?$", re.ASCII
)


class QuotaError(CliError):
    """A malformed --nominal-quota, --borrowing-limit or --lending-limit (upstream's five messages)."""


INVALID_SPEC = "invalid resources specification"
INVALID_QUOTA = "invalid resource quota"
INVALID_FLAVOR = "invalid flavor"
INVALID_GROUP = "invalid resource group"

_LIMIT_FIELDS = {"nominal-quota": "nominalQuota", "borrowing-limit": "borrowingLimit", "lending-limit": "lendingLimit"}


def _split(text: str, sep: str) -> tuple[str, str]:
    key, _, value = text.partition(sep)
    return key.strip(), value.strip()


def _flavor_quotas(spec: str, field: str) -> tuple[str, list[dict[str, Any]]]:
    """(flavor, its resource quotas in the order given) for one `FLAVOR:R=Q;R=Q` item."""
    if not _QUOTA_SPEC.match(spec):
        raise QuotaError(INVALID_SPEC)
    flavor, resources = _split(spec, ":")
    quotas = []
    for item in resources.split(";"):
        if not item:
            continue
        name, text = _split(item, "=")
        try:
            quantity.parse(text)
        except quantity.QuantityError:
            raise QuotaError(INVALID_QUOTA) from None
        quotas.append(
            {"name": name, "nominalQuota": text if field == "nominalQuota" else "0"}
            | ({field: text} if field != "nominalQuota" else {})
        )
    return flavor, quotas


def parse_resource_groups(
    nominal: Sequence[str] = (), borrowing: Sequence[str] = (), lending: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """ResourceGroups from the three quota flags.

    A flavor named in several flags must list the same resources in each; flavors covering the same
    resources share a group, in the order first seen; groups may not share a resource.
    """
    by_flavor: dict[str, list[dict[str, Any]]] = {}
    for flag, specs in (("nominal-quota", nominal), ("borrowing-limit", borrowing), ("lending-limit", lending)):
        for spec in specs:
            flavor, quotas = _flavor_quotas(spec, _LIMIT_FIELDS[flag])
            if flavor not in by_flavor:
                by_flavor[flavor] = quotas
                continue
            merged = by_flavor[flavor]
            if sorted(q["name"] for q in merged) != sorted(q["name"] for q in quotas):
                raise QuotaError(INVALID_FLAVOR)
            extra = {q["name"]: q for q in quotas}
            for q in merged:
                other = extra[q["name"]]
                if quantity.parse(q["nominalQuota"]) == 0:
                    q["nominalQuota"] = other["nominalQuota"]
                for key in ("borrowingLimit", "lendingLimit"):
                    if key not in q and key in other:
                        q[key] = other[key]
    groups: list[dict[str, Any]] = []
    by_covered: dict[frozenset[str], dict[str, Any]] = {}
    for flavor, quotas in by_flavor.items():
        covered = frozenset(q["name"] for q in quotas)
        if covered in by_covered:
            by_covered[covered]["flavors"].append({"name": flavor, "resources": quotas})
            continue
        if any(covered & other for other in by_covered):
            raise QuotaError(INVALID_GROUP)
        group = {"coveredResources": [q["name"] for q in quotas], "flavors": [{"name": flavor, "resources": quotas}]}
        by_covered[covered] = group
        groups.append(group)
    return groups


def parse_key_values(values: Sequence[str], flag: str) -> dict[str, str]:
    """pflag's StringToString: `k=v,k2=v2`, repeatable."""
    result: dict[str, str] = {}
    for value in values:
        for item in value.split(","):
            if not item:
                continue
            if "=" not in item:
                raise CliError(f'invalid argument "{value}" for "--{flag}" flag: {item} must be formatted as key=value')
            key, _, val = item.partition("=")
            result[key] = val
    return result


def _split_spec(text: str) -> tuple[str, str, str] | None:
    """KEY[=VALUE][:EFFECT] → (key, value, effect); None when it has two ':' or two '='."""
    parts = text.split(":")
    if len(parts) > 2:
        return None
    kv = parts[0].split("=")
    if len(kv) > 2:
        return None
    return kv[0], kv[1] if len(kv) > 1 else "", parts[1] if len(parts) > 1 else ""


def _check_effect(effect: str) -> None:
    if effect not in _EFFECTS:
        raise CliError(f"invalid taint effect: {effect}, unsupported taint effect")


def _check_key_value(text: str, what: str, key: str, value: str, *, key_required: bool) -> None:
    errs = (fields.is_label_key(key) if key or key_required else []) + (fields.is_label_value(value) if value else [])
    if errs:
        raise CliError(f"invalid {what} spec: {text}, {'; '.join(errs)}")


def parse_taints(specs: Sequence[str]) -> list[dict[str, str]]:
    """`KEY=VALUE:EFFECT` or `KEY:EFFECT` each; a key may carry each effect once."""
    taints: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for text in specs:
        if not text:
            raise CliError("invalid taint spec")
        parts = _split_spec(text)
        if parts is None or not parts[2]:
            raise CliError(f"invalid taint spec: {text}")
        key, value, effect = parts
        _check_effect(effect)
        _check_key_value(text, "taint", key, value, key_required=True)
        if (key, effect) in seen:
            raise CliError(f"duplicated taints with the same key and effect: {{{key} {value} {effect} <nil>}}")
        seen.add((key, effect))
        taints.append({"key": key, **({"value": value} if value else {}), "effect": effect})
    return taints


def parse_tolerations(specs: Sequence[str]) -> list[dict[str, str]]:
    """`KEY=VALUE:EFFECT`, `KEY:EFFECT`, `KEY=VALUE`, `:EFFECT` or `KEY`; Exists unless both key and value."""
    tolerations = []
    for text in specs:
        if not text:
            raise CliError("invalid toleration spec")
        parts = _split_spec(text)
        if parts is None or (not parts[0] and parts[1]):
            raise CliError(f"invalid toleration spec: {text}")
        key, value, effect = parts
        if effect:
            _check_effect(effect)
        _check_key_value(text, "toleration", key, value, key_required=False)
        tol = {"key": key} if key else {}
        tol["operator"] = "Equal" if key and value else "Exists"
        if value:
            tol["value"] = value
        if effect:
            tol["effect"] = effect
        tolerations.append(tol)
    return tolerations


def build_cluster_queue(
    name: str,
    *,
    cohort: str = "",
    queueing_strategy: str = "BestEffortFIFO",
    namespace_selector: Mapping[str, str] | None = None,
    reclaim_within_cohort: str = "Never",
    preemption_within_cluster_queue: str = "Never",
    resource_groups: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    spec: dict[str, Any] = {}  # in the API type's field order, as upstream prints it
    if resource_groups:
        spec["resourceGroups"] = [dict(g) for g in resource_groups]
    if cohort:
        spec["cohortName"] = cohort
    spec["queueingStrategy"] = queueing_strategy
    spec["namespaceSelector"] = {"matchLabels": dict(namespace_selector)} if namespace_selector else {}
    spec["preemption"] = {
        "reclaimWithinCohort": reclaim_within_cohort,
        "withinClusterQueue": preemption_within_cluster_queue,
    }
    return {"apiVersion": constants.V1BETA2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def build_local_queue(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": constants.V1BETA2,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def build_resource_flavor(
    name: str,
    *,
    node_labels: Mapping[str, str] | None = None,
    node_taints: Sequence[Mapping[str, str]] = (),
    tolerations: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_labels:
        spec["nodeLabels"] = dict(node_labels)
    if node_taints:
        spec["nodeTaints"] = [dict(t) for t in node_taints]
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    return {"apiVersion": constants.V1BETA2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def _operation(base: str, dry_run: str) -> str:
    """The name printer's operation word, with upstream's dry-run suffix."""
    return f"{base} ({dry_run} dry run)" if dry_run != DryRun.NONE else base


def submit(obj: dict[str, Any], kind: str, namespace: str | None, *, dry_run: str, output: str | None) -> str:
    """POST the object unless a client dry run, then print it as `-o` says."""
    if dry_run != DryRun.CLIENT:
        query = {"dryRun": "All"} if dry_run == DryRun.SERVER else None
        obj = session().api.request("POST", kueue_path(kind, namespace), body=obj, query=query)
    return print_objects(
        [obj], output, api_version=constants.V1BETA2, kind=obj["kind"], operation=_operation("created", dry_run)
    )


@click.group(cls=AliasedGroup, help="Create a resource")
def create() -> None:
    """`kueuectl create`."""


@click.command("localqueue", help="Create a local queue with the given name in the specified namespace.")
@click.argument("name")
@click.option(
    "-c",
    "--clusterqueue",
    default="",
    help="The cluster queue name which will be associated with the local queue (required).",
)
@click.option("-i", "--ignore-unknown-cq", is_flag=True, help="Ignore unknown cluster queue.")
@output_option(table=False)
@dry_run_option
@kube_options
def create_local_queue(name: str, clusterqueue: str, ignore_unknown_cq: bool, output: str | None, dry_run: str) -> None:
    check_output_format(output, table=False)
    dry_run = parse_dry_run(dry_run)
    if not clusterqueue:
        raise CliError('required flag(s) "clusterqueue" not set')
    s = session()
    if not ignore_unknown_cq and get_object(s.api, kueue_path("clusterqueue", name=clusterqueue)) is None:
        raise CliError(f'clusterqueues.{constants.GROUP} "{clusterqueue}" not found')
    lq = build_local_queue(name, s.ns, clusterqueue)
    click.echo(submit(lq, "localqueue", s.ns, dry_run=dry_run, output=output), nl=False)


@click.command("clusterqueue", help="Creates a ClusterQueue with the given name.")
@click.argument("name")
@click.option("--cohort", default="", help="The cohort that this ClusterQueue belongs to.")
@click.option(
    "--queuing-strategy",
    default="BestEffortFIFO",
    help="The queueing strategy of the workloads across the queues in this ClusterQueue.",
)
@click.option(
    "--namespace-selector",
    multiple=True,
    metavar="KEY=VALUE",
    help="Defines which namespaces are allowed to submit workloads to this clusterQueue.",
)
@click.option(
    "--reclaim-within-cohort",
    default="Never",
    help="Determines whether a pending Workload can preempt Workloads from other ClusterQueues in the "
    "cohort that are using more than their nominal quota.",
)
@click.option(
    "--preemption-within-cluster-queue",
    default="Never",
    help="Determines whether a pending Workload that doesn't fit within the nominal quota for its "
    "ClusterQueue, can preempt active Workloads in the ClusterQueue.",
)
@click.option(
    "--nominal-quota",
    multiple=True,
    metavar="RESOURCE_FLAVOR:RESOURCE=VALUE",
    help="The quantity of this resource that is available for Workloads admitted by this ClusterQueue at "
    "a point in time.",
)
@click.option(
    "--borrowing-limit",
    multiple=True,
    metavar="RESOURCE_FLAVOR:RESOURCE=VALUE",
    help="The maximum amount of quota for the [flavor, resource] combination that this ClusterQueue is "
    "allowed to borrow from the unused quota of other ClusterQueues in the same cohort.",
)
@click.option(
    "--lending-limit",
    multiple=True,
    metavar="RESOURCE_FLAVOR:RESOURCE=VALUE",
    help="The maximum amount of unused quota for the [flavor, resource] combination that this "
    "ClusterQueue can lend to other ClusterQueues in the same cohort.",
)
@output_option(table=False)
@dry_run_option
@kube_options
def create_cluster_queue(
    name: str,
    cohort: str,
    queuing_strategy: str,
    namespace_selector: Sequence[str],
    reclaim_within_cohort: str,
    preemption_within_cluster_queue: str,
    nominal_quota: Sequence[str],
    borrowing_limit: Sequence[str],
    lending_limit: Sequence[str],
    output: str | None,
    dry_run: str,
) -> None:
    check_output_format(output, table=False)
    groups = parse_resource_groups(_csv(nominal_quota), _csv(borrowing_limit), _csv(lending_limit))
    dry_run = parse_dry_run(dry_run)
    cq = build_cluster_queue(
        name,
        cohort=cohort,
        queueing_strategy=queuing_strategy,
        namespace_selector=parse_key_values(namespace_selector, "namespace-selector"),
        reclaim_within_cohort=reclaim_within_cohort,
        preemption_within_cluster_queue=preemption_within_cluster_queue,
        resource_groups=groups,
    )
    click.echo(submit(cq, "clusterqueue", None, dry_run=dry_run, output=output), nl=False)


@click.command("resourceflavor", help="Create a resource flavor with the given name.")
@click.argument("name")
@click.option(
    "--node-labels",
    multiple=True,
    metavar="KEY=VALUE",
    help="Labels that associate the ResourceFlavor with Nodes that have the same labels.",
)
@click.option(
    "--node-taints",
    multiple=True,
    metavar="KEY[=VALUE]:EFFECT",
    help="Taints that the nodes associated with this ResourceFlavor have.",
)
@click.option(
    "--tolerations",
    multiple=True,
    metavar="KEY[=VALUE][:EFFECT]",
    help="Extra tolerations that will be added to the pods admitted in the quota associated with this resource flavor.",
)
@output_option(table=False)
@dry_run_option
@kube_options
def create_resource_flavor(
    name: str,
    node_labels: Sequence[str],
    node_taints: Sequence[str],
    tolerations: Sequence[str],
    output: str | None,
    dry_run: str,
) -> None:
    check_output_format(output, table=False)
    rf = build_resource_flavor(
        name,
        node_labels=parse_key_values(node_labels, "node-labels"),
        node_taints=parse_taints(_csv(node_taints)),
        tolerations=parse_tolerations(_csv(tolerations)),
    )
    dry_run = parse_dry_run(dry_run)
    click.echo(submit(rf, "resourceflavor", None, dry_run=dry_run, output=output), nl=False)


def _csv(values: Sequence[str]) -> list[str]:
    """pflag's StringSlice: each use may hold several comma-separated items."""
    return [item for value in values for item in value.split(",")]


create.add_command(create_local_queue, aliases=("lq",))
create.add_command(create_cluster_queue, aliases=("cq",))
create.add_command(create_resource_flavor, aliases=("rf",))
