"""`get|describe|edit|patch|delete KIND …` for the Kueue kinds, handed to kubectl unchanged.

As upstream (cmd/kueuectl/app/passthrough): the process becomes kubectl with the same arguments, so
every kubectl flag works. One difference: the kind word (or its alias, which the CRDs may not declare,
like `kwl`) becomes the fully qualified `workloads.kueue.x-k8s.io`, so another API group's `workload`
can never be picked instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence

import click

from webhook.cli.api import KIND_INFO, CliError
from webhook.cli.control import delete_workload
from webhook.cli.session import AliasedGroup, session

__all__ = ["ALIASES", "COMMANDS", "kubectl_argv", "passthrough_groups"]

COMMANDS = {
    "get": "Display a resource",
    "delete": "Delete a resource",
    "edit": "Edit a resource on the server",
    "describe": "Show details of a resource",
    "patch": "Update fields of a resource",
}
ALIASES = {
    "workload": ("kwl", "kueueworkload", "kueueworkloads"),
    "clusterqueue": ("cq",),
    "localqueue": ("lq",),
    "resourceflavor": ("rf",),
}


def kubectl_argv(argv: Sequence[str], verb: str, kind: str, kubectl: str) -> list[str]:
    """kubectl's argv: ours with the first kind word after the verb made fully qualified."""
    args = list(argv)
    words = {kind, *ALIASES[kind]}
    start = args.index(verb) + 1 if verb in args else 0
    for i in range(start, len(args)):
        if args[i] in words:
            args[i] = KIND_INFO[kind].qualified
            break
    return [kubectl, *args]


def _exec(verb: str, kind: str) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise CliError(
            f'pass-through command are not available: exec: "kubectl": executable file not found in $PATH, '
            f'PATH="{os.environ.get("PATH", "")}"'
        )
    os.execv(kubectl, kubectl_argv(session().argv, verb, kind, kubectl))


def _subcommand(verb: str, kind: str) -> click.Command:
    @click.command(
        kind,
        help=f'Pass-through "{verb} {kind}" to kubectl',
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: Sequence[str]) -> None:
        _exec(verb, kind)

    return command


def passthrough_groups() -> list[AliasedGroup]:
    groups = []
    for verb, short in COMMANDS.items():
        group = AliasedGroup(verb, help=short)
        for kind, aliases in ALIASES.items():
            cmd = delete_workload if (verb, kind) == ("delete", "workload") else _subcommand(verb, kind)
            group.add_command(cmd, kind, aliases=aliases)
        groups.append(group)
    return groups
