"""`stop` and `resume` of ClusterQueues, LocalQueues and Workloads, and `delete workload`.

Mirrors cmd/kueuectl/app/{stop,resume,delete}: a queue is held through `spec.stopPolicy` (HoldAndDrain,
or Hold with --keep-already-running; None to resume), a Workload through `spec.active`, each written
as a JSON merge patch. Deleting a Workload deletes the objects owning it (after a confirmation), and
the Workload itself only when nothing owns it.
"""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click

from webhook import kube
from webhook.api import constants
from webhook.cli.api import Api, CliError, kueue_path, list_items, resolve_resource
from webhook.cli.output import print_objects
from webhook.cli.session import (
    AliasedGroup,
    DryRun,
    all_namespaces_option,
    dry_run_option,
    kube_options,
    output_option,
    parse_dry_run,
    session,
)

__all__ = ["delete_workload", "owner_paths", "resume", "stop", "stop_policy_patch", "update"]


def stop_policy_patch(*, stop: bool, keep_already_running: bool = False) -> dict[str, Any]:
    policy = ("Hold" if keep_already_running else "HoldAndDrain") if stop else "None"
    return {"spec": {"stopPolicy": policy}}


def _merged(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    for key, value in patch.items():
        out[key] = _merged(out.get(key) or {}, value) if isinstance(value, Mapping) else value
    return out


def update(
    kind: str,
    name: str,
    namespace: str | None,
    patch: Mapping[str, Any],
    *,
    dry_run: str,
    output: str | None,
    operation: str,
) -> str:
    """GET (so a missing object fails with the server's words), then merge-patch unless a client dry run."""
    api = session().api
    path = kueue_path(kind, namespace, name)
    obj = api.request("GET", path)
    if dry_run == DryRun.CLIENT:
        obj = _merged(obj, patch)
    else:
        obj = api.request(
            "PATCH",
            path,
            body=dict(patch),
            content_type="application/merge-patch+json",
            query={"dryRun": "All"} if dry_run == DryRun.SERVER else None,
        )
    suffix = f" ({dry_run} dry run)" if dry_run != DryRun.NONE else ""
    return print_objects(
        [obj], output, api_version=constants.V1BETA2, kind=obj.get("kind", ""), operation=f"{operation}{suffix}"
    )


def _queue_command(kind: str, *, stop: bool) -> click.Command:
    info = {"clusterqueue": "ClusterQueue", "localqueue": "LocalQueue"}[kind]
    help_text = f"Puts the given {info} on hold." if stop else f"Resumes the previously held {info}."

    @click.command(kind, help=help_text)
    @click.argument("name")
    @output_option(table=False)
    @dry_run_option
    @kube_options
    def command(name: str, output: str | None, dry_run: str, keep_already_running: bool = False) -> None:
        dry_run = parse_dry_run(dry_run)
        namespace = session().ns if kind == "localqueue" else None
        click.echo(
            update(
                kind,
                name,
                namespace,
                stop_policy_patch(stop=stop, keep_already_running=keep_already_running),
                dry_run=dry_run,
                output=output,
                operation="",
            ),
            nl=False,
        )

    if stop:
        command = click.option(
            "--keep-already-running", is_flag=True, help="Indicates whether to keep already running workloads."
        )(command)
    return command


def _workload_command(*, stop: bool) -> click.Command:
    help_text = (
        "Puts the given Workload on hold. The Workload will not be admitted and if it is already admitted "
        "it will be put back to queue just as if it was preempted (using .spec.active field)."
        if stop
        else "Resumes the Workload, allowing its admission according to regular ClusterQueue rules."
    )

    @click.command("workload", help=help_text)
    @click.argument("name")
    @output_option(table=False)
    @dry_run_option
    @kube_options
    def command(name: str, output: str | None, dry_run: str) -> None:
        dry_run = parse_dry_run(dry_run)
        click.echo(
            update(
                "workload",
                name,
                session().ns,
                {"spec": {"active": not stop}},
                dry_run=dry_run,
                output=output,
                operation="stopped" if stop else "resumed",
            ),
            nl=False,
        )

    return command


@click.group(cls=AliasedGroup, help="Stop the resource")
def stop() -> None:
    """`kueuectl stop`."""


@click.group(cls=AliasedGroup, help="Resume the resource")
def resume() -> None:
    """`kueuectl resume`."""


for _group, _stop in ((stop, True), (resume, False)):
    _group.add_command(_workload_command(stop=_stop), aliases=("kwl", "kueueworkload", "kueueworkloads"))
    _group.add_command(_queue_command("localqueue", stop=_stop), aliases=("lq",))
    _group.add_command(_queue_command("clusterqueue", stop=_stop), aliases=("cq",))


def owner_paths(api: Api, wl: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(REST path, `resource.group/name`) of each object owning the Workload."""
    out = []
    namespace = (wl.get("metadata") or {}).get("namespace")
    for ref in (wl.get("metadata") or {}).get("ownerReferences") or []:
        group = ref.get("apiVersion", "").rpartition("/")[0]
        res = resolve_resource(api, f"{ref.get('kind', '')}.{group}" if group else ref.get("kind", ""))
        label = f"{res.plural}.{res.group}" if res.group else res.plural
        out.append((res.path(namespace, ref.get("name")), f"{label}/{ref.get('name')}"))
    return out


@click.command(
    "workload",
    help="Delete the given Workload and its corresponding Job. If the Workload has associated "
    "Jobs, the command will prompt for deletion approval of the affected Jobs, and delete "
    "them. The Workload will then be asynchronously deleted by the garbage collector. If "
    "there are no associated Jobs, the command will directly delete the Workload.",
)
@click.argument("names", nargs=-1)
@click.option("-y", "--yes", is_flag=True, help="Automatic yes to the prompt for deleting the Workload.")
@click.option("--all", "delete_all", is_flag=True, help="Delete all Workloads, in the specified namespace.")
@all_namespaces_option
@dry_run_option
@kube_options
def delete_workload(names: Sequence[str], yes: bool, delete_all: bool, all_namespaces: bool, dry_run: str) -> None:
    if not delete_all and not names:
        raise CliError("requires at least 1 arg(s), only received 0")
    if delete_all and names:
        raise CliError("name cannot be provided when a selector is specified")
    if all_namespaces and names:
        raise CliError("a resource cannot be retrieved by name across all namespaces")
    dry_run = parse_dry_run(dry_run)
    s = session()
    workloads: list[dict[str, Any]] = []
    if delete_all:
        workloads = list_items(s.api, kueue_path("workload", None if all_namespaces else s.ns))["items"]
    for name in names:
        try:
            workloads.append(s.api.request("GET", kueue_path("workload", s.ns, name)))
        except kube.NotFound as exc:
            click.echo(str(exc), err=True)
    owners = [(wl, owner_paths(s.api, wl)) for wl in workloads]
    if dry_run == DryRun.NONE and not yes and any(paths for _, paths in owners):
        if delete_all:
            message = "This operation will also delete the jobs associated with these workloads.\n"
        else:
            lines = [
                f"  - {', '.join(label for _, label in paths)} associated with the "
                f"{wl['metadata'].get('namespace')}/{wl['metadata']['name']} workload\n"
                for wl, paths in owners
                if paths
            ]
            message = "This operation will also delete:\n" + "\n".join(lines)
        click.echo(message + "Do you want to proceed (y/n)? ", nl=False)
        answer = sys.stdin.readline().strip()
        if answer.lower() != "y":
            click.echo("Deletion is canceled")
            return
    query = {"dryRun": "All"} if dry_run == DryRun.SERVER else None
    suffix = f" ({dry_run} dry run)" if dry_run != DryRun.NONE else ""
    for wl, paths in owners:
        targets = paths or [
            (
                kueue_path("workload", wl["metadata"].get("namespace"), wl["metadata"]["name"]),
                f"workload.{constants.GROUP}/{wl['metadata']['name']}",
            )
        ]
        for path, label in targets:
            if dry_run != DryRun.CLIENT:
                # kubectl's propagation, so a Job's pods go with it (the API's default for Jobs orphans them)
                with contextlib.suppress(kube.NotFound):
                    s.api.request("DELETE", path, query=query, body={"propagationPolicy": "Background"})
            click.echo(f"{label} deleted{suffix}")
