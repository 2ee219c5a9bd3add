"""`explain TYPE/NAME` and `dry-run -f FILE`: why a workload waits, and what would happen to one not yet submitted.

Both read the cluster through the API only (queues, flavors, cohorts, namespaces, admission checks,
workloads) and ask our admission core (`simulate`) on a private copy; nothing is written. `explain`
adds what the objects themselves say: the Workload's conditions, the LocalQueue/ClusterQueue state
that blocks it, its position (the visibility API when served, else the queue order) and the
workloads ahead of it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click
import yaml

from webhook import config as configuration
from webhook import kube
from webhook.api import constants, multikueue, quantity, schema_budget, selector
from webhook.api import objects as o
from webhook.cli.api import (
    Api,
    CliError,
    get_object,
    kueue_path,
    list_items,
    local_queue_estimates,
    pending_workloads,
)
from webhook.cli.listing import workload_status
from webhook.cli.output import human_duration, render_table
from webhook.cli.session import kube_options, session
from webhook.cli.simulate import (
    ClusterState,
    Outcome,
    QuotaRow,
    build_core,
    never_fits,
    quota_rows,
    simulate,
    workload_for,
    workloads_ahead,
)
from webhook.core import topology
from webhook.core.cycle import SchedulerConfig
from webhook.core.decisions import Admit, Pending, Preempt, QueueBlocked
from webhook.core.quota_resources import QuotaResources
from webhook.core.workload import WorkloadInfo, describe_flavors

__all__ = [
    "blockers",
    "check_lines",
    "describe_outcome",
    "dry_run",
    "explain",
    "fetch_state",
    "quota_table",
    "server_config",
]

# Where the install (`webhook.install`, the chart, the manifests) keeps the server's Configuration.
CONFIG_MAP_PATH = "/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config"
CONFIG_FILE = "controller_manager_config.yaml"

_KINDS = {
    "job": "Job",
    "jobs": "Job",
    "job.batch": "Job",
    "pod": "Pod",
    "pods": "Pod",
    "po": "Pod",
    "workload": "Workload",
    "workloads": "Workload",
    "wl": "Workload",
    "kwl": "Workload",
}


def _optional_list(api: Api, path: str) -> list[dict[str, Any]]:
    """A list that may not be served (an optional CRD): empty then."""
    try:
        return list(list_items(api, path)["items"])
    except kube.NotFound:
        return []


def server_config(api: Api) -> SchedulerConfig:
    """The parts of the server's Configuration that change what quota charges: `resources`
    (excluded prefixes, transformations, quotaCheckStrategy), from the install's ConfigMap. Without
    it (not installed there, not readable by the caller, or not valid) the defaults: requests as
    the pods ask, undeclared resources blocking."""
    try:
        cm = get_object(api, CONFIG_MAP_PATH)
    except kube.KubeError as exc:
        if exc.status in (401, 403):
            return SchedulerConfig()
        raise
    text = ((cm or {}).get("data") or {}).get(CONFIG_FILE)
    if not text:
        return SchedulerConfig()
    try:
        cfg = configuration.parse(text)
    except configuration.ConfigError:
        return SchedulerConfig()
    res = cfg.resources
    return SchedulerConfig(
        ignore_undeclared_resources=cfg.ignore_undeclared_resources,
        resources=QuotaResources.from_config(res.exclude_resource_prefixes, res.transformations),
    )


def fetch_state(api: Api) -> ClusterState:
    """Everything the core reads; Topologies, Nodes and running Pods only when a ResourceFlavor names a
    Topology (topology-aware admission places pods on them)."""
    v1b2 = f"/apis/{constants.V1BETA2}"
    flavors = _optional_list(api, kueue_path("resourceflavor"))
    tas = any((rf.get("spec") or {}).get("topologyName") for rf in flavors)
    return ClusterState(
        topologies=_optional_list(api, f"{v1b2}/topologies") if tas else [],
        nodes=_optional_list(api, "/api/v1/nodes") if tas else [],
        pods=_optional_list(api, "/api/v1/pods") if tas else [],
        resource_flavors=flavors,
        cluster_queues=_optional_list(api, kueue_path("clusterqueue")),
        cohorts=_optional_list(api, f"{v1b2}/cohorts"),
        local_queues=_optional_list(api, kueue_path("localqueue")),
        namespaces=_optional_list(api, "/api/v1/namespaces"),
        admission_checks=_optional_list(api, f"{v1b2}/admissionchecks"),
        workloads=_optional_list(api, kueue_path("workload")),
        config=server_config(api),
    )


def blockers(wl: Mapping[str, Any], state: ClusterState) -> tuple[str, list[str]]:
    """(the ClusterQueue the workload goes to, or "", and every queue-side reason it cannot be admitted)."""
    ns, queue = o.meta(wl).get("namespace", ""), (wl.get("spec") or {}).get("queueName", "")
    out = []
    if (wl.get("spec") or {}).get("active") is False:
        out.append("the Workload is stopped (spec.active is false; `kubectl kueue resume workload` lifts it)")
    if not queue:
        return "", [*out, "the Workload names no LocalQueue (label kueue.x-k8s.io/queue-name)"]
    lq = next(
        (q for q in state.local_queues if (o.meta(q).get("namespace"), o.meta(q).get("name")) == (ns, queue)), None
    )
    if lq is None:
        return "", [*out, f"LocalQueue {queue} does not exist in namespace {ns}"]
    if (lq.get("spec") or {}).get("stopPolicy", "None") != "None":
        out.append(f"LocalQueue {queue} is stopped (stopPolicy {(lq.get('spec') or {}).get('stopPolicy')})")
    cq_name = str((lq.get("spec") or {}).get("clusterQueue", ""))
    cq = next((q for q in state.cluster_queues if o.meta(q).get("name") == cq_name), None)
    if cq is None:
        return cq_name, [*out, f"ClusterQueue {cq_name} (of LocalQueue {queue}) does not exist"]
    spec = cq.get("spec") or {}
    if spec.get("stopPolicy", "None") != "None":
        out.append(f"ClusterQueue {cq_name} is stopped (stopPolicy {spec.get('stopPolicy')})")
    active = next((c for c in (cq.get("status") or {}).get("conditions") or [] if c.get("type") == "Active"), None)
    if active is not None and active.get("status") != "True" and spec.get("stopPolicy", "None") == "None":
        out.append(f"ClusterQueue {cq_name} is inactive: {active.get('message', '')}")
    labels = next((o.meta(n).get("labels") or {} for n in state.namespaces if o.meta(n).get("name") == ns), {})
    if not selector.matches(spec.get("namespaceSelector"), labels, nil_matches=True):
        out.append(f"ClusterQueue {cq_name}'s namespaceSelector does not select namespace {ns}")
    pending_checks = sorted(
        c.get("name", "")
        for c in (wl.get("status") or {}).get("admissionChecks") or []
        if c.get("state") in ("Pending", "Retry")
    )
    if pending_checks and workload_status(wl) == "quotaReserved":
        out.append(f"admission check(s) not ready yet: {', '.join(pending_checks)}")
        out += _budget_blockers(wl, state)
    return cq_name, out


def _budget_blockers(wl: Mapping[str, Any], state: ClusterState) -> list[str]:
    """The Budgets (ours) that hold the Workload: the message of each Pending check of the
    `pykueue.io/budget` controller names them, what is left and when it resets."""
    budget_checks = {
        o.meta(ac).get("name")
        for ac in state.admission_checks
        if (ac.get("spec") or {}).get("controllerName") == schema_budget.CONTROLLER_NAME
    }
    return [
        f"held by budget (admission check {check.get('name')}): {check.get('message')}"
        for check in (wl.get("status") or {}).get("admissionChecks") or []
        if check.get("name") in budget_checks and check.get("state") == "Pending" and check.get("message")
    ]


def check_lines(wl: Mapping[str, Any]) -> list[str]:
    """Each admission check's state as its controller last wrote it on the Workload: the message (a
    ProvisioningRequest's condition, carried over by its controller), retries counted and the wait before the
    next attempt."""
    states = (wl.get("status") or {}).get("admissionChecks") or []
    lines = ["Admission checks:"] if states else []
    for state in states:
        line = f"  {state.get('name', '')}: {state.get('state', '')}"
        if state.get("message"):
            line += f": {state['message']}"
        extras = []
        if state.get("retryCount"):
            extras.append(f"retries {state['retryCount']}")
        if state.get("state") == "Retry" and state.get("requeueAfterSeconds") is not None:
            extras.append(f"next attempt after {human_duration(float(state['requeueAfterSeconds']))}")
        lines.append(line + (f" ({', '.join(extras)})" if extras else ""))
    return lines


def _amount(resource: str, value: int) -> str:
    return quantity.format_amount(resource, value)


def quota_table(rows: Sequence[QuotaRow]) -> str:
    return render_table(
        ["Pod Set", "Flavor", "Resource", "Requested", "Nominal", "In Use", "Borrowable Now", "Shortfall"],
        [
            [
                r.pod_set,
                r.flavor,
                r.resource,
                _amount(r.resource, r.requested),
                _amount(r.resource, r.nominal),
                _amount(r.resource, r.in_use),
                _amount(r.resource, r.borrowable),
                _amount(r.resource, r.shortfall),
            ]
            for r in rows
        ],
    )


def describe_outcome(outcome: Outcome, wl: WorkloadInfo) -> list[str]:
    """The core's decision in plain words."""
    d = outcome.decision
    if isinstance(d, Admit):
        lines = [f"would be admitted now by ClusterQueue {d.cluster_queue}"]
        requested = {ps.name: ps.count for ps in wl.pod_sets}
        for psa in d.admission.get("podSetAssignments") or []:
            flavors = describe_flavors(psa)
            count, want = int(psa.get("count", 0)), requested.get(psa.get("name", ""), 0)
            partial = f" (partial admission: {count} of {want} pods)" if count < want else f" ({count} pods)"
            lines.append(f"  pod set {psa.get('name')}: {flavors}{partial}")
            lines += _topology_lines(psa)
        return lines
    if isinstance(d, Preempt):
        lines = [f"would be admitted by ClusterQueue {d.cluster_queue} after preempting {len(d.targets)} workload(s):"]
        lines += [f"  {v.key} (ClusterQueue {v.cluster_queue}): {v.message}" for v in d.targets]
        return lines
    if isinstance(d, Pending | QueueBlocked):
        return [f"would stay pending: {d.message}"]
    return ["no decision: the workload never reached the head of its queue in the simulation"]


def _topology_lines(psa: Mapping[str, Any]) -> list[str]:
    """Where topology-aware admission put (or would put) a pod set's pods, when it did; or that the
    placement is left to later (`delayedTopologyRequest`)."""
    raw = psa.get("topologyAssignment")
    if raw:
        return [f"    topology {topology.describe_assignment(raw)}"]
    delayed = multikueue.describe_delayed_topology(psa.get("delayedTopologyRequest"))
    return [f"    topology: {delayed}"] if delayed else []


def multikueue_lines(wl: Mapping[str, Any]) -> list[str]:
    """Which worker cluster runs a MultiKueue Workload, or which ones it was dispatched to."""
    placement = multikueue.describe_placement(wl.get("status") or {})
    return [f"MultiKueue: {placement}"] if placement else []


def _fits_lines(rows: Sequence[QuotaRow], cluster_queue: str) -> list[str]:
    reasons = never_fits(rows)
    if not rows:
        return []
    if reasons:
        return [
            f"can never fit ClusterQueue {cluster_queue}, even with nothing else running:",
            *[f"  {r}" for r in reasons],
        ]
    return [f"can fit ClusterQueue {cluster_queue} once enough quota is free"]


def _report(
    wl_obj: Mapping[str, Any], state: ClusterState, *, now: Any
) -> tuple[WorkloadInfo, str, list[str], Outcome, list[QuotaRow]]:
    core = build_core(state, now)
    info = core.parse_workload(wl_obj)  # requests as the server's Configuration charges them
    cq_name, blocked = blockers(wl_obj, state)
    pending = workload_status(wl_obj) == "pending"
    # Numbers before the simulation (which assumes its admissions in the core); none for an admitted
    # workload, whose own share is in the usage and would only mislead.
    rows = quota_rows(core, info, cq_name) if cq_name and pending else []
    outcome = simulate(core, info.key, now) if pending else Outcome(None, 0)
    return info, cq_name, blocked, outcome, rows


def _find_workload(api: Api, kind: str, name: str, namespace: str) -> dict[str, Any]:
    if kind == "Workload":
        wl = get_object(api, kueue_path("workload", namespace, name))
        if wl is None:
            raise CliError(f'workloads.{constants.GROUP} "{name}" not found')
        return wl
    path = (
        f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"
        if kind == "Job"
        else f"/api/v1/namespaces/{namespace}/pods/{name}"
    )
    owner = get_object(api, path)
    if owner is None:
        raise CliError(f'{"jobs.batch" if kind == "Job" else "pods"} "{name}" not found')
    uid = o.meta(owner).get("uid", "")
    wls = list_items(api, kueue_path("workload", namespace))["items"]
    mine = [
        w
        for w in wls
        if (o.meta(w).get("labels") or {}).get(constants.JOB_UID_LABEL) == uid
        or any(r.get("uid") == uid for r in o.meta(w).get("ownerReferences") or [])
    ]
    if not mine:
        queue = (o.meta(owner).get("labels") or {}).get(constants.QUEUE_LABEL)
        why = (
            "it has no kueue.x-k8s.io/queue-name label, so Kueue does not manage it"
            if not queue
            else "Kueue has not created one yet"
        )
        raise CliError(f"{kind.lower()}/{name} has no Workload: {why}")
    return dict(mine[0])


@click.command(
    "explain",
    help="Explain why a Job, Pod or Workload is pending: the queue state that blocks it, "
    "its position, quota per flavor and resource, and what it would preempt.",
)
@click.argument("target", metavar="TYPE/NAME")
@kube_options
def explain(target: str) -> None:
    kind_word, _, name = target.partition("/")
    kind = _KINDS.get(kind_word.lower())
    if kind is None or not name:
        raise CliError(f"explain takes job/NAME, pod/NAME or workload/NAME, not {target!r}")
    s = session()
    wl = _find_workload(s.api, kind, name, s.ns)
    state = fetch_state(s.api)
    now = s.clock()
    info, cq_name, blocked, outcome, rows = _report(wl, state, now=now)
    status = workload_status(wl)
    queue = (wl.get("spec") or {}).get("queueName", "")
    lines = [
        f"Workload {info.key}: {status.upper()}"
        + (f", LocalQueue {queue}" if queue else "")
        + (f" -> ClusterQueue {cq_name}" if cq_name else "")
    ]
    admission = (wl.get("status") or {}).get("admission")
    if status in ("admitted", "quotaReserved", "finished") and admission:
        for psa in admission.get("podSetAssignments") or []:
            flavors = describe_flavors(psa)
            lines.append(f"  pod set {psa.get('name')}: {flavors} ({psa.get('count')} pods)")
            lines += _topology_lines(psa)
    lines += [f"Blocked: {b}" for b in blocked]
    lines += multikueue_lines(wl)
    lines += check_lines(wl)
    reserved = next(
        (
            c
            for c in (wl.get("status") or {}).get("conditions") or []
            if c.get("type") == constants.WorkloadCondition.QUOTA_RESERVED and c.get("status") == "False"
        ),
        None,
    )
    if reserved is not None and reserved.get("message"):
        lines.append(f"Kueue says: {reserved['message']}")
    if status == "pending" and cq_name:
        lines += _position_lines(s.api, wl, info, cq_name, state)
        lines.append("If scheduled now: " + "\n".join(describe_outcome(outcome, info)))
        lines += _fits_lines(rows, cq_name)
    click.echo("\n".join(lines))
    if rows:
        click.echo(f"\nQuota of ClusterQueue {cq_name}:")
        click.echo(quota_table(rows), nl=False)


def _position_lines(
    api: Api, wl: Mapping[str, Any], info: WorkloadInfo, cq_name: str, state: ClusterState
) -> list[str]:
    pending = pending_workloads(api, cq_name)
    queue_of = {
        (o.meta(q).get("namespace", ""), o.meta(q).get("name", "")): str((q.get("spec") or {}).get("clusterQueue", ""))
        for q in state.local_queues
    }
    ahead = workloads_ahead(state.workloads, info, cq_name, queue_of)
    lines = []
    mine = next(
        (
            p
            for p in pending or []
            if (o.meta(p).get("namespace"), o.meta(p).get("name")) == (info.namespace, info.name)
        ),
        None,
    )
    if mine is not None:
        lines.append(
            f"Position: {mine.get('positionInClusterQueue')} in ClusterQueue {cq_name}, "
            f"{mine.get('positionInLocalQueue')} in LocalQueue {info.queue_name}"
        )
    else:
        # Counted as the visibility API counts (upstream's positionInClusterQueue: 0 = next).
        lines.append(f"Position: {len(ahead)} in ClusterQueue {cq_name} (queue order: priority, then creation)")
    if ahead:
        lines.append(f"Ahead of it ({len(ahead)}):")
        lines += [f"  {a.key} (priority {a.priority})" for a in ahead[:10]]
        if len(ahead) > 10:
            lines.append(f"  ... and {len(ahead) - 10} more")
    else:
        lines.append("Ahead of it: none")
    return lines + _estimate_lines(api, info)


def _estimate_lines(api: Api, info: WorkloadInfo) -> list[str]:
    """The estimated admission our visibility API gives (`visibility.pykueue.io`), with its method;
    nothing where that API is not served or not readable."""
    page = local_queue_estimates(api, info.namespace, info.queue_name)
    mine = next(
        (
            i
            for i in (page or {}).get("items") or []
            if (o.meta(i).get("namespace"), o.meta(i).get("name")) == (info.namespace, info.name)
        ),
        None,
    )
    if page is None or mine is None:
        return []
    estimation = page.get("estimation") or {}
    eta = mine.get("estimatedAdmission")
    if eta is None:
        why = mine.get("estimatedAdmissionUnknownReason") or estimation.get("unknownReason") or "no estimate"
        lines = [f"Estimated admission: unknown ({why})"]
    else:
        lines = [
            f"Estimated admission: in {human_duration(int(eta['waitSeconds']))}, at {eta['time']} "
            f"({_basis_text(estimation.get('basis') or {})})"
        ]
    return lines + _accuracy_lines(estimation.get("accuracy") or {})


def _basis_text(basis: Mapping[str, Any]) -> str:
    """What the estimate started from, in a few words."""
    observed = basis.get("observedRuns") or 0
    median = basis.get("observedMedianSeconds")
    runs = f", median of {observed} finished runs {human_duration(int(median))}" if median is not None else ""
    return (
        f"simulated from when the {basis.get('holdingQuota', 0)} workloads holding quota end: "
        f"{basis.get('withMaximumExecutionTime', 0)} by maximumExecutionTimeSeconds, "
        f"{basis.get('fromObservedRuns', 0)} by observed run times{runs}"
    )


def _accuracy_lines(accuracy: Mapping[str, Any]) -> list[str]:
    """How far past estimates of the ClusterQueue were off; nothing before its first scored admission."""
    admissions = int(accuracy.get("admissions") or 0)
    if not admissions:
        return []

    def off(which: str) -> str:
        p = accuracy.get(which) or {}
        if p.get("p50Seconds") is None:
            return "none known"
        return f"{human_duration(int(p['p50Seconds']))} (p50), {human_duration(int(p['p90Seconds']))} (p90)"

    return [
        f"Past estimates in its ClusterQueue ({admissions} recent admissions): first estimate off by "
        f"{off('firstEstimate')}, latest by {off('latestEstimate')}"
    ]


def _priority(api: Api, obj: Mapping[str, Any]) -> int:
    """The priority the worker would give it: its WorkloadPriorityClass, else its PriorityClass, else 0."""
    wpc = (o.meta(obj).get("labels") or {}).get(constants.PRIORITY_CLASS_LABEL)
    if wpc:
        found = get_object(api, f"/apis/{constants.V1BETA2}/workloadpriorityclasses/{wpc}")
        if found is None:
            raise CliError(f'WorkloadPriorityClass "{wpc}" not found')
        return int(found.get("value") or 0)
    template = (obj.get("spec") or {}).get("template") or {"spec": obj.get("spec") or {}}
    pc = (template.get("spec") or {}).get("priorityClassName")
    if pc:
        found = get_object(api, f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc}")
        if found is None:
            raise CliError(f'priorityclasses.scheduling.k8s.io "{pc}" not found')
        return int(found.get("value") or 0)
    return 0


@click.command(
    "dry-run",
    help="Run our admission core on a snapshot of the cluster's queues for a Job, Pod or "
    "Workload not yet submitted: would it be admitted now, on which flavors, what would it "
    "preempt, or why not; and whether it can ever fit. Nothing is written.",
)
@click.option("-f", "--filename", required=True, help="The manifest (YAML or JSON; '-' reads standard input).")
@kube_options
def dry_run(filename: str) -> None:
    try:
        text = sys.stdin.read() if filename == "-" else open(filename, encoding="utf-8").read()  # noqa: SIM115
        obj = next(d for d in yaml.safe_load_all(text) if d)
    except (OSError, yaml.YAMLError, StopIteration) as exc:
        raise CliError(f"cannot read {filename}: {exc}") from None
    s = session()
    obj.setdefault("metadata", {}).setdefault("namespace", s.ns)
    now = s.clock()
    try:
        wl = workload_for(obj, now=now, priority=_priority(s.api, obj))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    state = fetch_state(s.api)
    state.workloads = [
        w
        for w in state.workloads
        if (o.meta(w).get("namespace"), o.meta(w).get("name")) != (o.meta(wl).get("namespace"), o.meta(wl).get("name"))
    ] + [wl]
    info, cq_name, blocked, outcome, rows = _report(wl, state, now=now)
    lines = [
        f"{obj.get('kind', '').lower()}/{o.meta(obj).get('name', '')}: {sum(ps.count for ps in info.pod_sets)} pod(s)"
        + (f", LocalQueue {info.queue_name}" if info.queue_name else "")
        + (f" -> ClusterQueue {cq_name}" if cq_name else "")
    ]
    lines += [f"Blocked: {b}" for b in blocked]
    if cq_name:
        lines += describe_outcome(outcome, info)
        lines += _fits_lines(rows, cq_name)
    click.echo("\n".join(lines))
    if rows:
        click.echo(f"\nQuota of ClusterQueue {cq_name}:")
        click.echo(quota_table(rows), nl=False)
