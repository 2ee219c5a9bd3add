"""`list clusterqueue|localqueue|workload|resourceflavor|pods`: upstream kueuectl's columns and filters.

Mirrors cmd/kueuectl/app/list/*.go. Rows are built by pure functions of the listed objects, what was
looked up for them and the time; the commands only fetch. The workload list's POSITION IN QUEUE comes
from the visibility API (`…/clusterqueues/NAME/pendingworkloads`) and is blank where that is not served.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import click

from webhook.api import constants
from webhook.api import objects as o
from webhook.cli.api import (
    Api,
    CliError,
    Resource,
    get_object,
    kueue_path,
    list_items,
    pending_workloads,
    resolve_resource,
    resources_for,
)
from webhook.cli.output import (
    age,
    cell,
    check_output_format,
    human_duration,
    parse_time,
    print_objects,
    render_table,
)
from webhook.cli.session import AliasedGroup, all_namespaces_option, kube_options, output_option, session

__all__ = [
    "WorkloadLookups",
    "cluster_queue_rows",
    "is_active",
    "local_queue_rows",
    "pod_label_selector",
    "resource_flavor_rows",
    "server_table",
    "workload_cluster_queue",
    "workload_rows",
    "workload_status",
]

CQ_COLUMNS = ("Name", "Cohort", "Pending Workloads", "Admitted Workloads", "Active", "Age")
LQ_COLUMNS = ("Name", "ClusterQueue", "Pending Workloads", "Admitted Workloads", "Age")
RF_COLUMNS = ("Name", "Node Labels", "Age")
WL_COLUMNS = (
    "Name",
    "Job Type",
    "Job Name",
    "LocalQueue",
    "ClusterQueue",
    "Status",
    "Position in Queue",
    "Exec Time",
    "Age",
)
_STATUSES = ("all", "pending", "quotareserved", "admitted", "finished")
_STATUS_ERROR = 'invalid status value ({}). Must be "all", "pending", "admitted" or "finished"'
_JOB_TYPE_MAX = 20
_TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def is_active(cq: Mapping[str, Any]) -> bool:
    return o.is_condition_true(cq, "Active")


def _with_namespace(rows: Iterable[list[Any]], objects: Sequence[Mapping[str, Any]], on: bool) -> list[list[Any]]:
    return [([o.meta(obj).get("namespace", "")] if on else []) + row for row, obj in zip(rows, objects, strict=True)]


def cluster_queue_rows(cqs: Sequence[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            o.meta(cq).get("name"),
            (cq.get("spec") or {}).get("cohortName", ""),
            (cq.get("status") or {}).get("pendingWorkloads", 0),
            (cq.get("status") or {}).get("admittedWorkloads", 0),
            is_active(cq),
            age(o.meta(cq).get("creationTimestamp"), now),
        ]
        for cq in cqs
    ]


def local_queue_rows(lqs: Sequence[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            o.meta(lq).get("name"),
            (lq.get("spec") or {}).get("clusterQueue", ""),
            (lq.get("status") or {}).get("pendingWorkloads", 0),
            (lq.get("status") or {}).get("admittedWorkloads", 0),
            age(o.meta(lq).get("creationTimestamp"), now),
        ]
        for lq in lqs
    ]


def resource_flavor_rows(rfs: Sequence[Mapping[str, Any]], now: datetime) -> list[list[Any]]:
    return [
        [
            o.meta(rf).get("name"),
            ", ".join(sorted(f"{k}={v}" for k, v in ((rf.get("spec") or {}).get("nodeLabels") or {}).items())),
            age(o.meta(rf).get("creationTimestamp"), now),
        ]
        for rf in rfs
    ]


def workload_status(wl: Mapping[str, Any]) -> str:
    """upstream's workload.Status: finished, admitted, quotaReserved or pending, the first that holds."""
    if o.is_condition_true(wl, constants.WorkloadCondition.FINISHED):
        return "finished"
    if o.is_condition_true(wl, constants.WorkloadCondition.ADMITTED):
        return "admitted"
    if o.is_condition_true(wl, constants.WorkloadCondition.QUOTA_RESERVED):
        return "quotaReserved"
    return "pending"


def _lq_key(wl: Mapping[str, Any]) -> tuple[str, str]:
    return o.meta(wl).get("namespace", ""), (wl.get("spec") or {}).get("queueName", "")


@dataclass(slots=True)
class WorkloadLookups:
    """What the workload table needs besides the workloads: their LocalQueues (None when absent), pending
    positions by (namespace, name), and discovery by owner apiVersion (None when not served)."""

    local_queues: dict[tuple[str, str], Mapping[str, Any] | None] = field(default_factory=dict)
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    resources: dict[str, Sequence[Resource] | None] = field(default_factory=dict)


def workload_cluster_queue(
    wl: Mapping[str, Any], local_queues: Mapping[tuple[str, str], Mapping[str, Any] | None]
) -> str:
    """The admitting ClusterQueue, else the one its LocalQueue points at."""
    admitted = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
    if admitted:
        return str(admitted)
    lq = local_queues.get(_lq_key(wl))
    return str((lq.get("spec") or {}).get("clusterQueue", "")) if lq else ""


def _job_type(ref: Mapping[str, Any], resources: Mapping[str, Sequence[Resource] | None]) -> str | None:
    for res in resources.get(ref.get("apiVersion", "")) or ():
        if res.kind == ref.get("kind") and res.singular:
            text = ".".join(p for p in (res.singular, res.listed_group) if p)
            return text[:_JOB_TYPE_MAX] + "..." if len(text) > _JOB_TYPE_MAX else text
    return None


def _exec_time(wl: Mapping[str, Any], now: datetime) -> str:
    admitted = o.find_condition(wl, constants.WorkloadCondition.ADMITTED)
    if admitted is None or admitted.get("status") != "True":
        return ""
    start = parse_time(admitted.get("lastTransitionTime")) or now
    finished = o.find_condition(wl, constants.WorkloadCondition.FINISHED)
    end = parse_time(finished.get("lastTransitionTime")) if finished and finished.get("status") == "True" else None
    return human_duration(((end or now) - start).total_seconds())


def workload_rows(wls: Sequence[Mapping[str, Any]], lookups: WorkloadLookups, now: datetime) -> list[list[Any]]:
    rows = []
    for wl in wls:
        refs = o.meta(wl).get("ownerReferences") or []
        types = sorted({t for t in (_job_type(r, lookups.resources) for r in refs) if t})
        position = lookups.positions.get((o.meta(wl).get("namespace", ""), o.meta(wl).get("name", "")))
        rows.append(
            [
                o.meta(wl).get("name"),
                ", ".join(types),
                ", ".join(sorted({r.get("name", "") for r in refs})),
                (wl.get("spec") or {}).get("queueName", ""),
                workload_cluster_queue(wl, lookups.local_queues),
                workload_status(wl).upper(),
                "" if position is None else position,
                _exec_time(wl, now),
                age(o.meta(wl).get("creationTimestamp"), now),
            ]
        )
    return rows


def pod_label_selector(obj: Mapping[str, Any]) -> str | None:
    """The label selector of the pods a job-like object owns (upstream's PodLabelSelector per integration);
    None for a kind we do not know."""
    kind = obj.get("kind", "")
    group = obj.get("apiVersion", "").rpartition("/")[0]
    name = o.meta(obj).get("name", "")
    kubeflow_operators = {
        "PyTorchJob": "pytorchjob-controller",
        "TFJob": "tfjob-controller",
        "PaddleJob": "paddlejob-controller",
        "XGBoostJob": "xgboostjob-controller",
        "JAXJob": "jaxjob-controller",
    }
    if (group, kind) == ("batch", "Job"):
        return f"batch.kubernetes.io/job-name={name}"
    if (group, kind) == ("", "Pod"):
        return f"{constants.POD_GROUP_NAME}={(o.meta(obj).get('labels') or {}).get(constants.POD_GROUP_NAME, '')}"
    if group == "kubeflow.org" and kind in kubeflow_operators:
        return f"training.kubeflow.org/job-name={name},training.kubeflow.org/operator-name={kubeflow_operators[kind]}"
    if group == "kubeflow.org" and kind == "MPIJob":
        return f"training.kubeflow.org/job-name={name},training.kubeflow.org/operator-name=mpi-operator"
    if (group, kind) == ("ray.io", "RayCluster"):
        return f"ray.io/cluster={name}"
    if (group, kind) == ("ray.io", "RayJob"):
        cluster = (obj.get("status") or {}).get("rayClusterName")
        return f"ray.io/cluster={cluster}" if cluster else ""
    if (group, kind) == ("jobset.x-k8s.io", "JobSet"):
        return f"jobset.sigs.k8s.io/jobset-name={name}"
    return None


def server_table(table: Mapping[str, Any], *, wide: bool, with_namespace: bool) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows of a server-side Table: priority-0 columns, all of them when `wide`."""
    columns = table.get("columnDefinitions") or []
    shown = [i for i, c in enumerate(columns) if wide or not c.get("priority")]
    headers = (["Namespace"] if with_namespace else []) + [columns[i]["name"] for i in shown]
    rows = []
    for row in table.get("rows") or []:
        cells = row.get("cells") or []
        values = ["<none>" if i >= len(cells) or cells[i] is None else cells[i] for i in shown]
        ns = [o.meta(row.get("object") or {}).get("namespace", "")] if with_namespace else []
        rows.append(ns + values)
    return headers, rows


# --------------------------------------------------------------------------- commands


def _no_resources(namespace: str | None, *, dot: bool = False) -> None:
    message = (
        f"No resources found in {namespace} namespace." if namespace else "No resources found" + ("." if dot else "")
    )
    click.echo(message, err=True)


def _emit(
    objects: Sequence[Mapping[str, Any]],
    output: str | None,
    kind: str,
    headers: Sequence[str],
    rows: list[list[Any]],
    *,
    with_namespace: bool,
    namespace: str | None,
) -> None:
    if not objects:
        _no_resources(namespace)
        return
    if output in (None, "wide"):
        click.echo(render_table((["Namespace"] if with_namespace else []) + list(headers), rows), nl=False)
    else:
        click.echo(print_objects(objects, output, api_version=constants.V1BETA2, kind=kind, as_list=True), nl=False)


def _selectors(f: Any) -> Any:
    f = click.option(
        "--field-selector",
        default="",
        help="Selector (field query) to filter on, supports '=', '==', and '!='.(e.g. --field-selector "
        "key1=value1,key2=value2). The server only supports a limited number of field queries per type.",
    )(f)
    return click.option(
        "-l",
        "--selector",
        default="",
        help="Selector (label query) to filter on, supports '=', '==', and '!='.(e.g. -l key1=value1,"
        "key2=value2). Matching objects must satisfy all of the specified label constraints.",
    )(f)


def _for_option(f: Any) -> Any:
    """`--for TYPE[.API-GROUP]/NAME`, worded alike for the Workload and the pod listings."""
    return click.option(
        "--for",
        "for_object",
        default="",
        metavar="TYPE[.API-GROUP]/NAME",
        help="Filter only those pertaining to the specified resource.",
    )(f)


@click.command(
    "clusterqueue",
    help="Lists all ClusterQueues, potentially limiting output to those that are "
    "active/inactive and matching the label selector.",
)
@click.option(
    "--active", multiple=True, metavar="true|false", help="Filter by active status. Valid values: 'true' and 'false'."
)
@_selectors
@output_option(table=True)
@kube_options
def list_cluster_queues(active: Sequence[str], selector: str, field_selector: str, output: str | None) -> None:
    check_output_format(output, table=True)
    wanted = [_parse_bool(v) for value in active for v in value.split(",") if v]
    if len(wanted) > 1:
        raise CliError("only one active flag can be provided")
    s = session()
    cqs = list_items(s.api, kueue_path("clusterqueue"), label_selector=selector, field_selector=field_selector)["items"]
    if wanted:
        cqs = [cq for cq in cqs if is_active(cq) == wanted[0]]
    _emit(
        cqs,
        output,
        "ClusterQueue",
        CQ_COLUMNS,
        cluster_queue_rows(cqs, s.clock()),
        with_namespace=False,
        namespace=None,
    )


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "t", "1"):
        return True
    if lowered in ("false", "f", "0"):
        return False
    raise CliError(
        f'invalid argument "{text}" for "--active" flag: strconv.ParseBool: parsing "{text}": invalid syntax'
    )


@click.command(
    "localqueue",
    help="Lists LocalQueues that match the given criteria: point to a specific CQ, being "
    "active/inactive, belonging to the specified namespace, matching the label selector "
    "or the field selector.",
)
@click.option(
    "-c", "--clusterqueue", default="", help="Filter by cluster queue name which is associated with the resource."
)
@all_namespaces_option
@_selectors
@output_option(table=True)
@kube_options
def list_local_queues(
    clusterqueue: str, all_namespaces: bool, selector: str, field_selector: str, output: str | None
) -> None:
    check_output_format(output, table=True)
    s = session()
    namespace = None if all_namespaces else s.ns
    lqs = list_items(
        s.api, kueue_path("localqueue", namespace), label_selector=selector, field_selector=field_selector
    )["items"]
    if clusterqueue:
        lqs = [lq for lq in lqs if (lq.get("spec") or {}).get("clusterQueue") == clusterqueue]
    _emit(
        lqs,
        output,
        "LocalQueue",
        LQ_COLUMNS,
        _with_namespace(local_queue_rows(lqs, s.clock()), lqs, all_namespaces),
        with_namespace=all_namespaces,
        namespace=namespace,
    )


@click.command("resourceflavor", help="List ResourceFlavor")
@_selectors
@output_option(table=True)
@kube_options
def list_resource_flavors(selector: str, field_selector: str, output: str | None) -> None:
    check_output_format(output, table=True)
    s = session()
    rfs = list_items(s.api, kueue_path("resourceflavor"), label_selector=selector, field_selector=field_selector)[
        "items"
    ]
    _emit(
        rfs,
        output,
        "ResourceFlavor",
        RF_COLUMNS,
        resource_flavor_rows(rfs, s.clock()),
        with_namespace=False,
        namespace=None,
    )


def _find_for_object(api: Api, arg: str, namespace: str | None) -> tuple[Resource, dict[str, Any] | None]:
    """The object `--for TYPE[.GROUP]/NAME` names (the first match across namespaces when `namespace` is None)."""
    parts = arg.split("/")
    if len(parts) != 2:
        if len(parts) > 2:
            raise CliError("arguments in resource/name form may not have more than one slash")
        raise CliError(f"invalid value '{arg}' used in --for flag; value must be in the format TYPE[.API-GROUP]/NAME")
    res = resolve_resource(api, parts[0])
    found = list_items(api, res.path(namespace), field_selector=f"metadata.name={parts[1]}")["items"]
    if not found:
        return res, None
    obj = dict(found[0])
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    return res, obj


def _workload_lookups(api: Api, wls: Sequence[Mapping[str, Any]]) -> WorkloadLookups:
    lookups = WorkloadLookups()
    for wl in wls:
        if ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue"):
            continue
        key = _lq_key(wl)
        if key not in lookups.local_queues:
            lookups.local_queues[key] = get_object(api, kueue_path("localqueue", key[0], key[1])) if key[1] else None
    summaries: dict[str, list[dict[str, Any]] | None] = {}
    for wl in wls:
        cq = workload_cluster_queue(wl, lookups.local_queues)
        if workload_status(wl) != "pending" or not cq:
            continue
        if cq not in summaries:
            summaries[cq] = pending_workloads(api, cq)
        for pending in summaries[cq] or ():
            key = (o.meta(pending).get("namespace", ""), o.meta(pending).get("name", ""))
            if key == (o.meta(wl).get("namespace", ""), o.meta(wl).get("name", "")):
                lookups.positions[key] = int(pending.get("positionInLocalQueue", 0))
    for wl in wls:
        for ref in o.meta(wl).get("ownerReferences") or []:
            gv = ref.get("apiVersion", "")
            if gv not in lookups.resources:
                lookups.resources[gv] = resources_for(api, gv)
    return lookups


@click.command("workload", help="Lists Workloads that match the provided criteria.")
@click.option(
    "-c", "--clusterqueue", default="", help="Filter by cluster queue name which is associated with the resource."
)
@click.option(
    "-q", "--localqueue", default="", help="Filter by local queue name which is associated with the resource."
)
@click.option(
    "--status", multiple=True, help='Filter workloads by status. Must be "all", "pending", "admitted" or "finished"'
)
@_for_option
@all_namespaces_option
@_selectors
@output_option(table=True)
@kube_options
def list_workloads(
    clusterqueue: str,
    localqueue: str,
    status: Sequence[str],
    for_object: str,
    all_namespaces: bool,
    selector: str,
    field_selector: str,
    output: str | None,
) -> None:
    check_output_format(output, table=True)
    statuses = {v.lower() for v in status}
    for value in status:
        if value.lower() not in _STATUSES:
            raise CliError(_STATUS_ERROR.format(value))
    s = session()
    namespace = None if all_namespaces else s.ns
    owner_uid = None
    if for_object:
        _, obj = _find_for_object(s.api, for_object, namespace)
        if obj is None:
            _no_resources(namespace)
            return
        owner_uid = o.meta(obj).get("uid", "")
    path = kueue_path("workload", namespace)
    wls = []
    if owner_uid is not None:
        by_label = ",".join(p for p in (selector, f"{constants.JOB_UID_LABEL}={owner_uid}") if p)
        wls = list_items(s.api, path, label_selector=by_label, field_selector=field_selector)["items"]
    if not wls:
        wls = list_items(s.api, path, label_selector=selector, field_selector=field_selector)["items"]
        if owner_uid is not None:
            wls = [wl for wl in wls if any(r.get("uid") == owner_uid for r in o.meta(wl).get("ownerReferences") or [])]
    wls = [
        wl
        for wl in wls
        if (not localqueue or (wl.get("spec") or {}).get("queueName") == localqueue)
        and (not clusterqueue or ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") == clusterqueue)
        and (not statuses or "all" in statuses or workload_status(wl).lower() in statuses)
    ]
    rows = workload_rows(wls, _workload_lookups(s.api, wls), s.clock()) if wls and output in (None, "wide") else []
    _emit(
        wls,
        output,
        "Workload",
        WL_COLUMNS,
        _with_namespace(rows, wls, all_namespaces) if rows else [],
        with_namespace=all_namespaces,
        namespace=namespace,
    )


@click.command(
    "pods",
    help="Lists all pods that matches the given criteria: should be part of the specified Job "
    "kind, belonging to the specified namespace, matching the label selector or the field "
    "selector. The --for=pod/pod-name option allows to find pods from the same pod group as "
    "the specified pod, including that pod itself.",
)
@_for_option
@all_namespaces_option
@_selectors
@output_option(table=True)
@kube_options
def list_pods(for_object: str, all_namespaces: bool, selector: str, field_selector: str, output: str | None) -> None:
    check_output_format(output, table=True)
    if not for_object:
        raise CliError('required flag(s) "for" not set')
    s = session()
    namespace = None if all_namespaces else s.ns
    _, obj = _find_for_object(s.api, for_object, namespace)
    if obj is None:
        _no_resources(namespace, dot=True)
        return
    pods_of = pod_label_selector(obj)
    if not pods_of:
        raise CliError(f"unsupported kind: {obj.get('kind', '')}")
    labels = ",".join(p for p in (selector, pods_of) if p)
    path = "/api/v1/pods" if namespace is None else f"/api/v1/namespaces/{namespace}/pods"
    if output in (None, "wide"):
        table = list_items(s.api, path, label_selector=labels, field_selector=field_selector, accept=_TABLE_ACCEPT)
        if not table.get("rows"):
            _no_resources(namespace, dot=True)
            return
        headers, rows = server_table(table, wide=output == "wide", with_namespace=all_namespaces)
        click.echo(render_table(headers, [[cell(v) for v in row] for row in rows]), nl=False)
        return
    pods = list_items(s.api, path, label_selector=labels, field_selector=field_selector)["items"]
    if not pods:
        _no_resources(namespace, dot=True)
        return
    click.echo(print_objects(pods, output, api_version="v1", kind="Pod", as_list=True), nl=False)


@click.group(cls=AliasedGroup, help="Display resources")
def list_() -> None:
    """`kueuectl list`."""


list_.add_command(list_local_queues, aliases=("lq",))
list_.add_command(list_cluster_queues, aliases=("cq",))
list_.add_command(list_workloads, aliases=("kwl", "kueueworkload", "kueueworkloads"))
list_.add_command(list_resource_flavors, aliases=("rf",))
list_.add_command(list_pods, aliases=("po",))
